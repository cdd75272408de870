"""Turn table cells into fill values: what a spreadsheet holds into what a field takes.

CSV cells arrive as strings and Parquet cells as typed values; either way a checkbox wants a
boolean, a text field a string, a radio or choice field one of its options. Empty cells
(None, NaN, "") leave the field as the template has it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal

from fillpdf_provider.engine.dates import format_date
from fillpdf_provider.engine.errors import (
    FieldValueError,
    close_names,
    given_value,
    shown_options,
)
from fillpdf_provider.engine.schema import Field

TRUE_WORDS = frozenset({"true", "t", "yes", "y", "1", "x", "on", "checked", "✓", "✔"})
FALSE_WORDS = frozenset({"false", "f", "no", "n", "0", "off", "unchecked", ""})
#: How an error spells the words, most common first (the sets above, in a reader's order).
TRUE_SHOWN = "true, yes, y, on, 1, x or checked"
FALSE_SHOWN = "false, no, n, off or 0"


def is_empty(cell: object) -> bool:
    if cell is None:
        return True
    if isinstance(cell, float) and math.isnan(cell):
        return True
    return isinstance(cell, str) and cell.strip() == ""


def yes_no(cell: object) -> bool | None:
    """True or False for a yes/no answer (a boolean, 1/0, or one of the words in any case
    and with spaces around it), None for anything else."""
    if isinstance(cell, bool):
        return cell
    if isinstance(cell, int | float | Decimal) and not isinstance(cell, bool):
        return bool(cell) if cell in (0, 1) else None
    if not isinstance(cell, str):
        return None
    word = cell.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


def to_bool(cell: object, field_name: str) -> bool:
    answer = yes_no(cell)
    if answer is None:
        raise FieldValueError(
            field_name,
            f"{given_value(cell)} is not a checkbox value; {TRUE_SHOWN} tick it, "
            f"{FALSE_SHOWN} (or an empty value) leave it clear, in any case.",
        )
    return answer


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


def yes_no_sides(options: Sequence[str]) -> tuple[str, str] | None:
    """The (yes, no) options of a group whose two options read as yes and no (Yes/No,
    Y/N, On/Off, True/False, 1/0 in any case), else None. A group's own ``Off`` is not
    counted as an option when it has two others."""
    chosen = list(options)
    if len(chosen) == 3:
        chosen = [o for o in chosen if o.strip().lower() != "off"]
    if len(chosen) != 2 or not all(o.strip() for o in chosen):
        return None
    first, second = (yes_no(o) for o in chosen)
    if first is None or second is None or first == second:
        return None
    return (chosen[0], chosen[1]) if first else (chosen[1], chosen[0])


def sole_option(options: Sequence[str]) -> str | None:
    """The one option other than ``Off`` of a lone radio button or two-state choice."""
    non_off = [o for o in options if o.lower() != "off"]
    return non_off[0] if len(non_off) == 1 else None


def to_option(
    cell: object,
    options: Sequence[str],
    field_name: str,
    displays: Mapping[str, str] | None = None,
) -> str | None:
    """The option ``cell`` names, or None to leave the group unanswered.

    The rule, in order: the option exactly as the form spells it (spaces, ``#``, accents and
    all); the one option equal to it but for letter case and spaces around it; for a group
    whose options read as yes/no, a yes or no answer (``yes_no``) chooses that side; for a
    lone button, a yes chooses it and a no leaves it off. Anything else is an error that
    names the value and what the field accepts.
    """
    options = tuple(options)
    if isinstance(cell, str) and cell in options:
        return cell
    if not isinstance(cell, bool):
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
                    f"{given_value(cell)} could be any of {', '.join(repr(o) for o in found)}; "
                    "give the option exactly as fillpdf inspect lists it.",
                )
    answer = yes_no(cell)
    sides = yes_no_sides(options)
    if answer is not None and sides is not None:
        return sides[0] if answer else sides[1]
    sole = sole_option(options)
    if answer is not None and sole is not None:
        return sole if answer else None
    raise FieldValueError(field_name, _not_an_option(cell, options, sides, sole, displays or {}))


def _not_an_option(
    cell: object,
    options: Sequence[str],
    sides: tuple[str, str] | None,
    sole: str | None,
    displays: Mapping[str, str],
) -> str:
    """What the field accepts, and what the value was probably meant to be: the option whose
    shown text it is (a choice shows text other than its option), or the nearest."""
    message = f"{given_value(cell)} is not one of the options: {shown_options(options)}"
    if sides is not None:
        return message + f"; {TRUE_SHOWN} choose {sides[0]!r}, {FALSE_SHOWN} {sides[1]!r}."
    if sole is not None:
        return message + f"; {TRUE_SHOWN} choose {sole!r}, {FALSE_SHOWN} leave it off."
    text = to_text(cell)
    for option in options:
        if displays.get(option) == text and option != text:
            return message + f"; {text!r} is the text shown for {option!r}: give the option."
    near = close_names(text, list(options))
    return message + (f"; did you mean {near[0]!r}?" if near else ".")


def accepted_cells(field_type: str, options: Sequence[str] | None) -> frozenset[str] | None:
    """Every cell, trimmed and lowercased, that ``to_bool`` or ``to_option`` takes for a
    field of ``field_type`` (None for fields that take any text): the input check's set."""
    words = (TRUE_WORDS | FALSE_WORDS) - {""}
    if field_type == "checkbox":
        return words
    if field_type not in ("radio", "choice"):
        return None
    given = options or ()
    accepted = {o.strip().lower() for o in given}
    if yes_no_sides(given) is not None or sole_option(given) is not None:
        accepted |= words
    return frozenset(accepted)


def button_value(
    kind: str,
    options: Sequence[str] | None,
    name: str,
    value: object,
    displays: Mapping[str, str] | None = None,
) -> object:
    """What a checkbox, radio group or choice takes for ``value`` by the one rule (True or
    False; an option; None to leave it alone). Other kinds' values are returned as given:
    their type is the filler's to check."""
    if kind == "checkbox":
        return to_bool(value, name)
    if kind in ("radio", "choice"):
        return None if is_empty(value) else to_option(value, options or (), name, displays)
    return value


def coerce_value(field: Field, cell: object, date_format: str | None = None) -> object | None:
    """The fill value for ``cell`` in ``field``, or None to leave the field alone."""
    if is_empty(cell):
        return None
    if field.type in ("checkbox", "radio", "choice"):
        return button_value(field.type, field.options, field.name, cell)
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
