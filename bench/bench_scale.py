"""``metacog analyze`` at leaderboard scale: time per stage and peak memory, 50 to 1,000 models.

For each number of models (default 50, 100, 300 and 1,000) the project's generator makes that
many models x 12,000 binary items (``simulate_arrays``, preset ``paper``, as
``bench_analyze.py``'s synthetic input; Parquet, or CSV with ``--format csv``), and the CLI
analyses it end to end with its defaults (report included) in a fresh interpreter. Printed per
size: wall and CPU seconds (CPU: every thread of the analysis process, and with a cluster its
workers too), the peak resident memory of the analysis process (its ``ru_maxrss``, exact) and
the wall and CPU seconds of every stage (``bench_analyze.py``'s breakdown: records = reading,
validation, coverage and the items x models matrices; the per-model calibration runs on its own
thread beside the stages up to the private-signal test, so stage times overlap; rest = imports,
interpreter start and everything outside the stages).

``--workers N`` runs the same analyses again with ``--scheduler`` pointing at a Dask
``LocalCluster`` of N single-threaded worker processes started here: the per-pair tests and the
joint draws run on the workers (the other stages stay in the analysis process), and the peak
memory adds the workers' resident memory (sampled every quarter second, so a shorter peak can be
missed). On one machine a cluster only shows what the distribution costs (sending the inputs to
every worker, a process per worker); it cannot be faster than the thread pool of the same cores.
``--baseline DIR`` (a checkout of another revision) repeats the local runs with that code,
interleaved with this one's, and prints the ratios: on a shared machine only ratios measured in
the same run mean much.

``--records-only`` times the records stage alone, in a fresh interpreter per run: reading the
file (Parquet or CSV), validating it and building the items x models matrices, with the peak
resident memory of that process. It measures the 12-million-row input where the whole analysis
would take too long to repeat.

    python bench/bench_scale.py                                  # 50, 100, 300, 1,000 models
    python bench/bench_scale.py --models 50,300 --workers 2 --baseline /tmp/base
    python bench/bench_scale.py --models 1000 --format csv --timeout 1800
    python bench/bench_scale.py --models 300,1000 --records-only --repeats 3 --baseline /tmp/base

Targets (issue 31, two cores, defaults): 300 models < 60 s, 1,000 models < 10 min.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_analyze import STAGES, _covered, synthetic_records  # noqa: E402

#: Wall-clock targets in seconds by number of models (defaults, two cores).
TARGETS = {300: 60.0, 1000: 600.0}
#: Columns of the stage table: (heading, bench_analyze stage labels).
COLUMNS: list[tuple[str, tuple[str, ...]]] = [
    ("records", ("read and validate records", "validate records again", "coverage table",
                 "items x models matrices")),
    ("calibration", ("per-model calibration",)),
    ("correlations", ("tetrachoric, eigen, factor model",)),
    ("alignment", ("factor alignment",)),
    ("private signal", ("private-signal test",)),
    ("pairwise", ("pairwise calibration",)),
    ("report", ("report.html",)),
    ("tables, files", ("summary and tables", "text analyses", "writing the files")),
]  # fmt: skip
assert {label for _, labels in COLUMNS for label in labels} == {s[0] for s in STAGES}


@dataclasses.dataclass
class Run:
    """One CLI run: seconds, peak bytes, and per stage (wall, CPU) seconds."""

    wall: float
    cpu: float
    peak: int  # analysis process, exact
    peak_cluster: int | None  # analysis process + workers, sampled
    stages: dict[str, tuple[float, float]]
    timed_out: bool = False


def _tree_rss(pids: list[int]) -> int:
    import psutil

    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            total += psutil.Process(pid).memory_info().rss
    return total


def _tree_cpu(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
    return total


def _run(src: Path, argv: list[str], workers: list[int], timeout: float | None) -> Run:
    """The CLI with every stage timed (``bench_analyze.py --child-stages``), ``src`` first on
    the path; ``workers``: the pids of a cluster's worker processes (sampled)."""
    env = dict(os.environ, PYTHONPATH=str(src), TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, str(BENCH / "bench_analyze.py"), "--child-stages", "--", *argv]
    cpu_workers = _tree_cpu(workers)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=src, stdout=out, stderr=err)
        peak_cluster = 0
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if workers:
                peak_cluster = max(peak_cluster, _tree_rss([proc.pid, *workers]))
            if timeout is not None and time.perf_counter() - start > timeout:
                proc.kill()
                timed_out = True
            time.sleep(0.25)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu = usage.ru_utime + usage.ru_stime + (_tree_cpu(workers) - cpu_workers)
        if timed_out:
            return Run(wall, cpu, usage.ru_maxrss * 1024, peak_cluster or None, {}, True)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{shlex.join(cmd)} failed:\n{err.read().decode()[-3000:]}")
        out.seek(0)
        detail = json.loads(out.read().decode().strip().splitlines()[-1])
    stages: dict[str, tuple[float, float]] = {}
    spans = []
    for heading, labels in COLUMNS:
        parts = [detail["stages"][label] for label in labels if label in detail["stages"]]
        spans += [span for part in parts for span in part[2]]
        stages[heading] = (sum(p[0] for p in parts), sum(p[1] for p in parts))
    stages["rest"] = (wall - _covered(spans), float("nan"))
    return Run(wall, cpu, usage.ru_maxrss * 1024, peak_cluster or None, stages)


