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
        judgement=args.judgement,
        judge=args.judge,
        base_url=args.base_url,
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
        map_kind=args.map,
        inventory=args.inventory,
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
    if args.map == "accuracy" or args.mapping or (args.map is None and args.calibrate_on):
        print(
            f"phrase map: held-out verbal ECE {result.verbal_ece:.3f} (nearest-claim map "
            f"without calibration: {result.naive_ece:.3f}); written to {args.out}"
        )
    else:
        print(f"phrases by the decisiveness bin of the stated confidence; written to {args.out}")
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


def _hedges(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rlmf_plugin._io import write_json
    from rlmf_plugin.hedges import INVENTORY, inventory_dict, load_inventory, measure_decisiveness
    from rlmf_plugin.judge import ModelClient

    hedges = INVENTORY
    if args.inventory:
        hedges = load_inventory(json.loads(Path(args.inventory).read_text(encoding="utf-8")))
    measured_by = None
    if args.judge:
        client = ModelClient(args.judge, base_url=args.base_url, temperature=0.0, max_tokens=8)
        hedges = measure_decisiveness(hedges, client)
        measured_by = args.judge
    write_json(args.out, inventory_dict(hedges, measured_by=measured_by))
    for h in hedges:
        print(f"{h.decisiveness:5.2f}  {h.phrase}")
    print(f"written to {args.out}" + ("" if measured_by else " (assigned values, not measured)"))
    return 0


def _consistency_judge(model: str | None, base_url: str | None):
    if model is None:
        return None
    from rlmf_plugin.judge import ConsistencyJudge

    return ConsistencyJudge(model, base_url=base_url)


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
        judge=_consistency_judge(args.judge, args.base_url),
    )
    print(result_text(result))
    if args.out:
        print(f"written to {args.out} (rlmf_eval.json, rlmf_eval.csv, report.html)")
    return 0


def _demo(args: argparse.Namespace) -> int:
    import dataclasses
    import time

    from rlmf_plugin.demo.report import result_text
    from rlmf_plugin.demo.run import QUICK, DemoSettings, run_demo

    base = QUICK if args.quick else DemoSettings()
    changes = {k: getattr(args, k) for k in ("seeds", "rl_steps", "sft_steps", "group", "k",
               "tau", "advantage_k", "lr", "split", "sft_confidence", "bootstrap")
               if getattr(args, k) is not None}  # fmt: skip
    if args.arms:
        changes["arms"] = tuple(args.arms)
    settings = dataclasses.replace(base, **changes)
    start = time.perf_counter()

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - start:5.0f} s] {msg}", flush=True)

    result = run_demo(args.out, settings, progress=say)
    print(result_text(result))
    print(
        f"written to {args.out} (results.json, report.html) in {time.perf_counter() - start:.0f} s"
    )
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
        "the gold faithfulness of a sampled answer, 1-|decisiveness-consistency| (the official "
        "active-learning baseline; active-means: on harness means); "
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
    s.add_argument(
        "--judgement",
        choices=["posthoc", "inline"],
        default="posthoc",
        help="posthoc (official): the model judges each sampled answer in a separate query; "
        "inline: the Meta line of an answer in the RLMF format",
    )
    s.add_argument("--judge", help="active: a model rating the answers' decisiveness")
    s.add_argument("--base-url", help="an OpenAI-compatible endpoint serving --model/--judge")
    s.set_defaults(func=_select)

    w = rsub.add_parser(
        "verbalize",
        help="stage two: numeric confidence -> calibrated hedging phrases (rule or LLM rewriter)",
    )
    w.add_argument("inputs", nargs="+", help="JSONL/dataset folders of rows with `completion`")
    w.add_argument("-o", "--out", required=True, help="output folder")
    w.add_argument(
        "--map",
        choices=["intrinsic", "accuracy"],
        help="intrinsic (the paper's; the default without --calibrate-on): hedges whose "
        "decisiveness bin holds the stated confidence; accuracy (the default with "
        "--calibrate-on): phrases by P(correct | confidence)",
    )
    w.add_argument("--inventory", help="inventory.json with measured decisiveness (rlmf hedges)")
    src = w.add_mutually_exclusive_group()
    src.add_argument(
        "--calibrate-on",
        nargs="+",
        help="accuracy map: record tables / harness logs with numeric confidences and grades",
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

    h = rsub.add_parser(
        "hedges",
        help="the hedge inventory of stage two, its decisiveness measured by a judge model",
    )
    h.add_argument("-o", "--out", required=True, help="inventory.json to write")
    h.add_argument("--judge", help="judge model (Inspect name, or the model at --base-url)")
    h.add_argument("--base-url", help="an OpenAI-compatible endpoint for --judge")
    h.add_argument("--inventory", help="an inventory.json to re-measure (default: the shipped one)")
    h.set_defaults(func=_hedges)

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
    ev.add_argument(
        "--judge", help="an LLM judge of answer consistency for g (as training's `judge:`)"
    )
    ev.add_argument("--base-url", help="an OpenAI-compatible endpoint serving --judge")
    ev.set_defaults(func=_eval)

    d = rsub.add_parser(
        "demo",
        help="RLMF against correctness-only and standard RL on a synthetic task, offline on CPU",
        description="SFT a tiny model on noisy arithmetic (its consistency varies by item), "
        "train GRPO in three arms (correctness, standard, rlmf: the official preset, differing "
        "only in reward and advantage) for several seeds, and compare held-out MFG, cMFG, "
        "accuracy, AUROC and Brier from each policy's own samples (paired bootstrap).",
    )
    d.add_argument("-o", "--out", default="rlmf-demo", help="output folder (default rlmf-demo)")
    d.add_argument("--quick", action="store_true", help="one seed, short runs (under 3 minutes)")
    d.add_argument("--seeds", type=int, help="seeds per arm (default 3)")
    d.add_argument("--rl-steps", type=int, help="GRPO steps per arm")
    d.add_argument("--sft-steps", type=int, help="SFT steps per seed")
    d.add_argument("--group", type=int, help="GRPO group size G (default 8)")
    d.add_argument("--k", type=int, help="sampled answers per evaluated item (default 8)")
    d.add_argument("--tau", type=float, help="RLMF's tau (default 0.1)")
    d.add_argument("--advantage-k", type=float, help="RLMF's k (default 1)")
    d.add_argument("--lr", type=float, help="GRPO learning rate")
    d.add_argument(
        "--split", choices=["test", "val"], help="evaluate on held-out test (default) or val items"
    )
    d.add_argument("--sft-confidence", choices=["random", "gold"], help="confidences taught by SFT")
    d.add_argument("--bootstrap", type=int, help="paired bootstrap resamples")
    d.add_argument(
        "--arms", nargs="+", choices=["correctness", "standard", "rlmf"], help="arms (with rlmf)"
    )
    d.set_defaults(func=_demo)

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
