"""``metacog rlmf build|train|select|verbalize|export|serve-reward|eval``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlmf_plugin.evaluate import EvalResult

__all__ = ["add_parser"]


def _build(args: argparse.Namespace) -> int:
    from rlmf_plugin.dataset import build_dataset

    result = build_dataset(
        args.paths,
        args.out,
        benchmarks=args.benchmarks,
        models=args.models,
        probe=args.probe,
        chat=args.chat,
        source=args.source,
        min_samples=args.min_samples,
        system_prompt=args.system_prompt,
    )
    print(
        f"wrote {result.n_rows} rows to {result.out_dir} ({result.n_insufficient} with fewer "
        f"than {args.min_samples} samples, {result.n_missing_items} items not in the source, "
        f"{result.n_bad} bad log lines, {result.n_ungraded} ungraded samples in "
        f"{result.n_ungraded_items} items, counted wrong)"
    )
    if result.n_missing_items:
        print(f"items not in source {args.source!r}: {', '.join(result.missing_items)}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from rlmf_plugin.train import load_config, train

    cfg = load_config(args.config, output_dir=args.output_dir)
    result = train(cfg)
    shown: dict[str, Any] = {
        k: v for k, v in result.final.items() if k.startswith(("reward", "rlmf/", "train_"))
    }
    print(json.dumps({"output_dir": result.output_dir, "step": result.global_step, **shown}))
    return 0


def _model_args(items: list[str] | None) -> dict[str, Any]:
    """``-M key=value`` pairs (values read as YAML scalars: numbers, booleans, strings)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"-M expects key=value, got {item!r}")
        out[key] = yaml.safe_load(value)
    return out


def _select(args: argparse.Namespace) -> int:
    from rlmf_plugin.select import select_dataset

    result = select_dataset(
        args.dataset,
        args.out,
        strategy=args.strategy,
        n=args.n,
        seed=args.seed,
        stratify=args.stratify,
        model=args.model,
        samples=args.samples,
        aggregate=args.aggregate,
        model_args=_model_args(args.model_arg),
        temperature=args.temperature,
    )
    sel, cand = result.stats["selected"], result.stats["candidates"]

    def show(x: Any) -> str:
        return "-" if x is None else f"{x:.3f}"

    print(
        f"selected {result.n_selected} of {result.n_candidates} items by {result.strategy} "
        f"({result.score}); {result.n_invalid} without a valid score; written to {args.out}"
    )
    for name in ("score", "accuracy", "stated_confidence", "intrinsic_confidence"):
        key = f"{name}_mean"
        print(f"  mean {name:22s} selected {show(sel[key])}   all {show(cand[key])}")
    return 0


def _verbalize(args: argparse.Namespace) -> int:
    from rlmf_plugin.verbalize import verbalize

    result = verbalize(
        args.inputs,
        args.out,
        calibrate_on=args.calibrate_on,
        mapping=args.mapping,
        probe=None if args.probe == "all" else args.probe,
        model=args.model,
        model_args=_model_args(args.model_arg),
        min_count=args.min_count,
        seed=args.seed,
    )
    print(
        f"rewrote {result.n_rewritten} of {result.n_completions} completions "
        f"({result.n_no_confidence} without a confidence left as they were); grade kept "
        f"{result.n_grade_kept}, changed {result.n_grade_changed}"
        + (f"; LLM {result.n_llm}, rule fallback {result.n_llm_fallback}" if args.model else "")
    )
    print(
        f"phrase map: held-out verbal ECE {result.verbal_ece:.3f} (nearest-claim map without "
        f"calibration: {result.naive_ece:.3f}); written to {args.out}"
    )
    return 0


def eval_command(
    paths: Sequence[str | PathLike[str]],
    *,
    baseline: Sequence[str | PathLike[str]] | None = None,
    out_dir: str | PathLike[str] | None = None,
    **options: Any,
) -> EvalResult:
    """Load, evaluate, and write ``rlmf_eval.json``, ``rlmf_eval.csv`` and ``report.html``."""
    from metacog_metrics import atomic_write, atomic_write_text
    from rlmf_plugin._io import write_json
    from rlmf_plugin.evaluate import evaluate_runs, load_attempts, result_frame
    from rlmf_plugin.report import render_rlmf_eval_report

    after = load_attempts(paths)
    base = load_attempts(baseline) if baseline else None
    result = evaluate_runs(after, base, **options)
    if out_dir is not None:
        out = Path(out_dir)
        summary = {**result.to_dict(), "inputs": [str(p) for p in paths],
                   "baseline_inputs": [str(p) for p in baseline or []]}  # fmt: skip
        write_json(out / "rlmf_eval.json", summary)
        frame = result_frame(result)
        atomic_write(out / "rlmf_eval.csv", lambda tmp: frame.to_csv(tmp, index=False))
        from rlmf_plugin._io import jsonable

        atomic_write_text(out / "report.html", render_rlmf_eval_report(jsonable(summary)))
    return result


