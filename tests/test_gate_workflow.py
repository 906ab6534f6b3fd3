"""The GitHub Actions workflow of docs/gate.md: its commands parse, the docs show the committed
files, and (slow) its shell steps run as written on a tiny local checkpoint."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from lxml import etree

from metacog_tasks.cli import build_parser
from metacog_tasks.gate_command import load_config
from tests.tinymodel import build_tiny_model

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "examples" / "ci" / "metacog-gate.yml"
CONFIG = REPO / "examples" / "ci" / "gate.yaml"
BIN = Path(sys.executable).parent


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _steps() -> dict[str, dict]:
    (job,) = _workflow()["jobs"].values()
    return {s.get("name", s.get("uses")): s for s in job["steps"]}


def _argv(run: str, env: dict[str, str]) -> list[str]:
    text = run.replace("\\\n", " ")
    for key, value in env.items():
        text = text.replace(f'"${key}"', shlex.quote(value)).replace(f"${key}", value)
    return shlex.split(text.splitlines()[0])


def test_the_docs_show_the_committed_workflow_and_config() -> None:
    doc = (REPO / "docs" / "gate.md").read_text()
    assert WORKFLOW.read_text() in doc and CONFIG.read_text() in doc
    config = load_config(CONFIG)
    assert config.alpha == 0.05 and config.margins["auroc"] == 0.03


def test_the_workflow_commands_parse() -> None:
    flow = _workflow()
    steps = _steps()
    env = {**flow["env"], "GITHUB_STEP_SUMMARY": "summary.md"}
    gate = build_parser().parse_args(
        _argv(steps["Gate against the committed baseline"]["run"], env)[1:]
    )
    assert (gate.baseline, gate.candidate, gate.config) == (
        env["BASELINE"],
        "runs/",
        env["GATE_CONFIG"],
    )
    assert gate.junit == "gate-junit.xml" and gate.markdown == "summary.md"
    bless = build_parser().parse_args(
        _argv(steps["Save the run as the new baseline"]["run"], env)[1:]
    )
    assert bless.gate_command == "bless" and bless.output == env["BASELINE"]
    lm = _argv(steps["Evaluate the checkpoint with lm-eval"]["run"], env)
    assert lm[:2] == ["lm_eval", "run"] and "--log_samples" in lm  # collect needs the samples
    assert lm[lm.index("--output_path") + 1] == gate.candidate
    assert lm[lm.index("--tasks") + 1] == "metacog_*"
    assert (
        'include_path "$(metacog include-path)"'
        in steps["Evaluate the checkpoint with lm-eval"]["run"]
    )


def _bash(run: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-e", "-c", run], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.mark.slow
def test_the_workflow_steps_run_on_a_tiny_checkpoint(tmp_path) -> None:
    # ~1 min: lm_eval's CLI with the hf backend on a 2-layer random GPT-2, then bless and gate
    model = build_tiny_model(tmp_path / "tiny")
    (tmp_path / "ci").mkdir()
    settings = yaml.safe_load(CONFIG.read_text())
    settings.pop("benchmarks")  # the example requires all six; this run asks one
    (tmp_path / "ci" / "gate.yaml").write_text(yaml.safe_dump(settings))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        **{k: str(v) for k, v in _workflow()["env"].items()},
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "MODEL_ARGS": f"pretrained={model},dtype=float32",
        "TASKS": "metacog_mmlu_pro",
        "LM_EVAL_ARGS": "--device cpu --limit 4 --gen_kwargs max_gen_toks=8",
        "LM_EVAL_METADATA": '{"metacog_data": "bundled", "metacog_probe_max_tokens": 8}',
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    steps = _steps()
    for name in (
        "Evaluate the checkpoint with lm-eval",
        "Save the run as the new baseline",
        "Gate against the committed baseline",
    ):
        proc = _bash(steps[name]["run"], env, tmp_path)
        assert proc.returncode == 0, f"{name}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    # the run against its own baseline: nothing changed (a random 2-layer model parses few
    # probes and solves few items, so some metrics are undefined: inconclusive, not failed)
    last = proc.stdout.splitlines()[-1]
    assert "(exit 0)" in last and "gated test(s): 0 failed" in last
    summary = (tmp_path / "summary.md").read_text()
    assert "Commit ci/metacog-baseline.json" in summary and "## " in summary
    schema = etree.XMLSchema(etree.parse(str(REPO / "tests" / "data" / "junit.xsd")))
    assert schema.validate(etree.parse(str(tmp_path / "gate-junit.xml")))
