"""``fillpdf review`` run as a person runs it: started, its printed address read, stopped."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kits.cli_support import FILLPDF

#: Long enough for a detection on a loaded machine; a guard against a hang, not a measure.
START_DEADLINE = 120.0


@dataclass(frozen=True)
class Review:
    url: str  # the printed address, token included
    base: str  # http://127.0.0.1:PORT
    token: str
    schema_path: Path
    pdf_path: Path
    process: subprocess.Popen[str]


@contextmanager
def review(pdf: Path, *args: object, browser: str | None = None) -> Iterator[Review]:
    """``fillpdf review PDF --no-browser *args`` until the block ends; with ``browser`` (a
    command, as ``$BROWSER`` takes one) it opens that browser instead of ``--no-browser``."""
    opening = [] if browser else ["--no-browser"]
    env = {**os.environ, "BROWSER": browser} if browser else None
    process = subprocess.Popen(
        [str(FILLPDF), "review", str(pdf), *opening, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_pump, args=(process, lines), daemon=True)
    reader.start()
    try:
        url, saves = _address(process, lines)
        schema_path, pdf_path = (Path(p) for p in saves)
        base, token = url.split("/?token=")
        yield Review(url, base, token, schema_path, pdf_path, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _pump(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line)


def _address(process: subprocess.Popen[str], lines: queue.Queue[str]) -> tuple[str, list[str]]:
    """The address and the files a save writes, from the two lines the command prints."""
    deadline = time.monotonic() + START_DEADLINE
    seen: list[str] = []
    while time.monotonic() < deadline:
        try:
            seen.append(lines.get(timeout=0.5))
        except queue.Empty:
            if process.poll() is not None:
                stderr = process.stderr.read() if process.stderr else ""
                raise AssertionError(f"fillpdf review ended: {''.join(seen)}{stderr}") from None
            continue
        text = "".join(seen)
        opened = re.search(r"Open (http://127\.0\.0\.1:\d+/\?token=\S+)", text)
        saves = re.search(r"Save writes (.+?) \(and (.+?)\);", text)
        if opened and saves:
            return opened.group(1), [saves.group(1), saves.group(2)]
    raise AssertionError(f"fillpdf review printed no address in {START_DEADLINE:.0f} s")
