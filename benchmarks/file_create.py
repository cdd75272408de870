#!/usr/bin/env python3
"""What creating one output file costs on a file system, against tmpfs in the same run.

A mail-merge creates a file per row, so where creating a file costs as much as filling
part of a row, who spends that time (the filling thread, a thread beside it, a process of
its own: ``engine/file_writer.py``) decides the batch's rate. Each folder gets ``--files``
files of ``--bytes`` bytes, written the ways the engine can: a name created and written,
an unnamed file linked in (``O_TMPFILE``, Linux), and an empty file for the creation alone.
Reported per file: wall time and this process's CPU time (kernel time included).

``--delete-first GB`` measures each folder twice instead: after writing that much in files of
``--bytes``, then right after deleting them. On ext4 creating a file then costs several
times as much, for minutes (until enough new files have been written): a benchmark that
deletes one phase's output before the next phase writes measures that, not the code.
Without it, the figures are the file system's state as found.

    .venv/bin/python benchmarks/file_create.py [--files 5000] [--delete-first 4] [FOLDER ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.machine import machine_info  # noqa: E402

TMPFS = Path("/dev/shm")


def _ways(folder: Path, data: bytes) -> dict[str, Callable[[int], None]]:
    proc = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL

    def empty(i: int) -> None:
        os.close(os.open(folder / f"e{i}.pdf", flags, 0o666))

    def named(i: int) -> None:
        handle = os.open(folder / f"n{i}.pdf", flags, 0o666)
        os.write(handle, data)
        os.close(handle)

    def unnamed(i: int) -> None:
        handle = os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o666)
        os.write(handle, data)
        os.link(f"fd/{handle}", folder / f"u{i}.pdf", src_dir_fd=proc)
        os.close(handle)

    ways: dict[str, Callable[[int], None]] = {"empty file": empty, "named, written": named}
    if hasattr(os, "O_TMPFILE"):
        ways["unnamed, written, linked"] = unnamed
    return ways


def write_files(folder: Path, total: int, size: int) -> None:
    """``total`` bytes in files of ``size`` bytes in ``folder``."""
    folder.mkdir()
    data = os.urandom(size)
    for i in range(max(1, total // size)):
        (folder / f"d{i}.pdf").write_bytes(data)


def before_and_after_delete(root: Path, gigabytes: float, files: int, size: int) -> list[str]:
    """The ways measured after writing ``gigabytes`` in files, then after deleting them."""
    scratch = Path(tempfile.mkdtemp(prefix="file-create-deleted-", dir=root))
    try:
        write_files(scratch / "files", int(gigabytes * 1e9), size)
        lines = measure(root, files, size, f", {gigabytes:g} GB just written")
        shutil.rmtree(scratch / "files")
        return lines + measure(root, files, size, f", {gigabytes:g} GB just deleted")
    finally:
        shutil.rmtree(scratch)


def measure(root: Path, files: int, size: int, label: str = "") -> list[str]:
    """One line per way of writing: microseconds per file, wall and CPU."""
    folder = Path(tempfile.mkdtemp(prefix="file-create-", dir=root))
    lines = []
    try:
        for name, way in _ways(folder, os.urandom(size)).items():
            wall, cpu = time.perf_counter(), time.process_time()
            for i in range(files):
                way(i)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            lines.append(
                f"  {root!s:<12} {name + label:<46} {wall / files * 1e6:7.0f} us wall "
                f"{cpu / files * 1e6:7.0f} us CPU"
            )
    finally:
        shutil.rmtree(folder)
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("folders", nargs="*", help="where to create files (default: the system's temp)")
    p.add_argument("--files", type=int, default=5000, help="files per way and folder")
    p.add_argument("--bytes", type=int, default=20000, help="bytes per file (a filled sample)")
    p.add_argument("--delete-first", type=float, default=0.0, metavar="GB",
                   help="measure after writing this many GB, then after deleting them")  # fmt: skip
    args = p.parse_args()
    folders = [Path(f) for f in args.folders] or [Path(tempfile.gettempdir())]
    if TMPFS.is_dir() and TMPFS not in folders:
        folders.append(TMPFS)
    m = machine_info([])
    print(f"File creation, per file: {args.files:,} files of {args.bytes:,} bytes each way")
    print(f"  {m['platform']}, {m['cpu_count']} CPUs (load {m['load_avg_1m']})")
    for folder in folders:
        if args.delete_first:
            lines = before_and_after_delete(folder, args.delete_first, args.files, args.bytes)
        else:
            lines = measure(folder, args.files, args.bytes)
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
