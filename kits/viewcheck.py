"""Check what a person would see on a filled form, without a viewer's help.

A viewer shows a form field through its widget's appearance stream (``/AP``). These helpers
bake those streams into the page with PDFium's own flattener (which draws *only* existing
appearance streams, never generates one), then read the result back the way a person would:
the characters that land inside a widget's rectangle (pdfplumber) and the dark pixels inside
it (a PDFium render).

Coordinates given to and returned by this module are PDF user space, bottom-left origin,
``(x0, y0, x1, y1)`` as in a widget's ``/Rect``.
"""

from __future__ import annotations

import io
import logging
import os
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pdfplumber
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pdfminer.layout import LTChar, LTContainer, LTFigure
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DictionaryObject, IndirectObject, NameObject

PdfSource = bytes | str | os.PathLike[str]
Rect = tuple[float, float, float, float]

#: Annotation flags that keep a widget off the screen: Hidden (bit 2) and NoView (bit 6).
HIDDEN_ANNOT_FLAGS = (1 << 1) | (1 << 5)
#: Field flags (``/Ff``) of buttons and choices, PDF 32000-1 tables 226 and 230.
FF_READ_ONLY = 1 << 0
FF_RADIO = 1 << 15
FF_PUSHBUTTON = 1 << 16
FF_COMBO = 1 << 17
#: A pixel darker than this (0 = black, 255 = white) counts as ink.
DARK_LEVEL = 128

_MAX_DEPTH = 64


@dataclass(frozen=True)
class Widget:
    """One on-screen widget annotation of a field, read directly from the page's ``/Annots``."""

    name: str
    """Fully qualified name of the field: the ``/T`` values up the ``/Parent`` chain, by "."."""
    page: int
    """0-based page index."""
    rect: Rect
    """The widget's ``/Rect``, normalised so that ``x0 <= x1`` and ``y0 <= y1``."""
    field_type: str
    """``/FT`` (inherited) without the slash: ``Tx``, ``Btn``, ``Ch``, ``Sig`` or ``""``."""
    field_flags: int
    """``/Ff`` (inherited), 0 when absent."""
    on_states: tuple[str, ...]
    """Names of the ``/AP /N`` appearance states other than ``Off`` (buttons), no slash."""
    kid_index: int | None
    """Position of this widget in its field's ``/Kids`` (``None`` if the widget is the field)."""
    opt: tuple[tuple[str, str], ...] | None
    """The field's ``/Opt`` (inherited) as ``(export value, display text)`` pairs."""
    da: str | None
    """Default appearance string (``/DA``), inherited from the field or the ``/AcroForm``."""
    value: str | None = None
    """The field's ``/V`` (inherited): a string, or a name without its slash."""
    format_js: str | None = None
    """The field's format action script (``/AA /F /JS``), e.g. ``AFDate_FormatEx("mm/dd/yyyy")``."""
    on_page: bool = True
    """Whether the rectangle overlaps the page's CropBox (real forms park widgets off-page)."""

    @property
    def is_button(self) -> bool:
        """A checkbox or a radio button (pushbuttons are never listed)."""
        return self.field_type == "Btn"

    @property
    def is_radio(self) -> bool:
        """A kid of a radio button group."""
        return self.is_button and bool(self.field_flags & FF_RADIO)

    @property
    def is_combo(self) -> bool:
        """A choice field shown as a drop-down (combo box) rather than a list box."""
        return self.field_type == "Ch" and bool(self.field_flags & FF_COMBO)

    @property
    def font_size(self) -> float | None:
        """The font size of ``/DA`` (``0`` means auto size), ``None`` when there is none."""
        if not self.da:
            return None
        tokens = self.da.split()
        for i, token in enumerate(tokens):
            if token == "Tf" and i >= 1:
                try:
                    return float(tokens[i - 1])
                except ValueError:
                    return None
        return None


def squash(text: str) -> str:
    """``text`` in Unicode NFC with all whitespace removed: the form values are compared in."""
    return "".join(unicodedata.normalize("NFC", text).split())


