"""The test of private signal: strata, permutations, the statistic, and its size on data from an
independent generator (logistic 2PL/3PL, confidence that reads every item parameter)."""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import optimize, special, stats

from metacog_metrics.private_signal import (
    PrivateSignalTestResult,
    ability_scores,
    induced_permutations,
    model_parameters,
    pattern_strata,
    permutations_within,
    private_signal_test,
)
from metacog_metrics.simulate import get_preset, simulate_arrays
from metacog_metrics.stratified import stratified_mean_tau_test, stratified_null_draws


def _scipy_mean_tau(conf, perf):
    m = conf.shape[1]
    taus = []
    for a in range(m):
        for b in range(a + 1, m):
            t = stats.kendalltau(conf[:, a] - conf[:, b], perf[:, a] - perf[:, b]).statistic
            if np.isfinite(t):
                taus.append(t)
    return float(np.mean(taus))


def _sim(preset="paper", m=8, n=300, seed=0, **overrides):
    arr = simulate_arrays(get_preset(preset, **overrides), m, n, 1, seed)
    return arr.conf[0].astype(float), arr.perf[0].astype(float)


def _logistic_population(
    n_items, m, rng, *, slope_sd=0.0, guess=0.0, private=0.0, model_slope_sd=0.0, missing=None,
    miss_rate=0.25,
):  # fmt: skip
    """Not the project's generator: logistic 3PL correctness (half the items allow a guess);
    confidence that reads the item's difficulty, its discrimination and whether it allows a
    guess (all shared), through thresholds that fall with ability; ``private`` mixes in each
    model's own success. ``model_slope_sd``: each model's own discrimination, lognormal
    (``logit P = a_i s_j (theta_j - b_i)``). ``missing``: ``"mcar"`` drops ``miss_rate`` of the
    answers at random, ``"difficulty"`` as many, more of the hard items and of the weak models
    (``logit P(missing) = c + b_i / 1.4 - theta_j / 2``)."""
    theta = rng.normal(0.0, 1.0, m)
    threshold = -0.8 * theta + rng.normal(0.0, 0.5, m)
    b = rng.normal(0.0, 1.4, n_items)
    a = np.exp(slope_sd * rng.normal(size=n_items))
    c = np.where(rng.random(n_items) < 0.5, guess, 0.0)  # half the items multiple choice
    s = np.exp(model_slope_sd * rng.normal(size=m)) if model_slope_sd else np.ones(m)
    p = c[:, None] + (1 - c[:, None]) * special.expit(
        a[:, None] * s[None, :] * (theta[None, :] - b[:, None])
    )
    perf = (rng.random((n_items, m)) < p).astype(float)
    item_look = -0.9 * b + 0.4 * np.log(a) - 2.0 * c + rng.normal(0.0, 0.8, n_items)
    reading = item_look[:, None] + private * (2 * perf - 1)
    conf = (reading + rng.logistic(size=(n_items, m)) > threshold[None, :]).astype(float)
    if missing is not None:
        if missing == "mcar":
            drop = rng.random((n_items, m)) < miss_rate
        else:  # harder items and weaker models go unanswered more often
            z = b[:, None] / 1.4 - 0.5 * theta[None, :]
            shift = optimize.brentq(lambda v: special.expit(v + z).mean() - miss_rate, -20, 20)
            drop = rng.random((n_items, m)) < special.expit(shift + z)
        conf[drop] = np.nan
        perf[drop] = np.nan
    return conf, perf


# --- strata and permutations ----------------------------------------------------------------------


def test_ability_scores_are_the_probit_of_accuracy():
    perf = np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1], [1, 0, 1]], dtype=float)
    # accuracies 3/4, 0 (moved to 0.5/4 = 1/8), 3/4
    expected = [stats.norm.ppf(0.75), stats.norm.ppf(0.125), stats.norm.ppf(0.75)]
    np.testing.assert_allclose(ability_scores(perf), expected, rtol=1e-12)


