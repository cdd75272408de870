"""What a quality check says, to a new user and to an ops team reading a task log.

A check's run logs only its own lines (and real warnings): nothing from Great Expectations,
which logs about 200 INFO lines as it loads. Each failure names the column, key or file,
quotes the offending values exactly as the user wrote them, and says what to do.

GX loads once per process, and a task runs in a process of its own; ``fresh_gx`` gives a
test that process's start (GX not imported, its loggers untouched) and puts everything back
after, so the count does not depend on which test imported GX first.
"""

from __future__ import annotations

import csv
import json
import logging
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowFailException

from fillpdf_provider.engine.batch import fill_rows
from fillpdf_provider.engine.errors import FieldValueError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.quality import (
    QualityCheckOperator,
    QualityReport,
    input_rows_check,
    manifest_check,
    schema_check,
)

INCLUDE = Path(__file__).resolve().parents[2] / "include"
FORM = INCLUDE / "sample_form.pdf"
ROWS = INCLUDE / "sample_rows.csv"
GX = "great_expectations"
QUALITY = "fillpdf_provider.quality"
# Libraries GX pulls in that could talk in a task log too.
THIRD_PARTY = (GX, "altair", "tqdm", "posthog", "matplotlib", "numexpr", "jsonschema")


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))


@pytest.fixture(scope="module")
def form() -> Template:
    return Template.open(FORM)


def _reloaded(name: str) -> bool:
    return name == GX or name.startswith((f"{GX}.", f"{QUALITY}."))


