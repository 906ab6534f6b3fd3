"""LegalBench (nguha/legalbench): 162 legal reasoning tasks, one HF config per task.

Grading follows the authors' ``evaluation.py``: answers are normalised (punctuation removed,
stripped, lower-cased); classification tasks score balanced accuracy over the task;
``sara_numeric`` counts answers within 10% of the dollar amount; ``successor_liability`` and
``ssla_*`` score F1 over the listed items; ``citation_prediction_open`` checks that the case name
is contained in the answer; ``definition_extraction`` compares Porter-stemmed terms; ``rule_qa``
needs manual evaluation (``correct`` is NaN). Each item also records a per-item exact match for
the item table.

Chat models explain themselves, so the answer is read from the final ``Answer:`` line (else the
first line), and a reply that starts with a label ("Yes, because ...") counts as that label.
"""

from __future__ import annotations

import dataclasses
import re
import string
import warnings
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
    load_hf,
    read_records,
    require_fields,
)
from metacog_tasks.benchmarks.base import Grade, Item, SimWording, TaskOption

__all__ = ["DEFAULT_TASKS", "TASKS", "LegalBench", "TaskSpec", "extract_answer", "normalize"]

HF_ID = "nguha/legalbench"
#: HELM's LegalBench subset: the default task list when loading from the Hub.
DEFAULT_TASKS = (
    "abercrombie",
    "corporate_lobbying",
    "function_of_decision_section",
    "international_citizenship_questions",
    "proa",
)
_YES_NO = ("Yes", "No")
_SUCCESSOR_CLASSES = (
    "express agreement",
    "fraudulent conveyance",
    "de facto merger",
    "mere continuation",
)

PROMPTS = {
    "solve": "{examples}{question}\n\n{answer_format}",
    "answer_labels": (
        "Answer with one of: {labels}. You may give a short reason first, then end with a "
        'final line of the form "Answer: <label>".'
    ),
    "answer_free": '{hint} End with a final line of the form "Answer: <your answer>".',
    "examples": "Here are solved examples of the same task.\n\n{examples}\n\nNow the task.\n\n",
}
PROMPT_FIELDS = {
    "solve": frozenset({"examples", "question", "answer_format"}),
    "answer_labels": frozenset({"labels"}),
    "answer_free": frozenset({"hint"}),
    "examples": frozenset({"examples"}),
}


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """How one LegalBench task is asked and scored.

    Attributes:
        question: The question, a format string over the record's fields.
        metric: ``balanced_accuracy``, ``sara_numeric``, ``successor_liability``,
            ``citation_open``, ``definition_extraction``, ``ssla``, ``exact_match`` or ``manual``.
        labels: The label set of a classification task (``None``: free generation).
        probe: The probe's question when it must hide more than ``question`` (options, statute).
        hint: Answer-format hint of a generation task.
    """

    question: str
    metric: str = "balanced_accuracy"
    labels: tuple[str, ...] | None = _YES_NO
    probe: str | None = None
    hint: str = ""


