"""Compiled counting for the calibration bootstrap (optional; needs numba).

:func:`paired_auc_diffs` is what :func:`metacog_metrics.calibration._counts_auc` computes for
two scores at once: for each resample (a row of item indices), the counts over (level, label)
of either score and the AUROC of each from them, in integer arithmetic up to the last
division. NumPy needs a gather of the ``(B, n)`` codes and a ``bincount`` over ``B x 2K``
cells per score (about 60% of a 12,000-item model's bootstrap); here each resample is one pass
over its indices into two small count arrays that stay in cache. The values are the same
doubles as NumPy's.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from metacog_metrics.pairwise._numba import _jit

__all__ = ["paired_auc_diffs"]


@_jit(inline="always")
def _auc_of_counts(counts: NDArray, k: int) -> float:
    """AUROC (ties count 1/2) from ``counts[2 level + label]`` over ``k`` levels."""
    below = 0  # negatives at lower levels
    num2 = 0  # twice the numerator
    pos_total = 0
    for lev in range(k):
        neg = counts[2 * lev]
        pos = counts[2 * lev + 1]
        num2 += pos * (2 * below + neg)
        below += neg
        pos_total += pos
    den = pos_total * below
    if den > 0:
        return num2 / (2.0 * den)
    return np.nan


@_jit("float64[::1](int64[::1], int64[::1], int64[:, ::1])")
def paired_auc_diffs(code_c: NDArray, code_p: NDArray, idx: NDArray) -> NDArray:
    """``AUROC(c) - AUROC(p)`` of each resample ``idx[r]`` of the items.

    Args:
        code_c: ``(n,)`` ``2 level + label`` of each item under the model's own score.
        code_p: ``(n,)`` the same under the population score.
        idx: ``(B, n)`` item indices of each resample.

    Returns:
        ``(B,)`` differences (NaN where a resample lacks a class).
    """
    kc = code_c.max() // 2 + 1
    kp = code_p.max() // 2 + 1
    counts_c = np.empty(2 * kc, dtype=np.int64)
    counts_p = np.empty(2 * kp, dtype=np.int64)
    out = np.empty(idx.shape[0])
    for r in range(idx.shape[0]):
        counts_c[:] = 0
        counts_p[:] = 0
        row = idx[r]
        for i in range(row.size):
            j = row[i]
            counts_c[code_c[j]] += 1
            counts_p[code_p[j]] += 1
        out[r] = _auc_of_counts(counts_c, kc) - _auc_of_counts(counts_p, kp)
    return out
