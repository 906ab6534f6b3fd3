"""Inspect metrics over the metacog score value ``{"confidence", "correct", "parsed", "graded"}``.

Inspect metrics only see ``Score`` objects (never ``state.metadata``), so the scorer puts the
confidence, the correctness and the parse flags into ``Score.value`` and every metric here reads
the whole dict. ``accuracy``/``stderr`` follow the task's epoch reducer (one value per sample)
and count an item that could not be graded wrong (``accuracy_graded`` leaves it out,
``ungraded`` counts it);
the calibration metrics are ``scores="unreduced"``: with ``--epochs n`` they see one
(confidence, correct) pair per sample *per epoch*, so the mean reducer cannot turn correctness
fractional under them. The statistics come from :mod:`metacog_metrics`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Value,
    metric,
)
from inspect_ai.scorer import accuracy as _inspect_accuracy
from inspect_ai.scorer import stderr as _inspect_stderr

from metacog_tasks.inspect_tasks._naming import qualified

__all__ = [
    "accuracy",
    "accuracy_graded",
    "auroc",
    "brier",
    "default_metrics",
    "ece",
    "stderr",
    "tetrachoric",
    "ungraded",
    "unparseable_rate",
    "yes_rate",
]


def _values(value: object, key: str) -> list[float]:
    """``value[key]`` as floats; a multi-step value (SciCode ``mode=problem``) gives one per step.

    Missing, ``None`` or non-numeric entries become NaN.
    """

    def num(x: object) -> float:
        return float(x) if isinstance(x, bool | int | float) else math.nan

    if not isinstance(value, dict):
        return [math.nan]
    n_steps = value.get("n_steps")
    if isinstance(n_steps, int | float) and not isinstance(n_steps, bool) and n_steps >= 1:
        return [num(value.get(f"{key}_{i}")) for i in range(1, round(n_steps) + 1)]
    return [num(value.get(key))]


def _field(scores: Sequence[SampleScore], key: str) -> np.ndarray:
    """One field of the dict values as floats, per sample (per step in multi-step values)."""
    out = [v for s in scores for v in _values(s.score.value, key)]
    return np.asarray(out, dtype=float)


def _pairs(scores: Sequence[SampleScore]) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, correct) over the samples (steps) where both are known."""
    conf, correct = _field(scores, "confidence"), _field(scores, "correct")
    keep = ~(np.isnan(conf) | np.isnan(correct))
    return conf[keep], correct[keep]


def _on_pairs(stat: Callable[[np.ndarray, np.ndarray], Any]) -> Metric:
    """A metric computing ``stat(confidence, correct)`` over the complete pairs (NaN: none)."""

    def compute(scores: list[SampleScore]) -> Value:
        conf, correct = _pairs(scores)
        return float(stat(conf, correct)) if conf.size else math.nan

    return compute


def _projected(
    scores: Sequence[SampleScore], key: str, missing: float | None = None
) -> list[SampleScore]:
    """Scores whose value is the scalar ``value[key]`` (one per step); NaN is dropped, or
    replaced by ``missing`` when one is given."""
    return [
        SampleScore(
            score=Score(value=v if not math.isnan(v) else missing),
            sample_id=s.sample_id,
            sample_metadata=s.sample_metadata,
            scorer=s.scorer,
        )
        for s in scores
        for v in _values(s.score.value, key)
        if not (math.isnan(v) and missing is None)
    ]


@metric(qualified("accuracy"))
def accuracy() -> Metric:
    """Share of items answered correctly, an item that could not be graded counted wrong
    (:func:`accuracy_graded` leaves those out; :func:`ungraded` counts them).

    Returns:
        The accuracy metric (Inspect's own ``accuracy`` over ``value["correct"]``).
    """
    inner = _inspect_accuracy()

    def compute(scores: list[SampleScore]) -> Value:
        projected = _projected(scores, "correct", missing=0.0)
        return inner(projected) if projected else math.nan

    return compute


