"""Template, rows and outputs in object storage, against a real S3-compatible server on
127.0.0.1 reached through Airflow's standard ``aws_default`` connection: the mail-merge DAG,
the zip and merged outputs, chunk manifests collected from the store (and a missing one
named), embedded conversions shared between workers, and a resumed conversion that is not
billed twice. Nothing may be written to a local path made from a URI."""

from __future__ import annotations

import csv
import io
import json
import os
import uuid
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowFailException
from pypdf import PdfReader

from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators import (
    BatchFillOperator,
    ConvertOperator,
    merge_manifests,
    plan_chunks,
)
from kits.s3server import S3Server, s3_server
from kits.servicekit import Server, start_server

INCLUDE = Path(__file__).resolve().parents[2] / "include"
FORM = INCLUDE / "sample_form.pdf"
ROWS = INCLUDE / "sample_rows.csv"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory):
    with s3_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture
def bucket(s3: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A new bucket, the standard connection pointing at the server, and a working
    directory in which a stray local ``s3:`` folder would be seen."""
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", s3.connection_env())
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))
    monkeypatch.chdir(tmp_path)
    name = s3.create_bucket(f"fillpdf-{uuid.uuid4().hex[:12]}")
    s3.put(name, "in/form.pdf", FORM.read_bytes())
    s3.put(name, "in/rows.csv", ROWS.read_bytes())
    return name


def no_local_uri_folders(*roots: Path) -> None:
    for root in roots:
        stray = [p for p in root.rglob("*") if p.name.startswith(("s3:", "s3_"))]
        assert stray == [], f"local paths made from a URI: {stray}"


def sample_rows() -> int:
    return len(csv_rows())


def csv_rows() -> list[dict[str, str]]:
    with ROWS.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_mail_merge_dag_with_everything_on_s3(
    dagbag, s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    conf = {
        "template": f"s3://{bucket}/in/form.pdf",
        "rows": f"s3://{bucket}/in/rows.csv",
        "output": f"s3://{bucket}/run",
        "chunks": 3,
        "min_rows_per_chunk": 1,
    }
    run = dagbag.get_dag("fillpdf_mail_merge").test(run_conf=conf)
    assert run.state == "success"
    keys = s3.keys(bucket, "run/")
    rows = sample_rows()
    assert sorted(k for k in keys if k.endswith(".pdf")) == sorted(
        f"run/{n}.pdf" for n in range(1, rows + 1)
    )
    assert {"run/manifest.parquet", "run/_quality/input.json", "run/_quality/manifest.json"} <= set(
        keys
    )
    assert len([k for k in keys if k.startswith("run/_manifests/chunk-")]) == 3
    manifest = pq.read_table(io.BytesIO(s3.get(bucket, "run/manifest.parquet"))).to_pylist()
    assert [r["row"] for r in manifest] == list(range(1, rows + 1))
    assert all(r["status"] == "ok" for r in manifest)
    first = PdfReader(io.BytesIO(s3.get(bucket, "run/1.pdf"))).get_fields() or {}
    assert first["full_name"]["/V"] == csv_rows()[0]["full_name"]
    for kind in ("input", "manifest"):
        report = json.loads(s3.get(bucket, f"run/_quality/{kind}.json"))
        assert report["success"] is True
    no_local_uri_folders(tmp_path, Path(os.environ["AIRFLOW_HOME"]), Path.cwd())


def test_a_missing_chunk_manifest_is_named_and_nothing_is_merged(s3: S3Server, bucket: str) -> None:
    output = f"s3://{bucket}/chunked"
    chunks = plan_chunks(f"s3://{bucket}/in/rows.csv", chunks=4)
    for chunk in chunks:
        BatchFillOperator(
            task_id="t", template=f"s3://{bucket}/in/form.pdf", rows=f"s3://{bucket}/in/rows.csv",
            output_dir=output, chunk=chunk,
        ).execute(context={})  # type: ignore[arg-type]  # fmt: skip
    gone = chunks[2]
    s3.delete(bucket, f"chunked/_manifests/chunk-{gone['first']:09d}.parquet")
    with pytest.raises(AirflowFailException) as raised:
        merge_manifests(output, chunks=chunks)
    message = str(raised.value)
    assert f"chunk 2 (rows {gone['first']}-{gone['stop'] - 1})" in message
    assert "1 of 4 chunks" in message
    assert "chunked/manifest.parquet" not in s3.keys(bucket, "chunked/")
    # without the plan, the merge takes what is there (the chunks' own manifests)
    summary = merge_manifests(output)
    assert summary["rows"] == sample_rows() - (gone["stop"] - gone["first"])


def test_zip_and_merged_outputs_on_s3(s3: S3Server, bucket: str, tmp_path: Path) -> None:
    for output_format in ("zip", "merged"):
        result = BatchFillOperator(
            task_id="t", template=f"s3://{bucket}/in/form.pdf", rows=f"s3://{bucket}/in/rows.csv",
            output_dir=f"s3://{bucket}/{output_format}", output_format=output_format,
        ).execute(context={})  # type: ignore[arg-type]  # fmt: skip
        assert result["ok"] == sample_rows()
        assert result["manifest"] == f"s3://{bucket}/{output_format}/manifest.parquet"
    keys = set(s3.keys(bucket))
    assert {"zip/filled.zip", "zip/manifest.parquet", "merged/merged.pdf"} <= keys
    assert not any(k.startswith(("zip/.", "merged/.")) for k in keys)  # no staging left
    archive = zipfile.ZipFile(io.BytesIO(s3.get(bucket, "zip/filled.zip")))
    assert sorted(archive.namelist()) == sorted(f"{n}.pdf" for n in range(1, sample_rows() + 1))
    merged = PdfReader(io.BytesIO(s3.get(bucket, "merged/merged.pdf")))
    assert len(merged.pages) == sample_rows()
    no_local_uri_folders(tmp_path)


def test_a_conversion_made_on_one_worker_fills_on_another(
    s3: S3Server, bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kits.flatkit import flat_form

    extra = {"mode": "embedded", "conversions_uri": f"s3://{bucket}/conversions"}
    monkeypatch.setenv("AIRFLOW_CONN_SHARED", json.dumps({"conn_type": "fillpdf", "extra": extra}))
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "worker-a"))
    made = FillPdfHook("shared").convert(flat_form())
    assert any(k.endswith(f"{made.conversion_id}.pdf") for k in s3.keys(bucket, "conversions/"))
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "worker-b"))  # another worker's disk
    other = FillPdfHook("shared")
    name = made.schema[0].name
    filled = other.fill(made.conversion_id, {name: "Ada"})
    assert (PdfReader(io.BytesIO(filled)).get_fields() or {})[name]["/V"] == "Ada"
    assert other.get_conversion(made.conversion_id).pdf == made.pdf
    assert not (tmp_path / "worker-a").exists() and not (tmp_path / "worker-b").exists()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("s3-service"))
    yield running
    running.stop()


def test_a_resumed_conversion_to_s3_is_not_billed_twice(
    s3: S3Server, bucket: str, service: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kits.flatkit import flat_form

    key = service.create_key("enterprise", pages_included=100, rate_limit_per_minute=100000)
    conn = {"conn_type": "fillpdf", "host": service.base_url, "password": key}
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))
    s3.put(bucket, "inbox/a.pdf", flat_form())
    options = {"task_id": "c", "pdfs": f"s3://{bucket}/inbox/*.pdf",
               "output_dir": f"s3://{bucket}/converted"}  # fmt: skip
    (first,) = ConvertOperator(**options).execute(context={})  # type: ignore[arg-type]
    used = FillPdfHook().get_account().pages_used
    assert used == first["pages"] > 0
    (again,) = ConvertOperator(**options).execute(context={})  # type: ignore[arg-type]
    assert again == first
    assert FillPdfHook().get_account().pages_used == used
    assert {"converted/a.fillable.pdf", "converted/a.schema.json"} <= set(s3.keys(bucket))


def test_a_store_that_refuses_uploads_fails_the_batch_and_publishes_no_manifest(
    s3: S3Server, bucket: str
) -> None:
    from fillpdf_provider.storage import UploadError

    with pytest.raises(UploadError, match="task can run again") as raised:
        BatchFillOperator(
            task_id="t", template=str(FORM), rows=str(ROWS),
            output_dir="s3://fillpdf-no-such-bucket/run",
        ).execute(context={})  # type: ignore[arg-type]  # fmt: skip
    # not 25 rows recorded as failed, nor rows recorded as filled whose files are not stored
    assert "25 files" in str(raised.value)
