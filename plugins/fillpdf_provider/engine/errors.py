"""Typed errors of the engine.

Every error says what went wrong and what to do about it, and names the request field
(``param``) it concerns where there is one, so the service can map it to a 4xx answer
and a batch can record it against a row.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterable, Sequence
from difflib import get_close_matches

#: Characters of a refused value an error quotes: enough to recognise it, never a whole
#: document in a log line or a manifest. And options it lists in full (they are copied).
SHOWN_VALUE = 40
SHOWN_OPTIONS = 12


def quoted_value(value: object) -> str:
    """``value`` as an error quotes it: its repr, cut to ``SHOWN_VALUE`` characters."""
    text = repr(value)
    if len(text) <= SHOWN_VALUE:
        return text
    return text[: SHOWN_VALUE - 4] + "..." + text[-1]  # keeps the closing quote or bracket


def given_value(value: object) -> str:
    """``'maybe'`` for a string; ``1 (an int)`` for a value of another type, which may be
    the mistake."""
    if isinstance(value, str):
        return quoted_value(value)
    kind = type(value).__name__
    return f"{quoted_value(value)} ({'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind})"


def shown_options(options: Sequence[str]) -> str:
    """A field's options as a value must spell them, the first ``SHOWN_OPTIONS`` of them."""
    shown = ", ".join(repr(o) for o in options[:SHOWN_OPTIONS])
    more = len(options) - SHOWN_OPTIONS
    return shown + (f" and {more} more" if more > 0 else "")


class FillPdfError(Exception):
    """Base class of every error the engine raises on bad input."""

    #: The error type of the HTTP contract this error maps to.
    error_type = "invalid_request"

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class PdfError(FillPdfError):
    """The input cannot be used as a PDF form."""

    error_type = "unsupported_file"


class NotAPdfError(PdfError):
    """The bytes are not a PDF file."""


class EncryptedPdfError(PdfError):
    """The PDF is encrypted with a password we do not have."""


class DamagedPdfError(PdfError):
    """The file claims to be a PDF but cannot be processed: damaged, or built to exhaust
    readers. The cause is the file, so it maps to ``unsupported_file`` (415), never to the
    502 of an engine failure."""


class NoFormError(PdfError):
    """The PDF has no fillable fields."""

    error_type = "invalid_request"


class SchemaError(FillPdfError):
    """A schema given to rebuild a form is not usable: says which entry and what to fix.

    ``index`` is the entry's place in the ``schema`` list (0-based) and ``name`` its name,
    where the error concerns one entry.
    """

    def __init__(self, message: str, *, index: int | None = None, name: str | None = None) -> None:
        where = ""
        if index is not None:
            shown = name if name is None or len(name) <= 60 else name[:57] + "..."
            where = f"schema[{index}]" + (f" ({shown!r})" if shown else "") + ": "
        super().__init__(where + message, param="schema")
        self.index = index
        self.name = name


class FieldError(FillPdfError):
    """A value does not fit the form: an unknown field or a value its field refuses."""


class UnknownFieldError(FieldError):
    """A value was given for a field the form does not have."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.suggestions = close_names(name, list(known))
        hint = (
            "did you mean " + ", ".join(repr(s) for s in self.suggestions) + "?"
            if self.suggestions
            else "run `fillpdf inspect FORM.pdf --json` to list the field names."
        )
        super().__init__(f"The form has no field named {name!r}: {hint}", param=name)


#: Names compared for "did you mean": those sharing the longest start with the name, then
#: nearest in length, so a form of tens of thousands of fields (or an absurdly long name)
#: costs milliseconds, not seconds.
SUGGEST_AMONG = 500
SUGGEST_NAME_LENGTH = 200


def _nearness(name: str, other: str) -> tuple[int, int, str]:
    shared = len(os.path.commonprefix([name, other]))  # noqa: RUF071 - by character, meant
    return (-shared, abs(len(other) - len(name)), other)


def close_names(name: str, known: list[str]) -> list[str]:
    """Up to three of ``known`` that ``name`` is probably a misspelling of, nearest first:
    the "did you mean" of an unknown field, option or column."""
    if len(name) > SUGGEST_NAME_LENGTH:
        return []
    if len(known) > SUGGEST_AMONG:
        known = heapq.nsmallest(SUGGEST_AMONG, known, key=lambda k: _nearness(name, k))
    return get_close_matches(name, known, n=3, cutoff=0.5)


class FieldValueError(FieldError):
    """A value has the wrong type for its field, is not among its options, or is too long."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"Field {field!r}: {message}", param=field)


class TextOverflowError(FieldValueError):
    """A text value too long for its box even at the smallest font size, under the
    ``"error"`` overflow policy."""


__all__ = [
    "DamagedPdfError",
    "EncryptedPdfError",
    "FieldError",
    "FieldValueError",
    "FillPdfError",
    "NoFormError",
    "NotAPdfError",
    "PdfError",
    "SchemaError",
    "TextOverflowError",
    "UnknownFieldError",
    "close_names",
]
