"""Inputs, seeds, p-values and the executor shared by the per-pair and joint draws."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import SeedLike as SeedLike
from metacog_metrics.executor import current_executor

#: A registered null's name (:func:`metacog_metrics.pairwise.nulls.null_names`).
Null = str
Engine = Literal["auto", "numpy", "numba"]
Alternative = Literal["two-sided", "greater", "less"]

#: Accuracy-gap grid of the delta curve.
DEFAULT_DELTAS: tuple[float, ...] = (
    0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0,
)  # fmt: skip
#: Engines of the per-pair draws for binary confidence (compiled with numba, or NumPy).
ENGINES: tuple[str, ...] = ("auto", "numpy", "numba")
#: Pair types by the reasoning flag of the two models.
PAIR_TYPES: tuple[str, ...] = ("R-R", "R-NR", "NR-NR")
_ELEMENTS_PER_CHUNK = 1 << 22  # items x rows per chunk on the exact paths


def _check(conf: ArrayLike, perf: ArrayLike) -> tuple[NDArray, NDArray, bool]:
    """Validate items x models arrays (optionally with leading batch axes)."""
    c = np.asarray(conf, dtype=float)
    p = np.asarray(perf, dtype=float)
    if c.shape != p.shape:
        raise ValueError(f"conf {c.shape} and perf {p.shape} must have the same shape")
    if c.ndim < 2 or c.shape[-1] < 2 or c.shape[-2] < 2:
        raise ValueError(f"need (..., items >= 2, models >= 2) arrays, got shape {c.shape}")
    if np.isnan(c).any() or np.isnan(p).any():
        raise ValueError("conf and perf must be complete (no NaN); build complete-case matrices")
    if not np.isfinite(c).all():
        raise ValueError("conf has infinite values")
    if not np.isin(p, (0.0, 1.0)).all():
        raise ValueError("perf must hold only 0 and 1")
    binary = bool(np.isin(c, (0.0, 1.0)).all())
    return c, p, binary


def _pairs(n_models: int, pairs: Any = None) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    if pairs is None:
        return np.triu_indices(n_models, k=1)
    ia, ib = (np.asarray(v, dtype=np.intp) for v in pairs)
    if ia.shape != ib.shape or ia.ndim != 1:
        raise ValueError("pairs must be two equal-length 1-D index arrays (a, b)")
    if ia.size and (min(ia.min(), ib.min()) < 0 or max(ia.max(), ib.max()) >= n_models):
        raise ValueError("pair index out of range")
    if np.any(ia == ib):
        raise ValueError("a pair must join two different models")
    return ia, ib


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    # disable=None: a bar on a terminal, nothing in a log file or CI output (carriage returns).
    return tqdm(
        total=total, desc=desc, unit=" pair-draws", unit_scale=True, leave=False, disable=None
    )


def _p_values(ge: NDArray, le: NDArray, n: NDArray, alternative: str) -> tuple[NDArray, ...]:
    with np.errstate(invalid="ignore", divide="ignore"):
        p_greater = np.where(n > 0, (ge + 1.0) / (n + 1.0), np.nan)
        p_less = np.where(n > 0, (le + 1.0) / (n + 1.0), np.nan)
    two = np.minimum(1.0, 2.0 * np.minimum(p_greater, p_less))
    chosen = {"two-sided": two, "greater": p_greater, "less": p_less}[alternative]
    return chosen, p_greater, p_less


def _check_alternative(alternative: str) -> None:
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(
            f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}"
        )


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")


def _bh(p: NDArray) -> NDArray:
    """Benjamini-Hochberg adjusted p-values (R's ``p.adjust(p, "BH")``) of the finite entries.

    ``q_(i) = min_{j >= i} m p_(j) / j``, capped at 1. As ``scipy.stats.false_discovery_control``,
    written out because importing ``scipy.stats`` costs about 0.3 s of a small analysis.
    """
    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        v = p[ok]
        order = np.argsort(v, kind="stable")
        m = v.size
        scaled = v[order] * m / np.arange(1, m + 1)
        adjusted = np.empty(m)
        adjusted[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
        q[ok] = adjusted
    return q


@dataclasses.dataclass
class _Plan:
    """Independent chunks of permutation work and how to assemble their results."""

    label: str
    tasks: list[Callable[[], Any]]
    sizes: list[int]
    finish: Callable[[list[Any]], Any]
    engine: str = "numpy"  # which engine draws (the same seed gives other draws on another)


def _execute(plans: Sequence[_Plan], workers: int | None, progress: bool) -> list[Any]:
    """Run every chunk of every plan on the current executor (``workers`` threads unless a
    block set another: :func:`metacog_metrics.executor.executing_on`); return each plan's
    result. The results come back in the tasks' order wherever the tasks ran."""
    tasks = [t for plan in plans for t in plan.tasks]
    sizes = [z for plan in plans for z in plan.sizes]
    label = plans[0].label if len(plans) == 1 else "permutations (both nulls)"
    bar = _progress(sum(sizes), label, progress)
    try:
        results = _run_tasks(tasks, sizes, workers, bar)
    finally:
        if bar is not None:
            bar.close()
    out = []
    for plan in plans:  # each plan takes its results over: none stays referenced here, so
        # a plan's finish can free its chunks as it assembles them (at 1,000 models the joint
        # draws of one null are 4 GB of chunks)
        mine, results[: len(plan.tasks)] = results[: len(plan.tasks)], []
        out.append(plan.finish(mine))
    return out


def _run_tasks(tasks: list[Callable[[], NDArray]], sizes: list[int], workers: int | None,
               bar: Any) -> list[NDArray]:  # fmt: skip
    def done(i: int) -> None:
        if bar is not None:
            bar.update(sizes[i])

    return current_executor(workers).run(tasks, on_result=done)
