"""Problems solved sub-step by sub-step in one conversation (``-T mode=problem``).

A benchmark whose items are the tested sub-steps of larger problems (its record's
``task_modes`` has ``problem``; SciCode is one) is asked by default (``mode=step``) with one
sample per sub-step, as in the lm-eval task: each step's prompt shows the previous steps with
their gold answers, so steps are independent, records are identical across harnesses, and each
step's correctness measures that step alone.

``mode=problem`` is the multi-turn protocol of such benchmarks: one sample per problem, whose
sub-steps are asked in order in one conversation, so each step builds on the model's *own*
earlier answers. Before each tested step the probe is asked in a fresh conversation (it sees the
step, never the solve conversation). Each tested step is graded on top of the model's earlier
replies. Records stay per sub-step, with the same item ids, so ``metacog collect`` and the
analysis treat both modes alike; the two modes answer different questions and should not be
mixed in one analysis.

What the benchmark provides is :class:`ProblemBenchmark`: its items carry ``problem_id`` and
``step_index`` in ``meta``, and it gives the problem's text, the conversation's user turns and
the grade of a step after the model's earlier replies.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import anyio
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver

from metacog_tasks.benchmarks.base import Grade, Item
from metacog_tasks.inspect_tasks._naming import qualified
from metacog_tasks.inspect_tasks.dataset import BenchmarkItems, load_benchmark_items
from metacog_tasks.inspect_tasks.sandbox import current_sandbox, in_sandbox
from metacog_tasks.inspect_tasks.solvers import (
    ProbeOutcome,
    _ask_probes,
    _ProbeSettings,
    parse_confidences,
    parse_probes,
    probe_plan,
)
from metacog_tasks.inspect_tasks.store import (
    STORE_STEP_GRADES,
    STORE_STEPS,
    grade_from_store,
    grade_to_store,
    stored_steps,
)
from metacog_tasks.sandbox import SandboxUnavailableError

__all__ = [
    "ProblemBenchmark",
    "grade_problem_steps",
    "grade_steps",
    "problem_dataset",
    "problem_solver",
    "problem_steps",
    "step_outcomes",
]


class ProblemBenchmark(Protocol):
    """What a benchmark with ``problem`` in its record's ``task_modes`` provides."""

    def problem_text(self, item: Item) -> str:
        """The problem's own statement (the sample's input), ``""`` when it has none."""
        ...

    def problem_turns(self, steps: Sequence[Item]) -> dict[str, str]:
        """Sub-step id -> user message, for every sub-step of the problem of ``steps`` (its
        tested sub-steps, in order), tested or not, in conversation order."""
        ...

    def targets(self, item: Item) -> Any:
        """Prepare what grading the step needs; called for every tested step of a sample
        before any of the model's replies is graded (a sandbox may keep what model code left)."""
        ...

    def grade_in_problem(self, item: Item, response: str, earlier: Sequence[str]) -> Grade:
        """Grade a step's reply on top of the model's ``earlier`` replies in the problem."""
        ...


def problem_steps(loaded: BenchmarkItems) -> dict[str, list[Item]]:
    """Tested sub-steps grouped by problem, in problem and step order."""
    out: dict[str, list[Item]] = {}
    for item in loaded.items:
        out.setdefault(str(item.meta["problem_id"]), []).append(item)
    for steps in out.values():
        steps.sort(key=lambda it: int(it.meta["step_index"]))
    return out


def problem_dataset(loaded: BenchmarkItems) -> MemoryDataset:
    """One sample per problem (``id`` = problem id)."""
    bench: ProblemBenchmark = loaded.benchmark  # type: ignore[assignment]
    samples = []
    for problem_id, steps in problem_steps(loaded).items():
        first = steps[0]
        text = bench.problem_text(first)
        samples.append(
            Sample(
                id=problem_id,
                input=text or first.question,
                metadata={
                    "benchmark": loaded.benchmark.name,
                    "item_kind": "problem",
                    "question": text,
                    "steps": [it.item_id for it in steps],
                },
            )
        )
    name = f"metacog_{loaded.benchmark.name}_problems"
    return MemoryDataset(samples, name=name, location=loaded.source)


