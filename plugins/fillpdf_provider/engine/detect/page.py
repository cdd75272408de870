"""A page reduced to what field detection reads: text lines, ruling segments and small shapes.

Coordinates are pdfplumber's: x to the right, ``top`` down from the top of the page. Work is
linear or sorted-sweep in the number of objects, because a page of a tax form carries
thousands of them and detection must cost less than extracting them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

Box = tuple[float, float, float, float]  # x0, top, x1, bottom

#: Characters drawn as empty boxes or circles in forms.
BOX_GLYPHS = frozenset("☐□❑❒◻▢⬜❏")
CIRCLE_GLYPHS = frozenset("○◯◦❍")
_SYMBOL_FONTS = ("dingbat", "wingding", "symbol")
_MARK_FONTS = ("dingbat", "wingding", "webding", "symbol", "zapf")
_SYMBOL_BOX_CODES = frozenset("nopqr¨\uf06f\uf070\uf071\uf072\uf0a8\uf06e")


@dataclass
class Word:
    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float


@dataclass
class Line:
    """Words on one baseline, left to right."""

    words: list[Word]

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def x1(self) -> float:
        return self.words[-1].x1

    @property
    def top(self) -> float:
        return min(w.top for w in self.words)

    @property
    def bottom(self) -> float:
        return max(w.bottom for w in self.words)


@dataclass
class Segment:
    """A horizontal (``y`` fixed) or vertical (``x`` fixed) ruling."""

    a: float  # start along the segment
    b: float  # end along the segment
    at: float  # the fixed coordinate


@dataclass
class PageGeometry:
    width: float
    height: float
    words: list[Word] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    horizontal: list[Segment] = field(default_factory=list)
    vertical: list[Segment] = field(default_factory=list)
    squares: list[Box] = field(default_factory=list)
    circles: list[Box] = field(default_factory=list)
    glyph_boxes: list[tuple[Box, str]] = field(default_factory=list)  # (box, "square"|"circle")
    underscores: list[tuple[Box, float]] = field(default_factory=list)  # runs of "_", font size
    rect_boxes: list[Box] = field(default_factory=list)  # stroked rectangles of field size
    # Filled areas in drawing order: (box, tinted). A tinted area is not for writing unless
    # something white is painted over it later.
    fills: list[tuple[Box, bool]] = field(default_factory=list)
    hatches: list[tuple[float, float]] = field(default_factory=list)  # midpoints of slanted lines
    char_boxes: list[Box] = field(default_factory=list)
    # Single characters of symbol fonts (Webdings, Wingdings, ZapfDingbats...): many forms
    # print their tick boxes that way, with codes that differ from font to font.
    symbol_marks: list[Box] = field(default_factory=list)
    dot_runs: list[tuple[Box, float]] = field(default_factory=list)  # dot leaders, font size

    @property
    def object_count(self) -> int:
        return len(self.char_boxes) + len(self.horizontal) + len(self.vertical)


def _is_square(w: float, h: float, lo: float = 4.0, hi: float = 18.0) -> bool:
    return lo <= w <= hi and lo <= h <= hi and abs(w - h) <= 0.25 * max(w, h)


def read_page(page: object, max_objects: int = 60_000) -> PageGeometry:
    """Collect what detection needs from a pdfplumber page (bounded by ``max_objects``)."""
    geo = PageGeometry(float(page.width), float(page.height))  # type: ignore[attr-defined]
    chars = page.chars[:max_objects]  # type: ignore[attr-defined]
    _read_chars(geo, chars)
    for obj in page.lines[:max_objects]:  # type: ignore[attr-defined]
        _add_segment(geo, obj["x0"], obj["top"], obj["x1"], obj["bottom"])
    for obj in page.rects[:max_objects]:  # type: ignore[attr-defined]
        _read_rect(geo, obj)
    for obj in page.curves[:max_objects]:  # type: ignore[attr-defined]
        _read_curve(geo, obj)
    geo.horizontal = _merge(geo.horizontal)
    geo.vertical = _merge(geo.vertical)
    return geo


def _add_segment(geo: PageGeometry, x0: float, top: float, x1: float, bottom: float) -> None:
    width, height = x1 - x0, bottom - top
    if height <= 2.0 and width >= 2.0:
        geo.horizontal.append(Segment(x0, x1, (top + bottom) / 2))
    elif width <= 2.0 and height >= 2.0:
        geo.vertical.append(Segment(top, bottom, (x0 + x1) / 2))
    elif width > 2.0 and height > 2.0:
        geo.hatches.append(((x0 + x1) / 2, (top + bottom) / 2))  # a slanted stroke


def _read_rect(geo: PageGeometry, obj: dict) -> None:
    x0, top, x1, bottom = obj["x0"], obj["top"], obj["x1"], obj["bottom"]
    width, height = x1 - x0, bottom - top
    if width <= 2.0 or height <= 2.0:
        _add_segment(geo, x0, top, x1, bottom)
        return
    if width > geo.width * 0.9 and height > geo.height * 0.5:
        return  # a page frame or background
    if obj.get("fill") and width * height < 0.2 * geo.width * geo.height:
        color = obj.get("non_stroking_color")
        level = gray_level(color)
        tinted = isinstance(color, str) or (level is not None and level < 0.97)
        geo.fills.append(((x0, top, x1, bottom), tinted))  # a pattern counts as tinted
    if (
        _is_square(width, height)
        and (obj.get("stroke") or obj.get("fill"))
        and not _solid_mark(obj)
    ):
        geo.squares.append((x0, top, x1, bottom))
    if obj.get("stroke"):
        geo.rect_boxes.append((x0, top, x1, bottom))
    # Edges of filled and stroked rectangles both rule the page: tables are drawn either way.
    geo.horizontal.append(Segment(x0, x1, top))
    geo.horizontal.append(Segment(x0, x1, bottom))
    geo.vertical.append(Segment(top, bottom, x0))
    geo.vertical.append(Segment(top, bottom, x1))


def gray_level(color: object) -> float | None:
    """Lightness of a fill colour, 0 black to 1 white (None when it cannot be told)."""
    if isinstance(color, int | float):
        return float(color)
    if isinstance(color, str):
        return None  # a pattern
    try:
        values = [float(v) for v in color]  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return None
    if len(values) == 1:
        return values[0]
    if len(values) == 3:
        return 0.3 * values[0] + 0.59 * values[1] + 0.11 * values[2]
    if len(values) == 4:
        return 1.0 - min(1.0, 0.3 * values[0] + 0.59 * values[1] + 0.11 * values[2] + values[3])
    return None


def _read_curve(geo: PageGeometry, obj: dict) -> None:
    x0, top, x1, bottom = obj["x0"], obj["top"], obj["x1"], obj["bottom"]
    width, height = x1 - x0, bottom - top
    points = obj.get("pts") or []
    if _is_square(width, height, 3.0, 18.0):
        if _solid_mark(obj):
            return  # a bullet, or a glyph drawn as an outline: nothing to tick
        # Bézier circles have many points; closed straight paths are squares.
        straight = _straight_box(points, width, height)
        (geo.squares if straight else geo.circles).append((x0, top, x1, bottom))
        return
    if height <= 2.0 or width <= 2.0:
        _add_segment(geo, x0, top, x1, bottom)
        return
    for (ax, ay), (bx, by) in itertools.pairwise(points):
        if abs(ax - bx) > 2.0 and abs(ay - by) > 2.0:
            geo.hatches.append(((ax + bx) / 2, (ay + by) / 2))  # a slanted stroke
    if _straight_box(points, width, height):
        geo.horizontal.append(Segment(x0, x1, top))
        geo.horizontal.append(Segment(x0, x1, bottom))
        geo.vertical.append(Segment(top, bottom, x0))
        geo.vertical.append(Segment(top, bottom, x1))


def _solid_mark(obj: dict) -> bool:
    """A small shape filled with ink and not outlined: a bullet, not a box or a button."""
    if not obj.get("fill") or obj.get("stroke"):
        return False
    level = gray_level(obj.get("non_stroking_color"))
    return level is not None and level < 0.9


def _straight_box(points: list, width: float, height: float) -> bool:
    """Whether a path's points all sit on its bounding box's corners (a drawn rectangle)."""
    if not 4 <= len(points) <= 6:
        return False
    xs = sorted({round(p[0], 1) for p in points})
    ys = sorted({round(p[1], 1) for p in points})
    return len(xs) == 2 and len(ys) == 2


def _read_chars(geo: PageGeometry, chars: list[dict]) -> None:
    ordered = sorted(
        (c for c in chars if c.get("upright", True)),
        key=lambda c: (round(c["bottom"]), c["x0"]),
    )
    line: list[Word] = []
    word: list[dict] = []
    run: list[dict] = []

    def close_word() -> None:
        if word:
            text = "".join(c["text"] for c in word)
            size = max(c.get("size", 8.0) for c in word)
            line.append(
                Word(
                    text,
                    word[0]["x0"],
                    min(c["top"] for c in word),
                    word[-1]["x1"],
                    max(c["bottom"] for c in word),
                    size,
                )
            )
            word.clear()

    def close_line() -> None:
        close_word()
        if line:
            geo.lines.append(Line(list(line)))
            geo.words.extend(line)
            line.clear()

    def close_run() -> None:
        if len(run) >= 3:
            geo.underscores.append(
                (
                    (run[0]["x0"], run[0]["top"], run[-1]["x1"], run[-1]["bottom"]),
                    run[0].get("size", 8.0),
                )
            )
        run.clear()

    dots: list[dict] = []

    def close_dots() -> None:
        if len(dots) >= 4:
            top = min(c["top"] for c in dots)
            box = (dots[0]["x0"], top, dots[-1]["x1"], dots[-1]["bottom"])
            geo.dot_runs.append((box, dots[0].get("size", 8.0)))
        dots.clear()

    previous: dict | None = None
    for char in ordered:
        if char["text"] in ".…":
            if not (
                dots
                and abs(dots[-1]["bottom"] - char["bottom"]) < 1
                and char["x0"] - dots[-1]["x1"] < 3
            ):
                close_dots()
            dots.append(char)
        elif not char["text"].isspace():
            close_dots()
        text = char["text"]
        box = (char["x0"], char["top"], char["x1"], char["bottom"])
        font = str(char.get("fontname", "")).lower()
        if text in BOX_GLYPHS or (
            any(s in font for s in _SYMBOL_FONTS) and text in _SYMBOL_BOX_CODES
        ):
            geo.glyph_boxes.append((box, "square"))
            continue
        if text in CIRCLE_GLYPHS:
            geo.glyph_boxes.append((box, "circle"))
            continue
        if not text.isspace() and any(s in font for s in _MARK_FONTS):
            geo.symbol_marks.append(box)
        if text == "_":
            if (
                run
                and abs(run[-1]["bottom"] - char["bottom"]) < 1
                and char["x0"] - run[-1]["x1"] < 2
            ):
                run.append(char)
            else:
                close_run()
                run.append(char)
            continue
        if text.isspace():
            close_word()
            continue
        geo.char_boxes.append(box)
        if previous is not None:
            size = max(char.get("size", 8.0), 1.0)
            gap = char["x0"] - previous["x1"]
            if abs(previous["bottom"] - char["bottom"]) > 0.6 * size or gap > 2.5 * size:
                close_line()  # a new baseline, or a far-apart phrase on the same one
            elif gap > 0.25 * size:
                close_word()
        word.append(char)
        previous = char
    close_run()
    close_dots()
    close_line()


def _merge(segments: list[Segment], gap: float = 1.5, snap: float = 1.0) -> list[Segment]:
    """Join collinear pieces that touch or overlap (tables draw a line cell by cell)."""
    segments = sorted(segments, key=lambda s: (round(s.at / snap), s.a))
    merged: list[Segment] = []
    for seg in segments:
        last = merged[-1] if merged else None
        if last is not None and abs(last.at - seg.at) <= snap and seg.a <= last.b + gap:
            last.b = max(last.b, seg.b)
        else:
            merged.append(Segment(seg.a, seg.b, seg.at))
    return merged
