"""Tetrachoric correlations with R psych's conventions, vectorised over all pairs.

The estimator is psych's two-step maximum likelihood: thresholds ``tau = Phi^-1(P(x = 0))`` first,
then ``rho`` maximising the 2x2 multinomial likelihood with ``P(00) = Phi2(tau_x, tau_y; rho)``.
Conventions (``stats_reference.json``, "conventions"):

* ``correct`` (default 0.5) *replaces* zero cells when the table holds more than one
  observation; it does not add 0.5 to every cell.
* Raw data (:func:`tetrachoric`, :func:`tetrachoric_matrix`): thresholds from the *uncorrected*
  column means (psych ``global=TRUE``), so with a zero cell the model is not saturated and the
  likelihood is maximised, not inverted.
* A 2x2 table (:func:`tetrachoric_table`): thresholds from the corrected table (``global=FALSE``);
  the model is saturated and ``rho`` solves ``Phi2(tau_x, tau_y; rho) = p00``.
* Columns without variance are excluded and reported; :func:`cor_smooth` repairs a matrix that is
  not positive definite exactly as ``psych::cor.smooth`` does, and the result says whether it fired.

psych solves with ``optimize(tol ~ 1.2e-4)`` and so sits 1e-5 to 2e-5 from the optimum; here the
score equation (monotone in ``rho``) is solved by vectorised bisection to machine precision, which
matches the exact ML values to 1e-6 and psych to 5e-5. No Python package does this correctly on
current SciPy (see the project notes), hence the hand-written estimator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from metacog_metrics._result import Result
from metacog_metrics.bvn import bvn_cdf, bvn_pdf

__all__ = [
    "CorSmoothResult",
    "TetrachoricMatrixResult",
    "TetrachoricResult",
    "cor_smooth",
    "tetrachoric",
    "tetrachoric_matrix",
    "tetrachoric_table",
]

_BISECTION_STEPS = 34  # bracket width 2^-33 ~ 1e-10, then Newton steps to machine precision
_NEWTON_STEPS = 2


@dataclasses.dataclass(frozen=True, eq=False)
class TetrachoricResult(Result):
    """Tetrachoric correlation of one pair of binary variables.

    Attributes:
        rho: The estimate; NaN when the pair is degenerate (see ``reason``).
        tau: Thresholds ``(tau_x, tau_y)``, ``Phi^-1(P(x = 0))``.
        table: Counts ``(n00, n01, n10, n11)`` used in the likelihood (after the zero-cell
            correction; first index x, second y).
        n: Number of complete observations (0 for a table given as proportions).
        corrected: Whether zero cells were replaced by ``correct``.
        se: Asymptotic standard error of ``rho`` with the thresholds held fixed (the two-step
            Fisher information); NaN when degenerate.
        method: ``"raw"`` (global thresholds from the data) or ``"table"``.
        reason: Why ``rho`` is NaN, else None.
    """

    rho: float
    tau: tuple[float, float]
    table: tuple[float, float, float, float]
    n: int
    corrected: bool
    se: float
    method: str
    reason: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class CorSmoothResult(Result):
    """Output of :func:`cor_smooth`.

    Attributes:
        matrix: The (possibly smoothed) correlation matrix.
        smoothed: Whether the matrix was not positive definite and was smoothed.
        eigenvalues: Eigenvalues of the input matrix, in decreasing order.
    """

    matrix: NDArray[np.float64]
    smoothed: bool
    eigenvalues: NDArray[np.float64]


@dataclasses.dataclass(frozen=True, eq=False)
class TetrachoricMatrixResult(Result):
    """Tetrachoric correlation matrix of the non-degenerate columns of an items x variables matrix.

    Attributes:
        rho: Correlations of the kept columns (smoothed when ``smoothed``), unit diagonal.
        tau: Thresholds of the kept columns.
        names: Names of the kept columns, in order.
        n: Pairwise complete counts of the kept columns.
        raw_rho: ``rho`` before smoothing.
        dropped: Names of the excluded columns.
        dropped_reasons: ``{name: reason}`` for the excluded columns.
        smoothed: Whether :func:`cor_smooth` changed the matrix.
        smoothing_note: Why smoothing was skipped (missing correlations), else None.
        min_eigenvalue: Smallest eigenvalue of ``raw_rho`` (NaN if it has missing entries).
        n_corrected_pairs: Number of pairs whose table had a zero cell replaced by ``correct``.
        correct: The zero-cell value used.
        n_corrected_cells: Number of zero cells replaced by ``correct``, over those pairs.
    """

    rho: NDArray[np.float64]
    tau: NDArray[np.float64]
    names: tuple[str, ...]
    n: NDArray[np.int64]
    raw_rho: NDArray[np.float64]
    dropped: tuple[str, ...]
    dropped_reasons: dict[str, str]
    smoothed: bool
    smoothing_note: str | None
    min_eigenvalue: float
    n_corrected_pairs: int
    correct: float
    n_corrected_cells: int = 0

    def reindex(self, names: Sequence[str]) -> NDArray[np.float64]:
        """The matrix laid out over ``names`` with NaN rows/columns for excluded names.

        Args:
            names: Every column name, in the order wanted.

        Returns:
            A ``len(names) x len(names)`` matrix.
        """
        pos = {name: i for i, name in enumerate(self.names)}
        idx = np.array([pos.get(str(name), -1) for name in names])
        out = np.full((len(idx), len(idx)), np.nan)
        ok = idx >= 0
        out[np.ix_(ok, ok)] = self.rho[np.ix_(idx[ok], idx[ok])]
        return out

    def reindex_tau(self, names: Sequence[str]) -> NDArray[np.float64]:
        """Thresholds laid out over ``names``, NaN for excluded names."""
        pos = {name: i for i, name in enumerate(self.names)}
        return np.array([self.tau[pos[n]] if n in pos else np.nan for n in map(str, names)])


# --------------------------------------------------------------------------------------------
# The vectorised estimator
# --------------------------------------------------------------------------------------------


def _cell_probs(
    tx: NDArray, ty: NDArray, rho: NDArray
) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """P(00), P(01), P(10), P(11) under the bivariate normal with thresholds tx, ty."""
    px0 = special.ndtr(tx)
    py0 = special.ndtr(ty)
    p00 = bvn_cdf(tx, ty, rho)
    p01 = px0 - p00
    p10 = py0 - p00
    p11 = 1.0 - px0 - py0 + p00
    return p00, p01, p10, p11


def _score(counts: NDArray, probs: tuple[NDArray, ...]) -> NDArray:
    """n00/p00 - n01/p01 - n10/p10 + n11/p11: the log-likelihood slope divided by phi2 > 0."""
    sign = (1.0, -1.0, -1.0, 1.0)
    out = np.zeros(counts.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(4):
            n = counts[:, j]
            out += sign[j] * np.where(n > 0, n / probs[j], 0.0)
    return out


def _solve_rho(counts: NDArray, tx: NDArray, ty: NDArray) -> tuple[NDArray, NDArray]:
    """Two-step ML rho for many tables at once.

    The score ``g(rho)`` is strictly decreasing in ``rho`` (each ``n / p`` term moves one way as
    ``P(00)`` and ``P(11)`` grow with ``rho``), so bisection on (-1, 1) brackets the unique
    maximum; two Newton steps (``dg/drho = -phi2 sum(n / p^2)``, kept inside the bracket) then
    reach machine precision.

    Args:
        counts: ``(pairs, 4)`` counts ``n00, n01, n10, n11`` (already corrected).
        tx: ``(pairs,)`` thresholds of x.
        ty: ``(pairs,)`` thresholds of y.

    Returns:
        ``rho`` and its two-step standard error, both ``(pairs,)``.
    """
    m = counts.shape[0]
    lo = np.full(m, -1.0)
    hi = np.full(m, 1.0)
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        g = _score(counts, _cell_probs(tx, ty, mid))
        up = g > 0.0
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    rho = 0.5 * (lo + hi)
    # Newton polish inside the bracket: g' = -phi2 * sum(n / p^2).
    for _ in range(_NEWTON_STEPS):
        probs = _cell_probs(tx, ty, rho)
        g = _score(counts, probs)
        with np.errstate(divide="ignore", invalid="ignore"):
            curv = sum(
                np.where(counts[:, j] > 0, counts[:, j] / probs[j] ** 2, 0.0) for j in range(4)
            )
            step = g / (bvn_pdf(tx, ty, rho) * curv)
        new = rho + np.where(np.isfinite(step), step, 0.0)
        rho = np.clip(new, lo, hi)  # the root is inside the bracket
    # Fisher information of rho (thresholds fixed): phi2^2 * sum(n / p^2) at the optimum.
    probs = _cell_probs(tx, ty, rho)
    with np.errstate(divide="ignore", invalid="ignore"):
        info = sum(np.where(counts[:, j] > 0, counts[:, j] / probs[j] ** 2, 0.0) for j in range(4))
        se = 1.0 / (bvn_pdf(tx, ty, rho) * np.sqrt(info))
    se = np.where(np.isfinite(se), se, np.nan)
    return rho, se


def _correct_counts(counts: NDArray, correct: float) -> tuple[NDArray, NDArray]:
    """psych's zero-cell rule: replace zeros by ``correct`` when the table has more than 1 obs."""
    counts = np.asarray(counts, dtype=float)
    fix = (counts.sum(axis=1) > 1.0) & (counts.min(axis=1) == 0.0) & (correct > 0)
    out = counts.copy()
    out[fix] = np.where(out[fix] == 0.0, float(correct), out[fix])
    return out, fix


