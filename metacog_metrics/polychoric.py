"""Polychoric correlations of ordinal confidence, pairwise-complete (psych-compatible).

Two-step estimator as ``psych::polychoric(global=TRUE, correct=0.5)``: each model's thresholds are
``qnorm`` of its cumulative level shares over every item it answered; each pair's correlation then
maximises the bivariate-normal likelihood of the pair's table on the items both answered.
The matrix applies no zero-cell correction by default: psych::polychoric 2.2.9 with its default
``correct=0.5`` returns the uncorrected value on the reference data (checked to 2e-5).

Numeric confidence in [0, 1] becomes ordered levels with :func:`confidence_levels`: a model's
distinct values when it has at most ``n_levels`` of them, else its within-model quantile bins.
The polychoric is invariant to monotone recoding of each variable, so per-model bins lose only
resolution, and every model whose confidence varies keeps at least two levels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from metacog_metrics._result import Result
from metacog_metrics.bvn import bvn_cdf

__all__ = ["PolychoricMatrixResult", "confidence_levels", "polychoric_matrix", "polychoric_table"]

#: Default number of ordered levels numeric confidence is binned into.
N_LEVELS = 5
_BIG = 8.5  # stands in for +-inf thresholds (Phi(-8.5) ~ 1e-17)


def _thresholds(cum: NDArray) -> NDArray:
    """Cut-points with +-_BIG ends from cumulative shares (last share is 1)."""
    inner = special.ndtri(np.clip(cum[:-1], 1e-300, 1 - 1e-16))
    return np.concatenate([[-_BIG], np.clip(inner, -_BIG, _BIG), [_BIG]])


def _cell_probs(tx: NDArray, ty: NDArray, rho: float) -> NDArray:
    f = bvn_cdf(tx[:, None], ty[None, :], np.full((tx.size, ty.size), rho))
    p = f[1:, 1:] - f[:-1, 1:] - f[1:, :-1] + f[:-1, :-1]
    return np.maximum(p, 1e-300)


def _solve(table: NDArray, tx: NDArray, ty: NDArray) -> float:
    def nll(rho: float) -> float:
        return float(-np.sum(table * np.log(_cell_probs(tx, ty, rho))))

    res = optimize.minimize_scalar(
        nll, bounds=(-0.9999, 0.9999), method="bounded", options={"xatol": 1e-10}
    )
    return float(res.x)


def _correct(table: NDArray, correct: float) -> NDArray:
    table = np.asarray(table, dtype=float)
    if correct > 0 and (table == 0).any():
        table = np.where(table == 0, correct, table)
    return table


def polychoric_table(table: ArrayLike, *, correct: float = 0.5) -> float:
    """Two-step polychoric of one contingency table (thresholds from its own margins).

    Empty rows and columns are dropped first (as ``psych`` with ``global=FALSE``).

    Raises:
        ValueError: If the table is not 2-D, has negative counts or fewer than 2 non-empty rows
            or columns.
    """
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or (t < 0).any() or not np.isfinite(t).all():
        raise ValueError("table must be a 2-D array of finite counts >= 0")
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    if min(t.shape) < 2:
        raise ValueError(f"table needs at least 2 non-empty rows and columns, got {t.shape}")
    n = t.sum()
    tx = _thresholds(np.cumsum(t.sum(axis=1)) / n)
    ty = _thresholds(np.cumsum(t.sum(axis=0)) / n)
    return _solve(_correct(t, correct), tx, ty)


def confidence_levels(conf: ArrayLike, *, n_levels: int = N_LEVELS) -> NDArray[np.float64]:
    """Ordered levels 0..L-1 (NaN kept) of one model's numeric confidence.

    A model with at most ``n_levels`` distinct values keeps them as its levels; otherwise its
    values are cut at its own quantiles ``1/n_levels, ..., (n_levels-1)/n_levels`` (ties stay in
    one level, so a model may end with fewer levels, never fewer than 2 when it varies).

    Raises:
        ValueError: If ``n_levels < 2``.
    """
    if n_levels < 2:
        raise ValueError(f"n_levels must be >= 2, got {n_levels}")
    x = np.asarray(conf, dtype=float)
    out = np.full(x.shape, np.nan)
    ok = ~np.isnan(x)
    vals = np.unique(x[ok])
    if vals.size <= n_levels:
        out[ok] = np.searchsorted(vals, x[ok])
        return out
    cuts = np.unique(np.quantile(x[ok], np.arange(1, n_levels) / n_levels))
    # A value equal to a cut goes above it (side="right"). A cut at the maximum is dropped
    # (the maximum joins the level below), unless every cut is there: then the maximum is
    # split from the rest (cutting at the second largest value would move it up as well).
    cuts = cuts[cuts < vals[-1]] if (cuts < vals[-1]).any() else vals[-1:]
    lv = np.searchsorted(cuts, x[ok], side="right")
    out[ok] = np.unique(lv, return_inverse=True)[1]
    return out


@dataclass(frozen=True)
class PolychoricMatrixResult(Result):
    """Pairwise-complete polychoric matrix.

    Attributes:
        rho: ``(models, models)`` correlations, 1 on the diagonal, NaN where a pair has fewer
            than ``min_pair`` shared items or a model is constant on them.
        n_pair: ``(models, models)`` number of items both models answered.
        n_levels: Levels observed per model.
        names: Model names.
    """

    rho: NDArray[np.float64]
    n_pair: NDArray[np.int64]
    n_levels: NDArray[np.int64]
    names: list[str]


def polychoric_matrix(
    levels: ArrayLike,
    *,
    names: list[str] | None = None,
    correct: float = 0.0,
    min_pair: int = 2,
) -> PolychoricMatrixResult:
    """Polychoric correlations of an items x models level matrix, NaN = not answered.

    Thresholds are per model over every item it answered (psych ``global=TRUE``); each pair uses
    the items both answered (psych's pairwise-complete rule).

    Raises:
        ValueError: If ``levels`` is not 2-D, holds non-integer levels, or ``names`` mismatches.
    """
    x = np.asarray(levels, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"levels must be items x models, got shape {x.shape}")
    obs = ~np.isnan(x)
    if (x[obs] != np.round(x[obs])).any() or (x[obs] < 0).any():
        raise ValueError("levels must be integers >= 0 (NaN for missing)")
    m = x.shape[1]
    names = list(names) if names is not None else [f"m{j}" for j in range(m)]
    if len(names) != m:
        raise ValueError(f"{len(names)} names for {m} models")
    codes, taus, nlev = [], [], []
    for j in range(m):
        col = x[obs[:, j], j].astype(int)
        used, inv = np.unique(col, return_inverse=True)
        c = np.full(x.shape[0], -1)
        c[obs[:, j]] = inv
        codes.append(c)
        nlev.append(used.size)
        taus.append(_thresholds(np.cumsum(np.bincount(inv, minlength=used.size)) / col.size))
    rho = np.eye(m)
    npair = np.zeros((m, m), dtype=np.int64)
    for a in range(m):
        npair[a, a] = obs[:, a].sum()
        for b in range(a + 1, m):
            both = obs[:, a] & obs[:, b]
            n = int(both.sum())
            npair[a, b] = npair[b, a] = n
            r = np.nan
            if n >= min_pair and nlev[a] > 1 and nlev[b] > 1:
                ca, cb = codes[a][both], codes[b][both]
                if np.unique(ca).size > 1 and np.unique(cb).size > 1:
                    tab = np.zeros((nlev[a], nlev[b]))
                    np.add.at(tab, (ca, cb), 1.0)
                    r = _solve(_correct(tab, correct), taus[a], taus[b])
            rho[a, b] = rho[b, a] = r
    return PolychoricMatrixResult(rho, npair, np.asarray(nlev, dtype=np.int64), names)
