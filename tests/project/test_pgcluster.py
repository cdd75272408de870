"""The private PostgreSQL cluster that service tests run against: it starts, serves, goes away."""

from __future__ import annotations

import os
import socket
import time

import pytest
from sqlalchemy import create_engine, text

from kits.pgcluster import PgCluster, find_pg_bin

# Starting takes about a second here; the bound leaves room for a slow CI machine, not for a hang.


def _require_pg_bin() -> None:
    if find_pg_bin() is not None:
        return
    message = "no PostgreSQL server binaries (initdb, pg_ctl, postgres) on this machine"
    if os.environ.get("FILLPDF_REQUIRE_POSTGRES") == "1":
        pytest.fail(
            f"{message}, and FILLPDF_REQUIRE_POSTGRES=1: install Debian's postgresql package "
            "(apt-get install --no-install-recommends postgresql)"
        )
    pytest.skip(message)


def _accepts_connections(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_cluster_serves_upsert_and_disappears() -> None:
    _require_pg_bin()
    started = time.monotonic()
    with PgCluster() as cluster:
        start_seconds = time.monotonic() - started
        print(f"PgCluster started in {start_seconds:.2f} s on port {cluster.port}")
        assert cluster.url == (
            f"postgresql+psycopg://{cluster.user}@127.0.0.1:{cluster.port}/{cluster.dbname}"
        )
        root = cluster.root
        assert root is not None and root.is_dir()

        engine = create_engine(cluster.url)
        try:
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE counters (name text PRIMARY KEY, n integer)"))
                upsert = text(
                    "INSERT INTO counters (name, n) VALUES (:name, 1) "
                    "ON CONFLICT (name) DO UPDATE SET n = counters.n + 1 RETURNING n"
                )
                assert conn.execute(upsert, {"name": "forms"}).scalar_one() == 1
                assert conn.execute(upsert, {"name": "forms"}).scalar_one() == 2
            with engine.connect() as conn:
                assert conn.execute(text("SELECT current_database()")).scalar_one() == (
                    cluster.dbname
                )
        finally:
            engine.dispose()
        port = cluster.port
        assert _accepts_connections(port)

    assert not _accepts_connections(port)
    assert not root.exists()
