"""SQuAD v1.1 / v2.0 (rajpurkar/squad, rajpurkar/squad_v2), closed-book by default.

Grading is the official evaluation (``evaluate-v2.0.py``, identical to v1.1 on answerable
questions): answers are lower-cased, stripped of punctuation and of the articles a/an/the,
whitespace collapsed; EM and token F1 are the maximum over the gold answers; in v2.0 an
unanswerable question has the single gold answer ``""`` and the empty prediction means "no
answer". ``Grade.correct`` is EM, ``Grade.score`` is F1.

Version default: v1.1. The paper asks closed-book (no passage), where v2.0's unanswerable
questions (unanswerable *from the passage*) have no meaning; v2.0 is fully supported
(``version="2.0"``), and is the natural choice with ``open_book=True``.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from metacog_metrics import BenchmarkProfile
from metacog_tasks.benchmarks._common import TemplatedBenchmark
from metacog_tasks.benchmarks._data import (
    DataFormatError,
    DataUnavailableError,
    load_hf,
    read_records,
    require_fields,
)
from metacog_tasks.benchmarks.base import Grade, Item, SimWording, TaskOption, normalize_answer

__all__ = [
    "SQuAD",
    "exact_match",
    "extract_answer",
    "f1_score",
    "normalize_answer",
]

HF_IDS = {"1.1": ("rajpurkar/squad", "plain_text"), "2.0": ("rajpurkar/squad_v2", "squad_v2")}

PROMPTS = {
    "solve": (
        "Answer the following question with a short phrase: only the answer, a few words at "
        "most, not a sentence.{no_answer}\n\n"
        "Question: {question}\n\n"
        'End with a final line of the form "Answer: <your answer>".'
    ),
    "solve_open_book": (
        "Read the passage and answer the question with the shortest span of the passage that "
        "answers it.{no_answer}\n\n"
        "Title: {title}\n\n"
        "Passage: {context}\n\n"
        "Question: {question}\n\n"
        'End with a final line of the form "Answer: <your answer>".'
    ),
    "no_answer": (' If the question cannot be answered{source}, answer "unanswerable".'),
}
PROMPT_FIELDS = {
    "solve": frozenset({"question", "no_answer"}),
    "solve_open_book": frozenset({"question", "context", "title", "no_answer"}),
    "no_answer": frozenset({"source"}),
}

#: Replies that mean "no answer" under v2.0 (compared after normalisation).
NO_ANSWER = frozenset(
    {
        "",
        "unanswerable",
        "no answer",
        "none",
        "n/a",
        "na",
        "cannot be answered",
        "question cannot be answered",
        "it cannot be answered",
        "not answerable",
        "unknown",
    }
)
_ANSWER_LINE = re.compile(r"(?:final\s+)?answer\s*[:：]\s*(.*)", re.IGNORECASE)
_STRIP = " \t*_`\"'“”‘’"


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split() if text else []


def exact_match(gold: str, pred: str) -> int:
    """Official EM of one gold answer and one prediction."""
    return int(normalize_answer(gold) == normalize_answer(pred))


def f1_score(gold: str, pred: str) -> float:
    """Official token F1 of one gold answer and one prediction."""
    return _f1(_tokens(gold), _tokens(pred))


def _f1(gold_toks: list[str], pred_toks: list[str]) -> float:
    if not gold_toks or not pred_toks:
        return float(gold_toks == pred_toks)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_toks), same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def score_prediction(golds: Sequence[str], prediction: str) -> tuple[int, float]:
    """EM and F1 of a raw prediction: max over the golds; no gold means the gold ``""``."""
    # Each text normalised once (RLMF's rewards grade every completion of every GRPO batch).
    pred = normalize_answer(prediction)
    pred_toks = pred.split()
    normed = [n for n in map(normalize_answer, golds) if n] or [""]
    return max(int(g == pred) for g in normed), max(_f1(g.split(), pred_toks) for g in normed)


def extract_answer(response: str | None, *, allow_no_answer: bool = False) -> str:
    """The answer span of a reply: the text of the last ``Answer:`` line, else the first line.

    Markdown, quotes and a trailing period are stripped. With ``allow_no_answer`` (v2.0),
    replies such as "unanswerable" or "no answer" become the empty prediction.
    """
    if not response:
        return ""
    lines = [ln.strip() for ln in str(response).splitlines() if ln.strip()]
    if not lines:
        return ""
    answer = None
    for line in reversed(lines):
        m = _ANSWER_LINE.search(line.strip(_STRIP))
        if m:
            answer = m.group(1)
            break
    if answer is None:
        answer = lines[0]
    answer = answer.strip(_STRIP)
    if answer.endswith(".") and not answer.endswith(".."):
        answer = answer[:-1].strip(_STRIP)
    if allow_no_answer and normalize_answer(answer).replace("/", "") in NO_ANSWER | {
        normalize_answer(x) for x in NO_ANSWER
    }:
        return ""
    return answer


class SQuAD(TemplatedBenchmark):
    """SQuAD reading comprehension, asked closed-book by default (as in the paper).

    Args:
        version: ``"1.1"`` (default) or ``"2.0"`` (with unanswerable questions).
        open_book: Show the passage in the solve prompt (the probes never show it).
        prompts: Template overrides (``solve``, ``solve_open_book``, ``no_answer`` and the
            probes).
    """

    name = "squad"
    title = "SQuAD"
    summary = "reading-comprehension questions, asked closed-book by default, graded by EM"
    dataset = HF_IDS["1.1"][0]
    order = 1
    simulation = BenchmarkProfile(difficulty_mean=0.0, difficulty_sd=1.5)
    wording = SimWording("factual", "recalling a specific detail of the passage's subject")
    rlmf_family = "qa"
    paper = (
        '"SQuAD: 100,000+ Questions for Machine Comprehension of Text", EMNLP 2016, '
        "https://arxiv.org/abs/1606.05250"
    )
    homepage = "https://rajpurkar.github.io/SQuAD-explorer/"
    data_license = "CC BY-SA 4.0"
    citation = """\
