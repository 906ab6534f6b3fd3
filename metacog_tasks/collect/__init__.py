"""``metacog collect``: harness logs -> the record table.

:func:`collect` takes files and folders, sends lm-eval output trees (``results_*.json`` +
``samples_*.jsonl``) to :func:`~metacog_tasks.collect.lmeval.read_lmeval` and Inspect logs
(``*.eval``, Inspect ``*.json``) to ``metacog_tasks.collect.inspect_logs.read_inspect_logs``,
and merges what they return. Every reader returns a :class:`CollectResult`: the records plus a
per-file account of what was read, what was bad (counted, with the first few reasons) and what
was skipped (and why). Nothing is dropped silently, and one bad line never stops the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path

import pandas as pd

from metacog_tasks.collect.results import (
    COLLECT_COLUMNS,
    CollectError,
    CollectResult,
    FileReport,
)

__all__ = [
    "COLLECT_COLUMNS",
    "CollectError",
    "CollectResult",
    "FileReport",
    "collect",
    "parse_renames",
]


def parse_renames(items: Sequence[str] | None) -> dict[str, str]:
    """Parse ``OLD=NEW`` or ``HARNESS:OLD=NEW`` strings (the ``--rename`` option).

    Args:
        items: The strings, or ``None``.

    Returns:
        Mapping OLD -> NEW.

    Raises:
        ValueError: An item without ``=`` or with an empty side.
    """
    out: dict[str, str] = {}
    for item in items or ():
        old, sep, new = str(item).partition("=")
        if not sep or not old.strip() or not new.strip():
            raise ValueError(f"--rename expects OLD=NEW, got {item!r}")
        out[old.strip()] = new.strip()
    return out


def _looks_like_inspect_json(path: Path) -> bool:
    """An Inspect JSON log starts with its ``version`` and ``status``/``eval`` header."""
    try:
        with path.open("rb") as fh:
            head = fh.read(2048).decode("utf-8", errors="replace")
    except OSError:
        return False
    return '"version"' in head and ('"eval"' in head or '"status"' in head)


def _is_lmeval_results_json(path: Path) -> bool:
    if path.name.startswith("results_"):
        return True
    try:
        with path.open("rb") as fh:
            head = fh.read(256).decode("utf-8", errors="replace")
    except OSError:
        return False
    return head.lstrip().startswith('{\n  "results"')


#: Files Inspect writes beside the logs of an ``eval-set`` (its index of them), not logs.
INSPECT_INDEX_FILES = frozenset({"logs.json", "eval-set.json"})


def _classify(paths: Iterable[str | PathLike[str]]) -> tuple[list[Path], list[Path], list[str]]:
    """Split inputs into lm-eval files, Inspect logs, and warnings for everything else."""
    lmeval: list[Path] = []
    inspect: list[Path] = []
    warnings: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file())
            n_before = len(lmeval) + len(inspect)
            for p in found:
                if p.name in INSPECT_INDEX_FILES:
                    continue
                is_samples = p.suffix == ".jsonl" and p.name.startswith("samples_")
                if is_samples or (p.suffix == ".json" and _is_lmeval_results_json(p)):
                    lmeval.append(p)
                elif p.suffix == ".eval" or (p.suffix == ".json" and _looks_like_inspect_json(p)):
                    inspect.append(p)
            if len(lmeval) + len(inspect) == n_before:
                warnings.append(f"{path}: no lm-eval or Inspect logs found in this folder")
        elif path.is_file():
            if path.suffix == ".jsonl":
                lmeval.append(path)
            elif path.suffix == ".eval":
                inspect.append(path)
            elif path.suffix == ".json" and _is_lmeval_results_json(path):
                lmeval.append(path)
            elif path.suffix == ".json" and _looks_like_inspect_json(path):
                inspect.append(path)
            else:
                warnings.append(f"{path}: not an lm-eval or Inspect log (skipped)")
        else:
            warnings.append(f"{path}: no such file or folder")
    return _dedupe(lmeval), _dedupe(inspect), warnings


def _dedupe(paths: list[Path]) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for p in paths:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _check_harness_clash(records: pd.DataFrame) -> None:
    """One model name logged by two harnesses would collide on the record key."""
    if records.empty or "harness" not in records:
        return
    per_model = records.groupby("model")["harness"].nunique()
    clash = sorted(per_model[per_model > 1].index.astype(str))
    if clash:
        raise CollectError(
            f"model(s) {', '.join(clash)} appear in both lm-eval and Inspect logs; "
            f"rename one side, e.g. --rename lm-eval:{clash[0]}={clash[0]}@lm-eval"
        )


def collect(
    paths: Iterable[str | PathLike[str]],
    *,
    rename: Mapping[str, str] | None = None,
    latest_only: bool = True,
) -> CollectResult:
    """Read lm-eval and Inspect logs into the record table.

    Args:
        paths: Files and folders (searched recursively): lm-eval ``--output_path`` trees or
            files, Inspect ``.eval`` / ``.json`` logs or log folders.
        rename: Model renames, OLD -> NEW (e.g. to compare one model across harnesses).
        latest_only: Keep only the latest run of each (model, task) and report older ones as
            superseded (both harnesses).

    Returns:
        The merged :class:`CollectResult`, records validated as a record table.

    Raises:
        CollectError: The records cannot form one table (same model in two harnesses).
        metacog_metrics.records.RecordError: The records fail validation (names the rows).
    """
    lmeval_files, inspect_files, warnings = _classify(paths)
    parts: list[CollectResult] = [CollectResult(warnings=tuple(warnings))]
    if lmeval_files:
        from metacog_tasks.collect.lmeval import read_lmeval

        parts.append(read_lmeval(lmeval_files, latest_only=latest_only))
    if inspect_files:
        from metacog_tasks.collect.inspect_logs import read_inspect_logs

        parts.append(read_inspect_logs(inspect_files, latest_only=latest_only))
    result = CollectResult.merge(parts).renamed(dict(rename or {}))
    _check_harness_clash(result.records)
    if not result.records.empty:
        from metacog_metrics import validate_records

        records = validate_records(result.records, source="collected records")
        result = dataclasses.replace(result, records=records)
    return result
