"""Training presets and the three arms of a fair comparison.

``official`` is the official RLMF sample config (yale-nlp/RLMF ``sample_config.py``, ``grpo.py``
and the pre-SFT notebook), mapped onto this project's format and rewards:

* rewards ``strict_format`` (+1/-1) and ``soft_format`` ([-1, 0]) weight 3 each, correctness
  plus factual calibration (``correctness`` and ``brier``, the official ``c_w = f_w = 1``, the
  factual term -1 without a confidence) weight 1, faithfulness 12 (-10 for no answer), the
  metacognitive score ``Z`` weight 0 (it scales the advantage); the on-policy target,
  ``tau = 0.10``, ``k = 1``, the "mf" advantage, ``scale_rewards = "none"``;
* LoRA r = 64 (alpha 64, dropout 0.05) through peft on every linear projection;
* GRPO: 32 generations, ``beta = 0.1``, loss ``grpo``, lr 5e-6 cosine with 10% warm-up,
  ``max_grad_norm = 0.1``, weight decay 0, 1500 steps, batch 2 x 8 accumulation per device,
  8-bit AdamW, sampling at temperature 1 with ``min_p = 0.1`` (the non-Qwen setting),
  ``max_seq_length`` 512 (the completion gets what the 90% prompt-length quantile leaves);
* the SFT warm-up: the policy's own sampled answers tagged with their intrinsic confidence,
  LoRA r = 32 (alpha 64), 5 epochs, lr 3e-5 cosine, 10% warm-up, weight decay 0.01, batch
  1 x 8, then merged.

The arms (:data:`ARMS`) differ only in the reward weights and the advantage; every other
setting, ``scale_rewards`` included, is shared:

* ``correctness``: correctness-only RL (the format rewards and correctness; the factual and
  faithfulness terms weight 0, still computed and logged);
* ``standard``: the paper's "standard RL": the whole reward, plain group-centred advantages;
* ``rlmf``: the whole reward and RLMF's metacognitive advantage.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["ARMS", "PRESETS", "apply_preset", "arm_settings"]

#: The arms of the comparison.
ARMS: tuple[str, ...] = ("correctness", "standard", "rlmf")

_REWARDS = ["strict_format", "soft_format", "correctness", "brier", "faithful", "metacog_score"]
_WEIGHTS = {
    "correctness": [3.0, 3.0, 1.0, 0.0, 0.0, 0.0],
    "standard": [3.0, 3.0, 1.0, 1.0, 12.0, 0.0],
    "rlmf": [3.0, 3.0, 1.0, 1.0, 12.0, 0.0],
}
_RLMF = {
    "faith_reward": "faithful_reward",
    "mc_reward": "metacog_score",
    "advantage_k": 1.0,
    "piecewise": False,
}

#: Every preset: config keys of :mod:`rlmf_plugin.train` (``arm`` picks the weights and
#: ``rlmf`` block from ``arms``).
PRESETS: dict[str, dict[str, Any]] = {
    "official": {
        "rewards": _REWARDS,
        "reward_options": {
            "strict_format": {"require_meta": True},
            "soft_format": {"require_meta": True},
            "brier": {"no_confidence": -1.0},
            "faithful": {"no_answer": -10.0},
            "metacog_score": {"no_answer": -10.0},
        },
        "target": "onpolicy",
        "tau": 0.10,
        "max_seq_length": 512,
        "arms": {
            arm: {"reward_weights": _WEIGHTS[arm], "rlmf": dict(_RLMF) if arm == "rlmf" else None}
            for arm in ARMS
        },
        "peft": {
            "r": 64,
            "lora_alpha": 64,
            "lora_dropout": 0.05,
            "bias": "none",
            "target_modules": "all-linear",
        },
        "grpo": {
            "num_generations": 32,
            "per_device_train_batch_size": 2,
            "gradient_accumulation_steps": 8,
            "beta": 0.1,
            "loss_type": "grpo",
            "scale_rewards": "none",
            "mask_truncated_completions": False,
            "learning_rate": 5e-6,
            "lr_scheduler_type": "cosine",
            "warmup_steps": 0.1,  # transformers 5: a float below 1 is a ratio (warmup_ratio)
            "weight_decay": 0.0,
            "max_grad_norm": 0.1,
            "max_steps": 1500,
            "optim": "adamw_8bit",
            "temperature": 1.0,
            "min_p": 0.1,
            "shuffle_dataset": True,
            "gradient_checkpointing": False,
            "bf16": True,
            "log_completions": True,
            "logging_steps": 1,
            "save_steps": 100,
        },
        "sft": {
            "epochs": 5,
            "learning_rate": 3e-5,
            "per_device_train_batch_size": 1,
            "gradient_accumulation_steps": 8,
            "warmup_steps": 0.1,
            "weight_decay": 0.01,
            "lr_scheduler_type": "cosine",
            "optim": "adamw_8bit",
            "peft": {
                "r": 32,
                "lora_alpha": 64,
                "lora_dropout": 0.0,
                "bias": "none",
                "target_modules": "all-linear",
            },
        },
    },
}


def arm_settings(preset: str, arm: str) -> dict[str, Any]:
    """The ``reward_weights`` and ``rlmf`` block of one arm of a preset.

    Raises:
        ValueError: Unknown preset or arm.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; known: {list(ARMS)}")
    return copy.deepcopy(PRESETS[preset]["arms"][arm])


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def apply_preset(config: Mapping[str, Any]) -> dict[str, Any]:
    """A config with its ``preset`` and ``arm`` expanded: the preset's keys first, the arm's
    weights and advantage, then the config's own keys over them (mappings merged key by key).

    ``arm`` without ``preset`` is an error; a config without ``preset`` is returned as is.

    Raises:
        ValueError: Unknown preset or arm, or an arm without a preset.
    """
    config = dict(config)
    preset = config.pop("preset", None)
    arm = config.pop("arm", None)
    if preset is None:
        if arm is not None:
            raise ValueError("`arm` needs a `preset` (e.g. preset: official)")
        return config
    arm = arm or "rlmf"
    settings = arm_settings(str(preset), str(arm))
    base = {k: v for k, v in PRESETS[str(preset)].items() if k != "arms"}
    base.update(settings)
    merged = _merge(base, config)
    merged["preset"], merged["arm"] = str(preset), str(arm)
    return merged
