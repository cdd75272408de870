"""``fillpdf batch --output-format merged|zip``: every row in one flattened PDF or one archive,
as ``BatchFillOperator(output_format=...)`` writes them, published only once whole."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pdfplumber
import pyarrow.parquet as pq
import pytest
from pypdf import PdfReader

from fillpdf_provider.engine.batch import BatchSummary
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.output_formats import fill_one_file
from kits.cli_support import ROOT, assert_clean_error, run
from kits.tables import people_csv, write_csv

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"
ONE_FILE = {"merged": "merged.pdf", "zip": "filled.zip"}
TOO_LONG = "W" * 2000  # more than the name box holds even at the smallest font size


def batch(rows: Path, out_dir: Path, output_format: str, *extra: object) -> str:
    """``fillpdf batch`` into ``out_dir``; its stderr. Fails the test on any exit but 0."""
    done = run(
        "batch", SAMPLE_FORM, rows, "--out-dir", out_dir,
        "--output-format", output_format, "--no-progress", *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


def listing(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()}


def test_merged_is_one_flattened_pdf_of_every_row_in_row_order(tmp_path: Path) -> None:
    rows = people_csv(tmp_path, 5)
    stderr = batch(rows, tmp_path / "a", "merged")
    assert f"wrote {tmp_path / 'a' / 'merged.pdf'}" in stderr
    assert listing(tmp_path / "a") == {"merged.pdf", "manifest.parquet"}
    merged = PdfReader(tmp_path / "a" / "merged.pdf")
    assert len(merged.pages) == 5 * len(PdfReader(SAMPLE_FORM).pages)
    assert not merged.get_fields()  # flattened: the rows' fields would share their names
    with pdfplumber.open(tmp_path / "a" / "merged.pdf") as pdf:
        texts = [page.extract_text() for page in pdf.pages]
    assert [f"Person {i}" in text for i, text in enumerate(texts, 1)] == [True] * 5, texts
    manifest = pq.read_table(tmp_path / "a" / "manifest.parquet").to_pylist()
    assert [(r["row"], r["status"]) for r in manifest] == [(i, "ok") for i in range(1, 6)]
    batch(rows, tmp_path / "b", "merged")
    assert (tmp_path / "b" / "merged.pdf").read_bytes() == (
        tmp_path / "a" / "merged.pdf"
    ).read_bytes()


def test_zip_holds_each_rows_pdf_under_its_name(tmp_path: Path) -> None:
    rows = people_csv(tmp_path, 4)
    template = "{row}-{full_name}.pdf"
    batch(rows, tmp_path / "a", "zip", "--name-template", template)
    assert listing(tmp_path / "a") == {"filled.zip", "manifest.parquet"}
    manifest = pq.read_table(tmp_path / "a" / "manifest.parquet").to_pylist()
    with zipfile.ZipFile(tmp_path / "a" / "filled.zip") as archive:
        assert archive.testzip() is None
        assert archive.namelist() == [r["path"] for r in manifest]
        assert archive.namelist() == [f"{i}-Person {i}.pdf" for i in range(1, 5)]
        for i, name in enumerate(archive.namelist(), 1):
            with archive.open(name) as entry:
                pdf = PdfReader(entry)
                assert len(pdf.pages) == len(PdfReader(SAMPLE_FORM).pages)
                assert pdf.get_fields()["full_name"].value == f"Person {i}"  # not flattened
    batch(rows, tmp_path / "b", "zip", "--name-template", template)
    assert (tmp_path / "b" / "filled.zip").read_bytes() == (
        tmp_path / "a" / "filled.zip"
    ).read_bytes()


@pytest.mark.parametrize("output_format", ["merged", "zip"])
def test_a_bad_row_is_left_out_and_named_in_the_manifest(
    tmp_path: Path, output_format: str
) -> None:
    people = [{"full_name": f"Person {i}", "city": "Town"} for i in range(1, 5)]
    people[1]["full_name"] = TOO_LONG
    rows = write_csv(tmp_path / "rows.csv", people)
    out_dir = tmp_path / "out"
    done = run(
        "batch", SAMPLE_FORM, rows, "--out-dir", out_dir,
        "--output-format", output_format, "--no-progress",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "row 2: " in done.stderr and "filled 3 of 4 rows" in done.stdout
    assert listing(out_dir) == {ONE_FILE[output_format], "manifest.parquet"}
    manifest = pq.read_table(out_dir / "manifest.parquet").to_pylist()
    assert [r["status"] for r in manifest] == ["ok", "error", "ok", "ok"]
    if output_format == "merged":
        assert len(PdfReader(out_dir / "merged.pdf").pages) == 3
    else:
        with zipfile.ZipFile(out_dir / "filled.zip") as archive:
            assert archive.namelist() == ["1.pdf", "3.pdf", "4.pdf"]


@pytest.mark.parametrize("output_format", ["merged", "zip"])
def test_a_batch_stopped_by_a_bad_row_publishes_nothing(tmp_path: Path, output_format: str) -> None:
    people = [{"full_name": f"Person {i}", "city": "Town"} for i in range(1, 6)]
    people[2]["full_name"] = TOO_LONG
    rows = write_csv(tmp_path / "rows.csv", people)
    out_dir = tmp_path / "out"
    done = run(
        "batch", SAMPLE_FORM, rows, "--out-dir", out_dir,
        "--output-format", output_format, "--on-error", "fail", "--no-progress",
    )  # fmt: skip
    assert_clean_error(done, "row 3")
    assert not out_dir.exists() or listing(out_dir) == set(), listing(out_dir)


@pytest.mark.parametrize("output_format", ["merged", "zip"])
def test_a_batch_refused_before_its_first_row_leaves_no_folder(
    tmp_path: Path, output_format: str
) -> None:
    out_dir = tmp_path / "out"
    done = run(
        "batch", SAMPLE_FORM, people_csv(tmp_path, 3), "--out-dir", out_dir,
        "--output-format", output_format, "--name-template", "{last_name}.pdf",
    )  # fmt: skip
    assert_clean_error(done, "last_name")
    assert not out_dir.exists()


@pytest.mark.parametrize("output_format", ["merged", "zip"])
def test_nothing_is_published_before_every_row_is_done(tmp_path: Path, output_format: str) -> None:
    """Watched after each row: the outputs' folder shows only a hidden folder the file is
    built in (beside its target, so publishing is a rename), until the file and then the
    manifest appear whole."""
    out_dir = tmp_path / "out"
    seen: list[set[str]] = []

    def watch(summary: BatchSummary, seconds: float) -> None:
        if not summary.finished:
            seen.append(listing(out_dir))

    summary = fill_one_file(
        Template(SAMPLE_FORM), people_csv(tmp_path, 6), out_dir, output_format,
        progress=watch, progress_every=0,
    )  # fmt: skip
    assert len(seen) == 6 and summary.ok == 6
    for names in seen:
        assert len(names) == 1 and next(iter(names)).startswith(".fillpdf-staging-"), names
    assert listing(out_dir) == {ONE_FILE[output_format], "manifest.parquet"}
    assert summary.manifest == str(out_dir / "manifest.parquet")


@pytest.mark.parametrize("output_format", ["merged", "zip"])
def test_a_table_of_no_rows_gives_an_empty_file(tmp_path: Path, output_format: str) -> None:
    rows = tmp_path / "empty.csv"
    rows.write_text("full_name,city\n", encoding="utf-8")
    batch(rows, tmp_path / "out", output_format)
    path = tmp_path / "out" / ONE_FILE[output_format]
    if output_format == "merged":
        assert len(PdfReader(path).pages) == 0
    else:
        with zipfile.ZipFile(path) as archive:
            assert archive.namelist() == []


def test_the_cli_formats_are_the_engines() -> None:
    from fillpdf_provider.cli import ONE_FILE as CLI_ONE_FILE
    from fillpdf_provider.cli import OUTPUT_FORMATS
    from fillpdf_provider.engine import output_formats

    assert OUTPUT_FORMATS == output_formats.OUTPUT_FORMATS
    assert (
        CLI_ONE_FILE
        == ONE_FILE
        == {
            "merged": output_formats.MERGED_NAME,
            "zip": output_formats.ZIP_NAME,
        }
    )
