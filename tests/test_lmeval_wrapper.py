"""``metacog lm-eval`` as a new user meets it: mistakes end before the run in one line, the
samples ``metacog collect`` needs are always logged, and lm-eval's own flags (``--wandb_args``)
pass through."""

from __future__ import annotations

import glob
import json
import math
import os
import subprocess
import sys
from pathlib import Path

from metacog_tasks.lmeval.wrapper import metacog_task_names
from tests.availability import unavailable

ENV = {
    **os.environ,
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
BUNDLED = json.dumps({"metacog_data": "bundled", "metacog_confidence": "verbal"})
SIM = ["--model", "metacog-sim", "--model_args", "model=m01", "--limit", "3", "--metadata", BUNDLED]


def _metacog(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("metacog")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "metacog_tasks.cli"]
    return subprocess.run(
        [*head, *args], cwd=cwd, env=env or ENV, capture_output=True, text=True, timeout=600
    )


#: A run into runs/ (the model and tasks follow).
_RUN = ("lm-eval", "run", "--output_path", "runs")


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("metacog lm-eval: error: "), proc.stderr
    return lines[0]


def test_the_task_names_are_those_of_the_configs():
    names = metacog_task_names()
    assert {"metacog", "metacog_squad", "metacog_squad_cf", "metacognition_probe"} <= set(names)


def test_typos_end_in_one_line_with_a_suggestion(tmp_path):
    line = _one_line_error(
        _metacog(
            "lm-eval",
            "run",
            *SIM,
            "--tasks",
            "metacog_sqaud",
            "--output_path",
            "runs",
            cwd=tmp_path,
        )
    )
    assert "no metacog task metacog_sqaud (did you mean metacog_squad" in line
    line = _one_line_error(
        _metacog(
            "lm-eval",
            "run",
            "--model",
            "metacog-simm",
            "--tasks",
            "metacog_squad",
            "--output_path",
            "runs",
            cwd=tmp_path,
        )
    )
    assert line.endswith("no lm-eval model 'metacog-simm' (did you mean metacog-sim?)")
    line = _one_line_error(
        _metacog(*_RUN, "--model", "zzzz", "--tasks", "metacog_squad", cwd=tmp_path)
    )
    assert "no lm-eval model 'zzzz'; lm-eval has " in line
    assert ", metacog-sim, " in line and ", hf, " in line
    assert not (tmp_path / "runs").exists()


def test_a_backend_that_is_not_installed_is_named(tmp_path):
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return  # installed here: nothing to name
    line = _one_line_error(
        _metacog(
            "lm-eval",
            "run",
            "--model",
            "vllm",
            "--model_args",
            "pretrained=x",
            "--tasks",
            "metacog_squad",
            "--output_path",
            "runs",
            cwd=tmp_path,
        )
    )
    assert "--model vllm: lm-eval's backend needs vllm" in line


def test_a_users_own_metacog_named_task_is_left_to_lm_eval(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    proc = _metacog(
        "lm-eval",
        "run",
        *SIM,
        "--tasks",
        "metacog_mine",
        "--include_path",
        str(mine),
        "--output_path",
        "runs",
        cwd=tmp_path,
    )
    assert proc.returncode == 2  # lm-eval's own verdict, in one line
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith("metacog lm-eval: error: lm-eval has no task metacog_mine")
    )


def test_a_run_that_would_lose_its_answers_is_refused(tmp_path):
    line = _one_line_error(
        _metacog("lm-eval", "run", *SIM, "--tasks", "metacog_squad", cwd=tmp_path)
    )
    assert "need --output_path DIR" in line and "metacog collect" in line


def test_log_samples_is_added_and_a_results_only_folder_says_rerun(tmp_path):
    proc = _metacog(
        "lm-eval", "run", *SIM, "--tasks", "metacog_squad", "--output_path", "runs", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "adding --log_samples" in proc.stderr
    samples = list((tmp_path / "runs").rglob("samples_metacog_squad_*.jsonl"))
    assert len(samples) == 1 and len(samples[0].read_text().splitlines()) == 3
    ok = _metacog("collect", "runs", "-o", "r.parquet", cwd=tmp_path)
    assert ok.returncode == 0 and "wrote 3 records" in ok.stdout
    samples[0].unlink()  # as lm-eval leaves a run made without --log_samples
    proc = _metacog("collect", "runs", "-o", "r2.parquet", cwd=tmp_path)
    assert proc.returncode == 1 and not (tmp_path / "r2.parquet").exists()
    assert "rerun with --log_samples" in proc.stderr
    assert "without their per-item samples" in proc.stdout


def test_wandb_args_pass_through_in_offline_mode(tmp_path):
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        unavailable("wandb is not installed (the dev extra has it)")
    env = {**ENV, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true"}
    proc = _metacog(
        "lm-eval",
        "run",
        *SIM,
        "--tasks",
        "metacog_squad",
        "--output_path",
        "runs",
        "--wandb_args",
        "project=metacog-test,mode=offline",
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = glob.glob(str(tmp_path / "wandb" / "offline-run-*"))
    assert glob.glob(f"{run}/run-*.wandb")
    (table,) = glob.glob(f"{run}/files/media/table/evaluation/*.table.json")
    logged = json.loads(Path(table).read_text())
    col = {c: i for i, c in enumerate(logged["columns"])}
    rows = {
        r[col["Metric"]]: r[col["Value"]]
        for r in logged["data"]
        if r[col["Tasks"]] == "metacog_squad" and r[col["Filter"]] == "none"
    }
    (results,) = (tmp_path / "runs").rglob("results_*.json")
    expected = json.loads(results.read_text(), parse_constant=float)["results"]["metacog_squad"]
    for metric in ("acc", "yes_rate_verbal", "brier_verbal", "ece_verbal"):
        value = expected[f"{metric},none"]
        assert math.isclose(float(rows[metric]), value), metric


def test_prompts_are_overridden_the_lm_eval_way(tmp_path):
    """The task README's example: a YAML that includes a task by its path and replaces one
    template runs that template; the original task keeps the record's."""
    from metacog_tasks.lmeval.paths import tasks_dir

    mine = tmp_path / "my_tasks"
    mine.mkdir()
    (mine / "my_squad.yaml").write_text(
        f"include: {tasks_dir() / 'metacog_squad.yaml'}\n"
        "task: my_squad\n"
        "prompts:\n"
        '  solve: "Answer in one short phrase.\\n\\nQuestion: {question}\\nAnswer:"\n'
    )
    proc = _metacog(
        "lm-eval",
        "run",
        *SIM,
        "--tasks",
        "my_squad,metacog_squad",
        "--include_path",
        str(mine),
        "--output_path",
        "runs",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    solve = {}
    for path in (tmp_path / "runs").rglob("samples_*.jsonl"):
        line = json.loads(path.read_text().splitlines()[0])
        task = path.name.split("_20")[0].removeprefix("samples_")
        solve[task] = line["arguments"]["gen_args_1"]["arg_0"]
    assert solve["my_squad"].startswith("Answer in one short phrase.\n\nQuestion: ")
    assert solve["metacog_squad"].startswith("Answer the following question with a short phrase")
    results = json.loads(next((tmp_path / "runs").rglob("results_*.json")).read_text())
    assert results["configs"]["my_squad"]["test_split"] == "validation"
