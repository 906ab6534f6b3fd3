"""``metacog rlmf build|train``."""

from __future__ import annotations

import argparse
import json
from typing import Any

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
        f"{result.n_bad} bad log lines)"
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
