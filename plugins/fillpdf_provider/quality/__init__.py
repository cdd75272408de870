"""Data quality checks with Great Expectations: suites built in code for a conversion
schema, the rows of a mail merge and the manifest a fill writes, and a task that fails
with a readable summary when one of them does not hold.

Names load on first use: importing the package (as a DAG file does) does not import GX.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "QualityCheckOperator": "operator",
    "results_location": "operator",
    "Failure": "report",
    "QualityReport": "report",
    "enforce": "report",
    "save_report": "report",
    "input_rows_check": "checks",
    "manifest_check": "checks",
    "run_check": "checks",
    "schema_check": "checks",
    "page_boxes": "frames",
    "read_table": "frames",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
