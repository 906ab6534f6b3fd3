"""The metacog lm-eval task in process: requests, scoring and aggregations against a scripted LM.

A scripted LM answers each prompt from a table built with the benchmark layer's own prompt
builders, so the expected correctness, confidences and corpus metrics are known exactly and
are recomputed here independently (scikit-learn, numpy) from the script.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from typing import Any

import lm_eval
import numpy as np
import pytest
from lm_eval.api.model import LM
from lm_eval.tasks import TaskManager
from sklearn.metrics import brier_score_loss, roc_auc_score

from metacog_metrics.tetrachoric import tetrachoric
from metacog_tasks.benchmarks import get_benchmark
from metacog_tasks.lmeval import LOGPROB_PREFIX, tasks_dir
from metacog_tasks.lmeval.task import MetacogTask

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


class ScriptedLM(LM):
    """Answers exact prompt texts from a script; counts the requests it gets."""

    def __init__(
        self,
        replies: dict[str, str],
        p_yes: dict[str, float],
        samples: dict[str, list[str]] | None = None,
        wrap: Any = None,
    ) -> None:
        super().__init__()
        self.replies = replies
        self.p_yes = p_yes
        self.samples = samples or {}
        self.wrap = wrap  # maps a script key to the context the task is expected to send
        self.seen: Counter[str] = Counter()
        self.sample_calls: Counter[str] = Counter()
        self.request_order: list[str] = []

    def _key(self, context: str) -> str:
        if self.wrap is None:
            return context
        for key in list(self.replies) + list(self.p_yes):
            if self.wrap(key) == context:
                return key
        raise KeyError(context[:200])

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        self.request_order.append("generate_until")
        out = []
        for req in requests:
            context, kwargs = req.args[0], req.args[1]
            key = self._key(context)
            self.seen[key] += 1
            if kwargs.get("do_sample"):
                assert kwargs["temperature"] > 0
                i = self.sample_calls[key]
                self.sample_calls[key] += 1
                pool = self.samples[key]
                out.append(pool[i % len(pool)])
            else:
                out.append(self.replies[key])
        return out

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        self.request_order.append("loglikelihood")
        out = []
        for req in requests:
            context, continuation = req.args
            assert context.endswith("\n" + LOGPROB_PREFIX)
            key = self._key(context[: -len("\n" + LOGPROB_PREFIX)])
            p = self.p_yes[key]
            out.append((math.log(p) if continuation == " Yes" else math.log1p(-p), False))
        return out

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        raise NotImplementedError


def _script(bench_name: str, n: int, *, probe: str = "prospective", seed: int = 3):
    """A script for the first ``n`` bundled items, and the truth it encodes."""
    bench = get_benchmark(bench_name)
    items = bench.load("bundled")[:n]
    rng = np.random.default_rng(seed)
    replies: dict[str, str] = {}
    p_yes: dict[str, float] = {}
    truth = []
    for k, item in enumerate(items):
        correct = bool(k % 3 != 1)
        verdict = ["Yes", "No", None][k % 4 % 3]  # some probes carry no verdict
        prompts = bench.solve_prompts(item)
        for i, prompt in enumerate(prompts):
            replies[prompt] = (
                bench.reference_response(item, i)
                if correct
                else bench.wrong_response(item, np.random.default_rng(k), i)
            )
        probe_prompt = bench.probe_prompt(item, probe)
        replies[probe_prompt] = (
            f"It looks familiar.\nAnswer: {verdict}" if verdict else "Hard to say, honestly."
        )
        p = float(rng.uniform(0.05, 0.95))
        p_yes[probe_prompt] = p
        numeric = int(rng.integers(0, 101))
        replies[bench.probe_prompt(item, "numeric")] = f"Some reason.\nConfidence: {numeric}"
        truth.append(
            {
                "item": item,
                "correct": 1.0 if correct else 0.0,
                "verbal": {"Yes": 1.0, "No": 0.0, None: math.nan}[verdict],
                "p_yes": p,
                "numeric": numeric / 100,
                "probe_prompt": probe_prompt,
                "n_solve": len(prompts),
            }
        )
    return bench, replies, p_yes, truth


def _evaluate(lm: LM, task: str, metadata: dict, **kwargs: Any) -> dict:
    manager = TaskManager(include_path=str(tasks_dir()), include_defaults=False, metadata=metadata)
    return lm_eval.simple_evaluate(
        model=lm,
        tasks=[task],
        task_manager=manager,
        bootstrap_iters=kwargs.pop("bootstrap_iters", 1000),
        **kwargs,
    )


def _ece(conf: np.ndarray, correct: np.ndarray) -> float:
    bins = np.minimum((conf * 10).astype(int), 9)
    total = 0.0
    for b in np.unique(bins):
        sel = bins == b
        total += sel.sum() * abs(correct[sel].mean() - conf[sel].mean())
    return total / conf.size


@pytest.fixture(scope="module")
def mmlu_run():
    _bench, replies, p_yes, truth = _script("mmlu_pro", 12)
    lm = ScriptedLM(replies, p_yes)
    res = _evaluate(lm, "metacog_mmlu_pro", {"metacog_data": "bundled"}, limit=12, log_samples=True)
    return lm, res, truth


def test_requests_per_document_and_order(mmlu_run) -> None:
    lm, res, truth = mmlu_run
    # Each probe prompt asked once greedily; each solve prompt once.
    for t in truth:
        assert lm.seen[t["probe_prompt"]] == 1
    # Log-likelihoods run first, so a backend without them fails before paid generation.
    assert lm.request_order == ["loglikelihood", "generate_until"]
    sample = res["samples"]["metacog_mmlu_pro"][0]
    kinds = [type(a[1]).__name__ for a in sample["arguments"]]
    assert kinds == ["dict", "dict", "str", "str"]  # probe, solve, " Yes", " No" (idx order)
    assert sample["arguments"][2][1] == " Yes" and sample["arguments"][3][1] == " No"


def test_records_carry_item_fields(mmlu_run) -> None:
    _, res, truth = mmlu_run
    samples = res["samples"]["metacog_mmlu_pro"]
    assert [s["record"]["item_id"] for s in samples] == [t["item"].item_id for t in truth]
    for s, t in zip(samples, truth):
        rec = s["record"]
        assert rec["benchmark"] == "mmlu_pro" and rec["probe"] == "prospective"
        assert rec["question"] == t["item"].question
        assert rec["correct"] == t["correct"]
        assert rec["grade_status"] in ("ok", "unextractable")
        verbal = rec["confidence"]["verbal_binary"]
        if math.isnan(t["verbal"]):
            assert verbal["confidence"] is None and verbal["status"] == "unparseable"
        else:
            assert verbal["confidence"] == t["verbal"] and verbal["status"] == "ok"
        assert rec["confidence"]["logprob"]["confidence"] == pytest.approx(t["p_yes"], abs=1e-12)
        assert set(rec["confidence"]) == {"verbal_binary", "logprob"}


def test_aggregations_match_independent_computation(mmlu_run) -> None:
    _, res, truth = mmlu_run
    r = res["results"]["metacog_mmlu_pro"]
    y = np.array([t["correct"] for t in truth])
    verbal = np.array([t["verbal"] for t in truth])
    p = np.array([t["p_yes"] for t in truth])
    ok = ~np.isnan(verbal)

    assert r["acc,none"] == pytest.approx(y.mean())
    assert r["acc_stderr,none"] == pytest.approx(y.std(ddof=1) / math.sqrt(y.size))
    assert r["yes_rate_verbal,none"] == pytest.approx(verbal[ok].mean())
    assert r["unparseable_verbal,none"] == pytest.approx((~ok).mean())
    assert r["auroc_verbal,none"] == pytest.approx(roc_auc_score(y[ok], verbal[ok]))
    assert r["brier_verbal,none"] == pytest.approx(brier_score_loss(y[ok], verbal[ok]))
    assert r["ece_verbal,none"] == pytest.approx(_ece(verbal[ok], y[ok]))
    assert r["tetrachoric_verbal,none"] == pytest.approx(tetrachoric(verbal[ok], y[ok]).rho)
    assert r["yes_rate_logprob,none"] == pytest.approx(p.mean())
    assert r["auroc_logprob,none"] == pytest.approx(roc_auc_score(y, p))
    assert r["brier_logprob,none"] == pytest.approx(brier_score_loss(y, p))
    assert r["ece_logprob,none"] == pytest.approx(_ece(p, y))
    assert r["tetrachoric_logprob,none"] == pytest.approx(
        tetrachoric((p >= 0.5).astype(float), y).rho
    )
    assert r["record,none"] == len(truth)
    assert "unparseable_logprob,none" not in r  # a log-likelihood always parses
    assert res["higher_is_better"]["metacog_mmlu_pro"]["brier_logprob"] is False


def test_results_config_names_the_options(mmlu_run) -> None:
    _, res, _ = mmlu_run
    meta = res["configs"]["metacog_mmlu_pro"]["metadata"]["metacog"]
    assert meta["benchmark"] == "mmlu_pro" and meta["probe"] == "prospective"
    assert meta["confidence_kinds"] == ["verbal_binary", "logprob"]
    assert meta["data"] == "bundled"
    assert "class" not in res["configs"]["metacog_mmlu_pro"]


def test_counterfactual_numeric_and_sampled() -> None:
    _bench, replies, p_yes, truth = _script("squad", 8, probe="counterfactual")
    samples = {
        t["probe_prompt"]: ["Sure.\nAnswer: Yes", "Hmm.\nAnswer: No", "Hard to tell."]
        for t in truth
    }
    lm = ScriptedLM(replies, p_yes, samples)
    res = _evaluate(
        lm,
        "metacog_squad_cf",
        {
            "metacog_data": "bundled",
            "metacog_confidence": "verbal,sampled,numeric",
            "metacog_samples": 4,
            "metacog_temperature": 0.7,
        },
        limit=8,
    )
    r = res["results"]["metacog_squad_cf"]
    # numeric is a prospective probe: dropped from the counterfactual task.
    assert not any(k.startswith("auroc_numeric") for k in r)
    assert "auroc_logprob,none" not in r
    for s in res["samples"]["metacog_squad_cf"]:
        sampled = s["record"]["confidence"]["sampled"]
        # Samples cycle Yes, No, unparseable, Yes: 2 yes of 3 parsed.
        assert sampled["n_requested"] == 4 and sampled["n_samples"] == 3
        assert sampled["confidence"] == pytest.approx(2 / 3)
        assert s["record"]["probe"] == "counterfactual"
    assert r["yes_rate_sampled,none"] == pytest.approx(2 / 3)
    assert all(v == 4 for k, v in lm.sample_calls.items())


def test_numeric_probe_on_prospective_task() -> None:
    _bench, replies, p_yes, truth = _script("omni_math", 6)
    lm = ScriptedLM(replies, p_yes)
    res = _evaluate(
        lm,
        "metacog_omni_math",
        {"metacog_data": "bundled", "metacog_confidence": "numeric"},
        limit=6,
    )
    nums = [
        s["record"]["confidence"]["verbal_numeric"]["confidence"]
        for s in res["samples"]["metacog_omni_math"]
    ]
    assert nums == pytest.approx([t["numeric"] for t in truth])
    y = np.array([t["correct"] for t in truth])
    assert res["results"]["metacog_omni_math"]["brier_numeric,none"] == pytest.approx(
        brier_score_loss(y, np.array(nums))
    )


def test_circular_mathbench_asks_every_rotation() -> None:
    _bench, replies, p_yes, truth = _script("mathbench", 10)
    lm = ScriptedLM(replies, p_yes)
    res = _evaluate(lm, "metacog_mathbench", {"metacog_data": "bundled"}, limit=10)
    samples = res["samples"]["metacog_mathbench"]
    for s, t in zip(samples, truth):
        n = t["n_solve"]
        assert len(s["arguments"]) == 1 + n + 2
        solve = s["record"]["solve_text"]
        assert (len(solve) == n) if n > 1 else isinstance(solve, str)
        assert s["record"]["correct"] == t["correct"]
    assert any(t["n_solve"] == 4 for t in truth)


def test_chat_template_and_system_instruction_wrap_every_prompt() -> None:
    _bench, replies, p_yes, truth = _script("mmlu_pro", 3)

    def wrap(text: str) -> str:
        return f"<sys>Be careful.</sys><user>{text}</user><assistant>"

    class ChatLM(ScriptedLM):
        tokenizer_name = "scripted"

        def apply_chat_template(self, chat_history, add_generation_prompt=True) -> str:
            assert add_generation_prompt
            assert [m["role"] for m in chat_history] == ["system", "user"]
            return wrap(chat_history[1]["content"]).replace(
                "Be careful.", chat_history[0]["content"]
            )

    lm = ChatLM(replies, p_yes, wrap=wrap)
    res = _evaluate(
        lm,
        "metacog_mmlu_pro",
        {"metacog_data": "bundled"},
        limit=3,
        apply_chat_template=True,
        system_instruction="Be careful.",
    )
    sample = res["samples"]["metacog_mmlu_pro"][0]
    probe_ctx, solve_ctx = sample["arguments"][0][0], sample["arguments"][1][0]
    assert probe_ctx == wrap(truth[0]["probe_prompt"])
    assert solve_ctx.startswith("<sys>Be careful.</sys><user>") and solve_ctx.endswith(
        "<assistant>"
    )
    assert res["results"]["metacog_mmlu_pro"]["acc,none"] == pytest.approx(
        np.mean([t["correct"] for t in truth])
    )


def test_predict_only_grades_nothing() -> None:
    _bench, replies, p_yes, _truth = _script("mmlu_pro", 4)
    lm = ScriptedLM(replies, p_yes)
    res = _evaluate(lm, "metacog_mmlu_pro", {"metacog_data": "bundled"}, limit=4, predict_only=True)
    r = res["results"]["metacog_mmlu_pro"]
    assert "acc,none" not in r and r["record,none"] == 4
    for s in res["samples"]["metacog_mmlu_pro"]:
        assert s["record"]["grade_status"] == "not_graded" and s["record"]["correct"] is None
        assert s["record"]["confidence"]["logprob"]["confidence"] is not None


def test_few_shot_is_refused_with_a_clear_message() -> None:
    manager = TaskManager(
        include_path=str(tasks_dir()),
        include_defaults=False,
        metadata={"metacog_data": "bundled"},
    )
    task = manager.load(["metacog_mmlu_pro"])["tasks"]["metacog_mmlu_pro"]
    assert isinstance(task, MetacogTask)
    doc = task.eval_docs[0]
    with pytest.raises(ValueError, match="zero-shot"):
        task.fewshot_context(doc, 2)


def test_padding_duplicates_do_not_leak_into_results() -> None:
    """Data-parallel padding appends extra responses to the last request: keep ``repeats``."""
    from lm_eval.api.instance import Instance

    manager = TaskManager(
        include_path=str(tasks_dir()),
        include_defaults=False,
        metadata={"metacog_data": "bundled", "metacog_confidence": "sampled"},
    )
    task = manager.load(["metacog_mmlu_pro"])["tasks"]["metacog_mmlu_pro"]
    doc = task.eval_docs[0]
    inst = task.construct_requests(doc, "ctx", metadata=("metacog_mmlu_pro", 0, 1))
    sampled = next(i for i in inst if i.arguments[1].get("do_sample"))
    greedy = next(i for i in inst if not i.arguments[1].get("do_sample"))
    assert isinstance(sampled, Instance) and sampled.repeats == 10
    sampled.resps = ["Answer: Yes"] * 10 + ["padding"] * 3
    greedy.resps = ["probe reply", "padding"]
    task._instances = [sampled, greedy]
    task.apply_filters()
    assert sampled.filtered_resps["none"] == ["Answer: Yes"] * 10
    assert greedy.filtered_resps["none"] == "probe reply"


def test_unknown_metadata_key_fails_when_the_task_is_built() -> None:
    from metacog_tasks.lmeval.options import OptionsError

    manager = TaskManager(
        include_path=str(tasks_dir()),
        include_defaults=False,
        metadata={"metacog_data": "bundled", "metacog_confidense": "verbal"},
    )
    with pytest.raises(OptionsError, match="metacog_confidense"):
        manager.load(["metacog_mmlu_pro"])


def test_missing_data_names_the_task_and_the_metadata_key(tmp_path) -> None:
    from metacog_tasks.lmeval.task import TaskDataError

    missing = tmp_path / "nowhere.jsonl"
    manager = TaskManager(
        include_path=str(tasks_dir()),
        include_defaults=False,
        metadata={"metacog_data": {"squad": str(missing)}},
    )
    with pytest.raises(TaskDataError, match="metacog_squad_cf") as info:
        manager.load(["metacog_squad_cf"])
    assert str(missing) in str(info.value)
    assert '--metadata \'{"metacog_data": {"squad": "PATH"}}\'' in str(info.value)


def test_local_jsonl_in_the_original_format(tmp_path) -> None:
    """``metacog_data`` pointing at a file in MMLU-Pro's own field names."""
    src = get_benchmark("mmlu_pro")
    rows = [dict(i.record) for i in src.load("bundled")[:3]]
    path = tmp_path / "mmlu_pro_subset.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    manager = TaskManager(
        include_path=str(tasks_dir()),
        include_defaults=False,
        metadata={"metacog_data": {"mmlu_pro": str(path)}},
    )
    task = manager.load(["metacog_mmlu_pro"])["tasks"]["metacog_mmlu_pro"]
    assert [d["item_id"] for d in task.eval_docs] == [str(r["question_id"]) for r in rows]


def test_grading_refuses_model_code_without_a_boundary_but_survives_grader_bugs(monkeypatch):
    """No sandbox boundary stops the run with the sandbox's message (as in Inspect); any other
    grader failure is one item's ``grader_error``, so a finished run is not lost."""
    import types

    import metacog_tasks.sandbox as sandbox

    monkeypatch.setattr(sandbox, "_bwrap_problem", lambda: "bwrap not found")
    monkeypatch.delenv(sandbox.UNSAFE_ENV, raising=False)
    bench = get_benchmark("scicode")
    item = next(i for i in bench.load("bundled") if i.meta.get("test_cases"))
    task = types.SimpleNamespace(_bench=bench, _task="metacog_scicode")
    with pytest.raises(sandbox.SandboxUnavailableError, match="apt-get install bubblewrap"):
        MetacogTask._grade(task, item, ["def f():\n    return 1"])

    class Broken:
        def grade_responses(self, item, texts):
            raise KeyError("grader bug")

    grade = MetacogTask._grade(types.SimpleNamespace(_bench=Broken(), _task="t"), item, ["x"])
    assert grade.status == "grader_error" and math.isnan(grade.correct)
    assert "grader bug" in grade.details["error"]
