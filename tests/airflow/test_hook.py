"""``FillPdfHook`` in both modes, with one suite: the service over HTTP, and the embedded
engine in this process. Same calls, same types, same errors, and the same schemas."""

from __future__ import annotations

import io
import json

import pytest
from pypdf import PdfReader

from fillpdf_provider.client import Account, InvalidRequest, NotFound, UnsupportedFile
from fillpdf_provider.engine.convert import ConversionResult
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from kits.flatkit import flat_form_schema
from kits.formkit import sample_form
from kits.servicekit import Server, flat_form, start_server

CONN = "fillpdf_test"
MODES = ["api", "embedded"]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("hook-service"))
    yield running
    running.stop()


def connect(monkeypatch: pytest.MonkeyPatch, conn: dict, conn_id: str = CONN) -> FillPdfHook:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    return FillPdfHook(conn_id)


@pytest.fixture(params=MODES)
def hook(request, service: Server, monkeypatch: pytest.MonkeyPatch, tmp_path) -> FillPdfHook:
    if request.param == "api":
        conn = {
            "conn_type": "fillpdf",
            "host": service.base_url,
            "password": service.create_key("pro"),
        }
    else:
        conn = {"conn_type": "fillpdf", "extra": {"conversions_uri": str(tmp_path / "store")}}
    made = connect(monkeypatch, conn)
    assert made.mode == request.param
    return made


def test_convert_returns_a_fillable_result(hook: FillPdfHook, tmp_path) -> None:
    path = tmp_path / "flat.pdf"
    path.write_bytes(flat_form(2))
    for source in (path, path.read_bytes(), io.BytesIO(path.read_bytes())):
        result = hook.convert(source)
        assert isinstance(result, ConversionResult)
        assert result.conversion_id and result.conversion_id.startswith("conv_")
        assert result.pages == 2 and result.status == "converted"
        assert {"full_name", "email", "member"} <= {f.name for f in result.schema}
        widgets = PdfReader(io.BytesIO(result.pdf)).get_fields() or {}
        assert {f.name for f in result.schema} <= set(widgets)
    again = hook.get_conversion(result.conversion_id)
    assert again.schema == result.schema and again.pdf == result.pdf


def test_fill_by_conversion_id_and_inline(hook: FillPdfHook) -> None:
    result = hook.convert(flat_form(1), detect="fields_fast")
    filled = hook.fill(result.conversion_id, {"full_name": "Ada Lovelace", "member": True})
    fields = PdfReader(io.BytesIO(filled)).get_fields() or {}
    assert fields["full_name"]["/V"] == "Ada Lovelace"
    assert fields["member"]["/V"] not in (None, "/Off")
    flat = hook.fill(result.conversion_id, {"full_name": "Ada"}, flatten=True)
    assert not PdfReader(io.BytesIO(flat)).get_fields()
    pdf, _ = sample_form()
    inline = hook.fill(pdf, {"full_name": "Grace"}, fields=[{"name": "full_name", "type": "text"}])
    assert (PdfReader(io.BytesIO(inline)).get_fields() or {})["full_name"]["/V"] == "Grace"


def test_errors_are_the_same_in_both_modes(hook: FillPdfHook) -> None:
    with pytest.raises(NotFound):
        hook.get_conversion("conv_" + "0" * 24)
    with pytest.raises(UnsupportedFile):
        hook.convert(b"this is not a PDF")
    result = hook.convert(flat_form(1))
    with pytest.raises(InvalidRequest) as caught:
        hook.fill(result.conversion_id, {"member": "maybe"})
    assert caught.value.param == "member"
    with pytest.raises(InvalidRequest) as caught:
        hook.fill(result.conversion_id, {"emial": "x"})
    assert "'email'" in caught.value.message


def test_convert_with_a_schema_builds_that_form(hook: FillPdfHook) -> None:
    schema = flat_form_schema()
    result = hook.convert(flat_form(2), schema=schema)
    assert [f.name for f in result.schema] == [e["name"] for e in schema]
    assert all(f.confidence == 1.0 for f in result.schema)
    assert hook.get_conversion(result.conversion_id).schema == result.schema
    filled = hook.fill(result.conversion_id, {"plan": "gold", "country": "NO"})
    fields = PdfReader(io.BytesIO(filled)).get_fields() or {}
    assert fields["plan"]["/V"] == "/gold" and fields["country"]["/V"] == "NO"
    schema[0]["rect"] = [150, 655, 150, 675]
    with pytest.raises(InvalidRequest) as caught:
        hook.convert(flat_form(2), schema=schema)
    assert caught.value.param == "schema" and "schema[0] ('full_name')" in caught.value.message


