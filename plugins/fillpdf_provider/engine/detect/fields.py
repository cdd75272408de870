"""From a page's geometry to field candidates: cells, underlines, combs, boxes and circles.

Every field in a born-digital form has a drawn cue: a ruled cell or box to write in, a line
to write on, a row of comb cells, a small square to tick or a circle to choose. The cues
are found with sorted sweeps over the page's segments; a candidate survives when the space
it offers is empty of printed text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from fillpdf_provider.engine.detect.page import Box, Line, PageGeometry, Segment, Word

MAX_CELL_HEIGHT = 150.0
MAX_BUTTONS_PER_PAGE = 400  # the busiest real form page has about 100
MAX_FIELDS_PER_PAGE = 1500
MIN_FIELD_WIDTH = 14.0
UNDERLINE_HEIGHT = 14.0
# The height given to a single-line field in a taller cell (measured on the corpus).
LINE_HEIGHT = 19.0
SINGLE_LINE_MAX = 36.0  # cells taller than this are multiline fields ...
MULTILINE_MIN_WIDTH = 120.0  # ... unless narrow: an amount column's cell holds one line
_DATE_LABEL = re.compile(r"\b(date|dob|birth|mm\s*/\s*dd|dd\s*/\s*mm|yyyy)\b", re.I)
_SIGNATURE_LABEL = re.compile(r"\b(signature|sign here|signed)\b", re.I)
#: Text that keeps the reader out: "For office use only", "Do not write in this area".
NOT_FOR_YOU = re.compile(
    r"\b(?:(?:office|official|revenue|agency|department|staff|internal)\s+use|"
    r"do\s+not\s+(?:write|mark|use|fill))\b",
    re.I,
)


@dataclass
class Candidate:
    """A field candidate in page (top-down) coordinates."""

    kind: str  # text, date, checkbox, radio, signature
    box: Box
    cue: str
    confidence: float
    label: str | None = None
    multiline: bool = False
    max_length: int | None = None
    group: int | None = None  # radio group index
    region: Box | None = None  # the ruled cell it came from
    # The rules that would set it aside ("header_row", "overlap", "shaded"...): the rule-based
    # detector drops a flagged candidate; the learned one reads the flags as evidence.
    flags: set[str] = field(default_factory=set)
    variant: str = ""  # another reading of the same cue (see variants.py); "" for the rules' own


class CharIndex:
    """Char boxes sorted by top, to ask "is there text in this box?" cheaply.

    The candidate finders, the variants and the features all ask it.
    """

    def __init__(self, boxes: list[Box]) -> None:
        self.boxes = sorted(boxes, key=lambda b: b[1])
        self.tops = [b[1] for b in self.boxes]

    def inside(self, box: Box, margin: float = 0.5) -> list[Box]:
        """The chars whose centre is in ``box``, at least ``margin`` inside its edges."""
        x0, top, x1, bottom = box
        lo = bisect.bisect_left(self.tops, top - 40)
        hi = bisect.bisect_right(self.tops, bottom)
        found = []
        for b in self.boxes[lo:hi]:
            cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
            if x0 + margin < cx < x1 - margin and top + margin < cy < bottom - margin:
                found.append(b)
        return found


class _WordIndex:
    """Words sorted by bottom, to read the heading printed over a cell."""

    def __init__(self, words: list[Word]) -> None:
        self.words = sorted(words, key=lambda w: w.bottom)
        self.bottoms = [w.bottom for w in self.words]

    def heading(self, box: Box, reach: float = 14.0) -> str:
        x0, top, x1, _ = box
        lo = bisect.bisect_left(self.bottoms, top - reach)
        hi = bisect.bisect_right(self.bottoms, top + 1.0)
        return " ".join(w.text for w in self.words[lo:hi] if x0 - 1 <= (w.x0 + w.x1) / 2 <= x1 + 1)


_ANSWER_HEADINGS = frozenset(
    {"yes", "no", "y", "n", "true", "false", "x", "oui", "non", "ja", "nein"}
)


class _Grid:
    """Boxes bucketed by a coarse grid, so "what overlaps this box?" stays cheap on busy pages."""

    CELL = 24.0

    def __init__(self, boxes: list[Box] | None = None) -> None:
        self.cells: dict[tuple[int, int], list[Box]] = {}
        for box in boxes or ():
            self.add(box)

    def _keys(self, box: Box) -> list[tuple[int, int]]:
        size = self.CELL
        return [
            (i, j)
            for i in range(int(box[0] // size), int(box[2] // size) + 1)
            for j in range(int(box[1] // size), int(box[3] // size) + 1)
        ]

    def add(self, box: Box) -> None:
        for key in self._keys(box):
            self.cells.setdefault(key, []).append(box)

    def near(self, box: Box) -> list[Box]:
        seen: dict[Box, None] = {}
        for key in self._keys(box):
            for other in self.cells.get(key, ()):
                seen.setdefault(other, None)
        return list(seen)


class SegmentIndex:
    """Segments sorted by their fixed coordinate, to find the rules in a band quickly."""

    def __init__(self, segments: list[Segment]) -> None:
        self.items = sorted(segments, key=lambda s: s.at)
        self.keys = [s.at for s in self.items]

    def between(self, lo: float, hi: float) -> list[Segment]:
        """The segments whose fixed coordinate is in ``[lo, hi]``, in that order."""
        return self.items[bisect.bisect_left(self.keys, lo) : bisect.bisect_right(self.keys, hi)]


def find_candidates(geo: PageGeometry, *, complete: bool, pool: bool = False) -> list[Candidate]:
    """Field candidates on one page; ``complete`` adds the slower, rarer cues.

    With ``pool`` every candidate comes back, each with the ``flags`` of the rules that
    would set it aside; without it only the unflagged ones (the rule-based detector).
    """
    found = _cue_candidates(geo, complete=complete, pool=pool)
    _flag_header_rows(found)
    _flag_row_headings(found)
    _flag_hatched(found, geo.hatches)
    kept = _flag_overlaps([c for c in found if not c.flags])
    _flag_text_over_buttons(kept)
    _flag_shaded(kept, geo.fills)
    if pool:
        return found
    return _most_confident([c for c in kept if not c.flags])


def _cue_candidates(geo: PageGeometry, *, complete: bool, pool: bool) -> list[Candidate]:
    """A candidate for every drawn cue: buttons, ruled spaces, combs, lined areas, blanks.

    With ``pool`` every closed cell is a candidate of its own as well.
    """
    chars = CharIndex(geo.char_boxes)
    horizontal = SegmentIndex([s for s in geo.horizontal if s.b - s.a >= 8])
    vertical = SegmentIndex([s for s in geo.vertical if s.b - s.a >= 3])
    found: list[Candidate] = []
    buttons = _buttons(geo, chars, complete)
    if len(buttons) > MAX_BUTTONS_PER_PAGE:
        for cand in buttons:
            cand.flags.add("button_flood")  # more is a pattern or artwork, not boxes to tick
    found.extend(buttons)
    cells: list[Box] = []
    regions = _regions(geo, horizontal, vertical, chars, _WordIndex(geo.words), cells)
    found.extend(_combs(regions, chars))
    found.extend(_lined_areas([r for r in regions if r.kind != "_comb_cell"]))
    found.extend(_underscores(geo, chars))
    if pool:
        found.extend(_whole_cells(cells, found))
    return found


def _flag_overlaps(alive: list[Candidate]) -> list[Candidate]:
    """Keep the best of overlapping candidates; flag the others, which the pool keeps."""
    kept = _drop_overlaps(alive)
    survivors = {id(c) for c in kept}
    for cand in alive:
        if id(cand) not in survivors:
            cand.flags.add("overlap")
    return kept


def _most_confident(found: list[Candidate]) -> list[Candidate]:
    """At most ``MAX_FIELDS_PER_PAGE`` fields, the most confident ones."""
    if len(found) > MAX_FIELDS_PER_PAGE:
        found = sorted(found, key=lambda c: -c.confidence)[:MAX_FIELDS_PER_PAGE]
    return found


def _whole_cells(cells: list[Box], found: list[Candidate]) -> list[Candidate]:
    """Every closed ruled cell as a candidate of its own, flagged so the rules skip it.

    The rules read a cell one way (the line under its label, a box inside it); many forms
    make the whole cell the field, and the scorer weighs both readings.
    """
    have = {tuple(round(v) for v in c.box) for c in found}
    made: list[Candidate] = []
    for box in cells:
        height = box[3] - box[1]
        key = tuple(round(v) for v in box)
        if key in have or height < 5 or height > MAX_CELL_HEIGHT:
            continue
        have.add(key)
        cand = _whole_cell(box)
        if cand is not None:
            cand.flags.add("whole_cell")
            made.append(cand)
    return made


def _whole_cell(box: Box) -> Candidate | None:
    """A cell read whole: a small square one is a box to tick, a wide one a text field."""
    x0, top, x1, bottom = box
    width, height = x1 - x0, bottom - top
    square = abs(width - height) <= 0.3 * max(width, height)
    if square and width <= 20:
        return Candidate("checkbox", box, "cell", 0.5, variant="cell-full")
    if width >= MIN_FIELD_WIDTH:
        multiline = height > SINGLE_LINE_MAX and width >= MULTILINE_MIN_WIDTH
        cand = Candidate("text", box, "cell", 0.5, multiline=multiline, variant="cell-full")
        cand.region = box
        return cand
    return None


# -- buttons ---------------------------------------------------------------------------


def _buttons(geo: PageGeometry, chars: CharIndex, complete: bool) -> list[Candidate]:
    found: list[Candidate] = []
    boxes = [(b, "square") for b in geo.squares] + [(b, "circle") for b in geo.circles]
    if complete:
        boxes += geo.glyph_boxes
    squares = _Grid(geo.squares)
    for box, shape in _dedupe_boxes(boxes):
        if shape == "square" and chars.inside(box, margin=1.0):
            continue  # a boxed number or letter, not a box to tick
        if shape == "square" and _in_a_row(box, squares):
            continue  # character cells: the cells pass finds them as one field
        kind = "radio" if shape == "circle" else "checkbox"
        found.append(Candidate(kind, _widget_around(box), shape, 0.9))
    return found


def _widget_around(box: Box) -> Box:
    """A clickable widget for a small drawn box: forms make it a little larger than the ink."""
    x0, top, x1, bottom = box
    side = max(x1 - x0, bottom - top)
    grown = max(side * 1.2, min(11.0, side * 1.5))
    if grown <= side:
        return box
    cx, cy, half = (x0 + x1) / 2, (top + bottom) / 2, grown / 2
    return (cx - half, cy - half, cx + half, cy + half)


def _in_a_row(box: Box, squares: _Grid) -> bool:
    """Whether a square touches an equal square beside it on the same line."""
    x0, top, x1, bottom = box
    for other in squares.near((x0 - 4.0, top, x1 + 4.0, bottom)):
        if other == box or abs(other[1] - top) > 1.5 or abs(other[3] - bottom) > 1.5:
            continue
        if abs(other[0] - x1) <= 3.0 or abs(x0 - other[2]) <= 3.0:
            return True
    return False


def _dedupe_boxes(boxes: list[tuple[Box, str]]) -> list[tuple[Box, str]]:
    """Nested or repeated squares (double borders, fill plus stroke) become one."""
    kept: list[tuple[Box, str]] = []
    grid = _Grid()
    for box, shape in sorted(boxes, key=lambda item: -_area(item[0])):
        if any(_iou(box, other) > 0.3 or _contains(other, box) for other in grid.near(box)):
            continue
        kept.append((box, shape))
        grid.add(box)
    return kept


# -- cells and underlines ----------------------------------------------------------------


def _regions(
    geo: PageGeometry,
    horizontal: SegmentIndex,
    vertical: SegmentIndex,
    chars: CharIndex,
    words: _WordIndex,
    cells: list[Box] | None = None,
) -> list[Candidate]:
    """Candidates from the ruled spaces above each rule; ``cells`` collects the closed ones."""
    found: list[Candidate] = []
    for line in horizontal.items:
        y = line.at
        splits = [
            v.at
            for v in vertical.between(line.a + 2.0, line.b - 2.0)
            if v.a <= y - 2.5 and v.b >= y - 1.5
        ]
        edges = [line.a, *sorted(splits), line.b]
        bounded = [False] + [True] * len(splits) + [False]
        for i in range(len(edges) - 1):
            a, b = edges[i], edges[i + 1]
            if b - a < 5.0:
                continue
            closed_sides = bounded[i] + bounded[i + 1] + _side_walls(vertical, a, b, y)
            top = _ceiling(horizontal, a, b, y)
            if cells is not None and top is not None and closed_sides >= 1:
                cells.append((a, top, b, y))
            found.extend(_region(geo, vertical, chars, words, a, b, y, top, closed_sides))
    return found


def _side_walls(vertical: SegmentIndex, a: float, b: float, y: float) -> int:
    """How many of the interval's ends have a vertical rule rising from the baseline."""
    walls = 0
    for end in (a, b):
        if any(v.a <= y - 2.5 and v.b >= y - 1.5 for v in vertical.between(end - 1.5, end + 1.5)):
            walls += 1
    return min(walls, 2)


