#!/usr/bin/env python3
"""The service benchmark: the HTTP API under load, against calling the engine directly.

Starts the real service (``fillpdf serve --workers 2``, SQLite in a temp data dir unless
``--database-url`` is given) with ``kits/servicekit.py``, makes an enterprise key with no
rate limit, converts a flat form once, and then, from this process (the server is a
subprocess), drives ``--concurrency`` concurrent keep-alive connections with httpx:

1. ``POST /v1/fill`` by ``conversion_id``: ``--fills`` requests after ``--warmup`` untimed ones.
2. ``GET /v1/account``: ``--account-reads`` requests after ``--warmup`` untimed ones.
3. Context: ``POST /v1/fill`` one request at a time (``--serial-fills``), unloaded latency.

Each reports requests/s, p50/p90/p99/max latency as the client sees it, the same latencies as
the server logs them (its access-log ``ms``), the CPU used by client and server, and errors
(any non-200 answer, or a 200 that is not a PDF / not an account). A run with errors is not
valid: the script prints the status codes and the server's log lines, and exits 1.

Then the engine alone: ``Template(bytes)`` compiled once from the converted PDF (downloaded by
its ``document_url``) and ``fill(values)`` with the same values, single thread, in this process.
The overhead lines divide the service's figures by the engine's.

Then, once the service is stopped (never both servers at once), the floor of the web stack:
``benchmarks/bare_app.py``, a FastAPI app with no database, auth or middleware whose
``POST /v1/fill`` parses the JSON body and returns the service's own filled PDF and whose
``GET /v1/account`` returns a dict of the same fields, under ``uvicorn.run`` with the keyword
arguments of ``fillpdf serve`` (cli.py ``_cmd_serve``: factory, host 127.0.0.1, the same
``--workers``, ``uvicorn_log_config``, no access log, no server header, the same graceful
shutdown). Phases 1 and 2 run against it with the same concurrency, warm-up, counts and
validity checks, and the report divides the service's requests/s by the bare app's (the goal
for fill by ``conversion_id`` is >= 0.5x) and puts the p50 latencies side by side.
``--skip-bare`` leaves it out.

Run it from the repository root (see benchmarks/README.md)::

    .venv/bin/python benchmarks/service_bench.py [--json out/service.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import Report, machine_info, progress  # noqa: E402

DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "service_bench.txt"
#: Requests per minute of the benchmark key: far above anything this machine can send. The
#: service gives an enterprise account without a limit a default one (keys.py,
#: ENTERPRISE_RATE_LIMIT, 6000/min), which a 2-core run passes in about 15 s.
RATE_LIMIT_PER_MINUTE = 100_000_000
#: What the benchmark key may do: enterprise, no reachable rate limit, pages for any run.
KEY_LIMITS: dict[str, Any] = {
    "pages_included": 100_000,
    "rate_limit_per_minute": RATE_LIMIT_PER_MINUTE,
    "max_pages_per_file": 100,
    "overage_rate_usd": 0.5,
    "hard_stop": False,
}
#: Warn when other processes kept more than this many cores busy during a timed part.
OTHER_LOAD_WARN = 0.15
#: The goal for fill by conversion id: service fills/s at least this share of the bare
#: FastAPI app's on the same uvicorn settings.
BARE_FILL_GOAL = 0.5
#: Client cores busy at which the load generator (one asyncio loop) is the bottleneck.
CLIENT_BOUND = 0.9
VERSION_DISTS = (
    "fastapi",
    "uvicorn",
    "httpx",
    "sqlalchemy",
    "starlette",
    "anyio",
    "uvloop",
    "httptools",
    "psycopg",
    "psycopg2-binary",
    "airflow-provider-fillpdf",
)

Check = Callable[[int, bytes], bool]


# --------------------------------------------------------------------------- output


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:297] + "..."


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _redact(url: str) -> str:
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparsable URL>"


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of an already sorted sequence."""
    if not sorted_values:
        return None
    rank = max(1, min(len(sorted_values), math.ceil(q / 100 * len(sorted_values))))
    return sorted_values[rank - 1]


def latency_summary(seconds: Sequence[float]) -> dict[str, float | None]:
    """p50/p90/p99/max/mean in milliseconds."""
    ordered = sorted(seconds)
    ms = [v * 1000 for v in ordered]
    return {
        "p50_ms": percentile(ms, 50),
        "p90_ms": percentile(ms, 90),
        "p99_ms": percentile(ms, 99),
        "max_ms": ms[-1] if ms else None,
        "mean_ms": statistics.fmean(ms) if ms else None,
    }


def _ms(value: float | None, width: int = 8) -> str:
    return f"{value:>{width}.2f}" if value is not None else f"{'-':>{width}}"


# --------------------------------------------------------------------------- CPU


