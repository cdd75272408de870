"""A real FillPDF service for tests: ``fillpdf serve`` in a subprocess on a free local port.

Tests talk to it over HTTP with httpx, exactly as users do. Keys are made with the service's
own key store on the same database. The server's clock can be moved forward by writing an
offset to its clock file, so month boundaries and 24-hour expiry are tested on a live process.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
from sqlalchemy import Table, func, select

from fillpdf_provider.service import keys, ratelimit
from fillpdf_provider.service.db import conversions, create_schema, make_engine, usage
from kits.flatkit import flat_form

START_TIMEOUT = 60.0
T = TypeVar("T")
#: How long a test waits for a line the server has still to write.
LOG_TIMEOUT = 30.0


def free_port() -> int:
    """A loopback port free now. It is let go before the server binds it, and on a busy
    machine another process can take it in between: ``start_on_free_port`` starts again."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PortTaken(RuntimeError):
    """The server exited at start because another process had taken its port."""


def raise_if_port_taken(what: str, log_text: str) -> None:
    if "address already in use" in log_text.lower():
        raise PortTaken(f"{what}: its port was taken before it could bind it")


def start_on_free_port(start: Callable[[int], T], attempts: int = 5) -> T:
    """``start(port)`` on a free port, and on another while the one tried was taken."""
    for attempt in range(1, attempts + 1):
        try:
            return start(free_port())
        except PortTaken:
            if attempt == attempts:
                raise
    raise AssertionError("not reached")


