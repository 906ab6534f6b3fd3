"""Reader for Inspect logs (``.eval`` and JSON) written by the metacog Inspect tasks.

Logs are read with Inspect's own readers (``read_eval_log`` for the header,
``read_eval_log_samples`` streaming the samples), never by unzipping or unpickling. Every sample
carries one score per (probe, confidence method) (see
:mod:`metacog_tasks.inspect_tasks.scorers`): ``Score.value`` holds the confidence and the
correctness, ``Score.metadata`` the record fields. One score becomes one record row; the model is
the log's model name (``metacog-sim/m01`` for the simulated population, as in lm-eval logs).

A sample that errored, has no metacog score, or has a malformed one is a *bad* sample: counted in
the file report with its reason, never dropped silently. A corrupt sample in an ``.eval`` log does
not end the reading: the samples after it are read one by one and each unreadable one is reported
by its id. With ``--epochs n`` the record table
holds one attempt per item: epoch 1 is read (``epoch=`` picks another) and the other epochs are
reported. When several logs hold the same run (``eval-set`` retries, reruns of the same task,
model and arguments), only the latest successful one is read and the others are reported as
superseded.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from metacog_tasks.collect.results import (
    CollectResult,
    FileReport,
    _BadRow,
    _BadRows,
    _float_or_nan,
    _keep_latest,
    _n_samples,
    _reader_result,
    _text,
)

__all__ = ["HARNESS", "read_inspect_logs"]

HARNESS = "inspect"
_METACOG_PREFIX = "metacog_tasks/"
#: Task arguments that do not change how an item is asked (left out of the prompt hash).
# Arguments that change neither the prompts nor the grading rules: where the data lives, the
# sampling seed, and which sandbox runs SciCode code (the grade is the same behind any boundary).
_NOT_TEMPLATE_ARGS = frozenset({"data", "seed", "sandbox"})


def _is_metacog_score(score: Any) -> bool:
    meta = getattr(score, "metadata", None) or {}
    return isinstance(meta, Mapping) and "confidence_kind" in meta and "probe" in meta


def _digest(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys; anything else as its text)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _input_text(value: Any) -> Any:
    """A sample's input as plain data: a string, or the role and text of each message."""
    if isinstance(value, str) or value is None:
        return value
    return [[getattr(m, "role", None), getattr(m, "text", str(m))] for m in value]


def _provenance(log: Any) -> dict[str, Any]:
    """Per-log parts of a row's provenance: the prompt hash and the task version.

    The prompt hash covers the task, its version and its arguments except where the data
    lives, the sampling seed and the sandbox (the items themselves are in the per-sample doc
    hash).
    """
    spec = log.eval
    version = getattr(spec, "task_version", None)
    args = {k: v for k, v in (spec.task_args or {}).items() if k not in _NOT_TEMPLATE_ARGS}
    prompt = _digest({"task": str(spec.task), "version": version, "task_args": args})
    return {"prompt_hash": prompt, "task_version": None if version is None else str(version)}


