"""What the README's commands and ``make demo`` write into the repository is ignored by git:
following the tour or running the demo leaves ``git status`` clean."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
# Options and redirections whose argument is a path the command writes.
WRITES = re.compile(
    r"(?:mkdir -p|-o|--out-dir|--data-dir|--preview|>)\s+\"?(?:\$PWD/)?([\w.][\w.-]*)/"
    r"|\\\"(?:\$PWD/)([\w.][\w.-]*)/"  # "$PWD/tour/..." inside the DAG runs' JSON
    r"|\b(?:AIRFLOW_HOME)=\"?\$PWD/([\w.][\w.-]*)/"
    r"|\.write\(f?\"([\w.][\w.-]*)/"  # the Python examples' outputs
)


def readme_writes() -> set[str]:
    blocks = re.findall(r"```(?:sh|python)\n(.*?)```", README, re.S)
    found = {name for body in blocks for m in WRITES.finditer(body) for name in m.groups() if name}
    made = {m for body in blocks for m in re.findall(r"^mkdir -p ([\w.-]+)\s*$", body, re.M)}
    return found | made


def makefile_writes() -> set[str]:
    names = set()
    for var in ("DEMO_OUT", "DEMO_HOME", "VENV", "BENCH_VENV", "ANCHOR_VENV", "REPEAT_DIR"):
        match = re.search(rf"^{var}\s*[?:]?=\s*(?:\$\(abspath )?([\w.-]+)\)?\s*$", MAKEFILE, re.M)
        assert match, f"{var} is not set in the Makefile"
        names.add(match.group(1))
    return names


def test_the_folders_are_found() -> None:
    assert {"tour"} <= readme_writes()
    assert {"demo-output", ".airflow-demo", ".venv"} <= makefile_writes()


@pytest.mark.parametrize("folder", sorted(readme_writes() | makefile_writes()))
def test_what_the_readme_and_the_demo_write_is_ignored(folder: str) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    assert not (ROOT / folder).is_file(), folder
    probe = f"{folder}/any-output.pdf"
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", probe], cwd=ROOT, capture_output=True
    )
    if done.returncode == 128:
        pytest.skip(f"not a git work tree: {done.stderr.decode(errors='replace')}")
    assert done.returncode == 0, f"{folder}/ is not in .gitignore"
