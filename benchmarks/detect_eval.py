#!/usr/bin/env python3
"""Evaluate the flat-form field detector against the real forms of the corpus.

For every fillable form in ``../shared/corpus/forms``:

1. A *flat copy* is made: every page loses its widget annotations (other annotations stay)
   and the catalog loses ``/AcroForm`` (and ``/NeedsRendering``). The removed visible widgets
   are the ground truth: page, rectangle (user space) and class (text, date, comb, choice,
   checkbox, radio, signature). Pushbuttons, hidden / NoView widgets, widgets without a
   field type, zero-area widgets and widgets lying wholly outside the page are left out.
   Flat copies are cached by the source's sha256 (``--cache``), so reruns are fast.
2. The flat copy is converted with ``detect="fields"`` and ``detect="fields_fast"`` (timed).
3. The widgets are read back from the *output PDF* (not from the schema) and matched to the
   ground truth one-to-one per page by maximum-IoU assignment (a match needs IoU >= 0.5).
   Each figure comes twice: comb-equivalent, where a comb that the other side reads as a
   row of one-character boxes (either way round) is split into its ``/MaxLen`` cells, so
   that the two score n matches (``comb_score``), and plain, a comb as one widget.
   The acceptance lines read the comb-equivalent figures.
4. Widgets over blank paper in the flat copy (no print within 3 pt of the box) are ignore
   regions: they leave recall, and a detection matched to one is neither right nor wrong.
5. Precision, recall, F1, class-aware F1, recall per ground-truth class, duplicate schema
   names, label-derived names and seconds per page (against pdfplumber alone) are printed per
   form and overall, with the acceptance lines.

Run it from the repository root::

    .venv/bin/python benchmarks/detect_eval.py                       # all forms, both modes
    .venv/bin/python benchmarks/detect_eval.py --stand-in truth      # test the harness itself
    .venv/bin/python benchmarks/detect_eval.py --debug-form f8879 --draw out/draw

The pieces (``flatten_form``, ``ground_truth``, ``output_widgets``, ``match``, ``score``...)
are importable: ``from benchmarks.detect_eval import match``.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import hashlib
import io
import json
import logging
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
import traceback
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    DictionaryObject,
    FloatObject,
    IndirectObject,
    NameObject,
    NumberObject,
    TextStringObject,
)
from scipy.optimize import linear_sum_assignment

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from kits.flatten import _annots, _is_widget, flatten_form  # noqa: E402
from kits.viewcheck import (  # noqa: E402
    _chain,
    _inherited,
    _resolve,
    open_pdf,
    qualified_name,
    user_rect_to_plumber,
)

DEFAULT_CORPUS = Path(
    os.environ.get("FILLPDF_CORPUS") or REPO_ROOT.parent / "shared" / "corpus" / "forms"
)
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "fillpdf-detect-eval"
#: Bumped whenever ``flatten_form`` (kits/flatten.py) changes, so stale cached copies are not
#: reused.
FLATTEN_VERSION = "v1"

Rect = tuple[float, float, float, float]

MODES = ("fields", "fields_fast")
IOU_MIN = 0.5
#: Ground-truth classes, in report order.
CLASSES = ("text", "date", "comb", "choice", "checkbox", "radio", "signature")
#: Class-aware scores count a match only when both classes fall in the same group.
GROUP = {
    "text": "fill-in",
    "date": "fill-in",
    "comb": "fill-in",
    "choice": "fill-in",
    "checkbox": "button",
    "radio": "button",
    "signature": "signature",
}
BUTTONS = ("checkbox", "radio")

#: Acceptance thresholds.
MIN_F1 = 0.88
MIN_BUTTON_RECALL = 0.93
MAX_FIELDS_RATIO = 2.0
MAX_FAST_RATIO = 0.5
MIN_LABEL_NAMED = 0.95
#: Generic names (``text_4``) among fields with text printed near them: at most a third of
#: the share before tables, grids and nearby text named fields (31.1% on the development
#: corpus, 1,604 of 5,162).
MAX_GENERIC_SHARE = 0.311 / 3

#: Field flags (``/Ff``) and annotation flags (``/F``), PDF 32000-1 tables 165, 226, 228.
FF_RADIO = 1 << 15
FF_PUSHBUTTON = 1 << 16
FF_COMB = 1 << 24
F_HIDDEN = 1 << 1
F_NOVIEW = 1 << 5


# --------------------------------------------------------------------------- PDF reading


@dataclass(frozen=True)
class WidgetBox:
    """One widget, of the ground truth or of a converter's output."""

    page: int
    """0-based page index."""
    rect: Rect
    """``/Rect`` in default user space, normalised so that x0 <= x1 and y0 <= y1."""
    cls: str
    """One of ``CLASSES``, or ``pushbutton`` / ``unknown`` (no ``/FT`` up the chain)."""
    name: str = ""
    """Fully qualified field name (``/T`` up the ``/Parent`` chain, joined by ".")."""
    tooltip: str | None = None
    """``/TU`` (inherited): the form author's description, handy when debugging."""
    max_length: int | None = None
    """``/MaxLen`` (inherited) of a comb field: how many one-character cells it has."""


def _int(value: Any) -> int:
    try:
        return int(_resolve(value) or 0)
    except (TypeError, ValueError):
        return 0


def _norm_rect(values: Any) -> Rect | None:
    try:
        x0, y0, x1, y1 = (float(_resolve(v)) for v in _resolve(values))
    except (TypeError, ValueError):
        return None
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def _area(rect: Rect) -> float:
    return max(0.0, rect[2] - rect[0]) * max(0.0, rect[3] - rect[1])


def _intersection(a: Rect, b: Rect) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _page_box(page: Any) -> Rect:
    """The visible area: CropBox clipped to MediaBox (the MediaBox if they do not meet)."""
    media = _norm_rect(page.mediabox) or (0.0, 0.0, 612.0, 792.0)
    crop = _norm_rect(page.cropbox) or media
    box = (
        max(media[0], crop[0]),
        max(media[1], crop[1]),
        min(media[2], crop[2]),
        min(media[3], crop[3]),
    )
    return box if _area(box) > 0 else media


def _action_scripts(action: Any, depth: int = 0) -> Iterator[str]:
    """The JavaScript of an action and of its ``/Next`` chain."""
    action = _resolve(action)
    if not isinstance(action, DictionaryObject) or depth > 8:
        return
    script = _resolve(action.get("/JS"))
    if script is not None:
        if hasattr(script, "get_data"):
            yield bytes(script.get_data()).decode("latin-1", "replace")
        else:
            yield str(script)
    following = _resolve(action.get("/Next"))
    for nxt in following if isinstance(following, list) else [following]:
        yield from _action_scripts(nxt, depth + 1)


def has_date_script(annot: DictionaryObject) -> bool:
    """Whether any additional-action script of the field (or its parents) calls ``AFDate_``."""
    for node in _chain(annot):
        actions = _resolve(node.get("/AA"))
        if isinstance(actions, DictionaryObject):
            for action in actions.values():
                if any("AFDate_" in script for script in _action_scripts(action)):
                    return True
    return False


def widget_class(annot: DictionaryObject) -> str:
    """The evaluation class of a widget from ``/FT``, ``/Ff`` (inherited) and its scripts.

    A comb text field counts as ``comb`` even when it also carries a date script.
    """
    field_type = _inherited(annot, "/FT")
    flags = _int(_inherited(annot, "/Ff"))
    if field_type == "/Btn":
        if flags & FF_PUSHBUTTON:
            return "pushbutton"
        return "radio" if flags & FF_RADIO else "checkbox"
    if field_type == "/Tx":
        if flags & FF_COMB:
            return "comb"
        return "date" if has_date_script(annot) else "text"
    if field_type == "/Ch":
        return "choice"
    if field_type == "/Sig":
        return "signature"
    return "unknown"


def scan_widgets(pdf: bytes | PdfReader) -> list[tuple[WidgetBox, str | None]]:
    """Every widget annotation of every page, with the reason it is not ground truth (or None).

    Reasons: ``repeated in /Annots``, ``pushbutton``, ``no field type``, ``hidden`` (flag
    Hidden or NoView), ``zero area`` (or no readable ``/Rect``), ``off page`` (no overlap
    with the CropBox clipped to the MediaBox).
    """
    reader = open_pdf(pdf)
    found: list[tuple[WidgetBox, str | None]] = []
    for page_index, page in enumerate(reader.pages):
        box = _page_box(page)
        seen: set[Any] = set()
        for ref in _annots(page):
            annot = _resolve(ref)
            if not _is_widget(annot):
                continue
            key = ref.idnum if isinstance(ref, IndirectObject) else id(annot)
            rect = _norm_rect(annot.get("/Rect"))
            cls = widget_class(annot)
            tooltip = _inherited(annot, "/TU")
            widget = WidgetBox(
                page=page_index,
                rect=rect or (0.0, 0.0, 0.0, 0.0),
                cls=cls,
                name=qualified_name(annot),
                tooltip=str(tooltip) if tooltip is not None else None,
                max_length=(_int(_inherited(annot, "/MaxLen")) or None) if cls == "comb" else None,
            )
            reason = None
            if key in seen:
                reason = "repeated in /Annots"
            elif cls == "pushbutton":
                reason = "pushbutton"
            elif cls == "unknown":
                reason = "no field type"
            elif _int(annot.get("/F")) & (F_HIDDEN | F_NOVIEW):
                reason = "hidden"
            elif rect is None or _area(rect) <= 0:
                reason = "zero area"
            elif _intersection(rect, box) <= 0:
                reason = "off page"
            seen.add(key)
            found.append((widget, reason))
    return found


