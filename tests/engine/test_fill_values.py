"""What a person sees on a filled form: only the engine's appearance streams count.

Each output is flattened by PDFium (which draws existing appearances and never makes its
own) with the page's printed labels dropped, then read back with pdfplumber (text and char
positions) or rendered (ink and colour).
"""

from __future__ import annotations

import io
import math
from typing import Any

import pdfplumber
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest
from pypdf.generic import NameObject, NumberObject, TextStringObject

from fillpdf_provider.engine import Template, fill
from kits import formedit, viewcheck
from kits.formkit import Spec, bench_rows, build_form, sample_rows
from kits.viewcheck import squash

Rect = tuple[float, float, float, float]
BOX: Rect = (40, 700, 290, 716)
#: Dark pixels (render scale 2) a ticked box or chosen radio button gains, at least.
INK_GAIN = 20


def shown(out: bytes) -> bytes:
    """The output as a viewer shows it: appearances baked in, page content dropped."""
    return viewcheck.flatten_with_pdfium(out, drop_page_content=True)


def one_field(spec: Spec, value: object, **build: Any) -> tuple[bytes, bytes]:
    """Fill a form holding only ``spec``; (output, what a viewer shows)."""
    out = fill(build_form([spec], **build), {spec.name: value})
    return out, shown(out)


def outside(chars: list[dict[str, Any]], rect: Rect, tol: float = 0.5) -> list[str]:
    """Descriptions of the chars whose box sticks out of ``rect`` (by more than ``tol``)."""
    x0, y0, x1, y1 = rect
    out = []
    for c in chars:
        if c["x0"] < x0 - tol or c["x1"] > x1 + tol or c["y0"] < y0 - tol or c["y1"] > y1 + tol:
            out.append(
                f"{c['text']!r} at ({c['x0']:.1f}, {c['y0']:.1f}, {c['x1']:.1f}, {c['y1']:.1f})"
            )
    return out


def glyph_chars(flat: bytes, page: int = 0) -> list[dict[str, Any]]:
    return [c for c in formedit.page_chars(flat, page) if c["text"].strip()]


# --------------------------------------------------------------------------- text


TEXTS = [
    "Zoë Ångström",
    "Ελληνικά",
    "Кириллица",
    "Plain ASCII 0123",
    "a(b)c\\d) €5 – “q”",
    "Tiếng Việt",
    "Łódź ἀρετή",
]


@pytest.mark.parametrize("value", TEXTS)
def test_text_value_shows_inside_its_widget(value: str) -> None:
    _out, flat = one_field(Spec("t", "text", BOX), value)
    assert viewcheck.text_in_rect(flat, 0, BOX) == squash(value)
    assert not outside(glyph_chars(flat), BOX)


@pytest.mark.parametrize("value", TEXTS)
def test_text_value_is_stored_in_v(value: str) -> None:
    out, _ = one_field(Spec("t", "text", BOX), value)
    assert formedit.stored_values(out)["t"] == value


def test_non_latin_text_extracts_to_the_value_through_tounicode() -> None:
    value = "Zoë Ελληνικά Кириллица"
    _, flat = one_field(Spec("t", "text", BOX), value)
    text = "".join(c["text"] for c in glyph_chars(flat))
    assert text == value.replace(" ", "")


def test_text_shows_in_every_field_of_a_form(bench_pdf: bytes) -> None:
    values = {
        "first_name": "Zoë",
        "last_name": "Ångström",
        "billing.street": "Οδός Ερμού 24",
        "billing.city": "Москва",
        "contact.email": "zoe@example.com",
    }
    flat = shown(fill(bench_pdf, values))
    rects = {w.name: w.rect for w in viewcheck.visible_widgets(bench_pdf)}
    for name, value in values.items():
        others = [r for n, r in rects.items() if n != name]
        assert viewcheck.text_in_rect(flat, 0, rects[name], others=others) == squash(value), name


def test_text_in_the_da_colour() -> None:
    _, flat = one_field(Spec("t", "text", BOX, da="/Helv 10 Tf 1 0 0 rg"), "Red")
    colours = {tuple(c["non_stroking_color"]) for c in glyph_chars(flat)}
    assert colours == {(1, 0, 0)}