def _eval(args: argparse.Namespace) -> int:
    from rlmf_plugin.evaluate import result_text

    result = eval_command(
        args.logs,
        baseline=args.baseline,
        out_dir=args.out,
        model=args.model,
        baseline_model=args.baseline_model,
        probe=args.probe,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
    )
    print(result_text(result))
    if args.out:
        print(f"written to {args.out} (rlmf_eval.json, rlmf_eval.csv, report.html)")
    return 0


def _export(args: argparse.Namespace) -> int:
    from rlmf_plugin.engines import export_dataset

    result = export_dataset(
        args.dataset, args.out, formats=args.formats, val_fraction=args.val, seed=args.seed
    )
    print(f"exported {result.n_train} training and {result.n_val} validation rows:")
    for name, path in result.files.items():
        print(f"  {name}: {path}")
    return 0


def _weights(items: list[str] | None) -> dict[str, float] | None:
    if not items:
        return None
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            out[key] = float(value)
        except ValueError:
            raise SystemExit(f"--weight expects name=number, got {item!r}") from None
        if not sep:
            raise SystemExit(f"--weight expects name=number, got {item!r}")
    return out


def _serve(args: argparse.Namespace) -> int:
    from rlmf_plugin.engines import serve

    server = serve(
        args.host,
        args.port,
        weights=_weights(args.weight),
        mc_weight=args.mc_weight,
        mc_start=args.mc_start,
        timeout_s=args.timeout,
    )
    host, port = server.server_address[:2]
    print(f"RLMF reward server on http://{host}:{port}/get_reward (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def add_parser(sub: Any) -> None:
    """Register ``rlmf`` and its two subcommands on the ``metacog`` parser."""
    p = sub.add_parser("rlmf", help="RLMF: GRPO data from harness runs, and training with TRL")
    rsub = p.add_subparsers(dest="rlmf_command", required=True, metavar="SUBCOMMAND")

    b = rsub.add_parser("build", help="record tables / harness logs -> a GRPO dataset")
    b.add_argument("paths", nargs="+", help="record tables (.parquet/.csv) and/or log folders")
    b.add_argument("-o", "--out", required=True, help="output folder")
    b.add_argument("--benchmarks", nargs="+", help="keep these benchmarks")
    b.add_argument("--models", nargs="+", help="use these models' samples only")
    b.add_argument(
        "--probe", help="probe of the stated confidence (e.g. numeric, prospective; default all)"
    )
    b.add_argument("--chat", action="store_true", help="prompts as chat messages")
    b.add_argument("--system-prompt", help="system message of chat prompts")
    b.add_argument(
        "--source", default="bundled", help="benchmark data the runs used (default bundled)"
    )
    b.add_argument("--min-samples", type=int, default=2, help="fewest samples for item statistics")
    b.set_defaults(func=_build)

    t = rsub.add_parser("train", help="GRPO/RLMF training from a YAML config")
    t.add_argument("--config", required=True, help="training config (YAML; see docs/rlmf.md)")
    t.add_argument("--output-dir", help="override the config's output_dir")
    t.set_defaults(func=_train)

    from rlmf_plugin.select import STRATEGIES

    s = rsub.add_parser(
        "select",
        help="choose the training items (RLMF's metacognitive selection and baselines)",
        description="Select N items of a `metacog rlmf build` dataset. metacognitive: the "
        "model's own meta-confidence, N/2 lowest and N/2 highest (RLMF); active: the same on "
        "gold faithfulness 1-|stated-intrinsic| (the official active-learning baseline); "
        "uncertainty: most disagreement among sampled answers; deviation: largest "
        "|stated-accuracy|; random.",
    )
    s.add_argument("dataset", help="the build output folder (or its train.jsonl)")
    s.add_argument("-o", "--out", required=True, help="output folder")
    s.add_argument("--strategy", required=True, choices=list(STRATEGIES))
    s.add_argument("--n", type=int, required=True, help="items to select")
    s.add_argument("--seed", type=int, default=0, help="seed of ties and random (default 0)")
    s.add_argument(
        "--stratify", action="store_true", help="select within each benchmark by its share"
    )
    s.add_argument(
        "--model",
        help="metacognitive: ask this Inspect model (provider/name, e.g. metacog-sim/m01) for "
        "its meta-confidence instead of reading the meta_confidence column",
    )
    s.add_argument("-M", "--model-arg", action="append", help="provider argument key=value")
    s.add_argument("--samples", type=int, default=1, help="samples per item (default 1)")
    s.add_argument(
        "--aggregate", choices=["first", "mean"], default="first", help="of the samples' Meta"
    )
    s.add_argument("--temperature", type=float, help="sampling temperature for --model")
    s.set_defaults(func=_select)

    w = rsub.add_parser(
        "verbalize",
        help="stage two: numeric confidence -> calibrated hedging phrases (rule or LLM rewriter)",
    )
    w.add_argument("inputs", nargs="+", help="JSONL/dataset folders of rows with `completion`")
    w.add_argument("-o", "--out", required=True, help="output folder")
    src = w.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--calibrate-on",
        nargs="+",
        help="record tables / harness logs with numeric confidences and grades to fit the map on",
    )
    src.add_argument("--mapping", help="a mapping.json from an earlier run")
    w.add_argument(
        "--probe", default="numeric", help="probe of the calibration confidences (or all)"
    )
    w.add_argument(
        "--model", help="LLM rewriter: an Inspect model (e.g. openai/gpt-4o-mini, metacog-sim/m01)"
    )
    w.add_argument("-M", "--model-arg", action="append", help="provider argument key=value")
    w.add_argument("--min-count", type=int, default=30, help="fewest answers per kept phrase")
    w.add_argument("--seed", type=int, default=0, help="seed of the validation folds")
    w.set_defaults(func=_verbalize)

    ev = rsub.add_parser(
        "eval",
        help="factual (ECE, Brier, AUROC) and faithful (MFG, cMFG) calibration, before vs after",
        description="Evaluate a model's harness runs (record tables, lm-eval or Inspect logs; "
        "Inspect --epochs k gives the sampled answers behind the intrinsic confidence) and "
        "compare with a baseline by a paired bootstrap over items.",
    )
    ev.add_argument("logs", nargs="+", help="the trained model's runs")
    ev.add_argument("--baseline", nargs="+", help="the baseline's runs (before training)")
    ev.add_argument("-o", "--out", help="write rlmf_eval.json, rlmf_eval.csv and report.html")
    ev.add_argument("--model", help="the model to evaluate when the runs hold several")
    ev.add_argument("--baseline-model", help="the baseline model when its runs hold several")
    ev.add_argument(
        "--probe", help="probe of the stated confidence (default numeric, else the only one)"
    )
    ev.add_argument("--bootstrap", type=int, default=2000, help="paired bootstrap resamples")
    ev.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    ev.set_defaults(func=_eval)

    e = rsub.add_parser("export", help="the dataset in verl (parquet) and OpenRLHF (JSONL) formats")
    e.add_argument("dataset", help="a build/select output folder (or its train.jsonl)")
    e.add_argument("-o", "--out", required=True, help="output folder")
    e.add_argument(
        "--formats", nargs="+", choices=["verl", "openrlhf"], default=["verl", "openrlhf"]
    )
    e.add_argument("--val", type=float, default=0.0, help="validation share (default 0)")
    e.add_argument("--seed", type=int, default=0, help="seed of the validation split")
    e.set_defaults(func=_export)

    v = rsub.add_parser("serve-reward", help="HTTP reward server for OpenRLHF's --remote_rm_url")
    v.add_argument("--host", default="127.0.0.1")
    v.add_argument("--port", type=int, default=5000)
    v.add_argument(
        "--weight",
        action="append",
        help="reward weight name=w (format, strict_format, soft_format, correctness, brier, "
        "log_score, faithful, metacog_score); default format=0.5 correctness=1 brier=0.5 "
        "faithful=3",
    )
    v.add_argument("--mc-weight", type=float, default=0.0, help="additive metacognitive term")
    v.add_argument("--mc-start", type=float, default=0.0, help="faithfulness it starts at")
    v.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds per request; rows not scored by then count wrong (default 60)",
    )
    v.set_defaults(func=_serve)
