"""Certified tails: settling a per-pair test whose remaining draws provably cannot count.

A sequential per-pair test (:mod:`~metacog_metrics.pairwise.sequential`) of a pair far beyond
its null still draws the whole cap on the far side: with every model answering 12,000 items,
the calibration-preserving null sits 25 to 50 null SDs away from nearly every pair, and those
draws were most of the time of ``metacog analyze`` at 300 models and more. Where a
concentration inequality proves that a single draw reaches the observed tau-b with
probability at most ``b``, the pair's remaining ``k`` draws all miss it except with
probability at most ``k b``; the test is then *settled*: its count on that side stays what
it is, as if the remaining draws had been made and had missed. Its p-value is then the
fixed-n p-value at the cap, ``(G + 1) / (n + 1)``, and it differs from the one drawing every
draw would give only on that event: with ``b = SETTLE_RISK / n`` at most once in
``1 / SETTLE_RISK`` pairs.

The bound here is for binary confidence under the calibration-preserving null. A draw is a
uniformly random matching ``pi`` of B's items to A's; A's item ``i`` has the category
``a_i = 2 conf + perf`` and B's item ``j`` the category ``b_j``; the pair of categories fixes
the item's cell of the 3x3 table ``m`` of (dconf, dperf), and

    tau-b = S / sqrt(D1 D2),   S = m'Km / 2,   D1 = (n^2 - sum_x r_x^2) / 2,

with ``K[c, c'] = sign(x' - x) sign(y' - y)``, ``r`` the dconf margin (``D2`` likewise from
the dperf margin ``c``). Every count below is a linear statistic ``X = sum_i A[i, pi(i)]`` of
the matching with entries in [0, 1], for which (Chatterjee 2007, Stein's method for
concentration inequalities, Proposition 1.1)

    P(|X - EX| >= t) <= 2 exp(-t^2 / (4 EX + 2t)),

so that ``|X - EX| < l + sqrt(l^2 + 4 EX l)`` except with probability ``2 exp(-l)``:

* each of the 9 cells ``m_c`` and of the 6 margins (0/1 entries; or their complements,
  whichever mean is smaller), giving a box ``|m - Em| <= h``;
* the linear part of ``S`` around the mean table ``mu = Em``: ``S(m) = S(mu) + g'd + d'Kd / 2``
  exactly, with ``d = m - mu`` and ``g = K mu``; ``g'm = sum_i g[cell(a_i, b_pi(i))]``, whose
  entries are reduced by row and column constants (which change the sum by a constant) and
  scaled to [0, 1].

On the event that all 16 hold (probability at least ``1 - 32 exp(-l)``), ``S`` is at most
``S(mu) + tau_L + Q`` with ``Q = sum |K| h h' / 2`` the quadratic part's largest value on the
box, and ``D1``, ``D2`` lie between the values the margins' boxes allow; a draw at least as
extreme as the observed value is then impossible when ``S(mu) + tau_L + Q < t sqrt(D1 D2)``
(with the least denominator for ``t > 0``, the largest otherwise; mirrored for the lower side).
Every draw on that event is defined (both ``D`` positive), so the draws not made count as valid.

The bound is loose (several times the normal tail), so only pairs far beyond their null settle;
``tests/test_pairwise_tail_bounds.py`` checks it against the exact law of small pairs
(enumerated matchings) and against the Monte Carlo tails of large ones, and the inequality
itself against enumerated permutations.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["SETTLE_RISK", "bernstein", "calibration_preserving_binary", "deviation"]

#: Per pair, the most probability that a settled test's p-value differs from the one its
#: remaining draws would give (the per-draw bound is this over the cap).
SETTLE_RISK = 1e-9
#: Events of the bound: 9 cells, 3 + 3 margins, the linear part of S.
_EVENTS = 16


def _layout() -> tuple[NDArray, NDArray, NDArray, NDArray, NDArray]:
    """The cell of each (A category, B category), ``K``, and the cells' dconf and dperf
    indices."""
    cell = np.empty((4, 4), dtype=np.intp)
    for k in range(4):
        for j in range(4):
            cell[k, j] = 3 * (k // 2 - j // 2 + 1) + (k % 2 - j % 2 + 1)
    x, y = np.repeat(np.arange(3), 3), np.tile(np.arange(3), 3)
    kmat = np.sign(x[None, :] - x[:, None]) * np.sign(y[None, :] - y[:, None])
    onehot = np.zeros((16, 9))
    onehot[np.arange(16), cell.ravel()] = 1.0
    return cell, kmat.astype(float), onehot, x, y


_CELL, _K, _ONEHOT, _X, _Y = _layout()


def deviation(mean: ArrayLike, log_term: ArrayLike) -> NDArray[np.float64]:
    """``t`` with ``2 exp(-t^2 / (4 mean + 2t)) = 2 exp(-log_term)``: the half-width outside
    which Chatterjee's inequality leaves probability at most ``2 exp(-log_term)``.

    >>> float(deviation(0.0, 2.0)), round(float(deviation(100.0, 2.0)), 3)
    (4.0, 30.355)
    """
    ell = np.asarray(log_term, dtype=float)
    return ell + np.sqrt(ell * ell + 4.0 * np.asarray(mean, dtype=float) * ell)


def bernstein(size: ArrayLike, variance: ArrayLike, reach: ArrayLike, log_term: float
              ) -> NDArray[np.float64]:  # fmt: skip
    """``t`` with ``exp(-t^2 / (2 (size variance + reach t / 3))) = exp(-log_term)``: Bernstein's
    half-width for a sum of ``size`` draws without replacement from a population of this
    variance whose values lie within ``reach`` of its mean (by Hoeffding 1963, Theorem 4, such
    a sum is at most as spread, in every convex order, as the sum of draws with replacement).

    >>> round(float(bernstein(100, 0.25, 0.5, 3.0)), 3)
    12.758
    """
    third = np.asarray(reach, dtype=float) * log_term / 3.0
    spread = np.asarray(size, dtype=float) * np.asarray(variance, dtype=float)
    return third + np.sqrt(third * third + 2.0 * log_term * spread)


def _cell_widths(ca: NDArray, cb: NDArray, n: NDArray, mu: NDArray, ell: float) -> NDArray:
    """Half-widths of the 9 cell counts, each failing with probability at most
    ``2 exp(-ell)``: Chatterjee's on the cell, or the sum of Bernstein's on its cells of the
    4x4 table (each the count of A's category in the sample of A's items that B's category
    takes: hypergeometric), whichever is narrower."""
    chat = _box(mu, n[:, None], ell)
    pa = ca / n[:, None]
    size = np.minimum(cb, n[:, None] - cb)  # a sample and its complement deviate alike
    var = pa[:, :, None] * (1.0 - pa[:, :, None])
    reach = np.maximum(pa, 1.0 - pa)[:, :, None]
    by_table = np.zeros_like(chat)
    for c in range(9):
        ks, ls = np.nonzero(c == _CELL)
        ell_c = ell + np.log(ks.size)  # the cell's share of the failure split among its parts
        part = bernstein(size[:, ls], var[:, ks, 0], reach[:, ks, 0], ell_c)
        by_table[:, c] = np.where(var[:, ks, 0] > 0, part, 0.0).sum(axis=1)
    return np.minimum(chat, by_table)


def _box(mean: NDArray, n: NDArray, ell: float) -> NDArray[np.float64]:
    """Chatterjee's half-widths of 0/1 counts with these means among ``n`` items (0 where the
    count is fixed: mean 0 or n)."""
    low = np.minimum(mean, n - mean)
    return np.where(low > 1e-9 * n, deviation(np.maximum(low, 0.0), ell), 0.0)


def _linear_width(weights: NDArray, ca: NDArray, cb: NDArray, n: NDArray, ell: float
                  ) -> NDArray[np.float64]:  # fmt: skip
    """Half-width of ``sum_i weights[a_i, b_pi(i)]`` around its mean, failing with probability
    at most ``2 exp(-ell)``; the narrowest of

    * Chatterjee's, on the weights less row and column constants (both orders) scaled to
      [0, 1];
    * the sum over B's categories of Bernstein's for the sample of A's items each takes
      (each fails with probability ``2 exp(-ell) / 4``), the weights less a row constant
      (none, the row means, or one column; column constants change nothing).
    """
    joint = ca[:, :, None] * cb[:, None, :] / n[:, None, None]
    best = np.full(weights.shape[0], np.inf)
    for first in (2, 1):
        v = weights - weights.min(axis=first, keepdims=True)
        v = v - v.min(axis=3 - first, keepdims=True)
        top = v.max(axis=(1, 2))
        mean = (joint * v).sum(axis=(1, 2)) / np.where(top > 0, top, 1.0)
        best = np.minimum(best, np.where(top > 0, top * deviation(mean, ell), 0.0))
    pa, pb = ca / n[:, None], cb / n[:, None]
    size = np.minimum(cb, n[:, None] - cb)
    rows = [np.zeros(weights.shape[:2]), (weights * pb[:, None, :]).sum(axis=2)]
    rows += [weights[:, :, j] for j in range(4)]
    present = pa[:, :, None] > 0
    for u in rows:
        z = weights - u[:, :, None]  # column j: the value of an A item of each category
        mean = (pa[:, :, None] * z).sum(axis=1)
        var = (pa[:, :, None] * (z - mean[:, None, :]) ** 2).sum(axis=1)
        reach = np.where(present, np.abs(z - mean[:, None, :]), 0.0).max(axis=1)
        width = bernstein(size, var, reach, ell + np.log(4.0))
        best = np.minimum(best, np.where(cb > 0, width, 0.0).sum(axis=1))
    return best


def calibration_preserving_binary(
    cat_a: ArrayLike, cat_b: ArrayLike, threshold: ArrayLike, side: int, bound: float
) -> NDArray[np.bool_]:
    """Pairs whose single calibration-preserving draw is proven to reach ``threshold`` on
    ``side`` with probability at most ``bound`` (the module's bound).

    Args:
        cat_a: ``(P, 4)`` A's counts of the categories ``2 conf + perf``.
        cat_b: ``(P, 4)`` B's counts (the same total of items per pair).
        threshold: ``(P,)`` tau-b that a draw must reach (``>=`` on side +1, ``<=`` on -1).
        side: +1 or -1.
        bound: The per-draw probability to prove, in (0, 1).

    Returns:
        ``(P,)`` True where proven (False where the bound cannot tell, or the threshold is NaN).

    Example:
        Two well-calibrated models of 12,000 items: matched at random, their tau-b is about
        0.583 (SD 0.0036). A draw at or below 0.35 is proven rarer than 1e-13, one at or
        below 0.4 is not (the bound is several times wider than the normal tail):

        >>> a, b = np.array([[4000, 1000, 1000, 6000]]), np.array([[5000, 1000, 1500, 4500]])
        >>> [calibration_preserving_binary(a, b, [t], -1, 1e-13).item() for t in (0.35, 0.4)]
        [True, False]
    """
    if side not in (1, -1):
        raise ValueError(f"side must be +1 or -1, got {side!r}")
    if not 0.0 < bound < 1.0:
        raise ValueError(f"bound must be in (0, 1), got {bound!r}")
    ca = np.atleast_2d(np.asarray(cat_a, dtype=float))
    cb = np.atleast_2d(np.asarray(cat_b, dtype=float))
    t = np.atleast_1d(np.asarray(threshold, dtype=float))
    terms = _terms(ca, cb, float(np.log(2.0 * _EVENTS / bound)))
    st = side * t
    with np.errstate(invalid="ignore"):
        den = np.where(st > 0, np.sqrt(np.maximum(terms.d_lo.prod(axis=0), 0.0)),
                       np.sqrt(terms.d_hi.prod(axis=0)))  # fmt: skip
        proven = side * terms.s_mean + terms.linear + terms.quadratic < st * den
    return proven & (terms.d_lo > 0).all(axis=0) & np.isfinite(t)


@dataclasses.dataclass(frozen=True)
class _Terms:
    """The parts of the bound for ``P`` pairs (see the module): the mean table ``mu``, the
    cells' half-widths ``h``, ``S(mu)``, ``g = K mu``, the half-width of ``g'm``, the largest
    ``d'Kd / 2`` on the box, the mean dconf and dperf margins with their half-widths
    (``(2, P, 3)`` each), and the least and largest ``(D1, D2)`` their boxes allow
    (``(2, P)`` each)."""

    mu: NDArray
    h: NDArray
    margins: NDArray
    margin_h: NDArray
    s_mean: NDArray
    grad: NDArray
    linear: NDArray
    quadratic: NDArray
    d_lo: NDArray
    d_hi: NDArray


def _terms(ca: NDArray, cb: NDArray, ell: float) -> _Terms:
    """The parts of the bound, each of its 16 events failing with probability at most
    ``2 exp(-ell)``."""
    n = ca.sum(axis=1)
    nn = n[:, None]
    joint = ca[:, :, None] * cb[:, None, :] / np.where(n > 0, n, 1.0)[:, None, None]
    mu = joint.reshape(-1, 16) @ _ONEHOT
    h = _cell_widths(ca, cb, n, mu, ell)
    grad = mu @ _K
    margins = np.stack(
        [np.stack([mu[:, v == axis_of].sum(axis=1) for v in range(3)], axis=1)
         for axis_of in (_X, _Y)]
    )  # fmt: skip
    margin_h = _box(margins, nn[None], ell)
    top, low = np.minimum(margins + margin_h, nn[None]), np.maximum(margins - margin_h, 0.0)
    return _Terms(
        mu=mu,
        h=h,
        margins=margins,
        margin_h=margin_h,
        s_mean=0.5 * (mu * grad).sum(axis=1),
        grad=grad,
        linear=_linear_width(grad[:, _CELL], ca, cb, n, ell),
        quadratic=0.5 * (h[:, :, None] * h[:, None, :] * np.abs(_K)).sum(axis=(1, 2)),
        d_lo=0.5 * (n * n - (top * top).sum(axis=2)),
        d_hi=0.5 * (n * n - (low * low).sum(axis=2)),
    )
