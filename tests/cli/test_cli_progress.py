"""``fillpdf batch`` says how far it is: a bar redrawn in place on a terminal, plain lines
in a log or a pipe, and nothing when asked for none. Run as a user runs it, under a real
pseudo-terminal."""

from __future__ import annotations

import csv
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from kits.cli_support import FILLPDF, ROOT

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"
SAMPLE_ROWS = ROOT / "include" / "sample_rows.csv"
ROWS = 3000  # one to three seconds of filling: long enough for a dozen redraws
FAILED = ROWS // 50  # every 50th row names a plan the form does not offer
FRAME = re.compile(r"[\r\n]")


@pytest.fixture(scope="module")
def long_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ROWS`` rows made from the sample rows, ``FAILED`` of them bad."""
    with SAMPLE_ROWS.open(encoding="utf-8", newline="") as handle:
        sample = list(csv.DictReader(handle))
    rows = [dict(sample[i % len(sample)]) for i in range(ROWS)]
    for row in rows[49::50]:
        row["plan"] = "Gold"
    path = tmp_path_factory.mktemp("rows") / "rows.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float


def batch_in_terminal(
    rows: Path, out_dir: Path, *flags: str, columns: int = 100, env: dict[str, str] | None = None
) -> Run:
    """``fillpdf batch`` with stderr on a pseudo-terminal ``columns`` wide (output processing
    off, so the bytes read are the bytes written) and stdout on a pipe."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    started = time.monotonic()
    proc = subprocess.Popen(
        [str(FILLPDF), "batch", str(SAMPLE_FORM), str(rows), "--out-dir", str(out_dir), *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env or _env(),
    )
    os.close(slave)
    received = bytearray()
    deadline = started + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last writer has closed it
                break
            if not data:
                break
            received += data
        assert proc.stdout is not None
        stdout = proc.stdout.read().decode("utf-8")
        code = proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return Run(code, stdout, received.decode("utf-8"), time.monotonic() - started)


def batch_in_pipe(rows: Path, out_dir: Path, *flags: str, **env: str | None) -> Run:
    started = time.monotonic()
    done = subprocess.run(
        [str(FILLPDF), "batch", str(SAMPLE_FORM), str(rows), "--out-dir", str(out_dir), *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_env(**env),
        timeout=60,
    )
    return Run(
        done.returncode,
        done.stdout.decode("utf-8"),
        done.stderr.decode("utf-8"),
        time.monotonic() - started,
    )


def progress_lines(stderr: str) -> list[str]:
    """stderr's lines about progress (the failed rows' own lines start with ``row``)."""
    return [line for line in stderr.splitlines() if " rows" in line and "failed" in line]


# --------------------------------------------------------------------------- a terminal


@pytest.mark.parametrize("columns", [100, 40], ids=["wide", "narrow"])
def test_a_terminal_shows_a_bar_redrawn_in_place_that_ends_cleanly(
    long_rows: Path, tmp_path: Path, columns: int
) -> None:
    done = batch_in_terminal(long_rows, tmp_path / "o", columns=columns)
    assert done.code == 1, done.stderr  # some rows failed
    assert f"{ROWS - FAILED} of {ROWS}" in done.stdout
    text = done.stderr
    bar, _, after = text.partition("\n")
    # the bar is redrawn in place: carriage returns, one line feed when it is done, no ANSI
    assert "\x1b" not in text, repr(text[:300])
    assert bar.startswith("\r"), repr(text[:300])
    frames = [frame for frame in FRAME.split(bar) if frame.strip()]
    assert len(frames) >= 3, repr(text[:300])
    # throttled: at most about ten redraws a second
    assert len(frames) <= 10 * done.seconds + 2, (len(frames), done.seconds)
    # never wider than the terminal, so a carriage return always reaches the line's start
    assert max(len(frame) for frame in frames) < columns, frames
    assert all(re.search(rf"\d/{ROWS:,} rows", frame) for frame in frames), frames
    last = frames[-1]
    assert f"{ROWS:,}/{ROWS:,} rows" in last, last
    assert f"{FAILED} failed" in last, last
    assert "ETA" not in last, last
    # the rows' errors come after the finished bar, each on its own line
    assert after.startswith("row 50: "), repr(after[:200])
    if columns >= 80:
        assert any(re.search(r"\[#+\.+\]", f) and "ETA" in f for f in frames[:-1]), frames
        assert re.search(r"\[#+\]", last) and "rows/s" in last, last


def test_a_dumb_terminal_gets_plain_lines(long_rows: Path, tmp_path: Path) -> None:
    done = batch_in_terminal(
        long_rows, tmp_path / "o", "--progress-every", "0.3", env=_env(TERM="dumb")
    )
    assert done.code == 1, done.stderr
    assert "\r" not in done.stderr and "\x1b" not in done.stderr, repr(done.stderr[:300])
    assert len(progress_lines(done.stderr)) >= 2, done.stderr


@pytest.mark.parametrize("flag", [["--no-progress"], ["--progress", "off"]])
def test_no_progress_draws_nothing(long_rows: Path, tmp_path: Path, flag: list[str]) -> None:
    done = batch_in_terminal(long_rows, tmp_path / "o", *flag)
    assert done.code == 1, done.stderr
    assert "\r" not in done.stderr, repr(done.stderr[:300])
    assert progress_lines(done.stderr) == [], done.stderr


# --------------------------------------------------------------------------- a pipe or a log


def test_a_pipe_gets_plain_lines_at_the_interval_asked(long_rows: Path, tmp_path: Path) -> None:
    done = batch_in_pipe(long_rows, tmp_path / "o", "--progress-every", "0.3")
    assert done.code == 1, done.stderr
    assert "\r" not in done.stderr and "\x1b" not in done.stderr, repr(done.stderr[:300])
    assert done.stderr.endswith("\n")
    lines = progress_lines(done.stderr)
    assert len(lines) >= 2, done.stderr
    assert len(lines) <= done.seconds / 0.3 + 2, (len(lines), done.seconds)
    for line in lines:
        assert re.fullmatch(
            rf"fillpdf batch: [\d,]+/{ROWS:,} rows \(\d+%\), \d+ failed, [\d,.]+ rows/s"
            r", (ETA|done in) \S+",
            line,
        ), line
    assert any("ETA" in line for line in lines[:-1]), lines
    assert lines[-1].startswith(f"fillpdf batch: {ROWS:,}/{ROWS:,} rows (100%), {FAILED} failed")


def test_a_pipe_by_default_waits_seconds_between_lines(tmp_path: Path) -> None:
    """A short batch in a log says nothing until its summary: lines come every ten seconds."""
    done = batch_in_pipe(SAMPLE_ROWS, tmp_path / "o", "--progress", "auto")
    assert done.code == 0, done.stderr
    assert done.stderr == "", done.stderr


def test_progress_can_be_forced_to_a_bar_in_a_pipe(long_rows: Path, tmp_path: Path) -> None:
    done = batch_in_pipe(long_rows, tmp_path / "o", "--progress", "bar")
    bar = done.stderr.partition("\n")[0]
    assert bar.startswith("\r") and f"{ROWS:,}/{ROWS:,} rows" in bar, repr(bar[-200:])


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_progress_interval_is_bad_usage(tmp_path: Path, value: str) -> None:
    done = batch_in_pipe(SAMPLE_ROWS, tmp_path / "o", "--progress-every", value)
    assert done.code == 2, done.stderr
    assert "--progress-every" in done.stderr and "seconds" in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()
