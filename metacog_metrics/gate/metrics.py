"""The gated metrics and their weighted forms for the paired item bootstrap.

A bootstrap resample is a row of counts over items (how often each item was drawn); every
metric here takes a matrix of such rows and returns one value per row, so all resamples of a
group are computed at once. With repeated runs (epochs, repeats) an item has several records on
a side: the weights are the item's, spread over its records (a cluster bootstrap).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Mapping
from typing import Literal

import numpy as np

from metacog_metrics.calibration import _bin_ids

__all__ = [
    "DEFAULT_MARGINS",
    "METRICS",
    "Direction",
    "MetricSpec",
    "bootstrap_weights",
    "metric_values",
]

Direction = Literal["higher", "lower", "two-sided"]


@dataclasses.dataclass(frozen=True)
class MetricSpec:
    """A gated metric.

    Attributes:
        name: Metric name.
        direction: ``higher`` or ``lower`` is better, or ``two-sided`` (a change either way).
        margin: Default margin, in the metric's own units.
        per_kind: Computed per confidence kind (else once per benchmark, over its probes).
        needs_population: Needs a reference population's confidence.
        description: One line.
    """

    name: str
    direction: Direction
    margin: float
    per_kind: bool
    needs_population: bool
    description: str


#: The metrics, their directions and default margins (docs/gate.md says why each margin).
METRICS: Mapping[str, MetricSpec] = {
    s.name: s
    for s in (
        MetricSpec(
            "auroc", "higher", 0.03, True, False, "AUROC of the model's own confidence (Internal)"
        ),
        MetricSpec(
            "internal_pop_gap",
            "higher",
            0.03,
            True,
            True,
            "Internal AUROC minus the AUROC of the reference population's mean confidence",
        ),
        MetricSpec("brier", "lower", 0.02, True, False, "Brier score"),
        MetricSpec(
            "ece",
            "lower",
            0.02,
            True,
            False,
            "expected calibration error (equal-width bins; for 0/1 confidence it equals the "
            "Brier score and is not tested separately)",
        ),
        MetricSpec(
            "accuracy",
            "higher",
            0.02,
            False,
            False,
            "share of items answered correctly (ungraded items count as wrong by default)",
        ),
        MetricSpec("yes_rate", "two-sided", 0.05, True, False, "share of confidence >= 0.5"),
        MetricSpec("unparseable", "lower", 0.02, True, False, "share of unparseable probes"),
    )
}
#: Default margins.
DEFAULT_MARGINS: Mapping[str, float] = {k: s.margin for k, s in METRICS.items()}


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _w_mean(w: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    # two matrix-vector products: selecting the columns (w[:, mask]) would copy the weights
    m = mask.astype(float)
    return _ratio(w @ np.where(mask, x, 0.0), w @ m)


def _w_auroc(w: np.ndarray, score: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Weighted AUROC (ties count 1/2; a fractional ``y`` is split between the classes);
    NaN in a resample without both classes."""
    if not mask.any():
        return np.full(w.shape[0], np.nan)
    s, yy, ws = score[mask], y[mask], w[:, mask]
    order = np.argsort(s, kind="stable")
    s, yy, ws = s[order], yy[order], ws[:, order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    pos = np.add.reduceat(ws * yy, starts, axis=1)
    neg = np.add.reduceat(ws * (1.0 - yy), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    num = (pos * (below + 0.5 * neg)).sum(axis=1)
    return _ratio(num, pos.sum(axis=1) * neg.sum(axis=1))


def _w_ece(
    w: np.ndarray, c: np.ndarray, y: np.ndarray, mask: np.ndarray, n_bins: int
) -> np.ndarray:
    if not mask.any():
        return np.full(w.shape[0], np.nan)
    cm, ym = c[mask], y[mask]
    bins = _bin_ids(cm, n_bins, "uniform")
    order = np.argsort(bins, kind="stable")
    ws = w[:, mask][:, order]
    starts = np.flatnonzero(np.r_[True, bins[order][1:] != bins[order][:-1]])
    gap = np.add.reduceat(ws * (cm - ym)[order], starts, axis=1)
    return _ratio(np.abs(gap).sum(axis=1), ws.sum(axis=1))


def metric_values(
    metric: str,
    w: np.ndarray,
    conf: np.ndarray,
    correct: np.ndarray,
    pop: np.ndarray | None = None,
    n_bins: int = 10,
    *,
    ungraded_wrong: bool = True,
) -> np.ndarray:
    """The metric on one side for each resample (row of ``w``, one column per record).

    Args:
        metric: A key of :data:`METRICS`.
        w: Weights, resamples x records.
        conf: Confidence per record (NaN: unparseable).
        correct: Correctness per record (NaN: ungraded).
        pop: The population's mean confidence per record (``internal_pop_gap`` only).
        n_bins: ECE bins.
        ungraded_wrong: Accuracy counts an ungraded record as wrong (else leaves it out).

    Returns:
        One value per resample; NaN where the metric is undefined.

    Raises:
        KeyError: An unknown metric.
    """
    has_c, has_y = ~np.isnan(conf), ~np.isnan(correct)
    valid = has_c & has_y
    c0, y0 = np.nan_to_num(conf), np.nan_to_num(correct)
    if metric == "auroc":
        return _w_auroc(w, c0, y0, valid)
    if metric == "internal_pop_gap":
        assert pop is not None
        both = valid & ~np.isnan(pop)
        return _w_auroc(w, c0, y0, both) - _w_auroc(w, np.nan_to_num(pop), y0, both)
    if metric == "brier":
        return _w_mean(w, (c0 - y0) ** 2, valid)
    if metric == "ece":
        return _w_ece(w, c0, y0, valid, n_bins)
    if metric == "accuracy":
        return _w_mean(w, y0, np.ones_like(has_y) if ungraded_wrong else has_y)
    if metric == "yes_rate":
        return _w_mean(w, (c0 >= 0.5).astype(float), has_c)
    if metric == "unparseable":
        return _w_mean(w, (~has_c).astype(float), np.ones_like(has_c))
    raise KeyError(metric)


def _stable_int(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def bootstrap_weights(
    n: int, n_boot: int, seed: int, key: str, chunk: int = 256
) -> Iterator[np.ndarray]:
    """Bootstrap counts (resamples x items) in chunks, fixed by ``(seed, key)``.

    Args:
        n: Items.
        n_boot: Resamples.
        seed: Seed.
        key: The group's name (each group has its own draws).
        chunk: Resamples per chunk (memory).

    Yields:
        Float arrays of counts, ``min(chunk, rest)`` x ``n``; each row sums to ``n``.
    """
    rng = np.random.default_rng([int(seed), _stable_int(key)])
    done = 0
    while done < n_boot:
        size = min(chunk, n_boot - done)
        # n draws with replacement per resample, counted per item (= a multinomial draw)
        idx = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
        yield np.bincount(idx.ravel(), minlength=size * n).reshape(size, n).astype(float)
        done += size
