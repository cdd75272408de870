"""Real forms made flat, converted, then filled: every detected field shows its value.

Each corpus form loses its widgets and ``/AcroForm`` (as a scanned-then-OCRed or printed
form would have none), goes through ``convert``, and the fillable result is filled with a
value for every field. What a person sees is checked on the appearance streams alone:
PDFium bakes them into pages whose own content is removed first.
"""

from __future__ import annotations

import datetime as dt
import io
import re

import pdfplumber
import pytest

from fillpdf_provider.engine import Fit, Template
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.dates import format_date
from kits import viewcheck
from kits.flatten import flatten_form
from tests.engine.test_corpus_roundtrip import CORPUS, FORMS, SMALLEST

pytestmark = pytest.mark.skipif(
    not FORMS, reason=f"no corpus forms in {CORPUS} (set FILLPDF_CORPUS to point at them)"
)

NAME = re.compile(r"^[a-z0-9_]+$")
TEXTS = ("Zoë 12", "Ελλάδα", "Кирилл", "Ann Lee")


def _values(template: Template) -> dict[str, object]:
    values: dict[str, object] = {}
    for index, field in enumerate(template.fields):
        if field.type == "checkbox":
            values[field.name] = True
        elif field.type in ("radio", "choice"):
            if field.options:
                values[field.name] = field.options[-1]
        elif field.type == "date":  # in the form's own format, as the filler requires
            values[field.name] = format_date(dt.date(2024, 1, 2), template.date_format(field.name))
        elif field.max_length:
            values[field.name] = "1234567890"[: field.max_length]
        else:
            values[field.name] = TEXTS[index % len(TEXTS)]
    return values


@pytest.mark.parametrize("form", FORMS)
def test_converted_form_fills_and_shows_every_value(form: str) -> None:
    original = (CORPUS / form).read_bytes()
    flat = flatten_form(original)
    result = convert(flat)
    assert result.pages == len(Template(original)._reader.pages)
    names = [f.name for f in result.schema]
    assert len(names) == len(set(names)), "duplicate names"
    assert all(NAME.match(n) for n in names), [n for n in names if not NAME.match(n)]
    assert all(0.0 <= f.confidence <= 1.0 for f in result.schema)
    if not result.schema:
        return
    template = Template(result.pdf)
    values = _values(template)
    filled = template.fill(values, fit=Fit(min_size=SMALLEST))
    shown = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    blank = viewcheck.flatten_with_pdfium(result.pdf, drop_page_content=True)
    unseen = []
    with (
        viewcheck.Raster(shown) as after,
        viewcheck.Raster(blank) as before,
        pdfplumber.open(io.BytesIO(shown)) as plumber,
    ):
        for widget in viewcheck.visible_widgets(filled):
            value = values.get(widget.name)
            if value is None:
                continue
            if isinstance(value, str) and widget.field_type != "Btn":
                text = viewcheck.text_in_rect(
                    plumber, widget.page, widget.rect, drawn_by_widget=True
                )
                if text != viewcheck.squash(value):
                    unseen.append((widget.name, value, text))
            elif value is True or value in widget.on_states:
                gained = after.ink(widget.page, widget.rect) - before.ink(widget.page, widget.rect)
                if gained < 8:
                    unseen.append((widget.name, value, "no mark"))
    assert not unseen, f"{len(unseen)} values not visible: {unseen[:8]}"
