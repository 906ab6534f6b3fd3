"""Real-valued per-pair nulls drawn as random tables: the same law as permuting the items.

A pair's tau-b depends on its items only through the counts over (dconf level, dperf), so the
base-rate null (dperf permuted against dconf) is a random ``levels x 3`` table with both margins
fixed, and the calibration-preserving null (B's items permuted against A's) a random table of
A's by B's (confidence, correctness) categories. These tests check the table samplers (NumPy and
compiled) against exact enumeration of every permutation on tiny inputs, and against the
item-level permutations they replaced (tests/pairwise_reference.py) on larger ones.
"""

from __future__ import annotations

import importlib.util
import itertools
import os

import numpy as np
import pytest
from pairwise_reference import _item_permutation_taus
from scipy import stats

from metacog_metrics._conventions import value_ties
from metacog_metrics.pairwise import pair_permutation_test, pairwise_taus
from metacog_metrics.pairwise.samplers import _levels_margins_s
from metacog_metrics.pairwise.tau import _level_tables, _tau_from_s
from tests.availability import unavailable
from tests.exact_laws import chi2_p as _chi2_p

_NO_NUMBA = "numba is not installed (the fast extra): the compiled engine is not tested"
needs_numba = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None and not os.environ.get("CI"), reason=_NO_NUMBA
)
ENGINES = ["numpy", pytest.param("numba", marks=needs_numba)]


def _kernels():
    if importlib.util.find_spec("numba") is None:
        unavailable(_NO_NUMBA)
    from metacog_metrics.pairwise import _numba

    return _numba


def _pair(ca, pa, cb, pb):
    """One pair as (items, 2) arrays."""
    return np.stack([ca, cb], axis=1).astype(float), np.stack([pa, pb], axis=1).astype(float)


def _padded_rows(lt):
    sizes = np.diff(lt.row_off)
    rows = np.zeros((sizes.size, max(1, sizes.max())), dtype=np.int64)
    for k in range(sizes.size):
        rows[k, : sizes[k]] = lt.rows[lt.row_off[k] : lt.row_off[k + 1]]
    return rows


def _margins_s_draws(sampler, lt, n, seed, per_level=8.0):
    """S of ``n`` base-rate level tables per pair: ``(P, n)``; the compiled kernel places the
    smaller columns' items up to ``per_level`` a level (0: always row by row)."""
    if sampler == "numpy":
        return _levels_margins_s(_padded_rows(lt), lt.cols, n, np.random.default_rng(seed))
    k = _kernels()
    draws = np.zeros((lt.n.size, n))
    k.levels_margins_kernel(
        lt.row_off, lt.rows, lt.cols, lt.s_obs, n, k.state(np.random.SeedSequence(seed)),
        k.number_tables(int(lt.n.max())), float(per_level), draws,
    )  # fmt: skip
    return draws.astype(np.int64)


def _scale(lt):
    """tau-b per unit of S of each pair (its margins are fixed under the base-rate null)."""
    return _tau_from_s(np.ones(lt.n.size), _padded_rows(lt).astype(float), lt.cols.astype(float))


def _matching_tau_draws(lt, n, seed, ratio):
    """tau-b of ``n`` calibration-preserving matching tables per pair (compiled)."""
    k = _kernels()
    draws = np.zeros((lt.n.size, n))
    k.matching_kernel(
        lt.a_off, lt.a_cnt, lt.b_off, lt.b_cnt, lt.cell_off, lt.cell_code, lt.n_levels, lt.n,
        np.zeros(lt.n.size), n, k.state(np.random.SeedSequence(seed)),
        k.number_tables(int(lt.n.max())), float(ratio), draws,
    )  # fmt: skip
    return draws


def _kendall_s(x, y):
    """Kendall's S from its definition (all i < j pairs)."""
    i, j = np.triu_indices(x.size, 1)
    return int((np.sign(x[i] - x[j]) * np.sign(y[i] - y[j])).sum())


# Eight items with tied real-valued confidences (decimal ties that binary floating point breaks:
# 0.3 - 0.1 and 0.7 - 0.5 must be one level), both correctness values on each side.
_CA = np.array([0.3, 0.7, 0.7, 0.9, 0.2, 0.5, 0.7, 0.3])
_CB = np.array([0.1, 0.5, 0.5, 0.6, 0.2, 0.3, 0.3, 0.1])
_PA = np.array([1, 1, 0, 1, 0, 0, 1, 1])
_PB = np.array([0, 1, 0, 0, 1, 0, 0, 1])


