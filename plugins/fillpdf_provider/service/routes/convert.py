"""``POST /v1/convert``: a flat PDF in, a fillable one stored and its field schema out."""

from __future__ import annotations

import hashlib

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import Response

from fillpdf_provider.engine.detect import MODES
from fillpdf_provider.engine.errors import SchemaError
from fillpdf_provider.engine.rebuild import parse_schema
from fillpdf_provider.service.auth import Authorized
from fillpdf_provider.service.converting import convert
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.models import CONVERT_BODY, ConversionResult, error_responses
from fillpdf_provider.service.openapi import BEARER
from fillpdf_provider.service.run_once import run_once
from fillpdf_provider.service.state import service_of
from fillpdf_provider.service.uploads import Upload, receive_upload

#: Largest ``schema`` form field of POST /v1/convert (its entries are bounded by the engine).
MAX_SCHEMA_BYTES = 2 * 1024 * 1024

router = APIRouter()


@router.post(
    "/v1/convert",
    response_model=ConversionResult,
    responses=error_responses(400, 401, 402, 408, 415, 429, 500, 502, 503),
    openapi_extra={**CONVERT_BODY, **BEARER},
    summary="Convert a flat PDF into a fillable one and return its field schema",
    description="Detects the fields of the flat PDF, or, with `schema`, builds exactly "
    "the form that schema describes (no detection). Billed per page either way.",
)
async def convert_pdf(request: Request, caller: Authorized) -> Response:
    service = service_of(request)
    settings = service.settings
    upload = await receive_upload(
        request.headers.get("content-type"),
        request.headers.get("content-length"),
        request.stream(),
        settings.uploads_dir,
        max_file=settings.max_upload_bytes,
        text_limits={"schema": MAX_SCHEMA_BYTES},
        prefix=service.instance.upload_prefix(),
    )
    try:
        if upload.path is None:
            raise ApiError(
                "invalid_request", "The request has no 'file' part with the PDF.", param="file"
            )
        path = upload.path
        detect = _detect_mode(upload)
        schema = await anyio.to_thread.run_sync(_checked_schema, upload.fields.get("schema"))
        return await run_once(
            request,
            caller,
            _fingerprint(upload, detect, schema),
            lambda gone: convert(service, caller, path, detect, request, gone, schema),
        )
    finally:
        upload.discard()


def _detect_mode(upload: Upload) -> str:
    detect = upload.fields.get("detect") or "fields"
    if detect not in MODES:
        raise ApiError(
            "invalid_request",
            f"detect must be 'fields' or 'fields_fast', not {detect!r}.",
            param="detect",
        )
    return detect


def _checked_schema(text: str | None) -> str | None:
    """The ``schema`` form field, checked on its own before any PDF work (400 if bad)."""
    if text is None:
        return None
    if not text.strip():
        raise ApiError(
            "invalid_request",
            "schema is empty; send the schema JSON (the 'schema' list of a conversion "
            "result, edited), or leave the field out to detect the fields.",
            param="schema",
        )
    try:
        parse_schema(text)
    except SchemaError as exc:
        raise ApiError("invalid_request", exc.message, param="schema") from None
    return text


def _fingerprint(upload: Upload, detect: str, schema: str | None) -> str:
    """What makes two conversions the same request: the file, ``detect`` and the schema."""
    request_key = f"convert|{detect}|{upload.sha256}"
    if schema is not None:  # the same file with another schema is another request
        request_key += "|schema|" + hashlib.sha256(schema.encode()).hexdigest()
    return hashlib.sha256(request_key.encode()).hexdigest()
