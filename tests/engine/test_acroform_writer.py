"""``write_acroform`` turns a flat PDF into a form that viewers and our own engine can fill."""

from __future__ import annotations

import io
from collections.abc import Callable

import pdfplumber
import pytest
from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DictionaryObject, FloatObject, NameObject, NumberObject

from fillpdf_provider.engine import FillPdfError, Template
from fillpdf_provider.engine.acroform_writer import write_acroform
from fillpdf_provider.engine.detect.model import Detected
from kits import formedit, viewcheck
from kits.formkit import Spec, build_form

FF_MULTILINE = 1 << 12
FF_NO_TOGGLE_TO_OFF = 1 << 14
FF_RADIO = 1 << 15
FF_COMBO = 1 << 17
FF_COMB = 1 << 24

FIELDS = [
    Detected("text", 0, (40, 700, 290, 716), "full_name", label="Full name", confidence=0.9),
    Detected("date", 0, (322, 700, 422, 716), "birth_date", label="Date of birth"),
    Detected("text", 0, (40, 600, 290, 680), "notes", multiline=True),
    Detected("text", 0, (322, 660, 422, 676), "zip_code", comb=True, max_length=5),
    Detected("text", 0, (452, 660, 572, 676), "member_id", max_length=8),
    Detected("checkbox", 0, (40, 560, 52, 572), "agree"),
    Detected("radio", 0, (40, 520, 52, 532), "plan", export="Basic"),
    Detected("radio", 0, (100, 520, 112, 532), "plan", export="Gold plus"),
    Detected("choice", 0, (40, 470, 160, 486), "country"),
    Detected("signature", 0, (40, 380, 290, 410), "signature"),
    Detected("text", 1, (40, 700, 290, 716), "remarks"),
]
VALUES: dict[str, object] = {
    "full_name": "Zoë Ångström",
    "birth_date": "07/14/1990",
    "notes": "Line one and line two",
    "zip_code": "12345",
    "member_id": "A-77",
    "agree": True,
    "plan": "Gold plus",
    "remarks": "On page two",
}


def edited(pdf: bytes, change: Callable[[PdfWriter], None]) -> bytes:
    return formedit.edit(pdf, change)


def set_page(pdf: bytes, index: int, entries: dict[str, object]) -> bytes:
    def change(writer: PdfWriter) -> None:
        page = writer.pages[index]
        for key, value in entries.items():
            if isinstance(value, tuple):
                value = ArrayObject(FloatObject(v) for v in value)
            elif isinstance(value, int):
                value = NumberObject(value)
            page[NameObject(key)] = value

    return edited(pdf, change)


@pytest.fixture(scope="module")
def flat() -> bytes:
    return formedit.flat_pdf(pages=2)


@pytest.fixture(scope="module")
def out(flat: bytes) -> bytes:
    return write_acroform(flat, FIELDS)


def widgets(data: bytes) -> dict[str, list[DictionaryObject]]:
    return formedit.widgets(formedit.reader(data))


# --------------------------------------------------------------------------- structure


def test_appends_an_update_and_keeps_the_original_bytes(flat: bytes, out: bytes) -> None:
    assert out.startswith(flat)
    assert out.count(b"%%EOF") == flat.count(b"%%EOF") + 1


def test_acroform_lists_the_root_fields_with_fonts_and_da(out: bytes) -> None:
    form = formedit.acroform(out)
    assert form is not None
    names = [str(f.get_object()["/T"]) for f in form["/Fields"]]
    assert names == list(dict.fromkeys(d.name for d in FIELDS))
    fonts = form["/DR"]["/Font"]
    assert fonts["/Helv"]["/BaseFont"] == "/Helvetica"
    assert fonts["/Helv"]["/Encoding"] == "/WinAnsiEncoding"
    assert fonts["/ZaDb"]["/BaseFont"] == "/ZapfDingbats"
    assert form["/DA"] == "/Helv 0 Tf 0 g"
    assert "/NeedAppearances" not in form


