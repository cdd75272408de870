"""Appearance streams: what a viewer draws for a widget without regenerating anything.

Text follows the field's ``/DA`` (font, size, colour) and ``/Q`` (alignment); a size of 0
means auto-size, and text too large for its box is scaled down until it fits, so a value is
never clipped out of sight. Multiline text wraps at word boundaries, comb fields put one
character in each cell, list boxes highlight the selected option, and ``/MK /R`` rotation is
honoured through the form's ``/Matrix``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Protocol

from pypdf.generic import ArrayObject, DictionaryObject

AUTO_MAX_SIZE = 12.0
MIN_SIZE = 1.0  # text shrinks this far to stay inside its box: small beats clipped
LEADING = 1.15
HIGHLIGHT = b"0.6 0.75 0.86 rg"


class Font(Protocol):
    ascent: float
    descent: float

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
    rotation = int(mk.get("/R", 0) or 0) % 360
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
        half = border / 2
        if bs.get("/S") == "/U":
            frame += b"%s %s w 0 %s m %s %s l S\n" % (
                stroke,
                _number(border),
                _number(half),
                _number(width),
                _number(half),
            )
        else:
            frame += b"%s %s w %s %s %s %s re S\n" % (
                stroke,
                _number(border),
                _number(half),
                _number(half),
                _number(width - border),
                _number(height - border),
            )
    bbox = b"[0 0 %s %s]" % (_number(width), _number(height))
    clip = b"%s %s %s %s re W n\n" % (
        _number(border),
        _number(border),
        _number(width - 2 * border),
        _number(height - 2 * border),
    )
    return Box(width, height, bbox, matrix, frame, border, clip)


_SPECIAL = re.compile(rb"[\\()\r\n]")
_ESCAPES = {b"\\": b"\\\\", b"(": b"\\(", b")": b"\\)", b"\r": b"\\r", b"\n": b"\\n"}


def escape(codes: bytes) -> bytes:
    """A PDF literal string holding ``codes``."""
    if _SPECIAL.search(codes) is None:
        return b"(" + codes + b")"
    return b"(" + _SPECIAL.sub(lambda m: _ESCAPES[m.group(0)], codes) + b")"


def show(codes: bytes, two_byte: bool) -> bytes:
    return b"<" + codes.hex().encode("ascii") + b">" if two_byte else escape(codes)


def _fit_single(box: Box, font: Font, size: float, width_at_1: float) -> float:
    room_h = box.height - 2 * max(1.0, box.border)
    line = font.ascent - font.descent
    by_height = room_h / line if line > 0 else AUTO_MAX_SIZE
    size = min(AUTO_MAX_SIZE, by_height) if size <= 0 else min(size, by_height)
    room_w = box.width - 2 * box.padding
    if width_at_1 > 0 and width_at_1 * size > room_w:
        size = room_w / width_at_1
    return max(size, MIN_SIZE)


class TextTooLong(ValueError):
    """A value that cannot be shown in its box even at the smallest size."""


def _char_width(font: Font, char: str, cache: dict[str, float]) -> float:
    width = cache.get(char)
    if width is None:
        codes = font.encode(char)
        width = cache[char] = font.width(codes) if codes else 0.0
    return width


def _wrap(text: str, font: Font, size: float, room: float) -> list[str]:
    """Lines of ``text`` that fit ``room`` at ``size``: words move to the next line, and a word
    wider than the line is cut. Linear in the text's length, however long its words."""
    lines: list[str] = []
    cache: dict[str, float] = {}
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if not line or _measure(font, candidate) * size <= room:
                line = candidate
            else:
                lines.append(line)
                line = word
            while len(line) > 1:
                cut = _fitting_prefix(line, font, size, room, cache)
                if cut == len(line):
                    break
                lines.append(line[:cut])
                line = line[cut:]
        lines.append(line)
    return lines


