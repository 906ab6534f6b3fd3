"""``run_lmeval``: several models in one process, files laid out as the lm-eval CLI lays them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from metacog_tasks.lmeval import LMEvalRun, run_lmeval

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def test_population_run_writes_cli_layout(tmp_path: Path) -> None:
    models = [
        {"model": "metacog-sim", "model_args": f"model=metacog-sim/m0{i},preset=paper,seed=0"}
        for i in (1, 2)
    ]
    started = time.perf_counter()
    runs = run_lmeval(
        models,
        ["metacog_omni_math", "metacog_squad_cf"],
        output_path=tmp_path,
        metadata={"metacog_data": "bundled", "metacog_confidence": "verbal"},
        limit=4,
    )
    elapsed = time.perf_counter() - started
    # each run's own time: positive and, both together, within the call's wall time
    assert sum(r.seconds for r in runs) <= elapsed
    assert [r.model_name for r in runs] == ["metacog-sim/m01", "metacog-sim/m02"]
    for run in runs:
        assert isinstance(run, LMEvalRun) and 0 < run.seconds < elapsed
        results = Path(run.results_path)
        # lm-eval's own layout: <out>/<sanitised model name>/results_<date>.json + samples.
        assert results.parent.parent == tmp_path
        assert results.parent.name == run.model_name.replace("/", "__")
        date_id = results.stem.removeprefix("results_")
        assert sorted(Path(p).name for p in run.samples_paths) == [
            f"samples_metacog_omni_math_{date_id}.jsonl",
            f"samples_metacog_squad_cf_{date_id}.jsonl",
        ]
        data = json.loads(results.read_text())
        assert data["config"]["metacog_model_name"] == run.model_name
        assert data["results"] == json.loads(json.dumps(run.metrics))
        omni = run.metrics["metacog_omni_math"]
        assert omni["sample_len"] == 4 and omni["record,none"] == 4
        assert isinstance(omni["acc_stderr,none"], float)  # lm-eval's closed-form stderr
        assert "auroc_logprob,none" not in omni  # verbal only
        lines = Path(run.samples_paths[0]).read_text().splitlines()
        assert len(lines) == 4


def test_run_without_output_path_keeps_results_in_memory() -> None:
    (run,) = run_lmeval(
        [{"model": "metacog-sim", "model_args": {"model": "m07"}}],
        ["metacog_mmlu_pro"],
        output_path=None,
        metadata={"metacog_data": "bundled"},
        limit=2,
    )
    assert run.results_path is None and run.samples_paths == ()
    assert run.model_name == "metacog-sim/m07"
    assert run.metrics["metacog_mmlu_pro"]["record,none"] == 2


@pytest.mark.parametrize(
    ("models", "tasks", "message"),
    [
        ([], ["metacog_squad"], "no models"),
        ([{"model": "metacog-sim"}], [], "no tasks"),
        ([{"model": "metacog-sim"}], ["metacog_nonesuch"], "no task matches 'metacog_nonesuch'"),
        ([{"model_args": "model=m01"}], ["metacog_squad"], "lacks 'model'"),
    ],
)
def test_bad_arguments_are_named(models, tasks, message) -> None:
    with pytest.raises(ValueError, match=message):
        run_lmeval(models, tasks, output_path=None)
