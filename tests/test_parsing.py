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
