"""Which column fills which field: one rule for ``fill``, ``batch``, the operators, the DAG
and the input check.

A column fills the field of its name, or of its name with case, spaces and punctuation set
aside (``Full Name`` fills ``full_name``, ``E-mail`` fills ``email``), or the field a
mapping names (``{"signer": "signature_name"}``; a mapping to ``""`` leaves a column out on
purpose). Fields no column fills stay as the template has them.

A column that matches no field but looks like a field no column fills (``item1_desc`` and
``item1_description``) is a mistake to fix before anything is filled: it is an error that
names the field and the mapping that fixes it. Any other column is listed once as not used
(a column the file names use counts as used); strict columns make those errors too.
A column looks like a field when the whole name is mistyped (``adress_line``) or each word
stands for one of the field's (``item1_desc``: ``desc`` abbreviates ``description``); a word
more or less (``photo``, ``photo_consent``) is another name. Suggestions pair each column with
at most one field and each field with at most one column, best first, and numbers must
agree: ``item3_desc`` is never ``item1_description``.

A column whose name matches a field another column (or the mapping) already fills is named as
such, not as matching no field. A strict error names, for each column, the unfilled fields
that fit it more loosely: its initials (``DOB``, ``date_of_birth``) or one name's words
within the other's (``Phone number``, ``phone``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from fillpdf_provider.engine.errors import FieldError, FieldValueError
from fillpdf_provider.engine.schema import Field

#: What a mapping names to leave a column out on purpose.
LEAVE_OUT = ""
#: How alike a column and a field must be (0 to 1) for the column to be taken for the field.
NEAR = 0.6
#: Problem columns named one by one in an error; the rest are counted.
SHOWN_COLUMNS = 10


def normalise(name: str) -> str:
    """A column or field name reduced to lowercase words joined by ``_``."""
    return re.sub(r"[^0-9a-z]+", "_", name.casefold()).strip("_")


def _compact(name: str) -> str:
    return normalise(name).replace("_", "")


@dataclass(frozen=True)
class ColumnPlan:
    """How the rows' columns fill a form's fields, and what is wrong with them."""

    pairs: dict[str, str]
    """Column -> the field it fills."""
    near: dict[str, str] = field(default_factory=dict)
    """Column that matches no field -> the field no column fills that it looks like."""
    not_used: list[str] = field(default_factory=list)
    """Other columns that fill nothing, in the rows' order."""
    left_out: list[str] = field(default_factory=list)
    """Columns the mapping leaves out on purpose."""
    unfilled: list[str] = field(default_factory=list)
    """Fields no column fills (those a person can fill)."""
    shadowed: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Column not used -> (the field its name matches, the column that already fills it)."""
    fits: dict[str, list[str]] = field(default_factory=dict)
    """Column not used -> the unfilled fields that fit it loosely, likeliest first."""

    def problems(
        self, *, strict: bool = False, flags: bool = False, noun: str = "column"
    ) -> list[str]:
        """One sentence per column to fix; with ``strict``, every column not used is one.
        ``flags`` words the fix as the command line's ``--map``, else as ``mapping=``;
        ``noun`` is what the rows' names are (``key`` for a JSON object's)."""
        lines = []
        for column, field_name in self.near.items():
            lines.append(
                f"{noun} {column!r} matches no field but looks like {field_name!r}, which no "
                f"{noun} fills: map it ({_map(column, field_name, flags)}), rename the "
                f"{noun}, or map it to nothing ({_map(column, LEAVE_OUT, flags)}) to leave "
                "it out"
            )
        if strict:
            lines.extend(self._not_used_problem(c, flags, noun) for c in self.not_used)
        return lines

    def _not_used_problem(self, column: str, flags: bool, noun: str) -> str:
        """A strict error's sentence for a column not used: what it matches, the unfilled
        fields that fit it, and the mapping that leaves it out."""
        leave = f"or to nothing ({_map(column, LEAVE_OUT, flags)}) to leave it out"
        if column in self.shadowed:
            field_name, filler = self.shadowed[column]
            return (
                f"{noun} {column!r} matches {field_name!r}, which {noun} {filler!r} already "
                f"fills (strict columns): map it to another field "
                f"({_map(column, 'FIELD', flags)}) {leave}"
            )
        fits = self.fits.get(column)
        if fits:
            names = ", ".join(map(repr, fits[:-1])) + " or " * (len(fits) > 1) + repr(fits[-1])
            maps = " or ".join(_map(column, f, flags) for f in fits)
            return (
                f"{noun} {column!r} matches no field (strict columns) but fits {names}, which "
                f"no {noun} fills: map it ({maps}) {leave}"
            )
        return (
            f"{noun} {column!r} matches no field (strict columns): map it to a field "
            f"({_map(column, 'FIELD', flags)}) {leave}"
        )

    @property
    def fills_nothing(self) -> bool:
        """No column fills a field, nor is left out on purpose: every PDF would be blank."""
        return not self.pairs and not self.left_out

    def check(self, *, strict: bool = False, flags: bool = False, noun: str = "column") -> None:
        """Raise ``ColumnError`` naming every column to fix (before anything is filled)."""
        if self.problems(strict=strict):
            raise ColumnError(self, strict=strict, flags=flags, noun=noun)

    def not_used_note(self, noun: str = "column") -> str | None:
        """``columns not used (they match no field): a, b`` (listed once), and each column
        whose field another already fills, or None."""
        plain = [c for c in self.not_used if c not in self.shadowed]
        parts = [f"{noun}s not used (they match no field): " + ", ".join(plain)] if plain else []
        for column, (field_name, filler) in self.shadowed.items():
            parts.append(
                f"{noun} {column!r} not used: it matches {field_name!r}, which {noun} "
                f"{filler!r} already fills"
            )
        return "; ".join(parts) or None


class ColumnError(FieldError):
    """Columns that look like fields but fill none, or (strict) columns that fill nothing."""

    def __init__(
        self, plan: ColumnPlan, *, strict: bool = False, flags: bool = False, noun: str = "column"
    ) -> None:
        self.plan, self.strict, self.noun = plan, strict, noun
        super().__init__(self.worded(flags), param="mapping")

    def worded(self, flags: bool) -> str:
        """The message, its fixes as ``--map`` flags or as ``mapping=``: one column's on one
        line; several, a line each after the first (at most ``SHOWN_COLUMNS``, the rest
        counted)."""
        problems = self.plan.problems(strict=self.strict, flags=flags, noun=self.noun)
        after = "Nothing was filled. `fillpdf inspect FORM.pdf` lists the fields."
        if len(problems) == 1:
            return f"{problems[0]}. {after}"
        lines = [f"{len(problems)} {self.noun}s to fix. {after}"]
        lines += [f"  {problem}" for problem in problems[:SHOWN_COLUMNS]]
        more = len(problems) - SHOWN_COLUMNS
        if more > 0:
            lines.append(f"  and {more} more {self.noun}s")
        return "\n".join(lines)


def no_column_matches(plan: ColumnPlan) -> FieldError:
    """The error of rows none of whose columns fills a field: every PDF would be blank.

    One line naming the columns, each with the field it looks like where one does.
    """
    columns = [*plan.near, *plan.not_used]
    parts = []
    for column in columns[:SHOWN_COLUMNS]:
        part = f"column {column!r} matches no field"
        guesses = [plan.near[column]] if column in plan.near else plan.fits.get(column, [])
        if guesses:
            part += f" (did you mean {' or '.join(map(repr, guesses))}?)"
        parts.append(part)
    more = len(columns) - SHOWN_COLUMNS
    listed = "; ".join(parts) + (f"; and {more} more columns" if more > 0 else "")
    return FieldError(
        f"No column of the rows matches a field of the form, so every PDF would be blank: "
        f"{listed}. Name the columns after the fields, or map them to the fields "
        "(`fillpdf inspect FORM.pdf` lists them).",
        param="rows",
    )


def _map(column: str, field_name: str, flags: bool) -> str:
    if flags:
        return f"--map '{column}={field_name}'"
    return f"mapping={{{column!r}: {field_name!r}}}"


def plan_columns(
    columns: Sequence[str],
    fields: Sequence[Field],
    mapping: Mapping[str, str | None] | None = None,
    *,
    used: Collection[str] = (),
    noun: str = "column",
) -> ColumnPlan:
    """Pair ``columns`` with ``fields`` by the rule above; ``used`` names columns put to
    another use (the file names), which are neither filled from nor reported. ``noun`` is
    what an error calls a column (``key``: the names of a JSON object of values)."""
    pairs, left_out = _mapped_pairs(columns, {f.name for f in fields}, mapping, noun)
    _match_by_name(columns, fields, pairs, skip=set(left_out))
    taken = set(pairs.values())
    open_fields = [f for f in fields if not f.read_only and f.name not in taken]
    skip = set(pairs) | set(left_out) | set(used)
    unmatched = [c for c in columns if c not in skip]
    near, not_used, shadowed, fits = _unmatched(unmatched, fields, open_fields, pairs)
    unfilled = [f.name for f in open_fields]
    return ColumnPlan(pairs, near, not_used, left_out, unfilled, shadowed, fits)


def _unmatched(
    columns: Sequence[str],
    fields: Sequence[Field],
    open_fields: Sequence[Field],
    pairs: Mapping[str, str],
) -> tuple[dict[str, str], list[str], dict[str, tuple[str, str]], dict[str, list[str]]]:
    """What the columns that fill nothing are: near an open field (``suggest``), or not used;
    of those, whose field another column fills, and the open fields each may stand for
    (``loose_fits``)."""
    shadowed = _shadowed(columns, fields, pairs)
    near = suggest([c for c in columns if c not in shadowed], open_fields)
    not_used = [c for c in columns if c not in near]
    free = [f for f in open_fields if f.name not in near.values()]
    return near, not_used, shadowed, _fits([c for c in not_used if c not in shadowed], free)


def _fits(columns: Sequence[str], fields: Sequence[Field]) -> dict[str, list[str]]:
    """Column -> the fields it may stand for (``loose_fits``), where there are any."""
    found = {column: loose_fits(column, fields) for column in columns}
    return {column: names for column, names in found.items() if names}


def _shadowed(
    columns: Sequence[str], fields: Sequence[Field], pairs: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """Column -> (the field its name matches, the column that fills that field instead)."""
    filled_by = {field_name: column for column, field_name in pairs.items()}
    shadowed = {}
    for column in columns:
        for match in (_by_name, _by_normalised_name, _by_compact_name):
            found = match(column, fields, set())
            if found is not None:
                if found in filled_by:
                    shadowed[column] = (found, filled_by[found])
                break
    return shadowed


def _match_by_name(
    columns: Sequence[str], fields: Sequence[Field], pairs: dict[str, str], skip: set[str]
) -> None:
    """Add to ``pairs`` each column that fills a field by name: as written first, then
    normalised, then with every separator set aside (each field filled once)."""
    taken = set(pairs.values())
    for match in (_by_name, _by_normalised_name, _by_compact_name):
        for column in columns:
            if column in pairs or column in skip:
                continue
            found = match(column, fields, taken)
            if found is not None:
                pairs[column] = found
                taken.add(found)


def _mapped_pairs(
    columns: Sequence[str],
    names: set[str],
    mapping: Mapping[str, str | None] | None,
    noun: str = "column",
) -> tuple[dict[str, str], list[str]]:
    """The pairs an explicit mapping (column -> field) makes, each checked, and the columns
    it leaves out."""
    check_mapping(mapping, names)
    holder = "values" if noun == "key" else "rows"
    pairs: dict[str, str] = {}
    left_out: list[str] = []
    for column, field_name in (mapping or {}).items():
        if column not in columns:
            guess = difflib.get_close_matches(column, list(columns), n=1, cutoff=0.6)
            hint = f"; did you mean {guess[0]!r}?" if guess else "."
            raise FieldError(
                f"the mapping names a {noun} {column!r} the {holder} lack{hint} The "
                f"{holder}' {noun}s: {', '.join(columns[:20])}.",
                param="mapping",
            )
        if field_name is None or field_name == LEAVE_OUT:
            left_out.append(column)
            continue
        pairs[column] = field_name
    _refuse_doubles(pairs)
    return pairs, left_out


def _refuse_doubles(pairs: Mapping[str, str]) -> None:
    """A mapping that fills one field from two columns is refused: which would win?"""
    fields = list(pairs.values())
    doubled = sorted({f for f in fields if fields.count(f) > 1})
    if doubled:
        columns_of = [c for c, f in pairs.items() if f == doubled[0]]
        raise FieldError(
            f"the mapping fills {doubled[0]!r} from {len(columns_of)} columns "
            f"({', '.join(map(repr, columns_of))}); map one column to each field.",
            param="mapping",
        )


def check_mapping(mapping: Mapping[str, str | None] | None, names: Collection[str]) -> None:
    """A mapping to a field the form lacks is refused, with the closest field name."""
    for column, field_name in (mapping or {}).items():
        if field_name and field_name not in names:
            guess = difflib.get_close_matches(field_name, sorted(names), n=1, cutoff=0.6)
            hint = f"; did you mean {guess[0]!r}?" if guess else "."
            raise FieldValueError(
                field_name,
                f"the mapping {{{column!r}: {field_name!r}}} names a field the form does not "
                f"have{hint} `fillpdf inspect FORM.pdf` lists the fields.",
            )


def _by_name(column: str, fields: Sequence[Field], taken: set[str]) -> str | None:
    return column if column not in taken and any(f.name == column for f in fields) else None


def _by_normalised_name(column: str, fields: Sequence[Field], taken: set[str]) -> str | None:
    return _only(column, fields, taken, normalise)


def _by_compact_name(column: str, fields: Sequence[Field], taken: set[str]) -> str | None:
    return _only(column, fields, taken, _compact)


def _only(
    column: str, fields: Sequence[Field], taken: set[str], key: Callable[[str], str]
) -> str | None:
    """The one field not yet taken whose name is the column's under ``key``."""
    wanted = key(column)
    found = [f.name for f in fields if f.name not in taken and key(f.name) == wanted]
    return found[0] if len(found) == 1 and wanted else None


