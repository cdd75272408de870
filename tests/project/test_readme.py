"""Every command in the README, run as written: the tour's shell blocks in order (in one bash
session, from a scratch copy of the sample files), the Python blocks, and the two commands.

Two commands can't run verbatim inside the suite: ``make test`` is this suite (its recipe is
checked with ``make -n``), and ``fillpdf review`` serves until a person stops it (its block is
``shell``, not ``sh``; tests/review/ drives it in a browser). The tour picks its own free
port, so it runs as written even while another program holds the port a tour would usually
choose.
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
    assert re.search(r"```shell\nfillpdf review ", README)
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


def test_make_demo_lists_the_chunks_in_chunk_order(tmp_path: Path) -> None:
    """The mapped chunks of the demo's DAG run (and log) in any order; ``make demo`` lists
    their lines by chunk number, 10 after 9. The log lines are the operator's, as Airflow
    writes them."""
    line = (
        "2025-06-16T00:00:0{n}.000000Z [info     ] chunk {chunk} (rows {rows}): filled 7 of 7 "
        "rows into /out (0 failed) in 0.1s, 70 rows/s; manifest: /out/_manifests/{chunk}"
        ".parquet [airflow.task.operators.fillpdf_provider.operators.batch.BatchFillOperator]"
    )
    order = [3, 0, 10, 1, 2, 9]
    log = [line.format(n=n, chunk=c, rows=f"{7 * c + 1}-{7 * c + 7}") for n, c in enumerate(order)]
    log.insert(2, "2025-06-16T00:00:02.000000Z [info     ] chunk 4 (rows 29-35): 7/7 rows")
    (tmp_path / "dag-test.log").write_text("\n".join(log) + "\n")
    done = subprocess.run(
        ["make", "-s", "demo-chunks", f"DEMO_HOME={tmp_path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    listed = [int(re.match(r"chunk (\d+) ", row).group(1)) for row in done.stdout.splitlines()]
    assert listed == sorted(order), done.stdout


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
    # Each DAG run says how it went in one line a person reads, though its log goes to a file.
    dags = re.findall(r"^airflow dags test (\w+)", "\n".join(shell), re.M)
    assert dags == ["fillpdf_mail_merge", "fillpdf_convert_inbox"]
    lines = done.stdout.splitlines()
    for dag in dags:
        outcome = [line for line in lines if line.startswith(f"{dag}: ")]
        assert len(outcome) == 1 and outcome[0].startswith(f"{dag}: success;"), done.stdout


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


HOOK_STORE = """
import sys
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from kits.servicekit import flat_form
with FillPdfHook() as hook:  # no fillpdf_default connection: the embedded engine
    print(hook.convert(flat_form(1)).document_url)
"""


def test_the_readme_says_where_the_embedded_engine_keeps_conversions(tmp_path: Path) -> None:
    """The default of ``conversions_uri``, as the README's table gives it (each place and the
    condition it depends on), is where the hook writes, in Airflow or outside it."""
    row = re.search(r"^\| extra `conversions_uri` \|(.*)\|$", README, re.M)
    assert row, "the README's table has no row for conversions_uri"
    places = re.findall(r"`([$~][^`]*)`", row.group(1))
    assert places[:3] == [
        "$FILLPDF_EMBEDDED_STORE",
        "$AIRFLOW_HOME/fillpdf/conversions",
        "~/.cache/fillpdf/conversions",
    ], row.group(1)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "FILLPDF_"))}
    base.update(HOME=str(tmp_path / "home"), PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    airflow_home = {"AIRFLOW_HOME": str(tmp_path / "airflow")}
    cases = [  # the variables set, and the README's place for them
        ({"FILLPDF_EMBEDDED_STORE": str(tmp_path / "store"), **airflow_home}, places[0]),
        (airflow_home, places[1]),
        ({}, places[2]),  # outside Airflow: no AIRFLOW_HOME
    ]
    for variables, place in cases:
        env = {**base, **variables}
        done = subprocess.run(
            [sys.executable, "-c", HOOK_STORE],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        folder = _expand(place, env)
        assert done.stdout.strip().startswith(folder.as_uri() + "/"), (variables, done.stdout)


def _expand(place: str, env: dict[str, str]) -> Path:
    """A place as the README writes it (``$VARIABLE``, ``~``), in the environment ``env``."""
    text = re.sub(r"\$(\w+)", lambda match: env[match.group(1)], place)
    return Path(env["HOME"] + text[1:] if text.startswith("~") else text)
