"""Answer extraction for math benchmarks: the last ``\\boxed{}``, numbers, math-verify calls."""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "VerifyOutcome",
    "last_boxed",
    "numbers_in",
    "parse_number",
    "too_large",
    "verify_latex",
]

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BRACE = re.compile(r"[{}]")
_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:/\d+)?|-?\.\d+")


def last_boxed(text: str | None) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced.

    Returns ``None`` when there is none or its braces never close.
    """
    if not text:
        return None
    text = str(text)
    starts = [m.end() for m in _BOXED.finditer(text)]
    if not starts:
        return None
    # Match every brace once with a stack (scanning on from each box was quadratic: 4.6 s on
    # 20 kB of "\boxed{"); a box's content ends at the brace that closes its opening one.
    closing: dict[int, int] = {}
    opened: list[int] = []
    for m in _BRACE.finditer(text, starts[0] - 1):
        if m.group() == "{":
            opened.append(m.start())
        elif opened:
            closing[opened.pop()] = m.start()
    for start in reversed(starts):
        end = closing.get(start - 1)
        if end is not None:
            return text[start:end].strip()
        # unbalanced: try an earlier box
    return None


def numbers_in(text: str) -> list[str]:
    """Numbers in a text, in order (thousands separators kept; strip them with parse_number)."""
    return _NUMBER.findall(str(text))


def parse_number(text: str | None) -> float | None:
    """A float from ``"1,234.5"``, ``"-3"``, ``"3/4"``, ``"$12$"``, ``"50%"``; else ``None``."""
    if text is None:
        return None
    s = str(text).strip().strip("$").strip()
    s = re.sub(r"\\(?:text|mathrm)\{[^}]*\}", "", s)
    s = s.replace("\\%", "%").replace("\\,", "").replace("\\!", "").replace(" ", "")
    m = re.fullmatch(r"\\[dt]?frac\{(-?\d+(?:\.\d+)?)\}\{(-?\d+(?:\.\d+)?)\}", s)
    if m:
        den = float(m.group(2))
        return float(m.group(1)) / den if den else None
    percent = s.endswith("%")
    s = s.rstrip("%").rstrip(".")
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        s = s.replace(",", "")
    try:
        if re.fullmatch(r"-?\d+(?:\.\d+)?/\d+(?:\.\d+)?", s):
            num, den = s.split("/")
            value = float(num) / float(den) if float(den) else None
        else:
            value = float(s)
    except (ValueError, ZeroDivisionError):
        return None
    if value is None:
        return None
    return value / 100.0 if percent else value


@dataclasses.dataclass(frozen=True)
class VerifyOutcome:
    """What math-verify said: ``verdict`` True/False, or ``None`` with ``status`` saying why."""

    verdict: bool | None
    status: str  # ok | gold_unparseable | answer_unparseable | too_large | timeout | error
    detail: str = ""


#: Largest integer (in decimal digits) that an expression may evaluate to before math-verify
#: sees it. SymPy evaluates integer powers and factorials eagerly, in C code that holds the
#: GIL: a power tower such as ``9^{9^{9^{9}}}`` would freeze the caller for hours, and no
#: thread timeout can interrupt it. Competition answers stay far below this size.
MAX_DIGITS = 100_000
_MAX_FACTORIAL = 25_000  # 25,000! has about 99,000 digits
_TOWER = re.compile(r"\d+(?:\^\d+)+")
_FACTORIAL = re.compile(r"(\d+)!")


def too_large(latex: str) -> str | None:
    """Why ``latex`` would evaluate to an integer of more than :data:`MAX_DIGITS` digits, or
    ``None``. Integer power chains are read right-associatively after dropping grouping
    (``{2^3}^4`` as ``2^{3^4}``), which can only over-estimate their size."""
    flat = re.sub(r"[\s{}()]|\\left|\\right", "", str(latex))
    for chain in _TOWER.findall(flat):
        parts = [int(p) for p in chain.split("^")]
        exponent = float(parts[-1])
        for base in reversed(parts[:-1]):
            if base <= 1:
                exponent = float(base)  # 0^x and 1^x stay small
                continue
            digits = exponent * math.log10(base)
            if digits > MAX_DIGITS:
                return f"{chain} has about 10^{math.log10(digits):.0f} digits"
            exponent = float(base) ** exponent if digits < 300 else math.inf
    for n in _FACTORIAL.findall(flat):
        if int(n) > _MAX_FACTORIAL:
            return f"{n}! has more than {MAX_DIGITS:,} digits"
    return None


def _wrap(latex: str) -> str:
    s = latex.strip()
    if "\\boxed" in s or (s.startswith("$") and s.endswith("$")):
        return s
    return f"${s}$"


@functools.cache
def _warm_up() -> None:
    """Import math-verify and make its first parse and verify, untimed, once a process.

    The first call builds the LaTeX grammar and SymPy's caches: about 4 s on a busy machine,
    close to the default 5 s timeout, so that without this the first item of a run could be
    graded ``timeout`` by the grader's own start-up."""
    from math_verify import parse, verify

    untimed: Any = None  # math-verify types its timeouts as int; None turns them off
    gold = parse("$\\frac{1}{2}$", parsing_timeout=untimed)
    verify(gold, parse("$\\boxed{0.5}$", parsing_timeout=untimed), timeout_seconds=untimed)


