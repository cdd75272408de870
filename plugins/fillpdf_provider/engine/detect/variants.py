"""Other readings of the page's cues, for the learned scorer to choose from.

The rules commit to one box per cue: a cell's bottom line, an underline 14 pt tall. Real
forms differ (a field fills the whole cell, a tick box's widget is larger than its ink, a
field is just the blank after "Name:" with no line at all), so the pool also holds the
other plausible boxes, and the scorer keeps the likeliest of those that overlap.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from fillpdf_provider.engine.detect.fields import Candidate, CharIndex, SegmentIndex, gaps
from fillpdf_provider.engine.detect.labels import phrases_with_end
from fillpdf_provider.engine.detect.page import Box, Line, PageGeometry

VARIANTS = (
    "blank-after-label",
    "blank-to-margin",
    "cell-full",
    "cell-line",
    "after-mark",
    "tall",
    "short",
    "ink",
    "large",
    "symbol-glyph",
    "widest-gap",
    "blank-tall",
    "square-in-box",
    "brackets",
    "oval",
)
MIN_BLANK = 24.0
_SQUARE_CUES = ("square", "circle", "cell", "answer-cell")


def with_variants(geo: PageGeometry, pool: list[Candidate]) -> list[Candidate]:
    """The pool plus the other boxes its cues allow, and blanks that follow a label."""
    chars = CharIndex(geo.char_boxes)
    extra: list[Candidate] = []
    for cand in pool:
        extra.extend(_alternatives(cand, chars))
    extra.extend(_blanks_after_labels(geo, chars))
    extra.extend(_symbol_marks(geo))
    extra.extend(_dot_leaders(geo))
    extra.extend(_squares_in_wide_boxes(geo, chars))
    extra.extend(_bracket_pairs(geo))
    extra.extend(Candidate("checkbox", box, "circle", 0.5, variant="oval") for box in geo.ovals)
    return pool + extra


def _squares_in_wide_boxes(geo: PageGeometry, chars: CharIndex) -> list[Candidate]:
    """An empty box about twice as wide as tall may be a tick box whose widget is the square
    in its middle (court forms draw them so), or a short text entry: both readings."""
    found = []
    for box in geo.rect_boxes:
        x0, top, x1, bottom = box
        width, height = x1 - x0, bottom - top
        if not (5.0 <= height <= 14.0 and 1.4 * height <= width <= 2.6 * height):
            continue
        if chars.inside(box, 0.5):
            continue
        cx, cy = (x0 + x1) / 2, (top + bottom) / 2
        for side in (height, 1.2 * height):
            square = (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2)
            found.append(Candidate("checkbox", square, "square", 0.5, variant="square-in-box"))
    return found


_OPENING = ("[", "(")
_CLOSING = {"[": "]", "(": ")"}


def _bracket_pairs(geo: PageGeometry) -> list[Candidate]:
    """A bracket pair with only blank between, "[  ]" or "(  )", is a tick box printed as
    text."""
    found = []
    for line in geo.lines:
        words = sorted(line.words, key=lambda w: w.x0)
        for left, right in itertools.pairwise(words):
            if not (
                left.text.endswith(_OPENING) and right.text.startswith(_CLOSING[left.text[-1]])
            ):
                continue
            gap = right.x0 - left.x1
            size = max(left.size, right.size)
            if not (0.2 * size <= gap <= 2.5 * size):
                continue
            x0 = left.x1 - 0.5 * min(left.x1 - left.x0, size)
            x1 = right.x0 + 0.5 * min(right.x1 - right.x0, size)
            top, bottom = min(left.top, right.top), max(left.bottom, right.bottom)
            cx, cy, side = (x0 + x1) / 2, (top + bottom) / 2, bottom - top
            for box in (
                (x0, top, x1, bottom),
                (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2),
            ):
                found.append(Candidate("checkbox", box, "square", 0.5, variant="brackets"))
    return found


def _dot_leaders(geo: PageGeometry) -> list[Candidate]:
    """A run of dots is a blank to write on, as a run of underscores is (or a leader to one)."""
    found = []
    for (x0, _top, x1, bottom), size in geo.dot_runs:
        if x1 - x0 < 14.0:
            continue
        height = max(12.0, 1.5 * size)
        found.append(Candidate("text", (x0, bottom - height, x1, bottom + 1.0), "dots", 0.5))
    return found


def _symbol_marks(geo: PageGeometry) -> list[Candidate]:
    """A symbol-font character of tick-box size may be a printed box (Webdings "c", ...)."""
    found = []
    for x0, top, x1, bottom in geo.symbol_marks:
        width, height = x1 - x0, bottom - top
        if not (4.0 <= width <= 20.0 and 4.0 <= height <= 20.0):
            continue
        # A glyph's advance is wider than the box it draws: squares of its height as well.
        cx, cy = (x0 + x1) / 2, (top + bottom) / 2
        for box in (
            (x0, top, x1, bottom),
            (x0, top, x0 + height, bottom),
            (x0 + 0.1 * height, cy - 0.4 * height, x0 + 0.9 * height, cy + 0.4 * height),
            # a widget larger than the glyph, centred on it
            (cx - 0.5 * height, top, cx + 0.5 * height, bottom),
            (cx - 0.65 * height, cy - 0.65 * height, cx + 0.65 * height, cy + 0.65 * height),
        ):
            cand = Candidate("checkbox", box, "square", 0.5, variant="symbol-glyph")
            cand.flags.add("symbol_glyph")
            found.append(cand)
    return found


def _variant(cand: Candidate, box: Box, name: str) -> Candidate:
    return replace(cand, box=box, flags=set(cand.flags), variant=name)


def _alternatives(cand: Candidate, chars: CharIndex) -> list[Candidate]:
    """The other boxes a candidate's cue allows: a button's other sizes, a text field's other
    extents in its cell and other heights on its line."""
    if cand.kind in ("checkbox", "radio") and cand.cue in _SQUARE_CUES:
        return _button_sizes(cand)
    if cand.kind != "text":
        return []
    found = _cell_readings(cand, cand.region, chars) if cand.region is not None else []
    if cand.cue in _LINE_CUES:
        x0, _top, x1, bottom = cand.box
        found.append(_variant(cand, (x0, bottom - 20.0, x1, bottom), "tall"))
        found.append(_variant(cand, (x0, bottom - 10.0, x1, bottom), "short"))
    return found


_LINE_CUES = ("underline", "underscores", "underline-after-mark", "cell-below-label")


def _button_sizes(cand: Candidate) -> list[Candidate]:
    """A tick box's widget the size of its ink, and one larger than the rules make it."""
    x0, top, x1, bottom = cand.box
    side = max(x1 - x0, bottom - top)
    cx, cy = (x0 + x1) / 2, (top + bottom) / 2
    found: list[Candidate] = []
    for name, factor in (("ink", 1 / 1.2), ("large", 1.5)):
        half = side * factor / 2
        found.append(_variant(cand, (cx - half, cy - half, cx + half, cy + half), name))
    return found


