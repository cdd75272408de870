"""The envelope of every request: its id, the rate-limit and security headers, its log line."""

from __future__ import annotations

import logging
import random
import time
from typing import Any

from fastapi.responses import JSONResponse
from starlette.datastructures import MutableHeaders
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fillpdf_provider.service import db_outage
from fillpdf_provider.service.body_deadline import body_ended
from fillpdf_provider.service.error_handlers import error_response
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.logs import log

#: On every answer unless the route set its own (the API docs page sets a stricter CSP).
SECURITY_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
)


class RequestEnvelope:
    """Request id, rate-limit and security headers, one JSON access-log line on every response.

    It also turns an unexpected exception into the contract's 500 body (with the request id,
    never a stack trace), so the process keeps serving; an unreachable database that got this
    far is the 503 the error handlers give it. A client that hangs up before the end of its
    body is not our error: it is logged at INFO and answered 400.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(scope, receive, send)
        try:
            await self.app(scope, exchange.receive, exchange.send)
        except ClientDisconnect:  # a body read no route turned into its 400
            exchange.cut_short = True
            if not exchange.answered:
                await exchange.answer(error_response(body_ended()))
        except Exception as error:
            answer = db_outage.answer_to(error, db_outage.engine_of(scope.get("app")))
            if answer is None:
                exchange.log_unhandled()
                if not exchange.answered:
                    await exchange.answer(exchange.internal_error())
            else:
                if db_outage.is_unreachable(error):
                    db_outage.note(
                        error, "database unreachable; answered 503", request_id=exchange.request_id
                    )
                if not exchange.answered:
                    await exchange.answer(error_response(answer))
        finally:
            exchange.log_end()


class _Exchange:
    """One request as the envelope sees it: its id, the bytes of its body, its status."""

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.request_id = f"req_{random.getrandbits(80):020x}"  # an id for logs, not a secret
        self.scope = scope
        self.state: dict[str, Any] = scope.setdefault("state", {})
        self.state["request_id"] = self.request_id
        self._receive = receive
        self._send = send
        self.started = time.perf_counter()
        self.status = 0
        self.received = 0
        self.ended = False
        self.cut_short = False

    @property
    def answered(self) -> bool:
        return self.status != 0

    async def receive(self) -> Message:
        """The app's ``receive``, counting the body and noticing a hang-up before its end."""
        message = await self._receive()
        if not self.ended:
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                self.ended = not message.get("more_body", False)
            else:  # http.disconnect before the last byte of the body
                self.ended = self.cut_short = True
        return message

    async def send(self, message: Message) -> None:
        """The app's ``send``, adding the envelope's headers to the start of the answer."""
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers["X-Request-Id"] = self.request_id
            for name, value in self.state.get("rate_headers", {}).items():
                if name not in headers:
                    headers[name] = value
            for name, value in SECURITY_HEADERS:
                headers.setdefault(name, value)
            self.status = message["status"]
        await self._send(message)

    async def answer(self, response: JSONResponse) -> None:
        """Send ``response`` in place of the app, which sent nothing."""
        await response(self.scope, self._receive, self.send)

    def log_unhandled(self) -> None:
        """Log the exception being handled, with its traceback (for the log only)."""
        log(logging.ERROR, "unhandled error", request_id=self.request_id, path=self.scope["path"])
        logging.getLogger("fillpdf.service").exception("unhandled error %s", self.request_id)

    def internal_error(self) -> JSONResponse:
        """The contract's 500: the request id to quote, never a stack trace."""
        error = ApiError(
            "api_error",
            f"Something went wrong on our side; quote request id {self.request_id} "
            "if you report it.",
        )
        return JSONResponse(error.body(), status_code=500)

    def log_end(self) -> None:
        """The access-log line, after a note if the client hung up mid-body."""
        if self.cut_short:
            length = dict(self.scope.get("headers", [])).get(b"content-length", b"")
            log(
                logging.INFO,
                "client closed the connection before the end of the body",
                request_id=self.request_id,
                path=self.scope.get("path"),
                received=self.received,
                content_length=length.decode("latin-1") or None,
            )
        log(
            logging.INFO,
            "request",
            request_id=self.request_id,
            method=self.scope.get("method"),
            path=self.scope.get("path"),
            status=self.status,
            ms=round((time.perf_counter() - self.started) * 1000, 1),
            account=self.state.get("account_id"),
        )
