"""What the nulls' joint samplers are made of: their type, their inputs, and the samplers that
shuffle whole models.

A joint draw shuffles every model once and recomputes every pair from that one draw. The nulls
of the paper differ only in what a model's shuffle keeps together: with ``split`` its
confidence and its correctness are permuted each on its own (the association inside the model
is broken too), without it they move together (the model keeps its own (conf, perf) pairs).
The samplers here take that as a parameter; each null registers the ones of its law in
:mod:`metacog_metrics.pairwise.nulls`. A null without a sampler for a case is drawn from its
reference law (:func:`reference_joint_sampler`). On ragged data every pair sees its two
models' own values on its shared items (:func:`~metacog_metrics.pairwise.masked.pair_view`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

from metacog_metrics.pairwise.common import _ELEMENTS_PER_CHUNK
from metacog_metrics.pairwise.masked import (
    check_ragged,
    landing_orders,
    masked_grid,
    observed_tables_or_taus,
    pair_view,
    pair_views,
    view_taus,
)
from metacog_metrics.pairwise.samplers import _category_counts, _shuffled_binary, _shuffled_values
from metacog_metrics.pairwise.tau import (
    _grid,
    _tables_from_bits,
    _tau_b_tables,
    _taus_chunked,
    _value_lookups,
    pairwise_taus,
)

__all__ = [
    "JointDraw",
    "JointInputs",
    "JointSampler",
    "all_taus",
    "bits",
    "compiled_bits",
    "compiled_ragged",
    "compiled_values",
    "ragged",
    "reference_joint_sampler",
    "values",
]

_COMPILED_DRAWS_PER_TASK = 50  # joint draws per task on the compiled engine (fixed chunks)
_REFERENCE_DRAWS_PER_TASK = 32  # ... and when drawn from a null's reference law

#: ``draw(b, seed)``: ``b`` joint draws from one child seed, ``(b, P)`` tau-b.
JointDraw = Callable[[int, np.random.SeedSequence], NDArray]


@dataclasses.dataclass(frozen=True)
class JointInputs:
    """What the joint samplers read.

    Attributes:
        conf: ``(N, M)`` confidence (0 where a model lacks an item).
        perf: ``(N, M)`` 0/1 correctness (0 where a model lacks an item).
        present: ``(N, M)`` whether each model answered each item; None: all did.
        binary: Whether every confidence is 0 or 1.
        ia: First model of each pair.
        ib: Second model of each pair.
        kernels: The compiled kernel module, or None (NumPy engine).
    """

    conf: NDArray
    perf: NDArray
    present: NDArray[np.bool_] | None
    binary: bool
    ia: NDArray
    ib: NDArray
    kernels: ModuleType | None = None

    @property
    def case(self) -> tuple[str, str]:
        """``(confidence, data)`` of the samplers' registry: binary or levels, complete or
        ragged."""
        return ("binary" if self.binary else "levels",
                "complete" if self.present is None else "ragged")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class JointSampler:
    """Joint draws of one null for one case.

    Attributes:
        engine: What draws (``"numpy"`` or ``"numba"``).
        bind: ``bind(inputs)`` -> ``(batch, draw)``, the draws a task makes and the
            :data:`JointDraw`; or None when these inputs are not for it (the next sampler of
            the case is tried).
    """

    engine: str
    bind: Callable[[JointInputs], tuple[int, JointDraw] | None]


def _batch(per_draw: int) -> int:
    """Draws a task for ``per_draw`` elements a draw (bounded memory, fixed for a seed)."""
    return max(1, _ELEMENTS_PER_CHUNK // max(per_draw, 1))


def _per_pair_work(inputs: JointInputs) -> int:
    """Elements a draw of the real-valued paths: 3 per item, model and pair per model."""
    n_items, m = inputs.conf.shape
    return n_items * m * 3 * max(1, inputs.ia.size // max(m, 1))


# --------------------------------------------------------------------------------------------
# Complete data
# --------------------------------------------------------------------------------------------


def bits(split: bool) -> JointSampler:
    """Binary confidence, NumPy: each model's 0/1 vectors drawn as uniformly random
    arrangements of its own counts, every pair's table from packed-bit co-occurrences."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw]:
        n_items, m = inputs.conf.shape
        counts = _category_counts(inputs.conf, inputs.perf)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            rng = np.random.default_rng(ss)
            cs, ps = _shuffled_binary(counts, n_items, split, b, rng)
            return _tau_b_tables(_tables_from_bits(cs, ps, inputs.ia, inputs.ib))

        return _batch(n_items * m * 4), draw

    return JointSampler("numpy", bind)


