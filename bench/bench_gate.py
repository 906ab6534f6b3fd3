"""False-alarm rate and power of ``metacog gate``'s default settings.

A false alarm is a failing verdict (exit 1) for a candidate that did not get worse. Four nulls,
each with its Monte Carlo count, rate and exact (Clopper-Pearson) 95% interval:

1. **simulated same-model reruns**: two runs of one model of the simulated population
   (``paper`` preset, rotating over m01..m08) with different sampling seeds (same items, same
   model, fresh solve and reading noise), 3 benchmarks x 2 probes x 500 items;
2. **an independent generator**: a 2PL-type item model with skewed difficulties, heavy-tailed
   confidence noise and unparseable replies, written here and sharing nothing with
   ``metacog_metrics.simulate``; two runs redraw every per-cell draw;
3. **real runs, exchanged**: two real models' per-item records (``../shared/data/realruns``:
   Cacioli's 33-model MMLU atlas with 0-100 confidence, and the 20-model battery with binary
   KEEP/WITHDRAW confidence) with each item's pair of records randomly assigned to "baseline"
   and "candidate": both sides then have one distribution, whatever the two models are;
4. the same three at **margin 0** for every metric: the same-model change is then exactly on
   the non-inferiority boundary, so the family-wise false-alarm rate must stay at or below
   alpha (5%) and each test's own rejection rate at its unadjusted level near 5%. This is the
   stringent check of the bootstrap's calibration; at the default margins the rate is far lower.

Both runs of a replicate are drawn afresh, so the rates are over pairs of runs, which is what
the test's level promises; against one fixed baseline the rate depends on how lucky that
baseline's draw was (the margins are there to absorb it).

A check of the normal approximation on heavy-tailed real differences (``linear``): the gate's
Brier p-values on exchanged atlas runs against the closed-form normal test of the mean paired
difference, and that test's rejection rate over 20,000 exchanges per model pair.

Then the power of the defaults against degraded confidence (reading noise raised from 1.3 to
2, 3, 4 on the simulated population): the share of reruns that fail, and on which metric.

    python bench/bench_gate.py                  # 400 reruns per null (long: an hour on 2 cores)
    python bench/bench_gate.py --reruns 40      # a quicker look, wider intervals
    python bench/bench_gate.py --out gate-bench.json

Prints the tables and writes every count to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from tqdm import tqdm

from metacog_metrics import GateConfig, Population, gate_records, validate_records
from metacog_metrics.gate import METRICS
from metacog_tasks.sim import preset_params

BENCHES = ("squad", "mmlu_pro", "legalbench")
PROBES = ("prospective", "numeric")
N_ITEMS = 500
MODELS = [f"m{i:02d}" for i in range(1, 9)]
ZERO = {name: 0.0 for name in METRICS}


def shared_dir() -> Path:
    return Path(os.environ.get("METACOG_SHARED", Path(__file__).resolve().parents[2] / "shared"))


# ------------------------------------------------------------------------------ the nulls


def sim_side(pop: Population, model: str, sampling_seed: int | None) -> pd.DataFrame:
    frames = []
    for bench in BENCHES:
        ids = [f"{bench}-{i:05d}" for i in range(1, N_ITEMS + 1)]
        frames.append(
            pop.records(bench, ids, probes=PROBES, models=[model], sampling_seed=sampling_seed)
        )
    return validate_records(pd.concat(frames, ignore_index=True))


def sim_reruns(n: int, seed: int = 0) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """Two fresh runs per replicate: the rate is over pairs of runs, as the test's guarantee."""
    pop = Population(preset_params("paper"), len(MODELS), seed)
    for r in range(n):
        model = MODELS[r % len(MODELS)]
        yield sim_side(pop, model, 10_000 + 2 * r), sim_side(pop, model, 10_001 + 2 * r)


def indep_side(rng: np.random.Generator, items: dict[str, np.ndarray], model: str) -> pd.DataFrame:
    """One run of the independent generator: every per-cell draw is fresh."""
    n = items["b"].size
    theta = 0.3
    logit = items["a"] * (theta - items["b"]) + items["k"]
    correct = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(float)
    read = 0.7 * (theta - items["b"]) + 0.8 * items["k"] + 0.8 * rng.standard_t(4, n)
    numeric = np.clip(np.round(100 / (1 + np.exp(-(read + 0.4 + rng.logistic(0, 0.3, n))))), 0, 100)
    binary = (read > 0.2).astype(float)
    rows = []
    for probe, kind, conf in (
        ("prospective", "verbal_binary", binary),
        ("numeric", "verbal_numeric", numeric / 100),
    ):
        conf = conf.copy()
        conf[rng.random(n) < 0.03] = np.nan  # unparseable replies
        rows.append(
            pd.DataFrame(
                {
                    "model": model,
                    "benchmark": "indep",
                    "item_id": items["ids"],
                    "probe": probe,
                    "confidence": conf,
                    "confidence_kind": kind,
                    "correct": correct,
                }
            )
        )
    return validate_records(pd.concat(rows, ignore_index=True))


