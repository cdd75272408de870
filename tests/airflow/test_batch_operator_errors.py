"""The batch side as a user who gets an option or an input wrong meets it: BatchFillOperator,
its helpers (``plan_chunks``, ``check_batch_params``, ``merge_manifests``, ``failure_limit``),
the storage it reads through, and the engine's refusals of a rows file, a name template and
a value. Every refusal names the option or the thing, the value given and the fix, and
fails the task without retries (``AirflowFailException``) where a retry would meet the same.
"""

from __future__ import annotations

import inspect
import pathlib
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

from fillpdf_provider.engine.batch import OutputNames, fill_rows, read_batches
from fillpdf_provider.engine.errors import FieldValueError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.hooks.fillpdf import InputError
from fillpdf_provider.operators import (
    BatchFillOperator,
    check_batch_params,
    merge_manifests,
    plan_chunks,
)
from fillpdf_provider.operators.batch import failure_limit
from fillpdf_provider.storage import expand, read_bytes, readable

INCLUDE = Path(__file__).resolve().parents[2] / "include"
FORM = str(INCLUDE / "sample_form.pdf")
ROWS = str(INCLUDE / "sample_rows.csv")
COLUMNS = "full_name, date_of_birth, email, phone, street, city, zip"  # the first of them


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))


def batch(tmp: Path, **kwargs: Any) -> dict:
    options = {"task_id": "t", "template": FORM, "rows": ROWS, "output_dir": str(tmp)}
    return BatchFillOperator(**{**options, **kwargs}).execute(context={})  # type: ignore[arg-type]


def no_retry(raised: pytest.ExceptionInfo[BaseException]) -> str:
    """The message of an error that must also fail the task at once."""
    assert isinstance(raised.value, AirflowFailException), type(raised.value)
    return str(raised.value)


def rows_file(tmp_path: Path, text: str, name: str = "rows.csv") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def form() -> Template:
    return Template(Path(FORM).read_bytes())


# --------------------------------------------------------------------------- the connection


def test_a_named_connection_that_does_not_exist_fails_the_batch(tmp_path: Path) -> None:
    """A path template never asked for the connection, so a typo'd id went unnoticed."""
    with pytest.raises(AirflowNotFoundException) as raised:
        batch(tmp_path / "out", fillpdf_conn_id="fillpdf_prdo")
    message = no_retry(raised)
    assert "fillpdf_conn_id 'fillpdf_prdo' names no connection" in message
    assert "AIRFLOW_CONN_FILLPDF_PRDO" in message
    assert not (tmp_path / "out").exists()


def test_the_task_log_says_where_calls_go(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch(tmp_path / "out")
    out = capsys.readouterr().out
    assert "FillPDF: no connection 'fillpdf_default': the embedded engine, in the worker" in out


def test_the_docstring_documents_every_parameter() -> None:
    documented = set(re.findall(r":param (\w+):", BatchFillOperator.__doc__ or ""))
    accepted = set(inspect.signature(BatchFillOperator.__init__).parameters) - {"self", "kwargs"}
    assert documented == accepted, f"undocumented: {sorted(accepted - documented)}"


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("option", "value", "needles"),
    [
        ("on_error", "stop", ("on_error must be 'skip' or 'fail', not 'stop'",
                              "'skip' records a bad row")),
        ("output_format", "tar", ("output_format must be one of ('files', 'merged', 'zip'), "
                                  "not 'tar'", "'zip' (the PDFs in one archive)")),
        ("batch_rows", 0, ("batch_rows must be a whole number of rows, 1 or more, not 0",)),
        ("progress_every", "often", ("progress_every must be a number of seconds, 0 or more, "
                                     "not 'often'",)),
    ],
)  # fmt: skip
def test_a_bad_option_names_the_value_given_and_the_choices(
    option: str, value: object, needles: tuple[str, ...]
) -> None:
    with pytest.raises(ValueError) as raised:
        BatchFillOperator(task_id="x", template=FORM, rows=ROWS, output_dir="o", **{option: value})
    for needle in needles:
        assert needle in str(raised.value)


