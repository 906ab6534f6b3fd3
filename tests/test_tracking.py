"""MLflow tracking of analyze and gate summaries, on a local file store."""

from __future__ import annotations

import importlib.util
import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_tasks.cli import main
from metacog_tasks.tracking import analysis_metrics, gate_metrics, log_analysis, log_gate
from tests.availability import unavailable


@pytest.fixture
def store(tmp_path, monkeypatch):
    if importlib.util.find_spec("mlflow") is None:
        unavailable("mlflow is not installed (the mlflow extra; dev has it)")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for it
    return f"file:{tmp_path / 'mlruns'}"


def _records(path, *, model="m", n_models=4, n_items=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = [
        {
            "model": f"{model}{m}",
            "benchmark": "squad",
            "item_id": f"q{i}",
            "confidence": int(rng.random() < 0.6),
            "correct": int(rng.random() < 0.5),
        }
        for m in range(n_models)
        for i in range(n_items)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _run(uri, run_id):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return client, client.get_run(run_id)


def test_analyze_logs_its_summary(tmp_path, store, capsys):
    src = _records(tmp_path / "r.csv")
    out = tmp_path / "o"
    args = ["analyze", str(src), "--out", str(out), "--permutations", "19"]
    assert main([*args, "--joint-permutations", "9", "--quiet", "--mlflow", store]) == 0
    printed = capsys.readouterr().out
    run_id = printed.rsplit("(run ", 1)[1].split(")")[0]
    summary = json.loads((out / "summary.json").read_text())
    client, run = _run(store, run_id)
    assert run.info.status == "FINISHED" and run.data.tags["metacog.kind"] == "analysis"
    expected = analysis_metrics(summary)
    g = summary["results"]["squad"]["unspecified"]  # no probe column
    assert expected["squad/unspecified/pairwise.mean_tau"] == g["pairwise"]["mean_tau"]
    assert expected["squad/unspecified/n_models"] == 4
    assert len(expected) > 20 and run.data.metrics == pytest.approx(expected)
    assert run.data.params["permutations"] == "19"
    names = {a.path for a in client.list_artifacts(run_id)}
    assert names == {"summary.json", "report.html"}
    local = client.download_artifacts(run_id, "summary.json", str(tmp_path))
    assert json.loads(Path(local).read_text()) == summary


def test_the_gate_hook_logs_the_verdict(tmp_path, store):
    from metacog_tasks.gate_command import run_gate

    base = _records(tmp_path / "b.csv", model="base", n_models=1, n_items=80)
    cand = _records(tmp_path / "c.csv", model="cand", n_models=1, n_items=80, seed=1)
    verdict = run_gate(str(base), str(cand), out=io.StringIO())
    data = json.loads(json.dumps(verdict.to_dict(), default=str))
    run_id = log_gate(data, store, experiment="gate-test")
    _, run = _run(store, run_id)
    assert run.data.tags["metacog.gate.status"] == verdict.status
    assert run.data.metrics["exit_code"] == verdict.exit_code
    expected = gate_metrics(data)
    assert run.data.metrics == pytest.approx(expected)
    test = next(t for t in verdict.tests if t.change is not None and math.isfinite(t.change))
    key = f"{test.benchmark}/{test.probe}/{test.confidence_kind or 'all'}/{test.metric}/change"
    assert run.data.metrics[key] == pytest.approx(test.change)
    assert run.data.params["candidate_model"] == verdict.candidate_model


def test_an_unreachable_store_is_an_error_not_a_silent_pass(tmp_path, monkeypatch):
    if importlib.util.find_spec("mlflow") is None:
        unavailable("mlflow is not installed (the mlflow extra; dev has it)")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with pytest.raises(Exception, match="MLFLOW_ALLOW_FILE_STORE"):
        log_analysis({"results": {}}, f"file:{tmp_path / 'mlruns'}")


def test_metacog_gate_mlflow_logs_the_verdict_it_exits_with(tmp_path, store, capsys):
    base = _records(tmp_path / "b.csv", model="base", n_models=1, n_items=80)
    cand = _records(tmp_path / "c.csv", model="cand", n_models=1, n_items=80, seed=1)
    out = tmp_path / "gate.json"
    args = ["gate", "--baseline", str(base), "--candidate", str(cand), "--json", str(out)]
    code = main([*args, "--mlflow", store, "--mlflow-experiment", "ci"])
    printed = capsys.readouterr().out
    run_id = printed.rsplit("(run ", 1)[1].split(")")[0]
    client, run = _run(store, run_id)
    assert client.get_experiment(run.info.experiment_id).name == "ci"
    assert run.data.tags["metacog.kind"] == "gate"
    assert run.data.metrics["exit_code"] == code
    assert run.data.metrics == pytest.approx(gate_metrics(json.loads(out.read_text())))
