"""One in-memory GX context per process, and the batch definitions the suites run on.

The context, its pandas data source and one asset per kind of check are made on first use
and reused by every later check in the process. GX itself takes seconds to import, so it
loads here on first use too: the package and the operator do not import it, and a DAG file
that uses them still parses fast.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from great_expectations import ExpectationSuite
    from great_expectations.core.batch_definition import BatchDefinition
    from great_expectations.data_context import AbstractDataContext

DATASOURCE = "fillpdf_quality"
KINDS = ("schema", "input", "manifest")
# SUMMARY keeps results bounded whatever the row count; the row ids name where it failed.
SAMPLE_SIZE = 20


@functools.cache
def context() -> AbstractDataContext:
    """The process's ephemeral context, without progress bars (task logs are not a tty)."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    return ctx


@functools.cache
def _source() -> Any:
    return context().data_sources.add_pandas(DATASOURCE)


@functools.cache
def batch_definition(kind: str) -> BatchDefinition:
    """A whole-dataframe batch definition for one kind of check (one asset per kind)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}.")
    asset = _source().add_dataframe_asset(kind)
    return asset.add_batch_definition_whole_dataframe(f"{kind}_whole_frame")


def validate(
    kind: str, frame: pd.DataFrame, suite: ExpectationSuite, row_column: str
) -> dict[str, Any]:
    """Run ``suite`` on ``frame``; the JSON-able GX result, unexpected rows named by id."""
    batch = batch_definition(kind).get_batch(batch_parameters={"dataframe": frame})
    result = batch.validate(
        suite,
        result_format={
            "result_format": "SUMMARY",
            "unexpected_index_column_names": [row_column],
            "partial_unexpected_count": SAMPLE_SIZE,
        },
    )
    return result.to_json_dict()
