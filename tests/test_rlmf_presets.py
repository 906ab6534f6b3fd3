"""The `official` preset (the official sample config) and the three arms of a fair comparison."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from rlmf_plugin._grading import ItemGrader
from rlmf_plugin.presets import ARMS, PRESETS, apply_preset
from rlmf_plugin.rewards import make_rewards
from rlmf_plugin.train import load_config
from rlmf_plugin.trainer import rlmf_advantages

RIGHT, WRONG = "The answer is (A).", "The answer is (B)."  # mmlu_pro 90001: gold (A)


def test_official_preset_is_the_sample_config():
    p = apply_preset({"preset": "official"})
    assert p["arm"] == "rlmf"
    g = p["grpo"]
    assert (g["num_generations"], g["beta"], g["loss_type"], g["scale_rewards"]) == (
        32, 0.1, "grpo", "none")  # fmt: skip
    assert (g["learning_rate"], g["lr_scheduler_type"], g["warmup_steps"]) == (5e-6, "cosine", 0.1)
    assert (g["max_grad_norm"], g["weight_decay"], g["max_steps"], g["optim"]) == (
        0.1, 0.0, 1500, "adamw_8bit")  # fmt: skip
    assert (g["per_device_train_batch_size"], g["gradient_accumulation_steps"]) == (2, 8)
    assert (g["temperature"], g["min_p"]) == (1.0, 0.1)  # the non-Qwen sampling
    assert p["peft"] == {"r": 64, "lora_alpha": 64, "lora_dropout": 0.05, "bias": "none",
                         "target_modules": "all-linear"}  # fmt: skip
    assert p["rewards"] == ["strict_format", "soft_format", "correctness", "brier", "faithful",
                            "metacog_score"]  # fmt: skip
    assert p["reward_weights"] == [3.0, 3.0, 1.0, 1.0, 12.0, 0.0]  # official [3, 3, 1, 12]
    assert p["reward_options"]["faithful"]["no_answer"] == -10.0
    assert p["reward_options"]["brier"]["no_confidence"] == -1.0
    assert (p["target"], p["tau"], p["max_seq_length"]) == ("onpolicy", 0.10, 512)
    assert p["rlmf"] == {"faith_reward": "faithful_reward", "mc_reward": "metacog_score",
                         "advantage_k": 1.0, "piecewise": False}  # fmt: skip
    s = p["sft"]
    assert (s["epochs"], s["learning_rate"], s["gradient_accumulation_steps"]) == (5, 3e-5, 8)
    assert (s["peft"]["r"], s["peft"]["lora_alpha"], s["weight_decay"]) == (32, 64, 0.01)


def test_arms_differ_only_in_reward_weights_and_advantage():
    arms = {a: apply_preset({"preset": "official", "arm": a}) for a in ARMS}
    for a in ARMS:
        rest = {k: v for k, v in arms[a].items() if k not in ("arm", "reward_weights", "rlmf")}
        assert rest == {k: v for k, v in arms["rlmf"].items()
                        if k not in ("arm", "reward_weights", "rlmf")}  # fmt: skip
        assert arms[a]["grpo"]["scale_rewards"] == "none"  # shared, not TRL's default "group"
    assert arms["standard"]["reward_weights"] == arms["rlmf"]["reward_weights"]
    assert arms["standard"]["rlmf"] is None and arms["correctness"]["rlmf"] is None
    assert arms["correctness"]["reward_weights"] == [3.0, 3.0, 1.0, 0.0, 0.0, 0.0]
    # the config's own keys win, mappings merged key by key
    over = apply_preset({"preset": "official", "arm": "standard", "grpo": {"max_steps": 7}})
    assert over["grpo"]["max_steps"] == 7 and over["grpo"]["beta"] == 0.1


def test_the_rlmf_advantage_with_neutral_z_is_the_standard_arms():
    """With k = 1 and Z = 0 RLMF's advantage is the plain group-centred total that TRL gives
    the standard arm under scale_rewards="none": the arms differ in Z's scaling only."""
    gen = torch.Generator().manual_seed(0)
    r = torch.rand(16, 6, generator=gen) * 4 - 2
    r[:, 5] = 0.0  # Z = 0
    w = torch.tensor(PRESETS["official"]["arms"]["rlmf"]["reward_weights"])
    adv = rlmf_advantages(r, w, faith_index=4, mc_index=5, num_generations=8, k=1.0)
    total = (r * w).sum(1).view(-1, 8)
    assert torch.allclose(adv, (total - total.mean(1, keepdim=True)).view(-1), atol=1e-5)
    r[:, 5] = 1.0  # a perfect self-judgement doubles the above-mean faithfulness credit
    boosted = rlmf_advantages(r, w, faith_index=4, mc_index=5, num_generations=8, k=1.0)
    f = (r[:, 4] * 12).view(-1, 8)
    above = (f - f.mean(1, keepdim=True)).view(-1) > 0
    assert torch.all(boosted[above] > adv[above]) and torch.allclose(boosted[~above], adv[~above])


