"""Pairwise calibration: tau-b engine, random tables, both nulls, per pair and joint."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from pairwise_reference import _collapse_4x4, _random_tables, _tau_cells
from scipy import special, stats

from metacog_metrics.pairwise import (
    NULLS,
    joint_null_draws,
    pair_permutation_test,
    pairwise_calibration,
    pairwise_taus,
    tau_b_from_table,
)
from metacog_metrics.pairwise.common import _bh
from metacog_metrics.pairwise.samplers import (
    _category_counts,
    _category_taus,
    _hg_tables,
    _inverse_cdf_draws,
    _margins_s,
    _random_bits,
    _shuffled_binary,
)
from metacog_metrics.pairwise.tau import _binary_tables, _kendall_s
from tests.availability import unavailable
from tests.exact_laws import FixedUniforms as _FixedUniforms
from tests.exact_laws import chi2_p as _chi2_p

_NO_NUMBA = "numba is not installed (the fast extra): the compiled engine is not tested"
_HAS_NUMBA = importlib.util.find_spec("numba") is not None
#: Skips locally without numba; under CI (which installs it) the tests run and fail instead.
needs_numba = pytest.mark.skipif(not _HAS_NUMBA and not os.environ.get("CI"), reason=_NO_NUMBA)
#: The per-pair engines under test: the NumPy engine always, the compiled one with numba.
ENGINES = ["numpy", pytest.param("numba", marks=needs_numba)]


def _kernels():
    """The compiled per-pair kernels (the test is skipped without numba)."""
    if not _HAS_NUMBA:
        unavailable(_NO_NUMBA)
    from metacog_metrics.pairwise import _numba

    return _numba


def _compiled_base_rate_s(rows, cols, n, seed, ratio):
    """S of ``n`` base-rate tables per pair from the compiled kernel: ``(P, n)``."""
    k = _kernels()
    rows, cols = np.atleast_2d(rows), np.atleast_2d(cols)
    margins = np.ascontiguousarray(np.concatenate([rows, cols], axis=1), dtype=np.int64)
    draws = np.zeros((rows.shape[0], n))
    k.margins_kernel(
        margins, np.zeros(rows.shape[0], dtype=np.int64), n,
        k.state(np.random.SeedSequence(seed)), k.number_tables(int(rows.sum(axis=1).max())),
        float(ratio), draws,
    )  # fmt: skip
    return draws.astype(np.int64)


def _compiled_calibration_taus(a_cats, b_cats, n, seed, ratio):
    """tau-b of ``n`` calibration-preserving tables per pair from the compiled kernel."""
    k = _kernels()
    a, b = (np.ascontiguousarray(np.atleast_2d(v), dtype=np.int64) for v in (a_cats, b_cats))
    draws = np.zeros((a.shape[0], n))
    k.categories_kernel(
        a, b, np.zeros(a.shape[0]), n, k.state(np.random.SeedSequence(seed)),
        k.number_tables(int(a.sum(axis=1).max())), float(ratio), draws,
    )  # fmt: skip
    return draws


#: Samplers of the per-pair null tables: NumPy, and the compiled kernels with every law by
#: ratio of uniforms (HRUA, ratio 0) and with every level-1/2 law tabulated (ratio 1e9).
SAMPLERS = [
    "numpy",
    pytest.param("numba-hrua", marks=needs_numba),
    pytest.param("numba-tables", marks=needs_numba),
]
_RATIO = {"numba-hrua": 0.0, "numba-tables": 1e9}


def _base_rate_draws(sampler, rows, cols, n, seed):
    if sampler == "numpy":
        return _margins_s(np.atleast_2d(rows), np.atleast_2d(cols), n,
                            np.random.default_rng(seed))  # fmt: skip
    return _compiled_base_rate_s(rows, cols, n, seed, _RATIO[sampler])


def _calibration_draws(sampler, a_cats, b_cats, n, seed):
    if sampler == "numpy":
        return _category_taus(a_cats, b_cats, n, np.random.default_rng(seed))
    return _compiled_calibration_taus(a_cats, b_cats, n, seed, _RATIO[sampler])


def _population(n_items, n_models, *, shared=1.0, noise=1.0, seed=0):
    """Shared difficulty axis + per-model thresholds; conf and perf both read the axis."""
    rng = np.random.default_rng(seed)
    diff = shared * rng.normal(size=(n_items, 1))
    thr = rng.normal(scale=0.6, size=(1, n_models))
    perf = (diff + noise * rng.normal(size=(n_items, n_models)) > thr).astype(float)
    conf = (diff + noise * rng.normal(size=(n_items, n_models)) > thr - 0.4).astype(float)
    return conf, perf


def _kendall_variance(x, y):
    """Exact permutation variance of Kendall's S with ties (Kendall 1970)."""
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
    n1 = (t * (t - 1) / 2).sum()
    n2 = (u * (u - 1) / 2).sum()
    return v / ((n0 - n1) * (n0 - n2))


# --------------------------------------------------------------------------------------------
# tau-b
# --------------------------------------------------------------------------------------------


def test_bh_matches_r_p_adjust(stats_reference):
    ref = stats_reference["R"]["bh"]
    q = _bh(np.array(ref["p"]))
    np.testing.assert_allclose(q, ref["p_adjust_BH"], atol=1e-6)


def test_bh_by_hand_with_ties_nan_and_the_cap():
    # m = 4 finite: sorted 0.01, 0.02, 0.02, 0.9 -> 4p/rank 0.04, 0.04, 0.0267, 0.9, then the
    # running minimum from the top: 0.0267, 0.0267, 0.0267, 0.9; the NaN stays NaN
    p = np.array([0.02, np.nan, 0.9, 0.01, 0.02])
    q = _bh(p)
    np.testing.assert_allclose(q[[0, 2, 3, 4]], [0.08 / 3, 0.9, 0.08 / 3, 0.08 / 3])
    assert np.isnan(q[1])
    assert _bh(np.array([0.6, 0.7]))[0] == pytest.approx(0.7)  # 2 * 0.6 = 1.2 -> min(., 0.7)
    assert _bh(np.array([0.9, 0.95, 1.0])).max() == 1.0  # never above 1


def test_kendall_reference(stats_reference):
    ref = stats_reference["R"]["kendall"]["delta_example"]
    conf = np.array([ref["confA"], ref["confB"]]).T
    perf = np.array([ref["perfA"], ref["perfB"]]).T
    assert pairwise_taus(conf, perf)[0] == pytest.approx(ref["tau_b"], abs=1e-6)
    res = stats.kendalltau(ref["dconf"], ref["dperf"])
    assert res.statistic == pytest.approx(ref["tau_b"], abs=1e-6)
    assert res.pvalue == pytest.approx(ref["p_two_sided_normal"], abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        np.int64, st.tuples(st.integers(2, 5), st.integers(2, 4)), elements=st.integers(0, 6)
    )
)
def test_table_tau_matches_scipy(table):
    rows, cols = np.indices(table.shape)
    x = np.repeat(rows.ravel(), table.ravel())
    y = np.repeat(cols.ravel(), table.ravel())
    got = tau_b_from_table(table)
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        assert np.isnan(got)
    else:
        assert got == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


