"""What a ``metacog collect`` reader returns (:class:`CollectResult`, one :class:`FileReport` per
file) and the row helpers both readers share. The package (:func:`metacog_tasks.collect.collect`)
and its readers import from here; nothing here imports them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from metacog_metrics import EXTRA_COLUMNS, RECORD_COLUMNS, Result

__all__ = [
    "COLLECT_COLUMNS",
    "MAX_ERRORS",
    "NO_SAMPLES",
    "CollectError",
    "CollectResult",
    "FileReport",
]

#: Columns of the records a reader returns, in order: the record table's (see
#: ``metacog_metrics.records``) but ``reasoning`` (from a models file) and ``epoch`` (one is
#: read). Readers may leave optional ones empty.
COLLECT_COLUMNS: tuple[str, ...] = tuple(
    c for c in RECORD_COLUMNS + EXTRA_COLUMNS if c not in ("reasoning", "epoch")
)
#: How many bad-line reasons a file report keeps (the count is always exact).
MAX_ERRORS = 5
#: Why an lm-eval results file of metacog tasks gave no records (its run had no samples).
NO_SAMPLES = "rerun with --log_samples"


class CollectError(ValueError):
    """Collected records cannot form one table (e.g. one model name in two harnesses)."""


@dataclasses.dataclass(frozen=True)
class FileReport(Result):
    """What a reader made of one file.

    Attributes:
        path: The file.
        harness: ``lm-eval`` or ``inspect``.
        model: Record-table model name, when known.
        task: Harness task name, when known.
        n_lines: Lines (lm-eval samples) or samples (Inspect) seen.
        n_records: Records produced.
        n_bad: Lines/samples that could not be read (counted, never dropped silently).
        errors: The first few reasons, ``"line 12: ..."``.
        skipped: Why the whole file was not used (not a metacog task, superseded by a later
            run, unreadable), or ``None``.
        versions: ``(name, version)`` pairs of the software that wrote the log, as the log
            states them (``lm_eval``, ``inspect_ai``); empty when it states none.
    """

    path: str
    harness: str
    model: str | None = None
    task: str | None = None
    n_lines: int = 0
    n_records: int = 0
    n_bad: int = 0
    errors: tuple[str, ...] = ()
    skipped: str | None = None
    versions: tuple[tuple[str, str], ...] = ()


def _empty_records() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in COLLECT_COLUMNS})


@dataclasses.dataclass(frozen=True)
class CollectResult(Result):
    """Records read from harness logs, with a per-file report.

    Attributes:
        records: One row per (model, benchmark, item, probe, confidence kind), columns
            :data:`COLLECT_COLUMNS`.
        files: One :class:`FileReport` per file looked at.
        warnings: Run-level messages (missing results file, unknown file types, ...).
    """

    records: pd.DataFrame = dataclasses.field(default_factory=_empty_records)
    files: tuple[FileReport, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def n_records(self) -> int:
        """Number of records."""
        return len(self.records)

    @property
    def n_bad(self) -> int:
        """Bad lines/samples over all files."""
        return sum(f.n_bad for f in self.files)

    @property
    def models(self) -> list[str]:
        """Model names, sorted."""
        if self.records.empty:
            return []
        return sorted(self.records["model"].astype(str).unique())

    @classmethod
    def merge(cls, results: Iterable[CollectResult]) -> CollectResult:
        """Concatenate several readers' results.

        Args:
            results: The results to merge, in order.

        Returns:
            One result with all records, file reports and warnings.
        """
        results = list(results)
        frames = [r.records for r in results if not r.records.empty]
        records = pd.concat(frames, ignore_index=True, sort=False) if frames else _empty_records()
        return cls(
            records=_order_columns(records),
            files=tuple(f for r in results for f in r.files),
            warnings=tuple(w for r in results for w in r.warnings),
        )

    def renamed(self, renames: Mapping[str, str]) -> CollectResult:
        """The same result with model names mapped through ``renames``.

        Args:
            renames: OLD -> NEW model names; names not in it are kept. A key
                ``"<harness>:OLD"`` (``lm-eval:`` or ``inspect:``) renames only that
                harness's records, e.g. to tell one model's two harness runs apart.

        Returns:
            A new result (records and file reports renamed).
        """
        if not renames:
            return self

        def new_name(model: str, harness: str) -> str:
            return renames.get(f"{harness}:{model}", renames.get(model, model))

        records = self.records.copy()
        if not records.empty:
            records["model"] = [
                new_name(m, h) for m, h in zip(records["model"], records["harness"], strict=True)
            ]
        files = tuple(
            dataclasses.replace(f, model=new_name(f.model, f.harness)) if f.model else f
            for f in self.files
        )
        return dataclasses.replace(self, records=records, files=files)

    def hint(self) -> str | None:
        """What to do when nothing could be read, or None when the reports say nothing more."""
        if any(f.skipped and NO_SAMPLES in f.skipped for f in self.files):
            return (
                "the lm-eval runs were made without --log_samples, so they hold no per-item "
                "records; rerun with --log_samples (`metacog lm-eval run` adds it)"
            )
        if not self.files:
            return "no lm-eval output folder or Inspect log found there"
        return None

    def report_text(self) -> str:
        """A short human report: per model and file, records read, bad lines, skips."""
        used = [f for f in self.files if f.skipped is None]
        skipped = [f for f in self.files if f.skipped is not None]
        lines = [
            f"{self.n_records} records from {len(used)} file(s), "
            f"{len(self.models)} model(s); {self.n_bad} bad line(s); "
            f"{len(skipped)} file(s) skipped"
        ]
        if not self.records.empty:
            counts = (
                self.records.groupby(
                    ["model", "benchmark", "probe", "confidence_kind"], observed=True
                )
                .size()
                .reset_index(name="n")
            )
            for row in counts.itertuples(index=False):
                lines.append(
                    f"  {row.model}  {row.benchmark}/{row.probe}/{row.confidence_kind}: {row.n}"
                )
        for f in used:
            if f.n_bad:
                lines.append(f"  {f.path}: {f.n_bad} bad of {f.n_lines}")
                lines.extend(f"    {e}" for e in f.errors)
        for f in skipped:
            lines.append(f"  skipped {f.path}: {f.skipped}")
        lines.extend(f"  warning: {w}" for w in self.warnings)
        return "\n".join(lines)


def _order_columns(df: pd.DataFrame) -> pd.DataFrame:
    for col in COLLECT_COLUMNS:
        if col not in df.columns:
            df[col] = None
    extra = [c for c in df.columns if c not in COLLECT_COLUMNS]
    return df[list(COLLECT_COLUMNS) + extra]


def _json_loads(text: str) -> Any:
    """``json.loads`` that accepts the bare ``NaN`` tokens lm-eval writes (never evaluates)."""
    return json.loads(text, parse_constant=lambda c: math.nan if c == "NaN" else float(c))


# ------------------------------------------------------------------ shared by the readers

#: How the readers join several texts (MathBench's rotated solves) into one cell.
_TEXT_SEPARATOR = "\n\n"


class _BadRow(ValueError):
    """A line (lm-eval) or sample (Inspect) that gives no records; counted, its reason kept."""


def _float_or_nan(value: Any, what: str = "") -> float:
    """``value`` as a float, ``None`` as NaN; anything else is a :class:`_BadRow`."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        prefix = f"{what} is " if what else ""
        raise _BadRow(f"{prefix}not a number: {value!r}") from None