def _official_rewards(completion: str) -> tuple[list[float | None], float]:
    p = apply_preset({"preset": "official", "arm": "rlmf"})
    funcs = make_rewards(p["rewards"], grader=ItemGrader(), options=p["reward_options"])
    comps = [completion] + [f"{RIGHT}\nConfidence: 75\nMeta: 90"] * 3  # a group of 4
    cols = {"benchmark": ["mmlu_pro"] * 4, "item_id": ["90001"] * 4, "source": ["bundled"] * 4}
    vals = [f(prompts=["p"] * 4, completions=comps, **cols)[0] for f in funcs]
    return vals, sum(w * (v or 0.0) for w, v in zip(p["reward_weights"], vals))


# (strict, soft, correctness, brier, faithful, Z), weighted total under [3, 3, 1, 1, 12, 0]
REVIEW = {
    "right, strict, C 90, M 90": (f"{RIGHT}\nConfidence: 90\nMeta: 90",
                                  [1, 0, 1, 0.99, 0.99, 0.99], 16.87),
    "wrong, strict, C 90, M 90": (f"{WRONG}\nConfidence: 90\nMeta: 90",
                                  [1, 0, 0, 0.19, 1 - 0.65**2, 0.19], 10.12),
    "wrong, strict, C 10, M 90": (f"{WRONG}\nConfidence: 10\nMeta: 90",
                                  [1, 0, 0, 0.99, 1 - 0.15**2, 0.19], 15.72),
    "right, no Meta line": (f"{RIGHT}\nConfidence: 90", [-1, -0.25, 1, 0.99, 0.99, -1], 10.12),
    "right, duplicated Confidence tag": (f"{RIGHT}\nConfidence: 90\nConfidence: 10\nMeta: 90",
                                         [-1, -0.75, 0, -1, -1, -1], -18.25),
    "right, text after the tags": (f"{RIGHT}\nConfidence: 90\nMeta: 90\n{RIGHT}",
                                   [-1, -0.25, 1, 0.99, 0.99, 0.99], 10.12),
    "no answer": ("\nConfidence: 90\nMeta: 90", [-1, -1, 0, -1, -10, -10], -127.0),
    "empty": ("", [-1, -1, 0, -1, -10, -10], -127.0),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REVIEW))
def test_official_reward_set_on_the_reviewed_examples(case):
    completion, want, total = REVIEW[case]
    vals, got = _official_rewards(completion)
    assert vals == pytest.approx(want) and got == pytest.approx(total)


def test_no_answer_is_the_floor_and_malformed_never_beats_honest():
    totals = {k: _official_rewards(v[0])[1] for k, v in REVIEW.items()}
    assert totals["no answer"] < min(
        v for k, v in totals.items() if k not in ("no answer", "empty")
    )
    honest_wrong = min(totals[k] for k in totals if k.startswith("wrong, strict"))
    assert totals["right, duplicated Confidence tag"] < honest_wrong


def test_config_with_a_preset_and_an_arm(tmp_path: Path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump({"preset": "official", "arm": "standard", "model": "m",
                                        "dataset": "d", "output_dir": "o"}))  # fmt: skip
    cfg = load_config(cfg_file)
    assert cfg.rlmf is None and cfg.arm == "standard" and cfg.peft["r"] == 64
    assert cfg.reward_weights == (3.0, 3.0, 1.0, 1.0, 12.0, 0.0) and cfg.target == "onpolicy"
    assert cfg.reward_options["brier"] == {"no_confidence": -1.0}
    cfg_file.write_text(yaml.safe_dump({"arm": "rlmf", "model": "m", "dataset": "d",
                                        "output_dir": "o"}))  # fmt: skip
    with pytest.raises(ValueError, match="needs a `preset`"):
        load_config(cfg_file)
    cfg_file.write_text(yaml.safe_dump({"preset": "official", "arm": "nope", "model": "m",
                                        "dataset": "d", "output_dir": "o"}))  # fmt: skip
    with pytest.raises(ValueError, match="unknown arm"):
        load_config(cfg_file)


