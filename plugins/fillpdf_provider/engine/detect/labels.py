"""Labels and names: the printed text a field belongs to, and a column-friendly name from it.

A label is looked for where forms put it: inside the cell above the writing space, on the
same line to the left, on the line above, or (for signature lines) just below. Names are
snake_case words of the label, without line numbers, numbered only to break ties.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable

from fillpdf_provider.engine.detect.fields import Candidate
from fillpdf_provider.engine.detect.page import Box, Line

MAX_NAME = 40
_LEADING_NUMBER = re.compile(r"^(?:\(?[0-9]{1,3}[a-z]?\)?[.:]?|\(?[a-z]\)|[a-z][.)])\s+", re.I)
_DOT_LEADERS = re.compile(r"(?:\s*\.){3,}.*$")
_WORD = re.compile(r"[0-9a-z]+")
_LEADING_FILLER = frozenset({"your", "the", "please", "enter", "print", "type", "any", "this"})


class LabelIndex:
    """Text lines sorted by top, to find the text around a box quickly."""

    def __init__(self, lines: list[Line]) -> None:
        self.lines = sorted(lines, key=lambda line: line.top)
        self.tops = [line.top for line in self.lines]
        self._cut: dict[tuple[int, bool], list[tuple[float, str, float]]] = {}

    def phrases(self, line: Line, *, in_order: bool = False) -> list[tuple[float, str, float]]:
        """``phrases_with_end`` of one of the index's lines, cut once: every field on the
        page asks about the lines near it."""
        key = (id(line), in_order)
        cut = self._cut.get(key)
        if cut is None:
            cut = self._cut[key] = phrases_with_end(line, in_order=in_order)
        return cut

    def near(self, top: float, bottom: float) -> list[Line]:
        lo = bisect.bisect_left(self.tops, top)
        hi = bisect.bisect_right(self.tops, bottom)
        return self.lines[lo:hi]

    def label_for(self, cand: Candidate) -> str | None:
        return self.label_and_place(cand)[0]

    def label_and_place(self, cand: Candidate) -> tuple[str | None, str]:
        """The label and where it was found: right, left, inside, above, far-left, below."""
        _x0, top, _x1, bottom = cand.box
        height = bottom - top
        tries: tuple[tuple[str, Callable[[], str | None]], ...]
        if cand.kind in ("checkbox", "radio"):
            tries = (
                ("right", lambda: self.right_of(cand.box)),
                ("left", lambda: self.left_of(cand.box, 160)),
            )
        else:
            tries = (
                ("inside", lambda: self._inside_top(cand.box)),
                ("left", lambda: self.left_of(cand.box, 48)),
                ("above", lambda: self.above(cand.box, max(10.0, min(height, 16.0)))),
                ("far-left", lambda: self.left_of(cand.box, 220)),
                ("below", lambda: self._below(cand.box)),
            )
        for place, find in tries:
            text = find()
            if text:
                return text, place
        return None, ""

    def right_of(self, box: Box) -> str | None:
        _x0, top, x1, bottom = box
        middle = (top + bottom) / 2
        best = None
        for line in self.near(top - 12, bottom + 2):
            for word_start, text, _word_end in self.phrases(line):
                if not wordy(text):
                    continue
                beside = line.top - 2 <= middle <= line.bottom + 2 and 0 <= word_start - x1 <= 40
                if beside and (best is None or word_start < best[0]):
                    best = (word_start, text)
        return best[1] if best else None

    def left_of(self, box: Box, reach: float) -> str | None:
        x0, top, _x1, bottom = box
        middle = top + 0.6 * (bottom - top)
        best = None
        for line in self.near(top - 30, bottom + 2):
            if not line.top - 3 <= middle <= line.bottom + 6:
                continue
            for _word_start, text, word_end in self.phrases(line):
                if not wordy(text):
                    continue  # "+", "=", "$": signs between the boxes, not their labels
                gap = x0 - word_end
                if -2 <= gap <= reach and (best is None or gap < best[0]):
                    best = (gap, text)
        return best[1] if best else None

    def above(self, box: Box, reach: float) -> str | None:
        x0, top, x1, _bottom = box
        best = None
        for line in self.near(top - reach - 20, top + 2):
            if not top - reach - 2 <= line.bottom <= top + 3:
                continue
            if line.x1 < x0 - 4 or line.x0 > x0 + 0.6 * (x1 - x0) or not wordy(line.text):
                continue
            distance = top - line.bottom
            if best is None or distance < best[0]:
                best = (distance, line.text)
        return best[1] if best else None

    def _inside_top(self, box: Box) -> str | None:
        x0, top, x1, _bottom = box
        for line in self.near(top - 14, top + 2):
            just_above = line.bottom <= top + 1.5 and top - line.bottom <= 12
            if just_above and x0 - 4 <= line.x0 < x0 + 0.5 * (x1 - x0) and wordy(line.text):
                return line.text
        return None

    def _below(self, box: Box) -> str | None:
        x0, _top, x1, bottom = box
        for line in self.near(bottom - 1, bottom + 12):
            if x0 - 4 <= line.x0 <= x0 + 0.5 * (x1 - x0) and wordy(line.text):
                return line.text
        return None


def wordy(text: str) -> bool:
    """Whether ``text`` has a letter or a digit: signs and box glyphs name nothing."""
    return any(c.isalnum() for c in text)


def phrases_with_end(line: Line, *, in_order: bool = False) -> list[tuple[float, str, float]]:
    """A line cut where words stand far apart (label columns share a baseline).

    Each phrase is (start x, text, end x): labels are read from it, and the variants look
    for the blank after each phrase. ``in_order`` reads the words left to right, as a
    person does, rather than in the order the page draws them.
    """
    phrases: list[tuple[float, str, float]] = []
    words = sorted(line.words, key=lambda w: w.x0) if in_order else line.words
    start = 0
    for i in range(1, len(words) + 1):
        if i == len(words) or words[i].x0 - words[i - 1].x1 > 1.2 * words[i].size:
            chunk = words[start:i]
            phrases.append((chunk[0].x0, " ".join(w.text for w in chunk), chunk[-1].x1))
            start = i
    return phrases


def snake(label: str | None, *, drop_filler: bool = True) -> str:
    """``"1a Your first name and initial"`` -> ``"first_name_and_initial"``.

    ``drop_filler=False`` keeps a leading "your", "this"...: "This year" after a row's
    label says which year.
    """
    if not label:
        return ""
    text = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode("ascii")
    text = _DOT_LEADERS.sub("", text).strip()
    for _ in range(2):
        text = _LEADING_NUMBER.sub("", text)
    words = _WORD.findall(text.lower())
    while drop_filler and len(words) > 1 and words[0] in _LEADING_FILLER:
        words = words[1:]
    name = ""
    for word in words:
        candidate = f"{name}_{word}" if name else word
        if len(candidate) > MAX_NAME:
            break
        name = candidate
    if name and name[0].isdigit():
        name = f"line_{name}"  # a label that is only a line number: "4(c)" -> line_4_c
    return name


def unique_names(bases: list[str]) -> list[str]:
    """Names made unique in order: the first keeps its name, ties get ``_2``, ``_3``."""
    seen: dict[str, int] = {}
    taken = set(bases)
    names = []
    for base in bases:
        count = seen.get(base, 0) + 1
        seen[base] = count
        name = base if count == 1 else f"{base}_{count}"
        while count > 1 and name in taken:
            count += 1
            seen[base] = count
            name = f"{base}_{count}"
        taken.add(name)
        names.append(name)
    return names
