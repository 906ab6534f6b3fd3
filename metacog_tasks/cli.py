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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``metacog``."""
    parser = argparse.ArgumentParser(
        prog="metacog",
        description="Metacognition probes for lm-eval and Inspect, and their analysis.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_analyze(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``metacog`` console script."""
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
