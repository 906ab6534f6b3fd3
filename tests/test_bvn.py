"""bvn_cdf against mvtnorm (stats_reference.json) and SciPy's exact 2-D CDF."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multivariate_normal, norm

from metacog_metrics.bvn import bvn_cdf, bvn_pdf


def test_matches_mvtnorm_anchors(stats_reference):
    anchors = stats_reference["R"]["bvn_cdf"]
    h = np.array([a["h"] for a in anchors], dtype=float)
    k = np.array([a["k"] for a in anchors], dtype=float)
    rho = np.array([a["rho"] for a in anchors], dtype=float)
    expected = np.array([a["Phi2"] for a in anchors])
    # mvtnorm values are rounded to 13 significant digits.
    np.testing.assert_allclose(bvn_cdf(h, k, rho), expected, rtol=1e-12, atol=1e-15)


def test_zero_limits_closed_form():
    rho = np.linspace(-0.99, 0.99, 41)
    np.testing.assert_allclose(
        bvn_cdf(0.0, 0.0, rho), 0.25 + np.arcsin(rho) / (2 * np.pi), atol=1e-15
    )


def test_edge_cases():
    assert bvn_cdf(0.3, 1.2, 1.0) == pytest.approx(norm.cdf(0.3), abs=1e-15)
    assert bvn_cdf(0.3, 1.2, -1.0) == pytest.approx(norm.cdf(0.3) - norm.cdf(-1.2), abs=1e-15)
    assert bvn_cdf(-0.3, -1.2, -1.0) == 0.0
    assert bvn_cdf(np.inf, 0.4, 0.5) == pytest.approx(norm.cdf(0.4), abs=1e-15)
    assert bvn_cdf(0.4, np.inf, 0.5) == pytest.approx(norm.cdf(0.4), abs=1e-15)
    assert bvn_cdf(-np.inf, 0.4, 0.5) == 0.0
    assert np.isnan(bvn_cdf(np.nan, 0.4, 0.5))
    with pytest.raises(ValueError, match="rho"):
        bvn_cdf(0.0, 0.0, 1.5)


def test_one_limit_zero_against_scipy():
    cases = [(0.0, 0.7, 0.3), (0.0, -0.7, 0.3), (0.7, 0.0, -0.5), (-0.7, 0.0, 0.9), (0, -2, -0.95)]
    for h, k, r in cases:
        ref = multivariate_normal.cdf([h, k], cov=[[1, r], [r, 1]])
        assert bvn_cdf(h, k, r) == pytest.approx(ref, abs=1e-13)


def test_subnormal_limits_are_exact():
    # Found by hypothesis: a subnormal limit lost precision in the Owen's T arguments (2e-12).
    rho = 0.873046875
    exact = 0.25 + np.arcsin(rho) / (2 * np.pi)
    for tiny in (2.2250738585e-313, -5e-324, 1e-310):
        assert bvn_cdf(0.0, tiny, rho) == pytest.approx(exact, abs=1e-15)
        assert bvn_cdf(tiny, 0.0, rho) == pytest.approx(exact, abs=1e-15)
    ref = multivariate_normal.cdf([0.7, 0.0], cov=[[1, -0.4], [-0.4, 1]])
    assert bvn_cdf(0.7, 1e-315, -0.4) == pytest.approx(ref, abs=1e-14)


@settings(max_examples=60, deadline=None)
@given(st.floats(-6, 6), st.floats(-6, 6), st.floats(-0.999, 0.999, allow_nan=False))
def test_random_points_against_scipy(h, k, r):
    ref = multivariate_normal.cdf([h, k], cov=[[1, r], [r, 1]])
    assert bvn_cdf(h, k, r) == pytest.approx(ref, abs=1e-12)
    # symmetric in its two limits
    assert bvn_cdf(h, k, r) == pytest.approx(float(bvn_cdf(k, h, r)), abs=1e-15)


def test_broadcasts_and_pdf_is_rho_derivative():
    h = np.array([[-1.0], [0.5]])
    k = np.array([0.2, -0.3, 1.1])
    out = bvn_cdf(h, k, 0.4)
    assert out.shape == (2, 3)
    eps = 1e-6
    num = (bvn_cdf(h, k, 0.4 + eps) - bvn_cdf(h, k, 0.4 - eps)) / (2 * eps)
    np.testing.assert_allclose(num, bvn_pdf(h, k, 0.4), rtol=1e-6)


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


def test_rho_outside_the_unit_interval_is_an_error_on_both_sides():
    for rho in (1.5, -1.5, [0.2, -1.0000001]):
        with pytest.raises(ValueError, match=r"^bvn_cdf: rho must lie in \[-1, 1\]$"):
            bvn_cdf(0.1, 0.2, rho)


def test_nan_anywhere_gives_nan_even_beside_an_infinite_limit():
    out = bvn_cdf([np.nan, -np.inf, 0.3, np.nan, 0.3], [-np.inf, np.nan, 0.4, 0.4, np.nan],
                  [0.5, 0.5, np.nan, 1.0, -1.0])  # fmt: skip
    assert np.isnan(out).all()


def test_cancellation_below_zero_is_clipped():
    # Owen's formula cancels to -1.7e-16 here; the probability (Y <= -2.35 forces X >= 2.35
    # when rho is -1 + 1e-9) is 0 to double precision.
    p = bvn_cdf(1.0261892805549682, -2.347803760471475, -0.999999999)
    assert 0.0 <= p < 1e-300


def test_edge_inputs_give_limits_and_no_floating_point_warnings():
    """Zeros, infinities, huge and tiny coordinates, rho at and near +-1: the CDF and the
    density return their limits without a RuntimeWarning (NumPy's divide/overflow/invalid)."""
    import warnings

    h = np.array([0.0, 0.0, 1.0, -1.0, np.inf, -np.inf, 5e-324, 40.0, -40.0, 0.3, 1e308])
    k = np.array([0.0, 1.0, 0.0, np.inf, 0.5, 0.2, 1e-300, -40.0, 40.0, 0.3, 1e308])
    for rho in (0.0, 0.5, -0.5, 1.0, -1.0, 0.999999999, -0.9999999999):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cdf = bvn_cdf(h, k, rho)
            pdf = bvn_pdf(h, k, rho)
        assert np.all((cdf >= 0) & (cdf <= 1))
        assert cdf[-1] == 1.0 and cdf[5] == 0.0  # both at +inf; one at -inf
        assert cdf[4] == pytest.approx(norm.cdf(0.5), abs=1e-15)  # h = +inf: Phi(k)
        if abs(rho) < 1:
            assert pdf[-1] == 0.0 and pdf[4] == 0.0 and pdf[7] == 0.0  # far out: density 0
