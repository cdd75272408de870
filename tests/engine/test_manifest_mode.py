"""Every file a batch publishes (PDFs, the manifest, a chunk's manifest, a zip, a merged PDF)
gets the mode a plain ``open(path, "wb")`` would give it: 0o666 less the umask, so a team
reading the outputs can read the manifest too. Only while it is being built is a file kept
private."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fillpdf_provider.engine.batch import BatchSummary, ProgressCallback, fill_rows
from fillpdf_provider.engine.files import write_atomic
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.operators import BatchFillOperator, merge_manifests, plan_chunks
from kits.cli_support import FILLPDF, ROOT

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"
SAMPLE_ROWS = ROOT / "include" / "sample_rows.csv"
MODES = {0o022: 0o644, 0o077: 0o600, 0o027: 0o640}


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))


@pytest.fixture
def umask() -> Iterator[None]:
    """Each test sets the umask it needs; the test run's own is restored after."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def modes(folder: Path) -> dict[str, int]:
    """Every file under ``folder`` (hidden ones too) and its permission bits."""
    return {
        str(path.relative_to(folder)): stat.S_IMODE(path.stat().st_mode)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def assert_all(folder: Path, mode: int, expected: set[str]) -> None:
    found = modes(folder)
    assert expected <= set(found), sorted(found)
    assert not [name for name in found if Path(name).name.startswith(".")], sorted(found)
    wrong = {name: oct(m) for name, m in found.items() if m != mode}
    assert not wrong, (oct(mode), wrong)


def test_the_cli_publishes_every_file_with_the_umask_mode(tmp_path: Path) -> None:
    for umask, mode in MODES.items():
        out_dir = tmp_path / f"out-{umask:03o}"
        done = subprocess.run(
            [str(FILLPDF), "batch", str(SAMPLE_FORM), str(SAMPLE_ROWS), "--out-dir", str(out_dir)],
            capture_output=True,
            text=True,
            umask=umask,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert_all(out_dir, mode, {"manifest.parquet", "1.pdf", "25.pdf"})


def watch_manifest(out_dir: Path) -> tuple[ProgressCallback, list[int]]:
    """A progress callback that records the modes of the manifest while it is built."""
    building: list[int] = []

    def progress(summary: BatchSummary, seconds: float) -> None:
        building.extend(stat.S_IMODE(p.stat().st_mode) for p in out_dir.glob(".manifest-*"))

    return progress, building


def test_the_engine_keeps_the_manifest_private_until_it_is_published(
    tmp_path: Path, umask: None
) -> None:
    template = Template(SAMPLE_FORM)
    for umask_value, mode in MODES.items():
        os.umask(umask_value)
        out_dir = tmp_path / f"out-{umask_value:03o}"
        progress, building = watch_manifest(out_dir)
        fill_rows(template, SAMPLE_ROWS, out_dir, progress=progress, progress_every=0)
        assert building and set(building) == {0o600}, [oct(m) for m in building]
        assert_all(out_dir, mode, {"manifest.parquet", "1.pdf", "25.pdf"})


@pytest.mark.parametrize(
    ("output_format", "published"),
    [
        ("files", {"manifest.parquet", "1.pdf", "25.pdf"}),
        ("zip", {"manifest.parquet", "filled.zip"}),
        ("merged", {"manifest.parquet", "merged.pdf"}),
    ],
)
def test_the_operator_publishes_every_file_with_the_umask_mode(
    tmp_path: Path, umask: None, output_format: str, published: set[str]
) -> None:
    for umask_value, mode in MODES.items():
        os.umask(umask_value)
        out_dir = tmp_path / f"out-{umask_value:03o}"
        BatchFillOperator(
            task_id="t",
            template=str(SAMPLE_FORM),
            rows=str(SAMPLE_ROWS),
            output_dir=str(out_dir),
            output_format=output_format,
        ).execute(context={})  # type: ignore[arg-type]
        assert_all(out_dir, mode, published)


def test_chunk_manifests_and_their_merge_get_the_umask_mode(tmp_path: Path, umask: None) -> None:
    for umask_value, mode in MODES.items():
        os.umask(umask_value)
        out_dir = tmp_path / f"out-{umask_value:03o}"
        chunks = plan_chunks(str(SAMPLE_ROWS), rows_per_chunk=10)
        for chunk in chunks:
            BatchFillOperator(
                task_id="t",
                template=str(SAMPLE_FORM),
                rows=str(SAMPLE_ROWS),
                output_dir=str(out_dir),
                chunk=chunk,
            ).execute(context={})  # type: ignore[arg-type]
        merge_manifests(str(out_dir), chunks=chunks)
        expected = {"manifest.parquet", "_manifests/chunk-000000001.parquet", "25.pdf"}
        assert_all(out_dir, mode, expected)


def test_a_private_file_is_private_from_its_first_byte(
    tmp_path: Path, umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service's converted files (``private``) were written at the umask's mode and
    closed off after the rename; now the file is 0600 before a byte is in it and when it
    gets its name (linked from no name, or renamed from a temporary one), whatever the
    umask (0o477 would have left the owner only the right to write)."""
    seen: list[int] = []
    link, replace = os.link, os.replace

    def watching_link(source: str, target: Path, **kwargs: object) -> None:
        seen.append(stat.S_IMODE(os.stat(source, dir_fd=kwargs.get("src_dir_fd")).st_mode))
        link(source, target, **kwargs)

    def watching_replace(source: str, target: Path) -> None:
        seen.append(stat.S_IMODE(os.stat(source).st_mode))
        replace(source, target)

    monkeypatch.setattr(os, "link", watching_link)
    monkeypatch.setattr(os, "replace", watching_replace)
    for umask_value in (0o022, 0o277, 0o477):
        os.umask(umask_value)
        folder = tmp_path / f"{umask_value:03o}"
        private = write_atomic(folder / "private.pdf", b"%PDF-", private=True)
        shared = write_atomic(folder / "shared.pdf", b"%PDF-")
        os.umask(0o022)
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
        assert stat.S_IMODE(shared.stat().st_mode) == 0o666 & ~umask_value
        assert private.read_bytes() == b"%PDF-"
    assert seen[0::2] == [0o600] * 3
