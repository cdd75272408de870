"""Pictures of a conversion for a person to review: every page with its fields boxed.

Each page is rendered by PDFium and every field's rectangle is drawn over it in a colour
for its type, captioned ``name · type · confidence``, so a reviewer sees at a glance what
was found, where, and how sure the detector was. Rectangles are in PDF user space; PDFium's
own page-to-device mapping places them, so page ``/Rotate`` and a crop box away from the
origin land the boxes where the page shows them.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import pypdfium2 as pdfium
from PIL import Image, ImageDraw, ImageFont

from fillpdf_provider.engine.detect.model import Detected
from fillpdf_provider.engine.errors import DamagedPdfError, FillPdfError
from fillpdf_provider.engine.files import write_atomic
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.engine.source import PdfInput, read_bytes

COLORS: dict[str, tuple[int, int, int]] = {
    "text": (0, 102, 204),
    "date": (0, 140, 130),
    "checkbox": (40, 150, 40),
    "radio": (220, 110, 0),
    "choice": (140, 60, 170),
    "signature": (210, 30, 40),
}
UNKNOWN_COLOR = (90, 90, 90)
DARK_LEVEL = 200  # darker pixels count as print a caption would hide
TINT_ALPHA = 36  # a light wash inside each box: visible, but the printed form reads through
CAPTION_ALPHA = 150  # captions stay readable, and the print under them too
Box = tuple[int, int, int, int]


def write_preview(
    pdf: PdfInput,
    fields: Sequence[Detected] | Sequence[Field],
    out_dir: Path,
    *,
    scale: float = 1.5,
) -> list[Path]:
    """One PNG per page (``page-001.png`` ...) in ``out_dir`` with ``fields`` drawn over it.

    Files are written through a temporary file and renamed, so a reader never sees half an
    image. Returns the paths in page order.
    """
    data = read_bytes(pdf)
    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise DamagedPdfError(
            "The PDF could not be opened to draw a preview: it is damaged or locked with a "
            "password; re-save it with a PDF editor and try again."
        ) from exc
    try:
        by_page = _by_page(fields, len(doc))
        paths = []
        for index in range(len(doc)):
            image = _page_picture(doc, index, by_page.get(index, []), scale)
            path = Path(out_dir) / f"page-{index + 1:03d}.png"
            paths.append(write_atomic(path, png_bytes(image)))
        return paths
    finally:
        doc.close()


def _by_page(
    fields: Sequence[Detected] | Sequence[Field], pages: int
) -> dict[int, list[Detected | Field]]:
    grouped: dict[int, list[Detected | Field]] = {}
    for item in (drawn for entry in fields for drawn in _buttons(entry)):
        if not 0 <= item.page < pages:
            raise FillPdfError(
                f"{item.name or 'A field'}: page {item.page} is not in the PDF (it has {pages}).",
                param=item.name or None,
            )
        grouped.setdefault(item.page, []).append(item)
    return grouped


def _buttons(item: Detected | Field) -> list[Detected | Field]:
    """A schema's radio group as each of its buttons, so every option shows for review."""
    widgets = getattr(item, "widgets", None)
    if not widgets:
        return [item]
    return [
        Detected(item.type, w.page, w.rect, item.name, confidence=item.confidence, export=w.export)
        for w in widgets
    ]


def _page_picture(
    doc: pdfium.PdfDocument, index: int, fields: list[Detected | Field], scale: float
) -> Image.Image:
    page = doc[index]
    try:
        bitmap = page.render(scale=scale, may_draw_forms=False)
        posconv = bitmap.get_posconv(page)
        boxes = [_device_box(posconv, item.rect) for item in fields]
        image = bitmap.to_pil().convert("RGB")
    finally:
        page.close()
    return _draw(image, list(zip(fields, boxes, strict=True)), scale)


def _device_box(posconv: pdfium.PdfPosConv, rect: Sequence[float]) -> Box:
    """A user-space rectangle in bitmap pixels (top-left origin), whatever the rotation."""
    x0, y0, x1, y1 = (float(v) for v in rect)
    corners = [posconv.to_bitmap(x, y) for x in (x0, x1) for y in (y0, y1)]
    xs = [c[0] for c in corners]
    ys = [c[1] for c in corners]
    return (min(xs), min(ys), max(xs), max(ys))


