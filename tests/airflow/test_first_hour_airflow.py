"""The Airflow side as a new user and an ops engineer meet it: the DAGs' trigger forms and
their docs, the ``fillpdf`` connection form and what a badly filled one says, and what the
operators say when an input is wrong. Every refusal names the thing, the value and the fix,
and fails the task without retries (``AirflowFailException``): a retry would meet the same.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import (
    AirflowFailException,
    AirflowNotFoundException,
    ParamValidationError,
)
from pypdf import PdfReader

from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators import ConvertOperator, FillOperator
from kits.flatkit import flat_form

INCLUDE = Path(__file__).resolve().parents[2] / "include"
FORM = str(INCLUDE / "sample_form.pdf")
DAG_IDS = ["fillpdf_convert_inbox", "fillpdf_mail_merge"]


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))


def connect(monkeypatch: pytest.MonkeyPatch, conn: dict, conn_id: str = "fp_first") -> FillPdfHook:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    return FillPdfHook(conn_id)


def refusal(hook: FillPdfHook) -> str:
    """The message reading the connection fails with; it must also fail without retries."""
    with pytest.raises(ValueError) as raised:
        hook.settings  # noqa: B018 - reading the connection raises
    assert isinstance(raised.value, AirflowFailException)
    return str(raised.value)


def convert(tmp_path: Path, **options: Any) -> list[dict]:
    operator = ConvertOperator(task_id="c", output_dir=str(tmp_path / "out"), **options)
    return operator.execute(context={})  # type: ignore[arg-type]


def fill(tmp_path: Path, **options: Any) -> dict:
    settings = {"template": FORM, "values": {}, "output_path": str(tmp_path / "one.pdf")}
    operator = FillOperator(task_id="f", **{**settings, **options})
    return operator.execute(context={})  # type: ignore[arg-type]


def task_log(capfd: pytest.CaptureFixture[str]) -> str:
    out, err = capfd.readouterr()
    return out + err


# --------------------------------------------------------------------------- the DAGs


@pytest.fixture
def dags(dagbag):
    """The DagBag (every param's default is put back after the test)."""
    return dagbag


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_every_param_has_a_title_a_description_a_type_and_a_valid_default(dags, dag_id) -> None:
    """The trigger form shows a param's title and description; a bare key and no type
    leave a person guessing what goes in it."""
    params = dags.get_dag(dag_id).params
    for name in params:
        param = params.get_param(name)
        schema = param.schema
        assert schema.get("title"), f"{dag_id}: param {name} has no title"
        assert len(param.description or "") > 15, f"{dag_id}: param {name} has no description"
        assert schema.get("type"), f"{dag_id}: param {name} has no type"
        param.resolve()  # the default passes the param's own validation
    convert_params = dags.get_dag("fillpdf_convert_inbox").params
    for choice in ("detect", "on_quota"):
        schema = convert_params.get_param(choice).schema
        assert schema["type"] == "string" and schema["enum"]
        assert set(schema["values_display"]) == set(schema["enum"])


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_the_dag_docs_name_every_param(dags, dag_id: str) -> None:
    dag = dags.get_dag(dag_id)
    missing = [name for name in dag.params if f"``{name}``" not in dag.doc_md]
    assert not missing, f"{dag_id}: doc_md says nothing of {missing}"


def test_the_mail_merge_doc_says_where_the_form_comes_from(dags) -> None:
    """It said a host on the connection made the form come from the service: only a
    conversion id does, and every row is filled on the worker either way."""
    doc = " ".join(dags.get_dag("fillpdf_mail_merge").doc_md.split())
    assert "the form comes from the FillPDF service" not in doc
    assert "conversion id" in doc and "filled on the worker" in doc


def test_a_max_failed_rows_no_run_can_use_is_refused_before_the_run_exists(
    dags, tmp_path: Path
) -> None:
    """1.5 (neither a count nor a fraction) passed the form and failed later, inside
    check_input, with a traceback."""
    conf = {"output": str(tmp_path / "out"), "max_failed_rows": 1.5}
    with pytest.raises(ParamValidationError) as raised:
        dags.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    message = str(raised.value)
    assert "param max_failed_rows: 1.5" in message
    assert "a whole count of rows" in message and "a fraction of the rows below 1" in message


@pytest.mark.parametrize(
    ("dag_id", "task_id"),
    [("fillpdf_convert_inbox", "check_params"), ("fillpdf_mail_merge", "check_input")],
)
def test_a_conf_key_that_is_no_param_fails_the_first_task_naming_it(
    dags, tmp_path: Path, capfd: pytest.CaptureFixture[str], dag_id: str, task_id: str
) -> None:
    """``-c '{"ouptut": ...}'`` ran on the default output, silently."""
    conf = {"ouptut": str(tmp_path / "out")}
    run = dags.get_dag(dag_id).test(run_conf=conf)
    assert run.state == "failed"
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states[task_id] == "failed"
    assert all(s in ("upstream_failed", None) for t, s in states.items() if t != task_id)
    log = task_log(capfd)
    assert "'ouptut' is not a param of " + dag_id in log
    assert "did you mean 'output'?" in log


def test_a_missing_rows_file_fails_the_params_check_naming_the_param(
    dags, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.csv"
    conf = {"output": str(tmp_path / "out"), "rows": str(missing)}
    run = dags.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.get_task_instance("check_input").state == "failed"
    log = task_log(capfd)
    assert f"param rows: {str(missing)!r} does not exist" in log
    assert "FileNotFoundError: No such file" not in log


def test_rows_no_fill_can_read_fail_the_params_check_without_retries(
    dags, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A ValueError from the params check was retried (with retries set) into the same."""
    rows = tmp_path / "rows.xlsx"
    rows.write_bytes(b"PK")
    conf = {"output": str(tmp_path / "out"), "rows": str(rows)}
    run = dags.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.get_task_instance("check_input").state == "failed"
    log = task_log(capfd)
    assert "AirflowFailException: Rows must be a .csv or .parquet file, not 'rows.xlsx'" in log
    assert f"params rows={str(rows)!r}" in log


def test_a_missing_template_fails_the_params_check_even_without_the_input_check(
    dags, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """With check_input off, a template typo failed every mapped fill task instead."""
    missing = tmp_path / "form.pdf"
    conf = {"output": str(tmp_path / "out"), "template": str(missing), "check_input": False}
    run = dags.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["check_input"] == "failed" and states["fill_chunk"] == "upstream_failed"
    assert f"template {str(missing)!r}: no such file" in task_log(capfd)


def test_the_convert_dag_names_a_glob_that_matches_nothing(
    dags, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    inbox = str(tmp_path / "inbox" / "*.pdf")
    run = dags.get_dag("fillpdf_convert_inbox").test(
        run_conf={"output": str(tmp_path / "out"), "inbox": inbox}
    )
    assert run.get_task_instance("convert").state == "failed"
    log = task_log(capfd)
    assert f"No file matches the glob pdfs={inbox!r}: check the folder" in log


# --------------------------------------------------------------------------- ConvertOperator


def test_a_glob_that_matches_nothing_fails_without_retries(tmp_path: Path) -> None:
    pattern = str(tmp_path / "inbox" / "*.pdf")
    with pytest.raises(FileNotFoundError) as raised:
        convert(tmp_path, pdfs=pattern)
    assert isinstance(raised.value, AirflowFailException)
    message = str(raised.value)
    assert f"No file matches the glob pdfs={pattern!r}" in message
    assert "check the folder and the pattern" in message


def test_a_missing_file_and_a_folder_are_named_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        convert(tmp_path, pdfs=[str(INCLUDE / "inbox" / "renewal-form.pdf"),
                                str(tmp_path / "lost.pdf")])  # fmt: skip
    assert isinstance(raised.value, AirflowFailException)
    assert f"pdfs: {str(tmp_path / 'lost.pdf')!r} does not exist" in str(raised.value)
    folder = str(INCLUDE / "inbox")
    with pytest.raises(AirflowFailException) as raised:
        convert(tmp_path, pdfs=folder)
    assert f"pdfs {folder!r} is a folder; give a glob such as {folder + '/*.pdf'!r}" in str(
        raised.value
    )


def test_a_file_that_is_not_a_pdf_is_named(tmp_path: Path) -> None:
    """Among many inputs, "The file is not a PDF" left the user to find which."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.pdf").write_bytes(flat_form(1))
    (inbox / "notes.pdf").write_text("meeting notes", encoding="utf-8")
    with pytest.raises(AirflowFailException) as raised:
        convert(tmp_path, pdfs=str(inbox / "*.pdf"))
    message = str(raised.value)
    assert f"{str(inbox / 'notes.pdf')!r}: The file is not a PDF" in message
    assert "remove it from pdfs" in message


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("detect", "fast", "detect must be one of ('fields', 'fields_fast'), not 'fast'"),
        ("max_overage_pages", "lots", "max_overage_pages must be a whole number of pages"),
        ("max_overage_pages", -3, "max_overage_pages must be a whole number of pages"),
        ("max_overage_usd", "cheap", "max_overage_usd must be an amount in USD"),
        ("poll_interval", 0, "poll_interval must be a number of seconds above 0, not 0"),
    ],
)
def test_a_bad_convert_option_is_refused_when_the_dag_is_parsed_and_when_rendered(
    tmp_path: Path, option: str, value: object, needle: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(needle)):
        ConvertOperator(task_id="c", pdfs="x.pdf", output_dir="o", **{option: value})
    # the same value rendered from a template: refused before any file is read
    templated = ConvertOperator(task_id="c", pdfs=str(tmp_path / "none.pdf"),
                                output_dir=str(tmp_path), **{option: "{{ params.x }}"})  # fmt: skip
    setattr(templated, option, value)
    with pytest.raises(AirflowFailException, match=re.escape(needle)):
        templated.execute(context={})  # type: ignore[arg-type]