def _ceiling(horizontal: SegmentIndex, a: float, b: float, y: float) -> float | None:
    """The nearest rule above ``y`` that covers most of ``[a, b]``."""
    best = None
    for seg in horizontal.between(y - MAX_CELL_HEIGHT, y - 4.0):
        if min(seg.b, b) - max(seg.a, a) >= 0.6 * (b - a) and (best is None or seg.at > best):
            best = seg.at
    return best


def _region(
    geo: PageGeometry,
    vertical: SegmentIndex,
    chars: CharIndex,
    words: _WordIndex,
    a: float,
    b: float,
    y: float,
    top: float | None,
    walls: int,
) -> list[Candidate]:
    """The candidates of the space over ``[a, b]`` on the rule at ``y``.

    A space closed above (``top``) and on a side (``walls``) is a cell; any other is a line
    to write on.
    """
    if top is not None and walls >= 1:
        return _closed_cell(chars, words, (a, top, b, y))
    if b - a < MIN_FIELD_WIDTH:
        return []
    found = _underline(geo, vertical, chars, a, b, y, top)
    return [found] if found is not None else []


def _closed_cell(chars: CharIndex, words: _WordIndex, box: Box) -> list[Candidate]:
    """A ruled cell's candidates, by its size: a small cell is a box or a comb's cell."""
    width, height = box[2] - box[0], box[3] - box[1]
    if width <= 40 and height <= 20 and words.heading(box).lower() in _ANSWER_HEADINGS:
        # A cell under a "Yes" or "No" column heading holds a box to tick.
        return _if_blank(chars, box, _answer_box)
    if width <= 28 and height <= 30:
        return _if_blank(chars, box, _comb_cell)
    if _squarish(width, height):
        return _if_blank(chars, box, _cell_field)
    return _cell(chars, box)