def test_pattern_strata_are_pass_counts_cut_into_blocks_of_the_pattern_statistics():
    _, perf = _sim(m=10, n=2000, seed=3)
    labels = pattern_strata(perf, block_size=10)
    k = perf.sum(axis=1)
    p = model_parameters(perf)
    w, v = perf @ p.slope, -(perf @ p.intercept)
    for lab in np.unique(labels):
        assert np.unique(k[labels == lab]).size == 1  # one pass count per stratum
    for kk in np.unique(k):
        rows = np.flatnonzero(k == kk)
        blocks = [labels[rows] == lab for lab in np.unique(labels[rows])]
        if rows.size >= 10:
            assert all(b.sum() >= 10 for b in blocks)  # blocks are not thinner
        # bands of w: a block's w range overlaps at most the blocks of its own band
        bands = max(1, round(math.sqrt(max(1, rows.size // 10))))
        spans = sorted((w[rows][b].min(), w[rows][b].max()) for b in blocks)
        assert len({lo for lo, _ in spans}) <= len(blocks) and len(blocks) >= bands
    # A block wider than any stratum gives exactly the pass-count strata.
    wide = pattern_strata(perf, block_size=10**9)
    assert all(np.unique(k[wide == lab]).size == 1 for lab in np.unique(wide))
    assert np.unique(wide).size == np.unique(k).size
    with pytest.raises(ValueError, match="block_size"):
        pattern_strata(perf, block_size=0)
    assert np.isfinite(v).all()


def test_blocks_cut_bands_of_the_first_statistic_then_runs_of_the_second():
    # 40 items, blocks of 10: 4 blocks, 2 bands of 20 (by the first statistic); within each
    # band two blocks of 10 in the order of the second statistic, ties in item order
    from metacog_metrics.private_signal import _blocks

    first = np.r_[np.zeros(20), np.ones(20)]
    second = np.tile(np.arange(20.0)[::-1], 2)
    rows = np.arange(40)
    labels = _blocks(first, second, rows, 10)
    expected = np.r_[np.repeat([1, 0], 10), np.repeat([3, 2], 10)]
    np.testing.assert_array_equal(labels, expected)
    # fewer than twice the block size: one block
    np.testing.assert_array_equal(_blocks(first, second, rows[:19], 10), np.zeros(19))


def test_model_parameters_recover_each_models_discrimination():
    """irt.fa's map from a one-factor model of the models' tetrachorics: on data with a slope
    per model, the estimated slopes follow the true ones and the intercepts the accuracies."""
    rng = np.random.default_rng(11)
    slope = np.exp(rng.normal(0.0, 0.6, 15))
    theta = rng.normal(0.0, 1.0, 15)
    eta = rng.normal(0.0, 1.0, 4000)
    perf = (rng.random((4000, 15)) < special.ndtr(slope * (eta[:, None] + theta))).astype(float)
    p = model_parameters(perf)
    assert p.fitted and np.corrcoef(np.log(p.slope), np.log(slope))[0, 1] > 0.95
    np.testing.assert_allclose(p.slope, slope, rtol=0.25)
    assert np.corrcoef(p.intercept, -perf.mean(axis=0))[0, 1] > 0.95
    # fewer than 3 models with variance: equal loadings, the intercepts still from accuracy
    few = model_parameters(perf[:, :2])
    assert not few.fitted and np.all(few.loading == 0.5)
    np.testing.assert_allclose(few.intercept, -ability_scores(perf[:, :2]) / math.sqrt(0.75))


def test_permutations_stay_within_labels_and_are_reproducible():
    labels = np.array([5, 2, 5, 2, 2, 9, 5, 2])
    perms = permutations_within(labels, 200, rng=1)
    for perm in perms:
        assert sorted(perm) == list(range(8))
        np.testing.assert_array_equal(labels[perm], labels)
    assert (perms[:, 5] == 5).all()  # a singleton stays put
    # Every member of a group reaches every position of it (uniform within groups).
    assert set(perms[:, 0]) == {0, 2, 6} and set(perms[:, 1]) == {1, 3, 4, 7}
    np.testing.assert_array_equal(perms, permutations_within(labels, 200, rng=1))


# --- the statistic and the p-value --------------------------------------------------------------


def test_statistic_draws_and_p_value_match_a_scipy_reference():
    conf, perf = _sim(m=5, n=150, seed=4)
    res = private_signal_test(conf, perf, permutations=7, block_size=5, rng=2)
    assert res.observed == pytest.approx(_scipy_mean_tau(conf, perf), abs=1e-12)
    perms = permutations_within(pattern_strata(perf, 5), 7, np.random.default_rng(2))
    expected = [_scipy_mean_tau(conf[p], perf) for p in perms]
    np.testing.assert_allclose(res.draws, expected, atol=1e-12)
    count = np.sum(np.asarray(expected) >= res.observed - 1e-12)
    assert res.p_value == pytest.approx((1 + count) / 8)
    summary = res.summary()
    assert summary["alternative"] == "greater" and summary["block_size"] == 5
    assert summary["n_draws"] == 7 and res.n_items_moving <= 150


def test_blocks_hold_two_items_by_default_wherever_the_test_runs():
    """Blocks of 10 over-rejected on a few hundred items with item-level slopes or guessing
    (0.078 and 0.087 at 400 items, 4,000 replicates; blocks of 2: 0.057 and 0.058; README), so
    the default is 2, and the analysis, ``metacog power`` and the size bench all use it."""
    import inspect

    import bench.bench_size as bench
    from metacog_metrics import power
    from metacog_metrics.private_signal import DEFAULT_BLOCK_SIZE

    assert DEFAULT_BLOCK_SIZE == 2
    assert bench.BLOCK_SIZE == DEFAULT_BLOCK_SIZE
    for fn in (private_signal_test, power.power_analysis, power.size_analysis):
        assert inspect.signature(fn).parameters["block_size"].default == DEFAULT_BLOCK_SIZE
    rng = np.random.default_rng(6)
    conf, perf = _logistic_population(300, 8, rng, slope_sd=1.0)
    default = private_signal_test(conf, perf, permutations=9, rng=1, workers=1)
    two = private_signal_test(conf, perf, permutations=9, block_size=2, rng=1, workers=1)
    ten = private_signal_test(conf, perf, permutations=9, block_size=10, rng=1, workers=1)
    assert default.summary()["block_size"] == 2
    np.testing.assert_array_equal(default.draws, two.draws)
    assert default.n_strata == two.n_strata > ten.n_strata  # the check has teeth


def test_a_strong_private_signal_is_detected():
    conf, perf = _sim("individuated", m=20, n=1000, seed=1)
    res = private_signal_test(conf, perf, permutations=99, rng=0)
    assert res.p_value == pytest.approx(0.01)
    assert res.observed > res.null_mean + 5 * res.null_sd


def test_bad_input():
    conf, perf = _sim(m=4, n=50)
    with pytest.raises(ValueError, match="must be equal"):
        private_signal_test(conf[:, :3], perf)
    with pytest.raises(ValueError, match="0/1"):
        private_signal_test(conf * 0.5, perf)
    with pytest.raises(ValueError, match="permutations"):
        private_signal_test(conf, perf, permutations=0)


# --- size on data the project's generator did not make --------------------------------------------


def _p_values(test, reps, seed, **population):
    rng = np.random.default_rng(seed)
    out = []
    for r in range(reps):
        conf, perf = _logistic_population(rng=rng, **population)
        out.append(test(conf, perf, permutations=49, rng=r).p_value)
    return np.asarray(out)


@pytest.mark.slow
def test_size_under_logistic_2pl_where_the_pass_count_null_fails():
    """Steep and flat items mixed (log slope sd 1.2), 20 models, 4,000 items, no private
    signal. The pass-count null's p-values pile up near 0 (it rejects far too often); the
    pattern null's stay uniform (a 1-in-1000 KS bound) and reject at about alpha."""
    population = {"n_items": 4000, "m": 20, "slope_sd": 1.2}
    new = _p_values(private_signal_test, 60, 7, **population)
    old = _p_values(stratified_mean_tau_test, 60, 7, **population)
    assert stats.kstest(new, "uniform").pvalue > 1e-3
    assert stats.binomtest(int(np.sum(new <= 0.05)), new.size, 0.05).pvalue > 1e-3
    assert stats.kstest(old, "uniform").pvalue < 1e-3  # the check has teeth


@pytest.mark.slow
def test_size_under_logistic_3pl_with_confidence_that_sees_guessing():
    population = {"n_items": 4000, "m": 20, "slope_sd": 0.5, "guess": 0.3}
    new = _p_values(private_signal_test, 60, 8, **population)
    assert stats.kstest(new, "uniform").pvalue > 1e-3
    assert stats.binomtest(int(np.sum(new <= 0.05)), new.size, 0.05).pvalue > 1e-3


def test_power_on_the_independent_generator():
    rng = np.random.default_rng(5)
    conf, perf = _logistic_population(1500, 12, rng, slope_sd=1.0, guess=0.2, private=0.6)
    assert private_signal_test(conf, perf, permutations=99, rng=0).p_value <= 0.02


def test_groups_keep_strata_within_each_group_with_their_own_abilities():
    _, perf = _sim(m=8, n=600, seed=6)
    groups = np.repeat(["a", "b", "c"], 200)
    labels = pattern_strata(perf, 10, groups)
    for lab in np.unique(labels):
        assert np.unique(groups[labels == lab]).size == 1
    # within a group the strata are that group's own: its items and its abilities
    np.testing.assert_array_equal(
        np.unique(labels[200:400], return_inverse=True)[1],
        np.unique(pattern_strata(perf[200:400], 10), return_inverse=True)[1],
    )
    np.testing.assert_array_equal(pattern_strata(perf, 10, ["x"] * 600), pattern_strata(perf, 10))
    with pytest.raises(ValueError, match="one entry per item"):
        pattern_strata(perf, 10, groups[:5])


def test_the_test_uses_the_groups_and_reports_its_strata():
    conf, perf = _sim(m=5, n=150, seed=8)
    groups = np.repeat(["a", "b"], 75)
    res = private_signal_test(conf, perf, permutations=9, block_size=5, rng=3, groups=groups)
    labels = pattern_strata(perf, 5, groups)
    perms = permutations_within(labels, 9, np.random.default_rng(3))
    np.testing.assert_allclose(res.draws, [_scipy_mean_tau(conf[p], perf) for p in perms],
                               atol=1e-12)  # fmt: skip
    sizes = np.bincount(labels)
    assert res.n_groups == 2 and res.n_strata == int((sizes >= 2).sum())
    assert res.n_items_moving == int(sizes[sizes >= 2].sum())
    assert res.null_sd == pytest.approx(np.std(res.draws, ddof=1))
    assert res.null_mean == pytest.approx(np.mean(res.draws))
    assert private_signal_test(conf, perf, permutations=3, block_size=5).n_groups == 1


def test_draws_equal_to_the_observed_mean_count_against_it():
    # items of one correctness pattern (one per pass count, so one per stratum) share one
    # confidence row, so every permutation within a stratum leaves the matrix as it is: every
    # draw equals the observed mean and p is 1
    rng = np.random.default_rng(0)
    base_perf = np.tril(np.ones((5, 4)), k=-1)  # pass counts 0, 1, 2, 3, 4
    base_conf = (rng.random((5, 4)) < 0.5).astype(float)
    perf = np.repeat(base_perf, 10, axis=0)
    conf = np.repeat(base_conf, 10, axis=0)
    res = private_signal_test(conf, perf, permutations=19, block_size=10, rng=1)
    assert np.all(res.draws == res.draws[0])
    assert res.p_value == 1.0


# --- rules the formula tests above do not see ----------------------------------------------


def test_ability_scores_move_perfect_accuracy_half_an_item_inwards():
    perf = np.array([[1, 0, 1], [1, 0, 0], [1, 0, 1], [1, 1, 1]], dtype=float)
    # accuracies 1 (moved to 1 - 0.5/4), 1/4 and 3/4
    expected = [stats.norm.ppf(0.875), stats.norm.ppf(0.25), stats.norm.ppf(0.75)]
    np.testing.assert_allclose(ability_scores(perf), expected, rtol=1e-12)
    # one item: every accuracy is moved half an item inwards, to 1/2, whose probit is 0
    np.testing.assert_allclose(ability_scores([[1.0, 0.0]]), [0.0, 0.0], atol=1e-15)


def test_strata_labels_are_consecutive_from_zero_across_groups():
    # two models; by hand: group x has pass counts 1, 1, 2 (two strata), group y 0, 0 (one)
    perf = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [0, 0]], dtype=float)
    labels = pattern_strata(perf, block_size=100, groups=["x", "x", "x", "y", "y"])
    np.testing.assert_array_equal(labels, [0, 0, 1, 2, 2])
    np.testing.assert_array_equal(pattern_strata(perf, block_size=100), [1, 1, 2, 0, 0])


def test_block_size_one_puts_every_item_in_its_own_block():
    _, perf = _sim(m=4, n=40, seed=2)
    np.testing.assert_array_equal(np.sort(pattern_strata(perf, block_size=1)), np.arange(40))
    with pytest.raises(ValueError, match=r"^block_size must be >= 1, got 0$"):
        pattern_strata(perf, block_size=0)


def test_messages_name_the_shapes():
    with pytest.raises(ValueError, match=r"^perf must be \(items, models\), got shape \(3,\)$"):
        pattern_strata(np.ones(3))
    with pytest.raises(
        ValueError, match=r"^groups must have one entry per item \(5\), got \(2,\)$"
    ):
        pattern_strata(np.ones((5, 3)), 10, ["a", "b"])
    with pytest.raises(ValueError, match=r"^labels must be one-dimensional, got shape \(2, 2\)$"):
        permutations_within(np.zeros((2, 2)), 3)
    with pytest.raises(
        ValueError, match=r"^conf and perf must be 0/1 matrices \(NaN where not answered\)$"
    ):
        private_signal_test(np.full((4, 2), 0.5), np.ones((4, 2)))
    with pytest.raises(
        ValueError, match=r"^conf and perf must be missing \(NaN\) on the same items$"
    ):
        private_signal_test(np.array([[1.0, np.nan], [0, 1]]), np.ones((2, 2)))


def _reference_permutations(labels, n, seed):
    """The documented draw, written out item by item: row r draws U(0, 1) per position of the
    items listed group by group (groups in increasing label, items in index order); within a
    group the item in place t takes the row of the member whose draw has rank t."""
    labels = np.asarray(labels)
    u = np.random.default_rng(seed).random((n, labels.size))
    groups = [[i for i in range(labels.size) if labels[i] == v] for v in sorted(set(labels))]
    out = np.empty((n, labels.size), dtype=int)
    for r in range(n):
        pos = 0
        for members in groups:
            draws = u[r, pos : pos + len(members)]
            ranked = sorted(range(len(members)), key=lambda t: draws[t])
            for t, member in enumerate(members):
                out[r, member] = members[ranked[t]]
            pos += len(members)
    return out


def test_permutations_follow_the_documented_draw_for_a_seed():
    # large groups with many equal labels: the result must not depend on how a sort breaks ties
    labels = np.random.default_rng(4).integers(0, 3, 200)
    np.testing.assert_array_equal(
        permutations_within(labels, 5, rng=9), _reference_permutations(labels, 5, 9)
    )


def test_an_observed_mean_of_exactly_zero_tied_by_every_draw_has_p_one():
    # block size 1: no item moves, every draw is the observed mean; for the one model pair
    # dconf = (1, -1, 1, -1) and dperf = (1, 1, -1, -1): one concordant and one discordant
    # pair, so tau-b is exactly 0 (SciPy agrees) and the draws tie it with no tolerance
    conf = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=float)
    perf = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)
    assert _scipy_mean_tau(conf, perf) == 0.0
    res = private_signal_test(conf, perf, permutations=9, block_size=1, rng=0)
    assert res.observed == 0.0 and np.all(res.draws == 0.0)
    assert res.p_value == 1.0
    assert res.n_strata == 0 and res.n_items_moving == 0