def suggest(columns: Sequence[str], fields: Sequence[Field]) -> dict[str, str]:
    """Column -> the field it most looks like, each field for at most one column, best
    first; a column as like two fields as each other gets neither, and so does a field two
    columns are as like (a coin toss misleads). Signature fields are no one's: people sign."""
    targets = [f for f in fields if f.type != "signature"]
    scored = [
        (score, column, name) for column in columns for score, name in _likely(column, targets)
    ]
    tied = _tied_fields(scored)
    chosen: dict[str, str] = {}
    for _score, column, name in sorted(scored, key=lambda s: (-s[0], s[1], s[2])):
        if column not in chosen and name not in {*chosen.values(), *tied}:
            chosen[column] = name
    return {c: chosen[c] for c in columns if c in chosen}


def _tied_fields(scored: Sequence[tuple[float, str, str]]) -> set[str]:
    """The fields two columns are as like as each other, at their best."""
    tops: dict[str, list[float]] = {}
    for score, _column, name in scored:
        tops.setdefault(name, []).append(score)
    return {n for n, scores in tops.items() if sorted(scores)[-2:] == [max(scores)] * 2}


def _likely(column: str, fields: Sequence[Field]) -> list[tuple[float, str]]:
    """The fields ``column`` is near, likeliest first; none where the likeliest two tie."""
    scores = sorted(((similarity(column, f.name), f.name) for f in fields), key=lambda s: -s[0])
    scores = [s for s in scores if s[0] >= NEAR]
    tie = len(scores) > 1 and scores[1][0] == scores[0][0]
    return [] if tie else scores


