"""The GitHub Actions workflow of docs/gate.md: what a fresh runner needs is in it, the docs show
the committed files, and (slow) ``examples/ci/run_workflow.py`` runs its steps in order offline:
the first run says to bless, the bless run saves the baseline, the unchanged checkpoint passes
and a degraded one fails, with JUnit that Jenkins' schema accepts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from lxml import etree

from metacog_tasks.benchmarks import BENCHMARK_NAMES
from metacog_tasks.cli import build_parser
from metacog_tasks.gate_command import load_config

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "examples" / "ci" / "metacog-gate.yml"
CONFIG = REPO / "examples" / "ci" / "gate.yaml"
SCRIPT = REPO / "examples" / "ci" / "run_workflow.py"


def _flow() -> dict:
    # PyYAML reads the key "on" as True (YAML 1.1)
    return yaml.safe_load(WORKFLOW.read_text())


def _steps() -> dict[str, dict]:
    (job,) = _flow()["jobs"].values()
    return {s.get("name", s.get("uses")): s for s in job["steps"]}


def test_the_docs_show_the_committed_workflow_and_config() -> None:
    doc = (REPO / "docs" / "gate.md").read_text()
    assert WORKFLOW.read_text() in doc and CONFIG.read_text() in doc
    config = load_config(CONFIG)
    assert config.rule == "significant" and config.alpha == 0.01


def test_the_workflow_has_what_a_fresh_runner_needs() -> None:
    flow = _flow()
    on = flow[True]
    assert set(on) == {"workflow_dispatch", "workflow_call"}
    assert set(on["workflow_call"]["inputs"]) == set(on["workflow_dispatch"]["inputs"])
    assert flow["permissions"] == {
        "contents": "read",
        "checks": "write",
        "pull-requests": "write",
    }
    steps = _steps()
    install = steps["Install metacog-eval from its repository"]
    assert 'pip install "${SOURCE}[hf,scicode]"' in install["run"]  # from source, not an index
    assert "inputs.metacog-repository" in install["env"]["SOURCE"]
    assert "bwrap" in steps["Set up the sandbox for SciCode's tests"]["run"]
    # every default benchmark's data are fetched; MathBench is left out of the default with a note
    env = flow["env"]
    benches = env["BENCHMARKS"].split()
    assert set(benches) == set(BENCHMARK_NAMES) - {"mathbench"}
    tasks = env["TASKS"].split(",")
    assert sorted(tasks) == sorted(
        [f"metacog_{b}" for b in benches] + [f"metacog_{b}_cf" for b in benches]
    )
    assert "MathBench has no Hub copy" in WORKFLOW.read_text()
    assert load_config(CONFIG).benchmarks == tuple(benches)
    assert "BENCHMARKS" in steps["Fetch the benchmarks' data"]["run"]
    comment = steps["Comment on the pull request"]
    assert comment["uses"].startswith("marocchino/sticky-pull-request-comment@")
    assert comment["with"]["path"] == "gate.md"
    assert steps["Publish the JUnit report"]["uses"].startswith("mikepenz/action-junit-report@")


def test_the_workflow_commands_parse() -> None:
    steps = _steps()
    gate = steps["Gate against the committed baseline"]["run"].replace("\\\n", " ")
    argv = gate.replace('"$BASELINE"', "ci/b.json").replace('"$GATE_CONFIG"', "ci/gate.yaml")
    args = build_parser().parse_args(argv.replace("$GATE_ARGS", "--pool").split()[1:])
    assert (args.baseline, args.candidate, args.comment, args.pool) == (
        ["ci/b.json"],
        ["runs/"],
        "gate.md",
        True,
    )
    bless = steps["Save the run as the new baseline"]["run"].splitlines()[1]
    argv = bless.replace('"$BASELINE"', "ci/b.json").replace('"$GATE_CONFIG"', "ci/gate.yaml")
    args = build_parser().parse_args(argv.replace("$GATE_ARGS", "--pool").split()[1:])
    assert args.gate_command == "bless" and args.output == "ci/b.json" and args.pool


@pytest.mark.slow
def test_the_workflow_steps_run_in_order_offline(tmp_path) -> None:
    # ~4 min on two cores: four runs of the workflow, each installing the repository afresh
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--workdir", str(tmp_path), "--log", str(tmp_path / "log")],
        capture_output=True,
        text=True,
        timeout=2400,
    )
    log = proc.stdout
    assert proc.returncode == 0, log[-5000:] + proc.stderr[-3000:]
    summary = log[log.index("\nsummary:") :]
    assert summary.count("  ok   ") == 4
    first = log[log.index("run 1:") : log.index("run 2:")]
    assert "A first run? Bless a run of the checkpoint you trust" in first
    assert "metacog gate: PASS (exit 0)" in log[log.index("run 3:") : log.index("run 4:")]
    assert "metacog gate: FAIL (exit 1)" in log[log.index("run 4:") :]
    jenkins = etree.XMLSchema(etree.parse(str(REPO / "tests" / "data" / "jenkins-junit-10.xsd")))
    for run in ("run1", "run3", "run4"):
        junit = etree.parse(str(tmp_path / run / "workspace" / "gate-junit.xml"))
        assert jenkins.validate(junit), (run, jenkins.error_log.last_error)
        assert (tmp_path / run / "workspace" / "gate.md").read_text().startswith("## ")
    assert "Baseline saved" in (tmp_path / "run2" / "step-summary.md").read_text()
