"""Mail-merge: fill a form once per row of a table, spread over mapped tasks.

Runs as-is on the embedded engine with the sample form and rows in ``include/``:

    airflow dags test fillpdf_mail_merge -c '{"output": "/tmp/mail-merge"}'

The params are checked (the name template against the rows' columns, the failure limit)
and the rows against the form (Great Expectations) before anything is filled, and the
manifest after. Point ``template`` at your own fillable PDF (or a conversion id), ``rows`` at
a CSV or Parquet file, and ``output`` at a folder or an object-storage URI (``s3://bucket/run``
through the ``aws_default`` connection, or the one named in ``storage_conn_id``); each may
live in object storage, so workers on separate hosts share nothing on local disk. With a
``fillpdf_default`` connection that names a host, the form comes from the FillPDF service.

The run fails when more rows fail than ``max_failed_rows`` allows (a count, or a fraction
of the rows; default 0), after the manifest of every row's outcome is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import Asset, Param, dag, task

from fillpdf_provider.operators import BatchFillOperator, merge_manifests, plan_chunks
from fillpdf_provider.quality import QualityCheckOperator

INCLUDE = Path(__file__).resolve().parents[1] / "include"
# Where a run writes when no output is given: $FILLPDF_MAIL_MERGE_OUTPUT (a folder or a URI,
# e.g. s3://fillpdf/mail-merge for workers on separate hosts), else a folder in AIRFLOW_HOME.
DEFAULT_OUTPUT = os.environ.get("FILLPDF_MAIL_MERGE_OUTPUT") or str(
    Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow")) / "fillpdf-output" / "mail-merge"
)
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
        "output": Param(DEFAULT_OUTPUT, type="string",
                        description="Folder or URI for the PDFs and manifest.parquet"),
        "name_template": Param("{row}.pdf", type="string",
                               description="Output names: {row} and column names, e.g. "
                                           "{row}-{last_name}.pdf"),
        "chunks": Param(4, type="integer", minimum=1, description="Mapped tasks to spread over"),
        "max_failed_rows": Param(0, type="number", minimum=0,
                                 description="Failed rows the run tolerates: a count, or a "
                                             "fraction of the rows below 1"),
        "storage_conn_id": Param("", type="string",
                                 description="Connection for URIs that name none (empty: the "
                                             "scheme's default, e.g. aws_default)"),
        "check_input": Param(True, type="boolean",
                             description="Stop before filling if the rows can't fill the form"),
    },
    doc_md=__doc__,
)  # fmt: skip
def fillpdf_mail_merge() -> None:
    @task
    def check_input(params: dict | None = None) -> dict:
        """The params, every column the form needs, every value it can take: before any PDF
        is written or any page billed."""
        from fillpdf_provider.hooks.fillpdf import FillPdfHook
        from fillpdf_provider.operators import check_batch_params
        from fillpdf_provider.operators.forms import open_form
        from fillpdf_provider.quality import enforce, input_rows_check, results_location
        from fillpdf_provider.storage import readable

        assert params is not None
        conn_id = params["storage_conn_id"] or None
        check_batch_params(params["rows"], name_template=params["name_template"],
                           max_failed_rows=params["max_failed_rows"], conn_id=conn_id)
        if not params["check_input"]:
            return {"checked": False}
        fields = open_form(FillPdfHook(), params["template"], conn_id=conn_id).fields
        with readable(params["rows"], conn_id) as rows:
            report = input_rows_check(rows, fields)
        report.source = params["rows"]
        enforce(report, save_to=results_location(params["output"], "input"), conn_id=conn_id)
        return report.brief()

    @task
    def plan(params: dict | None = None) -> list[dict[str, int]]:
        assert params is not None
        return plan_chunks(params["rows"], chunks=int(params["chunks"]),
                           conn_id=params["storage_conn_id"] or None)

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
        storage_conn_id="{{ params.storage_conn_id }}",
    ).expand(chunk=chunks)

    @task(outlets=[OUTPUT_ASSET])
    def collect(
        chunks: list[dict[str, int]], params: dict | None = None, outlet_events=None
    ) -> dict:
        """Every chunk's manifest, from the store; the run's verdict on failed rows."""
        assert params is not None
        summary = merge_manifests(params["output"], chunks=chunks,
                                  max_failed_rows=params["max_failed_rows"],
                                  conn_id=params["storage_conn_id"] or None)
        if outlet_events is not None:
            outlet_events[OUTPUT_ASSET].extra = {"output": params["output"], **summary}
        return summary

    check_output = QualityCheckOperator(
        task_id="check_manifest",
        kind="manifest",
        template="{{ params.template }}",
        rows="{{ params.rows }}",
        output_dir="{{ params.output }}",
        storage_conn_id="{{ params.storage_conn_id }}",
    )
    fill >> collect(chunks) >> check_output


fillpdf_mail_merge()
