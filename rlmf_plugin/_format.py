"""The completion format RLMF trains: an answer, then ``Confidence: N`` and ``Meta: M`` (0-100).

The confidence is read with the probes' parser (:func:`metacog_tasks.parsing.parse_confidence`)
from the last line labelled ``Confidence``; the answer is everything before that line, so the
benchmark's grader never sees the confidence number.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from metacog_tasks.parsing import confidence_in_unit as _to_unit
from metacog_tasks.parsing import parse_confidence

__all__ = ["FORMAT_INSTRUCTION", "ParsedCompletion", "completion_text", "parse_completion"]

#: Appended to every solve prompt of the GRPO dataset.
FORMAT_INSTRUCTION = (
    '\n\nAfter your answer, add a line "Confidence: C", where C (0 to 100) is how confident you '
    'are that your answer is correct, then a line "Meta: M", where M (0 to 100) is how '
    "confident you are that the confidence you stated matches your true internal confidence."
)

_CONF_LINE = re.compile(r"^[ \t*_`>#]*confidence\b[^\n]*$", re.IGNORECASE | re.MULTILINE)
_META_LINE = re.compile(r"^[ \t*_`>#]*meta(?:[ -]?score)?\b[^\n]*$", re.IGNORECASE | re.MULTILINE)
_META_VALUE = re.compile(r"meta(?:[ -]?score)?\s*[:=]?\s*", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class ParsedCompletion:
    """A completion split into its answer, stated confidence and meta-judgement.

    Attributes:
        answer: The text before the ``Confidence`` line (the whole text when there is none).
        confidence: Stated confidence in [0, 1], NaN when absent or unparseable.
        meta: Self-judged faithfulness of the confidence in [0, 1], NaN when absent.
    """

    answer: str
    confidence: float
    meta: float

    @property
    def has_confidence(self) -> bool:
        """Whether a confidence was stated and parsed."""
        return not math.isnan(self.confidence)


def completion_text(completion: Any) -> str:
    """The text of a plain (``str``) or chat (``[{"role", "content"}]``) completion."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return completion_text(completion.get("content"))
    if isinstance(completion, (list, tuple)):
        parts = [completion_text(m) for m in completion]
        return "\n".join(p for p in parts if p)
    return "" if completion is None else str(completion)


#: The plain form ``Confidence: 80`` / ``Meta = 0.9`` / ``70%``: read without the full parser.
_PLAIN = re.compile(
    r"\s*(?:confidence|meta)\s*[:=]\s*([+-]?\d+(?:[.,]\d+)?|[+-]?\.\d+)\s*(%)?\s*",
    re.IGNORECASE,
)


def _value(line: str) -> float:
    """The confidence of one line, as :func:`~metacog_tasks.parsing.parse_confidence` reads it."""
    m = _PLAIN.fullmatch(line)
    if m:  # same unit rules as the shared parser, without its general search
        value = _to_unit(m.group(1), m.group(2))
        return math.nan if value is None else value
    parsed = parse_confidence(line)
    return parsed.confidence if parsed.ok else math.nan


def _last_line_starting(text: str, lower: str, word: str, pattern: re.Pattern[str]):
    """(start, end) of the last line that starts with ``word`` (after markup), or None."""
    i = lower.rfind(word)
    if i < 0:
        return None
    start = lower.rfind("\n", 0, i) + 1
    after = lower[i + len(word) : i + len(word) + 1]
    if lower[start:i].strip(" \t*_`>#") == "" and not (after.isalnum() or after in "-_"):
        end = lower.find("\n", i)
        return start, len(text) if end < 0 else end
    found = list(pattern.finditer(text))  # the last mention is inside a line: search them all
    return (found[-1].start(), found[-1].end()) if found else None


_NUMBER = r"([+-]?\d+(?:[.,]\d+)?|[+-]?\.\d+)[ \t]*(%)?[ \t]*"
#: The usual ending, ``...\nConfidence: 80\nMeta: 70``: read with one search of the last
#: characters (rewards parse every completion of every batch); anything else takes the general
#: path below, which gives the same result on these endings (a test compares the two).
_FAST_END = re.compile(
    r"(?:\A|\n)([ \t]*confidence[ \t]*[:=][ \t]*" + _NUMBER + r")"
    r"(?:\n([ \t]*meta[ \t]*[:=][ \t]*" + _NUMBER + r"))?\s*\Z",
    re.IGNORECASE,
)
_FAST_WINDOW = 96


def as_unit(value: Any) -> float:
    """A value in [0, 1] as float, NaN for anything else (None, NaN, strings, out of range):
    how dataset columns of confidences and grades are read."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return math.nan
    return x if 0.0 <= x <= 1.0 else math.nan


def _unit_or_nan(number: str | None, unit: str | None) -> float:
    if number is None:
        return math.nan
    if number.isdigit() and number.isascii():  # a bare 0-100 integer, with or without "%"
        value = int(number) / 100  # as the shared parser reads it (tests compare the two)
        return value if value <= 1.0 else math.nan
    value = _to_unit(number, unit)
    return math.nan if value is None else value


def parse_completion(completion: Any) -> ParsedCompletion:
    """Split a completion (plain or chat) into answer, confidence and meta; never raises."""
    text = completion_text(completion)
    m = _FAST_END.search(text, max(0, len(text) - _FAST_WINDOW))
    if m is not None:
        return ParsedCompletion(
            text[: m.start(1)].strip(),
            _unit_or_nan(m.group(2), m.group(3)),
            _unit_or_nan(m.group(5), m.group(6)),
        )
    return _parse_general(text)


def _parse_general(text: str) -> ParsedCompletion:
    """:func:`parse_completion` for any text: the last ``Confidence`` line, then ``Meta``."""
    lower = text.lower()
    span = _last_line_starting(text, lower, "confidence", _CONF_LINE)
    if span is None:
        return ParsedCompletion(text.strip(), math.nan, math.nan)
    start, end = span
    answer = text[:start].strip()
    confidence = _value(text[start:end])
    meta = math.nan
    tail = text[end:]
    mspan = _last_line_starting(tail, lower[end:], "meta", _META_LINE)
    if mspan is not None:
        line = tail[mspan[0] : mspan[1]]
        m = _PLAIN.fullmatch(line)
        meta = _value(line) if m else _value(_META_VALUE.sub("Confidence: ", line, count=1))
    return ParsedCompletion(answer, confidence, meta)