def _draw(
    image: Image.Image, placed: list[tuple[Detected | Field, Box]], scale: float
) -> Image.Image:
    """Wash, outline and caption every box; captions last so no outline crosses one."""
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    width = max(1, round(scale))
    for item, box in placed:
        color = COLORS.get(item.type, UNKNOWN_COLOR)
        draw.rectangle(box, fill=(*color, TINT_ALPHA))
        draw.rectangle(box, outline=(*color, 255), width=width)
    font = _font(max(8, round(6.5 * scale)))
    boxes = [box for _, box in placed]
    gray = image.convert("L")
    taken: list[Box] = []
    for item, box in placed:
        text = caption_text(item)
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        size = (int(right - left) + 4, int(bottom - top) + 2)  # whole pixels, as drawn
        spot = _caption_spot(box, size, width, gray, boxes, taken)
        taken.append(spot)
        color = COLORS.get(item.type, UNKNOWN_COLOR)
        draw.rectangle(spot, fill=(255, 255, 255, CAPTION_ALPHA))
        draw.text((spot[0] + 2 - left, spot[1] + 1 - top), text, font=font, fill=(*color, 255))
    return Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB")


def caption_text(item: Detected | Field) -> str:
    """``name · type · 0.87``; a radio button names its option too (``name=option``)."""
    export = getattr(item, "export", None)
    label = f"{item.name}={export}" if export else item.name or "?"
    return f"{label} · {item.type} · {item.confidence:.2f}"


def _caption_spot(
    box: Box,
    size: tuple[int, int],
    border: int,
    page: Image.Image,
    boxes: list[Box],
    taken: list[Box],
) -> Box:
    """Where a caption hides the least: inside its box if it fits, else beside it.

    Printed labels sit next to their boxes, and a reviewer needs to read them, so among
    the places clear of other fields and captions the one over the least ink wins. A
    caption must read as its own box's: one whose middle is nearer another box (a radio
    option's caption running over the next option's box) is a last resort.
    """
    spots = _caption_spots(box, size, border, page)
    neighbours = [b for b in boxes if b != box]
    others = neighbours + taken
    clear = [s for s in spots if not any(_intersects(s, other) for other in others)]
    own = [s for s in clear if _nearest_is_own(s, box, neighbours)]
    pool = own or clear or spots
    if pool:
        return min(pool, key=lambda s: (_ink(page, s), pool.index(s)))
    w, h = size
    x = min(max(0, box[0]), max(0, page.width - w))
    y = min(max(0, box[1] - h - 1), max(0, page.height - h))
    return (x, y, x + w - 1, y + h - 1)


def _caption_spots(box: Box, size: tuple[int, int], border: int, page: Image.Image) -> list[Box]:
    """The places a caption may go, best first, that lie on the page: inside the box when it
    fits there, above it, below it, right of it, left of it, then above and below it ending
    at its right edge (a caption wider than a small box runs away from the box after it)."""
    w, h = size
    x0, y0, x1, y1 = box
    candidates = [(x0, y0 - h - 1), (x0, y1 + 2), (x1 + 3, y0), (x0 - w - 3, y0)]
    candidates += [(x1 - w + 1, y0 - h - 1), (x1 - w + 1, y1 + 2)]
    if x1 - x0 - 2 * border - 2 >= w and y1 - y0 - 2 * border - 2 >= h:
        candidates.insert(0, (x0 + border + 1, y0 + border + 1))
    spots = [(x, y, x + w - 1, y + h - 1) for x, y in candidates]
    return [
        s for s in spots if s[0] >= 0 and s[1] >= 0 and s[2] < page.width and s[3] < page.height
    ]


def _ink(page: Image.Image, spot: Box) -> int:
    """Dark pixels of the rendered page (mode ``L``) under ``spot``."""
    histogram = page.crop((spot[0], spot[1], spot[2] + 1, spot[3] + 1)).histogram()
    return sum(histogram[:DARK_LEVEL])


def _nearest_is_own(spot: Box, box: Box, neighbours: list[Box]) -> bool:
    """Whether the middle of ``spot`` is no nearer any of ``neighbours`` than ``box``."""
    middle = ((spot[0] + spot[2]) / 2, (spot[1] + spot[3]) / 2)
    mine = _distance(middle, box)
    return all(mine <= _distance(middle, other) for other in neighbours)


def _distance(point: tuple[float, float], box: Box) -> float:
    """From ``point`` to the nearest point of ``box`` (0 inside it)."""
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return float((dx * dx + dy * dy) ** 0.5)


def _intersects(a: Box, b: Box) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


@cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def png_bytes(image: Image.Image) -> bytes:
    """``image`` as PNG bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