def ground_truth(pdf: bytes | PdfReader) -> list[WidgetBox]:
    """The visible widgets of a fillable form: what a detector should find on its flat copy."""
    return [widget for widget, reason in scan_widgets(pdf) if reason is None]


def excluded_widgets(pdf: bytes | PdfReader) -> Counter[str]:
    """How many widgets were left out of the ground truth, by reason."""
    return Counter(reason for _, reason in scan_widgets(pdf) if reason is not None)


def output_widgets(pdf: bytes | PdfReader) -> list[WidgetBox]:
    """The widgets a converter wrote: every page's ``/Annots`` widgets except pushbuttons.

    Each radio kid counts as one widget. Hidden, zero-area or off-page widgets *are* kept:
    a converter that writes them has made them, and they count against precision.
    """
    return [
        widget
        for widget, reason in scan_widgets(pdf)
        if reason not in {"pushbutton", "repeated in /Annots"}
    ]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def flat_copy(source: bytes, cache_dir: Path | None) -> bytes:
    """``flatten_form(source)``, cached in ``cache_dir`` under the source's sha256."""
    if cache_dir is None:
        return flatten_form(source)
    target = cache_dir / f"{sha256(source)}-flat-{FLATTEN_VERSION}.pdf"
    if target.is_file():
        return target.read_bytes()
    flat = flatten_form(source)
    cache_dir.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    scratch.write_bytes(flat)
    os.replace(scratch, target)
    return flat


# Any grey darker than this is print a person can see: the light-grey (~0.88) boxes of many
# tax forms included; antialiasing of a line outside the margin stays above it.
INK_LEVEL = 240
INK_SCALE = 2.0
INK_MIN_PIXELS = 4
INK_MARGIN = 3.0  # pt around the widget: a box drawn just outside a smaller widget counts


def inked(flat: bytes, widgets: Sequence[WidgetBox]) -> list[bool]:
    """Whether the flat page shows any print in or within ``INK_MARGIN`` of each widget.

    A widget over blank paper has nothing on the page for any detector to find (its box was
    drawn by the widget's own appearance stream); this bounds what recall can reach.
    """
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(flat)
    result = [False] * len(widgets)
    try:
        by_page: dict[int, list[int]] = {}
        for index, widget in enumerate(widgets):
            by_page.setdefault(widget.page, []).append(index)
        for page_index, indexes in by_page.items():
            page = doc[page_index]
            bitmap = page.render(scale=INK_SCALE, may_draw_forms=False, grayscale=True)
            posconv = bitmap.get_posconv(page)
            pixels = np.asarray(bitmap.to_pil().convert("L"))
            for index in indexes:
                x0, y0, x1, y1 = widgets[index].rect
                x0, y0, x1, y1 = x0 - INK_MARGIN, y0 - INK_MARGIN, x1 + INK_MARGIN, y1 + INK_MARGIN
                corners = [posconv.to_bitmap(x, y) for x in (x0, x1) for y in (y0, y1)]
                left = max(0, int(min(c[0] for c in corners)))
                top = max(0, int(min(c[1] for c in corners)))
                right = int(max(c[0] for c in corners)) + 1
                bottom = int(max(c[1] for c in corners)) + 1
                spot = pixels[top:bottom, left:right]
                result[index] = int((spot < INK_LEVEL).sum()) >= INK_MIN_PIXELS
            page.close()
    finally:
        doc.close()
    return result


def page_count(pdf: bytes) -> int:
    return len(open_pdf(pdf).pages)


# --------------------------------------------------------------------------- matching


@dataclass(frozen=True)
class Match:
    """Ground truth ``gt`` matched to detection ``det`` (indices into the two lists)."""

    gt: int
    det: int
    iou: float


def iou(a: Rect, b: Rect) -> float:
    """Intersection over union of two normalised rectangles."""
    inter = _intersection(a, b)
    if inter <= 0:
        return 0.0
    union = _area(a) + _area(b) - inter
    return inter / union if union > 0 else 0.0


def iou_matrix(a: Sequence[Rect], b: Sequence[Rect]) -> np.ndarray:
    """IoU of every rectangle of ``a`` (rows) with every rectangle of ``b`` (columns)."""
    if not a or not b:
        return np.zeros((len(a), len(b)))
    ra = np.asarray(a, dtype=float)[:, None, :]
    rb = np.asarray(b, dtype=float)[None, :, :]
    w = np.clip(np.minimum(ra[..., 2], rb[..., 2]) - np.maximum(ra[..., 0], rb[..., 0]), 0, None)
    h = np.clip(np.minimum(ra[..., 3], rb[..., 3]) - np.maximum(ra[..., 1], rb[..., 1]), 0, None)
    inter = w * h
    area_a = np.clip(ra[..., 2] - ra[..., 0], 0, None) * np.clip(ra[..., 3] - ra[..., 1], 0, None)
    area_b = np.clip(rb[..., 2] - rb[..., 0], 0, None) * np.clip(rb[..., 3] - rb[..., 1], 0, None)
    union = area_a + area_b - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def match(
    gt: Sequence[WidgetBox], det: Sequence[WidgetBox], threshold: float = IOU_MIN
) -> list[Match]:
    """One-to-one matches per page with the largest total IoU, each with IoU >= ``threshold``.

    Pairs below the threshold get weight 0 before the assignment, so they can neither be
    chosen nor push a valid pair out.
    """
    matches: list[Match] = []
    for page in sorted({w.page for w in gt} & {w.page for w in det}):
        gi = [i for i, w in enumerate(gt) if w.page == page]
        di = [j for j, w in enumerate(det) if w.page == page]
        m = iou_matrix([gt[i].rect for i in gi], [det[j].rect for j in di])
        weights = np.where(m >= threshold - 1e-9, m, 0.0)
        rows, cols = linear_sum_assignment(weights, maximize=True)
        for r, c in zip(rows, cols, strict=True):
            if weights[r, c] > 0:
                matches.append(Match(gi[r], di[c], float(m[r, c])))
    return sorted(matches, key=lambda x: x.gt)


def same_group(a: str, b: str) -> bool:
    return a in GROUP and GROUP.get(a) == GROUP.get(b)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


