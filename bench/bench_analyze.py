"""``metacog analyze`` end to end on the four inputs of its speed targets, with a stage breakdown.

For each input the script runs the CLI (``python -m metacog_tasks.cli analyze ...``, report
included) in a fresh interpreter ``--repeats`` times and prints the median wall seconds and the
median CPU seconds (all threads), then one more run with every stage timed (record reading and
validation, the items x models matrices, per-model calibration, tetrachoric + eigen + factor
model, factor alignment, pairwise calibration, the difficulty-stratified null, text analyses,
the report, and what is left: interpreter start, imports, writing the tables). Each figure is
printed against its target. With ``--baseline DIR`` (a checkout of another revision, e.g. made
with ``git worktree add /tmp/base main``) the same runs are made with that code, interleaved with
this one's, and the ratio is printed: on a shared machine only a ratio measured in the same run
means much.

The inputs (targets measured on 2 cores):

* ``atlas``: 33 models x 1,500 MMLU items, verbal numeric confidence
  (``../shared/data/realruns/cacioli_atlas_mmlu/tidy.csv``), defaults: < 10 s;
* ``mmlu500``: 16 models x 500 items, numeric confidence (``cacioli_mmlu500_verbalized``),
  defaults: < 5 s;
* ``synthetic``: 100 models x 50,000 items, binary, made here by the project's generator
  (``simulate_arrays``, preset ``paper``), ``--permutations 10000 --joint-permutations 200``:
  < 15 s;
* ``battery``: 20 models x 524 items, binary (``cacioli_battery_binary``), defaults: < 3 s.

    python bench/bench_analyze.py                       # all four, 3 repeats each
    python bench/bench_analyze.py --inputs battery,mmlu500 --repeats 5
    python bench/bench_analyze.py --baseline /tmp/base --repeats 3

The first run of a fresh checkout compiles the numba kernels (about ten seconds, cached
afterwards); a warm-up run before the timed ones takes that out of the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "realruns"

#: name: (records file or None for the synthetic one, extra CLI options, target seconds)
INPUTS: dict[str, tuple[str | None, list[str], float]] = {
    "atlas": ("cacioli_atlas_mmlu/tidy.csv", [], 10.0),
    "mmlu500": ("cacioli_mmlu500_verbalized/tidy.csv", [], 5.0),
    "synthetic": (None, ["--permutations", "10000", "--joint-permutations", "200"], 15.0),
    "battery": ("cacioli_battery_binary/tidy.csv", [], 3.0),
}

#: Stages timed in the breakdown: (label, module, attribute). Each stage function is wrapped in
#: the namespace of the module that calls it (its ``from ... import`` binds it there).
_GROUP = "metacog_metrics.analyze.group"
STAGES = [
    ("read and validate records", "metacog_metrics.pipeline", "read_records"),
    ("validate records again", "metacog_metrics.analyze.orchestration", "validate_records"),
    ("coverage table", _GROUP, "coverage_table"),
    ("items x models matrices", _GROUP, "item_matrices"),
    ("per-model calibration", _GROUP, "calibration_by_model"),
    ("tetrachoric, eigen, factor model", _GROUP, "_section"),
    ("factor alignment", _GROUP, "factor_alignment"),
    ("pairwise calibration", _GROUP, "pairwise_calibration"),
    ("private-signal test", _GROUP, "private_signal_test"),
    ("text analyses", "metacog_metrics.analyze.orchestration", "text_sections"),
    ("summary and tables", "metacog_metrics.analyze.summary", "group_summary"),
    ("summary and tables", "metacog_metrics.analyze.summary", "group_tables"),
    ("writing the files", "metacog_metrics.pipeline", "atomic_write"),
    ("writing the files", "metacog_metrics.pipeline", "atomic_write_text"),
    ("report.html", "metacog_metrics.report", "write_report"),
]


def synthetic_records(path: Path, n_models: int = 100, n_items: int = 50_000) -> Path:
    """Binary confidence and correctness of ``n_models`` x ``n_items`` from the generator."""
    import numpy as np
    import pandas as pd

    from metacog_metrics.simulate import get_preset, simulate_arrays

    sim = simulate_arrays(get_preset("paper"), n_models, n_items, 1, rng=0)
    conf, perf = sim.conf[0], sim.perf[0]  # (items, models)
    models = np.array([f"m{j:03d}" for j in range(n_models)])
    items = np.array([f"q{i:05d}" for i in range(n_items)])
    frame = pd.DataFrame(
        {
            "model": np.tile(models, n_items),
            "item_id": np.repeat(items, n_models),
            "confidence": conf.ravel().astype(float),
            "correct": perf.ravel().astype(float),
        }
    )
    frame.to_parquet(path, index=False)
    return path


def _child_stages(argv: list[str]) -> None:
    """Run the CLI with every stage wrapped in a timer; print the times as JSON (last line)."""
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    import importlib

    times: dict[str, list[float]] = {}

    def wrap(label: str, fn):  # type: ignore[no-untyped-def]
        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            w, c = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                end = time.perf_counter()
                t = times.setdefault(label, [0.0, 0.0, []])
                t[0] += end - w
                t[1] += time.process_time() - c
                t[2].append((w - start_wall, end - start_wall))

        return timed

    from metacog_tasks import cli

    for label, module, name in STAGES:
        mod = importlib.import_module(module)
        setattr(mod, name, wrap(label, getattr(mod, name)))
    cli.main(argv)
    total = [time.perf_counter() - start_wall, time.process_time() - start_cpu]
    print(json.dumps({"stages": times, "in_process": total}))


def _covered(spans: list[tuple[float, float]]) -> float:
    """Length of the union of the time intervals ``spans``."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def _run(src: Path, argv: list[str], stages: bool = False) -> tuple[float, float, dict]:
    """One CLI run in a fresh interpreter with ``src`` first on the path: wall, CPU, stages."""
    env = dict(os.environ, PYTHONPATH=str(src), TOKENIZERS_PARALLELISM="false")
    if stages:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child-stages", "--", *argv]
    else:
        cmd = [sys.executable, "-m", "metacog_tasks.cli", *argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=src, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    detail = json.loads(out.stdout.strip().splitlines()[-1]) if stages else {}
    return wall, cpu, detail


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", default=",".join(INPUTS), help="comma-separated subset")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per input")
    parser.add_argument("--baseline", type=Path, help="checkout of the revision to compare")
    parser.add_argument("--baseline-repeats", type=int, help="timed baseline runs (default: "
                        "--repeats)")  # fmt: skip
    parser.add_argument("--no-stages", action="store_true", help="skip the stage breakdown")
    parser.add_argument("--child-stages", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_stages:
        _child_stages(args.rest)
        return
    names = [n.strip() for n in args.inputs.split(",") if n.strip()]
    unknown = set(names) - set(INPUTS)
    if unknown:
        parser.error(f"unknown input(s) {sorted(unknown)}; known: {list(INPUTS)}")
    base_repeats = args.repeats if args.baseline_repeats is None else args.baseline_repeats
    print(f"{os.cpu_count()} CPU(s); load average {_load()} at the start; median of "
          f"{args.repeats} runs (baseline: {base_repeats}) in fresh interpreters, report "
          "included")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        rows = []
        baseline_warm = False
        for name in names:
            rel, extra, target = INPUTS[name]
            if rel is None:
                records = synthetic_records(tmp_path / "synthetic.parquet")
            else:
                records = SHARED / rel
                if not records.exists():
                    print(f"{name}: {records} not found; skipped")
                    continue
            argv = ["analyze", str(records), "--out", str(tmp_path / f"out_{name}"), "--quiet",
                    *extra]  # fmt: skip
            _run(ROOT, argv)  # warm-up: numba's cache, the OS file cache
            if args.baseline is not None and base_repeats and not baseline_warm:
                _run(args.baseline, ["analyze", str(SHARED / INPUTS["battery"][0]), "--out",
                                     str(tmp_path / "warm"), "--quiet", "--permutations", "10",
                                     "--joint-permutations", "10"])  # fmt: skip
                baseline_warm = True  # its numba cache is written once
            mine, base = [], []
            for r in range(max(args.repeats, base_repeats if args.baseline else 0)):
                if r < args.repeats:
                    mine.append(_run(ROOT, argv)[:2])
                if args.baseline is not None and r < base_repeats:
                    base.append(_run(args.baseline, argv)[:2])
            wall = statistics.median(w for w, _ in mine)
            cpu = statistics.median(c for _, c in mine)
            line = (f"{name:>9}: {wall:6.2f}s wall, {cpu:6.2f}s CPU; target < {target:g}s: "
                    f"{'met' if wall < target else 'NOT met'}")  # fmt: skip
            if base:
                b_wall = statistics.median(w for w, _ in base)
                b_cpu = statistics.median(c for _, c in base)
                line += (f" | baseline {b_wall:7.2f}s wall, {b_cpu:7.2f}s CPU: "
                         f"{b_wall / wall:5.1f}x wall, {b_cpu / cpu:5.1f}x CPU")  # fmt: skip
            print(line, flush=True)
            rows.append((name, wall, cpu, target))
            if not args.no_stages:
                _, _, detail = _run(ROOT, argv, stages=True)
                stages = detail["stages"]
                in_wall = detail["in_process"][0]
                spans = [span for v in stages.values() for span in v[2]]
                for label in dict.fromkeys(label for label, _, _ in STAGES):
                    if label in stages:
                        w, c, at = stages[label]
                        print(f"{'':>11}{label:<34} {w:6.2f}s wall {c:6.2f}s CPU   "
                              f"{at[0][0]:6.2f}-{at[-1][1]:.2f}s")  # fmt: skip
                print(
                    f"{'':>11}{'imports, writing, the rest':<34} "
                    f"{in_wall - _covered(spans):6.2f}s wall{'':>13}"
                    f"(time outside every stage; interpreter start not included)"
                )
                print(f"{'':>11}CPU is the process's (all threads) while a stage ran, so stages "
                      f"that overlap share it (the per-model calibration runs on\n{'':>11}its own "
                      f"thread beside the stages up to the private-signal test); the last "
                      f"column is each stage's first start and last end.")  # fmt: skip

    print(f"load average {_load()} at the end")


if __name__ == "__main__":
    main()
