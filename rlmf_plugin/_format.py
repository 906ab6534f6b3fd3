"""The completion format RLMF trains: an answer, then ``Confidence: C`` and ``Meta: M`` (0-100).

A *tag line* is a line whose first word (after spaces and the markdown characters ``*_`>#``)
is ``Confidence``, ``Meta``, ``Metascore``, ``Meta score`` or ``Meta-score``, in any case
(``Confidently``, ``Metabolism`` or ``Meta-analysis`` are words of the answer). The answer is
the text before the first tag line, so a grader never sees a tag line or what follows it. The
confidence is read from the only ``Confidence`` line and the meta-judgement from the only
``Meta`` line after it, with the probes' parser (:func:`metacog_tasks.parsing.parse_confidence`);
a duplicated line gives no value.

The *strict format* (what the format rewards pay for, as the official RLMF code's strict format:
one tag pair, duplicated or unpaired tags fail) is: an answer holding a letter or a digit, then
exactly one line ``Confidence: C``, then at most one line ``Meta: M`` and nothing else. ``C``
and ``M`` are ASCII numbers that read as a value in [0, 1] (``80``, ``80%``, ``0.8``); markdown
emphasis around the label is allowed. :attr:`ParsedCompletion.violations` names what breaks it.

Bounds: every parse is linear in the text's length (one scan for tag lines, one regular
expression per tag line). A completion longer than :data:`MAX_COMPLETION_CHARS` characters is
not parsed (no answer, violation ``too_long``); a tag line longer than
:data:`MAX_TAG_LINE_CHARS` gives no value.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from metacog_tasks.parsing import confidence_in_unit as _to_unit
from metacog_tasks.parsing import parse_confidence

__all__ = [
    "FORMAT_INSTRUCTION",
    "MAX_COMPLETION_CHARS",
    "MAX_TAG_LINE_CHARS",
    "ParsedCompletion",
    "as_unit",
    "completion_text",
    "parse_completion",
    "read_unit",
]

#: Appended to every solve prompt of the GRPO dataset.
FORMAT_INSTRUCTION = (
    '\n\nAfter your answer, add a line "Confidence: C", where C (0 to 100) is how confident you '
    'are that your answer is correct, then a line "Meta: M", where M (0 to 100) is how '
    "confident you are that the confidence you stated matches your true internal confidence."
)

#: Longest completion parsed (characters); a longer one has no answer (reasoning traces of
#: 32k tokens are about 130,000 characters).
MAX_COMPLETION_CHARS = 262_144
#: Longest tag line whose value is read (characters).
MAX_TAG_LINE_CHARS = 256

# A tag line: at a line start, markup, then the label as a whole word. The possessive
# quantifier keeps a long run of markup from being scanned again for each of its characters.
_TAG = re.compile(
    r"^[ \t*_`>#]*+(confidence|meta(?:[ -]?score)?)(?![^\W_]|[-_][^\W\d_])",
    re.IGNORECASE | re.MULTILINE,
)
# The strict form of a tag line, ``Label: number[%]``, markdown emphasis allowed around both.
_STRICT = re.compile(
    r"[ \t*_`>#]*(?:confidence|meta(?:[ -]?score)?)[*_`]*[ \t]*[:=][ \t]*[*_`]*[ \t]*"
    r"(\d{1,3}(?:\.\d+)?|\.\d+)[ \t]*(%?)[*_`]*\s*",
    re.IGNORECASE | re.ASCII,
)
#: The plain form ``Confidence: 80`` / ``Meta = 0.9`` / ``70%``: read without the full parser.
_PLAIN = re.compile(
    r"\s*(?:confidence|meta)\s*[:=]\s*([+-]?\d+(?:[.,]\d+)?|[+-]?\.\d+)\s*(%)?\s*",
    re.IGNORECASE,
)
_META_VALUE = re.compile(r"meta(?:[ -]?score)?\s*[:=]?\s*", re.IGNORECASE)
_ALNUM = re.compile(r"[^\W_]")  # a letter or a digit, any script (str.isalnum)
_NOT_SPACE = re.compile(r"\S")


@dataclasses.dataclass(frozen=True)
class ParsedCompletion:
    """A completion split into its answer, stated confidence and meta-judgement.

    Attributes:
        answer: The text before the first tag line (all of it when there is none), stripped.
        confidence: Stated confidence in [0, 1]; NaN when absent, duplicated or unparseable.
        meta: Self-judged faithfulness of the confidence in [0, 1]; NaN when absent,
            duplicated, before the confidence line or unparseable.
        has_answer: Whether the answer holds a letter or a digit (punctuation is no answer).
        has_meta_line: Whether a ``Meta`` line was written (valid or not).
        violations: What breaks the strict format (see the module doc): ``too_long``,
            ``no_answer``, ``no_confidence``, ``duplicate_confidence``, ``bad_confidence``,
            ``duplicate_meta``, ``misplaced_meta``, ``bad_meta``, ``text_after``.
    """

    answer: str
    confidence: float
    meta: float
    has_answer: bool = True
    has_meta_line: bool = False
    violations: tuple[str, ...] = ()

    @property
    def has_confidence(self) -> bool:
        """Whether a confidence was stated and parsed."""
        return not math.isnan(self.confidence)

    def strict(self, require_meta: bool = False) -> bool:
        """Whether the completion has the strict format (with a ``Meta`` line, if required)."""
        return not self.violations and (self.has_meta_line or not require_meta)


_TOO_LONG = ParsedCompletion("", math.nan, math.nan, False, False, ("too_long", "no_answer"))


def completion_text(completion: Any, _depth: int = 0) -> str:
    """The text of a plain (``str``) or chat (``[{"role", "content"}]``) completion.

    Anything else gives its ``str`` (``""`` for ``None``, or when it cannot be turned into
    text); nesting deeper than a chat message's content parts is ignored. Never raises.
    """
    if isinstance(completion, str):
        return completion
    if completion is None or _depth > 3:
        return ""
    if isinstance(completion, dict):
        return completion_text(completion.get("content"), _depth + 1)
    if isinstance(completion, (list, tuple)):
        parts = [completion_text(m, _depth + 1) for m in completion]
        return "\n".join(p for p in parts if p)
    try:
        return str(completion)
    except Exception:  # an object whose __str__ fails is no text
        return ""


def read_unit(value: Any) -> tuple[float, str]:
    """A label value as a number in [0, 1]: ``(value, "ok")``, ``(nan, "missing")`` for
    ``None`` or NaN, ``(nan, "bad")`` for anything else (text that is no number, a list, a
    bool, a value outside [0, 1]). Numeric text (``"0.25"``) is read. Never raises."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return math.nan, "missing"
    if type(value).__name__ == "NAType":  # pandas.NA
        return math.nan, "missing"
    numpy_scalar = hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0
    if isinstance(value, bool) or not (isinstance(value, (int, float, str)) or numpy_scalar):
        return math.nan, "bad"  # numpy scalars pass; arrays, lists, dicts, bools do not
    if isinstance(value, str) and len(value) > 64:
        return math.nan, "bad"
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan, "bad"
    if math.isnan(x) and not isinstance(value, str):
        return math.nan, "missing"
    return (x, "ok") if 0.0 <= x <= 1.0 else (math.nan, "bad")