def _multiturn(benchmark: str) -> Callable[..., Solver]:
    """The solver factory of one benchmark's problems (unregistered)."""

    def multiturn(
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
        methods = parse_confidences(confidence)
        settings = _ProbeSettings.checked(methods, k, temperature, max_tokens, seed)
        plan = probe_plan(parse_probes(probe), methods)

        async def solve(state: TaskState, generate: Generate) -> TaskState:
            loaded = load_benchmark_items(benchmark, data=data, split=split, options=options)
            steps = problem_steps(loaded).get(str(state.sample_id))
            if not steps:
                raise ValueError(
                    f"{benchmark}: no tested sub-steps for problem {state.sample_id!r}"
                )
            bench: ProblemBenchmark = loaded.benchmark  # type: ignore[assignment]
            tested = {it.item_id: it for it in steps}
            stored: dict[str, Any] = {}
            state.messages = []
            for key, prompt in bench.problem_turns(steps).items():
                item = tested.get(key)
                probes: dict[str, Any] = {}
                if item is not None:
                    outcomes = await _ask_probes(loaded.benchmark, item, plan, settings)
                    probes = {name: outcome.to_store() for name, outcome in outcomes.items()}
                state.messages.append(ChatMessageUser(content=prompt))
                state = await generate(state, tool_calls="none")
                stored[key] = {
                    "item_id": None if item is None else item.item_id,
                    "question": None if item is None else item.question,
                    "prompt": prompt,
                    "reply": state.output.completion,
                    "probes": probes,
                }
            state.store.set(STORE_STEPS, stored)
            state.metadata["steps"] = stored
            return state

        return solve

    multiturn.__doc__ = (
        f"Solve a {benchmark} problem sub-step by sub-step in one conversation, probing each "
        "tested step first.\n\n"
        "Args:\n    probe: Probe(s) asked before each tested step.\n    confidence: Confidence "
        "method(s).\n    k: Replies per step for ``sampled``.\n    temperature: Sampling "
        "temperature for ``sampled``.\n    max_tokens: Token budget of a probe reply.\n    "
        "seed: Base seed of the sampled replies.\n    data: Item source.\n    split: Dataset "
        "split.\n    options: Benchmark options.\n\n"
        "Returns:\n    The solver; per-step probes and replies are stored for the scorers.\n\n"
        "Raises:\n    ValueError: An unknown probe or confidence, ``k < 1``, ``max_tokens < 1`` "
        "or ``temperature <= 0`` with ``sampled``.\n"
    )
    multiturn.__name__ = multiturn.__qualname__ = f"{benchmark}_multiturn"
    return multiturn


@functools.cache
def problem_solver(benchmark: str) -> Callable[..., Solver]:
    """The registered solver ``metacog_tasks/<benchmark>_multiturn`` of a benchmark's problems.

    Args:
        benchmark: The name of a benchmark whose record's ``task_modes`` has ``problem``.

    Returns:
        Its factory (``probe``, ``confidence``, ``k``, ``temperature``, ``max_tokens``,
        ``seed``, ``data``, ``split``, ``options``); the solver it makes checks the probe
        settings and stores every step's probes and reply for the scorers.
    """
    return solver(qualified(f"{benchmark}_multiturn"))(_multiturn(benchmark))


def grade_steps(
    bench: ProblemBenchmark, steps: Sequence[tuple[Item | None, str]]
) -> dict[str, Grade]:
    """Grade the replies of one problem's conversation, in order.

    Every tested step's targets are prepared first: model code of an earlier step may leave
    files or processes in the sample's sandbox, so nothing the grade relies on is computed
    there after any model code has run. A failure on the grader's side makes that step
    ungraded (``grader_error``); a missing boundary for model code is raised.

    Args:
        bench: The benchmark.
        steps: (tested item or ``None``, the model's reply) per turn of the conversation.

    Returns:
        Tested step item id -> grade.
    """
    grades: dict[str, Grade] = {}
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
    earlier: list[str] = []
    for item, reply in steps:
        if item is not None and item.item_id not in grades:
            try:
                grades[item.item_id] = bench.grade_in_problem(item, reply, tuple(earlier))
            except SandboxUnavailableError:
                raise
            except Exception as exc:  # a grader bug must not lose a finished run
                grades[item.item_id] = Grade(
                    math.nan, "grader_error", None, details={"error": repr(exc)}
                )
        earlier.append(reply)
    return grades


async def grade_problem_steps(
    state: TaskState,
    benchmark: str,
    data: str | None,
    split: str | None,
    options: Mapping[str, Any] | None,
) -> dict[str, Grade]:
    """Grade every tested step of a multi-turn sample (once; cached on the sample).

    A benchmark whose record ``runs_code`` runs the steps' code in the sample's Inspect
    sandbox when the eval has one.

    Returns:
        Step item id -> grade.
    """
    cached = state.store.get(STORE_STEP_GRADES)
    if cached:
        return {k: grade_from_store(v) for k, v in cached.items()}
    loaded = load_benchmark_items(benchmark, data=data, split=split, options=options)
    stored = stored_steps(state) or {}
    steps = [
        (loaded.item(s["item_id"]) if s.get("item_id") else None, str(s.get("reply") or ""))
        for s in stored.values()
    ]
    env = current_sandbox() if loaded.benchmark.runs_code else None
    bench = loaded.benchmark if env is None else in_sandbox(loaded.benchmark, env)
    grades = await anyio.to_thread.run_sync(grade_steps, bench, steps)
    state.store.set(STORE_STEP_GRADES, {k: grade_to_store(g) for k, g in grades.items()})
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
