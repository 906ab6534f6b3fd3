"""The ``metacog`` command line.

Subcommands import their implementation lazily, so ``metacog analyze`` never loads a harness.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _float_list(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _add_analyze(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="psychometric analysis of record tables (Parquet/CSV)",
        description="Tetrachoric factor analysis, factor alignment, pairwise calibration with "
        "permutation nulls and per-model calibration of one or more record tables.",
    )
    p.add_argument("records", nargs="+", help="record tables (.parquet, .csv)")
    p.add_argument("--out", "-o", required=True, help="output folder")
    p.add_argument(
        "--permutations", type=int, default=10_000, help="per-pair draws (default 10000)"
    )
    p.add_argument(
        "--joint-permutations",
        type=int,
        default=1_000,
        help="joint draws for the mean tau over all pairs (default 1000)",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--models", dest="models_file", help="models.yaml with per-model traits")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    p.set_defaults(func=_run_analyze)


def _run_analyze(args: argparse.Namespace) -> int:
    from metacog_metrics.analyze import analyze_files

    result = analyze_files(
        args.records,
        out_dir=args.out,
        permutations=args.permutations,
        joint_permutations=args.joint_permutations,
        seed=args.seed,
        models_file=args.models_file,
        report=not args.no_report,
        progress=not args.quiet,
    )
    print(result.summary_text())
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
    p.add_argument("--out", "-o", required=True, help="record table to write (.parquet or .csv)")
    p.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="rename a model (repeatable), e.g. to compare one model across harnesses",
    )
    p.add_argument(
        "--all-runs",
        action="store_true",
        help="keep every lm-eval run of a model and task, not only the latest",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="print only the summary line")
    p.set_defaults(func=_run_collect)


def _run_collect(args: argparse.Namespace) -> int:
    from metacog_metrics.records import write_records

    from metacog_tasks.collect import collect, parse_renames

    result = collect(args.paths, rename=parse_renames(args.rename), latest_only=not args.all_runs)
    report = result.report_text()
    print(report.splitlines()[0] if args.quiet else report)
    if result.n_records == 0:
        print(
            f"metacog collect: error: no records read from {' '.join(args.paths)}", file=sys.stderr
        )
        return 1
    write_records(result.records, args.out)
    print(f"wrote {result.n_records} records to {args.out}")
    return 0


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


if __name__ == "__main__":
    sys.exit(main())