@inproceedings{rajpurkar2016squad,
  title = {{SQuAD}: 100,000+ Questions for Machine Comprehension of Text},
  author = {Rajpurkar, Pranav and Zhang, Jian and Lopyrev, Konstantin and Liang, Percy},
  booktitle = {Proceedings of the 2016 Conference on Empirical Methods in Natural Language
    Processing},
  pages = {2383--2392},
  year = {2016},
  eprint = {1606.05250},
  archivePrefix = {arXiv}
}
"""
    task_options = (
        TaskOption("open_book", bool, "Show the context passage in the solve prompt."),
        TaskOption("version", str, "SQuAD version, 1.1 or 2.0 (benchmark default when unset)."),
    )
    solve_max_tokens = 256
    task_noun = "general-knowledge question"
    default_split = "validation"
    PROMPTS = PROMPTS
    PROMPT_FIELDS = PROMPT_FIELDS

    def __init__(self, *, version: str = "1.1", open_book: bool = False, prompts=None) -> None:
        version = str(version).lstrip("v")
        if version in ("1", "2"):
            version += ".0" if version == "2" else ".1"
        if version not in HF_IDS:
            raise ValueError(f"squad: unknown version {version!r}; use '1.1' or '2.0'")
        self.version = version
        self.open_book = bool(open_book)
        super().__init__(prompts=prompts)

    # ------------------------------------------------------------------ loading
    def _load_hub(self, split: str) -> list[Item]:
        path, config = HF_IDS[self.version]
        rows = load_hf(
            self.name,
            path,
            name=config,
            split=split,
            fields=("id", "title", "context", "question", "answers"),
            local_hint=(
                f"the official dev-v{self.version}.json, or a JSONL of {path} rows "
                "(id, title, context, question, answers{text, answer_start})"
            ),
        )
        return self._items(rows, f"{path} {split}")

    def _load_local(self, path: Path, split: str | None) -> list[Item]:
        if path.is_dir():
            sub = path / f"v{self.version}"
            if sub.is_dir():
                path = sub
            split = split or self.default_split
            files = sorted(path.glob(f"*{split}*.jsonl")) or sorted(path.glob("dev-*.json"))
            files = files or sorted(path.glob("*.jsonl"))
            if not files:
                raise DataUnavailableError(
                    f"squad: no '*{split}*.jsonl' or 'dev-*.json' file in {path}"
                )
            items: list[Item] = []
            for f in files:
                items.extend(self._load_file(f))
            return items
        return self._load_file(path)

    def _load_file(self, path: Path) -> list[Item]:
        if path.suffix.lower() == ".json":
            rows = read_records(path)
            if len(rows) == 1 and "data" in rows[0]:
                return self._items(self._flatten(rows[0], path), str(path))
        return self._items(read_records(path), str(path))

    def _flatten(self, doc: dict[str, Any], path: Path) -> list[dict[str, Any]]:
        """Rows in the HF shape from the official nested JSON."""
        file_version = str(doc.get("version", "")).lstrip("v")
        has_impossible = False
        rows = []
        for article in doc["data"]:
            for para in article["paragraphs"]:
                for qa in para["qas"]:
                    has_impossible |= bool(qa.get("is_impossible"))
                    answers = qa.get("answers", [])
                    rows.append(
                        {
                            "id": qa["id"],
                            "title": article.get("title", ""),
                            "context": para["context"],
                            "question": qa["question"],
                            "answers": {
                                "text": [a["text"] for a in answers],
                                "answer_start": [a["answer_start"] for a in answers],
                            },
                        }
                    )
        if self.version == "1.1" and (file_version == "2.0" or has_impossible):
            raise DataFormatError(
                f"squad: {path} is SQuAD v2.0 (unanswerable questions); "
                "use get_benchmark('squad', version='2.0')"
            )
        return rows

    def _items(self, rows: list[dict[str, Any]], where: str) -> list[Item]:
        items = []
        for i, row in enumerate(rows):
            require_fields(
                row, ("id", "question", "answers"), benchmark=self.name, where=f"{where} row {i}"
            )
            answers = row["answers"]
            if isinstance(answers, dict):
                texts = list(answers.get("text", []))
            else:  # a list of {"text", "answer_start"} as in the nested format
                texts = [a["text"] if isinstance(a, dict) else str(a) for a in answers]
            if not texts and self.version == "1.1":
                raise DataFormatError(
                    f"squad: {where} row {i} (id {row['id']}) has no answer, which only "
                    "SQuAD v2.0 allows; use get_benchmark('squad', version='2.0')"
                )
            record = {k: v for k, v in row.items() if k != "__file__"}
            items.append(
                Item(
                    benchmark=self.name,
                    item_id=str(row["id"]),
                    question=str(row["question"]).strip(),
                    target=texts,
                    kind="answerable" if texts else "unanswerable",
                    record=record,
                    meta={
                        "title": str(row.get("title", "")),
                        "context": str(row.get("context", "")),
                        "version": self.version,
                    },
                )
            )
        return items

    # ------------------------------------------------------------------ prompts
    def _no_answer(self) -> str:
        if self.version != "2.0":
            return ""
        source = " from the passage" if self.open_book else ""
        return self.prompts.render("no_answer", source=source)

    def solve_prompt(self, item: Item) -> str:
        """Closed-book (question only) unless ``open_book``; v2.0 adds the no-answer rule."""
        if self.open_book:
            return self.prompts.render(
                "solve_open_book",
                question=item.question,
                context=item.meta["context"],
                title=item.meta["title"].replace("_", " "),
                no_answer=self._no_answer(),
            )
        return self.prompts.render("solve", question=item.question, no_answer=self._no_answer())

    # ------------------------------------------------------------------ grading
    def grade(self, item: Item, response: str) -> Grade:
        """Official EM (``correct``) and F1 (``score``) of the extracted answer."""
        pred = extract_answer(response, allow_no_answer=self.version == "2.0")
        return self.grade_prediction(item, pred)

    def grade_prediction(self, item: Item, prediction: str) -> Grade:
        """Official EM/F1 of a raw prediction string (as in a SQuAD predictions file)."""
        em, f1 = score_prediction(list(item.target), prediction)
        status = "ok" if (prediction.strip() or item.kind == "unanswerable") else "unextractable"
        if self.version == "1.1" and not prediction.strip():
            status = "unextractable"
        return Grade(float(em), status, prediction, score=float(f1))

    def reference_response(self, item: Item, prompt_index: int = 0) -> str:
        """``Answer: <first gold>``, or ``Answer: unanswerable`` for a v2.0 no-answer item."""
        self._check_prompt_index(item, prompt_index)
        golds = [g for g in item.target if normalize_answer(g)]
        return f"Answer: {golds[0]}" if golds else "Answer: unanswerable"

    def wrong_response(self, item: Item, rng: np.random.Generator, prompt_index: int = 0) -> str:
        """Another span of the passage sharing no token with any gold answer."""
        self._check_prompt_index(item, prompt_index)
        gold_tokens = {t for g in item.target for t in _tokens(g)}
        words = str(item.meta.get("context", "")).split()
        candidates = []
        for size in (3, 2, 1):
            for start in range(0, max(len(words) - size + 1, 0)):
                span = " ".join(words[start : start + size]).strip(".,;:()\"'")
                toks = _tokens(span)
                if toks and not gold_tokens & set(toks):
                    candidates.append(span)
            if candidates:
                break
        if not candidates:
            candidates = [
                s
                for s in ("a local merchant guild", "seventeen", "the northern coast")
                if not gold_tokens & set(_tokens(s))
            ] or ["zzz"]
        return f"Answer: {candidates[int(rng.integers(len(candidates)))]}"

    def aggregate(self, items: Sequence[Item], grades: Sequence[Grade]) -> dict[str, float]:
        """Official headline x100: v1.1 ``exact_match``/``f1``; v2.0 ``exact``/``f1`` with
        ``HasAns_*`` and ``NoAns_*``. An ungraded item scores 0 in both (as every benchmark's
        aggregate counts it wrong); ``ungraded`` counts them."""
        if len(items) != len(grades):
            raise ValueError(f"squad: {len(items)} items but {len(grades)} grades")
        # Python sums in item order, as the official scripts do: the figures match exactly.
        em = [float(g.correct) if g.graded else 0.0 for g in grades]
        f1 = [float(g.score if g.score is not None else g.correct) if g.graded else 0.0
              for g in grades]  # fmt: skip
        ungraded = float(sum(not g.graded for g in grades))

        def pct(values: list[float]) -> float:
            return 100.0 * sum(values) / len(values) if values else float("nan")

        n = len(grades)
        if self.version == "1.1":
            return {"exact_match": pct(em), "f1": pct(f1), "total": float(n), "ungraded": ungraded}
        out = {"exact": pct(em), "f1": pct(f1), "total": float(n), "ungraded": ungraded}
        has = [it.kind == "answerable" for it in items]
        for label, want in (("HasAns", True), ("NoAns", False)):
            idx = [i for i, h in enumerate(has) if h == want]
            if idx:
                out[f"{label}_exact"] = pct([em[i] for i in idx])
                out[f"{label}_f1"] = pct([f1[i] for i in idx])
                out[f"{label}_total"] = float(len(idx))
        return out
