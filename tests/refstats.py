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
