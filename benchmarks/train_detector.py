#!/usr/bin/env python3
"""Train the field scorer on the training corpus, cross-validate it by form, ship it.

For every form of ``../shared/corpus/train/forms`` the flat copy is made as in
``detect_eval.py``; each page's candidate pool (every drawn cue and its other readings,
with the rules' flags) is read and each candidate is labelled with its best IoU with a
visible widget, which the trees learn to predict. Widgets over blank paper are ignore
regions: candidates on them are left out of training.

Then:

1. 5-fold cross-validation grouped by ``form_group`` (versions of one form stay in one fold):
   each fold's model chooses the fields of forms it never saw, scored as ``detect_eval.py``
   scores (one-to-one matching, IoU >= 0.5, ignore rule), each figure comb-equivalent (a comb
   split into its cells, as a row of one-character boxes) with the plain one beside it. The
   keep threshold is the one with the best out-of-fold (plain) F1; the out-of-fold
   confidences give the calibration table.
2. The model trained on every form is written to ``engine/data/detector.json`` with the
   threshold and the calibration, and the figures to ``benchmarks/results/``.

The same corpus and seed give a byte-identical model::

    .venv/bin/python benchmarks/train_detector.py          # make train-detector
    .venv/bin/python benchmarks/train_detector.py --cv-only --limit 40
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import os
import pickle
import statistics
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.detect_eval import (  # noqa: E402
    COMB_NOTE,
    DEFAULT_CACHE,
    Score,
    WidgetBox,
    comb_figures,
    comb_score,
    evaluate_form,
    flat_copy,
    inked,
    iou_matrix,
    match,
    overall,
    scan_widgets,
    score,
)
from fillpdf_provider.engine.convert import convert  # noqa: E402
from fillpdf_provider.engine.detect import page_geometries, page_pool  # noqa: E402
from fillpdf_provider.engine.detect.context import (  # noqa: E402
    CONTEXT_FEATURES,
    context_features,
)
from fillpdf_provider.engine.detect.features import FEATURES  # noqa: E402
from fillpdf_provider.engine.detect.fields import typed  # noqa: E402
from fillpdf_provider.engine.detect.scorer import (  # noqa: E402
    THRESHOLD_KEYS,
    choose,
    keep_thresholds,
    model_from_dict,
)
from fillpdf_provider.engine.source import open_pdf  # noqa: E402

DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "train"
MODEL_PATH = REPO_ROOT / "plugins" / "fillpdf_provider" / "engine" / "data" / "detector.json"
RESULTS = REPO_ROOT / "benchmarks" / "results" / "detector_cv.txt"
CURVE_RESULTS = REPO_ROOT / "benchmarks" / "results" / "learning_curve.txt"
#: Shares of the training forms for the learning curve.
CURVE_SHARES = (0.25, 0.5, 1.0)
SEED = 20261124
FOLDS = 5
IOU_MIN = 0.5
PARAMS = {
    "max_iter": 400,
    "max_depth": 8,
    "max_leaf_nodes": 31,
    "learning_rate": 0.08,
    "min_samples_leaf": 20,
    "max_features": 0.5,
}
CALIBRATION_BINS = 10
#: Cross-validated acceptance: what forms the scorer never saw must reach.
CV_MIN_F1 = 0.76
CV_MIN_CLASS_F1 = 0.72
CV_MIN_BUTTON_RECALL = 0.85


@dataclass
class PageData:
    index: int
    features: np.ndarray  # float32, one row per candidate
    rects: np.ndarray  # PDF user space
    classes: list[str]  # the class a candidate becomes: text, date, comb, checkbox, ...
    buttons: np.ndarray  # bool
    vetoed: np.ndarray  # bool: never kept (``detect.vetoed``)
    max_lengths: list[int | None]  # a comb candidate's cells, else None
    boxes: np.ndarray  # page space, as the engine sees them (``context_features``)


@dataclass
class FormData:
    name: str
    group: str
    gt: list[WidgetBox]
    ignored: list[bool]
    pages: list[PageData] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)  # per page: 1 field, 0 not, -1 skip


#: What a cached page pool holds (``PageData``'s fields): bumped when they change.
POOL_FORMAT = "v3"


def _code_version() -> str:
    """A hash of the detection code: a change to it invalidates cached pools."""
    digest = hashlib.sha256()
    detect = REPO_ROOT / "plugins" / "fillpdf_provider" / "engine" / "detect"
    for path in sorted(detect.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _candidate_class(kind: str, label: str | None, max_length: int | None) -> str:
    if kind == "text" and max_length is not None:
        return "comb"
    return typed(kind, label)


def extract(path: Path, group: str, cache_dir: Path | None) -> FormData:
    """The candidate pool and ground truth of one training form (cached by content)."""
    source = path.read_bytes()
    key = hashlib.sha256(source).hexdigest()
    cached = cache_dir / f"{key}-pages-{POOL_FORMAT}-{_code_version()}.pkl" if cache_dir else None
    flat = flat_copy(source, cache_dir)
    gt = [w for w, reason in scan_widgets(source) if reason is None]
    # Not cached with the pool: the ignore rule belongs to the evaluation, not the detector.
    ignored = [not seen for seen in inked(flat, gt)]
    form = FormData(path.name, group, gt, ignored)
    if cached is not None and cached.is_file():
        form.pages = [PageData(*page) for page in pickle.loads(cached.read_bytes())]
        return form
    base = open_pdf(flat).base.data
    for index, geo, to_pdf in page_geometries(base, "fields", None):
        pool = page_pool(geo, complete=True)
        if pool is None:
            continue  # a page the scorer leaves to the rules
        candidates = pool.candidates
        rects = np.array([to_pdf(c.box) for c in candidates], dtype=np.float64).reshape(-1, 4)
        form.pages.append(
            PageData(
                index,
                pool.features,
                rects,
                [
                    _candidate_class(c.kind, label, c.max_length)
                    for c, label in zip(candidates, pool.labels, strict=True)
                ],
                np.array([c.kind in ("checkbox", "radio") for c in candidates], dtype=bool),
                pool.vetoed,
                [c.max_length for c in candidates],
                np.array([c.box for c in candidates], dtype=np.float64).reshape(-1, 4),
            )
        )
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        scratch = cached.with_suffix(".tmp")
        # Tuples of builtins and arrays, so the cache reads back whatever module wrote it.
        pages = [
            (
                p.index,
                p.features,
                p.rects,
                p.classes,
                p.buttons,
                p.vetoed,
                p.max_lengths,
                p.boxes,
            )
            for p in form.pages
        ]
        scratch.write_bytes(pickle.dumps(pages))
        scratch.replace(cached)
    return form


def label(form: FormData) -> None:
    """Each candidate's best IoU with a visible widget; -1 where it only covers ignored ones.

    The scorer learns the IoU itself, not just "covers a widget", so that among readings of
    one cue (the whole cell, its bottom line) the closest fit scores highest.
    """
    form.labels = []
    for page in form.pages:
        y = np.zeros(len(page.rects), dtype=np.float64)
        seen = [
            w.rect
            for w, ig in zip(form.gt, form.ignored, strict=True)
            if w.page == page.index and not ig
        ]
        blank = [
            w.rect
            for w, ig in zip(form.gt, form.ignored, strict=True)
            if w.page == page.index and ig
        ]
        rects = list(map(tuple, page.rects))
        if rects and seen:
            y = iou_matrix(rects, seen).max(axis=1)
        if rects and blank:
            on_blank = iou_matrix(rects, blank).max(axis=1) >= IOU_MIN
            y[on_blank & (y < IOU_MIN)] = -1.0
        form.labels.append(y)


def _extract_job(args: tuple[Path, str, Path | None]) -> FormData:
    return extract(*args)


def load_corpus(
    corpus: Path, cache_dir: Path | None, jobs: int, limit: int | None
) -> list[FormData]:
    groups = _groups(corpus)
    paths = sorted((corpus / "forms").glob("*.pdf"))
    if limit:
        paths = paths[:limit]
    tasks = [(p, groups.get(p.name, p.stem), cache_dir) for p in paths]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            forms = list(pool.map(_extract_job, tasks, chunksize=1))
    else:
        forms = [_extract_job(t) for t in tasks]
    for form in forms:
        label(form)
    return forms


def _groups(corpus: Path) -> dict[str, str]:
    manifest = corpus / "MANIFEST.csv"
    if not manifest.is_file():
        return {}
    with manifest.open(newline="", encoding="utf-8") as handle:
        return {row["file"]: row.get("form_group") or row["file"] for row in csv.DictReader(handle)}


def folds(forms: list[FormData], k: int = FOLDS) -> list[int]:
    """Each form's fold: groups spread by a hash of their name, so the split is stable."""
    return group_folds([f.group for f in forms], k)


