"""Request bodies that do not arrive: too slowly (408), or cut short by the client (400).

A client that sends its body a byte at a time ("slowloris") holds a connection, a parser and
a temporary file for as long as it likes. ``BodyDeadline`` gives every body a grace period
and then a minimum average rate, counted from the moment the app first waits for the body;
a body that falls behind, or a wait that would outlast what the rate allows, is answered
``408 request_timeout``. It only times the body: once the body is complete (or the answer
has started), ``receive`` is passed through untouched, so waiting for the client to hang up
after the body is never cut short.
"""

from __future__ import annotations

import asyncio
import logging
import time

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.logs import log

#: How long a body that is behind its rate may take to hand over what is already buffered.
_BUFFERED_WAIT_S = 0.05


class BodyTooSlow(ApiError):
    """The body fell below the minimum rate: 408, and the connection is closed."""

    def __init__(self, message: str) -> None:
        super().__init__("request_timeout", message, headers={"Connection": "close"})


def body_ended() -> ApiError:
    """The answer to a body that ended (the client hung up) before its Content-Length."""
    return ApiError(
        "invalid_request",
        "The request body ended before Content-Length bytes arrived: the client closed the "
        "connection mid-upload. Send the whole body again.",
    )


class _BodyClock:
    """The body of one request: bytes so far, and when the app began waiting for it."""

    def __init__(self, scope: Scope, receive: Receive, grace_s: float, min_rate: float) -> None:
        self.scope = scope
        self.receive = receive
        self.grace_s = grace_s
        self.min_rate = min_rate
        self.started: float | None = None
        self.received = 0
        self.done = False

    def _deadline(self) -> float:
        assert self.started is not None
        return self.started + max(self.grace_s, self.received / self.min_rate)

    async def next(self) -> Message:
        now = time.monotonic()
        if self.started is None:
            self.started = now
        left = self._deadline() - now
        behind = left <= 0
        try:
            async with asyncio.timeout(_BUFFERED_WAIT_S if behind else left):  # no new task
                message = await self.receive()
        except TimeoutError:
            raise self.too_slow() from None
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            self.done = not message.get("more_body", False)
        else:
            self.done = True
        if behind and not self.done and time.monotonic() >= self._deadline():
            raise self.too_slow()
        return message

    def too_slow(self) -> BodyTooSlow:
        assert self.started is not None
        elapsed = time.monotonic() - self.started
        self.done = True  # timed out once: whatever reads on (cleanup) is not timed again
        log(
            logging.INFO,
            "request body too slow",
            request_id=self.scope.get("state", {}).get("request_id"),
            path=self.scope.get("path"),
            received=self.received,
            seconds=round(elapsed, 1),
        )
        return BodyTooSlow(
            f"The request body arrived too slowly ({self.received:,} bytes in {elapsed:.1f} s); "
            f"after the first {self.grace_s:g} s a body must average at least "
            f"{self.min_rate / 1024:g} KiB/s. Send it again over a faster connection."
        )


class BodyDeadline:
    """ASGI middleware: a request body must keep ``min_rate`` bytes/s after ``grace_s``.

    ``min_rate`` 0 turns the rule off.
    """

    def __init__(self, app: ASGIApp, *, grace_s: float = 5.0, min_rate: float = 4096.0) -> None:
        self.app = app
        self.grace_s = grace_s
        self.min_rate = min_rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.min_rate <= 0:
            await self.app(scope, receive, send)
            return
        clock = _BodyClock(scope, receive, self.grace_s, self.min_rate)
        answering = False

        async def timed_receive() -> Message:
            if clock.done or answering:
                return await receive()
            return await clock.next()

        async def watched_send(message: Message) -> None:
            nonlocal answering
            if message["type"] == "http.response.start":
                answering = True
            await send(message)

        try:
            await self.app(scope, timed_receive, watched_send)
        except BodyTooSlow as error:  # raised where no exception handler answered it
            if answering:
                raise
            response = JSONResponse(error.body(), status_code=error.status, headers=error.headers)
            await response(scope, receive, watched_send)
