"""Polychoric correlations of ordinal confidence, pairwise-complete (psych-compatible).

Two-step estimator as ``psych::polychoric(correct=0.5)`` (2.2.9): each pair's correlation
maximises the bivariate-normal likelihood of the pair's table on the items both answered.
psych's rules, each checked against it on committed reference data (``tests/reference``):

* Codes are shifted by their smallest value over all models; when every model's highest code
  is the same the thresholds are ``qnorm`` of each model's cumulative level shares over every
  item it answered and zero cells are left alone (psych ``global = TRUE``); otherwise (psych
  compares the highest code, not the number of distinct codes) each pair's thresholds come from
  its own table after its zero cells are replaced by 0.5 (``global = FALSE``).
* Codes spanning more than :data:`MAX_LEVELS` values are refused (psych's ``max.cat``).

Where psych is not defined this module says so. On the per-pair path the replaced zero cells
can push a table's cumulative shares to 1 or past it before its last level. psych then takes
``qnorm`` of the share: past 1 it is NaN and psych fails (its matrix call stops; one pair alone
gives NA); at exactly 1 the threshold is infinite and the last level's items drop out of its
likelihood. Such a pair is estimated without the correction instead, as polycor's two-step
estimator does (``polycor::polychor(table, ML = FALSE)``: thresholds from the pair's own
margins), flagged (:attr:`PolychoricMatrixResult.fallback`), counted and reported. On the
reference script's simulation (bivariate normal, 40-120 items, 5 x 3 levels with sparse ends),
107 of 1,191 tables were such pairs; polycor's estimate there had a mean bias of -0.03, +0.09
and +0.03 at true correlations 0.3, 0.6 and 0.85, where the corrected estimate with its shares
clipped below 1 (this module's former rule) was biased by -0.12 to -0.32 in the audit that
found it.

Numeric confidence in [0, 1] becomes ordered levels with :func:`confidence_levels`: a model's
distinct values when it has at most ``n_levels`` of them, else its within-model quantile bins.
The polychoric is invariant to monotone recoding of each variable, so per-model bins lose only
resolution, and every model whose confidence varies keeps at least two levels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from metacog_metrics._result import Result
from metacog_metrics.bvn import bvn_cdf
from metacog_metrics.tetrachoric import TetrachoricMatrixResult, cor_smooth

__all__ = [
    "MAX_LEVELS",
    "THRESHOLD_RULE",
    "OrdinalCorrelationResult",
    "PolychoricMatrixResult",
    "confidence_levels",
    "location_thresholds",
    "ordinal_correlation",
    "polychoric_matrix",
    "polychoric_table",
]

#: Default number of ordered levels numeric confidence is binned into.
N_LEVELS = 5
#: Most levels a polychoric takes (psych's ``max.cat``: codes spanning more are refused).
MAX_LEVELS = 8
_BIG = 8.5  # stands in for +-inf thresholds (Phi(-8.5) ~ 1e-17)
_GOLDEN_STEPS = 45


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

    Example:
        >>> round(polychoric_table([[20, 5, 1], [5, 20, 5], [1, 5, 20]]), 3)
        0.837
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

    Example:
        >>> confidence_levels([0.1, 0.5, 0.5, 0.9, 0.2, 0.7], n_levels=3).tolist()
        [0.0, 1.0, 1.0, 2.0, 0.0, 2.0]
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
        global_thresholds: Whether psych's global thresholds were used (no correction).
        corrected_cells: ``(models, models)`` zero cells replaced by ``correct`` in each pair's
            table (0 on the global path and for fallback pairs).
        fallback: ``(models, models)`` pairs whose corrected cumulative shares reached 1 before
            the last level (psych undefined), estimated without the correction.
    """

    rho: NDArray[np.float64]
    n_pair: NDArray[np.int64]
    n_levels: NDArray[np.int64]
    names: list[str]
    global_thresholds: bool = True
    corrected_cells: NDArray[np.int64] = dataclasses.field(
        default_factory=lambda: np.zeros((0, 0), np.int64)
    )
    fallback: NDArray[np.bool_] = dataclasses.field(default_factory=lambda: np.zeros((0, 0), bool))