def test_a_missing_schema_file_names_the_schema_option(tmp_path: Path) -> None:
    path = str(tmp_path / "form.schema.json")
    with pytest.raises(FileNotFoundError) as raised:
        convert(tmp_path, pdfs=str(INCLUDE / "inbox" / "*.pdf"), schema=path)
    assert isinstance(raised.value, AirflowFailException)
    assert f"schema {path!r} does not exist" in str(raised.value)


def test_a_named_connection_that_does_not_exist_says_how_to_make_it(tmp_path: Path) -> None:
    with pytest.raises(AirflowNotFoundException) as raised:
        convert(tmp_path, pdfs=str(INCLUDE / "inbox" / "*.pdf"), fillpdf_conn_id="fillpdf_prod")
    assert isinstance(raised.value, AirflowFailException)
    message = str(raised.value)
    assert "fillpdf_conn_id 'fillpdf_prod' names no connection" in message
    assert "AIRFLOW_CONN_FILLPDF_PROD" in message and "fillpdf_default" in message


# --------------------------------------------------------------------------- FillOperator


def test_fill_refuses_a_connection_that_does_not_exist(tmp_path: Path) -> None:
    """A path template never asked for the connection, so a typo'd id went unnoticed."""
    with pytest.raises(AirflowNotFoundException, match="'fillpdf_prdo' names no connection"):
        fill(tmp_path, values={"full_name": "Ada"}, fillpdf_conn_id="fillpdf_prdo")
    assert not (tmp_path / "one.pdf").exists()


