"""What the nulls' per-pair samplers are made of: their type, their inputs, and the counting.

A per-pair sampler (:class:`PairSampler`) is bound to a chunk of pairs when the plan is made
and returns a task that draws ``n`` null values of tau-b for each of them from one child seed,
counted against the observed value (:func:`accumulate`, :func:`accumulate_s`). The nulls
register their samplers in :mod:`metacog_metrics.pairwise.nulls`; a null without a sampler for
a case is drawn from its reference law (:func:`reference_pair_sampler`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from types import ModuleType
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from metacog_metrics._conventions import tie_tolerance
from metacog_metrics.pairwise import engines
from metacog_metrics.pairwise.tau import (
    _binary_tables,
    _grid,
    _level_tables,
    _LevelTables,
    _tau_b_tables,
    _tau_from_s,
    pairwise_taus,
)

__all__ = [
    "COMPILED_RATIO",
    "PLACED_PER_LEVEL",
    "PairInputs",
    "PairSampler",
    "PairSettle",
    "PairTask",
    "accumulate",
    "accumulate_s",
    "in_steps",
    "recorded",
    "reference_pair_sampler",
    "scale_moments",
    "tau_scale",
]

_DRAWS_PER_STEP = 1 << 16  # draws per vectorised step of a per-pair task (cache sized)
#: compiled engine: tabulate a law when it has >= 1/4 draw per entry
COMPILED_RATIO = 4.0
#: compiled level tables: the two smaller dperf columns placed item by item up to this many items
#: a level (about 2 ns an item against some 16 ns a level for the variates of the rows)
PLACED_PER_LEVEL = 8.0

#: ``task(n, seed, out)``: ``n`` draws for each pair of a chunk from one child seed; returns
#: ``(P, 5)`` accumulations (:func:`accumulate`); with ``out`` (a ``(P, n)`` float array) it also
#: writes the tau-b draws there (NaN where undefined; within a pair in any order).
PairTask = Callable[[int, np.random.SeedSequence, "NDArray[np.float64] | None"], NDArray]
#: ``settle(inputs, idx, threshold, side, bound)`` -> which pairs ``idx`` one draw reaches
#: (``>= threshold`` on side +1, ``<=`` on -1) with probability at most ``bound``, proven.
PairSettle = Callable[["PairInputs", NDArray[np.intp], NDArray, int, float], NDArray[np.bool_]]


class PairInputs:
    """A complete block of items x models and the pairs drawn on it: what the per-pair
    samplers read, each part computed once (when the plan is made, before any task runs).

    Args:
        conf: ``(N, M)`` confidence, complete.
        perf: ``(N, M)`` 0/1 correctness, complete.
        ia: First model of each pair.
        ib: Second model of each pair.
        binary: Whether every confidence is 0 or 1.
        engine: ``"auto"``, ``"numpy"`` or ``"numba"``: :attr:`kernels` is the compiled kernel
            module when it draws, else None.
        level_tables: The pairs' :func:`~metacog_metrics.pairwise.tau._level_tables`, when the
            caller has them (real-valued confidence).
    """

    def __init__(
        self, conf: NDArray, perf: NDArray, ia: NDArray, ib: NDArray, binary: bool,
        engine: str = "auto", level_tables: _LevelTables | None = None,
    ) -> None:  # fmt: skip
        self.conf, self.perf, self.ia, self.ib, self.binary = conf, perf, ia, ib, binary
        self.kernels: ModuleType | None = engines.compiled_kernels(engine)
        if level_tables is not None:
            self.__dict__["levels"] = level_tables

    @property
    def confidence(self) -> Literal["binary", "levels"]:
        """The samplers' case: ``"binary"`` or ``"levels"`` (real-valued)."""
        return "binary" if self.binary else "levels"

    @functools.cached_property
    def tables(self) -> NDArray[np.int64]:
        """``(P, 3, 3)`` observed (dconf, dperf) tables (binary confidence)."""
        return _binary_tables(self.conf, self.perf, self.ia, self.ib)

    @functools.cached_property
    def categories(self) -> NDArray[np.int64]:
        """``(M, 4)`` each model's counts of the categories ``2 conf + perf`` (binary)."""
        cb, pb = self.conf > 0.5, self.perf > 0.5
        kc = cb.sum(axis=0).astype(np.int64)
        n11 = (cb & pb).sum(axis=0).astype(np.int64)
        n01 = (~cb & pb).sum(axis=0).astype(np.int64)
        return np.stack([self.conf.shape[0] - kc - n01, n01, kc - n11, n11], axis=1)

    @functools.cached_property
    def levels(self) -> _LevelTables:
        """The pairs' level tables (real-valued confidence)."""
        return _level_tables(self.conf, self.perf, self.ia, self.ib)

    @functools.cached_property
    def tau(self) -> NDArray[np.float64]:
        """``(P,)`` observed tau-b."""
        return _tau_b_tables(self.tables) if self.binary else self.levels.tau

    @functools.cached_property
    def item_values(self) -> tuple[NDArray, NDArray, int | None]:
        """``(M, N)`` confidence (integer grid codes as floats when it has a grid), ``(M, N)``
        correctness and the number of dconf codes (None without a grid)."""
        codes, q = _grid(self.conf) or (None, 0)
        if codes is None:
            return self.conf.T, self.perf.T, None
        return codes.T.astype(float), self.perf.T, 2 * q + 1

    @functools.cached_property
    def number_tables(self) -> NDArray[np.float64]:
        """The compiled kernels' log-factorial tables up to the number of items."""
        if self.kernels is None:
            raise RuntimeError("number_tables needs the compiled kernels")
        return self.kernels.number_tables(self.conf.shape[0])


