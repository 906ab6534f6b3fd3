"""The difficulty-stratified null, piece by piece: permutations within pass counts (enumerated),
the mean tau (SciPy's Kendall tau-b pair by pair), the null draws on both engines (against the
permuted matrices) and the test's p-value, moments and strata by hand.

Fast unit tests; what the null finds on generated data is tested in ``tests/test_recovery.py``
and its size in ``tests/test_power.py``.
"""

from __future__ import annotations

import collections
import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import metacog_metrics.stratified as strat
from metacog_metrics.stratified import (
    mean_taus,
    stratified_mean_tau_test,
    stratified_null_draws,
    stratified_permutations,
)


def _scipy_mean_tau(conf: np.ndarray, perf: np.ndarray) -> float:
    """Mean over model pairs (a < b) of SciPy's tau-b of dconf vs dperf, NaN pairs left out."""
    taus = []
    for a, b in itertools.combinations(range(conf.shape[1]), 2):
        dc, dp = conf[:, a] - conf[:, b], perf[:, a] - perf[:, b]
        if np.ptp(dc) == 0 or np.ptp(dp) == 0:
            continue  # tau-b undefined (SciPy says NaN)
        taus.append(stats.kendalltau(dc, dp).statistic)
    return float(np.mean(taus)) if taus else math.nan


