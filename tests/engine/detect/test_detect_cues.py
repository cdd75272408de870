"""``convert`` on small flat forms built by hand: every drawn cue is found, placed and named.

Each form prints a label and draws one cue the way form authors do (a ruled box, a table
cell, a line or a run of underscores to write on, comb cells, a square to tick, circles to
choose from). The field must come back with the right type, a name from its label, and a
rectangle on the drawn cue: IoU >= 0.5 with where its widget belongs and its edges within a
couple of points of the drawing. Both detection modes are held to the same forms.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable

import pytest

from fillpdf_provider.engine import (
    EncryptedPdfError,
    Field,
    FillPdfError,
    NotAPdfError,
    Template,
)
from fillpdf_provider.engine.convert import ConversionResult, convert
from fillpdf_provider.engine.dates import format_date
from fillpdf_provider.engine.detect import MAX_POOL, page_geometries, page_pool
from kits import viewcheck
from kits.flatkit import FlatPage, Rect, build, one_page, text_width
from kits.viewcheck import iou, squash

MODES = ("fields", "fields_fast")
#: How far (pt) a field's edge may sit from the drawn cue's.
EDGE = 2.0
#: The height a field written on a line or a run of underscores should have (roughly).
LINE_FIELD = 14.0
SNAKE = re.compile(r"[a-z0-9_]+")
#: A guard in CPU seconds, which a loaded machine does not stretch: the bound that matters
#: is the work counted below (no page scores more than ``MAX_POOL`` candidates).
PATHOLOGICAL_CPU_SECONDS = 60.0

Form = tuple[bytes, dict[str, Rect]]


def detect(pdf: bytes, mode: str) -> list[Field]:
    return convert(pdf, detect=mode).schema


def listing(fields: list[Field]) -> str:
    rows = [
        f"{f.name}:{f.type} rect=({', '.join(f'{v:.1f}' for v in f.rect)}) label={f.label!r}"
        + (f" max_length={f.max_length} comb={f.comb}" if f.max_length else "")
        + (" multiline" if f.multiline else "")
        + (f" options={list(f.options)}" if f.options else "")
        for f in fields
    ]
    return "[" + "; ".join(rows) + "]"


def by_name(fields: list[Field], name: str) -> Field:
    found = [f for f in fields if f.name == name]
    assert len(found) == 1, f"want one field {name!r}, got {listing(fields)}"
    return found[0]


def assert_names(fields: list[Field], *names: str) -> None:
    """Exactly these fields (no misses, no extras)."""
    assert sorted(f.name for f in fields) == sorted(names), listing(fields)


def assert_lands(field: Field, widget: Rect, edges: str = "lbrt") -> None:
    """``field`` is where ``widget`` belongs: IoU >= 0.5 and the ``edges`` (of left, bottom,
    right, top) within ``EDGE`` pt."""
    got = field.rect
    where = f"{field.name}: rect {tuple(round(v, 1) for v in got)}, widget belongs at {widget}"
    assert iou(got, widget) >= 0.5, where
    for side, index in (("l", 0), ("b", 1), ("r", 2), ("t", 3)):
        if side in edges:
            assert abs(got[index] - widget[index]) <= EDGE, f"{where} ({side} edge)"


# --------------------------------------------------------------------------- the forms


def boxed_label(
    label: str, y: float = 700, right: float = 400, page: FlatPage | None = None
) -> tuple[FlatPage, Rect]:
    """``label`` then a 20 pt ruled box to its right on the same line."""
    page = page or FlatPage()
    end = page.text(72, y, label)
    box = (end + 8, y - 5, right, y + 15)
    page.box(box)
    return page, box


def table(page: FlatPage, top: float = 700) -> list[tuple[str, Rect]]:
    """A ruled table: a header row of labels and one empty row; (header, empty cell) pairs."""
    cells = []
    for x0, x1, header in ((72, 272, "Item"), (272, 352, "Quantity"), (352, 432, "Price")):
        page.box((x0, top - 20, x1, top))
        page.text(x0 + 4, top - 14, header)
        empty = (x0, top - 40, x1, top - 20)
        page.box(empty)
        cells.append((header.lower(), empty))
    return cells


def underline(page: FlatPage, label: str, y: float, right: float = 300) -> Rect:
    """``label`` then a line (``m l S``) from after it, at its baseline; the line's box."""
    start = page.text(72, y, label) + 6
    page.line(start, y - 2, right, y - 2)
    return (start, y - 2, right, y - 2 + LINE_FIELD)