class CpuMeter:
    """CPU seconds used by this process, by the server's process tree and by the machine."""

    def __init__(self, server_pid: int, postgres: bool = False) -> None:
        self.server_pid = server_pid
        self.postgres = postgres

    def database_seconds(self) -> float | None:
        """CPU of every ``postgres`` process on the machine (PostgreSQL runs only)."""
        if not self.postgres:
            return None
        try:
            import psutil

            total = 0.0
            for proc in psutil.process_iter(["name"]):
                if proc.info["name"] not in ("postgres", "postmaster"):
                    continue
                try:
                    times = proc.cpu_times()
                    total += times.user + times.system
                except psutil.Error:
                    pass
            return total
        except Exception:
            return None

    def server_seconds(self) -> float | None:
        try:
            import psutil

            root = psutil.Process(self.server_pid)
            total = 0.0
            for proc in [root, *root.children(recursive=True)]:
                try:
                    times = proc.cpu_times()
                    total += times.user + times.system
                except psutil.Error:
                    pass
            return total
        except Exception:
            return None

    @staticmethod
    def machine_seconds() -> float | None:
        """Busy CPU seconds of the whole machine, all processes (not idle, not iowait)."""
        try:
            import psutil

            times = psutil.cpu_times()
            return sum(times) - times.idle - getattr(times, "iowait", 0.0)
        except Exception:
            return None

    def snapshot(self) -> tuple[float, float | None, float | None, float | None]:
        return (
            time.process_time(),
            self.server_seconds(),
            self.database_seconds(),
            self.machine_seconds(),
        )


# --------------------------------------------------------------------------- load


@dataclass
class Sample:
    seconds: float
    status: int | str
    ok: bool
    body_head: bytes = b""


@dataclass
class Phase:
    """One measured load phase."""

    name: str
    method: str
    path: str
    concurrency: int
    requested: int
    warmup: int
    samples: list[Sample] = field(default_factory=list)
    warmup_samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0
    stopped_early: bool = False
    client_cpu_s: float | None = None
    server_cpu_s: float | None = None
    database_cpu_s: float | None = None
    other_cpu_s: float | None = None
    server_ms: list[float] = field(default_factory=list)
    log_lines: list[str] = field(default_factory=list)
    #: "service" or "bare" (the bare FastAPI app, which writes no access log).
    target: str = "service"

    @property
    def errors(self) -> list[Sample]:
        return [s for s in self.samples + self.warmup_samples if not s.ok]

    def figures(self) -> dict[str, Any]:
        good = [s.seconds for s in self.samples if s.ok]
        out: dict[str, Any] = {
            "name": self.name,
            "target": self.target,
            "request": f"{self.method} {self.path}",
            "concurrency": self.concurrency,
            "requested": self.requested,
            "completed": len(self.samples),
            "warmup": self.warmup,
            "wall_s": round(self.wall_s, 3),
            "stopped_early": self.stopped_early,
            "requests_per_s": len(good) / self.wall_s if self.wall_s > 0 else None,
            "errors": len(self.errors),
            "statuses": dict(Counter(str(s.status) for s in self.samples + self.warmup_samples)),
            "client_latency": latency_summary(good),
            "server_latency": latency_summary([v / 1000 for v in self.server_ms]),
            "server_log_requests": len(self.server_ms),
            "client_cpu_s": self.client_cpu_s,
            "server_cpu_s": self.server_cpu_s,
            "database_cpu_s": self.database_cpu_s,
            "other_cpu_s": self.other_cpu_s,
        }
        if self.wall_s > 0:
            for who in ("client", "server", "database", "other"):
                used = out[f"{who}_cpu_s"]
                out[f"{who}_cores_busy"] = used / self.wall_s if used is not None else None
        return out


async def _drive(
    client: Any,
    method: str,
    path: str,
    content: bytes | None,
    headers: dict[str, str],
    n: int,
    concurrency: int,
    check: Check,
    deadline: float,
) -> tuple[list[Sample], bool]:
    """``n`` requests over ``concurrency`` workers; the samples and whether time ran out."""
    import httpx

    samples: list[Sample] = []
    issued = 0
    out_of_time = False

    async def worker() -> None:
        nonlocal issued, out_of_time
        while issued < n:
            if time.perf_counter() > deadline:
                out_of_time = True
                return
            issued += 1
            started = time.perf_counter()
            try:
                response = await client.request(method, path, content=content, headers=headers)
                body = response.content
                elapsed = time.perf_counter() - started
                ok = response.status_code == 200 and check(response.status_code, body)
                samples.append(Sample(elapsed, response.status_code, ok, b"" if ok else body[:300]))
            except httpx.HTTPError as exc:
                elapsed = time.perf_counter() - started
                samples.append(Sample(elapsed, type(exc).__name__, False, str(exc).encode()[:300]))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return samples, out_of_time


def _server_request_ms(lines: Sequence[str], path: str) -> list[float]:
    """The ``ms`` of the server's access-log lines for ``path``."""
    found: list[float] = []
    for line in lines:
        if '"request"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("message") == "request" and entry.get("path") == path and "ms" in entry:
            found.append(float(entry["ms"]))
    return found


