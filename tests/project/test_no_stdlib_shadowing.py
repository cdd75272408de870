"""No folder that Airflow imports from holds a module named like the standard library's.

Airflow puts its DAGs and plugins folders on ``sys.path`` and imports every Python file in the
plugins folder under the file's own name, so ``quality/operator.py`` mounted there would
replace ``operator`` in every Airflow process. The folders docker-compose.yaml mounts into the
containers, and the DAGs folder the Makefile's demo uses, are checked file by file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yaml").read_text())
STDLIB = set(sys.stdlib_module_names)


def shadowing(folder: Path) -> list[str]:
    """Python files (at any depth, as the plugins manager walks) named like a stdlib module."""
    return sorted(
        str(path.relative_to(ROOT)) for path in folder.rglob("*.py") if path.stem in STDLIB
    )


def mounted_folders() -> set[str]:
    folders = set()
    for service in COMPOSE["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith(".") and (ROOT / source).is_dir():
                folders.add(source)
    return folders


@pytest.mark.parametrize("folder", sorted(mounted_folders() | {"./dags"}))
def test_no_folder_airflow_imports_from_shadows_the_standard_library(folder: str) -> None:
    assert shadowing(ROOT / folder) == []


def test_the_check_sees_the_package_modules_that_would_shadow() -> None:
    # the reason plugins/ is installed as a package and never mounted as the plugins folder
    assert "plugins/fillpdf_provider/quality/operator.py" in shadowing(ROOT / "plugins")
    assert "./plugins" not in mounted_folders()
