"""A large batch into a local folder has its files written by a process of its own
(``engine.file_writer``): the same files and manifest as the thread writes, a file that
can't be written a bad row in its place, and a writer or a filler killed leaves only whole
files and no manifest."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psutil
import pyarrow.parquet as pq
import pytest
from pypdf import PdfReader

import fillpdf_provider.engine.batch as batch
from fillpdf_provider.engine.batch import BatchSummary, FolderSink, fill_rows
from fillpdf_provider.engine.file_writer import FileWriter, FileWriterStopped, Outcome
from fillpdf_provider.engine.files import TEMP_SUFFIX
from fillpdf_provider.engine.filler import Template
from kits.cli_support import ROOT
from kits.tables import people_csv

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"
DEADLINE = 60.0  # seconds a test waits for a condition before it fails


def _writers() -> list[psutil.Process]:
    """This process's writer processes."""
    found = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.NoSuchProcess):  # (one ending as it is asked)
            if any("file_writer" in part for part in child.cmdline()):
                found.append(child)
    return found


def _manifest(folder: Path) -> list[dict[str, Any]]:
    return pq.read_table(folder / "manifest.parquet").to_pylist()


def _only_whole_files(folder: Path) -> None:
    for path in folder.iterdir():  # (a killed batch's manifest is cleared by its merge)
        assert path.name.startswith(".manifest-") or not path.name.endswith(TEMP_SUFFIX), path
        if path.suffix == ".pdf":
            assert len(PdfReader(path).pages) == 1, path


@pytest.fixture
def process_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch into a folder, however small, written by a writer process."""
    monkeypatch.setattr(batch, "WRITER_PROCESS_ROWS", 0)


def test_a_writer_process_gives_the_files_and_manifest_the_thread_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = people_csv(tmp_path, 80)
    blocked = tmp_path / "{side}" / "out" / "7.pdf"  # a folder where row 7's file would go
    seen: list[int] = []

    def watch(summary: BatchSummary, seconds: float) -> None:
        seen.append(len(_writers()))

    outcomes = {}
    for side, threshold in (("thread", 10**9), ("process", 0)):
        monkeypatch.setattr(batch, "WRITER_PROCESS_ROWS", threshold)
        Path(str(blocked).format(side=side)).mkdir(parents=True)
        out = tmp_path / side / "out"
        seen.clear()
        summary = fill_rows(
            Template(SAMPLE_FORM.read_bytes()), rows, out, progress=watch, progress_every=0
        )
        assert (summary.ok, summary.failed) == (79, 1)
        assert max(seen) == (1 if side == "process" else 0)
        manifest = _manifest(out)
        for record in manifest:
            if record["error"]:  # (the temporary name beside it is random)
                error = record["error"].replace(str(out), "OUT")
                record["error"] = re.sub(r"\.[0-9a-f]{12}\.tmp", ".RANDOM.tmp", error)
        files = {p.name: p.read_bytes() for p in out.glob("*.pdf") if p.is_file()}
        outcomes[side] = (manifest, files)
    assert outcomes["process"] == outcomes["thread"]
    bad = [r for r in outcomes["process"][0] if r["status"] == "error"]
    assert [r["row"] for r in bad] == [7] and "Is a directory" in bad[0]["error"]
    assert _writers() == []  # the writer ended with the batch


def test_a_writer_killed_mid_batch_stops_it_with_nothing_published(
    tmp_path: Path, process_writes: None
) -> None:
    out = tmp_path / "out"

    def kill_writer(summary: BatchSummary, seconds: float) -> None:
        if summary.rows == 40:
            (writer,) = _writers()
            writer.send_signal(signal.SIGKILL)  # (not waited for here: the batch reaps it)

    with pytest.raises(FileWriterStopped, match=r"ended with status -9 after \d+ files.*again"):
        fill_rows(
            Template(SAMPLE_FORM.read_bytes()), people_csv(tmp_path, 400), out,
            progress=kill_writer, progress_every=0,
        )  # fmt: skip
    assert not (out / "manifest.parquet").exists()
    assert 40 <= len(list(out.glob("*.pdf"))) < 400
    _only_whole_files(out)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks without exec only on POSIX")
def test_a_child_forked_while_a_writer_is_open_does_not_hold_it_open(tmp_path: Path) -> None:
    """A child forked without exec (multiprocessing's fork) that outlives the batch: the
    batch's close still ends the writer, with the file it was sent."""
    writer = FileWriter[Outcome].start(tmp_path, 4)
    assert writer is not None
    release, let_go = os.pipe()
    child = os.fork()
    if child == 0:  # (lives until the test lets it end)
        os.read(release, 1)
        os._exit(0)
    try:
        writer.put_file("a.pdf", b"%PDF-1.4 forked", lambda outcome: outcome)
        closing = threading.Thread(target=writer.close, daemon=True)
        closing.start()
        closing.join(timeout=DEADLINE)
        assert not closing.is_alive(), "the writer waited for the forked child to let go"
        assert writer.process.returncode == 0
        assert (tmp_path / "a.pdf").read_bytes() == b"%PDF-1.4 forked"
    finally:
        writer.process.kill()
        os.write(let_go, b"x")
        os.waitpid(child, 0)


FILL = """
import sys, time
import fillpdf_provider.engine.batch as batch
from fillpdf_provider.engine.filler import Template
batch.WRITER_PROCESS_ROWS = 0
def report(summary, seconds):
    if summary.rows == 200:
        print("filled 200", flush=True)
        time.sleep(3600)  # killed here
batch.fill_rows(Template(open(sys.argv[1], "rb").read()), sys.argv[2], sys.argv[3],
                progress=report, progress_every=0)
"""


def test_a_filler_killed_mid_batch_leaves_its_writer_to_end_with_whole_files(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "plugins")}
    args = [sys.executable, "-c", FILL, str(SAMPLE_FORM), str(people_csv(tmp_path, 2000)), str(out)]
    filler = subprocess.Popen(args, env=env, stdout=subprocess.PIPE)
    assert filler.stdout is not None
    try:
        assert filler.stdout.readline() == b"filled 200\n"
        (writer,) = psutil.Process(filler.pid).children()
        filler.send_signal(signal.SIGKILL)
        writer.wait(DEADLINE)  # psutil.TimeoutExpired if it outlived its filler
    finally:
        filler.kill()
        filler.wait()
    assert not (out / "manifest.parquet").exists()
    assert 200 <= len(list(out.glob("*.pdf"))) <= 200 + batch.WRITE_AHEAD + 1  # (sent, unanswered)
    _only_whole_files(out)


