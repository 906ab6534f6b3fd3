"""The size of the test of private signal, and of the pass-count null it replaced.

Rejection rates at alpha 0.05 with no private signal, 20 models, 99 permutations (decisions
curtailed as in ``metacog power``: the same decision as all 99 draws), under the ``rasch``,
``2pl`` (log-discrimination sd 1.0) and ``3pl`` (guessing 0.25) presets, with Monte Carlo
standard errors and 95% Clopper-Pearson intervals. The README's table came from

    python bench/bench_size.py --items 10000 --reps 400 --seed 0
    python bench/bench_size.py --items 1000,3000 --reps 400 --seed 1

(about 35 CPU-minutes each on one core). ``--independent`` also runs the test on a generator
the project's simulator did not make: logistic correctness with lognormal slopes (sd 1.0) and
guessing 0.25 on half the items, confidence that reads each item's difficulty, slope and
guessing (``tests/test_private_signal.py``); the README quotes

    python bench/bench_size.py --items 10000 --reps 200 --independent

(its second part; 200 replicates a generator setting), and ``--two-tracks`` items that draw on
two abilities (correlation 0.3) with confidence shifted by track, no private signal:

    python bench/bench_size.py --items 524,2000 --reps 200 --two-tracks
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from metacog_metrics.power import _curtailed_rejects, size_analysis
from metacog_metrics.private_signal import pattern_strata
from metacog_metrics.stratified import mean_taus

INDEPENDENT = {
    "slopes sd 1.0": {"slope_sd": 1.0},
    "guessing 0.25 on half the items": {"guess": 0.25},
    "both": {"slope_sd": 1.0, "guess": 0.25},
}


def _independent(n_items: int, reps: int, seed: int = 20261203) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_private_signal import _logistic_population

    for name, kw in INDEPENDENT.items():
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        hits = sum(_rejects(*_logistic_population(n_items, 20, rng, **kw), r) for r in range(reps))
        _print_rate(f"independent generator, {name}, {n_items} items", hits, reps, t0)


def _rejects(conf: np.ndarray, perf: np.ndarray, r: int) -> int:
    """Whether replicate ``r`` rejects at 0.05 (curtailed at 99 draws, blocks of 10 items)."""
    obs = float(mean_taus(conf, perf))
    hit, _ = _curtailed_rejects(
        conf, perf, obs, 99, 0.05, np.random.default_rng(r), pattern_strata(perf, 10)
    )
    return int(hit)


def _print_rate(label: str, hits: int, reps: int, t0: float) -> None:
    rate = hits / reps
    low, high = stats.binomtest(hits, reps).proportion_ci(0.95)
    print(
        f"{label}, {reps} reps: rate {rate:.3f} (se {math.sqrt(rate * (1 - rate) / reps):.3f}, "
        f"95% {low:.3f}-{high:.3f}) [{time.perf_counter() - t0:.0f} s]",
        flush=True,
    )


def _two_tracks(n_items: int, reps: int, rho: float = 0.3, shift: float = 1.0) -> None:
    from scipy import special

    rng = np.random.default_rng(5)
    t0, hits = time.perf_counter(), 0
    for r in range(reps):
        m = 20
        theta = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=m)
        track = np.repeat([0, 1], n_items // 2)
        b = rng.normal(0, 1.2, track.size)
        perf = rng.random((track.size, m)) < special.expit(theta[:, track].T - b[:, None])
        threshold = rng.normal(0, 0.7, m)
        look = -0.9 * b + shift * (track - 0.5) + rng.normal(0, 0.8, track.size)
        conf = look[:, None] + rng.logistic(size=(track.size, m)) > threshold[None, :]
        hits += _rejects(conf.astype(float), perf.astype(float), r)
    _print_rate(
        f"two tracks (ability correlation {rho}, confidence shift {shift}), {n_items} items",
        hits, reps, t0,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="1000,3000,10000")
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--independent", action="store_true")
    parser.add_argument("--two-tracks", action="store_true")
    args = parser.parse_args()
    items = [int(v) for v in args.items.split(",")]
    if args.two_tracks:
        for n in items:
            _two_tracks(n, args.reps)
        return
    t0 = time.perf_counter()
    table = size_analysis(
        items=items, reps=args.reps, seed=args.seed, progress=False, workers=1, models=(20,)
    )
    cols = ["correctness", "items", "reps"]
    for null in ("private_signal", "difficulty_stratified"):
        cols += [f"{null}_rate", f"{null}_se", f"{null}_low", f"{null}_high"]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"[{time.perf_counter() - t0:.0f} s]")
    if args.independent:
        for n in items:
            _independent(n, args.reps)


if __name__ == "__main__":
    main()
