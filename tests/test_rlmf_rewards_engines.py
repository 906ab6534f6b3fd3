"""The engines' reward entry points on what a trainer or a policy can send them: malformed
labels, mismatched lengths, malformed HTTP bodies, slow requests; numbers only come back."""

from __future__ import annotations

import json
import math
import re
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from metacog_tasks.benchmarks import get_benchmark
from rlmf_plugin import engines
from rlmf_plugin.engines import (
    ABSENT,
    FIELDS,
    compute_score,
    compute_score_batch,
    make_label,
    reward_func,
    serve,
)

MMLU = get_benchmark("mmlu_pro")
ITEM = MMLU.load("bundled")[0]
RIGHT = MMLU.reference_response(ITEM)
WRONG = MMLU.wrong_response(ITEM, np.random.default_rng(0))
LABEL = {"benchmark": "mmlu_pro", "item_id": ITEM.item_id, "source": "bundled",
         "intrinsic_confidence": 0.75}  # fmt: skip
GOOD = f"{RIGHT}\nConfidence: 80\nMeta: 90"
# default weights: format 0.5, correctness 1, brier 0.5, faithful 3; floors 0, 0, -1, -10
FLOOR_SCORE = 0.5 * 0 + 1 * 0 + 0.5 * -1 + 3 * -10


def _finite_row(row: dict) -> None:
    assert set(row) == {"score", *FIELDS}
    assert all(isinstance(v, float) and math.isfinite(v) for v in row.values()), row


_BAD_TARGETS = [
    {**LABEL, "intrinsic_confidence": "abc"},
    {**LABEL, "intrinsic_confidence": [0.5]},
    {**LABEL, "intrinsic_confidence": 1.5},
    {**LABEL, "intrinsic_confidence": True},
    json.dumps({**LABEL, "intrinsic_confidence": {"x": 1}}),
]
_BAD_LABELS = [
    {**LABEL, "item_id": "no-such-item"},
    {**LABEL, "benchmark": "no_such_benchmark"},
    {**LABEL, "benchmark": ["mmlu_pro"]},
    {**LABEL, "item_id": [ITEM.item_id]},
    {**LABEL, "item_id": None},
    "not json",
    "[1, 2]",
    "[" * 100_000,  # nested too deep for json
    json.dumps(LABEL) + " " * engines.MAX_LABEL_CHARS,  # longer than the cap
    b"\xff\xfe",
    None,
    12,
]


@pytest.mark.parametrize("label", _BAD_TARGETS + _BAD_LABELS, ids=lambda x: repr(x)[:40])
def test_a_malformed_label_gives_the_floors_and_is_counted(label):
    """Never raises; a malformed label or target, or an unknown item, gives the floors of the
    rewards that read the label."""
    out = compute_score("metacog/mmlu_pro", GOOD, label, None)
    _finite_row(out)
    assert out["bad_label"] == 1.0
    assert out["answered"] == 1.0 and out["format"] == 1.0  # the completion itself is fine
    assert out["faithful"] == -10.0 and out["metacog_z"] == -10.0
    assert (out["correct"], out["brier"], out["log_score"]) == (0.0, -1.0, -30.0)
    assert out["score"] == pytest.approx(0.5 * 1 + FLOOR_SCORE)


def test_a_good_label_and_a_missing_target():
    good = compute_score("metacog/mmlu_pro", GOOD, make_label(LABEL))
    _finite_row(good)
    assert good["bad_label"] == 0.0 and good["graded"] == 1.0 and good["timed_out"] == 0.0
    no_target = compute_score("m", GOOD, {**LABEL, "intrinsic_confidence": None})
    # no target: the faithfulness rewards have nothing to compare with (paid 0), not a floor
    assert (no_target["faithful"], no_target["metacog_z"]) == (0.0, 0.0)
    assert no_target["intrinsic_confidence"] == ABSENT and no_target["bad_label"] == 0.0


@pytest.mark.parametrize(
    "completion", [None, 12, b"bytes", ["a", {"content": None}], [[[["deep"]]]], object()]
)
def test_any_completion_object_is_scored(completion):
    out = compute_score("m", completion, LABEL)
    _finite_row(out)


def test_mismatched_lengths_are_a_clear_error():
    with pytest.raises(ValueError, match=r"lengths differ: .*'ground_truths': 1"):
        compute_score_batch(["m"] * 2, [GOOD, GOOD], [LABEL])
    with pytest.raises(ValueError, match=r"'extra_infos': 3"):
        compute_score_batch(["m"] * 2, [GOOD, GOOD], [LABEL] * 2, [{}] * 3)
    # prompts shorter than queries: an error, never rows silently dropped
    with pytest.raises(ValueError, match="3 queries but 2 prompts"):
        reward_func(["P" + GOOD] * 3, ["P"] * 2, [make_label(LABEL)] * 3)
    with pytest.raises(ValueError, match="2 queries but 1 labels"):
        reward_func(["P" + GOOD] * 2, None, [make_label(LABEL)])


def test_openrlhf_logs_every_extra_value_as_a_tensor():
    """OpenRLHF 0.11.2 calls ``torch.tensor([value])`` on every ``extra_logs`` value."""
    import torch

    queries = ["P" + c for c in (GOOD, WRONG, "", "Confidence: 50\nMeta: 100", "x" * 300_000)]
    out = reward_func(queries, ["P"] * 5, [make_label(LABEL), "bad", LABEL, LABEL, LABEL])
    for key, values in out["extra_logs"].items():
        for v in values.tolist():
            assert torch.isfinite(torch.tensor([v])).all(), key
    assert out["extra_logs"]["answered"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert out["extra_logs"]["bad_label"].tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]
    assert torch.isfinite(out["rewards"]).all() and torch.isfinite(out["scores"]).all()


