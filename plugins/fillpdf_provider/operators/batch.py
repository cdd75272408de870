"""``BatchFillOperator``: mail-merge a table into PDFs, and the helpers to scale it out.

One template, rows from CSV or Parquet (streamed in record batches, so memory stays flat),
one PDF per row, a manifest Parquet of every row's outcome. To spread a large table over
workers, ``plan_chunks`` splits the rows into ranges, the operator is mapped over them with
``.expand(chunk=...)``, and ``merge_manifests`` joins the chunks' manifests at the end. A
chunk run again writes the same bytes under the same names. Rows, template and outputs may
each live in object storage: no task reads a local disk another task wrote.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from airflow.sdk import Asset, BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from fillpdf_provider.engine.appearance import Fit
from fillpdf_provider.engine.batch import (
    MANIFEST_NAME,
    MANIFEST_SCHEMA,
    BatchSummary,
    OutputNames,
    RowError,
    fill_rows,
    read_batches,
    read_columns,
    total_rows,
)
from fillpdf_provider.engine.batch import count_rows as count_local_rows
from fillpdf_provider.engine.columns import ColumnError
from fillpdf_provider.engine.errors import FillPdfError
from fillpdf_provider.engine.fillable import Form
from fillpdf_provider.engine.output_formats import (
    FORMATS,
    OUTPUT_FORMATS,
    fill_one_file,
)
from fillpdf_provider.hooks.fillpdf import FillPdfHook, InputError, MissingInput
from fillpdf_provider.operators.forms import (
    FILL_ON,
    fit_for,
    fit_on,
    flag_of,
    mapping_of,
    open_form,
    template_location,
)
from fillpdf_provider.storage import Store, readable

log = logging.getLogger(__name__)

CHUNK_MANIFESTS = "_manifests"
SHOWN_ERRORS = 10  # failed rows named in a log or an exception; the rest are counted
SHOWN_NAMES = 5  # file names two chunks both wrote, named in the merge's refusal
MERGE_ROWS = 65_536  # manifest rows the merge holds at once
ROWS_TAKE = "rows takes the path or URI of a CSV or Parquet file, one row per PDF."
LIMIT_FIX = (
    "give 0 (no failed row allowed), a whole count of rows, or a fraction of the rows "
    "below 1 (0.01: one row in a hundred)."
)
ON_ERROR = {
    "skip": "'skip' records a bad row in the manifest and goes on",
    "fail": "'fail' stops the task at the first bad row",
}


@contextlib.contextmanager
def rows_file(rows: str, conn_id: str | None = None) -> Iterator[Path]:
    """``readable`` for the ``rows`` option: a file that is missing or a folder fails the
    task at once (``MissingInput``), and one it may not read too (``InputError``), named."""
    with contextlib.ExitStack() as stack:
        try:
            path = stack.enter_context(readable(rows, conn_id))
        except FileNotFoundError as exc:  # the same path is missing on every retry
            raise MissingInput(f"rows {exc} {ROWS_TAKE}") from None
        except PermissionError as exc:
            raise InputError(f"rows {exc}") from None
        yield path


def count_rows(rows: str, conn_id: str | None = None) -> int:
    """Rows in a CSV or Parquet file (Parquet from its footer; CSV read once, streamed)."""
    with rows_file(rows, conn_id) as path:
        return count_local_rows(path, scan=True) or 0


def plan_chunks(
    rows: str,
    *,
    chunks: int | None = None,
    rows_per_chunk: int | None = None,
    min_rows: int = 1,
    conn_id: str | None = None,
) -> list[dict[str, int]]:
    """Split the rows into ranges for ``BatchFillOperator.partial(...).expand(chunk=...)``.

    Give ``chunks`` (how many) or ``rows_per_chunk``. Each range is ``{"index", "first",
    "stop"}`` with 1-based row numbers, ``first <= row < stop``. With ``chunks``, no range
    is given fewer than ``min_rows`` rows (the last excepted): a mapped task takes seconds
    to start, so a small table is filled by fewer tasks, one if it has fewer than
    ``min_rows``. A table with no rows gets one empty range, so its run still writes a
    manifest (of no rows) and says why it is empty.
    """
    if (chunks is None) == (rows_per_chunk is None):
        raise InputError(
            f"Give one of chunks or rows_per_chunk (got chunks={chunks!r}, "
            f"rows_per_chunk={rows_per_chunk!r}): chunks to split the rows into that many "
            "ranges, rows_per_chunk to give each range that many rows."
        )
    option, given = ("chunks", chunks) if chunks is not None else ("rows_per_chunk", rows_per_chunk)
    number = _whole(given)
    if number is None or number < 1:
        raise InputError(f"{option} must be a whole number, 1 or more, not {given!r}.")
    least = _whole(min_rows)
    if least is None or least < 1:
        raise InputError(f"min_rows must be a whole number, 1 or more, not {min_rows!r}.")
    total = count_rows(rows, conn_id)
    if total == 0:
        return [{"index": 0, "first": 1, "stop": 1}]
    size = number if option == "rows_per_chunk" else max(-(-total // number), least)
    return [
        {"index": i, "first": first, "stop": min(first + size, total + 1)}
        for i, first in enumerate(range(1, total + 1, size))
    ]


def _empty_table(chunk: Mapping[str, int]) -> bool:
    """The one range ``plan_chunks`` gives a table with no rows."""
    return int(chunk["stop"]) <= int(chunk["first"])


def _chunk_label(chunk: Mapping[str, int]) -> str:
    rows = "no rows" if _empty_table(chunk) else f"rows {chunk['first']}-{int(chunk['stop']) - 1}"
    return f"chunk {chunk['index']} ({rows})"


def chunk_manifest_name(chunk: Mapping[str, int]) -> str:
    return f"chunk-{int(chunk['first']):09d}.parquet"


def failure_limit(max_failed_rows: int | float | str | None, rows: int) -> int:
    """How many failed rows a run tolerates: a count (``5``) or a fraction of the rows
    (``0.01``); ``0`` or ``None``: none."""
    if max_failed_rows in (None, "", "None"):
        return 0
    try:
        value = float(max_failed_rows)
    except (TypeError, ValueError):
        raise InputError(
            f"max_failed_rows must be a count (e.g. 10) or a fraction of the rows (e.g. 0.01), "
            f"not {max_failed_rows!r}; {LIMIT_FIX}"
        ) from None
    if value < 0 or not math.isfinite(value):
        raise InputError(f"max_failed_rows must be 0 or more, not {max_failed_rows!r}; {LIMIT_FIX}")
    if 0 < value < 1:
        return int(value * rows)
    if value != int(value):
        raise InputError(
            f"max_failed_rows {max_failed_rows!r} is neither a whole count nor a fraction below "
            f"1; {LIMIT_FIX}"
        )
    return int(value)


def _number(value: object) -> float | None:
    """A finite number from a number or its text; None for anything else."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _whole(value: object) -> int | None:
    """A whole number from a number or its text; None for anything else."""
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


