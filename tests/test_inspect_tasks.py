"""Inspect tasks in-process: registry, task arguments, fresh conversations, metrics, epochs.

A scripted mockllm answers every prompt from a table built with the benchmark layer (usage is
set on each output, so Inspect never downloads a tokenizer). Expected metric values are computed
here from the script with scikit-learn, independently of the code under test.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from sklearn.metrics import roc_auc_score

from metacog_tasks.benchmarks import get_benchmark
from metacog_tasks.inspect_tasks import (
    SCORE_KEYS,
    load_benchmark_items,
    metacog_task,
    mmlu_pro,
    probe_plan,
)

# Inspect's own retry set-up warns on every model call (tenacity API change).
pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)

BENCH = "mmlu_pro"


def _usage(out: ModelOutput) -> ModelOutput:
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out


class Script:
    """A scripted model: probe and solve replies per item, every call recorded.

    ``yes[i]`` is the probe verdict for item ``i`` (``None``: an unparseable reply) and
    ``right[i]`` whether its solve reply is the reference answer. ``flip_epoch2`` lists items
    whose solve is flipped on their second solve call (epoch 2).
    """

    def __init__(self, yes, right, flip_epoch2=(), sampled=None):
        self.bench = get_benchmark(BENCH)
        self.items = self.bench.load("bundled")
        self.yes, self.right = list(yes), list(right)
        self.flip = set(flip_epoch2)
        self.sampled = sampled or {}
        self.calls: list[tuple[str, int, object]] = []
        self.count: dict[tuple[str, int], int] = defaultdict(int)
        self.lookup: dict[str, tuple[str, int]] = {}
        for i, item in enumerate(self.items):
            self.lookup[self.bench.solve_prompt(item)] = ("solve", i)
            for probe in ("prospective", "counterfactual", "numeric"):
                self.lookup[self.bench.probe_prompt(item, probe)] = (probe, i)

    def __call__(self, input, tools, tool_choice, config):  # mockllm custom_outputs callable
        assert len(input) == 1, "every request must be a fresh one-message conversation"
        kind, i = self.lookup[input[0].text]
        n = self.count[(kind, i)]
        self.count[(kind, i)] += 1
        self.calls.append((kind, i, config))
        if kind == "solve":
            right = self.right[i] != (n == 1 and i in self.flip)
            item = self.items[i]
            text = (
                self.bench.reference_response(item)
                if right
                else self.bench.wrong_response(item, np.random.default_rng(i))
            )
        elif kind == "numeric":
            text = f"Some rationale.\nConfidence: {20 + 5 * i}"
        elif config.temperature and config.temperature > 0 and i in self.sampled:
            verdicts = self.sampled[i]
            text = f"Rationale.\nAnswer: {verdicts[n % len(verdicts)]}"
        elif self.yes[i] is None:
            text = "I cannot predict that."
        else:
            text = f"It is a standard question.\nAnswer: {'Yes' if self.yes[i] else 'No'}"
        return _usage(ModelOutput.from_content("mockllm", text))


def _run(task, script, tmp_path, **kwargs):
    model = get_model("mockllm/model", custom_outputs=script)
    logs = inspect_eval(task, model=model, display="none", log_dir=str(tmp_path), **kwargs)
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return logs[0]


def _metrics(log, scorer: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for score in log.results.scores:
        if score.name == scorer:
            out.update({k: v.value for k, v in score.metrics.items()})
    return out


def _ece_binary(conf, y):
    # For 0/1 confidence every binning gives the error rate P(conf != y).
    return float(np.mean(np.asarray(conf) != np.asarray(y)))


N = 14
YES = [True, True, False, True, None, False, True, False, True, True, False, True, True, False]
RIGHT = [True, False, False, True, True, True, False, False, True, True, False, True, False, True]


def test_tasks_are_registered_under_the_package_namespace() -> None:
    from inspect_ai._util.registry import registry_lookup

    import metacog_tasks._registry  # noqa: F401  (what the entry point imports)

    for name in ("squad", "mmlu_pro", "legalbench", "mathbench", "omni_math", "scicode"):
        assert registry_lookup("task", f"metacog_tasks/{name}") is not None, name
    assert registry_lookup("task", "metacog_tasks/metacog") is not None
    for name in ("auroc", "brier", "ece", "tetrachoric", "yes_rate", "unparseable_rate"):
        assert registry_lookup("metric", f"metacog_tasks/{name}") is not None, name
    assert registry_lookup("scorer", "metacog_tasks/prospective_verbal") is not None


def test_one_factory_makes_every_registered_benchmarks_task() -> None:
    """Each record's task: the shared parameters, then its options, sandbox and mode."""
    import inspect

    from inspect_ai._util.registry import registry_info, registry_lookup

    import metacog_tasks.inspect_tasks as package
    from metacog_tasks.benchmarks import benchmark_classes
    from metacog_tasks.inspect_tasks import benchmark_tasks, metacog

    shared = ["probe", "confidence", "k", "temperature", "probe_max_tokens", "seed"]
    shared += ["data", "split", "prompts", "options"]
    tasks = benchmark_tasks()
    assert list(tasks) == [cls.name for cls in benchmark_classes()]
    for cls in benchmark_classes():
        fn = tasks[cls.name]
        assert registry_lookup("task", f"metacog_tasks/{cls.name}") is fn
        assert getattr(package, cls.name) is fn  # `from metacog_tasks.inspect_tasks import x`
        own = [o.name for o in cls.task_options]
        own += ["sandbox"] if cls.runs_code else []
        own += ["mode"] if len(cls.task_modes) > 1 else []
        params = inspect.signature(fn).parameters
        assert list(params) == shared + own
        assert registry_info(fn).metadata["params"] == shared + own
        assert all(params[o.name].default is None for o in cls.task_options)
        assert fn.__doc__.startswith(f"{cls.title}: {cls.summary}.")
    assert list(inspect.signature(metacog).parameters) == ["benchmark", *shared, "sandbox", "mode"]
    assert inspect.signature(tasks["scicode"]).parameters["mode"].default == "step"
    with pytest.raises(TypeError, match="bogus"):
        mmlu_pro(data="bundled", bogus=1)


