"""Eigen-decomposition, factor analysis and factor alignment against psych values."""

from __future__ import annotations

import numpy as np
import pytest

from metacog_metrics.factors import (
    contentious_items,
    eigen_decomposition,
    factor_alignment,
    factor_analysis,
    factor_scores,
    quadratic_fit,
)
from metacog_metrics.tetrachoric import tetrachoric_matrix

PSYCH_ATOL = 5e-5


def _lsat6(ref):
    table = ref["R"]["lsat6_pattern_table"]
    patterns = np.array(table["patterns"])
    return patterns, np.repeat(patterns, table["Ob6"], axis=0)


def test_eigen_lsat6(stats_reference):
    ref = stats_reference["R"]["lsat6"]
    res = eigen_decomposition(ref["psych_default_rho"], thresholds=ref["psych_default_tau"])
    np.testing.assert_allclose(res.eigenvalues, ref["eigenvalues_of_psych_default"], atol=1e-6)
    assert res.first_share == pytest.approx(ref["first_factor_share"], abs=1e-6)
    np.testing.assert_allclose(res.loadings, ref["pc1_loadings_sign_sum_positive"], atol=1e-6)
    # R^2 is sensitive to the 6-decimal rounding of the inputs (see _tolerances)
    assert res.quadratic_r2 == pytest.approx(ref["quadratic_fit_loadings_vs_tau_R2"], abs=1e-5)
    np.testing.assert_allclose(res.quadratic.coef, ref["quadratic_fit_coef"], atol=5e-6)


def test_eigen_from_our_tetrachoric(stats_reference):
    ref = stats_reference["R"]["lsat6"]
    _, data = _lsat6(stats_reference)
    tet = tetrachoric_matrix(data)
    res = eigen_decomposition(tet.rho, thresholds=tet.tau)
    np.testing.assert_allclose(
        res.eigenvalues, ref["eigenvalues_of_psych_default"], atol=PSYCH_ATOL
    )
    assert res.first_share == pytest.approx(ref["first_factor_share"], abs=PSYCH_ATOL)
    assert res.quadratic_r2 == pytest.approx(
        ref["quadratic_fit_loadings_vs_tau_R2"], abs=PSYCH_ATOL
    )


def test_sign_fixed_positive():
    r = np.array([[1, 0.6, 0.5], [0.6, 1, 0.4], [0.5, 0.4, 1.0]])
    res = eigen_decomposition(r)
    assert res.loadings.sum() > 0 and np.all(res.loadings > 0)
    assert res.quadratic is None and np.isnan(res.quadratic_r2)
    assert factor_analysis(r).loadings.sum() > 0


@pytest.mark.parametrize("method", ["minres", "ml"])
def test_fa_loadings_match_psych(stats_reference, method):
    ref = stats_reference["R"]
    res = factor_analysis(ref["lsat6"]["psych_default_rho"], method=method)
    expected = ref["lsat6_fa1"][f"{method}_loadings"]
    np.testing.assert_allclose(res.loadings, expected, atol=1e-5)
    assert res.converged and not res.heywood
    np.testing.assert_allclose(res.communalities + res.uniquenesses, 1.0)


def test_fa_regression_weights_and_scores(stats_reference):
    ref = stats_reference["R"]
    fa1 = ref["lsat6_fa1"]
    rho = np.array(ref["lsat6"]["psych_default_rho"])
    res = factor_analysis(rho)
    np.testing.assert_allclose(res.weights, fa1["regression_weights"], atol=1e-5)
    patterns, data = _lsat6(stats_reference)
    # psych scales the patterns by the data's means and sds: score data rows, then map patterns
    scores = factor_scores(data, rho, res.loadings)
    first = {tuple(row): s for row, s in zip(data, scores)}
    got = np.array([first[tuple(p)] for p in patterns if tuple(p) in first])
    want = np.array(fa1["pattern_scores_regression"])[[tuple(p) in first for p in patterns]]
    np.testing.assert_allclose(got, want, atol=1e-5)
    # the whole pipeline from raw data: our tetrachoric + minres + scores
    tet = tetrachoric_matrix(data)
    fa = factor_analysis(tet.rho)
    np.testing.assert_allclose(fa.loadings, fa1["minres_loadings"], atol=PSYCH_ATOL)
    ours = factor_scores(data, tet.rho, fa.loadings)
    got = np.array(
        [dict(zip(map(tuple, data), ours))[tuple(p)] for p in patterns if tuple(p) in first]
    )
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_fa_heywood_bounded():
    # two near-duplicate variables push a loading to the bound (uniqueness 0.005)
    r = np.array([[1, 0.999, 0.3], [0.999, 1, 0.3], [0.3, 0.3, 1.0]])
    res = factor_analysis(r)
    assert res.heywood
    assert res.uniquenesses.min() == pytest.approx(0.005, abs=1e-6)


