"""Per-model calibration: AUROC (own and population), Brier, ECE, AURC.

The plain-float helpers (:func:`auroc`, :func:`brier_score`, :func:`ece`, :func:`aurc`,
:func:`confidence_tetrachoric`) take array-likes, ignore pairs where either value is NaN and
are what the harness metrics call.
:func:`calibration_by_model` computes every metric per model from a long record table, each model
on its own graded items, with the leave-one-out population-mean confidence ("Pop") as the
baseline its own confidence ("Internal") must beat, and a paired bootstrap CI of the difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import ModuleType
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import SeedLike, child_sequence, seed_sequence, value_ties
from metacog_metrics._result import Result
from metacog_metrics._threads import map_threads
from metacog_metrics.pairwise.engines import compiled_kernels
from metacog_metrics.records import _has_repeats, _text_or_missing

__all__ = [
    "CalibrationResult",
    "ModelCalibration",
    "aurc",
    "auroc",
    "brier_score",
    "calibration_by_model",
    "confidence_tetrachoric",
    "eaurc",
    "ece",
    "population_confidence",
]


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------


def _pairs(
    confidence: ArrayLike, correct: ArrayLike, *, unit: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate and align the two inputs; drop pairs where either is NaN."""
    try:
        c = np.asarray(confidence, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError("confidence must be numeric") from None
    try:
        y = np.asarray(correct, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError("correct must be numeric 0/1") from None
    if c.shape != y.shape:
        raise ValueError(f"confidence and correct differ in length: {c.size} vs {y.size}")
    ok = ~np.isnan(c) & ~np.isnan(y)
    c, y = c[ok], y[ok]
    bad = (y != 0.0) & (y != 1.0)
    if bad.any():
        raise ValueError(f"correct must be 0 or 1 (NaN ignored); got e.g. {y[bad][:5].tolist()}")
    if not np.all(np.isfinite(c)):
        raise ValueError("confidence has infinite values")
    if unit and c.size and (c.min() < 0.0 or c.max() > 1.0):
        raise ValueError(f"confidence must lie in [0, 1]; got values in [{c.min():g}, {c.max():g}]")
    return c, y


# --------------------------------------------------------------------------------------------
# Plain-float metrics
# --------------------------------------------------------------------------------------------


def auroc(confidence: ArrayLike, correct: ArrayLike) -> float:
    """Area under the ROC curve of ``confidence`` as a score for ``correct`` (ties count 1/2).

    Args:
        confidence: Scores (any finite reals; NaN pairs ignored).
        correct: 0/1 labels (NaN pairs ignored).

    Returns:
        The AUROC (``sklearn.metrics.roc_auc_score``), NaN when only one class is present.

    Raises:
        ValueError: On mismatched lengths, non-binary labels or infinite scores.

    Example:
        >>> auroc([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 0])
        1.0
        >>> auroc([0.9, 0.5, 0.5, 0.2], [1, 1, 0, 0])  # a tie counts one half
        0.875
    """
    from sklearn.metrics import roc_auc_score  # here: importing sklearn costs ~0.5 s

    c, y = _pairs(confidence, correct, unit=False)
    if y.size == 0 or y.min() == y.max():
        return float("nan")
    return float(roc_auc_score(y, c))


def brier_score(confidence: ArrayLike, correct: ArrayLike) -> float:
    """Mean squared difference between confidence and correctness.

    Args:
        confidence: Probabilities in [0, 1] (NaN pairs ignored).
        correct: 0/1 labels (NaN pairs ignored).

    Returns:
        The Brier score (as ``sklearn.metrics.brier_score_loss``), NaN when no pair is left.

    Raises:
        ValueError: On mismatched lengths, non-binary labels or confidence outside [0, 1].

    Example:
        >>> brier_score([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 0])
        0.125
    """
    c, y = _pairs(confidence, correct, unit=True)
    if y.size == 0:
        return float("nan")
    # sklearn's brier_score_loss(y, c, labels=[0, 1]) operation for operation (both columns of
    # the one-hot form, halved), so the values are the same to the last bit, without the
    # half-second import of sklearn on every analysis.
    return float(0.5 * np.mean(((1.0 - y) - (1.0 - c)) ** 2 + (y - c) ** 2))


def confidence_tetrachoric(
    confidence: ArrayLike, correct: ArrayLike, *, threshold: float = 0.5
) -> float:
    """Tetrachoric correlation of yes/no confidence with correctness.

    Continuous confidences (log-probability, sampled, numeric) are binarised at ``threshold``,
    as the analysis does.

    Args:
        confidence: Confidences in [0, 1] (NaN pairs ignored).
        correct: 0/1 labels (NaN pairs ignored).
        threshold: Confidence at or above which the answer counts as "yes".

    Returns:
        ``metacog_metrics.tetrachoric.tetrachoric(...).rho``; NaN when either variable is
        constant or fewer than three pairs are left.
    """
    from metacog_metrics.tetrachoric import tetrachoric

    c, y = _pairs(confidence, correct, unit=True)
    return float(tetrachoric((c >= threshold).astype(float), y).rho)


def _bin_ids(c: NDArray, n_bins: int, strategy: str) -> NDArray[np.int64]:
    if strategy == "uniform":
        # Left-closed bins [k/B, (k+1)/B), the last one closed at 1. Rounding before the floor
        # keeps grid values (0.7 * 10 = 7.000000000000001) in the bin their decimal form names.
        return np.clip(np.floor(np.round(c * n_bins, 9)).astype(np.int64), 0, n_bins - 1)
    if strategy == "quantile":
        # Equal mass without splitting ties: each distinct confidence level goes whole into the
        # bin its first position falls in, so tied scores never straddle an edge.
        _, inverse, counts = np.unique(c, return_inverse=True, return_counts=True)
        before = np.concatenate([[0], np.cumsum(counts)[:-1]])
        level_bin = np.minimum(before * n_bins // c.size, n_bins - 1)
        return level_bin[inverse]
    raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")


def ece(
    confidence: ArrayLike,
    correct: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
) -> float:
    """Expected calibration error: ``sum_b (n_b / N) |accuracy_b - mean confidence_b|``.

    Args:
        confidence: Probabilities in [0, 1] (NaN pairs ignored).
        correct: 0/1 labels (NaN pairs ignored).
        n_bins: Number of bins.
        strategy: ``"uniform"``: equal-width bins ``[k/B, (k+1)/B)`` (the last closed);
            ``"quantile"``: equal-mass bins that never split tied confidences (so fewer than
            ``n_bins`` bins when there are few distinct values).

    Returns:
        The ECE, NaN when no pair is left. For 0/1 confidence it equals the error rate
        ``P(confidence != correct)`` whatever the binning.

    Raises:
        ValueError: On bad inputs, ``n_bins < 1`` or an unknown ``strategy``.

    Example:
        >>> round(ece([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 0]), 6)
        0.3
    """
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    c, y = _pairs(confidence, correct, unit=True)
    if y.size == 0:
        return float("nan")
    bins = _bin_ids(c, int(n_bins), strategy)
    conf_b = np.bincount(bins, weights=c, minlength=n_bins)
    acc_b = np.bincount(bins, weights=y, minlength=n_bins)
    # sum_b (n_b/N) |acc_b/n_b - conf_b/n_b| = sum_b |acc_sum_b - conf_sum_b| / N
    return float(np.abs(acc_b - conf_b).sum() / y.size)


def _risk_curve(c: NDArray, y: NDArray) -> NDArray[np.float64]:
    """Expected selective risk at coverage k/N, k = 1..N, averaging over orders of tied scores."""
    n = c.size
    order = np.argsort(-c, kind="stable")
    cs, err = c[order], 1.0 - y[order]
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    sizes = np.diff(np.r_[starts, n])
    group_err = np.add.reduceat(err, starts)
    err_before = np.concatenate([[0.0], np.cumsum(group_err)[:-1]])
    group = np.repeat(np.arange(starts.size), sizes)
    k = np.arange(1, n + 1)
    expected_errors = err_before[group] + (k - starts[group]) * (group_err / sizes)[group]
    return expected_errors / k


def aurc(confidence: ArrayLike, correct: ArrayLike) -> float:
    """Area under the risk-coverage curve (Geifman & El-Yaniv), tie-aware.

    Items are accepted in decreasing confidence; the risk at coverage k/N is the error rate of
    the k accepted items, averaged over k. Tied confidences are accepted in random order, and the
    expected risk over those orders is used, so the value does not depend on how ties are sorted.

    Args:
        confidence: Scores (NaN pairs ignored).
        correct: 0/1 labels (NaN pairs ignored).

    Returns:
        AURC in [0, 1] (lower is better), NaN when no pair is left.

    Raises:
        ValueError: On bad inputs.

    Example:
        >>> round(aurc([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 0]), 6)
        0.208333
    """
    c, y = _pairs(confidence, correct, unit=False)
    if y.size == 0:
        return float("nan")
    return float(_risk_curve(c, y).mean())


def eaurc(confidence: ArrayLike, correct: ArrayLike) -> float:
    """Excess AURC: :func:`aurc` minus the AURC of an oracle that ranks every error last.

    Args:
        confidence: Scores (NaN pairs ignored).
        correct: 0/1 labels (NaN pairs ignored).

    Returns:
        E-AURC (0 for a perfect ranking), NaN when no pair is left.

    Example:
        A confidence that ranks every right answer first has no excess risk:

        >>> eaurc([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 0])
        0.0
    """
    c, y = _pairs(confidence, correct, unit=False)
    if y.size == 0:
        return float("nan")
    k = np.arange(1, y.size + 1)
    oracle = np.maximum(0.0, k - y.sum()) / k
    return float(_risk_curve(c, y).mean() - oracle.mean())


# --------------------------------------------------------------------------------------------
# Population confidence and the paired bootstrap
# --------------------------------------------------------------------------------------------


def population_confidence(records: pd.DataFrame) -> pd.Series:
    """Leave-one-out population mean confidence of every record.

    For each row, the mean confidence of the *other* models on the same item (models whose
    confidence on that item is not NaN). NaN when no other model answered.

    Args:
        records: Long table with ``model``, ``item_id`` and ``confidence`` (one row per model and
            item).

    Returns:
        A float Series aligned with ``records``.
    """
    return _leave_one_out_mean(records, pd.factorize(_text_or_missing(records["item_id"]))[0])


def _leave_one_out_mean(records: pd.DataFrame, keys: NDArray) -> pd.Series:
    """:func:`population_confidence` with the items as integer codes ``keys``."""
    conf = records["confidence"].to_numpy(dtype=float)
    keys = np.asarray(keys, dtype=np.int64)
    known = keys >= 0  # a missing item id has no population
    answered = ~np.isnan(conf) & known
    keys = np.where(known, keys, 0)
    own = np.where(answered, conf, 0.0)
    total = np.bincount(keys, weights=own)[keys]  # per item, in row order
    others = np.bincount(keys, weights=answered)[keys] - answered
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where((others > 0) & known, (total - own) / others, np.nan)
    # The subtraction leaves last-bit noise (0.93 vs 0.9300000000000002) that would break the
    # ties AUROC relies on: the project's value-tie rounding drops it.
    return pd.Series(value_ties(out), index=records.index, name="confidence")


def _weighted_auc(levels: NDArray, y: NDArray, weights: NDArray) -> NDArray[np.float64]:
    """AUROC (ties count 1/2) of many weightings of the same items at once.

    Args:
        levels: ``(n,)`` index of each item's score among the sorted distinct scores.
        y: ``(n,)`` 0/1 labels.
        weights: ``(B, n)`` multiplicity of each item in each resample (ones: the plain AUROC).

    Returns:
        ``(B,)`` AUROC values (NaN when a resample lacks a class).
    """
    order = np.argsort(levels, kind="stable")
    lev = levels[order]
    starts = np.flatnonzero(np.r_[True, lev[1:] != lev[:-1]])
    w = weights[:, order]
    ys = y[order]
    pos = np.add.reduceat(w * ys, starts, axis=1)  # (B, distinct scores)
    neg = np.add.reduceat(w * (1 - ys), starts, axis=1)
    neg_below = np.cumsum(neg, axis=1) - neg
    num = (pos * (neg_below + 0.5 * neg)).sum(axis=1)
    den = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def _paired_auroc_bootstrap(
    conf: NDArray, pop: NDArray, y: NDArray, n_boot: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """``n_boot`` paired item-bootstrap draws of ``AUROC(conf) - AUROC(pop)``.

    Both AUROCs depend on a resample only through its counts over the cells (confidence
    level, population level, correctness), so a resample is one multinomial draw of the ``n``
    items over the K occupied cells, with the cells' shares as probabilities: the same law as
    drawing ``n`` items with replacement (the items of a cell are interchangeable), at O(K)
    per draw instead of O(n). With about as many cells as items (real-valued population means)
    the items are drawn directly. Ties keep their meaning: the levels are the exact distinct
    values.
    """
    lev_c = np.unique(conf, return_inverse=True)[1]
    lev_p = np.unique(pop, return_inverse=True)[1]
    return _paired_level_bootstrap(lev_c, lev_p, y, n_boot, rng)


def _paired_level_bootstrap(
    lev_c: NDArray, lev_p: NDArray, y: NDArray, n_boot: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """:func:`_paired_auroc_bootstrap` of the scores' level codes (non-negative integers in
    the scores' order; gaps allowed): the same draws."""
    n = y.size
    code = (lev_c * (lev_p.max() + 1) + lev_p) * 2 + y.astype(np.int64)
    if code.max() < 4 * n:  # the occupied cells in ascending order, as np.unique, without a sort
        every = np.bincount(code)
        cell = np.flatnonzero(every)
        counts = every[cell]
    else:
        cell, counts = np.unique(code, return_counts=True)
    diffs = np.empty(n_boot)
    if _draw_cells(cell.size, n):  # cell counts: O(K) a draw
        k_p, k_y = cell // 2, cell % 2
        c_cell, p_cell = k_p // (lev_p.max() + 1), k_p % (lev_p.max() + 1)
        y_cell = k_y.astype(float)
        chunk = max(1, 1_000_000 // cell.size)
        for start in range(0, n_boot, chunk):
            b = min(chunk, n_boot - start)
            w = rng.multinomial(n, counts / n, size=b).astype(float)
            diffs[start : start + b] = _weighted_auc(c_cell, y_cell, w) - _weighted_auc(
                p_cell, y_cell, w
            )
        return diffs
    # Items drawn one by one: each resample's counts over (level, correctness) of either score,
    # O(n + levels) a draw (the weights of every item are never formed): one pass of the
    # compiled kernel, else one bincount per score; the same doubles either way.
    code_c = lev_c * 2 + y.astype(np.int64)
    code_p = lev_p * 2 + y.astype(np.int64)
    kernels = _compiled_bootstrap()
    chunk = max(1, 1_000_000 // max(n, 1))
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        idx = rng.integers(0, n, size=(b, n))
        if kernels is not None:
            diffs[start : start + b] = kernels.paired_auc_diffs(code_c, code_p, idx)
        else:
            diffs[start : start + b] = _counts_auc(code_c, idx) - _counts_auc(code_p, idx)
    return diffs


#: Cells above which the items path is taken when it is cheaper (:func:`_draw_cells`).
_MANY_CELLS = 256
#: About what one cell of a multinomial draw costs in item draws (NumPy's binomial variate
#: against a bounded integer and two compiled increments: 100-250 ns against 3-6 ns).
_CELL_COST = 32


def _draw_cells(n_cells: int, n: int) -> bool:
    """Whether a resample is drawn as a multinomial over the cells rather than item by item.

    The cells, where they are at most half the items, except where they are many and their
    binomial draws cost more than drawing the items: at 300 models x 12,000 items (1,029
    cells, real-valued population means) a model's 1,000 resamples took 98 ms as cells and
    32 ms item by item (medians of 5 in one run, compiled counting). Below ``_MANY_CELLS``
    either way costs little, and those runs (the binary battery, 100 models x 50,000 items)
    keep the cells and their draws.

    >>> _draw_cells(80, 524), _draw_cells(1029, 12_000), _draw_cells(400, 50_000)
    (True, False, True)
    """
    return 2 * n_cells <= n and (n_cells <= _MANY_CELLS or _CELL_COST * n_cells <= n)


def _compiled_bootstrap() -> ModuleType | None:
    """The compiled counting kernel of the items path, or None (numba missing or turned off
    with ``METACOG_NO_NUMBA``, as for the pairwise kernels)."""
    if compiled_kernels("auto") is None:
        return None
    from metacog_metrics import _bootstrap_numba

    return _bootstrap_numba


def _counts_auc(code: NDArray, idx: NDArray) -> NDArray[np.float64]:
    """AUROC (ties count 1/2) of resamples ``idx`` (B, n) of items with ``code`` =
    2 level + label: per resample, the counts over (level, label) and one pass over the
    levels. Integer arithmetic up to the last division, so it equals :func:`_weighted_auc`
    of the same resamples exactly."""
    b = idx.shape[0]
    k = int(code.max()) // 2 + 1
    flat = (np.arange(b, dtype=np.int64)[:, None] * (2 * k) + code[idx]).ravel()
    counts = np.bincount(flat, minlength=b * 2 * k).reshape(b, k, 2)
    neg, pos = counts[..., 0], counts[..., 1]
    neg_below = np.cumsum(neg, axis=1) - neg
    num2 = (pos * (2 * neg_below + neg)).sum(axis=1)  # twice the numerator
    den = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num2 / (2.0 * den), np.nan)


def _fast_auroc(score: NDArray, y: NDArray) -> float:
    """Midrank AUROC of clean arrays (equal to sklearn's roc_auc_score; NaN with one class)."""
    return _levels_auroc(np.unique(score, return_inverse=True)[1], y)


def _levels_auroc(levels: NDArray, y: NDArray) -> float:
    """:func:`_fast_auroc` of the scores' level codes (non-negative integers in the scores'
    order; gaps allowed), from the counts per (level, label): no sort. The counts and the
    products are integers and half-integers, exact in any order of summation, so the value
    equals :func:`_weighted_auc` of unit weights."""
    if y.size == 0 or y.min() == y.max():
        return float("nan")
    pos = np.bincount(levels, weights=y)
    neg = np.bincount(levels, minlength=pos.size) - pos
    neg_below = np.cumsum(neg) - neg
    return float((pos * (neg_below + 0.5 * neg)).sum() / (pos.sum() * neg.sum()))


# --------------------------------------------------------------------------------------------
# Per-model results
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ModelCalibration(Result):
    """Calibration of one model's confidence on its own graded items.

    Attributes:
        model: Model name.
        n_items: Items with both a confidence and a grade.
        n_unparseable: Rows whose confidence is NaN (unparseable probe reply).
        n_ungraded: Rows with a confidence but no grade.
        accuracy: Share correct.
        yes_rate: Share of items with confidence >= 0.5 (the "yes" rate for binary probes).
        mean_confidence: Mean confidence.
        auroc_internal: AUROC of the model's own confidence for its correctness.
        auroc_pop: AUROC of the leave-one-out population mean confidence on the items the model
            answered (mean over the other models that answered each item).
        n_items_pop: Items with a population confidence (some other model answered).
        auroc_diff: Internal minus Pop on those items.
        auroc_diff_ci: Paired bootstrap percentile interval of ``auroc_diff``.
        auroc_diff_p: Two-sided bootstrap p-value of ``auroc_diff = 0``:
            ``2 min((1 + #{diff* <= 0}) / (B + 1), (1 + #{diff* >= 0}) / (B + 1))``, clipped to 1
            (never exactly 0).
        brier: Brier score.
        ece: ECE with equal-width bins.
        ece_equal_mass: ECE with equal-mass (tie-safe) bins.
        aurc: Area under the risk-coverage curve (tie-aware).
        eaurc: AURC minus the oracle AURC.
        auroc_internal_on_pop: ``auroc_internal`` on Pop's items only (the ``n_items_pop`` items
            with a population confidence), so it and ``auroc_pop`` rest on the same items.
    """

    model: str
    n_items: int
    n_unparseable: int
    n_ungraded: int
    accuracy: float
    yes_rate: float
    mean_confidence: float
    auroc_internal: float
    auroc_pop: float
    n_items_pop: int
    auroc_diff: float
    auroc_diff_ci: tuple[float, float]
    auroc_diff_p: float
    brier: float
    ece: float
    ece_equal_mass: float
    aurc: float
    eaurc: float
    auroc_internal_on_pop: float = float("nan")


@dataclasses.dataclass(frozen=True, eq=False)
class CalibrationResult(Result):
    """Per-model calibration of one group of records.

    Attributes:
        models: Model names, in order.
        per_model: ``{model: ModelCalibration}``.
        n_boot: Bootstrap resamples for the Internal - Pop interval.
        confidence_level: Level of that interval.
        n_bins: Bins of the ECE.
        seed: Seed of the bootstrap (None when a ``SeedSequence`` or ``Generator`` was given).
    """

    models: tuple[str, ...]
    per_model: Mapping[str, ModelCalibration]
    n_boot: int
    confidence_level: float
    n_bins: int
    seed: int | None

    @property
    def table(self) -> pd.DataFrame:
        """One row per model, one column per metric (the CI split into ``_low``/``_high``)."""
        rows = []
        for name in self.models:
            d = dataclasses.asdict(self.per_model[name])
            low, high = d.pop("auroc_diff_ci")
            d["auroc_diff_ci_low"], d["auroc_diff_ci_high"] = low, high
            rows.append(d)
        return pd.DataFrame(rows)


def _model_calibration(
    model: str,
    rows: pd.DataFrame,
    pop: pd.Series,
    *,
    n_boot: int,
    confidence_level: float,
    n_bins: int,
    rng: int | np.random.SeedSequence,
) -> ModelCalibration:
    conf_all = rows["confidence"].to_numpy(dtype=float)
    corr_all = rows["correct"].to_numpy(dtype=float)
    n_unparseable = int(np.isnan(conf_all).sum())
    n_ungraded = int((~np.isnan(conf_all) & np.isnan(corr_all)).sum())
    ok = ~np.isnan(conf_all) & ~np.isnan(corr_all)
    c, y = conf_all[ok], corr_all[ok]
    p = pop.to_numpy(dtype=float)[ok]
    nan = float("nan")
    if y.size == 0:
        return ModelCalibration(
            model, 0, n_unparseable, n_ungraded, *([nan] * 5), 0, nan, (nan, nan), nan,
            *([nan] * 5),
        )  # fmt: skip
    has_pop = ~np.isnan(p)
    # the same midrank AUROC as auroc() (sklearn), without its per-call validation overhead,
    # from each score's level codes (one sort per score)
    lev_c = np.unique(c, return_inverse=True)[1]
    internal = _levels_auroc(lev_c, y)
    every_pop = bool(has_pop.all())
    lev_c_pop = lev_c if every_pop else lev_c[has_pop]
    y_pop = y if every_pop else y[has_pop]
    lev_p = np.unique(p[has_pop], return_inverse=True)[1]
    pop_auc = _levels_auroc(lev_p, y_pop)
    internal_on_pop = _levels_auroc(lev_c_pop, y_pop)
    diff = internal_on_pop - pop_auc
    ci = (nan, nan)
    p_value = nan
    if n_boot > 0 and np.isfinite(diff):
        gen = np.random.default_rng(child_sequence(rng, model))
        diffs = _paired_level_bootstrap(lev_c_pop, lev_p, y_pop, n_boot, gen)
        diffs = diffs[np.isfinite(diffs)]
        if diffs.size:
            alpha = 1.0 - confidence_level
            ci = (
                float(np.quantile(diffs, alpha / 2)),
                float(np.quantile(diffs, 1 - alpha / 2)),
            )
            # (1 + count) / (B + 1), as the permutation p-values: never exactly 0 from B draws
            b = diffs.size
            low = (1 + int((diffs <= 0).sum())) / (b + 1)
            high = (1 + int((diffs >= 0).sum())) / (b + 1)
            p_value = float(min(1.0, 2 * min(low, high)))
    curve = _risk_curve(c, y)  # once for AURC and E-AURC (the same values as aurc(), eaurc())
    k = np.arange(1, y.size + 1)
    risk = float(curve.mean())
    excess = float(curve.mean() - (np.maximum(0.0, k - y.sum()) / k).mean())
    return ModelCalibration(
        model=model,
        n_items=int(y.size),
        n_unparseable=n_unparseable,
        n_ungraded=n_ungraded,
        accuracy=float(y.mean()),
        yes_rate=float((c >= 0.5).mean()),
        mean_confidence=float(c.mean()),
        auroc_internal=internal,
        auroc_pop=pop_auc,
        n_items_pop=int(has_pop.sum()),
        auroc_diff=float(diff),
        auroc_diff_ci=ci,
        auroc_diff_p=p_value,
        brier=brier_score(c, y),
        ece=ece(c, y, n_bins=n_bins, strategy="uniform"),
        ece_equal_mass=ece(c, y, n_bins=n_bins, strategy="quantile"),
        aurc=risk,
        eaurc=excess,
        auroc_internal_on_pop=float(internal_on_pop),
    )


def calibration_by_model(
    records: pd.DataFrame,
    *,
    n_boot: int = 1000,
    confidence_level: float = 0.95,
    n_bins: int = 10,
    rng: SeedLike = 0,
    workers: int | None = None,
) -> CalibrationResult:
    """Calibration metrics of every model in one group of records.

    Each model is scored on its own graded items (rows with a confidence and a grade), not on the
    items every model shares, so partial coverage costs a model nothing. The population baseline
    for a model is, per item it answered, the mean confidence of the other models that answered
    that item (leave-one-out, so the model's own signal does not leak in). The Internal - Pop
    AUROC difference gets a paired item bootstrap (the same resampled items for both scores),
    seeded per model.

    Args:
        records: Long table of one benchmark/probe/confidence kind with ``model``, ``item_id``,
            ``confidence`` and ``correct`` (one row per model and item).
        n_boot: Bootstrap resamples (0 skips the interval).
        confidence_level: Level of the bootstrap interval.
        n_bins: ECE bins.
        rng: Bootstrap seed, ``SeedSequence`` or ``Generator``; each model's stream depends
            only on it and the model's name.
        workers: Threads over the models (default: the CPU count); results do not depend on
            it.

    Returns:
        A :class:`CalibrationResult`.

    Raises:
        ValueError: If columns are missing or a model repeats an item.
    """
    missing = {"model", "item_id", "confidence", "correct"} - set(records.columns)
    if missing:
        raise ValueError(f"calibration_by_model: missing column(s) {sorted(missing)}")
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    df = records[["model", "item_id", "confidence", "correct"]].copy()
    df["model"] = _text_or_missing(df["model"])
    df["item_id"] = _text_or_missing(df["item_id"])
    m_codes, m_uniq = pd.factorize(df["model"])
    i_codes, i_uniq = pd.factorize(df["item_id"])
    cell = m_codes.astype(np.int64) * max(len(i_uniq), 1) + i_codes
    if _has_repeats(cell, len(m_uniq) * max(len(i_uniq), 1)):
        _, first_at, seen = np.unique(cell, return_index=True, return_counts=True)
        dup = np.isin(cell, cell[first_at[seen > 1]])
        first = df[dup].iloc[0]
        raise ValueError(
            f"calibration_by_model: {int(dup.sum())} rows repeat a (model, item_id), e.g. "
            f"model {first['model']!r} item {first['item_id']!r}; pass one benchmark, probe and "
            "confidence kind at a time"
        )
    root = int(rng) if isinstance(rng, int | np.integer) or rng is None else seed_sequence(rng)
    pop = _leave_one_out_mean(df, i_codes)
    models = tuple(str(m) for m in m_uniq)
    # each model's rows, in their order, from one stable sort of the model codes (a radix sort
    # when they fit 16 bits)
    small = np.int16 if len(models) < 2**15 else np.int64
    order = np.argsort(m_codes.astype(small), kind="stable")
    bounds = np.searchsorted(m_codes[order], np.arange(len(models) + 1))

    def one(j: int) -> ModelCalibration:
        rows = order[bounds[j] : bounds[j + 1]]
        return _model_calibration(
            models[j],
            df.iloc[rows],
            pop.iloc[rows],
            n_boot=int(n_boot),
            confidence_level=float(confidence_level),
            n_bins=int(n_bins),
            rng=root,
        )

    # Models on a thread pool (NumPy's sorts and the bootstrap draws release the GIL); each
    # model's stream depends on the seed and its name only, so the result does not depend on it.
    fitted = map_threads(one, range(len(models)), workers)
    per_model = dict(zip(models, fitted))
    return CalibrationResult(
        models=models,
        per_model=per_model,
        n_boot=int(n_boot),
        confidence_level=float(confidence_level),
        n_bins=int(n_bins),
        seed=root if isinstance(root, int) else None,
    )
