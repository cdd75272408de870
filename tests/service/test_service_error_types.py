"""Every error type of ``fillpdf_provider.api_errors`` as the service really answers it: the
table's status with that type in the body, turned by the client into that type's class.

One ``fillpdf serve`` on SQLite, with one PDF child and no queue (so a second conversion is
503 at once) and a half-second body grace (so a stalled body is 408 quickly). A bug (500) and
an unexpected engine failure (502) can't be caused from outside, by design: those two are
raised by a route added to an in-process app, and answered by the same handlers and
middleware as every other error.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import select

from fillpdf_provider.api_errors import ERROR_TYPES
from fillpdf_provider.client import ERRORS, FillPdfClient, RetryPolicy
from fillpdf_provider.service import Settings, create_app
from fillpdf_provider.service.db import reservations
from fillpdf_provider.service.errors import ApiError, engine_error
from fillpdf_provider.service.isolation import EngineFailure
from kits.servicekit import Server, flat_form, start_server

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx`")  # starlette's TestClient
DAY = 24 * 3600
Answer = tuple[int, dict[str, str], bytes]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    started = start_server(
        tmp_path_factory.mktemp("error-types"),
        env={"FILLPDF_MAX_CHILDREN": "1", "FILLPDF_MAX_QUEUE": "0", "FILLPDF_BODY_GRACE": "0.5"},
    )
    yield started
    started.stop()


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    return server.create_key("enterprise")


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory):
    """The app without a server or PDF children, with two routes that fail as only a bug can."""
    from fastapi.testclient import TestClient

    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("error-types-app")))

    @app.get("/v1/test-bug")
    async def bug() -> None:
        raise RuntimeError("a bug")

    @app.get("/v1/test-engine-failure")
    async def engine_failure() -> None:
        raise engine_error(EngineFailure("engine_error", "The engine failed on this PDF."), "file")

    return TestClient(app, raise_server_exceptions=False)


# --------------------------------------------------------------------------- provocations


def _convert(client: httpx.Client, pdf: bytes) -> httpx.Response:
    return client.post("/v1/convert", files={"file": ("f.pdf", pdf)})


def _stalled_body(server: Server, key: str) -> Answer:
    """A fill whose body stops after a few bytes of its Content-Length."""
    parts = urlsplit(server.base_url)
    head = (
        f"POST /v1/fill HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
    ).encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=15) as sock:
        sock.sendall(head)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    answer, body = data.split(b"\r\n\r\n", 1)
    lines = answer.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def _busy(server: Server, key: str) -> httpx.Response:
    """A conversion sent while another holds the only child, with no queue in front of it.

    Pages are reserved once the child has counted them, so a reservation means the child is
    busy; a long conversion keeps it so while the second arrives.
    """
    account = server.account_of(key)
    held = threading.Thread(target=_convert_with, args=(server, key, flat_form(250)))
    held.start()
    try:
        deadline = time.monotonic() + 60
        while not _reserved(server, account):
            assert held.is_alive(), "the long conversion ended before it was seen converting"
            assert time.monotonic() < deadline, "the long conversion never started"
            time.sleep(0.02)
        with server.client(key) as client:
            return _convert(client, flat_form(1))
    finally:
        held.join(120)


def _convert_with(server: Server, key: str, pdf: bytes) -> None:
    with server.client(key, timeout=120) as client:
        _convert(client, pdf)


def _reserved(server: Server, account: str) -> bool:
    with server.db.connect() as conn:
        query = select(reservations.c.account_id).where(reservations.c.account_id == account)
        return conn.execute(query).first() is not None


def _expired(server: Server, key: str) -> httpx.Response:
    with server.client(key) as client:
        conversion_id = _convert(client, flat_form(1)).json()["conversion_id"]
        with server.clock_shifted(DAY + 1):
            return client.get(f"/v1/conversions/{conversion_id}")


def _over_quota(server: Server) -> httpx.Response:
    key = server.create_key("enterprise", pages_included=1, hard_stop=True)
    with server.client(key) as client:
        return _convert(client, flat_form(2))


def _rate_limited(server: Server) -> httpx.Response:
    key = server.create_key("enterprise", rate_limit_per_minute=1)
    with server.fresh_rate_window(), server.client(key) as client:
        client.get("/v1/account")
        return client.get("/v1/account")


def _as(server: Server, key: str | None, method: str, path: str, **kwargs: object) -> object:
    with server.client(key) as client:
        return client.request(method, path, **kwargs)


def _provocations(server: Server, key: str, in_process) -> dict[str, Callable[[], object]]:
    """How to make the service answer each error type."""
    too_large = {"content": b" " * (26 * 1024 * 1024), "headers": {"Content-Type": "x/y"}}
    return {
        "invalid_request": lambda: _as(server, key, "POST", "/v1/fill", json={"values": {}}),
        "authentication_error": lambda: _as(server, None, "GET", "/v1/account"),
        "quota_exceeded": lambda: _over_quota(server),
        "forbidden": lambda: _as(server, None, "GET", "/v1/files/conv_x.pdf?expires=1&signature=x"),
        "not_found": lambda: _as(server, key, "GET", "/v1/conversions/conv_0000000000000000"),
        "method_not_allowed": lambda: _as(server, key, "DELETE", "/v1/account"),
        "request_timeout": lambda: _stalled_body(server, key),
        "expired": lambda: _expired(server, key),
        "payload_too_large": lambda: _as(server, key, "POST", "/v1/fill", **too_large),
        "unsupported_file": lambda: _as(
            server, key, "POST", "/v1/convert", files={"file": ("f.pdf", b"not a PDF at all")}
        ),
        "rate_limit_error": lambda: _rate_limited(server),
        "api_error": lambda: in_process.get("/v1/test-bug"),
        "engine_error": lambda: in_process.get("/v1/test-engine-failure"),
        "service_unavailable": lambda: _busy(server, key),
    }


def _answer(answered: Any) -> Answer:
    """A tuple as it is, or a response's parts: httpx's, or httpx2's from Starlette's
    TestClient, which takes httpx2 where it is installed (the [lineage] extra brings it)."""
    if isinstance(answered, tuple):
        return answered
    return answered.status_code, dict(answered.headers), answered.content


# --------------------------------------------------------------------------- the tests


def test_every_type_of_the_table_is_provoked(server: Server, key: str, in_process) -> None:
    assert set(_provocations(server, key, in_process)) == set(ERROR_TYPES)


@pytest.mark.parametrize("error_type", list(ERROR_TYPES))
def test_the_service_answers_the_tables_status_with_the_type(
    server: Server, key: str, in_process, error_type: str
) -> None:
    status, headers, body = _answer(_provocations(server, key, in_process)[error_type]())
    assert (status, json.loads(body)["error"]["type"]) == (
        ERROR_TYPES[error_type].status,
        error_type,
    ), body[:300]
    # The same answer, given to the client: it raises the class of that type.
    transport = httpx.MockTransport(lambda _: httpx.Response(status, headers=headers, content=body))
    client = FillPdfClient(
        "http://test", "k", retry=RetryPolicy(max_retries=0), transport=transport
    )
    with client, pytest.raises(ERRORS[error_type]) as caught:
        client.get_account()
    assert caught.value.status == status and caught.value.http_status == status


def test_an_api_error_takes_its_status_from_the_table() -> None:
    for error_type, entry in ERROR_TYPES.items():
        assert ApiError(error_type, "A test.").status == entry.status
    with pytest.raises(KeyError):
        ApiError("no_such_type", "A test.")
