"""A long batch says how far it is: progress while rows are filled (never only per read
batch), with the failures so far, and once at the end."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fillpdf_provider.engine.batch import BatchSummary, fill_rows
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.operators import BatchFillOperator

INCLUDE = Path(__file__).resolve().parents[2] / "include"


def test_progress_is_reported_within_a_read_batch_with_the_failures(tmp_path: Path) -> None:
    rows = [{"full_name": f"Ada {i}", "newsletter": "maybe" if i % 3 == 0 else "yes"}
            for i in range(1, 8)]  # fmt: skip
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    seen: list[tuple[int, int]] = []

    def progress(summary: BatchSummary, seconds: float) -> None:
        assert seconds >= 0
        seen.append((summary.rows, summary.failed))

    template = Template((INCLUDE / "sample_form.pdf").read_bytes())
    summary = fill_rows(template, path, tmp_path / "out", progress=progress, progress_every=0,
                        batch_rows=100)  # fmt: skip
    # one read batch of 7 rows, and still a report after every row, then the final one
    assert seen == [(1, 0), (2, 0), (3, 1), (4, 1), (5, 1), (6, 2), (7, 2), (7, 2)]
    assert (summary.rows, summary.failed) == (7, 2)


def test_a_long_interval_reports_only_the_end(tmp_path: Path) -> None:
    seen: list[int] = []
    template = Template((INCLUDE / "sample_form.pdf").read_bytes())
    fill_rows(template, INCLUDE / "sample_rows.csv", tmp_path / "out",
              progress=lambda s, _: seen.append(s.rows), progress_every=1e9)  # fmt: skip
    assert seen == [25]


def test_a_progress_line_says_done_of_total_rate_failures_and_eta() -> None:
    summary = BatchSummary(rows=1200, failed=3)
    assert summary.progress_line(3.0, 5000) == (
        "1,200/5,000 rows (24%), 3 failed, 400 rows/s, ETA 10s"
    )
    assert summary.progress_line(3.0, None) == "1,200 rows, 3 failed, 400 rows/s, 3s so far"
    slow = BatchSummary(rows=12, failed=0)
    assert slow.progress_line(5.0, 100_000) == (
        "12/100,000 rows (0%), 0 failed, 2.4 rows/s, ETA 11h34m"
    )
    assert slow.progress_line(125.0, 112) == "12/112 rows (10%), 0 failed, 0.1 rows/s, ETA 17m22s"
    finished = BatchSummary(rows=1200, failed=3, finished=True)
    assert finished.progress_line(3.04, 1200) == (
        "1,200/1,200 rows (100%), 3 failed, 395 rows/s, done in 3.0s"
    )


def test_the_operator_logs_plain_progress_of_the_whole_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))
    rows = tmp_path / "rows.csv"
    rows.write_text(
        (INCLUDE / "sample_rows.csv").read_text(encoding="utf-8").replace("Standard", "Gold"),
        encoding="utf-8",
    )
    result = BatchFillOperator(
        task_id="t",
        template=str(INCLUDE / "sample_form.pdf"),
        rows=str(rows),
        output_dir=str(tmp_path / "out"),
        progress_every=0,
        max_failed_rows=25,
    ).execute(context={})  # type: ignore[arg-type]
    # the task log writes through structlog to stdout; a task log is no terminal
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "rows/s" in line and "filled" not in line]
    assert len(lines) == 26, out
    failed = result["failed"]
    assert failed > 0
    assert re.search(r"batch: 1/25 rows \(4%\), [01] failed, [\d,.]+ rows/s, ETA \S+", lines[0])
    assert re.search(
        rf"batch: 25/25 rows \(100%\), {failed} failed, [\d,.]+ rows/s, done in \S+", lines[-1]
    ), lines[-1]


def test_a_batch_under_a_second_says_how_many_milliseconds() -> None:
    from fillpdf_provider.engine.batch import BatchSummary

    summary = BatchSummary(rows=3, ok=3, seconds=0.008, finished=True)
    assert " in 8 ms, " in summary.line()
    assert summary.progress_parts(0.008)[-1] == "done in 8 ms"
    assert " in 2.5s, " in BatchSummary(rows=3, ok=3, seconds=2.5).line()