@dataclass
class Score:
    """Counts of one form and mode, or summed over forms (micro-average)."""

    n_gt: int = 0
    n_det: int = 0
    tp: int = 0
    tp_class: int = 0
    #: ground-truth class -> [widgets, found, found with a class of the same group]
    by_class: dict[str, list[int]] = field(default_factory=dict)

    def __add__(self, other: Score) -> Score:
        by_class = {k: list(v) for k, v in self.by_class.items()}
        for cls, counts in other.by_class.items():
            mine = by_class.setdefault(cls, [0, 0, 0])
            for i, value in enumerate(counts):
                mine[i] += value
        return Score(
            self.n_gt + other.n_gt,
            self.n_det + other.n_det,
            self.tp + other.tp,
            self.tp_class + other.tp_class,
            by_class,
        )

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.n_det)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.n_gt)

    @property
    def f1(self) -> float | None:
        """Harmonic mean of precision and recall: 2 tp / (gt + detected)."""
        return _ratio(2 * self.tp, self.n_gt + self.n_det)

    @property
    def class_f1(self) -> float | None:
        """F1 where a match counts only if the classes fall in the same group."""
        return _ratio(2 * self.tp_class, self.n_gt + self.n_det)

    def class_recall(self, classes: Iterable[str], *, same_class: bool = True) -> float | None:
        """Recall over the ground truth of ``classes`` (matches of the same group only)."""
        n = found = 0
        for cls in classes:
            counts = self.by_class.get(cls, [0, 0, 0])
            n += counts[0]
            found += counts[2] if same_class else counts[1]
        return _ratio(found, n)

    @property
    def button_recall(self) -> float | None:
        """Recall of checkboxes and radio buttons found as checkbox or radio."""
        return self.class_recall(BUTTONS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_gt": self.n_gt,
            "n_det": self.n_det,
            "tp": self.tp,
            "tp_class": self.tp_class,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "class_f1": self.class_f1,
            "button_recall": self.button_recall,
            "by_class": {
                cls: {
                    "n": c[0],
                    "found": c[1],
                    "found_same_class": c[2],
                    "recall": _ratio(c[1], c[0]),
                    "class_recall": _ratio(c[2], c[0]),
                }
                for cls, c in sorted(self.by_class.items(), key=lambda kv: _class_order(kv[0]))
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Score:
        return cls(
            data["n_gt"],
            data["n_det"],
            data["tp"],
            data["tp_class"],
            {
                k: [v["n"], v["found"], v["found_same_class"]]
                for k, v in data.get("by_class", {}).items()
            },
        )


def _class_order(cls: str) -> int:
    return CLASSES.index(cls) if cls in CLASSES else len(CLASSES)


def score(
    gt: Sequence[WidgetBox],
    det: Sequence[WidgetBox],
    matches: Sequence[Match],
    ignored: Sequence[bool] | None = None,
) -> Score:
    """Counts for precision, recall and (class-aware) F1 from a one-to-one matching.

    An ``ignored`` ground-truth widget (one over blank paper in the flat copy: no print
    within ``INK_MARGIN`` of its box) is an ignore region: it leaves recall, and a detection
    matched to it is neither right nor wrong.
    """
    skip = list(ignored) if ignored is not None else [False] * len(gt)
    by_class: dict[str, list[int]] = {}
    for widget, ignore in zip(gt, skip, strict=True):
        if not ignore:
            by_class.setdefault(widget.cls, [0, 0, 0])[0] += 1
    tp = tp_class = on_ignored = 0
    for m in matches:
        if skip[m.gt]:
            on_ignored += 1
            continue
        tp += 1
        counts = by_class[gt[m.gt].cls]
        counts[1] += 1
        if same_group(gt[m.gt].cls, det[m.det].cls):
            counts[2] += 1
            tp_class += 1
    return Score(len(gt) - sum(skip), len(det) - on_ignored, tp, tp_class, by_class)


# --------------------------------------------------------------------------- comb cells

#: Where a row, a mode's total or a per-form summary keeps its comb-equivalent figures.
COMB_KEY = "comb_equivalent"


def comb_cells(widgets: Sequence[WidgetBox]) -> tuple[list[WidgetBox], list[int]]:
    """Each comb widget split into its ``max_length`` equal cells, other widgets as they are,
    and for each box the index of the widget it comes from.

    A comb of n cells and a row of n one-character boxes are the same field to the person
    filling it, so the comb-equivalent figures match cells, not whole combs. The cells run
    along the comb's long side (a comb turned a quarter on the page stands upright).
    """
    boxes: list[WidgetBox] = []
    owner: list[int] = []
    for index, widget in enumerate(widgets):
        n = widget.max_length or 1
        if widget.cls != "comb" or n < 2:
            boxes.append(widget)
            owner.append(index)
            continue
        x0, y0, x1, y1 = widget.rect
        across = x1 - x0 >= y1 - y0
        for k in range(n):
            if across:
                cell = (x0 + (x1 - x0) * k / n, y0, x0 + (x1 - x0) * (k + 1) / n, y1)
            else:  # cell 0 at the top, as the text reads when turned
                cell = (x0, y1 - (y1 - y0) * (k + 1) / n, x1, y1 - (y1 - y0) * k / n)
            boxes.append(WidgetBox(widget.page, cell, widget.cls, widget.name, widget.tooltip))
            owner.append(index)
    return boxes, owner


def _as_cells(widgets: Sequence[WidgetBox], other: Sequence[WidgetBox]) -> list[int]:
    """The combs of ``widgets`` that the ``other`` side reads as a row of boxes: at least
    half of their cells (and two) each match a distinct box of ``other``."""
    cells, owner = comb_cells(widgets)
    hits = Counter(owner[m.gt] for m in match(cells, other))
    return [
        i
        for i, w in enumerate(widgets)
        if w.cls == "comb" and (w.max_length or 1) >= 2 and hits[i] >= max(2, w.max_length / 2)
    ]


def comb_score(
    gt: Sequence[WidgetBox],
    det: Sequence[WidgetBox],
    ignored: Sequence[bool] | None = None,
) -> Score:
    """``score`` where a comb of n cells and a row of n boxes are the same field.

    A comb that the other side reads as a row of one-character boxes (``_as_cells``), either
    way round, is split into its cells (``comb_cells``): each cell that matches a distinct
    box at IoU >= ``IOU_MIN`` is a match, n for a whole row. Every other widget, a comb
    found as a comb or as one box among them, is matched whole, as the plain ``score`` does.
    A cell of an ignored widget is ignored.
    """
    split_gt, split_det = set(_as_cells(gt, det)), set(_as_cells(det, gt))
    gt_units, owner = comb_cells([w if i in split_gt else _whole(w) for i, w in enumerate(gt)])
    det_units, _ = comb_cells([w if i in split_det else _whole(w) for i, w in enumerate(det)])
    skip = None if ignored is None else [ignored[i] for i in owner]
    return score(gt_units, det_units, match(gt_units, det_units), ignored=skip)


def _whole(widget: WidgetBox) -> WidgetBox:
    """``widget`` as one box, never split into cells."""
    return replace(widget, max_length=None)


def comb_figures(figures: dict[str, Any]) -> dict[str, Any]:
    """The comb-equivalent figures of a form's row or a mode's total (``COMB_KEY``); empty
    for a report written before they were measured."""
    found = figures.get(COMB_KEY)
    return found if isinstance(found, dict) else {}


# --------------------------------------------------------------------------- schema


def _entry(item: Any) -> dict[str, Any]:
    """A schema entry (``Field`` or dict) as a plain dict of the keys used here."""
    keys = ("name", "type", "page", "rect", "label", "confidence")
    if isinstance(item, dict):
        return {k: item.get(k) for k in keys}
    return {k: getattr(item, k, None) for k in keys}


def schema_entries(schema: Iterable[Any] | None) -> list[dict[str, Any]]:
    return [_entry(item) for item in schema or ()]


def duplicate_names(schema: Iterable[Any]) -> dict[str, int]:
    """Names shared by more than one schema entry, with their counts."""
    counts = Counter(str(_entry(e)["name"]) for e in schema)
    return {name: n for name, n in sorted(counts.items()) if n > 1}


def _words(text: str) -> list[str]:
    """Lower-case words of ``text``, accents stripped (the parts of its snake_case)."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return re.findall(r"[^\W_]+", folded.lower())


#: Names a converter falls back on when it has no label; never "derived" from one.
GENERIC_NAMES = frozenset(
    {"field", "text", "date", "checkbox", "check", "box", "radio", "choice", "signature"}
)


#: Words a label may open with that a name derived from it can leave out.
FILLER_WORDS = frozenset({"your", "the", "please", "enter", "print", "type", "any", "this"})


def name_from_label(name: str, label: str | None) -> bool | None:
    """Whether ``name`` is (leniently) derived from ``label``; None when there is no label.

    Lenient: the name starts with the first word of the snake_cased label (``_2`` suffixes
    and any later words don't matter), or with its first word after filler such as "your";
    or the label starts with a number ("1a Wages") and a
    short prefix such as ``line_`` comes before it (but not a fallback like ``field_1``); or
    the name skips a one- or two-character marker such as "(a)"; or the name is the first
    word cut short (at least 3 characters).
    """
    if label is None:
        return None
    label_words = _words(label)
    if not label_words:
        return None
    name_words = _words(name)
    if not name_words:
        return False
    first = label_words[0]
    joined = "_".join(name_words)
    if joined.startswith(first):
        return True
    if (
        first[0].isdigit()
        and len(name_words) > 1
        and name_words[1] == first
        and name_words[0] not in GENERIC_NAMES
    ):
        return True
    if len(label_words) > 1 and len(first) <= 2 and joined.startswith(label_words[1]):
        return True
    content = [w for w in label_words if not (w.isdigit() or len(w) <= 2)]
    while content and content[0] in FILLER_WORDS:
        content = content[1:]
    if content and joined.startswith(content[0]):
        return True  # "Your first name" -> first_name: leading filler words dropped
    return len(joined) >= 3 and first.startswith(joined)


def label_name_stats(schema: Iterable[Any]) -> tuple[int, int, list[tuple[str, str]]]:
    """``(derived, labelled, misses)``: entries with a label, how many are named from it,
    and the ``(name, label)`` of the others."""
    derived = labelled = 0
    misses: list[tuple[str, str]] = []
    for item in schema:
        entry = _entry(item)
        verdict = name_from_label(str(entry["name"]), entry["label"])
        if verdict is None:
            continue
        labelled += 1
        if verdict:
            derived += 1
        else:
            misses.append((str(entry["name"]), str(entry["label"])))
    return derived, labelled, misses


#: A name a converter falls back on, numbered or not: ``text``, ``text_2``, ``checkbox_6``.
_GENERIC_NAME = re.compile(rf"({'|'.join(sorted(GENERIC_NAMES))})(?:_[0-9]+)?")
#: How far (pt) around a field printed text counts as its label, column header or row label:
#: left and right on its line, up its column (a table's header may head many rows), below.
NEAR_LEFT, NEAR_RIGHT, NEAR_ABOVE, NEAR_BELOW = 250.0, 60.0, 300.0, 14.0


def generic_name(name: str, label: str | None) -> bool:
    """Whether ``name`` is a fallback (``text_4``, ``checkbox``) rather than words of a label.

    A field labelled "Date" may well be ``date``: that is its label's word, not a fallback.
    """
    found = _GENERIC_NAME.fullmatch(name)
    if found is None:
        return False
    words = _words(label or "")
    return not (words and words[0] == found.group(1))


#: A run of printed text on a page: ``(left, bottom, right, top)`` in PDF user space.
TextRun = tuple[float, float, float, float]


def text_runs(flat: bytes) -> dict[int, list[TextRun]]:
    """Each page's runs of printed words (PDFium's text rectangles; signs and box glyphs
    left out): read once per form, for every mode's names."""
    import pypdfium2 as pdfium

    runs: dict[int, list[TextRun]] = {}
    doc = pdfium.PdfDocument(flat)
    try:
        for page_index in range(len(doc)):
            page = doc[page_index]
            text = page.get_textpage()
            found = runs[page_index] = []
            for i in range(text.count_rects()):
                left, bottom, right, top = text.get_rect(i)
                if any(c.isalnum() for c in text.get_text_bounded(left, bottom, right, top)):
                    found.append((left, bottom, right, top))
            text.close()
            page.close()
    finally:
        doc.close()
    return runs


def printed_near(runs: dict[int, list[TextRun]], schema: Sequence[dict[str, Any]]) -> list[bool]:
    """Whether text is printed near each schema entry (see ``NEAR_LEFT``...): a label, a
    column header or a row label a name could come from."""
    return [
        bool(entry.get("rect"))
        and any(_near(run, entry["rect"]) for run in runs.get(int(entry.get("page") or 0), ()))
        for entry in schema
    ]


def _near(run: TextRun, rect: Sequence[float]) -> bool:
    left, bottom, right, top = run
    x0, y0, x1, y1 = rect
    middle = (bottom + top) / 2
    on_line = y0 - 3 <= middle <= y1 + 3 and right >= x0 - NEAR_LEFT and left <= x1 + NEAR_RIGHT
    over_column = right >= x0 and left <= x1
    above = over_column and y1 - 2 <= bottom <= y1 + NEAR_ABOVE
    below = over_column and y0 - NEAR_BELOW <= top <= y0 + 2
    return on_line or above or below


def generic_name_stats(
    runs: dict[int, list[TextRun]], schema: Sequence[dict[str, Any]]
) -> tuple[int, int, list[str]]:
    """``(generic, near_text, examples)``: of the entries with text printed near them (the
    form's ``text_runs``), how many have a generic name, and those names."""
    near = printed_near(runs, schema)
    generic = [
        str(entry["name"])
        for entry, seen in zip(schema, near, strict=True)
        if seen and generic_name(str(entry["name"]), entry.get("label"))
    ]
    return len(generic), sum(near), generic


# --------------------------------------------------------------------------- timing


def plumber_seconds(pdf: bytes) -> float:
    """Wall seconds pdfplumber takes to open ``pdf`` and read every page's chars and vectors."""
    import pdfplumber

    start = time.perf_counter()
    with pdfplumber.open(io.BytesIO(pdf)) as doc:
        for page in doc.pages:
            _ = (page.chars, page.lines, page.rects, page.curves)
    return time.perf_counter() - start


# --------------------------------------------------------------------------- converters

Converter = Callable[[bytes, str], Any]


@dataclass
class StandInResult:
    """What the stand-in converter returns: the shape of ``ConversionResult``."""

    pdf: bytes
    schema: list[Any]
    pages: int
    ms: float


class StandIn:
    """A converter for testing the harness before the real one exists.

    ``empty`` returns the flat PDF with no fields. ``truth`` writes the ground truth back as
    widgets, each edge moved by up to ``jitter`` pt, with some widgets dropped (4 %, 10 % in
    fields_fast), some given a class of another group (2 %) and a few false positives (2 %).
    Everything is seeded by the input's sha256, so runs repeat.
    """

    def __init__(
        self,
        kind: str = "truth",
        jitter: float = 1.0,
        *,
        drop: dict[str, float] | None = None,
        mistype: float = 0.02,
        extra: float = 0.02,
    ) -> None:
        if kind not in {"empty", "truth"}:
            raise ValueError(f"unknown stand-in {kind!r}")
        self.kind = kind
        self.jitter = jitter
        self.drop = {"fields": 0.04, "fields_fast": 0.10} if drop is None else drop
        self.mistype = mistype
        self.extra = extra
        self.truth: dict[str, list[WidgetBox]] = {}

    def register(self, flat: bytes, truth: Sequence[WidgetBox]) -> None:
        """Tell the stand-in the ground truth of a flat copy it is going to see."""
        self.truth[sha256(flat)] = list(truth)

    def __call__(self, pdf: bytes, detect: str = "fields") -> StandInResult:
        start = time.perf_counter()
        digest = sha256(pdf)
        truth = self.truth.get(digest, []) if self.kind == "truth" else []
        rng = random.Random(f"{digest}:{detect}")
        drop = self.drop.get(detect, 0.0)
        found: list[WidgetBox] = []
        for widget in truth:
            if rng.random() < drop:
                continue
            j = self.jitter
            x0, y0, x1, y1 = (v + rng.uniform(-j, j) for v in widget.rect)
            rect = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
            cls = widget.cls
            if rng.random() < self.mistype and cls != "radio":
                cls = "checkbox" if GROUP.get(cls) != "button" else "text"
            cells = widget.max_length if cls == "comb" else None
            found.append(WidgetBox(widget.page, rect, cls, widget.name, widget.tooltip, cells))
        for i, widget in enumerate(truth):
            if rng.random() < self.extra:
                x0, y0, x1, y1 = widget.rect
                shift = 3 * (y1 - y0) + 4
                found.append(
                    WidgetBox(widget.page, (x0, y0 - shift, x1, y1 - shift), "text", f"extra.{i}")
                )
        out, schema = _write_widgets(pdf, found)
        return StandInResult(out, schema, page_count(pdf), (time.perf_counter() - start) * 1e3)


def _snake(text: str) -> str:
    return "_".join(_words(text))[:60]


def _write_widgets(pdf: bytes, widgets: Sequence[WidgetBox]) -> tuple[bytes, list[Any]]:
    """``pdf`` with ``widgets`` added as fields (radio kids grouped by ``name``), and a schema.

    Names are the snake_case of the tooltip (the stand-in's "printed label") when there is
    one, else of the original field name.
    """
    from fillpdf_provider.engine.schema import Field

    writer = PdfWriter(clone_from=open_pdf(pdf))
    fields = ArrayObject()
    schema: list[Any] = []
    used: Counter[str] = Counter()
    radio_groups: dict[str, DictionaryObject] = {}

    def new_name(widget: WidgetBox) -> str:
        base = _snake(widget.tooltip or "") or _snake(widget.name) or "field"
        used[base] += 1
        return base if used[base] == 1 else f"{base}_{used[base]}"

    for widget in widgets:
        page = writer.pages[widget.page]
        annot = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Annot"),
                NameObject("/Subtype"): NameObject("/Widget"),
                NameObject("/Rect"): ArrayObject(FloatObject(round(v, 3)) for v in widget.rect),
                NameObject("/F"): NumberObject(4),
                NameObject("/P"): page.indirect_reference,
            }
        )
        ref = writer._add_object(annot)
        if widget.cls == "radio":
            group = radio_groups.get(widget.name)
            if group is None:
                name = new_name(widget)
                group = DictionaryObject(
                    {
                        NameObject("/FT"): NameObject("/Btn"),
                        NameObject("/Ff"): NumberObject(FF_RADIO | (1 << 14)),
                        NameObject("/T"): TextStringObject(name),
                        NameObject("/Kids"): ArrayObject(),
                    }
                )
                radio_groups[widget.name] = group
                fields.append(writer._add_object(group))
                schema.append(_stand_in_field(Field, name, widget))
            annot[NameObject("/Parent")] = group.indirect_reference
            annot[NameObject("/AS")] = NameObject("/Off")
            group["/Kids"].append(ref)
        else:
            name = new_name(widget)
            ft, flags = {
                "checkbox": ("/Btn", 0),
                "choice": ("/Ch", 1 << 17),
                "signature": ("/Sig", 0),
                "comb": ("/Tx", FF_COMB),
            }.get(widget.cls, ("/Tx", 0))
            annot[NameObject("/FT")] = NameObject(ft)
            annot[NameObject("/T")] = TextStringObject(name)
            if flags:
                annot[NameObject("/Ff")] = NumberObject(flags)
            if widget.cls == "comb":
                annot[NameObject("/MaxLen")] = NumberObject(widget.max_length or 10)
            if widget.cls == "date":
                annot[NameObject("/AA")] = DictionaryObject(
                    {
                        NameObject("/F"): DictionaryObject(
                            {
                                NameObject("/S"): NameObject("/JavaScript"),
                                NameObject("/JS"): TextStringObject(
                                    'AFDate_FormatEx("mm/dd/yyyy");'
                                ),
                            }
                        )
                    }
                )
            fields.append(ref)
            schema.append(_stand_in_field(Field, name, widget))
        if "/Annots" not in page:
            page[NameObject("/Annots")] = ArrayObject()
        _resolve(page["/Annots"]).append(ref)
    writer.root_object[NameObject("/AcroForm")] = DictionaryObject({NameObject("/Fields"): fields})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue(), schema


