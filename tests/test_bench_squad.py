"""SQuAD: official EM/F1 reproduced on real leaderboard predictions, v2.0 no-answer rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.benchmarks import DataFormatError, get_benchmark
from metacog_tasks.benchmarks.squad import extract_answer, f1_score, normalize_answer
from tests.strategies import letterless_text

RUNS = {"1.1": ("bert_ensemble", "logistic_regression"), "2.0": ("bert_single", "bidaf_elmo")}


@pytest.mark.parametrize("version", ["1.1", "2.0"])
@pytest.mark.parametrize("layout", ["nested", "hf_rows", "folder"])
def test_reproduces_official_expected_scores(
    benchmarks_dir: Path, version: str, layout: str
) -> None:
    folder = benchmarks_dir / "squad" / f"v{version}"
    source = {
        "nested": folder / f"dev-v{version}.sample.json",
        "hf_rows": folder / "validation_sample.jsonl",
        "folder": benchmarks_dir / "squad",
    }[layout]
    bench = get_benchmark("squad", version=version)
    items = bench.load(source)
    expected = json.loads((folder / "expected_scores.json").read_text())["scores"]
    for run in RUNS[version]:
        preds = json.loads((folder / f"predictions.{run}.json").read_text())
        assert set(preds) == {it.item_id for it in items}
        for grader in (bench.grade_prediction, bench.grade):
            grades = [grader(it, preds[it.item_id]) for it in items]
            got = bench.aggregate(items, grades)
            for key, value in expected[run].items():
                assert got[key] == value, (run, key)  # exactly, not approximately


def test_official_normalisation_and_f1() -> None:
    assert normalize_answer("The  Norman-French, a people!") == "normanfrench people"
    assert f1_score("10th and 11th centuries", "in the 10th and 11th centuries") == pytest.approx(
        2 * (4 / 5) * 1 / (4 / 5 + 1)
    )
    assert f1_score("", "") == 1.0 and f1_score("", "x") == 0.0


def test_v2_no_answer_rules() -> None:
    bench = get_benchmark("squad", version="2.0")
    items = bench.load("bundled")
    unanswerable = [it for it in items if it.kind == "unanswerable"]
    answerable = [it for it in items if it.kind == "answerable"]
    assert len(unanswerable) >= 3 and len(answerable) >= 3
    item = unanswerable[0]
    for reply in ("Answer: unanswerable", "unanswerable.", "Answer: No answer", ""):
        assert bench.grade(item, reply).correct == 1.0, reply
    assert bench.grade(item, "Answer: Vienna").correct == 0.0
    # On an answerable item, "unanswerable" is the empty prediction: wrong.
    g = bench.grade(answerable[0], "Answer: unanswerable")
    assert g.correct == 0.0 and g.score == 0.0
    agg = bench.aggregate(items, [bench.grade(it, bench.reference_response(it)) for it in items])
    assert agg["exact"] == 100.0 and agg["HasAns_total"] + agg["NoAns_total"] == len(items)
    # v1.1 treats "unanswerable" literally (no such rule).
    assert extract_answer("unanswerable") == "unanswerable"


def test_v1_refuses_v2_files(benchmarks_dir: Path) -> None:
    bench = get_benchmark("squad")
    assert bench.version == "1.1"
    with pytest.raises(DataFormatError, match=r"version='2\.0'"):
        bench.load(benchmarks_dir / "squad" / "v2.0" / "dev-v2.0.sample.json")
    with pytest.raises(DataFormatError, match="no answer"):
        bench.load(benchmarks_dir / "squad" / "v2.0" / "validation_sample.jsonl")


@pytest.mark.parametrize("version", ["1.1", "2.0"])
def test_pack_reference_and_wrong_responses(version: str) -> None:
    bench = get_benchmark("squad", version=version)
    rng = np.random.default_rng(1)
    items = bench.load("bundled")
    assert 8 <= len(items) <= 20
    for item in items:
        assert bench.grade(item, bench.reference_response(item)).correct == 1.0
        wrong = bench.grade(item, bench.wrong_response(item, rng))
        assert wrong.correct == 0.0 and wrong.score == 0.0


def test_closed_book_default_hides_the_passage() -> None:
    closed = get_benchmark("squad")
    opened = get_benchmark("squad", open_book=True)
    item = closed.load("bundled")[0]
    context = item.meta["context"]
    assert context[:60] not in closed.solve_prompt(item)
    assert context[:60] in opened.solve_prompt(item)
    for bench in (closed, opened):
        for probe in ("prospective", "counterfactual", "numeric"):
            text = bench.probe_prompt(item, probe)
            assert item.question in text and context[:60] not in text
    v2 = get_benchmark("squad", version="2.0", open_book=True)
    item2 = v2.load("bundled")[0]
    assert "unanswerable" in v2.solve_prompt(item2)
    assert "unanswerable" not in v2.probe_prompt(item2)


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Answer: Karl von Frisch", "Karl von Frisch"),
        ("**Answer:** *the Volga*.", "the Volga"),
        ("Karl von Frisch\nHe was Austrian.", "Karl von Frisch"),
        ("I think so.\nFinal answer: 1973", "1973"),
    ],
)
def test_answer_extraction(reply: str, answer: str) -> None:
    assert extract_answer(reply) == answer


@settings(max_examples=100, deadline=None)
@given(letterless_text(exclude="0123456789"))
def test_reply_without_letters_or_digits_is_wrong(text: str) -> None:
    bench = get_benchmark("squad")  # v1.1: every item has an answer
    for item in bench.load("bundled"):
        g = bench.grade(item, text)
        assert (g.correct, g.score) == (0.0, 0.0), (item.item_id, text)


@settings(max_examples=100, deadline=None)
@given(st.data(), letterless_text())
def test_answer_line_is_read_through_any_letterless_text(data, before) -> None:
    bench = get_benchmark("squad")
    item = data.draw(st.sampled_from(bench.load("bundled")))
    gold = data.draw(st.sampled_from(list(item.target)))
    reply = f"{before}\nAnswer: {gold}"
    assert extract_answer(reply) == gold
    assert bench.grade(item, reply).correct == 1.0


# --- structured property tests: the reply carries a known answer span ----------------------

_REASONING = st.lists(
    st.sampled_from(
        [
            "the",
            "passage",
            "says",
            "that",
            "it",
            "was",
            "first",
            "described",
            "in",
            "a",
            "study",
            "of",
        ]
    ),
    max_size=15,
).map(" ".join)
_ANSWER_FORMS = ["Answer: {a}", "**Answer:** {a}.", "Final answer: *{a}*", 'Answer: "{a}"']


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_labelled_gold_span_after_reasoning_is_right(data) -> None:
    bench = get_benchmark("squad")
    item = data.draw(st.sampled_from(bench.load("bundled")))
    gold = data.draw(st.sampled_from(list(item.target)))
    form = data.draw(st.sampled_from(_ANSWER_FORMS))
    reply = "\n".join([*data.draw(st.lists(_REASONING, max_size=3)), form.format(a=gold)])
    assert extract_answer(reply) == gold
    g = bench.grade(item, reply)
    assert g.correct == 1.0 and g.score == pytest.approx(1.0)
