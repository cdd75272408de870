"""Convert every flat PDF in an inbox into a fillable PDF with its field schema beside it.

Runs as-is on the embedded engine with the sample flat forms in ``include/inbox``:

    airflow dags test fillpdf_convert_inbox -c '{"output": "/tmp/converted"}'

For each ``NAME.pdf`` the run writes ``NAME.fillable.pdf`` and ``NAME.schema.json`` (the
fields found, for review; fill the fillable PDF, or the conversion id in the schema JSON,
with the mail-merge DAG). A file converted before, the same way, is not converted again.

With a ``fillpdf_default`` connection that names a host, the files go to that FillPDF
service. Before uploading anything the run counts the pages it will bill and checks the
account; what happens when they don't fit is ``on_quota``. Without that connection the
engine runs in the worker, with no quota.

Params (the trigger form checks each; ``check_params`` refuses a conf key that is none):

- ``inbox``: the flat PDFs: a path, a glob (``/data/inbox/*.pdf``) or a URI
  (``s3://bucket/inbox/*.pdf``). A glob that matches nothing, or a file that is not a PDF,
  fails the run, named.
- ``output``: the folder or URI for the fillable PDFs and their schemas.
- ``detect``: ``fields`` (the rules and the trained scorer) or ``fields_fast`` (the rules
  alone: about three times faster, and finds fewer fields; see docs/detector.md).
- ``on_quota``: ``defer`` (default) waits in the triggerer until the pages fit (on a plan
  that stops at its quota, the next period), polling every ``poll_interval`` seconds;
  ``skip`` skips the task; ``fail`` fails it with the numbers; ``allow_overage`` converts
  and pays the overage on plans that have one, up to ``max_overage_pages`` and
  ``max_overage_usd`` (past a cap it fails before uploading anything).
- ``max_overage_pages``, ``max_overage_usd``: those caps (empty: no cap).
- ``poll_interval``: seconds between account checks while deferred.
"""

from __future__ import annotations

import os
from difflib import get_close_matches
from pathlib import Path

from airflow.sdk import Param, dag, task

from fillpdf_provider.operators import ConvertOperator

INCLUDE = Path(__file__).resolve().parents[1] / "include"
DEFAULT_OUTPUT = Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow")) / "fillpdf-output"


# The trigger form: each param with a title, a description and what it accepts.
PARAMS = {
    "inbox": Param(
        str(INCLUDE / "inbox" / "*.pdf"), type="string", minLength=1, title="Inbox",
        description="The flat PDFs: a path, a glob such as /data/inbox/*.pdf, or a URI "
                    "such as s3://bucket/inbox/*.pdf",
    ),
    "output": Param(
        str(DEFAULT_OUTPUT / "converted"), type="string", minLength=1, title="Output",
        description="Folder or URI for NAME.fillable.pdf and NAME.schema.json",
    ),
    "detect": Param(
        "fields", type="string", enum=["fields", "fields_fast"], title="Detection",
        description="fields: the rules and the trained scorer; fields_fast: the rules "
                    "alone, about three times faster, and finds fewer fields",
        values_display={"fields": "Rules and scorer (fields)",
                        "fields_fast": "Rules only, faster (fields_fast)"},
    ),
    "on_quota": Param(
        "defer", type="string", enum=["defer", "skip", "fail", "allow_overage"],
        title="When the pages don't fit the quota",
        description="defer waits until they fit; skip skips the task; fail fails it; "
                    "allow_overage pays the overage, up to the caps below (api mode only)",
        values_display={"defer": "Wait until they fit (defer)", "skip": "Skip (skip)",
                        "fail": "Fail (fail)",
                        "allow_overage": "Convert and pay overage (allow_overage)"},
    ),
    "max_overage_pages": Param(
        None, type=["null", "integer"], minimum=0, title="Overage cap (pages)",
        description="With allow_overage, the most pages billed past the quota; empty: "
                    "no cap",
    ),
    "max_overage_usd": Param(
        None, type=["null", "number"], minimum=0, title="Overage cap (USD)",
        description="With allow_overage, the most overage cost in USD; empty: no cap",
    ),
    "poll_interval": Param(
        300, type="number", minimum=1, title="Quota check interval (seconds)",
        description="Seconds between account checks while waiting for quota (defer)",
    ),
}  # fmt: skip


@dag(
    dag_id="fillpdf_convert_inbox",
    schedule=None,
    catchup=False,
    tags=["fillpdf", "example"],
    params=PARAMS,
    render_template_as_native_obj=True,
    doc_md=__doc__,
)  # fmt: skip
def fillpdf_convert_inbox() -> None:
    @task
    def check_params(dag_run=None) -> None:
        """A conf key that is no param (a typo) would leave its param at the default: the
        run would convert the sample inbox, or write where nobody looks."""
        from airflow.sdk.exceptions import AirflowFailException

        for key in sorted(set(getattr(dag_run, "conf", None) or {}) - set(PARAMS)):
            close = get_close_matches(key, list(PARAMS), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise AirflowFailException(
                f"{key!r} is not a param of fillpdf_convert_inbox; {hint}Its params: "
                f"{', '.join(PARAMS)}."
            )

    check_params() >> ConvertOperator(
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
