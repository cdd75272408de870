"""The keys of a schema entry, as ``inspect`` and ``fillpdf convert`` give them."""

from __future__ import annotations

#: The keys the contract fixes for every schema entry.
CONTRACT_KEYS = frozenset(
    {
        "name",
        "type",
        "page",
        "rect",
        "label",
        "confidence",
        "required",
        "multiline",
        "max_length",
        "options",
    }
)
#: Every key of an entry: the contract's, plus ``read_only`` and ``comb``.
SCHEMA_KEYS = CONTRACT_KEYS | {"read_only", "comb"}
#: The key a radio group of several buttons adds: each button's option and place.
WIDGETS_KEY = "widgets"
#: The key a date field adds: the format its values are written in (``mm/dd/yyyy``).
DATE_FORMAT_KEY = "date_format"
