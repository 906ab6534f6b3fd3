"""The test of private signal: confidence rows permuted among items of the same response pattern.

Under "no private signal" a model's confidence and its correctness are independent *given the
item*: ``conf_i`` and ``perf_i`` (the item's rows over models) are independent given the item's
latent parameters ``xi_i``, which may relate to the confidence in any way (shared difficulty,
shared misreading). A permutation of whole confidence rows among items is then exact when the
items it mixes have the same posterior for ``xi_i`` given their correctness rows, i.e. when the
statistic the permutation holds fixed is sufficient for ``xi_i``:

* Rasch (one slope): the pass count ``k_i = sum_j y_ij`` is sufficient; permuting within
  ``k`` is exact (:mod:`metacog_metrics.stratified`).
* 2PL (a slope ``a_i`` per item, ``logit P = a_i theta_j - a_i b_i``): the likelihood of the row
  is ``exp(-a_i b_i k_i + a_i s_i) / normaliser`` with ``s_i = sum_j theta_j y_ij``, so the pair
  ``(k_i, s_i)`` is sufficient. Within a ``k`` stratum, items of equal ability-weighted score
  ``s`` are exchangeable whatever their discrimination; ``k`` alone mixes steep items (correct
  answers concentrated on the able models) with flat ones.
* 3PL (a lower asymptote ``c_i``): no finite sufficient statistic exists, but ``(k, s)``
  separates what guessing changes (correct answers spread over the weak models, a low ``s``
  for its ``k``) from steep items.

So the null here permutes confidence rows among items with the same ``k`` and nearly the same
``s``: within each ``k`` stratum the items are sorted by ``s`` and cut into consecutive blocks of
``block_size`` items (the last block takes the remainder). Abilities are the probit of each
model's accuracy (``s`` needs ``theta`` only up to an affine map, since ``k`` is held fixed).
The blocks narrow as items grow (a block of 10 spans a tenth as much ``s`` with ten times the
items), so the approximation improves exactly where the ``k``-only null failed.

Measured size (alpha 0.05, 20 models, 99 draws, no private signal, 400 replicates a cell;
``bench/bench_size.py``, ``metacog power``'s size table, the README): 0.045-0.063 under Rasch,
0.040-0.070 under 2PL (lognormal discrimination sd 1.0) and 0.053-0.060 under 3PL (c = 0.25) at
1,000, 3,000 and 10,000 items, all within Monte Carlo error of 0.05 (standard error about
0.011), where the ``k``-only null rejected at up to 0.153. The construction is approximate
outside the 2PL logistic model; its size was measured, not proven, for the shapes listed. Items
that draw on several abilities (tracks or subjects mixed in one group) are outside them: two
tracks with ability correlation 0.3 and track-shifted confidence gave 0.065 at 524 items and
0.075 at 2,000 (200 replicates each), so ``groups`` (a pooled analysis passes the benchmarks)
keeps exchanges within a group and estimates abilities per group.

The statistic is the mean Kendall tau-b of ``dconf`` vs ``dperf`` over model pairs, recomputed
for each permutation with the pairwise engine's two-product path
(:func:`metacog_metrics.stratified.stratified_null_draws`); the test is one-sided
(``greater``) with ``p = (1 + #{null >= obs}) / (B + 1)``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special
from threadpoolctl import threadpool_limits

from metacog_metrics._conventions import SeedLike, tie_tolerance
from metacog_metrics._result import Result
from metacog_metrics.stratified import mean_taus, stratified_null_draws

__all__ = [
    "COLOUR",
    "DEFAULT_BLOCK_SIZE",
    "LABEL",
    "PrivateSignalTestResult",
    "ability_scores",
    "pattern_strata",
    "permutations_within",
    "private_signal_test",
]

#: Items per (pass count, ability-weighted score) block.
DEFAULT_BLOCK_SIZE = 10
#: The test's null as reports name and draw it (beside the pairwise nulls' labels and colours,
#: :func:`metacog_metrics.pairwise.nulls.get_null`).
LABEL = "private-signal test null"
COLOUR = "#2ca02c"


def ability_scores(perf: ArrayLike) -> NDArray[np.float64]:
    """Each model's ability on the probit scale: ``Phi^-1`` of its accuracy.

    Accuracies of 0 or 1 are moved half an item inwards (``0.5 / n``) so the scores are finite.
    """
    y = np.asarray(perf, dtype=float)
    n = max(y.shape[0], 1)
    acc = np.clip(y.mean(axis=0), 0.5 / n, 1.0 - 0.5 / n)
    return special.ndtri(acc)


def pattern_strata(
    perf: ArrayLike, block_size: int = DEFAULT_BLOCK_SIZE, groups: ArrayLike | None = None
) -> NDArray[np.int64]:
    """Stratum labels: pass count, then blocks of nearly equal ability-weighted score.

    Args:
        perf: ``(items, models)`` 0/1 correctness.
        block_size: Items per block within a pass-count stratum (a stratum with fewer than
            ``2 * block_size`` items is one block); a huge value gives the pass-count strata.
        groups: Per item, a group (e.g. its benchmark) that no stratum crosses; each group's
            strata use abilities from its own items, so items that draw on different abilities
            are never exchanged. None: one group.

    Returns:
        ``(items,)`` integer labels; items with equal labels have equal pass counts (and group).
    """
    y = np.asarray(perf, dtype=float)
    if y.ndim != 2:
        raise ValueError(f"perf must be (items, models), got shape {y.shape}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    labels = np.empty(y.shape[0], dtype=np.int64)
    if groups is None:
        parts = [np.arange(y.shape[0])]
    else:
        g = np.asarray(groups)
        if g.shape != (y.shape[0],):
            raise ValueError(f"groups must have one entry per item ({y.shape[0]}), got {g.shape}")
        parts = [np.flatnonzero(g == v) for v in dict.fromkeys(g.tolist())]
    next_label = 0
    for rows in parts:
        sub = _strata(y[rows], block_size)
        labels[rows] = sub + next_label
        next_label += int(sub.max()) + 1 if sub.size else 0
    return labels


def _strata(y: NDArray, block_size: int) -> NDArray[np.int64]:
    k = np.rint(y.sum(axis=1)).astype(np.int64)
    s = y @ ability_scores(y)
    labels = np.empty(k.size, dtype=np.int64)
    next_label = 0
    for kk in np.unique(k):
        idx = np.flatnonzero(k == kk)
        ordered = idx[np.argsort(s[idx], kind="stable")]
        blocks = max(1, ordered.size // block_size)
        labels[ordered] = next_label + np.arange(ordered.size) * blocks // ordered.size
        next_label += blocks
    return labels


def permutations_within(labels: ArrayLike, n: int, rng: SeedLike = None) -> NDArray[np.intp]:
    """``n`` random permutations of the items within groups of equal label.

    Returns:
        ``(n, items)`` indices ``perm``: item ``i`` takes the row of item ``perm[i]``, and
        ``labels[perm[i]] == labels[i]``.
    """
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {lab.shape}")
    rng = np.random.default_rng(rng)
    _, codes = np.unique(lab, return_inverse=True)
    base = np.argsort(codes, kind="stable")
    sorted_codes = codes[base].astype(np.float64)
    # Sorting code + U(0, 1) shuffles each group and keeps the groups in order.
    shuffled = np.argsort(sorted_codes[None, :] + rng.random((n, lab.size)), axis=1, kind="stable")
    out = np.empty((n, lab.size), dtype=np.intp)
    out[:, base] = base[shuffled]
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class PrivateSignalTestResult(Result):
    """The mean tau against the (pass count, ability-weighted score) permutation null.

    Attributes:
        observed: Observed mean tau-b over pairs.
        null_mean: Mean of the null draws.
        null_sd: Their standard deviation.
        p_value: One-sided p-value (observed above the null), ``(1 + count) / (B + 1)``.
        permutations: Null draws (B).
        block_size: Items per block.
        n_strata: Strata with at least two items (the only ones that move).
        n_items_moving: Items in those strata.
        draws: The null draws.
        n_groups: Item groups (benchmarks) whose items are only exchanged among themselves.
    """

    observed: float
    null_mean: float
    null_sd: float
    p_value: float
    permutations: int
    block_size: int
    n_strata: int
    n_items_moving: int
    draws: NDArray[np.float64]
    n_groups: int = 1

    def summary(self) -> dict[str, Any]:
        """The ``pairwise.nulls.private_signal`` entry of ``summary.json``."""
        ok = self.draws[np.isfinite(self.draws)]
        return {
            "mean": self.null_mean,
            "sd": self.null_sd,
            "ci": tuple(np.quantile(ok, [0.025, 0.975])) if ok.size else (None, None),
            "p_value": self.p_value,
            "alternative": "greater",
            "n_draws": self.permutations,
            "block_size": self.block_size,
            "n_strata": self.n_strata,
            "n_items_moving": self.n_items_moving,
            "n_groups": self.n_groups,
        }


def _check(conf: ArrayLike, perf: ArrayLike) -> tuple[NDArray, NDArray]:
    c = np.asarray(conf, dtype=float)
    y = np.asarray(perf, dtype=float)
    if c.shape != y.shape or c.ndim != 2:
        raise ValueError(f"conf {c.shape} and perf {y.shape} must be equal (items, models)")
    if not (np.isin(c, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()):
        raise ValueError("conf and perf must be complete 0/1 matrices")
    return c, y


def private_signal_test(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    permutations: int = 999,
    block_size: int = DEFAULT_BLOCK_SIZE,
    rng: SeedLike = 0,
    groups: ArrayLike | None = None,
    workers: int | None = 1,
) -> PrivateSignalTestResult:
    """Test for private signal: is the mean tau above what items of the same pattern give?

    Args:
        conf: ``(items, models)`` 0/1 confidence, complete.
        perf: ``(items, models)`` 0/1 correctness, complete.
        permutations: Null draws.
        block_size: Items per (pass count, ability-weighted score) block.
        rng: Seed, ``SeedSequence`` or ``Generator``.
        groups: Per item, a group (its benchmark) whose items are only exchanged among
            themselves, with abilities from its own items (see :func:`pattern_strata`).
        workers: Threads for the null draws (None: one per CPU); the result does not depend
            on it.

    Returns:
        A :class:`PrivateSignalTestResult`.

    Raises:
        ValueError: Mismatched shapes, missing values, non-binary input or bad sizes.
    """
    c, y = _check(conf, perf)
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    labels = pattern_strata(y, block_size, groups)
    rng = np.random.default_rng(rng)
    with threadpool_limits(limits=1):
        observed = float(mean_taus(c, y))
        draws = stratified_null_draws(c, y, permutations_within(labels, permutations, rng), workers)
    ok = draws[np.isfinite(draws)]
    ties = ok >= observed - tie_tolerance(observed)
    p = (1.0 + np.sum(ties)) / (ok.size + 1.0) if ok.size else math.nan
    sizes = np.bincount(labels)
    return PrivateSignalTestResult(
        observed=observed,
        null_mean=float(ok.mean()) if ok.size else math.nan,
        null_sd=float(ok.std(ddof=1)) if ok.size > 1 else math.nan,
        p_value=float(p),
        permutations=int(permutations),
        block_size=int(block_size),
        n_strata=int((sizes >= 2).sum()),
        n_items_moving=int(sizes[sizes >= 2].sum()),
        draws=draws,
        n_groups=1 if groups is None else len(set(np.asarray(groups).tolist())),
    )
