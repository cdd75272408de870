"""Hostile PDF inputs for robustness tests, and a protected measurement of how the engine copes.

Each generator returns the bytes of one crafted file, built by hand (with correct cross-reference
offsets wherever the attack needs an otherwise well-formed file), well under 5 MB and in well
under a second. ``HOSTILE`` maps each case's name to its generator.

Run this file to measure the engine: every case is fed to ``convert(data, "fields")`` and,
separately, to ``len(open_pdf(data).reader.pages)``, each in a fresh subprocess with a time
limit and an address-space limit, and one line per case and call is printed::

    .venv/bin/python kits/hostile.py [CASE ...] [--timeout 20] [--memory-gb 2]
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from collections.abc import Callable, Sequence

_HEADER = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"
_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
_TEXT = b"BT /F1 12 Tf 72 720 Td (Name:) Tj ET\n100 716 m 300 716 l S\n"
_PAGE = (
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
    b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>"
)


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    """A stream object's body with a correct direct /Length."""
    return b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(data), extra, data)


def _objects(objects: Sequence[bytes], start: int = 1) -> tuple[bytes, list[int]]:
    """The header and numbered objects ``start, start + 1, ...``, with each object's offset."""
    out = bytearray(_HEADER)
    offsets = []
    for number, body in enumerate(objects, start):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    return bytes(out), offsets


def _pdf(objects: Sequence[bytes], *, size: int | None = None) -> bytes:
    """A complete file: objects 1..n, a classic xref table with true offsets, a trailer."""
    body, offsets = _objects(objects)
    xref = [b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)]
    xref += [b"%010d 00000 n \n" % offset for offset in offsets]
    trailer = b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        size if size is not None else len(objects) + 1,
        len(body),
    )
    return body + b"".join(xref) + trailer


def _one_page(page: bytes = _PAGE, contents: bytes = _stream(_TEXT)) -> list[bytes]:
    """Catalog, page tree, page, contents, font: objects 1-5 of a plain one-page file."""
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page,
        contents,
        _FONT,
    ]


def valid_one_page() -> bytes:
    """A sound one-page file with a label and a rule: the control case, not an attack."""
    return _pdf(_one_page())


