#!/usr/bin/env python3
"""Fill the real-world forms of ``../shared/corpus/wild`` and check what a person would see.

The 53 forms come from PDF libraries' test suites and were picked because they are hard to fill
(see the corpus README). For every form and every filler (ours, pypdf, PyMuPDF):

1. The fields are listed from the widgets on the pages (``kits.viewcheck.visible_widgets``),
   and every field a user could fill gets a value: text in several scripts (sized to the box),
   a long text for multiline fields, exactly ``MaxLen`` characters for comb fields, a date in
   the field's own format, checkboxes on, one option of each radio group and choice field.
   Our engine gets its values in the form its own ``inspect`` offers (``Template.fields``):
   a field on the page that ``inspect`` does not offer counts as not filled.
2. The output is checked as ``qpdf --check`` does (qpdf, else pikepdf's port of it).
3. ``/NeedAppearances`` is dropped and only the existing appearance streams are baked into the
   pages (PDFium). A text, date or choice value is visible when its characters are drawn inside
   every visible widget of the field; a value whose glyphs stick out of the widget by more than
   0.5 pt is drawn past its box. A switched-on checkbox or radio button must gain ink against the
   same output with every button off, and the other buttons of its group must not.

Run it from the repository root with the bench virtualenv (``make .venv-bench/.installed``)::

    .venv-bench/bin/python benchmarks/wild_eval.py
    .venv-bench/bin/python benchmarks/wild_eval.py --fillers ours --forms pdfbox --out -
    .venv-bench/bin/python benchmarks/wild_eval.py --json out/wild.json --check

The measuring pieces (``reference_slots``, ``FILLERS``, ``evaluate_form``...) are importable:
``from benchmarks.wild_eval import evaluate_form``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.fill_bench import (  # noqa: E402
    INK_MIN_PIXELS,
    INK_SHARE,
    _contains,
    _expected_texts,
    _short,
    fill_pypdf_naive,
)
from benchmarks.machine import Report, machine_info  # noqa: E402
from kits import viewcheck as vc  # noqa: E402

DEFAULT_FORMS = REPO_ROOT.parent / "shared" / "corpus" / "wild" / "forms"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "wild_eval.txt"

#: Text values, one per text field in turn: Latin, accented Latin, Cyrillic, Greek.
TEXTS = ("Lot 42", "Müller-Lüdenscheid Ærø", "Жанна Дементьева", "Αθηνά Παπαδοπούλου")
#: Words of the long multiline text, in the same scripts.
LONG_TEXT = (
    "Delivery to Müller-Lüdenscheid Ærø via Жанна Дементьева and Αθηνά Παπαδοπούλου before "
    "noon on the second Tuesday of each month lot 42 gate 7"
)
LONG_WORDS = tuple(LONG_TEXT.split(" "))
#: Characters of comb values, repeated to exactly MaxLen.
COMB_CHARS = "A1B2C3D4E5F6G7H8J9K0"
DATE = dt.date(2024, 3, 14)
#: A glyph box past the widget's rectangle by more than this (pt) is drawn past its box.
OVERFLOW_PT = 0.5
#: Text drawn smaller than this (pt) cannot be read: not visible.
MIN_LEGIBLE_PT = 3.0
#: A list box shows its choice highlighted: this share of the chosen line's band is not white.
HIGHLIGHT_SHARE = 0.5
HIGHLIGHT_LEVEL = 235
#: A switched-on button's pixel counts as changed when a colour channel moved this much.
INK_DELTA = 60

# Field flags (/Ff), PDF 32000-1 tables 221, 226, 228 and 230.
FF_READ_ONLY = 1 << 0
FF_MULTILINE = 1 << 12
FF_PASSWORD = 1 << 13
FF_FILE_SELECT = 1 << 20
FF_COMB = 1 << 24
FF_EDIT = 1 << 18

#: --check: what our engine must reach.
GATES = {"refused": 0, "qpdf_errors": 0, "text": 99.5, "choice": 99.5, "buttons": 99.5}
GATE_OVERFLOW_PCT = 0.2

Values = dict[str, Any]
Widget = vc.Widget

_AF_DATE = re.compile(r"AFDate_Format(?:Ex)?\(\s*\"([^\"]*)\"")
_SIMPLE_DATE = re.compile(r"^(?:yyyy|yy|mm|m|dd|d)(?:[./ -](?:yyyy|yy|mm|m|dd|d))*$")


# ------------------------------------------------------------------ the reference plan


@dataclass(frozen=True)
class Slot:
    """One field a user could fill, read from the widgets, and the value the README asks for.

    ``kind``: text, multiline, comb, date, choice, list, checkbox or radio. ``value``: the text,
    the chosen export value (radio, choice) or on-state (checkbox). ``state``: the on-state
    name of the chosen button. ``on_all`` / ``on_any`` / ``off``: positions in ``widgets``
    that must all show ink, of which one must, and that must stay off.
    """

    name: str
    kind: str
    widgets: tuple[Widget, ...]
    value: str
    state: str | None = None
    on_all: tuple[int, ...] = ()
    on_any: tuple[int, ...] = ()
    off: tuple[int, ...] = ()
    refs: tuple[int | None, ...] = ()
    """Object numbers of the widgets, where they are indirect objects."""

    @property
    def chosen_refs(self) -> tuple[int, ...]:
        """Object numbers of the buttons to switch on."""
        return tuple(
            ref
            for i, ref in enumerate(self.refs)
            if ref is not None and (i in self.on_all or i in self.on_any)
        )


def widget_refs(reader: Any) -> dict[tuple[int, tuple[float, ...]], int]:
    """``(page, rect) -> object number`` of the widget annotations (matched as viewcheck
    normalises rectangles)."""
    refs: dict[tuple[int, tuple[float, ...]], int] = {}
    for index, page in enumerate(reader.pages):
        for ref in page.get("/Annots") or []:
            annot = ref.get_object()
            if not hasattr(ref, "idnum") or not hasattr(annot, "get") or "/Rect" not in annot:
                continue
            x0, y0, x1, y1 = (float(v) for v in annot["/Rect"])
            rect = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
            refs.setdefault((index, rect), ref.idnum)
    return refs


def _chain(annot: Any) -> Iterable[Any]:
    """A widget and its parents (cycle-safe): for attributes viewcheck does not read."""
    seen: set[int] = set()
    node = annot
    while node is not None and id(node) not in seen and len(seen) < 64:
        node = node.get_object()
        seen.add(id(node))
        yield node
        node = node.get("/Parent")


def max_lengths(reader: Any) -> dict[str, int]:
    """``/MaxLen`` (inherited through any number of parents) of every widget's field."""
    out: dict[str, int] = {}
    for page in reader.pages:
        for ref in page.get("/Annots") or []:
            annot = ref.get_object()
            if not hasattr(annot, "get") or annot.get("/Subtype") != "/Widget":
                continue
            for node in _chain(annot):
                if "/MaxLen" in node:
                    with contextlib.suppress(TypeError, ValueError):
                        out.setdefault(vc.qualified_name(annot), int(node["/MaxLen"]))
                    break
    return out


