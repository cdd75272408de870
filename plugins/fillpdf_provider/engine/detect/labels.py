"""Labels and names: the printed text a field belongs to, and a column-friendly name from it.

A label is looked for where forms put it: inside the cell above the writing space, on the
same line to the left, on the line above, or (for signature lines) just below. Names are
snake_case words of the label, without line numbers, numbered only to break ties. A label
too long for a name gives up its articles first, then ends where a phrase ends, so that
the name still says what the field is.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence

from fillpdf_provider.engine.detect.fields import Candidate
from fillpdf_provider.engine.detect.page import Box, Line

MAX_NAME = 40
#: How far left of a box (pt) a label on its line may end.
FAR_LEFT = 220.0
#: How far left of a box (pt) a label beside it ends.
BESIDE = 48.0
#: How far right of a tick box (pt) the option it offers starts.
BUTTON_LABEL_GAP = 40.0
#: A box at most this many times as high as a line of its label's text is one line high.
ONE_LINE = 4.0
#: A label of more words than this over a writing area is an instruction, not its name.
INSTRUCTION_WORDS = 6
#: A heading that names a box has at most this many words.
HEADING_WORDS = 4
#: How many lines up, over an instruction, a heading is looked for.
HEADING_LINES = 3
#: A heading's print is at least this much larger than its instruction's.
HEADING_SIZE = 1.1
_LEADING_NUMBER = re.compile(r"^(?:\(?[0-9]{1,3}[a-z]?\)?[.:]?|\(?[a-z]\)|[a-z][.)])\s+", re.I)
_DOT_LEADERS = re.compile(r"(?:\s*\.){3,}.*$")
#: A word, or a sign that ends a clause: a comma, a colon, a bracket, a question mark.
_TOKEN = re.compile(r"(?P<word>[0-9a-z]+)|(?P<stop>[,;:?!()\[\]]|\s[-/]\s|\.(?=\s|$))")
#: Two letters in a row: text that names something, not a line number ("3.a.", "83c").
_NAMING_WORD = re.compile(r"[^\W\d_]{2}")
_LEADING_FILLER = frozenset({"your", "the", "please", "enter", "print", "type", "any", "this"})
#: Words a name too long can do without: they carry no meaning of their own.
_SPARE = frozenset(
    {"a", "an", "the", "any", "all", "each", "every", "this", "these", "those", "please"}
    | {"your", "my", "our", "their", "his", "her", "its"}
)
#: Words a phrase goes on with: a name cut just before one of them ends a whole phrase.
_JOINERS = frozenset(
    {"of", "for", "to", "in", "on", "at", "by", "with", "from", "about", "into", "per"}
    | {"and", "or", "but", "if", "as", "than", "because", "including", "except"}
    | {"who", "whom", "whose", "which", "that", "where", "when", "while"}
)
#: Words a clause goes on with: "... information | has been changed", "... like | us to".
_VERBS_AND_PERSONS = frozenset(
    {"do", "does", "did", "is", "are", "was", "were", "be", "been", "have", "has", "had"}
    | {"you", "we", "they", "it", "i", "us", "will", "would", "can", "could", "should"}
    | {"may", "must", "not", "so"}
)
#: Words a cut name must not end on: it would stop in the middle of a phrase.
_WEAK_END = _SPARE | _JOINERS | _VERBS_AND_PERSONS | {"no"}


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
        height = cand.box[3] - cand.box[1]
        tries: tuple[tuple[str, Callable[[], str | None]], ...]
        if cand.kind in ("checkbox", "radio"):
            tries = (
                ("right", lambda: self.right_of(cand.box)),
                ("left", lambda: self.left_of(cand.box, 160)),
            )
        else:
            tries = (
                ("inside", lambda: self._inside_top(cand.box)),
                ("left", lambda: self.left_of(cand.box, BESIDE)),
                ("above", lambda: self.above(cand.box, _above_reach(height))),
                ("far-left", lambda: self.left_of(cand.box, FAR_LEFT)),
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

    def _lines_beside(self, box: Box) -> Iterator[Line]:
        """The lines a label beside ``box`` may be printed on: those that hold its middle
        (a little below half its height, where a line's text sits in a box)."""
        _x0, top, _x1, bottom = box
        middle = top + 0.6 * (bottom - top)
        for line in self.near(top - 30, bottom + 2):
            if line.top - 3 <= middle <= line.bottom + 6:
                yield line

    def left_of(self, box: Box, reach: float) -> str | None:
        x0 = box[0]
        best = None
        for line in self._lines_beside(box):
            for _word_start, text, word_end in self.phrases(line):
                if not wordy(text):
                    continue  # "+", "=", "$": signs between the boxes, not their labels
                gap = x0 - word_end
                if -2 <= gap <= reach and (best is None or gap < best[0]):
                    best = (gap, text)
        return best[1] if best else None

    def own_line(self, box: Box, others: Sequence[Box], buttons: Sequence[Box] = ()) -> str | None:
        """The label printed beside ``box`` on its own line (as near as ``left_of`` looks
        first), that no other field claims: none of the ``others`` stands between the
        two, it is not the option printed after one of the ``buttons``, and it is more
        than a line number. A box of several lines' height has no one line of its own."""
        x0, top, _x1, bottom = box
        best = None
        for line in self._lines_beside(box):
            if bottom - top > ONE_LINE * (line.bottom - line.top):
                continue
            found = self._beside_on_line(line, x0, others, buttons)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        return best[1] if best else None

    def _beside_on_line(
        self, line: Line, x0: float, others: Sequence[Box], buttons: Sequence[Box]
    ) -> tuple[float, str] | None:
        """The nearest phrase of ``line`` ending just before ``x0`` that names the field:
        with no other field between, and not the option a tick box before it offers."""
        on_line = [o for o in others if o[1] < line.bottom and o[3] > line.top]
        ticks = [b for b in buttons if b[1] < line.bottom and b[3] > line.top]
        best = None
        for word_start, text, word_end in self.phrases(line):
            gap = x0 - word_end
            if not -2 <= gap <= BESIDE or not _NAMING_WORD.search(text):
                continue
            if any(o[0] < x0 and o[2] > word_end - 2 for o in on_line):
                continue  # another field stands between this text and the box
            if any(0 <= word_start - b[2] <= BUTTON_LABEL_GAP for b in ticks):
                continue  # the option a tick box before it offers
            if best is None or gap < best[0]:
                best = (gap, text)
        return best

    def line_above(self, box: Box, place: str) -> Line | None:
        """The line a label found ``inside`` or ``above`` the box was read from."""
        if place == "inside":
            return self._inside_top_line(box)
        if place == "above":
            return self._above_line(box, _above_reach(box[3] - box[1]))
        return None

    def heading_over(self, line: Line, box: Box, others: Sequence[Box] = ()) -> str | None:
        """A short heading printed over ``line`` and the lines of its paragraph, in the
        column of ``box``: "Comments" over "Tell us anything else you would like us
        to know". A heading is printed larger than the paragraph, and no field of the
        ``others`` sits on its line (options such as "Yes No" are no heading). None when
        the paragraph has none."""
        x0, _top, x1, _bottom = box
        size = max(w.size for w in line.words)
        below = line
        for _ in range(HEADING_LINES):
            height = below.bottom - below.top
            nearest = None
            for other in self.near(below.top - 2.5 * height - 20, below.top):
                gap = below.top - other.bottom
                in_column = other.x0 < x1 and other.x1 > x0 - 4 and other.x0 >= x0 - 40
                stacked = 0 <= gap <= 1.5 * height and in_column and wordy(other.text)
                if stacked and (nearest is None or gap < nearest[0]):
                    nearest = (gap, other)
            if nearest is None:
                return None
            below = nearest[1]
            if short_heading(below.text):
                larger = max(w.size for w in below.words) >= HEADING_SIZE * size
                alone = not any(o[1] < below.bottom and o[3] > below.top for o in others)
                return below.text if larger and alone else None
        return None

    def above(self, box: Box, reach: float) -> str | None:
        line = self._above_line(box, reach)
        return line.text if line else None

    def _above_line(self, box: Box, reach: float) -> Line | None:
        x0, top, x1, _bottom = box
        best = None
        for line in self.near(top - reach - 20, top + 2):
            if not top - reach - 2 <= line.bottom <= top + 3:
                continue
            if line.x1 < x0 - 4 or line.x0 > x0 + 0.6 * (x1 - x0) or not wordy(line.text):
                continue
            distance = top - line.bottom
            if best is None or distance < best[0]:
                best = (distance, line)
        return best[1] if best else None

    def _inside_top(self, box: Box) -> str | None:
        line = self._inside_top_line(box)
        return line.text if line else None

    def _inside_top_line(self, box: Box) -> Line | None:
        x0, top, x1, _bottom = box
        for line in self.near(top - 14, top + 2):
            just_above = line.bottom <= top + 1.5 and top - line.bottom <= 12
            if just_above and x0 - 4 <= line.x0 < x0 + 0.5 * (x1 - x0) and wordy(line.text):
                return line
        return None

    def _below(self, box: Box) -> str | None:
        x0, _top, x1, bottom = box
        for line in self.near(bottom - 1, bottom + 12):
            if x0 - 4 <= line.x0 <= x0 + 0.5 * (x1 - x0) and wordy(line.text):
                return line.text
        return None


def _above_reach(height: float) -> float:
    """How far above a box of ``height`` its label may end."""
    return max(10.0, min(height, 16.0))


def instruction(text: str) -> bool:
    """Whether ``text`` reads as an instruction (a sentence telling what to write, or its
    last line) rather than a label naming what is written."""
    words = len(text.split())
    return words > INSTRUCTION_WORDS or (words > 1 and text.rstrip().endswith("."))


def short_heading(text: str) -> bool:
    """Whether ``text`` is a heading a box can be named after: a few words, no sentence."""
    words = text.split()
    return 0 < len(words) <= HEADING_WORDS and not text.rstrip().endswith(".") and wordy(text)


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
    words = _words_and_stops(text.lower())
    while drop_filler and len(words) > 1 and words[0][0] in _LEADING_FILLER:
        words = words[1:]
    name = "_".join(word for word, _stop in _fit(words))
    if name and name[0].isdigit():
        name = f"line_{name}"  # a label that is only a line number: "4(c)" -> line_4_c
    return name


Token = tuple[str, bool]  # a word of a label, and whether a clause ends after it


def _words_and_stops(text: str) -> list[Token]:
    """The words of ``text``, each marked when a clause ends right after it."""
    words: list[Token] = []
    for token in _TOKEN.finditer(text):
        if token.group("word"):
            words.append((token.group("word"), False))
        elif words:
            words[-1] = (words[-1][0], True)
    return words


def _length(words: list[Token]) -> int:
    return sum(len(word) for word, _stop in words) + max(0, len(words) - 1)


def _fit(words: list[Token]) -> list[Token]:
    """At most ``MAX_NAME`` characters of ``words``, cut where the meaning stays whole.

    "Do you have any unspent criminal convictions?" loses "any" rather than its last word.
    Then the name ends with a clause that fills at least half of it ("Home address (number
    and street). If you have..."), else where a phrase ends, before "of", "if", "has"...
    ("Name of employer if self-employed..."). Only when no phrase ends in reach is it cut
    between words, and never after "of", "the", "you".
    """
    if _length(words) <= MAX_NAME:
        return words
    if 2 * sum(len(word) == 1 for word, _stop in words) > len(words):
        return words[: _fitting(words)]  # letter-spaced print: no words to weigh
    kept = words[:1]
    for word, stop in words[1:]:
        if word in _SPARE:
            if stop:  # the clause still ends here
                kept[-1] = (kept[-1][0], True)
            continue
        kept.append((word, stop))
    if _length(kept) <= MAX_NAME:
        return kept
    fits = _fitting(kept)
    if fits == 0:
        return []  # one word longer than a name: no word of a label
    ends = [n for n in range(fits, 1, -1) if kept[n - 1][0] not in _WEAK_END]
    for end in ends:
        if kept[end - 1][1] and 2 * _length(kept[:end]) >= MAX_NAME:
            return kept[:end]  # a clause ends here
    for end in ends:
        if kept[end][0] in _JOINERS | _VERBS_AND_PERSONS:
            return kept[:end]  # a phrase ends here
    return kept[: ends[0]] if ends else kept[:fits]


def _fitting(words: list[Token]) -> int:
    """How many of the first ``words`` fit in a name."""
    fits = 0
    while fits < len(words) and _length(words[: fits + 1]) <= MAX_NAME:
        fits += 1
    return fits


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
