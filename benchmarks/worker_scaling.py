#!/usr/bin/env python3
"""What a second Celery worker buys: the mail-merge DAG on one worker, then on two.

Each side starts the CeleryExecutor stack the scale-out tests use (``kits/celerykit.py``:
docker-compose.yaml's commands and environment, PostgreSQL, Redis, the api-server,
scheduler, dag-processor, triggerer and the workers, each in a folder of its own), with
``AIRFLOW__CELERY__WORKER_CONCURRENCY=1`` so a worker runs one task at a time, and runs
``fillpdf_mail_merge`` once on ``--rows`` rows (the sample rows over and over, each with its
own name) in ``--chunks`` chunks, the input and manifest checks included.

The rows, the template and the output are in one folder both workers reach (on separate
hosts: a shared volume, or object storage; ``--store s3`` puts them in a local moto server,
whose own CPU then shares the cores). Reported for each side, from the metadata database:
rows/s over the whole run and over the fill (first chunk start to last chunk end), which
worker filled each chunk and how much of the fill it spent filling, and the CPU each
component used during the run (each process and the children it reaped). With ``--rounds 2``
(the default) the sides run in the order 1, 2, 2, 1 and are pooled, and no output is
deleted before the end (after a delete of gigabytes, ext4 creates the next thousands of
files several times slower: ``file_create.py --delete-first``). Then the ratio of two
workers to one (goal >= 1.6x), beside the machine's own ceiling: the engine alone (no
Airflow, no files) filling ``--ceiling-rows`` rows in one process, then in two at once,
each its own copy of the rows.
No deployment of two workers can scale past what two processes of pure filling get from
these cores, and no whole run past its one-worker fixed part plus a fill at that ceiling.
The same one-then-two measure of ``fill_rows`` into a folder, with the writer process and
with the write thread, shows what each way of writing the files costs once no core is idle.

    .venv/bin/python benchmarks/worker_scaling.py [--rows 100000] [--chunks 8] [--rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import itertools
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import Report, machine_info, progress  # noqa: E402
from kits.celerykit import WORKERS, CeleryStack, celery_stack, missing_parts  # noqa: E402
from kits.s3server import S3Server  # noqa: E402

INCLUDE = REPO_ROOT / "include"
DAG_ID = "fillpdf_mail_merge"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "worker_scaling.txt"
GOAL = 1.6
BUCKET = "fillpdf"


@dataclass
class Side:
    workers: int
    rows: int
    run_s: float
    fill_s: float
    chunks_by_worker: dict[str, int]
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def run_rate(self) -> float:
        return self.rows / self.run_s

    @property
    def fill_rate(self) -> float:
        return self.rows / self.fill_s


def rows_table(count: int) -> pa.Table:
    """The sample rows over and over, each with its own name."""
    with (INCLUDE / "sample_rows.csv").open(newline="", encoding="utf-8") as handle:
        sample = list(csv.DictReader(handle))
    return pa.Table.from_pylist(
        [{**sample[i % len(sample)], "full_name": f"Person {i + 1}"} for i in range(count)]
    )


def pooled(runs: Sequence[Side]) -> Side:
    """Runs of one side as one: rows, seconds and CPU summed, so rates are pooled."""
    chunks: dict[str, int] = {}
    cpu: dict[str, float] = {}
    for run in runs:
        for host, count in run.chunks_by_worker.items():
            chunks[host] = chunks.get(host, 0) + count
        for name, seconds in run.cpu.items():
            cpu[name] = cpu.get(name, 0.0) + seconds
    return Side(
        runs[0].workers, sum(r.rows for r in runs), sum(r.run_s for r in runs),
        sum(r.fill_s for r in runs), chunks, cpu,
    )  # fmt: skip


def tree_cpu(process: psutil.Process) -> float:
    """CPU seconds of ``process``, the children it reaped and its live descendants."""
    total = 0.0
    for one in [process, *process.children(recursive=True)]:
        try:
            t = one.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def component_cpu(stack: CeleryStack, since: float) -> dict[str, float]:
    """CPU seconds so far of each Airflow process, PostgreSQL and Redis (started after
    ``since``, so the ones of this stack)."""
    cpu = {p.name: tree_cpu(psutil.Process(p.popen.pid)) for p in stack.processes}
    for name, label in (("postgres", "postgresql"), ("redis-server", "redis"),
                        ("moto_server", "s3 (moto)")):  # fmt: skip
        roots = [
            p for p in psutil.process_iter(["name", "create_time", "ppid"])
            if (p.info["name"] or "").startswith(name) and p.info["create_time"] >= since
            and not (p.parent() and (p.parent().name() or "").startswith(name))
        ]  # fmt: skip
        if roots:
            cpu[label] = sum(tree_cpu(p) for p in roots)
    return cpu


@dataclass
class Pair:
    """Rows/s and CPU microseconds per row of one process, then of two at once."""

    one: float
    two: float
    one_cpu: float
    two_cpu: float


def one_then_two(rows: int, commands: Callable[[int], list[list[str]]], what: str) -> Pair:
    """``commands(1)`` (one process), then ``commands(2)`` run at once: rows/s summed, and the
    CPU per row of every process they started (reaped children included)."""
    rates, cpus = [], []
    for processes in (1, 2):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        running = [psutil.Popen(c, stdout=subprocess.DEVNULL) for c in commands(processes)]
        if any(one.wait() != 0 for one in running):
            raise RuntimeError(f"{what} failed: run it alone to see why")
        rates.append(processes * rows / (time.perf_counter() - started))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        cpus.append(cpu / (processes * rows) * 1e6)
    return Pair(rates[0], rates[1], cpus[0], cpus[1])


def ceilings(rows: int, work: Path, report: Report) -> float:
    """The engine alone (no files), then ``fill_rows`` into a local folder with each way of
    writing the files, in one process and in two at once; the engine's ratio returned.

    Two batches at once show what a worker's writer process costs when no core is idle."""
    table = work / "ceiling.parquet"
    pq.write_table(rows_table(rows), table)
    engine = [sys.executable, str(REPO_ROOT / "benchmarks" / "mail_merge_bench.py"),
              "--engine-only", str(table)]  # fmt: skip
    engines = one_then_two(rows, lambda n: [engine] * n, "the engine-only fill")
    report("== the machine's ceiling: the engine alone, no Airflow and no files")
    report(_pair_line("", engines))
    report("== fill_rows into a local folder, no Airflow: one batch, then two at once")
    outputs = itertools.count(1)
    for writer in ("process", "thread"):

        def batches(n: int, writer: str = writer) -> list[list[str]]:
            return [[sys.executable, __file__, "--batch-only", str(table),
                     str(work / f"out-{next(outputs)}"), writer] for _ in range(n)]  # fmt: skip

        pair = one_then_two(rows, batches, f"a batch with the writer {writer}")
        report(_pair_line(f"files by the writer {writer:<7}  ", pair))
    return engines.two / engines.one


