"""What a check found, in words a person acts on: the column, key or file, the offending
values as the user wrote them (a few, and how many in all), and what to do about it.
GX's own result travels along, for the JSON saved beside the outputs.

A suite's expectations carry their wording in their meta (see ``suites``): ``problem`` says
what is wrong with the rows that break it (``{is}``/``{has}`` agree with the count),
``fix`` what to do, ``subject`` what a failure names when not a column.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

TITLES = {"schema": "Schema", "input": "Input rows", "manifest": "Manifest"}
UNITS = {"schema": "entry"}  # what a row of the checked table is; "row" for the others
SHOWN_ROWS = 10  # row ids in a summary line; the JSON keeps GX's sample of 20
SHOWN_VALUES = 5
_PLURALS = {"row": "rows", "entry": "entries"}
#: Failures of the table's columns, not of some rows: every row would fail the fill.
WHOLE_TABLE = frozenset({"expect_column_to_exist", "fillpdf_column_rule"})
_VERBS = {"{is}": ("is", "are"), "{has}": ("has", "have")}


@dataclass(frozen=True)
class Failure:
    """One expectation that did not hold."""

    expectation: str
    column: str | None
    rule: str
    unexpected_count: int | None = None
    element_count: int | None = None
    sample_rows: tuple[int, ...] = ()
    sample_values: tuple[Any, ...] = ()
    field: str | None = None
    observed: Any = None
    error: str | None = None
    problem: str | None = None
    fix: str | None = None
    subject: str | None = None
    unit: str = "row"
    values_are_rows: bool = False  # the failing column is the row id: show values alone

    @property
    def where(self) -> str:
        """What the failure is about: ``column 'Plan' (field 'plan')``, ``key 'rect'``..."""
        if self.subject:
            return self.subject
        where = f"column {self.column!r}" if self.column else "table"
        if self.field and self.field != self.column:
            where += f" (field {self.field!r})"
        return where

    def what(self) -> str:
        """What is wrong, its verbs agreeing with the count of rows that break the rule."""
        if not self.problem:
            return f"break the rule {self.rule!r}"
        text, one = self.problem, self.unexpected_count == 1
        for marker, (singular, plural) in _VERBS.items():
            text = text.replace(marker, singular if one else plural)
        return text

    def line(self) -> str:
        """One line to act on: where, what is wrong and where it is, what to do."""
        tag = f"[{self.expectation}]"
        if self.error:
            return (
                f"- {self.where}: the check could not run: {self.error}. Check the "
                f"column's values and their type. {tag}"
            )
        if self.expectation == "expect_column_to_exist":
            return f"- {self.where} is missing: {_sentences(self.what(), self.fix)} {tag}"
        if self.unexpected_count is None:
            found = f", found {self.observed!r}" if self.observed is not None else ""
            return f"- {self.where}: {_sentences(self.what() + found, self.fix)} {tag}"
        units = _PLURALS.get(self.unit, self.unit)
        of = f" of {self.element_count}" if self.element_count is not None else ""
        text = f"{self.unexpected_count}{of} {units} {self.what()}"
        examples = self.examples()
        if examples:
            text += f": {examples}"
        return f"- {self.where}: {_sentences(text, self.fix)} {tag}"

    def examples(self) -> str:
        """A few offending values, each with the rows that hold it, and how many more."""
        pairs = list(zip(self.sample_rows, self.sample_values, strict=False))
        if not pairs and self.sample_values:  # values without row ids
            pairs = [(None, v) for v in self.sample_values]  # type: ignore[misc]
        if self.values_are_rows:
            return self._by_value(pairs)
        groups: dict[str, list[int | None]] = {}
        empty: list[int | None] = []
        for row, value in pairs:
            (empty if value is None else groups.setdefault(_show(value), [])).append(row)
        parts, shown = [], 0
        for text, rows in list(groups.items())[:SHOWN_VALUES]:
            rows = rows[: max(SHOWN_ROWS - shown, 1)]
            shown += len(rows)
            labels = self._labels(rows)
            parts.append(f"{text} ({labels})" if labels else text)
        if not parts and empty:
            rows = empty[:SHOWN_ROWS]
            shown += len(rows)
            parts.append(self._labels(rows))
        return _and_more(", ".join(parts), (self.unexpected_count or 0) - shown, self.unit)

    def _labels(self, rows: list[int | None]) -> str:
        named = [r for r in rows if r is not None]
        if not named:
            return ""
        if self.unit == "entry":  # schema entries, numbered as the engine's errors number them
            return ", ".join(f"schema[{r - 1}]" for r in named)
        label = "row" if len(named) == 1 else "rows"
        return f"{label} {', '.join(str(r) for r in named)}"

    def _by_value(self, pairs: list[tuple[Any, Any]]) -> str:
        counts: dict[str, int] = {}
        for _, value in pairs:
            counts[_show(value)] = counts.get(_show(value), 0) + 1
        shown = list(counts.items())[:SHOWN_VALUES]
        units = _PLURALS.get(self.unit, self.unit)
        text = ", ".join(f"{v} ({n} {units})" if n > 1 else v for v, n in shown)
        return _and_more(text, (self.unexpected_count or 0) - sum(n for _, n in shown), self.unit)

    def as_dict(self) -> dict[str, Any]:
        return {
            "expectation": self.expectation,
            "column": self.column,
            "field": self.field,
            "rule": self.rule,
            "unexpected_count": self.unexpected_count,
            "element_count": self.element_count,
            "sample_rows": list(self.sample_rows),
            "sample_values": list(self.sample_values),
            "observed": self.observed,
            "error": self.error,
            "fix": self.fix,
            "message": self.line()[2:],
        }


def _sentences(first: str, fix: str | None) -> str:
    """``first`` ended as a sentence, then the fix."""
    if not fix:
        return first if first.endswith((".", "?")) else first + "."
    return f"{first if first.endswith(('.', '?')) else first + '.'} {fix}"


def _and_more(text: str, more: int, unit: str) -> str:
    if more <= 0:
        return text
    return f"{text} and {more} more {_PLURALS.get(unit, unit) if more > 1 else unit}"


@dataclass
class QualityReport:
    """The outcome of one suite on one table."""

    kind: str
    source: str
    success: bool
    rows: int
    expectations: int
    failures: list[Failure]
    seconds: float = 0.0
    gx_seconds: float = 0.0
    results: dict[str, Any] = field(default_factory=dict, repr=False)
    saved_to: str | None = None
    bad_rows: int | None = None
    """Rows the failures concern, where a tolerance was given (``checks.tolerate``)."""
    failed_rows_allowed: int | None = None
    """The fill's tolerance (``max_failed_rows``) as a count of rows, where one was given."""

    @classmethod
    def from_result(
        cls, kind: str, source: str, rows: int, result: dict[str, Any], row_column: str
    ) -> QualityReport:
        """Read GX's validation result (``to_json_dict`` form, SUMMARY format)."""
        outcomes = result.get("results", [])
        failed = [r for r in outcomes if not r.get("success")]
        failed.sort(key=lambda r: (r["expectation_config"].get("meta") or {}).get("order", 0))
        unit = UNITS.get(kind, "row")
        return cls(
            kind=kind,
            source=source,
            success=bool(result.get("success")) and not failed,
            rows=rows,
            expectations=len(outcomes),
            failures=[_failure(r, row_column, unit) for r in failed],
            results=_plain(result),
        )

    def summary(self) -> str:
        """A multi-line summary: the verdict, then one line per failed expectation."""
        verdict = "passed" if self.success else "FAILED"
        unit = UNITS.get(self.kind, "row")
        head = (
            f"{TITLES.get(self.kind, self.kind)} check of {self.source} {verdict}: "
            f"{len(self.failures)} of {self.expectations} expectations failed on "
            f"{self.rows} {_PLURALS[unit] if self.rows != 1 else unit} ({self.seconds:.2f} s)."
        )
        lines = [head + self._tolerance(), *(f.line() for f in self.failures)]
        if self.saved_to:
            lines.append(f"Results: {self.saved_to}")
        return "\n".join(lines)

    @property
    def fails_whole_table(self) -> bool:
        """A failure of a column (or of GX itself), not of some rows: never tolerated."""
        return any(f.expectation in WHOLE_TABLE or f.error for f in self.failures)

    def _tolerance(self) -> str:
        """What the fill's tolerance makes of the failing rows, where one was given."""
        allowed = self.failed_rows_allowed
        if allowed is None or not self.failures:
            return ""
        bad = self.bad_rows or 0
        rows = f"{bad} {'row' if bad == 1 else 'rows'}"
        if self.fails_whole_table:
            if not allowed:
                return ""
            return (
                f" A missing or mistaken column fails every row, whatever max_failed_rows "
                f"({allowed}) allows."
            )
        if self.success:
            return (
                f" {rows} with values the form can't take, within max_failed_rows ({allowed}): "
                f"the fill records {'it' if bad == 1 else 'them'} as failed and fills the rest."
            )
        return (
            f" {rows} {'has' if bad == 1 else 'have'} values the form can't take; "
            f"max_failed_rows allows {allowed}: fix the rows, or raise max_failed_rows to "
            f"{bad} to fill the rest."
        )

    def brief(self) -> dict[str, Any]:
        """The report without GX's result: for an XCom or a log."""
        return {
            "kind": self.kind,
            "source": self.source,
            "success": self.success,
            "rows": self.rows,
            "expectations": self.expectations,
            "failed": len(self.failures),
            "failures": [f.as_dict() for f in self.failures],
            "seconds": round(self.seconds, 3),
            "gx_seconds": round(self.gx_seconds, 3),
            "results": self.saved_to,
            "bad_rows": self.bad_rows,
            "failed_rows_allowed": self.failed_rows_allowed,
        }

    def to_json(self) -> str:
        """The brief and GX's full validation result, as JSON."""
        data = {**self.brief(), "validation": self.results}
        return json.dumps(_plain(data), indent=2, ensure_ascii=False, allow_nan=False)