def test_fa_errors():
    with pytest.raises(ValueError, match="n_factors"):
        factor_analysis(np.eye(3), n_factors=3)
    with pytest.raises(ValueError, match="method"):
        factor_analysis(np.eye(3), method="pa")
    with pytest.raises(ValueError, match="missing"):
        factor_analysis([[1, np.nan], [np.nan, 1]])


def test_quadratic_fit_exact_parabola():
    x = np.linspace(-2, 1, 9)
    fit = quadratic_fit(x, 0.7 - 0.1 * x - 0.2 * x**2)
    np.testing.assert_allclose(fit.coef, [0.7, -0.1, -0.2], atol=1e-12)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.vertex == pytest.approx(-0.25)
    noisy = quadratic_fit(x, 0.7 - 0.2 * x**2 + np.sin(7 * x) * 0.05)
    assert 0 < noisy.r2 < 1 and 0 < noisy.p_value < 1
    assert np.isnan(quadratic_fit([1, 2], [3, 4]).r2)


def test_contentious_integer_bounds():
    m = 20
    # k = 2 is exactly 0.1 * 20 (inclusive); k = 18 exactly 0.9 * 20; 1 and 19 are out
    k = np.array([1, 2, 10, 18, 19])
    conf = (np.arange(m)[None, :] < k[:, None]).astype(float)
    mask = contentious_items(conf, conf)
    np.testing.assert_array_equal(mask, [False, True, True, True, False])
    # both rates must be inside
    corr = np.ones_like(conf)
    assert not contentious_items(conf, corr).any()
    # 0.3 * 10 = 3.0000000000000004 in floating point; the exact rule still includes k = 3
    conf10 = (np.arange(10)[None, :] < np.array([2, 3, 7, 8])[:, None]).astype(float)
    np.testing.assert_array_equal(
        contentious_items(conf10, conf10, bounds=(0.3, 0.7)), [False, True, True, False]
    )


def _population(n_items, n_models, noise, rng):
    """Shared difficulty axis; confidence and correctness both threshold it."""
    difficulty = rng.normal(size=(n_items, 1))
    thresholds = rng.normal(scale=0.7, size=(1, n_models))
    correct = difficulty + noise * rng.normal(size=(n_items, n_models)) > thresholds
    conf = difficulty + noise * rng.normal(size=(n_items, n_models)) > thresholds - 0.5
    return conf.astype(float), correct.astype(float)


def test_alignment_identical_and_independent():
    rng = np.random.default_rng(0)
    conf, corr = _population(300, 8, 0.8, rng)
    same = factor_alignment(corr, corr)
    assert same.all.r == pytest.approx(1.0, abs=1e-12)
    assert same.contentious.r == pytest.approx(1.0, abs=1e-12)
    shared = factor_alignment(conf, corr)
    assert shared.all.r > 0.5 and shared.all.p_value < 1e-6
    assert shared.all.n_items == 300
    assert shared.contentious.n_items == int(shared.contentious_mask.sum()) > 10
    independent = factor_alignment(conf, _population(300, 8, 0.8, rng)[1])
    assert abs(independent.all.r) < 0.2


