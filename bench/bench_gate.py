"""False alarms and power of ``metacog gate``'s default rule, on data its code did not make.

The runs come from ``tests/gate_generator.py``, an item-response generator written apart from
the project's simulator (3PL correctness with guessing on the multiple-choice benchmark, skewed
difficulties, 0-100 confidence rounded to fives read from a partly wrong view of difficulty, a
binary probe, unparseable replies and ungraded solves), and from the real runs in
``../shared/data/realruns``. Every rate has its exact (Clopper-Pearson) 95% interval.

- ``null``: two runs of one model (every per-record draw redrawn, a fresh item bank per
  replicate), 3 benchmarks x 2 probes, at 500 and 2,000 items per group; the share that fails
  (exit 1) under the default rule, under the default rule at alpha 0.05, and under the old
  default (``noninferiority`` at alpha 0.05, inconclusive passing); at margin 0 every metric's
  own rejection rate at p < 0.05 (the calibration of the bootstrap test itself).
- ``exchanged``: real runs (Cacioli's MMLU atlas, 0-100 confidence; the binary battery), each
  item's two records of a pair of models randomly assigned to baseline and candidate.
- ``tail``: the far tail of the normal test on those exchanges, 20,000 per model pair; and the
  spread of the AUROC change over 1,000 exchanges against the gate's bootstrap standard error.
- ``power``: at 500 and 1,000 items per group, a degraded candidate (more reading noise:
  AUROC down; less ability: accuracy down; overconfidence: ECE up), each level set so that
  the change averaged over the three benchmarks' numeric probes (accuracy: over the
  benchmarks) has a stated size on 50,000 items; the share that fails, and that fails on that
  metric.
- ``atlas``: the atlas cases of docs/gate.md: a planted AUROC drop of 0.062 in each 1,500-item
  model's run, and the real pairs of close and distant versions.

    python bench/bench_gate.py --only null --reruns 300
    python bench/bench_gate.py --only power --reruns 80
    python bench/bench_gate.py --only power --reruns 40 --level auroc=-0.06 --level accuracy=-0.04
    python bench/bench_gate.py --only atlas --only exchanged
    python bench/bench_gate.py --out gate-bench.json       # everything (about an hour)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

# One BLAS thread: the bootstrap's matrix-vector products are small, and BLAS threads
# fighting over a busy machine's cores made them slower by a factor of four (measured).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metacog_metrics import GateConfig, gate_records, validate_records
from metacog_metrics.gate import gate_records_under
from metacog_metrics.gate.metrics import METRICS, metric_values
from tests.gate_generator import ModelSpec, draw_run, make_bank, plant_auroc_drop

SIZES = (500, 2000)
POWER_SIZES = (500, 1000)
ZERO = {name: 0.0 for name in METRICS}
NULL_CONFIGS = {
    "default": GateConfig(),
    "alpha 0.05": GateConfig(alpha=0.05),
    "old default": GateConfig(rule="noninferiority", alpha=0.05),
    "margin 0": GateConfig(margins=ZERO),
    "inconclusive: fail": GateConfig(inconclusive="fail"),
    "primary: auroc": GateConfig(primary="auroc"),
}
Pairs = Iterator[tuple[pd.DataFrame, pd.DataFrame]]


def shared_dir() -> Path:
    return Path(os.environ.get("METACOG_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def interval(k: int, n: int) -> list[float]:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return [float(ci.low), float(ci.high)]


def rate(k: int, n: int) -> str:
    lo, hi = interval(k, n)
    return f"{k}/{n} = {100 * k / n:.2f}% [{100 * lo:.2f}%, {100 * hi:.2f}%]"


# ------------------------------------------------------------------------------ generator


def reruns(n_items: int, n: int, spec_b: ModelSpec, spec_c: ModelSpec, seed: int) -> Pairs:
    """Pairs of runs, a fresh item bank per replicate."""
    for r in range(n):
        bank = make_bank(n_items, seed=seed + r)
        rng = np.random.default_rng([seed, r])
        yield draw_run(bank, spec_b, rng), draw_run(bank, spec_c, rng)


def true_values(spec: ModelSpec, metric: str, n_items: int = 50_000) -> float:
    """The metric of ``spec`` on a large bank: the mean over benchmarks of the numeric probe
    (accuracy: of the solves)."""
    run = draw_run(make_bank(n_items, seed=999), spec, np.random.default_rng(999))
    sub = run if metric == "accuracy" else run[run["probe"] == "numeric"]
    values = []
    for _, g in sub.groupby("benchmark"):
        g = g.drop_duplicates("item_id") if metric == "accuracy" else g
        c, y = g["confidence"].to_numpy(float), g["correct"].to_numpy(float)
        values.append(float(metric_values(metric, np.ones((1, len(g))), c, y)[0]))
    return float(np.mean(values))


def calibrate(field: str, metric: str, change: float, lo: float, hi: float) -> tuple[float, float]:
    """The value of ``field`` giving ``change`` in ``metric`` (bisection); and the change."""
    base = true_values(ModelSpec(), metric)

    def got(x: float) -> float:
        return true_values(ModelSpec(**{field: x}), metric) - base

    increasing = got(hi) > got(lo)
    for _ in range(25):
        mid = (lo + hi) / 2
        if (got(mid) < change) == increasing:
            lo = mid
        else:
            hi = mid
    x = (lo + hi) / 2
    return x, got(x)


# ------------------------------------------------------------------------------ counting


def count(draws: Callable[[], Pairs], n: int, configs: dict[str, GateConfig], desc: str) -> dict:
    fails: Counter = Counter()
    exit3: Counter = Counter()
    failed_metrics: dict[str, Counter] = {c: Counter() for c in configs}
    per_test: dict[str, Counter] = {c: Counter() for c in configs}
    per_test_n: dict[str, Counter] = {c: Counter() for c in configs}
    start = time.perf_counter()
    for i, (base, cand) in enumerate(draws(), 1):
        for cname, v in zip(
            configs, gate_records_under(base, cand, list(configs.values())), strict=True
        ):
            fails[cname] += v.exit_code == 1
            exit3[cname] += v.exit_code == 3
            for metric in {t.metric for t in v.failed}:
                failed_metrics[cname][metric] += 1
            for t in v.tests:
                if t.gated and math.isfinite(t.p_value):
                    per_test_n[cname][t.metric] += 1
                    per_test[cname][t.metric] += t.p_value < 0.05
        if i % 20 == 0:
            print(f"  {desc}: {i}/{n} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    out: dict = {"reruns": n, "seconds": round(time.perf_counter() - start, 1), "configs": {}}
    for cname in configs:
        k = fails[cname]
        out["configs"][cname] = {
            "fails": k,
            "rate": k / n,
            "ci95": interval(k, n),
            "exit_3": exit3[cname],
            "failed_on": dict(failed_metrics[cname]),
            "per_test_p_below_0.05": {
                m: [per_test[cname][m], per_test_n[cname][m]] for m in sorted(per_test_n[cname])
            },
        }
    return out


def run_null(n: int) -> dict:
    out = {}
    for size in SIZES:
        res = count(
            lambda s=size: reruns(s, n, ModelSpec(), ModelSpec(), seed=1000 * s),
            n,
            NULL_CONFIGS,
            f"null {size}",
        )
        out[str(size)] = res
        print(f"\nreruns of an unchanged model, {size} items per group (3 benchmarks x 2 probes):")
        for cname, r in res["configs"].items():
            if cname != "margin 0":
                print(f"  {cname:<18} fail {rate(r['fails'], n)}  on {r['failed_on']}")
                if r["exit_3"] or cname == "inconclusive: fail":
                    print(f"  {'':<18} inconclusive (exit 3) {rate(r['exit_3'], n)}")
        print("  margin 0, each test's p < 0.05 (nominal 5%):")
        for m, (k, tot) in res["configs"]["margin 0"]["per_test_p_below_0.05"].items():
            print(f"    {m:<12} {rate(k, tot)}")
    return out


POWER = {  # metric: (spec field, changes, bisection range)
    "auroc": ("noise", (-0.03, -0.06, -0.10), (0.5, 4.0)),
    "accuracy": ("ability", (-0.02, -0.04, -0.06), (0.0, 0.6)),
    "ece": ("overconfidence", (0.02, 0.04), (0.0, 1.5)),
}


def run_power(n: int, only: Sequence[str] = ()) -> dict:
    """Power at each level of :data:`POWER`, or only at the ``METRIC=CHANGE`` levels given."""
    out: dict = {}
    for metric, (field, changes, (lo, hi)) in POWER.items():
        for change in changes:
            if only and f"{metric}={change:g}" not in only:
                continue
            value, true = calibrate(field, metric, change, lo, hi)
            spec = ModelSpec(**{field: value})
            for size in POWER_SIZES:
                res = count(
                    lambda s=size, sp=spec: reruns(s, n, ModelSpec(), sp, seed=7000 * s),
                    n,
                    {"default": GateConfig()},
                    f"{metric} {change} {size}",
                )
                r = res["configs"]["default"]
                key = f"{metric} {change:+g} @ {size}"
                out[key] = {"field": field, "value": value, "true_change": true, **res}
                on = r["failed_on"].get(metric, 0)
                print(
                    f"  {metric:<9} true change {true:+.3f} ({field} {value:.3f}), {size:>5} "
                    f"items: fail {rate(r['fails'], n)}; on {metric} {rate(on, n)}"
                )
    return out


# ------------------------------------------------------------------------------ real runs


def _atlas() -> pd.DataFrame:
    return pd.read_csv(shared_dir() / "data" / "realruns" / "cacioli_atlas_mmlu" / "tidy.csv")


def real_pairs(folder: str) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    df = pd.read_csv(shared_dir() / "data" / "realruns" / folder / "tidy.csv")
    counts = df.groupby("model")["item_id"].nunique()
    models = sorted(counts[counts >= 0.95 * counts.max()].index)
    pairs = []
    for a, b in zip(models[0::2], models[1::2], strict=False):
        sa = df[df["model"] == a].set_index("item_id")
        sb = df[df["model"] == b].set_index("item_id")
        shared = sa.index.intersection(sb.index)
        pairs.append((sa.loc[shared].reset_index(), sb.loc[shared].reset_index()))
    return pairs


def exchanged(folder: str, n: int, seed: int = 0) -> Pairs:
    """Two real models' records, each item's pair randomly split into baseline and candidate."""
    rng = np.random.default_rng(seed)
    pairs = real_pairs(folder)
    for r in range(n):
        a, b = pairs[r % len(pairs)]
        swap = np.broadcast_to((rng.random(len(a)) < 0.5)[:, None], a.shape)
        base = a.where(~swap, b).assign(model="baseline")
        cand = b.where(~swap, a).assign(model="candidate")
        yield validate_records(base), validate_records(cand)


def run_exchanged(n: int) -> dict:
    out = {}
    configs = {"default": GateConfig(), "margin 0": GateConfig(margins=ZERO)}
    for folder in ("cacioli_atlas_mmlu", "cacioli_battery_binary"):
        res = count(lambda f=folder: exchanged(f, n), n, configs, folder)
        out[folder] = res
        r = res["configs"]["default"]
        print(f"\n{folder}, exchanged ({len(real_pairs(folder))} model pairs):")
        print(f"  default fail {rate(r['fails'], n)}")
        for m, (k, tot) in res["configs"]["margin 0"]["per_test_p_below_0.05"].items():
            print(f"    margin 0, {m:<12} p < 0.05: {rate(k, tot)}")
    return out


def run_tail(n_flips: int = 20_000, level: float = 0.01 / 4) -> dict:
    """The far tail of the normal test on exchanged atlas pairs: over ``n_flips`` random
    exchanges per pair, how often the one-sided test of the mean paired difference (Brier,
    accuracy) rejects at ``level``, Holm's first step of the atlas gate (alpha 0.01, 4 tests)."""
    rng = np.random.default_rng(1)
    out = {"level": level, "flips_per_pair": n_flips, "pairs": {}}
    print(f"\nthe normal test's tail on exchanged atlas pairs, one-sided level {level:g}:")
    for a, b in real_pairs("cacioli_atlas_mmlu"):
        ok = (a[["confidence", "correct"]].notna() & b[["confidence", "correct"]].notna()).all(
            axis=1
        )
        brier = (a["confidence"] - a["correct"]) ** 2 - (b["confidence"] - b["correct"]) ** 2
        acc = (a["correct"] - b["correct"]).fillna(0.0)
        rates = []
        for x in (brier[ok].to_numpy(), acc.to_numpy()):
            flipped = rng.choice([-1.0, 1.0], size=(n_flips, x.size)) * x
            m = flipped.mean(axis=1)
            z = m / np.sqrt((np.mean(flipped**2, axis=1) - m**2) / x.size)
            rates.append(float(np.mean(z > stats.norm.isf(level))))
        name = f"{a['model'].iloc[0]} / {b['model'].iloc[0]}"
        spread, se = auroc_spread(a, b, rng)
        out["pairs"][name] = {
            "brier": rates[0],
            "accuracy": rates[1],
            "auroc_exchange_sd": spread,
            "auroc_bootstrap_se": se,
        }
        print(
            f"  {name:<70} Brier {rates[0]:.4f}  accuracy {rates[1]:.4f}  AUROC change: sd over "
            f"exchanges {spread:.4f}, the gate's bootstrap se {se:.4f} (ratio {spread / se:.2f})"
        )
    return out


