"""Kendall tau-b: from contingency tables, and the observed tables and taus of model pairs.

One copy of Kendall's S (:func:`_kendall_s`) and of the tau-b denominator
(:func:`_tau_from_ties`); every path (binary tables, grid codes, sorted real values, the null
draws) goes through them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import value_ties
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

    Example:
        >>> float(tau_b_from_table([[3, 1], [1, 3]]))  # S = 9 - 1, sqrt((28 - 12)(28 - 12))
        0.5
        >>> tau_b_from_table([[[3, 1], [1, 3]], [[4, 4], [0, 0]]]).tolist()  # a constant row
        [0.5, nan]
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


def _tables_from_counts(
    counts: NDArray, kc: NDArray, kp: NDArray, n: int, ia: NDArray, ib: NDArray
) -> NDArray[np.int64]:
    """The tables from per-pair co-occurrence counts ``(..., P, 6)`` (the compiled kernels'
    order: e11.e00 both ways, e10.e01 both ways, conf.conf, perf.perf) and the models' yes and
    correct counts ``kc``, ``kp``; as :func:`_fill_tables`."""
    t = np.empty((*counts.shape[:-1], 3, 3), dtype=np.int64)
    t[..., 2, 2] = counts[..., 0]
    t[..., 0, 0] = counts[..., 1]
    t[..., 2, 0] = counts[..., 2]
    t[..., 0, 2] = counts[..., 3]
    r2 = kc[ia] - counts[..., 4]  # dconf = +1
    r0 = kc[ib] - counts[..., 4]  # dconf = -1
    c2 = kp[ia] - counts[..., 5]
    c0 = kp[ib] - counts[..., 5]
    t[..., 2, 1] = r2 - t[..., 2, 2] - t[..., 2, 0]
    t[..., 0, 1] = r0 - t[..., 0, 0] - t[..., 0, 2]
    t[..., 1, 2] = c2 - t[..., 2, 2] - t[..., 0, 2]
    t[..., 1, 0] = c0 - t[..., 0, 0] - t[..., 2, 0]
    t[..., 1, 1] = n - r2 - r0 - t[..., 1, 2] - t[..., 1, 0]
    return t


def _grid(conf: NDArray) -> tuple[NDArray[np.int64], int] | None:
    """Integer codes k with conf = k / Q for the smallest Q <= 1000, or None (no grid)."""
    flat = np.sort(conf, axis=None)  # (a sort: NumPy's hashing np.unique is far slower)
    levels = flat[np.r_[True, flat[1:] != flat[:-1]]] if flat.size else flat
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
    with the counts taken at the start of j's block of tied x (so tied pairs count 0). An item
    with y = 3 is absent (a pair's unshared item): it must sort last (x = inf) and is left out
    of every count.
    """
    x = np.ascontiguousarray(x)
    y = np.ascontiguousarray(y)
    if not presorted:
        order = np.argsort(x, axis=-1, kind="stable")
        x = _gather(x, order)
        y = _gather(y, order)
    n = x.shape[-1]
    idx = np.arange(n, dtype=np.int64)
    here = y < 3
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
            lower += at_start * ((y >= 1) & here)
        elif level == 1:
            lower += at_start * (y == 2)
            upper += at_start * (y == 0)
        else:
            upper += at_start * (y <= 1)
    s = (lower - upper).sum(axis=-1).astype(float)
    n1 = ((idx - start) * here).sum(axis=-1).astype(float)  # pairs tied in x
    cnt = np.stack(counts, axis=-1).astype(float)
    return _tau_from_ties(s, _tied_pairs(cnt.sum(axis=-1)), n1, _tied_pairs(cnt).sum(axis=-1))


