"""The ``/v1`` HTTP API: routes, authentication, limits and the request envelope.

Order of checks on every authenticated route: the key (401), the rate limit (429), the
request's shape (400/413/415), plan limits and quota (415/402), then the work. Nothing is
billed or stored for a request that fails.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import logging
import os
import random
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from sqlalchemy.engine import Connection
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fillpdf_provider import __version__
from fillpdf_provider.engine.detect import MODES
from fillpdf_provider.engine.errors import SchemaError, UnknownFieldError
from fillpdf_provider.engine.rebuild import parse_schema
from fillpdf_provider.service import (
    billing,
    conversions,
    idempotent,
    isolation,
    ratelimit,
    recovery,
)
from fillpdf_provider.service.apidocs import install_docs
from fillpdf_provider.service.body_deadline import BodyDeadline, body_ended
from fillpdf_provider.service.clock import iso, period_of
from fillpdf_provider.service.db import create_schema, make_engine
from fillpdf_provider.service.engine_pool import ClientGone, EnginePool, watch_disconnect
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.jsonbody import parse_json
from fillpdf_provider.service.keys import Caller, authenticate
from fillpdf_provider.service.logs import log
from fillpdf_provider.service.models import (
    CONVERT_BODY,
    Account,
    ConversionResult,
    FillRequest,
    error_responses,
)
from fillpdf_provider.service.settings import SERVER_PID_VARIABLE, Settings
from fillpdf_provider.service.signing import document_url, verify
from fillpdf_provider.service.uploads import receive_upload

PDF_MAGIC_WINDOW = 1024
#: Fill bodies up to this size are parsed on the event loop (faster than a thread hop).
INLINE_PARSE_BYTES = 64 * 1024
#: Stored conversions a server process remembers as live (owner and expiry) for fills.
LIVE_CACHE_SIZE = 4096
#: Largest ``schema`` form field of POST /v1/convert (its entries are bounded by the engine).
MAX_SCHEMA_BYTES = 2 * 1024 * 1024


class Service:
    """What every request of one process shares: settings, database, the PDF workers."""

    def __init__(self, settings: Settings) -> None:
        settings.prepare()
        self.settings = settings
        self.db = make_engine(settings.resolved_database_url())
        create_schema(self.db)
        self.instance = recovery.Instance.of_this_process()
        self.pool = EnginePool(
            max_children=settings.max_children,
            max_queue=settings.max_queue,
            queue_timeout_s=settings.queue_timeout_s,
            memory_bytes=settings.engine_memory_bytes,
            max_form_fields=settings.max_form_fields,
        )
        self._live: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def now(self) -> float:
        return self.settings.clock.now()

    def owner_alive(self, owner: str | None) -> bool:
        return recovery.owner_alive(self.db, owner, self.instance)

    async def live_conversion(self, conversion_id: str, account_id: str) -> None:
        """404/410 unless the account's conversion is live; hits the database once per id.

        A conversion's owner and expiry never change, and it is only ever deleted after it
        expires, so a conversion seen live stays live until its ``expires_at``.
        """
        now = self.now()
        known = self._live.get(conversion_id)
        if known is not None and known[0] == account_id and now < known[1]:
            self._live.move_to_end(conversion_id)
            return
        row = await anyio.to_thread.run_sync(
            conversions.live, self.db, conversion_id, account_id, now
        )
        self._live[conversion_id] = (row["account_id"], float(row["expires_at"]))
        while len(self._live) > LIVE_CACHE_SIZE:
            self._live.popitem(last=False)

    def result_body(self, row: dict[str, Any]) -> dict[str, Any]:
        """A conversion result with a signed URL on the configured public address (never
        the request's, whose host the client sets)."""
        expires = int(row["expires_at"])
        key = self.settings.signing_key or b""
        url = document_url(self.settings.public_base_url, key, row["id"], expires)
        return {**row["result"], "document_url": url, "expires_at": iso(expires)}


# --------------------------------------------------------------------------- envelope


class RequestEnvelope:
    """Request id, rate-limit and security headers, one JSON access-log line on every response.

    It also turns an unexpected exception into the contract's 500 body (with the request id,
    never a stack trace), so the process keeps serving. A client that hangs up before the end
    of its body is not our error: it is logged at INFO and answered 400.
    """

    #: On every answer unless the route set its own (the API docs page sets a stricter CSP).
    SECURITY_HEADERS = (
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
    )

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = f"req_{random.getrandbits(80):020x}"  # an id for logs, not a secret
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        started = time.perf_counter()
        status = {"code": 0}
        received, ended, cut_short = 0, False, False

        async def receive_counted() -> Message:
            nonlocal received, ended, cut_short
            message = await receive()
            if not ended:
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    ended = not message.get("more_body", False)
                else:  # http.disconnect before the last byte of the body
                    ended = cut_short = True
            return message

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["X-Request-Id"] = request_id
                for name, value in state.get("rate_headers", {}).items():
                    if name not in headers:
                        headers[name] = value
                for name, value in self.SECURITY_HEADERS:
                    headers.setdefault(name, value)
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive_counted, send_with_headers)
        except ClientDisconnect:  # a body read no route turned into its 400
            cut_short = True
            if status["code"] == 0:
                await _error_response(body_ended())(scope, receive, send_with_headers)
        except Exception:
            log(logging.ERROR, "unhandled error", request_id=request_id, path=scope["path"])
            logging.getLogger("fillpdf.service").exception("unhandled error %s", request_id)
            if status["code"] == 0:
                error = ApiError(
                    "api_error",
                    f"Something went wrong on our side; quote request id {request_id} "
                    "if you report it.",
                )
                response = JSONResponse(error.body(), status_code=500)
                await response(scope, receive, send_with_headers)
        finally:
            if cut_short:
                length = dict(scope.get("headers", [])).get(b"content-length", b"")
                log(
                    logging.INFO,
                    "client closed the connection before the end of the body",
                    request_id=request_id,
                    path=scope.get("path"),
                    received=received,
                    content_length=length.decode("latin-1") or None,
                )
            log(
                logging.INFO,
                "request",
                request_id=request_id,
                method=scope.get("method"),
                path=scope.get("path"),
                status=status["code"],
                ms=round((time.perf_counter() - started) * 1000, 1),
                account=state.get("account_id"),
            )