def _verify_now(
    gold: str, answer: str, timeout_s: int | None, step_done: Callable[[], None] | None = None
) -> VerifyOutcome:
    """The three steps (parse the gold, parse the answer, compare), each under math-verify's own
    ``timeout_s``; ``step_done`` is called after each of the first two."""
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    done = step_done or (lambda: None)
    try:
        gold_parsed = parse(_wrap(gold), parsing_timeout=timeout_s, raise_on_error=True)
        done()
        if not gold_parsed:
            return VerifyOutcome(None, "gold_unparseable", gold)
        pred_parsed = parse(
            f"$\\boxed{{{answer}}}$", parsing_timeout=timeout_s, raise_on_error=True
        )
        done()
        if not pred_parsed:
            return VerifyOutcome(None, "answer_unparseable", answer)
        ok = verify(gold_parsed, pred_parsed, timeout_seconds=timeout_s, raise_on_error=True)
        return VerifyOutcome(bool(ok), "ok")
    except TimeoutException:
        return VerifyOutcome(None, "timeout")
    except Exception as exc:  # sympy raises many types on odd input
        return VerifyOutcome(None, "error", f"{type(exc).__name__}: {exc}"[:200])


def _verify_in_helper(gold: str, answer: str, timeout_s: float) -> VerifyOutcome:
    """:func:`_verify_now` in a helper thread, watched step by step: each step gets
    ``timeout_s`` from the end of the previous one, the budget SIGALRM gives each step in the
    main thread. A step over it is abandoned (it finishes in the background) as ``timeout``."""
    box: dict[str, Any] = {}
    last = [time.monotonic()]  # when the running step started

    def step_done() -> None:
        last[0] = time.monotonic()

    def run() -> None:
        box["out"] = _verify_now(gold, answer, None, step_done)

    worker = threading.Thread(target=run, daemon=True, name="metacog-math-verify")
    worker.start()
    while True:
        worker.join(max(0.0, last[0] + timeout_s - time.monotonic()))
        if not worker.is_alive():
            return box.get("out", VerifyOutcome(None, "timeout"))
        if time.monotonic() >= last[0] + timeout_s:
            return VerifyOutcome(None, "timeout")


def _verify_once(gold: str, answer: str, timeout_s: int) -> VerifyOutcome:
    if threading.current_thread() is threading.main_thread():
        return _verify_now(gold, answer, timeout_s)
    return _verify_in_helper(gold, answer, timeout_s)


def verify_latex(gold: str, answer: str, *, timeout_s: int = 5) -> VerifyOutcome:
    """Whether ``answer`` is mathematically equal to ``gold``, with math-verify.

    The gold is wrapped in ``$...$`` (unless already delimited) and the answer in
    ``\\boxed{}`` so that both parse as LaTeX. A text that would evaluate to an integer of more
    than :data:`MAX_DIGITS` digits (a power tower, a huge factorial) is not handed to
    math-verify at all (status ``too_large``; see :func:`too_large`). Each of the three steps
    (parse the gold, parse the answer, compare) gets ``timeout_s`` seconds. math-verify's own
    timeouts use ``SIGALRM``, which only works in the main thread (lm-eval grades there);
    elsewhere (Inspect's and many harnesses' worker threads) the call runs in a helper thread
    watched step by step with the same budget, and a timed-out step is abandoned (it finishes in
    the background) and reported as ``timeout``. A timed-out check is not run again: the answer
    is the model's, and a rerun alone would let answers built to parse slowly stall every other
    grading (and leave a second abandoned thread).

    Args:
        gold: Gold answer (LaTeX or plain).
        answer: Extracted answer (the content of the last ``\\boxed{}``).
        timeout_s: Seconds for each parse/verify step.

    Returns:
        A :class:`VerifyOutcome`.
    """
    for text, status in ((gold, "gold_unparseable"), (answer, "too_large")):
        reason = too_large(text)
        if reason is not None:
            return VerifyOutcome(None, status, reason)
    _warm_up()
    return _verify_once(gold, answer, timeout_s)