def _dconf(c: NDArray, ia: NDArray, ib: NDArray) -> NDArray:
    """Confidence differences, rounded so that decimal ties stay ties (:func:`value_ties`)."""
    return value_ties(c[..., ia] - c[..., ib])


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

    Example:
        >>> conf = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 1], [1, 1, 1]])
        >>> perf = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 1], [1, 0, 0]])
        >>> pairwise_taus(conf, perf).round(3).tolist()  # pairs (0, 1), (0, 2), (1, 2)
        [0.401, 0.875, 0.5]
    """
    c, p, binary = _check(conf, perf)
    ia, ib = _pairs(c.shape[-1], pairs)
    if binary:
        return _tau_b_tables(_binary_tables(c, p, ia, ib))
    return _taus_chunked(c, p, ia, ib, _grid(c))


# --------------------------------------------------------------------------------------------
# Real-valued confidence: what a pair's per-pair nulls depend on
# --------------------------------------------------------------------------------------------

_MAX_CELLS = 1 << 16  # category cells of one pair for the matching tables
_LEVELS_PER_ITEM = 4  # ... and at most this many dconf levels per item (else: the items)
#: compiled matching tables: a row with more than this many items a column is drawn column by
#: column (a hypergeometric variate a column, some 25 ns, against about 2 ns an item)
MATCHING_RATIO = 12.0


def _draw_cost(rows: NDArray, n_cols: int) -> float:
    """The work of a matching-table draw with these row counts, in items: every row but the
    largest, a small one its items, a large one ``MATCHING_RATIO`` items a column."""
    rest = np.sort(rows)[:-1]
    return float(np.minimum(rest, MATCHING_RATIO * n_cols).sum())


@dataclasses.dataclass(frozen=True)
class _LevelTables:
    """The counts a batch of real-valued pairs' per-pair nulls depend on, packed pair by pair.

    dperf permuted against dconf: each pair's distinct dconf values (its *levels*,
    ascending) with their counts, and its dperf counts; a draw is a random ``levels x 3``
    table with both margins. B's items permuted against A's: each model's distinct
    (confidence, correctness) *categories* with their counts, and for each cell (row
    category, column category) the dconf level and dperf of an item of the one matched with
    an item of the other; a draw is a random table of categories with both margins. Exact
    ties keep their meaning: levels are the distinct values of the differences
    (:func:`value_ties`), as for the observed tau-b.

    Attributes:
        n: ``(P,)`` items of each pair.
        row_off: ``(P + 1,)`` offsets of each pair's levels in ``rows``.
        rows: Counts of the dconf levels.
        cols: ``(P, 3)`` counts of dperf -1, 0, +1.
        s_obs: ``(P,)`` observed Kendall S.
        tau: ``(P,)`` observed tau-b (NaN when dconf or dperf is constant).
        matching: ``(P,)`` whether the categories are few enough for matching tables
            (``rows x columns <= 2**16`` cells and at most 4 dconf levels an item).
        a_off, a_cnt: Row categories, largest count first: the side whose rows but the
            largest cost a draw the least (:func:`_draw_cost`; on a tie, fewer categories).
        b_off, b_cnt: Column categories.
        cell_off, cell_code: Each pair's cells, row-major: ``3 level + dperf + 1``.
        n_levels: ``(P,)`` dconf levels over all cells.
    """

    n: NDArray[np.int64]
    row_off: NDArray[np.int64]
    rows: NDArray[np.int64]
    cols: NDArray[np.int64]
    s_obs: NDArray[np.int64]
    tau: NDArray[np.float64]
    matching: NDArray[np.bool_]
    a_off: NDArray[np.int64]
    a_cnt: NDArray[np.int64]
    b_off: NDArray[np.int64]
    b_cnt: NDArray[np.int64]
    cell_off: NDArray[np.int64]
    cell_code: NDArray[np.int64]
    n_levels: NDArray[np.int64]

    def select(self, idx: NDArray) -> _LevelTables:
        """The pairs ``idx`` (repacked)."""
        idx = np.asarray(idx, dtype=np.int64)

        def ragged(off: NDArray, flat: NDArray) -> tuple[NDArray, NDArray]:
            sizes = off[idx + 1] - off[idx]
            new_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            take = np.concatenate(
                [np.arange(off[i], off[i + 1]) for i in idx] or [np.zeros(0, np.int64)]
            ).astype(np.int64)
            return new_off, np.ascontiguousarray(flat[take])

        row_off, rows = ragged(self.row_off, self.rows)
        a_off, a_cnt = ragged(self.a_off, self.a_cnt)
        b_off, b_cnt = ragged(self.b_off, self.b_cnt)
        cell_off, cell_code = ragged(self.cell_off, self.cell_code)
        return _LevelTables(
            self.n[idx], row_off, rows, np.ascontiguousarray(self.cols[idx]), self.s_obs[idx],
            self.tau[idx], self.matching[idx], a_off, a_cnt, b_off, b_cnt, cell_off,
            cell_code, self.n_levels[idx],
        )  # fmt: skip


def _categories(c: NDArray, p: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Distinct (confidence, correctness) categories: values, correctness and counts."""
    vals, inv = np.unique(c, return_inverse=True)
    code, counts = np.unique(inv * 2 + p.astype(np.int64), return_counts=True)
    return vals[code // 2], code % 2, counts


def _level_tables(
    c: NDArray, p: NDArray, ia: NDArray, ib: NDArray, items: Sequence[NDArray] | None = None
) -> _LevelTables:
    """The :class:`_LevelTables` of pairs ``(ia, ib)`` of ``(items, models)`` arrays.

    Args:
        c: ``(N, M)`` real-valued confidence.
        p: ``(N, M)`` 0/1 correctness.
        ia, ib: Model indices of the pairs.
        items: Per pair, the items it uses (boolean mask or indices over the N rows); None:
            all items for every pair.
    """
    n_pairs = ia.size
    n = np.zeros(n_pairs, dtype=np.int64)
    cols = np.zeros((n_pairs, 3), dtype=np.int64)
    s_obs = np.zeros(n_pairs, dtype=np.int64)
    tau = np.full(n_pairs, np.nan)
    matching = np.zeros(n_pairs, dtype=bool)
    n_levels = np.zeros(n_pairs, dtype=np.int64)
    rows, a_cnt, b_cnt, codes = [], [], [], []
    seen: dict[int, tuple[NDArray, NDArray, NDArray]] = {}

    def categories(j: int, cj: NDArray, pj: NDArray) -> tuple[NDArray, NDArray, NDArray]:
        # on all rows a model's categories are the same in each of its pairs: computed once
        if items is not None:
            return _categories(cj, pj)
        if j not in seen:
            seen[j] = _categories(cj, pj)
        return seen[j]

    for k in range(n_pairs):
        sel = slice(None) if items is None else items[k]
        ca, cb = c[sel, ia[k]], c[sel, ib[k]]
        pa = np.rint(p[sel, ia[k]]).astype(np.int64)
        pb = np.rint(p[sel, ib[k]]).astype(np.int64)
        n[k] = ca.size
        levels, inv = np.unique(value_ties(ca - cb), return_inverse=True)
        table = np.bincount(inv * 3 + (pa - pb + 1), minlength=3 * levels.size).reshape(-1, 3)
        rows.append(table.sum(axis=1))
        cols[k] = table.sum(axis=0)
        s_obs[k] = int(_kendall_s(table))
        tau[k] = float(_tau_b_tables(table))
        va, qa, na = categories(ia[k], ca, pa)
        vb, qb, nb = categories(ib[k], cb, pb)
        if na.size * nb.size > _MAX_CELLS:
            a_cnt.append(np.zeros(0, np.int64))
            b_cnt.append(np.zeros(0, np.int64))
            codes.append(np.zeros(0, np.int64))
            continue
        dx = value_ties(va[:, None] - vb[None, :])
        cell_levels, cell_inv = np.unique(dx, return_inverse=True)
        code = cell_inv.reshape(dx.shape) * 3 + (qa[:, None] - qb[None, :] + 1)
        cost_a, cost_b = _draw_cost(na, nb.size), _draw_cost(nb, na.size)
        if (cost_b, nb.size) < (cost_a, na.size):  # rows: the side cheaper to draw
            na, nb, code = nb, na, code.T
        order = np.argsort(-na, kind="stable")  # largest rows first
        matching[k] = cell_levels.size <= _LEVELS_PER_ITEM * max(ca.size, 1)
        n_levels[k] = cell_levels.size
        a_cnt.append(na[order])
        b_cnt.append(nb)
        codes.append(np.ascontiguousarray(code[order]).ravel())

    def pack(parts: list[NDArray]) -> tuple[NDArray, NDArray]:
        off = np.concatenate([[0], np.cumsum([x.size for x in parts])]).astype(np.int64)
        flat = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
        return off, flat

    row_off, flat_rows = pack(rows)
    a_off, flat_a = pack(a_cnt)
    b_off, flat_b = pack(b_cnt)
    cell_off, flat_codes = pack(codes)
    return _LevelTables(n, row_off, flat_rows, cols, s_obs, tau, matching, a_off, flat_a, b_off,
                        flat_b, cell_off, flat_codes, n_levels)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class _ValueLookups:
    """Per model, each item's index among its distinct confidence values; per pair, the dconf
    level of every (A value, B value): what the compiled joint draws read (real-valued).

    Attributes:
        codes: ``(M, N)`` value index of each item.
        lut_off: ``(P + 1,)`` offsets of each pair's table in ``lut``.
        lut: Level of (A's value i, B's value j) at ``i * stride + j``.
        stride: ``(P,)`` B's number of distinct values.
        n_levels: ``(P,)`` distinct dconf values over the pair's table.
    """

    codes: NDArray[np.int64]
    lut_off: NDArray[np.int64]
    lut: NDArray[np.int64]
    stride: NDArray[np.int64]
    n_levels: NDArray[np.int64]


def _value_lookups(
    c: NDArray, ia: NDArray, ib: NDArray, present: NDArray | None = None
) -> _ValueLookups | None:
    """The :class:`_ValueLookups` of ``(N, M)`` confidence, or None when a pair's table would
    have more than 2**16 cells or more dconf levels than 4 per item (near-continuous values:
    the sorted path is cheaper). With ``present`` (``(N, M)``), a model's values are those of
    the items it answered; its missing items get code 0 and must not be read."""
    n_items, m = c.shape
    values, codes = [], np.zeros((m, n_items), dtype=np.int64)
    for j in range(m):
        rows = slice(None) if present is None else present[:, j]
        v, inv = np.unique(c[rows, j], return_inverse=True)
        values.append(v)
        codes[j, rows] = inv.ravel()
    sizes = np.array([v.size for v in values])
    if ia.size and (sizes[ia] * sizes[ib]).max() > _MAX_CELLS:
        return None
    luts, n_levels = [], np.zeros(ia.size, dtype=np.int64)
    for k, (a, b) in enumerate(zip(ia, ib)):
        levels, inv = np.unique(value_ties(values[a][:, None] - values[b][None, :]),
                                return_inverse=True)  # fmt: skip
        if levels.size > _LEVELS_PER_ITEM * n_items:
            return None
        luts.append(inv.ravel())
        n_levels[k] = levels.size
    off = np.concatenate([[0], np.cumsum([t.size for t in luts])]).astype(np.int64)
    lut = np.concatenate(luts).astype(np.int64) if luts else np.zeros(0, np.int64)
    return _ValueLookups(codes, off, lut, sizes[ib].astype(np.int64), n_levels)