def _stand_in_field(field_cls: Any, name: str, widget: WidgetBox) -> Any:
    kind = {"comb": "text"}.get(widget.cls, widget.cls)
    if kind not in GROUP:
        kind = "text"
    return field_cls(
        name=name,
        type=kind,
        page=widget.page,
        rect=widget.rect,
        label=widget.tooltip,
        confidence=0.9,
        comb=widget.cls == "comb",
    )


def load_converter(stand_in: str | None = None, jitter: float = 1.0) -> Converter:
    """The product's converter, or a ``StandIn`` when ``stand_in`` names one."""
    if stand_in:
        return StandIn(stand_in, jitter)
    from fillpdf_provider.engine.convert import convert

    def run(pdf: bytes, detect: str) -> Any:
        return convert(pdf, detect=detect)

    return run


# --------------------------------------------------------------------------- one form


@dataclass
class ModeDetail:
    """What ``--debug-form`` and ``--draw`` need beyond the figures."""

    det: list[WidgetBox]
    matches: list[Match]
    schema: list[dict[str, Any]]


@dataclass
class FormEval:
    summary: dict[str, Any]
    gt: list[WidgetBox] = field(default_factory=list)
    flat: bytes = b""
    details: dict[str, ModeDetail] = field(default_factory=dict)


def _error_text(exc: BaseException) -> str:
    """The exception and the innermost frame, as ``engine/detect/boxes.py:12``."""
    frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = ""
    if frame:
        where = f" ({'/'.join(Path(frame[0].filename).parts[-3:])}:{frame[0].lineno})"
    return f"{type(exc).__name__}: {exc}{where}"[:400]


def form_truth(
    name: str, source: bytes, flat: bytes
) -> tuple[list[WidgetBox], list[bool], dict[str, Any]]:
    """A form's visible widgets, whether print lies under each (the ignore rule), and the
    head of its summary: what every detector scored on it shares."""
    scanned = scan_widgets(source)
    gt = [widget for widget, reason in scanned if reason is None]
    ink = inked(flat, gt)
    summary: dict[str, Any] = {
        "form": name,
        "sha256": sha256(source),
        "pages": page_count(flat),
        "gt": len(gt),
        "gt_by_class": dict(sorted(Counter(w.cls for w in gt).items())),
        "gt_blank_by_class": dict(
            sorted(Counter(w.cls for w, seen in zip(gt, ink, strict=True) if not seen).items())
        ),
        "excluded": dict(sorted(Counter(r for _, r in scanned if r is not None).items())),
        "pdfplumber_s_per_page": None,
        "modes": {},
    }
    return gt, ink, summary


