"""Field detection on flat PDFs: drawn boxes, lines, combs, checkboxes and radio circles.

``detect_fields`` reads each page's chars and vector graphics with pdfplumber (or, in the
fast mode, with PDFium, which reads them several times faster) and returns ``Detected``
fields in PDF user space, named from their printed labels.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

from fillpdf_provider.engine.detect.fields import Candidate, find_candidates, typed
from fillpdf_provider.engine.detect.labels import LabelIndex, snake, unique_names
from fillpdf_provider.engine.detect.model import Detected, Rect
from fillpdf_provider.engine.detect.page import Box, PageGeometry, read_page

MODES = ("fields", "fields_fast")
_NOT_FOR_YOU = re.compile(
    r"\b(?:(?:office|official|revenue|agency|department|staff|internal)\s+use|"
    r"do\s+not\s+(?:write|mark|use|fill))\b",
    re.I,
)


def detect_fields(pdf: bytes, mode: str = "fields", max_pages: int | None = None) -> list[Detected]:
    """Every field found on the pages of ``pdf``, with unique names."""
    if mode not in MODES:
        raise ValueError(f"detect must be one of {', '.join(MODES)}, not {mode!r}")
    found: list[Detected] = []
    for index, geo, to_pdf in _pages(pdf, mode, max_pages):
        found.extend(_page_fields(index, geo, to_pdf, complete=mode == "fields"))
    _name(found)
    return found


def _pages(
    pdf: bytes, mode: str, max_pages: int | None
) -> Iterator[tuple[int, PageGeometry, object]]:
    if mode == "fields_fast":
        from fillpdf_provider.engine.detect.pdfium_page import read_pdfium_pages

        yield from read_pdfium_pages(pdf, max_pages)
        return
    import pdfplumber

    from fillpdf_provider.engine.detect.pdfium_page import read_pdfium_page

    with pdfplumber.open(io.BytesIO(pdf)) as document:
        for index, page in enumerate(document.pages):
            if max_pages is not None and index >= max_pages:
                break
            if _content_size(page) > HEAVY_PAGE_BYTES:
                # pdfminer would take minutes over a page this busy; PDFium reads it bounded.
                yield index, *read_pdfium_page(pdf, index)
            else:
                yield index, read_page(page), _plumber_to_pdf(page)
            page.close()


#: Pages whose content streams are larger than this are read through PDFium in every mode.
HEAVY_PAGE_BYTES = 1_500_000


def _content_size(page: object) -> int:
    from pdfminer.pdftypes import resolve1

    total = 0
    contents = getattr(page.page_obj, "contents", None) or []  # type: ignore[attr-defined]
    for stream in contents:
        stream = resolve1(stream)
        if hasattr(stream, "get_data"):
            total += len(stream.get_data())
    return total


def _plumber_to_pdf(page: object):
    """The map from pdfplumber's top-down page space back to PDF user space."""
    x0, y0, x1, y1 = (float(v) for v in page.page_obj.mediabox)  # type: ignore[attr-defined]
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


def _page_fields(index: int, geo: PageGeometry, to_pdf, *, complete: bool) -> list[Detected]:
    candidates = _outside_office_use(find_candidates(geo, complete=complete), geo)
    labels = LabelIndex(geo.lines)
    fields: list[Detected] = []
    for cand in candidates:
        if cand.kind == "radio":
            continue
        label = labels.label_for(cand)
        if label and _NOT_FOR_YOU.search(label):
            continue  # "For office use only", "Do not write in this area"
        kind = typed(cand.kind, label)
        fields.append(
            Detected(
                type=kind,
                page=index,
                rect=to_pdf(cand.box),
                name=snake(label),
                label=label,
                confidence=_confidence(cand, label),
                multiline=cand.multiline,
                max_length=cand.max_length,
                comb=cand.max_length is not None,
                cue=cand.cue,
            )
        )
    fields.extend(
        _radio_groups(index, [c for c in candidates if c.kind == "radio"], labels, to_pdf)
    )
    fields.sort(key=lambda d: (-d.rect[3], d.rect[0]))
    return fields


def _outside_office_use(candidates: list[Candidate], geo: PageGeometry) -> list[Candidate]:
    """Drop what sits in the strip under an "office use only" heading: the office fills it."""
    bands = [_office_band(line, geo) for line in geo.lines if _NOT_FOR_YOU.search(line.text)]
    if not bands:
        return candidates
    kept = []
    for cand in candidates:
        cx, cy = (cand.box[0] + cand.box[2]) / 2, (cand.box[1] + cand.box[3]) / 2
        if not any(b[0] <= cx <= b[2] and b[1] < cy <= b[3] for b in bands):
            kept.append(cand)
    return kept


def _office_band(line: object, geo: PageGeometry) -> Box:
    """The strip under an office-use heading: as wide as the shaded bar holding it, if any."""
    x0, x1 = line.x0 - 60.0, line.x1 + 60.0  # type: ignore[attr-defined]
    cx = (line.x0 + line.x1) / 2  # type: ignore[attr-defined]
    cy = (line.top + line.bottom) / 2  # type: ignore[attr-defined]
    for box, tinted in geo.fills:
        if tinted and box[0] <= cx <= box[2] and box[1] <= cy <= box[3]:
            x0, x1 = box[0] - 2.0, box[2] + 2.0
    return (x0, line.bottom, x1, line.bottom + 28.0)  # type: ignore[attr-defined]


def _confidence(cand: Candidate, label: str | None) -> float:
    value = cand.confidence + (0.05 if label else -0.15)
    return round(min(0.99, max(0.05, value)), 2)


def _radio_groups(
    index: int, radios: list[Candidate], labels: LabelIndex, to_pdf
) -> list[Detected]:
    """Circles that line up in a row (or a column) are one question's options."""
    groups: list[list[Candidate]] = []
    for cand in sorted(radios, key=lambda c: (round((c.box[1] + c.box[3]) / 4), c.box[0])):
        middle = (cand.box[1] + cand.box[3]) / 2
        for group in groups:
            last = group[-1]
            same_row = (
                abs((last.box[1] + last.box[3]) / 2 - middle) <= 3
                and 0 < cand.box[0] - last.box[2] <= 260
            )
            same_column = (
                abs(last.box[0] - cand.box[0]) <= 3 and 0 < cand.box[1] - last.box[3] <= 26
            )
            if same_row or same_column:
                group.append(cand)
                break
        else:
            groups.append([cand])
    found: list[Detected] = []
    for number, group in enumerate(groups):
        first = group[0]
        options = [labels.label_for(c) for c in group]
        question = labels.left_of(first.box, 260) if len(group) > 1 else options[0]
        if question in options:
            question = None
        question = question or labels.above(_union([c.box for c in group]), 24) or options[0]
        exports = unique_names([snake(o) or str(i) for i, o in enumerate(options)])
        for cand, label, export in zip(group, options, exports, strict=True):
            found.append(
                Detected(
                    type="radio",
                    page=index,
                    rect=to_pdf(cand.box),
                    name=snake(question),
                    label=question,
                    confidence=_confidence(cand, label),
                    export=export,
                    group=number,
                    cue=cand.cue,
                )
            )
    return found


def _union(boxes: list[Box]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


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
