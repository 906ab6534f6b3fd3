"""``metacog demo``: the whole pipeline, offline, on the embedded default.

A simulated population (:mod:`metacog_metrics.simulate`) answers the probe tasks of the six
benchmarks on the bundled packs through the real harness (lm-eval's ``simple_evaluate`` with the
``metacog-sim`` model, or Inspect's ``eval_set`` with the ``metacog-sim`` provider); the logs are
collected into the record table, analysed, and written up as ``report.html``.

The packs hold 8-20 items per benchmark, too few for stable per-benchmark statistics, so the
demo also analyses the benchmarks pooled (``analyze_records(..., pool=True)``) and takes its
headline findings from that group. A benchmark whose pack has fewer items than an analysis needs
(SciCode's 8) is left out unless ``benchmarks`` names it. The numbers describe the simulated
population, whose truth is known (``preset``), not any real model.

Each harness writes its own folder, ``OUT/lm-eval`` or ``OUT/inspect``, an
:class:`~metacog_metrics.outdir.OutputFolder`: a rerun replaces only the demo's own earlier
outputs, and a folder holding files the demo did not write is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from metacog_metrics import Result

__all__ = ["DemoResult", "run_demo"]

#: Where the demo writes by default (relative to the working directory).
DEFAULT_OUT = "metacog-demo"


#: The demo's own files in its folder (beside the logs and the analysis outputs).
_RECORDS, _MODELS, _REPORT = "records.parquet", "models.yaml", "report.html"


@dataclasses.dataclass(frozen=True)
class DemoResult(Result):
    """What :func:`run_demo` produced.

    Attributes:
        out_dir: Output folder.
        harness: ``lm-eval`` or ``inspect``.
        models: Simulated model names.
        preset: Generative-model preset.
        logs_dir: Harness logs.
        records_path: The collected record table.
        summary_path: ``summary.json`` of the analysis.
        report_path: ``report.html``.
        n_records: Rows of the record table.
        n_bad: Log lines or samples the collector could not read.
        findings: The findings as the report lists them (the pooled group first).
        caveats: Their caveats, the simulated population and its planted truth first.
        seconds: Wall time per stage.
        left_out: Benchmarks left out, with the reason.
    """

    out_dir: str
    harness: str
    models: tuple[str, ...]
    preset: str
    logs_dir: str
    records_path: str
    summary_path: str
    report_path: str
    n_records: int
    n_bad: int
    findings: tuple[str, ...]
    seconds: dict[str, float]
    left_out: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()

    def summary_text(self) -> str:
        """What ``metacog demo`` prints at the end."""
        total = sum(self.seconds.values())
        lines = [
            f"metacog demo: {len(self.models)} simulated models (preset {self.preset!r}) through "
            f"{self.harness}, {self.n_records} records, {total:.0f} s",
            f"  report:  {self.report_path}",
            f"  summary: {self.summary_path}",
            f"  records: {self.records_path}",
            f"  logs:    {self.logs_dir}",
            "Findings (the report's list, the pooled group first):",
        ]
        lines += [f"  {i}. {f}" for i, f in enumerate(self.findings, 1)]
        if self.caveats:
            lines += ["Caveats:"] + [f"  - {c}" for c in self.caveats]
        return "\n".join(lines)


def planted_truth(preset: str) -> str:
    """What the demo's report says first: the models are simulated, and what truth was planted
    (from the preset's parameters)."""
    from metacog_metrics import get_preset

    p = get_preset(preset)
    signal = (
        "no private signal: each model's confidence reads only the shared, partly mistaken "
        "difficulty of the item through its own threshold (individuated weight 0), so a test "
        "that finds private signal here is wrong"
        if p.individuated == 0
        else f"a private signal: each model's confidence weighs its own residual "
        f"(individuated weight {p.individuated:g})"
    )
    inline = (
        f"; reasoning models solve math items inside the probe at rate {p.inline_rate:g}, so "
        "their confidence follows their own correctness there"
        if p.inline_rate > 0
        else ""
    )
    return (
        f"These models are simulated (metacog demo, preset {preset!r}); nothing here describes "
        f"a real model. The truth planted in them: {signal}{inline}."
    )


@contextlib.contextmanager
def quiet_harness(log_path: Path) -> Iterator[None]:
    """Send the harness's own stdout/stderr (progress bars, git probes) to ``log_path``.

    Works at the file-descriptor level, so output of child processes goes there too.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _run_lmeval_population(
    names: Sequence[str],
    benchmarks: Sequence[str],
    *,
    preset: str,
    seed: int,
    logs_dir: Path,
    limit: int | None,
    say: Callable[[str], None],
) -> None:
    from metacog_tasks.lmeval.runner import run_lmeval

    tasks = [f"metacog_{b}" for b in benchmarks]
    metadata = {"metacog_data": "bundled", "metacog_confidence": "verbal"}
    for i, name in enumerate(names, 1):
        t0 = time.perf_counter()
        model = {"model": "metacog-sim", "model_args": f"model={name},preset={preset},seed={seed}"}
        with quiet_harness(logs_dir / "harness.log"):
            run_lmeval(
                [model],
                tasks,
                output_path=logs_dir,
                metadata=metadata,
                limit=limit,
                bootstrap_iters=0,
                verbosity="ERROR",
            )
        say(f"  [{i}/{len(names)}] {name}: {len(tasks)} tasks in {time.perf_counter() - t0:.1f} s")


def _run_inspect_population(
    names: Sequence[str],
    benchmarks: Sequence[str],
    *,
    preset: str,
    seed: int,
    logs_dir: Path,
    limit: int | None,
    say: Callable[[str], None],
) -> None:
    from inspect_ai import eval_set

    import metacog_tasks._registry  # noqa: F401  (registers the tasks and the provider)

    tasks = [f"metacog_tasks/{b}" for b in benchmarks]
    t0 = time.perf_counter()
    with quiet_harness(logs_dir / "harness.log"):
        ok, logs = eval_set(
            tasks,
            log_dir=str(logs_dir),
            model=[f"metacog-sim/{n}" for n in names],
            model_args={"preset": preset, "seed": seed, "data": "bundled"},
            task_args={"data": "bundled"},
            limit=limit,
            display="none",
            log_level="error",
            max_tasks=4,
        )
    if not ok:
        failed = [log.location for log in logs if log.status != "success"]
        raise RuntimeError(f"inspect eval-set did not complete: {failed}; see {logs_dir}")
    say(f"  {len(names)} models x {len(tasks)} tasks in {time.perf_counter() - t0:.1f} s")


def _write_models_file(out_dir: Path, names: Sequence[str], *, preset: str, seed: int,
                       records: Any) -> Path:  # fmt: skip
    """The simulated models' known reasoning flags, under the names the harness logged, as a
    models file for ``metacog analyze`` (the pair-type and inline-solving breakdowns need them)."""
    from metacog_metrics import Population, get_preset

    flags = Population(get_preset(preset), len(names), seed).reasoning(names)
    lines = ["models:"]
    for logged in sorted(set(records.records["model"].astype(str))):
        short = logged.rsplit("/", 1)[-1]
        if short in flags:
            lines.append(f'  "{logged}": {{reasoning: {str(flags[short]).lower()}}}')
    path = out_dir / _MODELS
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _analysable(
    benchmarks: Sequence[str] | None, say: Callable[[str], None]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(benchmarks to run, notes on those left out): by default every registered benchmark
    whose bundled pack has enough items for an analysis of its own; named ones always run."""
    from metacog_metrics import MIN_ITEMS
    from metacog_tasks.benchmarks import BENCHMARK_NAMES, get_benchmark

    if benchmarks:
        chosen = tuple(benchmarks)
        unknown = sorted(set(chosen) - set(BENCHMARK_NAMES))
        if unknown:
            raise ValueError(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARK_NAMES)}")
        return chosen, ()
    keep, notes = [], []
    for name in BENCHMARK_NAMES:
        n = len(get_benchmark(name).load("bundled"))
        if n < MIN_ITEMS:
            notes.append(
                f"{name}: its bundled pack has {n} items, fewer than the {MIN_ITEMS} an "
                f"analysis needs; left out (--benchmarks naming it runs it anyway)"
            )
            say(f"  {notes[-1]}")
        else:
            keep.append(name)
    return tuple(keep), tuple(notes)


