"""Decompression limits count what a stream really decodes to: through whole filter chains,
across nested form XObjects, and over the whole file, in bounded memory. Drawing limits
follow ``Do`` through the forms a page draws: never without end, never past a budget."""

from __future__ import annotations

import base64
import io
import zlib

import pytest
from pypdf import PdfReader
from pypdf.filters import decode_stream_data
from pypdf.generic import ArrayObject, NameObject, StreamObject

from fillpdf_provider.engine import content_limits
from fillpdf_provider.engine.content_limits import check_content_sizes, decoded_size
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.detect import HEAVY_PAGE_BYTES, page_geometries, pdfium_page
from fillpdf_provider.engine.errors import DamagedPdfError
from kits.hostile import (
    _FORM,
    _PAGE,
    _TEXT,
    HOSTILE,
    _drawing,
    _one_page,
    _pdf,
    _stream,
    valid_one_page,
)

TEXT = b"BT /F1 12 Tf 72 720 Td (Name:) Tj ET\n" * 50


@pytest.mark.parametrize(
    "case", ["chain_bomb_flate", "chain_bomb_hex", "run_length_bomb", "many_page_bomb"]
)
def test_bombs_behind_filter_chains_and_across_pages_are_refused(case: str) -> None:
    with pytest.raises(DamagedPdfError, match="inflates past"):
        convert(HOSTILE[case]())


def run_length(data: bytes) -> bytes:
    out = bytearray()
    for start in range(0, len(data), 100):
        piece = data[start : start + 100]
        out += bytes([len(piece) - 1]) + piece
    return bytes(out + b"\x00" + b"x" + b"\xfe" + b"y" + b"\x80")  # a literal and a run of 3


@pytest.mark.parametrize(
    ("filters", "encode"),
    [
        (["/FlateDecode"], zlib.compress),
        (["/ASCIIHexDecode"], lambda d: d.hex().encode() + b">"),
        (["/ASCIIHexDecode", "/FlateDecode"], lambda d: zlib.compress(d).hex().encode() + b">"),
        (["/ASCII85Decode", "/FlateDecode"],
         lambda d: base64.a85encode(zlib.compress(d), wrapcol=60) + b"~>"),
        (["/ASCII85Decode"], lambda d: base64.a85encode(b"\0" * 40 + d) + b"~>"),  # "z" groups
        (["/FlateDecode", "/FlateDecode"], lambda d: zlib.compress(zlib.compress(d))),
        (["/RunLengthDecode"], run_length),
    ],
)  # fmt: skip
def test_the_counted_size_is_what_pypdf_decodes(filters: list[str], encode) -> None:
    stream = StreamObject()
    stream._data = encode(TEXT)
    stream[NameObject("/Filter")] = ArrayObject(NameObject(f) for f in filters)
    assert decoded_size(stream, 10**9) == len(decode_stream_data(stream))


def test_a_real_form_is_counted_in_full_and_converts() -> None:
    from kits.flatkit import flat_form

    reader = PdfReader(io.BytesIO(flat_form(3)))
    from fillpdf_provider.engine.content_limits import check_content_sizes

    check_content_sizes(reader)  # no error
    assert convert(flat_form(3)).pages == 3


# --------------------------------------------------------------------------- drawing

DRAWN_FOREVER = [
    "form_draws_itself",
    "form_inherits_itself",
    "forms_draw_each_other",
    "glyph_draws_itself",
]
LINE = b"0 0 m 10 10 l S\n"
#: A form (object 7) that draws itself twice.
LOOP = _stream(LINE + b"q /X1 Do Q\n" * 2, _FORM + b" /Resources << /XObject << /X1 7 0 R >> >>")


@pytest.mark.parametrize("detect", ["fields", "fields_fast"])
@pytest.mark.parametrize("case", DRAWN_FOREVER)
def test_a_form_drawn_inside_itself_is_refused(case: str, detect: str) -> None:
    with pytest.raises(DamagedPdfError, match="Page 1 draws a form XObject inside itself"):
        convert(HOSTILE[case](), detect)