#: Fields a strict error suggests for one column.
SHOWN_FITS = 3
#: Words an initialism may leave out (``DOB``, ``date_of_birth``; ``DB`` too).
_SMALL_WORDS = frozenset({"a", "and", "at", "by", "for", "in", "of", "on", "or", "the", "to"})


def loose_fits(column: str, fields: Sequence[Field]) -> list[str]:
    """The fields ``column`` may stand for, likeliest first (at most ``SHOWN_FITS``): those
    it looks like, those whose initials it is (``DOB``: ``date_of_birth``), and those whose
    words all stand within its own, or its within theirs (``Phone number``: ``phone``).
    Looser than ``suggest``: a hint in an error, never a match."""
    scored = []
    for order, f in enumerate(fields):
        if f.type == "signature":
            continue
        near = similarity(column, f.name)
        score = max(near if near >= NEAR else 0.0, _loose_likeness(column, f.name))
        if score > 0:
            scored.append((-score, order, f.name))
    return [name for _score, _order, name in sorted(scored)[:SHOWN_FITS]]


def _loose_likeness(column: str, field_name: str) -> float:
    """0.8 for an initialism of the other name; up to 0.7 when one name's words all stand
    within the other's; else 0. Numbers must agree."""
    a, b = _words(column), _words(field_name)
    if not a or not b or _numbers(a) != _numbers(b):
        return 0.0
    if _initials(a, b) or _initials(b, a):
        return 0.8
    short, long = sorted((a, b), key=len)
    if len(short) < len(long) and _within(short, long):
        return 0.4 + 0.3 * len(short) / len(long)
    return 0.0