def _error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


# --------------------------------------------------------------------------- auth


async def _authorize(request: Request) -> Caller:
    service: Service = request.app.state.service
    authorization = request.headers.get("authorization")

    def check() -> tuple[Caller | None, ratelimit.RateState | None]:
        # One connection for both; the read runs before the count's write transaction, so
        # SQLite never has to upgrade a read snapshot to a write (which fails under load).
        with service.db.connect() as conn:
            caller = authenticate(conn, authorization)
            if caller is None:
                return None, None
            state = ratelimit.hit(
                conn, caller.key_id, caller.plan.rate_limit_per_minute, service.now()
            )
            conn.commit()
        return caller, state

    caller, rate = await anyio.to_thread.run_sync(check)
    if caller is None or rate is None:
        raise ApiError(
            "authentication_error",
            "Send a valid API key as 'Authorization: Bearer fpk_...'; keys are created with "
            "`fillpdf keys create`.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    request.state.account_id = caller.account_id
    request.state.rate_headers = rate.headers()
    if not rate.allowed:
        raise ApiError(
            "rate_limit_error",
            f"Over {rate.limit} requests per minute for this key; retry after "
            f"{rate.retry_after} s (X-RateLimit-Reset).",
        )
    return caller


Authorized = Annotated[Caller, Depends(_authorize)]


# --------------------------------------------------------------------------- idempotency


async def _idempotent(
    request: Request,
    caller: Caller,
    request_hash: str,
    work: Callable[[asyncio.Task[None]], Awaitable[Response]],
) -> Response:
    """Run ``work`` once per ``Idempotency-Key``; a repeat gets the stored answer.

    ``work`` gets a task that ends when the client hangs up, so PDF work can be stopped.
    """
    service: Service = request.app.state.service
    gone = asyncio.create_task(watch_disconnect(request.receive))
    try:
        return await _claimed(service, request, caller, request_hash, lambda: work(gone))
    except ClientGone:
        log(logging.INFO, "client hung up; its work was stopped", path=request.url.path)
        return _error_response(
            ApiError("invalid_request", "The client closed the connection before the answer.")
        )
    finally:
        gone.cancel()


async def _claimed(
    service: Service,
    request: Request,
    caller: Caller,
    request_hash: str,
    work: Callable[[], Awaitable[Response]],
) -> Response:
    header = request.headers.get("idempotency-key")
    if header is None:
        try:
            return await work()
        except ApiError as error:
            return _error_response(error)
    key = idempotent.check_key(header)
    request.state.idempotency_key = key  # a conversion records its answer with its row
    settings = service.settings
    stored = await idempotent.claim(
        service.db,
        caller.account_id,
        key,
        request_hash,
        service.now(),
        settings.retention_seconds,
        owner=service.instance.id,
        owner_alive=service.owner_alive,
        wait_s=settings.queue_timeout_s + settings.probe_timeout_s + settings.engine_timeout_s,
    )
    if stored is not None:
        return Response(
            stored.body,
            status_code=stored.status,
            media_type=stored.content_type,
            headers={**stored.headers, "Idempotent-Replayed": "true"},
        )

    def release() -> None:
        idempotent.release(service.db, caller.account_id, key)

    try:
        response = await work()
    except ApiError as error:
        response = _error_response(error)
    except asyncio.CancelledError:
        release()  # the server is stopping: no await may run now, so release in place
        raise
    except BaseException:
        await anyio.to_thread.run_sync(release)
        raise
    if response.status_code >= 500 or response.status_code in (408, 429):
        await anyio.to_thread.run_sync(release)
        return response
    kept = {k: v for k, v in response.headers.items() if k.lower() == "content-disposition"}
    answer = idempotent.Stored(
        response.status_code,
        response.media_type or response.headers.get("content-type", "application/json"),
        bytes(response.body),
        kept,
    )
    await anyio.to_thread.run_sync(
        lambda: idempotent.finish(service.db, caller.account_id, key, answer)
    )
    return response


# --------------------------------------------------------------------------- work


def _engine_error(failure: isolation.EngineFailure, source: str) -> ApiError:
    """The API error for what the child process reported about the PDF in ``source``."""
    return ApiError(failure.error_type, failure.message, param=failure.param or source)


async def _convert(
    service: Service,
    caller: Caller,
    upload: Path,
    detect: str,
    request: Request,
    gone: asyncio.Task[None],
    schema: str | None = None,
) -> Response:
    settings = service.settings
    with upload.open("rb") as handle:
        head = handle.read(PDF_MAGIC_WINDOW)
    if b"%PDF-" not in head:
        raise ApiError(
            "unsupported_file",
            "The file is not a PDF (no %PDF- header); upload the form as a PDF.",
            param="file",
        )
    conversion_id = conversions.new_id()
    output = conversions.file_path(settings.files_dir, conversion_id)
    now = service.now()
    taken: list[billing.Reservation] = []

    async def decide(pages: int) -> None:
        limit = caller.plan.max_pages_per_file
        if limit is not None and pages > limit:
            raise ApiError(
                "unsupported_file",
                f"The PDF has {pages} pages; the {caller.plan.name} plan converts at most "
                f"{limit} per file. Split the file or move to a larger plan.",
                param="file",
            )
        reservation = await anyio.to_thread.run_sync(
            billing.reserve, service.db, caller, pages, now, conversion_id, service.instance.id
        )
        if reservation is None:
            used = await anyio.to_thread.run_sync(
                billing.pages_used, service.db, caller.account_id, period_of(now)
            )
            left = max(0, (caller.plan.pages_included or 0) - used)
            raise ApiError(
                "quota_exceeded",
                f"The PDF has {pages} pages and {left} of this month's "
                f"{caller.plan.pages_included} included pages are left; the {caller.plan.name} "
                "plan stops at its quota. Wait for the 1st (UTC) or upgrade.",
                param="file",
            )
        taken.append(reservation)

    def give_back() -> None:
        for reservation in taken:
            if billing.release(service.db, reservation):
                output.unlink(missing_ok=True)  # the conversion was not recorded: no file

    try:
        result = await service.pool.convert(
            upload,
            detect,
            output,
            decide=decide,
            probe_timeout=settings.probe_timeout_s,
            timeout=settings.engine_timeout_s,
            schema=schema,
            gone=gone,
        )
        row = {
            "id": conversion_id,
            "account_id": caller.account_id,
            "key_id": caller.key_id,
            "created_at": now,
            "expires_at": now + settings.retention_seconds,
            "pages": result["pages"],
            "overage_pages": taken[0].overage_pages,
            "detect": "schema" if schema is not None else detect,
            "result": {**result, "conversion_id": conversion_id},
            "deleted": False,
        }
        response = JSONResponse(service.result_body(row))
        key = getattr(request.state, "idempotency_key", None)
        answer = idempotent.Stored(200, "application/json", bytes(response.body), {})

        def store_answer(conn: Connection) -> None:
            idempotent.finish_in(conn, caller.account_id, key, answer)

        await anyio.to_thread.run_sync(
            billing.commit, service.db, taken[0], row, store_answer if key else None
        )
    except asyncio.CancelledError:
        give_back()  # the server is stopping: no await may run now
        raise
    except BaseException as exc:
        await anyio.to_thread.run_sync(give_back)
        if not taken:
            output.unlink(missing_ok=True)
        if isinstance(exc, isolation.EngineFailure):
            raise _engine_error(exc, "file") from None
        if isinstance(exc, billing.ReservationLost):
            output.unlink(missing_ok=True)  # the commit failed: nothing owns the file
            raise ApiError(
                "service_unavailable",
                "The conversion was interrupted by a server restart and nothing was billed; "
                "send it again.",
                headers={"Retry-After": "1"},
            ) from None
        raise
    return response


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


def _parse_fill(raw: bytes, max_fields: int) -> tuple[FillRequest, str]:
    """The request and its fingerprint; at most ``max_fields`` values and fields."""
    data = parse_json(raw)
    if not isinstance(data, dict):
        raise ApiError("invalid_request", "The body must be a JSON object.")
    if "values" not in data:
        raise ApiError("invalid_request", "Send 'values': {field name: value}.", param="values")
    for name in ("values", "fields"):
        entries = data.get(name)
        if isinstance(entries, dict | list) and len(entries) > max_fields:
            raise ApiError(
                "invalid_request",
                f"'{name}' has {len(entries):,} entries; the service fills forms of at most "
                f"{max_fields:,} fields. Split the form into several files.",
                param=name,
            )
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
    fingerprint = hashlib.sha256(b"fill|" + raw).hexdigest()
    try:
        return FillRequest.model_validate(data), fingerprint
    except ValueError as exc:
        errors = getattr(exc, "errors", lambda: [])()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ())) or None
        message = first.get("msg", str(exc))
        raise ApiError(
            "invalid_request",
            f"{where or 'body'}: {message}.",
            param=where.split(".")[0] if where else None,
        ) from None


