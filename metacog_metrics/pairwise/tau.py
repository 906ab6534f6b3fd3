"""Kendall tau-b: from contingency tables, and the observed tables and taus of model pairs.

One copy of Kendall's S (:func:`_kendall_s`) and of the tau-b denominator
(:func:`_tau_from_ties`); every path (binary tables, grid codes, sorted real values, the null
draws) goes through them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics.pairwise.common import _ELEMENTS_PER_CHUNK, _check, _pairs

_MAX_GRID = 1000
_WORDS_PER_CHUNK = 1 << 21


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
    return _tau_b_tables(t)


def _tau_b_tables(t: NDArray) -> NDArray:
    """tau-b of ``(..., R, C)`` count tables (integer tables keep S exact)."""
    return _tau_from_s(_kendall_s(t), t.sum(axis=-1), t.sum(axis=-2))


def _kendall_s(t: NDArray) -> NDArray:
    """Kendall's S = C - D of ``(..., R, C)`` ordered tables: the one copy of the formula.

    Each cell counts against the cells in strictly later rows: those in a strictly later column
    are concordant, those in a strictly earlier one discordant. Integer tables give exact S.
    """
    below = np.cumsum(t, axis=-2) - t  # rows strictly above (smaller row value)
    left = np.cumsum(below, axis=-1) - below  # ... and strictly smaller column
    right = below.sum(axis=-1, keepdims=True) - left - below  # ... strictly larger column
    return (t * (left - right)).sum(axis=(-2, -1))


def _tied_pairs(k: NDArray) -> NDArray:
    """Pairs among ``k`` items: ``k (k - 1) / 2``."""
    return k * (k - 1) / 2.0


def _tau_from_ties(s: NDArray, n0: NDArray, n1: NDArray, n2: NDArray) -> NDArray:
    """The one tau-b denominator: ``S / sqrt((n0 - n1)(n0 - n2))``, NaN where it is 0.

    ``n0`` all pairs, ``n1`` and ``n2`` the pairs tied on the row and on the column variable.
    """
    den = (n0 - n1) * (n0 - n2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, s / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)


def _tau_from_s(s: NDArray, rows: NDArray, cols: NDArray) -> NDArray:
    """tau-b from S and the margins: ``(..., R)`` row sums and ``(..., C)`` column sums."""
    n1 = _tied_pairs(rows).sum(axis=-1)
    return _tau_from_ties(s, _tied_pairs(rows.sum(axis=-1)), n1, _tied_pairs(cols).sum(axis=-1))


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
    n1 = (idx - start).sum(axis=-1).astype(float)  # pairs tied in x
    n2 = _tied_pairs(np.stack(counts, axis=-1).astype(float)).sum(axis=-1)
    return _tau_from_ties(s, _tied_pairs(float(n)), n1, n2)


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
        return _tau_b_tables(_binary_tables(c, p, ia, ib))
    return _taus_chunked(c, p, ia, ib, _grid(c))
