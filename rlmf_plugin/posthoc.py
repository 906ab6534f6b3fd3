"""Selection scores as the official code computes them: post-hoc judgement, gold faithfulness.

For each candidate item the model answers ``K`` times with a plain prompt (the benchmark's
solve prompt, no confidence format; the official sampling asks it to convey uncertainty in
words). Then, per the official ``dynamic_score_samples.py``:

* the **metacognitive score** is the model's post-hoc judgement of a (question, answer) pair,
  asked separately: how confident it is, 0-100, that the decisiveness of its answer's wording
  matches its internal confidence (:data:`POSTHOC_PROMPT`, this project's words for the same
  question, with a metacognitive system message); an unreadable reply is no score; the first
  answer's score (``aggregate="first"``, the sample config) or the mean over the ``K``;
* the **active-learning baseline's** score (``dynamic_score_samples_by_gold_faithfulness.py``)
  is the gold faithfulness of the first answer, ``1 - |dec - conf|``: ``dec`` its decisiveness
  (a judge model's 0-1 rating, as the official Gemini judge, or offline the inventory's value
  of the most hedged phrase it uses, 1 for none) and ``conf`` its consistency among the ``K``
  answers (:mod:`rlmf_plugin.consistency`).

The official code rates decisiveness per assertion of long answers; the benchmarks here have
one answer each, so the answer is the one assertion.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "JUDGEMENT_SYSTEM",
    "POSTHOC_PROMPT",
    "lexical_decisiveness",
    "posthoc_scores",
    "read_score",
]

#: The metacognitive system message of the judgement query.
JUDGEMENT_SYSTEM = (
    "You are an agent with high metacognitive sensitivity and a clear awareness of your own "
    "internal confidence and uncertainty."
)
#: The post-hoc judgement (the official question, this project's words).
POSTHOC_PROMPT = (
    "Question: {question}\nYour answer: {answer}\nAbove are a question and your own answer to "
    "it. On a scale of 0 to 100, how confident are you that how decisively your answer is "
    "worded matches your true internal confidence in that answer? Reply with a single integer "
    "from 0 to 100 and no other text."
)
_INT = re.compile(r"^\s*(\d{1,3})(?:\.\d+)?\s*%?\s*$")


def read_score(text: str | None) -> float:
    """A reply of one number 0-100 as a value in [0, 1]; NaN for anything else (the
    official parser's ``float(reply)``, which fails on any other text)."""
    if not text:
        return math.nan
    m = _INT.match(text[:32])
    if m is None or int(m.group(1)) > 100:
        return math.nan
    return int(m.group(1)) / 100


def lexical_decisiveness(text: str, inventory: Sequence[Any] | None = None) -> float:
    """The decisiveness of ``text`` from the hedge inventory: the value of the most hedged
    inventory phrase it contains (word-bounded, any case), 1.0 when it uses none."""
    from rlmf_plugin.hedges import INVENTORY

    low = " ".join(str(text).lower().split())
    values = [
        h.decisiveness
        for h in (inventory or INVENTORY)
        if re.search(rf"(?<!\w){re.escape(h.phrase.lower())}(?!\w)", low)
    ]
    return min(values) if values else 1.0


def _plain_prompt(row: Mapping[str, Any]) -> Any:
    """The row's prompt without the RLMF format instruction."""
    from rlmf_plugin._format import FORMAT_INSTRUCTION

    prompt = row["prompt"]
    if isinstance(prompt, str):
        return prompt.replace(FORMAT_INSTRUCTION, "")
    return [
        {**m, "content": str(m.get("content", "")).replace(FORMAT_INSTRUCTION, "")} for m in prompt
    ]


def posthoc_scores(
    rows: Sequence[Mapping[str, Any]],
    client: Any,
    *,
    samples: int = 1,
    aggregate: str = "first",
    decisiveness: Any = None,
    grader: Any = None,
) -> list[dict[str, Any]]:
    """Rows with ``meta_confidence`` (the post-hoc judgement) and ``active_score`` (gold
    faithfulness of the first answer), plus ``posthoc_answers``, ``posthoc_meta`` (each answer's
    judgement, None when unreadable), ``posthoc_decisiveness`` and ``posthoc_consistency``.

    Args:
        rows: Dataset rows (``prompt``, ``question``, ``benchmark``, ``item_id``, ``source``).
        client: The policy (:class:`~rlmf_plugin.judge.ModelClient`: ``ask(prompts)``).
        samples: Answers per item (official: 20).
        aggregate: ``first`` (official sample config) or ``mean`` of the judgements.
        decisiveness: A judge client rating decisiveness 0-1; the inventory when None.
        grader: For answer equivalence (an :class:`~rlmf_plugin._grading.ItemGrader`).

    Raises:
        ValueError: ``samples < 1`` or an unknown ``aggregate``.
    """
    from rlmf_plugin._grading import ItemGrader
    from rlmf_plugin.consistency import agreement, answer_class_labels
    from rlmf_plugin.hedges import DECISIVENESS_PROMPT, read_rating

    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    if aggregate not in ("first", "mean"):
        raise ValueError(f"aggregate must be 'first' or 'mean', got {aggregate!r}")
    grader = grader or ItemGrader()
    answers = client.ask([_plain_prompt(r) for r in rows for _ in range(samples)])
    judgements = []
    for i, r in enumerate(rows):
        question = str(r.get("question") or _plain_prompt(r))
        for a in answers[i * samples : (i + 1) * samples]:
            judgements.append([
                {"role": "system", "content": JUDGEMENT_SYSTEM},
                {"role": "user", "content": POSTHOC_PROMPT.format(question=question,
                                                                  answer=a or "")},
            ])  # fmt: skip
    metas = [read_score(x) for x in client.ask(judgements)]
    firsts = [answers[i * samples] or "" for i in range(len(rows))]
    if decisiveness is not None:
        prompts = [DECISIVENESS_PROMPT.format(sentence=a) for a in firsts]
        decs = [read_rating(x) for x in decisiveness.ask(prompts)]
    else:
        decs = [lexical_decisiveness(a) for a in firsts]
    out = []
    for i, r in enumerate(rows):
        chunk = answers[i * samples : (i + 1) * samples]
        m = metas[i * samples : (i + 1) * samples]
        bench, item, source = str(r.get("benchmark")), r.get("item_id"), r.get("source")
        extracted, ys = [], []
        for k, a in enumerate(chunk):
            verdict, ext = grader.extract(bench, item, source, a or "")
            extracted.append(ext if ext is not None else f"\x00none{k}")
            ys.append(1.0 if verdict.correct == 1.0 else 0.0)
        conf = agreement(answer_class_labels(bench, extracted, ys))[0] if chunk else math.nan
        valid = [x for x in m if not math.isnan(x)]
        meta = m[0] if aggregate == "first" else (sum(valid) / len(valid) if valid else math.nan)
        dec = decs[i]
        active = 1.0 - abs(dec - conf) if not (math.isnan(dec) or math.isnan(conf)) else math.nan
        out.append({
            **dict(r),
            "meta_confidence": None if math.isnan(meta) else float(meta),
            "active_score": None if math.isnan(active) else float(active),
            "posthoc_answers": [a or "" for a in chunk],
            "posthoc_meta": [None if math.isnan(x) else float(x) for x in m],
            "posthoc_decisiveness": None if math.isnan(dec) else float(dec),
            "posthoc_consistency": float(conf),
        })  # fmt: skip
    return out
