"""Timing of the pairwise calibration engine against a naive scipy baseline.

Prints, in one run, for 20, 50 and 100 models x 5,000 and 50,000 items:

* per-pair p-values under both nulls (random contingency tables, B draws per pair),
* joint draws of both nulls (the null of the mean over pairs, K draws),
* the naive baseline: ``scipy.stats.kendalltau`` on shuffled vectors, timed on a few pairs and
  draws in the same run and scaled to the same amount of work,

then the whole ``analyze_records`` on 33 models x 1,500 items with the defaults. Every figure is
the median of ``--repeats`` runs. Binary confidence, a shared difficulty axis (the paper's case).

``--per-pair`` prints instead the per-pair engine (both nulls, B draws per pair): the compiled
kernels (numba, the ``fast`` extra) against the NumPy block sampler in the same run (median wall
and CPU seconds of ``--repeats`` runs each, after a warm-up call that loads or compiles the
kernels, whose time is printed first: the cold compile is timed in a fresh interpreter with an
empty cache), and, with ``--sequential``, the cell-by-cell hypergeometric sampler the block sampler
replaced, timed on ``--baseline-pairs`` pairs (same chunks, threads and seeds) and scaled to all
pairs.

    python bench/bench_pairwise.py                 # the full table (several minutes on 2 cores)
    python bench/bench_pairwise.py --quick         # fewer draws, same structure
    python bench/bench_pairwise.py --per-pair --models 100 --items 5000,50000 --repeats 5

``--products`` prints instead the seconds per joint draw (both nulls, binary confidence, complete
data) of the compiled kernels against the one-hot products (``pairwise/products.py``) on NumPy
and on torch (a CUDA device where torch sees one, else CPU tensors), at ``--models`` (33, 100,
300 and 1,000 there by default) and ``--items`` (12,000 by default) with ``--draws`` draws each.

    python bench/bench_pairwise.py --products --draws 5

Targets on 2 cores: per-pair p-values for 100 models x 10,000 draws < 10 s whatever the number
of items; joint draws 20 x 5,000 x 1,000 < 5 s and 100 x 50,000 x 200 < 30 s; the whole analysis
of 33 x 1,500 with the defaults < 10 s.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from metacog_metrics.analyze import analyze_records
from metacog_metrics.pairwise import joint_null_draws, null_names, pair_permutation_test
from metacog_metrics.pairwise.nulls import PairSampler, get_null, register, registry_scope
from metacog_metrics.pairwise.pair_draws import PairInputs, accumulate
from metacog_metrics.pairwise.tau import _kendall_s, _tau_b_tables, _tau_from_s

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pairwise_reference import _collapse_4x4, _random_tables, _tau_cells


def population(n_items: int, n_models: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Binary confidence and correctness that share an item difficulty axis."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(size=(n_items, 1))
    thresholds = rng.normal(scale=0.7, size=(1, n_models))
    perf = (difficulty + rng.normal(size=(n_items, n_models)) > thresholds).astype(float)
    conf = (difficulty + rng.normal(size=(n_items, n_models)) > thresholds - 0.3).astype(float)
    return conf, perf


def median_time(fn: Callable[[], object], repeats: int) -> float:
    return median_times(fn, repeats)[0]


def median_times(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall and CPU (all threads of the process) seconds of ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def _sequential_pair_task(
    tables: np.ndarray, cats: tuple[np.ndarray, np.ndarray] | None, null: str, n: int, ss: object
) -> np.ndarray:
    """The per-pair task before the block sampler: every cell its own hypergeometric draw."""
    rng = np.random.default_rng(ss)
    obs = _tau_b_tables(tables)
    if null == "base_rate":
        rows, cols = tables.sum(axis=-1), tables.sum(axis=-2)
        s_null = _kendall_s(np.moveaxis(_random_tables(rows, cols, n, rng), (0, 1), (-2, -1)))
        s_obs = _kendall_s(tables)
        scale = _tau_from_s(np.ones(obs.shape), rows.astype(float), cols.astype(float))
        ok = np.isfinite(scale)
        ge = np.where(ok, (s_null >= s_obs[:, None]).sum(axis=1), 0)
        le = np.where(ok, (s_null <= s_obs[:, None]).sum(axis=1), 0)
        s1 = np.where(ok, s_null.sum(axis=1) * scale, 0.0)
        s2 = np.where(ok, (s_null.astype(float) ** 2).sum(axis=1) * scale**2, 0.0)
        return np.stack([ge, le, np.where(ok, n, 0), s1, s2], axis=1).astype(float)
    draws = _collapse_4x4(_random_tables(cats[0], cats[1], n, rng))
    return accumulate(obs, _tau_cells(draws))


def _sequential_sampler(null: str) -> PairSampler:
    """:func:`_sequential_pair_task` as a per-pair sampler of binary confidence (NumPy)."""

    def bind(inputs: PairInputs, idx: np.ndarray) -> Callable[..., np.ndarray]:
        tables = inputs.tables[idx]
        cats = (inputs.categories[inputs.ia[idx]], inputs.categories[inputs.ib[idx]])
        return lambda n, ss, out=None: _sequential_pair_task(tables, cats, null, n, ss)

    return PairSampler("numpy", bind)


def compile_seconds() -> tuple[float | None, float | None]:
    """Seconds to import the compiled kernels in a fresh interpreter: cold (empty numba cache,
    so they compile) and warm (from the cache just written); None without numba."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return None, None
    code = (
        "import time; t = time.perf_counter(); import metacog_metrics.pairwise._numba; "
        "print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        run = [sys.executable, "-c", code]
        times = [
            float(subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout)
            for _ in range(2)
        ]
    return times[0], times[1]


def products_section(models: list[int], items: list[int], draws: int, repeats: int) -> None:
    """Seconds per joint draw: compiled kernels against one-hot products (NumPy, torch)."""
    from metacog_metrics.pairwise import joint_draws as jd
    from metacog_metrics.pairwise.engines import compiled_kernels
    from metacog_metrics.pairwise.products import products

    kernels = compiled_kernels("auto")
    devices: list[tuple[str, object]] = [("numpy", None)]
    try:
        import torch

        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        devices.append((f"torch {dev.type}", dev))
    except ImportError:
        pass
    names = ["compiled" if kernels is not None else "numpy kernels"] + [n for n, _ in devices]
    print(f"seconds per joint draw (both nulls), {draws} draws, median of {repeats}; "
          f"{os.cpu_count()} CPU(s)")  # fmt: skip
    print(f"{'models':>6} {'items':>7} | " + " ".join(f"{n:>14}" for n in names))
    for m in models:
        for n in items:
            conf, perf = population(n, m)
            ia, ib = np.triu_indices(m, 1)
            inputs = jd.JointInputs(conf, perf, None, True, ia, ib, kernels)
            samplers = [jd.compiled_bits if kernels is not None else jd.bits]
            samplers += [lambda split, d=d: products(split, d) for _, d in devices]
            row = []
            for make in samplers:
                bound = [make(split).bind(inputs) for split in (True, False)]

                def run(bound: list = bound) -> None:
                    for _, draw in bound:
                        draw(draws, np.random.SeedSequence(0))

                row.append(median_time(run, repeats) / draws)
            print(f"{m:>6} {n:>7} | " + " ".join(f"{t:>13.4f}s" for t in row), flush=True)


def per_pair_section(models: list[int], items: list[int], b_draws: int, repeats: int,
                     baseline_pairs: int, sequential: bool) -> None:  # fmt: skip
    """Per-pair p-values, both nulls: compiled kernels against the NumPy block sampler."""
    cold, warm = compile_seconds()
    compiled = cold is not None
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"per-pair p-values, both nulls, B = {b_draws:,}; {os.cpu_count()} CPU(s), load "
          f"average {load:.2f} at the start; median of {repeats}")  # fmt: skip
    if compiled:
        print(f"compiled kernels: first import {cold:.1f}s (compiling, empty cache), "
              f"{warm:.2f}s from numba's cache")  # fmt: skip
        pair_permutation_test(*population(50, 3), permutations=10, rng=0, engine="numba")
    else:
        print("numba is not installed: NumPy engine only (pip install 'metacog-eval[fast]')")
    if sequential:
        print(f"'sequential' = the cell-by-cell sampler the block sampler replaced, timed on "
              f"{baseline_pairs} pairs and scaled to all of them")  # fmt: skip
    header = (
        f"{'models':>6} {'items':>7} {'pairs':>6} | {'numba wall':>10} {'cpu':>6} | "
        f"{'numpy wall':>10} {'cpu':>6} | {'x wall':>6}"
    )
    if sequential:
        header += f" | {'sequential wall':>15} {'cpu':>6}"
    print(header)
    print("-" * len(header))
    for m in models:
        for n in items:
            conf, perf = population(n, m)
            ia, ib = np.triu_indices(m, 1)

            def run(
                engine: str, pairs: tuple | None = None, conf: np.ndarray = conf,
                perf: np.ndarray = perf,
            ) -> None:  # fmt: skip
                for null in null_names():
                    pair_permutation_test(conf, perf, null=null, permutations=b_draws, rng=0,
                                          pairs=pairs, engine=engine)  # fmt: skip

            line = f"{m:>6} {n:>7} {ia.size:>6} | "
            wall = cpu = float("nan")
            if compiled:
                wall, cpu = median_times(lambda: run("numba"), repeats)
                line += f"{wall:>9.2f}s {cpu:>5.1f}s | "
            else:
                line += f"{'-':>10} {'-':>6} | "
            np_wall, np_cpu = median_times(lambda: run("numpy"), repeats)
            line += f"{np_wall:>9.2f}s {np_cpu:>5.1f}s | {np_wall / wall:>5.2f}x"
            if sequential:
                sub = min(ia.size, baseline_pairs)
                keep = np.linspace(0, ia.size - 1, sub).astype(int)
                with registry_scope():  # the nulls with the sequential sampler instead
                    for null in null_names():
                        spec = get_null(null)
                        samplers = {**spec.pair_samplers,
                                    ("binary", "numpy"): (_sequential_sampler(null),)}  # fmt: skip
                        register(dataclasses.replace(spec, pair_samplers=samplers), replace=True)
                    subset = (ia[keep], ib[keep])
                    old_wall, old_cpu = median_times(lambda s=subset: run("numpy", s), repeats)
                scale = ia.size / sub
                line += f" | {old_wall * scale:>14.1f}s {old_cpu * scale:>5.1f}s"
            print(line, flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.2f} at the end")