@pytest.fixture
def fresh_gx(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A task process's start: GX and the quality modules not imported, GX's loggers as no
    one has set them. Every module, attribute and logger is put back afterwards.

    A test that uses it reaches the checks through the package (``from
    fillpdf_provider.quality import ...`` inside the test), or through the operator, which
    imports them when it runs: a name this module imported before would run the old modules
    against the new GX.
    """
    import pydantic.v1.class_validators as validators

    # GX's pydantic models refuse to be declared twice in a process, by name; a second
    # import of GX is what this fixture is for.
    monkeypatch.setattr(validators, "_FUNCS", set())
    modules = dict(sys.modules)
    package = sys.modules[QUALITY]
    attributes = dict(vars(package))
    loggers = {
        name: (logger.level, logger.propagate, list(logger.handlers))
        for name, logger in list(logging.Logger.manager.loggerDict.items())
        if isinstance(logger, logging.Logger) and (name == GX or name.startswith(f"{GX}."))
    }
    for name in [n for n in sys.modules if _reloaded(n)]:
        del sys.modules[name]
        if name.startswith(f"{QUALITY}."):
            vars(package).pop(name.rpartition(".")[2], None)
    for name in loggers:
        logger = logging.getLogger(name)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
        logger.handlers.clear()
    try:
        yield
    finally:
        # Only GX's and the quality package's modules go back: a module first imported
        # during the test (Airflow's, by a DAG run) stays, since importing it twice would
        # declare its tables twice.
        for name in [n for n in sys.modules if _reloaded(n)]:
            del sys.modules[name]
        sys.modules.update({n: m for n, m in modules.items() if _reloaded(n)})
        vars(package).clear()
        vars(package).update(attributes)
        for name, (level, propagate, handlers) in loggers.items():
            logger = logging.getLogger(name)
            logger.setLevel(level)
            logger.propagate = propagate
            logger.handlers[:] = handlers


def sample_rows() -> pd.DataFrame:
    """The sample rows as the batch reads a CSV: every cell text, empty cells ''."""
    return pd.read_csv(ROWS, dtype=str, keep_default_na=False)


def _from_gx(text: str) -> bool:
    return any(name in text for name in THIRD_PARTY)


def noise(records: list[logging.LogRecord], out: str, err: str) -> list[str]:
    """Log records and printed lines that come from GX or the libraries it uses, including
    warnings GX's own modules raise (warnings about the user's data would be real)."""
    found = [
        f"{r.levelname} {r.name}: {r.getMessage()[:120]}"
        for r in records
        if r.name.startswith(THIRD_PARTY) or _from_gx(r.getMessage())
    ]
    found += [line[:160] for line in (out + err).splitlines() if _from_gx(line)]
    return found


def lines_of(records: list[logging.LogRecord], out: str, err: str) -> int:
    return len(records) + len((out + err).splitlines())


# --------------------------------------------------------------------------- the log


def test_a_check_logs_only_its_own_lines(
    fresh_gx: None, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:  # fmt: skip
    """Before: 217 of the run's 219 lines were GX's INFO records (214 from its API docs
    registry as it loads, 2 from its metric registry, 1 about a temporary docs folder), and
    two DeprecationWarnings from its modules where warnings show. After: our lines only."""
    caplog.set_level(logging.INFO)
    check = QualityCheckOperator(
        task_id="check_input", kind="input", template=str(FORM), rows=str(ROWS),
        results=str(tmp_path / "input.json"),
    )  # fmt: skip
    result = check.execute(context={})  # type: ignore[arg-type]
    out, err = capfd.readouterr()
    assert result["success"]
    found = noise(caplog.records, out, err)
    assert not found, (
        f"{len(found)} of {lines_of(caplog.records, out, err)} lines are third-party noise: "
        + "\n".join(found[:5])
    )
    # every record left is ours, or a real warning
    strangers = [
        f"{r.levelname} {r.name}: {r.getMessage()[:120]}"
        for r in caplog.records
        if "fillpdf_provider" not in r.name and r.levelno < logging.WARNING
    ]
    assert not strangers, strangers
    assert "Input rows check of" in out + err + caplog.text  # our own line is still there


def test_gx_loggers_are_left_as_gx_set_them(fresh_gx: None) -> None:
    """Held back while a check runs, not for good: GX used directly later logs as it would."""
    from fillpdf_provider.quality import input_rows_check as check

    root = logging.getLogger(GX)
    before = (root.level, root.propagate, list(root.handlers))
    report = check(ROWS, Template.open(FORM))
    assert report.success
    assert (root.level, root.propagate, list(root.handlers)) == before
    base = logging.getLogger(f"{GX}.data_context.types.base")
    assert base.level == logging.INFO  # GX's own choice, untouched


def test_a_failing_input_check_in_a_dag_run(
    dagbag, fresh_gx: None, caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:  # fmt: skip
    """The mail merge's input check, in a real run: no GX lines in the log; the failure
    quotes the value as written and says what to write instead."""
    with ROWS.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:6]
    rows[2]["newsletter"] = "Maybe"
    path = tmp_path / "rows.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    caplog.set_level(logging.INFO)
    out_dir = tmp_path / "out"
    run = dagbag.get_dag("fillpdf_mail_merge").test(
        run_conf={"output": str(out_dir), "rows": str(path), "chunks": 1}
    )
    out, err = capfd.readouterr()
    assert run.state == "failed"
    found = noise(caplog.records, out, err)
    assert not found, f"{len(found)} lines from third parties: " + "\n".join(found[:5])
    log = out + err + caplog.text
    assert "column 'newsletter': 1 of 6 rows is not a checkbox value: 'Maybe' (row 3)." in log
    assert "Write true/false, yes/no, y/n, 1/0, x or on/off, or leave the cell empty." in log
    saved = json.loads((out_dir / "_quality" / "input.json").read_text())
    assert saved["failures"][0]["sample_values"] == ["Maybe"]


# --------------------------------------------------------------------------- values as written


def line_for(report: QualityReport, where: str) -> str:
    """The summary line of the failure at ``where`` (``column 'x'``, ``key 'x'``...)."""
    lines = [line for line in report.summary().splitlines() if line.startswith(f"- {where}")]
    assert len(lines) == 1, report.summary()
    return lines[0]


def test_input_values_are_quoted_exactly_as_written(form: Template) -> None:
    rows = sample_rows().rename(columns={"newsletter": "NewsLetter"})
    rows.loc[1, "NewsLetter"] = "Maybe"
    rows.loc[4, "NewsLetter"] = "Maybe"
    rows.loc[8, "NewsLetter"] = " Perhaps "
    rows.loc[3, "plan"] = " Gold "
    rows.loc[2, "country"] = "FRANCE"
    report = input_rows_check(rows, form)
    newsletter = line_for(report, "column 'NewsLetter' (field 'newsletter')")
    assert ": 3 of 25 rows are not a checkbox value: 'Maybe' (rows 2, 5), ' Perhaps ' (row 9)." in (
        newsletter
    )
    assert "' Gold ' (row 4)" in line_for(report, "column 'plan'")
    assert "'FRANCE' (row 3)" in line_for(report, "column 'country'")
    failures = {f["column"]: f for f in report.brief()["failures"]}
    assert failures["NewsLetter"]["sample_values"] == ["Maybe", "Maybe", " Perhaps "]
    assert failures["plan"]["sample_values"] == [" Gold "]
    for value in ("maybe", "perhaps", "gold", "france"):
        assert f"'{value}'" not in report.summary()


def test_typed_cells_are_quoted_as_they_are(form: Template, tmp_path: Path) -> None:
    rows = sample_rows().head(3)
    rows["photo_consent"] = [1, 2, 0]
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), path)
    line = line_for(input_rows_check(path, form), "column 'photo_consent'")
    assert ": 1 of 3 rows is not a checkbox value: 2 (row 2)." in line


def test_many_bad_values_give_a_few_examples_and_a_count(form: Template) -> None:
    rows = sample_rows()
    rows["newsletter"] = [f"Maybe {i}" for i in range(1, 26)]
    line = line_for(input_rows_check(rows, form), "column 'newsletter'")
    assert ": 25 of 25 rows are not a checkbox value: 'Maybe 1' (row 1), 'Maybe 2' (row 2)," in (
        line
    )
    assert "'Maybe 5' (row 5) and 20 more rows." in line
    assert "'Maybe 6'" not in line


# --------------------------------------------------------------------------- what to do


def test_a_missing_column_names_the_column_that_looks_like_it(form: Template) -> None:
    # a field the form requires, and one it does not: both columns are mistakes to fix
    rows = sample_rows().rename(columns={"email": "Emial", "newsletter": "News Leter"})
    report = input_rows_check(rows, form)
    assert line_for(report, "column 'email'") == (
        "- column 'email' is missing: no column fills the form's field 'email'; "
        "did you mean 'Emial'? Rename that column to 'email', or map it: "
        "mapping={'Emial': 'email'}. [expect_column_to_exist]"
    )
    assert line_for(report, "column 'News Leter'") == (
        "- column 'News Leter' (field 'newsletter'): matches no field but looks like "
        "'newsletter', which no column fills. Map it (mapping={'News Leter': 'newsletter'}), "
        "rename the column to 'newsletter', or map it to '' to leave it out. "
        "[fillpdf_column_rule]"
    )
    assert len(report.failures) == 2
    # the same spellings, named as the fields, are no mistake
    matched = sample_rows().rename(columns={"email": "E-Mail", "newsletter": "News Letter!"})
    assert input_rows_check(matched, form).success


def test_a_missing_column_says_how_to_add_it_or_leave_it_out(form: Template) -> None:
    rows = sample_rows().drop(columns=["plan", "email"])
    report = input_rows_check(rows, form, require_columns=["plan"])
    assert line_for(report, "column 'plan'") == (
        "- column 'plan' is missing: no column fills the form's field 'plan'. Add a column "
        "named 'plan' (or map one to it with mapping=), or leave 'plan' out of "
        "require_columns. [expect_column_to_exist]"
    )
    # the form requires email: leaving it out is no option
    email = line_for(report, "column 'email'")
    assert "the form requires it" in email and "require_columns" not in email


def test_a_mapped_column_the_rows_lack_says_so(form: Template) -> None:
    rows = sample_rows().rename(columns={"plan": "Membrship"})
    report = input_rows_check(rows, form, mapping={"Membership": "plan"})
    assert line_for(report, "column 'Membership' (field 'plan')") == (
        "- column 'Membership' (field 'plan') is missing: the mapping fills 'plan' from it, "
        "but the rows have no such column; did you mean 'Membrship'? Fix the column's name "
        "in the mapping or in the rows. [expect_column_to_exist]"
    )


Mutation = Callable[[pd.DataFrame], pd.DataFrame]


def _set(row: int, column: str, value: object) -> Mutation:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[row - 1, column] = value
        return frame

    return change


INPUT_LINES: list[tuple[str, Mutation, str, str]] = [
    ("radio", _set(4, "plan", "Gold"), "column 'plan'",
     "1 of 25 rows is not one of the field's options: 'Gold' (row 4). Use one of 'Basic', "
     "'Standard', 'Premium' (any case), or leave the cell empty."),
    ("choice", _set(3, "country", "France"), "column 'country'",
     "1 of 25 rows is not one of the field's options: 'France' (row 3). Use one of "
     "'United States', 'Germany', 'Greece', 'Sweden' (any case), or leave the cell empty."),
    ("max_length", _set(6, "zip", "123456"), "column 'zip'",
     "1 of 25 rows is longer than the field's 5 characters: '123456' (row 6). Shorten them "
     "to at most 5 characters."),
    ("required", lambda r: _set(7, "email", "   ")(_set(5, "email", "")(r)), "column 'email'",
     "2 of 25 rows are empty, but the form requires a value: rows 5, 7. Fill in a value on "
     "every row."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "where", "text"), [pytest.param(*c[1:], id=c[0]) for c in INPUT_LINES]
)
def test_each_input_failure_says_what_and_what_to_do(
    form: Template, mutate: Mutation, where: str, text: str
) -> None:
    assert f"{where}: {text} [" in line_for(input_rows_check(mutate(sample_rows()), form), where)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param("1982-9-25", "1 of 25 rows is not a date in the form's format or "
                     "YYYY-MM-DD: '1982-9-25' (row 3). Write dates as the form shows them "
                     "(`fillpdf inspect` gives the format) or as YYYY-MM-DD, e.g. 2025-03-05.",
                     id="not YYYY-MM-DD"),
        pytest.param("1982-02-30", "1 of 25 rows is not a date that exists: '1982-02-30' "
                     "(row 3). Check the month and day.", id="no such day"),
    ],
)  # fmt: skip
def test_date_failures_say_what_and_what_to_do(form: Template, value: str, text: str) -> None:
    import dataclasses

    dated = [
        dataclasses.replace(f, type="date", max_length=None) if f.name == "date_of_birth" else f
        for f in form.fields
    ]
    report = input_rows_check(_set(3, "date_of_birth", value)(sample_rows()), dated)
    assert f"column 'date_of_birth': {text} [" in line_for(report, "column 'date_of_birth'")


def good_schema(form: Template) -> list[dict]:
    return [f.to_dict() for f in form.fields]


def _entry(index: int, **changes: object) -> Callable[[list[dict]], list[dict]]:
    def change(schema: list[dict]) -> list[dict]:
        schema[index].update(changes)
        return schema

    return change


SCHEMA_LINES: list[tuple[str, Callable[[list[dict]], list[dict]], str, str]] = [
    ("no name", _entry(0, name=None), "key 'name'",
     "1 of 14 entries has no name: schema[0]. Give every entry a name."),
    ("name pattern", _entry(0, name="Full Name"), "key 'name'",
     "1 of 14 entries has a name other than lowercase letters, digits and _: 'Full Name' "
     "(schema[0]). Rename it with lowercase letters, digits and _, e.g. 'full_name'."),
    ("duplicate name", _entry(4, name="full_name"), "key 'name'",
     "2 of 14 entries have a name another entry has too: 'full_name' (schema[0], schema[4]). "
     "Give each entry its own name."),
    ("type", _entry(5, type="button"), "key 'type'",
     "1 of 14 entries has a type that is not a field type: 'button' (schema[5]). Use one of "),
    ("page", _entry(6, page=1), "key 'page'",
     "1 of 14 entries is on a page the PDF does not have: 1 (schema[6]). The PDF has 1 page, "
     "numbered from 0: use page 0."),
    ("left", _entry(0, rect=[-5, 690, 370, 706]), "key 'rect'",
     "1 of 14 entries has a rect past the left edge of its page: [-5, 690, 370, 706] "
     "(schema[0]). Move the rect onto its page: x0 >= the page's left edge"),
    ("no width", _entry(7, rect=[40, 690, 40, 706]), "key 'rect'",
     "1 of 14 entries has a rect with no width: [40, 690, 40, 706] (schema[7]). "
     "Make x1 greater than x0 ([x0, y0, x1, y1], in PDF points)."),
    ("confidence", _entry(8, confidence=1.5), "key 'confidence'",
     "1 of 14 entries has a confidence outside 0 to 1: 1.5 (schema[8]). Use a confidence "
     "from 0 to 1."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "where", "text"), [pytest.param(*c[1:], id=c[0]) for c in SCHEMA_LINES]
)
def test_each_schema_failure_names_the_entry_and_what_to_do(
    form: Template, mutate: Callable, where: str, text: str
) -> None:
    report = schema_check(mutate(good_schema(form)), [(612, 792)], source="form.schema.json")
    assert report.summary().startswith("Schema check of form.schema.json FAILED: 1 of 15 ")
    assert "expectations failed on 14 entries" in report.summary()
    assert f"{where}: {text}" in line_for(report, where)


@pytest.fixture(scope="module")
def filled(form: Template, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("filled")
    fill_rows(form, ROWS, out, name_template="{row}.pdf")
    return out


def manifest(filled: Path) -> pd.DataFrame:
    return pq.read_table(filled / "manifest.parquet").to_pandas()


MANIFEST_LINES: list[tuple[str, Mutation, str, str]] = [
    ("missing column", lambda m: m.drop(columns=["bytes"]), "column 'bytes'",
     "is missing: a fill's manifest has it. Check that the file is the manifest.parquet a "
     "fill wrote, not an edited copy."),
    ("row count", lambda m: m.drop(index=7), "manifest",
     "expected one row per input row (25), found 24. Fill the missing rows again, or check "
     "that the manifest and the rows are from the same run."),
    ("row twice", _set(4, "row", 3), "column 'row'",
     "2 of 25 rows are listed more than once: 3 (2 rows). List each input row once: merge "
     "each chunk's manifest once, from chunks that do not overlap."),
    ("unknown status", _set(3, "status", "skipped"), "column 'status'",
     "1 of 25 rows has a status other than ok or error: 'skipped' (row 3). Use ok or error; "
     "check that the file is the manifest a fill wrote."),
    ("ok without path", _set(5, "path", None), "column 'path'",
     "1 of 25 rows is ok but has no path: row 5. Fill those rows again: an ok row records "
     "its file."),
    ("zero bytes", _set(7, "bytes", 0), "column 'bytes'",
     "1 of 25 rows has bytes of 0 or less: 0 (row 7). Fill those rows again: their PDFs "
     "are empty."),
    ("same file", _set(10, "path", "1.pdf"), "column 'path'",
     "2 of 25 rows have the same file as another row: '1.pdf' (rows 1, 10). Give each row "
     "its own name in the name template, e.g. {row}.pdf."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "where", "text"), [pytest.param(*c[1:], id=c[0]) for c in MANIFEST_LINES]
)
def test_each_manifest_failure_says_what_and_what_to_do(
    filled: Path, form: Template, mutate: Mutation, where: str, text: str
) -> None:
    report = manifest_check(mutate(manifest(filled)), input_rows=ROWS, template_fields=form)
    line = line_for(report, where)
    assert re.sub(r" \[expect_[a-z_]+\]$", "", line).endswith(text), line


def test_the_saved_failures_carry_the_message_and_the_fix(form: Template) -> None:
    report = input_rows_check(_set(2, "newsletter", "Maybe")(sample_rows()), form)
    failure = report.brief()["failures"][0]
    assert failure["message"] == line_for(report, "column 'newsletter'")[2:]
    assert failure["fix"] == (
        "Write true/false, yes/no, y/n, 1/0, x or on/off, or leave the cell empty."
    )


# --------------------------------------------------------------------------- exceptions


def test_an_operator_missing_an_argument_says_what_to_pass() -> None:
    with pytest.raises(ValueError) as raised:
        QualityCheckOperator(task_id="x", kind="input", template=str(FORM))
    assert str(raised.value) == (
        "An input check needs rows= (the CSV or Parquet rows to check: a path or URI)."
    )
    with pytest.raises(
        ValueError, match=r"^A manifest check needs output_dir= \(the fill's output folder"
    ):
        QualityCheckOperator(task_id="x", kind="manifest")


def test_a_manifest_check_before_the_fill_says_so(tmp_path: Path) -> None:
    check = QualityCheckOperator(task_id="m", kind="manifest", output_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError) as raised:
        check.execute(context={})  # type: ignore[arg-type]
    assert str(raised.value) == (
        f"No manifest at {tmp_path}/manifest.parquet: a manifest check runs after the fill; "
        "point output_dir at the fill's output folder."
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json", "is not JSON"),
        ('{"fields": []}', "has no schema list"),
    ],
)
def test_a_bad_schema_file_is_named(tmp_path: Path, content: str, problem: str) -> None:
    schema = tmp_path / "form.schema.json"
    schema.write_text(content)
    check = QualityCheckOperator(task_id="s", kind="schema", template=str(FORM), schema=str(schema))
    with pytest.raises(ValueError) as raised:
        check.execute(context={})  # type: ignore[arg-type]
    message = str(raised.value)
    assert message.startswith(f"Schema {schema} {problem}"), message
    assert message.endswith(
        'expected a list of entries or {"schema": [...]}, as the convert operator writes.'
    )


def test_a_mapping_to_an_unknown_field_suggests_the_field(form: Template) -> None:
    with pytest.raises(FieldValueError) as raised:
        input_rows_check(ROWS, form, mapping={"Plan": "plans"})
    assert str(raised.value) == (
        "Field 'plans': the mapping {'Plan': 'plans'} names a field the form does not have; "
        "did you mean 'plan'? `fillpdf inspect FORM.pdf` lists the fields."
    )


def test_require_columns_naming_an_unknown_field_suggests_the_field(form: Template) -> None:
    with pytest.raises(ValueError) as raised:
        input_rows_check(ROWS, form, require_columns=["full_name", "Plan"])
    assert str(raised.value) == (
        "require_columns names 'Plan', which is not a field of the form (did you mean "
        "'plan'?). `fillpdf inspect FORM.pdf` lists the fields."
    )


def test_a_missing_rows_file_says_what_it_should_be(form: Template, tmp_path: Path) -> None:
    missing = tmp_path / "rows.parquet"
    with pytest.raises(FileNotFoundError) as raised:
        input_rows_check(missing, form)
    assert str(raised.value) == (
        f"No such rows file: {missing}. Give the path or URI of a CSV, TSV or Parquet file."
    )


def test_enforce_fails_the_task_with_the_actionable_summary(form: Template) -> None:
    from fillpdf_provider.quality import enforce

    report = input_rows_check(_set(2, "newsletter", "Maybe")(sample_rows()), form)
    with pytest.raises(AirflowFailException) as raised:
        enforce(report)
    assert "'Maybe' (row 2). Write true/false" in str(raised.value)