def test_level_tables_observed_tau_equals_scipy_with_ties_and_subsets():
    rng = np.random.default_rng(0)
    conf = np.round(rng.choice([0.1, 0.3, 0.5, 0.55, 0.7, 0.9, 1.0], size=(90, 4)), 2)
    perf = (rng.random((90, 4)) < 0.6).astype(float)
    ia, ib = np.triu_indices(4, 1)
    subsets = [rng.random(90) < 0.7 for _ in ia]
    lt = _level_tables(conf, perf, ia, ib, subsets)
    full = _level_tables(conf, perf, ia, ib)
    np.testing.assert_allclose(full.tau, pairwise_taus(conf, perf), atol=1e-14)
    for k, (a, b) in enumerate(zip(ia, ib)):
        m = subsets[k]
        dx, dy = value_ties(conf[m, a] - conf[m, b]), perf[m, a] - perf[m, b]
        assert lt.n[k] == m.sum()
        assert lt.tau[k] == pytest.approx(stats.kendalltau(dx, dy).statistic, abs=1e-14)
        assert lt.s_obs[k] == _kendall_s(dx, dy)
    # decimal ties: 0.3 - 0.1 == 0.7 - 0.5 == 0.2 after rounding, not in binary floating point
    assert 0.3 - 0.1 != 0.7 - 0.5
    one = _level_tables(*_pair(_CA, _PA, _CB, _PB), np.array([0]), np.array([1]))
    assert np.diff(one.row_off)[0] == np.unique(value_ties(_CA - _CB)).size == 4


# dperf of the test pair has 1, 4, 3 items at -1, 0, +1; these correctness values give it
# 4, 3, 1 (the column left for last is -1) and, swapped, 1, 3, 4 (+1)
_PA_LOW = np.array([0, 0, 0, 0, 1, 1, 0, 1])
_PB_LOW = np.array([1, 1, 1, 1, 0, 1, 0, 1])
_LARGEST = {0: (_PA, _PB), -1: (_PA_LOW, _PB_LOW), 1: (_PB_LOW, _PA_LOW)}


# compiled: the smaller columns' items placed one by one (whichever column is the largest),
# and row by row
@pytest.mark.parametrize(
    "sampler, per_level, largest",
    [("numpy", None, 0), pytest.param("numba", 8.0, 0, marks=needs_numba),
     pytest.param("numba", 8.0, -1, marks=needs_numba),
     pytest.param("numba", 8.0, 1, marks=needs_numba),
     pytest.param("numba", 0.0, 0, marks=needs_numba)],
)  # fmt: skip
def test_base_rate_level_tables_follow_the_exact_permutation_law(sampler, per_level, largest):
    # All 8! = 40,320 permutations of dperf against dconf enumerated: the exact law of S.
    pa, pb = _LARGEST[largest]
    dx, dy = value_ties(_CA - _CB), pa - pb
    perms = np.array(list(itertools.permutations(range(8))))
    i, j = np.triu_indices(8, 1)
    s_all = (np.sign(dx[i] - dx[j]) * np.sign(dy[perms][:, i] - dy[perms][:, j])).sum(axis=1)
    support, counts = np.unique(s_all, return_counts=True)
    lt = _level_tables(*_pair(_CA, pa, _CB, pb), np.array([0]), np.array([1]))
    assert lt.cols[0].argmax() - 1 == largest and (lt.cols[0] > 0).all()
    if per_level:  # the kernel's rule for placing items: the two smaller columns' items
        smaller = lt.cols[0].sum() - lt.cols[0].max()
        assert 0 < smaller <= per_level * np.diff(lt.row_off)[0]
    draws = _margins_s_draws(sampler, lt, 200_000, 3, per_level)[0]
    assert set(np.unique(draws)) <= set(support)
    assert _chi2_p(draws, support, counts / counts.sum()) > 1e-4
    assert lt.s_obs[0] == _kendall_s(dx, dy)


def _exact_matching_law(ca, pa, cb, pb):
    """Exact law of tau-b when B's items are matched to A's by every permutation."""
    perms = np.array(list(itertools.permutations(range(ca.size))))
    dx = value_ties(ca[None, :] - cb[perms])
    dy = pa[None, :] - pb[perms]
    i, j = np.triu_indices(ca.size, 1)
    sx, sy = np.sign(dx[:, i] - dx[:, j]), np.sign(dy[:, i] - dy[:, j])
    with np.errstate(invalid="ignore", divide="ignore"):
        taus = (sx * sy).sum(axis=1) / np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))
    taus = np.round(taus, 12)
    finite = taus[np.isfinite(taus)]
    support, counts = np.unique(finite, return_counts=True)
    return support, counts / taus.size, np.isnan(taus).mean()