def test_account_and_test_connection(hook: FillPdfHook) -> None:
    hook.convert(flat_form(3))
    account = hook.get_account()
    assert isinstance(account, Account)
    assert account.pages_used >= 3
    if hook.mode == "embedded":
        assert account.plan == "embedded" and account.pages_included is None
        assert not account.hard_stop and account.rate_limit_per_minute is None
    else:
        assert account.plan == "pro" and account.pages_included == 60
    ok, message = hook.test_connection()
    assert ok, message


def test_both_modes_give_equal_schemas_and_identical_fills(
    service: Server, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    api = connect(
        monkeypatch,
        {"conn_type": "fillpdf", "host": service.base_url, "password": service.create_key("pro")},
        "fp_api",
    )
    embedded = connect(
        monkeypatch,
        {"conn_type": "fillpdf", "extra": {"mode": "embedded", "conversions_uri": str(tmp_path)}},
        "fp_local",
    )
    pdf = flat_form(2)
    remote, local = api.convert(pdf), embedded.convert(pdf)
    assert remote.schema == local.schema
    assert remote.pdf == local.pdf
    built = [hook.convert(pdf, schema=flat_form_schema()) for hook in (api, embedded)]
    assert built[0].schema == built[1].schema and built[0].pdf == built[1].pdf
    values = {"full_name": "Ada", "email": "ada@example.org", "newsletter": True}
    assert api.fill(remote.conversion_id, values) == embedded.fill(local.conversion_id, values)


def test_missing_default_connection_means_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    hook = FillPdfHook()
    assert hook.mode == "embedded"
    assert hook.test_connection()[0]


def test_a_named_connection_that_is_missing_is_an_error() -> None:
    from airflow.sdk.exceptions import AirflowNotFoundException

    with pytest.raises(AirflowNotFoundException):
        _ = FillPdfHook("no_such_connection").mode


def test_api_mode_needs_a_key_and_reports_a_bad_one(
    service: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyless = connect(
        monkeypatch,
        {"conn_type": "fillpdf", "host": service.base_url, "extra": {"mode": "api"}},
        "fp_keyless",
    )
    ok, message = keyless.test_connection()
    assert not ok and "API key" in message
    wrong = connect(
        monkeypatch,
        {
            "conn_type": "fillpdf",
            "host": service.base_url,
            "password": "fpk_0000000000000000_" + "x" * 43,
        },
        "fp_wrong",
    )
    ok, message = wrong.test_connection()
    assert not ok and "API key" in message


def test_host_port_and_schema_make_the_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = connect(
        monkeypatch,
        {
            "conn_type": "fillpdf",
            "host": "fillpdf.internal",
            "port": 8443,
            "password": "k",
            "extra": {"timeout": "30"},
        },
        "fp_url",
    )
    assert hook.settings["base_url"] == "https://fillpdf.internal:8443"
    assert hook.settings["timeout"] == 30.0


def test_the_provider_registers_the_hook_and_its_connection_form() -> None:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    assert "airflow-provider-fillpdf" in manager.providers
    info = manager.providers["airflow-provider-fillpdf"].data["connection-types"][0]
    assert info["hook-class-name"] == "fillpdf_provider.hooks.fillpdf.FillPdfHook"
    widgets = manager.connection_form_widgets
    mode = widgets["extra__fillpdf__mode"].field["schema"]
    assert mode["enum"] == ["api", "embedded"]
    # No default: an empty mode follows the base URL (embedded without one); a form that
    # preset "api" contradicted the empty host it offered for the embedded engine.
    assert mode.get("default") is None
    behaviour = manager.field_behaviours["fillpdf"]
    assert behaviour["relabeling"] == {"host": "Base URL", "password": "API key"}
    assert "login" in behaviour["hidden_fields"]


def test_a_mode_that_contradicts_the_connection_says_what_to_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mode "api" with no host used to say "leave the host empty", which it was."""
    hook = connect(monkeypatch, {"conn_type": "fillpdf", "extra": {"mode": "api"}}, "fp_api_no")
    with pytest.raises(ValueError) as raised:
        hook.settings  # noqa: B018 - reading the connection raises
    message = str(raised.value)
    assert "no base URL (host)" in message and "'embedded'" in message
    assert "leave the host empty" not in message
    empty = connect(monkeypatch, {"conn_type": "fillpdf", "extra": {"mode": ""}}, "fp_empty")
    assert empty.settings["mode"] == "embedded"
