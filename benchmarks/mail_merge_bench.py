#!/usr/bin/env python3
"""The mail-merge at scale: the DAG against ``fillpdf batch``, memory, merge and API mode.

1. ``--rows`` (1,000, 10,000 and 100,000 by default) rows through the ``fillpdf_mail_merge``
   DAG (``airflow dags test``, a fresh Airflow home, ``--chunks`` mapped chunks at most, the
   input and manifest checks included) and through ``fillpdf batch`` on the same rows, each
   in its own process: rows/s from the wall time of the whole process, DAG ÷ batch (goals:
   >= 0.6x at 10,000 rows, >= 0.9x at 100,000). The fixed part of a run is DAG − batch
   (goal at 1,000 rows: <= 8 s); beside it, Airflow's floor: ``benchmarks/floor_dags``, the
   DAG's shape with tasks that do nothing, under the same ``airflow dags test`` (best of
   two), and what the run adds above that floor and the batch.
2. Peak memory of each DAG run: the summed RSS of the process tree, sampled every 0.1 s;
   the largest run ÷ the smallest (goal <= 1.3x).
3. ``merge_manifests`` on each run's chunk manifests, best of three: the largest ÷ the
   smallest (goal <= 12x for 10x the rows: linear).
4. API mode: a conversion on a running service (``fillpdf serve`` on 127.0.0.1), ``--api-rows``
   rows through ``BatchFillOperator`` with ``fill_on="worker"`` (the form downloaded once)
   against the same rows embedded (goal >= 0.5x), and ``fill_on="service"`` (a request a
   row) for reference; every PDF of a sample compared with the service's own fill.

The rows cycle ``include/sample_rows.csv`` with a row number in each name, as Parquet.
Figures are ratios within one run; the machine's other load moves the absolute ones.

    .venv/bin/python benchmarks/mail_merge_bench.py [--rows 10000,100000] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import Report, machine_info, progress  # noqa: E402

INCLUDE = REPO_ROOT / "include"
BIN = Path(sys.executable).parent
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "mail_merge_bench.txt"
FLOOR_DAGS = REPO_ROOT / "benchmarks" / "floor_dags"
FIXED_GOALS = {1_000: 8.0}  # seconds of DAG − batch
RATIO_GOALS = {10_000: 0.6, 100_000: 0.9}  # DAG ÷ batch


def make_rows(count: int, path: Path) -> Path:
    base = pd.read_csv(INCLUDE / "sample_rows.csv", dtype=str, keep_default_na=False)
    rows = base.iloc[[i % len(base) for i in range(count)]].reset_index(drop=True)
    rows["full_name"] = (
        rows["full_name"].str.slice(0, 30) + " " + pd.Series(range(1, count + 1)).astype(str)
    )
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), path)
    return path


def engine_only(rows: Path) -> int:
    """Fill every row of ``rows`` with the engine in this process, keeping no file: reading
    the rows, pairing columns with fields, coercing and filling are all it does. Prints the
    rows filled; the caller times the process."""
    from fillpdf_provider.engine.batch import read_batches
    from fillpdf_provider.engine.coerce import coerce_values, is_empty
    from fillpdf_provider.engine.columns import plan_columns
    from fillpdf_provider.engine.fillable import date_formats
    from fillpdf_provider.engine.filler import Template

    template = Template((INCLUDE / "sample_form.pdf").read_bytes())
    fields = {f.name: f for f in template.fields}
    dates = date_formats(template)
    filled = 0
    pairs: dict[str, str] | None = None
    for batch in read_batches(rows):
        if pairs is None:
            pairs = plan_columns(batch.schema.names, list(fields.values())).pairs
        columns = {c: batch.column(c).to_pylist() for c in pairs}
        for i in range(batch.num_rows):
            cells = {f: columns[c][i] for c, f in pairs.items() if not is_empty(columns[c][i])}
            template.fill(coerce_values(fields, cells, dates))
            filled += 1
    print(filled)
    return 0


def run_measured(args: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """(seconds, peak summed RSS in MB of the process and its children)."""
    started = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        root = psutil.Process(process.pid)
        peak = 0
        while process.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            time.sleep(0.1)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{args[:3]} failed; see {log}:\n{log.read_text()[-3000:]}")
    return seconds, peak / 2**20


def airflow_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN"))}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(REPO_ROOT / "dags"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__LOGGING__LOGGING_LEVEL="WARNING",
    )
    return env


def merge_seconds(output: Path) -> float:
    from fillpdf_provider.operators import merge_manifests

    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        merge_manifests(str(output))
        best = min(best, time.perf_counter() - started)
    return best


def airflow_home(work: Path, name: str, dags: Path) -> dict[str, str]:
    """The environment of a fresh, migrated Airflow home reading DAGs from ``dags``."""
    home = work / name
    home.mkdir()
    env = airflow_env(home)
    env["AIRFLOW__CORE__DAGS_FOLDER"] = str(dags)
    subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, check=True,
                   capture_output=True)  # fmt: skip
    return env


def floor_seconds(work: Path) -> float:
    """``airflow dags test`` of the mail-merge DAG's shape with tasks that do nothing, best
    of two: what Airflow costs a run on this machine before any task of ours."""
    env = airflow_home(work, "floor-home", FLOOR_DAGS)
    command = [str(BIN / "airflow"), "dags", "test", "fillpdf_floor"]
    return min(run_measured(command, env, work / f"floor-{i}.log")[0] for i in range(2))


def scale(args: argparse.Namespace, work: Path, report: Report) -> list[tuple[str, str, bool]]:
    env = airflow_home(work, "airflow-home", REPO_ROOT / "dags")
    progress("the floor: the DAG's shape with tasks that do nothing")
    floor = floor_seconds(work)
    report("== the DAG against fillpdf batch (whole processes, wall time)")
    report(f"  Airflow's floor (benchmarks/floor_dags, tasks that do nothing): {floor:.1f} s")
    figures = {}
    engine_figures: dict[int, float] = {}
    for count in args.rows:
        rows = make_rows(count, work / f"rows-{count}.parquet")
        progress(f"{count:,} rows through the DAG")
        out = work / f"dag-{count}"
        conf = {"rows": str(rows), "output": str(out), "chunks": args.chunks}
        dag_s, dag_mb = run_measured(
            [str(BIN / "airflow"), "dags", "test", "fillpdf_mail_merge", "-c", json.dumps(conf)],
            env, work / f"dag-{count}.log",
        )  # fmt: skip
        ok = pq.read_table(out / "manifest.parquet").column("status").to_pylist().count("ok")
        progress(f"{count:,} rows through fillpdf batch")
        batch_s, batch_mb = run_measured(
            [str(BIN / "fillpdf"), "batch", str(INCLUDE / "sample_form.pdf"), str(rows),
             "--out-dir", str(work / f"batch-{count}")],
            env, work / f"batch-{count}.log",
        )  # fmt: skip
        merge_s = merge_seconds(out)
        manifest_rows = pq.ParquetFile(out / "manifest.parquet").metadata.num_rows
        shutil.rmtree(out)  # a million PDFs per run: only one run's files on disk at a time
        shutil.rmtree(work / f"batch-{count}")
        progress(f"{count:,} rows through the engine in process (no files)")
        engine = [sys.executable, __file__, "--engine-only", str(rows)]
        engine_s, engine_mb = run_measured(engine, env, work / f"engine-{count}.log")
        figures[count] = (dag_s, dag_mb, batch_s, merge_s)
        engine_figures[count] = engine_s
        fixed = dag_s - batch_s
        report(
            f"  {count:>9,} rows: DAG {count / dag_s:7,.0f} rows/s ({dag_s:6.1f} s, {ok:,} ok, "
            f"peak {dag_mb:6.0f} MB); batch {count / batch_s:7,.0f} rows/s ({batch_s:6.1f} s, "
            f"peak {batch_mb:5.0f} MB); DAG ÷ batch {batch_s / dag_s:4.2f}x; "
            f"merge {merge_s * 1000:7.1f} ms"
        )
        report(
            f"  {count:>9,} rows: engine in process {count / engine_s:7,.0f} rows/s "
            f"({engine_s:6.1f} s, peak {engine_mb:5.0f} MB); batch ÷ engine "
            f"{engine_s / batch_s:4.2f}x; DAG ÷ engine {engine_s / dag_s:4.2f}x; "
            f"manifest {manifest_rows:,} rows"
        )
        report(
            f"  {count:>9,} rows: fixed part (DAG − batch) {fixed:5.1f} s = Airflow's floor "
            f"{floor:4.1f} s + the run's own {fixed - floor:5.1f} s"
        )
    gates = [
        (f"fixed part at {count:,} rows", f"{figures[count][0] - figures[count][2]:.1f} s "
         f"(goal <= {goal:g} s)", figures[count][0] - figures[count][2] <= goal)
        for count, goal in FIXED_GOALS.items() if count in figures
    ] + [
        (f"DAG ÷ fillpdf batch at {count:,} rows",
         f"{figures[count][2] / figures[count][0]:.2f}x (goal >= {goal:g}x)",
         figures[count][2] / figures[count][0] >= goal)
        for count, goal in RATIO_GOALS.items() if count in figures
    ]  # fmt: skip
    # growth is judged between the two largest counts (10x apart by default)
    large = max(figures)
    small = max((c for c in figures if c < large), default=large)
    rss = figures[large][1] / figures[small][1]
    merge = figures[large][3] / figures[small][3]
    speed = figures[large][2] / figures[large][0]
    seconds = figures[large][0] / figures[small][0]
    batch_engine = engine_figures[large] / figures[large][2]
    if large not in RATIO_GOALS:
        gates.append((f"DAG ÷ fillpdf batch at {large:,} rows", f"{speed:.2f}x (goal >= 0.9x)",
                      speed >= 0.9))  # fmt: skip
    return [
        *gates,
        (f"fillpdf batch ÷ engine at {large:,} rows", f"{batch_engine:.2f}x (goal >= 0.8x)",
         batch_engine >= 0.8),
        (f"DAG time {large:,} ÷ {small:,}", f"{seconds:.2f}x for {large // small}x the rows "
         f"(goal <= {1.1 * large / small:g}x)", seconds <= 1.1 * large / small),
        (f"peak RSS {large:,} ÷ {small:,}", f"{rss:.2f}x (goal <= 1.2x)", rss <= 1.2),
        (f"merge time {large:,} ÷ {small:,}", f"{merge:.2f}x for {large // small}x the rows "
         "(goal <= 12x)", merge <= 12),
    ]  # fmt: skip


def api_mode(args: argparse.Namespace, work: Path, report: Report) -> list[tuple[str, str, bool]]:
    from kits.flatkit import flat_form, flat_form_schema
    from kits.servicekit import start_server

    server = start_server(work / "service")
    os.environ["FILLPDF_EMBEDDED_STORE"] = str(work / "embedded")
    try:
        key = server.create_key("enterprise", pages_included=100000, rate_limit_per_minute=10**6)
        conn = {"conn_type": "fillpdf", "host": server.base_url, "password": key}
        os.environ["AIRFLOW_CONN_FILLPDF_DEFAULT"] = json.dumps(conn)
        from fillpdf_provider.hooks.fillpdf import FillPdfHook
        from fillpdf_provider.operators import BatchFillOperator

        hook = FillPdfHook()
        conversion = hook.convert(flat_form(2), schema=flat_form_schema())
        texts = [f.name for f in conversion.schema if f.type == "text"]
        rows = [{n: f"{n} {i}" for n in texts} for i in range(1, args.api_rows + 1)]
        path = work / "api-rows.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
        form = work / "conversion.pdf"
        form.write_bytes(conversion.pdf)

        def timed(template: str, out: str, count: int | None = None, **kw: object) -> float:
            source = path
            if count is not None:
                source = work / f"api-rows-{count}.parquet"
                pq.write_table(pa.Table.from_pylist(rows[:count]), source)
            started = time.perf_counter()
            BatchFillOperator(task_id="t", template=template, rows=str(source),
                              output_dir=str(work / out), **kw).execute(context={})  # type: ignore[arg-type]  # fmt: skip
            return time.perf_counter() - started

        progress(f"{args.api_rows:,} rows, api mode, filled on the worker")
        worker_s = timed(conversion.conversion_id, "api-worker")
        progress(f"{args.service_rows:,} rows, api mode, a request a row")
        service_s = timed(conversion.conversion_id, "api-service", args.service_rows,
                          fill_on="service")  # fmt: skip
        del os.environ["AIRFLOW_CONN_FILLPDF_DEFAULT"]
        progress(f"{args.api_rows:,} rows embedded")
        embedded_s = timed(str(form), "embedded")
        os.environ["AIRFLOW_CONN_FILLPDF_DEFAULT"] = json.dumps(conn)
        sample = range(1, min(args.identity_rows, args.api_rows) + 1)
        same = sum(
            hashlib.sha256(hook.fill(conversion.conversion_id, rows[i - 1])).digest()
            == hashlib.sha256((work / "api-worker" / f"{i}.pdf").read_bytes()).digest()
            for i in sample
        )
    finally:
        server.stop()
    ratio = embedded_s / worker_s
    report("== API mode (a conversion on the service)")
    report(f"  filled on the worker  {args.api_rows / worker_s:7,.0f} rows/s")
    report(f"  embedded              {args.api_rows / embedded_s:7,.0f} rows/s")
    report(f"  a request a row       {args.service_rows / service_s:7,.0f} rows/s "
                f"({args.service_rows} rows)")  # fmt: skip
    report(f"  identical to the service's own fill: {same} of {len(sample)} sampled rows")
    return [
        ("API mode ÷ embedded", f"{ratio:.2f}x (goal >= 0.5x)", ratio >= 0.5),
        ("PDFs identical to the service's fill", f"{same} of {len(sample)}", same == len(sample)),
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--rows", default="1000,10000,100000", help="row counts, comma-separated")
    p.add_argument("--chunks", type=int, default=8)
    p.add_argument("--api-rows", type=int, default=1000)
    p.add_argument("--service-rows", type=int, default=200)
    p.add_argument("--identity-rows", type=int, default=1000)
    p.add_argument("--skip-api", action="store_true", help="leave API mode out")
    p.add_argument("--engine-only", metavar="ROWS", help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true", help="2,000 and 10,000 rows, 200 API rows")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="report file, or - for stdout only")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.api_rows, args.service_rows, args.identity_rows = "2000,10000", 200, 50, 50
    args.rows = sorted(int(n) for n in args.rows.split(","))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.engine_only:
        return engine_only(Path(args.engine_only))
    report = Report()
    m = machine_info(["apache-airflow", "pypdf", "pyarrow", "great_expectations"])
    report("Mail-merge benchmark")
    report(f"  python {m['python']} ({m['implementation']}), {m['cpu_count']} CPUs "
           f"(load {m['load_avg_1m']}), {m['memory_gb']} GB, {m['platform']}")  # fmt: skip
    report("  " + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v))
    report(f"  settings: rows {args.rows}, chunks {args.chunks}, api rows {args.api_rows}")
    with tempfile.TemporaryDirectory(prefix="fillpdf-merge-bench-") as folder:
        work = Path(folder)
        gates = scale(args, work, report)
        if not args.skip_api:
            gates += api_mode(args, work, report)
    report("== goals")
    for name, figure, ok in gates:
        report(f"  {'PASS' if ok else 'FAIL'}  {name}: {figure}")
    text = report.text()
    if args.out != "-":
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