def run_phase(
    server: Any,
    key: str,
    phase: Phase,
    content: bytes | None,
    content_type: str | None,
    check: Check,
    max_seconds: float,
) -> Phase:
    """Warm up, then measure ``phase`` (fills in its samples, CPU and server-side times)."""
    import httpx

    headers = {"Authorization": f"Bearer {key}"}
    if content_type:
        headers["Content-Type"] = content_type
    meter = CpuMeter(server.process.pid, server.database_url.startswith("postgresql"))

    async def main() -> None:
        limits = httpx.Limits(
            max_connections=phase.concurrency, max_keepalive_connections=phase.concurrency
        )
        async with httpx.AsyncClient(
            base_url=server.base_url, timeout=120, limits=limits
        ) as client:
            if phase.warmup:
                phase.warmup_samples, _ = await _drive(
                    client,
                    phase.method,
                    phase.path,
                    content,
                    headers,
                    phase.warmup,
                    phase.concurrency,
                    check,
                    time.perf_counter() + max_seconds,
                )
            await asyncio.sleep(0.2)  # let the warm-up's log lines land before we mark
            mark = len(server.log_lines())
            client0, server0, db0, machine0 = meter.snapshot()
            started = time.perf_counter()
            phase.samples, phase.stopped_early = await _drive(
                client,
                phase.method,
                phase.path,
                content,
                headers,
                phase.requested,
                phase.concurrency,
                check,
                started + max_seconds,
            )
            phase.wall_s = time.perf_counter() - started
            client1, server1, db1, machine1 = meter.snapshot()
            phase.client_cpu_s = client1 - client0
            if db0 is not None and db1 is not None:
                phase.database_cpu_s = db1 - db0
            if server0 is not None and server1 is not None:
                phase.server_cpu_s = server1 - server0
                if machine0 is not None and machine1 is not None:
                    known = phase.client_cpu_s + phase.server_cpu_s + (phase.database_cpu_s or 0)
                    phase.other_cpu_s = max(0.0, machine1 - machine0 - known)
            await asyncio.sleep(0.3)
            phase.log_lines = server.log_lines()[mark:]
            phase.server_ms = _server_request_ms(phase.log_lines, phase.path)

    asyncio.run(main())
    return phase


# --------------------------------------------------------------------------- engine


