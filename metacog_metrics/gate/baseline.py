"""Saved gate baselines: one model's per-item records, the gate config and software versions.

``metacog gate bless RUN -o baseline.json`` writes one, so that a repository can commit the
baseline its CI gates new checkpoints against. The file is JSON: a header (model, versions, the
gate config and its fingerprint, the task versions and prompt hashes per benchmark and probe),
then one record per line, so that a changed baseline reads well in a diff. Only what the gate
needs is kept (no question, rationale or solve texts). The header carries the SHA-256 of the
file's content (every value but the hash itself, in canonical JSON), so an edited record, or any
other edit, is refused; blessing again is the way to change a baseline.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from metacog_metrics._io import atomic_write_text
from metacog_metrics._result import Result, to_jsonable
from metacog_metrics.gate.config import GateConfig
from metacog_metrics.records import RecordError, validate_records

__all__ = [
    "BASELINE_COLUMNS",
    "BASELINE_FORMAT",
    "GateBaseline",
    "content_hash",
    "is_baseline_file",
    "read_baseline",
    "stack_repeats",
    "template_versions",
    "version_warnings",
    "write_baseline",
]

#: ``format`` of a baseline file.
BASELINE_FORMAT = "metacog-gate-baseline"
_FORMAT_VERSION = 2
_HASH_KEY = "content_sha256"
#: Record columns a baseline keeps (those present), in this order.
BASELINE_COLUMNS: tuple[str, ...] = (
    "benchmark",
    "probe",
    "confidence_kind",
    "item_id",
    "repeat",
    "confidence",
    "correct",
    "probe_status",
    "grade_status",
    "harness",
    "doc_hash",
    "prompt_hash",
    "task_version",
)
_REQUIRED = ("benchmark", "probe", "confidence_kind", "item_id", "confidence", "correct")


@dataclasses.dataclass(frozen=True, eq=False)
class GateBaseline(Result):
    """A saved baseline.

    Attributes:
        model: The baseline's model.
        records: Its records (validated, one model; a ``repeat`` column when an item has
            several records).
        versions: Software versions the baseline's logs state (``lm_eval``, ``inspect_ai``,
            ``metacog-eval``; several versions of one package joined by ``", "``).
        templates: ``benchmark/probe`` -> its task version and prompt hashes, as recorded.
        config: The gate config the baseline was blessed with.
        config_fingerprint: Its :meth:`~metacog_metrics.gate.GateConfig.fingerprint`.
        created: When the file was written (UTC, ISO 8601).
        blessed_with: metacog-eval and Python versions that wrote the file.
        sources: The runs the records came from, as given to ``bless``.
        content_sha256: The SHA-256 of the file's content (:func:`content_hash`).
        path: The file it was read from (None when not read from a file).
    """

    model: str
    records: pd.DataFrame
    versions: Mapping[str, str]
    templates: Mapping[str, Mapping[str, Any]]
    config: Mapping[str, Any]
    config_fingerprint: str
    created: str
    blessed_with: Mapping[str, str | None]
    sources: tuple[str, ...]
    content_sha256: str = ""
    path: str | None = None


def _package_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("metacog-eval")
    except PackageNotFoundError:  # running from a checkout
        return None


def stack_repeats(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Several validated runs of one model as one table with a ``repeat`` column (0, 1, ...).

    One run is returned as it is. The result is no longer unique on the record key, so it is
    validated per repeat, never as a whole.
    """
    if len(frames) == 1:
        return frames[0]
    parts = [f.assign(repeat=i) for i, f in enumerate(frames)]
    return pd.concat(parts, ignore_index=True)


