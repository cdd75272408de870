"""The service killed mid-work: nothing billed without a conversion, nothing left behind.

Each test starts its own ``fillpdf serve`` on SQLite and on PostgreSQL, puts conversions in
flight (their pages reserved, their children converting), then kills the server with
SIGKILL or stops it with SIGTERM, and checks what a user and an operator would: no process
of the server's tree survives, and after a restart the pages billed equal the pages of the
conversions that exist, no file lies in the data dir without a conversion, and a retry with
the same Idempotency-Key is answered at once.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from sqlalchemy import select

from fillpdf_provider.service.db import conversions, idempotency, reservations
from kits.servicekit import (
    Server,
    count_rows,
    flat_form,
    pages_billed,
    pages_of_conversions,
    start_server,
)

pytestmark = pytest.mark.system

_databases = itertools.count(1)
PAGES = 250  # about 3 s a conversion: still running when the signal lands
IN_FLIGHT = 3
GONE_WITHIN_S = 30.0  # a guard: children die on their own parent's death, far sooner


@pytest.fixture(scope="module")
def big_form() -> bytes:
    return flat_form(PAGES)


def _tree(server: Server) -> list[psutil.Process]:
    root = psutil.Process(server.process.pid)
    return [root, *root.children(recursive=True)]


def _running(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


def _wait_gone(processes: list[psutil.Process]) -> list[psutil.Process]:
    deadline = time.monotonic() + GONE_WITHIN_S
    while _running(processes) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _running(processes)


def _stray_files(server: Server) -> list[str]:
    with server.db.connect() as conn:
        recorded = {row.id for row in conn.execute(select(conversions.c.id))}
    files = [p.name for p in (server.data_dir / "files").iterdir()]
    stray = [name for name in files if name.removesuffix(".pdf") not in recorded]
    return stray + [p.name for p in (server.data_dir / "uploads").iterdir()]


class _InFlight:
    """Conversions sent from threads, each with its own Idempotency-Key."""

    def __init__(self, server: Server, key: str, pdf: bytes, count: int) -> None:
        self.server = server
        self.key = key
        self.pdf = pdf
        self.idempotency_keys = [f"fault-{time.monotonic_ns()}-{i}" for i in range(count)]
        self.statuses: list[int | str] = []
        self._threads = [
            threading.Thread(target=self._send, args=(k,), daemon=True)
            for k in self.idempotency_keys
        ]

    def _send(self, idempotency_key: str) -> None:
        try:
            with self.server.client(self.key, timeout=120) as client:
                response = client.post(
                    "/v1/convert",
                    files={"file": ("big.pdf", self.pdf)},
                    headers={"Idempotency-Key": idempotency_key},
                )
            self.statuses.append(response.status_code)
        except httpx.TransportError as exc:
            self.statuses.append(type(exc).__name__)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self, timeout: float) -> None:
        for thread in self._threads:
            thread.join(timeout)

    def retry(self, server: Server, idempotency_key: str) -> httpx.Response:
        with server.client(self.key, timeout=60) as client:
            return client.post(
                "/v1/convert",
                files={"file": ("big.pdf", self.pdf)},
                headers={"Idempotency-Key": idempotency_key},
            )


def _wait_until_converting(server: Server, count: int) -> None:
    """Until ``count`` conversions hold reserved pages (their children are converting)."""
    deadline = time.monotonic() + 60
    while count_rows(server, reservations) < count:
        assert time.monotonic() < deadline, "\n".join(server.log_lines()[-20:])
        assert server.alive(), "\n".join(server.log_lines()[-20:])
        time.sleep(0.05)


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "data"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, data_dir: Path) -> str:
    """A database of the test's own: the counts below are absolute."""
    if request.param == "sqlite":
        return f"sqlite:///{data_dir.parent / 'fillpdf.db'}"
    cluster = request.getfixturevalue("pg_cluster")
    return cluster.new_database(f"faults_{next(_databases)}")


