"""Probe rationales whose wording carries the simulated model's latent uncertainty.

The text analyses (surface features of the rationale, inline-solving detection) need texts in
which the signal is where real models put it: unsure models hedge, say "wait" and call the
item tricky or obscure; sure ones call it standard and write less; reasoning models that solve
inline show derivation steps with operators and converge on a result. Every choice draws from a
Generator fixed by the (item, model) cell, so a rationale is reproducible. The words that belong
to a benchmark (its topic, what its items hinge on) come from its record's ``wording``.
"""

from __future__ import annotations

import re

import numpy as np

from metacog_tasks.benchmarks import UnknownBenchmarkError, benchmark_class
from metacog_tasks.benchmarks.base import Item, SimWording

__all__ = ["numeric_reply", "probe_reply", "topic_of", "wording_of"]

#: The wording of an item whose benchmark is not registered.
_UNKNOWN = SimWording(topic="")

#: Both lists start with consonants, so "a {word}" reads right.
_EASY_WORDS = ("standard", "well-known", "basic", "familiar", "routine", "straightforward")
_HARD_WORDS = ("tricky", "niche", "hard", "subtle", "demanding", "thorny", "specialised")
#: Lower-case hedges are sentence adverbs ("Probably, ..."); the others lead a clause.
_HEDGES = (
    "probably",
    "I think",
    "perhaps",
    "It may be that",
    "I believe",
    "possibly",
    "I suspect",
)
_SURE_OPENERS = (
    "This is a {easy} {topic} question that I have seen many times.",
    "I know this {topic} material well; it is {easy}.",
    "This asks about a {easy} {topic} fact that I can recall directly.",
)
_FAIR_OPENERS = (
    "This looks like a fairly {easy} {topic} question, though it needs some care.",
    "I have a reasonable grasp of this {topic} topic.",
    "The {topic} content here is familiar enough, with one detail to get right.",
)
_TORN_OPENERS = (
    "This {topic} question is {hard} in places and I am not certain about it.",
    "I am unsure here: the {topic} point involved is somewhat {hard}.",
    "Part of this {topic} question is clear to me, but a {hard} detail is not.",
)
_DOUBT_OPENERS = (
    "This seems like a {hard} {topic} question and I do not recall the specifics.",
    "I doubt I know this; it depends on {hard} {topic} details.",
    "The question turns on a {hard} {topic} point that I cannot pin down.",
)
_SURE_CLOSERS = (
    "I expect to get it right.",
    "So I should answer it correctly.",
    "I am confident about this one.",
)
_FAIR_CLOSERS = (
    "I will {hedge} get it right.",
    "On balance I {hedge_verb} answer it correctly.",
)
_DOUBT_CLOSERS = (
    "I would {hedge} get it wrong.",
    "I cannot be sure of the answer, so it is unlikely I get it right.",
    "I do not think I can answer it reliably.",
)
_WAIT = (
    "Wait, on second thought, {claim}.",
    "Wait, actually {claim}.",
    "Hmm, wait: {claim}.",
)
_WAIT_DOWN = (
    "the wording hides a {hard} case I might miss",
    "I may be confusing it with a similar question",
    "I am not sure I remember the exact detail",
)
_WAIT_UP = (
    "I do remember the key fact behind it",
    "the core of it is something I know",
    "it reduces to a {easy} case",
)
_CAUSAL = (
    "because it depends on {what}",
    "since the answer hinges on {what}",
    "as it requires {what}",
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def wording_of(item: Item) -> SimWording:
    """The wording of an item's benchmark (its record's ``wording``)."""
    try:
        return benchmark_class(item.benchmark).wording
    except UnknownBenchmarkError:
        return _UNKNOWN


def topic_of(item: Item) -> str:
    """A short topic phrase for an item (its category, "math", "legal", ...)."""
    template = wording_of(item).topic
    category = str(item.meta.get("category") or item.meta.get("subject") or "").strip()
    if "{category}" in template:
        return category.replace("_", " ") or "general"
    return template or category or "general"


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]


def _fill(template: str, rng: np.random.Generator, topic: str) -> str:
    hedge = _pick(rng, ("probably", "likely", "most likely"))
    return template.format(
        topic=topic,
        easy=_pick(rng, _EASY_WORDS),
        hard=_pick(rng, _HARD_WORDS),
        hedge=hedge,
        hedge_verb=_pick(rng, ("should", "think I can", "expect to")),
    )


def _hedged(sentence: str, rng: np.random.Generator) -> str:
    hedge = _pick(rng, _HEDGES)
    body = sentence if sentence[:2] == "I " else sentence[0].lower() + sentence[1:]
    if hedge[0].islower():  # an adverb: "Probably, ..."
        return f"{hedge[0].upper()}{hedge[1:]}, {body}"
    return f"{hedge} {body}"


