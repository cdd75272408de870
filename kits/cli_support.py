"""Run the installed ``fillpdf`` console script as a user runs it, and check its errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILLPDF = Path(sys.executable).parent / "fillpdf"


def run(
    *args: object, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``fillpdf *args``, its output captured as UTF-8 text."""
    return subprocess.run(
        [str(FILLPDF), *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        timeout=timeout,
    )


def assert_clean_error(
    done: subprocess.CompletedProcess[str],
    *needles: str,
    prefix: str = "fillpdf ",
    only_line: bool = False,
) -> None:
    """Exit status 1, a last line on stderr that starts with ``prefix``, no traceback.

    With ``only_line`` that line must be the only one on stderr. Every needle must occur in
    stderr.
    """
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if only_line:
        assert len(lines) == 1, done.stderr
    assert lines and lines[-1].startswith(prefix), done.stderr
    for needle in needles:
        assert needle in done.stderr, (needle, done.stderr)
