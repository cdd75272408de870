"""One fill: a stored conversion of the caller's, or a fillable PDF sent inline with its schema.

An inline request is checked whole (base64, PDF header, field names) before a child is
taken, so a bad request never waits in the PDF queue.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Mapping
from typing import Any

import anyio
from fastapi.responses import Response

from fillpdf_provider.engine.errors import UnknownFieldError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.service import conversions, isolation
from fillpdf_provider.service.engine_pool import Hangup
from fillpdf_provider.service.errors import ApiError, engine_error
from fillpdf_provider.service.keys import Caller
from fillpdf_provider.service.models import FillRequest
from fillpdf_provider.service.state import Service
from fillpdf_provider.service.uploads import has_pdf_header

#: A fill by conversion_id with at most this many values, of at most this many characters
#: in all, and not flattened, runs on the event loop (measured: 0.05 ms for 3 values).
QUICK_VALUES = 64
QUICK_CHARS = 2048


async def fill(service: Service, caller: Caller, body: FillRequest, gone: Hangup) -> Response:
    """The filled PDF for ``body``."""
    if body.conversion_id is not None:
        data = await _fill_stored(service, caller, body.conversion_id, body)
    else:
        data = await _fill_inline(service, body, gone.task)
    return Response(data, media_type="application/pdf")


async def _fill_stored(
    service: Service,
    caller: Caller,
    conversion_id: str,
    body: FillRequest,
) -> bytes:
    """Fill a stored conversion in this process, from its parsed template (``templates``):
    the same queue as other PDF work, and bounds checked before any drawing instead of a
    child to kill (nor a hang-up to watch: the fill is done sooner than it is noticed)."""
    await service.live_conversion(conversion_id, caller.account_id)
    path = conversions.file_path(service.settings.files_dir, conversion_id)
    async with service.pool.slot():
        try:
            template = await service.templates.get(conversion_id, path)
        except FileNotFoundError:
            raise ApiError(
                "expired",
                f"The file of conversion {conversion_id!r} has been deleted; convert the PDF "
                "again.",
                param="conversion_id",
            ) from None
        try:
            if _quick(body):  # a thread's hand-off would cost more than the fill
                return _fill(template, body.values, body.flatten)
            return await anyio.to_thread.run_sync(_fill, template, body.values, body.flatten)
        except Exception as exc:
            _, error_type, message, param = isolation.failure_of(exc)
            raise ApiError(error_type, message, param=param or "values") from None


def _fill(template: Template, values: Mapping[str, Any], flatten: bool) -> bytes:
    return template.fill(values, flatten=flatten)


def _quick(body: FillRequest) -> bool:
    """A fill small enough for the event loop: a few values, short, and the pages not
    drawn (well under a millisecond); the rest runs in a thread, so that a long one never
    holds up other requests."""
    if body.flatten or len(body.values) > QUICK_VALUES:
        return False
    return sum(len(v) for v in body.values.values() if isinstance(v, str)) <= QUICK_CHARS


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
