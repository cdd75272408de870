#!/usr/bin/env python3
"""How long `make demo`'s install takes on a fresh clone, beside the install it replaced.

A new user's first command is `make demo`; most of its time is the install. Each side runs
in a copy of the working tree (the files git tracks, and untracked ones it does not ignore)
in a fresh temporary folder, with package caches off, so every package is downloaded and
installed as on a new machine:

- ``demo``: `make .venv/.installed`, what `make demo` installs now (the package alone, by uv);
- ``test``: `make .venv/.installed-test`, what `make test` installs (the test tools too);
- ``pip, package and test tools``: `pip install -e ".[test]"` in a new venv, what `make demo`
  installed before (pip, the test extra).

Reported per side: seconds, the venv's size and how many distributions it holds, and each
side's time as a ratio of the last. Needs the package registries; takes 5 to 10 minutes.

    python3 benchmarks/demo_install.py [--sides demo,test,pip] [--out results/demo_install.txt]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import Report, machine_info, progress  # noqa: E402

SIDES = {
    "demo": "make .venv/.installed (uv, the package alone)",
    "test": "make .venv/.installed-test (uv, package and test tools)",
    "pip": 'pip install -e ".[test]" (what make demo ran before)',
}
COLD = {"UV_NO_CACHE": "1", "PIP_NO_CACHE_DIR": "1"}


def copy_tree(to: Path) -> None:
    """The working tree as a fresh clone would have it, with its uncommitted changes."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)


def commands(side: str) -> list[list[str]]:
    if side == "demo":
        return [["make", "--no-print-directory", ".venv/.installed"]]
    if side == "test":
        return [["make", "--no-print-directory", ".venv/.installed-test"]]
    return [
        [sys.executable, "-m", "venv", ".venv"],
        [".venv/bin/python", "-m", "pip", "install", "--quiet", "-e", ".[test]"],
    ]


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def distributions(venv: Path) -> int:
    site = next(venv.glob("lib/python*/site-packages"))
    return len(list(site.glob("*.dist-info")))


def measure(side: str, work: Path) -> dict[str, float]:
    clone = work / side
    clone.mkdir()
    copy_tree(clone)
    env = {**os.environ, **COLD}
    started = time.perf_counter()
    for command in commands(side):
        done = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
    seconds = time.perf_counter() - started
    venv = clone / ".venv"
    return {"seconds": seconds, "mb": folder_mb(venv), "dists": distributions(venv)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sides", default="demo,test,pip", help="of: " + ", ".join(SIDES))
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    sides = [s for s in args.sides.split(",") if s]
    unknown = sorted(set(sides) - set(SIDES))
    if unknown:
        parser.error(f"unknown side {unknown[0]!r}: use {', '.join(SIDES)}")

    out = Report()
    info = machine_info(["pip", "uv"])
    out(f"# demo_install: {info['cpu_count']} CPUs, {info['memory_gb']} GB, load "
        f"{info['load_avg_1m']}, Python {info['python']}, caches off")  # fmt: skip
    results = {}
    with tempfile.TemporaryDirectory(prefix="demo-install-") as work:
        for side in sides:
            progress(f"{side}: {SIDES[side]}")
            results[side] = measure(side, Path(work))
    last = results[sides[-1]]["seconds"]
    out(f"{'side':<58} {'seconds':>8} {'venv MB':>8} {'dists':>6} {'÷ last':>7}")
    for side in sides:
        r = results[side]
        out(f"{SIDES[side]:<58} {r['seconds']:>8.1f} {r['mb']:>8.0f} {r['dists']:>6.0f} "
            f"{r['seconds'] / last:>6.2f}x")  # fmt: skip
    if args.out:
        args.out.write_text(out.text(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
