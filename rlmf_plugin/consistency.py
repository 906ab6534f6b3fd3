"""Intrinsic confidence as agreement among sampled answers (RLMF's faithful target).

The intrinsic confidence ``g`` of an answer is the share of the ``n`` sampled answers to the
same question (itself included) that support it: ``g_j = (1/n) sum_i J(i, j)``. ``J`` is
answer equivalence through the benchmark's own normaliser (:func:`equivalent`: graded-correct
answers are one answer; others match by the benchmark's extracted answer under SQuAD's
normaliser, math through math-verify), or an LLM judge's verdict on "is this answer
consistent with that one" (:mod:`rlmf_plugin.judge`), as the official code asks it. An
unanswered sample supports nothing.

Three places use it, so training and evaluation measure one target:

* :class:`OnPolicyTarget`, the default faithful target of training (the official code's): the
  ``n`` answers are the completions of the same GRPO group (the same prompt in the batch,
  gathered across processes when a ``gather`` is given);
* ``rlmf eval`` (:mod:`rlmf_plugin.evaluate`): the ``k`` sampled attempts of an item;
* ``rlmf build``: the per-item summary ``sum_c (n_c/k)^2`` (the mean of ``g`` over the k harness
  samples), the offline item-level target.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

__all__ = [
    "OfflineTarget",
    "OnPolicyTarget",
    "agreement",
    "answer_class_labels",
    "equivalent",
    "judged_agreement",
]


class PairJudge(Protocol):
    """Anything that scores ``(context, assertion)`` pairs: 1 supported, 0 not, 0.5 unsure."""

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


def equivalent(benchmark: str, a: str | None, b: str | None) -> bool:
    """Whether two extracted answers are the same answer, as the benchmark's record says
    (:meth:`~metacog_tasks.benchmarks.Benchmark.same_answer`: equal after normalisation, math
    through math-verify; an unregistered benchmark: equal after normalisation)."""
    from metacog_tasks.benchmarks import Benchmark, UnknownBenchmarkError, benchmark_class

    if a is None or b is None:
        return False
    try:
        record = benchmark_class(benchmark)
    except UnknownBenchmarkError:
        record = Benchmark
    return record.same_answer(a, b)


def answer_class_labels(
    benchmark: str,
    answers: Sequence[str | None],
    correct: Sequence[float],
    *,
    same: Callable[[str, str | None, str | None], bool] = equivalent,
) -> list[int]:
    """The equivalence class of each sampled answer: ``-1`` for the correct ones (one class),
    then ``0, 1, ...`` for the classes of the others in order of first appearance. A ``None``
    answer (nothing extracted) is a class of its own, equal to no other."""
    labels: list[int] = []
    reps: list[str | None] = []
    for a, y in zip(answers, correct):
        if y == 1.0:
            labels.append(-1)
            continue
        for i, rep in enumerate(reps):
            if same(benchmark, rep, a):
                labels.append(i)
                break
        else:
            labels.append(len(reps))
            reps.append(a)
    return labels


def agreement(labels: Sequence[int]) -> list[float]:
    """``g_j``: the share of the answers (itself included) in answer ``j``'s class."""
    n = len(labels)
    counts: dict[int, int] = {}
    for lab in labels:
        counts[lab] = counts.get(lab, 0) + 1
    return [counts[lab] / n for lab in labels]


def judged_agreement(answers: Sequence[str | None], judge: PairJudge) -> list[float]:
    """``g_j = (1 + sum_{i != j} J(answer_i, answer_j)) / n`` with an LLM judge's ``J``.

    An answer supports itself (1, not asked); an unanswered sample (``None``) supports nothing
    and has no intrinsic confidence (NaN).
    """
    n = len(answers)
    pairs, where = [], []
    for j, a in enumerate(answers):
        for i, context in enumerate(answers):
            if i != j and a is not None and context is not None:
                pairs.append((context, a))
                where.append(j)
    scores = judge.judge(pairs) if pairs else []
    total = [1.0 if a is not None else math.nan for a in answers]
    for j, s in zip(where, scores):
        total[j] += float(s)
    return [t / n for t in total]


def _key(prompt: Any, bench: Any, item: Any, source: Any) -> str:
    try:
        p = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    except (TypeError, ValueError):  # an object JSON cannot hold: its text
        p = str(prompt)
    return json.dumps([p, str(bench), str(item), str(source)])


