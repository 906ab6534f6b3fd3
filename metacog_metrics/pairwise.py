"""Pairwise calibration: does model A's confidence *relative to B* track its performance relative
to B, item by item, beyond what base rates and each model's own calibration explain?

For every model pair (A, B) the statistic is Kendall's tau-b between ``dconf = conf_A - conf_B``
and ``dperf = perf_A - perf_B`` over the items. Two permutation nulls answer different questions:

* ``base_rate`` (base-rate-matched): the association is broken while every base rate is kept.
  Per pair, ``dconf`` is permuted against ``dperf``; for the mean over pairs, each model's
  confidence and correctness vectors are each shuffled on their own.
* ``calibration_preserving``: each model keeps its own (confidence, correctness) pairs and only
  the matching of items across models is shuffled; the mean is drawn by shuffling each model's
  item order. With a shared difficulty axis this null sits far above zero (shared difficulty
  cancels in the observed differences but not after scrambling), so compare against it, not 0.

Per-pair p-values use ``(1 + #{null >= observed}) / (B + 1)`` and BH-FDR across pairs. The mean
over all pairs needs *joint* draws (all pairs recomputed from the same shuffled matrices), since
pairs sharing a model are dependent: independent per-pair draws understate the sd of the
base-rate mean null about three-fold (measured: 0.0021 against 0.0063 on 20 models x 1,000
items).

Binary confidence has a fast engine. A pair's 3x3 table of (dconf, dperf) follows from four
co-occurrence counts, computed for all pairs at once on bits packed 64 to a word (AND +
popcount), so a joint draw costs a few vectorised passes; each model's shuffled vector is drawn
as a uniformly random arrangement of its own counts. Per-pair draws are random contingency tables
with the fixed margins (3x3 for the base-rate null, the 4x4 table of A's by B's (conf, perf)
category for the calibration-preserving null, collapsed to 3x3) drawn exactly by a block
decomposition into hypergeometric variates, those whose law repeats across draws by inversion of
tabulated CDFs, so their cost does not depend on the number of items. With numba installed (the
``fast`` extra) the same decomposition runs compiled (:mod:`metacog_metrics._pairwise_numba`),
about three times faster; ``METACOG_NO_NUMBA=1`` or ``engine="numpy"`` keeps NumPy. Continuous
confidence (logprob, sampled, numeric) takes an exact but slower path: permutations of the
items, with tau-b from a sort with ties (or from bincounts when the confidences lie on a coarse
grid, k / Q, with many items per level). All permutation work is split into fixed chunks with
their own child seeds and run on a thread pool: results do not depend on the number of threads.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from metacog_metrics._result import Result

__all__ = [
    "DEFAULT_DELTAS",
    "ENGINES",
    "NULLS",
    "PAIR_TYPES",
    "DeltaCurve",
    "MeanTauNull",
    "PairTestResult",
    "PairTypeSummary",
    "PairwiseResult",
    "joint_null_draws",
    "pair_permutation_test",
    "pairwise_calibration",
    "pairwise_taus",
    "tau_b_from_table",
]

Null = Literal["base_rate", "calibration_preserving"]
Engine = Literal["auto", "numpy", "numba"]
Alternative = Literal["two-sided", "greater", "less"]
SeedLike = int | np.random.Generator | np.random.SeedSequence | None

#: The two permutation nulls.
NULLS: tuple[str, ...] = ("base_rate", "calibration_preserving")
#: Accuracy-gap grid of the delta curve.
DEFAULT_DELTAS: tuple[float, ...] = (
    0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0,
)  # fmt: skip
#: Engines of the per-pair draws for binary confidence (compiled with numba, or NumPy).
ENGINES: tuple[str, ...] = ("auto", "numpy", "numba")
#: Pair types by the reasoning flag of the two models.
PAIR_TYPES: tuple[str, ...] = ("R-R", "R-NR", "NR-NR")

_TABLES_PER_CHUNK = 1 << 19  # random tables per chunk (bounded memory, fixed for determinism)
_ELEMENTS_PER_CHUNK = 1 << 22  # items x rows per chunk on the exact paths
_MAX_GRID = 1000


# --------------------------------------------------------------------------------------------
# Inputs, seeds, small helpers
# --------------------------------------------------------------------------------------------


def _check(conf: ArrayLike, perf: ArrayLike) -> tuple[NDArray, NDArray, bool]:
    """Validate items x models arrays (optionally with leading batch axes)."""
    c = np.asarray(conf, dtype=float)
    p = np.asarray(perf, dtype=float)
    if c.shape != p.shape:
        raise ValueError(f"conf {c.shape} and perf {p.shape} must have the same shape")
    if c.ndim < 2 or c.shape[-1] < 2 or c.shape[-2] < 2:
        raise ValueError(f"need (..., items >= 2, models >= 2) arrays, got shape {c.shape}")
    if np.isnan(c).any() or np.isnan(p).any():
        raise ValueError("conf and perf must be complete (no NaN); build complete-case matrices")
    if not np.isfinite(c).all():
        raise ValueError("conf has infinite values")
    if not np.isin(p, (0.0, 1.0)).all():
        raise ValueError("perf must hold only 0 and 1")
    binary = bool(np.isin(c, (0.0, 1.0)).all())
    return c, p, binary


def _seed_sequence(rng: SeedLike) -> np.random.SeedSequence:
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    return np.random.SeedSequence(rng)


def _pairs(n_models: int, pairs: Any = None) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    if pairs is None:
        return np.triu_indices(n_models, k=1)
    ia, ib = (np.asarray(v, dtype=np.intp) for v in pairs)
    if ia.shape != ib.shape or ia.ndim != 1:
        raise ValueError("pairs must be two equal-length 1-D index arrays (a, b)")
    if ia.size and (min(ia.min(), ib.min()) < 0 or max(ia.max(), ib.max()) >= n_models):
        raise ValueError("pair index out of range")
    if np.any(ia == ib):
        raise ValueError("a pair must join two different models")
    return ia, ib


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    # disable=None: a bar on a terminal, nothing in a log file or CI output (carriage returns).
    return tqdm(
        total=total, desc=desc, unit=" pair-draws", unit_scale=True, leave=False, disable=None
    )


def _p_values(ge: NDArray, le: NDArray, n: NDArray, alternative: str) -> tuple[NDArray, ...]:
    with np.errstate(invalid="ignore", divide="ignore"):
        p_greater = np.where(n > 0, (ge + 1.0) / (n + 1.0), np.nan)
        p_less = np.where(n > 0, (le + 1.0) / (n + 1.0), np.nan)
    two = np.minimum(1.0, 2.0 * np.minimum(p_greater, p_less))
    chosen = {"two-sided": two, "greater": p_greater, "less": p_less}[alternative]
    return chosen, p_greater, p_less


def _check_alternative(alternative: str) -> None:
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(
            f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}"
        )


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")


def _check_null(null: str) -> None:
    if null not in NULLS:
        raise ValueError(f"null must be one of {NULLS}, got {null!r}")


# --------------------------------------------------------------------------------------------
# Kendall tau-b from contingency tables
# --------------------------------------------------------------------------------------------


def tau_b_from_table(table: ArrayLike) -> NDArray[np.float64]:
    """Kendall's tau-b of ordered contingency tables (rows and columns in increasing order).

    ``tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2))`` with C and D the concordant and discordant
    pairs, ``n0 = N(N-1)/2`` and ``n1``, ``n2`` the pairs tied on the row and column variable.
    Equal to ``scipy.stats.kendalltau`` on the expanded data.

    Args:
        table: ``(..., R, C)`` counts.

    Returns:
        ``(...)`` tau-b values; NaN where a margin is constant.
    """
    t = np.asarray(table, dtype=float)
    if t.ndim < 2:
        raise ValueError("table must have at least 2 dimensions (rows, columns)")
    below = np.cumsum(t, axis=-2) - t  # rows strictly above (smaller row value)
    left = np.cumsum(below, axis=-1) - below  # ... and strictly smaller column
    total_below = below.sum(axis=-1, keepdims=True)
    right = total_below - left - below  # strictly larger column
    s = (t * (left - right)).sum(axis=(-2, -1))
    return _tau_from_s(s, t.sum(axis=-1), t.sum(axis=-2))


def _tau_from_s(s: NDArray, rows: NDArray, cols: NDArray) -> NDArray:
    n = rows.sum(axis=-1)
    n0 = n * (n - 1) / 2.0
    n1 = (rows * (rows - 1) / 2.0).sum(axis=-1)
    n2 = (cols * (cols - 1) / 2.0).sum(axis=-1)
    den = (n0 - n1) * (n0 - n2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, s / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)


def _tau_b_3x3(t: NDArray) -> NDArray:
    """tau-b of (..., 3, 3) tables, written out (the hot loop of the per-pair nulls)."""
    t = t.astype(float, copy=False)
    n00, n01, n02 = t[..., 0, 0], t[..., 0, 1], t[..., 0, 2]
    n10, n11, n12 = t[..., 1, 0], t[..., 1, 1], t[..., 1, 2]
    n20, n21, n22 = t[..., 2, 0], t[..., 2, 1], t[..., 2, 2]
    c = n00 * (n11 + n12 + n21 + n22) + n01 * (n12 + n22) + n10 * (n21 + n22) + n11 * n22
    d = n02 * (n10 + n11 + n20 + n21) + n01 * (n10 + n20) + n12 * (n20 + n21) + n11 * n20
    return _tau_from_s(c - d, t.sum(axis=-1), t.sum(axis=-2))


# --------------------------------------------------------------------------------------------
# Observed tables and taus
# --------------------------------------------------------------------------------------------


def _binary_tables(c: NDArray, p: NDArray, ia: NDArray, ib: NDArray) -> NDArray[np.int64]:
    """(dconf, dperf) 3x3 tables of pairs (ia, ib) from (..., N, M) 0/1 arrays."""
    cb = np.swapaxes(c, -1, -2) > 0.5
    pb = np.swapaxes(p, -1, -2) > 0.5
    return _tables_from_bits(cb, pb, ia, ib)


def _tables_from_bits(
    cb: NDArray[np.bool_], pb: NDArray[np.bool_], ia: NDArray, ib: NDArray
) -> NDArray[np.int64]:
    """The tables from (..., M, N) boolean models x items arrays.

    Four co-occurrence counts give every table: ``e11 . e00`` (A in (1,1), B in (0,0): cell
    (+1,+1); the transposed count is cell (-1,-1)), ``e10 . e01`` (cells (+1,-1) and (-1,+1)),
    ``c . c`` and ``p . p`` (the margins). They are computed on bits packed 64 to a word with
    ``np.bitwise_count`` (AND + popcount), about 3x faster than float32 BLAS products and
    independent of BLAS threading, which is erratic on a busy 2-core machine.
    """
    n = cb.shape[-1]
    if not hasattr(np, "bitwise_count"):  # numpy < 2.0: float32 BLAS products (exact < 2^24)
        return _tables_blas(cb.astype(np.float32), pb.astype(np.float32), ia, ib)
    c = _pack(cb)
    p = _pack(pb)
    valid = _pack(np.ones(n, dtype=bool))
    e11 = c & p
    a = _popcount_gram(e11, ~(c | p) & valid)
    b = _popcount_gram(c & ~p, ~c & p)
    cc = _popcount_gram(c, c, symmetric=True)
    pp = _popcount_gram(p, p, symmetric=True)
    kc = np.bitwise_count(c).sum(axis=-1, dtype=np.int64)
    kp = np.bitwise_count(p).sum(axis=-1, dtype=np.int64)
    return _fill_tables(n, a, b, cc, pp, kc, kp, ia, ib)


_WORDS_PER_CHUNK = 1 << 21


def _pack(bits: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """Pack the last axis into uint64 words (zero padded)."""
    packed = np.packbits(bits, axis=-1)
    pad = (-packed.shape[-1]) % 8
    if pad:
        packed = np.concatenate(
            [packed, np.zeros((*packed.shape[:-1], pad), dtype=np.uint8)], axis=-1
        )
    return np.ascontiguousarray(packed).view(np.uint64)


def _popcount_gram(
    x: NDArray[np.uint64], y: NDArray[np.uint64], *, symmetric: bool = False
) -> NDArray[np.int64]:
    """G[..., a, b] = number of bits set in both x[..., a, :] and y[..., b, :].

    With ``symmetric`` (``y is x``) only the blocks on and above the diagonal are counted.
    """
    *lead, m, w = x.shape
    k = y.shape[-2]
    out = np.empty((*lead, m, k), dtype=np.int64)
    per_row = max(1, int(np.prod(lead, dtype=np.int64)) * k * w)
    rows = max(1, _WORDS_PER_CHUNK // per_row)
    for s in range(0, m, rows):
        e = min(m, s + rows)
        first = s if symmetric else 0
        both = x[..., s:e, None, :] & y[..., None, first:, :]
        out[..., s:e, first:] = np.bitwise_count(both).sum(axis=-1, dtype=np.int64)
        if symmetric:
            out[..., first:, s:e] = np.swapaxes(out[..., s:e, first:], -1, -2)
    return out


def _tables_blas(cm: NDArray, pm: NDArray, ia: NDArray, ib: NDArray) -> NDArray[np.int64]:
    """Fallback of :func:`_tables_from_bits` with float32 products."""
    e11 = cm * pm

    def gram(x: NDArray, y: NDArray) -> NDArray[np.int64]:
        return np.rint(x @ np.swapaxes(y, -1, -2)).astype(np.int64)

    return _fill_tables(
        cm.shape[-1],
        gram(e11, 1 - cm - pm + e11),
        gram(cm - e11, pm - e11),
        gram(cm, cm),
        gram(pm, pm),
        np.rint(cm.sum(axis=-1)).astype(np.int64),
        np.rint(pm.sum(axis=-1)).astype(np.int64),
        ia,
        ib,
    )


def _fill_tables(
    n: int,
    a: NDArray,
    b: NDArray,
    cc: NDArray,
    pp: NDArray,
    kc: NDArray,
    kp: NDArray,
    ia: NDArray,
    ib: NDArray,
) -> NDArray[np.int64]:
    t = np.empty((*a.shape[:-2], ia.size, 3, 3), dtype=np.int64)
    t[..., 2, 2] = a[..., ia, ib]
    t[..., 0, 0] = a[..., ib, ia]
    t[..., 2, 0] = b[..., ia, ib]
    t[..., 0, 2] = b[..., ib, ia]
    r2 = kc[..., ia] - cc[..., ia, ib]  # dconf = +1
    r0 = kc[..., ib] - cc[..., ia, ib]  # dconf = -1
    c2 = kp[..., ia] - pp[..., ia, ib]
    c0 = kp[..., ib] - pp[..., ia, ib]
    t[..., 2, 1] = r2 - t[..., 2, 2] - t[..., 2, 0]
    t[..., 0, 1] = r0 - t[..., 0, 0] - t[..., 0, 2]
    t[..., 1, 2] = c2 - t[..., 2, 2] - t[..., 0, 2]
    t[..., 1, 0] = c0 - t[..., 0, 0] - t[..., 2, 0]
    t[..., 1, 1] = n - r2 - r0 - t[..., 1, 2] - t[..., 1, 0]
    return t


def _grid(conf: NDArray) -> tuple[NDArray[np.int64], int] | None:
    """Integer codes k with conf = k / Q for the smallest Q <= 1000, or None (no grid)."""
    levels = np.unique(conf)
    if levels.size > 4 * _MAX_GRID:
        return None
    for q in range(1, _MAX_GRID + 1):
        scaled = levels * q
        if np.all(np.abs(scaled - np.rint(scaled)) < 1e-9 * max(1.0, q)):
            return np.rint(conf * q).astype(np.int64), q
    return None


def _tau_b_codes(dx: NDArray, dy: NDArray, n_levels: int) -> NDArray:
    """tau-b of (..., N) integer codes dx in [0, L) and dy in {0, 1, 2} via (L x 3) bincounts."""
    lead = dx.shape[:-1]
    rows = int(np.prod(lead)) if lead else 1
    flat = (np.arange(rows)[:, None] * (n_levels * 3) + (dx.reshape(rows, -1) * 3)
            + dy.reshape(rows, -1)).ravel()  # fmt: skip
    tables = np.bincount(flat, minlength=rows * n_levels * 3).reshape(rows, n_levels, 3)
    return tau_b_from_table(tables).reshape(lead)


def _gather(a: NDArray, idx: NDArray) -> NDArray:
    """``np.take_along_axis(a, idx, -1)`` for idx of a's shape, via one flat ``np.take``."""
    n = a.shape[-1]
    rows = np.arange(a.size // n, dtype=np.int64).reshape(*a.shape[:-1], 1) * n
    return np.take(a.ravel(), idx + rows)


def _tau_b_sorted(x: NDArray, y: NDArray, *, presorted: bool = False) -> NDArray:
    """Exact tau-b of (..., N) real x against y in {0, 1, 2}, ties in x handled, O(N log N).

    After sorting by x, ``S = sum_j [#(earlier blocks, y < y_j) - #(earlier blocks, y > y_j)]``
    with the counts taken at the start of j's block of tied x (so tied pairs count 0).
    """
    x = np.ascontiguousarray(x)
    y = np.ascontiguousarray(y)
    if not presorted:
        order = np.argsort(x, axis=-1, kind="stable")
        x = _gather(x, order)
        y = _gather(y, order)
    n = x.shape[-1]
    idx = np.arange(n, dtype=np.int64)
    new = np.ones(x.shape, dtype=bool)
    new[..., 1:] = x[..., 1:] != x[..., :-1]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    lower = np.zeros(x.shape, dtype=np.int64)
    upper = np.zeros(x.shape, dtype=np.int64)
    counts = []
    for level in range(3):
        mask = y == level
        counts.append(mask.sum(axis=-1))
        before = np.cumsum(mask, axis=-1, dtype=np.int64) - mask  # strictly earlier positions
        at_start = _gather(before, start)  # ... in strictly earlier blocks (smaller x)
        if level == 0:
            lower += at_start * (y >= 1)
        elif level == 1:
            lower += at_start * (y == 2)
            upper += at_start * (y == 0)
        else:
            upper += at_start * (y <= 1)
    s = (lower - upper).sum(axis=-1).astype(float)
    n0 = n * (n - 1) / 2.0
    n1 = (idx - start).sum(axis=-1).astype(float)  # pairs tied in x
    c = np.stack(counts, axis=-1).astype(float)
    n2 = (c * (c - 1) / 2.0).sum(axis=-1)
    den = (n0 - n1) * (n0 - n2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, s / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)


def _dconf(c: NDArray, ia: NDArray, ib: NDArray) -> NDArray:
    """Confidence differences, rounded to 12 decimals so that decimal ties stay ties."""
    return np.round(c[..., ia] - c[..., ib], 12)


def _continuous_taus(
    c: NDArray, p: NDArray, ia: NDArray, ib: NDArray, grid: tuple[NDArray, int] | None
) -> NDArray:
    """Exact tau-b of every pair for real-valued confidence; returns (..., P)."""
    dy = np.rint(np.swapaxes(p[..., ia] - p[..., ib], -1, -2) + 1).astype(np.int64)
    if grid is not None and 3 * (2 * grid[1] + 1) <= c.shape[-2]:  # tables: many items a level
        codes, q = grid
        dx = np.swapaxes(codes[..., ia] - codes[..., ib], -1, -2) + q
        return _tau_b_codes(dx, dy, 2 * q + 1)
    x = np.swapaxes(_dconf(c, ia, ib), -1, -2)
    return _tau_b_sorted(x, dy)


def _taus_chunked(c: NDArray, p: NDArray, ia: NDArray, ib: NDArray, grid: Any) -> NDArray:
    """_continuous_taus over pair chunks to bound memory; (..., N, M) -> (..., P)."""
    n = c.shape[-2]
    lead = int(np.prod(c.shape[:-2])) if c.ndim > 2 else 1
    step = max(1, _ELEMENTS_PER_CHUNK // max(1, n * lead))
    parts = [
        _continuous_taus(c, p, ia[s : s + step], ib[s : s + step], grid)
        for s in range(0, ia.size, step)
    ]
    return np.concatenate(parts, axis=-1) if parts else np.zeros((*c.shape[:-2], 0))


def pairwise_taus(conf: ArrayLike, perf: ArrayLike, *, pairs: Any = None) -> NDArray[np.float64]:
    """Kendall tau-b of ``dconf`` vs ``dperf`` for every model pair.

    Args:
        conf: ``(..., items, models)`` confidence (leading axes are a batch).
        perf: ``(..., items, models)`` 0/1 correctness.
        pairs: ``(a, b)`` model index arrays (default: all ``a < b`` in ``np.triu_indices``
            order).

    Returns:
        ``(..., pairs)`` tau-b; NaN for a pair whose ``dconf`` or ``dperf`` is constant.

    Raises:
        ValueError: On NaN, non-binary ``perf``, mismatched shapes or bad pair indices.
    """
    c, p, binary = _check(conf, perf)
    ia, ib = _pairs(c.shape[-1], pairs)
    if binary:
        return _tau_b_3x3(_binary_tables(c, p, ia, ib))
    return _taus_chunked(c, p, ia, ib, _grid(c))


# --------------------------------------------------------------------------------------------
# Random draws
# --------------------------------------------------------------------------------------------


def _random_tables(rows: NDArray, cols: NDArray, n: int, rng: np.random.Generator) -> NDArray:
    """Random contingency tables with fixed margins, by sequential hypergeometric sampling.

    The plain cell-by-cell sampler, kept as the reference the block samplers of the per-pair
    nulls (:func:`_base_rate_s`, :func:`_calibration_taus`) are tested and timed against.

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


def _s_3x3(t: NDArray) -> NDArray:
    """Kendall's S = C - D of (3, 3, ...) cell arrays (integer arithmetic, exact)."""
    (n00, n01, n02), (n10, n11, n12), (n20, n21, n22) = t
    c = n00 * (n11 + n12 + n21 + n22) + n01 * (n12 + n22) + n10 * (n21 + n22) + n11 * n22
    d = n02 * (n10 + n11 + n20 + n21) + n01 * (n10 + n20) + n12 * (n20 + n21) + n11 * n20
    return c - d


def _tau_cells(t: NDArray) -> NDArray:
    """tau-b of (3, 3, ...) cell arrays."""
    r0, r1, r2 = t[0].sum(axis=0), t[1].sum(axis=0), t[2].sum(axis=0)
    c0, c1, c2 = t[:, 0].sum(axis=0), t[:, 1].sum(axis=0), t[:, 2].sum(axis=0)
    n = r0 + r1 + r2
    n0 = n * (n - 1)
    ties_x = r0 * (r0 - 1) + r1 * (r1 - 1) + r2 * (r2 - 1)
    ties_y = c0 * (c0 - 1) + c1 * (c1 - 1) + c2 * (c2 - 1)
    den = (n0 - ties_x).astype(float) * (n0 - ties_y).astype(float) / 4.0  # halves, squared
    s = _s_3x3(t).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, s / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)


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


# --------------------------------------------------------------------------------------------
# Per-pair null draws: block decomposition with exact inversion of the shared laws
# --------------------------------------------------------------------------------------------
#
# A per-pair null table is built in three levels of hypergeometric variates. Level 1 has one
# law per pair; level 2 depends on the pair and the level-1 value only, so its laws repeat
# across the draws; level 3 (the last free cell of each block) depends on several earlier values
# and is drawn one by one (NumPy's sampler, ~100 ns a variate). Laws that repeat are tabulated
# once (their exact CDF on a window that leaves out less than 2**-60 of the mass, checked) and
# drawn by inversion with a guide table, some 20-40 ns a draw with the tables; they are
# tabulated only where a table serves enough draws (few items: narrow laws). Every step draws
# from the exact conditional law, so the tables are distributed as under random permutations
# of the items (tests check this against enumeration, shuffles, SciPy and the old sampler).
# The level-3 variates set the floor: 1 per base-rate draw, 4 per calibration-preserving draw.
# metacog_metrics._pairwise_numba compiles the same decomposition (used when numba imports):
# the level-3 variates by HRUA with tabulated log-factorials, some 35-40 ns each.

_WINDOW_SD = 9.0  # tabulated window: mean +- (9 sd + 12), widened until the tails are < 2**-60
_WINDOW_PAD = 12.0
_TAIL = 2.0**-60
_DRAWS_PER_STEP = 1 << 16  # draws per vectorised step of a per-pair task (cache sized)
_TABULATE_RATIO = 4  # tabulate a level-2 law when it has >= 1/4 draw per table entry


def _hg_window(good: NDArray, bad: NDArray, sample: NDArray, scale: NDArray | float = 1.0
               ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:  # fmt: skip
    """Window ``[lo, hi]`` of Hypergeometric(good, bad, sample) around its mean."""
    pop = good + bad
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(pop > 0, sample * good / np.maximum(pop, 1), 0.0)
        var = np.where(pop > 1, mean * (bad / np.maximum(pop, 1)) * (pop - sample)
                       / np.maximum(pop - 1, 1), 0.0)  # fmt: skip
    half = np.ceil((_WINDOW_SD * np.sqrt(np.maximum(var, 0.0)) + _WINDOW_PAD) * scale)
    lo = np.maximum(np.maximum(sample - bad, 0), np.floor(mean - half).astype(np.int64))
    hi = np.minimum(np.minimum(sample, good), np.ceil(mean + half).astype(np.int64))
    return lo, hi


def _hg_tables(good: ArrayLike, bad: ArrayLike, sample: ArrayLike
               ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:  # fmt: skip
    """Exact CDFs of Hypergeometric(good, bad, sample), one law per row.

    The pmf on the window comes from the ratio recurrence
    ``f(k+1) / f(k) = (good - k)(sample - k) / ((k + 1)(bad - sample + k + 1))`` (a cumulative
    sum of logs: relative error ~1e-12, better than differences of log-factorials), normalised
    on the window. The window is widened until a log-concavity bound puts each tail below 2**-60,
    far below the 2**-53 resolution of the uniforms that invert it.

    Returns:
        ``lo`` (G,) first value of each window and ``cdf`` (G, W): the CDF at ``lo + j``,
        exactly 1.0 from the window's last value on.
    """
    good, bad, sample = (np.asarray(v, dtype=np.int64) for v in (good, bad, sample))
    s_lo = np.maximum(sample - bad, 0)
    s_hi = np.minimum(sample, good)
    scale = np.ones(good.shape)
    while True:
        lo, hi = _hg_window(good, bad, sample, scale)
        width = int((hi - lo).max()) + 1 if lo.size else 1
        k = lo[:, None] + np.arange(width - 1)  # ratios f(k+1)/f(k)
        inside = k < hi[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            kk = np.where(inside, k, lo[:, None])  # keep logs finite outside
            lr = np.log((good[:, None] - kk) * (sample[:, None] - kk).astype(float)) - np.log(
                (kk + 1) * (bad[:, None] - sample[:, None] + kk + 1).astype(float)
            )
        lr = np.where(inside, lr, -np.inf)  # fmt: skip
        logf = np.zeros((lo.size, width))
        np.cumsum(lr, axis=1, out=logf[:, 1:])
        logf -= logf.max(axis=1, keepdims=True)
        logf[logf < -700.0] = -np.inf  # no subnormals (slow); such masses are far below 2**-60
        pmf = np.exp(logf)
        cdf = np.cumsum(pmf, axis=1)
        total = cdf[:, -1:].copy()
        cdf /= total
        # Tails beyond the window, bounded by log-concavity: f(end) r / (1 - r).
        rows = np.arange(lo.size)
        f_hi = pmf[rows, hi - lo] / total[:, 0]
        f_lo = pmf[:, 0] / total[:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            r_hi = ((good - hi) * (sample - hi).astype(float)
                    / ((hi + 1) * (bad - sample + hi + 1).astype(float)))  # fmt: skip
            r_lo = (lo * (bad - sample + lo).astype(float)
                    / ((good - lo + 1) * (sample - lo + 1).astype(float)))  # fmt: skip
            up = np.where(hi < s_hi, np.where(r_hi < 1, f_hi * r_hi / (1 - r_hi), np.inf), 0.0)
            down = np.where(lo > s_lo, np.where(r_lo < 1, f_lo * r_lo / (1 - r_lo), np.inf), 0.0)
        wide = (up > _TAIL) | (down > _TAIL)
        if not wide.any():
            return lo, cdf
        scale = np.where(wide, scale * 2.0, scale)


def _inverse_cdf_draws(lo: NDArray, cdf: NDArray, group: NDArray, rng: np.random.Generator
                       ) -> NDArray[np.int64]:  # fmt: skip
    """One exact draw per entry of ``group`` from that row of tabulated CDFs.

    Inversion: the smallest k with ``cdf[k] > u``, started from a guide table with L bins per
    row (L a power of two, so ``cdf * L`` and ``floor(u * L)`` are exact): the number of k with
    ``cdf[k] <= j / L`` is a lower bound for every u in bin j, and a short walk finishes.
    """
    n_rows, width = cdf.shape
    size = 1 << max(0, width.bit_length() - 1)  # largest power of two <= width
    bucket = np.ceil(cdf * size).astype(np.int64)  # cdf[k] <= j / L  <=>  bucket[k] <= j
    bucket += (np.arange(n_rows) * (size + 1))[:, None]
    below = np.cumsum(np.bincount(bucket.ravel(), minlength=n_rows * (size + 1)))
    u = rng.random(group.size)
    k = below[group * (size + 1) + (u * size).astype(np.int64)] - group * width
    flat = cdf.ravel()
    base = group * width
    todo = np.flatnonzero(flat[base + k] <= u)
    while todo.size:
        k[todo] += 1
        todo = todo[flat[base[todo] + k[todo]] <= u[todo]]
    return lo[group] + k


def _group_by(pair: NDArray, value: NDArray, lo: NDArray, width: int, n_pairs: int
              ) -> tuple[NDArray, NDArray, NDArray]:  # fmt: skip
    """Draws sharing (pair, level-1 value): group per draw, and each group's pair and value."""
    key = pair * width + (value - lo[pair])
    used = np.bincount(key, minlength=n_pairs * width) > 0
    index = np.cumsum(used) - 1
    occupied = np.flatnonzero(used)
    g_pair = occupied // width
    return index[key], g_pair, lo[g_pair] + occupied % width


def _conditional_draws(
    good: NDArray, bad: NDArray, sample: NDArray, group: NDArray, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Hypergeometric draws with the parameters of their group (level 2).

    A group with many draws next to its table's width is tabulated and inverted; the draws of
    the other groups (the tails of the level-1 law) go to NumPy's sampler one by one.
    """
    lo, hi = _hg_window(good, bad, sample)
    count = np.bincount(group, minlength=good.size)
    table = count * _TABULATE_RATIO >= hi - lo + 1
    out = np.empty(group.size, dtype=np.int64)
    by_table = table[group]
    if table.any():
        index = np.cumsum(table) - 1
        lo_t, cdf = _hg_tables(good[table], bad[table], sample[table])
        out[by_table] = _inverse_cdf_draws(lo_t, cdf, index[group[by_table]], rng)
    rest = group[~by_table]
    if rest.size:
        out[~by_table] = rng.hypergeometric(good[rest], bad[rest], sample[rest])
    return out


def _base_rate_s(rows: NDArray, cols: NDArray, n: int, rng: np.random.Generator) -> NDArray:
    """Kendall's S of ``n`` random 3x3 tables per pair with the given margins: ``(P, n)``.

    Block decomposition around cell (0, 0): ``n00`` (level 1); given it, the rest of row 0
    (``n01``) and of column 0 (``n10``) are independent (level 2); the remaining 2x2 block is a
    random table with the margins they leave, one more variate ``n22`` (level 3). With the
    margins fixed, ``S`` is a polynomial in the corners, evaluated in exact integers.
    """
    n_pairs = rows.shape[0]
    r0, r1, r2 = (np.asarray(v, dtype=np.int64) for v in rows.T)
    c0, c1, c2 = (np.asarray(v, dtype=np.int64) for v in cols.T)
    total = r0 + r1 + r2
    pair = np.repeat(np.arange(n_pairs), n)
    lo, cdf = _hg_tables(c0, total - c0, r0)
    n00 = _inverse_cdf_draws(lo, cdf, pair, rng)
    group, g_pair, g_n00 = _group_by(pair, n00, lo, cdf.shape[1], n_pairs)
    n01 = _conditional_draws(c1[g_pair], c2[g_pair], r0[g_pair] - g_n00, group, rng)
    n10 = _conditional_draws(r1[g_pair], r2[g_pair], c0[g_pair] - g_n00, group, rng)
    r0, r1, r2, c0, c1, c2 = (v[pair] for v in (r0, r1, r2, c0, c1, c2))
    n02 = r0 - n00 - n01
    n20 = c0 - n00 - n10
    n22 = rng.hypergeometric(c2 - n02, c1 - n01, r2 - n20)
    s = (c2 - c0) * (r0 - r2) + n00 * (r0 + r1 - c2 + n22) + n02 * (c0 - r0 - r1 - n20)
    s += n20 * (c2 - r1 - r2) + n22 * (r1 + r2 - c0)
    return s.reshape(n_pairs, n)


def _calibration_taus(a_cats: NDArray, b_cats: NDArray, n: int, rng: np.random.Generator
                      ) -> NDArray[np.float64]:  # fmt: skip
    """tau-b of ``n`` random tables per pair under the calibration-preserving null: ``(P, n)``.

    B's items are matched to A's by a random permutation; ``a_cats``/``b_cats`` are (P, 4)
    counts of the categories ``2 conf + perf``. Level 1: ``x11``, the items both models say
    yes to, fixes the four confidence blocks (yes/yes, yes/no, no/yes, no/no). Level 2 (given
    ``x11`` only): how many of A's correct items and of B's correct items fall in each block.
    Level 3: in each block, how many items both got right. The (dconf, dperf) table follows:
    the disagreeing blocks are the rows dconf = +1 and -1, the two agreeing blocks row 0.
    """
    n_pairs = a_cats.shape[0]
    a00, a01, a10, a11 = (np.asarray(v, dtype=np.int64) for v in a_cats.T)
    b00, b01, b10, b11 = (np.asarray(v, dtype=np.int64) for v in b_cats.T)
    total = a00 + a01 + a10 + a11
    ka, kb = a10 + a11, b10 + b11
    pair = np.repeat(np.arange(n_pairs), n)
    lo, cdf = _hg_tables(kb, total - kb, ka)
    x11 = _inverse_cdf_draws(lo, cdf, pair, rng)
    group, gp, gx = _group_by(pair, x11, lo, cdf.shape[1], n_pairs)
    al11 = _conditional_draws(a11[gp], a10[gp], gx, group, rng)  # A right, among A yes
    al01 = _conditional_draws(a01[gp], a00[gp], kb[gp] - gx, group, rng)  # ... among A no
    be11 = _conditional_draws(b11[gp], b10[gp], gx, group, rng)  # B right, among B yes
    be10 = _conditional_draws(b01[gp], b00[gp], ka[gp] - gx, group, rng)  # ... among B no
    ka, kb, a01, a11, b01, b11, total = (v[pair] for v in (ka, kb, a01, a11, b01, b11, total))
    x10, x01 = ka - x11, kb - x11
    x00 = total - ka - kb + x11
    al10, al00 = a11 - al11, a01 - al01
    be01, be00 = b11 - be11, b01 - be10
    h11 = rng.hypergeometric(al11, x11 - al11, be11)
    h10 = rng.hypergeometric(al10, x10 - al10, be10)
    h01 = rng.hypergeometric(al01, x01 - al01, be01)
    h00 = rng.hypergeometric(al00, x00 - al00, be00)
    # (dconf, dperf) cells n[dconf + 1][dperf + 1]; dperf = +1: A right and B wrong
    n00, n02 = be01 - h01, al01 - h01  # dconf -1: A no, B yes
    n20, n22 = be10 - h10, al10 - h10  # dconf +1: A yes, B no
    both = h11 + h00
    n10, n12 = be11 + be00 - both, al11 + al00 - both
    n01 = x01 - n00 - n02
    n21 = x10 - n20 - n22
    n11 = x11 + x00 - n10 - n12
    s = _s_3x3(((n00, n01, n02), (n10, n11, n12), (n20, n21, n22))).astype(float)
    c0, c2 = n00 + n10 + n20, n02 + n12 + n22  # dperf -1 and +1
    pairs = (total * (total - 1)).astype(float)
    ties_x = x01 * (x01 - 1) + x10 * (x10 - 1) + (x11 + x00) * (x11 + x00 - 1)
    c1 = total - c0 - c2
    ties_y = c0 * (c0 - 1) + c1 * (c1 - 1) + c2 * (c2 - 1)
    den = (pairs - ties_x) * (pairs - ties_y) / 4.0
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(den > 0, s / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)
    return tau.reshape(n_pairs, n)


def _exact_counts(
    bits: NDArray[np.bool_],
    count: NDArray,
    target: NDArray,
    avail: NDArray,
    rng: np.random.Generator,
    eligible: NDArray[np.bool_] | None = None,
) -> None:
    """Flip uniformly chosen positions so row r has exactly target[r] True within ``eligible``.

    ``bits`` was drawn i.i.d. (exchangeable over positions) at about the right rate; flipping a
    uniformly random subset of the surplus ones (or of the zeros, when short) keeps it
    exchangeable, so each row ends as a uniformly random target-subset of its eligible
    positions. All rows at once, by rejection sampling of positions (no per-row Python loop).

    Args:
        bits: ``(R, n)`` draws, modified in place.
        count: ``(R,)`` current number of True within ``eligible`` (modified).
        target: ``(R,)`` wanted number.
        avail: ``(R,)`` number of eligible positions.
        rng: Generator.
        eligible: ``(R, n)`` positions that may be True (None: all).
    """
    n_rows, n = bits.shape
    diff = count - target
    todo = np.flatnonzero(diff != 0)
    while todo.size:
        d = np.abs(diff[todo])
        want = diff[todo] > 0  # True: turn ones off; False: turn zeros on
        pool = np.where(want, count[todo], avail[todo] - count[todo])
        draws = np.ceil(1.5 * d * n / np.maximum(pool, 1) + 16).astype(np.int64)
        row = np.repeat(todo, draws)
        pos = rng.integers(0, n, size=row.size)
        ok = bits[row, pos] == np.repeat(want, draws)
        if eligible is not None:
            ok &= eligible[row, pos]
        row, pos = row[ok], pos[ok]
        _, first = np.unique(row * n + pos, return_index=True)
        first.sort()  # the first occurrence of each position, in drawing order
        row, pos = row[first], pos[first]
        order = np.argsort(row, kind="stable")  # rank within the row, in drawing order
        row, pos = row[order], pos[order]
        starts = np.searchsorted(row, todo)
        rank = np.arange(row.size) - np.repeat(starts, np.bincount(row, minlength=n_rows)[todo])
        need = np.zeros(n_rows, dtype=np.int64)
        need[todo] = d
        take = rank < need[row]
        bits[row[take], pos[take]] = ~bits[row[take], pos[take]]
        got = np.bincount(row[take], minlength=n_rows)[todo]
        delta = np.where(want, -got, got)
        count[todo] += delta
        diff[todo] += delta
        todo = todo[diff[todo] != 0]


def _threshold(ones: NDArray, avail: NDArray) -> NDArray[np.uint32]:
    """uint16 cut-off giving rate ones / avail (65536 = always)."""
    rate = np.where(avail > 0, ones / np.maximum(avail, 1), 0.0)
    return np.rint(rate * 65536).astype(np.uint32)


def _random_bits(
    n: int, ones: NDArray, rng: np.random.Generator, *, eligible: NDArray | None = None
) -> NDArray[np.bool_]:
    """(R, n) rows with exactly ones[r] True, placed uniformly (within ``eligible`` if given)."""
    ones = np.asarray(ones, dtype=np.int64)
    avail = np.full(ones.shape, n, dtype=np.int64) if eligible is None else eligible.sum(axis=1)
    bits = (
        rng.integers(0, 65536, size=(ones.size, n), dtype=np.uint16)
        < _threshold(ones, avail)[:, None]
    )
    if eligible is not None:
        bits &= eligible
    _exact_counts(bits, bits.sum(axis=1), ones, avail, rng, eligible)
    return bits


def _category_counts(c: NDArray, p: NDArray) -> dict[str, NDArray[np.int64]]:
    """Per model: yes count, correct count, and correct counts among yes and among no."""
    cb, pb = c > 0.5, p > 0.5
    return {
        "kc": cb.sum(axis=0).astype(np.int64),
        "kp": pb.sum(axis=0).astype(np.int64),
        "n11": (cb & pb).sum(axis=0).astype(np.int64),
        "n01": (~cb & pb).sum(axis=0).astype(np.int64),
    }


def _shuffled_binary(
    counts: Mapping[str, NDArray], n_items: int, null: str, n: int, rng: np.random.Generator
) -> tuple[NDArray, NDArray]:
    """n joint draws of the models x items 0/1 matrices under ``null``: (n, M, N) bool.

    Every model's vector is a uniformly random arrangement of its own counts: for the base-rate
    null conf and perf each on its own; for the calibration-preserving null the (conf, perf)
    category vector as a whole (conf first, then perf within conf = 1 and within conf = 0, in
    one pass with class-dependent rates).
    """
    m = counts["kc"].size
    kc = np.tile(counts["kc"], n)
    cs = _random_bits(n_items, kc, rng)
    if null == "base_rate":
        ps = _random_bits(n_items, np.tile(counts["kp"], n), rng)
    else:
        n11 = np.tile(counts["n11"], n)
        n01 = np.tile(counts["n01"], n)
        not_cs = ~cs
        cut = np.where(cs, _threshold(n11, kc)[:, None], _threshold(n01, n_items - kc)[:, None])
        ps = rng.integers(0, 65536, size=cs.shape, dtype=np.uint16) < cut
        in_yes = (ps & cs).sum(axis=1)
        in_no = ps.sum(axis=1) - in_yes
        _exact_counts(ps, in_yes, n11, kc, rng, cs)
        _exact_counts(ps, in_no, n01, n_items - kc, rng, not_cs)
    shape = (n, m, n_items)
    return cs.reshape(shape), ps.reshape(shape)


def _shuffled_values(
    c: NDArray, p: NDArray, null: str, n: int, rng: np.random.Generator
) -> tuple[NDArray, NDArray]:
    """n joint draws for real-valued confidence: (n, N, M) each, by permuting the items."""
    cs = np.repeat(c.T[None], n, axis=0)  # (n, M, N)
    ps = np.repeat(p.T[None], n, axis=0)
    if null == "base_rate":
        rng.permuted(cs, axis=-1, out=cs)
        rng.permuted(ps, axis=-1, out=ps)
    else:
        idx = np.broadcast_to(np.arange(c.shape[0]), cs.shape).copy()
        rng.permuted(idx, axis=-1, out=idx)
        cs = np.take_along_axis(cs, idx, axis=-1)
        ps = np.take_along_axis(ps, idx, axis=-1)
    return np.swapaxes(cs, 1, 2), np.swapaxes(ps, 1, 2)


# --------------------------------------------------------------------------------------------
# Joint draws (the null of the mean over pairs)
# --------------------------------------------------------------------------------------------


def joint_null_draws(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    null: Null = "base_rate",
    n: int = 1000,
    rng: SeedLike = None,
    pairs: Any = None,
    progress: bool = False,
    workers: int | None = None,
) -> NDArray[np.float64]:
    """Joint permutation draws of every pair's tau-b (for the null of the mean over pairs).

    Each draw shuffles every model's vectors once (``base_rate``: confidence and correctness
    each on its own; ``calibration_preserving``: the model's item order, keeping its
    (conf, perf) pairs) and recomputes *all* pairs from that one draw, so the dependence between
    pairs that share a model is kept. Binary confidence: packed-bit co-occurrence counts per
    batch of draws; real-valued confidence: the exact path.

    Args:
        conf: ``(items, models)`` confidence.
        perf: ``(items, models)`` 0/1 correctness.
        null: ``"base_rate"`` or ``"calibration_preserving"``.
        n: Number of draws.
        rng: Seed (int), ``SeedSequence`` or ``Generator``; the draws are reproducible from it
            (SciPy's ``rng`` convention).
        pairs: ``(a, b)`` model indices (default all pairs).
        progress: Show a progress bar.
        workers: Threads (default: the CPU count); draws are made in fixed chunks with their
            own child seeds, so the result does not depend on it.

    Returns:
        ``(n, pairs)`` tau-b of every pair in every draw.

    Raises:
        ValueError: On bad inputs or an unknown null.
    """
    _check_null(null)
    c, p, binary = _check(conf, perf)
    if c.ndim != 2:
        raise ValueError("joint_null_draws takes 2-D (items, models) arrays")
    ia, ib = _pairs(c.shape[1], pairs)
    plan = _joint_plan(c, p, binary, ia, ib, null, int(n), rng)
    return _execute([plan], workers, progress)[0]


@dataclasses.dataclass
class _Plan:
    """Independent chunks of permutation work and how to assemble their results."""

    label: str
    tasks: list[Callable[[], Any]]
    sizes: list[int]
    finish: Callable[[list[Any]], Any]


def _execute(plans: Sequence[_Plan], workers: int | None, progress: bool) -> list[Any]:
    """Run every chunk of every plan on one thread pool; return each plan's result."""
    tasks = [t for plan in plans for t in plan.tasks]
    sizes = [z for plan in plans for z in plan.sizes]
    label = plans[0].label if len(plans) == 1 else "permutations (both nulls)"
    bar = _progress(sum(sizes), label, progress)
    try:
        results = _run_tasks(tasks, sizes, workers, bar)
    finally:
        if bar is not None:
            bar.close()
    out, k = [], 0
    for plan in plans:
        out.append(plan.finish(results[k : k + len(plan.tasks)]))
        k += len(plan.tasks)
    return out


def _joint_plan(
    c: NDArray, p: NDArray, binary: bool, ia: NDArray, ib: NDArray, null: str, n: int,
    seed: SeedLike,
) -> _Plan:  # fmt: skip
    n_items, m = c.shape
    per_draw = n_items * m * (4 if binary else 3 * max(1, ia.size // max(m, 1)))
    batch = max(1, min(n, _ELEMENTS_PER_CHUNK // max(per_draw, 1)))
    starts = list(range(0, n, batch))
    seeds = _seed_sequence(seed).spawn(len(starts))
    grid = None if binary else _grid(c)
    counts = _category_counts(c, p) if binary else None

    def task(start: int, ss: np.random.SeedSequence) -> NDArray:
        rng = np.random.default_rng(ss)
        b = min(batch, n - start)
        if binary:
            cs, ps = _shuffled_binary(counts, n_items, null, b, rng)
            return _tau_b_3x3(_tables_from_bits(cs, ps, ia, ib))
        cs, ps = _shuffled_values(c, p, null, b, rng)
        g = None if grid is None else (np.rint(cs * grid[1]).astype(np.int64), grid[1])
        return _taus_chunked(cs, ps, ia, ib, g)

    def finish(parts: list[NDArray]) -> NDArray:
        return np.concatenate(parts, axis=0) if parts else np.zeros((0, ia.size))

    return _Plan(
        f"joint {null}",
        [lambda s=s, ss=ss: task(s, ss) for s, ss in zip(starts, seeds)],
        [min(batch, n - s) * ia.size for s in starts],  # progress counts pair-draws
        finish,
    )


# --------------------------------------------------------------------------------------------
# Per-pair permutation tests
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class PairTestResult(Result):
    """Per-pair permutation test of tau-b under one null.

    Attributes:
        null: The null.
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"``.
        permutations: Draws per pair.
        tau: Observed tau-b per pair.
        p_value: p-value of the chosen alternative, ``(1 + count) / (B + 1)``; two-sided is
            ``2 min(p_greater, p_less)`` clipped to 1 (SciPy's convention).
        p_greater: ``(1 + #{null >= tau}) / (B + 1)``.
        p_less: ``(1 + #{null <= tau}) / (B + 1)``.
        q_value: Benjamini-Hochberg adjusted ``p_value`` across the pairs with a p-value.
        null_mean: Mean of the pair's null draws.
        null_sd: Standard deviation of the pair's null draws.
        n_valid: Draws with a defined tau-b.
        engine: What drew the null tables: ``"numba"`` (the compiled kernels) or ``"numpy"``.
            Both draw from the same exact law; for the same seed their draws differ.
    """

    null: str
    alternative: str
    permutations: int
    tau: NDArray[np.float64]
    p_value: NDArray[np.float64]
    p_greater: NDArray[np.float64]
    p_less: NDArray[np.float64]
    q_value: NDArray[np.float64]
    null_mean: NDArray[np.float64]
    null_sd: NDArray[np.float64]
    n_valid: NDArray[np.int64]
    engine: str = "numpy"


def _accumulate(obs: NDArray, draws: NDArray) -> NDArray:
    """Per row of (P, B) draws: [#>=obs, #<=obs, n_valid, sum, sum of squares]."""
    # SciPy's permutation_test tolerance: equal up to 100 ulps counts as a tie.
    gamma = np.abs(obs) * np.finfo(float).eps * 100
    valid = np.isfinite(draws)
    ge = ((draws >= (obs - gamma)[:, None]) & valid).sum(axis=1)
    le = ((draws <= (obs + gamma)[:, None]) & valid).sum(axis=1)
    d = np.where(valid, draws, 0.0)
    return np.stack([ge, le, valid.sum(axis=1), d.sum(axis=1), (d * d).sum(axis=1)], axis=1)


def _binary_pair_task(
    tables: NDArray, cats: tuple[NDArray, NDArray] | None, null: str, n: int, ss: Any
) -> NDArray:
    """Per-pair draws for binary confidence: (P, 5) accumulations (see :func:`_accumulate`).

    Pairs are drawn a few at a time, so that the arrays of one step stay in cache.
    """
    rng = np.random.default_rng(ss)
    step = max(1, _DRAWS_PER_STEP // n)
    parts = []
    for s in range(0, tables.shape[0], step):
        t = tables[s : s + step]
        obs = _tau_b_3x3(t)
        if null == "calibration_preserving":
            taus = _calibration_taus(cats[0][s : s + step], cats[1][s : s + step], n, rng)
            parts.append(_accumulate(obs, taus))
            continue
        # Margins are fixed, so tau-b is S times a constant: compare the integer S exactly.
        rows, cols = t.sum(axis=-1), t.sum(axis=-2)
        s_null = _base_rate_s(rows, cols, n, rng)
        s_obs = _s_3x3(np.moveaxis(t, (-2, -1), (0, 1)))
        scale = _tau_from_s(np.ones(obs.shape), rows.astype(float), cols.astype(float))
        ok = np.isfinite(scale)  # 1 / sqrt(denominator), NaN when a margin is constant
        ge = np.where(ok, (s_null >= s_obs[:, None]).sum(axis=1), 0)
        le = np.where(ok, (s_null <= s_obs[:, None]).sum(axis=1), 0)
        s1 = np.where(ok, s_null.sum(axis=1) * scale, 0.0)
        s2 = np.where(ok, (s_null.astype(float) ** 2).sum(axis=1) * scale**2, 0.0)
        parts.append(np.stack([ge, le, np.where(ok, n, 0), s1, s2], axis=1).astype(float))
    return np.concatenate(parts)


_NO_NUMBA_ENV = "METACOG_NO_NUMBA"
_COMPILED_RATIO = 4.0  # compiled engine: tabulate a law when it has >= 1/4 draw per entry
_compiled_state: dict[str, Any] = {}


def _compiled_kernels(engine: str) -> Any:
    """The compiled per-pair kernels for ``engine``, or None for the NumPy engine.

    ``"auto"`` takes them when numba imports and the environment variable
    ``METACOG_NO_NUMBA`` is unset (or 0/false/no); ``"numba"`` insists on them.
    """
    if engine == "numpy":
        return None
    if engine == "auto" and os.environ.get(_NO_NUMBA_ENV, "").strip().lower() not in (
        "", "0", "false", "no",
    ):  # fmt: skip
        return None
    if "module" not in _compiled_state:  # import (and compile) once per process
        try:
            from metacog_metrics import _pairwise_numba

            _compiled_state["module"] = _pairwise_numba
        except ImportError as exc:  # numba not installed (or not for this NumPy)
            _compiled_state["module"], _compiled_state["error"] = None, exc
        except Exception as exc:  # a numba that fails to compile here: keep working
            _compiled_state["module"], _compiled_state["error"] = None, exc
            warnings.warn(
                f"compiled per-pair kernels unavailable ({exc!r}); using the NumPy engine",
                RuntimeWarning,
                stacklevel=3,
            )
    module = _compiled_state["module"]
    if module is None and engine == "numba":
        raise ImportError(
            "engine='numba' needs numba (pip install 'metacog-eval[fast]'): "
            f"{_compiled_state['error']!r}"
        ) from _compiled_state["error"]
    return module


def _compiled_pair_task(
    kernels: Any, tables: NDArray, cats: tuple[NDArray, NDArray] | None, null: str, n: int,
    ss: np.random.SeedSequence, lf: NDArray,
) -> NDArray:  # fmt: skip
    """:func:`_binary_pair_task` on the compiled kernels (same law, other draws for a seed)."""
    state = kernels.state(ss)
    none = np.zeros((0, 0))
    if null == "calibration_preserving":
        obs = np.ascontiguousarray(_tau_b_3x3(tables))
        a, b = (np.ascontiguousarray(v, dtype=np.int64) for v in cats)
        return kernels.calibration_kernel(a, b, obs, n, state, lf, _COMPILED_RATIO, none)
    rows, cols = tables.sum(axis=-1), tables.sum(axis=-2)
    margins = np.ascontiguousarray(np.concatenate([rows, cols], axis=1), dtype=np.int64)
    s_obs = np.ascontiguousarray(_s_3x3(np.moveaxis(tables, (-2, -1), (0, 1))), dtype=np.int64)
    acc = kernels.base_rate_kernel(margins, s_obs, n, state, lf, _COMPILED_RATIO, none)
    scale = _tau_from_s(np.ones(rows.shape[0]), rows.astype(float), cols.astype(float))
    ok = np.isfinite(scale)  # the kernel leaves the pairs without a tau-b at zero
    acc[:, 3] *= np.where(ok, scale, 0.0)
    acc[:, 4] *= np.where(ok, scale, 0.0) ** 2
    return acc


def _exact_chunk_task(
    ca: NDArray,
    pa: NDArray,
    cb: NDArray,
    pb: NDArray,
    null: str,
    n: int,
    ss: Any,
    levels: int | None,
) -> NDArray:
    """Per-pair draws on the exact path for a chunk of pairs (rows of the (P, N) inputs).

    ``ca``/``cb`` are A's and B's confidences (integer grid codes when ``levels`` is given),
    ``pa``/``pb`` their correctness. Base-rate: dperf is permuted against dconf; calibration-
    preserving: B's items are permuted against A's. Returns ``(P, 5)`` accumulations.
    """
    rng = np.random.default_rng(ss)
    n_pairs, n_items = ca.shape
    step = max(1, _ELEMENTS_PER_CHUNK // max(1, n_pairs * n_items))
    acc = np.zeros((n_pairs, 5))
    obs = _exact_obs(ca, pa, cb, pb, levels)
    if null == "base_rate":
        # dconf is fixed: sort it once, then each draw is an O(N) pass over permuted dperf.
        dy = np.rint(pa - pb + 1).astype(np.int64)
        dx = np.round(ca - cb, 12)
        order = np.argsort(dx, axis=-1, kind="stable")
        dx = _gather(dx, order)
        dy = _gather(dy, order)
        for s in range(0, n, step):
            b = min(step, n - s)
            ys = rng.permuted(np.repeat(dy[:, None, :], b, axis=1), axis=-1)
            t = _tau_b_sorted(np.broadcast_to(dx[:, None, :], ys.shape), ys, presorted=True)
            acc += _accumulate(obs, t)
        return acc
    for s in range(0, n, step):
        b = min(step, n - s)
        idx = rng.permuted(np.broadcast_to(np.arange(n_items), (n_pairs, b, n_items)), axis=-1)
        t = _exact_obs(
            ca[:, None, :],
            pa[:, None, :],
            _gather(np.repeat(cb[:, None, :], b, axis=1), idx),
            _gather(np.repeat(pb[:, None, :], b, axis=1), idx),
            levels,
        )
        acc += _accumulate(obs, t)
    return acc


def _exact_obs(ca: NDArray, pa: NDArray, cb: NDArray, pb: NDArray, levels: int | None) -> NDArray:
    """tau-b along the last axis of broadcast (A, B) columns."""
    ca, pa, cb, pb = np.broadcast_arrays(ca, pa, cb, pb)
    dy = np.rint(pa - pb + 1).astype(np.int64)
    if levels is not None and 3 * levels <= ca.shape[-1]:  # tables pay off: many items a level
        q = (levels - 1) // 2
        return _tau_b_codes(np.rint(ca - cb).astype(np.int64) + q, dy, levels)
    return _tau_b_sorted(np.round(ca - cb, 12), dy)


def _run_tasks(tasks: list[Callable[[], NDArray]], sizes: list[int], workers: int | None,
               bar: Any) -> list[NDArray]:  # fmt: skip
    workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    if workers == 1 or len(tasks) == 1:
        out = []
        for task, size in zip(tasks, sizes):
            out.append(task())
            if bar is not None:
                bar.update(size)
        return out
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(t) for t in tasks]
        out = []
        for fut, size in zip(futures, sizes):
            out.append(fut.result())
            if bar is not None:
                bar.update(size)
        return out


def pair_permutation_test(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    null: Null = "base_rate",
    permutations: int = 10_000,
    alternative: Alternative = "two-sided",
    rng: SeedLike = None,
    pairs: Any = None,
    progress: bool = False,
    workers: int | None = None,
    engine: Engine = "auto",
) -> PairTestResult:
    """Permutation p-value of every pair's tau-b under one null.

    ``base_rate``: ``dconf`` permuted against ``dperf`` within the pair. For binary confidence a
    draw is a random 3x3 (dconf x dperf) table with the observed margins.
    ``calibration_preserving``: B's items permuted against A's, each model keeping its own
    (conf, perf) pairs; for binary confidence a draw is a random 4x4 table of A's by B's
    category with both category counts fixed. Either way a draw never touches the items, so the
    cost does not grow with them. Real-valued confidence permutes the items (exact path).

    Draws are made in fixed chunks, each with its own child seed, and spread over ``workers``
    threads; results do not depend on the number of workers. With numba installed (the
    ``fast`` extra) binary confidence is drawn by compiled kernels, several times faster; they
    draw from the same exact law, but other draws than the NumPy engine for the same seed
    (``engine="numpy"`` or ``METACOG_NO_NUMBA=1`` reproduces the NumPy engine's).

    Args:
        conf: ``(items, models)`` confidence.
        perf: ``(items, models)`` 0/1 correctness.
        null: ``"base_rate"`` or ``"calibration_preserving"``.
        permutations: Draws per pair (B).
        alternative: ``"two-sided"``, ``"greater"`` (tau above the null) or ``"less"``.
        rng: Seed (int), ``SeedSequence`` or ``Generator`` (SciPy's ``rng`` convention).
        pairs: ``(a, b)`` model indices (default all pairs).
        progress: Show a progress bar.
        workers: Threads (default: the CPU count).
        engine: ``"auto"`` (compiled kernels when numba imports and ``METACOG_NO_NUMBA`` is
            unset), ``"numpy"`` or ``"numba"``. Real-valued confidence always takes NumPy.

    Returns:
        A :class:`PairTestResult`.

    Raises:
        ValueError: On bad inputs, null, alternative or engine.
        ImportError: ``engine="numba"`` without numba.
    """
    _check_null(null)
    _check_alternative(alternative)
    _check_engine(engine)
    if permutations < 1:
        raise ValueError("permutations must be >= 1")
    c, p, binary = _check(conf, perf)
    if c.ndim != 2:
        raise ValueError("pair_permutation_test takes 2-D (items, models) arrays")
    ia, ib = _pairs(c.shape[1], pairs)
    plan = _pair_plan(c, p, binary, ia, ib, null, int(permutations), alternative, rng, engine)
    return _execute([plan], workers, progress)[0]


def _pair_plan(
    c: NDArray, p: NDArray, binary: bool, ia: NDArray, ib: NDArray, null: str,
    permutations: int, alternative: str, seed: SeedLike, engine: str = "auto",
) -> _Plan:  # fmt: skip
    n_pairs = ia.size
    tasks: list[Callable[[], NDArray]] = []
    sizes: list[int] = []
    kernels = _compiled_kernels(engine) if binary else None
    used = "numpy"
    if binary:
        tables = _binary_tables(c, p, ia, ib)
        cats = None
        if null == "calibration_preserving":
            k = _category_counts(c, p)  # per model, counts of the categories 2 conf + perf
            counts = np.stack(
                [c.shape[0] - k["kc"] - k["n01"], k["n01"], k["kc"] - k["n11"], k["n11"]], axis=1
            )
            cats = (counts[ia], counts[ib])
        step = max(1, _TABLES_PER_CHUNK // permutations)
        starts = list(range(0, n_pairs, step))
        seeds = _seed_sequence(seed).spawn(len(starts))
        if kernels is not None:
            used = "numba"
            lf = kernels.number_tables(c.shape[0])
        for s, ss in zip(starts, seeds):
            sl = slice(s, s + step)
            part = None if cats is None else (cats[0][sl], cats[1][sl])
            if kernels is None:
                tasks.append(
                    lambda t=tables[sl], k=part, ss=ss: _binary_pair_task(
                        t, k, null, permutations, ss
                    )
                )
            else:
                tasks.append(
                    lambda t=tables[sl], k=part, ss=ss: _compiled_pair_task(
                        kernels, t, k, null, permutations, ss, lf
                    )
                )
            sizes.append(min(step, n_pairs - s) * permutations)
        tau = _tau_b_3x3(tables)
    else:
        grid = _grid(c)
        levels = None if grid is None else 2 * grid[1] + 1
        vals = c.T if grid is None else grid[0].T.astype(float)  # (M, N)
        pt = p.T
        step = max(1, _ELEMENTS_PER_CHUNK // (c.shape[0] * min(permutations, 256)))
        starts = list(range(0, n_pairs, step))
        seeds = _seed_sequence(seed).spawn(len(starts))
        for s, ss in zip(starts, seeds):
            a, b = ia[s : s + step], ib[s : s + step]
            tasks.append(
                lambda a=a, b=b, ss=ss: _exact_chunk_task(
                    vals[a], pt[a], vals[b], pt[b], null, permutations, ss, levels
                )
            )
            sizes.append(a.size * permutations)
        tau = pairwise_taus(c, p, pairs=(ia, ib))

    def finish(results: list[NDArray]) -> PairTestResult:
        acc = np.concatenate([np.atleast_2d(r) for r in results]) if results else np.zeros((0, 5))
        ge, le, nv, s1, s2 = acc.T
        p_value, p_greater, p_less = _p_values(ge, le, nv, alternative)
        ok = np.isfinite(tau)
        p_value = np.where(ok, p_value, np.nan)
        p_greater = np.where(ok, p_greater, np.nan)
        p_less = np.where(ok, p_less, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(nv > 0, s1 / nv, np.nan)
            var = np.where(nv > 1, (s2 - nv * mean**2) / (nv - 1), np.nan)
        return PairTestResult(
            null=null,
            alternative=alternative,
            permutations=int(permutations),
            tau=tau,
            p_value=p_value,
            p_greater=p_greater,
            p_less=p_less,
            q_value=_bh(p_value),
            null_mean=mean,
            null_sd=np.sqrt(np.maximum(var, 0.0)),
            n_valid=nv.astype(np.int64),
            engine=used,
        )

    return _Plan(f"pairs {null}", tasks, sizes, finish)


def _bh(p: NDArray) -> NDArray:
    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        q[ok] = stats.false_discovery_control(p[ok], method="bh")
    return q


# --------------------------------------------------------------------------------------------
# The whole analysis
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class MeanTauNull(Result):
    """The observed mean tau-b over pairs against joint draws of one null.

    Attributes:
        null: The null.
        observed: Observed mean tau-b over the pairs with a defined tau.
        mean: Mean of the null draws of the mean.
        sd: Their standard deviation.
        ci: 2.5% and 97.5% quantiles of the null draws.
        p_value: p-value of the chosen alternative (``(1 + count) / (K + 1)``).
        p_greater: One-sided p-value for observed above the null.
        p_less: One-sided p-value for observed below the null.
        n_draws: Joint draws (K).
        draws: The null draws of the mean (for histograms).
    """

    null: str
    observed: float
    mean: float
    sd: float
    ci: tuple[float, float]
    p_value: float
    p_greater: float
    p_less: float
    n_draws: int
    draws: NDArray[np.float64]


@dataclasses.dataclass(frozen=True, eq=False)
class DeltaCurve(Result):
    """Mean tau-b of the pairs whose accuracy gap is at most delta, with null bands.

    Attributes:
        delta: The grid.
        n_pairs: Pairs (with a defined tau) within each delta.
        mean_tau: Their observed mean tau-b (NaN below ``min_pairs``).
        null_mean: ``{null: mean of the joint null draws of that subset's mean}``.
        null_low: ``{null: 2.5% quantile}``.
        null_high: ``{null: 97.5% quantile}``.
        p_value: ``{null: p-value of the chosen alternative}``.
        min_pairs: Fewest pairs for a point.
    """

    delta: NDArray[np.float64]
    n_pairs: NDArray[np.int64]
    mean_tau: NDArray[np.float64]
    null_mean: dict[str, NDArray[np.float64]]
    null_low: dict[str, NDArray[np.float64]]
    null_high: dict[str, NDArray[np.float64]]
    p_value: dict[str, NDArray[np.float64]]
    min_pairs: int

    @property
    def table(self) -> pd.DataFrame:
        """One row per delta."""
        data: dict[str, Any] = {
            "delta": self.delta,
            "n_pairs": self.n_pairs,
            "mean_tau": self.mean_tau,
        }
        for null in self.null_mean:
            data[f"{null}_null_mean"] = self.null_mean[null]
            data[f"{null}_null_low"] = self.null_low[null]
            data[f"{null}_null_high"] = self.null_high[null]
            data[f"{null}_p_value"] = self.p_value[null]
        return pd.DataFrame(data)


@dataclasses.dataclass(frozen=True, eq=False)
class PairTypeSummary(Result):
    """Pairs of one reasoning type (R-R, R-NR or NR-NR).

    Attributes:
        pair_type: The type.
        n_pairs: Pairs with a defined tau.
        mean_tau: Their mean tau-b.
        null_mean: ``{null: mean of the joint null draws of their mean}``.
        p_value: ``{null: p-value of the chosen alternative}``.
        fdr_significant_share: ``{null: share of these pairs with q < fdr_alpha}``.
        median_tau: Their median tau-b (the paper quotes medians).
    """

    pair_type: str
    n_pairs: int
    mean_tau: float
    null_mean: dict[str, float]
    p_value: dict[str, float]
    fdr_significant_share: dict[str, float]
    median_tau: float = float("nan")


@dataclasses.dataclass(frozen=True, eq=False)
class PairwiseResult(Result):
    """Pairwise calibration of a set of models.

    Attributes:
        models: Model names.
        model_a: First model of each pair.
        model_b: Second model of each pair.
        tau: Observed tau-b per pair (NaN when dconf or dperf is constant).
        accuracy: Per model.
        accuracy_gap: ``|acc_A - acc_B|`` per pair.
        pair_type: Per pair ``"R-R"``, ``"R-NR"``, ``"NR-NR"`` or None (flag unknown).
        n_items: Items.
        continuous: Whether the exact path for real-valued confidence was used.
        mean_tau: Mean tau-b over pairs with a defined tau.
        n_pairs: All pairs.
        n_pairs_valid: Pairs with a defined tau.
        per_pair: ``{null: PairTestResult}``.
        nulls: ``{null: MeanTauNull}``.
        fdr_alpha: FDR level.
        fdr_significant_share: Share of pairs with base-rate q < ``fdr_alpha`` (the headline;
            ``per_pair[null]`` has both).
        delta_curve: The :class:`DeltaCurve`.
        pair_types: ``{type: PairTypeSummary}`` (empty without reasoning flags).
        alternative: Alternative of the p-values.
        permutations: Per-pair draws.
        joint_permutations: Joint draws.
    """

    models: tuple[str, ...]
    model_a: tuple[str, ...]
    model_b: tuple[str, ...]
    tau: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    accuracy_gap: NDArray[np.float64]
    pair_type: tuple[str | None, ...]
    n_items: int
    continuous: bool
    mean_tau: float
    n_pairs: int
    n_pairs_valid: int
    per_pair: Mapping[str, PairTestResult]
    nulls: Mapping[str, MeanTauNull]
    fdr_alpha: float
    fdr_significant_share: float
    delta_curve: DeltaCurve
    pair_types: Mapping[str, PairTypeSummary]
    alternative: str
    permutations: int
    joint_permutations: int

    def fdr_share(self, null: str = "base_rate") -> float:
        """Share of pairs (with a p-value) whose q-value under ``null`` is below ``fdr_alpha``."""
        q = self.per_pair[null].q_value
        ok = np.isfinite(q)
        return float((q[ok] < self.fdr_alpha).mean()) if ok.any() else float("nan")

    def fdr_share_by_direction(self, null: str = "base_rate") -> dict[str, float]:
        """:meth:`fdr_share` split by direction: ``{"above": ..., "below": ...}``.

        A pair counts as "above" when its tau exceeds its own null mean, else "below"; the two
        shares (of the pairs with a p-value) add up to :meth:`fdr_share`.
        """
        res = self.per_pair[null]
        ok = np.isfinite(res.q_value)
        if not ok.any():
            return {"above": float("nan"), "below": float("nan")}
        sig = ok & (res.q_value < self.fdr_alpha)
        above = sig & (self.tau > res.null_mean)
        below = sig & ~(self.tau > res.null_mean)
        n = int(ok.sum())
        return {"above": float(above.sum() / n), "below": float(below.sum() / n)}

    @property
    def table(self) -> pd.DataFrame:
        """One row per pair: models, tau, accuracy gap, pair type, p/q per null."""
        data: dict[str, Any] = {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "tau": self.tau,
            "accuracy_a": self.accuracy[[self.models.index(m) for m in self.model_a]],
            "accuracy_b": self.accuracy[[self.models.index(m) for m in self.model_b]],
            "accuracy_gap": self.accuracy_gap,
            "pair_type": list(self.pair_type),
        }
        for null, res in self.per_pair.items():
            data[f"{null}_p"] = res.p_value
            data[f"{null}_q"] = res.q_value
            data[f"{null}_null_mean"] = res.null_mean
            data[f"{null}_null_sd"] = res.null_sd
        return pd.DataFrame(data)


def _pair_types(reasoning: Sequence[bool | None] | None, ia: NDArray, ib: NDArray) -> list:
    if reasoning is None:
        return [None] * ia.size
    flags = list(reasoning)

    def kind(a: int, b: int) -> str | None:
        fa, fb = flags[a], flags[b]
        if fa is None or fb is None:
            return None
        return "R-R" if fa and fb else ("NR-NR" if not fa and not fb else "R-NR")

    return [kind(a, b) for a, b in zip(ia, ib)]


def _mean_null(null: str, observed: float, draws: NDArray, alternative: str) -> MeanTauNull:
    ok = np.isfinite(draws)
    d = draws[ok]
    nan = float("nan")
    if not d.size or not np.isfinite(observed):
        return MeanTauNull(null, observed, nan, nan, (nan, nan), nan, nan, nan, 0, draws)
    gamma = abs(observed) * np.finfo(float).eps * 100
    ge = np.array([(d >= observed - gamma).sum()])
    le = np.array([(d <= observed + gamma).sum()])
    p, pg, pl = (float(v[0]) for v in _p_values(ge, le, np.array([d.size]), alternative))
    return MeanTauNull(
        null=null,
        observed=float(observed),
        mean=float(d.mean()),
        sd=float(d.std(ddof=1)) if d.size > 1 else nan,
        ci=(float(np.quantile(d, 0.025)), float(np.quantile(d, 0.975))),
        p_value=p,
        p_greater=pg,
        p_less=pl,
        n_draws=int(d.size),
        draws=draws,
    )


def _subset_mean(taus: NDArray, mask: NDArray) -> NDArray:
    """Mean over the masked pairs of (..., P) taus, ignoring NaN draws."""
    sub = taus[..., mask]
    with np.errstate(invalid="ignore"):
        return np.nanmean(sub, axis=-1) if sub.shape[-1] else np.full(sub.shape[:-1], np.nan)


def pairwise_calibration(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    models: Sequence[str] | None = None,
    reasoning: Sequence[bool | None] | None = None,
    permutations: int = 10_000,
    joint_permutations: int = 1_000,
    alternative: Alternative = "two-sided",
    fdr_alpha: float = 0.05,
    deltas: Sequence[float] = DEFAULT_DELTAS,
    min_pairs: int = 3,
    rng: SeedLike = 0,
    progress: bool = False,
    workers: int | None = None,
    engine: Engine = "auto",
) -> PairwiseResult:
    """Pairwise calibration with both nulls, per pair and for the mean over pairs.

    Args:
        conf: ``(items, models)`` confidence, complete (0/1 takes the fast engine).
        perf: ``(items, models)`` 0/1 correctness, complete.
        models: Model names (default ``"0", "1", ...``).
        reasoning: Per-model reasoning flag (None when unknown), for the pair-type breakdown.
        permutations: Per-pair draws (0 skips the per-pair tests).
        joint_permutations: Joint draws for the mean, the delta curve and the pair types.
        alternative: Alternative of every p-value.
        fdr_alpha: BH level for the share of significant pairs.
        deltas: Accuracy-gap grid of the delta curve.
        min_pairs: Fewest pairs for a delta-curve point or pair-type mean.
        rng: Seed (int), ``SeedSequence`` or ``Generator``; each null and use gets its own
            child stream.
        progress: Progress bars on the permutation steps.
        workers: Threads for the per-pair tests.
        engine: Engine of the per-pair draws (see :func:`pair_permutation_test`).

    Returns:
        A :class:`PairwiseResult`.

    Raises:
        ValueError: On bad inputs.
    """
    _check_alternative(alternative)
    _check_engine(engine)
    c, p, binary = _check(conf, perf)
    if c.ndim != 2:
        raise ValueError("pairwise_calibration takes 2-D (items, models) arrays")
    n_items, m = c.shape
    names = tuple(str(v) for v in (models if models is not None else range(m)))
    if len(names) != m:
        raise ValueError(f"{len(names)} model names for {m} columns")
    if reasoning is not None and len(reasoning) != m:
        raise ValueError(f"{len(reasoning)} reasoning flags for {m} models")
    ia, ib = _pairs(m)
    tau = pairwise_taus(c, p)
    valid = np.isfinite(tau)
    mean_tau = float(tau[valid].mean()) if valid.any() else float("nan")
    correct_counts = p.sum(axis=0)
    accuracy = correct_counts / n_items
    gap_counts = np.abs(correct_counts[ia] - correct_counts[ib])
    types = _pair_types(reasoning, ia, ib)

    root = _seed_sequence(rng)
    pair_seeds = dict(zip(NULLS, root.spawn(2)))
    joint_seeds = dict(zip(NULLS, root.spawn(2)))
    ia_all, ib_all = _pairs(m)
    plans = []
    if permutations > 0:
        plans += [
            _pair_plan(c, p, binary, ia_all, ib_all, null, int(permutations), alternative,
                       pair_seeds[null], engine)
            for null in NULLS
        ]  # fmt: skip
    if joint_permutations > 0:
        plans += [
            _joint_plan(c, p, binary, ia_all, ib_all, null, int(joint_permutations),
                        joint_seeds[null])
            for null in NULLS
        ]  # fmt: skip
    done = iter(_execute(plans, workers, progress))
    per_pair: dict[str, PairTestResult] = {}
    if permutations > 0:
        for null in NULLS:
            per_pair[null] = next(done)
    else:
        nan = np.full(tau.shape, np.nan)
        for null in NULLS:
            per_pair[null] = PairTestResult(
                null, alternative, 0, tau, nan, nan, nan, nan, nan, nan,
                np.zeros(tau.shape, dtype=np.int64),
            )  # fmt: skip
    joint = {
        null: next(done) if joint_permutations > 0 else np.zeros((0, tau.size)) for null in NULLS
    }
    nulls = {
        null: _mean_null(null, mean_tau, _subset_mean(joint[null], valid), alternative)
        for null in NULLS
    }

    delta = np.asarray(deltas, dtype=float)
    n_d = np.zeros(delta.size, dtype=np.int64)
    mean_d = np.full(delta.size, np.nan)
    band = {
        k: {null: np.full(delta.size, np.nan) for null in NULLS} for k in ("m", "lo", "hi", "p")
    }
    for i, d in enumerate(delta):
        mask = valid & (gap_counts <= np.floor(d * n_items + 1e-9))
        n_d[i] = int(mask.sum())
        if n_d[i] < min_pairs:
            continue
        mean_d[i] = float(tau[mask].mean())
        for null in NULLS:
            res = _mean_null(null, mean_d[i], _subset_mean(joint[null], mask), alternative)
            band["m"][null][i], band["p"][null][i] = res.mean, res.p_value
            band["lo"][null][i], band["hi"][null][i] = res.ci
    curve = DeltaCurve(delta, n_d, mean_d, band["m"], band["lo"], band["hi"], band["p"],
                       int(min_pairs))  # fmt: skip

    type_arr = np.array([t if t is not None else "" for t in types])
    summaries: dict[str, PairTypeSummary] = {}
    for kind in PAIR_TYPES:
        mask = valid & (type_arr == kind)
        if not mask.any():
            continue
        obs = float(tau[mask].mean()) if mask.sum() >= min_pairs else float("nan")
        med = float(np.median(tau[mask])) if mask.sum() >= min_pairs else float("nan")
        null_mean, p_val, share = {}, {}, {}
        for null in NULLS:
            res = _mean_null(null, obs, _subset_mean(joint[null], mask), alternative)
            null_mean[null], p_val[null] = res.mean, res.p_value
            q = per_pair[null].q_value[mask]
            share[null] = float((q[np.isfinite(q)] < fdr_alpha).mean()) if np.isfinite(
                q).any() else float("nan")  # fmt: skip
        summaries[kind] = PairTypeSummary(
            kind, int(mask.sum()), obs, null_mean, p_val, share, median_tau=med
        )

    result = PairwiseResult(
        models=names,
        model_a=tuple(names[i] for i in ia),
        model_b=tuple(names[i] for i in ib),
        tau=tau,
        accuracy=accuracy,
        accuracy_gap=gap_counts / n_items,
        pair_type=tuple(types),
        n_items=int(n_items),
        continuous=not binary,
        mean_tau=mean_tau,
        n_pairs=int(tau.size),
        n_pairs_valid=int(valid.sum()),
        per_pair=per_pair,
        nulls=nulls,
        fdr_alpha=float(fdr_alpha),
        fdr_significant_share=float("nan"),
        delta_curve=curve,
        pair_types=summaries,
        alternative=alternative,
        permutations=int(permutations),
        joint_permutations=int(joint_permutations),
    )
    return dataclasses.replace(result, fdr_significant_share=result.fdr_share("base_rate"))
