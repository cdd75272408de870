"""The input check honours the fill's tolerance: rows whose values the form can't take are
the fill's failed rows, so as many as ``max_failed_rows`` allows pass the check (a row with
two bad values is one row), a missing column never does, and the summary names the
tolerance. Its count of expectations counts the column rule's checks too."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowFailException

from fillpdf_provider.engine.filler import Template
from fillpdf_provider.quality import QualityCheckOperator, input_rows_check

INCLUDE = Path(__file__).resolve().parents[2] / "include"
FORM = INCLUDE / "sample_form.pdf"


@pytest.fixture(scope="module")
def form() -> Template:
    return Template.open(FORM)


def bad_rows(folder: Path, *, drop: str | None = None) -> Path:
    """Six sample rows, three of them bad: row 2 (a checkbox), row 4 (an option and a
    checkbox: one row, two bad values), row 5 (a required field empty)."""
    with (INCLUDE / "sample_rows.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:6]
    rows[1]["newsletter"] = "maybe"
    rows[3]["plan"], rows[3]["newsletter"] = "Gold", "perhaps"
    rows[4]["email"] = ""
    if drop:
        rows = [{k: v for k, v in row.items() if k != drop} for row in rows]
    path = folder / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize(
    ("limit", "passes"),
    [(None, False), (0, False), (2, False), (3, True), (0.5, True), ("3", True)],
)
def test_bad_rows_within_max_failed_rows_pass_and_the_summary_names_it(
    form: Template, tmp_path: Path, limit: float | str | None, passes: bool
) -> None:
    report = input_rows_check(bad_rows(tmp_path), form, max_failed_rows=limit)
    assert report.success is passes
    assert len(report.failures) == 3  # still listed: the fill records those rows as failed
    summary = report.summary()
    if limit is None:  # no tolerance given: every failure fails, as before
        assert report.bad_rows is None and "max_failed_rows" not in summary
        return
    assert report.bad_rows == 3  # rows 2, 4 and 5; row 4's two bad values are one row
    assert report.brief()["bad_rows"] == 3
    if passes:
        assert "3 rows with values the form can't take, within max_failed_rows (3)" in summary
        assert summary.startswith("Input rows check of") and " passed: " in summary
    else:
        assert f"3 rows have values the form can't take; max_failed_rows allows {limit}" in (
            summary
        )
        assert "raise max_failed_rows to 3" in summary


def test_the_tolerance_counts_rows_across_slices(form: Template, tmp_path: Path) -> None:
    whole = input_rows_check(bad_rows(tmp_path), form, max_failed_rows=2)
    sliced = input_rows_check(bad_rows(tmp_path), form, max_failed_rows=2, slice_rows=2)
    assert (sliced.bad_rows, sliced.success) == (whole.bad_rows, whole.success) == (3, False)
    # the full lists of failing rows were for the count: the results keep their samples
    for outcome in sliced.results["results"]:
        assert "unexpected_index_list" not in outcome["result"]


def test_more_bad_rows_than_a_sample_holds_are_all_counted(form: Template, tmp_path: Path) -> None:
    """A failure samples SAMPLE_SIZE rows; past that, the rows are listed in full to be
    counted, and the results keep their samples only."""
    from fillpdf_provider.quality.context import SAMPLE_SIZE

    with (INCLUDE / "sample_rows.csv").open(encoding="utf-8", newline="") as handle:
        row = next(csv.DictReader(handle))
    bad = SAMPLE_SIZE + 7
    rows = [{**row, "newsletter": "maybe" if n < bad else "yes"} for n in range(bad + 5)]
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    report = input_rows_check(path, form, max_failed_rows=bad)
    assert (report.bad_rows, report.success) == (bad, True)
    assert not input_rows_check(path, form, max_failed_rows=bad - 1).success
    for outcome in report.results["results"]:
        assert "unexpected_index_list" not in outcome["result"]
        assert len(outcome["result"].get("partial_unexpected_index_list") or []) <= SAMPLE_SIZE


def test_a_missing_column_is_never_tolerated(form: Template, tmp_path: Path) -> None:
    report = input_rows_check(bad_rows(tmp_path, drop="email"), form, max_failed_rows=100)
    assert not report.success
    assert "A missing or mistaken column fails every row, whatever max_failed_rows (100)" in (
        report.summary()
    )


def test_the_operator_takes_the_tolerance(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))
    rows = str(bad_rows(tmp_path))
    common = {"kind": "input", "template": str(FORM), "rows": rows}
    with pytest.raises(AirflowFailException, match="max_failed_rows allows 2"):
        QualityCheckOperator(task_id="a", max_failed_rows=2, **common).execute(context={})  # type: ignore[arg-type]
    result = QualityCheckOperator(task_id="b", max_failed_rows="3", **common).execute(context={})  # type: ignore[arg-type]
    assert result["success"] and result["failed"] == 3 and result["failed_rows_allowed"] == 3


def test_the_count_of_expectations_counts_the_column_rule(form: Template) -> None:
    """Rows whose columns fill nothing, on a form that requires nothing: GX runs no
    expectation, and the column rule checked each column and the rows as a whole."""
    fields = [f for f in form.fields if not f.required]
    rows = pa.table({"a": ["1"], "b": ["2"], "c": ["3"]})
    report = input_rows_check(rows, fields, strict_columns=True)
    assert len(report.failures) == 4  # the rows fill nothing, and each column
    assert report.expectations == 4
    assert "4 of 4 expectations failed" in report.summary()
    assert report.expectations >= len(report.failures)