def values(split: bool) -> JointSampler:
    """Real-valued confidence, NumPy: each model's items permuted, every pair's tau-b exact
    (grid codes when the confidence has a grid)."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw]:
        c, p = inputs.conf, inputs.perf
        grid = _grid(c)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            rng = np.random.default_rng(ss)
            cs, ps = _shuffled_values(c, p, split, b, rng)
            g = None if grid is None else (np.rint(cs * grid[1]).astype(np.int64), grid[1])
            return _taus_chunked(cs, ps, inputs.ia, inputs.ib, g)

        return _batch(_per_pair_work(inputs)), draw

    return JointSampler("numpy", bind)


def compiled_bits(split: bool) -> JointSampler:
    """Binary confidence, compiled: each model's vectors arranged at random as packed bits,
    every pair's counts by popcount and its tau-b from them (``_numba.joint_binary_taus``)."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw] | None:
        kernels = inputs.kernels
        if kernels is None:
            return None
        c, p, ia, ib = inputs.conf, inputs.perf, inputs.ia, inputs.ib
        n_items = c.shape[0]
        k = {
            key: np.ascontiguousarray(v, dtype=np.int64)
            for key, v in _category_counts(c, p).items()
        }
        ia64, ib64 = ia.astype(np.int64), ib.astype(np.int64)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            return kernels.joint_binary_taus(
                k["kc"], k["kp"], k["n11"], k["n01"], n_items, ia64, ib64, split, b,
                kernels.state(ss),
            )  # fmt: skip

        return _COMPILED_DRAWS_PER_TASK, draw

    return JointSampler("numba", bind)


def compiled_values(split: bool) -> JointSampler:
    """Real-valued confidence, compiled, complete data: each model shuffled, every pair counted
    through per-pair lookups of its dconf levels. Does not bind without the kernels, on ragged
    data, or when the values are too many for the lookups (the sorted NumPy path is cheaper
    there)."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw] | None:
        kernels = inputs.kernels
        c, p, ia, ib = inputs.conf, inputs.perf, inputs.ia, inputs.ib
        if kernels is None or inputs.present is not None:
            return None
        lk = _value_lookups(c, ia, ib)
        if lk is None:
            return None
        ia64, ib64 = ia.astype(np.int64), ib.astype(np.int64)
        perf = np.ascontiguousarray(np.rint(p.T), dtype=np.int64)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            return kernels.joint_levels_kernel(
                lk.codes, perf, ia64, ib64, lk.lut_off, lk.lut, lk.stride, lk.n_levels,
                split, b, kernels.state(ss),
            )  # fmt: skip

        return _COMPILED_DRAWS_PER_TASK, draw

    return JointSampler("numba", bind)


def _csr(rows: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Offsets and column indices of the True cells of a ``(R, N)`` mask, row by row."""
    counts = rows.sum(axis=1)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return off, np.nonzero(rows)[1].astype(np.int64)


# --------------------------------------------------------------------------------------------
# Ragged data: each model permuted among the items it answered, each pair on its shared items
# --------------------------------------------------------------------------------------------


