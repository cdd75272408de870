"""The data dir's disk fills up mid-conversion: 503 for the caller, nothing billed, nothing left.

Each test mounts a size-capped tmpfs as a server's data dir (on SQLite the database lives
there too, so it fills with the files) and fills it with a filler file at three points of a
conversion: while the upload streams in, once the upload is stored (before the pages are
counted and reserved), and while the child converts (before it writes the output). Each
time the caller gets 503 ``service_unavailable`` with ``Retry-After`` and a message saying
the server is out of storage space, the operator a log line saying where the disk is full;
once the filler is deleted, the pages billed equal the pages of the conversions that exist,
no upload, output or temporary file is left, and the same server process converts again.

Mounting needs root (or CAP_SYS_ADMIN); where it is refused the tests are skipped.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from fillpdf_provider.service.db import conversions, instances, reservations
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
DISK_MB = 16
#: Pages of the form converted while the disk fills: long enough to be converting then.
LONG_PAGES = 150
WAIT_S = 30.0
BOUNDARY = "diskfullboundary"
DISK_FULL_LOG = "disk full: requests that write fail with 503 until space is freed"


def _wait(condition: Callable[[], bool], what: str, server: Server) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert server.alive(), "\n".join(server.log_lines()[-30:])
        assert time.monotonic() < deadline, f"not {what} within {WAIT_S:g} s:\n" + "\n".join(
            server.log_lines()[-30:]
        )
        time.sleep(0.02)


@contextlib.contextmanager
def small_disk(folder: Path) -> Iterator[Path]:
    """A tmpfs of ``DISK_MB`` MiB mounted on ``folder``; skips the test where mounting is
    refused (not root, no permission, no ``mount``)."""
    folder.mkdir(parents=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command: the disk-full tests mount a size-capped tmpfs")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0755", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(
            "mounting a size-capped tmpfs was refused (needs root or CAP_SYS_ADMIN): "
            + (mounted.stderr.strip() or f"mount exited with {mounted.returncode}")
        )
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=True)  # a straggler holds it


class Filler:
    """A file that takes the disk's free space, and gives it back."""

    def __init__(self, disk: Path) -> None:
        self.disk = disk
        self.path = disk / "filler"

    def fill(self) -> None:
        """Take every free byte: the next write to this disk fails with ENOSPC."""
        with self.path.open("ab") as out:
            stat = os.statvfs(self.disk)
            with contextlib.suppress(OSError):  # a write since the statvfs took some
                os.posix_fallocate(out.fileno(), out.tell(), stat.f_bavail * stat.f_frsize)
            page = stat.f_frsize
            while True:  # then one page at a time until none is left
                try:
                    os.posix_fallocate(out.fileno(), os.fstat(out.fileno()).st_size, page)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
        assert os.statvfs(self.disk).f_bavail == 0

    def free(self) -> None:
        self.path.unlink(missing_ok=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> str:
    """``sqlite`` (the database in the data dir, on the small disk), or a PostgreSQL URL."""
    if request.param == "sqlite":
        return "sqlite"
    return str(request.getfixturevalue("pg_cluster").new_database(f"disk_{next(_databases)}"))


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_disk(tmp_path / "disk") as mounted:
        yield mounted


def _serve(disk: Path, tmp_path: Path, database: str) -> Server:
    """A server whose data dir is ``disk``; its log is kept off it, where an operator's
    logs go (a full disk must not swallow the line that says so)."""
    log = tmp_path / "server.log"
    log.touch()
    (disk / "server.log").symlink_to(log)
    url = f"sqlite:///{disk / 'fillpdf.db'}" if database == "sqlite" else database
    return start_server(disk, url)


def _instances(server: Server) -> list[tuple[str, int]]:
    with server.db.connect() as conn:
        return [(row.id, row.pid) for row in conn.execute(select(instances))]


def _leftovers(server: Server) -> list[str]:
    """Files nothing owns: outputs of conversions not recorded, uploads, temporary files."""
    with server.db.connect() as conn:
        recorded = {row.id for row in conn.execute(select(conversions.c.id))}
    data = server.data_dir
    stray = [p.name for p in (data / "files").iterdir() if p.stem not in recorded]
    stray += [p.name for p in (data / "uploads").iterdir()]
    return stray + [str(p) for p in data.rglob("*") if p.name.endswith(".tmp")]


def _convert(server: Server, key: str, pdf: bytes) -> httpx.Response:
    with server.client(key, timeout=120) as client:
        return client.post("/v1/convert", files={"file": ("form.pdf", pdf)})


def _assert_out_of_space(response: httpx.Response, server: Server, since: int, where: Path):
    """The caller's 503 and the operator's line naming ``where``."""
    assert response.status_code == 503, (response.text, server.log_lines()[since:][-30:])
    error = response.json()["error"]
    assert error["type"] == "service_unavailable"
    assert "out of storage space" in error["message"]
    assert int(response.headers["Retry-After"]) > 0
    lines = server.wait_for_log(
        lambda entries: any(e["message"] == DISK_FULL_LOG for e in entries),
        since,
        what="the operator's disk-full line",
    )
    said = [e for e in lines if e["message"] == DISK_FULL_LOG]
    assert said[0]["level"] == "error"
    assert said[0]["path"] == str(where), said
    assert not [e for e in lines if e["message"].startswith("unhandled error")]


def _assert_recovers(server: Server, filler: Filler, key: str, served_by: list[tuple[str, int]]):
    """Space freed: nothing billed for what failed, nothing left, and it converts again."""
    filler.free()
    _wait(lambda: count_rows(server, reservations) == 0, "all pages given back", server)
    assert pages_billed(server) == pages_of_conversions(server)
    assert _leftovers(server) == []
    before = pages_of_conversions(server)
    done = _convert(server, key, flat_form(2))
    assert done.status_code == 200, done.text
    assert pages_billed(server) == pages_of_conversions(server) == before + 2
    assert _instances(server) == served_by  # the same server process, never restarted


def _slow_body(pdf: bytes, before_the_end: Callable[[], None]) -> Iterator[bytes]:
    """A multipart body whose file part arrives whole, then ``before_the_end()`` runs, then
    the body ends (the request goes on to the conversion)."""
    yield (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.pdf"\r\n'
        "Content-Type: application/pdf\r\n\r\n"
    ).encode() + pdf
    yield f'\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name="detect"\r\n\r\n'.encode()
    before_the_end()
    yield f"fields\r\n--{BOUNDARY}--\r\n".encode()


def test_a_full_disk_answers_503_bills_nothing_and_serves_again_once_freed(
    disk: Path, database: str, tmp_path: Path
) -> None:
    server = _serve(disk, tmp_path, database)
    filler = Filler(disk)
    try:
        key = server.create_key("enterprise")  # no rate limit: auth writes nothing
        assert _convert(server, key, flat_form(2)).status_code == 200
        served_by = _instances(server)
        uploads, files = disk / "uploads", disk / "files"

        # 1. The disk is full before the upload: storing it fails.
        filler.fill()
        since = len(server.log_lines())
        _assert_out_of_space(_convert(server, key, flat_form(20)), server, since, uploads)
        _assert_recovers(server, filler, key, served_by)

        # 2. The upload is stored, then the disk fills: on SQLite reserving the pages
        # fails (its database is on that disk), on PostgreSQL writing the output.
        pdf = flat_form(20)

        def fill_once_stored() -> None:
            _wait(
                lambda: [p.stat().st_size for p in uploads.iterdir()] == [len(pdf)],
                "the upload stored",
                server,
            )
            filler.fill()

        since = len(server.log_lines())
        with server.client(key, timeout=120) as client:
            response = client.post(
                "/v1/convert",
                content=_slow_body(pdf, fill_once_stored),
                headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
            )
        where = disk / "fillpdf.db" if database == "sqlite" else files
        _assert_out_of_space(response, server, since, where)
        _assert_recovers(server, filler, key, served_by)

        # 3. The disk fills while the child converts: writing the output fails. On SQLite
        # the pages can't be given back at once either (the database can't be written):
        # the sweeper gives them back once there is room.
        long_form = flat_form(LONG_PAGES)
        since = len(server.log_lines())
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(_convert, server, key, long_form)
            _wait(lambda: count_rows(server, reservations) == 1, "converting", server)
            filler.fill()
            response = answer.result(timeout=WAIT_S * 2)
        _assert_out_of_space(response, server, since, files)
        _assert_recovers(server, filler, key, served_by)
    finally:
        filler.free()
        server.stop()