def run_demo(
    out: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    models: int = 12,
    preset: str = "paper",
    harness: str = "lm-eval",
    items_per_benchmark: int | None = None,
    benchmarks: Sequence[str] | None = None,
    seed: int = 0,
    permutations: int = 10_000,
    joint_permutations: int = 1_000,
    verbose: bool = True,
    overwrite: bool = False,
) -> DemoResult:
    """Run the probe tasks for a simulated population, collect, analyse and report.

    Args:
        out: Output folder; the demo writes ``OUT/<harness>/``: ``logs/``,
            ``records.parquet``, ``models.yaml``, ``summary.json``, ``tables/``,
            ``report.html``.
        models: Population size (``m01`` .. ``mNN``).
        preset: Generative-model preset (``paper``, ``individuated``, ...).
        harness: ``lm-eval`` or ``inspect``.
        items_per_benchmark: Keep the first N items of each pack (``--limit``); all by default.
        benchmarks: Benchmarks to run (default: every one whose bundled pack has enough items
            for an analysis of its own).
        seed: Population and analysis seed.
        permutations: Per-pair permutation draws of the analysis.
        joint_permutations: Joint draws for the mean tau of the analysis.
        verbose: Print progress lines.
        overwrite: Write into a folder the demo did not write, replacing files of its output
            names (never removing others).

    Returns:
        The :class:`DemoResult`.

    Raises:
        ValueError: Bad harness, size, preset or benchmark name.
        OutputFolderError: The harness folder holds files the demo did not write.
    """
    from metacog_metrics import OutputFolder, OutputFolderError, get_preset, model_names

    if harness not in ("lm-eval", "inspect"):
        raise ValueError(f"harness must be 'lm-eval' or 'inspect', not {harness!r}")
    if models < 3:
        raise ValueError(f"the analysis needs at least 3 models, got {models}")
    if items_per_benchmark is not None and items_per_benchmark < 1:
        raise ValueError(f"items_per_benchmark must be >= 1, got {items_per_benchmark}")
    get_preset(preset)  # fail early on an unknown preset

    say: Callable[[str], None] = print if verbose else (lambda _msg: None)
    out_dir = Path(out).resolve() / harness
    folder = OutputFolder(out_dir, "demo", overwrite=overwrite)
    benchmarks, left_out = _analysable(benchmarks, say)
    logs_dir = out_dir / "logs"
    # A rerun replaces the demo's own earlier outputs (its logs among them), never anything else.
    own = [_RECORDS, _MODELS, _REPORT]
    folder.claim(own)  # refused here if they are not the demo's
    folder.commit([])
    folder.claim(own)
    if logs_dir.exists() and any(p.is_file() for p in logs_dir.rglob("*")):
        raise OutputFolderError(
            f"{logs_dir} holds files the demo did not write (they would be collected with its "
            "logs); move them or name another --out"
        )
    logs_dir.mkdir(parents=True, exist_ok=True)
    names = model_names(models)
    seconds: dict[str, float] = {}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

    say(
        f"metacog demo: {models} simulated models ({preset}) x {len(benchmarks)} benchmarks "
        f"(bundled packs) through {harness}; harness output in {logs_dir / 'harness.log'}"
    )
    t0 = time.perf_counter()
    runner = _run_lmeval_population if harness == "lm-eval" else _run_inspect_population
    try:
        runner(
            names,
            benchmarks,
            preset=preset,
            seed=seed,
            logs_dir=logs_dir,
            limit=items_per_benchmark,
            say=say,
        )
    finally:  # the folder held no file before: all there now are the harness's (even on Ctrl-C)
        logs = sorted(p for p in logs_dir.rglob("*") if p.is_file())
        folder.adopt(logs)
    seconds["harness"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    from metacog_metrics import write_records
    from metacog_tasks.collect import collect

    collected = collect([logs_dir])
    if collected.records.empty:
        raise RuntimeError(f"no records could be read from {logs_dir}:\n{collected.report_text()}")
    records_path = out_dir / _RECORDS
    write_records(collected.records, records_path)
    seconds["collect"] = time.perf_counter() - t0
    say(f"collected {collected.n_records} records ({collected.n_bad} bad lines) -> {records_path}")

    t0 = time.perf_counter()
    from metacog_metrics import analyze_files, write_report

    say("analysing (tetrachoric factors, pairwise calibration with permutation nulls) ...")
    models_path = _write_models_file(out_dir, names, preset=preset, seed=seed, records=collected)
    result = analyze_files(
        [records_path],
        out_dir=out_dir,
        models_file=models_path,
        permutations=permutations,
        joint_permutations=joint_permutations,
        seed=seed,
        progress=verbose,
        pool=True,
        overwrite=overwrite,
        report=False,  # the demo's own: the planted truth among its caveats
    )
    result = result.with_notice(planted_truth(preset))
    report_path = write_report(result, out_dir)
    folder.commit([*logs, records_path, models_path, report_path])
    seconds["analysis"] = time.perf_counter() - t0
    findings = result.findings.lines()
    return DemoResult(
        out_dir=str(out_dir),
        harness=harness,
        models=tuple(names),
        preset=preset,
        logs_dir=str(logs_dir),
        records_path=str(records_path),
        summary_path=str(out_dir / "summary.json"),
        report_path=str(out_dir / "report.html"),
        n_records=collected.n_records,
        n_bad=collected.n_bad,
        findings=tuple(findings),
        seconds=seconds,
        left_out=left_out,
        caveats=tuple(result.findings.caveats),
    )
