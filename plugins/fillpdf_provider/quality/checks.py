"""The three checks: a conversion schema, input rows against a form, a fill's manifest.

Each builds its frame and suite, runs GX and returns a ``QualityReport``. None of them fails
a task by itself (``enforce`` does), so tests, scripts and DAGs share them. Each runs with
GX's own log lines held back (``quiet_gx``), and its report quotes the values as the rows
or the schema hold them, not as the suite compared them (trimmed, lowercased, as floats).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from fillpdf_provider.engine.coerce import to_text
from fillpdf_provider.engine.columns import (
    ColumnPlan,
    check_mapping,
    normalise,
    plan_columns,
    suggest,
)
from fillpdf_provider.engine.dates import readable
from fillpdf_provider.engine.fillable import date_formats
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.operators.batch import failure_limit
from fillpdf_provider.quality.context import quiet_gx, validate
from fillpdf_provider.quality.frames import (
    ROW,
    RowsSource,
    input_frame,
    manifest_frame,
    row_id_name,
    schema_frame,
    text_frame,
    values_key,
)
from fillpdf_provider.quality.manifest_whole import ManifestWhole, on_repeats, on_row_count
from fillpdf_provider.quality.report import Failure, QualityReport, enforce
from fillpdf_provider.quality.slices import SLICE_ROWS, join_results, split_suite, table_slices
from fillpdf_provider.quality.suites import input_suite, manifest_suite, schema_suite

SchemaEntries = Sequence[Field | Mapping[str, Any]]
INSPECT = "`fillpdf inspect FORM.pdf` lists the fields."
SCHEMA_DEFAULTS = {"page": 0, "confidence": 1.0}  # as schema_frame reads an entry without them
RECT_EDGES = {"x0", "y0", "x1", "y1", "page_left", "page_bottom", "page_right", "page_top"}


def fields_of(template_fields: Any) -> list[Field]:
    """Fields from a list of ``Field`` or schema dicts, or anything with ``.fields``."""
    entries = getattr(template_fields, "fields", template_fields)
    return [f if isinstance(f, Field) else Field.from_dict(f) for f in entries]


def schema_check(
    schema: SchemaEntries, page_sizes: Sequence[Sequence[float]], *, source: str = "a schema"
) -> QualityReport:
    """Check a conversion schema against its document.

    ``page_sizes`` has one entry per page: ``(width, height)`` or the page's visible box
    ``(left, bottom, right, top)`` in PDF points (see ``frames.page_boxes``).
    """
    started = time.perf_counter()
    with quiet_gx():
        frame = schema_frame(schema, page_sizes)
        report = _run("schema", source, frame, schema_suite(len(page_sizes)), ROW, started)
    entries = [e.to_dict() if isinstance(e, Field) else dict(e) for e in schema]
    report.failures = [_schema_failure(f, entries) for f in report.failures]
    return report


def input_rows_check(
    rows: RowsSource,
    template_fields: Any,
    mapping: Mapping[str, str | None] | None = None,
    *,
    require_columns: Iterable[str] | None = None,
    strict_columns: bool = False,
    used: Collection[str] = (),
    date_formats: Mapping[str, str | None] | None = None,
    max_failed_rows: int | float | str | None = None,
    slice_rows: int = SLICE_ROWS,
) -> QualityReport:
    """Check rows (a CSV read as text, a Parquet file or a DataFrame) against a form's fields.

    Columns fill fields by the batch's rule (``engine.columns``); ``mapping`` is column ->
    field, as the batch takes it. A column must be there for each field the form requires,
    each field the mapping fills and each field ``require_columns`` names; other fields may
    stay empty. A column that looks like a field no column fills fails the check, as, with
    ``strict_columns``, does every column that fills nothing; ``used`` names columns put to
    another use (the file names), which are neither. A date is one in the form's format
    (``date_formats``, by default the template's own where it has them) or in ISO 8601.
    Every expectation here is row by row, so a file is checked ``slice_rows`` rows at a
    time: memory stays that of one slice however long the file (and, with a tolerance, a
    few bytes for each failing row).

    ``max_failed_rows`` is the fill's tolerance (a count, or a fraction of the rows below 1):
    rows whose values the form can't take would be the fill's failed rows, so the check
    passes while no more rows than it allows fail, and its summary names it. A missing or
    mistaken column fails every row: never tolerated.
    """
    started = time.perf_counter()
    counting = max_failed_rows is not None
    bad_rows: set[int] = set()
    fields = fields_of(template_fields)
    if date_formats is None:
        date_formats = dates_of(template_fields)
    unread = {n for n, f in date_formats.items() if f and not readable(f)}
    results: list[dict[str, Any]] = []
    cells: dict[tuple[str, int], Any] = {}
    total, gx_seconds, suite = 0, 0.0, None
    for piece in table_slices(rows, slice_rows):
        if suite is None:
            columns = piece.column_names
            expected, plan = column_plan(columns, fields, mapping, require_columns, used)
            pairs = filled_fields(plan, fields)
            near = near_columns(columns, expected, plan, mapping)
            row_column = row_id_name(pairs)
        frame = input_frame(piece, pairs, row_column, date_formats, first_row=total + 1)
        with quiet_gx():
            if suite is None:
                suite = input_suite(
                    expected, pairs, frame.columns, fields=fields, near=near,
                    mapped=set(mapping or ()), unchecked_dates=unread,
                )  # fmt: skip
            gx_started = time.perf_counter()
            result = validate("input", frame, suite, row_column)
            if counting and _samples_cut_short(result):  # every failing row, to count them
                result = validate("input", frame, suite, row_column, every_row=True)
            gx_seconds += time.perf_counter() - gx_started
        bad_rows |= _failing_rows(result, row_column)
        _keep_written(result, piece, total, row_column, cells)
        results.append(result)
        total += piece.num_rows
    report = QualityReport.from_result(
        "input", describe(rows), total, join_results(results), row_column
    )
    report.gx_seconds, report.seconds = gx_seconds, time.perf_counter() - started
    report.expectations += column_checks(columns)
    report.failures = [
        *column_failures(plan, expected, strict_columns),
        *(_as_written(f, cells) for f in report.failures),
    ]
    report.success = report.success and not report.failures
    if counting:
        tolerate(report, len(bad_rows), failure_limit(max_failed_rows, total))
    return report


def column_checks(columns: Sequence[str]) -> int:
    """What the column rule checks: each of the rows' columns, and whether any fills a
    field (a report counts them with GX's expectations)."""
    return len(columns) + 1


def tolerate(report: QualityReport, bad_rows: int, allowed: int) -> None:
    """Pass ``report`` if its failures are of ``bad_rows`` rows, no more than the fill's
    tolerance ``allowed``: the fill records those rows as failed and fills the rest. Its
    summary names the tolerance either way."""
    report.bad_rows, report.failed_rows_allowed = bad_rows, allowed
    if report.failures and not report.fails_whole_table and bad_rows <= allowed:
        report.success = True


def _samples_cut_short(result: dict[str, Any]) -> bool:
    """Whether a failed outcome has more failing rows than its samples list: only then does
    counting the rows need ``validate(every_row=True)``."""
    for outcome in result.get("results", []):
        part = outcome.get("result") or {}
        listed = len(part.get("partial_unexpected_index_list") or [])
        if not outcome.get("success") and (part.get("unexpected_count") or 0) > listed:
            return True
    return False


def _failing_rows(result: dict[str, Any], row_column: str) -> set[int]:
    """The ids of the rows each failed outcome lists: in full where ``validate(every_row=
    True)`` listed them (those lists then leave the result, which keeps only its samples),
    else its samples, which ``_samples_cut_short`` found to be all of them."""
    rows: set[int] = set()
    for outcome in result.get("results", []):
        part = outcome.get("result") or {}
        listed = part.pop("unexpected_index_list", None)
        if listed is None:
            listed = part.get("partial_unexpected_index_list")
        for sample in listed or []:
            if isinstance(sample, dict) and sample.get(row_column) is not None:
                rows.add(int(sample[row_column]))
        part.pop("unexpected_list", None)
        part.pop("unexpected_index_query", None)
    return rows


def _keep_written(
    result: dict[str, Any],
    piece: pa.Table,
    offset: int,
    row_column: str,
    cells: dict[tuple[str, int], Any],
) -> None:
    """The cells, as the slice ``piece`` holds them, of the rows a failure samples."""
    for outcome in result.get("results", []):
        column = (outcome["expectation_config"].get("kwargs") or {}).get("column")
        samples = (outcome.get("result") or {}).get("partial_unexpected_index_list") or []
        if outcome.get("success") or not isinstance(column, str):
            continue
        if column not in piece.column_names:
            continue
        for sample in samples:
            row = sample.get(row_column)
            if row is not None and 0 < int(row) - offset <= piece.num_rows:
                cells[(column, int(row))] = _cell(piece.column(column)[int(row) - offset - 1])


def dates_of(template: Any) -> dict[str, str | None]:
    """Each date field's format, where ``template`` knows them (a form, not a list)."""
    return date_formats(template) if hasattr(template, "date_format") else {}


def filled_fields(plan: ColumnPlan, fields: Sequence[Field]) -> dict[str, Field]:
    """Each column that fills a field, and that field."""
    by_name = {f.name: f for f in fields}
    return {column: by_name[name] for column, name in plan.pairs.items()}


def column_plan(
    columns: Sequence[str],
    fields: Sequence[Field],
    mapping: Mapping[str, str | None] | None = None,
    require_columns: Iterable[str] | None = None,
    used: Collection[str] = (),
) -> tuple[dict[str, str], ColumnPlan]:
    """(field -> the column that must fill it, the columns' plan).

    A field no column fills expects a column of its own name, or the one ``mapping`` names:
    that is the name a missing-column failure shows. A mapped column the rows lack is such
    a failure, not an error, so the report lists it with everything else.
    """
    mapping = dict(mapping or {})
    check_mapping(mapping, {f.name for f in fields})
    present = {c: f for c, f in mapping.items() if c in columns}
    plan = plan_columns(list(columns), list(fields), present, used=used)
    named_by = {f: c for c, f in mapping.items() if f}
    wanted = _wanted(fields, require_columns) + list(named_by)
    filled_by = {f: c for c, f in plan.pairs.items()}
    expected = {n: named_by.get(n) or filled_by.get(n) or n for n in dict.fromkeys(wanted)}
    return expected, plan


def _wanted(fields: Sequence[Field], require_columns: Iterable[str] | None) -> list[str]:
    """The fields the rows must fill: those asked for, and every field the form marks
    required."""
    wanted = list(require_columns or ())
    _refuse_unknown(wanted, fields)
    return wanted + [f.name for f in fields if f.required]


def _refuse_unknown(names: Sequence[str], fields: Sequence[Field]) -> None:
    """``require_columns`` naming what is not a field is refused, with the near fields."""
    unknown = [n for n in names if n not in {f.name for f in fields}]
    if not unknown:
        return
    listed = ", ".join(repr(n) for n in unknown)
    which = "which is not a field" if len(unknown) == 1 else "which are not fields"
    guesses = suggest(unknown, list(fields))
    guess = f" (did you mean {' or '.join(repr(g) for g in guesses.values())}?)" if guesses else ""
    raise ValueError(f"require_columns names {listed}, {which} of the form{guess}. {INSPECT}")


def near_columns(
    columns: Sequence[str],
    expected: Mapping[str, str],
    plan: ColumnPlan,
    mapping: Mapping[str, str | None] | None = None,
) -> dict[str, list[str]]:
    """For each field whose column is missing, the rows' unmatched column that looks like it
    (or, for a column the mapping names, like that column): a missing column's "did you
    mean"."""
    missing = {f: c for f, c in expected.items() if c not in columns}
    mapped = set(mapping or ())
    near: dict[str, list[str]] = {}
    for column, field_name in plan.near.items():
        if field_name in missing and missing[field_name] not in mapped:
            near.setdefault(field_name, []).append(column)
    unmatched = [*plan.near, *plan.not_used]
    for field_name, column in missing.items():
        if column in mapped:
            near[field_name] = difflib.get_close_matches(column, unmatched, n=3, cutoff=0.5)
    return near


COLUMN_RULE = "a column fills the field of its name, or the field a mapping names"


def column_failures(
    plan: ColumnPlan, expected: Mapping[str, str], strict: bool = False
) -> list[Failure]:
    """The columns to fix, as the report's first failures: one that looks like a field no
    column fills (unless a missing column's failure already says so) and, with ``strict``,
    every column that fills nothing."""
    failures = []
    if plan.fills_nothing and (plan.near or plan.not_used):
        failures.append(
            Failure(
                "fillpdf_column_rule", None, COLUMN_RULE, subject="the rows",
                problem="no column fills a field of the form, so every PDF would be blank",
                fix="Name the columns after the fields, or map them (mapping=); "
                f"{INSPECT}",
            )
        )  # fmt: skip
    for column, field_name in plan.near.items():
        if field_name in expected:
            continue  # the field's missing-column failure names this column
        failures.append(
            Failure(
                "fillpdf_column_rule", column, COLUMN_RULE, field=field_name,
                problem=f"matches no field but looks like {field_name!r}, which no column "
                "fills",
                fix=f"Map it (mapping={{{column!r}: {field_name!r}}}), rename the column to "
                f"{field_name!r}, or map it to '' to leave it out.",
            )
        )  # fmt: skip
    if strict:
        failures.extend(_not_used_failure(plan, column) for column in plan.not_used)
    return failures


def _not_used_failure(plan: ColumnPlan, column: str) -> Failure:
    """A strict check's failure for a column that fills nothing: the field it matches that
    another column fills, or the unfilled fields that fit it."""
    problem, target = "matches no field (strict columns)", "a field"
    if column in plan.shadowed:
        field_name, filler = plan.shadowed[column]
        problem = f"matches {field_name!r}, which column {filler!r} already fills (strict columns)"
        target = "another field"
    elif fits := plan.fits.get(column):
        target = " or ".join(repr(f) for f in fits) + ", which no column fills,"
    example = (plan.fits.get(column) or ["FIELD"])[0]
    return Failure(
        "fillpdf_column_rule", column, COLUMN_RULE, problem=problem,
        fix=f"Map it to {target} (mapping={{{column!r}: {example!r}}}), or to '' to leave it "
        "out.",
    )  # fmt: skip


def manifest_check(
    manifest: RowsSource,
    expected_rows: int | None = None,
    *,
    input_rows: RowsSource | None = None,
    template_fields: Any = None,
    mapping: Mapping[str, str | None] | None = None,
    slice_rows: int = SLICE_ROWS,
) -> QualityReport:
    """Check a fill's manifest: one row per input row, ok with a file or a recorded error.

    ``expected_rows`` defaults to the number of ``input_rows``. With the input rows, two
    rows may share a sha256 only if they fill the same values (compared as the form takes
    them when ``template_fields`` is given, else every column as text); without them,
    every sha256 must be distinct.

    A million-row manifest is checked in the memory of ``slice_rows`` rows and a few bytes
    a row: the row-by-row expectations run slice by slice, the row count on a frame of one
    byte a row; row numbers, files and sha256 must be unique among the rows whose 64-bit
    hash repeats, checked on their real values.
    """
    started = time.perf_counter()
    keys = None
    if input_rows is not None:
        keys = input_key_array(input_rows, template_fields, mapping, slice_rows)
        if expected_rows is None:
            expected_rows = len(keys)
    whole = ManifestWhole.read(manifest, keys, slice_rows)
    del keys  # 8 bytes an input row, no longer needed
    gx_seconds = 0.0
    with quiet_gx():
        suite = manifest_suite(expected_rows, whole.columns)
        by_count, rest = split_suite(suite, on_row_count)
        by_values, row_wise = split_suite(rest, on_repeats)
        results = []
        for first, piece in whole.slices():
            frame, row_column = manifest_frame(
                piece, None, first_row=first, new_values=whole.new_values_of(first, piece)
            )
            gx_started = time.perf_counter()
            results.append(validate("manifest", frame, row_wise, row_column))
            gx_seconds += time.perf_counter() - gx_started
        gx_started = time.perf_counter()
        results.append(validate("manifest", whole.count_frame(), by_count, whole.row_column))
        repeats = validate("manifest", whole.repeats_frame(), by_values, whole.row_column)
        results.append(whole.as_on_every_row(repeats))
        gx_seconds += time.perf_counter() - gx_started
    report = QualityReport.from_result(
        "manifest", describe(manifest), whole.rows, join_results(results), whole.row_column
    )
    report.gx_seconds, report.seconds = gx_seconds, time.perf_counter() - started
    return report


def input_keys(
    inputs: pa.Table,
    template_fields: Any = None,
    mapping: Mapping[str, str | None] | None = None,
) -> pd.Series:
    """A hash of what each input row fills, indexed by row number (1-based)."""
    if template_fields is None:
        keys = values_key(text_frame(inputs), None)
    else:
        fields = fields_of(template_fields)
        _, plan = column_plan(inputs.column_names, fields, mapping)
        pairs = filled_fields(plan, fields)
        keys = values_key(input_frame(inputs, pairs, row_id_name(pairs)), pairs)
    keys.index = pd.RangeIndex(1, inputs.num_rows + 1)
    return keys


def input_key_array(
    input_rows: RowsSource,
    template_fields: Any = None,
    mapping: Mapping[str, str | None] | None = None,
    slice_rows: int = SLICE_ROWS,
) -> Any:
    """``input_keys`` of every input row, read a slice at a time: numpy ``uint64``, row
    ``n``'s key at ``n - 1`` (8 bytes a row, and no index to look row numbers up in)."""
    parts = [
        input_keys(piece, template_fields, mapping).to_numpy(np.uint64)
        for piece in table_slices(input_rows, slice_rows)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint64)


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


def _as_written(failure: Failure, cells: Mapping[tuple[str, int], Any]) -> Failure:
    """``failure`` quoting each sampled cell as the rows hold it (``cells``, by column and
    row): ``'Maybe'``, ``' Gold '`` or ``2``, where the suite compared ``maybe``, ``gold``
    and ``'2'``. Empty cells stay empty: a required value's failure names rows, not blanks."""
    rows, values = failure.sample_rows, failure.sample_values
    column = failure.column
    if column is None or not rows or len(rows) != len(values):
        return failure
    if any((column, row) not in cells for row in rows):
        return failure
    written = tuple(
        None if seen is None else cells[(column, row)]
        for row, seen in zip(rows, values, strict=True)
    )
    return dataclasses.replace(failure, sample_values=written)


def _cell(value: Any) -> Any:
    """A cell as it reads: text, numbers and booleans as they are, dates and others as text."""
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return to_text(value)


def _schema_failure(failure: Failure, entries: Sequence[Mapping[str, Any]]) -> Failure:
    """``failure`` quoting each sampled entry's value as the schema holds it (a page as
    ``1``, not ``1.0``; a rect whole), and a badly written name's fix with its example."""
    keys = {k.strip() for k in (failure.column or "").split(",")}
    key = "rect" if keys & RECT_EDGES else failure.column
    rows, seen = failure.sample_rows, failure.sample_values
    if key is None or not rows or len(rows) != len(seen) or max(rows) > len(entries):
        return failure
    default = SCHEMA_DEFAULTS.get(key)
    values = tuple(
        None if gx_value is None else entries[row - 1].get(key, default)
        for row, gx_value in zip(rows, seen, strict=True)
    )
    fix = failure.fix
    names = [v for v in values if isinstance(v, str) and normalise(v)]
    if failure.expectation == "expect_column_values_to_match_regex" and names and fix:
        fix = f"{fix.rstrip('.')}, e.g. {normalise(names[0])!r}."
    return dataclasses.replace(failure, sample_values=values, fix=fix)


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
