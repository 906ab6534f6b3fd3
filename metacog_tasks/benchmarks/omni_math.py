"""Omni-MATH (KbsdJames/Omni-MATH): olympiad problems with a short final answer.

Rule grading as in the authors' Omni-MATH-Rule evaluation: the last ``\\boxed{}`` of the
response is compared with the gold answer by ``math_verify`` (gold wrapped in ``$...$`` so that
it parses). Answers that rules cannot settle (no box, unparseable, timeout) are wrong and
flagged; a pluggable ``judge`` (e.g. an Omni-Judge model call) can settle them instead. It is
off by default.

Item ids are content hashes: the first 16 hex digits of SHA-256 over the problem text and the
answer joined by U+001F (both stripped), so they survive reordering and subsetting of the data.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from metacog_metrics import BenchmarkProfile
from metacog_tasks.benchmarks._common import TemplatedBenchmark, stable_hash
from metacog_tasks.benchmarks._data import load_hf, read_records, require_fields
from metacog_tasks.benchmarks._math import last_boxed, parse_number, verify_latex
from metacog_tasks.benchmarks.base import Grade, Item, SimWording, TaskOption

__all__ = ["Judge", "OmniMath", "omni_math_id"]

HF_ID = "KbsdJames/Omni-MATH"
FIELDS = ("problem", "answer")

PROMPTS = {
    "solve": (
        "{problem}\n\nPlease reason step by step, and put your final answer within \\boxed{{}}."
    ),
}
PROMPT_FIELDS = {"solve": frozenset({"problem"})}

#: A judge: ``(item, response, extracted) -> True/False/score in [0, 1]`` or ``None`` (abstain).
Judge = Callable[[Item, str, "str | None"], "bool | float | None"]


def omni_math_id(problem: str, answer: str) -> str:
    """The content-hash item id of an Omni-MATH record."""
    return stable_hash(str(problem).strip(), str(answer).strip())


def _strip_dollars(text: str) -> str:
    s = str(text).strip()
    while len(s) >= 2 and s.startswith("$") and s.endswith("$"):
        s = s[1:-1].strip()
    return s


class OmniMath(TemplatedBenchmark):
    """Omni-MATH, graded by rules (math-verify) with an optional judge.

    Args:
        judge: Called for answers the rules cannot settle (see :data:`Judge`); ``None`` (the
            default) leaves them wrong and flagged.
        judge_on: ``"unsettled"`` (default): only when rules cannot decide; ``"wrong"``: also
            when rules say wrong (for non-rule-gradable answers).
        verify_timeout_s: Seconds allowed to each math-verify parse/verify step.
        prompts: Template overrides (``solve`` uses ``{problem}``; write ``\\boxed{{}}``).
    """

    name = "omni_math"
    title = "Omni-MATH"
    summary = "olympiad problems graded by symbolic equivalence"
    dataset = HF_ID
    order = 5
    simulation = BenchmarkProfile(
        difficulty_mean=1.4, difficulty_sd=1.5, confidence_shift=-0.4, inline=True
    )
    wording = SimWording("competition math", "finding the right construction or invariant")
    rlmf_family = "math"
    paper = (
        '"Omni-MATH: A Universal Olympiad Level Mathematic Benchmark For Large Language Models", '
        "2024, https://arxiv.org/abs/2410.07985"
    )
    homepage = "https://omni-math.github.io/"
    data_license = "Apache-2.0"
    citation = """\