@dataclass
class Server:
    """One running service process (or several workers behind one port)."""

    base_url: str
    data_dir: Path
    database_url: str
    clock_file: Path
    log_file: Path
    process: subprocess.Popen[bytes]
    base_offset: float = 0.0
    """Seconds the server's clock runs past real time when not shifted."""
    _engine: object = field(default=None, repr=False)

    @property
    def db(self):
        if self._engine is None:
            self._engine = make_engine(self.database_url)
            create_schema(self._engine)
        return self._engine

    def create_key(
        self, plan: str = "developer", *, account: str | None = None, **limits: object
    ) -> str:
        """A new key (on a new account unless ``account`` is given); returns the whole key."""
        now = time.time()
        if account is None:
            account = keys.create_account(self.db, plan, now, enterprise=limits or None)
        return keys.create_key(self.db, account, now)[1]

    def account_of(self, key: str) -> str:
        caller = keys.authenticate(self.db, f"Bearer {key}")
        assert caller is not None
        return caller.account_id

    def client(self, key: str | None = None, **kwargs: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        kwargs.setdefault("timeout", 60)
        return httpx.Client(base_url=self.base_url, headers=headers, **kwargs)

    def convert_schema(self, key: str, schema: list[dict[str, Any]], pages: int = 1) -> str:
        """The id of a conversion of a flat form of ``pages`` built from ``schema``."""
        with self.client(key) as client:
            response = client.post(
                "/v1/convert",
                files={"file": ("f.pdf", flat_form(pages))},
                data={"schema": json.dumps(schema)},
            )
        assert response.status_code == 200, response.text
        return str(response.json()["conversion_id"])

    def async_client(self, key: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=120,
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=200),
        )

    def shift_clock(self, seconds: float) -> None:
        """Move the server's clock ``seconds`` past its base (0 puts it back): the base is
        real time, or mid-month once ``start_mid_month()`` has run."""
        temp = self.clock_file.with_suffix(".tmp")
        temp.write_text(repr(float(self.base_offset + seconds)))
        os.replace(temp, self.clock_file)

    def clock_offset(self) -> float:
        """How far the server's clock is set past real time, in seconds, base included."""
        return float(self.clock_file.read_text())

    def clock_shift(self) -> float:
        """How far the server's clock is now shifted past its base."""
        return self.clock_offset() - self.base_offset

    def now(self) -> float:
        """The server's clock, as it reads it."""
        return time.time() + self.clock_offset()

    def start_mid_month(self) -> None:
        """Put the server's base at noon on the 15th of next month (``mid_month_offset``), so
        a test's pages stay in one quota period whatever day and hour it runs."""
        self.base_offset = mid_month_offset()
        self.shift_clock(0)

    @contextlib.contextmanager
    def clock_shifted(self, seconds: float) -> Iterator[None]:
        """The server's clock ``seconds`` past its base, then back where it was."""
        before = self.clock_shift()
        self.shift_clock(seconds)
        try:
            yield
        finally:
            self.shift_clock(before)

    @contextlib.contextmanager
    def fresh_rate_window(self) -> Iterator[float]:
        """The server's clock 1 s into a rate-limit window (a fixed minute of its clock), and
        the shift that put it there: a test's requests all fall in one window however slowly
        they go, and ``clock_shifted(shift + 60)`` is the next window. Then back."""
        into_window = self.now() % ratelimit.WINDOW_S
        shift = self.clock_shift() + ratelimit.WINDOW_S - into_window + 1
        with self.clock_shifted(shift):
            yield shift

    def log_lines(self) -> list[str]:
        """The log's whole lines (a line still being written is left for the next read)."""
        text = self.log_file.read_text(encoding="utf-8", errors="replace")
        return text[: text.rfind("\n") + 1].splitlines()

    def log_entries(self, since: int = 0) -> list[dict[str, Any]]:
        """The JSON entries of the log from line ``since`` on (``len(log_lines())`` taken
        before an action marks where its entries start)."""
        return [json.loads(line) for line in self.log_lines()[since:] if line.startswith("{")]

    def wait_for_log(
        self,
        found: Callable[[list[dict[str, Any]]], bool],
        since: int = 0,
        *,
        what: str,
        timeout: float = LOG_TIMEOUT,
    ) -> list[dict[str, Any]]:
        """The entries from line ``since`` on, once ``found(entries)`` holds.

        The server writes a request's line after its answer has gone, and other lines from
        other tasks or processes, so a test that reads the log right after an answer waits
        for what it looks for, up to ``timeout`` seconds, and then fails saying ``what``.
        """
        deadline = time.monotonic() + timeout
        while True:
            entries = self.log_entries(since)
            if found(entries):
                return entries
            if time.monotonic() > deadline:
                tail = "\n".join(self.log_lines()[since:][-30:])
                raise AssertionError(f"no {what} in the log within {timeout:g} s:\n{tail}")
            time.sleep(0.05)

    def wait_for_requests(
        self,
        since: int = 0,
        *,
        count: int = 1,
        where: Callable[[dict[str, Any]], bool] | None = None,
        **fields: object,
    ) -> list[dict[str, Any]]:
        """The "request" lines (one per answered request) from line ``since`` on whose
        fields equal ``fields`` (and that ``where`` accepts), once ``count`` are written."""

        def requests(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [
                e
                for e in entries
                if e.get("message") == "request"
                and all(e.get(name) == value for name, value in fields.items())
                and (where is None or where(e))
            ]

        described = ", ".join(f"{name}={value!r}" for name, value in fields.items())
        entries = self.wait_for_log(
            lambda entries: len(requests(entries)) >= count,
            since,
            what=f"{count} request line(s) with {described or 'any fields'}",
        )
        return requests(entries)

    def own_requests(
        self, key: str | None = None, **kwargs: object
    ) -> tuple[httpx.Client, set[str]]:
        """A client as ``client()`` gives, and the set of the request ids it is answered
        with: a test tells its own requests apart from those of the code it watches."""
        ids: set[str] = set()

        def note(response: httpx.Response) -> None:
            ids.add(response.headers["x-request-id"])

        return self.client(key, event_hooks={"response": [note]}, **kwargs), ids

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        stop_process(self.process)
        if self._engine is not None:
            self._engine.dispose()  # type: ignore[attr-defined]


def mid_month_offset(now: float | None = None) -> float:
    """Seconds from ``now`` to noon UTC on the 15th of next month.

    Quota periods are calendar months: a server whose clock is set this far ahead has no
    month boundary within two weeks, so a test's pages stay in one period whatever day and
    hour the suite runs.
    """
    moment = dt.datetime.fromtimestamp(time.time() if now is None else now, dt.UTC)
    next_month = (moment.replace(day=28) + dt.timedelta(days=4)).replace(
        day=15, hour=12, minute=0, second=0, microsecond=0
    )
    return next_month.timestamp() - moment.timestamp()


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as an operator stops a server; SIGKILL if it is not gone in 20 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def start_server(
    data_dir: Path,
    database_url: str | None = None,
    *,
    workers: int = 1,
    env: dict[str, str] | None = None,
) -> Server:
    """Start ``fillpdf serve`` and wait until it answers."""
    data_dir.mkdir(parents=True, exist_ok=True)
    url = database_url or f"sqlite:///{data_dir / 'fillpdf.db'}"
    return start_on_free_port(lambda port: _serve_on(port, data_dir, url, workers, env))


def _serve_on(
    port: int, data_dir: Path, url: str, workers: int, env: dict[str, str] | None
) -> Server:
    clock_file = data_dir / "clock-offset"
    clock_file.write_text("0")
    log_file = data_dir / "server.log"
    environment = {
        **os.environ,
        "FILLPDF_CLOCK_FILE": str(clock_file),
        "FILLPDF_SWEEP_INTERVAL": "0.5",
        **(env or {}),
    }
    command = [
        sys.executable, "-m", "fillpdf_provider.cli", "serve",
        "--host", "127.0.0.1", "--port", str(port),
        "--data-dir", str(data_dir), "--database-url", url,
        "--workers", str(workers),
    ]  # fmt: skip
    with log_file.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
    server = Server(f"http://127.0.0.1:{port}", data_dir, url, clock_file, log_file, process)
    wait_until_answering(server, process, "/v1/openapi.json", "fillpdf serve")
    return server


def wait_until_answering(
    server: Any, process: subprocess.Popen[bytes], path: str, what: str
) -> None:
    """Wait until ``server`` (with ``base_url``, ``log_lines()`` and ``stop()``) answers 200
    on ``path``; if its process exits or the wait runs out, stop it and say why, with the end
    of its log."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = "\n".join(server.log_lines()[-30:])
            raise_if_port_taken(what, tail)
            raise RuntimeError(f"{what} exited with {process.returncode}:\n{tail}")
        try:
            if httpx.get(f"{server.base_url}{path}", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(
        f"{what} did not answer within {START_TIMEOUT:g} s:\n" + "\n".join(server.log_lines()[-30:])
    )


class DroppingProxy:
    """A TCP proxy to a server that drops the first ``drops`` answers on the floor.

    The request reaches the server and is processed (a conversion is made and billed); the
    client's connection is then closed before any byte of the answer reaches it, which is
    what a network failure at the worst moment looks like to a client.
    """

    def __init__(self, upstream: str, drops: int = 1) -> None:
        import threading

        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.drops = drops
        self.dropped = 0
        self.connections = 0
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import threading

        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                drop = self.dropped < self.drops
                if drop:
                    self.dropped += 1
            threading.Thread(target=self._handle, args=(client, drop), daemon=True).start()

    def _handle(self, client: socket.socket, drop: bool) -> None:
        import threading

        upstream = socket.create_connection(self.upstream)

        def pump(source: socket.socket, target: socket.socket | None) -> None:
            try:
                while chunk := source.recv(65536):
                    if target is None:  # the answer arrived: lose it and hang up
                        client.shutdown(socket.SHUT_RDWR)
                        client.close()
                        return
                    target.sendall(chunk)
            except OSError:
                pass
            finally:
                for sock in (source, target):
                    with contextlib.suppress(OSError):
                        if sock is not None:
                            sock.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        pump(upstream, None if drop else client)
        for sock in (client, upstream):
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        self._listener.close()


def count_rows(server: Server, table: Table) -> int:
    """The rows of ``table`` in the server's database."""
    with server.db.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar() or 0)


def pages_billed(server: Server) -> int:
    """The pages billed to every account, all months together."""
    with server.db.connect() as conn:
        return int(conn.execute(select(func.coalesce(func.sum(usage.c.pages_used), 0))).scalar())


def pages_of_conversions(server: Server) -> int:
    """The pages of the conversions that exist: what ``pages_billed`` must equal."""
    with server.db.connect() as conn:
        total = conn.execute(select(func.coalesce(func.sum(conversions.c.pages), 0))).scalar()
    return int(total)
