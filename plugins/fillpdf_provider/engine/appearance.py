"""Appearance streams: what a viewer draws for a widget without regenerating anything.

Text follows the field's ``/DA`` (font, size, colour) and ``/Q`` (alignment); a size of 0
means auto-size. Sizes are fitted to the ink the value's glyphs really have (an accented
capital stands taller than the font's ascent), so nothing is clipped by the box. Text too
large for its box is scaled down, never below ``Fit.min_size``; what happens past that is
``Fit.policy``'s decision. Multiline text wraps at word boundaries, comb fields put one
character in each cell, list boxes highlight the selected option, and rotation (``/MK /R``,
or a form's own appearance ``/Matrix``) is honoured through the form's ``/Matrix``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from pypdf.generic import ArrayObject, DictionaryObject, StreamObject

AUTO_MAX_SIZE = 12.0
MIN_SIZE = 4.0  # the default smallest size text shrinks to: below it nobody can read it
SMALLEST = 1.0  # no text is drawn smaller, whatever the box (a 3 pt box keeps 1 pt text)
LEADING = 1.15
#: How far an accent stands above a capital (Helvetica's Aring tops out at 0.931 em over a
#: cap height of 0.718): fonts' ascents leave it out, so a box sized by them clips it.
ACCENT_RISE = 0.215
OVERFLOW_POLICIES = ("error", "shrink", "truncate")
#: Bounds on any font's glyphs, in em, from which a box's room bounds a value's length
#: before any layout: no visible character is narrower than ``NARROWEST_EM`` (a hair
#: space), no line of ink taller than ``TALLEST_EM``, no character wider than ``WIDEST_EM``.
NARROWEST_EM = 0.1
TALLEST_EM = 2.0
WIDEST_EM = 2.0
HIGHLIGHT = b"0.6 0.75 0.86 rg"


class Font(Protocol):
    """What layout needs of a font: its line (per 1 pt), its codes and their widths. The
    metrics are read-only: the engine's fonts are frozen."""

    @property
    def ascent(self) -> float: ...
    @property
    def descent(self) -> float: ...

    def encode(self, text: str) -> bytes | None: ...
    def width(self, codes: bytes) -> float: ...


@dataclass(frozen=True)
class Box:
    """A widget's drawing area, in the orientation its text runs."""

    width: float
    height: float
    bbox: bytes
    matrix: bytes
    frame: bytes  # background and border operators
    border: float
    clip: bytes = b""  # the clip path inside the border

    @property
    def padding(self) -> float:
        return max(2.0, 2 * self.border)


@dataclass(frozen=True)
class DefaultAppearance:
    """The parts of ``/DA`` a stream needs: font resource name, size and colour."""

    font: str
    size: float
    color: bytes

    @classmethod
    def parse(cls, da: str) -> DefaultAppearance:
        font, size = "Helv", 0.0
        match = re.search(r"/([^\s/\[\]()<>]+)\s+([-+]?[\d.]+)\s+Tf", da)
        if match:
            font, size = match.group(1), abs(float(match.group(2)))
        color = b"0 g"
        colors = re.findall(r"((?:[-+]?[\d.]+\s+){1,4})(g|rg|k)\b", da)
        if colors:
            numbers, op = colors[-1]
            color = (" ".join(numbers.split()) + " " + op).encode("ascii")
        return cls(font, size, color)


def _number(value: float) -> bytes:
    """A coordinate to 1/100 pt, as content streams need no more."""
    return b"%.2f" % value


def _color(array: object, op_gray: bytes, op_rgb: bytes, op_cmyk: bytes) -> bytes | None:
    if not isinstance(array, ArrayObject) or len(array) not in (1, 3, 4):
        return None
    try:
        values = b" ".join(_number(float(v)) for v in array)
    except (TypeError, ValueError):
        return None
    op = {1: op_gray, 3: op_rgb, 4: op_cmyk}[len(array)]
    return values + b" " + op


