"""The three checks: a conversion schema, input rows against a form, a fill's manifest.

Each builds its frame and suite, runs GX and returns a ``QualityReport``. None of them fails
a task by itself (``enforce`` does), so tests, scripts and DAGs share them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from fillpdf_provider.engine.coerce import map_columns
from fillpdf_provider.engine.errors import FieldValueError
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.quality.context import validate
from fillpdf_provider.quality.frames import (
    ROW,
    RowsSource,
    input_frame,
    manifest_frame,
    read_table,
    row_id_name,
    schema_frame,
    text_frame,
    values_key,
)
from fillpdf_provider.quality.report import QualityReport, enforce
from fillpdf_provider.quality.suites import input_suite, manifest_suite, schema_suite

SchemaEntries = Sequence[Field | Mapping[str, Any]]


def fields_of(template_fields: Any) -> list[Field]:
    """Fields from a list of ``Field`` or schema dicts, or anything with ``.fields``."""
    entries = getattr(template_fields, "fields", template_fields)
    return [f if isinstance(f, Field) else Field.from_dict(f) for f in entries]


def schema_check(
    schema: SchemaEntries, page_sizes: Sequence[Sequence[float]], *, source: str = "schema"
) -> QualityReport:
    """Check a conversion schema against its document.

    ``page_sizes`` has one entry per page: ``(width, height)`` or the page's visible box
    ``(left, bottom, right, top)`` in PDF points (see ``frames.page_boxes``).
    """
    started = time.perf_counter()
    frame = schema_frame(schema, page_sizes)
    return _run("schema", source, frame, schema_suite(len(page_sizes)), ROW, started)


def input_rows_check(
    rows: RowsSource,
    template_fields: Any,
    mapping: Mapping[str, str] | None = None,
    *,
    require_columns: Iterable[str] | None = None,
) -> QualityReport:
    """Check rows (a CSV read as text, a Parquet file or a DataFrame) against a form's fields.

    ``mapping`` is column -> field, as the batch takes it. ``require_columns`` names the
    fields a column must fill; by default every field a user can fill except signatures
    (people sign those). Fields the form requires and mapped fields always need a column.
    """
    started = time.perf_counter()
    table = read_table(rows)
    fields = fields_of(template_fields)
    expected, pairs = column_plan(table.column_names, fields, mapping, require_columns)
    row_column = row_id_name(pairs)
    frame = input_frame(table, pairs, row_column)
    suite = input_suite(expected, pairs, frame.columns)
    return _run("input", describe(rows), frame, suite, row_column, started)


def column_plan(
    columns: Sequence[str],
    fields: Sequence[Field],
    mapping: Mapping[str, str] | None = None,
    require_columns: Iterable[str] | None = None,
) -> tuple[dict[str, str], dict[str, Field]]:
    """(field -> the column that must fill it, present column -> the field it fills).

    A field no column fills expects a column of its own name, or the one ``mapping`` names:
    that is the name a missing-column failure shows.
    """
    by_name = {f.name: f for f in fields}
    mapping = dict(mapping or {})
    for field_name in mapping.values():
        if field_name not in by_name:
            raise FieldValueError(field_name, "the mapping names a field the form does not have.")
    present = {c: f for c, f in mapping.items() if c in columns}
    pairs, _, _ = map_columns(list(columns), list(fields), present)
    if require_columns is None:
        wanted = [f.name for f in fields if not f.read_only and f.type != "signature"]
    else:
        wanted = list(require_columns)
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            raise ValueError(f"require_columns names fields the form does not have: {unknown}")
    wanted += [f.name for f in fields if f.required] + list(mapping.values())
    filled_by = {f: c for c, f in pairs.items()}
    named_by = {f: c for c, f in mapping.items()}
    expected = {n: named_by.get(n) or filled_by.get(n) or n for n in dict.fromkeys(wanted)}
    return expected, {c: by_name[f] for c, f in pairs.items()}


def manifest_check(
    manifest: RowsSource,
    expected_rows: int | None = None,
    *,
    input_rows: RowsSource | None = None,
    template_fields: Any = None,
    mapping: Mapping[str, str] | None = None,
) -> QualityReport:
    """Check a fill's manifest: one row per input row, ok with a file or a recorded error.

    ``expected_rows`` defaults to the number of ``input_rows``. With the input rows, two
    rows may share a sha256 only if they fill the same values (compared as the form takes
    them when ``template_fields`` is given, else every column as text); without them,
    every sha256 must be distinct.
    """
    started = time.perf_counter()
    table = read_table(manifest)
    keys = None
    if input_rows is not None:
        inputs = read_table(input_rows)
        if expected_rows is None:
            expected_rows = inputs.num_rows
        keys = input_keys(inputs, template_fields, mapping)
    frame, row_column = manifest_frame(table, keys)
    suite = manifest_suite(expected_rows, frame.columns)
    return _run("manifest", describe(manifest), frame, suite, row_column, started)


def input_keys(
    inputs: pa.Table, template_fields: Any = None, mapping: Mapping[str, str] | None = None
) -> pd.Series:
    """A hash of what each input row fills, indexed by row number (1-based)."""
    if template_fields is None:
        keys = values_key(text_frame(inputs), None)
    else:
        fields = fields_of(template_fields)
        _, pairs = column_plan(inputs.column_names, fields, mapping, require_columns=[])
        keys = values_key(input_frame(inputs, pairs, row_id_name(pairs)), pairs)
    keys.index = pd.RangeIndex(1, inputs.num_rows + 1)
    return keys


CHECKS: dict[str, Callable[..., QualityReport]] = {
    "schema": schema_check,
    "input": input_rows_check,
    "manifest": manifest_check,
}


def run_check(
    kind: str, *args: Any, save_to: str | os.PathLike[str] | None = None, **kwargs: Any
) -> QualityReport:
    """Run the ``kind`` check, save its JSON to ``save_to``, and fail the task if it failed.

    For ``@task`` code: ``run_check("input", rows, form.fields, save_to=out / "input.json")``.
    """
    if kind not in CHECKS:
        raise ValueError(f"kind must be one of {sorted(CHECKS)}, not {kind!r}.")
    return enforce(CHECKS[kind](*args, **kwargs), save_to=save_to)


def describe(source: object) -> str:
    """How a report names what it checked."""
    if isinstance(source, pd.DataFrame | pa.Table):
        return f"a {type(source).__name__}"
    return str(source)


def _run(
    kind: str, source: str, frame: pd.DataFrame, suite: Any, row_column: str, started: float
) -> QualityReport:
    gx_started = time.perf_counter()
    result = validate(kind, frame, suite, row_column)
    gx_seconds = time.perf_counter() - gx_started
    report = QualityReport.from_result(kind, source, len(frame), result, row_column)
    report.gx_seconds = gx_seconds
    report.seconds = time.perf_counter() - started
    return report
