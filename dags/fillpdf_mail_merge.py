"""Mail-merge: fill a form once per row of a table, spread over mapped tasks.

Runs as-is on the embedded engine with the sample form and rows in ``include/``:

    airflow dags test fillpdf_mail_merge -c '{"output": "/tmp/mail-merge"}'

The rows are checked against the form (Great Expectations) before anything is filled, and
the manifest after. Point ``template`` at your own fillable PDF (or a conversion id),
``rows`` at a CSV or Parquet file, and ``output`` at a folder or an object-storage URI.
With a ``fillpdf_default`` connection that names a host, the same DAG fills through the
FillPDF service.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import Asset, Param, dag, task

from fillpdf_provider.operators import BatchFillOperator, merge_manifests, plan_chunks
from fillpdf_provider.quality import QualityCheckOperator

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
        "check_input": Param(True, type="boolean",
                             description="Stop before filling if the rows can't fill the form"),
    },
    doc_md=__doc__,
)  # fmt: skip
def fillpdf_mail_merge() -> None:
    @task
    def check_input(params: dict | None = None) -> dict:
        """Every column the form needs, every value it can take: before any PDF is written."""
        from fillpdf_provider.hooks.fillpdf import FillPdfHook
        from fillpdf_provider.operators.forms import open_form
        from fillpdf_provider.operators.storage import readable
        from fillpdf_provider.quality import enforce, input_rows_check, results_location

        assert params is not None
        if not params["check_input"]:
            return {"checked": False}
        fields = open_form(FillPdfHook(), params["template"]).fields
        with readable(params["rows"]) as rows:
            report = input_rows_check(rows, fields)
        enforce(report, save_to=results_location(params["output"], "input"))
        return report.brief()

    @task
    def plan(params: dict | None = None) -> list[dict[str, int]]:
        assert params is not None
        return plan_chunks(params["rows"], chunks=int(params["chunks"]))

    checked = check_input()
    chunks = plan()
    checked >> chunks
    fill = BatchFillOperator.partial(
        task_id="fill_chunk",
        template="{{ params.template }}",
        rows="{{ params.rows }}",
        output_dir="{{ params.output }}",
        name_template="{{ params.name_template }}",
        require=True,  # rows without the form's required fields are reported, not filled
    ).expand(chunk=chunks)

    @task(outlets=[OUTPUT_ASSET])
    def collect(params: dict | None = None, outlet_events=None) -> dict:
        assert params is not None
        summary = merge_manifests(params["output"])
        if outlet_events is not None:
            outlet_events[OUTPUT_ASSET].extra = {"output": params["output"], **summary}
        return summary

    check_output = QualityCheckOperator(
        task_id="check_manifest",
        kind="manifest",
        template="{{ params.template }}",
        rows="{{ params.rows }}",
        output_dir="{{ params.output }}",
    )
    fill >> collect() >> check_output


fillpdf_mail_merge()
