"""LegalBench: per-task normalisation and metrics of the authors' evaluation.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import balanced_accuracy_score

from metacog_tasks.benchmarks import DataFormatError, DataUnavailableError, get_benchmark
from metacog_tasks.benchmarks.legalbench import extract_answer, normalize
from tests.strategies import letterless_text


@pytest.fixture(scope="module")
def bench():
    return get_benchmark("legalbench")


def test_pack_covers_classification_and_generation(bench) -> None:
    items = bench.load("bundled")
    assert 8 <= len(items) <= 20
    kinds = {it.kind for it in items}
    assert kinds == {"classification", "generation"}
    metrics = {it.meta["metric"] for it in items}
    assert {
        "balanced_accuracy",
        "sara_numeric",
        "successor_liability",
        "citation_open",
        "definition_extraction",
        "ssla",
    } <= metrics
    assert all(it.item_id == f"{it.meta['task']}:{it.record['index']}" for it in items)
    rng = np.random.default_rng(0)
    for item in items:
        assert bench.grade(item, bench.reference_response(item)).correct == 1.0
        assert bench.grade(item, bench.wrong_response(item, rng)).correct == 0.0


def test_probe_hides_labels_and_statute(bench) -> None:
    items = {it.meta["task"]: it for it in bench.load("bundled")}
    aber = items["abercrombie"]
    assert "fanciful" in bench.solve_prompt(aber)
    assert "fanciful" not in bench.probe_prompt(aber)
    sara = items["sara_numeric"]
    statute = sara.record["statute"]
    assert statute in bench.solve_prompt(sara) and statute not in bench.probe_prompt(sara)
    succ = items["successor_liability"]
    assert "de facto merger" in bench.solve_prompt(succ)
    assert "de facto merger" not in bench.probe_prompt(succ)


def test_balanced_accuracy_matches_sklearn_on_real_data(bench, benchmarks_dir: Path) -> None:
    items = [
        it
        for it in bench.load(benchmarks_dir / "legalbench", split="test")
        if it.meta["task"] == "abercrombie"
    ]
    assert len(items) == 30
    rng = np.random.default_rng(7)
    replies, preds = [], []
    for it in items:
        label = it.target if rng.random() < 0.6 else str(rng.choice(it.meta["labels"]))
        preds.append(label)
        replies.append(f"Reason.\n**Answer: {label.upper()}.**")
    grades = [bench.grade(it, r) for it, r in zip(items, replies)]
    agg = bench.aggregate(items, grades)
    expected = balanced_accuracy_score([it.target for it in items], preds)
    assert agg["balanced_accuracy/abercrombie"] == pytest.approx(expected)
    assert agg["exact_match"] == pytest.approx(
        np.mean([p == it.target for p, it in zip(preds, items)])
    )


def test_label_extraction_rules(bench) -> None:
    item = next(it for it in bench.load("bundled") if it.meta["task"] == "hearsay")  # gold Yes
    assert bench.grade(item, "Yes").correct == 1.0
    assert bench.grade(item, "Yes, because it is an out-of-court statement.").correct == 1.0
    assert bench.grade(item, "It is offered for its truth.\nAnswer: yes").correct == 1.0
    off = bench.grade(item, "Probably hearsay.")
    assert off.correct == 0.0 and off.status == "off_label"
    assert bench.grade(item, "").status == "unextractable"


def test_generation_metrics_follow_the_authors(bench) -> None:
    items = {it.meta["task"]: it for it in bench.load("bundled")}
    sara = items["sara_numeric"]  # $1500
    assert bench.grade(sara, "Answer: $1,550").correct == 1.0  # within 10%
    assert bench.grade(sara, "Answer: $1,700").correct == 0.0
    succ = items["successor_liability"]  # de facto merger, mere continuation
    g = bench.grade(succ, "Answer: de facto merger")
    assert g.correct == 0.0 and g.details["tp"] == 1 and g.details["fn"] == 1
    assert g.score == pytest.approx(2 / 3)
    cite = items["citation_prediction_open"]
    assert bench.grade(cite, "Answer: Miranda v. Arizona, 384 U.S. 436 (1966)").correct == 1.0
    definition = next(it for it in bench.load("bundled") if it.item_id == "definition_extraction:1")
    assert bench.grade(definition, "Answer: domiciles").correct == 1.0  # stemmed
    ssla = items["ssla_company_defendants"]
    assert bench.grade(ssla, "Answer: Brightwave Systems, Inc., Laura Kim").correct == 0.0


def test_rule_qa_is_manual(bench, benchmarks_dir: Path) -> None:
    rq = get_benchmark("legalbench", tasks=["rule_qa"])
    items = rq.load(benchmarks_dir / "legalbench", split="test")
    assert len(items) == 30 and items[0].kind == "generation"
    g = rq.grade(items[0], "Answer: " + items[0].target)
    assert not g.graded and g.status == "manual"
    assert np.isnan(rq.aggregate(items[:1], [g])["manual/rule_qa"])


def test_reads_every_shared_task(benchmarks_dir: Path) -> None:
    root = benchmarks_dir / "legalbench"
    n_files = 0
    for split, pattern in (("train", "train.jsonl"), ("test", "test_prerelease_sample.jsonl")):
        items = get_benchmark("legalbench").load(root, split=split)
        files = sorted(root.glob(f"*/{pattern}"))
        n_files += len(files)
        expected = sum(len(f.read_text().splitlines()) for f in files)
        assert len(items) == expected
        assert {it.meta["task"] for it in items} == {f.parent.name for f in files}
    assert n_files == len(list(root.rglob("*.jsonl")))


def test_tasks_option_and_errors(tmp_path: Path, benchmarks_dir: Path) -> None:
    only = get_benchmark("legalbench", tasks="hearsay,proa").load("bundled")
    assert {it.meta["task"] for it in only} == {"hearsay", "proa"}
    with pytest.raises(DataUnavailableError, match="tort_law"):
        get_benchmark("legalbench", tasks=["hearsay", "tort_law"]).load("bundled")
    bad = tmp_path / "hearsay"
    bad.mkdir()
    (bad / "test.jsonl").write_text(json.dumps({"index": 0, "text": "t", "answer": "Maybe"}))
    with pytest.raises(DataFormatError, match="Maybe"):
        get_benchmark("legalbench").load(tmp_path)
    (bad / "test.jsonl").write_text(json.dumps({"index": 0, "answer": "Yes"}))
    with pytest.raises(DataFormatError, match=r"row 0 .*lacks field"):
        get_benchmark("legalbench").load(tmp_path)


def test_tsv_layout_of_the_github_repo(tmp_path: Path) -> None:
    task = tmp_path / "proa"
    task.mkdir()
    (task / "test.tsv").write_text(
        "index\ttext\tanswer\n0\tA person may sue.\tYes\n1\tThe board meets.\tNo\n"
    )
    items = get_benchmark("legalbench").load(tmp_path)
    assert [it.item_id for it in items] == ["proa:0", "proa:1"]


def test_normalize_and_extract() -> None:
    assert normalize("  Yes. ") == "yes"
    assert extract_answer("reason\nAnswer: **No**") == "No"
    assert extract_answer("Fanciful.\nmore") == "Fanciful."


@settings(max_examples=100, deadline=None)
@given(letterless_text(exclude="0123456789"))
def test_reply_without_letters_or_digits_is_wrong_on_every_task(text: str) -> None:
    bench = get_benchmark("legalbench")
    for item in bench.load("bundled"):
        g = bench.grade(item, text)
        if item.meta["metric"] == "manual":
            assert math.isnan(g.correct), item.item_id
        else:
            assert g.correct == 0.0, (item.item_id, text)


@settings(max_examples=100, deadline=None)
@given(st.data(), letterless_text())
def test_answer_line_is_read_through_any_letterless_text(data, before) -> None:
    bench = get_benchmark("legalbench")
    items = [it for it in bench.load("bundled") if it.meta.get("labels")]
    item = data.draw(st.sampled_from(items))
    label = data.draw(st.sampled_from(list(item.meta["labels"])))
    g = bench.grade(item, f"{before}\nAnswer: {label}")
    assert g.extracted == label
    assert g.correct == float(normalize(label) == normalize(str(item.target)))


# --- structured property tests: the reply carries a known label ----------------------------

_RATIONALE = st.lists(
    st.sampled_from(
        ["applying", "the", "rule", "to", "these", "facts", "the", "mark", "is", "used", "for"]
    ),
    max_size=15,
).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_last_answer_line_label_is_graded(data) -> None:
    bench = get_benchmark("legalbench")
    items = [it for it in bench.load("bundled") if it.meta.get("labels")]
    item = data.draw(st.sampled_from(items))
    label = data.draw(st.sampled_from(list(item.meta["labels"])))
    other = data.draw(st.sampled_from(list(item.meta["labels"])))
    form = data.draw(st.sampled_from(["Answer: {x}", "Answer: **{x}**", "answer: {x}."]))
    lines = [*data.draw(st.lists(_RATIONALE, max_size=3)), f"Answer: {other}"]
    reply = "\n".join([*lines, form.format(x=label)])
    g = bench.grade(item, reply)
    assert g.correct == float(normalize(label) == normalize(str(item.target))), reply


def test_aggregate_by_hand_over_every_metric_of_the_pack(bench) -> None:
    """Each task under its own metric: balanced accuracy (sklearn) of the labels read, F1 of
    the summed (tp, fp, fn) for the entity tasks, accuracy otherwise; ``mean`` over the tasks
    and ``exact_match`` over the graded items."""
    import warnings

    items = bench.load("bundled")
    rng = np.random.default_rng(11)
    replies = [
        bench.reference_response(it) if k % 3 else bench.wrong_response(it, rng)
        for k, it in enumerate(items)
    ]
    grades = [bench.grade(it, r) for it, r in zip(items, replies)]
    agg = bench.aggregate(items, grades)

    expected: dict[str, float] = {}
    for task in sorted({it.meta["task"] for it in items}):
        pairs = [(it, g) for it, g in zip(items, grades) if it.meta["task"] == task]
        metric = pairs[0][0].meta["metric"]
        if metric == "balanced_accuracy":
            gold = [normalize(it.target) for it, _ in pairs]
            read = [normalize(g.extracted or "") for _, g in pairs]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # labels read outside the gold classes
                expected[f"balanced_accuracy/{task}"] = balanced_accuracy_score(gold, read)
        elif metric in ("successor_liability", "ssla"):
            tp, fp, fn = (sum(g.details[k] for _, g in pairs) for k in ("tp", "fp", "fn"))
            expected[f"f1/{task}"] = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0
        else:
            expected[f"accuracy/{task}"] = sum(g.correct for _, g in pairs) / len(pairs)
    expected["mean"] = sum(expected.values()) / len(expected)
    expected["exact_match"] = sum(g.correct for g in grades) / len(grades)
    assert agg.keys() == expected.keys()
    for key, value in expected.items():
        assert agg[key] == pytest.approx(value, abs=1e-12), key
    assert 0 < agg["exact_match"] < 1  # both right and wrong replies in the mix
    with pytest.raises(ValueError, match=r"^legalbench: 16 items but 15 grades$"):
        bench.aggregate(items, grades[:-1])
