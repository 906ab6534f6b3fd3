"""Per-pair permutation tests: each pair's tau-b against its null draws, any registered null.

The null's samplers (:mod:`metacog_metrics.pairwise.nulls`) draw; this module splits the pairs
among the samplers of their case (binary or real-valued confidence, NumPy or compiled), into
fixed chunks with their own child seeds, and turns the counts into p-values, q-values and the
null's mean and sd.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import seed_sequence, tie_tolerance
from metacog_metrics.pairwise.common import (
    _ELEMENTS_PER_CHUNK,
    Alternative,
    Engine,
    Null,
    SeedLike,
    _bh,
    _check,
    _check_alternative,
    _check_engine,
    _execute,
    _p_values,
    _pairs,
    _Plan,
)
from metacog_metrics.pairwise.engines import compiled_engine_available
from metacog_metrics.pairwise.nulls import NullSpec, get_null, headline_null
from metacog_metrics.pairwise.pair_draws import PairInputs, PairSampler, reference_pair_sampler
from metacog_metrics.pairwise.results import PairTestResult
from metacog_metrics.pairwise.sequential import (
    SEQUENTIAL_COLUMNS,
    exceedances_of,
    sequential_counts,
    sequential_p_values,
)

__all__ = ["compiled_engine_available", "pair_permutation_test"]

_TABLES_PER_CHUNK = 1 << 19  # random tables per chunk (bounded memory, fixed for determinism)
_ITEM_DRAWS_CAP = 256  # "items" chunking: pairs a chunk from items x min(draws, 256)


def pair_permutation_test(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    null: Null | None = None,
    permutations: int = 10_000,
    alternative: Alternative = "two-sided",
    rng: SeedLike = None,
    pairs: Any = None,
    progress: bool = False,
    workers: int | None = None,
    engine: Engine = "auto",
    sequential: bool | int = False,
    settle: bool = True,
) -> PairTestResult:
    """Permutation p-value of every pair's tau-b under one null.

    The null is any registered one (:func:`~metacog_metrics.pairwise.nulls.null_names`), by
    default the headline null: ``base_rate`` permutes ``dconf`` against ``dperf`` within the
    pair (for binary confidence a draw is a random 3x3 table with the observed margins);
    ``calibration_preserving`` permutes B's items against A's, each model keeping its own
    (conf, perf) pairs (for binary confidence a random 4x4 table of A's by B's category with
    both category counts fixed). A draw's cost depends on the levels and categories of a pair,
    not on its items.

    With ``sequential`` the p-values are sequential (Besag and Clifford 1991;
    :mod:`~metacog_metrics.pairwise.sequential`; the default of :func:`pairwise_calibration`
    and of ``metacog analyze``): a pair's draws stop once ``h`` of them are at least as
    extreme as its tau-b, with ``p = h / L`` at draw ``L``, or at ``permutations`` draws with
    the fixed-n p-value. By default (as SciPy's ``permutation_test``) every pair gets
    ``permutations`` draws.

    Draws are made in fixed chunks, each with its own child seed, and spread over ``workers``
    threads; results do not depend on the number of workers. With numba installed (the
    ``fast`` extra) the compiled kernels draw, several times faster; they draw from the same
    exact law, but other draws than the NumPy engine for the same seed (``engine="numpy"`` or
    ``METACOG_NO_NUMBA=1`` reproduces the NumPy engine's).

    Args:
        conf: ``(items, models)`` confidence.
        perf: ``(items, models)`` 0/1 correctness.
        null: A registered null's name (default: the headline null, ``base_rate``).
        permutations: Draws per pair (B); with ``sequential``, the most a pair gets.
        alternative: ``"two-sided"``, ``"greater"`` (tau above the null) or ``"less"``.
        rng: Seed (int), ``SeedSequence`` or ``Generator`` (SciPy's ``rng`` convention).
        pairs: ``(a, b)`` model indices (default all pairs).
        progress: Show a progress bar.
        workers: Threads (default: the CPU count).
        engine: ``"auto"`` (compiled kernels when numba imports and ``METACOG_NO_NUMBA`` is
            unset), ``"numpy"`` or ``"numba"``.
        sequential: False (or 0): fixed-n p-values from ``permutations`` draws; True:
            sequential p-values with ``h`` =
            :data:`~metacog_metrics.pairwise.sequential.DEFAULT_EXCEEDANCES`; an integer:
            that ``h``.
        settle: With ``sequential``, settle the tests whose remaining draws a concentration
            bound proves to miss (:mod:`~metacog_metrics.pairwise.tail_bounds`; binary
            confidence, calibration-preserving null); False draws them.

    Returns:
        A :class:`PairTestResult`.

    Raises:
        ValueError: On bad inputs, null, alternative or engine.
        ImportError: ``engine="numba"`` without numba.

    Example:
        Three models whose confidence follows their own correctness (80% of items):

        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> perf = (rng.random((200, 3)) < 0.6).astype(float)
        >>> conf = np.where(rng.random((200, 3)) < 0.8, perf, 1 - perf)
        >>> res = pair_permutation_test(conf, perf, permutations=999, rng=1, engine="numpy")
        >>> res.tau.round(3).tolist(), res.p_value.tolist(), res.null_mean.round(2).tolist()
        ([0.519, 0.574, 0.566], [0.002, 0.002, 0.002], [-0.0, -0.0, 0.0])

        Each model keeping its own calibration explains them:

        >>> res = pair_permutation_test(conf, perf, null="calibration_preserving",
        ...                             permutations=999, rng=1, engine="numpy")
        >>> res.p_value.tolist(), res.null_mean.round(2).tolist()
        ([0.892, 0.34, 0.45], [0.52, 0.54, 0.59])

        Sequential p-values stop drawing early where the pair is far from significant:

        >>> res = pair_permutation_test(conf, perf, null="calibration_preserving",
        ...                             permutations=999, rng=1, engine="numpy", sequential=True)
        >>> res.p_value.round(3).tolist(), res.n_valid.tolist()
        ([0.816, 0.258, 0.412], [80, 240, 240])
    """
    spec = get_null(headline_null() if null is None else null)
    _check_alternative(alternative)
    _check_engine(engine)
    if permutations < 1:
        raise ValueError("permutations must be >= 1")
    c, p, binary = _check(conf, perf)
    if c.ndim != 2:
        raise ValueError("pair_permutation_test takes 2-D (items, models) arrays")
    ia, ib = _pairs(c.shape[1], pairs)
    inputs = PairInputs(c, p, ia, ib, binary, engine)
    plan = _pair_plan(inputs, spec, int(permutations), alternative, rng,
                      exceedances_of(sequential), settle)  # fmt: skip
    return _execute([plan], workers, progress)[0]


def _samplers(spec: NullSpec, inputs: PairInputs) -> tuple[PairSampler, ...]:
    """The null's samplers for the case of ``inputs``: the compiled ones when the kernels
    draw and the null has them, else the NumPy ones, else its reference law."""
    kind = inputs.confidence
    if inputs.kernels is not None and (kind, "numba") in spec.pair_samplers:
        return spec.pair_samplers[kind, "numba"]
    return spec.pair_samplers.get((kind, "numpy")) or (reference_pair_sampler(spec.pair_law),)


def _pair_plan(
    inputs: PairInputs, spec: NullSpec, permutations: int, alternative: str, seed: SeedLike,
    exceedances: int = 0, settle: bool = True,
) -> _Plan:  # fmt: skip
    """The per-pair tests of one null as tasks for :func:`_execute`, and how to merge their
    results.

    Each sampler of the case takes the pairs it serves among those left, in order; each such
    group of pairs is split into fixed chunks, each from its own child seed (one group draws
    its chunks' seeds from ``seed`` itself, several from one spawned child each). With
    ``exceedances`` (h > 0) each chunk draws in rounds until its pairs stop
    (:func:`~metacog_metrics.pairwise.sequential.sequential_counts`; with ``settle``, settling
    the pairs its sampler's bound covers), else ``permutations`` draws a pair.
    """
    n_pairs = inputs.ia.size
    left = np.ones(n_pairs, dtype=bool)
    groups: list[tuple[PairSampler, NDArray[np.intp]]] = []
    for sampler in _samplers(spec, inputs):
        take = left if sampler.serves is None else left & sampler.serves(inputs)
        groups.append((sampler, np.flatnonzero(take)))
        left &= ~take
    groups = [(s, idx) for s, idx in groups if idx.size]
    root = seed_sequence(seed)
    group_seeds = [root] if len(groups) == 1 else root.spawn(len(groups))
    tasks: list[Callable[[], NDArray]] = []
    sizes: list[int] = []
    for (sampler, idx), group_seed in zip(groups, group_seeds):
        if sampler.chunking == "items":
            per = inputs.conf.shape[0] * min(permutations, _ITEM_DRAWS_CAP)
            step = max(1, _ELEMENTS_PER_CHUNK // per)
        else:
            step = max(1, _TABLES_PER_CHUNK // permutations)
        starts = list(range(0, idx.size, step))
        for s, ss in zip(starts, group_seed.spawn(len(starts))):
            part = idx[s : s + step]
            task = sampler.bind(inputs, part)
            if exceedances:
                tasks.append(_sequential_task(inputs, sampler, part, task, permutations,
                                              exceedances, alternative, ss, settle))  # fmt: skip
            else:
                tasks.append(lambda task=task, ss=ss: task(permutations, ss, None))
            sizes.append(part.size * permutations)
    used = "numba" if any(s.engine == "numba" for s, _ in groups) else "numpy"
    order = np.concatenate([idx for _, idx in groups] or [np.zeros(0, np.intp)])
    tau = inputs.tau

    def finish(results: list[NDArray]) -> PairTestResult:
        width = len(SEQUENTIAL_COLUMNS) if exceedances else 5
        acc = (np.concatenate([np.atleast_2d(r) for r in results]) if results
               else np.zeros((0, width)))  # fmt: skip
        acc = acc[np.argsort(order, kind="stable")]  # group by group: back to the pairs' order
        ge, le, nv, s1, s2 = acc[:, :5].T
        if exceedances:
            p_value, p_greater, p_less = sequential_p_values(acc, exceedances, alternative)
        else:
            p_value, p_greater, p_less = _p_values(ge, le, nv, alternative)
        ok = np.isfinite(tau)
        p_value = np.where(ok, p_value, np.nan)
        p_greater = np.where(ok, p_greater, np.nan)
        p_less = np.where(ok, p_less, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(nv > 0, s1 / nv, np.nan)
            var = np.where(nv > 1, (s2 - nv * mean**2) / (nv - 1), np.nan)
        return PairTestResult(
            null=spec.name,
            alternative=alternative,
            permutations=int(permutations),
            tau=tau,
            p_value=p_value,
            p_greater=p_greater,
            p_less=p_less,
            q_value=_bh(p_value),
            null_mean=mean,
            null_sd=np.sqrt(np.maximum(var, 0.0)),
            n_valid=nv.astype(np.int64),
            engine=used,
            sequential=exceedances,
            settled=acc[:, 7] > 0 if exceedances else np.zeros(tau.shape, dtype=bool),
        )

    return _Plan(f"pairs {spec.name}", tasks, sizes, finish)


def _sequential_task(
    inputs: PairInputs, sampler: PairSampler, part: NDArray[np.intp], first: Callable,
    cap: int, h: int, alternative: str, seed: np.random.SeedSequence, settle: bool = True,
) -> Callable[[], NDArray]:  # fmt: skip
    """A chunk's sequential draws as a self-contained task: rounds of the sampler on the
    pairs still drawing (``first``, bound to the whole chunk when the plan was made, serves
    the first round), settling those its bound covers (``settle`` and a sampler with one)."""

    def draw(rows: NDArray[np.intp], b: int, ss: np.random.SeedSequence) -> NDArray:
        task = first if rows.size == part.size else sampler.bind(inputs, part[rows])
        return task(b, ss, None)

    def proven(rows: NDArray[np.intp], side: int, bound: float) -> NDArray[np.bool_]:
        pairs = part[rows]
        tau = inputs.tau[pairs]
        # the draws within the tie band count as at least as extreme: prove beyond it
        threshold = tau - side * 2.0 * tie_tolerance(tau)
        return sampler.settle(inputs, pairs, threshold, side, bound)  # type: ignore[misc]

    settler = proven if settle and sampler.settle is not None else None

    def run() -> NDArray:
        return sequential_counts(draw, part.size, inputs.tau[part], cap, h, alternative, seed,
                                 settler)  # fmt: skip

    return run