def compiled_ragged(split: bool) -> JointSampler:
    """Ragged data, compiled, binary or real-valued confidence: each model permuted among its
    own items; every pair reads each of its models' values on the shared items in landing
    order (:func:`~metacog_metrics.pairwise.masked.pair_view`) and counts them through its
    lookup of dconf levels (``_numba.joint_ragged_kernel``). Does not bind without the kernels
    or when the values are too many for the lookups."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw] | None:
        kernels = inputs.kernels
        c, p, ia, ib, present = inputs.conf, inputs.perf, inputs.ia, inputs.ib, inputs.present
        if kernels is None or present is None:
            return None
        lk = _value_lookups(c, ia, ib, present)
        if lk is None:
            return None
        ia64, ib64 = ia.astype(np.int64), ib.astype(np.int64)
        pres_t = np.ascontiguousarray(present.T, dtype=np.uint8)
        own_off, own = _csr(pres_t.astype(bool))
        perf = np.ascontiguousarray(np.where(present.T, np.rint(p.T), 0), dtype=np.int64)
        n_shared = (present[:, ia] & present[:, ib]).sum(axis=0).astype(np.int64)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            return kernels.joint_ragged_kernel(
                lk.codes, perf, own_off, own, pres_t, ia64, ib64, n_shared, lk.lut_off,
                lk.lut, lk.stride, lk.n_levels, split, b, kernels.state(ss),
            )  # fmt: skip

        return _COMPILED_DRAWS_PER_TASK, draw

    return JointSampler("numba", bind)


def ragged(split: bool) -> JointSampler:
    """Ragged data, NumPy, binary or real-valued confidence: each draw's permutations as
    landing orders (:func:`~metacog_metrics.pairwise.masked.landing_orders`), every pair's
    views flat (:func:`~metacog_metrics.pairwise.masked.pair_views`), tau-b from tables of
    code differences (binary, or a grid with at least 3 items a dconf code) or sorted."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw]:
        c, p, present, ia, ib = inputs.conf, inputs.perf, inputs.present, inputs.ia, inputs.ib
        n_items = c.shape[0]
        pres_t = np.ascontiguousarray(present.T)
        levels: int | None = 2
        values_t = np.where(pres_t, c.T, 0.0)
        if not inputs.binary:
            grid = masked_grid(np.where(present, c, np.nan))
            levels = None
            if grid is not None and 3 * (2 * grid[1] + 1) <= n_items:
                values_t, levels = grid[0].T.astype(float), grid[1] + 1
        perf_t = np.where(pres_t, p.T, 0.0)
        sizes = (pres_t[ia] & pres_t[ib]).sum(axis=1)
        step = max(1, _ELEMENTS_PER_CHUNK // (4 * max(n_items, 1)))  # pairs a step

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            rng = np.random.default_rng(ss)
            out = np.empty((b, ia.size))
            for d in range(b):
                conf_order = landing_orders(pres_t, rng)
                conf_landed = np.take_along_axis(values_t, conf_order, axis=1)
                if split:
                    perf_order = landing_orders(pres_t, rng)
                    perf_landed = np.take_along_axis(perf_t, perf_order, axis=1)
                    orders = [(conf_order, (conf_landed,)), (perf_order, (perf_landed,))]
                else:  # confidence and correctness move together
                    perf_landed = np.take_along_axis(perf_t, conf_order, axis=1)
                    orders = [(conf_order, (conf_landed, perf_landed))]
                for s in range(0, ia.size, step):
                    a, o = ia[s : s + step], ib[s : s + step]
                    # [conf, perf] of A's views, then of B's
                    views = [v for who, other in ((a, o), (o, a)) for order, landed in orders
                             for v in pair_views(landed, order, pres_t, who, other)]  # fmt: skip
                    out[d, s : s + step] = view_taus(*views, sizes[s : s + step], levels)
            return out

        return _batch(_per_pair_work(inputs) // 4), draw

    return JointSampler("numpy", bind)


# --------------------------------------------------------------------------------------------
# Any law: one joint draw at a time
# --------------------------------------------------------------------------------------------


def reference_joint_sampler(law: Callable) -> JointSampler:
    """A sampler that draws from ``law`` itself, one joint draw at a time: the path of a null
    without a fast sampler for the case (complete or ragged, any confidence)."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw]:
        c, p, present = inputs.conf, inputs.perf, inputs.present
        if present is not None:
            c, p = np.where(present, c, np.nan), np.where(present, p, np.nan)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            rng = np.random.default_rng(ss)
            out = np.empty((b, inputs.ia.size))
            for d in range(b):
                conf_from, perf_from = law(c, p, rng)
                out[d] = joint_draw_taus(c, p, conf_from, perf_from, inputs.ia, inputs.ib)
            return out

        return _REFERENCE_DRAWS_PER_TASK, draw

    return JointSampler("numpy", bind)


def joint_draw_taus(
    conf: NDArray, perf: NDArray, conf_from: NDArray, perf_from: NDArray, ia: NDArray,
    ib: NDArray,
) -> NDArray[np.float64]:  # fmt: skip
    """tau-b of the pairs ``(ia, ib)`` in one joint draw of a null's law (its ``conf_from``
    and ``perf_from``, :data:`~metacog_metrics.pairwise.nulls.JointLaw`) of ``(items,
    models)`` arrays (NaN: a missing item), each pair on the items both models answered and
    seeing its models' own values there (:func:`~metacog_metrics.pairwise.masked.pair_view`).
    """
    present = ~np.isnan(conf) & ~np.isnan(perf)
    if present.all():
        c = np.take_along_axis(conf, conf_from, axis=0)
        p = np.take_along_axis(perf, perf_from, axis=0)
        return pairwise_taus(c, p, pairs=(ia, ib))
    out = np.full(ia.size, np.nan)
    for k, (a, b) in enumerate(zip(ia, ib)):
        shared = present[:, a] & present[:, b]
        if shared.sum() < 2:
            continue
        cols = [pair_view(conf[:, m], conf_from[:, m], shared) for m in (a, b)]
        pcols = [pair_view(perf[:, m], perf_from[:, m], shared) for m in (a, b)]
        view_c = np.where(shared[:, None], np.column_stack(cols), np.nan)
        view_p = np.where(shared[:, None], np.column_stack(pcols), np.nan)
        out[k] = all_taus(view_c, view_p, np.array([0]), np.array([1]))[0]
    return out


def all_taus(conf: NDArray, perf: NDArray, ia: NDArray, ib: NDArray) -> NDArray[np.float64]:
    """tau-b of the pairs ``(ia, ib)`` of ``(items, models)`` arrays, each pair on the items
    both models answered (NaN marks a missing item)."""
    c, p, present, binary = check_ragged(conf, perf)
    if present.all():
        return pairwise_taus(c, p, pairs=(ia, ib))
    return observed_tables_or_taus(c, p, present, binary, ia, ib)
