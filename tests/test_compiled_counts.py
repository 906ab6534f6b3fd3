"""Compiled co-occurrence counts on packed bits (numba): the joint draws of binary confidence and
the difficulty-stratified null.

The joint draws arrange each model's 0/1 vectors at random as packed bits; every count of one
pair is then a hypergeometric variate whose law is known exactly, which the tests check. The
stratified null's counts must equal the float products they replaced, to the last bit.
"""

from __future__ import annotations

import importlib.util
import math
import os

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.pairwise import NULLS, joint_null_draws
from tests.exact_laws import chi2_p as _chi2_p

pytestmark = pytest.mark.skipif(  # under CI a missing numba fails the tests instead
    importlib.util.find_spec("numba") is None and not os.environ.get("CI"),
    reason="numba is not installed (the fast extra): the compiled kernels are not tested",
)


def _kernels():
    from metacog_metrics.pairwise import _numba

    return _numba


def _hypergeom_p(values, population, good, sample):
    support = np.arange(max(0, sample - (population - good)), min(sample, good) + 1)
    return _chi2_p(values, support, stats.hypergeom.pmf(support, population, good, sample))


@pytest.mark.parametrize("null", NULLS)
def test_joint_binary_counts_follow_their_exact_laws(null):
    # 70 items (a partial last word), counts above and below half (both rejection branches).
    # Each model's vectors are uniformly random arrangements of its own counts, so for a pair
    # (a, b) the overlap of a's set X with b's set Y is Hypergeometric(N, |Y|, |X|).
    k = _kernels()
    n = 70
    kc = np.array([50, 20, 35, 64], dtype=np.int64)
    n11 = np.array([30, 5, 20, 60], dtype=np.int64)  # correct among the yes
    n01 = np.array([10, 40, 5, 2], dtype=np.int64)  # correct among the no
    kp = n11 + n01
    ia, ib = np.array([0, 1, 2], dtype=np.int64), np.array([1, 3, 3], dtype=np.int64)
    draws = 20_000
    counts = k.joint_binary_counts(
        kc, kp, n11, n01, n, ia, ib, null == "base_rate", draws,
        k.state(np.random.SeedSequence(3)),
    )  # fmt: skip
    assert counts.shape == (draws, 3, 6)
    for j, (a, b) in enumerate(zip(ia, ib)):
        assert _hypergeom_p(counts[:, j, 4], n, kc[b], kc[a]) > 1e-4  # yes and yes
        assert _hypergeom_p(counts[:, j, 5], n, kp[b], kp[a]) > 1e-4  # correct and correct
        if null == "calibration_preserving":
            n00 = n - kc - n01  # neither yes nor correct
            n10 = kc - n11  # yes, wrong
            assert _hypergeom_p(counts[:, j, 0], n, n00[b], n11[a]) > 1e-4
            assert _hypergeom_p(counts[:, j, 1], n, n00[a], n11[b]) > 1e-4
            assert _hypergeom_p(counts[:, j, 2], n, n01[b], n10[a]) > 1e-4
            assert _hypergeom_p(counts[:, j, 3], n, n01[a], n10[b]) > 1e-4


@pytest.mark.parametrize("split", [True, False])
def test_joint_binary_taus_equal_the_tables_of_the_counts_to_the_last_bit(split):
    # The same draws as joint_binary_counts (same state, same stream), each pair's tau-b as the
    # NumPy tables give it from those counts, NaN included: models 4 and 5 say yes to every
    # item, so their pair's dconf is constant (tau-b undefined in every draw).
    from metacog_metrics.pairwise.tau import _tables_from_counts, _tau_b_tables

    k = _kernels()
    n = 130  # a partial last word
    kc = np.array([50, 20, 35, 64, 130, 130], dtype=np.int64)
    n11 = np.array([30, 5, 20, 60, 90, 70], dtype=np.int64)
    n01 = np.array([10, 40, 5, 2, 0, 0], dtype=np.int64)
    kp = n11 + n01
    ia, ib = (v.astype(np.int64) for v in np.triu_indices(6, 1))
    draws = 400
    s1, s2 = k.state(np.random.SeedSequence(5)), k.state(np.random.SeedSequence(5))
    counts = k.joint_binary_counts(kc, kp, n11, n01, n, ia, ib, split, draws, s1)
    want = _tau_b_tables(_tables_from_counts(counts, kc, kp, n, ia, ib))
    got = k.joint_binary_taus(kc, kp, n11, n01, n, ia, ib, split, draws, s2)
    assert np.isnan(want).any() and np.isfinite(want).any()
    np.testing.assert_array_equal(got, want)  # NaN where NaN, every other double equal
    assert np.array_equal(s1, s2)  # and the generator left where the counts leave it