def _numbers(question: str, rng: np.random.Generator) -> list[float]:
    found = [float(x) for x in _NUMBER.findall(question)][:4]
    while len(found) < 3:
        found.append(float(rng.integers(2, 13)))
    return found


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.4g}"


def _derivation(item: Item, rng: np.random.Generator, checks_out: bool) -> str:
    """Worked steps with operators that converge on a result (inline solving).

    Whether the model's attempt "checks out" is its own belief (its felt state), not whether
    the attempt is right: the text knows no more than the model does.
    """
    a, b, c = _numbers(item.question, rng)[:3]
    ops = [("+", a + b), ("*", a * b), ("-", a - b)]
    op, first = ops[int(rng.integers(len(ops)))]
    second = first * c if rng.random() < 0.5 else first + c
    joiner = "*" if second == first * c else "+"
    if not checks_out:
        second = second + float(rng.integers(1, 4)) * (1 if rng.random() < 0.5 else -1)
    steps = [
        "Let me work it out directly.",
        f"Step 1: {_fmt(a)} {op} {_fmt(b)} = {_fmt(first)}.",
        f"Step 2: {_fmt(first)} {joiner} {_fmt(c)} = {_fmt(second)}.",
    ]
    sketch = wording_of(item).sketch
    if sketch:
        steps.insert(1, sketch)
    if checks_out:
        steps.append(f"Therefore the result is {_fmt(second)}, and checking it confirms it.")
    else:
        steps.append(f"So I get {_fmt(second)}, though one step might not check out.")
    return " ".join(steps)


def _body(
    item: Item,
    uncertainty: float,
    rng: np.random.Generator,
    *,
    inline: bool,
    reasoning: bool,
) -> str:
    u = float(np.clip(uncertainty, 0.0, 1.0))
    topic = topic_of(item)
    if u < 0.2:
        openers, closers = _SURE_OPENERS, _SURE_CLOSERS
    elif u < 0.45:
        openers, closers = _FAIR_OPENERS, _FAIR_CLOSERS
    elif u < 0.7:
        openers, closers = _TORN_OPENERS, _DOUBT_CLOSERS if u > 0.5 else _FAIR_CLOSERS
    else:
        openers, closers = _DOUBT_OPENERS, _DOUBT_CLOSERS
    sentences = [_fill(_pick(rng, openers), rng, topic)]
    if inline:
        sentences.append(_derivation(item, rng, checks_out=u < 0.5))
    if rng.random() < 0.3 + 0.5 * u or reasoning:
        what = wording_of(item).crux
        clause = _pick(rng, _CAUSAL).format(what=what)
        sentences.append(f"It is {'hard' if u >= 0.5 else 'manageable'} {clause}.")
    # Self-correction is most frequent when the model is torn; it turns towards the verdict.
    if rng.random() < 0.7 * (1.0 - abs(2.0 * u - 1.0)) + 0.1 * u:
        claim = _fill(_pick(rng, _WAIT_DOWN if u >= 0.5 else _WAIT_UP), rng, topic)
        sentences.append(_pick(rng, _WAIT).format(claim=claim))
    # Hedges: about 3u of them, at most one per sentence, never inside a derivation.
    free = [i for i, x in enumerate(sentences) if not x.startswith(("Let me", "Wait", "Hmm"))]
    n_hedges = min(int(rng.poisson(3.0 * u)), len(free))
    for i in rng.choice(free, size=n_hedges, replace=False) if n_hedges else ():
        sentences[int(i)] = _hedged(sentences[int(i)], rng)
    sentences.append(_fill(_pick(rng, closers), rng, topic))
    return " ".join(sentences)


def probe_reply(
    item: Item,
    *,
    yes: bool,
    uncertainty: float,
    rng: np.random.Generator,
    inline: bool = False,
    reasoning: bool = False,
) -> str:
    """A Yes/No probe reply: a short rationale, then the line ``Answer: Yes|No``.

    Args:
        item: The item probed.
        yes: The verdict.
        uncertainty: The model's felt uncertainty (a noisy read of ``1 - P(yes)``); drives
            hedges, "wait", difficulty words and whether an inline derivation checks out.
        rng: The cell's Generator.
        inline: Whether the model solves the item in the rationale (derivation steps).
        reasoning: Whether the model is a reasoning model (longer rationales).
    """
    body = _body(item, uncertainty, rng, inline=inline, reasoning=reasoning)
    return f"{body}\nAnswer: {'Yes' if yes else 'No'}"


def numeric_reply(
    item: Item,
    *,
    confidence: float,
    uncertainty: float,
    rng: np.random.Generator,
    inline: bool = False,
    reasoning: bool = False,
) -> str:
    """A numeric probe reply: a short rationale, then ``Confidence: N`` (0-100)."""
    body = _body(item, uncertainty, rng, inline=inline, reasoning=reasoning)
    return f"{body}\nConfidence: {round(confidence)}"