def test_text_like_widgets_carry_type_flags_and_empty_appearances(out: bytes) -> None:
    found = widgets(out)
    expect = {
        "full_name": ("/Tx", 0, None),
        "birth_date": ("/Tx", 0, None),
        "notes": ("/Tx", FF_MULTILINE, None),
        "zip_code": ("/Tx", FF_COMB, 5),
        "member_id": ("/Tx", 0, 8),
        "country": ("/Ch", FF_COMBO, None),
        "signature": ("/Sig", 0, None),
    }
    for name, (ft, flags, max_len) in expect.items():
        widget = found[name][0]
        assert widget["/FT"] == ft, name
        assert int(widget.get("/Ff", 0)) == flags, name
        assert widget.get("/MaxLen") == max_len, name
        assert widget["/DA"] == "/Helv 0 Tf 0 g"
        assert widget["/F"] == 4
        assert widget.raw_get("/P").idnum == formedit.reader(out).pages[0].indirect_reference.idnum
        normal = widget["/AP"]["/N"].get_object()
        x0, y0, x1, y1 = (float(v) for v in widget["/Rect"])
        assert [float(v) for v in normal["/BBox"]] == [0, 0, x1 - x0, y1 - y0]
    assert found["country"][0]["/Opt"] == []
    assert found["full_name"][0]["/TU"] == "Full name"
    assert b"/Tx BMC" in found["full_name"][0]["/AP"]["/N"].get_object().get_data()


def test_date_field_has_acrobat_date_scripts(out: bytes) -> None:
    actions = widgets(out)["birth_date"][0]["/AA"]
    assert 'AFDate_FormatEx("mm/dd/yyyy")' in actions["/F"]["/JS"]
    assert 'AFDate_KeystrokeEx("mm/dd/yyyy")' in actions["/K"]["/JS"]
    assert Template(out).date_format("birth_date") == "mm/dd/yyyy"


def test_checkbox_has_yes_and_off_appearances(out: bytes) -> None:
    box = widgets(out)["agree"][0]
    assert box["/FT"] == "/Btn"
    assert set(box["/AP"]["/N"]) == {"/Yes", "/Off"}
    assert box["/AS"] == "/Off"
    assert box["/DA"] == "/ZaDb 0 Tf 0 g"
    assert box["/MK"]["/CA"] == "4"
    assert "/BG" not in box["/MK"]


def test_radio_group_is_one_parent_with_a_kid_per_option(out: bytes) -> None:
    kids = widgets(out)["plan"]
    parent = kids[0]["/Parent"].get_object()
    assert parent is kids[1]["/Parent"].get_object()
    assert parent["/FT"] == "/Btn"
    assert parent["/Ff"] == FF_RADIO | FF_NO_TOGGLE_TO_OFF
    assert parent["/V"] == "/Off"
    assert [k.get_object() for k in parent["/Kids"]] == kids
    assert [sorted(k["/AP"]["/N"]) for k in kids] == [["/Basic", "/Off"], ["/Gold plus", "/Off"]]
    assert all("/T" not in k and k["/AS"] == "/Off" and k["/MK"]["/CA"] == "l" for k in kids)
    assert b"/Gold#20plus" in out


# --------------------------------------------------------------------------- our engine


def test_template_inspects_names_types_and_options(out: bytes) -> None:
    fields = {f.name: f for f in Template(out).fields}
    assert {n: f.type for n, f in fields.items()} == {
        "full_name": "text",
        "birth_date": "date",
        "notes": "text",
        "zip_code": "text",
        "member_id": "text",
        "agree": "checkbox",
        "plan": "radio",
        "country": "choice",
        "signature": "signature",
        "remarks": "text",
    }
    assert fields["plan"].options == ("Basic", "Gold plus")
    assert fields["notes"].multiline
    assert fields["zip_code"].comb and fields["zip_code"].max_length == 5
    assert fields["member_id"].max_length == 8
    assert fields["full_name"].label == "Full name"
    assert fields["remarks"].page == 1
    assert fields["full_name"].rect == FIELDS[0].rect


