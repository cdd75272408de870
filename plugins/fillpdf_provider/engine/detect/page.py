"""A page reduced to what field detection reads: text lines, ruling segments and small shapes.

Coordinates are pdfplumber's: x to the right, ``top`` down from the top of the page. Work is
linear or sorted-sweep in the number of objects, because a page of a tax form carries
thousands of them and detection must cost less than extracting them.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, SupportsFloat, cast

from fillpdf_provider.engine.detect.model import Rect

if TYPE_CHECKING:
    from pdfplumber.page import Page

Box = tuple[float, float, float, float]  # x0, top, x1, bottom
#: The map from a reader's top-down page space back to PDF user space (the space of /Rect).
ToPdf = Callable[[Box], Rect]
Point = tuple[float, float]
#: A char as pdfplumber gives it ("text", "x0", "top", "x1", "bottom", "size", "fontname"...);
#: the PDFium reader builds the same keys.
Char = dict[str, Any]
#: A line, rect or curve as pdfplumber gives it ("x0", "top", "fill", "stroke", "pts"...).
PdfObject = dict[str, Any]

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
    """Words on one baseline, in the order the page draws them (left to right, mostly).

    Its text and extent are read many times (by every field near it), so each is worked
    out once; a line's words don't change once it is read.
    """

    words: list[Word]

    @functools.cached_property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def x1(self) -> float:
        return self.words[-1].x1

    @functools.cached_property
    def top(self) -> float:
        return min(w.top for w in self.words)

    @functools.cached_property
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
    # Small closed curves wider than tall: ovals some forms print as tick boxes.
    ovals: list[Box] = field(default_factory=list)

    @property
    def object_count(self) -> int:
        return len(self.char_boxes) + len(self.horizontal) + len(self.vertical)


def is_square(w: float, h: float, lo: float = 4.0, hi: float = 18.0) -> bool:
    """Whether a ``w`` by ``h`` shape is a tick box's size and nearly square.

    Both readers (pdfplumber's and PDFium's) sort small shapes into boxes with it.
    """
    return lo <= w <= hi and lo <= h <= hi and abs(w - h) <= 0.25 * max(w, h)


def read_page(page: Page, max_objects: int = 60_000) -> PageGeometry:
    """Collect what detection needs from a pdfplumber page (bounded by ``max_objects``)."""
    geo = PageGeometry(float(page.width), float(page.height))
    read_chars(geo, page.chars[:max_objects])
    for obj in page.lines[:max_objects]:
        _add_segment(geo, obj["x0"], obj["top"], obj["x1"], obj["bottom"])
    for obj in page.rects[:max_objects]:
        _read_rect(geo, obj)
    for obj in page.curves[:max_objects]:
        _read_curve(geo, obj)
    geo.horizontal = merge_segments(geo.horizontal)
    geo.vertical = merge_segments(geo.vertical)
    return geo


def _add_segment(geo: PageGeometry, x0: float, top: float, x1: float, bottom: float) -> None:
    width, height = x1 - x0, bottom - top
    if height <= 2.0 and width >= 2.0:
        geo.horizontal.append(Segment(x0, x1, (top + bottom) / 2))
    elif width <= 2.0 and height >= 2.0:
        geo.vertical.append(Segment(top, bottom, (x0 + x1) / 2))
    elif width > 2.0 and height > 2.0:
        geo.hatches.append(((x0 + x1) / 2, (top + bottom) / 2))  # a slanted stroke


def _add_edges(geo: PageGeometry, box: Box) -> None:
    """The four sides of a drawn rectangle, as rules: tables are drawn cell by cell."""
    x0, top, x1, bottom = box
    geo.horizontal.append(Segment(x0, x1, top))
    geo.horizontal.append(Segment(x0, x1, bottom))
    geo.vertical.append(Segment(top, bottom, x0))
    geo.vertical.append(Segment(top, bottom, x1))


def _read_rect(geo: PageGeometry, obj: PdfObject) -> None:
    x0, top, x1, bottom = obj["x0"], obj["top"], obj["x1"], obj["bottom"]
    width, height = x1 - x0, bottom - top
    if width <= 2.0 or height <= 2.0:
        _add_segment(geo, x0, top, x1, bottom)
        return
    if width > geo.width * 0.9 and height > geo.height * 0.5:
        return  # a page frame or background
    _add_fill(geo, obj, width, height)
    if _drawn_tick_box(obj, width, height):
        geo.squares.append((x0, top, x1, bottom))
    if obj.get("stroke"):
        geo.rect_boxes.append((x0, top, x1, bottom))
    # Edges of filled and stroked rectangles both rule the page: tables are drawn either way.
    _add_edges(geo, (x0, top, x1, bottom))


def _add_fill(geo: PageGeometry, obj: PdfObject, width: float, height: float) -> None:
    """Record a filled rectangle smaller than a fifth of the page, and whether it is tinted.

    Fills are kept in drawing order so that a white cell painted over a grey column counts.
    """
    if obj.get("fill") and width * height < 0.2 * geo.width * geo.height:
        color = obj.get("non_stroking_color")
        level = gray_level(color)
        tinted = isinstance(color, str) or (level is not None and level < 0.97)
        box = (obj["x0"], obj["top"], obj["x1"], obj["bottom"])
        geo.fills.append((box, tinted))  # a pattern counts as tinted


def _drawn_tick_box(obj: PdfObject, width: float, height: float) -> bool:
    """Whether a rectangle is a box to tick: square, visible, and not a solid bullet."""
    return bool(
        is_square(width, height) and (obj.get("stroke") or obj.get("fill")) and not _solid_mark(obj)
    )


def gray_level(color: object) -> float | None:
    """Lightness of a fill colour, 0 black to 1 white (None when it cannot be told)."""
    if isinstance(color, int | float):
        return float(color)
    if isinstance(color, str):
        return None  # a pattern
    try:
        values = [float(v) for v in cast("Iterable[SupportsFloat]", color)]
    except (TypeError, ValueError):
        return None  # None, or components that are not numbers
    if len(values) == 1:
        return values[0]
    if len(values) == 3:
        return 0.3 * values[0] + 0.59 * values[1] + 0.11 * values[2]
    if len(values) == 4:
        return 1.0 - min(1.0, 0.3 * values[0] + 0.59 * values[1] + 0.11 * values[2] + values[3])
    return None


def _read_curve(geo: PageGeometry, obj: PdfObject) -> None:
    x0, top, x1, bottom = obj["x0"], obj["top"], obj["x1"], obj["bottom"]
    width, height = x1 - x0, bottom - top
    points = obj.get("pts") or []
    if is_square(width, height, 3.0, 18.0):
        if _solid_mark(obj):
            return  # a bullet, or a glyph drawn as an outline: nothing to tick
        # Bézier circles have many points; closed straight paths are squares.
        straight = _straight_box(points, width, height)
        (geo.squares if straight else geo.circles).append((x0, top, x1, bottom))
        return
    if height <= 2.0 or width <= 2.0:
        _add_segment(geo, x0, top, x1, bottom)
        return
    _add_slanted_strokes(geo, points)
    if _straight_box(points, width, height):
        _add_edges(geo, (x0, top, x1, bottom))
    elif _oval(obj, width, height, points):
        geo.ovals.append((x0, top, x1, bottom))


def _oval(obj: PdfObject, width: float, height: float, points: list[Point]) -> bool:
    """A small outlined curve, not straight-sided, wider than tall and not solid ink: the oval
    tick box some forms print (straight sides and round ends take eight points or more)."""
    return (
        4.0 <= height <= 12.0
        and 1.3 * height <= width <= 3.0 * height
        and len(points) >= 8
        and not _solid_mark(obj)
    )


def _add_slanted_strokes(geo: PageGeometry, points: list[Point]) -> None:
    """The midpoints of a path's slanted pieces: hatching strikes a cell out."""
    for (ax, ay), (bx, by) in itertools.pairwise(points):
        if abs(ax - bx) > 2.0 and abs(ay - by) > 2.0:
            geo.hatches.append(((ax + bx) / 2, (ay + by) / 2))  # a slanted stroke


