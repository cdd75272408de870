"""A throwaway PostgreSQL server for tests, started from the machine's own server binaries.

The service takes any SQLAlchemy URL, and SQLite hides things PostgreSQL is strict about
(types, ON CONFLICT, transactions, concurrent writers), so tests need a real server. Docker and
network services are not available here, so we `initdb` a private cluster in a temp dir, start
it on a free loopback port and delete it afterwards: nothing touches a system-wide cluster.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
START_TIMEOUT = 30.0
# initdb and postgres refuse to run as root; Debian's postgresql package creates this user.
SERVER_USER = "postgres"


def _has_server_binaries(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in SERVER_BINARIES)


def _version_key(bindir: Path) -> tuple[int, ...]:
    """Order /usr/lib/postgresql/<version>/bin numerically, so 15 beats 9.6."""
    return tuple(int(part) for part in re.findall(r"\d+", bindir.parent.name)) or (0,)


def find_pg_bin() -> Path | None:
    """The newest directory holding initdb, pg_ctl and postgres, or None if the server is absent.

    Debian keeps the server binaries off PATH, in /usr/lib/postgresql/<version>/bin. pg_config
    alone is no proof: libpq-dev ships it without any server.
    """
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    for bindir in candidates:
        if _has_server_binaries(bindir):
            return bindir
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()
            if out and _has_server_binaries(Path(out)):
                return Path(out)
    return None


def _free_port() -> int:
    """A loopback port free right now; another process may still take it before we bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgClusterError(RuntimeError):
    """The private cluster could not be created or started."""


