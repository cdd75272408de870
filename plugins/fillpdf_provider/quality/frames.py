"""The tables the suites run on: schema entries, input rows and manifests as DataFrames.

Each frame has a row id column, the 1-based number the batch gives a row (or the position
of a schema entry), so a failure can list the rows it saw. Input cells are first turned
into what the filler will see: text as it reads it, blank cells as nulls (the filler leaves
those fields alone), checkbox and option values trimmed and lowercased (it ignores case
and surrounding spaces there).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fillpdf_provider.engine.batch import read_batches, read_columns
from fillpdf_provider.engine.coerce import TRUE_WORDS, to_text, yes_no_sides
from fillpdf_provider.engine.dates import as_iso
from fillpdf_provider.engine.schema import Field

ROW = "row"
RowsSource: TypeAlias = str | os.PathLike[str] | pd.DataFrame | pa.Table
PageBox = tuple[float, float, float, float]
_OFF_PAGE: PageBox = (-math.inf, -math.inf, math.inf, math.inf)
_NULL_TEXT = pa.scalar(None, pa.string())


def row_id_name(columns: Iterable[str], name: str = ROW) -> str:
    """``name`` (``row``) for the row ids, unless the data has a column of that name."""
    taken = set(columns)
    while name in taken:
        name = f"_{name}"
    return name


def read_table(source: RowsSource) -> pa.Table:
    """Rows as the batch reads them: CSV all as text, Parquet typed; tables as given."""
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, pd.DataFrame):
        return pa.Table.from_pandas(source, preserve_index=False)
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(
            f"No such rows file: {path}. Give the path or URI of a CSV, TSV or Parquet file."
        )
    if path.suffix.lower() in (".parquet", ".pq"):
        return pq.read_table(path)
    batches = list(read_batches(path, batch_rows=1 << 16))
    if batches:
        return pa.Table.from_batches(batches)
    # Only a header: no rows, but the columns still count.
    return pa.table({name: pa.array([], pa.string()) for name in read_columns(path)})


def as_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as the filler's text: bools Yes/No, timestamps as dates, numbers as written."""
    kind = column.type
    if pa.types.is_string(kind):
        return column
    if pa.types.is_boolean(kind):
        return pc.if_else(column, "Yes", "No")
    if pa.types.is_timestamp(kind):
        column = column.cast(pa.date32())
    try:
        return column.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        values = [None if v is None else to_text(v) for v in column.to_pylist()]
        return pa.chunked_array([pa.array(values, pa.string())])


def blank_as_null(text: pa.ChunkedArray) -> pa.ChunkedArray:
    """Empty and spaces-only cells as nulls, which GX leaves out of value checks."""
    return pc.if_else(pc.equal(pc.utf8_trim_whitespace(text), ""), _NULL_TEXT, text)


def cell_values(
    column: pa.ChunkedArray, field_type: str, date_format: str | None = None
) -> pa.ChunkedArray:
    """What the input suite sees of a column that fills a field of ``field_type``: a date
    in the form's format or in ISO 8601 as its ISO date (the filler's rule, engine.dates)."""
    text = as_text(column)
    if field_type in ("checkbox", "radio", "choice"):
        return blank_as_null(pc.utf8_lower(pc.utf8_trim_whitespace(text)))
    if field_type == "date":  # a column repeats its dates: each distinct one is read once
        written = pc.unique(text)
        iso = [None if v is None else as_iso(v, date_format) for v in written.to_pylist()]
        read = pa.array(iso, pa.string())
        return blank_as_null(pc.utf8_trim_whitespace(pc.take(read, pc.index_in(text, written))))
    return blank_as_null(text)  # text keeps its spaces: they count towards max_length


def input_frame(
    table: pa.Table,
    pairs: Mapping[str, Field],
    row_column: str,
    date_formats: Mapping[str, str | None] | None = None,
    first_row: int = 1,
) -> pd.DataFrame:
    """The row ids (from ``first_row``, for a slice) and, for each column that fills a
    field, its values as the filler sees them."""
    data: dict[str, pa.ChunkedArray | pa.Array] = {
        row_column: pa.array(range(first_row, first_row + table.num_rows), pa.int64())
    }
    for column, form_field in pairs.items():
        date_format = (date_formats or {}).get(form_field.name)
        data[column] = cell_values(table.column(column), form_field.type, date_format)
    return pa.table(data).to_pandas()


