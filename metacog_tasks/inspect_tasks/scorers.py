"""Scorers: grade the solve through the benchmark, pair it with one probe's confidence.

One scorer per (probe, confidence method), named after it (``prospective_verbal``,
``counterfactual_sampled``, ...), so a task that asks several probes reports each with its own
metrics. ``Score.value`` is ``{"confidence", "correct", "parsed", "graded"}`` (floats, NaN when
unknown): Inspect metrics cannot see ``state.metadata``. The probe and solve texts, the parse and
grade statuses and the record-table fields are in ``Score.metadata``; ``Score.explanation``
shows the probe and the solve side by side in ``inspect view``.

The item is graded once per sample (the grade is cached in the sample's store and shared by all
scorers). Model code (a benchmark whose record ``runs_code``) runs in the project's sandbox, or in
the Inspect sandbox of the sample when the eval has one (``-T sandbox=docker`` or
``inspect eval --sandbox ...``). A problem solved in one conversation (``mode=problem``) gets one
score whose value holds every tested step's pair.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from metacog_tasks.benchmarks.base import Grade
from metacog_tasks.inspect_tasks._naming import qualified
from metacog_tasks.inspect_tasks.dataset import load_benchmark_items
from metacog_tasks.inspect_tasks.metrics import default_metrics
from metacog_tasks.inspect_tasks.problems import grade_problem_steps, step_outcomes
from metacog_tasks.inspect_tasks.sandbox import current_sandbox, grade_in_inspect_sandbox
from metacog_tasks.inspect_tasks.solvers import (
    CONFIDENCES,
    KIND_NAMES,
    PROBE_KINDS,
    probe_key,
    probe_outcomes,
    solve_replies,
)
from metacog_tasks.inspect_tasks.store import (
    STORE_GRADE,
    grade_from_store,
    grade_to_store,
    stored_steps,
)
from metacog_tasks.sandbox import SandboxUnavailableError

__all__ = ["SCORE_KEYS", "grade_sample", "metacog_scorer"]

log = logging.getLogger(__name__)

#: The keys of ``Score.value``.
SCORE_KEYS: tuple[str, ...] = ("confidence", "correct", "parsed", "graded")
_EXCERPT = 2000


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + " [...]"


async def grade_sample(
    state: TaskState,
    benchmark: str,
    data: str | None = None,
    split: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Grade:
    """Grade a sample's solve replies once (cached on the sample; shared by all scorers).

    A grader that raises does not lose the run: the item is ungraded (``correct`` NaN,
    ``status="grader_error"``), as in the lm-eval tasks.

    Args:
        state: The sample's state after :func:`~metacog_tasks.inspect_tasks.solvers.metacog_solve`.
        benchmark: Benchmark name.
        data: Item source.
        split: Dataset split.
        options: Benchmark options.

    Returns:
        The grade.
    """
    cached = state.store.get(STORE_GRADE)
    if cached:
        return grade_from_store(cached)
    loaded = load_benchmark_items(benchmark, data=data, split=split, options=options)
    item = loaded.item(state.sample_id)
    _, replies = solve_replies(state)
    if not replies:
        grade = Grade(math.nan, status="no_solve", details={"error": "no solve reply stored"})
    else:
        try:
            env = current_sandbox() if loaded.benchmark.runs_code else None
            if env is not None:  # the eval has an Inspect sandbox: the model's code runs there
                grade = await grade_in_inspect_sandbox(loaded.benchmark, item, replies, env)
            else:
                # Graders can be slow (sympy, model code in a subprocess): off the event loop.
                grade = await anyio.to_thread.run_sync(
                    loaded.benchmark.grade_responses, item, replies
                )
        except SandboxUnavailableError:
            raise  # no boundary for model code: refused, loudly (not a NaN per sample)
        except Exception as exc:  # a grader bug must not lose a finished run
            log.exception("%s: grading item %s failed", benchmark, item.item_id)
            grade = Grade(math.nan, status="grader_error", details={"error": repr(exc)})
    state.store.set(STORE_GRADE, grade_to_store(grade))
    return grade


def _scorer_impl(
    probe: str,
    confidence: str,
    benchmark: str,
    data: str | None,
    split: str | None,
    options: Mapping[str, Any] | None,
) -> Scorer:
    key = probe_key(probe, confidence)

    async def score(state: TaskState, target: Target) -> Score:
        if stored_steps(state) is not None:  # mode=problem: one score, per-step values
            return await _score_problem(state, probe, confidence, benchmark, data, split, options)
        grade = await grade_sample(state, benchmark, data, split, options)
        outcomes = probe_outcomes(state)
        if key not in outcomes:
            raise ValueError(
                f"sample {state.sample_id!r}: no {key} probe was asked (the solver plan must "
                f"run metacog_probe with probe={probe!r} and confidence={confidence!r})"
            )
        outcome = outcomes[key]
        prompts, replies = solve_replies(state)
        correct = float(grade.correct)
        value: dict[str, float] = {
            "confidence": outcome.confidence,
            "correct": correct,
            "parsed": 1.0 if not math.isnan(outcome.confidence) else 0.0,
            "graded": 0.0 if math.isnan(correct) else 1.0,
        }
        probe_text = outcome.replies[0] if len(outcome.replies) == 1 else list(outcome.replies)
        solve_text = replies[0] if len(replies) == 1 else replies
        shown_probe = "\n---\n".join(_excerpt(r) for r in outcome.replies)
        shown_solve = "\n---\n".join(_excerpt(r) for r in replies)
        verdict = "unparseable" if math.isnan(outcome.confidence) else f"{outcome.confidence:g}"
        correctness = "ungraded" if math.isnan(correct) else f"{correct:g}"
        explanation = (
            f"PROBE ({key}) -> confidence {verdict}\n{shown_probe}\n\n"
            f"SOLVE -> correct {correctness} ({grade.status}; extracted {grade.extracted!r})\n"
            f"{shown_solve}"
        )
        metadata: dict[str, Any] = {
            "benchmark": benchmark,
            "item_id": str(state.sample_id),
            "probe": probe,
            "confidence_method": confidence,
            "confidence_kind": outcome.confidence_kind,
            "probe_prompt": outcome.prompt,
            "probe_text": probe_text,
            "probe_status": _probe_status(outcome.statuses, outcome.parsed),
            "probe_statuses": list(outcome.statuses),
            "n_parsed": outcome.parsed,
            "n_requested": len(outcome.replies),
            "solve_prompt": prompts[0] if len(prompts) == 1 else prompts,
            "solve_text": solve_text,
            "grade_status": grade.status,
            "grade_score": grade.score,
            "question": str(state.metadata.get("question", "")),
            "item_kind": state.metadata.get("item_kind"),
        }
        return Score(
            value=value,  # type: ignore[arg-type]  # NaN floats are valid Score values
            answer=grade.extracted,
            explanation=explanation,
            metadata=metadata,
        )

    return score


async def _score_problem(
    state: TaskState,
    probe: str,
    confidence: str,
    benchmark: str,
    data: str | None,
    split: str | None,
    options: Mapping[str, Any] | None,
) -> Score:
    """Score a problem solved in one conversation: one (confidence, correct) pair per tested
    step.

    ``Score.value`` has ``n_steps`` and ``confidence_<i>``, ``correct_<i>``, ``parsed_<i>``,
    ``graded_<i>`` per step (the metrics read them step by step), plus problem-level
    ``confidence`` (mean over steps), ``correct`` (every step passed: the main-problem score),
    ``parsed`` and ``graded``. ``Score.metadata["steps"]`` holds the step records.
    """
    key = probe_key(probe, confidence)
    grades = await grade_problem_steps(state, benchmark, data, split, options)
    steps = step_outcomes(state, key)
    if not steps or any(step["outcome"] is None for step in steps):
        raise ValueError(f"sample {state.sample_id!r}: no {key} probe was asked for every step")
    value: dict[str, float] = {"n_steps": float(len(steps))}
    records = []
    lines = []
    for i, step in enumerate(steps, start=1):
        item_id, outcome, reply = step["item_id"], step["outcome"], step["reply"]
        grade = grades.get(item_id) or Grade(math.nan, "no_solve")
        conf, correct = outcome.confidence, float(grade.correct)
        value[f"confidence_{i}"] = conf
        value[f"correct_{i}"] = correct
        value[f"parsed_{i}"] = 0.0 if math.isnan(conf) else 1.0
        value[f"graded_{i}"] = 0.0 if math.isnan(correct) else 1.0
        records.append(
            {
                "item_id": item_id,
                "question": step["question"],
                "confidence": None if math.isnan(conf) else conf,
                "correct": None if math.isnan(correct) else correct,
                "probe_prompt": outcome.prompt,
                "probe_text": outcome.replies[0]
                if len(outcome.replies) == 1
                else list(outcome.replies),
                "probe_status": _probe_status(outcome.statuses, outcome.parsed),
                "n_parsed": outcome.parsed,
                "solve_text": reply,
                "grade_status": grade.status,
                "answer": grade.extracted,
            }
        )
        lines.append(f"step {item_id}: confidence {conf:g}, correct {correct:g} ({grade.status})")
    confs = [value[f"confidence_{i}"] for i in range(1, len(steps) + 1)]
    corrects = [value[f"correct_{i}"] for i in range(1, len(steps) + 1)]
    known = [c for c in confs if not math.isnan(c)]
    value["confidence"] = sum(known) / len(known) if known else math.nan
    graded = [c for c in corrects if not math.isnan(c)]
    value["correct"] = math.nan if len(graded) < len(corrects) else float(all(graded))
    value["parsed"] = float(len(known) == len(confs))
    value["graded"] = float(len(graded) == len(corrects))
    return Score(
        value=value,  # type: ignore[arg-type]
        explanation=f"PROBES ({key}) and SOLVES, step by step\n" + "\n".join(lines),
        metadata={
            "benchmark": benchmark,
            "item_id": str(state.sample_id),
            "probe": probe,
            "confidence_method": confidence,
            "confidence_kind": KIND_NAMES[confidence],
            "mode": "problem",
            "question": str(state.metadata.get("question", "")),
            "steps": records,
        },
    )


def _probe_status(statuses: tuple[str, ...], parsed: int) -> str:
    """One status for the probe: the reply's own, or for k samples ``ok`` if any parsed."""
    if len(statuses) == 1:
        return statuses[0]
    if parsed:
        return "ok"
    if statuses and all(s == "empty" for s in statuses):
        return "empty"
    if any(s == "refusal" for s in statuses):
        return "refusal"
    return "unparseable"