def _data(n_items: int, n_models: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    diff = rng.normal(size=(n_items, 1))
    perf = (diff + rng.normal(size=(n_items, n_models)) > 0).astype(float)
    conf = (0.7 * diff + rng.normal(size=(n_items, n_models)) > -0.2).astype(float)
    return conf, perf


class _NanEmpty:
    """NumPy for the module under test, with ``empty`` filled with NaN (no stale memory)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(shape, dtype=float):
        return np.full(shape, np.nan, dtype=dtype)


@pytest.fixture(params=["numpy", "numba"])
def engine(request, monkeypatch):
    """Both engines of the null draws: the float products, and the compiled popcounts."""
    if request.param == "numpy":
        monkeypatch.setattr(strat, "_compiled_kernels", lambda engine: None)
    elif strat._compiled_kernels("auto") is None:
        pytest.skip("numba is not installed: the compiled engine is tested where it is")
    return request.param


# --------------------------------------------------------------------------------------------
# Permutations within strata


def test_permutations_keep_each_items_pass_count_and_are_uniform_within_strata():
    # pass counts 1, 2, 1, 1, 0: the three items with k = 1 (0, 2, 3) are shuffled among
    # themselves, items 1 and 4 (alone in their strata) stay; all 3! arrangements equally likely
    perf = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0]], dtype=float)
    perms = stratified_permutations(perf, 6000, rng=3)
    assert perms.shape == (6000, 5)
    assert (np.sort(perms, axis=1) == np.arange(5)).all()  # each row a permutation
    k = perf.sum(axis=1)
    assert (k[perms] == k).all()
    assert (perms[:, 1] == 1).all() and (perms[:, 4] == 4).all()
    counts = collections.Counter(map(tuple, perms[:, [0, 2, 3]]))
    assert set(counts) == set(itertools.permutations([0, 2, 3]))
    assert stats.chisquare(list(counts.values())).pvalue > 1e-4
    # reproducible from the seed, other draws from another
    np.testing.assert_array_equal(perms, stratified_permutations(perf, 6000, rng=3))
    assert not np.array_equal(perms, stratified_permutations(perf, 6000, rng=4))


def test_permutations_for_a_seed_follow_the_documented_rule_item_by_item():
    # the rule, written out item by item: the generator's (n, items) uniforms, one row per
    # permutation; within each stratum (items of equal pass count, in item order) the j-th
    # item takes the row of the stratum's item with the j-th smallest uniform. 40 items in
    # strata of unequal sizes (past the sizes NumPy sorts by insertion), 25 permutations.
    rng = np.random.default_rng(11)
    perf = (rng.random((40, 4)) < np.linspace(0.1, 0.9, 40)[:, None]).astype(float)
    k = perf.sum(axis=1).astype(int)
    u = np.random.default_rng(7).random((25, 40))
    expected = np.empty((25, 40), dtype=int)
    for r in range(25):
        for level in set(k.tolist()):
            members = [i for i in range(40) if k[i] == level]
            by_uniform = sorted(members, key=lambda i: u[r, i])
            for i, j in zip(members, by_uniform, strict=True):
                expected[r, i] = j
    np.testing.assert_array_equal(stratified_permutations(perf, 25, rng=7), expected)


def test_permutations_reject_one_dimensional_input():
    with pytest.raises(ValueError, match=r"\(items, models\)"):
        stratified_permutations(np.array([1.0, 0.0, 1.0]), 5)


# --------------------------------------------------------------------------------------------
# The mean tau and the null draws


def test_mean_tau_is_scipys_tau_b_averaged_over_pairs_with_one():
    conf, perf = _data(40, 5, seed=1)
    conf[:, 4] = conf[:, 3]  # pair (3, 4): dconf constant 0, no tau-b: left out of the mean
    assert mean_taus(conf, perf) == pytest.approx(_scipy_mean_tau(conf, perf), abs=1e-12)
    # no pair with a tau-b: NaN
    same = np.repeat(conf[:, :1], 3, axis=1)
    assert math.isnan(float(mean_taus(same, perf[:, :3])))


def test_null_draws_are_the_mean_tau_of_the_permuted_confidence_rows(engine, monkeypatch):
    conf, perf = _data(30, 6, seed=2)
    perms = stratified_permutations(perf, 7, rng=5)
    # small calls: the NumPy engine's chunking over permutations runs several times
    monkeypatch.setattr(strat, "_ELEMENTS_PER_CALL", 30 * 6 * 3)
    draws = stratified_null_draws(conf, perf, perms)
    expected = [_scipy_mean_tau(conf[p], perf) for p in perms]
    np.testing.assert_allclose(draws, expected, rtol=0, atol=1e-12)
    # threads share the permutations: the same draws
    np.testing.assert_array_equal(stratified_null_draws(conf, perf, perms, workers=3), draws)


def test_compiled_chunks_cover_every_permutation(monkeypatch):
    # more permutations than one chunk of the compiled engine holds
    if strat._compiled_kernels("auto") is None:
        pytest.skip("numba is not installed: the compiled engine is tested where it is")
    conf, perf = _data(20, 4, seed=6)
    perms = stratified_permutations(perf, 9, rng=1)
    expected = [_scipy_mean_tau(conf[p], perf) for p in perms]
    for workers in (1, 2, None):
        draws = stratified_null_draws(conf, perf, perms, workers=workers)
        np.testing.assert_allclose(draws, expected, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------------
# The test


def test_p_value_moments_and_strata_by_hand(engine):
    conf, perf = _data(60, 5, seed=3)
    res = stratified_mean_tau_test(conf, perf, permutations=40, rng=9)
    perms = stratified_permutations(perf, 40, np.random.default_rng(9))
    draws = np.array([_scipy_mean_tau(conf[p], perf) for p in perms])
    np.testing.assert_allclose(res.draws, draws, rtol=0, atol=1e-12)
    observed = _scipy_mean_tau(conf, perf)
    assert res.observed == pytest.approx(observed, abs=1e-12)
    assert res.p_value == pytest.approx((1 + np.sum(draws >= observed)) / 41)
    assert res.null_mean == pytest.approx(draws.mean())
    assert res.null_sd == pytest.approx(draws.std(ddof=1))
    assert res.permutations == 40
    k = perf.sum(axis=1).astype(int)
    assert res.n_strata == sum(1 for v in set(k) if (k == v).sum() >= 2)


def test_a_draw_equal_to_the_observed_mean_counts():
    # pass counts 0, 1, 2, 3: every stratum holds one item, so every permutation is the
    # identity, every draw equals the observed mean and p = (1 + B) / (B + 1) = 1
    conf = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 1]], dtype=float)
    perf = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=float)
    res = stratified_mean_tau_test(conf, perf, permutations=15, rng=0)
    assert res.observed == pytest.approx(_scipy_mean_tau(conf, perf), abs=1e-12)
    np.testing.assert_array_equal(res.draws, np.full(15, res.observed))
    assert res.p_value == 1.0
    assert res.n_strata == 0
    assert res.null_sd == 0.0


def test_one_permutation_has_no_sd_and_no_defined_draw_gives_nan():
    conf, perf = _data(12, 3, seed=4)
    one = stratified_mean_tau_test(conf, perf, permutations=1, rng=0)
    assert one.draws.shape == (1,) and math.isnan(one.null_sd)
    assert one.null_mean == pytest.approx(one.draws[0])
    # every model says yes to everything: no pair has a tau-b, in the data or in any draw;
    # the empty mean and sd are NaN without NumPy's "Mean of empty slice" warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = stratified_mean_tau_test(np.ones((12, 3)), perf, permutations=5, rng=0)
        # the mean over pairs leaves NaN taus out; a draw with none is NaN, silently
        np.testing.assert_array_equal(
            strat._nanmean_last(np.array([[np.nan, np.nan], [0.5, np.nan], [0.25, -0.75]])),
            [np.nan, 0.5, -0.25],
        )
    assert res.draws.shape == (5,) and np.isnan(res.draws).all()
    assert math.isnan(res.observed) and math.isnan(res.p_value)
    assert math.isnan(res.null_mean) and math.isnan(res.null_sd)


@pytest.mark.parametrize(
    ("conf", "perf", "permutations", "match"),
    [
        (np.ones((4, 3)), np.ones((4, 2)), 5, "must be equal"),
        (np.ones(4), np.ones(4), 5, "must be equal"),
        (np.ones((4, 3)), np.ones((4, 3)), 0, "permutations must be >= 1"),
        (np.full((4, 3), 0.5), np.ones((4, 3)), 5, "complete 0/1"),
        (np.ones((4, 3)), np.where(np.eye(4, 3) > 0, np.nan, 1.0), 5, "complete 0/1"),
    ],
)
def test_bad_input_is_refused(conf, perf, permutations, match):
    with pytest.raises(ValueError, match=match):
        stratified_mean_tau_test(conf, perf, permutations=permutations)


def test_a_draw_tying_with_an_observed_mean_of_exactly_zero_counts():
    # the tie tolerance scales with |observed|, so at 0 only ">=" counts an equal draw:
    # singleton strata (pass counts 0..3) make every draw equal the observed 0.0 (pairs' tau-b
    # -1/3, 0 and 1/3 by SciPy)
    perf = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=float)
    conf = np.array([[0, 0, 0], [0, 0, 1], [1, 0, 0], [0, 0, 0]], dtype=float)
    assert _scipy_mean_tau(conf, perf) == pytest.approx(0.0, abs=1e-15)
    res = stratified_mean_tau_test(conf, perf, permutations=9, rng=0)
    assert res.observed == 0.0
    assert res.p_value == 1.0


def test_mean_tau_of_a_single_pair_is_its_tau_b():
    conf, perf = _data(25, 2, seed=7)
    expected = stats.kendalltau(conf[:, 0] - conf[:, 1], perf[:, 0] - perf[:, 1]).statistic
    assert mean_taus(conf, perf) == pytest.approx(expected, abs=1e-12)
    res = stratified_mean_tau_test(conf, perf, permutations=3, rng=1)
    assert res.observed == pytest.approx(expected, abs=1e-12)


def test_more_permutations_than_items_are_all_drawn(engine, monkeypatch):
    # the draws are indexed by permutation, never by item: in chunks of 4 permutations
    # (NumPy engine) or split over 3 threads (compiled), every one of 30 is drawn
    conf, perf = _data(8, 4, seed=8)
    perms = stratified_permutations(perf, 30, rng=2)
    expected = [_scipy_mean_tau(conf[p], perf) for p in perms]
    monkeypatch.setattr(strat, "_ELEMENTS_PER_CALL", 8 * 4 * 4)
    monkeypatch.setattr(strat, "np", _NanEmpty())  # a draw left unwritten stays NaN
    draws = stratified_null_draws(conf, perf, perms, workers=3)
    np.testing.assert_allclose(draws, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        stratified_null_draws(conf, perf, perms, workers=1), expected, rtol=0, atol=1e-12
    )


def test_two_draws_have_an_sd_one_draw_none_and_no_warning():
    conf, perf = _data(15, 3, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "degrees of freedom" warning for one draw
        one = stratified_mean_tau_test(conf, perf, permutations=1, rng=0)
        two = stratified_mean_tau_test(conf, perf, permutations=2, rng=0)
    assert math.isnan(one.null_sd)
    assert two.null_sd == pytest.approx(np.std(two.draws, ddof=1))
    assert np.isfinite(two.null_sd)


def test_strata_of_two_items_count():
    # pass counts 0, 1, 1, 2, 2, 2, 3: strata of sizes 1, 2, 3, 1 -> two strata to permute
    perf = np.array(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1]],
        dtype=float,
    )
    conf = np.array(
        [[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]],
        dtype=float,
    )
    assert stratified_mean_tau_test(conf, perf, permutations=3, rng=0).n_strata == 2


def test_the_documented_defaults():
    conf, perf = _data(20, 3, seed=9)
    default = stratified_mean_tau_test(conf, perf)
    assert default.permutations == 999 and default.draws.shape == (999,)
    np.testing.assert_array_equal(
        default.draws, stratified_mean_tau_test(conf, perf, permutations=999, rng=0).draws
    )


def test_non_binary_input_is_refused_with_the_whole_message():
    with pytest.raises(ValueError, match=r"^conf and perf must be complete 0/1 matrices$"):
        stratified_mean_tau_test(np.full((4, 3), 0.5), np.ones((4, 3)))


def test_the_compiled_engine_runs_unless_numba_is_turned_off(monkeypatch):
    # "auto" engine: the compiled counts when numba imports, the float products when
    # METACOG_NO_NUMBA is set (the same draws either way)
    conf, perf = _data(12, 3, seed=10)
    perms = stratified_permutations(perf, 4, rng=0)
    calls = []
    real = strat._compiled_null_draws

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(strat, "_compiled_null_draws", spy)
    monkeypatch.delenv("METACOG_NO_NUMBA", raising=False)
    have_numba = int(strat._compiled_kernels("auto") is not None)
    compiled = stratified_null_draws(conf, perf, perms)
    assert len(calls) == have_numba
    monkeypatch.setenv("METACOG_NO_NUMBA", "1")
    products = stratified_null_draws(conf, perf, perms)
    assert len(calls) == have_numba  # not called again
    np.testing.assert_allclose(products, compiled, rtol=0, atol=1e-12)


def test_many_pairs_take_several_compiled_chunks(monkeypatch):
    # 40 models (780 pairs) and 1,000 permutations: the compiled engine splits the draws into
    # chunks of a few hundred (bounded by its memory budget per pair); they equal the NumPy
    # engine's float products, tested against SciPy above
    if strat._compiled_kernels("auto") is None:
        pytest.skip("numba is not installed: the compiled engine is tested where it is")
    conf, perf = _data(12, 40, seed=11)
    perms = stratified_permutations(perf, 1000, rng=3)
    compiled = stratified_null_draws(conf, perf, perms, workers=2)
    monkeypatch.setattr(strat, "_compiled_kernels", lambda engine: None)
    np.testing.assert_allclose(
        compiled, stratified_null_draws(conf, perf, perms), rtol=0, atol=1e-12
    )