def test_a_template_that_is_missing_not_a_pdf_or_flat_is_named_with_the_fix(
    tmp_path: Path,
) -> None:
    missing = str(tmp_path / "form.pdf")
    with pytest.raises(FileNotFoundError) as raised:
        fill(tmp_path, template=missing)
    assert isinstance(raised.value, AirflowFailException)
    assert f"template {missing!r}: no such file" in str(raised.value)
    assert "conversion id" in str(raised.value)
    text = tmp_path / "form.txt"
    text.write_text("not a form", encoding="utf-8")
    with pytest.raises(
        AirflowFailException, match=re.escape(f"template {str(text)!r}: The file is not a PDF")
    ):
        fill(tmp_path, template=str(text))
    flat = str(INCLUDE / "inbox" / "renewal-form.pdf")
    with pytest.raises(AirflowFailException) as raised:
        fill(tmp_path, template=flat)
    assert f"template {flat!r}: The PDF has no fillable fields" in str(raised.value)
    assert "ConvertOperator" in str(raised.value)


def test_an_unknown_field_or_a_refused_value_names_the_key_the_value_and_the_fix(
    tmp_path: Path,
) -> None:
    with pytest.raises(AirflowFailException) as raised:
        fill(tmp_path, values={"Full Name": "Ada"})
    message = str(raised.value)
    assert "values['Full Name']" in message and "did you mean 'full_name'" in message
    with pytest.raises(AirflowFailException) as raised:
        fill(tmp_path, values={"newsletter": "maybe"})
    assert "values['newsletter'] = 'maybe'" in str(raised.value)
    assert not (tmp_path / "one.pdf").exists()


