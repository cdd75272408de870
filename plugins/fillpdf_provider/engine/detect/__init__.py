"""Field detection on flat PDFs: drawn boxes, lines, combs, checkboxes and radio circles.

``detect_fields`` reads each page's chars and vector graphics with pdfplumber (or, in the
fast mode, with PDFium, which reads them several times faster) and returns ``Detected``
fields in PDF user space, named from their printed labels.

The drawn cues give a broad pool of candidates; the learned scorer (``scorer.py``, trained
on real forms) says which of them are fields, and how sure it is. Without a model the
rules alone decide.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fillpdf_provider.engine.detect.features import page_features
from fillpdf_provider.engine.detect.fields import (
    MAX_FIELDS_PER_PAGE,
    NOT_FOR_YOU,
    Candidate,
    find_candidates,
    typed,
)
from fillpdf_provider.engine.detect.labels import LabelIndex, snake, unique_names
from fillpdf_provider.engine.detect.model import Detected, Rect
from fillpdf_provider.engine.detect.naming import (
    BORROWED_CONFIDENCE,
    CellName,
    OwnLabel,
    cell_names,
    date_hint,
    nearby_name,
    option_grids,
    own_label,
    reading_order,
    union,
)
from fillpdf_provider.engine.detect.page import Box, Line, PageGeometry, ToPdf, read_page
from fillpdf_provider.engine.detect.scorer import Model, choose, shipped_model
from fillpdf_provider.engine.detect.variants import with_variants

if TYPE_CHECKING:
    from pdfplumber.page import Page

MODES = ("fields", "fields_fast")


def detect_fields(
    pdf: bytes,
    mode: str = "fields",
    max_pages: int | None = None,
    *,
    model: Model | str | None = "shipped",
    min_confidence: float = 0.0,
    drawn: Sequence[int] | None = None,
) -> list[Detected]:
    """Every field found on the pages of ``pdf``, with unique names.

    ``model`` is the scorer to use ("shipped" for the package's own in ``fields`` mode, None
    for the rules alone); ``fields_fast`` keeps to the rules, as scoring the pool costs more
    than the time that mode saves. Fields less sure than ``min_confidence`` are left out.
    ``drawn`` is each page's content as drawn, from ``check_content_sizes``.
    """
    if mode not in MODES:
        raise ValueError(f"detect must be one of {', '.join(MODES)}, not {mode!r}")
    scorer = model
    if model == "shipped":
        scorer = shipped_model() if mode == "fields" else None
    assert scorer is None or isinstance(scorer, Model)
    found: list[Detected] = []
    complete = mode == "fields"
    for index, geo, to_pdf in page_geometries(pdf, mode, max_pages, drawn):
        if scorer is None:
            fields = _page_fields(index, geo, to_pdf, complete=complete)
        else:
            fields = _scored_page_fields(index, geo, to_pdf, scorer, complete=complete)
        found.extend(f for f in fields if f.confidence >= min_confidence)
    _name(found)
    return found


#: More candidates than this on one page is a pattern or artwork, not a form: such a page is
#: left to the rules, whose work is bounded, rather than scored.
MAX_POOL = 4000


@dataclass
class Pool:
    """A page's candidates, as the scorer reads them."""

    candidates: list[Candidate]
    features: np.ndarray  # one row of ``features.FEATURES`` per candidate
    labels: list[str | None]  # each candidate's label
    label_index: LabelIndex
    vetoed: np.ndarray  # what the rules never keep (see ``vetoed``); the scorer weighs it


def page_pool(geo: PageGeometry, *, complete: bool) -> Pool | None:
    """Every candidate of a page with its flags, its features and its label.

    None for a page with more than ``MAX_POOL`` candidates.
    """
    found = find_candidates(geo, complete=complete, pool=True)
    if len(found) > MAX_POOL:
        return None
    candidates = with_variants(geo, found)
    if len(candidates) > MAX_POOL:
        return None
    _flag_office_use(candidates, geo)
    label_index = LabelIndex(geo.lines)
    features, labels = page_features(geo, candidates, label_index)
    return Pool(candidates, features, labels, label_index, vetoed(candidates))


