"""Independent reference computations for tests (SciPy and brute force, not the package).

Each helper re-derives a statistic from its definition with general-purpose SciPy routines, so
a test can compare the package's vectorised estimator with a value it did not compute.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats


def _p00(tx: float, ty: float, rho: float) -> float:
    cov = [[1.0, rho], [rho, 1.0]]
    return float(stats.multivariate_normal(mean=[0.0, 0.0], cov=cov).cdf([tx, ty]))


def twostep_ml_rho(counts, tau: tuple[float, float]) -> float:
    """Maximise ``sum n_ij log p_ij(rho)`` over rho with the thresholds held fixed.

    Args:
        counts: ``(n00, n01, n10, n11)`` (after any zero-cell correction).
        tau: ``(tau_x, tau_y)``: ``Phi^-1(P(x = 0))``, ``Phi^-1(P(y = 0))``.
    """
    n = np.asarray(counts, dtype=float)
    px0, py0 = stats.norm.cdf(tau[0]), stats.norm.cdf(tau[1])

    def nll(rho: float) -> float:
        p00 = _p00(tau[0], tau[1], rho)
        p = np.array([p00, px0 - p00, py0 - p00, 1.0 - px0 - py0 + p00])
        p = np.clip(p, 1e-300, None)
        return -float(np.sum(np.where(n > 0, n * np.log(p), 0.0)))

    res = optimize.minimize_scalar(
        nll, bounds=(-0.999999, 0.999999), method="bounded", options={"xatol": 1e-10}
    )
    return float(res.x)


def psych_raw_rho(x, y, correct: float = 0.5) -> float:
    """psych's raw-data tetrachoric: thresholds from the uncorrected means, then zero cells of
    the 2x2 table replaced by ``correct`` when it holds more than one observation."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[ok], y[ok]
    counts = [
        np.sum((x == 0) & (y == 0)),
        np.sum((x == 0) & (y == 1)),
        np.sum((x == 1) & (y == 0)),
        np.sum((x == 1) & (y == 1)),
    ]
    counts = [correct if c == 0 else c for c in counts] if sum(counts) > 1 else counts
    tau = (stats.norm.ppf(1 - x.mean()), stats.norm.ppf(1 - y.mean()))
    return twostep_ml_rho(counts, tau)


def saturated_table_rho(cells) -> float:
    """The table path: thresholds from the table's own margins, rho solving P00 = p00."""
    c = np.asarray(cells, dtype=float)
    c = c / c.sum()
    tx, ty = stats.norm.ppf(c[0] + c[1]), stats.norm.ppf(c[0] + c[2])
    return float(optimize.brentq(lambda r: _p00(tx, ty, r) - c[0], -0.999999, 0.999999))


def midrank_auroc(score, label) -> float:
    """AUROC by enumeration of every (positive, negative) pair, ties counting 1/2."""
    s, y = np.asarray(score, dtype=float), np.asarray(label, dtype=float)
    pos, neg = s[y == 1], s[y == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (pos.size * neg.size))


def bvn_cdf_owens(h: float, k: float, rho: float) -> float:
    """P(X <= h, Y <= k) for a standard bivariate normal, from Owen's T (h, k nonzero).

    ``Phi2 = (Phi(h) + Phi(k)) / 2 - T(h, a_h) - T(k, a_k) - beta`` (Owen 1956), with SciPy's
    ``owens_t``; accurate to about 1e-16, where ``multivariate_normal.cdf`` gives ~1e-8.
    """
    from scipy import special

    s = np.sqrt(1.0 - rho * rho)
    a_h = (k - rho * h) / (h * s)
    a_k = (h - rho * k) / (k * s)
    beta = 0.0 if h * k > 0 else 0.5
    return float(
        0.5 * special.ndtr(h)
        + 0.5 * special.ndtr(k)
        - special.owens_t(h, a_h)
        - special.owens_t(k, a_k)
        - beta
    )


