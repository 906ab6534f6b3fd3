"""``metacog rlmf train --config rlmf.yaml``: GRPO (or RLMF) training with TRL.

The YAML config::

    model: Qwen/Qwen2.5-0.5B-Instruct        # a path or hub id, or {tiny: {n_layer: 2, ...}}
    dataset: runs/rlmf-data                  # the folder ``metacog rlmf build`` wrote
    output_dir: runs/rlmf-model
    rewards: [format, correctness, brier, faithful, metacog_score]
    reward_weights: [0.5, 1.0, 0.5, 3.0, 0.0]
    target: onpolicy                         # offline, item, accuracy (rewards.TARGETS)
    rlmf: {faith_reward: faithful_reward, mc_reward: metacog_score, advantage_k: 1.0}
    warmstart: {steps: 0}                    # teacher-forced format steps (tiny models only)
    grpo: {num_generations: 8, max_completion_length: 512, ...}   # any GRPOConfig field
    torch_threads: 1                         # torch.set_num_threads (CPU runs); default torch's

``rlmf: null`` trains plain GRPO. ``preset: official`` with ``arm: rlmf | standard |
correctness`` fills every key from the official sample config (:mod:`rlmf_plugin.presets`);
keys given in the file override it. Also: ``reward_options`` (per reward, e.g.
``{brier: {no_confidence: -1}}``), ``peft`` (LoRA options through peft), ``sft`` (the warm-up
stage before RL, :mod:`rlmf_plugin.sft`), ``judge`` (an LLM judge of answer consistency for the
on-policy target: ``{model: ..., base_url: ...}``), ``max_seq_length`` (the completion gets what
the 90% quantile of prompt lengths leaves). The trained model, ``metrics.json`` (TRL's log
history and the final figures) and the resolved ``config.json`` are written to ``output_dir``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from metacog_metrics import Result
from rlmf_plugin.rewards import DEFAULT_REWARDS, REWARD_NAMES, make_rewards

__all__ = ["TrainConfig", "TrainResult", "build_trainer", "load_config", "make_trainer", "train"]

_KEYS = {
    "model",
    "dataset",
    "output_dir",
    "rewards",
    "reward_weights",
    "target",
    "tau",
    "rlmf",
    "warmstart",
    "grpo",
    "benchmark_options",
    "seed",
    "torch_threads",
    "preset",
    "arm",
    "reward_options",
    "peft",
    "sft",
    "judge",
    "max_seq_length",
}
_RLMF_KEYS = {"faith_reward", "mc_reward", "advantage_k", "piecewise"}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A parsed training config (see the module doc)."""

    model: Any
    dataset: str
    output_dir: str
    rewards: tuple[str, ...] = DEFAULT_REWARDS
    reward_weights: tuple[float, ...] | None = None
    target: str = "onpolicy"
    tau: float = 0.10
    rlmf: Mapping[str, Any] | None = None
    warmstart: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    grpo: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    benchmark_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    seed: int = 0
    torch_threads: int | None = None
    preset: str | None = None
    arm: str | None = None
    reward_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    peft: Mapping[str, Any] | None = None
    sft: Mapping[str, Any] | None = None
    judge: Mapping[str, Any] | None = None
    max_seq_length: int | None = None


@dataclasses.dataclass(frozen=True)
class TrainResult(Result):
    """What ``train`` wrote: the model folder, the metrics file and the last logged figures."""

    output_dir: str
    metrics_path: str
    global_step: int
    final: dict[str, float]


