"""Pairwise calibration on pairwise-complete items: tables, joint draws and taus with missing
items, checked against brute force and SciPy on each pair's shared items, and the joint null
against the per-pair nulls where missingness follows difficulty."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.pairwise import pairwise_calibration
from metacog_metrics.pairwise.masked import (
    check_ragged,
    masked_binary_tables,
    masked_grid,
    masked_taus,
    pair_item_groups,
)
from tests.availability import unavailable


def _ragged(n_items=80, m=5, *, binary=True, seed=0, missing=0.25):
    rng = np.random.default_rng(seed)
    p = (rng.random((n_items, m)) < 0.6).astype(float)
    c = (rng.random((n_items, m)) < 0.5).astype(float) if binary else np.round(
        rng.random((n_items, m)), 1)  # fmt: skip
    gone = rng.random((n_items, m)) < missing
    gone[:, 0] = False  # one complete model
    c[gone] = np.nan
    p[gone] = np.nan
    return c, p


def _brute_table(c, p, a, b):
    ok = ~np.isnan(c[:, a]) & ~np.isnan(c[:, b])
    dc = (c[ok, a] - c[ok, b]).astype(int) + 1
    dp = (p[ok, a] - p[ok, b]).astype(int) + 1
    t = np.zeros((3, 3), dtype=np.int64)
    np.add.at(t, (dc, dp), 1)
    return t


def _scipy_tau(c, p, a, b):
    ok = ~np.isnan(c[:, a]) & ~np.isnan(c[:, b])
    return stats.kendalltau(np.round(c[ok, a] - c[ok, b], 12), p[ok, a] - p[ok, b]).statistic


def test_masked_tables_equal_brute_force_tables():
    c, p = _ragged(n_items=130, m=6, seed=1)  # 130 items: bits span three words
    cz, pz, present, binary = check_ragged(c, p)
    assert binary and present.sum() < present.size
    ia, ib = np.triu_indices(6, k=1)
    t = masked_binary_tables((cz > 0.5).T, (pz > 0.5).T, present.T, ia, ib)
    for k, (a, b) in enumerate(zip(ia, ib)):
        np.testing.assert_array_equal(t[k], _brute_table(c, p, a, b))
    # a batch axis broadcasts against the one presence mask
    both = np.stack([(cz > 0.5).T, (pz > 0.5).T & present.T])
    tb = masked_binary_tables(both, both[::-1], present.T, ia, ib)
    np.testing.assert_array_equal(tb[0], t)


@pytest.mark.parametrize("n_items", [40, 700])  # sorted path; grid-code path (3 * 21 <= 700)
def test_masked_real_valued_taus_equal_scipy(n_items):
    c, p = _ragged(n_items=n_items, m=4, binary=False, seed=2)
    ia, ib = np.triu_indices(4, k=1)
    got = masked_taus(c, p, ia, ib, masked_grid(c))
    want = [_scipy_tau(c, p, a, b) for a, b in zip(ia, ib)]
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(masked_taus(c, p, ia, ib, None), want, atol=1e-12)


def test_pairs_are_grouped_by_their_shared_items():
    present = np.array([[1, 1, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    ia, ib = np.triu_indices(4, k=1)  # (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    groups = pair_item_groups(present, ia, ib)
    found = {tuple(pairs): tuple(mask) for mask, pairs in groups}
    assert found == {
        (0,): (True, True, True, True),
        (1, 3): (True, False, True, True),
        (2, 4): (True, True, False, True),
        (5,): (True, False, False, True),
    }


def _reference_joint(c, p, null, n, rng):
    """Joint draws by brute force: each model permuted among its own items (NumPy); every
    pair, on its shared items, sees each model's values there in the order they land (sorted
    by hand), its tau-b from SciPy."""
    m = c.shape[1]
    ia, ib = np.triu_indices(m, k=1)
    out = np.empty(n)
    for k in range(n):
        lands_c, lands_p = [], []
        for j in range(m):
            rows = np.flatnonzero(~np.isnan(c[:, j]))
            perm = rng.permutation(rows)  # the value of item perm[i] lands on item rows[i]
            lands_c.append(dict(zip(perm.tolist(), rows.tolist())))
            other = rng.permutation(rows) if null == "base_rate" else perm
            lands_p.append(dict(zip(other.tolist(), rows.tolist())))
        taus = []
        for a, b in zip(ia, ib):
            shared = np.flatnonzero(~np.isnan(c[:, a]) & ~np.isnan(c[:, b])).tolist()
            cols = {}
            for j in (a, b):
                by_c = sorted(shared, key=lambda i, j=j: lands_c[j][i])
                by_p = sorted(shared, key=lambda i, j=j: lands_p[j][i])
                cols[j] = (c[by_c, j], p[by_p, j])
            dc = np.round(cols[a][0] - cols[b][0], 12)
            taus.append(stats.kendalltau(dc, cols[a][1] - cols[b][1]).statistic)
        out[k] = np.nanmean(taus)
    return out


def test_three_column_tau_equals_the_generic_table_formula():
    from metacog_metrics.pairwise import tau_b_from_table
    from metacog_metrics.pairwise.masked import _tau_b_columns

    rng = np.random.default_rng(11)
    t = rng.integers(0, 6, size=(50, 7, 3)) * (rng.random((50, 7, 3)) < 0.6)
    t[0] = 0  # an empty table: NaN
    t[1, :, 1:] = 0  # one dperf column: NaN
    got = _tau_b_columns(np.swapaxes(t, -1, -2))
    np.testing.assert_allclose(got, tau_b_from_table(t), atol=1e-13, equal_nan=True)
    assert np.isnan(got[:2]).all()


def _engines():
    from metacog_metrics.pairwise.pair import compiled_engine_available

    return ["numpy", "numba"] if compiled_engine_available() else ["numpy"]


@pytest.mark.parametrize(
    ("binary", "n_items", "missing"),
    [(True, 60, 0.25), (False, 60, 0.25), (False, 200, 0.25), (False, 60, 0.04)],
)  # 200 items of a 0.1 grid: the NumPy integer-code path; 4% missing: pairs where one model's
# items are all shared, read by the compiled kernel without a walk
@pytest.mark.parametrize("null", ["base_rate", "calibration_preserving"])
@pytest.mark.parametrize("engine", _engines())
def test_joint_draws_on_ragged_items_match_a_brute_force_reference(
    binary, n_items, missing, null, engine
):
    c, p = _ragged(n_items=n_items, m=4, binary=binary, seed=5, missing=missing)
    res = pairwise_calibration(c, p, permutations=0, joint_permutations=400, rng=3, workers=1,
                               engine=engine)  # fmt: skip
    assert res.joint_engine == engine
    got = res.nulls[null].draws
    ref = _reference_joint(c, p, null, 400, np.random.default_rng(9))
    assert stats.ks_2samp(got, ref).pvalue > 1e-3
    assert got.mean() == pytest.approx(ref.mean(), abs=4 * ref.std() / np.sqrt(200))


@pytest.mark.parametrize("binary", [True, False])
def test_per_pair_tests_run_on_each_pairs_shared_items(binary):
    c, p = _ragged(n_items=120, m=4, binary=binary, seed=6)
    res = pairwise_calibration(c, p, permutations=300, joint_permutations=20, rng=0, workers=1,
                               engine="numpy", min_pair_items=10, sequential=False)  # fmt: skip
    ia, ib = np.triu_indices(4, k=1)
    for k, (a, b) in enumerate(zip(ia, ib)):
        ok = ~np.isnan(c[:, a]) & ~np.isnan(c[:, b])
        assert res.n_items_pair[k] == ok.sum()
        assert res.tau[k] == pytest.approx(_scipy_tau(c, p, a, b), abs=1e-12)
        # the pair's base-rate null: dperf permuted against dconf on its shared items
        dc, dp = np.round(c[ok, a] - c[ok, b], 12), p[ok, a] - p[ok, b]
        rng = np.random.default_rng(k)
        null = [stats.kendalltau(dc, rng.permutation(dp)).statistic for _ in range(600)]
        per = res.per_pair["base_rate"]
        assert per.null_sd[k] == pytest.approx(np.std(null), rel=0.2)
        assert abs(per.null_mean[k]) < 4 * np.std(null) / np.sqrt(300)
    for null in ("base_rate", "calibration_preserving"):
        q = res.per_pair[null].q_value
        assert np.isfinite(q).all() and (res.per_pair[null].n_valid == 300).all()
    table = res.table
    assert list(table["n_items"]) == list(res.n_items_pair)


def test_pairs_with_too_few_shared_items_are_left_out():
    c, p = _ragged(n_items=60, m=3, seed=7, missing=0.0)
    c[:45, 1] = p[:45, 1] = np.nan  # model 1 answered 15 items ...
    c[30:, 2] = p[30:, 2] = np.nan  # ... model 2 the first 30: they share none
    res = pairwise_calibration(c, p, permutations=50, joint_permutations=20, rng=0,
                               min_pair_items=10)  # fmt: skip
    assert list(res.n_items_pair) == [15, 30, 0]
    assert np.isnan(res.tau[2]) and np.isfinite(res.tau[:2]).all()
    assert res.n_pairs_valid == 2
    assert np.isnan(res.per_pair["base_rate"].p_value[2])
    assert res.mean_tau == pytest.approx(np.mean(res.tau[:2]))


def test_complete_data_take_the_complete_path_unchanged():
    c, p = _ragged(n_items=50, m=4, seed=8, missing=0.0)
    a = pairwise_calibration(c, p, permutations=99, joint_permutations=49, rng=2)
    assert (a.n_items_pair == 50).all()
    from metacog_metrics.pairwise import joint_null_draws, pair_permutation_test
    from metacog_metrics.pairwise.common import _pairs

    root = np.random.SeedSequence(2)
    pair_seeds, joint_seeds = root.spawn(2), root.spawn(2)
    direct = pair_permutation_test(
        c, p, null="base_rate", permutations=99, rng=pair_seeds[0], sequential=True
    )  # the analysis's default
    np.testing.assert_array_equal(a.per_pair["base_rate"].p_value, direct.p_value)
    draws = joint_null_draws(c, p, null="base_rate", n=49, rng=joint_seeds[0],
                             pairs=_pairs(4))  # fmt: skip
    np.testing.assert_array_equal(a.nulls["base_rate"].draws, draws.mean(axis=1))


def test_ragged_input_errors():
    c, p = _ragged(n_items=20, m=3)
    bad = p.copy()
    bad[0, 0] = 0.5
    with pytest.raises(ValueError, match="perf must hold only 0 and 1"):
        pairwise_calibration(c, bad, permutations=5, joint_permutations=5)
    with pytest.raises(ValueError, match="same shape"):
        pairwise_calibration(c[:, :2], p, permutations=5, joint_permutations=5)


def test_compiled_ragged_joint_kernel_with_every_item_present_is_the_complete_kernel():
    if importlib.util.find_spec("numba") is None:
        unavailable("the compiled kernels need numba")
    from metacog_metrics.pairwise import _numba
    from metacog_metrics.pairwise.joint_draws import _csr
    from metacog_metrics.pairwise.tau import _value_lookups

    c, p = _ragged(n_items=70, m=4, binary=False, seed=11, missing=0.0)
    ia, ib = (x.astype(np.int64) for x in np.triu_indices(4, k=1))
    present = np.ones(c.shape, dtype=bool)
    lk = _value_lookups(c, ia, ib)
    perf = np.ascontiguousarray(p.T, dtype=np.int64)
    own_off, own = _csr(present.T)
    shared = np.full(ia.size, 70, dtype=np.int64)
    for base_rate in (True, False):
        seed = np.random.SeedSequence(4)
        full = _numba.joint_levels_kernel(
            lk.codes, perf, ia, ib, lk.lut_off, lk.lut, lk.stride, lk.n_levels, base_rate, 30,
            _numba.state(seed))  # fmt: skip
        ragged = _numba.joint_ragged_kernel(
            lk.codes, perf, own_off, own, np.ones((4, 70), np.uint8), ia, ib, shared,
            lk.lut_off, lk.lut, lk.stride, lk.n_levels, base_rate, 30,
            _numba.state(seed))  # fmt: skip
        np.testing.assert_array_equal(ragged, full)


# --------------------------------------------------------------------------------------------
# The joint null against the per-pair nulls when missingness follows difficulty
# --------------------------------------------------------------------------------------------


def _difficulty_missing(n_items, n_models, seed, *, binary):
    """A population on one difficulty axis (probit correctness, confidence from the same latent
    with noise, no private signal) whose models skip hard items, weak models more often: a
    missing item is an informative one (not missing at random)."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(size=(n_items, 1))
    ability = rng.normal(scale=0.8, size=(1, n_models))
    z = ability - difficulty
    perf = (rng.random(z.shape) < stats.norm.cdf(z)).astype(float)
    latent = z + rng.normal(size=z.shape)
    conf = (latent > 0).astype(float) if binary else np.round(stats.norm.cdf(latent) * 10) / 10
    skipped = rng.random(z.shape) < 0.6 * stats.norm.cdf(-z - 0.5)
    conf[skipped] = perf[skipped] = np.nan
    return conf, perf


