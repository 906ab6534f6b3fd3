"""Reference samplers the pairwise engine is tested (and, in bench/, timed) against.

The plain cell-by-cell random-table sampler, and the collapse of a 4x4 table of A's by B's
(conf, perf) category to the 3x3 (dconf, dperf) table. Not used by the package itself.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from metacog_metrics.pairwise.tau import _tau_b_tables


def _random_tables(rows: NDArray, cols: NDArray, n: int, rng: np.random.Generator) -> NDArray:
    """Random contingency tables with fixed margins, by sequential hypergeometric sampling.

    The plain cell-by-cell sampler, kept as the reference the block samplers of the per-pair
    nulls (:func:`_margins_s`, :func:`_category_taus`) are tested and timed against.

    Row by row, the row's count is split over the columns still available, one hypergeometric
    draw per cell (the last cell of a row and the last row follow). The tables are distributed as
    under a random permutation of the items (multivariate hypergeometric), and the cost per table
    does not depend on the number of items.

    Args:
        rows: ``(P, R)`` row sums.
        cols: ``(P, C)`` column sums (same totals).
        n: Tables per margin set.
        rng: Generator.

    Returns:
        ``(R, C, P, n)`` int64 cells (each cell a contiguous ``(P, n)`` array, which keeps the
        arithmetic that follows fast).
    """
    n_pairs, n_rows = rows.shape
    n_cols = cols.shape[1]
    out = np.empty((n_rows, n_cols, n_pairs, n), dtype=np.int64)
    remaining = np.repeat(cols.T[:, :, None], n, axis=2).astype(np.int64)  # (C, P, n)
    for r in range(n_rows - 1):
        left = np.repeat(rows[:, r : r + 1], n, axis=1).astype(np.int64)
        pool = remaining.sum(axis=0)
        for k in range(n_cols - 1):
            good = remaining[k]
            pool -= good
            x = rng.hypergeometric(good, pool, left)
            out[r, k] = x
            left -= x
            good -= x
        out[r, n_cols - 1] = left
        remaining[n_cols - 1] -= left
    out[n_rows - 1] = remaining
    return out


def _tau_cells(t: NDArray) -> NDArray:
    """tau-b of (3, 3, ...) cell arrays (cells first)."""
    return _tau_b_tables(np.moveaxis(t, (0, 1), (-2, -1)))


# (ca, pa) x (cb, pb) category (code 2c + p) -> (dconf, dperf) cell of the 3x3 table
_CAT_TO_CELL = [
    ((ka >> 1) - (kb >> 1) + 1, (ka & 1) - (kb & 1) + 1) for ka in range(4) for kb in range(4)
]


def _collapse_4x4(t4: NDArray) -> NDArray:
    """(4, 4, ...) category cells -> (3, 3, ...) (dconf, dperf) cells."""
    out = np.zeros((3, 3, *t4.shape[2:]), dtype=t4.dtype)
    for i, (r, c) in enumerate(_CAT_TO_CELL):
        out[r, c] += t4[i // 4, i % 4]
    return out


def _item_permutation_taus(
    ca: NDArray, pa: NDArray, cb: NDArray, pb: NDArray, null: str, n: int,
    rng: np.random.Generator,
) -> NDArray:  # fmt: skip
    """tau-b of one pair under ``n`` permutations of its items: the item-level per-pair null.

    The path the real-valued per-pair nulls took before they were drawn as level tables, kept
    as the reference they are tested against. ``base_rate``: dperf permuted against dconf;
    ``calibration_preserving``: B's items permuted against A's (each model keeps its own
    (conf, perf) pairs). Ties as in the package: differences rounded by ``value_ties``.
    """
    from metacog_metrics._conventions import value_ties
    from metacog_metrics.pairwise.tau import _tau_b_sorted

    ca, pa, cb, pb = (np.asarray(v, dtype=float) for v in (ca, pa, cb, pb))
    if null == "base_rate":
        dx = value_ties(ca - cb)
        dy = np.rint(pa - pb + 1).astype(np.int64)
        ys = rng.permuted(np.repeat(dy[None, :], n, axis=0), axis=-1)
        return _tau_b_sorted(np.broadcast_to(dx, ys.shape), ys)
    idx = rng.permuted(np.repeat(np.arange(ca.size)[None, :], n, axis=0), axis=-1)
    dx = value_ties(ca[None, :] - cb[idx])
    dy = np.rint(pa[None, :] - pb[idx] + 1).astype(np.int64)
    return _tau_b_sorted(dx, dy)
