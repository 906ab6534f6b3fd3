"""Pairwise-complete items (``metacog_metrics.pairwise.masked``), function by function.

Expected values come from outside the module: tables and counts tallied item by item in plain
Python, SciPy's ``kendalltau`` on each pair's shared items, the shared item sets compared as
Python sets, and the laws of a pair's views in a joint draw from enumeration (every
permutation of a model's present items) checked by chi-square.
NumPy and SciPy only; the whole file runs in seconds.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.pairwise import masked as mk
from tests.exact_laws import chi2_p

# --------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------


def _scipy_tau(x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return stats.kendalltau(x, y).statistic


def _ragged(n, m, seed, *, binary=True, missing=0.3, decimals=1):
    rng = np.random.default_rng(seed)
    p = (rng.random((n, m)) < 0.6).astype(float)
    c = (
        (rng.random((n, m)) < 0.5).astype(float)
        if binary
        else np.round(rng.random((n, m)), decimals)
    )
    gone = rng.random((n, m)) < missing
    c[gone] = np.nan
    p[gone] = np.nan
    return c, p


def _shared(c, a, b):
    return ~np.isnan(c[:, a]) & ~np.isnan(c[:, b])


def _brute_table(c, p, a, b):
    t = np.zeros((3, 3), dtype=np.int64)
    for i in np.flatnonzero(_shared(c, a, b)):
        t[int(c[i, a] - c[i, b]) + 1, int(p[i, a] - p[i, b]) + 1] += 1
    return t


def _pair_tau(c, p, a, b):
    ok = _shared(c, a, b)
    return _scipy_tau(np.round(c[ok, a] - c[ok, b], 12), p[ok, a] - p[ok, b])


def _same(got, want):
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def _bits(c, p):
    present = ~np.isnan(c)
    cb = (np.nan_to_num(c) > 0.5) & present
    pb = (np.nan_to_num(p) > 0.5) & present
    return cb.T, pb.T, present.T


# --------------------------------------------------------------------------------------------
# Shared items and pair groups
# --------------------------------------------------------------------------------------------


def test_shared_counts_by_hand():
    present = np.array([[1, 1, 0], [1, 0, 1], [1, 1, 1], [0, 1, 1]], dtype=bool)
    got = mk.shared_counts(present)
    assert got.dtype == np.int64
    want = [[sum(present[i, a] and present[i, b] for i in range(4)) for b in range(3)]
            for a in range(3)]  # fmt: skip
    assert got.tolist() == want == [[3, 2, 2], [2, 3, 2], [2, 2, 3]]


def test_pair_item_groups_by_shared_item_sets_in_order_of_first_pair():
    # 10 items (two bytes of bits), 4 models: models 0 and 1 complete
    present = np.ones((10, 4), dtype=bool)
    present[[2, 9], 2] = False
    present[[9], 3] = False
    ia, ib = np.array([2, 0, 1, 0, 2, 1]), np.array([3, 1, 3, 2, 0, 2])
    groups = mk.pair_item_groups(present, ia, ib)
    sets = [frozenset(np.flatnonzero(present[:, a] & present[:, b])) for a, b in zip(ia, ib)]
    want_order = list(dict.fromkeys(sets))  # distinct sets in order of first appearance
    assert len(groups) == len(want_order) == 3
    for (mask, pairs), s in zip(groups, want_order):
        assert mask.dtype == bool and mask.shape == (10,)
        assert frozenset(np.flatnonzero(mask)) == s
        assert pairs.tolist() == [k for k, t in enumerate(sets) if t == s]


def test_pair_item_groups_tell_apart_sets_differing_past_the_first_byte():
    present = np.ones((12, 3), dtype=bool)
    present[11, 2] = False  # the 12th item: in the second byte
    groups = mk.pair_item_groups(present, np.array([0, 0, 1]), np.array([1, 2, 2]))
    assert [g[1].tolist() for g in groups] == [[0], [1, 2]]
    assert groups[1][0].sum() == 11 and not groups[1][0][11]


# --------------------------------------------------------------------------------------------
# Binary tables and counts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 9, 64, 70])
def test_masked_binary_tables_equal_tallies_on_shared_items(n):
    c, p = _ragged(n, 4, n)
    ia, ib = np.array([0, 1, 3, 2, 0]), np.array([1, 0, 2, 3, 3])
    t = mk.masked_binary_tables(*_bits(c, p), ia, ib)
    assert t.dtype == np.int64 and t.shape == (5, 3, 3)
    for k, (a, b) in enumerate(zip(ia, ib)):
        np.testing.assert_array_equal(t[k], _brute_table(c, p, a, b))


def test_masked_binary_tables_of_a_batch_share_one_presence_mask():
    c, p = _ragged(20, 3, 1)
    c2 = np.where(np.isnan(c), np.nan, 1 - c)
    cb, pb, vb = _bits(c, p)
    cb2 = _bits(c2, p)[0]
    ia, ib = np.triu_indices(3, k=1)
    t = mk.masked_binary_tables(np.stack([cb, cb2]), np.stack([pb, pb]), vb, ia, ib)
    assert t.shape == (2, 3, 3, 3)
    for k, (a, b) in enumerate(zip(ia, ib)):
        np.testing.assert_array_equal(t[0, k], _brute_table(c, p, a, b))
        np.testing.assert_array_equal(t[1, k], _brute_table(c2, p, a, b))


# --------------------------------------------------------------------------------------------
# A pair's views in a joint draw
# --------------------------------------------------------------------------------------------


def _view_by_hand(values, came_from, shared):
    """The definition item by item: the shared items sorted by where their value lands, their
    values laid on the shared items in item order."""
    lands = {int(src): at for at, src in enumerate(came_from)}
    items = [i for i in range(len(values)) if shared[i]]
    by_landing = sorted(items, key=lambda i: lands[i])
    out = list(values)
    for at, src in zip(items, by_landing):
        out[at] = values[src]
    return out


def test_pair_view_by_hand():
    values = np.array([10.0, 11.0, 12.0, 13.0, 14.0])
    came_from = np.array([3, 1, 0, 4, 2])  # a permutation of all five items
    for shared in itertools.product([False, True], repeat=5):
        shared = np.array(shared)
        got = mk.pair_view(values, came_from, shared)
        assert got.tolist() == _view_by_hand(values, came_from, shared)
        assert sorted(got[shared]) == sorted(values[shared])  # the model's own values there
    # all shared: the permuted values themselves
    assert mk.pair_view(values, came_from, np.ones(5, bool)).tolist() == values[came_from].tolist()
    # a model that lacks item 1 (it stays in place) seen with a partner that lacks item 4
    came_from = np.array([3, 1, 4, 0, 2])
    assert mk.pair_view(values, came_from, np.array([1, 0, 1, 1, 0], bool)).tolist() == [
        13.0, 11.0, 10.0, 12.0, 14.0]  # fmt: skip


def test_pair_view_is_a_uniform_permutation_of_the_shared_values():
    # a model answered items 0-4 (not 5); its pair shares items 0, 2, 3 and 4: over its
    # uniformly random permutations, the view on the shared items is each of the 4! orders of
    # its values there equally often, whatever the values of the items the pair lacks
    rng = np.random.default_rng(5)
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    shared = np.array([True, False, True, True, True, False])
    own = np.arange(5)
    seen = []
    support = list(itertools.permutations([1.0, 3.0, 4.0, 5.0]))
    for _ in range(4000):
        came_from = np.arange(6)
        came_from[own] = rng.permutation(own)
        view = mk.pair_view(values, came_from, shared)
        assert view[1] == 2.0 and view[5] == 6.0
        seen.append(support.index(tuple(view[shared])))
    assert chi2_p(np.array(seen), np.arange(24), np.full(24, 1 / 24)) > 1e-3


def test_landing_orders_list_own_items_uniformly_then_the_missing_ones():
    present = np.array([[1, 0, 1, 1], [0, 1, 1, 0]], dtype=bool)
    rng = np.random.default_rng(2)
    firsts = []
    for _ in range(3000):
        order = mk.landing_orders(present, rng)
        assert order.dtype == np.int32 and order.shape == (2, 4)
        assert sorted(order[0, :3]) == [0, 2, 3] and order[0, 3] == 1
        assert sorted(order[1, :2]) == [1, 2] and order[1, 2:].tolist() == [0, 3]
        firsts.append(int(order[0, 0]))
    assert chi2_p(np.array(firsts), np.array([0, 2, 3]), np.full(3, 1 / 3)) > 1e-3


def test_pair_views_line_up_with_the_reference_view_of_each_pair():
    rng = np.random.default_rng(8)
    n, m = 23, 4
    present = rng.random((n, m)) < 0.7
    present[:, 0] = True
    values = np.round(rng.random((n, m)), 1)
    order = mk.landing_orders(present.T, rng)
    landed = np.take_along_axis(values.T, order, axis=1)
    ia, ib = np.triu_indices(m, 1)
    for who, other in ((ia, ib), (ib, ia)):
        (flat,) = mk.pair_views((landed,), order, present.T, who, other)
        at = 0
        for a, b in zip(who, other):
            shared = present[:, a] & present[:, b]
            came_from = np.arange(n)  # the model's permutation: own items in landing order
            came_from[np.flatnonzero(present[:, a])] = order[a, : present[:, a].sum()]
            want = _view_by_hand(values[:, a], came_from, shared)
            got = flat[at : at + shared.sum()].tolist()
            assert got == [want[i] for i in np.flatnonzero(shared)]
            at += shared.sum()
        assert at == flat.size


@pytest.mark.parametrize("levels", [2, 3, None])
def test_view_taus_equal_scipy_on_each_pairs_views(levels):
    rng = np.random.default_rng(levels or 0)
    sizes = np.array([7, 1, 12, 0, 9])
    total = sizes.sum()
    top = (levels or 10) - 1
    ca, cb = (rng.integers(0, top + 1, total).astype(float) for _ in range(2))
    if levels is None:
        ca, cb = ca / 10 + 0.013, cb / 10
    pa, pb = (rng.integers(0, 2, total).astype(float) for _ in range(2))
    got = mk.view_taus(ca, pa, cb, pb, sizes, levels)
    at = 0
    for k, size in enumerate(sizes):
        sl = slice(at, at + size)
        want = _scipy_tau(np.round(ca[sl] - cb[sl], 12), pa[sl] - pb[sl]) if size > 1 else np.nan
        if math.isnan(want):
            assert math.isnan(got[k])
        else:
            assert got[k] == pytest.approx(want, rel=1e-12)
        at += size


# --------------------------------------------------------------------------------------------
# tau-b on shared items
# --------------------------------------------------------------------------------------------


def test_tau_b_columns_equals_scipy_on_the_expanded_table():
    rng = np.random.default_rng(2)
    for levels in (1, 2, 5):
        t = rng.integers(0, 4, size=(3, 3, levels))  # (batch, 3 dperf, L dconf)
        got = mk._tau_b_columns(t)
        assert got.shape == (3,)
        for b in range(3):
            xs = [lv for col in range(3) for lv in range(levels) for _ in range(t[b, col, lv])]
            ys = [col for col in range(3) for lv in range(levels) for _ in range(t[b, col, lv])]
            want = _scipy_tau(np.array(xs), np.array(ys))
            if math.isnan(want):
                assert math.isnan(got[b])
            else:
                assert got[b] == pytest.approx(want, rel=1e-12, abs=1e-15)
    # by hand: dconf rows 0 < 1, dperf 0 < 2; S = 2 * 3 - 1 * 1 = 5 on 7 items
    t = np.array([[2, 1], [0, 1], [1, 3]])  # columns of dperf 0, 1, 2 over 2 dconf levels
    xs = [0, 0, 1, 1, 0, 1, 1, 1]
    ys = [0, 0, 0, 1, 2, 2, 2, 2]
    assert mk._tau_b_columns(t) == pytest.approx(_scipy_tau(np.array(xs), np.array(ys)))


def test_tau_b_codes_masked_leaves_out_dy_three():
    rng = np.random.default_rng(4)
    dx = rng.integers(0, 5, size=(2, 3, 14))
    dy = rng.integers(0, 4, size=(2, 3, 14))
    got = mk._tau_b_codes_masked(dx, dy, 5)
    assert got.shape == (2, 3)
    for i, j in itertools.product(range(2), range(3)):
        ok = dy[i, j] < 3
        assert got[i, j] == pytest.approx(_scipy_tau(dx[i, j][ok], dy[i, j][ok]), rel=1e-12)
    one = mk._tau_b_codes_masked(dx[0, 0], dy[0, 0], 5)
    assert one.shape == () and one == pytest.approx(got[0, 0])


def test_tau_b_sorted_masked_ignores_the_values_of_missing_items():
    x = np.array([0.3, -5.0, 0.1, 0.2, 7.0])
    y = np.array([2, 3, 0, 1, 3])
    got = float(mk._tau_b_sorted_masked(x, y))
    assert got == pytest.approx(_scipy_tau(x[[0, 2, 3]], y[[0, 2, 3]]))


@pytest.mark.parametrize(("n", "decimals"), [(12, 1), (40, 1), (25, 3)])
def test_masked_taus_equal_scipy_on_shared_items(monkeypatch, n, decimals):
    c, p = _ragged(n, 4, n, binary=False, decimals=decimals)
    ia, ib = np.array([0, 1, 3, 2, 0, 1]), np.array([1, 0, 2, 3, 3, 2])
    grid = mk.masked_grid(c)
    got = mk.masked_taus(c, p, ia, ib, grid)
    for k, (a, b) in enumerate(zip(ia, ib)):
        _same(got[k], _pair_tau(c, p, a, b))
    np.testing.assert_allclose(mk.masked_taus(c, p, ia, ib, None), got, rtol=1e-12)
    monkeypatch.setattr(mk, "_ELEMENTS_PER_CHUNK", n * 2)  # two pairs a chunk
    np.testing.assert_allclose(mk.masked_taus(c, p, ia, ib, grid), got, rtol=1e-12)


@pytest.mark.parametrize("n", [62, 63])
def test_masked_continuous_takes_codes_when_each_level_has_three_items(monkeypatch, n):
    # a grid of tenths (q = 10): 21 dconf levels, codes from 63 items on
    c, p = _ragged(n, 3, 5, binary=False, decimals=1)
    calls = []
    codes = mk._tau_b_codes_masked
    monkeypatch.setattr(mk, "_tau_b_codes_masked", lambda *a: calls.append(a[2]) or codes(*a))
    ia, ib = np.array([0, 2]), np.array([1, 0])
    grid = mk.masked_grid(c)
    assert grid[1] == 10
    got = mk._masked_continuous(c, p, ia, ib, grid)
    assert calls == ([21] if n == 63 else [])
    for k, (a, b) in enumerate(zip(ia, ib)):
        _same(got[k], _pair_tau(c, p, a, b))


def test_masked_taus_of_a_batch_and_of_no_pairs(monkeypatch):
    c, p = _ragged(10, 3, 7, binary=False)
    c2 = np.where(np.isnan(c), np.nan, np.round(1 - c, 1))
    ia, ib = np.triu_indices(3, k=1)
    monkeypatch.setattr(mk, "_ELEMENTS_PER_CHUNK", 10 * 2 * 2)  # batch of 2: two pairs a chunk
    calls = []
    cont = mk._masked_continuous
    monkeypatch.setattr(mk, "_masked_continuous", lambda *a: calls.append(a[2].size) or cont(*a))
    got = mk.masked_taus(np.stack([c, c2]), np.stack([p, p]), ia, ib, None)
    assert got.shape == (2, 3) and calls == [2, 1]
    for k, (a, b) in enumerate(zip(ia, ib)):
        _same(got[1, k], _pair_tau(c2, p, a, b))
    empty = mk.masked_taus(c, p, np.zeros(0, np.intp), np.zeros(0, np.intp), None)
    assert empty.shape == (0,)
    assert mk.masked_taus(np.stack([c, c]), np.stack([p, p]), ia[:0], ib[:0], None).shape == (2, 0)


def test_masked_grid_codes_present_values_and_refuses_values_off_zero_to_one():
    c = np.array([[0.25, np.nan], [0.5, 1.0], [np.nan, 0.75]])
    codes, q = mk.masked_grid(c)
    assert q == 4 and codes.dtype == np.int64
    assert codes.tolist() == [[1, 0], [2, 4], [0, 3]]
    assert mk.masked_grid(np.array([[0.25, 2.0], [0.5, 1.0]])) is None  # code 8 > q = 4
    assert mk.masked_grid(np.array([[-0.5, 0.5], [0.5, 1.0]])) is None  # code -1
    assert mk.masked_grid(np.array([[0.0, 1.0], [1.0, 0.0]]))[1] == 1  # codes 0 and q are in
    assert mk.masked_grid(np.array([[np.pi / 10, 0.5], [0.5, 1.0]])) is None
    codes, q = mk.masked_grid(np.full((2, 2), np.nan))
    assert q == 1 and codes.tolist() == [[0, 0], [0, 0]]


def test_observed_taus_binary_and_real_valued():
    c, p = _ragged(30, 4, 2)
    ia, ib = np.triu_indices(4, k=1)
    cz, pz, present, binary = mk.check_ragged(c, p)
    assert binary
    got = mk.observed_tables_or_taus(cz, pz, present, True, ia, ib)
    for k, (a, b) in enumerate(zip(ia, ib)):
        _same(got[k], _pair_tau(c, p, a, b))
    c, p = _ragged(30, 4, 3, binary=False)
    cz, pz, present, binary = mk.check_ragged(c, p)
    assert not binary
    got = mk.observed_tables_or_taus(cz, pz, present, False, ia, ib)
    for k, (a, b) in enumerate(zip(ia, ib)):
        _same(got[k], _pair_tau(c, p, a, b))


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def test_check_ragged_returns_zeros_on_missing_cells_and_the_mask():
    c = np.array([[0.5, np.nan], [1.0, 0.0], [0.2, 0.3]])
    p = np.array([[1.0, 1.0], [np.nan, 0.0], [0.0, 1.0]])
    cz, pz, present, binary = mk.check_ragged(c, p)
    assert present.tolist() == [[True, False], [False, True], [True, True]]
    assert cz.tolist() == [[0.5, 0.0], [0.0, 0.0], [0.2, 0.3]]
    assert pz.tolist() == [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]
    assert binary is False
    # binary: only the present confidences count (a missing cell's 0.5 grade aside)
    _, _, _, binary = mk.check_ragged([[1, 0], [0, 0.5]], [[1, 0], [1, np.nan]])
    assert binary is True


@pytest.mark.parametrize(
    ("conf", "perf", "message"),
    [
        (np.zeros((3, 2)), np.zeros((3, 3)), r"^conf \(3, 2\) and perf \(3, 3\) must have the sa"),
        (np.zeros((1, 2)), np.zeros((1, 2)), r"^need \(items >= 2, models >= 2\) arrays, got sh"),
        (np.zeros((2, 1)), np.zeros((2, 1)), r"^need \(items >= 2, models >= 2\) arrays, got sh"),
        (np.zeros((2, 2, 2)), np.zeros((2, 2, 2)), r"^need \(items >= 2, models >= 2\)"),
        (np.zeros(4), np.zeros(4), r"^need \(items >= 2, models >= 2\)"),
        ([[np.inf, 0], [0, 1]], [[1, 0], [0, 1]], r"^conf has infinite values$"),
        ([[0, 0], [0, 1]], [[2, 0], [0, 1]], r"^perf must hold only 0 and 1 \(NaN for a missing"),
    ],
)
def test_check_ragged_errors(conf, perf, message):
    with pytest.raises(ValueError, match=message):
        mk.check_ragged(conf, perf)


def test_check_ragged_accepts_the_smallest_and_ignores_missing_cells_values():
    mk.check_ragged(np.zeros((2, 2)), np.zeros((2, 2)))
    # an infinite confidence or a grade of 2 on a missing cell (its other value NaN) is fine
    mk.check_ragged([[np.inf, 0], [0, 1]], [[np.nan, 0], [0, 1]])
    mk.check_ragged([[np.nan, 0], [0, 1]], [[2, 0], [0, 1]])


def test_masked_taus_pass_the_grid_on_one_pair_a_chunk_and_batches(monkeypatch):
    # a grid of halves (q = 2): 5 levels, 15 items -> the code path, also from a batch
    rng = np.random.default_rng(8)
    c = rng.integers(0, 3, size=(15, 3)) / 2
    p = (rng.random((15, 3)) < 0.5).astype(float)
    c[[1, 4], 0] = np.nan
    p[[1, 4], 0] = np.nan
    c[7, 2] = p[7, 2] = np.nan
    ia, ib = np.triu_indices(3, k=1)
    calls, coded = [], []
    cont, codes = mk._masked_continuous, mk._tau_b_codes_masked
    monkeypatch.setattr(mk, "_masked_continuous", lambda *a: calls.append(a[2].size) or cont(*a))
    monkeypatch.setattr(mk, "_tau_b_codes_masked", lambda *a: coded.append(a[2]) or codes(*a))
    monkeypatch.setattr(mk, "_ELEMENTS_PER_CHUNK", 10)  # fewer than 15 items: one pair a chunk
    got = mk.masked_taus(c, p, ia, ib, mk.masked_grid(c))
    assert calls == [1, 1, 1] and coded == [5, 5, 5]
    for k, (a, b) in enumerate(zip(ia, ib)):
        _same(got[k], _pair_tau(c, p, a, b))
    c2 = np.where(np.isnan(c), np.nan, 1 - c)
    cc = np.stack([c, c2])
    both = mk.masked_taus(cc, np.stack([p, p]), ia, ib, mk.masked_grid(cc))
    assert both.shape == (2, 3) and coded[-1] == 5
    for k, (a, b) in enumerate(zip(ia, ib)):
        _same(both[0, k], _pair_tau(c, p, a, b))
        _same(both[1, k], _pair_tau(c2, p, a, b))
    # the observed taus of real-valued pairs take the grid too
    coded.clear()
    cz, pz, present, binary = mk.check_ragged(c, p)
    got = mk.observed_tables_or_taus(cz, pz, present, binary, ia, ib)
    assert coded == [5, 5, 5]
    for k, (a, b) in enumerate(zip(ia, ib)):
        _same(got[k], _pair_tau(c, p, a, b))
