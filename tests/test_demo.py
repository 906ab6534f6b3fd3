"""`metacog demo`: the whole pipeline from a fresh install, through the real harness CLIs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

SMALL = ["--models", "4", "--items-per-benchmark", "5", "--permutations", "200",
         "--joint-permutations", "100"]  # fmt: skip


def _demo(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "metacog_tasks.cli", "demo", "--out", str(tmp), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp.parent,
        timeout=600,
    )


def _check_outputs(top: Path, proc: subprocess.CompletedProcess, harness: str) -> pd.DataFrame:
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = top / harness  # a folder per harness
    for name in ("report.html", "summary.json", "records.parquet", "tables"):
        assert (out / name).exists(), name
    assert (out / "logs" / "harness.log").is_file()
    # SciCode's pack (8 items) is too small to analyse on its own: not run, and said so
    assert "scicode: its bundled pack has 8 items, fewer than the 10" in proc.stdout
    assert f"through {harness}" in proc.stdout
    assert "Findings (the report's list, the pooled group first):" in proc.stdout
    # the report and the terminal say the models are simulated, and what truth was planted
    assert "These models are simulated" in proc.stdout
    assert "These models are simulated" in (out / "report.html").read_text()
    assert str(out / "report.html") in proc.stdout

    records = pd.read_parquet(out / "records.parquet")
    assert sorted(records["model"].unique()) == [f"metacog-sim/m0{i}" for i in range(1, 5)]
    assert set(records["benchmark"]) == {"squad", "mmlu_pro", "legalbench", "mathbench",
                                         "omni_math"}  # fmt: skip
    # 5 items per benchmark (--items-per-benchmark), every model answered every item
    assert records.groupby("model").size().eq(25).all()
    assert set(records["confidence_kind"]) == {"verbal_binary"}
    assert records["correct"].isin([0.0, 1.0]).all()

    summary = json.loads((out / "summary.json").read_text())
    pooled = summary["results"]["pooled"]["prospective"]
    assert pooled["status"] == "ok" and pooled["n_models"] == 4 and pooled["n_items"] == 25
    for path in (
        ("confidence", "tetrachoric", "rho"),
        ("confidence", "eigen", "first_share"),
        ("confidence", "eigen", "loadings"),
        ("confidence", "eigen", "quadratic_r2"),
        ("correctness", "eigen", "first_share"),
        ("factor_alignment", "all", "r"),
        ("factor_alignment", "contentious", "r"),
        ("pairwise", "mean_tau"),
        ("pairwise", "nulls", "base_rate", "p_value"),
        ("pairwise", "nulls", "calibration_preserving", "mean"),
        ("pairwise", "delta_curve"),
    ):
        node = pooled
        for key in path:
            node = node[key]
        assert node is not None, path
    assert set(pooled["per_model"]) == set(records["model"])
    # the numbers are those of the records (pandas / SciPy here, not the analysis code)
    for model, rows in records.groupby("model"):
        assert pooled["per_model"][model]["accuracy"] == pytest.approx(rows["correct"].mean())
        assert pooled["per_model"][model]["yes_rate"] == pytest.approx(rows["confidence"].mean())
    key = records["benchmark"] + "/" + records["item_id"].astype(str)
    conf = records.assign(key=key).pivot(index="key", columns="model", values="confidence")
    corr = records.assign(key=key).pivot(index="key", columns="model", values="correct")
    names = pooled["models"]
    taus = [
        stats.kendalltau(conf[a] - conf[b], corr[a] - corr[b]).statistic
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    assert pooled["pairwise"]["mean_tau"] == pytest.approx(float(np.nanmean(taus)), abs=1e-12)
    # each benchmark alone has 5 items: reported as skipped with a reason, not dropped
    assert summary["results"]["squad"]["prospective"]["status"] == "skipped"
    assert "need at least 10" in summary["results"]["squad"]["prospective"]["reason"]
    assert summary["parameters"]["pool"] is True
    return records


def test_demo_lm_eval(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = _demo(out, *SMALL)
    _check_outputs(out, proc, "lm-eval")
    samples = sorted((out / "lm-eval" / "logs").rglob("samples_metacog_*.jsonl"))
    assert len(samples) == 4 * 5
    # a rerun with fewer models replaces the demo's own outputs (the old logs among them) and
    # leaves the user's files alone
    (out / "lm-eval" / "my-notes.txt").write_text("mine")
    proc = _demo(out, *SMALL[2:], "--models", "3", "--benchmarks", "squad,mmlu_pro")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not any(p.exists() for p in samples if "/m04/" in p.as_posix())
    records = pd.read_parquet(out / "lm-eval" / "records.parquet")
    assert records["model"].nunique() == 3 and set(records["benchmark"]) == {"squad", "mmlu_pro"}
    assert (out / "lm-eval" / "my-notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_demo_inspect_matches_lm_eval(tmp_path: Path) -> None:
    a = _check_outputs(tmp_path / "a", _demo(tmp_path / "a", *SMALL), "lm-eval")
    b = _check_outputs(
        tmp_path / "b", _demo(tmp_path / "b", *SMALL, "--harness", "inspect"), "inspect"
    )
    key = ["model", "benchmark", "item_id", "probe", "confidence_kind"]
    cols = [*key, "confidence", "correct"]
    a = a[cols].sort_values(key).reset_index(drop=True)
    b = b[cols].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


def test_demo_rejects_bad_arguments(tmp_path: Path) -> None:
    proc = _demo(tmp_path / "x", "--models", "2")
    assert proc.returncode == 2
    assert "at least 3 models" in proc.stderr
    proc = _demo(tmp_path / "x", "--benchmarks", "squad,nope")
    assert proc.returncode == 2 and "unknown benchmark(s) ['nope']" in proc.stderr
    proc = _demo(tmp_path / "x", "--harness", "vllm")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
