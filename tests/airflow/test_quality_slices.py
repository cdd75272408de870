"""The input and manifest checks slice by slice give the report they give on the whole table.

A file of a million rows is checked ``slice_rows`` rows at a time (``quality.slices``); the
rows a failure names, its counts and the values it quotes must not depend on where the
slices fall, nor must the expectations that span rows (repeated row numbers, files and
sha256 whose partners lie in other slices, the row count).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fillpdf_provider.engine.batch import fill_rows
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.quality import input_rows_check, manifest_check
from fillpdf_provider.quality.report import QualityReport
from tests.airflow.test_quality import (
    FORM,
    INPUT_CASES,
    MANIFEST_CASES,
    ROWS,
    _cell,
    _failed,
    _same_sha,
    _set,
    sample_rows,
)

WHOLE = 10**9
SLICES = (3, 7)


@pytest.fixture(scope="module")
def form() -> Template:
    return Template.open(FORM)


@pytest.fixture(scope="module")
def filled(form: Template, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("filled")
    fill_rows(form, ROWS, out, name_template="{row}.pdf")
    return out


def same(sliced: QualityReport, whole: QualityReport) -> None:
    assert sliced.success == whole.success
    assert (sliced.rows, sliced.expectations) == (whole.rows, whole.expectations)
    assert sliced.failures == whole.failures
    assert sliced.summary().split(" (")[0] == whole.summary().split(" (")[0]


def bad_rows() -> pd.DataFrame:
    """Every input mutation at once but the dropped column, in rows across the table."""
    rows = sample_rows()
    for _, mutate, *_ in INPUT_CASES[1:]:
        rows = mutate(rows)
    for row, value in ((11, "perhaps"), (19, "sí"), (25, "2")):
        rows = _set(row, "newsletter", value)(rows)
    return _set(23, "plan", " Platinum ")(_set(13, "email", "")(rows))


@pytest.mark.parametrize("slice_rows", SLICES)
def test_input_check_in_slices(form: Template, tmp_path: Path, slice_rows: int) -> None:
    rows = bad_rows()
    csv = tmp_path / "rows.csv"
    rows.to_csv(csv, index=False)
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), parquet)
    for source in (rows, csv, parquet):
        whole = input_rows_check(source, form, slice_rows=WHOLE)
        assert not whole.success and len(whole.failures) >= 5
        same(input_rows_check(source, form, slice_rows=slice_rows), whole)
    dropped = rows.drop(columns=["email"])
    same(
        input_rows_check(dropped, form, slice_rows=slice_rows),
        input_rows_check(dropped, form, slice_rows=WHOLE),
    )


def test_a_passing_file_and_an_empty_one_pass_in_slices(form: Template, tmp_path: Path) -> None:
    csv = tmp_path / "rows.csv"
    sample_rows().to_csv(csv, index=False)
    assert input_rows_check(csv, form, slice_rows=4).success
    header = tmp_path / "header.csv"
    header.write_text(",".join(sample_rows().columns) + "\n")
    same(input_rows_check(header, form, slice_rows=4), input_rows_check(header, form))


def bad_manifest(filled: Path) -> pd.DataFrame:
    """Every row-wise manifest defect, and repeats whose partners lie far apart."""
    frame = pq.read_table(filled / "manifest.parquet").to_pandas()
    for _, mutate, expectation, *_ in MANIFEST_CASES:
        if expectation not in ("expect_column_to_exist", "expect_table_row_count_to_equal"):
            frame = mutate(frame)
    frame = _same_sha(24, 1)(_same_sha(17, 2)(frame))  # other values: refused
    frame = _cell(22, "path", "2.pdf")(_cell(23, "row", 1)(frame))
    return _failed(20, "")(frame)


@pytest.mark.parametrize("slice_rows", SLICES)
def test_manifest_check_in_slices(
    filled: Path, form: Template, tmp_path: Path, slice_rows: int
) -> None:
    frame = bad_manifest(filled)
    path = tmp_path / "manifest.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    for source in (frame, path):
        for kwargs in ({"input_rows": ROWS, "template_fields": form}, {"expected_rows": 25}, {}):
            whole = manifest_check(source, slice_rows=WHOLE, **kwargs)  # type: ignore[arg-type]
            assert not whole.success and len(whole.failures) >= 10
            sliced = manifest_check(source, slice_rows=slice_rows, **kwargs)  # type: ignore[arg-type]
            same(sliced, whole)
    short = frame.drop(index=[7, 8]).drop(columns=["row"])
    same(
        manifest_check(short, 25, slice_rows=slice_rows),
        manifest_check(short, 25, slice_rows=WHOLE),
    )


def test_rows_with_the_same_values_may_share_a_sha256_across_slices(
    filled: Path, form: Template
) -> None:
    rows = sample_rows()
    rows.loc[20] = rows.loc[0]
    frame = _same_sha(21, 1)(pq.read_table(filled / "manifest.parquet").to_pandas())
    for slice_rows in (*SLICES, WHOLE):
        report = manifest_check(frame, input_rows=rows, template_fields=form, slice_rows=slice_rows)
        assert report.success, report.summary()
    frame = _same_sha(9, 2)(_cell(4, "sha256", None)(frame))  # and one that is refused
    whole = manifest_check(frame, input_rows=rows, template_fields=form, slice_rows=WHOLE)
    assert [(f.column, f.element_count) for f in whole.failures] == [("sha256", 25), ("sha256", 24)]
    for slice_rows in SLICES:
        same(
            manifest_check(frame, input_rows=rows, template_fields=form, slice_rows=slice_rows),
            whole,
        )


def test_rows_with_the_same_sha256_and_values_after_the_first_are_not_new() -> None:
    """``first_of_pairs`` marks what pandas' ``duplicated(keep="first")`` leaves, on pairs
    that repeat in either column alone and in both."""
    import numpy as np

    from fillpdf_provider.quality.manifest_whole import first_of_pairs

    rng = np.random.default_rng(7)
    sha = rng.integers(0, 5, 2000).astype(np.uint64)
    values = rng.integers(0, 7, 2000).astype(np.uint64)
    expected = ~pd.DataFrame({"sha": sha, "values": values}).duplicated(keep="first")
    assert first_of_pairs(sha, values).tolist() == expected.tolist()
    assert first_of_pairs(sha[:0], values[:0]).tolist() == []


def test_a_manifest_row_numbered_outside_the_input_has_no_input_key() -> None:
    """Row numbers past the input, below 1, null or not numbers at all share one key, as
    rows whose values can't be told apart."""
    import numpy as np

    from fillpdf_provider.quality.manifest_whole import NULL_HASH, keys_by_row

    keys = np.array([11, 12, 13], dtype=np.uint64)
    ids = pa.chunked_array([[3, 1, 4, 0, None, -2]], pa.int64())
    assert keys_by_row(ids, keys).tolist() == [13, 11, *[int(NULL_HASH)] * 4]
    assert keys_by_row(pa.chunked_array([["x", "2"]]), keys).tolist() == [int(NULL_HASH)] * 2
    assert keys_by_row(ids, keys[:0]).tolist() == [int(NULL_HASH)] * 6


def test_a_row_number_repeated_beside_a_null_in_another_slice_is_found(filled: Path) -> None:
    """A slice whose row numbers hold a null reads them as floats; 5.0 and 5 must still be
    the same row number (hashed alike in every slice)."""
    frame = pq.read_table(filled / "manifest.parquet").to_pandas()
    frame["row"] = frame["row"].astype("Int64")
    frame.loc[4, "row"] = 1  # row 1 again, read in the piece of rows 5-6 (pieces of 2 here)
    frame.loc[5, "row"] = None  # which a null makes floats
    for slice_rows in (10, WHOLE):
        report = manifest_check(frame, slice_rows=slice_rows)
        (repeated,) = [
            f for f in report.failures
            if f.expectation == "expect_column_values_to_be_unique" and f.column == "row"
        ]  # fmt: skip
        assert repeated.unexpected_count == 2 and repeated.element_count == len(frame)