def _golden_rho(table: NDArray, tx: NDArray, ty: NDArray, steps: int = _GOLDEN_STEPS) -> NDArray:
    """Two-step ML rho of many tables at once by golden-section search on (-0.9999, 0.9999).

    The same search as ``optimize``/``minimize_scalar(method="bounded")`` (psych, polycor, the
    single-table :func:`polychoric_table`), run for all pairs together; 45 steps narrow the
    bracket to about 1e-9 (psych's own tolerance is about 1e-4).

    Args:
        table: ``(P, R, C)`` counts.
        tx: ``(P, R + 1)`` row cut-points with the +-_BIG ends.
        ty: ``(P, C + 1)`` column cut-points.
    """
    inv = (np.sqrt(5.0) - 1.0) / 2.0

    # Phi2 at the inner cut-points only; the outer ones (+-_BIG) are 0 or a margin.
    n_pairs, r1 = tx.shape
    c1 = ty.shape[1]
    f = np.zeros((n_pairs, r1, c1))
    f[:, -1, :] = special.ndtr(ty)
    f[:, :, -1] = special.ndtr(tx)
    f[:, 0, :] = f[:, :, 0] = 0.0
    hx, ky = tx[:, 1:-1, None], ty[:, None, 1:-1]

    def nll(rho: NDArray) -> NDArray:
        f[:, 1:-1, 1:-1] = bvn_cdf(hx, ky, rho[:, None, None])
        p = f[:, 1:, 1:] - f[:, :-1, 1:] - f[:, 1:, :-1] + f[:, :-1, :-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(table > 0, table * np.log(np.maximum(p, 1e-300)), 0.0)
        return -terms.sum(axis=(1, 2))

    n = table.shape[0]
    a = np.full(n, -0.9999)
    b = np.full(n, 0.9999)
    c = b - inv * (b - a)
    d = a + inv * (b - a)
    fc, fd = nll(c), nll(d)
    for _ in range(steps):
        left = fc < fd  # the minimum is in [a, d]: drop (d, b]; else drop [a, c)
        b = np.where(left, d, b)
        a = np.where(left, a, c)
        new_c = np.where(left, b - inv * (b - a), d)
        new_d = np.where(left, c, a + inv * (b - a))
        fp = nll(np.where(left, new_c, new_d))  # one new evaluation per pair and step
        fc, fd = np.where(left, fp, fd), np.where(left, fc, fp)
        c, d = new_c, new_d
    return 0.5 * (a + b)


def _pair_thresholds(
    margins: NDArray, used: NDArray[np.bool_], total: NDArray
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Cut-points of each pair's own (corrected) table margins, psych's ``global = FALSE``.

    ``qnorm`` of the cumulative margin over the pair's total before correction, up to its last
    used level; unused levels get zero-width cells (a repeated cut-point), as if dropped.

    Args:
        margins: ``(P, W)`` margin counts (after the zero-cell correction).
        used: ``(P, W)`` levels with observations in the pair's table.
        total: ``(P,)`` items the pair shares.

    Returns:
        ``(P, W + 1)`` cut-points and ``(P,)`` whether a cumulative share before the last used
        level reached 1 (psych takes ``qnorm`` of it: infinite or NaN; see the module notes).
    """
    n_pairs, width = margins.shape
    cum = np.cumsum(margins, axis=1) / total[:, None]
    last = width - 1 - np.argmax(used[:, ::-1], axis=1)  # last used level
    before_last = np.arange(width)[None, :] < last[:, None]
    broken = (before_last & (cum >= 1.0)).any(axis=1)
    inner = special.ndtri(np.clip(cum, 1e-300, 1 - 1e-16))
    inner = np.where(before_last, inner, _BIG)
    inner = np.where(cum <= 0, -_BIG, inner)
    out = np.empty((n_pairs, width + 1))
    out[:, 0] = -_BIG
    out[:, 1:] = np.clip(inner, -_BIG, _BIG)
    return out, broken


def polychoric_matrix(
    levels: ArrayLike,
    *,
    names: list[str] | None = None,
    correct: float = 0.5,
    min_pair: int = 2,
    global_thresholds: bool | None = None,
    max_levels: int = MAX_LEVELS,
) -> PolychoricMatrixResult:
    """Polychoric correlations of an items x models level matrix, NaN = not answered.

    psych::polychoric's rules (2.2.9, checked against it on the committed reference data):

    * when every model's highest code (after shifting all codes by the smallest one) is the
      same (``global_thresholds=None``), thresholds are per model over every item it answered
      (psych ``global = TRUE``) and the tables are not corrected;
    * otherwise psych sets ``global = FALSE``: each pair's thresholds come from its own table on
      the items both answered, after zero cells of its used rows and columns are replaced by
      ``correct`` (0.5, as the tetrachoric: a zero cell otherwise puts the maximum on the
      boundary; an atlas pair of two sparse-ended models gave -0.90 uncorrected, 0.24 in psych).
      A pair whose corrected cumulative shares reach 1 before its last level, where psych is
      undefined, is estimated without the correction (``polycor::polychor(ML = FALSE)``) and
      marked in ``fallback``.

    Every pair's table comes from one matrix product of the models' level indicators, and all
    pairs are solved together (:func:`_golden_rho`).

    Args:
        levels: ``(items, models)`` integer levels, NaN where a model lacks an item.
        names: Model names.
        correct: Zero-cell value of the per-pair path.
        min_pair: Fewest shared items for a correlation (fewer: NaN).
        global_thresholds: Force psych's ``global`` (None: its rule above).
        max_levels: Most values the codes may span (psych's ``max.cat``).

    Raises:
        ValueError: If ``levels`` is not 2-D, holds non-integer levels, spans more than
            ``max_levels`` values, or ``names`` mismatches.
    """
    x = np.asarray(levels, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"levels must be items x models, got shape {x.shape}")
    obs = ~np.isnan(x)
    if (x[obs] != np.round(x[obs])).any() or (x[obs] < 0).any():
        raise ValueError("levels must be integers >= 0 (NaN for missing)")
    n_items, m = x.shape
    names = list(names) if names is not None else [f"m{j}" for j in range(m)]
    if len(names) != m:
        raise ValueError(f"{len(names)} names for {m} models")
    low = x[obs].min() if obs.any() else 0.0
    span = int(x[obs].max() - low + 1) if obs.any() else 0
    if span > max_levels:
        raise ValueError(
            f"levels span {span} values ({low:g} to {low + span - 1:g}); a polychoric takes at "
            f"most {max_levels} (psych's max.cat): bin them into fewer ordered levels"
        )
    codes = np.full(x.shape, -1, dtype=np.int64)
    nlev = np.zeros(m, dtype=np.int64)
    top = np.full(m, -1, dtype=np.int64)
    for j in range(m):
        used, inv = np.unique(x[obs[:, j], j].astype(np.int64), return_inverse=True)
        codes[obs[:, j], j] = inv
        nlev[j] = used.size
        if used.size:
            top[j] = used[-1]
    width = int(max(2, nlev.max(initial=0)))
    if global_thresholds is None:  # psych: the highest code of every model, not the count
        global_thresholds = bool(np.unique(top[nlev > 0]).size <= 1)
    taus = np.full((m, width + 1), _BIG)
    for j in range(m):
        if nlev[j]:
            counts = np.bincount(codes[obs[:, j], j], minlength=nlev[j])
            taus[j, : nlev[j] + 1] = _thresholds(np.cumsum(counts) / counts.sum())
    onehot = np.zeros((n_items, m, width), dtype=np.float32)
    ii, jj = np.nonzero(obs)
    onehot[ii, jj, codes[ii, jj]] = 1.0
    flat = onehot.reshape(n_items, m * width)
    gram = np.rint(flat.T @ flat).reshape(m, width, m, width)
    npair = np.rint(gram.sum(axis=(1, 3))).astype(np.int64)
    rho = np.eye(m)
    ia, ib = np.triu_indices(m, k=1)
    tables = gram[ia, :, ib, :]  # (P, width, width)
    rows_used = tables.sum(axis=2) > 0
    cols_used = tables.sum(axis=1) > 0
    ok = (npair[ia, ib] >= min_pair) & (rows_used.sum(axis=1) > 1) & (cols_used.sum(axis=1) > 1)
    r = np.full(ia.size, np.nan)
    cells = np.zeros(ia.size, dtype=np.int64)
    broken = np.zeros(ia.size, dtype=bool)
    if ok.any():
        raw = tables[ok].astype(float)
        t = raw
        if global_thresholds:
            tx, ty = taus[ia[ok]], taus[ib[ok]]
        else:
            ru, cu = rows_used[ok], cols_used[ok]
            empty = ru[:, :, None] & cu[:, None, :] & (raw == 0)
            if correct > 0:
                t = np.where(empty, correct, raw)
            total = raw.sum(axis=(1, 2))
            tx, bx = _pair_thresholds(t.sum(axis=2), ru, total)
            ty, by = _pair_thresholds(t.sum(axis=1), cu, total)
            bad = bx | by
            if bad.any():  # psych undefined: polycor's uncorrected two-step for these pairs
                t = np.where(bad[:, None, None], raw, t)
                ux, _ = _pair_thresholds(raw[bad].sum(axis=2), ru[bad], total[bad])
                uy, _ = _pair_thresholds(raw[bad].sum(axis=1), cu[bad], total[bad])
                tx[bad], ty[bad] = ux, uy
            broken[ok] = bad
            if correct > 0:
                cells[ok] = np.where(bad, 0, empty.sum(axis=(1, 2)))
        r[ok] = _golden_rho(t, tx, ty)
    rho[ia, ib] = rho[ib, ia] = r
    corrected = np.zeros((m, m), dtype=np.int64)
    corrected[ia, ib] = corrected[ib, ia] = cells
    fallback = np.zeros((m, m), dtype=bool)
    fallback[ia, ib] = fallback[ib, ia] = broken
    return PolychoricMatrixResult(
        rho, npair, nlev, names, bool(global_thresholds), corrected, fallback
    )


@dataclass(frozen=True, eq=False)
class OrdinalCorrelationResult(TetrachoricMatrixResult):
    """The polychoric matrix of numeric or ordinal confidence, laid out as a tetrachoric one.

    The fields of :class:`~metacog_metrics.tetrachoric.TetrachoricMatrixResult` (``rho`` after
    ``cor_smooth`` when needed, ``raw_rho``, ``n`` shared items, kept and dropped models), so the
    factor sections and the report treat both alike, plus:

    Attributes:
        n_levels: Ordered levels per kept model.
        threshold_rule: How ``tau`` (one threshold per model, for the loadings-vs-thresholds
            fit) was defined.
        median: The pooled median confidence that ``tau`` is taken at.
        global_thresholds: Whether psych's global thresholds were used (every model's highest
            level the same; no zero-cell correction), else each pair's own.
        n_fallback_pairs: Pairs of the matrix whose corrected cumulative shares reached 1
            (psych undefined), estimated without the correction
            (:func:`polychoric_matrix`).
    """

    n_levels: NDArray[np.int64] = dataclasses.field(default_factory=lambda: np.zeros(0, int))
    threshold_rule: str = ""
    median: float = float("nan")
    global_thresholds: bool = True
    n_fallback_pairs: int = 0


#: How the one threshold per model of numeric confidence is defined.
THRESHOLD_RULE = (
    "tau = Phi^-1(P(confidence < m) + P(confidence = m) / 2), m the pooled median confidence "
    "of the models in the matrix: psych's Phi^-1(P(x = 0)) for confidence binarised at m "
    "(ties counted half), so a high threshold is a model less confident than the typical one"
)


def location_thresholds(conf: ArrayLike) -> tuple[NDArray[np.float64], float]:
    """One threshold per model of numeric confidence: see :data:`THRESHOLD_RULE`.

    Args:
        conf: ``(items, models)`` confidence, NaN for missing.

    Returns:
        The thresholds (shares clipped to ``[0.5 / n, 1 - 0.5 / n]`` so they stay finite) and
        the pooled median.
    """
    x = np.asarray(conf, dtype=float)
    ok = ~np.isnan(x)
    med = float(np.median(x[ok])) if ok.any() else float("nan")
    n = np.maximum(ok.sum(axis=0), 1)
    below = ((x < med) & ok).sum(axis=0) + 0.5 * ((x == med) & ok).sum(axis=0)
    share = np.clip(below / n, 0.5 / n, 1.0 - 0.5 / n)
    return special.ndtri(share), med


def ordinal_correlation(
    conf: ArrayLike,
    *,
    names: Sequence[str],
    n_levels: int = N_LEVELS,
    min_pair: int = 2,
    smooth: bool = True,
) -> OrdinalCorrelationResult:
    """Pairwise-complete polychoric matrix of numeric confidence over per-model levels.

    Each model's confidence becomes at most ``n_levels`` ordered levels
    (:func:`confidence_levels`); models with one level (no variance) are left out; then models
    are left out one at a time, the one with most gaps first, until every pair shares at least
    ``min_pair`` items on which both vary (each such model is reported); the matrix of the rest
    is smoothed as ``psych::cor.smooth`` when it is not positive definite.

    Args:
        conf: ``(items, models)`` confidence, NaN where a model lacks an item.
        names: Model names.
        n_levels: Levels per model.
        min_pair: Fewest shared items for a pair.
        smooth: Apply ``cor_smooth``.

    Returns:
        An :class:`OrdinalCorrelationResult`.
    """
    x = np.asarray(conf, dtype=float)
    names = [str(n) for n in names]
    if x.ndim != 2 or x.shape[1] != len(names):
        raise ValueError(f"conf must be (items, {len(names)} models), got shape {x.shape}")
    levels = np.column_stack([confidence_levels(x[:, j], n_levels=n_levels)
                              for j in range(x.shape[1])]) if x.shape[1] else x  # fmt: skip
    reasons: dict[str, str] = {}
    varies = []
    for j, name in enumerate(names):
        col = levels[~np.isnan(levels[:, j]), j]
        if col.size == 0:
            reasons[name] = "no observations"
        elif np.unique(col).size < 2:
            reasons[name] = "no variance (one confidence level)"
        else:
            varies.append(j)
    res = polychoric_matrix(levels[:, varies], names=[names[j] for j in varies], min_pair=min_pair)
    bad = np.isnan(res.rho)
    keep = list(range(len(varies)))
    while keep:
        sub = bad[np.ix_(keep, keep)]
        if not sub.any():
            break
        worst = int(np.argmax(sub.sum(axis=0) * 1e6 - res.n_pair[keep, keep]))
        j = keep.pop(worst)
        gaps = int(sub[:, worst].sum())
        reasons[names[varies[j]]] = (
            f"fewer than {min_pair} shared items, or no variance on them, with {gaps} other "
            "model(s)"
        )
    raw = res.rho[np.ix_(keep, keep)]
    kept_cols = [varies[j] for j in keep]
    upper = np.triu_indices(len(keep), k=1)
    cells = res.corrected_cells[np.ix_(keep, keep)][upper]
    fallback = res.fallback[np.ix_(keep, keep)][upper]
    smoothed, min_eig, rho = False, float("nan"), raw
    if raw.size:
        sm = cor_smooth(raw)
        min_eig = float(sm.eigenvalues[-1])
        if smooth:
            rho, smoothed = sm.matrix, sm.smoothed
    tau, med = location_thresholds(x[:, kept_cols])
    return OrdinalCorrelationResult(
        rho=rho,
        tau=tau,
        names=tuple(names[j] for j in kept_cols),
        n=res.n_pair[np.ix_(keep, keep)],
        raw_rho=raw,
        dropped=tuple(n for n in names if n in reasons),
        dropped_reasons={n: reasons[n] for n in names if n in reasons},
        smoothed=smoothed,
        smoothing_note=None,
        min_eigenvalue=min_eig,
        n_corrected_pairs=int((cells > 0).sum()),
        correct=0.0 if res.global_thresholds else 0.5,
        n_corrected_cells=int(cells.sum()),
        n_levels=res.n_levels[keep],
        threshold_rule=THRESHOLD_RULE,
        median=med,
        global_thresholds=res.global_thresholds,
        n_fallback_pairs=int(fallback.sum()),
    )