def test_where_no_writer_can_start_the_batch_writes_on_a_thread(
    tmp_path: Path, process_writes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", "")
    seen: list[int] = []
    summary = fill_rows(
        Template(SAMPLE_FORM.read_bytes()), people_csv(tmp_path, 30), tmp_path / "o",
        progress=lambda summary, seconds: seen.append(len(_writers())), progress_every=0,
    )  # fmt: skip
    assert summary.ok == 30 and len(_manifest(tmp_path / "o")) == 30
    assert max(seen) == 0


def test_a_sink_that_writes_its_own_way_keeps_its_write(
    tmp_path: Path, process_writes: None
) -> None:
    written: list[str] = []

    class Counted(FolderSink):
        def write(self, name: str, data: bytes) -> None:
            written.append(name)
            super().write(name, data)

    rows = people_csv(tmp_path, 20)
    summary = fill_rows(Template(SAMPLE_FORM.read_bytes()), rows, Counted(tmp_path))
    assert summary.ok == 20 and len(written) == 20


def test_a_long_run_of_failed_writes_never_holds_the_batch(
    tmp_path: Path, process_writes: None
) -> None:
    """Every answer an error with a long path: more unread than a small pipe holds."""
    out = tmp_path / ("a-long-folder-name-" * 10) / "out"
    count = batch.WRITE_AHEAD * 3
    for row in range(1, count + 1):
        (out / f"{row}.pdf").mkdir(parents=True)  # a folder where each file would go
    summary = fill_rows(Template(SAMPLE_FORM.read_bytes()), people_csv(tmp_path, count), out)
    assert (summary.ok, summary.failed) == (0, count)
    errors = [r["error"] for r in _manifest(out)]
    assert len(errors) == count and all("Is a directory" in e for e in errors)