def auroc_spread(
    a: pd.DataFrame, b: pd.DataFrame, rng: np.random.Generator, n_flips: int = 1000
) -> tuple[float, float]:
    """The AUROC change's standard deviation over ``n_flips`` random exchanges of a pair's
    records, and the gate's bootstrap standard error of it (mean over 4 exchanges)."""
    from sklearn.metrics import roc_auc_score

    ca, cb = a["confidence"].to_numpy(float), b["confidence"].to_numpy(float)
    ya, yb = a["correct"].to_numpy(float), b["correct"].to_numpy(float)

    def auroc(c: np.ndarray, y: np.ndarray) -> float:
        ok = ~(np.isnan(c) | np.isnan(y))
        return float(roc_auc_score(y[ok], c[ok]))

    changes = []
    for _ in range(n_flips):
        s = rng.random(len(a)) < 0.5
        changes.append(
            auroc(np.where(s, ca, cb), np.where(s, ya, yb))
            - auroc(np.where(s, cb, ca), np.where(s, yb, ya))
        )
    config = GateConfig(margins=ZERO, metrics=("auroc",))
    ses = []
    for _ in range(4):
        swap = np.broadcast_to((rng.random(len(a)) < 0.5)[:, None], a.shape)
        base = validate_records(a.where(~swap, b).assign(model="baseline"))
        cand = validate_records(b.where(~swap, a).assign(model="candidate"))
        ses.append(gate_records(base, cand, config).tests[0].se)
    return float(np.std(changes)), float(np.mean(ses))


