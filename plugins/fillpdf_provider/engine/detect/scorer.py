"""The learned field scorer: gradient-boosted trees over candidate features, and the choice
of which candidates become fields.

The trees predict how well a candidate fits a field (its IoU with the field a person made);
the likeliest fits are kept, none on top of a likelier one, and the score is mapped to a
calibrated confidence. A second set of trees, where the model has one, scores each candidate
again with its neighbours' first scores beside its own features (``context``): readings that
compete for one spot, and rows of equal boxes, are then weighed together.

The model is a JSON file of plain trees (``engine/data/detector.json``), evaluated here with
numpy, so converting needs no machine-learning library and loads in milliseconds.
``make train-detector`` writes it from the training corpus.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from fillpdf_provider.engine.detect.context import CONTEXT_FEATURES, context_features
from fillpdf_provider.engine.detect.features import FEATURES, INDEX

#: The keep thresholds: text or button, times a candidate the rules keep or one they don't.
THRESHOLD_KEYS = ("text_rule", "text_new", "button_rule", "button_new")
_NEW_CUES = ("cue=blank", "cue=dots")

MODEL_FILE = "detector.json"
#: Two text fields on one spot would print over each other: the less likely one goes.
TEXT_SHARED_MAX = 0.5
IOU_MAX = 0.4


@dataclass(frozen=True)
class Model:
    """Trees flattened into arrays, every tree's nodes after the one before.

    A leaf is its own child both ways, so a row that reaches a leaf early stays there while
    the others go on down: one gather per level, no test for leaves.
    """

    features: tuple[str, ...]
    feature: np.ndarray  # int32, the column a node tests (0 at leaves)
    threshold: np.ndarray  # float64
    children: np.ndarray  # int32: node i's left child at 2i, its right child at 2i + 1
    value: np.ndarray  # float64, leaf output (0 elsewhere)
    roots: np.ndarray  # int32, each tree's root node
    depth: int
    learning_rate: float
    thresholds: dict[str, float]
    calibration: tuple[tuple[float, float], ...]  # (raw score, calibrated) knots
    output: str = "logistic"  # "identity": the trees predict a score in [0, 1] directly
    second: Model | None = None  # trees over FEATURES + CONTEXT_FEATURES

    def score(
        self, x: np.ndarray, boxes: np.ndarray, is_button: np.ndarray, vetoed: np.ndarray
    ) -> np.ndarray:
        """Each candidate's score on one page: the second stage's where the model has one."""
        first = self.probability(x)
        if self.second is None or len(first) == 0:
            return first
        context = context_features(boxes, first, is_button, vetoed)
        return self.second.probability(np.hstack([np.asarray(x, dtype=np.float32), context]))

    def probability(self, x: np.ndarray) -> np.ndarray:
        """The model's score for each row, from 0 (no field) to 1 (before calibration)."""
        if len(x) == 0:
            return np.zeros(0)
        x = np.asarray(x, dtype=np.float32)
        rows = np.arange(len(x))[:, None]
        node = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        for _ in range(self.depth):
            go_right = ~(x[rows, self.feature[node]] <= self.threshold[node])
            node = self.children[2 * node + go_right]
        raw: np.ndarray = self.learning_rate * self.value[node].sum(axis=1)
        if self.output == "identity":
            clipped: np.ndarray = np.clip(raw, 0.0, 1.0)
            return clipped
        logistic: np.ndarray = 1.0 / (1.0 + np.exp(-raw))
        return logistic

    def keep_thresholds(
        self, x: np.ndarray, is_button: np.ndarray, vetoed: np.ndarray
    ) -> np.ndarray:
        """Each candidate's keep threshold, by its kind and whether the rules keep it.

        What the rules veto is never kept by a first stage alone; a second stage has read the
        veto as a feature and decides.
        """
        floor = keep_thresholds(x, is_button, self.thresholds)
        if self.second is None:
            floor[np.asarray(vetoed, dtype=bool)] = np.inf
        return floor

    def calibrated(self, probability: np.ndarray) -> np.ndarray:
        """Probabilities mapped so that of fields at 0.9 about 90% are right."""
        if not self.calibration:
            return probability
        xs = np.array([k[0] for k in self.calibration])
        ys = np.array([k[1] for k in self.calibration])
        mapped: np.ndarray = np.interp(probability, xs, ys)
        return mapped


