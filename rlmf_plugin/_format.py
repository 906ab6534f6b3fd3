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


def _value(line: str) -> float:
    parsed = parse_confidence(line)
    return parsed.confidence if parsed.ok else math.nan


def parse_completion(completion: Any) -> ParsedCompletion:
    """Split a completion (plain or chat) into answer, confidence and meta; never raises."""
    text = completion_text(completion)
    confs = list(_CONF_LINE.finditer(text))
    if not confs:
        return ParsedCompletion(text.strip(), math.nan, math.nan)
    last = confs[-1]
    answer = text[: last.start()].strip()
    confidence = _value(last.group(0))
    tail = text[last.end() :]
    metas = list(_META_LINE.finditer(tail))
    meta = math.nan
    if metas:
        line = _META_VALUE.sub("Confidence: ", metas[-1].group(0), count=1)
        meta = _value(line)
    return ParsedCompletion(answer, confidence, meta)