def as_unit(value: Any) -> float:
    """A value in [0, 1] as float, NaN for anything else (None, NaN, strings, out of range):
    how dataset columns of confidences and grades are read."""
    return read_unit(value)[0]


def _unit_or_nan(number: str | None, unit: str | None) -> float:
    if number is None:
        return math.nan
    if number.isdigit() and number.isascii():  # a bare 0-100 integer, with or without "%"
        value = int(number) / 100  # as the shared parser reads it (tests compare the two)
        return value if value <= 1.0 else math.nan
    value = _to_unit(number, unit)
    return math.nan if value is None else value


def _value(line: str) -> float:
    """The confidence of one tag line, as :func:`~metacog_tasks.parsing.parse_confidence`
    reads it (NaN for a line longer than :data:`MAX_TAG_LINE_CHARS`)."""
    if len(line) > MAX_TAG_LINE_CHARS:
        return math.nan
    m = _PLAIN.fullmatch(line)
    if m:  # same unit rules as the shared parser, without its general search
        value = _to_unit(m.group(1), m.group(2))
        return math.nan if value is None else value
    parsed = parse_confidence(line)
    return parsed.confidence if parsed.ok else math.nan


def _read(line: str, meta: bool) -> tuple[float, bool]:
    """The value of a tag line and whether the line has the strict form (and a valid value)."""
    if len(line) > MAX_TAG_LINE_CHARS:
        return math.nan, False
    m = _STRICT.fullmatch(line)
    if m:  # the strict form reads as the shared parser does (a test compares the two)
        value = _unit_or_nan(m.group(1), m.group(2) or None)
        return value, not math.isnan(value)
    if meta and not _PLAIN.fullmatch(line):
        line = _META_VALUE.sub("Confidence: ", line, count=1)
    return _value(line), False


def parse_completion(completion: Any) -> ParsedCompletion:
    """Split a completion (plain or chat) into answer, confidence and meta; never raises."""
    text = completion_text(completion)
    if len(text) > MAX_COMPLETION_CHARS:
        return _TOO_LONG
    confs: list[tuple[int, int]] = []  # (start, end) of each Confidence line
    metas: list[tuple[int, int]] = []
    for m in _TAG.finditer(text):
        end = text.find("\n", m.end())
        (confs if m.group(1)[0] in "cC" else metas).append(
            (m.start(), end if end >= 0 else len(text))
        )
    first = min(confs[0][0] if confs else len(text), metas[0][0] if metas else len(text))
    answer = text[:first].strip()
    has_answer = _ALNUM.search(answer) is not None
    violations = [] if has_answer else ["no_answer"]
    confidence = meta = math.nan
    if not confs:
        violations.append("no_confidence")
    elif len(confs) > 1:
        violations.append("duplicate_confidence")
    else:
        confidence, strict = _read(text[confs[0][0] : confs[0][1]], meta=False)
        if not strict:
            violations.append("bad_confidence")
    after = None  # the one Meta line, when it follows the one Confidence line
    if len(metas) > 1:
        violations.append("duplicate_meta")
    elif metas and confs and metas[0][0] < confs[-1][0]:
        violations.append("misplaced_meta")
    elif metas and len(confs) == 1:
        after = metas[0]
        meta, strict = _read(text[after[0] : after[1]], meta=True)
        if not strict:
            violations.append("bad_meta")
    if confs and _text_after(text, confs[-1][1], after):
        violations.append("text_after")
    return ParsedCompletion(answer, confidence, meta, has_answer, bool(metas), tuple(violations))


def _text_after(text: str, end: int, meta: tuple[int, int] | None) -> bool:
    """Whether anything but white space follows the confidence line (besides one Meta line)."""
    if meta is None:
        return _NOT_SPACE.search(text, end) is not None
    return (
        _NOT_SPACE.search(text, end, meta[0]) is not None
        or _NOT_SPACE.search(text, meta[1]) is not None
    )