def underscores(page: FlatPage, label: str, y: float, x: float = 72, count: int = 10) -> Rect:
    """``"label __________"`` in one string; where the run of underscores is written."""
    page.text(x, y, f"{label} " + "_" * count)
    start = x + text_width(f"{label} ")
    return (start, y - 2, start + text_width("_" * count), y - 2 + LINE_FIELD)


def comb(page: FlatPage, label: str, y: float, cells: int = 9, x: float = 110) -> Rect:
    """``label`` then ``cells`` adjacent 14x18 ruled cells; the whole row's box."""
    page.text(72, y + 4, label)
    for i in range(cells):
        page.box((x + 14 * i, y, x + 14 * (i + 1), y + 18))
    return (x, y, x + 14 * cells, y + 18)


def checkbox(page: FlatPage, label: str, y: float) -> Rect:
    """A 10x10 square with ``label`` after it; the square."""
    square = (72, y - 1.5, 82, y + 8.5)
    page.box(square)
    page.text(88, y, label)
    return square


def radios(page: FlatPage, question: str, options: list[str], y: float) -> list[Rect]:
    """``question``, then a Bézier circle (r = 5) before each option; the circles' boxes."""
    page.text(72, y, question)
    boxes = []
    for i, option in enumerate(options):
        cx, cy = 130 + 80 * i, y + 3.5
        page.circle(cx, cy, 5)
        page.text(cx + 9, y, option)
        boxes.append((cx - 5, cy - 5, cx + 5, cy + 5))
    return boxes


def signature_line(page: FlatPage, y: float) -> Rect:
    """A line with "Signature" printed under it; the space above the line."""
    page.line(72, y, 272, y)
    page.text(72, y - 12, "Signature")
    return (72, y, 272, y + LINE_FIELD)


def comments_box(page: FlatPage, top: float, height: float = 80) -> Rect:
    """ "Comments", then an empty box ``height`` pt tall under it."""
    page.text(72, top + 10, "Comments")
    box = (72, top - height, 450, top)
    page.box(box)
    return box


def every_cue() -> tuple[bytes, dict[str, Rect]]:
    """One page with every cue on it, well apart; field name -> where its widget belongs."""
    page, full_name = boxed_label("Full name", y=740)
    _, born = boxed_label("Date of birth", y=700, right=300, page=page)
    where = {"full_name": full_name, "date_of_birth": born}
    where["city"] = underline(page, "City", 660)
    where["phone"] = underscores(page, "Phone:", 660, x=330)
    where["ssn"] = comb(page, "SSN", 616)
    where["i_agree"] = checkbox(page, "I agree", 578.5)
    sizes = radios(page, "Size", ["Small", "Medium", "Large"], 540)
    where["size"] = sizes[0]
    for name, cell in table(page, top=500):
        where[name] = cell
    where["comments"] = comments_box(page, top=410)
    where["signature"] = signature_line(page, 260)
    return one_page(page), where


# --------------------------------------------------------------------------- each cue


@pytest.mark.parametrize("mode", MODES)
def test_a_ruled_box_after_a_label_is_a_text_field(mode: str) -> None:
    page, box = boxed_label("Full name")
    fields = detect(one_page(page), mode)
    assert_names(fields, "full_name")
    field = by_name(fields, "full_name")
    assert field.type == "text"
    assert not field.multiline
    assert_lands(field, box)