@pytest.mark.parametrize("workers", [1, 2])
def test_kill_9_mid_conversion_bills_nothing_and_leaves_nothing(
    database_url: str, data_dir: Path, big_form: bytes, workers: int
) -> None:
    server = start_server(data_dir, database_url, workers=workers)
    restarted: Server | None = None
    try:
        key = server.create_key("scale")
        with server.client(key, timeout=120) as client:  # one finished conversion beforehand
            assert client.post("/v1/convert", files={"file": ("f.pdf", flat_form(2))}).is_success
        flight = _InFlight(server, key, big_form, IN_FLIGHT)
        flight.start()
        _wait_until_converting(server, 2)
        tree = _tree(server)
        assert len(tree) >= 3, "the server should have a fork server and children"
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
        survivors = _wait_gone(tree)
        assert not survivors, f"alive {GONE_WITHIN_S} s after kill -9: {survivors}"
        flight.join(30)
        assert count_rows(server, reservations) >= 1  # the dead server left pages reserved

        restarted = start_server(data_dir, database_url, workers=workers)
        # With two workers the first can answer while the other is still recovering
        recovered = "recovered after a server stopped mid-work"
        restarted.wait_for_log(
            lambda entries: any(e.get("message") == recovered for e in entries), what=recovered
        )
        assert count_rows(restarted, reservations) == 0
        assert pages_billed(restarted) == pages_of_conversions(restarted) == 2
        assert _stray_files(restarted) == []
        with restarted.db.connect() as conn:
            claims = conn.execute(select(idempotency).where(idempotency.c.done.is_(False))).all()
        assert claims == []

        # No claim is left (above), so the retry is served at once, not after the first
        # attempt's claim would have expired.
        retried = flight.retry(restarted, flight.idempotency_keys[0])
        assert retried.status_code == 200, (retried.text, restarted.log_lines()[-30:])
        assert retried.headers.get("Idempotent-Replayed") != "true"
        assert pages_billed(restarted) == pages_of_conversions(restarted) == 2 + PAGES
        again = flight.retry(restarted, flight.idempotency_keys[0])
        assert again.headers.get("Idempotent-Replayed") == "true"
        assert pages_billed(restarted) == 2 + PAGES
    finally:
        for running in (server, restarted):
            if running is not None:
                running.stop()


def test_sigterm_drains_requests_in_progress_and_stops_every_child(
    database_url: str, data_dir: Path, big_form: bytes
) -> None:
    server = start_server(data_dir, database_url)
    restarted: Server | None = None
    try:
        key = server.create_key("scale")
        flight = _InFlight(server, key, big_form, 2)
        flight.start()
        _wait_until_converting(server, 2)
        tree = _tree(server)
        server.process.send_signal(signal.SIGTERM)
        flight.join(60)
        assert flight.statuses == [200, 200], server.log_lines()[-20:]
        assert server.process.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises it
        assert not _wait_gone(tree)
        assert count_rows(server, reservations) == 0
        assert pages_billed(server) == pages_of_conversions(server) == 2 * PAGES
        assert _stray_files(server) == []

        restarted = start_server(data_dir, database_url)
        assert pages_billed(restarted) == 2 * PAGES
        assert not any("recovered after" in line for line in restarted.log_lines())
    finally:
        for running in (server, restarted):
            if running is not None:
                running.stop()


def test_sigterm_past_the_grace_period_gives_the_pages_back(
    database_url: str, data_dir: Path, big_form: bytes
) -> None:
    """A conversion still running when the grace period ends is stopped and not billed."""
    server = start_server(data_dir, database_url, env={"FILLPDF_SHUTDOWN_GRACE": "0.5"})
    try:
        key = server.create_key("scale")
        flight = _InFlight(server, key, big_form, 2)
        flight.start()
        _wait_until_converting(server, 2)
        tree = _tree(server)
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(30)
        assert not _wait_gone(tree)
        flight.join(30)
        assert count_rows(server, reservations) == 0
        assert pages_billed(server) == pages_of_conversions(server)
        assert _stray_files(server) == []
    finally:
        server.stop()


