"""The fast reader: the same page geometry as ``page.read_page``, read through PDFium.

PDFium parses content streams in C, several times faster than pdfminer, so ``fields_fast``
reads chars and paths here and skips pdfplumber altogether. Coordinates follow the same
top-down convention (``top = mediabox top - y``), unrotated.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Iterator

import pypdfium2 as pdfium
import pypdfium2.raw as raw

from fillpdf_provider.engine.detect.model import Rect
from fillpdf_provider.engine.detect.page import (
    Box,
    Char,
    PageGeometry,
    Point,
    Segment,
    ToPdf,
    is_square,
    merge_segments,
    read_chars,
)

_MAX_SEGMENTS = 200_000


def read_pdfium_pages(
    pdf: bytes, max_pages: int | None = None
) -> Iterator[tuple[int, PageGeometry, ToPdf]]:
    document = pdfium.PdfDocument(pdf)
    try:
        for index in range(len(document)):
            if max_pages is not None and index >= max_pages:
                break
            page = document[index]
            try:
                yield index, *_read(page)
            finally:
                page.close()
    finally:
        document.close()


class _View:
    """PDF user space <-> the page as a viewer shows it (rotated, top-down), like pdfplumber."""

    def __init__(self, page: pdfium.PdfPage) -> None:
        self.x0, self.y0, self.x1, self.y1 = (float(v) for v in page.get_mediabox())
        self.rotation = int(page.get_rotation() or 0) % 360

    @property
    def size(self) -> tuple[float, float]:
        width, height = self.x1 - self.x0, self.y1 - self.y0
        return (height, width) if self.rotation in (90, 270) else (width, height)

    def point(self, x: float, y: float) -> tuple[float, float]:
        r = self.rotation
        if r == 90:
            return y - self.y0, x - self.x0
        if r == 180:
            return self.x1 - x, y - self.y0
        if r == 270:
            return self.y1 - y, self.x1 - x
        return x - self.x0, self.y1 - y

    def box(self, x0: float, y0: float, x1: float, y1: float) -> tuple[float, float, float, float]:
        ax, at = self.point(x0, y0)
        bx, bt = self.point(x1, y1)
        return (min(ax, bx), min(at, bt), max(ax, bx), max(at, bt))

    def to_pdf(self, box: tuple[float, float, float, float]) -> Rect:
        def back(vx: float, vt: float) -> tuple[float, float]:
            r = self.rotation
            if r == 90:
                return vt + self.x0, vx + self.y0
            if r == 180:
                return self.x1 - vx, vt + self.y0
            if r == 270:
                return self.x1 - vt, self.y1 - vx
            return vx + self.x0, self.y1 - vt

        ax, ay = back(box[0], box[1])
        bx, by = back(box[2], box[3])
        return (min(ax, bx), min(ay, by), max(ax, bx), max(ay, by))


def read_pdfium_page(pdf: bytes, index: int) -> tuple[PageGeometry, ToPdf]:
    """One page's geometry through PDFium (for pages too busy for pdfminer)."""
    document = pdfium.PdfDocument(pdf)
    try:
        page = document[index]
        try:
            return _read(page)
        finally:
            page.close()
    finally:
        document.close()


def _read(page: pdfium.PdfPage) -> tuple[PageGeometry, ToPdf]:
    view = _View(page)
    geo = PageGeometry(*view.size)
    _chars(page, geo, view)
    budget = [_MAX_SEGMENTS]
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=3):
        _path(obj, geo, view, budget)
        if budget[0] <= 0:
            break
    geo.horizontal = merge_segments(geo.horizontal)
    geo.vertical = merge_segments(geo.vertical)
    return geo, view.to_pdf


def _chars(page: pdfium.PdfPage, geo: PageGeometry, view: _View) -> None:
    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        text = textpage.get_text_range(0, count) if count else ""
        handle = textpage.raw
        left, right, bottom, top = (ctypes.c_double() for _ in range(4))
        ox, oy = ctypes.c_double(), ctypes.c_double()
        chars: list[Char] = []
        for i in range(min(count, len(text))):
            if not raw.FPDFText_GetCharBox(handle, i, left, right, bottom, top):
                continue
            size = raw.FPDFText_GetFontSize(handle, i) or 8.0
            x0, _, x1, _ = view.box(left.value, bottom.value, right.value, top.value)
            # Lines are grouped by baseline: glyph boxes of g, y, p hang lower than the rest.
            if raw.FPDFText_GetCharOrigin(handle, i, ox, oy):
                _, baseline = view.point(ox.value, oy.value)
            else:
                baseline = view.box(left.value, bottom.value, right.value, top.value)[3]
            chars.append(
                {
                    "text": text[i],
                    "x0": x0,
                    "x1": x1,
                    "top": baseline - 0.8 * size,
                    "bottom": baseline + 0.2 * size,
                    "size": size,
                    "fontname": "",
                }
            )
        read_chars(geo, chars)
    finally:
        textpage.close()