def save_report(
    report: QualityReport, location: str | os.PathLike[str], conn_id: str | None = None
) -> str:
    """Publish the report's JSON whole at ``location``, a local path or an object-storage URI."""
    from fillpdf_provider.storage import Store

    text = str(location)
    parent, _, name = text.replace("\\", "/").rpartition("/")
    Store(parent or ".", conn_id).write(name, report.to_json().encode("utf-8"))
    report.saved_to = text
    return text


def enforce(
    report: QualityReport,
    save_to: str | os.PathLike[str] | None = None,
    conn_id: str | None = None,
) -> QualityReport:
    """Save the results if asked, then fail the task with the summary if the check failed.

    ``AirflowFailException`` fails the task without retries: the data will not improve by
    trying again.
    """
    if save_to is not None:
        save_report(report, save_to, conn_id)
    if not report.success:
        from airflow.sdk.exceptions import AirflowFailException

        raise AirflowFailException(report.summary())
    return report


def _failure(outcome: dict[str, Any], row_column: str, unit: str = "row") -> Failure:
    config = outcome["expectation_config"]
    kwargs, meta = config.get("kwargs") or {}, config.get("meta") or {}
    result = _plain(outcome.get("result") or {})
    columns = _columns(kwargs)
    samples = result.get("partial_unexpected_index_list") or []
    rows = tuple(int(s[row_column]) for s in samples if s.get(row_column) is not None)
    values = tuple(_sample_value(s, columns) for s in samples)
    return Failure(
        expectation=config["type"],
        column=", ".join(columns) or None,
        rule=meta.get("rule", config["type"]),
        unexpected_count=result.get("unexpected_count"),
        element_count=result.get("element_count"),
        sample_rows=rows,
        sample_values=values,
        field=meta.get("field"),
        observed=result.get("observed_value"),
        error=_error(outcome.get("exception_info") or {}),
        problem=meta.get("problem"),
        fix=meta.get("fix"),
        subject=meta.get("subject"),
        unit=unit,
        values_are_rows=columns == [row_column],
    )


def _columns(kwargs: dict[str, Any]) -> list[str]:
    if kwargs.get("column") is not None:
        return [kwargs["column"]]
    if kwargs.get("column_A") is not None:
        return [kwargs["column_A"], kwargs["column_B"]]
    return list(kwargs.get("column_list") or [])


def _sample_value(sample: dict[str, Any], columns: list[str]) -> Any:
    if len(columns) == 1:
        return sample.get(columns[0])
    return tuple(sample.get(c) for c in columns) if columns else None


def _error(info: dict[str, Any]) -> str | None:
    """The exception message, whether GX gives it flat or per metric."""
    if info.get("raised_exception"):
        return str(info.get("exception_message"))
    for value in info.values():
        if isinstance(value, dict) and value.get("raised_exception"):
            return str(value.get("exception_message"))
    return None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _plain(value: Any) -> Any:
    """JSON-safe: numpy scalars as Python, NaN and infinities as null, tuples as lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, str | bytes):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
