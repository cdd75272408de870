"""A real FillPDF service for tests: ``fillpdf serve`` in a subprocess on a free local port.

Tests talk to it over HTTP with httpx, exactly as users do. Keys are made with the service's
own key store on the same database. The server's clock can be moved forward by writing an
offset to its clock file, so month boundaries and 24-hour expiry are tested on a live process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from fillpdf_provider.service import keys
from fillpdf_provider.service.db import create_schema, make_engine
from kits.flatkit import flat_form  # noqa: F401 - re-exported: the service tests build forms with it

START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """One running service process (or several workers behind one port)."""

    base_url: str
    data_dir: Path
    database_url: str
    clock_file: Path
    log_file: Path
    process: subprocess.Popen[bytes]
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

    def async_client(self, key: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=120,
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=200),
        )

    def shift_clock(self, seconds: float) -> None:
        """Move the server's clock ``seconds`` past real time (0 puts it back)."""
        temp = self.clock_file.with_suffix(".tmp")
        temp.write_text(repr(float(seconds)))
        os.replace(temp, self.clock_file)

    @contextlib.contextmanager
    def clock_shifted(self, seconds: float) -> Iterator[None]:
        self.shift_clock(seconds)
        try:
            yield
        finally:
            self.shift_clock(0)

    def log_lines(self) -> list[str]:
        return self.log_file.read_text(encoding="utf-8", errors="replace").splitlines()

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        stop_process(self.process)
        if self._engine is not None:
            self._engine.dispose()  # type: ignore[attr-defined]


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
    port = free_port()
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
            raise RuntimeError(
                f"{what} exited with {process.returncode}:\n" + "\n".join(server.log_lines()[-30:])
            )
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
