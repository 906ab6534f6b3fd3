"""MathBench (open-compass/MathBench, ``mathbench_v1/``): cloze and single-choice math.

Data: only the release archive exists (``mathbench_v1.zip``, OpenCompass id
``opencompass/mathbench``), laid out as ``mathbench_v1/<stage>/<name>.jsonl`` with ``name`` in
``cloze_en``, ``cloze_cn``, ``single_choice_en``, ``single_choice_cn``. ``load(None)`` looks for
that folder in ``$MATHBENCH_DIR`` or the working directory.

Grading follows OpenCompass: cloze answers are the last ``\\boxed{}`` (newer configs), else the
first number after "The answer is" / "答案是", else the last number; single choice uses
circular evaluation CE-4: each question is asked four times with the options rotated by the
patterns ABCD, BCDA, CDAB, DABC, and counts as solved only if all four are right (perf_4).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metacog_metrics import BenchmarkProfile
from metacog_tasks.benchmarks._common import TemplatedBenchmark
from metacog_tasks.benchmarks._data import (
    DataFormatError,
    DataUnavailableError,
    read_records,
    require_fields,
)
from metacog_tasks.benchmarks._math import last_boxed, numbers_in, parse_number, verify_latex
from metacog_tasks.benchmarks.base import Grade, Item, SimWording, TaskOption

__all__ = [
    "APPLICATION_STAGES",
    "CIRCULAR_PATTERNS",
    "KNOWLEDGE_STAGES",
    "MathBench",
    "extract_cloze",
    "extract_option",
    "rotate",
]

CIRCULAR_PATTERNS: tuple[str, ...] = ("ABCD", "BCDA", "CDAB", "DABC")
#: The overall figures of :meth:`MathBench.aggregate` (each has a graded-only twin).
_OVERALL = ("acc_1", "acc_4", "perf_4", "cloze_accuracy", "MathBench-A", "MathBench-T", "overall")
APPLICATION_STAGES = ("arithmetic", "primary", "middle", "high", "college")
KNOWLEDGE_STAGES = ("primary_knowledge", "middle_knowledge", "high_knowledge", "college_knowledge")
FILE_NAMES = ("cloze_en", "cloze_cn", "single_choice_en", "single_choice_cn")

PROMPTS = {
    "solve": (
        '{question}\n\nPlease reason step by step, and end with "The answer is N", where N is '
        "your final answer."
    ),
    "solve_cn": "{question}\n\n请一步一步推理，并在最后用“答案是N”的形式给出最终答案。",
    "solve_choice": (
        "Here is a single-choice question about mathematics. Reason step by step, then end "
        'with "Therefore, the correct answer is option X", where X is one of A, B, C, D.\n\n'
        "Question: {question}\n{options}"
    ),
    "solve_choice_cn": (
        "以下是一道关于数学的单项选择题。请一步一步推理，并在最后用“所以答案为选项X”给出答案，"
        "其中X是A、B、C、D中的一个。\n\n问题：{question}\n{options}"
    ),
}
PROMPT_FIELDS = {
    "solve": frozenset({"question"}),
    "solve_cn": frozenset({"question"}),
    "solve_choice": frozenset({"question", "options"}),
    "solve_choice_cn": frozenset({"question", "options"}),
}

_NOT_LATIN_BEFORE = r"(?<![A-Za-z])"
_NOT_LATIN_AFTER = r"(?![A-Za-z])"
_OPTION_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "answer_is",
        re.compile(
            r"answer\s+is\s*[:：]?\s*(?:option\s*)?[\(\[]?" + r"([A-D])" + _NOT_LATIN_AFTER,
            re.IGNORECASE,
        ),
    ),
    (
        "answer_is_cn",
        re.compile(r"答案\s*(?:应该|应)?\s*(?:为|是)\s*[:：]?\s*(?:选项)?\s*[\(（]?([A-D])"),
    ),
    ("answer_colon", re.compile(r"answer\s*[:：]\s*[\(\[]?([A-D])" + _NOT_LATIN_AFTER, re.I)),
    ("option", re.compile(r"\boption\s*[\(\[]?([A-D])" + _NOT_LATIN_AFTER, re.IGNORECASE)),
    ("option_cn", re.compile(r"选项\s*[\(（]?([A-D])")),
    ("last_letter", re.compile(_NOT_LATIN_BEFORE + r"([A-D])" + _NOT_LATIN_AFTER)),
)
_ANSWER_IS_EN = re.compile(r"answer\s+is", re.IGNORECASE)
_ANSWER_IS_CN = re.compile(r"答案(?:是|为)")


def rotate(options: Sequence[str], answer: str, pattern: str) -> tuple[list[str], str]:
    """Options and gold letter under a CE-4 rotation: new option i = old option ``pattern[i]``."""
    new = [options["ABCD".index(c)] for c in pattern]
    return new, "ABCD"[pattern.index(answer)]


def extract_option(text: str | None) -> tuple[str | None, str]:
    """The chosen option letter: the last match of the first rule that matches.

    Returns:
        ``(letter, rule)``; ``(None, "none")`` when nothing matches.
    """
    if not text:
        return None, "none"
    text = str(text)
    for rule, pattern in _OPTION_RULES:
        found = pattern.findall(text)
        if found:
            return found[-1].upper(), rule
    return None, "none"


def extract_cloze(text: str | None) -> tuple[str | None, str]:
    """The cloze answer: last ``\\boxed{}``, else the first number after "The answer is" /
    "答案是", else the last number (thousands commas removed).

    Returns:
        ``(answer, rule)``; ``(None, "none")`` when there is no number.
    """
    if not text:
        return None, "none"
    text = str(text)
    boxed = last_boxed(text)
    if boxed:
        return boxed, "boxed"
    for rule, marker in (("answer_is", _ANSWER_IS_EN), ("answer_is_cn", _ANSWER_IS_CN)):
        spans = list(marker.finditer(text))
        if spans:
            nums = numbers_in(text[spans[-1].end() :])
            if nums:
                return nums[0].replace(",", ""), rule
    nums = numbers_in(text)
    if nums:
        return nums[-1].replace(",", ""), "last_number"
    return None, "none"


def _same_answer(gold: str, pred: str) -> bool:
    g, p = parse_number(gold), parse_number(pred)
    if g is not None and p is not None:
        return abs(g - p) <= 1e-6 * max(1.0, abs(g))
    norm = lambda s: re.sub(r"[\s$]", "", str(s)).rstrip("。.").lower()  # noqa: E731
    return norm(gold) == norm(pred)


class MathBench(TemplatedBenchmark):
    """MathBench with circular evaluation of single-choice questions.

    Args:
        circular: Ask single-choice questions in the four CE-4 rotations (default ``True``);
            ``False`` asks the unrotated question once (acc_1 only).
        languages: Keep ``"en"``, ``"cn"`` or both (default both).
        stages: Keep only these stage folders (default all).
        prompts: Template overrides: ``solve`` (cloze, English), ``solve_cn``,
            ``solve_choice``, ``solve_choice_cn`` and the probes.
    """

    name = "mathbench"
    title = "MathBench"
    summary = "cloze and single-choice math, single choice under circular evaluation"
    dataset = "opencompass/mathbench"
    order = 4
    simulation = BenchmarkProfile(
        difficulty_mean=0.0, difficulty_sd=1.5, confidence_shift=0.1, inline=True
    )
    wording = SimWording("math", "carrying out the calculation exactly")
    rlmf_family = "math"
    paper = (
        '"MathBench: Evaluating the Theory and Application Proficiency of LLMs with a '
        'Hierarchical Mathematics Benchmark", Findings of ACL 2024, '
        "https://arxiv.org/abs/2405.12209"
    )
    homepage = "https://github.com/open-compass/MathBench"
    data_license = "Apache-2.0"
    citation = """\