def test_permuted_taus_equal_the_tables_of_the_permuted_counts_to_the_last_bit():
    # The difficulty-stratified null's draws: tau-b of every pair with the confidence rows
    # permuted, as tau_b_from_table gives it from the counts' tables (NaN where a model's
    # confidence is constant: model 3 says yes to every item).
    from metacog_metrics.pairwise import tau_b_from_table
    from metacog_metrics.pairwise.tau import _tables_from_counts

    k = _kernels()
    rng = np.random.default_rng(4)
    n, m = 130, 5
    conf = (rng.random((n, m)) < 0.6).astype(np.uint8)
    conf[:, 3] = 1
    conf[:, 4] = conf[:, 3]  # models 3 and 4: the same constant confidence, dconf always 0
    perf = (rng.random((n, m)) < 0.5).astype(np.uint8)
    perms = np.stack([rng.permutation(n) for _ in range(40)]).astype(np.int64)
    ia, ib = (v.astype(np.int64) for v in np.triu_indices(m, 1))
    kc, kp = conf.sum(axis=0, dtype=np.int64), perf.sum(axis=0, dtype=np.int64)
    counts = k.permuted_counts(conf, perf, perms, ia, ib)
    want = tau_b_from_table(_tables_from_counts(counts, kc, kp, n, ia, ib))
    got = k.permuted_taus(conf, perf, perms, ia, ib, kc, kp)
    assert np.isnan(want).any() and np.isfinite(want).any()
    np.testing.assert_array_equal(got, want)


def _subsets(n_items, k, within, draws, seed):
    """``draws`` random k-subsets from the compiled sampler, as (draws, n_items) bool."""
    kern = _kernels()
    st = tuple(np.uint64(v) for v in kern.state(np.random.SeedSequence(seed)))
    words = (n_items + 63) // 64
    mask = np.zeros(words, dtype=np.uint64)
    for i in within:
        mask[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    if len(within) == n_items:
        mask = np.empty(0, dtype=np.uint64)  # the whole-set form
    out = np.zeros((draws, n_items), dtype=bool)
    bits = np.zeros(words, dtype=np.uint64)
    for d in range(draws):
        st = tuple(
            np.uint64(v) for v in kern._random_subset(st, bits, mask, len(within), k, n_items)
        )
        unpacked = np.unpackbits(bits.view(np.uint8), bitorder="little")[:n_items]
        out[d] = unpacked.astype(bool)
    return out


@pytest.mark.parametrize(
    ("n_items", "within", "k"),
    [
        (7, range(7), 3),  # whole set, rate 3/7: both the OR and the AND steps
        (7, [0, 2, 3, 5, 6], 2),  # within a mask
        (70, range(70), 69),  # two words, a partial last one; surplus items dropped
        (70, range(3, 70, 2), 1),  # rate below 2**-12 * 35: no Bernoulli step, one added
        (5, range(5), 5),  # rate 1: every item
        (5, range(5), 0),  # rate 0: none
    ],
)
def test_random_subsets_are_uniform_k_subsets(n_items, within, k):
    # every k-subset of the eligible items equally likely (chi-square over the position
    # counts, and over whole subsets where there are few), never an item outside them
    within = list(within)
    draws = 6000
    got = _subsets(n_items, k, within, draws, seed=11)
    assert (got.sum(axis=1) == k).all()
    outside = np.setdiff1d(np.arange(n_items), within)
    assert not got[:, outside].any()
    if 0 < k < len(within):
        hits = got[:, within].sum(axis=0)
        assert stats.chisquare(hits).pvalue > 1e-4  # each eligible item in k/|within| of them
    if len(within) <= 7 and 0 < k < len(within):
        keys = got[:, within] @ (1 << np.arange(len(within)))
        values, counts = np.unique(keys, return_counts=True)
        assert values.size == math.comb(len(within), k)  # every subset occurs
        assert stats.chisquare(counts).pvalue > 1e-4


@pytest.mark.parametrize("null", NULLS)
def test_compiled_joint_draws_have_the_numpy_engines_law(null):
    rng = np.random.default_rng(0)
    diff = rng.normal(size=(300, 1))
    perf = (diff + rng.normal(size=(300, 6)) > 0).astype(float)
    conf = (diff + rng.normal(size=(300, 6)) > -0.3).astype(float)
    fast = joint_null_draws(conf, perf, null=null, n=4000, rng=1, engine="numba")
    ref = joint_null_draws(conf, perf, null=null, n=4000, rng=2, engine="numpy")
    se = np.sqrt(fast.var(axis=0) / 4000 + ref.var(axis=0) / 4000)
    assert np.all(np.abs(fast.mean(axis=0) - ref.mean(axis=0)) < 5 * se)
    np.testing.assert_allclose(fast.std(axis=0), ref.std(axis=0), rtol=0.07)
    # fixed chunks with their own seeds: the same draws for the same seed
    np.testing.assert_array_equal(
        fast[:60], joint_null_draws(conf, perf, null=null, n=60, rng=1, engine="numba")
    )


def test_stratified_counts_equal_the_float_products(monkeypatch):
    import metacog_metrics.stratified as strat

    rng = np.random.default_rng(4)
    diff = rng.normal(size=(130, 1))
    perf = (diff + rng.normal(size=(130, 7)) > 0).astype(float)
    conf = (diff + rng.normal(size=(130, 7)) > -0.2).astype(float)
    perms = strat.stratified_permutations(perf, 40, 5)
    compiled = strat.stratified_null_draws(conf, perf, perms)
    # threads share the given permutations: the same draws, in order
    np.testing.assert_array_equal(strat.stratified_null_draws(conf, perf, perms, 3), compiled)
    monkeypatch.setattr(strat, "_compiled_kernels", lambda engine: None)
    products = strat.stratified_null_draws(conf, perf, perms)
    np.testing.assert_array_equal(compiled, products)
