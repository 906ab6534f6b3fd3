"""RLMF advantages against the official equation, and a few GRPO steps on a tiny model."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch

from rlmf_plugin.trainer import rlmf_advantages

WEIGHTS = [0.5, 1.0, 3.0, 0.0]  # format, correctness, faithful, metacog score
FAITH, MC = 2, 3


def _official(rows: list[list[float]], weights, group: int, k: float, piecewise: bool):
    """The official 'mf' advantage, written out per completion (NaN = None, skipped)."""
    out = []
    for g0 in range(0, len(rows), group):
        grp = rows[g0 : g0 + group]
        o = [
            sum(w * r for i, (w, r) in enumerate(zip(weights, row)) if i not in (FAITH, MC)
                and not math.isnan(r))
            for row in grp
        ]  # fmt: skip
        f = [weights[FAITH] * row[FAITH] for row in grp]
        o_bar = sum(o) / len(o)
        f_ok = [x for x in f if not math.isnan(x)]
        f_bar = sum(f_ok) / len(f_ok) if f_ok else math.nan
        for row, oj, fj in zip(grp, o, f):
            z = -1.0 if math.isnan(row[MC]) else row[MC]
            df = 0.0 if math.isnan(fj) else fj - f_bar
            if df > 0:
                a = (oj - o_bar) + df * max(0.0, k + z)
            elif piecewise:
                a = (oj - o_bar) + df * max(0.0, k + 1 - z)
            else:
                a = (oj - o_bar) + df
            out.append(a)
    return out


GROUPS = [
    [1, 1, 0.91, 0.99],
    [0, 0, 0.36, 0.19],
    [1, 0, -1.0, -1.0],
    [1, 1, 0.75, 0.5],
    # second group: one faithfulness None, one Z that cancels k
    [1, 0, 0.96, -1.0],
    [0, 0, float("nan"), float("nan")],
    [1, 1, 0.99, 0.0],
    [0, 1, 0.5, 1.0],
]


@pytest.mark.parametrize("k", [1.0, 0.5, 2.0])
@pytest.mark.parametrize("piecewise", [False, True])
def test_advantages_match_the_official_equation(k, piecewise):
    got = rlmf_advantages(
        torch.tensor(GROUPS), WEIGHTS, faith_index=FAITH, mc_index=MC, num_generations=4, k=k,
        piecewise=piecewise,
    )  # fmt: skip
    want = _official(GROUPS, WEIGHTS, 4, k, piecewise)
    assert got.tolist() == pytest.approx(want, abs=1e-6)


def test_advantages_by_hand_first_group():
    # o = 0.5*fmt + corr: [1.5, 0, 0.5, 1.5], mean 0.875; f = 3*faith: [2.73, 1.08, -3, 2.25],
    # mean 0.765. Above-mean rows scale by max(0, 1 + Z): 1.99 and 1.5.
    got = rlmf_advantages(
        torch.tensor(GROUPS[:4]), WEIGHTS, faith_index=FAITH, mc_index=MC, num_generations=4
    )
    want = [
        0.625 + (2.73 - 0.765) * 1.99,
        -0.875 + (1.08 - 0.765) * 1.19,
        -0.375 + (-3 - 0.765),
        0.625 + (2.25 - 0.765) * 1.5,
    ]
    assert got.tolist() == pytest.approx(want, abs=1e-5)


def test_unscorable_rows_get_zero_and_bad_groups_raise():
    nan = float("nan")
    r = torch.tensor([[nan] * 4, [1, 1, 0.5, 0.5], [0, 0, 0.2, 0.1], [nan] * 4])
    got = rlmf_advantages(r, WEIGHTS, faith_index=FAITH, mc_index=MC, num_generations=4)
    assert got[0] == 0.0 and got[3] == 0.0
    # the two scorable rows are centred on their own mean: o = [1.5, 0], f = [1.5, 0.6]
    assert got[1:3].tolist() == pytest.approx([0.75 + 0.45 * 1.5, -0.75 - 0.45], abs=1e-6)
    alone = rlmf_advantages(r, WEIGHTS, faith_index=FAITH, mc_index=MC, num_generations=2)
    assert alone.tolist() == [0.0, 0.0, 0.0, 0.0]  # a completion alone in its group
    with pytest.raises(ValueError, match="groups of 3"):
        rlmf_advantages(r, WEIGHTS, faith_index=FAITH, mc_index=MC, num_generations=3)


@pytest.mark.slow
def test_grpo_steps_on_the_tiny_model(tmp_path: Path):
    """A few RLMF steps on a tiny GPT-2 (tests/tinymodel.py), the full reward set."""
    from rlmf_plugin.train import TrainConfig
    from tests.tinymodel import build_tiny_model

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    model_dir = build_tiny_model(tmp_path / "tiny")
    data = _mathbench_dataset(tmp_path / "data")
    cfg = TrainConfig(
        model=str(model_dir),
        dataset=str(data),
        output_dir=str(tmp_path / "run"),
        reward_weights=(0.5, 1.0, 0.5, 0.05, 3.0, 0.0),
        rlmf={"advantage_k": 1.0},
        warmstart={"steps": 120, "lr": 0.01},
        torch_threads=1,
        grpo={
            "use_cpu": True, "bf16": False, "per_device_train_batch_size": 8,
            "num_generations": 4, "max_completion_length": 40, "learning_rate": 1e-3,
            "max_steps": 3, "logging_steps": 1, "save_strategy": "no", "temperature": 1.0,
        },
    )  # fmt: skip
    threads = torch.get_num_threads()
    try:
        _train_and_check(cfg)
    finally:
        torch.set_num_threads(threads)


def _train_and_check(cfg) -> None:
    from rlmf_plugin.train import build_trainer

    trainer = build_trainer(cfg)
    names = list(trainer.reward_func_names)
    assert names == [
        "format_reward", "correctness_reward", "brier_reward", "log_score_reward",
        "faithful_reward", "metacog_score",
    ]  # fmt: skip
    assert type(trainer).__name__ == "RLMFTrainer" and trainer.scale_rewards == "none"
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()

    logs = [e for e in trainer.state.log_history if "reward" in e]
    assert len(logs) == 3
    for entry in logs:
        for name in names:
            assert f"rewards/{name}/mean" in entry
    # The last batch's logged advantages are the RLMF equation of its logged rewards.
    rewards = torch.tensor([list(trainer._logs["rewards"][n]) for n in names]).T
    logged = torch.tensor(list(trainer._logs["advantages"]))
    want = rlmf_advantages(
        rewards, trainer.reward_weights, faith_index=4, mc_index=5, num_generations=4
    )
    assert logged.tolist() == pytest.approx(want.tolist(), abs=1e-5)
    # Rewards are those of the functions on the logged completions (format: 0/1).
    assert set(rewards[:, 0].tolist()) <= {0.0, 1.0}
    assert any(e["rlmf/advantage_mean_abs"] > 0 for e in logs)
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p)]
    assert changed, "no parameter changed"


def _mathbench_dataset(out: Path) -> Path:
    """A GRPO dataset built from a record table of the simulated population (mathbench)."""
    import pandas as pd

    from metacog_tasks.benchmarks import get_benchmark
    from metacog_tasks.sim import SimResponder
    from rlmf_plugin.dataset import build_dataset

    bench = get_benchmark("mathbench")
    items = [it for it in bench.load("bundled") if it.item_id.endswith("cloze_en:0")]
    rows = []
    for m in ("m01", "m02", "m03"):
        sim = SimResponder(m, sources="bundled", benchmarks=["mathbench"])
        for it in items:
            cell = sim.cell("mathbench", it.item_id, "prospective")
            rows.append({
                "model": m, "benchmark": "mathbench", "item_id": it.item_id,
                "probe": "prospective", "confidence": float(cell["confidence"]),
                "confidence_kind": "verbal_binary", "correct": float(cell["correct"]),
            })  # fmt: skip
    table = out.parent / "records.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(table, index=False)
    build_dataset([table], out)
    return out


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "rlmf"


@pytest.mark.parametrize("name", ["tiny-cpu.yaml", "multi-gpu.yaml", "vllm.yaml"])
def test_example_configs_are_valid(name, tmp_path):
    """Every example config parses and its GRPO settings build a GRPOConfig (here on CPU)."""
    from trl import GRPOConfig

    from rlmf_plugin.rewards import make_rewards
    from rlmf_plugin.train import load_config

    cfg = load_config(EXAMPLES / name)
    assert len(make_rewards(cfg.rewards)) == len(cfg.reward_weights)
    grpo = {**cfg.grpo, "output_dir": str(tmp_path), "use_cpu": True, "bf16": False}
    grpo["gradient_checkpointing"] = False
    # one CPU process here, 4 GPUs there: keep a whole group per generation batch
    grpo["per_device_train_batch_size"] = max(grpo["per_device_train_batch_size"], 32)
    args = GRPOConfig(**grpo)
    assert cfg.rlmf is not None and args.scale_rewards in ("none", "group")
    assert cfg.grpo.get("scale_rewards", "none") == "none"  # RLMF's setting (default there)
    names = [f.__name__ for f in make_rewards(cfg.rewards)]
    assert cfg.reward_weights[names.index("metacog_score")] == 0.0


def test_config_errors_name_the_file(tmp_path):
    from rlmf_plugin.train import load_config

    bad = tmp_path / "bad.yaml"
    bad.write_text("model: x\ndataset: y\noutput_dir: z\nrewards: [format, nope]\n")
    with pytest.raises(ValueError, match=r"bad\.yaml: unknown reward\(s\) \['nope'\]"):
        load_config(bad)
    bad.write_text(
        "model: x\ndataset: y\noutput_dir: z\nrewards: [format]\nreward_weights: [1, 2]\n"
    )
    with pytest.raises(ValueError, match="2 reward_weights for 1 rewards"):
        load_config(bad)
    bad.write_text("model: x\ndataset: y\n")
    with pytest.raises(ValueError, match="`output_dir` is required"):
        load_config(bad)