def test_inspect_list_tasks_finds_the_generic_task_in_the_source() -> None:
    from pathlib import Path

    from inspect_ai._eval.list import list_tasks

    import metacog_tasks

    root = Path(metacog_tasks.__file__).parent.parent
    found = list_tasks(["metacog_tasks"], root_dir=root)
    assert [(t.file, t.name) for t in found] == [
        ("metacog_tasks/inspect_tasks/tasks.py", "metacog")
    ]


def test_the_generic_task_is_the_benchmarks_task_with_its_name_as_an_argument() -> None:
    from metacog_tasks.inspect_tasks import legalbench, metacog

    named = legalbench(data="bundled", tasks="proa,hearsay", fewshot=1)
    options = {"tasks": ["proa", "hearsay"], "fewshot": 1}
    generic = metacog("legalbench", data="bundled", options=options)
    assert [s.id for s in named.dataset] == [s.id for s in generic.dataset]
    assert {s.id.split(":")[0] for s in named.dataset} == {"proa", "hearsay"}
    assert named.metadata == generic.metadata
    assert named.metadata["metacog"]["benchmark"] == "legalbench"


def test_task_has_one_sample_per_item_with_the_item_id() -> None:
    task = mmlu_pro(data="bundled", probe="prospective,counterfactual", confidence="verbal")
    items = load_benchmark_items(BENCH, data="bundled").items
    assert [s.id for s in task.dataset] == [it.item_id for it in items]
    assert all(s.metadata["benchmark"] == BENCH for s in task.dataset)
    names = [s.__registry_info__.name.split("/")[-1] for s in task.scorer]
    assert names == ["prospective_verbal", "counterfactual_verbal"]


