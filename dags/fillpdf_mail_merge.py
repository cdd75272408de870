"""Mail-merge: fill a form once per row of a table, spread over mapped tasks.

Runs as-is on the embedded engine with the sample form and rows in ``include/``:

    airflow dags test fillpdf_mail_merge -c '{"output": "/tmp/mail-merge"}'

``check_input`` runs first and stops the run before any PDF is written: a conf key that is
no param, a ``rows`` or ``template`` that can't be read, a ``name_template`` naming a column
the rows lack, and (with ``check_input`` on) rows that can't fill the form, checked with
Great Expectations. The manifest of every row's outcome is checked after the fill.

Params (the trigger form checks each):

- ``template``: your fillable PDF (a path or a URI), or the conversion id (``conv_...``) of
  a form converted by ``fillpdf_convert_inbox``. Only a conversion id is fetched from the
  FillPDF service, when a ``fillpdf_default`` connection names a host; the rows are filled
  on the worker either way, by the engine the service runs.
- ``rows``: a CSV or Parquet file, one PDF per row. A column fills the field of its name
  (also matched with case, spaces and punctuation set aside), or the field ``mapping``
  names; fields no column fills stay empty.
- ``mapping``: ``{"column": "field"}`` for columns whose names don't say which field they
  fill; ``{"column": ""}`` leaves a column out. A column that matches no field but looks like
  a field no column fills stops the run before any PDF is written, naming the mapping that
  fixes it; any other column that fills nothing is logged once as not used.
- ``strict_columns``: every column that fills nothing stops the run instead.
- ``output``: a folder or an object-storage URI (``s3://bucket/run`` through the
  ``aws_default`` connection, or the one named in ``storage_conn_id``) for the PDFs and
  ``manifest.parquet``. Each of these may live in object storage, so workers on separate
  hosts share nothing on local disk.
- ``name_template``: the PDFs' names, from ``{row}`` (the row's number) and column names.
- ``chunks``: how many mapped tasks share the rows, at most.
- ``min_rows_per_chunk``: the fewest rows a mapped task is given (default 10,000): a task
  takes seconds to start, and a chunk this large has its files written by a process of
  its own, as ``fillpdf batch`` does; a table of fewer rows is filled by one task.
- ``max_failed_rows``: failed rows the run tolerates, a whole count or a fraction of the
  rows below 1 (default 0). The input check tolerates as many rows with values the form
  can't take (a missing column fails every row: never), and its summary names the
  tolerance; the run fails when more rows fail, after the manifest is written.
- ``storage_conn_id``: the connection for URIs that name none (empty: the scheme's default).
- ``check_input``: check the rows against the form before filling.
"""

from __future__ import annotations

import os
from difflib import get_close_matches
from pathlib import Path

from airflow.sdk import Asset, Context, Param, dag, task

from fillpdf_provider.operators import BatchFillOperator, MergeManifestsOperator, plan_chunks
from fillpdf_provider.quality import QualityCheckOperator

INCLUDE = Path(__file__).resolve().parents[1] / "include"
# Where a run writes when no output is given: $FILLPDF_MAIL_MERGE_OUTPUT (a folder or a URI,
# e.g. s3://fillpdf/mail-merge for workers on separate hosts), else a folder in AIRFLOW_HOME.
DEFAULT_OUTPUT = os.environ.get("FILLPDF_MAIL_MERGE_OUTPUT") or str(
    Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow")) / "fillpdf-output" / "mail-merge"
)
OUTPUT_ASSET = Asset(name="fillpdf_mail_merge_output", uri="fillpdf://mail-merge/output")


# The trigger form: each param with a title, a description and what it accepts.
PARAMS = {
    "template": Param(
        str(INCLUDE / "sample_form.pdf"), type="string", minLength=1, title="Template",
        description="The fillable PDF (a path or URI), or a conversion id (conv_...) "
                    "from fillpdf_convert_inbox",
    ),
    "rows": Param(
        str(INCLUDE / "sample_rows.csv"), type="string", minLength=1, title="Rows",
        description="A CSV or Parquet file (path or URI), one PDF per row; columns fill "
                    "the fields of the same name",
    ),
    "mapping": Param(
        # None, not {}: a dict default is one object, which a run's conf could change
        None, type=["null", "object"], additionalProperties={"type": "string"},
        title="Column mapping",
        description='{"column": "field"} for columns whose names are not the fields\'; '
                    '{"column": ""} leaves a column out',
    ),
    "strict_columns": Param(
        False, type="boolean", title="Strict columns",
        description="Stop the run if any column fills no field (default: listed as not used)",
    ),
    "output": Param(
        DEFAULT_OUTPUT, type="string", minLength=1, title="Output",
        description="Folder or URI for the PDFs and manifest.parquet",
    ),
    "name_template": Param(
        "{row}.pdf", type="string", minLength=1, title="File names",
        description="{row} (the row's number) and column names, e.g. "
                    "{row}-{last_name}.pdf",
    ),
    "chunks": Param(
        4, type="integer", minimum=1, title="Mapped tasks",
        description="How many mapped tasks share the rows, at most (each takes at least "
                    "min_rows_per_chunk rows)",
    ),
    "min_rows_per_chunk": Param(
        10_000, type="integer", minimum=1, title="Fewest rows a mapped task",
        description="A table with fewer rows than chunks x this uses fewer mapped tasks "
                    "(one below this many rows): each takes seconds to start",
    ),
    "max_failed_rows": Param(
        0, type="number", minimum=0, title="Failed rows tolerated",
        description="A whole count (e.g. 10), or a fraction of the rows below 1 (e.g. "
                    "0.01); more failed rows fail the run",
        anyOf=[{"title": "a whole count of rows", "type": "integer"},
               {"title": "a fraction of the rows below 1", "exclusiveMaximum": 1}],
    ),
    "storage_conn_id": Param(
        "", type="string", title="Storage connection",
        description="Connection for URIs that name none (empty: the scheme's default, "
                    "e.g. aws_default for s3://)",
    ),
    "check_input": Param(
        True, type="boolean", title="Check the rows first",
        description="Check the rows against the form (Great Expectations) and stop "
                    "before filling if more rows than max_failed_rows allows can't fill it",
    ),
}  # fmt: skip