def failed_rows_message(failed: int, rows: int, errors: Sequence[Mapping[str, Any]]) -> str:
    """``3 of 100 rows failed: row 4: ...; row 9: ...; and 1 more``."""
    shown = "; ".join(
        f"row {e['row']}: {str(e['error']).rstrip('.')}" for e in errors[:SHOWN_ERRORS]
    )
    more = failed - min(len(errors), SHOWN_ERRORS)
    return f"{failed} of {rows} rows failed: {shown}" + (f"; and {more} more" if more > 0 else "")


def enforce_failure_limit(
    failed: int,
    rows: int,
    errors: Sequence[Mapping[str, Any]],
    max_failed_rows: int | float | str | None,
    manifest: str,
) -> None:
    """Fail the task (no retries: the rows won't improve) when more rows failed than allowed."""
    allowed = failure_limit(max_failed_rows, rows)
    if failed > allowed:
        raise AirflowFailException(
            f"{failed_rows_message(failed, rows, errors)}. max_failed_rows allows {allowed}; "
            f"every row's outcome is in {manifest}."
        )


def merge_manifests(
    output: str,
    *,
    chunks: Sequence[Mapping[str, int]] | None = None,
    max_failed_rows: int | float | str | None = None,
    conn_id: str | None = None,
) -> dict[str, Any]:
    """Join the chunks' manifests into ``manifest.parquet`` in ``output`` (a folder or URI).

    With ``chunks`` (the plan), a chunk whose manifest is missing fails the merge, named.
    Two rows with one output name fail it too. With ``max_failed_rows`` given, more failed
    rows than it allows fail the task after the manifest is written. Every chunk has
    finished by then, so the temporary files of attempts that were killed mid-write are
    removed from the output folder.
    """
    store = Store(output, conn_id)
    parts = store.names(CHUNK_MANIFESTS, "chunk-*.parquet")
    if chunks is not None:
        missing = [c for c in chunks if chunk_manifest_name(c) not in parts]
        if missing:
            named = ", ".join(_chunk_label(c) for c in missing)
            raise AirflowFailException(
                f"{len(missing)} of {len(chunks)} chunks left no manifest in "
                f"{store.uri(CHUNK_MANIFESTS)}: {named}. Clear those fill tasks to run them "
                "again."
            )
        parts = [chunk_manifest_name(c) for c in chunks]
    if not parts:
        raise MissingInput(
            f"No chunk manifests under {store.uri(CHUNK_MANIFESTS)}: no BatchFillOperator with "
            f"chunk= has filled rows into output_dir {str(output)!r}. Run the chunks first "
            "(BatchFillOperator.partial(output_dir=...).expand(chunk=plan_chunks(...))), then "
            "merge the output_dir they wrote to."
        )
    with store.staging() as folder:
        temp = folder / MANIFEST_NAME
        merged = _merge_in_order(store, parts, temp) or _merge_in_memory(store, parts, temp)
        store.publish(MANIFEST_NAME, temp)
    left = store.remove_temporary() + store.remove_temporary(CHUNK_MANIFESTS)
    if left:
        log.info("Removed %d temporary files of killed fill attempts from %s", left, output)
    rows, failed, errors = merged
    manifest = store.uri(MANIFEST_NAME)
    summary = {
        "rows": rows,
        "ok": rows - failed,
        "failed": failed,
        "manifest": manifest,
        "chunks": len(parts),
        "errors": errors,
    }
    if max_failed_rows is not None:
        summary["failed_rows_allowed"] = failure_limit(max_failed_rows, rows)
        enforce_failure_limit(failed, rows, errors, max_failed_rows, manifest)
    return summary