def _cell_readings(cand: Candidate, region: Box, chars: CharIndex) -> list[Candidate]:
    """A text field in a ruled cell read other ways: the whole cell, its bottom line, the
    room after a mark at its left, or its widest blank stretch."""
    x0, top, x1, bottom = cand.box
    rx0, rtop, rx1, rbottom = region
    found: list[Candidate] = []
    if (x0, top, x1, bottom) != region:
        found.append(_variant(cand, region, "cell-full"))
    if rbottom - rtop > 22:
        found.append(_variant(cand, (rx0, rbottom - 18.0, rx1, rbottom), "cell-line"))
    inside = chars.inside(region, 0.8)
    if inside:
        found.extend(_after_mark(cand, region, inside))
        # A label beside the field: the widest stretch the print leaves, full height.
        gap = max(gaps(inside, rx0, rx1), key=lambda g: g[1] - g[0])
        if gap[1] - gap[0] >= 14 and (gap[0], gap[1]) != (x0, x1):
            found.append(_variant(cand, (gap[0], rtop, gap[1], rbottom), "widest-gap"))
    return found


def _after_mark(cand: Candidate, region: Box, inside: list[Box]) -> list[Candidate]:
    """A mark at the left of a cell (a bullet, a line number, a "$"): the rest of the cell."""
    rx0, rtop, rx1, rbottom = region
    lefts = [c for c in inside if c[2] <= rx0 + 0.35 * (rx1 - rx0)]
    if lefts and len(lefts) <= 6:
        start = max(c[2] for c in lefts) + 1.0
        if rx1 - start >= 14:
            return [_variant(cand, (start, rtop, rx1, rbottom), "after-mark")]
    return []


