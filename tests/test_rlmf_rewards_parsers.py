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


# ------------------------------------------------------------------ the rewards' own parsers

_OLD_SPECIAL = re.compile(
    r"(?:\s*(?:<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</?s>|<(?:eos|pad|end_of_turn|eot)>))+\s*\Z"
)
_SPECIAL_TOKENS = ["<|im_end|>", "<|eot_id|>", "<｜end▁of▁sentence｜>", "</s>", "<s>", "<eos>",
                   "<pad>", " ", "\n", "x", "<", "|", ">", "<|", "|>", "<|a b|>", "\t"]  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_SPECIAL_TOKENS), max_size=12).map("".join))
def test_special_token_strip_reads_what_the_backtracking_pattern_read(text):
    from rlmf_plugin.engines import _strip_special

    assert _strip_special(text) == _OLD_SPECIAL.sub("", text)


@pytest.mark.parametrize(
    "text",
    [
        " " * MB,
        "<eos>" * (MB // 5),
        ("<|im_end|>" + " " * 90) * (MB // 100),
        "x" + " \n" * (MB // 2) + "<eos>",
    ],
    ids=["spaces", "tokens", "tokens-and-spaces", "spaces-then-token"],
)
def test_special_token_strip_is_linear(text):
    from rlmf_plugin.engines import _strip_special

    assert _cpu(_strip_special, text) < CPU_BOUND_S


#: Degenerate completions at the length cap: runs of what the parser looks for.
_AT_CAP = {
    "spaces": " " * 262_144,
    "newlines": "\n" * 262_144,
    "tag-lines": "Confidence: 80\n" * (262_144 // 15),
    "meta-lines": "Meta\n" * (262_144 // 5),
    "markup-then-tag": "*" * 262_000 + "Confidence: 80",
    "mid-line-tags": "x confidence meta " * (262_144 // 18),
    "long-tag-line": "Confidence: " + "9" * 262_000,
    "boxed": "\\boxed{" * (262_144 // 7),
}


@pytest.mark.parametrize("text", list(_AT_CAP.values()), ids=list(_AT_CAP))
def test_completion_parse_is_linear_up_to_the_cap(text):
    from rlmf_plugin._format import MAX_COMPLETION_CHARS, parse_completion

    assert len(text) <= MAX_COMPLETION_CHARS
    assert _cpu(parse_completion, text) < CPU_BOUND_S
    assert _cpu(parse_completion, text * 4) < CPU_BOUND_S  # over the cap: not parsed


def test_response_split_is_linear():
    from rlmf_plugin.engines import _response

    prompt = "a" * 199 + "b"
    assert _cpu(_response, "a" * MB, prompt) < CPU_BOUND_S  # no prompt inside: the query
    assert _cpu(_response, "a" * 200_000 + prompt + "c" * 1000, "q" + prompt) < CPU_BOUND_S