_Merged = tuple[int, int, list[dict[str, Any]]]  # rows, failed rows, the first errors


def _merge_in_order(store: Store, parts: Sequence[str], target: Path) -> _Merged | None:
    """Write the chunk manifests one after another into ``target``: rows in order, in the
    memory of ``MERGE_ROWS`` rows and 8 bytes a row. None if the chunks' rows overlap or are
    out of order (chunks from different plans), which only a sort of the whole table puts
    right."""
    import numpy as np
    import pandas as pd

    rows = failed = last = 0
    errors: list[dict[str, Any]] = []
    hashes = []
    with pq.ParquetWriter(target, MANIFEST_SCHEMA) as writer:
        for table in _manifest_pieces(store, parts):
            numbers = table.column("row")
            steps = pc.subtract(numbers.slice(1), numbers.slice(0, table.num_rows - 1))
            if pc.min(numbers).as_py() <= last or pc.any(pc.less_equal(steps, 0)).as_py():
                return None
            last = pc.max(numbers).as_py()
            writer.write_table(table)
            rows += table.num_rows
            bad = table.filter(pc.not_equal(table.column("status"), "ok"))
            failed += bad.num_rows
            if len(errors) < SHOWN_ERRORS:
                more = bad.select(["row", "error"]).slice(0, SHOWN_ERRORS - len(errors))
                errors += more.to_pylist()
            paths = pc.drop_null(table.column("path")).to_numpy(zero_copy_only=False)
            hashes.append(pd.util.hash_array(paths))
    every = np.concatenate(hashes) if hashes else np.empty(0, np.uint64)
    values, counts = np.unique(every, return_counts=True)
    repeated = values[counts > 1]
    if len(repeated):  # the same hash: read those rows again and compare the names
        suspects = []
        for table in _manifest_pieces(store, parts):
            table = table.filter(pc.is_valid(table.column("path")))
            paths = table.column("path").to_numpy(zero_copy_only=False)
            suspects.append(table.filter(pa.array(np.isin(pd.util.hash_array(paths), repeated))))
        _refuse_same_names(pa.concat_tables(suspects))
    return rows, failed, errors