def _old_joint_mean(c, p, null, n, rng):
    """The joint draws this replaced: each model permuted among its own items and every pair
    read at its shared items (a random sample of each model's values from all its items)."""
    present = check_ragged(c, p)[2]
    ia, ib = np.triu_indices(c.shape[1], 1)
    out = np.empty(n)
    for k in range(n):
        cs, ps = c.copy(), p.copy()
        for j in range(c.shape[1]):
            rows = np.flatnonzero(present[:, j])
            perm = rng.permutation(rows)
            cs[rows, j] = c[perm, j]
            ps[rows, j] = p[rng.permutation(rows) if null == "base_rate" else perm, j]
        out[k] = np.nanmean(masked_taus(cs, ps, ia, ib, masked_grid(cs)))
    return out.mean(), out.std(ddof=1)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "levels"])
@pytest.mark.parametrize("engine", _engines())
def test_joint_null_matches_the_per_pair_nulls_when_missingness_follows_difficulty(binary, engine):
    c, p = _difficulty_missing(600, 12, 0, binary=binary)
    assert 0.15 < np.isnan(c).mean() < 0.3
    res = pairwise_calibration(c, p, permutations=2000, joint_permutations=1000, rng=2,
                               engine=engine, sequential=False)  # fmt: skip
    ok = np.isfinite(res.tau)
    for null in ("base_rate", "calibration_preserving"):
        joint = res.nulls[null]
        per_pair = res.per_pair[null]
        # the mean of the joint draws against the average of the per-pair null means: the
        # per-pair means' own Monte Carlo error is about sd / sqrt(2000) a pair
        se = np.sqrt(np.sum(per_pair.null_sd[ok] ** 2 / per_pair.n_valid[ok])) / ok.sum()
        gap = joint.mean - per_pair.null_mean[ok].mean()
        assert abs(gap) < 4 * np.hypot(joint.sd / np.sqrt(1000), se), (null, gap, joint.sd)
        assert abs(gap) < 0.5 * joint.sd
    # the joint draws this replaced are off by more than 1.5 of their sds
    old_mean, old_sd = _old_joint_mean(c, p, "calibration_preserving", 300,
                                       np.random.default_rng(0))  # fmt: skip
    per = res.per_pair["calibration_preserving"].null_mean[ok].mean()
    assert abs(old_mean - per) > 1.5 * old_sd


@pytest.mark.parametrize("engine", _engines())
def test_joint_null_matches_the_per_pair_nulls_on_complete_data(engine):
    c, p = _difficulty_missing(400, 8, 3, binary=False)
    c, p = np.nan_to_num(c, nan=0.5), np.nan_to_num(p, nan=1.0)  # nobody skips
    res = pairwise_calibration(c, p, permutations=2000, joint_permutations=1000, rng=2,
                               engine=engine, sequential=False)  # fmt: skip
    for null in ("base_rate", "calibration_preserving"):
        gap = res.nulls[null].mean - res.per_pair[null].null_mean.mean()
        assert abs(gap) < 0.5 * res.nulls[null].sd, (null, gap)