class PgCluster:
    """A private PostgreSQL cluster in a temp dir, for the lifetime of a `with` block.

    It listens on 127.0.0.1 only (plus a unix socket inside the temp dir), trusts every local
    connection and runs with fsync off: fast and disposable, never for real data. `.url` is a
    SQLAlchemy URL for the psycopg 3 driver.
    """

    def __init__(
        self,
        dbname: str = "fillpdf_test",
        user: str = "postgres",
        bindir: Path | None = None,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.dbname = dbname
        self.user = user
        self.bindir = bindir or find_pg_bin()
        self.start_timeout = start_timeout
        self.port = 0
        self.root: Path | None = None
        self._started = False

    # -- paths ---------------------------------------------------------------------------------

    @property
    def datadir(self) -> Path:
        return self._root / "data"

    @property
    def socket_dir(self) -> Path:
        return self._root / "sock"

    @property
    def logfile(self) -> Path:
        return self._root / "server.log"

    @property
    def _root(self) -> Path:
        if self.root is None:
            raise PgClusterError("the cluster is not set up: use it as a context manager")
        return self.root

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{self.dbname}"

    # -- running the server binaries -----------------------------------------------------------

    def _command(self, args: Sequence[str]) -> list[str]:
        """Wrap a server command so it runs as the postgres user when we are root."""
        if os.geteuid() != 0:
            return list(args)
        if shutil.which("runuser"):
            return ["runuser", "-u", SERVER_USER, "--", *args]
        return ["su", SERVER_USER, "-s", "/bin/sh", "-c", shlex.join(args)]

    def _run(self, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        # A clean environment: a stray PGDATA/PGPORT or an uninstalled locale must not leak in,
        # and the cwd must be one the postgres user can enter (root's is often not).
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C")
        return subprocess.run(
            self._command(args),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self._root,
            env=env,
            check=False,
        )

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = self.logfile.read_text(errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty server log)"

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> PgCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """initdb, start on a free port, create the database; raise PgClusterError on failure."""
        if self.bindir is None:
            raise PgClusterError(
                "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found; "
                "install Debian's postgresql package"
            )
        self.root = Path(tempfile.mkdtemp(prefix="fillpdf-pg-"))
        self.socket_dir.mkdir()
        if os.geteuid() == 0:
            self._hand_root_to_server_user()
        self._initdb()
        self._start_server()
        self._create_database()

    def _hand_root_to_server_user(self) -> None:
        try:
            entry = pwd.getpwnam(SERVER_USER)
        except KeyError:
            raise PgClusterError(
                f"running as root, and initdb refuses root, but there is no {SERVER_USER!r} "
                "user to run it as; install Debian's postgresql package, which creates it"
            ) from None
        for path in (self._root, self.socket_dir):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        # The temp dir's parents must let the server user through (e.g. TMPDIR under /root).
        probe = self._run(["test", "-w", str(self._root), "-a", "-x", str(self._root)], 10)
        if probe.returncode != 0:
            raise PgClusterError(
                f"the {SERVER_USER} user cannot use {self._root}; "
                "point TMPDIR at a directory it can reach, such as /tmp"
            )

    def _initdb(self) -> None:
        assert self.bindir is not None
        args = [
            str(self.bindir / "initdb"),
            "-D", str(self.datadir),
            "-U", self.user,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ]  # fmt: skip
        result = self._run(args, timeout=120)
        if result.returncode != 0:
            raise PgClusterError(f"initdb failed:\n{result.stdout}\n{result.stderr}")
        # Settings go into the config file rather than pg_ctl -o, which would need shell quoting.
        # With --auth=trust initdb already trusts the local socket and loopback TCP.
        with (self.datadir / "postgresql.conf").open("a") as conf:
            conf.write(
                "\n# fillpdf test cluster\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "fsync = off\n"
                "synchronous_commit = off\n"
                "full_page_writes = off\n"
            )

    def _start_server(self) -> None:
        assert self.bindir is not None
        deadline = time.monotonic() + self.start_timeout
        last_error = ""
        for _attempt in range(3):  # the free port can be taken by someone else before we bind it
            remaining = deadline - time.monotonic()
            if remaining <= 1:
                break
            self.port = _free_port()
            args = [
                str(self.bindir / "pg_ctl"),
                "-D", str(self.datadir),
                "-l", str(self.logfile),
                "-o", f"-p {self.port}",
                "-w", "-t", str(max(1, int(remaining))),
                "start",
            ]  # fmt: skip
            try:
                result = self._run(args, timeout=remaining + 5)
            except subprocess.TimeoutExpired:
                last_error = f"pg_ctl start did not return within {self.start_timeout:.0f} s"
                break
            if result.returncode == 0:
                self._started = True
                return
            last_error = f"{result.stdout}\n{result.stderr}".strip()
            if "could not bind" not in self._log_tail():
                break
        raise PgClusterError(
            f"PostgreSQL did not start (port {self.port}, timeout {self.start_timeout:.0f} s): "
            f"{last_error}\n--- server log tail ({self.logfile}) ---\n{self._log_tail()}"
        )

    def _create_database(self) -> None:
        import psycopg  # the runtime driver; imported late so find_pg_bin() works without it
        from psycopg import sql

        conninfo = f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres"
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.dbname)))

    def new_database(self, name: str) -> str:
        """Create one more database on this cluster and return its SQLAlchemy URL."""
        import psycopg
        from psycopg import sql

        conninfo = f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres"
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{name}"

    def pause(self) -> None:
        """Stop the server as an operator's restart does (a fast shutdown: open sessions are
        cut), keeping its data dir and port, so a test sees what clients see while their
        database is down; ``resume()`` starts it again."""
        self._stop_server(mode="fast")
        self._started = False

    def resume(self) -> None:
        """Start a paused server again on the same port and data dir."""
        assert self.bindir is not None
        args = [
            str(self.bindir / "pg_ctl"),
            "-D", str(self.datadir),
            "-l", str(self.logfile),
            "-o", f"-p {self.port}",
            "-w", "-t", str(int(self.start_timeout)),
            "start",
        ]  # fmt: skip
        result = self._run(args, timeout=self.start_timeout + 5)
        if result.returncode != 0:
            raise PgClusterError(
                f"PostgreSQL did not start again on port {self.port}: "
                f"{result.stdout}\n{result.stderr}\n--- server log tail ---\n{self._log_tail()}"
            )
        self._started = True

    def stop(self) -> None:
        """Stop the server if it runs and delete the temp dir; safe to call more than once."""
        if self.root is None:
            return
        try:
            if self._started or (self.datadir / "postmaster.pid").exists():
                self._stop_server()
        finally:
            self._started = False
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def _stop_server(self, mode: str = "immediate") -> None:
        assert self.bindir is not None
        args = [str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", mode, "-w"]
        with contextlib.suppress(subprocess.TimeoutExpired):
            if self._run([*args, "stop"], timeout=30).returncode == 0:
                return
        # pg_ctl could not stop it: SIGQUIT (immediate shutdown) our own postmaster by its pid.
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int((self.datadir / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGQUIT)
