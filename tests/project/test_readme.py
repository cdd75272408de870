"""Every command in the README, run as written: the tour's shell blocks in order (in one bash
session, from a scratch copy of the sample files), the Python blocks, and the two commands.

One command can't run verbatim inside the suite: ``make test`` is this suite (its recipe is
checked with ``make -n``). The tour picks its own free port, so it runs as written even while
another program holds the port a tour would usually choose.
``docker compose`` needs a Docker engine; tests/project/test_compose.py checks that file
instead.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(sh|python)\n(.*?)```", README, re.S)


def scratch(tmp_path: Path) -> Path:
    """A working directory with the repository's samples, DAGs and environment in reach."""
    work = tmp_path / "repo"
    work.mkdir()
    for name in ("include", "dags"):
        shutil.copytree(ROOT / name, work / name)
    (work / ".venv").symlink_to(ROOT / ".venv")
    return work


def test_the_readme_has_the_blocks_this_test_runs() -> None:
    kinds = [kind for kind, _ in BLOCKS]
    assert kinds.count("sh") >= 5 and kinds.count("python") >= 2
    assert BLOCKS[0] == ("sh", BLOCKS[0][1]) and "make demo" in BLOCKS[0][1]


def test_the_two_commands() -> None:
    first = BLOCKS[0][1]
    assert re.search(r"^make demo\b", first, re.M) and re.search(r"^make test\b", first, re.M)
    done = subprocess.run(["make", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Manifest:" in done.stdout
    assert len(list((ROOT / "demo-output").glob("*.pdf"))) == 25
    dry = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True)
    assert dry.returncode == 0 and "pytest" in dry.stdout


def _hold_port(port: int) -> socket.socket | None:
    """Listen on ``port`` (as another program would), or None if something already does."""
    held = socket.socket()
    try:
        held.bind(("127.0.0.1", port))
    except OSError:
        held.close()
        return None
    held.listen()
    return held


def test_the_readme_speaks_of_the_real_plans_and_no_fixed_port() -> None:
    from fillpdf_provider.service.plans import PLANS

    assert "free plan" not in README.lower() and "free account" not in README.lower()
    for plan in re.findall(r"--plan (\w+)", README) + re.findall(r"the (\w+) plan\b", README):
        assert plan in PLANS, plan
    tour = "\n".join(body for kind, body in BLOCKS[1:] if kind == "sh")
    assert not re.search(r"--port \d+|127\.0\.0\.1:\d+", tour), "the tour hard-codes a port"


def test_the_tour_runs_as_written(tmp_path: Path) -> None:
    work = scratch(tmp_path)
    shell = [body for kind, body in BLOCKS[1:] if kind == "sh"]
    script = "set -euo pipefail\n" + "\n".join(shell)  # verbatim: no port swapped
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    # Port 8765 (the port the tour once hard-coded) is taken while the tour runs.
    held = _hold_port(8765)
    try:
        done = subprocess.run(
            ["bash", "-c", script], cwd=work, capture_output=True, text=True, timeout=300, env=env
        )
    finally:
        if held is not None:
            held.close()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tour = work / "tour"
    assert '"conversion_id"' in (tour / "renewal.json").read_text()
    assert len(list((tour / "batch").glob("*.pdf"))) == 25
    assert '"plan":"developer"' in done.stdout.replace(" ", "")
    assert '"status":"converted"' in (tour / "conversion.json").read_text().replace(" ", "")
    assert len(list((tour / "mail-merge").glob("*.pdf"))) == 25
    assert len(list((tour / "converted").glob("*.fillable.pdf"))) == 2


def test_the_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = scratch(tmp_path)
    monkeypatch.chdir(work)
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))
    (work / "tour" / "python").mkdir(parents=True)
    for kind, body in BLOCKS:
        if kind == "python":
            exec(compile(body, "README.md", "exec"), {"__name__": "readme"})
    assert sorted(p.name for p in (work / "tour" / "python").iterdir()) == ["1.pdf", "2.pdf"]
    assert sys.modules.get("fillpdf_provider.hooks.fillpdf") is not None
