"""What the field scorer reads of a candidate: its shape, its cue, the rules' flags, its label
and its neighbours.

The features are numbers a person could check on the page (a width in points, a count of
printed characters, how many boxes of the same size share its row), so the model card can
say what the detector looks at. The order of ``FEATURES`` is the model's input order.
"""

from __future__ import annotations

import math
import re

import numpy as np

from fillpdf_provider.engine.detect.fields import NOT_FOR_YOU, Candidate, CharIndex
from fillpdf_provider.engine.detect.labels import LabelIndex
from fillpdf_provider.engine.detect.page import PageGeometry
from fillpdf_provider.engine.detect.variants import VARIANTS

KINDS = ("text", "checkbox", "radio")
CUES = (
    "square",
    "circle",
    "cell",
    "cell-below-label",
    "cell-after-label",
    "cell-before-text",
    "answer-cell",
    "comb",
    "underline",
    "underline-after-mark",
    "lined-area",
    "underscores",
    "blank",
    "dots",
)
FLAGS = (
    "button_flood",
    "header_row",
    "row_heading",
    "hatched",
    "overlap",
    "around_button",
    "shaded",
    "office_use",
    "whole_cell",
    "in_lined_area",
    "symbol_glyph",
)
PLACES = ("right", "left", "inside", "above", "far-left", "below")
_DATE = re.compile(r"\b(date|dob|birth|mm\s*/\s*dd|dd\s*/\s*mm|yyyy|datum)\b", re.I)
_SIGNATURE = re.compile(r"\b(signature|sign here|signed|unterschrift)\b", re.I)
_MONEY = re.compile(r"(\$|amount|total|income|tax|\btotal\b|€)", re.I)

FEATURES: tuple[str, ...] = (
    *(f"kind={k}" for k in KINDS),
    *(f"cue={c}" for c in CUES),
    *(f"flag={f}" for f in FLAGS),
    *(f"variant={v}" for v in VARIANTS),
    "flagged",
    "rule_confidence",
    "width",
    "height",
    "aspect",
    "log_area",
    "x0_rel",
    "top_rel",
    "x1_rel",
    "bottom_rel",
    "multiline",
    "max_length",
    "region_width",
    "region_height",
    "chars_inside",
    "chars_inside_region",
    "chars_left_20",
    "chars_above_14",
    "chars_below_10",
    "has_label",
    *(f"label_place={p}" for p in PLACES),
    "label_length",
    "label_words",
    "label_is_number",
    "label_colon",
    "label_date",
    "label_signature",
    "label_money",
    "label_not_for_you",
    "page_candidates",
    "page_log_chars",
    "page_log_segments",
    "page_squares",
    "same_size_page",
    "same_size_row",
    "same_size_column",
    "row_neighbours",
    "column_neighbours",
    "max_iou_other",
    "overlapping",
    "inside_other",
    "holds_other",
    "text_inside_button_nearby",
)
INDEX = {name: i for i, name in enumerate(FEATURES)}


def page_features(
    geo: PageGeometry, candidates: list[Candidate], labels: LabelIndex
) -> tuple[np.ndarray, list[str | None]]:
    """One row of ``FEATURES`` per candidate, and each candidate's label."""
    n = len(candidates)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    found_labels: list[str | None] = []
    if n == 0:
        return x.astype(np.float32), found_labels
    chars = CharIndex(geo.char_boxes)
    boxes = np.array([c.box for c in candidates], dtype=np.float64)
    width = np.maximum(boxes[:, 2] - boxes[:, 0], 0.01)
    height = np.maximum(boxes[:, 3] - boxes[:, 1], 0.01)
    page_w, page_h = max(geo.width, 1.0), max(geo.height, 1.0)
    for i, cand in enumerate(candidates):
        row = x[i]
        _one_hot(row, cand)
        _rule_features(row, cand)
        _print_around(row, cand, chars)
        label, place = labels.label_and_place(cand)
        found_labels.append(label)
        if label:
            _label_features(row, label, place)
    x[:, INDEX["width"]] = width
    x[:, INDEX["height"]] = height
    x[:, INDEX["aspect"]] = width / height
    x[:, INDEX["log_area"]] = np.log(width * height)
    x[:, INDEX["x0_rel"]] = boxes[:, 0] / page_w
    x[:, INDEX["top_rel"]] = boxes[:, 1] / page_h
    x[:, INDEX["x1_rel"]] = boxes[:, 2] / page_w
    x[:, INDEX["bottom_rel"]] = boxes[:, 3] / page_h
    x[:, INDEX["page_candidates"]] = n
    x[:, INDEX["page_log_chars"]] = math.log1p(len(geo.char_boxes))
    x[:, INDEX["page_log_segments"]] = math.log1p(len(geo.horizontal) + len(geo.vertical))
    x[:, INDEX["page_squares"]] = len(geo.squares) + len(geo.circles) + len(geo.glyph_boxes)
    _neighbour_features(x, boxes, width, height, candidates)
    return x.astype(np.float32), found_labels


def _one_hot(row: np.ndarray, cand: Candidate) -> None:
    """The candidate's kind, cue, flags and variant, one column each (unknown ones: none)."""
    if cand.kind in KINDS:
        row[INDEX[f"kind={cand.kind}"]] = 1
    if cand.cue in CUES:
        row[INDEX[f"cue={cand.cue}"]] = 1
    for flag in cand.flags:
        if flag in FLAGS:
            row[INDEX[f"flag={flag}"]] = 1
    if cand.variant:
        row[INDEX[f"variant={cand.variant}"]] = 1