def _blanks_after_labels(geo: PageGeometry, chars: CharIndex) -> list[Candidate]:
    """The blank after a phrase on its line, up to the next phrase, a rule or the margin."""
    if not geo.lines:
        return []
    blanks = _Blanks(
        chars=chars,
        vertical=SegmentIndex([s for s in geo.vertical if s.b - s.a >= 6]),
        shapes=sorted(
            [*geo.squares, *geo.circles, *(box for box, _ in geo.glyph_boxes), *geo.symbol_marks]
        ),
        margin=max(line.x1 for line in geo.lines),
    )
    found: list[Candidate] = []
    for line in geo.lines:
        found.extend(blanks.on_line(line))
    return found


@dataclass
class _Blanks:
    """What can end a blank on a line: print, a rule, a tick box, or the page's text margin."""

    chars: CharIndex
    vertical: SegmentIndex  # rules tall enough to wall a blank in
    shapes: list[Box]  # tick boxes and circles, sorted by x
    margin: float  # where the page's text ends at the right

    def on_line(self, line: Line) -> list[Candidate]:
        """The blank after each phrase of a line, on a band as tall as its text."""
        phrases = phrases_with_end(line)
        size = max(w.size for w in line.words)
        height = max(10.0, 1.5 * size)
        bottom = line.bottom + 1.0
        top = bottom - height
        found: list[Candidate] = []
        for i, (_start, _text, end) in enumerate(phrases):
            begin = end + 2.0
            following = phrases[i + 1][0] if i + 1 < len(phrases) else None
            stop, name = self._stop(begin, top, bottom, following)
            found.extend(self._blank((begin, top, stop, bottom), name, size))
        return found

    def _stop(
        self, begin: float, top: float, bottom: float, following: float | None
    ) -> tuple[float, str]:
        """Where the blank from ``begin`` stops before print, and the variant it makes:
        the next phrase (``following``) or the margin, or a rule or tick box nearer."""
        if following is not None:
            stop, name = following - 3.0, "blank-after-label"
        else:
            stop, name = self.margin, "blank-to-margin"
        wall = _first_wall(self.vertical, begin, top, bottom)
        if wall is not None and wall < stop:
            stop, name = wall - 1.0, "blank-after-label"
        shape = _first_shape(self.shapes, begin, top, bottom)
        if shape is not None and shape - 2.0 < stop:
            # the next option's tick box: a row of choices has no blank between them
            stop, name = shape - 2.0, "blank-after-label"
        return stop, name

    def _blank(self, band: Box, name: str, size: float) -> list[Candidate]:
        """The band cut short by print on it, line-high and tall, unless too short to fill."""
        begin, top, stop, bottom = band
        inside = [c[0] for c in self.chars.inside(band, 0.5)]
        if inside:
            stop = min(inside) - 2.0  # print further on the line ends the blank
        if stop - begin < MIN_BLANK:
            return []
        tall = (begin, bottom - 2.2 * size, stop, bottom + 2.0)
        return [
            Candidate("text", (begin, top, stop, bottom), "blank", 0.5, variant=name),
            Candidate("text", tall, "blank", 0.5, variant="blank-tall"),
        ]


def _first_shape(shapes: list[Box], x: float, top: float, bottom: float) -> float | None:
    """The left edge of the nearest tick box or circle right of ``x`` on the band."""
    for x0, s_top, _x1, s_bottom in shapes:
        if x0 >= x - 1.0 and s_top <= bottom - 2 and s_bottom >= top + 2:
            return x0
    return None


def _first_wall(vertical: SegmentIndex, x: float, top: float, bottom: float) -> float | None:
    """The nearest vertical rule right of ``x`` that crosses the band ``top..bottom``."""
    for seg in vertical.between(x + 1.0, x + 2000.0):
        if seg.a <= bottom - 2 and seg.b >= top + 2:
            return seg.at
    return None
