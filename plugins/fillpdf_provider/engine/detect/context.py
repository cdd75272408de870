"""A candidate read in the light of its neighbours' scores: the second stage of the scorer.

The first stage scores each candidate from what the page draws around it. Whether it is a
field also depends on the readings it competes with (a likelier box on the same spot, the
cell it sits in, the boxes it holds) and on the rows and sizes it repeats (a row of equal
boxes is kept or dropped together). These numbers give the second stage that view.
"""

from __future__ import annotations

import numpy as np

CONTEXT_FEATURES = (
    "ctx_score",
    "ctx_margin_over_overlap",
    "ctx_best_overlap",
    "ctx_best_touching",
    "ctx_likely_touching",
    "ctx_best_inside",
    "ctx_likely_inside",
    "ctx_best_around",
    "ctx_row_mean",
    "ctx_row_count",
    "ctx_size_mean",
    "ctx_size_count",
    "ctx_best_other_kind",
    "ctx_page_q90",
    "ctx_page_likely_share",
    "ctx_rank",
    "ctx_vetoed",
)
#: Readings on the same spot: what ``scorer.choose`` would not keep together.
OVERLAP_IOU = 0.4
LIKELY = 0.5
#: Rows of candidates compared at once: bounds the memory to CHUNK x candidates per matrix.
CHUNK = 256


def context_features(
    boxes: np.ndarray, scores: np.ndarray, buttons: np.ndarray, vetoed: np.ndarray
) -> np.ndarray:
    """One row of ``CONTEXT_FEATURES`` per candidate of a page.

    ``boxes`` are (x0, y0, x1, y1) in any one orientation, ``scores`` the first stage's,
    ``vetoed`` what the rules would never keep (a heading cell, an office-use strip): with a
    second stage that is evidence to weigh, not a veto.
    """
    n = len(scores)
    out = np.zeros((n, len(CONTEXT_FEATURES)), dtype=np.float32)
    if n == 0:
        return out
    r = np.asarray(boxes, dtype=np.float64)
    p = np.asarray(scores, dtype=np.float64)
    b = np.asarray(buttons, dtype=bool)
    x0, y0, x1, y1 = r[:, 0], r[:, 1], r[:, 2], r[:, 3]
    w = np.maximum(x1 - x0, 1e-6)
    h = np.maximum(y1 - y0, 1e-6)
    area = w * h
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    q90 = float(np.quantile(p, 0.9))
    likely_share = float((p > LIKELY).mean())
    # rank 0 for the likeliest; ties broken by position in the pool, as ``choose`` does
    order = np.lexsort((np.arange(n), -p))
    rank = np.empty(n)
    rank[order] = np.arange(n) / n
    for start in range(0, n, CHUNK):
        rows = slice(start, min(start + CHUNK, n))
        i = np.arange(start, rows.stop)
        ix = np.clip(
            np.minimum(x1[rows, None], x1[None]) - np.maximum(x0[rows, None], x0[None]), 0, None
        )
        iy = np.clip(
            np.minimum(y1[rows, None], y1[None]) - np.maximum(y0[rows, None], y0[None]), 0, None
        )
        inter = ix * iy
        union = area[rows, None] + area[None] - inter
        self_ = np.zeros_like(inter, dtype=bool)
        self_[np.arange(len(i)), i] = True
        overlap = (inter > OVERLAP_IOU * np.maximum(union, 1e-9)) & ~self_
        touching = (inter > 0.3 * np.minimum(area[rows, None], area[None])) & ~self_
        # holds[a, j]: j's centre lies in a; around[a, j]: a's centre lies in j
        holds = (
            (x0[rows, None] <= cx[None])
            & (cx[None] <= x1[rows, None])
            & (y0[rows, None] <= cy[None])
            & (cy[None] <= y1[rows, None])
            & ~self_
        )
        around = (
            (x0[None] <= cx[rows, None])
            & (cx[rows, None] <= x1[None])
            & (y0[None] <= cy[rows, None])
            & (cy[rows, None] <= y1[None])
            & ~self_
        )
        hr = h[rows, None]
        same_row = (
            (np.abs(cy[rows, None] - cy[None]) < 0.5 * np.minimum(hr, h[None]))
            & (np.abs(hr - h[None]) < 0.25 * np.maximum(hr, h[None]))
            & ~self_
        )
        wr = w[rows, None]
        same_size = (
            (np.abs(wr - w[None]) < 0.1 * np.maximum(wr, w[None]) + 1)
            & (np.abs(hr - h[None]) < 0.1 * np.maximum(hr, h[None]) + 1)
            & ~self_
        )
        other_kind = touching & (b[rows, None] != b[None])
        pp = np.broadcast_to(p[None], inter.shape)
        likely = pp > LIKELY
        best_overlap = np.where(overlap, pp, 0).max(axis=1)
        row_n = same_row.sum(axis=1)
        size_n = same_size.sum(axis=1)
        out[rows] = np.column_stack(
            [
                p[rows],
                p[rows] - best_overlap,
                best_overlap,
                np.where(touching, pp, 0).max(axis=1),
                (touching & likely).sum(axis=1),
                np.where(holds, pp, 0).max(axis=1),
                (holds & likely).sum(axis=1),
                np.where(around, pp, 0).max(axis=1),
                np.where(same_row, pp, 0).sum(axis=1) / np.maximum(row_n, 1),
                row_n,
                np.where(same_size, pp, 0).sum(axis=1) / np.maximum(size_n, 1),
                size_n,
                np.where(other_kind, pp, 0).max(axis=1),
                np.full(len(i), q90),
                np.full(len(i), likely_share),
                rank[rows],
                np.asarray(vetoed, dtype=bool)[rows],
            ]
        )
    return out