def _manifest_pieces(store: Store, parts: Sequence[str]) -> Iterator[pa.Table]:
    """The rows of the chunk manifests ``parts``, in order, ``MERGE_ROWS`` at a time."""
    for name in parts:
        with store.readable(f"{CHUNK_MANIFESTS}/{name}") as path:
            for batch in pq.ParquetFile(path).iter_batches(MERGE_ROWS):
                if batch.num_rows:
                    yield pa.Table.from_batches([batch]).cast(MANIFEST_SCHEMA)


def _merge_in_memory(store: Store, parts: Sequence[str], target: Path) -> _Merged:
    """The chunk manifests read whole and sorted by row into ``target``."""
    tables = [_chunk_table(store, name) for name in parts]
    table = pa.concat_tables(tables).sort_by("row")
    _refuse_same_names(table)
    pq.write_table(table, target)
    failed = table.filter(pc.not_equal(table.column("status"), "ok"))
    errors = failed.select(["row", "error"]).slice(0, SHOWN_ERRORS).to_pylist()
    return table.num_rows, failed.num_rows, errors


def _chunk_table(store: Store, name: str) -> pa.Table:
    with store.readable(f"{CHUNK_MANIFESTS}/{name}") as path:
        return pq.read_table(path, schema=MANIFEST_SCHEMA)


def _refuse_same_names(table: pa.Table) -> None:
    """``InputError`` naming the files two rows of ``table`` both wrote."""
    counts = pc.value_counts(pc.drop_null(table.column("path")))
    repeated = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
    if len(repeated):
        raise InputError(_same_names(table.sort_by("row"), repeated.to_pylist()))


def _same_names(table: pa.Table, names: list[str]) -> str:
    """Each chunk keeps its own names unique, not the batch's: name the clashes' rows."""
    shown = []
    for name in names[:SHOWN_NAMES]:
        rows = table.filter(pc.equal(table.column("path"), name)).column("row").to_pylist()
        shown.append(f"{name!r} (rows {', '.join(str(r) for r in rows[:SHOWN_NAMES])})")
    more = len(names) - SHOWN_NAMES
    return (
        f"Chunks wrote the same file name for different rows: {'; '.join(shown)}"
        f"{f'; and {more} more names' if more > 0 else ''}. Each chunk keeps only its own names "
        "apart, so the name_template must give every row its own: put {row} in it (e.g. "
        "'{row}-{last_name}.pdf'), fill the chunks again, then merge."
    )


def check_batch_params(
    rows: str,
    *,
    name_template: str,
    max_failed_rows: int | float | str | None = None,
    conn_id: str | None = None,
) -> list[str]:
    """Refuse, before anything is filled or billed, what would fail every row: a name
    template that names a column the rows lack, a bad ``max_failed_rows``. The columns.

    Each refusal fails a task at once: ``MissingInput`` for rows that are not there,
    ``InputError`` for the rest, naming the value and the fix.
    """
    with rows_file(rows, conn_id) as path:
        try:
            columns = columns_of(path)
        except ValueError as exc:  # the rows' format: the same on every retry
            raise InputError(str(exc)) from None
    check_names(name_template, columns)
    failure_limit(max_failed_rows, 1)
    return columns