def group_folds(groups: list[str], k: int = FOLDS) -> list[int]:
    """The fold of each of these form groups (one per form), as ``folds`` gives it."""
    ordered = sorted(set(groups), key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    fold_of = {g: i % k for i, g in enumerate(ordered)}
    return [fold_of[g] for g in groups]


def kept_groups(groups: list[str], share: float) -> set[str]:
    """A share of these form groups, the same for every run: groups ranked by a hash of their
    name (salted apart from ``group_folds``), the first ``share`` of them kept. A smaller share
    is a subset of a larger one, so a learning curve adds forms and never swaps them."""
    ordered = sorted(set(groups), key=lambda g: hashlib.sha256(b"share:" + g.encode()).hexdigest())
    return set(ordered[: max(1, round(share * len(ordered)))])


def training_matrix(
    forms: list[FormData], features: list[list[np.ndarray]] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Candidates and their targets; ``features`` (per form, per page) stands in for the
    pool's own, as the second stage's do."""
    xs, ys = [], []
    for at, form in enumerate(forms):
        rows = features[at] if features is not None else [p.features for p in form.pages]
        for x, y in zip(rows, form.labels, strict=True):
            keep = y >= 0
            xs.append(x[keep])
            ys.append(y[keep])
    if not xs:
        width = len(FEATURES) + (len(CONTEXT_FEATURES) if features is not None else 0)
        return np.zeros((0, width), dtype=np.float32), np.zeros(0)
    return np.concatenate(xs), np.concatenate(ys)


def second_features(form: FormData, first: list[np.ndarray]) -> list[np.ndarray]:
    """Each page's second-stage rows: its features and its neighbours' first scores."""
    return [
        np.hstack([page.features, context_features(page.boxes, p, page.buttons, page.vetoed)])
        for page, p in zip(form.pages, first, strict=True)
    ]


def page_scores(model: Any, form: FormData) -> list[np.ndarray]:
    """A first-stage model's scores of each page of a form."""
    return [model.probability(page.features) for page in form.pages]


def fit_matrix(x: np.ndarray, y: np.ndarray) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor

    # Histogram boosting: deeper trees and more of them than exact boosting fits in the same
    # time, and a better mean per-form F1. No early stopping: its validation split is random.
    model = HistGradientBoostingRegressor(random_state=SEED, early_stopping=False, **PARAMS)
    model.fit(x, y)
    return model


#: What one fit needs: the candidates, their targets, and whether the trees are a second stage.
FitTask = tuple[np.ndarray, np.ndarray, bool]


def _fit_job(task: FitTask) -> dict:
    """A first stage as a model file (keep threshold 0.5, no calibration), or a second
    stage's trees (``trees_dict``)."""
    x, y, second = task
    fitted = fit_matrix(x, y)
    return trees_dict(fitted, FEATURES + CONTEXT_FEATURES) if second else to_dict(fitted, 0.5, [])


def fit_all(tasks: list[FitTask], jobs: int) -> list[dict]:
    """Models for these tasks, ``jobs`` at a time, as plain dicts."""
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(jobs, initializer=_one_thread) as pool:
            return list(pool.map(_fit_job, tasks))
    return [_fit_job(t) for t in tasks]


def _one_thread() -> None:
    """Processes side by side, one thread each: boosting threads would fight for the cores.
    Set before the worker loads scikit-learn's OpenMP runtime; the trees come out the same."""
    os.environ["OMP_NUM_THREADS"] = "1"


def to_dict(
    model: Any,
    thresholds: dict[str, float] | float,
    calibration: list[tuple[float, float]],
    second: dict | None = None,
) -> dict:
    """The model file: first-stage trees, the second stage's (``trees_dict``) where there is
    one, the keep thresholds and the calibration."""
    data = {
        "format": 1,
        "kind": "gradient-boosted regression trees: the IoU of a candidate with a field",
        **trees_dict(model, FEATURES),
        **_choice(thresholds, calibration),
    }
    if second is not None:
        data["second"] = second
    return data


def trees_dict(model: Any, features: tuple[str, ...]) -> dict:
    """The trees as plain lists: what ``scorer.model_from_dict`` reads.

    The baseline comes first as a one-leaf tree; the leaves already hold the learning rate.
    """
    baseline = float(np.ravel(model._baseline_prediction)[0])
    trees = [{"feature": [-1], "threshold": [0.0], "left": [-1], "right": [-1],
              "value": [baseline]}]  # fmt: skip
    depth = 0
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        leaf = nodes["is_leaf"].astype(bool)
        trees.append(
            {
                "feature": [-1 if is_leaf else int(f)
                            for f, is_leaf in zip(nodes["feature_idx"], leaf, strict=True)],
                "threshold": [0.0 if is_leaf else float(t)
                              for t, is_leaf in zip(nodes["num_threshold"], leaf, strict=True)],
                "left": [-1 if is_leaf else int(v)
                         for v, is_leaf in zip(nodes["left"], leaf, strict=True)],
                "right": [-1 if is_leaf else int(v)
                          for v, is_leaf in zip(nodes["right"], leaf, strict=True)],
                "value": [float(v) if is_leaf else 0.0
                          for v, is_leaf in zip(nodes["value"], leaf, strict=True)],
            }
        )  # fmt: skip
        depth = max(depth, int(nodes["depth"].max()))
    return {
        "output": "identity",
        "features": list(features),
        "max_depth": depth,
        "learning_rate": 1.0,
        "trees": trees,
    }


def _choice(
    thresholds: dict[str, float] | float, calibration: list[tuple[float, float]]
) -> dict[str, Any]:
    """The model file's keep thresholds and calibration knots."""
    if not isinstance(thresholds, dict):
        thresholds = dict.fromkeys(THRESHOLD_KEYS, thresholds)
    return {
        "thresholds": dict(thresholds),
        "calibration": [[round(a, 6), round(b, 6)] for a, b in calibration],
    }


@dataclass
class Scored:
    """Out-of-fold detections of one form: their probabilities and whether they were right."""

    form: str
    probabilities: np.ndarray
    correct: np.ndarray
    score: Score
    cells: Score | None  # comb-equivalent (``comb_score``); None while tuning thresholds


def choose_form(
    form: FormData,
    scores: list[np.ndarray],
    thresholds: dict[str, float],
    *,
    cells: bool = True,
    veto: bool = True,
) -> Scored:
    """The fields kept on one form from its candidates' scores, scored against its widgets
    (and, with ``cells``, comb-equivalent too)."""
    det: list[WidgetBox] = []
    probs: list[float] = []
    for page, p in zip(form.pages, scores, strict=True):
        if not len(page.rects):
            continue
        floor = keep_thresholds(page.features, page.buttons, thresholds)
        if veto:
            floor[page.vetoed] = np.inf  # as ``Model.keep_thresholds`` without a second stage
        for i in choose(page.rects, page.buttons, p, floor):
            cls = page.classes[i]
            length = page.max_lengths[i] if cls == "comb" else None
            det.append(WidgetBox(page.index, tuple(page.rects[i]), cls, max_length=length))
            probs.append(float(p[i]))
    matches = match(form.gt, det)
    counts = score(form.gt, det, matches, ignored=form.ignored)
    right = np.zeros(len(det), dtype=bool)
    on_ignored = np.zeros(len(det), dtype=bool)
    for m in matches:
        if form.ignored[m.gt]:
            on_ignored[m.det] = True
        else:
            right[m.det] = True
    keep = ~on_ignored
    combs = comb_score(form.gt, det, form.ignored) if cells else None
    return Scored(form.name, np.array(probs)[keep], right[keep], counts, combs)


def calibration_table(probabilities: np.ndarray, correct: np.ndarray) -> list[tuple[float, float]]:
    """Isotonic (pool-adjacent-violators) fit of correctness on probability, as knots."""
    order = np.argsort(probabilities, kind="stable")
    p, c = probabilities[order], correct[order].astype(float)
    blocks: list[list[float]] = []  # [sum correct, count, min p, max p]
    for pi, ci in zip(p, c, strict=True):
        blocks.append([ci, 1.0, pi, pi])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            last = blocks.pop()
            blocks[-1][0] += last[0]
            blocks[-1][1] += last[1]
            blocks[-1][3] = last[3]
    knots: list[tuple[float, float]] = []
    for total, count, lo, hi in blocks:
        value = total / count
        knots.append((float(lo), value))
        if hi > lo:
            knots.append((float(hi), value))
    return _thin(knots)


def _thin(knots: list[tuple[float, float]], most: int = 64) -> list[tuple[float, float]]:
    if len(knots) <= most:
        return knots
    step = len(knots) / most
    picked = [knots[int(i * step)] for i in range(most)]
    return [*picked, knots[-1]]


def reliability(confidence: np.ndarray, correct: np.ndarray) -> list[tuple[str, int, float, float]]:
    rows = []
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)
    for lo, hi in itertools.pairwise(edges):
        inside = (confidence >= lo) & ((confidence < hi) | (hi == 1.0))
        if inside.any():
            rows.append(
                (
                    f"{lo:.1f}-{hi:.1f}",
                    int(inside.sum()),
                    float(confidence[inside].mean()),
                    float(correct[inside].mean()),
                )
            )
    return rows


@dataclass
class CrossValidation:
    thresholds: dict[str, float]
    knots: list[tuple[float, float]]
    fold_models: list[dict]  # each fold's model, with the chosen thresholds and knots
    total: Score  # every out-of-fold form together
    per_form_f1: float  # mean over forms with visible widgets
    cells: Score  # every out-of-fold form together, comb-equivalent
    first: list[list[np.ndarray]]  # each form's out-of-fold first-stage scores, per page


def cross_validate(
    forms: list[FormData],
    out: list[str],
    jobs: int,
    share: float = 1.0,
    *,
    second_stage: bool = False,
    nested: bool = False,
) -> CrossValidation:
    """Out-of-fold scores, the thresholds they favour and the calibration they give. With
    ``share`` below 1 each fold trains on that share of its training groups (``kept_groups``)
    and is tested on its whole test fold."""
    fold = folds(forms)
    kept = kept_groups([f.group for f in forms], share)
    veto = not second_stage  # a second stage weighs the vetoes as a feature
    training = [
        [f for f, i in zip(forms, fold, strict=True) if i != k and f.group in kept]
        for k in range(FOLDS)
    ]
    fitted = fit_all([(*training_matrix(t), False) for t in training], jobs)
    oof_models = [model_from_dict(d) for d in fitted]
    for k in range(FOLDS):
        out.append(f"fold {k + 1}: trained on {len(training[k])} forms")
    first = [page_scores(oof_models[k], form) for form, k in zip(forms, fold, strict=True)]
    oof = first
    if second_stage:
        seconds = second_stages(forms, fold, kept, first, jobs, nested)
        fitted = [{**d, "second": second} for d, second in zip(fitted, seconds, strict=True)]
        stacked = [model_from_dict(d) for d in fitted]
        oof = [
            [
                stacked[k].score(page.features, page.boxes, page.buttons, page.vetoed)
                for page in form.pages
            ]
            for form, k in zip(forms, fold, strict=True)
        ]

    def evaluate(thresholds: dict[str, float]) -> Score:
        total = Score()
        for form, scores in zip(forms, oof, strict=True):
            total = total + choose_form(form, scores, thresholds, cells=False, veto=veto).score
        return total

    # One threshold for all, then each in turn (text or button, kept by the rules or not),
    # keeping what raises the out-of-fold F1. The boxes and circles the rules keep are all
    # kept (the scorer only chooses among overlapping readings of them): a tuned threshold
    # there gives a somewhat higher out-of-fold F1 (fewer boxes that are not fields) but
    # lower button recall, and it drops whole radio rows of forms unlike the training set.
    grid = [float(t) for t in np.round(np.arange(0.1, 0.76, 0.05), 2)]
    best: tuple[dict[str, float], float] | None = None
    for t in grid:
        thresholds = {**dict.fromkeys(THRESHOLD_KEYS, t), "button_rule": 0.0}
        f1 = evaluate(thresholds).f1 or 0.0
        out.append(f"  all thresholds {t:.2f}: F1 {f1:.3f}")
        if best is None or f1 > best[1]:
            best = (thresholds, f1)
    assert best is not None
    for key in (k for k in THRESHOLD_KEYS if k != "button_rule"):
        for t in grid:
            trial = {**best[0], key: t}
            f1 = evaluate(trial).f1 or 0.0
            if f1 > best[1]:
                best = (trial, f1)
        out.append(f"  {key} -> {best[0][key]:.2f}: F1 {best[1]:.3f}")
    thresholds = best[0]
    scored = [
        choose_form(form, scores, thresholds, veto=veto)
        for form, scores in zip(forms, oof, strict=True)
    ]
    probabilities = np.concatenate([s.probabilities for s in scored])
    correct = np.concatenate([s.correct for s in scored])
    knots = calibration_table(probabilities, correct)
    total, per_form_f1 = report(forms, scored, thresholds, knots, probabilities, correct, out)
    fold_models = [{**d, **_choice(thresholds, knots)} for d in fitted]
    cells, _ = _summed([s.cells or Score() for s in scored])
    return CrossValidation(thresholds, knots, fold_models, total, per_form_f1, cells, first)


def second_stages(
    forms: list[FormData],
    fold: list[int],
    kept: set[str],
    first: list[list[np.ndarray]],
    jobs: int,
    nested: bool = False,
) -> list[dict]:
    """Each fold's second stage, trained on the other folds' forms with first scores from a
    model that never saw those forms, so that it learns from scores as unsure as it will meet.

    By default those are the forms' own out-of-fold scores, from first stages that did see
    the test fold (stacking on shared folds). ``nested`` keeps the test fold away from them
    too: a form of fold j in the training of fold k is scored by a model trained without
    folds j and k, one per pair of folds (twice the fits).
    """
    chosen = [
        [(at, i) for at, (f, i) in enumerate(zip(forms, fold, strict=True))
         if i != k and f.group in kept]
        for k in range(FOLDS)
    ]  # fmt: skip
    if nested:
        pairs = list(itertools.combinations(range(FOLDS), 2))
        pair_fitted = fit_all(
            [
                (
                    *training_matrix(
                        [f for f, i in zip(forms, fold, strict=True)
                         if i not in pair and f.group in kept]
                    ),
                    False,
                )
                for pair in pairs
            ],
            jobs,
        )  # fmt: skip
        models = {pair: model_from_dict(d) for pair, d in zip(pairs, pair_fitted, strict=True)}

        def scores(at: int, i: int, k: int) -> list[np.ndarray]:
            return page_scores(models[(min(i, k), max(i, k))], forms[at])
    else:

        def scores(at: int, i: int, k: int) -> list[np.ndarray]:
            return first[at]

    tasks = []
    for k in range(FOLDS):
        rows = [second_features(forms[at], scores(at, i, k)) for at, i in chosen[k]]
        tasks.append((*training_matrix([forms[at] for at, _ in chosen[k]], rows), True))
    return fit_all(tasks, jobs)


def fit_final(
    forms: list[FormData], first: list[list[np.ndarray]], jobs: int, second_stage: bool
) -> dict:
    """The shipped model: the first stage on every form and, where there is one, the second
    on every form as the first stage of the fold that never saw it scores it (both at once)."""
    if not second_stage:
        return _fit_job((*training_matrix(forms), False))
    rows = [second_features(f, scores) for f, scores in zip(forms, first, strict=True)]
    one, two = fit_all(
        [(*training_matrix(forms), False), (*training_matrix(forms, rows), True)], jobs
    )
    return {**one, "second": two}


def _summed(scores: Iterable[Score]) -> tuple[Score, list[float]]:
    """The micro total of per-form scores, and the F1s of the forms with visible widgets
    (a form whose every widget lies over blank paper has nothing to find: not averaged)."""
    total = Score()
    per_form: list[float] = []
    for one in scores:
        total = total + one
        if one.n_gt and one.f1 is not None:
            per_form.append(one.f1)
    return total, per_form


def _class_recall(counts: list[int]) -> str:
    return f"n={counts[0]:<6} {counts[1] / counts[0]:.3f} (same group {counts[2] / counts[0]:.3f})"


def report(
    forms, scored, threshold, knots, probabilities, correct, out: list[str]
) -> tuple[Score, float]:
    """The cross-validated figures into ``out``, comb-equivalent with the plain ones beside;
    returns the plain total and mean per-form F1."""
    total, per_form = _summed(s.score for s in scored)
    cells, cells_per_form = _summed(s.cells or Score() for s in scored)
    out.append("")
    out.append(
        f"5-fold cross-validation by form group ({len(forms)} forms, ignore rule), thresholds "
        + ", ".join(f"{k} {v:.2f}" for k, v in threshold.items())
    )
    out.append(f"  figures: {COMB_NOTE}")
    out.append(f"  ground-truth widgets (visible print)  {cells.n_gt}  plain {total.n_gt}")
    out.append(f"  detections                            {cells.n_det}  plain {total.n_det}")
    out.append(
        f"  micro F1                              {cells.f1:.3f}  "
        f"(P {cells.precision:.3f}, R {cells.recall:.3f})  plain {total.f1:.3f}  "
        f"(P {total.precision:.3f}, R {total.recall:.3f})"
    )
    out.append(
        f"  mean per-form F1                      {statistics.fmean(cells_per_form):.3f}  "
        f"plain {statistics.fmean(per_form):.3f}  ({len(per_form)} forms with visible widgets)"
    )
    out.append(
        f"  class-aware F1                        {cells.class_f1:.3f}  plain {total.class_f1:.3f}"
    )
    out.append(
        f"  checkbox+radio recall (as a button)   {cells.button_recall:.3f}  "
        f"plain {total.button_recall:.3f}"
    )
    for cls, counts in sorted(cells.by_class.items()):
        plain = total.by_class.get(cls)
        out.append(
            f"    recall {cls:<10} {_class_recall(counts)}"
            + (f"  plain {_class_recall(plain)}" if plain else "")
        )
    calibrated = np.interp(probabilities, [k[0] for k in knots], [k[1] for k in knots])
    out.append("")
    out.append("Reliability of the calibrated confidence (out-of-fold detections)")
    out.append("  confidence   fields   mean confidence   share right")
    for name, n, mean, right in reliability(calibrated, correct):
        out.append(f"  {name:<12} {n:>6}   {mean:>15.3f}   {right:>11.3f}")
    worst = sorted(scored, key=lambda s: (s.cells or s.score).f1 or 0)[:10]
    out.append("")
    out.append("Weakest forms (out-of-fold F1, comb-equivalent; plain F1 beside)")
    for s in worst:
        c = s.cells or s.score
        out.append(
            f"  {s.form:<60} gt {c.n_gt:>4} det {c.n_det:>4} F1 {c.f1 or 0:.3f}  "
            f"plain {s.score.f1 or 0:.3f}"
        )
    return total, statistics.fmean(per_form) if per_form else 0.0


def _convert_job(task: tuple[Path, dict, Path | None]) -> dict[str, Any]:
    path, model_dict, cache_dir = task
    model = model_from_dict(model_dict)

    def converter(flat: bytes, mode: str) -> Any:
        return convert(flat, mode, model=model if mode == "fields" else None)

    modes = ("fields", "fields_fast")
    return evaluate_form(path, modes=modes, converter=converter, cache_dir=cache_dir).summary


def convert_unseen(
    corpus: Path,
    forms: list[FormData],
    fold_models: list[dict],
    cache_dir: Path | None,
    jobs: int,
    out: list[str],
) -> list[dict[str, Any]]:
    """Every form through ``convert()`` with the model of the fold that never saw it, read
    back and scored as ``detect_eval.py`` scores the development corpus: the figures a user
    of forms like these would get, names and timing included. Returns the per-form summaries
    (with each form's 0-based ``fold``), for ``--json``."""
    fold = folds(forms)
    tasks = [
        (corpus / "forms" / f.name, fold_models[k], cache_dir)
        for f, k in zip(forms, fold, strict=True)
    ]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            summaries = list(pool.map(_convert_job, tasks, chunksize=1))
    else:
        summaries = [_convert_job(t) for t in tasks]
    for summary, k in zip(summaries, fold, strict=True):
        summary["fold"] = k
    total = overall(summaries, ("fields", "fields_fast"))
    f = total["modes"]["fields"]
    c = comb_figures(f)
    rules = total["modes"]["fields_fast"]
    r = comb_figures(rules)
    out.append("")
    out.append(
        "Cross-validated through convert() (each form converted by the fold model that never "
        "saw it, widgets read back from the PDF)"
    )
    out.append(f"  figures: {COMB_NOTE}")
    out.append(f"  micro F1                              {c['f1']:.3f}  "
               f"(P {c['precision']:.3f}, R {c['recall']:.3f})  plain {f['f1']:.3f}  "
               f"(P {f['precision']:.3f}, R {f['recall']:.3f})")  # fmt: skip
    out.append(f"  mean per-form F1                      {c['mean_form_f1']:.3f}  "
               f"plain {f['mean_form_f1']:.3f}")  # fmt: skip
    out.append(f"  class-aware F1                        {c['class_f1']:.3f}  "
               f"plain {f['class_f1']:.3f}")  # fmt: skip
    out.append(f"  checkbox+radio recall (as a button)   {c['button_recall']:.3f}  "
               f"plain {f['button_recall']:.3f}")  # fmt: skip
    for cls, counts in c["by_class"].items():
        plain = f["by_class"].get(cls)
        out.append(
            f"    recall {cls:<10} n={counts['n']:<6} {counts['recall']:.3f}"
            + (f"  plain n={plain['n']:<6} {plain['recall']:.3f}" if plain else "")
        )
    out.append(
        f"  duplicate names                       {f['duplicate_names']} in "
        f"{f['forms_with_duplicates']} forms"
    )
    out.append(
        f"  names from labels                     {f['label_named_share']:.1%} "
        f"({f['label_named']}/{f['labelled']})"
    )
    out.append(
        f"  median s/page                         {f['median_s_per_page']:.4f} = "
        f"{f['ratio_to_pdfplumber']:.2f}x pdfplumber ({total['pdfplumber_median_s_per_page']:.4f})"
    )
    out.append(
        f"  the rules alone (fields_fast): micro F1 {r['f1']:.3f} (plain {rules['f1']:.3f}), "
        f"mean per-form F1 {r['mean_form_f1']:.3f} (plain {rules['mean_form_f1']:.3f}), "
        f"class-aware F1 {r['class_f1']:.3f} (plain {rules['class_f1']:.3f}), "
        f"checkbox+radio recall {r['button_recall']:.3f} (plain {rules['button_recall']:.3f}), "
        f"{rules['ratio_to_pdfplumber']:.2f}x pdfplumber"
    )
    gates = [
        ("micro F1", "f1", CV_MIN_F1),
        ("mean per-form F1", "mean_form_f1", CV_MIN_F1),
        ("class-aware F1", "class_f1", CV_MIN_CLASS_F1),
        ("checkbox+radio recall", "button_recall", CV_MIN_BUTTON_RECALL),
    ]
    out.append("Acceptance (cross-validated, comb-equivalent; plain beside)")
    for what, key, target in gates:
        out.append(
            f"  {'PASS' if c[key] >= target else 'FAIL'}  {what} {c[key]:.3f} >= {target} "
            f"(plain {f[key]:.3f})"
        )
    return summaries


def pool_ceiling(forms: list[FormData]) -> tuple[int, int]:
    """Visible widgets that some candidate covers (IoU >= 0.5), of all visible widgets."""
    hit = total = 0
    for form in forms:
        for page in form.pages:
            seen = [
                w.rect
                for w, ig in zip(form.gt, form.ignored, strict=True)
                if w.page == page.index and not ig
            ]
            total += len(seen)
            if seen and len(page.rects):
                hit += int(
                    (iou_matrix(seen, list(map(tuple, page.rects))).max(axis=1) >= IOU_MIN).sum()
                )
    pages = {(f.name, p.index) for f in forms for p in f.pages}
    missing = sum(
        1
        for f in forms
        for w, ig in zip(f.gt, f.ignored, strict=True)
        if not ig and (f.name, w.page) not in pages
    )
    return hit, total + missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, help="only the first N forms (a quick run)")
    parser.add_argument("--cv-only", action="store_true", help="cross-validate, write nothing")
    parser.add_argument("--model", type=Path, default=MODEL_PATH)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--json",
        type=Path,
        help="write the per-form cross-validated figures here (ffdnet_anchor.py --compare)",
    )
    parser.add_argument(
        "--learning-curve",
        action="store_true",
        help=f"cross-validate on {', '.join(f'{100 * s:.0f}%%' for s in CURVE_SHARES)} of "
        "the training forms (same test folds), write the curve, ship nothing",
    )
    parser.add_argument("--results-curve", type=Path, default=CURVE_RESULTS)
    parser.add_argument(
        "--second-stage",
        action="store_true",
        help="train a second stage that scores each candidate again with its neighbours' first "
        "scores (engine/detect/context.py), vetoes read as a feature; not shipped by default: "
        "see docs/detector.md for its figures",
    )
    parser.add_argument(
        "--nested",
        action="store_true",
        help="cross-validate the second stage on first scores from models that never saw the "
        "test fold either (ten more fits)",
    )
    args = parser.parse_args(argv)
    if not (args.corpus / "forms").is_dir():
        print(f"No training corpus at {args.corpus}/forms.", file=sys.stderr)
        return 2
    forms = load_corpus(args.corpus, args.cache, args.jobs, args.limit)
    x, y = training_matrix(forms)
    hit, total = pool_ceiling(forms)
    out = [
        f"train_detector: {len(forms)} forms, {sum(len(f.pages) for f in forms)} pages, "
        f"{len(x)} candidates ({int((y >= IOU_MIN).sum())} on a field), {len(FEATURES)} "
        f"features, seed {SEED}",
        f"candidate pool covers {hit} of {total} visible widgets ({hit / max(total, 1):.3f}): "
        "the recall no scorer can pass",
        f"model: {json.dumps(PARAMS)}",
    ]
    print("\n".join(out), flush=True)
    if args.learning_curve:
        return learning_curve(forms, out, args.jobs, args.results_curve)
    cv = cross_validate(forms, out, args.jobs, second_stage=args.second_stage, nested=args.nested)
    thresholds, knots = cv.thresholds, cv.knots
    summaries = convert_unseen(args.corpus, forms, cv.fold_models, args.cache, args.jobs, out)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"forms": summaries}, indent=2, ensure_ascii=False) + "\n")
    print("\n".join(out[3:]), flush=True)
    if args.cv_only:
        if args.results != RESULTS:
            args.results.write_text("\n".join(out) + "\n")
        return 0
    final = fit_final(forms, cv.first, args.jobs, args.second_stage)
    final.update(_choice(thresholds, knots))
    text = json.dumps(final, separators=(",", ":"), sort_keys=True) + "\n"
    args.model.parent.mkdir(parents=True, exist_ok=True)
    scratch = args.model.with_suffix(".tmp")
    scratch.write_text(text)
    scratch.replace(args.model)
    digest = hashlib.sha256(text.encode()).hexdigest()
    out.append("")
    out.append(f"model written: {_shown(args.model)} ({len(text)} bytes, sha256 {digest})")
    model_s, import_s = load_seconds()
    out.append(
        f"model loads in {model_s:.3f} s in a fresh process (after {import_s:.3f} s importing "
        "the engine)"
    )
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text("\n".join(out) + "\n")
    print("\n".join(out[-2:]))
    return 0