def date_format(widgets: Sequence[Widget]) -> str | None:
    """The ``AFDate_FormatEx`` format of a field, if it has one."""
    for widget in widgets:
        found = _AF_DATE.search(widget.format_js or "")
        if found:
            return found.group(1)
    return None


def date_value(af_format: str | None) -> str | None:
    """A date in ``af_format`` when that is made of d/m/y parts only, else ``None``."""
    if not af_format or not _SIMPLE_DATE.match(af_format):
        return None
    parts = {
        "yyyy": f"{DATE.year:04d}",
        "yy": f"{DATE.year % 100:02d}",
        "mm": f"{DATE.month:02d}",
        "m": str(DATE.month),
        "dd": f"{DATE.day:02d}",
        "d": str(DATE.day),
    }
    return re.sub(r"yyyy|yy|mm|m|dd|d", lambda m: parts[m.group(0)], af_format)


def _font_size(widgets: Sequence[Widget]) -> float:
    """The ``/DA`` size; for auto size (or none) a legible size for the box's height."""
    size = widgets[0].font_size
    if size:
        return abs(size)
    x0, y0, x1, y1 = widgets[0].rect
    return min(12.0, max(6.0, 0.6 * min(x1 - x0, y1 - y0)))


def _room(widgets: Sequence[Widget], size: float) -> int:
    """How many average characters fit along the box at ``size`` (the longer side: rotated
    widgets have tall rectangles)."""
    x0, y0, x1, y1 = widgets[0].rect
    return int((max(x1 - x0, y1 - y0) - 4) // (0.55 * size))


def sized_text(widgets: Sequence[Widget], turn: int, max_len: int | None) -> str:
    """Value ``turn`` of ``TEXTS`` (the scripts take turns), sized to the box.

    Whole when it fits at the ``/DA`` size (a legible size when that is auto), else its
    first word, else cut to what fits (one character at least); never past ``MaxLen``.
    """
    room = max(1, _room(widgets, _font_size(widgets)))
    if max_len:
        room = min(room, max_len)
    text = TEXTS[turn % len(TEXTS)]
    for candidate in (text, text.split(" ")[0]):
        if len(candidate) <= room:
            return candidate
    return text[:room]


def long_text(widgets: Sequence[Widget], max_len: int | None) -> str:
    """A long multi-word text that fits the box at its size (at most 160 chars)."""
    x0, y0, x1, y1 = widgets[0].rect
    size = _font_size(widgets)
    lines = max(1, int((y1 - y0 - 4) // (size * 1.25)))
    per_line = max(1, int((x1 - x0 - 4) // (size * 0.55)))
    room = min(160, max(1, int(lines * per_line * 0.7)))
    if max_len:
        room = min(room, max_len)
    words: list[str] = []
    for word in LONG_WORDS * 4:
        if len(" ".join([*words, word])) > room:
            break
        words.append(word)
    return " ".join(words) if words else LONG_WORDS[0][:room]


def comb_text(length: int) -> str:
    """Exactly ``length`` characters, digits and letters."""
    return (COMB_CHARS * (length // len(COMB_CHARS) + 1))[:length]


def _pick(options: Sequence[str], current: Iterable[str | None] = ()) -> str:
    """The second option if there are several, else the first.

    Unless the form already holds it: then the next one it does not hold (else a check could
    not tell a fill from an untouched form).
    """
    held = set(current)
    order = [1, 0, *range(2, len(options))] if len(options) > 1 else [0]
    for index in order:
        if options[index] not in held:
            return options[index]
    return options[order[0]]


def current_values(widgets: Sequence[Widget]) -> set[str]:
    """What a field holds now: its ``/V`` (lines of a multi-select), and for buttons also
    the export value of the widget that shows it."""
    held: set[str] = set()
    for widget in widgets:
        if widget.value is not None:
            held.update(widget.value.split("\n"))
    for widget, export in zip(widgets, _exports(widgets), strict=True):
        if export is not None and widget.field_type == "Btn" and set(widget.on_states) & held:
            held.add(export)
    return held


def _exports(widgets: Sequence[Widget]) -> list[str | None]:
    """Each button widget's export value: its ``/Opt`` entry, else its on-state name."""
    out: list[str | None] = []
    for pos, widget in enumerate(widgets):
        index = widget.kid_index if widget.kid_index is not None else pos
        if widget.opt and 0 <= index < len(widget.opt):
            out.append(widget.opt[index][0])
        else:
            out.append(widget.on_states[0] if widget.on_states else None)
    return out


def button_targets(
    widgets: Sequence[Widget], chosen: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``(on_all, on_any, off)`` when the widgets at ``chosen`` are the chosen option.

    Widgets of the same on-state name go on together (a viewer shows ``/AS`` = ``/V``); one
    option carried by widgets of different states (repeated ``/Opt`` values) needs one on.
    """
    states = {widgets[i].on_states[:1] for i in chosen}
    off = tuple(i for i in range(len(widgets)) if i not in chosen)
    if len(states) <= 1:
        return tuple(chosen), (), off
    return (), tuple(chosen), off


def reference_slots(pdf: bytes | Any) -> list[Slot]:
    """Every field a user could fill and the value the corpus README gives it.

    Left out: read-only, password, file-select and signature fields (hidden widgets and
    pushbuttons never come out of ``visible_widgets``), and choice fields with no option
    that cannot take typed text.
    """
    reader = vc.open_pdf(pdf)
    widgets = vc.visible_widgets(reader)
    lengths = max_lengths(reader)
    refs = widget_refs(reader)
    slots: list[Slot] = []
    turn = 0
    for name, ws in vc.widgets_by_name(widgets).items():
        first = ws[0]
        flags = first.field_flags
        if flags & FF_READ_ONLY or first.field_type in ("Sig", ""):
            continue
        group = tuple(ws)
        if first.field_type == "Tx":
            if flags & (FF_PASSWORD | FF_FILE_SELECT):
                continue
            max_len = lengths.get(name)
            af = date_format(ws)
            if flags & FF_COMB and max_len and not flags & FF_MULTILINE:
                slots.append(Slot(name, "comb", group, comb_text(max_len)))
            elif flags & FF_MULTILINE:
                slots.append(Slot(name, "multiline", group, long_text(ws, max_len)))
            elif af is not None:
                text = date_value(af) or sized_text(ws, turn, max_len)
                turn += date_value(af) is None
                slots.append(Slot(name, "date", group, text))
            else:
                slots.append(Slot(name, "text", group, sized_text(ws, turn, max_len)))
                turn += 1
        elif first.field_type == "Ch":
            options = [
                export for export, display in first.opt or () if vc.squash(display or export)
            ]
            kind = "choice" if first.is_combo else "list"
            if options:
                slots.append(Slot(name, kind, group, _pick(options, current_values(ws))))
            elif first.is_combo and flags & FF_EDIT:
                slots.append(Slot(name, kind, group, sized_text(ws, turn, None)))
                turn += 1
        elif first.field_type == "Btn":
            ids = tuple(refs.get((w.page, w.rect)) for w in ws)
            exports = _exports(ws)
            distinct = list(dict.fromkeys(e for e in exports if e is not None))
            states = {w.on_states[:1] for w in ws}
            if not first.is_radio and len(states) <= 1:
                chosen = tuple(range(len(ws)))
                state = first.on_states[0] if first.on_states else "Yes"
                targets = button_targets(ws, chosen)
                slots.append(Slot(name, "checkbox", group, state, state, *targets, refs=ids))
                continue
            if not distinct:
                continue
            value = _pick(distinct, current_values(ws))
            chosen = tuple(i for i, e in enumerate(exports) if e == value)
            state = ws[chosen[0]].on_states[0] if ws[chosen[0]].on_states else value
            kind = "radio" if first.is_radio else "checkbox"
            targets = button_targets(ws, chosen)
            slots.append(Slot(name, kind, group, value, state, *targets, refs=ids))
    return slots


# ------------------------------------------------------------------------ checks


@dataclass
class Check:
    """One value to look for in a filler's output: where, what text, which buttons lit."""

    name: str
    kind: str
    value: str
    widgets: tuple[Widget, ...]
    expected: frozenset[str] = frozenset()
    on_all: tuple[int, ...] = ()
    on_any: tuple[int, ...] = ()
    off: tuple[int, ...] = ()
    failure: str | None = None
    """Failed before the output is looked at (e.g. not offered by ``inspect``)."""
    note: str | None = None
    """Worth knowing but not a failure (e.g. inspect names options unlike the widgets)."""

    @property
    def bucket(self) -> str:
        """``text`` (text, multiline, comb, date), ``choice`` or ``buttons``."""
        if self.kind in ("checkbox", "radio"):
            return "buttons"
        if self.kind in ("choice", "list"):
            return "choice"
        return "text"


def check_from_slot(slot: Slot, value: str | None = None, kind: str | None = None) -> Check:
    """What to look for when ``slot`` is filled with ``value`` (default: the slot's own)."""
    value = slot.value if value is None else value
    kind = kind or slot.kind
    expected: frozenset[str] = frozenset()
    if kind not in ("checkbox", "radio"):
        expected = frozenset(
            _expected_texts(value, slot.widgets, "choice" if kind in ("choice", "list") else kind)
        )
    return Check(slot.name, kind, value, slot.widgets, expected, slot.on_all, slot.on_any, slot.off)


def _same_rect(a: Sequence[float], b: Sequence[float], tolerance: float = 0.5) -> bool:
    return all(abs(p - q) <= tolerance for p, q in zip(a, b, strict=True))


def ours_plan(template: bytes, slots: Sequence[Slot]) -> tuple[Values, list[Check]]:
    """Our values, in the names and forms ``Template(...).fields`` offers, and their checks.

    Text and dates take the slot's text; checkboxes ``True``; a radio group or choice field
    the second of the options inspect lists (the first if there is one), and the buttons
    inspect places that option on must light up.
    """
    from fillpdf_provider.engine import Template

    offered = {f.name: f for f in Template(template).fields}
    values: Values = {}
    checks: list[Check] = []
    for slot in slots:
        f = offered.get(slot.name)
        if f is None:
            checks.append(replace_failure(check_from_slot(slot), "not offered by inspect"))
            continue
        if f.read_only:
            checks.append(replace_failure(check_from_slot(slot), "inspect says read-only"))
            continue
        if f.type in ("text", "date"):
            text = slot.value if slot.kind not in ("checkbox", "radio") else TEXTS[0]
            if slot.kind in ("choice", "list"):
                text = vc.display_text(slot.widgets, text)
            if f.max_length and len(text) > f.max_length:
                text = text[: f.max_length]
            values[f.name] = text
            kind = slot.kind if slot.kind in ("text", "multiline", "comb", "date") else "text"
            checks.append(check_from_slot(slot, text, kind))
        elif f.type == "checkbox":
            values[f.name] = True
            check = check_from_slot(slot, "on", "checkbox")
            if slot.kind != "checkbox" or slot.off:  # True on a group: any one of it may light
                check.on_all, check.on_any, check.off = (), tuple(range(len(slot.widgets))), ()
            checks.append(check)
        elif f.type == "radio":
            options = [o for o in f.options or () if o is not None]
            if not options:
                checks.append(replace_failure(check_from_slot(slot), "inspect lists no option"))
                continue
            option = _pick(options, current_values(slot.widgets))
            values[f.name] = option
            check = check_from_slot(slot, option, "radio")
            check.note = _option_note(options, _exports(slot.widgets))
            chosen = _ours_buttons(f, option, slot.widgets)
            if chosen:
                check.on_all, check.on_any, check.off = button_targets(slot.widgets, chosen)
            else:
                check.failure = f"inspect places option {option!r} on no visible widget"
            checks.append(check)
        elif f.type == "choice":
            options = [
                o for o in f.options or () if vc.squash(vc.display_text(slot.widgets, str(o)))
            ]
            if not options:
                if slot.kind in ("choice", "list"):
                    values[f.name] = slot.value
                    checks.append(check_from_slot(slot))
                else:
                    checks.append(replace_failure(check_from_slot(slot), "inspect lists no option"))
                continue
            option = _pick(options, current_values(slot.widgets))
            values[f.name] = option
            check = check_from_slot(slot, option, slot.kind)
            check.note = _option_note(f.options or (), [e for e, _ in slot.widgets[0].opt or ()])
            checks.append(check)
        else:
            checks.append(replace_failure(check_from_slot(slot), f"inspect says {f.type}"))
    return values, checks


def _option_note(offered: Sequence[str], exports: Sequence[str | None]) -> str | None:
    """A note when inspect's options are not the export values the widgets carry."""
    reference = list(dict.fromkeys(e for e in exports if e is not None))
    if not reference or set(offered) == set(reference):
        return None

    def show(values: Sequence[str]) -> str:
        return ", ".join(repr(_short_value(v, 24)) for v in values[:4]) + (
            ", ..." if len(values) > 4 else ""
        )

    return f"inspect offers {show(list(offered))}; the widgets' export values are {show(reference)}"


def _ours_buttons(f: Any, option: str, widgets: Sequence[Widget]) -> tuple[int, ...]:
    """Positions of the visible widgets that inspect puts ``option`` on."""
    if f.widgets:
        places = [(w.page, w.rect) for w in f.widgets if w.export == option]
        return tuple(
            i
            for i, widget in enumerate(widgets)
            if any(page == widget.page and _same_rect(rect, widget.rect) for page, rect in places)
        )
    return tuple(range(len(widgets)))


def replace_failure(check: Check, failure: str) -> Check:
    """``check`` marked as failed before filling."""
    check.failure = failure
    return check


def reference_plan(style: str) -> Callable[[bytes, Sequence[Slot]], tuple[Values, list[Check]]]:
    """Values as a library's docs ask for them, from the README's reference values.

    ``names`` gives buttons as PDF names with the slash (pypdf), ``bool`` gives checkboxes as
    ``True`` and radio groups and checkbox groups as the widgets to switch on (PyMuPDF: a
    ``ButtonPick``; its ``on_state()`` decodes odd state names its own way).
    """

    def plan(template: bytes, slots: Sequence[Slot]) -> tuple[Values, list[Check]]:
        values: Values = {}
        for slot in slots:
            if slot.kind in ("checkbox", "radio"):
                group = slot.kind == "radio" or bool(slot.off)
                if style == "names":
                    values[slot.name] = "/" + str(slot.state)
                else:
                    values[slot.name] = (
                        ButtonPick(str(slot.state), slot.chosen_refs) if group else True
                    )
            else:
                values[slot.name] = slot.value
        return values, [check_from_slot(slot) for slot in slots]

    return plan


# ----------------------------------------------------------------------- fillers


def fill_ours(template: bytes, values: Values) -> bytes:
    """Ours: ``Template(bytes).fill(values)``, the parse included."""
    from fillpdf_provider.engine import Template

    return Template(template).fill(values)


@dataclass(frozen=True)
class ButtonPick:
    """The buttons of a group to switch on: their on-state and object numbers."""

    state: str
    xrefs: tuple[int, ...]


def fill_pymupdf(template: bytes, values: Values) -> bytes:
    """PyMuPDF: ``widget.field_value`` + ``widget.update()``, then ``doc.tobytes()``.

    As ``fill_bench.fill_pymupdf``; for a ``ButtonPick`` the picked widgets (by xref, else by
    on-state name) are switched on, other radio buttons left alone, other checkboxes off.
    """
    import pymupdf

    doc = pymupdf.open(stream=template, filetype="pdf")
    try:
        if doc.needs_pass:
            doc.authenticate("")
        buttons = (pymupdf.PDF_WIDGET_TYPE_RADIOBUTTON, pymupdf.PDF_WIDGET_TYPE_CHECKBOX)
        for page in doc:
            for widget in page.widgets():
                if widget.field_name not in values:
                    continue
                value = values[widget.field_name]
                if widget.field_type in buttons and isinstance(value, ButtonPick):
                    on = (
                        widget.xref in value.xrefs
                        if value.xrefs
                        else widget.on_state() == value.state
                    )
                    if widget.field_type == pymupdf.PDF_WIDGET_TYPE_RADIOBUTTON and not on:
                        continue
                    widget.field_value = on
                else:
                    widget.field_value = value
                widget.update()
        return doc.tobytes()
    finally:
        doc.close()


@dataclass(frozen=True)
class Filler:
    """A way to fill a form: its values (and what to check) from the slots, and the fill."""

    key: str
    label: str
    module: str
    plan: Callable[[bytes, Sequence[Slot]], tuple[Values, list[Check]]]
    fill: Callable[[bytes, Values], bytes]


FILLERS: dict[str, Filler] = {
    "ours": Filler("ours", "ours (Template.fill)", "fillpdf_provider.engine", ours_plan, fill_ours),
    "pypdf": Filler(
        "pypdf",
        "pypdf (update_page_form_field_values)",
        "pypdf",
        reference_plan("names"),
        fill_pypdf_naive,
    ),
    "pymupdf": Filler(
        "pymupdf",
        "PyMuPDF (widget.update)",
        "pymupdf",
        reference_plan("bool"),
        fill_pymupdf,
    ),
}


def importable(module: str) -> str | None:
    """``None`` when ``module`` imports, else why not."""
    try:
        __import__(module)
    except Exception as exc:
        return f"{module} not importable: {_short(exc)}"
    return None


# ------------------------------------------------------------------ qpdf --check


def qpdf_check(pdf: bytes) -> tuple[list[str], int]:
    """``(errors, number of warnings)`` of ``qpdf --check`` (or pikepdf's port of it).

    ``([], -1)`` when neither qpdf nor pikepdf is here.
    """
    exe = shutil.which("qpdf")
    if exe:
        with tempfile.NamedTemporaryFile(suffix=".pdf") as handle:
            handle.write(pdf)
            handle.flush()
            done = subprocess.run(
                [exe, "--check", handle.name], capture_output=True, text=True, timeout=120
            )
        lines = (done.stdout + done.stderr).splitlines()
        warnings = sum(1 for line in lines if line.startswith("WARNING"))
        # (qpdf's all-clear ends "...; the file may still contain\nerrors that qpdf cannot
        # detect": only lines it starts with ERROR, and exit status 2, are errors)
        errors = [line for line in lines if line.startswith("ERROR")]
        if done.returncode == 2 and not errors:
            errors = [lines[-1] if lines else "qpdf --check failed"]
        return errors, warnings
    try:
        import pikepdf
    except ImportError:
        return [], -1
    try:
        with pikepdf.open(io.BytesIO(pdf)) as doc:
            check = getattr(doc, "check_pdf_syntax", None) or doc.check
            problems = [str(p) for p in check()]
    except Exception as exc:
        return [f"ERROR: {_short(exc)}"], 0
    warnings = [p for p in problems if p.startswith("WARNING")]
    return [p for p in problems if not p.startswith("WARNING")], len(warnings)


# ------------------------------------------------------------------ measuring


@dataclass
class Failure:
    """One value a person would not see right."""

    form: str
    field: str
    kind: str
    value: str
    reason: str


@dataclass
class FormResult:
    """One filler on one form: counts per bucket and every failure."""

    form: str
    filler: str
    seconds: float = 0.0
    refused: str | None = None
    qpdf_errors: list[str] = field(default_factory=list)
    qpdf_warnings: int = 0
    totals: dict[str, int] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    overflow: int = 0
    off_page: int = 0
    failures: list[Failure] = field(default_factory=list)
    notes: list[Failure] = field(default_factory=list)


def drop_need_appearances(pdf: bytes) -> bytes:
    """``pdf`` without ``/AcroForm /NeedAppearances`` (an incremental update, or a rewrite).

    Unchanged when there is none: PDFium must draw the filler's appearance streams, not
    make its own.
    """
    if b"NeedAppearances" not in pdf and b"/ObjStm" not in pdf:
        return pdf
    from pypdf import PdfWriter
    from pypdf.generic import NameObject

    reader = vc.open_pdf(pdf)
    acroform = reader.trailer["/Root"].get("/AcroForm")
    acroform = acroform.get_object() if acroform is not None else None
    if acroform is None or "/NeedAppearances" not in acroform:
        return pdf
    writer = PdfWriter(clone_from=reader)
    del writer.root_object["/AcroForm"].get_object()[NameObject("/NeedAppearances")]
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _point_map(page: Any) -> Callable[[float, float], tuple[float, float]]:
    """pdfplumber page coordinates -> PDF user space (the inverse of viewcheck's mapping)."""

    def to_plumber(x: float, y: float) -> tuple[float, float]:
        box = vc.user_rect_to_plumber(page, (x, y, x, y))
        return box[0], box[1]

    ox, oy = to_plumber(0.0, 0.0)
    ax, ay = to_plumber(1.0, 0.0)
    bx, by = to_plumber(0.0, 1.0)
    a, b, c, d = ax - ox, ay - oy, bx - ox, by - oy
    det = a * d - b * c

    def back(px: float, py: float) -> tuple[float, float]:
        u, v = px - ox, py - oy
        return (d * u - c * v) / det, (-b * u + a * v) / det

    return back


def widget_chars(plumber: Any, widget: Widget) -> list[dict[str, Any]]:
    """Every non-blank char the widget's own appearance draws, wherever it lands."""
    chars = vc.chars_in_rect(plumber, widget.page, widget.rect, pad=1e5, drawn_by_widget=True)
    return [c for c in chars if str(c["text"]).strip()]


@dataclass(frozen=True)
class Glyph:
    """One char as PDFium drew it: its tight box (user space) and its font."""

    char: str
    box: tuple[float, float, float, float]
    font: str
    embedded: bool


class GlyphBoxes:
    """Tight glyph boxes (PDFium, user space) of a PDF's chars, found again by text and place.

    pdfminer's char boxes run from the font's descent to one em above it, which sticks out of
    a snug box though no ink does; PDFium's tight boxes follow the glyph's own outline, and a
    char whose font has no glyph for it (or that no font here can draw) gets a flat box.
    """

    def __init__(self, pdf: bytes) -> None:
        import pypdfium2 as pdfium

        self._doc = pdfium.PdfDocument(pdf)
        self._pages: dict[int, dict[str, list[Glyph]]] = {}
        self._maps: dict[int, Callable[[float, float], tuple[float, float]]] = {}

    def to_user(self, plumber: Any, index: int) -> Callable[[float, float], tuple[float, float]]:
        """pdfplumber coordinates of page ``index`` -> user space (made once per page)."""
        if index not in self._maps:
            self._maps[index] = _point_map(plumber.pages[index])
        return self._maps[index]

    def page(self, index: int) -> dict[str, list[Glyph]]:
        """Every non-blank char on the page, by its text."""
        import ctypes

        import pypdfium2.raw as pdfium_c

        if index not in self._pages:
            page = self._doc[index]
            text = page.get_textpage()
            glyphs: dict[str, list[Glyph]] = {}
            fonts: dict[int, tuple[str, bool]] = {}
            for i in range(text.count_chars()):
                char = chr(pdfium_c.FPDFText_GetUnicode(text, i))
                if not char.strip():
                    continue
                font = pdfium_c.FPDFTextObj_GetFont(pdfium_c.FPDFText_GetTextObject(text, i))
                key = ctypes.cast(font, ctypes.c_void_p).value or 0
                if key not in fonts:
                    buffer = ctypes.create_string_buffer(256)
                    size = pdfium_c.FPDFFont_GetBaseFontName(font, buffer, 256) if key else 0
                    name = buffer.value.decode("latin-1") if size else "?"
                    fonts[key] = (name, bool(key and pdfium_c.FPDFFont_GetIsEmbedded(font)))
                box = tuple(text.get_charbox(i, loose=False))
                glyph = Glyph(char, box, *fonts[key])  # type: ignore[arg-type]
                glyphs.setdefault(char, []).append(glyph)
            text.close()
            page.close()
            self._pages[index] = glyphs
        return self._pages[index]

    def find(self, index: int, char: str, x: float, y: float, reach: float) -> Glyph | None:
        """The glyph of ``char`` whose centre is nearest ``(x, y)``, within ``reach`` pt."""
        best: tuple[float, Glyph | None] = (reach, None)
        for glyph in self.page(index).get(char, ()):
            box = glyph.box
            distance = max(abs((box[0] + box[2]) / 2 - x), abs((box[1] + box[3]) / 2 - y))
            if distance < best[0]:
                best = (distance, glyph)
        return best[1]

    def close(self) -> None:
        """Free the PDFium document."""
        self._doc.close()


def glyph_of(
    plumber: Any, glyphs: GlyphBoxes, widget: Widget, char: dict[str, Any]
) -> Glyph | None:
    """PDFium's glyph for a pdfplumber char, if found near its place."""
    back = glyphs.to_user(plumber, widget.page)
    cx, cy = back((char["x0"] + char["x1"]) / 2, (char["top"] + char["bottom"]) / 2)
    reach = max(2.0, float(char.get("size") or 0))
    return glyphs.find(widget.page, str(char["text"]), cx, cy, reach)


def inked(plumber: Any, glyphs: GlyphBoxes, widget: Widget, char: dict[str, Any]) -> bool:
    """The char draws a glyph: PDFium gives a char its font cannot draw a flat box
    (pdfminer, where PDFium's char is not found, a box of no advance)."""
    glyph = glyph_of(plumber, glyphs, widget, char)
    box = glyph.box if glyph else (char["x0"], char["top"], char["x1"], char["bottom"])
    return box[2] - box[0] > 0.05 and box[3] - box[1] > 0.05


def unglyphed(
    plumber: Any, glyphs: GlyphBoxes, widget: Widget, chars: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str]:
    """The chars that draw a glyph, and a note on those that do not (count and fonts)."""
    drawn = [c for c in chars if inked(plumber, glyphs, widget, c)]
    if len(drawn) == len(chars):
        return drawn, ""
    fonts = set()
    for char in chars:
        if char not in drawn:
            glyph = glyph_of(plumber, glyphs, widget, char)
            if glyph:
                fonts.add(f"{glyph.font}{'' if glyph.embedded else ' not embedded'}")
    where = f" in {', '.join(sorted(fonts))}" if fonts else ""
    return drawn, f" + {len(chars) - len(drawn)} chars without a glyph{where}"


def overflow_pt(
    plumber: Any, glyphs: GlyphBoxes, widget: Widget, chars: Sequence[dict[str, Any]]
) -> float:
    """How far (pt) the glyphs of ``chars`` reach past the widget's rectangle.

    Each char's tight PDFium box where one is found, else pdfminer's box.
    """
    if not chars:
        return 0.0
    box = vc.user_rect_to_plumber(plumber.pages[widget.page], widget.rect)
    x0, y0, x1, y1 = widget.rect
    worst = -1e9
    for c in chars:
        glyph = glyph_of(plumber, glyphs, widget, c)
        tight = glyph.box if glyph is not None else None
        if tight is not None:
            past = max(x0 - tight[0], tight[2] - x1, y0 - tight[1], tight[3] - y1)
        else:
            past = max(box[0] - c["x0"], c["x1"] - box[2], box[1] - c["top"], c["bottom"] - box[3])
        worst = max(worst, past)
    return worst


def glyph_size(char: dict[str, Any]) -> float:
    """The char's font size on the page: its box across the writing direction (pdfplumber's
    ``size`` is the box's height, the advance for text running up or down)."""
    a, b = (char.get("matrix") or (1, 0))[:2]
    return float(char["x1"] - char["x0"] if abs(b) > abs(a) else char["bottom"] - char["top"])


def _lines(chars: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Chars grouped into lines by their vertical middle (list boxes are never rotated)."""
    lines: list[list[dict[str, Any]]] = []
    for char in sorted(chars, key=lambda c: (c["top"] + c["bottom"]) / 2):
        middle = (char["top"] + char["bottom"]) / 2
        if lines and abs(middle - (lines[-1][0]["top"] + lines[-1][0]["bottom"]) / 2) < 2:
            lines[-1].append(char)
        else:
            lines.append([char])
    return lines


def list_choice_shown(
    plumber: Any, raster: Any, widget: Widget, chars: Sequence[dict[str, Any]], expected: set[str]
) -> tuple[bool, list[dict[str, Any]]]:
    """A list box shows its choice: the option's line is drawn and highlighted.

    A list box draws every option; the chosen one is the line whose band across the box is
    mostly not white (the selection colour). Returns ``(shown, chars of that line)``.
    """
    page = plumber.pages[widget.page]
    box = vc.user_rect_to_plumber(page, widget.rect)
    back = _point_map(page)
    image, posconv = raster.page(widget.page)
    image = image.convert("L")
    for line in _lines(chars):
        text = vc.squash("".join(str(c["text"]) for c in sorted(line, key=lambda c: c["x0"])))
        if not any(text == e or (e in text and len(text) <= len(e) + 2) for e in expected):
            continue
        top = min(c["top"] for c in line)
        bottom = max(c["bottom"] for c in line)
        corners = [back(x, y) for x in (box[0] + 1, box[2] - 1) for y in (top + 1, bottom - 1)]
        pixels = [posconv.to_bitmap(x, y) for x, y in corners]
        left, right = min(p[0] for p in pixels), max(p[0] for p in pixels)
        upper, lower = min(p[1] for p in pixels), max(p[1] for p in pixels)
        left, upper = max(0, int(left)), max(0, int(upper))
        right, lower = min(image.width, int(right)), min(image.height, int(lower))
        if right <= left or lower <= upper:
            continue
        histogram = image.crop((left, upper, right, lower)).histogram()
        total = sum(histogram)
        if total and sum(histogram[:HIGHLIGHT_LEVEL]) >= HIGHLIGHT_SHARE * total:
            return True, line
        return False, line
    return False, []


class ColourRaster:
    """Colour renders of a PDF's pages by PDFium, made on demand (``viewcheck.Raster`` is
    greyscale: black on blue differs there by only 29 grey levels)."""

    def __init__(self, pdf: bytes, *, scale: float = 2.0) -> None:
        import pypdfium2 as pdfium

        self.scale = scale
        self._doc = pdfium.PdfDocument(pdf)
        self._pages: dict[int, tuple[Any, Any]] = {}

    def page(self, index: int) -> tuple[Any, Any]:
        """``(PIL image in mode "RGB", PdfPosConv)`` of one page, rendered once."""
        if index not in self._pages:
            page = self._doc[index]
            bitmap = page.render(
                scale=self.scale, may_draw_forms=False, fill_color=(255, 255, 255, 255)
            )
            self._pages[index] = (bitmap.to_pil().convert("RGB"), bitmap.get_posconv(page))
        return self._pages[index]

    def close(self) -> None:
        """Free the PDFium document."""
        self._pages.clear()
        self._doc.close()


def _crop(raster: Any, widget: Widget) -> Any:
    """The widget's box on a ``ColourRaster`` render."""
    image, posconv = raster.page(widget.page)
    x0, y0, x1, y1 = widget.rect
    corners = [posconv.to_bitmap(x, y) for x in (x0, x1) for y in (y0, y1)]
    left = max(0, int(min(c[0] for c in corners)))
    upper = max(0, int(min(c[1] for c in corners)))
    right = min(image.width, int(max(c[0] for c in corners)))
    lower = min(image.height, int(max(c[1] for c in corners)))
    return image.crop((left, upper, max(left, right), max(upper, lower)))


def _gained(on: Any, off: Any, widget: Widget) -> bool:
    """The widget looks different with the output's button states than with all buttons off.

    Counted: pixels where a colour channel moved by ``INK_DELTA`` or more, either way. Not a
    count of dark pixels: an on-appearance may draw a thinner border than the off one, a
    mid-grey mark (a green dot is grey 150), a light mark on a dark background or a black dot
    on blue.
    """
    from PIL import ImageChops

    here, before = _crop(on, widget), _crop(off, widget)
    if here.size != before.size or not here.size[0] or not here.size[1]:
        return False
    red, green, blue = ImageChops.difference(before, here).split()
    changed = sum(ImageChops.lighter(ImageChops.lighter(red, green), blue).histogram()[INK_DELTA:])
    area = here.size[0] * here.size[1]
    return changed >= max(INK_MIN_PIXELS, INK_SHARE * area)


def _short_value(value: str, limit: int = 40) -> str:
    return value if len(value) <= limit else value[: limit - 3] + "..."


def measure(form: str, out: bytes, checks: Sequence[Check], result: FormResult) -> None:
    """Look at ``out`` for every check and count what a person sees into ``result``."""
    import pdfplumber

    flat = vc.flatten_with_pdfium(drop_need_appearances(out), drop_page_content=True)
    need_buttons = any(c.bucket == "buttons" and not c.failure for c in checks)
    if need_buttons:
        off_flat = vc.flatten_with_pdfium(
            drop_need_appearances(vc.buttons_off(out)), drop_page_content=True
        )
    with contextlib.ExitStack() as stack:
        plumber = stack.enter_context(pdfplumber.open(io.BytesIO(flat)))
        raster = ColourRaster(flat)
        stack.callback(raster.close)
        glyphs = GlyphBoxes(flat)
        stack.callback(glyphs.close)
        off_raster = ColourRaster(off_flat) if need_buttons else None
        if off_raster is not None:
            stack.callback(off_raster.close)
        for check in checks:
            shown = [i for i, w in enumerate(check.widgets) if w.on_page]
            if not shown:
                result.off_page += 1
                continue
            bucket = check.bucket
            result.totals[bucket] = result.totals.get(bucket, 0) + 1

            def fail(reason: str, check: Check = check) -> None:
                result.failures.append(
                    Failure(form, check.name, check.kind, _short_value(check.value), reason)
                )

            if check.note:
                result.notes.append(
                    Failure(form, check.name, check.kind, _short_value(check.value), check.note)
                )
            if check.failure:
                fail(check.failure)
                continue
            if bucket == "buttons":
                assert off_raster is not None
                lit = {i for i in shown if _gained(raster, off_raster, check.widgets[i])}
                missing = [i for i in check.on_all if i in shown and i not in lit]
                any_ok = not [i for i in check.on_any if i in shown] or any(
                    i in lit for i in check.on_any
                )
                wrong = [i for i in check.off if i in lit]
                if not missing and any_ok and not wrong:
                    result.seen[bucket] = result.seen.get(bucket, 0) + 1
                    continue
                parts = []
                if missing or not any_ok:
                    parts.append("chosen button shows no ink")
                if wrong:
                    states = ",".join(
                        "/" + (check.widgets[i].on_states or ("?",))[0] for i in wrong
                    )
                    parts.append(f"wrong button state: {len(wrong)} other button(s) on ({states})")
                fail("; ".join(parts))
                continue
            visible = True
            worst = 0.0
            seen_texts = []
            for i in shown:
                widget = check.widgets[i]
                chars = widget_chars(plumber, widget)
                if check.kind == "list":
                    lit, chars = list_choice_shown(
                        plumber, raster, widget, chars, set(check.expected)
                    )
                    drawn, note = unglyphed(plumber, glyphs, widget, chars)
                    seen = vc.squash("".join(str(c["text"]) for c in drawn))
                    ok = lit and any(_contains(seen, e) for e in check.expected)
                    text = repr(_short_value(seen)) + note
                    if not lit and chars:
                        text += ", not highlighted"
                else:
                    inside = vc.chars_in_rect(
                        plumber, widget.page, widget.rect, drawn_by_widget=True
                    )
                    drawn, note = unglyphed(plumber, glyphs, widget, inside)
                    seen = vc.squash("".join(str(c["text"]) for c in drawn))
                    ok = any(_contains(seen, e) for e in check.expected)
                    text = repr(_short_value(seen)) + note
                    if not ok and check.kind == "choice" and cut_at_edge(seen, check.expected):
                        ok = True  # a combo box shows a long option so in every viewer
                        text += ", cut at the box's edge"
                    sizes = sorted(glyph_size(c) for c in drawn)
                    if ok and sizes and sizes[len(sizes) // 2] < MIN_LEGIBLE_PT:
                        ok = False
                        text += f" at {sizes[len(sizes) // 2]:.1f} pt, too small to read"
                seen_texts.append(text)
                visible = visible and ok
                drawn_chars = [c for c in chars if inked(plumber, glyphs, widget, c)]
                worst = max(worst, overflow_pt(plumber, glyphs, widget, drawn_chars))
            if visible:
                result.seen[bucket] = result.seen.get(bucket, 0) + 1
            else:
                fail("not visible: drawn " + " | ".join(seen_texts))
            if worst > OVERFLOW_PT:
                result.overflow += 1
                fail(f"overflow by {worst:.1f} pt")


def cut_at_edge(seen: str, expected: Sequence[str]) -> bool:
    """Whether ``seen`` is the start of an option too long for its box, cut at the box's
    edge, as a combo box shows it in every viewer: the decision for choice values is to
    draw such an option from its start at the field's own size and count it as shown."""
    return bool(seen) and any(
        vc.squash(e).startswith(seen) and len(vc.squash(e)) > len(seen) for e in expected
    )


def evaluate_form(
    path: Path | str, fillers: Sequence[Filler], slots: Sequence[Slot] | None = None
) -> list[FormResult]:
    """Fill one form with each filler and measure the output (the harness's core)."""
    path = Path(path)
    template = path.read_bytes()
    if slots is None:
        slots = reference_slots(template)
    results = []
    for filler in fillers:
        result = FormResult(form=path.name, filler=filler.key)
        results.append(result)
        checks: list[Check] = [check_from_slot(slot) for slot in slots]
        start = time.perf_counter()
        try:
            values, checks = filler.plan(template, slots)
            start = time.perf_counter()
            out = filler.fill(template, values)
            if not isinstance(out, bytes | bytearray) or not bytes(out[:1024]).lstrip().startswith(
                b"%PDF"
            ):
                raise ValueError(f"not a PDF: {bytes(out[:8])!r}")
        except Exception as exc:
            result.seconds = time.perf_counter() - start
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            result.refused = f"{type(exc).__name__}: {message}"[:200]
            for check in checks:
                check.failure = "refused"
            _count_only(path.name, checks, result)
            continue
        result.seconds = time.perf_counter() - start
        errors, warnings = qpdf_check(bytes(out))
        result.qpdf_errors, result.qpdf_warnings = errors, warnings
        try:
            measure(path.name, bytes(out), checks, result)
        except Exception as exc:
            result.failures.append(
                Failure(path.name, "*", "*", "", f"output unreadable: {_short(exc)}")
            )
            for check in checks:
                check.failure = "output unreadable"
            result.totals, result.seen, result.overflow, result.off_page = {}, {}, 0, 0
            result.failures = result.failures[-1:]
            _count_only(path.name, checks, result, report=False)
    return results


def _count_only(
    form: str, checks: Sequence[Check], result: FormResult, report: bool = True
) -> None:
    """Count every check as not seen (refused or unreadable output)."""
    for check in checks:
        if not any(w.on_page for w in check.widgets):
            result.off_page += 1
            continue
        result.totals[check.bucket] = result.totals.get(check.bucket, 0) + 1
        if report and check.failure and check.failure != "refused":
            result.failures.append(
                Failure(form, check.name, check.kind, _short_value(check.value), check.failure)
            )


# ---------------------------------------------------------------------- the run


def _worker(args: tuple[str, list[str]]) -> list[dict[str, Any]]:
    """One form in a worker process: the results as plain dicts."""
    path, keys = args
    vc.quiet_pdf_logs()
    logging.getLogger("pikepdf").setLevel(logging.ERROR)
    try:
        results = evaluate_form(path, [FILLERS[k] for k in keys])
    except Exception as exc:  # the reference plan itself failed: report, do not stop the run
        return [{"form": Path(path).name, "filler": k, "harness_error": _short(exc)} for k in keys]
    return [asdict(r) for r in results]


def summarize(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals of one filler over all forms."""
    totals: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    out: dict[str, Any] = {
        "forms": len(results),
        "refused": sum(1 for r in results if r.get("refused")),
        "qpdf_errors": sum(1 for r in results if r.get("qpdf_errors")),
        "harness_errors": sum(1 for r in results if r.get("harness_error")),
        "qpdf_unchecked": sum(
            1 for r in results if not r.get("refused") and r.get("qpdf_warnings", -1) < 0
        ),
        "seconds": round(sum(r.get("seconds", 0.0) for r in results), 3),
        "off_page": sum(r.get("off_page", 0) for r in results),
    }
    for r in results:
        totals.update(r.get("totals", {}))
        seen.update(r.get("seen", {}))
    for bucket in ("text", "choice", "buttons"):
        n = totals[bucket]
        out[bucket] = {
            "n": n,
            "visible": seen[bucket],
            "pct": round(100.0 * seen[bucket] / n, 1) if n else None,
        }
    values = totals["text"] + totals["choice"]
    overflow = sum(r.get("overflow", 0) for r in results)
    out["overflow"] = {
        "n": values,
        "past_box": overflow,
        "pct": round(100.0 * overflow / values, 2) if values else None,
    }
    return out


def gate_failures(summary: dict[str, Any]) -> list[str]:
    """What keeps our engine's summary from passing ``--check``."""
    problems = []
    for key in ("refused", "qpdf_errors"):
        if summary[key] > GATES[key]:
            problems.append(f"{summary[key]} {key.replace('_', ' ')} (goal 0)")
    for bucket in ("text", "choice", "buttons"):
        pct = summary[bucket]["pct"]
        if pct is not None and pct < GATES[bucket]:
            problems.append(f"{bucket} visible {pct}% (goal >= {GATES[bucket]}%)")
    pct = summary["overflow"]["pct"]
    if pct is not None and pct > GATE_OVERFLOW_PCT:
        problems.append(f"{pct}% values past their box (goal <= {GATE_OVERFLOW_PCT}%)")
    if summary["qpdf_unchecked"]:
        problems.append(f"{summary['qpdf_unchecked']} outputs not checked (no qpdf or pikepdf)")
    if summary["harness_errors"]:
        problems.append(f"{summary['harness_errors']} forms the harness could not read")
    return problems


def _cell(part: dict[str, Any]) -> str:
    pct = part["pct"]
    return "-" if pct is None else f"{pct:.1f}% ({part['visible']}/{part['n']})"


def print_report(
    say: Report,
    summaries: dict[str, dict[str, Any]],
    per_filler: dict[str, list[dict[str, Any]]],
    skipped: dict[str, str],
) -> None:
    """The summary table, then every failure of every filler."""
    say("")
    say(
        f"  {'filler':<8} {'forms':>5} {'refused':>7} {'qpdf err':>8} {'text visible':>18} "
        f"{'choice visible':>16} {'buttons visible':>17} {'past box':>14} {'fill s':>7}"
    )
    for key, s in summaries.items():
        over = s["overflow"]
        past = (
            "-" if over["pct"] is None else f"{over['pct']:.1f}% ({over['past_box']}/{over['n']})"
        )
        say(
            f"  {key:<8} {s['forms']:>5} {s['refused']:>7} {s['qpdf_errors']:>8} "
            f"{_cell(s['text']):>18} {_cell(s['choice']):>16} {_cell(s['buttons']):>17} "
            f"{past:>14} {s['seconds']:>7.2f}"
        )
    for key, why in skipped.items():
        say(f"  {key:<8} skipped: {why}")
    say(
        "  (text: text, multiline, comb and date values; n counts values, refused forms' values "
        "as not visible; past box: glyphs > 0.5 pt outside the widget, % of text and choice values)"
    )
    for key, results in per_filler.items():
        failures = [f for r in results for f in r.get("failures", [])]
        refused = [r for r in results if r.get("refused")]
        qpdf = [r for r in results if r.get("qpdf_errors")]
        broken = [r for r in results if r.get("harness_error")]
        say("")
        say(
            f"== {key}: {len(refused)} forms refused, {len(qpdf)} with qpdf errors, "
            f"{len(failures)} failed values"
        )
        for r in refused:
            n = sum(r.get("totals", {}).values())
            say(f"  {r['form']}: refused ({n} values): {r['refused']}")
        for r in qpdf:
            say(f"  {r['form']}: qpdf error: {r['qpdf_errors'][0][:160]}")
        for r in broken:
            say(f"  {r['form']}: harness error: {r['harness_error']}")
        for f in failures:
            say(f"  {f['form']} | {f['field']} | {f['kind']} | {f['value']!r} | {f['reason']}")
        notes = [f for r in results for f in r.get("notes", [])]
        if notes:
            say(f"  notes, not counted as failures ({len(notes)}):")
        for f in notes:
            say(f"    {f['form']} | {f['field']} | {f['kind']} | {f['reason']}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--forms", default="", help="only forms whose file name contains this")
    p.add_argument("--fillers", default="ours,pypdf,pymupdf", help="comma list of fillers")
    p.add_argument("--forms-dir", type=Path, default=DEFAULT_FORMS, help="the corpus folder")
    p.add_argument("--json", type=Path, help="also write every figure and failure as JSON")
    p.add_argument(
        "--out", default=str(DEFAULT_OUT), help="results file ('-' for none; default %(default)s)"
    )
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes")
    p.add_argument("--check", action="store_true", help="exit 1 unless ours meets the goals")
    p.add_argument(
        "--fonts",
        help="FILLPDF_FONTS for our engine: TrueType fonts for scripts Noto Sans lacks (e.g. "
        "/usr/share/fonts/truetype/wqy from Debian's fonts-wqy-zenhei)",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every form with every filler and print the report."""
    args = parse_args(argv)
    if args.fonts:
        os.environ["FILLPDF_FONTS"] = args.fonts  # the worker processes inherit it
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    vc.quiet_pdf_logs()
    say = Report()
    if not args.forms_dir.is_dir():
        say(f"wild form evaluation: skipped, no corpus folder at {args.forms_dir}")
        return 0
    paths = sorted(p for p in args.forms_dir.glob("*.pdf") if args.forms in p.name)
    keys = [k.strip() for k in args.fillers.split(",") if k.strip()]
    unknown = [k for k in keys if k not in FILLERS]
    if unknown:
        say(f"unknown fillers: {', '.join(unknown)} (known: {', '.join(FILLERS)})")
        return 2
    skipped = {k: why for k in keys if (why := importable(FILLERS[k].module))}
    keys = [k for k in keys if k not in skipped]
    m = machine_info(["pypdf", "pymupdf", "pikepdf", "pdfplumber", "pypdfium2"])
    checker = "qpdf --check" if shutil.which("qpdf") else "pikepdf check_pdf_syntax (qpdf's checks)"
    if not shutil.which("qpdf") and importable("pikepdf"):
        checker = "none (neither qpdf nor pikepdf here)"
    say(f"wild form evaluation: {len(paths)} forms in {args.forms_dir}")
    say(
        f"  python {m['python']}, {m['cpu_count']} CPUs, load {m['load_avg_1m']}, "
        + ", ".join(f"{k} {v or 'missing'}" for k, v in m["versions"].items())
    )
    say(f"  output check: {checker}; {args.jobs} processes")
    say(f"  FILLPDF_FONTS: {os.environ.get('FILLPDF_FONTS') or '(none: Noto Sans only)'}")
    start = time.perf_counter()
    per_filler: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
    jobs = [(str(p), keys) for p in paths]
    if args.jobs > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            batches = list(pool.map(_worker, jobs))
    else:
        batches = [_worker(job) for job in jobs]
    for batch in batches:
        for r in batch:
            per_filler[r["filler"]].append(r)
    elapsed = time.perf_counter() - start
    summaries = {k: summarize(rs) for k, rs in per_filler.items()}
    print_report(say, summaries, per_filler, skipped)
    say("")
    say(f"  run time {elapsed:.1f} s wall ('fill s': time inside each filler, summed over forms)")
    status = 0
    if "ours" in summaries:
        problems = gate_failures(summaries["ours"])
        verdict = "PASS" if not problems else "FAIL: " + "; ".join(problems)
        say(
            f"  ours against the goals (0 refused, 0 qpdf errors, >= 99.5% visible, "
            f"<= {GATE_OVERFLOW_PCT}% past box): {verdict}"
        )
        if args.check and problems:
            status = 1
    if args.out != "-":
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(say.text())
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "machine": m,
            "forms": [p.name for p in paths],
            "seconds": round(elapsed, 2),
            "skipped": skipped,
            "summary": summaries,
            "results": per_filler,
        }
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
