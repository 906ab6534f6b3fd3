"""polychoric: against polycor::polychor (committed reference) and hand-checked level coding."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.polychoric import confidence_levels, polychoric_matrix, polychoric_table

REF = json.loads((Path(__file__).parent / "reference" / "polychoric_reference.json").read_text())


@pytest.mark.parametrize("case", REF["polycor_polychor"], ids=lambda c: str(len(c["table"])))
def test_table_matches_polycor_two_step(case):
    assert polychoric_table(np.array(case["table"], float)) == pytest.approx(case["rho"], abs=1e-4)


def test_confidence_levels_keeps_few_values_and_bins_many():
    assert confidence_levels([0.9, 0.8, np.nan, 0.9]).tolist()[:2] == [1.0, 0.0]
    x = np.linspace(0.5, 1.0, 100)
    lv = confidence_levels(x, n_levels=5)
    assert np.bincount(lv.astype(int)).tolist() == [20, 20, 20, 20, 20]
    # mostly 0.95 with a few lower values: still two or more levels, so the model stays in
    y = np.r_[np.full(95, 0.95), [0.6, 0.7, 0.8, 0.85, 0.9]]
    assert np.unique(confidence_levels(y)).size >= 2


def test_matrix_pairwise_counts_and_constant_model():
    x = np.array([[0, 1, 2], [1, 0, 2], [2, 2, np.nan], [0, 1, np.nan], [1, 2, 2]], float)
    res = polychoric_matrix(x)
    assert res.n_pair.tolist() == [[5, 5, 3], [5, 5, 3], [3, 3, 3]]
    assert np.isnan(res.rho[0, 2]) and np.isfinite(res.rho[0, 1])


@pytest.mark.parametrize("case", REF["psych_polychoric"], ids=lambda c: str(len(c["levels"])))
def test_matrix_matches_psych_pairwise_complete(case):
    x = np.array([[np.nan if v is None else v for v in r] for r in case["levels"]], float)
    want = np.array(case["rho"], float)
    np.testing.assert_allclose(polychoric_matrix(x).rho, want, atol=1e-4)


def _reference_pair(x, y):
    """Two-step polychoric of one pair, psych global=TRUE: each variable's thresholds from its
    own observed values, the table on the items both have, one scipy bounded search."""
    from scipy import optimize, stats

    def cuts(v):
        levels, counts = np.unique(v[~np.isnan(v)], return_counts=True)
        inner = stats.norm.ppf(np.cumsum(counts)[:-1] / counts.sum())
        return levels, np.r_[-np.inf, inner, np.inf]

    lx, tx = cuts(x)
    ly, ty = cuts(y)
    ok = ~np.isnan(x) & ~np.isnan(y)
    table = np.array([[np.sum((x[ok] == a) & (y[ok] == b)) for b in ly] for a in lx], float)

    def nll(r):
        mvn = stats.multivariate_normal(mean=[0, 0], cov=[[1, r], [r, 1]])
        big = 30.0
        f = np.array([[mvn.cdf([np.clip(h, -big, big), np.clip(k, -big, big)]) for k in ty]
                      for h in tx])  # fmt: skip
        p = f[1:, 1:] - f[:-1, 1:] - f[1:, :-1] + f[:-1, :-1]
        return -np.sum(np.where(table > 0, table * np.log(np.maximum(p, 1e-300)), 0.0))

    return optimize.minimize_scalar(nll, bounds=(-0.9999, 0.9999), method="bounded",
                                    options={"xatol": 1e-8}).x  # fmt: skip


def test_vectorised_matrix_matches_a_per_pair_scipy_search_with_missing_items():
    rng = np.random.default_rng(4)
    f = rng.normal(size=400)
    x = np.column_stack(
        [
            np.digitize(0.7 * f + 0.7 * rng.normal(size=400), cuts)
            for cuts in ([-0.5, 0.4], [-1, 0, 1], [0.2], [-0.8, -0.2, 0.3, 0.9])
        ]
    )
    x = x.astype(float)  # fmt: skip
    x[rng.random(x.shape) < 0.3] = np.nan
    res = polychoric_matrix(x, global_thresholds=True)  # the global path (see the psych tests)
    for a, b in ((0, 1), (1, 3), (2, 3), (0, 2)):
        assert res.rho[a, b] == pytest.approx(_reference_pair(x[:, a], x[:, b]), abs=2e-5)
        assert res.n_pair[a, b] == np.sum(~np.isnan(x[:, a]) & ~np.isnan(x[:, b]))


def test_ordinal_correlation_keeps_varying_models_and_reports_the_rest():
    from metacog_metrics.polychoric import ordinal_correlation

    rng = np.random.default_rng(5)
    f = rng.normal(size=(300, 1))
    conf = np.clip(np.round(0.8 + 0.08 * (f + rng.normal(size=(300, 5))), 2), 0.5, 1.0)
    conf[:, 3] = 0.9  # one constant model
    conf[:150, 4] = np.nan  # model 4 answered the second half ...
    conf[150:, 2] = np.nan  # ... model 2 the first: they share nothing
    res = ordinal_correlation(conf, names=list("abcde"), min_pair=10)
    assert res.dropped_reasons["d"].startswith("no variance")
    assert "fewer than 10 shared items" in res.dropped_reasons[next(n for n in "ce" if n not in
                                                                    res.names)]  # fmt: skip
    assert len(res.names) == 3 and np.isfinite(res.rho).all()
    assert res.n.min() >= 150 and not res.smoothed
    # the threshold rule: Phi^-1 of the share below the pooled median, ties half
    kept = [list("abcde").index(n) for n in res.names]
    med = np.nanmedian(conf[:, kept])
    for t, j in zip(res.tau, kept):
        v = conf[~np.isnan(conf[:, j]), j]
        share = (np.sum(v < med) + 0.5 * np.sum(v == med)) / v.size
        assert t == pytest.approx(stats.norm.ppf(share))
    # what the result reports besides the matrix
    assert res.median == pytest.approx(med)
    assert res.dropped == tuple(n for n in "abcde" if n not in res.names)
    assert set(res.dropped) == set(res.dropped_reasons) and "d" in res.dropped
    assert res.correct == 0.0 and res.n_corrected_pairs == 0
    assert res.threshold_rule.startswith("tau = Phi^-1(P(confidence < m)")
    np.testing.assert_array_equal(res.raw_rho, res.rho)  # positive definite: not smoothed
    assert res.min_eigenvalue == pytest.approx(np.linalg.eigvalsh(res.raw_rho).min())
    levels = [np.unique(confidence_levels(conf[:, j])[~np.isnan(conf[:, j])]).size for j in kept]
    assert list(res.n_levels) == levels
    raw_only = ordinal_correlation(conf, names=list("abcde"), min_pair=10, smooth=False)
    assert raw_only.smoothed is False
    np.testing.assert_array_equal(raw_only.rho, res.raw_rho)


@pytest.mark.parametrize("case", REF["psych_polychoric_mixed"], ids=lambda c: str(len(c["levels"])))
def test_matrix_matches_psych_with_unequal_levels_and_zero_cells(case):
    """Models with different numbers of levels: psych sets global = FALSE (each pair's
    thresholds from its own table) and replaces zero cells by 0.5."""
    x = np.array([[np.nan if v is None else v for v in r] for r in case["levels"]], float)
    want = np.array(case["rho"], float)
    np.testing.assert_allclose(polychoric_matrix(x).rho, want, atol=1e-4)


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


def _exact(message: str) -> str:
    import re

    return "^" + re.escape(message) + "$"


def _inner_thresholds(t):
    from scipy import special

    n = t.sum()
    return special.ndtri(np.cumsum(t.sum(1))[:-1] / n), special.ndtri(np.cumsum(t.sum(0))[:-1] / n)


_TABLES = [
    [[10, 4, 1], [3, 9, 5], [0, 2, 8]],  # positive, one empty cell
    [[2, 7, 9], [6, 5, 1], [9, 3, 0]],  # negative, one empty cell
    [[5, 3], [2, 6], [1, 7]],
]


@pytest.mark.parametrize("table", _TABLES)
def test_table_reaches_the_likelihood_maximum(table):
    # Against the root of the log-likelihood's derivative (tests/refstats.py, ~1e-14): the
    # estimator's bounded search must get within 5e-8 (SciPy's default tolerance would not).
    from tests.refstats import polychoric_ml_exact

    t = np.array(table, dtype=float)
    tx, ty = _inner_thresholds(t)
    corrected = np.where(t == 0, 0.5, t)  # zero cells get 0.5 by default, margins do not
    assert abs(polychoric_table(t) - polychoric_ml_exact(corrected, tx, ty)) < 5e-8
    assert abs(polychoric_table(t, correct=0) - polychoric_ml_exact(t, tx, ty)) < 5e-8


def test_table_drops_empty_rows_and_columns_only():
    t = np.array(_TABLES[0], dtype=float)
    padded = np.insert(np.insert(t, 1, 0.0, axis=0), 3, 0.0, axis=1)
    assert polychoric_table(padded) == pytest.approx(polychoric_table(t), abs=1e-12)
    # a row of one observation is a real row
    one = np.vstack([t, [0, 0, 1]])
    from tests.refstats import polychoric_ml_exact

    tx, ty = _inner_thresholds(one)
    expected = polychoric_ml_exact(np.where(one == 0, 0.5, one), tx, ty)
    assert abs(polychoric_table(one) - expected) < 5e-8


def test_table_validation_messages():
    message = "table must be a 2-D array of finite counts >= 0"
    for bad in ([1, 2, 3], [[1, -1], [2, 3]], [[1, np.nan], [2, 3]]):
        with pytest.raises(ValueError, match=_exact(message)):
            polychoric_table(bad)
    with pytest.raises(ValueError, match=_exact(
        "table needs at least 2 non-empty rows and columns, got (1, 2)"
    )):  # fmt: skip
        polychoric_table([[3, 4], [0, 0]])


def test_confidence_levels_rules_by_hand():
    # at most n_levels distinct values: each its own level, whatever their frequencies
    x = [0.1] * 10 + [0.2, 0.3, 0.4, 0.5]
    assert confidence_levels(x, n_levels=5).tolist() == [0] * 10 + [1, 2, 3, 4]
    # two levels are allowed; NaN (or None) stays missing
    out = confidence_levels([0.2, None, 0.9, 0.5], n_levels=2)
    assert out.dtype == np.float64 and np.isnan(out[1])
    # three distinct values, two levels: quantile cut at the median 0.5, ties go above
    assert out[[0, 2, 3]].tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match=_exact("n_levels must be >= 2, got 1")):
        confidence_levels([0.1, 0.2], n_levels=1)
    # every quantile at the maximum: the maximum against the rest
    y = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6] + [0.95] * 94
    assert confidence_levels(y).tolist() == [0] * 6 + [1] * 94
    # ten values, five levels: cuts at the quantiles 2.8, 4.6, 6.4, 8.2
    z = np.arange(1.0, 11.0)
    assert confidence_levels(z).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    # a cut on a value puts that value above it: the median of 1, 2, 3, 5, 5, 5, 5, 9 is 5
    w = [1.0, 2.0, 3.0, 5.0, 5.0, 5.0, 5.0, 9.0]
    assert confidence_levels(w, n_levels=2).tolist() == [0, 0, 0, 1, 1, 1, 1, 1]
    # a cut at the maximum is dropped: the maximum joins the level below it (the quantiles
    # of 1, 2, 3, 4, 9, 9, 9, 9, 9, 9 at 1/3 and 2/3 are 4 and 9)
    v = [1.0, 2.0, 3.0, 4.0] + [9.0] * 6
    assert confidence_levels(v, n_levels=3).tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 1, 1]


def test_matrix_rules_and_fields():
    rng = np.random.default_rng(4)
    latent = rng.normal(size=(60, 1)) + 0.8 * rng.normal(size=(60, 4))
    x = np.digitize(latent, [-0.5, 0.5]).astype(float)  # three levels
    x[:, 3] = (latent[:, 3] > 0).astype(float)  # a binary model: two levels
    x[40:, 2] = np.nan
    res = polychoric_matrix(x, names=["a", "b", "c", "d"])
    assert res.names == ["a", "b", "c", "d"]
    assert res.n_levels.tolist() == [3, 3, 3, 2] and res.n_levels.dtype == np.int64
    assert res.n_pair.dtype == np.int64 and res.n_pair[0, 2] == 40 and res.n_pair[2, 2] == 40
    assert np.diag(res.rho).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert np.isfinite(res.rho).all() and np.allclose(res.rho, res.rho.T)
    # complete data: the matrix's pair equals the table of that pair (same thresholds),
    # with the zero-cell correction passed through
    tab = np.zeros((3, 2))
    np.add.at(tab, (x[:, 0].astype(int), x[:, 3].astype(int)), 1.0)
    for correct in (0.0, 0.5):
        pair = polychoric_matrix(x[:, [0, 3]], correct=correct).rho[0, 1]
        assert pair == pytest.approx(polychoric_table(tab, correct=correct), abs=1e-7)
    assert polychoric_matrix(x[:, :2]).names == ["m0", "m1"]


def test_matrix_pair_gates():
    a = np.array([0, 1, 2, 1, 0, 2, 1, 0], dtype=float)
    b = np.array([0, 1, 1, 2, 0, 2, 0, 1], dtype=float)
    # min_pair: a pair with exactly min_pair shared items is estimated, fewer are not
    b_few = b.copy()
    b_few[5:] = np.nan
    x = np.c_[a, b_few]
    assert np.isfinite(polychoric_matrix(x, min_pair=5).rho[0, 1])
    assert np.isnan(polychoric_matrix(x, min_pair=6).rho[0, 1])
    assert np.isfinite(polychoric_matrix(np.c_[a[:2], b[:2]]).rho[0, 1])  # default: 2 items
    # a model that varies overall but is constant on the shared items: no correlation
    c = np.array([0, 0, 0, 0, np.nan, np.nan, np.nan, 1])
    d = np.array([0, 1, 2, 1, 2, 0, 1, np.nan])
    assert np.isnan(polychoric_matrix(np.c_[c, d]).rho[0, 1])
    assert np.isnan(polychoric_matrix(np.c_[d, c]).rho[0, 1])


def test_matrix_validation_messages():
    with pytest.raises(ValueError, match=_exact("levels must be items x models, got shape (3,)")):
        polychoric_matrix([0, 1, 2])
    message = "levels must be integers >= 0 (NaN for missing)"
    for bad in ([[0, 1], [-1, 0], [1, 1]], [[0, 1], [0.5, 0], [1, 1]]):
        with pytest.raises(ValueError, match=_exact(message)):
            polychoric_matrix(bad)
    with pytest.raises(ValueError, match=_exact("1 names for 2 models")):
        polychoric_matrix([[0, 1], [1, 0], [1, 1]], names=["a"])


def test_zero_cells_are_corrected_in_a_table_without_ones():
    # a zero cell and no cell of 1: the correction must not depend on a 1 being present
    from tests.refstats import polychoric_ml_exact

    t = np.array([[9.0, 4.0, 2.0], [3.0, 8.0, 5.0], [0.0, 2.0, 7.0]])
    tx, ty = _inner_thresholds(t)
    expected = polychoric_ml_exact(np.where(t == 0, 0.5, t), tx, ty)
    assert abs(polychoric_table(t) - expected) < 5e-8
    assert abs(polychoric_table(t, correct=0) - polychoric_ml_exact(t, tx, ty)) < 5e-8


def test_a_column_of_one_observation_is_a_real_column():
    from tests.refstats import polychoric_ml_exact

    t = np.array([[6.0, 1.0, 2.0], [3.0, 0.0, 7.0]])  # middle column: one observation
    tx, ty = _inner_thresholds(t)
    expected = polychoric_ml_exact(np.where(t == 0, 0.5, t), tx, ty)
    assert abs(polychoric_table(t) - expected) < 5e-8


def test_location_thresholds_by_hand():
    from scipy import special

    from metacog_metrics.polychoric import location_thresholds

    nan = np.nan
    # pooled median of the 9 observed values (0.1 .. 0.9) is 0.5
    conf = np.array(
        [
            [0.1, 0.6, nan, 0.5],
            [0.2, 0.7, nan, nan],
            [0.3, 0.8, nan, nan],
            [0.4, 0.9, nan, nan],
        ]
    )
    tau, med = location_thresholds(conf)
    assert med == 0.5
    # model 0: all 4 below the median, share 1 clipped to 1 - 0.5/4; model 1: none below,
    # share 0 clipped to 0.5/4; model 2: no observations (n counts as 1), share 0 clipped to
    # 1/2; model 3: its one value equals the median (half below), share 1/2
    expected = special.ndtri([1 - 0.125, 0.125, 0.5, 0.5])
    np.testing.assert_allclose(tau, expected, rtol=0, atol=1e-15)
    # pooled median 0.25: model 0 has 2 of 3 below; model 1's one value is above (share 0,
    # clipped to 0.5 / 1 = 1/2)
    tau, _ = location_thresholds(np.array([[0.1, 0.9], [0.2, nan], [0.3, nan]]))
    np.testing.assert_allclose(tau, special.ndtri([2 / 3, 0.5]), rtol=0, atol=1e-15)
    tau, med = location_thresholds(np.full((3, 2), nan))
    assert np.isnan(med) and tau.shape == (2,)


def test_ordinal_correlation_names_why_each_model_is_left_out():
    from metacog_metrics.polychoric import ordinal_correlation

    rng = np.random.default_rng(0)
    n = 20
    base = rng.normal(size=n)
    conf = np.column_stack([base + rng.normal(scale=0.7, size=n) for _ in range(6)])
    conf[:, 2] = np.where(np.arange(n) < 10, conf[:, 2], np.nan)  # C: items 0-9
    conf[:, 3] = np.where(np.arange(n) >= 9, conf[:, 3], np.nan)  # D: items 9-19
    conf[:, 4] = np.where((np.arange(n) >= 6) & (np.arange(n) <= 12), conf[:, 4], np.nan)
    conf[:, 5] = np.where(np.arange(n) < 3, 0.5, np.nan)  # F: 3 items, one value
    conf = np.column_stack([conf, np.full(n, np.nan), np.where(np.arange(n) == 0, 0.3, np.nan)])
    conf = np.column_stack([conf, np.where(np.arange(n) % 2, 0.8, 0.2)])  # I: two levels
    names = ["A", "B", "C", "D", "E", "F", "G", "H", "I"]
    res = ordinal_correlation(conf, names=names)
    # C and D share only item 9 (fewer than 2); each has one such gap, and C has fewer items
    # (10 against 11), so C goes; E (items 6-12) shares 4 with C and 4 with D and stays
    assert res.dropped_reasons == {
        "C": "fewer than 2 shared items, or no variance on them, with 1 other model(s)",
        "F": "no variance (one confidence level)",
        "G": "no observations",
        "H": "no variance (one confidence level)",
    }
    assert res.names == ("A", "B", "D", "E", "I")  # I varies over its two levels
    with pytest.raises(ValueError, match=_exact("conf must be (items, 9 models), got shape (20,)")):
        ordinal_correlation(conf[:, 0], names=names)
    with pytest.raises(
        ValueError, match=_exact("conf must be (items, 2 models), got shape (20, 9)")
    ):
        ordinal_correlation(conf, names=["A", "B"])


def test_ordinal_correlation_passes_its_level_count_on():
    from metacog_metrics.polychoric import ordinal_correlation

    rng = np.random.default_rng(1)
    conf = rng.random((40, 3))  # 40 distinct values per model
    assert list(ordinal_correlation(conf, names=["a", "b", "c"], n_levels=3).n_levels) == [3] * 3
    assert list(ordinal_correlation(conf, names=["a", "b", "c"]).n_levels) == [5] * 3


def test_the_constant_on_shared_items_gate_is_per_pair():
    # as in test_matrix_pair_gates, c is constant on the items it shares with d; other pairs
    # (with e) are fine, and must not lift the gate of the (c, d) pair
    c = np.array([0, 0, 0, 0, np.nan, np.nan, np.nan, 1])
    d = np.array([0, 1, 2, 1, 2, 0, 1, np.nan])
    e = np.array([0, 1, 1, 2, 2, 0, 1, 1])
    rho = polychoric_matrix(np.c_[c, d, e]).rho
    assert np.isnan(rho[0, 1]) and np.isnan(rho[1, 0])
    assert np.isfinite(rho[0, 2]) and np.isfinite(rho[1, 2])


def _not_positive_definite_levels():
    # 16 items, 8 models: the raw polychoric matrix has a negative eigenvalue
    rng = np.random.default_rng(5)
    difficulty = rng.normal(size=(16, 1))
    latent = difficulty + 0.9 * rng.normal(size=(16, 8))
    levels = np.digitize(latent, [-1.0, -0.3, 0.3, 1.0]).astype(float)
    levels[:, 7] = (latent[:, 7] > 0).astype(float)
    return levels


def test_ordinal_correlation_smooths_by_default():
    from metacog_metrics.polychoric import ordinal_correlation
    from metacog_metrics.tetrachoric import cor_smooth

    levels = _not_positive_definite_levels()
    names = [f"m{j}" for j in range(8)]
    raw = polychoric_matrix(levels).rho
    assert np.linalg.eigvalsh(raw)[0] < 0  # the case has teeth
    res = ordinal_correlation(levels, names=names)
    assert res.smoothed
    np.testing.assert_allclose(res.rho, cor_smooth(raw).matrix, atol=1e-12)
    plain = ordinal_correlation(levels, names=names, smooth=False)
    assert not plain.smoothed
    np.testing.assert_allclose(plain.rho, raw, atol=1e-12)


def test_ordinal_correlation_passes_min_pair_on():
    from metacog_metrics.polychoric import ordinal_correlation

    rng = np.random.default_rng(3)
    conf = rng.random((12, 3))
    conf[:8, 2] = np.nan  # model c shares 4 items with each other model
    assert ordinal_correlation(conf, names=["a", "b", "c"], min_pair=4).dropped == ()
    res = ordinal_correlation(conf, names=["a", "b", "c"], min_pair=5)
    assert res.dropped_reasons == {
        "c": "fewer than 5 shared items, or no variance on them, with 2 other model(s)"
    }


def test_location_thresholds_of_nothing_warn_nothing():
    import warnings

    from metacog_metrics.polychoric import location_thresholds

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        med = location_thresholds(np.full((3, 2), np.nan))[1]
    assert np.isnan(med)


# --- psych's edge cases (tests/reference/make_polychoric_reference.R) -------------------------


def _levels(rows):
    return np.array([[np.nan if v is None else v for v in r] for r in rows], float)


@pytest.mark.parametrize("name", sorted(REF["threshold_rule"]))
def test_global_or_per_pair_as_psych_decides_by_the_highest_code(name):
    """Three models of three codes each, one gapped (0, 2, 4) or shifted (1, 2, 3): psych goes
    per pair (the highest codes differ); a model of two codes whose highest is everyone's
    (0, 2) keeps the global thresholds. The number of distinct codes would decide otherwise."""
    case = REF["threshold_rule"][name]
    x = _levels(case["levels"])
    res = polychoric_matrix(x)
    assert res.global_thresholds is case["global"]
    distinct = {np.unique(x[~np.isnan(x[:, j]), j]).size for j in range(x.shape[1])}
    assert (len(distinct) == 1) is not case["global"]  # the rule psych does not use
    np.testing.assert_allclose(res.rho, np.array(case["rho"], float), atol=1e-4)


def _broken(levels):
    x = np.asarray(levels, int)
    t = np.zeros((x[:, 0].max() + 1, x[:, 1].max() + 1))
    np.add.at(t, (x[:, 0], x[:, 1]), 1)
    t = t[t.sum(1) > 0][:, t.sum(0) > 0]
    fixed = np.where(t == 0, 0.5, t)
    shares = [np.cumsum(fixed.sum(a))[:-1] / t.sum() for a in (1, 0)]
    return max(s.max() for s in shares)


def test_pairs_psych_cannot_estimate_fall_back_to_polycors_two_step():
    """Simulated tables where the replaced zero cells push a cumulative share to 1 or past it:
    psych gives NA past 1 (and an infinite threshold at exactly 1, dropping the last level);
    each such pair is flagged and estimated as polycor::polychor(table, ML = FALSE). Where
    polycor's search met NA likelihoods near +-1 (it warns and may stop short of the boundary)
    the estimate must reach at least its likelihood instead."""
    from metacog_metrics.polychoric import _cell_probs

    ref = REF["fallback_tables"]
    assert ref["n_broken"] == len(ref["tables"]) > 50
    past_one = warned = 0
    for case in ref["tables"]:
        top = _broken(case["levels"])
        assert top >= 1.0
        if top > 1.0 + 1e-12:
            assert case["psych"] is None
            past_one += 1
        res = polychoric_matrix(np.array(case["levels"], float), global_thresholds=False)
        assert res.fallback[0, 1] and res.fallback[1, 0]
        assert res.corrected_cells[0, 1] == 0  # estimated without the correction
        if not case["polycor_warned"]:
            assert res.rho[0, 1] == pytest.approx(case["polycor"], abs=2e-4)
            continue
        warned += 1
        x = np.array(case["levels"], int)
        t = np.zeros((x[:, 0].max() + 1, x[:, 1].max() + 1))
        np.add.at(t, (x[:, 0], x[:, 1]), 1)
        t = t[t.sum(1) > 0][:, t.sum(0) > 0]
        tx, ty = (np.r_[-8.5, stats.norm.ppf(np.cumsum(t.sum(a))[:-1] / t.sum()), 8.5]
                  for a in (1, 0))  # fmt: skip

        def nll(r, t=t, tx=tx, ty=ty):
            return -np.sum(t * np.log(_cell_probs(tx, ty, r)))

        assert nll(res.rho[0, 1]) <= nll(case["polycor"]) + 1e-9
    assert past_one > len(ref["tables"]) // 2 and 0 < warned < len(ref["tables"]) // 2


def test_a_matrix_with_a_pair_psych_cannot_estimate():
    """psych's matrix call stops on such a pair; every other pair is psych's per-pair value and
    the broken one polycor's, flagged."""
    case = REF["fallback_matrix"]
    assert case["psych_matrix_call"] == "missing value where TRUE/FALSE needed"
    res = polychoric_matrix(_levels(case["levels"]))
    assert not res.global_thresholds
    np.testing.assert_array_equal(res.fallback, np.array(case["fallback"]))
    np.testing.assert_allclose(res.rho, np.array(case["rho"], float), atol=2e-4)


