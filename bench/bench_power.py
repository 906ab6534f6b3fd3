"""How long the power analysis takes, and what vectorising the stratified null buys.

Prints, for each (models, items) cell of the default grid, the median time of a reduced
``power_analysis`` of that cell (4 signal weights, fewer replicates) and its projection to the
default 200 replicates (40 for the alignment); the projected time of the full default grid; and
the speed-up of the vectorised stratified null over a baseline that computes the same null draws
pair by pair with ``scipy.stats.kendalltau``, measured in this run.

    python bench/bench_power.py            # per-cell timings and the projection
    python bench/bench_power.py --full     # also run the whole default grid and time it
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from metacog_metrics.power import power_analysis
from metacog_metrics.simulate import get_preset, simulate_arrays
from metacog_metrics.stratified import stratified_null_draws as _stratified_null
from metacog_metrics.stratified import stratified_permutations as perms_of

MODELS = (10, 20, 40)
ITEMS = (200, 1000, 5000)
WEIGHTS = 4
REPS = 200
ALIGN_REPS = 40


def _median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _baseline_null(conf: np.ndarray, perf: np.ndarray, perms: np.ndarray) -> np.ndarray:
    m = conf.shape[1]
    out = []
    for perm in perms:
        c = conf[perm]
        taus = [
            stats.kendalltau(c[:, a] - c[:, b], perf[:, a] - perf[:, b]).statistic
            for a in range(m)
            for b in range(a + 1, m)
        ]
        out.append(np.nanmean(taus))
    return np.asarray(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--permutations", type=int, default=99)
    parser.add_argument("--reps", type=int, default=20, help="replicates per point when timing")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per cell (median)")
    parser.add_argument("--full", action="store_true", help="also time the full default grid")
    args = parser.parse_args()
    scale = REPS / args.reps
    align = max(1, round(ALIGN_REPS / scale))
    print(
        f"per cell: power_analysis over {WEIGHTS} weights x {args.reps} replicates "
        f"({align} for the alignment), median of {args.runs} runs, x{scale:g} projected"
    )
    print(f"{'models':>6} {'items':>6} {'timed s':>9} {'projected s':>12}")
    projected = 0.0
    for m in MODELS:
        for n in ITEMS:

            def cell(m=m, n=n) -> None:
                power_analysis(
                    [m], [n], (0.0, 0.1, 0.2, 0.4), args.reps, alignment_reps=align,
                    permutations=args.permutations, progress=False,
                )  # fmt: skip

            t = _median_time(cell, args.runs)
            projected += t * scale
            print(f"{m:>6} {n:>6} {t:>9.2f} {t * scale:>12.1f}")
    print(f"projected full default grid: {projected:.0f} s ({projected / 60:.1f} min)")

    # Baseline: the same null draws with scipy's kendalltau, pair by pair.
    rng = np.random.default_rng(0)
    params = get_preset("paper", individuated=0.1)
    m, n, b = 10, 200, 20
    arr = simulate_arrays(params, m, n, 1, rng)
    conf, perf = arr.conf[0].astype(float), arr.perf[0].astype(float)
    perms = perms_of(perf, b, rng)
    assert np.allclose(_stratified_null(conf, perf, perms), _baseline_null(conf, perf, perms))
    with threadpool_limits(limits=1):
        t_vec = _median_time(lambda: _stratified_null(conf, perf, perms), 5)
    t_base = _median_time(lambda: _baseline_null(conf, perf, perms), 3)
    print(f"{b} null draws, {m} models x {n} items: vectorised {t_vec * 1e3:.1f} ms, "
          f"scipy loop {t_base * 1e3:.0f} ms, speed-up x{t_base / t_vec:.0f}")  # fmt: skip

    if args.full:
        t0 = time.perf_counter()
        res = power_analysis(permutations=args.permutations)
        print(f"full default grid: {time.perf_counter() - t0:.0f} s")
        print(res.summary_text())


if __name__ == "__main__":
    main()
