"""``metacog rlmf eval``: metrics against independent computations, simulated runs whose
calibration is known, real frontier-model runs, and the harness path (Inspect ``--epochs``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from metacog_metrics import ece
from rlmf_plugin.evaluate import (
    attempt_table,
    evaluate_runs,
    load_attempts,
    result_frame,
    run_metrics,
)
from rlmf_plugin.simulate import simulate_sampled_records

REPO = Path(__file__).resolve().parents[1]


def _records(rows) -> pd.DataFrame:
    cols = ["item_id", "epoch", "confidence", "correct", "answer"]
    df = pd.DataFrame(rows, columns=cols)
    return df.assign(model="m", benchmark="squad", probe="numeric",
                     confidence_kind="verbal_numeric")  # fmt: skip


def _table(tmp_path: Path, rows) -> pd.DataFrame:
    path = tmp_path / "runs.csv"
    _records(rows).to_csv(path, index=False)
    return attempt_table(load_attempts([path]))


def test_intrinsic_confidence_by_hand(tmp_path: Path):
    t = _table(tmp_path, [
        ("q1", 1, 0.9, 1, "Paris"), ("q1", 2, 0.8, 1, "paris"), ("q1", 3, 0.2, 0, "Lyon"),
        ("q2", 1, 0.5, 0, "The Nile"), ("q2", 2, 0.5, 0, "nile"), ("q2", 3, 0.5, 0, "Amazon"),
        ("q2", 4, 0.5, 1, "Congo"),
        ("q3", 1, 0.7, 1, "x"),  # one attempt: no intrinsic confidence
    ])  # fmt: skip
    g = dict(zip(zip(t["item_id"], t["attempt"]), t["intrinsic"]))
    assert [g["q1", i] for i in (1, 2, 3)] == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    # "The Nile" and "nile" are one answer under SQuAD's normaliser
    assert [g["q2", i] for i in (1, 2, 3, 4)] == pytest.approx([0.5, 0.5, 0.25, 0.25])
    assert np.isnan(g["q3", 1])
    m = run_metrics(t)
    faith = [1 - abs(c - gi) for c, gi in zip(t["confidence"], t["intrinsic"]) if gi == gi]
    assert m["mfg"] == pytest.approx(np.mean(faith))
    # cMFG: bins of g with answers: [.2,.3) -> .25 and 1/3; [.5,.6) -> .5; [.6,.7) -> 2/3
    by_bin = {2: [], 3: [], 5: [], 6: []}
    for c, gi in zip(t["confidence"], t["intrinsic"]):
        if gi == gi:
            by_bin[int(gi * 10)].append(1 - abs(c - gi))
    assert m["cmfg"] == pytest.approx(np.mean([np.mean(v) for v in by_bin.values()]))


def _official_cmfg_star(f, g, num_bins=10):
    """The authors' get_cmfg_star point estimate, transcribed (unit weights)."""
    f, g = np.asarray(f, float), np.asarray(g, float)
    n = len(f)
    num_bins = min(num_bins, n)
    idx = np.argsort(g, kind="stable")
    fs, cs = f[idx], g[idx]
    size, rem = n // num_bins, n % num_bins
    slices, start = [], 0
    for b in range(num_bins):
        end = start + size + (1 if b < rem else 0)
        slices.append((start, end))
        start = end
    ws, fh = [], []
    for b, (s, e) in enumerate(slices):
        lo = cs[s] if b == 0 else (cs[slices[b - 1][1] - 1] + cs[s]) / 2
        hi = cs[e - 1] if b == num_bins - 1 else (cs[e - 1] + cs[slices[b + 1][0]]) / 2
        ws.append(hi - lo)
        fh.append(fs[s:e].mean())
    return float(np.mean(fh)) if sum(ws) == 0 else float(np.dot(ws, fh) / sum(ws))


def test_factual_metrics_and_cmfg_star_against_references():
    df = simulate_sampled_records("faithful", k=4, n_items=120, benchmark="mmlu_pro", seed=3)
    df.attrs = {}
    t = attempt_table(df.assign(attempt=df["epoch"]))
    m = run_metrics(t)
    c, y = t["confidence"].to_numpy(), t["correct"].to_numpy()
    assert m["ece"] == pytest.approx(ece(c, y))
    assert m["auroc"] == pytest.approx(roc_auc_score(y, c))
    assert m["brier"] == pytest.approx(np.mean((c - y) ** 2))
    f = 1 - np.abs(c - t["intrinsic"].to_numpy())
    assert m["cmfg_star"] == pytest.approx(_official_cmfg_star(f, t["intrinsic"].to_numpy()))


def test_weights_equal_repeated_attempts():
    """A bootstrap resample is a weight vector: it must equal the table with rows repeated."""
    df = simulate_sampled_records("calibrated", k=3, n_items=60, benchmark="mmlu_pro", seed=5)
    t = attempt_table(df.assign(attempt=df["epoch"]))
    w = np.random.default_rng(0).integers(0, 4, len(t)).astype(float)
    repeated = t.loc[t.index.repeat(w.astype(int))].reset_index(drop=True)
    got, want = run_metrics(t, w), run_metrics(repeated)
    for k in got:
        assert got[k] == pytest.approx(want[k], abs=1e-12), k
    c, y = t["confidence"].to_numpy(), t["correct"].to_numpy()
    assert got["auroc"] == pytest.approx(roc_auc_score(y, c, sample_weight=w))