def _scored_page_fields(
    index: int, geo: PageGeometry, to_pdf: ToPdf, scorer: Model, *, complete: bool
) -> list[Detected]:
    pool = page_pool(geo, complete=complete)
    if pool is None:
        return _page_fields(index, geo, to_pdf, complete=complete)
    candidates = pool.candidates
    if not candidates:
        return []
    boxes = np.array([c.box for c in candidates], dtype=np.float64)
    buttons = np.array([c.kind in ("checkbox", "radio") for c in candidates])
    probability = scorer.score(pool.features, boxes, buttons, pool.vetoed)
    confidence = scorer.calibrated(probability)
    floor = scorer.keep_thresholds(pool.features, buttons, pool.vetoed)
    kept = choose(boxes, buttons, probability, floor)
    if len(kept) > MAX_FIELDS_PER_PAGE:
        kept = kept[:MAX_FIELDS_PER_PAGE]
    chosen = [(candidates[i], pool.labels[i], float(confidence[i])) for i in sorted(kept)]
    return _fields_of(index, chosen, pool.label_index, to_pdf)


def page_geometries(
    pdf: bytes, mode: str, max_pages: int | None, drawn: Sequence[int] | None = None
) -> Iterator[tuple[int, PageGeometry, ToPdf]]:
    """Each page read for detection: its index, geometry and the map back to PDF space.

    ``drawn`` is each page's content as drawn (``check_content_sizes``): a page whose form
    XObjects make it heavy is read through PDFium like a page whose own content is.
    """
    if mode == "fields_fast":
        from fillpdf_provider.engine.detect.pdfium_page import read_pdfium_pages

        yield from read_pdfium_pages(pdf, max_pages)
        return
    yield from _plumber_geometries(pdf, max_pages, drawn)


def _plumber_geometries(
    pdf: bytes, max_pages: int | None, drawn: Sequence[int] | None
) -> Iterator[tuple[int, PageGeometry, ToPdf]]:
    """The pages read with pdfplumber, but for those pdfminer cannot read in good time."""
    import pdfplumber

    from fillpdf_provider.engine.detect.pdfium_page import read_pdfium_page

    failures = _pdfminer_failures()

    with pdfplumber.open(io.BytesIO(pdf)) as document:
        for index, page in enumerate(document.pages):
            if max_pages is not None and index >= max_pages:
                break
            heavy = drawn is not None and index < len(drawn) and drawn[index] > HEAVY_PAGE_BYTES
            read = _read_with_pdfminer(page, heavy, failures)
            # pdfminer would take minutes over a page this busy, and gives up on some damaged
            # pages; PDFium reads both, bounded.
            yield (index, *read) if read else (index, *read_pdfium_page(pdf, index))
            page.close()


def _read_with_pdfminer(
    page: Page, heavy: bool, failures: tuple[type[BaseException], ...]
) -> tuple[PageGeometry, ToPdf] | None:
    """A page's geometry read by pdfminer, or None for a heavy page or one it fails on."""
    try:
        if not heavy and _content_size(page) <= HEAVY_PAGE_BYTES:
            return read_page(page), _plumber_to_pdf(page)
    except failures:
        pass  # a font that is its own descendant, a colour space inside itself...
    return None


def _pdfminer_failures() -> tuple[type[BaseException], ...]:
    from pdfminer.psexceptions import PSException
    from pdfplumber.utils.exceptions import MalformedPDFException, PdfminerException

    return (PSException, PdfminerException, MalformedPDFException, RecursionError)


#: Pages whose content streams are larger than this are read through PDFium in every mode.
HEAVY_PAGE_BYTES = 1_500_000


def _content_size(page: Page) -> int:
    """The size of the page's own content streams, decoded."""
    from pdfminer.pdftypes import resolve1

    total = 0
    contents = getattr(page.page_obj, "contents", None) or []
    for stream in contents:
        stream = resolve1(stream)
        if hasattr(stream, "get_data"):
            total += len(stream.get_data())
    return total


