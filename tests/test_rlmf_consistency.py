"""The on-policy faithful target (the official code's), the offline targets, the LLM judge,
and that `rlmf eval` measures the target training uses."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from rlmf_plugin._format import parse_completion
from rlmf_plugin._grading import ItemGrader
from rlmf_plugin.consistency import (
    OfflineTarget,
    OnPolicyTarget,
    agreement,
    answer_class_labels,
    judged_agreement,
)
from rlmf_plugin.evaluate import attempt_table
from rlmf_plugin.judge import ConsistencyJudge, read_verdict
from rlmf_plugin.rewards import make_rewards

GRADER = ItemGrader()
MMLU = {"benchmark": "mmlu_pro", "item_id": "90001", "source": "bundled"}  # gold (A)
CLOZE = {"benchmark": "mathbench", "item_id": "arithmetic/cloze_en:1", "source": "bundled"}


def _cols(item: dict, n: int) -> dict:
    return {k: [v] * n for k, v in item.items()}


def _mmlu(letter: str, conf: int = 80) -> str:
    return f"Weighing the options, the answer is ({letter}).\nConfidence: {conf}\nMeta: 90"


def test_onpolicy_target_is_the_share_of_the_group_with_the_same_answer():
    comps = [_mmlu("A"), _mmlu("A"), _mmlu("B"), _mmlu("C"), _mmlu("B"), "??\nConfidence: 5"]
    parsed = [parse_completion(c) for c in comps]
    g = OnPolicyTarget(GRADER)(["p"] * 6, parsed, _cols(MMLU, 6))
    assert g == pytest.approx([2 / 6, 2 / 6, 2 / 6, 1 / 6, 2 / 6, 1 / 6])
    # two prompts in one batch are two groups, whatever their order
    prompts = ["p", "q", "p", "q"]
    cols = {k: [v] * 4 for k, v in MMLU.items()}
    parsed = [parse_completion(_mmlu(x)) for x in "AABB"]
    assert OnPolicyTarget(GRADER)(prompts, parsed, cols) == pytest.approx([0.5] * 4)


def test_onpolicy_equivalence_uses_the_benchmark_normaliser():
    # math-verify: 42, 42.0 and 84/2 are one answer; 41 another
    texts = ["The answer is 42", "The answer is 42.0", "The answer is 41", "The answer is 41.00"]
    parsed = [parse_completion(f"{t}\nConfidence: 50") for t in texts]
    g = OnPolicyTarget(GRADER)(["p"] * 4, parsed, _cols(CLOZE, 4))
    assert g == pytest.approx([0.5, 0.5, 0.5, 0.5])
    labels = answer_class_labels("mathbench", ["\\frac{1}{2}", "0.5", "0.25"], [0, 0, 0])
    assert labels == [0, 0, 1] and agreement(labels) == pytest.approx([2 / 3, 2 / 3, 1 / 3])


def test_groups_split_across_processes_are_joined_by_gather():
    """Two processes each see half of a group of 4 (TRL can split a group); with a gather the
    target is the whole group's, as on one process."""
    halves = [[_mmlu("A"), _mmlu("B")], [_mmlu("B"), _mmlu("B")]]
    parsed = [[parse_completion(c) for c in h] for h in halves]
    single = OnPolicyTarget(GRADER)(["p"] * 4, parsed[0] + parsed[1], _cols(MMLU, 4))
    assert single == pytest.approx([0.25, 0.75, 0.75, 0.75])
    # both processes' reward calls, run in lockstep as the collective does
    slots: dict[int, dict[int, list]] = {}
    barrier = threading.Barrier(2)
    results: dict[int, list] = {}

    def run(rank: int) -> None:
        calls = iter(range(100))

        def gather(obj: list) -> list:  # accelerate's gather_object: all ranks, rank order
            c = next(calls)
            slots.setdefault(c, {})[rank] = obj
            barrier.wait()
            return [x for r in (0, 1) for x in slots[c][r]]

        t = OnPolicyTarget(GRADER, gather=gather)
        results[rank] = t(["p"] * 2, parsed[rank], _cols(MMLU, 2))

    threads = [threading.Thread(target=run, args=(r,)) for r in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert results[0] + results[1] == pytest.approx(single)
    # without the gather each process sees only its half (the official code's behaviour)
    local = OnPolicyTarget(GRADER)(["p"] * 2, parsed[0], _cols(MMLU, 2))
    assert local == pytest.approx([0.5, 0.5])


def test_faithful_reward_follows_the_answer_given_on_policy():
    """The on-policy target depends on the answer: the majority answer stated at 0.75 is
    faithful, the minority answer stated at 0.75 is not (the item-level g cannot tell them)."""
    faithful, z = make_rewards(["faithful", "metacog_score"], grader=GRADER)
    comps = [_mmlu("A", 75), _mmlu("A", 75), _mmlu("A", 75), _mmlu("B", 75)]
    out = faithful(prompts=["p"] * 4, completions=comps, **_cols(MMLU, 4))
    assert out == pytest.approx([1.0, 1.0, 1.0, 1 - 0.5**2])
    zs = z(prompts=["p"] * 4, completions=comps, **_cols(MMLU, 4))
    assert zs == pytest.approx([1 - 0.1**2] * 3 + [1 - 0.9**2])  # M=0.9; F = 1, 1, 1, 0
    item = make_rewards(["faithful"], grader=GRADER, target="item")[0]
    flat = item(
        prompts=["p"] * 4, completions=comps, intrinsic_confidence=[0.625] * 4, **_cols(MMLU, 4)
    )
    assert len(set(flat)) == 1  # the per-item constant ignores the answer


def test_offline_target_looks_the_answer_up_among_the_harness_samples():
    cols = {
        **_cols(MMLU, 2),
        "sample_answers": [["A", "B", "B", "C"]] * 2,
        "sample_correct": [[1.0, 0.0, 0.0, 0.0]] * 2,
    }
    parsed = [parse_completion(_mmlu("B")), parse_completion(_mmlu("A"))]
    assert OfflineTarget(GRADER)(["p"] * 2, parsed, cols) == pytest.approx([0.5, 0.25])


class _Judge:
    """A judge that calls two answers consistent when they end in the same letter."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def judge(self, pairs):
        self.asked.extend(pairs)
        return [1.0 if c.strip()[-3:] == a.strip()[-3:] else 0.0 for c, a in pairs]


def test_judged_agreement_counts_itself_once_and_asks_the_others():
    judge = _Judge()
    g = judged_agreement(["(A).", "(A).", "(B).", None], judge)
    assert g[:3] == pytest.approx([2 / 4, 2 / 4, 1 / 4]) and g[3] != g[3]  # NaN: no answer
    assert len(judge.asked) == 6  # 3 answered x 2 others; never itself, never the unanswered


def test_eval_measures_the_training_target():
    """The same answers give the same g in `rlmf eval` and in the on-policy reward target."""
    answers = ["A", "A", "B", "C", "B", "B"]
    recs = pd.DataFrame(
        {
            "model": "m",
            "benchmark": "mmlu_pro",
            "item_id": "90001",
            "probe": "numeric",
            "confidence": 0.5,
            "confidence_kind": "verbal_numeric",
            "attempt": range(1, 7),
            "correct": [float(a == "A") for a in answers],
            "answer": answers,
        }
    )
    g_eval = attempt_table(recs)["intrinsic"].tolist()
    parsed = [parse_completion(_mmlu(a)) for a in answers]
    g_train = OnPolicyTarget(GRADER)(["p"] * 6, parsed, _cols(MMLU, 6))
    assert g_eval == pytest.approx(g_train)
    assert g_train == pytest.approx([2 / 6, 2 / 6, 3 / 6, 1 / 6, 3 / 6, 3 / 6])
    judged = attempt_table(recs, judge=_Judge())["intrinsic"].tolist()
    assert judged == pytest.approx(g_eval)  # a judge that agrees with equivalence


@pytest.mark.parametrize(
    ("reply", "value"),
    [("Yes", 1.0), (" no.", 0.0), ("YES, it is", 1.0), ("Maybe", 0.5), ("", 0.5), (None, 0.5)],
)
def test_read_verdict(reply, value):
    assert read_verdict(reply) == value


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint: Yes when the assertion's letter is in the context."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append(body)  # type: ignore[attr-defined]
        text = body["messages"][0]["content"]
        context = text.split("Context: ", 1)[1].split("\nAssertion: ", 1)[0]
        assertion = text.split("\nAssertion: ", 1)[1].split("\n", 1)[0]
        reply = "Yes" if assertion[-3:] in context else "No"
        data = json.dumps({"choices": [{"message": {"content": reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_openai_compatible_judge_drives_the_onpolicy_target():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        judge = ConsistencyJudge(
            "judge-model",
            base_url=f"http://127.0.0.1:{server.server_port}/v1",
            temperature=0.7,
            max_tokens=4,
        )
        comps = [_mmlu("A"), _mmlu("A"), _mmlu("B"), _mmlu("A")]
        parsed = [parse_completion(c) for c in comps]
        g = OnPolicyTarget(GRADER, judge=judge)(["p"] * 4, parsed, _cols(MMLU, 4))
        assert g == pytest.approx([0.75, 0.75, 0.25, 0.75])
        seen = server.seen  # type: ignore[attr-defined]
        assert {b["model"] for b in seen} == {"judge-model"}
        assert {(b["temperature"], b["max_tokens"]) for b in seen} == {(0.7, 4)}
        assert len(seen) == judge.n_requests == 3  # distinct pairs only: AA, AB, BA
    finally:
        server.shutdown()
    # an unreachable endpoint gives no verdict (0.5), never an exception
    dead = ConsistencyJudge("m", base_url="http://127.0.0.1:9/v1", timeout_s=2)
    assert dead.judge([("x", "y")]) == [0.5]