#: The records stage alone (``--records-only``), run in a fresh interpreter.
_RECORDS_CHILD = """
import json, sys, time
from metacog_metrics.records import item_matrices, read_records
start = time.perf_counter()
records = read_records([sys.argv[1]])
read = time.perf_counter()
item_matrices(records, missing="keep")
print(json.dumps({"read": read - start, "matrices": time.perf_counter() - read}))
"""


@dataclasses.dataclass
class RecordsRun:
    """The records stage of one file: seconds reading and validating, building the matrices,
    and the peak resident bytes of the process (interpreter and imports included)."""

    read: float
    matrices: float
    peak: int


def _records_run(src: Path, path: Path) -> RecordsRun:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-c", _RECORDS_CHILD, str(path)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, cwd=src, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak memory
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"records stage of {src} failed:\n{err.read().decode()[-3000:]}")
        out.seek(0)
        times = json.loads(out.read().decode().strip().splitlines()[-1])
    return RecordsRun(times["read"], times["matrices"], usage.ru_maxrss * 1024)


def _records_only(args: argparse.Namespace, sizes: list[int], folder: Path) -> None:
    """Print the records stage's seconds and peak memory per size (medians of the repeats)."""
    print(f"\nRecords stage ({args.format}): read + validate, items x models matrices; "
          f"median of {args.repeats} run(s), peak RSS of the process")  # fmt: skip
    head = f"{'models':>6} {'rows':>11} {'read s':>7} {'matrix s':>8} {'peak GiB':>8}"
    if args.baseline is not None:
        head += f" {'before: read s':>14} {'matrix s':>8} {'peak GiB':>8}"
    print(head, flush=True)
    for m in sizes:
        path = _records(folder, m, args.items, args.format)
        mine, base = [], []
        for _ in range(args.repeats):  # interleaved: the machine's load falls on both alike
            mine.append(_records_run(ROOT, path))
            if args.baseline is not None:
                base.append(_records_run(args.baseline, path))
        line = f"{m:>6} {m * args.items:>11,} " + _records_cells(mine, (7, 8, 8))
        if base:
            line += " " + _records_cells(base, (14, 8, 8))
        print(line, flush=True)


def _records_cells(runs: list[RecordsRun], widths: tuple[int, int, int]) -> str:
    read = statistics.median(r.read for r in runs)
    matrices = statistics.median(r.matrices for r in runs)
    peak = int(statistics.median(r.peak for r in runs))
    return f"{read:>{widths[0]}.2f} {matrices:>{widths[1]}.2f} {_gib(peak):>{widths[2]}}"


def _median(runs: list[Run]) -> Run:
    """The run of median wall time (its stages and memory kept together)."""
    ordered = sorted(runs, key=lambda r: r.wall)
    return ordered[(len(ordered) - 1) // 2]


def _records(folder: Path, n_models: int, n_items: int, fmt: str) -> Path:
    path = folder / f"scale_{n_models}x{n_items}.{fmt}"
    if not path.exists():
        parquet = synthetic_records(folder / f"scale_{n_models}x{n_items}.parquet", n_models,
                                    n_items)  # fmt: skip
        if fmt == "csv":
            import pandas as pd

            pd.read_parquet(parquet).to_csv(path, index=False)
    return path


def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.2f}"