def _if_blank(chars: CharIndex, box: Box, make: Callable[[Box], Candidate]) -> list[Candidate]:
    """``make(box)``, unless something is printed in the small cell (then it is no field)."""
    return [] if chars.inside(box, 1.0) else [make(box)]


def _comb_cell(box: Box) -> Candidate:
    """One cell of a possible comb: ``_combs`` joins runs of them, or keeps each alone."""
    return Candidate("_comb_cell", box, "cell", 0.8)


def _squarish(width: float, height: float) -> bool:
    """Small and nearly square: a cell that holds a box to tick."""
    return width <= 36 and height <= 36 and abs(width - height) <= 0.35 * max(width, height)


def _cell(chars: CharIndex, box: Box) -> list[Candidate]:
    found = _cell_fields(chars, box)
    for cand in found:
        cand.region = box
    return found


def _cell_fields(chars: CharIndex, box: Box) -> list[Candidate]:
    """The fields of a larger cell: all of it when empty, else the room its print leaves."""
    x0, top, x1, bottom = box
    width, height = x1 - x0, bottom - top
    if width < MIN_FIELD_WIDTH or height < 6:
        return []
    inside = chars.inside(box, 0.8)
    if not inside:
        return [_empty_cell_field(box)]
    text_bottom = max(c[3] for c in inside)
    # A label along the top of the cell: the field is the space under it.
    if text_bottom <= top + 0.6 * height and bottom - text_bottom >= 8:
        return [_field_below_label(box, text_bottom)]
    if min(c[1] for c in inside) < top - 1:
        return []  # print sticks out above the cell: not a cell to write in
    return _fields_beside_print(box, inside)


