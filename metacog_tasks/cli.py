"""The ``metacog`` command line.

Subcommands import their implementation lazily, so ``metacog analyze`` never loads a harness.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
import types
import typing
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any

from metacog_tasks._extras import missing_extra_message
from metacog_tasks._links import docs_url

__all__ = ["COMMANDS_GROUP", "build_parser", "main"]

#: Entry-point group of subcommands other packages add: ``name = "module:add_parser"``, where
#: ``add_parser(subparsers)`` adds the subcommand ``name``.
COMMANDS_GROUP = "metacog.commands"


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
    "overwrite": (
        ("--overwrite",),
        {
            "action": "store_true",
            "help": "write into a folder metacog did not write, replacing files of its output "
            "names there (other files are never touched)",
        },
    ),
}


def _option(p: argparse.ArgumentParser, name: str, **kwargs: Any) -> None:
    """Add the shared option ``name`` (:data:`_OPTIONS`) with this subcommand's keywords."""
    flags, shared = _OPTIONS[name]
    action = p.add_argument(*flags, **{**shared, **kwargs})
    if name == "preset" and isinstance(p, _CommandParser):
        p.deferred = (*p.deferred, lambda _p: _list_presets(action))


def _list_presets(action: argparse.Action) -> None:
    """Name the presets in the help of ``--preset`` (imported only when that help is needed)."""
    from metacog_metrics import PRESETS

    base = action.help or "generative-model preset (default %(default)s)"
    action.help = f"{base}; one of {', '.join(PRESETS)}"


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed options as keywords of the subcommand's function."""
    return {k: v for k, v in vars(args).items() if k not in ("command", "func")}


def _load(target: str) -> Any:
    """The object named ``module:name``."""
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def _summarized(
    target: str, options_of: str | None = None, positional: tuple[str, ...] = ()
) -> Callable[[argparse.Namespace], int]:
    """A subcommand body: call ``module:function`` with the options, print its summary.

    With ``options_of`` (an options dataclass, ``module:name``) the function gets the
    ``positional`` options first, then one instance of the dataclass built from the others
    (the dataclass checks them: a bad value is the command's one-line error).
    """

    def run(args: argparse.Namespace) -> int:
        given = _options(args)
        if options_of is None:
            result = _load(target)(**given)
        else:
            first = [given.pop(k) for k in positional]
            result = _load(target)(*first, _load(options_of)(**given))
        print(result.summary_text())
        return 0

    return run


