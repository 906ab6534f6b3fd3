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


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


def _exact(message: str) -> str:
    import re

    return "^" + re.escape(message) + "$"


_LAMBDA = np.array([0.8, 0.7, 0.6, 0.5, 0.4])
#: An exact one-factor correlation matrix: both methods must recover _LAMBDA.
_R1 = np.outer(_LAMBDA, _LAMBDA) + np.diag(1 - _LAMBDA**2)


@pytest.mark.parametrize("method", ["minres", "ml"])
def test_exact_one_factor_matrix_is_recovered(method):
    res = factor_analysis(_R1, method=method, names=list("abcde"))
    assert res.names == tuple("abcde") and res.method == method
    np.testing.assert_allclose(res.loadings, _LAMBDA, atol=1e-7)
    np.testing.assert_allclose(res.uniquenesses, 1 - _LAMBDA**2, atol=1e-7)
    np.testing.assert_allclose(res.communalities, _LAMBDA**2, atol=1e-7)
    np.testing.assert_allclose(res.weights, np.linalg.solve(_R1, _LAMBDA), atol=1e-6)
    np.testing.assert_allclose(res.variance_share, [np.sum(_LAMBDA**2) / 5], atol=1e-7)
    assert res.objective == pytest.approx(0.0, abs=1e-12) and not res.heywood
    if method == "minres":  # (L-BFGS-B reports a failed line search at ML's exact zero)
        assert res.converged


def test_objectives_are_the_fitting_functions():
    r = np.array(
        [
            [1.0, 0.55, 0.40, 0.30, 0.20],
            [0.55, 1.0, 0.45, 0.25, 0.35],
            [0.40, 0.45, 1.0, 0.50, 0.15],
            [0.30, 0.25, 0.50, 1.0, 0.40],
            [0.20, 0.35, 0.15, 0.40, 1.0],
        ]
    )
    ml = factor_analysis(r, method="ml")
    sigma = np.outer(ml.loadings, ml.loadings) + np.diag(ml.uniquenesses)
    # factanal's discrepancy: log det(Sigma) - log det(R) + tr(Sigma^-1 R) - p
    f = (np.linalg.slogdet(sigma)[1] - np.linalg.slogdet(r)[1]
         + np.trace(np.linalg.solve(sigma, r)) - 5)  # fmt: skip
    assert ml.objective == pytest.approx(f, rel=1e-6) and ml.objective > 0.01
    mr = factor_analysis(r)
    resid = r - np.outer(mr.loadings, mr.loadings)
    assert mr.objective == pytest.approx(np.sum(resid[~np.eye(5, dtype=bool)] ** 2), rel=1e-9)


def test_two_factors_keep_their_columns():
    lam = np.array([[0.8, 0.1], [0.7, 0.2], [0.6, 0.0], [0.1, 0.7], [0.2, 0.8], [0.0, 0.6]])
    r = lam @ lam.T
    np.fill_diagonal(r, 1.0)
    res = factor_analysis(r, n_factors=2)
    assert res.loadings.shape == (6, 2) and res.weights.shape == (6, 2)
    assert (res.loadings.sum(axis=0) > 0).all()  # each factor's loadings sum positive
    fitted = res.loadings @ res.loadings.T
    off = ~np.eye(6, dtype=bool)
    np.testing.assert_allclose(fitted[off], r[off], atol=1e-6)
    np.testing.assert_allclose(res.communalities, (res.loadings**2).sum(axis=1), atol=1e-12)
    np.testing.assert_allclose(res.variance_share, (res.loadings**2).sum(axis=0) / 6)


