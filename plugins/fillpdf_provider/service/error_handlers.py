"""Every error answered in the contract's shape: ours, FastAPI's validation, Starlette's 404/405,
and an unreachable database (503 with ``Retry-After``, not a 500).

Without these handlers FastAPI would answer 422 and ``{"detail": ...}``, which the contract
does not have.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException

from fillpdf_provider.service import db_outage
from fillpdf_provider.service.errors import ApiError

DOCS_PATH = "/v1/docs"  # the reference for people (apidocs.install_docs)
OPENAPI_PATH = "/v1/openapi.json"


def error_response(error: ApiError) -> JSONResponse:
    """The JSON answer for ``error``, with its status and headers."""
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


async def _api_error(request: Request, error: ApiError) -> JSONResponse:
    return error_response(error)


async def _validation(request: Request, error: RequestValidationError) -> JSONResponse:
    """A request FastAPI could not bind (a path or query parameter) is 400 naming where."""
    first = error.errors()[0] if error.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ())[1:]) or None
    return error_response(
        ApiError("invalid_request", f"{where or 'request'}: {first.get('msg')}.", param=where)
    )


async def _http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
    """Starlette's routing errors: a known path with another method (405), else 404."""
    if error.status_code == 405:
        allowed = {k.lower(): v for k, v in (error.headers or {}).items()}.get("allow", "")
        return error_response(
            ApiError(
                "method_not_allowed",
                f"{request.method} is not allowed here; this path takes {allowed}.",
                headers=error.headers,
            )
        )
    return error_response(
        ApiError(
            "not_found",
            f"No such endpoint: {request.url.path}. The API's endpoints are described at "
            f"{DOCS_PATH} (the OpenAPI document: {OPENAPI_PATH}).",
        )
    )


async def _database_error(request: Request, error: Exception) -> JSONResponse:
    """A database that can't be reached (or whose disk is full) is 503
    ``service_unavailable`` with ``Retry-After``; any other database error is a bug, left to
    the envelope's 500."""
    answer = db_outage.answer_to(error, db_outage.engine_of(request.app))
    if answer is None:
        raise error
    if db_outage.is_unreachable(error):
        db_outage.note(
            error,
            "database unreachable; answered 503",
            request_id=request.scope.get("state", {}).get("request_id"),
            path=request.url.path,
        )
    return error_response(answer)


def install_error_handlers(app: FastAPI) -> None:
    """Answer ``ApiError``, validation, routing and database errors in the contract's shape."""
    app.exception_handler(ApiError)(_api_error)
    app.exception_handler(RequestValidationError)(_validation)
    app.exception_handler(StarletteHTTPException)(_http_error)
    for database_error in (sa_exc.DBAPIError, sa_exc.TimeoutError, *db_outage.DRIVER_ERRORS):
        app.exception_handler(database_error)(_database_error)
