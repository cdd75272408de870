"""``make test-repeat`` (``kits.suite_repeat``) names a test that fails in one run of several,
with the run it failed in, and exits 1; a suite that passes every run exits 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FLAKY = """
from pathlib import Path

RUNS = Path(__file__).with_name("runs")


def test_steady():
    pass


def test_fails_in_the_second_run():
    RUNS.write_text(str(int(RUNS.read_text() or 0) + 1) if RUNS.exists() else "1")
    assert RUNS.read_text() != "2", "second run"
"""


def repeat(suite: Path, runs: int, reports: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "kits.suite_repeat", "--runs", str(runs), "--workers", "0",
        "--keep", str(reports), "--", str(suite), "-p", "no:cacheprovider",
    ]  # fmt: skip
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_test_that_fails_in_one_run_is_named_with_that_run(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_flaky.py").write_text(FLAKY)
    result = repeat(suite / "test_flaky.py", 3, tmp_path / "reports")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "run 1: 2 passed, 0 failed" in out and "run 2: 1 passed, 1 failed" in out, out
    assert "1 test(s) failed in at least one of 3 runs" in out, out
    assert "test_flaky::test_fails_in_the_second_run  failed in run(s) 2" in out, out
    assert "second run" in out  # why it failed
    assert "test_steady" not in out.split("runs:")[-1]
    assert sorted(p.name for p in (tmp_path / "reports").glob("*.xml")) == [
        f"run{run}-{name}.xml" for run in (1, 2, 3) for name in ("main", "solo")
    ]


def test_a_suite_green_in_every_run_exits_0(tmp_path: Path) -> None:
    (tmp_path / "test_green.py").write_text("def test_ok():\n    pass\n")
    result = repeat(tmp_path / "test_green.py", 2, tmp_path / "reports")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every test passed in all 2 runs" in result.stdout


def test_a_pass_that_dies_without_a_report_counts_as_failed(tmp_path: Path) -> None:
    (tmp_path / "test_exits.py").write_text("import os\n\nos._exit(3)\n")
    result = repeat(tmp_path / "test_exits.py", 1, tmp_path / "reports")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "<pytest main pass>  failed in run(s) 1" in result.stdout, result.stdout