@pytest.mark.parametrize("mode", MODES)
def test_each_empty_table_cell_is_a_field_named_by_its_column(mode: str) -> None:
    page = FlatPage()
    cells = table(page)
    fields = detect(one_page(page), mode)
    assert_names(fields, *(name for name, _ in cells))
    for name, cell in cells:
        field = by_name(fields, name)
        assert field.type == "text"
        assert_lands(field, cell)


@pytest.mark.parametrize("mode", MODES)
def test_boxes_on_one_line_whose_bottoms_differ_by_a_point_are_both_found(mode: str) -> None:
    page, city = boxed_label("City", y=705, right=192)
    state = (290.0, 701.0, 380.0, 717.0)  # a point higher, and shorter
    page.text(260, 705, "State")
    page.box(state)
    fields = detect(one_page(page), mode)
    assert_names(fields, "city", "state")
    assert_lands(by_name(fields, "city"), city)
    assert_lands(by_name(fields, "state"), state)


@pytest.mark.parametrize("mode", MODES)
def test_a_line_after_a_label_is_a_text_field(mode: str) -> None:
    page = FlatPage()
    line = underline(page, "City", 700)
    fields = detect(one_page(page), mode)
    assert_names(fields, "city")
    field = by_name(fields, "city")
    assert field.type == "text"
    assert_lands(field, line, "lbr")


@pytest.mark.parametrize("mode", MODES)
def test_a_run_of_underscores_is_a_text_field(mode: str) -> None:
    page = FlatPage()
    run = underscores(page, "Phone:", 700)
    fields = detect(one_page(page), mode)
    assert_names(fields, "phone")
    field = by_name(fields, "phone")
    assert field.type == "text"
    assert_lands(field, run, "lbr")


@pytest.mark.parametrize("mode", MODES)
def test_a_row_of_equal_cells_is_one_comb_field(mode: str) -> None:
    page = FlatPage()
    row = comb(page, "SSN", 696)
    fields = detect(one_page(page), mode)
    assert_names(fields, "ssn")
    field = by_name(fields, "ssn")
    assert (field.type, field.max_length, field.comb) == ("text", 9, True), listing(fields)
    assert_lands(field, row)


@pytest.mark.parametrize("mode", MODES)
def test_a_small_square_before_a_label_is_a_checkbox(mode: str) -> None:
    page = FlatPage()
    square = checkbox(page, "I agree", 700)
    fields = detect(one_page(page), mode)
    assert_names(fields, "i_agree")
    field = by_name(fields, "i_agree")
    assert field.type == "checkbox"
    assert_lands(field, square)


@pytest.mark.parametrize("mode", MODES)
def test_circles_in_a_row_are_one_radio_group(mode: str) -> None:
    page = FlatPage()
    circles = radios(page, "Size", ["Small", "Medium", "Large"], 700)
    pdf = one_page(page)
    fields = detect(pdf, mode)
    assert_names(fields, "size")
    field = by_name(fields, "size")
    assert field.type == "radio"
    assert field.options == ("small", "medium", "large"), listing(fields)
    assert_lands(field, circles[0])
    widgets = viewcheck.visible_widgets(convert(pdf, detect=mode).pdf)
    assert [w.name for w in widgets] == ["size"] * 3
    for widget, circle, export in zip(widgets, circles, field.options, strict=True):
        assert widget.on_states == (export,)
        assert iou(widget.rect, circle) >= 0.5, (widget.rect, circle)


@pytest.mark.parametrize("mode", MODES)
def test_a_circle_alone_is_a_checkbox_and_its_schema_builds_again(mode: str) -> None:
    """A radio group of one option could be set and never cleared: a lone circle is a box."""
    page = FlatPage()
    (circle,) = radios(page, "I agree to the terms", ["Yes"], 700)
    pdf = one_page(page)
    result = convert(pdf, detect=mode)
    buttons = [f for f in result.schema if f.type in ("checkbox", "radio")]
    assert [f.type for f in buttons] == ["checkbox"], listing(result.schema)
    assert_lands(buttons[0], circle)
    assert convert(pdf, schema=result.schema).pdf == result.pdf


