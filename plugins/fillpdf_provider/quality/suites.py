"""The suites, built in code from what a check knows: the form's fields, the page count, how
many rows the input has.

Every expectation carries, in its meta, the rule in plain words, its place in the suite (so
a report lists failures in the order a reader would check them: columns first), and the
words of its failure: the ``problem`` of the rows that break it (``{is}`` and ``{has}``
agree with their count), the ``fix`` (what to do), and, where a column name would not say
it, the ``subject`` (a schema's key, the manifest as a whole).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from fillpdf_provider.engine.batch import MANIFEST_SCHEMA
from fillpdf_provider.engine.coerce import (
    FALSE_SHOWN,
    TRUE_SHOWN,
    accepted_cells,
    sole_option,
    yes_no_sides,
)
from fillpdf_provider.engine.schema import FIELD_TYPES, Field
from fillpdf_provider.quality.context import context, importing_gx

with importing_gx():  # GX logs some 200 lines as it loads: they stay out of the task log
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.expectations.row_conditions import Column

NAME_PATTERN = r"^[a-z0-9_]+$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
ISO_DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
ISO_DATE_FORMAT = "%Y-%m-%d"
STATUSES = ("ok", "error")
SHOWN_OPTIONS = 12
CHECKBOX_FIX = "Write true/false, yes/no, y/n, 1/0, x or on/off, or leave the cell empty."
MANIFEST_FIX = "check that the file is the manifest a fill wrote."
SAME_RUN = "check that the manifest and the rows are from the same run."


class SuiteBuilder:
    """An ExpectationSuite grown one expectation at a time, each with its rule in words and
    the words of its failure."""

    def __init__(self, name: str) -> None:
        context()  # a suite resolves the process's context as it grows
        self.suite = gx.ExpectationSuite(name=name)

    def add(
        self,
        expectation: type[gxe.Expectation],
        rule: str,
        *,
        problem: str | None = None,
        fix: str | None = None,
        subject: str | None = None,
        **kwargs: Any,
    ) -> None:
        meta: dict[str, Any] = {"rule": rule, "order": len(self.suite.expectations)}
        for name, value in (("problem", problem), ("fix", fix), ("subject", subject)):
            if value is not None:
                meta[name] = value
        if "field" in kwargs:
            meta["field"] = kwargs.pop("field")
        self.suite.add_expectation(expectation(meta=meta, **kwargs))


def schema_suite(page_count: int) -> gx.ExpectationSuite:
    """A conversion schema: names, types, pages, rects inside their page, confidence."""
    s = SuiteBuilder("fillpdf_schema")
    types = ", ".join(FIELD_TYPES)
    for column, fix in (
        ("name", "Give every entry a name."),
        ("type", f"Give every entry a type: one of {types}."),
        ("page", "Give every entry the number of its page, from 0."),
        ("confidence", "Give every entry a confidence from 0 to 1, or leave the key out."),
    ):
        s.add(
            gxe.ExpectColumnValuesToNotBeNull,
            f"every entry has a {column}",
            problem=f"{{has}} no {column}",
            fix=fix,
            subject=f"key {column!r}",
            column=column,
        )
    s.add(
        gxe.ExpectColumnValuesToMatchRegex,
        "names are lowercase letters, digits and _",
        problem="{has} a name other than lowercase letters, digits and _",
        fix="Rename it with lowercase letters, digits and _.",  # checks add an example
        subject="key 'name'",
        column="name",
        regex=NAME_PATTERN,
    )
    s.add(
        gxe.ExpectColumnValuesToBeUnique,
        "names are unique",
        problem="{has} a name another entry has too",
        fix="Give each entry its own name.",
        subject="key 'name'",
        column="name",
    )
    s.add(
        gxe.ExpectColumnValuesToBeInSet,
        f"type is one of {types}",
        problem="{has} a type that is not a field type",
        fix=f"Use one of {types}.",
        subject="key 'type'",
        column="type",
        value_set=list(FIELD_TYPES),
    )
    s.add(
        gxe.ExpectColumnValuesToBeBetween,
        f"page is one of the document's {page_count} pages, numbered from 0",
        problem="{is} on a page the PDF does not have",
        fix=_pages_fix(page_count),
        subject="key 'page'",
        column="page",
        min_value=0,
        max_value=max(page_count - 1, 0),
        strict_max=page_count == 0,  # a document without pages has no page number
    )
    for a, b, edge, bound in (
        ("x0", "page_left", "left", "x0 >="),
        ("y0", "page_bottom", "bottom", "y0 >="),
        ("page_right", "x1", "right", "x1 <="),
        ("page_top", "y1", "top", "y1 <="),
    ):
        s.add(
            gxe.ExpectColumnPairValuesAToBeGreaterThanB,
            f"the rect's {edge} edge is on its page: {bound} page_{edge}",
            problem=f"{{has}} a rect past the {edge} edge of its page",
            fix=f"Move the rect onto its page: {bound} the page's {edge} edge "
            "(page_boxes(pdf) gives each page's box).",
            subject="key 'rect'",
            column_A=a,
            column_B=b,
            or_equal=True,
        )
    for size, high, low in (("width", "x1", "x0"), ("height", "y1", "y0")):
        s.add(
            gxe.ExpectColumnPairValuesAToBeGreaterThanB,
            f"the rect has a {size}: {high} > {low}",
            problem=f"{{has}} a rect with no {size}",
            fix=f"Make {high} greater than {low} ([x0, y0, x1, y1], in PDF points).",
            subject="key 'rect'",
            column_A=high,
            column_B=low,
        )
    s.add(
        gxe.ExpectColumnValuesToBeBetween,
        "confidence is between 0 and 1",
        problem="{has} a confidence outside 0 to 1",
        fix="Use a confidence from 0 to 1.",
        subject="key 'confidence'",
        column="confidence",
        min_value=0,
        max_value=1,
    )
    return s.suite


def _pages_fix(page_count: int) -> str:
    if page_count == 0:
        return "The PDF has no pages: check that it is the PDF the schema was made from."
    if page_count == 1:
        return "The PDF has 1 page, numbered from 0: use page 0."
    return (
        f"The PDF has {page_count} pages, numbered from 0: use a page from 0 to {page_count - 1}."
    )


def input_suite(
    expected: Mapping[str, str],
    pairs: Mapping[str, Field],
    present: Iterable[str],
    *,
    fields: Sequence[Field] = (),
    near: Mapping[str, Sequence[str]] | None = None,
    mapped: Collection[str] = (),
    unchecked_dates: Collection[str] = (),
) -> gx.ExpectationSuite:
    """Rows against a form: ``expected`` maps each field whose column must be there to that
    column's name; ``pairs`` maps each present column to the field it fills.

    For the words of a missing column: ``fields`` (whether the form requires the field),
    ``near`` (the rows' unmatched columns that look like each field, or like each mapped
    column) and ``mapped`` (the columns a mapping names). ``unchecked_dates`` names date
    fields whose format (a time in it, say) the date rule does not read: the filler takes
    their text as given, so the check does too.
    """
    s = SuiteBuilder("fillpdf_input")
    present = set(present)
    required = {f.name for f in fields if f.required}
    near = near or {}
    for field_name, column in expected.items():
        problem, fix = _missing_column(
            field_name, column, column in mapped, field_name in required, near.get(field_name, ())
        )
        s.add(
            gxe.ExpectColumnToExist,
            f"a column fills the form's field {field_name!r}",
            problem=problem,
            fix=fix,
            column=column,
            field=field_name,
        )
    for column, form_field in pairs.items():
        if column in present and form_field.name not in unchecked_dates:
            _field_expectations(s, column, form_field)
    return s.suite


def _missing_column(
    field_name: str, column: str, mapped: bool, required: bool, near: Sequence[str]
) -> tuple[str, str]:
    """(what is wrong, what to do) when ``column``, which fills ``field_name``, is missing."""
    guess = f"; did you mean {' or '.join(repr(c) for c in near)}?" if near else ""
    if mapped:
        return (
            f"the mapping fills {field_name!r} from it, but the rows have no such column{guess}",
            "Fix the column's name in the mapping or in the rows.",
        )
    problem = f"no column fills the form's field {field_name!r}"
    if near:
        return (
            problem + guess,
            f"Rename that column to {field_name!r}, or map it: "
            f"mapping={{{near[0]!r}: {field_name!r}}}.",
        )
    add = f"Add a column named {field_name!r} (or map one to it with mapping=)"
    if required:
        return f"{problem}, and the form requires it", add + "."
    return problem, f"{add}, or leave {field_name!r} out of require_columns."


def _field_expectations(s: SuiteBuilder, column: str, f: Field) -> None:
    on = {"column": column, "field": f.name}
    accepted = accepted_cells(f.type, f.options)  # the filler's rule (engine.coerce)
    if f.type == "checkbox":
        s.add(
            gxe.ExpectColumnValuesToBeInSet,
            "a checkbox value: true/false, yes/no, y/n, 1/0, x, on/off or empty",
            problem="{is} not a checkbox value",
            fix=CHECKBOX_FIX,
            value_set=sorted(accepted or ()),
            **on,
        )
    elif f.type in ("radio", "choice"):
        options = list(f.options or ())
        shown = ", ".join(repr(o) for o in options[:SHOWN_OPTIONS])
        shown += ", ..." if len(options) > SHOWN_OPTIONS else ""
        fix = f"Use one of {shown} (any case), or leave the cell empty."
        if sides := yes_no_sides(options):
            fix = (
                f"Use {shown} (any case), {TRUE_SHOWN} for {sides[0]!r}, {FALSE_SHOWN} for "
                f"{sides[1]!r}, or leave the cell empty."
            )
        elif sole := sole_option(options):
            fix = f"Use {shown} (any case) or yes/x to select {sole!r}, or leave the cell empty."
        s.add(
            gxe.ExpectColumnValuesToBeInSet,
            f"one of the options: {', '.join(options[:SHOWN_OPTIONS])} (any case)",
            problem="{is} not one of the field's options",
            fix=fix,
            value_set=sorted(accepted or ()),
            **on,
        )
    elif f.type == "date":
        s.add(
            gxe.ExpectColumnValuesToMatchRegex,
            "a date written as the form writes it or as YYYY-MM-DD",
            problem="{is} not a date in the form's format or YYYY-MM-DD",
            fix="Write dates as the form shows them (`fillpdf inspect` gives the format) or "
            "as YYYY-MM-DD, e.g. 2025-03-05.",
            regex=ISO_DATE_PATTERN,
            **on,
        )
        s.add(
            gxe.ExpectColumnValuesToMatchStrftimeFormat,
            "a date that exists",
            problem="{is} not a date that exists",
            fix="Check the month and day.",
            strftime_format=ISO_DATE_FORMAT,
            **on,
        )
    elif f.max_length is not None:
        s.add(
            gxe.ExpectColumnValueLengthsToBeBetween,
            f"at most {f.max_length} characters",
            problem=f"{{is}} longer than the field's {f.max_length} characters",
            fix=f"Shorten them to at most {f.max_length} characters.",
            max_value=f.max_length,
            **on,
        )
    if f.required:
        s.add(
            gxe.ExpectColumnValuesToNotBeNull,
            "the form requires a value",
            problem="{is} empty, but the form requires a value",
            fix="Fill in a value on every row.",
            **on,
        )


def manifest_suite(expected_rows: int | None, present: Iterable[str]) -> gx.ExpectationSuite:
    """A fill's manifest: one row per input row, each ok with its file or a recorded error."""
    s = SuiteBuilder("fillpdf_manifest")
    present = set(present)
    for column in MANIFEST_SCHEMA.names:
        s.add(
            gxe.ExpectColumnToExist,
            "a manifest column",
            problem="a fill's manifest has it",
            fix="Check that the file is the manifest.parquet a fill wrote, not an edited copy.",
            column=column,
        )
    if expected_rows is not None:
        s.add(
            gxe.ExpectTableRowCountToEqual,
            f"one row per input row ({expected_rows})",
            problem=f"expected one row per input row ({expected_rows})",
            fix=f"Fill the missing rows again, or {SAME_RUN}",
            subject="manifest",
            value=expected_rows,
        )
    if "row" in present:
        s.add(
            gxe.ExpectColumnValuesToBeUnique,
            "each input row is listed once",
            problem="{is} listed more than once",
            fix="List each input row once: merge each chunk's manifest once, from chunks "
            "that do not overlap.",
            column="row",
        )
        if expected_rows:  # with no input rows, the row count says all (1-0 is no range)
            s.add(
                gxe.ExpectColumnValuesToBeBetween,
                f"an input row number (1-{expected_rows})",
                problem=f"{{is}} not an input row number (1-{expected_rows})",
                fix=SAME_RUN.capitalize(),
                column="row",
                min_value=1,
                max_value=expected_rows,
            )
    if "status" in present:
        s.add(
            gxe.ExpectColumnValuesToNotBeNull,
            "every row has a status",
            problem="{has} no status",
            fix=f"Give every row a status, ok or error; {MANIFEST_FIX}",
            column="status",
        )
        s.add(
            gxe.ExpectColumnValuesToBeInSet,
            "status is ok or error",
            problem="{has} a status other than ok or error",
            fix=f"Use ok or error; {MANIFEST_FIX}",
            column="status",
            value_set=list(STATUSES),
        )
        ok = Column("status") == "ok"
        for column in ("path", "sha256", "bytes", "pages"):
            if column in present:
                s.add(
                    gxe.ExpectColumnValuesToNotBeNull,
                    f"an ok row records its {column}",
                    problem=f"{{is}} ok but {{has}} no {column}",
                    fix="Fill those rows again: an ok row records its file.",
                    column=column,
                    row_condition=ok,
                )
        if "error" in present:
            s.add(
                gxe.ExpectColumnValuesToNotBeNull,
                "a failed row records its error",
                problem="{has} status error but no error message",
                fix="Fill those rows again to record why they fail.",
                column="error",
                row_condition=Column("status") == "error",
            )
    for column in ("bytes", "pages"):
        if column in present:
            s.add(
                gxe.ExpectColumnValuesToBeBetween,
                f"{column} > 0",
                problem=f"{{has}} {column} of 0 or less",
                fix="Fill those rows again: their PDFs are empty.",
                column=column,
                min_value=0,
                strict_min=True,
            )
    if "sha256" in present:
        s.add(
            gxe.ExpectColumnValuesToMatchRegex,
            "a sha256 is 64 lowercase hex digits",
            problem="{has} a sha256 that is not 64 lowercase hex digits",
            fix="Use the sha256 the fill recorded: the hex digest of the PDF.",
            column="sha256",
            regex=SHA256_PATTERN,
        )
        s.add(
            gxe.ExpectColumnValuesToBeUnique,
            "rows with different values have different sha256",
            problem="{has} the same sha256 as a row with other values",
            fix="Check those rows' PDFs; if the rows differ only in columns that fill no "
            "field, give the check the form (template) so those columns do not count.",
            column="sha256",
            row_condition=Column("new_values") == True,  # noqa: E712
        )
    if "path" in present:
        s.add(
            gxe.ExpectColumnValuesToBeUnique,
            "each row has its own file",
            problem="{has} the same file as another row",
            fix="Give each row its own name in the name template, e.g. {row}.pdf.",
            column="path",
        )
    return s.suite