def _pair_line(label: str, pair: Pair) -> str:
    return (f"  {label}one process {pair.one:7,.0f} rows/s ({pair.one_cpu:4.0f} us CPU a row); "
            f"two at once {pair.two:7,.0f} rows/s in all ({pair.two_cpu:4.0f} us): "
            f"{pair.two / pair.one:4.2f}x")  # fmt: skip


def batch_only(rows: str, out: str, writer: str) -> None:
    """One ``fill_rows`` of the sample form, its files written by ``writer``."""
    from fillpdf_provider.engine import batch
    from fillpdf_provider.engine.filler import Template

    batch.WRITER_PROCESS_ROWS = 0 if writer == "process" else sys.maxsize
    batch.fill_rows(Template((INCLUDE / "sample_form.pdf").read_bytes()), rows, out)


def one_side(args: argparse.Namespace, workers: int, work: Path, report: Report) -> Side:
    started = time.time() - 1
    dags = work / "dags"
    dags.mkdir()
    shutil.copy(REPO_ROOT / "dags" / "fillpdf_mail_merge.py", dags)
    table = rows_table(args.rows)
    extra = {"AIRFLOW__CELERY__WORKER_CONCURRENCY": "1"}
    with shared_place(args, work) as (s3, where):
        if s3 is not None:
            buffer = io.BytesIO()
            pq.write_table(table, buffer)
            s3.put(BUCKET, "in/rows.parquet", buffer.getvalue())
            s3.put(BUCKET, "in/form.pdf", (INCLUDE / "sample_form.pdf").read_bytes())
            extra["AIRFLOW_CONN_AWS_DEFAULT"] = s3.connection_env()
            conf = {"template": f"{where}/in/form.pdf", "rows": f"{where}/in/rows.parquet"}
        else:
            (work / "shared" / "in").mkdir(parents=True)
            pq.write_table(table, work / "shared" / "in" / "rows.parquet")
            shutil.copy(INCLUDE / "sample_form.pdf", work / "shared" / "in" / "form.pdf")
            conf = {"template": f"{where}/in/form.pdf", "rows": f"{where}/in/rows.parquet"}
        conf.update(output=f"{where}/run", chunks=args.chunks)
        names = WORKERS[:workers]
        progress(f"{workers} worker(s): starting the stack")
        (work / "stack").mkdir()
        with celery_stack(work / "stack", dags, extra, workers=names) as stack:
            before = component_cpu(stack, started)
            progress(f"{workers} worker(s): {args.rows:,} rows in {args.chunks} chunks")
            run_id = stack.trigger(DAG_ID, conf, f"scaling-{workers}")
            state = stack.wait(DAG_ID, run_id, timeout=args.timeout)
            after = component_cpu(stack, started)
            if state != "success":
                raise RuntimeError(f"the run ended {state}\n{stack.tails()}")
            run_s, fill_s, hosts = _timings(stack, run_id)
            spans = _chunk_seconds(stack, run_id)
            others = _other_tasks(stack, run_id)
            _check_manifest(args, s3, work)
    cpu = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
    side = Side(workers, args.rows, run_s, fill_s, hosts, cpu)
    report(f"== {workers} worker(s), one task at a time")
    report(f"  run  {side.run_rate:7,.0f} rows/s ({run_s:6.1f} s, trigger to end)")
    report(f"  fill {side.fill_rate:7,.0f} rows/s ({fill_s:6.1f} s, first chunk start to last end)")
    report(f"  chunks filled by: {', '.join(f'{h} {n}' for h, n in sorted(hosts.items()))}")
    for host, chunks in sorted(spans.items()):
        busy = sum(end - start for start, end in chunks)
        gaps = [b[0] - a[1] for a, b in itertools.pairwise(chunks)]
        report(f"    {host}: filling {busy:5.1f} s of the fill's {fill_s:.1f} s "
               f"({busy / fill_s:.0%}); between its chunks "
               f"{statistics.fmean(gaps) if gaps else 0.0:.1f} s on average; idle at the end "
               f"{fill_s - chunks[-1][1]:.1f} s")  # fmt: skip
    report("  outside the fill: " + ", ".join(f"{t} {d:.1f} s" for t, d in others)
           + f"; the rest of the run ({run_s - fill_s - sum(d for _, d in others):.1f} s) "
           "is scheduling between tasks")  # fmt: skip
    total = sum(cpu.values())
    report(f"  CPU during the run: {total:6.1f} s in all ({total / run_s:4.2f} cores)")
    for name, seconds in sorted(cpu.items(), key=lambda kv: -kv[1]):
        report(f"    {name:<24} {seconds:7.1f} s  ({seconds / run_s:4.2f} cores)")
    return side


