"""Probe reply parsing: Yes/No verdicts and numeric confidences."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.parsing import ProbeParse, parse_confidence, parse_yes_no


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Answer: Yes", 1.0),
        ("Answer: No", 0.0),
        ("answer: yes.", 1.0),
        ("I know this field well.\nAnswer: Yes", 1.0),
        ("**Answer:** **No**", 0.0),
        ("**Answer: Yes**", 1.0),
        ("Answer: 'No'", 0.0),
        ('Answer: "Yes".', 1.0),
        ("Yes", 1.0),
        ("No.", 0.0),
        ("yes!", 1.0),
        ("The passage is obscure, so I doubt it.\n\nNo", 0.0),
        ("Final answer - no", 0.0),
        ("My answer is yes.", 1.0),
        ("## Verdict: NO", 0.0),
        # Both words present: the final verdict line wins.
        ("At first I thought yes, but no: the formula is obscure.\nAnswer: No", 0.0),
        ("Answer: No\nOn reflection I do remember it.\nAnswer: Yes", 1.0),
        # A template echo in the rationale does not count; the verdict below it does.
        ('I must answer "Answer: Yes" or "Answer: No".\nAnswer: Yes', 1.0),
        ("Rationale: it is a standard fact.\nFinal line:\n> Answer: Yes", 1.0),
        ("I'd say I would get this right — yes", 1.0),
    ],
)
def test_yes_no_verdicts(text: str, expected: float) -> None:
    parsed = parse_yes_no(text)
    assert parsed.status == "ok", parsed
    assert parsed.confidence == expected
    assert parsed.matched


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        (None, "empty"),
        ("I cannot answer that without more information.", "refusal"),
        ("As an AI, I don't know how I will perform.", "refusal"),
        ("Answer: Yes or No", "unparseable"),
        (
            "It depends on the details of the problem statement and on my reading of it.",
            "unparseable",
        ),
        ("Answer: maybe", "unparseable"),
        ("Yes or no? Hard to say; both are plausible here.", "unparseable"),
    ],
)
def test_yes_no_no_verdict_is_nan(text: str | None, status: str) -> None:
    parsed = parse_yes_no(text)
    assert parsed.status == status
    assert math.isnan(parsed.confidence)  # never a silent "no"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Confidence: 80", 0.8),
        ("I know this well.\nConfidence: 95", 0.95),
        ("**Confidence:** 70%", 0.7),
        ("Confidence: 0.65", 0.65),
        ("confidence = 1.0", 1.0),
        ("Confidence: 1", 0.01),
        ("About 60 percent.", 0.6),
        ("8/10", 0.8),
        ("Confidence: 45/100", 0.45),
        ("My confidence is 0", 0.0),
        ("It has 3 steps and 2 traps.\nConfidence: 30", 0.3),
        ("I'd put it at 75", 0.75),
        ("Confidence: 82,5 %", 0.825),
    ],
)
def test_confidence_values(text: str, expected: float) -> None:
    parsed = parse_confidence(text)
    assert parsed.status == "ok", parsed
    assert parsed.confidence == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("", "empty"),
        ("I cannot estimate that.", "refusal"),
        ("Pretty sure.", "unparseable"),
        ("Confidence: 250", "unparseable"),
    ],
)
def test_confidence_no_verdict(text: str, status: str) -> None:
    parsed = parse_confidence(text)
    assert parsed.status == status
    assert math.isnan(parsed.confidence)


def test_probe_parse_is_a_result() -> None:
    parsed = parse_yes_no("Answer: Yes")
    assert isinstance(parsed, ProbeParse)
    assert parsed.ok
    assert parsed.to_dict() == {"confidence": 1.0, "status": "ok", "matched": "Answer: Yes"}
    assert parse_yes_no("??").to_dict()["confidence"] is None


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    for parser in (parse_yes_no, parse_confidence):
        parsed = parser(text)
        assert parsed.status in {"ok", "unparseable", "refusal", "empty"}
        if parsed.status == "ok":
            assert 0.0 <= parsed.confidence <= 1.0
        else:
            assert math.isnan(parsed.confidence)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("yesnoYESNO:*\n .!Answer'\"")), max_size=80))
def test_yes_no_never_raises_on_verdict_like_text(text: str) -> None:
    parsed = parse_yes_no(text)
    assert parsed.status in {"ok", "unparseable", "refusal", "empty"}


# --- rules pinned one at a time (each test fails when its rule changes) ---------------------


@pytest.mark.parametrize(
    "text",
    [
        "I cannot answer that, so no.",
        "Let me think.\nI cannot answer that, so no.",
        "I can't predict that. No.",
        "As an AI I have no memory of my own accuracy, so no.",
    ],
)
def test_refusal_containing_no_is_not_a_no(text: str) -> None:
    parsed = parse_yes_no(text)
    assert parsed.status == "refusal"
    assert math.isnan(parsed.confidence)


@pytest.mark.parametrize(
    "text", ["No idea.", "Hard to say.\nNo clue", "Answer: no idea", "I honestly have no idea"]
)
def test_no_idea_is_a_refusal_not_a_no(text: str) -> None:
    parsed = parse_yes_no(text)
    assert parsed.status == "refusal" and math.isnan(parsed.confidence)


def test_no_verdict_at_the_start_of_a_refusal_line_still_counts() -> None:
    # "No, I cannot ..." is the verdict "no" followed by the reason, not a refusal.
    assert parse_yes_no("No, I cannot answer this correctly.").confidence == 0.0


# 12 words in all, "Yes" on the first line and no verdict word on the last one.
_TWELVE_WORDS = "Yes, I have seen this before.\nIt has one small twist, sadly."
_THIRTEEN_WORDS = "Yes, I have seen this before.\nIt has one small twist, sadly, too."


def test_short_reply_with_one_verdict_word_is_read() -> None:
    assert len(_TWELVE_WORDS.split()) == 12
    parsed = parse_yes_no(_TWELVE_WORDS)
    assert (parsed.status, parsed.confidence) == ("ok", 1.0)


def test_long_reply_containing_yes_is_not_a_yes() -> None:
    assert len(_THIRTEEN_WORDS.split()) == 13
    parsed = parse_yes_no(_THIRTEEN_WORDS)
    assert parsed.status == "unparseable" and math.isnan(parsed.confidence)
    long = (
        "Yes, this kind of integral appears in textbooks.\n"
        "However the boundary terms here are unusual and I would probably slip on them."
    )
    assert math.isnan(parse_yes_no(long).confidence)


def test_last_line_with_one_verdict_word_wins_over_length() -> None:
    # Any length: the last line holding exactly one of the words is the verdict.
    text = "I reviewed the problem at length and checked the formulas twice.\nSo: yes, I can."
    assert parse_yes_no(text).confidence == 1.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Confidence: 100", 1.0),
        ("Confidence: 100%", 1.0),
        ("Confidence: 10/10", 1.0),
        ("Confidence: 0", 0.0),
        ("Confidence: 1.0", 1.0),
        ("Confidence: 0.0", 0.0),
        ("Confidence: 99.5", 0.995),
    ],
)
def test_confidence_at_the_bounds_is_read(text: str, expected: float) -> None:
    parsed = parse_confidence(text)
    assert parsed.status == "ok" and parsed.confidence == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "text",
    [
        "Confidence: 150",
        "Confidence: 101",
        "Confidence: 100.5",
        "Confidence: 150%",
        "Confidence: 11/10",
        "Confidence: -5",
        "150",
    ],
)
def test_confidence_beyond_the_bounds_is_no_verdict(text: str) -> None:
    # "Confidence: 150" is not 1.5 nor 1.0 (clipped): it is no verdict at all.
    parsed = parse_confidence(text)
    assert parsed.status == "unparseable" and math.isnan(parsed.confidence)