def test_filled_values_show(out: bytes) -> None:
    filled = Template(out).fill(VALUES)
    shown = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    rects = {d.name: d for d in FIELDS}
    for name in ("full_name", "birth_date", "notes", "zip_code", "member_id", "remarks"):
        d = rects[name]
        assert viewcheck.text_in_rect(shown, d.page, d.rect) == viewcheck.squash(str(VALUES[name]))
    with viewcheck.Raster(shown) as raster:
        assert raster.ink(0, rects["agree"].rect) > 20
        basic, gold = (d.rect for d in FIELDS if d.name == "plan")
        assert raster.ink(0, gold) > 20
        assert raster.ink(0, basic) == 0


def test_unfilled_form_shows_nothing_in_the_fields(out: bytes) -> None:
    shown = viewcheck.flatten_with_pdfium(out, drop_page_content=True)
    with viewcheck.Raster(shown) as raster:
        assert all(raster.ink(d.page, d.rect, pad=-1) == 0 for d in FIELDS)


# --------------------------------------------------------------------------- pages


def test_rotated_page_gets_upright_widgets(flat: bytes) -> None:
    rotated = set_page(flat, 0, {"/Rotate": 90})
    rect = (100, 200, 116, 400)  # wide on screen: the page turns it
    field = Detected("text", 0, rect, "turned")
    out = write_acroform(rotated, [field])
    widget = widgets(out)["turned"][0]
    assert widget["/MK"]["/R"] == 90
    assert [float(v) for v in widget["/Rect"]] == list(rect)
    assert [float(v) for v in widget["/AP"]["/N"].get_object()["/BBox"]] == [0, 0, 200, 16]
    shown = viewcheck.flatten_with_pdfium(Template(out).fill({"turned": "Upright"}))
    assert viewcheck.text_in_rect(shown, 0, rect) == "Upright"
    with pdfplumber.open(io.BytesIO(shown)) as doc:
        chars = [c for c in doc.pages[0].chars if c["text"].strip()]
    assert chars and all(c["upright"] for c in chars)


def test_page_whose_boxes_start_away_from_the_origin(flat: bytes) -> None:
    moved = set_page(flat, 0, {"/MediaBox": (50, 50, 662, 842), "/CropBox": (50, 50, 662, 842)})
    rect = (100, 300, 300, 316)
    out = write_acroform(moved, [Detected("text", 0, rect, "moved")])
    assert Template(out).fields[0].rect == rect
    shown = viewcheck.flatten_with_pdfium(Template(out).fill({"moved": "Here"}))
    assert viewcheck.text_in_rect(shown, 0, rect) == "Here"


def test_existing_link_annotation_is_kept(flat: bytes) -> None:
    linked = formedit.add_link(flat, (400, 100, 500, 120))
    out = write_acroform(linked, FIELDS[:2])
    annots = [a.get_object() for a in formedit.reader(out).pages[0]["/Annots"]]
    assert [a["/Subtype"] for a in annots] == ["/Link", "/Widget", "/Widget"]


def test_indirect_annots_array_is_extended(flat: bytes) -> None:
    def indirect(writer: PdfWriter) -> None:
        page = writer.pages[0]
        page[NameObject("/Annots")] = writer._add_object(page["/Annots"].get_object())

    linked = edited(formedit.add_link(flat, (400, 100, 500, 120)), indirect)
    out = write_acroform(linked, FIELDS[:1])
    annots = formedit.reader(out).pages[0]["/Annots"]
    assert [a.get_object()["/Subtype"] for a in annots] == ["/Link", "/Widget"]


def test_existing_form_keeps_its_fields(flat: bytes) -> None:
    form = build_form([Spec("old_field", "text", (40, 100, 290, 116))])
    out = write_acroform(form, FIELDS[:1])
    names = [str(f.get_object()["/T"]) for f in formedit.acroform(out)["/Fields"]]
    assert names == ["old_field", "full_name"]
    assert {f.name for f in Template(out).fields} == {"old_field", "full_name"}
    with pytest.raises(FillPdfError, match="old_field"):
        write_acroform(form, [Detected("text", 0, (40, 300, 100, 316), "old_field")])