# every row but the largest by columns; one by columns after four by items; all by items (the
# default on this pair, whose rows hold 2, 2, 1, 1, 1, 1 items)
@pytest.mark.parametrize("ratio", [0.0, 0.2, 12.0])
def test_matching_tables_follow_the_exact_permutation_law(ratio):
    support, law, nan_share = _exact_matching_law(_CA, _PA, _CB, _PB)
    lt = _level_tables(*_pair(_CA, _PA, _CB, _PB), np.array([0]), np.array([1]))
    assert lt.matching[0]
    assert lt.a_cnt.tolist() == [2, 2, 1, 1, 1, 1] and lt.b_cnt.size == 7
    taus = _matching_tau_draws(lt, 200_000, 7, ratio)[0]
    assert np.isnan(taus).mean() == pytest.approx(nan_share, abs=3e-3)
    finite = np.round(taus[np.isfinite(taus)], 12)
    assert set(finite) <= set(support)
    assert _chi2_p(finite, support, law / law.sum()) > 1e-4


@needs_numba
@pytest.mark.parametrize(
    "good, bad, sample",
    [(3, 50, 20), (50, 3, 20), (30, 40, 5), (30, 40, 66), (1, 1, 1), (200, 300, 150),
     (9, 400, 390), (0, 5, 3), (5, 0, 3), (6, 6, 12)],
)  # fmt: skip
def test_compiled_small_hypergeometric_variates_follow_the_exact_law(good, bad, sample):
    # Every branch of the direct simulation (which symmetry of the law it uses) and HRUA.
    k = _kernels()
    from compiled_helpers import hg_any_draws

    draws = hg_any_draws(good, bad, sample, 100_000, k.state(np.random.SeedSequence(2)),
                         k.number_tables(good + bad))  # fmt: skip
    support = np.arange(max(0, sample - bad), min(sample, good) + 1)
    law = stats.hypergeom.pmf(support, good + bad, good, sample)
    assert set(np.unique(draws)) <= set(support)
    if support.size > 1:
        assert _chi2_p(draws, support, law) > 1e-4


def _realistic_pair(n_items, seed, subset=False):
    """Verbal confidence on a 0.05 grid (heavy ties near the top) sharing a difficulty axis."""
    rng = np.random.default_rng(seed)
    diff = rng.normal(size=n_items)
    perf = (diff[:, None] + rng.normal(size=(n_items, 2)) > [[-0.3, 0.2]]).astype(float)
    raw = 0.8 + 0.08 * diff[:, None] + 0.08 * rng.normal(size=(n_items, 2))
    conf = np.clip(np.round(raw * 20) / 20, 0, 1)
    items = [rng.random(n_items) < 0.8] if subset else None
    return conf, perf, items


# compiled: every pair's smaller columns placed item by item (1e9), and row by row (0, what the
# default chooses on this pair)
@pytest.mark.parametrize(
    "sampler, per_level",
    [("numpy", None), pytest.param("numba", 1e9, marks=needs_numba),
     pytest.param("numba", 0.0, marks=needs_numba)],
)  # fmt: skip
def test_base_rate_level_tables_match_item_permutations_at_many_items(sampler, per_level):
    # 600 items (a 300-item subset of them drawn per pair): the table draws against the
    # item-level permutations, and both against the exact permutation moments.
    conf, perf, items = _realistic_pair(600, 1, subset=True)
    lt = _level_tables(conf, perf, np.array([0]), np.array([1]), items)
    n = 10_000
    taus = _margins_s_draws(sampler, lt, n, 4, per_level)[0] * _scale(lt)[0]
    m = items[0]
    ref = _item_permutation_taus(
        conf[m, 0], perf[m, 0], conf[m, 1], perf[m, 1], "base_rate", n, np.random.default_rng(5)
    )
    assert stats.ks_2samp(taus, ref, method="asymp").pvalue > 1e-3
    x, y = value_ties(conf[m, 0] - conf[m, 1]), perf[m, 0] - perf[m, 1]
    sd = np.sqrt(_kendall_variance(x, y))
    assert abs(taus.mean()) < 5 * sd / np.sqrt(n)
    assert taus.std() == pytest.approx(sd, rel=0.04)


def _kendall_variance(x, y):
    """Exact permutation variance of tau-b's numerator with ties (Kendall 1970), scaled."""
    n = x.size
    t = np.unique(x, return_counts=True)[1].astype(float)
    u = np.unique(y, return_counts=True)[1].astype(float)
    v = (
        n * (n - 1) * (2 * n + 5)
        - (t * (t - 1) * (2 * t + 5)).sum()
        - (u * (u - 1) * (2 * u + 5)).sum()
    ) / 18
    v += (t * (t - 1) * (t - 2)).sum() * (u * (u - 1) * (u - 2)).sum() / (9 * n * (n - 1) * (n - 2))
    v += (t * (t - 1)).sum() * (u * (u - 1)).sum() / (2 * n * (n - 1))
    n0 = n * (n - 1) / 2
    return v / ((n0 - (t * (t - 1) / 2).sum()) * (n0 - (u * (u - 1) / 2).sum()))