def test_a_chunk_with_a_packaged_format_names_the_format() -> None:
    with pytest.raises(ValueError) as raised:
        BatchFillOperator(
            task_id="x",
            template=FORM,
            rows=ROWS,
            output_dir="o",
            output_format="zip",
            chunk={"index": 0, "first": 1, "stop": 2},
        )
    message = str(raised.value)
    assert "Chunked batches write files" in message and "output_format='zip'" in message
    assert "merge_manifests" in message


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("lots", "max_failed_rows must be a count (e.g. 10) or a fraction of the rows (e.g. "
                 "0.01), not 'lots'"),
        (-1, "max_failed_rows must be 0 or more, not -1"),
        ("nan", "max_failed_rows must be 0 or more, not 'nan'"),
        (1.5, "max_failed_rows 1.5 is neither a whole count nor a fraction below 1"),
    ],
)  # fmt: skip
def test_a_max_failed_rows_no_run_can_use_fails_without_retries(value: object, needle: str) -> None:
    with pytest.raises(ValueError) as raised:
        failure_limit(value, 100)  # type: ignore[arg-type]
    message = no_retry(raised)
    assert needle in message
    assert "0 (no failed row allowed)" in message


def test_a_rendered_max_failed_rows_is_refused_before_any_row_is_filled(tmp_path: Path) -> None:
    """It was checked only after every row was filled, and retried into the same error."""
    out = tmp_path / "out"
    operator = BatchFillOperator(task_id="t", template=FORM, rows=ROWS, output_dir=str(out),
                                 max_failed_rows="{{ params.max_failed_rows }}")  # fmt: skip
    operator.max_failed_rows = "lots"  # what the template rendered to
    with pytest.raises(ValueError) as raised:
        operator.execute(context={})  # type: ignore[arg-type]
    assert "not 'lots'" in no_retry(raised)
    assert not out.exists() or not list(out.rglob("*.pdf"))


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({}, "Give one of chunks or rows_per_chunk (got chunks=None, rows_per_chunk=None)"),
        ({"chunks": 2, "rows_per_chunk": 5},
         "Give one of chunks or rows_per_chunk (got chunks=2, rows_per_chunk=5)"),
        ({"rows_per_chunk": 0}, "rows_per_chunk must be a whole number, 1 or more, not 0"),
        ({"chunks": "four"}, "chunks must be a whole number, 1 or more, not 'four'"),
    ],
)  # fmt: skip
def test_plan_chunks_names_the_value_it_refuses(options: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError) as raised:
        plan_chunks(ROWS, **options)
    assert needle in no_retry(raised)


# --------------------------------------------------------------------------- the rows


def test_check_batch_params_names_a_rows_file_that_does_not_exist(tmp_path: Path) -> None:
    missing = str(tmp_path / "rows.csv")
    with pytest.raises(FileNotFoundError) as raised:
        check_batch_params(missing, name_template="{row}.pdf")
    message = no_retry(raised)
    assert f"rows {missing!r} does not exist" in message
    assert "CSV or Parquet file" in message


def test_check_batch_params_names_the_column_and_lists_the_rows_columns() -> None:
    with pytest.raises(ValueError) as raised:
        check_batch_params(ROWS, name_template="{row}-{City}.pdf")
    message = no_retry(raised)
    assert "name template '{row}-{City}.pdf' names {City}, which is not a column" in message
    assert "did you mean {city}?" in message
    assert COLUMNS in message


def test_check_batch_params_refuses_a_bad_max_failed_rows_without_retries() -> None:
    with pytest.raises(ValueError) as raised:
        check_batch_params(ROWS, name_template="{row}.pdf", max_failed_rows="some")
    assert "not 'some'" in no_retry(raised)


def test_the_batch_names_a_rows_file_that_does_not_exist(tmp_path: Path) -> None:
    missing = str(tmp_path / "rows.csv")
    with pytest.raises(FileNotFoundError) as raised:
        batch(tmp_path / "out", rows=missing)
    message = no_retry(raised)
    assert f"rows {missing!r} does not exist" in message and "CSV or Parquet" in message


