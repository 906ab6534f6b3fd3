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


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_extractor_never_raises(text: str) -> None:
    letter, _rule = extract_choice(text)
    assert letter is None or letter in "ABCDEFGHIJ"
