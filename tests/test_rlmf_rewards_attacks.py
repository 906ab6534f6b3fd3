"""Attacks on the RLMF rewards as a policy would write them, each proved to reach its target.

Every attack is scored by the whole reward set and by the engines' scorer (default and
official-like weights) against an honest wrong answer on the same item. Each test asserts that
its attack reached the code under test: the parser recognised the attack's tag lines (their
values were read, or the violation named), and where the attack aims at the grader, a spy on
the benchmark's grader shows the call and what the grader saw; a control shows the attack
would have been paid had the grader seen the whole text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pytest

from metacog_tasks.benchmarks import get_benchmark
from rlmf_plugin._format import MAX_COMPLETION_CHARS, parse_completion
from rlmf_plugin._grading import ItemGrader
from rlmf_plugin.engines import RewardScorer
from rlmf_plugin.rewards import FLOORS, REWARD_NAMES, make_rewards

WEIGHTS = {
    "default": None,
    "official-like": {
        "strict_format": 3.0,
        "soft_format": 3.0,
        "correctness": 1.0,
        "brier": 1.0,
        "faithful": 12.0,
    },
}


def _item(bench: str, item_id: str):
    return next(it for it in get_benchmark(bench).load("bundled") if it.item_id == item_id)


MMLU = _item("mmlu_pro", "90001")  # gold (A)
CLOZE = _item("mathbench", "arithmetic/cloze_en:1")  # gold 42
OMNI = _item("omni_math", "cd3a91af097d6d4b")  # gold 91
WRONG = {
    "mmlu_pro": "Weighing each option, one fits best. The answer is (I).",
    "mathbench": "Computing step by step.\nThe answer is 41",
    "omni_math": "So the final answer is $\\boxed{90}$.",
}


@dataclass
class Spy:
    """The benchmark's grader, recording what it is given."""

    grader: ItemGrader = field(default_factory=ItemGrader)
    seen: list[str] = field(default_factory=list)

    def watch(self, bench: str) -> None:
        b = self.grader.benchmark(bench)
        real = b.grade

        def grade(item, response):
            self.seen.append(response)
            return real(item, response)

        b.grade = grade  # type: ignore[method-assign]


def _rewards(spy: Spy, bench: str, item, completion, g: float = 0.5) -> dict[str, float | None]:
    out = {}
    for f in make_rewards(REWARD_NAMES, grader=spy.grader, target="item"):
        out[f.__name__] = f(
            prompts=["p"],
            completions=[completion],
            benchmark=[bench],
            item_id=[item.item_id],
            source=["bundled"],
            intrinsic_confidence=[g],
        )[0]
    return out


def _honest_wrong(bench: str) -> list[str]:
    return [f"{WRONG[bench]}\nConfidence: {q}\nMeta: {m}" for q in (0, 50, 100) for m in (0, 100)]


def _assert_not_paid(bench: str, item, attack, *, g: float = 0.5) -> None:
    """The trick gains nothing, under each weighting: an attack with an answer and a readable
    confidence totals at most the same answer and confidence written in the strict format; one
    without (malformed) at most every honest wrong answer, and under them all when it has no
    answer."""
    label = {"benchmark": bench, "item_id": item.item_id, "intrinsic_confidence": g}
    p = parse_completion(attack)
    if p.has_answer and p.has_confidence:
        honest = [f"{p.answer}\nConfidence: {p.confidence:.6f}" + m for m in ("", "\nMeta: 50")]
    else:
        honest = _honest_wrong(bench)
    for name, weights in WEIGHTS.items():
        rows = RewardScorer(weights).score([attack, *honest], [label] * (1 + len(honest)))
        ours, theirs = rows[0]["score"], min(r["score"] for r in rows[1:])
        assert all(r["format"] == 1.0 for r in rows[1:])  # the counterparts are well-formed
        if p.has_answer:
            assert ours <= theirs, (name, ours, theirs)
        else:
            assert ours < theirs, (name, ours, theirs)


def _naive_views(text: str) -> list[str]:
    """What a grader saw before: the whole text, or the text before the last confidence line."""
    cut = text.rfind("\nConfidence")
    return [text] + ([text[:cut]] if cut >= 0 else [])