def _field_below_label(box: Box, text_bottom: float) -> Candidate:
    """The space under a label printed along the top of a cell."""
    x0, _top, x1, bottom = box
    return Candidate(
        "text",
        (x0, text_bottom + 0.5, x1, bottom),
        "cell-below-label",
        0.75,
        multiline=bottom - text_bottom > 34,
    )


def _fields_beside_print(box: Box, inside: list[Box]) -> list[Candidate]:
    """Beside its label (or before a suffix), a field takes the cell's height."""
    x0, top, x1, bottom = box
    return [
        Candidate(
            "text",
            (g[0], top, g[1], bottom),
            "cell-after-label" if g[0] > x0 + 1 else "cell-before-text",
            0.7,
            multiline=bottom - top > SINGLE_LINE_MAX,
        )
        for g in _blanks_beside_print(inside, x0, x1)
    ]


def _empty_cell_field(box: Box) -> Candidate:
    """An empty cell: a large one is a multiline field, else one line at its bottom."""
    x0, top, x1, bottom = box
    width, height = x1 - x0, bottom - top
    if height > SINGLE_LINE_MAX and width >= MULTILINE_MIN_WIDTH:
        return Candidate("text", box, "cell", 0.85, multiline=True)
    # A single-line field sits at the bottom of a tall cell.
    return Candidate("text", (x0, bottom - min(height, LINE_HEIGHT), x1, bottom), "cell", 0.9)