def test_a_client_that_hangs_up_stops_its_conversion(
    database_url: str, data_dir: Path, big_form: bytes
) -> None:
    """The child is killed when the client goes, and its pages are given back at once."""
    server = start_server(data_dir, database_url)
    try:
        key = server.create_key("scale")
        body, boundary = _multipart(big_form)
        idle = {p.pid for p in _tree(server)}
        with socket.create_connection(("127.0.0.1", int(server.base_url.rsplit(":", 1)[1]))) as s:
            s.sendall(
                b"POST /v1/convert HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {key}\r\n".encode()
                + f"Content-Type: multipart/form-data; boundary={boundary}\r\n".encode()
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            _wait_until_converting(server, 1)
            converting = [p for p in _tree(server) if p.pid not in idle]
            assert converting, "the conversion should run in a child of its own"
        hung_up = time.monotonic()
        while count_rows(server, reservations) and time.monotonic() - hung_up < GONE_WITHIN_S:
            time.sleep(0.05)
        assert count_rows(server, reservations) == 0
        assert not _wait_gone(converting)
        assert pages_billed(server) == pages_of_conversions(server) == 0
        noted = "client hung up; its work was stopped"  # logged as the request unwinds
        server.wait_for_log(lambda entries: any(e["message"] == noted for e in entries),
                            what=noted)  # fmt: skip
        with server.client(key) as client:  # and the server goes on serving
            assert client.get("/v1/account").json()["pages_used"] == 0
    finally:
        server.stop()


def _multipart(pdf: bytes) -> tuple[bytes, str]:
    boundary = "fillpdfboundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.pdf"\r\n'
            "Content-Type: application/pdf\r\n\r\n"
        ).encode()
        + pdf
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, boundary


# --------------------------------------------------------------------------- kill -9 under load

KILLS = 10
#: Pages of the conversion each kill lands in: long enough to be converting when it does.
KILL_PAGES = 60
#: Seconds after kill -9 by which no process of the server's tree may be left, busy machine
#: or not: the children die with the service by construction, not when they notice.
GONE_UNDER_LOAD_S = 5.0


@contextlib.contextmanager
def cpu_hogs() -> Iterator[None]:
    """A busy loop on every core, as on a loaded machine where timing races go wrong."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 2)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def test_kill_9_under_load_leaves_no_process_of_the_server_behind(
    tmp_path: Path, pg_cluster: Any
) -> None:
    """Ten times on SQLite and PostgreSQL, with 1 and 2 workers: a conversion in flight,
    every core busy, kill -9; 5 s later nothing of the server's tree runs (fork server,
    resource tracker, children). Then a restart converts again with no other conversion
    running beside it. The four run side by side, so the machine is busy for less long."""
    form = flat_form(KILL_PAGES)
    lanes = [
        (f"sqlite:///{tmp_path / 'sqlite-1.db'}", 1),
        (f"sqlite:///{tmp_path / 'sqlite-2.db'}", 2),
        (pg_cluster.new_database(f"kills_{next(_databases)}"), 1),
        (pg_cluster.new_database(f"kills_{next(_databases)}"), 2),
    ]
    with cpu_hogs(), ThreadPoolExecutor(len(lanes)) as pool:
        runs = [
            pool.submit(_kill_again_and_again, tmp_path / f"lane-{n}", url, workers, form)
            for n, (url, workers) in enumerate(lanes)
        ]
        failures = [str(run.exception()) for run in runs if run.exception() is not None]
    assert not failures, "\n".join(failures)


def _kill_again_and_again(data_dir: Path, database_url: str, workers: int, form: bytes) -> None:
    """``KILLS`` kills of a converting server on one database, then a restart that converts."""
    where = f"{database_url.split(':')[0]}, {workers} worker(s)"
    key = None
    killed: list[psutil.Process] = []
    for attempt in range(KILLS):
        server = start_server(data_dir, database_url, workers=workers)
        try:
            key = key or server.create_key("scale")
            flight = _InFlight(server, key, form, 1)
            flight.start()
            _wait_until_converting(server, 1)
            tree = _tree(server)
            killed.extend(tree)
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(10)
            deadline = time.monotonic() + GONE_UNDER_LOAD_S
            while _running(tree) and time.monotonic() < deadline:
                time.sleep(0.05)
            survivors = [f"{p.pid} {p.cmdline()[:3]}" for p in _running(tree)]
            assert not survivors, f"{where}, kill {attempt + 1}: alive 5 s later: {survivors}"
            flight.join(30)
        finally:
            server.stop()
    restarted = start_server(data_dir, database_url, workers=workers)
    try:
        assert key is not None
        with restarted.client(key, timeout=120) as client:
            done = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(2))})
        assert done.status_code == 200, f"{where}: {done.text}"
        assert not _running(killed), where  # nothing of a killed server converts beside it
    finally:
        restarted.stop()
