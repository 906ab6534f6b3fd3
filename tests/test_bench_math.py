"""Omni-MATH (math-verify on the last boxed answer, judge hook) and MathBench (CE-4)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.benchmarks import DataFormatError, DataUnavailableError, get_benchmark
from metacog_tasks.benchmarks._math import (
    VerifyOutcome,
    last_boxed,
    parse_number,
    too_large,
    verify_latex,
)
from metacog_tasks.benchmarks.mathbench import extract_cloze, extract_option, rotate
from metacog_tasks.benchmarks.omni_math import omni_math_id
from tests.strategies import letterless_text

# ---------------------------------------------------------------- Omni-MATH


def test_last_boxed_balances_braces() -> None:
    assert last_boxed(r"so \boxed{1} then \boxed{\frac{1}{2}}.") == r"\frac{1}{2}"
    assert last_boxed(r"\boxed{a{b}c} and \boxed{broken") == "a{b}c"
    assert last_boxed("no box") is None
    assert last_boxed(r"\fbox{7}") == "7"


@pytest.mark.parametrize(
    ("gold", "answer", "verdict"),
    [
        (r"\frac{1}{4}", "0.25", True),
        (r"2\sqrt{2} - 2", r"-2+2\sqrt2", True),
        (r"33^{\circ}", "33", True),
        ("n^{2}+n+1", "n^2+n+1", True),
        ("$\\frac{1}{5}$", "1/5", True),
        ("258", "259", False),
        (r"\frac{2}{e}", r"\frac{e}{2}", False),
    ],
)
def test_math_verify_wrapping(gold: str, answer: str, verdict: bool) -> None:
    out = verify_latex(gold, answer)
    assert out.status == "ok" and out.verdict is verdict


def test_math_verify_works_off_the_main_thread() -> None:
    box = {}
    t = threading.Thread(target=lambda: box.update(out=verify_latex(r"\frac{1}{4}", "0.25")))
    t.start()
    t.join()
    assert box["out"].verdict is True


@pytest.mark.parametrize(
    "answer",
    [r"9^{9^{9^{9}}}", r"9^{9^9}", r"2^{10^{6}}", r"{10}^{ {10}^{6} }", r"100000!"],
)
def test_power_towers_never_reach_sympy(answer: str) -> None:
    """SymPy evaluates integer powers eagerly in C code that holds the GIL: a worker thread's
    timeout cannot stop it, so such an answer froze the caller for hours. It is refused first."""
    box: dict = {}
    t = threading.Thread(target=lambda: box.update(out=verify_latex("7", answer)))
    t.start()
    t.join(20)
    assert not t.is_alive()
    assert box["out"].verdict is None and box["out"].status == "too_large"
    assert "digits" in box["out"].detail


@pytest.mark.parametrize(
    ("text", "large"),
    [
        (r"2^{2^{4}}", False),  # 65,536
        (r"2^{2^{2^{2^{2}}}}", False),  # 2^65536: 19,729 digits
        (r"2^{332000}", False),  # 99,943 digits
        (r"2^{333000}", True),  # 100,244 digits
        (r"1^{10^{100}}", False),
        (r"25000!", False),
        (r"25001!", True),
        (r"x^{10^{9}}", False),  # symbolic: nothing is evaluated
        (r"10^{2^{20}}", True),  # the top of the chain is its last number: 10^1,048,576
        (r"10^{1^{9}}", False),  # 1^9 = 1: 10
        (r"10^{10^{10^{1^{2}}}}", True),  # a 1 inside the chain does not end it: 10^(10^10)
        (r"\left(10\right)^{10^{6}}", True),  # \left and \right are grouping too
    ],
)
def test_too_large_boundary(text: str, large: bool) -> None:
    assert (too_large(text) is not None) is large


def test_a_small_tower_still_verifies() -> None:
    assert verify_latex("65536", r"2^{2^{4}}").verdict is True
    out = verify_latex(r"9^{9^{9}}", "1")
    assert out.status == "gold_unparseable" and out.verdict is None


def test_omni_math_real_sample(benchmarks_dir: Path) -> None:
    bench = get_benchmark("omni_math")
    items = bench.load(benchmarks_dir / "omni_math" / "omni_math_rule_sample.jsonl")
    assert len(items) == 201
    assert len({it.item_id for it in items}) == 201
    assert any(it.meta["domain"] == [] for it in items)  # the empty-domain edge case
    rng = np.random.default_rng(0)
    for item in items:
        assert item.item_id == omni_math_id(item.record["problem"], item.record["answer"])
        assert bench.grade(item, bench.reference_response(item)).correct == 1.0
        assert bench.grade(item, bench.wrong_response(item, rng)).correct == 0.0


def test_omni_math_pack_and_ids() -> None:
    bench = get_benchmark("omni_math")
    items = bench.load("bundled")
    assert 8 <= len(items) <= 20
    again = bench.load("bundled")
    assert [i.item_id for i in items] == [i.item_id for i in again]
    assert all(len(i.item_id) == 16 for i in items)
    assert r"\boxed{}" in bench.solve_prompt(items[0])
    rng = np.random.default_rng(3)
    for item in items:
        assert bench.grade(item, bench.reference_response(item)).correct == 1.0
        assert bench.grade(item, bench.wrong_response(item, rng)).correct == 0.0


def test_omni_math_unextractable_and_judge() -> None:
    item = get_benchmark("omni_math").load("bundled")[0]  # gold 91
    plain = get_benchmark("omni_math")
    g = plain.grade(item, "The answer is 91.")  # no box: rules cannot settle
    assert g.correct == 0.0 and g.status == "unextractable"
    calls = []

    def judge(it, response, extracted):
        calls.append((it.item_id, extracted))
        return "91" in response

    judged = get_benchmark("omni_math", judge=judge)
    g = judged.grade(item, "The answer is 91.")
    assert g.correct == 1.0 and g.status == "judged" and g.details["rule_status"] == "unextractable"
    # Settled by rules: the judge is not asked.
    assert judged.grade(item, r"\boxed{90}").correct == 0.0 and len(calls) == 1
    wrong_too = get_benchmark("omni_math", judge=judge, judge_on="wrong")
    assert wrong_too.grade(item, r"\boxed{90}, i.e. 91").correct == 1.0
    abstain = get_benchmark("omni_math", judge=lambda *a: None)
    assert abstain.grade(item, "91").status == "unextractable"
    with pytest.raises(TypeError):
        get_benchmark("omni_math", judge="gpt")


# ---------------------------------------------------------------- MathBench


def test_rotation_remaps_the_gold() -> None:
    opts = ["w", "x", "y", "z"]
    assert rotate(opts, "B", "ABCD") == (opts, "B")
    assert rotate(opts, "B", "BCDA") == (["x", "y", "z", "w"], "A")
    assert rotate(opts, "B", "CDAB") == (["y", "z", "w", "x"], "D")
    assert rotate(opts, "B", "DABC") == (["z", "w", "x", "y"], "C")


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("Therefore, the correct answer is option C", "C"),
        ("The answer is (B).", "B"),
        ("所以答案为选项D", "D"),
        ("答案是 A", "A"),
        ("Answer: B", "B"),
        ("I would go with option A.", "A"),
        ("I think D", "D"),
        ("nothing", None),
    ],
)
def test_option_extraction(text: str, letter: str | None) -> None:
    assert extract_option(text)[0] == letter


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("3 apples and 4 pears. The answer is 1,001 in total, not 7.", "1001"),
        ("所以答案是42。", "42"),
        (r"so \boxed{0.9}", "0.9"),
        ("first 12 then 15", "15"),
        ("no digits", None),
    ],
)
def test_cloze_extraction(text: str, answer: str | None) -> None:
    assert extract_cloze(text)[0] == answer


def test_mathbench_ce4_grading() -> None:
    bench = get_benchmark("mathbench")
    items = bench.load("bundled")
    kinds = {(it.kind, it.meta["language"]) for it in items}
    assert kinds == {
        ("cloze", "en"),
        ("cloze", "cn"),
        ("single_choice", "en"),
        ("single_choice", "cn"),
    }
    choice = next(it for it in items if it.kind == "single_choice")
    assert choice.item_id == "college/single_choice_en:0"
    prompts = bench.solve_prompts(choice)
    assert len(prompts) == 4 and len(set(prompts)) == 4
    refs = [bench.reference_response(choice, i) for i in range(4)]
    assert bench.grade_responses(choice, refs).correct == 1.0
    # Three of four rotations right is not solved under CE-4.
    rng = np.random.default_rng(0)
    mixed = [*refs[:3], bench.wrong_response(choice, rng, 3)]
    g = bench.grade_responses(choice, mixed)
    assert g.correct == 0.0 and g.score == 0.75
    # Always answering "A" is right only in the rotation where the gold sits at A.
    always_a = bench.grade_responses(choice, ["The answer is A"] * 4)
    assert always_a.score == 0.25 and always_a.correct == 0.0
    with pytest.raises(ValueError, match="expected 4"):
        bench.grade_responses(choice, refs[:1])
    cloze = next(it for it in items if it.kind == "cloze")
    assert len(bench.solve_prompts(cloze)) == 1


def test_mathbench_aggregate_figures() -> None:
    bench = get_benchmark("mathbench")
    items = bench.load("bundled")
    rng = np.random.default_rng(0)
    grades = []
    for k, item in enumerate(items):
        n = len(bench.solve_prompts(item))
        if item.kind == "single_choice" and k % 2 == 0:
            # right in the unrotated prompt only
            replies = [bench.reference_response(item, 0)] + [
                bench.wrong_response(item, rng, i) for i in range(1, n)
            ]
        else:
            replies = [bench.reference_response(item, i) for i in range(n)]
        grades.append(bench.grade_responses(item, replies))
    agg = bench.aggregate(items, grades)
    choice = [(it, g) for it, g in zip(items, grades) if it.kind == "single_choice"]
    half = sum(1 for k, it in enumerate(items) if it.kind == "single_choice" and k % 2 == 0)
    assert agg["acc_1"] == 1.0
    assert agg["perf_4"] == pytest.approx(1 - half / len(choice))
    assert agg["acc_4"] == pytest.approx(1 - 0.75 * half / len(choice))
    assert agg["cloze_accuracy"] == 1.0
    assert agg["MathBench-T"] == pytest.approx(
        np.mean(
            [
                agg[f"score/{s}"]
                for s in (
                    "primary_knowledge",
                    "middle_knowledge",
                    "high_knowledge",
                    "college_knowledge",
                )
            ]
        )
    )
    assert agg["overall"] == pytest.approx((agg["MathBench-A"] + agg["MathBench-T"]) / 2)


def test_mathbench_options_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(
        it.meta["language"] == "en"
        for it in get_benchmark("mathbench", languages=["en"]).load("bundled")
    )
    single = get_benchmark("mathbench", circular=False)
    choice = next(it for it in single.load("bundled") if it.kind == "single_choice")
    assert len(single.solve_prompts(choice)) == 1
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MATHBENCH_DIR", raising=False)
    with pytest.raises(DataUnavailableError, match="mathbench_v1"):
        get_benchmark("mathbench").load(None)
    folder = tmp_path / "mathbench_v1" / "high"
    folder.mkdir(parents=True)
    (folder / "single_choice_en.jsonl").write_text(
        json.dumps({"question": "q", "options": ["1", "2", "3"], "answer": "A"}) + "\n"
    )
    with pytest.raises(DataFormatError, match="3 options"):
        get_benchmark("mathbench").load(None)  # finds ./mathbench_v1
    # $MATHBENCH_DIR comes first: a valid folder there wins over the broken ./mathbench_v1
    elsewhere = tmp_path / "elsewhere" / "high"
    elsewhere.mkdir(parents=True)
    (elsewhere / "single_choice_en.jsonl").write_text(
        json.dumps({"question": "q", "options": ["1", "2", "3", "4"], "answer": "B"}) + "\n"
    )
    monkeypatch.setenv("MATHBENCH_DIR", str(tmp_path / "elsewhere"))
    items = get_benchmark("mathbench", circular=False).load(None)
    assert [(it.question, it.target) for it in items] == [("q", "B")]
    # a MATHBENCH_DIR that does not exist is skipped (./mathbench_v1 is read again)
    monkeypatch.setenv("MATHBENCH_DIR", str(tmp_path / "missing"))
    with pytest.raises(DataFormatError, match="3 options"):
        get_benchmark("mathbench").load(None)


@settings(max_examples=200, deadline=None)
@given(letterless_text(exclude="0123456789"))
def test_text_without_letters_or_digits_has_no_answer(text: str) -> None:
    # no letter: no \boxed, no "answer is", no option; no digit: no number
    assert last_boxed(text) is None
    assert extract_option(text) == (None, "none")
    digitless = "".join(ch for ch in text if not ch.isdigit())
    assert extract_cloze(digitless) == (None, "none")
    assert parse_number(digitless) is None


@settings(max_examples=200, deadline=None)
@given(letterless_text(), st.integers(-(10**6), 10**6), letterless_text())
def test_boxed_answer_is_read_through_any_letterless_text(before, n, after) -> None:
    # braces, dollars and backslashes in the text around the box do not confuse it
    text = f"{before} \\boxed{{{n}}} {after}"
    assert last_boxed(text) == str(n), text
    assert extract_cloze(text) == (str(n), "boxed"), text


@settings(max_examples=200, deadline=None)
@given(letterless_text(), st.sampled_from(list("ABCD")), letterless_text())
def test_option_answer_is_read_through_any_letterless_text(before, x, after) -> None:
    text = f"{before} the answer is ({x}) {after}"
    assert extract_option(text) == (x, "answer_is"), text


# --- structured property tests: boxed answers and numbers with known values ---------------

_PROSE = st.lists(
    st.sampled_from(
        ["so", "we", "get", "the", "sum", "then", "simplify", "and", "check", "it", "3", "x", "y"]
    ),
    max_size=20,
).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(_PROSE, st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6), _PROSE)
def test_last_boxed_integer_is_the_answer(before, first, last, after) -> None:
    text = f"{before} \\boxed{{{first}}} {after} so $\\boxed{{{last}}}$."
    assert last_boxed(text) == str(last)
    assert parse_number(last_boxed(text)) == last
    assert extract_cloze(text) == (str(last), "boxed")


@settings(max_examples=200, deadline=None)
@given(st.integers(-999, 999), st.integers(1, 999), _PROSE)
def test_nested_braces_in_a_box(num, den, after) -> None:
    text = f"the value is \\boxed{{\\frac{{{num}}}{{{den}}}}} {after}"
    assert last_boxed(text) == f"\\frac{{{num}}}{{{den}}}"
    assert parse_number(last_boxed(text)) == pytest.approx(num / den)


def test_unbalanced_last_box_falls_back_to_the_earlier_one() -> None:
    assert last_boxed("\\boxed{12} then \\boxed{3") == "12"
    assert last_boxed("\\boxed{") is None


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**9), 10**9))
def test_numbers_with_thousands_separators(n) -> None:
    assert parse_number(f"{n:,}") == n
    assert parse_number(f"${n}$") == n
    assert extract_cloze(f"The answer is {n:,} apples, not 3")[0] == str(n)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 100))
def test_percent_bounds(k) -> None:
    assert parse_number(f"{k}%") == pytest.approx(k / 100)
    assert parse_number(f"{k}\\%") == pytest.approx(k / 100)


@settings(max_examples=200, deadline=None)
@given(_PROSE, st.sampled_from(list("ABCD")), st.sampled_from(list("ABCD")))
def test_option_answer_is_last_match(prose, first, last) -> None:
    text = f"{prose} the answer is ({first}) {prose} so the answer is {last}"
    assert extract_option(text) == (last, "answer_is")


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


def test_parse_number_forms() -> None:
    cases = {
        "3/4": 0.75,
        "-6/4": -1.5,
        "1.5/0.5": 3.0,
        ".5": 0.5,
        "12.": 12.0,
        "$-7$": -7.0,
        "12\\text{ cm}": 12.0,
        "3\\mathrm{kg}": 3.0,
        "1\\,000": 1000.0,
        "1\\!000": 1000.0,
        "1 000": 1000.0,
        "25\\%": 0.25,
        "\\dfrac{3}{4}": 0.75,
    }
    for text, value in cases.items():
        assert parse_number(text) == pytest.approx(value), text
    for text in ("3/0", "\\frac{3}{0}", "abc", "", None):
        assert parse_number(text) is None, text


def test_wrap_leaves_delimited_latex_alone() -> None:
    from metacog_tasks.benchmarks._math import _wrap

    assert _wrap(" \\boxed{2} ") == "\\boxed{2}"
    assert _wrap("$x+1$") == "$x+1$"
    assert _wrap(" x+1 ") == "$x+1$"
    assert _wrap("$x") == "$$x$"  # one dollar is not a delimiter pair
    assert _wrap("x$") == "$x$$"


def test_verify_outcomes_and_the_calls_to_math_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    import math_verify

    from metacog_tasks.benchmarks._math import _warm_up

    _warm_up()  # once a process, untimed: first in a fresh worker it would be recorded below
    calls: list[tuple[str, dict]] = []
    real_parse, real_verify = math_verify.parse, math_verify.verify

    def parse(text, **kw):
        calls.append(("parse", kw))
        return real_parse(text, **kw)

    def verify(gold, pred, **kw):
        calls.append(("verify", kw))
        return real_verify(gold, pred, **kw)

    monkeypatch.setattr(math_verify, "parse", parse)
    monkeypatch.setattr(math_verify, "verify", verify)
    assert verify_latex("\\frac{1}{2}", "0.5", timeout_s=7) == VerifyOutcome(True, "ok")
    assert calls == [
        ("parse", {"parsing_timeout": 7, "raise_on_error": True}),
        ("parse", {"parsing_timeout": 7, "raise_on_error": True}),
        ("verify", {"timeout_seconds": 7, "raise_on_error": True}),
    ]
    assert verify_latex("2", "3") == VerifyOutcome(False, "ok")
    assert verify_latex("", "2") == VerifyOutcome(None, "gold_unparseable", "")
    assert verify_latex("2", "") == VerifyOutcome(None, "answer_unparseable", "")
    # in a worker thread: no SIGALRM timeouts inside math-verify (None), the thread is joined
    calls.clear()
    box = {}
    worker = threading.Thread(target=lambda: box.update(out=verify_latex("2", "2", timeout_s=7)))
    worker.start()
    worker.join()
    assert box["out"] == VerifyOutcome(True, "ok")
    assert calls[0] == ("parse", {"parsing_timeout": None, "raise_on_error": True})


def test_verify_errors_and_timeouts_are_outcomes(monkeypatch: pytest.MonkeyPatch) -> None:
    import math_verify
    from math_verify.errors import TimeoutException

    def boom(*a, **k):
        raise ValueError("x" * 300)

    monkeypatch.setattr(math_verify, "verify", boom)
    out = verify_latex("2", "2")
    assert (out.verdict, out.status) == (None, "error")
    assert out.detail == ("ValueError: " + "x" * 300)[:200]

    def slow(*a, **k):
        raise TimeoutException("slow")

    monkeypatch.setattr(math_verify, "verify", slow)
    assert verify_latex("2", "2") == VerifyOutcome(None, "timeout")


def test_a_stuck_verify_in_a_thread_times_out_on_a_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import metacog_tasks.benchmarks._math as mod

    release = threading.Event()

    def stuck(gold, answer, timeout_s, step_done=None):
        release.wait(10)
        return VerifyOutcome(True, "ok")

    monkeypatch.setattr(mod, "_verify_now", stuck)
    box = {}
    started = time.monotonic()
    t = threading.Thread(target=lambda: box.update(out=verify_latex("2", "2", timeout_s=0.05)))
    t.start()
    t.join(5)
    assert box["out"] == VerifyOutcome(None, "timeout")
    assert time.monotonic() - started < 5
    helper = [th for th in threading.enumerate() if th.name == "metacog-math-verify"]
    assert helper and all(th.daemon for th in helper)  # abandoned, never blocks the exit
    release.set()


def _mb_folder(root: Path, files: dict[str, list[dict]]) -> Path:
    """A mathbench_v1 folder of <stage>/<name>.jsonl files."""
    for rel, rows in files.items():
        path = root / "mathbench_v1" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return root


_CHOICE = {"question": " 2 + 2 = ? ", "options": ["3", "4", "5", "6"], "answer": "B", "topic": "t"}
_CLOZE = {"question": "1 + 1 = ?", "answer": "2"}


def test_mathbench_items_files_and_filters(tmp_path: Path) -> None:
    root = _mb_folder(
        tmp_path,
        {
            "high/single_choice_en.jsonl": [_CHOICE],
            "high/cloze_cn.jsonl": [_CLOZE],
            "high_knowledge/cloze_en.jsonl": [_CLOZE, _CLOZE],
            "high/notes.jsonl": [{"x": 1}],  # not a MathBench file name: skipped
        },
    )
    items = get_benchmark("mathbench").load(root)  # the folder above mathbench_v1 works too
    assert [it.item_id for it in items] == [
        "high/cloze_cn:0", "high/single_choice_en:0",
        "high_knowledge/cloze_en:0", "high_knowledge/cloze_en:1",
    ]  # fmt: skip
    choice = items[1]
    assert (choice.benchmark, choice.question, choice.target, choice.kind) == (
        "mathbench", "2 + 2 = ?", "B", "single_choice",
    )  # fmt: skip
    assert choice.meta == {"stage": "high", "name": "single_choice_en", "language": "en",
                           "part": "A", "topic": "t", "options": ["3", "4", "5", "6"]}  # fmt: skip
    assert "__file__" not in choice.record
    assert items[0].meta["language"] == "cn" and items[0].kind == "cloze"
    assert items[2].meta["part"] == "T" and items[2].meta["topic"] is None
    en = get_benchmark("mathbench", languages=["en"]).load(root)
    assert [it.item_id for it in en] == [
        "high/single_choice_en:0", "high_knowledge/cloze_en:0", "high_knowledge/cloze_en:1",
    ]  # fmt: skip
    staged = get_benchmark("mathbench", stages=["high_knowledge"]).load(root)
    assert {it.meta["stage"] for it in staged} == {"high_knowledge"}
    one_file = get_benchmark("mathbench").load(root / "mathbench_v1" / "high" / "cloze_cn.jsonl")
    assert [it.item_id for it in one_file] == ["high/cloze_cn:0"]
    with pytest.raises(ValueError, match=r"^mathbench: unknown language\(s\) \['fr'\]; use"):
        get_benchmark("mathbench", languages=["en", "fr"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(
        DataUnavailableError, match=f"^mathbench: no <stage>/<name>.jsonl files under {empty}$"
    ):
        get_benchmark("mathbench").load(empty)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({**_CHOICE, "answer": "E"}, "answer 'E' is not A-D"),
        ({**_CHOICE, "answer": "AB"}, "answer 'AB' is not A-D"),
        ({**_CHOICE, "options": ["1", "2", "3", "4", "5"]}, "has 5 options, not 4"),
    ],
)
def test_mathbench_bad_choice_rows(tmp_path: Path, row: dict, message: str) -> None:
    root = _mb_folder(tmp_path, {"high/single_choice_en.jsonl": [row]})
    path = root / "mathbench_v1" / "high" / "single_choice_en.jsonl"
    with pytest.raises(DataFormatError, match=f"^mathbench: {path} row 0 {message}$"):
        get_benchmark("mathbench").load(root)


def test_mathbench_missing_options_names_the_fields(tmp_path: Path) -> None:
    row = {k: v for k, v in _CHOICE.items() if k != "options"}
    root = _mb_folder(
        tmp_path, {"high/single_choice_en.jsonl": [row], "high/cloze_en.jsonl": [row]}
    )
    with pytest.raises(
        DataFormatError, match=r"single_choice_en.jsonl row 0 lacks field\(s\) \['options'\]"
    ):
        get_benchmark("mathbench").load(root)
    # a cloze row needs no options
    assert (
        len(get_benchmark("mathbench").load(root / "mathbench_v1" / "high" / "cloze_en.jsonl")) == 1
    )


def test_mathbench_hub_lookup_order_and_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MATHBENCH_DIR", raising=False)
    with pytest.raises(DataUnavailableError) as info:
        get_benchmark("mathbench").load(None)
    assert str(info.value) == (
        "mathbench: MathBench has no Hugging Face dataset; it is distributed only as the "
        "release archive mathbench_v1.zip (OpenCompass id opencompass/mathbench). Unzip it "
        "and pass the folder: get_benchmark('mathbench').load('path/to/mathbench_v1'), or "
        "set MATHBENCH_DIR; load('bundled') gives the mini pack."
    )
    _mb_folder(tmp_path / "data", {"high/cloze_en.jsonl": [_CLOZE]})
    assert [it.item_id for it in get_benchmark("mathbench").load(None)] == ["high/cloze_en:0"]


def test_mathbench_prompts_exactly(tmp_path: Path) -> None:
    root = _mb_folder(
        tmp_path,
        {
            "high/single_choice_en.jsonl": [_CHOICE],
            "high/single_choice_cn.jsonl": [_CHOICE],
            "high/cloze_en.jsonl": [_CLOZE],
            "high/cloze_cn.jsonl": [_CLOZE],
        },
    )
    bench = get_benchmark("mathbench")
    by_name = {it.meta["name"]: it for it in bench.load(root)}
    en = bench.solve_prompts(by_name["single_choice_en"])
    assert en[1] == (
        "Here is a single-choice question about mathematics. Reason step by step, then end "
        'with "Therefore, the correct answer is option X", where X is one of A, B, C, D.\n\n'
        "Question: 2 + 2 = ?\nA. 4\nB. 5\nC. 6\nD. 3"
    )  # rotation BCDA
    assert bench.solve_prompt(by_name["single_choice_en"]) == en[0]
    assert bench.solve_prompts(by_name["single_choice_cn"])[0].startswith(
        "以下是一道关于数学的单项选择题"
    )
    assert bench.solve_prompts(by_name["cloze_en"]) == [
        '1 + 1 = ?\n\nPlease reason step by step, and end with "The answer is N", where N is '
        "your final answer."
    ]
    assert bench.solve_prompts(by_name["cloze_cn"]) == [
        "1 + 1 = ?\n\n请一步一步推理，并在最后用“答案是N”的形式给出最终答案。"
    ]
    single = get_benchmark("mathbench", circular=False)
    assert len(single.solve_prompts(by_name["single_choice_en"])) == 1


def test_mathbench_grade_single_response(tmp_path: Path) -> None:
    root = _mb_folder(tmp_path, {"high/single_choice_en.jsonl": [_CHOICE],
                                 "high/cloze_en.jsonl": [_CLOZE]})  # fmt: skip
    bench = get_benchmark("mathbench")
    choice, cloze = sorted(bench.load(root), key=lambda it: it.kind)[::-1]
    g = bench.grade(choice, "Therefore, the correct answer is option B")
    assert (g.correct, g.status, g.extracted, g.score) == (1.0, "ok", "B", 1.0)
    assert g.details == {"rotations": [{"pattern": "ABCD", "gold": "B", "extracted": "B",
                                        "rule": "answer_is", "correct": 1.0}]}  # fmt: skip
    bad = bench.grade(choice, "no idea")
    assert (bad.correct, bad.status, bad.extracted) == (0.0, "unextractable", None)
    c = bench.grade(cloze, "so 1 + 1 gives 2, not 3. The answer is 2")
    assert (c.correct, c.status, c.extracted) == (1.0, "ok", "2")
    assert c.details["rotations"] == [{"pattern": "", "gold": "2", "extracted": "2",
                                       "rule": "answer_is", "correct": 1.0}]  # fmt: skip
    assert bench.grade(cloze, "nothing").status == "unextractable"
    # CE-4: one unextractable rotation makes the item unextractable
    refs = [bench.reference_response(choice, i) for i in range(4)]
    g4 = bench.grade_responses(choice, [*refs[:3], "no idea"])
    assert (g4.correct, g4.status, g4.score, g4.extracted) == (0.0, "unextractable", 0.75, "B")
    with pytest.raises(
        ValueError,
        match=r"^mathbench item high/single_choice_en:0: expected 4 solve responses, got 2$",
    ):
        bench.grade_responses(choice, refs[:2])


@pytest.mark.parametrize(
    ("gold", "pred", "same"),
    [
        ("1000", "1,000", True),
        ("0.5", "1/2", True),
        ("2", "2.000001", True),
        ("2", "2.00001", False),
        ("1000000", "1000000.9", True),  # relative tolerance 1e-6 of the gold
        ("1000000", "1000002", False),
        ("0", "0.0000009", True),
        ("0", "0.000002", False),
        ("x + 1", " X+1 。", True),
        ("\\pi", "$\\pi$.", True),
        ("a.b", "ab", False),
        ("\\pi", "\\tau", False),
        ("3", "x", False),
    ],
)
def test_mathbench_cloze_answers_match(gold: str, pred: str, same: bool) -> None:
    from metacog_tasks.benchmarks.mathbench import _same_answer

    assert _same_answer(gold, pred) is same


def test_mathbench_wrong_cloze_answers(tmp_path: Path) -> None:
    rows = [{"question": "q", "answer": "12"}, {"question": "q", "answer": "2.5"},
            {"question": "q", "answer": "\\sqrt{2}"}]  # fmt: skip
    root = _mb_folder(tmp_path, {"high/cloze_en.jsonl": rows})
    bench = get_benchmark("mathbench")
    rng = np.random.default_rng(3)
    whole, decimal, symbolic = bench.load(root)
    for _ in range(5):
        w = bench.grade(whole, bench.wrong_response(whole, rng))
        assert w.correct == 0.0 and w.extracted in {str(12 + d) for d in range(1, 10)}
        f = bench.grade(decimal, bench.wrong_response(decimal, rng))
        assert f.correct == 0.0 and f.extracted in {f"{2.5 + d:g}" for d in range(1, 10)}
    assert bench.wrong_response(symbolic, rng).endswith("The answer is -1")
    assert bench.reference_response(whole) == (
        "Computing step by step and checking the result.\nThe answer is 12"
    )


def test_mathbench_aggregate_by_hand(tmp_path: Path) -> None:
    from metacog_tasks.benchmarks.base import Grade

    root = _mb_folder(
        tmp_path,
        {
            "high/single_choice_en.jsonl": [_CHOICE, _CHOICE],
            "high/cloze_en.jsonl": [_CLOZE, _CLOZE],
            "high_knowledge/cloze_en.jsonl": [_CLOZE],
        },
    )
    bench = get_benchmark("mathbench")
    items = bench.load(root)  # cloze x2, choice x2 (high); cloze (high_knowledge)
    kinds = [it.kind for it in items]
    assert kinds == ["cloze", "cloze", "single_choice", "single_choice", "cloze"]

    def choice_grade(rot):  # rotations right/wrong
        rs = [{"correct": v} for v in rot]
        return Grade(float(all(rot)), "ok", "A", score=float(np.mean(rot)),
                     details={"rotations": rs})  # fmt: skip

    grades = [Grade(1.0), Grade(0.0), choice_grade([1, 1, 1, 1]), choice_grade([1, 0, 1, 1]),
              Grade(1.0)]  # fmt: skip
    agg = bench.aggregate(items, grades)
    # files: high/cloze_en 0.5, high/single_choice_en perf_4 = 0.5 -> high 0.5; knowledge 1.0
    assert agg == {
        "acc_1": 1.0, "acc_4": 7 / 8, "perf_4": 0.5, "cloze_accuracy": 2 / 3,
        "score/high": 0.5, "score/high_knowledge": 1.0,
        "MathBench-A": 0.5, "MathBench-T": 1.0, "overall": 0.75,
        # all graded: the graded-only twins are the same figures
        "acc_1_graded": 1.0, "acc_4_graded": 7 / 8, "perf_4_graded": 0.5,
        "cloze_accuracy_graded": 2 / 3, "MathBench-A_graded": 0.5, "MathBench-T_graded": 1.0,
        "overall_graded": 0.75, "ungraded": 0.0,
    }  # fmt: skip
    # an ungraded item counts wrong in each rotation (a choice) or as a wrong cloze answer
    lost = Grade(float("nan"), "grader_error")
    agg = bench.aggregate(items, [Grade(1.0), lost, choice_grade([1, 1, 1, 1]), lost, lost])
    assert agg == {
        "acc_1": 0.5, "acc_4": 0.5, "perf_4": 0.5, "cloze_accuracy": 1 / 3,
        # files: high/cloze_en 0.5, high/single_choice_en 0.5 -> high 0.5; knowledge 0.0
        "score/high": 0.5, "score/high_knowledge": 0.0,
        "MathBench-A": 0.5, "MathBench-T": 0.0, "overall": 0.25,
        # graded only: the first cloze and the first choice; no knowledge item is left
        "acc_1_graded": 1.0, "acc_4_graded": 1.0, "perf_4_graded": 1.0,
        "cloze_accuracy_graded": 1.0, "MathBench-A_graded": 1.0,
        "MathBench-T_graded": pytest.approx(float("nan"), nan_ok=True),
        "overall_graded": 1.0, "ungraded": 3.0,
    }  # fmt: skip
    # not circular: acc_4 undefined, a file scores acc_1, perf_4 has no item
    flat = get_benchmark("mathbench", circular=False).aggregate(items, grades)
    assert np.isnan(flat["acc_4"]) and np.isnan(flat["perf_4"])
    assert flat["score/high"] == pytest.approx((0.5 + 1.0) / 2)
    with pytest.raises(ValueError, match=r"^mathbench: 5 items but 4 grades$"):
        bench.aggregate(items, grades[:4])
    # only knowledge stages: MathBench-A is undefined and overall is T alone
    only_t = bench.aggregate(items[4:], grades[4:])
    assert np.isnan(only_t["MathBench-A"]) and only_t["overall"] == 1.0
    assert np.isnan(only_t["acc_1"]) and np.isnan(only_t["perf_4"])


# --- Omni-MATH: found by mutation testing ---------------------------------------------------

_OMNI = {
    "domain": "Mathematics -> Algebra",
    "difficulty": 3.0,
    "problem": "  Find x if 2x = 14.  ",
    "solution": "x = 7",
    "answer": " $7$ ",
    "source": "imo",
}


def test_omni_math_items_and_ids(tmp_path: Path) -> None:
    import hashlib

    (tmp_path / "omni_test.jsonl").write_text(json.dumps(_OMNI) + "\n")
    bare = {"problem": "p", "answer": "1"}
    (tmp_path / "omni_other.jsonl").write_text(json.dumps(bare) + "\n")
    bench = get_benchmark("omni_math")
    (item,) = bench.load(tmp_path, split="test")  # only *test* files
    digest = hashlib.sha256(b"Find x if 2x = 14.\x1f$7$").hexdigest()[:16]
    assert item.item_id == digest == omni_math_id(_OMNI["problem"], _OMNI["answer"])
    assert (item.benchmark, item.question, item.target, item.kind) == (
        "omni_math", "Find x if 2x = 14.", "$7$", "boxed_answer",
    )  # fmt: skip
    assert item.meta == {"difficulty": 3.0, "domain": ["Mathematics -> Algebra"], "source": "imo"}
    assert "__file__" not in item.record
    other = next(it for it in bench.load(tmp_path) if it.question == "p")
    assert other.meta == {"difficulty": None, "domain": [], "source": ""}
    assert bench.solve_prompt(item) == (
        "Find x if 2x = 14.\n\nPlease reason step by step, and put your final answer within "
        "\\boxed{}."
    )
    assert bench.reference_response(item) == (
        "Let me work through the problem step by step and check the result.\n"
        "So the final answer is $\\boxed{7}$."
    )


def test_omni_math_hub_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    import metacog_tasks.benchmarks.omni_math as mod

    seen = []

    def fake(name, path, *, split, fields, local_hint):
        seen.append((name, path, split, fields, local_hint))
        return [_OMNI]

    monkeypatch.setattr(mod, "load_hf", fake)
    (item,) = get_benchmark("omni_math").load(None)
    assert item.target == "$7$"
    assert seen == [("omni_math", "KbsdJames/Omni-MATH", "test", ("problem", "answer"),
                     "a JSON/JSONL file of Omni-MATH rows (domain, difficulty, problem, "
                     "solution, answer, source), e.g. omni_math_rule.jsonl")]  # fmt: skip
    monkeypatch.setattr(mod, "load_hf", lambda *a, **k: [{"problem": "p"}])
    with pytest.raises(DataFormatError, match=r"^omni_math: KbsdJames/Omni-MATH test row 0 lacks"):
        get_benchmark("omni_math").load(None)


def test_omni_math_grade_details_and_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    import metacog_tasks.benchmarks.omni_math as mod

    item = get_benchmark("omni_math").load("bundled")[0]  # gold 91
    bench = get_benchmark("omni_math", verify_timeout_s=3)
    seen = []
    real = mod.verify_latex

    def spy(gold, answer, *, timeout_s):
        seen.append(timeout_s)
        return real(gold, answer, timeout_s=timeout_s)

    monkeypatch.setattr(mod, "verify_latex", spy)
    right = bench.grade(item, "so \\boxed{91}")
    assert (right.correct, right.status, right.extracted) == (1.0, "ok", "91")
    assert right.details == {"rule": "math_verify"} and seen == [3]
    none = bench.grade(item, "91")
    assert (none.status, none.extracted, none.details) == ("unextractable", None,
                                                          {"rule": "no_boxed"})  # fmt: skip
    monkeypatch.setattr(mod, "verify_latex", lambda *a, **k: VerifyOutcome(None, "timeout", "t"))
    slow = bench.grade(item, "\\boxed{91}")
    assert (slow.correct, slow.status, slow.extracted) == (0.0, "timeout", "91")
    assert slow.details == {"rule": "math_verify", "detail": "t"}


def test_omni_math_judge_rules() -> None:
    item = get_benchmark("omni_math").load("bundled")[0]  # gold 91
    with pytest.raises(TypeError, match=r"^omni_math: judge must be callable or None$"):
        get_benchmark("omni_math", judge="gpt")
    with pytest.raises(
        ValueError, match=r"^omni_math: judge_on must be 'unsettled' or 'wrong', not 'all'$"
    ):
        get_benchmark("omni_math", judge_on="all")
    scored = get_benchmark("omni_math", judge=lambda it, r, x: 0.5)
    g = scored.grade(item, "no box here")
    assert (g.correct, g.status, g.score, g.extracted) == (1.0, "judged", 0.5, None)
    assert g.details == {"rule": "no_boxed", "rule_status": "unextractable", "rule_correct": 0.0}
    low = get_benchmark("omni_math", judge=lambda it, r, x: 0.49).grade(item, "no box")
    assert (low.correct, low.score) == (0.0, 0.49)
    # rules say right: the judge is never asked, even with judge_on="wrong"
    asked = []
    wrong_too = get_benchmark(
        "omni_math", judge=lambda *a: asked.append(a) or 0.0, judge_on="wrong"
    )
    assert wrong_too.grade(item, "\\boxed{91}").correct == 1.0 and not asked
    assert wrong_too.grade(item, "\\boxed{90}").status == "judged" and len(asked) == 1
    bad = get_benchmark("omni_math", judge=lambda *a: 1.5)
    with pytest.raises(ValueError, match=rf"^omni_math item {item.item_id}: judge returned 1.5$"):
        bad.grade(item, "no box")


def test_omni_math_wrong_responses(monkeypatch: pytest.MonkeyPatch) -> None:
    import metacog_tasks.benchmarks.omni_math as mod

    bench = get_benchmark("omni_math", judge=lambda *a: 1.0)  # a judge that says right
    items = {it.target: it for it in bench.load("bundled")}
    item = items["91"]
    rng = np.random.default_rng(2)
    for _ in range(4):
        text = bench.wrong_response(item, rng)
        boxed = last_boxed(text)
        assert boxed in {str(91 + d) for d in range(1, 10)}, text
        assert text.startswith("Let me work through the problem step by step")
    assert bench.judge is not None  # restored after the rules-only check
    decimal = dataclasses_replace(item, target="2.5")
    assert last_boxed(bench.wrong_response(decimal, rng)) in {f"{2.5 + d:g}" for d in range(1, 10)}
    symbolic = dataclasses_replace(item, target="\\sqrt{2}")
    assert last_boxed(bench.wrong_response(symbolic, rng)) in {
        f"\\sqrt{{2}}+{d}" for d in range(1, 10)
    }
    # when every candidate grades right the reply says so instead of lying
    monkeypatch.setattr(mod, "verify_latex", lambda *a, **k: VerifyOutcome(True, "ok"))
    assert bench.wrong_response(item, rng) == (
        "I could not finish the derivation; my best guess is \\boxed{\\text{none}}."
    )


def test_omni_math_aggregate_by_hand() -> None:
    from metacog_tasks.benchmarks.base import Grade

    bench = get_benchmark("omni_math")
    base = bench.load("bundled")[0]
    items = [dataclasses_replace(base, meta={**base.meta, "difficulty": d})
             for d in (1.0, 2.0, 3.0, 7.5, "hard", None)]  # fmt: skip
    grades = [Grade(1.0), Grade(0.0, "unextractable"), Grade(1.0, "judged"), Grade(0.0),
              Grade(1.0), Grade(float("nan"), "error")]  # fmt: skip
    assert bench.aggregate(items, grades) == {
        "accuracy": 3 / 6,  # the ungraded item counts wrong
        "accuracy_graded": 3 / 5,
        "ungraded": 1.0,
        "unsettled": 2.0,
        "accuracy/difficulty_0-2.5": 0.5,
        "accuracy/difficulty_2.5-5": 1.0,
        "accuracy/difficulty_7.5-10": 0.0,
    }
    # an ungraded item in a band counts wrong there too
    lost = Grade(float("nan"), "error")
    banded = bench.aggregate(items[:2], [grades[0], lost])
    assert banded["accuracy/difficulty_0-2.5"] == 0.5 and banded["accuracy_graded"] == 1.0
    empty = bench.aggregate(items[-1:], grades[-1:])
    assert empty["accuracy"] == 0.0 and np.isnan(empty["accuracy_graded"])
    assert empty["ungraded"] == 1.0 and empty["unsettled"] == 1.0
    with pytest.raises(ValueError, match=r"^omni_math: 6 items but 5 grades$"):
        bench.aggregate(items, grades[:5])


def dataclasses_replace(item, **changes):
    import dataclasses

    return dataclasses.replace(item, **changes)


def test_the_first_verification_of_a_process_is_not_timed_against_the_grader() -> None:
    """math-verify's first parse builds its grammar (seconds on a busy machine): it happens once,
    untimed, before the first timed step, so a 1 s timeout still grades the first item."""
    code = (
        "from metacog_tasks.benchmarks import _math\n"
        "out = _math.verify_latex('\\\\frac{1}{2}', '0.5', timeout_s=1)\n"
        "assert _math._warm_up.cache_info().misses == 1\n"
        "print(out.status, out.verdict)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok", "True"]