def test_corrected_cells_are_the_zero_cells_of_each_per_pair_table():
    case = REF["fallback_matrix"]
    x = _levels(case["levels"])
    res = polychoric_matrix(x)
    for a in range(x.shape[1]):
        for b in range(a + 1, x.shape[1]):
            ok = ~np.isnan(x[:, a]) & ~np.isnan(x[:, b])
            t = np.zeros((9, 9))
            np.add.at(t, (x[ok, a].astype(int), x[ok, b].astype(int)), 1)
            t = t[t.sum(1) > 0][:, t.sum(0) > 0]
            want = 0 if res.fallback[a, b] else int((t == 0).sum())
            assert res.corrected_cells[a, b] == res.corrected_cells[b, a] == want
    # the global path corrects nothing
    glob = polychoric_matrix(x, global_thresholds=True)
    assert not glob.corrected_cells.any() and not glob.fallback.any()


def test_codes_spanning_more_than_psychs_max_cat_are_refused():
    assert REF["max_cat_error"].startswith("You have more than8 categories")
    x = np.c_[np.arange(9.0), np.r_[np.arange(8.0), 0.0]]
    message = (
        "levels span 9 values (0 to 8); a polychoric takes at most 8 (psych's max.cat): bin "
        "them into fewer ordered levels"
    )
    with pytest.raises(ValueError, match=_exact(message)):
        polychoric_matrix(x)
    assert np.isfinite(polychoric_matrix(x[:, :1].clip(0, 7).repeat(2, 1)).rho).all()


def test_ordinal_correlation_counts_corrected_pairs_cells_and_fallbacks():
    from metacog_metrics.polychoric import ordinal_correlation

    case = REF["fallback_matrix"]
    x = _levels(case["levels"])
    res = ordinal_correlation(x / 10.0, names=list("abcd"), n_levels=5)
    full = polychoric_matrix(x)
    upper = np.triu_indices(4, k=1)
    assert res.n_fallback_pairs == int(full.fallback[upper].sum()) == 1
    assert res.n_corrected_cells == int(full.corrected_cells[upper].sum()) > 0
    assert res.n_corrected_pairs == int((full.corrected_cells[upper] > 0).sum())
    assert res.correct == 0.5 and not res.global_thresholds