@contextlib.contextmanager
def shared_place(args: argparse.Namespace, work: Path) -> Iterator[tuple[S3Server | None, str]]:
    """Where rows, template and output go: a folder both workers reach, or a moto bucket."""
    if args.store == "local":
        yield None, str(work / "shared")
        return
    from kits.s3server import s3_server

    with s3_server(work / "moto") as s3:
        s3.create_bucket(BUCKET)
        yield s3, f"s3://{BUCKET}"


def _timings(stack: CeleryStack, run_id: str) -> tuple[float, float, dict[str, int]]:
    (run,) = stack.query(
        "SELECT EXTRACT(EPOCH FROM end_date - start_date) FROM dag_run "
        "WHERE dag_id = %s AND run_id = %s", DAG_ID, run_id,
    )  # fmt: skip
    (fill,) = stack.query(
        "SELECT EXTRACT(EPOCH FROM max(end_date) - min(start_date)) FROM task_instance "
        "WHERE dag_id = %s AND run_id = %s AND task_id = 'fill_chunk'", DAG_ID, run_id,
    )  # fmt: skip
    hosts: dict[str, int] = {}
    for (host,) in stack.query(
        "SELECT hostname FROM task_instance WHERE dag_id = %s AND run_id = %s "
        "AND task_id = 'fill_chunk'", DAG_ID, run_id,
    ):  # fmt: skip
        hosts[host] = hosts.get(host, 0) + 1
    return float(run[0]), float(fill[0]), hosts


