"""An unreachable database is answered 503 ``service_unavailable`` with ``Retry-After``, in
the contract's shape, wherever its error is raised; any other database error stays a 500.

In process, without a server: routes added to the app reach a PostgreSQL address nobody
listens on (a real refused connection), or raise a driver's error as it escapes.
"""

from __future__ import annotations

import socket
import time

import psycopg
import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import text

from fillpdf_provider.service import Settings, db_outage
from fillpdf_provider.service.app import create_app
from fillpdf_provider.service.db import make_engine

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx`")  # starlette's TestClient


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    from fastapi.testclient import TestClient

    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("db-outage")))
    nowhere = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/x")

    @app.get("/v1/test-refused")
    async def refused() -> None:
        with nowhere.connect() as conn:  # refused: PostgreSQL is down
            conn.execute(text("SELECT 1"))

    @app.get("/v1/test-driver")
    async def driver() -> None:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    @app.get("/v1/test-pool")
    async def pool() -> None:
        raise sa_exc.TimeoutError("QueuePool limit of size 10 overflow 20 reached")

    @app.get("/v1/test-integrity")
    async def integrity() -> None:
        raise sa_exc.IntegrityError("INSERT ...", {}, Exception("duplicate key"))

    yield TestClient(app, raise_server_exceptions=False)
    nowhere.dispose()


@pytest.mark.parametrize("path", ["/v1/test-refused", "/v1/test-driver", "/v1/test-pool"])
def test_an_unreachable_database_is_a_503_with_retry_after(client, path: str) -> None:
    started = time.monotonic()
    response = client.get(path)
    assert time.monotonic() - started < 10
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == str(db_outage.RETRY_AFTER_S)
    error = response.json()["error"]
    assert error["type"] == "service_unavailable"
    assert "database is unreachable" in error["message"] and "again" in error["message"]
    assert "Traceback" not in response.text and "psycopg" not in response.text
    assert response.headers["x-request-id"].startswith("req_")


def test_another_database_error_is_still_a_bug(client) -> None:
    response = client.get("/v1/test-integrity")
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "api_error"


def test_which_errors_count_as_unreachable() -> None:
    assert db_outage.is_unreachable(sa_exc.OperationalError("SELECT 1", {}, Exception("gone")))
    assert db_outage.is_unreachable(psycopg.InterfaceError("the connection is closed"))
    invalidated = sa_exc.DBAPIError("SELECT 1", {}, Exception("reset"), connection_invalidated=True)
    assert db_outage.is_unreachable(invalidated)
    assert not db_outage.is_unreachable(sa_exc.DBAPIError("SELECT 1", {}, Exception("bad")))
    assert not db_outage.is_unreachable(RuntimeError("a bug"))
