"""The scorer's second stage and the tick boxes the pool reads beyond the rules.

The second stage scores a candidate again with its neighbours' first scores beside its own
features; these tests hold that its numbers say what they name, that a model file with a
second stage answers as scikit-learn does, that a veto is evidence to it rather than a rule,
and that a wide court-form box, a printed "[  ]" and an oval each give a tick-box reading.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import pytest

from benchmarks.train_detector import fit_matrix, to_dict, trees_dict
from fillpdf_provider.engine.detect import page_geometries, page_pool
from fillpdf_provider.engine.detect.context import CONTEXT_FEATURES, context_features
from fillpdf_provider.engine.detect.features import FEATURES
from fillpdf_provider.engine.detect.scorer import model_from_dict
from kits.flatkit import FlatPage, one_page, text_width

pytest.importorskip("sklearn", reason="the test extra installs scikit-learn")

COLUMN = {name: i for i, name in enumerate(CONTEXT_FEATURES)}


def test_context_reads_rivals_rows_and_nesting() -> None:
    boxes = np.array(
        [
            [0, 0, 100, 20],  # a cell
            [2, 2, 98, 18],  # another reading of it, less likely
            [200, 0, 210, 10],  # a row of three equal boxes
            [220, 0, 230, 10],
            [240, 0, 250, 10],
            [40, 5, 50, 15],  # a small box inside the cell
        ],
        dtype=float,
    )
    scores = np.array([0.9, 0.4, 0.8, 0.7, 0.6, 0.3])
    buttons = np.array([False, False, True, True, True, True])
    vetoed = np.array([False, True, False, False, False, False])
    ctx = context_features(boxes, scores, buttons, vetoed)
    assert ctx.shape == (6, len(CONTEXT_FEATURES))
    assert ctx[1, COLUMN["ctx_best_overlap"]] == pytest.approx(0.9)
    assert ctx[1, COLUMN["ctx_margin_over_overlap"]] == pytest.approx(0.4 - 0.9)
    assert ctx[0, COLUMN["ctx_margin_over_overlap"]] == pytest.approx(0.9 - 0.4)
    assert ctx[2, COLUMN["ctx_row_count"]] == 2  # the two others of its row
    assert ctx[2, COLUMN["ctx_row_mean"]] == pytest.approx((0.7 + 0.6) / 2)
    assert ctx[0, COLUMN["ctx_best_inside"]] == pytest.approx(0.4)  # its rival's centre too
    assert ctx[5, COLUMN["ctx_best_around"]] == pytest.approx(0.9)
    assert ctx[5, COLUMN["ctx_best_other_kind"]] == pytest.approx(0.9)  # a text cell on it
    assert ctx[:, COLUMN["ctx_rank"]].tolist() == pytest.approx(
        [0, 4 / 6, 1 / 6, 2 / 6, 3 / 6, 5 / 6]
    )
    assert ctx[:, COLUMN["ctx_vetoed"]].tolist() == [0, 1, 0, 0, 0, 0]
    assert context_features(
        np.zeros((0, 4)), np.zeros(0), np.zeros(0, bool), np.zeros(0, bool)
    ).shape == (
        0,
        len(CONTEXT_FEATURES),
    )


def test_context_is_the_same_computed_in_chunks() -> None:
    from fillpdf_provider.engine.detect import context

    rng = np.random.default_rng(5)
    corners = rng.uniform(0, 500, size=(700, 2))
    boxes = np.hstack([corners, corners + rng.uniform(5, 80, size=(700, 2))])
    scores = rng.uniform(size=700)
    buttons = rng.integers(0, 2, 700).astype(bool)
    vetoed = rng.integers(0, 2, 700).astype(bool)
    whole = context_features(boxes, scores, buttons, vetoed)
    saved = context.CHUNK
    try:
        context.CHUNK = 64
        chunked = context_features(boxes, scores, buttons, vetoed)
    finally:
        context.CHUNK = saved
    np.testing.assert_array_equal(whole, chunked)


@functools.cache
def _fitted() -> tuple[dict, Any, Any]:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(500, len(FEATURES))).astype(np.float32)
    y = np.clip(0.5 + 0.2 * (x[:, 0] - x[:, 3]), 0.0, 1.0)
    first = fit_matrix(x, y)
    x2 = rng.normal(size=(500, len(FEATURES) + len(CONTEXT_FEATURES))).astype(np.float32)
    y2 = np.clip(0.5 + 0.3 * x2[:, len(FEATURES)], 0.0, 1.0)
    second = fit_matrix(x2, y2)
    data = to_dict(first, 0.4, [], trees_dict(second, FEATURES + CONTEXT_FEATURES))
    return data, first, second


def _two_stage() -> tuple[dict, Any, Any]:
    """A model file with both stages (a fresh copy: tests edit it), and the two fits."""
    data, first, second = _fitted()
    return copy.deepcopy(data), first, second


def test_a_second_stage_answers_as_scikit_learn() -> None:
    data, first, second = _two_stage()
    model = model_from_dict(data)
    assert model.second is not None
    rng = np.random.default_rng(12)
    x = rng.normal(size=(40, len(FEATURES))).astype(np.float32)
    corners = rng.uniform(0, 300, size=(40, 2))
    boxes = np.hstack([corners, corners + 12])
    buttons = np.zeros(40, dtype=bool)
    vetoed = np.zeros(40, dtype=bool)
    p1 = np.clip(first.predict(x), 0.0, 1.0)
    np.testing.assert_allclose(model.probability(x), p1, rtol=1e-9, atol=1e-12)
    rows = np.hstack([x, context_features(boxes, p1, buttons, vetoed)])
    expected = np.clip(second.predict(rows), 0.0, 1.0)
    np.testing.assert_allclose(model.score(x, boxes, buttons, vetoed), expected, atol=1e-6)


def test_a_second_stage_for_other_features_is_refused() -> None:
    data, _, _ = _two_stage()
    data["second"]["features"] = data["second"]["features"][:-1]
    with pytest.raises(ValueError, match="make train-detector"):
        model_from_dict(data)


def test_a_veto_holds_without_a_second_stage_and_is_weighed_with_one() -> None:
    data, _, _ = _two_stage()
    x = np.zeros((2, len(FEATURES)), dtype=np.float32)
    vetoed = np.array([False, True])
    with_second = model_from_dict(data)
    alone = model_from_dict({k: v for k, v in data.items() if k != "second"})
    assert np.isinf(alone.keep_thresholds(x, np.zeros(2, bool), vetoed)[1])
    assert np.isfinite(with_second.keep_thresholds(x, np.zeros(2, bool), vetoed)).all()


def _oval(page: FlatPage, x0: float, y0: float, x1: float, y1: float) -> None:
    """A stadium, as forms draw their oval tick boxes: two straight sides, two round ends."""
    r, k = (y1 - y0) / 2, 0.5523
    cy = (y0 + y1) / 2
    page.raw(
        f"0.75 w {x1 - r} {y0} m {x0 + r} {y0} l "
        f"{x0 + r - k * r} {y0} {x0} {cy - k * r} {x0} {cy} c "
        f"{x0} {cy + k * r} {x0 + r - k * r} {y1} {x0 + r} {y1} c "
        f"{x1 - r} {y1} l "
        f"{x1 - r + k * r} {y1} {x1} {cy + k * r} {x1} {cy} c "
        f"{x1} {cy - k * r} {x1 - r + k * r} {y0} {x1 - r} {y0} c h S"
    )


def _readings(page: FlatPage) -> dict[str, list[tuple[float, float, float, float]]]:
    ((_, geo, to_pdf),) = list(page_geometries(one_page(page), "fields", None))
    pool = page_pool(geo, complete=True)
    assert pool is not None
    found: dict[str, list[tuple[float, float, float, float]]] = {}
    for cand in pool.candidates:
        if cand.kind == "checkbox":
            found.setdefault(cand.variant, []).append(to_pdf(cand.box))
    return found


def _near(box: tuple[float, float, float, float], want: tuple[float, float, float, float]) -> bool:
    return all(abs(a - b) <= 1.0 for a, b in zip(box, want, strict=True))


def test_a_wide_court_box_gives_the_square_in_its_middle() -> None:
    page = FlatPage()
    page.box((100, 600, 118, 609))  # 18 x 9: the widget is the 9 x 9 square in its middle
    page.text(122, 601, "Petitioner")
    squares = _readings(page).get("square-in-box", [])
    assert any(_near(b, (104.5, 600, 113.5, 609)) for b in squares)


def test_a_wide_box_with_print_inside_is_no_tick_box() -> None:
    page = FlatPage()
    page.box((100, 600, 118, 609))
    page.text(102, 601.5, "12", size=7)
    assert not _readings(page).get("square-in-box")


def test_printed_brackets_give_a_tick_box() -> None:
    page = FlatPage()
    end = page.text(72, 700, "[")
    page.text(end + 8, 700, "]")
    page.text(end + 8 + text_width("]") + 4, 700, "Yes")
    brackets = _readings(page).get("brackets", [])
    assert brackets
    box = brackets[0]
    assert box[0] < end + 4 < box[2]  # spans the blank between the brackets
    assert 695 < (box[1] + box[3]) / 2 < 707


def test_brackets_with_words_inside_are_no_tick_box() -> None:
    page = FlatPage()
    page.text(72, 700, "[see page 2]")
    page.text(72, 680, "( optional )")
    assert not _readings(page).get("brackets")


def test_an_oval_gives_a_tick_box() -> None:
    page = FlatPage()
    _oval(page, 130.3, 544.7, 143.7, 551.3)
    page.text(150, 545, "Single")
    ovals = _readings(page).get("oval", [])
    assert any(_near(b, (130.3, 544.7, 143.7, 551.3)) for b in ovals)