def detection_figures(
    gt: Sequence[WidgetBox], det: Sequence[WidgetBox], ink: Sequence[bool]
) -> tuple[list[Match], dict[str, Any]]:
    """One detector's boxes on one form, matched and scored: the matches and the figures."""
    ignored = [not seen for seen in ink]
    matches = match(gt, det)
    counts = score(gt, det, matches, ignored=ignored)
    return matches, {
        "det_by_class": dict(sorted(Counter(w.cls for w in det).items())),
        "mean_matched_iou": (sum(m.iou for m in matches) / len(matches) if matches else None),
        **counts.to_dict(),
        COMB_KEY: comb_score(gt, det, ignored).to_dict(),
    }


def evaluate_form(
    path: Path,
    *,
    modes: Sequence[str],
    converter: Converter,
    cache_dir: Path | None,
    repeat: int = 1,
    keep: bool = False,
    draw_dir: Path | None = None,
) -> FormEval:
    """Flatten, convert in each mode, read the output back and score one corpus form."""
    source = path.read_bytes()
    flat = flat_copy(source, cache_dir)
    gt, ink, summary = form_truth(path.name, source, flat)
    pages = summary["pages"]
    if isinstance(converter, StandIn):
        converter.register(flat, gt)
    plumber = min(plumber_seconds(flat) for _ in range(max(1, repeat)))
    summary["pdfplumber_s_per_page"] = plumber / pages
    evaluation = FormEval(summary, gt if keep or draw_dir else [], flat if keep else b"")
    runs = text_runs(flat)
    for mode in modes:
        result: Any = None
        error = trace = None
        elapsed = None
        for _ in range(max(1, repeat)):
            start = time.perf_counter()
            try:
                result = converter(flat, mode)
            except Exception as exc:  # the converter is under test: report, don't stop
                error = _error_text(exc)
                trace = traceback.format_exc()
                break
            took = time.perf_counter() - start
            elapsed = took if elapsed is None else min(elapsed, took)
        det: list[WidgetBox] = []
        schema: list[dict[str, Any]] = []
        if error is None:
            try:
                det = output_widgets(result.pdf)
                schema = schema_entries(result.schema)
            except Exception as exc:
                error = "reading the output: " + _error_text(exc)
                trace = traceback.format_exc()
        matches, figures = detection_figures(gt, det, ink)
        derived, labelled, _misses = label_name_stats(schema)
        dups = duplicate_names(schema)
        generic, near_text, _names = generic_name_stats(runs, schema)
        summary["modes"][mode] = {
            "error": error,
            "traceback": trace,
            "seconds": elapsed if error is None else None,
            "s_per_page": elapsed / pages if error is None and elapsed is not None else None,
            "reported_ms": getattr(result, "ms", None) if error is None else None,
            "schema_entries": len(schema),
            "duplicate_names": dups,
            "n_duplicate_names": len(dups),
            "labelled": labelled,
            "label_named": derived,
            "near_text": near_text,
            "generic_named": generic,
            **figures,
        }
        if keep:
            evaluation.details[mode] = ModeDetail(det, matches, schema)
        if draw_dir is not None:
            draw_pages(flat, gt, det, matches, draw_dir / path.stem, mode)
    return evaluation


# --------------------------------------------------------------------------- many forms


_WORKER_CONVERTER: Converter | None = None


def _warm_up(converter: Converter, modes: Sequence[str]) -> None:
    """Run every mode once on a small generated form, so imports and caches are not timed."""
    try:
        from kits.formkit import sample_form

        flat = flatten_form(sample_form()[0])
    except Exception:
        return
    if isinstance(converter, StandIn):
        converter.register(flat, [])
    plumber_seconds(flat)
    for mode in modes:
        with contextlib.suppress(Exception):
            converter(flat, mode)


def _init_worker(stand_in: str | None, jitter: float, modes: Sequence[str]) -> None:
    global _WORKER_CONVERTER
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    _WORKER_CONVERTER = load_converter(stand_in, jitter)
    _warm_up(_WORKER_CONVERTER, modes)


def _worker(path: Path, options: dict[str, Any]) -> dict[str, Any]:
    assert _WORKER_CONVERTER is not None
    return evaluate_form(path, converter=_WORKER_CONVERTER, **options).summary