def _rows_from_sample(
    sample: Any, model: str, source: str, provenance: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    if sample.error is not None:
        message = getattr(sample.error, "message", None) or str(sample.error)
        raise _BadRow(f"sample errored: {' '.join(str(message).split())[:160]}")
    scores = sample.scores or {}
    metacog = {name: s for name, s in scores.items() if _is_metacog_score(s)}
    if not metacog:
        raise _BadRow("no metacog score (not scored, or not a metacog scorer)")
    rows = []
    for name, score in metacog.items():
        meta = score.metadata or {}
        if isinstance(meta.get("steps"), list):  # SciCode mode=problem: one row per sub-step
            rows.extend(_step_rows(name, meta, model, source))
            continue
        value = score.value
        if not isinstance(value, Mapping) or "confidence" not in value or "correct" not in value:
            raise _BadRow(f"score {name!r}: value lacks confidence/correct: {value!r}")
        row = _row(
            f"score {name!r}",
            value,
            meta,
            meta,
            benchmark=str(meta.get("benchmark") or ""),
            item_id=str(sample.id),
            answer=score.answer,
            model=model,
            source=source,
        )
        if not row["benchmark"]:
            raise _BadRow(f"score {name!r}: metadata lacks the benchmark")
        rows.append(row)
    doc = _digest({"input": _input_text(sample.input), "target": sample.target})
    for row in rows:
        row.update(provenance or {})
        row["doc_hash"] = doc
    return rows


def _step_rows(name: str, meta: Mapping[str, Any], model: str, source: str) -> list[dict[str, Any]]:
    if not meta.get("benchmark"):
        raise _BadRow(f"score {name!r}: metadata lacks the benchmark")
    rows = []
    for step in meta["steps"]:
        if not isinstance(step, Mapping) or not step.get("item_id"):
            raise _BadRow(f"score {name!r}: a step record lacks its item_id")
        row = _row(
            f"score {name!r} step {step['item_id']}",
            step,
            step,
            meta,
            benchmark=str(meta["benchmark"]),
            item_id=str(step["item_id"]),
            answer=step.get("answer"),
            model=model,
            source=source,
        )
        rows.append(row)
    return rows


def _row(
    where: str,
    values: Mapping[str, Any],
    fields: Mapping[str, Any],
    meta: Mapping[str, Any],
    *,
    benchmark: str,
    item_id: str,
    answer: Any,
    model: str,
    source: str,
) -> dict[str, Any]:
    """One record of a score (or of one step of a multi-step score).

    ``values`` holds the confidence and the correctness, ``fields`` the texts, statuses and
    ``n_parsed``, ``meta`` (the score's metadata) the probe and the confidence kind.
    """
    conf = _float_or_nan(values.get("confidence"), f"{where} confidence")
    if not math.isnan(conf) and not 0.0 <= conf <= 1.0:
        raise _BadRow(f"{where}: confidence {conf} is outside [0, 1]")
    correct = _float_or_nan(values.get("correct"), f"{where} correct")
    if not (math.isnan(correct) or correct in (0.0, 1.0)):
        raise _BadRow(f"{where}: correct must be 0, 1 or NaN, got {correct}")
    kind = str(meta["confidence_kind"])
    probe_text = fields.get("probe_text")
    if isinstance(probe_text, list):  # k sampled replies: the first, as the lm-eval reader
        probe_text = probe_text[0] if probe_text else None
    return {
        "model": model,
        "benchmark": benchmark,
        "item_id": item_id,
        "probe": str(meta["probe"]),
        "confidence": conf,
        "confidence_kind": kind,
        "correct": correct,
        "question": _text(fields.get("question")),
        "probe_text": _text(probe_text),
        "solve_text": _text(fields.get("solve_text")),
        "probe_status": str(fields.get("probe_status") or "ok"),
        "grade_status": _text(fields.get("grade_status")),
        "answer": _text(answer),
        "harness": HARNESS,
        "source": source,
        "n_samples": _n_samples(kind, fields.get("n_parsed")),
    }


def _header(path: Path) -> tuple[Any | None, str | None]:
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(str(path), header_only=True), None
    except Exception as exc:  # any unreadable/corrupt log is reported, never fatal
        return None, f"unreadable Inspect log: {type(exc).__name__}: {exc}"[:300]


def _looks_metacog(log: Any) -> bool:
    spec = log.eval
    meta = spec.metadata or {}
    if isinstance(meta, Mapping) and isinstance(meta.get("metacog"), Mapping):
        return True
    if str(spec.task or "").startswith(_METACOG_PREFIX):
        return True
    if str(getattr(spec, "task_registry_name", "") or "").startswith(_METACOG_PREFIX):
        return True
    # A user's own Task around the metacog scorers (named <probe>_<confidence>).
    from metacog_tasks.inspect_tasks.solvers import CONFIDENCES, PROBE_KINDS, probe_key

    ours = {probe_key(p, c) for p in PROBE_KINDS for c in CONFIDENCES}
    return any(getattr(s, "name", None) in ours for s in (spec.scorers or []))


def _run_key(log: Any) -> tuple[str, str, str]:
    spec = log.eval
    args = json.dumps(spec.task_args or {}, sort_keys=True, default=str)
    return (str(spec.model), str(spec.task), args)


def _stream(path: Path) -> Any:
    from inspect_ai.log import read_eval_log_samples

    # Records come from the scores only: skipping the transcript and messages halves the read
    # time of a log.
    return read_eval_log_samples(
        str(path),
        all_samples_required=False,
        resolve_attachments=True,
        exclude_fields={"events", "messages"},
    )


def _remaining(path: Path, done: set[tuple[str, int]]) -> Iterable[tuple[str, int, Any]]:
    """The samples not yet read, one by one: ``(id, epoch, sample or the read error)``.

    Used after the stream stopped at a corrupt sample, so every readable sample after it is
    still read and each unreadable one is reported by its id.
    """
    from inspect_ai.log import read_eval_log_sample, read_eval_log_sample_summaries

    for summary in read_eval_log_sample_summaries(str(path)):
        key = (str(summary.id), int(summary.epoch))
        if key in done:
            continue
        try:
            sample = read_eval_log_sample(
                str(path),
                id=summary.id,
                epoch=summary.epoch,
                resolve_attachments=True,
                exclude_fields={"events", "messages"},
            )
        except Exception as exc:  # a corrupt sample: reported by id, the others still read
            yield key[0], key[1], exc
            continue
        yield key[0], key[1], sample


def _read_samples(
    path: Path, log: Any, epoch: int
) -> tuple[list[dict[str, Any]], FileReport, list[str]]:
    model = str(log.eval.model)
    task = str(log.eval.task)
    source = str(path)
    rows: list[dict[str, Any]] = []
    bad = _BadRows()
    provenance = _provenance(log)
    n_seen = n_other_epochs = n_corrupt = 0
    seen: set[str] = set()
    done: set[tuple[str, int]] = set()

    def take(sample: Any) -> None:
        nonlocal n_seen, n_other_epochs
        done.add((str(sample.id), int(sample.epoch)))
        if sample.epoch != epoch:
            n_other_epochs += 1
            return
        n_seen += 1
        where = f"sample {sample.id!r} (epoch {sample.epoch})"
        try:
            if str(sample.id) in seen:
                raise _BadRow("duplicate sample id")
            seen.add(str(sample.id))
            rows.extend(_rows_from_sample(sample, model, source, provenance))
        except _BadRow as exc:
            bad.add(f"{where}: {exc}")

    try:
        for sample in _stream(path):
            take(sample)
    except Exception as stopped:  # a corrupt sample ends the stream: read the rest one by one
        try:
            for sid, sepoch, got in _remaining(path, done):
                if isinstance(got, Exception):
                    if sepoch == epoch:
                        n_seen += 1
                    n_corrupt += 1
                    bad.add(
                        f"sample {sid!r} (epoch {sepoch}): unreadable (corrupt): "
                        f"{type(got).__name__}: {got}"[:300]
                    )
                else:
                    take(got)
        except Exception as exc:  # no sample index either (a truncated file): keep what was read
            bad.add(
                f"reading stopped: {type(stopped).__name__}: {stopped}; "
                f"{type(exc).__name__}: {exc}"[:300]
            )
    notes: list[str] = []
    if n_corrupt:
        notes.append(
            f"{path}: {n_corrupt} corrupt sample(s) could not be read (named in the file "
            f"report); every readable sample was read"
        )
    if log.status != "success":
        notes.append(f"{path}: log status is {log.status!r}; read the samples it holds")
    if n_other_epochs:
        notes.append(
            f"{path}: {n_other_epochs} sample(s) of other epochs not read (the record table "
            f"holds one attempt per item; epoch {epoch} read)"
        )
    packages = getattr(log.eval, "packages", None) or {}
    versions = tuple(sorted((str(k), str(v)) for k, v in packages.items()))
    report = bad.report(source, HARNESS, model, task, n_seen, len(rows), versions)
    return rows, report, notes


def read_inspect_logs(
    paths: Iterable[str | PathLike[str]], *, latest_only: bool = True, epoch: int = 1
) -> CollectResult:
    """Read Inspect logs of the metacog tasks into records.

    Args:
        paths: ``.eval`` or Inspect JSON log files.
        latest_only: Of several logs of the same run (same model, task and task arguments),
            read only the latest successful one (else the latest) and report the others as
            superseded.
        epoch: The epoch to read from ``--epochs n`` runs (the record table holds one attempt
            per item).

    Returns:
        A :class:`~metacog_tasks.collect.CollectResult` (records not yet validated): one row per
        (model, item, probe, confidence kind), ``harness="inspect"``, ``source`` = the log file.
    """
    reports: list[FileReport] = []
    warnings: list[str] = []
    runs: dict[tuple[str, str, str], list[tuple[Path, Any]]] = defaultdict(list)
    for raw in paths:
        path = Path(raw)
        log, problem = _header(path)
        if log is None:
            reports.append(FileReport(str(path), HARNESS, skipped=problem))
            continue
        if not _looks_metacog(log):
            reports.append(
                FileReport(
                    str(path),
                    HARNESS,
                    model=str(log.eval.model),
                    task=str(log.eval.task),
                    skipped="not a metacog task",
                )
            )
            continue
        runs[_run_key(log)].append((path, log))

    rows: list[dict[str, Any]] = []
    for _, logs in sorted(runs.items()):
        # Successful logs rank above unfinished ones, then by creation time.
        logs.sort(key=lambda pl: (pl[1].status == "success", str(pl[1].eval.created)))
        keep, superseded = _keep_latest(logs, latest_only)
        for path, log in superseded:
            reports.append(
                FileReport(
                    str(path),
                    HARNESS,
                    model=str(log.eval.model),
                    task=str(log.eval.task),
                    skipped=f"superseded by {keep[-1][0].name} (same model, task and arguments; "
                    f"this run: {log.status}, {log.eval.created})",
                )
            )
        for path, log in keep:
            new_rows, report, notes = _read_samples(path, log, epoch)
            rows.extend(new_rows)
            reports.append(report)
            warnings.extend(notes)
    return _reader_result(rows, reports, warnings)
