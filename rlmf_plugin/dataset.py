"""``metacog rlmf build``: record tables and harness logs -> a GRPO dataset (one row per item).

Each row carries the solve prompt (the benchmark's own, plus the answer/confidence format), what
the grader needs later (``benchmark``, ``item_id``, ``source``), and per-item statistics of the
harness samples (one per model, harness and attempt: Inspect ``--epochs``, a record table's
``epoch`` column, or one run per path): ``accuracy`` (mean correctness, an ungraded sample
counted wrong; ``accuracy_graded`` over the graded ones; ``n_ungraded`` counts the others),
``stated_confidence`` (mean verbal confidence of the chosen probe) and
``intrinsic_confidence``, the agreement among the k sampled answers, ``sum_c (n_c / k)^2``
over answer-equivalence classes (RLMF's consistency confidence: the mean over samples of the
share of samples that agree with it, itself included).
Two answers are equivalent when the benchmark's grader marked both correct, or when the
benchmark's record calls their extracted answers the same (``Benchmark.same_answer``: equal
after normalisation; math benchmarks also ask math-verify).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import pandas as pd

from metacog_metrics import Result
from rlmf_plugin._format import FORMAT_INSTRUCTION
from rlmf_plugin._grading import ItemGrader
from rlmf_plugin._io import write_json, write_rows
from rlmf_plugin.consistency import answer_class_labels, equivalent

__all__ = [
    "BuildResult",
    "answer_class_labels",
    "answer_classes",
    "build_dataset",
    "equivalent",
    "load_records",
]

_VERBAL = ("verbal_numeric", "verbal_binary")
_TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".csv.gz", ".csv.bz2", ".csv.xz")


@dataclasses.dataclass(frozen=True)
class BuildResult(Result):
    """What ``build`` wrote.

    Attributes:
        out_dir: The output folder (``dataset/`` for ``datasets.load_from_disk``, ``train.jsonl``).
        n_rows: Dataset rows (items).
        n_insufficient: Items kept with empty statistics (fewer than ``min_samples`` samples).
        n_missing_items: Items of the records absent from the benchmark source (no prompt).
        missing_items: The first few of them, ``benchmark/item_id``.
        n_bad: Bad lines/samples the collectors counted in the logs.
        benchmarks: Rows per benchmark.
        n_ungraded: Samples the grader could not grade (NaN: counted wrong in ``accuracy``
            and as answers of their own in ``intrinsic_confidence``).
        n_ungraded_items: Items with at least one such sample.
    """

    out_dir: str
    n_rows: int
    n_insufficient: int
    n_missing_items: int
    missing_items: tuple[str, ...]
    n_bad: int
    benchmarks: dict[str, int]
    n_ungraded: int = 0
    n_ungraded_items: int = 0


def _is_table(path: Path) -> bool:
    return path.is_file() and str(path).lower().endswith(_TABLE_SUFFIXES)


def _table_records(path: Path) -> list[pd.DataFrame]:
    """A record table, split by its ``epoch`` column when one repeats items."""
    from metacog_metrics import read_records, validate_records

    raw = pd.read_parquet(path) if path.suffix in (".parquet", ".pq") else pd.read_csv(path)
    if "epoch" in raw.columns and raw["epoch"].nunique(dropna=True) > 1:
        return [
            validate_records(part.reset_index(drop=True), source=f"{path} (epoch {e})")
            for e, part in raw.groupby("epoch", sort=True)
        ]
    return [read_records(path)]


def _log_records(path: Path) -> tuple[list[pd.DataFrame], int]:
    """Harness logs: epoch 1 through ``metacog collect``, then the other Inspect epochs."""
    from metacog_metrics import validate_records
    from metacog_tasks.collect import collect
    from metacog_tasks.collect.inspect_logs import read_inspect_logs

    result = collect([path])
    parts = [result.records] if not result.records.empty else []
    n_bad = result.n_bad
    for rep in result.files:
        if rep.harness != "inspect" or rep.skipped:
            continue
        try:
            from inspect_ai.log import read_eval_log

            epochs = int(read_eval_log(rep.path, header_only=True).eval.config.epochs or 1)
        except Exception:  # the collector read it; a header without epochs means one
            epochs = 1
        for e in range(2, epochs + 1):
            more = read_inspect_logs([rep.path], epoch=e)
            n_bad += more.n_bad
            if not more.records.empty:
                parts.append(validate_records(more.records, source=f"{rep.path} (epoch {e})"))
    return parts, n_bad


def load_records(paths: Sequence[str | PathLike[str]]) -> tuple[pd.DataFrame, int]:
    """Record tables (Parquet/CSV) and harness logs (through ``metacog collect``) as one table
    of *attempts*.

    An item may be answered several times by one model: every epoch of an Inspect
    ``--epochs k`` run, a record table's ``epoch`` column, or the same model in several paths
    (e.g. lm-eval runs with sampling and different seeds, one folder each). The ``attempt``
    column numbers them per (model, benchmark, item).

    Returns:
        The records and the number of bad log lines the collectors counted.

    Raises:
        FileNotFoundError: A path does not exist.
        ValueError: Nothing readable was found (the message names the paths).
    """
    frames, n_bad = [], 0
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
        if _is_table(path):
            parts = _table_records(path)
        else:
            parts, bad = _log_records(path)
            n_bad += bad
        for part in parts:
            if not part.empty:
                frames.append(part.assign(_part=len(frames)))
    if not frames:
        raise ValueError(f"no records in {', '.join(map(str, paths))}")
    df = pd.concat(frames, ignore_index=True, sort=False)
    keys = ["model", "benchmark", "item_id"]
    first = df.groupby([*keys, "_part"], sort=False, observed=True).ngroup()
    df["attempt"] = (
        first.groupby([df[k] for k in keys], observed=True).rank(method="dense").astype(int)
    )
    return df.drop(columns="_part"), n_bad


def answer_classes(
    benchmark: str, answers: Sequence[str | None], correct: Sequence[float]
) -> list[int]:
    """Equivalence-class sizes of sampled answers (correct ones form one class, first)."""
    labels = answer_class_labels(benchmark, answers, correct)
    n_right = labels.count(-1)
    wrong = [labels.count(i) for i in range(max(labels, default=-1) + 1)]
    return ([n_right] if n_right else []) + wrong


def _text_or_none(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def _item_rows(records: pd.DataFrame, probe: str | None, min_samples: int) -> list[dict[str, Any]]:
    rows = []
    for (bench, item_id), g in records.groupby(["benchmark", "item_id"], sort=True, observed=True):
        key = [c for c in ("model", "harness", "attempt") if c in g]
        solves = g.drop_duplicates(subset=key) if key else g
        # An ungraded sample (NaN: a failure on the grader's side) counts as wrong and is
        # counted, never dropped: dropping it let the graded samples speak for the item (one
        # right and seven ungraded read as accuracy 1).
        correct = solves["correct"].fillna(0.0)
        n_ungraded = int(solves["correct"].isna().sum())
        conf = g if probe is None else g[g["probe"] == probe]
        verbal = conf[conf["confidence_kind"].isin(_VERBAL)]
        conf = (verbal if not verbal.empty else conf)["confidence"].dropna()
        answers = [_text_or_none(a) for a in solves.get("answer", [None] * len(solves))]
        k = len(solves)
        row: dict[str, Any] = {
            "benchmark": str(bench),
            "item_id": str(item_id),
            "n_samples": k,
            "n_ungraded": n_ungraded,
            "accuracy": None,
            "accuracy_graded": None,
            "stated_confidence": float(conf.mean()) if len(conf) else None,
            "intrinsic_confidence": None,
            "n_answer_classes": None,
            "sample_answers": [a or "" for a in answers],
            "sample_correct": [float(y) for y in solves["correct"]],
        }
        if k >= min_samples:
            sizes = answer_classes(str(bench), answers, list(correct))
            row["accuracy"] = float(correct.mean())
            if k > n_ungraded:
                row["accuracy_graded"] = float(solves["correct"].mean())
            row["intrinsic_confidence"] = float(sum((s / k) ** 2 for s in sizes))
            row["n_answer_classes"] = len(sizes)
        rows.append(row)
    return rows


def build_dataset(
    paths: Sequence[str | PathLike[str]],
    out_dir: str | PathLike[str],
    *,
    benchmarks: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    probe: str | None = None,
    chat: bool = False,
    source: str = "bundled",
    min_samples: int = 2,
    system_prompt: str | None = None,
) -> BuildResult:
    """Build the GRPO dataset and write it to ``out_dir``.

    Args:
        paths: Record tables and/or lm-eval / Inspect output folders and logs.
        out_dir: Output folder: ``dataset/`` (Hugging Face ``datasets``), ``train.jsonl``,
            ``build.json`` (this result).
        benchmarks: Keep these benchmarks only.
        models: Keep these models' samples only (the policy's own runs); all when ``None``.
        probe: The probe whose confidence is ``stated_confidence`` (all probes when ``None``).
        chat: Write the prompt as chat messages instead of plain text.
        source: The benchmark data the harness ran on (``bundled``, or a local file/folder).
        min_samples: Fewest samples (graded or not) for the per-item statistics.
        system_prompt: A system message for chat prompts.

    Raises:
        ValueError: No records (for the chosen benchmarks/models), or no item found in
            ``source``.
    """
    records, n_bad = load_records(paths)
    where = ", ".join(map(str, paths))
    if benchmarks:
        records = records[records["benchmark"].isin(list(benchmarks))]
    if models:
        records = records[records["model"].isin(list(models))]
    if records.empty:
        raise ValueError(f"{where}: no records for benchmarks={benchmarks} models={models}")
    grader = ItemGrader()
    rows, missing = [], []
    for row in _item_rows(records, probe, min_samples):
        item = grader.item(row["benchmark"], row["item_id"], source)
        if item is None:
            missing.append(f"{row['benchmark']}/{row['item_id']}")
            continue
        text = grader.benchmark(row["benchmark"]).solve_prompt(item) + FORMAT_INSTRUCTION
        if chat:
            messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
            prompt: Any = [*messages, {"role": "user", "content": text}]
        else:
            prompt = text
        rows.append({"prompt": prompt, "source": source, "question": item.question, **row})
    if not rows:
        raise ValueError(
            f"{where}: none of the {len(missing)} items is in source {source!r} "
            f"(first: {', '.join(missing[:5])})"
        )
    out = Path(out_dir)
    write_rows(out, rows)
    counts = pd.Series([r["benchmark"] for r in rows]).value_counts()
    result = BuildResult(
        out_dir=str(out),
        n_rows=len(rows),
        n_insufficient=sum(r["intrinsic_confidence"] is None for r in rows),
        n_missing_items=len(missing),
        missing_items=tuple(missing[:10]),
        n_bad=n_bad,
        benchmarks={str(k): int(v) for k, v in sorted(counts.items())},
        n_ungraded=sum(r["n_ungraded"] for r in rows),
        n_ungraded_items=sum(r["n_ungraded"] > 0 for r in rows),
    )
    write_json(out / "build.json", result.to_dict())
    return result
