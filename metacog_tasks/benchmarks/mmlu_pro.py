"""MMLU-Pro (TIGER-Lab/MMLU-Pro): 3-10 option multiple choice, chain-of-thought answers.

Grading follows the authors' ``evaluate_from_local.py``: options ``"N/A"`` are dropped, the
answer is extracted by ``answer is \\(?([A-J])\\)?``, then ``[aA]nswer:\\s*([A-J])``, then the
last standalone letter. Unlike the authors' script, an unextractable answer is wrong and flagged
(``status="unextractable"``), not replaced by a seeded random guess.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metacog_metrics import BenchmarkProfile
from metacog_tasks.benchmarks._common import TemplatedBenchmark
from metacog_tasks.benchmarks._data import (
    DataFormatError,
    load_hf,
    read_records,
    require_fields,
)
from metacog_tasks.benchmarks.base import Grade, Item, SimWording

__all__ = ["LETTERS", "MMLUPro", "extract_choice"]

LETTERS = "ABCDEFGHIJ"
HF_ID = "TIGER-Lab/MMLU-Pro"
FIELDS = ("question_id", "question", "options", "answer", "category")

PROMPTS = {
    "solve": (
        "The following is a multiple choice question about {subject}. Think step by step and "
        'then finish your answer with "the answer is (X)" where X is the correct letter '
        "choice.\n\n"
        "Question:\n{question}\n"
        "Options:\n{options}\n"
        "Answer: Let's think step by step."
    ),
}
PROMPT_FIELDS = {"solve": frozenset({"subject", "question", "options"})}

_ANSWER_IS = re.compile(r"answer is \(?([A-J])\)?")
# The authors' patterns ``.*[aA]nswer:\s*([A-J])`` and ``\b[A-J]\b(?!.*\b[A-J]\b)`` backtrack
# over the rest of the text at every position (quadratic: 5.6 s on one 20 kB line). These read
# the same answers in one pass: every start of the first (a zero-width search finds overlapping
# ones), and the first standalone letter of the reversed text.
_ANSWER_COLON = re.compile(r"(?=[aA]nswer:\s*+([A-J]))")
_LETTER = re.compile(r"\b[A-J]\b")


def extract_choice(text: str | None) -> tuple[str | None, str]:
    """Extract the chosen letter with the MMLU-Pro chain.

    Args:
        text: The model's response.

    Returns:
        ``(letter, rule)`` where rule is ``answer_is``, ``answer_colon``, ``last_letter`` or
        ``none`` (letter ``None``).
    """
    if not text:
        return None, "none"
    text = str(text)
    m = _ANSWER_IS.search(text)
    if m:
        return m.group(1), "answer_is"
    m = _ANSWER_COLON.search(text)
    if m:  # the last match on the first line that has one (``.*`` stops at a newline)
        line_end = text.find("\n", m.start())
        for later in _ANSWER_COLON.finditer(text, m.start() + 1):
            if 0 <= line_end < later.start():
                break
            m = later
        return m.group(1), "answer_colon"
    m = _LETTER.search(text[::-1])  # the same pattern read backwards: the last letter
    if m:
        return m.group(0), "last_letter"
    return None, "none"


class MMLUPro(TemplatedBenchmark):
    """MMLU-Pro: 12,032 test questions over 14 categories, 3-10 options (mostly 10).

    Args:
        prompts: Template overrides (``solve``, ``prospective``, ``counterfactual``,
            ``numeric``), a mapping or a YAML/JSON file.
    """

    name = "mmlu_pro"
    title = "MMLU-Pro"
    summary = "ten-option questions with chain of thought; the probe shows no options"
    dataset = HF_ID
    order = 2
    simulation = BenchmarkProfile(difficulty_mean=0.2, difficulty_sd=1.5)
    wording = SimWording("{category}", "telling apart closely related options")
    rlmf_family = "knowledge"
    paper = (
        '"MMLU-Pro: A More Robust and Challenging Multi-Task Language Understanding Benchmark", '
        "NeurIPS 2024 Datasets and Benchmarks, https://arxiv.org/abs/2406.01574"
    )
    homepage = "https://github.com/TIGER-AI-Lab/MMLU-Pro"
    data_license = "MIT"
    citation = """\
