"""A batch whose columns match no field is refused before anything is written."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fillpdf_provider.engine import FieldError, Template
from fillpdf_provider.engine.batch import fill_rows
from kits.cli_support import ROOT, assert_clean_error, run

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def template() -> Template:
    return Template.open(SAMPLE_FORM)


def test_no_matching_column_refuses_the_batch(template: Template, tmp_path: Path) -> None:
    rows = write_csv(
        tmp_path / "rows.csv",
        ["Fullname", "E-mail address", "nickname"],
        [["Ada", "ada@example.com", "a"]],
    )
    out_dir = tmp_path / "out"
    with pytest.raises(FieldError) as caught:
        fill_rows(template, rows, out_dir)
    message = str(caught.value)
    assert "\n" not in message
    assert "column 'Fullname' matches no field (did you mean 'full_name'?)" in message
    assert "'E-mail address'" in message and "'email'" in message
    assert "column 'nickname' matches no field" in message
    assert not out_dir.exists()


def test_no_matching_parquet_column_refuses_too(template: Template, tmp_path: Path) -> None:
    pq.write_table(pa.table({"FullName ": ["Ada"]}), tmp_path / "rows.parquet")
    with pytest.raises(FieldError, match="full_name"):
        fill_rows(template, tmp_path / "rows.parquet", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_many_unmatched_columns_are_cut_short(template: Template, tmp_path: Path) -> None:
    header = [f"col{i}" for i in range(30)]
    rows = write_csv(tmp_path / "rows.csv", header, [["x"] * 30])
    with pytest.raises(FieldError, match="and 20 more columns"):
        fill_rows(template, rows, tmp_path / "out")


def test_a_header_without_rows_is_still_an_empty_batch(template: Template, tmp_path: Path) -> None:
    rows = write_csv(tmp_path / "rows.csv", ["full_name", "email"], [])
    summary = fill_rows(template, rows, tmp_path / "out")
    assert (summary.rows, summary.failed) == (0, 0)


def test_some_matching_columns_fill_and_suggest_for_the_rest(
    template: Template, tmp_path: Path
) -> None:
    rows = write_csv(
        tmp_path / "rows.csv",
        ["full_name", "Emial", "nickname"],
        [["Ada", "ada@example.com", "a"]],
    )
    summary = fill_rows(template, rows, tmp_path / "out")
    assert (summary.ok, summary.failed) == (1, 0)
    assert summary.unmapped_columns == ["Emial (did you mean email?)", "nickname"]
    as_dict = summary.as_dict()
    assert as_dict["unmapped_columns"] == summary.unmapped_columns
    assert all(isinstance(c, str) for c in as_dict["unmapped_columns"])  # type: ignore[attr-defined]


def test_cli_batch_with_no_matching_column_is_one_clear_line(tmp_path: Path) -> None:
    rows = write_csv(tmp_path / "rows.csv", ["Fullname", "City Name"], [["Ada", "Athens"]])
    out_dir = tmp_path / "out"
    done = run("batch", SAMPLE_FORM, rows, "--out-dir", out_dir)
    assert_clean_error(
        done,
        "fillpdf batch: error:",
        "column 'Fullname' matches no field (did you mean 'full_name'?)",
        "'City Name'",
        only_line=True,
    )
    assert not out_dir.exists()


def test_cli_batch_reports_did_you_mean_for_ignored_columns(tmp_path: Path) -> None:
    rows = write_csv(tmp_path / "rows.csv", ["full_name", "Emial"], [["Ada", "a@b.c"]])
    done = run("batch", SAMPLE_FORM, rows, "--out-dir", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "Emial (did you mean email?)" in done.stderr
