"""Convert every flat PDF in an inbox into a fillable PDF with its field schema beside it.

Runs as-is on the embedded engine with the sample flat forms in ``include/inbox``:

    airflow dags test fillpdf_convert_inbox -c '{"output": "/tmp/converted"}'
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import Param, dag

from fillpdf_provider.operators import ConvertOperator

INCLUDE = Path(__file__).resolve().parents[1] / "include"
DEFAULT_OUTPUT = Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow")) / "fillpdf-output"


@dag(
    dag_id="fillpdf_convert_inbox",
    schedule=None,
    catchup=False,
    tags=["fillpdf", "example"],
    params={
        "inbox": Param(str(INCLUDE / "inbox" / "*.pdf"), type="string",
                       description="Path, glob or URI of flat PDFs"),
        "output": Param(str(DEFAULT_OUTPUT / "converted"), type="string",
                        description="Folder or URI for the fillable PDFs and schemas"),
        "detect": Param("fields", enum=["fields", "fields_fast"]),
    },
    doc_md=__doc__,
)  # fmt: skip
def fillpdf_convert_inbox() -> None:
    ConvertOperator(
        task_id="convert",
        pdfs="{{ params.inbox }}",
        output_dir="{{ params.output }}",
        detect="{{ params.detect }}",
    )


fillpdf_convert_inbox()
