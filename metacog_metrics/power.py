"""Power analysis: how many models and items does it take to see individuated metacognition?

The generative model of :mod:`metacog_metrics.simulate` plants a private signal of known size
(``individuated``, the weight of each model's own item residual in its confidence) into a
population that otherwise has the paper's structure, and the analysis is run on many replicates.
Two detectors are scored, each at ``individuated == 0`` (its false-positive rate) and above:

**Pairwise test of private signal (mean tau over all pairs).** By default the test of
:mod:`metacog_metrics.private_signal` (confidence rows permuted among items of equal pass count
and nearly equal ability-weighted score); ``null="difficulty_stratified"`` scores the
pass-count-only null of :mod:`metacog_metrics.stratified` instead (exact only under a Rasch
model). Its false-positive rate at ``individuated == 0`` is in the table.

**Size under three correctness models.** :func:`size_analysis` (and the ``size`` table of
:func:`power_analysis`, ``size.csv``) gives both nulls' rejection rates with no private signal
under the ``rasch``, ``2pl`` (lognormal discrimination sd 1.0) and ``3pl`` (guessing 0.25)
presets, with Monte Carlo standard errors: the pass-count null over-rejects under 2PL and 3PL,
more so with more items; the private-signal test should stay within Monte Carlo error of alpha.

**Contentious-subset alignment.** Pearson r of the confidence and correctness factor-1 item
scores on the contentious items. Its own p-value tests ``r == 0``, which shared difficulty alone
rejects, and the stratified null leaves it unchanged (it permutes rows among items of equal
``k``), so no self-contained test of private signal exists for it. It is scored with a Monte
Carlo critical value: the ``1 - alpha`` (normal) quantile of r over independent replicates at
``individuated == 0`` (``alignment_null_reps`` per cell; an upper bound on what it could
detect, even knowing the generative model). Factor scores use first-principal-component
loadings of the tetrachoric matrix (:func:`metacog_metrics.factors.eigen_decomposition`),
ten times faster than the analysis' minres fit and within a few thousandths of its r.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats
from threadpoolctl import threadpool_limits

from metacog_metrics._conventions import tie_tolerance
from metacog_metrics._io import atomic_write, atomic_write_text
from metacog_metrics._options import (
    at_least,
    build_options,
    check_options,
    count,
    documented,
    integer,
    one_of,
    option,
    option_values,
)
from metacog_metrics._result import Result, to_jsonable
from metacog_metrics.factors import contentious_items, eigen_decomposition, factor_scores
from metacog_metrics.private_signal import (
    DEFAULT_BLOCK_SIZE,
    pattern_strata,
    permutations_within,
)
from metacog_metrics.simulate import (
    PRESETS,
    SimulationParams,
    get_preset,
    parameter_overrides,
    simulate_arrays,
)
from metacog_metrics.stratified import (
    mean_taus,
    stratified_null_draws,
    stratified_permutations,
)
from metacog_metrics.tetrachoric import tetrachoric_matrix

__all__ = [
    "NULLS",
    "NULL_NAME",
    "SIZE_PRESETS",
    "PowerOptions",
    "PowerOutputs",
    "PowerResult",
    "power_analysis",
    "run_power",
    "size_analysis",
    "write_power_outputs",
]

#: Name of the default detection null in tables and JSON.
NULL_NAME = "private_signal"
#: The detection nulls: the private-signal test and the pass-count-only stratified null.
NULLS: tuple[str, ...] = ("private_signal", "difficulty_stratified")
#: Correctness models of the size table.
SIZE_PRESETS: tuple[str, ...] = ("rasch", "2pl", "3pl")


# ---------------------------------------------------------------------------------------------
# The contentious-subset alignment (fast path)


def _pc1_scores(x: NDArray) -> NDArray | None:
    tet = tetrachoric_matrix(x)
    if len(tet.names) < 3 or not np.isfinite(tet.rho).all():
        return None
    kept = [int(n) for n in tet.names]
    eig = eigen_decomposition(tet.rho)
    return factor_scores(x[:, kept], tet.rho, eig.loadings)


def _alignment(conf: NDArray, perf: NDArray, min_items: int = 10) -> tuple[float, float]:
    """Pearson r of factor-1 item scores on all items and on the contentious items."""
    out = []
    mask = contentious_items(conf, perf)
    for rows in (np.ones(conf.shape[0], dtype=bool), mask):
        if rows.sum() < min_items:
            out.append(math.nan)
            continue
        sc, sy = _pc1_scores(conf[rows]), _pc1_scores(perf[rows])
        if sc is None or sy is None or np.ptp(sc) == 0 or np.ptp(sy) == 0:
            out.append(math.nan)
            continue
        out.append(float(np.corrcoef(sc, sy)[0, 1]))
    return out[0], out[1]


# ---------------------------------------------------------------------------------------------
# The grid


@dataclasses.dataclass(frozen=True)
class PowerOutputs(Result):
    """Files written by :func:`write_power_outputs`.

    Attributes:
        csv: The table.
        plot: The power curves (PNG).
        json: Settings and the table as JSON.
        size_csv: The size table (None when it was not computed).
    """

    csv: str
    plot: str
    json: str
    size_csv: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class PowerResult(Result):
    """Power and false-positive rates over a grid of population sizes and signal strengths.

    Attributes:
        table: One row per (models, items, individuated): ``reps``, ``rejections``,
            ``power`` (the false-positive rate where ``individuated == 0``) with its 95%
            Clopper-Pearson interval ``power_low``/``power_high``, ``mean_tau``,
            ``null_mean_tau``; the alignment's ``alignment_reps``, ``alignment_power``
            (``_low``/``_high``), ``alignment_r_all``, ``alignment_r_contentious``,
            ``alignment_critical`` (from ``alignment_null_reps`` null replicates); ``kind``
            (``false_positive_rate`` or ``power``).
        preset: Preset name (``custom`` for explicit parameters).
        params: The parameters, as plain JSON.
        benchmark: Whose profile the items follow (``None``: the default profile).
        null: Name of the detection null.
        alpha: Test level.
        permutations: Null draws per replicate.
        seed: Seed.
        seconds: Wall time.
        outputs: Files written by :func:`run_power` (None when nothing was written).
        size: The false-positive rates of both nulls under the size presets (see
            :func:`size_analysis`), or None.
        block_size: Items per block of the private-signal null.
    """

    table: pd.DataFrame
    preset: str
    params: Mapping[str, Any]
    benchmark: str | None
    null: str
    alpha: float
    permutations: int
    seed: int
    seconds: float
    outputs: PowerOutputs | None = None
    size: pd.DataFrame | None = None
    block_size: int = DEFAULT_BLOCK_SIZE

    def false_positive_rates(self) -> pd.DataFrame:
        """The rows at ``individuated == 0``."""
        return self.table[self.table["individuated"] == 0].reset_index(drop=True)

    def summary_text(self) -> str:
        """A few lines: the grid, the worst false-positive rate and where power reaches 0.8."""
        t = self.table
        lines = [
            f"power analysis ({self.preset}, {self.benchmark or 'default-profile'} items, "
            f"null {self.null}, "
            f"alpha {self.alpha}, {self.permutations} permutations, {self.seconds:.0f} s)"
        ]
        fpr = self.false_positive_rates()
        if not fpr.empty:
            worst = fpr.loc[fpr["power"].idxmax()]
            lines.append(
                f"false-positive rate at individuated=0: at most {worst['power']:.3f} "
                f"({int(worst['models'])} models x {int(worst['items'])} items)"
            )
        hit = t[(t["individuated"] > 0) & (t["power"] >= 0.8)]
        for w, rows in hit.groupby("individuated"):
            # The fewest items that reach 0.8 at each population size.
            least = rows.sort_values("items").groupby("models", sort=True).first()
            cells = ", ".join(f"{m} models x {int(r['items'])} items" for m, r in least.iterrows())
            lines.append(f"individuated={w:g}: power >= 0.8 with {cells}")
        missing = sorted(
            set(t.loc[t["individuated"] > 0, "individuated"]) - set(hit["individuated"])
        )
        for w in missing:
            lines.append(f"individuated={w:g}: power < 0.8 everywhere on this grid")
        if self.size is not None and not self.size.empty:
            lines.append(f"size at alpha {self.alpha} (no private signal; rate +- Monte Carlo SE):")
            for _, r in self.size.iterrows():
                cells = ", ".join(
                    f"{null.replace('_', '-')} {r[f'{null}_rate']:.3f} +- {r[f'{null}_se']:.3f}"
                    for null in NULLS
                )
                lines.append(
                    f"  {r['correctness']}, {int(r['models'])} models x {int(r['items'])} items, "
                    f"{int(r['reps'])} reps: {cells}"
                )
        if self.outputs is not None:
            extra = f", {self.outputs.size_csv}" if self.outputs.size_csv else ""
            lines.append(
                f"wrote {self.outputs.csv}, {self.outputs.plot}, {self.outputs.json}{extra}"
            )
        return "\n".join(lines)


def _clopper_pearson(k: NDArray, n: NDArray, level: float = 0.95) -> tuple[NDArray, NDArray]:
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    a = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, stats.beta.ppf(a, k, n - k + 1), 0.0)
        high = np.where(k < n, stats.beta.ppf(1 - a, k + 1, n - k), 1.0)
    bad = n <= 0
    return np.where(bad, np.nan, low), np.where(bad, np.nan, high)


def _check_grid(name: str, values: Sequence[Any], minimum: float) -> list:
    vals = list(values)
    if not vals:
        raise ValueError(f"{name}: give at least one value")
    bad = [v for v in vals if not (isinstance(v, int | float) and v >= minimum)]
    if bad:
        raise ValueError(f"{name}: values must be >= {minimum}, got {bad}")
    return vals


def power_analysis(
    models: Sequence[int] = (10, 20, 40),
    items: Sequence[int] = (200, 1000, 5000),
    individuated: Sequence[float] = (0.0, 0.1, 0.2, 0.4),
    reps: int = 200,
    *,
    preset: str = "paper",
    params: SimulationParams | None = None,
    alpha: float = 0.05,
    permutations: int = 99,
    alignment_reps: int = 40,
    alignment_null_reps: int = 200,
    benchmark: str | None = None,
    seed: int = 0,
    progress: bool = True,
    workers: int | None = None,
    null: str = NULL_NAME,
    block_size: int = DEFAULT_BLOCK_SIZE,
    size_presets: Sequence[str] = (),
    size_reps: int | None = None,
) -> PowerResult:
    """Detection power of the pairwise test and the contentious-subset alignment.

    Every (models, items) cell draws fresh populations and item sets per replicate; the
    replicates of one cell use the same random numbers at every ``individuated`` value (a paired
    design), so power curves over the signal strength are smooth.

    Args:
        models: Population sizes.
        items: Items per replicate.
        individuated: Planted private-signal weights (include 0 for the false-positive rate).
        reps: Replicates per (models, items, individuated).
        preset: Preset of the rest of the parameters (see
            :data:`metacog_metrics.simulate.PRESETS`).
        params: Explicit parameters instead of ``preset``.
        alpha: Level of both detectors.
        permutations: Stratified-null draws per replicate (the p-value's resolution is
            ``1 / (permutations + 1)``).
        alignment_reps: Replicates per grid point for the alignment; 0 skips it. It costs
            four tetrachoric matrices per replicate.
        alignment_null_reps: Independent replicates at ``individuated == 0`` per (models,
            items) cell for the alignment's critical value (at least ``alignment_reps``). With
            40 the critical value's own error moved the realised false-positive rate between
            about 0.02 and 0.1; 200 narrows that to about 0.035-0.07.
        benchmark: Whose profile in the parameters the items follow; ``None`` (default): the
            default profile (no inline solving).
        seed: Seed.
        progress: Show a tqdm progress bar.
        workers: Threads over replicates (default: one per CPU, at most 4); the result does
            not depend on it.
        null: Detection null of the pairwise test, one of :data:`NULLS`.
        block_size: Items per block of the private-signal null.
        size_presets: Correctness-model presets for the size table (:func:`size_analysis`
            at every (models, items) cell; empty skips it).
        size_reps: Replicates per size cell (default ``reps``).

    Returns:
        A :class:`PowerResult`.

    Raises:
        ValueError: Bad grid values, sizes or level.
    """
    started = time.perf_counter()
    models = [int(m) for m in _check_grid("models", models, 3)]
    items = [int(n) for n in _check_grid("items", items, 10)]
    weights = [float(w) for w in _check_grid("individuated", individuated, 0.0)]
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if permutations < 1 or alpha * (permutations + 1) < 1:
        raise ValueError(
            f"permutations must be >= 1/alpha - 1 = {math.ceil(1 / alpha - 1)} for the test to "
            f"be able to reject at alpha={alpha}, got {permutations}"
        )
    if alignment_reps < 0:
        raise ValueError(f"alignment_reps must be >= 0, got {alignment_reps}")
    if alignment_null_reps < 2:
        raise ValueError(f"alignment_null_reps must be >= 2, got {alignment_null_reps}")
    if null not in NULLS:
        raise ValueError(f"unknown null {null!r}; choose from {NULLS}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    size_presets = list(size_presets)
    for name in size_presets:
        get_preset(name)  # fails early on an unknown name
    base = params if params is not None else get_preset(preset)
    preset_name = "custom" if params is not None else preset
    align_n = min(alignment_reps, reps)
    null_n = max(alignment_null_reps, align_n) if align_n else 0

    cells = [(m, n) for m in models for n in items]
    root = np.random.SeedSequence(seed)
    cell_seeds = dict(zip(cells, root.spawn(len(cells))))
    units = len(cells) * (len(weights) * (reps + align_n) + null_n)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=units, desc="power", unit="rep")
    rows = []
    # One BLAS thread: the products here are small, and OpenBLAS threads on a busy 2-core
    # machine made them up to 30x slower (see bench/bench_power.py).
    n_workers = workers if workers is not None else min(4, os.cpu_count() or 1)
    with threadpool_limits(limits=1), ThreadPoolExecutor(max(1, n_workers)) as pool:
        try:
            for m, n in cells:
                data_seed, perm_seed, cal_seed = cell_seeds[(m, n)].spawn(3)
                # spawned once for the cell: every weight gets the same populations and
                # permutation streams (spawning again would continue with new children)
                data_seeds = data_seed.spawn(math.ceil(reps / _chunk(m, n, reps)))
                perm_seeds = perm_seed.spawn(reps)
                critical, critical_n = math.nan, 0
                if align_n:
                    null_params = dataclasses.replace(base, individuated=0.0)
                    critical, critical_n = _alignment_critical(
                        null_params, m, n, null_n, alpha, benchmark, cal_seed, bar, pool
                    )
                for w in weights:
                    p_w = dataclasses.replace(base, individuated=w)
                    row = _grid_point(
                        p_w, m, n, reps, align_n, alpha, permutations, critical, benchmark,
                        data_seeds, perm_seeds, bar, pool, null, block_size,
                    )  # fmt: skip
                    row["alignment_null_reps"] = critical_n
                    rows.append({"models": m, "items": n, "individuated": w, **row})
        finally:
            if bar is not None:
                bar.close()
    table = pd.DataFrame(rows)
    low, high = _clopper_pearson(table["rejections"], table["reps"])
    table.insert(table.columns.get_loc("power") + 1, "power_low", low)
    table.insert(table.columns.get_loc("power_low") + 1, "power_high", high)
    a_low, a_high = _clopper_pearson(table["alignment_rejections"], table["alignment_reps"])
    table["alignment_low"] = a_low
    table["alignment_high"] = a_high
    table["kind"] = np.where(table["individuated"] == 0, "false_positive_rate", "power")
    size = None
    if size_presets:
        size = size_analysis(
            size_presets, models, items, size_reps or reps, alpha=alpha,
            permutations=permutations, block_size=block_size, benchmark=benchmark,
            seed=seed, progress=progress, workers=workers,
        )  # fmt: skip
    return PowerResult(
        table=table,
        size=size,
        block_size=int(block_size),
        preset=preset_name,
        params=base.to_dict(),
        benchmark=benchmark,
        null=null,
        alpha=float(alpha),
        permutations=int(permutations),
        seed=int(seed),
        seconds=time.perf_counter() - started,
    )


def _alignment_critical(
    params: SimulationParams,
    m: int,
    n: int,
    reps: int,
    alpha: float,
    benchmark: str | None,
    seed: np.random.SeedSequence,
    bar: Any,
    pool: ThreadPoolExecutor,
) -> tuple[float, int]:
    """The ``1 - alpha`` quantile of the contentious-subset r over replicates drawn from
    ``params`` (independent of the replicates it is applied to), and how many were finite.

    The empirical 95% quantile of a few hundred values rests on its top handful and swings
    widely; the normal quantile ``mean + z sd`` of the same values is far steadier (r is close
    to normal across replicates at these sizes)."""
    chunk = _chunk(m, n, reps)
    values: list[float] = []
    for start, ss in zip(range(0, reps, chunk), seed.spawn(math.ceil(reps / chunk))):
        size = min(chunk, reps - start)
        arr = simulate_arrays(params, m, n, size, np.random.default_rng(ss), benchmark=benchmark)

        def one(r: int, arr: Any = arr) -> float:
            return _alignment(arr.conf[r], arr.perf[r])[1]

        for value in pool.map(one, range(size)):
            values.append(value)
            if bar is not None:
                bar.update(1)
    finite = np.asarray([v for v in values if np.isfinite(v)])
    if finite.size < 2:
        return math.nan, int(finite.size)
    return float(finite.mean() + stats.norm.ppf(1 - alpha) * finite.std(ddof=1)), int(finite.size)


def _curtailed_rejects(
    conf: NDArray, perf: NDArray, observed: float, permutations: int, alpha: float,
    rng: np.random.Generator, labels: NDArray | None = None,
) -> tuple[bool, float]:  # fmt: skip
    """The permutation test's decision at ``alpha``, stopping once it is settled.

    ``labels`` are the strata (default: pass counts, the difficulty-stratified null; the
    private-signal test passes :func:`~metacog_metrics.private_signal.pattern_strata`).

    With ``B`` draws the test rejects when at most ``floor(alpha (B + 1)) - 1`` draws reach the
    observed mean; drawing in batches and stopping as soon as that many are exceeded gives the
    same decision as all ``B`` draws (most replicates without signal stop after one batch).

    Returns:
        ``(rejected, mean of the first batch of null draws)``.
    """
    allowed = math.floor(alpha * (permutations + 1) + 1e-9) - 1
    batch = min(permutations, max(20, 4 * (allowed + 1)))
    count, done, first_mean = 0, 0, math.nan
    while done < permutations:
        size = min(batch, permutations - done)
        perms = (
            stratified_permutations(perf, size, rng)
            if labels is None
            else permutations_within(labels, size, rng)
        )
        draws = stratified_null_draws(conf, perf, perms)
        ok = draws[np.isfinite(draws)]
        if done == 0:
            first_mean = float(ok.mean()) if ok.size else math.nan
        count += int(np.sum(ok >= observed - tie_tolerance(observed)))
        done += size
        if count > allowed:
            return False, first_mean
    return True, first_mean


def _replicate(
    r: int,
    *,
    conf: NDArray,
    perf: NDArray,
    obs: NDArray,
    seeds: Sequence[np.random.SeedSequence],
    align: int,
    permutations: int,
    alpha: float,
    null: str = NULL_NAME,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> tuple[bool, float, tuple[float, float] | None]:
    """Test decision, first-batch null mean and (for the first ``align``) the alignment."""
    hit, null_mean = False, math.nan
    if np.isfinite(obs[r]):
        rng = np.random.default_rng(seeds[r])
        labels = pattern_strata(perf[r], block_size) if null == "private_signal" else None
        hit, null_mean = _curtailed_rejects(
            conf[r], perf[r], float(obs[r]), permutations, alpha, rng, labels
        )
    return hit, null_mean, _alignment(conf[r], perf[r]) if r < align else None


def _chunk(m: int, n: int, reps: int) -> int:
    """Replicates simulated together at one grid point (bounds memory)."""
    return max(1, min(reps, (1 << 21) // (m * n)))


def _grid_point(
    params: SimulationParams,
    m: int,
    n: int,
    reps: int,
    align_n: int,
    alpha: float,
    permutations: int,
    critical: float,
    benchmark: str | None,
    data_seeds: Sequence[np.random.SeedSequence],
    perm_seeds: Sequence[np.random.SeedSequence],
    bar: Any,
    pool: ThreadPoolExecutor,
    null: str = NULL_NAME,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> dict[str, Any]:
    # Replicates are drawn in chunks of _chunk(m, n, reps), one data seed a chunk; the caller
    # passes the same seeds at every weight (paired designs), and every replicate has its own
    # permutation stream (curtailing never shifts another's draws).
    chunk = _chunk(m, n, reps)
    starts = list(range(0, reps, chunk))
    observed, null_means, rejected, align = [], [], [], []
    for start, ss in zip(starts, data_seeds):
        size = min(chunk, reps - start)
        arr = simulate_arrays(params, m, n, size, np.random.default_rng(ss), benchmark=benchmark)
        conf = arr.conf.astype(np.float64)
        perf = arr.perf.astype(np.float64)
        obs = mean_taus(conf, perf)

        replicate = functools.partial(
            _replicate, conf=conf, perf=perf, obs=obs, seeds=perm_seeds[start : start + size],
            align=max(0, min(size, align_n - start)), permutations=permutations, alpha=alpha,
            null=null, block_size=block_size,
        )  # fmt: skip

        # Replicates are independent (own seeds), so threads give the same result in any order.
        for r, (hit, null_mean, al) in enumerate(pool.map(replicate, range(size))):
            observed.append(obs[r])
            null_means.append(null_mean)
            rejected.append(hit)
            if al is not None:
                align.append(al)
            if bar is not None:
                bar.update(1 if al is None else 2)
    rejections = int(np.sum(rejected))
    a = np.asarray(align, dtype=float).reshape(-1, 2)
    contentious = a[:, 1]
    finite = np.isfinite(contentious)
    a_rej = int(np.sum(contentious[finite] > critical)) if np.isfinite(critical) else 0
    return {
        "reps": reps,
        "rejections": rejections,
        "power": rejections / reps,
        "mean_tau": float(np.nanmean(observed)),
        "null_mean_tau": float(np.nanmean(null_means)),
        "alignment_reps": int(finite.sum()),
        "alignment_rejections": a_rej,
        "alignment_power": a_rej / finite.sum() if finite.any() else math.nan,
        "alignment_r_all": float(np.nanmean(a[:, 0])) if a.size else math.nan,
        "alignment_r_contentious": float(np.nanmean(contentious)) if a.size else math.nan,
        "alignment_critical": critical,
    }


# ---------------------------------------------------------------------------------------------
# Size under several correctness models


def size_analysis(
    presets: Sequence[str] = SIZE_PRESETS,
    models: Sequence[int] = (20,),
    items: Sequence[int] = (3000, 10000),
    reps: int = 400,
    *,
    alpha: float = 0.05,
    permutations: int = 99,
    block_size: int = DEFAULT_BLOCK_SIZE,
    benchmark: str | None = None,
    seed: int = 0,
    progress: bool = True,
    workers: int | None = None,
) -> pd.DataFrame:
    """Both nulls' false-positive rates with no private signal, per correctness model.

    Every replicate draws a fresh population from the preset at ``individuated == 0`` and runs
    both tests of :data:`NULLS` on it, each with its own permutation stream.

    Args:
        presets: Correctness-model presets (``rasch``, ``2pl``, ``3pl``, ...).
        models: Population sizes.
        items: Items per replicate.
        reps: Replicates per (preset, models, items).
        alpha: Level.
        permutations: Null draws per test.
        block_size: Items per block of the private-signal null.
        benchmark: Whose profile the items follow (``None``: the default profile).
        seed: Seed.
        progress: Progress bar.
        workers: Threads over replicates.

    Returns:
        One row per (correctness, models, items): ``reps`` and, per null, ``<null>_rejections``,
        ``<null>_rate``, ``<null>_se`` (Monte Carlo standard error,
        ``sqrt(rate (1 - rate) / reps)``) and a 95% Clopper-Pearson ``<null>_low``/``_high``.

    Raises:
        ValueError: Unknown preset or bad sizes.
    """
    presets = list(presets)
    models = [int(m) for m in _check_grid("models", models, 3)]
    items = [int(n) for n in _check_grid("items", items, 10)]
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if not 0.0 < alpha < 1.0 or alpha * (permutations + 1) < 1:
        raise ValueError(f"need 0 < alpha < 1 and permutations >= 1/alpha - 1, got {alpha}")
    params = {name: get_preset(name, individuated=0.0) for name in presets}
    cells = [(name, m, n) for name in presets for m in models for n in items]
    seeds = np.random.SeedSequence([seed, 0x5123]).spawn(len(cells))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(cells) * reps, desc="size", unit="rep")
    n_workers = workers if workers is not None else min(4, os.cpu_count() or 1)
    rows = []
    with threadpool_limits(limits=1), ThreadPoolExecutor(max(1, n_workers)) as pool:
        try:
            for (name, m, n), ss in zip(cells, seeds):
                data_seed, perm_seed = ss.spawn(2)
                perm_seeds = perm_seed.spawn(reps)
                hits = {null: 0 for null in NULLS}
                chunk = _chunk(m, n, reps)
                starts = list(range(0, reps, chunk))
                for start, ds in zip(starts, data_seed.spawn(len(starts))):
                    size = min(chunk, reps - start)
                    arr = simulate_arrays(
                        params[name], m, n, size, np.random.default_rng(ds), benchmark=benchmark
                    )

                    def one(
                        r: int, arr: Any = arr, start: int = start, seeds: Any = perm_seeds
                    ) -> dict[str, bool]:
                        conf = arr.conf[r].astype(np.float64)
                        perf = arr.perf[r].astype(np.float64)
                        obs = float(mean_taus(conf, perf))
                        if not np.isfinite(obs):
                            return dict.fromkeys(NULLS, False)
                        streams = seeds[start + r].spawn(len(NULLS))
                        out = {}
                        for null, st in zip(NULLS, streams):
                            labels = (
                                pattern_strata(perf, block_size)
                                if null == "private_signal"
                                else None
                            )
                            out[null], _ = _curtailed_rejects(
                                conf, perf, obs, permutations, alpha,
                                np.random.default_rng(st), labels,
                            )  # fmt: skip
                        return out

                    for got in pool.map(one, range(size)):
                        for null in NULLS:
                            hits[null] += bool(got[null])
                        if bar is not None:
                            bar.update(1)
                row: dict[str, Any] = {"correctness": name, "models": m, "items": n, "reps": reps}
                for null in NULLS:
                    rate = hits[null] / reps
                    low, high = _clopper_pearson(np.array([hits[null]]), np.array([reps]))
                    row |= {
                        f"{null}_rejections": hits[null],
                        f"{null}_rate": rate,
                        f"{null}_se": math.sqrt(rate * (1.0 - rate) / reps),
                        f"{null}_low": float(low[0]),
                        f"{null}_high": float(high[0]),
                    }
                rows.append(row)
        finally:
            if bar is not None:
                bar.close()
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Outputs


def _plot(result: PowerResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    t = result.table
    items = sorted(t["items"].unique())
    has_align = t["alignment_reps"].sum() > 0
    n_rows = 2 if has_align else 1
    fig, axes = plt.subplots(
        n_rows, len(items), figsize=(4 * len(items), 3.4 * n_rows), squeeze=False, sharey=True
    )
    panels = [("power", "pairwise test (stratified null)")]
    if has_align:
        panels.append(("alignment_power", "contentious-subset alignment"))
    for row, (col, title) in enumerate(panels):
        for j, n in enumerate(items):
            ax = axes[row][j]
            for m, sub in t[t["items"] == n].groupby("models"):
                sub = sub.sort_values("individuated")
                low_col = "power_low" if col == "power" else "alignment_low"
                high_col = "power_high" if col == "power" else "alignment_high"
                line = ax.plot(sub["individuated"], sub[col], marker="o", label=f"{m} models")
                ax.fill_between(
                    sub["individuated"], sub[low_col], sub[high_col],
                    color=line[0].get_color(), alpha=0.15,
                )  # fmt: skip
            ax.axhline(result.alpha, color="grey", linestyle="--", linewidth=1)
            ax.axhline(0.8, color="grey", linestyle=":", linewidth=1)
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(f"{title}\n{n} items", fontsize=9)
            ax.set_xlabel("individuated weight")
            if j == 0:
                ax.set_ylabel("rejection rate")
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"Power at alpha={result.alpha} ({result.preset} preset; at 0: false-positive rate)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


def write_power_outputs(result: PowerResult, out_dir: str | os.PathLike[str]) -> PowerOutputs:
    """Write ``power.csv``, ``power.png`` and ``power.json`` into ``out_dir`` (atomically).

    Args:
        result: A :class:`PowerResult`.
        out_dir: Output folder (created).

    Returns:
        The paths written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, png_path, json_path = out / "power.csv", out / "power.png", out / "power.json"
    atomic_write(csv_path, lambda tmp: result.table.to_csv(tmp, index=False))
    atomic_write(png_path, lambda tmp: _plot(result, tmp))
    size_path = None
    if result.size is not None:
        size_path = out / "size.csv"
        size = result.size
        atomic_write(size_path, lambda tmp: size.to_csv(tmp, index=False))
    doc = {
        "preset": result.preset,
        "benchmark": result.benchmark,
        "null": result.null,
        "alpha": result.alpha,
        "permutations": result.permutations,
        "seed": result.seed,
        "seconds": result.seconds,
        "params": result.params,
        "block_size": result.block_size,
        "table": result.table,
        "size": result.size,
    }

    atomic_write_text(json_path, json.dumps(to_jsonable(doc), indent=2))
    return PowerOutputs(
        str(csv_path), str(png_path), str(json_path), str(size_path) if size_path else None
    )