def _value_parser(hint: Any) -> Callable[[str], Any]:
    """The argparse ``type`` of a field annotated ``hint``: its scalar type, the non-None one of
    an optional, a comma-separated list for a tuple."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        return _value_parser(args[0])
    if typing.get_origin(hint) is tuple:
        item = _value_parser(args[0])
        return lambda text: tuple(item(x) for x in text.split(",") if x.strip())
    return hint


def _add_options_of(p: argparse.ArgumentParser, cls: type) -> None:
    """One flag per field of the options dataclass ``cls``, from the field's own declaration.

    Flags, help and choices come from its :class:`~metacog_metrics.OptionSpec`, the default
    (shown in the help) from the field; argparse stores nothing for an absent flag, so the
    dataclass's default and its check stay the only ones. argparse over a library such as
    simple-parsing or tyro: they bring their own flag spelling and help layout, which would
    change the command line its users know.
    """
    from metacog_metrics import option_spec

    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        spec = option_spec(field)
        if spec is None or not spec.on_cli:
            continue
        kwargs: dict[str, Any] = {"dest": field.name, "default": argparse.SUPPRESS, **spec.cli}
        shown = field.default
        if "action" not in kwargs:
            if hints[field.name] is bool:
                kwargs["action"] = "store_true"
            else:
                kwargs["type"] = _value_parser(hints[field.name])
                if isinstance(shown, tuple):
                    shown = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in shown)
        flag = kwargs.get("action") in ("store_true", "store_false")
        help_text = spec.help if flag or shown is None else f"{spec.help} Default {shown}."
        flags = spec.flags or (f"--{field.name.replace('_', '-')}",)
        p.add_argument(*flags, help=help_text.replace("%", "%%"), **kwargs)


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser whose flags from an options dataclass (``options_of``, a
    ``module:name``) are added when that subcommand is parsed or its help shown: the other
    subcommands, ``metacog include-path`` among them, do not import the statistics."""

    options_of: str | None = None
    #: Called with the parser before it parses or shows help (e.g. to list the presets).
    deferred: tuple[Callable[[argparse.ArgumentParser], None], ...] = ()

    def _add_deferred_options(self) -> None:
        if self.options_of:
            cls, self.options_of = _load(self.options_of), None
            _add_options_of(self, cls)
        hooks, self.deferred = self.deferred, ()
        for hook in hooks:
            hook(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._add_deferred_options()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._add_deferred_options()
        return super().format_usage()

    def format_help(self) -> str:
        self._add_deferred_options()
        return super().format_help()


def _add_analyze(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="psychometric analysis of record tables (Parquet/CSV)",
        description="Tetrachoric factor analysis, factor alignment, pairwise calibration with "
        "permutation nulls and per-model calibration of one or more record tables. Writes "
        "OUT/summary.json, OUT/tables/*.csv and OUT/report.html.",
    )
    p.add_argument("paths", metavar="records", nargs="+", help="record tables (.parquet, .csv)")
    _option(p, "out", dest="out_dir", required=True, help="output folder")
    p.add_argument("--models", dest="models_file", help="models.yaml with per-model traits")
    p.add_argument("--no-report", dest="report", action="store_false", help="skip report.html")
    _option(p, "overwrite")
    p.add_argument(
        "--mlflow",
        dest="mlflow_uri",
        metavar="TRACKING_URI",
        help="also log the summary to this MLflow tracking URI (needs the mlflow extra)",
    )
    p.add_argument(
        "--mlflow-experiment",
        default="metacog",
        help="MLflow experiment of --mlflow (default metacog)",
    )
    p.options_of = "metacog_metrics:AnalysisOptions"
    p.set_defaults(func=_run_analyze)


#: Options of ``metacog analyze`` that are not :class:`~metacog_metrics.AnalysisOptions` fields.
_ANALYZE_FILE_OPTIONS = ("paths", "out_dir", "models_file", "report", "overwrite")
_ANALYZE_TRACKING_OPTIONS = ("mlflow_uri", "mlflow_experiment")


def _warn(command: str) -> Callable[[str], None]:
    return lambda note: print(f"metacog {command}: warning: {note}", file=sys.stderr)


def _run_analyze(args: argparse.Namespace) -> int:
    from metacog_metrics import AnalysisOptions, analyze_files

    given = _options(args)
    files = {k: given.pop(k) for k in _ANALYZE_FILE_OPTIONS}
    tracking = {k: given.pop(k) for k in _ANALYZE_TRACKING_OPTIONS}
    if tracking["mlflow_uri"]:
        from metacog_tasks.tracking import require_mlflow

        require_mlflow()  # before the analysis, not after it
    options = AnalysisOptions(**{"progress": True, **given})  # bars unless --quiet
    result = analyze_files(files.pop("paths"), options, on_warning=_warn("analyze"), **files)
    print(result.summary_text())
    print(result.findings_text())
    if tracking["mlflow_uri"]:
        from metacog_tasks.tracking import log_analysis

        run = log_analysis(
            result.summary,
            tracking["mlflow_uri"],
            experiment=tracking["mlflow_experiment"],
            out_dir=result.out_dir,
        )
        print(f"logged to MLflow {tracking['mlflow_uri']} (run {run})")
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
    from metacog_metrics import record_format, write_records
    from metacog_tasks.collect import collect, parse_renames

    record_format(args.out)  # a bad extension fails before any log is read
    renames = parse_renames(args.rename)
    result = collect(args.paths, rename=renames, latest_only=args.latest_only)
    report = result.report_text()
    print(report if args.verbose else report.splitlines()[0])
    if result.n_records == 0:
        hint = result.hint()
        print(
            f"metacog collect: error: no records read from {' '.join(args.paths)}"
            + (f"; {hint}" if hint else ""),
            file=sys.stderr,
        )
        return 1
    write_records(result.records, args.out)
    print(f"wrote {result.n_records} records to {args.out}")
    return 0


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="the whole pipeline offline: simulated models -> harness -> records -> report",
        description="Run the probe tasks of the benchmarks (bundled packs; by default those "
        "with enough items for an analysis of their own) for a simulated population through "
        "the real lm-eval harness (or Inspect), collect the logs, analyse them and write "
        "OUT/<harness>/report.html. Needs no network, no GPU and no API key.",
    )
    _option(
        p,
        "out",
        default="metacog-demo",
        help="output folder (default metacog-demo); each harness writes OUT/<harness>/",
    )
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
    _option(p, "overwrite")
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
    options = "metacog_tasks.sim.presets:SimulateOptions"
    p.options_of = options
    p.set_defaults(
        func=_summarized("metacog_tasks.sim.presets:simulate_benchmarks", options, ("out",))
    )


def _add_power(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "power",
        help="power of the pairwise test and the factor alignment to detect individuated signal",
        description="Simulate populations with a planted individuated metacognition signal and "
        "report how often the pairwise test and the contentious-subset alignment detect it "
        "(and the false-positive rate at 0), as a table and a plot.",
    )
    _option(p, "out", dest="out_dir", default="metacog-power", help="output folder")
    options = "metacog_metrics.power:PowerOptions"
    p.options_of = options
    p.set_defaults(func=_summarized("metacog_metrics.power:run_power", options, ("out_dir",)))


def _add_gate(sub: argparse._SubParsersAction) -> None:
    from metacog_tasks.gate_command import add_parser  # the gate's own flags, from its config

    add_parser(sub)


def _version() -> str:
    """metacog-eval's installed version (``unknown`` in a checkout that was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("metacog-eval")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``metacog``."""
    parser = argparse.ArgumentParser(
        prog="metacog",
        description="Metacognition probes for lm-eval and Inspect, and their analysis. "
        "Start with `metacog demo` (offline, about a minute); guides: " + docs_url(""),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser
    )
    _add_analyze(sub)
    _add_collect(sub)
    _add_include_path(sub)
    _add_lm_eval(sub)
    _add_demo(sub)
    _add_simulate(sub)
    _add_power(sub)
    _add_gate(sub)
    # Subcommands of the packages above this one (metacog rlmf ...) register themselves through
    # the "metacog.commands" entry points, so this package never imports them.
    for command in sorted(entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        command.load()(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``metacog`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "lm-eval":
        # Everything after `lm-eval` belongs to lm-eval's own parser, flags and --help included.
        from metacog_tasks.lmeval.wrapper import run_lm_eval_cli

        return run_lm_eval_cli(argv[1:])
    parser = build_parser()
    if not argv:  # bare `metacog`: what it can do, not a usage error
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        # Input errors are reported in one line; bugs keep their traceback.
        print(f"metacog {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        hint = missing_extra_message(exc, args.command)
        if hint is None:
            raise
        print(f"metacog {args.command}: error: {hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's status, not a traceback
        print(f"metacog {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