@pytest.mark.parametrize("method", ["minres", "ml"])
def test_singular_matrix_uses_the_pseudo_inverse(method):
    # two identical variables: R is singular; weights and scores use its pseudo-inverse
    r = np.array([[1.0, 1.0, 0.5, 0.4], [1.0, 1.0, 0.5, 0.4], [0.5, 0.5, 1.0, 0.3],
                  [0.4, 0.4, 0.3, 1.0]])  # fmt: skip
    res = factor_analysis(r, method=method)
    np.testing.assert_allclose(res.weights, np.linalg.pinv(r) @ res.loadings, atol=1e-9)
    x = np.array([[0, 0, 1, 0], [1, 1, 0, 1], [1, 1, 1, 0], [0, 0, 0, 1]], dtype=float)
    z = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    np.testing.assert_allclose(
        factor_scores(x, r, res.loadings), z @ np.linalg.pinv(r) @ res.loadings, atol=1e-9
    )


def test_matrix_and_argument_messages():
    with pytest.raises(
        ValueError, match=_exact("need a square correlation matrix, got shape (2, 3)")
    ):
        eigen_decomposition(np.zeros((2, 3)))
    with pytest.raises(
        ValueError, match=_exact("need a square correlation matrix, got shape (3,)")
    ):
        factor_analysis(np.ones(3))
    with pytest.raises(ValueError, match=_exact("the correlation matrix has missing entries")):
        eigen_decomposition([[1, np.nan], [np.nan, 1]])
    with pytest.raises(ValueError, match=_exact("the correlation matrix is not symmetric")):
        eigen_decomposition([[1, 0.5], [0.6, 1]])
    with pytest.raises(ValueError, match=_exact("n_factors must be in [1, 1] for 2 variables")):
        factor_analysis(np.eye(2), n_factors=2)
    with pytest.raises(ValueError, match=_exact("n_factors must be in [1, 2] for 3 variables")):
        factor_analysis(np.eye(3), n_factors=0)
    with pytest.raises(ValueError, match=_exact("2 names for a 3 x 3 matrix")):
        factor_analysis(np.eye(3), names=["a", "b"])
    with pytest.raises(ValueError, match=_exact("2 names for a 3 x 3 matrix")):
        eigen_decomposition(np.eye(3), names=["a", "b"])
    with pytest.raises(ValueError, match=_exact("2 thresholds for a 3 x 3 matrix")):
        eigen_decomposition(np.eye(3), thresholds=[0.1, 0.2])
    with pytest.raises(ValueError, match=_exact("x and y differ in length: 3 vs 2")):
        quadratic_fit([1, 2, 3], [1, 2])
    x = np.array([[0, 1], [1, 0], [1, 1]], dtype=float)
    with pytest.raises(ValueError, match=_exact(
        "shapes disagree: data (3, 2), matrix (2, 2), loadings (3,)"
    )):  # fmt: skip
        factor_scores(x, np.eye(2), [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match=_exact(
        "shapes disagree: data (3,), matrix (2, 2), loadings (2,)"
    )):  # fmt: skip
        factor_scores([0.0, 1.0, 1.0], np.eye(2), [0.5, 0.5])
    with pytest.raises(
        ValueError, match=_exact("a column has no variance; drop it before scoring")
    ):
        factor_scores(np.c_[x[:, 0], np.ones(3)], np.eye(2), [0.5, 0.5])


def test_eigen_decomposition_edges_and_fields():
    empty = eigen_decomposition(np.zeros((0, 0)))
    assert empty.names == () and empty.eigenvalues.size == 0 and empty.loadings.size == 0
    assert np.isnan(empty.first_share) and empty.thresholds.size == 0 and empty.quadratic is None
    one = eigen_decomposition([[1.0]], names=["m"])
    assert one.names == ("m",) and one.eigenvalues.tolist() == [1.0]
    assert one.first_share == 1.0 and one.loadings.tolist() == [1.0]
    r = np.array([[1.0, 0.5, -0.3], [0.5, 1.0, -0.3], [-0.3, -0.3, 1.0]])
    res = eigen_decomposition(r, names=["x", "y", "z"])
    assert res.names == ("x", "y", "z") and np.isnan(res.thresholds).all()
    # PC1 is (a, a, -b) with 0 < 2a - b < 1: its sign makes the sum positive, not above 1
    assert 0 < res.loadings.sum() < np.sqrt(res.eigenvalues[0])
    values, vectors = np.linalg.eigh(r)
    v1 = vectors[:, -1] * np.sign(vectors[:, -1].sum())
    np.testing.assert_allclose(res.loadings, v1 * np.sqrt(values[-1]), atol=1e-12)
    tau = [0.1, -0.2, 0.3]
    assert eigen_decomposition(r, thresholds=tau).thresholds.tolist() == tau


def test_quadratic_fit_against_numpy_and_the_f_test():
    from scipy import stats

    x = np.array([-1.2, -0.7, -0.1, 0.3, 0.8, 1.1, np.nan, 0.5])
    y = np.array([0.35, 0.6, 0.72, 0.7, 0.52, 0.41, 0.9, np.nan])
    fit = quadratic_fit(x, y)
    ok = np.isfinite(x) & np.isfinite(y)
    c2, c1, c0 = np.polyfit(x[ok], y[ok], 2)
    np.testing.assert_allclose(fit.coef, [c0, c1, c2], atol=1e-12)
    resid = y[ok] - np.polyval([c2, c1, c0], x[ok])
    r2 = 1 - resid @ resid / np.sum((y[ok] - y[ok].mean()) ** 2)
    n = 6
    f = (r2 / 2) / ((1 - r2) / (n - 3))
    assert fit.n == n and fit.r2 == pytest.approx(r2, abs=1e-12)
    assert fit.f_statistic == pytest.approx(f) and fit.p_value == pytest.approx(stats.f.sf(f, 2, 3))
    assert fit.vertex == pytest.approx(-c1 / (2 * c2))
    # four points: the F test has one residual degree of freedom
    four = quadratic_fit([0, 1, 2, 3], [0.0, 0.9, 2.1, 2.9])
    assert np.isfinite(four.f_statistic) and 0 < four.p_value < 1
    # three points: exact fit, no F test; c2 = 1 has a vertex
    three = quadratic_fit([0, 1, 2], [1.0, 0.0, 3.0])
    assert three.n == 3 and np.isnan(three.f_statistic) and np.isnan(three.p_value)
    assert quadratic_fit([-1, 0, 1, 2], [1.0, 0.0, 1.0, 4.0]).vertex == pytest.approx(
        0.0, abs=1e-12
    )
    two = quadratic_fit([0, 1], [1, 2])
    assert two.n == 2 and all(np.isnan(v) for v in (*two.coef, two.r2, two.f_statistic,
                                                     two.p_value, two.vertex))  # fmt: skip


def test_contentious_items_checks():
    conf = np.array([[0, 1], [1, 1], [0, 0]], dtype=float)
    with pytest.raises(ValueError, match=_exact(
        "confidence (3, 2) and correct (3, 3) must be equal 2-D shapes"
    )):  # fmt: skip
        contentious_items(conf, np.zeros((3, 3)))
    nan = conf.copy()
    nan[0, 0] = np.nan
    for c, y in ((nan, conf), (conf, nan)):
        with pytest.raises(ValueError, match=_exact(
            "contentious_items needs complete matrices (no NaN)"
        )):  # fmt: skip
            contentious_items(c, y)
    with pytest.raises(ValueError, match=_exact(
        "bounds must satisfy 0 <= low <= high <= 1, got (0.2, 1.5)"
    )):  # fmt: skip
        contentious_items(conf, conf, bounds=(0.2, 1.5))
    # the bounds may touch 0 and 1 and may be equal
    np.testing.assert_array_equal(contentious_items(conf, conf, bounds=(0, 1)), [True] * 3)
    np.testing.assert_array_equal(
        contentious_items(conf, conf, bounds=(0.5, 0.5)), [True, False, False]
    )


def test_alignment_fields_reasons_and_interval():
    from scipy import stats

    rng = np.random.default_rng(3)
    conf, corr = _population(120, 6, 0.9, rng)
    res = factor_alignment(conf, corr, bounds=(0.2, 0.8))
    expected_mask = contentious_items(conf, corr, bounds=(0.2, 0.8))
    np.testing.assert_array_equal(res.contentious_mask, expected_mask)
    assert res.bounds == (0.2, 0.8)
    assert res.method == "minres, regression scores with model-matrix weights"
    a = res.all
    assert a.reason is None and a.r2 == pytest.approx(a.r**2)
    assert (a.n_items, a.n_models_confidence, a.n_models_correctness) == (120, 6, 6)
    z, se = np.arctanh(a.r), 1 / np.sqrt(120 - 3)
    np.testing.assert_allclose(a.ci, np.tanh([z - 1.959963984540054 * se,
                                              z + 1.959963984540054 * se]), atol=1e-9)  # fmt: skip
    assert a.p_value == pytest.approx(stats.pearsonr(a.confidence_scores,
                                                     a.correctness_scores).pvalue)  # fmt: skip
    # the ML variant fits its scores with ML; the zero-cell value reaches the tetrachorics
    ml = factor_alignment(conf, corr, method="ml").all
    tet = tetrachoric_matrix(conf)
    fa = factor_analysis(tet.rho, method="ml")
    implied = np.outer(fa.loadings, fa.loadings) + np.diag(fa.uniquenesses)
    np.testing.assert_allclose(
        ml.confidence_scores, factor_scores(conf, implied, fa.loadings), atol=1e-8
    )
    zero = conf.copy()
    zero[:40, :2] = 1.0  # models 0 and 1 agree on every item where one says 1
    zero[40:, 1] = zero[40:, 0]
    for cells in (0.5, 0.1):
        got = factor_alignment(zero, corr, correct_cells=cells).all.confidence_scores
        t = tetrachoric_matrix(zero, correct=cells)
        f = factor_analysis(t.rho)
        m = np.outer(f.loadings, f.loadings) + np.diag(f.uniquenesses)
        np.testing.assert_allclose(got, factor_scores(zero, m, f.loadings), atol=1e-8)
    assert np.array_equal(
        factor_alignment(zero, corr).all.confidence_scores,
        factor_alignment(zero, corr, correct_cells=0.5).all.confidence_scores,
    )


def test_alignment_small_and_degenerate_sets():
    rng = np.random.default_rng(5)
    conf, corr = _population(10, 5, 0.9, rng)
    exactly = factor_alignment(conf, corr, min_items=10).all
    assert exactly.reason is None and np.isfinite(exactly.r)
    few = factor_alignment(conf, corr, min_items=11).all
    assert few.reason == "fewer than 11 items" and few.n_items == 10
    assert (few.n_models_confidence, few.n_models_correctness) == (0, 0)
    assert np.isnan([few.r, few.r2, few.p_value, *few.ci]).all()
    assert few.confidence_scores.shape == (10,) and np.isnan(few.confidence_scores).all()
    assert np.isnan(few.correctness_scores).all()
    # exactly three usable models are enough
    c3, y3 = _population(40, 3, 0.9, np.random.default_rng(8))
    three = factor_alignment(c3, y3).all
    assert three.reason is None and three.n_models_confidence == 3 and np.isfinite(three.r)
    # both sides failing: both reasons, in order; the scores of the side that worked are kept
    flat_c, flat_y = conf.copy(), corr.copy()
    flat_c[:, :3] = 1.0
    flat_y[:, 1:4] = 0.0
    both = factor_alignment(flat_c, flat_y).all
    assert both.reason == ("confidence: fewer than 3 models with variance; "
                           "correctness: fewer than 3 models with variance")  # fmt: skip
    assert (both.n_models_confidence, both.n_models_correctness) == (2, 2)
    one = factor_alignment(flat_c, corr).all
    assert one.reason == "confidence: fewer than 3 models with variance"
    assert np.isnan([one.r2, one.p_value, *one.ci]).all() and one.n_items == 10
    assert np.isnan(one.confidence_scores).all() and np.isfinite(one.correctness_scores).all()
    assert one.n_models_correctness == 5
    # two items: their tetrachorics cannot be estimated
    pair = np.array([[0, 1, 0, 1, 1], [1, 0, 1, 0, 0]], dtype=float)  # every model varies
    two = factor_alignment(pair, pair, min_items=2).all
    assert two.reason == ("confidence: missing tetrachoric correlations; "
                          "correctness: missing tetrachoric correlations")  # fmt: skip
    # four items: an interval (Fisher z needs n > 3); three: none
    c4, y4 = _population(10, 5, 0.9, np.random.default_rng(2))
    four = factor_alignment(c4[:4], y4[:4], min_items=4).all
    assert four.reason is None and np.isfinite(four.ci).all()
    three_items = factor_alignment(c4[:3], y4[:3], min_items=3).all
    assert three_items.reason is None and np.isfinite(three_items.r)
    assert np.isnan(three_items.ci).all()


def test_ordinal_alignment_is_the_polychoric_composition():
    """Numeric confidence as levels: polychoric correlations of the models with variance,
    smoothed, one minres factor, scores with the model matrix's weights; contentious items by
    pass rate alone. Each piece is checked against R elsewhere; here, that the ordinal path
    composes them (and not the tetrachoric one)."""
    from metacog_metrics.polychoric import polychoric_matrix
    from metacog_metrics.tetrachoric import cor_smooth

    rng = np.random.default_rng(3)
    difficulty = rng.normal(size=(240, 1))
    latent = difficulty + 0.8 * rng.normal(size=(240, 7))
    levels = np.digitize(latent, [-1.0, -0.3, 0.3, 1.0]).astype(float)  # 0..4
    levels[:, 6] = 2.0  # a model without variance in its confidence: left out
    corr = (difficulty + 0.8 * rng.normal(size=(240, 7)) > 0).astype(float)
    res = factor_alignment(levels, corr, ordinal=True)

    kept = list(range(6))
    rho = cor_smooth(polychoric_matrix(levels[:, kept]).rho).matrix
    fa = factor_analysis(rho, method="minres")
    lam = np.asarray(fa.loadings, dtype=float)
    r_model = np.outer(lam, lam) + np.diag(np.asarray(fa.uniquenesses, dtype=float))
    expected = factor_scores(levels[:, kept], r_model, fa.loadings)
    assert res.all.n_models_confidence == 6 and res.all.reason is None
    np.testing.assert_allclose(res.all.confidence_scores, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(res.contentious_mask, contentious_items(corr, corr))
    assert "polychoric over levels" in res.method
    # the contentious subset is recomputed on its own rows, ordinal too
    sub = res.contentious_mask
    rho_sub = polychoric_matrix(levels[sub][:, kept]).rho
    assert res.contentious.n_models_confidence == 6
    assert np.isfinite(rho_sub).all() and np.isfinite(res.contentious.r)


def test_quadratic_fit_through_three_points_and_a_flat_response():
    # three points fix the parabola y = 1 - 2x + 3x^2 exactly (by hand): R^2 1, no F-test
    fit = quadratic_fit([0.0, 1.0, 2.0], [1.0, 2.0, 9.0])
    np.testing.assert_allclose(fit.coef, (1.0, -2.0, 3.0), atol=1e-12)
    assert fit.n == 3 and fit.r2 == pytest.approx(1.0) and np.isnan(fit.p_value)
    assert fit.vertex == pytest.approx(1 / 3)
    # a constant response has no variance to explain: R^2 undefined, no F-test
    flat = quadratic_fit([0.0, 1.0, 2.0, 3.0], [2.0, 2.0, 2.0, 2.0])
    assert np.isnan(flat.r2) and np.isnan(flat.p_value) and np.isnan(flat.vertex)


def test_ordinal_alignment_smooths_a_matrix_that_is_not_positive_definite():
    """Few items and many models: the raw polychoric matrix has a negative eigenvalue, so the
    composition must go through ``cor_smooth`` (a model with two levels counts as varying)."""
    from metacog_metrics.polychoric import polychoric_matrix
    from metacog_metrics.tetrachoric import cor_smooth

    rng = np.random.default_rng(5)
    difficulty = rng.normal(size=(16, 1))
    latent = difficulty + 0.9 * rng.normal(size=(16, 8))
    levels = np.digitize(latent, [-1.0, -0.3, 0.3, 1.0]).astype(float)
    levels[:, 7] = (latent[:, 7] > 0).astype(float)  # two levels only
    corr = (difficulty + 0.8 * rng.normal(size=(16, 8)) > 0).astype(float)
    raw = polychoric_matrix(levels).rho
    assert np.isfinite(raw).all() and np.linalg.eigvalsh(raw)[0] < 0  # the case has teeth
    res = factor_alignment(levels, corr, ordinal=True, min_items=5)
    rho = cor_smooth(raw).matrix
    fa = factor_analysis(rho, method="minres")
    lam = np.asarray(fa.loadings, dtype=float)
    r_model = np.outer(lam, lam) + np.diag(np.asarray(fa.uniquenesses, dtype=float))
    expected = factor_scores(levels, r_model, fa.loadings)
    assert res.all.n_models_confidence == 8
    np.testing.assert_allclose(res.all.confidence_scores, expected, rtol=1e-8, atol=1e-10)


def test_too_few_models_give_one_nan_score_per_item():
    rng = np.random.default_rng(2)
    conf = (rng.random((30, 2)) < 0.5).astype(float)
    corr = (rng.random((30, 2)) < 0.5).astype(float)
    res = factor_alignment(conf, corr)
    assert res.all.reason == (
        "confidence: fewer than 3 models with variance; "
        "correctness: fewer than 3 models with variance"
    )
    assert res.all.confidence_scores.shape == (30,) and np.isnan(res.all.confidence_scores).all()
    assert res.all.correctness_scores.shape == (30,)


def test_first_component_is_signed_to_sum_positive_when_its_entries_differ_in_sign():
    from scipy import linalg

    r = np.array([[1.0, -0.3, -0.2], [-0.3, 1.0, 0.6], [-0.2, 0.6, 1.0]])
    res = eigen_decomposition(r)
    values = linalg.eigvalsh(r)  # ascending
    lam = res.loadings
    # an eigenvector of the largest eigenvalue, scaled to length sqrt(lambda1), summing > 0
    np.testing.assert_allclose(r @ lam, values[-1] * lam, atol=1e-12)
    assert lam @ lam == pytest.approx(values[-1], rel=1e-12)
    assert 0 < lam.sum() < np.sqrt(values[-1])  # mixed signs: the sum is below the norm


def test_asymmetry_beyond_1e_10_is_refused():
    r = np.eye(3)
    r[0, 1], r[1, 0] = 0.0, 1e-9  # beyond 1e-10 where the entries are near 0
    with pytest.raises(ValueError, match="not symmetric"):
        eigen_decomposition(r)
    r[1, 0] = 1e-12  # rounding noise is accepted (and averaged away)
    assert eigen_decomposition(r).loadings.shape == (3,)


def test_a_zero_response_has_no_vertex_and_no_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = quadratic_fit([0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0])
    assert fit.coef == (0.0, 0.0, 0.0) and np.isnan(fit.vertex)


def test_contentious_bounds_are_compared_exactly():
    # 1/3 is above the bound 0.3333333333333333 (its 16-digit decimal): an item with one yes of
    # three models is outside, although 1e16 and 3333333333333333 * 3 round to the same double
    conf = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    corr = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    mask = contentious_items(conf, corr, bounds=(0.0, 0.3333333333333333))
    np.testing.assert_array_equal(mask, [False, False])
    mask = contentious_items(conf, corr, bounds=(0.0, 1 / 3 + 1e-15))
    np.testing.assert_array_equal(mask, [True, False])


def test_ordinal_alignment_without_any_varying_model():
    rng = np.random.default_rng(0)
    levels = np.full((20, 4), 2.0)  # every model gives one level
    corr = (rng.random((20, 4)) < 0.5).astype(float)
    res = factor_alignment(levels, corr, ordinal=True)
    assert res.all.reason.startswith("confidence: fewer than 3 models with variance")
    assert res.all.n_models_confidence == 0
