"""A value in any script as a font for appearance streams: laid out by ``shaping``, drawn by
glyph from subsets embedded per output, read back in its own order.

``ShapedFont`` answers what layout asks of any font (its line, its width, its ink), so auto
size, wrapping, comb cells and the overflow policies work on it unchanged; it draws a line
itself, run by run in visual order, each glyph placed where HarfBuzz put it. Each drawn line
is marked with its text in logical order (``/ActualText``) for copy and screen readers, and
each glyph maps back to its characters through ToUnicode for text extraction.
"""

from __future__ import annotations

from collections.abc import Callable

from fillpdf_provider.engine import fonts, shaping
from fillpdf_provider.engine.appearance import TALLEST_EM, TextTooLong


class ShapedGlyphs:
    """The subsets one output embeds for its shaped values: one per font, its objects
    numbered when the font is first drawn with, written once the output is complete."""

    def __init__(self, allocate: Callable[[int], int]) -> None:
        """``allocate(n)``: the first of ``n`` fresh object numbers of the output."""
        self._allocate = allocate
        self._subsets: dict[int, fonts.GlyphSubset] = {}

    def subset(self, font: int) -> fonts.GlyphSubset:
        found = self._subsets.get(font)
        if found is None:
            refs = fonts.FontRefs.starting_at(self._allocate(5))
            found = self._subsets[font] = fonts.GlyphSubset(fonts.script_fonts()[font], refs)
        return found

    def objects(self) -> list[tuple[int, int, bytes]]:
        """Every subset's objects, in the order the fonts were first drawn with."""
        return [
            (number, 0, body)
            for subset in self._subsets.values()
            for number, body in subset.pdf_objects()
        ]


def resource_name(font: int) -> bytes:
    return b"FS%d" % font


class ShapedFont:
    """One value laid out by ``shaping``, as the ``Font`` layout uses. Its codes are the
    text itself (UTF-32): each line is shaped whole when measured and when drawn."""

    two_byte = True

    def __init__(self, glyphs: ShapedGlyphs, text: str, *, aligned: bool = False) -> None:
        """``aligned``: the form states the alignment, which every line keeps; else each
        line goes to the side its paragraph starts from."""
        self._glyphs = glyphs
        self._aligned = aligned
        #: The first paragraph's direction: the value's, for one line and alignment.
        self.base = shaping.base_level(text)
        paragraphs = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        #: Each paragraph (a line of the value, rule P1) with its own direction, when they
        #: differ: a wrapped line takes the direction of the paragraph it comes from.
        self._paragraphs = [
            (p, shaping.base_level(p) if p.strip() else self.base) for p in paragraphs
        ]
        if len({base for _, base in self._paragraphs}) == 1:
            self._paragraphs = []
        runs = shaping.font_runs(text)
        used = {font for _, _, font in runs} or {0}
        script_fonts = fonts.script_fonts()
        self.ascent = max(script_fonts[font].ascent for font in used)
        self.descent = min(script_fonts[font].descent for font in used)
        self.first = runs[0][2] if runs else 0
        self._drawn: set[int] = {self.first}
        self.char_widths: dict[str, float] = {}

    @property
    def font_name(self) -> bytes:
        """The resource name a stream selects before its first line."""
        return resource_name(self.first)

    def encode(self, text: str) -> bytes | None:
        """Any piece of the value: the whole was checked drawable before the font was made."""
        return text.encode("utf-32-be")

    def line_base(self, line: str) -> int:
        """The direction of the paragraph ``line`` comes from (the first that holds it)."""
        for paragraph, base in self._paragraphs:
            if line in paragraph:
                return base
        return self.base

    def line_quadding(self, line: str, quadding: int) -> int:
        """Where ``line`` goes: the form's alignment (``quadding``) where it states one, else
        the side its paragraph starts from (the value's, for a text no paragraph holds)."""
        if self._aligned:
            return quadding
        return 2 if self.line_base(line) % 2 else 0

    def width(self, codes: bytes) -> float:
        line = codes.decode("utf-32-be")
        return shaping.width(line, self.line_base(line))

    def extent(self, text: str) -> tuple[float, float]:
        """The ink of ``text``'s glyphs; refused when marks stack taller than any line of
        text is (``TALLEST_EM``): no size would show them and keep the value readable."""
        top, bottom = shaping.ink(" ".join(text.split()), self.base)
        if top - bottom > TALLEST_EM:
            raise TextTooLong(
                f"its marks stack {top - bottom:.1f} em tall, more than the {TALLEST_EM:g} em "
                "any line of text takes; remove the repeated marks."
            )
        return top, bottom

    def cells(self, text: str) -> list[str]:
        """What each comb cell shows, left to right."""
        return shaping.clusters(text, self.base)

    def draw(self, codes: bytes, size: float) -> bytes:
        """The operators drawing one line at ``size`` from the current point (``Tj`` and
        ``TJ`` only, with ``Ts`` for raised marks: the line matrix stays where it was)."""
        line = codes.decode("utf-32-be")
        base = self.line_base(line)
        out = [b"/Span<</ActualText<FEFF%s>>>BDC" % line.encode("utf-16-be").hex().encode()]
        rise = 0.0
        pending = shaping.overhang(line, base)[0]  # em to move before the first glyph
        for run in shaping.visual_runs(line, base):
            subset = self._glyphs.subset(run.font)
            self._drawn.add(run.font)
            out.append(b"/%s %s Tf" % (resource_name(run.font), _number(size)))
            shown: list[bytes] = []
            for gid, advance, dx, dy, text in run.glyphs:
                code, width = subset.code(gid, text)
                if dy != rise:
                    _flush(out, shown)
                    out.append(b"%s Ts" % _number(dy * size))
                    rise = dy
                shift = pending + dx
                if abs(shift) > 5e-6:
                    shown.append(_number(-shift * 1000))
                shown.append(b"<%s>" % code.hex().encode())
                pending = advance - dx - width
            _flush(out, shown)
        if rise:
            out.append(b"0 Ts")
        out.append(b"EMC")
        return b"\n".join(out)

    def resources(self) -> bytes:
        """The ``/Font`` entries a stream drawn with this font needs."""
        return b"".join(
            b"/%s %d 0 R" % (resource_name(font), self._glyphs.subset(font).refs.font)
            for font in sorted(self._drawn)
        )


def _flush(out: list[bytes], shown: list[bytes]) -> None:
    if shown:
        out.append(b"[%s]TJ" % b" ".join(shown))
        shown.clear()


def _number(value: float) -> bytes:
    text = b"%.2f" % value
    return b"0" if text in (b"0.00", b"-0.00") else text.rstrip(b"0").rstrip(b".")
