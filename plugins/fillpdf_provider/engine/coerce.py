"""Turn table cells into fill values: what a spreadsheet holds into what a field takes.

CSV cells arrive as strings and Parquet cells as typed values; either way a checkbox wants a
boolean, a text field a string, a radio or choice field one of its options. Empty cells
(None, NaN, "") leave the field as the template has it.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Collection, Mapping
from decimal import Decimal

from fillpdf_provider.engine.errors import FieldError, FieldValueError, close_names
from fillpdf_provider.engine.schema import Field

TRUE_WORDS = frozenset({"true", "t", "yes", "y", "1", "x", "on", "checked", "✓", "✔"})
FALSE_WORDS = frozenset({"false", "f", "no", "n", "0", "off", "unchecked", ""})

_AF_TOKEN = re.compile(r"yyyy|yy|mmmm|mmm|mm|m|dddd|ddd|dd|d")


def is_empty(cell: object) -> bool:
    if cell is None:
        return True
    if isinstance(cell, float) and math.isnan(cell):
        return True
    return isinstance(cell, str) and cell.strip() == ""


def to_bool(cell: object, field_name: str) -> bool:
    if isinstance(cell, bool):
        return cell
    if isinstance(cell, int | float | Decimal) and cell in (0, 1):
        return bool(cell)
    word = str(cell).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise FieldValueError(
        field_name, f"{cell!r} is not a checkbox value; use true/false, yes/no, 1/0, x or empty."
    )


def to_text(cell: object, date_format: str | None = None) -> str:
    if isinstance(cell, str):
        return cell
    if isinstance(cell, bool):
        return "Yes" if cell else "No"
    if isinstance(cell, float) and cell.is_integer():
        return str(int(cell))
    if isinstance(cell, dt.datetime | dt.date):
        return format_date(cell, date_format)
    if hasattr(cell, "isoformat") and hasattr(cell, "year"):  # pandas Timestamp and friends
        return format_date(cell, date_format)  # type: ignore[arg-type]
    return str(cell)


def format_date(value: dt.date, af_format: str | None) -> str:
    """A date in the form's own format (Acrobat ``AFDate`` style), else ISO 8601."""
    day = value.date() if isinstance(value, dt.datetime) else value
    if not af_format:
        return day.isoformat()
    parts = {
        "yyyy": f"{day.year:04d}",
        "yy": f"{day.year % 100:02d}",
        "mmmm": day.strftime("%B"),
        "mmm": day.strftime("%b"),
        "mm": f"{day.month:02d}",
        "m": str(day.month),
        "dddd": day.strftime("%A"),
        "ddd": day.strftime("%a"),
        "dd": f"{day.day:02d}",
        "d": str(day.day),
    }
    return _AF_TOKEN.sub(lambda m: parts[m.group(0)], af_format)


def to_option(cell: object, options: tuple[str, ...], field_name: str) -> str:
    text = to_text(cell).strip()
    if text in options:
        return text
    folded = {o.casefold(): o for o in options}
    if text.casefold() in folded:
        return folded[text.casefold()]
    sole = _yes_for_sole_option(cell, text, options, field_name)
    if sole is not None:
        return sole
    shown = ", ".join(repr(o) for o in options[:12])
    raise FieldValueError(field_name, f"{text!r} is not one of the options: {shown}.")


def _yes_for_sole_option(
    cell: object, text: str, options: tuple[str, ...], field_name: str
) -> str | None:
    """A yes (true, x, 1 ...) chooses the one option other than Off, as ticking a lone
    radio button or a two-state choice does."""
    if not isinstance(cell, bool) and text.lower() not in TRUE_WORDS | FALSE_WORDS:
        return None
    non_off = [o for o in options if o.lower() != "off"]
    if len(non_off) == 1 and to_bool(cell, field_name):
        return non_off[0]
    return None


def coerce_value(field: Field, cell: object, date_format: str | None = None) -> object | None:
    """The fill value for ``cell`` in ``field``, or None to leave the field alone."""
    if is_empty(cell):
        return None
    if field.type == "checkbox":
        return to_bool(cell, field.name)
    if field.type in ("radio", "choice"):
        return to_option(cell, field.options or (), field.name)
    if field.type == "date" and date_format and isinstance(cell, str):
        try:
            return format_date(dt.date.fromisoformat(cell.strip()), date_format)
        except ValueError:
            return cell
    return to_text(cell, date_format)