class OnPolicyTarget:
    """The official on-policy faithful target: each completion's ``g`` among its group.

    A group is every completion of the batch with the same prompt and item (TRL repeats each
    prompt ``num_generations`` times); with ``gather`` (a function that concatenates a list over
    all training processes in rank order, e.g. ``accelerate.utils.gather_object``), groups that
    straddle processes are joined first. A completion's answer is graded by ``grader`` (the
    reward functions' shared :class:`~rlmf_plugin._grading.ItemGrader`: each answer graded once),
    and ``J`` is answer equivalence (:func:`answer_class_labels`) or ``judge``'s verdict.

    Called as a :data:`~rlmf_plugin.rewards.Target`: ``target(prompts, parsed, columns)`` ->
    one value per completion (None where the row names no item).
    """

    def __init__(
        self,
        grader: Any,
        *,
        judge: PairJudge | None = None,
        gather: Callable[[list[Any]], list[Any]] | None = None,
    ) -> None:
        self.grader = grader
        self.judge = judge
        self.gather = gather
        self._last: tuple[Any, Any, list[float | None]] | None = None

    def __call__(
        self, prompts: Sequence[Any] | None, parsed: Sequence[Any], columns: Mapping[str, Any]
    ) -> list[float | None]:
        last = self._last
        # faithful and metacog_score ask for the same batch: compute it once
        if last is not None and last[0] is parsed and last[1] is prompts:
            return last[2]
        given = prompts
        n = len(parsed)
        prompts = list(prompts) if prompts is not None else [""] * n
        cols = {c: _col(columns, c, n) for c in ("benchmark", "item_id", "source")}
        rows = []
        for i, p in enumerate(parsed):
            b, it, s = cols["benchmark"][i], cols["item_id"][i], cols["source"][i]
            rows.append(
                {
                    "key": _key(prompts[i] if i < len(prompts) else "", b, it, s),
                    "bench": b,
                    "item": it,
                    "source": s,
                    "answer": p.answer if p.has_answer else None,
                }
            )
        offset = 0
        everyone = rows
        if self.gather is not None:
            sizes = self.gather([n])
            rank_sizes = [int(x) for x in sizes]
            everyone = list(self.gather(rows))
            mine = [k for k, size in enumerate(rank_sizes) if size == n]
            # our rows are the slice that holds exactly our own objects, in rank order
            offset = next(
                (
                    sum(rank_sizes[:k])
                    for k in mine
                    if everyone[sum(rank_sizes[:k]) : sum(rank_sizes[:k]) + n] == rows
                ),
                0,
            )
        values = self._values(everyone)
        out = values[offset : offset + n]
        self._last = (parsed, given, out)
        return out

    def _values(self, rows: Sequence[Mapping[str, Any]]) -> list[float | None]:
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(r["key"], []).append(i)
        out: list[float | None] = [None] * len(rows)
        for idx in groups.values():
            first = rows[idx[0]]
            if _missing(first["bench"]) or _missing(first["item"]):
                continue  # no item named: nothing to compare with
            answers = [rows[i]["answer"] for i in idx]
            if self.judge is not None:
                gs = judged_agreement(answers, self.judge)
            else:
                gs = self._equivalence(str(first["bench"]), first, answers)
            for i, g in zip(idx, gs):
                out[i] = None if g is None or math.isnan(g) else g
        return out

    def _equivalence(
        self, bench: str, row: Mapping[str, Any], answers: Sequence[str | None]
    ) -> list[float]:
        extracted: list[str | None] = []
        correct: list[float] = []
        for k, a in enumerate(answers):
            if a is None:  # no answer: a class of its own
                extracted.append(None)
                correct.append(0.0)
                continue
            verdict, ext = self.grader.extract(bench, row["item"], row["source"], a)
            if verdict.status == "bad_label":
                return [math.nan] * len(answers)
            extracted.append(ext if ext is not None else f"\x00unextracted{k}")
            correct.append(1.0 if verdict.correct == 1.0 else 0.0)
        labels = answer_class_labels(bench, extracted, correct)
        unanswered = [a is None for a in answers]
        # each unanswered sample is its own class (never equal to another)
        base = max(labels, default=0) + 1
        labels = [base + k if u else lab for k, (lab, u) in enumerate(zip(labels, unanswered))]
        return agreement(labels)


class OfflineTarget:
    """The offline answer-level target: the share of the item's ``k`` harness samples
    (columns ``sample_answers``, ``sample_correct`` that ``rlmf build`` writes) equivalent to the
    completion's answer. Stale as the policy moves (it is another model's, or an earlier
    checkpoint's, distribution), but needs no group: it suits engines that score one
    response at a time."""

    def __init__(self, grader: Any) -> None:
        self.grader = grader

    def __call__(
        self, prompts: Sequence[Any] | None, parsed: Sequence[Any], columns: Mapping[str, Any]
    ) -> list[float | None]:
        n = len(parsed)
        cols = {
            c: _col(columns, c, n)
            for c in ("benchmark", "item_id", "source", "sample_answers", "sample_correct")
        }
        out: list[float | None] = []
        for i, p in enumerate(parsed):
            b, it, s = cols["benchmark"][i], cols["item_id"][i], cols["source"][i]
            answers, correct = cols["sample_answers"][i], cols["sample_correct"][i]
            if _missing(b) or _missing(it) or not isinstance(answers, (list, tuple)) or not answers:
                out.append(None)
                continue
            if not p.has_answer:
                out.append(0.0)
                continue
            verdict, ext = self.grader.extract(str(b), it, s, p.answer)
            ys = list(correct) if isinstance(correct, (list, tuple)) else [0.0] * len(answers)
            ys = [1.0 if y == 1.0 else 0.0 for y in ys[: len(answers)]]
            ys += [0.0] * (len(answers) - len(ys))
            y = 1.0 if verdict.correct == 1.0 else 0.0
            labels = answer_class_labels(str(b), [*map(_text, answers), ext], [*ys, y])
            out.append(sum(lab == labels[-1] for lab in labels[:-1]) / len(answers))
        return out


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _missing(value: Any) -> bool:
    from rlmf_plugin._grading import _missing as missing

    return missing(value)


def _col(columns: Mapping[str, Any], name: str, n: int) -> list[Any]:
    values = columns.get(name)
    if values is None or isinstance(values, (str, bytes, Mapping)):
        return [None] * n
    values = list(values)
    return values if len(values) == n else [None] * n
