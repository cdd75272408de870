"""One in-memory GX context per process, and the batch definitions the suites run on.

The context, its pandas data source and one asset per kind of check are made on first use
and reused by every later check in the process. GX itself takes seconds to import, so it
loads here on first use too: the package and the operator do not import it, and a DAG file
that uses them still parses fast.

GX talks to its own developers at INFO: importing it logs about 200 lines on how it
registers its public API and its metrics, and its ephemeral context one more (a temporary
docs folder). Its ``data_context.types.base`` logger sets its own level to INFO, so raising
the ``great_expectations`` logger's level does not reach that line. ``quiet_gx`` holds all
of them back, and only while GX code runs: a task log shows the check's own lines and real
warnings, and GX's loggers are left as GX set them for any other use in the process.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import warnings
from collections.abc import Iterator
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
GX_LOGGER = "great_expectations"


class _WarningsOnward(logging.Handler):
    """Passes GX's warnings and errors on to the root logger's handlers, as propagation
    would; its INFO and DEBUG records stop here."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger().handle(record)


_quiet_lock = threading.Lock()
_quiet_depth = 0
_quiet_saved = True
_onward = _WarningsOnward()


@contextlib.contextmanager
def quiet_gx() -> Iterator[None]:
    """While GX runs, only its warnings and errors reach the task log.

    The ``great_expectations`` logger stops propagating and hands WARNING and above to
    the root logger itself; every GX logger below it keeps its level and handlers, so one
    a user has set up still sees everything. Nested and concurrent uses share one switch:
    the first in turns it on, the last out puts back how the logger was.
    """
    global _quiet_depth, _quiet_saved
    gx_logger = logging.getLogger(GX_LOGGER)
    with _quiet_lock:
        if _quiet_depth == 0:
            _quiet_saved = gx_logger.propagate
            if _quiet_saved:  # a logger someone cut off from the root stays cut off
                gx_logger.propagate = False
                gx_logger.addHandler(_onward)
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0:
                gx_logger.removeHandler(_onward)
                gx_logger.propagate = _quiet_saved


@contextlib.contextmanager
def importing_gx() -> Iterator[None]:
    """Around ``import great_expectations``: quiet, and without the DeprecationWarnings GX's
    own modules raise as they load (they import ``sre_parse``), which no user can act on."""
    with quiet_gx(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=GX_LOGGER)
        yield


@functools.cache
def context() -> AbstractDataContext:
    """The process's ephemeral context, without progress bars (task logs are not a tty)."""
    with importing_gx():
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

    with quiet_gx():
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
        raise ValueError(f"kind {kind!r} is not a kind of check; use one of {', '.join(KINDS)}.")
    with quiet_gx():
        asset = _source().add_dataframe_asset(kind)
        return asset.add_batch_definition_whole_dataframe(f"{kind}_whole_frame")


def validate(
    kind: str,
    frame: pd.DataFrame,
    suite: ExpectationSuite,
    row_column: str,
    *,
    every_row: bool = False,
) -> dict[str, Any]:
    """Run ``suite`` on ``frame``; the JSON-able GX result, unexpected rows named by id.
    ``every_row`` lists every unexpected row (``unexpected_index_list``), not only the
    first ``SAMPLE_SIZE``: for a count of the rows that fail, which the caller then drops."""
    with quiet_gx():
        batch = batch_definition(kind).get_batch(batch_parameters={"dataframe": frame})
        result = batch.validate(
            suite,
            result_format={
                "result_format": "COMPLETE" if every_row else "SUMMARY",
                "unexpected_index_column_names": [row_column],
                "partial_unexpected_count": SAMPLE_SIZE,
            },
        )
        summary: dict[str, Any] = result.to_json_dict()
        return summary
