"""How long the power analysis takes, and what vectorising the stratified null buys.

Prints, for each (models, items) cell of the default grid, the median time of one replicate
(observed mean tau, ``permutations`` stratified null draws, and the alignment when asked),
measured over several replicates; the projected time of the full default grid (200 replicates
x 4 signal weights per cell); and the speed-up of the vectorised null over a baseline that
computes the same null draws pair by pair with ``scipy.stats.kendalltau``, measured in this run.

    python bench/bench_power.py            # per-cell timings and the projection
    python bench/bench_power.py --full     # also run the whole default grid and time it
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy import stats

from metacog_metrics.power import _alignment, _stratified_null, power_analysis
from metacog_metrics.power import stratified_permutations as perms_of
from metacog_metrics.simulate import get_preset, simulate_arrays

MODELS = (10, 20, 40)
ITEMS = (200, 1000, 5000)
WEIGHTS = 4
REPS = 200


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
    parser.add_argument("--alignment-reps", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5, help="timed replicates per cell")
    parser.add_argument("--full", action="store_true", help="also time the full default grid")
    args = parser.parse_args()
    params = get_preset("paper", individuated=0.1)
    rng = np.random.default_rng(0)

    print(f"one replicate: mean tau + {args.permutations} stratified null draws "
          f"(median of {args.runs})")  # fmt: skip
    print(f"{'models':>6} {'items':>6} {'pairwise s':>11} {'alignment s':>12} {'cell s':>8}")
    projected = 0.0
    for m in MODELS:
        for n in ITEMS:
            arr = simulate_arrays(params, m, n, 1, rng)
            conf, perf = arr.conf[0].astype(float), arr.perf[0].astype(float)

            def pairwise(conf=conf, perf=perf) -> None:
                _stratified_null(conf, perf, perms_of(perf, args.permutations, rng))

            t_pair = _median_time(pairwise, args.runs)
            t_align = _median_time(lambda c=conf, p=perf: _alignment(c, p), max(1, args.runs // 2))
            align_reps = min(args.alignment_reps, REPS)
            cell = WEIGHTS * REPS * t_pair + (WEIGHTS + 1) * align_reps * t_align
            projected += cell
            print(f"{m:>6} {n:>6} {t_pair:>11.4f} {t_align:>12.4f} {cell:>8.1f}")
    print(f"projected full default grid: {projected:.0f} s ({projected / 60:.1f} min)")

    # Baseline: the same null draws with scipy's kendalltau, pair by pair.
    m, n, b = 10, 200, 20
    arr = simulate_arrays(params, m, n, 1, rng)
    conf, perf = arr.conf[0].astype(float), arr.perf[0].astype(float)
    perms = perms_of(perf, b, rng)
    assert np.allclose(_stratified_null(conf, perf, perms), _baseline_null(conf, perf, perms))
    t_vec = _median_time(lambda: _stratified_null(conf, perf, perms), args.runs)
    t_base = _median_time(lambda: _baseline_null(conf, perf, perms), max(1, args.runs // 2))
    print(f"{b} null draws, {m} models x {n} items: vectorised {t_vec * 1e3:.1f} ms, "
          f"scipy loop {t_base * 1e3:.0f} ms, speed-up x{t_base / t_vec:.0f}")  # fmt: skip

    if args.full:
        t0 = time.perf_counter()
        res = power_analysis(permutations=args.permutations, alignment_reps=args.alignment_reps)
        print(f"full default grid: {time.perf_counter() - t0:.0f} s")
        print(res.summary_text())


if __name__ == "__main__":
    main()
