"""Factor structure of a tetrachoric matrix: eigen-decomposition, one-factor FA, item scores.

Three views of the same question ("is the cross-model matrix one shared axis?"):

* :func:`eigen_decomposition`: eigenvalues of the (smoothed) correlation matrix, the share of
  the first, the first principal-component loadings ``v1 sqrt(lambda1)`` (sign fixed so they sum
  positive) and, given the models' thresholds, the quadratic fit of loadings on thresholds
  (``lm(loading ~ tau + tau^2)``: an inverted parabola means mid-threshold models load most).
* :func:`factor_analysis`: the common-factor model ``R = L L' + Psi`` as psych ``fa`` fits it,
  unrotated: ``minres`` (unweighted least squares on the off-diagonal residuals, minimised over
  the loadings) or ``ml`` (maximum likelihood, factanal's parameterisation over the
  uniquenesses). Uniquenesses are kept >= 0.005 as in psych.
* :func:`factor_scores`: regression (Thurstone) scores ``Z R^-1 L`` with ``Z`` the columns
  standardised by their mean and (n - 1) standard deviation, psych's ``factor.scores`` default.

:func:`factor_alignment` then asks whether the items' confidence factor agrees with their
correctness factor: Pearson r of the two factor-1 item scores on all items and on the contentious
subset (items whose yes-rate and pass-rate across models both lie within bounds), where the
thresholds, tetrachorics and factor model are recomputed on the subset.

factor_analyzer is not used: 0.5.1 fails with scikit-learn >= 1.8.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from metacog_metrics._result import Result
from metacog_metrics.polychoric import polychoric_matrix
from metacog_metrics.tetrachoric import cor_smooth, tetrachoric_matrix

__all__ = [
    "AlignmentSubset",
    "EigenResult",
    "FactorAlignmentResult",
    "FactorAnalysisResult",
    "QuadraticFit",
    "contentious_items",
    "eigen_decomposition",
    "factor_alignment",
    "factor_analysis",
    "factor_scores",
    "quadratic_fit",
]

_PSI_LOWER = 0.005  # psych's lower bound on uniquenesses


# --------------------------------------------------------------------------------------------
# Eigen-decomposition and the loadings-vs-thresholds parabola
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class QuadraticFit(Result):
    """Least-squares fit ``y = c0 + c1 x + c2 x^2``.

    Attributes:
        coef: ``(c0, c1, c2)``.
        r2: Coefficient of determination.
        n: Number of points.
        f_statistic: Overall F statistic (2 and n - 3 degrees of freedom).
        p_value: Its p-value (NaN when n <= 3).
        vertex: ``-c1 / (2 c2)``, where the parabola turns (NaN when ``c2 = 0``).
    """

    coef: tuple[float, float, float]
    r2: float
    n: int
    f_statistic: float
    p_value: float
    vertex: float


def quadratic_fit(x: ArrayLike, y: ArrayLike) -> QuadraticFit:
    """Fit ``y ~ x + x^2`` by least squares (R's ``lm(y ~ x + I(x^2))``).

    Args:
        x: Predictor (thresholds).
        y: Response (loadings); pairs with a NaN are ignored.

    Returns:
        A :class:`QuadraticFit`; all NaN when fewer than 3 points remain.

    Example:
        >>> fit = quadratic_fit([0, 1, 2, 3, 4], [0, 1, 4, 9, 16])
        >>> round(fit.coef[2], 6), round(fit.r2, 6)
        (1.0, 1.0)
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y differ in length: {x.size} vs {y.size}")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = int(x.size)
    nan = float("nan")
    if n < 3:
        return QuadraticFit((nan, nan, nan), nan, n, nan, nan, nan)
    design = np.column_stack([np.ones(n), x, x * x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    ss_res = float(resid @ resid)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else nan
    if n > 3 and np.isfinite(r2) and r2 < 1.0:
        f = (r2 / 2.0) / ((1.0 - r2) / (n - 3))
        p = float(special.fdtrc(2, n - 3, f))  # F(2, n - 3) upper tail
    else:
        f, p = nan, nan
    # a constant response has no shape: its fitted c2 is rounding noise, not a vertex
    vertex = float(-coef[1] / (2 * coef[2])) if coef[2] != 0 and ss_tot > 0 else nan
    return QuadraticFit(tuple(map(float, coef)), float(r2), n, float(f), p, vertex)


@dataclasses.dataclass(frozen=True, eq=False)
class EigenResult(Result):
    """Eigen-decomposition of a correlation matrix.

    Attributes:
        names: Variable names.
        eigenvalues: In decreasing order.
        first_share: ``eigenvalues[0] / p`` (the trace of a correlation matrix is p).
        loadings: First principal-component loadings ``v1 sqrt(lambda1)``, summing positive.
        thresholds: The thresholds given (NaN when none).
        quadratic: Fit of ``loadings ~ thresholds + thresholds^2`` (None without thresholds).
    """

    names: tuple[str, ...]
    eigenvalues: NDArray[np.float64]
    first_share: float
    loadings: NDArray[np.float64]
    thresholds: NDArray[np.float64]
    quadratic: QuadraticFit | None

    @property
    def quadratic_r2(self) -> float:
        """R^2 of the quadratic fit (NaN without thresholds)."""
        return self.quadratic.r2 if self.quadratic is not None else float("nan")


def _check_corr(r: ArrayLike) -> NDArray[np.float64]:
    r = np.array(r, dtype=float)
    if r.ndim != 2 or r.shape[0] != r.shape[1]:
        raise ValueError(f"need a square correlation matrix, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("the correlation matrix has missing entries")
    if not np.allclose(r, r.T, atol=1e-10):
        raise ValueError("the correlation matrix is not symmetric")
    return 0.5 * (r + r.T)


def eigen_decomposition(
    r: ArrayLike,
    *,
    thresholds: ArrayLike | None = None,
    names: Sequence[str] | None = None,
) -> EigenResult:
    """Eigenvalues, first-factor share, PC1 loadings and the loadings-vs-thresholds parabola.

    Args:
        r: Correlation matrix (``p x p``, no missing entries).
        thresholds: Per-variable thresholds (psych ``tau``), for the quadratic fit.
        names: Variable names (default ``"0", "1", ...``).

    Returns:
        An :class:`EigenResult`.

    Raises:
        ValueError: If ``r`` is not a complete symmetric matrix or the lengths disagree.

    Example:
        >>> res = eigen_decomposition([[1, 0.6, 0.5], [0.6, 1, 0.4], [0.5, 0.4, 1]])
        >>> res.eigenvalues.round(3).tolist(), round(res.first_share, 3)
        ([2.004, 0.613, 0.382], 0.668)
    """
    r = _check_corr(r)
    p = r.shape[0]
    names = tuple(str(n) for n in (names if names is not None else range(p)))
    if len(names) != p:
        raise ValueError(f"{len(names)} names for a {p} x {p} matrix")
    if p == 0:
        empty = np.zeros(0)
        return EigenResult(names, empty, float("nan"), empty, empty, None)
    values, vectors = np.linalg.eigh(r)
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    v1 = vectors[:, 0]
    if v1.sum() < 0:
        v1 = -v1
    loadings = v1 * np.sqrt(max(values[0], 0.0))
    tau = np.full(p, np.nan)
    quad = None
    if thresholds is not None:
        tau = np.asarray(thresholds, dtype=float).ravel()
        if tau.size != p:
            raise ValueError(f"{tau.size} thresholds for a {p} x {p} matrix")
        quad = quadratic_fit(tau, loadings)
    return EigenResult(names, values, float(values[0] / p), loadings, tau, quad)


# --------------------------------------------------------------------------------------------
# Common-factor analysis
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class FactorAnalysisResult(Result):
    """Unrotated common-factor solution ``R ~ L L' + diag(uniquenesses)``.

    Attributes:
        names: Variable names.
        method: ``"minres"`` or ``"ml"``.
        loadings: ``(p,)`` for one factor, else ``(p, n_factors)``; each factor's loadings sum
            positive.
        uniquenesses: ``1 - communalities`` (ML: the fitted Psi).
        communalities: Row sums of squared loadings.
        weights: Regression (Thurstone) score weights ``R^-1 L``.
        variance_share: Sum of squared loadings per factor divided by p.
        objective: Final value of the fitting function.
        converged: Whether the optimiser reported success.
        heywood: Whether some communality reached the bound (uniqueness <= 0.005 + 1e-6).
    """

    names: tuple[str, ...]
    method: str
    loadings: NDArray[np.float64]
    uniquenesses: NDArray[np.float64]
    communalities: NDArray[np.float64]
    weights: NDArray[np.float64]
    variance_share: NDArray[np.float64]
    objective: float
    converged: bool
    heywood: bool


def _start_psi(r: NDArray, n_factors: int) -> NDArray:
    """psych's start: (1 - 0.5 nf / p) / diag(R^-1), clipped to the bounds."""
    p = r.shape[0]
    try:
        smc_inv = np.diag(np.linalg.inv(r))
    except np.linalg.LinAlgError:
        smc_inv = np.diag(np.linalg.pinv(r))
    start = (1.0 - 0.5 * n_factors / p) / smc_inv
    return np.clip(start, _PSI_LOWER, 1.0)


def _fit_minres(r: NDArray, n_factors: int) -> tuple[NDArray, float, bool]:
    """Minimise sum_{i != j} (r_ij - (L L')_ij)^2 over L (ULS), from psych's start values."""
    p = r.shape[0]
    off = ~np.eye(p, dtype=bool)
    psi0 = _start_psi(r, n_factors)
    values, vectors = np.linalg.eigh(r - np.diag(psi0))
    top = np.argsort(values)[::-1][:n_factors]
    l0 = vectors[:, top] * np.sqrt(np.maximum(values[top], 1e-6))

    def fun(flat: NDArray) -> tuple[float, NDArray]:
        lam = flat.reshape(p, n_factors)
        resid = np.where(off, r - lam @ lam.T, 0.0)
        return float((resid**2).sum()), (-4.0 * resid @ lam).ravel()

    # With one factor, |l_i| <= sqrt(1 - 0.005) is psych's bound on the uniqueness.
    bound = np.sqrt(1.0 - _PSI_LOWER) if n_factors == 1 else None
    res = optimize.minimize(
        fun,
        l0.ravel(),
        jac=True,
        method="L-BFGS-B",
        bounds=[(-bound, bound)] * (p * n_factors) if bound else None,
        options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 10_000},
    )
    return res.x.reshape(p, n_factors), float(res.fun), bool(res.success)


def _fit_ml(r: NDArray, n_factors: int) -> tuple[NDArray, float, bool]:
    """factanal/psych ML: minimise over Psi, loadings from the scaled matrix's eigenvectors."""

    def scaled(psi: NDArray) -> tuple[NDArray, NDArray]:
        sc = 1.0 / np.sqrt(psi)
        values, vectors = np.linalg.eigh(r * np.outer(sc, sc))
        order = np.argsort(values)[::-1]
        return values[order], vectors[:, order]

    def loadings(psi: NDArray) -> NDArray:
        values, vectors = scaled(psi)
        lam = vectors[:, :n_factors] * np.sqrt(np.maximum(values[:n_factors] - 1.0, 0.0))
        return np.sqrt(psi)[:, None] * lam

    def fun(psi: NDArray) -> float:
        values, _ = scaled(psi)
        e = values[n_factors:]
        return float(-(np.sum(np.log(e) - e) - n_factors + r.shape[0]))

    def grad(psi: NDArray) -> NDArray:
        lam = loadings(psi)
        g = lam @ lam.T + np.diag(psi) - r
        return np.diag(g) / psi**2

    p = r.shape[0]
    res = optimize.minimize(
        fun,
        _start_psi(r, n_factors),
        jac=grad,
        method="L-BFGS-B",
        bounds=[(_PSI_LOWER, 1.0)] * p,
        options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 10_000},
    )
    return loadings(res.x), float(res.fun), bool(res.success)


def factor_analysis(
    r: ArrayLike,
    *,
    n_factors: int = 1,
    method: Literal["minres", "ml"] = "minres",
    names: Sequence[str] | None = None,
) -> FactorAnalysisResult:
    """Fit the common-factor model to a correlation matrix, as psych ``fa`` does (unrotated).

    ``minres`` minimises the squared off-diagonal residuals ``sum_{i != j} (r_ij - (LL')_ij)^2``
    over the loadings (psych's default "minimum residual"; it reaches the same optimum as psych's
    search over uniquenesses); with one factor the loadings are bounded by ``sqrt(0.995)``, i.e.
    uniquenesses >= 0.005 as in psych. ``ml`` is factanal's maximum likelihood over the
    uniquenesses (bounded to [0.005, 1]) with its analytic gradient. Both start from psych's
    start values ``(1 - 0.5 nf / p) / diag(R^-1)``.

    Args:
        r: Correlation matrix (``p x p``, complete; smooth it first if not positive definite).
        n_factors: Number of factors (unrotated; each factor's loadings sum positive).
        method: ``"minres"`` or ``"ml"``.
        names: Variable names.

    Returns:
        A :class:`FactorAnalysisResult`.

    Raises:
        ValueError: On a bad matrix, ``n_factors`` outside ``[1, p - 1]`` or an unknown method.

    Example:
        A one-factor matrix (r_ij = l_i l_j) gives its loadings back:

        >>> res = factor_analysis([[1, 0.6, 0.5], [0.6, 1, 0.4], [0.5, 0.4, 1]])
        >>> res.loadings.round(3).tolist()
        [0.866, 0.693, 0.577]
    """
    r = _check_corr(r)
    p = r.shape[0]
    if not 1 <= n_factors < max(p, 2):
        raise ValueError(f"n_factors must be in [1, {p - 1}] for {p} variables")
    if method not in ("minres", "ml"):
        raise ValueError(f"method must be 'minres' or 'ml', got {method!r}")
    names = tuple(str(n) for n in (names if names is not None else range(p)))
    if len(names) != p:
        raise ValueError(f"{len(names)} names for a {p} x {p} matrix")
    lam, objective, ok = (_fit_minres if method == "minres" else _fit_ml)(r, n_factors)
    signs = np.where(lam.sum(axis=0) < 0, -1.0, 1.0)
    lam = lam * signs
    communal = (lam**2).sum(axis=1)
    try:
        weights = np.linalg.solve(r, lam)
    except np.linalg.LinAlgError:
        weights = np.linalg.pinv(r) @ lam
    heywood = bool(np.any(1.0 - communal <= _PSI_LOWER + 1e-6))
    squeeze = n_factors == 1
    return FactorAnalysisResult(
        names=names,
        method=method,
        loadings=lam[:, 0] if squeeze else lam,
        uniquenesses=1.0 - communal,
        communalities=communal,
        weights=weights[:, 0] if squeeze else weights,
        variance_share=(lam**2).sum(axis=0) / p,
        objective=objective,
        converged=ok,
        heywood=heywood,
    )


def factor_scores(data: ArrayLike, r: ArrayLike, loadings: ArrayLike) -> NDArray[np.float64]:
    """Regression (Thurstone) factor scores, psych's ``factor.scores(..., method="regression")``.

    ``scores = Z R^-1 L`` with ``Z`` the data standardised per column by its mean and (n - 1)
    standard deviation. With a tetrachoric ``R`` and 0/1 data this gives each item (row) a score
    on the common factor of the variables (models).

    Args:
        data: ``(observations, p)`` data (rows with a NaN get a NaN score).
        r: The ``p x p`` correlation matrix the loadings were fitted to.
        loadings: ``(p,)`` or ``(p, k)`` loadings.

    Returns:
        ``(observations,)`` or ``(observations, k)`` scores.

    Raises:
        ValueError: On mismatched shapes or a column without variance.
    """
    x = np.asarray(data, dtype=float)
    r = _check_corr(r)
    lam = np.asarray(loadings, dtype=float)
    if x.ndim != 2 or x.shape[1] != r.shape[0] or lam.shape[0] != r.shape[0]:
        raise ValueError(f"shapes disagree: data {x.shape}, matrix {r.shape}, loadings {lam.shape}")
    mean = np.nanmean(x, axis=0)
    sd = np.nanstd(x, axis=0, ddof=1)
    if np.any(~(sd > 0)):
        raise ValueError("a column has no variance; drop it before scoring")
    try:
        weights = np.linalg.solve(r, lam)
    except np.linalg.LinAlgError:
        weights = np.linalg.pinv(r) @ lam
    return ((x - mean) / sd) @ weights


# --------------------------------------------------------------------------------------------
# Factor alignment of confidence and correctness
# --------------------------------------------------------------------------------------------


def contentious_items(
    confidence: ArrayLike, correct: ArrayLike, *, bounds: tuple[float, float] = (0.1, 0.9)
) -> NDArray[np.bool_]:
    """Items whose yes-rate and pass-rate across models both lie within ``bounds``.

    The rates are ``k / M`` (models saying yes / answering correctly over the number of models);
    the test uses integer arithmetic on exact fractions (``k * den >= num * M``), so
    ``0.1 * 20`` has no floating-point edge case.

    Args:
        confidence: ``(items, models)`` 0/1 confidence, no missing values.
        correct: ``(items, models)`` 0/1 correctness.
        bounds: Inclusive ``(low, high)`` rate bounds.

    Returns:
        Boolean mask over items.
    """
    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    if c.shape != y.shape or c.ndim != 2:
        raise ValueError(f"confidence {c.shape} and correct {y.shape} must be equal 2-D shapes")
    if np.isnan(c).any() or np.isnan(y).any():
        raise ValueError("contentious_items needs complete matrices (no NaN)")
    low, high = (Fraction(str(b)) for b in bounds)
    if not 0 <= low <= high <= 1:
        raise ValueError(f"bounds must satisfy 0 <= low <= high <= 1, got {bounds!r}")
    m = c.shape[1]

    def inside(k: NDArray) -> NDArray:
        k = np.rint(k).astype(np.int64)
        return (k * low.denominator >= low.numerator * m) & (
            k * high.denominator <= high.numerator * m
        )

    return inside(c.sum(axis=1)) & inside(y.sum(axis=1))


@dataclasses.dataclass(frozen=True, eq=False)
class AlignmentSubset(Result):
    """Pearson correlation of confidence and correctness factor-1 item scores on a set of items.

    Attributes:
        r: Pearson r (NaN with a ``reason`` when it cannot be computed).
        r2: ``r^2``.
        p_value: Two-sided p-value of r = 0.
        ci: 95% confidence interval of r (Fisher z).
        n_items: Items in the set.
        n_models_confidence: Models kept in the confidence factor model (non-degenerate).
        n_models_correctness: Models kept in the correctness factor model.
        confidence_scores: Confidence factor-1 score per item of the set.
        correctness_scores: Correctness factor-1 score per item of the set.
        reason: Why ``r`` is NaN, else None.
    """

    r: float
    r2: float
    p_value: float
    ci: tuple[float, float]
    n_items: int
    n_models_confidence: int
    n_models_correctness: int
    confidence_scores: NDArray[np.float64]
    correctness_scores: NDArray[np.float64]
    reason: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class FactorAlignmentResult(Result):
    """Factor alignment on all items and on the contentious subset.

    Attributes:
        all: :class:`AlignmentSubset` on every item.
        contentious: :class:`AlignmentSubset` on the contentious items, with thresholds,
            tetrachorics and factor models recomputed on them.
        contentious_mask: Which items are contentious.
        bounds: The rate bounds used.
        method: Factor method (``"minres"`` or ``"ml"``).
    """

    all: AlignmentSubset
    contentious: AlignmentSubset
    contentious_mask: NDArray[np.bool_]
    bounds: tuple[float, float]
    method: str


def _scores(
    x: NDArray, method: str, correct: float, weights: str, ordinal: bool = False
) -> tuple[NDArray, int, str | None]:
    """Factor-1 regression scores of the rows of an items x models matrix.

    ``x`` is 0/1 (tetrachoric correlations) or, with ``ordinal``, integer levels (polychoric
    correlations, smoothed as ``psych::cor.smooth`` when not positive definite; the scores
    standardise the level codes, as psych's ``factor.scores`` does with raw ordinal data).

    ``weights="observed"`` is psych's ``R^-1 L`` with the observed correlation matrix.
    ``weights="model"`` uses the fitted model's matrix ``L L' + Psi`` instead; for one factor
    its weights are proportional to ``lambda_j / psi_j`` (Bartlett's), so the scores, and any
    correlation with them, do not depend on the small eigenvalues of the observed matrix. Those
    are mostly sampling noise with few items, and psych's weights divide by them: on simulated
    data with a known factor (12 models x 78 items) the observed-matrix scores correlated 0.00
    to 0.14 with the items' yes-rate, the model-matrix scores 0.96 to 0.98. After
    ``cor.smooth`` (eigenvalues near 1e-10) the observed weights reach 1e7.

    Returns:
        Scores, models kept, and why the scores are NaN (None when fine).
    """
    names = [str(j) for j in range(x.shape[1])]
    if ordinal:
        varies = [j for j in range(x.shape[1]) if np.unique(x[:, j]).size > 1]
        pc = polychoric_matrix(x[:, varies], names=[names[j] for j in varies])
        kept, rho = varies, pc.rho
        if len(kept) >= 2 and not np.isnan(rho).any():
            rho = cor_smooth(rho).matrix
    else:
        tet = tetrachoric_matrix(x, correct=correct)
        kept = [i for i, n in enumerate(names) if n in tet.names]
        rho = tet.rho
    nan = np.full(x.shape[0], np.nan)
    label = "polychoric" if ordinal else "tetrachoric"
    if len(kept) < 3:
        return nan, len(kept), "fewer than 3 models with variance"
    if np.isnan(rho).any():
        return nan, len(kept), f"missing {label} correlations"
    fa = factor_analysis(rho, method=method)
    r = rho
    if weights == "model":
        lam = np.asarray(fa.loadings, dtype=float)
        r = np.outer(lam, lam) + np.diag(np.asarray(fa.uniquenesses, dtype=float))
    return factor_scores(x[:, kept], r, fa.loadings), len(kept), None


def _pearson(x: NDArray, y: NDArray) -> tuple[float, float, tuple[float, float]]:
    """Pearson r, its two-sided p-value and 95% Fisher interval, as ``scipy.stats.pearsonr``.

    Written out because importing ``scipy.stats`` costs about 0.3 s, a tenth of the time
    ``metacog analyze`` may take on a small input; the formulas are SciPy's: the exact null
    law of r (a Beta(n/2 - 1, n/2 - 1) on [-1, 1]) and ``tanh(atanh(r) +- z / sqrt(n - 3))``.
    """
    n = x.size
    xc, yc = x - x.mean(), y - y.mean()
    r = float(np.clip((xc @ yc) / math.sqrt(float(xc @ xc) * float(yc @ yc)), -1.0, 1.0))
    a = n / 2.0 - 1.0
    p = float(2.0 * special.betainc(a, a, 0.5 * (1.0 - abs(r)))) if abs(r) < 1.0 else 0.0
    if n <= 3:
        return r, p, (float("nan"), float("nan"))
    half = float(special.ndtri(0.975)) / math.sqrt(n - 3)
    z = math.atanh(r) if abs(r) < 1.0 else math.copysign(math.inf, r)
    return r, p, (math.tanh(z - half), math.tanh(z + half))


def _align(
    conf: NDArray, corr: NDArray, method: str, correct: float, min_items: int, weights: str,
    ordinal: bool = False,
) -> AlignmentSubset:  # fmt: skip
    nan = float("nan")
    n = conf.shape[0]
    empty = np.full(n, np.nan)
    if n < min_items:
        return AlignmentSubset(
            nan, nan, nan, (nan, nan), n, 0, 0, empty, empty, f"fewer than {min_items} items"
        )
    sc, mc, why_c = _scores(conf, method, correct, weights, ordinal)
    sy, my, why_y = _scores(corr, method, correct, weights)
    reason = None
    if why_c or why_y:
        reason = "; ".join(
            f"{part}: {why}" for part, why in (("confidence", why_c), ("correctness", why_y)) if why
        )
    elif np.ptp(sc) == 0 or np.ptp(sy) == 0:
        reason = "constant factor scores"
    if reason:
        return AlignmentSubset(nan, nan, nan, (nan, nan), n, mc, my, sc, sy, reason)
    r, p, ci = _pearson(sc, sy)
    return AlignmentSubset(
        r,
        r**2,
        p,
        ci,
        n,
        mc,
        my,
        sc,
        sy,
    )


def factor_alignment(
    confidence: ArrayLike,
    correct: ArrayLike,
    *,
    bounds: tuple[float, float] = (0.1, 0.9),
    method: Literal["minres", "ml"] = "minres",
    correct_cells: float = 0.5,
    min_items: int = 10,
    weights: Literal["model", "observed"] = "model",
    ordinal: bool = False,
) -> FactorAlignmentResult:
    """Does the items' shared confidence factor track their shared correctness factor?

    For each matrix (confidence, correctness): tetrachoric correlations across models (degenerate
    models excluded), a one-factor model (``method``), and regression factor-1 scores per item
    (by default with weights from the fitted model's correlation matrix, see ``weights``).
    Then Pearson r between the two score vectors, on all items and on the contentious subset
    (:func:`contentious_items`). On the subset everything is recomputed from the subset's rows
    (thresholds, tetrachorics, factor model), never reused from the full set.

    Args:
        confidence: ``(items, models)`` 0/1 confidence (complete).
        correct: ``(items, models)`` 0/1 correctness (complete, same shape).
        bounds: Inclusive bounds on the yes-rate and pass-rate of a contentious item.
        method: Factor method.
        correct_cells: Zero-cell value of the tetrachoric (psych ``correct``).
        min_items: Fewest items for an r (fewer gives NaN with a reason).
        weights: Score weights from the fitted one-factor model's matrix ``L L' + Psi``
            (``"model"``, default: proportional to Bartlett's, stable with few items) or from
            the observed tetrachoric matrix as psych's regression scores (``"observed"``; the
            small eigenvalues of a noisy or smoothed matrix then dominate the scores).
        ordinal: ``confidence`` holds ordered integer levels of numeric confidence (polychoric
            correlations instead of tetrachoric). A contentious item is then one whose pass
            rate lies within ``bounds`` (a yes-rate has no meaning for levels).

    Returns:
        A :class:`FactorAlignmentResult`.

    Raises:
        ValueError: On mismatched or non-binary matrices.
    """
    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    if weights not in ("model", "observed"):
        raise ValueError(f"weights must be 'model' or 'observed', got {weights!r}")
    mask = contentious_items(y if ordinal else c, y, bounds=bounds)
    label = "polychoric" if ordinal else "tetrachoric"
    return FactorAlignmentResult(
        all=_align(c, y, method, correct_cells, min_items, weights, ordinal),
        contentious=_align(c[mask], y[mask], method, correct_cells, min_items, weights, ordinal),
        contentious_mask=mask,
        bounds=(float(bounds[0]), float(bounds[1])),
        method=f"{method}, regression scores with {weights}-matrix weights"
        + (f"; confidence {label} over levels, contentious by pass rate only" if ordinal else ""),
    )
