"""Pairwise-complete items: each pair on the items both models answered.

Real multi-model runs are ragged: a model that lacks some items should cost only its own pairs
those items, not every pair. Here an items x models matrix may hold NaN (a model's missing
item); every pair's tau-b is computed on the items both models of the pair have, and

* the per-pair tests run on exactly those items: the pairs are grouped by their set of shared
  items, and each group goes to the per-pair engine of :mod:`metacog_metrics.pairwise.pair` as
  a complete sub-matrix (so every engine, binary or real-valued, applies unchanged);
* the joint draws (for the null of the mean over pairs) shuffle each model's values among the
  items *it* answered (its missing items stay missing, in place), on the union of items, and
  recompute every pair on its own shared items; this keeps the dependence between pairs that
  share a model, as with complete data.

The tables of all pairs come from co-occurrence counts as in :mod:`metacog_metrics.pairwise.tau`
with three more counts (the confidence and correctness of one model on the items the other
answered, and the shared item counts), so no step loops over pairs or items in Python.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics.pairwise.common import _ELEMENTS_PER_CHUNK
from metacog_metrics.pairwise.samplers import _exact_counts, _random_bits, _threshold
from metacog_metrics.pairwise.tau import (
    _dconf,
    _pack,
    _popcount_gram,
    _tau_b_sorted,
    _tau_b_tables,
    _tau_from_ties,
)

__all__ = [
    "check_ragged",
    "masked_binary_tables",
    "masked_category_counts",
    "masked_taus",
    "pair_item_groups",
    "shared_counts",
    "shuffled_binary_masked",
    "shuffled_values_masked",
]


def shared_counts(present: NDArray[np.bool_]) -> NDArray[np.int64]:
    """``(M, M)`` number of items both models answered, from ``(N, M)`` presence."""
    v = present.astype(np.float32)
    return np.rint(v.T @ v).astype(np.int64)


def pair_item_groups(
    present: NDArray[np.bool_], ia: NDArray, ib: NDArray
) -> list[tuple[NDArray[np.bool_], NDArray[np.intp]]]:
    """Pairs grouped by their set of shared items: ``[(item mask, pair indices), ...]``.

    Pairs with identical shared items (e.g. every pair of two fully covered models) form one
    group, so the per-pair engine runs once per distinct item set. Groups come in the order
    of their first pair.
    """
    shared = present[:, ia] & present[:, ib]  # (N, P)
    packed = np.packbits(shared, axis=0)  # (ceil(N / 8), P)
    keys = np.ascontiguousarray(packed.T).view(np.dtype((np.void, packed.shape[0]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    label = rank[inverse.ravel()]
    groups = []
    for g in range(order.size):
        pairs = np.flatnonzero(label == g)
        groups.append((shared[:, pairs[0]].copy(), pairs))
    return groups


# --------------------------------------------------------------------------------------------
# Binary confidence: tables of every pair on its shared items
# --------------------------------------------------------------------------------------------


def masked_binary_tables(
    cb: NDArray[np.bool_], pb: NDArray[np.bool_], vb: NDArray[np.bool_], ia: NDArray, ib: NDArray
) -> NDArray[np.int64]:
    """(dconf, dperf) 3x3 tables of pairs (ia, ib), each on the items both models have.

    Args:
        cb: ``(..., M, N)`` confidence bits, False where the model lacks the item.
        pb: ``(..., M, N)`` correctness bits, False where the model lacks the item.
        vb: ``(M, N)`` presence bits (broadcast against the leading axes).
        ia: First model of each pair.
        ib: Second model of each pair.

    Returns:
        ``(..., P, 3, 3)`` tables. With every item present they equal the complete-data tables
        of :func:`metacog_metrics.pairwise.tau._tables_from_bits`.
    """
    c, p = _pack(cb), _pack(pb)
    v = np.broadcast_to(_pack(vb), c.shape)
    e11 = c & p
    a = _popcount_gram(e11, v & ~(c | p))  # A in (1,1), B in (0,0); B's items only
    b = _popcount_gram(c & ~p, ~c & p)  # A in (1,0), B in (0,1)
    cc = _popcount_gram(c, c, symmetric=True)
    pp = _popcount_gram(p, p, symmetric=True)
    cv = _popcount_gram(c, v)  # A's yes on B's items
    pv = _popcount_gram(p, v)  # A's correct on B's items
    nn = _popcount_gram(v, v, symmetric=True)
    t = np.empty((*a.shape[:-2], ia.size, 3, 3), dtype=np.int64)
    t[..., 2, 2] = a[..., ia, ib]
    t[..., 0, 0] = a[..., ib, ia]
    t[..., 2, 0] = b[..., ia, ib]
    t[..., 0, 2] = b[..., ib, ia]
    r2 = cv[..., ia, ib] - cc[..., ia, ib]  # dconf = +1: A yes, B no, on shared items
    r0 = cv[..., ib, ia] - cc[..., ia, ib]  # dconf = -1
    c2 = pv[..., ia, ib] - pp[..., ia, ib]
    c0 = pv[..., ib, ia] - pp[..., ia, ib]
    t[..., 2, 1] = r2 - t[..., 2, 2] - t[..., 2, 0]
    t[..., 0, 1] = r0 - t[..., 0, 0] - t[..., 0, 2]
    t[..., 1, 2] = c2 - t[..., 2, 2] - t[..., 0, 2]
    t[..., 1, 0] = c0 - t[..., 0, 0] - t[..., 2, 0]
    t[..., 1, 1] = nn[..., ia, ib] - r2 - r0 - t[..., 1, 2] - t[..., 1, 0]
    return t


def masked_category_counts(
    c: NDArray, p: NDArray, present: NDArray[np.bool_]
) -> dict[str, NDArray[np.int64]]:
    """Per model, on its own items: items, yes count, correct count, correct among yes/no."""
    cb = (c > 0.5) & present
    pb = (p > 0.5) & present
    return {
        "n": present.sum(axis=0).astype(np.int64),
        "kc": cb.sum(axis=0).astype(np.int64),
        "kp": pb.sum(axis=0).astype(np.int64),
        "n11": (cb & pb).sum(axis=0).astype(np.int64),
        "n01": (~cb & pb & present).sum(axis=0).astype(np.int64),
    }


def shuffled_binary_masked(
    counts: Mapping[str, NDArray],
    present_t: NDArray[np.bool_],
    split: bool,
    n: int,
    rng: np.random.Generator,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """``n`` joint draws of the models x items 0/1 matrices, each model shuffled on its items.

    Every model's vector is a uniformly random arrangement of its own counts over the items it
    answered (its missing items stay False): with ``split`` conf and perf each on its own,
    else the (conf, perf) pairs together.

    Args:
        counts: :func:`masked_category_counts`.
        present_t: ``(M, N)`` presence.
        split: Confidence and correctness each on its own (else together).
        n: Draws.
        rng: Generator.

    Returns:
        ``(n, M, N)`` confidence and correctness bits.
    """
    m, n_items = present_t.shape
    elig = np.tile(present_t, (n, 1))  # (n M, N)
    kc = np.tile(counts["kc"], n)
    cs = _random_bits(n_items, kc, rng, eligible=elig)
    if split:
        ps = _random_bits(n_items, np.tile(counts["kp"], n), rng, eligible=elig)
    else:
        n11 = np.tile(counts["n11"], n)
        n01 = np.tile(counts["n01"], n)
        avail_no = np.tile(counts["n"], n) - kc
        no = elig & ~cs
        cut = np.where(cs, _threshold(n11, kc)[:, None], _threshold(n01, avail_no)[:, None])
        ps = (rng.integers(0, 65536, size=cs.shape, dtype=np.uint16) < cut) & elig
        in_yes = (ps & cs).sum(axis=1)
        in_no = ps.sum(axis=1) - in_yes
        _exact_counts(ps, in_yes, n11, kc, rng, cs)
        _exact_counts(ps, in_no, n01, avail_no, rng, no)
    shape = (n, m, n_items)
    return cs.reshape(shape), ps.reshape(shape)


# --------------------------------------------------------------------------------------------
# Real-valued confidence
# --------------------------------------------------------------------------------------------


def shuffled_values_masked(
    c: NDArray, p: NDArray, present: NDArray[np.bool_], split: bool, n: int,
    rng: np.random.Generator,
) -> tuple[NDArray, NDArray]:  # fmt: skip
    """``n`` joint draws for real-valued confidence, each model permuted among its own items
    (``split``: its confidence and its correctness each on its own, else together).

    ``argsort`` of uniform keys (``inf`` on missing items) lists a model's present items in a
    random order, then its missing ones in item order; a stable ``argsort`` of "missing" lists
    its present items in item order, then the missing ones. Writing the first through the
    second permutes the present items uniformly and leaves the missing ones in place.

    Returns:
        ``(n, N, M)`` confidence and correctness (NaN on missing items).
    """
    n_items, m = c.shape
    pres = present.T  # (M, N)
    base = np.argsort(~pres, axis=-1, kind="stable")  # present items first, in item order

    def permutation() -> NDArray[np.intp]:
        keys = np.where(pres[None], rng.random((n, m, n_items)), np.inf)
        order = np.argsort(keys, axis=-1, kind="stable")
        idx = np.empty((n, m, n_items), dtype=np.intp)
        np.put_along_axis(idx, np.broadcast_to(base, idx.shape), order, axis=-1)
        return idx  # item i takes the value of item idx[i]

    ct, pt = c.T[None], p.T[None]
    if split:
        cs = np.take_along_axis(np.broadcast_to(ct, (n, m, n_items)), permutation(), axis=-1)
        ps = np.take_along_axis(np.broadcast_to(pt, (n, m, n_items)), permutation(), axis=-1)
    else:
        idx = permutation()
        cs = np.take_along_axis(np.broadcast_to(ct, (n, m, n_items)), idx, axis=-1)
        ps = np.take_along_axis(np.broadcast_to(pt, (n, m, n_items)), idx, axis=-1)
    return np.swapaxes(cs, 1, 2), np.swapaxes(ps, 1, 2)


def _tau_b_columns(t: NDArray) -> NDArray:
    """tau-b of ``(..., 3, L)`` integer tables: three dperf columns over L ordered dconf rows.

    With three columns Kendall's S is one pass over the rows: a row's cells in column 1 are
    concordant with earlier rows' column 0 and discordant with their column 2, column 2 is
    concordant with earlier columns 0 and 1, column 0 discordant with earlier 1 and 2. Integer
    throughout (exact), on contiguous rows; equal to :func:`tau_b_from_table` on the L x 3
    table (checked in the tests), and several times faster than its generic cumulative sums.
    """
    t = t.astype(np.int64, copy=False)
    before = np.cumsum(t, axis=-1) - t  # per column: counts in strictly earlier rows
    a0, a1, a2 = before[..., 0, :], before[..., 1, :], before[..., 2, :]
    n0, n1, n2 = t[..., 0, :], t[..., 1, :], t[..., 2, :]
    s = (n1 * (a0 - a2) + n2 * (a0 + a1) - n0 * (a1 + a2)).sum(axis=-1)
    rows = n0 + n1 + n2
    cols = t.sum(axis=-1)
    n = rows.sum(axis=-1)
    tied_rows = (rows * (rows - 1) // 2).sum(axis=-1)
    tied_cols = (cols * (cols - 1) // 2).sum(axis=-1)
    return _tau_from_ties(s.astype(float), (n * (n - 1) // 2).astype(float),
                          tied_rows.astype(float), tied_cols.astype(float))  # fmt: skip


def _tau_b_codes_masked(dx: NDArray, dy: NDArray, n_levels: int) -> NDArray:
    """tau-b of (..., N) codes dx in [0, L) against dy in {0, 1, 2}; dy = 3 marks no item."""
    lead = dx.shape[:-1]
    rows = int(np.prod(lead)) if lead else 1
    flat = (np.arange(rows)[:, None] * (n_levels * 4) + dy.reshape(rows, -1) * n_levels
            + dx.reshape(rows, -1)).ravel()  # fmt: skip
    tables = np.bincount(flat, minlength=rows * n_levels * 4).reshape(rows, 4, n_levels)
    return _tau_b_columns(tables[:, :3]).reshape(lead)


def masked_code_taus(
    codes_t: NDArray, y_t: NDArray, both: NDArray[np.bool_], ia: NDArray, ib: NDArray, q: int
) -> NDArray:
    """tau-b of grid-coded confidence, pairs on their shared items, in models x items layout.

    Args:
        codes_t: ``(..., M, N)`` integer confidence codes (``conf * q``; any value where missing).
        y_t: ``(..., M, N)`` 0/1 correctness (any value where missing), small integers.
        both: ``(P, N)`` whether both models of each pair answered each item.
        ia: First model of each pair.
        ib: Second model of each pair.
        q: Grid denominator (codes differ by at most ``q``).

    Returns:
        ``(..., P)`` tau-b. One bincount of ``4 x L`` cells per pair, the fourth dperf row
        collecting the items the pair does not share; small integer types keep it lean.
    """
    n_levels = 2 * q + 1
    lead = codes_t.shape[:-2]
    rows = int(np.prod(lead, dtype=np.int64)) * ia.size
    wide = np.int32 if rows * n_levels * 4 < 2**31 else np.int64
    dy = (y_t[..., ia, :] - y_t[..., ib, :] + 1).astype(wide)
    dy = np.where(both, dy, 3)
    key = (codes_t[..., ia, :] - codes_t[..., ib, :] + q).astype(wide)
    key += dy * n_levels
    key += (np.arange(rows, dtype=np.int64).reshape(*lead, ia.size, 1) * (n_levels * 4)).astype(
        wide
    )
    tables = np.bincount(key.ravel(), minlength=rows * n_levels * 4).reshape(rows, 4, n_levels)
    return _tau_b_columns(tables[:, :3]).reshape(*lead, ia.size)


def _tau_b_sorted_masked(x: NDArray, y: NDArray) -> NDArray:
    """Exact tau-b of (..., N) real x against y in {0, 1, 2} over the items with y < 3: the
    missing items (y = 3) are sorted last (x = inf) and left out by :func:`_tau_b_sorted`."""
    return _tau_b_sorted(np.where(y == 3, np.inf, x), y)


def _masked_continuous(
    c: NDArray, p: NDArray, ia: NDArray, ib: NDArray, grid: tuple[NDArray, int] | None
) -> NDArray:
    """(..., P) tau-b of real-valued confidence; NaN cells are missing items."""
    both = ~np.isnan(c[..., ia]) & ~np.isnan(c[..., ib])  # (..., N, P)
    dyv = np.nan_to_num(p[..., ia] - p[..., ib]) + 1
    dy = np.swapaxes(np.where(both, np.rint(dyv), 3).astype(np.int64), -1, -2)
    if grid is not None and 3 * (2 * grid[1] + 1) <= c.shape[-2]:
        codes, q = grid
        dx = np.swapaxes(np.where(both, codes[..., ia] - codes[..., ib], 0), -1, -2) + q
        return _tau_b_codes_masked(dx, dy, 2 * q + 1)
    x = np.swapaxes(np.where(both, _dconf(np.nan_to_num(c), ia, ib), 0.0), -1, -2)
    return _tau_b_sorted_masked(x, dy)


def masked_taus(
    c: NDArray, p: NDArray, ia: NDArray, ib: NDArray, grid: tuple[NDArray, int] | None
) -> NDArray:
    """Real-valued tau-b of every pair on its shared items, over pair chunks: (..., P).

    Args:
        c: ``(..., N, M)`` confidence, NaN on missing items.
        p: ``(..., N, M)`` correctness, NaN on missing items.
        ia: First model of each pair.
        ib: Second model of each pair.
        grid: Integer codes ``(codes, Q)`` of the confidence grid (NaN cells: any code), or
            None.
    """
    n = c.shape[-2]
    lead = int(np.prod(c.shape[:-2])) if c.ndim > 2 else 1
    step = max(1, _ELEMENTS_PER_CHUNK // max(1, n * lead))
    parts = [
        _masked_continuous(c, p, ia[s : s + step], ib[s : s + step], grid)
        for s in range(0, ia.size, step)
    ]
    return np.concatenate(parts, axis=-1) if parts else np.zeros((*c.shape[:-2], 0))


def masked_grid(c: NDArray) -> tuple[NDArray, int] | None:
    """:func:`metacog_metrics.pairwise.tau._grid` of the present values (NaN cells code 0)."""
    from metacog_metrics.pairwise.tau import _grid

    ok = ~np.isnan(c)
    found = _grid(c[ok])
    # the code paths count differences of codes in [-q, q]: confidence outside [0, 1] (e.g.
    # percentages) takes the sort path
    if found is None or (found[0].size and (found[0].min() < 0 or found[0].max() > found[1])):
        return None
    codes = np.zeros(c.shape, dtype=np.int64)
    codes[ok] = found[0]
    return codes, found[1]


def observed_tables_or_taus(
    c: NDArray, p: NDArray, present: NDArray[np.bool_], binary: bool, ia: NDArray, ib: NDArray
) -> NDArray:
    """Observed tau-b of every pair on its shared items (binary via tables)."""
    if binary:
        t = masked_binary_tables(
            ((c > 0.5) & present).T, ((p > 0.5) & present).T, present.T, ia, ib
        )
        return _tau_b_tables(t)
    cn = np.where(present, c, np.nan)
    pn = np.where(present, p, np.nan)
    return masked_taus(cn, pn, ia, ib, masked_grid(cn))


def check_ragged(conf: ArrayLike, perf: ArrayLike) -> tuple[NDArray, NDArray, NDArray, bool]:
    """Validate (items, models) arrays that may have missing items (NaN).

    A cell is present when both its confidence and its grade are; present grades must be 0/1.

    Returns:
        Confidence and correctness (0 on missing cells), the ``(N, M)`` presence mask, and
        whether every present confidence is 0 or 1.

    Raises:
        ValueError: On mismatched shapes, infinite confidence or grades other than 0/1.
    """
    c = np.asarray(conf, dtype=float)
    p = np.asarray(perf, dtype=float)
    if c.shape != p.shape:
        raise ValueError(f"conf {c.shape} and perf {p.shape} must have the same shape")
    if c.ndim != 2 or c.shape[-1] < 2 or c.shape[-2] < 2:
        raise ValueError(f"need (items >= 2, models >= 2) arrays, got shape {c.shape}")
    present = ~np.isnan(c) & ~np.isnan(p)
    if np.isinf(c[present]).any():
        raise ValueError("conf has infinite values")
    if not np.isin(p[present], (0.0, 1.0)).all():
        raise ValueError("perf must hold only 0 and 1 (NaN for a missing item)")
    binary = bool(np.isin(c[present], (0.0, 1.0)).all())
    return np.where(present, c, 0.0), np.where(present, p, 0.0), present, binary