def widget_box(widget: DictionaryObject, rect: tuple[float, float, float, float]) -> Box:
    """The box a widget's appearance is drawn in, with its frame from ``/MK`` and ``/BS``."""
    width, height = rect[2] - rect[0], rect[3] - rect[1]
    mk = widget.get("/MK")
    mk = mk.get_object() if mk is not None else DictionaryObject()
    rotation = int(mk.get("/R", 0) or 0) % 360 if "/R" in mk else _drawn_rotation(widget)
    bs = widget.get("/BS")
    bs = bs.get_object() if bs is not None else DictionaryObject()
    fill = _color(mk.get("/BG"), b"g", b"rg", b"k")
    stroke = _color(mk.get("/BC"), b"G", b"RG", b"K")
    border = float(bs.get("/W", 1)) if stroke else 0.0
    if rotation in (90, 270):
        width, height = height, width
    matrix = {
        90: b"/Matrix[0 1 -1 0 %s 0]" % _number(height),
        180: b"/Matrix[-1 0 0 -1 %s %s]" % (_number(width), _number(height)),
        270: b"/Matrix[0 -1 1 0 0 %s]" % _number(width),
    }.get(rotation, b"")
    frame = b""
    if fill:
        frame += b"%s 0 0 %s %s re f\n" % (fill, _number(width), _number(height))
    if stroke and border > 0:
        frame += _border(stroke, border, bs.get("/S") == "/U", width, height)
    bbox = b"[0 0 %s %s]" % (_number(width), _number(height))
    clip = b"%s %s %s %s re W n\n" % (
        _number(border),
        _number(border),
        _number(width - 2 * border),
        _number(height - 2 * border),
    )
    return Box(width, height, bbox, matrix, frame, border, clip)


def _border(stroke: bytes, border: float, underline: bool, width: float, height: float) -> bytes:
    """The operators stroking a widget's border of ``border`` points: a box, or the line
    under it for the underline style (``/BS /S /U``)."""
    half = border / 2
    if underline:
        return b"%s %s w 0 %s m %s %s l S\n" % (
            stroke,
            _number(border),
            _number(half),
            _number(width),
            _number(half),
        )
    return b"%s %s w %s %s %s %s re S\n" % (
        stroke,
        _number(border),
        _number(half),
        _number(half),
        _number(width - border),
        _number(height - border),
    )