def test_xref_stream_base(flat: bytes) -> None:
    out = write_acroform(formedit.to_xref_stream(flat), FIELDS)
    assert [f.name for f in Template(out).fields][:2] == ["full_name", "birth_date"]


# --------------------------------------------------------------------------- contract


def test_same_input_gives_the_same_bytes(flat: bytes, out: bytes) -> None:
    assert write_acroform(flat, FIELDS) == out
    assert write_acroform(io.BytesIO(flat), list(FIELDS)) == out


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([Detected("text", 0, (0, 0, 10, 10), "")], "no name"),
        ([Detected("text", 5, (0, 0, 10, 10), "a")], "page 5"),
        ([Detected("text", 0, (0, 0, 0, 10), "a")], "empty"),
        ([Detected("barcode", 0, (0, 0, 10, 10), "a")], "unknown field type"),
        (
            [Detected("text", 0, (0, 0, 9, 9), "a"), Detected("checkbox", 0, (20, 0, 29, 9), "a")],
            "Two fields",
        ),
        (
            [
                Detected("radio", 0, (0, 0, 9, 9), "r", export="x"),
                Detected("radio", 0, (20, 0, 29, 9), "r", export="x"),
            ],
            "repeated",
        ),
    ],
)
def test_fields_that_cannot_be_placed_are_refused(
    flat: bytes, fields: list[Detected], message: str
) -> None:
    with pytest.raises(FillPdfError, match=message):
        write_acroform(flat, fields)


def test_radio_without_export_values_uses_places(flat: bytes) -> None:
    group = [Detected("radio", 0, (40 + 30 * i, 520, 52 + 30 * i, 532), "pick") for i in range(3)]
    out = write_acroform(flat, group)
    assert Template(out).fields[0].options == ("0", "1", "2")


def test_detected_names_give_way_to_the_forms_own_fields(flat: bytes) -> None:
    """Converting a PDF that already has a field named like a detected one: the detector's
    name gets a free suffix (a radio group's buttons keep one name between them)."""
    form = build_form([Spec("full_name", "text", (40, 100, 290, 116))])
    fields = [
        Detected("text", 0, (40, 300, 200, 316), "full_name"),
        Detected("radio", 0, (40, 400, 52, 412), "full_name_2", export="a"),
        Detected("radio", 0, (60, 400, 72, 412), "full_name_2", export="b"),
        Detected("checkbox", 0, (40, 450, 52, 462), "full_name_2"),
    ]
    form = write_acroform(form, fields[1:3])  # the form now has full_name and full_name_2
    out = write_acroform(form, [fields[0], fields[3]], rename_taken=True)
    assert {f.name for f in Template(out).fields} == {
        "full_name",
        "full_name_2",
        "full_name_3",
        "full_name_2_2",
    }


def test_a_schema_name_the_form_already_has_says_what_to_do(flat: bytes) -> None:
    form = build_form([Spec("old_field", "text", (40, 100, 290, 116))])
    with pytest.raises(FillPdfError) as raised:
        write_acroform(form, [Detected("text", 0, (40, 300, 100, 316), "old_field")])
    message = str(raised.value)
    assert "another name in the schema" in message and "fillpdf inspect" in message


@pytest.mark.parametrize("pages", [1, 3])
def test_a_conversion_gives_back_the_flat_pdf_it_was_made_from(pages: int) -> None:
    from fillpdf_provider.engine.convert import convert
    from fillpdf_provider.engine.incremental import previous_revision
    from kits.flatkit import flat_form

    flat = flat_form(pages)
    result = convert(flat)
    earlier = previous_revision(result.pdf)
    assert earlier == flat
    assert convert(earlier).pdf == result.pdf  # the same form again, byte for byte
    assert previous_revision(flat) is None  # a file with one revision has no earlier one
    assert previous_revision(b"not a pdf") is None