def _plumber_to_pdf(page: Page) -> ToPdf:
    """The map from pdfplumber's top-down page space back to PDF user space."""
    x0, y0, x1, y1 = (float(v) for v in page.page_obj.mediabox)
    rotation = int(getattr(page, "rotation", 0) or 0) % 360

    def point(x: float, top: float) -> tuple[float, float]:
        if rotation == 90:
            return top + 2 * x0, x
        if rotation == 180:
            return x1 - x, top + 2 * y0
        if rotation == 270:
            return (x1 - x0) - top, (y1 + y0) - x
        return x, (y1 - y0) - top

    def convert(box: Box) -> Rect:
        ax, ay = point(box[0], box[1])
        bx, by = point(box[2], box[3])
        return (min(ax, bx), min(ay, by), max(ax, bx), max(ay, by))

    return convert


def _page_fields(index: int, geo: PageGeometry, to_pdf: ToPdf, *, complete: bool) -> list[Detected]:
    candidates = _outside_office_use(find_candidates(geo, complete=complete), geo)
    labels = LabelIndex(geo.lines)
    chosen: list[tuple[Candidate, str | None, float]] = []
    for cand in candidates:
        label = labels.label_for(cand)
        if cand.kind != "radio" and label and NOT_FOR_YOU.search(label):
            continue  # "For office use only", "Do not write in this area"
        chosen.append((cand, label, _confidence(cand, label)))
    return _fields_of(index, chosen, labels, to_pdf)


def _fields_of(
    index: int,
    chosen: list[tuple[Candidate, str | None, float]],
    labels: LabelIndex,
    to_pdf: ToPdf,
) -> list[Detected]:
    """The chosen candidates as fields in PDF space, in reading order, named (naming.py):
    the rows of an option grid and circles in a row become radio groups, the cells of a
    table are named by its headers and row labels."""
    buttons = [(c, conf) for c, _label, conf in chosen if c.kind in ("checkbox", "radio")]
    grid = option_grids([c for c, _ in buttons], labels)
    in_grid = {id(cand) for row in grid for cand, _option in row.buttons}
    sure = {id(cand): confidence for cand, confidence in buttons}
    placed: list[tuple[Box, Detected]] = []
    for number, row in enumerate(grid):
        for cand, option in row.buttons:
            radio = _radio(index, cand, row.question, option, number, sure[id(cand)], to_pdf)
            placed.append((cand.box, radio))
    rest = [(c, label, conf) for c, label, conf in chosen if id(c) not in in_grid]
    placed.extend(_fields_beside_grids(index, chosen, rest, labels, to_pdf))
    radios = [(cand, confidence) for cand, _label, confidence in rest if cand.kind == "radio"]
    placed.extend(_radio_groups(index, radios, labels, to_pdf, first_group=len(grid)))
    order = reading_order([box for box, _ in placed])
    return [placed[i][1] for i in order]


def _fields_beside_grids(
    index: int,
    chosen: list[tuple[Candidate, str | None, float]],
    rest: list[tuple[Candidate, str | None, float]],
    labels: LabelIndex,
    to_pdf: ToPdf,
) -> list[tuple[Box, Detected]]:
    """The fields of ``rest`` that are no radio button, each named by its table, its own
    label (beside it on its line before one borrowed from above) or the text near it."""
    found = [(c, label) for c, label, _conf in chosen]
    cells = [c for c, _label, _conf in rest if c.kind not in ("checkbox", "radio")]
    mine = [label for c, label, _conf in rest if c.kind not in ("checkbox", "radio")]
    table = cell_names(cells, mine, labels)
    own = {id(c): own_label(c, label, found, labels) for c, label in zip(cells, mine, strict=True)}
    renamed = {id(cells[i]): name for i, name in table.items()}
    placed = []
    for cand, label, confidence in rest:
        if cand.kind == "radio":
            continue
        named = own.get(id(cand), OwnLabel(label))
        placed.append((cand.box, _field(index, cand, named, confidence, renamed, labels, to_pdf)))
    return placed


