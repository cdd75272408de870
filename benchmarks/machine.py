"""What the benchmarks share: the machine and library versions printed beside their figures
(so a result can be read for what it was measured on), and their report and progress lines."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterable
from importlib import metadata
from typing import Any


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def memory_gb() -> float | None:
    """Total memory, from /proc/meminfo (no third-party import: some benchmarks measure RSS)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine_info(dists: Iterable[str]) -> dict[str, Any]:
    """Python, CPUs, memory, load, and the versions of ``dists``."""
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "memory_gb": memory_gb(),
        "versions": {dist: version(dist) for dist in dists},
    }


class Report:
    """Lines printed as they come and kept for the results file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def progress(message: str) -> None:
    print(f"  ... {message}", file=sys.stderr, flush=True)
