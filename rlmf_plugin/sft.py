"""The SFT warm-up before RL (the official "pre-SFT"): teach the format on the policy's own answers.

The official code fine-tunes the model, before GRPO, on its own sampled answers with each
sentence tagged by its intrinsic confidence (agreement with the model's other samples), so
that RL starts from a policy that writes the format. :func:`sft_rows` builds those examples
from a ``rlmf build`` dataset (built with ``--models`` = the policy, so the samples are its
own): each sampled answer, then ``Confidence`` = its agreement among the item's samples and
``Meta`` (the stated confidence is exact by construction: 100 by default). :func:`run_sft`
trains on them with TRL's ``SFTTrainer`` (LoRA through peft when given, merged afterwards).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SFT_KEYS", "format_completion", "run_sft", "sft_rows"]

#: Keys of a config's ``sft`` block.
SFT_KEYS = frozenset({
    "epochs", "max_steps", "learning_rate", "per_device_train_batch_size",
    "gradient_accumulation_steps", "warmup_steps", "weight_decay", "lr_scheduler_type",
    "optim", "peft", "dataset", "meta", "max_length", "logging_steps",
})  # fmt: skip


def format_completion(answer: str, confidence: float, meta: float | None = 1.0) -> str:
    """``answer``, then ``Confidence: C`` and ``Meta: M`` as whole percents."""
    text = f"{answer.rstrip()}\nConfidence: {round(100 * confidence)}"
    if meta is not None:
        text += f"\nMeta: {round(100 * meta)}"
    return text


def sft_rows(
    rows: Sequence[Mapping[str, Any]], *, meta: float | None = 1.0
) -> list[dict[str, Any]]:
    """Prompt-completion examples: every sampled answer of every row, with its agreement.

    Rows need ``prompt``, ``benchmark``, ``sample_answers`` and ``sample_correct`` (``rlmf
    build`` writes them); rows without samples are skipped, empty answers too.
    """
    from rlmf_plugin.consistency import agreement, answer_class_labels

    out = []
    for r in rows:
        answers = [str(a) if a else None for a in (r.get("sample_answers") or [])]
        ys = [1.0 if y == 1.0 else 0.0 for y in (r.get("sample_correct") or [])]
        if not answers or len(ys) != len(answers):
            continue
        gs = agreement(answer_class_labels(str(r.get("benchmark")), answers, ys))
        for a, g in zip(answers, gs):
            if a is None or not a.strip() or math.isnan(g):
                continue
            completion = format_completion(a, g, meta)
            prompt = r["prompt"]
            if isinstance(prompt, list):
                completion = [{"role": "assistant", "content": completion}]
            out.append({"prompt": prompt, "completion": completion})
    return out


def run_sft(
    model: Any,
    tokenizer: Any,
    examples: Sequence[Mapping[str, Any]],
    settings: Mapping[str, Any],
    output_dir: str,
    *,
    seed: int = 0,
    use_cpu: bool | None = None,
    quiet: bool = False,
) -> Any:
    """Train ``model`` on prompt-completion ``examples`` with TRL's ``SFTTrainer``; returns the
    trained model (LoRA merged into it when ``settings["peft"]`` is given).

    ``settings``: ``epochs`` (or ``max_steps``), ``learning_rate``, batch sizes, ``warmup_steps``,
    ``weight_decay``, ``lr_scheduler_type``, ``optim``, ``peft`` (LoRA options), ``max_length``.
    """
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if not examples:
        raise ValueError("SFT warm-up: no examples (the dataset has no sampled answers)")
    cpu = (not torch.cuda.is_available()) if use_cpu is None else use_cpu
    args = SFTConfig(
        output_dir=output_dir,
        num_train_epochs=float(settings.get("epochs", 1)),
        max_steps=int(settings.get("max_steps", -1)),
        learning_rate=float(settings.get("learning_rate", 3e-5)),
        per_device_train_batch_size=int(settings.get("per_device_train_batch_size", 8)),
        gradient_accumulation_steps=int(settings.get("gradient_accumulation_steps", 1)),
        warmup_steps=float(settings.get("warmup_steps", 0.0)),
        weight_decay=float(settings.get("weight_decay", 0.0)),
        lr_scheduler_type=str(settings.get("lr_scheduler_type", "linear")),
        optim="adamw_torch" if cpu else str(settings.get("optim", "adamw_torch")),
        max_length=settings.get("max_length", 1024),
        completion_only_loss=True,
        logging_steps=int(settings.get("logging_steps", 50)),
        save_strategy="no",
        report_to="none",
        seed=seed,
        use_cpu=cpu,
        bf16=False if cpu else bool(settings.get("bf16", True)),
        gradient_checkpointing=False,
        disable_tqdm=True,
    )
    peft_config = None
    if settings.get("peft"):
        from peft import LoraConfig

        peft_config = LoraConfig(task_type="CAUSAL_LM", **dict(settings["peft"]))
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list([dict(e) for e in examples]),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    if quiet:
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)
    trainer.train()
    trained = trainer.model
    if peft_config is not None:
        trained = trained.merge_and_unload()
    return trained
