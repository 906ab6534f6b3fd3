"""Parsing of probe replies: a Yes/No verdict or a numeric confidence.

Both parsers read the *verdict* of a reply (the final ``Answer: Yes`` line the probe asks for)
and tolerate what models actually write: reasoning before the verdict, markdown bold, quotes,
trailing punctuation, a template echo such as ``Answer: Yes or No``. A reply that carries no
verdict is NaN with ``status="unparseable"`` (or ``"refusal"`` / ``"empty"``), never a silent "no".
"""

from __future__ import annotations

import dataclasses
import math
import re

from metacog_metrics import Result

__all__ = ["ProbeParse", "confidence_in_unit", "parse_confidence", "parse_yes_no"]

#: Phrases of a reply that declines to give a verdict.
_REFUSAL = re.compile(
    r"\b(?:i\s+(?:can\s*not|cannot|can't|am\s+unable\s+to|'m\s+unable\s+to|am\s+not\s+able\s+to|"
    r"won't|will\s+not|do\s+not\s+know|don't\s+know)\s+"
    r"(?:answer|predict|determine|say|know|tell|assess|estimate|judge|provide|give|help)|"
    r"i\s+(?:do\s+not|don't)\s+know|unable\s+to\s+(?:answer|predict|determine|assess)|"
    r"as\s+an\s+ai\b|i\s+(?:must|have\s+to)\s+decline|i\s+(?:can't|cannot|can\s*not)\s+comply|"
    r"no\s+way\s+to\s+(?:know|tell|predict)|no\s+(?:idea|clue)\b)",
    re.IGNORECASE,
)
_YES_NO = r"(yes|no)"
_NOT_ALTERNATIVE = r"(?!\s*(?:or|/|\|)\s*(?:yes|no)\b)"
#: "No idea" / "no clue" is a refusal, not the verdict "no".
_NOT_IDIOM = r"(?!\s+(?:idea|clue)\b)"
#: "Answer: yes", "Final answer - No", "My answer is yes", "Verdict: no".
_VERDICT = re.compile(
    r"(?:final\s+)?(?:answer|verdict|decision|prediction|response)\s*(?:is|would\s+be|:|：|-|=)\s*"
    r"(?::\s*)?['(]?\s*" + _YES_NO + r"\b" + _NOT_ALTERNATIVE + _NOT_IDIOM,
    re.IGNORECASE,
)
_LEADING_YES_NO = re.compile(
    r"^\W*" + _YES_NO + r"\b" + _NOT_ALTERNATIVE + _NOT_IDIOM, re.IGNORECASE
)
_WORD_YES_NO = re.compile(r"\b(yes|no)\b" + _NOT_IDIOM, re.IGNORECASE)
_MARKUP = re.compile(r"[*_`#>\"“”‘’«»\[\]]")
#: Markers that end a verdict line echoed from the template ("Answer: Yes or No").
_ALTERNATIVE = re.compile(r"\byes\s*(?:or|/|\|)\s*no\b|\bno\s*(?:or|/|\|)\s*yes\b", re.IGNORECASE)

_NUMBER = r"([+-]?\d+(?:[.,]\d+)?|[+-]?\.\d+)"
_CONF_LABELLED = re.compile(
    r"(?:confidence|probability|likelihood|chance|certainty|answer)"
    r"(?:\s+(?:level|score|estimate))?\s*(?:is|of|:|：|=|-)?\s*(?:about|around|approximately|~)?\s*"
    + _NUMBER
    + r"\s*(%|percent\b|/\s*100\b|/\s*10\b|out\s+of\s+100\b|out\s+of\s+10\b)?",
    re.IGNORECASE,
)
_CONF_ANY = re.compile(
    _NUMBER + r"\s*(%|percent\b|/\s*100\b|/\s*10\b|out\s+of\s+100\b|out\s+of\s+10\b)?",
    re.IGNORECASE,
)


@dataclasses.dataclass(frozen=True)
class ProbeParse(Result):
    """The parsed verdict of one probe reply.

    Attributes:
        confidence: 1.0 (yes) / 0.0 (no) for a binary probe, a value in [0, 1] for a numeric
            probe; NaN when the reply gives no verdict.
        status: ``ok``, ``unparseable``, ``refusal`` or ``empty``.
        matched: The text the verdict was read from, or ``None``.
    """

    confidence: float
    status: str
    matched: str | None = None

    @property
    def ok(self) -> bool:
        """Whether a verdict was found."""
        return self.status == "ok"


def _clean(line: str) -> str:
    return _MARKUP.sub("", line).strip()


def _lines(text: str) -> list[str]:
    """The reply's non-empty lines, markup removed (none: an empty reply)."""
    return [ln for ln in (_clean(x) for x in text.splitlines()) if ln]


