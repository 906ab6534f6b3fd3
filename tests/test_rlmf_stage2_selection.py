"""Stage two as the paper (hedge inventory by decisiveness bin) and the official selection
scores (post-hoc judgement, gold faithfulness), with a model served over an OpenAI-compatible
endpoint on this machine."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from metacog_tasks.benchmarks import get_benchmark
from rlmf_plugin.hedges import INVENTORY, inventory_dict, load_inventory, measure_decisiveness
from rlmf_plugin.judge import ModelClient
from rlmf_plugin.posthoc import lexical_decisiveness, posthoc_scores, read_score
from rlmf_plugin.select import select_rows
from rlmf_plugin.verbalize import intrinsic_map, rewrite_rule

MMLU = get_benchmark("mmlu_pro")
ITEMS = MMLU.load("bundled")[:4]


class _Policy(BaseHTTPRequestHandler):
    """A policy and judge: answers item k with the gold letter when k is even; judges its
    answers 90 (right) or 20 (wrong); rates a sentence's decisiveness by its first word."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        msgs = body["messages"]
        text = msgs[-1]["content"]
        if text.startswith("Question:"):
            reply = "90" if "(A)" in text.split("Your answer:", 1)[1] else "20"
        elif text.startswith("How decisively"):
            reply = "0.3" if "Maybe" in text else "0.95"
        else:
            k = next(i for i, it in enumerate(ITEMS) if it.question[:40] in text)
            gold = ITEMS[k].target
            reply = f"Maybe the answer is ({gold if k % 2 == 0 else 'J'})."
        self.server.seen.append(body)  # type: ignore[attr-defined]
        data = json.dumps({"choices": [{"message": {"content": reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Policy)
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def _rows():
    from rlmf_plugin._format import FORMAT_INSTRUCTION

    return [{"prompt": MMLU.solve_prompt(it) + FORMAT_INSTRUCTION, "question": it.question,
             "benchmark": "mmlu_pro", "item_id": it.item_id, "source": "bundled"}
            for it in ITEMS]  # fmt: skip


def test_posthoc_judgement_and_gold_faithfulness_drive_selection(endpoint):
    client = ModelClient("policy", base_url=f"http://127.0.0.1:{endpoint.server_port}/v1")
    rows = posthoc_scores(_rows(), client, samples=3)
    golds = [it.target == "A" for it in ITEMS]
    assert [r["meta_confidence"] for r in rows] == [0.9 if g and k % 2 == 0 else 0.2
                                                    for k, g in enumerate(golds)]  # fmt: skip
    # three identical answers: consistency 1; "Maybe" is the inventory's 0.42
    assert all(r["posthoc_consistency"] == 1.0 for r in rows)
    assert all(r["active_score"] == pytest.approx(0.42) for r in rows)
    plain = [b for b in endpoint.seen if not b["messages"][-1]["content"].startswith(
        ("Question:", "How"))]  # fmt: skip
    assert plain and all("Confidence: C" not in b["messages"][-1]["content"] for b in plain)
    judged = [b for b in endpoint.seen if b["messages"][-1]["content"].startswith("Question:")]
    assert judged and all(b["messages"][0]["role"] == "system" for b in judged)
    rated = posthoc_scores(_rows(), client, samples=2, decisiveness=client)
    assert all(r["posthoc_decisiveness"] == 0.3 for r in rated)  # the judge's rating
    chosen, result = select_rows(rows, "metacognitive", 2)
    assert result.strategy == "metacognitive" and len(chosen) == 2


_REPLIES = [("75", 0.75), (" 100 ", 1.0), ("80%", 0.8), ("101", None), ("I think 70", None),
            ("", None), (None, None)]  # fmt: skip


@pytest.mark.parametrize(("reply", "value"), _REPLIES)
def test_read_score(reply, value):
    got = read_score(reply)
    assert (got != got) if value is None else got == value


def test_lexical_decisiveness_takes_the_most_hedged_phrase():
    assert lexical_decisiveness("It is certainly B.") == 0.98
    assert lexical_decisiveness("Maybe B, I think.") == pytest.approx(0.42)
    assert lexical_decisiveness("B.") == 1.0
    assert lexical_decisiveness("Maybelline") == 1.0  # word-bounded


def test_intrinsic_map_offers_the_bin_that_holds_the_stated_confidence():
    pm = intrinsic_map()
    assert len(pm.bins) == 20
    for c in (0.0, 0.03, 0.05, 0.051, 0.42, 0.5, 0.64, 0.97, 1.0):
        h = pm.hedge(c)
        k = min(max(0, -(-round(c / 0.05, 9) // 1) - 1), 19)  # ceil: (start, end]
        assert pm.bins[int(k)]["low"] < c <= pm.bins[int(k)]["high"] or c == 0.0
        assert h.phrase == pm.bins[int(k)]["phrase"]
    # every phrase sits in the bin of its decisiveness
    for h in INVENTORY:
        b = next(b for b in pm.bins if b["low"] < h.decisiveness <= b["high"])
        assert h.phrase in b["options"]
    completion = "The answer is (A).\nConfidence: 64\nMeta: 80"
    out = rewrite_rule(completion, pm)
    assert out.phrase == "probably" and "Confidence" not in out.text


class _Rater:
    def ask(self, prompts):
        return [("0.9" if "certainly" in p else "I cannot say") for p in prompts]


def test_measured_decisiveness_replaces_the_assigned_values(tmp_path: Path):
    measured = measure_decisiveness(INVENTORY, _Rater())
    by = {h.phrase: h.decisiveness for h in measured}
    assert by["certainly"] == 0.9 and by["almost certainly"] == 0.9
    assert by["maybe"] == 0.42  # no rating read: the value is kept
    data = inventory_dict(measured, measured_by="rater")
    assert data["measured"] and load_inventory(json.loads(json.dumps(data))) == measured
    with pytest.raises(ValueError, match="answer"):
        load_inventory({"hedges": [{"phrase": "x", "decisiveness": 0.5, "template": "no slot"}]})
    assert re.search("not measured", "assigned values, not measured")
