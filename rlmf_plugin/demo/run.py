"""The demo's pipeline: SFT, GRPO in three arms and several seeds, evaluation, paired bootstrap.

For each seed: a tiny GPT-2 (character tokenizer, built offline) is trained by SFT on the noisy
supervision of every item (:mod:`rlmf_plugin.demo.task`) with uninformative stated confidences
(``sft_confidence="random"``; ``"gold"`` tags each answer with its probability under the
supervision, as the official pre-SFT tags answers with their intrinsic confidence). Each arm
(:data:`~rlmf_plugin.presets.ARMS`) then trains a copy of that SFT model with TRL's GRPO on the
``train`` items, with the ``official`` preset's rewards, target and advantage and the settings
below shared by every arm. Each policy (and the SFT model) samples ``k`` answers per held-out
item; the intrinsic confidence of each is the share of the ``k`` equivalent to it (the training
target, :class:`~rlmf_plugin.consistency.OnPolicyTarget`), and MFG, cMFG, cMFG*, accuracy,
AUROC, Brier and ECE of the stated confidence are computed as ``rlmf eval`` does
(:func:`~rlmf_plugin.evaluate.run_metrics`). RLMF minus each baseline gets a paired bootstrap
interval: seeds (each seed's arms share its SFT model and data order) and items resampled
together.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metacog_metrics import Result
from rlmf_plugin.demo.task import BENCHMARK, Item, TaskGrader, label_distribution, split_items
from rlmf_plugin.evaluate import METRICS, run_metrics
from rlmf_plugin.presets import ARMS

__all__ = ["QUICK", "DemoResult", "DemoSettings", "run_demo"]

_SOURCE = "synthetic"


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """Every setting of a demo run (the defaults are the documented run).

    Attributes:
        seeds: Seeds; each gets its own SFT model, shared by its arms.
        arms: The arms trained.
        sft_steps: SFT optimiser steps (batch ``sft_batch``).
        sft_batch: SFT batch size.
        sft_lr: SFT learning rate.
        sft_confidence: ``random`` (uninformative) or ``gold`` (the supervision's probability).
        sft_copies: Labelled copies of each item in the SFT data.
        rl_steps: GRPO steps per arm.
        prompts_per_step: Prompts per GRPO step (each sampled ``group`` times).
        group: GRPO group size ``G`` (``num_generations``).
        lr: GRPO learning rate (constant after a 10% warm-up).
        beta: KL coefficient (official 0.1).
        advantage_k: RLMF's ``k``.
        tau: RLMF's ``tau``.
        k: Sampled answers per evaluated item.
        split: Items evaluated: ``test`` (held out) or ``val`` (for choosing settings).
        bootstrap: Paired bootstrap resamples.
        n_layer, n_embd, n_head: The tiny model.
        torch_threads: ``torch.set_num_threads``.
    """

    seeds: int = 3
    arms: tuple[str, ...] = ARMS
    sft_steps: int = 400
    sft_batch: int = 64
    sft_lr: float = 3e-3
    sft_confidence: str = "random"
    sft_copies: int = 20
    rl_steps: int = 100
    prompts_per_step: int = 8
    group: int = 8
    lr: float = 5e-4
    beta: float = 0.1
    advantage_k: float = 1.0
    tau: float = 0.10
    k: int = 8
    split: str = "test"
    bootstrap: int = 1000
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    torch_threads: int = 1


#: The ``--quick`` run: one seed's worth of work per arm, in under 3 minutes.
QUICK = DemoSettings(seeds=1, sft_steps=250, rl_steps=30, k=8, bootstrap=200)


@dataclasses.dataclass(frozen=True)
class DemoResult(Result):
    """What the demo measured (``results.json``).

    Attributes:
        settings: The :class:`DemoSettings`.
        policies: One entry per policy (``arm`` ``sft`` for the SFT model): ``seed``,
            ``metrics``, ``format_rate``, ``n_attempts``, ``bins`` (stated vs intrinsic).
        arms: Per arm (and ``sft``), each metric's mean and standard deviation over seeds.
        comparisons: ``rlmf_minus_<arm>``: per metric the difference of the seed means, its
            paired bootstrap 95% interval, and ``better``/``worse`` (the interval excludes 0).
        curves: Per arm and seed, the mean faithfulness reward and correctness per logged step.
        timings: Seconds per stage.
        n_items: Items evaluated.
    """

    settings: dict[str, Any]
    policies: list[dict[str, Any]]
    arms: dict[str, Any]
    comparisons: dict[str, Any]
    curves: dict[str, Any]
    timings: dict[str, float]
    n_items: int


# --------------------------------------------------------------------------------------------
# Model, SFT data, GRPO
# --------------------------------------------------------------------------------------------


def _tiny(settings: DemoSettings, seed: int, folder: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlmf_plugin.tiny import build_tiny_lm

    path = build_tiny_lm(
        folder,
        n_layer=settings.n_layer,
        n_embd=settings.n_embd,
        n_head=settings.n_head,
        n_positions=64,
        seed=seed,
    )
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    return AutoModelForCausalLM.from_pretrained(path), tokenizer


def _saved(model, tokenizer, folder: Path):
    """``model`` written to ``folder`` and read back, so that its config names that folder."""
    from transformers import AutoModelForCausalLM

    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return AutoModelForCausalLM.from_pretrained(folder)


def _sft_examples(settings: DemoSettings, rng: np.random.Generator) -> list[dict[str, str]]:
    """Every item's supervision: ``sft_copies`` answers in the label proportions, each with a
    stated confidence (random, or the answer's probability) and a random ``Meta``."""
    from rlmf_plugin.demo.task import items
    from rlmf_plugin.sft import format_completion

    out = []
    for it in items():
        dist = label_distribution(it)
        answers = list(dist)
        counts = np.floor(np.array([dist[a] for a in answers]) * settings.sft_copies).astype(int)
        counts[0] += settings.sft_copies - counts.sum()
        for a, c in zip(answers, counts):
            for _ in range(int(c)):
                if settings.sft_confidence == "gold":
                    conf = dist[a]
                else:
                    conf = float(rng.integers(1, 10)) / 10
                meta = float(rng.integers(1, 10)) / 10
                out.append(
                    {"prompt": it.prompt, "completion": format_completion(str(a), conf, meta)}
                )
    rng.shuffle(out)  # type: ignore[arg-type]
    return out


def _rows(its: Sequence[Item]) -> list[dict[str, str]]:
    return [
        {"prompt": it.prompt, "benchmark": BENCHMARK, "item_id": it.item_id, "source": _SOURCE}
        for it in its
    ]


def _config(settings: DemoSettings, arm: str, seed: int, out: Path):
    """The arm's training config: the ``official`` preset, scaled to the tiny model."""
    from rlmf_plugin.presets import apply_preset
    from rlmf_plugin.train import TrainConfig

    data = apply_preset(
        {
            "preset": "official",
            "arm": arm,
            "model": "tiny",
            "dataset": "-",
            "output_dir": str(out),
            "tau": settings.tau,
            "seed": seed,
            "peft": None,
            "max_seq_length": None,
            "torch_threads": settings.torch_threads,
            "grpo": {
                "use_cpu": True,
                "bf16": False,
                "num_generations": settings.group,
                "per_device_train_batch_size": settings.prompts_per_step * settings.group,
                "gradient_accumulation_steps": 1,
                "max_steps": settings.rl_steps,
                "learning_rate": settings.lr,
                "lr_scheduler_type": "constant_with_warmup",
                "beta": settings.beta,
                "max_completion_length": 32,
                "logging_steps": 5,
                "save_strategy": "no",
                "log_completions": False,
                "disable_tqdm": True,
                "optim": "adamw_torch",
            },
        }
    )
    if data.get("rlmf"):
        data["rlmf"] = {**data["rlmf"], "advantage_k": settings.advantage_k}
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    kwargs = {k: v for k, v in data.items() if k in fields}
    kwargs["rewards"] = tuple(kwargs["rewards"])
    kwargs["reward_weights"] = tuple(float(w) for w in kwargs["reward_weights"])
    return TrainConfig(**kwargs)


def _grpo(settings, arm, seed, model, tokenizer, train_items, out: Path):
    from datasets import Dataset

    from rlmf_plugin.train import make_trainer

    cfg = _config(settings, arm, seed, out)
    dataset = Dataset.from_list(_rows(train_items))
    trainer = make_trainer(cfg, model, tokenizer, dataset, grader=TaskGrader())
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # the curves go to results.json
    trainer.train()
    curve = [
        {
            "step": int(e["step"]),
            "faithful": e.get("rewards/faithful_reward/mean"),
            "correct": e.get("rewards/correctness_reward/mean"),
            "strict_format": e.get("rewards/strict_format_reward/mean"),
        }
        for e in trainer.state.log_history
        if "rewards/faithful_reward/mean" in e
    ]
    return trainer.model, curve


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def _sample(model, tokenizer, its: Sequence[Item], k: int, seed: int) -> list[list[str]]:
    """``k`` completions per item, sampled as in training (temperature 1, ``min_p`` 0.1)."""
    import torch

    torch.manual_seed(seed)
    model.eval()
    enc = tokenizer([it.prompt for it in its], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(
            **enc,
            do_sample=True,
            temperature=1.0,
            min_p=0.1,
            max_new_tokens=32,
            num_return_sequences=k,
            pad_token_id=tokenizer.pad_token_id,
        )
    texts = tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    return [texts[i * k : (i + 1) * k] for i in range(len(its))]


def _attempts(samples: Sequence[Sequence[str]], its: Sequence[Item]):
    """The attempt table of sampled completions: stated confidence, grade and the intrinsic
    confidence of each (its agreement among the item's ``k``, the training target)."""
    import pandas as pd

    from rlmf_plugin._format import parse_completion
    from rlmf_plugin.consistency import OnPolicyTarget

    grader = TaskGrader()
    target = OnPolicyTarget(grader)
    rows = []
    for it, texts in zip(its, samples):
        parsed = [parse_completion(t) for t in texts]
        n = len(parsed)
        cols = {"benchmark": [BENCHMARK] * n, "item_id": [it.item_id] * n, "source": [_SOURCE] * n}
        gs = target([it.prompt] * n, parsed, cols)
        for p, g in zip(parsed, gs):
            y = (
                grader.verdict(BENCHMARK, it.item_id, _SOURCE, p.answer).correct
                if p.has_answer
                else 0.0
            )
            rows.append(
                {
                    "item_id": it.item_id,
                    "confidence": p.confidence,
                    "correct": y,
                    "intrinsic": math.nan if g is None else g,
                    "strict": p.strict(require_meta=True),
                }
            )
    return pd.DataFrame(rows)


def _resolution(table) -> dict[str, float]:
    """How much the stated confidence follows the intrinsic one: the least-squares slope of
    stated on intrinsic confidence and their correlation (a constant confidence has 0)."""
    c, g = table["confidence"].to_numpy(float), table["intrinsic"].to_numpy(float)
    ok = np.isfinite(c) & np.isfinite(g)
    if ok.sum() < 3 or np.std(g[ok]) == 0 or np.std(c[ok]) == 0:
        return {"slope": math.nan, "corr": math.nan}
    slope = float(np.polyfit(g[ok], c[ok], 1)[0])
    return {"slope": slope, "corr": float(np.corrcoef(g[ok], c[ok])[0, 1])}


def _bins(table, n_bins: int = 10) -> list[dict[str, float]]:
    c, g = table["confidence"].to_numpy(float), table["intrinsic"].to_numpy(float)
    ok = np.isfinite(c) & np.isfinite(g)
    b = np.clip(np.floor(np.round(g[ok] * n_bins, 9)).astype(int), 0, n_bins - 1)
    out = []
    for j in range(n_bins):
        m = b == j
        if m.any():
            out.append(
                {
                    "bin": j,
                    "n": int(m.sum()),
                    "intrinsic": float(g[ok][m].mean()),
                    "stated": float(c[ok][m].mean()),
                }
            )
    return out


# --------------------------------------------------------------------------------------------
# The paired bootstrap
# --------------------------------------------------------------------------------------------


def _compare(tables: Mapping[tuple[str, int], Any], arms, seeds, n_boot: int, seed: int):
    """RLMF minus each other arm: differences of the seed means and paired bootstrap 95%
    intervals, seeds and items resampled together."""
    any_table = next(iter(tables.values()))
    items_all = sorted(set(any_table["item_id"]))
    index = {it: i for i, it in enumerate(items_all)}
    codes = {key: t["item_id"].map(index).to_numpy() for key, t in tables.items()}
    point = {key: run_metrics(t) for key, t in tables.items()}

    def mean(arm: str, seed_list, metrics) -> dict[str, float]:
        return {m: float(np.nanmean([metrics[(arm, s)][m] for s in seed_list])) for m in METRICS}

    rng = np.random.default_rng(seed)
    others = [a for a in arms if a != "rlmf"]
    draws: dict[str, dict[str, list[float]]] = {a: {m: [] for m in METRICS} for a in others}
    for _ in range(n_boot):
        pick = rng.integers(len(seeds), size=len(seeds))
        seed_list = [seeds[i] for i in pick]
        w_item = np.bincount(
            rng.integers(len(items_all), size=len(items_all)), minlength=len(items_all)
        ).astype(float)
        metrics = {
            key: run_metrics(t, weights=w_item[codes[key]])
            for key, t in tables.items()
            if key[1] in set(seed_list)
        }
        r = mean("rlmf", seed_list, metrics)
        for a in others:
            o = mean(a, seed_list, metrics)
            for m in METRICS:
                draws[a][m].append(r[m] - o[m])
    out = {}
    for a in others:
        r, o = mean("rlmf", seeds, point), mean(a, seeds, point)
        entry = {}
        for m, (_, higher) in METRICS.items():
            d = np.asarray(draws[a][m], float)
            d = d[np.isfinite(d)]
            lo, hi = np.percentile(d, [2.5, 97.5]) if d.size else (math.nan, math.nan)
            diff = r[m] - o[m]
            entry[m] = {
                "rlmf": r[m],
                a: o[m],
                "difference": diff,
                "ci_low": float(lo),
                "ci_high": float(hi),
                "better": bool(lo > 0 if higher else hi < 0),
                "worse": bool(hi < 0 if higher else lo > 0),
                "per_seed": [point[("rlmf", s)][m] - point[(a, s)][m] for s in seeds],
            }
        out[f"rlmf_minus_{a}"] = entry
    return out


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


def run_demo(
    out_dir: str | Path,
    settings: DemoSettings = DemoSettings(),
    *,
    progress: Callable[[str], None] | None = None,
) -> DemoResult:
    """Run the demo and write ``results.json``, ``report.html`` and the plots to ``out_dir``.

    Raises:
        ValueError: An unknown arm, split or SFT confidence; fewer than one seed.
    """
    import torch
    from transformers.utils import logging as hf_logging

    from rlmf_plugin._io import write_json
    from rlmf_plugin.sft import run_sft

    if settings.split not in ("test", "val"):
        raise ValueError(f"split must be test or val, got {settings.split!r}")
    if settings.sft_confidence not in ("random", "gold"):
        raise ValueError(f"sft_confidence must be random or gold, got {settings.sft_confidence!r}")
    bad = [a for a in settings.arms if a not in ARMS]
    if bad or "rlmf" not in settings.arms or settings.seeds < 1:
        raise ValueError(f"arms must include rlmf and be among {ARMS}; seeds >= 1")
    say = progress or (lambda msg: None)
    hf_logging.set_verbosity_error()
    torch.set_num_threads(settings.torch_threads)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    splits = split_items()
    evaluated = splits[settings.split]
    timings: dict[str, float] = {"sft": 0.0, "grpo": 0.0, "eval": 0.0}
    tables: dict[tuple[str, int], Any] = {}
    policies, curves = [], {}
    seeds = list(range(settings.seeds))
    for seed in seeds:
        t0 = time.perf_counter()
        torch.manual_seed(seed)
        model, tokenizer = _tiny(settings, seed, work / f"init-{seed}")
        rng = np.random.default_rng([seed, 11])
        sft = run_sft(
            model,
            tokenizer,
            _sft_examples(settings, rng),
            {
                "max_steps": settings.sft_steps,
                "learning_rate": settings.sft_lr,
                "per_device_train_batch_size": settings.sft_batch,
                "warmup_steps": 0.05,
                "lr_scheduler_type": "cosine",
                "max_length": 64,
                "logging_steps": 100,
            },
            str(work / f"sft-{seed}"),
            seed=seed,
            use_cpu=True,
            quiet=True,
        )
        # saved and reloaded: GRPO builds its KL reference from the model's own path
        sft = _saved(sft, tokenizer, work / f"sft-{seed}" / "model")
        timings["sft"] += time.perf_counter() - t0
        say(f"seed {seed}: SFT done ({time.perf_counter() - t0:.0f} s)")
        policy_models = {"sft": sft}
        for arm in settings.arms:
            t0 = time.perf_counter()
            trained, curve = _grpo(
                settings,
                arm,
                seed,
                copy.deepcopy(sft),
                tokenizer,
                splits["train"],
                work / f"{arm}-{seed}",
            )
            policy_models[arm] = trained
            curves[f"{arm}/{seed}"] = curve
            timings["grpo"] += time.perf_counter() - t0
            say(f"seed {seed}: GRPO {arm} done ({time.perf_counter() - t0:.0f} s)")
        t0 = time.perf_counter()
        for name, m in policy_models.items():
            table = _attempts(_sample(m, tokenizer, evaluated, settings.k, 1000 + seed), evaluated)
            tables[(name, seed)] = table
            policies.append(
                {
                    "arm": name,
                    "seed": seed,
                    "metrics": run_metrics(table),
                    "format_rate": float(table["strict"].mean()),
                    "resolution": _resolution(table),
                    "n_attempts": len(table),
                    "bins": _bins(table),
                }
            )
        timings["eval"] += time.perf_counter() - t0
    arms_summary = {}
    for name in ["sft", *settings.arms]:
        ms = [p["metrics"] for p in policies if p["arm"] == name]
        arms_summary[name] = {
            m: {
                "mean": float(np.nanmean([x[m] for x in ms])),
                "sd": float(np.nanstd([x[m] for x in ms], ddof=1)) if len(ms) > 1 else math.nan,
            }
            for m in METRICS
        }
        arms_summary[name]["format_rate"] = float(
            np.mean([p["format_rate"] for p in policies if p["arm"] == name])
        )
        for key in ("slope", "corr"):
            arms_summary[name][key] = float(
                np.nanmean([p["resolution"][key] for p in policies if p["arm"] == name])
            )
    t0 = time.perf_counter()
    rl_tables = {k: v for k, v in tables.items() if k[0] != "sft"}
    comparisons = _compare(rl_tables, settings.arms, seeds, settings.bootstrap, seed=0)
    timings["bootstrap"] = time.perf_counter() - t0
    result = DemoResult(
        settings=dataclasses.asdict(settings),
        policies=policies,
        arms=arms_summary,
        comparisons=comparisons,
        curves=curves,
        timings={k: round(v, 1) for k, v in timings.items()},
        n_items=len(evaluated),
    )
    write_json(out / "results.json", result.to_dict())
    from rlmf_plugin.demo.report import write_report

    write_report(out, result)
    return result
