"""Convert every flat PDF in an inbox into a fillable PDF with its field schema beside it.

Before uploading anything to a FillPDF service, the run counts the pages it will bill and
checks the account: by default it defers (waits in the triggerer) until they fit, so a free
plan never gets a 402 and a paid plan never pays overage it did not allow.

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
        "on_quota": Param("defer", enum=["defer", "skip", "fail", "allow_overage"],
                          description="When the pages don't fit in the plan's quota"),
        "max_overage_pages": Param(None, type=["null", "integer"], minimum=0),
        "max_overage_usd": Param(None, type=["null", "number"], minimum=0),
        "poll_interval": Param(300, type="number", minimum=1,
                               description="Seconds between quota checks while deferred"),
    },
    render_template_as_native_obj=True,
    doc_md=__doc__,
)  # fmt: skip
def fillpdf_convert_inbox() -> None:
    ConvertOperator(
        task_id="convert",
        pdfs="{{ params.inbox }}",
        output_dir="{{ params.output }}",
        detect="{{ params.detect }}",
        on_quota="{{ params.on_quota }}",
        max_overage_pages="{{ params.max_overage_pages }}",
        max_overage_usd="{{ params.max_overage_usd }}",
        poll_interval="{{ params.poll_interval }}",
    )


fillpdf_convert_inbox()