@dataclasses.dataclass(frozen=True)
class PairSampler:
    """Per-pair draws of one null, for one kind of confidence, on one engine.

    Attributes:
        engine: What draws (``"numpy"`` or ``"numba"``; the results report it).
        bind: ``bind(inputs, idx)`` -> :data:`PairTask` for the pairs ``idx`` of a
            :class:`PairInputs`, called when the plan is made (the task runs on a thread).
        chunking: How the pairs are split into tasks: ``"tables"`` (a draw's cost does not
            depend on the items: a fixed number of draws a chunk) or ``"items"`` (bounded by
            items x draws).
        serves: Which of the pairs it draws (a boolean mask from the inputs); None: all that
            the samplers before it in its case left.
        settle: ``settle(inputs, idx, threshold, side, bound)`` -> which pairs ``idx`` a
            single draw reaches (``>= threshold`` on side +1, ``<=`` on -1) with probability
            at most ``bound``, proven (:mod:`~metacog_metrics.pairwise.tail_bounds`); the
            sequential tests settle those without drawing on. None: no such bound.
    """

    engine: str
    bind: Callable[[PairInputs, NDArray[np.intp]], PairTask]
    chunking: Literal["tables", "items"] = "tables"
    serves: Callable[[PairInputs], NDArray[np.bool_]] | None = None
    settle: PairSettle | None = None


def accumulate(obs: NDArray, draws: NDArray) -> NDArray:
    """Per row of (P, B) draws: [#>=obs, #<=obs, n_valid, sum, sum of squares]."""
    gamma = tie_tolerance(obs)
    valid = np.isfinite(draws)
    ge = ((draws >= (obs - gamma)[:, None]) & valid).sum(axis=1)
    le = ((draws <= (obs + gamma)[:, None]) & valid).sum(axis=1)
    d = np.where(valid, draws, 0.0)
    return np.stack([ge, le, valid.sum(axis=1), d.sum(axis=1), (d * d).sum(axis=1)], axis=1)


def tau_scale(rows: NDArray, cols: NDArray) -> NDArray[np.float64]:
    """``tau-b / S`` of tables with these ``(P, R)`` row and ``(P, C)`` column sums (NaN where
    a margin is constant): with both margins fixed, tau-b is S times this constant."""
    return _tau_from_s(np.ones(rows.shape[0]), rows.astype(float), cols.astype(float))


def accumulate_s(s_null: NDArray, s_obs: NDArray, rows: NDArray, cols: NDArray) -> NDArray:
    """:func:`accumulate` of (P, B) null draws of Kendall's S with fixed margins.

    With both margins fixed tau-b is S times a constant, so the integer S is compared with the
    observed one exactly (a draw equal to it counts on both sides); a pair whose tau-b is
    undefined (a constant margin) gets zeros.
    """
    scale = tau_scale(rows, cols)
    ok = np.isfinite(scale)  # 1 / sqrt(denominator), NaN when a margin is constant
    ge = np.where(ok, (s_null >= s_obs[:, None]).sum(axis=1), 0)
    le = np.where(ok, (s_null <= s_obs[:, None]).sum(axis=1), 0)
    s1 = np.where(ok, s_null.sum(axis=1) * scale, 0.0)
    s2 = np.where(ok, (s_null.astype(float) ** 2).sum(axis=1) * scale**2, 0.0)
    n = s_null.shape[1]
    return np.stack([ge, le, np.where(ok, n, 0), s1, s2], axis=1).astype(float)


def scale_moments(acc: NDArray, scale: NDArray, out: NDArray | None) -> NDArray:
    """Kernel accumulations of S (and recorded S draws in ``out``) to those of tau-b: sums
    times ``scale``, sums of squares times its square; pairs without a tau-b keep zeros."""
    ok = np.isfinite(scale)  # the kernels leave the pairs without a tau-b at zero
    acc[:, 3] *= np.where(ok, scale, 0.0)
    acc[:, 4] *= np.where(ok, scale, 0.0) ** 2
    if out is not None:
        out *= scale[:, None]
    return acc


def recorded(out: NDArray | None) -> NDArray[np.float64]:
    """What the compiled kernels take for their draws: ``out`` or an empty ``(0, 0)`` array."""
    return np.zeros((0, 0)) if out is None else out


def in_steps(n_pairs: int, n: int, step: Callable[[slice], NDArray]) -> NDArray:
    """``step(pairs)`` over slices of pairs a few at a time (so that the arrays of one step
    stay in cache), its ``(p, 5)`` results stacked."""
    size = max(1, _DRAWS_PER_STEP // n)
    parts = [step(slice(s, s + size)) for s in range(0, n_pairs, size)]
    return np.concatenate(parts) if parts else np.zeros((0, 5))


def reference_pair_sampler(law: Callable) -> PairSampler:
    """A sampler that draws from ``law`` itself (one draw of one pair at a time): the path of
    a null without a fast sampler for the case."""

    def bind(inputs: PairInputs, idx: NDArray[np.intp]) -> PairTask:
        c, p = inputs.conf, inputs.perf
        a, b, obs = inputs.ia[idx], inputs.ib[idx], inputs.tau[idx]

        def task(n: int, ss: np.random.SeedSequence, out: NDArray | None = None) -> NDArray:
            rng = np.random.default_rng(ss)
            draws = np.empty((idx.size, n))
            for k in range(idx.size):
                cols = [a[k], b[k]]
                shuffled = [law(c[:, cols], p[:, cols], rng) for _ in range(n)]
                cs = np.stack([s[0] for s in shuffled])
                ps = np.stack([s[1] for s in shuffled])
                draws[k] = pairwise_taus(cs, ps)[:, 0]
            if out is not None:
                out[...] = draws
            return accumulate(obs, draws)

        return task

    return PairSampler("numpy", bind, chunking="items")