def test_alignment_recomputes_on_subset():
    rng = np.random.default_rng(1)
    conf, corr = _population(400, 10, 1.0, rng)
    res = factor_alignment(conf, corr)
    mask = res.contentious_mask
    sub_tet = tetrachoric_matrix(conf[mask])
    full_tet = tetrachoric_matrix(conf)
    # the subset's own thresholds and correlations differ from the full set's
    assert not np.allclose(sub_tet.tau, full_tet.tau[[int(n) for n in sub_tet.names]])
    fa = factor_analysis(sub_tet.rho)
    kept = [int(n) for n in sub_tet.names]
    implied = np.outer(fa.loadings, fa.loadings) + np.diag(fa.uniquenesses)
    x = conf[mask][:, kept]
    z = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)  # psych: column means, (n - 1) sds
    expected = z @ np.linalg.inv(implied) @ fa.loadings  # Thurstone: Z R^-1 L
    np.testing.assert_allclose(res.contentious.confidence_scores, expected, atol=1e-9)
    observed = factor_alignment(conf, corr, weights="observed")
    psych = z @ np.linalg.inv(sub_tet.rho) @ fa.loadings
    np.testing.assert_allclose(observed.contentious.confidence_scores, psych, atol=1e-9)


def test_model_weights_track_the_factor_with_few_items():
    # 12 models x 60 items: the tetrachoric matrix is noisy (small eigenvalues are sampling
    # noise) and psych's R^-1 L weights amplify them; the model-matrix weights do not.
    rng = np.random.default_rng(7)
    worse = []
    for _ in range(5):
        conf, corr = _population(60, 12, 1.0, rng)
        yes_rate = conf.mean(axis=1)
        model = factor_alignment(conf, corr).all.confidence_scores
        observed = factor_alignment(conf, corr, weights="observed").all.confidence_scores
        assert np.corrcoef(model, yes_rate)[0, 1] > 0.9
        worse.append(np.corrcoef(observed, yes_rate)[0, 1])
    assert min(worse) < 0.9


def test_alignment_rejects_unknown_weights():
    conf, corr = _population(50, 5, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="weights must be"):
        factor_alignment(conf, corr, weights="bartlett")


def test_alignment_reports_reasons():
    rng = np.random.default_rng(2)
    conf, corr = _population(8, 5, 1.0, rng)
    res = factor_alignment(conf, corr)
    assert np.isnan(res.all.r) and "fewer than 10 items" in res.all.reason
    conf, corr = _population(100, 4, 1.0, rng)
    conf[:, :2] = 1.0  # two models always say yes: 2 usable models left
    res = factor_alignment(conf, corr)
    assert np.isnan(res.all.r) and "confidence: fewer than 3 models" in res.all.reason


def test_factor_scores_regression_formula_by_hand():
    # Twin of the psych reference (which needs ../shared): Z R^-1 L on a 4 x 3 example, with
    # R^-1 L solved by hand. R = [[1, .5, 0], [.5, 1, 0], [0, 0, 1]], L = (.6, .6, .3):
    # R^-1 L = (.4, .4, .3) since R (.4, .4, .3) = (.6, .6, .3).
    x = np.array([[0, 1, 1], [1, 1, 0], [1, 0, 1], [0, 0, 0]], dtype=float)
    r = np.array([[1, 0.5, 0], [0.5, 1, 0], [0, 0, 1]])
    lam = np.array([0.6, 0.6, 0.3])
    sd = np.sqrt(1 / 3)  # every column: two 1s in four rows, (n - 1) sd
    z = (x - 0.5) / sd
    expected = z @ np.array([0.4, 0.4, 0.3])
    np.testing.assert_allclose(factor_scores(x, r, lam), expected, atol=1e-12)
    # a row with a NaN gets a NaN score; a column without variance is an error
    with_nan = x.copy()
    with_nan[0, 0] = np.nan
    assert np.isnan(factor_scores(with_nan, r, lam)[0])
    with pytest.raises(ValueError, match="no variance"):
        factor_scores(np.c_[x[:, :2], np.ones(4)], r, lam)
