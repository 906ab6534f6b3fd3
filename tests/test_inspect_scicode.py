"""SciCode through Inspect: the project's sandbox, an Inspect sandbox, and multi-turn problems.

Two SciCode validation problems (19: two steps, 29: three steps) from the shared data folder;
a scripted model answers each step with the gold function or a broken one. Docker itself does
not run here: the Inspect-sandbox route is exercised with Inspect's ``local`` provider (which
runs model code on the host, so it needs the explicit opt-in) and with a recording sandbox that
runs each script behind the project's boundary; the docker configuration is checked as a file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.util import SandboxEnvironmentSpec

from metacog_tasks.benchmarks import get_benchmark
from metacog_tasks.collect.inspect_logs import read_inspect_logs
from metacog_tasks.inspect_tasks import scicode
from metacog_tasks.inspect_tasks.sandbox import in_sandbox, sandbox_spec
from metacog_tasks.sandbox import UNSAFE_ENV, UNSAFE_VALUE, SandboxUnavailableError, run_python

# Inspect's own retry set-up warns on every model call (tenacity API change).
pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)

PROBLEMS = ("19", "29")


@pytest.fixture(scope="module")
def scicode_file(benchmarks_dir, tmp_path_factory):
    rows = [
        line
        for line in (benchmarks_dir / "scicode" / "problems_dev.jsonl").read_text().splitlines()
        if json.loads(line)["problem_id"] in PROBLEMS
    ]
    path = tmp_path_factory.mktemp("scicode") / "problems_dev.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _fn_name(header: str) -> str:
    return re.search(r"def\s+(\w+)", header).group(1)


class StepScript:
    """Gold code for every step except those in ``wrong``; probes: Yes for even positions."""

    def __init__(self, data: str, wrong=()):
        self.bench = get_benchmark("scicode")
        self.items = self.bench.load(data)
        self.wrong = set(wrong)
        self.probe_prompts = {self.bench.probe_prompt(it): it for it in self.items}
        self.conversations: list[int] = []

    def item_for(self, text: str):
        for item in self.items:  # every solve turn shows the step's function header
            if f"```python\n{item.meta['function_header']}" in text:
                return item
        raise AssertionError(f"no step found in {text[:200]!r}")

    def __call__(self, input, tools, tool_choice, config):
        last = input[-1].text
        if last in self.probe_prompts:
            assert len(input) == 1, "the probe must be a fresh conversation"
            i = self.items.index(self.probe_prompts[last])
            text = f"Rationale.\nAnswer: {'Yes' if i % 2 == 0 else 'No'}"
        else:
            self.conversations.append(len(input))
            item = self.item_for(last)
            text = (
                self.bench.wrong_response(item, np.random.default_rng(0))
                if item.item_id in self.wrong
                else self.bench.reference_response(item)
            )
        out = ModelOutput.from_content("mockllm", text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out


def _eval(task, script, log_dir, **kwargs):
    model = get_model("mockllm/model", custom_outputs=script)
    (log,) = inspect_eval(task, model=model, display="none", log_dir=str(log_dir), **kwargs)
    assert log.status == "success", log.error
    return log


def test_docker_sandbox_configuration(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    spec = sandbox_spec("docker", "scicode")
    assert isinstance(spec, SandboxEnvironmentSpec) and spec.type == "docker"
    compose = Path(spec.config)
    assert compose.is_relative_to(tmp_path / "cache")
    assert compose.parent.name == "inspect-scicode-docker"  # the path logs have always shown
    text = compose.read_text()
    assert "network_mode: none" in text and "build: ." in text
    dockerfile = (compose.parent / "Dockerfile").read_text()
    assert "numpy" in dockerfile and "scipy" in dockerfile and "h5py" in dockerfile
    mine = tmp_path / "compose.yaml"
    mine.write_text("services: {}\n")
    assert sandbox_spec(f"docker:{mine}", "scicode") == SandboxEnvironmentSpec("docker", str(mine))
    with pytest.raises(ValueError, match="config file not found"):
        sandbox_spec(f"docker:{tmp_path / 'missing.yaml'}", "scicode")
    assert sandbox_spec("k8s", "scicode") == "k8s"


def test_scicode_task_takes_the_docker_sandbox(scicode_file, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    task = scicode(data=scicode_file, sandbox="docker")  # built, not run: no docker here
    assert task.sandbox.type == "docker" and task.sandbox.config.endswith("compose.yaml")
    assert [s.id for s in task.dataset] == ["19.1", "19.2", "29.1", "29.2", "29.3"]
    problems = scicode(data=scicode_file, mode="problem")
    assert [s.id for s in problems.dataset] == list(PROBLEMS)
    assert problems.dataset[1].metadata["steps"] == ["29.1", "29.2", "29.3"]
    with pytest.raises(ValueError, match="mode must be one of"):
        scicode(data=scicode_file, mode="whole")
    # The multi-turn (problem) solver checks its probe settings like the per-step one.
    with pytest.raises(ValueError, match="temperature > 0"):
        scicode(data=scicode_file, mode="problem", confidence="sampled", temperature=0)
    with pytest.raises(ValueError, match="k must be >= 1"):
        scicode(data=scicode_file, mode="problem", k=0)


def test_local_sandbox_needs_the_explicit_opt_in(scicode_file, monkeypatch) -> None:
    """Inspect's local sandbox runs model code on the host: refused like a missing boundary."""
    monkeypatch.delenv(UNSAFE_ENV, raising=False)
    with pytest.raises(SandboxUnavailableError, match=UNSAFE_ENV):
        scicode(data=scicode_file, sandbox="local")

    class LocalSandboxEnvironment:  # what `inspect eval --sandbox local` hands the scorer
        pass

    bench = get_benchmark("scicode")
    with pytest.raises(SandboxUnavailableError, match="without isolation"):
        in_sandbox(bench, LocalSandboxEnvironment())
    monkeypatch.setenv(UNSAFE_ENV, UNSAFE_VALUE)
    assert scicode(data=scicode_file, sandbox="local").sandbox.type == "local"
    assert in_sandbox(bench, LocalSandboxEnvironment()) is not bench


