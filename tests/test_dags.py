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
from servicekit import Server, start_server

INCLUDE = Path(__file__).resolve().parents[1] / "include"
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
    conf = {"output": str(out), "chunks": 3, "check_input": True, "rows": str(SAMPLE_ROWS)}
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
        assert record["path"].startswith(f"{record['row']}-")
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
        conf = {"output": str(out), "chunks": 2, "check_input": True, "rows": str(SAMPLE_ROWS)}
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


def test_bad_rows_are_reported_per_row_and_the_rest_complete(
    dagbag, mode: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    conf = {
        "output": str(out),
        "rows": str(bad_rows_file(tmp_path)),
        "chunks": 2,
        "check_input": False,
    }
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == "success"
    records = {r["row"]: r for r in manifest_rows(out)}
    assert [row for row, r in records.items() if r["status"] == "ok"] == [1, 3, 6]
    assert "newsletter" in records[2]["error"] and "maybe" in records[2]["error"]
    assert "plan" in records[4]["error"] and "Gold" in records[4]["error"]
    assert "email" in records[5]["error"] and "requires" in records[5]["error"]
    assert len(list(out.glob("*.pdf"))) == 3


def test_missing_column_is_reported_on_every_row(dagbag, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    rows = [{k: v for k, v in r.items() if k != "email"} for r in csv_rows(SAMPLE_ROWS)[:4]]
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    out = tmp_path / "out"
    conf = {"output": str(out), "rows": str(path), "chunks": 1, "check_input": False}
    dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    records = manifest_rows(out)
    assert [r["status"] for r in records] == ["error"] * 4
    assert all("no column fills it" in r["error"] for r in records)


@pytest.mark.parametrize(
    ("change", "column", "rows"),
    [
        (lambda rows: [{k: v for k, v in r.items() if k != "plan"} for r in rows], "plan", []),
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
        run_conf={"output": str(out), "rows": str(path), "check_input": True, "chunks": 2}
    )
    assert run.state == "failed"
    check = run.get_task_instance("check_input")
    assert check is not None and check.state == "failed"
    report = json.loads((out / "_quality" / "input.json").read_text())
    failures = [f for f in report["failures"] if f["column"] == column]
    assert failures and failures[0]["sample_rows"] == rows, report["failures"]
    assert not list(out.glob("*.pdf")) and not (out / "manifest.parquet").exists()