def _path(obj: pdfium.PdfObject, geo: PageGeometry, view: _View, budget: list[int]) -> None:
    handle = obj.raw
    count = raw.FPDFPath_CountSegments(handle)
    if count <= 0:
        return
    budget[0] -= count
    solid = _shading(obj, geo, view)
    matrix = raw.FS_MATRIX()
    if not raw.FPDFPageObj_GetMatrix(handle, matrix):
        matrix = raw.FS_MATRIX(1, 0, 0, 1, 0, 0)
    a, b, c, d, e, f = matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f
    x, y = ctypes.c_float(), ctypes.c_float()
    subpath: list[tuple[float, float]] = []
    curved = False
    for i in range(count):
        segment = raw.FPDFPath_GetPathSegment(handle, i)
        raw.FPDFPathSegment_GetPoint(segment, x, y)
        px, py = view.point(a * x.value + c * y.value + e, b * x.value + d * y.value + f)
        kind = raw.FPDFPathSegment_GetType(segment)
        if kind == raw.FPDF_SEGMENT_MOVETO:
            _subpath(subpath, curved, geo, solid)
            subpath, curved = [(px, py)], False
        else:
            curved = curved or kind == raw.FPDF_SEGMENT_BEZIERTO
            subpath.append((px, py))
        if raw.FPDFPathSegment_GetClose(segment) and subpath:
            subpath.append(subpath[0])
    _subpath(subpath, curved, geo, solid)


def _shading(obj: pdfium.PdfObject, geo: PageGeometry, view: _View) -> bool:
    """Record a filled area, tinted or not, in drawing order, as ``page.read_page`` does.

    Returns whether the path is filled with ink and not outlined (bullets, outlined glyphs).
    """
    handle = obj.raw
    fill_mode, stroke = ctypes.c_int(), ctypes.c_int()
    if not raw.FPDFPath_GetDrawMode(handle, fill_mode, stroke) or fill_mode.value == 0:
        return False
    left, bottom, right, top = obj.get_bounds()
    box = view.box(left, bottom, right, top)
    plain, alpha, level = _fill_colour(handle)
    area = (box[2] - box[0]) * (box[3] - box[1])
    if 4.0 < area < 0.2 * geo.width * geo.height and (not plain or alpha > 0):
        geo.fills.append((box, not plain or level < 0.97))  # no plain colour: a pattern
    return bool(not stroke.value and plain and alpha > 0 and level < 0.9)


def _fill_colour(handle: object) -> tuple[bool, int, float]:
    """Whether a path has a plain fill colour, its alpha, and its lightness from 0 to 1.

    A fill without a plain colour (a pattern or a shading) reads as dark (level 0).
    """
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    plain = bool(raw.FPDFPageObj_GetFillColor(handle, r, g, b, a))
    level = (0.3 * r.value + 0.59 * g.value + 0.11 * b.value) / 255 if plain else 0.0
    return plain, a.value, level


def _subpath(points: list[Point], curved: bool, geo: PageGeometry, solid: bool) -> None:
    """One subpath, its points already in viewer space (x right, top down)."""
    if len(points) < 2:
        return
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    box = (min(xs), min(ys), max(xs), max(ys))
    if curved:
        _curved_subpath(box, geo, solid)
        return
    if _is_rectangle(points):
        _rectangle(box, geo, solid)
    _straight_pieces(points, geo)


def _curved_subpath(box: Box, geo: PageGeometry, solid: bool) -> None:
    """A curved subpath of tick-box size is a circle to choose; a flat one, a rule."""
    width, height = box[2] - box[0], box[3] - box[1]
    if is_square(width, height, 3.0, 18.0) and not solid:
        geo.circles.append(box)
    elif height <= 2.0 and width >= 2.0:
        geo.horizontal.append(Segment(box[0], box[2], (box[1] + box[3]) / 2))


def _is_rectangle(points: list[Point]) -> bool:
    """Whether straight points make an upright rectangle: four corners on two x and two y."""
    corners = {(round(p[0], 1), round(p[1], 1)) for p in points}
    return (
        len(corners) == 4
        and len({c[0] for c in corners}) == 2
        and len({c[1] for c in corners}) == 2
    )


def _rectangle(box: Box, geo: PageGeometry, solid: bool) -> None:
    """A drawn rectangle: a box to tick when it is small and square, else a box to write in."""
    width, height = box[2] - box[0], box[3] - box[1]
    if is_square(width, height) and not solid:
        geo.squares.append(box)
    elif width > 2 and height > 2:
        geo.rect_boxes.append(box)


def _straight_pieces(points: list[Point], geo: PageGeometry) -> None:
    """Each straight piece as a rule (level or upright) or a hatch mark (slanted)."""
    for (ax, ay), (bx, by) in itertools.pairwise(points):
        if abs(ay - by) <= 1.0 and abs(ax - bx) >= 2.0:
            geo.horizontal.append(Segment(min(ax, bx), max(ax, bx), (ay + by) / 2))
        elif abs(ax - bx) <= 1.0 and abs(ay - by) >= 2.0:
            geo.vertical.append(Segment(min(ay, by), max(ay, by), (ax + bx) / 2))
        elif abs(ax - bx) > 2.0 and abs(ay - by) > 2.0:
            geo.hatches.append(((ax + bx) / 2, (ay + by) / 2))