def test_the_batch_names_a_rows_file_it_cannot_read(tmp_path: Path) -> None:
    rows = str(tmp_path / "rows.xlsx")
    Path(rows).write_bytes(b"PK")
    with pytest.raises(ValueError) as raised:
        batch(tmp_path / "out", rows=rows)
    message = no_retry(raised)
    assert f"rows {rows!r}: Rows must be a .csv or .parquet file, not 'rows.xlsx'" in message


def test_the_batch_names_a_name_template_column_the_rows_lack(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as raised:
        batch(tmp_path / "out", name_template="{row}-{last_name}.pdf")
    message = no_retry(raised)
    assert "name template '{row}-{last_name}.pdf' names {last_name}" in message
    assert "did you mean {full_name}?" in message and COLUMNS in message
    assert not list((tmp_path / "out").rglob("*.pdf"))


def test_a_bad_row_under_on_error_fail_fails_without_retries(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "full_name,plan\nA,Basic\nB,Gold\nC,Basic\n")
    with pytest.raises(AirflowFailException) as raised:
        batch(tmp_path / "out", rows=rows, on_error="fail")
    message = str(raised.value)
    assert "row 2" in message and "'Gold'" in message
    assert "on_error='skip'" in message


def test_columns_that_fill_no_field_fail_without_retries(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "customer,mail\nAda,ada@example.com\n")
    with pytest.raises(AirflowFailException) as raised:
        batch(tmp_path / "out", rows=rows)
    message = str(raised.value)
    assert f"rows {rows!r}: No column of the rows matches a field" in message
    assert "mapping" in message


def test_a_mapping_to_a_field_the_form_lacks_lists_the_fields(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "customer,mail\nAda,ada@example.com\n")
    with pytest.raises(AirflowFailException) as raised:
        batch(tmp_path / "out", rows=rows, mapping={"customer": "fullname"})
    message = str(raised.value)
    assert "mapping {'customer': 'fullname'}: Field 'fullname'" in message
    assert "The form's fields: 'full_name', 'date_of_birth'" in message
    assert "The rows' columns: 'customer', 'mail'." in message


# --------------------------------------------------------------------------- merging chunks


def test_merge_manifests_without_chunk_manifests_says_what_makes_them(tmp_path: Path) -> None:
    output = str(tmp_path / "out")
    with pytest.raises(FileNotFoundError) as raised:
        merge_manifests(output)
    message = no_retry(raised)
    assert f"No chunk manifests under {output}/_manifests" in message
    assert "chunk=" in message and "output_dir" in message


def test_merge_manifests_names_a_file_two_rows_wrote(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "full_name,city\nAda,Oslo\nBo,Oslo\n")
    output = tmp_path / "out"
    for chunk in plan_chunks(rows, rows_per_chunk=1):
        batch(output, rows=rows, chunk=chunk, name_template="{city}.pdf")
    with pytest.raises(ValueError) as raised:
        merge_manifests(str(output))
    message = no_retry(raised)
    assert "'Oslo.pdf'" in message and "name_template" in message and "{row}" in message


def test_a_refused_merge_publishes_no_manifest(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "full_name,city\nAda,Oslo\nBo,Rome\nCy,Oslo\n")
    output = tmp_path / "out"
    for chunk in plan_chunks(rows, rows_per_chunk=2):
        batch(output, rows=rows, chunk=chunk, name_template="{city}.pdf")
    with pytest.raises(ValueError) as raised:
        merge_manifests(str(output))
    assert "'Oslo.pdf' (rows 1, 3)" in no_retry(raised)
    assert not (output / "manifest.parquet").exists()


def test_chunks_given_out_of_order_merge_sorted_by_row(tmp_path: Path) -> None:
    """Chunks merge in the order of their rows whatever order the plan lists them in."""
    rows = rows_file(tmp_path, "full_name\nAda\nBo\nCy\nDi\nEd\n")
    output = tmp_path / "out"
    chunks = plan_chunks(rows, rows_per_chunk=2)
    for chunk in chunks:
        batch(output, rows=rows, chunk=chunk)
    summary = merge_manifests(str(output), chunks=chunks[::-1])
    assert summary["rows"] == 5 and summary["chunks"] == 3
    manifest = pq.read_table(output / "manifest.parquet")
    assert manifest.column("row").to_pylist() == [1, 2, 3, 4, 5]
    assert manifest.column("path").to_pylist() == [f"{n}.pdf" for n in range(1, 6)]


# --------------------------------------------------------------------------- storage


def test_a_glob_that_matches_nothing_names_the_glob_and_the_fix(tmp_path: Path) -> None:
    pattern = str(tmp_path / "inbox" / "*.pdf")
    with pytest.raises(FileNotFoundError) as raised:
        expand(pattern)
    message = str(raised.value)
    assert f"No file matches {pattern!r}" in message
    assert "check the folder and the pattern" in message


def test_a_folder_is_no_file_and_the_message_says_what_to_give(tmp_path: Path) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as raised:
        expand(str(folder))
    assert f"{str(folder)!r} is a folder" in str(raised.value)
    assert repr(str(folder / "*.pdf")) in str(raised.value)
    with pytest.raises(FileNotFoundError) as raised:  # a caller that expects a file: missing
        read_bytes(str(folder))
    assert isinstance(raised.value, IsADirectoryError)
    assert f"{str(folder)!r} is a folder, not a file" in str(raised.value)


def test_a_missing_file_is_named_with_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = str(tmp_path / "form.pdf")
    with pytest.raises(FileNotFoundError) as raised:
        read_bytes(missing)
    assert f"{missing!r} does not exist" in str(raised.value)
    assert "check the path" in str(raised.value)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as raised:
        read_bytes("forms/form.pdf")
    assert f"relative to the working directory {str(tmp_path)!r}" in str(raised.value)
    with pytest.raises(FileNotFoundError) as raised, readable(missing):
        pass
    assert f"{missing!r} does not exist" in str(raised.value)


def test_a_file_the_worker_may_not_read_is_named_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "form.pdf"
    path.write_bytes(b"%PDF-")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(pathlib.Path, "read_bytes", refuse)  # tests run as root: chmod is moot
    with pytest.raises(PermissionError) as raised:
        read_bytes(str(path))
    message = str(raised.value)
    assert f"{str(path)!r} cannot be read: permission denied" in message
    assert "readable by the user the worker runs as" in message
    assert "[Errno 13]" not in message


# --------------------------------------------------------------------------- the engine


def test_a_missing_rows_file_says_what_to_give(tmp_path: Path) -> None:
    missing = tmp_path / "rows.csv"
    with pytest.raises(FileNotFoundError) as raised:
        next(read_batches(missing))
    assert str(raised.value) == (
        f"No such rows file: {missing}. Give the path or URI of a CSV, TSV or Parquet file."
    )


def test_a_name_template_column_the_rows_lack_lists_the_columns_and_the_nearest() -> None:
    columns = ["id", "first_name", "last_name", "city"]
    with pytest.raises(ValueError) as raised:
        OutputNames("{id}-{lastname}.pdf").check(columns)
    assert str(raised.value) == (
        "The name template '{id}-{lastname}.pdf' names {lastname}, which is not a column of "
        "the rows; did you mean {last_name}? The rows' columns: id, first_name, last_name, "
        "city. Use {row} for the row's number and {column} for a column's value."
    )


def test_a_name_template_with_broken_braces_says_how_to_write_one() -> None:
    with pytest.raises(ValueError) as raised:
        OutputNames("{row.pdf").check(["id"])
    message = str(raised.value)
    assert "The name template '{row.pdf' is not a valid template" in message
    assert "{row}.pdf" in message and "{{" in message


def test_a_column_named_row_is_refused_only_where_the_template_uses_row() -> None:
    """``str.format(row=..., **cells)`` raised a TypeError for a table with a ``row`` column,
    and a template that never used ``{row}`` was refused all the same."""
    names = OutputNames("{id}-{row}.pdf")
    with pytest.raises(ValueError) as raised:
        names.check(["row", "id"])
    assert str(raised.value) == (
        "The rows have a column named 'row', and the name template '{id}-{row}.pdf' uses "
        "{row}, which would mean either that column or the row's number; name the files by "
        "another column, or rename that column."
    )
    for uses_row in ("{row!r:>5}.pdf", "{row[0]}.pdf", "{id:>{row}}.pdf"):
        with pytest.raises(ValueError, match="column named 'row'"):
            OutputNames(uses_row).check(["row", "id"])
    OutputNames("{id}-{{row}}.pdf").check(["row", "id"])  # literal braces name no field
    OutputNames("{id}.pdf").check(["row", "id"])
    assert OutputNames("{id}-{row_id}.pdf").name(7, {"row": "r", "id": 3, "row_id": 9}) == (
        "3-9.pdf"
    )


def test_a_table_with_a_row_column_fills_when_names_come_from_another(
    form: Template, tmp_path: Path
) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("row,full_name,city\nA7,Ada Lovelace,London\nB2,Bo Diddley,Chicago\n")
    out = tmp_path / "out"
    summary = fill_rows(form, rows, out, name_template="{full_name}.pdf")
    assert (summary.ok, summary.failed) == (2, 0)
    assert sorted(p.name for p in out.glob("*.pdf")) == ["Ada Lovelace.pdf", "Bo Diddley.pdf"]


def test_many_columns_are_cut_short(tmp_path: Path) -> None:
    columns = [f"column_{i}" for i in range(40)]
    with pytest.raises(ValueError) as raised:
        OutputNames("{nope}.pdf").check(columns)
    assert "column_19, and 20 more." in str(raised.value)


@pytest.mark.parametrize(
    ("values", "needles"),
    [
        ({"newsletter": "maybe"}, ("Field 'newsletter': 'maybe' is not a checkbox value; ",
                                   "true, yes, y, on, 1, x or checked tick it")),
        ({"newsletter": 2}, ("2 (an int) is not a checkbox value",)),
        ({"full_name": 42}, ("Field 'full_name': a text field takes a string, not 42 (an int)",)),
        ({"plan": 2}, ("2 (an int) is not one of the options: 'Basic', 'Standard', 'Premium'",)),
        ({"plan": "basik"}, ("'basik' is not one of the options: 'Basic', 'Standard', "
                             "'Premium'", "did you mean 'Basic'?")),
        ({"zip": "123456"}, ("'123456' is 6 characters, over the field's limit of 5",
                             "shorten it to at most 5")),
    ],
)  # fmt: skip
def test_a_refused_value_is_quoted_with_what_the_field_takes(
    form: Template, values: dict[str, object], needles: tuple[str, ...]
) -> None:
    with pytest.raises(FieldValueError) as raised:
        form.fill(values)
    for needle in needles:
        assert needle in raised.value.message, raised.value.message
    assert raised.value.message.endswith((".", "?"))


def test_a_long_refused_value_is_cut_in_the_message(form: Template) -> None:
    value = "Platinum " * 30
    with pytest.raises(FieldValueError) as raised:
        form.fill({"plan": value})
    message = raised.value.message
    assert value not in message and len(message) < 200
    assert repr(value)[:30] in message and "...'" in message
    with pytest.raises(FieldValueError) as raised:
        form.fill({"newsletter": ["x" * 500]})
    assert "x" * 60 not in raised.value.message and "(a list)" in raised.value.message


# --------------------------------------------------------------------------- a table with no rows


def _header_only(tmp_path: Path, kind: str) -> str:
    """The sample's columns and no rows: CSV with and without the header's line end, and
    Parquet."""
    header = Path(ROWS).read_text(encoding="utf-8").splitlines()[0]
    if kind == "parquet":
        path = tmp_path / "rows.parquet"
        pq.write_table(pa.table({c: pa.array([], pa.string()) for c in header.split(",")}), path)
        return str(path)
    return rows_file(tmp_path, header + ("\n" if kind == "csv" else ""))


@pytest.mark.parametrize("kind", ["csv", "csv-no-line-end", "parquet"])
def test_a_table_with_no_rows_keeps_its_columns_and_fills_nothing(
    tmp_path: Path, kind: str
) -> None:
    """The columns came from the first row, so a table with none had none: a name template
    naming a column was refused as naming no column; a header without a line end did not
    parse at all."""
    rows = _header_only(tmp_path, kind)
    template = "{full_name}-{city}.pdf"
    assert "full_name" in check_batch_params(rows, name_template=template)
    chunks = plan_chunks(rows, chunks=3)
    assert chunks == [{"index": 0, "first": 1, "stop": 1}]
    for chunk in chunks:
        done = batch(tmp_path / "out", rows=rows, chunk=chunk, name_template=template)
        assert (done["rows"], done["ok"], done["failed"]) == (0, 0, 0)
    summary = merge_manifests(str(tmp_path / "out"), chunks=chunks, max_failed_rows=0.01)
    assert (summary["rows"], summary["chunks"]) == (0, 1)
    assert pq.read_table(tmp_path / "out" / "manifest.parquet").num_rows == 0
    assert not list((tmp_path / "out").glob("*.pdf"))
    with pytest.raises(InputError, match=re.escape("names {nope}, which is not a column")):
        check_batch_params(rows, name_template="{nope}.pdf")


# --------------------------------------------------------------------------- columns


def test_a_mapping_as_rendered_json_and_strict_columns_as_a_rendered_flag(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "full_name,Work mail,ref\nAda,ada@example.org,r1\n")
    result = batch(
        tmp_path / "out", rows=rows, mapping='{"Work mail": "email"}', name_template="{ref}.pdf",
        strict_columns="True",
    )  # fmt: skip
    assert result["ok"] == 1 and result["unused_columns"] == []
    assert (tmp_path / "out" / "r1.pdf").exists()
    # a param left empty renders as null: no mapping
    unmapped = batch(tmp_path / "none", rows=rows, mapping="null", name_template="{ref}.pdf")
    assert unmapped["unused_columns"] == ["Work mail"]


def test_strict_columns_fails_the_task_naming_each_column(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "full_name,email,nickname\nAda,a@b.c,a\n")
    with pytest.raises(AirflowFailException) as raised:
        batch(tmp_path / "out", rows=rows, strict_columns="True")
    message = no_retry(raised)
    assert "column 'nickname' matches no field (strict columns)" in message
    assert "mapping={'nickname': ''}" in message
    assert not (tmp_path / "out").exists()


def test_a_near_name_fails_the_task_with_the_mapping_that_fixes_it(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "full_name,Emial\nAda,a@b.c\n")
    with pytest.raises(AirflowFailException) as raised:
        batch(tmp_path / "out", rows=rows)
    assert "looks like 'email'" in no_retry(raised)
    assert "mapping={'Emial': 'email'}" in str(raised.value)


@pytest.mark.parametrize(
    ("given", "says"),
    [("{not json", "is not a JSON object"), ('["a"]', "must map column names"),
     ('{"a": 1}', "must map column names")],
)  # fmt: skip
def test_a_mapping_that_is_no_mapping_is_refused(tmp_path: Path, given: str, says: str) -> None:
    rows = rows_file(tmp_path, "full_name\nAda\n")
    with pytest.raises(AirflowFailException, match=says):
        batch(tmp_path / "out", rows=rows, mapping=given)


def test_strict_columns_that_is_no_flag_is_refused(tmp_path: Path) -> None:
    rows = rows_file(tmp_path, "full_name\nAda\n")
    with pytest.raises(AirflowFailException, match="strict_columns must be true or false"):
        batch(tmp_path / "out", rows=rows, strict_columns="maybe")