def naive_seconds_per_draw(conf: np.ndarray, perf: np.ndarray, null: str, draws: int) -> float:
    """Seconds per (pair, draw) of kendalltau on vectors shuffled by the null's reference law
    (3 pairs)."""
    law = get_null(null).pair_law
    rng = np.random.default_rng(1)
    pairs = [(0, 1), (1, 2), (0, 2)]
    start = time.perf_counter()
    for a, b in pairs:
        for _ in range(draws):
            c, p = law(conf[:, [a, b]], perf[:, [a, b]], rng)
            stats.kendalltau(c[:, 0] - c[:, 1], p[:, 0] - p[:, 1])
    return (time.perf_counter() - start) / (len(pairs) * draws)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--permutations", type=int, default=10_000, help="per-pair draws B")
    parser.add_argument("--quick", action="store_true", help="B = 1,000, K / 5, 1 repeat")
    parser.add_argument("--models", default="20,50,100")
    parser.add_argument("--items", default="5000,50000")
    parser.add_argument("--skip-analyze", action="store_true")
    parser.add_argument(
        "--per-pair", action="store_true", help="per-pair engine: compiled against NumPy"
    )
    parser.add_argument(
        "--sequential", action="store_true", help="--per-pair: also the cell-by-cell sampler"
    )
    parser.add_argument(
        "--baseline-pairs", type=int, default=1000, help="pairs the --per-pair baseline runs on"
    )
    parser.add_argument(
        "--products", action="store_true", help="joint draws: compiled against one-hot products"
    )
    parser.add_argument("--draws", type=int, default=3, help="--products: draws per figure")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    b_draws = 1_000 if args.quick else args.permutations
    models = [int(v) for v in args.models.split(",")]
    items = [int(v) for v in args.items.split(",")]
    if args.products:
        products_section(
            [int(v) for v in args.models.split(",")] if args.models != "20,50,100"
            else [33, 100, 300, 1000],
            [int(v) for v in args.items.split(",")] if args.items != "5000,50000" else [12_000],
            args.draws, repeats,
        )  # fmt: skip
        return 0
    if args.per_pair:
        per_pair_section(models, items, b_draws, repeats, args.baseline_pairs, args.sequential)
        return 0

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
                for null in null_names():
                    pair_permutation_test(conf, perf, null=null, permutations=b_draws, rng=0)

            def joint(conf: np.ndarray = conf, perf: np.ndarray = perf, k: int = k_draws) -> None:
                for null in null_names():
                    joint_null_draws(conf, perf, null=null, n=k, rng=0)

            t_pair = median_time(per_pair, repeats)
            t_joint = median_time(joint, repeats)
            naive = sum(naive_seconds_per_draw(conf, perf, null, 5) for null in null_names())
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