def _field(
    index: int,
    cand: Candidate,
    own: OwnLabel,
    confidence: float,
    renamed: dict[int, CellName],
    labels: LabelIndex,
    to_pdf: ToPdf,
) -> Detected:
    """A field of its own (not a radio button), named from its label, its table or, with
    neither, the text printed near it. Only its own label types it (a date, a signature);
    a name read from another field's label is a guess, sure at most ``BORROWED_CONFIDENCE``."""
    label = own.text
    kind = typed(cand.kind, None if own.borrowed else label)
    cell = renamed.get(id(cand))
    shown, af_format = date_hint(label)
    if own.borrowed:
        af_format = None
    if cell is None and not snake(shown):
        cell = nearby_name(cand.box, labels, button=cand.kind == "checkbox")
    if af_format is not None and kind == "text":
        kind = "date"
    name = cell.name if cell is not None else snake(shown)
    if own.borrowed and cell is None:
        confidence = min(confidence, BORROWED_CONFIDENCE)
    return Detected(
        type=kind,
        page=index,
        rect=to_pdf(cand.box),
        name=name,
        label=cell.label if cell is not None else shown,
        confidence=confidence,
        multiline=cand.multiline,
        max_length=cand.max_length,
        comb=cand.max_length is not None,
        date_format=af_format if kind == "date" else None,
        cue=cand.cue,
    )


def _radio(
    index: int,
    cand: Candidate,
    question: str | None,
    export: str,
    group: int,
    confidence: float,
    to_pdf: ToPdf,
) -> Detected:
    return Detected(
        type="radio",
        page=index,
        rect=to_pdf(cand.box),
        name=snake(question),
        label=question,
        confidence=confidence,
        export=export,
        group=group,
        cue=cand.cue,
    )


#: What the rules know is not for the reader to fill: a table's heading row, a struck-out or
#: tinted cell, an office-use area, a page of artwork.
VETOES = frozenset({"header_row", "row_heading", "hatched", "shaded", "office_use", "button_flood"})


def vetoed(candidates: list[Candidate]) -> np.ndarray:
    """The candidates never kept: those a veto flags, and whatever sits in a cell a veto
    flags (a heading cell read whole, or as the blank after its label)."""
    flagged = np.array([bool(c.flags & VETOES) for c in candidates], dtype=bool)
    cells = [c.region for c, f in zip(candidates, flagged, strict=True) if f and c.region]
    if not cells:
        return flagged
    regions = np.array(cells, dtype=np.float64)
    boxes = np.array([c.box for c in candidates], dtype=np.float64)
    cx = ((boxes[:, 0] + boxes[:, 2]) / 2)[:, None]
    cy = ((boxes[:, 1] + boxes[:, 3]) / 2)[:, None]
    inside = (
        (regions[None, :, 0] <= cx)
        & (cx <= regions[None, :, 2])
        & (regions[None, :, 1] <= cy)
        & (cy <= regions[None, :, 3])
    )
    return flagged | inside.any(axis=1)


def _flag_office_use(candidates: list[Candidate], geo: PageGeometry) -> None:
    """Mark what the rules leave to the office (the heading's strip, or its own label)."""
    outside = {id(c) for c in _outside_office_use(candidates, geo)}
    for cand in candidates:
        if id(cand) not in outside:
            cand.flags.add("office_use")


def _outside_office_use(candidates: list[Candidate], geo: PageGeometry) -> list[Candidate]:
    """Drop what sits in the strip under an "office use only" heading: the office fills it."""
    bands = [_office_band(line, geo) for line in geo.lines if NOT_FOR_YOU.search(line.text)]
    if not bands:
        return candidates
    kept = []
    for cand in candidates:
        cx, cy = (cand.box[0] + cand.box[2]) / 2, (cand.box[1] + cand.box[3]) / 2
        if not any(b[0] <= cx <= b[2] and b[1] < cy <= b[3] for b in bands):
            kept.append(cand)
    return kept


def _office_band(line: Line, geo: PageGeometry) -> Box:
    """The strip under an office-use heading: as wide as the shaded bar holding it, if any."""
    x0, x1 = line.x0 - 60.0, line.x1 + 60.0
    cx = (line.x0 + line.x1) / 2
    cy = (line.top + line.bottom) / 2
    for box, tinted in geo.fills:
        if tinted and box[0] <= cx <= box[2] and box[1] <= cy <= box[3]:
            x0, x1 = box[0] - 2.0, box[2] + 2.0
    return (x0, line.bottom, x1, line.bottom + 28.0)