def twostep_ml_exact(counts, tau: tuple[float, float]) -> tuple[float, float]:
    """Two-step ML rho to machine precision and its standard error (thresholds fixed).

    The root of the score ``sum_j s_j n_j / p_j(rho)`` (signs + - - +) by Brent's method at
    ``xtol = 1e-15`` with Owen's-T cell probabilities, and ``se = 1 / (phi2 sqrt(sum n / p^2))``
    (the Fisher information of rho with the thresholds held fixed).
    """
    from scipy import special

    n = np.asarray(counts, dtype=float)
    tx, ty = float(tau[0]), float(tau[1])
    px0, py0 = float(special.ndtr(tx)), float(special.ndtr(ty))

    def probs(rho: float) -> np.ndarray:
        p00 = bvn_cdf_owens(tx, ty, rho)
        return np.array([p00, px0 - p00, py0 - p00, 1.0 - px0 - py0 + p00])

    signs = np.array([1.0, -1.0, -1.0, 1.0])

    def score(r: float) -> float:
        p = probs(r)
        return float(np.sum(signs * n / p)) if (p > 0).all() else float("nan")

    # The score falls from + to -; near +-1 a tiny cell probability can cancel to 0 or below,
    # so the bracket's ends move inwards until the score is defined there with its sign.
    lo, hi = -0.999, 0.999
    while not score(lo) > 0:
        lo *= 0.9
    while not score(hi) < 0:
        hi *= 0.9
    rho = optimize.brentq(score, lo, hi, xtol=1e-15, rtol=8.9e-16)
    pdf = stats.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]]).pdf([tx, ty])
    se = 1.0 / (pdf * np.sqrt(np.sum(n / probs(rho) ** 2)))
    return float(rho), float(se)


def _bvn_any(h: float, k: float, rho: float) -> float:
    """``bvn_cdf_owens`` extended to zero and infinite limits (textbook limits)."""
    from scipy import special

    if h == -np.inf or k == -np.inf:
        return 0.0
    if h == np.inf:
        return float(special.ndtr(k))
    if k == np.inf:
        return float(special.ndtr(h))
    if h == 0.0 and k == 0.0:
        return 0.25 + float(np.arcsin(rho)) / (2 * np.pi)
    if h == 0.0 or k == 0.0:  # T(0, +-inf) = +-1/4; beta = 1/2 when h + k < 0
        nz, z = (k, h) if h == 0.0 else (h, k)
        s = np.sqrt(1.0 - rho * rho)
        t_nz = special.owens_t(nz, (z - rho * nz) / (nz * s))
        return float(0.5 * special.ndtr(nz) + 0.25 - np.sign(nz) / 4.0 - t_nz
                     - (0.5 if nz < 0 else 0.0))  # fmt: skip
    return bvn_cdf_owens(h, k, rho)


def polychoric_ml_exact(table, tx, ty) -> float:
    """Two-step polychoric rho to ~1e-14: the root of the log-likelihood's derivative.

    ``d/drho sum n_ij log p_ij = sum n_ij / p_ij * dp_ij/drho`` with ``dPhi2/drho = phi2``
    (Plackett), cell probabilities from Owen's T with true infinite outer thresholds.

    Args:
        table: Counts (already zero-cell corrected if wanted), rows x columns.
        tx, ty: Inner thresholds of rows and columns (``len - 1`` each).
    """
    n = np.asarray(table, dtype=float)
    cx = np.r_[-np.inf, np.asarray(tx, dtype=float), np.inf]
    cy = np.r_[-np.inf, np.asarray(ty, dtype=float), np.inf]

    def grid(f, rho):
        return np.array([[f(a, b, rho) for b in cy] for a in cx])

    def pdf(a, b, rho):
        if not (np.isfinite(a) and np.isfinite(b)):
            return 0.0
        return float(stats.multivariate_normal([0, 0], [[1, rho], [rho, 1]]).pdf([a, b]))

    def cells(g):
        return g[1:, 1:] - g[:-1, 1:] - g[1:, :-1] + g[:-1, :-1]

    def score(rho):
        p = cells(grid(_bvn_any, rho))
        if (p <= 0).any():
            return float("nan")
        return float(np.sum(n / p * cells(grid(pdf, rho))))

    lo, hi = -0.999, 0.999
    while not score(lo) > 0:
        lo *= 0.9
    while not score(hi) < 0:
        hi *= 0.9
    return float(optimize.brentq(score, lo, hi, xtol=1e-14, rtol=8.9e-16))
