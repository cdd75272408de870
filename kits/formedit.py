"""Small edits of formkit's forms and readers of filled outputs, for the engine's tests.

formkit builds the forms; these helpers bend them into the shapes real forms take (attributes
inherited from a parent, a stale ``/NeedAppearances``, an xref stream, a link annotation) and
read an engine output back the way pypdf and PDFium see it. None of them uses the engine.
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Callable
from typing import Any

import pdfplumber
import pypdfium2 as pdfium
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DictionaryObject,
    IndirectObject,
    NameObject,
    NumberObject,
    StreamObject,
    TextStringObject,
)

from kits.viewcheck import qualified_name

Rect = tuple[float, float, float, float]


# --------------------------------------------------------------------------- editing


def edit(pdf: bytes, change: Callable[[PdfWriter], None]) -> bytes:
    """``pdf`` rewritten by pypdf after ``change`` has modified the writer."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    change(writer)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def widgets(doc: PdfReader | PdfWriter) -> dict[str, list[DictionaryObject]]:
    """Widget annotations of every page, by the qualified name of their field."""
    found: dict[str, list[DictionaryObject]] = {}
    for page in doc.pages:
        for ref in page.get("/Annots", ArrayObject()) or []:
            annot = ref.get_object()
            if annot.get("/Subtype") == "/Widget":
                found.setdefault(qualified_name(annot), []).append(annot)
    return found


def field_of(widget: DictionaryObject) -> DictionaryObject:
    """The field dictionary of a widget: itself when merged, else its parent."""
    return widget if "/T" in widget else widget["/Parent"].get_object()


def hoist(pdf: bytes, name: str, keys: tuple[str, ...], levels: int = 1) -> bytes:
    """Move ``keys`` of field ``name`` up ``levels`` ancestors, where children inherit them."""

    def change(writer: PdfWriter) -> None:
        terminal = field_of(widgets(writer)[name][0])
        ancestor = terminal
        for _ in range(levels):
            ancestor = ancestor["/Parent"].get_object()
        for key in keys:
            if key in terminal:
                ancestor[NameObject(key)] = terminal[key]
                del terminal[key]

    return edit(pdf, change)


def set_entries(pdf: bytes, name: str, entries: dict[str, Any], *, on_field: bool = True) -> bytes:
    """Set (or, with a None value, remove) entries of a field (or of its first widget)."""

    def change(writer: PdfWriter) -> None:
        widget = widgets(writer)[name][0]
        target = field_of(widget) if on_field else widget
        for key, value in entries.items():
            if value is None:
                if key in target:
                    del target[key]
            else:
                target[NameObject(key)] = value

    return edit(pdf, change)


def set_acroform(pdf: bytes, entries: dict[str, Any]) -> bytes:
    """Set (or, with a None value, remove) entries of the ``/AcroForm`` dictionary."""

    def change(writer: PdfWriter) -> None:
        acroform = writer.root_object["/AcroForm"].get_object()
        for key, value in entries.items():
            if value is None:
                if key in acroform:
                    del acroform[key]
            else:
                acroform[NameObject(key)] = value

    return edit(pdf, change)


def add_date_script(pdf: bytes, name: str, af_format: str) -> bytes:
    """Give a text field Acrobat's date format and keystroke scripts."""

    def action(script: str) -> DictionaryObject:
        return DictionaryObject(
            {
                NameObject("/S"): NameObject("/JavaScript"),
                NameObject("/JS"): TextStringObject(script),
            }
        )

    actions = DictionaryObject(
        {
            NameObject("/F"): action(f'AFDate_FormatEx("{af_format}");'),
            NameObject("/K"): action(f'AFDate_KeystrokeEx("{af_format}");'),
        }
    )
    return set_entries(pdf, name, {"/AA": actions})


def add_link(pdf: bytes, rect: Rect, uri: str = "https://example.com/", page: int = 0) -> bytes:
    """Add a ``/Link`` annotation (not a widget) to a page's ``/Annots``."""

    def change(writer: PdfWriter) -> None:
        link = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Annot"),
                NameObject("/Subtype"): NameObject("/Link"),
                NameObject("/Rect"): ArrayObject(NumberObject(int(v)) for v in rect),
                NameObject("/Border"): ArrayObject([NumberObject(0)] * 3),
                NameObject("/A"): DictionaryObject(
                    {
                        NameObject("/S"): NameObject("/URI"),
                        NameObject("/URI"): TextStringObject(uri),
                    }
                ),
            }
        )
        target = writer.pages[page]
        if "/Annots" not in target:
            target[NameObject("/Annots")] = ArrayObject()
        target["/Annots"].append(writer._add_object(link))

    return edit(pdf, change)


def split_widget(pdf: bytes, name: str, second: Rect) -> bytes:
    """Turn a one-widget text field into a field with two widgets (kids without ``/T``)."""

    def change(writer: PdfWriter) -> None:
        merged = widgets(writer)[name][0]
        page = merged["/P"]
        field_keys = ("/FT", "/Ff", "/DA", "/Q", "/MaxLen", "/T", "/V", "/Parent")
        parent = DictionaryObject({NameObject(k): merged[k] for k in field_keys if k in merged})
        parent_ref = writer._add_object(parent)
        kids = ArrayObject()
        for rect in (None, second):
            kid = DictionaryObject(
                {NameObject(k): v for k, v in merged.items() if k not in field_keys}
            )
            if rect is not None:
                kid[NameObject("/Rect")] = ArrayObject(NumberObject(int(v)) for v in rect)
            kid[NameObject("/Parent")] = parent_ref
            kids.append(writer._add_object(kid))
        parent[NameObject("/Kids")] = kids
        annots = page.get_object()["/Annots"]
        old = next(i for i, a in enumerate(annots) if a.get_object() is merged)
        annots[old : old + 1] = kids
        fields = writer.root_object["/AcroForm"]["/Fields"]
        for i, ref in enumerate(fields):
            if ref.get_object() is merged:
                fields[i] = parent_ref

    return edit(pdf, change)


