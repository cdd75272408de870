"""``write_preview`` draws every field's box where the page shows it, for a person to review."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfWriter
from pypdf.generic import ArrayObject, FloatObject, NameObject, NumberObject

from fillpdf_provider.engine import FillPdfError, Template
from fillpdf_provider.engine.acroform_writer import write_acroform
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.detect.model import Detected
from fillpdf_provider.engine.preview import COLORS, caption_text, write_preview
from kits import formedit
from kits.flatkit import FlatPage, one_page

SCALE = 1.5
TEXT = Detected("text", 0, (100, 600, 300, 640), "full_name", confidence=0.87)
CHECK = Detected("checkbox", 0, (100, 500, 130, 530), "agree")
RADIO = Detected("radio", 1, (100, 400, 130, 430), "plan", export="Gold")


def with_page_entries(pdf: bytes, entries: dict[str, object]) -> bytes:
    def change(writer: PdfWriter) -> None:
        for key, value in entries.items():
            if isinstance(value, tuple):
                value = ArrayObject(FloatObject(v) for v in value)
            else:
                value = NumberObject(value)
            writer.pages[0][NameObject(key)] = value

    return formedit.edit(pdf, change)


def pixel(path: Path, xy: tuple[float, float]) -> tuple[int, int, int]:
    with Image.open(path) as image:
        return image.convert("RGB").getpixel((round(xy[0]), round(xy[1])))


def left_edge(device: tuple[float, float, float, float]) -> tuple[float, float]:
    """A point on the outline, half way down the box's left side (device pixels)."""
    x0, top, _, bottom = device
    return (x0 + 0.5, (top + bottom) / 2)


@pytest.fixture(scope="module")
def flat() -> bytes:
    return formedit.flat_pdf(pages=2)


def test_one_png_per_page_at_the_scale(flat: bytes, tmp_path: Path) -> None:
    paths = write_preview(flat, [TEXT, CHECK, RADIO], tmp_path, scale=SCALE)
    assert [p.name for p in paths] == ["page-001.png", "page-002.png"]
    for path in paths:
        with Image.open(path) as image:
            assert image.size == (918, 1188)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page-001.png", "page-002.png"]


def test_outline_has_the_colour_of_the_field_type(flat: bytes, tmp_path: Path) -> None:
    page_one, page_two = write_preview(flat, [TEXT, CHECK, RADIO], tmp_path, scale=SCALE)
    for field, path in ((TEXT, page_one), (CHECK, page_one), (RADIO, page_two)):
        x0, y0, x1, y1 = field.rect
        device = (x0 * SCALE, (792 - y1) * SCALE, x1 * SCALE, (792 - y0) * SCALE)
        assert pixel(path, left_edge(device)) == COLORS[field.type], field.name
        assert pixel(path, (device[0] - 6, device[3] + 20)) == (255, 255, 255)
        inside = pixel(path, (device[2] - 4, device[3] - 4))
        assert inside != (255, 255, 255) and inside != COLORS[field.type]


def test_rotated_page_boxes_land_where_the_page_shows_them(flat: bytes, tmp_path: Path) -> None:
    rotated = with_page_entries(flat, {"/Rotate": 90})
    (page, _) = write_preview(rotated, [TEXT], tmp_path, scale=SCALE)
    with Image.open(page) as image:
        assert image.size == (1188, 918)
    x0, y0, x1, y1 = TEXT.rect  # turned clockwise: user y runs right, user x runs down
    device = (y0 * SCALE, x0 * SCALE, y1 * SCALE, x1 * SCALE)
    assert pixel(page, left_edge(device)) == COLORS["text"]


def test_crop_box_away_from_the_origin(flat: bytes, tmp_path: Path) -> None:
    moved = with_page_entries(
        flat, {"/MediaBox": (50, 50, 662, 842), "/CropBox": (60, 70, 600, 800)}
    )
    (page, _) = write_preview(moved, [TEXT], tmp_path, scale=SCALE)
    with Image.open(page) as image:
        assert image.size == (810, 1095)
    x0, y0, x1, y1 = TEXT.rect
    device = ((x0 - 60) * SCALE, (800 - y1) * SCALE, (x1 - 60) * SCALE, (800 - y0) * SCALE)
    assert pixel(page, left_edge(device)) == COLORS["text"]


def test_schema_fields_of_a_converted_form(flat: bytes, tmp_path: Path) -> None:
    converted = write_acroform(flat, [TEXT, CHECK, RADIO])
    fields = Template(converted).fields
    paths = write_preview(converted, fields, tmp_path / "review")
    assert len(paths) == 2
    assert caption_text(fields[0]) == "full_name · text · 1.00"


