#!/usr/bin/env python3
"""The batch benchmark: a Parquet mail-merge through BatchFillOperator against ``fillpdf batch``.

Builds a ``--rows`` row Parquet file for ``include/sample_form.pdf`` by cycling the rows of
``include/sample_rows.csv`` (each email gets ``+<id>`` so that every PDF is different, and an
``id`` column is added: it fills no field). Then, each in a fresh subprocess, ``--repeat``
times, the minimum kept:

1. Baseline: ``fillpdf batch include/sample_form.pdf ROWS.parquet --out-dir DIR``.
2. Operator, direct: a small script that builds ``BatchFillOperator(task_id="bench", ...)``
   and calls ``op.execute(context={})``; no scheduler, no database, no ``fillpdf_default``
   connection, so the hook runs the embedded engine.
3. Operator, through Airflow: a one-task DAG in a temp dags folder, ``airflow dags test``
   (the database is migrated first, untimed). The task's own duration is read from the
   metadata database and the log.

The PDFs go to tmpfs (``/dev/shm``) unless ``--out-root`` says otherwise: on a disk, writing
20,000 files and the writeback of the previous run's made the same command vary 2-3x here.

For each: wall time of the whole process, rows/s, peak RSS (``ru_maxrss`` from ``os.wait4``)
and the ratio to the baseline. Acceptance: operator direct / baseline <= 1.5 (wall time).
Every run must write one PDF per row and a manifest whose ``sha256`` column equals the
baseline's, row by row; any mismatch makes the run fail (exit 1).

This process never imports pyarrow or Airflow: a child's ``ru_maxrss`` on Linux starts at its
parent's peak RSS (the fork/vfork copy counts), so the parent is kept small and its own peak
is printed as the floor of the RSS figures. The Parquet file is built and the manifests are
read by this script in helper subprocesses.

Run it from the repository root (see benchmarks/README.md)::

    .venv/bin/python benchmarks/batch_bench.py [--rows 20000] [--repeat 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import Report, machine_info, progress  # noqa: E402

FORM = REPO_ROOT / "include" / "sample_form.pdf"
SAMPLE_ROWS = REPO_ROOT / "include" / "sample_rows.csv"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "batch_bench.txt"
BIN = Path(sys.executable).parent
GATE_RATIO = 1.5
DAG_ID = "fillpdf_batch_bench"
#: Room to ask of tmpfs per PDF (the sample form's outputs are about 21 KB).
BYTES_PER_PDF = 32 * 1024
#: Warn when other processes kept more than this many cores busy during a timed run.
OTHER_LOAD_WARN = 0.15
VERSION_DISTS = (
    "airflow-provider-fillpdf",
    "apache-airflow",
    "apache-airflow-core",
    "apache-airflow-task-sdk",
    "pyarrow",
    "pypdf",
    "fonttools",
)
MODES = ("baseline", "direct", "dags_test")
LABELS = {
    "baseline": "fillpdf batch (CLI)",
    "direct": "BatchFillOperator.execute()",
    "dags_test": "airflow dags test",
}

#: Mode 2: what a user would write to run the operator without a scheduler.
OPERATOR_SCRIPT = """\
import json
import sys
import time

born = time.time()
started = time.perf_counter()
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators import BatchFillOperator

imported = time.perf_counter()
template, rows, output_dir, result_path = sys.argv[1:5]
op = BatchFillOperator(task_id="bench", template=template, rows=rows, output_dir=output_dir)
mode = FillPdfHook(op.fillpdf_conn_id).mode
executing = time.perf_counter()
summary = op.execute(context={})
done = time.perf_counter()
with open("/proc/self/status") as status:
    hwm = next((int(line.split()[1]) for line in status if line.startswith("VmHWM:")), None)
with open(result_path, "w") as out:
    json.dump({"import_s": imported - started, "construct_s": executing - imported,
               "execute_s": done - executing, "mode": mode, "vm_hwm_kb": hwm,
               "summary": summary, "born": born, "finished": time.time()}, out)
"""

#: Mode 3: the throwaway DAG (one task, no chunks).
DAG_FILE = """\
from airflow.sdk import DAG

from fillpdf_provider.operators import BatchFillOperator

with DAG(dag_id={dag_id!r}, schedule=None, catchup=False):
    BatchFillOperator(task_id="bench", template={template!r}, rows={rows!r}, output_dir={out!r})