def check_params(context: Context) -> None:
    """Before the input check: no conf key that is no param, and rows, a name template
    and a ``max_failed_rows`` that a fill can use; each refusal names the fix."""
    from airflow.sdk.exceptions import AirflowFailException

    from fillpdf_provider.operators import check_batch_params

    params, dag_run = context["params"], context.get("dag_run")
    for key in sorted(set(getattr(dag_run, "conf", None) or {}) - set(PARAMS)):
        close = get_close_matches(key, list(PARAMS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise AirflowFailException(
            f"{key!r} is not a param of fillpdf_mail_merge; {hint}Its params: {', '.join(PARAMS)}."
        )
    try:
        check_batch_params(
            params["rows"],
            name_template=params["name_template"],
            max_failed_rows=params["max_failed_rows"],
            conn_id=params["storage_conn_id"] or None,
        )
    except FileNotFoundError:
        raise AirflowFailException(
            f"param rows: {params['rows']!r} does not exist; give the path or URI of a "
            "CSV or Parquet file, one row per PDF."
        ) from None
    except ValueError as exc:  # the rows' format, or the name template
        raise AirflowFailException(
            f"{exc} (params rows={params['rows']!r}, name_template={params['name_template']!r})"
        ) from None


@dag(
    dag_id="fillpdf_mail_merge",
    schedule=None,
    catchup=False,
    tags=["fillpdf", "example"],
    params=PARAMS,
    doc_md=__doc__,
)  # fmt: skip
def fillpdf_mail_merge() -> None:
    # The params first (no unknown conf key; rows, name template and max_failed_rows
    # usable), then every column the form needs and every value it can take: before any PDF
    # is written or any page billed. A bad one fails here, named, without retries.
    check_input = QualityCheckOperator(
        task_id="check_input",
        kind="input",
        pre_execute=check_params,
        template="{{ params.template }}",
        rows="{{ params.rows }}",
        output_dir="{{ params.output }}",
        mapping="{{ params.mapping | tojson }}",
        strict_columns="{{ params.strict_columns }}",
        name_template="{{ params.name_template }}",
        max_failed_rows="{{ params.max_failed_rows }}",
        check_values="{{ params.check_input }}",
        storage_conn_id="{{ params.storage_conn_id }}",
    )

    @task
    def plan(params: dict | None = None) -> list[dict[str, int]]:
        assert params is not None
        return plan_chunks(
            params["rows"],
            chunks=int(params["chunks"]),
            min_rows=int(params["min_rows_per_chunk"]),
            conn_id=params["storage_conn_id"] or None,
        )

    chunks = plan()
    check_input >> chunks
    fill = BatchFillOperator.partial(
        task_id="fill_chunk",
        template="{{ params.template }}",
        rows="{{ params.rows }}",
        output_dir="{{ params.output }}",
        name_template="{{ params.name_template }}",
        mapping="{{ params.mapping | tojson }}",
        strict_columns="{{ params.strict_columns }}",
        require=True,  # rows without the form's required fields are reported, not filled
        storage_conn_id="{{ params.storage_conn_id }}",
    ).expand(chunk=chunks)

    # Every chunk's manifest, from the store, joined in one; the run's verdict on failed rows.
    collect = MergeManifestsOperator(
        task_id="collect",
        output_dir="{{ params.output }}",
        chunks=chunks,
        max_failed_rows="{{ params.max_failed_rows }}",
        storage_conn_id="{{ params.storage_conn_id }}",
        asset=OUTPUT_ASSET,
    )

    check_output = QualityCheckOperator(
        task_id="check_manifest",
        kind="manifest",
        template="{{ params.template }}",
        rows="{{ params.rows }}",
        output_dir="{{ params.output }}",
        mapping="{{ params.mapping | tojson }}",
        storage_conn_id="{{ params.storage_conn_id }}",
    )
    fill >> collect >> check_output


fillpdf_mail_merge()