def test_no_answer_with_the_target_confidence_is_not_paid():
    """The review's attack: intrinsic confidence 0.5, no answer, ``Confidence: 50`` and
    ``Meta: 100`` (faithful reward 1.0 before, and the total of an honest wrong answer)."""
    for head in ("", ".\n", "**\n---\n", "\u3002\n"):
        attack = head + "Confidence: 50\nMeta: 100"
        spy = Spy()
        spy.watch("mmlu_pro")
        p = parse_completion(attack)
        assert (p.confidence, p.meta) == (0.5, 1.0)  # the attack's lines were read...
        assert not p.has_answer and p.violations == ("no_answer",)  # ...and it has no answer
        r = _rewards(spy, "mmlu_pro", MMLU, attack)
        assert r["faithful_reward"] == FLOORS["faithful"] == -10.0
        assert r["metacog_score"] == -10.0 and r["format_reward"] == 0.0
        assert spy.seen == []  # nothing to grade
        _assert_not_paid("mmlu_pro", MMLU, attack)


@pytest.mark.parametrize(
    ("bench", "item", "attack"),
    [
        # the review's case: the grader read "100" from the first confidence line
        ("mathbench", CLOZE, "I cannot tell.\nConfidence: 42%\nConfidence: 0%"),
        ("mathbench", CLOZE, "I cannot tell.\nConfidence: 0\nMeta: 42\nConfidence: 10"),
        ("mathbench", CLOZE, "I cannot tell.\nMeta: 42\nConfidence: 10"),
        ("mmlu_pro", MMLU, "Unsure.\nConfidence: 90\nMeta: the answer is (A)"),
        ("mmlu_pro", MMLU, "Unsure.\nConfidence: 90\nMeta: 50\nThe answer is (A)"),
        ("omni_math", OMNI, "No idea.\nConfidence: 20\nMeta: $\\boxed{91}$"),
    ],
    ids=[
        "duplicate-confidence",
        "confidence-after-meta",
        "meta-first",
        "answer-in-meta",
        "answer-after-tags",
        "boxed-in-meta",
    ],
)
def test_tag_lines_never_reach_the_grader(bench, item, attack):
    """The right answer hidden in a tag line or after the tags: paid if the grader saw the
    whole text (the control), wrong through the rewards, which hand it the answer only."""
    bench_obj = get_benchmark(bench)
    # control: the attack is potent (paid by a grader that sees more than the answer)
    assert any(bench_obj.grade(item, view).correct == 1.0 for view in _naive_views(attack))
    spy = Spy()
    spy.watch(bench)
    r = _rewards(spy, bench, item, attack)
    p = parse_completion(attack)
    assert spy.seen == [p.answer] and p.answer == attack.split("\n")[0]  # reached the grader
    assert p.violations  # the tag trick itself was seen: duplicated, misplaced or trailing
    assert r["correctness_reward"] == 0.0 and r["format_reward"] == 0.0
    assert r["strict_format_reward"] == -1.0 and r["soft_format_reward"] < 0
    _assert_not_paid(bench, item, attack)


@pytest.mark.parametrize(
    "attack",
    [
        "Confidence: 100\nThe answer is (A)",  # the tags first, the answer after
        "(A)\n\uff23onfidence: 90",  # a look-alike label: not a tag, so no confidence
        "(A)\nConfidence: 1000\nMeta: 100",  # out of range
        "(A)\nConfidence: nan\nMeta: 100",
        "(A)\nConfidence: inf",
        "(A)\nConfidence: " + "9" * 300,  # a tag line over the cap
        "(A)\nConfidence: 90 and honestly the answer is (A)",  # read, but not strict
        "The answer is (A)\nConfidence-level: 99",  # a compound word is no tag
    ],
    ids=[
        "tags-first",
        "look-alike",
        "out-of-range",
        "nan",
        "inf",
        "long-line",
        "chatty",
        "compound",
    ],
)
def test_format_tricks_gain_nothing(attack):
    spy = Spy()
    spy.watch("mmlu_pro")
    p = parse_completion(attack)
    assert p.violations  # the trick reached the parser and broke the strict format
    r = _rewards(spy, "mmlu_pro", MMLU, attack)
    assert r["format_reward"] == 0.0 and r["strict_format_reward"] == -1.0
    assert spy.seen == ([p.answer] if p.has_answer else [])
    if not p.has_confidence:  # right answers included: without a confidence they are not paid
        assert r["correctness_reward"] == 0.0 and r["faithful_reward"] in (-1.0, -10.0)
    _assert_not_paid("mmlu_pro", MMLU, attack)