def test_strata_of_two_items_move_and_are_counted():
    # pass counts 1, 1, 2, 0, 0 (block size 100): strata of sizes 2, 1 and 2
    conf = np.array([[1, 0], [0, 1], [1, 1], [0, 1], [1, 0]], dtype=float)
    perf = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [0, 0]], dtype=float)
    res = private_signal_test(conf, perf, permutations=5, block_size=100, rng=0)
    assert (res.n_strata, res.n_items_moving) == (2, 4)


def test_one_and_two_draws_are_accepted():
    conf, perf = _sim(m=4, n=60, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one draw has no sd, and says so quietly with NaN
        one = private_signal_test(conf, perf, permutations=1, rng=0)
    assert one.draws.shape == (1,) and math.isnan(one.null_sd)
    assert one.p_value == (1.0 + float(one.draws[0] >= one.observed)) / 2.0
    two = private_signal_test(conf, perf, permutations=2, rng=0)
    d1, d2 = two.draws
    assert two.null_sd == pytest.approx(abs(d1 - d2) / math.sqrt(2), rel=1e-12)


def test_defaults_are_999_draws_seeded_with_zero():
    conf, perf = _sim(m=3, n=40, seed=6)
    res = private_signal_test(conf, perf)
    assert res.permutations == 999 and res.draws.shape == (999,)
    np.testing.assert_array_equal(res.draws, private_signal_test(conf, perf, rng=0).draws)


def test_an_undefined_statistic_gives_nan_without_warnings():
    # confidence constant across models: no pair has a tau, so no draw is finite
    _, perf = _sim(m=3, n=30, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = private_signal_test(np.ones_like(perf), perf, permutations=4)
        summary = res.summary()
    assert math.isnan(res.observed) and math.isnan(res.p_value)
    assert math.isnan(res.null_mean) and math.isnan(res.null_sd)
    assert summary["ci"] == (None, None)


def test_summary_by_hand():
    res = PrivateSignalTestResult(
        observed=0.3,
        null_mean=0.25,
        null_sd=0.129,
        p_value=0.2,
        permutations=5,
        block_size=7,
        n_strata=3,
        n_items_moving=11,
        draws=np.array([0.1, 0.4, np.nan, 0.2, 0.3]),
        n_groups=2,
        design="available-case",
        n_models=3,
        n_items=40,
        n_pairs=3,
        n_items_pair=np.array([12, 30, 20]),
        detectable_shift=0.01,
    )
    # the 2.5% and 97.5% quantiles of 0.1, 0.2, 0.3, 0.4 (linear interpolation between order
    # statistics, position 0.025 * 3 and 0.975 * 3): 0.1 + 0.075 * 0.1 and 0.3 + 0.925 * 0.1
    expected = {
        "mean": 0.25,
        "sd": 0.129,
        "ci": (0.1075, 0.3925),
        "p_value": 0.2,
        "alternative": "greater",
        "n_draws": 5,
        "block_size": 7,
        "n_strata": 3,
        "n_items_moving": 11,
        "n_groups": 2,
        "design": "available-case",
        "n_pairs": 3,
        "n_items_per_pair": {"min": 12, "median": 20.0, "max": 30},
        "detectable_shift": 0.01,
        "thin": None,
    }
    got = res.summary()
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, str | dict) or value is None:
            assert got[key] == value, key
        else:
            assert got[key] == pytest.approx(value, abs=1e-12), key
    assert res.basis_text() == (
        "3 models, 3 pairs, each on the items both answered: 12 to 30 (median 20) of 40 items"
    )
    thin = dataclasses.replace(res, detectable_shift=0.06)
    assert (
        thin.thin
        == "it detects with 80% power only a shift of 0.060 in the mean tau, at least 0.05"
    )
    assert dataclasses.replace(res, n_pairs=0).thin == "no pair shares enough items"


def test_the_draws_do_not_depend_on_the_thread_count():
    conf, perf = _sim(m=5, n=80, seed=9)
    one = private_signal_test(conf, perf, permutations=20, rng=4, workers=1)
    two = private_signal_test(conf, perf, permutations=20, rng=4, workers=2)
    np.testing.assert_array_equal(one.draws, two.draws)


# --- ragged data: each pair on its shared items ------------------------------------------------


def _ragged(seed=0, n=120, m=5, share=0.3):
    conf, perf = _sim(m=m, n=n, seed=seed)
    drop = np.random.default_rng(seed).random(conf.shape) < share
    conf[drop] = np.nan
    perf[drop] = np.nan
    return conf, perf


def _scipy_pair_mean(conf, perf, min_items=10):
    """Mean tau-b over the pairs sharing at least ``min_items`` items, each on its own."""
    taus = []
    m = conf.shape[1]
    for a in range(m):
        for b in range(a + 1, m):
            ok = ~np.isnan(conf[:, a]) & ~np.isnan(conf[:, b])
            if ok.sum() < min_items:
                continue
            t = stats.kendalltau(conf[ok, a] - conf[ok, b], perf[ok, a] - perf[ok, b]).statistic
            if np.isfinite(t):
                taus.append(t)
    return float(np.mean(taus))


def test_induced_permutations_are_uniform_on_the_shared_items():
    """Every permutation of 4 items, induced on the 3 a pair shares: each of the 6 permutations
    of those 3 comes from exactly 4 of the 24 (the first-return map deletes an item from the
    cycles), and the items outside stay out."""
    shared = np.array([[True, False, True, True]])
    perms = np.array(list(itertools.permutations(range(4))))
    src = induced_permutations(perms, shared)[:, 0, :]
    kept = [tuple(row[[0, 2, 3]]) for row in src]
    counts = {k: kept.count(k) for k in set(kept)}
    assert len(counts) == 6 and set(counts.values()) == {4}
    assert all(sorted(k) == [0, 2, 3] for k in counts)


def test_ragged_statistic_and_draws_match_scipy_pair_by_pair():
    conf, perf = _ragged(seed=1)
    res = private_signal_test(conf, perf, permutations=6, block_size=5, rng=2)
    assert res.design == "available-case"
    assert res.observed == pytest.approx(_scipy_pair_mean(conf, perf), abs=1e-12)
    labels = pattern_strata(perf, 5)
    perms = permutations_within(labels, 6, np.random.default_rng(2))
    ok = ~np.isnan(conf)
    ia, ib = np.triu_indices(5, k=1)
    shared = (ok[:, ia] & ok[:, ib]).T
    src = induced_permutations(perms, shared)
    for d in range(6):
        taus = []
        for p, (a, b) in enumerate(zip(ia, ib)):
            rows = np.flatnonzero(shared[p])
            if rows.size < 10:
                continue
            moved = src[d, p, rows]
            assert sorted(moved) == sorted(rows)  # a permutation of the pair's shared items
            assert (labels[moved] == labels[rows]).all()  # within strata
            t = stats.kendalltau(conf[moved, a] - conf[moved, b], perf[rows, a] - perf[rows, b])
            if np.isfinite(t.statistic):
                taus.append(t.statistic)
        assert res.draws[d] == pytest.approx(np.mean(taus), abs=1e-12)
    assert res.n_pairs == int((shared.sum(axis=1) >= 10).sum())
    assert sorted(res.n_items_pair) == sorted(shared.sum(axis=1)[shared.sum(axis=1) >= 10])


def test_ragged_and_complete_paths_agree_on_complete_data():
    from metacog_metrics.private_signal import _pairs, _ragged_draws

    conf, perf = _sim(m=6, n=200, seed=12)
    res = private_signal_test(conf, perf, permutations=8, rng=5)
    assert res.design == "complete" and res.n_pairs == 15
    perms = permutations_within(pattern_strata(perf), 8, np.random.default_rng(5))
    ragged = _ragged_draws(conf, perf, _pairs(conf, perf, 10), perms, 1)
    np.testing.assert_allclose(ragged, res.draws, atol=1e-12)


def test_ragged_strata_are_numbers_of_answers_cut_by_ease():
    _conf, perf = _ragged(seed=3, n=600, m=8)
    labels = pattern_strata(perf, 10)
    answers = (~np.isnan(perf)).sum(axis=1)
    for lab in np.unique(labels):
        assert np.unique(answers[labels == lab]).size == 1
    wide = pattern_strata(perf, 10**9)
    assert np.unique(wide).size == np.unique(answers).size


def test_items_nobody_answered_are_left_out():
    conf, perf = _ragged(seed=4)
    conf[:7] = np.nan
    perf[:7] = np.nan
    res = private_signal_test(conf, perf, permutations=3, rng=0)
    assert res.n_items == 113 and res.draws.shape == (3,)


def test_no_pair_with_enough_shared_items():
    conf, perf = _ragged(seed=5, n=12, m=4, share=0.5)
    res = private_signal_test(conf, perf, permutations=3, rng=0, min_pair_items=50)
    assert res.n_pairs == 0 and math.isnan(res.observed) and res.thin


def test_power_on_ragged_data_uses_the_items_each_pair_answered():
    """A quarter of the answers missing at random: 400 items leave about 2 complete ones, so a
    complete-case test has nothing to work with; each pair still shares about 225. (The
    analysis does not use this design: with no private signal it rejected too often,
    ``bench/bench_size.py --ragged size``.)"""
    rng = np.random.default_rng(21)
    conf, perf = _logistic_population(400, 20, rng, slope_sd=0.5, private=0.7, missing="mcar")
    complete = ~np.isnan(conf).any(axis=1)
    assert complete.sum() < 10
    res = private_signal_test(conf, perf, permutations=99, rng=0)
    assert res.design == "available-case" and res.p_value <= 0.02
    assert 180 < np.median(res.n_items_pair) < 270


@pytest.mark.slow
def test_size_with_a_slope_per_model():
    """Per-model discrimination (log-sd 1.0), 2,000 items, where the pass-count-then-ability
    null over-rejected: p-values uniform (a 1-in-1000 KS bound)."""
    population = {"n_items": 2000, "m": 20, "model_slope_sd": 1.0}
    p = _p_values(private_signal_test, 80, 31, **population)
    assert stats.kstest(p, "uniform").pvalue > 1e-3
    assert stats.binomtest(int(np.sum(p <= 0.05)), p.size, 0.05).pvalue > 1e-3


# --- the bench's diagnostics of the small-sample size (bench/bench_size.py) -----------------------


def test_exact_null_mean_is_the_mean_of_the_permutation_draws():
    """The bench's closed form of the permutation mean (``--simex`` and the size diagnostics
    rest on it) against many draws, and its two limits: every item alone keeps the observed
    mean tau, one stratum of all items has mean 0."""
    from bench.bench_size import exact_null_mean

    rng = np.random.default_rng(11)
    conf, perf = _logistic_population(300, 8, rng, model_slope_sd=1.0, guess=0.2)
    labels = pattern_strata(perf, 10)
    draws = stratified_null_draws(conf, perf, permutations_within(labels, 20000, 3), 1)
    exact = exact_null_mean(conf, perf, labels)
    se = draws.std(ddof=1) / math.sqrt(draws.size)
    assert abs(exact - draws.mean()) < 4 * se
    assert abs(exact - _scipy_mean_tau(conf, perf)) > 10 * se  # the check has teeth
    singletons = np.arange(perf.shape[0])
    assert exact_null_mean(conf, perf, singletons) == pytest.approx(_scipy_mean_tau(conf, perf))
    assert exact_null_mean(conf, perf, np.zeros(perf.shape[0])) == pytest.approx(0.0, abs=1e-15)


def test_simex_shift_is_zero_when_the_strata_do_not_depend_on_the_parameters(monkeypatch):
    """With one block per pass count the parameters (and their noise) never reach the strata, so
    the null mean is flat in lambda and the extrapolated change is 0 (linear and quadratic)."""
    import bench.bench_size as bench

    rng = np.random.default_rng(4)
    conf, perf = _logistic_population(200, 8, rng, slope_sd=1.0)
    monkeypatch.setattr(bench, "BLOCK_SIZE", 10**6)
    for kind in ("linear", "quadratic"):
        monkeypatch.setattr(bench, "SIMEX", kind)
        assert bench.simex_shift(conf, perf, np.random.default_rng(0)) == pytest.approx(
            0.0, abs=1e-12
        )
    monkeypatch.setattr(bench, "BLOCK_SIZE", 2)  # and it does move when they do reach them
    monkeypatch.setattr(bench, "SIMEX", "linear")
    assert bench.simex_shift(conf, perf, np.random.default_rng(0)) != 0.0
