"""SciCode solved sub-step by sub-step in one conversation (``-T mode=problem``).

The default SciCode task (``mode=step``) has one sample per tested sub-step, as the lm-eval task:
each step's prompt shows the previous steps with their gold code, so steps are independent,
records are identical across harnesses, and every step's correctness measures that step alone.

``mode=problem`` is SciCode's own multi-turn protocol (and inspect_evals'): one sample per main
problem, whose sub-steps are asked in order in one conversation, so each step builds on the
model's *own* earlier functions. Before each tested step the probe is asked in a fresh
conversation (it sees the step, never the solve conversation). Each tested step is graded with the
model's earlier code in front of its own (a wrong earlier function can break a later step, as in
SciCode's evaluation without gold prior code). Records stay per sub-step, with the same item ids,
so ``metacog collect`` and the analysis treat both modes alike; the two modes answer different
questions and should not be mixed in one analysis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

from metacog_tasks.benchmarks.base import Grade, Item
from metacog_tasks.inspect_tasks._naming import qualified
from metacog_tasks.inspect_tasks.dataset import BenchmarkItems, load_benchmark_items
from metacog_tasks.inspect_tasks.solvers import (
    ProbeOutcome,
    _ask_probes,
    _ProbeSettings,
    parse_confidences,
    parse_probes,
    probe_plan,
)
from metacog_tasks.sandbox import SandboxUnavailableError

__all__ = [
    "NEXT_STEP_PROMPT",
    "grade_problem_steps",
    "problem_dataset",
    "problem_steps",
    "scicode_multiturn",
]

#: The user turn of every sub-step after the first, in the problem's conversation.
NEXT_STEP_PROMPT = (
    "NEXT STEP:\n{step}\n\n"
    "Implement this function:\n```python\n{header}\n\n{return_line}\n```\n\n"
    "The functions you wrote in the previous steps are available; do not import anything "
    "beyond the dependencies. Reply with the complete function in a single ```python code block."
)
_STORE_STEPS = "metacog_steps"
_STORE_STEP_GRADES = "metacog_step_grades"


def problem_steps(loaded: BenchmarkItems) -> dict[str, list[Item]]:
    """Tested sub-steps grouped by main problem, in problem and step order."""
    out: dict[str, list[Item]] = {}
    for item in loaded.items:
        out.setdefault(str(item.meta["problem_id"]), []).append(item)
    for steps in out.values():
        steps.sort(key=lambda it: int(it.meta["step_index"]))
    return out


def problem_dataset(loaded: BenchmarkItems) -> MemoryDataset:
    """One sample per SciCode main problem (``id`` = problem id)."""
    samples = []
    for problem_id, steps in problem_steps(loaded).items():
        first = steps[0]
        samples.append(
            Sample(
                id=problem_id,
                input=str(first.record.get("problem_description_main", "")).strip()
                or first.question,
                metadata={
                    "benchmark": loaded.benchmark.name,
                    "item_kind": "problem",
                    "question": str(first.record.get("problem_description_main", "")).strip(),
                    "steps": [it.item_id for it in steps],
                },
            )
        )
    return MemoryDataset(samples, name="metacog_scicode_problems", location=loaded.source)


def _turn_prompt(loaded: BenchmarkItems, sub_step: Mapping[str, Any], first: Item | None) -> str:
    if first is not None:  # the first turn is the benchmark's own solve prompt of step 1
        return loaded.benchmark.solve_prompt(first)
    return NEXT_STEP_PROMPT.format(
        step=str(sub_step["step_description_prompt"]).strip(),
        header=sub_step["function_header"],
        return_line=sub_step.get("return_line", ""),
    )


@solver(qualified("scicode_multiturn"))
def scicode_multiturn(
    probe: str | Sequence[str] = "prospective",
    confidence: str | Sequence[str] = "verbal",
    k: int = 10,
    temperature: float = 1.0,
    max_tokens: int = 256,
    seed: int | None = 0,
    data: str | None = None,
    split: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Solver:
    """Solve a SciCode problem sub-step by sub-step in one conversation, probing each step first.

    Args:
        probe: Probe(s) asked before each tested step.
        confidence: Confidence method(s).
        k: Replies per step for ``sampled``.
        temperature: Sampling temperature for ``sampled``.
        max_tokens: Token budget of a probe reply.
        seed: Base seed of the sampled replies.
        data: Item source.
        split: Dataset split.
        options: SciCode options.

    Returns:
        The solver; per-step probes and replies are stored for the scorers.

    Raises:
        ValueError: An unknown probe or confidence, ``k < 1``, ``max_tokens < 1`` or
            ``temperature <= 0`` with ``sampled``.
    """
    methods = parse_confidences(confidence)
    settings = _ProbeSettings.checked(methods, k, temperature, max_tokens, seed)
    plan = probe_plan(parse_probes(probe), methods)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        loaded = load_benchmark_items("scicode", data=data, split=split, options=options)
        steps = problem_steps(loaded).get(str(state.sample_id))
        if not steps:
            raise ValueError(f"scicode: no tested sub-steps for problem {state.sample_id!r}")
        tested = {it.meta["step_index"]: it for it in steps}
        record = steps[0].record
        stored: dict[str, Any] = {}
        state.messages = []
        for index, sub_step in enumerate(record["sub_steps"]):
            item = tested.get(index)
            probes: dict[str, Any] = {}
            if item is not None:
                outcomes = await _ask_probes(loaded.benchmark, item, plan, settings)
                probes = {key: outcome.to_store() for key, outcome in outcomes.items()}
            prompt = _turn_prompt(loaded, sub_step, item if index == 0 else None)
            state.messages.append(ChatMessageUser(content=prompt))
            state = await generate(state, tool_calls="none")
            stored[str(sub_step["step_number"])] = {
                "item_id": None if item is None else item.item_id,
                "question": None if item is None else item.question,
                "prompt": prompt,
                "reply": state.output.completion,
                "probes": probes,
            }
        state.store.set(_STORE_STEPS, stored)
        state.metadata["steps"] = stored
        return state

    return solve


def stored_steps(state: TaskState) -> dict[str, Any] | None:
    """The per-step record :func:`scicode_multiturn` stored, or ``None`` (step mode)."""
    return state.store.get(_STORE_STEPS)


def _own_code_response(prior: list[str], code: str) -> str:
    """A reply whose one code block is the model's earlier functions, then this step's.

    ``SciCode.grade`` puts any known gold code of earlier steps before the reply's code; the
    model's own definitions come later in the script and replace them, so the step is tested
    on top of the model's own earlier functions (SciCode's protocol without gold prior code).
    """
    body = "\n\n".join([*prior, code])
    return f"```python\n{body}\n```\n"


def _grade_steps(bench: Any, steps: list[tuple[Item | None, str]]) -> dict[str, Grade]:
    from metacog_tasks.benchmarks.scicode import extract_code

    grades: dict[str, Grade] = {}
    prior: list[str] = []
    # Every target first: model code of an earlier step may leave files or processes in the
    # sample's sandbox, so no target is computed there after any model code has run.
    for item, _ in steps:
        if item is not None:
            try:
                bench.targets(item)
            except SandboxUnavailableError:
                raise  # no boundary for model code: refused, loudly
            except Exception as exc:  # never retried later, in a sandbox model code has used
                grades[item.item_id] = Grade(
                    math.nan, "grader_error", None, details={"error": repr(exc)}
                )
    for item, reply in steps:
        code = extract_code(reply)
        if item is not None and item.item_id not in grades:
            if code is None:
                grades[item.item_id] = Grade(0.0, "unextractable", None)
            else:
                try:
                    grades[item.item_id] = bench.grade(item, _own_code_response(prior, code))
                except SandboxUnavailableError:
                    raise
                except Exception as exc:  # a grader bug must not lose a finished run
                    grades[item.item_id] = Grade(
                        math.nan, "grader_error", None, details={"error": repr(exc)}
                    )
        if code is not None:
            prior.append(code)
    return grades


async def grade_problem_steps(
    state: TaskState,
    data: str | None,
    split: str | None,
    options: Mapping[str, Any] | None,
) -> dict[str, Grade]:
    """Grade every tested step of a multi-turn SciCode sample (once; cached on the sample).

    Returns:
        Step item id -> grade.
    """
    cached = state.store.get(_STORE_STEP_GRADES)
    if cached:
        from metacog_tasks.inspect_tasks.scorers import _grade_from_store

        return {k: _grade_from_store(v) for k, v in cached.items()}
    loaded = load_benchmark_items("scicode", data=data, split=split, options=options)
    stored = stored_steps(state) or {}
    steps = [
        (loaded.item(s["item_id"]) if s.get("item_id") else None, str(s.get("reply") or ""))
        for s in stored.values()
    ]
    from metacog_tasks.inspect_tasks.sandbox import current_sandbox, in_sandbox

    env = current_sandbox()
    bench = loaded.benchmark if env is None else in_sandbox(loaded.benchmark, env)
    grades = await anyio.to_thread.run_sync(_grade_steps, bench, steps)
    from metacog_tasks.inspect_tasks.scorers import _grade_to_store

    state.store.set(_STORE_STEP_GRADES, {k: _grade_to_store(g) for k, g in grades.items()})
    return grades


def step_outcomes(state: TaskState, key: str) -> list[dict[str, Any]]:
    """Per tested step, in order: ``item_id``, ``question``, ``outcome`` (the probe's
    :class:`ProbeOutcome` for ``key``, or ``None``) and ``reply`` (the solve turn)."""
    out = []
    for step in (stored_steps(state) or {}).values():
        if not step.get("item_id"):
            continue
        raw = (step.get("probes") or {}).get(key)
        out.append(
            {
                "item_id": str(step["item_id"]),
                "question": step.get("question"),
                "outcome": ProbeOutcome.from_store(raw) if raw else None,
                "reply": str(step.get("reply") or ""),
            }
        )
    return out