def test_official_preset_trains_with_lora_r64_on_every_projection(tmp_path: Path):
    """Two GRPO steps of the rlmf arm on a tiny model: peft's LoRA r=64 on each linear
    projection (GPT-2's c_attn, c_proj, c_fc), the RLMF trainer, the on-policy target."""
    from datasets import Dataset
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from metacog_tasks.benchmarks import get_benchmark
    from rlmf_plugin.tiny import build_tiny_lm
    from rlmf_plugin.train import TrainConfig, make_trainer
    from rlmf_plugin.trainer import RLMFTrainer

    path = build_tiny_lm(tmp_path / "tiny", n_positions=512)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    mmlu = get_benchmark("mmlu_pro")
    items = mmlu.load("bundled")[:2]
    rows = [{"prompt": mmlu.solve_prompt(it)[:200], "benchmark": "mmlu_pro",
             "item_id": it.item_id, "source": "bundled"} for it in items]  # fmt: skip
    p = apply_preset({"preset": "official", "arm": "rlmf"})
    p["grpo"].update({"use_cpu": True, "num_generations": 4, "per_device_train_batch_size": 8,
                      "gradient_accumulation_steps": 1, "max_steps": 2, "save_strategy": "no",
                      "max_completion_length": 8, "log_completions": False})  # fmt: skip
    fields = {k: p[k] for k in ("rewards", "reward_weights", "target", "tau", "rlmf", "grpo",
                                "reward_options", "peft")}  # fmt: skip
    fields["rewards"] = tuple(fields["rewards"])
    fields["reward_weights"] = tuple(fields["reward_weights"])
    cfg = TrainConfig(model=str(path), dataset="-", output_dir=str(tmp_path / "out"), **fields)
    trainer = make_trainer(cfg, model, tok, Dataset.from_list(rows))
    assert isinstance(trainer, RLMFTrainer) and isinstance(trainer.model, PeftModel)
    lora = {n.split(".lora_A")[0].rsplit(".", 1)[-1] for n, _ in trainer.model.named_parameters()
            if "lora_A" in n}  # fmt: skip
    assert lora == {"c_attn", "c_proj", "c_fc"}
    assert trainer.model.peft_config["default"].r == 64
    assert trainer.args.optim == "adamw_torch"  # 8-bit AdamW needs a GPU: replaced on CPU
    trainer.train()
    assert trainer.state.global_step == 2
    assert any("rlmf/advantage_mean_abs" in e for e in trainer.state.log_history)


def test_sft_rows_tag_each_own_answer_with_its_agreement():
    """The warm-up data: every sampled answer with its agreement among the item's samples,
    as the official pre-SFT tags answers with their intrinsic confidence."""
    from rlmf_plugin.sft import format_completion, sft_rows

    rows = [
        {"prompt": "Q1", "benchmark": "mmlu_pro", "sample_answers": ["A", "A", "B", ""],
         "sample_correct": [1.0, 1.0, 0.0, 0.0]},
        {"prompt": [{"role": "user", "content": "Q2"}], "benchmark": "mmlu_pro",
         "sample_answers": ["C"], "sample_correct": [0.0]},
        {"prompt": "Q3", "benchmark": "mmlu_pro"},  # no samples: skipped
    ]  # fmt: skip
    out = sft_rows(rows)
    assert [r["completion"] for r in out[:3]] == [
        "A\nConfidence: 50\nMeta: 100", "A\nConfidence: 50\nMeta: 100",
        "B\nConfidence: 25\nMeta: 100",
    ]  # fmt: skip
    assert out[3] == {"prompt": rows[1]["prompt"], "completion": [
        {"role": "assistant", "content": "C\nConfidence: 100\nMeta: 100"}]}  # fmt: skip
    assert len(out) == 4 and format_completion("7", 0.333, None) == "7\nConfidence: 33"
