"""How ``fillpdf serve`` runs uvicorn: one place for its settings, and a header deadline.

uvicorn waits for a request's headers without limit, so a client that sends them a byte at
a time (slowloris), or connects and sends nothing, holds its connection for ever. The
protocol here gives every request ``FILLPDF_HEADER_TIMEOUT`` seconds (default 5) from its
first byte, or from the connection, to finish its headers; past that it answers 408 and
closes. The body has its own rule (``body_deadline``).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT_VARIABLE = "FILLPDF_HEADER_TIMEOUT"
DEFAULT_HEADER_TIMEOUT_S = 5.0
#: Seconds a timed-out connection is kept half-open so the client can read its 408.
LINGER_S = 2.0
_BODY = json.dumps(
    {
        "error": {
            "type": "request_timeout",
            "message": "The request headers arrived too slowly; send the whole request at once.",
            "param": None,
        }
    }
).encode()
_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"content-length: %d\r\nconnection: close\r\ncache-control: no-store\r\n"
    b"x-content-type-options: nosniff\r\n\r\n" % len(_BODY)
) + _BODY


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's HTTP protocol, with a deadline on each request's headers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = float(
            os.environ.get(HEADER_TIMEOUT_VARIABLE) or DEFAULT_HEADER_TIMEOUT_S
        )
        self._header_timer: asyncio.TimerHandle | None = None
        self._timed_out = False

    def _arm(self) -> None:
        self._disarm()
        if self._header_timeout > 0:
            self._header_timer = self.loop.call_later(self._header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        self._timed_out = True
        transport.write(_TIMED_OUT)
        # Close our side only, and drop what still arrives for a moment: closing at once
        # would answer the client's next bytes with a reset that can destroy the 408.
        if transport.can_write_eof():
            transport.write_eof()
            self.loop.call_later(LINGER_S, transport.close)
        else:
            transport.close()

    def data_received(self, data: bytes) -> None:
        if not self._timed_out:
            super().data_received(data)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a connection that sends nothing is closed too

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def uvicorn_options(
    *, host: str, port: int, workers: int, log_level: str, grace: float
) -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.run`` for the service (and for comparisons)."""
    from fillpdf_provider.service.logs import uvicorn_log_config

    return {
        "factory": True,
        "host": host,
        "port": port,
        "workers": workers,
        "http": HeaderDeadlineProtocol,
        "log_config": uvicorn_log_config(log_level),
        "access_log": False,
        "server_header": False,  # no software name and version to aim at
        "timeout_graceful_shutdown": grace,
    }


def bind_url(host: str, port: int) -> str:
    """``http://host:port`` of the address the server listens on; a wildcard address
    (0.0.0.0, ::) becomes this machine's name, since no client can reach the wildcard."""
    import socket

    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    elif ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    return f"http://{host}:{port}"
