"""Names a table can map to: table cells, option grids, date hints and reading order.

A field's own label names it (``labels.py``). Labels alone fail where a form prints one
label for many fields: the cells of a table share their column's header, and the boxes of
a Yes/No grid have none of their own. Here those get names a mail-merge can map a column
to: ``quantity_2`` (the column's header and the row's number), ``wages_last_year`` (the
row's own label and the column's header), and one radio group per grid row named from its
question, with the column headers as its options. A format hint in a label ("(MM/DD/YYYY)")
becomes the field's date format rather than part of its name.

Text printed above a field that is another field's label is not the field's own: a label
beside it on its own line wins, and without one that text names it only as a guess, at a
low confidence. A writing area under a long instruction is named by the heading over it.

Everything works in the reader's top-down page space, on the fields already chosen.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from fillpdf_provider.engine.detect.fields import Candidate
from fillpdf_provider.engine.detect.labels import MAX_NAME, LabelIndex, instruction, snake
from fillpdf_provider.engine.detect.page import Box

#: How far (pt) edges may differ and still line up (cells of one column, rows of one table).
ALIGN = 2.0
#: The widest gap (pt) between two cells stacked in one column of a table.
STACK_GAP = 4.0
#: How far above its first row (pt) a column's header may be printed.
HEADER_REACH = 40.0
#: How far left of a row's first cell (pt) its label may start.
ROW_LABEL_REACH = 300.0
#: Buttons whose centres are this close (pt) share a row or a column.
BUTTON_ALIGN = 3.0
#: How far (pt) the middle of a word heading a column of buttons may be from theirs.
BUTTON_HEADER_SPREAD = 10.0
#: The widest gap (pt) between rows of one option grid.
GRID_ROW_GAP = 40.0
#: How far to the left of a grid row's first button its question may start.
QUESTION_REACH = 520.0
#: The most a field's confidence may be when its name comes from another field's label: a
#: guess a person should check (the review editor flags fields under one half).
BORROWED_CONFIDENCE = 0.3

_DATE_PART = r"(?:yyyy|yy|mm|dd)"
_DATE_HINT = re.compile(
    rf"[(\[]?\s*(?<![a-z0-9])({_DATE_PART}(?:\s?[-/.]?\s?{_DATE_PART}){{1,2}})(?![a-z0-9])\s*[)\]]?",
    re.I,
)


@dataclass(frozen=True)
class CellName:
    """What a table gives one of its cells: the text it is named from, and the name."""

    label: str
    name: str


@dataclass(frozen=True)
class OwnLabel:
    """The text a field is named and typed from; ``borrowed`` when that text is another
    field's label (printed on the line above, before a field of its own)."""

    text: str | None
    borrowed: bool = False


@dataclass(frozen=True)
class GridRow:
    """One row of an option grid: its question, and each button with its column's header."""

    question: str
    buttons: tuple[tuple[Candidate, str], ...]


# --------------------------------------------------------------------------- date hints


def date_hint(label: str | None) -> tuple[str | None, str | None]:
    """``label`` without a date format hint, and the hint as a date format.

    ``"Date of birth (MM/DD/YYYY)"`` -> ``("Date of birth", "mm/dd/yyyy")``. A hint without
    a day, a month and a year (``MM/YY``) leaves the name but is no format of a date field.
    A label that is nothing but a hint keeps its text.
    """
    if not label:
        return label, None
    found = _DATE_HINT.search(label)
    if found is None:
        return label, None
    hint = re.sub(r"\s*([-/.])\s*", r"\1", found.group(1)).lower()
    hint = re.sub(r"\s+", " ", hint)
    rest = (label[: found.start()] + " " + label[found.end() :]).strip(" :,-")
    rest = re.sub(r"\s{2,}", " ", rest)
    parts = set(re.findall(_DATE_PART, hint))
    complete = any(p.startswith("y") for p in parts) and {"mm", "dd"} <= parts
    return (rest or label), (hint if complete else None)


# --------------------------------------------------------------------------- own labels


