"""The bivariate normal distribution function, vectorised.

``scipy.stats.multivariate_normal.cdf`` is exact in 2-D since SciPy 1.17 but costs hundreds of
microseconds per point (a Python-level loop); the tetrachoric estimator evaluates millions of
points, so this module computes Phi2 from Owen's T function (``scipy.special.owens_t``, a ufunc),
about one microsecond per point and exact to a few ulps.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

__all__ = ["bvn_cdf", "bvn_pdf"]

_TWO_PI = 2.0 * np.pi


def bvn_cdf(h: ArrayLike, k: ArrayLike, rho: ArrayLike) -> NDArray[np.float64]:
    """P(X <= h, Y <= k) for a standard bivariate normal with correlation ``rho``.

    Uses Owen's T identity

        Phi2(h, k; rho) = Phi(h)/2 + Phi(k)/2 - T(h, a_h) - T(k, a_k) - beta,

    with ``a_h = (k - rho h) / (h s)``, ``a_k = (h - rho k) / (k s)``, ``s = sqrt(1 - rho^2)`` and
    ``beta = 1/2`` when ``h k < 0`` or (``h k = 0`` and ``h + k < 0``). The edge cases are handled
    explicitly: ``h = 0`` or ``k = 0`` (``T(0, a) = atan(a) / 2 pi``), ``h = k = 0``
    (``1/4 + asin(rho) / 2 pi``), ``rho = 1`` (``Phi(min(h, k))``), ``rho = -1``
    (``max(0, Phi(h) - Phi(-k))``) and infinite limits.

    Args:
        h: Upper limit of the first variable (broadcast with ``k`` and ``rho``).
        k: Upper limit of the second variable.
        rho: Correlation in [-1, 1].

    Returns:
        The probabilities, as a float array of the broadcast shape (a 0-d array for scalars);
        NaN wherever ``h``, ``k`` or ``rho`` is NaN (even beside an infinite limit).

    Raises:
        ValueError: If any ``rho`` lies outside [-1, 1].
    """
    h, k, rho = np.broadcast_arrays(
        np.asarray(h, dtype=float), np.asarray(k, dtype=float), np.asarray(rho, dtype=float)
    )
    finite_rho = rho[~np.isnan(rho)]
    if finite_rho.size and (finite_rho.min() < -1.0 or finite_rho.max() > 1.0):
        raise ValueError("bvn_cdf: rho must lie in [-1, 1]")

    # Subnormal limits carry too few mantissa bits for the Owen's T arguments (k s, rho k lose
    # precision, ~1e-11 error); Phi2 is continuous, so treating them as 0 is exact to 1e-308.
    tiny = np.finfo(float).tiny
    h = np.where(np.abs(h) < tiny, 0.0, h)
    k = np.where(np.abs(k) < tiny, 0.0, k)

    out = np.full(h.shape, np.nan)
    nan = np.isnan(h) | np.isnan(k) | np.isnan(rho)

    # Infinite limits first: they make the Owen's T arguments meaningless.
    lo = ~nan & ((h == -np.inf) | (k == -np.inf))
    out[lo] = 0.0
    h_inf = ~nan & ~lo & (h == np.inf)
    out[h_inf] = special.ndtr(k[h_inf])
    k_inf = ~nan & ~lo & ~h_inf & (k == np.inf)
    out[k_inf] = special.ndtr(h[k_inf])
    todo = ~(nan | lo | h_inf | k_inf)

    pos = todo & (rho == 1.0)
    out[pos] = special.ndtr(np.minimum(h[pos], k[pos]))
    neg = todo & (rho == -1.0)
    out[neg] = np.maximum(0.0, special.ndtr(h[neg]) - special.ndtr(-k[neg]))
    todo &= np.abs(rho) < 1.0

    both0 = todo & (h == 0.0) & (k == 0.0)
    out[both0] = 0.25 + np.arcsin(rho[both0]) / _TWO_PI
    todo &= ~both0

    if todo.any():
        out[todo] = _owen(h[todo], k[todo], rho[todo])
    return out


def _owen(h: NDArray, k: NDArray, rho: NDArray) -> NDArray:
    """Owen's T formula for finite h, k (not both 0) and |rho| < 1."""
    s = np.sqrt((1.0 - rho) * (1.0 + rho))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a_h = (k - rho * h) / (h * s)
        a_k = (h - rho * k) / (k * s)
        # T(0, a) = atan(a) / (2 pi); with a = +-inf (h = 0, k != 0) it is sign(k - rho h) / 4.
        t_h = np.where(
            h == 0.0, np.sign(k - rho * h) / 4.0, special.owens_t(h, np.where(h == 0.0, 0.0, a_h))
        )
        t_k = np.where(
            k == 0.0, np.sign(h - rho * k) / 4.0, special.owens_t(k, np.where(k == 0.0, 0.0, a_k))
        )
    hk = np.sign(h) * np.sign(k)  # signs, not the product, which underflows for tiny h, k
    beta = np.where((hk < 0.0) | ((hk == 0.0) & (h < -k)), 0.5, 0.0)  # h < -k: no overflow
    p = 0.5 * special.ndtr(h) + 0.5 * special.ndtr(k) - t_h - t_k - beta
    return np.clip(p, 0.0, 1.0)


def bvn_pdf(h: ArrayLike, k: ArrayLike, rho: ArrayLike) -> NDArray[np.float64]:
    """Density of the standard bivariate normal with correlation ``rho`` at (h, k).

    This is also dPhi2/drho (Plackett's identity), used by the tetrachoric score equation.

    Args:
        h: First coordinate.
        k: Second coordinate.
        rho: Correlation in (-1, 1).

    Returns:
        The density, broadcast over the inputs.
    """
    h, k, rho = (np.asarray(v, dtype=float) for v in (h, k, rho))
    one_m = (1.0 - rho) * (1.0 + rho)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = (h * h - 2.0 * rho * h * k + k * k) / one_m
        # The form is positive definite for |rho| < 1: where it overflowed (inf - inf gives
        # NaN) or a coordinate is infinite, it is +inf and the density 0.
        far = np.isnan(q) & ~np.isnan(h) & ~np.isnan(k) & (np.abs(rho) < 1.0)
        q = np.where(far, np.inf, q)
        return np.exp(-0.5 * q) / (_TWO_PI * np.sqrt(one_m))
