"""``POST /v1/fill``: values into a stored conversion or an inline fillable PDF; never billed."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import Response

from fillpdf_provider.service.auth import authorize
from fillpdf_provider.service.fill_body import INLINE_PARSE_BYTES, parse_fill, read_body
from fillpdf_provider.service.filling import fill
from fillpdf_provider.service.models import error_responses
from fillpdf_provider.service.openapi import BEARER
from fillpdf_provider.service.run_once import run_once
from fillpdf_provider.service.state import service_of

router = APIRouter()


@router.post(
    "/v1/fill",
    response_class=Response,
    responses={
        200: {"content": {"application/pdf": {}}, "description": "The filled PDF"},
        **error_responses(400, 401, 404, 408, 410, 413, 415, 429, 500, 502, 503),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/FillRequest"}}
            },
        },
        **BEARER,
    },
    summary="Fill a conversion, or a fillable PDF sent inline, with values",
)
async def fill_pdf(request: Request) -> Response:
    # ``Authorized`` called in place: the busiest route skips FastAPI's dependency walk
    caller = await authorize(request)
    service = service_of(request)
    raw = await read_body(request, service.settings.max_fill_body_bytes)
    fields, chars = service.settings.max_form_fields, service.settings.max_fill_chars
    if len(raw) <= INLINE_PARSE_BYTES:
        body, fingerprint = parse_fill(raw, fields, chars)
    else:  # megabytes of JSON take the event loop for seconds: parse beside it
        body, fingerprint = await anyio.to_thread.run_sync(parse_fill, raw, fields, chars)
    return await run_once(
        request, caller, fingerprint, lambda gone: fill(service, caller, body, gone)
    )
