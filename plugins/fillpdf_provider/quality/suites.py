"""The suites, built in code from what a check knows: the form's fields, the page count, how
many rows the input has.

Every expectation carries, in its meta, the rule in plain words and its place in the suite,
so a report lists failures in the order a reader would check them (columns first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import great_expectations as gx
import great_expectations.expectations as gxe
from great_expectations.expectations.row_conditions import Column

from fillpdf_provider.engine.batch import MANIFEST_SCHEMA
from fillpdf_provider.engine.coerce import FALSE_WORDS, TRUE_WORDS
from fillpdf_provider.engine.schema import FIELD_TYPES, Field
from fillpdf_provider.quality.context import context

NAME_PATTERN = r"^[a-z0-9_]+$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
ISO_DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
ISO_DATE_FORMAT = "%Y-%m-%d"
CHECKBOX_WORDS = sorted((TRUE_WORDS | FALSE_WORDS) - {""})
STATUSES = ("ok", "error")


class SuiteBuilder:
    """An ExpectationSuite grown one expectation at a time, each with its rule in words."""

    def __init__(self, name: str) -> None:
        context()  # a suite resolves the process's context as it grows
        self.suite = gx.ExpectationSuite(name=name)

    def add(self, expectation: type[gxe.Expectation], rule: str, **kwargs: Any) -> None:
        meta: dict[str, Any] = {"rule": rule, "order": len(self.suite.expectations)}
        if "field" in kwargs:
            meta["field"] = kwargs.pop("field")
        self.suite.add_expectation(expectation(meta=meta, **kwargs))


def schema_suite(page_count: int) -> gx.ExpectationSuite:
    """A conversion schema: names, types, pages, rects inside their page, confidence."""
    s = SuiteBuilder("fillpdf_schema")
    for column in ("name", "type", "page", "confidence"):
        s.add(gxe.ExpectColumnValuesToNotBeNull, f"every entry has a {column}", column=column)
    s.add(
        gxe.ExpectColumnValuesToMatchRegex,
        "names are lowercase letters, digits and _",
        column="name",
        regex=NAME_PATTERN,
    )
    s.add(gxe.ExpectColumnValuesToBeUnique, "names are unique", column="name")
    s.add(
        gxe.ExpectColumnValuesToBeInSet,
        f"type is one of {', '.join(FIELD_TYPES)}",
        column="type",
        value_set=list(FIELD_TYPES),
    )
    s.add(
        gxe.ExpectColumnValuesToBeBetween,
        f"page is one of the document's {page_count} pages, numbered from 0",
        column="page",
        min_value=0,
        max_value=max(page_count - 1, 0),
        strict_max=page_count == 0,  # a document without pages has no page number
    )
    for a, b, rule in (
        ("x0", "page_left", "the rect's left edge is on its page: x0 >= page_left"),
        ("y0", "page_bottom", "the rect's bottom edge is on its page: y0 >= page_bottom"),
        ("page_right", "x1", "the rect's right edge is on its page: x1 <= page_right"),
        ("page_top", "y1", "the rect's top edge is on its page: y1 <= page_top"),
    ):
        s.add(
            gxe.ExpectColumnPairValuesAToBeGreaterThanB, rule, column_A=a, column_B=b, or_equal=True
        )
    s.add(
        gxe.ExpectColumnPairValuesAToBeGreaterThanB,
        "the rect has a width: x1 > x0",
        column_A="x1",
        column_B="x0",
    )
    s.add(
        gxe.ExpectColumnPairValuesAToBeGreaterThanB,
        "the rect has a height: y1 > y0",
        column_A="y1",
        column_B="y0",
    )
    s.add(
        gxe.ExpectColumnValuesToBeBetween,
        "confidence is between 0 and 1",
        column="confidence",
        min_value=0,
        max_value=1,
    )
    return s.suite


def input_suite(
    expected: Mapping[str, str], pairs: Mapping[str, Field], present: Iterable[str]
) -> gx.ExpectationSuite:
    """Rows against a form: ``expected`` maps each field whose column must be there to that
    column's name; ``pairs`` maps each present column to the field it fills."""
    s = SuiteBuilder("fillpdf_input")
    present = set(present)
    for field_name, column in expected.items():
        s.add(
            gxe.ExpectColumnToExist,
            f"a column fills the form's field {field_name!r}",
            column=column,
            field=field_name,
        )
    for column, form_field in pairs.items():
        if column in present:
            _field_expectations(s, column, form_field)
    return s.suite