def run_forms(
    paths: Sequence[Path],
    *,
    modes: Sequence[str],
    stand_in: str | None,
    jitter: float,
    cache_dir: Path | None,
    repeat: int,
    jobs: int,
    draw_dir: Path | None,
    progress: TextIO | None = sys.stderr,
) -> list[dict[str, Any]]:
    """Per-form summaries, in name order; ``jobs`` > 1 spreads forms over processes."""
    options = {"modes": modes, "cache_dir": cache_dir, "repeat": repeat, "draw_dir": draw_dir}
    summaries: list[dict[str, Any]] = []
    started = time.perf_counter()

    def report(summary: dict[str, Any]) -> None:
        summaries.append(summary)
        if progress is not None:
            rows = {m: summary["modes"][m] for m in modes}
            figures = "  ".join(
                f"{m} F1 {_fmt(comb_figures(row).get('f1'))} (plain {_fmt(row['f1'])})"
                for m, row in rows.items()
            )
            print(
                f"[{len(summaries)}/{len(paths)} {time.perf_counter() - started:6.1f}s] "
                f"{summary['form']}: {figures}",
                file=progress,
                flush=True,
            )

    if jobs <= 1:
        _init_worker(stand_in, jitter, modes)
        for path in paths:
            report(_worker(path, options))
    else:
        ordered = sorted(paths, key=lambda p: -p.stat().st_size)  # big ones first
        with ProcessPoolExecutor(
            max_workers=jobs, initializer=_init_worker, initargs=(stand_in, jitter, modes)
        ) as pool:
            futures = [pool.submit(_worker, path, options) for path in ordered]
            for future in as_completed(futures):
                report(future.result())
    return sorted(summaries, key=lambda s: s["form"])


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _micro(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts summed over forms, ratios recomputed, and the mean of the per-form F1s."""
    total = Score()
    for row in rows:
        total = total + Score.from_dict(row)
    # a form whose every widget lies over blank paper has nothing to find: not averaged
    per_form = [row["f1"] for row in rows if row["n_gt"] and row["f1"] is not None]
    return {**total.to_dict(), "mean_form_f1": statistics.fmean(per_form) if per_form else None}


def overall(summaries: Sequence[dict[str, Any]], modes: Sequence[str]) -> dict[str, Any]:
    """Micro-averaged figures over all forms, plain and comb-equivalent (``COMB_KEY``; left
    out when a summary has none), and the timing medians."""
    plumber = _median(s["pdfplumber_s_per_page"] for s in summaries)
    excluded: Counter[str] = Counter()
    blank: Counter[str] = Counter()
    by_class: Counter[str] = Counter()
    for s in summaries:
        excluded.update(s["excluded"])
        blank.update(s.get("gt_blank_by_class", {}))
        by_class.update(s["gt_by_class"])
    buttons = sum(by_class[c] for c in BUTTONS)
    blank_buttons = sum(blank[c] for c in BUTTONS)
    result: dict[str, Any] = {
        "forms": len(summaries),
        "pages": sum(s["pages"] for s in summaries),
        "gt": sum(s["gt"] for s in summaries),
        "excluded": dict(sorted(excluded.items())),
        "gt_blank_by_class": dict(sorted(blank.items())),
        "button_recall_ceiling": _ratio(buttons - blank_buttons, buttons),
        "pdfplumber_median_s_per_page": plumber,
        "modes": {},
    }
    for mode in modes:
        rows = [s["modes"][mode] for s in summaries]
        median = _median(row["s_per_page"] for row in rows)
        labelled = sum(row["labelled"] for row in rows)
        near_text = sum(row.get("near_text", 0) for row in rows)
        generic = sum(row.get("generic_named", 0) for row in rows)
        cells = [comb_figures(row) for row in rows]
        result["modes"][mode] = {
            **_micro(rows),
            **({COMB_KEY: _micro(cells)} if all(cells) else {}),
            "errors": sum(row["error"] is not None for row in rows),
            "duplicate_names": sum(row["n_duplicate_names"] for row in rows),
            "forms_with_duplicates": sum(row["n_duplicate_names"] > 0 for row in rows),
            "labelled": labelled,
            "label_named": sum(row["label_named"] for row in rows),
            "label_named_share": _ratio(sum(row["label_named"] for row in rows), labelled),
            "near_text": near_text,
            "generic_named": generic,
            "generic_share": _ratio(generic, near_text),
            "median_s_per_page": median,
            "ratio_to_pdfplumber": (median / plumber if median is not None and plumber else None),
        }
    return result


@dataclass
class Gate:
    status: str  # PASS, FAIL or SKIP
    text: str


def _gate(value: float | None, ok: bool, text: str) -> Gate:
    if value is None:
        return Gate("SKIP", text + " (not measured)")
    return Gate("PASS" if ok else "FAIL", text)


def acceptance(total: dict[str, Any]) -> list[Gate]:
    """The acceptance lines; a mode that did not run gives SKIP lines."""
    modes = total["modes"]
    fields = modes.get("fields", {})
    fast = modes.get("fields_fast", {})
    plumber = total["pdfplumber_median_s_per_page"]
    gates: list[Gate] = []
    for mode, figures in modes.items():
        errors = figures.get("errors")
        gates.append(
            _gate(errors, errors == 0, f"forms that failed to convert ({mode}) {errors} == 0")
        )
    cells = comb_figures(fields)
    f1 = cells.get("f1")
    gates.append(
        _gate(
            f1,
            (f1 or 0) >= MIN_F1,
            f"overall F1, comb-equivalent (fields) {_fmt(f1)} >= {MIN_F1} "
            f"(plain {_fmt(fields.get('f1'))})",
        )
    )
    recall = cells.get("button_recall")
    gates.append(
        _gate(
            recall,
            (recall or 0) >= MIN_BUTTON_RECALL,
            f"checkbox+radio recall, found as checkbox/radio (fields) {_fmt(recall)} "
            f">= {MIN_BUTTON_RECALL} (plain {_fmt(fields.get('button_recall'))})",
        )
    )
    for mode, figures in modes.items():
        dups = figures.get("duplicate_names")
        gates.append(
            _gate(
                dups,
                dups == 0,
                f"duplicate schema names ({mode}) {dups} in "
                f"{figures.get('forms_with_duplicates')} forms == 0",
            )
        )
    for mode, figures, limit in (
        ("fields", fields, MAX_FIELDS_RATIO),
        ("fields_fast", fast, MAX_FAST_RATIO),
    ):
        ratio = figures.get("ratio_to_pdfplumber")
        gates.append(
            _gate(
                ratio,
                (ratio or 0) <= limit,
                f"median s/page {mode} {_fmt(figures.get('median_s_per_page'), 4)} <= "
                f"{limit}x pdfplumber {_fmt(plumber, 4)} (ratio {_fmt(ratio, 2)})",
            )
        )
    generic = fields.get("generic_share")
    gates.append(
        _gate(
            generic,
            (generic if generic is not None else 1) <= MAX_GENERIC_SHARE,
            f"generic names where text is printed near (fields) {_pct(generic)} "
            f"({fields.get('generic_named')}/{fields.get('near_text')}) <= "
            f"{MAX_GENERIC_SHARE:.1%}",
        )
    )
    share = fields.get("label_named_share")
    gates.append(
        _gate(
            share,
            (share or 0) >= MIN_LABEL_NAMED,
            f"labelled fields named from their label (fields) {_pct(share)} "
            f"({fields.get('label_named')}/{fields.get('labelled')}) >= "
            f"{MIN_LABEL_NAMED:.0%}",
        )
    )
    return gates


# --------------------------------------------------------------------------- printing


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


#: How the comb-equivalent figures are shown beside the plain ones.
COMB_NOTE = (
    "comb-equivalent: a comb and a row of one-character boxes score alike; "
    "plain: a comb is one widget"
)


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def print_table(summaries: Sequence[dict[str, Any]], mode: str, out: TextIO) -> None:
    """One line per form for ``mode``: the comb-equivalent figures, the plain F1 beside."""
    head = (
        f"{'form':<44} {'pg':>3} {'gt':>5} {'det':>5} {'tp':>5} {'P':>6} {'R':>6} {'F1':>6} "
        f"{'plF1':>6} {'cF1':>6} {'btnR':>6} {'dup':>4} {'lbl':>6} {'s/pg':>7} {'plb':>7} "
        f"{'xplb':>5}"
    )
    print(f"\ndetect={mode} ({COMB_NOTE})", file=out)
    print(head, file=out)
    print("-" * len(head), file=out)
    for s in summaries:
        row = s["modes"][mode]
        cells = comb_figures(row)
        plumber = s["pdfplumber_s_per_page"]
        spp = row["s_per_page"]
        ratio = spp / plumber if spp is not None and plumber else None
        lbl = _ratio(row["label_named"], row["labelled"])
        print(
            f"{_short(s['form'], 44):<44} {s['pages']:>3} {_count(cells.get('n_gt')):>5} "
            f"{_count(cells.get('n_det')):>5} {_count(cells.get('tp')):>5} "
            f"{_fmt(cells.get('precision')):>6} {_fmt(cells.get('recall')):>6} "
            f"{_fmt(cells.get('f1')):>6} {_fmt(row['f1']):>6} {_fmt(cells.get('class_f1')):>6} "
            f"{_fmt(cells.get('button_recall')):>6} "
            f"{row['n_duplicate_names']:>4} {_pct(lbl):>6} {_fmt(spp, 4):>7} "
            f"{_fmt(plumber, 4):>7} {_fmt(ratio, 1):>5}",
            file=out,
        )
        if row["error"]:
            print(f"    ERROR {row['error']}", file=out)


def print_overall(total: dict[str, Any], gates: Sequence[Gate], out: TextIO) -> None:
    modes = list(total["modes"])
    excluded = ", ".join(f"{k} {v}" for k, v in total["excluded"].items()) or "none"
    print(
        f"\nOverall: {total['forms']} forms, {total['pages']} pages, {total['gt']} ground-truth "
        f"widgets (left out: {excluded})",
        file=out,
    )
    print(f"  figures: {COMB_NOTE} (in brackets)", file=out)
    print(f"{'':<34}" + "".join(f"{m:>24}" for m in modes), file=out)

    def line(label: str, values: Iterable[str]) -> None:
        print(f"  {label:<32}" + "".join(f"{v:>24}" for v in values), file=out)

    figures = [total["modes"][m] for m in modes]

    def both(text: Callable[[dict[str, Any]], str]) -> Iterator[str]:
        """Each mode's figure comb-equivalent, then plain in brackets."""
        for f in figures:
            cells = comb_figures(f)
            yield f"{text(cells) if cells else '-'} ({text(f)})"

    line("ground-truth widgets / cells", both(lambda f: str(f["n_gt"])))
    line("detected widgets", both(lambda f: str(f["n_det"])))
    line("matched (IoU >= 0.5)", both(lambda f: str(f["tp"])))
    line("precision", both(lambda f: _fmt(f["precision"])))
    line("recall", both(lambda f: _fmt(f["recall"])))
    line("F1", both(lambda f: _fmt(f["f1"])))
    line("mean per-form F1", both(lambda f: _fmt(f.get("mean_form_f1"))))
    line("class-aware F1", both(lambda f: _fmt(f["class_f1"])))
    print("  recall by ground-truth class: found / found with a class of its group", file=out)
    for cls in CLASSES:
        n = next((f["by_class"][cls]["n"] for f in figures if cls in f["by_class"]), 0)
        if not n:
            continue
        line(
            f"  {cls} (n={n})",
            both(
                lambda f, cls=cls: (
                    f"{_fmt(f['by_class'].get(cls, {}).get('recall'), 2)}/"
                    f"{_fmt(f['by_class'].get(cls, {}).get('class_recall'), 2)}"
                )
            ),
        )
    line("checkbox+radio recall (group)", both(lambda f: _fmt(f["button_recall"])))
    line(
        "duplicate names (forms)",
        (f"{f['duplicate_names']} ({f['forms_with_duplicates']})" for f in figures),
    )
    line(
        "named from label",
        (f"{_pct(f['label_named_share'])}" for f in figures),
    )
    line(
        "generic names with text near",
        (f"{_pct(f.get('generic_share'))}" for f in figures),
    )
    line("conversion errors", (str(f["errors"]) for f in figures))
    line("median s/page", (_fmt(f["median_s_per_page"], 4) for f in figures))
    line("  / median pdfplumber s/page", (_fmt(f["ratio_to_pdfplumber"], 2) for f in figures))
    print(
        f"  pdfplumber alone: median {_fmt(total['pdfplumber_median_s_per_page'], 4)} s/page",
        file=out,
    )
    blank = total.get("gt_blank_by_class", {})
    if blank:
        listed = ", ".join(f"{cls} {n}" for cls, n in blank.items())
        print(f"  ground truth over blank paper in the flat copy: {listed}", file=out)
    print(
        "  checkbox+radio recall ceiling (buttons with print under them): "
        f"{_fmt(total.get('button_recall_ceiling'))}",
        file=out,
    )
    print("\nAcceptance", file=out)
    for gate in gates:
        print(f"  {gate.status}  {gate.text}", file=out)


# --------------------------------------------------------------------------- debugging


class PageContext:
    """What the flat page has around a rectangle: printed words and vector graphics."""

    def __init__(self, flat: bytes) -> None:
        import pdfplumber

        self._doc = pdfplumber.open(io.BytesIO(flat))
        self._cache: dict[int, tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]] = {}

    def _page(self, index: int) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
        if index not in self._cache:
            page = self._doc.pages[index]
            words = page.extract_words(keep_blank_chars=False, use_text_flow=False)
            vectors = [*page.lines, *page.rects, *page.curves]
            self._cache[index] = (page, words, vectors)
        return self._cache[index]

    def describe(self, page_index: int, rect: Rect) -> str:
        """Vector graphics touching ``rect`` and the words inside, left of and above it."""
        page, words, vectors = self._page(page_index)
        x0, top, x1, bottom = user_rect_to_plumber(page, rect)
        pad = 1.5
        ink = Counter(
            v["object_type"]
            for v in vectors
            if v["x0"] <= x1 + pad
            and v["x1"] >= x0 - pad
            and v["top"] <= bottom + pad
            and v["bottom"] >= top - pad
        )
        inside = [
            w["text"]
            for w in words
            if x0 <= (w["x0"] + w["x1"]) / 2 <= x1 and top <= (w["top"] + w["bottom"]) / 2 <= bottom
        ]
        middle = (top + bottom) / 2
        left = [
            w
            for w in words
            if w["x1"] <= x0 + 1
            and x0 - w["x1"] < 150
            and w["top"] - 2 <= middle <= w["bottom"] + 2
        ]
        left_text = " ".join(w["text"] for w in sorted(left, key=lambda w: w["x0"])[-6:])
        above = [
            w
            for w in words
            if top - 14 <= w["bottom"] <= top + 1 and w["x1"] > x0 - 2 and w["x0"] < x1 + 2
        ]
        above_text = " ".join(w["text"] for w in sorted(above, key=lambda w: w["x0"])[:6])
        graphics = ", ".join(f"{n} {kind}" for kind, n in sorted(ink.items())) or "no vectors"
        parts = [graphics]
        if inside:
            parts.append(f"in: {_short(' '.join(inside), 30)!r}")
        if left_text:
            parts.append(f"left: {_short(left_text, 30)!r}")
        if above_text:
            parts.append(f"above: {_short(above_text, 30)!r}")
        return "; ".join(parts)

    def close(self) -> None:
        self._doc.close()