def load_config(path: str | PathLike[str], **overrides: Any) -> TrainConfig:
    """Read a YAML training config.

    Relative ``model`` and ``dataset`` paths are read from the working folder, else from the
    config's folder; ``output_dir`` is relative to the working folder.

    Raises:
        ValueError: Unknown keys, a missing ``model``/``dataset``/``output_dir``, unknown
            rewards or a weight list of the wrong length (the message names the file).
    """
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the config must be a mapping")
    data.update({k: v for k, v in overrides.items() if v is not None})
    from rlmf_plugin.presets import apply_preset

    try:
        data = apply_preset(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    bad = sorted(set(data) - _KEYS)
    if bad:
        raise ValueError(f"{path}: unknown key(s) {bad}; allowed: {sorted(_KEYS)}")
    for key in ("model", "dataset", "output_dir"):
        if key not in data:
            raise ValueError(f"{path}: `{key}` is required")
    base = path.parent

    def local(p: Any) -> str:
        """A path as given (the working folder), else beside the config when it is there."""
        q = Path(str(p))
        if q.is_absolute() or q.exists() or not (base / q).exists():
            return str(q)
        return str(base / q)

    rewards = tuple(data.get("rewards") or DEFAULT_REWARDS)
    unknown = [r for r in rewards if r not in REWARD_NAMES]
    if unknown:
        raise ValueError(f"{path}: unknown reward(s) {unknown}; known: {list(REWARD_NAMES)}")
    weights = data.get("reward_weights")
    if weights is not None and len(weights) != len(rewards):
        raise ValueError(f"{path}: {len(weights)} reward_weights for {len(rewards)} rewards")
    rlmf = data.get("rlmf")
    if rlmf is not None:
        rlmf = {} if rlmf is True else dict(rlmf)
        bad = sorted(set(rlmf) - _RLMF_KEYS)
        if bad:
            raise ValueError(f"{path}: unknown rlmf key(s) {bad}; allowed: {sorted(_RLMF_KEYS)}")
    model = data["model"]
    if isinstance(model, str):
        model = local(model)
    from rlmf_plugin.rewards import TARGETS
    from rlmf_plugin.sft import SFT_KEYS

    target = str(data.get("target", "onpolicy"))
    if not target:
        raise ValueError(f"{path}: target must be one of {list(TARGETS)} or a column name")
    sft = data.get("sft")
    if sft is not None:
        bad = sorted(set(sft) - SFT_KEYS)
        if bad:
            raise ValueError(f"{path}: unknown sft key(s) {bad}; allowed: {sorted(SFT_KEYS)}")
    judge = data.get("judge")
    if judge is not None and not (isinstance(judge, dict) and judge.get("model")):
        raise ValueError(f"{path}: judge must be a mapping with a `model`")
    return TrainConfig(
        model=model,
        dataset=local(data["dataset"]),
        output_dir=str(data["output_dir"]),
        rewards=rewards,
        reward_weights=None if weights is None else tuple(float(w) for w in weights),
        target=target,
        tau=float(data.get("tau", 0.10)),
        rlmf=rlmf,
        warmstart=dict(data.get("warmstart") or {}),
        grpo=dict(data.get("grpo") or {}),
        benchmark_options=dict(data.get("benchmark_options") or {}),
        seed=int(data.get("seed", 0)),
        torch_threads=None if data.get("torch_threads") is None else int(data["torch_threads"]),
        preset=data.get("preset"),
        arm=data.get("arm"),
        reward_options=dict(data.get("reward_options") or {}),
        peft=None if data.get("peft") is None else dict(data["peft"]),
        sft=None if sft is None else dict(sft),
        judge=None if judge is None else dict(judge),
        max_seq_length=None if data.get("max_seq_length") is None else int(data["max_seq_length"]),
    )


def load_train_dataset(path: str | PathLike[str]):
    """The dataset ``build``/``select`` wrote: its folder, the ``dataset/`` inside, or a JSONL."""
    from datasets import Dataset, load_from_disk

    from rlmf_plugin._io import load_rows

    p = Path(path)
    if p.is_dir() and (p / "dataset").is_dir():
        return load_from_disk(str(p / "dataset"))
    return Dataset.from_list(load_rows(p))


def _model_path(cfg: TrainConfig) -> str:
    model = cfg.model
    if isinstance(model, Mapping) and "tiny" in model:
        from rlmf_plugin.tiny import build_tiny_lm, tiny_options

        init = Path(cfg.output_dir) / "init-model"
        return str(build_tiny_lm(init, **tiny_options(model["tiny"])))
    if not isinstance(model, str):
        raise ValueError(f"model must be a path, a hub id or {{tiny: ...}}, got {model!r}")
    return model


def _warmstart_texts(dataset, grader, rng) -> list[tuple[str, str]]:
    """(prompt, target) pairs in the format: right or wrong verdict lines, random confidences."""
    pairs = []
    for row in dataset:
        item = grader.item(row["benchmark"], row["item_id"], row.get("source"))
        if item is None:
            continue
        bench = grader.benchmark(row["benchmark"])
        right = rng.random() < 0.5
        answer = bench.reference_response(item) if right else bench.wrong_response(item, rng)
        lines = [ln for ln in answer.splitlines() if ln.strip()]
        answer = lines[-1] if lines else answer  # the verdict line: short enough to learn fast
        conf, meta = int(rng.integers(0, 11)) * 10, int(rng.integers(5, 11)) * 10
        prompt = row["prompt"]
        pairs.append((prompt, f"{answer}\nConfidence: {conf}\nMeta: {meta}"))
    return pairs


def warm_start(
    model, tokenizer, dataset, grader, *, steps: int, lr: float, seed: int, batch_size: int = 8
) -> float:
    """Teacher-forced steps on formatted answers, so that a random model emits the format.

    Returns the last loss. Only for smoke runs on tiny random models; real models follow the
    prompt's format instruction.
    """
    import numpy as np
    import torch
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    pairs = _warmstart_texts(dataset, grader, rng)
    if not pairs:
        raise ValueError("warmstart: no dataset item could be loaded from its source")
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    encoded = []
    for prompt, target in pairs:
        if not isinstance(prompt, str):
            prompt = tokenizer.apply_chat_template(
                prompt, tokenize=False, add_generation_prompt=True
            )
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        t_ids = tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        encoded.append((p_ids + t_ids, [-100] * len(p_ids) + t_ids))
    loss_value = math.nan
    for step in tqdm(range(steps), desc="warm start", leave=False):
        batch = [encoded[(step * batch_size + j) % len(encoded)] for j in range(batch_size)]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.tensor([x + [pad] * (width - len(x)) for x, _ in batch])
        labels = torch.tensor([y + [-100] * (width - len(y)) for _, y in batch])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x, _ in batch])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_value = float(loss.detach())
    return loss_value