def _drawn_rotation(widget: DictionaryObject) -> int:
    """The quarter turn of a widget's existing appearance ``/Matrix``: some forms rotate a
    field that way alone, with no ``/MK /R``, and a redrawn value must turn with it."""
    matrix = _appearance_matrix(widget)
    if matrix is None:
        return 0
    try:
        a, b = float(matrix[0]), float(matrix[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return 0
    if a == 0 and b == 0:
        return 0
    return round(math.degrees(math.atan2(b, a)) / 90) * 90 % 360


def _appearance_matrix(widget: DictionaryObject) -> Any:
    """The ``/Matrix`` of the widget's normal appearance, as the file has it (any PDF
    value), or None."""
    normal = _normal_appearance(widget)
    matrix = normal.get("/Matrix") if isinstance(normal, StreamObject) else None
    return matrix.get_object() if matrix is not None else None


def _normal_appearance(widget: DictionaryObject) -> object:
    """The widget's normal appearance: its stream, or a button's first state's."""
    ap = widget.get("/AP")
    ap = ap.get_object() if ap is not None else None
    normal = ap.get("/N") if isinstance(ap, DictionaryObject) else None
    normal = normal.get_object() if normal is not None else None
    if isinstance(normal, DictionaryObject) and not isinstance(normal, StreamObject):
        streams = [v.get_object() for v in normal.values()]
        return next((v for v in streams if isinstance(v, StreamObject)), None)
    return normal


_SPECIAL = re.compile(rb"[\\()\r\n]")
_ESCAPES = {b"\\": b"\\\\", b"(": b"\\(", b")": b"\\)", b"\r": b"\\r", b"\n": b"\\n"}


def escape(codes: bytes) -> bytes:
    """A PDF literal string holding ``codes``."""
    if _SPECIAL.search(codes) is None:
        return b"(" + codes + b")"
    return b"(" + _SPECIAL.sub(lambda m: _ESCAPES[m.group(0)], codes) + b")"


def show(codes: bytes, two_byte: bool) -> bytes:
    return b"<" + codes.hex().encode("ascii") + b">" if two_byte else escape(codes)


def _shown(style: TextStyle, codes: bytes, size: float) -> bytes:
    """The operators showing ``codes`` from the current point: one ``Tj``, or what a font
    that lays out its own lines (shaped text) draws."""
    draw = getattr(style.font, "draw", None)
    if draw is not None:
        drawn: bytes = draw(codes, size)
        return drawn
    return show(codes, style.two_byte) + b" Tj"


@dataclass(frozen=True)
class Fit:
    """What to do with text that does not fit its box.

    Text first shrinks, down to ``min_size``. Past that, ``"error"`` refuses the value,
    ``"shrink"`` draws what fits at ``min_size`` and ``"truncate"`` draws what fits at the
    field's own size; both report the value as cut.
    """

    policy: str = "error"
    min_size: float = MIN_SIZE

    def __post_init__(self) -> None:
        if self.policy not in OVERFLOW_POLICIES:
            raise ValueError(f"overflow must be one of {', '.join(OVERFLOW_POLICIES)}")
        if not 0.5 <= self.min_size <= 72:
            raise ValueError("the minimum font size must be between 0.5 and 72 pt")


def ink_extent(font: Font, text: str) -> tuple[float, float]:
    """(top, bottom) of ``text``'s glyphs per 1 pt, from the baseline: the outlines' own
    bounds where the font knows them (the fonts we embed), else the font's ascent and
    descent, raised where an accented capital needs it."""
    extent = getattr(font, "extent", None)
    if extent is not None and text.strip():
        top, bottom = extent(text)
        if top > bottom:
            return top, bottom
    if text.isascii() or not any(map(_accented_capital, set(text))):
        return font.ascent, font.descent
    return font.ascent + ACCENT_RISE, font.descent


@lru_cache(maxsize=8192)
def _accented_capital(char: str) -> bool:
    if char.isascii():
        return False
    decomposed = unicodedata.normalize("NFD", char)
    return (len(decomposed) > 1 and (decomposed[0].isupper() or decomposed[0].isdigit())) or (
        char in "ÅǺΆΈΉΊΌΎΏЁЙЇ"
    )


def _fit_single(
    box: Box,
    font: Font,
    size: float,
    width_at_1: float,
    extent: tuple[float, float],
    fit: Fit,
    chars: int = 0,
    least: int = 1,
) -> tuple[float, bool]:
    """(size, whether the text is wider than the box even at that size) for one line.

    ``least``: the fewest characters the field's values have (one; a date's shortest in its
    format). A value no longer cannot be shortened, so a box too narrow for it at the
    minimum size draws it at the size its width allows, as a box too short keeps the size
    its height allows: a one-character box made for a tick takes its ``X``."""
    room_h = box.height - 2 * max(1.0, box.border)
    line = extent[0] - extent[1]
    # A box too short for the minimum size keeps the size its height allows (its designer's
    # choice, not an overflow), but never under 1 pt, nor negative inside a wide border.
    by_height = max(room_h / line, SMALLEST) if line > 0 else AUTO_MAX_SIZE
    size = min(AUTO_MAX_SIZE, by_height) if size <= 0 else min(size, by_height)
    room_w = box.width - 2 * box.padding
    if width_at_1 <= 0 or width_at_1 * size <= room_w:
        return size, False
    floor = min(fit.min_size, size)  # a box too short for the minimum keeps its own size
    needed = room_w / width_at_1
    if needed >= floor or (chars <= least and needed >= SMALLEST):
        return needed, False
    if fit.policy == "error":
        holds = int(chars * max(needed, 0) / floor)
        raise TextTooLong(
            f"{chars:,} characters need {max(needed, 0):.1f} pt to fit this box, under the "
            f"smallest size of {floor:g} pt (at which it holds about {holds:,}); shorten the "
            "value, use a larger field, or choose the 'shrink' or 'truncate' overflow policy."
        )
    return (floor if fit.policy == "shrink" else size), True


def _baseline(box: Box, size: float, font: Font, extent: tuple[float, float]) -> float:
    """Centred on the font's ascent and descent, as viewers place text, then moved just
    enough to keep the glyphs' real ink inside the border."""
    inset = max(1.0, box.border)
    baseline = box.height / 2 - size * (font.ascent + font.descent) / 2
    top, bottom = extent
    baseline = min(baseline, box.height - inset - size * top)
    return max(baseline, inset - size * bottom)


class TextTooLong(ValueError):
    """A value that cannot be shown in its box even at the smallest size."""


def most_chars(box: Box, da_size: float, fit: Fit, *, multiline: bool, least: int = 1) -> int:
    """The most visible (not blank) characters a value can have and still be shown in
    ``box`` at or above ``fit``'s smallest size, whatever the font.

    An upper bound from the box's room and the bounds on glyphs above, so a value with more
    is refused before any layout, in time linear in its length: laying out a long value
    takes many wraps, counting its characters one pass. ``least`` as in ``text_stream``.
    """
    smallest = min(
        fit.min_size,
        da_size if da_size > 0 else fit.min_size,
        max(SMALLEST, (box.height - 2 * max(1.0, box.border)) / TALLEST_EM),
        max(SMALLEST, (box.width - 2 * box.padding) / WIDEST_EM),
    )
    per_line = max(1, math.floor((box.width - 2 * box.padding) / (smallest * NARROWEST_EM)))
    lines = 1
    if multiline:
        lines = max(1, math.floor((box.height - 2 * box.padding) / (smallest * LEADING)) + 1)
    return max(per_line * lines, least)


def visible_chars(text: str) -> int:
    """The characters of ``text`` that ``most_chars`` counts: all but blanks."""
    return len(text) - sum(map(text.count, (" ", "\n", "\r", "\t")))


def _cut_to_width(text: str, font: Font, size: float, room: float) -> str:
    """The longest start of ``text`` that fits ``room`` at ``size``."""
    keep = _fitting_prefix(text, font, size, room, _width_cache(font))
    return text[:keep] if _measure(font, text[:keep]) * size <= room else ""


def _width_cache(font: Font) -> dict[str, float]:
    """Where to keep ``font``'s character widths: the font's own cache when it has one
    (the form's fonts live as long as the template), else one for this call."""
    widths = getattr(font, "char_widths", None)
    return widths if isinstance(widths, dict) else {}


def _char_width(font: Font, char: str, cache: dict[str, float]) -> float:
    width = cache.get(char)
    if width is None:
        codes = font.encode(char)
        width = font.width(codes) if codes else 0.0
        if len(cache) < 4096:  # a font's cache outlives the row: keep it small
            cache[char] = width
    return width


def wrap(text: str, font: Font, size: float, room: float) -> list[str]:
    """Lines of ``text`` that fit ``room`` at ``size``: words move to the next line, and a word
    wider than the line is cut. Linear in the text's length, however long its words."""
    lines: list[str] = []
    cache = _width_cache(font)
    space = _char_width(font, " ", cache)
    sure = room - _SURE_PT  # a line whose summed widths stay under this fits, however summed
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    for paragraph in text.split("\n"):
        line, width = "", 0.0  # the line so far and its width at 1 pt, summed as it grows
        for word in paragraph.split(" "):
            word_width = _summed_width(font, word, cache)
            if line:
                candidate = f"{line} {word}"
                grown = width + space + word_width
                # The running sum decides where it is clear; near the edge (once a line,
                # about) the whole line is measured, so breaks are exactly Font.width's.
                if grown * size <= sure or _measure(font, candidate) * size <= room:
                    line, width = candidate, grown  # it fits: nothing to cut
                    continue
                lines.append(line)
            line, width = word, word_width
            while len(line) > 1:
                cut = _fitting_prefix(line, font, size, room, cache)
                if cut == len(line):
                    break
                cut = _before_marks(line, cut)
                lines.append(line[:cut])
                line = line[cut:]
                width = _summed_width(font, line, cache)
        lines.append(line)
    return lines


def _before_marks(line: str, cut: int) -> int:
    """``cut`` moved back so a letter keeps its marks (a vowel sign, a tone mark) on its
    line, unless the letter is the line's first (its marks then fill the line)."""
    back = cut
    while back > 0 and not line[back].isascii() and unicodedata.category(line[back])[0] == "M":
        back -= 1
    return back if back > 0 else cut


#: Points by which a running sum of widths may differ from ``Font.width``'s sum of the same
#: widths (rounding only: billions of times a float's error over any line's length).
_SURE_PT = 1e-6


def _summed_width(font: Font, text: str, cache: dict[str, float]) -> float:
    return sum(_char_width(font, char, cache) for char in text)


def _fitting_prefix(
    line: str, font: Font, size: float, room: float, cache: dict[str, float]
) -> int:
    """How many characters of ``line`` fit ``room`` (all of them, or at most all but one and at
    least one): one pass, summing widths in order as ``Font.width`` does."""
    total = 0.0
    for index, char in enumerate(line):
        total += _char_width(font, char, cache)
        if total * size > room:
            return max(1, min(index, len(line) - 1))
    return len(line)


def _ink_width(font: Font, text: str) -> tuple[float, float]:
    """(summed width of the characters that take room on a line, the widest), at 1 pt."""
    cache = _width_cache(font)
    ink, widest = 0.0, 0.0
    for char in text:
        if char in " \n\r\t":
            continue
        width = _char_width(font, char, cache)
        ink += width
        widest = max(widest, width)
    return ink, widest


def _measure(font: Font, text: str) -> float:
    codes = font.encode(text)
    return font.width(codes) if codes else 0.0


@dataclass(frozen=True)
class TextStyle:
    font_name: bytes  # resource name used in the stream
    font: Font
    two_byte: bool
    da: DefaultAppearance
    quadding: int


def _x(box: Box, quadding: int, text_width: float) -> float:
    if quadding == 1:
        return (box.width - text_width) / 2
    if quadding == 2:
        return box.width - box.padding - text_width
    return box.padding


def text_stream(
    box: Box,
    style: TextStyle,
    text: str,
    *,
    multiline: bool = False,
    comb: int | None = None,
    fit: Fit = Fit(),
    least: int = 1,
) -> tuple[bytes, bool]:
    """Content of a text field's appearance showing ``text``, and whether ``fit`` had to
    cut the text to keep it inside the box (``least``: the fewest characters the field's
    values have, drawn whatever the box)."""
    body = [b"/Tx BMC\nq\n", box.frame, box.clip, b"BT\n"]
    if comb:
        lines, cut = _comb(box, style, text, comb, fit), False
    elif multiline:
        lines, cut = _multiline(box, style, text, fit, least)
    else:
        lines, cut = _single(box, style, text, fit, least)
    body += lines
    body.append(b"ET\nQ\nEMC")
    return b"".join(body), cut


def _single(
    box: Box, style: TextStyle, text: str, fit: Fit, least: int = 1
) -> tuple[list[bytes], bool]:
    font, da = style.font, style.da
    text = " ".join(text.split())
    codes = font.encode(text) or b""
    extent = ink_extent(font, text)
    size, cut = _fit_single(box, font, da.size, font.width(codes), extent, fit, len(text), least)
    if cut:
        text = _cut_to_width(text, font, size, box.width - 2 * box.padding)
        codes = font.encode(text) or b""
    baseline = _baseline(box, size, font, extent)
    x = _x(box, style.quadding, font.width(codes) * size)
    line = b"/%s %s Tf %s\n%s %s Td %s\n" % (
        style.font_name,
        _number(size),
        da.color,
        _number(x),
        _number(baseline),
        _shown(style, codes, size),
    )
    return [line], cut


def _comb(box: Box, style: TextStyle, text: str, cells: int, fit: Fit) -> list[bytes]:
    """One character centred in each cell, at the field's size or as large as the row's
    height and the widest character allow (never smaller: the cells set the room)."""
    font = style.font
    cell = box.width / cells
    split = getattr(font, "cells", None)  # shaped text: a letter with its marks, as seen
    pieces: list[str] = split(text)[:cells] if split is not None else list(text[:cells])
    chars = "".join(pieces)
    glyphs = [font.encode(c) or b"" for c in pieces]
    widest = max((font.width(g) for g in glyphs), default=0.5)
    extent = ink_extent(font, chars)
    room_h = box.height - 2 * max(1.0, box.border)
    line = extent[0] - extent[1]
    by_height = max(room_h / line, SMALLEST) if line > 0 else AUTO_MAX_SIZE
    size = min(style.da.size or AUTO_MAX_SIZE, by_height)
    if widest > 0 and widest * size > cell * 0.95:
        size = max(cell * 0.95 / widest, SMALLEST)
    baseline = _baseline(box, size, font, extent)
    start = {1: (cells - len(glyphs)) // 2, 2: cells - len(glyphs)}.get(style.quadding, 0)
    out = [b"/%s %s Tf %s\n" % (style.font_name, _number(size), style.da.color)]
    previous = 0.0
    for index, codes in enumerate(glyphs):
        x = (start + index) * cell + (cell - font.width(codes) * size) / 2
        out.append(
            b"%s %s Td %s\n"
            % (
                _number(x - previous),
                _number(baseline if index == 0 else 0),
                _shown(style, codes, size),
            )
        )
        previous = x
    return out


def _multiline(
    box: Box, style: TextStyle, text: str, fit: Fit, least: int = 1
) -> tuple[list[bytes], bool]:
    font = style.font
    if not text.strip():
        return [], False
    room_w = box.width - 2 * box.padding
    room_h = box.height - 2 * box.padding
    top, bottom = ink_extent(font, text)
    # The size at which one line fills the box's height: a box with room for one line at
    # most is laid out as one line, as viewers do, sized by its height and width.
    one_line = room_h / (top - bottom) if top > bottom else AUTO_MAX_SIZE
    start = min(style.da.size or AUTO_MAX_SIZE, max(one_line, SMALLEST))
    ink, widest = _ink_width(font, text)
    if widest > 0 and room_w > 0:
        # No line break narrows a character: a box too narrow for its widest one (a tall,
        # thin box, as a row turned with its page is without /MK /R) starts at the size
        # that character fits, and one too narrow at the minimum keeps the size its width
        # allows, as one too short keeps the size its height allows.
        start = min(start, max(room_w / widest, SMALLEST))
    floor = min(fit.min_size, start)
    if _lines_hold(room_h, top - bottom, floor) <= 1:
        return _single(box, style, text, fit, least)
    room = _Room(room_w, room_h, top - bottom, ink, widest)
    size, lines, cut = _fitted_lines(room, text, font, start, floor, fit)
    return _line_ops(box, style, lines, size, top), cut


def _lines_hold(room_h: float, line: float, at: float) -> int:
    """How many lines fit a box ``room_h`` high at ``at``: the last one's descenders (of a
    ``line`` of ink per 1 pt) included."""
    return max(0, int((room_h - at * line) / (at * LEADING) + 1 + 1e-9))


class _Room:
    """A multiline box's room for a text: its width and height, the text's line of ink per
    1 pt, and its characters' summed and widest widths per 1 pt."""

    __slots__ = ("height", "ink", "line", "widest", "width")

    def __init__(self, width: float, height: float, line: float, ink: float, widest: float) -> None:
        self.width, self.height, self.line = width, height, line
        self.ink, self.widest = ink, widest

    def hold(self, at: float) -> int:
        """How many lines fit the box at ``at``."""
        return _lines_hold(self.height, self.line, at)

    def cannot_fit(self, at: float) -> bool:
        """True when even perfectly packed lines would overflow (no line is wider than the
        box unless one character is, so the lines are at least ink / room)."""
        if self.widest * at > self.width or self.width <= 0:
            return False  # the bound does not hold: wrap and see
        return math.ceil(self.ink * at / self.width - 1e-9) > self.hold(at)

    def too_much(self, text: str, floor: float) -> str:
        holds = int(len(text) * self.hold(floor) * self.width / (self.ink * floor))
        return (
            f"{len(text):,} characters can't be shown in this box even at {floor:g} pt (it "
            f"holds about {holds:,}); shorten the value, use a larger field, or choose "
            "the 'shrink' or 'truncate' overflow policy."
        )

    def too_many_lines(self, text: str, lines: int, floor: float) -> str:
        return (
            f"{len(text):,} characters need {lines} lines at {floor:g} pt and "
            f"the box holds {self.hold(floor)}; shorten the value, use a larger "
            "field, or choose the 'shrink' or 'truncate' overflow policy."
        )


def _fitted_lines(
    room: _Room, text: str, font: Font, start: float, floor: float, fit: Fit
) -> tuple[float, list[str], bool]:
    """The size text is drawn at (from ``start`` down to ``floor``), its lines, and whether
    ``fit`` cut it to the box. Sizes too large for the text's ink are skipped unwrapped."""
    if room.cannot_fit(floor):
        if fit.policy == "error":
            raise TextTooLong(room.too_much(text, floor))
        return _cut_lines(room, text, font, _cut_size(fit, start, floor))
    sizes = [start]
    while sizes[-1] > floor:
        sizes.append(_smaller(sizes[-1], floor))
    sizes = [size for size in sizes[:-1] if not room.cannot_fit(size)] + sizes[-1:]
    laid: dict[float, list[str]] = {}

    def fits(size: float) -> bool:
        laid[size] = wrap(text, font, size, room.width)
        return len(laid[size]) <= room.hold(size)

    if fits(sizes[0]):  # most text fits at its first size: one wrap
        return sizes[0], laid[sizes[0]], False
    if not fits(sizes[-1]):
        if fit.policy == "error":
            raise TextTooLong(room.too_many_lines(text, len(laid[sizes[-1]]), floor))
        return _cut_lines(room, text, font, _cut_size(fit, start, floor))
    # The largest size that fits, halving the sizes left: a smaller size never takes more
    # lines (each line holds as much or more) and the box holds as many or more.
    low, high = 0, len(sizes) - 1  # sizes[low] does not fit, sizes[high] does
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(sizes[middle]) else (middle, high)
    return sizes[high], laid[sizes[high]], False


def _smaller(size: float, floor: float) -> float:
    """The next size tried: half a point smaller (a quarter below 4 pt), never below ``floor``."""
    return max(floor, size - (0.5 if size > 4 else 0.25))


def _cut_size(fit: Fit, start: float, floor: float) -> float:
    """The size text too long for its box is cut at: the smallest under ``"shrink"``, the
    field's own under ``"truncate"``."""
    return floor if fit.policy == "shrink" else start


def _cut_lines(room: _Room, text: str, font: Font, size: float) -> tuple[float, list[str], bool]:
    """The lines of as much of ``text`` as the box holds at ``size``: the text, cut."""
    lines = wrap(_head(text, font, size, room.width, room.hold(size)), font, size, room.width)
    return size, lines[: room.hold(size)], True


def _line_ops(box: Box, style: TextStyle, lines: list[str], size: float, top: float) -> list[bytes]:
    """The operators showing ``lines`` at ``size`` from the box's top, each aligned."""
    font = style.font
    leading = size * LEADING
    y = box.height - box.padding - size * top
    out = [b"/%s %s Tf %s\n" % (style.font_name, _number(size), style.da.color)]
    previous_x, previous_y = 0.0, 0.0
    per_line = getattr(font, "line_quadding", None)  # shaped text: each paragraph's side
    for line in lines:
        codes = font.encode(line) or b""
        quadding = per_line(line, style.quadding) if per_line is not None else style.quadding
        x = _x(box, quadding, font.width(codes) * size)
        out.append(
            b"%s %s Td %s\n"
            % (_number(x - previous_x), _number(y - previous_y), _shown(style, codes, size))
        )
        previous_x, previous_y = x, y
        y -= leading
    return out


def _head(text: str, font: Font, size: float, room: float, lines: int) -> str:
    """A start of ``text`` long enough to fill ``lines`` lines and no longer, so cutting a
    megabyte value wraps a few lines' worth of it, not all of it."""
    cache: dict[str, float] = {}
    widths = [_char_width(font, c, cache) for c in set(text[:4096])]
    narrowest = max(min((w for w in widths if w > 0), default=0.2), 0.05)
    per_line = int(room / (narrowest * size)) + 2 if room > 0 else 1
    return text[: max(1, lines) * per_line * 2 + 64]


def listbox_stream(
    box: Box, style: TextStyle, items: list[str], selected: int, top: int = 0
) -> bytes:
    """A list box showing ``items`` from ``top`` with the ``selected`` one highlighted."""
    font, da = style.font, style.da
    size = da.size or AUTO_MAX_SIZE
    leading = size * LEADING
    visible = max(1, int((box.height - 2 * box.border) // leading))
    if not top <= selected < top + visible:
        top = max(0, selected - visible + 1)
    body = [b"/Tx BMC\nq\n", box.frame, box.clip]
    y_top = box.height - box.border
    row = selected - top
    body.append(
        b"%s %s %s %s %s re f\n"
        % (
            HIGHLIGHT,
            _number(box.border),
            _number(y_top - (row + 1) * leading),
            _number(box.width - 2 * box.border),
            _number(leading),
        )
    )
    body.append(b"BT\n/%s %s Tf %s\n" % (style.font_name, _number(size), da.color))
    # Options start at the left, as viewers draw them; laid out by script, each follows its
    # own direction (a right-to-left option goes right) unless the form states alignment.
    per_line = getattr(font, "line_quadding", None)
    previous_x, previous_y = 0.0, 0.0
    for index, item in enumerate(items[top : top + visible]):
        codes = font.encode(item) or b""
        y = y_top - index * leading - size * font.ascent - (leading - size) / 2
        quadding = per_line(item, style.quadding) if per_line is not None else 0
        x = _x(box, quadding, font.width(codes) * size) if quadding else box.padding
        body.append(
            b"%s %s Td %s\n"
            % (_number(x - previous_x), _number(y - previous_y), _shown(style, codes, size))
        )
        previous_x, previous_y = x, y
    body.append(b"ET\nQ\nEMC")
    return b"".join(body)


def check_stream(box: Box, radio: bool, on: bool, color: bytes) -> bytes:
    """A drawn check mark or radio dot, for buttons that came without appearances."""
    body = [b"q\n", box.frame]
    if on:
        side = min(box.width, box.height)
        cx, cy = box.width / 2, box.height / 2
        stroke = color.replace(b" g", b" G").replace(b" rg", b" RG").replace(b" k", b" K")
        if radio:
            r = side * 0.28
            k = r * 0.5523
            body.append(
                b"%s %s %s m %s %s %s %s %s %s c %s %s %s %s %s %s c "
                b"%s %s %s %s %s %s c %s %s %s %s %s %s c f\n"
                % tuple(
                    [color]
                    + [
                        _number(v)
                        for v in (
                            cx + r,
                            cy,
                            cx + r,
                            cy + k,
                            cx + k,
                            cy + r,
                            cx,
                            cy + r,
                            cx - k,
                            cy + r,
                            cx - r,
                            cy + k,
                            cx - r,
                            cy,
                            cx - r,
                            cy - k,
                            cx - k,
                            cy - r,
                            cx,
                            cy - r,
                            cx + k,
                            cy - r,
                            cx + r,
                            cy - k,
                            cx + r,
                            cy,
                        )
                    ]
                )
            )
        else:
            s = side * 0.7
            x0, y0 = cx - s / 2, cy - s / 2
            body.append(
                b"%s %s w 1 J 1 j %s %s m %s %s l %s %s l S\n"
                % (
                    stroke,
                    _number(max(side * 0.1, 0.8)),
                    _number(x0 + s * 0.1),
                    _number(y0 + s * 0.5),
                    _number(x0 + s * 0.4),
                    _number(y0 + s * 0.15),
                    _number(x0 + s * 0.92),
                    _number(y0 + s * 0.88),
                )
            )
    body.append(b"Q")
    return b"".join(body)


def form_xobject(box: Box, content: bytes, resources: bytes = b"") -> bytes:
    """The body of a form XObject object drawing ``content`` in ``box``."""
    return (
        b"<</Type/XObject/Subtype/Form/BBox%s%s/Resources<<%s>>/Length %d>>\nstream\n%s\nendstream"
        % (box.bbox, box.matrix, resources, len(content), content)
    )