def _read(pdf: PdfSource) -> bytes:
    if isinstance(pdf, bytes | bytearray):
        return bytes(pdf)
    with open(pdf, "rb") as handle:
        return handle.read()


def open_pdf(pdf: PdfSource | PdfReader) -> PdfReader:
    """A pypdf reader (decrypted with the empty password if need be), to share between calls."""
    if isinstance(pdf, PdfReader):
        return pdf
    reader = PdfReader(io.BytesIO(_read(pdf)))
    if reader.is_encrypted:
        reader.decrypt("")
    return reader


def _resolve(obj: Any) -> Any:
    return obj.get_object() if isinstance(obj, IndirectObject) else obj


def _chain(annot: DictionaryObject) -> Iterator[DictionaryObject]:
    """The widget, then its parent fields up to the root field (cycle-safe)."""
    node: Any = annot
    seen: set[int] = set()
    for _ in range(_MAX_DEPTH):
        node = _resolve(node)
        if not isinstance(node, DictionaryObject) or id(node) in seen:
            return
        seen.add(id(node))
        yield node
        node = node.get("/Parent")


def _inherited(annot: DictionaryObject, key: str) -> Any:
    for node in _chain(annot):
        if key in node:
            return _resolve(node[key])
    return None


def qualified_name(annot: DictionaryObject) -> str:
    """Fully qualified field name of a widget: ``/T`` up the ``/Parent`` chain, joined by "."."""
    parts = [str(_resolve(node["/T"])) for node in _chain(annot) if "/T" in node]
    return ".".join(reversed(parts))


def _opt_pairs(opt: Any) -> tuple[tuple[str, str], ...] | None:
    if opt is None:
        return None
    pairs = []
    for entry in _resolve(opt):
        entry = _resolve(entry)
        if isinstance(entry, list) and len(entry) >= 2:
            pairs.append((str(_resolve(entry[0])), str(_resolve(entry[1]))))
        else:
            pairs.append((str(entry), str(entry)))
    return tuple(pairs)


def _on_states(annot: DictionaryObject) -> tuple[str, ...]:
    ap = _resolve(annot.get("/AP"))
    normal = _resolve(ap.get("/N")) if isinstance(ap, DictionaryObject) else None
    if not isinstance(normal, DictionaryObject):
        return ()
    return tuple(str(key)[1:] for key in normal if key != "/Off")


def _value_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, NameObject):
        return str(value)[1:]
    if isinstance(value, list):
        return "\n".join(str(_value_text(_resolve(v))) for v in value)
    if isinstance(value, DictionaryObject):  # a signature dictionary
        return None
    return str(value)


def _format_js(actions: Any) -> str | None:
    if not isinstance(actions, DictionaryObject):
        return None
    action = _resolve(actions.get("/F"))
    if not isinstance(action, DictionaryObject) or "/JS" not in action:
        return None
    script = _resolve(action["/JS"])
    if hasattr(script, "get_data"):
        return bytes(script.get_data()).decode("latin-1")
    return str(script)


def _kid_index(annot: DictionaryObject, ref: Any) -> int | None:
    parent = _resolve(annot.get("/Parent"))
    if not isinstance(parent, DictionaryObject) or "/T" in annot:
        return None
    kids = _resolve(parent.get("/Kids")) or []
    for i, kid in enumerate(kids):
        if kid is ref or (
            isinstance(kid, IndirectObject)
            and isinstance(ref, IndirectObject)
            and kid.idnum == ref.idnum
        ):
            return i
        if _resolve(kid) is annot:
            return i
    return None


