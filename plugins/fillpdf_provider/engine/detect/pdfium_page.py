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
    PageGeometry,
    Segment,
    _is_square,
    _merge,
    _read_chars,
)

_MAX_SEGMENTS = 200_000


def read_pdfium_pages(
    pdf: bytes, max_pages: int | None = None
) -> Iterator[tuple[int, PageGeometry, object]]:
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


def _read(page: pdfium.PdfPage) -> tuple[PageGeometry, object]:
    x0, y0, x1, y1 = page.get_mediabox()
    geo = PageGeometry(float(x1 - x0), float(y1 - y0))
    _chars(page, geo, y1)
    budget = [_MAX_SEGMENTS]
    for obj in page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=3):
        _path(obj, geo, y1, budget)
        if budget[0] <= 0:
            break
    geo.horizontal = _merge(geo.horizontal)
    geo.vertical = _merge(geo.vertical)

    def to_pdf(box: tuple[float, float, float, float]) -> Rect:
        return (box[0], y1 - box[3], box[2], y1 - box[1])

    return geo, to_pdf


def _chars(page: pdfium.PdfPage, geo: PageGeometry, top_y: float) -> None:
    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        text = textpage.get_text_range(0, count) if count else ""
        handle = textpage.raw
        left, right, bottom, top = (ctypes.c_double() for _ in range(4))
        chars = []
        for i in range(min(count, len(text))):
            if not raw.FPDFText_GetCharBox(handle, i, left, right, bottom, top):
                continue
            size = raw.FPDFText_GetFontSize(handle, i) or 8.0
            chars.append(
                {
                    "text": text[i],
                    "x0": left.value,
                    "x1": right.value,
                    "top": top_y - top.value,
                    "bottom": top_y - bottom.value,
                    "size": size,
                    "fontname": "",
                }
            )
        _read_chars(geo, chars)
    finally:
        textpage.close()


def _path(obj: pdfium.PdfObject, geo: PageGeometry, top_y: float, budget: list[int]) -> None:
    handle = obj.raw
    count = raw.FPDFPath_CountSegments(handle)
    if count <= 0:
        return
    budget[0] -= count
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
        px, py = a * x.value + c * y.value + e, b * x.value + d * y.value + f
        kind = raw.FPDFPathSegment_GetType(segment)
        if kind == raw.FPDF_SEGMENT_MOVETO:
            _subpath(subpath, curved, geo, top_y)
            subpath, curved = [(px, py)], False
        else:
            curved = curved or kind == raw.FPDF_SEGMENT_BEZIERTO
            subpath.append((px, py))
        if raw.FPDFPathSegment_GetClose(segment) and subpath:
            subpath.append(subpath[0])
    _subpath(subpath, curved, geo, top_y)


def _subpath(
    points: list[tuple[float, float]], curved: bool, geo: PageGeometry, top_y: float
) -> None:
    if len(points) < 2:
        return
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    box = (min(xs), top_y - max(ys), max(xs), top_y - min(ys))
    width, height = box[2] - box[0], box[3] - box[1]
    if curved:
        if _is_square(width, height, 3.0, 18.0):
            geo.circles.append(box)
        elif height <= 2.0 and width >= 2.0:
            geo.horizontal.append(Segment(box[0], box[2], (box[1] + box[3]) / 2))
        return
    corners = {(round(p[0], 1), round(p[1], 1)) for p in points}
    if (
        len(corners) == 4
        and len({c[0] for c in corners}) == 2
        and len({c[1] for c in corners}) == 2
    ):
        if _is_square(width, height):
            geo.squares.append(box)
        elif width > 2 and height > 2:
            geo.rect_boxes.append(box)
    for (ax, ay), (bx, by) in itertools.pairwise(points):
        if abs(ay - by) <= 1.0 and abs(ax - bx) >= 2.0:
            geo.horizontal.append(Segment(min(ax, bx), max(ax, bx), top_y - (ay + by) / 2))
        elif abs(ax - bx) <= 1.0 and abs(ay - by) >= 2.0:
            geo.vertical.append(Segment(top_y - max(ay, by), top_y - min(ay, by), (ax + bx) / 2))
