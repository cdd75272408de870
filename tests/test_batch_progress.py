"""A long batch says how far it is: progress while rows are filled (never only per read
batch), with the failures so far, and once at the end."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from fillpdf_provider.engine.batch import BatchSummary, fill_rows
from fillpdf_provider.engine.filler import Template

INCLUDE = Path(__file__).resolve().parents[1] / "include"


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
