"""The ``metacog`` command line.

Subcommands import their implementation lazily, so ``metacog analyze`` never loads a harness.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["build_parser", "main"]


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _float_list(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _names(text: str) -> list[str]:
    return [b for b in text.split(",") if b]


#: Options several subcommands share: flags and ``add_argument`` keywords. Each subcommand adds
#: its own default and help; ``dest`` is the keyword of the function the subcommand calls.
_OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "out": (("--out", "-o"), {"metavar": "OUT"}),
    "seed": (("--seed",), {"type": int, "default": 0}),
    "quiet": (("--quiet", "-q"), {"action": "store_false", "dest": "progress"}),
    "permutations": (("--permutations",), {"type": int}),
    "joint_permutations": (("--joint-permutations",), {"type": int}),
    "preset": (("--preset",), {"default": "paper"}),
    "benchmarks": (("--benchmarks",), {"type": _names}),
}


def _option(p: argparse.ArgumentParser, name: str, **kwargs: Any) -> None:
    """Add the shared option ``name`` (:data:`_OPTIONS`) with this subcommand's keywords."""
    flags, shared = _OPTIONS[name]
    p.add_argument(*flags, **{**shared, **kwargs})


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed options as keywords of the subcommand's function."""
    return {k: v for k, v in vars(args).items() if k not in ("command", "func")}


def _summarized(target: str) -> Callable[[argparse.Namespace], int]:
    """A subcommand body: call ``module:function`` with the options, print its summary."""

    def run(args: argparse.Namespace) -> int:
        module, name = target.split(":")
        result = getattr(importlib.import_module(module), name)(**_options(args))
        print(result.summary_text())
        return 0

    return run


def _add_analyze(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="psychometric analysis of record tables (Parquet/CSV)",
        description="Tetrachoric factor analysis, factor alignment, pairwise calibration with "
        "permutation nulls and per-model calibration of one or more record tables.",
    )
    p.add_argument("paths", metavar="records", nargs="+", help="record tables (.parquet, .csv)")
    _option(p, "out", dest="out_dir", required=True, help="output folder")
    _option(p, "permutations", default=10_000, help="per-pair draws (default 10000)")
    _option(
        p,
        "joint_permutations",
        default=1_000,
        help="joint draws for the mean tau over all pairs (default 1000)",
    )
    _option(p, "seed", help="random seed (default 0)")
    p.add_argument("--models", dest="models_file", help="models.yaml with per-model traits")
    p.add_argument(
        "--pool",
        action="store_true",
        help="also analyse all benchmarks pooled (benchmark 'pooled', items '<bench>:<id>')",
    )
    p.add_argument(
        "--alternative",
        choices=("two-sided", "greater", "less"),
        default="two-sided",
        help="alternative of the permutation p-values (default two-sided)",
    )
    p.add_argument("--fdr-alpha", type=float, default=0.05, help="BH level (default 0.05)")
    p.add_argument(
        "--numeric-levels",
        type=int,
        default=5,
        help="numeric confidence enters the factor sections as at most this many ordered "
        "levels per model, with polychoric correlations (default 5); 0 binarises it at "
        "--binarize-at (tetrachoric)",
    )
    p.add_argument(
        "--binarize-at",
        type=float,
        default=0.5,
        help="with --numeric-levels 0: numeric confidence >= this is 'yes' in the factor "
        "sections (default 0.5)",
    )
    p.add_argument(
        "--min-coverage",
        type=float,
        default=0.5,
        help="leave out of the cross-model analyses any model with usable items for less than "
        "this share of a group's items (default 0.5; 0 keeps every model); correlations and "
        "pairs use each pair's shared items, the complete-case analyses the items every "
        "included model answered",
    )
    p.add_argument(
        "--engine",
        choices=("auto", "numpy", "numba"),
        default="auto",
        help="engine of the per-pair and joint permutation draws (default auto: numba when "
        "installed); summary.json records the ones that ran",
    )
    p.add_argument("--no-report", dest="report", action="store_false", help="skip report.html")
    _option(p, "quiet", help="no progress bars")
    p.set_defaults(func=_run_analyze)


#: Options of ``metacog analyze`` that are not :class:`~metacog_metrics.AnalysisOptions` fields.
_ANALYZE_FILE_OPTIONS = ("paths", "out_dir", "models_file", "report")