def model_from_dict(data: dict[str, Any]) -> Model:
    """Build a ``Model`` from the JSON layout written by the trainer."""
    second = data.get("second")
    return replace(
        _trees(data, FEATURES),
        thresholds={key: float(data["thresholds"][key]) for key in THRESHOLD_KEYS},
        calibration=tuple((float(a), float(b)) for a, b in data.get("calibration", ())),
        second=_trees(second, FEATURES + CONTEXT_FEATURES) if second else None,
    )


def _trees(data: dict[str, Any], expected: tuple[str, ...]) -> Model:
    trees = data["trees"]
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []
    roots: list[int] = []
    for tree in trees:
        base = len(feature)
        roots.append(base)
        feature.extend(tree["feature"])
        threshold.extend(tree["threshold"])
        left.extend(tree["left"])
        right.extend(tree["right"])
        value.extend(tree["value"])
        for at in range(base, len(feature)):
            if feature[at] < 0:  # a leaf: its own child
                feature[at], left[at], right[at] = 0, at, at
            else:
                left[at] += base
                right[at] += base
    names = tuple(data["features"])
    if names != expected:
        raise ValueError(
            "The detector model was trained on other features than this code computes; "
            "rebuild it with `make train-detector`."
        )
    return Model(
        features=names,
        feature=np.array(feature, dtype=np.int32),
        threshold=np.array(threshold, dtype=np.float64),
        children=np.column_stack([left, right]).astype(np.int32).ravel(),
        value=np.array(value, dtype=np.float64),
        roots=np.array(roots, dtype=np.int32),
        depth=int(data["max_depth"]),
        learning_rate=float(data["learning_rate"]),
        thresholds={},
        calibration=(),
        output=str(data.get("output", "logistic")),
    )


@lru_cache(maxsize=1)
def shipped_model() -> Model | None:
    """The model in the package, or None when the package ships none."""
    try:
        text = resources.files("fillpdf_provider.engine").joinpath("data", MODEL_FILE).read_text()
    except FileNotFoundError:
        return None
    return model_from_dict(json.loads(text))


def rule_kept(x: np.ndarray) -> np.ndarray:
    """Which candidates the rule-based detector keeps (no flag, the rules' own reading)."""
    x = np.asarray(x)
    kept: np.ndarray = x[:, INDEX["flagged"]] == 0
    for name, column in INDEX.items():
        if name.startswith("variant=") or name in _NEW_CUES:
            kept &= x[:, column] == 0
    return kept


def keep_thresholds(
    x: np.ndarray, is_button: np.ndarray, thresholds: dict[str, float]
) -> np.ndarray:
    """Each candidate's keep threshold, by its kind and whether the rules keep it."""
    by_rules = rule_kept(x)
    button = np.asarray(is_button, dtype=bool)
    out = np.where(button, thresholds["button_new"], thresholds["text_new"])
    out = np.where(button & by_rules, thresholds["button_rule"], out)
    return np.where(~button & by_rules, thresholds["text_rule"], out)


def choose(
    boxes: np.ndarray,
    is_button: np.ndarray,
    scores: np.ndarray,
    threshold: float | np.ndarray,
) -> list[int]:
    """Indexes of the candidates kept: the likeliest first, none on top of a likelier one.

    ``threshold`` is one number or one per candidate.
    """
    floor = np.broadcast_to(np.asarray(threshold, dtype=np.float64), np.shape(scores))
    above = np.flatnonzero(np.asarray(scores) >= floor)
    # likeliest first, ties by position (a stable sort of the candidates above their floor)
    order = above[np.argsort(-np.asarray(scores)[above], kind="stable")]
    kept: list[int] = []
    for i in order.tolist():
        if kept and _collides(boxes[i], bool(is_button[i]), boxes[kept], is_button[kept]):
            continue
        kept.append(i)
    return kept


def _collides(box: np.ndarray, button: bool, others: np.ndarray, other_button: np.ndarray) -> bool:
    ix = np.clip(np.minimum(others[:, 2], box[2]) - np.maximum(others[:, 0], box[0]), 0, None)
    iy = np.clip(np.minimum(others[:, 3], box[3]) - np.maximum(others[:, 1], box[1]), 0, None)
    inter = ix * iy
    area = (box[2] - box[0]) * (box[3] - box[1])
    other_area = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + other_area - inter
    if np.any(inter > IOU_MAX * np.maximum(union, 1e-9)):
        return True
    if button:
        return False
    smaller = np.minimum(area, other_area)
    texts = ~other_button
    return bool(np.any(texts & (inter > TEXT_SHARED_MAX * np.maximum(smaller, 1e-9))))
