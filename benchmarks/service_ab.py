#!/usr/bin/env python3
"""The service of this checkout against another one and against a bare FastAPI endpoint,
on this machine, in alternating rounds.

Throughput on a shared 2-core machine drifts by a third from one minute to the next, so a
figure from another day says little about a change. This starts ``fillpdf serve
--workers N`` from the baseline's source, from this checkout, and ``benchmarks/bare_app.py``
on the same uvicorn settings, in turn, ``--rounds`` times, and drives each with the same
load: ``POST /v1/fill`` by conversion id or ``GET /v1/account``, 8 concurrent connections;
then again for each count of ``--workers``. ``--load httpx`` (the default) sends it with
httpx, as a Python client does, whose own cost per request bounds the rate; ``--load raw``
writes the same requests on bare keep-alive sockets, which cost the client next to nothing,
so the ratios show what each server itself can answer. It prints each round (requests/s, p50 and p99
latency) and the ratios of the medians: this checkout / baseline, this checkout / bare, and
p99 this / bare, and a table of them at the end. Make a baseline with ``git worktree``::

    git worktree add /tmp/baseline <commit>
    .venv/bin/python benchmarks/service_ab.py --baseline /tmp/baseline [--rounds 3] \
        [--workers 1,2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import Report, machine_info  # noqa: E402
from benchmarks.service_bench import serve_uvicorn_settings, start_bare  # noqa: E402
from fillpdf_provider.service import keys  # noqa: E402
from fillpdf_provider.service.db import create_schema, make_engine  # noqa: E402
from kits.servicekit import flat_form, free_port  # noqa: E402

LIMITS = {
    "pages_included": 100_000,
    "rate_limit_per_minute": 100_000_000,
    "max_pages_per_file": 100,
    "overage_rate_usd": 0.5,
    "hard_stop": False,
}
CONCURRENCY = 8


def _serve(
    source: Path | None, data: Path, port: int, log: Path, workers: int
) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    if source is not None:  # the baseline's package ahead of the installed one
        env["PYTHONPATH"] = str(source / "plugins")
    command = [
        sys.executable, "-m", "fillpdf_provider.cli", "serve", "--host", "127.0.0.1",
        "--port", str(port), "--data-dir", str(data), "--workers", str(workers),
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)


@dataclass
class Round:
    rate: float
    """Requests per second."""
    p50_ms: float
    p99_ms: float
    pdf: bytes = b""
    """A filled PDF the server answered (fill rounds), for the bare app to return."""


def one_round(
    source: Path | None, what: str, requests: int, workers: int, load: str = "httpx"
) -> Round:
    """One fresh server built from ``source`` (None: this checkout) under load."""
    with tempfile.TemporaryDirectory() as folder:
        data, port = Path(folder) / "data", free_port()
        server = _serve(source, data, port, Path(folder) / "server.log", workers)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{base}/v1/openapi.json", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            engine = make_engine(f"sqlite:///{data / 'fillpdf.db'}")
            create_schema(engine)
            now = time.time()
            account = keys.create_account(engine, "enterprise", now, enterprise=LIMITS)
            headers = {"Authorization": f"Bearer {keys.create_key(engine, account, now)[1]}"}
            converted = httpx.post(
                f"{base}/v1/convert",
                files={"file": ("f.pdf", flat_form(1))},
                headers=headers,
                timeout=60,
            ).json()
            body = {
                "conversion_id": converted["conversion_id"],
                "values": {f["name"]: "Ada" for f in converted["schema"] if f["type"] == "text"},
            }
            return asyncio.run(DRIVERS[load](base, headers, what, body, requests))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)


def bare_round(what: str, requests: int, pdf: bytes, workers: int, load: str = "httpx") -> Round:
    """The bare app (no database, auth or middleware) answering ``pdf`` under the same load."""
    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        bare = start_bare(Path(folder), pdf, serve_uvicorn_settings(workers, port))
        try:
            drive = DRIVERS[load]
            return asyncio.run(drive(bare.base_url, {}, what, {"values": {}}, requests))
        finally:
            bare.stop()


Sender = Callable[[int, list[float] | None], Awaitable[bytes]]
"""Sends ``count`` requests one after another, each latency added to the list where one is
given; the last answer's body."""


