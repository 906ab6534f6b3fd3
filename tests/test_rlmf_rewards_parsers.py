"""Every parser a reward runs is linear time and reads what the slower form it replaced read.

The degenerate inputs are those that made the replaced forms quadratic (issue 27): 40 kB of
white space before the special-token strip, one 20 kB line through MMLU-Pro's answer
patterns, 20 kB of ``\\boxed{``. Here they are 1 MB (the replaced forms would take hours); the
bound is CPU time, which other processes on a shared machine do not inflate.
"""

from __future__ import annotations

import multiprocessing
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.benchmarks._math import last_boxed
from metacog_tasks.benchmarks.mmlu_pro import extract_choice

MB = 1_000_000
#: CPU seconds allowed for one parse of 1 MB (the linear forms take 0.01-0.2 s).
CPU_BOUND_S = 3.0

# The replaced forms, kept here as references of what the linear ones must read.
_ANSWER_IS = re.compile(r"answer is \(?([A-J])\)?")
_ANSWER_COLON = re.compile(r".*[aA]nswer:\s*([A-J])")
_LAST_LETTER = re.compile(r"\b[A-J]\b(?!.*\b[A-J]\b)", re.DOTALL)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


def _choice_reference(text: str) -> tuple[str | None, str]:
    if not text:
        return None, "none"
    for pattern, rule, group in (
        (_ANSWER_IS, "answer_is", 1),
        (_ANSWER_COLON, "answer_colon", 1),
        (_LAST_LETTER, "last_letter", 0),
    ):
        m = pattern.search(text)
        if m:
            return m.group(group), rule
    return None, "none"


def _boxed_reference(text: str) -> str | None:
    for start in reversed([m.end() for m in _BOXED.finditer(text)]):
        depth = 1
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[start:i].strip()
    return None


def _timed(conn, fn, args) -> None:
    t0 = time.process_time()
    fn(*args)
    conn.send(time.process_time() - t0)


def _cpu(fn, *args, wall_s: float = 60.0) -> float:
    """CPU seconds of ``fn(*args)``, run in a child process that is killed after ``wall_s``
    (a quadratic parse of 1 MB would otherwise hold the test run for hours)."""
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_timed, args=(there, fn, args), daemon=True)
    child.start()
    ready = here.poll(wall_s)
    if not ready:
        child.kill()
    child.join()
    assert ready, f"{getattr(fn, '__name__', fn)} did not finish in {wall_s} s"
    return here.recv()


_CHOICE_TOKENS = ["answer:", "Answer:", "Answer: ", "answer is ", "A", "B", "J", "K", " ", "\n",
                  "\t", "x", "(", ")", "é", "_", "1", "aAnswer:", "\r", "Ä"]  # fmt: skip
_choice_text = st.lists(st.sampled_from(_CHOICE_TOKENS), max_size=16).map("".join)
_boxed_text = st.lists(
    st.sampled_from(["\\boxed{", "\\fbox {", "{", "}", "x", " ", "\\boxed", "1", "\\"]),
    max_size=16,
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(text=st.one_of(_choice_text, st.text(max_size=30)))
def test_mmlu_pro_extraction_reads_what_the_authors_patterns_read(text):
    assert extract_choice(text) == _choice_reference(text)


def test_mmlu_pro_extraction_by_hand():
    """The cases where the one-pass form must mimic backtracking: the last match on the first
    line that has one, overlapping matches, a match whose letter is on the next line."""
    assert extract_choice("Answer: Answer: B\nanswer: C") == ("B", "answer_colon")
    assert extract_choice("x answer:\n\n  D and answer: E") == ("D", "answer_colon")
    assert extract_choice("no colon here\nAnswer: G, or Answer: H") == ("H", "answer_colon")
    assert extract_choice("A then B, (C) and d") == ("C", "last_letter")


@settings(max_examples=1000, deadline=None)
@given(text=st.one_of(_boxed_text, st.text(alphabet="{}\\boxed x", max_size=30)))
def test_last_boxed_reads_what_the_depth_scan_read(text):
    assert last_boxed(text) == _boxed_reference(text)


@pytest.mark.parametrize(
    "text",
    [
        " " * MB,  # one line, no answer: every position tried by the old ``.*`` pattern
        "x answer: " * (MB // 10),
        "A " * (MB // 2),
        "\\boxed{" * (MB // 7),
        "Answer:" + " " * MB,
    ],
    ids=["spaces", "answer-colon", "letters", "boxed", "answer-then-spaces"],
)
def test_benchmark_extractors_are_linear(text):
    assert _cpu(extract_choice, text) < CPU_BOUND_S
    assert _cpu(last_boxed, text) < CPU_BOUND_S