def test_text_in_the_da_size() -> None:
    _, flat = one_field(Spec("t", "text", BOX, da="/Helv 9 Tf 0 g"), "Nine points")
    assert {round(c["size"], 1) for c in glyph_chars(flat)} == {9.0}


def test_da_inherited_from_parent_field() -> None:
    spec = Spec("p.t", "text", BOX, da="/Helv 7 Tf 0 g")
    pdf = formedit.hoist(build_form([spec]), "p.t", ("/DA",))
    flat = shown(fill(pdf, {"p.t": "Seven"}))
    assert {round(c["size"], 1) for c in glyph_chars(flat)} == {7.0}


def test_da_falls_back_to_the_acroform_default() -> None:
    pdf = build_form([Spec("t", "text", BOX)])
    pdf = formedit.set_entries(pdf, "t", {"/DA": None})
    pdf = formedit.set_acroform(pdf, {"/DA": TextStringObject("/Helv 7 Tf 0 g")})
    flat = shown(fill(pdf, {"t": "Seven"}))
    assert {round(c["size"], 1) for c in glyph_chars(flat)} == {7.0}


@pytest.mark.parametrize("value", ["soft\u00adhyphen", "del\x7fchar", "nbsp\u00a0space"])
def test_v_is_a_valid_text_string(value: str) -> None:
    # PDFDocEncoding leaves 0x7F and 0xAD undefined: such values need UTF-16
    out, _ = one_field(Spec("t", "text", BOX), value)
    stored = formedit.stored_values(out)["t"]
    assert isinstance(stored, str)
    assert stored == value


def test_form_without_dr_fonts() -> None:
    out, flat = one_field(Spec("t", "text", BOX), "No resources", dr_fonts=False)
    assert viewcheck.text_in_rect(flat, 0, BOX) == "Noresources"
    assert "/Helv" in formedit.acroform(out)["/DR"]["/Font"]


def test_da_font_missing_from_dr() -> None:
    out, flat = one_field(Spec("t", "text", BOX, da="/Arial 10 Tf 0 g"), "Arial")
    assert viewcheck.text_in_rect(flat, 0, BOX) == "Arial"
    assert "/Arial" in formedit.acroform(out)["/DR"]["/Font"]


def test_text_field_gets_v_and_an_appearance() -> None:
    out, _ = one_field(Spec("t", "text", BOX), "Hello")
    (widget,) = formedit.widgets(formedit.reader(out))["t"]
    assert widget["/V"] == "Hello"
    assert "/N" in widget["/AP"]


@pytest.mark.parametrize("seed", [0, 1])
def test_every_value_of_a_full_row_shows(bench_pdf: bytes, seed: int) -> None:
    row = bench_rows(1, seed=seed)[0]
    flat = shown(fill(bench_pdf, row))
    widgets = viewcheck.widgets_by_name(viewcheck.visible_widgets(bench_pdf))
    rects = [(n, w.rect) for n, own in widgets.items() for w in own]
    with pdfplumber.open(io.BytesIO(flat)) as doc:
        for name, value in row.items():
            if name not in widgets or widgets[name][0].is_button:
                continue
            own = widgets[name][0]
            others = [r for n, r in rects if n != name]
            got = viewcheck.text_in_rect(doc, 0, own.rect, others=others)
            want = squash(viewcheck.display_text(widgets[name], str(value)))
            if own.field_type == "Ch" and not own.is_combo:
                assert want in got, name
            else:
                assert got == want, name


def test_every_value_of_a_sample_row_shows(sample_pdf: bytes) -> None:
    row = sample_rows(4)[3]  # one with a two-line note
    assert "\n" in row["notes"]
    flat = shown(fill(sample_pdf, row))
    widgets = viewcheck.widgets_by_name(viewcheck.visible_widgets(sample_pdf))
    rects = [(n, w.rect) for n, own in widgets.items() for w in own]
    with pdfplumber.open(io.BytesIO(flat)) as doc:
        for name in ("full_name", "email", "street", "city", "zip", "country", "notes"):
            others = [r for n, r in rects if n != name]
            got = viewcheck.text_in_rect(doc, 0, widgets[name][0].rect, others=others)
            assert got == squash(str(row[name])), name


