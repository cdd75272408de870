"""Output bytes: the same every time, an incremental update that any reader opens, and a
flattened variant that has no form left."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pdfplumber
import pypdfium2 as pdfium
import pytest
from pypdf.generic import BooleanObject

from fillpdf_provider.engine import Template, fill
from kits import formedit, viewcheck
from kits.formkit import Spec, bench_rows, build_form
from kits.viewcheck import squash

ROOT = Path(__file__).resolve().parents[2]
BOX = (40, 700, 290, 716)


@pytest.fixture(scope="module")
def row() -> dict[str, object]:
    """A bench row with Latin, Greek and Cyrillic text, ticked boxes and chosen options."""
    values = bench_rows(1, seed=3)[0]
    values.update(first_name="Ελένη", last_name="Кузнецова", company="Zoë Ångström AB")
    values.update(opt_in_email=True, opt_in_sms=True, shipping="express", size="XL")
    return values


# --------------------------------------------------------------------------- same bytes


def test_same_template_and_values_give_the_same_bytes(bench_pdf: bytes, row: dict) -> None:
    template = Template(bench_pdf)
    first = template.fill(row)
    assert template.fill(row) == first
    assert Template(bench_pdf).fill(row) == first
    assert fill(bench_pdf, row) == first


def test_same_bytes_after_filling_other_rows_in_between(bench_pdf: bytes, row: dict) -> None:
    template = Template(bench_pdf)
    first = template.fill(row)
    for other in bench_rows(5, seed=9):
        template.fill(other)
    assert template.fill(row) == first


def test_flatten_gives_the_same_bytes(bench_pdf: bytes, row: dict) -> None:
    template = Template(bench_pdf)
    assert template.fill(row, flatten=True) == Template(bench_pdf).fill(row, flatten=True)


def test_value_order_does_not_matter(bench_pdf: bytes, row: dict) -> None:
    reverse = dict(reversed(list(row.items())))
    assert fill(bench_pdf, reverse) == fill(bench_pdf, row)


_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from kits.formkit import bench_form, bench_rows
from fillpdf_provider.engine import fill
row = bench_rows(1, seed=3)[0]
row.update(first_name="Ελένη", last_name="Кузнецова", company="Zoë Ångström AB")
row.update(opt_in_email=True, opt_in_sms=True, shipping="express", size="XL")
sys.stdout.buffer.write(fill(bench_form(), row))
"""