def _within(short: list[str], long: list[str]) -> bool:
    """Each word of ``short`` is a word of ``long``, or its start (``tel``, ``telephone``),
    each used once."""
    left = list(long)
    for word in short:
        found = next((w for w in left if _word_likeness(word, w) >= 0.9), None)
        if found is None:
            return False
        left.remove(found)
    return True


def _initials(short: list[str], long: list[str]) -> bool:
    """``short`` is one word of three letters or more: the initials of ``long``'s words,
    with or without its small words."""
    if len(short) != 1 or len(short[0]) < 3 or not short[0].isalpha():
        return False
    every = "".join(w[0] for w in long if w.isalpha())
    content = "".join(w[0] for w in long if w.isalpha() and w not in _SMALL_WORDS)
    return short[0] in (every, content)


_WORDS = re.compile(r"[a-z]+|[0-9]+")


def similarity(column: str, field_name: str) -> float:
    """How alike two names are, 0 to 1, as a person reads them: by their words (one may
    abbreviate the other: ``desc``, ``qty``), and never alike when their numbers differ."""
    a, b = _words(column), _words(field_name)
    if not a or not b or _numbers(a) != _numbers(b):
        return 0.0
    short = min(len(_compact(column)), len(_compact(field_name)))
    whole = difflib.SequenceMatcher(None, _compact(column), _compact(field_name)).ratio()
    if whole >= 0.85 and short >= 5:  # the whole name, mistyped: adress_line, address_line
        return whole
    return _word_for_word(a, b)


