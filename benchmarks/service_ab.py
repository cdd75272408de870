#!/usr/bin/env python3
"""The service of this checkout against another one, on this machine, in alternating rounds.

Throughput on a shared 2-core machine drifts by a third from one minute to the next, so a
figure from another day says little about a change. This starts ``fillpdf serve
--workers 2`` from the baseline's source and from this checkout in turn, ``--rounds``
times, and drives each with the same load: ``POST /v1/fill`` by conversion id or
``GET /v1/account``, 8 concurrent connections. It prints each round and the ratio of the
medians (this checkout / baseline). Make a baseline with ``git worktree``::

    git worktree add /tmp/baseline <commit>
    .venv/bin/python benchmarks/service_ab.py --baseline /tmp/baseline [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

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


def _serve(source: Path | None, data: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    if source is not None:  # the baseline's package ahead of the installed one
        env["PYTHONPATH"] = str(source / "plugins")
    command = [
        sys.executable, "-m", "fillpdf_provider.cli", "serve", "--host", "127.0.0.1",
        "--port", str(port), "--data-dir", str(data), "--workers", "2",
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)


def one_round(source: Path | None, what: str, requests: int) -> float:
    """Requests per second of one fresh server built from ``source`` (None: this checkout)."""
    with tempfile.TemporaryDirectory() as folder:
        data, port = Path(folder) / "data", free_port()
        server = _serve(source, data, port, Path(folder) / "server.log")
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
            return asyncio.run(_drive(base, headers, what, body, requests))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)


async def _drive(base: str, headers: dict[str, str], what: str, body: dict, requests: int) -> float:
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:

        async def send(count: int) -> None:
            for _ in range(count):
                if what == "fill":
                    response = await client.post("/v1/fill", json=body)
                else:
                    response = await client.get("/v1/account")
                if response.status_code != 200:
                    raise RuntimeError(f"{response.status_code}: {response.text[:200]}")

        await asyncio.gather(*[send(20) for _ in range(CONCURRENCY)])  # warm-up
        started = time.perf_counter()
        await asyncio.gather(*[send(requests // CONCURRENCY) for _ in range(CONCURRENCY)])
        return requests // CONCURRENCY * CONCURRENCY / (time.perf_counter() - started)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout to compare")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (3)")
    parser.add_argument("--requests", type=int, default=3000, help="timed requests (3000)")
    parser.add_argument("--what", choices=("fill", "account", "both"), default="both")
    args = parser.parse_args(argv)
    for what in ("fill", "account") if args.what == "both" else (args.what,):
        rates: dict[str, list[float]] = {"baseline": [], "this": []}
        for number in range(1, args.rounds + 1):
            for side, source in (("baseline", args.baseline), ("this", None)):
                rate = one_round(source, what, args.requests)
                rates[side].append(rate)
                print(f"{what} round {number} {side:8} {rate:7.1f} requests/s", flush=True)
        ratio = statistics.median(rates["this"]) / statistics.median(rates["baseline"])
        print(f"{what}: this / baseline (medians) = {ratio:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
