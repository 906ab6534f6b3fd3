"""The whole pairwise analysis: both nulls per pair and for the mean, delta curve, pair types."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import seed_sequence, tie_tolerance
from metacog_metrics.pairwise.common import (
    DEFAULT_DELTAS,
    PAIR_TYPES,
    Alternative,
    Engine,
    SeedLike,
    _bh,
    _check,
    _check_alternative,
    _check_engine,
    _execute,
    _p_values,
    _pairs,
)
from metacog_metrics.pairwise.joint import _joint_plan, joint_inputs
from metacog_metrics.pairwise.masked import (
    check_ragged,
    observed_tables_or_taus,
    pair_item_groups,
    shared_counts,
)
from metacog_metrics.pairwise.nulls import get_null, headline_null, null_names
from metacog_metrics.pairwise.pair import _pair_plan
from metacog_metrics.pairwise.pair_draws import PairInputs
from metacog_metrics.pairwise.results import (
    DeltaCurve,
    MeanTauNull,
    PairTestResult,
    PairTypeSummary,
    PairwiseResult,
)
from metacog_metrics.pairwise.sequential import exceedances_of
from metacog_metrics.pairwise.tau import pairwise_taus


def _pair_types(reasoning: Sequence[bool | None] | None, ia: NDArray, ib: NDArray) -> list:
    if reasoning is None:
        return [None] * ia.size
    flags = list(reasoning)

    def kind(a: int, b: int) -> str | None:
        fa, fb = flags[a], flags[b]
        if fa is None or fb is None:
            return None
        return "R-R" if fa and fb else ("NR-NR" if not fa and not fb else "R-NR")

    return [kind(a, b) for a, b in zip(ia, ib)]


def _mean_null(null: str, observed: float, draws: NDArray, alternative: str) -> MeanTauNull:
    ok = np.isfinite(draws)
    d = draws[ok]
    nan = float("nan")
    if not d.size or not np.isfinite(observed):
        return MeanTauNull(null, observed, nan, nan, (nan, nan), nan, nan, nan, 0, draws)
    gamma = float(tie_tolerance(observed))
    ge = np.array([(d >= observed - gamma).sum()])
    le = np.array([(d <= observed + gamma).sum()])
    p, pg, pl = (float(v[0]) for v in _p_values(ge, le, np.array([d.size]), alternative))
    return MeanTauNull(
        null=null,
        observed=float(observed),
        mean=float(d.mean()),
        sd=float(d.std(ddof=1)) if d.size > 1 else nan,
        ci=(float(np.quantile(d, 0.025)), float(np.quantile(d, 0.975))),
        p_value=p,
        p_greater=pg,
        p_less=pl,
        n_draws=int(d.size),
        draws=draws,
    )


def _merge_pair_results(
    null: str, alternative: str, permutations: int, tau: NDArray,
    parts: Sequence[tuple[NDArray, PairTestResult]], exceedances: int = 0,
) -> PairTestResult:  # fmt: skip
    """One :class:`PairTestResult` over all pairs from the tests of groups of pairs (pairs in
    no group, too few shared items, stay NaN); BH across all of them."""
    nan = np.full(tau.shape, np.nan)
    out = {k: nan.copy() for k in ("p_value", "p_greater", "p_less", "null_mean", "null_sd")}
    n_valid = np.zeros(tau.shape, dtype=np.int64)
    settled = np.zeros(tau.shape, dtype=bool)
    engines = set()
    for idx, res in parts:
        for k, arr in out.items():
            arr[idx] = getattr(res, k)
        n_valid[idx] = res.n_valid
        if res.settled is not None:
            settled[idx] = res.settled
        engines.add(res.engine)
    return PairTestResult(
        null=null,
        alternative=alternative,
        permutations=permutations,
        tau=tau,
        q_value=_bh(out["p_value"]),
        n_valid=n_valid,
        engine=engines.pop() if len(engines) == 1 else "numpy",
        sequential=exceedances,
        settled=settled,
        **out,
    )


def _subset_mean(taus: NDArray, mask: NDArray) -> NDArray:
    """Mean over the masked pairs of (..., P) taus, ignoring NaN taus (NaN where a draw has
    none: written out because ``np.nanmean`` warns "Mean of empty slice" on such draws)."""
    return _SubsetMeans(taus.copy())(mask)


#: Bytes of draws gathered at a time by :class:`_SubsetMeans`.
_GATHER_BYTES = 64 << 20


class _SubsetMeans:
    """:func:`_subset_mean` of one ``(draws, P)`` array for many masks: its NaNs set to 0 in
    place once (the array is taken over) and its finite entries noted once, so each mask
    costs one gather and one sum (the same sums, to the last bit: the same values in the same
    order). At 300 models a mask took about half a second the other way, 26 masks a run."""

    def __init__(self, taus: NDArray) -> None:
        finite = np.isfinite(taus)
        self._all_finite = bool(finite.all())
        if not self._all_finite:
            if not taus.flags.writeable:  # e.g. a result received from a cluster
                taus = taus.copy()
            taus[~finite] = 0.0
        self._values, self._finite = taus, finite

    def __call__(self, mask: NDArray) -> NDArray:
        # always a gathered copy, as before: the gather of a (draws, P) array is column-major,
        # and NumPy sums its rows one column after the other, where a single row (or the
        # array in place) gets a pairwise sum: other last bits. Draws are gathered a block of
        # rows at a time, at least two rows a block, so every row keeps that order: at 1,000
        # models a copy of every draw would be 4 GB.
        if self._values.ndim < 2 or self._values.shape[0] < 4:
            return self._means(self._values, self._finite, mask)
        rows = self._values.shape[0]
        step = max(2, _GATHER_BYTES // max(8 * int(mask.sum()), 1))
        starts = [*range(0, rows - 2, step), rows]  # no block of one row at the end
        parts = [
            self._means(self._values[a:b], self._finite[a:b], mask)
            for a, b in itertools.pairwise(starts)
        ]
        return np.concatenate(parts)

    def _means(self, values: NDArray, finite: NDArray, mask: NDArray) -> NDArray:
        picked = values[..., mask]
        if self._all_finite:
            counts: NDArray | int = int(mask.sum())
        else:
            counts = finite[..., mask].sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return picked.sum(axis=-1) / counts


def pairwise_calibration(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    models: Sequence[str] | None = None,
    reasoning: Sequence[bool | None] | None = None,
    permutations: int = 10_000,
    joint_permutations: int = 1_000,
    alternative: Alternative = "two-sided",
    fdr_alpha: float = 0.05,
    deltas: Sequence[float] = DEFAULT_DELTAS,
    min_pairs: int = 3,
    rng: SeedLike = 0,
    progress: bool = False,
    workers: int | None = None,
    engine: Engine = "auto",
    min_pair_items: int = 2,
    sequential: bool | int = True,
    settle: bool = True,
) -> PairwiseResult:
    """Pairwise calibration with both nulls, per pair and for the mean over pairs.

    Missing items (NaN) are allowed: each pair is analysed on the items both models answered
    (its tau-b, its per-pair nulls and its accuracy gap), and the joint draws shuffle each model
    among its own items and recompute every pair on its shared items
    (:mod:`metacog_metrics.pairwise.masked`). Without missing items this is the complete-data
    analysis, draw for draw.

    Args:
        conf: ``(items, models)`` confidence, NaN where a model lacks an item (0/1 takes the
            fast engine).
        perf: ``(items, models)`` 0/1 correctness, NaN where a model lacks an item.
        models: Model names (default ``"0", "1", ...``).
        reasoning: Per-model reasoning flag (None when unknown), for the pair-type breakdown.
        permutations: Per-pair draws (0 skips the per-pair tests); with ``sequential``, the
            most a pair gets.
        joint_permutations: Joint draws for the mean, the delta curve and the pair types.
        alternative: Alternative of every p-value.
        fdr_alpha: BH level for the share of significant pairs.
        deltas: Accuracy-gap grid of the delta curve.
        min_pairs: Fewest pairs for a delta-curve point or pair-type mean.
        rng: Seed (int), ``SeedSequence`` or ``Generator``; each null and use gets its own
            child stream.
        progress: Progress bars on the permutation steps.
        workers: Threads for the per-pair tests.
        engine: Engine of the per-pair draws (see :func:`pair_permutation_test`).
        min_pair_items: Fewest shared items for a pair's tau-b (fewer: NaN, left out).
        sequential: Sequential per-pair p-values (True: the default ``h``; an integer: that
            ``h``; False: fixed-n), as :func:`~metacog_metrics.pairwise.pair_permutation_test`.
        settle: With ``sequential``, settle the tests whose remaining draws a concentration
            bound proves to miss (:mod:`~metacog_metrics.pairwise.tail_bounds`).

    Returns:
        A :class:`PairwiseResult`.

    Raises:
        ValueError: On bad inputs.

    Example:
        Four models whose confidence follows their own correctness (80% of items): every pair
        is significant against the base-rate null, none against each model's own calibration.

        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> perf = (rng.random((300, 4)) < 0.6).astype(float)
        >>> conf = np.where(rng.random((300, 4)) < 0.8, perf, 1 - perf)
        >>> res = pairwise_calibration(conf, perf, permutations=199, joint_permutations=99,
        ...                            rng=1, engine="numpy")
        >>> res.n_pairs, round(res.mean_tau, 3)
        (6, 0.572)
        >>> {null: round(r.mean, 2) for null, r in res.nulls.items()}
        {'base_rate': 0.0, 'calibration_preserving': 0.57}
        >>> res.fdr_share("base_rate"), res.fdr_share("calibration_preserving")
        (1.0, 0.0)
    """
    _check_alternative(alternative)
    _check_engine(engine)
    exceedances = exceedances_of(sequential)
    c, p, present, binary = check_ragged(conf, perf)
    complete = bool(present.all())
    if complete:
        c, p, binary = _check(c, p)
    n_items, m = c.shape
    names = tuple(str(v) for v in (models if models is not None else range(m)))
    if len(names) != m:
        raise ValueError(f"{len(names)} model names for {m} columns")
    if reasoning is not None and len(reasoning) != m:
        raise ValueError(f"{len(reasoning)} reasoning flags for {m} models")
    ia, ib = _pairs(m)
    if complete:
        tau = pairwise_taus(c, p)
        n_pair = np.full(ia.size, n_items, dtype=np.int64)
        correct_counts = p.sum(axis=0)
        accuracy = correct_counts / n_items
        gap_counts = np.abs(correct_counts[ia] - correct_counts[ib])
    else:
        n_pair = shared_counts(present)[ia, ib]
        tau = observed_tables_or_taus(c, p, present, binary, ia, ib)
        # correct[a, b]: a's correct answers on the items b answered too
        correct = np.rint((p * present).T.astype(np.float32) @ present.astype(np.float32))
        accuracy = (p * present).sum(axis=0) / np.maximum(present.sum(axis=0), 1)
        gap_counts = np.abs(correct[ia, ib] - correct[ib, ia])
    tau = np.where(n_pair >= max(2, int(min_pair_items)), tau, np.nan)
    valid = np.isfinite(tau)
    mean_tau = float(tau[valid].mean()) if valid.any() else float("nan")
    types = _pair_types(reasoning, ia, ib)

    keys = null_names()
    specs = [get_null(key) for key in keys]
    # each null draws from its own children of the seed (fixed per null: adding a null
    # changes no other null's draws)
    streams = seed_sequence(rng).spawn(1 + max(i for s in specs for i in s.seed_streams))
    plans = []
    pieces: dict[str, list[NDArray]] = {}
    if permutations > 0:
        # the pairs by the items they share (all pairs at once on complete data): each unit's
        # observed level tables are built once and read by both nulls
        units = []
        if complete:
            units.append((c, p, ia, ib, np.arange(ia.size)))
        else:
            for rows, sub in pair_item_groups(present, ia[valid], ib[valid]):
                idx = np.flatnonzero(valid)[sub]
                used, local = np.unique(np.concatenate([ia[idx], ib[idx]]), return_inverse=True)
                units.append((c[np.ix_(rows, used)], p[np.ix_(rows, used)], local[: idx.size],
                              local[idx.size :], idx))  # fmt: skip
        inputs = [PairInputs(*unit[:4], binary, engine) for unit in units]
        for spec in specs:
            own = streams[spec.seed_streams[0]]
            seeds = [own] if complete else own.spawn(len(units))
            pieces[spec.name] = [unit[4] for unit in units]
            for unit_inputs, ss in zip(inputs, seeds):
                plans.append(_pair_plan(unit_inputs, spec, int(permutations), alternative, ss,
                                        exceedances, settle))  # fmt: skip
    joint_engine = None
    if joint_permutations > 0:
        joint = joint_inputs(c, p, None if complete else present, binary, ia, ib, engine)
        joint_plans = [
            _joint_plan(joint, spec, int(joint_permutations), streams[spec.seed_streams[1]])
            for spec in specs
        ]
        plans += joint_plans
        joint_engine = joint_plans[0].engine
    done = iter(_execute(plans, workers, progress)) if plans else iter(())
    per_pair: dict[str, PairTestResult] = {}
    if permutations > 0:
        for null in keys:
            parts = [next(done) for _ in pieces[null]]
            per_pair[null] = (
                parts[0]
                if complete
                else _merge_pair_results(
                    null,
                    alternative,
                    int(permutations),
                    tau,
                    list(zip(pieces[null], parts)),
                    exceedances,
                )
            )
    else:
        nan = np.full(tau.shape, np.nan)
        for null in keys:
            per_pair[null] = PairTestResult(
                null, alternative, 0, tau, nan, nan, nan, nan, nan, nan,
                np.zeros(tau.shape, dtype=np.int64),
            )  # fmt: skip
    draws = {
        null: next(done) if joint_permutations > 0 else np.zeros((0, tau.size)) for null in keys
    }
    means = {null: _SubsetMeans(draws[null]) for null in keys}  # the draws are not kept
    nulls = {null: _mean_null(null, mean_tau, means[null](valid), alternative) for null in keys}

    delta = np.asarray(deltas, dtype=float)
    n_d = np.zeros(delta.size, dtype=np.int64)
    mean_d = np.full(delta.size, np.nan)
    band = {k: {null: np.full(delta.size, np.nan) for null in keys} for k in ("m", "lo", "hi", "p")}
    for i, d in enumerate(delta):
        mask = valid & (gap_counts <= np.floor(d * n_pair + 1e-9))
        n_d[i] = int(mask.sum())
        if n_d[i] < min_pairs:
            continue
        mean_d[i] = float(tau[mask].mean())
        for null in keys:
            res = _mean_null(null, mean_d[i], means[null](mask), alternative)
            band["m"][null][i], band["p"][null][i] = res.mean, res.p_value
            band["lo"][null][i], band["hi"][null][i] = res.ci
    curve = DeltaCurve(delta, n_d, mean_d, band["m"], band["lo"], band["hi"], band["p"],
                       int(min_pairs))  # fmt: skip

    type_arr = np.array([t if t is not None else "" for t in types])
    summaries: dict[str, PairTypeSummary] = {}
    for kind in PAIR_TYPES:
        mask = valid & (type_arr == kind)
        if not mask.any():
            continue
        obs = float(tau[mask].mean()) if mask.sum() >= min_pairs else float("nan")
        med = float(np.median(tau[mask])) if mask.sum() >= min_pairs else float("nan")
        null_mean, p_val, share = {}, {}, {}
        for null in keys:
            res = _mean_null(null, obs, means[null](mask), alternative)
            null_mean[null], p_val[null] = res.mean, res.p_value
            q = per_pair[null].q_value[mask]
            share[null] = float((q[np.isfinite(q)] < fdr_alpha).mean()) if np.isfinite(
                q).any() else float("nan")  # fmt: skip
        summaries[kind] = PairTypeSummary(
            kind, int(mask.sum()), obs, null_mean, p_val, share, median_tau=med
        )

    result = PairwiseResult(
        models=names,
        model_a=tuple(names[i] for i in ia),
        model_b=tuple(names[i] for i in ib),
        tau=tau,
        accuracy=accuracy,
        accuracy_gap=gap_counts / np.maximum(n_pair, 1),
        pair_type=tuple(types),
        n_items=int(n_items),
        continuous=not binary,
        mean_tau=mean_tau,
        n_pairs=int(tau.size),
        n_pairs_valid=int(valid.sum()),
        per_pair=per_pair,
        nulls=nulls,
        fdr_alpha=float(fdr_alpha),
        fdr_significant_share=float("nan"),
        delta_curve=curve,
        pair_types=summaries,
        alternative=alternative,
        permutations=int(permutations),
        joint_permutations=int(joint_permutations),
        n_items_pair=n_pair,
        min_pair_items=max(2, int(min_pair_items)),
        joint_engine=joint_engine,
        sequential=exceedances if permutations > 0 else 0,
    )
    return dataclasses.replace(result, fdr_significant_share=result.fdr_share(headline_null()))