@inproceedings{liu2024mathbench,
  title = {{MathBench}: Evaluating the Theory and Application Proficiency of {LLMs} with a
    Hierarchical Mathematics Benchmark},
  author = {Liu, Hongwei and Zheng, Zilong and Qiao, Yuxuan and Duan, Haodong and others},
  booktitle = {Findings of the Association for Computational Linguistics: ACL 2024},
  year = {2024},
  eprint = {2405.12209},
  archivePrefix = {arXiv}
}
"""
    task_options = (
        TaskOption("circular", bool, "Circular evaluation of single-choice items (default on)."),
        TaskOption("languages", str, "Languages to keep (``en``, ``cn``).", True),
        TaskOption("stages", str, "Stages to keep (default: all).", True),
    )
    task_noun = "math question"
    default_split = "test"
    PROMPTS = PROMPTS
    PROMPT_FIELDS = PROMPT_FIELDS

    def __init__(
        self,
        *,
        circular: bool = True,
        languages: Iterable[str] = ("en", "cn"),
        stages: Iterable[str] | None = None,
        prompts=None,
    ) -> None:
        self.circular = bool(circular)
        self.languages = tuple(languages)
        bad = [x for x in self.languages if x not in ("en", "cn")]
        if bad:
            raise ValueError(f"mathbench: unknown language(s) {bad}; use 'en' and/or 'cn'")
        self.stages = tuple(stages) if stages is not None else None
        super().__init__(prompts=prompts)

    # ------------------------------------------------------------------ loading
    def _load_hub(self, split: str) -> list[Item]:
        candidates = [os.environ.get("MATHBENCH_DIR"), "mathbench_v1", "data/mathbench_v1"]
        for cand in candidates:
            if cand and Path(cand).is_dir():
                return self._load_local(Path(cand), split)
        raise DataUnavailableError(
            "mathbench: MathBench has no Hugging Face dataset; it is distributed only as the "
            "release archive mathbench_v1.zip (OpenCompass id opencompass/mathbench). Unzip it "
            "and pass the folder: get_benchmark('mathbench').load('path/to/mathbench_v1'), or "
            "set MATHBENCH_DIR; load('bundled') gives the mini pack."
        )

    def _load_local(self, path: Path, split: str | None) -> list[Item]:
        if path.is_dir() and (path / "mathbench_v1").is_dir():
            path = path / "mathbench_v1"
        files = [path] if path.is_file() else sorted(path.glob("*/*.jsonl"))
        if not files:
            raise DataUnavailableError(f"mathbench: no <stage>/<name>.jsonl files under {path}")
        items: list[Item] = []
        for f in files:
            stage, name = f.parent.name, f.stem
            if name not in FILE_NAMES:
                continue
            language = name.rsplit("_", 1)[1]
            if language not in self.languages:
                continue
            if self.stages is not None and stage not in self.stages:
                continue
            for n, row in enumerate(read_records(f)):
                items.append(self._item(row, stage, name, n, f))
        return items

    def _item(self, row: dict[str, Any], stage: str, name: str, n: int, path: Path) -> Item:
        where = f"{path} row {n}"
        kind = "single_choice" if name.startswith("single_choice") else "cloze"
        require_fields(
            row,
            ("question", "answer", "options")
            if kind == "single_choice"
            else ("question", "answer"),
            benchmark=self.name,
            where=where,
        )
        meta: dict[str, Any] = {
            "stage": stage,
            "name": name,
            "language": name.rsplit("_", 1)[1],
            "part": "T" if stage.endswith("_knowledge") else "A",
            "topic": row.get("topic"),
        }
        answer = str(row["answer"]).strip()
        if kind == "single_choice":
            options = [str(o) for o in row["options"]]
            if len(options) != 4:
                raise DataFormatError(f"mathbench: {where} has {len(options)} options, not 4")
            if answer not in "ABCD" or len(answer) != 1:
                raise DataFormatError(f"mathbench: {where} answer {answer!r} is not A-D")
            meta["options"] = options
        record = {k: v for k, v in row.items() if k != "__file__"}
        return Item(
            benchmark=self.name,
            item_id=f"{stage}/{name}:{n}",
            question=str(row["question"]).strip(),
            target=answer,
            kind=kind,
            record=record,
            meta=meta,
        )

    # ------------------------------------------------------------------ prompts
    def _patterns(self, item: Item) -> tuple[str, ...]:
        if item.kind != "single_choice":
            return ("",)
        return CIRCULAR_PATTERNS if self.circular else CIRCULAR_PATTERNS[:1]

    def _choice_prompt(self, item: Item, pattern: str) -> str:
        options, _ = rotate(item.meta["options"], item.target, pattern)
        lines = "\n".join(f"{'ABCD'[i]}. {o}" for i, o in enumerate(options))
        key = "solve_choice_cn" if item.meta["language"] == "cn" else "solve_choice"
        return self.prompts.render(key, question=item.question, options=lines)

    def solve_prompt(self, item: Item) -> str:
        """The (unrotated) solve prompt."""
        return self.solve_prompts(item)[0]

    def solve_prompts(self, item: Item) -> list[str]:
        """One prompt for cloze; the four CE-4 rotations for single choice (if circular)."""
        if item.kind == "single_choice":
            return [self._choice_prompt(item, p) for p in self._patterns(item)]
        key = "solve_cn" if item.meta["language"] == "cn" else "solve"
        return [self.prompts.render(key, question=item.question)]

    # ------------------------------------------------------------------ grading
    def _grade_one(self, item: Item, response: str, pattern: str) -> dict[str, Any]:
        if item.kind == "single_choice":
            _, gold = rotate(item.meta["options"], item.target, pattern)
            letter, rule = extract_option(response)
            correct = letter is not None and letter == gold
            return {
                "pattern": pattern,
                "gold": gold,
                "extracted": letter,
                "rule": rule,
                "correct": float(correct),
            }
        answer, rule = extract_cloze(response)
        correct = answer is not None and _same_answer(item.target, answer)
        return {
            "pattern": "",
            "gold": item.target,
            "extracted": answer,
            "rule": rule,
            "correct": float(correct),
        }

    @classmethod
    def same_answer(cls, a: str, b: str) -> bool:
        """Equal after normalisation, or mathematically equal by math-verify."""
        return super().same_answer(a, b) or verify_latex(a, b).verdict is True

    def grade(self, item: Item, response: str) -> Grade:
        """Grade one response to the unrotated prompt."""
        r = self._grade_one(item, response, self._patterns(item)[0])
        status = "unextractable" if r["extracted"] is None else "ok"
        return Grade(
            r["correct"], status, r["extracted"], score=r["correct"], details={"rotations": [r]}
        )

    def grade_responses(self, item: Item, responses: Sequence[str]) -> Grade:
        """Grade the responses to :meth:`solve_prompts`; CE-4: correct only if all four are."""
        patterns = self._patterns(item)
        if len(responses) != len(patterns):
            raise ValueError(
                f"mathbench item {item.item_id}: expected {len(patterns)} solve responses, "
                f"got {len(responses)}"
            )
        rotations = [self._grade_one(item, r, p) for r, p in zip(responses, patterns)]
        values = [r["correct"] for r in rotations]
        unextractable = any(r["extracted"] is None for r in rotations)
        return Grade(
            float(all(v == 1.0 for v in values)),
            "unextractable" if unextractable else "ok",
            rotations[0]["extracted"],
            score=float(np.mean(values)),
            details={"rotations": rotations},
        )

    def _answer_text(self, item: Item, value: str, pattern: str) -> str:
        if item.kind == "single_choice":
            if item.meta["language"] == "cn":
                return f"逐步分析各个选项后可以确定。所以答案为选项{value}"
            return (
                "Checking each option step by step, only one is consistent.\n"
                f"Therefore, the correct answer is option {value}"
            )
        if item.meta["language"] == "cn":
            return f"一步一步计算并检验结果。答案是{value}"
        return f"Computing step by step and checking the result.\nThe answer is {value}"

    def reference_response(self, item: Item, prompt_index: int = 0) -> str:
        """A reply with the gold answer (the gold letter of that rotation for single choice)."""
        self._check_prompt_index(item, prompt_index)
        pattern = self._patterns(item)[prompt_index]
        if item.kind == "single_choice":
            _, gold = rotate(item.meta["options"], item.target, pattern)
            return self._answer_text(item, gold, pattern)
        return self._answer_text(item, item.target, pattern)

    def wrong_response(self, item: Item, rng: np.random.Generator, prompt_index: int = 0) -> str:
        """Another option of that rotation, or a perturbed number for cloze."""
        self._check_prompt_index(item, prompt_index)
        pattern = self._patterns(item)[prompt_index]
        if item.kind == "single_choice":
            _, gold = rotate(item.meta["options"], item.target, pattern)
            others = [c for c in "ABCD" if c != gold]
            return self._answer_text(item, others[int(rng.integers(3))], pattern)
        value = parse_number(item.target)
        if value is None:
            return self._answer_text(item, "-1", pattern)
        delta = int(rng.integers(1, 10))
        wrong = int(value) + delta if float(value).is_integer() else round(value + delta, 6)
        return self._answer_text(
            item, f"{wrong:g}" if isinstance(wrong, float) else str(wrong), pattern
        )

    def aggregate(self, items: Sequence[Item], grades: Sequence[Grade]) -> dict[str, float]:
        """acc_1, acc_4, perf_4 (single choice), cloze accuracy, per-stage scores, and the
        OpenCompass summary: MathBench-A, MathBench-T and their mean ``overall``.

        A file (stage/name) scores perf_4 for single choice (acc_1 when not circular) and
        accuracy for cloze; a stage is the mean of its cn and en files. Every figure is over
        all items, an ungraded item counted wrong (in each of its rotations); the overall
        figures have graded-only twins (``acc_1_graded``, ..., ``overall_graded``) and
        ``ungraded`` counts the items left out of those.
        """
        if len(items) != len(grades):
            raise ValueError(f"mathbench: {len(items)} items but {len(grades)} grades")
        out = self._figures([(it, self._counted(it, g)) for it, g in zip(items, grades)])
        graded = self._figures([(it, g) for it, g in zip(items, grades) if g.graded])
        for key in _OVERALL:
            out[f"{key}_graded"] = graded[key]
        out["ungraded"] = float(sum(not g.graded for g in grades))
        return out

    def _counted(self, item: Item, grade: Grade) -> Grade:
        """The grade, or for an ungraded item a wrong answer to each of its solve prompts."""
        if grade.graded:
            return grade
        rotations = [{"correct": 0.0} for _ in self._patterns(item)]
        return Grade(0.0, grade.status, None, score=0.0, details={"rotations": rotations})

    def _figures(self, pairs: Sequence[tuple[Item, Grade]]) -> dict[str, float]:
        """The figures of (item, grade) pairs; ungraded ones are counted or dropped before."""
        acc1, acc4, perf4, cloze = [], [], [], []
        per_file: dict[tuple[str, str], list[float]] = defaultdict(list)
        for item, g in pairs:
            rotations = g.details.get("rotations") or [{"correct": g.correct}]
            if item.kind == "single_choice":
                acc1.append(rotations[0]["correct"])
                acc4.extend(r["correct"] for r in rotations)
                if self.circular and len(rotations) == len(CIRCULAR_PATTERNS):
                    perf4.append(g.correct)
                file_score = g.correct if self.circular else rotations[0]["correct"]
            else:
                cloze.append(g.correct)
                file_score = g.correct
            per_file[(item.meta["stage"], item.meta["name"])].append(file_score)

        def mean(xs: Sequence[float]) -> float:
            return float(np.mean(xs)) if len(xs) else float("nan")

        out = {
            "acc_1": mean(acc1),
            "acc_4": mean(acc4) if self.circular else float("nan"),
            "perf_4": mean(perf4),
            "cloze_accuracy": mean(cloze),
        }
        stages: dict[str, list[float]] = defaultdict(list)
        for (stage, _name), values in per_file.items():
            stages[stage].append(mean(values))
        for stage in sorted(stages):
            out[f"score/{stage}"] = mean(stages[stage])
        a = [out[f"score/{s}"] for s in APPLICATION_STAGES if f"score/{s}" in out]
        t = [out[f"score/{s}"] for s in KNOWLEDGE_STAGES if f"score/{s}" in out]
        out["MathBench-A"] = mean(a)
        out["MathBench-T"] = mean(t)
        out["overall"] = mean(
            [x for x in (out["MathBench-A"], out["MathBench-T"]) if not np.isnan(x)]
        )
        return out