@needs_numba
# by columns; large rows by columns after small ones by items (1.0 and the default); by items
@pytest.mark.parametrize("ratio", [0.0, 1.0, 12.0, 1e9])
def test_matching_tables_match_item_permutations_at_many_items(ratio):
    conf, perf, items = _realistic_pair(600, 2, subset=True)
    lt = _level_tables(conf, perf, np.array([0]), np.array([1]), items)
    n = 10_000
    taus = _matching_tau_draws(lt, n, 8, ratio)[0]
    m = items[0]
    ref = _item_permutation_taus(
        conf[m, 0], perf[m, 0], conf[m, 1], perf[m, 1], "calibration_preserving", n,
        np.random.default_rng(9),
    )  # fmt: skip
    assert stats.ks_2samp(taus, ref, method="asymp").pvalue > 1e-3
    se = np.sqrt(taus.var() / n + ref.var() / n)
    assert abs(taus.mean() - ref.mean()) < 5 * se
    assert taus.std() == pytest.approx(ref.std(), rel=0.04)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("null", ["base_rate", "calibration_preserving"])
def test_real_valued_pair_tests_agree_with_item_permutations(null, engine):
    # Four models; model 3's confidence is continuous (every value distinct), so on the
    # compiled engine its pairs take the item path and the others matching tables: the
    # results must come back in the pairs' order.
    rng = np.random.default_rng(3)
    diff = rng.normal(size=250)
    perf = (diff[:, None] + rng.normal(size=(250, 4)) > 0).astype(float)
    conf = np.clip(np.round((0.7 + 0.1 * diff[:, None] + 0.1 * rng.normal(size=(250, 4))) * 20)
                   / 20, 0, 1)  # fmt: skip
    conf[:, 3] = 1 / (1 + np.exp(-diff - rng.normal(size=250)))
    res = pair_permutation_test(conf, perf, null=null, permutations=6000, rng=1, engine=engine)
    assert res.engine == engine
    ia, ib = np.triu_indices(4, 1)
    np.testing.assert_allclose(res.tau, pairwise_taus(conf, perf), atol=1e-12)
    for k, (a, b) in enumerate(zip(ia, ib)):
        ref = _item_permutation_taus(conf[:, a], perf[:, a], conf[:, b], perf[:, b], null, 3000,
                                     np.random.default_rng(10 + k))  # fmt: skip
        se = np.sqrt(ref.var() * (1 / 3000 + 1 / 6000))
        assert abs(res.null_mean[k] - ref.mean()) < 5 * se
        assert res.null_sd[k] == pytest.approx(ref.std(), rel=0.08)
        p_ref = (1 + (ref >= res.tau[k] - 1e-12).sum()) / (ref.size + 1)
        p_se = np.sqrt(p_ref * (1 - p_ref) * (1 / 3000 + 1 / 6000)) + 1e-3
        assert res.p_greater[k] == pytest.approx(p_ref, abs=5 * p_se)


def test_level_tables_on_all_rows_equal_the_per_pair_path():
    # on all rows each model's categories are computed once and read by all its pairs; the
    # path with per-pair item subsets computes them pair by pair: the same tables
    rng = np.random.default_rng(1)
    conf = np.round(rng.choice([0.1, 0.3, 0.5, 0.55, 0.7, 0.9, 1.0], size=(60, 5)), 2)
    conf[:, 3] = np.round(rng.choice([0.2, 0.4, 0.6], size=60), 2)  # other values, other cells
    perf = (rng.random((60, 5)) < 0.6).astype(float)
    ia, ib = np.triu_indices(5, 1)
    shared = _level_tables(conf, perf, ia, ib)
    each = _level_tables(conf, perf, ia, ib, [np.ones(60, dtype=bool)] * ia.size)
    for field in ("a_off", "a_cnt", "b_off", "b_cnt", "cell_off", "cell_code", "n_levels"):
        np.testing.assert_array_equal(getattr(shared, field), getattr(each, field), err_msg=field)
    # pair (0, 3): model 3's three values by two outcomes, counted by hand
    k = int(np.flatnonzero((ia == 0) & (ib == 3))[0])
    b_counts = shared.b_cnt[shared.b_off[k] : shared.b_off[k + 1]]
    a_counts = shared.a_cnt[shared.a_off[k] : shared.a_off[k + 1]]
    hand = sorted(np.unique(conf[:, 3] * 2 + perf[:, 3], return_counts=True)[1].tolist())
    assert hand in (sorted(a_counts.tolist()), sorted(b_counts.tolist()))