@pytest.fixture(scope="module")
def sims(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sims")
    out = {}
    for stated in ("faithful", "calibrated", "overconfident"):
        out[stated] = root / f"{stated}.csv"
        records = simulate_sampled_records(stated, k=5, n_items=300, benchmark="mmlu_pro", seed=0)
        records.to_csv(out[stated], index=False)
    return out


def test_better_calibrated_simulated_model_scores_better(sims):
    """Same answers, different statements: the truth of each comparison is known."""
    runs = {k: load_attempts([p]) for k, p in sims.items()}
    # factual: p_correct vs p_correct ** 0.35 (overconfident)
    r = evaluate_runs(runs["calibrated"], runs["overconfident"], n_bootstrap=300, seed=1)
    assert r.comparison["ece"]["better"] and r.comparison["brier"]["better"]
    assert r.comparison["accuracy"]["difference"] == 0.0  # the same answers
    assert r.runs["after"]["metrics"]["ece"] < 0.04 < 0.08 < r.runs["baseline"]["metrics"]["ece"]
    # faithful: the probability of the answer given vs the probability of being right
    r = evaluate_runs(runs["faithful"], runs["calibrated"], n_bootstrap=300, seed=1)
    for m in ("mfg", "cmfg", "cmfg_star"):
        assert r.comparison[m]["better"], (m, r.comparison[m])
    # and the other way round reads as worse, with the same interval mirrored
    back = evaluate_runs(runs["calibrated"], runs["faithful"], n_bootstrap=300, seed=1)
    assert back.comparison["mfg"]["worse"]
    assert back.comparison["mfg"]["difference"] == pytest.approx(-r.comparison["mfg"]["difference"])


def test_eval_cli_writes_table_json_and_report(sims, tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "metacog_tasks.cli", "rlmf", "eval", str(sims["faithful"]),
         "--baseline", str(sims["calibrated"]), "-o", str(tmp_path), "--bootstrap", "200"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "paired on 300 items, 200 bootstrap resamples" in proc.stdout
    summary = json.loads((tmp_path / "rlmf_eval.json").read_text())
    assert summary["comparison"]["mfg"]["better"] and summary["runs"]["after"]["n_attempts"] == 1500
    table = pd.read_csv(tmp_path / "rlmf_eval.csv")
    assert table.loc[table["metric"] == "MFG", "verdict"].item() == "better"
    page = (tmp_path / "report.html").read_text()
    assert 'id="rlmf-eval"' in page and "<svg " in page and "cMFG*" in page


def test_real_frontier_runs_reproduce_published_auroc(realruns_dir: Path):
    """Gemma 4 31B vs Gemma 3 27B on 1,500 MMLU items (cacioli atlas; one answer per item)."""
    folder = realruns_dir / "cacioli_atlas_mmlu"
    runs = load_attempts([folder / "tidy.csv"])
    r = evaluate_runs(runs, runs, model="google/gemma-4-31b", baseline_model="google/gemma-3-27b",
                      n_bootstrap=300, seed=0)  # fmt: skip
    pub = pd.read_csv(folder / "published_atlas_summary_matrix.csv").set_index("model")
    assert r.runs["after"]["metrics"]["auroc"] == pytest.approx(pub.loc["Gemma 4 31B", "aggregate"])
    assert r.runs["baseline"]["metrics"]["auroc"] == pytest.approx(
        pub.loc["Gemma 3 27B", "aggregate"]
    )
    assert r.runs["after"]["metrics"]["accuracy"] == pytest.approx(pub.loc["Gemma 4 31B", "acc"])
    assert r.comparison["auroc"]["better"] and r.comparison["auroc"]["difference"] > 0.15
    assert np.isnan(r.runs["after"]["metrics"]["mfg"]) and "sampled answers" in r.notes[0]
    assert list(result_frame(r)["metric"])[:4] == ["accuracy", "ECE", "Brier", "AUROC"]


def test_errors_name_the_choice(sims):
    both = pd.concat([load_attempts([sims["faithful"]]), load_attempts([sims["calibrated"]])])
    with pytest.raises(ValueError, match=r"hold 2 models .* --model"):
        evaluate_runs(both)
    with pytest.raises(ValueError, match="no verbal confidence for probe 'prospective'"):
        evaluate_runs(both, probe="prospective", model="sim-faithful")
    with pytest.raises(ValueError, match="no model 'nope'"):
        evaluate_runs(both, model="nope")


@pytest.mark.slow
def test_inspect_epochs_are_the_sampled_answers(tmp_path: Path):
    """Real Inspect logs of a simulated model with --epochs 2: every epoch is an attempt."""
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(REPO)}  # fmt: skip
    env.pop("INSPECT_LOG_DIR", None)
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run(
        [str(bin_dir / "inspect"), "eval", "metacog_tasks/squad", "--model", "metacog-sim/m02",
         "-T", "data=bundled", "-T", "confidence=numeric",
         "--epochs", "2", "--log-dir", str(tmp_path / "logs"), "--display", "none"],
        capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = load_attempts([tmp_path / "logs"])
    t = attempt_table(runs)
    per_item = t.groupby("item_id")["attempt"].nunique()
    assert len(per_item) > 0 and (per_item == 2).all()
    # the simulated model answers the same way in both epochs: its answers all agree (g = 1)
    assert (t["intrinsic"] == 1.0).all()
    r = evaluate_runs(runs, n_bootstrap=10)
    assert r.runs["after"]["metrics"]["mfg"] == pytest.approx(t["confidence"].mean())