def _blanks_beside_print(inside: list[Box], x0: float, x1: float) -> list[tuple[float, float]]:
    """The stretches of a cell's width left to write in beside what is printed in it."""
    free = gaps(inside, x0, x1)
    if len(inside) == 1 and inside[0][2] - inside[0][0] <= 6.0:
        # Only a separator inside ("." between dollars and cents, "-" in a number): each
        # side is a field.
        return [g for g in free if g[1] - g[0] >= 16.0]
    # A label at the left, a suffix such as "00" at the right: the widest gap is the field.
    widest = max(free, key=lambda g: g[1] - g[0])
    return [widest] if widest[1] - widest[0] >= max(28.0, 0.35 * (x1 - x0)) else []


def gaps(chars: list[Box], x0: float, x1: float) -> list[tuple[float, float]]:
    """The stretches of ``[x0, x1]`` that no char covers (with a little air).

    Never empty: ``[(x0, x0)]`` when the print covers it all, so that callers can take the
    widest.
    """
    spans = sorted((c[0] - 2.0, c[2] + 2.0) for c in chars)
    found: list[tuple[float, float]] = []
    cursor = x0
    for start, end in spans:
        if start > cursor:
            found.append((cursor, start))
        cursor = max(cursor, end)
    if x1 > cursor:
        found.append((cursor, x1))
    return found or [(x0, x0)]


def _box_below(vertical: SegmentIndex, a: float, b: float, y: float) -> bool:
    """Whether rules drop from the ends of ``[a, b]`` at ``y`` (a box hangs below it)."""
    for end in (a, b):
        if any(v.a <= y + 1.5 and v.b >= y + 4 for v in vertical.between(end - 1.5, end + 1.5)):
            return True
    return False


def _underline(
    geo: PageGeometry,
    vertical: SegmentIndex,
    chars: CharIndex,
    a: float,
    b: float,
    y: float,
    top: float | None,
) -> Candidate | None:
    height = UNDERLINE_HEIGHT if top is None else min(UNDERLINE_HEIGHT, max(y - top, 6.0))
    box = (a, y - height, b, y)
    if b - a > 0.75 * geo.width:
        return None  # a rule across the page separates sections
    if _box_below(vertical, a, b, y):
        return None  # the top edge of a box or table, not a line to write on
    inside = chars.inside((a, y - height, b, y - 0.8), 0.3)
    if not inside:
        return Candidate("text", box, "underline", 0.8)
    if sum(c[2] - c[0] for c in inside) <= 0.12 * (b - a):
        # A "$" or a short prefix on the line: the blank is what stays free.
        gap = max(gaps(inside, a, b), key=lambda g: g[1] - g[0])
        if gap[1] - gap[0] >= max(MIN_FIELD_WIDTH * 2, 0.6 * (b - a)):
            return Candidate("text", (gap[0], y - height, gap[1], y), "underline-after-mark", 0.7)
    return None  # text written on a rule: a heading or a table row