def test_no_boundary_fails_the_eval_with_the_refusal(scicode_file, tmp_path, monkeypatch) -> None:
    """Without bubblewrap and without the opt-in, grading refuses: the sample errors with the
    one-line message (never a quiet NaN per sample)."""
    import metacog_tasks.sandbox as sandbox

    monkeypatch.setattr(sandbox, "_bwrap_problem", lambda: "bwrap not found")
    monkeypatch.delenv(UNSAFE_ENV, raising=False)
    model = get_model("mockllm/model", custom_outputs=StepScript(scicode_file))
    (log,) = inspect_eval(
        scicode(data=scicode_file),
        model=model,
        display="none",
        log_dir=str(tmp_path),
        limit=1,
    )
    assert log.status == "error"
    assert "apt-get install bubblewrap" in str(log.error) and UNSAFE_ENV in str(log.error)


class RecordingSandbox:
    """An Inspect-like sandbox: files kept per folder, each script run behind the project's
    boundary, the kind of every script (target or test) recorded in order."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.order: list[str] = []

    async def write_file(self, file: str, contents: str) -> None:
        self.files[file] = contents

    async def read_file(self, file: str, text: bool = True):
        if file not in self.files:
            raise FileNotFoundError(file)
        return self.files[file] if text else self.files[file].encode()

    async def exec(self, cmd, cwd=None, timeout=None, timeout_retry=True, **kw):
        import anyio

        assert cmd[1:] == ["-I", "-B", "main.py"] and timeout_retry is False
        inside = {k[len(cwd) + 1 :]: v for k, v in self.files.items() if k.startswith(cwd + "/")}
        script = inside.pop("main.py")
        self.order.append("target" if "targets_out.json" in script else "test")
        out = ("targets_out.json", "outputs.json")
        res = await anyio.to_thread.run_sync(
            lambda: run_python(script, files=inside, collect=out, timeout_s=timeout)
        )
        for name, text in res.files.items():
            self.files[f"{cwd}/{name}"] = text

        class Result:
            returncode, stdout, stderr = res.returncode, res.stdout, res.stderr

        return Result()


def test_problem_mode_computes_every_target_before_any_model_code() -> None:
    """Model code of step 1 may leave files or processes in the sample's sandbox: no target
    of a later step is computed after it ran."""
    import anyio

    from metacog_tasks.inspect_tasks.problems import grade_steps

    bench = get_benchmark("scicode", timeout_s=60)  # a fresh target cache
    items = bench.load("bundled")[:2]  # problem 901: its first two steps
    steps = [(it, bench.reference_response(it)) for it in items]
    env = RecordingSandbox()
    grades = anyio.run(lambda: anyio.to_thread.run_sync(grade_steps, in_sandbox(bench, env), steps))
    assert env.order == ["target", "target", "test", "test"]
    assert [grades[it.item_id].correct for it in items] == [1.0, 1.0]
    assert grades[items[0].item_id].details["isolation"] == {"sandbox": "inspect:RecordingSandbox"}


def test_problem_rows_name_their_benchmark_or_are_bad_samples(scicode_file, tmp_path) -> None:
    """A problem-mode score's rows take the benchmark from its metadata; without it the sample
    is a counted bad one (no benchmark is assumed)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    script = StepScript(scicode_file)
    log = _eval(scicode(data=scicode_file, mode="problem"), script, tmp_path / "run", limit=1)
    assert log.plan.steps[0].solver == "metacog_tasks/scicode_multiturn"
    assert log.eval.dataset.name == "metacog_scicode_problems"
    records = read_inspect_logs([log.location]).records
    assert list(records["item_id"]) == ["19.1", "19.2"]
    assert set(records["benchmark"]) == {"scicode"} and list(records["correct"]) == [1.0, 1.0]
    edited = read_eval_log(log.location)
    del edited.samples[0].scores["prospective_verbal"].metadata["benchmark"]
    path = tmp_path / "edited.eval"
    write_eval_log(edited, str(path))
    result = read_inspect_logs([path])
    assert result.files[0].n_bad == 1 and result.records.empty
    assert "metadata lacks the benchmark" in result.files[0].errors[0]


