"""Probe reply parsing: Yes/No verdicts and numeric confidences."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.parsing import ProbeParse, parse_confidence, parse_yes_no
from tests.strategies import letterless_text


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


@settings(max_examples=200, deadline=None)
@given(letterless_text())
def test_text_without_letters_is_never_a_verdict(text: str) -> None:
    # Any text without a letter (digits, punctuation, symbols, emoji, line breaks) spells no
    # "yes", "no", label or refusal: no verdict, NaN, "empty" when nothing but space.
    parsed = parse_yes_no(text)
    assert parsed.status in {"unparseable", "empty"} and math.isnan(parsed.confidence), text
    if not text.strip():
        assert parsed.status == "empty"
    # without digits there is no number either
    digitless = "".join(ch for ch in text if not ch.isdigit())
    parsed = parse_confidence(digitless)
    assert parsed.status in {"unparseable", "empty"} and math.isnan(parsed.confidence), digitless


@settings(max_examples=200, deadline=None)
@given(
    letterless_text(),
    st.sampled_from(["Yes", "No", "yes", "NO"]),
    letterless_text(),
)
def test_labelled_verdict_is_read_through_any_letterless_text(before, word, after) -> None:
    text = f"{before}\nAnswer: {word}\n{after}"
    parsed = parse_yes_no(text)
    assert (parsed.status, parsed.confidence) == ("ok", float(word.lower() == "yes")), text


@settings(max_examples=200, deadline=None)
@given(
    letterless_text(),
    st.integers(0, 100),
    st.sampled_from(["Confidence: {k}", "Confidence: {k}%", "**Confidence:** {k} / 100"]),
    letterless_text(exclude="0123456789/"),
)
def test_labelled_confidence_is_read_through_any_letterless_text(before, k, form, after) -> None:
    # Numbers before the label do not count; text after it (no digits, no "/") changes nothing.
    text = f"{before}\n{form.format(k=k)}\n{after}"
    parsed = parse_confidence(text)
    assert parsed.status == "ok" and parsed.confidence == pytest.approx(k / 100), text


# --- structured property tests: the inputs carry a known verdict --------------------------

#: Rationale words without yes/no or a refusal phrase.
_WORDS = st.sampled_from(
    [
        "the",
        "formula",
        "is",
        "standard",
        "and",
        "I",
        "recall",
        "it",
        "well",
        "but",
        "this",
        "step",
        "looks",
        "hard",
        "maybe",
        "fine",
        "integral",
        "proof",
        "passage",
        "statute",
        "answerable",
        "case",
        "known",
        "obscure",
    ]
)
_RATIONALE = st.lists(
    st.lists(_WORDS, min_size=1, max_size=12).map(" ".join), min_size=0, max_size=4
)
_VERDICT_LINES = [
    "Answer: {w}",
    "**Answer:** {w}",
    "Answer: **{w}**",
    "Final answer - {w}",
    "My answer is {w}.",
    "## Verdict: {w}",
    "> Answer: '{w}'",
    'Answer: "{w}".',
]
_CASES = {"yes": ["Yes", "yes", "YES"], "no": ["No", "no", "NO"]}


@st.composite
def _verdict_reply(draw):
    word = draw(st.sampled_from(["yes", "no"]))
    spelled = draw(st.sampled_from(_CASES[word]))
    line = draw(st.sampled_from(_VERDICT_LINES)).format(w=spelled)
    lines = draw(_RATIONALE)
    if draw(st.booleans()):  # an earlier, opposite verdict the final one overrides
        other = "no" if word == "yes" else "yes"
        lines = [*lines, f"Answer: {other.capitalize()}", *draw(_RATIONALE)]
    if draw(st.booleans()):  # the template echoed in the rationale
        lines = ['I must reply "Answer: Yes" or "Answer: No".', *lines]
    return "\n".join([*lines, line]), 1.0 if word == "yes" else 0.0


@settings(max_examples=300, deadline=None)
@given(_verdict_reply())
def test_last_labelled_verdict_wins_in_any_context(case) -> None:
    text, expected = case
    parsed = parse_yes_no(text)
    assert (parsed.status, parsed.confidence) == ("ok", expected), text


_REFUSALS = st.sampled_from(
    [
        "I cannot answer that",
        "I can't predict that",
        "I am unable to assess my own accuracy",
        "As an AI, I cannot tell",
        "I don't know",
        "I must decline",
        "There is no way to know",
    ]
)


@settings(max_examples=200, deadline=None)
@given(_REFUSALS, st.sampled_from(["", ".", ", so no.", ". No.", " - no", "; no"]), _RATIONALE)
def test_refusals_with_a_stray_no_are_never_a_verdict(refusal, tail, before) -> None:
    text = "\n".join([*before, refusal + tail])
    parsed = parse_yes_no(text)
    assert parsed.status == "refusal" and math.isnan(parsed.confidence), text


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 100), st.sampled_from(["Confidence: {k}", "Confidence: {k}%", "{k} percent"]))
def test_confidence_integers_in_range_are_percent(k, form) -> None:
    parsed = parse_confidence(form.format(k=k))
    assert parsed.status == "ok" and parsed.confidence == pytest.approx(k / 100)


@settings(max_examples=200, deadline=None)
@given(st.integers(101, 10**6), st.sampled_from(["Confidence: {k}", "Confidence: {k}%", "{k}"]))
def test_confidence_integers_above_100_are_no_verdict(k, form) -> None:
    parsed = parse_confidence(form.format(k=k))
    assert parsed.status == "unparseable" and math.isnan(parsed.confidence)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 100))
def test_confidence_decimals_in_unit_interval_are_read_as_is(k) -> None:
    text = f"Confidence: {k / 100:.2f}"
    assert parse_confidence(text).confidence == pytest.approx(k / 100)


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


# --- rules found by mutation testing (tools/mutation.py) ----------------------------------


def test_labelled_verdict_beats_a_leading_word_on_the_last_line() -> None:
    assert parse_yes_no("Answer: No\nYes, I know the topic, but not this.").confidence == 0.0


def test_labelled_confidence_beats_a_number_on_the_last_line() -> None:
    parsed = parse_confidence("Confidence: 70\nI might slip on step 3.")
    assert parsed.confidence == pytest.approx(0.7) and parsed.matched == "Confidence: 70"
    parsed = parse_confidence("It has 3 steps.\nI'd say 75%")
    assert parsed.confidence == pytest.approx(0.75) and parsed.matched == "75%"


def test_none_is_empty_for_both_parsers() -> None:
    assert parse_confidence(None).status == "empty"
    assert parse_yes_no(None).status == "empty"


def test_refusal_reports_the_refusing_phrase() -> None:
    assert parse_yes_no("Sorry, I cannot answer that.").matched == "I cannot answer"
    assert parse_confidence("I don't know.").matched == "I don't know"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Confidence: 0.5%", 0.005),  # a unit makes a decimal a percentage
        ("Confidence: 0.5 percent", 0.005),
        ("Confidence: 0.5 out of 100", 0.005),
        ("Confidence: 0.5/100", 0.005),
        ("8 out of 10", 0.8),
        ("Confidence: 0.8/10", 0.08),
        ("Confidence: 0,8", 0.8),  # decimal comma: a 0-1 value
        ("Confidence: 1.5", 0.015),  # a decimal above 1 is on the 0-100 scale
        ("Confidence: 80 PERCENT", 0.8),
    ],
)
def test_confidence_units_and_decimals(text: str, expected: float) -> None:
    parsed = parse_confidence(text)
    assert parsed.status == "ok" and parsed.confidence == pytest.approx(expected, abs=1e-12)


def test_label_and_number_may_sit_on_consecutive_lines() -> None:
    # the label's value on the next line is still the labelled value, not the last number
    assert parse_confidence("Confidence:\n80\nStep 3 is hard.").confidence == pytest.approx(0.8)