def _combs(regions: list[Candidate], chars: CharIndex) -> list[Candidate]:
    """Runs of small equal cells on one baseline are one field; a lone square is a checkbox.

    Groups of cells a little apart (an SSN's 3-2-4, the thousands of an amount) stay one
    field, as forms fill them with one value. A run whose cells each sit under their own
    column heading (Jan, Feb, ...) is a row of separate fields instead.
    """
    cells = sorted(
        (r for r in regions if r.kind == "_comb_cell"), key=lambda r: (round(r.box[3]), r.box[0])
    )
    found: list[Candidate] = []
    run: list[Candidate] = []

    def flush() -> None:
        if len(run) >= 3 and _headed_columns(run, chars):
            for r in run:
                found.append(_cell_field(r.box))
        elif len(run) >= 3:
            x0, top = run[0].box[0], min(r.box[1] for r in run)
            x1, bottom = run[-1].box[2], max(r.box[3] for r in run)
            found.append(
                Candidate("text", (x0, top, x1, bottom), "comb", 0.85, max_length=len(run))
            )
        else:
            found.extend(_cell_field(r.box) for r in run)
        run.clear()

    for cell in cells:
        if run:
            last = run[-1]
            width, last_width = cell.box[2] - cell.box[0], last.box[2] - last.box[0]
            if (
                abs(cell.box[3] - last.box[3]) <= 1.5
                and -1.0 <= cell.box[0] - last.box[2] <= 1.3 * last_width
                and abs(width - last_width) <= 0.25 * max(width, last_width) + 0.5
                and not _printed_between(last.box, cell.box, chars)
            ):
                run.append(cell)
                continue
            flush()
        run.append(cell)
    flush()
    return found


def _printed_between(left: Box, right: Box, chars: CharIndex) -> bool:
    """Whether a dash or other mark stands between two cells (separate numbers, as an EIN)."""
    if right[0] - left[2] < 2.0:
        return False
    return bool(chars.inside((left[2], left[1], right[0], right[3]), 0.0))


def _answer_box(box: Box) -> Candidate:
    x0, top, x1, bottom = box
    side = min(bottom - top, x1 - x0, 11.0) * 0.85
    cx, cy = (x0 + x1) / 2, (top + bottom) / 2
    return Candidate(
        "checkbox", (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2), "answer-cell", 0.7
    )


def _cell_field(box: Box) -> Candidate:
    """A small cell alone: a square one is a box to tick, drawn a little inside the cell."""
    x0, top, x1, bottom = box
    width, height = x1 - x0, bottom - top
    if _squarish(width, height):
        if width <= 16:
            return Candidate("checkbox", box, "cell", 0.75)
        side = 0.7 * min(width, height)
        cx, cy = (x0 + x1) / 2, (top + bottom) / 2
        return Candidate(
            "checkbox", (cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2), "cell", 0.6
        )
    return Candidate("text", box, "cell", 0.75)


def _headed_columns(run: list[Candidate], chars: CharIndex) -> bool:
    """Whether most cells of a run have a heading of their own printed just above them."""
    headed = 0
    for cell in run:
        x0, top, x1, _ = cell.box
        band = chars.inside((x0 - 30.0, top - 14.0, x1 + 30.0, top), 0.0)
        own = [c for c in band if x0 - 1 <= c[0] and c[2] <= x1 + 1]
        straddling = [c for c in band if c[0] < x0 - 1 < c[2] or c[0] < x1 + 1 < c[2]]
        if own and not straddling:
            headed += 1
    return headed >= 0.6 * len(run)


