"""SQuAD: official EM/F1 reproduced on real leaderboard predictions, v2.0 no-answer rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.benchmarks import DataFormatError, DataUnavailableError, get_benchmark
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


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


def _nested(version: str, qas: list[dict], title: str = "Vienna_City") -> dict:
    return {
        "version": version,
        "data": [{"title": title, "paragraphs": [{"context": "Vienna lies on the Danube river.",
                                                   "qas": qas}]}],
    }  # fmt: skip


_QA = {"id": "q1", "question": " Which river? ",
       "answers": [{"text": "the Danube", "answer_start": 15}]}  # fmt: skip


def test_versions_and_prompt_overrides() -> None:
    for spelled, version in (("v2", "2.0"), ("2", "2.0"), ("1", "1.1"), ("v1.1", "1.1"),
                             ("2.0", "2.0")):  # fmt: skip
        assert get_benchmark("squad", version=spelled).version == version
    with pytest.raises(ValueError, match=r"^squad: unknown version '3'; use '1.1' or '2.0'$"):
        get_benchmark("squad", version="v3")
    custom = get_benchmark("squad", prompts={"solve": "Q: {question}{no_answer}"})
    item = custom.load("bundled")[0]
    assert custom.solve_prompt(item) == f"Q: {item.question}"


def test_nested_official_json(tmp_path: Path) -> None:
    path = tmp_path / "dev-v1.1.json"
    path.write_text(json.dumps(_nested("1.1", [_QA, {**_QA, "id": "q2"}])))
    item, second = get_benchmark("squad").load(path)
    assert (item.benchmark, item.item_id, item.question, item.target, item.kind) == (
        "squad", "q1", "Which river?", ["the Danube"], "answerable",
    )  # fmt: skip
    assert item.meta == {"title": "Vienna_City", "context": "Vienna lies on the Danube river.",
                         "version": "1.1"}  # fmt: skip
    assert item.record["answers"] == {"text": ["the Danube"], "answer_start": [15]}
    assert item.record["title"] == "Vienna_City" and second.item_id == "q2"
    # v2.0 files: refused by v1.1 on the version field alone, or on an impossible question
    # anywhere (here the first one)
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps(_nested("v2.0", [_QA])))
    message = (f"squad: {v2} is SQuAD v2.0 (unanswerable questions); "
               "use get_benchmark('squad', version='2.0')")  # fmt: skip
    with pytest.raises(DataFormatError, match="^" + __import__("re").escape(message) + "$"):
        get_benchmark("squad").load(v2)
    impossible = {"id": "q0", "question": "Which sea?", "answers": [], "is_impossible": True}
    v2.write_text(json.dumps(_nested("1.1", [impossible, _QA])))
    with pytest.raises(DataFormatError, match=r"is SQuAD v2\.0"):
        get_benchmark("squad").load(v2)
    no_key = {"id": "q9", "question": "Which sea?", "is_impossible": True}
    v2.write_text(json.dumps(_nested("v2.0", [no_key, _QA])))
    items = get_benchmark("squad", version="2.0").load(v2)
    assert [(it.item_id, it.kind, it.target) for it in items] == [
        ("q9", "unanswerable", []), ("q1", "answerable", ["the Danube"]),
    ]  # fmt: skip
    untitled = _nested("1.1", [_QA])
    del untitled["data"][0]["title"]
    path.write_text(json.dumps(untitled))
    assert get_benchmark("squad").load(path)[0].meta["title"] == ""


def test_row_files_answer_shapes_and_errors(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "question": "q", "answers": {"text": ["x", "y"], "answer_start": [0, 2]}},
        {"id": "b", "question": "q", "answers": [{"text": "z", "answer_start": 1}]},
        {"id": "c", "question": "q", "answers": ["w"]},
    ]
    path = tmp_path / "rows.json"  # a plain JSON list of rows, not the nested format
    path.write_text(json.dumps(rows))
    items = get_benchmark("squad").load(path)
    assert [it.target for it in items] == [["x", "y"], ["z"], ["w"]]
    path.write_text(json.dumps([{"id": "d", "question": "q", "answers": {"text": []}}]))
    with pytest.raises(DataFormatError, match=(
        rf"^squad: {path} row 0 \(id d\) has no answer, which only SQuAD v2.0 allows; "
        r"use get_benchmark\('squad', version='2.0'\)$"
    )):  # fmt: skip
        get_benchmark("squad").load(path)
    path.write_text(json.dumps([{"id": "e", "answers": []}]))
    with pytest.raises(
        DataFormatError, match=rf"^squad: {path} row 0 lacks field\(s\) \['question'\]"
    ):
        get_benchmark("squad", version="2.0").load(path)


def test_folder_layouts(tmp_path: Path) -> None:
    def row(i):
        return json.dumps({"id": i, "question": "q", "answers": {"text": ["x"]}}) + "\n"

    folder = tmp_path / "squad"
    (folder / "v1.1").mkdir(parents=True)
    (folder / "v1.1" / "validation.jsonl").write_text(row("val"))
    (folder / "v1.1" / "train.jsonl").write_text(row("train"))
    bench = get_benchmark("squad")
    assert [it.item_id for it in bench.load(folder)] == ["val"]  # the v1.1 folder, split
    assert [it.item_id for it in bench.load(folder, split="train")] == ["train"]
    only_dev = tmp_path / "dev"
    only_dev.mkdir()
    (only_dev / "dev-v1.1.json").write_text(json.dumps(_nested("1.1", [_QA])))
    assert [it.item_id for it in bench.load(only_dev)] == ["q1"]
    any_rows = tmp_path / "any"
    any_rows.mkdir()
    (any_rows / "mine.jsonl").write_text(row("m"))
    assert [it.item_id for it in bench.load(any_rows)] == ["m"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataUnavailableError, match=(
        rf"^squad: no '\*validation\*.jsonl' or 'dev-\*.json' file in {empty}$"
    )):  # fmt: skip
        bench.load(empty)


def test_hub_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    import metacog_tasks.benchmarks.squad as mod

    seen = []

    def fake(benchmark, path, *, name, split, fields, local_hint):
        seen.append((benchmark, path, name, split, fields, local_hint))
        return [{"id": "h", "title": "T", "context": "c", "question": "q",
                 "answers": {"text": [], "answer_start": []}}]  # fmt: skip

    monkeypatch.setattr(mod, "load_hf", fake)
    (item,) = get_benchmark("squad", version="2.0").load(None)
    assert (item.item_id, item.kind) == ("h", "unanswerable")
    assert seen == [("squad", "rajpurkar/squad_v2", "squad_v2", "validation",
                     ("id", "title", "context", "question", "answers"),
                     "the official dev-v2.0.json, or a JSONL of rajpurkar/squad_v2 rows "
                     "(id, title, context, question, answers{text, answer_start})")]  # fmt: skip
    with pytest.raises(DataFormatError, match=r"^squad: rajpurkar/squad validation row 0 \(id h\)"):
        get_benchmark("squad").load(None)


def test_prompts_with_the_no_answer_rule() -> None:
    item = get_benchmark("squad").load("bundled")[0]
    v1 = get_benchmark("squad").solve_prompt(item)
    assert v1 == (
        "Answer the following question with a short phrase: only the answer, a few words at "
        f"most, not a sentence.\n\nQuestion: {item.question}\n\n"
        'End with a final line of the form "Answer: <your answer>".'
    )
    v2 = get_benchmark("squad", version="2.0").solve_prompt(item)
    assert ' If the question cannot be answered, answer "unanswerable".\n\n' in v2
    book = get_benchmark("squad", version="2.0", open_book=True).solve_prompt(item)
    assert ' If the question cannot be answered from the passage, answer "unanswerable".' in book
    assert f"Title: {item.meta['title'].replace('_', ' ')}\n\n" in book
    assert "_" not in book.split("Title: ")[1].split("\n")[0]


def test_grade_statuses_and_references() -> None:
    from metacog_tasks.benchmarks.squad import score_prediction

    v1, v2 = get_benchmark("squad"), get_benchmark("squad", version="2.0")
    items = v2.load("bundled")
    answerable = next(it for it in items if it.kind == "answerable")
    unanswerable = next(it for it in items if it.kind == "unanswerable")
    assert v1.grade_prediction(answerable, "  ").status == "unextractable"
    assert v2.grade_prediction(answerable, "").status == "unextractable"
    g = v2.grade_prediction(unanswerable, "")
    assert (g.correct, g.status, g.score) == (1.0, "ok", 1.0)
    gold = answerable.target[0]
    g = v1.grade_prediction(answerable, f"{gold} today")
    assert g.status == "ok" and g.correct == 0.0 and g.extracted == f"{gold} today"
    assert g.score == pytest.approx(f1_score(gold, f"{gold} today"))
    # empty golds are dropped before the max: "" is not a gold of an answerable item
    assert score_prediction(["", "Paris"], "") == (0, 0.0)
    assert score_prediction(["", "  "], "") == (1, 1.0)
    odd = type(answerable)(**{**answerable.__dict__, "target": ["...", "Paris"]})
    assert v1.reference_response(odd) == "Answer: Paris"
    assert v2.reference_response(unanswerable) == "Answer: unanswerable"


def test_extraction_keeps_an_ellipsis_and_empty_lines() -> None:
    assert extract_answer("Answer: wait...") == "wait..."
    assert extract_answer("Answer: Paris.") == "Paris"
    assert extract_answer(" \n \t\n") == ""


def test_wrong_response_spans_share_no_gold_token() -> None:
    bench = get_benchmark("squad")
    item = bench.load("bundled")[0]
    gold_tokens = {t for g in item.target for t in normalize_answer(g).split()}
    rng = np.random.default_rng(4)
    for _ in range(10):
        span = bench.wrong_response(item, rng).removeprefix("Answer: ")
        assert len(span.split()) == 3 and span in item.meta["context"]
        assert not gold_tokens & set(normalize_answer(span).split())
    blank = type(item)(**{**item.__dict__, "meta": {**item.meta, "context": ""}})
    fallback = bench.wrong_response(blank, rng).removeprefix("Answer: ")
    assert fallback in ("a local merchant guild", "seventeen", "the northern coast")
    gold = "local merchant guild seventeen northern coast"
    every = type(item)(**{**item.__dict__, "target": [gold], "meta": {**item.meta, "context": ""}})
    assert bench.wrong_response(every, rng) == "Answer: zzz"


def test_aggregate_by_hand() -> None:
    from metacog_tasks.benchmarks.base import Grade

    v2 = get_benchmark("squad", version="2.0")
    items = v2.load("bundled")
    has = [it for it in items if it.kind == "answerable"][:2]
    no = [it for it in items if it.kind == "unanswerable"][:1]
    grades = [Grade(1.0, score=1.0), Grade(0.0, score=0.5), Grade(1.0)]  # last: F1 from EM
    assert v2.aggregate([*has, *no], grades) == {
        "exact": 200 / 3, "f1": 250 / 3, "total": 3.0, "ungraded": 0.0,
        "HasAns_exact": 50.0, "HasAns_f1": 75.0, "HasAns_total": 2.0,
        "NoAns_exact": 100.0, "NoAns_f1": 100.0, "NoAns_total": 1.0,
    }  # fmt: skip
    v1 = get_benchmark("squad")
    assert v1.aggregate(has, grades[:2]) == {
        "exact_match": 50.0, "f1": 75.0, "total": 2.0, "ungraded": 0.0,
    }  # fmt: skip
    # an ungraded item (a grader-side failure) scores 0, never NaN, and is counted
    failed = Grade(float("nan"), status="grader_error", score=0.9)
    assert v1.aggregate(has, [grades[0], failed]) == {
        "exact_match": 50.0, "f1": 50.0, "total": 2.0, "ungraded": 1.0,
    }  # fmt: skip
    only_has = v2.aggregate(has, grades[:2])
    assert "NoAns_total" not in only_has and only_has["HasAns_total"] == 2.0
    with pytest.raises(ValueError, match=r"^squad: 2 items but 1 grades$"):
        v1.aggregate(has, grades[:1])
    assert np.isnan(v1.aggregate([], [])["f1"])