def cyclic_page_tree() -> bytes:
    """Page-tree walking: the root's /Kids holds the root itself and a node whose kid is the root.

    A walker that does not track visited nodes recurses or loops for ever; /Count 3 looks sane.
    """
    objects = _one_page()
    objects[1] = b"<< /Type /Pages /Kids [3 0 R 2 0 R 6 0 R] /Count 3 >>"
    objects.append(b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>")
    return _pdf(objects)


def huge_object_count(real: int = 50_000) -> bytes:
    """Object-table sizing: a trailer /Size of 10,000,000 over ``real`` small real objects.

    Exercises anything that allocates or loops per claimed object number (xref tables, the
    next free object number of an incremental update) rather than per object present.
    """
    extra = [b"<< /N %d >>" % n for n in range(6, real + 6)]
    return _pdf(_one_page() + extra, size=10_000_000)


def huge_xref_index(real: int = 2_000) -> bytes:
    """Xref-stream decoding: /W [1 4 2] with /Index [0 10000000] but rows for ``real`` objects.

    The cross-reference stream claims ten million rows and holds a few thousand, so a reader
    that loops over the claimed /Index (or allocates for it) does so ten million times.
    """
    objects = _one_page() + [b"<< /N %d >>" % n for n in range(6, real + 6)]
    body, offsets = _objects(objects)
    xref_number = len(objects) + 1
    rows = [b"\x00\x00\x00\x00\x00\xff\xff"]
    rows += [b"\x01" + offset.to_bytes(4, "big") + b"\x00\x00" for offset in offsets]
    rows.append(b"\x01" + len(body).to_bytes(4, "big") + b"\x00\x00")
    data = zlib.compress(b"".join(rows), 9)
    xref = b"%d 0 obj\n%s\nendobj\n" % (
        xref_number,
        _stream(
            data,
            b" /Type /XRef /Size 10000000 /Index [0 10000000] /W [1 4 2] /Root 1 0 R"
            b" /Filter /FlateDecode",
        ),
    )
    return body + xref + b"startxref\n%d\n%%%%EOF\n" % len(body)


def deep_nesting(depth: int = 100_000) -> bytes:
    """Recursive-descent parsing: dictionaries and arrays nested ``depth`` deep in /Resources.

    The nest sits directly in the page object, so merely reading the page tree parses it.
    """
    opens = [b"<< /A " if level % 2 == 0 else b"[ " for level in range(depth)]
    closes = [b" >>" if level % 2 == 0 else b" ]" for level in reversed(range(depth))]
    nest = b"".join(opens) + b"0" + b"".join(closes)
    page = _PAGE.replace(b"/Resources << ", b"/Resources << /Properties << /Deep %s >> " % nest)
    return _pdf(_one_page(page=page))


def truncated() -> bytes:
    """Cross-reference recovery: a sound one-page file cut in half, with no xref or trailer."""
    whole = _pdf(_one_page(contents=_stream(_TEXT * 8)))
    cut = whole[: len(whole) // 2]
    assert b"xref" not in cut and b"trailer" not in cut
    return cut


def self_referencing_length() -> bytes:
    """Stream-length resolution: one /Length refers to its own stream, another to no object.

    Resolving the first /Length means parsing the stream whose length is being resolved.
    """
    page = _PAGE.replace(b"/Contents 4 0 R", b"/Contents [4 0 R 6 0 R]")
    own_length = b"<< /Length 4 0 R >>\nstream\n%s\nendstream" % _TEXT
    missing_length = b"<< /Length 99 0 R >>\nstream\n%s\nendstream" % _TEXT
    return _pdf([*_one_page(page=page, contents=own_length), missing_length])


def page_count_lie() -> bytes:
    """Trusting /Count: the page-tree root claims 2,000,000,000 pages and has one."""
    objects = _one_page()
    objects[1] = b"<< /Type /Pages /Kids [3 0 R] /Count 2000000000 >>"
    return _pdf(objects)


def content_bomb(megabytes: int = 512) -> bytes:
    """Decompression limits: a ~0.5 MB FlateDecode content stream inflating to ``megabytes`` MB.

    After real text operators the stream is spaces (PDF whitespace, so valid content). Each
    MB is compressed once and its bytes repeated: a full flush makes every MB's compressed
    block identical, and the Adler-32 of the whole is computed from the repeated MB.
    """
    chunk = b" " * (1 << 20)
    packer = zlib.compressobj(9)
    head = packer.compress(_TEXT) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
    checksum = zlib.adler32(_TEXT)
    for _ in range(megabytes):
        checksum = zlib.adler32(chunk, checksum)
    final = b"\x03\x00" + checksum.to_bytes(4, "big")  # empty final fixed-Huffman block
    data = head + block * megabytes + final
    return _pdf(_one_page(contents=_stream(data, b" /Filter /FlateDecode")))


def _bomb_data(megabytes: int) -> bytes:
    """Flate data of ``_TEXT`` and then ``megabytes`` MB of spaces (see ``content_bomb``)."""
    chunk = b" " * (1 << 20)
    packer = zlib.compressobj(9)
    head = packer.compress(_TEXT) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(chunk) + packer.flush(zlib.Z_FULL_FLUSH)
    checksum = zlib.adler32(_TEXT)
    for _ in range(megabytes):
        checksum = zlib.adler32(chunk, checksum)
    return head + block * megabytes + b"\x03\x00" + checksum.to_bytes(4, "big")


def chain_bomb_flate(megabytes: int = 512) -> bytes:
    """Filter chains: a bomb compressed once more, ``[/FlateDecode /FlateDecode]``: the first
    stage gives a harmless half megabyte, the second the gigabytes."""
    data = zlib.compress(_bomb_data(megabytes), 9)
    return _pdf(_one_page(contents=_stream(data, b" /Filter [/FlateDecode /FlateDecode]")))


def chain_bomb_hex(megabytes: int = 512) -> bytes:
    """Filter chains: a bomb written in hex, ``[/ASCIIHexDecode /FlateDecode]``."""
    data = _bomb_data(megabytes).hex().encode() + b">"
    return _pdf(_one_page(contents=_stream(data, b" /Filter [/ASCIIHexDecode /FlateDecode]")))


def run_length_bomb(megabytes: int = 128) -> bytes:
    """RunLength: two bytes repeat a space 128 times, so 2 MB of them inflate to 128 MB."""
    data = b"\x81 " * (megabytes * (1 << 20) // 128) + b"\x80"
    return _pdf(_one_page(contents=_stream(data, b" /Filter /RunLengthDecode")))


def many_page_bomb(pages: int = 5, megabytes: int = 60) -> bytes:
    """A file whose pages each stay under the page budget and add up past the file's."""
    kids = b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
    ]
    data = _bomb_data(megabytes)
    font = 3 + 2 * pages
    for i in range(pages):
        objects.append(_PAGE.replace(b"/Contents 4 0 R", b"/Contents %d 0 R" % (4 + 2 * i))
                       .replace(b"5 0 R", b"%d 0 R" % font))  # fmt: skip
        objects.append(_stream(data, b" /Filter /FlateDecode"))
    objects.append(_FONT)
    return _pdf(objects)


def content_bomb_large() -> bytes:
    """Decompression limits past a 2 GB cap: the same kind of bomb, ~0.8 MB inflating to 768 MB."""
    return content_bomb(768)


# --- resources that refer to themselves --------------------------------------------------------

_FORM = b" /Type /XObject /Subtype /Form /BBox [0 0 612 792]"


def _drawing(xobjects: bytes, draw: bytes, forms: Sequence[bytes]) -> bytes:
    """A page whose resources list ``xobjects``, whose content draws ``draw``, with ``forms``
    as objects 6, 7, ..."""
    page = _PAGE.replace(b"/Resources << ", b"/Resources << /XObject << %s >> " % xobjects)
    return _pdf([*_one_page(page=page, contents=_stream(_TEXT + draw)), *forms])


def resources_contain_themselves() -> bytes:
    """Resource walking: the page's /Resources dictionary lists itself as its own /Resources,
    as an XObject, a graphics state and a font, and the content uses each name.

    A walker that follows every reference in the resources without remembering where it has
    been never returns. Nothing is drawn in a loop, so the page converts as it reads.
    """
    page = _PAGE.replace(b"/Resources << /Font << /F1 5 0 R >> >>", b"/Resources 6 0 R")
    resources = (
        b"<< /Font << /F1 5 0 R /F2 6 0 R >> /Resources 6 0 R /XObject << /X1 6 0 R >>"
        b" /ExtGState << /G1 6 0 R >> /Properties << /P1 6 0 R >> >>"
    )
    draw = b"/G1 gs q /X1 Do Q /Tx /P1 BDC EMC\n"
    return _pdf([*_one_page(page=page, contents=_stream(_TEXT + draw)), resources])


def xobject_is_the_page() -> bytes:
    """Resource walking: the page's /Resources are the page itself, whose /XObject /X1 is the
    page too, and the content draws /X1: a dictionary where a stream should be, in a loop.
    Readers draw nothing for it, so the page converts."""
    page = _PAGE.replace(
        b"/Resources << /Font << /F1 5 0 R >> >>",
        b"/Resources 3 0 R /Font << /F1 5 0 R >> /XObject << /X1 3 0 R >>",
    )
    return _pdf(_one_page(page=page, contents=_stream(_TEXT + b"q /X1 Do Q\n")))


def font_is_its_own_descendant() -> bytes:
    """Font loading: a Type0 font whose /DescendantFonts holds the font itself.

    pdfminer loads the descendant by loading the font, for ever (it stops at Python's
    recursion limit); the text is still there to read with another reader.
    """
    page = _PAGE.replace(b"/F1 5 0 R", b"/F1 6 0 R")
    font = b"<< /Type /Font /Subtype /Type0 /BaseFont /Loop /Encoding /Identity-H"
    font += b" /DescendantFonts [6 0 R] >>"
    return _pdf([*_one_page(page=page), font])


def colour_space_inside_itself() -> bytes:
    """Colour-space resolution: an image drawn with ``/Indexed`` whose base is that colour
    space itself, so resolving it fully never ends."""
    image = _stream(
        b"\x00",
        b" /Type /XObject /Subtype /Image /Width 1 /Height 1 /BitsPerComponent 8 /ColorSpace 7 0 R",
    )
    return _drawing(
        b"/Im1 6 0 R", b"q 10 0 0 10 400 400 cm /Im1 Do Q\n", [image, b"[/Indexed 7 0 R 0 <00>]"]
    )


def form_draws_itself(times: int = 8) -> bytes:
    """Form drawing: a form XObject whose /Resources hold itself and whose content draws itself
    ``times`` times. pdfminer stops at the first repeat; PDFium draws it again to a depth
    limit, ``times`` to the power of that depth."""
    form = _stream(
        b"0 0 m 10 10 l S\n" + b"q /X1 Do Q\n" * times,
        _FORM + b" /Resources << /XObject << /X1 6 0 R >> >>",
    )
    return _drawing(b"/X1 6 0 R", b"q /X1 Do Q\n", [form])


def form_inherits_itself(times: int = 8) -> bytes:
    """Form drawing: a form XObject without /Resources draws ``/X1``, which in the page's
    resources it inherits is the form itself."""
    form = _stream(b"0 0 m 10 10 l S\n" + b"q /X1 Do Q\n" * times, _FORM)
    return _drawing(b"/X1 6 0 R", b"q /X1 Do Q\n", [form])


def glyph_draws_itself(times: int = 8) -> bytes:
    """Type3 glyphs: the page shows one glyph of a Type3 font whose /Resources hold a form
    that draws itself ``times`` times. No ``Do`` on the page leads there: PDFium loads the
    glyph to place the text, and then draws the form inside itself to its depth limit."""
    page = _PAGE.replace(b"/F1 5 0 R", b"/F1 5 0 R /T3 6 0 R")
    show = _TEXT + b"BT /T3 12 Tf 72 600 Td (a) Tj ET\n"
    font = (
        b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000]"
        b" /FontMatrix [0.001 0 0 0.001 0 0] /CharProcs << /a 7 0 R >>"
        b" /Encoding << /Differences [97 /a] >> /FirstChar 97 /LastChar 97 /Widths [1000]"
        b" /Resources << /XObject << /X1 8 0 R >> >> >>"
    )
    glyph = _stream(b"1000 0 d0 q /X1 Do Q\n")
    form = _stream(
        b"0 0 m 10 10 l S\n" + b"q /X1 Do Q\n" * times,
        _FORM + b" /Resources << /XObject << /X1 8 0 R >> >>",
    )
    return _pdf([*_one_page(page=page, contents=_stream(show)), font, glyph, form])


def forms_draw_each_other(count: int = 10) -> bytes:
    """Form drawing: ``count`` forms share one /Resources dictionary that lists them all, and
    each draws every one. Stopping at a form already being drawn still leaves count! ways
    down (3.6 million for ten)."""
    names = b" ".join(b"/X%d %d 0 R" % (i, 6 + i) for i in range(count))
    shared = 6 + count
    body = b"0 0 m 10 10 l S\n" + b"".join(b"q /X%d Do Q\n" % i for i in range(count))
    forms = [_stream(body, _FORM + b" /Resources %d 0 R" % shared) for _ in range(count)]
    return _drawing(names, b"q /X0 Do Q\n", [*forms, b"<< /XObject << %s >> >>" % names])


def form_fan_out(depth: int = 32) -> bytes:
    """Form drawing without a loop: each of ``depth`` forms draws the next one twice, so the
    page draws the last one 2 ** (depth - 1) times."""
    forms = []
    for level in range(depth):
        last = level == depth - 1
        body = b"0 0 m 10 10 l S\n" + (b"" if last else b"q /X Do Q\nq /X Do Q\n")
        resources = b"" if last else b" /Resources << /XObject << /X %d 0 R >> >>" % (7 + level)
        forms.append(_stream(body, _FORM + resources))
    return _drawing(b"/X 6 0 R", b"q /X Do Q\n", forms)


# --- scale -------------------------------------------------------------------------------------


def many_fields(count: int = 60_000, per_page: int = 1_000, radio: int = 0) -> bytes:
    """A fillable form of ``count`` fields, ``per_page`` widgets to a page: text fields ``f0``,
    ``f1``, ..., of which with ``radio`` the last ``radio`` are instead the kids of one radio
    group ``choice`` (exports ``o0``, ``o1``, ...).

    Not an attack but a size: work that compares every field with every other field (a
    list searched per name, per widget) takes minutes here. About 9 MB for 60,000 (12 MB
    as radio kids).
    """
    pages = -(-count // per_page)
    first_page = 7
    first_widget = first_page + pages
    group = first_widget + count  # the radio group's field, after the widgets
    texts = count - radio
    fields = [b"%d 0 R" % (first_widget + i) for i in range(texts)]
    fields += [b"%d 0 R" % group] if radio else []
    page_refs = b" ".join(b"%d 0 R" % (first_page + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /AcroForm 3 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (page_refs, pages),
        b"<< /Fields [%s] /DA (/Helv 0 Tf 0 g) /DR << /Font << /Helv 4 0 R >> >> >>"
        % b" ".join(fields),
        _FONT,
        _stream(b""),
        _stream(b"", _FORM.replace(b"612 792", b"27 13")),  # the radio buttons' appearances
    ]
    for page in range(pages):
        widgets = range(page * per_page, min(count, (page + 1) * per_page))
        annots = b" ".join(b"%d 0 R" % (first_widget + i) for i in widgets)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R"
            b" /Resources << /Font << /Helv 4 0 R >> >> /Annots [%s] >>" % annots
        )
    for i in range(count):
        x, y = 20 + i % 20 * 29, 20 + i // 20 % 50 * 15  # on the page, overlapping past 1,000
        common = b"/Type /Annot /Subtype /Widget /Rect [%d %d %d %d] /P %d 0 R" % (
            x, y, x + 27, y + 13, first_page + i // per_page
        )  # fmt: skip
        if i < texts:
            objects.append(b"<< %s /FT /Tx /T (f%d) >>" % (common, i))
        else:
            objects.append(
                b"<< %s /Parent %d 0 R /AS /Off /AP << /N << /o%d 6 0 R /Off 6 0 R >> >> >>"
                % (common, group, i - texts)
            )
    if radio:
        members = b" ".join(b"%d 0 R" % (first_widget + i) for i in range(texts, count))
        objects.append(b"<< /FT /Btn /Ff 49152 /T (choice) /Kids [%s] >>" % members)
    return _pdf(objects)


def not_a_pdf(size: int = 64 * 1024) -> bytes:
    """Format sniffing: seeded random bytes, as if uploaded under a .pdf name."""
    data = random.Random(0x5EED).randbytes(size)
    assert b"%PDF-" not in data
    return data


def empty_file() -> bytes:
    """Format sniffing: a zero-byte upload."""
    return b""


HOSTILE: dict[str, Callable[[], bytes]] = {
    "cyclic_page_tree": cyclic_page_tree,
    "huge_object_count": huge_object_count,
    "huge_xref_index": huge_xref_index,
    "deep_nesting": deep_nesting,
    "truncated": truncated,
    "self_referencing_length": self_referencing_length,
    "page_count_lie": page_count_lie,
    "content_bomb": content_bomb,
    "content_bomb_large": content_bomb_large,
    "chain_bomb_flate": chain_bomb_flate,
    "chain_bomb_hex": chain_bomb_hex,
    "run_length_bomb": run_length_bomb,
    "many_page_bomb": many_page_bomb,
    "resources_contain_themselves": resources_contain_themselves,
    "xobject_is_the_page": xobject_is_the_page,
    "font_is_its_own_descendant": font_is_its_own_descendant,
    "colour_space_inside_itself": colour_space_inside_itself,
    "form_draws_itself": form_draws_itself,
    "form_inherits_itself": form_inherits_itself,
    "glyph_draws_itself": glyph_draws_itself,
    "forms_draw_each_other": forms_draw_each_other,
    "form_fan_out": form_fan_out,
    "not_a_pdf": not_a_pdf,
    "empty_file": empty_file,
}

#: Cases the measurement runs: the control first, then every hostile input.
CASES: dict[str, Callable[[], bytes]] = {"control": valid_one_page, **HOSTILE}

CALLS = ("convert", "open_pdf")


# --- measurement -------------------------------------------------------------------------------


class _CountWarnings(logging.Handler):
    """Counts warnings (pypdf's repair notices and the like) instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _run(call: str, data: bytes) -> str:
    from fillpdf_provider.engine.convert import convert
    from fillpdf_provider.engine.source import open_pdf

    if call == "convert":
        result = convert(data, "fields")
        return f"{result.pages} page(s), {len(result.schema)} field(s), {len(result.pdf)} B out"
    return f"{len(open_pdf(data).reader.pages)} page(s)"


def _child(case: str, call: str) -> None:
    """Run one call on one case in this process and print a JSON record of what happened.

    Afterwards the control file is converted in the same process, to see it still serves.
    """
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    warnings = _CountWarnings()
    logging.getLogger().addHandler(warnings)
    import fillpdf_provider.engine.convert  # noqa: F401  (imports are not timed)
    from fillpdf_provider.engine.errors import FillPdfError

    data = CASES[case]()
    record: dict[str, object] = {"input_bytes": len(data)}
    started = time.perf_counter()
    try:
        record["result"] = _run(call, data)
        record["outcome"] = "ok"
    except BaseException as exc:
        record["outcome"] = "error"
        record["type"] = type(exc).__name__
        record["message"] = str(exc)[:300]
        record["fillpdf_error"] = isinstance(exc, FillPdfError)
        record["error_type"] = getattr(exc, "error_type", None)
        cause = exc.__cause__ or exc.__context__
        record["cause"] = f"{type(cause).__name__}: {str(cause)[:160]}" if cause else None
        inner = exc if not isinstance(exc, FillPdfError) else cause
        if inner is not None:
            frames = traceback.extract_tb(inner.__traceback__)[-4:]
            record["frames"] = [
                f"{os.path.relpath(f.filename)}:{f.lineno} {f.name}: {f.line}" for f in frames
            ]
    record["seconds"] = round(time.perf_counter() - started, 3)
    record["warnings"] = warnings.count
    try:
        _run("convert", valid_one_page())
        record["then_control"] = "ok"
    except BaseException as exc:
        record["then_control"] = f"{type(exc).__name__}: {str(exc)[:120]}"
    print(json.dumps(record), flush=True)


def _limit_memory(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def measure(case: str, call: str, *, timeout: float = 20.0, memory_gb: float = 2.0) -> dict:
    """Run ``call`` on ``case`` in a fresh, limited subprocess; what happened, how long, peak RSS.

    On a timeout the child is first asked (SIGUSR1) to dump its Python stacks, then killed.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child", case, call],
            stdout=out,
            stderr=err,
            preexec_fn=_limit_memory(int(memory_gb * 2**30)),
        )
        hung = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > timeout:
                hung = True
                child.send_signal(signal.SIGUSR1)
                time.sleep(1.0)
                child.kill()
                _, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.02)
        child.returncode = -1 if hung else 0  # reaped by wait4; keep Popen from waiting again
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        lines = out.read().decode("utf-8", "replace").strip().splitlines()
        stderr = err.read().decode("utf-8", "replace").strip()
    record: dict = {"case": case, "call": call, "wall": round(min(wall, timeout), 2)}
    record["peak_rss_mb"] = round(usage.ru_maxrss / 1024)
    if hung:
        record["outcome"] = f"HANG: killed after {timeout:g} s"
    elif os.WIFSIGNALED(status):
        record["outcome"] = f"CRASH: {signal.Signals(os.WTERMSIG(status)).name}"
    elif lines:
        try:
            record.update(json.loads(lines[-1]))
        except json.JSONDecodeError:
            record["outcome"] = f"CRASH: unparsable output {lines[-1][:200]!r}"
    else:
        record["outcome"] = f"CRASH: exit {os.WEXITSTATUS(status)} without a record"
    if record["outcome"].startswith(("HANG", "CRASH")):
        record["stack"] = _stack(stderr)
    return record


