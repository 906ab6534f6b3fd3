"""What the text analyses (inline solving, surface-feature probes) add to ``metacog analyze``.

For each population the script times, in one process and alternating, ``--repeats`` times:

* ``analyze``: :func:`~metacog_metrics.analyze.analyze_records` on the records without their
  texts (``question``, ``probe_text``, ``solve_text`` set to None): every other analysis,
  with the text sections reduced to their "absent" note (the baseline);
* ``with texts``: the same call on the records with their texts;

and prints the medians of wall-clock and CPU time (the process's, all threads; steadier than
the wall clock on a shared machine), the difference (what the texts add) and its ratio to the
baseline, with the split of the text sections into inline solving and the probes (one run each).

Populations: ``demo`` (the simulated population at the size ``metacog demo`` runs: 12 models,
the bundled packs once, pooled as the demo pools them) and ``large`` (``--models`` models x the
bundled packs repeated ``--replicate`` times; 20 x 14 is about 1,000 items and 20,000 records).
The analysis options are the CLI's defaults unless ``--permutations``/``--joint``/``--boot``
say otherwise; ``--cache`` keeps the simulated records (the large population takes minutes to
write).

Run from the repository root::

    python bench/bench_text_analyses.py --population demo large --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import pandas as pd


def _records(name: str, models: int, replicate: int, cache: Path | None) -> pd.DataFrame:
    from metacog_tasks.sim.responder import simulate_text_records

    n, k = (12, 1) if name == "demo" else (models, replicate)
    path = cache / f"text_records_{n}x{k}.parquet" if cache else None
    if path is not None and path.exists():
        return pd.read_parquet(path)
    records = simulate_text_records(n, replicate=k, seed=0)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        records.to_parquet(path)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--population", nargs="+", default=["demo", "large"],
                        choices=["demo", "large"])  # fmt: skip
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--replicate", type=int, default=14)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--permutations", type=int, default=None)
    parser.add_argument("--joint", type=int, default=None)
    parser.add_argument("--boot", type=int, default=None)
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="folder to keep the simulated records in between runs",
    )
    args = parser.parse_args()

    from metacog_metrics.analyze import AnalysisOptions, analyze_records
    from metacog_metrics.analyze import text as ta
    from metacog_metrics.analyze.orchestration import one_blas_thread

    overrides = {k: v for k, v in (("permutations", args.permutations),
                                   ("joint_permutations", args.joint),
                                   ("n_boot", args.boot)) if v is not None}  # fmt: skip
    base_opts = AnalysisOptions.build(None, progress=False, **overrides)
    print(f"options: permutations {base_opts.permutations}, joint "
          f"{base_opts.joint_permutations}, n_boot {base_opts.n_boot}")  # fmt: skip
    for name in args.population:
        t0 = time.perf_counter()
        records = _records(name, args.models, args.replicate, args.cache)
        # The demo analyses the benchmarks pooled as well (metacog demo); so does this.
        opts = AnalysisOptions.build(base_opts, pool=name == "demo")
        made = time.perf_counter() - t0
        bare = records.assign(question=None, probe_text=None, solve_text=None)
        n_items = records.groupby("benchmark")["item_id"].nunique().sum()
        print(f"\n{name}: {records['model'].nunique()} models x {n_items} items, "
              f"{len(records)} records (simulated in {made:.1f} s)")  # fmt: skip
        base, full = [], []
        result = None
        for _ in range(max(1, args.repeats)):
            base.append(_timed(analyze_records, bare, opts)[1:])
            result, *times = _timed(analyze_records, records, opts)
            full.append(times)
        for what, k in (("wall", 0), ("CPU", 1)):
            b = statistics.median(x[k] for x in base)
            f = statistics.median(x[k] for x in full)
            print(f"  {what:4s} analyze without texts {b:7.1f} s, with texts {f:7.1f} s: the "
                  f"texts add {f - b:6.1f} s ({(f - b) / b:+.0%}; median of "
                  f"{len(base)})")  # fmt: skip
        # The split, from one call of each section on the analysed groups.
        assert result is not None
        with one_blas_thread():
            _, *inline = _timed(ta._inline_section, result.records, result.groups, opts)
            _, *probes = _timed(ta._probe_section, result.records, result.groups, opts)
        print(f"  of which inline solving {inline[0]:.1f} s wall / {inline[1]:.1f} s CPU, "
              f"surface-feature probes {probes[0]:.1f} s wall / "
              f"{probes[1]:.1f} s CPU")  # fmt: skip


def _timed(fn: Any, *args: Any) -> tuple[Any, float, float]:
    """``fn(*args)``, its wall-clock and its CPU seconds (the process's, all threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


if __name__ == "__main__":
    main()