def _fitting_prefix(line: str, font: Font, size: float, room: float, cache: dict) -> int:
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
    cache: dict[str, float] = {}
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
    box: Box, style: TextStyle, text: str, *, multiline: bool = False, comb: int | None = None
) -> bytes:
    """Content of a text field's appearance showing ``text``."""
    font, da = style.font, style.da
    body = [b"/Tx BMC\nq\n", box.frame, box.clip, b"BT\n"]
    if comb:
        body += _comb(box, style, text, comb)
    elif multiline:
        body += _multiline(box, style, text)
    else:
        codes = font.encode(" ".join(text.split())) or b""
        size = _fit_single(box, font, da.size, font.width(codes))
        baseline = box.height / 2 - size * (font.ascent + font.descent) / 2
        x = _x(box, style.quadding, font.width(codes) * size)
        body.append(
            b"/%s %s Tf %s\n%s %s Td %s Tj\n"
            % (
                style.font_name,
                _number(size),
                da.color,
                _number(x),
                _number(baseline),
                show(codes, style.two_byte),
            )
        )
    body.append(b"ET\nQ\nEMC")
    return b"".join(body)


def _comb(box: Box, style: TextStyle, text: str, cells: int) -> list[bytes]:
    font = style.font
    cell = box.width / cells
    glyphs = [font.encode(c) or b"" for c in text[:cells]]
    widest = max((font.width(g) for g in glyphs), default=0.5)
    size = _fit_single(box, font, style.da.size, 0)
    if widest * size > cell * 0.95:
        size = max(cell * 0.95 / widest, 1.0)
    baseline = box.height / 2 - size * (font.ascent + font.descent) / 2
    start = {1: (cells - len(glyphs)) // 2, 2: cells - len(glyphs)}.get(style.quadding, 0)
    out = [b"/%s %s Tf %s\n" % (style.font_name, _number(size), style.da.color)]
    previous = 0.0
    for index, codes in enumerate(glyphs):
        x = (start + index) * cell + (cell - font.width(codes) * size) / 2
        out.append(
            b"%s %s Td %s Tj\n"
            % (
                _number(x - previous),
                _number(baseline if index == 0 else 0),
                show(codes, style.two_byte),
            )
        )
        previous = x
    return out


def _multiline(box: Box, style: TextStyle, text: str) -> list[bytes]:
    font, da = style.font, style.da
    room_w = box.width - 2 * box.padding
    room_h = box.height - 2 * box.padding
    size = da.size or AUTO_MAX_SIZE
    ink, widest = _ink_width(font, text)

    def cannot_fit(at: float) -> bool:
        """True when even perfectly packed lines would overflow (no line is wider than the
        box unless one character is, so the lines are at least ink / room)."""
        if widest * at > room_w or room_w <= 0:
            return False  # the bound does not hold: wrap and see
        return math.ceil(ink * at / room_w - 1e-9) * at * LEADING > room_h + at * 0.3

    if cannot_fit(MIN_SIZE):
        lines_max = max(1, int((room_h + MIN_SIZE * 0.3) / (MIN_SIZE * LEADING)))
        holds = int(len(text) * lines_max * room_w / (ink * MIN_SIZE))
        raise TextTooLong(
            f"{len(text):,} characters can't be shown in this box even at {MIN_SIZE:g} pt (it "
            f"holds about {holds:,}); shorten the value or use a larger field."
        )
    while True:
        if size > MIN_SIZE and cannot_fit(size):
            size = max(MIN_SIZE, size - (0.5 if size > 4 else 0.25))
            continue
        lines = _wrap(text, font, size, room_w)
        if len(lines) * size * LEADING <= room_h + size * 0.3 or size <= MIN_SIZE:
            break
        size = max(MIN_SIZE, size - (0.5 if size > 4 else 0.25))
    leading = size * LEADING
    y = box.height - box.padding - size * font.ascent
    out = [b"/%s %s Tf %s\n" % (style.font_name, _number(size), da.color)]
    previous_x, previous_y = 0.0, 0.0
    for line in lines:
        codes = font.encode(line) or b""
        x = _x(box, style.quadding, font.width(codes) * size)
        out.append(
            b"%s %s Td %s Tj\n"
            % (_number(x - previous_x), _number(y - previous_y), show(codes, style.two_byte))
        )
        previous_x, previous_y = x, y
        y -= leading
    return out


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
    previous_y = 0.0
    for index, item in enumerate(items[top : top + visible]):
        codes = font.encode(item) or b""
        y = y_top - index * leading - size * font.ascent - (leading - size) / 2
        x = box.padding if index == 0 else 0
        body.append(
            b"%s %s Td %s Tj\n" % (_number(x), _number(y - previous_y), show(codes, style.two_byte))
        )
        previous_y = y
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
