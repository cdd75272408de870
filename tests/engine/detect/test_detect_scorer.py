"""The learned field scorer: its trees answer as scikit-learn's, training gives the same bytes
twice, what it keeps never overlaps, its confidences are calibrated, and the candidate pool
holds the readings the rules leave out.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from benchmarks.train_detector import (
    calibration_table,
    fit_matrix,
    reliability,
    to_dict,
)
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.detect import page_geometries, page_pool
from fillpdf_provider.engine.detect.features import FEATURES, INDEX
from fillpdf_provider.engine.detect.scorer import (
    IOU_MAX,
    MODEL_FILE,
    TEXT_SHARED_MAX,
    THRESHOLD_KEYS,
    choose,
    keep_thresholds,
    model_from_dict,
    rule_kept,
    shipped_model,
)
from fillpdf_provider.engine.errors import FillPdfError
from kits.flatkit import FlatPage, one_page, text_width

pytest.importorskip("sklearn", reason="the test extra installs scikit-learn")

REPO_ROOT = Path(__file__).resolve().parents[3]


def _data(seed: int = 0, rows: int = 600) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, len(FEATURES))).astype(np.float32)
    x[:, 5] = rng.integers(0, 2, rows)  # a one-hot column: thresholds at 0.5
    signal = x[:, 0] + 0.5 * x[:, 3] - x[:, 7] * x[:, 2] + x[:, 5]
    y = np.clip(0.5 + 0.2 * (signal + rng.normal(scale=0.3, size=rows)), 0.0, 1.0)
    return x, y


def test_trees_answer_as_scikit_learn() -> None:
    x, y = _data()
    fitted = fit_matrix(x, y)
    model = model_from_dict(to_dict(fitted, 0.5, []))
    for seed in (0, 1):
        rows, _ = _data(seed)
        expected = np.clip(fitted.predict(rows), 0.0, 1.0)
        np.testing.assert_allclose(model.probability(rows), expected, rtol=1e-9, atol=1e-12)
    assert model.probability(np.zeros((0, len(FEATURES)))).shape == (0,)


_TRAIN_TWICE = """
import hashlib, json, sys
sys.path[:0] = [{root!r}, {plugins!r}]
import numpy as np
from benchmarks.train_detector import fit_matrix, to_dict
from fillpdf_provider.engine.detect.features import FEATURES
rng = np.random.default_rng(7)
x = rng.normal(size=(400, len(FEATURES))).astype(np.float32)
y = np.clip(0.5 + 0.3 * (x[:, 1] - x[:, 4]), 0.0, 1.0)
text = json.dumps(to_dict(fit_matrix(x, y), 0.4, [(0.0, 0.1), (1.0, 0.9)]), sort_keys=True)
print(hashlib.sha256(text.encode()).hexdigest())
"""


def test_training_gives_the_same_bytes_in_fresh_processes() -> None:
    code = _TRAIN_TWICE.format(root=str(REPO_ROOT), plugins=str(REPO_ROOT / "plugins"))
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_a_model_for_other_features_is_refused() -> None:
    x, y = _data()
    data = to_dict(fit_matrix(x[:200], y[:200]), 0.5, [])
    data["features"] = data["features"][:-1]
    with pytest.raises(ValueError, match="make train-detector"):
        model_from_dict(data)


def test_the_shipped_model_is_small_and_sane() -> None:
    path = resources.files("fillpdf_provider.engine").joinpath("data", MODEL_FILE)
    text = path.read_text()
    assert len(text.encode()) <= 5 * 1024 * 1024
    model = shipped_model()
    assert model is not None and model.features == FEATURES
    assert set(model.thresholds) == set(THRESHOLD_KEYS)
    assert all(0.0 <= t < 1.0 for t in model.thresholds.values())
    knots = model.calibration
    assert knots and all(a[1] <= b[1] for a, b in itertools.pairwise(knots))
    data = json.loads(text)
    assert hashlib.sha256(text.encode()).hexdigest()  # readable, whole JSON
    assert len(data["trees"]) > 0


def _overlap(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    return inter / (area_a + area_b - inter), inter / min(area_a, area_b)


def test_choose_keeps_the_likeliest_and_nothing_on_top_of_it() -> None:
    rng = np.random.default_rng(3)
    corners = rng.uniform(0, 500, size=(300, 2))
    sizes = rng.uniform(8, 120, size=(300, 2))
    boxes = np.hstack([corners, corners + sizes])
    buttons = rng.uniform(size=300) < 0.3
    scores = rng.uniform(size=300)
    kept = choose(boxes, buttons, scores, 0.4)
    assert kept and kept[0] == int(np.argmax(scores))
    assert all(scores[i] >= 0.4 for i in kept)
    for n, i in enumerate(kept):
        for j in kept[:n]:
            iou, shared = _overlap(boxes[i], boxes[j])
            assert iou <= IOU_MAX + 1e-9
            if not buttons[i] and not buttons[j]:
                assert shared <= TEXT_SHARED_MAX + 1e-9
    # every candidate left out is below the threshold or collides with a likelier kept one
    for i in set(range(300)) - set(kept):
        if scores[i] < 0.4:
            continue
        assert any(scores[j] >= scores[i] and _overlap(boxes[i], boxes[j])[0] > 0 for j in kept)


def test_calibration_follows_what_is_right() -> None:
    rng = np.random.default_rng(5)
    probability = rng.uniform(size=20_000)
    correct = rng.uniform(size=20_000) < probability**2  # over-confident raw scores
    knots = calibration_table(probability, correct)
    xs, ys = [k[0] for k in knots], [k[1] for k in knots]
    assert xs == sorted(xs) and ys == sorted(ys)
    calibrated = np.interp(probability, xs, ys)
    for _, count, mean, right in reliability(calibrated, correct):
        if count >= 500:
            assert abs(mean - right) < 0.05
    raw = reliability(probability, correct)
    assert max(abs(mean - right) for _, _, mean, right in raw) > 0.15


def test_thresholds_follow_kind_and_the_rules() -> None:
    x = np.zeros((4, len(FEATURES)), dtype=np.float32)
    x[1, INDEX["flagged"]] = 1  # a candidate a rule sets aside
    x[2, INDEX["variant=cell-full"]] = 1  # another reading of a cue
    x[3, INDEX["cue=blank"]] = 1  # a cue the rules do not read
    assert rule_kept(x).tolist() == [True, False, False, False]
    thresholds = {"text_rule": 0.1, "text_new": 0.2, "button_rule": 0.3, "button_new": 0.4}
    text = keep_thresholds(x, np.zeros(4, dtype=bool), thresholds)
    buttons = keep_thresholds(x, np.ones(4, dtype=bool), thresholds)
    assert text.tolist() == [0.1, 0.2, 0.2, 0.2]
    assert buttons.tolist() == [0.3, 0.4, 0.4, 0.4]
    # per-candidate thresholds: a low score kept where its own threshold allows it
    boxes = np.array([[0, 0, 10, 10], [100, 0, 110, 10]], dtype=float)
    assert choose(boxes, np.zeros(2, bool), np.array([0.15, 0.3]), np.array([0.1, 0.5])) == [0]


def test_fields_fast_keeps_to_the_rules() -> None:
    from fillpdf_provider.engine.detect import detect_fields
    from kits.flatkit import flat_form

    pdf = flat_form()
    assert detect_fields(pdf, "fields_fast") == detect_fields(pdf, "fields_fast", model=None)


def _blank_after_label() -> bytes:
    page = FlatPage()
    page.text(72, 700, "Name:")
    page.text(72, 670, "City of birth:")
    page.text(330, 670, "Zip:")
    return one_page(page)


def test_the_pool_reads_the_blank_after_a_label() -> None:
    pdf = _blank_after_label()
    ((_, geo, to_pdf),) = list(page_geometries(pdf, "fields", None))
    pool = page_pool(geo, complete=True)
    assert pool is not None
    candidates, features, labels = pool.candidates, pool.features, pool.labels
    assert features.shape == (len(candidates), len(FEATURES))
    blanks = [
        (to_pdf(c.box), label)
        for c, label in zip(candidates, labels, strict=True)
        if c.cue == "blank"
    ]
    name_end = 72 + text_width("Name:")
    city_end = 72 + text_width("City of birth:")
    after_name = [r for r, _ in blanks if abs(r[0] - name_end) < 4 and 690 < r[1] < 702]
    after_city = [r for r, _ in blanks if abs(r[0] - city_end) < 4 and 660 < r[1] < 672]
    assert after_name and after_city
    assert all(r[2] <= 330 for r in after_city)  # stops before the next phrase
    labelled = {label for _, label in blanks}
    assert {"Name:", "City of birth:"} <= labelled
    assert all(
        features[i, INDEX["cue=blank"]] == 1 for i, c in enumerate(candidates) if c.cue == "blank"
    )


def test_min_confidence_leaves_out_the_unsure() -> None:
    from kits.flatkit import flat_form

    pdf = flat_form()
    every = convert(pdf).schema
    assert every
    floor = sorted(f.confidence for f in every)[len(every) // 2]
    sure = convert(pdf, min_confidence=floor).schema
    assert 0 < len(sure) <= len(every)
    assert all(f.confidence >= floor for f in sure)
    with pytest.raises(FillPdfError, match="min_confidence"):
        convert(pdf, min_confidence=1.5)


def test_learning_curve_shares_add_forms_and_never_swap_them() -> None:
    from benchmarks.train_detector import group_folds, kept_groups

    groups = [f"repo{i % 37}__form{i}" for i in range(200)]
    quarter, half, whole = (kept_groups(groups, s) for s in (0.25, 0.5, 1.0))
    assert (len(quarter), len(half), len(whole)) == (50, 100, 200)
    assert quarter < half < whole == set(groups)
    assert kept_groups(list(reversed(groups)), 0.5) == half  # the order given does not matter
    # every fold keeps some of its groups: the shares are drawn apart from the folds
    fold = dict(zip(groups, group_folds(groups), strict=True))
    assert {fold[g] for g in quarter} == set(range(5))
