"""Self-tests of ``viewcheck``: the checker must see a filled value, and must be able to fail.

The forms are built here, with hand-written appearance streams, so that what is drawn is known.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    BooleanObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    IndirectObject,
    NameObject,
    NumberObject,
    TextStringObject,
)

from kits import viewcheck

TEXT_RECT = (100.0, 700.0, 300.0, 720.0)
BOX_RECT = (100.0, 650.0, 112.0, 662.0)
OTHER_RECT = (320.0, 700.0, 500.0, 720.0)
VALUE = "Zoë Ångström"
INK_GAIN = 8


def _name(value: str) -> NameObject:
    return NameObject(value)


def _rect(rect: tuple[float, ...]) -> ArrayObject:
    return ArrayObject(FloatObject(v) for v in rect)


def _stream(
    writer: PdfWriter, content: bytes, extra: dict[str, object] | None = None
) -> IndirectObject:
    stream = DecodedStreamObject()
    stream.set_data(content)
    for key, value in (extra or {}).items():
        stream[_name(key)] = value  # type: ignore[assignment]
    return writer._add_object(stream)


def _text_ap(writer: PdfWriter, font: IndirectObject, text: str) -> IndirectObject:
    """A text field appearance drawing ``text`` in Helvetica (WinAnsi: Latin only)."""
    width, height = TEXT_RECT[2] - TEXT_RECT[0], TEXT_RECT[3] - TEXT_RECT[1]
    escaped = (
        text.encode("cp1252").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
    )
    content = b"/Tx BMC q BT /Helv 12 Tf 0 g 2 5 Td (" + escaped + b") Tj ET Q EMC"
    return _stream(
        writer,
        content,
        {
            "/Type": _name("/XObject"),
            "/Subtype": _name("/Form"),
            "/BBox": _rect((0, 0, width, height)),
            "/Resources": DictionaryObject(
                {_name("/Font"): DictionaryObject({_name("/Helv"): font})}
            ),
        },
    )


def make_form(
    *,
    text_ap: str | None = None,
    box_on: bool = False,
    mediabox: tuple[float, float, float, float] = (0, 0, 612, 792),
    cropbox: tuple[float, float, float, float] | None = None,
    rotate: int = 0,
    page_text_in_field: str | None = None,
    other_rect: tuple[float, float, float, float] = OTHER_RECT,
) -> bytes:
    """A one-page form: text field ``name`` (at ``TEXT_RECT``), checkbox ``agree`` (``BOX_RECT``),
    text field ``other`` (``OTHER_RECT``, drawn "Other"), a pushbutton and a hidden field.

    ``text_ap`` is drawn in the appearance of ``name`` (no ``/AP`` when ``None``; the text may
    run out of the box); the checkbox shows its ``Yes`` appearance when ``box_on``.
    """
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    page.mediabox.lower_left = mediabox[:2]
    page.mediabox.upper_right = mediabox[2:]
    if cropbox:
        page.cropbox.lower_left = cropbox[:2]
        page.cropbox.upper_right = cropbox[2:]
    if rotate:
        page[NameObject("/Rotate")] = NumberObject(rotate)
    font = writer._add_object(
        DictionaryObject(
            {
                _name("/Type"): _name("/Font"),
                _name("/Subtype"): _name("/Type1"),
                _name("/BaseFont"): _name("/Helvetica"),
                _name("/Encoding"): _name("/WinAnsiEncoding"),
            }
        )
    )
    page[NameObject("/Resources")] = DictionaryObject(
        {_name("/Font"): DictionaryObject({_name("/Helv"): font})}
    )
    content = b"BT /Helv 10 Tf 40 705 Td (Name:) Tj ET"
    if page_text_in_field:
        content += b" BT /Helv 10 Tf 200 705 Td (" + page_text_in_field.encode() + b") Tj ET"
    page[NameObject("/Contents")] = _stream(writer, content)

    def widget(name: str, rect: tuple[float, ...], **entries: object) -> IndirectObject:
        annot = DictionaryObject(
            {
                _name("/Type"): _name("/Annot"),
                _name("/Subtype"): _name("/Widget"),
                _name("/T"): TextStringObject(name),
                _name("/Rect"): _rect(rect),
                _name("/F"): NumberObject(4),
                _name("/P"): page.indirect_reference,
            }
        )
        for key, value in entries.items():
            annot[_name("/" + key)] = value  # type: ignore[assignment]
        return writer._add_object(annot)

    text_entries: dict[str, object] = {
        "FT": _name("/Tx"),
        "DA": TextStringObject("/Helv 12 Tf 0 g"),
    }
    if text_ap is not None:
        text_entries["V"] = TextStringObject(text_ap)
        text_entries["AP"] = DictionaryObject({_name("/N"): _text_ap(writer, font, text_ap)})
    name_field = widget("name", TEXT_RECT, **text_entries)
    other_field = widget(
        "other",
        other_rect,
        FT=_name("/Tx"),
        V=TextStringObject("Other"),
        AP=DictionaryObject({_name("/N"): _text_ap(writer, font, "Other")}),
    )
    square = {
        "/Type": _name("/XObject"),
        "/Subtype": _name("/Form"),
        "/BBox": _rect((0, 0, 12, 12)),
    }
    on = _stream(writer, b"0 G 1 w 0.5 0.5 11 11 re S 0 g 2 2 8 8 re f", square)
    off = _stream(writer, b"0 G 1 w 0.5 0.5 11 11 re S", square)
    box = widget(
        "agree",
        BOX_RECT,
        FT=_name("/Btn"),
        V=_name("/Yes" if box_on else "/Off"),
        AS=_name("/Yes" if box_on else "/Off"),
        AP=DictionaryObject(
            {_name("/N"): DictionaryObject({_name("/Yes"): on, _name("/Off"): off})}
        ),
    )
    push = widget("reset", (400, 650, 460, 670), FT=_name("/Btn"), Ff=NumberObject(1 << 16))
    hidden = widget("secret", (400, 600, 460, 620), FT=_name("/Tx"), F=NumberObject(4 | 2))
    fields = [name_field, other_field, box, push, hidden]
    page[NameObject("/Annots")] = ArrayObject(fields)
    writer._root_object[NameObject("/AcroForm")] = DictionaryObject(
        {
            _name("/Fields"): ArrayObject(fields),
            _name("/DA"): TextStringObject("/Helv 0 Tf 0 g"),
            _name("/DR"): DictionaryObject(
                {_name("/Font"): DictionaryObject({_name("/Helv"): font})}
            ),
            _name("/NeedAppearances"): BooleanObject(False),
        }
    )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _fill_without_appearances(
    pdf: bytes, values: dict[str, str], *, keep_pypdf_appearances: bool = False
) -> bytes:
    """Set the values the way a careless filler does: ``/V`` only, no appearance streams
    (or, with ``keep_pypdf_appearances``, the ones pypdf draws)."""
    writer = PdfWriter(clone_from=io.BytesIO(pdf))
    for page in writer.pages:
        writer.update_page_form_field_values(page, values, auto_regenerate=False)
        if keep_pypdf_appearances:
            continue
        for ref in page.get("/Annots", []):
            annot = ref.get_object()
            parent = annot.get("/Parent")
            kind = annot.get("/FT") or (parent.get_object().get("/FT") if parent else None)
            if kind == "/Tx":
                annot.pop("/AP", None)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --------------------------------------------------------------------------- widgets


def test_visible_widgets_skip_hidden_and_pushbuttons() -> None:
    widgets = viewcheck.visible_widgets(make_form())
    assert [w.name for w in widgets] == ["name", "other", "agree"]
    box = widgets[2]
    assert box.is_button and not box.is_radio
    assert box.on_states == ("Yes",)
    assert box.rect == BOX_RECT


def test_widgets_outside_the_page_are_marked() -> None:
    widgets = viewcheck.visible_widgets(make_form(other_rect=(320, -100, 500, -80)))
    assert {w.name: w.on_page for w in widgets} == {"name": True, "other": False, "agree": True}


def test_qualified_names_and_inheritance() -> None:
    writer = PdfWriter(clone_from=io.BytesIO(make_form()))
    page = writer.pages[0]
    parent = writer._add_object(
        DictionaryObject(
            {
                _name("/T"): TextStringObject("person"),
                _name("/FT"): _name("/Btn"),
                _name("/Ff"): NumberObject(1 << 16),  # pushbutton, inherited by the kid
            }
        )
    )
    kid = page["/Annots"][0].get_object()  # "name" becomes person.name, a pushbutton kid
    kid[NameObject("/Parent")] = parent
    del kid["/FT"]
    parent.get_object()[NameObject("/Kids")] = ArrayObject([page["/Annots"][0]])
    out = io.BytesIO()
    writer.write(out)
    assert viewcheck.visible_field_names(out.getvalue()) == {"other", "agree"}

    parent.get_object()[NameObject("/Ff")] = NumberObject(0)
    parent.get_object()[NameObject("/FT")] = _name("/Tx")
    out = io.BytesIO()
    writer.write(out)
    assert viewcheck.visible_field_names(out.getvalue()) == {"person.name", "other", "agree"}


# --------------------------------------------------------------------------- text


def test_value_in_appearance_stream_is_read() -> None:
    flat = viewcheck.flatten_with_pdfium(make_form(text_ap=VALUE))
    assert viewcheck.text_in_rect(flat, 0, TEXT_RECT) == viewcheck.squash(VALUE)
    assert viewcheck.text_in_rect(flat, 0, OTHER_RECT) == "Other"
    assert viewcheck.text_in_rect(flat, 0, BOX_RECT) == ""


def test_value_without_appearance_stream_is_unreadable() -> None:
    filled = _fill_without_appearances(make_form(), {"name": "José 42"})
    fields = PdfReader(io.BytesIO(filled)).get_fields() or {}
    assert fields["name"]["/V"] == "José 42"  # the value is stored ...
    flat = viewcheck.flatten_with_pdfium(filled)
    assert viewcheck.text_in_rect(flat, 0, TEXT_RECT) == ""  # ... but nobody sees it


def test_wrong_glyphs_are_not_the_value() -> None:
    flat = viewcheck.flatten_with_pdfium(make_form(text_ap="Zoe Angstrom"))
    assert viewcheck.text_in_rect(flat, 0, TEXT_RECT) != viewcheck.squash(VALUE)


def test_flattened_copy_has_no_form_left() -> None:
    form = make_form(text_ap=VALUE)
    assert viewcheck.count_widgets(form) == (True, 5)
    has_form, widgets = viewcheck.count_widgets(viewcheck.flatten_with_pdfium(form))
    assert not has_form or widgets == 0


def test_page_content_can_be_left_out() -> None:
    form = make_form(text_ap=VALUE, page_text_in_field="Label")
    with_page = viewcheck.flatten_with_pdfium(form)
    assert viewcheck.text_in_rect(with_page, 0, TEXT_RECT) == "Label" + viewcheck.squash(VALUE)
    only_widgets = viewcheck.flatten_with_pdfium(form, drop_page_content=True)
    assert viewcheck.text_in_rect(only_widgets, 0, TEXT_RECT) == viewcheck.squash(VALUE)


def test_chars_of_an_overlapping_neighbour_are_left_out() -> None:
    overlapping = (TEXT_RECT[2] - 8, OTHER_RECT[1], OTHER_RECT[2], OTHER_RECT[3])
    flat = viewcheck.flatten_with_pdfium(make_form(text_ap=VALUE, other_rect=overlapping))
    # "other" starts 8 pt inside "name": its first letter lands in name's box ...
    assert viewcheck.text_in_rect(flat, 0, TEXT_RECT) == viewcheck.squash(VALUE) + "O"
    # ... unless "other" is named as a neighbour that owns it, or only name's appearance counts.
    got = viewcheck.text_in_rect(flat, 0, TEXT_RECT, others=[overlapping])
    assert got == viewcheck.squash(VALUE)
    got = viewcheck.text_in_rect(flat, 0, TEXT_RECT, drawn_by_widget=True)
    assert got == viewcheck.squash(VALUE)
    assert viewcheck.text_in_rect(flat, 0, overlapping, drawn_by_widget=True) == "Other"


def test_text_running_out_of_its_box_is_not_read() -> None:
    long_text = "Abcdefghij " * 5  # about 290 pt at 12 pt: runs 190 pt past the box
    flat = viewcheck.flatten_with_pdfium(make_form(text_ap=long_text))
    read = viewcheck.text_in_rect(flat, 0, TEXT_RECT, drawn_by_widget=True)
    assert read != viewcheck.squash(long_text)
    assert viewcheck.squash(long_text).startswith(read)
    # the spill-over into "other" (clipped away by a viewer) is not other's text
    assert viewcheck.text_in_rect(flat, 0, OTHER_RECT, drawn_by_widget=True) == "Other"
    assert viewcheck.text_in_rect(flat, 0, OTHER_RECT) != "Other"


def test_widget_without_appearance_draws_nothing() -> None:
    flat = viewcheck.flatten_with_pdfium(make_form(page_text_in_field="Label"))
    assert viewcheck.text_in_rect(flat, 0, TEXT_RECT) == "Label"
    assert viewcheck.text_in_rect(flat, 0, TEXT_RECT, drawn_by_widget=True) == ""


@pytest.mark.parametrize(
    ("mediabox", "cropbox", "rotate"),
    [
        ((-34, -34, 629, 876), None, 0),
        ((-34, -34, 629, 876), (0, 0, 612, 792), 0),
        ((0, 0, 612, 792), None, 90),
        ((10, 20, 622, 812), None, 270),
        ((0, 0, 612, 792), None, 180),
    ],
)
def test_coordinates_follow_the_page_boxes(
    mediabox: tuple[float, float, float, float],
    cropbox: tuple[float, float, float, float] | None,
    rotate: int,
) -> None:
    form = make_form(text_ap=VALUE, box_on=True, mediabox=mediabox, cropbox=cropbox, rotate=rotate)
    flat = viewcheck.flatten_with_pdfium(form)
    for drawn_by_widget in (False, True):
        got = viewcheck.text_in_rect(flat, 0, TEXT_RECT, drawn_by_widget=drawn_by_widget)
        assert got == viewcheck.squash(VALUE)
        got = viewcheck.text_in_rect(flat, 0, OTHER_RECT, drawn_by_widget=drawn_by_widget)
        assert got == "Other"
    blank = viewcheck.flatten_with_pdfium(
        make_form(mediabox=mediabox, cropbox=cropbox, rotate=rotate)
    )
    gain = viewcheck.ink_in_rect(flat, 0, BOX_RECT) - viewcheck.ink_in_rect(blank, 0, BOX_RECT)
    assert gain >= INK_GAIN


# --------------------------------------------------------------------------- ink


def test_ticked_box_gains_ink() -> None:
    blank = viewcheck.flatten_with_pdfium(make_form())
    ticked = viewcheck.flatten_with_pdfium(make_form(box_on=True))
    before = viewcheck.ink_in_rect(blank, 0, BOX_RECT)
    assert before > 0  # the box's border
    assert viewcheck.ink_in_rect(ticked, 0, BOX_RECT) - before >= INK_GAIN
    with viewcheck.Raster(ticked, scale=3) as raster:
        assert raster.ink(0, BOX_RECT) > viewcheck.ink_in_rect(ticked, 0, BOX_RECT, scale=2)


def test_value_without_its_appearance_state_gains_no_ink() -> None:
    """``/V /Yes`` but ``/AS /Off``: stored as ticked, shown unticked."""
    writer = PdfWriter(clone_from=io.BytesIO(make_form()))
    annot = writer.pages[0]["/Annots"][2].get_object()
    annot[NameObject("/V")] = _name("/Yes")
    out = io.BytesIO()
    writer.write(out)
    flat = viewcheck.flatten_with_pdfium(out.getvalue())
    blank = viewcheck.flatten_with_pdfium(make_form())
    gain = viewcheck.ink_in_rect(flat, 0, BOX_RECT) - viewcheck.ink_in_rect(blank, 0, BOX_RECT)
    assert gain < INK_GAIN


def test_keep_only_flattens_just_the_given_widgets() -> None:
    form = make_form(text_ap=VALUE, box_on=True)
    flat = viewcheck.flatten_with_pdfium(form, keep_only={0: [BOX_RECT]})
    assert viewcheck.text_in_rect(flat, 0, TEXT_RECT) == ""
    assert viewcheck.text_in_rect(flat, 0, (0, 700, 90, 720)) == "Name:"  # page content stays
    everything = viewcheck.flatten_with_pdfium(form)
    assert viewcheck.ink_in_rect(flat, 0, BOX_RECT) == viewcheck.ink_in_rect(
        everything, 0, BOX_RECT
    )


def test_buttons_off_gives_the_blank_picture() -> None:
    ticked = make_form(box_on=True)
    off = viewcheck.buttons_off(ticked)
    assert viewcheck.visible_widgets(off)[2].name == "agree"
    assert viewcheck.ink_in_rect(viewcheck.flatten_with_pdfium(off), 0, BOX_RECT) == (
        viewcheck.ink_in_rect(viewcheck.flatten_with_pdfium(make_form()), 0, BOX_RECT)
    )
    untouched = make_form()
    assert viewcheck.buttons_off(untouched) == untouched


# --------------------------------------------------------------------------- on a real form

CORPUS = Path(
    os.environ.get("FILLPDF_CORPUS")
    or Path(__file__).resolve().parents[3] / "shared" / "corpus" / "forms"
)
REAL_FORM = CORPUS / "vita-min__f8879.pdf"


@pytest.mark.corpus
@pytest.mark.skipif(not REAL_FORM.is_file(), reason=f"corpus form {REAL_FORM} not found")
def test_real_form_filled_without_appearances_is_unreadable() -> None:
    viewcheck.quiet_pdf_logs()
    template = REAL_FORM.read_bytes()
    texts = [w for w in viewcheck.visible_widgets(template) if w.field_type == "Tx"]
    assert texts
    values = {w.name: f"Jé {i}" for i, w in enumerate(texts)}  # fits every MaxLen here
    filled = _fill_without_appearances(template, values)
    stored = viewcheck.open_pdf(filled).get_fields() or {}
    assert all(stored[name].get("/V") == value for name, value in values.items())

    def readable(filled: bytes) -> list[str]:
        flat = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
        return [
            w.name
            for w in texts
            if viewcheck.text_in_rect(flat, w.page, w.rect, drawn_by_widget=True)
            == viewcheck.squash(values[w.name])
        ]

    assert readable(filled) == []
    # Control: the same Latin values with pypdf's own appearance streams do read.
    drawn = _fill_without_appearances(template, values, keep_pypdf_appearances=True)
    assert len(readable(drawn)) == len(texts)