def visible_widgets(pdf: PdfSource | PdfReader) -> list[Widget]:
    """Every widget a person can see and use, in page order.

    Walks every page's ``/Annots`` for ``/Subtype /Widget``, leaving out widgets flagged
    Hidden or NoView and pushbuttons (``/FT /Btn`` with the pushbutton flag; ``/FT`` and
    ``/Ff`` are inherited through ``/Parent``). Widgets of fields without any name are left out.
    """
    reader = open_pdf(pdf)
    root = _resolve(reader.trailer["/Root"])
    acroform = _resolve(root.get("/AcroForm"))
    form_da = (
        str(_resolve(acroform["/DA"]))
        if isinstance(acroform, DictionaryObject) and "/DA" in acroform
        else None
    )
    widgets: list[Widget] = []
    for page_index, page in enumerate(reader.pages):
        cx0, cy0, cx1, cy1 = (float(v) for v in page.cropbox)
        crop = (min(cx0, cx1), min(cy0, cy1), max(cx0, cx1), max(cy0, cy1))
        for ref in _resolve(page.get("/Annots")) or []:
            annot = _resolve(ref)
            if not isinstance(annot, DictionaryObject) or annot.get("/Subtype") != "/Widget":
                continue
            if int(_resolve(annot.get("/F", 0))) & HIDDEN_ANNOT_FLAGS:
                continue
            field_type = str(_inherited(annot, "/FT") or "")[1:]
            flags = int(_inherited(annot, "/Ff") or 0)
            if field_type == "Btn" and flags & FF_PUSHBUTTON:
                continue
            name = qualified_name(annot)
            if not name:
                continue
            x0, y0, x1, y1 = (float(_resolve(v)) for v in _resolve(annot["/Rect"]))
            rect = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
            da = _inherited(annot, "/DA")
            actions = _inherited(annot, "/AA")
            widgets.append(
                Widget(
                    name=name,
                    page=page_index,
                    rect=rect,
                    field_type=field_type,
                    field_flags=flags,
                    on_states=_on_states(annot) if field_type == "Btn" else (),
                    kid_index=_kid_index(annot, ref),
                    opt=_opt_pairs(_inherited(annot, "/Opt")),
                    da=str(da) if da is not None else form_da,
                    value=_value_text(_inherited(annot, "/V")),
                    format_js=_format_js(actions),
                    on_page=iou(rect, crop) > 0,
                )
            )
    return widgets


def visible_field_names(pdf: PdfSource | PdfReader) -> set[str]:
    """Distinct fully qualified names of the fields that have a visible widget."""
    return {widget.name for widget in visible_widgets(pdf)}


def count_widgets(pdf: PdfSource) -> tuple[bool, int]:
    """``(catalog has /AcroForm, number of widget annotations on all pages)``."""
    reader = open_pdf(pdf)
    has_form = "/AcroForm" in _resolve(reader.trailer["/Root"])
    count = 0
    for page in reader.pages:
        for ref in _resolve(page.get("/Annots")) or []:
            annot = _resolve(ref)
            if isinstance(annot, DictionaryObject) and annot.get("/Subtype") == "/Widget":
                count += 1
    return has_form, count


def _buttons_on(pdf: PdfReader | PdfWriter) -> Iterator[DictionaryObject]:
    for page in pdf.pages:
        for ref in _resolve(page.get("/Annots")) or []:
            annot = _resolve(ref)
            if (
                isinstance(annot, DictionaryObject)
                and annot.get("/Subtype") == "/Widget"
                and _inherited(annot, "/FT") == "/Btn"
                and annot.get("/AS", "/Off") != "/Off"
            ):
                yield annot


def buttons_off(pdf: PdfSource, *, reader: PdfReader | None = None) -> bytes:
    """A copy with every checkbox and radio widget showing its ``Off`` appearance.

    The fair "before" picture for ink comparisons: a form may ship with boxes pre-ticked.
    Returns the input unchanged when no button is on. ``reader``: ``pdf`` already opened.
    """
    reader = reader or open_pdf(pdf)
    if not any(True for _ in _buttons_on(reader)):
        return _read(pdf)
    writer = PdfWriter(clone_from=reader)
    for annot in _buttons_on(writer):
        annot[NameObject("/AS")] = NameObject("/Off")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _same_rect(a: Rect, b: Rect, tolerance: float = 0.5) -> bool:
    return all(abs(p - q) <= tolerance for p, q in zip(a, b, strict=True))