def _solid_mark(obj: PdfObject) -> bool:
    """A small shape filled with ink and not outlined: a bullet, not a box or a button."""
    if not obj.get("fill") or obj.get("stroke"):
        return False
    level = gray_level(obj.get("non_stroking_color"))
    return level is not None and level < 0.9


def _straight_box(points: list[Point], width: float, height: float) -> bool:
    """Whether a path's points all sit on its bounding box's corners (a drawn rectangle)."""
    if not 4 <= len(points) <= 6:
        return False
    xs = sorted({round(p[0], 1) for p in points})
    ys = sorted({round(p[1], 1) for p in points})
    return len(xs) == 2 and len(ys) == 2


def read_chars(geo: PageGeometry, chars: list[Char]) -> None:
    """Words, lines, underscore runs, dot leaders and drawn glyphs from a page's chars.

    Both readers build their chars as pdfplumber's dicts and share this. Chars are read in
    reading order (baseline, then x); what a char is depends only on its text and font, so
    that is worked out once per distinct pair (``_CharKinds``) rather than per char.
    """
    ordered = sorted(
        (c for c in chars if c.get("upright", True)),
        key=lambda c: (round(c["bottom"]), c["x0"]),
    )
    reader = _TextReader(geo)
    handlers = reader.handlers
    kinds = _CharKinds()
    symbol_marks = geo.symbol_marks
    for char in ordered:
        kind, marked = kinds[char["text"], char.get("fontname", "")]
        if marked:
            symbol_marks.append((char["x0"], char["top"], char["x1"], char["bottom"]))
        handlers[kind](char)
    reader.close()


