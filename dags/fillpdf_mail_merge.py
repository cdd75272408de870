"""Mail-merge: fill a form once per row of a table, spread over mapped tasks.

Runs as-is on the embedded engine with the sample form and rows in ``include/``:

    airflow dags test fillpdf_mail_merge -c '{"output": "/tmp/mail-merge"}'

Point ``template`` at your own fillable PDF (or a conversion id), ``rows`` at a CSV or
Parquet file, and ``output`` at a folder or an object-storage URI. With a ``fillpdf_default``
connection that names a host, the same DAG fills through the FillPDF service.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import Asset, Param, dag, task

from fillpdf_provider.operators import BatchFillOperator, merge_manifests, plan_chunks

INCLUDE = Path(__file__).resolve().parents[1] / "include"
DEFAULT_OUTPUT = Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow")) / "fillpdf-output"
OUTPUT_ASSET = Asset(name="fillpdf_mail_merge_output", uri="fillpdf://mail-merge/output")


@dag(
    dag_id="fillpdf_mail_merge",
    schedule=None,
    catchup=False,
    tags=["fillpdf", "example"],
    params={
        "template": Param(str(INCLUDE / "sample_form.pdf"), type="string",
                          description="Fillable PDF (path or URI) or a conversion id"),
        "rows": Param(str(INCLUDE / "sample_rows.csv"), type="string",
                      description="CSV or Parquet rows, one PDF each"),
        "output": Param(str(DEFAULT_OUTPUT / "mail-merge"), type="string",
                        description="Folder or URI for the PDFs and manifest.parquet"),
        "name_template": Param("{row}-{full_name}.pdf", type="string"),
        "chunks": Param(4, type="integer", minimum=1, description="Mapped tasks to spread over"),
    },
    doc_md=__doc__,
)  # fmt: skip
def fillpdf_mail_merge() -> None:
    @task
    def plan(params: dict | None = None) -> list[dict[str, int]]:
        assert params is not None
        return plan_chunks(params["rows"], chunks=int(params["chunks"]))

    fill = BatchFillOperator.partial(
        task_id="fill_chunk",
        template="{{ params.template }}",
        rows="{{ params.rows }}",
        output_dir="{{ params.output }}",
        name_template="{{ params.name_template }}",
        require=True,  # rows without the form's required fields are reported, not filled
    ).expand(chunk=plan())

    @task(outlets=[OUTPUT_ASSET])
    def collect(params: dict | None = None, outlet_events=None) -> dict:
        assert params is not None
        summary = merge_manifests(params["output"])
        if outlet_events is not None:
            outlet_events[OUTPUT_ASSET].extra = {"output": params["output"], **summary}
        return summary

    fill >> collect()


fillpdf_mail_merge()