def to_xref_stream(pdf: bytes) -> bytes:
    """``pdf`` with its cross-reference table and trailer replaced by an xref stream.

    Objects keep their offsets; only the tail changes, as in files written by Acrobat.
    """
    reader = PdfReader(io.BytesIO(pdf))
    offsets = {num: off for table in reader.xref.values() for num, off in table.items()}
    start = int(re.findall(rb"startxref\s+(\d+)", pdf)[-1])
    body = pdf[:start]
    own = max(offsets) + 1
    offsets[own] = len(body)
    rows = b"\x00\x00\x00\x00\xff\xff"
    for number in range(1, own + 1):
        offset = offsets.get(number)
        rows += b"\x01" + offset.to_bytes(4, "big") + b"\x00" if offset is not None else b"\0" * 6
    data = zlib.compress(rows)
    root = reader.trailer.raw_get("/Root")
    head = b"%d 0 obj\n<</Type/XRef/Size %d/W[1 4 1]/Root %d %d R/Filter/FlateDecode/Length %d>>"
    obj = (
        head % (own, own + 1, root.idnum, root.generation, len(data))
        + b"\nstream\n"
        + data
        + b"\nendstream\nendobj\n"
    )
    return body + obj + b"startxref\n%d\n%%%%EOF\n" % len(body)


def flat_pdf(pages: int = 1) -> bytes:
    """A PDF with text on its pages and no form at all."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(612, 792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --------------------------------------------------------------------------- reading


def reader(data: bytes, *, strict: bool = False) -> PdfReader:
    return PdfReader(io.BytesIO(data), strict=strict)


def stored_values(data: bytes) -> dict[str, Any]:
    """``/V`` of every field with a widget on a page (inherited, as viewers read it).

    Read from pypdf's objects directly: its ``get_fields`` refuses radio kids without ``/AP``.
    """
    values: dict[str, Any] = {}
    for name, own in widgets(reader(data)).items():
        node: Any = own[0]
        while node is not None and "/V" not in node:
            parent = node.get("/Parent")
            node = parent.get_object() if parent is not None else None
        values[name] = node["/V"] if node is not None else None
    return values


def states(data: bytes, name: str) -> list[str]:
    """``/AS`` of each widget of field ``name``, in page order, without the slash."""
    return [str(w.get("/AS", "/Off"))[1:] for w in widgets(reader(data))[name]]


def acroform(data: bytes) -> DictionaryObject | None:
    root = reader(data).trailer["/Root"]
    form = root.get("/AcroForm")
    return form.get_object() if form is not None else None


def _normal_streams(widget: DictionaryObject) -> list[StreamObject]:
    ap = widget.get("/AP")
    normal = ap.get_object().get("/N") if ap is not None else None
    normal = normal.get_object() if normal is not None else None
    if isinstance(normal, StreamObject):
        return [normal]
    if isinstance(normal, DictionaryObject):
        return [v.get_object() for v in normal.values()]
    return []


def embedded_font_files(data: bytes) -> set[int]:
    """Object numbers of the ``/FontFile2`` streams reachable from the widgets' ``/AP /N``."""
    found: set[int] = set()
    for own in widgets(reader(data)).values():
        for widget in own:
            for stream in _normal_streams(widget):
                resources = stream.get("/Resources")
                resources = resources.get_object() if resources is not None else {}
                font_dict = resources.get("/Font")
                font_dict = font_dict.get_object() if font_dict is not None else {}
                for font in font_dict.values():
                    found |= _font_files(font.get_object())
    return found


def _font_files(font: DictionaryObject) -> set[int]:
    fonts = [font]
    if font.get("/Subtype") == "/Type0":
        fonts = [d.get_object() for d in font["/DescendantFonts"]]
    numbers = set()
    for item in fonts:
        descriptor = item.get("/FontDescriptor")
        if descriptor is None:
            continue
        raw = descriptor.get_object().raw_get("/FontFile2")
        if isinstance(raw, IndirectObject):
            numbers.add(raw.idnum)
    return numbers


def page_chars(pdf: bytes, page: int = 0) -> list[dict[str, Any]]:
    """pdfplumber's chars of a page, with ``y0``/``y1`` in PDF user space (unrotated page)."""
    with pdfplumber.open(io.BytesIO(pdf)) as doc:
        return list(doc.pages[page].chars)


class Render:
    """An RGB render of one page by PDFium, read back at user-space points."""

    def __init__(self, pdf: bytes, page: int = 0, scale: float = 3.0) -> None:
        doc = pdfium.PdfDocument(pdf)
        try:
            handle = doc[page]
            self.left, self.bottom, _, self.top = handle.get_mediabox()
            self.image = handle.render(scale=scale, may_draw_forms=False).to_pil().convert("RGB")
        finally:
            doc.close()
        self.scale = scale

    def rgb(self, x: float, y: float) -> tuple[int, int, int]:
        """The colour at user-space point ``(x, y)`` of an unrotated page."""
        px = int((x - self.left) * self.scale)
        py = int((self.top - y) * self.scale)
        return self.image.getpixel((px, py))