async def _load(send: Sender, what: str, requests: int) -> Round:
    """``CONCURRENCY`` senders at once, after a warm-up: the round's rate and latencies."""
    await asyncio.gather(*[send(20, None) for _ in range(CONCURRENCY)])
    latencies: list[float] = []
    started = time.perf_counter()
    answers = await asyncio.gather(
        *[send(requests // CONCURRENCY, latencies) for _ in range(CONCURRENCY)]
    )
    wall = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100)
    pdf = answers[-1] if what == "fill" else b""
    return Round(len(latencies) / wall, cuts[49] * 1000, cuts[98] * 1000, pdf)


async def _drive(base: str, headers: dict[str, str], what: str, body: dict, requests: int) -> Round:
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:

        async def send(count: int, latencies: list[float] | None) -> bytes:
            answer = b""
            for _ in range(count):
                started = time.perf_counter()
                if what == "fill":
                    response = await client.post("/v1/fill", json=body)
                else:
                    response = await client.get("/v1/account")
                if response.status_code != 200:
                    raise RuntimeError(f"{response.status_code}: {response.text[:200]}")
                if latencies is not None:
                    latencies.append(time.perf_counter() - started)
                answer = response.content
            return answer

        return await _load(send, what, requests)


async def _drive_raw(
    base: str, headers: dict[str, str], what: str, body: dict, requests: int
) -> Round:
    """``_drive``'s load on bare sockets: each connection writes a request and reads the
    answer's head and its ``Content-Length`` bytes, nothing else."""
    host, port = base.removeprefix("http://").split(":")
    content = json.dumps(body).encode() if what == "fill" else b""
    method, path = ("POST", "/v1/fill") if what == "fill" else ("GET", "/v1/account")
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(content)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if content:
        lines.append("Content-Type: application/json")
    request = "\r\n".join([*lines, "", ""]).encode() + content

    async def send(count: int, latencies: list[float] | None) -> bytes:
        answer = b""
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for _ in range(count):
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                status, length = _status_and_length(head)
                answer = await reader.readexactly(length)
                if status != 200:
                    raise RuntimeError(f"{status}: {answer[:200]!r}")
                if latencies is not None:
                    latencies.append(time.perf_counter() - started)
        finally:
            writer.close()
        return answer

    return await _load(send, what, requests)


def _status_and_length(head: bytes) -> tuple[int, int]:
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return int(lines[0].split()[1]), length


DRIVERS = {"httpx": _drive, "raw": _drive_raw}


def _median(rounds: dict[str, list[Round]], side: str, figure: str) -> float:
    return statistics.median(getattr(r, figure) for r in rounds[side])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout to compare")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (3)")
    parser.add_argument("--requests", type=int, default=3000, help="timed requests (3000)")
    parser.add_argument("--what", choices=("fill", "account", "both"), default="both")
    parser.add_argument("--workers", default="1,2", help="server workers, comma-separated (1,2)")
    parser.add_argument("--skip-bare", action="store_true", help="leave the bare app out")
    parser.add_argument(
        "--load", choices=sorted(DRIVERS), default="httpx", help="the client (httpx)"
    )
    args = parser.parse_args(argv)
    out = Report()
    info = machine_info(["fastapi", "uvicorn", "httpx", "pypdf"])
    out(
        f"machine: {info['cpu_count']} cores, {info['memory_gb']} GB, load {info['load_avg_1m']}"
        f", Python {info['python']}; client, servers and PDF children share the cores"
    )
    out(f"load: {args.load}, {CONCURRENCY} connections")
    summary = []
    for workers in (int(w) for w in args.workers.split(",")):
        for what in ("fill", "account") if args.what == "both" else (args.what,):
            rounds = _rounds(out, args, what, workers)
            summary.append(_ratios(out, rounds, what, workers))
    out()
    out(
        f"{'workers':>7}  {'request':<8} {'this/baseline':>13} {'this/bare':>10} "
        f"{'p99 this/bare':>14}"
    )
    for line in summary:
        out(line)
    return 0


def _rounds(
    out: Report, args: argparse.Namespace, what: str, workers: int
) -> dict[str, list[Round]]:
    """``args.rounds`` rounds of each side, alternating, for ``what`` at ``workers``."""
    rounds: dict[str, list[Round]] = {"baseline": [], "this": [], "bare": []}
    pdf = b""
    for number in range(1, args.rounds + 1):
        for side in rounds:
            if side == "bare":
                if args.skip_bare:
                    continue
                result = bare_round(what, args.requests, pdf, workers, args.load)
            else:
                source = args.baseline if side == "baseline" else None
                result = one_round(source, what, args.requests, workers, args.load)
                pdf = result.pdf or pdf
            rounds[side].append(result)
            out(
                f"{workers} workers {what} round {number} {side:8} {result.rate:7.1f} "
                f"requests/s, p50 {result.p50_ms:6.2f} ms, p99 {result.p99_ms:7.2f} ms"
            )
    return rounds


def _ratios(out: Report, rounds: dict[str, list[Round]], what: str, workers: int) -> str:
    """Print the ratios of the medians; the summary table's line."""
    ratio = _median(rounds, "this", "rate") / _median(rounds, "baseline", "rate")
    out(f"{workers} workers {what}: this / baseline requests/s (medians) = {ratio:.2f}x")
    bare = p99 = "-"
    if rounds["bare"]:
        rate = _median(rounds, "this", "rate") / _median(rounds, "bare", "rate")
        tail = _median(rounds, "this", "p99_ms") / _median(rounds, "bare", "p99_ms")
        bare, p99 = f"{rate:.2f}x", f"{tail:.2f}x"
        out(f"{workers} workers {what}: this / bare requests/s (medians) = {bare}")
        out(f"{workers} workers {what}: this / bare p99 (medians) = {p99}")
    return f"{workers:>7}  {what:<8} {ratio:>12.2f}x {bare:>10} {p99:>14}"


if __name__ == "__main__":
    sys.exit(main())
