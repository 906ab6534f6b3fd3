"""Kendall's tau-b and the observed tables of model pairs (``metacog_metrics.pairwise.tau``),
function by function.

Every expected value comes from outside the module: SciPy's ``kendalltau`` on the expanded
data, Kendall's S by looking at every pair of items, tables and level counts tallied item by
item in plain Python, and the distinct values, categories and lookups of the real-valued
pairs built with dictionaries. The chunked and packed paths are forced with small chunk sizes
and item counts across 64-bit words. NumPy and SciPy only; the whole file runs in seconds.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.pairwise import tau as tm

# --------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------


def _sign(v):
    return int(v > 0) - int(v < 0)


def _brute_s(x, y):
    return sum(
        _sign(x[i] - x[j]) * _sign(y[i] - y[j]) for i, j in itertools.combinations(range(len(x)), 2)
    )


def _expand(table):
    """Items (row index, column index) of a count table."""
    t = np.asarray(table)
    xs, ys = [], []
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            xs += [i] * int(t[i, j])
            ys += [j] * int(t[i, j])
    return np.array(xs), np.array(ys)


def _scipy_tau(x, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return stats.kendalltau(x, y).statistic


def _table_tau(table):
    return _scipy_tau(*_expand(table))


def _brute_table(c, p, a, b):
    """The (dconf, dperf) 3x3 table of binary pair (a, b), item by item."""
    t = np.zeros((3, 3), dtype=np.int64)
    for i in range(c.shape[0]):
        t[int(c[i, a] - c[i, b]) + 1, int(p[i, a] - p[i, b]) + 1] += 1
    return t


def _random_binary(n, m, seed):
    rng = np.random.default_rng(seed)
    return (
        (rng.random((n, m)) < 0.5).astype(float),
        (rng.random((n, m)) < 0.6).astype(float),
    )


# --------------------------------------------------------------------------------------------
# tau-b of tables
# --------------------------------------------------------------------------------------------


def test_tau_b_from_table_equals_scipy_on_the_expanded_data():
    rng = np.random.default_rng(0)
    for shape in [(2, 2), (3, 3), (2, 5), (4, 3), (6, 2)]:
        for _ in range(4):
            t = rng.integers(0, 4, size=shape)
            t[0, 0] += 1
            t[-1, -1] += 1
            assert tm.tau_b_from_table(t) == pytest.approx(_table_tau(t), rel=1e-12, abs=1e-15)
            assert tm._kendall_s(t) == _brute_s(*_expand(t))


def test_kendall_s_of_a_table_by_hand():
    # rows 0 < 1, columns 0 < 1 < 2: concordant 2*4 + 2*1 + 3*1, discordant 3*5 + 1*5 + 1*2?
    t = np.array([[2, 3, 1], [5, 4, 1]])
    # S = sum over cells (i, j) of t_ij * (later rows, later columns - later rows, earlier cols)
    s = 2 * (4 + 1) + 3 * (1 - 5) + 1 * (0 - (5 + 4))
    assert tm._kendall_s(t) == s == _brute_s(*_expand(t))
    assert tm._kendall_s(t.T) == s


def test_tau_b_from_table_batches_and_undefined_tables():
    tables = np.array(
        [
            [[[3, 0], [0, 3]], [[0, 2], [2, 0]]],
            [[[2, 2], [0, 0]], [[1, 1], [1, 1]]],  # a zero row: NaN; independence: 0
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tm.tau_b_from_table(tables)
    assert got.shape == (2, 2) and got.dtype == np.float64
    np.testing.assert_array_equal(got, [[1.0, -1.0], [np.nan, 0.0]])
    assert np.isnan(tm.tau_b_from_table([[0, 0], [0, 0]]))
    assert np.isnan(tm.tau_b_from_table([[5, 0, 0], [0, 0, 0]]))
    assert tm.tau_b_from_table([[1, 0], [0, 1]]) == 1.0  # two items are enough


def test_tau_b_from_table_needs_two_dimensions():
    with pytest.raises(ValueError, match=r"^table must have at least 2 dimensions \(rows, col"):
        tm.tau_b_from_table([1, 2, 3])


def test_tied_pairs_and_the_denominator():
    np.testing.assert_array_equal(tm._tied_pairs(np.array([0, 1, 2, 5])), [0, 0, 1, 10])
    s = np.array([3.0, 3.0, 1.0, 0.0])
    n0 = np.array([10.0, 10.0, 6.0, 6.0])
    n1 = np.array([1.0, 10.0, 2.0, 1.0])
    n2 = np.array([2.0, 0.0, 6.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tm._tau_from_ties(s, n0, n1, n2)
    np.testing.assert_allclose(got[0], 3 / math.sqrt(9 * 8), rtol=1e-15)
    assert np.isnan(got[1]) and np.isnan(got[2])
    assert got[3] == 0.0
    # margins: rows (1, 2, 1), columns (2, 2) of 4 items, S = 2 -> 2 / sqrt((6-1)(6-2))
    rows, cols = np.array([[1.0, 2.0, 1.0]]), np.array([[2.0, 2.0]])
    assert tm._tau_from_s(np.array([2.0]), rows, cols)[0] == pytest.approx(2 / math.sqrt(20))


# --------------------------------------------------------------------------------------------
# Binary pairs: tables from packed bits
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 5, 63, 64, 65, 130])
def test_binary_tables_equal_tallies_item_by_item(n):
    c, p = _random_binary(n, 4, n)
    ia, ib = np.array([0, 1, 3, 2, 0]), np.array([1, 0, 2, 3, 3])
    t = tm._binary_tables(c, p, ia, ib)
    assert t.dtype == np.int64 and t.shape == (5, 3, 3)
    for k, (a, b) in enumerate(zip(ia, ib)):
        np.testing.assert_array_equal(t[k], _brute_table(c, p, a, b))


def test_binary_tables_of_a_batch(monkeypatch):
    c, p = _random_binary(70, 3, 1)
    c2, p2 = _random_binary(70, 3, 2)
    ia, ib = np.triu_indices(3, k=1)
    monkeypatch.setattr(tm, "_WORDS_PER_CHUNK", 1)  # one row a chunk
    t = tm._binary_tables(np.stack([c, c2]), np.stack([p, p2]), ia, ib)
    assert t.shape == (2, 3, 3, 3)
    for k, (a, b) in enumerate(zip(ia, ib)):
        np.testing.assert_array_equal(t[0, k], _brute_table(c, p, a, b))
        np.testing.assert_array_equal(t[1, k], _brute_table(c2, p2, a, b))


def test_binary_tables_without_bitwise_count_use_float_products(monkeypatch):
    c, p = _random_binary(40, 4, 3)
    ia, ib = np.triu_indices(4, k=1)
    want = [_brute_table(c, p, a, b) for a, b in zip(ia, ib)]
    calls = []
    blas = tm._tables_blas
    monkeypatch.setattr(tm, "_tables_blas", lambda *a: calls.append(a[0].dtype) or blas(*a))
    np.testing.assert_array_equal(tm._binary_tables(c, p, ia, ib), want)
    assert calls == []
    monkeypatch.delattr(np, "bitwise_count")
    got = tm._binary_tables(c, p, ia, ib)
    assert calls == [np.float32] and got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_tables_blas_directly_with_a_batch():
    c, p = _random_binary(9, 3, 4)
    c2, p2 = _random_binary(9, 3, 5)
    cm = np.stack([c, c2]).swapaxes(-1, -2).astype(np.float32)
    pm = np.stack([p, p2]).swapaxes(-1, -2).astype(np.float32)
    ia, ib = np.array([2, 0]), np.array([0, 1])
    t = tm._tables_blas(cm, pm, ia, ib)
    for k, (a, b) in enumerate(zip(ia, ib)):
        np.testing.assert_array_equal(t[0, k], _brute_table(c, p, a, b))
        np.testing.assert_array_equal(t[1, k], _brute_table(c2, p2, a, b))


@pytest.mark.parametrize("n", [1, 7, 8, 9, 64, 65, 72])
def test_pack_puts_bits_in_64_bit_words_zero_padded(n):
    rng = np.random.default_rng(n)
    bits = rng.random((2, n)) < 0.5
    packed = tm._pack(bits)
    assert packed.dtype == np.uint64 and packed.shape == (2, -(-n // 64))
    # every word holds its bits (big-endian within each byte, bytes in memory order)
    raw = np.unpackbits(packed.view(np.uint8), axis=-1)
    np.testing.assert_array_equal(raw[:, :n], bits)
    assert not raw[:, n:].any()


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("chunk", [1, 3, 1 << 21])
def test_popcount_gram_counts_common_bits(monkeypatch, symmetric, chunk):
    monkeypatch.setattr(tm, "_WORDS_PER_CHUNK", chunk)
    rng = np.random.default_rng(7)
    x = rng.random((2, 5, 130)) < 0.5
    y = x if symmetric else rng.random((2, 4, 130)) < 0.5
    got = tm._popcount_gram(tm._pack(x), tm._pack(y), symmetric=symmetric)
    want = np.einsum("lai,lbi->lab", x.astype(int), y.astype(int))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_tables_from_counts_equal_tallies():
    c, p = _random_binary(25, 4, 9)
    ia, ib = np.array([0, 2, 3]), np.array([1, 0, 1])
    cb, pb = c > 0.5, p > 0.5
    e11, e00 = cb & pb, ~cb & ~pb
    e10, e01 = cb & ~pb, ~cb & pb
    counts = np.array(
        [
            [
                (e11[:, a] & e00[:, b]).sum(),
                (e11[:, b] & e00[:, a]).sum(),
                (e10[:, a] & e01[:, b]).sum(),
                (e10[:, b] & e01[:, a]).sum(),
                (cb[:, a] & cb[:, b]).sum(),
                (pb[:, a] & pb[:, b]).sum(),
            ]
            for a, b in zip(ia, ib)
        ]
    )
    t = tm._tables_from_counts(counts, cb.sum(axis=0), pb.sum(axis=0), 25, ia, ib)
    assert t.dtype == np.int64
    for k, (a, b) in enumerate(zip(ia, ib)):
        np.testing.assert_array_equal(t[k], _brute_table(c, p, a, b))
    # a leading batch axis of counts
    t2 = tm._tables_from_counts(np.stack([counts, counts]), cb.sum(0), pb.sum(0), 25, ia, ib)
    np.testing.assert_array_equal(t2[1], t)


# --------------------------------------------------------------------------------------------
# Real-valued confidence
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "q"),
    [
        ([0.0, 1.0], 1),
        ([0.5, 1.0, 0.0], 2),
        ([0.25, 0.75], 4),
        ([0.1, 0.7, 0.3], 10),
        ([1 / 3, 2 / 3, 0.0], 3),
        ([0.001, 0.5], 1000),
        ([0.37, 0.93], 100),
        ([2.5, -1.0], 2),
        ([0.2 + 1e-10, 0.4], 5),  # within 1e-9 of the grid of fifths
    ],
)
def test_grid_finds_the_smallest_denominator(values, q):
    conf = np.array(values).reshape(-1, 1)
    codes, got = tm._grid(conf)
    assert got == q
    assert codes.dtype == np.int64
    np.testing.assert_array_equal(codes, np.rint(conf * q))


@pytest.mark.parametrize(
    "values",
    [
        [0.0005, 1.0],
        [1 / 1001, 0.0],
        [0.2 + 1e-8, 0.4],
        [math.pi / 10, 0.0],
        [1 / 997, 1 / 991],
        [1 + 1.5e-9, 0.0],  # off the integers by 1.5e-9: beyond the tolerance 1e-9 at q = 1
    ],
)
def test_grid_is_none_without_a_denominator_up_to_1000(values):
    assert tm._grid(np.array(values).reshape(1, -1)) is None


def test_grid_tolerance_grows_with_the_denominator():
    # 1/997 off by 5e-10: 997 times that (5e-7) off the code 1, within 1e-9 * 997
    conf = np.array([[1 / 997 + 5e-10, 0.0]])
    codes, q = tm._grid(conf)
    assert q == 997 and codes.tolist() == [[1, 0]]
    conf = np.array([[1 / 997 + 2e-9, 0.0]])  # 2e-6 off the code: beyond the tolerance
    assert tm._grid(conf) is None


def test_grid_gives_up_beyond_4000_levels():
    values = np.arange(4001) / 1000.0
    assert tm._grid(values.reshape(-1, 1)) is None
    codes, q = tm._grid(values[:4000].reshape(-1, 1))
    assert q == 1000 and codes[-1, 0] == 3999
    # repeated values count once
    codes, q = tm._grid(np.repeat(values[:4000], 2).reshape(-1, 4))
    assert q == 1000


def test_grid_of_no_values():
    codes, q = tm._grid(np.zeros((0, 3)))
    assert q == 1 and codes.shape == (0, 3)


def test_tau_b_codes_equals_scipy_with_and_without_a_batch():
    rng = np.random.default_rng(3)
    dx = rng.integers(0, 5, size=(2, 3, 12))
    dy = rng.integers(0, 3, size=(2, 3, 12))
    got = tm._tau_b_codes(dx, dy, 5)
    assert got.shape == (2, 3)
    for i, j in itertools.product(range(2), range(3)):
        assert got[i, j] == pytest.approx(_scipy_tau(dx[i, j], dy[i, j]), rel=1e-12)
    one = tm._tau_b_codes(dx[0, 0], dy[0, 0], 5)
    assert one.shape == () and one == pytest.approx(got[0, 0])
    # the top code is counted in its own level, and empty levels change nothing
    assert tm._tau_b_codes(dx[1, 2] * 2, dy[1, 2], 9) == pytest.approx(got[1, 2])


def test_gather_equals_take_along_axis():
    rng = np.random.default_rng(0)
    a = rng.random((3, 4, 6))
    idx = rng.integers(0, 6, size=(3, 4, 6))
    np.testing.assert_array_equal(tm._gather(a, idx), np.take_along_axis(a, idx, -1))
    v = rng.random(5)
    np.testing.assert_array_equal(tm._gather(v, np.array([4, 0, 0, 3, 1])), v[[4, 0, 0, 3, 1]])


def test_tau_b_sorted_equals_scipy_with_ties():
    rng = np.random.default_rng(11)
    x = rng.integers(0, 6, size=(4, 3, 20)).astype(float) / 4
    y = rng.integers(0, 3, size=(4, 3, 20))
    got = tm._tau_b_sorted(x, y)
    assert got.shape == (4, 3)
    for i, j in itertools.product(range(4), range(3)):
        assert got[i, j] == pytest.approx(_scipy_tau(x[i, j], y[i, j]), rel=1e-12)
        assert got[i, j] == pytest.approx(
            _brute_s(x[i, j], y[i, j]) / _denominator(x[i, j], y[i, j]), rel=1e-12
        )
    order = np.argsort(x, axis=-1, kind="stable")
    pre = tm._tau_b_sorted(
        np.take_along_axis(x, order, -1), np.take_along_axis(y, order, -1), presorted=True
    )
    np.testing.assert_allclose(pre, got, rtol=1e-12)


def _denominator(x, y):
    n = len(x)
    n0 = n * (n - 1) / 2
    n1 = sum(k * (k - 1) / 2 for k in np.unique(x, return_counts=True)[1])
    n2 = sum(k * (k - 1) / 2 for k in np.unique(y, return_counts=True)[1])
    return math.sqrt((n0 - n1) * (n0 - n2))


@pytest.mark.parametrize("seed", range(6))
def test_tau_b_sorted_each_dperf_level_and_tie_pattern(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    x = rng.integers(0, 3, size=n).astype(float)
    y = rng.integers(0, 3, size=n)
    got = float(tm._tau_b_sorted(x, y))
    want = _scipy_tau(x, y)
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_tau_b_sorted_leaves_absent_items_out():
    # y = 3 marks an item the pair does not share: it sorts last (x = inf) and is not counted
    x = np.array([0.3, 0.1, 0.2, np.inf, 0.2, np.inf, 0.5])
    y = np.array([2, 0, 1, 3, 2, 3, 0])
    here = y < 3
    got = float(tm._tau_b_sorted(x, y))
    assert got == pytest.approx(_scipy_tau(x[here], y[here]), rel=1e-12)
    # absent items tied with each other (both inf) add no tied pair
    x2 = np.array([0.3, 0.1, np.inf, np.inf, np.inf])
    y2 = np.array([2, 0, 3, 3, 3])
    assert float(tm._tau_b_sorted(x2, y2)) == 1.0


def test_tau_b_sorted_of_constant_sides_is_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tm._tau_b_sorted(
            np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]]), np.array([[0, 1, 2], [1, 1, 1]])
        )
    assert np.isnan(got).all()


def _real(n, m, seed, decimals=2):
    rng = np.random.default_rng(seed)
    return (
        np.round(rng.random((n, m)), decimals),
        (rng.random((n, m)) < 0.5).astype(float),
    )


@pytest.mark.parametrize(("n", "decimals"), [(9, 2), (15, 1), (40, 1), (12, 6)])
def test_pairwise_taus_of_real_values_equal_scipy(n, decimals):
    c, p = _real(n, 4, n, decimals)
    ia, ib = np.triu_indices(4, k=1)
    got = tm.pairwise_taus(c, p)
    for k, (a, b) in enumerate(zip(ia, ib)):
        want = _scipy_tau(np.round(c[:, a] - c[:, b], 12), p[:, a] - p[:, b])
        assert got[k] == pytest.approx(want, rel=1e-12)


def test_decimal_ties_stay_ties():
    # 0.93 - 0.9 and 0.53 - 0.5 differ in the last bits: rounded, they tie
    c = np.array([[0.93, 0.9], [0.53, 0.5], [0.1, 0.6], [0.7, 0.2]])
    p = np.array([[1, 0], [0, 0], [0, 1], [1, 0]], dtype=float)
    want = _scipy_tau(np.array([0.03, 0.03, -0.5, 0.5]), np.array([1, 0, -1, 1]))
    assert tm.pairwise_taus(c, p)[0] == pytest.approx(want, rel=1e-12)
    np.testing.assert_array_equal(tm._dconf(c, np.array([0]), np.array([1]))[:2, 0], [0.03, 0.03])


@pytest.mark.parametrize("n", [14, 15])
def test_continuous_taus_take_tables_when_each_level_has_three_items(monkeypatch, n):
    # a grid of halves (q = 2): 5 dconf levels; tables from 15 items on
    rng = np.random.default_rng(n)
    c = rng.integers(0, 3, size=(n, 3)) / 2
    p = (rng.random((n, 3)) < 0.5).astype(float)
    calls = []
    codes = tm._tau_b_codes
    monkeypatch.setattr(tm, "_tau_b_codes", lambda *a: calls.append(a[2]) or codes(*a))
    ia, ib = np.array([0, 2]), np.array([1, 0])
    got = tm._continuous_taus(c, p, ia, ib, tm._grid(c))
    assert calls == ([5] if n == 15 else [])
    for k, (a, b) in enumerate(zip(ia, ib)):
        assert got[k] == pytest.approx(_scipy_tau(c[:, a] - c[:, b], p[:, a] - p[:, b]))
    assert np.allclose(tm._continuous_taus(c, p, ia, ib, None), got)


def test_taus_chunked_over_pairs_and_a_batch(monkeypatch):
    c, p = _real(6, 5, 2)
    c2, p2 = _real(6, 5, 3)
    ia, ib = np.triu_indices(5, k=1)
    monkeypatch.setattr(tm, "_ELEMENTS_PER_CHUNK", 6 * 2 * 3)  # three pairs a chunk
    calls = []
    cont = tm._continuous_taus
    monkeypatch.setattr(tm, "_continuous_taus", lambda *a: calls.append(a[2].size) or cont(*a))
    got = tm.pairwise_taus(np.stack([c, c2]), np.stack([p, p2]))
    assert got.shape == (2, 10) and calls == [3, 3, 3, 1]
    for k, (a, b) in enumerate(zip(ia, ib)):
        assert got[1, k] == pytest.approx(
            _scipy_tau(np.round(c2[:, a] - c2[:, b], 12), p2[:, a] - p2[:, b])
        )
    calls.clear()
    got1 = tm.pairwise_taus(c, p)
    assert calls == [6, 4]  # one row of 6 items: 36 // 6 = 6 pairs a chunk
    np.testing.assert_allclose(got1, got[0])


def test_taus_chunked_one_pair_a_chunk_and_the_grid_passed_on(monkeypatch):
    rng = np.random.default_rng(5)
    c = rng.integers(0, 3, size=(15, 4)) / 2  # halves: 5 levels, 15 items -> tables
    p = (rng.random((15, 4)) < 0.5).astype(float)
    calls, coded = [], []
    cont, codes = tm._continuous_taus, tm._tau_b_codes
    monkeypatch.setattr(tm, "_continuous_taus", lambda *a: calls.append(a[2].size) or cont(*a))
    monkeypatch.setattr(tm, "_tau_b_codes", lambda *a: coded.append(a[2]) or codes(*a))
    monkeypatch.setattr(tm, "_ELEMENTS_PER_CHUNK", 10)  # fewer than 15 items: one pair a chunk
    got = tm.pairwise_taus(c, p)
    assert calls == [1] * 6 and coded == [5] * 6
    ia, ib = np.triu_indices(4, k=1)
    for k, (a, b) in enumerate(zip(ia, ib)):
        assert got[k] == pytest.approx(_scipy_tau(c[:, a] - c[:, b], p[:, a] - p[:, b]))
    # a batch of two on the table path
    c2 = c[::-1].copy()
    both = tm.pairwise_taus(np.stack([c, c2]), np.stack([p, p]))
    assert both.shape == (2, 6) and coded[-1] == 5
    np.testing.assert_allclose(both[0], got, rtol=1e-12)
    for k, (a, b) in enumerate(zip(ia, ib)):
        assert both[1, k] == pytest.approx(_scipy_tau(c2[:, a] - c2[:, b], p[:, a] - p[:, b]))


def test_level_tables_rows_of_equal_counts_keep_their_order():
    # model 0: 40 categories of 1 or 2 items; model 1: every item its own value (more
    # categories), so the rows are model 0's, sorted by count with ties in category order
    rng = np.random.default_rng(0)
    vals = np.repeat(np.arange(40) / 40, rng.integers(1, 3, size=40))
    n = vals.size
    c = np.stack([vals, np.arange(n) / n], axis=1)
    p = np.stack([np.zeros(n), (np.arange(n) % 3 == 0).astype(float)], axis=1)
    for ia, ib in (([0], [1]), ([1], [0])):
        ia, ib = np.array(ia), np.array(ib)
        lt = tm._level_tables(c, p, ia, ib)
        assert lt.a_cnt.size == 40 and lt.b_cnt.size == n
        _assert_level_tables(lt, _ref_level_tables(c, p, ia, ib))


def test_taus_chunked_of_no_pairs():
    c, p = _real(5, 3, 0)
    got = tm._taus_chunked(c, p, np.zeros(0, np.intp), np.zeros(0, np.intp), None)
    assert got.shape == (0,)
    got = tm._taus_chunked(np.stack([c, c]), np.stack([p, p]), np.zeros(0, np.intp),
                           np.zeros(0, np.intp), None)  # fmt: skip
    assert got.shape == (2, 0)


def test_pairwise_taus_binary_and_pairs():
    c, p = _random_binary(30, 4, 0)
    got = tm.pairwise_taus(c, p, pairs=([3, 0], [1, 2]))
    for k, (a, b) in enumerate([(3, 1), (0, 2)]):
        assert got[k] == pytest.approx(_table_tau(_brute_table(c, p, a, b)), rel=1e-12)
    all_pairs = tm.pairwise_taus(c, p)
    assert all_pairs.shape == (6,)
    ia, ib = np.triu_indices(4, k=1)
    for k, (a, b) in enumerate(zip(ia, ib)):
        assert all_pairs[k] == pytest.approx(_table_tau(_brute_table(c, p, a, b)), rel=1e-12)


# --------------------------------------------------------------------------------------------
# Level tables and value lookups of real-valued pairs
# --------------------------------------------------------------------------------------------


def _key(v):
    return round(float(v), 12)


def _ref_level_tables(c, p, ia, ib, items=None, max_cells=1 << 16):
    """Every field of the level tables, pair by pair, with dictionaries."""
    out = []
    for k, (a, b) in enumerate(zip(ia, ib)):
        sel = np.arange(c.shape[0]) if items is None else np.arange(c.shape[0])[items[k]]
        ca, cb = c[sel, a], c[sel, b]
        pa, pb = p[sel, a].astype(int), p[sel, b].astype(int)
        dx = [_key(u - v) for u, v in zip(ca, cb)]
        dy = [int(u - v) for u, v in zip(pa, pb)]
        levels = sorted(set(dx))
        rows = [dx.count(v) for v in levels]
        cols = [dy.count(v) for v in (-1, 0, 1)]
        rec = {
            "n": len(sel),
            "rows": rows,
            "cols": cols,
            "s_obs": _brute_s(dx, dy),
            "tau": _scipy_tau(np.array(dx), np.array(dy)) if len(sel) > 1 else math.nan,
        }
        cats_a = sorted(collections_count(zip(ca.tolist(), pa.tolist())).items())
        cats_b = sorted(collections_count(zip(cb.tolist(), pb.tolist())).items())
        if len(cats_a) * len(cats_b) > max_cells:
            rec.update(a_cnt=[], b_cnt=[], codes=[], matching=False, n_levels=0)
            out.append(rec)
            continue
        cell_levels = sorted({_key(va - vb) for (va, _), _ in cats_a for (vb, _), _ in cats_b})
        code = [
            [cell_levels.index(_key(va - vb)) * 3 + (qa - qb + 1) for (vb, qb), _ in cats_b]
            for (va, qa), _ in cats_a
        ]
        na, nb = [n for _, n in cats_a], [n for _, n in cats_b]
        if len(nb) < len(na):
            na, nb = nb, na
            code = [list(r) for r in zip(*code)]
        order = sorted(range(len(na)), key=lambda i: -na[i])  # stable: ties keep their order
        rec.update(
            a_cnt=[na[i] for i in order],
            b_cnt=nb,
            codes=[x for i in order for x in code[i]],
            matching=len(cell_levels) <= 4 * max(len(sel), 1),
            n_levels=len(cell_levels),
        )
        out.append(rec)
    return out


def collections_count(pairs):
    d: dict = {}
    for key in pairs:
        d[key] = d.get(key, 0) + 1
    return d


def _ragged(lt, off_name, flat_name, k):
    off, flat = getattr(lt, off_name), getattr(lt, flat_name)
    return flat[off[k] : off[k + 1]].tolist()


def _assert_level_tables(lt, ref):
    assert lt.n.tolist() == [r["n"] for r in ref]
    for name in ("n", "row_off", "rows", "cols", "s_obs", "a_off", "a_cnt", "b_off", "b_cnt",
                 "cell_off", "cell_code", "n_levels"):  # fmt: skip
        assert getattr(lt, name).dtype == np.int64, name
    assert lt.tau.dtype == np.float64 and lt.matching.dtype == bool
    assert lt.row_off[0] == lt.a_off[0] == lt.b_off[0] == lt.cell_off[0] == 0
    for k, r in enumerate(ref):
        assert _ragged(lt, "row_off", "rows", k) == r["rows"], k
        assert lt.cols[k].tolist() == r["cols"]
        assert lt.s_obs[k] == r["s_obs"]
        if math.isnan(r["tau"]):
            assert math.isnan(lt.tau[k])
        else:
            assert lt.tau[k] == pytest.approx(r["tau"], rel=1e-12)
        assert _ragged(lt, "a_off", "a_cnt", k) == r["a_cnt"], k
        assert _ragged(lt, "b_off", "b_cnt", k) == r["b_cnt"], k
        assert _ragged(lt, "cell_off", "cell_code", k) == r["codes"], k
        assert bool(lt.matching[k]) == r["matching"], k
        assert lt.n_levels[k] == r["n_levels"], k


# 6 items x 3 models: model 0 three values, model 1 two, model 2 six distinct values
C_LT = np.array(
    [
        [0.2, 0.5, 0.11],
        [0.6, 0.5, 0.42],
        [0.2, 0.9, 0.73],
        [0.6, 0.9, 0.05],
        [1.0, 0.5, 0.98],
        [0.2, 0.5, 0.36],
    ]
)
P_LT = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 0, 1], [1, 1, 0]], dtype=float)


def test_level_tables_every_field_by_hand():
    ia, ib = np.array([0, 0, 1, 2]), np.array([1, 2, 2, 0])
    lt = tm._level_tables(C_LT, P_LT, ia, ib)
    ref = _ref_level_tables(C_LT, P_LT, ia, ib)
    _assert_level_tables(lt, ref)
    # pair (0, 1): categories of model 0 (0.2, 1) x3, (0.6, 0) x2, (1.0, 1); of model 1
    # (0.5, 0) x3, (0.5, 1), (0.9, 1) x2: rows model 0's, largest first, columns in order
    assert _ragged(lt, "a_off", "a_cnt", 0) == [3, 2, 1]
    assert _ragged(lt, "b_off", "b_cnt", 0) == [3, 1, 2]
    # pair (1, 2): rows model 1's (3 categories against 6), largest first
    assert _ragged(lt, "a_off", "a_cnt", 2) == [3, 2, 1]
    # pair (2, 0): model 0 has the fewer categories: rows swapped to it
    assert _ragged(lt, "a_off", "a_cnt", 3) == [3, 2, 1]
    assert _ragged(lt, "b_off", "b_cnt", 3) == [1] * 6
    # 6 x 6 categories of pair (0, 2)/(2, 0), 24 levels at most: 4 per item -> matching
    assert lt.matching.tolist() == [r["matching"] for r in ref]


def test_level_tables_with_item_subsets_and_masks():
    ia, ib = np.array([0, 1, 2]), np.array([2, 2, 1])
    items = [
        np.array([True, True, False, True, True, False]),
        np.array([0, 2, 5]),
        np.array([False, True, True, False, False, False]),
    ]
    lt = tm._level_tables(C_LT, P_LT, ia, ib, items)
    _assert_level_tables(lt, _ref_level_tables(C_LT, P_LT, ia, ib, items))
    assert lt.n.tolist() == [4, 3, 2]


def test_level_tables_matching_rule_at_four_levels_an_item():
    # A's values 0.01 apart, B's 0.1 apart: every difference distinct. 4 items: 16 levels,
    # exactly 4 per item (matching); 5 items: 25 > 20 (not)
    c = np.array([[0.0, 0.0], [0.01, 0.1], [0.02, 0.2], [0.03, 0.3]])
    p = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=float)
    lt = tm._level_tables(c, p, np.array([0]), np.array([1]))
    assert lt.n_levels[0] == 16 and lt.matching[0]  # 16 <= 4 * 4
    ref = _ref_level_tables(c, p, np.array([0]), np.array([1]))
    _assert_level_tables(lt, ref)
    # 5 items with 25 distinct differences > 20: no matching tables
    c5 = np.array([[0.0, 0.0], [0.01, 0.1], [0.02, 0.2], [0.03, 0.3], [0.04, 0.4]])
    p5 = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0]], dtype=float)
    lt5 = tm._level_tables(c5, p5, np.array([0]), np.array([1]))
    assert lt5.n_levels[0] == 25 and not lt5.matching[0]
    _assert_level_tables(lt5, _ref_level_tables(c5, p5, np.array([0]), np.array([1])))


def test_level_tables_too_many_cells(monkeypatch):
    monkeypatch.setattr(tm, "_MAX_CELLS", 9)  # pair (0, 1): 3 x 3 = 9 cells, (0, 2): 18
    ia, ib = np.array([0, 0, 1]), np.array([2, 1, 0])  # the refused pair first
    lt = tm._level_tables(C_LT, P_LT, ia, ib)
    _assert_level_tables(lt, _ref_level_tables(C_LT, P_LT, ia, ib, max_cells=9))
    assert not lt.matching[0] and lt.n_levels[0] == 0 and lt.matching[1] and lt.matching[2]
    assert lt.a_off.tolist() == [0, 0, 3, 6] and lt.cell_off.tolist() == [0, 0, 9, 18]


def test_level_tables_of_no_pairs():
    lt = tm._level_tables(C_LT, P_LT, np.zeros(0, np.intp), np.zeros(0, np.intp))
    assert lt.n.shape == (0,) and lt.cols.shape == (0, 3)
    assert lt.row_off.tolist() == [0] and lt.rows.shape == (0,) and lt.rows.dtype == np.int64
    assert lt.cell_code.dtype == np.int64


def test_level_tables_select_repacks_the_pairs():
    ia, ib = np.array([0, 0, 1, 2]), np.array([1, 2, 2, 0])
    lt = tm._level_tables(C_LT, P_LT, ia, ib)
    sub = lt.select([3, 1])
    ref = _ref_level_tables(C_LT, P_LT, ia[[3, 1]], ib[[3, 1]])
    _assert_level_tables(sub, ref)
    assert sub.cols.flags.c_contiguous and sub.rows.flags.c_contiguous
    empty = lt.select(np.zeros(0, np.int64))
    assert empty.n.size == 0 and empty.row_off.tolist() == [0] and empty.rows.dtype == np.int64
    assert empty.rows.size == empty.a_cnt.size == empty.cell_code.size == 0


def test_categories_by_hand():
    c = np.array([0.5, 0.2, 0.5, 0.2, 0.9, 0.5])
    p = np.array([1, 0, 0, 0, 1, 1])
    vals, corr, counts = tm._categories(c, p)
    assert vals.tolist() == [0.2, 0.5, 0.5, 0.9]
    assert corr.tolist() == [0, 0, 1, 1]
    assert counts.tolist() == [2, 1, 2, 1]


def _ref_lookups(c, ia, ib, present=None):
    n, m = c.shape
    pres = np.ones((n, m), bool) if present is None else present
    values = [sorted({float(v) for v in c[pres[:, j], j]}) for j in range(m)]
    codes = [[values[j].index(float(c[i, j])) if pres[i, j] else 0 for i in range(n)]
             for j in range(m)]  # fmt: skip
    luts, levels = [], []
    for a, b in zip(ia, ib):
        diffs = [_key(u - v) for u in values[a] for v in values[b]]
        lv = sorted(set(diffs))
        luts.append([lv.index(d) for d in diffs])
        levels.append(len(lv))
    return values, codes, luts, levels


@pytest.mark.parametrize("masked", [False, True])
def test_value_lookups_by_hand(masked):
    present = None
    if masked:
        present = np.ones(C_LT.shape, bool)
        present[[1, 4], 0] = False
        present[2, 2] = False
    ia, ib = np.array([0, 2, 1]), np.array([1, 0, 2])
    lk = tm._value_lookups(C_LT, ia, ib, present)
    values, codes, luts, levels = _ref_lookups(C_LT, ia, ib, present)
    assert lk.codes.dtype == np.int64 and lk.codes.tolist() == codes
    assert lk.stride.tolist() == [len(values[b]) for b in ib] and lk.stride.dtype == np.int64
    assert lk.n_levels.tolist() == levels and lk.n_levels.dtype == np.int64  # compiled: int64
    assert lk.lut_off.dtype == np.int64
    assert lk.lut_off.tolist() == np.concatenate([[0], np.cumsum([len(t) for t in luts])]).tolist()
    assert lk.lut.tolist() == [x for t in luts for x in t] and lk.lut.dtype == np.int64


def test_value_lookups_give_up_on_too_many_cells_or_levels(monkeypatch):
    ia, ib = np.array([0, 2]), np.array([1, 1])
    # model 2 has 6 values, model 1 two: 12 cells
    monkeypatch.setattr(tm, "_MAX_CELLS", 12)
    assert tm._value_lookups(C_LT, ia, ib) is not None
    monkeypatch.setattr(tm, "_MAX_CELLS", 11)
    assert tm._value_lookups(C_LT, ia, ib) is None
    monkeypatch.setattr(tm, "_MAX_CELLS", 1 << 16)
    # 5 items with 25 distinct differences > 4 per item
    c5 = np.array([[0.0, 0.0], [0.01, 0.1], [0.02, 0.2], [0.03, 0.3], [0.04, 0.4]])
    assert tm._value_lookups(c5, np.array([0]), np.array([1])) is None
    assert tm._value_lookups(c5[:4], np.array([0]), np.array([1])).n_levels.tolist() == [16]


def test_value_lookups_of_no_pairs():
    lk = tm._value_lookups(C_LT, np.zeros(0, np.intp), np.zeros(0, np.intp))
    assert lk.lut.shape == (0,) and lk.lut.dtype == np.int64 and lk.lut_off.tolist() == [0]
    assert lk.codes.shape == (3, 6)