@metric(qualified("accuracy_graded"))
def accuracy_graded() -> Metric:
    """Share of graded items answered correctly (ungraded items are left out).

    Returns:
        The graded-only accuracy metric.
    """
    inner = _inspect_accuracy()

    def compute(scores: list[SampleScore]) -> Value:
        projected = _projected(scores, "correct")
        return inner(projected) if projected else math.nan

    return compute


@metric(qualified("ungraded"))
def ungraded() -> Metric:
    """Number of items (steps) the grader could not grade (``correct`` NaN): missing targets,
    a sandbox that never started, a grader error.

    Returns:
        The count metric.
    """

    def compute(scores: list[SampleScore]) -> Value:
        return float(np.isnan(_field(scores, "correct")).sum())

    return compute


@metric(qualified("stderr"))
def stderr() -> Metric:
    """Standard error of :func:`accuracy` (Inspect's ``stderr``; clustered by sample).

    Returns:
        The standard-error metric.
    """
    inner = _inspect_stderr()

    def compute(scores: list[SampleScore]) -> Value:
        projected = _projected(scores, "correct", missing=0.0)
        return inner(projected) if len(projected) > 1 else math.nan

    return compute


@metric(qualified("yes_rate"), scores="unreduced")
def yes_rate() -> Metric:
    """Mean confidence over parsed probes: the share of "yes" for a binary probe.

    Returns:
        The yes-rate metric.
    """

    def compute(scores: list[SampleScore]) -> Value:
        conf = _field(scores, "confidence")
        conf = conf[~np.isnan(conf)]
        return float(conf.mean()) if conf.size else math.nan

    return compute


@metric(qualified("unparseable_rate"), scores="unreduced")
def unparseable_rate() -> Metric:
    """Share of probes whose reply gave no verdict (``parsed == 0``).

    Returns:
        The unparseable-rate metric.
    """

    def compute(scores: list[SampleScore]) -> Value:
        parsed = _field(scores, "parsed")
        parsed = parsed[~np.isnan(parsed)]
        return float(1.0 - parsed.mean()) if parsed.size else math.nan

    return compute


@metric(qualified("auroc"), scores="unreduced")
def auroc() -> Metric:
    """AUROC of confidence for correctness (NaN when all answers are right or all wrong).

    Returns:
        The AUROC metric.
    """
    from metacog_metrics import auroc as _auroc

    return _on_pairs(_auroc)


@metric(qualified("brier"), scores="unreduced")
def brier() -> Metric:
    """Brier score of confidence against correctness (lower is better).

    Returns:
        The Brier metric.
    """
    from metacog_metrics import brier_score

    return _on_pairs(brier_score)


@metric(qualified("ece"), scores="unreduced")
def ece(n_bins: int = 10) -> Metric:
    """Expected calibration error on equal-width bins (lower is better).

    Args:
        n_bins: Number of confidence bins (10, as in the lm-eval tasks).

    Returns:
        The ECE metric.
    """
    from metacog_metrics import ece as _ece

    return _on_pairs(functools.partial(_ece, n_bins=n_bins, strategy="uniform"))


@metric(qualified("tetrachoric"), scores="unreduced")
def tetrachoric() -> Metric:
    """Tetrachoric correlation of confidence with correctness.

    Continuous confidences (sampled, numeric) are binarised at 0.5, as in the analysis and the
    lm-eval tasks. NaN when either variable is constant.

    Returns:
        The tetrachoric metric.
    """
    from metacog_metrics import confidence_tetrachoric

    return _on_pairs(confidence_tetrachoric)


def default_metrics() -> list[Metric]:
    """The metric set of the metacog scorers, in display order."""
    return [
        accuracy(),
        stderr(),
        accuracy_graded(),
        ungraded(),
        yes_rate(),
        auroc(),
        brier(),
        ece(),
        tetrachoric(),
        unparseable_rate(),
    ]