def _analysis_options(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """Split the parsed ``analyze`` options into file keywords and an ``AnalysisOptions``.

    Built before any file is read, so an option the CLI and the options object name
    differently fails at once.
    """
    from metacog_metrics import AnalysisOptions

    given = _options(args)
    files = {k: given.pop(k) for k in _ANALYZE_FILE_OPTIONS}
    return files, AnalysisOptions(**given)


def _run_analyze(args: argparse.Namespace) -> int:
    from metacog_metrics import analyze_files

    files, options = _analysis_options(args)
    paths = files.pop("paths")
    result = analyze_files(paths, options, **files)
    print(result.summary_text())
    from metacog_metrics import headline_findings

    print("Findings:")
    for line in headline_findings(result.summary):
        print(f"  - {line}")
    return 0


def _add_include_path(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "include-path",
        help="print the folder of the metacog lm-eval task configs",
        description="Print the folder of the metacog lm-eval task YAMLs, for "
        "`lm_eval run --include_path \"$(metacog include-path)\" --tasks 'metacog_*' ...`.",
    )
    p.set_defaults(func=_run_include_path)


def _run_include_path(args: argparse.Namespace) -> int:
    from metacog_tasks.lmeval.paths import tasks_dir

    print(tasks_dir())
    return 0


def _add_lm_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lm-eval",
        help="lm-eval's CLI with the metacog tasks and models added",
        description="Run lm-eval (`run`, `ls`, `validate`, or the legacy form) with the metacog "
        "task folder on --include_path and the metacog-sim model registered. All arguments "
        "go to lm-eval; see `metacog lm-eval --help`.",
        add_help=False,
    )
    p.add_argument("lm_eval_args", nargs=argparse.REMAINDER, help="lm-eval arguments")
    p.set_defaults(func=_run_lm_eval)


def _run_lm_eval(args: argparse.Namespace) -> int:
    from metacog_tasks.lmeval.wrapper import run_lm_eval_cli

    return run_lm_eval_cli(args.lm_eval_args)


def _add_collect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collect",
        help="harness logs (lm-eval output folders, Inspect logs) -> record table",
        description="Read lm-eval --output_path trees (results_*.json + samples_*.jsonl) and "
        "Inspect logs (.eval/.json) into one record table. Bad lines are counted and reported "
        "per file; the exit status is nonzero only when nothing could be read.",
    )
    p.add_argument("paths", nargs="+", help="files or folders (searched recursively)")
    _option(p, "out", required=True, help="record table to write (.parquet or .csv)")
    p.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="[HARNESS:]OLD=NEW",
        help="rename a model (repeatable); prefix lm-eval: or inspect: to rename only that "
        "harness's records, e.g. to compare one model across harnesses",
    )
    p.add_argument(
        "--all-runs",
        dest="latest_only",
        action="store_false",
        help="keep every lm-eval run of a model and task, not only the latest",
    )
    _option(p, "quiet", dest="verbose", help="print only the summary line")
    p.set_defaults(func=_run_collect)


def _run_collect(args: argparse.Namespace) -> int:
    from metacog_metrics import write_records
    from metacog_tasks.collect import collect, parse_renames

    result = collect(args.paths, rename=parse_renames(args.rename), latest_only=args.latest_only)
    report = result.report_text()
    print(report if args.verbose else report.splitlines()[0])
    if result.n_records == 0:
        print(
            f"metacog collect: error: no records read from {' '.join(args.paths)}", file=sys.stderr
        )
        return 1
    write_records(result.records, args.out)
    print(f"wrote {result.n_records} records to {args.out}")
    return 0


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="the whole pipeline offline: simulated models -> harness -> records -> report",
        description="Run the probe tasks of the six benchmarks (bundled packs) for a simulated "
        "population through the real lm-eval harness (or Inspect), collect the logs, analyse "
        "them and write report.html. Needs no network, no GPU and no API key.",
    )
    _option(p, "out", default="metacog-demo", help="output folder (default metacog-demo)")
    p.add_argument("--models", type=int, default=12, help="population size (default 12)")
    _option(p, "preset", help="generative-model preset (default paper)")
    p.add_argument("--harness", choices=("lm-eval", "inspect"), default="lm-eval")
    p.add_argument(
        "--items-per-benchmark", type=int, default=None, help="first N items of each pack"
    )
    _option(p, "benchmarks", help="comma-separated")
    _option(p, "seed")
    _option(p, "permutations", default=10_000, help="per-pair draws")
    _option(p, "joint_permutations", default=1_000, help="joint draws")
    _option(p, "quiet", dest="verbose", help="print only the summary")
    p.set_defaults(func=_summarized("metacog_tasks.demo:run_demo"))