def _start_fresh_process(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(ROOT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
        cwd=ROOT,
    )


def _output_of(process: subprocess.Popen[bytes]) -> bytes:
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr.decode(errors="replace")
    return stdout


def test_same_bytes_in_fresh_processes(bench_pdf: bytes, row: dict) -> None:
    # different hash seeds and clocks: nothing of either may reach the output
    one = _start_fresh_process({"PYTHONHASHSEED": "1", "SOURCE_DATE_EPOCH": "0"})
    two = _start_fresh_process({"PYTHONHASHSEED": "2", "SOURCE_DATE_EPOCH": "1700000000"})
    here = fill(bench_pdf, row)
    first, second = _output_of(one), _output_of(two)
    assert first == second
    assert first == here


def test_id_keeps_the_first_part_and_changes_the_second(bench_pdf: bytes) -> None:
    a = formedit.reader(fill(bench_pdf, {"first_name": "Anna"})).trailer["/ID"]
    b = formedit.reader(fill(bench_pdf, {"first_name": "Berta"})).trailer["/ID"]
    a2 = formedit.reader(fill(bench_pdf, {"first_name": "Anna"})).trailer["/ID"]
    assert a[0] == b[0]
    assert a[1] != b[1]
    assert list(a) == list(a2)


def test_id_first_part_is_kept_from_a_template_that_has_one(bench_pdf: bytes) -> None:
    first = fill(bench_pdf, {"first_name": "Anna"})
    template_id = formedit.reader(first).trailer["/ID"][0]
    again = fill(first, {"first_name": "Berta"})
    assert formedit.reader(again).trailer["/ID"][0] == template_id


# --------------------------------------------------------------------------- readable output


def _read_everything(out: bytes) -> None:
    reader = formedit.reader(out, strict=True)
    for page in reader.pages:
        page.extract_text()
        for annot in page.get("/Annots", []) or []:
            annot.get_object()
    with pdfplumber.open(io.BytesIO(out)) as doc:
        for page in doc.pages:
            page.extract_text()
            _ = page.annots
    pdfium.PdfDocument(out).close()


def test_output_reopens_in_pypdf_pdfplumber_and_pdfium(bench_pdf: bytes, row: dict) -> None:
    out = fill(bench_pdf, row)
    _read_everything(out)
    fields = formedit.reader(out, strict=True).get_fields() or {}
    assert fields["first_name"]["/V"] == "Ελένη"
    assert fields["opt_in_sms"]["/V"] == "/1"


def test_flattened_output_reopens(bench_pdf: bytes, row: dict) -> None:
    _read_everything(fill(bench_pdf, row, flatten=True))


def test_output_is_an_incremental_update_of_the_template(bench_pdf: bytes, row: dict) -> None:
    out = fill(bench_pdf, row)
    assert out.startswith(bench_pdf)
    tail = out[len(bench_pdf) :]
    assert tail.count(b"startxref") == 1 and tail.rstrip().endswith(b"%%EOF")
    assert b"/Prev" in tail


def test_update_of_an_update_chains(bench_pdf: bytes) -> None:
    first = fill(bench_pdf, {"first_name": "Anna", "terms": True})
    second = fill(first, {"first_name": "Berta"})
    assert second.startswith(first)
    _read_everything(second)
    values = formedit.stored_values(second)
    assert values["first_name"] == "Berta"
    assert values["terms"] == "/Yes"


def test_template_with_an_xref_stream(bench_pdf: bytes) -> None:
    specs = [Spec("t", "text", BOX), Spec("c", "checkbox", (40, 650, 52, 662))]
    template = formedit.to_xref_stream(build_form(specs))
    formedit.reader(template, strict=True)  # the fixture itself is sound
    out = fill(template, {"t": "Ελληνικά", "c": True})
    assert out.startswith(template)
    _read_everything(out)
    assert formedit.stored_values(out) == {"t": "Ελληνικά", "c": "/Yes"}
    assert viewcheck.text_in_rect(viewcheck.flatten_with_pdfium(out), 0, BOX) == "Ελληνικά"


def test_xfa_is_removed_from_the_acroform() -> None:
    pdf = build_form([Spec("t", "text", BOX)], xfa=True)
    assert "/XFA" in formedit.acroform(pdf)
    for out in (fill(pdf, {"t": "x"}), fill(pdf, {})):
        assert "/XFA" not in formedit.acroform(out)


def test_need_appearances_is_not_true() -> None:
    pdf = build_form([Spec("t", "text", BOX)])
    pdf = formedit.set_acroform(pdf, {"/NeedAppearances": BooleanObject(True)})
    out = fill(pdf, {"t": "x"})
    assert formedit.acroform(out).get("/NeedAppearances", False) is not True
    assert not formedit.acroform(out).get("/NeedAppearances", False)


def test_acroform_keeps_its_fields_and_resources(bench_pdf: bytes) -> None:
    out = fill(bench_pdf, {"first_name": "Anna"})
    before, after = formedit.acroform(bench_pdf), formedit.acroform(out)
    assert len(after["/Fields"]) == len(before["/Fields"])
    assert set(before["/DR"]["/Font"]) <= set(after["/DR"]["/Font"])


# --------------------------------------------------------------------------- flatten


@pytest.fixture(scope="module")
def flattened(bench_pdf: bytes, row: dict) -> bytes:
    return fill(bench_pdf, row, flatten=True)


def test_flatten_leaves_no_form_and_no_widgets(flattened: bytes) -> None:
    has_form, widgets = viewcheck.count_widgets(flattened)
    assert not has_form
    assert widgets == 0


def test_flattened_text_is_on_the_page(bench_pdf: bytes, row: dict, flattened: bytes) -> None:
    rects = {w.name: w.rect for w in viewcheck.visible_widgets(bench_pdf)}
    with pdfplumber.open(io.BytesIO(flattened)) as doc:
        for name in ("first_name", "last_name", "company", "billing.street", "invoice_no"):
            others = [r for n, r in rects.items() if n != name]
            got = viewcheck.text_in_rect(doc, 0, rects[name], others=others)
            assert got == squash(str(row[name])), name


def test_flattened_choice_shows_its_display_text(bench_pdf: bytes, flattened: bytes) -> None:
    rect = next(w.rect for w in viewcheck.visible_widgets(bench_pdf) if w.name == "currency")
    row_currency = {"EUR": "Euro", "USD": "USdollar", "GBP": "Poundsterling", "SEK": "Swedishkrona"}
    got = viewcheck.text_in_rect(flattened, 0, rect)
    assert got in row_currency.values()


def test_flattened_buttons_show_their_state(bench_pdf: bytes) -> None:
    values = {"opt_in_email": True, "opt_in_sms": False, "terms": True, "size": "XL"}
    on = fill(bench_pdf, values, flatten=True)
    off = fill(bench_pdf, {"opt_in_email": False, "terms": False}, flatten=True)
    widgets = viewcheck.widgets_by_name(viewcheck.visible_widgets(bench_pdf))
    for name, ticked in (("opt_in_email", True), ("opt_in_sms", False), ("terms", True)):
        rect = widgets[name][0].rect
        gain = viewcheck.ink_in_rect(on, 0, rect) - viewcheck.ink_in_rect(off, 0, rect)
        assert (gain >= 20) == ticked, (name, gain)
    xl = widgets["size"][3].rect
    assert viewcheck.ink_in_rect(on, 0, xl) - viewcheck.ink_in_rect(off, 0, xl) >= 20


def test_flatten_keeps_the_page_content(bench_pdf: bytes, flattened: bytes) -> None:
    with pdfplumber.open(io.BytesIO(flattened)) as doc:
        text = doc.pages[0].extract_text()
    assert "Order and Customer Record" in text  # printed by the template itself


def test_flatten_keeps_non_widget_annotations() -> None:
    pdf = formedit.add_link(build_form([Spec("t", "text", BOX)]), (40, 40, 200, 60))
    flat = fill(pdf, {"t": "linked"}, flatten=True)
    annots = [a.get_object() for a in formedit.reader(flat).pages[0].get("/Annots", [])]
    assert [a["/Subtype"] for a in annots] == ["/Link"]
    assert annots[0]["/A"]["/URI"] == "https://example.com/"


def test_flatten_does_not_draw_hidden_fields(bench_pdf: bytes) -> None:
    flat = fill(bench_pdf, {"internal_ref": "SECRET1"}, flatten=True)
    with pdfplumber.open(io.BytesIO(flat)) as doc:
        assert "SECRET1" not in (doc.pages[0].extract_text() or "")


def test_flatten_of_rotated_widget_lands_in_its_rect() -> None:
    rect = (300, 400, 316, 560)
    pdf = build_form([Spec("r", "text", rect, mk_rotation=90)])
    flat = fill(pdf, {"r": "Sideways"}, flatten=True)
    assert viewcheck.text_in_rect(flat, 0, rect) == "Sideways"


def test_flatten_on_every_page() -> None:
    specs = [Spec("one", "text", BOX), Spec("two", "text", BOX, page=1)]
    flat = fill(build_form(specs, pages=2), {"one": "first", "two": "second"}, flatten=True)
    assert viewcheck.text_in_rect(flat, 0, BOX) == "first"
    assert viewcheck.text_in_rect(flat, 1, BOX) == "second"
    assert viewcheck.count_widgets(flat) == (False, 0)


def test_flatten_of_a_filled_output_keeps_earlier_values() -> None:
    specs = [Spec("a", "text", BOX), Spec("b", "text", (40, 600, 290, 616))]
    first = fill(build_form(specs), {"a": "earlier"})
    flat = fill(first, {"b": "later"}, flatten=True)
    assert viewcheck.text_in_rect(flat, 0, BOX) == "earlier"
    assert viewcheck.text_in_rect(flat, 0, (40, 600, 290, 616)) == "later"


def test_flattened_size_is_close_to_the_filled_size(bench_pdf: bytes, row: dict) -> None:
    filled = fill(bench_pdf, row)
    flat = fill(bench_pdf, row, flatten=True)
    assert len(flat) <= 1.5 * len(filled)
