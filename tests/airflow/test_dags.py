"""The example DAGs end to end with ``dag.test()``: on the embedded engine and against the
real service, checking what they leave behind (files, values, manifest)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypdf import PdfReader

from kits.servicekit import Server, start_server

INCLUDE = Path(__file__).resolve().parents[2] / "include"
SAMPLE_ROWS = INCLUDE / "sample_rows.csv"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("dag-service"))
    yield running
    running.stop()


@pytest.fixture(params=["embedded", "api"])
def mode(request, monkeypatch: pytest.MonkeyPatch, service: Server) -> str:
    """Run with no connection (embedded) or a fillpdf_default that points at the service."""
    if request.param == "api":
        key = service.create_key("enterprise", pages_included=1000, rate_limit_per_minute=100000)
        conn = {"conn_type": "fillpdf", "host": service.base_url, "password": key}
        monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))
    else:
        monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
        monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(service.data_dir / "embedded-store"))
    return request.param


def manifest_rows(folder: Path) -> list[dict]:
    return pq.read_table(folder / "manifest.parquet").to_pylist()


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_mail_merge_dag(dagbag, mode: str, tmp_path: Path) -> None:
    out = tmp_path / "merged"
    conf = {
        "output": str(out),
        "chunks": 3,
        "check_input": True,
        "rows": str(SAMPLE_ROWS),
        "min_rows_per_chunk": 1,
    }
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == "success"
    expected = csv_rows(SAMPLE_ROWS)
    records = manifest_rows(out)
    assert [r["row"] for r in records] == list(range(1, len(expected) + 1))
    assert all(r["status"] == "ok" for r in records), records
    pdfs = sorted(p.name for p in out.glob("*.pdf"))
    assert pdfs == sorted(r["path"] for r in records)
    for record, row in zip(records, expected, strict=True):
        data = (out / record["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == record["sha256"]
        assert len(data) == record["bytes"] and record["pages"] == 1
        assert record["path"] == f"{record['row']}.pdf"  # the default works for any table
        fields = PdfReader(io.BytesIO(data)).get_fields() or {}
        assert fields["full_name"]["/V"] == row["full_name"]
        assert fields["email"]["/V"] == row["email"]
    assert len(list((out / "_manifests").glob("chunk-*.parquet"))) == 3


def test_both_modes_write_the_same_bytes(dagbag, service: Server, monkeypatch, tmp_path) -> None:
    sums = {}
    for mode in ("embedded", "api"):
        if mode == "api":
            key = service.create_key("enterprise", rate_limit_per_minute=100000)
            conn = {"conn_type": "fillpdf", "host": service.base_url, "password": key}
            monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))
        out = tmp_path / mode
        conf = {
            "output": str(out),
            "chunks": 2,
            "check_input": True,
            "rows": str(SAMPLE_ROWS),
            "min_rows_per_chunk": 1,
        }
        dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
        sums[mode] = [r["sha256"] for r in manifest_rows(out)]
    assert sums["embedded"] == sums["api"]


def test_convert_inbox_dag(dagbag, mode: str, tmp_path: Path) -> None:
    out = tmp_path / "converted"
    run = dagbag.get_dag("fillpdf_convert_inbox").test(run_conf={"output": str(out)})
    assert run.state == "success"
    flat = sorted(p.stem for p in (INCLUDE / "inbox").glob("*.pdf"))
    assert sorted(p.name for p in out.glob("*.fillable.pdf")) == [f"{s}.fillable.pdf" for s in flat]
    for stem in flat:
        schema = json.loads((out / f"{stem}.schema.json").read_text())["schema"]
        names = {entry["name"] for entry in schema}
        assert {"full_name", "email", "member"} <= names
        widgets = PdfReader(out / f"{stem}.fillable.pdf").get_fields() or {}
        assert names <= set(widgets)


def bad_rows_file(tmp_path: Path) -> Path:
    rows = csv_rows(SAMPLE_ROWS)[:6]
    rows[1]["newsletter"] = "maybe"  # row 2: wrong type for a checkbox
    rows[3]["plan"] = "Gold"  # row 4: not among the options
    rows[4]["email"] = ""  # row 5: a required field left empty
    table = pa.Table.from_pylist(rows)
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize(
    ("limit", "state"),
    [(0, "failed"), (2, "failed"), (3, "success"), (0.5, "success"), (0.4, "failed")],
)
def test_bad_rows_fail_the_run_past_max_failed_rows_and_the_rest_complete(
    dagbag, mode: str, tmp_path: Path, limit: float, state: str
) -> None:
    out = tmp_path / "out"
    conf = {
        "output": str(out),
        "rows": str(bad_rows_file(tmp_path)),
        "chunks": 2,
        "min_rows_per_chunk": 1,
        "check_input": False,
        "max_failed_rows": limit,
    }
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == state
    collect = next(ti for ti in run.get_task_instances() if ti.task_id == "collect")
    assert collect.state == state  # the chunks succeed: the verdict sees every row
    # failed or not, the manifest lists every row with its reason
    records = {r["row"]: r for r in manifest_rows(out)}
    assert sorted(records) == [1, 2, 3, 4, 5, 6]
    assert [row for row, r in records.items() if r["status"] == "ok"] == [1, 3, 6]
    assert "newsletter" in records[2]["error"] and "maybe" in records[2]["error"]
    assert "plan" in records[4]["error"] and "Gold" in records[4]["error"]
    assert "email" in records[5]["error"] and "requires" in records[5]["error"]
    assert len(list(out.glob("*.pdf"))) == 3


@pytest.mark.parametrize(("limit", "state"), [(2, "failed"), (3, "success")])
def test_the_input_check_honours_max_failed_rows_as_the_fill_does(
    dagbag,
    tmp_path: Path,
    monkeypatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    limit: int,
    state: str,
) -> None:
    """Three bad rows: with max_failed_rows 2 the input check stops the run and says what it
    allows; with 3 the check passes, naming it, and the fill records them as failed."""
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    out = tmp_path / "out"
    conf = {"output": str(out), "rows": str(bad_rows_file(tmp_path)), "chunks": 1,
            "check_input": True, "max_failed_rows": limit}  # fmt: skip
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == state
    check = json.loads((out / "_quality" / "input.json").read_text())
    assert (check["success"], check["bad_rows"]) == (state == "success", 3)
    assert check["failed_rows_allowed"] == limit
    log = "".join(capfd.readouterr()) + caplog.text
    if state == "failed":
        assert run.get_task_instance("check_input").state == "failed"
        assert "3 rows have values the form can't take; max_failed_rows allows 2" in log
        assert not list(out.glob("*.pdf"))
        return
    assert "3 rows with values the form can't take, within max_failed_rows (3)" in log
    failed = [r["row"] for r in manifest_rows(out) if r["status"] == "error"]
    assert failed == [2, 4, 5]  # the rows the check named: recorded, the rest filled
    assert run.get_task_instance("collect").state == "success"
    from fillpdf_provider.operators import merge_manifests

    summary = merge_manifests(str(out), max_failed_rows=limit)  # as collect merges them
    assert (summary["failed"], summary["failed_rows_allowed"]) == (3, 3)


def test_missing_column_is_reported_on_every_row(dagbag, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    rows = [{k: v for k, v in r.items() if k != "email"} for r in csv_rows(SAMPLE_ROWS)[:4]]
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    out = tmp_path / "out"
    conf = {"output": str(out), "rows": str(path), "chunks": 1, "check_input": False}
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == "failed"  # every row failed: never a green run
    records = manifest_rows(out)
    assert [r["status"] for r in records] == ["error"] * 4
    assert all("no column fills it" in r["error"] for r in records)


@pytest.mark.parametrize(
    ("change", "column", "rows"),
    [
        (lambda rows: [{k: v for k, v in r.items() if k != "email"} for r in rows], "email", []),
        (
            lambda rows: [
                {**r, "newsletter": "maybe"} if i == 2 else r for i, r in enumerate(rows)
            ],
            "newsletter",
            [3],
        ),
    ],
    ids=["missing-column", "impossible-checkbox"],
)
def test_the_input_check_stops_the_run_before_any_pdf(
    dagbag, tmp_path: Path, monkeypatch, change, column: str, rows: str
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    path = tmp_path / "rows.csv"
    table = change(csv_rows(SAMPLE_ROWS)[:6])
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    out = tmp_path / "out"
    run = dagbag.get_dag("fillpdf_mail_merge").test(
        run_conf={
            "output": str(out),
            "rows": str(path),
            "check_input": True,
            "chunks": 2,
            "min_rows_per_chunk": 1,
        }
    )
    assert run.state == "failed"
    check = run.get_task_instance("check_input")
    assert check is not None and check.state == "failed"
    report = json.loads((out / "_quality" / "input.json").read_text())
    failures = [f for f in report["failures"] if f["column"] == column]
    assert failures and failures[0]["sample_rows"] == rows, report["failures"]
    assert not list(out.glob("*.pdf")) and not (out / "manifest.parquet").exists()


def test_api_mode_fills_on_the_worker_exactly_as_the_service_does(
    service: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A conversion on the service is downloaded once and filled on the worker: the same bytes
    as the service's own fill of each row, with no request per row. ``fill_on="service"``
    sends one request per row, by conversion id, and gives the same bytes again."""
    from fillpdf_provider.hooks.fillpdf import FillPdfHook
    from fillpdf_provider.operators import BatchFillOperator
    from kits.flatkit import flat_form, flat_form_schema

    key = service.create_key("enterprise", pages_included=1000, rate_limit_per_minute=100000)
    conn = {"conn_type": "fillpdf", "host": service.base_url, "password": key}
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))
    hook = FillPdfHook()
    conversion = hook.convert(flat_form(2), schema=flat_form_schema())
    texts = [f.name for f in conversion.schema if f.type == "text"]
    rows = [{name: f"{name} {i} Ünïcode" for name in texts} for i in range(1, 9)]
    rows_path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), rows_path)
    outputs = {}
    for fill_on in ("worker", "service"):
        out = tmp_path / fill_on
        BatchFillOperator(
            task_id="t", template=conversion.conversion_id, rows=str(rows_path),
            output_dir=str(out), fill_on=fill_on,
        ).execute(context={})  # type: ignore[arg-type]  # fmt: skip
        outputs[fill_on] = [(out / f"{i}.pdf").read_bytes() for i in range(1, 9)]
    own = [hook.fill(conversion.conversion_id, row) for row in rows]  # the service's fill
    assert outputs["worker"] == own
    assert outputs["service"] == own
    with pytest.raises(ValueError, match="conversion id"):
        BatchFillOperator(
            task_id="t", template=str(INCLUDE / "sample_form.pdf"), rows=str(rows_path),
            output_dir=str(tmp_path / "x"), fill_on="service",
        ).execute(context={})  # type: ignore[arg-type]  # fmt: skip