def _chunk_seconds(stack: CeleryStack, run_id: str) -> dict[str, list[tuple[float, float]]]:
    """Each worker's chunks as (start, end) seconds from the first chunk's start."""
    rows = stack.query(
        "SELECT hostname, EXTRACT(EPOCH FROM start_date - min(start_date) OVER ()), "
        "EXTRACT(EPOCH FROM end_date - min(start_date) OVER ()) FROM task_instance "
        "WHERE dag_id = %s AND run_id = %s AND task_id = 'fill_chunk' ORDER BY start_date",
        DAG_ID, run_id,
    )  # fmt: skip
    spans: dict[str, list[tuple[float, float]]] = {}
    for host, start, end in rows:
        spans.setdefault(str(host), []).append((float(start), float(end)))
    return spans


def _other_tasks(stack: CeleryStack, run_id: str) -> list[tuple[str, float]]:
    """How long each task outside the fill ran, in the order they ran."""
    rows = stack.query(
        "SELECT task_id, EXTRACT(EPOCH FROM end_date - start_date) FROM task_instance "
        "WHERE dag_id = %s AND run_id = %s AND task_id <> 'fill_chunk' ORDER BY start_date",
        DAG_ID, run_id,
    )  # fmt: skip
    return [(str(task), float(seconds)) for task, seconds in rows]


def _check_manifest(args: argparse.Namespace, s3: S3Server | None, work: Path) -> None:
    if s3 is not None:
        table = pq.read_table(io.BytesIO(s3.get(BUCKET, "run/manifest.parquet")))
    else:
        table = pq.read_table(work / "shared" / "run" / "manifest.parquet")
    rows = table.column("row").to_pylist()
    ok = table.column("status").to_pylist().count("ok")
    if rows != list(range(1, args.rows + 1)) or ok != args.rows:
        raise RuntimeError(f"the manifest has {len(rows):,} rows, {ok:,} ok; {args.rows:,} asked")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--chunks", type=int, default=8)
    p.add_argument("--store", choices=("local", "s3"), default="local")
    p.add_argument("--timeout", type=float, default=3600, help="seconds a run may take")
    p.add_argument("--rounds", type=int, choices=(1, 2), default=2,
                   help="1: one worker, then two; 2: the order 1, 2, 2, 1, pooled")  # fmt: skip
    p.add_argument("--ceiling-rows", type=int, default=20_000,
                   help="rows of the engine-alone ceiling (0 leaves it out)")  # fmt: skip
    p.add_argument("--ceiling-only", action="store_true", help="measure only the ceiling")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="report file, or - for stdout only")
    p.add_argument("--batch-only", nargs=3, metavar=("ROWS", "OUT", "WRITER"),
                   help=argparse.SUPPRESS)  # fmt: skip
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.batch_only:
        batch_only(*args.batch_only)
        return 0
    why = None if args.ceiling_only else missing_parts()
    if why:
        print(f"the Celery stack can't start: {why}", file=sys.stderr)
        return 2
    report = Report()
    m = machine_info(["apache-airflow", "apache-airflow-providers-celery", "celery", "pypdf"])
    report("Worker scaling: the mail-merge DAG on one Celery worker, then two")
    report(f"  python {m['python']}, {m['cpu_count']} CPUs (load {m['load_avg_1m']}), "
           f"{m['memory_gb']} GB, {m['platform']}")  # fmt: skip
    report("  " + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v))
    report(f"  settings: {args.rows:,} rows, {args.chunks} chunks, store {args.store}, "
           f"worker counts in the order {'1, 2' if args.rounds == 1 else '1, 2, 2, 1'}, "
           "worker concurrency 1; every process of the stack shares the same cores")  # fmt: skip
    limit = None
    # Nothing is deleted before the end: deleting gigabytes of small files leaves ext4's
    # block allocator several times slower for minutes (``file_create.py --delete-first``),
    # which would charge each measure for the previous one's cleanup.
    with tempfile.TemporaryDirectory(prefix="fillpdf-scaling-") as folder:
        if args.ceiling_rows:
            progress(f"the ceilings: {args.ceiling_rows:,} rows, 1 process then 2")
            (Path(folder) / "ceilings").mkdir()
            limit = ceilings(args.ceiling_rows, Path(folder) / "ceilings", report)
        if not args.ceiling_only:
            _scaling(args, report, limit, Path(folder))
    text = report.text()
    if args.out != "-":
        Path(args.out).write_text(text)
    return 0