def _lined_areas(regions: list[Candidate]) -> list[Candidate]:
    """Four or more equal lines stacked at a writing pitch are one multiline field."""
    lines = [r for r in regions if r.cue == "underline"]
    others = [r for r in regions if r.cue != "underline"]
    columns: dict[tuple[int, int], list[Candidate]] = {}
    for line in lines:
        columns.setdefault((round(line.box[0] / 2), round(line.box[2] / 2)), []).append(line)
    for stack in columns.values():
        stack.sort(key=lambda c: c.box[3])
        for run in _evenly_spaced_runs(stack):
            if len(run) >= 4:
                others.append(_lined_area(run))
            others.extend(run)
    return others


def _evenly_spaced_runs(stack: list[Candidate]) -> list[list[Candidate]]:
    """Lines of one column, top down, cut where the next is not at a writing pitch below."""
    runs: list[list[Candidate]] = []
    for line in stack:
        if runs and 10.0 <= line.box[3] - runs[-1][-1].box[3] <= 28.0:
            runs[-1].append(line)
        else:
            runs.append([line])
    return runs


def _lined_area(run: list[Candidate]) -> Candidate:
    """One multiline field over a run of lines; each line is flagged, as the pool keeps it."""
    x0, top, x1, _ = run[0].box
    for each in run:
        each.flags.add("in_lined_area")
    return Candidate("text", (x0, top, x1, run[-1].box[3]), "lined-area", 0.8, multiline=True)


def _underscores(geo: PageGeometry, chars: CharIndex) -> list[Candidate]:
    """Blanks typed as text: runs of underscores."""
    found = []
    for (x0, _top, x1, bottom), size in geo.underscores:
        if x1 - x0 < MIN_FIELD_WIDTH:
            continue
        height = max(UNDERLINE_HEIGHT, size * 1.2)
        found.append(Candidate("text", (x0, bottom - height, x1, bottom), "underscores", 0.7))
    return found


# -- overlaps ----------------------------------------------------------------------------


def _drop_overlaps(found: list[Candidate]) -> list[Candidate]:
    """Keep the most confident of candidates that cover the same place."""
    kept: list[Candidate] = []
    grid, texts = _Grid(), _Grid()
    for cand in sorted(found, key=lambda c: (-c.confidence, -_area(c.box))):
        if any(_iou(cand.box, other) > 0.4 for other in grid.near(cand.box)):
            continue
        # Two text fields on one spot would print over each other: the less certain one goes.
        text = cand.kind not in ("checkbox", "radio")
        if text and any(_shared(cand.box, other) > 0.5 for other in texts.near(cand.box)):
            continue
        kept.append(cand)
        grid.add(cand.box)
        if text:
            texts.add(cand.box)
    return kept


def _flag_text_over_buttons(found: list[Candidate]) -> None:
    """A text candidate around a checkbox is the cell the box sits in, not a field."""
    buttons = _Grid([c.box for c in found if c.kind in ("checkbox", "radio")])
    if not buttons.cells:
        return
    for cand in found:
        if cand.kind != "text" or cand.cue == "comb":
            continue
        x0, top, x1, bottom = cand.box
        for b in buttons.near(cand.box):
            cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
            if x0 <= cx <= x1 and top <= cy <= bottom:
                cand.flags.add("around_button")
                break


def _flag_header_rows(found: list[Candidate]) -> None:
    """A labelled cell over an empty cell of the same column is a table heading."""
    empty = _empty_cells(found)
    if not empty:
        return
    for cand in found:
        if cand.region is None or cand.cue not in _LABELLED_CELL_CUES:
            continue
        if _cell_right_below(cand.region, empty):
            cand.flags.add("header_row")


_LABELLED_CELL_CUES = ("cell-after-label", "cell-before-text", "cell-below-label")


def _empty_cells(found: list[Candidate]) -> list[Box]:
    """The ruled cells the rules read as empty (the rules' own reading, not a variant)."""
    return [c.region for c in found if c.cue == "cell" and c.region is not None and not c.variant]


def _cell_right_below(cell: Box, others: list[Box]) -> bool:
    """Whether one of ``others`` is the cell just under ``cell``, in the same column."""
    x0, _, x1, bottom = cell
    for other in others:
        if abs(other[0] - x0) <= 2 and abs(other[2] - x1) <= 2 and abs(other[1] - bottom) <= 2:
            return True
    return False