def _n_samples(kind: str, n_parsed: Any) -> float:
    """Parsed replies behind a sampled confidence; NaN for other kinds or when none parsed."""
    if kind != "sampled" or not isinstance(n_parsed, int | float) or n_parsed < 1:
        return math.nan
    return float(n_parsed)


def _text(value: Any) -> str | None:
    """A text cell: ``None`` stays ``None``, a list of texts is joined."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return _TEXT_SEPARATOR.join(str(v) for v in value)
    return str(value)


class _BadRows:
    """The bad lines or samples of one file: all counted, the first MAX_ERRORS reasons kept."""

    def __init__(self) -> None:
        self.n = 0
        self.reasons: list[str] = []

    def add(self, reason: str) -> None:
        self.n += 1
        if len(self.reasons) < MAX_ERRORS:
            self.reasons.append(reason)

    def report(
        self,
        path: str,
        harness: str,
        model: str,
        task: str | None,
        n_lines: int,
        n_records: int,
        versions: tuple[tuple[str, str], ...] = (),
    ) -> FileReport:
        """The report of the file, with these bad rows."""
        return FileReport(
            path,
            harness,
            model,
            task,
            n_lines,
            n_records,
            self.n,
            tuple(self.reasons),
            None,
            versions,
        )


def _keep_latest(runs: list[Any], latest_only: bool) -> tuple[list[Any], list[Any]]:
    """(kept, superseded) of the runs of one model and task, sorted oldest first."""
    return (runs[-1:], runs[:-1]) if latest_only else (runs, [])


def _reader_result(
    rows: list[dict[str, Any]], reports: list[FileReport], warnings: list[str]
) -> CollectResult:
    """What a reader returns: its rows as :data:`COLLECT_COLUMNS`, its file reports, warnings."""
    records = pd.DataFrame(rows, columns=list(COLLECT_COLUMNS))
    return CollectResult(records=records, files=tuple(reports), warnings=tuple(warnings))