def _shown(path: Path) -> str:
    """A path as the results file names it: from the repository root where it lies inside."""
    resolved = path.resolve()
    return str(resolved.relative_to(REPO_ROOT)) if resolved.is_relative_to(REPO_ROOT) else str(path)


def learning_curve(forms: list[FormData], head: list[str], jobs: int, path: Path) -> int:
    """What more training forms buy: the cross-validation repeated with each fold trained on
    a share of its training groups, tested on the same whole test folds."""
    rows = []
    for share in CURVE_SHARES:
        log: list[str] = []
        cv = cross_validate(forms, log, jobs, share)
        trained = [line.split("trained on ")[1] for line in log if "trained on" in line]
        t = cv.total
        rows.append(
            f"  {share:>5.0%}  {', '.join(x.split()[0] for x in trained):<22} "
            f"{cv.cells.f1 or 0:>10.3f}  {t.f1:>8.3f}  "
            f"{t.precision:>6.3f}  {t.recall:>6.3f}  {cv.per_form_f1:>8.3f}  {t.class_f1:>11.3f}"
            f"  {t.button_recall:>13.3f}"
        )
        print(rows[-1], flush=True)
    lines = [
        *head,
        "",
        f"Learning curve: 5-fold cross-validation by form group ({len(forms)} forms, ignore "
        "rule); each fold trains on a share of its training groups, thresholds tuned out of fold",
        "  share  forms per fold         comb cells  micro F1       P       R  per-form  "
        "class-aware  button recall",
        "  (comb cells: comb-equivalent micro F1; the rest plain)",
        *rows,
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(rows) - 4 :]))
    return 0


_LOAD = """
import time
started = time.perf_counter()
from fillpdf_provider.engine.detect.scorer import shipped_model
imported = time.perf_counter()
assert shipped_model() is not None
print(imported - started, time.perf_counter() - imported)
"""


def load_seconds(runs: int = 3) -> tuple[float, float]:
    """What the first conversion of a new process pays (best of ``runs``): importing the
    engine, then reading the shipped model."""
    times = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _LOAD], capture_output=True, text=True, check=True
        )
        imports, model = done.stdout.split()
        times.append((float(model), float(imports)))
    model, imports = min(times)
    return model, imports


if __name__ == "__main__":
    raise SystemExit(main())