TASKS: dict[str, TaskSpec] = {
    "abercrombie": TaskSpec(
        "On the Abercrombie spectrum of trademark distinctiveness, how should the following "
        "mark be classified?\n\n{text}",
        labels=("generic", "descriptive", "suggestive", "arbitrary", "fanciful"),
    ),
    "hearsay": TaskSpec(
        "Under the U.S. Federal Rules of Evidence, is the following evidence hearsay?\n\n{text}"
    ),
    "proa": TaskSpec(
        "Does the following statutory clause create a private right of action?\n\n{text}"
    ),
    "personal_jurisdiction": TaskSpec(
        "Does the court named in the following scenario have personal jurisdiction over the "
        "defendant?\n\n{text}"
    ),
    "contract_qa": TaskSpec("{question}\n\nClause: {text}"),
    "international_citizenship_questions": TaskSpec("{question}"),
    "corporate_lobbying": TaskSpec(
        "Is the following bill relevant to the interests of the company?\n\n"
        "Bill: {bill_title}\n{bill_summary}\n\nCompany: {company_name}. {company_description}"
    ),
    "function_of_decision_section": TaskSpec(
        "What legal function does the following paragraph of a judicial decision serve?\n\n"
        "{Paragraph}",
        labels=("Facts", "Procedural History", "Issue", "Rule", "Analysis", "Conclusion", "Decree"),
    ),
    "rule_qa": TaskSpec(
        "{text}", metric="manual", labels=None, hint="State the rule in one or two sentences."
    ),
    "definition_extraction": TaskSpec(
        "The following sentence from a judicial opinion defines a term. Which term is being "
        "defined?\n\n{text}",
        metric="definition_extraction",
        labels=None,
        hint="Give only the term.",
    ),
    "successor_liability": TaskSpec(
        "Under U.S. corporate law, which exceptions to the rule against successor liability "
        "(express agreement, fraudulent conveyance, de facto merger, mere continuation) apply "
        "to the following facts?\n\n{text}",
        metric="successor_liability",
        labels=None,
        probe="Under U.S. corporate law, which exceptions to the rule against successor "
        "liability apply to the following facts?\n\n{text}",
        hint="List every exception that applies, separated by commas.",
    ),
    "citation_prediction_open": TaskSpec(
        "Which case ({circuit}) is usually cited for the following proposition?\n\n{text}",
        metric="citation_open",
        labels=None,
        hint="Give the case name.",
    ),
    "sara_numeric": TaskSpec(
        "Statute:\n{statute}\n\nFacts: {description}\n\nQuestion: {question}",
        metric="sara_numeric",
        labels=None,
        probe="Facts: {description}\n\nQuestion: {question}",
        hint="Give the amount in dollars.",
    ),
    "ssla_company_defendants": TaskSpec(
        "The following excerpt comes from a securities class action complaint. Which companies "
        "are named as defendants?\n\n{text}",
        metric="ssla",
        labels=None,
        hint="List the company names, separated by commas.",
    ),
    "ssla_individual_defendants": TaskSpec(
        "The following excerpt comes from a securities class action complaint. Which "
        "individuals are named as defendants?\n\n{text}",
        metric="ssla",
        labels=None,
        hint="List the names, separated by commas.",
    ),
    "ssla_plaintiff": TaskSpec(
        "The following excerpt comes from a securities class action complaint. Who is the "
        "plaintiff?\n\n{text}",
        metric="ssla",
        labels=None,
        hint="List the names, separated by commas.",
    ),
    "cuad_audit_rights": TaskSpec(
        "Does the following contract clause give a party the right to audit the books, records "
        "or operations of the other party?\n\n{text}"
    ),
}
for _n in range(1, 7):
    TASKS[f"diversity_{_n}"] = TaskSpec(
        "Does the following case meet the requirements of U.S. federal diversity jurisdiction "
        "(complete diversity of citizenship and more than $75,000 in controversy)?\n\n{text}"
    )


def _family_spec(task: str) -> TaskSpec | None:
    """Specs of task families named by prefix (cuad_*, contract_nli_*, learned_hands_*)."""
    if task.startswith("cuad_"):
        topic = task[len("cuad_") :].replace("_", " ").replace("-", " ")
        return TaskSpec(f"Does the following contract clause concern {topic}?\n\n{{text}}")
    if task.startswith("contract_nli_"):
        topic = task[len("contract_nli_") :].replace("_", " ").replace("-", " ")
        return TaskSpec(
            "Consider the following passage of a non-disclosure agreement. Does it state the "
            f"obligation or permission about {topic} described by the task?\n\n{{text}}"
        )
    if task.startswith("learned_hands_"):
        topic = task[len("learned_hands_") :].replace("_", " ")
        return TaskSpec(
            f"Does the following post describe a legal issue concerning {topic}?\n\n{{text}}"
        )
    return None


def _generic_spec(rows: Sequence[dict[str, Any]]) -> TaskSpec:
    answers = {str(r.get("answer", "")) for r in rows}
    question = "{question}\n\n{text}" if rows and "question" in rows[0] else "{text}"
    if 1 < len(answers) <= 12 and all(len(a) <= 40 for a in answers):
        labels = tuple(sorted(answers))
        if set(labels) <= set(_YES_NO):
            labels = _YES_NO
        return TaskSpec(question, labels=labels)
    return TaskSpec(question, metric="exact_match", labels=None, hint="Give the answer.")


def normalize(text: Any, stem: bool = False) -> str:
    """The authors' normalisation: no punctuation, stripped, lower case (optionally stemmed)."""
    text = str(text).translate(str.maketrans("", "", string.punctuation)).strip().lower()
    if stem:
        try:
            from nltk.stem.porter import PorterStemmer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "legalbench definition_extraction needs nltk (pip install nltk)"
            ) from exc
        text = PorterStemmer().stem(text)
    return text


_ANSWER_LINE = re.compile(r"(?:final\s+)?answer\s*[:：]\s*(.*)", re.IGNORECASE)
_STRIP = " \t*_`\"'“”‘’"


