"""Result types of the pairwise calibration."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from metacog_metrics._result import Result
from metacog_metrics.pairwise.nulls import headline_null


@dataclasses.dataclass(frozen=True, eq=False)
class PairTestResult(Result):
    """Per-pair permutation test of tau-b under one null.

    Attributes:
        null: The null.
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"``.
        permutations: Draws per pair (with ``sequential``: the most a pair gets).
        tau: Observed tau-b per pair.
        p_value: p-value of the chosen alternative, ``(1 + count) / (B + 1)``; two-sided is
            ``2 min(p_greater, p_less)`` clipped to 1 (SciPy's convention). Sequential: ``h /
            L`` for a side whose ``h``-th draw at least as extreme came at draw ``L``
            (:mod:`~metacog_metrics.pairwise.sequential`).
        p_greater: ``(1 + #{null >= tau}) / (B + 1)`` (sequential: or ``h / L``).
        p_less: ``(1 + #{null <= tau}) / (B + 1)`` (sequential: or ``h / L``).
        q_value: Benjamini-Hochberg adjusted ``p_value`` across the pairs with a p-value.
        null_mean: Mean of the pair's null draws (all it made, sequential or not).
        null_sd: Standard deviation of the pair's null draws.
        n_valid: Draws with a defined tau-b (sequential: those made before the pair stopped,
            rounded up to a whole round).
        engine: What drew the null tables: ``"numba"`` (the compiled kernels) or ``"numpy"``.
            Both draw from the same exact law; for the same seed their draws differ.
        sequential: ``h`` of the sequential p-values, 0 for fixed-n ones.
        settled: Per pair, whether its sequential test was settled: its remaining draws
            proven to miss by a concentration bound and counted as made
            (:mod:`~metacog_metrics.pairwise.tail_bounds`); its p-value is the fixed-n one at
            the cap, ``n_valid`` the draws actually made.
    """

    null: str
    alternative: str
    permutations: int
    tau: NDArray[np.float64]
    p_value: NDArray[np.float64]
    p_greater: NDArray[np.float64]
    p_less: NDArray[np.float64]
    q_value: NDArray[np.float64]
    null_mean: NDArray[np.float64]
    null_sd: NDArray[np.float64]
    n_valid: NDArray[np.int64]
    engine: str = "numpy"
    sequential: int = 0
    settled: NDArray[np.bool_] | None = None

    @property
    def n_settled(self) -> int:
        """Pairs whose test was settled by the bound."""
        return 0 if self.settled is None else int(np.count_nonzero(self.settled))


@dataclasses.dataclass(frozen=True, eq=False)
class MeanTauNull(Result):
    """The observed mean tau-b over pairs against joint draws of one null.

    Attributes:
        null: The null.
        observed: Observed mean tau-b over the pairs with a defined tau.
        mean: Mean of the null draws of the mean.
        sd: Their standard deviation.
        ci: 2.5% and 97.5% quantiles of the null draws.
        p_value: p-value of the chosen alternative (``(1 + count) / (K + 1)``).
        p_greater: One-sided p-value for observed above the null.
        p_less: One-sided p-value for observed below the null.
        n_draws: Joint draws (K).
        draws: The null draws of the mean (for histograms).
    """

    null: str
    observed: float
    mean: float
    sd: float
    ci: tuple[float, float]
    p_value: float
    p_greater: float
    p_less: float
    n_draws: int
    draws: NDArray[np.float64]


@dataclasses.dataclass(frozen=True, eq=False)
class DeltaCurve(Result):
    """Mean tau-b of the pairs whose accuracy gap is at most delta, with null bands.

    Attributes:
        delta: The grid.
        n_pairs: Pairs (with a defined tau) within each delta.
        mean_tau: Their observed mean tau-b (NaN below ``min_pairs``).
        null_mean: ``{null: mean of the joint null draws of that subset's mean}``.
        null_low: ``{null: 2.5% quantile}``.
        null_high: ``{null: 97.5% quantile}``.
        p_value: ``{null: p-value of the chosen alternative}``.
        min_pairs: Fewest pairs for a point.
    """

    delta: NDArray[np.float64]
    n_pairs: NDArray[np.int64]
    mean_tau: NDArray[np.float64]
    null_mean: dict[str, NDArray[np.float64]]
    null_low: dict[str, NDArray[np.float64]]
    null_high: dict[str, NDArray[np.float64]]
    p_value: dict[str, NDArray[np.float64]]
    min_pairs: int

    @property
    def table(self) -> pd.DataFrame:
        """One row per delta."""
        data: dict[str, Any] = {
            "delta": self.delta,
            "n_pairs": self.n_pairs,
            "mean_tau": self.mean_tau,
        }
        for null in self.null_mean:
            data[f"{null}_null_mean"] = self.null_mean[null]
            data[f"{null}_null_low"] = self.null_low[null]
            data[f"{null}_null_high"] = self.null_high[null]
            data[f"{null}_p_value"] = self.p_value[null]
        return pd.DataFrame(data)


@dataclasses.dataclass(frozen=True, eq=False)
class PairTypeSummary(Result):
    """Pairs of one reasoning type (R-R, R-NR or NR-NR).

    Attributes:
        pair_type: The type.
        n_pairs: Pairs with a defined tau.
        mean_tau: Their mean tau-b.
        null_mean: ``{null: mean of the joint null draws of their mean}``.
        p_value: ``{null: p-value of the chosen alternative}``.
        fdr_significant_share: ``{null: share of these pairs with q < fdr_alpha}``.
        median_tau: Their median tau-b (the paper quotes medians).
    """

    pair_type: str
    n_pairs: int
    mean_tau: float
    null_mean: dict[str, float]
    p_value: dict[str, float]
    fdr_significant_share: dict[str, float]
    median_tau: float = float("nan")


@dataclasses.dataclass(frozen=True, eq=False)
class PairwiseResult(Result):
    """Pairwise calibration of a set of models.

    Attributes:
        models: Model names.
        model_a: First model of each pair.
        model_b: Second model of each pair.
        tau: Observed tau-b per pair (NaN when dconf or dperf is constant).
        accuracy: Per model.
        accuracy_gap: ``|acc_A - acc_B|`` per pair.
        pair_type: Per pair ``"R-R"``, ``"R-NR"``, ``"NR-NR"`` or None (flag unknown).
        n_items: Items (with missing items: the union of the items any model answered).
        continuous: Whether the exact path for real-valued confidence was used.
        mean_tau: Mean tau-b over pairs with a defined tau.
        n_pairs: All pairs.
        n_pairs_valid: Pairs with a defined tau.
        per_pair: ``{null: PairTestResult}``.
        nulls: ``{null: MeanTauNull}``.
        fdr_alpha: FDR level.
        fdr_significant_share: Share of pairs whose q-value under the headline null
            (:func:`~metacog_metrics.pairwise.nulls.headline_null`) is below ``fdr_alpha``
            (``per_pair[null]`` has every null's).
        delta_curve: The :class:`DeltaCurve`.
        pair_types: ``{type: PairTypeSummary}`` (empty without reasoning flags).
        alternative: Alternative of the p-values.
        permutations: Per-pair draws.
        joint_permutations: Joint draws.
        n_items_pair: Per pair, the items both models answered, on which its tau-b, its
            per-pair nulls and its accuracy gap are computed (all ``n_items`` without missing
            items).
        min_pair_items: Fewest shared items for a pair to have a tau-b (fewer: NaN).
        joint_engine: What drew the joint draws (``"numba"`` or ``"numpy"``; None without
            joint draws): the same seed gives other draws on another engine.
        sequential: ``h`` of the sequential per-pair p-values, 0 for fixed-n ones.
    """

    models: tuple[str, ...]
    model_a: tuple[str, ...]
    model_b: tuple[str, ...]
    tau: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    accuracy_gap: NDArray[np.float64]
    pair_type: tuple[str | None, ...]
    n_items: int
    continuous: bool
    mean_tau: float
    n_pairs: int
    n_pairs_valid: int
    per_pair: Mapping[str, PairTestResult]
    nulls: Mapping[str, MeanTauNull]
    fdr_alpha: float
    fdr_significant_share: float
    delta_curve: DeltaCurve
    pair_types: Mapping[str, PairTypeSummary]
    alternative: str
    permutations: int
    joint_permutations: int
    n_items_pair: NDArray[np.int64] | None = None
    min_pair_items: int = 2
    joint_engine: str | None = None
    sequential: int = 0

    def fdr_share(self, null: str | None = None) -> float:
        """Share of pairs (with a p-value) whose q-value under ``null`` (default: the headline
        null) is below ``fdr_alpha``."""
        q = self.per_pair[headline_null() if null is None else null].q_value
        ok = np.isfinite(q)
        return float((q[ok] < self.fdr_alpha).mean()) if ok.any() else float("nan")

    def fdr_share_by_direction(self, null: str | None = None) -> dict[str, float]:
        """:meth:`fdr_share` split by direction: ``{"above": ..., "below": ...}``.

        A pair counts as "above" when its tau exceeds its own null mean, else "below"; the two
        shares (of the pairs with a p-value) add up to :meth:`fdr_share`.
        """
        res = self.per_pair[headline_null() if null is None else null]
        ok = np.isfinite(res.q_value)
        if not ok.any():
            return {"above": float("nan"), "below": float("nan")}
        sig = ok & (res.q_value < self.fdr_alpha)
        above = sig & (self.tau > res.null_mean)
        below = sig & ~(self.tau > res.null_mean)
        n = int(ok.sum())
        return {"above": float(above.sum() / n), "below": float(below.sum() / n)}

    @property
    def table(self) -> pd.DataFrame:
        """One row per pair: models, tau, accuracy gap, pair type, p/q per null."""
        data: dict[str, Any] = {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "tau": self.tau,
            "accuracy_a": self.accuracy[[self.models.index(m) for m in self.model_a]],
            "accuracy_b": self.accuracy[[self.models.index(m) for m in self.model_b]],
            "accuracy_gap": self.accuracy_gap,
            "pair_type": list(self.pair_type),
        }
        if self.n_items_pair is not None:
            data["n_items"] = self.n_items_pair
        for null, res in self.per_pair.items():
            data[f"{null}_p"] = res.p_value
            data[f"{null}_q"] = res.q_value
            data[f"{null}_null_mean"] = res.null_mean
            data[f"{null}_null_sd"] = res.null_sd
        return pd.DataFrame(data)
