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


@pytest.mark.parametrize("case", REF["psych_polychoric_mixed"], ids=lambda c: str(len(c["levels"])))
def test_matrix_matches_psych_with_unequal_levels_and_zero_cells(case):
    """Models with different numbers of levels: psych sets global = FALSE (each pair's
    thresholds from its own table) and replaces zero cells by 0.5."""
    x = np.array([[np.nan if v is None else v for v in r] for r in case["levels"]], float)
    want = np.array(case["rho"], float)
    np.testing.assert_allclose(polychoric_matrix(x).rho, want, atol=1e-4)