def _validate(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """Validate records per ``repeat`` (each repeat is unique on the record key)."""
    if "repeat" not in frame.columns or frame["repeat"].nunique(dropna=False) <= 1:
        out = validate_records(frame.drop(columns=["repeat"], errors="ignore"), source=source)
        if "repeat" in frame.columns:
            out["repeat"] = frame["repeat"].to_numpy()
        return out
    parts = []
    for rep, sub in frame.groupby("repeat", sort=True, dropna=False):
        part = validate_records(sub.drop(columns=["repeat"]), source=f"{source} repeat {rep}")
        parts.append(part.assign(repeat=rep))
    return pd.concat(parts, ignore_index=True)


def template_versions(records: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per ``benchmark/probe``: its task version(s) and the number of distinct prompt hashes.

    Args:
        records: Validated records.

    Returns:
        ``{"squad/prospective": {"task_version": "1.0", "prompt_hashes": 1}}``; a field is
        None when the records do not hold it.
    """
    out: dict[str, dict[str, Any]] = {}
    for (bench, probe), sub in records.groupby(["benchmark", "probe"], sort=True):
        entry: dict[str, Any] = {"task_version": None, "prompt_hashes": None}
        if "task_version" in sub and sub["task_version"].notna().any():
            entry["task_version"] = ", ".join(
                sorted(sub["task_version"].dropna().astype(str).unique())
            )
        if "prompt_hash" in sub and sub["prompt_hash"].notna().any():
            entry["prompt_hashes"] = int(sub["prompt_hash"].dropna().nunique())
        out[f"{bench}/{probe}"] = entry
    return out


def _cell(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        value = value.item()
    return value


def content_hash(data: Mapping[str, Any]) -> str:
    """SHA-256 of a baseline's parsed content, every key but the hash, as canonical JSON.

    Canonical JSON (sorted keys, no spaces, UTF-8) makes the hash independent of the file's
    layout and line endings, and dependent on every value in it.
    """
    body = {k: v for k, v in data.items() if k != _HASH_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_baseline(
    records: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    config: GateConfig | None = None,
    versions: Mapping[str, str] | None = None,
    sources: Sequence[str] = (),
) -> GateBaseline:
    """Write one model's records as a gate baseline (atomically).

    Args:
        records: Validated records of exactly one model (a ``repeat`` column for repeats).
        path: The ``.json`` file to write.
        config: The gate config to record (default :class:`GateConfig`).
        versions: Software versions the records' logs state.
        sources: Where the records came from (written as given).

    Returns:
        The baseline as written.

    Raises:
        RecordError: The records hold no rows or several models.
    """
    config = config or GateConfig()
    if records.empty:
        raise RecordError("nothing to bless: the run holds no records")
    models = sorted(records["model"].astype(str).unique())
    if len(models) != 1:
        raise RecordError(
            f"a baseline holds one model; the run holds {len(models)} ({', '.join(models[:5])}"
            f"{', ...' if len(models) > 5 else ''}): choose one with --model"
        )
    present = {c for c in BASELINE_COLUMNS if c in records.columns and records[c].notna().any()}
    columns = [c for c in BASELINE_COLUMNS if c in present or c in _REQUIRED]
    order = ["benchmark", "probe", "confidence_kind", "item_id"]
    order += ["repeat"] if "repeat" in columns else []
    table = records.sort_values(order, kind="stable")
    rows = [[_cell(v) for v in row] for row in table[columns].itertuples(index=False, name=None)]
    header = {
        "format": BASELINE_FORMAT,
        "format_version": _FORMAT_VERSION,
        "model": models[0],
        "created": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "blessed_with": {"metacog-eval": _package_version(), "python": platform.python_version()},
        "versions": dict(sorted((versions or {}).items())),
        "templates": template_versions(records),
        "config_fingerprint": config.fingerprint(),
        "config": to_jsonable(config),
        "sources": [str(s) for s in sources],
        "n_records": len(rows),
        "columns": columns,
    }
    digest = content_hash({**header, "records": rows})
    header = {**header, _HASH_KEY: digest}
    head = json.dumps(header, indent=2, allow_nan=False)
    lines = (json.dumps(row, allow_nan=False, ensure_ascii=False) for row in rows)
    text = head[: head.rindex("}")].rstrip() + ',\n  "records": [\n    '
    text += ",\n    ".join(lines) + "\n  ]\n}\n"
    atomic_write_text(path, text)
    return GateBaseline(
        model=models[0],
        records=records,
        versions=header["versions"],
        templates=header["templates"],
        config=header["config"],
        config_fingerprint=header["config_fingerprint"],
        created=header["created"],
        blessed_with=header["blessed_with"],
        sources=tuple(header["sources"]),
        content_sha256=digest,
        path=str(path),
    )


def is_baseline_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a gate baseline (by its first bytes; never parses the whole file)."""
    path = Path(path)
    if not path.is_file() or path.suffix.lower() != ".json":
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(512).decode("utf-8", errors="replace")
    except OSError:
        return False
    return f'"format": "{BASELINE_FORMAT}"' in head


def read_baseline(path: str | os.PathLike[str]) -> GateBaseline:
    """Read a baseline written by :func:`write_baseline`, refusing any edit.

    Args:
        path: The file.

    Returns:
        The baseline, its records validated.

    Raises:
        FileNotFoundError: No such file.
        RecordError: Not a baseline, another format version, content that does not match its
            hash (an edit), or bad records (naming the file and row).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"{path}: not a readable gate baseline ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise RecordError(f'{path}: not a gate baseline (no "format": "{BASELINE_FORMAT}")')
    version = data.get("format_version")
    if version != _FORMAT_VERSION:
        raise RecordError(
            f"{path}: baseline format_version {version!r}; this metacog-eval reads version "
            f"{_FORMAT_VERSION} (bless the baseline again with `metacog gate bless`)"
        )
    stated = data.get(_HASH_KEY)
    if not isinstance(stated, str) or stated != content_hash(data):
        raise RecordError(
            f"{path}: the content does not match its {_HASH_KEY} "
            + ("(the hash is missing)" if not isinstance(stated, str) else "(the file was edited)")
            + "; a baseline changes only by blessing a run again (`metacog gate bless`)"
        )
    columns = data.get("columns")
    rows = data.get("records")
    if not isinstance(columns, list) or not isinstance(rows, list):
        raise RecordError(f'{path}: a baseline needs "columns" and "records" lists')
    missing = [c for c in _REQUIRED if c not in columns]
    if missing:
        raise RecordError(f"{path}: baseline columns lack {', '.join(missing)}")
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, list) or len(row) != len(columns):
            raise RecordError(
                f"{path}: record {i} has {len(row) if isinstance(row, list) else 'no'} fields, "
                f"the header names {len(columns)}"
            )
    if data.get("n_records") != len(rows):
        raise RecordError(
            f"{path}: the header says {data.get('n_records')} records, the file holds {len(rows)}"
        )
    model = str(data.get("model") or "")
    if not model:
        raise RecordError(f"{path}: the baseline names no model")
    frame = pd.DataFrame(rows, columns=columns)
    frame.insert(0, "model", model)
    records = _validate(frame, f"{path} (records)")
    return GateBaseline(
        model=model,
        records=records,
        versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
        templates=dict(data.get("templates") or {}),
        config=dict(data.get("config") or {}),
        config_fingerprint=str(data.get("config_fingerprint") or ""),
        created=str(data.get("created") or ""),
        blessed_with=dict(data.get("blessed_with") or {}),
        sources=tuple(str(s) for s in data.get("sources") or ()),
        content_sha256=stated,
        path=str(path),
    )


def version_warnings(
    baseline: Mapping[str, str],
    candidate: Mapping[str, str],
    *,
    baseline_templates: Mapping[str, Mapping[str, Any]] | None = None,
    candidate_templates: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """Warnings for software and template versions that differ between the two runs.

    Args:
        baseline: Package -> version(s) the baseline states.
        candidate: The same for the candidate.
        baseline_templates: :func:`template_versions` of the baseline.
        candidate_templates: The same for the candidate.

    Returns:
        One sentence per difference; a package one side does not state is named once.
    """
    out = []
    for name in sorted(set(baseline) | set(candidate)):
        b, c = baseline.get(name), candidate.get(name)
        if b and c and b != c:
            out.append(
                f"{name} version differs: baseline {b}, candidate {c} (a harness or package "
                "change can move the metrics by itself)"
            )
    unstated = sorted(n for n in baseline if n not in candidate)
    if unstated and candidate:
        out.append(f"the candidate's logs do not state {', '.join(unstated)}; not compared")
    elif baseline and not candidate:
        out.append(
            "the candidate states no software versions (a record table?); "
            f"the baseline's ({', '.join(f'{k} {v}' for k, v in sorted(baseline.items()))}) "
            "were not compared"
        )
    for key in sorted(set(baseline_templates or {}) & set(candidate_templates or {})):
        b_t = (baseline_templates or {})[key].get("task_version")
        c_t = (candidate_templates or {})[key].get("task_version")
        if b_t and c_t and b_t != c_t:
            out.append(
                f"{key}: task (template/grader) version differs: baseline {b_t}, candidate {c_t}"
            )
    return out