def fill_values(schema: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Values for every writable field: strings for text-like fields, booleans for checkboxes."""
    values: dict[str, Any] = {}
    for number, entry in enumerate(schema):
        if entry.get("read_only"):
            continue
        name, kind = entry["name"], entry["type"]
        if kind == "checkbox":
            values[name] = True
        elif kind == "date":
            values[name] = "2024-05-17"
        elif kind in ("radio", "choice"):
            if entry.get("options"):
                values[name] = entry["options"][0]
        elif kind == "text":
            text = f"{entry.get('label') or name} value {number + 1}"
            limit = entry.get("max_length")
            values[name] = text[:limit] if limit else text
    return values


def engine_direct(pdf: bytes, values: dict[str, Any], n: int, warmup: int) -> dict[str, Any]:
    """``Template(pdf)`` once, then ``fill(values)`` ``n`` times on this thread."""
    from fillpdf_provider.engine.filler import Template

    started = time.perf_counter()
    template = Template(pdf)
    compile_s = time.perf_counter() - started
    for _ in range(warmup):
        template.fill(values)
    times: list[float] = []
    cpu0 = time.process_time()
    machine0 = CpuMeter.machine_seconds()
    total0 = time.perf_counter()
    output = b""
    for _ in range(n):
        t0 = time.perf_counter()
        output = template.fill(values)
        times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - total0
    cpu = time.process_time() - cpu0
    machine1 = CpuMeter.machine_seconds()
    other = None
    if machine0 is not None and machine1 is not None and wall > 0:
        other = max(0.0, machine1 - machine0 - cpu) / wall
    lat = latency_summary(times)
    return {
        "fills": n,
        "warmup": warmup,
        "compile_ms": compile_s * 1000,
        "wall_s": wall,
        "cpu_s": cpu,
        "other_cores_busy": other,
        "fills_per_s": n / wall if wall > 0 else None,
        "median_ms": lat["p50_ms"],
        "p99_ms": lat["p99_ms"],
        "mean_ms": lat["mean_ms"],
        "output_bytes": len(output),
        "_output": output,
    }


# --------------------------------------------------------------------------- bare FastAPI app

BARE_APP = "benchmarks.bare_app:create_app"
#: Runs ``uvicorn.run(BARE_APP, **settings)`` with the settings as JSON in ``argv[1]``.
BARE_RUNNER = (
    "import json, sys, uvicorn; from fillpdf_provider.service.serving import uvicorn_options; "
    "uvicorn.run({app!r}, **uvicorn_options(**json.loads(sys.argv[1])))"
)


def serve_uvicorn_settings(workers: int, port: int) -> dict[str, Any]:
    """What ``fillpdf serve --host 127.0.0.1 --workers N`` passes to
    ``service.serving.uvicorn_options`` (the CLI's own defaults included), so the bare app
    runs on the very web stack settings the service runs on."""
    from fillpdf_provider.cli import build_parser

    serve = build_parser().parse_args(
        ["serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    )
    return {
        "host": serve.host,
        "port": port,
        "workers": workers,
        "log_level": serve.log_level,
        "grace": serve.grace,
    }


@dataclass
class BareServer:
    """The bare app under uvicorn in a subprocess, with what ``run_phase`` needs of a server."""

    base_url: str
    process: subprocess.Popen[bytes]
    log_file: Path
    database_url: str = ""

    def log_lines(self) -> list[str]:
        return self.log_file.read_text(encoding="utf-8", errors="replace").splitlines()

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        from kits.servicekit import stop_process

        stop_process(self.process)


def start_bare(workdir: Path, pdf: bytes, settings: dict[str, Any]) -> BareServer:
    """Start the bare app with ``settings`` (port included), serving ``pdf``; wait until it
    answers ``GET /v1/account``."""
    from benchmarks.bare_app import PDF_VARIABLE
    from kits.servicekit import wait_until_answering

    workdir.mkdir(parents=True, exist_ok=True)
    pdf_file = workdir / "bare-fill.pdf"
    pdf_file.write_bytes(pdf)
    log_file = workdir / "bare.log"
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, PDF_VARIABLE: str(pdf_file)}
    command = [sys.executable, "-c", BARE_RUNNER.format(app=BARE_APP), json.dumps(settings)]
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT
        )
    server = BareServer(f"http://{settings['host']}:{settings['port']}", process, log_file)
    wait_until_answering(server, process, "/v1/account", "the bare app")
    return server


# --------------------------------------------------------------------------- report


def print_phase(out: Report, phase: Phase, figures: dict[str, Any]) -> None:
    c, s = figures["client_latency"], figures["server_latency"]
    rate = figures["requests_per_s"]
    who = "bare FastAPI app: " if phase.target == "bare" else ""
    out(
        f"\n== {who}{figures['request']}: {figures['completed']:,} requests, "
        f"{phase.concurrency} concurrent, after {phase.warmup} warm-up"
    )
    out(
        f"  {rate:,.1f} requests/s over {figures['wall_s']:.2f} s"
        if rate is not None
        else "  no timed requests"
    )
    out(f"  {'latency ms':<32} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8} {'mean':>8}")
    out(
        f"  {'client (request sent -> body read)':<32} {_ms(c['p50_ms'])} {_ms(c['p90_ms'])} "
        f"{_ms(c['p99_ms'])} {_ms(c['max_ms'])} {_ms(c['mean_ms'])}"
    )
    if phase.target != "bare":  # the bare app has no middleware to write an access log
        out(
            f"  {'server access log (ms field)':<32} {_ms(s['p50_ms'])} {_ms(s['p90_ms'])} "
            f"{_ms(s['p99_ms'])} {_ms(s['max_ms'])} {_ms(s['mean_ms'])}"
        )
    if phase.target != "bare" and figures["server_log_requests"] != figures["completed"]:
        out(
            f"  (server log has {figures['server_log_requests']} lines for "
            f"{figures['completed']} requests)"
        )
    cpu_parts = []
    for who in ("client", "server", "database", "other"):
        busy = figures.get(f"{who}_cores_busy")
        if busy is not None:
            label = {"other": "other processes", "database": "all postgres processes"}.get(who, who)
            cpu_parts.append(f"{label} {figures[f'{who}_cpu_s']:.1f} s ({busy:.2f} cores)")
    if cpu_parts:
        out("  CPU while measuring: " + ", ".join(cpu_parts))
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(figures["statuses"].items()))
    out(f"  errors: {figures['errors']} (statuses incl. warm-up: {statuses})")
    if phase.stopped_early:
        out(f"  STOPPED at the time limit: {figures['completed']} of {phase.requested} requests")


def print_errors(out: Report, phases: Sequence[Phase], server: Any) -> None:
    """What went wrong: status codes, bodies and the server's own error lines."""
    out("\n== Errors (the run is NOT valid)")
    for phase in phases:
        if not phase.errors:
            continue
        by_status = Counter(str(s.status) for s in phase.errors)
        out(f"  {phase.name}: {dict(by_status)}")
        shown: set[str] = set()
        for sample in phase.errors:
            key = str(sample.status)
            if key in shown:
                continue
            shown.add(key)
            out(f"    {key}: {sample.body_head.decode('utf-8', 'replace')!r}")
    try:
        lines = server.log_lines()
    except Exception as exc:
        out(f"  (cannot read the server log: {_short(exc)})")
        return
    problems = [
        line for line in lines if '"level": "error"' in line or '"level": "warning"' in line
    ]
    refused: Counter[str] = Counter()
    first_refused: list[str] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("message") == "request" and entry.get("status") != 200:
            refused[f"{entry.get('method')} {entry.get('path')} -> {entry.get('status')}"] += 1
            if len(first_refused) < 5:
                first_refused.append(line)
    out(
        f"  server log: {len(lines)} lines, {len(problems)} at warning/error level, "
        f"{sum(refused.values())} non-200 access lines {dict(refused)}"
    )
    if problems:
        out("  warning/error lines (last 15):")
        for line in problems[-15:]:
            out("    " + line[:600])
    if first_refused:
        out("  first non-200 access lines:")
        for line in first_refused:
            out("    " + line[:400])


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def compare_with_bare(
    out: Report,
    service: dict[str, dict[str, Any]],
    bare: dict[str, dict[str, Any]],
    settings: dict[str, Any],
    sizes: dict[str, int | None],
    error: str | None,
) -> dict[str, Any]:
    """The report section and JSON figures: the service's requests/s as a share of the bare
    app's, and the p50 latencies of both."""
    out("\n== Service against a bare FastAPI endpoint (same uvicorn settings)")
    from fillpdf_provider.service.serving import uvicorn_options

    options = uvicorn_options(**settings) if settings else {}
    shown = {
        k: (v.__name__ if isinstance(v, type) else v)
        for k, v in options.items()
        if k not in ("port", "log_config")
    }
    level = settings.get("log_level", "?")
    out(
        "  bare: benchmarks/bare_app.py (no database, auth or middleware), uvicorn.run("
        + ", ".join(f"{k}={v!r}" for k, v in shown.items())
        + f", log_config=uvicorn_log_config({level!r})), the options `fillpdf serve` uses "
        "(service.serving.uvicorn_options), run after the service stopped"
    )
    result: dict[str, Any] = {
        "uvicorn": {**shown, "log_config": f"uvicorn_log_config({level!r})"},
        "error": error,
        "phases": bare,
        "fill_goal": BARE_FILL_GOAL,
        "pdf_bytes": sizes.get("pdf"),
        "account_bytes": {
            "service": sizes.get("service_account"),
            "bare": sizes.get("bare_account"),
        },
    }
    if error:
        out(f"  ERROR: {error}")
    for name, label, unit in (
        ("fill", "fill by conversion id", "fills/s"),
        ("account", "account reads", "requests/s"),
    ):
        ours = (service.get(name) or {}).get("requests_per_s")
        floor = (bare.get(name) or {}).get("requests_per_s")
        ratio = _ratio(ours, floor)
        result[f"{name}_ratio"] = ratio
        result[f"{name}_p50_ms"] = {
            "service": (service.get(name) or {}).get("client_latency", {}).get("p50_ms"),
            "bare": (bare.get(name) or {}).get("client_latency", {}).get("p50_ms"),
        }
        if ratio is None:
            out(f"  {label}: no ratio (service {ours}, bare {floor} {unit})")
            continue
        goal = ""
        if name == "fill":
            met = result["fill_goal_met"] = ratio >= BARE_FILL_GOAL
            goal = f" (goal >= {BARE_FILL_GOAL}x: {'met' if met else 'NOT met'})"
        out(f"  {label}: service / bare {unit} = {ours:,.1f} / {floor:,.1f} = {ratio:.2f}x{goal}")
    out(f"  {'p50 ms (client side)':<24} {'service':>9} {'bare':>9}")
    for name, request in (("fill", "POST /v1/fill"), ("account", "GET /v1/account")):
        p50 = result[f"{name}_p50_ms"]
        out(f"  {request:<24} {_ms(p50['service'], 9)} {_ms(p50['bare'], 9)}")
    account = result["account_bytes"]
    out(
        f"  answers: the same {sizes.get('pdf') or 0:,}-byte PDF from both; account JSON "
        f"service {account['service']} bytes, bare {account['bare']} bytes"
    )
    # One asyncio loop drives the load: near a whole core, it and not the bare app sets the pace
    capped = [n for n, f in bare.items() if (f.get("client_cores_busy") or 0) >= CLIENT_BOUND]
    result["bare_client_bound"] = capped
    if capped:
        out(
            f"  NOTE: the client used >= {CLIENT_BOUND} core during bare {', '.join(capped)}: "
            "there the client, not the web stack, set the pace, so the bare rate is a lower "
            "bound and the ratio above flatters the service"
        )
    return result


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    doc = __doc__ or "service benchmark"
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--workers", type=int, default=2, help="server processes (default 2)")
    p.add_argument(
        "--database-url",
        help="SQLAlchemy URL of the service database, e.g. postgresql+psycopg://... "
        "(default: SQLite in the temp data dir)",
    )
    p.add_argument("--concurrency", type=int, default=8, help="concurrent connections (8)")
    p.add_argument("--fills", type=int, default=5000, help="timed POST /v1/fill (5000)")
    p.add_argument("--account-reads", type=int, default=12000, help="timed GET /v1/account (12000)")
    p.add_argument(
        "--serial-fills",
        type=int,
        default=500,
        help="timed POST /v1/fill one at a time, for unloaded latency (500; 0 skips)",
    )
    p.add_argument("--warmup", type=int, default=100, help="untimed requests per phase (100)")
    p.add_argument("--engine-fills", type=int, default=20000, help="timed engine fills (20000)")
    p.add_argument("--engine-warmup", type=int, default=50, help="untimed engine fills (50)")
    p.add_argument("--pages", type=int, default=1, help="pages of the flat form (1)")
    p.add_argument("--max-seconds", type=float, default=120.0, help="time limit per phase (120 s)")
    p.add_argument(
        "--sweep-interval",
        type=float,
        default=60.0,
        help="server's expiry sweep interval in s (60, the service default; the test "
        "harness uses 0.5)",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results file ('-' to write none)")
    p.add_argument("--json", type=Path, help="write every figure to this JSON file")
    p.add_argument(
        "--skip-bare",
        action="store_true",
        help="leave out the bare FastAPI app on the same uvicorn settings (quicker)",
    )
    args = p.parse_args(argv)
    for name in ("workers", "concurrency", "pages"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    for name in ("fills", "account_reads", "engine_fills"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out = Report()
    report: dict[str, Any] = {"machine": machine_info(VERSION_DISTS)}
    report["args"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    if args.database_url:
        report["args"]["database_url"] = _redact(args.database_url)
    m = report["machine"]
    out("service benchmark")
    out(
        f"  python {m['python']} ({m['implementation']}), {m['cpu_count']} CPUs "
        f"({m['cpus_usable']} usable, load {m['load_avg_1m']}), "
        f"{m['memory_gb']} GB, {m['platform']}"
    )
    out("  " + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v))
    missing = [k for k, v in m["versions"].items() if not v]
    if missing:
        out(f"  not installed: {', '.join(missing)}")
    db_label = _redact(args.database_url) if args.database_url else "SQLite (temp data dir)"
    out(
        f"  settings: --workers {args.workers}, database {db_label}, concurrency "
        f"{args.concurrency}, fills {args.fills:,}, account reads {args.account_reads:,}, "
        f"serial fills {args.serial_fills}, warm-up {args.warmup}/phase, engine fills "
        f"{args.engine_fills:,}, form pages {args.pages}, sweep interval {args.sweep_interval} s, "
        f"bare FastAPI comparison {'skipped' if args.skip_bare else 'after the service'}"
    )
    cores = m["cpus_usable"] or m["cpu_count"]
    out(
        f"  NOTE: client (this process, one asyncio loop), {args.workers} server workers and "
        f"the engine-direct run share the same {cores} CPU cores; the client's CPU is taken "
        "from the server's."
    )

    from kits.servicekit import start_server

    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="service-bench-") as tmp:
        progress(f"starting fillpdf serve --workers {args.workers}")
        try:
            server = start_server(
                Path(tmp) / "data",
                args.database_url,
                workers=args.workers,
                # a production server: on the system clock, not the test kit's movable one
                env={"FILLPDF_SWEEP_INTERVAL": str(args.sweep_interval), "FILLPDF_CLOCK_FILE": ""},
            )
        except Exception as exc:
            out(f"\nERROR: the server did not start: {_short(exc)}")
            return 2
        try:
            return _run(args, out, report, server, phases, Path(tmp))
        except Exception as exc:
            out(f"\nERROR: {_short(exc)}")
            traceback.print_exc()
            out("  server log, last 30 lines:")
            for line in server.log_lines()[-30:]:
                out("    " + line[:400])
            return 2
        finally:
            server.stop()


def _run(
    args: argparse.Namespace,
    out: Report,
    report: dict[str, Any],
    server: Any,
    phases: list[Phase],
    workdir: Path,
) -> int:
    import httpx

    from kits.servicekit import flat_form

    key = server.create_key("enterprise", **KEY_LIMITS)

    # ---- one conversion, its schema, its PDF
    progress("converting the flat form")
    form = flat_form(args.pages)
    with server.client(key) as client:
        started = time.perf_counter()
        converted = client.post(
            "/v1/convert", files={"file": ("bench-form.pdf", form, "application/pdf")}
        )
        convert_s = time.perf_counter() - started
        if converted.status_code != 200:
            raise RuntimeError(f"POST /v1/convert: {converted.status_code} {converted.text[:300]}")
        conversion_id = converted.json()["conversion_id"]
        again = client.get(f"/v1/conversions/{conversion_id}")
        if again.status_code != 200:
            raise RuntimeError(f"GET /v1/conversions: {again.status_code} {again.text[:300]}")
        body = again.json()
        account = client.get("/v1/account")
        if account.status_code != 200:
            raise RuntimeError(f"GET /v1/account: {account.status_code} {account.text[:300]}")
        limit_header = account.headers.get("X-RateLimit-Limit")
        plan = account.json()
        account_bytes = len(account.content)
    out(
        f"  key: {plan.get('plan')} plan, rate limit asked {RATE_LIMIT_PER_MINUTE:,}/min, "
        f"account says {plan.get('rate_limit_per_minute')}, X-RateLimit-Limit {limit_header}"
    )
    report["key"] = {
        "limits_asked": KEY_LIMITS,
        "account": plan,
        "x_ratelimit_limit": limit_header,
    }
    document = httpx.get(body["document_url"], timeout=60)
    if document.status_code != 200 or not document.content.startswith(b"%PDF-"):
        raise RuntimeError(f"GET document_url: {document.status_code}")
    schema = body["schema"]
    values = fill_values(schema)
    kinds = Counter(entry["type"] for entry in schema)
    fill_body = json.dumps({"conversion_id": conversion_id, "values": values}).encode()
    out(
        f"  form: flat_form({args.pages}) {len(form) / 1024:.1f} KB, converted in "
        f"{convert_s:.2f} s to {len(document.content) / 1024:.1f} KB with {len(schema)} fields "
        f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}); fill body "
        f"{len(fill_body)} bytes, {len(values)} values"
    )
    report["form"] = {
        "flat_pages": args.pages,
        "flat_bytes": len(form),
        "converted_bytes": len(document.content),
        "convert_s": round(convert_s, 3),
        "fields": dict(kinds),
        "values": values,
        "fill_body_bytes": len(fill_body),
    }

    # ---- the engine alone (server idle)
    progress(f"engine direct: {args.engine_fills} fills")
    engine = engine_direct(document.content, values, args.engine_fills, args.engine_warmup)
    engine_output = engine.pop("_output")
    report["engine"] = engine

    # ---- load phases
    def is_pdf(status: int, content: bytes) -> bool:
        return content.startswith(b"%PDF-")

    def is_account(status: int, content: bytes) -> bool:
        return b'"plan":"enterprise"' in content.replace(b" ", b"")

    plan: list[tuple[Phase, bytes | None, str | None, Check]] = [
        (
            Phase("fill", "POST", "/v1/fill", args.concurrency, args.fills, args.warmup),
            fill_body,
            "application/json",
            is_pdf,
        ),
        (
            Phase(
                "account", "GET", "/v1/account", args.concurrency, args.account_reads, args.warmup
            ),
            None,
            None,
            is_account,
        ),
    ]
    if args.serial_fills:
        plan.append(
            (
                Phase(
                    "fill_serial",
                    "POST",
                    "/v1/fill",
                    1,
                    args.serial_fills,
                    min(args.warmup, 20),
                ),
                fill_body,
                "application/json",
                is_pdf,
            )
        )
    for phase, content, content_type, check in plan:
        progress(
            f"{phase.method} {phase.path}: {phase.warmup} warm-up + {phase.requested} timed, "
            f"{phase.concurrency} concurrent"
        )
        phases.append(run_phase(server, key, phase, content, content_type, check, args.max_seconds))
        if not server.alive():
            out(f"\nERROR: the server exited during {phase.name} (code {server.process.poll()})")
            break

    figures = {phase.name: phase.figures() for phase in phases}
    report["phases"] = figures
    for phase in phases:
        print_phase(out, phase, figures[phase.name])

    # ---- does the service return what the engine returns?
    same: bool | None = None
    with server.client(key) as client:
        response = client.post(
            "/v1/fill", content=fill_body, headers={"Content-Type": "application/json"}
        )
        if response.status_code == 200:
            same = response.content == engine_output
            report["service_output_bytes"] = len(response.content)
    report["service_output_equals_engine"] = same
    # the bare app answers with the service's own PDF (the engine's if the service failed)
    service_pdf = response.content if same is not None else engine_output

    # ---- the bare FastAPI app on the same uvicorn settings, after the service has stopped
    bare_phases: list[Phase] = []
    bare: BareServer | None = None
    bare_error: str | None = None
    bare_settings: dict[str, Any] | None = None
    bare_account_bytes: int | None = None
    if not args.skip_bare:
        from kits.servicekit import free_port

        server.stop()  # never both servers at once: they would share the cores
        bare_settings = serve_uvicorn_settings(args.workers, free_port())
        progress(f"starting the bare FastAPI app, {args.workers} workers")
        try:
            bare = start_bare(workdir / "bare", service_pdf, bare_settings)
            bare_account_bytes = len(httpx.get(f"{bare.base_url}/v1/account").content)
            for phase, content, content_type, check in plan[:2]:  # fill and account
                twin = Phase(
                    phase.name,
                    phase.method,
                    phase.path,
                    phase.concurrency,
                    phase.requested,
                    phase.warmup,
                    target="bare",
                )
                progress(
                    f"bare {twin.method} {twin.path}: {twin.warmup} warm-up + {twin.requested} "
                    f"timed, {twin.concurrency} concurrent"
                )
                bare_phases.append(
                    run_phase(bare, key, twin, content, content_type, check, args.max_seconds)
                )
                if not bare.alive():
                    bare_error = f"the bare app exited during {twin.name} ({bare.process.poll()})"
                    break
        except Exception as exc:
            bare_error = _short(exc)
        finally:
            if bare is not None:
                bare.stop()

    out(
        f"\n== Engine direct: Template(converted PDF) compiled once "
        f"({engine['compile_ms']:.1f} ms), fill(values) x {engine['fills']:,}, one thread, "
        "this process, server idle"
    )
    out(
        f"  {engine['fills_per_s']:,.1f} fills/s, per fill median {engine['median_ms']:.3f} ms, "
        f"p99 {engine['p99_ms']:.3f} ms, mean {engine['mean_ms']:.3f} ms; "
        f"output {engine['output_bytes']:,} bytes"
    )
    other = engine["other_cores_busy"]
    out(
        f"  CPU: {engine['cpu_s']:.2f} s over {engine['wall_s']:.2f} s wall"
        + (f"; other processes {other:.2f} cores" if other is not None else "")
    )
    if same is not None:
        out(
            "  the service's answer to the same fill is "
            + ("byte-identical to the engine's" if same else "NOT byte-identical to the engine's")
            + f" ({report.get('service_output_bytes', 0):,} bytes)"
        )

    # ---- overhead
    overhead: dict[str, Any] = {}
    cores = report["machine"]["cpus_usable"] or report["machine"]["cpu_count"]
    fill = figures.get("fill")
    median = engine["median_ms"]
    out("\n== Service overhead over the engine (same form, same values)")
    if fill and fill["requests_per_s"] and median:
        p50 = fill["client_latency"]["p50_ms"]
        overhead["p50_over_engine_median"] = p50 / median
        overhead["engine_rate_over_service_rate"] = engine["fills_per_s"] / fill["requests_per_s"]
        out(
            f"  latency: service fill p50 ({args.concurrency} concurrent, {args.workers} workers) "
            f"/ engine median per fill = {p50:.2f} / {median:.3f} ms = "
            f"{overhead['p50_over_engine_median']:.1f}x"
        )
        out(
            f"  throughput: engine fills/s (1 thread) / service fills/s ({args.workers} workers, "
            f"{args.concurrency} concurrent) = {engine['fills_per_s']:,.1f} / "
            f"{fill['requests_per_s']:,.1f} = {overhead['engine_rate_over_service_rate']:.2f}x"
        )
        server_p50 = fill["server_latency"]["p50_ms"]
        if server_p50:
            overhead["server_p50_over_engine_median"] = server_p50 / median
            out(
                f"  (context) server-side fill p50 from its access log / engine median = "
                f"{server_p50:.2f} / {median:.3f} ms = "
                f"{overhead['server_p50_over_engine_median']:.1f}x"
            )
    serial = figures.get("fill_serial")
    if serial and serial["requests_per_s"] and median:
        p50 = serial["client_latency"]["p50_ms"]
        overhead["serial_p50_over_engine_median"] = p50 / median
        out(
            f"  (context) unloaded: service fill p50, one request at a time / engine median = "
            f"{p50:.2f} / {median:.3f} ms = {overhead['serial_p50_over_engine_median']:.1f}x"
        )
    out(
        f"  Client, server and engine run share {cores} cores; with "
        f"{args.concurrency} requests in flight the p50 includes queueing behind other requests."
    )
    report["overhead"] = overhead

    # ---- against the bare FastAPI app
    bare_figures = {phase.name: phase.figures() for phase in bare_phases}
    for phase in bare_phases:
        print_phase(out, phase, bare_figures[phase.name])
    if args.skip_bare:
        report["bare"] = None
    else:
        report["bare"] = compare_with_bare(
            out,
            figures,
            bare_figures,
            bare_settings or {},
            {
                "pdf": len(service_pdf),
                "service_account": account_bytes,
                "bare_account": bare_account_bytes,
            },
            bare_error,
        )

    # ---- other load on the machine (another job's CPU is CPU the service did not get)
    others = [f.get("other_cores_busy") for f in [*figures.values(), *bare_figures.values()]]
    others.append(engine.get("other_cores_busy"))
    busiest = max((o for o in others if o is not None), default=None)
    report["other_cores_busy_max"] = busiest
    if busiest is not None and busiest > OTHER_LOAD_WARN:
        out(
            f"\n  WARNING: other processes used up to {busiest:.2f} of {cores} cores during the "
            "run; the figures above are understated. Rerun on a quiet machine."
        )

    # ---- validity
    errors = sum(len(p.errors) for p in [*phases, *bare_phases])
    short = [p.name for p in phases if p.stopped_early]
    short += [f"bare {p.name}" for p in bare_phases if p.stopped_early]
    bare_complete = args.skip_bare or (bare_error is None and len(bare_phases) == 2)
    valid = errors == 0 and not short and len(phases) == len(plan) and bare_complete
    report["errors"] = errors
    report["valid"] = valid
    if any(p.errors for p in phases) or len(phases) != len(plan):
        print_errors(out, phases, server)
    if bare is not None and any(p.errors for p in bare_phases):
        out("\n  (below: the bare FastAPI app's errors and log)")
        print_errors(out, bare_phases, bare)
    if not bare_complete:
        out(f"\n  the bare FastAPI comparison did not complete: {bare_error or 'phases missing'}")
    if short:
        out(f"\n  phases stopped at --max-seconds {args.max_seconds}: {', '.join(short)}")
    out(
        f"\n  run {'VALID' if valid else 'NOT VALID'}: {errors} errors "
        "(any non-200, or a 200 without a PDF / account body)"
    )

    if args.out and str(args.out) != "-":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(out.text())
        print(f"\nresults written to {args.out}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"JSON written to {args.json}")
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