def _stack(stderr: str) -> list[str]:
    """The innermost frames of the last faulthandler dump in ``stderr``, innermost first."""
    frames = [
        line.strip()
        for line in stderr.splitlines()
        if line.strip().startswith('File "') and " line " in line
    ]
    block: list[str] = []
    for line in reversed(frames):  # the last dump's frames run innermost first, up to <module>
        block.insert(0, line)
        if line.endswith("in <module>") and len(block) > 1:
            break
    return [_short(line) for line in block[:5]]


def _short(frame: str) -> str:
    # 'File "/a/b/c.py", line 12 in f'  ->  'a/b/c.py:12 f' relative to here
    path, _, rest = frame[len('File "') :].partition('", line ')
    number, _, name = rest.partition(" in ")
    return f"{os.path.relpath(path)}:{number} {name}"


def describe(record: dict) -> str:
    """One line: case, call, outcome, time and peak RSS, then the detail."""
    if record["outcome"] == "ok":
        what = f"ok -> {record['result']}"
    elif record["outcome"] == "error":
        kind = "FillPdfError" if record["fillpdf_error"] else "NOT FillPdfError"
        what = f"{record['type']} [{kind}, error_type={record['error_type']}]: {record['message']}"
        if record.get("cause"):
            what += f" | cause {record['cause']}"
        if record.get("frames"):
            what += " | last frames: " + " <- ".join(reversed(record["frames"]))
    else:
        what = record["outcome"]
        if record.get("stack"):
            what += " | stack: " + " <- ".join(record["stack"])
    if "warnings" in record:
        what += f" | {record['warnings']} warnings logged"
    if record.get("then_control", "ok") != "ok":
        what += f" | control afterwards FAILED: {record['then_control']}"
    call_s = f"{record['seconds']:.2f}s in call, " if "seconds" in record else ""
    timing = f"{call_s}{record['wall']:.2f}s wall, peak RSS {record['peak_rss_mb']} MB"
    return f"{record['case']:<26} {record['call']:<9} {timing:<46} {what}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="case names (default: all, control first)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per call")
    parser.add_argument("--memory-gb", type=float, default=2.0, help="RLIMIT_AS per call")
    parser.add_argument("--json", action="store_true", help="print JSON records instead")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "CALL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    names = args.cases or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {list(CASES)}")
    for name in names:
        for call in CALLS:
            record = measure(name, call, timeout=args.timeout, memory_gb=args.memory_gb)
            print(json.dumps(record) if args.json else describe(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