def test_pairwise_taus_all_paths_match_scipy():
    rng = np.random.default_rng(4)
    conf, perf = _population(150, 5)
    ia, ib = np.triu_indices(5, 1)

    def ref(x):
        return [
            stats.kendalltau(x[:, a] - x[:, b], perf[:, a] - perf[:, b]).statistic
            for a, b in zip(ia, ib)
        ]

    np.testing.assert_allclose(pairwise_taus(conf, perf), ref(conf), atol=1e-12)
    tenths = rng.integers(0, 11, size=conf.shape)  # 1/10 grid, many items a level: bincounts
    np.testing.assert_allclose(pairwise_taus(tenths / 10, perf), ref(tenths), atol=1e-12)
    percent = rng.integers(0, 101, size=conf.shape)  # 1/100 grid, few items a level: sort
    np.testing.assert_allclose(pairwise_taus(percent / 100, perf), ref(percent), atol=1e-12)
    real = rng.random(conf.shape)  # no grid: sort path (with a few ties)
    real[:20] = 0.5
    np.testing.assert_allclose(pairwise_taus(real, perf), ref(real), atol=1e-12)


def test_batch_axis_and_pairs():
    conf, perf = _population(120, 4)
    batch = pairwise_taus(np.stack([conf, conf[::-1]]), np.stack([perf, perf[::-1]]))
    assert batch.shape == (2, 6)
    np.testing.assert_allclose(batch[0], batch[1])  # tau-b ignores the item order
    sub = pairwise_taus(conf, perf, pairs=([0, 3], [2, 1]))
    full = pairwise_taus(conf, perf)
    assert sub[0] == full[1] and sub[1] == pytest.approx(full[4])  # (3, 1) == (1, 3)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_swapping_models_keeps_tau(seed):
    rng = np.random.default_rng(seed)
    conf = (rng.random((40, 3)) < 0.6).astype(float)
    perf = (rng.random((40, 3)) < 0.5).astype(float)
    ab = pairwise_taus(conf, perf, pairs=([0], [1]))
    ba = pairwise_taus(conf, perf, pairs=([1], [0]))
    # (b, a) negates both dconf and dperf: tau-b unchanged
    np.testing.assert_allclose(ab, ba, atol=1e-12, equal_nan=True)
    swapped = pairwise_taus(conf[:, [1, 0, 2]], perf[:, [1, 0, 2]])
    np.testing.assert_allclose(swapped[0], ab[0], atol=1e-12, equal_nan=True)
    t = ab[0]
    assert np.isnan(t) or -1 <= t <= 1
    # the (dconf, dperf) table of (b, a) is that of (a, b) with both axes reversed
    tab = _binary_tables(conf, perf, np.array([0, 1]), np.array([1, 0]))
    np.testing.assert_array_equal(tab[1], tab[0][::-1, ::-1])


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.2, 0.8), st.floats(0.2, 0.8))
def test_base_rate_nulls_centred_at_zero(seed, rate_c, rate_p):
    rng = np.random.default_rng(seed)
    conf = (rng.random((80, 3)) < rate_c).astype(float)
    perf = (rng.random((80, 3)) < rate_p).astype(float)
    res = pair_permutation_test(conf, perf, permutations=3000, rng=seed)
    ok = np.isfinite(res.tau)
    # permuting dperf against dconf: E[S] = 0 exactly, so the draws average to 0
    assert np.all(np.abs(res.null_mean[ok]) < 5 * res.null_sd[ok] / np.sqrt(3000) + 1e-12)
    joint = joint_null_draws(conf, perf, n=1500, rng=seed)
    mean, sd = np.nanmean(joint, axis=0), np.nanstd(joint, axis=0)
    assert np.all(np.abs(mean) < 5 * sd / np.sqrt(1500) + 1e-12)


def test_input_errors():
    conf, perf = _population(30, 3)
    with pytest.raises(ValueError, match="same shape"):
        pairwise_taus(conf, perf[:, :2])
    with pytest.raises(ValueError, match="only 0 and 1"):
        pairwise_taus(conf, perf * 0.5)
    bad = conf.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        pairwise_taus(bad, perf)
    with pytest.raises(ValueError, match="null"):
        joint_null_draws(conf, perf, null="uniform", n=2)
    with pytest.raises(ValueError, match="alternative"):
        pair_permutation_test(conf, perf, alternative="bigger", permutations=5)


# --------------------------------------------------------------------------------------------
# Random draws
# --------------------------------------------------------------------------------------------


def test_random_tables_margins_and_expectation():
    rng = np.random.default_rng(0)
    rows = np.array([[30, 140, 30], [5, 10, 185]])
    cols = np.array([[50, 100, 50], [60, 60, 80]])
    t = _random_tables(rows, cols, 20_000, rng)  # (R, C, P, n)
    np.testing.assert_array_equal(t.sum(axis=1).transpose(1, 2, 0)[:, 0], rows)
    np.testing.assert_array_equal(t.sum(axis=0).transpose(1, 2, 0)[:, 0], cols)
    assert (t >= 0).all()
    n = rows.sum(axis=1)
    expected = rows[:, :, None] * cols[:, None, :] / n[:, None, None]  # E[n_ij] = r_i c_j / N
    mean = t.mean(axis=-1).transpose(2, 0, 1)
    var_bound = expected * (1 - rows[:, :, None] / n[:, None, None]) + 1e-9
    assert np.all(np.abs(mean - expected) < 5 * np.sqrt(var_bound / 20_000) + 1e-9)


def test_random_bits_exact_and_uniform():
    rng = np.random.default_rng(1)
    ones = np.array([0, 1, 37, 99, 100, 50] * 500)
    bits = _random_bits(100, ones, rng)
    np.testing.assert_array_equal(bits.sum(axis=1), ones)
    # every position equally likely: per-position frequency of the k = 37 rows near 0.37
    freq = bits[ones == 37].mean(axis=0)
    assert np.abs(freq - 0.37).max() < 5 * np.sqrt(0.37 * 0.63 / 500)
    eligible = rng.random((300, 100)) < 0.5
    want = np.minimum(20, eligible.sum(axis=1))
    inside = _random_bits(100, want, rng, eligible=eligible)
    np.testing.assert_array_equal(inside.sum(axis=1), want)
    assert not (inside & ~eligible).any()


