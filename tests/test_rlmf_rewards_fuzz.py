"""Property tests of every reward and grader entry over completions a policy could write.

Completions are built from answers (right, wrong, empty, punctuation, unicode), tag lines
(``Confidence``/``Meta`` in their spellings, look-alikes and compound words, separators,
numbers at the bounds, unicode digits, huge numbers), line breaks, trailing junk, and huge
degenerate strings. For each: no reward or entry point raises, every value is finite, a
malformed completion (no answer, or no readable confidence) is never paid more than a
well-formed wrong answer, a completion without an answer gets each reward's floor and a lower
total than any answered completion, the number read as the confidence never reaches the
grader, and every call stays within a CPU-time bound. The module prints how many examples ran
and the slowest call.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metacog_tasks.benchmarks import get_benchmark
from rlmf_plugin._format import parse_completion, read_unit
from rlmf_plugin._grading import ItemGrader
from rlmf_plugin.engines import (
    FIELDS,
    RewardScorer,
    compute_score,
    compute_score_batch,
    make_label,
    reward_func,
)
from rlmf_plugin.rewards import FLOORS, REWARD_NAMES, make_rewards

MMLU = get_benchmark("mmlu_pro")
ITEM = MMLU.load("bundled")[0]
RIGHT = MMLU.reference_response(ITEM)
WRONG = MMLU.wrong_response(ITEM, np.random.default_rng(0))
GRADER = ItemGrader()
SHORT = {f"{n}_reward" if n not in ("metacog_score",) else n: n for n in REWARD_NAMES}
#: CPU seconds allowed for one reward or entry-point call on one fuzzed batch.
CPU_BOUND_S = 2.0

_stats = {"examples": 0, "calls": 0, "max_cpu_s": 0.0, "max_chars": 0, "slowest": ""}


@pytest.fixture(scope="module", autouse=True)
def _report():
    import torch  # noqa: F401  (imported by reward_func: not part of any timed call)

    for bench in _BENCHES:  # load items and graders (math-verify, nltk) outside the timing
        for item in _ITEMS[bench]:
            GRADER.verdict(bench, item.item_id, "bundled", "warm up")
    yield
    print(
        f"\nreward fuzz: {_stats['examples']} examples, {_stats['calls']} calls, slowest "
        f"{_stats['max_cpu_s']:.3f} s CPU ({_stats['slowest']}), longest completion "
        f"{_stats['max_chars']:,} chars"
    )


def _timed(fn: Callable, *args, **kwargs):
    t0 = time.process_time()
    out = fn(*args, **kwargs)
    spent = time.process_time() - t0
    _stats["calls"] += 1
    if spent > _stats["max_cpu_s"]:
        _stats["max_cpu_s"], _stats["slowest"] = spent, getattr(fn, "__name__", str(fn))
    assert spent < CPU_BOUND_S, (getattr(fn, "__name__", fn), spent)
    return out


# ------------------------------------------------------------------------------ strategies

NUMBERS = ["0", "1", "50", "80", "99", "100", "101", "1000", "-1", "-0", "0.0", "1.0", "0.5",
           ".5", "1.", "100.0", "99.999", "100.0000001", "1e2", "nan", "NaN", "inf", "-inf",
           "0,5", "80%", "80 %", "8/10", "9" * 400, "0." + "9" * 400, "",
           "\uff18\uff10",  # fullwidth 80
           "\u0668\u0660",  # Arabic-Indic 80
           "\u096e\u0966",  # Devanagari 80
           "\u2078\u2070",  # superscript 80
           "\U0001d7d6\U0001d7ce"]  # fmt: skip  # mathematical bold 80
LABELS = ["Confidence", "confidence", "CONFIDENCE", "**Confidence**", "Confidence level",
          "Confidently", "Confidence-level", "\uff23onfidence", "CONF\u0130DENCE",
          "conf\u0131dence", "Meta", "meta", "Metascore", "Meta score", "Meta-score", "META",
          "Metabolism", "Meta-analysis", "_Meta_", "# Confidence", "> Meta", "Meta_score",
          "Con\u200bfidence"]  # fmt: skip
ANSWERS = [RIGHT, WRONG, "", ".", "...", "**", " ", "\n\n", "\u2014", "\u3002", "The answer is",
           "(A)", "A", "100", "\\boxed{100}", "The answer is (A).", "\u7b54\u6848\u662f A",
           "answer: ", "\u200b", "\x00", "\ud800"]  # fmt: skip

_tag_line = st.builds(
    lambda lead, label, sep, number, unit, tail: f"{lead}{label}{sep}{number}{unit}{tail}",
    st.sampled_from(["", " ", "\t", "* ", "**", "> ", "  - "]),
    st.sampled_from(LABELS),
    st.sampled_from([": ", ":", " = ", " ", ": **", "\uff1a", " - ", ":\t"]),
    st.sampled_from(NUMBERS),
    st.sampled_from(["", "%", " percent", "/10", "**", " out of 100"]),
    st.sampled_from(["", " ", " because", "\r", " (sure)"]),
)
_answer = st.one_of(st.sampled_from(ANSWERS), st.text(max_size=60))
_break = st.sampled_from(["\n", "\r\n", "\n\n", "\u2028", " ", "\n \n"])


def _assemble(answer: str, tags: list[str], sep: str, tail: str) -> str:
    return sep.join([answer, *tags]) + tail


_structured = st.builds(
    _assemble,
    _answer,
    st.lists(_tag_line, max_size=4),
    _break,
    st.one_of(st.just(""), st.text(max_size=20), st.sampled_from(["<|im_end|>", "\n<eos>"])),
)
_degenerate = st.builds(
    lambda chunk, times, head: head + chunk * times,
    st.sampled_from(
        [
            " ",
            "\n",
            "Confidence: 80\n",
            "Meta\n",
            "<eos>",
            "\\boxed{",
            "answer: ",
            "A ",
            "{",
            "*",
            "1",
            "Confidence",
            "\u00a0",
            "x\n",
        ]
    ),
    st.sampled_from([1, 1000, 30_000, 300_000]),
    st.sampled_from(["", RIGHT + "\n", "Confidence: 80\n"]),
)
_chat = st.builds(lambda text: [{"role": "assistant", "content": text}], _structured)
completions = st.one_of(_structured, _structured, _degenerate, _chat, st.none(), st.integers())
targets = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 0.5, 1e-300, 1 - 1e-16, -0.0, None, "0.25", "abc", [0.5], {}, True]),
)


_TARGETED = ("faithful", "metacog_score")


def _wrong_panel(g) -> list[str]:
    """Well-formed wrong answers at every confidence and meta level."""
    return [
        f"{WRONG}\nConfidence: {q}" + (f"\nMeta: {m}" if m is not None else "")
        for q in (0, 10, 50, 90, 100)
        for m in (None, 0, 100)
    ]


def _call_all(comps: list, g) -> dict[str, list]:
    n = len(comps)
    out = {}
    for f in make_rewards(REWARD_NAMES, grader=GRADER, target="item"):
        values = _timed(
            f,
            prompts=["p"] * n,
            completions=comps,
            benchmark=["mmlu_pro"] * n,
            item_id=[ITEM.item_id] * n,
            source=["bundled"] * n,
            intrinsic_confidence=[g] * n,
            log_metric=lambda k, v: None,
        )
        assert len(values) == n
        assert all(v is None or (isinstance(v, float) and math.isfinite(v)) for v in values)
        out[SHORT[f.__name__]] = values
    return out


# ------------------------------------------------------------------------------ properties


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(comps=st.lists(completions, min_size=1, max_size=3), g=targets)
def test_rewards_never_raise_and_never_pay_malformed_more_than_wrong(comps, g):
    _stats["examples"] += 1
    texts = [c if isinstance(c, str) else "" for c in comps]
    _stats["max_chars"] = max(_stats["max_chars"], *map(len, texts))
    panel = _wrong_panel(g)
    values = _call_all([*comps, *panel], g)
    n = len(comps)
    parsed = [parse_completion(c) for c in comps]
    for name, vals in values.items():
        wrong = [v for v in vals[n:] if v is not None]
        for p, v in zip(parsed, vals[:n]):
            if v is None:
                continue
            if not p.has_answer:
                assert v == FLOORS[name], (name, p)
                # correctness: a wrong answer and no answer both get 0; a malformed target
                # gives every completion the floor
                tie = name == "correctness" or (name in _TARGETED and read_unit(g)[1] == "bad")
                if not tie and wrong:
                    assert v < min(wrong), (name, p, v, min(wrong))
            if not (p.has_answer and p.has_confidence) and wrong:
                assert v <= min(wrong), (name, p, v, min(wrong))


_PRESETS = {
    "default": None,  # format 0.5, correctness 1, brier 0.5, faithful 3
    "official-like": {
        "strict_format": 3.0,
        "soft_format": 3.0,
        "correctness": 1.0,
        "brier": 1.0,
        "faithful": 12.0,
    },
}
_SCORERS = {name: RewardScorer(w) for name, w in _PRESETS.items()}
_ANSWERED = [RIGHT, WRONG, f"{WRONG}\nConfidence: 100\nConfidence: 0",
             f"{WRONG}\nConfidence: 100\nMeta: 100\ntrailing", "x\nConfidence: 999",
             f"{WRONG}\nMeta: 0\nConfidence: 100"]  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(comp=completions, g=targets)
def test_no_answer_totals_below_every_answered_completion(comp, g):
    _stats["examples"] += 1
    if parse_completion(comp).has_answer or read_unit(g)[1] == "bad":
        return  # (a malformed label floors every completion alike: only format separates)
    label = {"benchmark": "mmlu_pro", "item_id": ITEM.item_id, "intrinsic_confidence": g}
    for name, scorer in _SCORERS.items():
        rows = _timed(scorer.score, [comp, *_ANSWERED], [label] * (1 + len(_ANSWERED)))
        ours, others = rows[0]["score"], [r["score"] for r in rows[1:]]
        assert ours < min(others), (name, comp, ours, others)


labels = st.one_of(
    st.builds(
        lambda b, i, g, s: {"benchmark": b, "item_id": i, "intrinsic_confidence": g, "source": s},
        st.sampled_from(["mmlu_pro", "squad", "nope", None, 3, ["mmlu_pro"]]),
        st.sampled_from([ITEM.item_id, "x", None, 5, [1], {"a": 1}, True, 1.5]),
        targets,
        st.sampled_from([None, "bundled", "no/such/file.jsonl", 7]),
    ),
    st.text(max_size=40),
    st.sampled_from(["{}", "[]", "null", '{"benchmark": "mmlu_pro"}', "[" * 5000, "NaN"]),
    st.binary(max_size=20),
    st.none(),
    st.integers(),
    st.builds(
        make_label,
        st.fixed_dictionaries(
            {
                "benchmark": st.just("mmlu_pro"),
                "item_id": st.just(ITEM.item_id),
                "intrinsic_confidence": targets,
            }
        ),
    ),
)


def _finite_rows(rows: list[dict]) -> None:
    for row in rows:
        assert set(row) == {"score", *FIELDS}
        assert all(isinstance(v, float) and math.isfinite(v) for v in row.values()), row


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(comps=st.lists(completions, min_size=1, max_size=3), data=st.data())
def test_entry_points_never_raise_on_any_completion_or_label(comps, data):
    _stats["examples"] += 1
    n = len(comps)
    labs = data.draw(st.lists(labels, min_size=n, max_size=n))
    extras = data.draw(st.lists(st.one_of(st.none(), st.dictionaries(st.text(max_size=5),
                                                                     targets, max_size=2)),
                                min_size=n, max_size=n))  # fmt: skip
    for c, lab, e in zip(comps, labs, extras):
        _finite_rows([_timed(compute_score, "metacog/mmlu_pro", c, lab, e)])
    _finite_rows(_timed(compute_score_batch, ["m"] * n, comps, labs, extras))
    out = _timed(reward_func, ["P" + (c if isinstance(c, str) else "") for c in comps],
                 ["P"] * n, labs)  # fmt: skip
    for values in [out["rewards"], out["scores"], *out["extra_logs"].values()]:
        assert values.shape == (n,) and bool(values.isfinite().all())


# The number read as the confidence never reaches the grader: a unique number in the tag line
# that the answer does not hold.
_SENTINEL = "37"


@settings(max_examples=300, deadline=None)
@given(
    answer=st.sampled_from([a for a in ANSWERS if _SENTINEL not in a]),
    tag=st.builds(
        lambda lead, label, sep, unit: f"{lead}{label}{sep}{_SENTINEL}{unit}",
        st.sampled_from(["", " ", "**", "> "]),
        st.sampled_from(LABELS),
        st.sampled_from([": ", ":", " = ", " ", "\uff1a"]),
        st.sampled_from(["", "%", " percent"]),
    ),
    meta=st.sampled_from(["", "\nMeta: 90", "\nMeta: 37", "\nConfidence: 0"]),
    brk=_break,
)
def test_the_confidence_read_never_reaches_the_grader(answer, tag, meta, brk):
    _stats["examples"] += 1
    seen: list[str] = []
    grader = ItemGrader()
    bench = grader.benchmark("mmlu_pro")
    real = bench.grade

    def spy(item, response):
        seen.append(response)
        return real(item, response)

    bench.grade = spy  # type: ignore[method-assign]
    text = f"{answer}{brk}{tag}{meta}"
    p = parse_completion(text)
    make_rewards(["correctness"], grader=grader)[0](
        prompts=None, completions=[text], benchmark=["mmlu_pro"], item_id=[ITEM.item_id]
    )
    if p.has_confidence and p.confidence == pytest.approx(0.37):
        assert all(_SENTINEL not in s for s in seen), (text, seen)
    assert all(s == p.answer for s in seen)  # the grader sees the answer part, nothing else


# Every benchmark's grader through the rewards' grading entry (SciCode runs code in the
# sandbox, seconds per answer: its attacks are in tests/test_rlmf_rewards_attacks.py).
_BENCHES = ("mmlu_pro", "squad", "mathbench", "legalbench", "omni_math")
_ITEMS = {b: get_benchmark(b).load("bundled") for b in _BENCHES}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bench=st.sampled_from(_BENCHES),
    index=st.integers(0, 9),
    comp=st.one_of(_structured, _degenerate),
)
def test_every_grader_entry_is_bounded_and_never_fails(bench, index, comp):
    _stats["examples"] += 1
    item = _ITEMS[bench][index % len(_ITEMS[bench])]
    answer = parse_completion(comp).answer
    verdict = _timed(GRADER.verdict, bench, item.item_id, "bundled", answer)
    assert verdict.status == "ok" and verdict.correct in (0.0, 1.0), (bench, verdict)