def _scaling(args: argparse.Namespace, report: Report, limit: float | None, folder: Path) -> None:
    """The DAG on one worker, then two (then two and one again: ``--rounds 2``, which cancels
    a steady drift of the machine), and the ratio."""
    order = [1, 2] if args.rounds == 1 else [1, 2, 2, 1]
    runs: dict[int, list[Side]] = {1: [], 2: []}
    for number, workers in enumerate(order, start=1):
        work = folder / f"side-{number}"
        work.mkdir()
        runs[workers].append(one_side(args, workers, work, report))
    one, two = (pooled(runs[workers]) for workers in (1, 2))
    sides = [one, two]
    if len(order) > 2:
        report(f"== pooled: {len(runs[1])} runs of each side")
        for side in sides:
            report(f"  {side.workers} worker(s): run {side.run_rate:7,.0f} rows/s, "
                   f"fill {side.fill_rate:7,.0f} rows/s")  # fmt: skip
    run_ratio, fill_ratio = two.run_rate / one.run_rate, two.fill_rate / one.fill_rate
    report("== two workers ÷ one")
    report(f"  run  {run_ratio:4.2f}x   fill {fill_ratio:4.2f}x   (goal >= {GOAL}x)")
    per_row = {w.workers: sum(w.cpu.values()) / w.rows * 1000 for w in sides}
    report(f"  CPU per row: {per_row[1]:.2f} ms with one worker, {per_row[2]:.2f} ms with two")
    worker_cpu = statistics.fmean(
        sum(s for n, s in w.cpu.items() if n.startswith("airflow-worker")) / w.rows * 1000
        for w in sides
    )
    report(f"  worker CPU per row (both sides' mean): {worker_cpu:.2f} ms")
    report(f"  {'PASS' if run_ratio >= GOAL else 'FAIL'}  two workers ÷ one, whole run: "
           f"{run_ratio:.2f}x (goal >= {GOAL}x)")  # fmt: skip
    if limit is not None:
        report(f"  the machine's ceiling for any two workers: {limit:.2f}x; the fill gets "
               f"{fill_ratio / limit:.0%} of it, the run {run_ratio / limit:.0%}")  # fmt: skip
        fixed = one.run_s - one.fill_s
        best = one.run_s / (fixed + one.fill_s / limit)
        report(f"  the best whole-run ratio any second worker could give: {best:.2f}x (the "
               f"one-worker run's {fixed / len(runs[1]):.1f} s outside the fill, which a "
               f"second worker does not share, plus its fill at the ceiling)")  # fmt: skip
    print(json.dumps({"run_ratio": round(run_ratio, 3), "fill_ratio": round(fill_ratio, 3)}))


if __name__ == "__main__":
    sys.exit(main())