"""

_LOG_TIME = r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z"
#: Marks in the ``airflow dags test`` log: (name, pattern).
LOG_MARKS = (
    ("task_starting", _LOG_TIME + r".*\[DAG TEST\] starting task_id=bench"),
    ("task_started", _LOG_TIME + r".*Task started"),
    ("task_ended", _LOG_TIME + r".*\[DAG TEST\] end task task_id=bench"),
)


# --------------------------------------------------------------------------- output


def _proc_kb(key: str, pid: str = "self") -> int | None:
    """A ``kB`` line of ``/proc/<pid>/status`` (``VmHWM``, ``VmRSS``), or None."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def machine_busy_seconds() -> float | None:
    """Busy CPU seconds of the whole machine (``/proc/stat``: not idle, iowait or steal)."""
    try:
        with open("/proc/stat") as stat:
            parts = stat.readline().split()
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in parts[1:8])
        return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _mb(kb: float | None) -> str:
    return f"{kb / 1024:,.0f} MB" if kb is not None else "-"


# --------------------------------------------------------------------------- children


@dataclass
class ChildRun:
    """One timed subprocess."""

    mode: str
    repeat: int
    wall_s: float
    returncode: int
    maxrss_kb: int
    cpu_user_s: float
    cpu_sys_s: float
    other_cores_busy: float | None
    parent_hwm_kb: int | None
    log: str
    started_at: float = 0.0  # epoch seconds, to place the child's log lines
    ended_at: float = 0.0
    pdfs: int = 0
    manifest: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def cpu_s(self) -> float:
        return self.cpu_user_s + self.cpu_sys_s


def run_child(
    mode: str, repeat: int, cmd: Sequence[str], env: dict[str, str], log: Path
) -> ChildRun:
    """Run ``cmd`` to its end; wall time, exit code and ``os.wait4``'s rusage of the child.

    Output goes to ``log`` (a file, not a pipe: nobody has to drain it while it runs).
    """
    parent_hwm = _proc_kb("VmHWM")
    busy0 = machine_busy_seconds()
    with log.open("wb") as out:
        started_at = time.time()
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd), env=env, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        ended_at = time.time()
    busy1 = machine_busy_seconds()
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    other = None
    if busy0 is not None and busy1 is not None and wall > 0:
        other = max(0.0, busy1 - busy0 - cpu) / wall
    return ChildRun(
        mode=mode,
        repeat=repeat,
        wall_s=wall,
        returncode=proc.returncode,
        maxrss_kb=usage.ru_maxrss,
        cpu_user_s=usage.ru_utime,
        cpu_sys_s=usage.ru_stime,
        other_cores_busy=other,
        parent_hwm_kb=parent_hwm,
        log=str(log),
        started_at=started_at,
        ended_at=ended_at,
    )


def helper(args: Sequence[str], what: str) -> dict[str, Any]:
    """Run this script with a hidden flag (pyarrow work stays out of this process)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_rows_child(path: str, n: int) -> int:
    """Hidden ``--make-rows``: write ``n`` rows cycled from sample_rows.csv to ``path``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    started = time.perf_counter()
    header = SAMPLE_ROWS.read_text(encoding="utf-8-sig").splitlines()[0].split(",")
    sample = pacsv.read_csv(
        SAMPLE_ROWS,
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=dict.fromkeys(header, pa.string()), strings_can_be_null=False
        ),
    )
    if sample.num_rows == 0:
        raise SystemExit(f"{SAMPLE_ROWS} has no rows")
    ids = pa.array(range(1, n + 1), pa.int64())
    table = sample.take(pa.array([i % sample.num_rows for i in range(n)], pa.int64()))
    if "email" in table.column_names:
        # "name@host" -> "name+<id>@host": still a valid address, within the field's 60
        # characters, and it makes every row's PDF different.
        tagged = [
            f"{e.split('@', 1)[0]}+{i}@{e.split('@', 1)[1]}" if e and "@" in e else e
            for e, i in zip(table.column("email").to_pylist(), ids.to_pylist(), strict=True)
        ]
        table = table.set_column(
            table.column_names.index("email"), "email", pa.array(tagged, pa.string())
        )
    table = table.append_column("id", ids)
    pq.write_table(table, path)
    longest = pc.max(pc.utf8_length(table.column("email"))).as_py() if n else 0
    print(
        json.dumps(
            {
                "rows": table.num_rows,
                "sample_rows": sample.num_rows,
                "columns": table.column_names,
                "bytes": os.path.getsize(path),
                "longest_email": longest,
                "seconds": time.perf_counter() - started,
            }
        )
    )
    return 0


