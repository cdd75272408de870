"""The layers of ARCHITECTURE.md, kept: imports point one way, and no module reaches into
another package for a private name."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "plugins" / "fillpdf_provider"
#: Modules every layer may use: they import nothing of ours.
SHARED = {"fillpdf_provider", "fillpdf_provider.account", "fillpdf_provider.api_errors"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT / "plugins").with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> Iterator[tuple[int, str, str]]:
    """``(line, module, name)`` for each ``from fillpdf_provider... import name`` and each
    ``import fillpdf_provider...`` (name empty) in ``path``, at any depth."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fillpdf_provider"):
            for alias in node.names:
                yield node.lineno, node.module or "", alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("fillpdf_provider"):
                    yield node.lineno, alias.name, ""


def targets(path: Path) -> Iterator[tuple[int, str]]:
    """The modules of ours that ``path`` imports (a name may itself be a module)."""
    for line, module, name in imports(path):
        candidate = f"{module}.{name}" if name else module
        as_module = PACKAGE.parent / Path(*candidate.split("."))
        yield (
            line,
            candidate if as_module.with_suffix(".py").exists() or as_module.is_dir() else (module),
        )


def package_files(sub: str) -> list[Path]:
    folder = PACKAGE / sub if sub else PACKAGE
    return sorted(folder.rglob("*.py"))


def test_the_engine_imports_nothing_of_ours_outside_it() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for path in package_files("engine")
        for line, target in targets(path)
        if not target.startswith("fillpdf_provider.engine")
    ]
    assert not found, found


def test_the_service_uses_only_the_engine_and_the_shared_modules() -> None:
    allowed = ("fillpdf_provider.service", "fillpdf_provider.engine")
    found = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for path in package_files("service")
        for line, target in targets(path)
        if not target.startswith(allowed) and target not in SHARED
    ]
    assert not found, found


@pytest.mark.parametrize("shared", sorted(SHARED - {"fillpdf_provider"}))
def test_the_shared_modules_import_nothing_of_ours(shared: str) -> None:
    path = PACKAGE.parent / (shared.replace(".", "/") + ".py")
    assert not list(targets(path)), shared


def test_nothing_below_the_airflow_side_imports_it() -> None:
    airflow_side = ("hooks", "operators", "sensors", "triggers", "quality", "ui")
    lower = [*package_files("engine"), *package_files("service"), PACKAGE / "client.py"]
    found = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for path in lower
        for line, target in targets(path)
        if target.split(".")[1:2] and target.split(".")[1] in airflow_side
    ]
    assert not found, found


def _package_of(module: str) -> str:
    path = PACKAGE.parent / Path(*module.split("."))
    return module if path.is_dir() else module.rpartition(".")[0]


def test_no_private_name_is_imported_from_another_package() -> None:
    """Across plugins, tests, kits, benchmarks, include and dags: a name with a leading
    underscore is used only inside its own package."""
    found = []
    for top in ("plugins", "tests", "kits", "benchmarks", "include", "dags"):
        for path in sorted((ROOT / top).rglob("*.py")):
            here = module_name(path) if top == "plugins" else top
            for line, module, name in imports(path):
                private = name.startswith("_") and not name.startswith("__")
                if private and _package_of(module) != _package_of(here):
                    found.append(f"{path.relative_to(ROOT)}:{line}: {module}.{name}")
    assert not found, "\n".join(found)