@pytest.mark.parametrize(
    ("page_entry", "object_6", "fill"),
    [
        (  # a tiling pattern that paints with the form
            b"/Resources << /Pattern << /P1 6 0 R >> ",
            _stream(b"q /X1 Do Q\n", b" /PatternType 1 /PaintType 1 /TilingType 1"
                    b" /BBox [0 0 10 10] /XStep 10 /YStep 10"
                    b" /Resources << /XObject << /X1 7 0 R >> >>"),
            b"/Pattern cs /P1 scn 0 0 99 99 re f\n",
        ),
        (  # a soft mask drawn by the form
            b"/Resources << /ExtGState << /G1 << /SMask << /S /Luminosity /G 7 0 R >> >> >> ",
            b"<< /N 6 >>",
            b"/G1 gs 0 0 99 99 re f\n",
        ),
        (  # an annotation whose appearance is the form
            b"/Annots [6 0 R] /Resources << ",
            b"<< /Type /Annot /Subtype /Stamp /Rect [0 0 99 99] /AP << /N 7 0 R >> >>",
            b"",
        ),
    ],
    ids=["pattern", "soft_mask", "annotation"],
)  # fmt: skip
def test_a_form_drawn_inside_itself_without_do_on_the_page_is_refused(
    page_entry: bytes, object_6: bytes, fill: bytes
) -> None:
    """What PDFium draws when it renders a page (a preview) is followed too."""
    page = _PAGE.replace(b"/Resources << ", page_entry)
    pdf = _pdf([*_one_page(page=page, contents=_stream(_TEXT + fill)), object_6, LOOP])
    with pytest.raises(DamagedPdfError, match="draws a form XObject inside itself"):
        check_content_sizes(PdfReader(io.BytesIO(pdf)))


def test_forms_drawn_inside_one_another_past_the_budget_are_refused() -> None:
    with pytest.raises(DamagedPdfError, match="over 10,000 times"):
        convert(HOSTILE["form_fan_out"](), "fields_fast")


def test_a_form_is_counted_each_time_it_is_drawn() -> None:
    draw = b"q /X1 Do Q\n" * 3
    pdf = _drawing(b"/X1 6 0 R", draw, [_stream(LINE * 100, _FORM)])
    assert check_content_sizes(PdfReader(io.BytesIO(pdf))) == [len(_TEXT + draw) + 300 * len(LINE)]


def test_forms_that_list_one_another_but_draw_in_a_chain_convert() -> None:
    """Real files often give every form one /Resources listing them all: no loop is drawn."""
    names = b"/X0 6 0 R /X1 7 0 R /X2 8 0 R"
    forms = [
        _stream(LINE + b"q /X1 Do Q\n", _FORM + b" /Resources 9 0 R"),
        _stream(LINE + b"q /X2 Do Q\n", _FORM + b" /Resources 9 0 R"),
        _stream(LINE, _FORM + b" /Resources 9 0 R"),
    ]
    draw = b"q /X0 Do Q\nq /X2 Do Q\n"
    pdf = _drawing(names, draw, [*forms, b"<< /XObject << %s >> >>" % names])
    drawn = len(_TEXT + draw) + 2 * len(LINE + b"q /X1 Do Q\n") + 2 * len(LINE)
    assert check_content_sizes(PdfReader(io.BytesIO(pdf))) == [drawn]
    assert convert(pdf).pages == 1


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "flate"])
def test_do_operators_are_read_across_decoding_steps(monkeypatch, compress: bool) -> None:
    monkeypatch.setattr(content_limits, "DECODE_STEP", 7)  # every operator split somewhere
    data = _TEXT + b"q /X1 Do Q\nq /X#31\n  Do Q\n" * 25  # 50 draws, half #-escaped
    page = _PAGE.replace(b"/Resources << ", b"/Resources << /XObject << /X1 6 0 R >> ")
    contents = _stream(zlib.compress(data), b" /Filter /FlateDecode") if compress else (
        _stream(data)
    )  # fmt: skip
    pdf = _pdf([*_one_page(page=page, contents=contents), _stream(LINE, _FORM)])
    assert check_content_sizes(PdfReader(io.BytesIO(pdf))) == [len(data) + 50 * len(LINE)]


def test_a_page_heavy_with_drawn_forms_is_read_through_pdfium(monkeypatch) -> None:
    read: list[int] = []
    real = pdfium_page.read_pdfium_page
    monkeypatch.setattr(
        pdfium_page, "read_pdfium_page", lambda pdf, index: read.append(index) or real(pdf, index)
    )
    pdf = valid_one_page()
    assert len(list(page_geometries(pdf, "fields", None, [HEAVY_PAGE_BYTES]))) == 1
    assert read == []
    assert len(list(page_geometries(pdf, "fields", None, [HEAVY_PAGE_BYTES + 1]))) == 1
    assert read == [0]