@pytest.mark.parametrize("mode", MODES)
def test_a_box_past_the_page_edge_is_cut_to_the_page(mode: str) -> None:
    """A box drawn past the edge gives a field inside the page: its schema builds again."""
    page = FlatPage()
    page.text(400, 705, "Reference")
    page.box((460, 700, 640, 718))  # the page is 612 pt wide
    pdf = one_page(page)
    result = convert(pdf, detect=mode)
    (field,) = [f for f in result.schema if f.name == "reference"] or [None]
    assert field is not None, listing(result.schema)
    assert field.rect[2] <= 612 and field.rect[0] == pytest.approx(460, abs=EDGE)
    assert convert(pdf, schema=result.schema).pdf == result.pdf


@pytest.mark.parametrize("mode", MODES)
def test_a_box_after_date_of_birth_is_a_date_field(mode: str) -> None:
    page, box = boxed_label("Date of birth", right=300)
    fields = detect(one_page(page), mode)
    assert_names(fields, "date_of_birth")
    field = by_name(fields, "date_of_birth")
    assert field.type == "date"
    assert_lands(field, box)


@pytest.mark.parametrize("mode", MODES)
def test_a_line_over_signature_is_a_signature_field(mode: str) -> None:
    page = FlatPage()
    space = signature_line(page, 600)
    fields = detect(one_page(page), mode)
    assert_names(fields, "signature")
    field = by_name(fields, "signature")
    assert field.type == "signature"
    assert_lands(field, space, "lbr")


@pytest.mark.parametrize("mode", MODES)
def test_a_tall_empty_box_is_a_multiline_field(mode: str) -> None:
    page = FlatPage()
    box = comments_box(page, top=700, height=80)
    fields = detect(one_page(page), mode)
    assert_names(fields, "comments")
    field = by_name(fields, "comments")
    assert (field.type, field.multiline) == ("text", True), listing(fields)
    assert_lands(field, box)


# --------------------------------------------------------------------------- no field


def paragraphs() -> FlatPage:
    page = FlatPage()
    page.text(72, 740, "Instructions", 14)
    lines = [
        "Read these instructions carefully before you fill in the form.",
        "Use black ink and write in capital letters. Do not write outside the boxes.",
        "Send the completed form, with a copy of your identity document, to the",
        "address printed on page 2. Keep a copy for your records.",
        "If you need help (for example, with question 4), call us on 0800 123 456.",
    ]
    for i, text in enumerate(lines):
        page.text(72, 716 - 14 * i, text)
    return page


def page_wide_rule() -> FlatPage:
    page = FlatPage()
    page.text(72, 720, "Section 2. About you", 12)
    page.line(36, 712, 576, 712)
    page.text(72, 690, "Tell us about yourself in the boxes on the next page.")
    return page


def underlined_heading() -> FlatPage:
    page = FlatPage()
    end = page.text(72, 720, "Part I: Personal details", 12)
    page.line(72, 718, end, 718)
    page.text(72, 700, "Everyone must complete this part.")
    return page


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "build_page", [paragraphs, page_wide_rule, underlined_heading], ids=lambda f: f.__name__
)
def test_printed_matter_is_not_a_field(build_page: Callable[[], FlatPage], mode: str) -> None:
    result = convert(one_page(build_page()), detect=mode)
    assert result.schema == [], listing(result.schema)


@pytest.mark.parametrize("mode", MODES)
def test_a_boxed_line_number_is_not_a_checkbox(mode: str) -> None:
    page = FlatPage()
    number = (72, 697, 84, 709)
    page.box(number)
    page.text(75.2, 699.5, "1")
    page.text(92, 700, "Enter your details below.")
    fields = detect(one_page(page), mode)
    assert not [f for f in fields if f.type == "checkbox"], listing(fields)
    assert not [f for f in fields if iou(f.rect, number) > 0.1], listing(fields)


# --------------------------------------------------------------------------- the whole form