def test_values_rendered_as_text_are_read_as_json_or_named(tmp_path: Path) -> None:
    """A templated ``values`` renders to text unless the DAG renders native objects."""
    result = fill(tmp_path, values='{"full_name": "Ada", "newsletter": true}')
    assert (PdfReader(result["output"]).get_fields() or {})["full_name"]["/V"] == "Ada"
    with pytest.raises(AirflowFailException) as raised:
        fill(tmp_path, values="full_name=Ada")
    message = str(raised.value)
    assert "values must be a mapping of field name to value" in message
    assert "'full_name=Ada'" in message and "render_template_as_native_obj=True" in message


def test_a_bad_fill_on_is_refused_when_the_dag_is_parsed() -> None:
    with pytest.raises(
        ValueError, match=re.escape("fill_on must be one of ('worker', 'service'), not 'remote'")
    ):
        FillOperator(task_id="f", template=FORM, values={}, output_path="o.pdf", fill_on="remote")


@pytest.mark.parametrize("operator", [ConvertOperator, FillOperator])
def test_the_docstring_documents_every_parameter(operator: type) -> None:
    documented = set(re.findall(r":param (\w+):", operator.__doc__ or ""))
    accepted = set(inspect.signature(operator.__init__).parameters) - {"self", "kwargs"}
    assert documented == accepted


# --------------------------------------------------------------------------- the connection


@pytest.mark.parametrize("timeout", ["abc", 0, -5, "nan"])
def test_a_timeout_that_is_no_positive_number_is_named(monkeypatch, timeout: object) -> None:
    conn = {"conn_type": "fillpdf", "host": "https://fillpdf.example.com", "password": "fpk_x",
            "extra": {"timeout": timeout}}  # fmt: skip
    message = refusal(connect(monkeypatch, conn))
    assert f"Timeout (seconds) (extra 'timeout') is {timeout!r}" in message
    assert "a number of seconds above 0" in message and "120" in message


def test_the_mode_may_be_written_in_any_case(monkeypatch) -> None:
    conn = {"conn_type": "fillpdf", "host": "https://fillpdf.example.com", "password": "fpk_x",
            "extra": {"mode": " API "}}  # fmt: skip
    assert connect(monkeypatch, conn).settings["mode"] == "api"


def test_an_api_key_without_a_base_url_is_refused(monkeypatch) -> None:
    """The key was dropped and the engine ran in the worker, where no quota counts it."""
    message = refusal(connect(monkeypatch, {"conn_type": "fillpdf", "password": "fpk_x"}))
    assert "has an API key (password) but no Base URL (host)" in message
    assert "set the host to the service's URL" in message and "'embedded'" in message
    explicit = {"conn_type": "fillpdf", "password": "fpk_x", "extra": {"mode": "embedded"}}
    assert connect(monkeypatch, explicit, "fp_explicit").settings["mode"] == "embedded"


def test_a_base_url_the_client_cannot_call_is_named(monkeypatch) -> None:
    conn = {"conn_type": "fillpdf", "host": "ftp://fillpdf.example.com", "password": "fpk_x"}
    message = refusal(connect(monkeypatch, conn))
    assert "Base URL (host) 'ftp://fillpdf.example.com'" in message
    assert "http:// or https://" in message and "https://fillpdf.example.com" in message