def _remove_annots_except(page: pdfium.PdfPage, keep: Sequence[Rect]) -> None:
    for index in reversed(range(pdfium_c.FPDFPage_GetAnnotCount(page))):
        annot = pdfium_c.FPDFPage_GetAnnot(page, index)
        try:
            box = pdfium_c.FS_RECTF()
            found = pdfium_c.FPDFAnnot_GetRect(annot, box)
            rect = (
                min(box.left, box.right),
                min(box.bottom, box.top),
                max(box.left, box.right),
                max(box.bottom, box.top),
            )
            wanted = found and any(_same_rect(rect, other) for other in keep)
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annot)
        if not wanted and not pdfium_c.FPDFPage_RemoveAnnot(page, index):
            raise RuntimeError(f"PDFium could not remove annotation {index}")


def flatten_with_pdfium(
    pdf: PdfSource,
    *,
    drop_page_content: bool = False,
    keep_only: Mapping[int, Sequence[Rect]] | None = None,
) -> bytes:
    """Bake every annotation's existing normal appearance stream into its page.

    Uses ``FPDFPage_Flatten(page, FLAT_NORMALDISPLAY)``, which draws only appearance streams
    already in the file (a widget without one simply vanishes), and skips Hidden/NoView
    annotations. With ``drop_page_content`` the pages' own content is removed first, so the
    result shows nothing but the annotations' appearances (no printed labels to confuse
    a text check). With ``keep_only`` (page index -> rectangles) every other annotation is
    removed first, e.g. to see checkboxes without the text of overlapping text fields.
    """
    doc = pdfium.PdfDocument(_read(pdf))
    try:
        for index in range(len(doc)):
            page = doc[index]
            try:
                if drop_page_content:
                    for j in reversed(range(pdfium_c.FPDFPage_CountObjects(page))):
                        obj = pdfium_c.FPDFPage_GetObject(page, j)
                        if pdfium_c.FPDFPage_RemoveObject(page, obj):
                            pdfium_c.FPDFPageObj_Destroy(obj)
                    if not pdfium_c.FPDFPage_GenerateContent(page):
                        raise RuntimeError(f"PDFium could not rewrite page {index}")
                if keep_only is not None:
                    _remove_annots_except(page, keep_only.get(index, ()))
                result = pdfium_c.FPDFPage_Flatten(page, pdfium_c.FLAT_NORMALDISPLAY)
                if result == pdfium_c.FLATTEN_FAIL:
                    raise RuntimeError(f"PDFium could not flatten page {index}")
            finally:
                page.close()
        out = io.BytesIO()
        doc.save(out)
        return out.getvalue()
    finally:
        doc.close()


def rects_by_page(widgets: Iterable[Widget]) -> dict[int, list[Rect]]:
    """Widget rectangles per page index, e.g. for ``flatten_with_pdfium(keep_only=...)``."""
    pages: dict[int, list[Rect]] = {}
    for widget in widgets:
        pages.setdefault(widget.page, []).append(widget.rect)
    return pages


def _open_plumber(pdf: PdfSource | pdfplumber.PDF) -> tuple[pdfplumber.PDF, bool]:
    if isinstance(pdf, pdfplumber.PDF):
        return pdf, False
    return pdfplumber.open(io.BytesIO(_read(pdf))), True


def _pdfminer_rect(page: pdfplumber.page.Page, rect: Rect) -> Rect:
    """A user-space rectangle in pdfminer's page coordinates (MediaBox corner at 0, rotated)."""
    mx0, my0, mx1, my1 = (float(v) for v in page.page_obj.mediabox)
    rotation = page.rotation
    if rotation == 90:
        ctm = (0.0, -1.0, 1.0, 0.0, -my0, mx1)
    elif rotation == 180:
        ctm = (-1.0, 0.0, 0.0, -1.0, mx1, my1)
    elif rotation == 270:
        ctm = (0.0, 1.0, -1.0, 0.0, my1, -mx0)
    else:
        ctm = (1.0, 0.0, 0.0, 1.0, -mx0, -my0)
    a, b, c, d, e, f = ctm
    corners = [(x, y) for x in (rect[0], rect[2]) for y in (rect[1], rect[3])]
    points = [(a * x + c * y + e, b * x + d * y + f) for x, y in corners]
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return (min(xs), min(ys), max(xs), max(ys))