def values_key(frame: pd.DataFrame, pairs: Mapping[str, Field] | None) -> pd.Series:
    """A hash per input row of what it fills: rows with equal keys give equal PDFs.

    Checkbox and yes/no group words are reduced to on/off (``x`` and ``yes`` fill the same);
    without the form's fields every column counts, as text.
    """
    if pairs is None:
        columns = {c: frame[c] for c in frame.columns}
    else:
        columns = {}
        for column, form_field in pairs.items():
            values = frame[column]
            if form_field.type == "checkbox":
                values = values.isin(TRUE_WORDS)
            elif yes_no_sides(form_field.options or ()):  # a blank cell answers neither
                values = values.isin(TRUE_WORDS).where(values.notna())
            columns[column] = values
    if not columns:
        return pd.Series(0, index=frame.index, dtype="uint64")
    return pd.util.hash_pandas_object(pd.DataFrame(columns), index=False)


def text_frame(table: pa.Table) -> pd.DataFrame:
    """Every column as text, blanks as nulls: input rows compared without a form."""
    return pa.table(
        {name: blank_as_null(as_text(table.column(name))) for name in table.column_names}
    ).to_pandas()


def manifest_frame(
    table: pa.Table,
    keys: pd.Series | None,
    *,
    first_row: int = 1,
    new_values: Any = None,
) -> tuple[pd.DataFrame, str]:
    """The manifest with blank errors as nulls, its row id column, and ``new_values``: whether
    a row is the first with its sha256 and its input values (``keys``, by row number).

    Rows that repeat both may share a file's bytes; rows with other values may not. A slice
    of a manifest (its first row ``first_row``) is given its ``new_values``, worked out on
    the whole manifest (``checks.manifest_check``).
    """
    if "error" in table.column_names:
        error = blank_as_null(as_text(table.column("error")))
        table = table.set_column(table.column_names.index("error"), "error", error)
    frame = table.to_pandas()
    row_column = manifest_row_column(frame.columns)
    if row_column != ROW:
        frame[row_column] = range(first_row, first_row + len(frame))
    if new_values is not None:
        frame["new_values"] = new_values
    elif "sha256" in frame.columns:
        if keys is not None and ROW in frame.columns:
            values = frame[ROW].map(keys)
        else:
            values = pd.Series(range(len(frame)), index=frame.index)
        pairs = pd.DataFrame({"sha256": frame["sha256"], "values": values})
        frame["new_values"] = ~pairs.duplicated(keep="first")
    return frame, row_column


def manifest_row_column(columns: Iterable[str]) -> str:
    """A manifest's row ids: its ``row`` column, or positions under a free name."""
    columns = list(columns)
    return ROW if ROW in columns else row_id_name(columns, "position")


def page_box(size: Sequence[float]) -> PageBox:
    """A page's box from ``(width, height)`` or ``(left, bottom, right, top)``."""
    if len(size) == 2:
        return (0.0, 0.0, float(size[0]), float(size[1]))
    left, bottom, right, top = (float(v) for v in size)
    return (left, bottom, right, top)


def page_boxes(pdf: bytes | str | os.PathLike[str]) -> list[PageBox]:
    """The visible box of each page (crop box, else media box), as the form reader uses."""
    import io

    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf) if isinstance(pdf, bytes) else Path(pdf))
    return [
        (float(p.cropbox.left), float(p.cropbox.bottom), float(p.cropbox.right),
         float(p.cropbox.top))
        for p in reader.pages
    ]  # fmt: skip


def schema_frame(
    schema: Sequence[Field | Mapping[str, Any]], page_sizes: Sequence[Sequence[float]]
) -> pd.DataFrame:
    """One row per schema entry, its rect split into edges, beside its page's box.

    An entry on a page the document lacks gets an unbounded box: its page check fails,
    not its rect checks as well.
    """
    boxes = [page_box(s) for s in page_sizes]
    records = []
    for position, entry in enumerate(schema, start=1):
        data = entry.to_dict() if isinstance(entry, Field) else dict(entry)
        page = _number(data.get("page", 0))
        rect = data.get("rect") or (0, 0, 0, 0)
        edges = [_number(v) for v in rect] if len(rect) == 4 else [math.nan] * 4
        on_page = page is not None and float(page).is_integer() and 0 <= page < len(boxes)
        box = boxes[int(page)] if on_page else _OFF_PAGE  # type: ignore[arg-type]
        records.append(
            {
                ROW: position,
                "name": data.get("name"),
                "type": data.get("type"),
                "page": page,
                "x0": edges[0], "y0": edges[1], "x1": edges[2], "y1": edges[3],
                "confidence": _number(data.get("confidence", 1.0)),
                "page_left": box[0], "page_bottom": box[1],
                "page_right": box[2], "page_top": box[3],
            }
        )  # fmt: skip
    frame = pd.DataFrame.from_records(records, columns=SCHEMA_COLUMNS)
    for name in SCHEMA_COLUMNS[3:]:
        frame[name] = frame[name].astype("float64")
    return frame


SCHEMA_COLUMNS = [
    ROW, "name", "type", "page", "x0", "y0", "x1", "y1", "confidence",
    "page_left", "page_bottom", "page_right", "page_top",
]  # fmt: skip


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number
