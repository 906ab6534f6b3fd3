"""The benchmark contract shared by both harness adapters and the simulated models.

An item is asked, probed and graded the same way whichever harness runs it: the lm-eval task,
the Inspect task and the simulated population all go through a :class:`Benchmark`.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any, ClassVar, Literal

import numpy as np

from metacog_metrics import Result

__all__ = ["PROBES", "Benchmark", "Grade", "Item", "ProbeKind"]

ProbeKind = Literal["prospective", "counterfactual", "numeric"]
#: Probe kinds every benchmark builds prompts for. ``numeric`` asks for a 0-100 confidence (RLMF).
PROBES: tuple[str, ...] = ("prospective", "counterfactual", "numeric")


@dataclasses.dataclass(frozen=True)
class Item:
    """One benchmark item, identical across harnesses.

    Attributes:
        benchmark: Benchmark name (``squad``, ``mmlu_pro``, ...).
        item_id: Stable id inside the benchmark (never a harness row number).
        question: The bare question, as a probe may show it (no context, options or hints).
        target: The gold answer in the benchmark's own form (answer list, letter, number, ...).
        kind: Item type inside the benchmark (``unanswerable``, ``cloze``, ``code``, ...).
        record: The source record, with the dataset's original field names.
        meta: Derived fields (subject, LegalBench task, MathBench rotation, SciCode step, ...).
    """

    benchmark: str
    item_id: str
    question: str
    target: Any
    kind: str
    record: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Grade(Result):
    """The grader's verdict on one response.

    Attributes:
        correct: 1.0 or 0.0, or NaN when the item could not be graded.
        status: ``ok`` or why grading was not clean (``unextractable``, ``timeout``, ...).
            An unextractable answer is wrong (``correct == 0``), not ungraded.
        extracted: The answer the grader extracted from the response, if any.
        score: A continuous score where the benchmark has one (SQuAD F1, SciCode step share).
        details: Benchmark-specific extras (per-test results, matched gold, ...).
    """

    correct: float
    status: str = "ok"
    extracted: str | None = None
    score: float | None = None
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def graded(self) -> bool:
        """Whether the item could be graded at all."""
        return not math.isnan(self.correct)


class Benchmark(abc.ABC):
    """A benchmark: loading, prompts, grading, and answers for simulated models."""

    #: Registry name, also the ``benchmark`` column of the record table.
    name: ClassVar[str]

    @abc.abstractmethod
    def load(
        self,
        source: str | PathLike[str] | None = None,
        *,
        split: str | None = None,
        limit: int | None = None,
    ) -> list[Item]:
        """Load items.

        Args:
            source: ``None`` for the canonical Hugging Face dataset, ``"bundled"`` for the mini
                pack shipped with the package, or a local folder / JSON / JSONL file in the
                dataset's original field names.
            split: Dataset split (benchmark default when ``None``).
            limit: Keep the first ``limit`` items.
        """

    @abc.abstractmethod
    def solve_prompt(self, item: Item) -> str:
        """The user message that asks the model to solve the item."""

    @abc.abstractmethod
    def probe_prompt(self, item: Item, probe: str = "prospective") -> str:
        """The user message of a probe (see :data:`PROBES`); never shows context or options."""

    @abc.abstractmethod
    def grade(self, item: Item, response: str) -> Grade:
        """Grade a solve response following the benchmark authors' conventions."""

    def solve_prompts(self, item: Item) -> list[str]:
        """All solve messages of an item, each asked in its own conversation.

        One for most benchmarks; MathBench single choice under circular evaluation asks the four
        rotations of the options.
        """
        return [self.solve_prompt(item)]

    def grade_responses(self, item: Item, responses: Sequence[str]) -> Grade:
        """Grade the responses to :meth:`solve_prompts`, in the same order."""
        if len(responses) != 1:
            raise ValueError(
                f"{self.name} item {item.item_id}: expected 1 solve response, got {len(responses)}"
            )
        return self.grade(item, responses[0])

    @abc.abstractmethod
    def reference_response(self, item: Item, prompt_index: int = 0) -> str:
        """A response that grades correct to solve prompt ``prompt_index`` (simulated models)."""

    @abc.abstractmethod
    def wrong_response(self, item: Item, rng: np.random.Generator, prompt_index: int = 0) -> str:
        """A plausible response to solve prompt ``prompt_index`` that grades wrong.

        Another option, a perturbed number, a broken function: wrong, but not absurd.
        """

    def aggregate(self, items: Sequence[Item], grades: Sequence[Grade]) -> dict[str, float]:
        """The benchmark's own headline figures (default: ``accuracy`` over all items, an
        ungraded one counted wrong; ``accuracy_graded`` over the graded items only; and
        ``ungraded``, their number)."""
        values = [g.correct if g.graded else 0.0 for g in grades]
        graded = [g.correct for g in grades if g.graded]
        return {
            "accuracy": float(np.mean(values)) if values else float("nan"),
            "accuracy_graded": float(np.mean(graded)) if graded else float("nan"),
            "ungraded": float(len(values) - len(graded)),
        }
