"""Every command in the README, run as written: the tour's shell blocks in order (in one bash
session, from a scratch copy of the sample files), the Python blocks, and the two commands.

Two commands can't run verbatim inside the suite: ``make test`` is this suite (its recipe is
checked with ``make -n``), and the tour's fixed port is swapped for a free one.
``docker compose`` needs a Docker engine; tests/test_compose.py checks that file instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from servicekit import free_port

ROOT = Path(__file__).resolve().parents[1]
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


def test_the_tour_runs_as_written(tmp_path: Path) -> None:
    work = scratch(tmp_path)
    shell = [body for kind, body in BLOCKS[1:] if kind == "sh"]
    script = "set -euo pipefail\n" + "\n".join(shell).replace("8765", str(free_port()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    done = subprocess.run(
        ["bash", "-c", script], cwd=work, capture_output=True, text=True, timeout=600, env=env
    )
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
