"""Decompression limits count what a stream really decodes to: through whole filter chains,
across nested form XObjects, and over the whole file, in bounded memory."""

from __future__ import annotations

import base64
import io
import zlib

import pytest
from hostile import HOSTILE
from pypdf import PdfReader
from pypdf.filters import decode_stream_data
from pypdf.generic import ArrayObject, NameObject, StreamObject

from fillpdf_provider.engine.content_limits import _decoded_size
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.errors import DamagedPdfError

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
    assert _decoded_size(stream, 10**9) == len(decode_stream_data(stream))


def test_a_real_form_is_counted_in_full_and_converts() -> None:
    from flatkit import flat_form

    reader = PdfReader(io.BytesIO(flat_form(3)))
    from fillpdf_provider.engine.content_limits import check_content_sizes

    check_content_sizes(reader)  # no error
    assert convert(flat_form(3)).pages == 3