@inproceedings{wang2024mmlupro,
  title = {{MMLU-Pro}: A More Robust and Challenging Multi-Task Language Understanding Benchmark},
  author = {Wang, Yubo and Ma, Xueguang and Zhang, Ge and others},
  booktitle = {Advances in Neural Information Processing Systems (Datasets and Benchmarks Track)},
  year = {2024},
  eprint = {2406.01574},
  archivePrefix = {arXiv}
}
"""
    solve_stop = ("Question:",)
    task_noun = "multiple-choice question"
    default_split = "test"
    PROMPTS = PROMPTS
    PROMPT_FIELDS = PROMPT_FIELDS

    # ------------------------------------------------------------------ loading
    def _load_hub(self, split: str) -> list[Item]:
        rows = load_hf(
            self.name,
            HF_ID,
            split=split,
            fields=FIELDS,
            local_hint="a JSON/JSONL file of MMLU-Pro rows (question_id, question, options, "
            "answer, answer_index, cot_content, category, src)",
        )
        return [self._item(r, f"{HF_ID} {split} row {i}") for i, r in enumerate(rows)]

    def _load_local(self, path: Path, split: str | None) -> list[Item]:
        if path.is_dir():
            pattern = f"{split}*.json*" if split else "*.json*"
            rows = read_records(path, pattern=pattern)
        else:
            rows = read_records(path)
        return [self._item(r, f"{path} row {i}") for i, r in enumerate(rows)]

    def _item(self, row: dict[str, Any], where: str) -> Item:
        require_fields(row, FIELDS, benchmark=self.name, where=where)
        options = [str(o) for o in row["options"] if str(o) != "N/A"]
        if not 2 <= len(options) <= len(LETTERS):
            raise DataFormatError(f"{self.name}: {where} has {len(options)} options")
        answer = str(row["answer"]).strip()
        if answer not in LETTERS[: len(options)]:
            raise DataFormatError(
                f"{self.name}: {where} answer {answer!r} is not one of its "
                f"{len(options)} option letters"
            )
        record = {k: v for k, v in row.items() if k != "__file__"}
        return Item(
            benchmark=self.name,
            item_id=str(row["question_id"]),
            question=str(row["question"]).strip(),
            target=answer,
            kind="multiple_choice",
            record=record,
            meta={
                "category": str(row["category"]),
                "src": str(row.get("src", "")),
                "options": options,
                "n_options": len(options),
            },
        )

    # ------------------------------------------------------------------ prompts
    def solve_prompt(self, item: Item) -> str:
        """The zero-shot chain-of-thought prompt of the authors, options lettered A-J."""
        options = "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(item.meta["options"]))
        return self.prompts.render(
            "solve", subject=item.meta["category"], question=item.question, options=options
        )

    # ------------------------------------------------------------------ grading
    def grade(self, item: Item, response: str) -> Grade:
        """Exact match of the extracted letter with the gold letter."""
        letter, rule = extract_choice(response)
        if letter is None:
            return Grade(0.0, "unextractable", None, details={"rule": rule})
        correct = float(letter == item.target)
        return Grade(correct, "ok", letter, details={"rule": rule})

    def reference_response(self, item: Item, prompt_index: int = 0) -> str:
        """A short chain of thought ending in ``the answer is (X)`` with the gold letter."""
        self._check_prompt_index(item, prompt_index)
        return (
            "Let's think step by step. Weighing each option against the question, one fits "
            f"best. The answer is ({item.target})."
        )

    def wrong_response(self, item: Item, rng: np.random.Generator, prompt_index: int = 0) -> str:
        """The same form with another option's letter."""
        self._check_prompt_index(item, prompt_index)
        letters = [c for c in LETTERS[: item.meta["n_options"]] if c != item.target]
        letter = letters[int(rng.integers(len(letters)))]
        return (
            "Let's think step by step. Weighing each option against the question, one fits "
            f"best. The answer is ({letter})."
        )

    def aggregate(self, items: Sequence[Item], grades: Sequence[Grade]) -> dict[str, float]:
        """Accuracy over all items and per category (``accuracy/<category>``), x1, an ungraded
        item counted wrong; ``accuracy_graded`` over the graded items, ``ungraded`` and
        ``unextractable`` (wrong, no answer found) their numbers."""
        if len(items) != len(grades):
            raise ValueError(f"{self.name}: {len(items)} items but {len(grades)} grades")
        out = super().aggregate(items, grades)
        out["unextractable"] = float(sum(g.status == "unextractable" for g in grades))
        by_cat: dict[str, list[float]] = defaultdict(list)
        for item, g in zip(items, grades):
            by_cat[item.meta["category"]].append(g.correct if g.graded else 0.0)
        for cat in sorted(by_cat):
            out[f"accuracy/{cat}"] = float(np.mean(by_cat[cat]))
        return out