@pytest.mark.parametrize("null", NULLS)
def test_joint_draws_keep_the_right_counts(null):
    conf, perf = _population(200, 4)
    rng = np.random.default_rng(2)
    split = null == "base_rate"  # the base-rate null shuffles conf and perf each on its own
    cs, ps = _shuffled_binary(_category_counts(conf, perf), 200, split, 3, rng)  # (draws, M, N)
    np.testing.assert_array_equal(cs.sum(axis=2), np.tile(conf.sum(axis=0), (3, 1)))
    np.testing.assert_array_equal(ps.sum(axis=2), np.tile(perf.sum(axis=0), (3, 1)))
    joint = (cs * ps).sum(axis=2)
    if null == "calibration_preserving":  # each model's own (conf, perf) pairs are kept
        np.testing.assert_array_equal(joint, np.tile((conf * perf).sum(axis=0), (3, 1)))
    else:
        assert not np.array_equal(joint, np.tile((conf * perf).sum(axis=0), (3, 1)))


# --------------------------------------------------------------------------------------------
# Per-pair null tables: exactness of the block sampler
# --------------------------------------------------------------------------------------------


_LAWS = [  # (good, bad, sample): small, skewed, degenerate, large
    (5, 7, 6), (1, 1, 1), (0, 9, 4), (9, 0, 4), (4, 5, 0), (4, 5, 9), (2, 40, 10),
    (30, 3, 20), (800, 3400, 800), (1500, 1700, 1800), (4, 49_996, 25_000),
    (12_000, 38_000, 9_000), (3, 7, 5),
]  # fmt: skip


def test_hypergeometric_tables_equal_scipy_cdf():
    good, bad, sample = (np.array(v) for v in zip(*_LAWS))
    lo, cdf = _hg_tables(good, bad, sample)
    for j, (g, b, s) in enumerate(_LAWS):
        k = lo[j] + np.arange(cdf.shape[1])
        ref = stats.hypergeom.cdf(k, g + b, g, s)
        np.testing.assert_allclose(cdf[j], ref, rtol=0, atol=1e-12)
        # Values never drawn (outside the window, or past the point where the float CDF
        # reaches 1.0) carry a few 1e-16 of mass at most: the resolution of inverting 53-bit
        # uniforms, i.e. no detectable difference over 10**8 draws.
        assert stats.hypergeom.cdf(lo[j] - 1, g + b, g, s) < 2.0**-60
        last = lo[j] + np.flatnonzero(np.diff(cdf[j], prepend=0.0) > 0)[-1]
        assert stats.hypergeom.sf(last, g + b, g, s) < 2.0**-50
        assert cdf[j][-1] == 1.0


def test_hypergeometric_tables_widen_until_tails_are_negligible(monkeypatch):
    import metacog_metrics.pairwise.samplers as pw

    monkeypatch.setattr(pw, "_WINDOW_SD", 0.5)  # far too narrow: the tail bound must widen it
    monkeypatch.setattr(pw, "_WINDOW_PAD", 0.0)
    good, bad, sample = (np.array(v) for v in zip(*_LAWS))
    lo, cdf = pw._hg_tables(good, bad, sample)
    for j, (g, b, s) in enumerate(_LAWS):
        k = lo[j] + np.arange(cdf.shape[1])
        np.testing.assert_allclose(cdf[j], stats.hypergeom.cdf(k, g + b, g, s), atol=1e-12)
        assert stats.hypergeom.cdf(lo[j] - 1, g + b, g, s) < 2.0**-60


def test_inverse_cdf_draws_are_exact_inversion():
    # The guide table is only a starting point: the draw must be exactly the smallest k with
    # cdf[k] > u, for any u, including u = 0, u on a CDF value and the largest double < 1.
    good, bad, sample = (np.array(v) for v in zip(*_LAWS))
    lo, cdf = _hg_tables(good, bad, sample)
    rng = np.random.default_rng(0)
    group = rng.integers(0, len(_LAWS), 40_000)
    u = rng.random(group.size)
    edge = np.concatenate([[0.0, 1.0 - 2.0**-53, 0.5], cdf[group[:2000], 3], cdf[group[:2000], 0]])
    u[: edge.size] = np.minimum(edge, 1.0 - 2.0**-53)
    got = _inverse_cdf_draws(lo, cdf, group, _FixedUniforms(u))
    want = np.array([lo[g] + np.searchsorted(cdf[g], x, side="right") for g, x in zip(group, u)])
    np.testing.assert_array_equal(got, want)


def _tables_3x3(rows, cols):
    """Every 3x3 table with the given margins and its exact probability under permutations."""
    rows, cols = np.asarray(rows), np.asarray(cols)
    n = rows.sum()
    out, logp = [], []
    for a in range(min(rows[0], cols[0]) + 1):
        for b in range(min(rows[0] - a, cols[1]) + 1):
            for c in range(min(rows[1], cols[0] - a) + 1):
                for d in range(min(rows[1] - c, cols[1] - b) + 1):
                    t = np.array([[a, b, rows[0] - a - b], [c, d, rows[1] - c - d], [0, 0, 0]])
                    t[2] = cols - t[0] - t[1]
                    if (t < 0).any() or t[2].sum() != rows[2]:
                        continue
                    out.append(t)
                    logp.append(
                        special.gammaln(rows + 1).sum() + special.gammaln(cols + 1).sum()
                        - special.gammaln(n + 1) - special.gammaln(t + 1).sum()
                    )  # fmt: skip
    return np.array(out), np.exp(np.array(logp))


def _brute_s(t):
    """Kendall's S of a table by counting cell pairs (independent of the library formula)."""
    s = 0
    for i, j in np.ndindex(3, 3):
        for k, m in np.ndindex(3, 3):
            s += t[i, j] * t[k, m] * np.sign(k - i) * np.sign(m - j)
    return s // 2


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize(
    "rows, cols", [([3, 6, 4], [4, 5, 4]), ([2, 9, 3], [5, 7, 2]), ([5, 5, 5], [1, 13, 1])]
)
def test_base_rate_tables_follow_the_exact_permutation_law(rows, cols, sampler):
    # Every table enumerated with its exact (Fisher-Freeman-Halton) probability; the law of S
    # it implies must be what the block sampler draws. 150,000 draws: a sampler off by even a
    # little in one cell's conditional law fails by many orders of magnitude.
    tables, probs = _tables_3x3(rows, cols)
    assert probs.sum() == pytest.approx(1.0)
    s_exact = np.array([_brute_s(t) for t in tables])
    support = np.unique(s_exact)
    law = np.array([probs[s_exact == v].sum() for v in support])
    draws = _base_rate_draws(sampler, np.array([rows]), np.array([cols]), 150_000, 1)
    assert set(np.unique(draws[0])) <= set(support)
    assert _chi2_p(draws[0], support, law) > 1e-4
    # ... and the engine's S is the library's S of the same tables
    np.testing.assert_array_equal(s_exact, _kendall_s(tables))


