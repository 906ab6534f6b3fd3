"""Pairwise-complete items: each pair on the items both models answered.

Real multi-model runs are ragged: a model that lacks some items should cost only its own pairs
those items, not every pair. Here an items x models matrix may hold NaN (a model's missing
item); every pair's tau-b is computed on the items both models of the pair have, and

* the per-pair tests run on exactly those items: the pairs are grouped by their set of shared
  items, and each group goes to the per-pair engine of :mod:`metacog_metrics.pairwise.pair` as
  a complete sub-matrix (so every engine, binary or real-valued, applies unchanged);
* the joint draws (for the null of the mean over pairs) permute each model among the items *it*
  answered (its missing items stay missing, in place), and every pair sees each of its two
  models' own values on the pair's shared items, re-laid on those items in the order that
  model's permutation gives them (:func:`pair_view`): each pair's draw is then a permutation
  of its shared items, as in its per-pair null, while the pairs that share a model are drawn
  together through its one permutation (the dependence the null of the mean needs).

The observed tables of all pairs come from co-occurrence counts as in
:mod:`metacog_metrics.pairwise.tau` with three more counts (the confidence and correctness of
one model on the items the other answered, and the shared item counts), so no step loops over
pairs or items in Python.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import value_ties
from metacog_metrics.pairwise.common import _ELEMENTS_PER_CHUNK
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
    "landing_orders",
    "masked_binary_tables",
    "masked_taus",
    "pair_item_groups",
    "pair_view",
    "pair_views",
    "shared_counts",
    "view_taus",
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


# --------------------------------------------------------------------------------------------
# Joint draws: each pair sees its models' own values on its shared items
# --------------------------------------------------------------------------------------------


def pair_view(values: NDArray, came_from: NDArray, shared: NDArray[np.bool_]) -> NDArray:
    """One model's values in a pair's joint draw (the reference definition).

    In the draw the model's value on item ``i`` comes from item ``came_from[i]`` (a permutation
    of the items it answered). The pair sees, on its shared items, the model's own values on
    those items, taken in the order in which the permutation lands them and laid on the shared
    items in item order: a uniformly random permutation of the model's values on the shared
    items, the same one for every pair the model is in wherever their shared items agree, and
    the permuted values themselves when the shared items are all the model answered.

    Args:
        values: ``(N,)`` the model's values (anything where it has no item).
        came_from: ``(N,)`` where each value comes from in the draw.
        shared: ``(N,)`` the items both models of the pair answered.

    Returns:
        ``(N,)``: the values the pair sees on its shared items, ``values`` elsewhere.

    >>> values = np.array([10.0, 11.0, 12.0, 13.0])
    >>> came_from = np.array([2, 0, 3, 1])  # the values of items 2, 0, 3, 1 land on 0, 1, 2, 3
    >>> pair_view(values, came_from, np.ones(4, dtype=bool)).tolist()  # all shared: permuted
    [12.0, 10.0, 13.0, 11.0]
    >>> pair_view(values, came_from, np.array([True, False, True, True])).tolist()
    [12.0, 11.0, 10.0, 13.0]
    """
    lands = np.empty(came_from.size, dtype=np.intp)
    lands[came_from] = np.arange(came_from.size)  # where each item's value lands
    items = np.flatnonzero(shared)
    out = np.array(values, dtype=float, copy=True)
    out[items] = values[items[np.argsort(lands[items], kind="stable")]]
    return out


def landing_orders(present_t: NDArray[np.bool_], rng: np.random.Generator) -> NDArray[np.int32]:
    """One joint draw's permutation of every model, as landing orders: ``(M, N)``, row ``m``
    the items model ``m`` answered in a uniformly random order (the value of the ``k``-th
    lands on its ``k``-th item), then the items it lacks."""
    keys = np.where(present_t, rng.random(present_t.shape), np.inf)
    return np.argsort(keys, axis=-1, kind="stable").astype(np.int32)


def pair_views(
    landed: tuple[NDArray, ...], order: NDArray, present_t: NDArray[np.bool_], model: NDArray,
    partner: NDArray,
) -> list[NDArray]:  # fmt: skip
    """:func:`pair_view` of one model of each pair, flat: every pair's values on its shared
    items in the order the model's permutation lands them, pair after pair (the views of the
    pair's other model, made the same way, line up with them element by element).

    Args:
        landed: ``(M, N)`` arrays of each model's values in the landing order ``order``
            (``np.take_along_axis(values, order, axis=1)``; confidence and correctness when
            they move together).
        order: ``(M, N)`` :func:`landing_orders` of the draw.
        present_t: ``(M, N)`` presence.
        model: ``(P,)`` the model of each pair whose view this is.
        partner: ``(P,)`` the other model of each pair.

    Returns:
        For each of ``landed``, ``(sum of the pairs' shared items,)`` values.
    """
    n_items = present_t.shape[1]
    where = order[model] + (partner.astype(np.int32) * n_items)[:, None]
    keep = np.take(present_t.ravel(), where)
    keep &= np.arange(n_items) < present_t.sum(axis=1)[model][:, None]  # the model's items
    return [values[model][keep] for values in landed]


def view_taus(
    ca: NDArray, pa: NDArray, cb: NDArray, pb: NDArray, sizes: NDArray, levels: int | None
) -> NDArray:  # fmt: skip
    """tau-b of flat pair views (:func:`pair_views`), ``sizes`` items a pair: ``(P,)``.

    ``levels``: with integer confidence codes in ``[0, levels)`` (binary: 2), one table of
    code differences per pair; None: the exact sorted path on the real values.
    """
    n_pairs = sizes.size
    dy = (pa - pb + 1).astype(np.int64)  # 0/1 correctness: exact
    if levels is not None:
        width = 2 * levels - 1
        pair = np.repeat(np.arange(0, n_pairs * 3 * width, 3 * width, dtype=np.int64), sizes)
        flat = dy * width + (ca - cb + (levels - 1)).astype(np.int64) + pair  # integer codes
        tables = np.bincount(flat, minlength=n_pairs * 3 * width).reshape(n_pairs, 3, width)
        return _tau_b_columns(tables)
    # sorted path: pad each pair's views to the longest (dy = 3 past a pair's items)
    n = int(sizes.max(initial=0))
    x = np.zeros((n_pairs, n))
    y = np.full((n_pairs, n), 3, dtype=np.int64)
    at = np.arange(n) < sizes[:, None]
    x[at], y[at] = value_ties(ca - cb), dy
    return _tau_b_sorted_masked(x, y)


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