def manifests_child(paths: Sequence[str]) -> int:
    """Hidden ``--read-manifests``: rows, ok, and the sha256/path columns of each manifest."""
    import pyarrow.parquet as pq

    out = {}
    for path in paths:
        table = pq.read_table(path).sort_by("row")
        sha = table.column("sha256").to_pylist()
        out[path] = {
            "rows": table.num_rows,
            "ok": table.column("status").to_pylist().count("ok"),
            "row": table.column("row").to_pylist(),
            "sha256": sha,
            "path": table.column("path").to_pylist(),
            "distinct_sha256": len(set(sha)),
        }
    print(json.dumps(out))
    return 0


# --------------------------------------------------------------------------- modes


class Bench:
    """The temp folder, the environments and the commands of the three modes."""

    def __init__(self, tmp: Path, rows: Path, outputs: Path) -> None:
        self.tmp = tmp
        self.rows = rows
        self.outputs = outputs
        self.logs = tmp / "logs"
        self.manifests = tmp / "manifests"
        self.logs.mkdir()
        self.manifests.mkdir()
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("AIRFLOW") and k != "FILLPDF_EMBEDDED_STORE"
        }
        base["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
        base["PYTHONUNBUFFERED"] = "1"
        self.env_cli = dict(base)
        self.home_direct = tmp / "airflow-direct"
        self.home_direct.mkdir()
        self.env_direct = {**base, "AIRFLOW_HOME": str(self.home_direct)}
        self.home_dags = tmp / "airflow-dags-test"
        self.dags = self.home_dags / "dags"
        self.dags.mkdir(parents=True)
        self.env_dags = {
            **base,
            "AIRFLOW_HOME": str(self.home_dags),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
        }
        self.script = tmp / "run_operator.py"
        self.script.write_text(OPERATOR_SCRIPT)

    def out_dir(self, mode: str) -> Path:
        return self.outputs / f"out-{mode}"

    def prepare_dags_test(self, rows: Path) -> float:
        """Write the DAG file (reading ``rows``), and migrate the database once; seconds."""
        (self.dags / "fillpdf_batch_bench.py").write_text(
            DAG_FILE.format(
                dag_id=DAG_ID,
                template=str(FORM),
                rows=str(rows),
                out=str(self.out_dir("dags_test")),
            )
        )
        if (self.home_dags / "airflow.db").exists():
            return 0.0
        started = time.perf_counter()
        log = self.logs / "airflow-db-migrate.log"
        with log.open("wb") as out:
            done = subprocess.run(
                [str(BIN / "airflow"), "db", "migrate"],
                env=self.env_dags,
                cwd=REPO_ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed (exit {done.returncode}); see {log}")
        return time.perf_counter() - started

    def command(self, mode: str, rows: Path, result: Path) -> tuple[list[str], dict[str, str]]:
        out = str(self.out_dir(mode))
        if mode == "baseline":
            return [str(BIN / "fillpdf"), "batch", str(FORM), str(rows), "--out-dir", out], (
                self.env_cli
            )
        if mode == "direct":
            cmd = [sys.executable, str(self.script), str(FORM), str(rows), out, str(result)]
            return cmd, self.env_direct
        return [str(BIN / "airflow"), "dags", "test", DAG_ID], self.env_dags

    def run(self, mode: str, repeat: int, rows: Path, *, keep: bool = True) -> ChildRun:
        """One run of ``mode``; counts its PDFs, keeps its manifest, deletes its output."""
        out = self.out_dir(mode)
        shutil.rmtree(out, ignore_errors=True)
        tag = f"{mode}-{repeat}" if keep else f"{mode}-warmup"
        result = self.tmp / f"result-{tag}.json"
        if mode == "dags_test":
            self.prepare_dags_test(rows)
        cmd, env = self.command(mode, rows, result)
        os.sync()  # the previous run's deleted files and dirty pages: not this run's cost
        run = run_child(mode, repeat, cmd, env, self.logs / f"{tag}.log")
        if out.is_dir():
            run.pdfs = sum(1 for entry in os.scandir(out) if entry.name.endswith(".pdf"))
            manifest = out / "manifest.parquet"
            if manifest.is_file() and keep:
                kept = self.manifests / f"{tag}.parquet"
                shutil.copyfile(manifest, kept)
                run.manifest = str(kept)
        shutil.rmtree(out, ignore_errors=True)
        log_text = Path(run.log).read_text(errors="replace")
        if mode == "baseline":
            run.detail = baseline_detail(log_text)
        elif mode == "direct" and result.is_file():
            run.detail = json.loads(result.read_text())
            run.detail["log_bytes"] = len(log_text.encode())
            run.detail["fonttools_log_lines"] = log_text.count("[fontTools.")
            run.detail["outside_task_runner_warning"] = "outside of the Task Runner" in log_text
        elif mode == "dags_test":
            run.detail = dags_test_detail(self.home_dags / "airflow.db", log_text)
        return run


def baseline_detail(log_text: str) -> dict[str, Any]:
    """The CLI's summary line: ``filled N of M rows ... in X.Xs, R rows/s``."""
    match = re.search(r"filled (\d+) of (\d+) rows .*? in ([\d.]+)s, (\d+) rows/s", log_text)
    if not match:
        return {}
    return {
        "summary": {
            "ok": int(match.group(1)),
            "rows": int(match.group(2)),
            "seconds": float(match.group(3)),
            "rows_per_second": float(match.group(4)),
        }
    }


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp + "+00:00").timestamp()


def dags_test_detail(db: Path, log_text: str) -> dict[str, Any]:
    """The latest run's task instance (state, duration), its XCom summary, and log marks."""
    detail: dict[str, Any] = {}
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            row = conn.execute(
                "SELECT run_id, state, start_date, end_date, duration FROM task_instance "
                "WHERE dag_id = ? AND task_id = 'bench' ORDER BY start_date DESC LIMIT 1",
                (DAG_ID,),
            ).fetchone()
            if row:
                run_id, state, start, end, duration = row
                detail["ti"] = {"state": state, "start": start, "end": end, "duration_s": duration}
                value = conn.execute(
                    "SELECT value FROM xcom WHERE dag_id = ? AND run_id = ? AND task_id = 'bench'"
                    " AND key = 'return_value'",
                    (DAG_ID, run_id),
                ).fetchone()
                if value and value[0]:
                    summary = json.loads(value[0])
                    detail["summary"] = json.loads(summary) if isinstance(summary, str) else summary
            detail["fillpdf_connections"] = conn.execute(
                "SELECT count(*) FROM connection WHERE conn_id = 'fillpdf_default'"
            ).fetchone()[0]
    except sqlite3.Error as exc:
        detail["db_error"] = str(exc)
    marks: dict[str, float] = {}
    for name, pattern in LOG_MARKS:
        found = re.search(pattern, log_text, re.MULTILINE)
        if found:
            marks[name] = _epoch(found.group(1))
    detail["log_marks"] = marks
    detail["log_bytes"] = len(log_text.encode())
    detail["fonttools_log_lines"] = log_text.count("[fontTools.")
    return detail


# --------------------------------------------------------------------------- checks


def check_outputs(
    runs: Sequence[ChildRun], manifests: dict[str, Any], expected_rows: int
) -> list[str]:
    """Problems: a run that failed, wrote the wrong number of PDFs, or differs from baseline."""
    problems: list[str] = []
    reference = next(
        (manifests.get(r.manifest) for r in runs if r.mode == "baseline" and r.manifest), None
    )
    for run in runs:
        name = f"{run.mode} #{run.repeat}"
        if run.returncode != 0:
            problems.append(f"{name}: exit code {run.returncode} (log: {run.log})")
        if run.pdfs != expected_rows:
            problems.append(f"{name}: {run.pdfs} PDFs, expected {expected_rows}")
        got = manifests.get(run.manifest) if run.manifest else None
        if got is None:
            problems.append(f"{name}: no manifest.parquet")
            continue
        if got["rows"] != expected_rows or got["ok"] != expected_rows:
            problems.append(
                f"{name}: manifest has {got['rows']} rows, {got['ok']} ok; "
                f"expected {expected_rows} ok"
            )
        if reference is None:
            problems.append(f"{name}: no baseline manifest to compare with")
            continue
        if got["row"] != reference["row"] or got["path"] != reference["path"]:
            problems.append(f"{name}: manifest rows or file names differ from the baseline's")
        if got["sha256"] != reference["sha256"]:
            differing = [
                row
                for row, a, b in zip(got["row"], got["sha256"], reference["sha256"], strict=False)
                if a != b
            ]
            problems.append(
                f"{name}: sha256 differs from the baseline's on {len(differing)} rows "
                f"(first: {differing[:5]})"
            )
    return problems


# --------------------------------------------------------------------------- report


def best(runs: Sequence[ChildRun], mode: str) -> ChildRun | None:
    """The fastest good run of ``mode``."""
    good = [r for r in runs if r.mode == mode and r.returncode == 0]
    return min(good, key=lambda r: r.wall_s) if good else None


def paired_ratios(runs: Sequence[ChildRun], mode: str) -> list[float]:
    """``mode`` wall / baseline wall within each round (runs next to each other in time)."""
    ratios = []
    for repeat in sorted({r.repeat for r in runs}):
        pair = {r.mode: r for r in runs if r.repeat == repeat and r.returncode == 0}
        if "baseline" in pair and mode in pair:
            ratios.append(pair[mode].wall_s / pair["baseline"].wall_s)
    return ratios


def loop_seconds(run: ChildRun) -> float | None:
    summary = run.detail.get("summary") or {}
    return summary.get("seconds")


def print_table(out: Report, runs: Sequence[ChildRun], rows: int, repeat: int) -> None:
    base = best(runs, "baseline")
    out(
        f"\n== {rows:,} rows, Parquet -> one PDF each + manifest.parquet; "
        f"best of {repeat} (wall time of the whole process)"
    )
    out(
        f"  {'':<30} {'wall s':>8} {'rows/s':>8} {'peak RSS':>9} {'CPU s':>7} "
        f"{'÷ base':>7} {'fill loop s':>11} {'loop ÷ base':>11}"
    )
    for mode in MODES:
        run = best(runs, mode)
        if run is None:
            if any(r.mode == mode for r in runs):
                out(f"  {LABELS[mode]:<30} FAILED (see the problems below)")
            continue
        ratio = run.wall_s / base.wall_s if base else None
        loop = loop_seconds(run)
        base_loop = loop_seconds(base) if base else None
        loop_ratio = loop / base_loop if loop and base_loop else None
        out(
            f"  {LABELS[mode]:<30} {run.wall_s:>8.2f} {rows / run.wall_s:>8,.0f} "
            f"{_mb(run.maxrss_kb):>9} {run.cpu_s:>7.1f} "
            f"{(f'{ratio:.2f}x' if ratio else '-'):>7} "
            f"{(f'{loop:.2f}' if loop else '-'):>11} "
            f"{(f'{loop_ratio:.2f}x' if loop_ratio else '-'):>11}"
        )
    if repeat > 1:
        out("  all runs, wall s: " + "; ".join(
            f"{LABELS[m]} " + ", ".join(f"{r.wall_s:.2f}" for r in runs if r.mode == m)
            for m in MODES if any(r.mode == m for r in runs)
        ))  # fmt: skip


def print_notes(out: Report, runs: Sequence[ChildRun], rows: int) -> None:
    base = best(runs, "baseline")
    direct = best(runs, "direct")
    dags = best(runs, "dags_test")
    floors = [r.parent_hwm_kb for r in runs if r.parent_hwm_kb]
    out(
        "  fill loop s: the batch's own timer (fill_rows, first row to manifest closed): "
        "the CLI's summary line (0.1 s steps), the operator's return value / XCom."
    )
    out(
        "  peak RSS: ru_maxrss of the child from os.wait4 (the largest process of its tree); "
        f"floor = this process's peak RSS, {_mb(max(floors) if floors else None)}."
    )
    base_loop = loop_seconds(base) if base else None
    if base and base_loop:
        out(
            f"\n== {LABELS['baseline']}: outside the fill loop {base.wall_s - base_loop:.2f} s "
            "(Python start, imports, Parquet footer, template load)"
        )
    if direct:
        _direct_notes(out, direct, base)
    if dags:
        _dags_test_notes(out, dags, base, rows)


def _direct_notes(out: Report, direct: ChildRun, base: ChildRun | None) -> None:
    d = direct.detail
    nan = float("nan")
    out(
        f"\n== {LABELS['direct']}: Python start + `import BatchFillOperator` "
        f"{d.get('import_s', nan):.2f} s, execute() {d.get('execute_s', nan):.2f} s "
        f"(fill loop {loop_seconds(direct) or nan:.2f} s); hook mode {d.get('mode')!r}; "
        f"its own VmHWM {_mb(d.get('vm_hwm_kb'))}"
    )
    if base:
        base_loop, loop = loop_seconds(base), loop_seconds(direct)
        loop_part = f" (fill loop {loop - base_loop:+.2f} s)" if loop and base_loop else ""
        out(
            f"  over the CLI: {direct.wall_s - base.wall_s:+.2f} s wall{loop_part}, "
            f"{direct.cpu_s - base.cpu_s:+.1f} s CPU, "
            f"{(direct.maxrss_kb - base.maxrss_kb) / 1024:+,.0f} MB peak RSS: the operator "
            "module imports Airflow's task SDK (the CLI never does), and the larger heap makes "
            "the fill loop's garbage collections dearer"
        )
    if {"born", "finished", "import_s", "execute_s"} <= set(d):
        loop = loop_seconds(direct) or 0.0
        parts = [
            ("Python start", d["born"] - direct.started_at),
            ("import fillpdf_provider.operators (Airflow's task SDK with it)", d["import_s"]),
            ("operator built, hook mode looked up", d.get("construct_s", 0.0)),
            ("execute() outside the fill loop (template load, summary)", d["execute_s"] - loop),
            ("fill loop", loop),
            ("interpreter exit (module teardown's garbage collection)",
             direct.ended_at - d["finished"]),
        ]  # fmt: skip
        out("  where the wall time goes:")
        for label, seconds in parts:
            out(f"    {seconds:>6.2f} s  {label}")
    if d.get("outside_task_runner_warning"):
        out("  (Airflow logs 'execute cannot be called outside of the Task Runner!': expected)")


def _dags_test_notes(out: Report, dags: ChildRun, base: ChildRun | None, rows: int) -> None:
    d = dags.detail
    ti = d.get("ti") or {}
    marks = d.get("log_marks") or {}
    loop = loop_seconds(dags)
    out(f"\n== {LABELS['dags_test']}: the whole command {dags.wall_s:.2f} s")
    if ti.get("duration_s") is not None:
        out(
            f"  task instance (metadata DB): state {ti.get('state')}, duration "
            f"{ti['duration_s']:.2f} s = {rows / ti['duration_s']:,.0f} rows/s"
            + (f", {ti['duration_s'] / base.wall_s:.2f}x the CLI's wall" if base else "")
        )
    if loop:
        out(
            f"  fill loop (XCom return value): {loop:.2f} s = {rows / loop:,.0f} rows/s"
            + (f", {loop / loop_seconds(base):.2f}x the CLI's loop" if base and loop_seconds(base)
               else "")
        )  # fmt: skip
    if {"task_starting", "task_started", "task_ended"} <= set(marks):
        parts = [
            ("`airflow` CLI start, imports, DAG file parsed and written to the DB, DAG run "
             "created", marks["task_starting"] - dags.started_at),
            ("dags test starts its in-process execution API (first task only)",
             marks["task_started"] - marks["task_starting"]),
            ("the task: template load, fill loop, XCom push",
             marks["task_ended"] - marks["task_started"]),
            ("DAG run marked done; interpreter exit (module teardown's garbage collection "
             "over Airflow's heap)", dags.ended_at - marks["task_ended"]),
        ]  # fmt: skip
        out("  where the wall time goes (log timestamps):")
        for label, seconds in parts:
            out(f"    {seconds:>6.2f} s  {label}")
        out(
            "  A scheduler's worker pays the imports once per process and has no in-process "
            "API to start; the task's own part is what scales with the rows."
        )
    if d.get("fonttools_log_lines"):
        out(
            f"  task log: {d['log_bytes'] / 1024:,.0f} KB, of which "
            f"{d['fonttools_log_lines']} lines are fontTools.subset INFO messages "
            "(Airflow logs INFO; the engine's font subsetting is chatty there)"
        )
    if d.get("fillpdf_connections"):
        out("  WARNING: the DB has a fillpdf_default connection; mode may not be embedded")


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    doc = __doc__ or "batch benchmark"
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--rows", type=int, default=20000, help="rows of the Parquet file (20000)")
    p.add_argument("--repeat", type=int, default=1, help="runs of each mode; the min is kept (1)")
    p.add_argument(
        "--warmup-rows",
        type=int,
        default=200,
        help="untimed run of the CLI and the operator first, on this many rows, to warm the "
        "page cache (200; 0 skips)",
    )
    p.add_argument(
        "--out-root",
        type=Path,
        help="folder the PDFs are written under (default: /dev/shm when it has room for them, "
        "else the temp folder); give a disk folder to include the file system's cost",
    )
    p.add_argument(
        "--skip-dags-test", action="store_true", help="leave out the `airflow dags test` mode"
    )
    p.add_argument("--strict", action="store_true", help="exit 1 when the 1.5x gate fails")
    p.add_argument(
        "--keep", type=Path, help="keep the temp folder (rows, logs, manifests) in this folder"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results file ('-' to write none)")
    p.add_argument("--json", type=Path, help="write every figure to this JSON file")
    p.add_argument("--make-rows", nargs=2, metavar=("PATH", "N"), help=argparse.SUPPRESS)
    p.add_argument("--read-manifests", nargs="+", metavar="PATH", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rows < 1 or args.repeat < 1 or args.warmup_rows < 0:
        p.error("--rows and --repeat must be at least 1, --warmup-rows at least 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.make_rows:
        return make_rows_child(args.make_rows[0], int(args.make_rows[1]))
    if args.read_manifests:
        return manifests_child(args.read_manifests)

    out = Report()
    report: dict[str, Any] = {"machine": machine_info(VERSION_DISTS)}
    report["args"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    m = report["machine"]
    out("batch benchmark")
    out(
        f"  python {m['python']} ({m['implementation']}), {m['cpu_count']} CPUs "
        f"({m['cpus_usable']} usable, load {m['load_avg_1m']}), "
        f"{m['memory_gb']} GB, {m['platform']}"
    )
    out("  " + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v))
    out(
        f"  settings: --rows {args.rows:,}, --repeat {args.repeat}, --warmup-rows "
        f"{args.warmup_rows}, form {FORM.relative_to(REPO_ROOT)}"
    )
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        tmp_name = tempfile.mkdtemp(prefix="batch-bench-", dir=args.keep)
        return _run(args, out, report, Path(tmp_name))
    with tempfile.TemporaryDirectory(prefix="batch-bench-") as tmp_name:
        return _run(args, out, report, Path(tmp_name))


def output_root(args: argparse.Namespace, tmp: Path) -> tuple[Path, str]:
    """Where the PDFs go, and why: ``--out-root``, else tmpfs if it has room, else ``tmp``."""
    if args.out_root:
        return args.out_root, "--out-root"
    shm = Path("/dev/shm")
    need = args.rows * BYTES_PER_PDF * 2 + 2**30
    if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > need:
        return shm, "tmpfs, so that disk writeback does not swamp the figures"
    return tmp, f"the temp folder: /dev/shm missing or under {need / 2**30:.1f} GB free"


def _run(args: argparse.Namespace, out: Report, report: dict[str, Any], tmp: Path) -> int:
    root, why = output_root(args, tmp)
    root.mkdir(parents=True, exist_ok=True)
    outputs = Path(tempfile.mkdtemp(prefix="batch-bench-out-", dir=root))
    report["output_root"] = str(root)
    out(f"  PDFs written under {root} ({why}); deleted after each run, then sync")
    try:
        return _measure(args, out, report, tmp, outputs)
    finally:
        shutil.rmtree(outputs, ignore_errors=True)


def _measure(
    args: argparse.Namespace, out: Report, report: dict[str, Any], tmp: Path, outputs: Path
) -> int:
    rows_path = tmp / "rows.parquet"
    progress(f"building {args.rows:,} rows")
    data = helper(["--make-rows", str(rows_path), str(args.rows)], "building the rows")
    report["data"] = data
    out(
        f"  data: {data['rows']:,} rows ({data['sample_rows']} sample rows of "
        f"{SAMPLE_ROWS.relative_to(REPO_ROOT)} cycled, email tagged +<id>, longest "
        f"{data['longest_email']} chars; plus an id column that fills no field), "
        f"{data['bytes'] / 1e6:.2f} MB Parquet, written in {data['seconds']:.2f} s"
    )
    bench = Bench(tmp, rows_path, outputs)
    modes = [m for m in MODES if not (m == "dags_test" and args.skip_dags_test)]
    if "dags_test" in modes:
        progress("airflow db migrate (untimed)")
        migrate_s = bench.prepare_dags_test(rows_path)
        report["db_migrate_s"] = migrate_s
        out(
            f"  airflow dags test: temp AIRFLOW_HOME, SQLite, `airflow db migrate` "
            f"{migrate_s:.1f} s (untimed)"
        )
    out(
        "  every child: AIRFLOW_* variables of this shell removed, "
        "AIRFLOW__CORE__LOAD_EXAMPLES=False, output to a log file; no fillpdf_default "
        "connection, so the operator runs the embedded engine"
    )

    if args.warmup_rows:
        warm = tmp / "warmup.parquet"
        helper(["--make-rows", str(warm), str(args.warmup_rows)], "building the warm-up rows")
        for mode in ("baseline", "direct"):
            progress(f"warm-up: {LABELS[mode]}, {args.warmup_rows} rows (untimed)")
            run = bench.run(mode, 0, warm, keep=False)
            if run.returncode != 0:
                out(f"\nERROR: warm-up {mode} exited {run.returncode}; log:")
                out(Path(run.log).read_text(errors="replace")[-3000:])
                return 2

    runs: list[ChildRun] = []
    for repeat in range(1, args.repeat + 1):
        # Every other round runs the modes in reverse, so that no mode always runs first.
        for mode in modes if repeat % 2 else modes[::-1]:
            progress(f"{LABELS[mode]}, run {repeat}/{args.repeat}")
            run = bench.run(mode, repeat, rows_path)
            progress(f"  {run.wall_s:.2f} s, exit {run.returncode}, {run.pdfs:,} PDFs")
            runs.append(run)

    kept = [r.manifest for r in runs if r.manifest]
    manifests = helper(["--read-manifests", *kept], "reading the manifests") if kept else {}
    problems = check_outputs(runs, manifests, args.rows)

    print_table(out, runs, args.rows, args.repeat)
    print_notes(out, runs, args.rows)

    base, direct, dags = (best(runs, m) for m in MODES)
    gate: dict[str, Any] = {"limit": GATE_RATIO}
    out("\n== Acceptance")
    if base and direct:
        gate["ratio"] = direct.wall_s / base.wall_s
        gate["passed"] = gate["ratio"] <= GATE_RATIO
        out(
            f"  BatchFillOperator.execute() / fillpdf batch, wall: {direct.wall_s:.2f} / "
            f"{base.wall_s:.2f} s = {gate['ratio']:.2f}x (limit {GATE_RATIO}x): "
            + ("PASS" if gate["passed"] else "FAIL")
        )
        out(
            f"  peak RSS: CLI {_mb(base.maxrss_kb)}, operator {_mb(direct.maxrss_kb)}"
            + (f", airflow dags test {_mb(dags.maxrss_kb)}" if dags else "")
        )
        pairs = paired_ratios(runs, "direct")
        if len(pairs) > 1:
            gate["paired_ratios"] = pairs
            out(
                "  (context) the same ratio per round, adjacent runs: "
                + ", ".join(f"{r:.2f}x" for r in pairs)
                + f"; median {statistics.median(pairs):.2f}x"
            )
    else:
        gate["passed"] = False
        out("  not measured: the baseline or the operator run failed")
    if dags and base:
        out(
            f"  (context) airflow dags test / fillpdf batch, wall: {dags.wall_s:.2f} / "
            f"{base.wall_s:.2f} s = {dags.wall_s / base.wall_s:.2f}x, Airflow start-up included"
        )
    report["gate"] = gate

    reference = next((manifests[r.manifest] for r in runs if r.mode == "baseline" and r.manifest),
                     None)  # fmt: skip
    distinct = reference["distinct_sha256"] if reference else 0
    out(
        f"\n  outputs: {len(runs)} runs x {args.rows:,} PDFs; manifests compared row by row "
        f"with the baseline's (row, file name, sha256; {distinct:,} distinct sha256 values)"
    )
    busiest = max(
        (r.other_cores_busy for r in runs if r.other_cores_busy is not None), default=None
    )
    report["other_cores_busy_max"] = busiest
    if busiest is not None and busiest > OTHER_LOAD_WARN:
        cores = report["machine"]["cpus_usable"] or report["machine"]["cpu_count"]
        out(
            f"  WARNING: other processes kept up to {busiest:.2f} of {cores} cores busy during a "
            "timed run; the figures may be understated. Rerun on a quiet machine."
        )
    if problems:
        out("  OUTPUTS DIFFER (the run is NOT valid):")
        for problem in problems:
            out("    " + problem)
    else:
        out("  every run: one PDF per row, identical manifests: VALID")

    report["runs"] = [{**asdict(r), "cpu_s": r.cpu_s} for r in runs]
    report["problems"] = problems
    report["valid"] = not problems
    if args.out and str(args.out) != "-":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(out.text())
        print(f"\nresults written to {args.out}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"JSON written to {args.json}")
    if args.keep:
        print(f"temp folder kept: {tmp}")
    if problems:
        return 1
    return 1 if args.strict and not gate.get("passed") else 0


if __name__ == "__main__":
    sys.exit(main())