# ---------------------------------------------------------------------------------------------
# metacog power: its options and entry point


def _values(name: str, value: Any) -> tuple[Any, ...]:
    try:
        return tuple(value)
    except TypeError:
        raise ValueError(f"{name}: give a list of values, got {value!r}") from None


def _sizes(minimum: int) -> Any:
    """A check: a non-empty list of integers >= ``minimum``."""

    def check(name: str, value: Any) -> tuple[int, ...]:
        values = _check_grid(name, _values(name, value), minimum)
        bad = [v for v in values if isinstance(v, bool) or not float(v).is_integer()]
        if bad:
            raise ValueError(f"{name}: values must be whole numbers, got {bad}")
        return tuple(int(v) for v in values)

    return check


def _weights(name: str, value: Any) -> tuple[float, ...]:
    values = _check_grid(name, _values(name, value), 0.0)
    bad = [v for v in values if not v <= 1.0]
    if bad:
        raise ValueError(f"{name}: weights must lie in [0, 1], got {bad}")
    return tuple(float(v) for v in values)


def _level(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return float(value)


def _size_presets(name: str, value: Any) -> tuple[str, ...]:
    names = tuple(str(v) for v in _values(name, value))
    bad = [v for v in names if v not in PRESETS and v.lower() != "none"]
    if bad:
        raise ValueError(f"{name}: unknown preset(s) {bad}; choose from {', '.join(PRESETS)}, "
                         "or none")  # fmt: skip
    return names


def _optional(check: Any) -> Any:
    """``check``, with None let through."""
    return lambda name, value: None if value is None else check(name, value)


@documented
@dataclasses.dataclass(frozen=True)
class PowerOptions:
    """The settings of ``metacog power`` (:func:`run_power`), checked when built."""

    models: tuple[int, ...] = option(
        (10, 20, 40), check=_sizes(3), help="Population sizes of the grid (at least 3 models)."
    )
    items: tuple[int, ...] = option(
        (200, 1000, 5000), check=_sizes(10), help="Items per replicate (at least 10)."
    )
    individuated: tuple[float, ...] = option(
        (0.0, 0.1, 0.2, 0.4),
        check=_weights,
        help="Planted private-signal weights, in [0, 1] (0 gives the false-positive rate).",
    )
    reps: int = option(200, check=at_least(1), help="Replicates per grid point.")
    preset: str = option(
        "paper",
        check=one_of(tuple(PRESETS)),
        help=f"Generative-model preset, one of {', '.join(PRESETS)}.",
    )
    alpha: float = option(0.05, check=_level, help="Level of both tests.")
    permutations: int = option(
        99,
        check=at_least(1),
        help="Null draws per replicate (at least 1/alpha - 1, for the test to be able to reject).",
    )
    alignment_reps: int = option(
        40, check=count, help="Replicates of the contentious-subset alignment (0 skips it)."
    )
    alignment_null_reps: int = option(
        200,
        check=at_least(2),
        help="Null replicates per cell for the alignment's critical value.",
    )
    null: str = option(
        NULL_NAME,
        check=one_of(NULLS),
        help="Detection null of the pairwise test.",
        cli={"choices": NULLS},
    )
    block_size: int = option(
        DEFAULT_BLOCK_SIZE, check=at_least(1), help="Items per block of the private-signal null."
    )
    size_presets: tuple[str, ...] = option(
        SIZE_PRESETS,
        check=_size_presets,
        help="Correctness models of the size table, size.csv ('none' skips it).",
    )
    size_reps: int | None = option(
        None, check=_optional(count), help="Replicates per size cell (0 or None: --reps)."
    )
    seed: int = option(0, check=integer, help="Seed.")
    progress: bool = option(
        True,
        check=lambda name, value: bool(value),
        help="A progress bar over the replicates (on the command line --quiet turns it off).",
        flags=("--quiet", "-q"),
        cli={"action": "store_false"},
    )
    benchmark: str | None = option(
        None,
        help="Whose simulation profile the items follow (None: the default profile).",
        on_cli=False,
    )
    overrides: Mapping[str, Any] | None = option(
        None,
        check=parameter_overrides,
        help="SimulationParams fields replacing the preset's.",
        on_cli=False,
    )
    workers: int | None = option(
        None,
        check=_optional(count),
        help="Threads over replicates (None: one per CPU, at most 4).",
        on_cli=False,
    )

    def __post_init__(self) -> None:
        check_options(self)
        if self.alpha * (self.permutations + 1) < 1:
            raise ValueError(
                f"permutations must be >= 1/alpha - 1 = {math.ceil(1 / self.alpha - 1)} for the "
                f"test to be able to reject at alpha={self.alpha}, got {self.permutations}"
            )

    @classmethod
    def build(cls, options: PowerOptions | None = None, /, **overrides: Any) -> PowerOptions:
        """``options`` (default: the defaults) with ``overrides``; an unknown name is an error.

        Example:
            >>> PowerOptions.build(models=[5, 10]).models
            (5, 10)
        """
        return build_options(cls, options, **overrides)


def run_power(
    out_dir: str | os.PathLike[str],
    options: PowerOptions | None = None,
    /,
    **fields: Any,
) -> PowerResult:
    """``metacog power``: run :func:`power_analysis` and write its outputs to ``out_dir``.

    Args:
        out_dir: Output folder for ``power.csv``, ``power.png``, ``power.json``.
        options: The settings (:class:`PowerOptions`; default: its defaults).
        **fields: Fields of :class:`PowerOptions` that replace those of ``options``
            (``models=[10, 20]``, ``reps=50``, ``overrides={"residual_sd": 1.2}``, ...).

    Returns:
        The :class:`PowerResult` (the files are in ``out_dir``).

    Raises:
        TypeError: On an unknown option.
        ValueError: On a bad option value (before any replicate is drawn).
    """
    opts = option_values(PowerOptions.build(options, **fields))
    overrides = opts.pop("overrides")
    params = get_preset(opts["preset"], **overrides) if overrides else None
    opts["size_presets"] = [name for name in opts["size_presets"] if name.lower() != "none"]
    grid = [opts.pop(k) for k in ("models", "items", "individuated", "reps")]
    result = power_analysis(*grid, params=params, **opts)
    if params is not None:
        result = dataclasses.replace(result, preset=f"{opts['preset']}+overrides")
    outputs = write_power_outputs(result, out_dir)
    return dataclasses.replace(result, outputs=outputs)