def _write_json(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, default=str)
    os.replace(tmp, path)


def _gather(items: list[Any]) -> list[Any]:
    """``items`` of every training process, concatenated in rank order (one process: as is)."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    return list(gather_object(items)) if PartialState().num_processes > 1 else list(items)


def _judge(spec: Mapping[str, Any] | None):
    if spec is None:
        return None
    from rlmf_plugin.judge import ConsistencyJudge

    spec = dict(spec)
    return ConsistencyJudge(str(spec.pop("model")), **spec)


def _completion_budget(cfg: TrainConfig, dataset, tokenizer) -> int | None:
    """``max_seq_length`` minus the 90% quantile of the prompts' token lengths (+1), as the
    official code sets its completion length; None without ``max_seq_length``."""
    if cfg.max_seq_length is None or "max_completion_length" in cfg.grpo:
        return None
    import numpy as np

    lengths = []
    for row in dataset:
        prompt = row["prompt"]
        if not isinstance(prompt, str):
            prompt = tokenizer.apply_chat_template(
                prompt, tokenize=False, add_generation_prompt=True
            )
        lengths.append(len(tokenizer(prompt, add_special_tokens=False)["input_ids"]))
    budget = cfg.max_seq_length - (int(np.quantile(lengths, 0.9)) + 1)
    if budget < 1:
        raise ValueError(f"max_seq_length {cfg.max_seq_length} leaves no room for a completion")
    return budget


def make_trainer(
    cfg: TrainConfig,
    model,
    tokenizer,
    dataset,
    *,
    grader=None,
    callbacks: list[Any] | None = None,
):
    """The ``GRPOTrainer`` (``RLMFTrainer`` when ``cfg.rlmf`` is set) for a loaded model,
    tokenizer and dataset: the rewards, target, weights and arm of ``cfg``."""
    from trl import GRPOConfig, GRPOTrainer

    from rlmf_plugin._grading import ItemGrader
    from rlmf_plugin.trainer import RLMFTrainer

    if grader is None:
        grader = ItemGrader(options={k: dict(v) for k, v in cfg.benchmark_options.items()})
    rewards = make_rewards(
        cfg.rewards,
        grader=grader,
        target=cfg.target,
        tau=cfg.tau,
        options=cfg.reward_options,
        judge=_judge(cfg.judge),
        gather=_gather,
    )
    grpo = {"output_dir": cfg.output_dir, "report_to": "none", "seed": cfg.seed, **cfg.grpo}
    budget = _completion_budget(cfg, dataset, tokenizer)
    if budget is not None:
        grpo["max_completion_length"] = budget
    if cfg.reward_weights is not None:
        grpo["reward_weights"] = list(cfg.reward_weights)
    if cfg.rlmf is not None:
        grpo.setdefault("scale_rewards", "none")
    if grpo.get("use_cpu"):
        if str(grpo.get("optim", "")).endswith("8bit"):
            grpo["optim"] = "adamw_torch"  # bitsandbytes' 8-bit AdamW needs a GPU
        grpo["bf16"] = False
    args = GRPOConfig(**grpo)
    peft_config = None
    if cfg.peft:
        from peft import LoraConfig

        peft_config = LoraConfig(task_type="CAUSAL_LM", **dict(cfg.peft))
    common = dict(
        model=model,
        reward_funcs=rewards,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )
    if cfg.rlmf is None:
        return GRPOTrainer(**common)
    return RLMFTrainer(**common, **dict(cfg.rlmf))


def build_trainer(cfg: TrainConfig):
    """The trainer of a config: model and data loaded, the warm-up stages run first."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlmf_plugin._grading import ItemGrader

    torch.manual_seed(cfg.seed)
    if cfg.torch_threads:
        # A tiny model gains nothing from intra-op threads, and on a shared CPU their spinning
        # costs several times the work (measured: 3 GRPO steps 18 min with 2 threads on a
        # loaded 2-core machine, 3 min with 1).
        torch.set_num_threads(cfg.torch_threads)
    dataset = load_train_dataset(cfg.dataset)
    grader = ItemGrader(options={k: dict(v) for k, v in cfg.benchmark_options.items()})
    model_path = _model_path(cfg)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_path)
    steps = int(cfg.warmstart.get("steps", 0))
    if steps > 0:
        warm_start(
            model,
            tokenizer,
            dataset,
            grader,
            steps=steps,
            lr=float(cfg.warmstart.get("lr", 3e-3)),
            seed=cfg.seed,
            batch_size=int(cfg.warmstart.get("batch_size", 8)),
        )
    if cfg.sft is not None:
        model = _sft_stage(cfg, model, tokenizer, dataset)
    if steps > 0 or cfg.sft is not None:
        # TRL builds the KL reference (beta > 0) from the model's path: save the warmed-up
        # model and read it back, so that the reference is it and not the model before
        folder = Path(cfg.output_dir) / "warm-model"
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder)
    return make_trainer(cfg, model, tokenizer, dataset, grader=grader)