def test_every_button_of_a_schema_radio_group_is_drawn(flat: bytes, tmp_path: Path) -> None:
    gold = Detected("radio", 1, (200, 400, 230, 430), "plan", export="Platinum")
    converted = write_acroform(flat, [RADIO, gold])
    (group,) = Template(converted).fields
    _, page_two = write_preview(converted, [group], tmp_path, scale=SCALE)
    for button in (RADIO, gold):
        x0, y0, x1, y1 = button.rect
        device = (x0 * SCALE, (792 - y1) * SCALE, x1 * SCALE, (792 - y0) * SCALE)
        assert pixel(page_two, left_edge(device)) == COLORS["radio"], button.export


def test_caption_names_the_radio_option() -> None:
    assert caption_text(RADIO) == "plan=Gold · radio · 0.50"
    assert caption_text(TEXT) == "full_name · text · 0.87"


def test_same_input_gives_the_same_files(flat: bytes, tmp_path: Path) -> None:
    first = [p.read_bytes() for p in write_preview(flat, [TEXT, CHECK], tmp_path / "a")]
    second = [p.read_bytes() for p in write_preview(flat, [TEXT, CHECK], tmp_path / "b")]
    assert first == second


def test_field_on_a_missing_page_is_refused(flat: bytes, tmp_path: Path) -> None:
    with pytest.raises(FillPdfError, match="page 7"):
        write_preview(flat, [Detected("text", 7, (0, 0, 10, 10), "far")], tmp_path)


Pixels = tuple[int, int, int, int]


def device_box(rect: tuple[float, float, float, float]) -> Pixels:
    """A letter page's user-space ``rect`` in preview pixels at ``SCALE``."""
    x0, y0, x1, y1 = rect
    return (
        round(x0 * SCALE),
        round((792 - y1) * SCALE),
        round(x1 * SCALE),
        round((792 - y0) * SCALE),
    )


def caption_runs(path: Path, boxes: list[Pixels], reach: int = 40) -> list[Pixels]:
    """Where radio captions are written within ``reach`` pixels above and below the boxes:
    runs of text in the radio colour outside every box, each glyph joined to the next, as
    pixel rectangles."""
    top = max(0, min(b[1] for b in boxes) - reach)
    bottom = max(b[3] for b in boxes) + reach
    with Image.open(path) as image:
        rgb = image.convert("RGB")
        data = rgb.load()
        assert data is not None
        ink = set()
        for y in range(top, min(bottom, rgb.height)):
            for x in range(rgb.width):
                r, g, b = data[x, y]
                if r - b > 100 and g < 200:
                    ink.add((x, y))
    ink = {
        (x, y)
        for x, y in ink
        if not any(b[0] - 3 <= x <= b[2] + 3 and b[1] - 3 <= y <= b[3] + 3 for b in boxes)
    }
    runs: list[Pixels] = []
    while ink:
        todo = [ink.pop()]
        xs, ys = [todo[0][0]], [todo[0][1]]
        while todo:
            x, y = todo.pop()
            for dx in range(-6, 7):
                for dy in range(-3, 4):
                    if (x + dx, y + dy) in ink:
                        ink.discard((x + dx, y + dy))
                        todo.append((x + dx, y + dy))
                        xs.append(x + dx)
                        ys.append(y + dy)
        runs.append((min(xs), min(ys), max(xs), max(ys)))
    return runs


def nearest(run: Pixels, boxes: list[Pixels]) -> int:
    """Which of ``boxes`` the middle of ``run`` is nearest to."""
    mx, my = (run[0] + run[2]) / 2, (run[1] + run[3]) / 2

    def distance(box: Pixels) -> float:
        dx = max(box[0] - mx, 0, mx - box[2])
        dy = max(box[1] - my, 0, my - box[3])
        return float(dx * dx + dy * dy)

    return min(range(len(boxes)), key=lambda i: distance(boxes[i]))


def test_each_radio_option_is_captioned_beside_its_own_button(tmp_path: Path) -> None:
    """ "( ) Yes  ( ) No" after a question: the yes caption is no wider than the gap to the
    No button, so it must not be written over that button."""
    page = FlatPage()
    page.text(72, 700, "Do you smoke?")
    for x, option in ((300, "Yes"), (350, "No")):
        page.circle(x, 703.5, 5)
        page.text(x + 8, 700, option)
    result = convert(one_page(page))
    (group,) = result.schema
    assert group.type == "radio" and group.widgets is not None
    buttons = [device_box(w.rect) for w in group.widgets]
    (path,) = write_preview(result.pdf, result.schema, tmp_path, scale=SCALE)
    runs = caption_runs(path, buttons)
    assert len(runs) == 2, runs
    assert sorted(nearest(run, buttons) for run in runs) == [0, 1], (runs, buttons)