@pytest.mark.slow
def test_inspect_sandbox_grades_like_the_project_sandbox(
    scicode_file, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(UNSAFE_ENV, UNSAFE_VALUE)  # Inspect's local sandbox: model code on host
    wrong = {"19.2", "29.1"}
    local = _eval(scicode(data=scicode_file), StepScript(scicode_file, wrong), tmp_path / "a")
    inspect_sb = _eval(
        scicode(data=scicode_file, sandbox="local"), StepScript(scicode_file, wrong), tmp_path / "b"
    )
    assert inspect_sb.eval.sandbox.type == "local"
    for a, b in zip(local.samples, inspect_sb.samples):
        expected = 0.0 if a.id in wrong else 1.0
        assert a.scores["prospective_verbal"].value["correct"] == expected, a.id
        assert b.scores["prospective_verbal"].value["correct"] == expected, b.id
        iso_a = a.store["metacog_grade"]["details"]["isolation"]
        iso_b = b.store["metacog_grade"]["details"]["isolation"]
        assert "sandbox" not in iso_a and iso_b["sandbox"] == "inspect:LocalSandboxEnvironment"
    ra = read_inspect_logs([local.location]).records.drop(columns="source")
    rb = read_inspect_logs([inspect_sb.location]).records.drop(columns="source")
    assert ra.equals(rb)


@pytest.mark.slow
def test_problem_mode_solves_sub_steps_in_one_conversation(
    scicode_file, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv(UNSAFE_ENV, UNSAFE_VALUE)  # Inspect's local sandbox: model code on host
    bench = get_benchmark("scicode")
    items = {it.item_id: it for it in bench.load(scicode_file)}
    script = StepScript(scicode_file, wrong={"29.1"})
    # The eval's own --sandbox (not the task argument) is honoured too.
    log = _eval(scicode(data=scicode_file, mode="problem"), script, tmp_path, sandbox="local")
    assert [s.id for s in log.samples] == list(PROBLEMS)
    # Problem 19: turns of 1 and 3 messages; problem 29: 1, 3, 5 (one growing conversation).
    assert sorted(script.conversations) == [1, 1, 3, 3, 5]
    sample = log.samples[1]
    assert [m.role for m in sample.messages] == ["user", "assistant"] * 3

    # A wrong 29.1 breaks every later step that calls it (the model's own code is used),
    # whereas each step alone, with gold earlier code, would pass.
    broken = _fn_name(items["29.1"].meta["function_header"])
    expected = {
        "19.1": 1.0,
        "19.2": 1.0,
        "29.1": 0.0,
        "29.2": 0.0 if broken in items["29.2"].target else 1.0,
        "29.3": 0.0 if broken in items["29.3"].target + items["29.2"].target else 1.0,
    }
    assert 0.0 in (expected["29.2"], expected["29.3"])  # the own-code effect is exercised
    records = read_inspect_logs([log.location]).records
    assert list(records["item_id"]) == list(expected)
    assert dict(zip(records["item_id"], records["correct"])) == expected
    assert list(records["question"]) == [items[i].question for i in expected]
    assert list(records["confidence"]) == [1.0, 0.0, 1.0, 0.0, 1.0]

    grades = sample.store["metacog_step_grades"]
    assert grades["29.1"]["details"]["isolation"]["sandbox"] == "inspect:LocalSandboxEnvironment"
    score = sample.scores["prospective_verbal"]
    assert score.value["n_steps"] == 3 and score.value["correct"] == 0.0
    metrics = {
        k: v.value
        for s in log.results.scores
        if s.name == "prospective_verbal"
        for k, v in s.metrics.items()
    }
    assert metrics["accuracy"] == pytest.approx(np.mean(list(expected.values())))
    assert metrics["yes_rate"] == pytest.approx(0.6)