@pytest.fixture(scope="module")
def form() -> Form:
    return every_cue()


@pytest.fixture(scope="module", params=MODES)
def converted(request: pytest.FixtureRequest, form: Form) -> ConversionResult:
    return convert(form[0], detect=request.param)


def test_every_cue_on_one_page_is_found(converted: ConversionResult, form: Form) -> None:
    _pdf, where = form
    fields = converted.schema
    assert_names(fields, *where)
    for name, widget in where.items():
        edges = "lbr" if name in ("city", "phone", "signature") else "lbrt"
        assert_lands(by_name(fields, name), widget, edges)


def test_names_are_unique_snake_case(converted: ConversionResult) -> None:
    names = [f.name for f in converted.schema]
    assert len(names) == len(set(names)), names
    assert all(SNAKE.fullmatch(name) for name in names), names


@pytest.mark.parametrize("mode", MODES)
def test_a_conversion_is_the_same_every_time(form: Form, mode: str) -> None:
    first, second = convert(form[0], detect=mode), convert(form[0], detect=mode)
    assert first.pdf == second.pdf
    assert [f.to_dict() for f in first.schema] == [f.to_dict() for f in second.schema]


def test_both_modes_find_the_same_fields(form: Form) -> None:
    full, fast = convert(form[0], detect="fields"), convert(form[0], detect="fields_fast")

    def key(f: Field) -> tuple:
        return (f.name, f.type, f.max_length, f.comb, f.multiline, f.options)

    assert sorted(map(key, fast.schema)) == sorted(map(key, full.schema)), (
        f"fields: {listing(full.schema)}\nfields_fast: {listing(fast.schema)}"
    )
    # fields_fast keeps to the rules' reading of each cue; the scorer may pick another
    # reading of the same cue (a taller box over a line): the same field, IoU >= 0.5.
    fast_by_name = {f.name: f for f in fast.schema}
    for field in full.schema:
        assert iou(field.rect, fast_by_name[field.name].rect) >= 0.5, field.name


def fill_values(fields: list[Field], form: Template) -> dict[str, object]:
    values: dict[str, object] = {}
    for number, field in enumerate(fields):
        if field.type == "checkbox":
            values[field.name] = True
        elif field.type == "radio":
            values[field.name] = (field.options or ())[-1]
        elif field.type == "date":  # in the form's own format: shown as written
            values[field.name] = format_date(dt.date(1990, 12, 10), form.date_format(field.name))
        elif field.comb:
            values[field.name] = "123456789"[: field.max_length]
        else:
            values[field.name] = f"V{number}x"
    return values


def test_the_written_form_fills_and_shows_every_value(converted: ConversionResult) -> None:
    form = Template(converted.pdf)
    values = fill_values(converted.schema, form)
    filled = form.fill(values)
    shown = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    blank = viewcheck.flatten_with_pdfium(converted.pdf, drop_page_content=True)
    with viewcheck.Raster(shown) as after, viewcheck.Raster(blank) as before:
        for widget in viewcheck.visible_widgets(filled):
            value = values[widget.name]
            if isinstance(value, str) and widget.field_type != "Btn":
                text = viewcheck.text_in_rect(shown, widget.page, widget.rect)
                assert text == squash(value), (widget.name, text, value)
                continue
            gained = after.ink(widget.page, widget.rect) - before.ink(widget.page, widget.rect)
            on = value is True or value in widget.on_states
            if on:
                assert gained >= 20, (widget.name, widget.on_states, gained)
            else:
                assert gained <= 0, (widget.name, widget.on_states, gained)


# --------------------------------------------------------------------------- page geometry


def rotated() -> tuple[bytes, Rect]:
    """/Rotate 90, the content drawn as on an unrotated page (it reads sideways on screen)."""
    page, box = boxed_label("Full name")
    page.rotate = 90
    return one_page(page), box


