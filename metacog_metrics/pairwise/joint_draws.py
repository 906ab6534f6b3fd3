"""What the nulls' joint samplers are made of: their type, their inputs, and the samplers that
shuffle whole models.

A joint draw shuffles every model once and recomputes every pair from that one draw. The nulls
of the paper differ only in what a model's shuffle keeps together: with ``split`` its
confidence and its correctness are permuted each on its own (the association inside the model
is broken too), without it they move together (the model keeps its own (conf, perf) pairs).
The samplers here take that as a parameter; each null registers the ones of its law in
:mod:`metacog_metrics.pairwise.nulls`. A null without a sampler for a case is drawn from its
reference law (:func:`reference_joint_sampler`).
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
    masked_binary_tables,
    masked_category_counts,
    masked_code_taus,
    masked_grid,
    masked_taus,
    observed_tables_or_taus,
    shuffled_binary_masked,
    shuffled_values_masked,
)
from metacog_metrics.pairwise.samplers import _category_counts, _shuffled_binary, _shuffled_values
from metacog_metrics.pairwise.tau import (
    _grid,
    _tables_from_bits,
    _tables_from_counts,
    _tau_b_tables,
    _taus_chunked,
    _value_lookups,
    pairwise_taus,
)

__all__ = [
    "JointDraw",
    "JointInputs",
    "JointSampler",
    "bits",
    "compiled_bits",
    "compiled_values",
    "masked_bits",
    "masked_codes",
    "masked_values",
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
    every pair's counts by popcount (``_numba.joint_binary_counts``)."""

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
            counts = kernels.joint_binary_counts(
                k["kc"], k["kp"], k["n11"], k["n01"], n_items, ia64, ib64, split, b,
                kernels.state(ss),
            )  # fmt: skip
            return _tau_b_tables(_tables_from_counts(counts, k["kc"], k["kp"], n_items, ia, ib))

        return _COMPILED_DRAWS_PER_TASK, draw

    return JointSampler("numba", bind)


def compiled_values(split: bool) -> JointSampler:
    """Real-valued confidence, compiled, complete or ragged: each model shuffled among its own
    items, every pair counted (on its shared items) through per-pair lookups of its dconf
    levels. Does not bind without the kernels or when the values are too many for the lookups
    (the sorted NumPy path is cheaper there)."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw] | None:
        kernels = inputs.kernels
        c, p, ia, ib, present = inputs.conf, inputs.perf, inputs.ia, inputs.ib, inputs.present
        lk = None if kernels is None else _value_lookups(c, ia, ib, present)
        if lk is None:
            return None
        ia64, ib64 = ia.astype(np.int64), ib.astype(np.int64)
        if present is None:
            perf = np.ascontiguousarray(np.rint(p.T), dtype=np.int64)

            def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
                return kernels.joint_levels_kernel(
                    lk.codes, perf, ia64, ib64, lk.lut_off, lk.lut, lk.stride, lk.n_levels,
                    split, b, kernels.state(ss),
                )  # fmt: skip

            return _COMPILED_DRAWS_PER_TASK, draw
        pres_t = np.ascontiguousarray(present.T)
        own_off, own = _csr(pres_t)
        shared_off, shared = _csr(pres_t[ia] & pres_t[ib])
        perf = np.ascontiguousarray(np.where(pres_t, np.rint(p.T), 0), dtype=np.int64)

        def draw_masked(b: int, ss: np.random.SeedSequence) -> NDArray:
            return kernels.joint_levels_masked_kernel(
                lk.codes, perf, own_off, own, ia64, ib64, shared_off, shared, lk.lut_off, lk.lut,
                lk.stride, lk.n_levels, split, b, kernels.state(ss),
            )  # fmt: skip

        return _COMPILED_DRAWS_PER_TASK, draw_masked

    return JointSampler("numba", bind)


def _csr(rows: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Offsets and column indices of the True cells of a ``(R, N)`` mask, row by row."""
    counts = rows.sum(axis=1)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return off, np.nonzero(rows)[1].astype(np.int64)


# --------------------------------------------------------------------------------------------
# Ragged data: each model shuffled among the items it answered, each pair on its shared items
# --------------------------------------------------------------------------------------------


