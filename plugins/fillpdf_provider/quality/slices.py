"""Checks of a million rows in the memory of a slice: tables read in slices, GX results joined.

A row-by-row expectation (a value in a set, a date, not null) gives the same outcome on a
table as on its slices taken in turn, once their counts are added up and their samples
(the first offending rows, in row order) put one after the other. So the input and manifest
checks build their GX frame for ``SLICE_ROWS`` rows at a time and join the results here;
the few expectations that span rows (the row count, unique values) are run on compact
frames instead (``checks.manifest_check``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from fillpdf_provider.engine.batch import read_batches, read_columns
from fillpdf_provider.quality.context import SAMPLE_SIZE
from fillpdf_provider.quality.frames import RowsSource, read_table

#: Rows of one GX frame: about 100 MB of pandas at the widest tables this checks.
SLICE_ROWS = 100_000


def table_slices(source: RowsSource, slice_rows: int = SLICE_ROWS) -> Iterator[pa.Table]:
    """The rows of ``source`` as tables of at most ``slice_rows`` rows, read as
    ``frames.read_table`` reads them (CSV all as text, Parquet typed); a file is streamed.
    A table without rows still gives one slice, with its columns."""
    if isinstance(source, str | os.PathLike) and Path(source).suffix.lower() not in (
        ".parquet",
        ".pq",
    ):
        path = Path(source)
        if not path.exists():
            read_table(path)  # its FileNotFoundError says what to give
        pending: list[pa.RecordBatch] = []
        size = 0
        for batch in read_batches(path, batch_rows=slice_rows):  # blocks of about 1 MB
            if size + batch.num_rows > slice_rows and pending:
                yield pa.Table.from_batches(pending)
                pending, size = [], 0
            pending.append(batch)
            size += batch.num_rows
        if pending:
            yield pa.Table.from_batches(pending)
        else:
            yield pa.table({name: pa.array([], pa.string()) for name in read_columns(path)})
        return
    if isinstance(source, str | os.PathLike):
        import pyarrow.parquet as pq

        path = Path(source)
        if not path.exists():
            read_table(path)
        parquet = pq.ParquetFile(path)
        yielded = False
        for batch in parquet.iter_batches(batch_size=slice_rows):
            yielded = True
            yield pa.Table.from_batches([batch], schema=parquet.schema_arrow)
        if not yielded:
            yield parquet.schema_arrow.empty_table()
        return
    table = read_table(source)
    if table.num_rows == 0:
        yield table
    for start in range(0, table.num_rows, slice_rows):
        yield table.slice(start, slice_rows)


def split_suite(suite: Any, keep: Callable[[Any], bool]) -> tuple[Any, Any]:
    """``suite``'s expectations in two suites: those ``keep`` takes, and the others (each a
    copy with its meta, so a failure keeps its wording and its place)."""
    import great_expectations as gx

    taken, left = (
        gx.ExpectationSuite(name=f"{suite.name}_a"),
        gx.ExpectationSuite(name=f"{suite.name}_b"),
    )
    for expectation in suite.expectations:
        (taken if keep(expectation) else left).add_expectation(
            expectation.copy(update={"id": None})
        )
    return taken, left


def order_of(outcome: dict[str, Any]) -> int:
    """An outcome's place in its suite (``suites.SuiteBuilder`` writes it in the meta)."""
    return int((outcome["expectation_config"].get("meta") or {}).get("order", 0))


def join_results(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """GX validation results of the same expectations on slices of one table, as one result
    on the whole table: counts added, samples in row order up to ``SAMPLE_SIZE``."""
    by_order: dict[int, list[dict[str, Any]]] = {}
    for result in results:
        for outcome in result.get("results", []):
            by_order.setdefault(order_of(outcome), []).append(outcome)
    outcomes = [join_outcomes(by_order[order]) for order in sorted(by_order)]
    joined = dict(results[0]) if results else {}
    joined["results"] = outcomes
    joined["success"] = all(o.get("success") for o in outcomes)
    passed = sum(1 for o in outcomes if o.get("success"))
    joined["statistics"] = {
        "evaluated_expectations": len(outcomes),
        "successful_expectations": passed,
        "unsuccessful_expectations": len(outcomes) - passed,
        "success_percent": 100.0 * passed / len(outcomes) if outcomes else None,
    }
    return joined


_SUMMED = ("element_count", "unexpected_count", "missing_count")
_LISTS = ("partial_unexpected_list", "partial_unexpected_index_list")


def join_outcomes(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One expectation's outcomes on consecutive slices as its outcome on them all."""
    joined = dict(outcomes[0])
    joined["success"] = all(o.get("success") for o in outcomes)
    errors = [o for o in outcomes if (o.get("exception_info") or {}).get("raised_exception")]
    if errors:
        joined["exception_info"] = errors[0]["exception_info"]
    joined["result"] = with_percents(_joined_result([o.get("result") or {} for o in outcomes]))
    return joined


def _joined_result(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Slices' GX ``result`` parts: counts added, sample lists in order up to the sample."""
    result = dict(parts[0])
    for key in _SUMMED:
        if any(key in p for p in parts):
            result[key] = sum(int(p.get(key) or 0) for p in parts)
    for key in _LISTS:
        if any(key in p for p in parts):
            result[key] = [v for p in parts for v in (p.get(key) or [])][:SAMPLE_SIZE]
    if "partial_unexpected_counts" in result:
        result["partial_unexpected_counts"] = _value_counts(
            result.get("partial_unexpected_list") or []
        )
    return result


def with_percents(result: dict[str, Any]) -> dict[str, Any]:
    """GX's percentages worked out again from the (joined or corrected) counts."""
    if "element_count" not in result or "unexpected_count" not in result:
        return result
    elements, unexpected = int(result["element_count"]), int(result["unexpected_count"])
    missing = int(result.get("missing_count") or 0)
    present = elements - missing
    out = dict(result)
    if "missing_percent" in out:
        out["missing_percent"] = 100.0 * missing / elements if elements else None
    if "unexpected_percent_total" in out:
        out["unexpected_percent_total"] = 100.0 * unexpected / elements if elements else None
    for key in ("unexpected_percent", "unexpected_percent_nonmissing"):
        if key in out:
            out[key] = 100.0 * unexpected / present if present else None
    return out


def _value_counts(values: list[Any]) -> list[dict[str, Any]]:
    counts: dict[str, tuple[Any, int]] = {}
    for value in values:
        key = repr(value)
        counts[key] = (value, counts.get(key, (value, 0))[1] + 1)
    ranked = sorted(counts.values(), key=lambda vc: -vc[1])
    return [{"value": v, "count": n} for v, n in ranked]


def hashes(column: pa.ChunkedArray | pa.Array) -> Any:
    """A 64-bit hash per value (numpy ``uint64``; every null hashes alike): 8 bytes a row
    to find repeated values in, whose real values are then compared."""
    return pd.util.hash_array(column.to_numpy(zero_copy_only=False))
