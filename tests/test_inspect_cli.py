"""The real ``inspect eval`` / ``inspect eval-set`` CLI with the simulated provider, then
``metacog collect``: records must be what each simulated model's latent state says.

The commands run as subprocesses from a folder outside the repository, so the tasks and the
``metacog-sim`` provider are found through the installed entry point only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from metacog_metrics.records import read_records
from metacog_tasks.sim import SimResponder

BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", INSPECT_LOG_LEVEL="warning")
    env.pop("INSPECT_LOG_DIR", None)
    return env


def _run(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{args[:3]} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _inspect(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return _run([str(BIN / "inspect"), *args, "--display", "none"], cwd)


def _collect(logs: Path, out: Path, cwd: Path):
    proc = _run([str(BIN / "metacog"), "collect", str(logs), "--out", str(out)], cwd)
    return read_records(out), proc.stdout


def _header(log_dir: Path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    return [read_eval_log(info, header_only=True) for info in list_eval_logs(str(log_dir))]


def _metric(log, scorer: str, name: str) -> float:
    for score in log.results.scores:
        if score.name == scorer and name in score.metrics:
            return score.metrics[name].value
    raise KeyError(f"{scorer}/{name}")


def test_cli_eval_then_collect_matches_the_simulator(tmp_path) -> None:
    _inspect(
        "eval", "metacog_tasks/mmlu_pro", "--model", "metacog-sim/m02",
        "-T", "data=bundled", "--log-dir", "logs", cwd=tmp_path,
    )  # fmt: skip
    (log,) = _header(tmp_path / "logs")
    assert log.status == "success" and log.eval.task == "metacog_tasks/mmlu_pro"
    assert log.eval.model == "metacog-sim/m02" and log.eval.task_args["data"] == "bundled"

    records, report = _collect(tmp_path / "logs", tmp_path / "records.csv", tmp_path)
    assert "14 records" in report and "0 bad line" in report
    assert set(records["model"]) == {"metacog-sim/m02"}
    assert set(records["harness"]) == {"inspect"}
    sim = SimResponder("m02", sources="bundled", benchmarks=["mmlu_pro"])
    for row in records.itertuples():
        cell = sim.cell("mmlu_pro", row.item_id, "prospective")
        assert row.correct == float(cell["correct"]), row.item_id
        assert row.confidence == float(cell["confidence"]), row.item_id

    # The log's headline metrics are the record table's statistics.
    conf, y = records["confidence"].to_numpy(float), records["correct"].to_numpy(float)
    assert _metric(log, "prospective_verbal", "accuracy") == pytest.approx(y.mean())
    assert _metric(log, "prospective_verbal", "yes_rate") == pytest.approx(conf.mean())
    assert _metric(log, "prospective_verbal", "auroc") == pytest.approx(roc_auc_score(y, conf))
    assert _metric(log, "prospective_verbal", "brier") == pytest.approx(np.mean((conf - y) ** 2))


@pytest.mark.slow
def test_cli_eval_set_over_a_population(tmp_path) -> None:
    models = [f"metacog-sim/m0{i}" for i in range(1, 5)]
    args = [
        "eval-set", "metacog_tasks/squad", "metacog_tasks/legalbench",
        "--model", ",".join(models),
        "-T", "data=bundled", "-T", "probe=prospective,counterfactual",
        "-T", "confidence=verbal,numeric", "--log-dir", "logs",
    ]  # fmt: skip
    _inspect(*args, cwd=tmp_path)
    logs = _header(tmp_path / "logs")
    assert len(logs) == 8 and all(log.status == "success" for log in logs)
    assert json.loads((tmp_path / "logs" / "eval-set.json").read_text())["tasks"]

    # Rerunning the same eval-set finds everything done and writes no new log.
    again = _inspect(*args, cwd=tmp_path)
    assert len(_header(tmp_path / "logs")) == 8, again.stdout

    records, _ = _collect(tmp_path / "logs", tmp_path / "records.parquet", tmp_path)
    assert sorted(records["model"].unique()) == models
    kinds = records.groupby(["probe", "confidence_kind"]).size().to_dict()
    n_items = records["item_id"].nunique()
    assert kinds == {
        ("counterfactual", "verbal_binary"): 4 * n_items,
        ("prospective", "verbal_binary"): 4 * n_items,
        ("prospective", "verbal_numeric"): 4 * n_items,
    }
    sims = {
        m: SimResponder(m, sources="bundled", benchmarks=["squad", "legalbench"]) for m in models
    }
    for row in records.itertuples():
        probe = "numeric" if row.confidence_kind == "verbal_numeric" else row.probe
        cell = sims[row.model].cell(row.benchmark, row.item_id, probe)
        assert row.correct == float(cell["correct"]), (row.model, row.item_id)
        if row.confidence_kind == "verbal_binary":
            assert row.confidence == float(cell["confidence"]), (row.model, row.item_id)
        else:  # the simulator writes "Confidence: N" with N its numeric state rounded
            expected = round(cell["numeric"]) / 100
            assert row.confidence == pytest.approx(expected, abs=1e-12), (row.model, row.item_id)


@pytest.mark.slow
def test_cli_task_arguments_sample_ids_and_epochs(tmp_path) -> None:
    from metacog_tasks.benchmarks import get_benchmark

    ids = [it.item_id for it in get_benchmark("omni_math").load("bundled")[:3]]
    _inspect(
        "eval", "metacog_tasks/omni_math", "--model", "metacog-sim/m05",
        "-T", "data=bundled", "-T", "confidence=sampled", "-T", "k=3",
        "--sample-id", ",".join(ids), "--epochs", "2", "--log-dir", "logs",
        cwd=tmp_path,
    )  # fmt: skip
    (log,) = _header(tmp_path / "logs")
    assert log.eval.config.epochs == 2 and sorted(log.eval.dataset.sample_ids) == sorted(ids)
    records, report = _collect(tmp_path / "logs", tmp_path / "records.csv", tmp_path)
    assert sorted(records["item_id"]) == sorted(ids)
    assert set(records["confidence_kind"]) == {"sampled"}
    assert set(records["n_samples"].dropna()) <= {3}
    assert "other epochs not read" in report