def indep_reruns(n: int, seed: int = 0) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    rng = np.random.default_rng(seed)
    n_items = 800
    items = {
        "ids": np.array([f"q{i:04d}" for i in range(n_items)], dtype=object),
        "b": rng.gamma(2.0, 1.0, n_items) - 2.0,  # skewed difficulties
        "a": rng.lognormal(0.0, 0.5, n_items),  # discriminations
        "k": rng.normal(0, 0.7, n_items),  # what this model happens to know of each item
    }
    for _ in range(n):
        yield indep_side(rng, items, "indep-model"), indep_side(rng, items, "indep-model")


def real_pairs(folder: str) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    path = shared_dir() / "data" / "realruns" / folder / "tidy.csv"
    df = pd.read_csv(path)
    counts = df.groupby("model")["item_id"].nunique()
    models = sorted(counts[counts >= 0.95 * counts.max()].index)
    pairs = []
    for a, b in zip(models[0::2], models[1::2], strict=False):
        sa = df[df["model"] == a].set_index("item_id")
        sb = df[df["model"] == b].set_index("item_id")
        shared = sa.index.intersection(sb.index)
        pairs.append((sa.loc[shared].reset_index(), sb.loc[shared].reset_index()))
    return pairs


def exchanged(folder: str, n: int, seed: int = 0) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """Two real models' records, each item's pair randomly split into baseline and candidate."""
    rng = np.random.default_rng(seed)
    pairs = real_pairs(folder)
    for r in range(n):
        a, b = pairs[r % len(pairs)]
        swap = np.broadcast_to((rng.random(len(a)) < 0.5)[:, None], a.shape)
        base = a.where(~swap, b).assign(model="baseline")
        cand = b.where(~swap, a).assign(model="candidate")
        yield validate_records(base), validate_records(cand)


def degraded(noise: float, n: int, seed: int = 0) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    pop = Population(preset_params("paper"), len(MODELS), seed)
    worse = Population(preset_params("paper", reading_noise_sd=noise), len(MODELS), seed)
    for r in range(n):
        model = MODELS[r % len(MODELS)]
        yield sim_side(pop, model, 10_000 + 2 * r), sim_side(worse, model, 10_001 + 2 * r)


# ------------------------------------------------------------------------------ counting