@article{gao2024omnimath,
  title = {{Omni-MATH}: A Universal Olympiad Level Mathematic Benchmark For Large Language Models},
  author = {Gao, Bofei and others},
  journal = {arXiv preprint arXiv:2410.07985},
  year = {2024},
  eprint = {2410.07985},
  archivePrefix = {arXiv}
}
"""
    task_options = (
        TaskOption(
            "judge_on",
            str,
            "When the judge grades: ``unsettled`` (rules cannot decide) or ``wrong`` too.",
        ),
        TaskOption("verify_timeout_s", int, "Seconds allowed to each math-verify step."),
        TaskOption(
            "judge",
            str,
            "A model that judges the answers math-verify cannot settle: an Inspect "
            "model name (``openai/gpt-4o``) or ``role:<name>`` (``--model-role <name>=...``).",
        ),
    )
    task_noun = "competition math problem"
    default_split = "test"
    PROMPTS = PROMPTS
    PROMPT_FIELDS = PROMPT_FIELDS

    def __init__(
        self,
        *,
        judge: Judge | None = None,
        judge_on: Literal["unsettled", "wrong"] = "unsettled",
        verify_timeout_s: int = 5,
        prompts=None,
    ) -> None:
        if judge is not None and not callable(judge):
            raise TypeError("omni_math: judge must be callable or None")
        if judge_on not in ("unsettled", "wrong"):
            raise ValueError(
                f"omni_math: judge_on must be 'unsettled' or 'wrong', not {judge_on!r}"
            )
        self.judge = judge
        self.judge_on = judge_on
        self.verify_timeout_s = int(verify_timeout_s)
        super().__init__(prompts=prompts)

    # ------------------------------------------------------------------ loading
    def _load_hub(self, split: str) -> list[Item]:
        rows = load_hf(
            self.name,
            HF_ID,
            split=split,
            fields=FIELDS,
            local_hint="a JSON/JSONL file of Omni-MATH rows (domain, difficulty, problem, "
            "solution, answer, source), e.g. omni_math_rule.jsonl",
        )
        return [self._item(r, f"{HF_ID} {split} row {i}") for i, r in enumerate(rows)]

    def _load_local(self, path: Path, split: str | None) -> list[Item]:
        rows = read_records(path, pattern=f"*{split}*.json*" if split else "*.json*")
        return [self._item(r, f"{path} row {i}") for i, r in enumerate(rows)]

    def _item(self, row: dict[str, Any], where: str) -> Item:
        require_fields(row, FIELDS, benchmark=self.name, where=where)
        domain = row.get("domain") or []
        if isinstance(domain, str):
            domain = [domain]
        record = {k: v for k, v in row.items() if k != "__file__"}
        return Item(
            benchmark=self.name,
            item_id=omni_math_id(row["problem"], row["answer"]),
            question=str(row["problem"]).strip(),
            target=str(row["answer"]).strip(),
            kind="boxed_answer",
            record=record,
            meta={
                "difficulty": row.get("difficulty"),
                "domain": list(domain),
                "source": str(row.get("source", "")),
            },
        )

    # ------------------------------------------------------------------ prompts
    def solve_prompt(self, item: Item) -> str:
        """The problem, then the step-by-step / ``\\boxed{}`` instruction."""
        return self.prompts.render("solve", problem=item.question)

    # ------------------------------------------------------------------ grading
    @classmethod
    def same_answer(cls, a: str, b: str) -> bool:
        """Equal after normalisation, or mathematically equal by math-verify."""
        return super().same_answer(a, b) or verify_latex(a, b).verdict is True

    def grade(self, item: Item, response: str) -> Grade:
        """math-verify on the last ``\\boxed{}``; the judge settles what rules cannot."""
        extracted = last_boxed(response)
        if extracted is None:
            rule = Grade(0.0, "unextractable", None, details={"rule": "no_boxed"})
        else:
            outcome = verify_latex(item.target, extracted, timeout_s=self.verify_timeout_s)
            if outcome.verdict is None:
                rule = Grade(
                    0.0,
                    outcome.status,
                    extracted,
                    details={"rule": "math_verify", "detail": outcome.detail},
                )
            else:
                rule = Grade(
                    float(outcome.verdict), "ok", extracted, details={"rule": "math_verify"}
                )
        return self._maybe_judge(item, response, rule)

    def _maybe_judge(self, item: Item, response: str, rule: Grade) -> Grade:
        if self.judge is None:
            return rule
        unsettled = rule.status != "ok"
        if not (unsettled or (self.judge_on == "wrong" and rule.correct == 0.0)):
            return rule
        verdict = self.judge(item, response, rule.extracted)
        if verdict is None:
            return rule
        value = float(verdict)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"omni_math item {item.item_id}: judge returned {verdict!r}")
        details = {**rule.details, "rule_status": rule.status, "rule_correct": rule.correct}
        return Grade(float(value >= 0.5), "judged", rule.extracted, score=value, details=details)

    def reference_response(self, item: Item, prompt_index: int = 0) -> str:
        """A short derivation ending in ``\\boxed{<gold>}``."""
        self._check_prompt_index(item, prompt_index)
        return (
            "Let me work through the problem step by step and check the result.\n"
            f"So the final answer is $\\boxed{{{_strip_dollars(item.target)}}}$."
        )

    def wrong_response(self, item: Item, rng: np.random.Generator, prompt_index: int = 0) -> str:
        """The same form with a perturbed answer (checked to grade wrong)."""
        self._check_prompt_index(item, prompt_index)
        gold = _strip_dollars(item.target)
        value = parse_number(gold)
        candidates: list[str] = []
        if value is not None:
            delta = int(rng.integers(1, 10))
            if float(value).is_integer():
                candidates += [str(int(value) + delta), str(int(value) * 2 + 1)]
            else:
                candidates += [f"{value + delta:g}", f"{value * 2 + 1:g}"]
        candidates += [f"{gold}+{int(rng.integers(1, 10))}", f"2\\left({gold}\\right)+1", "-17"]
        saved, self.judge = self.judge, None
        try:
            for cand in candidates:
                text = (
                    "Let me work through the problem step by step and check the result.\n"
                    f"So the final answer is $\\boxed{{{cand}}}$."
                )
                if self.grade(item, text).correct == 0.0:
                    return text
        finally:
            self.judge = saved
        return "I could not finish the derivation; my best guess is \\boxed{\\text{none}}."

    def aggregate(self, items: Sequence[Item], grades: Sequence[Grade]) -> dict[str, float]:
        """Accuracy overall and by difficulty band (``accuracy/difficulty_<lo>-<hi>``), an
        ungraded item counted wrong; ``accuracy_graded`` over the graded items; ``ungraded``
        and ``unsettled`` (what the rules could not settle, ungraded items included) their
        numbers."""
        if len(items) != len(grades):
            raise ValueError(f"omni_math: {len(items)} items but {len(grades)} grades")
        out = super().aggregate(items, grades)
        out["unsettled"] = float(sum(g.status not in ("ok", "judged") for g in grades))
        bands: dict[str, list[float]] = defaultdict(list)
        for item, g in zip(items, grades):
            d = item.meta.get("difficulty")
            if isinstance(d, int | float):
                lo = float(np.floor(float(d) / 2.5) * 2.5)
                band = f"accuracy/difficulty_{lo:g}-{lo + 2.5:g}"
                bands[band].append(g.correct if g.graded else 0.0)
        for key in sorted(bands):
            out[key] = float(np.mean(bands[key]))
        return out