def _exact_calibration_law(ca, pa, cb, pb):
    """Exact law of tau-b under the calibration-preserving null by enumerating permutations."""
    from itertools import permutations

    taus = []
    for perm in permutations(range(len(ca))):
        p = list(perm)
        dc, dp = ca - cb[p], pa - pb[p]
        taus.append(stats.kendalltau(dc, dp).statistic if np.ptp(dc) and np.ptp(dp) else np.nan)
    taus = np.round(np.array(taus), 12)
    finite = taus[np.isfinite(taus)]
    support, counts = np.unique(finite, return_counts=True)
    return support, counts / taus.size, np.isnan(taus).mean()


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize("seed", [0, 1])
def test_calibration_tables_follow_the_exact_permutation_law(seed, sampler):
    # 7 items: all 5040 matchings of B's items to A's enumerated, tau-b from scipy.
    rng = np.random.default_rng(seed)
    ca, pa, cb, pb = (rng.integers(0, 2, 7) for _ in range(4))
    ca[:2], cb[:2], pa[:2], pb[:2] = [0, 1], [1, 0], [1, 0], [0, 1]  # both values everywhere
    support, law, nan_share = _exact_calibration_law(ca, pa, cb, pb)
    cats_a = np.bincount(2 * ca + pa, minlength=4)[None]
    cats_b = np.bincount(2 * cb + pb, minlength=4)[None]
    taus = _calibration_draws(sampler, cats_a, cats_b, 200_000, seed + 10)[0]
    assert np.isnan(taus).mean() == pytest.approx(nan_share, abs=4e-3)
    finite = np.round(taus[np.isfinite(taus)], 12)
    assert set(finite) <= set(support)
    assert _chi2_p(finite, support, law / law.sum()) > 1e-4


def _old_calibration_taus(a_cats, b_cats, n, rng):
    """The sequential 4x4 sampler the block sampler replaced (a reference)."""
    return _tau_cells(_collapse_4x4(_random_tables(a_cats, b_cats, n, rng)))


def _ks_p(x, y):
    return stats.ks_2samp(x, y, method="asymp").pvalue


def test_block_samplers_match_scipy_random_table_and_the_old_sampler():
    # Realistic margins (300 items, shared difficulty): the block samplers (NumPy, and the
    # compiled kernels when numba is installed) against two independent exact samplers,
    # scipy.stats.random_table (Patefield) and the old cell-by-cell sampler. Two-sample KS on
    # S (base rate) and tau-b (calibration).
    conf, perf = _population(300, 3, seed=4)
    ia, ib = np.triu_indices(3, 1)
    tables = _binary_tables(conf, perf, ia, ib)
    code = (2 * conf + perf).astype(int)
    cats = np.stack([np.bincount(code[:, j], minlength=4) for j in range(3)])
    n = 20_000
    new_s = _margins_s(tables.sum(-1), tables.sum(-2), n, np.random.default_rng(1))
    new_tau = _category_taus(cats[ia], cats[ib], n, np.random.default_rng(2))
    old_tau = _old_calibration_taus(cats[ia], cats[ib], n, np.random.default_rng(3))
    compiled = _HAS_NUMBA or bool(os.environ.get("CI"))  # (under CI numba must be there)
    if compiled:
        k = _kernels()
        lf = k.number_tables(300)
        margins = np.ascontiguousarray(
            np.concatenate([tables.sum(-1), tables.sum(-2)], axis=1), dtype=np.int64
        )
        fast_s, fast_tau = np.zeros((ia.size, n)), np.zeros((ia.size, n))
        k.margins_kernel(margins, np.zeros(ia.size, dtype=np.int64), n,
                         k.state(np.random.SeedSequence(5)), lf, 4.0, fast_s)  # fmt: skip
        k.categories_kernel(np.ascontiguousarray(cats[ia]), np.ascontiguousarray(cats[ib]),
                            np.zeros(ia.size), n, k.state(np.random.SeedSequence(6)), lf, 4.0,
                            fast_tau)  # fmt: skip
    for j in range(ia.size):
        scipy_tables = stats.random_table(tables[j].sum(-1), tables[j].sum(-2)).rvs(
            size=n, random_state=np.random.default_rng(4 + j)
        )
        assert _ks_p(new_s[j], _kendall_s(scipy_tables)) > 1e-3
        t4 = stats.random_table(cats[ia[j]], cats[ib[j]]).rvs(
            size=n, random_state=np.random.default_rng(9 + j)
        )
        scipy_tau = _tau_cells(_collapse_4x4(np.moveaxis(t4, 0, -1)))
        assert _ks_p(new_tau[j], scipy_tau) > 1e-3
        assert _ks_p(new_tau[j], old_tau[j]) > 1e-3
        if compiled:  # the compiled kernels (their default tabulation) against the same two
            scipy_s = _kendall_s(scipy_tables)
            assert _ks_p(fast_s[j], scipy_s) > 1e-3
            assert _ks_p(fast_tau[j], scipy_tau) > 1e-3
            assert _ks_p(fast_tau[j], old_tau[j]) > 1e-3


@pytest.mark.parametrize("engine", ENGINES)
def test_calibration_p_value_matches_brute_force_shuffles(engine):
    # The per-pair p-value against explicit shuffles of B's items (two estimates of one p).
    conf, perf = _population(150, 2, shared=0.5, seed=1, noise=0.8)
    res = pair_permutation_test(
        conf, perf, null="calibration_preserving", permutations=20_000, alternative="less",
        rng=5, engine=engine,
    )  # fmt: skip
    assert res.engine == engine
    rng = np.random.default_rng(6)
    dc0 = conf[:, 0]
    taus = []
    for _ in range(3000):
        p = rng.permutation(150)
        taus.append(stats.kendalltau(dc0 - conf[p, 1], perf[:, 0] - perf[p, 1]).statistic)
    taus = np.array(taus)
    ref = (1 + (taus <= res.tau[0] + 1e-12).sum()) / (taus.size + 1)
    assert 0.005 < ref < 0.995
    se = np.sqrt(ref * (1 - ref) * (1 / 3000 + 1 / 20_000)) + 1e-4
    assert res.p_value[0] == pytest.approx(ref, abs=5 * se)
    assert res.null_mean[0] == pytest.approx(taus.mean(), abs=5 * taus.std() / np.sqrt(3000))


@pytest.mark.parametrize("engine", ENGINES)
def test_degenerate_margins(engine):
    # Model 0 always says yes (its pairs' dconf takes two values only); models 1 and 2 are
    # identical, so the pair (1, 2) has constant dconf and dperf: no tau, no p-value.
    rng = np.random.default_rng(3)
    perf = (rng.random((60, 3)) < 0.5).astype(float)
    conf = (rng.random((60, 3)) < 0.5).astype(float)
    conf[:, 0] = 1.0
    perf[:, 2] = perf[:, 1]
    conf[:, 2] = conf[:, 1]
    for null in NULLS:
        res = pair_permutation_test(conf, perf, null=null, permutations=400, rng=1,
                                    engine=engine)  # fmt: skip
        assert np.isfinite(res.p_value[:2]).all() and (res.n_valid[:2] == 400).all()
        assert np.isnan(res.tau[2]) and np.isnan(res.p_value[2])
        if null == "base_rate":  # margins fixed: every draw is degenerate too
            assert res.n_valid[2] == 0
    # Two items, two matchings: the observed one (tau = 1) and the swapped one, where dconf
    # is constant (tau undefined): half the draws are not valid and do not count.
    two = np.array([[1.0, 0.0], [0.0, 1.0]])
    res = pair_permutation_test(
        two, two, null="calibration_preserving", permutations=400, rng=0, engine=engine
    )
    assert res.tau[0] == 1.0 and 150 < res.n_valid[0] < 250
    assert res.null_mean[0] == 1.0 and res.p_greater[0] == 1.0 and res.p_less[0] == 1.0


