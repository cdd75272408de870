"""Dates in a form's own format: the one rule for every path that fills a date field.

A date field carries its format (Acrobat's ``AFDate_FormatEx("mm/dd/yyyy")``). A value
written in that format is kept as written; an ISO 8601 date (``2025-03-05``, the way tables
and JSON carry dates) is written in the form's format; anything else is refused, naming the
field, the value and both formats. A format with parts this rule cannot read (times, say)
takes its text as given.
"""

from __future__ import annotations

import datetime as dt
import functools
import re

from fillpdf_provider.engine.errors import FieldValueError

_AF_TOKEN = re.compile(r"yyyy|yy|mmmm|mmm|mm|m|dddd|ddd|dd|d")
_MONTHS = {
    name: number
    for number in range(1, 13)
    for name in (
        dt.date(2000, number, 1).strftime("%B").casefold(),
        dt.date(2000, number, 1).strftime("%b").casefold(),
    )
}
_PARTS = {
    "yyyy": r"(?P<year>\d{4})",
    "yy": r"(?P<year2>\d{2})",
    "mmmm": r"(?P<month_name>[A-Za-z]+)",
    "mmm": r"(?P<month_name>[A-Za-z]+)",
    "mm": r"(?P<month>\d{1,2})",
    "m": r"(?P<month>\d{1,2})",
    "dddd": r"[A-Za-z]+",
    "ddd": r"[A-Za-z]+",
    "dd": r"(?P<day>\d{1,2})",
    "d": r"(?P<day>\d{1,2})",
}
#: The date an error shows in the form's format, as an example to copy.
EXAMPLE = dt.date(2025, 3, 5)
_DAYS = [dt.date(2000, 1, day) for day in range(3, 10)]  # Monday to Sunday
_SHORTEST = {
    "yyyy": 4,
    "yy": 2,
    "mmmm": min(len(dt.date(2000, m, 1).strftime("%B")) for m in range(1, 13)),
    "mmm": min(len(dt.date(2000, m, 1).strftime("%b")) for m in range(1, 13)),
    "mm": 2,
    "m": 1,
    "dddd": min(len(day.strftime("%A")) for day in _DAYS),
    "ddd": min(len(day.strftime("%a")) for day in _DAYS),
    "dd": 2,
    "d": 1,
}


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


@functools.lru_cache(maxsize=256)
def shortest_date(af_format: str) -> int:
    """How many characters the shortest date written in ``af_format`` takes (other letters,
    such as a time's, count as written): a field whose limit is below it holds no date."""
    rest = _AF_TOKEN.sub("", af_format)
    return len(rest) + sum(_SHORTEST[t.group(0)] for t in _AF_TOKEN.finditer(af_format))


@functools.lru_cache(maxsize=256)
def readable(af_format: str) -> bool:
    """Whether this rule reads the format: only date parts and punctuation."""
    return not re.search(r"[A-Za-z]", _AF_TOKEN.sub("", af_format))


@functools.lru_cache(maxsize=256)
def _pattern(af_format: str) -> re.Pattern[str]:
    """The regular expression of dates written in ``af_format``."""
    pattern, seen = [], set()
    position = 0
    for token in _AF_TOKEN.finditer(af_format):
        pattern.append(re.escape(af_format[position : token.start()]))
        part = _PARTS[token.group(0)]
        group = re.search(r"\?P<(\w+)>", part)
        if group and group.group(1) in seen:  # a part written twice: match it, don't bind
            part = re.sub(r"\?P<\w+>", "?:", part)
        elif group:
            seen.add(group.group(1))
        pattern.append(part)
        position = token.end()
    pattern.append(re.escape(af_format[position:]))
    return re.compile("".join(pattern), re.IGNORECASE)


def parse_form_date(text: str, af_format: str) -> dt.date | None:
    """The date ``text`` writes in ``af_format`` (``2/5/2025`` reads as ``mm/dd/yyyy``
    too), or None if it is not one."""
    found = _pattern(af_format).fullmatch(text.strip())
    if found is None:
        return None
    parts = found.groupdict()
    month_name = parts.get("month_name")
    if month_name is not None:
        month = _MONTHS.get(month_name.casefold(), 0)
    else:  # a format without a month (yyyy) reads as January
        month = int(parts["month"]) if parts.get("month") else 1
    year = int(parts["year"]) if parts.get("year") else 2000 + int(parts.get("year2") or 0)
    try:
        return dt.date(year, month, int(parts.get("day") or 1))
    except ValueError:
        return None


def parse_iso_date(text: str) -> dt.date | None:
    """The date of an ISO 8601 date or date-time (``2025-03-05``, ``2025-03-05T00:00``)."""
    text = text.strip()
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(text).date()
    except ValueError:
        return None


def form_date(field_name: str, text: str, af_format: str | None) -> str:
    """``text`` as the date field writes it: as given in the form's format, converted from
    ISO 8601, or refused."""
    if not af_format or not readable(af_format):
        return text
    if parse_form_date(text, af_format) is not None:
        return text.strip()  # as written, less the spaces around it
    iso = parse_iso_date(text)
    if iso is not None:
        return format_date(iso, af_format)
    raise FieldValueError(
        field_name,
        f"{text!r} is not a date in the form's format {af_format} (e.g. "
        f"{format_date(EXAMPLE, af_format)}) or in ISO 8601 (e.g. {EXAMPLE.isoformat()}); "
        "give the date in one of those.",
    )


def as_iso(text: str, af_format: str | None) -> str:
    """The ISO 8601 date of ``text`` if it is a date by this rule, else ``text`` unchanged
    (the input check compares dates this way)."""
    if af_format and readable(af_format):
        day = parse_form_date(text, af_format)
        if day is not None:
            return day.isoformat()
    iso = parse_iso_date(text)
    return iso.isoformat() if iso is not None else text