def interval(k: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return float(ci.low), float(ci.high)


def run(
    name: str,
    draws: Callable[[], Iterator[tuple[pd.DataFrame, pd.DataFrame]]],
    n: int,
    configs: dict[str, GateConfig],
) -> dict:
    fails = Counter()
    statuses: dict[str, Counter] = {c: Counter() for c in configs}
    failed_metrics: dict[str, Counter] = {c: Counter() for c in configs}
    per_test: dict[str, Counter] = {c: Counter() for c in configs}  # p < alpha per metric
    per_test_n: dict[str, Counter] = {c: Counter() for c in configs}
    start = time.perf_counter()
    for base, cand in tqdm(draws(), total=n, desc=name, file=sys.stderr):
        for cname, cfg in configs.items():
            v = gate_records(base, cand, cfg)
            statuses[cname][v.status] += 1
            fails[cname] += v.exit_code == 1
            for t in v.failed:
                failed_metrics[cname][t.metric] += 1
            for t in v.tests:
                if t.gated and math.isfinite(t.p_value):
                    per_test_n[cname][t.metric] += 1
                    per_test[cname][t.metric] += t.p_value < cfg.alpha
    out = {"reruns": n, "seconds": time.perf_counter() - start, "configs": {}}
    for cname in configs:
        k = fails[cname]
        out["configs"][cname] = {
            "false_alarms": k,
            "rate": k / n,
            "ci95": interval(k, n),
            "mc_se": math.sqrt(max(k, 0.5) / n * (1 - k / n) / n),
            "statuses": dict(statuses[cname]),
            "failed_metrics": dict(failed_metrics[cname]),
            "per_test_rejection": {
                m: {"k": per_test[cname][m], "n": per_test_n[cname][m],
                    "rate": per_test[cname][m] / per_test_n[cname][m],
                    "ci95": interval(per_test[cname][m], per_test_n[cname][m])}
                for m in per_test_n[cname]
            },
        }  # fmt: skip
    return out


def show(name: str, res: dict) -> None:
    print(f"\n{name}: {res['reruns']} reruns ({res['seconds']:.0f} s)")
    print(f"  {'settings':<10} {'fails':>6} {'rate':>7}  {'95% interval':<17} statuses")
    for cname, r in res["configs"].items():
        lo, hi = r["ci95"]
        print(
            f"  {cname:<10} {r['false_alarms']:>6} {r['rate']:>7.4f}  "
            f"[{lo:.4f}, {hi:.4f}]  {r['statuses']}"
            + (f"  failed on {r['failed_metrics']}" if r["failed_metrics"] else "")
        )
    zero = res["configs"].get("margin 0")
    if zero:
        print("  per-test rejection at margin 0, unadjusted p < 0.05 (nominal 0.05):")
        for m, r in sorted(zero["per_test_rejection"].items()):
            lo, hi = r["ci95"]
            print(f"    {m:<14} {r['k']:>5}/{r['n']:<6} {r['rate']:.4f}  [{lo:.4f}, {hi:.4f}]")


def linear_check(folder: str, n_gate: int, n_flips: int = 20_000) -> dict:
    """The Brier test on exchanged real runs: the gate's p-values against the closed-form
    normal test of the mean paired difference on the same draws, then that closed-form test's
    rejection rate over ``n_flips`` exchanges per model pair (its Monte Carlo error is small)."""
    cfg = GateConfig(metrics=("brier",), margins=ZERO)
    agree, gate_rej, closed_rej = [], 0, 0
    for base, cand in exchanged(folder, n_gate):
        (t,) = gate_records(base, cand, cfg).tests
        d = (
            (cand["confidence"] - cand["correct"]) ** 2
            - (base["confidence"] - base["correct"]) ** 2
        ).to_numpy()
        p = float(stats.norm.sf(d.mean() / math.sqrt((np.mean(d**2) - d.mean() ** 2) / d.size)))
        agree.append(abs(t.p_value - p))
        gate_rej += t.p_value < 0.05
        closed_rej += p < 0.05
    rng = np.random.default_rng(1)
    per_pair = []
    for a, b in real_pairs(folder):
        delta = (
            (a["confidence"] - a["correct"]) ** 2 - (b["confidence"] - b["correct"]) ** 2
        ).to_numpy()
        d = rng.choice([-1.0, 1.0], size=(n_flips, delta.size)) * delta
        m = d.mean(axis=1)
        z = m / np.sqrt((np.mean(d**2, axis=1) - m**2) / delta.size)
        per_pair.append(float(np.mean(z > stats.norm.isf(0.05))))
    return {
        "draws": n_gate,
        "gate_rejections": int(gate_rej),
        "closed_form_rejections": int(closed_rej),
        "median_abs_p_difference": float(np.median(agree)),
        "flips_per_pair": n_flips,
        "closed_form_rate_per_pair": per_pair,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reruns", type=int, default=400, help="reruns per null (default 400)")
    ap.add_argument("--power-reruns", type=int, default=40, help="reruns per noise level")
    ap.add_argument("--only", choices=("sim", "indep", "real", "linear", "power"), action="append")
    ap.add_argument("--out", help="write the counts as JSON")
    args = ap.parse_args()
    configs = {"defaults": GateConfig(), "margin 0": GateConfig(margins=ZERO)}
    todo = args.only or ["sim", "indep", "real", "linear", "power"]
    results: dict = {"settings": {"defaults": GateConfig().to_dict()}}
    n = args.reruns
    if "sim" in todo:
        results["sim"] = run("simulated same-model reruns", lambda: sim_reruns(n), n, configs)
        show(
            "simulated same-model reruns (paper preset, 3 benchmarks x 2 probes x 500)",
            results["sim"],
        )
    if "indep" in todo:
        results["indep"] = run("independent generator", lambda: indep_reruns(n), n, configs)
        show("independent generator reruns (800 items, 2 probes)", results["indep"])
    if "real" in todo:
        for folder in ("cacioli_atlas_mmlu", "cacioli_battery_binary"):
            if not (shared_dir() / "data" / "realruns" / folder).is_dir():
                print(f"\n{folder}: not found under {shared_dir()}; skipped")
                continue
            res = run(folder, lambda f=folder: exchanged(f, n), n, configs)
            results[folder] = res
            show(f"real runs exchanged: {folder} ({len(real_pairs(folder))} model pairs)", res)
    if "linear" in todo and (shared_dir() / "data" / "realruns" / "cacioli_atlas_mmlu").is_dir():
        res = linear_check("cacioli_atlas_mmlu", n)
        results["linear"] = res
        rates = res["closed_form_rate_per_pair"]
        print(
            f"\nBrier at margin 0 on exchanged atlas runs, {n} draws: the gate rejects "
            f"{res['gate_rejections']}, the closed-form normal test of the mean difference "
            f"{res['closed_form_rejections']} (median |p difference| "
            f"{res['median_abs_p_difference']:.4f}); that test over {res['flips_per_pair']} "
            f"exchanges per pair rejects {min(rates):.4f} to {max(rates):.4f} (nominal 0.05)"
        )
    if "power" in todo:
        results["power"] = {}
        print(f"\npower of the defaults (simulated, {args.power_reruns} reruns per level):")
        for noise in (2.0, 3.0, 4.0):
            res = run(f"noise {noise}", lambda x=noise: degraded(x, args.power_reruns),
                      args.power_reruns, {"defaults": GateConfig()})  # fmt: skip
            r = res["configs"]["defaults"]
            results["power"][str(noise)] = res
            lo, hi = r["ci95"]
            print(
                f"  reading noise 1.3 -> {noise}: fail {r['false_alarms']}/{args.power_reruns} "
                f"= {r['rate']:.2f} [{lo:.2f}, {hi:.2f}]; failing metrics {r['failed_metrics']}"
            )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
