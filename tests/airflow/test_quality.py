"""The quality suites: the sample form and rows pass, and each expectation fails on its own
crafted bad input, named in the summary by column and row ids. Then the task side: the JSON
results, the failing task, and the operator before and after a fill."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowFailException

from fillpdf_provider.engine.batch import fill_rows
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.quality import (
    QualityCheckOperator,
    QualityReport,
    enforce,
    input_rows_check,
    manifest_check,
    page_boxes,
    run_check,
    schema_check,
)
from kits.formkit import Spec, build_form

INCLUDE = Path(__file__).resolve().parents[2] / "include"
FORM = INCLUDE / "sample_form.pdf"
ROWS = INCLUDE / "sample_rows.csv"


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))


@pytest.fixture(scope="module")
def form() -> Template:
    return Template.open(FORM)


@pytest.fixture(scope="module")
def dated(form: Template) -> list[Field]:
    """The sample form's fields with date_of_birth as a date field (the form has none)."""
    return [
        dataclasses.replace(f, type="date", max_length=None) if f.name == "date_of_birth" else f
        for f in form.fields
    ]


@pytest.fixture(scope="module")
def filled(form: Template, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample rows filled once; its manifest is the good manifest."""
    out = tmp_path_factory.mktemp("filled")
    fill_rows(form, ROWS, out, name_template="{row}.pdf")
    return out


def sample_rows() -> pd.DataFrame:
    """The sample rows as the batch reads a CSV: every cell text, empty cells ''."""
    return pd.read_csv(ROWS, dtype=str, keep_default_na=False)


def only_failure(report: QualityReport) -> tuple[str, str | None, tuple[int, ...]]:
    assert not report.success
    assert len(report.failures) == 1, report.summary()
    failure = report.failures[0]
    return failure.expectation, failure.column, failure.sample_rows


def assert_named(report: QualityReport, column: str, rows: tuple[int, ...]) -> None:
    """The summary names the column (a schema's key) and the rows it saw: row ids, a schema's
    entries as schema[i], a manifest's own row numbers as the values they are."""
    summary = report.summary()
    if report.kind == "schema":
        key = "rect" if "," in column else column  # a rect's edge checks name the rect
        assert f"- key {key!r}: " in summary, summary
        for row in rows:
            assert f"schema[{row - 1}]" in summary, summary
        return
    assert f"column {column!r}" in summary, summary
    if rows and column == "row":
        assert all(str(row) in summary.splitlines()[1] for row in rows), summary
    elif rows:
        label = "row" if len(rows) == 1 else "rows"
        assert f"{label} {', '.join(map(str, rows))}" in summary, summary


# --------------------------------------------------------------------------- input rows


def test_sample_rows_pass(form: Template, dated: list[Field], tmp_path: Path) -> None:
    report = input_rows_check(ROWS, form)
    assert report.success, report.summary()
    assert report.rows == 25 and report.expectations > 14 and not report.failures
    assert "passed" in report.summary()
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pandas(sample_rows(), preserve_index=False), parquet)
    assert input_rows_check(parquet, form).success
    assert input_rows_check(ROWS, dated).success  # every date_of_birth is YYYY-MM-DD


def test_options_the_form_spells_with_spaces_pass_as_inspect_lists_them(tmp_path: Path) -> None:
    """A radio on-state "Yes " (trailing space) is what inspect offers and fill takes."""
    odd = Template(
        build_form(
            [Spec("answer", "radio", (40, 650, 200, 666), options=["Yes ", " No"],
                  with_appearance=True)]
        )
    )  # fmt: skip
    rows = tmp_path / "rows.csv"
    rows.write_text('answer\n"Yes "\n" No"\nno\n', encoding="utf-8")
    report = input_rows_check(rows, odd)
    assert report.success, report.summary()
    rows.write_text("answer\nmaybe\n", encoding="utf-8")
    assert not input_rows_check(rows, odd).success


def test_case_spaces_and_typed_cells_are_taken_as_the_filler_takes_them(form: Template) -> None:
    rows = sample_rows()
    rows.loc[0, ["newsletter", "plan", "country"]] = [" YES ", "premium ", "GERMANY"]
    rows.loc[1, "photo_consent"] = "✓"
    assert input_rows_check(rows, form).success
    typed = sample_rows().head(3)
    typed["newsletter"] = [True, False, None]
    typed["photo_consent"] = [1, 0, 1]
    typed["zip"] = [12345, 54321, None]
    assert input_rows_check(typed, form).success
    typed["photo_consent"] = [1, 2, 0]  # a checkbox takes 0 or 1, not 2
    assert only_failure(input_rows_check(typed, form))[1:] == ("photo_consent", (2,))


Mutation = Callable[[pd.DataFrame], pd.DataFrame]


def _set(row: int, column: str, value: str) -> Mutation:
    def change(rows: pd.DataFrame) -> pd.DataFrame:
        rows.loc[row - 1, column] = value
        return rows

    return change


INPUT_CASES: list[tuple[str, Mutation, str, str, tuple[int, ...]]] = [
    ("missing column", lambda r: r.drop(columns=["email"]), "expect_column_to_exist", "email", ()),
    ("checkbox", _set(2, "newsletter", "maybe"), "expect_column_values_to_be_in_set",
     "newsletter", (2,)),
    ("radio option", _set(4, "plan", "Gold"), "expect_column_values_to_be_in_set", "plan", (4,)),
    ("choice option", _set(3, "country", "France"), "expect_column_values_to_be_in_set",
     "country", (3,)),
    ("max_length", _set(6, "zip", "123456"), "expect_column_value_lengths_to_be_between",
     "zip", (6,)),
    ("required", lambda r: _set(7, "email", "   ")(_set(5, "email", "")(r)),
     "expect_column_values_to_not_be_null", "email", (5, 7)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "expectation", "column", "rows"),
    [pytest.param(*case[1:], id=case[0]) for case in INPUT_CASES],
)
def test_each_input_expectation_fails_on_its_bad_input(
    form: Template, mutate: Mutation, expectation: str, column: str, rows: tuple[int, ...]
) -> None:
    report = input_rows_check(mutate(sample_rows()), form)
    assert only_failure(report) == (expectation, column, rows)
    assert_named(report, column, rows)


@pytest.mark.parametrize(
    ("value", "expectation"),
    [
        ("1982-9-25", "expect_column_values_to_match_regex"),  # parses, but not YYYY-MM-DD
        ("1982-02-30", "expect_column_values_to_match_strftime_format"),  # no such day
    ],
)
def test_date_expectations_fail_on_their_bad_input(
    dated: list[Field], value: str, expectation: str
) -> None:
    report = input_rows_check(_set(3, "date_of_birth", value)(sample_rows()), dated)
    assert only_failure(report) == (expectation, "date_of_birth", (3,))
    assert_named(report, "date_of_birth", (3,))


def test_a_mapped_column_the_rows_lack_is_named(form: Template) -> None:
    report = input_rows_check(ROWS, form, mapping={"Membership": "plan"})
    assert only_failure(report) == ("expect_column_to_exist", "Membership", ())
    assert "column 'Membership' (field 'plan') is missing" in report.summary()


def test_a_mapped_column_is_checked_as_its_field(form: Template) -> None:
    rows = _set(4, "Membership", "Gold")(sample_rows().rename(columns={"plan": "Membership"}))
    report = input_rows_check(rows, form, mapping={"Membership": "plan"})
    assert only_failure(report) == ("expect_column_values_to_be_in_set", "Membership", (4,))
    assert "column 'Membership' (field 'plan'): 1 of 25 rows" in report.summary()


def test_which_columns_are_expected(form: Template) -> None:
    rows = sample_rows().drop(columns=["plan", "notes"])
    assert input_rows_check(rows, form).success  # fields no column fills stay empty
    report = input_rows_check(rows, form, require_columns=["plan"])  # unless asked for
    assert only_failure(report) == ("expect_column_to_exist", "plan", ())
    # A required field needs its column whatever require_columns says.
    report = input_rows_check(rows.drop(columns=["email"]), form, require_columns=[])
    assert only_failure(report) == ("expect_column_to_exist", "email", ())
    # and so does a mapped one
    report = input_rows_check(rows, form, mapping={"Plan": "plan"})
    assert only_failure(report) == ("expect_column_to_exist", "Plan", ())
    renamed = sample_rows().rename(columns={"full_name": "Full Name", "zip": "ZIP"})
    assert input_rows_check(renamed, form).success  # matched by name


def test_a_bad_csv_is_reported_by_column_and_row(form: Template, tmp_path: Path) -> None:
    rows = sample_rows().drop(columns=["country"])
    rows.loc[[1, 8], "newsletter"] = ["maybe", "perhaps"]
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    report = input_rows_check(path, form, require_columns=["country"])
    lines = report.summary().splitlines()
    assert lines[0].startswith(f"Input rows check of {path} FAILED: 2 of ")
    assert lines[1] == (
        "- column 'country' is missing: no column fills the form's field 'country'. Add a "
        "column named 'country' (or map one to it with mapping=), or leave 'country' out of "
        "require_columns. [expect_column_to_exist]"
    )
    assert "column 'newsletter': 2 of 25 rows" in lines[2]
    assert "'maybe' (row 2), 'perhaps' (row 9). Write true/false" in lines[2]


# --------------------------------------------------------------------------- schema


def good_schema(form: Template) -> list[dict]:
    return [f.to_dict() for f in form.fields]


def _entry(index: int, **changes: object) -> Callable[[list[dict]], list[dict]]:
    def change(schema: list[dict]) -> list[dict]:
        schema[index].update(changes)
        return schema

    return change


PAIR = "expect_column_pair_values_a_to_be_greater_than_b"
SCHEMA_CASES: list[tuple[str, Callable[[list[dict]], list[dict]], str, str, tuple[int, ...]]] = [
    ("no name", _entry(0, name=None), "expect_column_values_to_not_be_null", "name", (1,)),
    ("no type", _entry(1, type=None), "expect_column_values_to_not_be_null", "type", (2,)),
    ("no page", _entry(2, page=None), "expect_column_values_to_not_be_null", "page", (3,)),
    ("no confidence", _entry(3, confidence=None), "expect_column_values_to_not_be_null",
     "confidence", (4,)),
    ("name pattern", _entry(0, name="Full Name"), "expect_column_values_to_match_regex",
     "name", (1,)),
    ("duplicate name", _entry(4, name="full_name"), "expect_column_values_to_be_unique",
     "name", (1, 5)),
    ("type", _entry(5, type="button"), "expect_column_values_to_be_in_set", "type", (6,)),
    ("page", _entry(6, page=1), "expect_column_values_to_be_between", "page", (7,)),
    ("left", _entry(0, rect=[-5, 690, 370, 706]), PAIR, "x0, page_left", (1,)),
    ("bottom", _entry(0, rect=[40, -5, 370, 706]), PAIR, "y0, page_bottom", (1,)),
    ("right", _entry(0, rect=[40, 690, 700, 706]), PAIR, "page_right, x1", (1,)),
    ("top", _entry(0, rect=[40, 690, 370, 800]), PAIR, "page_top, y1", (1,)),
    ("no width", _entry(7, rect=[40, 690, 40, 706]), PAIR, "x1, x0", (8,)),
    ("no height", _entry(7, rect=[40, 690, 370, 690]), PAIR, "y1, y0", (8,)),
    ("confidence", _entry(8, confidence=1.5), "expect_column_values_to_be_between",
     "confidence", (9,)),
]  # fmt: skip


def test_sample_schema_passes(form: Template) -> None:
    boxes = page_boxes(FORM)
    assert boxes == [(0.0, 0.0, 612.0, 792.0)]
    report = schema_check(form.fields, boxes)
    assert report.success, report.summary()
    assert schema_check(good_schema(form), [(612, 792)]).success


@pytest.mark.parametrize(
    ("mutate", "expectation", "column", "rows"),
    [pytest.param(*case[1:], id=case[0]) for case in SCHEMA_CASES],
)
def test_each_schema_expectation_fails_on_its_bad_entry(
    form: Template, mutate: Callable, expectation: str, column: str, rows: tuple[int, ...]
) -> None:
    report = schema_check(mutate(good_schema(form)), [(612, 792)])
    assert only_failure(report) == (expectation, column, rows)
    assert_named(report, column, rows)


def test_rects_are_checked_against_the_page_box_not_just_its_size(form: Template) -> None:
    moved = [(50, 250, 662, 1042)]  # a crop box that does not start at the origin
    report = schema_check(good_schema(form), moved)
    assert {f.column for f in report.failures} == {"x0, page_left", "y0, page_bottom"}


# --------------------------------------------------------------------------- manifest


def manifest(filled: Path) -> pd.DataFrame:
    return pq.read_table(filled / "manifest.parquet").to_pandas()


def test_good_manifest_passes(filled: Path, form: Template) -> None:
    report = manifest_check(
        filled / "manifest.parquet", input_rows=ROWS, template_fields=form.fields
    )
    assert report.success, report.summary()
    assert report.rows == 25
    assert manifest_check(filled / "manifest.parquet", 25).success
    assert manifest_check(manifest(filled), 25, input_rows=ROWS).success


def _cell(row: int, column: str, value: object) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[row - 1, column] = value
        return frame

    return change


def _failed(row: int, error: object) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[row - 1, ["status", "error"]] = ["error", error]
        return frame

    return change


def _same_sha(row: int, as_row: int) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[row - 1, "sha256"] = frame.loc[as_row - 1, "sha256"]
        return frame

    return change


NOT_NULL = "expect_column_values_to_not_be_null"
MANIFEST_CASES = [
    ("missing column", lambda m: m.drop(columns=["bytes"]), "expect_column_to_exist",
     "bytes", ()),
    ("row count", lambda m: m.drop(index=7), "expect_table_row_count_to_equal", None, ()),
    ("row twice", _cell(4, "row", 3), "expect_column_values_to_be_unique", "row", (3, 3)),
    ("row out of range", _cell(25, "row", 26), "expect_column_values_to_be_between", "row",
     (26,)),
    ("no status", _cell(3, "status", None), NOT_NULL, "status", (3,)),
    ("unknown status", _cell(3, "status", "skipped"), "expect_column_values_to_be_in_set",
     "status", (3,)),
    ("ok without path", _cell(5, "path", None), NOT_NULL, "path", (5,)),
    ("ok without sha256", _cell(5, "sha256", None), NOT_NULL, "sha256", (5,)),
    ("ok without bytes", _cell(5, "bytes", None), NOT_NULL, "bytes", (5,)),
    ("ok without pages", _cell(5, "pages", None), NOT_NULL, "pages", (5,)),
    ("error not recorded", _failed(6, None), NOT_NULL, "error", (6,)),
    ("blank error", _failed(6, "  "), NOT_NULL, "error", (6,)),
    ("zero bytes", _cell(7, "bytes", 0), "expect_column_values_to_be_between", "bytes", (7,)),
    ("zero pages", _cell(7, "pages", 0), "expect_column_values_to_be_between", "pages", (7,)),
    ("sha256 shape", _cell(8, "sha256", "XYZ"), "expect_column_values_to_match_regex",
     "sha256", (8,)),
    ("same sha256, other values", _same_sha(9, 2), "expect_column_values_to_be_unique",
     "sha256", (2, 9)),
    ("same file", _cell(10, "path", "1.pdf"), "expect_column_values_to_be_unique", "path",
     (1, 10)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "expectation", "column", "rows"),
    [pytest.param(*case[1:], id=case[0]) for case in MANIFEST_CASES],
)
def test_each_manifest_expectation_fails_on_its_bad_manifest(
    filled: Path,
    form: Template,
    mutate: Callable,
    expectation: str,
    column: str | None,
    rows: tuple[int, ...],
) -> None:
    report = manifest_check(mutate(manifest(filled)), input_rows=ROWS, template_fields=form)
    assert only_failure(report) == (expectation, column, rows)
    if column:
        assert_named(report, column, rows)
    else:
        assert "manifest: expected one row per input row (25), found 24" in report.summary()


def test_rows_that_fill_the_same_values_may_share_a_sha256(filled: Path, form: Template) -> None:
    rows = sample_rows()
    rows.loc[1] = rows.loc[0]
    rows.loc[1, "newsletter"] = "No"  # row 1 says "no": the same unticked box
    rows["member_id"] = [f"m{i}" for i in range(len(rows))]  # fills no field
    shared = _same_sha(2, 1)(manifest(filled))
    assert manifest_check(shared, input_rows=rows, template_fields=form).success
    # Without the form, every column counts: member_id and the spelling differ.
    report = manifest_check(shared, input_rows=rows)
    assert only_failure(report) == ("expect_column_values_to_be_unique", "sha256", (1, 2))


# --------------------------------------------------------------------------- the task side


def test_enforce_saves_json_and_fails_the_task_with_the_summary(
    form: Template, tmp_path: Path
) -> None:
    report = input_rows_check(_set(2, "newsletter", "maybe")(sample_rows()), form)
    target = tmp_path / "out" / "_quality" / "input.json"
    with pytest.raises(AirflowFailException) as raised:
        enforce(report, save_to=target)
    message = str(raised.value)
    assert message == report.summary()
    assert "column 'newsletter'" in message and "'maybe' (row 2)" in message
    assert message.endswith(f"Results: {target}")
    saved = json.loads(target.read_text())
    assert saved["success"] is False and saved["failed"] == 1
    assert saved["failures"][0]["sample_rows"] == [2]
    assert saved["validation"]["success"] is False  # GX's own result rides along
    assert [p.name for p in target.parent.iterdir()] == ["input.json"]  # no temp file left


def test_enforce_passes_a_good_report_through(form: Template, tmp_path: Path) -> None:
    report = run_check("input", ROWS, form, save_to=tmp_path / "input.json")
    assert report.success and json.loads((tmp_path / "input.json").read_text())["success"]
    with pytest.raises(AirflowFailException, match="'email' is missing"):
        run_check("input", sample_rows().drop(columns=["email"]), form)


def test_input_operator_fails_before_any_pdf_is_written(tmp_path: Path) -> None:
    rows = sample_rows().drop(columns=["email"])
    rows.loc[3, "photo_consent"] = "sometimes"
    rows.to_csv(tmp_path / "rows.csv", index=False)
    out = tmp_path / "out"
    check = QualityCheckOperator(
        task_id="check_input", kind="input", template=str(FORM),
        rows=str(tmp_path / "rows.csv"), output_dir=str(out),
    )  # fmt: skip
    with pytest.raises(AirflowFailException) as raised:
        check.execute(context={})  # type: ignore[arg-type]
    message = str(raised.value)
    assert "column 'email' is missing" in message
    assert "column 'photo_consent': 1 of 25 rows" in message and "row 4" in message
    assert not list(out.rglob("*.pdf"))
    assert json.loads((out / "_quality" / "input.json").read_text())["failed"] == 2


def test_operators_pass_on_good_data(filled: Path, tmp_path: Path) -> None:
    common = {"template": str(FORM), "rows": str(ROWS), "output_dir": str(filled)}
    result = QualityCheckOperator(task_id="i", kind="input", **common).execute(context={})  # type: ignore[arg-type]
    assert result["success"] and result["rows"] == 25
    assert result["results"] == str(filled / "_quality" / "input.json")
    result = QualityCheckOperator(task_id="m", kind="manifest", **common).execute(context={})  # type: ignore[arg-type]
    assert result["success"] and result["failed"] == 0
    schema = tmp_path / "form.schema.json"
    schema.write_text(json.dumps({"schema": [f.to_dict() for f in Template.open(FORM).fields]}))
    result = QualityCheckOperator(
        task_id="s", kind="schema", template=str(FORM), schema=str(schema),
        results=str(tmp_path / "schema.json"),
    ).execute(context={})  # type: ignore[arg-type]  # fmt: skip
    assert result["success"] and (tmp_path / "schema.json").exists()


def test_operator_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        QualityCheckOperator(task_id="x", kind="rows")
    with pytest.raises(ValueError, match=r"needs template= \(.*\) and rows= \("):
        QualityCheckOperator(task_id="x", kind="input")
    assert set(QualityCheckOperator.template_fields) >= {"template", "rows", "output_dir"}


def test_rows_whose_columns_fill_no_field_fail_the_check(form: Template) -> None:
    rows = sample_rows()[["notes"]].rename(columns={"notes": "remarks"}).assign(age=3)
    report = input_rows_check(rows, form, require_columns=[])
    assert not report.success
    assert "no column fills a field of the form" in report.summary()


def test_a_date_format_the_rule_cannot_read_is_not_checked(tmp_path: Path) -> None:
    """The filler takes such a date's text as given, so the check does too."""
    from fillpdf_provider.engine import Field as SchemaField

    fields = [
        SchemaField("full_name", "text", 0, (0, 0, 10, 10)),
        SchemaField("at", "date", 0, (0, 0, 10, 10)),
    ]
    rows = pd.DataFrame({"full_name": ["Ada"], "at": ["03/05/2025 10:30"]})
    assert input_rows_check(rows, fields, date_formats={"at": "mm/dd/yyyy HH:MM"}).success
    assert not input_rows_check(rows, fields, date_formats={"at": "mm/dd/yyyy"}).success
