"""Sequential Monte Carlo p-values (Besag and Clifford 1991) for the per-pair tests.

A pair's null draws stop as soon as ``h`` of them are at least as extreme as the observed
value, or at the cap ``n`` (``--permutations``). Stopped at draw ``L``, the p-value is
``h / L``; at the cap with ``G < h`` draws at least as extreme, ``(G + 1) / (n + 1)``, the
fixed-n p-value. Both are valid p-values (``P(p <= u) <= u`` under the null for every ``u``),
so Benjamini-Hochberg over them keeps its guarantee. A pair far from significance stops after
about ``h / p`` draws; a significant one still gets the whole cap, so no p-value below
``1 / (n + 1)`` is lost.

The rule for each alternative:

* ``"greater"``: draws at least as extreme are those ``>=`` the observed tau-b; stop at the
  ``h``-th (``p_greater = h / L``).
* ``"less"``: the same with ``<=``.
* ``"two-sided"``: both one-sided rules run on the same draws, each stopping its own count at
  its own ``h``-th draw, and the draws go on until both have stopped or the cap is reached;
  ``p = min(1, 2 min(p_greater, p_less))`` (SciPy's two-sided convention), valid since each
  side is (a union bound).

Under a one-sided alternative the draws stop with the chosen side; the other side's p-value is
then ``(count + 1) / (draws + 1)`` over the draws made (reported, not a test).

A side still drawing, the other stopped, can be *settled* after a round where its sampler has
a concentration bound (:mod:`~metacog_metrics.pairwise.tail_bounds`) that proves one draw
reaches the observed value with probability at most ``SETTLE_RISK / n``: its remaining draws
count as made and missing, which they all are except with probability ``SETTLE_RISK``, and its
p-value is the fixed-n one at the cap.

Draws are made in rounds (:func:`rounds`: ``4 h`` draws, then twice as many each round) by
any per-pair sampler of the registry, which returns only counts. Within a round the draws are
independent and identically distributed, so their order is a uniformly random arrangement of
their counts: where a side reaches ``h`` inside a round, the draw that made it so is found by
drawing that arrangement (:func:`crossing_draws`). This is the sequential procedure exactly,
in law, for every sampler (compiled kernels group their draws by value, so their own order
is not a random order). Draws with an undefined tau-b are skipped (not counted in ``L``), as
the fixed-n p-value leaves them out.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from metacog_metrics.pairwise.tail_bounds import SETTLE_RISK

__all__ = [
    "DEFAULT_EXCEEDANCES",
    "SEQUENTIAL_COLUMNS",
    "Settle",
    "crossing_draws",
    "exceedances_of",
    "rounds",
    "sequential_counts",
    "sequential_p_values",
]

#: ``settle(rows, side, bound)`` -> the pairs ``rows`` a draw reaches on ``side`` with
#: probability at most ``bound``, proven (:func:`sequential_counts`).
Settle = Callable[[NDArray[np.intp], int, float], NDArray[np.bool_]]

#: Draws at least as extreme as the observed value after which a pair's draws stop (h). With
#: h = 20 a stopped p-value h / L has a relative standard error of about 1 / sqrt(20) = 22%;
#: docs/pairwise.md gives the FDR decisions it changes on real runs.
DEFAULT_EXCEEDANCES = 20
#: First round: this many times h draws (a pair with p near 1/2 on both sides stops in it).
_FIRST_ROUND = 4
#: Columns of the per-pair accumulations of a sequential task.
SEQUENTIAL_COLUMNS = (
    "ge", "le", "n_valid", "sum", "sum_sq", "stop_greater", "stop_less", "settled",
)  # fmt: skip


def exceedances_of(sequential: bool | int) -> int:
    """``h`` of a ``sequential`` argument: True is :data:`DEFAULT_EXCEEDANCES`, False or 0 is
    0 (fixed n), an integer ``h >= 1`` is itself.

    >>> exceedances_of(True), exceedances_of(False), exceedances_of(5)
    (20, 0, 5)

    Raises:
        ValueError: A negative or non-integer value.
    """
    if isinstance(sequential, (bool, np.bool_)):
        return DEFAULT_EXCEEDANCES if sequential else 0
    if int(sequential) != sequential or sequential < 0:
        raise ValueError(f"sequential must be True, False or an integer h >= 0, got {sequential!r}")
    return int(sequential)


def rounds(cap: int, h: int) -> list[int]:
    """Draws of each round up to ``cap`` in all: ``4 h``, then doubling, the last cut.

    >>> rounds(10_000, 20)
    [80, 160, 320, 640, 1280, 2560, 4960]
    >>> rounds(50, 20)
    [50]
    """
    out: list[int] = []
    size, total = max(1, _FIRST_ROUND * h), 0
    while total < cap:
        b = min(size, cap - total)
        out.append(b)
        total += b
        size *= 2
    return out


def _sides(alternative: str) -> tuple[bool, bool]:
    """Which one-sided counts must stop: ``(greater, less)``."""
    return {"greater": (True, False), "less": (False, True), "two-sided": (True, True)}[alternative]


def crossing_draws(
    ge: NDArray, le: NDArray, n_valid: NDArray, need_ge: NDArray, need_le: NDArray,
    rng: np.random.Generator,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:  # fmt: skip
    """Where, in a uniformly random order of a round's valid draws, the ``need_ge``-th draw
    ``>=`` the observed value and the ``need_le``-th draw ``<=`` it fall (1-based; 0 where
    not asked: a need of 0).

    Args:
        ge: ``(P,)`` draws of the round ``>=`` the observed value (ties within tolerance
            included).
        le: ``(P,)`` draws ``<=`` it; a draw counted in both is equal to it.
        n_valid: ``(P,)`` valid draws of the round (every one is in ``ge`` or ``le``).
        need_ge: ``(P,)`` rank sought among the ``ge`` draws (``<= ge``), 0 for none.
        need_le: ``(P,)`` rank sought among the ``le`` draws, 0 for none.
        rng: Generator of the arrangement.

    Returns:
        ``(position of the need_ge-th, position of the need_le-th)``.

    >>> crossing_draws(np.array([3]), np.array([0]), np.array([3]), np.array([2]),
    ...                np.array([0]), np.random.default_rng(0))
    (array([2]), array([0]))
    """
    ge, le, nv = (np.asarray(v, dtype=np.int64) for v in (ge, le, n_valid))
    need_ge, need_le = np.asarray(need_ge, np.int64), np.asarray(need_le, np.int64)
    pos_ge = np.zeros(ge.size, dtype=np.int64)
    pos_le = np.zeros(ge.size, dtype=np.int64)
    rows = np.flatnonzero((need_ge > 0) | (need_le > 0))
    if not rows.size:
        return pos_ge, pos_le
    equal = ge[rows] + le[rows] - nv[rows]
    only_ge = ge[rows] - equal
    width = int(nv[rows].max())
    slot = np.arange(width)
    # slot kinds: [only_ge draws | only_le draws | equal draws | padding], then a random order
    # of each row's valid slots (keys of padding sort last)
    kind = np.where(slot < only_ge[:, None], 0,
                    np.where(slot < (only_ge + le[rows] - equal)[:, None], 1,
                             np.where(slot < nv[rows][:, None], 2, 3)))  # fmt: skip
    keys = np.where(kind < 3, rng.random(kind.shape), np.inf)
    arranged = np.take_along_axis(kind, np.argsort(keys, axis=1, kind="stable"), axis=1)
    for need, hit, pos in ((need_ge, arranged != 1, pos_ge), (need_le, arranged != 0, pos_le)):
        want = need[rows]
        hit = hit & (arranged < 3)
        found = np.argmax(np.cumsum(hit, axis=1) >= np.maximum(want, 1)[:, None], axis=1) + 1
        pos[rows] = np.where(want > 0, found, 0)
    return pos_ge, pos_le


def _child(seed: np.random.SeedSequence, i: int) -> np.random.SeedSequence:
    """The ``i``-th child of ``seed`` as ``seed.spawn`` would first give it, without spawning
    (which counts its children in ``seed``: a task run twice, or run and then pickled, would
    draw from other seeds the second time)."""
    return np.random.SeedSequence(
        seed.entropy, spawn_key=(*seed.spawn_key, i), pool_size=seed.pool_size
    )


def sequential_counts(
    draw: object, n_pairs: int, observed: NDArray, cap: int, h: int, alternative: str,
    seed: np.random.SeedSequence, settle: Settle | None = None,
) -> NDArray[np.float64]:  # fmt: skip
    """Draw for ``n_pairs`` pairs in rounds until each stops (the rule of the module).

    Args:
        draw: ``draw(rows, b, seed)`` -> ``(len(rows), 5)`` accumulations
            (:func:`~metacog_metrics.pairwise.pair_draws.accumulate`) of ``b`` new draws of the
            pairs ``rows`` (indices into the ``n_pairs``) from ``seed``.
        n_pairs: Pairs.
        observed: ``(n_pairs,)`` observed tau-b (a pair whose tau-b is undefined gets one
            round, for its null's mean and sd, and no p-value).
        cap: Most draws a pair gets (``--permutations``).
        h: Draws at least as extreme after which a side stops.
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"``.
        seed: The task's seed: each round draws from its own children.
        settle: ``settle(rows, side, bound)`` -> which of the pairs ``rows`` a single draw
            reaches on ``side`` (+1: ``>=``, -1: ``<=``) with probability at most ``bound``,
            proven (:mod:`~metacog_metrics.pairwise.tail_bounds`). After each round, a pair
            whose other side has stopped (or is not asked) and whose remaining side such a
            bound covers, with ``bound = SETTLE_RISK / cap``, is settled: its remaining draws
            are counted as made and missing, which they all do except with probability at
            most :data:`~metacog_metrics.pairwise.tail_bounds.SETTLE_RISK`.

    Returns:
        ``(n_pairs, 8)``: the columns of :data:`SEQUENTIAL_COLUMNS`; ``stop_*`` is the valid
        draw at which that side reached ``h`` (0: it did not); ``settled`` the valid draws a
        settled pair's p-value counts (those made and those proven to miss; 0: not settled).
    """
    need_ge, need_le = _sides(alternative)
    acc = np.zeros((n_pairs, len(SEQUENTIAL_COLUMNS)))
    active = np.ones(n_pairs, dtype=bool)
    defined = np.isfinite(np.asarray(observed, dtype=float))
    schedule = rounds(cap, h)
    drawn = 0
    for r, b in enumerate(schedule):
        rows = np.flatnonzero(active)
        if not rows.size:
            break
        draw_seed, order_seed = (_child(_child(seed, r), i) for i in range(2))
        got = np.asarray(draw(rows, b, draw_seed), dtype=float)  # type: ignore[operator]
        ge, le, nv = got[:, 0], got[:, 1], got[:, 2]
        before = acc[rows]
        want_ge = np.where(before[:, 5] == 0, h - before[:, 0], 0).astype(np.int64)
        want_le = np.where(before[:, 6] == 0, h - before[:, 1], 0).astype(np.int64)
        want_ge = np.where(want_ge <= ge, want_ge, 0)  # the side reaches h in this round
        want_le = np.where(want_le <= le, want_le, 0)
        if not need_ge:
            want_ge[:] = 0
        if not need_le:
            want_le[:] = 0
        pos_ge, pos_le = crossing_draws(ge, le, nv, want_ge, want_le,
                                        np.random.default_rng(order_seed))  # fmt: skip
        acc[rows, :5] += got[:, :5]
        acc[rows, 5] = np.where(pos_ge > 0, before[:, 2] + pos_ge, before[:, 5])
        acc[rows, 6] = np.where(pos_le > 0, before[:, 2] + pos_le, before[:, 6])
        done = ~defined[rows] | (acc[rows, 2] == 0)  # no p-value to find
        stopped_ge = acc[rows, 5] > 0 if need_ge else True
        stopped_le = acc[rows, 6] > 0 if need_le else True
        done |= stopped_ge & stopped_le
        drawn += b
        if settle is not None and drawn < cap:
            _settle(acc, rows, done, settle, (need_ge, need_le), cap - drawn, SETTLE_RISK / cap)
        active[rows] = ~done
    return acc


def _settle(
    acc: NDArray, rows: NDArray[np.intp], done: NDArray[np.bool_], settle: Settle,
    needs: tuple[bool, bool], left: int, bound: float,
) -> None:  # fmt: skip
    """Settle the pairs ``rows`` not ``done`` that ``settle`` covers (in place): a side still
    drawing, the other stopped or not asked; its remaining ``left`` draws count as missing
    it (so on the other side's count) and as valid."""
    stopped = (acc[rows, 5] > 0) | (not needs[0]), (acc[rows, 6] > 0) | (not needs[1])
    for side, me, need in ((1, 0, needs[0]), (-1, 1, needs[1])):
        cand = np.flatnonzero(~done & ~stopped[me] & stopped[1 - me]) if need else ()
        if not len(cand):
            continue
        proven = cand[np.asarray(settle(rows[cand], side, bound), dtype=bool)]
        hit = rows[proven]
        acc[hit, 1 - me] += left  # the draws that miss this side count on the other
        acc[hit, 7] = acc[hit, 2] + left
        done[proven] = True


def sequential_p_values(acc: NDArray, h: int, alternative: str) -> tuple[NDArray, ...]:
    """``(p_value, p_greater, p_less)`` of :func:`sequential_counts` accumulations.

    >>> acc = np.array([[20.0, 21, 40, 0, 0, 38, 40, 0],  # both sides stopped by draw 40
    ...                 [0.0, 10_000, 10_000, 0, 0, 0, 20, 0],  # none >= in 10,000 draws
    ...                 [0.0, 10_000, 80, 0, 0, 0, 20, 10_000]])  # settled after 80 draws
    >>> [v.round(6).tolist() for v in sequential_p_values(acc, 20, "two-sided")]
    [[1.0, 0.0002, 0.0002], [0.526316, 0.0001, 0.0001], [0.5, 1.0, 1.0]]
    """
    ge, le, nv, _, _, stop_ge, stop_le, settled = np.asarray(acc, dtype=float).T
    counted = np.where(settled > 0, settled, nv)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_greater = np.where(stop_ge > 0, h / stop_ge, (ge + 1.0) / (counted + 1.0))
        p_less = np.where(stop_le > 0, h / stop_le, (le + 1.0) / (counted + 1.0))
    p_greater = np.where(nv > 0, p_greater, np.nan)
    p_less = np.where(nv > 0, p_less, np.nan)
    two = np.minimum(1.0, 2.0 * np.minimum(p_greater, p_less))
    chosen = {"two-sided": two, "greater": p_greater, "less": p_less}[alternative]
    return chosen, p_greater, p_less