def own_label(
    cand: Candidate,
    label: str | None,
    chosen: Sequence[tuple[Candidate, str | None]],
    labels: LabelIndex,
) -> OwnLabel:
    """The label ``cand`` is named from, among the page's ``chosen`` fields and their labels.

    ``label`` is the text found nearest the box (the scorer reads it). When that text is
    printed above the box and is the label of a field on its own line, it is borrowed: a
    label beside the box on its own line wins, and without one the name is a guess. A
    writing area under an instruction takes the short heading over it. A button's label
    lends nothing: "Other (specify)" names the line under its box.
    """
    if not label:
        return OwnLabel(label)
    _found, place = labels.label_and_place(cand)
    line = labels.line_above(cand.box, place)
    if line is None:
        return OwnLabel(label)
    borrowed = False
    for other, other_label in chosen:
        if other is cand or other.kind in ("checkbox", "radio") or not other_label:
            continue
        _x0, top, _x1, bottom = other.box
        if top < line.bottom and bottom > line.top and other_label in line.text:
            borrowed = True
            break
    others = [c.box for c, _label in chosen if c is not cand]
    if borrowed:
        buttons = [c.box for c, _label in chosen if c.kind in ("checkbox", "radio")]
        beside = labels.own_line(cand.box, others, buttons)
        if beside:
            return OwnLabel(beside)
    if cand.multiline and instruction(line.text):
        heading = labels.heading_over(line, cand.box, others)
        if heading:
            return OwnLabel(heading)
    return OwnLabel(label, borrowed)


# --------------------------------------------------------------------------- tables


def cell_names(
    cells: Sequence[Candidate], own: Sequence[str | None], labels: LabelIndex
) -> dict[int, CellName]:
    """Names for the cells of tables whose own labels leave them generic or repeated.

    ``own`` is each cell's own label. Keyed by the index into ``cells``; a cell missing
    from the answer keeps the name its own label gives it.
    """
    named: dict[int, CellName] = {}
    for table in _tables(cells):
        named.update(_name_table(table, cells, own, labels))
    return named


