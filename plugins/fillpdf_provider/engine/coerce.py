"""Turn table cells into fill values: what a spreadsheet holds into what a field takes.

CSV cells arrive as strings and Parquet cells as typed values; either way a checkbox wants a
boolean, a text field a string, a radio or choice field one of its options. Empty cells
(None, NaN, "") leave the field as the template has it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from decimal import Decimal

from fillpdf_provider.engine.dates import format_date
from fillpdf_provider.engine.errors import FieldValueError
from fillpdf_provider.engine.schema import Field

TRUE_WORDS = frozenset({"true", "t", "yes", "y", "1", "x", "on", "checked", "✓", "✔"})
FALSE_WORDS = frozenset({"false", "f", "no", "n", "0", "off", "unchecked", ""})


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


def to_option(cell: object, options: tuple[str, ...], field_name: str) -> str:
    """The option ``cell`` names: exactly as the form spells it (spaces, ``#``, accents and
    all), else the one option it names but for spaces around it or letter case, as a cell
    typed by hand does."""
    given = to_text(cell)
    if given in options:
        return given
    text = given.strip()
    for found in (
        [o for o in options if o.strip() == text],
        [o for o in options if o.strip().casefold() == text.casefold()],
    ):
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise FieldValueError(
                field_name,
                f"{given!r} could be any of {', '.join(repr(o) for o in found)}; "
                "give the option exactly as fillpdf inspect lists it.",
            )
    sole = _yes_for_sole_option(cell, text, options, field_name)
    if sole is not None:
        return sole
    shown = ", ".join(repr(o) for o in options[:12])
    raise FieldValueError(field_name, f"{given!r} is not one of the options: {shown}.")


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
    return to_text(cell, date_format)  # a date's text is checked by the filler (engine.dates)


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