def test_bad_task_arguments_fail_with_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown probe 'retro'"):
        mmlu_pro(data="bundled", probe="retro")
    with pytest.raises(ValueError, match="unknown confidence 'logprob'"):
        mmlu_pro(data="bundled", confidence="logprob")
    with pytest.raises(ValueError, match="prospective wording"):
        mmlu_pro(data="bundled", probe="counterfactual", confidence="numeric")
    with pytest.raises(ValueError, match="temperature > 0"):
        mmlu_pro(data="bundled", confidence="sampled", temperature=0)
    with pytest.raises(ValueError, match="max_tokens must be >= 1"):
        mmlu_pro(data="bundled", probe_max_tokens=0)
    with pytest.raises(ValueError, match="only used by scicode"):
        metacog_task(BENCH, data="bundled", sandbox="docker")
    with pytest.raises(ValueError, match="unknown benchmark"):
        metacog_task("nope", data="bundled")
    with pytest.raises(ValueError, match=r"data path not found(.|\n)*-T data=bundled"):
        mmlu_pro(data="no/such/file.jsonl")
    # numeric pairs with the prospective probe only
    assert probe_plan(["prospective", "counterfactual"], ["verbal", "numeric"]) == [
        ("prospective", "verbal"),
        ("prospective", "numeric"),
        ("counterfactual", "verbal"),
    ]


def test_probe_and_solve_in_fresh_conversations_and_metrics(tmp_path) -> None:
    script = Script(YES, RIGHT)
    log = _run(mmlu_pro(data="bundled"), script, tmp_path)

    # One probe and one solve per item, each a one-message conversation (asserted in Script),
    # the probe at temperature 0 (the task default) with the probe token budget.
    kinds = [k for k, _, _ in script.calls]
    assert kinds.count("prospective") == N and kinds.count("solve") == N
    assert all(c.temperature == 0.0 for _, _, c in script.calls)
    assert all(c.max_tokens == 256 for k, _, c in script.calls if k == "prospective")

    conf = np.array([math.nan if v is None else float(v) for v in YES])
    y = np.array(RIGHT, dtype=float)
    ok = ~np.isnan(conf)
    m = _metrics(log, "prospective_verbal")
    assert m["accuracy"] == pytest.approx(y.mean())
    assert m["stderr"] == pytest.approx(y.std(ddof=1) / math.sqrt(N))
    assert m["yes_rate"] == pytest.approx(conf[ok].mean())
    assert m["unparseable_rate"] == pytest.approx(1 / N)
    assert m["auroc"] == pytest.approx(roc_auc_score(y[ok], conf[ok]))
    assert m["brier"] == pytest.approx(np.mean((conf[ok] - y[ok]) ** 2))
    assert m["ece"] == pytest.approx(_ece_binary(conf[ok], y[ok]))
    from metacog_metrics.tetrachoric import tetrachoric

    assert m["tetrachoric"] == pytest.approx(tetrachoric(conf[ok], y[ok]).rho)

    # Score.value holds everything metrics need; texts in metadata and explanation.
    sample = log.samples[4]  # the unparseable probe
    score = sample.scores["prospective_verbal"]
    assert set(score.value) == set(SCORE_KEYS)
    assert math.isnan(score.value["confidence"]) and score.value["parsed"] == 0.0
    assert score.metadata["probe_status"] == "refusal"
    assert score.metadata["probe_text"] == "I cannot predict that."
    assert "PROBE (prospective_verbal)" in score.explanation and "SOLVE" in score.explanation
    assert sample.messages[0].text == script.bench.solve_prompt(script.items[4])