def _tables(cells: Sequence[Candidate]) -> list[list[list[int]]]:
    """Runs of cells stacked in one column (two or more), joined into tables by the rows
    they share; each table is its columns, left to right, each column's cells top-down."""
    runs = _column_runs(cells)
    if not runs:
        return []
    tops = [{round(cells[i].box[1] / ALIGN) for i in run} for run in runs]
    parent = list(range(len(runs)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a in range(len(runs)):
        for b in range(a + 1, len(runs)):
            if len(_near_keys(tops[a], tops[b])) >= 2:
                parent[root(b)] = root(a)
    tables: dict[int, list[list[int]]] = {}
    for i, run in enumerate(runs):
        tables.setdefault(root(i), []).append(run)
    return [sorted(t, key=lambda run: cells[run[0]].box[0]) for t in tables.values()]


def _near_keys(a: set[int], b: set[int]) -> set[int]:
    """Row keys of ``a`` that ``b`` has too, allowing one step of rounding either way."""
    return {k for k in a if k in b or k - 1 in b or k + 1 in b}


def _column_runs(cells: Sequence[Candidate]) -> list[list[int]]:
    """Cells of equal left and right edges, each starting where the one above it ends."""
    order = sorted(range(len(cells)), key=lambda i: (cells[i].box[1], cells[i].box[0]))
    below: dict[int, int] = {}
    above: set[int] = set()
    for n, i in enumerate(order):
        x0, _top, x1, bottom = cells[i].box
        for j in order[n + 1 :]:
            other = cells[j].box
            if other[1] > bottom + STACK_GAP:
                break
            lined_up = abs(other[0] - x0) <= ALIGN and abs(other[2] - x1) <= ALIGN
            if lined_up and other[1] >= bottom - ALIGN and j not in above:
                below[i] = j
                above.add(j)
                break
    runs = []
    for start in order:
        if start in above or start not in below:
            continue
        run = [start]
        while run[-1] in below:
            run.append(below[run[-1]])
        runs.append(run)
    return runs


def _name_table(
    columns: list[list[int]],
    cells: Sequence[Candidate],
    own: Sequence[str | None],
    labels: LabelIndex,
) -> dict[int, CellName]:
    rows = _row_keys(columns, cells)
    headers = [_header(cells[column[0]].box, labels) for column in columns]
    row_labels = _row_labels(columns, cells, rows, labels)
    own_names = {i: snake(own[i]) for column in columns for i in column}
    counts = Counter(own_names.values())
    # a row's label is read by every cell of a row of several: no cell's own
    row_names = [snake(r) for r in row_labels] if row_labels and len(columns) > 1 else None
    named: dict[int, CellName] = {}
    for column, header in zip(columns, headers, strict=True):
        header_name = snake(header)
        for i in column:
            row = rows[_row_key(cells[i])]
            mine = own_names[i]
            taken = [header_name, row_names[row]] if row_names else [header_name]
            if mine and counts[mine] == 1 and not any(_same_text(mine, t) for t in taken):
                continue  # a label of its own, printed for this cell alone
            if row_labels is not None:
                row_label = row_labels[row]
                if len(columns) > 1 and header:
                    named[i] = _cell(row_label, header, f"{row_label}: {header}")
                else:
                    named[i] = _cell(row_label, "", row_label)
            elif header:
                named[i] = _cell(header, str(row + 1), f"{header} (row {row + 1})")
    return named


def _same_text(name: str, heading: str) -> bool:
    """Whether a cell's own label is the heading, read whole or with more of its line."""
    return bool(heading) and (name.startswith(heading) or heading.startswith(name))


def _row_key(cell: Candidate) -> int:
    return round(cell.box[1] / ALIGN)


def _row_keys(columns: list[list[int]], cells: Sequence[Candidate]) -> dict[int, int]:
    """Each row key of the table (its cells' rounded tops) -> the row's number from 0."""
    keys = sorted({_row_key(cells[i]) for column in columns for i in column})
    numbers: dict[int, int] = {}
    row = -1
    previous = None
    for key in keys:
        if previous is None or key - previous > 1:
            row += 1
        numbers[key] = row
        previous = key
    return numbers


def _header(box: Box, labels: LabelIndex) -> str:
    """The text printed nearest above a column's first cell, within the column's width."""
    x0, top, x1, _bottom = box
    best: tuple[float, str] | None = None
    for line in labels.near(top - HEADER_REACH - 20, top + 2):
        if not top - HEADER_REACH <= line.bottom <= top + 1.5:
            continue
        inside = [
            text
            for start, text, end in labels.phrases(line, in_order=True)
            if _within(start, end, x0, x1)
        ]
        if inside and (best is None or top - line.bottom < best[0]):
            best = (top - line.bottom, " ".join(inside))
    return best[1] if best else ""


def _button_header(box: Box, labels: LabelIndex) -> str:
    """The words printed nearest above a column of buttons, centred over it."""
    x0, top, x1, _bottom = box
    middle = (x0 + x1) / 2
    reach = max(BUTTON_HEADER_SPREAD, (x1 - x0) / 2)
    best: tuple[float, str] | None = None
    for line in labels.near(top - HEADER_REACH - 20, top + 2):
        if not top - HEADER_REACH <= line.bottom <= top + 1.5:
            continue
        words = [w.text for w in line.words if abs((w.x0 + w.x1) / 2 - middle) <= reach]
        if words and (best is None or top - line.bottom < best[0]):
            best = (top - line.bottom, " ".join(words))
    return best[1] if best else ""


def _within(start: float, end: float, x0: float, x1: float) -> bool:
    """Whether a phrase from ``start`` to ``end`` is printed over the span ``x0``..``x1``."""
    middle = (start + end) / 2
    return x0 - ALIGN <= middle <= x1 + ALIGN and start >= x0 - 12 and end <= x1 + 12


def _row_labels(
    columns: list[list[int]],
    cells: Sequence[Candidate],
    rows: dict[int, int],
    labels: LabelIndex,
) -> list[str] | None:
    """The text left of each row's first cell; None unless every row has its own."""
    first: dict[int, Box] = {}
    for column in columns:
        for i in column:
            row = rows[_row_key(cells[i])]
            if row not in first or cells[i].box[0] < first[row][0]:
                first[row] = cells[i].box
    found = [labels.left_of(first[row], ROW_LABEL_REACH) for row in sorted(first)]
    texts = [t for t in found if t and snake(t)]
    if len(texts) != len(found) or len({snake(t) for t in texts}) != len(texts):
        return None
    return texts


def _cell(first: str, second: str, label: str) -> CellName:
    tail = second if second.isdigit() else snake(second, drop_filler=False)
    return CellName(label=label, name=joined_name(snake(first), tail))


def joined_name(head: str, tail: str) -> str:
    """``head_tail`` within ``MAX_NAME``: words of ``head`` give way, ``tail`` stays whole."""
    if not tail:
        return head
    if not head:
        return tail if not tail[0].isdigit() else f"row_{tail}"
    words = head.split("_")
    while len(words) > 1 and len("_".join(words)) + 1 + len(tail) > MAX_NAME:
        words.pop()
    return f"{'_'.join(words)}_{tail}"


# --------------------------------------------------------------------------- nearby text


def nearby_name(box: Box, labels: LabelIndex, *, button: bool) -> CellName | None:
    """A name for a field with no label of its own, from the text printed near it: its
    row's label (the words left of it on its line) and its column's header (just above).
    None when there is neither."""
    row = labels.left_of(box, ROW_LABEL_REACH) or ""
    header = _button_header(box, labels) if button else _header(box, labels)
    if not snake(row):
        row = ""
    if not snake(header, drop_filler=False):
        header = ""
    if row and header:
        return _cell(row, header, f"{row}: {header}")
    if row or header:
        text = row or header
        return CellName(label=text, name=snake(text))
    return None


# --------------------------------------------------------------------------- option grids


def option_grids(buttons: Sequence[Candidate], labels: LabelIndex) -> list[GridRow]:
    """Rows of buttons under column headers, with a question to the left of each row.

    A Yes/No grid: every button stands in a column headed by short printed text and has
    no label of its own; each row is one question, so one choice. Buttons that have labels
    of their own are no grid's.
    """
    loose = [b for b in buttons if not labels.right_of(b.box)]
    grids: list[GridRow] = []
    for block in _button_blocks(loose):
        headers = [_button_header(union(column), labels) for column in _block_columns(block)]
        if not all(h and len(h.split()) <= 4 for h in headers):
            continue
        options = [snake(h) or h for h in headers]
        if len(set(options)) != len(options):
            continue
        questions = [labels.left_of(row[0].box, QUESTION_REACH) for row in block]
        if not all(questions):
            continue
        for row, question in zip(block, questions, strict=True):
            assert question is not None
            grids.append(GridRow(question, tuple(zip(row, options, strict=True))))
    return grids


def _button_blocks(buttons: Sequence[Candidate]) -> list[list[list[Candidate]]]:
    """Rows of two or more buttons whose columns line up with the row above them."""
    rows = _button_rows(buttons)
    blocks: list[list[list[Candidate]]] = []
    for row in rows:
        if len(row) < 2:
            continue
        block = blocks[-1] if blocks else None
        if block is not None and _continues(block[-1], row):
            block.append(row)
        else:
            blocks.append([row])
    return blocks


def _button_rows(buttons: Sequence[Candidate]) -> list[list[Candidate]]:
    ordered = sorted(buttons, key=lambda b: (_middle(b.box)[1], b.box[0]))
    rows: list[list[Candidate]] = []
    for button in ordered:
        if rows and abs(_middle(rows[-1][0].box)[1] - _middle(button.box)[1]) <= BUTTON_ALIGN:
            rows[-1].append(button)
        else:
            rows.append([button])
    return [sorted(row, key=lambda b: b.box[0]) for row in rows]


def _continues(above: list[Candidate], row: list[Candidate]) -> bool:
    """Whether ``row`` lies under ``above``, button for button."""
    if len(above) != len(row):
        return False
    gap = row[0].box[1] - above[0].box[3]
    if not 0 <= gap <= GRID_ROW_GAP:
        return False
    return all(
        abs(_middle(a.box)[0] - _middle(b.box)[0]) <= BUTTON_ALIGN
        for a, b in zip(above, row, strict=True)
    )


def _block_columns(block: list[list[Candidate]]) -> list[list[Box]]:
    return [[row[n].box for row in block] for n in range(len(block[0]))]


# --------------------------------------------------------------------------- reading order


def reading_order(boxes: Sequence[Box]) -> list[int]:
    """Indexes of ``boxes`` as a person reads them: line by line down the page, each line
    left to right. Boxes whose middles lie within half a (short) box's height share a line."""
    order = sorted(range(len(boxes)), key=lambda i: (_middle(boxes[i])[1], boxes[i][0]))
    lines: list[list[int]] = []
    reach = 0.0
    for i in order:
        middle = _middle(boxes[i])[1]
        if lines and middle <= reach:
            lines[-1].append(i)
            continue
        height = boxes[i][3] - boxes[i][1]
        reach = middle + max(BUTTON_ALIGN, min(height, 20.0) / 2)
        lines.append([i])
    return [i for line in lines for i in sorted(line, key=lambda i: (boxes[i][0], boxes[i][1]))]


def _middle(box: Box) -> tuple[float, float]:
    return (box[0] + box[2]) / 2, (box[1] + box[3]) / 2


def union(boxes: list[Box]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
