#!/usr/bin/env python3
"""The quality benchmark: how long the GX suites take on a large mail merge.

Builds ``--rows`` rows (100,000 by default) by cycling ``include/sample_rows.csv`` (a row
number is appended to each name, so rows differ), writes them as CSV and Parquet beside a
manifest of the same length, and times each check ``--repeat`` times:

1. input rows, CSV, against ``include/sample_form.pdf``: reading every cell as text, the
   frame, and GX (27 expectations on 13 columns);
2. the same with ``date_of_birth`` taken as a date field (adds a regex and a strftime
   check, which GX runs value by value);
3. input rows from Parquet;
4. input rows where 2% of rows are bad (an impossible checkbox value in 1%, a zip code
   over its 5 characters in 2%, overlapping): a failing run;
5. the manifest, with the input rows and the form (values compared per row).

Each line gives the median and best total seconds, the part spent in GX validation, and
rows/s. The one-off cost of importing GX and making its context is reported apart.

Run it from the repository root::

    .venv/bin/python benchmarks/quality_bench.py [--rows 100000] [--repeat 3] [--out -]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from fillpdf_provider.quality.report import QualityReport  # no GX import: timed below

REPO_ROOT = Path(__file__).resolve().parents[1]
INCLUDE = REPO_ROOT / "include"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "quality_bench.txt"


def make_rows(count: int) -> pd.DataFrame:
    """``count`` sample rows, cycled, each name made unique by its row number."""
    base = pd.read_csv(INCLUDE / "sample_rows.csv", dtype=str, keep_default_na=False)
    rows = base.iloc[[i % len(base) for i in range(count)]].reset_index(drop=True)
    rows["full_name"] = (
        rows["full_name"].str.slice(0, 30) + " " + pd.Series(range(1, count + 1)).astype(str)
    )
    return rows


def make_manifest(count: int) -> pa.Table:
    """An all-ok manifest of ``count`` rows, one distinct file and sha256 each."""
    return pa.table(
        {
            "row": pa.array(range(1, count + 1), pa.int64()),
            "path": [f"{i}.pdf" for i in range(1, count + 1)],
            "sha256": [hashlib.sha256(str(i).encode()).hexdigest() for i in range(1, count + 1)],
            "pages": pa.array([1] * count, pa.int32()),
            "bytes": pa.array([30_000 + i % 997 for i in range(count)], pa.int64()),
            "status": ["ok"] * count,
            "error": pa.array([None] * count, pa.string()),
            "cut": pa.array([None] * count, pa.list_(pa.string())),
        }
    )


@dataclasses.dataclass
class Timing:
    label: str
    totals: list[float]
    gx: list[float]
    rows: int
    expectations: int
    success: bool

    def line(self) -> str:
        median = statistics.median(self.totals)
        verdict = "passed" if self.success else "failed (as meant)"
        return (
            f"  {self.label:<40} {median:7.2f} s median, {min(self.totals):6.2f} s best, "
            f"GX {statistics.median(self.gx):6.2f} s; {self.rows / median:>9,.0f} rows/s; "
            f"{self.expectations} expectations, {verdict}"
        )


def timed(label: str, repeat: int, check: Callable[[], QualityReport]) -> Timing:
    totals, gx = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        report = check()
        totals.append(time.perf_counter() - started)
        gx.append(report.gx_seconds)
    return Timing(label, totals, gx, report.rows, report.expectations, report.success)


def machine() -> list[str]:
    versions = []
    for name in ("great_expectations", "pandas", "pyarrow", "numpy"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} not installed")
    cpus = os.cpu_count() or 0
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return [
        f"  python {platform.python_version()} ({platform.python_implementation()}), "
        f"{cpus} CPUs (load {load:.2f}), {platform.platform()}",
        "  " + ", ".join(versions),
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000, help="rows per table (100,000)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each check (3)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="results file ('-' to write none)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    say("Quality benchmark")
    for text in machine():
        say(text)
    say(f"  settings: --rows {args.rows:,}, --repeat {args.repeat}")

    started = time.perf_counter()
    import great_expectations  # noqa: F401

    imported = time.perf_counter() - started
    from fillpdf_provider.engine.filler import Template
    from fillpdf_provider.quality import input_rows_check, manifest_check
    from fillpdf_provider.quality.context import context

    started = time.perf_counter()
    context()
    made = time.perf_counter() - started

    form = Template.open(INCLUDE / "sample_form.pdf")
    dated = [
        dataclasses.replace(f, type="date", max_length=None) if f.name == "date_of_birth" else f
        for f in form.fields
    ]
    with tempfile.TemporaryDirectory(prefix="quality-bench-") as folder:
        tmp = Path(folder)
        rows = make_rows(args.rows)
        csv, parquet, bad = tmp / "rows.csv", tmp / "rows.parquet", tmp / "bad.csv"
        rows.to_csv(csv, index=False)
        pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), parquet)
        broken = rows.copy()
        broken.loc[::100, "newsletter"] = "maybe"
        broken.loc[::50, "zip"] = "1234567"
        broken.to_csv(bad, index=False)
        manifest = tmp / "manifest.parquet"
        pq.write_table(make_manifest(args.rows), manifest)
        size = csv.stat().st_size / 1e6
        say(f"  data: {args.rows:,} rows, CSV {size:.1f} MB, {len(rows.columns)} columns")
        started = time.perf_counter()
        input_rows_check(rows.head(10), form)
        first = time.perf_counter() - started
        say(
            f"  one-off: import GX {imported:.2f} s, ephemeral context {made:.2f} s, "
            f"first check (10 rows) {first:.2f} s"
        )
        say()
        say("== checks (total = read + frame + GX + report)")
        checks: list[tuple[str, Callable[[], QualityReport]]] = [
            ("input rows, CSV", lambda: input_rows_check(csv, form)),
            ("input rows, CSV, with a date field", lambda: input_rows_check(csv, dated)),
            ("input rows, Parquet", lambda: input_rows_check(parquet, form)),
            ("input rows, CSV, 2% of rows bad", lambda: input_rows_check(bad, form)),
            (
                "manifest, with input rows and form",
                lambda: manifest_check(manifest, input_rows=csv, template_fields=form),
            ),
        ]
        timings = [timed(label, args.repeat, check) for label, check in checks]
        for timing in timings:
            say(timing.line())
    expected = [True, True, True, False, True]
    if [t.success for t in timings] != expected:
        say("ERROR: a check did not give the expected verdict")
        return 1
    slowest = max(statistics.median(t.totals) for t in timings)
    say()
    say(f"slowest check on {args.rows:,} rows: {slowest:.2f} s")
    if args.out != "-":
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"\nresults written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