def user_rect_to_plumber(page: pdfplumber.page.Page, rect: Rect) -> Rect:
    """A user-space rectangle as pdfplumber ``(x0, top, x1, bottom)`` on ``page``.

    pdfminer moves the origin to the MediaBox corner and applies ``/Rotate``; pdfplumber then
    flips y and shifts by the MediaBox again. This reproduces both steps.
    """
    x0, y0, x1, y1 = _pdfminer_rect(page, rect)
    mb_x0, mb_top = float(page.mediabox[0]), float(page.mediabox[1])
    height = float(page.mediabox[3]) - mb_top
    return (x0 + mb_x0, height - y1 + mb_top, x1 + mb_x0, height - y0 + mb_top)


def _depth(x: float, y: float, box: Rect) -> float:
    """How far the point lies inside ``box`` (negative: outside), in pt."""
    return min(x - box[0], box[2] - x, y - box[1], box[3] - y)


def iou(a: Rect, b: Rect) -> float:
    """Intersection over union of two ``(x0, y0, x1, y1)`` rectangles."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _ltchars(node: LTContainer) -> Iterator[LTChar]:
    for child in node:
        if isinstance(child, LTChar):
            yield child
        elif isinstance(child, LTContainer):
            yield from _ltchars(child)


def _widget_chars(page: pdfplumber.page.Page, rect: Rect) -> list[dict[str, Any]]:
    """The chars drawn by the Form XObject that PDFium's flattener placed on ``rect``.

    ``FPDFPage_Flatten`` draws each widget's appearance as one Form XObject whose box is the
    widget's ``/Rect``; the best-matching figure (IoU >= 0.8) is taken. No match: nothing drawn.
    """
    target = _pdfminer_rect(page, rect)
    best: tuple[float, int, LTFigure | None] = (0.8, -1, None)
    stack: list[tuple[LTContainer, int]] = [(page.layout, 0)]
    while stack:
        node, depth = stack.pop()
        for child in node:
            if isinstance(child, LTFigure):
                score = iou(target, child.bbox)
                if (score, depth) >= best[:2]:
                    best = (score, depth, child)
                stack.append((child, depth + 1))
    if best[2] is None:
        return []
    return [page.process_object(char) for char in _ltchars(best[2])]


def chars_in_rect(
    pdf: PdfSource | pdfplumber.PDF,
    page_index: int,
    rect: Rect,
    *,
    pad: float = 1.0,
    others: Sequence[Rect] = (),
    drawn_by_widget: bool = False,
) -> list[dict[str, Any]]:
    """pdfplumber chars on the page whose centre lies inside ``rect`` grown by ``pad`` pt.

    ``others`` are the rectangles of neighbouring widgets on the page: a char whose centre
    lies deeper inside one of them than inside ``rect`` belongs to that neighbour (widgets
    of real forms overlap) and is left out.

    With ``drawn_by_widget`` (on a ``flatten_with_pdfium`` copy) only the chars drawn by the
    appearance of the widget on ``rect`` count: a neighbour's glyphs that overlap or spill
    into ``rect`` (which a viewer clips to the neighbour's box) are not this widget's text.
    """
    plumber, owned = _open_plumber(pdf)
    try:
        page = plumber.pages[page_index]
        box = user_rect_to_plumber(page, rect)
        near = [user_rect_to_plumber(page, other) for other in others]
        grown = (box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad)
        hits = []
        for char in _widget_chars(page, rect) if drawn_by_widget else page.chars:
            cx = (char["x0"] + char["x1"]) / 2
            cy = (char["top"] + char["bottom"]) / 2
            if _depth(cx, cy, grown) < 0:
                continue
            depth = _depth(cx, cy, box)
            if any(_depth(cx, cy, other) > depth for other in near):
                continue
            hits.append(char)
        return hits
    finally:
        if owned:
            plumber.close()


def text_in_rect(
    pdf: PdfSource | pdfplumber.PDF,
    page_index: int,
    rect: Rect,
    *,
    pad: float = 1.0,
    others: Sequence[Rect] = (),
    drawn_by_widget: bool = False,
) -> str:
    """Text of the chars whose centre is inside ``rect`` (+``pad``), squashed (see ``squash``).

    Chars come in content-stream order, which is drawing order. ``others`` and
    ``drawn_by_widget`` as in ``chars_in_rect``. Pass an open ``pdfplumber.PDF`` to reuse
    its parsed pages across calls.
    """
    chars = chars_in_rect(
        pdf, page_index, rect, pad=pad, others=others, drawn_by_widget=drawn_by_widget
    )
    return squash("".join(str(c["text"]) for c in chars))


class Raster:
    """Grayscale renders of a PDF's pages by PDFium, made on demand and kept for reuse."""

    def __init__(self, pdf: PdfSource, *, scale: float = 2.0) -> None:
        self.scale = scale
        self._doc = pdfium.PdfDocument(_read(pdf))
        self._pages: dict[int, tuple[Any, Any]] = {}

    def page(self, page_index: int) -> tuple[Any, Any]:
        """``(PIL image in mode "L", PdfPosConv)`` of one page, rendered once."""
        if page_index not in self._pages:
            page = self._doc[page_index]
            bitmap = page.render(scale=self.scale, grayscale=True, may_draw_forms=False)
            self._pages[page_index] = (bitmap.to_pil().convert("L"), bitmap.get_posconv(page))
        return self._pages[page_index]

    def ink(self, page_index: int, rect: Rect, *, pad: float = 0.0) -> int:
        """Number of dark pixels inside ``rect`` (+``pad`` pt) on the page's render."""
        image, posconv = self.page(page_index)
        x0, y0, x1, y1 = rect
        corners = [
            posconv.to_bitmap(x, y) for x in (x0 - pad, x1 + pad) for y in (y0 - pad, y1 + pad)
        ]
        left = max(0, min(c[0] for c in corners))
        upper = max(0, min(c[1] for c in corners))
        right = min(image.width, max(c[0] for c in corners))
        lower = min(image.height, max(c[1] for c in corners))
        if right <= left or lower <= upper:
            return 0
        histogram = image.crop((left, upper, right, lower)).histogram()
        return sum(histogram[:DARK_LEVEL])

    def close(self) -> None:
        """Free the PDFium document."""
        self._pages.clear()
        self._doc.close()

    def __enter__(self) -> Raster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ink_in_rect(
    pdf: PdfSource | Raster, page_index: int, rect: Rect, *, scale: float = 2.0, pad: float = 0.0
) -> int:
    """Dark pixels inside ``rect`` on a PDFium render of the page at ``scale``.

    Pass a ``Raster`` to render each page only once across many calls (its own scale wins).
    """
    if isinstance(pdf, Raster):
        return pdf.ink(page_index, rect, pad=pad)
    with Raster(pdf, scale=scale) as raster:
        return raster.ink(page_index, rect, pad=pad)


def widgets_by_name(widgets: Iterable[Widget]) -> dict[str, list[Widget]]:
    """Group widgets by field name, keeping page order."""
    grouped: dict[str, list[Widget]] = {}
    for widget in widgets:
        grouped.setdefault(widget.name, []).append(widget)
    return grouped


def display_text(widgets: Sequence[Widget], export_value: str) -> str:
    """What a choice field shows for ``export_value``: the ``/Opt`` display text, if any."""
    for widget in widgets:
        for export, display in widget.opt or ():
            if export == export_value:
                return display
    return export_value


def quiet_pdf_logs() -> None:
    """Silence pypdf's and pdfminer's warnings about harmless quirks of real-world files."""
    for name in ("pypdf", "pdfminer"):
        logging.getLogger(name).setLevel(logging.ERROR)