def _char_kind(text: str, fontname: object) -> tuple[str, bool]:
    """What a char is to the reader, and whether it is a mark printed in a symbol font.

    Kinds: "square" or "circle" (a glyph drawn as a box or a circle to tick), "space",
    "dot" (a piece of a dot leader, and text too), "underscore" (a piece of a typed blank)
    or "letter".
    """
    font = str(fontname).lower()
    if text in BOX_GLYPHS or (any(s in font for s in _SYMBOL_FONTS) and text in _SYMBOL_BOX_CODES):
        return "square", False
    if text in CIRCLE_GLYPHS:
        return "circle", False
    if text.isspace():
        return "space", False
    marked = any(s in font for s in _MARK_FONTS)
    if text in ".…":
        return "dot", marked
    if text == "_":
        return "underscore", marked
    return "letter", marked


class _CharKinds(dict[tuple[str, object], tuple[str, bool]]):
    """``_char_kind`` of (text, font name), worked out on first use: a page has few pairs."""

    def __missing__(self, key: tuple[str, object]) -> tuple[str, bool]:
        kind = self[key] = _char_kind(*key)
        return kind


class _TextReader:
    """The chars read so far that are still open: a line, a word, a run of "_" or of dots.

    Each kind of char has its handler (``handlers``); a run closes when a char that does
    not continue it comes, and everything closes at the end (``close``).
    """

    def __init__(self, geo: PageGeometry) -> None:
        self.geo = geo
        self.line: list[Word] = []
        self.word: list[Char] = []
        self.run: list[Char] = []  # underscores
        self.dots: list[Char] = []
        self.previous: Char | None = None  # the last char put in a word
        self.handlers: dict[str, Callable[[Char], None]] = {
            "square": self._square,
            "circle": self._circle,
            "space": self._space,
            "dot": self._dot,
            "underscore": self._underscore,
            "letter": self._letter,
        }

    def close(self) -> None:
        """Close what is open once the page's chars are all read."""
        self._close_run()
        self._close_dots()
        self._close_line()

    # -- one handler per kind of char

    def _square(self, char: Char) -> None:
        if self.dots:
            self._close_dots()
        self.geo.glyph_boxes.append(
            ((char["x0"], char["top"], char["x1"], char["bottom"]), "square")
        )

    def _circle(self, char: Char) -> None:
        if self.dots:
            self._close_dots()
        self.geo.glyph_boxes.append(
            ((char["x0"], char["top"], char["x1"], char["bottom"]), "circle")
        )

    def _space(self, char: Char) -> None:
        self._close_word()

    def _dot(self, char: Char) -> None:
        """A dot extends the leader it is close to, or starts one; it is printed text too."""
        dots = self.dots
        if not (
            dots
            and abs(dots[-1]["bottom"] - char["bottom"]) < 1
            and char["x0"] - dots[-1]["x1"] < 3
        ):
            self._close_dots()
        dots.append(char)
        self._add_to_word(char)

    def _underscore(self, char: Char) -> None:
        """An underscore extends the run of them it touches, or starts one."""
        if self.dots:
            self._close_dots()
        run = self.run
        if not (
            run and abs(run[-1]["bottom"] - char["bottom"]) < 1 and char["x0"] - run[-1]["x1"] < 2
        ):
            self._close_run()
        run.append(char)

    def _letter(self, char: Char) -> None:
        if self.dots:
            self._close_dots()
        self._add_to_word(char)

    def _add_to_word(self, char: Char) -> None:
        """Printed text: the word goes on, or a gap or another baseline starts a new one."""
        self.geo.char_boxes.append((char["x0"], char["top"], char["x1"], char["bottom"]))
        previous = self.previous
        if previous is not None:
            size = max(char.get("size", 8.0), 1.0)
            gap = char["x0"] - previous["x1"]
            if abs(previous["bottom"] - char["bottom"]) > 0.6 * size or gap > 2.5 * size:
                self._close_line()  # a new baseline, or a far-apart phrase on the same one
            elif gap > 0.25 * size or gap < -size:
                self._close_word()  # a space, or a jump back left: words drawn out of order
        self.word.append(char)
        self.previous = char

    # -- closing what is open

    def _close_word(self) -> None:
        word = self.word
        if word:
            text = "".join(c["text"] for c in word)
            size = max(c.get("size", 8.0) for c in word)
            self.line.append(
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

    def _close_line(self) -> None:
        self._close_word()
        line = self.line
        if line:
            self.geo.lines.append(Line(list(line)))
            self.geo.words.extend(line)
            line.clear()

    def _close_run(self) -> None:
        """Three underscores or more in a row are a blank typed as text."""
        run = self.run
        if len(run) >= 3:
            self.geo.underscores.append(
                (
                    (run[0]["x0"], run[0]["top"], run[-1]["x1"], run[-1]["bottom"]),
                    run[0].get("size", 8.0),
                )
            )
        run.clear()

    def _close_dots(self) -> None:
        """Four dots or more in a row are a leader: a blank to write on, or one leading to it."""
        dots = self.dots
        if len(dots) >= 4:
            top = min(c["top"] for c in dots)
            box = (dots[0]["x0"], top, dots[-1]["x1"], dots[-1]["bottom"])
            self.geo.dot_runs.append((box, dots[0].get("size", 8.0)))
        dots.clear()


def merge_segments(segments: list[Segment], gap: float = 1.5, snap: float = 1.0) -> list[Segment]:
    """Join collinear pieces that touch or overlap (tables draw a line cell by cell).

    Pieces within ``snap`` of each other's level are collinear; among them, those less than
    ``gap`` apart join. Two boxes side by side whose bottoms differ by a point keep both.
    """
    ordered = sorted(segments, key=lambda s: (s.at, s.a))
    merged: list[Segment] = []
    start = 0
    while start < len(ordered):
        end = start + 1
        while end < len(ordered) and ordered[end].at - ordered[start].at <= snap:
            end += 1
        level: list[Segment] = []
        for seg in sorted(ordered[start:end], key=lambda s: (s.a, s.at)):
            last = level[-1] if level else None
            if last is not None and seg.a <= last.b + gap:
                last.b = max(last.b, seg.b)
            else:
                level.append(Segment(seg.a, seg.b, seg.at))
        merged.extend(level)
        start = end
    return merged
