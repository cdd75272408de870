"""Importing FillPDF makes no folder: not in the home folder, not anywhere Airflow would.

Airflow configures itself when it is imported, and that makes its log folder
(``$AIRFLOW_HOME/logs``; ``~/airflow/logs`` when ``AIRFLOW_HOME`` is unset). The modules
that run without Airflow (the engine, the client, the service, the command line and the
embedded engine on a local folder) therefore import no Airflow; the Airflow side (the hook,
operators, sensors) is Airflow code, so importing it makes what ``import airflow`` makes,
and nothing more.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_AIRFLOW = (
    "fillpdf_provider",
    "fillpdf_provider.engine",
    "fillpdf_provider.client",
    "fillpdf_provider.storage",
    "fillpdf_provider.embedded",
    "fillpdf_provider.service.app",
    "fillpdf_provider.cli",
)


def _run(code: str, home: Path) -> str:
    """``code`` in a fresh interpreter whose home is ``home``, with no Airflow settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=home, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _made(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*"))


@pytest.mark.parametrize("module", WITHOUT_AIRFLOW)
def test_importing_a_module_that_runs_without_airflow_makes_no_folder(
    module: str, tmp_path: Path
) -> None:
    out = _run(f"import sys, {module}; print('airflow' in sys.modules)", tmp_path)
    assert out.strip() == "False", f"importing {module} imports Airflow"
    assert _made(tmp_path) == []


def test_the_embedded_engine_on_a_local_folder_needs_no_airflow(tmp_path: Path) -> None:
    store = tmp_path / "store"
    out = _run(
        "import sys\n"
        "from fillpdf_provider.embedded import EmbeddedFillPdf\n"
        "from kits.servicekit import flat_form\n"
        f"engine = EmbeddedFillPdf({str(store)!r})\n"
        "engine.fill(engine.convert(flat_form(1)).conversion_id, {})\n"
        "print(engine.get_account().pages_used, 'airflow' in sys.modules)\n",
        tmp_path,
    )
    assert out.split() == ["1", "False"]
    assert [p for p in _made(tmp_path) if not p.startswith("store")] == []


def test_the_hook_makes_only_what_importing_airflow_makes(tmp_path: Path) -> None:
    """The folder comes from Airflow's own import, not from FillPDF: the hook's import and a
    bare ``import airflow`` leave the same folders."""
    airflow_home, hook_home = tmp_path / "airflow-only", tmp_path / "hook"
    airflow_home.mkdir()
    hook_home.mkdir()
    _run("import airflow", airflow_home)
    _run("import fillpdf_provider.hooks.fillpdf", hook_home)
    assert _made(airflow_home) == ["airflow", os.path.join("airflow", "logs")]
    assert _made(hook_home) == _made(airflow_home)
