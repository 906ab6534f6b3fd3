"""The calibration-preserving null: each model keeps its own (confidence, correctness) pairs;
only the matching of items across models is shuffled.

Per pair, B's items are permuted against A's; for the mean over pairs, each model's items are
shuffled (confidence and correctness together) and all pairs recomputed from that one draw.
With a shared difficulty axis this null sits far above zero (shared difficulty cancels in the
observed differences but not after scrambling), so compare against it, not 0.

Fast samplers: a per-pair draw is a random matching of A's and B's (confidence, correctness)
categories: for binary confidence a random 4x4 table of A's by B's category with both
category counts fixed (:func:`~metacog_metrics.pairwise.samplers._category_taus`, or its
compiled kernel), for real values the compiled matching tables where the categories are few,
else B's items permuted against A's (:func:`_item_permutations`). With binary confidence a
sequential test far beyond this null is settled by the bound of
:mod:`~metacog_metrics.pairwise.tail_bounds`. Joint draws: the shufflers
of :mod:`~metacog_metrics.pairwise.joint_draws` without ``split``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from metacog_metrics._conventions import value_ties
from metacog_metrics.pairwise import joint_draws as jd
from metacog_metrics.pairwise import tail_bounds
from metacog_metrics.pairwise.common import _ELEMENTS_PER_CHUNK
from metacog_metrics.pairwise.nulls._registry import NullSpec, register
from metacog_metrics.pairwise.pair_draws import (
    COMPILED_RATIO,
    PairInputs,
    PairSampler,
    PairTask,
    accumulate,
    in_steps,
    recorded,
)
from metacog_metrics.pairwise.products import products as by_products
from metacog_metrics.pairwise.samplers import _category_taus
from metacog_metrics.pairwise.tau import (
    MATCHING_RATIO,
    _gather,
    _tau_b_codes,
    _tau_b_sorted,
    _tau_b_tables,
)

__all__ = ["SPEC", "joint_law", "pair_law"]


def pair_law(conf: NDArray, perf: NDArray, rng: np.random.Generator) -> tuple[NDArray, NDArray]:
    """One draw for a pair: the second model's items permuted against the first's, each model
    keeping its own (confidence, correctness) pairs.

    >>> conf = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    >>> perf = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> c, p = pair_law(conf, perf, np.random.default_rng(0))
    >>> bool((c[:, 0] == conf[:, 0]).all() and (p[:, 0] == perf[:, 0]).all())
    True
    >>> sorted(zip(c[:, 1], p[:, 1])) == sorted(zip(conf[:, 1], perf[:, 1]))
    True
    """
    order = rng.permutation(conf.shape[0])
    conf, perf = conf.copy(), perf.copy()
    conf[:, 1], perf[:, 1] = conf[order, 1], perf[order, 1]
    return conf, perf


def joint_law(conf: NDArray, perf: NDArray, rng: np.random.Generator) -> tuple[NDArray, NDArray]:
    """One joint draw: each model's (confidence, correctness) pairs permuted together among
    the items it answered (NaN: not answered, stays in place). Returns where each value comes
    from (:data:`~metacog_metrics.pairwise.nulls.JointLaw`).

    >>> conf = np.array([[1.0, np.nan], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    >>> perf = np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> conf_from, perf_from = joint_law(conf, perf, np.random.default_rng(0))
    >>> int(conf_from[0, 1]), sorted(conf_from[1:, 1].tolist())  # a missing item stays
    (0, [1, 2, 3])
    >>> bool((conf_from == perf_from).all())  # each model keeps its (conf, perf) pairs
    True
    """
    conf_from = np.broadcast_to(np.arange(conf.shape[0])[:, None], conf.shape).copy()
    for m in range(conf.shape[1]):
        own = np.flatnonzero(~np.isnan(conf[:, m]) & ~np.isnan(perf[:, m]))
        conf_from[own, m] = rng.permutation(own)
    return conf_from, conf_from.copy()


# --------------------------------------------------------------------------------------------
# Per-pair samplers: random matchings of the two models' categories
# --------------------------------------------------------------------------------------------


def _binary_numpy(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
    """Binary confidence, NumPy: random 4x4 category tables (:func:`_category_taus`)."""
    tables = inputs.tables[idx]
    a, b = inputs.categories[inputs.ia[idx]], inputs.categories[inputs.ib[idx]]

    def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
        rng = np.random.default_rng(ss)

        def step(pairs: slice) -> NDArray:
            taus = _category_taus(a[pairs], b[pairs], n, rng)
            if out is not None:
                out[pairs] = taus
            return accumulate(_tau_b_tables(tables[pairs]), taus)

        return in_steps(tables.shape[0], n, step)

    return task


def _binary_compiled(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
    """Binary confidence, compiled:
    :func:`~metacog_metrics.pairwise._numba.categories_kernel`."""
    kernels, lf = inputs.kernels, inputs.number_tables
    obs = np.ascontiguousarray(_tau_b_tables(inputs.tables[idx]))
    a = np.ascontiguousarray(inputs.categories[inputs.ia[idx]], dtype=np.int64)
    b = np.ascontiguousarray(inputs.categories[inputs.ib[idx]], dtype=np.int64)

    def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
        state = kernels.state(ss)
        return kernels.categories_kernel(a, b, obs, n, state, lf, COMPILED_RATIO, recorded(out))

    return task


def _settle_binary(
    inputs: PairInputs, idx: NDArray[np.intp], threshold: NDArray, side: int, bound: float
) -> NDArray[np.bool_]:
    """Binary confidence: the pairs whose draw :mod:`~metacog_metrics.pairwise.tail_bounds`
    proves to reach ``threshold`` with probability at most ``bound``."""
    cats = inputs.categories
    return tail_bounds.calibration_preserving_binary(
        cats[inputs.ia[idx]], cats[inputs.ib[idx]], threshold, side, bound
    )


def _matching_compiled(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
    """Real-valued confidence with few categories, compiled: random category matching tables
    (:func:`~metacog_metrics.pairwise._numba.matching_kernel`)."""
    kernels, lf = inputs.kernels, inputs.number_tables
    lt = inputs.levels.select(idx)
    tau = np.ascontiguousarray(lt.tau)

    def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
        return kernels.matching_kernel(
            lt.a_off, lt.a_cnt, lt.b_off, lt.b_cnt, lt.cell_off, lt.cell_code, lt.n_levels,
            lt.n, tau, n, kernels.state(ss), lf, MATCHING_RATIO, recorded(out),
        )  # fmt: skip

    return task


def _matching_pairs(inputs: PairInputs) -> NDArray[np.bool_]:
    """The pairs whose categories are few enough for matching tables."""
    return inputs.levels.matching


def _items(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
    """Real-valued confidence, NumPy: B's items permuted against A's
    (:func:`_item_permutations`), on grid codes when the confidence has a grid."""
    vals, pt, levels = inputs.item_values
    a, b = inputs.ia[idx], inputs.ib[idx]
    ca, pa, cb, pb = vals[a], pt[a], vals[b], pt[b]

    def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
        return _item_permutations(ca, pa, cb, pb, n, ss, levels, out)

    return task


def _item_permutations(
    ca: NDArray, pa: NDArray, cb: NDArray, pb: NDArray, n: int, ss: np.random.SeedSequence,
    levels: int | None, out: NDArray | None = None,
) -> NDArray:  # fmt: skip
    """``n`` draws for a chunk of pairs by permuting B's items against A's: ``(P, 5)``
    accumulations.

    ``ca``/``cb`` are A's and B's confidences (integer grid codes when ``levels`` is given),
    ``pa``/``pb`` their correctness, rows of ``(P, N)`` inputs; ``out``: ``(P, n)`` for the
    tau-b draws.
    """
    rng = np.random.default_rng(ss)
    n_pairs, n_items = ca.shape
    step = max(1, _ELEMENTS_PER_CHUNK // max(1, n_pairs * n_items))
    acc = np.zeros((n_pairs, 5))
    obs = _exact_obs(ca, pa, cb, pb, levels)
    for s in range(0, n, step):
        b = min(step, n - s)
        idx = rng.permuted(np.broadcast_to(np.arange(n_items), (n_pairs, b, n_items)), axis=-1)
        t = _exact_obs(
            ca[:, None, :],
            pa[:, None, :],
            _gather(np.repeat(cb[:, None, :], b, axis=1), idx),
            _gather(np.repeat(pb[:, None, :], b, axis=1), idx),
            levels,
        )
        if out is not None:
            out[:, s : s + b] = t
        acc += accumulate(obs, t)
    return acc


def _exact_obs(ca: NDArray, pa: NDArray, cb: NDArray, pb: NDArray, levels: int | None) -> NDArray:
    """tau-b along the last axis of broadcast (A, B) columns."""
    ca, pa, cb, pb = np.broadcast_arrays(ca, pa, cb, pb)
    dy = np.rint(pa - pb + 1).astype(np.int64)
    if levels is not None and 3 * levels <= ca.shape[-1]:  # tables pay off: many items a level
        q = (levels - 1) // 2
        return _tau_b_codes(np.rint(ca - cb).astype(np.int64) + q, dy, levels)
    return _tau_b_sorted(value_ties(ca - cb), dy)


SPEC = register(
    NullSpec(
        name="calibration_preserving",
        label="calibration-preserving null",
        colour="#ff7f0e",
        description="each model keeps its own (confidence, correctness) pairs; the matching of "
        "items across models is shuffled",
        pair_law=pair_law,
        joint_law=joint_law,
        seed_streams=(1, 3),
        pair_samplers={
            ("binary", "numpy"): (PairSampler("numpy", _binary_numpy, settle=_settle_binary),),
            ("binary", "numba"): (PairSampler("numba", _binary_compiled, settle=_settle_binary),),
            ("levels", "numpy"): (PairSampler("numpy", _items, chunking="items"),),
            ("levels", "numba"): (
                PairSampler("numba", _matching_compiled, serves=_matching_pairs),
                PairSampler("numpy", _items, chunking="items"),
            ),
        },
        joint_samplers={
            ("binary", "complete", "numpy"): (by_products(split=False), jd.bits(split=False)),
            ("binary", "complete", "numba"): (
                by_products(split=False),
                jd.compiled_bits(split=False),
            ),
            ("levels", "complete", "numpy"): (by_products(split=False), jd.values(split=False)),
            ("levels", "complete", "numba"): (
                by_products(split=False),
                jd.compiled_values(split=False),
            ),
            ("binary", "ragged", "numpy"): (jd.ragged(split=False),),
            ("binary", "ragged", "numba"): (jd.compiled_ragged(split=False),),
            ("levels", "ragged", "numpy"): (jd.ragged(split=False),),
            ("levels", "ragged", "numba"): (jd.compiled_ragged(split=False),),
        },
    )
)