def columns_of(path: Path) -> list[str]:
    """The columns of a local rows file, from its header or schema (a table with no rows
    has them too), once its first row has been read: ``ValueError``, a pyarrow one
    included, for a file no batch can read."""
    return [name for name, _ in column_types(path)]


def column_types(path: Path) -> list[tuple[str, str | None]]:
    """``columns_of`` with each column's type as its first row reads (pyarrow's names:
    ``string``, ``int64``...; ``None`` for a table with no rows)."""
    first = next(read_batches(path, batch_rows=1), None)
    if first is None:
        return [(name, None) for name in read_columns(path)]
    return [(column.name, str(column.type)) for column in first.schema]


def check_names(name_template: str, columns: list[str]) -> None:
    """Refuse a name template that names a column the rows lack (``InputError``, listing
    the rows' columns and the nearest)."""
    try:
        OutputNames(name_template).check(columns)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _check_choices(
    output_format: str, on_error: str, fill_on: str, chunk: Mapping[str, int] | None
) -> None:
    """The batch operator's choices, each refused with the value given and what it may be."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(
            f"output_format must be one of {OUTPUT_FORMATS}, not {output_format!r}: "
            f"{', '.join(FORMATS.values())}."
        )
    if on_error not in ON_ERROR:
        raise ValueError(
            f"on_error must be 'skip' or 'fail', not {on_error!r}: {'; '.join(ON_ERROR.values())}."
        )
    if fill_on not in FILL_ON:
        raise ValueError(f"fill_on must be one of {FILL_ON}, not {fill_on!r}.")
    if chunk is not None and output_format != "files":
        raise ValueError(
            f"Chunked batches write files (output_format='files'), not "
            f"output_format={output_format!r}: each chunk writes its rows' PDFs, and "
            "merge_manifests joins the chunks' manifests. Drop output_format, or fill "
            "without chunk to get one merged PDF or one zip."
        )


@dataclass(frozen=True)
class _Read:
    """What a batch task read, for its lineage: the template's location (a conversion's
    included), and the rows' columns with their types."""

    template: str = ""
    columns: list[tuple[str, str | None]] = field(default_factory=list)