def _gap(a: Rect, b: Rect) -> float:
    """Distance between two rectangles (0 when they touch or overlap)."""
    dx = max(0.0, max(a[0], b[0]) - min(a[2], b[2]))
    dy = max(0.0, max(a[1], b[1]) - min(a[3], b[3]))
    return (dx * dx + dy * dy) ** 0.5


def _rect_text(rect: Rect) -> str:
    w, h = rect[2] - rect[0], rect[3] - rect[1]
    return f"[{rect[0]:6.1f} {rect[1]:6.1f} {rect[2]:6.1f} {rect[3]:6.1f}] {w:5.1f}x{h:<5.1f}"


def _diagnosis(truth: Rect, found: Rect, overlap: float) -> str:
    """How a detected rectangle differs from a ground-truth one."""
    if overlap <= 0:
        return f"{_gap(truth, found):.0f}pt apart"
    ratio = _area(found) / _area(truth) if _area(truth) else float("inf")
    inter = _intersection(truth, found)
    if inter >= 0.95 * _area(truth) and ratio > 1:
        return f"detection contains the truth, {ratio:.1f}x its area"
    if inter >= 0.95 * _area(found) and ratio < 1:
        return f"detection lies inside the truth, {ratio:.2f}x its area"
    dx = (found[0] + found[2] - truth[0] - truth[2]) / 2
    dy = (found[1] + found[3] - truth[1] - truth[3]) / 2
    return f"detection centre off by {dx:+.1f},{dy:+.1f}pt, {ratio:.2f}x the area"


#: Distance under which a rectangle counts as "near" in the debug summaries.
NEAR_PT = 10.0


def missed_kind(truth: WidgetBox, det: Sequence[WidgetBox], matched_det: set[int]) -> str:
    """Why a ground-truth widget went unmatched, in a few words."""
    near = _nearest(truth.rect, truth.page, det)
    if near is None or (near[1] == 0 and _gap(truth.rect, det[near[0]].rect) > NEAR_PT):
        return "nothing detected near it"
    j, value = near
    if value == 0:
        return "detection near it, not overlapping"
    inside = [
        k
        for k, d in enumerate(det)
        if d.page == truth.page and _intersection(truth.rect, d.rect) >= 0.9 * _area(d.rect) > 0
    ]
    if len(inside) > 1:
        return "split into several detections"
    if j in matched_det:
        return "overlapping detection matched to other truth"
    return "overlapping detection, IoU < 0.5"


def false_kind(found: WidgetBox, gt: Sequence[WidgetBox]) -> str:
    """What a false positive is, in a few words."""
    near = _nearest(found.rect, found.page, gt)
    if near is None or (near[1] == 0 and _gap(found.rect, gt[near[0]].rect) > NEAR_PT):
        return "no ground truth near it"
    if near[1] == 0:
        return "near ground truth, not overlapping"
    same_page = [g for g in gt if g.page == found.page]
    if sum(1 for g in same_page if _intersection(g.rect, found.rect) > 0.5 * _area(g.rect)) > 1:
        return "covers several ground-truth widgets"
    if any(_intersection(g.rect, found.rect) >= 0.9 * _area(found.rect) for g in same_page):
        return "inside a ground-truth widget"
    return "overlaps ground truth, IoU < 0.5"


def _summary_line(kinds: Counter[str], classes: Counter[str]) -> str:
    by_kind = ", ".join(f"{k} ({n})" for k, n in kinds.most_common())
    by_class = ", ".join(f"{k} ({n})" for k, n in classes.most_common())
    return f"   why: {by_kind or '-'}\n   class: {by_class or '-'}"


def _nearest(rect: Rect, page: int, others: Sequence[WidgetBox]) -> tuple[int, float] | None:
    """Index of the other widget on ``page`` with the highest IoU (else the closest), and IoU."""
    best: tuple[float, float, int] | None = None
    for j, other in enumerate(others):
        if other.page != page:
            continue
        key = (iou(rect, other.rect), -_gap(rect, other.rect), j)
        if best is None or key[:2] > best[:2]:
            best = key
    return None if best is None else (best[2], best[0])


def debug_report(
    gt: Sequence[WidgetBox], detail: ModeDetail, flat: bytes, mode: str, out: TextIO
) -> None:
    """Missed ground truth, false positives, wrong classes and naming problems of one form."""
    det, matches, schema = detail.det, detail.matches, detail.schema
    by_gt = {m.gt: m for m in matches}
    by_det = {m.det: m for m in matches}
    entries = {str(e["name"]): e for e in schema}
    context = PageContext(flat)
    counts = score(gt, det, matches)
    cells = comb_score(gt, det)
    print(
        f"\n== debug detect={mode}: {len(gt)} ground truth, {len(det)} detected, "
        f"{len(matches)} matched ({counts.tp_class} right class); P {_fmt(counts.precision)} "
        f"R {_fmt(counts.recall)} F1 {_fmt(counts.f1)} cF1 {_fmt(counts.class_f1)}; a comb as "
        f"its cells: {cells.n_gt} ground truth, {cells.n_det} detected, {cells.tp} matched, "
        f"F1 {_fmt(cells.f1)}; the lists below are of whole widgets",
        file=out,
    )
    per_page = Counter(w.page for w in gt)
    det_page = Counter(w.page for w in det)
    hit_page = Counter(gt[m.gt].page for m in matches)
    print("   page  gt  det  matched", file=out)
    for page in sorted(set(per_page) | set(det_page)):
        print(f"   {page:>4} {per_page[page]:>3} {det_page[page]:>4} {hit_page[page]:>8}", file=out)

    def det_text(j: int) -> str:
        d = det[j]
        entry = entries.get(d.name) or entries.get(d.name.split(".")[0]) or {}
        conf = entry.get("confidence")
        label = entry.get("label")
        extra = f" label={label!r}" if label else ""
        extra += f" conf={conf:.2f}" if isinstance(conf, int | float) else ""
        return f"det#{j} {d.cls} {d.name!r}{extra}"

    missed = [i for i in range(len(gt)) if i not in by_gt]
    print(
        f"\n-- missed ground truth ({len(missed)}): page rect class name | nearest detection"
        " | what the flat page has there",
        file=out,
    )
    kinds = Counter(missed_kind(gt[i], det, set(by_det)) for i in missed)
    print(_summary_line(kinds, Counter(gt[i].cls for i in missed)), file=out)
    for i in sorted(missed, key=lambda i: (gt[i].page, -gt[i].rect[3], gt[i].rect[0])):
        g = gt[i]
        print(
            f"  p{g.page} {_rect_text(g.rect)} {g.cls:<9} {_short(g.name, 40)!r}"
            + (f" tip={_short(g.tooltip, 40)!r}" if g.tooltip else ""),
            file=out,
        )
        near = _nearest(g.rect, g.page, det)
        if near is None:
            print("      nearest: no detection on this page", file=out)
        else:
            j, value = near
            taken = by_det.get(j)
            note = f", already matched to gt#{taken.gt} (IoU {taken.iou:.2f})" if taken else ""
            print(
                f"      nearest: IoU {value:.3f} {_rect_text(det[j].rect)} {det_text(j)}: "
                f"{_diagnosis(g.rect, det[j].rect, value)}{note}",
                file=out,
            )
        print(f"      page: {context.describe(g.page, g.rect)}", file=out)

    wrong = [m for m in matches if not same_group(gt[m.gt].cls, det[m.det].cls)]
    print(f"\n-- matched with a class of another group ({len(wrong)})", file=out)
    for m in wrong:
        g = gt[m.gt]
        print(
            f"  p{g.page} {_rect_text(g.rect)} truth {g.cls:<9} got {det_text(m.det)} "
            f"IoU {m.iou:.2f}",
            file=out,
        )
        print(f"      page: {context.describe(g.page, g.rect)}", file=out)

    false = [j for j in range(len(det)) if j not in by_det]
    print(f"\n-- false positives ({len(false)}): page rect | nearest ground truth", file=out)
    kinds = Counter(false_kind(det[j], gt) for j in false)
    print(_summary_line(kinds, Counter(det[j].cls for j in false)), file=out)
    for j in sorted(false, key=lambda j: (det[j].page, -det[j].rect[3], det[j].rect[0])):
        d = det[j]
        print(f"  p{d.page} {_rect_text(d.rect)} {det_text(j)}", file=out)
        near = _nearest(d.rect, d.page, gt)
        covered = sum(1 for g in gt if g.page == d.page and _intersection(g.rect, d.rect) > 0)
        if near is None:
            print("      nearest: no ground truth on this page", file=out)
        else:
            i, value = near
            taken = by_gt.get(i)
            note = f", matched to det#{taken.det} (IoU {taken.iou:.2f})" if taken else ", missed"
            print(
                f"      nearest: IoU {value:.3f} {_rect_text(gt[i].rect)} gt#{i} {gt[i].cls} "
                f"{_short(gt[i].name, 40)!r}: {_diagnosis(gt[i].rect, d.rect, value)}{note}"
                + (f"; overlaps {covered} ground-truth widgets" if covered > 1 else ""),
                file=out,
            )
        print(f"      page: {context.describe(d.page, d.rect)}", file=out)

    if matches:
        low = sorted(matches, key=lambda m: m.iou)[:5]
        print(
            "\n-- loosest matches: " + ", ".join(f"gt#{m.gt}~det#{m.det} {m.iou:.2f}" for m in low),
            file=out,
        )
    dups = duplicate_names(schema)
    print(f"\n-- duplicate schema names ({len(dups)})", file=out)
    for name, n in dups.items():
        print(f"  {name!r} x{n}", file=out)
    _derived, labelled, misses = label_name_stats(schema)
    print(
        f"\n-- names not derived from their label ({len(misses)} of {labelled} labelled)", file=out
    )
    for name, label in misses[:40]:
        print(f"  {name!r} <- label {_short(label, 60)!r}", file=out)
    unlabelled = sum(1 for e in schema if not e["label"])
    print(f"  ({unlabelled} schema entries have no label)", file=out)
    context.close()