def _empty() -> ProbeParse:
    return ProbeParse(math.nan, "empty", None)


def _yes_no(word: str, matched: str) -> ProbeParse:
    return ProbeParse(1.0 if word.lower() == "yes" else 0.0, "ok", matched)


def _one_word(span: str) -> ProbeParse | None:
    """The verdict of a span holding only one of the two words (no template echo, no refusal)."""
    if _ALTERNATIVE.search(span):
        return None
    words = {w.lower() for w in _WORD_YES_NO.findall(span)}
    if len(words) != 1 or _REFUSAL.search(span):
        return None
    return _yes_no(words.pop(), span)


def _no_verdict(text: str) -> ProbeParse:
    m = _REFUSAL.search(text)
    if m:
        return ProbeParse(math.nan, "refusal", m.group(0))
    return ProbeParse(math.nan, "unparseable", None)


def parse_yes_no(text: str | None) -> ProbeParse:
    """Read the Yes/No verdict of a probe reply.

    The verdict is, in order of precedence: the last labelled verdict (``Answer: Yes``,
    ``Final answer - no``, ``My answer is yes``); else the last line when it starts with yes or
    no; else the last line when it contains exactly one of the two words; else the whole reply
    when it is short (at most 12 words) and contains exactly one of them. Template echoes such
    as ``Answer: Yes or No`` are no verdict, and "no idea" / "no clue" is a refusal, not a
    "no".

    Args:
        text: The probe reply (``None`` is treated as empty).

    Returns:
        A :class:`ProbeParse` with confidence 1.0 (yes), 0.0 (no) or NaN.
    """
    text = "" if text is None else str(text)
    lines = _lines(text)
    if not lines:
        return _empty()
    cleaned = "\n".join(lines)
    labelled = list(_VERDICT.finditer(cleaned))
    if labelled:
        return _yes_no(labelled[-1].group(1), labelled[-1].group(0))
    last = lines[-1]
    m = _LEADING_YES_NO.match(last)
    if m and not _ALTERNATIVE.search(last):
        return _yes_no(m.group(1), last)
    found = _one_word(last)
    if found is None and len(cleaned.split()) <= 12:
        found = _one_word(cleaned)
    return _no_verdict(text) if found is None else found


def confidence_in_unit(number: str, unit: str | None) -> float | None:
    """A stated confidence as a share in [0, 1], or None when it is not one.

    Percent, ``/100`` and ``/10`` units scale the number; a bare number is on the 0-100 scale
    the probe asks for unless it is a decimal in [0, 1].

    >>> [confidence_in_unit(n, u) for n, u in (("80", None), ("0,7", None), ("7", "/10"))]
    [0.8, 0.7, 0.7]
    """
    try:
        value = float(number.replace(",", "."))
    except ValueError:
        return None
    unit = (unit or "").lower().replace(" ", "")
    if unit in ("%", "percent", "/100", "outof100"):
        value /= 100.0
    elif unit in ("/10", "outof10"):
        value /= 10.0
    elif not (0.0 <= value <= 1.0 and ("." in number or "," in number)):
        # A bare number on the 0-100 scale the probe asks for ("Confidence: 80", "1" = 1%).
        value /= 100.0
    if not math.isfinite(value) or value < 0.0 or value > 1.0:
        return None
    return value


def parse_confidence(text: str | None) -> ProbeParse:
    """Read a numeric confidence from a probe reply.

    Accepts 0-100 numbers (``Confidence: 80``), percentages (``80%``, ``80 percent``),
    fractions of 100 or 10 (``8/10``) and 0-1 decimals (``0.8``, ``1.0``). A bare integer is on
    the 0-100 scale the probe asks for, so ``1`` is 1% while ``1.0`` is certainty. The last
    labelled value (``Confidence: ...``) wins; else the last number of the last line that has
    one. Values outside [0, 100] are no verdict.

    Args:
        text: The probe reply (``None`` is treated as empty).

    Returns:
        A :class:`ProbeParse` with confidence in [0, 1] or NaN.
    """
    text = "" if text is None else str(text)
    lines = _lines(text)
    if not lines:
        return _empty()
    cleaned = "\n".join(lines)
    labelled = list(_CONF_LABELLED.finditer(cleaned))
    if labelled:
        m = labelled[-1]
        value = confidence_in_unit(m.group(1), m.group(2))
        if value is not None:
            return ProbeParse(value, "ok", m.group(0).strip())
    for line in reversed(lines):
        found = list(_CONF_ANY.finditer(line))
        if found:
            m = found[-1]
            value = confidence_in_unit(m.group(1), m.group(2))
            if value is not None:
                return ProbeParse(value, "ok", m.group(0).strip())
            break
    return _no_verdict(text)