def _numbers(words: list[str]) -> list[str]:
    return sorted(w for w in words if w.isdigit())


def _word_for_word(a: list[str], b: list[str]) -> float:
    """How well each word of ``a`` stands for one of ``b``'s, or 0 if one does not: a word
    more or less is another name (``photo``, ``photo_consent``), and so is a word that
    stands for none (``unit``, ``item``)."""
    weights = _matched_words(a, b) if len(a) == len(b) else []
    return sum(weights) / len(a) if len(weights) == len(a) else 0.0


def _words(name: str) -> list[str]:
    """The name's words and numbers; a lone letter joins the word after it (``e-mail``)."""
    words: list[str] = []
    for word in _WORDS.findall(name.casefold()):
        if words and len(words[-1]) == 1 and words[-1].isalpha() and word.isalpha():
            words[-1] += word
        else:
            words.append(word)
    return words


def _matched_words(a: list[str], b: list[str]) -> list[float]:
    """How well each word of ``a`` that stands for a word of ``b`` does so, each used once."""
    left = list(b)
    weights = []
    for word in a:
        best, weight = None, 0.0
        for other in left:
            w = _word_likeness(word, other)
            if w > weight:
                best, weight = other, w
        if best is not None:
            left.remove(best)
            weights.append(weight)
    return weights


def _word_likeness(a: str, b: str) -> float:
    if a == b:
        return 1.0
    if a.isdigit() or b.isdigit():
        return 0.0
    short, long = sorted((a, b), key=len)
    if len(short) >= 3 and long.startswith(short):
        return 0.9  # desc, description
    if len(short) >= 3 and short[0] == long[0] and _in_order(short, long):
        return 0.75  # qty, quantity; adress, address
    if len(short) >= 4 and difflib.SequenceMatcher(None, a, b).ratio() >= 0.8:
        return 0.75  # a typo: adderss, address
    return 0.0


def _in_order(short: str, long: str) -> bool:
    """Every letter of ``short`` in ``long``, in order."""
    letters = iter(long)
    return all(letter in letters for letter in short)
