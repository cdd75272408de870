"""The mail-merge scaled out as a user runs it: Airflow's CeleryExecutor with Redis and
PostgreSQL, a scheduler and two workers that share no local disk (started from
docker-compose.yaml's commands and environment), everything in an S3-compatible store.

2,000 rows in 8 chunks: every PDF lands in the bucket and both workers fill chunks. A chunk
manifest removed before the merge fails the run, naming the chunk. A conversion made on one
worker is filled on the other.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pypdf import PdfReader

from kits.celerykit import WORKERS, celery_stack, missing_parts
from kits.s3server import S3Server, s3_server

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "include"
BUCKET = "fillpdf"  # docker-compose.yaml's bucket
ROWS = 2000
CHUNKS = 8

# Converted on worker 1, filled on worker 2, through a conversions store they share.
SHARED_CONVERSION_DAG = """
from airflow.sdk import dag

from fillpdf_provider.operators import ConvertOperator, FillOperator


@dag(dag_id="fillpdf_shared_conversion", schedule=None, catchup=False)
def fillpdf_shared_conversion():
    convert = ConvertOperator(
        task_id="convert", pdfs="s3://fillpdf/inbox/flat.pdf",
        output_dir="s3://fillpdf/converted", queue="airflow-worker-1",
    )
    FillOperator(
        task_id="fill", queue="airflow-worker-2",
        template="{{ ti.xcom_pull(task_ids='convert')[0]['conversion_id'] }}",
        values={"full_name": "Ada Lovelace"}, output_path="s3://fillpdf/shared/ada.pdf",
    ).set_upstream(convert)


fillpdf_shared_conversion()
"""


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory):
    with s3_server(tmp_path_factory.mktemp("moto")) as server:
        server.create_bucket(BUCKET)
        yield server


@pytest.fixture(scope="module")
def stack(s3: S3Server, tmp_path_factory: pytest.TempPathFactory):
    why = missing_parts()
    if why:
        if os.environ.get("FILLPDF_REQUIRE_SYSTEM") == "1":
            pytest.fail(f"the Celery stack can't start: {why}")
        pytest.skip(why)
    dags = tmp_path_factory.mktemp("dags")
    shutil.copy(ROOT / "dags" / "fillpdf_mail_merge.py", dags)
    (dags / "fillpdf_shared_conversion.py").write_text(SHARED_CONVERSION_DAG)
    shared = {"conn_type": "fillpdf", "extra": {
        "mode": "embedded", "conversions_uri": f"s3://{BUCKET}/conversions"}}  # fmt: skip
    extra = {
        "AIRFLOW_CONN_AWS_DEFAULT": s3.connection_env(),
        "AIRFLOW_CONN_FILLPDF_DEFAULT": json.dumps(shared),
    }
    with celery_stack(tmp_path_factory.mktemp("stack"), dags, extra) as running:
        yield running


def rows_table() -> pa.Table:
    """The sample rows over and over, each with its own name."""
    with (INCLUDE / "sample_rows.csv").open(newline="", encoding="utf-8") as handle:
        sample = list(csv.DictReader(handle))
    rows = [{**sample[i % len(sample)], "full_name": f"Person {i + 1}"} for i in range(ROWS)]
    return pa.Table.from_pylist(rows)


def test_mail_merge_on_two_workers_to_s3_then_a_missing_chunk_fails_the_merge(
    stack, s3: S3Server
) -> None:
    buffer = io.BytesIO()
    pq.write_table(rows_table(), buffer)
    s3.put(BUCKET, "in/rows.parquet", buffer.getvalue())
    s3.put(BUCKET, "in/form.pdf", (INCLUDE / "sample_form.pdf").read_bytes())
    conf = {
        "template": f"s3://{BUCKET}/in/form.pdf",
        "rows": f"s3://{BUCKET}/in/rows.parquet",
        "output": f"s3://{BUCKET}/run",
        "chunks": CHUNKS,
        "min_rows_per_chunk": 1,
    }
    run_id = stack.trigger("fillpdf_mail_merge", conf, "scale-out-1")
    state = stack.wait("fillpdf_mail_merge", run_id, timeout=900)
    assert state == "success", stack.tails()

    keys = s3.keys(BUCKET, "run/")
    pdfs = [k for k in keys if k.endswith(".pdf")]
    assert sorted(pdfs) == sorted(f"run/{n}.pdf" for n in range(1, ROWS + 1))
    manifest = pq.read_table(io.BytesIO(s3.get(BUCKET, "run/manifest.parquet"))).to_pylist()
    assert [r["row"] for r in manifest] == list(range(1, ROWS + 1))
    assert all(r["status"] == "ok" for r in manifest)
    assert {"run/_quality/input.json", "run/_quality/manifest.json"} <= set(keys)
    last = PdfReader(io.BytesIO(s3.get(BUCKET, f"run/{ROWS}.pdf"))).get_fields() or {}
    assert last["full_name"]["/V"] == f"Person {ROWS}"

    fills = [ti for ti in stack.task_instances("fillpdf_mail_merge", run_id)
             if ti["task_id"] == "fill_chunk"]  # fmt: skip
    assert len(fills) == CHUNKS and all(ti["state"] == "success" for ti in fills)
    assert {ti["hostname"] for ti in fills} == set(WORKERS)  # both workers filled chunks
    for home in stack.worker_homes():  # the PDFs went to the store, not to a worker's disk
        assert not [p for p in home.rglob("*.pdf") if "dags" not in p.parts]

    # A chunk's manifest is gone before the merge: the run fails and names the chunk.
    gone = 3
    first = gone * (ROWS // CHUNKS) + 1  # the plan: 8 chunks of 250 rows
    s3.delete(BUCKET, f"run/_manifests/chunk-{first:09d}.parquet")
    s3.delete(BUCKET, "run/manifest.parquet")
    stack.clear("fillpdf_mail_merge", run_id, ["collect"])
    assert stack.wait_for_task("fillpdf_mail_merge", run_id, "collect", "success") == "failed"
    assert stack.wait("fillpdf_mail_merge", run_id) == "failed"
    # The worker reports the state and writes the log apart: wait for the line
    named = f"chunk {gone} (rows {first}-{first + ROWS // CHUNKS - 1})"
    deadline = time.monotonic() + 60
    while named not in (log := stack.task_logs("fillpdf_mail_merge", run_id, "collect")):
        assert time.monotonic() < deadline, log[-3000:]
        time.sleep(0.2)
    assert "run/manifest.parquet" not in s3.keys(BUCKET, "run/")


def test_a_conversion_made_on_one_worker_is_filled_on_the_other(stack, s3: S3Server) -> None:
    from kits.flatkit import flat_form

    s3.put(BUCKET, "inbox/flat.pdf", flat_form())
    run_id = stack.trigger("fillpdf_shared_conversion", {}, "shared-1")
    assert stack.wait("fillpdf_shared_conversion", run_id) == "success", stack.tails()
    where = {ti["task_id"]: ti["hostname"]
             for ti in stack.task_instances("fillpdf_shared_conversion", run_id)}  # fmt: skip
    assert where == {"convert": "airflow-worker-1", "fill": "airflow-worker-2"}
    fields = PdfReader(io.BytesIO(s3.get(BUCKET, "shared/ada.pdf"))).get_fields() or {}
    assert fields["full_name"]["/V"] == "Ada Lovelace"
    assert any(k.startswith("conversions/conv_") for k in s3.keys(BUCKET))