def _check_correct(correct: float) -> float:
    correct = float(correct)
    if not np.isfinite(correct) or correct < 0:
        raise ValueError(f"correct must be a finite number >= 0, got {correct!r}")
    return correct


def _binary_array(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """Float copy of a 0/1 array (NaN allowed); anything else is a ValueError naming ``name``."""
    arr = np.asarray(x)
    if arr.dtype == bool:
        return arr.astype(float)
    try:
        arr = arr.astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric 0/1 (NaN for missing): {exc}") from None
    bad = ~np.isnan(arr) & (arr != 0.0) & (arr != 1.0)
    if bad.any():
        where = np.argwhere(bad)[:5].tolist()
        raise ValueError(
            f"{name} must hold only 0, 1 or NaN; {int(bad.sum())} other value(s), "
            f"e.g. {arr[bad][:5].tolist()} at index {where}"
        )
    return arr


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def tetrachoric(x: ArrayLike, y: ArrayLike, *, correct: float = 0.5) -> TetrachoricResult:
    """Tetrachoric correlation of two binary vectors (psych raw-data path, global thresholds).

    Pairs where either value is NaN are ignored. Thresholds come from the uncorrected means of the
    complete pairs; zero cells of the 2x2 table are replaced by ``correct``.

    Args:
        x: 0/1 values (bool, int or float; NaN for missing).
        y: 0/1 values, same length as ``x``.
        correct: Value that replaces zero cells (0 disables the correction; not advised: the
            likelihood then peaks at rho = +-1).

    Returns:
        A :class:`TetrachoricResult`; ``rho`` is NaN with a ``reason`` when either variable has no
        variance or fewer than 3 complete pairs remain.

    Raises:
        ValueError: On non-binary values, mismatched lengths or a negative ``correct``.

    Example:
        >>> res = tetrachoric([1, 1, 0, 0, 1, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 0, 1, 1, 1, 1])
        >>> round(res.rho, 3), res.n
        (0.796, 10)
    """
    correct = _check_correct(correct)
    xa = _binary_array(x, "x").ravel()
    ya = _binary_array(y, "y").ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length: {xa.size} vs {ya.size}")
    ok = ~np.isnan(xa) & ~np.isnan(ya)
    xa, ya = xa[ok], ya[ok]
    n = int(xa.size)
    counts = np.array(
        [
            np.sum((xa == 0) & (ya == 0)),
            np.sum((xa == 0) & (ya == 1)),
            np.sum((xa == 1) & (ya == 0)),
            np.sum((xa == 1) & (ya == 1)),
        ],
        dtype=float,
    )
    nan_tau = (float("nan"), float("nan"))
    if n < 3:
        return TetrachoricResult(
            np.nan, nan_tau, tuple(counts), n, False, np.nan, "raw", "fewer than 3 complete pairs"
        )
    mx, my = xa.mean(), ya.mean()
    tau = (float(special.ndtri(1.0 - mx)), float(special.ndtri(1.0 - my)))
    if mx in (0.0, 1.0) or my in (0.0, 1.0):
        which = "x" if mx in (0.0, 1.0) else "y"
        return TetrachoricResult(
            np.nan, tau, tuple(counts), n, False, np.nan, "raw", f"{which} has no variance"
        )
    fixed, fix = _correct_counts(counts[None, :], correct)
    rho, se = _solve_rho(fixed, np.array([tau[0]]), np.array([tau[1]]))
    return TetrachoricResult(
        float(rho[0]), tau, tuple(map(float, fixed[0])), n, bool(fix[0]), float(se[0]), "raw"
    )


def tetrachoric_table(table: ArrayLike, *, correct: float = 0.5) -> TetrachoricResult:
    """Tetrachoric correlation of a 2x2 table (psych table path, thresholds from the table).

    Args:
        table: Counts or proportions as ``[[n00, n01], [n10, n11]]`` (rows x, columns y), as the
            flat ``[n00, n01, n10, n11]``, or as the proportions ``[p_x, p_y, p_xy]`` (P(x = 1),
            P(y = 1) and P(x = 1, y = 1), psych's comorbidity form). Zero cells are replaced by
            ``correct`` only when the table sums to more than 1 (so proportions are never
            corrected), as in psych.
        correct: Value that replaces zero cells.

    Returns:
        A :class:`TetrachoricResult` with ``method="table"``; ``rho`` is NaN with a ``reason`` when
        a margin is empty.

    Raises:
        ValueError: On a malformed table (wrong shape, negative or non-finite entries, impossible
            proportions).

    Example:
        With equal margins the estimate is cos(pi / (1 + sqrt(ad / bc))), here cos(pi / 5):

        >>> round(tetrachoric_table([[40, 10], [10, 40]]).rho, 4)
        0.809
    """
    correct = _check_correct(correct)
    arr = np.asarray(table, dtype=float)
    if arr.size == 3 and arr.ndim == 1:
        px, py, pxy = arr
        arr = np.array([1.0 - px - py + pxy, py - pxy, px - pxy, pxy])
        if np.any(arr < -1e-12) or not np.all(np.isfinite(arr)):
            raise ValueError(f"impossible proportions p_x, p_y, p_xy = {table!r}")
        arr = np.clip(arr, 0.0, None)
    elif arr.shape in ((2, 2), (4,)):
        arr = arr.reshape(4)
    else:
        raise ValueError(
            f"table must be 2x2, [n00, n01, n10, n11] or [p_x, p_y, p_xy]; got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"table entries must be finite and >= 0, got {arr.tolist()}")
    total_raw = float(arr.sum())
    n = round(total_raw) if total_raw > 1 else 0
    fixed, fix = _correct_counts(arr[None, :], correct)
    c = fixed[0]
    total = c.sum()
    px0, py0 = (c[0] + c[1]) / total, (c[0] + c[2]) / total
    tau = (float(special.ndtri(px0)), float(special.ndtri(py0)))
    if not (0.0 < px0 < 1.0 and 0.0 < py0 < 1.0):
        return TetrachoricResult(
            np.nan, tau, tuple(map(float, c)), n, bool(fix[0]), np.nan, "table", "empty margin"
        )
    rho, se = _solve_rho(fixed, np.array([tau[0]]), np.array([tau[1]]))
    se_val = float(se[0]) if total_raw > 1 else float("nan")
    return TetrachoricResult(
        float(rho[0]), tau, tuple(map(float, c)), n, bool(fix[0]), se_val, "table"
    )


def cor_smooth(r: ArrayLike, *, eig_tol: float = 1e-12) -> CorSmoothResult:
    """Smooth a correlation matrix that is not positive definite, exactly as ``psych::cor.smooth``.

    If the smallest eigenvalue is below machine epsilon, eigenvalues below ``eig_tol`` are set to
    ``100 * eig_tol``, all are rescaled to sum to the dimension, the matrix is rebuilt as
    ``V diag(l) V'`` and rescaled to unit diagonal (``cov2cor``). Otherwise it is returned as is.
    This is not a nearest-correlation (Higham) projection.

    Args:
        r: Symmetric correlation matrix without missing values.
        eig_tol: Eigenvalues below this are raised to ``100 * eig_tol``.

    Returns:
        A :class:`CorSmoothResult`.

    Raises:
        ValueError: If ``r`` is not square, not symmetric or has missing values.

    Example:
        >>> import numpy as np
        >>> res = cor_smooth([[1, 0.9, -0.9], [0.9, 1, 0.9], [-0.9, 0.9, 1]])
        >>> res.smoothed, np.round(res.matrix, 3).tolist()
        (True, [[1.0, 0.5, -0.5], [0.5, 1.0, 0.5], [-0.5, 0.5, 1.0]])
    """
    r = np.array(r, dtype=float)
    if r.ndim != 2 or r.shape[0] != r.shape[1]:
        raise ValueError(f"cor_smooth needs a square matrix, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("cor_smooth: the matrix has missing or infinite entries")
    if not np.allclose(r, r.T, atol=1e-10):
        raise ValueError("cor_smooth: the matrix is not symmetric")
    values, vectors = np.linalg.eigh(r)
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    if values.min() >= np.finfo(float).eps:
        return CorSmoothResult(r, False, values)
    fixed = np.where(values < eig_tol, 100.0 * eig_tol, values)
    fixed = fixed * r.shape[0] / fixed.sum()
    s = (vectors * fixed) @ vectors.T
    d = np.sqrt(np.diag(s))
    s = s / np.outer(d, d)
    s = 0.5 * (s + s.T)
    np.fill_diagonal(s, 1.0)
    return CorSmoothResult(s, True, values)


def tetrachoric_matrix(
    x: ArrayLike,
    *,
    correct: float = 0.5,
    smooth: bool = True,
    names: Sequence[Any] | None = None,
) -> TetrachoricMatrixResult:
    """Tetrachoric correlations of every pair of columns of an items x variables 0/1 matrix.

    All pair tables come from four matrix products and all pairs are solved at once. As in psych
    (raw-data path): thresholds from each column's own non-missing values, tables from pairwise
    complete rows, zero cells replaced by ``correct``, columns without variance excluded (and
    reported), pairs with fewer than 3 complete rows NaN, and :func:`cor_smooth` applied when
    ``smooth`` and no correlation is missing.

    Args:
        x: ``(items, variables)`` array of 0/1 with NaN for missing (bool or numeric), or a pandas
            DataFrame (its column names are used when ``names`` is None).
        correct: Value that replaces zero cells.
        smooth: Apply :func:`cor_smooth`.
        names: Column names (default: DataFrame columns, else ``"0", "1", ...``).

    Returns:
        A :class:`TetrachoricMatrixResult` over the kept columns.

    Raises:
        ValueError: On non-binary values, a wrong shape or mismatched ``names``.

    Example:
        >>> import numpy as np
        >>> x = [[1, 1, 0], [0, 1, 0], [1, 0, 1], [1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 0, 1],
        ...      [1, 1, 1]]
        >>> res = tetrachoric_matrix(x, names=["a", "b", "c"])
        >>> np.round(res.rho, 2).tolist()
        [[1.0, 0.68, 0.4], [0.68, 1.0, -0.4], [0.4, -0.4, 1.0]]
    """
    correct = _check_correct(correct)
    if names is None and hasattr(x, "columns"):
        names = list(x.columns)
    arr = _binary_array(x, "x")
    if arr.ndim != 2:
        raise ValueError(f"x must be 2-D (items x variables), got shape {arr.shape}")
    p = arr.shape[1]
    names = [str(v) for v in (names if names is not None else range(p))]
    if len(names) != p:
        raise ValueError(f"{len(names)} names for {p} columns")
    if len(set(names)) != p:
        raise ValueError("column names must be unique")

    present = ~np.isnan(arr)
    counts_col = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.nansum(arr, axis=0) / counts_col
    dropped_reasons: dict[str, str] = {}
    for j, name in enumerate(names):
        if counts_col[j] == 0:
            dropped_reasons[name] = "no observations"
        elif means[j] == 0.0:
            dropped_reasons[name] = "no variance (all 0)"
        elif means[j] == 1.0:
            dropped_reasons[name] = "no variance (all 1)"
    keep = np.array([name not in dropped_reasons for name in names], dtype=bool)
    kept_names = tuple(n for n, k in zip(names, keep) if k)
    a = arr[:, keep]
    q = a.shape[1]
    tau = special.ndtri(1.0 - means[keep])

    one = np.nan_to_num(a, nan=0.0)
    zero = np.where(np.isnan(a), 0.0, 1.0 - a)
    n11 = one.T @ one
    n00 = zero.T @ zero
    n01 = zero.T @ one  # x = 0 (row variable), y = 1
    n10 = one.T @ zero
    n_pair = np.rint(n00 + n01 + n10 + n11).astype(np.int64)

    iu, ju = np.triu_indices(q, k=1)
    counts = np.stack([n00[iu, ju], n01[iu, ju], n10[iu, ju], n11[iu, ju]], axis=1)
    enough = n_pair[iu, ju] > 2
    fixed, fix = _correct_counts(counts, correct)
    rho_pairs = np.full(iu.size, np.nan)
    if enough.any():
        rho_pairs[enough], _ = _solve_rho(fixed[enough], tau[iu[enough]], tau[ju[enough]])
    raw = np.eye(q)
    raw[iu, ju] = rho_pairs
    raw[ju, iu] = rho_pairs

    smoothed = False
    note = None
    min_eig = float("nan")
    rho = raw
    if np.isnan(rho_pairs).any():
        note = "some correlations are missing, smoothing turned off"
    elif q > 0:
        res = cor_smooth(raw)
        min_eig = float(res.eigenvalues[-1])
        if smooth:
            rho, smoothed = res.matrix, res.smoothed
    return TetrachoricMatrixResult(
        rho=rho,
        tau=tau,
        names=kept_names,
        n=n_pair,
        raw_rho=raw,
        dropped=tuple(n for n in names if n in dropped_reasons),
        dropped_reasons=dropped_reasons,
        smoothed=smoothed,
        smoothing_note=note,
        min_eigenvalue=min_eig,
        n_corrected_pairs=int(fix[enough].sum()),
        correct=correct,
        n_corrected_cells=int(((counts == 0) & fix[:, None])[enough].sum()),
    )
