"""One value rule on every path: the same values give the same bytes through the engine, the
CLI (``fill`` and ``batch``), the API (inline and by conversion id), the hook in both modes,
``FillOperator`` and ``BatchFillOperator`` (filled on the worker or by the service).

The form has every kind of field a mail-merge fills: text, a date in mm/dd/yyyy, a checkbox,
radio groups and a choice. An ISO date is written in the form's format on every path; a date
in neither format is refused on every path, naming the field, the value and the format."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pypdf import PdfReader

from fillpdf_provider.engine import Template
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators import BatchFillOperator, FillOperator
from kits.cli_support import run
from kits.flatkit import flat_form, merge_form, merge_form_schema
from kits.servicekit import Server, start_server
from kits.tables import write_csv

VALUES = {
    "full_name": "Ada Lovelace",
    "email": "ada@example.com",
    "city": "Zürich",
    "member": True,
    "plan": "gold",
    "size": "m",
    "country": "SE",
    "signed_on": "2025-03-05",
}
#: The same values as a table's cells: text everywhere, as a CSV holds them.
CELLS = {**VALUES, "member": "yes"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("one-value-rule"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def key(service: Server) -> str:
    return service.create_key("pro")


@pytest.fixture(scope="module")
def form() -> bytes:
    return merge_form()


@pytest.fixture(scope="module")
def reference(form: bytes) -> bytes:
    """The engine's own fill: what every other path must give, byte for byte."""
    filled = Template(form).fill(VALUES)
    fields = PdfReader(__import__("io").BytesIO(filled)).get_fields() or {}
    assert fields["signed_on"]["/V"] == "03/05/2025"  # the form's format, from ISO
    assert fields["member"]["/V"] == "/Yes" and fields["plan"]["/V"] == "/gold"
    return filled


@pytest.fixture(scope="module")
def conversion_id(service: Server, key: str, form: bytes) -> str:
    """The same form converted by the service from the same flat PDF and schema."""
    with service.client(key) as client:
        answer = client.post(
            "/v1/convert",
            files={"file": ("flat.pdf", flat_form(2))},
            data={"schema": json.dumps(merge_form_schema())},
        )
        assert answer.status_code == 200, answer.text
        converted = answer.json()
        stored = client.get(converted["document_url"])
    assert stored.content == form  # one engine, one conversion, the same bytes
    return str(converted["conversion_id"])


def use_service(monkeypatch: pytest.MonkeyPatch, service: Server | None, key: str = "") -> None:
    if service is None:
        monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
        return
    conn = {"conn_type": "fillpdf", "host": service.base_url, "password": key}
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))