async def _fill(
    service: Service, caller: Caller, body: FillRequest, gone: asyncio.Task[None]
) -> Response:
    settings = service.settings
    if body.conversion_id is not None:
        conversion_id = body.conversion_id
        await service.live_conversion(conversion_id, caller.account_id)
        try:
            data = await service.pool.fill_stored(
                conversion_id,
                conversions.file_path(settings.files_dir, conversion_id),
                body.values,
                flatten=body.flatten,
                timeout=settings.engine_timeout_s,
                gone=gone,
            )
        except isolation.EngineFailure as failure:
            raise _engine_error(failure, "values") from None
        return Response(data, media_type="application/pdf")
    try:
        pdf = base64.b64decode(body.pdf_base64 or "", validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(
            "invalid_request", "pdf_base64 is not valid base64.", param="pdf_base64"
        ) from None
    if b"%PDF-" not in pdf[:PDF_MAGIC_WINDOW]:
        raise ApiError(
            "unsupported_file",
            "pdf_base64 does not hold a PDF (no %PDF- header).",
            param="pdf_base64",
        )
    names = [f.name for f in body.fields or []]
    if len(names) > settings.max_form_fields:
        raise ApiError(
            "invalid_request",
            f"'fields' lists {len(names):,} fields; the service fills forms of at most "
            f"{settings.max_form_fields:,}. Split the form into several files.",
            param="fields",
        )
    known = set(names)
    for name in body.values:
        if name not in known:
            error = UnknownFieldError(name, names)
            raise ApiError("invalid_request", error.message, param=name)
    try:
        data = await service.pool.fill_inline(
            pdf, body.values, flatten=body.flatten, timeout=settings.engine_timeout_s, gone=gone
        )
    except isolation.EngineFailure as failure:
        raise _engine_error(failure, "pdf_base64") from None
    return Response(data, media_type="application/pdf")


async def _read_body(request: Request, limit: int) -> bytes:
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


# --------------------------------------------------------------------------- the app


def create_app(settings: Settings | None = None) -> FastAPI:
    """The ASGI app; without ``settings`` it reads the ``FILLPDF_*`` environment."""
    service = Service(settings or Settings.from_env())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        tasks: list[asyncio.Task[None]] = []
        try:
            await _start(service, tasks)
            yield
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            _stop(service)

    app = FastAPI(
        title="FillPDF API",
        version=__version__,
        description="Convert flat PDFs into fillable forms and fill them. Every request "
        "carries `Authorization: Bearer <API key>`, except signed document URLs.",
        openapi_url="/v1/openapi.json",
        docs_url=None,  # install_docs: a page without third-party scripts
        redoc_url=None,
        redirect_slashes=False,  # its 307 would build Location from the Host header
        lifespan=lifespan,
    )
    app.state.service = service
    app.add_middleware(
        BodyDeadline,
        grace_s=service.settings.body_grace_s,
        min_rate=service.settings.body_min_rate,
    )
    app.add_middleware(RequestEnvelope)  # outermost: it sees every answer, even a 408
    install_docs(app, "/v1/docs")

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, error: ApiError) -> JSONResponse:
        return _error_response(error)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ())[1:]) or None
        return _error_response(
            ApiError("invalid_request", f"{where or 'request'}: {first.get('msg')}.", param=where)
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        if error.status_code == 405:
            allowed = {k.lower(): v for k, v in (error.headers or {}).items()}.get("allow", "")
            return _error_response(
                ApiError(
                    "method_not_allowed",
                    f"{request.method} is not allowed here; this path takes {allowed}.",
                    headers=error.headers,
                )
            )
        return _error_response(
            ApiError("not_found", f"No such endpoint: {request.url.path}; see /v1/openapi.json.")
        )

    security = {"security": [{"bearer": []}]}

    @app.post(
        "/v1/convert",
        response_model=ConversionResult,
        responses=error_responses(400, 401, 402, 408, 415, 429, 500, 502, 503),
        openapi_extra={**CONVERT_BODY, **security},
        summary="Convert a flat PDF into a fillable one and return its field schema",
        description="Detects the fields of the flat PDF, or, with `schema`, builds exactly "
        "the form that schema describes (no detection). Billed per page either way.",
    )
    async def convert_pdf(request: Request, caller: Authorized) -> Response:
        upload = await receive_upload(
            request.headers.get("content-type"),
            request.headers.get("content-length"),
            request.stream(),
            service.settings.uploads_dir,
            max_file=service.settings.max_upload_bytes,
            text_limits={"schema": MAX_SCHEMA_BYTES},
            prefix=service.instance.upload_prefix(),
        )
        try:
            if upload.path is None:
                raise ApiError(
                    "invalid_request", "The request has no 'file' part with the PDF.", param="file"
                )
            detect = upload.fields.get("detect") or "fields"
            if detect not in MODES:
                raise ApiError(
                    "invalid_request",
                    f"detect must be 'fields' or 'fields_fast', not {detect!r}.",
                    param="detect",
                )
            schema = await anyio.to_thread.run_sync(_checked_schema, upload.fields.get("schema"))
            request_key = f"convert|{detect}|{upload.sha256}"
            if schema is not None:  # the same file with another schema is another request
                request_key += "|schema|" + hashlib.sha256(schema.encode()).hexdigest()
            fingerprint = hashlib.sha256(request_key.encode()).hexdigest()
            path = upload.path
            return await _idempotent(
                request,
                caller,
                fingerprint,
                lambda gone: _convert(service, caller, path, detect, request, gone, schema),
            )
        finally:
            upload.discard()

    @app.post(
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
            **security,
        },
        summary="Fill a conversion, or a fillable PDF sent inline, with values",
    )
    async def fill_pdf(request: Request, caller: Authorized) -> Response:
        raw = await _read_body(request, service.settings.max_fill_body_bytes)
        limit = service.settings.max_form_fields
        if len(raw) <= INLINE_PARSE_BYTES:
            body, fingerprint = _parse_fill(raw, limit)
        else:  # megabytes of JSON take the event loop for seconds: parse beside it
            body, fingerprint = await anyio.to_thread.run_sync(_parse_fill, raw, limit)
        return await _idempotent(
            request, caller, fingerprint, lambda gone: _fill(service, caller, body, gone)
        )

    @app.get(
        "/v1/account",
        response_model=Account,
        responses=error_responses(401, 429, 500),
        openapi_extra=security,
        summary="The plan and this month's live usage",
    )
    async def account(caller: Authorized) -> JSONResponse:
        view = await anyio.to_thread.run_sync(
            lambda: billing.account_view(service.db, caller, service.now())
        )
        return JSONResponse(view)

    @app.get(
        "/v1/conversions/{conversion_id}",
        response_model=ConversionResult,
        responses=error_responses(400, 401, 404, 410, 429, 500),
        openapi_extra=security,
        summary="A stored conversion again, with a fresh document URL",
    )
    async def get_conversion(
        conversion_id: str, request: Request, caller: Authorized
    ) -> JSONResponse:
        row = await anyio.to_thread.run_sync(
            lambda: conversions.live(service.db, conversion_id, caller.account_id, service.now())
        )
        return JSONResponse(service.result_body(row))

    @app.get(
        "/v1/files/{conversion_id}.pdf",
        response_class=FileResponse,
        responses={
            200: {"content": {"application/pdf": {}}, "description": "The fillable PDF"},
            **error_responses(403, 404, 410, 500),
        },
        summary="A converted file, by its signed URL (no API key)",
    )
    async def get_file(
        conversion_id: str, expires: str | None = None, signature: str | None = None
    ) -> FileResponse:
        key = service.settings.signing_key or b""
        valid_until = verify(key, conversion_id, expires, signature)
        if valid_until is None:
            raise ApiError(
                "forbidden",
                "The document URL's signature does not verify; use the document_url exactly "
                "as returned, or fetch a fresh one with GET /v1/conversions/{id}.",
                param="signature",
            )
        now = service.now()
        if valid_until <= now:
            raise ApiError(
                "expired",
                "This document URL has expired; GET /v1/conversions/{id} gives a fresh one "
                "while the conversion lasts.",
                param="expires",
            )
        row = await anyio.to_thread.run_sync(lambda: conversions.find(service.db, conversion_id))
        if row is None:
            raise ApiError("not_found", f"No conversion {conversion_id!r}.", param="conversion_id")
        path = conversions.file_path(service.settings.files_dir, conversion_id)
        if row["deleted"] or row["expires_at"] <= now or not path.exists():
            raise ApiError(
                "expired",
                "The conversion expired 24 hours after it was made and its file was deleted.",
                param="conversion_id",
            )
        return FileResponse(path, media_type="application/pdf", filename=f"{conversion_id}.pdf")

    app.openapi_schema = None
    _add_security_scheme(app)
    return app