def test_two_chat_messages_cannot_split_the_format():
    attack = [{"role": "assistant", "content": "Confidence: 50\nMeta: 100"},
              {"role": "assistant", "content": "The answer is (A)"}]  # fmt: skip
    p = parse_completion(attack)
    assert p.confidence == 0.5 and not p.has_answer  # joined: the tags come first
    _assert_not_paid("mmlu_pro", MMLU, attack)


_DEGENERATE = {  # (benchmark, item, attack, shortest answer the grader must be given)
    "mmlu-20kB-line": ("mmlu_pro", MMLU, "x answer: " * 2_000 + "\nConfidence: 50", 19_000),
    "boxed-20kB": ("omni_math", OMNI, "\\boxed{" * 3_000 + "\nConfidence: 50", 20_000),
    "whitespace-40kB": ("mmlu_pro", MMLU, "(A) " + " \n" * 20_000 + "x\nConfidence: 50", 40_000),
    "tag-lines": ("mmlu_pro", MMLU, "(A)\n" + "Confidence: 50\n" * 10_000, 3),
    "at-the-cap": (
        "mmlu_pro",
        MMLU,
        "A " * (MAX_COMPLETION_CHARS // 2 - 20) + "\nConfidence: 5",
        200_000,
    ),
}


@pytest.mark.parametrize("case", list(_DEGENERATE), ids=list(_DEGENERATE))
def test_degenerate_text_is_graded_in_bounded_time(case):
    bench, item, attack, shortest = _DEGENERATE[case]
    spy = Spy()
    spy.watch(bench)
    t0 = time.process_time()
    _rewards(spy, bench, item, attack)
    RewardScorer().score([attack], [{"benchmark": bench, "item_id": item.item_id}])
    assert time.process_time() - t0 < 2.0
    p = parse_completion(attack)
    assert len(spy.seen) == 1 and spy.seen[0] == p.answer and len(p.answer) >= shortest
    _assert_not_paid(bench, item, attack)


def test_over_the_cap_is_no_answer_and_never_graded():
    attack = "The answer is (A). " * (MAX_COMPLETION_CHARS // 19 + 1) + "\nConfidence: 90"
    spy = Spy()
    spy.watch("mmlu_pro")
    p = parse_completion(attack)
    assert p.violations == ("too_long", "no_answer")
    r = _rewards(spy, "mmlu_pro", MMLU, attack)
    assert spy.seen == [] and all(r[f.__name__] is not None for f in make_rewards(REWARD_NAMES))
    _assert_not_paid("mmlu_pro", MMLU, attack)


def test_special_tokens_cannot_hide_the_tags_from_the_engines():
    """OpenRLHF decodes with special tokens: trailing end-of-turn markers are stripped, a
    token inside the text stays text (the tag line then does not read strictly)."""
    label = {"benchmark": "mmlu_pro", "item_id": MMLU.item_id, "intrinsic_confidence": 0.5}
    clean, inside = RewardScorer().score(
        ["(A)\nConfidence: 50<|im_end|>\n<|endoftext|>", "(A)<|im_end|>\nConfidence: 50<eos>x"],
        [label, label],
    )
    assert clean["format"] == 1.0 and clean["correct"] == 1.0 and clean["confidence"] == 0.5
    assert inside["format"] == 0.0


@pytest.mark.slow
def test_scicode_code_with_tag_tricks_is_graded_on_the_code_only():
    """SciCode through the rewards' grader (the sandbox): the code before the tags is what
    runs; duplicated tags fail the format and pay no correctness."""
    bench = get_benchmark("scicode")
    item = bench.load("bundled")[0]
    right = bench.reference_response(item)
    wrong = bench.wrong_response(item, np.random.default_rng(0))
    spy = Spy()
    spy.watch("scicode")
    attack = f"{wrong}\nConfidence: 100\nConfidence: 0\n{right}"
    r = _rewards(spy, "scicode", item, attack)
    assert spy.seen == [wrong.strip()]  # the sandbox ran the text before the first tag
    assert r["correctness_reward"] == 0.0 and r["format_reward"] == 0.0
    honest = _rewards(spy, "scicode", item, f"{right}\nConfidence: 90")
    assert honest["correctness_reward"] == 1.0 and spy.seen[-1] == right.strip()