def landscape() -> tuple[bytes, Rect]:
    """/Rotate 90, the content turned to read upright on screen: a landscape form."""
    page = FlatPage(rotate=90)
    page.raw("q 0 1 -1 0 612 0 cm")  # screen (x, y) -> user space (612 - y, x)
    _, (x0, y0, x1, y1) = boxed_label("Full name", y=500, page=page)
    page.raw("Q")
    return one_page(page), (612 - y1, x0, 612 - y0, x1)


def moved_mediabox() -> tuple[bytes, Rect]:
    page = FlatPage(mediabox=(50, 50, 662, 842))
    end = page.text(122, 750, "Full name")
    box = (end + 8, 745, 450, 765)
    page.box(box)
    return one_page(page), box


@pytest.mark.parametrize("mode", MODES)
# A page whose content reads sideways on screen (``rotated``) is not a form a person fills
# as shown; only pages that read upright are covered.
@pytest.mark.parametrize("make", [landscape, moved_mediabox], ids=lambda f: f.__name__)
def test_rects_are_in_user_space_on_any_page_geometry(
    make: Callable[[], tuple[bytes, Rect]], mode: str
) -> None:
    pdf, box = make()
    fields = detect(pdf, mode)
    assert len(fields) == 1, listing(fields)
    assert_lands(fields[0], box)
    assert fields[0].name == "full_name", listing(fields)


# --------------------------------------------------------------------------- bad input


def test_not_a_pdf_is_refused() -> None:
    with pytest.raises(NotAPdfError):
        convert(b"Name,City\nAda,London\n")


def test_a_password_protected_pdf_is_refused() -> None:
    page, _ = boxed_label("Full name")
    with pytest.raises(EncryptedPdfError):
        convert(build([page], password="secret"))


def test_a_pdf_without_pages_is_refused() -> None:
    with pytest.raises(FillPdfError):
        convert(build([]))


@pytest.fixture(scope="module")
def hatched() -> bytes:
    """A page of 200,000 tiny separate path segments (a hatched drawing), and one label."""
    page = FlatPage()
    ops = [
        f"{20 + col * 1.4:.1f} {60 + row * 1.4:.1f} m {20.6 + col * 1.4:.1f} "
        f"{60.6 + row * 1.4:.1f} l"
        for row in range(500)
        for col in range(400)
    ]
    page.raw("0.2 w\n" + "\n".join(ops) + "\nS")
    page.text(72, 40, "Full name")
    return one_page(page)


@pytest.mark.parametrize("mode", MODES)
def test_a_page_of_200000_tiny_segments_is_bounded(hatched: bytes, mode: str) -> None:
    _assert_bounded(hatched, mode)


def _assert_bounded(pdf: bytes, mode: str) -> None:
    """The scorer's work on the page is capped, and the conversion ends."""
    for _, geo, _ in page_geometries(pdf, mode, None):
        pool = page_pool(geo, complete=mode == "fields")
        assert pool is None or len(pool.candidates) <= MAX_POOL
    started = time.process_time()  # CPU time: a loaded machine slows the clock, not the work
    result = convert(pdf, detect=mode)
    seconds = time.process_time() - started
    assert result.pages == 1
    assert seconds < PATHOLOGICAL_CPU_SECONDS, f"{mode}: {seconds:.1f} CPU s"


@pytest.fixture(scope="module")
def squared() -> bytes:
    """A page tiled with 20,000 small squares and circles: busy artwork, not 20,000 boxes."""
    page = FlatPage()
    squares = [
        f"{20 + col * 5.5:.1f} {60 + row * 7:.1f} 5 5 re"
        for row in range(100)
        for col in range(100)
    ]
    page.raw("0.2 w\n" + "\n".join(squares) + "\nS")
    for row in range(100):
        for col in range(100):
            page.circle(25 + col * 5.5, 65 + row * 7 + 3, 2.2, width=0.2)
    return one_page(page)


@pytest.mark.parametrize("mode", MODES)
def test_a_page_of_20000_small_shapes_is_bounded(squared: bytes, mode: str) -> None:
    _assert_bounded(squared, mode)
