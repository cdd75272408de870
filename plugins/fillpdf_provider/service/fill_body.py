"""The body of ``POST /v1/fill``: read up to its size limit, then checked and parsed.

The cheap checks (sizes, which fields are present) run before pydantic sees the body, so a
body with a million values is refused without building a million objects.
"""

from __future__ import annotations

import hashlib
from typing import Any

from fastapi import Request
from starlette.requests import ClientDisconnect

from fillpdf_provider.service.body_deadline import body_ended
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.jsonbody import parse_json
from fillpdf_provider.service.models import FillRequest

#: Fill bodies up to this size are parsed on the event loop (faster than a thread hop).
INLINE_PARSE_BYTES = 64 * 1024


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body; 413 as soon as it (or its Content-Length) passes ``limit`` bytes."""
    length = request.headers.get("content-length")
    too_large = ApiError(
        "payload_too_large",
        f"The request body is over {limit // (1024 * 1024)} MB; send a smaller PDF or fill "
        "a stored conversion by conversion_id.",
    )
    if length and length.isdigit() and int(length) > limit:
        raise too_large
    chunks = bytearray()
    try:
        async for chunk in request.stream():
            chunks += chunk
            if len(chunks) > limit:
                raise too_large
    except ClientDisconnect:
        raise body_ended() from None
    return bytes(chunks)


def parse_fill(raw: bytes, max_fields: int, max_chars: int) -> tuple[FillRequest, str]:
    """The request and its fingerprint; at most ``max_fields`` values and fields, and at
    most ``max_chars`` characters of text in all the values."""
    data = parse_json(raw)
    if not isinstance(data, dict):
        raise ApiError("invalid_request", "The body must be a JSON object.")
    if "values" not in data:
        raise ApiError("invalid_request", "Send 'values': {field name: value}.", param="values")
    _check_sizes(data, max_fields)
    _check_text(data["values"], max_chars)
    _check_source(data)
    fingerprint = hashlib.sha256(b"fill|" + raw).hexdigest()
    return _validated(data), fingerprint


def _check_sizes(data: dict[str, Any], max_fields: int) -> None:
    for name in ("values", "fields"):
        entries = data.get(name)
        if isinstance(entries, dict | list) and len(entries) > max_fields:
            raise ApiError(
                "invalid_request",
                f"'{name}' has {len(entries):,} entries; the service fills forms of at most "
                f"{max_fields:,} fields. Split the form into several files.",
                param=name,
            )


def _check_text(values: object, max_chars: int) -> None:
    """At most ``max_chars`` characters of text in all: what a fill lays out is bounded
    whatever the boxes (each value is bounded by its own box when it is filled)."""
    if not isinstance(values, dict):
        return  # pydantic names the type
    total = sum(len(v) for v in values.values() if isinstance(v, str))
    if total > max_chars:
        raise ApiError(
            "invalid_request",
            f"The values hold {total:,} characters of text; a fill takes at most "
            f"{max_chars:,}. Split the values over several forms.",
            param="values",
        )


def _check_source(data: dict[str, Any]) -> None:
    """Exactly one of a stored conversion and an inline PDF (which needs its schema)."""
    has_id = data.get("conversion_id") is not None
    has_pdf = data.get("pdf_base64") is not None
    if has_id == has_pdf:
        raise ApiError(
            "invalid_request",
            "Send exactly one of 'conversion_id' and 'pdf_base64'.",
            param="conversion_id",
        )
    if has_pdf and data.get("fields") is None:
        raise ApiError(
            "invalid_request",
            "'fields' (the PDF's schema) is required with 'pdf_base64'.",
            param="fields",
        )


def _validated(data: dict[str, Any]) -> FillRequest:
    """``data`` as a ``FillRequest``; 400 naming the first place pydantic refused."""
    try:
        return FillRequest.model_validate(data)
    except ValueError as exc:
        errors: list[Any] = getattr(exc, "errors", lambda: [])()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ())) or None
        message = first.get("msg", str(exc))
        raise ApiError(
            "invalid_request",
            f"{where or 'body'}: {message}.",
            param=where.split(".")[0] if where else None,
        ) from None
