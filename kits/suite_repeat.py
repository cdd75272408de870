"""Run the test suite several times and name every test that failed in any run.

A test that fails one run in five fails CI one submission in five. ``make test-repeat N=5``
runs the suite as ``make test`` does (the parallel pass, then the solo tests alone), N times
in a row, each pass writing a JUnit report, then prints each run's counts and every test
that failed or errored in any run, with the runs it failed in and the first line of why.
It exits 1 if any test failed in any run, so it can gate a change to the suite itself.

    python -m kits.suite_repeat --runs 5 [--workers 2] [--keep DIR] [-- PYTEST ARGS...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Outcome:
    """What one pass of pytest reported."""

    passed: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    """Test id -> the first line of its failure or error."""
    skipped: int = 0


def read_report(path: Path) -> Outcome:
    """The outcome of one JUnit report (as pytest writes it, xdist merged)."""
    outcome = Outcome()
    if not path.exists():  # pytest died before writing it: the exit code says so
        return outcome
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            text = problem.get("message") or problem.text or ""
            outcome.failed[test_id] = (text.strip().splitlines() or ["(no message)"])[0][:200]
        elif case.find("skipped") is not None:
            outcome.skipped += 1
        else:
            outcome.passed += 1
    return outcome


def passes(workers: int, extra: list[str]) -> list[tuple[str, list[str]]]:
    """The pytest passes of ``make test``: the suite in ``workers`` processes, then the
    solo (latency) tests alone."""
    parallel = ["-n", str(workers), "--dist", "loadfile"] if workers else []
    return [
        ("main", [*parallel, "-m", "not solo", *extra]),
        ("solo", ["-m", "solo", *extra]),
    ]


def run_once(run: int, folder: Path, workers: int, extra: list[str]) -> tuple[Outcome, float]:
    """One run of the whole suite; its outcome summed over its passes, and its seconds."""
    total = Outcome()
    started = time.monotonic()
    for name, args in passes(workers, extra):
        report = folder / f"run{run}-{name}.xml"
        log = folder / f"run{run}-{name}.log"
        command = [sys.executable, "-m", "pytest", "-q", f"--junitxml={report}", *args]
        with log.open("wb") as out:
            code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT)
        outcome = read_report(report)
        if code not in (0, 1, 5) or (code == 1 and not outcome.failed):
            # interrupted, a usage error, or a failure the report cannot name (a crash)
            outcome.failed[f"<pytest {name} pass>"] = f"exit {code}; see {log}"
        total.passed += outcome.passed
        total.skipped += outcome.skipped
        total.failed.update(outcome.failed)
    return total, time.monotonic() - started


def summary(outcomes: list[tuple[Outcome, float]]) -> tuple[str, bool]:
    """The report printed at the end, and whether every run was green."""
    lines = []
    failures: dict[str, list[int]] = defaultdict(list)
    reasons: dict[str, str] = {}
    for run, (outcome, seconds) in enumerate(outcomes, 1):
        lines.append(
            f"run {run}: {outcome.passed} passed, {len(outcome.failed)} failed, "
            f"{outcome.skipped} skipped in {seconds:.0f} s"
        )
        for test_id, reason in outcome.failed.items():
            failures[test_id].append(run)
            reasons.setdefault(test_id, reason)
    if not failures:
        lines.append(f"every test passed in all {len(outcomes)} runs")
        return "\n".join(lines), True
    lines.append(f"{len(failures)} test(s) failed in at least one of {len(outcomes)} runs:")
    for test_id, runs in sorted(failures.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"  {test_id}  failed in run(s) {', '.join(map(str, runs))}")
        lines.append(f"      {reasons[test_id]}")
    return "\n".join(lines), False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="how many runs (default 3)")
    parser.add_argument(
        "--workers", type=int, default=2, help="pytest-xdist processes; 0 runs in one"
    )
    parser.add_argument(
        "--keep", type=Path, help="a folder for the reports and logs (default: a temp folder)"
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: passed on to pytest")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be 1 or more, not {args.runs}")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="suite-repeat-"))
    folder.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for run in range(1, args.runs + 1):
        outcome, seconds = run_once(run, folder, args.workers, args.pytest_args)
        outcomes.append((outcome, seconds))
        print(
            f"run {run} of {args.runs}: {outcome.passed} passed, {len(outcome.failed)} failed "
            f"in {seconds:.0f} s",
            flush=True,
        )
    report, green = summary(outcomes)
    print(report)
    print(f"reports and logs: {folder}")
    return 0 if green else 1


if __name__ == "__main__":
    sys.exit(main())
