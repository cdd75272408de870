"""The mail-merge DAG on a user's own table: a column for half the form's fields, one column
mapped by the ``mapping`` param and one used only in the file names, the input check on:
every row filled, the mapped values in place. A column that looks like a field no column
fills stops the run in the input check, before any PDF, naming the mapping that fixes it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pypdf import PdfReader

INCLUDE = Path(__file__).resolve().parents[2] / "include"
#: Half of the sample form's 14 fields, by name or (email) through the mapping.
KEPT = ["full_name", "email", "phone", "city", "zip", "plan", "newsletter"]


def users_table(path: Path, rows: int = 6) -> list[dict[str, str]]:
    """The sample rows as a user's own table: their e-mail column has its own name, and a
    reference of theirs names the files."""
    with (INCLUDE / "sample_rows.csv").open(encoding="utf-8", newline="") as handle:
        sample = list(csv.DictReader(handle))[:rows]
    table = [
        {
            **{k: r[k] for k in KEPT if k != "email"},
            "Work e-mail": r["email"],
            "customer_ref": f"C-{i:03d}",
        }
        for i, r in enumerate(sample, 1)
    ]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    return table


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)


def test_a_users_table_fills_every_row_with_the_mapped_values_in_place(
    dagbag, tmp_path: Path
) -> None:
    table = users_table(tmp_path / "rows.csv")
    out = tmp_path / "out"
    conf = {
        "rows": str(tmp_path / "rows.csv"),
        "output": str(out),
        "mapping": {"Work e-mail": "email"},
        "name_template": "{customer_ref}.pdf",
        "check_input": True,
        "strict_columns": True,  # every column fills a field or names the files
        "chunks": 2,
        "min_rows_per_chunk": 1,
    }
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == "success"
    check = json.loads((out / "_quality" / "input.json").read_text())
    assert check["success"] and check["failures"] == []
    manifest = pq.read_table(out / "manifest.parquet").to_pylist()
    assert [r["status"] for r in manifest] == ["ok"] * len(table)
    for row in table:
        fields = PdfReader(out / f"{row['customer_ref']}.pdf").get_fields() or {}
        assert fields["email"]["/V"] == row["Work e-mail"]  # the mapped column
        assert fields["full_name"]["/V"] == row["full_name"]
        assert fields["city"]["/V"] == row["city"]
        assert fields["notes"].get("/V") in (None, "")  # no column: left empty


def test_a_near_name_stops_the_run_before_any_pdf_naming_the_mapping(
    dagbag, tmp_path: Path
) -> None:
    users_table(tmp_path / "rows.csv")
    path = tmp_path / "rows.csv"
    text = path.read_text(encoding="utf-8").replace("Work e-mail", "emial", 1)
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    conf = {"rows": str(path), "output": str(out), "name_template": "{customer_ref}.pdf"}
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == "failed"
    check = run.get_task_instance("check_input")
    assert check is not None and check.state == "failed"
    report = json.loads((out / "_quality" / "input.json").read_text())
    (failure,) = report["failures"]  # the form requires email: its column is missing
    assert failure["column"] == "email" and "did you mean 'emial'?" in failure["message"]
    assert "mapping={'emial': 'email'}" in failure["fix"]
    assert not list(out.glob("*.pdf"))


def test_an_unknown_mapping_param_field_is_refused_before_filling(dagbag, tmp_path: Path) -> None:
    users_table(tmp_path / "rows.csv")
    out = tmp_path / "out"
    conf = {"rows": str(tmp_path / "rows.csv"), "output": str(out),
            "mapping": {"Work e-mail": "emial"}}  # fmt: skip
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == "failed"
    check = run.get_task_instance("check_input")
    assert check is not None and check.state == "failed"
    assert not list(out.glob("*.pdf"))
