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

from metacog_tasks.benchmarks import DataFormatError, DataUnavailableError, Grade, get_benchmark
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
    and ``exact_match`` over the items (all graded here: the graded-only twins are equal)."""
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
    expected["mean"] = expected["mean_graded"] = sum(expected.values()) / len(expected)
    expected["exact_match"] = sum(g.correct for g in grades) / len(grades)
    expected["exact_match_graded"] = expected["exact_match"]
    expected["ungraded"] = 0.0
    assert agg.keys() == expected.keys()
    for key, value in expected.items():
        assert agg[key] == pytest.approx(value, abs=1e-12), key
    assert 0 < agg["exact_match"] < 1  # both right and wrong replies in the mix
    with pytest.raises(ValueError, match=r"^legalbench: 16 items but 15 grades$"):
        bench.aggregate(items, grades[:-1])


# --- the local reader's layouts ----------------------------------------------------------------


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


_PROA = [
    {"index": 0, "text": "A person may sue.", "answer": "Yes"},
    {"index": 1, "text": "The board meets.", "answer": "No"},
]


def test_a_single_file_takes_its_task_from_the_folder_name(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "proa" / "whatever.jsonl", _PROA)
    items = get_benchmark("legalbench").load(f)
    assert [it.item_id for it in items] == ["proa:0", "proa:1"]
    assert [it.target for it in items] == ["Yes", "No"]
    assert items[0].question == (
        "Does the following statutory clause create a private right of action?\n\nA person may sue."
    )


def test_a_single_file_with_a_task_column_is_split_by_task(tmp_path: Path) -> None:
    rows = [
        {"task": "proa", "index": 0, "text": "A person may sue.", "answer": "Yes"},
        {"task": "hearsay", "index": 0, "text": "A letter.", "answer": "No"},
        {"task": "proa", "index": 1, "text": "The board meets.", "answer": "No"},
        {"index": 7, "text": "no task here", "answer": "Yes"},  # rows without a task are dropped
    ]
    f = _jsonl(tmp_path / "mixed" / "all.jsonl", rows)
    items = get_benchmark("legalbench").load(f)
    # tasks in sorted order, each with its rows in file order
    assert [it.item_id for it in items] == ["hearsay:0", "proa:0", "proa:1"]
    assert [it.meta["task"] for it in items] == ["hearsay", "proa", "proa"]
    assert items[0].question.startswith("Under the U.S. Federal Rules of Evidence")


def test_a_task_folder_itself_can_be_the_source(tmp_path: Path) -> None:
    _jsonl(tmp_path / "proa" / "test.jsonl", _PROA)
    _jsonl(tmp_path / "proa" / "train.jsonl", [{"index": 5, "text": "t", "answer": "Yes"}])
    bench = get_benchmark("legalbench")
    assert [it.item_id for it in bench.load(tmp_path / "proa")] == ["proa:0", "proa:1"]
    assert [it.item_id for it in bench.load(tmp_path / "proa", split="train")] == ["proa:5"]


def test_split_files_are_found_in_the_documented_order(tmp_path: Path) -> None:
    # test.jsonl before test_*.jsonl before test.tsv before test*.json
    _jsonl(tmp_path / "a" / "proa" / "test.jsonl", _PROA[:1])
    _jsonl(tmp_path / "a" / "proa" / "test_sample.jsonl", _PROA)
    (tmp_path / "a" / "proa" / "test.tsv").write_text("index\ttext\tanswer\n9\tx\tNo\n")
    _jsonl(tmp_path / "b" / "proa" / "test_sample.jsonl", _PROA[1:])
    (tmp_path / "b" / "proa" / "test.tsv").write_text("index\ttext\tanswer\n9\tx\tNo\n")
    (tmp_path / "c" / "proa").mkdir(parents=True)
    (tmp_path / "c" / "proa" / "test.tsv").write_text("index\ttext\tanswer\n9\tx\tNo\n")
    (tmp_path / "c" / "proa" / "test_all.json").write_text(json.dumps(_PROA))
    (tmp_path / "d" / "proa").mkdir(parents=True)
    (tmp_path / "d" / "proa" / "test_all.json").write_text(json.dumps(_PROA))
    bench = get_benchmark("legalbench")
    ids = {k: [it.item_id for it in bench.load(tmp_path / k)] for k in "abcd"}
    assert ids == {
        "a": ["proa:0"],
        "b": ["proa:1"],
        "c": ["proa:9"],
        "d": ["proa:0", "proa:1"],
    }


def test_tsv_cells_stay_text_and_digit_indices_become_numbers(tmp_path: Path) -> None:
    (tmp_path / "proa").mkdir()
    (tmp_path / "proa" / "test.tsv").write_text(
        "index\ttext\tanswer\tslice\n007\tNA\tYes\tNA\nx1\tnull\tNo\t\n"
    )
    items = get_benchmark("legalbench").load(tmp_path)
    # "007" is a digit string (read as 7); "x1" is kept; "NA" and "null" are text, not missing
    assert [it.item_id for it in items] == ["proa:7", "proa:x1"]
    assert items[0].record == {"index": 7, "text": "NA", "answer": "Yes", "slice": "NA"}
    assert items[1].record == {"index": "x1", "text": "null", "answer": "No", "slice": ""}
    assert items[0].question.endswith("\n\nNA")


def test_a_tsv_without_an_index_column_numbers_its_rows(tmp_path: Path) -> None:
    (tmp_path / "proa").mkdir()
    (tmp_path / "proa" / "test.tsv").write_text("text\tanswer\nA.\tYes\nB.\tNo\n")
    items = get_benchmark("legalbench").load(tmp_path)
    assert [it.item_id for it in items] == ["proa:0", "proa:1"]


def test_folders_without_the_split_are_skipped_unless_asked_for(tmp_path: Path) -> None:
    _jsonl(tmp_path / "proa" / "test.jsonl", _PROA)
    _jsonl(tmp_path / "hearsay" / "train.jsonl", [{"index": 0, "text": "t", "answer": "No"}])
    (tmp_path / "notes.txt").write_text("not a task")
    assert [it.item_id for it in get_benchmark("legalbench").load(tmp_path)] == [
        "proa:0",
        "proa:1",
    ]
    with pytest.raises(
        DataUnavailableError,
        match=rf"^legalbench: no test file for task hearsay in {tmp_path / 'hearsay'}$",
    ):
        get_benchmark("legalbench", tasks=["hearsay", "proa"]).load(tmp_path)
    with pytest.raises(
        DataUnavailableError,
        match=rf"^legalbench: task folder\(s\) \['tort_law'\] not found in {tmp_path}$",
    ):
        get_benchmark("legalbench", tasks="proa,tort_law").load(tmp_path)
    with pytest.raises(
        DataUnavailableError,
        match=rf"^legalbench: no <task>/dev\*\.jsonl files in {tmp_path}$",
    ):
        get_benchmark("legalbench").load(tmp_path, split="dev")


def test_tasks_option_parsing_and_fewshot_check() -> None:
    assert get_benchmark("legalbench", tasks=" hearsay, ,proa ").tasks == ("hearsay", "proa")
    assert get_benchmark("legalbench", tasks=["proa"]).tasks == ("proa",)
    assert get_benchmark("legalbench").tasks is None
    assert get_benchmark("legalbench").fewshot == 0
    assert get_benchmark("legalbench", fewshot=2).fewshot == 2
    with pytest.raises(ValueError, match=r"^legalbench: fewshot must be >= 0$"):
        get_benchmark("legalbench", fewshot=-1)


def test_prompt_overrides_reach_the_prompts() -> None:
    bench = get_benchmark("legalbench", prompts={"answer_free": "HINT {hint}"})
    item = next(it for it in bench.load("bundled") if it.meta["task"] == "sara_numeric")
    assert bench.solve_prompt(item).endswith("\n\nHINT Give the amount in dollars.")


# --- few-shot examples ------------------------------------------------------------------------


def test_fewshot_examples_come_from_the_train_split(tmp_path: Path) -> None:
    _jsonl(tmp_path / "proa" / "test.jsonl", _PROA[:1])
    _jsonl(
        tmp_path / "proa" / "train.jsonl",
        [
            {"index": 0, "text": "One may sue.", "answer": "Yes"},
            {"index": 1, "answer": "No"},  # no text: cannot be shown, skipped
            {"index": 2, "text": "Fees are due.", "answer": "No"},
            {"index": 3, "text": "Never shown.", "answer": "Yes"},
        ],
    )
    _jsonl(tmp_path / "hearsay" / "test.jsonl", [{"index": 0, "text": "A letter.", "answer": "No"}])
    q = "Does the following statutory clause create a private right of action?\n\n"
    fmt = (
        "Answer with one of: Yes, No. You may give a short reason first, then end with a final "
        'line of the form "Answer: <label>".'
    )
    bench = get_benchmark("legalbench", fewshot=3)
    proa, hearsay = sorted(bench.load(tmp_path), key=lambda it: it.meta["task"] != "proa")
    assert bench.solve_prompt(proa) == (
        "Here are solved examples of the same task.\n\n"
        f"{q}One may sue.\nAnswer: Yes\n\n{q}Fees are due.\nAnswer: No\n\n"
        "Now the task.\n\n"
        f"{q}A person may sue.\n\n{fmt}"
    )
    # hearsay has no train split: no examples
    assert bench.solve_prompt(hearsay).startswith("Under the U.S. Federal Rules of Evidence")
    # without fewshot the train split is not read
    plain = get_benchmark("legalbench")
    item = next(it for it in plain.load(tmp_path) if it.meta["task"] == "proa")
    assert plain.solve_prompt(item) == f"{q}A person may sue.\n\n{fmt}"


def test_fewshot_with_only_unshowable_examples_shows_none(tmp_path: Path) -> None:
    _jsonl(tmp_path / "proa" / "test.jsonl", _PROA[:1])
    _jsonl(tmp_path / "proa" / "train.jsonl", [{"index": 1, "answer": "No"}])
    bench = get_benchmark("legalbench", fewshot=1)
    (item,) = bench.load(tmp_path)
    assert bench.solve_prompt(item).startswith("Does the following statutory clause")


def test_the_hub_loader_asks_for_each_task_and_its_train_split(monkeypatch) -> None:
    import metacog_tasks.benchmarks.legalbench as lb

    calls = []

    def fake_load_hf(benchmark, path, *, name=None, split, local_hint="", **kwargs):
        calls.append((benchmark, path, name, split, local_hint))
        answer = {"abercrombie": "generic", "function_of_decision_section": "Facts"}
        fields = ("question", "bill_title", "bill_summary", "company_name")
        return [
            {
                "index": 0,
                "text": f"{name} {split}",
                "answer": answer.get(name, "Yes"),
                **dict.fromkeys(fields, "f"),
                "company_description": "d",
                "Paragraph": "p",
            }
        ]

    monkeypatch.setattr(lb, "load_hf", fake_load_hf)
    bench = get_benchmark("legalbench", tasks=["proa", "hearsay"], fewshot=1)
    items = bench.load(split="test")
    assert [it.item_id for it in items] == ["proa:0", "hearsay:0"]
    hint = (
        "a folder with <task>/test.jsonl (or .tsv) files in LegalBench's columns "
        "(index, text, answer, ...)"
    )
    assert calls == [
        ("legalbench", "nguha/legalbench", "proa", "test", hint),
        ("legalbench", "nguha/legalbench", "proa", "train", hint),
        ("legalbench", "nguha/legalbench", "hearsay", "test", hint),
        ("legalbench", "nguha/legalbench", "hearsay", "train", hint),
    ]
    assert "Here are solved examples" in bench.solve_prompt(items[0])
    assert "proa train\nAnswer: Yes" in bench.solve_prompt(items[0])
    calls.clear()
    get_benchmark("legalbench").load()  # HELM's subset, test split, no train
    assert [(c[2], c[3]) for c in calls] == [
        ("abercrombie", "test"),
        ("corporate_lobbying", "test"),
        ("function_of_decision_section", "test"),
        ("international_citizenship_questions", "test"),
        ("proa", "test"),
    ]


# --- specs: known tasks, families, and tasks inferred from their answers -------------------------


def test_family_specs_name_their_topic() -> None:
    bench = get_benchmark("legalbench")
    assert bench.spec("cuad_covenant_not-to-sue").question == (
        "Does the following contract clause concern covenant not to sue?\n\n{text}"
    )
    assert bench.spec("contract_nli_return_of-info").question == (
        "Consider the following passage of a non-disclosure agreement. Does it state the "
        "obligation or permission about return of info described by the task?\n\n{text}"
    )
    assert bench.spec("learned_hands_health-care").question == (
        "Does the following post describe a legal issue concerning health-care?\n\n{text}"
    )
    assert bench.spec("hearsay").labels == ("Yes", "No")
    with pytest.raises(
        ValueError, match=r"^legalbench: no spec for task 'tort_law'; load its data first$"
    ):
        bench.spec("tort_law")


def test_unknown_tasks_get_a_spec_from_their_answers(tmp_path: Path) -> None:
    def spec_of(rows):
        bench = get_benchmark("legalbench")
        _jsonl(tmp_path / "t" / "new_task" / "test.jsonl", rows)
        items = bench.load(tmp_path / "t")
        return bench.spec("new_task"), items

    twelve = [{"text": f"t{i}", "answer": f"label {i:02d}"} for i in range(12)]
    spec, items = spec_of(twelve)
    assert spec.labels == tuple(f"label {i:02d}" for i in range(12))  # sorted
    assert spec.metric == "balanced_accuracy" and spec.question == "{text}"
    assert items[0].kind == "classification" and items[3].item_id == "new_task:3"
    spec, items = spec_of([*twelve, {"text": "t", "answer": "label 12"}])  # 13 answers
    assert spec.labels is None and spec.metric == "exact_match"
    assert spec.hint == "Give the answer." and items[0].kind == "generation"
    long = "x" * 40
    spec, _ = spec_of([{"text": "a", "answer": long}, {"text": "b", "answer": "y"}])
    assert spec.labels == (long, "y")
    spec, _ = spec_of([{"text": "a", "answer": long + "x"}, {"text": "b", "answer": "y"}])
    assert spec.labels is None
    spec, _ = spec_of([{"text": "a", "answer": "Yes"}, {"text": "b", "answer": "Yes"}])
    assert spec.labels is None  # one answer: nothing to classify
    spec, items = spec_of(
        [
            {"question": "Q1?", "text": "a", "answer": "No"},
            {"question": "Q2?", "text": "b", "answer": "Yes"},
        ]
    )
    assert spec.labels == ("Yes", "No") and spec.question == "{question}\n\n{text}"
    assert items[1].question == "Q2?\n\nb"


def test_item_fields(tmp_path: Path) -> None:
    rows = [
        {"index": 3, "text": " A letter. ", "answer": " No ", "slice": "s1", "__file__": "x"},
        {"text": "Said aloud.", "answer": "Yes"},
    ]
    _jsonl(tmp_path / "hearsay" / "test.jsonl", rows)
    first, second = get_benchmark("legalbench").load(tmp_path)
    question = "Under the U.S. Federal Rules of Evidence, is the following evidence hearsay?"
    assert first == type(first)(
        benchmark="legalbench",
        item_id="hearsay:3",
        question=f"{question}\n\n A letter.",
        target="No",
        kind="classification",
        record={"index": 3, "text": " A letter. ", "answer": " No ", "slice": "s1"},
        meta={
            "task": "hearsay",
            "metric": "balanced_accuracy",
            "labels": ["Yes", "No"],
            "solve_question": f"{question}\n\n A letter.",
            "slice": "s1",
        },
    )
    assert second.item_id == "hearsay:1" and second.meta["slice"] is None
    items = {it.meta["task"]: it for it in get_benchmark("legalbench").load("bundled")}
    sara = items["sara_numeric"]
    assert (
        sara.question
        == f"Facts: {sara.record['description']}\n\nQuestion: {sara.record['question']}"
    )
    assert sara.meta["solve_question"].startswith(f"Statute:\n{sara.record['statute']}\n\nFacts: ")
    assert sara.meta["labels"] is None and sara.kind == "generation"


def test_answers_outside_the_labels_name_file_task_and_labels(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "proa" / "test.jsonl", [*_PROA, {"text": "t", "answer": "Maybe"}])
    message = f"legalbench: {f} (task proa) has answers ['Maybe'] outside the labels ['Yes', 'No']"
    with pytest.raises(DataFormatError) as err:
        get_benchmark("legalbench").load(tmp_path)
    assert str(err.value) == message
    _jsonl(f, [{"index": 0, "answer": "Yes"}])
    with pytest.raises(DataFormatError) as err:
        get_benchmark("legalbench").load(tmp_path)
    assert str(err.value).startswith(f"legalbench: {f} row 0 (task proa) lacks field(s) ['text']")


# --- grades, field by field, by hand ------------------------------------------------------------


def _grade_fields(g) -> tuple:
    return (g.correct, g.status, g.extracted, g.score, dict(g.details))


def _task_items(tmp_path: Path, task: str, rows: list[dict], **kwargs):
    _jsonl(tmp_path / task / "test.jsonl", rows)
    bench = get_benchmark("legalbench", tasks=[task], **kwargs)
    return bench, bench.load(tmp_path)


def test_label_grades(bench) -> None:
    item = next(it for it in bench.load("bundled") if it.item_id == "hearsay:0")  # gold Yes
    metric = "balanced_accuracy"
    assert _grade_fields(bench.grade(item, "Reason.\nAnswer: yes.")) == (
        1.0, "ok", "Yes", None, {"metric": metric, "rule": "exact", "normalized": "yes"},
    )  # fmt: skip
    assert _grade_fields(bench.grade(item, "No, it is not offered for its truth.")) == (
        0.0, "ok", "No", None, {"metric": metric, "rule": "label_prefix", "normalized": "no"},
    )  # fmt: skip
    assert _grade_fields(bench.grade(item, "Probably hearsay.")) == (
        0.0, "off_label", "Probably hearsay.", None,
        {"metric": metric, "rule": "off_label", "normalized": "probably hearsay"},
    )  # fmt: skip
    assert _grade_fields(bench.grade(item, " \n")) == (
        0.0, "unextractable", None, None, {"metric": metric},
    )  # fmt: skip


def test_the_longest_label_that_starts_the_answer_wins(tmp_path: Path) -> None:
    rows = [
        {"text": "a", "answer": "breach"},
        {"text": "b", "answer": "breach of contract"},
        {"text": "c", "answer": "tort"},
    ]
    bench, items = _task_items(tmp_path, "remedy_kind", rows)
    short, long = items[0], items[1]
    g = bench.grade(long, "Breach of contract, clearly: the seller never delivered.")
    assert (g.correct, g.extracted, g.details["rule"]) == (
        1.0,
        "breach of contract",
        "label_prefix",
    )
    g = bench.grade(short, "Breach, clearly.")
    assert (g.correct, g.extracted, g.details["rule"]) == (1.0, "breach", "label_prefix")


def test_manual_grades_keep_the_answer(tmp_path: Path) -> None:
    bench, (item,) = _task_items(tmp_path, "rule_qa", [{"text": "What is X?", "answer": "X is Y."}])
    g = bench.grade(item, "Thinking.\nAnswer: *The rule is Y.*")
    assert math.isnan(g.correct)
    assert (g.status, g.extracted, g.details) == (
        "manual",
        "The rule is Y.",
        {"metric": "manual", "answer": "The rule is Y."},
    )
    g = bench.grade(item, "")
    assert (g.status, g.extracted, g.details) == (
        "manual",
        None,
        {"metric": "manual", "answer": ""},
    )


def _sara(tmp_path: Path, golds: list[str]):
    rows = [{"statute": "s", "description": "d", "question": "q", "answer": a} for a in golds]
    return _task_items(tmp_path, "sara_numeric", rows)


def test_sara_numeric_is_within_ten_percent_of_gold_plus_a_tenth(tmp_path: Path) -> None:
    """The authors' rule: |pred / (gold + 0.1) - 1| < 0.1, the first integer of the answer
    with commas and dots removed; no integer reads as 0."""
    bench, (ten, big) = _sara(tmp_path, ["$10", "$1,500"])
    cases = [
        (ten, "Answer: $11", 1.0, "ok", 11),  # 11 / 10.1 = 1.089
        (ten, "Answer: 9", 0.0, "ok", 9),  # 9 / 10.1 = 0.891
        (ten, "Answer: 12 dollars", 0.0, "ok", 12),  # 12 / 10.1 = 1.188
        (big, "Answer: $1,650", 1.0, "ok", 1650),  # 1650 / 1500.1 = 1.09993
        (big, "Answer: $1,360", 1.0, "ok", 1360),  # 1360 / 1500.1 = 0.90661
        (big, "Answer: $1,350", 0.0, "ok", 1350),  # 1350 / 1500.1 = 0.89994
        (big, "Answer: 1.5 thousand", 0.0, "ok", 15),  # the dot is dropped: 15
        (big, "Answer: none", 0.0, "unextractable", 0),
    ]
    for item, reply, correct, status, value in cases:
        answer = reply.removeprefix("Answer: ")
        expected = (correct, status, answer, None, {"metric": "sara_numeric", "value": value})
        assert _grade_fields(bench.grade(item, reply)) == expected, reply


def test_successor_liability_counts_by_hand(bench) -> None:
    item = next(it for it in bench.load("bundled") if it.meta["task"] == "successor_liability")
    assert item.target == "de facto merger,mere continuation"
    metric = "successor_liability"
    reply = "Answer: mere continuation and de facto merger"
    assert _grade_fields(bench.grade(item, reply)) == (
        1.0, "ok", reply[8:], 1.0, {"metric": metric, "tp": 2, "fp": 0, "fn": 0},
    )  # fmt: skip
    # express agreement is not gold (fp 1), de facto merger is (tp 1), mere continuation is
    # missing (fn 1): F1 = 2 / (2 + 1 + 1)
    reply = "Answer: de facto merger, express agreement"
    assert _grade_fields(bench.grade(item, reply)) == (
        0.0, "ok", reply[8:], 0.5, {"metric": metric, "tp": 1, "fp": 1, "fn": 1},
    )  # fmt: skip
    # two wrong classes: fp 2, fn 2
    reply = "Answer: express agreement; fraudulent conveyance"
    assert _grade_fields(bench.grade(item, reply)) == (
        0.0, "ok", reply[8:], 0.0, {"metric": metric, "tp": 0, "fp": 2, "fn": 2},
    )  # fmt: skip


def test_ssla_counts_follow_the_authors_by_hand(tmp_path: Path) -> None:
    rows = [
        {"text": "t0", "answer": "Acme Corp, Beta LLC"},
        {"text": "t1", "answer": "Acme Corp, Beta LLC, Gamma Inc"},
        {"text": "t2", "answer": "Acme Corp"},
    ]
    bench, (two, three, one) = _task_items(tmp_path, "ssla_company_defendants", rows)

    def fields(item, reply):
        g = bench.grade(item, "Answer: " + reply)
        return g.correct, g.score, g.details["tp"], g.details["fp"], g.details["fn"]

    # both found; after the first gold one generation is still unmatched (fp 1): F1 4/5
    assert fields(two, "Acme Corp, Beta LLC") == (1.0, 0.8, 2, 1, 0)
    # gold contained in a longer generation counts; Beta missing
    assert fields(two, "Acme Corporation") == (0.0, pytest.approx(2 / 3), 1, 0, 1)
    # nothing found: one stray generation counted after each gold
    assert fields(two, "Gamma") == (0.0, 0.0, 0, 2, 2)
    # one of three found: F1 2 / (2 + 0 + 2)
    assert fields(three, "Acme Corp") == (0.0, 0.5, 1, 0, 2)
    # one found and two extra names: F1 2 / (2 + 2 + 0), not an exact match
    assert fields(one, "Acme Corp, X Ltd, Y Ltd") == (0.0, 0.5, 1, 2, 0)
    assert bench.grade(one, "Answer: Acme Corp").details == {
        "metric": "ssla", "tp": 1, "fp": 0, "fn": 0,
    }  # fmt: skip


def test_citation_definition_and_exact_match_grades(bench, tmp_path: Path) -> None:
    items = {it.item_id: it for it in bench.load("bundled")}
    cite = items["citation_prediction_open:0"]  # Miranda v. Arizona
    assert _grade_fields(bench.grade(cite, "Answer: It is Miranda v Arizona (1966)")) == (
        1.0, "ok", "It is Miranda v Arizona (1966)", None, {"metric": "citation_open"},
    )  # fmt: skip
    assert bench.grade(cite, "Answer: Arizona v. Miranda").correct == 0.0
    definition = items["definition_extraction:0"]  # vessel
    assert _grade_fields(bench.grade(definition, "Answer: watercraft, Vessels")) == (
        1.0, "ok", "watercraft, Vessels", None, {"metric": "definition_extraction"},
    )  # fmt: skip
    assert bench.grade(definition, "Answer: watercraft").correct == 0.0
    rows = [{"text": f"t{i}", "answer": f"label {i:02d}"} for i in range(13)]
    generic, gen_items = _task_items(tmp_path, "new_task", rows)
    assert _grade_fields(generic.grade(gen_items[5], "Answer: Label 05!")) == (
        1.0, "ok", "Label 05!", None, {"metric": "exact_match"},
    )  # fmt: skip
    assert generic.grade(gen_items[5], "Answer: label 5").correct == 0.0


# --- wrong answers of the simulated responder ---------------------------------------------------


def _wrong_answers(bench, item, n: int = 400) -> set[str]:
    rng = np.random.default_rng(3)
    out = set()
    for _ in range(n):
        reply = bench.wrong_response(item, rng)
        head, answer = reply.split("\nAnswer: ")
        assert head == "Applying the relevant rule to these facts."
        out.add(answer)
    return out


def test_wrong_answers_by_metric(bench, tmp_path: Path) -> None:
    items = {it.item_id: it for it in bench.load("bundled")}
    aber = items["abercrombie:0"]  # generic
    assert _wrong_answers(bench, aber) == {"descriptive", "suggestive", "arbitrary", "fanciful"}
    succ = items["successor_liability:0"]  # de facto merger, mere continuation
    assert _wrong_answers(bench, succ) == {"express agreement", "fraudulent conveyance"}
    assert _wrong_answers(bench, items["citation_prediction_open:0"]) == {"Marbury v. Madison"}
    assert _wrong_answers(bench, items["ssla_company_defendants:0"]) == {"Northwind Holdings LLC"}
    assert bench.reference_response(aber) == (
        "Applying the relevant rule to these facts.\nAnswer: generic"
    )
    with pytest.raises(ValueError, match="prompt_index 1 out of range"):
        bench.wrong_response(aber, np.random.default_rng(0), 1)
    with pytest.raises(ValueError, match="prompt_index 1 out of range"):
        bench.reference_response(aber, 1)


def test_wrong_amounts_are_twice_gold_plus_1001_to_1499(tmp_path: Path) -> None:
    bench, (item,) = _sara(tmp_path, ["$1,500"])
    amounts = _wrong_answers(bench, item, n=5000)
    assert amounts == {f"${v}" for v in range(4001, 4500)}


def _generation_item(target: str, metric: str, question: str = "q"):
    from metacog_tasks.benchmarks.base import Item

    # the task only picks the answer-format hint of the (single) solve prompt
    meta = {"task": "rule_qa", "metric": metric, "labels": None, "solve_question": question}
    return Item("legalbench", "t:0", question, target, "generation", meta=meta)


def test_wrong_answers_of_the_rarer_cases() -> None:
    bench = get_benchmark("legalbench")
    every = "express agreement,fraudulent conveyance,de facto merger,mere continuation"
    succ = _generation_item(every, "successor_liability")
    assert _wrong_answers(bench, succ, 20) == {"none of them"}
    marbury = _generation_item("Marbury v. Madison", "citation_open")
    assert _wrong_answers(bench, marbury, 20) == {"Roe v. Wade"}
    for metric in ("exact_match", "manual"):
        assert _wrong_answers(bench, _generation_item("gold", metric), 20) == {"I am not certain"}
    # no word of the question is long enough and differs from the term: a fixed wrong term
    short = _generation_item("boat", "definition_extraction", "A boat is a big one.")
    assert _wrong_answers(bench, short, 20) == {"obligation"}


def test_wrong_terms_are_other_long_words_of_the_definition(tmp_path: Path) -> None:
    bench, (item,) = _task_items(
        tmp_path, "definition_extraction", [{"text": 'A "boat" means any craft.', "answer": "boat"}]
    )
    # words of the question over three letters, punctuation and quotes stripped, except the
    # term itself (stemmed) and words whose stem lies inside it
    expected = {"following", "sentence", "from", "judicial", "opinion", "defines", "term"}
    expected |= {"Which", "being", "defined", "means", "craft"}
    assert _wrong_answers(bench, item, 1000) == expected


# --- aggregate: grades without the optional details ---------------------------------------------


def test_aggregate_with_unreadable_replies_manual_tasks_and_no_scores(tmp_path: Path) -> None:
    import warnings

    _jsonl(tmp_path / "hearsay" / "test.jsonl", [
        {"text": "a", "answer": "Yes"}, {"text": "b", "answer": "No"},
    ])  # fmt: skip
    _jsonl(tmp_path / "rule_qa" / "test.jsonl", [{"text": "q", "answer": "r"}])
    _jsonl(tmp_path / "ssla_plaintiff" / "test.jsonl", [
        {"text": "a", "answer": "Ann Lee, Bo Chan"}, {"text": "b", "answer": "Cy Dee"},
    ])  # fmt: skip
    _jsonl(tmp_path / "sara_numeric" / "test.jsonl", [
        {"statute": "s", "description": "d", "question": "q", "answer": "$100"},
    ])  # fmt: skip
    bench = get_benchmark("legalbench")
    items = bench.load(tmp_path)
    by_id = {it.item_id: it for it in items}
    replies = {
        "hearsay:0": "",  # unextractable: no label read, so class Yes has recall 0
        "hearsay:1": "Answer: No",
        "rule_qa:0": "Answer: r",
        "ssla_plaintiff:0": "Answer: Ann Lee",  # tp 1, fn 1
        "ssla_plaintiff:1": "",  # unextractable: an empty answer's counts, tp 0, fp 1, fn 1
        "sara_numeric:0": "Answer: $100",
    }
    grades = [bench.grade(by_id[k], r) for k, r in replies.items()]
    agg = bench.aggregate([by_id[k] for k in replies], grades)
    assert math.isnan(agg.pop("manual/rule_qa"))
    expected = {
        "balanced_accuracy/hearsay": 0.5,  # recalls 0 (Yes) and 1 (No)
        "f1/ssla_plaintiff": 0.4,  # tp 1, fp 0 + 1, fn 1 + 1: 2 * 1 / (2 + 1 + 2)
        "accuracy/sara_numeric": 1.0,
        "mean": (0.5 + 0.4 + 1.0) / 3,
        "mean_graded": (0.5 + 0.4 + 1.0) / 3,  # every scored task's items were graded
        "exact_match": 2 / 6,  # hearsay:1 and sara right; the manual item counts wrong
        "exact_match_graded": 2 / 5,  # of the five graded items
        "ungraded": 1.0,  # the manual item
    }
    assert agg == pytest.approx(expected, abs=1e-12)
    # only unreadable entity replies: an empty answer's counts, F1 0 (not a division by zero)
    only = [by_id["ssla_plaintiff:1"]]
    assert bench.aggregate(only, [bench.grade(only[0], "")])["f1/ssla_plaintiff"] == 0.0
    # only manual items: no task score; the item counts wrong, and nothing is graded
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        manual = bench.aggregate([by_id["rule_qa:0"]], [bench.grade(by_id["rule_qa:0"], "x")])
    assert math.isnan(manual["mean"]) and math.isnan(manual["mean_graded"])
    assert manual["exact_match"] == 0.0 and math.isnan(manual["exact_match_graded"])
    assert manual["ungraded"] == 1.0


def test_ungraded_items_count_wrong_in_every_task_score(tmp_path: Path) -> None:
    """A grader-side failure (NaN) is a wrong item in every figure, under each task's metric:
    an empty label for balanced accuracy, an empty answer's counts for F1, a 0 for accuracy;
    the ``_graded`` figures leave it out (a task with nothing graded leaves ``mean_graded``)."""
    _jsonl(tmp_path / "hearsay" / "test.jsonl", [
        {"text": "a", "answer": "Yes"}, {"text": "b", "answer": "No"},
    ])  # fmt: skip
    _jsonl(tmp_path / "ssla_plaintiff" / "test.jsonl", [
        {"text": "a", "answer": "Ann Lee, Bo Chan"}, {"text": "b", "answer": "Cy Dee"},
    ])  # fmt: skip
    _jsonl(tmp_path / "sara_numeric" / "test.jsonl", [
        {"statute": "s", "description": "d", "question": "q", "answer": "$100"},
    ])  # fmt: skip
    bench = get_benchmark("legalbench")
    by_id = {it.item_id: it for it in bench.load(tmp_path)}
    lost = Grade(math.nan, "grader_error", details={"error": "RuntimeError()"})
    grades = {
        "hearsay:0": lost,
        "hearsay:1": bench.grade(by_id["hearsay:1"], "Answer: No"),
        "ssla_plaintiff:0": lost,  # as an empty answer: tp 0, fp 2, fn 2
        "ssla_plaintiff:1": bench.grade(by_id["ssla_plaintiff:1"], "Answer: Cy Dee"),
        "sara_numeric:0": lost,
    }
    agg = bench.aggregate([by_id[k] for k in grades], list(grades.values()))
    assert agg == pytest.approx(
        {
            "balanced_accuracy/hearsay": 0.5,  # recalls 0 (Yes: nothing read) and 1 (No)
            "f1/ssla_plaintiff": 1 / 3,  # tp 1, fp 2, fn 2: 2 / (2 + 2 + 2)
            "accuracy/sara_numeric": 0.0,
            "mean": (0.5 + 1 / 3 + 0.0) / 3,
            "mean_graded": (1.0 + 1.0) / 2,  # hearsay:1 and ssla:1 alone; sara has none
            "exact_match": 2 / 5,
            "exact_match_graded": 1.0,
            "ungraded": 3.0,
        },
        abs=1e-12,
    )


def test_f1_when_misses_or_extras_balance_the_hits(tmp_path: Path) -> None:
    rows = [{"text": "a", "answer": "Ann Lee, Bo Chan, Cy Dee"}, {"text": "b", "answer": "Ann Lee"}]
    bench, (three, one) = _task_items(tmp_path, "ssla_plaintiff", rows)
    # tp 1, fp 0, fn 2 (fn = 2 tp + fp): F1 = 2 / 4
    g = bench.grade(three, "Answer: Ann Lee")
    assert (g.details["tp"], g.details["fp"], g.details["fn"], g.score) == (1, 0, 2, 0.5)
    # tp 1, fp 2, fn 0 (fp = 2 tp + fn): F1 = 2 / 4
    g = bench.grade(one, "Answer: Ann Lee, Xi Yu, Zoe Park")
    assert (g.details["tp"], g.details["fp"], g.details["fn"], g.score) == (1, 2, 0, 0.5)
    assert bench.aggregate([three, one], [bench.grade(three, "Answer: Ann Lee"), g]) == {
        "f1/ssla_plaintiff": 0.5,  # summed tp 2, fp 2, fn 2: 2 * 2 / (4 + 2 + 2)
        "mean": 0.5,
        "mean_graded": 0.5,
        "exact_match": 0.0,
        "exact_match_graded": 0.0,
        "ungraded": 0.0,
    }


def test_answer_lines_and_first_lines_lose_their_markup() -> None:
    assert extract_answer("**Fanciful**\nmore") == "Fanciful"
    assert extract_answer("  “Generic”  ") == "Generic"
    # an Answer: line with nothing but markup after it is skipped
    assert extract_answer("Yes\nAnswer: **") == "Yes"
    assert extract_answer("Answer: No\nFinal answer: `Yes`") == "Yes"
    assert extract_answer(" \n\t\n") == ""
    assert extract_answer(None) == ""


def test_stemming_without_nltk_names_the_missing_package(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "nltk.stem.porter", None)  # import raises ImportError
    with pytest.raises(
        ImportError,
        match=r"^legalbench definition_extraction needs nltk \(pip install nltk\)$",
    ):
        normalize("Vessels", stem=True)
    assert normalize("Vessels!") == "vessels"