# --------------------------------------------------------------------------------------------
# Per-pair tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_base_rate_pair_null_matches_exact_permutation_moments(engine):
    conf, perf = _population(300, 3, seed=5)
    res = pair_permutation_test(conf, perf, null="base_rate", permutations=20_000, rng=1,
                                engine=engine)  # fmt: skip
    ia, ib = np.triu_indices(3, 1)
    for j, (a, b) in enumerate(zip(ia, ib)):
        x, y = conf[:, a] - conf[:, b], perf[:, a] - perf[:, b]
        sd = np.sqrt(_kendall_variance(x, y))
        assert abs(res.null_mean[j]) < 5 * sd / np.sqrt(20_000)
        assert res.null_sd[j] == pytest.approx(sd, rel=0.03)
        assert res.tau[j] == pytest.approx(stats.kendalltau(x, y).statistic)


@pytest.mark.parametrize("engine", ENGINES)
def test_base_rate_pair_p_value_matches_scipy_permutation_test(engine):
    conf, perf = _population(120, 2, seed=8, noise=0.7)
    x, y = conf[:, 0] - conf[:, 1], perf[:, 0] - perf[:, 1]
    ours = pair_permutation_test(conf, perf, permutations=20_000, alternative="greater", rng=3,
                                 engine=engine)  # fmt: skip
    ref = stats.permutation_test(
        (x, y),
        lambda a, b: stats.kendalltau(a, b).statistic,
        permutation_type="pairings",
        n_resamples=4000,
        alternative="greater",
        rng=4,
    )
    assert 0.001 < ref.pvalue < 0.999
    # two Monte Carlo estimates of the same p-value
    se = np.sqrt(ref.pvalue * (1 - ref.pvalue) * (1 / 4000 + 1 / 20_000)) + 1e-4
    assert ours.p_value[0] == pytest.approx(ref.pvalue, abs=5 * se)


@pytest.mark.parametrize("engine", ENGINES)
def test_calibration_pair_null_equals_joint_marginals(engine):
    # Under the joint calibration-preserving null each pair's marginal is exactly the per-pair
    # null (B's items permuted against A's): the 4x4 random tables must reproduce it.
    conf, perf = _population(250, 4, seed=6)
    per_pair = pair_permutation_test(
        conf, perf, null="calibration_preserving", permutations=8000, rng=1, engine=engine
    )
    joint = joint_null_draws(conf, perf, null="calibration_preserving", n=4000, rng=2)
    se = joint.std(axis=0) * np.sqrt(1 / 8000 + 1 / 4000)
    assert np.all(np.abs(per_pair.null_mean - joint.mean(axis=0)) < 5 * se)
    np.testing.assert_allclose(per_pair.null_sd, joint.std(axis=0), rtol=0.06)
    # the shared difficulty axis puts this null far above zero
    assert np.all(per_pair.null_mean > 0.1)


