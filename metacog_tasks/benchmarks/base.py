"""The benchmark contract shared by both harness adapters and the simulated models.

An item is asked, probed and graded the same way whichever harness runs it: the lm-eval task,
the Inspect task and the simulated population all go through a :class:`Benchmark`. A benchmark
class is also the one record of everything else known about the benchmark (display name,
dataset, simulation profile, simulated wording, RLMF family, task options): the harness tasks,
the simulator and the RLMF exports read it from there and name no benchmark themselves.
"""

from __future__ import annotations

import abc
import dataclasses
import math
import re
import string
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any, ClassVar, Literal

import numpy as np

from metacog_metrics import BenchmarkProfile, Result

__all__ = [
    "PROBES",
    "Benchmark",
    "Grade",
    "Item",
    "ProbeKind",
    "SimWording",
    "TaskOption",
    "normalize_answer",
]

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
class SimWording:
    """The words a simulated model's probe rationale uses for a benchmark's items.

    Attributes:
        topic: A short topic phrase (``"legal"``, ``"competition math"``); ``{category}``
            stands for the item's category or subject.
        crux: What getting an item right depends on (``"carrying out the calculation
            exactly"``), said by unsure models.
        sketch: A line of working an inline solver writes before its derivation, or ``None``.
    """

    topic: str
    crux: str = "knowing the specific detail asked"
    sketch: str | None = None


@dataclasses.dataclass(frozen=True)
class TaskOption:
    """A benchmark option that the harness tasks take as a named argument (``-T name=value``).

    Attributes:
        name: The benchmark constructor's keyword.
        type: The value's type (``bool``, ``int``, ``float``, ``str``).
        help: One line for the task's documentation.
        names: A list of names: ``-T name=a,b``, a comma string or a list, becomes a list.
    """

    name: str
    type: type
    help: str
    names: bool = False

    @property
    def annotation(self) -> Any:
        """The task parameter's annotation (``None`` means the benchmark's default)."""
        return (str | list[str] | None) if self.names else (self.type | None)

    def convert(self, value: Any) -> Any:
        """The value for the benchmark: a name list split on commas, anything else as given.

        >>> TaskOption("tasks", str, "task names", names=True).convert("proa, hearsay")
        ['proa', 'hearsay']
        """
        if value is None or not self.names:
            return value
        parts = [value] if isinstance(value, str) else list(value)
        return [p.strip() for part in parts for p in str(part).split(",") if p.strip()]


_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_DROP_PUNCT = str.maketrans("", "", string.punctuation)  # what the official per-char filter drops


def normalize_answer(text: str) -> str:
    """SQuAD's official answer normalisation: lower case, no punctuation, no articles, single
    spaces (the comparison :meth:`Benchmark.same_answer` starts from).

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = str(text).lower().translate(_DROP_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


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
    """A benchmark: loading, prompts, grading, answers for simulated models, and its record.

    A benchmark is one module of :mod:`metacog_tasks.benchmarks` named after it (plus its pack
    in ``metacog_tasks/packs/<name>``) that defines one concrete subclass setting the record
    attributes below; the registry finds it there.

    Example (a MathBench single-choice item is asked in the four rotations of circular
    evaluation, and solved only if all four answers are right):

        >>> import numpy as np
        >>> from metacog_tasks.benchmarks import get_benchmark
        >>> bench = get_benchmark("mathbench", stages=["college"])
        >>> item = bench.load("bundled")[0]
        >>> item.item_id, len(bench.solve_prompts(item))
        ('college/single_choice_en:0', 4)
        >>> right = [bench.reference_response(item, k) for k in range(4)]
        >>> bench.grade_responses(item, right).correct
        1.0
        >>> wrong = bench.wrong_response(item, np.random.default_rng(0), prompt_index=2)
        >>> grade = bench.grade_responses(item, [*right[:2], wrong, right[3]])
        >>> grade.correct, grade.score
        (0.0, 0.75)
        >>> bench.probe_prompt(item).splitlines()[2]
        'What is the derivative of sin(x) * x with respect to x?'
        >>> bench.title, bench.rlmf_family, bench.simulation.inline
        ('MathBench', 'math', True)
    """

    #: Registry name, also the ``benchmark`` column of the record table and the module's name.
    name: ClassVar[str]
    #: Display name (``"MMLU-Pro"``).
    title: ClassVar[str]
    #: One line on how the benchmark is asked and graded (task descriptions, config comments).
    summary: ClassVar[str]
    #: The canonical dataset's id (Hugging Face, or the distributor's where there is none).
    dataset: ClassVar[str]
    #: Position in listings: the paper's order (1-6); a new benchmark takes the next number.
    order: ClassVar[int]
    #: How the simulated population sees the items (difficulty, legibility, inline solving).
    simulation: ClassVar[BenchmarkProfile]
    #: The words of the simulated models' probe rationales about the items.
    wording: ClassVar[SimWording]
    #: RLMF family of the items, verl's ``ability`` (``math``, ``code``, ``qa``, ...).
    rlmf_family: ClassVar[str]
    #: The paper that introduced the benchmark: title, venue and year, and its address.
    paper: ClassVar[str] = ""
    #: The benchmark's homepage.
    homepage: ClassVar[str] = ""
    #: BibTeX of that paper (the task READMEs cite it).
    citation: ClassVar[str] = ""
    #: Licence of the benchmark's data, as its owners state it.
    data_license: ClassVar[str] = ""
    #: Benchmark options the harness tasks take as named arguments (besides ``prompts``).
    task_options: ClassVar[tuple[TaskOption, ...]] = ()
    #: Whether graded answers are code run in a sandbox (the Inspect task takes ``sandbox``).
    runs_code: ClassVar[bool] = False
    #: Inspect task modes: ``step`` (one sample per item) and, for items that are the sub-steps
    #: of a problem, ``problem`` (one sample per problem, its steps in one conversation).
    task_modes: ClassVar[tuple[str, ...]] = ("step",)
    #: Stop sequences of a solve reply (lm-eval ``generation_kwargs.until``).
    solve_stop: ClassVar[tuple[str, ...]] = ()
    #: Token budget of a solve reply (lm-eval ``generation_kwargs.max_gen_toks``).
    solve_max_tokens: ClassVar[int] = 2048

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

    @classmethod
    def same_answer(cls, a: str, b: str) -> bool:
        """Whether two extracted answers are the same answer (equal after
        :func:`normalize_answer`; math benchmarks also ask math-verify).

        >>> Benchmark.same_answer("The Nile", "nile.")
        True
        """
        return normalize_answer(a) == normalize_answer(b)

    def aggregate(self, items: Sequence[Item], grades: Sequence[Grade]) -> dict[str, float]:
        """The benchmark's own headline figures (default: ``accuracy`` over all items, an
        ungraded one counted wrong; ``accuracy_graded`` over the graded items only; and
        ``ungraded``, their number).

        >>> from metacog_tasks.benchmarks import get_benchmark
        >>> bench = get_benchmark("mmlu_pro")
        >>> items = bench.load("bundled", limit=2)
        >>> grades = [bench.grade(it, bench.reference_response(it)) for it in items]
        >>> Benchmark.aggregate(bench, items, grades)
        {'accuracy': 1.0, 'accuracy_graded': 1.0, 'ungraded': 0.0}
        """
        values = [g.correct if g.graded else 0.0 for g in grades]
        graded = [g.correct for g in grades if g.graded]
        return {
            "accuracy": float(np.mean(values)) if values else float("nan"),
            "accuracy_graded": float(np.mean(graded)) if graded else float("nan"),
            "ungraded": float(len(values) - len(graded)),
        }
