"""Stage two: the phrase map's calibration (simulated and real runs), the rewriters, the CLI."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_metrics import simulate_records
from metacog_tasks.benchmarks import get_benchmark
from metacog_tasks.sim import preset_params
from rlmf_plugin.verbalize import HEDGES, PhraseMap, calibrate_phrases, rewrite_rule


def _sim(seed: int) -> pd.DataFrame:
    """Numeric-probe confidences of 20 simulated models on 400 items (overconfident, as LLMs)."""
    return simulate_records(preset_params("paper"), n_models=20, items_per_benchmark=400,
                            benchmarks=["mmlu_pro"], probes=("numeric",), seed=seed)  # fmt: skip


def _in_bin(conf: pd.Series, b: dict) -> pd.Series:
    return ((conf > b["low"]) | ((b["low"] == 0.0) & (conf >= 0.0))) & (conf <= b["high"])


@pytest.fixture(scope="module")
def sim_map() -> PhraseMap:
    df = _sim(0)
    return calibrate_phrases(df["confidence"], df["correct"], items=df["item_id"], min_count=100)


def test_bins_partition_the_confidence_axis(sim_map: PhraseMap):
    bins = sim_map.bins
    assert bins[0]["low"] == 0.0 and bins[-1]["high"] == 1.0
    assert all(a["high"] == b["low"] for a, b in itertools.pairwise(bins))
    claims = [b["claim"] for b in bins]
    assert claims == sorted(claims) and len(set(claims)) == len(claims)
    assert all(b["n_fit"] >= 100 for b in bins)
    assert sim_map.hedge(0.0).phrase == bins[0]["phrase"]
    assert sim_map.hedge(1.0).phrase == bins[-1]["phrase"]
    assert sim_map.hedge(float("nan")) is None and sim_map.hedge(1.2) is None


def test_each_phrase_earns_its_claim_on_a_fresh_population(sim_map: PhraseMap):
    """Fitted on population seed 0, checked by hand on seed 1 (other models, other items)."""
    fresh = _sim(1)
    bank = sorted(h.claim for h in HEDGES)
    used = 0
    for b in sim_map.bins:
        sel = fresh[_in_bin(fresh["confidence"], b)]
        n, acc = len(sel), sel["correct"].mean()
        if n < 100:
            continue
        used += 1
        i = bank.index(b["claim"])
        lo = (bank[i - 1] + bank[i]) / 2 if i else 0.0
        hi = (bank[i + 1] + bank[i]) / 2 if i + 1 < len(bank) else 1.0
        se = math.sqrt(acc * (1 - acc) / n)
        # nearer its own claim than any other phrase's, up to 3 standard errors
        assert lo - 3 * se <= acc <= hi + 3 * se, (b["phrase"], n, acc)
    assert used >= 5
    # the uncalibrated reading (each confidence to the nearest claim) is far worse
    v = sim_map.validation
    assert v["verbal_ece"] < 0.04 and v["naive_ece"] > 3 * v["verbal_ece"]
    assert all(r["consistent"] for r in v["per_hedge"] if r["n"] >= 100)


def test_calibration_on_real_frontier_runs(realruns_dir: Path):
    """16 frontier LLMs x 500 MMLU items, verbalized confidence (cacioli_mmlu500_verbalized)."""
    df = pd.read_csv(realruns_dir / "cacioli_mmlu500_verbalized" / "tidy.csv").dropna()
    m = calibrate_phrases(df["confidence"], df["correct"], items=df["item_id"], min_count=50)
    v = m.validation
    # Held out by item: every phrase's accuracy reaches its own cell, and the map is far better
    # calibrated than reading the stated number as the phrase's claim (LLMs are overconfident).
    assert all(r["consistent"] for r in v["per_hedge"]), v["per_hedge"]
    assert v["verbal_ece"] < 0.03 < 0.08 < v["naive_ece"]
    assert m.hedge(1.0).claim < 1.0  # "100%" does not earn "certainly" from these models


def test_calibration_input_errors():
    with pytest.raises(ValueError, match="need 60"):
        calibrate_phrases([0.5] * 10, [1] * 10, min_count=30)
    with pytest.raises(ValueError, match="0/1"):
        calibrate_phrases([0.5] * 100, [0.5] * 100)


MMLU = get_benchmark("mmlu_pro")
SQUAD = get_benchmark("squad")
MATH = get_benchmark("mathbench")


@pytest.mark.parametrize("bench", [MMLU, SQUAD, MATH], ids=lambda b: b.name)
def test_rule_rewrite_keeps_the_grade(sim_map: PhraseMap, bench):
    from rlmf_plugin._grading import ItemGrader

    grader = ItemGrader()
    rng = np.random.default_rng(0)
    for item in bench.load("bundled")[:6]:
        for answer in (bench.reference_response(item), bench.wrong_response(item, rng)):
            text = f"{answer}\nConfidence: 72\nMeta: 60"
            ref = {"benchmark": bench.name, "item_id": item.item_id, "source": "bundled"}
            out = rewrite_rule(text, sim_map, item=ref, grader=grader)
            hedge = sim_map.hedge(0.72)
            assert out.phrase == hedge.phrase and out.grade_kept is True
            assert "Confidence" not in out.text and "Meta" not in out.text
            assert bench.grade(item, out.text).correct == bench.grade(item, answer).correct
            template_head = hedge.template.split("{answer}")[0]
            assert template_head in out.text or hedge.phrase in out.text


def test_rule_rewrite_without_item_or_confidence(sim_map: PhraseMap):
    out = rewrite_rule("Paris\nConfidence: 99", sim_map)
    assert out.grade_kept is None and out.text.startswith("Paris\n")
    assert sim_map.hedge(0.99).template.format(answer="Paris") in out.text
    same = rewrite_rule("no number here", sim_map)
    assert same.text == "no number here" and same.phrase is None


def test_llm_rewriter_with_the_simulated_editor(sim_map: PhraseMap):
    """metacog-sim answers the <text>/<phrases> request offline, through Inspect's model API."""
    from rlmf_plugin.verbalize import rewrite_llm

    items = SQUAD.load("bundled")[:4]
    texts = [f"{SQUAD.reference_response(it)}\nConfidence: {c}\nMeta: 80"
             for it, c in zip(items, (15, 45, 75, 97))]  # fmt: skip
    refs = [{"benchmark": "squad", "item_id": it.item_id, "source": "bundled"} for it in items]
    out = rewrite_llm(texts, sim_map, "metacog-sim/m01", items=refs,
                      model_args={"data": "bundled", "benchmarks": "squad"})  # fmt: skip
    for text, o, c in zip(texts, out, (0.15, 0.45, 0.75, 0.97)):
        assert o.rewriter == "llm" and o.grade_kept is True
        assert o.phrase == sim_map.hedge(c).phrase
        assert "Confidence" not in o.text and o.text.endswith(text.splitlines()[0])


