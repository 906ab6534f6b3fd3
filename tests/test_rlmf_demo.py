"""`metacog rlmf demo`: the synthetic task, the paired bootstrap, and a quick run end to end."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rlmf_plugin.demo.run import _attempts, _compare
from rlmf_plugin.demo.task import (
    BENCHMARK,
    TaskGrader,
    items,
    label_distribution,
    split_items,
)
from rlmf_plugin.evaluate import METRICS


def test_noisy_supervision_by_item():
    its = items()
    assert len(its) == 180 and len({it.item_id for it in its}) == 180
    for it in its:
        dist = label_distribution(it)
        assert sum(dist.values()) == pytest.approx(1.0) and it.answer in dist
        assert max(dist.values()) == dist[it.answer]  # the right answer is the mode
    assert {len(label_distribution(it)) for it in its} == {1, 2, 3}


def test_splits_are_disjoint_and_stratified():
    s = split_items()
    ids = {k: {it.item_id for it in v} for k, v in s.items()}
    assert not (ids["train"] & ids["val"]) and not (ids["train"] & ids["test"])
    assert not (ids["val"] & ids["test"])
    assert (len(ids["val"]), len(ids["test"]), len(ids["train"])) == (27, 54, 99)
    assert sorted({it.b for it in s["test"]}) == list(range(1, 10))
    assert split_items() == s  # seeded


def test_grader_reads_integers_only():
    g = TaskGrader()
    assert g.verdict(BENCHMARK, "3+4", "x", "7").correct == 1.0
    assert g.extract(BENCHMARK, "3+4", "x", " 8 ") == (g.verdict(BENCHMARK, "3+4", "x", "8"), "8")
    assert g.verdict(BENCHMARK, "3+4", "x", "seven").correct == 0.0
    assert g.verdict(BENCHMARK, "99+99", "x", "198").status == "bad_label"
    assert g.verdict("mmlu_pro", "3+4", "x", "7").status == "bad_label"


def test_attempts_take_the_training_target():
    it = next(i for i in items() if i.item_id == "3+4")
    texts = ["7\nConfidence: 50\nMeta: 90", "7\nConfidence: 50\nMeta: 90",
             "8\nConfidence: 50\nMeta: 90", "x\nConfidence: 99"]  # fmt: skip
    t = _attempts([texts], [it])
    assert t["intrinsic"].tolist() == [0.5, 0.5, 0.25, 0.25]
    assert t["correct"].tolist() == [1.0, 1.0, 0.0, 0.0]
    assert t["strict"].tolist() == [True, True, True, False]


def _table(rng, faith_noise: float, n_items: int = 40, k: int = 8) -> pd.DataFrame:
    g = rng.choice([0.25, 0.5, 1.0], size=(n_items, 1)).repeat(k, axis=1).ravel()
    c = np.clip(g + rng.normal(0, faith_noise, g.size), 0, 1)
    return pd.DataFrame({
        "item_id": np.repeat([f"i{i}" for i in range(n_items)], k), "confidence": c,
        "correct": (rng.random(g.size) < g).astype(float), "intrinsic": g,
    })  # fmt: skip


def test_paired_bootstrap_sees_a_real_difference_and_none_where_there_is_none():
    rng = np.random.default_rng(0)
    tables = {}
    for s in range(3):
        tables[("rlmf", s)] = _table(np.random.default_rng([s, 1]), 0.05)
        tables[("standard", s)] = _table(np.random.default_rng([s, 1]), 0.05)  # identical
        tables[("correctness", s)] = _table(np.random.default_rng([s, 1]), 0.4)  # unfaithful
    out = _compare(tables, ("correctness", "standard", "rlmf"), [0, 1, 2], 300, seed=0)
    same = out["rlmf_minus_standard"]
    for m in METRICS:
        assert same[m]["difference"] == pytest.approx(0.0, abs=1e-12)
        assert not same[m]["better"] and not same[m]["worse"]
    vs = out["rlmf_minus_correctness"]["mfg"]
    assert vs["difference"] > 0.1 and vs["ci_low"] > 0 and vs["better"]
    assert len(vs["per_seed"]) == 3 and all(d > 0 for d in vs["per_seed"])
    assert rng is not None


@pytest.mark.slow
def test_quick_demo_end_to_end(tmp_path: Path):
    """`metacog rlmf demo --quick`: SFT, the three arms' GRPO, evaluation, report."""
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "metacog_tasks.cli", "rlmf", "demo", "--quick", "-o", str(out),
         "--rl-steps", "6", "--sft-steps", "60", "--bootstrap", "50"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rlmf_minus_standard" in proc.stdout and "MFG" in proc.stdout
    res = json.loads((out / "results.json").read_text())
    assert {p["arm"] for p in res["policies"]} == {"sft", "correctness", "standard", "rlmf"}
    assert set(res["comparisons"]) == {"rlmf_minus_correctness", "rlmf_minus_standard"}
    for c in res["comparisons"].values():
        for m in ("mfg", "cmfg", "accuracy", "auroc", "brier"):
            assert c[m]["ci_low"] is None or c[m]["ci_low"] <= c[m]["ci_high"]
    assert all(p["n_attempts"] == 54 * 8 for p in res["policies"])
    assert all(len(v) >= 1 for v in res["curves"].values())
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 3 and "RLMF minus" in html
    assert all(math.isfinite(p["metrics"]["mfg"]) for p in res["policies"])