def test_both_probes_share_one_solve(tmp_path) -> None:
    script = Script(YES, RIGHT)
    task = mmlu_pro(data="bundled", probe=["prospective", "counterfactual"])
    log = _run(task, script, tmp_path, limit=5)
    kinds = [k for k, _, _ in script.calls]
    assert kinds.count("solve") == 5
    assert kinds.count("prospective") == 5 and kinds.count("counterfactual") == 5
    sample = log.samples[0]
    assert set(sample.scores) == {"prospective_verbal", "counterfactual_verbal"}
    cf = sample.scores["counterfactual_verbal"]
    assert cf.metadata["probe"] == "counterfactual"
    expected = script.bench.probe_prompt(script.items[0], "counterfactual")
    assert cf.metadata["probe_prompt"] == expected


def test_sampled_and_numeric_confidence(tmp_path) -> None:
    sampled = {0: ["Yes", "No", "Yes"], 1: ["No", "No", "No"], 2: ["Yes", "Yes", "Yes"]}
    script = Script(YES, RIGHT, sampled=sampled)
    task = mmlu_pro(data="bundled", confidence="verbal,sampled,numeric", k=3, temperature=0.7)
    log = _run(task, script, tmp_path, limit=3)
    sampled_calls = [c for k, i, c in script.calls if k == "prospective" and c.temperature == 0.7]
    assert len(sampled_calls) == 9
    assert sorted(c.seed for c in sampled_calls) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for i, expected in enumerate([2 / 3, 0.0, 1.0]):
        score = log.samples[i].scores["prospective_sampled"]
        assert score.value["confidence"] == pytest.approx(expected)
        assert score.metadata["confidence_kind"] == "sampled"
        assert score.metadata["n_parsed"] == 3 and len(score.metadata["probe_text"]) == 3
        numeric = log.samples[i].scores["prospective_numeric"]
        assert numeric.value["confidence"] == pytest.approx((20 + 5 * i) / 100)
        assert numeric.metadata["confidence_kind"] == "verbal_numeric"
    y = np.array(RIGHT[:3], dtype=float)
    m = _metrics(log, "prospective_sampled")
    assert m["brier"] == pytest.approx(np.mean((np.array([2 / 3, 0.0, 1.0]) - y) ** 2))


def test_epochs_calibration_metrics_see_every_attempt(tmp_path) -> None:
    flip = {0, 3, 5}
    script = Script(YES, RIGHT, flip_epoch2=flip)
    log = _run(mmlu_pro(data="bundled"), script, tmp_path, epochs=2)
    assert len(log.samples) == 2 * N
    conf = np.array([math.nan if v is None else float(v) for v in YES])
    y1 = np.array(RIGHT, dtype=float)
    y2 = np.array([(not r) if i in flip else r for i, r in enumerate(RIGHT)], dtype=float)
    m = _metrics(log, "prospective_verbal")
    # accuracy over the epoch-reduced (per-sample mean) scores; calibration over all 2N pairs
    assert m["accuracy"] == pytest.approx(((y1 + y2) / 2).mean())
    c2, y12 = np.concatenate([conf, conf]), np.concatenate([y1, y2])
    ok = ~np.isnan(c2)
    assert m["auroc"] == pytest.approx(roc_auc_score(y12[ok], c2[ok]))
    assert m["brier"] == pytest.approx(np.mean((c2[ok] - y12[ok]) ** 2))
    assert m["unparseable_rate"] == pytest.approx(2 / (2 * N))


def test_probe_and_solve_are_visible_in_the_transcript(tmp_path) -> None:
    script = Script(YES, RIGHT)
    log = _run(mmlu_pro(data="bundled"), script, tmp_path, limit=1)
    # What `inspect view` reads: the log file, attachments resolved.
    log = read_eval_log(log.location, resolve_attachments=True)
    events = log.samples[0].events
    spans = {e.id: e.name for e in events if e.event == "span_begin"}
    model_spans = [spans.get(e.span_id) for e in events if e.event == "model"]
    assert model_spans == ["probe: prospective_verbal", "solve"]
    probe_event, solve_event = [e for e in events if e.event == "model"]
    assert probe_event.input[0].text == script.bench.probe_prompt(script.items[0])
    assert solve_event.input[0].text == script.bench.solve_prompt(script.items[0])
    meta = log.samples[0].metadata
    assert meta["prospective_verbal_reply"].endswith("Answer: Yes")
    assert meta["solve_reply"] == log.samples[0].output.completion