def masked_bits(split: bool) -> JointSampler:
    """Binary confidence, NumPy, ragged: random arrangements of each model's counts over its
    own items (:func:`~metacog_metrics.pairwise.masked.shuffled_binary_masked`)."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw]:
        c, p, present = inputs.conf, inputs.perf, inputs.present
        n_items, m = c.shape
        pres_t = np.ascontiguousarray(present.T)
        counts = masked_category_counts(c, p, present)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            rng = np.random.default_rng(ss)
            cs, ps = shuffled_binary_masked(counts, pres_t, split, b, rng)
            return _tau_b_tables(masked_binary_tables(cs, ps, pres_t, inputs.ia, inputs.ib))

        return _batch(n_items * m * 7), draw

    return JointSampler("numpy", bind)


def masked_codes(split: bool) -> JointSampler:
    """Real-valued confidence on a grid, NumPy, ragged: small integer codes permuted among
    each model's own items, tables of codes per pair. Does not bind without a grid of at most
    a third as many dconf codes as items."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw] | None:
        c, p, present, ia, ib = inputs.conf, inputs.perf, inputs.present, inputs.ia, inputs.ib
        n_items, m = c.shape
        grid = masked_grid(np.where(present, c, np.nan))
        if grid is None or 3 * (2 * grid[1] + 1) > n_items:
            return None  # few items a level: the sort path (as for complete data)
        pres_t = np.ascontiguousarray(present.T)
        codes_t = np.ascontiguousarray(grid[0].T, dtype=np.int32)
        y_t = np.ascontiguousarray(np.rint(p.T), dtype=np.int8)
        both = pres_t[ia] & pres_t[ib]
        base = np.argsort(~pres_t, axis=-1, kind="stable")  # own items first, in item order

        def permutation(rng: np.random.Generator, b: int) -> NDArray:
            keys = np.where(pres_t[None], rng.random((b, m, n_items)), np.inf)
            order = np.argsort(keys, axis=-1, kind="stable")
            idx = np.empty((b, m, n_items), dtype=np.intp)
            np.put_along_axis(idx, np.broadcast_to(base, idx.shape), order, axis=-1)
            return idx

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            rng = np.random.default_rng(ss)
            idx = permutation(rng, b)
            cs = np.take_along_axis(np.broadcast_to(codes_t, idx.shape), idx, axis=-1)
            if split:
                idx = permutation(rng, b)
            ys = np.take_along_axis(np.broadcast_to(y_t, idx.shape), idx, axis=-1)
            return masked_code_taus(cs, ys, both, ia, ib, grid[1])

        return _batch(_per_pair_work(inputs)), draw

    return JointSampler("numpy", bind)


def masked_values(split: bool) -> JointSampler:
    """Real-valued confidence, NumPy, ragged: each model's values permuted among its own
    items (:func:`~metacog_metrics.pairwise.masked.shuffled_values_masked`), tau-b sorted."""

    def bind(inputs: JointInputs) -> tuple[int, JointDraw]:
        present = inputs.present
        cn = np.where(present, inputs.conf, np.nan)
        pn = np.where(present, inputs.perf, np.nan)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            rng = np.random.default_rng(ss)
            cs, ps = shuffled_values_masked(cn, pn, present, split, b, rng)
            return masked_taus(cs, ps, inputs.ia, inputs.ib, None)

        return _batch(_per_pair_work(inputs)), draw

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
                out[d] = all_taus(*law(c, p, rng), inputs.ia, inputs.ib)
            return out

        return _REFERENCE_DRAWS_PER_TASK, draw

    return JointSampler("numpy", bind)


def all_taus(conf: NDArray, perf: NDArray, ia: NDArray, ib: NDArray) -> NDArray[np.float64]:
    """tau-b of the pairs ``(ia, ib)`` of ``(items, models)`` arrays, each pair on the items
    both models answered (NaN marks a missing item)."""
    c, p, present, binary = check_ragged(conf, perf)
    if present.all():
        return pairwise_taus(c, p, pairs=(ia, ib))
    return observed_tables_or_taus(c, p, present, binary, ia, ib)