def test_api_mode_cuts_text_on_the_worker_and_the_service_refuses_it(
    service: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The overflow policy is the engine's, so in api mode it applies where rows are filled
    on the worker; the service fills with its own ("error"): there a value too long for its
    box makes a bad row, named, and nothing is cut."""
    from airflow.sdk.exceptions import AirflowFailException

    from fillpdf_provider.hooks.fillpdf import FillPdfHook
    from fillpdf_provider.operators import BatchFillOperator
    from kits.flatkit import flat_form, flat_form_schema

    key = service.create_key("enterprise", pages_included=1000, rate_limit_per_minute=100000)
    conn = {"conn_type": "fillpdf", "host": service.base_url, "password": key}
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))
    conversion = FillPdfHook().convert(flat_form(2), schema=flat_form_schema())
    name = next(f.name for f in conversion.schema if f.type == "text" and not f.multiline)
    rows_path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([{name: "short"}, {name: "W" * 3000}]), rows_path)

    def fill(out: str, **options: object) -> dict:
        return BatchFillOperator(
            task_id="t", template=conversion.conversion_id, rows=str(rows_path),
            output_dir=str(tmp_path / out), **options,
        ).execute(context={})  # type: ignore[arg-type]  # fmt: skip

    worker = fill("worker", overflow="shrink")
    assert (worker["ok"], worker["failed"], worker["cut"]) == (2, 0, 1)
    assert [r["cut"] for r in manifest_rows(tmp_path / "worker")] == [None, [name]]
    with pytest.raises(AirflowFailException, match=f"row 2: Field '{name}'"):
        fill("service", fill_on="service")
    records = manifest_rows(tmp_path / "service")
    assert [r["status"] for r in records] == ["ok", "error"]
    assert [r["cut"] for r in records] == [None, None]


def test_the_name_template_is_checked_before_anything_is_filled(
    dagbag, mode: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    conf = {"output": str(out), "rows": str(SAMPLE_ROWS), "name_template": "{row}-{nope}.pdf"}
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == "failed"
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["check_input"] == "failed"
    assert states["fill_chunk"] == "upstream_failed"
    assert not out.exists() or not list(out.rglob("*.pdf"))


def test_a_table_with_no_rows_runs_to_an_empty_manifest_and_says_so(
    dagbag, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A header-only table: every task ran and passed, a manifest of no rows, a warning."""
    rows = tmp_path / "rows.csv"
    rows.write_text(SAMPLE_ROWS.read_text(encoding="utf-8").splitlines()[0] + "\n")
    out = tmp_path / "out"
    run = dagbag.get_dag("fillpdf_mail_merge").test(
        run_conf={"output": str(out), "rows": str(rows), "chunks": 4, "min_rows_per_chunk": 1}
    )
    assert run.state == "success"
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert states == {
        ("check_input", -1): "success",
        ("plan", -1): "success",
        ("fill_chunk", 0): "success",
        ("collect", -1): "success",
        ("check_manifest", -1): "success",
    }
    assert manifest_rows(out) == []
    assert not list(out.glob("*.pdf"))
    log = "".join(capfd.readouterr())
    assert f"rows {str(rows)!r} has no rows, only a header: nothing was filled." in log