def test_own_solver_composes_with_the_probe_and_scorer(tmp_path) -> None:
    """A custom solve step (here: the benchmark prompt plus a system note) graded by the scorer."""
    from inspect_ai import Task
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.solver import solver

    from metacog_tasks.inspect_tasks import (
        benchmark_dataset,
        metacog_probe,
        metacog_scorer,
        store_solve,
    )

    script = Script(YES, RIGHT)
    loaded = load_benchmark_items(BENCH, data="bundled")

    @solver
    def my_solver():
        async def solve(state, generate):
            prompt = loaded.benchmark.solve_prompt(loaded.item(state.sample_id))
            state.messages = [ChatMessageUser(content=prompt)]
            state = await generate(state)
            state.messages.insert(0, ChatMessageSystem(content="(logged only)"))
            store_solve(state, [prompt], [state.output.completion])
            return state

        return solve

    task = Task(
        dataset=benchmark_dataset(loaded),
        solver=[metacog_probe(BENCH, data="bundled"), my_solver()],
        scorer=metacog_scorer(BENCH, data="bundled"),
    )
    log = _run(task, script, tmp_path, limit=6)
    got = [s.scores["prospective_verbal"].value["correct"] for s in log.samples]
    assert got == [float(r) for r in RIGHT[:6]]


def test_omni_math_judge_is_an_inspect_model_role(tmp_path) -> None:
    """Text answers math-verify calls wrong go to the grader role (judge_on=wrong)."""
    from metacog_tasks.inspect_tasks import omni_math
    from metacog_tasks.inspect_tasks.judge import parse_judgement

    bench = get_benchmark("omni_math")
    items = bench.load("bundled")[:4]
    solve = {bench.solve_prompt(it): i for i, it in enumerate(items)}
    judged: list[str] = []

    def model(input, tools, tool_choice, config):
        text = input[0].text
        if text in solve:  # item i answers in words: rules say wrong, the judge decides
            reply = f"Working...\nSo the answer is $\\boxed{{answer in words {solve[text]}}}$."
        else:
            reply = "Rationale.\nAnswer: Yes"
        return _usage(ModelOutput.from_content("mockllm", reply))

    def grader(input, tools, tool_choice, config):
        text = input[0].text
        judged.append(text)
        verdict = "TRUE" if "answer in words 0" in text or "answer in words 2" in text else "FALSE"
        reply = f"Checked.\nEquivalence Judgement: {verdict}"
        return _usage(ModelOutput.from_content("grader", reply))

    task = omni_math(data="bundled", judge="role:grader", judge_on="wrong")
    logs = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=model),
        model_roles={"grader": get_model("mockllm/model", custom_outputs=grader)},
        display="none",
        log_dir=str(tmp_path),
        limit=4,
    )
    log = logs[0]
    assert log.status == "success", log.error
    assert len(judged) == 4
    for i, item in enumerate(items):  # samples run concurrently: match prompts by answer
        (prompt,) = [p for p in judged if f"answer in words {i}}}" in p]
        assert f"## Reference answer\n{item.target}\n" in prompt
    scores = {s.id: s.scores["prospective_verbal"] for s in log.samples}
    assert {i: scores[it.item_id].value["correct"] for i, it in enumerate(items)} == {
        0: 1.0,
        1: 0.0,
        2: 1.0,
        3: 0.0,
    }
    assert {s.metadata["grade_status"] for s in scores.values()} == {"judged"}
    assert parse_judgement("x\n**Equivalence Judgement:** FALSE") is False
    assert parse_judgement("no verdict") is None