# --------------------------------------------------------------------------- sizing


@pytest.mark.parametrize("da", ["/Helv 0 Tf 0 g", "/Helv 12 Tf 0 g"])
def test_long_text_shrinks_to_stay_inside_the_box(da: str) -> None:
    rect: Rect = (40, 700, 160, 716)
    value = "A long value that cannot fit at twelve points"
    _, flat = one_field(Spec("t", "text", rect, da=da), value)
    chars = glyph_chars(flat)
    assert squash("".join(c["text"] for c in chars)) == squash(value)
    assert not outside(chars, rect)
    assert max(c["size"] for c in chars) < 9


def test_auto_size_short_text_is_readable() -> None:
    _, flat = one_field(Spec("t", "text", BOX, da="/Helv 0 Tf 0 g"), "Short")
    sizes = {c["size"] for c in glyph_chars(flat)}
    assert len(sizes) == 1 and 8 <= sizes.pop() <= 14


def test_multiline_wraps_inside_the_box() -> None:
    rect: Rect = (40, 500, 200, 580)
    value = "The quick brown fox jumps over the lazy dog, again and again, until it is tired."
    _, flat = one_field(Spec("m", "text", rect, multiline=True), value)
    chars = glyph_chars(flat)
    lines = sorted({round(c["y0"]) for c in chars}, reverse=True)
    assert len(lines) >= 2
    assert not outside(chars, rect)
    # reading order: top line first, and nothing lost
    assert squash("".join(c["text"] for c in chars)) == squash(value)
    assert round(chars[0]["y0"]) == lines[0]


def test_multiline_keeps_line_breaks() -> None:
    rect: Rect = (40, 500, 290, 580)
    _, flat = one_field(Spec("m", "text", rect, multiline=True), "first\nsecond\nthird")
    chars = glyph_chars(flat)
    by_line: dict[int, str] = {}
    for c in chars:
        by_line[round(c["y0"])] = by_line.get(round(c["y0"]), "") + c["text"]
    assert [by_line[y] for y in sorted(by_line, reverse=True)] == ["first", "second", "third"]


def test_multiline_too_much_text_shrinks_to_stay_inside() -> None:
    rect: Rect = (40, 500, 200, 540)
    value = " ".join(["overflowing"] * 30)
    _, flat = one_field(Spec("m", "text", rect, multiline=True), value)
    chars = glyph_chars(flat)
    assert squash("".join(c["text"] for c in chars)) == squash(value)
    assert not outside(chars, rect)


def test_comb_puts_each_char_in_its_own_cell() -> None:
    rect: Rect = (300, 700, 400, 716)
    _, flat = one_field(Spec("zip", "text", rect, comb=5), "12345")
    chars = glyph_chars(flat)
    assert "".join(c["text"] for c in chars) == "12345"
    cell = (rect[2] - rect[0]) / 5
    for i, c in enumerate(chars):
        centre = (c["x0"] + c["x1"]) / 2
        assert rect[0] + i * cell < centre < rect[0] + (i + 1) * cell, (i, centre)


