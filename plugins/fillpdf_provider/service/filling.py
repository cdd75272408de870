"""One fill: a stored conversion of the caller's, or a fillable PDF sent inline with its schema.

An inline request is checked whole (base64, PDF header, field names) before a child is
taken, so a bad request never waits in the PDF queue.
"""

from __future__ import annotations

import asyncio
import base64
import binascii

from fastapi.responses import Response

from fillpdf_provider.engine.errors import UnknownFieldError
from fillpdf_provider.service import conversions, isolation
from fillpdf_provider.service.errors import ApiError, engine_error
from fillpdf_provider.service.keys import Caller
from fillpdf_provider.service.models import FillRequest
from fillpdf_provider.service.state import Service
from fillpdf_provider.service.uploads import has_pdf_header


async def fill(
    service: Service, caller: Caller, body: FillRequest, gone: asyncio.Task[None]
) -> Response:
    """The filled PDF for ``body``."""
    if body.conversion_id is not None:
        data = await _fill_stored(service, caller, body.conversion_id, body, gone)
    else:
        data = await _fill_inline(service, body, gone)
    return Response(data, media_type="application/pdf")


async def _fill_stored(
    service: Service,
    caller: Caller,
    conversion_id: str,
    body: FillRequest,
    gone: asyncio.Task[None],
) -> bytes:
    settings = service.settings
    await service.live_conversion(conversion_id, caller.account_id)
    try:
        return await service.pool.fill_stored(
            conversion_id,
            conversions.file_path(settings.files_dir, conversion_id),
            body.values,
            flatten=body.flatten,
            timeout=settings.engine_timeout_s,
            gone=gone,
        )
    except isolation.EngineFailure as failure:
        raise engine_error(failure, "values") from None


async def _fill_inline(service: Service, body: FillRequest, gone: asyncio.Task[None]) -> bytes:
    settings = service.settings
    pdf = _inline_pdf(body)
    _check_names(body, settings.max_form_fields)
    try:
        return await service.pool.fill_inline(
            pdf, body.values, flatten=body.flatten, timeout=settings.engine_timeout_s, gone=gone
        )
    except isolation.EngineFailure as failure:
        raise engine_error(failure, "pdf_base64") from None


def _inline_pdf(body: FillRequest) -> bytes:
    """The PDF of ``pdf_base64``: 400 if it is not base64, 415 if it is not a PDF."""
    try:
        pdf = base64.b64decode(body.pdf_base64 or "", validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(
            "invalid_request", "pdf_base64 is not valid base64.", param="pdf_base64"
        ) from None
    if not has_pdf_header(pdf):
        raise ApiError(
            "unsupported_file",
            "pdf_base64 does not hold a PDF (no %PDF- header).",
            param="pdf_base64",
        )
    return pdf


def _check_names(body: FillRequest, max_fields: int) -> None:
    """At most ``max_fields`` fields, and every value for one of them."""
    names = [f.name for f in body.fields or []]
    if len(names) > max_fields:
        raise ApiError(
            "invalid_request",
            f"'fields' lists {len(names):,} fields; the service fills forms of at most "
            f"{max_fields:,}. Split the form into several files.",
            param="fields",
        )
    known = set(names)
    for name in body.values:
        if name not in known:
            error = UnknownFieldError(name, names)
            raise ApiError("invalid_request", error.message, param=name)