def extract_answer(response: str | None) -> str:
    """The text of the last ``Answer:`` line, else the first non-empty line."""
    if not response:
        return ""
    lines = [ln.strip().strip(_STRIP) for ln in str(response).splitlines() if ln.strip()]
    for line in reversed(lines):
        m = _ANSWER_LINE.match(line.strip(_STRIP))
        if m and m.group(1).strip(_STRIP):
            return m.group(1).strip(_STRIP)
    return lines[0] if lines else ""


def _match_label(answer: str, labels: Sequence[str]) -> tuple[str | None, str]:
    norm = normalize(answer)
    by_norm = {normalize(lab): lab for lab in labels}
    if norm in by_norm:
        return by_norm[norm], "exact"
    starts = [lab for n, lab in by_norm.items() if norm.startswith(n + " ")]
    if len(starts) == 1:
        return starts[0], "label_prefix"
    if len(starts) > 1:  # "Procedural History ..." vs a shorter label: take the longest
        return max(starts, key=len), "label_prefix"
    return None, "off_label"


def _f1_counts(metric: str, gold: str, answer: str) -> tuple[int, int, int, int]:
    """The authors' (tp, fp, fn) of one item, and the generated entries left unmatched."""
    if metric == "successor_liability":
        predictions = [c for c in _SUCCESSOR_CLASSES if c in answer]
        remaining = [a.strip() for a in str(gold).split(",")]
        tp = fp = 0
        for p in predictions:
            if p in remaining:
                remaining.remove(p)
                tp += 1
            else:
                fp += 1
        return tp, fp, len(remaining), fp
    # ssla: each gold entity contained in some generated entity
    golds = [normalize(a) for a in str(gold).split(",")]
    gens = [normalize(g) for g in str(answer).split(",")]
    tp = fp = fn = 0
    for a in golds:
        hit = next((j for j, g in enumerate(gens) if a in g), None)
        if hit is None:
            fn += 1
        else:
            tp += 1
            del gens[hit]
        # The authors add the generations still unmatched after *each* gold, so a perfect
        # multi-entity answer still has fp > 0; kept for their corpus F1.
        fp += len(gens)
    return tp, fp, fn, len(gens)


def _f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0


