"""The real CLIs as subprocesses: ``metacog lm-eval``, plain ``lm_eval --include_path``,
``metacog collect``; the simulated model and a tiny random GPT-2 on the bundled packs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from metacog_tasks.benchmarks import BENCHMARK_NAMES, get_benchmark
from tests.tinymodel import build_tiny_model

ENV = {
    **os.environ,
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
BUNDLED = json.dumps({"metacog_data": "bundled"})
ALL_TASKS = sorted(f"metacog_{b}{s}" for b in BENCHMARK_NAMES for s in ("", "_cf"))


def _metacog(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("metacog")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "metacog_tasks.cli"]
    return [*head, *args]


def _run(cmd: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def _run_sim(
    out: Path, model_args: str, tasks: str, limit: int, cwd: Path
) -> subprocess.CompletedProcess:
    """``metacog lm-eval run`` of the simulated model on the bundled packs, samples logged."""
    return _run(
        _metacog(
            "lm-eval",
            "run",
            "--model",
            "metacog-sim",
            "--model_args",
            model_args,
            "--tasks",
            tasks,
            "--limit",
            str(limit),
            "--metadata",
            BUNDLED,
            "--output_path",
            str(out),
            "--log_samples",
        ),
        cwd=cwd,
    )


def _results(out: Path) -> dict:
    files = sorted(out.rglob("results_*.json"))
    assert files, f"no results file under {out}"
    return json.loads(files[-1].read_text())


def _collect(out: Path, tmp: Path) -> pd.DataFrame:
    target = tmp / f"{out.name}.parquet"
    _run(_metacog("collect", str(out), "-o", str(target)), cwd=tmp)
    return pd.read_parquet(target)


def _items(bench: str, n: int) -> list[str]:
    return [i.item_id for i in get_benchmark(bench).load("bundled")[:n]]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-gpt2"))


def test_include_path_prints_the_task_configs(tmp_path: Path) -> None:
    proc = _run(_metacog("include-path"), cwd=tmp_path)
    folder = Path(proc.stdout.strip())
    names = sorted(p.stem for p in folder.glob("metacog_*.yaml"))
    assert names == ALL_TASKS
    assert (folder / "_metacog.yaml").is_file()


def test_sim_model_through_the_wrapper_then_collect(tmp_path: Path) -> None:
    """Fast smoke: the registered simulated model, real CLI, records checked end to end."""
    from metacog_tasks.sim import SimResponder

    out = tmp_path / "sim"
    proc = _run_sim(out, "model=m01,preset=paper,seed=0", "metacog_mmlu_pro", 6, tmp_path)
    assert "metacog_mmlu_pro" in proc.stdout  # lm-eval's results table
    results = _results(out)
    assert results["config"]["metacog_model_name"] == "metacog-sim/m01"
    df = _collect(out, tmp_path)
    assert set(df["model"]) == {"metacog-sim/m01"}
    assert set(df["confidence_kind"]) == {"verbal_binary", "logprob"}
    assert sorted(df["item_id"].unique()) == sorted(_items("mmlu_pro", 6))

    # The records are the simulated model's latent state, read back through the real harness.
    sim = SimResponder("m01", preset="paper", seed=0, benchmarks=["mmlu_pro"])
    for row in df.itertuples():
        cell = sim.cell("mmlu_pro", row.item_id, "prospective")
        assert row.correct == float(cell["correct"])
        if row.confidence_kind == "verbal_binary":
            assert row.confidence == float(cell["confidence"])
        else:
            assert row.confidence == pytest.approx(cell["p_yes"], abs=1e-6)

    # The aggregated metrics in the results JSON are those of the records.
    r = results["results"]["metacog_mmlu_pro"]
    verbal = df[df["confidence_kind"] == "verbal_binary"]
    logprob = df[df["confidence_kind"] == "logprob"]
    assert r["acc,none"] == pytest.approx(verbal["correct"].mean())
    assert r["yes_rate_verbal,none"] == pytest.approx(verbal["confidence"].mean())
    if logprob["correct"].nunique() < 2:
        assert math.isnan(r["auroc_logprob,none"])
    else:
        expected = roc_auc_score(logprob["correct"], logprob["confidence"])
        assert r["auroc_logprob,none"] == pytest.approx(expected)


@pytest.mark.slow
def test_plain_lm_eval_hf_tiny_gpt2_all_tasks_chat_template(
    tiny_model: Path, tmp_path: Path
) -> None:
    """Stock ``lm_eval`` + ``--include_path``, ``--model hf`` on a local random GPT-2."""
    include = _run(_metacog("include-path"), cwd=tmp_path).stdout.strip()
    out = tmp_path / "hf"
    meta = json.dumps({"metacog_data": "bundled", "metacog_probe_max_tokens": 6})
    _run(
        [
            sys.executable,
            "-m",
            "lm_eval",
            "run",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_model},dtype=float32",
            "--device",
            "cpu",
            "--batch_size",
            "8",
            "--include_path",
            include,
            "--tasks",
            "metacog_*",
            "--limit",
            "2",
            "--metadata",
            meta,
            "--gen_kwargs",
            "max_gen_toks=6",
            "--apply_chat_template",
            "--system_instruction",
            "Be brief.",
            "--output_path",
            str(out),
            "--log_samples",
        ],
        cwd=tmp_path,
    )
    results = _results(out)
    assert sorted(results["results"]) == ALL_TASKS  # 'metacog_*': every leaf, no group row
    assert "groups" not in results or not results["groups"]
    assert results["chat_template_sha"] and results["system_instruction"] == "Be brief."

    sample = json.loads(
        next(out.rglob("samples_metacog_squad_*.jsonl")).read_text().splitlines()[0]
    )
    probe_ctx = sample["arguments"]["gen_args_0"]["arg_0"]
    assert probe_ctx.startswith("<|system|>\nBe brief.<|end|>\n<|user|>\n")
    assert probe_ctx.endswith("<|assistant|>\n")
    assert sample["arguments"]["gen_args_2"]["arg_0"] == probe_ctx + "Answer:"

    df = _collect(out, tmp_path)
    assert set(df["confidence_kind"]) == {"verbal_binary", "logprob"}
    assert set(df["harness"]) == {"lm-eval"}
    for bench in BENCHMARK_NAMES:
        b = df[df["benchmark"] == bench]
        assert sorted(b["item_id"].unique()) == sorted(_items(bench, 2)), bench
        assert set(b["probe"]) == {"prospective", "counterfactual"}
    # Correctness is the benchmark grader's verdict on the logged solve text.
    for bench in ("mmlu_pro", "squad", "omni_math"):
        grader = get_benchmark(bench)
        items = {i.item_id: i for i in grader.load("bundled")}
        for row in df[df["benchmark"] == bench].itertuples():
            assert row.correct == grader.grade(items[row.item_id], row.solve_text).correct
    # A random model's P(Yes) is a proper probability.
    lp = df[df["confidence_kind"] == "logprob"]["confidence"]
    assert lp.between(0, 1).all() and lp.nunique() > 1
    # Each task's aggregated metrics in the results JSON are those of its records.
    for task in ALL_TASKS:
        bench = task.removeprefix("metacog_").removesuffix("_cf")
        probe = "counterfactual" if task.endswith("_cf") else "prospective"
        rows = df[(df["benchmark"] == bench) & (df["probe"] == probe)]
        logprob = rows[rows["confidence_kind"] == "logprob"]
        graded = logprob.dropna(subset=["correct"])
        r = results["results"][task]
        assert r["record,none"] == 2
        if len(graded):
            assert r["acc,none"] == pytest.approx(graded["correct"].mean())
            assert r["brier_logprob,none"] == pytest.approx(
                ((graded["confidence"] - graded["correct"]) ** 2).mean()
            )
        assert r["yes_rate_logprob,none"] == pytest.approx(logprob["confidence"].mean())


@pytest.mark.slow
def test_group_metacog_reports_one_row(tmp_path: Path) -> None:
    out = tmp_path / "group"
    _run_sim(out, "model=m02,seed=0", "metacog", 3, tmp_path)
    results = _results(out)
    group = results["groups"]["metacog"]
    leaves = {t: results["results"][t] for t in ALL_TASKS}
    sizes = np.array([leaves[t]["sample_len"] for t in ALL_TASKS], dtype=float)
    accs = np.array([leaves[t]["acc,none"] for t in ALL_TASKS])
    assert group["acc,none"] == pytest.approx(float((accs * sizes).sum() / sizes.sum()))
    yes = [leaves[t]["yes_rate_verbal,none"] for t in ALL_TASKS]
    assert group["yes_rate_verbal,none"] == pytest.approx(float(np.mean(yes)))
    df = _collect(out, tmp_path)
    assert len(df) == len(ALL_TASKS) * 3 * 2
    # Each leaf's AUROC is that of its records (sklearn); the group's is their plain mean.
    leaf_auroc = []
    for task in ALL_TASKS:
        bench = task.removeprefix("metacog_").removesuffix("_cf")
        probe = "counterfactual" if task.endswith("_cf") else "prospective"
        rows = df[(df["benchmark"] == bench) & (df["probe"] == probe)]
        rows = rows[rows["confidence_kind"] == "verbal_binary"].dropna(
            subset=["confidence", "correct"]
        )
        value = leaves[task]["auroc_verbal,none"]
        if rows["correct"].nunique() < 2:
            assert math.isnan(value), task
        else:
            assert value == pytest.approx(roc_auc_score(rows["correct"], rows["confidence"]))
        leaf_auroc.append(value)
    # (lm-eval's plain mean: one leaf without both classes makes the group's AUROC NaN)
    expected = float(np.mean(leaf_auroc))
    if math.isnan(expected):
        assert math.isnan(group["auroc_verbal,none"])
    else:
        assert group["auroc_verbal,none"] == pytest.approx(expected)


@pytest.mark.slow
def test_hf_predict_only_and_rerun_give_the_same_records(tiny_model: Path, tmp_path: Path) -> None:
    common = [
        "--model",
        "hf",
        "--model_args",
        f"pretrained={tiny_model},dtype=float32",
        "--device",
        "cpu",
        "--tasks",
        "metacog_mmlu_pro",
        "metacog_squad",
        "--limit",
        "3",
        "--metadata",
        json.dumps({"metacog_data": "bundled", "metacog_probe_max_tokens": 5}),
        "--gen_kwargs",
        "max_gen_toks=5",
        "--log_samples",
    ]
    frames = []
    for name in ("first", "second"):
        _run(
            _metacog("lm-eval", "run", *common, "--output_path", str(tmp_path / name)), cwd=tmp_path
        )
        frames.append(_collect(tmp_path / name, tmp_path).drop(columns=["source"]))
    pd.testing.assert_frame_equal(frames[0], frames[1])

    out = tmp_path / "predict"
    _run(
        _metacog("lm-eval", "run", *common[:-1], "--predict_only", "--output_path", str(out)),
        cwd=tmp_path,
    )
    results = _results(out)
    assert "acc,none" not in results["results"]["metacog_mmlu_pro"]
    assert results["results"]["metacog_mmlu_pro"]["record,none"] == 3
    pred = _collect(out, tmp_path)
    assert pred["correct"].isna().all() and set(pred["grade_status"]) == {"not_graded"}
    cols = ["item_id", "confidence_kind", "probe_text", "solve_text"]
    pd.testing.assert_frame_equal(
        pred[cols].reset_index(drop=True), frames[0][cols].reset_index(drop=True)
    )
