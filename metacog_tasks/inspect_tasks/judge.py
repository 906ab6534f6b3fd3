"""An Inspect model as Omni-MATH's answer judge (``-T judge=openai/gpt-4o``).

Omni-MATH's authors grade with a model (GPT-4o, or their Omni-Judge) because many olympiad
answers are not rule-checkable. The benchmark grades with math-verify and hands the answers the
rules cannot settle (``judge_on="unsettled"``, the default) or also those they call wrong
(``judge_on="wrong"``) to a judge. This module makes that judge any Inspect model: a model name,
or ``role:<name>`` for a model role given with ``--model-role <name>=<model>`` (or
``eval(..., model_roles=...)``).

The benchmark's grader is synchronous and runs in a worker thread; the judge hands its model
call back to the event loop (``anyio.from_thread.run``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import anyio

from metacog_tasks.benchmarks.base import Item

__all__ = ["JUDGE_PROMPT", "inspect_judge", "parse_judgement"]

#: The judge's prompt (after the Omni-MATH authors' GPT-4o evaluation: compare final answers
#: only, and end with an explicit TRUE/FALSE judgement).
JUDGE_PROMPT = """\
You are grading the final answer to a competition mathematics problem against the reference \
answer. Judge only whether the student's final answer is mathematically equivalent to the \
reference answer (same value, set, expression or statement, allowing different but equivalent \
forms); do not re-solve the problem and ignore errors in the reasoning.

## Problem
{problem}

## Reference answer
{reference}

## Student's final answer
{answer}

## Student's solution (for context)
{solution}

Explain briefly, then end with a final line that is exactly \
"Equivalence Judgement: TRUE" or "Equivalence Judgement: FALSE"."""

_JUDGEMENT = re.compile(r"equivalence\s+judgement\s*[:：]?\s*\**\s*(true|false)\b", re.IGNORECASE)
_SOLUTION_CHARS = 6000


def parse_judgement(text: str) -> bool | None:
    """The last ``Equivalence Judgement: TRUE|FALSE`` of a judge reply (``None``: none)."""
    found = _JUDGEMENT.findall(text or "")
    return None if not found else found[-1].lower() == "true"


def inspect_judge(spec: str) -> Callable[[Item, str, str | None], bool | None]:
    """An Omni-MATH judge backed by an Inspect model.

    Args:
        spec: A model name (``openai/gpt-4o``) or ``role:<name>`` (a model role of the eval).

    Returns:
        ``judge(item, response, extracted) -> True | False | None`` (``None``: the judge gave no
        verdict, so the rule-based grade stands).

    Raises:
        ValueError: An empty spec.
    """
    spec = str(spec).strip()
    if not spec or spec == "role:":
        raise ValueError("judge: give a model name or role:<name>")

    async def ask(prompt: str) -> str:
        from inspect_ai.model import GenerateConfig, get_model

        if spec.startswith("role:"):
            model = get_model(role=spec[len("role:") :])
        else:
            model = get_model(spec)
        output = await model.generate(prompt, config=GenerateConfig(temperature=0.0))
        return output.completion

    def judge(item: Item, response: str, extracted: str | None) -> bool | None:
        solution = response if len(response) <= _SOLUTION_CHARS else "..." + response[-6000:]
        prompt = JUDGE_PROMPT.format(
            problem=item.question,
            reference=item.target,
            answer=extracted if extracted is not None else "(no final answer found)",
            solution=solution,
        )
        return parse_judgement(anyio.from_thread.run(ask, prompt))

    judge.__qualname__ = f"inspect_judge({spec})"
    return judge
