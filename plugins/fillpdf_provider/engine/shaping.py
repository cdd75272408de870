"""Text in any script laid out as a reader expects it: a font for each run of script, the
Unicode bidirectional algorithm for the order of the runs, HarfBuzz for the glyphs.

Arabic letters take their joined forms, Devanagari vowel signs move and consonants form
conjuncts, Thai and Arabic marks sit on their letters; in a right-to-left value, digits and
Latin words keep their own order. Levels come from python-bidi's implementation of the
algorithm (``bidi.algorithm``); the order of runs on a line is rule L2, applied per line
after wrapping, with the direction of the paragraph the line comes from.

python-bidi, HarfBuzz and the script fonts are loaded only for the first value that needs
them: text that Helvetica, the form's fonts or Noto Sans draw as it is (Latin, Greek,
Cyrillic without combining marks) never pays for shaping.
"""

from __future__ import annotations

import importlib
import os
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from fillpdf_provider.engine import fonts

#: Code points whose text needs shaping or reordering: Hebrew, Arabic, Syriac, Thaana, N'Ko
#: and their supplements; the Indic scripts; Thai, Lao, Tibetan, Myanmar, Khmer; the
#: Hebrew and Arabic presentation forms; the historic right-to-left blocks.
SHAPED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0590, 0x08FF),
    (0x0900, 0x0DFF),
    (0x0E00, 0x0FFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0xFB1D, 0xFDFF),
    (0xFE70, 0xFEFF),
    (0x10800, 0x10FFF),
    (0x1E800, 0x1EFFF),
)
#: Characters that never need a glyph of their own: layout turns them into breaks or spaces.
_CONTROLS = frozenset("\n\r\t")
#: A glyph as drawn: glyph id, advance, x and y offset (per 1 pt), the text it stands for.
Glyph = tuple[int, float, float, float, str]
#: Right-to-left letters, and the controls that set a direction (embeddings, overrides,
#: isolates and their ends): text with any of them must be ordered, even if all Latin.
_DIRECTED = frozenset({"R", "AL", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


def needs_layout(text: str) -> bool:
    """Whether ``text`` has characters that must be shaped or reordered to read right: a
    script of ``SHAPED_RANGES``, a right-to-left letter, or a combining mark (placed on its
    letter by the font's own positioning, or composed with it, in any script)."""
    if text.isascii():
        return False
    return any(_shaped(ord(c)) for c in text if ord(c) >= 0x0300)


@lru_cache(maxsize=8192)
def _shaped(code: int) -> bool:
    if any(lo <= code <= hi for lo, hi in SHAPED_RANGES):
        return True
    char = chr(code)
    kind = unicodedata.bidirectional(char)
    return kind in _DIRECTED or unicodedata.category(char) in ("Mn", "Me")


def missing(text: str) -> str:
    """The characters of ``text`` that no font shaped text is drawn with has (empty if
    none); invisible format characters (joiners, direction marks) need no glyph."""
    setting = _setting()
    return "".join(
        sorted({c for c in text if _font_of(c, None, setting) is None and not _ignorable(c)})
    )


def _setting() -> str:
    """The user's fonts as set now: what the cached layouts below depend on, besides text."""
    return os.environ.get(fonts.FONTS_ENV, "")


@lru_cache(maxsize=8192)
def _ignorable(char: str) -> bool:
    return char in _CONTROLS or unicodedata.category(char) == "Cf"


@lru_cache(maxsize=65536)
def _font_of(char: str, previous: int | None, setting: str) -> int | None:
    """The font a character is drawn with: the run's font for a mark, digit, space or
    punctuation it has (so a run is not split by what every script shares), else the first
    font with a glyph for it."""
    script_fonts = fonts.script_fonts()
    code = ord(char)
    if previous is not None and _shared(char) and code in script_fonts[previous].cmap:
        return previous
    for index, font in enumerate(script_fonts):
        if code in font.cmap:
            return index
    if previous is not None and _ignorable(char):
        return previous
    return None


def _shared(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in "MNPZ" or category == "Cf"


def font_runs(text: str) -> list[tuple[int, int, int]]:
    """``text`` cut into runs of one font: (start, end, font index in ``script_fonts()``)."""
    runs: list[tuple[int, int, int]] = []
    previous: int | None = None
    setting = _setting()
    for index, char in enumerate(text):
        font = _font_of(char, previous, setting)
        if font is None:
            font = previous if previous is not None else 0
        if runs and font == runs[-1][2]:
            runs[-1] = (runs[-1][0], index + 1, font)
        else:
            runs.append((index, index + 1, font))
        previous = font
    return runs


def base_level(text: str) -> int:
    """The paragraph's level (0: left to right, 1: right to left) from its first strong
    character outside isolates, as rules P2 and P3 say."""
    level: int = _bidi().get_base_level(_outside_isolates(text))
    return level


def _outside_isolates(text: str) -> str:
    """``text`` without what its isolates hold: rule P2 looks past them."""
    if not any("\u2066" <= c <= "\u2068" for c in text):
        return text
    kept, depth = [], 0
    for char in text:
        if "\u2066" <= char <= "\u2068":
            depth += 1
        elif char == "\u2069" and depth:
            depth -= 1
        elif not depth:
            kept.append(char)
    return "".join(kept)


@cache
def _bidi() -> Any:
    """python-bidi's implementation of the algorithm, step by step (its levels are needed,
    not only its reordered string)."""
    return importlib.import_module("bidi.algorithm")


#: The isolates of Unicode 6.3 as the embeddings the algorithm's implementation knows (LRI
#: as LRE, RLI as RLE, PDI as PDF; FSI by its first strong character): text between them
#: takes the direction they say, as it did before isolates were defined.
_ISOLATES = str.maketrans({0x2066: 0x202A, 0x2067: 0x202B, 0x2069: 0x202C})


@lru_cache(maxsize=4096)
def levels(line: str, base: int) -> tuple[int, ...]:
    """Each character's embedding level on a line of a paragraph at ``base``: rules X1-I2,
    then L1 (whitespace at the line's end goes back to the paragraph's level)."""
    if not line:
        return ()
    embedded = _without_isolates(line)
    try:
        resolved = _resolved_levels(embedded, base)
    except (AssertionError, KeyError, IndexError, ValueError):
        resolved = None  # a sequence the implementation cannot take: strong types alone
    found = _with_removed(embedded, resolved, base) if resolved is not None else None
    if found is None:
        found = [_strong_level(char, base) for char in line]
    end = len(line)
    while end and unicodedata.bidirectional(line[end - 1]) in ("WS", "B", "S", "BN"):
        end -= 1
        found[end] = base
    return tuple(found)


def _resolved_levels(line: str, base: int) -> list[int]:
    algorithm = _bidi()
    storage = algorithm.get_empty_storage()
    storage["base_level"] = base
    storage["base_dir"] = ("L", "R")[base]
    algorithm.get_embedding_levels(line, storage)
    algorithm.explicit_embed_and_overrides(storage)
    algorithm.resolve_weak_types(storage)
    algorithm.resolve_neutral_types(storage, False)
    algorithm.resolve_implicit_levels(storage, False)
    return [int(char["level"]) for char in storage["chars"]]


#: The classes rule X9 removes: embeddings, overrides, their end and boundary neutrals.
_X9_REMOVED = frozenset({"RLE", "LRE", "RLO", "LRO", "PDF", "BN"})


def _with_removed(line: str, resolved: list[int], base: int) -> list[int] | None:
    """``resolved`` (the levels of the characters X9 kept) for every character of
    ``line``: a removed one takes its neighbour's level, as X9's note suggests (it draws
    nothing either way); None if the counts disagree."""
    kept = [i for i, char in enumerate(line) if unicodedata.bidirectional(char) not in _X9_REMOVED]
    if len(kept) != len(resolved):
        return None
    at = dict(zip(kept, resolved, strict=True))
    found: list[int] = []
    previous = resolved[0] if resolved else base  # (what leads takes the first kept level)
    for index in range(len(line)):
        previous = at.get(index, previous)
        found.append(previous)
    return found


def _without_isolates(line: str) -> str:
    if not any("\u2066" <= c <= "\u2069" for c in line):
        return line
    chars = list(line.translate(_ISOLATES))
    for index, char in enumerate(chars):
        if char == "\u2068":  # FSI: the direction of the first strong character after it
            chars[index] = "\u202a"
            for later in chars[index + 1 :]:
                kind = unicodedata.bidirectional(later)
                if kind in ("L", "R", "AL") or later == "\u202c":
                    chars[index] = "\u202b" if kind in ("R", "AL") else "\u202a"
                    break
    return "".join(chars)


def _strong_level(char: str, base: int) -> int:
    """Rule I1 and I2 on strong types alone, for a line the implementation cannot take."""
    kind = unicodedata.bidirectional(char)
    if kind in ("R", "AL"):
        return 1
    return 2 * base if kind == "L" else base


@dataclass(frozen=True)
class Run:
    """A piece of a line in one font and one direction, shaped: its glyphs left to right."""

    font: int
    level: int
    text: str
    glyphs: tuple[Glyph, ...]

    @property
    def width(self) -> float:
        return sum(glyph[1] for glyph in self.glyphs)


def logical_runs(line: str, base: int) -> tuple[Run, ...]:
    """The line's runs in the order they are read, each shaped."""
    return _logical_runs(line, base, _setting())


@lru_cache(maxsize=4096)
def _logical_runs(line: str, base: int, setting: str) -> tuple[Run, ...]:
    line_levels = levels(line, base)
    runs: list[Run] = []
    for start, end, font in font_runs(line):
        at = start
        while at < end:
            level = line_levels[at]
            stop = at + 1
            while stop < end and line_levels[stop] == level:
                stop += 1
            text = line[at:stop]
            runs.append(Run(font, level, text, _shape(font, text, level % 2 == 1, setting)))
            at = stop
    return tuple(runs)


def visual_runs(line: str, base: int) -> list[Run]:
    """The line's runs left to right (``visual_order``)."""
    runs = logical_runs(line, base)
    return [runs[index] for index in visual_order([run.level for run in runs])]


def visual_order(levels: list[int]) -> list[int]:
    """The indexes of pieces at ``levels``, left to right: rule L2 reverses, from the highest
    level down to the lowest odd one, every sequence at that level or higher."""
    order = list(range(len(levels)))
    if not levels:
        return order
    highest = max(levels)
    lowest_odd = min((level for level in levels if level % 2), default=highest + 1)
    for level in range(highest, lowest_odd - 1, -1):
        index = 0
        while index < len(order):
            if levels[order[index]] >= level:
                stop = index
                while stop < len(order) and levels[order[stop]] >= level:
                    stop += 1
                order[index:stop] = order[index:stop][::-1]
                index = stop
            else:
                index += 1
    return order


def width(line: str, base: int) -> float:
    """The line's width per 1 pt, as shaped, ink that reaches past its first or last
    advance included (see ``overhang``)."""
    before, after = overhang(line, base)
    return before + sum(run.width for run in logical_runs(line, base)) + after


def overhang(line: str, base: int) -> tuple[float, float]:
    """How far the line's ink reaches left of its start and right of its last advance, per
    1 pt: an Arabic letter's stroke or a Thai mark can, and a box sized by advances alone
    would clip it. The line is drawn that far in from its start, so its ink fills exactly
    its ``width``."""
    left, right, _, _ = _ink_box(line, base, _setting())
    return left, right


def ink(line: str, base: int) -> tuple[float, float]:
    """(top, bottom) of the line's glyphs' outlines per 1 pt, marks' offsets included."""
    _, _, top, bottom = _ink_box(line, base, _setting())
    return top, bottom


@lru_cache(maxsize=4096)
def _ink_box(line: str, base: int, setting: str) -> tuple[float, float, float, float]:
    """The outlines' reach per 1 pt: past the line's start and its end (``overhang``), above
    and below the baseline (``ink``)."""
    script_fonts = fonts.script_fonts()
    pen, left, right, top, bottom = 0.0, 0.0, 0.0, 0.0, 0.0
    for run in visual_runs(line, base):
        g = script_fonts[run.font]
        scale = 1 / g.units_per_em
        for gid, advance, dx, dy, _ in run.glyphs:
            x_min, x_max = g.horizontal(gid)
            y_min, y_max = g.vertical(gid)
            if x_max > x_min:
                left = min(left, pen + dx + x_min * scale)
                right = max(right, pen + dx + x_max * scale)
            if y_max > y_min:
                top, bottom = max(top, y_max * scale + dy), min(bottom, y_min * scale + dy)
            pen += advance
    return -left, max(0.0, right - pen), top, bottom


def clusters(text: str, base: int) -> list[str]:
    """``text``'s characters with their marks (what one comb cell holds), left to right as
    they are seen: a right-to-left value's first letter in the rightmost cell."""
    pieces: list[tuple[str, int]] = []
    line_levels = levels(text, base)
    for index, char in enumerate(text):
        if pieces and (unicodedata.category(char)[0] == "M" or char in "\u200c\u200d"):
            pieces[-1] = (pieces[-1][0] + char, pieces[-1][1])
        else:
            pieces.append((char, line_levels[index]))
    return [pieces[index][0] for index in visual_order([level for _, level in pieces])]


@lru_cache(maxsize=16384)
def _shape(font: int, text: str, rtl: bool, setting: str) -> tuple[Glyph, ...]:
    """HarfBuzz's glyphs for ``text`` in one font and direction, left to right, each with
    the characters it stands for (what a copy of the text reads)."""
    hb = _harfbuzz()
    buffer = hb.Buffer()
    buffer.add_str(text)
    buffer.guess_segment_properties()
    buffer.direction = "rtl" if rtl else "ltr"
    # Clusters of characters, not graphemes: a vowel sign moved before its consonant keeps
    # its own cluster, so it reads back as itself.
    buffer.cluster_level = hb.BufferClusterLevel.CHARACTERS
    hb.shape(_hb_font(font, setting), buffer, {})
    infos, positions = buffer.glyph_infos, buffer.glyph_positions
    g = fonts.script_fonts()[font]
    scale = 1 / g.units_per_em
    texts = _glyph_texts(text, [(i.codepoint, i.cluster) for i in infos], g)
    return tuple(
        (
            info.codepoint,
            position.x_advance * scale,
            position.x_offset * scale,
            position.y_offset * scale,
            texts[index],
        )
        for index, (info, position) in enumerate(zip(infos, positions, strict=True))
    )


def _glyph_texts(text: str, glyphs: list[tuple[int, int]], g: Any) -> list[str]:
    """What each glyph stands for: a cluster of one glyph, all of the cluster's characters
    (a joined form, a ligature); of several, each glyph the character it is the plain glyph
    of, the others the characters left, in order (a vowel sign drawn before its consonant
    reads as itself)."""
    starts = sorted({cluster for _, cluster in glyphs})
    ends = dict(zip(starts, [*starts[1:], len(text)], strict=True))
    members: dict[int, list[int]] = {}
    for index, (_, cluster) in enumerate(glyphs):
        members.setdefault(cluster, []).append(index)
    texts = [""] * len(glyphs)
    for cluster, indexes in members.items():
        chars = text[cluster : ends[cluster]]
        if len(indexes) == 1:
            texts[indexes[0]] = chars
            continue
        left = list(chars)
        for index in indexes:
            gid = glyphs[index][0]
            plain = next((c for c in left if g.cmap.get(ord(c)) == gid), None)
            if plain is not None:
                texts[index] = plain
                left.remove(plain)
        rest = [index for index in indexes if not texts[index]]
        for index in rest[:-1]:
            if left:
                texts[index] = left.pop(0)
        if rest and left:
            texts[rest[-1]] = "".join(left)
        elif left:  # every glyph is a plain one: the last takes what is left
            texts[indexes[-1]] += "".join(left)
    return texts


@cache
def _harfbuzz() -> Any:
    return importlib.import_module("uharfbuzz")


@lru_cache(maxsize=64)
def _hb_font(font: int, setting: str) -> Any:
    """A HarfBuzz font for ``script_fonts()[font]``, at its own units (no scaling)."""
    hb = _harfbuzz()
    face = hb.Face(hb.Blob(fonts.script_fonts()[font].data))
    return hb.Font(face)
