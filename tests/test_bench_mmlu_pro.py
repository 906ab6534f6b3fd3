"""MMLU-Pro: loader, prompts, the authors' extraction chain, grading of real outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.benchmarks import DataFormatError, get_benchmark
from metacog_tasks.benchmarks.mmlu_pro import extract_choice
from tests.strategies import letterless_text

#: Any option letter of a 10-option item.
_LETTER_ANY = st.sampled_from(list("ABCDEFGHIJ"))


@pytest.fixture(scope="module")
def bench():
    return get_benchmark("mmlu_pro")


def test_bundled_pack_covers_option_counts(bench) -> None:
    items = bench.load("bundled")
    counts = {it.meta["n_options"] for it in items}
    assert {3, 4, 10} <= counts and len(counts) >= 6
    # "N/A" padding is dropped, as in the authors' preprocess().
    padded = [it for it in items if "N/A" in it.record["options"]]
    assert padded and all("N/A" not in it.meta["options"] for it in padded)
    assert all(it.item_id == str(it.record["question_id"]) for it in items)


def test_prompts_hide_options_from_probes(bench) -> None:
    item = bench.load("bundled")[0]
    solve = bench.solve_prompt(item)
    assert "A. " + item.meta["options"][0] in solve and "the answer is (X)" in solve
    for probe in ("prospective", "counterfactual", "numeric"):
        text = bench.probe_prompt(item, probe)
        assert item.question in text
        assert "Options:" not in text and "\nB. " not in text
    assert "Answer: Yes" in bench.probe_prompt(item)
    assert "unassisted" in bench.probe_prompt(item, "counterfactual")
    assert "0 to 100" in bench.probe_prompt(item, "numeric")


def test_reference_right_wrong_wrong(bench) -> None:
    rng = np.random.default_rng(0)
    items = bench.load("bundled")
    grades = []
    for item in items:
        right = bench.grade(item, bench.reference_response(item))
        assert right.correct == 1.0 and right.extracted == item.target
        wrong = bench.grade(item, bench.wrong_response(item, rng))
        assert wrong.correct == 0.0 and wrong.status == "ok"
        assert wrong.extracted in "ABCDEFGHIJ"[: item.meta["n_options"]]
        grades.append(right)
    agg = bench.aggregate(items, grades)
    assert agg["accuracy"] == 1.0 and agg["accuracy/math"] == 1.0
    with pytest.raises(ValueError, match="prompt_index"):
        bench.reference_response(items[0], prompt_index=1)


@pytest.mark.parametrize(
    ("text", "letter", "rule"),
    [
        ("so the answer is (C).", "C", "answer_is"),
        ("The answer is D", "D", "answer_is"),
        ("the answer is (B) ... wait, the answer is (C)", "B", "answer_is"),  # first match
        ("Answer: E", "E", "answer_colon"),
        ("reasoning\nanswer: F and G", "F", "answer_colon"),
        ("I pick H.", "H", "last_letter"),
        ("Between A and J I pick J", "J", "last_letter"),
        ("no letters here", None, "none"),
        ("The Answer is (K)", None, "none"),
        ("", None, "none"),
    ],
)
def test_extraction_chain(text: str, letter: str | None, rule: str) -> None:
    assert extract_choice(text) == (letter, rule)


def test_unextractable_is_wrong_and_flagged(bench) -> None:
    item = bench.load("bundled")[0]
    g = bench.grade(item, "not sure about this one.")
    assert g.correct == 0.0 and g.status == "unextractable" and g.graded


def test_bad_rows_name_the_file_and_row(bench, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question_id": 1, "question": "q", "options": ["a", "b"]}) + "\n")
    with pytest.raises(DataFormatError, match=r"bad.jsonl row 0 lacks field"):
        bench.load(bad)
    bad.write_text('{"question_id": 1,\n')
    with pytest.raises(DataFormatError, match="line 1"):
        bench.load(bad)
    row = {
        "question_id": 1,
        "question": "q",
        "options": ["a", "b"],
        "answer": "C",
        "category": "math",
    }
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataFormatError, match="answer 'C'"):
        bench.load(bad)


def test_real_test_sample_loads(bench, benchmarks_dir: Path) -> None:
    items = bench.load(benchmarks_dir / "mmlu_pro" / "test_sample.jsonl")
    assert len(items) == 200
    assert len({it.meta["category"] for it in items}) == 14
    assert {it.meta["n_options"] for it in items} >= {4, 10}
    for item in items:
        assert item.target == "ABCDEFGHIJ"[item.record["answer_index"]]


def test_extractor_agrees_with_authors_pred(bench, benchmarks_dir: Path) -> None:
    """Real CoT generations: our chain vs the `pred` the authors' pipeline stored.

    The only disagreements are rows where the authors stored ``null`` and our third stage
    (last standalone letter, added to the authors' script after these July-2024 runs) finds a
    stray letter in a degenerate generation; graded, both are wrong.
    """
    rows = [
        json.loads(line)
        for line in (benchmarks_dir / "mmlu_pro" / "model_outputs_sample.jsonl").open()
    ]
    items = {it.item_id: it for it in bench.load(benchmarks_dir / "mmlu_pro" / "test_sample.jsonl")}
    disagreements = []
    for row in rows:
        letter, rule = extract_choice(row["model_output"])
        if letter != row["pred"]:
            disagreements.append((row["question_id"], row["pred"], letter, rule))
        item = items[str(row["question_id"])]
        grade = bench.grade(item, row["model_output"])
        authors_right = row["pred"] is not None and row["pred"] == row["answer"]
        assert grade.correct == float(authors_right) or row["pred"] is None
    assert len(rows) == 90
    assert len(disagreements) == 2
    for _qid, pred, letter, rule in disagreements:
        assert pred is None and rule == "last_letter" and letter is not None
    # Both disagreements grade wrong, as the authors' rows would without the random guess.
    for qid, _pred, _letter, _rule in disagreements:
        assert (
            bench.grade(
                items[str(qid)], next(r["model_output"] for r in rows if r["question_id"] == qid)
            ).correct
            == 0.0
        )


@settings(max_examples=200, deadline=None)
@given(letterless_text())
def test_text_without_letters_has_no_choice(text: str) -> None:
    assert extract_choice(text) == (None, "none")


@settings(max_examples=200, deadline=None)
@given(letterless_text(), _LETTER_ANY, st.sampled_from(["({x})", "{x}", "({x})."]),
       letterless_text())  # fmt: skip
def test_answer_is_is_read_through_any_letterless_text(before, x, form, after) -> None:
    text = f"{before} the answer is {form.format(x=x)} {after}"
    assert extract_choice(text) == (x, "answer_is"), text


@settings(max_examples=200, deadline=None)
@given(letterless_text(), _LETTER_ANY, letterless_text())
def test_answer_colon_is_read_through_any_letterless_text(before, x, after) -> None:
    text = f"{before}\nAnswer: {x}\n{after}"
    assert extract_choice(text) == (x, "answer_colon"), text


# --- extraction rules, one reason per test ------------------------------------------------


def test_answer_colon_takes_the_last_on_its_line() -> None:
    # The authors' greedy ".*[aA]nswer:": the last "answer:" of the first line that has one.
    assert extract_choice("Answer: B, no wait, Answer: D") == ("D", "answer_colon")
    assert extract_choice("answer: C then answer: E\nAnswer: G") == ("E", "answer_colon")


def test_answer_is_is_case_sensitive() -> None:
    # "The Answer is (C)" is not the answer_is rule (capital A); the last letter still finds C.
    assert extract_choice("The Answer is (C)") == ("C", "last_letter")
    assert extract_choice("THE ANSWER IS (C)") == ("C", "last_letter")


def test_answer_colon_accepts_only_a_or_capital_a() -> None:
    assert extract_choice("ANSWER: D") == ("D", "last_letter")
    assert extract_choice("answer: D") == ("D", "answer_colon")


def test_lowercase_letters_are_never_choices() -> None:
    assert extract_choice("the answer is (c)") == (None, "none")
    assert extract_choice("answer: d") == (None, "none")


def test_letters_stop_at_j() -> None:
    # The last option letter is J (10 options); K is no choice under any rule.
    assert extract_choice("the answer is (J)") == ("J", "answer_is")
    assert extract_choice("the answer is (K)") == (None, "none")
    assert extract_choice("Answer: K") == (None, "none")
    assert extract_choice("my pick: K") == (None, "none")
    # (the pronoun "I" is a standalone letter, as in the authors' chain)
    assert extract_choice("I pick K") == ("I", "last_letter")


def test_letter_beyond_the_items_options_is_graded_wrong(bench) -> None:
    # As in the authors' script: extraction reads A-J; a letter the item does not offer is a
    # wrong answer (extracted, status ok), not an unextractable one.
    item = next(it for it in bench.load("bundled") if it.meta["n_options"] <= 4)
    beyond = "ABCDEFGHIJ"[item.meta["n_options"]]
    g = bench.grade(item, f"the answer is ({beyond})")
    assert (g.correct, g.status, g.extracted) == (0.0, "ok", beyond)


# --- structured property tests: the reply carries a known choice --------------------------

#: Chain-of-thought words with no standalone capital letter A-J.
_COT = st.lists(
    st.sampled_from(
        [
            "let",
            "us",
            "weigh",
            "each",
            "option",
            "the",
            "second",
            "one",
            "fits",
            "best",
            "since",
            "42",
            "and",
            "7",
            "differ",
            "so",
            "it",
            "follows",
            "that",
        ]
    ),
    max_size=30,
).map(" ".join)
_LETTER = st.sampled_from(list("ABCDEFGHIJ"))


@settings(max_examples=200, deadline=None)
@given(_COT, _LETTER, _LETTER, st.sampled_from(["({x})", "{x}", "({x})."]), _COT)
def test_first_answer_is_wins_after_any_reasoning(before, x, later, form, after) -> None:
    text = f"{before} the answer is {form.format(x=x)} {after} the answer is ({later})"
    assert extract_choice(text) == (x, "answer_is")


@settings(max_examples=200, deadline=None)
@given(_COT, _LETTER, st.sampled_from(["Answer: {x}", "answer:{x}", "Answer:   {x}"]))
def test_answer_colon_read_without_an_answer_is(before, x, form) -> None:
    assert extract_choice(f"{before}\n{form.format(x=x)}\n{before}") == (x, "answer_colon")


@settings(max_examples=200, deadline=None)
@given(_COT, st.lists(_LETTER, min_size=1, max_size=4))
def test_last_standalone_letter_otherwise(cot, letters) -> None:
    text = " ".join(f"{cot} option {x}" for x in letters)
    assert extract_choice(text) == (letters[-1], "last_letter")


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


_ROW = {
    "question_id": 70,
    "question": "  Which is prime?  ",
    "options": ["4", "N/A", "7", "9", "N/A"],
    "answer": "B",
    "answer_index": 1,
    "category": "math",
    "src": "ori_mmlu-high_school_mathematics",
}


def test_items_carry_the_rows_fields(bench, tmp_path: Path) -> None:
    folder = tmp_path / "mmlu"
    folder.mkdir()
    no_src = {k: v for k, v in _ROW.items() if k != "src"} | {"question_id": 71}
    (folder / "test.jsonl").write_text(json.dumps(_ROW) + "\n" + json.dumps(no_src) + "\n")
    (folder / "validation.jsonl").write_text(json.dumps(_ROW | {"question_id": 5}) + "\n")
    item, other = bench.load(folder, split="test")  # the validation file is not read
    assert (item.benchmark, item.item_id, item.question, item.target, item.kind) == (
        "mmlu_pro", "70", "Which is prime?", "B", "multiple_choice",
    )  # fmt: skip
    assert item.meta == {
        "category": "math",
        "src": "ori_mmlu-high_school_mathematics",
        "options": ["4", "7", "9"],
        "n_options": 3,
    }
    assert "__file__" not in item.record and item.record["options"] == _ROW["options"]
    assert other.meta["src"] == ""
    assert [it.item_id for it in bench.load(folder)] == ["70", "71", "5"]
    # the authors' prompt, options lettered after "N/A" is dropped
    assert bench.solve_prompt(item) == (
        "The following is a multiple choice question about math. Think step by step and then "
        'finish your answer with "the answer is (X)" where X is the correct letter choice.\n\n'
        "Question:\nWhich is prime?\nOptions:\nA. 4\nB. 7\nC. 9\nAnswer: Let's think step by step."
    )


def test_item_errors_name_the_benchmark_and_row(bench, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([_ROW | {"options": ["4", "N/A"]}]))
    with pytest.raises(DataFormatError, match=rf"^mmlu_pro: {bad} row 0 has 1 options$"):
        bench.load(bad)
    bad.write_text(json.dumps([{"question_id": 1}]))
    with pytest.raises(DataFormatError, match=rf"^mmlu_pro: {bad} row 0 lacks field\(s\) "):
        bench.load(bad)


def test_hub_rows_become_items(bench, monkeypatch: pytest.MonkeyPatch) -> None:
    import metacog_tasks.benchmarks.mmlu_pro as mod

    calls = []

    def fake_load_hf(name, path, *, split, fields, local_hint):
        calls.append((name, path, split, fields, local_hint))
        return [_ROW, _ROW | {"question_id": 71}]

    monkeypatch.setattr(mod, "load_hf", fake_load_hf)
    items = bench.load(None, split="validation")
    assert [it.item_id for it in items] == ["70", "71"]
    ((name, path, split, fields, hint),) = calls
    assert (name, path, split) == ("mmlu_pro", "TIGER-Lab/MMLU-Pro", "validation")
    assert fields == ("question_id", "question", "options", "answer", "category")
    assert hint.startswith("a JSON/JSONL file of MMLU-Pro rows (question_id, question, options")
    assert bench.load(None)[0].item_id == "70" and calls[-1][2] == "test"  # default split
    monkeypatch.setattr(mod, "load_hf", lambda *a, **k: [{"question_id": 1}])
    with pytest.raises(DataFormatError, match=r"^mmlu_pro: TIGER-Lab/MMLU-Pro test row 0 lacks"):
        bench.load(None)


def test_grades_record_the_rule_and_aggregate_counts_unextractable(bench) -> None:
    items = [it for it in bench.load("bundled") if it.meta["category"] == "math"]
    items = [items[0], items[0]]  # the same item twice: one right, one unextractable
    right = bench.grade(items[0], f"Answer: {items[0].target}")
    assert right.details == {"rule": "answer_colon"} and right.correct == 1.0
    lost = bench.grade(items[1], "no idea")
    assert (lost.correct, lost.status, lost.extracted, lost.details) == (
        0.0, "unextractable", None, {"rule": "none"},
    )  # fmt: skip
    assert bench.aggregate(items, [right, lost]) == {
        "accuracy": 0.5,
        "accuracy_graded": 0.5,
        "ungraded": 0.0,
        "unextractable": 1.0,
        "accuracy/math": 0.5,
    }
    from metacog_tasks.benchmarks.base import Grade

    # an ungraded item (the grader's failure) counts wrong, overall and in its category
    ungraded = Grade(float("nan"), "grader_error")
    assert bench.aggregate(items, [right, ungraded]) == {
        "accuracy": 0.5,
        "accuracy_graded": 1.0,
        "ungraded": 1.0,
        "unextractable": 0.0,
        "accuracy/math": 0.5,
    }
    empty = bench.aggregate(items[:1], [ungraded])
    assert empty["accuracy"] == 0.0 and empty["accuracy/math"] == 0.0
    assert np.isnan(empty["accuracy_graded"]) and empty["ungraded"] == 1.0
    assert empty["unextractable"] == 0.0
    with pytest.raises(ValueError, match=r"^mmlu_pro: 2 items but 1 grades$"):
        bench.aggregate(items, [right])