def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        help="draw a record table from the generative model of confidence and correctness",
        description="Draw records from the psychometric generative model (shared item "
        "difficulty, model ability and threshold, individuated metacognition, inline solving). "
        "The true model traits are written beside the table (<stem>.models.csv).",
    )
    _option(p, "out", required=True, help="record table (.parquet or .csv)")
    _option(p, "preset", help="preset (default paper)")
    p.add_argument("--models", type=int, default=20, help="number of models (default 20)")
    p.add_argument(
        "--items",
        dest="items_per_benchmark",
        metavar="ITEMS",
        type=int,
        default=500,
        help="items per benchmark (default 500)",
    )
    _option(p, "benchmarks")
    p.add_argument("--individuated", type=float, default=None, help="individuated weight")
    p.add_argument(
        "--probes",
        type=_names,
        default=["prospective"],
        help="comma-separated: prospective, counterfactual, numeric",
    )
    _option(p, "seed")
    p.set_defaults(func=_summarized("metacog_metrics.simulate:run_simulate"))


def _add_power(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "power",
        help="power of the pairwise test and the factor alignment to detect individuated signal",
        description="Simulate populations with a planted individuated metacognition signal and "
        "report how often the pairwise test and the contentious-subset alignment detect it "
        "(and the false-positive rate at 0), as a table and a plot.",
    )
    _option(p, "out", dest="out_dir", default="metacog-power", help="output folder")
    p.add_argument("--models", type=_int_list, default=[10, 20, 40], help="e.g. 10,20,40")
    p.add_argument("--items", type=_int_list, default=[200, 1000, 5000], help="e.g. 200,1000")
    p.add_argument(
        "--individuated", type=_float_list, default=[0.0, 0.1, 0.2, 0.4], help="e.g. 0,0.1,0.2"
    )
    p.add_argument("--reps", type=int, default=200, help="replicates per grid point")
    _option(p, "preset")
    p.add_argument("--alpha", type=float, default=0.05)
    _option(p, "permutations", default=99, help="null draws per replicate")
    p.add_argument(
        "--alignment-reps", type=int, default=40, help="alignment replicates (0 skips it)"
    )
    p.add_argument(
        "--alignment-null-reps",
        type=int,
        default=200,
        help="null replicates per cell for the alignment's critical value",
    )
    p.add_argument(
        "--null",
        choices=("private_signal", "difficulty_stratified"),
        default="private_signal",
        help="detection null of the pairwise test (default private_signal)",
    )
    p.add_argument("--block-size", type=int, default=10, help="items per private-signal block")
    p.add_argument(
        "--size-presets",
        type=_names,
        default=["rasch", "2pl", "3pl"],
        help="correctness models of the size table, size.csv (default rasch,2pl,3pl; 'none')",
    )
    p.add_argument("--size-reps", type=int, default=None, help="replicates per size cell")
    _option(p, "seed")
    _option(p, "quiet", help="no progress bar")
    p.set_defaults(func=_summarized("metacog_metrics.power:run_power"))


def _add_gate(sub: argparse._SubParsersAction) -> None:
    from metacog_tasks.gate_command import add_parser  # the gate's own flags, from its config

    add_parser(sub)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``metacog``."""
    parser = argparse.ArgumentParser(
        prog="metacog",
        description="Metacognition probes for lm-eval and Inspect, and their analysis.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_analyze(sub)
    _add_collect(sub)
    _add_include_path(sub)
    _add_lm_eval(sub)
    _add_demo(sub)
    _add_simulate(sub)
    _add_power(sub)
    _add_gate(sub)
    from rlmf_plugin.cli import add_parser as add_rlmf  # metacog rlmf build|train

    add_rlmf(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``metacog`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "lm-eval":
        # Everything after `lm-eval` belongs to lm-eval's own parser, flags and --help included.
        from metacog_tasks.lmeval.wrapper import run_lm_eval_cli

        return run_lm_eval_cli(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as exc:
        # Input errors are reported in one line; bugs keep their traceback.
        print(f"metacog {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's status, not a traceback
        print(f"metacog {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