# ------------------------------------------------------------------------------- HTTP server


class _Server:
    def __init__(self, **options) -> None:
        self.server = serve("127.0.0.1", 0, **options)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/get_reward"

    def post(self, data: bytes, headers: dict | None = None) -> tuple[int, dict]:
        req = urllib.request.Request(self.url, data=data, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.status, _strict_json(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _strict_json(exc.read())

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _strict_json(data: bytes) -> dict:
    """JSON that holds numbers only (NaN, Infinity or null in a list of values fail)."""

    def no_constant(name):
        raise AssertionError(f"non-finite number {name} in the answer")

    return json.loads(data, parse_constant=no_constant)


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setattr(engines, "_SCORERS", {})
    s = _Server()
    yield s
    s.close()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "Expecting property name"),
        (b"[1, 2]", "must be a JSON object"),
        (b"{}", "needs lists `query` and `labels`"),
        (b'{"query": "x", "labels": []}', "needs lists"),
        (b'{"query": ["x"], "labels": []}', "1 queries but 0 labels"),
        (b'{"query": ["x"], "labels": ["l"], "prompts": "P"}', "`prompts` must be a list"),
        (b'{"query": ["x", "y"], "labels": ["l", "l"], "prompts": ["P"]}', "2 queries but 1"),
        (b"[" * 100_000, "maximum recursion depth"),
        (b"\xff\xfe", "Expecting value"),
    ],
    ids=lambda x: repr(x)[:30],
)
def test_malformed_bodies_get_400_with_a_message(server, body, message):
    code, out = server.post(body)
    assert code == 400 and re.search(re.escape(message), out["error"]), out


def test_a_bad_content_length_gets_400(server):
    code, out = server.post(b"{}", {"Content-Length": "-5"})
    assert code == 400 and "0 to" in out["error"]


def test_answers_hold_numbers_only(server):
    body = {"query": ["P" + GOOD, "P" + WRONG, "P", "P" + "\x00" * 10],
            "prompts": ["P"] * 4, "labels": [make_label(LABEL), "junk", None, LABEL]}  # fmt: skip
    code, out = server.post(json.dumps(body).encode())
    assert code == 200 and set(out["extra_logs"]) == set(FIELDS)
    values = [
        *out["rewards"],
        *out["scores"],
        *(v for vs in out["extra_logs"].values() for v in vs),
    ]
    assert all(isinstance(v, float | int) and math.isfinite(v) for v in values)
    assert out["extra_logs"]["meta"] == [0.9, ABSENT, ABSENT, ABSENT]


def test_one_slow_request_times_out_without_blocking_the_others(monkeypatch):
    """A grader that hangs on one answer: that request answers at its deadline (the rows not
    scored by then count wrong, ``timed_out``), while a concurrent request answers at once."""
    monkeypatch.setattr(engines, "_SCORERS", {})
    srv = _Server(timeout_s=3.0)
    scorer = next(iter(engines._SCORERS.values()))
    bench = scorer._grader.benchmark("mmlu_pro")
    real = bench.grade
    release = threading.Event()

    def grade(item, response):
        if "SLOW" in response:
            release.wait(30)  # held until the test ends
        return real(item, response)

    monkeypatch.setattr(bench, "grade", grade)
    label = make_label(LABEL)
    slow = {"query": [GOOD, "SLOW " + GOOD, GOOD.replace("(A)", "(B)")], "labels": [label] * 3}
    fast = {"query": [GOOD, WRONG + "\nConfidence: 10"], "labels": [label] * 2}
    results: dict[str, tuple[float, float, dict]] = {}

    def run(name, body):
        t0 = time.perf_counter()
        code, out = srv.post(json.dumps(body).encode())
        assert code == 200
        results[name] = (t0, time.perf_counter(), out)

    try:
        threads = [threading.Thread(target=run, args=("slow", slow))]
        threads[0].start()
        time.sleep(0.3)  # the slow request holds its grader now
        threads.append(threading.Thread(target=run, args=("fast", fast)))
        threads[1].start()
        for t in threads:
            t.join(60)
    finally:
        release.set()
        srv.close()
    _, fast_end, fast_out = results["fast"]
    slow_start, slow_end, slow_out = results["slow"]
    assert fast_end < slow_end and fast_out["scores"] == [1.0, 0.0]  # not held by the slow one
    assert 2.9 < slow_end - slow_start < 20  # answered at its deadline
    logs = slow_out["extra_logs"]
    # row 1 graded in time; rows 2 (hanging) and 3 (after it) scored without grading: wrong
    assert logs["timed_out"] == [0.0, 1.0, 1.0] and logs["graded"] == [1.0, 0.0, 0.0]
    assert slow_out["scores"] == [1.0, 0.0, 0.0]
    assert logs["faithful"] == pytest.approx([1 - 0.05**2] * 3)  # no grading needed for it


def test_serve_reward_takes_the_request_timeout(monkeypatch):
    from metacog_tasks.cli import main

    seen = {}

    class Stop(Exception):
        pass

    def fake_serve(host, port, **kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(engines, "serve", fake_serve)
    with pytest.raises(Stop):
        main(["rlmf", "serve-reward", "--port", "0", "--timeout", "7.5"])
    assert seen["timeout_s"] == 7.5
    with pytest.raises(ValueError, match="timeout_s must be a positive number"):
        serve("127.0.0.1", 0, timeout_s=0)
