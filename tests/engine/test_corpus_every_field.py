"""Every field of every real form takes a value that fits it.

Each form of ``../shared/corpus`` (the development forms, the wild forms and the training
forms) is filled once with a value for every writable field inspect offers: one character
of text (within any limit), a date written in the field's own format (its shortest), the
first option of a radio group or choice, a ticked checkbox. The default overflow policy
must take them all: a field that refuses its plainest value is a field no one can fill.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pytest

from fillpdf_provider.engine import Field, Template
from fillpdf_provider.engine.dates import format_date

SHARED = Path(__file__).resolve().parents[3] / "shared" / "corpus"
FOLDERS = {
    "forms": SHARED / "forms",
    "wild": SHARED / "wild" / "forms",
    "train": SHARED / "train" / "forms",
}
FORMS = sorted((key, path) for key, folder in FOLDERS.items() for path in folder.glob("*.pdf"))

if not FORMS:
    pytest.skip(
        f"no real forms found under {SHARED} (forms/, wild/forms/, train/forms/)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.corpus

#: A week of dates: among them the shortest each date format writes (May, day 1 to 7, and
#: every weekday).
WEEK = [dt.date(2025, 5, day) for day in range(1, 8)]


def plainest_value(field: Field) -> object:
    """The value a person would least expect a field to refuse; None where it has none (a
    choice with no options holds nothing to choose)."""
    if field.type == "checkbox":
        return True
    if field.type in ("radio", "choice"):
        return field.options[0] if field.options else None
    if field.type == "date":
        return min((format_date(day, field.date_format) for day in WEEK), key=len)
    return "X"


@pytest.fixture(autouse=True)
def _quiet_pypdf() -> None:
    """pypdf logs each repair it makes to a broken form; hundreds of forms flood the log."""
    logging.getLogger("pypdf").setLevel(logging.ERROR)


@pytest.mark.parametrize(
    "path", [path for _, path in FORMS], ids=[f"{key}/{path.name}" for key, path in FORMS]
)
def test_every_field_takes_a_value_that_fits_it(path: Path) -> None:
    template = Template(path.read_bytes())
    values = {
        f.name: value
        for f in template.fields
        if not f.read_only and (value := plainest_value(f)) is not None
    }
    filled = template.fill(values)
    assert filled.startswith(b"%PDF")
