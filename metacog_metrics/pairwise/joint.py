"""Joint draws: every pair recomputed from one shuffle of all models (the null of the mean)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import seed_sequence
from metacog_metrics.pairwise.common import (
    _ELEMENTS_PER_CHUNK,
    Engine,
    Null,
    SeedLike,
    _check,
    _check_engine,
    _check_null,
    _execute,
    _pairs,
    _Plan,
)
from metacog_metrics.pairwise.masked import (
    masked_binary_tables,
    masked_category_counts,
    masked_code_taus,
    masked_grid,
    masked_taus,
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
)

_COMPILED_DRAWS_PER_TASK = 50  # joint draws per task on the compiled engine (fixed chunks)


def joint_null_draws(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    null: Null = "base_rate",
    n: int = 1000,
    rng: SeedLike = None,
    pairs: Any = None,
    progress: bool = False,
    workers: int | None = None,
    engine: Engine = "auto",
) -> NDArray[np.float64]:
    """Joint permutation draws of every pair's tau-b (for the null of the mean over pairs).

    Each draw shuffles every model's vectors once (``base_rate``: confidence and correctness
    each on its own; ``calibration_preserving``: the model's item order, keeping its
    (conf, perf) pairs) and recomputes *all* pairs from that one draw, so the dependence between
    pairs that share a model is kept. Binary confidence: packed-bit co-occurrence counts per
    batch of draws; real-valued confidence: the exact path.

    Args:
        conf: ``(items, models)`` confidence.
        perf: ``(items, models)`` 0/1 correctness.
        null: ``"base_rate"`` or ``"calibration_preserving"``.
        n: Number of draws.
        rng: Seed (int), ``SeedSequence`` or ``Generator``; the draws are reproducible from it
            (SciPy's ``rng`` convention).
        pairs: ``(a, b)`` model indices (default all pairs).
        progress: Show a progress bar.
        workers: Threads (default: the CPU count); draws are made in fixed chunks with their
            own child seeds, so the result does not depend on it.
        engine: ``"auto"``, ``"numpy"`` or ``"numba"`` (as :func:`pair_permutation_test`):
            the compiled kernels draw when numba imports (other draws for the same seed, the
            same law): binary confidence as packed bits counted by popcount, real-valued
            confidence through per-pair lookup tables of its dconf levels.

    Returns:
        ``(n, pairs)`` tau-b of every pair in every draw.

    Raises:
        ValueError: On bad inputs or an unknown null.
    """
    _check_null(null)
    _check_engine(engine)
    c, p, binary = _check(conf, perf)
    if c.ndim != 2:
        raise ValueError("joint_null_draws takes 2-D (items, models) arrays")
    ia, ib = _pairs(c.shape[1], pairs)
    plan = _joint_plan(c, p, binary, ia, ib, null, int(n), rng, engine)
    return _execute([plan], workers, progress)[0]


def _joint_plan(
    c: NDArray, p: NDArray, binary: bool, ia: NDArray, ib: NDArray, null: str, n: int,
    seed: SeedLike, engine: str = "auto",
) -> _Plan:  # fmt: skip
    if binary:
        compiled = _compiled_binary_plan(c, p, ia, ib, null, n, seed, engine)
    else:
        compiled = _compiled_joint_plan(c, p, ia, ib, null, n, seed, engine)
    if compiled is not None:
        return compiled
    n_items, m = c.shape
    per_draw = n_items * m * (4 if binary else 3 * max(1, ia.size // max(m, 1)))
    batch = max(1, min(n, _ELEMENTS_PER_CHUNK // max(per_draw, 1)))
    grid = None if binary else _grid(c)
    counts = _category_counts(c, p) if binary else None

    def task(b: int, ss: np.random.SeedSequence) -> NDArray:
        rng = np.random.default_rng(ss)
        if binary:
            cs, ps = _shuffled_binary(counts, n_items, null, b, rng)
            return _tau_b_tables(_tables_from_bits(cs, ps, ia, ib))
        cs, ps = _shuffled_values(c, p, null, b, rng)
        g = None if grid is None else (np.rint(cs * grid[1]).astype(np.int64), grid[1])
        return _taus_chunked(cs, ps, ia, ib, g)

    return _chunked_plan(null, n, batch, seed, ia.size, task)


def _masked_joint_plan(
    c: NDArray, p: NDArray, present: NDArray, binary: bool, ia: NDArray, ib: NDArray, null: str,
    n: int, seed: SeedLike, engine: str = "auto",
) -> _Plan:  # fmt: skip
    """:func:`_joint_plan` on pairwise-complete items: each model is shuffled among the items
    it answered (its missing items stay missing), on the union of items, and every pair is
    recomputed on its own shared items (:mod:`metacog_metrics.pairwise.masked`)."""
    if not binary:
        compiled = _compiled_joint_plan(c, p, ia, ib, null, n, seed, engine, present)
        if compiled is not None:
            return compiled
    n_items, m = c.shape
    per_draw = n_items * m * (7 if binary else 3 * max(1, ia.size // max(m, 1)))
    batch = max(1, min(n, _ELEMENTS_PER_CHUNK // max(per_draw, 1)))
    pres_t = np.ascontiguousarray(present.T)
    cn = np.where(present, c, np.nan)
    pn = np.where(present, p, np.nan)
    grid = None if binary else masked_grid(cn)
    if grid is not None and 3 * (2 * grid[1] + 1) > n_items:
        grid = None  # few items a level: the sort path (as for complete data)
    counts = masked_category_counts(c, p, present) if binary else None
    if grid is not None:  # grid-coded confidence: shuffle small integer codes, not floats
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

    def task(b: int, ss: np.random.SeedSequence) -> NDArray:
        rng = np.random.default_rng(ss)
        if binary:
            cs, ps = shuffled_binary_masked(counts, pres_t, null, b, rng)
            return _tau_b_tables(masked_binary_tables(cs, ps, pres_t, ia, ib))
        if grid is not None:
            idx = permutation(rng, b)
            cs = np.take_along_axis(np.broadcast_to(codes_t, idx.shape), idx, axis=-1)
            if null == "base_rate":
                idx = permutation(rng, b)
            ys = np.take_along_axis(np.broadcast_to(y_t, idx.shape), idx, axis=-1)
            return masked_code_taus(cs, ys, both, ia, ib, grid[1])
        cs, ps = shuffled_values_masked(cn, pn, present, null, b, rng)
        return masked_taus(cs, ps, ia, ib, None)

    return _chunked_plan(null, n, batch, seed, ia.size, task)


def _chunked_plan(
    null: str, n: int, batch: int, seed: SeedLike, n_pairs: int,
    draw: Callable[[int, np.random.SeedSequence], NDArray], engine: str = "numpy",
) -> _Plan:  # fmt: skip
    """The :class:`_Plan` of ``n`` joint draws in fixed chunks of ``batch``, each from its own
    child seed, so the draws do not depend on the number of threads. ``draw(b, seed)`` makes
    ``(b, P)`` taus."""
    starts = list(range(0, n, batch))
    seeds = seed_sequence(seed).spawn(len(starts))
    sizes = [min(batch, n - s) for s in starts]

    def finish(parts: list[NDArray]) -> NDArray:
        return np.concatenate(parts, axis=0) if parts else np.zeros((0, n_pairs))

    return _Plan(
        f"joint {null}",
        [lambda b=b, ss=ss: draw(b, ss) for b, ss in zip(sizes, seeds)],
        [b * n_pairs for b in sizes],  # progress counts pair-draws
        finish,
        engine=engine,
    )


def _compiled_joint_plan(
    c: NDArray, p: NDArray, ia: NDArray, ib: NDArray, null: str, n: int, seed: SeedLike,
    engine: str, present: NDArray | None = None,
) -> _Plan | None:  # fmt: skip
    """Joint draws of real-valued confidence on the compiled kernel, or None (NumPy path):
    without numba, or when the values are too many for per-pair lookup tables. With
    ``present`` (pairwise-complete items), each model is shuffled among its own items and each
    pair counted on its shared items."""
    from metacog_metrics.pairwise.pair import _compiled_kernels

    kernels = _compiled_kernels(engine)
    lk = None if kernels is None else _value_lookups(c, ia, ib, present)
    if lk is None:
        return None
    ia64, ib64 = ia.astype(np.int64), ib.astype(np.int64)
    base_rate = null == "base_rate"
    if present is None:
        perf = np.ascontiguousarray(np.rint(p.T), dtype=np.int64)

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            return kernels.joint_levels_kernel(
                lk.codes, perf, ia64, ib64, lk.lut_off, lk.lut, lk.stride, lk.n_levels,
                base_rate, b, kernels.state(ss),
            )  # fmt: skip

        return _chunked_plan(null, n, _COMPILED_DRAWS_PER_TASK, seed, ia.size, draw, "numba")
    pres_t = np.ascontiguousarray(present.T)
    own_off, own = _csr(pres_t)
    shared_off, shared = _csr(pres_t[ia] & pres_t[ib])
    perf = np.ascontiguousarray(np.where(pres_t, np.rint(p.T), 0), dtype=np.int64)

    def draw_masked(b: int, ss: np.random.SeedSequence) -> NDArray:
        return kernels.joint_levels_masked_kernel(
            lk.codes, perf, own_off, own, ia64, ib64, shared_off, shared, lk.lut_off, lk.lut,
            lk.stride, lk.n_levels, base_rate, b, kernels.state(ss),
        )  # fmt: skip

    return _chunked_plan(null, n, _COMPILED_DRAWS_PER_TASK, seed, ia.size, draw_masked, "numba")


def _csr(rows: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Offsets and column indices of the True cells of a ``(R, N)`` mask, row by row."""
    counts = rows.sum(axis=1)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return off, np.nonzero(rows)[1].astype(np.int64)


def _compiled_binary_plan(
    c: NDArray, p: NDArray, ia: NDArray, ib: NDArray, null: str, n: int, seed: SeedLike,
    engine: str,
) -> _Plan | None:  # fmt: skip
    """Joint draws of binary confidence on the compiled kernel (None without numba): each
    model's vectors arranged at random as packed bits, every pair's counts by popcount."""
    from metacog_metrics.pairwise.pair import _compiled_kernels

    kernels = _compiled_kernels(engine)
    if kernels is None:
        return None
    n_items = c.shape[0]
    k = {key: np.ascontiguousarray(v, dtype=np.int64) for key, v in _category_counts(c, p).items()}
    ia64, ib64 = ia.astype(np.int64), ib.astype(np.int64)

    def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
        counts = kernels.joint_binary_counts(
            k["kc"], k["kp"], k["n11"], k["n01"], n_items, ia64, ib64, null == "base_rate", b,
            kernels.state(ss),
        )  # fmt: skip
        return _tau_b_tables(_tables_from_counts(counts, k["kc"], k["kp"], n_items, ia, ib))

    return _chunked_plan(null, n, _COMPILED_DRAWS_PER_TASK, seed, ia.size, draw, "numba")