def _add_security_scheme(app: FastAPI) -> None:
    """Declare the bearer key and the FillRequest schema in the OpenAPI document."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from `fillpdf keys create`.",
        }
        schemas = components.setdefault("schemas", {})
        for name, definition in (
            FillRequest.model_json_schema(ref_template="#/components/schemas/{model}")
            .get("$defs", {})
            .items()
        ):
            schemas.setdefault(name, definition)
        fill_schema = FillRequest.model_json_schema(ref_template="#/components/schemas/{model}")
        fill_schema.pop("$defs", None)
        schemas["FillRequest"] = fill_schema
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)  # validation errors are answered as 400 invalid_request
        for operations in schema["paths"].values():
            for operation in operations.values():
                _declare_headers(operation)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _header(description: str, kind: str = "integer", *, required: bool = False) -> dict:
    return {"description": description, "required": required, "schema": {"type": kind}}


def _declare_headers(operation: dict[str, Any]) -> None:
    """Every answer has X-Request-Id; authenticated ones the rate-limit headers."""
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)
    secured = bool(operation.get("security"))
    for status, response in responses.items():
        headers = response.setdefault("headers", {})
        headers["X-Request-Id"] = _header(
            "Identifies the request in the logs.", "string", required=True
        )
        if not secured or status == "401":
            continue
        limited = status == "429"
        headers["X-RateLimit-Limit"] = _header("Requests per minute of the plan.", required=limited)
        headers["X-RateLimit-Remaining"] = _header(
            "Requests left in this minute.", required=limited
        )
        headers["X-RateLimit-Reset"] = _header("Epoch second the minute ends.", required=limited)
        if limited:
            headers["Retry-After"] = _header("Seconds to wait.", required=True)


async def _start(service: Service, tasks: list[asyncio.Task[None]]) -> None:
    """Register this server, clear what dead ones left, and start the PDF workers.

    The heartbeat starts first: other hosts must not take a slow start for a dead server.
    """
    settings = service.settings
    if os.environ.get(SERVER_PID_VARIABLE, str(os.getpid())) != str(os.getpid()):
        isolation.die_with_parent()  # a worker of `fillpdf serve --workers N`: die with it
    await anyio.to_thread.run_sync(recovery.register, service.db, service.instance)
    tasks.append(asyncio.create_task(_heartbeat_forever(service)))
    await anyio.to_thread.run_sync(
        lambda: recovery.recover(
            service.db,
            service.instance,
            settings.files_dir,
            settings.uploads_dir,
            scan_files=True,
        )
    )
    await service.pool.warm_up()
    tasks.append(asyncio.create_task(_sweep_forever(service)))


def _stop(service: Service) -> None:
    """Stop every child and give back what this server still holds."""
    service.pool.close()
    settings = service.settings
    left = recovery.unregister(
        service.db, service.instance, settings.files_dir, settings.uploads_dir
    )
    if left:
        left.log("stopped with work in progress; it was given back")


async def _heartbeat_forever(service: Service) -> None:
    while True:
        await asyncio.sleep(recovery.HEARTBEAT_S)
        try:
            await anyio.to_thread.run_sync(recovery.heartbeat, service.db, service.instance)
        except Exception:
            logging.getLogger("fillpdf.service").exception("heartbeat failed; retrying")


async def _sweep_forever(service: Service) -> None:
    settings = service.settings
    while True:
        try:
            now = service.now()
            swept = await anyio.to_thread.run_sync(
                conversions.sweep,
                service.db,
                settings.files_dir,
                now,
                settings.retention_seconds,
            )
            await anyio.to_thread.run_sync(ratelimit.forget_before, service.db, now)
            if swept:
                log(logging.INFO, "swept expired conversions", count=swept)
            await anyio.to_thread.run_sync(
                lambda: recovery.recover(
                    service.db,
                    service.instance,
                    settings.files_dir,
                    settings.uploads_dir,
                    scan_files=False,
                )
            )
        except Exception:
            logging.getLogger("fillpdf.service").exception("sweeper failed; retrying")
        await asyncio.sleep(settings.sweep_interval_s)
