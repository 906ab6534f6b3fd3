"""Reader for lm-eval output trees (``--output_path`` with ``--log_samples``).

lm-eval writes ``<out>/<model>/results_<date_id>.json`` and one
``samples_<task>_<date_id>.jsonl`` per task of the same run (``--output_path X.json`` writes
``X_<date_id>.json`` and puts the samples beside it). A samples file belongs to the results
file with the same ``date_id`` in the same folder. The model is named by the results file:
``config.metacog_model_name`` (the simulated population) or else lm-eval's ``model_name``.
Each samples line of a metacog task carries a ``record`` dict (see
:meth:`metacog_tasks.lmeval.task.MetacogTask.process_results`); one record becomes one row per
confidence kind, keyed by ``item_id`` (never by lm-eval's ``doc_id``). Lines are parsed as JSON
only; logs are never unpickled or evaluated.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from typing import Any

from metacog_tasks.collect.results import (
    NO_SAMPLES,
    CollectResult,
    FileReport,
    _BadRow,
    _BadRows,
    _float_or_nan,
    _json_loads,
    _keep_latest,
    _n_samples,
    _reader_result,
    _text,
)

__all__ = ["read_lmeval"]

HARNESS = "lm-eval"
#: lm-eval's date_id: ``datetime.now().isoformat()`` with ``:`` replaced by ``-``.
_DATE_ID = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)$")


def _split_name(path: Path, prefix: str) -> tuple[str, str] | None:
    """Split a file name into (task, date_id).

    ``samples_<task>_<date_id>.jsonl`` gives the task; ``results_<date_id>.json`` gives "".
    """
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    m = _DATE_ID.search(stem)
    if not m:
        return None
    head = stem[: m.start()].rstrip("_")
    if prefix and head.startswith(prefix):
        head = head[len(prefix) :]
    return head, m.group(1)


def _model_name(results: dict[str, Any], folder: Path) -> str:
    config = results.get("config") or {}
    for value in (
        config.get("metacog_model_name"),
        results.get("model_name"),
        config.get("model"),
    ):
        if value:
            return str(value)
    return folder.name


def _hash(line: dict[str, Any], key: str) -> str | None:
    value = line.get(key)
    return str(value) if value not in (None, "") else None


def _prompt_hash(line: dict[str, Any]) -> str | None:
    """How the item was asked: a digest of every request's arguments, else lm-eval's hash.

    lm-eval's own ``prompt_hash`` covers the first request only (the probe), so a changed
    solve prompt, chat template or generation setting would pass unseen; the logged
    ``arguments`` hold every request's context and settings.
    """
    arguments = line.get("arguments")
    if arguments:
        text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    return _hash(line, "prompt_hash")


def _rows_from_line(
    line: dict[str, Any], model: str, source: str, task_version: str | None = None
) -> list[dict[str, Any]]:
    record = line.get("record")
    if not isinstance(record, dict):
        raise _BadRow("no `record` object (not written by a metacog task?)")
    for key in ("item_id", "benchmark", "probe", "confidence"):
        if key not in record:
            raise _BadRow(f"record lacks `{key}`")
    item_id = record["item_id"]
    if item_id is None or str(item_id) == "":
        raise _BadRow("empty item_id")
    confidences = record["confidence"]
    if not isinstance(confidences, dict) or not confidences:
        raise _BadRow("record `confidence` is not a non-empty object")
    correct = _float_or_nan(record.get("correct"))
    if not (math.isnan(correct) or correct in (0.0, 1.0)):
        raise _BadRow(f"correct must be 0, 1 or null, got {record.get('correct')!r}")
    rows = []
    for kind, c in confidences.items():
        if not isinstance(c, dict):
            raise _BadRow(f"confidence[{kind!r}] is not an object")
        conf = _float_or_nan(c.get("confidence"))
        if not math.isnan(conf) and not 0.0 <= conf <= 1.0:
            raise _BadRow(f"confidence[{kind!r}] = {conf} is outside [0, 1]")
        if kind == "sampled":
            texts = c.get("texts") or []
            probe_text = str(texts[0]) if texts else None
        else:
            probe_text = _text(c.get("text"))
        rows.append(
            {
                "model": model,
                "benchmark": str(record["benchmark"]),
                "item_id": str(item_id),
                "probe": str(record["probe"]),
                "confidence": conf,
                "confidence_kind": str(kind),
                "correct": correct,
                "question": _text(record.get("question")),
                "probe_text": probe_text,
                "solve_text": _text(record.get("solve_text")),
                "probe_status": str(c.get("status") or "ok"),
                "grade_status": _text(record.get("grade_status")),
                "answer": _text(record.get("answer")),
                "harness": HARNESS,
                "source": source,
                "n_samples": _n_samples(str(kind), c.get("n_samples")),
                "doc_hash": _hash(line, "doc_hash"),
                "prompt_hash": _prompt_hash(line),
                "task_version": task_version,
            }
        )
    return rows


def _read_results(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        data = _json_loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"unreadable results file: {exc}"
    if not isinstance(data, dict) or "results" not in data:
        return None, "not an lm-eval results file (no `results` key)"
    return data, None


def _metacog_tasks(results: dict[str, Any]) -> set[str]:
    out = set()
    for task, cfg in (results.get("configs") or {}).items():
        meta = (cfg or {}).get("metadata") or {}
        if isinstance(meta, dict) and isinstance(meta.get("metacog"), dict):
            out.add(task)
    return out


def _run_versions(
    results: dict[str, Any] | None, task: str
) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """The task's version and the software versions (lm-eval, metacog-eval) a results file
    states."""
    if not results:
        return None, ()
    version = (results.get("versions") or {}).get(task)
    found = [("lm_eval", results.get("lm_eval_version"))]
    config = (results.get("configs") or {}).get(task) or {}
    metacog = (config.get("metadata") or {}).get("metacog")
    if isinstance(metacog, dict):
        found.append(("metacog-eval", metacog.get("package_version")))
    return (
        None if version is None else str(version),
        tuple((name, str(v)) for name, v in found if v),
    )


def _read_samples(
    path: Path, model: str, task: str | None, results: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], FileReport]:
    rows: list[dict[str, Any]] = []
    n_lines = 0
    bad = _BadRows()
    seen: dict[str, int] = {}
    source = str(path)
    task_version, versions = _run_versions(results, task or "")
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as exc:
        return [], FileReport(source, HARNESS, model, task, skipped=f"unreadable: {exc}")
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            n_lines += 1
            try:
                try:
                    line = _json_loads(raw)
                except ValueError as exc:
                    raise _BadRow(f"invalid JSON ({exc.args[0][:60]})") from None
                if not isinstance(line, dict):
                    raise _BadRow("not a JSON object")
                if line.get("filter", "none") != "none":
                    # metacog tasks log one row per document under filter "none"; other
                    # filter rows of a user variant would duplicate the document.
                    raise _BadRow(f"filter {line.get('filter')!r} is not 'none'")
                new = _rows_from_line(line, model, source, task_version)
                item_id = new[0]["item_id"]
                if item_id in seen:
                    raise _BadRow(f"item_id {item_id!r} repeats line {seen[item_id]}")
                seen[item_id] = lineno
                rows.extend(new)
            except _BadRow as exc:
                bad.add(f"line {lineno}: {exc}")
    report = bad.report(source, HARNESS, model, task, n_lines, len(rows), versions)
    if n_lines and bad.n == n_lines and all("no `record` object" in e for e in bad.reasons):
        report = FileReport(
            source, HARNESS, model, task, n_lines=n_lines, skipped="not a metacog task"
        )
        rows = []
    return rows, report


def read_lmeval(paths: Iterable[str | PathLike[str]], *, latest_only: bool = True) -> CollectResult:
    """Read lm-eval results and samples files into records.

    Args:
        paths: ``results_*.json`` (or ``--output_path X.json`` results) and
            ``samples_*.jsonl`` files; a results file brings in the samples files of its run
            found beside it.
        latest_only: Keep only the latest run of each (model, task); older runs are reported
            as superseded.

    Returns:
        A :class:`~metacog_tasks.collect.CollectResult` (records not yet validated).
    """
    files = [Path(p) for p in paths]
    results_files = [p for p in files if p.suffix == ".json"]
    samples_files = {p.resolve(): p for p in files if p.suffix == ".jsonl"}
    reports: list[FileReport] = []
    warnings: list[str] = []

    # Results files, keyed by (folder, date_id); a results file pulls in its run's samples.
    runs: dict[tuple[Path, str], tuple[Path, dict[str, Any]]] = {}
    for path in results_files:
        parsed = _split_name(path, "results_")
        data, problem = _read_results(path)
        if data is None or parsed is None:
            reports.append(
                FileReport(str(path), HARNESS, skipped=problem or "no date id in the file name")
            )
            continue
        folder = path.resolve().parent
        runs[(folder, parsed[1])] = (path, data)
        samples = list(folder.glob(f"samples_*_{parsed[1]}.jsonl"))
        for sample in samples:
            samples_files.setdefault(sample.resolve(), sample)
        metacog = sorted(_metacog_tasks(data))
        if metacog and not samples:
            reports.append(
                FileReport(
                    str(path),
                    HARNESS,
                    _model_name(data, folder),
                    skipped=f"results of {', '.join(metacog)} without their per-item samples "
                    f"(samples_*_{parsed[1]}.jsonl): {NO_SAMPLES}",
                )
            )

    # Look for the results file of samples given on their own.
    for resolved in list(samples_files):
        parsed = _split_name(resolved, "samples_")
        if parsed is None:
            continue
        key = (resolved.parent, parsed[1])
        if key in runs:
            continue
        for candidate in resolved.parent.glob(f"*_{parsed[1]}.json"):
            data, problem = _read_results(candidate)
            if data is not None:
                runs[key] = (candidate, data)
                break

    # Group the samples by (model, task) and keep the latest run of each.
    by_model_task: dict[tuple[str, str], list[tuple[str, Path, dict[str, Any] | None]]] = (
        defaultdict(list)
    )
    for resolved, path in sorted(samples_files.items()):
        parsed = _split_name(resolved, "samples_")
        if parsed is None:
            reports.append(
                FileReport(str(path), HARNESS, skipped="not an lm-eval samples file name")
            )
            continue
        task, date_id = parsed
        run = runs.get((resolved.parent, date_id))
        if run is None:
            model = resolved.parent.name
            warnings.append(
                f"{path}: no results file of the same run beside it; model named after "
                f"its folder ({model!r})"
            )
            data = None
        else:
            data = run[1]
            model = _model_name(data, resolved.parent)
            metacog = _metacog_tasks(data)
            if task not in (data.get("configs") or {}) or task not in metacog:
                reason = (
                    "not a metacog task"
                    if task in (data.get("configs") or {})
                    else "task not in its results file"
                )
                if reason == "not a metacog task":
                    reports.append(FileReport(str(path), HARNESS, model, task, skipped=reason))
                    continue
                warnings.append(f"{path}: {reason}")
        by_model_task[(model, task)].append((date_id, path, data))

    rows: list[dict[str, Any]] = []
    for (model, task), runs_of_task in sorted(by_model_task.items()):
        runs_of_task.sort(key=lambda r: r[0])
        keep, superseded = _keep_latest(runs_of_task, latest_only)
        for date_id, path, _ in superseded:
            reports.append(
                FileReport(
                    str(path),
                    HARNESS,
                    model,
                    task,
                    skipped=f"superseded by the run of {keep[-1][0]} (run {date_id})",
                )
            )
        for _, path, data in keep:
            new_rows, report = _read_samples(path, model, task, data)
            rows.extend(new_rows)
            reports.append(report)

    return _reader_result(rows, reports, warnings)