def _register(probe: str, confidence: str) -> Callable[..., Scorer]:
    name = probe_key(probe, confidence)

    def factory(
        benchmark: str,
        data: str | None = None,
        split: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Scorer:
        return _scorer_impl(probe, confidence, benchmark, data, split, options)

    factory.__name__ = name
    factory.__qualname__ = name
    factory.__doc__ = (
        f"Score the {probe} probe's {confidence} confidence against the graded solve.\n\n"
        "Args:\n    benchmark: Benchmark name.\n    data: Item source.\n    split: Dataset "
        "split.\n    options: Benchmark options.\n"
    )
    return scorer(metrics=default_metrics(), name=qualified(name))(factory)


#: The registered scorers, one per (probe, confidence method), importable by name.
_SCORERS: dict[tuple[str, str], Callable[..., Scorer]] = {
    (p, c): _register(p, c) for p in PROBE_KINDS for c in CONFIDENCES
}


def metacog_scorer(
    benchmark: str,
    probe: str = "prospective",
    confidence: str = "verbal",
    data: str | None = None,
    split: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Scorer:
    """The scorer of one (probe, confidence method), named ``<probe>_<confidence>``.

    Args:
        benchmark: Benchmark name.
        probe: ``prospective`` or ``counterfactual``.
        confidence: ``verbal``, ``sampled`` or ``numeric``.
        data: Item source (as for the task).
        split: Dataset split.
        options: Benchmark options.

    Returns:
        A registered Inspect scorer whose ``Score.value`` has :data:`SCORE_KEYS`.

    Raises:
        ValueError: An unknown probe or confidence method.
    """
    try:
        factory = _SCORERS[(probe, confidence)]
    except KeyError:
        raise ValueError(
            f"no scorer for probe {probe!r} with confidence {confidence!r}; probes: "
            f"{', '.join(PROBE_KINDS)}; confidences: {', '.join(CONFIDENCES)}"
        ) from None
    return factory(benchmark, data=data, split=split, options=options)