def _sft_stage(cfg: TrainConfig, model, tokenizer, dataset):
    """The SFT warm-up (``cfg.sft``): on ``sft.dataset`` (prompt-completion rows) when given,
    else on the policy's own sampled answers in the training data (:func:`sft_rows`)."""
    from rlmf_plugin._io import load_rows
    from rlmf_plugin.sft import run_sft, sft_rows

    settings = dict(cfg.sft or {})
    if settings.get("dataset"):
        examples = load_rows(settings["dataset"])
    else:
        examples = sft_rows(list(dataset), meta=settings.get("meta", 1.0))
    use_cpu = bool(cfg.grpo.get("use_cpu")) or None
    out = str(Path(cfg.output_dir) / "sft")
    return run_sft(model, tokenizer, examples, settings, out, seed=cfg.seed, use_cpu=use_cpu)


def train(cfg: TrainConfig) -> TrainResult:
    """Train, save the model, ``metrics.json`` and ``config.json`` to ``cfg.output_dir``."""
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    trainer = build_trainer(cfg)
    trainer.train()
    trainer.save_model(str(out / "model"))
    history = list(trainer.state.log_history)
    final = {
        k: float(v)
        for entry in history
        for k, v in entry.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    metrics_path = out / "metrics.json"
    _write_json(
        metrics_path,
        {"global_step": trainer.state.global_step, "final": final, "log_history": history},
    )
    _write_json(out / "config.json", dataclasses.asdict(cfg))
    return TrainResult(str(out), str(metrics_path), int(trainer.state.global_step), final)