def _task_score(metric: str, pairs: Sequence[tuple[Item, Grade]]) -> tuple[str, float]:
    """A task's score under its (automatic) metric: (metric name, score). An ungraded item
    counts wrong: its prediction is empty, and for F1 its counts are an empty answer's, as
    are those of an answer that could not be read."""
    if metric == "balanced_accuracy":
        from sklearn.metrics import balanced_accuracy_score

        y_true = [normalize(it.target) for it, _ in pairs]
        y_pred = [
            g.details.get("normalized", normalize(g.extracted or "")) if g.graded else ""
            for _, g in pairs
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # predictions outside the gold classes
            return metric, float(balanced_accuracy_score(y_true, y_pred))
    if metric in ("successor_liability", "ssla"):
        counts = [
            (g.details["tp"], g.details["fp"], g.details["fn"])
            if g.graded and "tp" in g.details
            else _f1_counts(metric, it.target, "")[:3]
            for it, g in pairs
        ]
        tp, fp, fn = (sum(c[k] for c in counts) for k in range(3))
        return "f1", _f1(tp, fp, fn)
    return "accuracy", float(np.mean([g.correct if g.graded else 0.0 for _, g in pairs]))


class LegalBench(TemplatedBenchmark):
    """LegalBench with the authors' per-task normalisation and metrics.

    Args:
        tasks: Task names (default: every task found locally; :data:`DEFAULT_TASKS`, HELM's
            subset, from the Hub).
        fewshot: Prepend this many solved examples from the task's train split.
        prompts: Template overrides (``solve``, ``answer_labels``, ``answer_free``,
            ``examples`` and the probes).
    """

    name = "legalbench"
    title = "LegalBench"
    summary = "legal reasoning tasks with the authors' per-task instructions and graders"
    dataset = HF_ID
    order = 3
    simulation = BenchmarkProfile(difficulty_mean=-0.4, difficulty_sd=1.4, legibility=0.8)
    wording = SimWording("legal", "applying the legal rule to these facts")
    rlmf_family = "legal"
    paper = (
        '"LegalBench: A Collaboratively Built Benchmark for Measuring Legal Reasoning in Large '
        'Language Models", NeurIPS 2023 Datasets and Benchmarks, https://arxiv.org/abs/2308.11462'
    )
    homepage = "https://hazyresearch.stanford.edu/legalbench/"
    data_license = "per task; CC BY 4.0 for most (see each task's card)"
    citation = """\
@inproceedings{guha2023legalbench,
  title = {{LegalBench}: A Collaboratively Built Benchmark for Measuring Legal Reasoning in
    Large Language Models},
  author = {Guha, Neel and Nyarko, Julian and Ho, Daniel E. and R{\\'e}, Christopher and others},
  booktitle = {Advances in Neural Information Processing Systems (Datasets and Benchmarks Track)},
  year = {2023},
  eprint = {2308.11462},
  archivePrefix = {arXiv}
}
"""
    task_options = (
        TaskOption(
            "tasks", str, "Task names to run (``-T tasks=proa,hearsay``; default: all).", True
        ),
        TaskOption("fewshot", int, "In-context examples per prompt from each task's train split."),
    )
    solve_max_tokens = 256
    task_noun = "legal question"
    default_split = "test"
    PROMPTS = PROMPTS
    PROMPT_FIELDS = PROMPT_FIELDS

    def __init__(
        self, *, tasks: Iterable[str] | str | None = None, fewshot: int = 0, prompts=None
    ) -> None:
        if isinstance(tasks, str):
            tasks = [t.strip() for t in tasks.split(",") if t.strip()]
        self.tasks = tuple(tasks) if tasks is not None else None
        if fewshot < 0:
            raise ValueError("legalbench: fewshot must be >= 0")
        self.fewshot = int(fewshot)
        self._specs: dict[str, TaskSpec] = {}
        self._examples: dict[str, list[dict[str, Any]]] = {}
        super().__init__(prompts=prompts)

    # ------------------------------------------------------------------ loading
    def spec(self, task: str) -> TaskSpec:
        """The spec of a task (known, family, or inferred from loaded data)."""
        if task in self._specs:
            return self._specs[task]
        spec = TASKS.get(task) or _family_spec(task)
        if spec is None:
            raise ValueError(f"legalbench: no spec for task {task!r}; load its data first")
        return spec

    def _load_hub(self, split: str) -> list[Item]:
        items: list[Item] = []
        for task in self.tasks or DEFAULT_TASKS:
            hint = (
                f"a folder with <task>/{split}.jsonl (or .tsv) files in LegalBench's columns "
                "(index, text, answer, ...)"
            )
            rows = load_hf(self.name, HF_ID, name=task, split=split, local_hint=hint)
            if self.fewshot:
                self._examples[task] = load_hf(
                    self.name, HF_ID, name=task, split="train", local_hint=hint
                )
            items.extend(self._items(task, rows, f"{HF_ID}/{task} {split}"))
        return items

    def _read_split(self, folder: Path, split: str) -> tuple[list[dict[str, Any]], Path] | None:
        for pattern in (f"{split}.jsonl", f"{split}*.jsonl", f"{split}.tsv", f"{split}*.json"):
            files = sorted(folder.glob(pattern))
            if files:
                f = files[0]
                if f.suffix == ".tsv":
                    import pandas as pd

                    df = pd.read_csv(f, sep="\t", dtype=str, keep_default_na=False)
                    rows = df.to_dict(orient="records")
                    for r in rows:
                        if "index" in r and str(r["index"]).isdigit():
                            r["index"] = int(r["index"])
                    return rows, f
                return read_records(f), f
        return None

    def _load_local(self, path: Path, split: str | None) -> list[Item]:
        split = split or self.default_split
        if path.is_file():
            rows = read_records(path)
            task = path.parent.name
            tasks_in_rows = {r.get("task") for r in rows} - {None}
            items: list[Item] = []
            if tasks_in_rows:
                for t in sorted(tasks_in_rows):
                    items += self._items(t, [r for r in rows if r.get("task") == t], str(path))
                return items
            return self._items(task, rows, str(path))
        folders = sorted(p for p in path.iterdir() if p.is_dir())
        if not folders and self._read_split(path, split):
            folders = [path]
        wanted = set(self.tasks) if self.tasks is not None else None
        items = []
        found = set()
        for folder in folders:
            task = folder.name
            if wanted is not None and task not in wanted:
                continue
            got = self._read_split(folder, split)
            if got is None:
                if wanted is not None:
                    raise DataUnavailableError(
                        f"legalbench: no {split} file for task {task} in {folder}"
                    )
                continue
            rows, f = got
            found.add(task)
            if self.fewshot:
                train = self._read_split(folder, "train")
                self._examples[task] = train[0] if train else []
            items.extend(self._items(task, rows, str(f)))
        if wanted is not None and wanted - found:
            raise DataUnavailableError(
                f"legalbench: task folder(s) {sorted(wanted - found)} not found in {path}"
            )
        if not items:
            raise DataUnavailableError(f"legalbench: no <task>/{split}*.jsonl files in {path}")
        return items

    def _items(self, task: str, rows: list[dict[str, Any]], where: str) -> list[Item]:
        spec = TASKS.get(task) or _family_spec(task) or _generic_spec(rows)
        self._specs[task] = spec
        fields = [f for _, f, _, _ in string.Formatter().parse(spec.question) if f]
        items = []
        for i, row in enumerate(rows):
            require_fields(
                row,
                ["answer", *fields],
                benchmark=self.name,
                where=f"{where} row {i} (task {task})",
            )
            index = row.get("index", i)
            record = {k: v for k, v in row.items() if k != "__file__"}
            values = {k: str(v) for k, v in row.items()}
            items.append(
                Item(
                    benchmark=self.name,
                    item_id=f"{task}:{index}",
                    question=(spec.probe or spec.question).format(**values).strip(),
                    target=str(row["answer"]).strip(),
                    kind="classification" if spec.labels else "generation",
                    record=record,
                    meta={
                        "task": task,
                        "metric": spec.metric,
                        "labels": list(spec.labels) if spec.labels else None,
                        "solve_question": spec.question.format(**values).strip(),
                        "slice": row.get("slice"),
                    },
                )
            )
        if spec.labels:
            off = sorted({it.target for it in items} - set(spec.labels))
            if off:
                raise DataFormatError(
                    f"legalbench: {where} (task {task}) has answers {off} outside the labels "
                    f"{list(spec.labels)}"
                )
        return items

    # ------------------------------------------------------------------ prompts
    def _answer_format(self, item: Item) -> str:
        if item.meta["labels"]:
            return self.prompts.render("answer_labels", labels=", ".join(item.meta["labels"]))
        return self.prompts.render("answer_free", hint=self.spec(item.meta["task"]).hint)

    def solve_prompt(self, item: Item) -> str:
        """Task question, the text, the answer format; few-shot examples when asked."""
        examples = ""
        task = item.meta["task"]
        if self.fewshot and self._examples.get(task):
            spec = self.spec(task)
            blocks = []
            for row in self._examples[task][: self.fewshot]:
                values = {k: str(v) for k, v in row.items()}
                try:
                    q = spec.question.format(**values)
                except KeyError:
                    continue
                blocks.append(f"{q}\nAnswer: {row['answer']}")
            if blocks:
                examples = self.prompts.render("examples", examples="\n\n".join(blocks))
        return self.prompts.render(
            "solve",
            examples=examples,
            question=item.meta["solve_question"],
            answer_format=self._answer_format(item),
        )

    # ------------------------------------------------------------------ grading
    def grade(self, item: Item, response: str) -> Grade:
        """Per-item verdict under the task's metric (NaN for manual tasks)."""
        metric = item.meta["metric"]
        answer = extract_answer(response)
        if metric == "manual":
            return Grade(
                float("nan"), "manual", answer or None, details={"metric": metric, "answer": answer}
            )
        if not answer:
            return Grade(0.0, "unextractable", None, details={"metric": metric})
        if item.meta["labels"]:
            label, rule = _match_label(answer, item.meta["labels"])
            pred = label if label is not None else answer
            correct = normalize(pred) == normalize(item.target)
            status = "ok" if label is not None else "off_label"
            return Grade(
                float(correct),
                status,
                pred,
                details={"metric": metric, "rule": rule, "normalized": normalize(pred)},
            )
        if metric == "sara_numeric":
            digits = re.search(r"\d+", answer.replace(",", "").replace(".", ""))
            pred = int(digits.group()) if digits else 0
            gold = int(item.target.replace("$", "").replace(",", ""))
            correct = abs(pred / (gold + 1e-1) - 1.0) < 0.1
            status = "ok" if digits else "unextractable"
            return Grade(float(correct), status, answer, details={"metric": metric, "value": pred})
        if metric in ("successor_liability", "ssla"):
            tp, fp, fn, leftover = _f1_counts(metric, item.target, answer)
            f1 = _f1(tp, fp, fn)
            # Per-item exact match: every gold entry found and nothing extra generated.
            return Grade(
                float(fn == 0 and leftover == 0),
                "ok",
                answer,
                score=f1,
                details={"metric": metric, "tp": tp, "fp": fp, "fn": fn},
            )
        if metric == "citation_open":
            correct = normalize(item.target) in normalize(answer)
            return Grade(float(correct), "ok", answer, details={"metric": metric})
        if metric == "definition_extraction":
            golds = [normalize(a, stem=True) for a in item.target.split(",")]
            gens = [normalize(g, stem=True) for g in answer.split(",")]
            correct = any(g in golds for g in gens)
            return Grade(float(correct), "ok", answer, details={"metric": metric})
        correct = normalize(answer) == normalize(item.target)
        return Grade(float(correct), "ok", answer, details={"metric": metric})

    def reference_response(self, item: Item, prompt_index: int = 0) -> str:
        """A short reason and ``Answer: <gold>``."""
        self._check_prompt_index(item, prompt_index)
        return f"Applying the relevant rule to these facts.\nAnswer: {item.target}"

    def wrong_response(self, item: Item, rng: np.random.Generator, prompt_index: int = 0) -> str:
        """Another label, or a plausible wrong free-text answer."""
        self._check_prompt_index(item, prompt_index)
        metric = item.meta["metric"]
        if item.meta["labels"]:
            others = [
                lab for lab in item.meta["labels"] if normalize(lab) != normalize(item.target)
            ]
            wrong = others[int(rng.integers(len(others)))]
        elif metric == "sara_numeric":
            gold = int(item.target.replace("$", "").replace(",", ""))
            wrong = f"${gold * 2 + 1000 + int(rng.integers(1, 500))}"
        elif metric == "successor_liability":
            golds = {a.strip() for a in item.target.split(",")}
            others = [c for c in _SUCCESSOR_CLASSES if c not in golds]
            wrong = others[int(rng.integers(len(others)))] if others else "none of them"
        elif metric == "definition_extraction":
            golds = {normalize(a, stem=True) for a in item.target.split(",")}
            words = [
                w.strip(string.punctuation + "“”‘’") for w in item.meta["solve_question"].split()
            ]
            words = [
                w
                for w in words
                if len(w) > 3
                and normalize(w, stem=True) not in golds
                and all(normalize(w, stem=True) not in g for g in golds)
            ]
            wrong = words[int(rng.integers(len(words)))] if words else "obligation"
        elif metric == "citation_open":
            wrong = "Marbury v. Madison" if "marbury" not in item.target.lower() else "Roe v. Wade"
        elif metric == "ssla":
            wrong = "Northwind Holdings LLC"
        else:
            wrong = "I am not certain"
        return f"Applying the relevant rule to these facts.\nAnswer: {wrong}"

    def aggregate(self, items: Sequence[Item], grades: Sequence[Grade]) -> dict[str, float]:
        """Per-task scores under the authors' metric (``<metric>/<task>``), their mean
        (``mean``), and the per-item exact match (``exact_match``), over all items: an
        ungraded item counts wrong (for F1, as an empty answer). ``mean_graded`` and
        ``exact_match_graded`` leave ungraded items out, ``ungraded`` counts them. A task
        graded by hand (``manual/<task>``) has no score and stays out of both means; its
        items are ungraded."""
        if len(items) != len(grades):
            raise ValueError(f"legalbench: {len(items)} items but {len(grades)} grades")
        by_task: dict[str, list[tuple[Item, Grade]]] = defaultdict(list)
        for item, g in zip(items, grades):
            by_task[item.meta["task"]].append((item, g))
        out: dict[str, float] = {}
        task_scores = []
        graded_scores = []
        for task in sorted(by_task):
            pairs = by_task[task]
            metric = pairs[0][0].meta["metric"]
            if metric == "manual":
                out[f"manual/{task}"] = float("nan")
                continue
            name, score = _task_score(metric, pairs)
            out[f"{name}/{task}"] = score
            task_scores.append(score)
            graded = [(it, g) for it, g in pairs if g.graded]
            if graded:
                graded_scores.append(_task_score(metric, graded)[1])

        def mean(values: Sequence[float]) -> float:
            return float(np.mean(values)) if len(values) else float("nan")

        out["mean"] = mean(task_scores)
        out["mean_graded"] = mean(graded_scores)
        out["exact_match"] = mean([g.correct if g.graded else 0.0 for g in grades])
        out["exact_match_graded"] = mean([g.correct for g in grades if g.graded])
        out["ungraded"] = float(sum(not g.graded for g in grades))
        return out