def _field_expectations(s: SuiteBuilder, column: str, f: Field) -> None:
    on = {"column": column, "field": f.name}
    if f.type == "checkbox":
        s.add(
            gxe.ExpectColumnValuesToBeInSet,
            "a checkbox value: true/false, yes/no, 1/0, x, on/off or empty",
            value_set=CHECKBOX_WORDS,
            **on,
        )
    elif f.type in ("radio", "choice"):
        options = list(f.options or ())
        allowed = {o.lower() for o in options}
        if len([o for o in options if o.lower() != "off"]) == 1:
            allowed |= TRUE_WORDS - {""}  # a one-option button also takes "yes", "x"...
        shown = ", ".join(options[:12]) + (", ..." if len(options) > 12 else "")
        s.add(
            gxe.ExpectColumnValuesToBeInSet,
            f"one of the options: {shown} (any case)",
            value_set=sorted(allowed),
            **on,
        )
    elif f.type == "date":
        s.add(
            gxe.ExpectColumnValuesToMatchRegex,
            "a date written YYYY-MM-DD",
            regex=ISO_DATE_PATTERN,
            **on,
        )
        s.add(
            gxe.ExpectColumnValuesToMatchStrftimeFormat,
            "a date that exists",
            strftime_format=ISO_DATE_FORMAT,
            **on,
        )
    elif f.max_length is not None:
        s.add(
            gxe.ExpectColumnValueLengthsToBeBetween,
            f"at most {f.max_length} characters",
            max_value=f.max_length,
            **on,
        )
    if f.required:
        s.add(gxe.ExpectColumnValuesToNotBeNull, "the form requires a value", **on)


def manifest_suite(expected_rows: int | None, present: Iterable[str]) -> gx.ExpectationSuite:
    """A fill's manifest: one row per input row, each ok with its file or a recorded error."""
    s = SuiteBuilder("fillpdf_manifest")
    present = set(present)
    for column in MANIFEST_SCHEMA.names:
        s.add(gxe.ExpectColumnToExist, "a manifest column", column=column)
    if expected_rows is not None:
        s.add(
            gxe.ExpectTableRowCountToEqual,
            f"one row per input row ({expected_rows})",
            value=expected_rows,
        )
    if "row" in present:
        s.add(gxe.ExpectColumnValuesToBeUnique, "each input row is listed once", column="row")
        if expected_rows is not None:
            s.add(
                gxe.ExpectColumnValuesToBeBetween,
                f"an input row number (1-{expected_rows})",
                column="row",
                min_value=1,
                max_value=expected_rows,
            )
    if "status" in present:
        s.add(gxe.ExpectColumnValuesToNotBeNull, "every row has a status", column="status")
        s.add(
            gxe.ExpectColumnValuesToBeInSet,
            "status is ok or error",
            column="status",
            value_set=list(STATUSES),
        )
        ok = Column("status") == "ok"
        for column in ("path", "sha256", "bytes", "pages"):
            if column in present:
                s.add(
                    gxe.ExpectColumnValuesToNotBeNull,
                    f"an ok row records its {column}",
                    column=column,
                    row_condition=ok,
                )
        if "error" in present:
            s.add(
                gxe.ExpectColumnValuesToNotBeNull,
                "a failed row records its error",
                column="error",
                row_condition=Column("status") == "error",
            )
    for column in ("bytes", "pages"):
        if column in present:
            s.add(
                gxe.ExpectColumnValuesToBeBetween,
                f"{column} > 0",
                column=column,
                min_value=0,
                strict_min=True,
            )
    if "sha256" in present:
        s.add(
            gxe.ExpectColumnValuesToMatchRegex,
            "a sha256 is 64 lowercase hex digits",
            column="sha256",
            regex=SHA256_PATTERN,
        )
        s.add(
            gxe.ExpectColumnValuesToBeUnique,
            "rows with different values have different sha256",
            column="sha256",
            row_condition=Column("new_values") == True,  # noqa: E712
        )
    if "path" in present:
        s.add(gxe.ExpectColumnValuesToBeUnique, "each row has its own file", column="path")
    return s.suite