# --------------------------------------------------------------------------- drawing

#: Class tags drawn next to boxes.
TAGS = {
    "text": "T",
    "date": "D",
    "comb": "#",
    "choice": "C",
    "checkbox": "x",
    "radio": "o",
    "signature": "S",
}


def draw_pages(
    flat: bytes,
    gt: Sequence[WidgetBox],
    det: Sequence[WidgetBox],
    matches: Sequence[Match],
    out_dir: Path,
    mode: str,
    scale: float = 2.0,
) -> list[Path]:
    """PNG previews of the flat pages that have widgets: ground truth green, detections red.

    Matched boxes are thin, missed ground truth and false positives thick; a detection whose
    class is of another group than its match is orange. Each box has a class tag (``TAGS``).
    """
    import pypdfium2 as pdfium

    out_dir.mkdir(parents=True, exist_ok=True)
    matched_gt = {m.gt for m in matches}
    matched_det = {m.det: m.gt for m in matches}
    boxes: dict[int, list[tuple[Rect, str, int, str, bool]]] = {}
    for i, g in enumerate(gt):
        style = (g.rect, "#00a000", 1 if i in matched_gt else 3, TAGS.get(g.cls, "?"), True)
        boxes.setdefault(g.page, []).append(style)
    for j, d in enumerate(det):
        tag = TAGS.get(d.cls, "?")
        if j not in matched_det:
            style = (d.rect, "#e00000", 3, tag, False)
        elif same_group(gt[matched_det[j]].cls, d.cls):
            style = (d.rect, "#e00000", 1, tag, False)
        else:
            style = (d.rect, "#ff8c00", 2, tag, False)
        boxes.setdefault(d.page, []).append(style)
    written: list[Path] = []
    doc = pdfium.PdfDocument(flat)
    try:
        for index in sorted(boxes):
            if index >= len(doc):
                continue
            page = doc[index]
            try:
                image = _draw_page(page, boxes[index], scale)
            finally:
                page.close()
            legend = (
                f"{mode} p{index}: green truth, red detected; thick = missed / false positive; "
                "orange = wrong class"
            )
            from PIL import ImageDraw

            ImageDraw.Draw(image).text((4, 4), legend, fill="#0000c0")
            target = out_dir / f"{mode}-p{index:03d}.png"
            image.save(target)
            written.append(target)
    finally:
        doc.close()
    return written


def _draw_page(page: Any, boxes: Sequence[tuple[Rect, str, int, str, bool]], scale: float) -> Any:
    """Render ``page`` and outline ``boxes`` (rect, colour, width, tag, tag above) on it."""
    import ctypes

    import pypdfium2.raw as pdfium_c
    from PIL import ImageDraw

    image = page.render(scale=scale).to_pil().convert("RGB")
    width, height = image.size
    draw = ImageDraw.Draw(image)

    def device(x: float, y: float) -> tuple[int, int]:
        dx, dy = ctypes.c_int(), ctypes.c_int()
        pdfium_c.FPDF_PageToDevice(
            page.raw, 0, 0, width, height, 0, x, y, ctypes.byref(dx), ctypes.byref(dy)
        )
        return dx.value, dy.value

    for rect, colour, thick, tag, above in boxes:
        corners = [device(x, y) for x in (rect[0], rect[2]) for y in (rect[1], rect[3])]
        xs, ys = [c[0] for c in corners], [c[1] for c in corners]
        draw.rectangle((min(xs), min(ys), max(xs), max(ys)), outline=colour, width=thick)
        draw.text((min(xs), min(ys) - 10 if above else max(ys) + 1), tag, fill=colour)
    return image


# --------------------------------------------------------------------------- main


def select_forms(corpus: Path, pattern: str | None) -> list[Path]:
    """Corpus PDFs whose file name matches ``pattern`` (a glob; no wildcard: a substring)."""
    paths = sorted(corpus.glob("*.pdf"))
    if not pattern:
        return paths
    globs = [p.strip() for p in pattern.split(",") if p.strip()]
    globs = [g if any(ch in g for ch in "*?[") else f"*{g}*" for g in globs]
    return [p for p in paths if any(fnmatch.fnmatch(p.name, g) for g in globs)]


def find_form(corpus: Path, name: str) -> Path:
    """The one corpus form called ``name`` (file name, stem or unique substring)."""
    paths = sorted(corpus.glob("*.pdf"))
    exact = [p for p in paths if name in {p.name, p.stem}]
    if exact:
        return exact[0]
    hits = [p for p in paths if name.lower() in p.name.lower()]
    if len(hits) != 1:
        names = ", ".join(p.name for p in hits) or "none"
        raise SystemExit(f"--debug-form {name!r} must name one form; matches: {names}")
    return hits[0]


def _versions() -> dict[str, str]:
    found = {}
    for package in ("pypdf", "pdfplumber", "pypdfium2", "scipy", "airflow-provider-fillpdf"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "missing"
    return found


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="forms folder")
    parser.add_argument("--forms", help="glob(s) of form file names, comma-separated")
    parser.add_argument("--mode", choices=(*MODES, "both"), default="both")
    parser.add_argument("--jobs", type=int, default=1, help="forms in parallel processes")
    parser.add_argument("--repeat", type=int, default=1, help="time each step N times, keep min")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--check", action="store_true", help="exit 1 if an acceptance line fails")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="flat-copy cache dir")
    parser.add_argument("--no-cache", action="store_true", help="flatten afresh, cache nothing")
    parser.add_argument(
        "--stand-in",
        choices=("empty", "truth"),
        help="use a stand-in converter: no fields, or the ground truth jittered",
    )
    parser.add_argument("--jitter", type=float, default=1.0, help="stand-in jitter, pt")
    parser.add_argument("--debug-form", metavar="NAME", help="evaluate one form and explain")
    parser.add_argument("--draw", type=Path, metavar="DIR", help="write preview PNGs here")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    if not args.corpus.is_dir():
        print(f"corpus not found at {args.corpus} (set --corpus or FILLPDF_CORPUS); skipped")
        return 0
    modes = MODES if args.mode == "both" else (args.mode,)
    cache_dir = None if args.no_cache else args.cache
    if args.stand_in is None:
        try:
            load_converter()
        except ImportError as exc:
            print(f"the converter is not importable ({exc}); use --stand-in empty|truth")
            return 1 if args.check else 0
    out = sys.stdout
    print(
        f"detect_eval: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        + ", ".join(f"{k} {v}" for k, v in _versions().items()),
        file=out,
    )
    converter_name = f"stand-in {args.stand_in}" if args.stand_in else "fillpdf convert()"
    print(
        f"converter: {converter_name}; modes: {', '.join(modes)}; jobs {args.jobs}; "
        f"repeat {args.repeat}; IoU >= {IOU_MIN}; timings are wall seconds in each worker "
        "process" + (" (workers share the CPUs)" if args.jobs > 1 else ""),
        file=out,
    )

    if args.debug_form:
        path = find_form(args.corpus, args.debug_form)
        _init_worker(args.stand_in, args.jitter, modes)
        assert _WORKER_CONVERTER is not None
        evaluation = evaluate_form(
            path,
            modes=modes,
            converter=_WORKER_CONVERTER,
            cache_dir=cache_dir,
            repeat=args.repeat,
            keep=True,
            draw_dir=args.draw,
        )
        summaries = [evaluation.summary]
        s = evaluation.summary
        print(
            f"\n{path.name}: {s['pages']} pages, ground truth {s['gt_by_class']}, "
            f"left out {s['excluded'] or 'none'}",
            file=out,
        )
        for mode in modes:
            trace = s["modes"][mode]["traceback"]
            if trace:
                print(f"\n== detect={mode} failed:\n{trace}", file=out)
            debug_report(evaluation.gt, evaluation.details[mode], evaluation.flat, mode, out)
    else:
        paths = select_forms(args.corpus, args.forms)
        if not paths:
            print(f"no forms match {args.forms!r} in {args.corpus}")
            return 0
        summaries = run_forms(
            paths,
            modes=modes,
            stand_in=args.stand_in,
            jitter=args.jitter,
            cache_dir=cache_dir,
            repeat=args.repeat,
            jobs=args.jobs,
            draw_dir=args.draw,
            progress=None if args.quiet else sys.stderr,
        )

    for mode in modes:
        print_table(summaries, mode, out)
    total = overall(summaries, modes)
    gates = acceptance(total)
    print_overall(total, gates, out)
    if args.draw:
        print(f"\npreviews: {args.draw.resolve()}/<form>/<mode>-pNNN.png", file=out)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "settings": {
                "corpus": str(args.corpus),
                "forms": args.forms,
                "debug_form": args.debug_form,
                "modes": list(modes),
                "jobs": args.jobs,
                "repeat": args.repeat,
                "converter": converter_name,
                "iou_min": IOU_MIN,
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "versions": _versions(),
            },
            "forms": summaries,
            "overall": total,
            "acceptance": [{"status": g.status, "line": g.text} for g in gates],
        }
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"JSON: {args.json}", file=out)
    if args.check and any(g.status == "FAIL" for g in gates):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
