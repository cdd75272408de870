"""``GET /v1/account``: the caller's plan and this month's live usage."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from fillpdf_provider.service import billing
from fillpdf_provider.service.auth import Authorized
from fillpdf_provider.service.models import Account, error_responses
from fillpdf_provider.service.openapi import BEARER
from fillpdf_provider.service.state import service_of

router = APIRouter()


@router.get(
    "/v1/account",
    response_model=Account,
    responses=error_responses(401, 429, 500, 503),
    openapi_extra=BEARER,
    summary="The plan and this month's live usage",
)
async def account(request: Request, caller: Authorized) -> JSONResponse:
    service = service_of(request)
    view = await anyio.to_thread.run_sync(
        lambda: billing.account_view(service.db, caller, service.now())
    )
    return JSONResponse(view)
