"""The rewards' grader: final verdicts cached, failures graded again, no sandbox said aloud."""

from __future__ import annotations

import json
import math
import threading
import urllib.error
import urllib.request

import pytest

import metacog_tasks.sandbox as sandbox
from metacog_tasks.benchmarks import Grade, get_benchmark
from rlmf_plugin._grading import ItemGrader
from rlmf_plugin.engines import RewardScorer, make_label, serve
from rlmf_plugin.rewards import make_rewards

MMLU = next(it for it in get_benchmark("mmlu_pro").load("bundled") if it.item_id == "90001")
RIGHT = "Weighing each option, one fits best. The answer is (A).\nConfidence: 80"
COLS = {"benchmark": ["mmlu_pro"], "item_id": [MMLU.item_id], "source": ["bundled"]}


def _flaky(grader: ItemGrader, failures: list) -> list[str]:
    """Make mmlu_pro's grader fail (a NaN grade or an exception) for each entry of
    ``failures``, then grade for real; returns what it was called with."""
    bench = grader.benchmark("mmlu_pro")
    real, calls = bench.grade, []

    def grade(item, response):
        calls.append(response)
        if failures:
            failure = failures.pop(0)
            if isinstance(failure, BaseException):
                raise failure
            return failure
        return real(item, response)

    bench.grade = grade  # type: ignore[method-assign]
    return calls


def test_a_transient_failure_is_graded_again_and_a_final_verdict_once():
    grader = ItemGrader()
    sandbox_error = Grade(math.nan, "sandbox_error", None)  # a run that never started
    calls = _flaky(grader, [sandbox_error, OSError("fork: resource temporarily unavailable")])
    (correctness,) = make_rewards(["correctness"], grader=grader)
    assert correctness(prompts=["p"], completions=[RIGHT], **COLS) == [None]  # ungraded
    assert correctness(prompts=["p"], completions=[RIGHT], **COLS) == [0.0]  # grader_error
    assert correctness(prompts=["p"], completions=[RIGHT], **COLS) == [1.0]  # the real grade
    assert len(calls) == 3  # neither failure was kept
    for _ in range(3):  # the final verdict is cached: the grader is not called again
        assert correctness(prompts=["p"], completions=[RIGHT], **COLS) == [1.0]
    assert len(calls) == 3


def test_an_unreadable_source_is_read_again_after_retry_s():
    for retry_s, expected in ((0.0, [None, 1.0]), (3600.0, [None, None])):
        grader = ItemGrader(retry_s=retry_s)
        bench = grader.benchmark("mmlu_pro")
        real, loads = bench.load, []

        def load(source, real=real, loads=loads):
            loads.append(source)
            if len(loads) == 1:
                raise OSError("the dataset's disk went away for a moment")
            return real(source)

        bench.load = load  # type: ignore[method-assign]
        (correctness,) = make_rewards(["correctness"], grader=grader)
        got = [correctness(prompts=["p"], completions=[RIGHT], **COLS)[0] for _ in range(2)]
        assert got == expected, retry_s
        assert len(loads) == (2 if retry_s == 0.0 else 1)  # within retry_s: not re-read


def _no_sandbox(monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "_bwrap_problem", lambda: "bwrap not found")
    monkeypatch.delenv(sandbox.UNSAFE_ENV, raising=False)


def _scicode_item():
    bench = get_benchmark("scicode")
    return bench, next(i for i in bench.load("bundled") if i.meta.get("test_cases"))


def test_a_missing_sandbox_raises_instead_of_rewards_turning_none(monkeypatch):
    _no_sandbox(monkeypatch)
    bench, item = _scicode_item()
    completion = f"{bench.reference_response(item)}\nConfidence: 90"
    grader = ItemGrader()
    calls = []
    real = grader.benchmark("scicode").grade
    grader.benchmark("scicode").grade = lambda *a: calls.append(a) or real(*a)  # type: ignore
    cols = {"benchmark": ["scicode"] * 2, "item_id": [item.item_id] * 2, "source": ["bundled"] * 2}
    # faithful on its default target: g from the group's answers, graded in the sandbox
    for f in make_rewards(["correctness", "brier", "faithful"], grader=grader):
        with pytest.raises(sandbox.SandboxUnavailableError, match="apt-get install bubblewrap"):
            f(prompts=["p"] * 2, completions=[completion] * 2, **cols)
    assert len(calls) == 3  # each reached the sandbox: nothing was cached
    label = make_label({"benchmark": "scicode", "item_id": item.item_id, "source": "bundled",
                        "intrinsic_confidence": 0.5})  # fmt: skip
    with pytest.raises(sandbox.SandboxUnavailableError, match="bwrap not found"):
        RewardScorer({"correctness": 1.0}).score([completion], [label])


def test_serve_reward_answers_503_when_there_is_no_sandbox(monkeypatch):
    _no_sandbox(monkeypatch)
    bench, item = _scicode_item()
    label = make_label({"benchmark": "scicode", "item_id": item.item_id, "source": "bundled",
                        "intrinsic_confidence": 0.5})  # fmt: skip
    server = serve("127.0.0.1", 0, weights={"correctness": 1.0}, timeout_s=30.0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/get_reward"
    body = {"query": ["P" + bench.reference_response(item)], "prompts": ["P"], "labels": [label]}
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=60)
        assert err.value.code == 503
        assert "no isolation boundary" in json.loads(err.value.read())["error"]
    finally:
        server.shutdown()
        server.server_close()
