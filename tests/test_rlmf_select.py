"""``metacog rlmf select``: each strategy against an independent ranking, files, the model path."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rlmf_plugin.select import select_rows


def _rows(n: int = 12, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "benchmark": "squad" if i % 3 else "mmlu_pro",
            "item_id": f"q{i}",
            "meta_confidence": float(rng.random()),
            "stated_confidence": float(rng.random()),
            "intrinsic_confidence": float(rng.random()),
            "accuracy": float(rng.random()),
        }
        for i in range(n)
    ]


def _ids(rows) -> set[str]:
    return {r["item_id"] for r in rows}


@pytest.mark.parametrize("n", [1, 4, 5])
def test_metacognitive_takes_the_lowest_and_highest_meta_confidence(n):
    rows = _rows()
    rows[0]["meta_confidence"] = None  # not scored: left out, counted
    rows[1]["meta_confidence"] = 1.7  # outside [0, 1]: invalid
    valid = sorted((r["meta_confidence"], r["item_id"]) for r in rows[2:])
    n_low = math.ceil(n / 2)
    want = {i for _, i in valid[:n_low]} | {i for _, i in valid[len(valid) - (n - n_low) :]}
    chosen, result = select_rows(rows, "metacognitive", n, seed=3)
    assert _ids(chosen) == want
    assert result.n_invalid == 2 and set(result.invalid_examples) == {"mmlu_pro/q0", "squad/q1"}
    assert [r["item_id"] for r in chosen] == [r["item_id"] for r in rows if r["item_id"] in want]
    assert result.low_cut == valid[n_low - 1][0]
    if n > 1:
        assert result.high_cut == valid[len(valid) - (n - n_low)][0]
    assert all(r["selection_score"] == r["meta_confidence"] for r in chosen)


def test_high_low_ties_are_broken_by_the_seed_only():
    rows = [{"benchmark": "b", "item_id": f"q{i}", "meta_confidence": 0.5} for i in range(20)]
    a = _ids(select_rows(rows, "metacognitive", 4, seed=1)[0])
    assert a == _ids(select_rows(rows, "metacognitive", 4, seed=1)[0])
    assert any(_ids(select_rows(rows, "metacognitive", 4, seed=s)[0]) != a for s in range(2, 6))


def test_active_means_ranks_harness_faithfulness_high_and_low():
    rows = _rows(10, seed=1)
    faith = sorted((1 - abs(r["stated_confidence"] - r["intrinsic_confidence"]), r["item_id"])
                   for r in rows)  # fmt: skip
    chosen, _ = select_rows(rows, "active-means", 4)
    assert _ids(chosen) == {i for _, i in faith[:2] + faith[-2:]}


def test_uncertainty_and_deviation_take_the_top():
    rows = _rows(10, seed=2)
    rows[3]["intrinsic_confidence"] = None
    scored = [r for r in rows if r["item_id"] != "q3"]
    unc = sorted((1 - r["intrinsic_confidence"], r["item_id"]) for r in scored)
    assert _ids(select_rows(rows, "uncertainty", 3)[0]) == {i for _, i in unc[-3:]}
    dev = sorted((abs(r["stated_confidence"] - r["accuracy"]), r["item_id"]) for r in rows)
    chosen, result = select_rows(rows, "deviation", 3)
    assert _ids(chosen) == {i for _, i in dev[-3:]}
    assert result.low_cut is None and result.high_cut == dev[-3][0]


def test_random_is_seeded_and_uniform():
    rows = _rows(10)
    assert _ids(select_rows(rows, "random", 3, seed=7)[0]) == _ids(
        select_rows(rows, "random", 3, seed=7)[0]
    )
    counts = pd.Series(
        [r["item_id"] for s in range(600) for r in select_rows(rows, "random", 3, seed=s)[0]]
    ).value_counts()
    assert len(counts) == 10
    assert stats.chisquare(counts.to_numpy()).pvalue > 1e-3  # 180 expected per item


def test_stratified_quotas_follow_the_benchmark_shares():
    rows = _rows(12)  # 4 mmlu_pro, 8 squad
    chosen, result = select_rows(rows, "metacognitive", 6, stratify=True)
    by = pd.Series([r["benchmark"] for r in chosen]).value_counts().to_dict()
    assert by == {"mmlu_pro": 2, "squad": 4}
    squad = sorted((r["meta_confidence"], r["item_id"]) for r in rows if r["benchmark"] == "squad")
    assert {i for _, i in squad[:2] + squad[-2:]} <= _ids(chosen)
    assert result.stats["selected"]["benchmarks"] == {"mmlu_pro": 2, "squad": 4}


def test_errors_say_what_is_missing():
    rows = _rows(4)
    for r in rows[:3]:
        r["meta_confidence"] = None
    with pytest.raises(ValueError, match=r"needs 2 items with a valid meta_confidence.*only 1"):
        select_rows(rows, "metacognitive", 2)
    with pytest.raises(ValueError, match="unknown strategy"):
        select_rows(rows, "smart", 2)
    with pytest.raises(ValueError, match="positive integer"):
        select_rows(rows, "random", 0)


def test_select_dataset_writes_the_selection(tmp_path: Path):
    from rlmf_plugin._io import load_rows, write_rows
    from rlmf_plugin.select import select_dataset

    rows = _rows(12)
    write_rows(tmp_path / "data", [{**r, "prompt": f"Q {r['item_id']}"} for r in rows])
    with pytest.raises(ValueError, match="no `meta_confidence` column; give --model"):
        write_rows(tmp_path / "bare", [{"benchmark": "b", "item_id": "1", "prompt": "x"}])
        select_dataset(tmp_path / "bare", tmp_path / "o", strategy="metacognitive", n=1)
    result = select_dataset(tmp_path / "data", tmp_path / "sel", strategy="deviation", n=4)
    kept = load_rows(tmp_path / "sel")
    assert [f"{r['benchmark']}/{r['item_id']}" for r in kept] == list(result.selected)
    saved = json.loads((tmp_path / "sel" / "selection.json").read_text())
    assert saved["n_selected"] == 4 and saved["strategy"] == "deviation"
    table = pd.read_csv(tmp_path / "sel" / "candidates.csv", dtype={"item_id": str})
    assert table["selected"].sum() == 4
    top = table.nlargest(4, "score")
    assert set(top["item_id"]) == {r["item_id"] for r in kept}
    assert (tmp_path / "sel" / "selection.png").stat().st_size > 1000


def test_metacognitive_asks_the_simulated_model(tmp_path: Path):
    """The model's meta-confidence comes from its own answers (Inspect, metacog-sim offline)."""
    from metacog_tasks.benchmarks import get_benchmark
    from metacog_tasks.sim import SimResponder
    from metacog_tasks.sim._rlmf import META_NOISE_SD
    from rlmf_plugin.dataset import build_dataset
    from rlmf_plugin.select import select_dataset

    bench = get_benchmark("squad")
    items = bench.load("bundled")[:10]
    sims = {m: SimResponder(m, sources="bundled", benchmarks=["squad"]) for m in ("m01", "m02")}
    records = pd.DataFrame([
        {"model": m, "benchmark": "squad", "item_id": it.item_id, "probe": "numeric",
         "confidence": sim.cell("squad", it.item_id, "numeric")["numeric"] / 100,
         "confidence_kind": "verbal_numeric",
         "correct": float(sim.cell("squad", it.item_id)["correct"])}
        for m, sim in sims.items() for it in items
    ])  # fmt: skip
    records.to_csv(tmp_path / "records.csv", index=False)
    build_dataset([tmp_path / "records.csv"], tmp_path / "data", chat=True)
    result = select_dataset(
        tmp_path / "data", tmp_path / "sel", strategy="metacognitive", n=4,
        model="metacog-sim/m01", model_args={"data": "bundled", "benchmarks": "squad"},
        judgement="inline",  # the simulated model writes the RLMF format, Meta included
    )  # fmt: skip
    table = pd.read_csv(tmp_path / "sel" / "candidates.csv", dtype={"item_id": str})
    assert table["score"].notna().all()
    # The simulated judgement, by hand: 1 - |stated - p_correct| + META_NOISE_SD * z, z its
    # standard normal draw for (item, "meta"), clipped to [0, 1], in whole percent.
    sim = sims["m01"]
    for item_id, score in zip(table["item_id"], table["score"]):
        stated = sim.cell("squad", item_id, "numeric")["numeric"] / 100
        z = sim.population.rng("squad", item_id, "m01", "meta").standard_normal()
        truth = 1 - abs(stated - sim.cell("squad", item_id)["p_correct"]) + META_NOISE_SD * z
        assert score == pytest.approx(min(max(truth, 0.0), 1.0), abs=0.005 + 1e-9)
    ordered = table.sort_values("score")["item_id"].tolist()
    assert set(result.selected) == {f"squad/{i}" for i in ordered[:2] + ordered[-2:]}
