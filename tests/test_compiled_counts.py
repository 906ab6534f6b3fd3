"""Compiled co-occurrence counts on packed bits (numba): the joint draws of binary confidence and
the difficulty-stratified null.

The joint draws arrange each model's 0/1 vectors at random as packed bits; every count of one
pair is then a hypergeometric variate whose law is known exactly, which the tests check. The
stratified null's counts must equal the float products they replaced, to the last bit.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.pairwise import NULLS, joint_null_draws

pytestmark = pytest.mark.skipif(  # under CI a missing numba fails the tests instead
    importlib.util.find_spec("numba") is None and not os.environ.get("CI"),
    reason="numba is not installed (the fast extra): the compiled kernels are not tested",
)


def _kernels():
    from metacog_metrics.pairwise import _numba

    return _numba


def _chi2_p(values, support, probs):
    """Goodness of fit of sampled integers to an exact law (bins with expectation < 5 pooled)."""
    counts = np.array([(values == v).sum() for v in support])
    assert counts.sum() == values.size  # every draw in the support
    expected = probs * values.size
    order = np.argsort(expected)
    small = order[np.cumsum(expected[order]) < 5]
    keep = np.setdiff1d(np.arange(len(support)), small)
    obs = np.append(counts[keep], counts[small].sum())
    exp = np.append(expected[keep], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


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