@pytest.mark.parametrize("null", NULLS)
def test_continuous_exact_paths_agree(null):
    conf, perf = _population(200, 3, seed=9)
    rng = np.random.default_rng(0)
    percent = np.clip(
        np.round(0.55 + 0.3 * (conf - 0.5) + 0.1 * rng.normal(size=conf.shape), 2), 0, 1
    )
    grid = pair_permutation_test(percent, perf, null=null, permutations=3000, rng=1)
    jitter = percent + 1e-7 * np.arange(percent.size).reshape(percent.shape) / percent.size
    sort = pair_permutation_test(jitter, perf, null=null, permutations=3000, rng=1)
    # tiny jitter breaks ties only: same observed tau up to the tie correction, same null
    np.testing.assert_allclose(grid.null_mean, sort.null_mean, atol=0.01)
    np.testing.assert_allclose(grid.null_sd, sort.null_sd, rtol=0.1)
    joint = joint_null_draws(percent, perf, null=null, n=1500, rng=3)
    np.testing.assert_allclose(
        joint.std(axis=0), grid.null_sd, rtol=0.12 if null == "calibration_preserving" else 0.5
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("null", NULLS)
def test_workers_and_seed_determinism(null, engine, monkeypatch):
    import metacog_metrics.pairwise.pair as pw

    conf, perf = _population(150, 5)
    kw = {"null": null, "permutations": 500, "engine": engine}
    a = pair_permutation_test(conf, perf, rng=11, workers=1, **kw)
    a2 = pair_permutation_test(conf, perf, rng=11, workers=2, **kw)
    np.testing.assert_array_equal(a.null_sd, a2.null_sd)
    monkeypatch.setattr(pw, "_TABLES_PER_CHUNK", 1000)  # 2 pairs a chunk: many tasks
    b = pair_permutation_test(conf, perf, rng=11, workers=2, **kw)
    b1 = pair_permutation_test(conf, perf, rng=11, workers=1, **kw)
    c = pair_permutation_test(conf, perf, rng=12, workers=2, **kw)
    np.testing.assert_array_equal(b.p_value, b1.p_value)
    np.testing.assert_array_equal(b.null_mean, b1.null_mean)
    assert not np.array_equal(b.null_mean, c.null_mean)
    # another chunk size is another (fixed) stream layout: other draws, the same law
    assert np.all(np.abs(a.null_mean - b.null_mean) < 6 * a.null_sd / np.sqrt(250))
    j1 = joint_null_draws(conf, perf, n=50, rng=5)
    j2 = joint_null_draws(conf, perf, n=50, rng=5)
    np.testing.assert_array_equal(j1, j2)


def test_p_value_conventions():
    conf, perf = _population(200, 3, seed=2)
    res = pair_permutation_test(
        conf, perf, null="calibration_preserving", permutations=999, alternative="greater", rng=0
    )
    # observed far below the calibration-preserving null: minimal "less" p, maximal "greater"
    np.testing.assert_allclose(res.p_less, 1 / 1000)
    np.testing.assert_allclose(res.p_value, res.p_greater)
    two = pair_permutation_test(conf, perf, null="calibration_preserving", permutations=999, rng=0)
    np.testing.assert_allclose(
        two.p_value, np.minimum(1, 2 * np.minimum(two.p_greater, two.p_less))
    )
    np.testing.assert_allclose(two.q_value, stats.false_discovery_control(two.p_value))


# --------------------------------------------------------------------------------------------
# The mean over pairs: joint draws
# --------------------------------------------------------------------------------------------


def test_base_rate_mean_null_needs_joint_draws():
    # The case: 10 models x 400 items. Shuffling the draw index of each pair
    # independently turns joint draws into independent per-pair draws with the same
    # marginals; for the base-rate null that understates the sd of the mean (about three-fold
    # at 20 models x 1,000 items).
    conf, perf = _population(400, 10, seed=3)
    rng = np.random.default_rng(0)
    for null, ratio in (("base_rate", (1.5, 3.0)), ("calibration_preserving", (0.8, 1.25))):
        joint = joint_null_draws(conf, perf, null=null, n=1500, rng=4)
        independent = np.stack([rng.permutation(col) for col in joint.T], axis=1)
        r = joint.mean(axis=1).std() / independent.mean(axis=1).std()
        assert ratio[0] < r < ratio[1], (null, r)
        if null == "base_rate":
            assert abs(joint.mean()) < 0.005  # centred at zero


def test_nulls_centred_as_expected():
    # Items exchangeable across models (no shared difficulty), each model individually
    # calibrated: the observed mean tau is typical of the calibration-preserving null and
    # far above the base-rate null (centred at 0).
    rng = np.random.default_rng(7)
    perf = (rng.random((300, 6)) < 0.6).astype(float)
    conf = np.where(rng.random((300, 6)) < 0.8, perf, 1 - perf)
    res = pairwise_calibration(conf, perf, permutations=0, joint_permutations=600, rng=1)
    br, cp = res.nulls["base_rate"], res.nulls["calibration_preserving"]
    assert abs(br.mean) < 0.01 and br.p_greater < 0.01
    assert cp.p_value > 0.01 and abs(res.mean_tau - cp.mean) < 4 * cp.sd
    # a shared difficulty axis: observed far below the calibration-preserving null
    conf, perf = _population(300, 6, shared=2.0, seed=2)
    res = pairwise_calibration(conf, perf, permutations=0, joint_permutations=300, rng=1)
    assert res.nulls["calibration_preserving"].p_less < 0.01
    assert res.nulls["calibration_preserving"].mean > res.mean_tau + 0.1


def test_pairwise_calibration_end_to_end():
    conf, perf = _population(300, 6, seed=1)
    reasoning = [True, True, False, False, True, None]
    res = pairwise_calibration(
        conf,
        perf,
        models=list("abcdef"),
        reasoning=reasoning,
        permutations=400,
        joint_permutations=200,
        rng=3,
    )
    again = pairwise_calibration(
        conf,
        perf,
        models=list("abcdef"),
        reasoning=reasoning,
        permutations=400,
        joint_permutations=200,
        rng=3,
    )
    assert res.n_pairs == 15 and res.mean_tau == pytest.approx(np.nanmean(res.tau))
    np.testing.assert_array_equal(res.nulls["base_rate"].draws, again.nulls["base_rate"].draws)
    np.testing.assert_array_equal(
        res.per_pair["base_rate"].p_value, again.per_pair["base_rate"].p_value
    )
    curve = res.delta_curve
    assert np.all(np.diff(curve.n_pairs) >= 0) and curve.n_pairs[-1] == 15
    assert curve.mean_tau[-1] == pytest.approx(res.mean_tau)
    assert curve.null_mean["base_rate"][-1] == pytest.approx(res.nulls["base_rate"].mean)
    assert set(res.pair_types) == {"R-R", "R-NR", "NR-NR"}
    assert res.pair_types["R-R"].n_pairs == 3 and res.pair_types["NR-NR"].n_pairs == 1
    assert res.pair_type.count(None) == 5  # every pair with model f
    table = res.table
    for kind in ("R-R", "R-NR"):
        taus = table.loc[table["pair_type"] == kind, "tau"].to_numpy()
        assert res.pair_types[kind].median_tau == pytest.approx(float(np.median(taus)))
        assert res.pair_types[kind].mean_tau == pytest.approx(float(np.mean(taus)))
    assert np.isnan(res.pair_types["NR-NR"].median_tau)  # 1 pair, below min_pairs
    assert list(table.columns[:7]) == [
        "model_a",
        "model_b",
        "tau",
        "accuracy_a",
        "accuracy_b",
        "accuracy_gap",
        "pair_type",
    ]
    p = res.per_pair["base_rate"].p_value
    q = stats.false_discovery_control(p[np.isfinite(p)], method="bh")
    assert res.fdr_significant_share == pytest.approx(float(np.mean(q < res.fdr_alpha)))
    assert res.fdr_significant_share == res.fdr_share("base_rate")
    d = res.to_dict()
    assert d["nulls"]["calibration_preserving"]["n_draws"] == 200


# --------------------------------------------------------------------------------------------
# The compiled engine (numba): its pieces, agreement with the NumPy engine, selection, cache
# --------------------------------------------------------------------------------------------


@needs_numba
def test_compiled_uniforms_are_numpy_sfc64():
    k = _kernels()
    ss = np.random.SeedSequence(2024)
    st = k.state(ss)
    from compiled_helpers import uniforms

    got = uniforms(st, 1000)
    np.testing.assert_array_equal(got, np.random.Generator(np.random.SFC64(ss)).random(1000))
    more = uniforms(st, 10)  # the state advanced in place: the stream continues
    np.testing.assert_array_equal(
        more, np.random.Generator(np.random.SFC64(ss)).random(1010)[1000:]
    )


@needs_numba
def test_compiled_bounded_integers_are_exactly_uniform():
    # Lemire's multiply-shift needs its rejection step: without it, for a bound of 3 * 2**30
    # every third value would take two of the 2**32 inputs and the others one (P(k % 3 == 0) =
    # 1/2 instead of 1/3). Each 64-bit output serves two integers: consecutive pairs are
    # independent (a 6 x 6 table), and the halves are those of the SFC64 stream.
    k = _kernels()
    from compiled_helpers import below_draws

    big = 3 * 2**30
    x = below_draws(big, 300_000, k.state(np.random.SeedSequence(5)))
    assert x.min() >= 0 and x.max() < big
    assert _chi2_p(x % 3, [0, 1, 2], np.full(3, 1 / 3)) > 1e-4
    assert _chi2_p(x // 2**30, [0, 1, 2], np.full(3, 1 / 3)) > 1e-4
    y = below_draws(6, 360_000, k.state(np.random.SeedSequence(6)))
    assert _chi2_p(y, list(range(6)), np.full(6, 1 / 6)) > 1e-4
    assert _chi2_p(6 * y[0::2] + y[1::2], list(range(36)), np.full(36, 1 / 36)) > 1e-4
    assert (below_draws(1, 1000, k.state(np.random.SeedSequence(7))) == 0).all()
    ss = np.random.SeedSequence(8)
    words = np.random.SFC64(ss).random_raw(4)
    got = below_draws(2**31, 8, k.state(ss))  # 2**31 = 2**32 / 2: never rejected, x >> 1
    halves = np.stack([words >> np.uint64(32), words & np.uint64(0xFFFFFFFF)], axis=1).ravel()
    np.testing.assert_array_equal(got, (halves >> np.uint64(1)).astype(np.int64))


@needs_numba
def test_compiled_tables_equal_scipy_cdf():
    k = _kernels()
    cap = 2 * k._HALF_CAP + 1
    for g, b, s in _LAWS:
        buf, cdf = np.empty(cap), np.empty(cap)
        guide = np.empty(4 * cap + 2, dtype=np.int64)
        lo = k._tabulate(g, b, s, buf, cdf, guide)
        width = guide[-2]
        cdf = cdf[:width]
        ref = stats.hypergeom.cdf(lo + np.arange(width), g + b, g, s)
        np.testing.assert_allclose(cdf, ref, rtol=0, atol=1e-12)
        assert cdf[-1] == 1.0 and np.all(np.diff(cdf) >= 0)
        assert stats.hypergeom.cdf(lo - 1, g + b, g, s) < 2.0**-60  # left out: < 2**-60
        assert stats.hypergeom.sf(lo + width - 1, g + b, g, s) < 2.0**-59
        # the guide table: guide[i] is the first j with cdf[j] > i / L
        size = guide[-1]
        assert size >= 2 * width and size & (size - 1) == 0
        want = np.searchsorted(cdf, np.arange(size) / size, side="right")
        np.testing.assert_array_equal(guide[:size], want)


@needs_numba
@pytest.mark.parametrize("tabulated", [False, True], ids=["hrua", "table"])
def test_compiled_hypergeometric_draws_follow_the_exact_law(tabulated):
    # Each law of _LAWS (small, skewed, degenerate, up to 50,000 items): 200,000 draws by
    # ratio of uniforms (HRUA with tabulated log-factorials) or by the tabulated inversion,
    # against SciPy's pmf (chi-square, sparse tails pooled).
    k = _kernels()
    from compiled_helpers import hypergeometric_draws

    lf = k.number_tables(60_000)
    for j, (g, b, s) in enumerate(_LAWS):
        st = k.state(np.random.SeedSequence([j, int(tabulated)]))
        x = hypergeometric_draws(g, b, s, 200_000, st, lf, tabulated)
        support = np.arange(max(0, s - b), min(s, g) + 1)
        assert np.isin(x, support).all()
        if support.size == 1:
            continue
        probs = stats.hypergeom.pmf(support, g + b, g, s)
        assert _chi2_p(x, list(support), probs / probs.sum()) > 1e-4, (g, b, s)


@needs_numba
def test_compiled_calibration_null_matches_numpy_at_many_items():
    # 20,000 items: level-2 laws too wide to tabulate for 20,000 draws, so HRUA with shared
    # set-ups takes them; the compiled draws against the NumPy block sampler (KS).
    conf, perf = _population(20_000, 3, seed=12)
    ia, ib = np.triu_indices(3, 1)
    code = (2 * conf + perf).astype(int)
    cats = np.stack([np.bincount(code[:, j], minlength=4) for j in range(3)])
    n = 20_000
    ref = _category_taus(cats[ia], cats[ib], n, np.random.default_rng(1))
    fast = _compiled_calibration_taus(cats[ia], cats[ib], n, 2, 4.0)
    tables = _binary_tables(conf, perf, ia, ib)
    ref_s = _margins_s(tables.sum(-1), tables.sum(-2), n, np.random.default_rng(3))
    fast_s = _compiled_base_rate_s(tables.sum(-1), tables.sum(-2), n, 4, 4.0)
    for j in range(ia.size):
        assert _ks_p(ref[j], fast[j]) > 1e-3
        assert _ks_p(ref_s[j], fast_s[j]) > 1e-3


@needs_numba
@pytest.mark.parametrize("null", NULLS)
def test_engines_give_statistically_indistinguishable_p_values(null):
    # Two Monte Carlo estimates of the same per-pair p-values (different engines, different
    # streams): their differences stay within sampling error, and so do the null moments.
    # No shared difficulty for the calibration null, so its p-values are not all minimal.
    conf, perf = _population(250, 5, shared=0.0 if null == "calibration_preserving" else 0.3,
                             noise=0.8, seed=13)  # fmt: skip
    b = 20_000
    kw = {"null": null, "permutations": b, "alternative": "greater"}
    ref = pair_permutation_test(conf, perf, rng=1, engine="numpy", **kw)
    fast = pair_permutation_test(conf, perf, rng=2, engine="numba", **kw)
    assert (ref.engine, fast.engine) == ("numpy", "numba")
    np.testing.assert_array_equal(ref.tau, fast.tau)
    moderate = 0
    for p_ref, p_fast in ((ref.p_greater, fast.p_greater), (ref.p_less, fast.p_less)):
        p = (p_ref + p_fast) / 2
        se = np.sqrt(p * (1 - p) * 2 / b) + 1e-4
        assert np.all(np.abs(p_ref - p_fast) < 5 * se)
        moderate += int(((p > 0.01) & (p < 0.99)).sum())
    assert moderate >= 5  # the comparison is not only between minimal p-values
    se_mean = ref.null_sd * np.sqrt(2 / b)
    assert np.all(np.abs(ref.null_mean - fast.null_mean) < 5 * se_mean)
    np.testing.assert_allclose(ref.null_sd, fast.null_sd, rtol=0.04)
    np.testing.assert_array_equal(ref.n_valid, fast.n_valid) if null == "base_rate" else None


@needs_numba
def test_engine_selection(monkeypatch):
    from metacog_metrics.pairwise import engines

    conf, perf = _population(100, 3, seed=14)
    monkeypatch.delenv("METACOG_NO_NUMBA", raising=False)
    assert pair_permutation_test(conf, perf, permutations=50, rng=0).engine == "numba"
    numpy = pair_permutation_test(conf, perf, permutations=50, rng=0, engine="numpy")
    monkeypatch.setenv("METACOG_NO_NUMBA", "1")
    forced = pair_permutation_test(conf, perf, permutations=50, rng=0)
    assert forced.engine == "numpy"  # the environment forces the NumPy engine: its draws
    np.testing.assert_array_equal(forced.null_mean, numpy.null_mean)
    assert pair_permutation_test(conf, perf, permutations=50, rng=0, engine="numba").engine == (
        "numba"
    )  # an explicit engine wins over the environment
    monkeypatch.setenv("METACOG_NO_NUMBA", "0")
    assert pair_permutation_test(conf, perf, permutations=50, rng=0).engine == "numba"
    res = pairwise_calibration(conf, perf, permutations=50, joint_permutations=10, rng=0,
                               engine="numpy")  # fmt: skip
    assert {r.engine for r in res.per_pair.values()} == {"numpy"}
    # real-valued confidence: level and matching tables on either engine
    real = conf * 0.5 + 0.25
    for null in NULLS:
        kw = {"null": null, "permutations": 20, "rng": 0}
        assert pair_permutation_test(real, perf, engine="numba", **kw).engine == "numba"
        assert pair_permutation_test(real, perf, engine="numpy", **kw).engine == "numpy"
    with pytest.raises(ValueError, match="engine"):
        pair_permutation_test(conf, perf, permutations=5, engine="cuda")
    with pytest.raises(ValueError, match="engine"):
        pairwise_calibration(conf, perf, permutations=0, joint_permutations=0, engine="cuda")
    # numba missing (simulated): "auto" falls back to NumPy, "numba" says what to install
    monkeypatch.setattr(engines, "_compiled_state", {"module": None, "error": ImportError("gone")})
    monkeypatch.delenv("METACOG_NO_NUMBA")
    assert pair_permutation_test(conf, perf, permutations=50, rng=0).engine == "numpy"
    with pytest.raises(ImportError, match=r"metacog-eval\[fast\]"):
        pair_permutation_test(conf, perf, permutations=5, engine="numba")


def test_numpy_engine_without_numba():
    # The package imports and draws with NumPy alone: numba hidden from a fresh interpreter.
    code = textwrap.dedent(
        """
        import sys
        sys.modules["numba"] = None  # import numba -> ImportError
        import numpy as np
        from metacog_metrics.pairwise import pair_permutation_test
        rng = np.random.default_rng(0)
        conf = (rng.random((80, 3)) < 0.6).astype(float)
        perf = (rng.random((80, 3)) < 0.5).astype(float)
        res = pair_permutation_test(conf, perf, permutations=200, rng=1)
        assert res.engine == "numpy" and np.isfinite(res.p_value).all(), res
        try:
            pair_permutation_test(conf, perf, permutations=5, engine="numba")
        except ImportError as exc:
            print("ImportError", exc)
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "METACOG_NO_NUMBA"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True)  # fmt: skip
    assert "ImportError engine='numba' needs numba" in out.stdout


@needs_numba
def test_compiled_cache_never_lands_in_an_unwritable_package(tmp_path):
    # numba's cache locators, as the kernels use them (_jit): a package folder whose
    # __pycache__ cannot be created (a plain file stands in its way, which stops root too)
    # sends the cache to the user's cache folder; with that blocked as well, the functions
    # compile in memory and still run.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__pycache__").write_text("not a folder")
    (pkg / "probe_mod.py").write_text(textwrap.dedent(
        """
        from metacog_metrics.pairwise._numba import _jit

        @_jit("int64(int64)")
        def bump(x):
            return x + 1
        """
    ))  # fmt: skip
    code = "import probe_mod; print(probe_mod.bump(41))"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(pkg), *sys.path])
    user = tmp_path / "user-cache"
    env["XDG_CACHE_HOME"] = str(user)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300, check=True)  # fmt: skip
    assert out.stdout.strip() == "42"
    assert (pkg / "__pycache__").is_file()
    cached = [p.name for p in user.rglob("*") if p.is_file()]
    assert any(name.startswith("probe_mod.bump") and name.endswith(".nbi") for name in cached)
    assert sorted(p.name for p in pkg.iterdir()) == ["__pycache__", "probe_mod.py"]
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "numba").write_text("not a folder")
    env["XDG_CACHE_HOME"] = str(blocked)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300, check=True)  # fmt: skip
    assert out.stdout.strip() == "42"
    assert sorted(p.name for p in blocked.iterdir()) == ["numba"]


def test_fdr_share_by_direction_on_data_without_private_signal():
    # Shared difficulty only: the calibration-preserving null sits far above the observed taus,
    # so every pair it finds significant is below it; the split adds up to the either-way share.
    conf, perf = _population(400, 8, seed=2)
    res = pairwise_calibration(conf, perf, permutations=300, joint_permutations=50, rng=0)
    for null in ("base_rate", "calibration_preserving"):
        split = res.fdr_share_by_direction(null)
        assert split["above"] + split["below"] == pytest.approx(res.fdr_share(null))
    cp = res.fdr_share_by_direction("calibration_preserving")
    assert cp["below"] > 0.5 and cp["above"] == 0.0
    t = res.table
    sig = t["calibration_preserving_q"] < res.fdr_alpha
    below = sig & (t["tau"] < t["calibration_preserving_null_mean"])
    assert cp["below"] == pytest.approx(below.sum() / len(t))


# --------------------------------------------------------------------------------------------
# Twin of the engine-agreement checks that needs no numba: the NumPy engine's tie counting
# against exact enumeration of every permutation
# --------------------------------------------------------------------------------------------


def _tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """tau-b of each row pair from its definition (all i < j pairs; NaN without variation)."""
    i, j = np.triu_indices(x.shape[1], 1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    den = np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / den


@pytest.mark.parametrize("null", NULLS)
def test_numpy_engine_counts_ties_with_the_observed_value(null):
    # Seven items, binary data: most permutations tie with the observed tau, so counting
    # ">=" as ">" (or the reverse) moves the p-values by far more than Monte Carlo error.
    import itertools

    conf = np.array([[0, 0], [0, 1], [1, 0], [0, 0], [1, 1], [1, 1], [1, 1]], dtype=float)
    perf = np.array([[1, 0], [0, 0], [0, 0], [1, 0], [1, 0], [1, 0], [1, 0]], dtype=float)
    perms = np.array(list(itertools.permutations(range(7))))
    dconf, dperf = conf[:, 0] - conf[:, 1], perf[:, 0] - perf[:, 1]
    if null == "base_rate":  # dconf against permuted dperf
        taus = _tau_b_rows(np.tile(dconf, (len(perms), 1)), dperf[perms])
    else:  # B's items permuted against A's
        taus = _tau_b_rows(conf[:, 0] - conf[perms, 1], perf[:, 0] - perf[perms, 1])
    observed = _tau_b_rows(dconf[None], dperf[None])[0]
    assert observed == pytest.approx(stats.kendalltau(dconf, dperf).statistic)
    ok = np.isfinite(taus)
    tie = np.isclose(taus[ok], observed, atol=1e-12)
    assert tie.mean() > 0.5  # ties matter here
    exact_ge = (taus[ok] >= observed - 1e-12).mean()
    exact_le = (taus[ok] <= observed + 1e-12).mean()
    b = 20_000
    res = pair_permutation_test(
        conf, perf, null=null, permutations=b, alternative="greater", rng=7, engine="numpy"
    )
    assert res.engine == "numpy" and res.tau[0] == pytest.approx(observed)
    for p, exact in ((res.p_greater[0], exact_ge), (res.p_less[0], exact_le)):
        se = np.sqrt(exact * (1 - exact) / b) + 1 / b
        assert p == pytest.approx(exact, abs=5 * se)