def _confidence(cand: Candidate, label: str | None) -> float:
    value = cand.confidence + (0.05 if label else -0.15)
    return round(min(0.99, max(0.05, value)), 2)


def _radio_groups(
    index: int,
    radios: list[tuple[Candidate, float]],
    labels: LabelIndex,
    to_pdf: ToPdf,
    first_group: int = 0,
) -> list[tuple[Box, Detected]]:
    """Circles that line up in a row (or a column) are one question's options; a circle
    alone is a yes-or-no box (a radio group of one option could never be cleared).
    Groups are numbered from ``first_group``, each with its circles' page boxes."""
    sure = {id(cand): confidence for cand, confidence in radios}
    found: list[tuple[Box, Detected]] = []
    for number, group in enumerate(_lined_up([c for c, _ in radios]), start=first_group):
        options = [labels.label_for(c) for c in group]
        question = _question(group, options, labels)
        if len(group) == 1:
            (cand,) = group
            label = options[0] or question
            alone = Detected(
                type="checkbox",
                page=index,
                rect=to_pdf(cand.box),
                name=snake(label),
                label=label,
                confidence=sure[id(cand)],
                cue=cand.cue,
            )
            found.append((cand.box, alone))
            continue
        exports = unique_names([snake(o) or str(i) for i, o in enumerate(options)])
        for cand, export in zip(group, exports, strict=True):
            radio = _radio(index, cand, question, export, number, sure[id(cand)], to_pdf)
            found.append((cand.box, radio))
    return found


def _lined_up(circles: list[Candidate]) -> list[list[Candidate]]:
    """The circles in groups, in reading order: each joins the first group it follows on."""
    groups: list[list[Candidate]] = []
    ordered = sorted(circles, key=lambda c: (round((c.box[1] + c.box[3]) / 4), c.box[0]))
    for cand in ordered:
        group = _group_it_follows(groups, cand)
        if group is None:
            groups.append([cand])
        else:
            group.append(cand)
    return groups


def _group_it_follows(groups: list[list[Candidate]], cand: Candidate) -> list[Candidate] | None:
    """The first group whose last circle ``cand`` follows in a row (same middle, to the
    right) or in a column (same left, below); None when it starts a group of its own."""
    middle = (cand.box[1] + cand.box[3]) / 2
    for group in groups:
        last = group[-1]
        same_row = (
            abs((last.box[1] + last.box[3]) / 2 - middle) <= 3
            and 0 < cand.box[0] - last.box[2] <= 260
        )
        same_column = abs(last.box[0] - cand.box[0]) <= 3 and 0 < cand.box[1] - last.box[3] <= 26
        if same_row or same_column:
            return group
    return None


def _question(group: list[Candidate], options: list[str | None], labels: LabelIndex) -> str | None:
    """A radio group's question: the text left of its first option, else the text above it.

    A lone circle's own label asks the question; text that is one of the options does not.
    """
    question = labels.left_of(group[0].box, 260) if len(group) > 1 else options[0]
    if question in options:
        question = None
    return question or labels.above(union([c.box for c in group]), 24) or options[0]


def _name(fields: list[Detected]) -> None:
    """Unique names across the document; a radio group keeps one name for all its buttons."""
    bases: list[str] = []
    slots: list[int] = []
    group_slot: dict[tuple[int, int | None], int] = {}
    for field in fields:
        base = field.name or _FALLBACK.get(field.type, "text")
        if field.type == "radio":
            key = (field.page, field.group)
            if key in group_slot:
                slots.append(group_slot[key])
                continue
            group_slot[key] = len(bases)
        slots.append(len(bases))
        bases.append(base)
    names = unique_names(bases)
    for field, slot in zip(fields, slots, strict=True):
        field.name = names[slot]


_FALLBACK = {"checkbox": "checkbox", "radio": "choice", "signature": "signature", "date": "date"}
