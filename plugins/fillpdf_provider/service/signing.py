"""Signed, expiring document URLs: ``/v1/files/{id}.pdf?expires=<epoch>&signature=<hmac>``.

The URL itself is the credential (no API key), so it is an HMAC-SHA256 of the id and the
expiry under the service's signing key, compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from urllib.parse import urlencode

EXPIRES_PATTERN = re.compile(r"[0-9]{1,12}")
SIGNATURE_PATTERN = re.compile(r"[0-9a-f]{64}")


def signature(key: bytes, conversion_id: str, expires: int) -> str:
    message = f"{conversion_id}:{expires}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def document_url(base_url: str, key: bytes, conversion_id: str, expires: int) -> str:
    query = urlencode({"expires": expires, "signature": signature(key, conversion_id, expires)})
    return f"{base_url.rstrip('/')}/v1/files/{conversion_id}.pdf?{query}"


def verify(key: bytes, conversion_id: str, expires: str | None, given: str | None) -> int | None:
    """The expiry if the signature is right, else None (expiry is checked by the caller)."""
    if not expires or not given:
        return None
    if not EXPIRES_PATTERN.fullmatch(expires) or not SIGNATURE_PATTERN.fullmatch(given):
        return None
    expected = signature(key, conversion_id, int(expires))
    if not hmac.compare_digest(expected, given):
        return None
    return int(expires)