def test_llm_replies_that_break_the_rules_fall_back(sim_map: PhraseMap, monkeypatch):
    import rlmf_plugin._inspect_model as im
    from rlmf_plugin.verbalize import rewrite_llm

    item = MMLU.load("bundled")[0]
    right, wrong = (
        MMLU.reference_response(item),
        MMLU.wrong_response(item, np.random.default_rng(0)),
    )
    phrase = sim_map.hedge(0.8).phrase
    replies = [
        (f"{right}\n{phrase}.", None),  # fine
        (f"{right}\nConfidence: 80", None),  # numeric line left
        (f"{right}\nno hedge at all", None),  # no offered phrase
        (f"{wrong}\n{phrase}.", None),  # grade changed
        (None, "RateLimitError: slow down"),  # provider error
    ]
    monkeypatch.setattr(im, "generate_all", lambda model, prompts, **kw: replies[: len(prompts)])
    ref = {"benchmark": "mmlu_pro", "item_id": item.item_id, "source": "bundled"}
    out = rewrite_llm([f"{right}\nConfidence: 80"] * 5, sim_map, "any/model", items=[ref] * 5)
    assert [o.rewriter for o in out] == [
        "llm", "rule (llm fallback: numeric confidence left)",
        "rule (llm fallback: no offered phrase)", "rule (llm fallback: grade changed)",
        "rule (llm fallback: error: RateLimitError: slow down)",
    ]  # fmt: skip
    assert all(o.grade_kept for o in out)


def test_verbalize_cli(tmp_path: Path):
    records = _sim(0)
    records.to_csv(tmp_path / "calib.csv", index=False)
    items = MATH.load("bundled")[:5]
    rows = [{"prompt": [{"role": "user", "content": MATH.solve_prompt(it)}],
             "completion": f"{MATH.reference_response(it)}\nConfidence: {20 + 15 * i}\nMeta: 70",
             "benchmark": "mathbench", "item_id": it.item_id, "source": "bundled"}
            for i, it in enumerate(items)]  # fmt: skip
    rows.append({"prompt": "p", "completion": "no confidence here"})
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "metacog_tasks.cli", "rlmf", "verbalize", str(tmp_path / "in.jsonl"),
         "-o", str(tmp_path / "out"), "--calibrate-on", str(tmp_path / "calib.csv"),
         "--min-count", "100"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "rewrote 5 of 6 completions (1 without a confidence" in proc.stdout
    out = [json.loads(x) for x in (tmp_path / "out" / "verbalized.jsonl").read_text().splitlines()]
    assert [o["grade_kept"] for o in out] == [True] * 5 + [None]
    mapping = PhraseMap.from_dict(json.loads((tmp_path / "out" / "mapping.json").read_text()))
    for o in out[:5]:
        assert o["phrase"] == mapping.hedge(o["stated_confidence"]).phrase
    from datasets import load_from_disk

    sft = load_from_disk(str(tmp_path / "out" / "sft" / "dataset"))
    assert len(sft) == 5 and sft[0]["completion"][0]["role"] == "assistant"
    assert (tmp_path / "out" / "phrases.png").stat().st_size > 1000
    # a saved map is reused as it is
    from rlmf_plugin.verbalize import verbalize

    verbalize(
        [tmp_path / "in.jsonl"], tmp_path / "again", mapping=tmp_path / "out" / "mapping.json"
    )
    again = (tmp_path / "again" / "verbalized.jsonl").read_text()
    assert again == (tmp_path / "out" / "verbalized.jsonl").read_text()
