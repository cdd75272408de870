"""A batch writes each row's file on a thread of its own while the next rows fill: rows come
out in order, a file that can't be written is a bad row in its place, at most
``WRITE_AHEAD`` files wait, and with ``on_error="fail"`` nothing after the bad row is written."""

from __future__ import annotations

import errno
import hashlib
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from fillpdf_provider.engine.batch import WRITE_AHEAD, FolderSink, RowError, fill_rows
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.in_order import InOrder
from kits.cli_support import ROOT
from kits.tables import people_csv

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"
DEADLINE = 60.0  # seconds a test waits for a condition before it fails


class _CountingForm:
    """The sample form, counting its fills and calling ``on_fill(count)`` after each."""

    def __init__(self, on_fill: Any = None) -> None:
        self._form = Template(SAMPLE_FORM.read_bytes())
        self.fills = 0
        self.on_fill = on_fill

    def __getattr__(self, name: str) -> Any:
        return getattr(self._form, name)

    def fill(self, values: Any, **kw: Any) -> bytes:
        data = self._form.fill(values, **kw)
        self.fills += 1
        if self.on_fill is not None:
            self.on_fill(self.fills)
        return data


class _Sink(FolderSink):
    """A folder whose writes can fail for some names, and that notes each write's thread."""

    def __init__(self, folder: Path, failing: Collection[str] = ()) -> None:
        super().__init__(folder)
        self.failing = set(failing)
        self.written: list[str] = []
        self.threads: set[int] = set()

    def write(self, name: str, data: bytes) -> None:
        self.threads.add(threading.get_ident())
        if name in self.failing:
            raise OSError(errno.ENOSPC, "No space left on device", name)
        super().write(name, data)
        self.written.append(name)


def test_a_file_that_cannot_be_written_is_a_bad_row_in_its_place(tmp_path: Path) -> None:
    sink = _Sink(tmp_path / "out", failing={"3.pdf", "70.pdf"})
    summary = fill_rows(Template(SAMPLE_FORM.read_bytes()), people_csv(tmp_path, 100), sink)
    manifest = pq.read_table(tmp_path / "out" / "manifest.parquet").to_pylist()
    assert [r["row"] for r in manifest] == list(range(1, 101))
    bad = {r["row"]: r["error"] for r in manifest if r["status"] == "error"}
    assert set(bad) == {3, 70} and all("No space left" in e for e in bad.values())
    assert (summary.ok, summary.failed) == (98, 2)
    for record in manifest:
        if record["status"] == "ok":
            data = (tmp_path / "out" / record["path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == record["sha256"]
    assert not (tmp_path / "out" / "3.pdf").exists()
    assert threading.get_ident() not in sink.threads  # written beside the fill, not in it


def test_with_fail_nothing_after_the_bad_row_is_written(tmp_path: Path) -> None:
    sink = _Sink(tmp_path / "out", failing={"4.pdf"})
    rows = people_csv(tmp_path, 50)
    with pytest.raises(RowError, match="No space left") as raised:
        fill_rows(Template(SAMPLE_FORM.read_bytes()), rows, sink, on_error="fail")
    assert raised.value.row == 4
    assert sink.written == ["1.pdf", "2.pdf", "3.pdf"]
    assert sorted(p.name for p in (tmp_path / "out").glob("*.pdf")) == ["1.pdf", "2.pdf", "3.pdf"]
    manifest = pq.read_table(tmp_path / "out" / "manifest.parquet").to_pylist()
    assert [(r["row"], r["status"]) for r in manifest] == [
        (1, "ok"), (2, "ok"), (3, "ok"), (4, "error"),
    ]  # fmt: skip


def test_rows_fill_while_a_file_is_written_and_at_most_write_ahead_wait(tmp_path: Path) -> None:
    """The first file's write waits until the rows after it have filled: with writes in
    the filling thread that never happens. No more than ``WRITE_AHEAD`` fills get ahead."""
    filled_ahead = threading.Event()
    form = _CountingForm(lambda fills: fills == WRITE_AHEAD + 1 and filled_ahead.set())
    fills_at_first_write: list[int] = []

    class Held(_Sink):
        def write(self, name: str, data: bytes) -> None:
            if name == "1.pdf":
                assert filled_ahead.wait(DEADLINE), "no row filled while the first was written"
                fills_at_first_write.append(form.fills)
            super().write(name, data)

    summary = fill_rows(form, people_csv(tmp_path, WRITE_AHEAD * 3), Held(tmp_path / "out"))
    assert summary.ok == WRITE_AHEAD * 3
    assert fills_at_first_write == [WRITE_AHEAD + 1]


def test_in_order_gives_results_in_the_order_put() -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        assert release.wait(DEADLINE)
        return "slow"

    with InOrder[str](ahead=4) as work:
        work.put(slow)
        work.put_done("failed before its work")
        work.put(lambda: "quick")
        assert list(work.ready()) == []  # three waiting, four may
        release.set()
        assert list(work.rest()) == ["slow", "failed before its work", "quick"]


def test_in_order_with_nothing_ahead_runs_each_piece_at_once() -> None:
    threads: list[int] = []
    with InOrder[int](ahead=0) as work:
        work.put(lambda: threads.append(threading.get_ident()) or 1)  # type: ignore[func-returns-value]
        assert threads == [threading.get_ident()]
        assert list(work.ready()) == [1]
