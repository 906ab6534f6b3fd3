"""Corpus-level aggregations of the metacog lm-eval tasks.

lm-eval calls an aggregation with the list of per-document values of one metric key, in
document order. The per-document values that :class:`~metacog_tasks.lmeval.task.MetacogTask`
emits are:

* ``acc``: 1.0 / 0.0 correctness, an item that could not be graded counted wrong (0.0);
* ``acc_graded``: the same, NaN for an item that could not be graded (left out of its mean);
* ``ungraded``: 1.0 for an item that could not be graded, else 0.0 (summed);
* ``yes_rate_<kind>``, ``unparseable_<kind>``: a float (NaN when the probe gave no verdict);
* ``auroc_<kind>``, ``brier_<kind>``, ``ece_<kind>``, ``tetrachoric_<kind>``: a
  ``(confidence, correct)`` pair, either of which may be NaN;
* ``record``: the item's record (a dict), counted.

The functions are plain module-level callables that the task returns from ``aggregation()``,
so they resolve without any registry lookup. They are also registered in lm-eval's aggregation
registry under ``metacog_<name>`` for users who write their own YAML around them. The statistics
themselves come from :mod:`metacog_metrics` (no re-implementation here).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from lm_eval.api.metrics import mean as _lm_mean
from lm_eval.api.registry import AGGREGATION_REGISTRY, register_aggregation

__all__ = [
    "accuracy",
    "auroc",
    "brier",
    "count_records",
    "count_ungraded",
    "ece",
    "rate",
    "tetrachoric",
]

#: lm-eval's own ``mean``: the identity check in ``stderr_for_metric`` gives it a closed-form
#: standard error, which any other callable would lose ("N/A"). Over every item: the task
#: emits 0.0 for an item that could not be graded (``rate`` of ``acc_graded`` leaves it out).
accuracy: Callable[[Sequence[float]], float] = _lm_mean


def _pairs(items: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Split ``(confidence, correct)`` pairs into two float arrays (None becomes NaN)."""
    if len(items) == 0:
        return np.empty(0), np.empty(0)
    arr = np.array(
        [[math.nan if v is None else float(v) for v in pair] for pair in items], dtype=float
    )
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"expected (confidence, correct) pairs, got shape {arr.shape}")
    return arr[:, 0], arr[:, 1]


def _on_pairs(items: Sequence[Any], stat: Callable[[np.ndarray, np.ndarray], Any]) -> float:
    """``stat(confidence, correct)`` over the complete pairs; NaN when none is left."""
    conf, correct = _pairs(items)
    keep = ~(np.isnan(conf) | np.isnan(correct))
    if not keep.any():
        return math.nan
    return float(stat(conf[keep], correct[keep]))


def rate(items: Sequence[float | None]) -> float:
    """Mean of the non-missing per-document values.

    Used for ``yes_rate_<kind>`` (mean confidence over parsed probes) and
    ``unparseable_<kind>`` (share of probes without a verdict).

    Args:
        items: Per-document floats; ``None``/NaN are skipped.

    Returns:
        The mean, NaN when no value is left.
    """
    values = np.array([math.nan if v is None else float(v) for v in items], dtype=float)
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else math.nan


def auroc(items: Sequence[Any]) -> float:
    """AUROC of confidence for correctness.

    Args:
        items: Per-document ``(confidence, correct)`` pairs; pairs with a missing value are
            skipped.

    Returns:
        ``metacog_metrics.calibration.auroc``; NaN when one class is absent.
    """
    from metacog_metrics import auroc as _auroc

    return _on_pairs(items, _auroc)


def brier(items: Sequence[Any]) -> float:
    """Brier score of confidence against correctness (lower is better).

    Args:
        items: Per-document ``(confidence, correct)`` pairs; incomplete pairs are skipped.

    Returns:
        ``metacog_metrics.calibration.brier_score``; NaN when no pair is left.
    """
    from metacog_metrics import brier_score

    return _on_pairs(items, brier_score)


def ece(items: Sequence[Any]) -> float:
    """Expected calibration error, 10 equal-width bins (lower is better).

    Args:
        items: Per-document ``(confidence, correct)`` pairs; incomplete pairs are skipped.

    Returns:
        ``metacog_metrics.calibration.ece``; NaN when no pair is left.
    """
    from metacog_metrics import ece as _ece

    return _on_pairs(items, functools.partial(_ece, n_bins=10, strategy="uniform"))


def tetrachoric(items: Sequence[Any]) -> float:
    """Tetrachoric correlation of the yes/no confidence with correctness.

    Continuous confidences (log-probability, sampled, numeric) are binarised at 0.5, as the
    analysis does.

    Args:
        items: Per-document ``(confidence, correct)`` pairs; incomplete pairs are skipped.

    Returns:
        ``metacog_metrics.calibration.confidence_tetrachoric``; NaN when either variable is
        constant.
    """
    from metacog_metrics import confidence_tetrachoric

    return _on_pairs(items, confidence_tetrachoric)


def count_ungraded(items: Sequence[float | None]) -> int:
    """Number of items the grader could not grade (the grader's side: missing targets, a
    sandbox that never started, a grader error), shown beside the accuracy.

    Args:
        items: Per-document ``ungraded`` flags (1.0 / 0.0).

    Returns:
        How many are set.
    """
    return int(sum(1 for v in items if v is not None and float(v) == 1.0))


def count_records(items: Sequence[Any]) -> int:
    """Number of per-item records (the ``record`` key carries them into the sample logs).

    Args:
        items: The per-document record dicts.

    Returns:
        Their number.
    """
    return len(items)


_REGISTERED = {
    "metacog_accuracy": accuracy,
    "metacog_rate": rate,
    "metacog_auroc": auroc,
    "metacog_brier": brier,
    "metacog_ece": ece,
    "metacog_tetrachoric": tetrachoric,
    "metacog_count": count_records,
    "metacog_count_ungraded": count_ungraded,
}


def _register() -> None:
    # Idempotent: lm-eval raises when an alias is re-registered with another object.
    for name, fn in _REGISTERED.items():
        if AGGREGATION_REGISTRY.get(name, None) is None:
            register_aggregation(name)(fn)


_register()
