"""The API's error types: each with the HTTP status the service answers it with, and what it means.

The one table of them. The service takes an error's status from it, the client has one
exception class per type in it, and ``tests/service/test_api_docs.py`` checks ``docs/api.md``
against it, so the three cannot drift apart. The meanings are the "when" column of the
error table in ``docs/api.md`` (the contract's, widened to what the service really answers).

This module imports nothing of the project's, so the service and the client can both use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class ErrorType:
    """One error type: the status it is answered with, and when."""

    status: int
    meaning: str


ERROR_TYPES: Mapping[str, ErrorType] = MappingProxyType(
    {
        "invalid_request": ErrorType(
            400,
            "malformed body or part; a missing `file` or `values`; both or neither of "
            "`conversion_id` and `pdf_base64`; a value of the wrong type for its field; an "
            "unknown field name (the message suggests the closest); a bad `schema`; an "
            "`Idempotency-Key` reused for another request",
        ),
        "authentication_error": ErrorType(401, "key missing, malformed, unknown or revoked"),
        "quota_exceeded": ErrorType(
            402,
            "developer plan, or an enterprise account with a hard stop: the file's pages do "
            "not fit in what is left this month",
        ),
        "forbidden": ErrorType(403, "a document URL whose signature does not verify"),
        "not_found": ErrorType(
            404, "an unknown conversion (or another account's), or an unknown path"
        ),
        "method_not_allowed": ErrorType(
            405, "a known path with another method; `Allow` lists the methods it takes"
        ),
        "request_timeout": ErrorType(
            408,
            "headers not complete within 5 s, or a body slower than 4 KiB/s on average after "
            "5 s; the connection is closed",
        ),
        "expired": ErrorType(410, "a conversion or document URL past its 24 hours"),
        "payload_too_large": ErrorType(413, "a fill request body over 25 MB"),
        "unsupported_file": ErrorType(
            415,
            "not a PDF; a file over 25 MB; more pages than the plan takes per file; "
            "encrypted, damaged, or over the engine's limits",
        ),
        "rate_limit_error": ErrorType(
            429,
            "over the key's requests per minute, or a repeat of an `Idempotency-Key` whose "
            "first request is still running after the wait",
        ),
        "api_error": ErrorType(
            500, "a bug on our side; the message quotes the request id, the log has the rest"
        ),
        "engine_error": ErrorType(
            502, "the engine failed unexpectedly on the PDF (logged); a damaged file is 415"
        ),
        "service_unavailable": ErrorType(
            503,
            "busy (the PDF queue is full or too slow), restarting mid-conversion, out of "
            "storage space (a full disk; nothing is billed), or its database unreachable "
            "(restarting or down); send it again after `Retry-After` seconds",
        ),
    }
)


def status_of(error_type: str) -> int:
    """The HTTP status of ``error_type``; a ``KeyError`` for a type the API does not have."""
    return ERROR_TYPES[error_type].status
