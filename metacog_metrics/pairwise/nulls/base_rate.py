"""The base-rate-matched null: the association of dconf with dperf is broken, every base rate
kept.

Per pair, dperf is permuted against dconf (the pair's two correctness vectors move together
against its two confidence vectors). For the mean over pairs, each model's confidence and its
correctness are each shuffled on its own; all pairs are recomputed from one such draw, since
independent per-pair draws understate the sd of the mean's null about three-fold (measured:
0.0021 against 0.0063 on 20 models x 1,000 items). Centred on 0; with shared difficulty and
models whose "yes" rate follows their ability, the observed mean sits above it even without
private signal.

Fast samplers: a per-pair draw is a random (dconf x dperf) table with the pair's margins (3x3
for binary confidence, dconf levels x 3 for real values), drawn by
:func:`~metacog_metrics.pairwise.samplers._margins_s` and
:func:`~metacog_metrics.pairwise.samplers._levels_margins_s` or their compiled kernels; as
both margins are fixed, tau-b is Kendall's S times a constant and the integer S is compared
exactly. Joint draws: the shufflers of :mod:`~metacog_metrics.pairwise.joint_draws` with
``split``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from metacog_metrics.pairwise import joint_draws as jd
from metacog_metrics.pairwise.nulls._registry import NullSpec, register
from metacog_metrics.pairwise.pair_draws import (
    COMPILED_RATIO,
    PLACED_PER_LEVEL,
    PairInputs,
    PairSampler,
    PairTask,
    accumulate_s,
    in_steps,
    recorded,
    scale_moments,
    tau_scale,
)
from metacog_metrics.pairwise.products import products as by_products
from metacog_metrics.pairwise.samplers import _levels_margins_s, _margins_s
from metacog_metrics.pairwise.tau import _kendall_s, _LevelTables

__all__ = ["SPEC", "joint_law", "pair_law"]


def pair_law(conf: NDArray, perf: NDArray, rng: np.random.Generator) -> tuple[NDArray, NDArray]:
    """One draw for a pair: both models' correctness permuted together against their
    confidence, so dperf is permuted against dconf.

    >>> conf = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    >>> perf = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> c, p = pair_law(conf, perf, np.random.default_rng(0))
    >>> bool((c == conf).all()), sorted(p[:, 0] - p[:, 1]) == sorted(perf[:, 0] - perf[:, 1])
    (True, True)
    """
    return conf, perf[rng.permutation(conf.shape[0])]


def joint_law(conf: NDArray, perf: NDArray, rng: np.random.Generator) -> tuple[NDArray, NDArray]:
    """One joint draw: each model's confidence and its correctness, each permuted on its own
    among the items it answered (NaN: not answered, stays in place). Returns where each value
    comes from (:data:`~metacog_metrics.pairwise.nulls.JointLaw`).

    >>> conf = np.array([[1.0, np.nan], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    >>> perf = np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    >>> conf_from, perf_from = joint_law(conf, perf, np.random.default_rng(0))
    >>> int(conf_from[0, 1]), sorted(conf_from[1:, 1].tolist())  # a missing item stays
    (0, [1, 2, 3])
    >>> bool((conf_from != perf_from).any())  # confidence and correctness apart
    True
    """
    conf_from = np.broadcast_to(np.arange(conf.shape[0])[:, None], conf.shape).copy()
    perf_from = conf_from.copy()
    for m in range(conf.shape[1]):
        own = np.flatnonzero(~np.isnan(conf[:, m]) & ~np.isnan(perf[:, m]))
        conf_from[own, m] = rng.permutation(own)
        perf_from[own, m] = rng.permutation(own)
    return conf_from, perf_from


# --------------------------------------------------------------------------------------------
# Per-pair samplers: random tables with the pair's margins
# --------------------------------------------------------------------------------------------


def _binary_numpy(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
    """Binary confidence, NumPy: random 3x3 tables (:func:`_margins_s`), a few pairs a step."""
    tables = inputs.tables[idx]

    def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
        rng = np.random.default_rng(ss)

        def step(pairs: slice) -> NDArray:
            t = tables[pairs]
            rows, cols = t.sum(axis=-1), t.sum(axis=-2)
            s_null = _margins_s(rows, cols, n, rng)
            if out is not None:
                out[pairs] = s_null * tau_scale(rows, cols)[:, None]
            return accumulate_s(s_null, _kendall_s(t), rows, cols)

        return in_steps(tables.shape[0], n, step)

    return task


def _binary_compiled(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
    """Binary confidence, compiled: :func:`~metacog_metrics.pairwise._numba.margins_kernel`."""
    kernels, lf = inputs.kernels, inputs.number_tables
    tables = inputs.tables[idx]
    rows, cols = tables.sum(axis=-1), tables.sum(axis=-2)
    margins = np.ascontiguousarray(np.concatenate([rows, cols], axis=1), dtype=np.int64)
    s_obs = np.ascontiguousarray(_kendall_s(tables), dtype=np.int64)
    scale = tau_scale(rows, cols)

    def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
        acc = kernels.margins_kernel(
            margins, s_obs, n, kernels.state(ss), lf, COMPILED_RATIO, recorded(out)
        )
        return scale_moments(acc, scale, out)

    return task


def _padded_rows(lt: _LevelTables) -> NDArray[np.int64]:
    """``(P, L)`` level counts of packed level tables, zero padded at the end."""
    sizes = np.diff(lt.row_off)
    rows = np.zeros((sizes.size, max(1, int(sizes.max(initial=0)))), dtype=np.int64)
    for k in range(sizes.size):
        rows[k, : sizes[k]] = lt.rows[lt.row_off[k] : lt.row_off[k + 1]]
    return rows


def _levels_numpy(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
    """Real-valued confidence, NumPy: random (dconf level x dperf) tables
    (:func:`_levels_margins_s`), a few pairs a step."""
    lt = inputs.levels.select(idx)

    def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
        rng = np.random.default_rng(ss)
        sizes = np.diff(lt.row_off)

        def step(pairs: slice) -> NDArray:
            s, e = pairs.start, min(sizes.size, pairs.stop)
            rows = np.zeros((e - s, max(1, int(sizes[s:e].max(initial=0)))), dtype=np.int64)
            for k in range(s, e):
                rows[k - s, : sizes[k]] = lt.rows[lt.row_off[k] : lt.row_off[k + 1]]
            cols = lt.cols[s:e]
            s_null = _levels_margins_s(rows, cols, n, rng)
            if out is not None:
                out[s:e] = s_null * tau_scale(rows, cols)[:, None]
            return accumulate_s(s_null, lt.s_obs[s:e], rows, cols)

        return in_steps(lt.cols.shape[0], n, step)

    return task


def _levels_compiled(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
    """Real-valued confidence, compiled:
    :func:`~metacog_metrics.pairwise._numba.levels_margins_kernel`."""
    kernels, lf = inputs.kernels, inputs.number_tables
    lt = inputs.levels.select(idx)
    scale = tau_scale(_padded_rows(lt), lt.cols)
    cols = np.ascontiguousarray(lt.cols)

    def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
        acc = kernels.levels_margins_kernel(
            lt.row_off, lt.rows, cols, lt.s_obs, n, kernels.state(ss), lf, PLACED_PER_LEVEL,
            recorded(out),
        )  # fmt: skip
        return scale_moments(acc, scale, out)

    return task


SPEC = register(
    NullSpec(
        name="base_rate",
        label="base-rate-matched null",
        colour="#7f7f7f",
        description="the association of dconf with dperf is broken while every base rate is kept",
        pair_law=pair_law,
        joint_law=joint_law,
        seed_streams=(0, 2),
        headline=True,
        pair_samplers={
            ("binary", "numpy"): (PairSampler("numpy", _binary_numpy),),
            ("binary", "numba"): (PairSampler("numba", _binary_compiled),),
            ("levels", "numpy"): (PairSampler("numpy", _levels_numpy),),
            ("levels", "numba"): (PairSampler("numba", _levels_compiled),),
        },
        joint_samplers={
            ("binary", "complete", "numpy"): (by_products(split=True), jd.bits(split=True)),
            ("binary", "complete", "numba"): (
                by_products(split=True),
                jd.compiled_bits(split=True),
            ),
            ("levels", "complete", "numpy"): (by_products(split=True), jd.values(split=True)),
            ("levels", "complete", "numba"): (
                by_products(split=True),
                jd.compiled_values(split=True),
            ),
            ("binary", "ragged", "numpy"): (jd.ragged(split=True),),
            ("binary", "ragged", "numba"): (jd.compiled_ragged(split=True),),
            ("levels", "ragged", "numpy"): (jd.ragged(split=True),),
            ("levels", "ragged", "numba"): (jd.compiled_ragged(split=True),),
        },
    )
)
