"""Per-pair permutation tests: random tables (NumPy or compiled), whatever the confidence.

Binary confidence: 3x3 tables (base-rate) and 4x4 category tables (calibration-preserving).
Real-valued confidence: (dconf level x dperf) tables (base-rate) and category matching tables
(calibration-preserving, compiled engine; item permutations where the categories are too many
or numba is missing). A draw's cost depends on the levels and categories, not the items.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import seed_sequence, tie_tolerance, value_ties
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
    _check_null,
    _execute,
    _p_values,
    _pairs,
    _Plan,
)
from metacog_metrics.pairwise.results import PairTestResult
from metacog_metrics.pairwise.samplers import (
    _base_rate_s,
    _calibration_taus,
    _category_counts,
    _levels_base_rate_s,
)
from metacog_metrics.pairwise.tau import (
    _binary_tables,
    _gather,
    _grid,
    _kendall_s,
    _level_tables,
    _LevelTables,
    _tau_b_codes,
    _tau_b_sorted,
    _tau_b_tables,
    _tau_from_s,
)

_TABLES_PER_CHUNK = 1 << 19  # random tables per chunk (bounded memory, fixed for determinism)
_DRAWS_PER_STEP = 1 << 16  # draws per vectorised step of a per-pair task (cache sized)
_NO_NUMBA_ENV = "METACOG_NO_NUMBA"
_COMPILED_RATIO = 4.0  # compiled engine: tabulate a law when it has >= 1/4 draw per entry
_MATCHING_RATIO = 4.0  # matching tables: a row with > 4 items a column is drawn by columns
_compiled_state: dict[str, Any] = {}


def _accumulate(obs: NDArray, draws: NDArray) -> NDArray:
    """Per row of (P, B) draws: [#>=obs, #<=obs, n_valid, sum, sum of squares]."""
    gamma = tie_tolerance(obs)
    valid = np.isfinite(draws)
    ge = ((draws >= (obs - gamma)[:, None]) & valid).sum(axis=1)
    le = ((draws <= (obs + gamma)[:, None]) & valid).sum(axis=1)
    d = np.where(valid, draws, 0.0)
    return np.stack([ge, le, valid.sum(axis=1), d.sum(axis=1), (d * d).sum(axis=1)], axis=1)


def _accumulate_s(s_null: NDArray, s_obs: NDArray, rows: NDArray, cols: NDArray) -> NDArray:
    """:func:`_accumulate` of (P, B) null draws of Kendall's S with fixed margins.

    With both margins fixed tau-b is S times a constant, so the integer S is compared with the
    observed one exactly (a draw equal to it counts on both sides); a pair whose tau-b is
    undefined (a constant margin) gets zeros.
    """
    scale = _tau_from_s(np.ones(s_obs.shape), rows.astype(float), cols.astype(float))
    ok = np.isfinite(scale)  # 1 / sqrt(denominator), NaN when a margin is constant
    ge = np.where(ok, (s_null >= s_obs[:, None]).sum(axis=1), 0)
    le = np.where(ok, (s_null <= s_obs[:, None]).sum(axis=1), 0)
    s1 = np.where(ok, s_null.sum(axis=1) * scale, 0.0)
    s2 = np.where(ok, (s_null.astype(float) ** 2).sum(axis=1) * scale**2, 0.0)
    n = s_null.shape[1]
    return np.stack([ge, le, np.where(ok, n, 0), s1, s2], axis=1).astype(float)


def _binary_pair_task(
    tables: NDArray, cats: tuple[NDArray, NDArray] | None, null: str, n: int, ss: Any
) -> NDArray:
    """Per-pair draws for binary confidence: (P, 5) accumulations (see :func:`_accumulate`).

    Pairs are drawn a few at a time, so that the arrays of one step stay in cache.
    """
    rng = np.random.default_rng(ss)
    step = max(1, _DRAWS_PER_STEP // n)
    parts = []
    for s in range(0, tables.shape[0], step):
        t = tables[s : s + step]
        obs = _tau_b_tables(t)
        if null == "calibration_preserving":
            taus = _calibration_taus(cats[0][s : s + step], cats[1][s : s + step], n, rng)
            parts.append(_accumulate(obs, taus))
            continue
        # Margins are fixed, so tau-b is S times a constant: compare the integer S exactly.
        rows, cols = t.sum(axis=-1), t.sum(axis=-2)
        s_null = _base_rate_s(rows, cols, n, rng)
        s_obs = _kendall_s(t)
        parts.append(_accumulate_s(s_null, s_obs, rows, cols))
    return np.concatenate(parts)


def _compiled_kernels(engine: str) -> Any:
    """The compiled per-pair kernels for ``engine``, or None for the NumPy engine.

    ``"auto"`` takes them when numba imports and the environment variable
    ``METACOG_NO_NUMBA`` is unset (or 0/false/no); ``"numba"`` insists on them.
    """
    if engine == "numpy":
        return None
    if engine == "auto" and os.environ.get(_NO_NUMBA_ENV, "").strip().lower() not in (
        "", "0", "false", "no",
    ):  # fmt: skip
        return None
    if "module" not in _compiled_state:  # import (and compile) once per process
        try:
            from metacog_metrics.pairwise import _numba

            _compiled_state["module"] = _numba
        except ImportError as exc:  # numba not installed (or not for this NumPy)
            _compiled_state["module"], _compiled_state["error"] = None, exc
        except Exception as exc:  # a numba that fails to compile here: keep working
            _compiled_state["module"], _compiled_state["error"] = None, exc
            warnings.warn(
                f"compiled per-pair kernels unavailable ({exc!r}); using the NumPy engine",
                RuntimeWarning,
                stacklevel=3,
            )
    module = _compiled_state["module"]
    if module is None and engine == "numba":
        raise ImportError(
            "engine='numba' needs numba (pip install 'metacog-eval[fast]'): "
            f"{_compiled_state['error']!r}"
        ) from _compiled_state["error"]
    return module


def compiled_engine_available(engine: str = "auto") -> bool:
    """Whether ``engine`` draws binary per-pair nulls with the compiled kernels."""
    try:
        return _compiled_kernels(engine) is not None
    except ImportError:
        return False


def _compiled_pair_task(
    kernels: Any, tables: NDArray, cats: tuple[NDArray, NDArray] | None, null: str, n: int,
    ss: np.random.SeedSequence, lf: NDArray,
) -> NDArray:  # fmt: skip
    """:func:`_binary_pair_task` on the compiled kernels (same law, other draws for a seed)."""
    state = kernels.state(ss)
    none = np.zeros((0, 0))
    if null == "calibration_preserving":
        obs = np.ascontiguousarray(_tau_b_tables(tables))
        a, b = (np.ascontiguousarray(v, dtype=np.int64) for v in cats)
        return kernels.calibration_kernel(a, b, obs, n, state, lf, _COMPILED_RATIO, none)
    rows, cols = tables.sum(axis=-1), tables.sum(axis=-2)
    margins = np.ascontiguousarray(np.concatenate([rows, cols], axis=1), dtype=np.int64)
    s_obs = np.ascontiguousarray(_kendall_s(tables), dtype=np.int64)
    acc = kernels.base_rate_kernel(margins, s_obs, n, state, lf, _COMPILED_RATIO, none)
    scale = _tau_from_s(np.ones(rows.shape[0]), rows.astype(float), cols.astype(float))
    ok = np.isfinite(scale)  # the kernel leaves the pairs without a tau-b at zero
    acc[:, 3] *= np.where(ok, scale, 0.0)
    acc[:, 4] *= np.where(ok, scale, 0.0) ** 2
    return acc


def _levels_pair_task(lt: _LevelTables, n: int, ss: Any) -> NDArray:
    """Base-rate draws for real-valued pairs (NumPy): ``(P, 5)`` accumulations.

    A draw is a random (dconf level x dperf) table with the pair's margins
    (:func:`~metacog_metrics.pairwise.samplers._levels_base_rate_s`). The margins are fixed,
    so tau-b is S times a constant: the integer S is compared with the observed one exactly.
    """
    rng = np.random.default_rng(ss)
    n_pairs = lt.cols.shape[0]
    sizes = np.diff(lt.row_off)
    step = max(1, _DRAWS_PER_STEP // n)
    parts = []
    for s in range(0, n_pairs, step):
        e = min(n_pairs, s + step)
        rows = np.zeros((e - s, max(1, int(sizes[s:e].max(initial=0)))), dtype=np.int64)
        for k in range(s, e):
            rows[k - s, : sizes[k]] = lt.rows[lt.row_off[k] : lt.row_off[k + 1]]
        cols = lt.cols[s:e]
        s_null = _levels_base_rate_s(rows, cols, n, rng)
        s_obs = lt.s_obs[s:e]
        parts.append(_accumulate_s(s_null, s_obs, rows, cols))
    return np.concatenate(parts) if parts else np.zeros((0, 5))


def _compiled_levels_task(
    kernels: Any, lt: _LevelTables, null: str, n: int, ss: np.random.SeedSequence, lf: NDArray
) -> NDArray:
    """Real-valued pairs on the compiled kernels: ``(P, 5)`` accumulations."""
    state = kernels.state(ss)
    none = np.zeros((0, 0))
    if null == "calibration_preserving":
        return kernels.matching_kernel(
            lt.a_off, lt.a_cnt, lt.b_off, lt.b_cnt, lt.cell_off, lt.cell_code, lt.n_levels,
            lt.n, np.ascontiguousarray(lt.tau), n, state, lf, _MATCHING_RATIO, none,
        )  # fmt: skip
    acc = kernels.levels_base_rate_kernel(
        lt.row_off, lt.rows, np.ascontiguousarray(lt.cols), lt.s_obs, n, state, lf, none
    )
    sizes = np.diff(lt.row_off)
    rows = np.zeros((sizes.size, max(1, int(sizes.max(initial=0)))))
    for k in range(sizes.size):
        rows[k, : sizes[k]] = lt.rows[lt.row_off[k] : lt.row_off[k + 1]]
    scale = _tau_from_s(np.ones(sizes.size), rows, lt.cols.astype(float))
    ok = np.isfinite(scale)
    acc[:, 3] *= np.where(ok, scale, 0.0)
    acc[:, 4] *= np.where(ok, scale, 0.0) ** 2
    return acc


def _exact_chunk_task(
    ca: NDArray,
    pa: NDArray,
    cb: NDArray,
    pb: NDArray,
    n: int,
    ss: Any,
    levels: int | None,
) -> NDArray:
    """Calibration-preserving draws by permuting the items, for a chunk of pairs.

    The path of real-valued pairs with too many distinct values for matching tables (and of
    the NumPy engine): B's items are permuted against A's. ``ca``/``cb`` are A's and B's
    confidences (integer grid codes when ``levels`` is given), ``pa``/``pb`` their
    correctness, rows of ``(P, N)`` inputs. Returns ``(P, 5)`` accumulations.
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
        acc += _accumulate(obs, t)
    return acc


def _exact_obs(ca: NDArray, pa: NDArray, cb: NDArray, pb: NDArray, levels: int | None) -> NDArray:
    """tau-b along the last axis of broadcast (A, B) columns."""
    ca, pa, cb, pb = np.broadcast_arrays(ca, pa, cb, pb)
    dy = np.rint(pa - pb + 1).astype(np.int64)
    if levels is not None and 3 * levels <= ca.shape[-1]:  # tables pay off: many items a level
        q = (levels - 1) // 2
        return _tau_b_codes(np.rint(ca - cb).astype(np.int64) + q, dy, levels)
    return _tau_b_sorted(value_ties(ca - cb), dy)


def pair_permutation_test(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    null: Null = "base_rate",
    permutations: int = 10_000,
    alternative: Alternative = "two-sided",
    rng: SeedLike = None,
    pairs: Any = None,
    progress: bool = False,
    workers: int | None = None,
    engine: Engine = "auto",
) -> PairTestResult:
    """Permutation p-value of every pair's tau-b under one null.

    ``base_rate``: ``dconf`` permuted against ``dperf`` within the pair. For binary confidence a
    draw is a random 3x3 (dconf x dperf) table with the observed margins.
    ``calibration_preserving``: B's items permuted against A's, each model keeping its own
    (conf, perf) pairs; for binary confidence a draw is a random 4x4 table of A's by B's
    category with both category counts fixed. Either way a draw never touches the items, so the
    cost does not grow with them. Real-valued confidence permutes the items (exact path).

    Draws are made in fixed chunks, each with its own child seed, and spread over ``workers``
    threads; results do not depend on the number of workers. With numba installed (the
    ``fast`` extra) binary confidence is drawn by compiled kernels, several times faster; they
    draw from the same exact law, but other draws than the NumPy engine for the same seed
    (``engine="numpy"`` or ``METACOG_NO_NUMBA=1`` reproduces the NumPy engine's).

    Args:
        conf: ``(items, models)`` confidence.
        perf: ``(items, models)`` 0/1 correctness.
        null: ``"base_rate"`` or ``"calibration_preserving"``.
        permutations: Draws per pair (B).
        alternative: ``"two-sided"``, ``"greater"`` (tau above the null) or ``"less"``.
        rng: Seed (int), ``SeedSequence`` or ``Generator`` (SciPy's ``rng`` convention).
        pairs: ``(a, b)`` model indices (default all pairs).
        progress: Show a progress bar.
        workers: Threads (default: the CPU count).
        engine: ``"auto"`` (compiled kernels when numba imports and ``METACOG_NO_NUMBA`` is
            unset), ``"numpy"`` or ``"numba"``. Real-valued confidence always takes NumPy.

    Returns:
        A :class:`PairTestResult`.

    Raises:
        ValueError: On bad inputs, null, alternative or engine.
        ImportError: ``engine="numba"`` without numba.
    """
    _check_null(null)
    _check_alternative(alternative)
    _check_engine(engine)
    if permutations < 1:
        raise ValueError("permutations must be >= 1")
    c, p, binary = _check(conf, perf)
    if c.ndim != 2:
        raise ValueError("pair_permutation_test takes 2-D (items, models) arrays")
    ia, ib = _pairs(c.shape[1], pairs)
    plan = _pair_plan(c, p, binary, ia, ib, null, int(permutations), alternative, rng, engine)
    return _execute([plan], workers, progress)[0]


def _real_valued_tasks(
    c: NDArray, p: NDArray, ia: NDArray, ib: NDArray, null: str, permutations: int,
    seed: SeedLike, engine: str, tasks: list[Callable[[], NDArray]], sizes: list[int],
    level_tables: _LevelTables | None = None,
) -> tuple[NDArray, str, NDArray]:  # fmt: skip
    """Append the tasks of real-valued pairs; return the observed tau-b, the engine and the
    pair order of the tasks' results.

    Base-rate: level tables (:class:`_LevelTables`), compiled or NumPy. Calibration-preserving:
    matching tables on the compiled engine for pairs with few categories, else item
    permutations. Every group of pairs is split into fixed chunks with their own child seeds.
    """
    lt = _level_tables(c, p, ia, ib) if level_tables is None else level_tables
    kernels = _compiled_kernels(engine)
    lf = None if kernels is None else kernels.number_tables(int(lt.n.max(initial=1)))
    used = "numpy"
    if null == "base_rate":
        groups = [("levels", np.arange(ia.size))]
    elif kernels is not None:
        groups = [("levels", np.flatnonzero(lt.matching)), ("items", np.flatnonzero(~lt.matching))]
    else:
        groups = [("items", np.arange(ia.size))]
    groups = [(kind, idx) for kind, idx in groups if idx.size]
    root = seed_sequence(seed)
    # one group (the usual case) draws its chunks' seeds from the root itself, as the item
    # permutations always did: the NumPy engine's calibration-preserving draws are unchanged
    group_seeds = [root] if len(groups) == 1 else root.spawn(len(groups))
    grid = None
    for (kind, idx), group_seed in zip(groups, group_seeds):
        if kind == "levels":
            step = max(1, _TABLES_PER_CHUNK // permutations)
            starts = list(range(0, idx.size, step))
            for s, ss in zip(starts, group_seed.spawn(len(starts))):
                part = lt.select(idx[s : s + step])
                if kernels is None:
                    tasks.append(lambda t=part, ss=ss: _levels_pair_task(t, permutations, ss))
                else:
                    used = "numba"
                    tasks.append(
                        lambda t=part, ss=ss: _compiled_levels_task(
                            kernels, t, null, permutations, ss, lf
                        )
                    )
                sizes.append(part.n.size * permutations)
            continue
        if grid is None:
            grid = _grid(c) or (None, 0)
        codes, q = grid
        levels = None if codes is None else 2 * q + 1
        vals = c.T if codes is None else codes.T.astype(float)  # (M, N)
        pt = p.T
        step = max(1, _ELEMENTS_PER_CHUNK // (c.shape[0] * min(permutations, 256)))
        starts = list(range(0, idx.size, step))
        for s, ss in zip(starts, group_seed.spawn(len(starts))):
            a, b = ia[idx[s : s + step]], ib[idx[s : s + step]]
            tasks.append(
                lambda ca=vals[a], pa=pt[a], cb=vals[b], pb=pt[b], ss=ss, lv=levels: (
                    _exact_chunk_task(ca, pa, cb, pb, permutations, ss, lv)
                )
            )
            sizes.append(a.size * permutations)
    order = np.concatenate([idx for _, idx in groups] or [np.zeros(0, np.int64)])
    return lt.tau, used, order


def _pair_plan(
    c: NDArray, p: NDArray, binary: bool, ia: NDArray, ib: NDArray, null: str,
    permutations: int, alternative: str, seed: SeedLike, engine: str = "auto",
    level_tables: _LevelTables | None = None,
) -> _Plan:  # fmt: skip
    """The per-pair tests of one null as tasks for :func:`_execute`, and how to merge their
    results. ``level_tables``: the :func:`_level_tables` of these real-valued pairs, when the
    caller already has them (both nulls read the same)."""
    n_pairs = ia.size
    tasks: list[Callable[[], NDArray]] = []
    sizes: list[int] = []
    kernels = _compiled_kernels(engine) if binary else None
    used = "numpy"
    order = None
    if binary:
        tables = _binary_tables(c, p, ia, ib)
        cats = None
        if null == "calibration_preserving":
            k = _category_counts(c, p)  # per model, counts of the categories 2 conf + perf
            counts = np.stack(
                [c.shape[0] - k["kc"] - k["n01"], k["n01"], k["kc"] - k["n11"], k["n11"]], axis=1
            )
            cats = (counts[ia], counts[ib])
        step = max(1, _TABLES_PER_CHUNK // permutations)
        starts = list(range(0, n_pairs, step))
        seeds = seed_sequence(seed).spawn(len(starts))
        if kernels is not None:
            used = "numba"
            lf = kernels.number_tables(c.shape[0])
        for s, ss in zip(starts, seeds):
            sl = slice(s, s + step)
            part = None if cats is None else (cats[0][sl], cats[1][sl])
            if kernels is None:
                tasks.append(
                    lambda t=tables[sl], k=part, ss=ss: _binary_pair_task(
                        t, k, null, permutations, ss
                    )
                )
            else:
                tasks.append(
                    lambda t=tables[sl], k=part, ss=ss: _compiled_pair_task(
                        kernels, t, k, null, permutations, ss, lf
                    )
                )
            sizes.append(min(step, n_pairs - s) * permutations)
        tau = _tau_b_tables(tables)
    else:
        tau, used, order = _real_valued_tasks(
            c, p, ia, ib, null, permutations, seed, engine, tasks, sizes, level_tables
        )

    def finish(results: list[NDArray]) -> PairTestResult:
        acc = np.concatenate([np.atleast_2d(r) for r in results]) if results else np.zeros((0, 5))
        if order is not None:  # results come group by group: back to the pairs' order
            acc = acc[np.argsort(order, kind="stable")]
        ge, le, nv, s1, s2 = acc.T
        p_value, p_greater, p_less = _p_values(ge, le, nv, alternative)
        ok = np.isfinite(tau)
        p_value = np.where(ok, p_value, np.nan)
        p_greater = np.where(ok, p_greater, np.nan)
        p_less = np.where(ok, p_less, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(nv > 0, s1 / nv, np.nan)
            var = np.where(nv > 1, (s2 - nv * mean**2) / (nv - 1), np.nan)
        return PairTestResult(
            null=null,
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
        )

    return _Plan(f"pairs {null}", tasks, sizes, finish)