def test_every_path_gives_the_same_bytes(
    service: Server,
    key: str,
    form: bytes,
    reference: bytes,
    conversion_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    template = tmp_path / "form.pdf"
    template.write_bytes(form)
    rows = write_csv(tmp_path / "rows.csv", [CELLS])
    fields = [f.to_dict() for f in Template(form).fields]
    outputs: dict[str, bytes] = {}

    # the CLI: JSON values (true, or "yes" as a cell reads) and a table's row
    for name, values in (("cli fill", VALUES), ("cli fill, cells", CELLS)):
        (tmp_path / "values.json").write_text(json.dumps(values), encoding="utf-8")
        out = tmp_path / f"{name}.pdf"
        done = run("fill", template, "--values", tmp_path / "values.json", "-o", out)
        assert done.returncode == 0, done.stderr
        outputs[name] = out.read_bytes()
    done = run("batch", template, rows, "--out-dir", tmp_path / "cli-batch", "--no-progress")
    assert done.returncode == 0, done.stderr
    outputs["cli batch"] = (tmp_path / "cli-batch" / "1.pdf").read_bytes()

    # the API: inline and by conversion id
    with service.client(key) as client:
        inline = {"pdf_base64": base64.b64encode(form).decode(), "fields": fields}
        for name, body in (("api inline", inline), ("api by id", {"conversion_id": conversion_id})):
            answer = client.post("/v1/fill", json={**body, "values": VALUES})
            assert answer.status_code == 200, answer.text
            outputs[name] = answer.content

    # the hook, both modes
    use_service(monkeypatch, None)
    with FillPdfHook() as hook:
        outputs["hook embedded"] = hook.fill(form, VALUES, fields=fields)
    use_service(monkeypatch, service, key)
    with FillPdfHook() as hook:
        outputs["hook api"] = hook.fill(conversion_id, VALUES)

    # the operators: embedded, and on a service filled on the worker or by the service
    for name, source, fill_on in (
        ("embedded", str(template), "worker"),
        ("api, on the worker", conversion_id, "worker"),
        ("api, by the service", conversion_id, "service"),
    ):
        use_service(monkeypatch, None if name == "embedded" else service, key)
        out = tmp_path / f"op-{len(outputs)}.pdf"
        FillOperator(
            task_id="fill", template=source, values=VALUES, output_path=str(out), fill_on=fill_on
        ).execute({})  # type: ignore[arg-type]
        outputs[f"FillOperator {name}"] = out.read_bytes()
        folder = tmp_path / f"batch-{len(outputs)}"
        BatchFillOperator(
            task_id="batch", template=source, rows=str(rows), output_dir=str(folder),
            fill_on=fill_on,
        ).execute({})  # type: ignore[arg-type]  # fmt: skip
        outputs[f"BatchFillOperator {name}"] = (folder / "1.pdf").read_bytes()

    different = [name for name, pdf in outputs.items() if pdf != reference]
    assert not different, f"not byte-identical to the engine's fill: {different}"
    assert len(outputs) == 13


BAD_DATE = "19/02/2025"  # day and month swapped: no date in mm/dd/yyyy


def test_a_date_in_neither_format_is_refused_on_every_path(
    service: Server, key: str, form: bytes, conversion_id: str, tmp_path: Path
) -> None:
    expected = (
        f"Field 'signed_on': '{BAD_DATE}' is not a date in the form's format mm/dd/yyyy (e.g. "
        "03/05/2025) or in ISO 8601 (e.g. 2025-03-05); give the date in one of those."
    )
    with pytest.raises(Exception, match="is not a date in the form's format") as caught:
        Template(form).fill({**VALUES, "signed_on": BAD_DATE})
    assert str(caught.value) == expected

    template = tmp_path / "form.pdf"
    template.write_bytes(form)
    (tmp_path / "values.json").write_text(json.dumps({**VALUES, "signed_on": BAD_DATE}))
    done = run("fill", template, "--values", tmp_path / "values.json", "-o", tmp_path / "o.pdf")
    assert done.returncode != 0 and expected in done.stderr
    assert not (tmp_path / "o.pdf").exists()

    rows = write_csv(tmp_path / "rows.csv", [CELLS, {**CELLS, "signed_on": BAD_DATE}])
    done = run("batch", template, rows, "--out-dir", tmp_path / "out", "--no-progress")
    assert done.returncode == 1  # the row is a bad row, never reported ok
    assert f"row 2: {expected}" in done.stderr
    assert sorted(p.name for p in (tmp_path / "out").glob("*.pdf")) == ["1.pdf"]

    with service.client(key) as client:
        answer = client.post(
            "/v1/fill",
            json={"conversion_id": conversion_id, "values": {**VALUES, "signed_on": BAD_DATE}},
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == expected
    assert answer.json()["error"]["param"] == "signed_on"


def test_a_date_in_the_forms_format_is_kept_as_written(form: bytes) -> None:
    for written in ("03/05/2025", "3/5/2025"):
        filled = Template(form).fill({"signed_on": written})
        fields = PdfReader(__import__("io").BytesIO(filled)).get_fields() or {}
        assert fields["signed_on"]["/V"] == written


def test_the_api_reads_a_tables_spellings_as_the_cli_does(
    service: Server, key: str, conversion_id: str, reference: bytes
) -> None:
    with service.client(key) as client:
        answer = client.post("/v1/fill", json={"conversion_id": conversion_id, "values": CELLS})
        assert answer.status_code == 200, answer.text
        assert answer.content == reference  # "yes" ticks the box as true does
        answer = client.post(
            "/v1/fill", json={"conversion_id": conversion_id, "values": {"member": "maybe"}}
        )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "member"
    assert "'maybe' is not a checkbox value" in error["message"] and "true" in error["message"]


def test_the_input_check_reads_dates_by_the_same_rule(form: bytes, tmp_path: Path) -> None:
    from fillpdf_provider.quality import QualityCheckOperator
    from fillpdf_provider.quality.checks import input_rows_check

    dates = ["03/05/2025", "2025-03-05", BAD_DATE, "3/5/2025"]
    rows = write_csv(tmp_path / "rows.csv", [{**CELLS, "signed_on": d} for d in dates])
    report = input_rows_check(rows, Template(form))
    assert {(f.column, f.sample_rows, f.sample_values) for f in report.failures} == {
        ("signed_on", (3,), (BAD_DATE,))
    }
    template = tmp_path / "form.pdf"
    template.write_bytes(form)
    check = QualityCheckOperator(
        task_id="check", kind="input", template=str(template), rows=str(rows)
    )
    assert {f.sample_rows for f in check.check().failures} == {(3,)}
