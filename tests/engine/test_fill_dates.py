"""Dates in a form's own format (``engine.dates``): kept as written in that format, written
in it from ISO 8601, refused otherwise; a converted date box gets a format it can hold."""

from __future__ import annotations

import datetime as dt
import io
import re

import pytest
from pypdf import PdfReader

from fillpdf_provider.engine import FieldValueError, SchemaError, Template, inspect
from fillpdf_provider.engine.acroform_writer import date_format_for
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.dates import as_iso, form_date, parse_form_date, shortest_date
from kits import formedit
from kits.flatkit import flat_form
from kits.formkit import Spec, build_form


@pytest.mark.parametrize(
    ("text", "af_format", "day"),
    [
        ("03/05/2025", "mm/dd/yyyy", dt.date(2025, 3, 5)),
        ("3/5/2025", "mm/dd/yyyy", dt.date(2025, 3, 5)),
        ("05.03.2025", "dd.mm.yyyy", dt.date(2025, 3, 5)),
        ("5 Mar 2025", "d mmm yyyy", dt.date(2025, 3, 5)),
        ("March 5, 2025", "mmmm d, yyyy", dt.date(2025, 3, 5)),
        ("03052025", "mmddyyyy", dt.date(2025, 3, 5)),
        ("030525", "mmddyy", dt.date(2025, 3, 5)),
        ("2025", "yyyy", dt.date(2025, 1, 1)),  # a year alone
        (" 03/05/2025 ", "mm/dd/yyyy", dt.date(2025, 3, 5)),
        ("19/02/2025", "mm/dd/yyyy", None),  # no 19th month
        ("02/30/2025", "mm/dd/yyyy", None),  # no 30 February
        ("2025-03-05", "mm/dd/yyyy", None),  # ISO is not the form's format
    ],
)
def test_a_date_is_read_in_the_forms_format(text: str, af_format: str, day: dt.date | None) -> None:
    assert parse_form_date(text, af_format) == day


def test_iso_is_written_in_the_forms_format_and_the_forms_own_is_kept() -> None:
    assert form_date("d", "2025-03-05", "mm/dd/yyyy") == "03/05/2025"
    assert form_date("d", "2025-03-05T00:00:00", "dd.mm.yyyy") == "05.03.2025"
    assert form_date("d", "3/5/2025", "mm/dd/yyyy") == "3/5/2025"
    assert form_date("d", " 03/05/2025 ", "mm/dd/yyyy") == "03/05/2025"  # no spaces kept
    assert form_date("d", "2025", "yyyy") == "2025"
    assert as_iso("3/5/2025", "mm/dd/yyyy") == "2025-03-05"
    assert as_iso("soon", "mm/dd/yyyy") == "soon"


def test_neither_is_refused_naming_the_field_the_value_and_the_format() -> None:
    with pytest.raises(FieldValueError) as caught:
        form_date("born", "19/02/2025", "mm/dd/yyyy")
    assert str(caught.value) == (
        "Field 'born': '19/02/2025' is not a date in the form's format mm/dd/yyyy (e.g. "
        "03/05/2025) or in ISO 8601 (e.g. 2025-03-05); give the date in one of those."
    )
    assert caught.value.param == "born"


def test_a_format_with_parts_the_rule_cannot_read_takes_the_text_as_given() -> None:
    assert form_date("at", "tomorrow", "mm/dd/yyyy HH:MM") == "tomorrow"


def test_a_converted_date_box_gets_a_format_it_can_hold() -> None:
    assert [date_format_for(n) for n in (None, 10, 9, 8, 6, 4)] == [
        "mm/dd/yyyy", "mm/dd/yyyy", "mmddyyyy", "mmddyyyy", "mmddyy", "mm/dd/yyyy",
    ]  # fmt: skip
    schema = [
        {"name": "born", "type": "date", "page": 0, "rect": [150, 655, 450, 675], "max_length": 8}
    ]
    form = Template(convert(flat_form(1), schema=schema).pdf)
    assert form.date_format("born") == "mmddyyyy"
    filled = form.fill({"born": "2025-03-05"})  # ISO, 10 characters: 8 in the box's format
    assert (PdfReader(io.BytesIO(filled)).get_fields() or {})["born"]["/V"] == "03052025"


def _date_box(max_length: int, af_format: str) -> bytes:
    """A one-field form: a date script of ``af_format`` on a box of ``max_length`` characters."""
    pdf = build_form([Spec("year", "text", (40, 700, 120, 716), max_length=max_length)])
    return formedit.add_date_script(pdf, "year", af_format)


def test_a_date_format_longer_than_the_limit_makes_a_text_field() -> None:
    pdf = _date_box(2, "mm/dd/yyyy")  # a year's last two digits, as some tax forms ask
    (field,) = inspect(pdf)
    assert (field.type, field.date_format, field.max_length) == ("text", None, 2)
    assert "date_format" not in field.to_dict()
    form = Template(pdf)
    assert form.date_format("year") is None
    filled = form.fill({"year": "25"})
    assert (PdfReader(io.BytesIO(filled)).get_fields() or {})["year"]["/V"] == "25"
    with pytest.raises(FieldValueError, match="over the field's limit of 2"):
        form.fill({"year": "2025"})  # the limit still holds


@pytest.mark.parametrize(
    ("max_length", "af_format"), [(10, "mm/dd/yyyy"), (6, "mmddyy"), (4, "yyyy"), (3, "mmm")]
)
def test_a_date_format_that_fits_the_limit_keeps_a_date_field(
    max_length: int, af_format: str
) -> None:
    (field,) = inspect(_date_box(max_length, af_format))
    assert (field.type, field.date_format) == ("date", af_format)


@pytest.mark.parametrize(
    ("af_format", "shortest"),
    [("mm/dd/yyyy", 10), ("m/d/yy", 6), ("d mmmm yyyy", 10), ("dddd", 6), ("yyyy", 4)],
)
def test_the_shortest_date_a_format_writes(af_format: str, shortest: int) -> None:
    assert shortest_date(af_format) == shortest


@pytest.mark.parametrize(
    ("extra", "said"),
    [({}, "format mm/dd/yyyy (at least 10"), ({"date_format": "dd.mm.yyyy"}, "at least 10")],
)
def test_a_schema_date_box_that_holds_no_date_is_refused(extra: dict, said: str) -> None:
    schema = [
        {"name": "year", "type": "date", "page": 0, "rect": [150, 655, 190, 675], "max_length": 4}
        | extra
    ]
    with pytest.raises(SchemaError, match=r"schema\[0\] \('year'\): max_length 4 holds no date"):
        convert(flat_form(1), schema=schema)
    with pytest.raises(SchemaError, match=re.escape(said)):
        convert(flat_form(1), schema=schema)
