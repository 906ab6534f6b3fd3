"""Timing of the pairwise calibration engine against a naive scipy baseline.

Prints, in one run, for 20, 50 and 100 models x 5,000 and 50,000 items:

* per-pair p-values under both nulls (random contingency tables, B draws per pair),
* joint draws of both nulls (the null of the mean over pairs, K draws),
* the naive baseline: ``scipy.stats.kendalltau`` on shuffled vectors, timed on a few pairs and
  draws in the same run and scaled to the same amount of work,

then the whole ``analyze_records`` on 33 models x 1,500 items with the defaults. Every figure is
the median of ``--repeats`` runs. Binary confidence, a shared difficulty axis (the paper's case).

    python bench/bench_pairwise.py                 # the full table (several minutes on 2 cores)
    python bench/bench_pairwise.py --quick         # fewer draws, same structure

Targets on 2 cores: per-pair p-values for 100 models x 10,000 draws < 10 s whatever the number
of items; joint draws 20 x 5,000 x 1,000 < 5 s and 100 x 50,000 x 200 < 30 s; the whole analysis
of 33 x 1,500 with the defaults < 10 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats

from metacog_metrics.analyze import analyze_records
from metacog_metrics.pairwise import NULLS, joint_null_draws, pair_permutation_test


def population(n_items: int, n_models: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Binary confidence and correctness that share an item difficulty axis."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(size=(n_items, 1))
    thresholds = rng.normal(scale=0.7, size=(1, n_models))
    perf = (difficulty + rng.normal(size=(n_items, n_models)) > thresholds).astype(float)
    conf = (difficulty + rng.normal(size=(n_items, n_models)) > thresholds - 0.3).astype(float)
    return conf, perf


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def naive_seconds_per_draw(conf: np.ndarray, perf: np.ndarray, null: str, draws: int) -> float:
    """Seconds per (pair, draw) of kendalltau on explicitly shuffled vectors (3 pairs)."""
    rng = np.random.default_rng(1)
    pairs = [(0, 1), (1, 2), (0, 2)]
    start = time.perf_counter()
    for a, b in pairs:
        for _ in range(draws):
            if null == "base_rate":
                dc = conf[:, a] - conf[:, b]
                dp = rng.permutation(perf[:, a] - perf[:, b])
            else:
                perm = rng.permutation(conf.shape[0])
                dc = conf[:, a] - conf[perm, b]
                dp = perf[:, a] - perf[perm, b]
            stats.kendalltau(dc, dp)
    return (time.perf_counter() - start) / (len(pairs) * draws)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--permutations", type=int, default=10_000, help="per-pair draws B")
    parser.add_argument("--quick", action="store_true", help="B = 1,000, K / 5, 1 repeat")
    parser.add_argument("--models", default="20,50,100")
    parser.add_argument("--items", default="5000,50000")
    parser.add_argument("--skip-analyze", action="store_true")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    b_draws = 1_000 if args.quick else args.permutations
    models = [int(v) for v in args.models.split(",")]
    items = [int(v) for v in args.items.split(",")]

    print(f"pairwise engine, binary confidence; {os.cpu_count()} CPU(s); median of {repeats}")
    print("B = per-pair draws per null, K = joint draws per null; 'naive' = scipy kendalltau on")
    print("shuffled vectors timed on 3 pairs in this run and scaled to the same work.")
    header = (
        f"{'models':>6} {'items':>7} {'pairs':>6} | {'B':>6} {'per-pair 2 nulls':>16} "
        f"{'naive':>9} {'x':>6} | {'K':>5} {'joint 2 nulls':>13} {'naive':>9} {'x':>6}"
    )
    print(header)
    print("-" * len(header))
    for m in models:
        for n in items:
            conf, perf = population(n, m)
            n_pairs = m * (m - 1) // 2
            k_draws = 1_000 if n <= 5_000 else 200
            if args.quick:
                k_draws //= 5

            def per_pair(conf: np.ndarray = conf, perf: np.ndarray = perf) -> None:
                for null in NULLS:
                    pair_permutation_test(conf, perf, null=null, permutations=b_draws, rng=0)

            def joint(conf: np.ndarray = conf, perf: np.ndarray = perf, k: int = k_draws) -> None:
                for null in NULLS:
                    joint_null_draws(conf, perf, null=null, n=k, rng=0)

            t_pair = median_time(per_pair, repeats)
            t_joint = median_time(joint, repeats)
            naive = sum(naive_seconds_per_draw(conf, perf, null, 5) for null in NULLS)
            naive_pair = naive * n_pairs * b_draws
            naive_joint = naive * n_pairs * k_draws
            print(
                f"{m:>6} {n:>7} {n_pairs:>6} | {b_draws:>6} {t_pair:>15.2f}s "
                f"{naive_pair:>8.0f}s {naive_pair / t_pair:>5.0f}x | {k_draws:>5} "
                f"{t_joint:>12.2f}s {naive_joint:>8.0f}s {naive_joint / t_joint:>5.0f}x",
                flush=True,
            )
    if not args.skip_analyze:
        conf, perf = population(1_500, 33, seed=2)
        df = pd.DataFrame(
            {
                "model": np.repeat([f"model-{j}" for j in range(33)], 1_500),
                "item_id": np.tile([str(i) for i in range(1_500)], 33),
                "confidence": conf.T.ravel(),
                "correct": perf.T.ravel(),
            }
        )
        kwargs = {"permutations": 1_000, "joint_permutations": 200} if args.quick else {}
        t = median_time(lambda: analyze_records(df, **kwargs), repeats)
        what = "quick settings" if args.quick else "defaults: 10,000 per-pair, 1,000 joint draws"
        print(f"\nanalyze_records, 33 models x 1,500 items ({what}): {t:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