def test_comb_short_value_starts_in_the_first_cell() -> None:
    rect: Rect = (300, 700, 480, 716)
    _, flat = one_field(Spec("tax", "text", rect, comb=9), "1234")
    chars = glyph_chars(flat)
    cell = (rect[2] - rect[0]) / 9
    centres = [(c["x0"] + c["x1"]) / 2 for c in chars]
    assert [int((x - rect[0]) // cell) for x in centres] == [0, 1, 2, 3]


@pytest.mark.parametrize("quadding", [0, 1, 2])
def test_quadding_aligns_text(quadding: int) -> None:
    _, flat = one_field(Spec("q", "text", BOX, quadding=quadding), "Aligned")
    chars = glyph_chars(flat)
    left, right = chars[0]["x0"] - BOX[0], BOX[2] - chars[-1]["x1"]
    assert left >= 0 and right >= 0
    if quadding == 0:
        assert left < 5 < right
    elif quadding == 1:
        assert abs(left - right) < 1.5
    else:
        assert right < 5 < left


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_mk_rotated_text_lands_inside_its_rect(rotation: int) -> None:
    rect: Rect = (300, 400, 316, 560) if rotation % 180 else (300, 400, 460, 416)
    spec = Spec("r", "text", rect, mk_rotation=rotation)
    _, flat = one_field(spec, "Rotated text")
    chars = glyph_chars(flat)
    assert "".join(c["text"] for c in chars) == "Rotatedtext"
    assert not outside(chars, rect, tol=1.0)
    # the baseline turns counter-clockwise by /R, as viewers draw it
    directions = set()
    for c in chars:
        a, b = c["matrix"][:2]
        norm = math.hypot(a, b)
        directions.add((round(a / norm), round(b / norm)))
    assert directions == {{90: (0, 1), 180: (-1, 0), 270: (0, -1)}[rotation]}


def test_quadding_inherited_from_parent_field() -> None:
    pdf = formedit.hoist(build_form([Spec("p.t", "text", BOX, quadding=2)]), "p.t", ("/Q",))
    chars = glyph_chars(shown(fill(pdf, {"p.t": "Right"})))
    assert BOX[2] - chars[-1]["x1"] < 5


def test_quadding_falls_back_to_the_acroform_default() -> None:
    pdf = formedit.set_acroform(build_form([Spec("t", "text", BOX)]), {"/Q": NumberObject(2)})
    chars = glyph_chars(shown(fill(pdf, {"t": "Right"})))
    assert BOX[2] - chars[-1]["x1"] < 5


def test_text_on_a_rotated_page_lands_inside_its_rect() -> None:
    _, flat = one_field(Spec("t", "text", BOX), "Turned page", rotate=90)
    assert viewcheck.text_in_rect(flat, 0, BOX) == "Turnedpage"


def tight_glyph_boxes(flat: bytes, page: int = 0) -> list[tuple[str, tuple[float, ...]]]:
    """Each drawn char and PDFium's tight box of its glyph (user space): the ink it would
    show were the appearance's clip not there to cut it off."""
    doc = pdfium.PdfDocument(flat)
    try:
        text = doc[page].get_textpage()
        chars = [chr(pdfium_c.FPDFText_GetUnicode(text, i)) for i in range(text.count_chars())]
        return [(c, text.get_charbox(i, loose=False)) for i, c in enumerate(chars) if c.strip()]
    finally:
        doc.close()


@pytest.mark.parametrize("rotation", [180, 270])
def test_multiline_text_on_a_turned_page_without_mk_r_stays_in_its_box(rotation: int) -> None:
    # Rows that are wide on a page turned 270 degrees are tall and thin in the page's own
    # space; without /MK /R their text runs along that space, in lines a few points wide.
    rows: list[Rect] = [(60 + 30 * i, 100, 60 + 30 * i + width, 500) for i, width in
                        enumerate((8, 10, 12, 14, 20))]  # fmt: skip
    specs = [Spec(f"row{i}", "text", r, multiline=True, da="/Helv 12 Tf 0 g") for i, r in
             enumerate(rows)]  # fmt: skip
    value = "Delivery to Müller-Lüdenscheid Ærø via Wümme"
    flat = shown(fill(build_form(specs, rotate=rotation), {s.name: value for s in specs}))
    glyphs = tight_glyph_boxes(flat)
    for rect in rows:
        x0, y0, x1, y1 = rect
        inside = [(c, b) for c, b in glyphs if x0 - 5 < (b[0] + b[2]) / 2 < x1 + 5]
        drawn = "".join(c for c, _ in inside if c not in "-\x02")  # PDFium: a line's last hyphen
        assert squash(drawn) == squash(value.replace("-", ""))  # is a soft one, code 2
        past = [(c, b) for c, b in inside if b[0] < x0 - 0.5 or b[2] > x1 + 0.5]
        assert not past, f"{rect}: glyphs past the box {past[:3]}"
        assert all(y0 - 0.5 <= b[1] and b[3] <= y1 + 0.5 for _, b in inside)


def test_text_on_the_second_page() -> None:
    specs = [Spec("one", "text", BOX), Spec("two", "text", BOX, page=1)]
    flat = shown(fill(build_form(specs, pages=2), {"two": "Page two"}))
    assert viewcheck.text_in_rect(flat, 1, BOX) == "Pagetwo"
    assert viewcheck.text_in_rect(flat, 0, BOX) == ""


def test_field_with_two_widgets_shows_in_both() -> None:
    second: Rect = (40, 600, 290, 616)
    pdf = formedit.split_widget(build_form([Spec("total", "text", BOX)]), "total", second)
    out = fill(pdf, {"total": "42.00"})
    flat = shown(out)
    assert viewcheck.text_in_rect(flat, 0, BOX) == "42.00"
    assert viewcheck.text_in_rect(flat, 0, second) == "42.00"
    assert formedit.stored_values(out)["total"] == "42.00"


def test_signature_text_is_drawn_in_its_box() -> None:
    rect: Rect = (40, 700, 290, 730)
    _, flat = one_field(Spec("sig", "signature", rect), "J. Doe")
    assert viewcheck.text_in_rect(flat, 0, rect) == "J.Doe"


def test_refilling_replaces_the_value() -> None:
    pdf = build_form([Spec("t", "text", BOX)])
    first = fill(pdf, {"t": "First"})
    second = fill(first, {"t": "Second"})
    assert viewcheck.text_in_rect(shown(second), 0, BOX) == "Second"
    assert formedit.stored_values(second)["t"] == "Second"
    cleared = fill(first, {"t": ""})
    assert viewcheck.text_in_rect(shown(cleared), 0, BOX) == ""


def test_fields_left_out_stay_empty(bench_pdf: bytes) -> None:
    out = fill(bench_pdf, {"first_name": "Only"})
    values = formedit.stored_values(out)
    assert values["first_name"] == "Only"
    assert values["last_name"] is None
    assert str(values["terms"]) in ("/Off", "None")


# --------------------------------------------------------------------------- buttons


CHECKBOXES = [
    Spec("box_ja", "checkbox", (40, 700, 52, 712), on_state="Ja", with_appearance=True),
    Spec("box_1", "checkbox", (80, 700, 92, 712), on_state="1", with_appearance=True),
    Spec("box_on", "checkbox", (120, 700, 132, 712), on_state="On", with_appearance=True),
    Spec("box_yes", "checkbox", (160, 700, 172, 712)),  # no /AP: the engine draws one
]


@pytest.fixture(scope="module")
def checkbox_outputs() -> tuple[bytes, bytes]:
    pdf = build_form(CHECKBOXES)
    ticked = fill(pdf, {s.name: True for s in CHECKBOXES})
    unticked = fill(pdf, {s.name: False for s in CHECKBOXES})
    return ticked, unticked


@pytest.mark.parametrize("spec", CHECKBOXES, ids=lambda s: s.on_state)
def test_ticked_checkbox_gains_ink(checkbox_outputs: tuple[bytes, bytes], spec: Spec) -> None:
    ticked, unticked = (shown(o) for o in checkbox_outputs)
    gain = viewcheck.ink_in_rect(ticked, 0, spec.rect) - viewcheck.ink_in_rect(
        unticked, 0, spec.rect
    )
    assert gain >= INK_GAIN


@pytest.mark.parametrize("spec", CHECKBOXES, ids=lambda s: s.on_state)
def test_checkbox_as_and_v_are_the_on_state(
    checkbox_outputs: tuple[bytes, bytes], spec: Spec
) -> None:
    ticked, unticked = checkbox_outputs
    assert formedit.states(ticked, spec.name) == [spec.on_state]
    assert formedit.stored_values(ticked)[spec.name] == "/" + spec.on_state
    assert formedit.states(unticked, spec.name) == ["Off"]
    assert formedit.stored_values(unticked)[spec.name] == "/Off"


def test_unticking_a_ticked_box() -> None:
    spec = CHECKBOXES[0]
    ticked = fill(build_form([spec]), {spec.name: True})
    unticked = fill(ticked, {spec.name: False})
    assert formedit.states(unticked, spec.name) == ["Off"]
    assert viewcheck.ink_in_rect(shown(unticked), 0, spec.rect) < INK_GAIN


def test_on_state_with_space_and_hash_is_an_escaped_name() -> None:
    # an on-state with a space and a '#' must be written as an escaped PDF name
    spec = Spec("odd", "checkbox", (40, 700, 52, 712), on_state="A b#c", with_appearance=True)
    out = fill(build_form([spec]), {"odd": True})
    assert formedit.states(out, "odd") == ["A b#c"]
    assert str(formedit.stored_values(out)["odd"]) == "/A b#c"
    assert isinstance(formedit.stored_values(out)["odd"], NameObject)


RADIOS = [
    Spec(
        "shipping",
        "radio",
        (40, 600, 290, 612),
        options=["standard", "express", "overnight"],
        with_appearance=True,
    ),
    Spec(
        "size",
        "radio",
        (322, 600, 572, 612),
        options=["S", "M", "L", "XL"],
        radio_use_opt=True,
        with_appearance=True,
    ),
    # /Opt but no /AP: the engine draws the kids and must tell them apart itself
    Spec("drawn", "radio", (40, 500, 290, 512), options=["x", "y", "z"], radio_use_opt=True),
]


@pytest.fixture(scope="module")
def radio_form() -> bytes:
    return build_form(RADIOS)


@pytest.mark.parametrize(
    ("name", "value"),
    [(s.name, o) for s in RADIOS for o, _ in s.pairs],
)
def test_radio_chooses_the_kid_of_the_export_value(
    radio_form: bytes, name: str, value: str
) -> None:
    spec = next(s for s in RADIOS if s.name == name)
    index = [o for o, _ in spec.pairs].index(value)
    out = fill(radio_form, {name: value})
    kid_states = formedit.states(out, name)
    chosen = kid_states[index]
    assert chosen != "Off"
    assert kid_states[:index] + kid_states[index + 1 :] == ["Off"] * (len(spec.pairs) - 1)
    if spec.with_appearance:
        assert chosen == spec.kid_states[index]
    assert formedit.stored_values(out)[name] == "/" + chosen


@pytest.mark.parametrize(
    ("name", "value"),
    [(s.name, o) for s in RADIOS for o, _ in s.pairs],
)
def test_radio_only_the_chosen_kid_gains_ink(radio_form: bytes, name: str, value: str) -> None:
    spec = next(s for s in RADIOS if s.name == name)
    index = [o for o, _ in spec.pairs].index(value)
    blank = shown(fill(radio_form, {}))
    flat = shown(fill(radio_form, {name: value}))
    gains = [
        viewcheck.ink_in_rect(flat, 0, rect) - viewcheck.ink_in_rect(blank, 0, rect)
        for rect in spec.kid_rects
    ]
    others = [g for i, g in enumerate(gains) if i != index]
    assert gains[index] - max(others) >= INK_GAIN, gains
    if spec.with_appearance:  # formkit's Off appearance is empty
        assert max(others) < INK_GAIN, gains


def test_radio_with_opt_stores_the_kid_state_name(radio_form: bytes) -> None:
    out = fill(radio_form, {"size": "M"})
    assert formedit.stored_values(out)["size"] == "/1"


# --------------------------------------------------------------------------- choices


def test_combo_shows_the_display_text_of_the_export() -> None:
    rect: Rect = (40, 700, 200, 716)
    options = [("EUR", "Euro"), ("USD", "US dollar"), ("GR", "Ελληνικό ευρώ")]
    pdf = build_form([Spec("cur", "combo", rect, options=options)])
    for export, display in options:
        out = fill(pdf, {"cur": export})
        assert viewcheck.text_in_rect(shown(out), 0, rect) == squash(display)
        assert formedit.stored_values(out)["cur"] == export


LIST_OPTIONS = ["Apple", "Banana", "Cherry", "Durian"]
LIST_RECT: Rect = (40, 600, 240, 680)
HIGHLIGHT = (153, 191, 219)  # 0.6 0.75 0.86 rg, as Acrobat highlights a selection


def _rows_of(flat: bytes) -> dict[str, float]:
    """The vertical centre (user space) of each one-word option in the shown list box."""
    with pdfplumber.open(io.BytesIO(flat)) as doc:
        page = doc.pages[0]
        words = page.extract_words()
        height = float(page.height)
    return {w["text"]: height - (w["top"] + w["bottom"]) / 2 for w in words}


def _is(colour: tuple[int, int, int], want: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 4 for a, b in zip(colour, want, strict=True))


@pytest.mark.parametrize("value", LIST_OPTIONS)
def test_listbox_highlights_the_selected_option(value: str) -> None:
    _out, flat = one_field(Spec("l", "listbox", LIST_RECT, options=LIST_OPTIONS), value)
    words = viewcheck.text_in_rect(flat, 0, LIST_RECT)
    assert words == "".join(LIST_OPTIONS)
    render = formedit.Render(flat)
    for option, y in _rows_of(flat).items():
        # right of every option's text, inside the border: highlight or white
        samples = [render.rgb(x, y) for x in (150, 200, LIST_RECT[2] - 4)]
        if option == value:
            assert all(_is(s, HIGHLIGHT) for s in samples), (option, samples)
        else:
            assert all(_is(s, (255, 255, 255)) for s in samples), (option, samples)


def test_listbox_stores_v_and_i() -> None:
    out, _ = one_field(Spec("l", "listbox", LIST_RECT, options=LIST_OPTIONS), "Cherry")
    field = formedit.field_of(formedit.widgets(formedit.reader(out))["l"][0])
    assert field["/V"] == "Cherry"
    assert list(field["/I"]) == [2]


def test_listbox_scrolls_to_a_selected_option_below_the_fold() -> None:
    options = [f"Option {i}" for i in range(10)]
    rect: Rect = (40, 600, 200, 640)
    _, flat = one_field(Spec("l", "listbox", rect, options=options), "Option 8")
    assert "Option8" in viewcheck.text_in_rect(flat, 0, rect)
    assert not outside(glyph_chars(flat), rect, tol=1.0)


# --------------------------------------------------------------------------- fonts


def test_unicode_font_is_embedded_once_per_output(bench_pdf: bytes) -> None:
    values = {
        "first_name": "Ελένη",
        "last_name": "Кузнецова",
        "company": "Ωμέγα Α.Ε.",
        "billing.city": "Θεσσαλονίκη",
        "comments": "Говорит по-русски.",
        "language": "Ελληνικά",
        "job_title": "Zoë Ångström",
    }
    out = fill(bench_pdf, values)
    assert len(formedit.embedded_font_files(out)) == 1


def test_unicode_font_once_even_in_many_widgets_of_one_field() -> None:
    pdf = formedit.split_widget(build_form([Spec("t", "text", BOX)]), "t", (40, 600, 290, 616))
    out = fill(pdf, {"t": "Ελληνικά"})
    assert len(formedit.embedded_font_files(out)) == 1


def test_template_reused_for_rows_with_different_scripts() -> None:
    template = Template(build_form([Spec("t", "text", BOX)]))
    for value in ("Ελληνικά", "Plain", "Кириллица", "Zoë"):
        flat = shown(template.fill({"t": value}))
        assert viewcheck.text_in_rect(flat, 0, BOX) == squash(value)


def test_listbox_with_greek_options_and_latin_selection_shows_all() -> None:
    options = ["English", "Ελληνικά", "Русский"]
    _out, flat = one_field(Spec("l", "listbox", LIST_RECT, options=options), "English")
    assert viewcheck.text_in_rect(flat, 0, LIST_RECT) == "EnglishΕλληνικάРусский"


def test_unicode_value_in_comb_field() -> None:
    rect: Rect = (300, 700, 400, 716)
    _, flat = one_field(Spec("c", "text", rect, comb=5), "ΑΒΓΔΕ")
    chars = glyph_chars(flat)
    assert "".join(c["text"] for c in chars) == "ΑΒΓΔΕ"
    cell = (rect[2] - rect[0]) / 5
    for i, c in enumerate(chars):
        assert rect[0] + i * cell < (c["x0"] + c["x1"]) / 2 < rect[0] + (i + 1) * cell
