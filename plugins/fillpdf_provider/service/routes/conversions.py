"""``GET /v1/conversions/{conversion_id}``: a stored conversion again, with a fresh URL."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from fillpdf_provider.service import conversions
from fillpdf_provider.service.auth import Authorized
from fillpdf_provider.service.models import ConversionResult, error_responses
from fillpdf_provider.service.openapi import BEARER
from fillpdf_provider.service.state import service_of

router = APIRouter()


@router.get(
    "/v1/conversions/{conversion_id}",
    response_model=ConversionResult,
    responses=error_responses(400, 401, 404, 410, 429, 500, 503),
    openapi_extra=BEARER,
    summary="A stored conversion again, with a fresh document URL",
)
async def get_conversion(conversion_id: str, request: Request, caller: Authorized) -> JSONResponse:
    service = service_of(request)
    row = await anyio.to_thread.run_sync(
        lambda: conversions.live(service.db, conversion_id, caller.account_id, service.now())
    )
    return JSONResponse(service.result_body(row))