def coerce_values(
    fields: Mapping[str, Field],
    values: Mapping[str, object],
    date_formats: Mapping[str, str | None] | None = None,
) -> dict[str, object]:
    """One row's ``{field name: value}`` made fill values by ``coerce_value``: the one rule
    for ``fill`` and ``batch`` alike. Empty values are left out (the field stays as the
    template has it); names the form lacks and lists or objects pass through unchanged, so
    the fill refuses them with its own message (an unknown field, a value of the wrong type).
    """
    out: dict[str, object] = {}
    for name, value in values.items():
        field = fields.get(name)
        if field is None or isinstance(value, list | tuple | dict | set):
            out[name] = value
            continue
        coerced = coerce_value(field, value, (date_formats or {}).get(name))
        if coerced is not None:
            out[name] = coerced
    return out


def normalise(name: str) -> str:
    """A column or field name reduced to lowercase words joined by ``_``."""
    return re.sub(r"[^0-9a-z]+", "_", name.casefold()).strip("_")


def map_columns(
    columns: list[str], fields: list[Field], mapping: Mapping[str, str] | None = None
) -> tuple[dict[str, str], list[str], list[str]]:
    """Pair columns with fields: explicit ``mapping`` first, then equal, then normalised names.

    Returns (column -> field, unmapped columns, fields no column fills).
    """
    names = {f.name for f in fields}
    pairs = _mapped_pairs(columns, names, mapping)
    taken = set(pairs.values())
    by_normal = _by_normalised_name(fields)
    for column in columns:
        if column in pairs:
            continue
        match = _matching_field(column, names, by_normal, taken)
        if match is not None:
            pairs[column] = match
            taken.add(match)
    unmapped = [c for c in columns if c not in pairs]
    unfilled = [f.name for f in fields if f.name not in taken and not f.read_only]
    return pairs, unmapped, unfilled


def _mapped_pairs(
    columns: list[str], names: set[str], mapping: Mapping[str, str] | None
) -> dict[str, str]:
    """The pairs an explicit mapping (column -> field) makes, each checked."""
    pairs: dict[str, str] = {}
    for column, field_name in (mapping or {}).items():
        if field_name not in names:
            raise FieldValueError(field_name, "the mapping names a field the form does not have.")
        if column not in columns:
            raise FieldValueError(
                field_name, f"the mapping names a column {column!r} the rows lack."
            )
        pairs[column] = field_name
    return pairs


def _by_normalised_name(fields: list[Field]) -> dict[str, list[str]]:
    by_normal: dict[str, list[str]] = {}
    for f in fields:
        by_normal.setdefault(normalise(f.name), []).append(f.name)
    return by_normal


def _matching_field(
    column: str, names: set[str], by_normal: dict[str, list[str]], taken: set[str]
) -> str | None:
    """The field not yet taken that ``column`` fills: the one of its name, else the only one
    whose normalised name is the column's."""
    if column in names and column not in taken:
        return column
    candidates = [n for n in by_normal.get(normalise(column), []) if n not in taken]
    return candidates[0] if len(candidates) == 1 else None


def near_fields(
    columns: list[str], fields: list[Field], taken: Collection[str] = ()
) -> dict[str, list[str]]:
    """For each column, the fields not yet ``taken`` whose normalised names are close to
    the column's: the "did you mean" of a column that matches no field."""
    by_normal: dict[str, str] = {}
    for f in fields:
        if f.name not in taken and not f.read_only:
            by_normal.setdefault(normalise(f.name), f.name)
    known = list(by_normal)
    return {c: [by_normal[n] for n in close_names(normalise(c), known)] for c in columns}


def describe_unmapped(column: str, suggestions: list[str]) -> str:
    """``Fullname (did you mean full_name?)``, or just the column without suggestions."""
    if not suggestions:
        return column
    return f"{column} (did you mean {' or '.join(suggestions)}?)"


#: Columns named one by one in the error of a batch whose columns all match no field.
SHOWN_COLUMNS = 10


def no_column_matches(columns: list[str], fields: list[Field]) -> FieldError:
    """The error of a batch none of whose columns fills a field: every PDF would be blank.

    One line naming the columns, each with its "did you mean" where a field is close.
    """
    near = near_fields(columns[:SHOWN_COLUMNS], fields)
    parts = []
    for column, suggestions in near.items():
        part = f"column {column!r} matches no field"
        if suggestions:
            part += f" (did you mean {' or '.join(repr(s) for s in suggestions)}?)"
        parts.append(part)
    more = len(columns) - SHOWN_COLUMNS
    listed = "; ".join(parts) + (f"; and {more} more columns" if more > 0 else "")
    return FieldError(
        f"No column of the rows matches a field of the form, so every PDF would be blank: "
        f"{listed}. Name the columns after the fields "
        "(`fillpdf inspect FORM.pdf` lists them).",
        param="rows",
    )