class BatchFillOperator(BaseOperator):
    """Fill a form once per row of a CSV or Parquet table.

    :param template: a conversion id, or the path or URI of a fillable PDF. Templated.
    :param rows: path or URI of a ``.csv`` or ``.parquet`` file. Templated.
    :param output_dir: folder or URI for the PDFs and ``manifest.parquet``. Templated.
    :param mapping: column -> field for columns whose names don't say which field they
        fill (``""`` leaves a column out); other columns fill the field of their name, also
        matched with case, spaces and punctuation set aside. A dict, or its JSON (as
        ``"{{ params.mapping | tojson }}"`` renders). Templated.
    :param strict_columns: a column that fills no field fails the task (default: listed
        once in the log as not used). A column that looks like a field no column fills
        always does, before any row is filled, naming the mapping that fixes it. Templated
        (``"{{ params.strict_columns }}"``).
    :param name_template: output names, e.g. ``"{row}.pdf"`` or ``"{id}-{last_name}.pdf"``.
        Templated.
    :param flatten: draw the values into the pages and drop the fields, so the PDFs can no
        longer be edited (``merged`` always flattens).
    :param output_format: ``files`` (one PDF per row), ``merged`` (one PDF of all rows,
        flattened) or ``zip`` (the PDFs in one archive).
    :param on_error: ``skip`` records a bad row in the manifest and goes on; ``fail`` stops.
    :param max_failed_rows: failed rows the task tolerates, a count or a fraction of the
        rows (default 0: any failed row fails the task, after the manifest is written). A
        chunk leaves the verdict to ``merge_manifests``, which sees every chunk. Templated.
    :param require: a row that leaves a field the form marks required empty is a bad row.
    :param overflow: text too long for its box even at ``min_font_size``: ``error``
        (default) makes the row a bad row, naming the field; ``shrink`` draws what fits at
        that size, ``truncate`` what fits at the field's own size, and both list the fields
        cut in the manifest's ``cut`` column. Applies where the engine fills on the worker
        (not with ``fill_on="service"``, where the service refuses such rows).
    :param min_font_size: points text shrinks down to before ``overflow`` applies (default 4).
    :param fill_on: where rows are filled when the connection is in api mode: ``worker``
        (default: the form is downloaded once and filled here by the same engine the
        service runs, byte for byte; fills are never metered) or ``service`` (one request
        per row, by conversion id; the template must be a conversion id).
    :param chunk: a range from ``plan_chunks``: fill only those rows (mapped tasks).
    :param batch_rows: rows read at a time (memory stays flat whatever the table's length).
    :param progress_every: seconds between progress lines in the task log (default 10; 0:
        a line after every row). The last line, with the time taken, is always written.
    :param asset: an Asset to emit an event for, with the output location in its extra.
    :param fillpdf_conn_id: the FillPDF connection (default ``fillpdf_default``; when that
        does not exist, the embedded engine). A named connection must exist.
    :param storage_conn_id: connection for object-storage URIs that name none (default: the
        scheme's standard one, e.g. ``aws_default`` for ``s3://``). Templated.

    What would fail every row fails the task at once, before anything is filled, naming
    the option, the value and the fix: a connection that does not exist, rows that are
    missing or no CSV or Parquet file, a name template naming a column the rows lack, a
    ``max_failed_rows`` no run can use. So does a bad row with ``on_error="fail"``.

    XCom: the batch summary (rows, ok, failed, rows with text cut, rows/s, manifest,
    unused columns and unfilled fields, the first errors with their row numbers).
    """

    template_fields: Sequence[str] = (
        "template", "rows", "output_dir", "name_template", "mapping", "strict_columns",
        "max_failed_rows", "fillpdf_conn_id", "storage_conn_id",
    )  # fmt: skip
    ui_color = "#fdf3e2"

    def __init__(
        self,
        *,
        template: str,
        rows: str,
        output_dir: str,
        mapping: Mapping[str, str | None] | str | None = None,
        strict_columns: bool | str = False,
        name_template: str = "{row}.pdf",
        flatten: bool = False,
        output_format: str = "files",
        on_error: str = "skip",
        max_failed_rows: int | float | str = 0,
        require: bool = False,
        overflow: str = "error",
        min_font_size: float = 4.0,
        fill_on: str = "worker",
        chunk: Mapping[str, int] | None = None,
        batch_rows: int = 2048,
        progress_every: float = 10.0,
        asset: Asset | None = None,
        fillpdf_conn_id: str = FillPdfHook.default_conn_name,
        storage_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        # A bad option is a DAG error, not a run's: refused when the DAG is parsed.
        _check_choices(output_format, on_error, fill_on, chunk)
        if isinstance(max_failed_rows, int | float):
            failure_limit(max_failed_rows, 1)  # a bad limit is a DAG error, not a run's
        fit_for(overflow, min_font_size)  # so is a bad overflow policy
        rows_at_a_time = _whole(batch_rows)
        if rows_at_a_time is None or rows_at_a_time < 1:
            raise ValueError(
                f"batch_rows must be a whole number of rows, 1 or more, not {batch_rows!r}."
            )
        seconds = _number(progress_every)
        if seconds is None or seconds < 0:
            raise ValueError(
                f"progress_every must be a number of seconds, 0 or more, not "
                f"{progress_every!r} (0 logs a line after every row)."
            )
        if asset is not None:
            kwargs["outlets"] = [*kwargs.get("outlets", []), asset]
        super().__init__(**kwargs)
        self.template = template
        self.rows = rows
        self.output_dir = output_dir
        self.mapping = mapping
        self.strict_columns = strict_columns
        self.name_template = name_template
        self.flatten = flatten
        self.output_format = output_format
        self.on_error = on_error
        self.max_failed_rows = max_failed_rows
        self.require = require
        self.overflow = overflow
        self.min_font_size = min_font_size
        self.fill_on = fill_on
        self.chunk = chunk
        self.batch_rows = rows_at_a_time
        self.progress_every = progress_every
        self.asset = asset
        self.fillpdf_conn_id = fillpdf_conn_id
        self.storage_conn_id = storage_conn_id
        self._read = _Read()
        self._written: BatchSummary | None = None

    def execute(self, context: Context) -> dict[str, Any]:
        with FillPdfHook(self.fillpdf_conn_id) as hook:
            self.log.info("FillPDF: %s", hook.describe())  # a missing named connection fails
            failure_limit(self.max_failed_rows, 1)  # as rendered: refused before any row
            fit = fit_on(hook, self.fill_on, fit_for(self.overflow, self.min_font_size))
            form = open_form(hook, self.template, fill_on=self.fill_on,
                             conn_id=self.storage_conn_id)  # fmt: skip
            self._read = _Read(template_location(hook, str(self.template)))
            return self._fill(context, form, fit)

    def _fill(self, context: Context, form: Form, fit: Fit | None) -> dict[str, Any]:
        """Fill this task's rows (its chunk, or all of them) and report what happened."""
        chunk = dict(self.chunk) if self.chunk else None
        label = _chunk_label(chunk) if chunk else "batch"
        manifest = f"{CHUNK_MANIFESTS}/{chunk_manifest_name(chunk)}" if chunk else MANIFEST_NAME
        store = Store(self.output_dir, self.storage_conn_id, batched=True)
        options = self._options(fit, chunk)
        with rows_file(self.rows, self.storage_conn_id) as rows_path:
            columns = self._columns(rows_path)
            total = (chunk["stop"] - chunk["first"]) if chunk else total_rows(rows_path)
            options["progress"] = self._progress(label, total)
            summary = self._fill_rows(form, rows_path, store, manifest, options, columns)
        result: dict[str, Any] = {**summary.as_dict(), "format": self.output_format}
        result["out_dir"] = str(self.output_dir)
        result["manifest"] = store.uri(manifest)
        self._written = summary
        if chunk:
            result["chunk"] = chunk
        self._log_summary(label, summary)
        if self.asset is not None:
            context["outlet_events"][self.asset].extra = {
                "output": str(self.output_dir), "rows": summary.rows, "ok": summary.ok,
                "failed": summary.failed, "manifest": result["manifest"],
            }  # fmt: skip
        if not chunk:
            enforce_failure_limit(summary.failed, summary.rows, summary.errors,
                                  self.max_failed_rows, result["manifest"])  # fmt: skip
        return result

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """For the OpenLineage provider: the rows (with their columns) and the template in,
        the folder of PDFs (rows filled, bytes, files) and the manifest (its columns, its
        rows) out."""
        from fillpdf_provider import lineage

        read, written = self._read, self._written
        inputs = [lineage.input_dataset(str(self.rows), columns=read.columns or None)]
        if read.template:
            inputs.append(lineage.input_dataset(read.template))
        if written is None:  # failed before its rows were filled
            return lineage.lineage(inputs)
        files = written.ok if self.output_format == "files" else int(written.ok > 0)
        outputs = [
            lineage.output_dataset(
                str(self.output_dir), rows=written.ok, size=written.bytes, files=files
            ),
            lineage.output_dataset(
                written.manifest,
                columns=[(f.name, str(f.type)) for f in MANIFEST_SCHEMA],
                rows=written.rows,
            ),
        ]
        return lineage.lineage(inputs, outputs)

    def _options(self, fit: Fit | None, chunk: dict[str, Any] | None) -> dict[str, Any]:
        """What ``fill_rows`` is given, from the operator's settings and its chunk."""
        return {
            "name_template": self.name_template,
            "flatten": self.flatten or self.output_format == "merged",
            "on_error": self.on_error,
            "require": self.require,
            "fit": fit,
            "batch_rows": self.batch_rows,
            "mapping": mapping_of(self.mapping),
            "strict_columns": flag_of("strict_columns", self.strict_columns),
            "progress_every": float(self.progress_every),
            "row_range": (chunk["first"], chunk["stop"]) if chunk else None,
        }

    def _fill_rows(
        self,
        form: Form,
        rows_path: Path,
        store: Store,
        manifest: str,
        options: dict[str, Any],
        columns: list[str],
    ) -> BatchSummary:
        """The rows filled into ``store``; what no retry can change fails the task at once."""
        try:
            if self.output_format == "files":
                return fill_rows(form, rows_path, store, manifest_name=manifest, **options)
            return self._package(form, rows_path, store, options)
        except RowError as exc:  # on_error="fail"
            if isinstance(exc.cause, OSError):  # the output, not the row: may pass again
                raise
            raise InputError(
                f"{exc.message.rstrip('.')} (on_error='fail' stops at the first bad row). "
                "Fix that row and run again, or set on_error='skip' to record bad rows in "
                "the manifest and go on."
            ) from None
        except FillPdfError as exc:  # before any row: no column fills a field, a mapping
            raise InputError(self._refused(exc, columns, form)) from None
        except pa.ArrowInvalid as exc:  # a row further down the file no reader can read
            raise InputError(f"rows {self.rows!r}: {exc}") from None

    def _log_summary(self, label: str, summary: BatchSummary) -> None:
        self.log.info("%s: %s", label, summary.line())
        if _empty_table(self.chunk) if self.chunk else not summary.rows:
            self.log.warning("rows %r has no rows, only a header: nothing was filled.", self.rows)
        if summary.failed:
            self.log.warning(
                "%s", failed_rows_message(summary.failed, summary.rows, summary.errors)
            )
        if summary.unused_note:
            self.log.info("%s", summary.unused_note)

    def _columns(self, rows_path: Path) -> list[str]:
        """The rows' columns, and the name template checked against them: what would fail
        every row fails the task before any is filled."""
        try:
            typed = column_types(rows_path)
        except ValueError as exc:  # the rows' format (pyarrow's errors are ValueErrors too)
            raise InputError(f"rows {self.rows!r}: {exc}") from None
        self._read = _Read(self._read.template, typed)
        columns = [name for name, _ in typed]
        check_names(self.name_template, columns)
        return columns

    def _refused(self, exc: FillPdfError, columns: list[str], form: Any) -> str:
        """A refusal of the whole batch, with the option it concerns and what to give."""
        if isinstance(exc, ColumnError):  # names its columns and the mapping that fixes each
            return f"rows {self.rows!r}: {exc.message}"
        if exc.param == "rows" or not self.mapping:
            return f"rows {self.rows!r}: {exc.message} Or map them: mapping={{'column': 'field'}}."
        fields = ", ".join(repr(f.name) for f in form.fields[: SHOWN_ERRORS * 2])
        more = len(form.fields) - SHOWN_ERRORS * 2
        listed = fields + (f" and {more} more" if more > 0 else "")
        return (
            f"mapping {self.mapping!r}: {exc.message} The form's fields: {listed}. The rows' "
            f"columns: {', '.join(repr(c) for c in columns)}."
        )

    def _progress(self, label: str, total: int | None) -> Callable[[BatchSummary, float], None]:
        """Plain progress lines for the task log (no terminal: nothing redrawn in place)."""

        def report(summary: BatchSummary, seconds: float) -> None:
            self.log.info("%s: %s", label, summary.progress_line(seconds, total))

        return report

    def _package(
        self, form: Any, rows_path: Path, store: Store, options: dict[str, Any]
    ) -> BatchSummary:
        """All rows in one zip or one merged PDF (``engine.output_formats``), published
        whole, with the manifest."""
        summary = fill_one_file(form, rows_path, store, self.output_format, **options)
        summary.out_dir = str(self.output_dir)
        return summary