def _print_table(title: str, rows: list[tuple[int, int, Run, Run | None]]) -> None:
    print(f"\n{title}")
    head = (f"{'models':>6} {'pairs':>8} {'wall s':>8} {'CPU s':>8} {'peak GiB':>8}"
            f"{' +workers':>9} {'target':>8}")  # fmt: skip
    if any(base for *_, base in rows):
        head += f" {'before s':>9} {'x wall':>6} {'x CPU':>6} {'GiB':>5}"
    print(head)
    for m, n_items, run, base in rows:
        target = TARGETS.get(m) if n_items == 12_000 else None
        verdict = "-" if target is None else ("met" if run.wall < target else "NOT met")
        wall = f">{run.wall:.0f}" if run.timed_out else f"{run.wall:.1f}"
        line = (f"{m:>6} {m * (m - 1) // 2:>8} {wall:>8} {run.cpu:>8.1f} {_gib(run.peak):>8}"
                f"{_gib(run.peak_cluster):>9} {verdict:>8}")  # fmt: skip
        if base is not None:
            line += (f" {base.wall:>9.1f} {base.wall / run.wall:>6.2f} {base.cpu / run.cpu:>6.2f}"
                     f" {_gib(base.peak):>5}")  # fmt: skip
        print(line)
    print(f"\n{title}: seconds by stage, wall (CPU)")
    print(f"{'models':>6} " + " ".join(f"{h:>15}" for h, _ in COLUMNS) + f" {'rest':>7}")
    for m, _, run, _ in rows:
        if run.timed_out:
            print(f"{m:>6} timed out")
            continue
        cells = [f"{w:6.1f} ({c:6.1f})" for h, _ in COLUMNS for w, c in [run.stages[h]]]
        print(f"{m:>6} " + " ".join(f"{c:>15}" for c in cells) + f" {run.stages['rest'][0]:7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="50,100,300,1000", help="comma-separated sizes")
    parser.add_argument("--items", type=int, default=12_000)
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per size (median)")
    parser.add_argument("--workers", type=int, default=0, help="also on a LocalCluster of N "
                        "workers (0: not)")  # fmt: skip
    parser.add_argument("--baseline", type=Path, help="checkout of the revision to compare")
    parser.add_argument("--timeout", type=float, help="seconds after which a run is stopped")
    parser.add_argument("--data", type=Path, help="folder for the generated records (kept)")
    parser.add_argument("--cli-args", default="", help="more options for metacog analyze")
    parser.add_argument("--records-only", action="store_true", help="time the records stage "
                        "alone (read, validate, matrices) and its peak memory")  # fmt: skip
    args = parser.parse_args()
    sizes = [int(v) for v in args.models.split(",") if v.strip()]
    extra = shlex.split(args.cli_args)
    if args.records_only:
        print(f"{os.cpu_count()} CPU(s); load average {os.getloadavg()[0]:.1f} at the start; "
              f"{args.items:,} binary items")  # fmt: skip
        with contextlib.ExitStack() as stack:
            folder = args.data or Path(stack.enter_context(tempfile.TemporaryDirectory()))
            folder.mkdir(parents=True, exist_ok=True)
            _records_only(args, sizes, folder)
        print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
        return
    print(f"{os.cpu_count()} CPU(s); load average {os.getloadavg()[0]:.1f} at the start; "
          f"{args.items:,} binary items, {args.format}; median of {args.repeats} run(s) in fresh "
          "interpreters, report included")  # fmt: skip
    with contextlib.ExitStack() as stack:
        folder = args.data or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder.mkdir(parents=True, exist_ok=True)
        out = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        warm = _records(folder, 20, 500, args.format)
        warm_argv = ["analyze", str(warm), "--out", str(out / "warm"), "--quiet",
                     "--permutations", "50", "--joint-permutations", "20"]  # fmt: skip
        _run(ROOT, warm_argv, [], None)  # numba's cache, the OS file cache
        if args.baseline is not None:
            _run(args.baseline, warm_argv, [], None)
        cluster = workers = None
        if args.workers:
            from distributed import LocalCluster

            cluster = stack.enter_context(LocalCluster(
                n_workers=args.workers, threads_per_worker=1, processes=True,
                dashboard_address=":0",
            ))  # fmt: skip
            import psutil

            workers = [p.pid for p in psutil.Process().children(recursive=True)]
            _run(ROOT, [*warm_argv, "--scheduler", cluster.scheduler_address], workers, None)
        local_rows, base_rows, cluster_rows = [], [], []
        for m in sizes:
            records = _records(folder, m, args.items, args.format)
            argv = ["analyze", str(records), "--out", str(out / f"m{m}"), "--quiet", *extra]
            mine, base, dist = [], [], []
            for _ in range(args.repeats):
                mine.append(_run(ROOT, argv, [], args.timeout))
                if args.baseline is not None:
                    base.append(_run(args.baseline, argv, [], args.timeout))
                if cluster is not None:
                    dist.append(_run(ROOT, [*argv, "--scheduler", cluster.scheduler_address],
                                     workers or [], args.timeout))  # fmt: skip
            run = _median(mine)
            local_rows.append((m, args.items, run, _median(base) if base else None))
            msg = (
                f"{m} models: {run.wall:.1f} s wall, {run.cpu:.1f} s CPU, peak {_gib(run.peak)} GiB"
            )
            if base:
                base_rows.append((m, args.items, _median(base), None))
                msg += f" (baseline {statistics.median(r.wall for r in base):.1f} s)"
            if dist:
                cluster_rows.append((m, args.items, _median(dist), None))
                msg += f"; {args.workers} Dask workers {_median(dist).wall:.1f} s"
            print(msg, flush=True)
        _print_table("Local (threads)", local_rows)
        if base_rows:
            _print_table(f"Baseline {args.baseline} (threads)", base_rows)
        if cluster_rows:
            _print_table(f"Dask LocalCluster, {args.workers} worker process(es)", cluster_rows)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