def _rule_features(row: np.ndarray, cand: Candidate) -> None:
    """What the rules said of the candidate: flagged or not, how sure, multiline, comb."""
    row[INDEX["flagged"]] = 1 if cand.flags else 0
    row[INDEX["rule_confidence"]] = cand.confidence
    row[INDEX["multiline"]] = 1 if cand.multiline else 0
    row[INDEX["max_length"]] = cand.max_length or 0


def _print_around(row: np.ndarray, cand: Candidate, chars: CharIndex) -> None:
    """The size of the candidate's cell, and how many chars are printed in and around it."""
    x0, top, x1, bottom = cand.box
    if cand.region is not None:
        row[INDEX["region_width"]] = cand.region[2] - cand.region[0]
        row[INDEX["region_height"]] = cand.region[3] - cand.region[1]
        row[INDEX["chars_inside_region"]] = len(chars.inside(cand.region, 0.8))
    row[INDEX["chars_inside"]] = len(chars.inside(cand.box, 0.8))
    row[INDEX["chars_left_20"]] = len(chars.inside((x0 - 20, top, x0, bottom), 0.0))
    row[INDEX["chars_above_14"]] = len(chars.inside((x0, top - 14, x1, top), 0.0))
    row[INDEX["chars_below_10"]] = len(chars.inside((x0, bottom, x1, bottom + 10), 0.0))


def _label_features(row: np.ndarray, label: str, place: str) -> None:
    """Where the label was found and what it reads like (a number, a date, money...)."""
    row[INDEX["has_label"]] = 1
    row[INDEX[f"label_place={place}"]] = 1
    row[INDEX["label_length"]] = len(label)
    row[INDEX["label_words"]] = len(label.split())
    stripped = label.strip("().: ")
    row[INDEX["label_is_number"]] = 1 if stripped[:4].replace(".", "").isdigit() else 0
    row[INDEX["label_colon"]] = 1 if label.rstrip().endswith(":") else 0
    row[INDEX["label_date"]] = 1 if _DATE.search(label) else 0
    row[INDEX["label_signature"]] = 1 if _SIGNATURE.search(label) else 0
    row[INDEX["label_money"]] = 1 if _MONEY.search(label) else 0
    row[INDEX["label_not_for_you"]] = 1 if NOT_FOR_YOU.search(label) else 0


def _neighbour_features(
    x: np.ndarray,
    boxes: np.ndarray,
    width: np.ndarray,
    height: np.ndarray,
    candidates: list[Candidate],
) -> None:
    """Repetition and overlap among the page's candidates, in blocks to bound memory."""
    n = len(boxes)
    is_button = np.array([c.kind in ("checkbox", "radio") for c in candidates])
    cy = (boxes[:, 1] + boxes[:, 3]) / 2
    area = width * height
    step = 512
    for start in range(0, n, step):
        sl = slice(start, min(n, start + step))
        w, h = width[sl, None], height[sl, None]
        same_size = (np.abs(width[None, :] - w) <= 0.1 * w + 1) & (
            np.abs(height[None, :] - h) <= 0.1 * h + 1
        )
        same_row = np.abs(cy[None, :] - cy[sl, None]) <= 2.0
        same_col = (np.abs(boxes[None, :, 0] - boxes[sl, None, 0]) <= 2.0) | (
            np.abs(boxes[None, :, 2] - boxes[sl, None, 2]) <= 2.0
        )
        ix = np.clip(
            np.minimum(boxes[None, :, 2], boxes[sl, None, 2])
            - np.maximum(boxes[None, :, 0], boxes[sl, None, 0]),
            0,
            None,
        )
        iy = np.clip(
            np.minimum(boxes[None, :, 3], boxes[sl, None, 3])
            - np.maximum(boxes[None, :, 1], boxes[sl, None, 1]),
            0,
            None,
        )
        inter = ix * iy
        union = area[None, :] + area[sl, None] - inter
        iou = np.where(union > 0, inter / np.maximum(union, 1e-9), 0.0)
        own = np.arange(sl.start, sl.stop)
        iou[np.arange(len(own)), own] = 0.0
        inter[np.arange(len(own)), own] = 0.0
        self_mask = np.zeros_like(same_size)
        self_mask[np.arange(len(own)), own] = True
        x[sl, INDEX["same_size_page"]] = (same_size & ~self_mask).sum(axis=1)
        x[sl, INDEX["same_size_row"]] = (same_size & same_row & ~self_mask).sum(axis=1)
        x[sl, INDEX["same_size_column"]] = (same_size & same_col & ~self_mask).sum(axis=1)
        x[sl, INDEX["row_neighbours"]] = (same_row & ~self_mask).sum(axis=1)
        x[sl, INDEX["column_neighbours"]] = (same_col & ~self_mask).sum(axis=1)
        x[sl, INDEX["max_iou_other"]] = iou.max(axis=1)
        x[sl, INDEX["overlapping"]] = (inter > 0).sum(axis=1)
        x[sl, INDEX["inside_other"]] = (inter >= 0.9 * area[sl, None]).sum(axis=1)
        x[sl, INDEX["holds_other"]] = (inter >= 0.9 * area[None, :]).sum(axis=1)
        x[sl, INDEX["text_inside_button_nearby"]] = (
            (inter > 0) & is_button[None, :] & ~is_button[sl, None]
        ).sum(axis=1)