def _flag_row_headings(found: list[Candidate]) -> None:
    """A labelled cell that starts a table row of two or more empty cells heads that row."""
    empty = _empty_cells(found)
    for cand in found:
        if cand.cue != "cell-after-label" or cand.region is None:
            continue
        if len(_cells_further_in_row(cand.region, empty)) >= 2:
            cand.flags.add("row_heading")
    # The corner cell over the row headings ("Income" over "Wages", "Interest") heads them.
    headings = [c.region for c in found if "row_heading" in c.flags and c.region is not None]
    for cand in found:
        if cand.region is None or cand.cue not in _LABELLED_CELL_CUES:
            continue
        if _cell_right_below(cand.region, headings):
            cand.flags.add("header_row")


def _cells_further_in_row(cell: Box, others: list[Box]) -> list[Box]:
    """Those of ``others`` in the same table row as ``cell``, to its right."""
    _x0, top, x1, bottom = cell
    return [
        o for o in others if abs(o[1] - top) <= 2 and abs(o[3] - bottom) <= 2 and o[0] >= x1 - 2
    ]


def _flag_hatched(found: list[Candidate], hatches: list[tuple[float, float]]) -> None:
    """Hatched cells are struck out ("not applicable"), not fields."""
    if not hatches:
        return
    points = sorted(hatches)
    xs = [p[0] for p in points]
    for cand in found:
        if cand.kind in ("checkbox", "radio"):
            continue
        x0, top, x1, bottom = cand.box
        lo, hi = bisect.bisect_left(xs, x0), bisect.bisect_right(xs, x1)
        inside = sum(1 for _, y in points[lo:hi] if top <= y <= bottom)
        if inside >= 2:
            cand.flags.add("hatched")


def _flag_shaded(found: list[Candidate], fills: list[tuple[Box, bool]]) -> None:
    """Tinted cells are the form's own ("for office use", "do not write here").

    What counts is the topmost fill under a candidate: a white cell painted over a grey
    column is a place to write.
    """
    if not any(tinted for _, tinted in fills):
        return
    for cand in found:
        if cand.kind in ("checkbox", "radio") or cand.cue == "comb":
            continue  # boxes drawn on a tinted strip are still boxes to fill
        if _topmost_fill_tinted(cand.box, fills):
            cand.flags.add("shaded")


def _topmost_fill_tinted(box: Box, fills: list[tuple[Box, bool]]) -> bool:
    """Whether the last fill painted under the box's centre, about as wide as it, is tinted."""
    x0, top, x1, bottom = box
    cx, cy = (x0 + x1) / 2, (top + bottom) / 2
    topmost = False
    for s, tinted in fills:
        if s[0] <= cx <= s[2] and s[1] <= cy <= s[3] and s[2] - s[0] >= 0.8 * (x1 - x0):
            topmost = tinted
    return topmost


def _shared(a: Box, b: Box) -> float:
    """How much of the smaller box the other covers (0 to 1)."""
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    if x1 <= x0 or y1 <= y0:
        return 0.0
    smaller = min(_area(a), _area(b))
    return (x1 - x0) * (y1 - y0) / smaller if smaller > 0 else 0.0


def _area(box: Box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def _iou(a: Box, b: Box) -> float:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    if x1 <= x0 or y1 <= y0:
        return 0.0
    inter = (x1 - x0) * (y1 - y0)
    return inter / (_area(a) + _area(b) - inter)


def _contains(outer: Box, inner: Box, slack: float = 0.5) -> bool:
    return (
        outer[0] - slack <= inner[0]
        and outer[1] - slack <= inner[1]
        and inner[2] <= outer[2] + slack
        and inner[3] <= outer[3] + slack
    )


def typed(kind: str, label: str | None) -> str:
    """Refine a text candidate's type from its label (dates, signatures)."""
    if kind != "text" or not label:
        return kind
    if _SIGNATURE_LABEL.search(label):
        return "signature"
    if _DATE_LABEL.search(label):
        return "date"
    return kind


__all__ = ["Candidate", "CharIndex", "Line", "SegmentIndex", "find_candidates", "gaps", "typed"]