ATLAS_PAIRS = (
    ("anthropic/claude-sonnet-4-5@20250929", "anthropic/claude-sonnet-4-6@default"),
    ("anthropic/claude-opus-4-6@default", "anthropic/claude-opus-4-7@default"),
    ("google/gemma-3-27b", "google/gemma-4-31b"),
    ("google/gemma-4-31b", "google/gemma-3-27b"),
    ("openai/gpt-5.4-2026-03-05", "openai/gpt-5.4-mini-2026-03-17"),
    ("openai/gpt-5.4-2026-03-05", "openai/gpt-5.4-nano-2026-03-17"),
)


def run_atlas() -> dict:
    df = _atlas()
    model = {m: validate_records(g, source=m) for m, g in df.groupby("model")}
    out: dict = {"pairs": {}, "planted": {}}
    print("\natlas pairs, default settings:")
    for a, b in ATLAS_PAIRS:
        if a not in model or b not in model:
            continue
        v = gate_records(model[a], model[b])
        moved = {t.metric: round(t.change, 4) for t in v.tests}
        out["pairs"][f"{a} -> {b}"] = {
            "exit": v.exit_code,
            "failed": [t.metric for t in v.failed],
            "changes": moved,
        }
        print(f"  {a} -> {b}: exit {v.exit_code}, failed {[t.metric for t in v.failed]}")
    print("\nplanted AUROC drop of 0.062 in each 1,500-item run, default settings:")
    counts = df.groupby("model")["item_id"].nunique()
    for name in sorted(counts[counts == 1500].index):
        try:
            cand = validate_records(plant_auroc_drop(model[name], 0.062), source="planted")
        except ValueError as exc:
            print(f"  {name}: {exc}")
            continue
        v, old, primary = (
            gate_records(model[name], cand, config)
            for config in (GateConfig(), NULL_CONFIGS["old default"], GateConfig(primary="auroc"))
        )
        t = next(t for t in v.tests if t.metric == "auroc")
        was = next(t for t in old.tests if t.metric == "auroc")
        out["planted"][name] = {
            "exit": v.exit_code,
            "change": t.change,
            "se": t.se,
            "detectable": t.detectable,
            "verdict": t.verdict,
            "old_default_detectable": was.detectable,
            "primary_auroc_exit": primary.exit_code,
        }
        print(
            f"  {name:<42} AUROC {t.baseline:.3f} change {t.change:+.3f} se {t.se:.4f} "
            f"detectable {t.detectable:.3f} (old default {was.detectable:.3f}): {t.verdict} "
            f"(exit {v.exit_code}; primary: auroc exit {primary.exit_code})"
        )
    for key, what in (("exit", "default"), ("primary_auroc_exit", "primary: auroc")):
        fails = sum(r[key] == 1 for r in out["planted"].values())
        print(f"  {what}: failed {fails} of {len(out['planted'])}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reruns", type=int, default=300, help="replicates per cell (default 300)")
    ap.add_argument(
        "--only", choices=("null", "exchanged", "tail", "power", "atlas"), action="append"
    )
    ap.add_argument(
        "--level",
        action="append",
        default=[],
        metavar="METRIC=CHANGE",
        help="power only at these levels (e.g. auroc=-0.06; default: all)",
    )
    ap.add_argument("--out", help="write the counts as JSON")
    args = ap.parse_args()
    todo = args.only or ["null", "exchanged", "tail", "power", "atlas"]
    results: dict = {"settings": GateConfig().to_dict()}
    if "null" in todo:
        results["null"] = run_null(args.reruns)
    if "exchanged" in todo:
        results["exchanged"] = run_exchanged(args.reruns)
    if "tail" in todo:
        results["tail"] = run_tail()
    if "power" in todo:
        results["power"] = run_power(args.reruns, args.level)
    if "atlas" in todo:
        results["atlas"] = run_atlas()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