def test_a_base_url_copied_with_the_api_version_still_reaches_the_service(monkeypatch) -> None:
    """The API's paths start with /v1; a base URL ending in it made every call /v1/v1/..."""
    conn = {"conn_type": "fillpdf", "host": "https://fillpdf.example.com/v1/", "password": "k"}
    assert connect(monkeypatch, conn).settings["base_url"] == "https://fillpdf.example.com"


def test_an_extra_the_connection_does_not_know_is_named_with_the_nearest(monkeypatch) -> None:
    """A typo'd ``timout`` was ignored: requests kept the default timeout."""
    conn = {"conn_type": "fillpdf", "host": "https://fillpdf.example.com", "password": "fpk_x",
            "extra": {"timout": 30}}  # fmt: skip
    message = refusal(connect(monkeypatch, conn))
    assert "extra 'timout' is not a setting of a fillpdf connection" in message
    assert "did you mean 'timeout'?" in message


def test_a_conversions_store_the_worker_cannot_write_fails_the_test_button(
    monkeypatch, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    store = str(blocker / "conversions")  # under a file: never a folder
    hook = connect(monkeypatch, {"conn_type": "fillpdf", "extra": {"conversions_uri": store}})
    ok, message = hook.test_connection()
    assert not ok
    assert f"conversions store {store!r}" in message and "conversions_uri" in message
    with pytest.raises(Exception, match=re.escape(f"conversions store {store!r}")):
        hook.convert(flat_form(1))


def test_the_async_client_refusal_names_the_connection_and_its_mode(monkeypatch) -> None:
    hook = connect(monkeypatch, {"conn_type": "fillpdf"}, "fp_local")
    with pytest.raises(ValueError, match="Connection 'fp_local' is in embedded mode"):
        hook.get_async_client()


def test_the_task_log_says_where_calls_go(monkeypatch, tmp_path: Path) -> None:
    """A missing fillpdf_default and one set to embedded mode both logged "embedded mode":
    an ops engineer could not tell a forgotten connection from a chosen one."""
    assert FillPdfHook().describe() == (
        "no connection 'fillpdf_default': the embedded engine, in the worker (conversions "
        f"kept in {tmp_path / 'store'})"
    )
    local = {"conn_type": "fillpdf", "extra": {"conversions_uri": "s3://bucket/conversions"}}
    assert connect(monkeypatch, local, "fp_local").describe() == (
        "connection 'fp_local': embedded mode (conversions kept in s3://bucket/conversions)"
    )
    api = {"conn_type": "fillpdf", "host": "fillpdf.internal", "port": 8443, "password": "k"}
    assert connect(monkeypatch, api, "fp_api").describe() == (
        "connection 'fp_api': api mode, the service at https://fillpdf.internal:8443"
    )


def test_the_embedded_engine_names_the_file_it_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_text("not a pdf", encoding="utf-8")
    from fillpdf_provider.client import UnsupportedFile

    with pytest.raises(UnsupportedFile, match=re.escape(f"{str(path)!r}: The file is not a PDF")):
        FillPdfHook().convert(str(path))


def test_the_connection_form_says_what_goes_in_each_field() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    widgets = {name: info.field for name, info in manager.connection_form_widgets.items()
               if name.startswith("extra__fillpdf__")}  # fmt: skip
    assert set(widgets) == {f"extra__fillpdf__{n}" for n in ("mode", "timeout", "conversions_uri")}
    for name, field in widgets.items():
        assert field["schema"].get("title"), name
        assert len(field["description"] or "") > 30, name
    assert "120" in widgets["extra__fillpdf__timeout"]["description"]
    assert widgets["extra__fillpdf__timeout"]["schema"]["exclusiveMinimum"] == 0
    placeholders = manager.field_behaviours["fillpdf"]["placeholders"]
    assert "empty" in placeholders["host"] and "embedded" in placeholders["host"]
    assert "fillpdf keys create" in placeholders["password"]
    assert placeholders["extra__fillpdf__timeout"] == "120"
    assert placeholders["extra__fillpdf__conversions_uri"].startswith("s3://")
