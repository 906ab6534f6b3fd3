"""What a simulated model says to the two RLMF requests that are not harness prompts.

* A solve prompt that asks for the RLMF completion format (a ``"Confidence: C"`` line, then a
  ``"Meta: M"`` line, both 0-100): the model's solve response, then its stated confidence (what
  its numeric probe says) and its meta-judgement, ``M = 1 - |stated - p_correct| + noise``: how
  well it judges its stated confidence to match its internal probability of being right.
* A rewriting request (stage two of RLMF): a text between ``<text>`` and ``</text>`` and hedging
  phrases listed (``- phrase``) between ``<phrases>`` and ``</phrases>``. The model drops the
  numeric ``Confidence``/``Meta`` lines and puts one of the phrases, on a line of its own, before
  the text's last line (an LLM editor's rewrite, without its fluency).
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["META_NOISE_SD", "asks_rlmf_format", "rewrite_request", "rlmf_tail", "sim_rewrite"]

#: Standard deviation of the simulated meta-judgement's error.
META_NOISE_SD = 0.1

_FORMAT = re.compile(r'"Confidence:\s*C".*?"Meta:\s*M"', re.IGNORECASE | re.DOTALL)
_TEXT = re.compile(r"<text>\n?(.*?)\n?</text>", re.DOTALL)
_PHRASES = re.compile(r"<phrases>(.*?)</phrases>", re.DOTALL)
_NUMERIC_LINE = re.compile(r"^[ \t*_`>#]*(?:confidence|meta(?:[ -]?score)?)\b.*$", re.IGNORECASE)


def asks_rlmf_format(text: str) -> bool:
    """Whether a prompt asks for the ``Confidence: C`` / ``Meta: M`` completion format."""
    return bool(_FORMAT.search(text))


def rlmf_tail(stated: float, p_correct: float, rng: np.random.Generator) -> str:
    """The ``Confidence`` and ``Meta`` lines of a simulated answer (values in [0, 1] in)."""
    meta = 1.0 - abs(stated - p_correct) + META_NOISE_SD * float(rng.standard_normal())
    meta = min(max(meta, 0.0), 1.0)
    return f"Confidence: {round(100 * stated)}\nMeta: {round(100 * meta)}"


def rewrite_request(text: str) -> tuple[str, list[str]] | None:
    """``(text, phrases)`` of a rewriting request, or ``None`` when ``text`` is not one."""
    # the last blocks: an instruction may name the tags before the blocks themselves
    bodies, lists = list(_TEXT.finditer(text)), list(_PHRASES.finditer(text))
    if not bodies or not lists:
        return None
    body, phrases = bodies[-1], lists[-1]
    options = [ln.strip()[1:].strip() for ln in phrases.group(1).splitlines()]
    options = [o for o in options if o]
    return (body.group(1), options) if options else None


def sim_rewrite(text: str, phrases: list[str], rng: np.random.Generator) -> str:
    """The simulated editor's rewrite of ``text`` with one of ``phrases`` (see module doc)."""
    lines = [ln for ln in text.splitlines() if not _NUMERIC_LINE.match(ln)]
    while lines and not lines[-1].strip():
        lines.pop()
    phrase = phrases[int(rng.integers(len(phrases)))]
    hedge = f"{phrase[:1].upper()}{phrase[1:]}, this is the answer:"
    if not lines:
        return hedge
    return "\n".join([*lines[:-1], hedge, lines[-1]])
