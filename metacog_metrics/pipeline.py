"""Files in, files out: ``metacog analyze`` on record files.

:func:`analyze_files` reads record files, runs :func:`~metacog_metrics.analyze.analyze_records`
and writes ``summary.json`` (strict JSON, schema in ``docs/summary_schema.md``),
``tables/*.csv`` and ``report.html`` (:func:`metacog_metrics.report.write_report`). It is the
top layer of the package: the analysis below it never imports the report.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metacog_metrics._io import atomic_write, atomic_write_text
from metacog_metrics.analyze import AnalysisOptions, AnalysisResult
from metacog_metrics.analyze.orchestration import analyze_validated, one_blas_thread
from metacog_metrics.records import UNSPECIFIED_PROBE, RecordWarning, read_records

__all__ = ["analyze_files"]


def analyze_files(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    options: AnalysisOptions | None = None,
    /,
    *,
    out_dir: str | os.PathLike[str],
    models_file: str | os.PathLike[str] | None = None,
    report: bool = True,
    **overrides: Any,
) -> AnalysisResult:
    """Read record files, analyse them and write the outputs.

    Writes, each atomically: ``out_dir/summary.json`` (strict JSON, NaN as null; schema in
    ``docs/summary_schema.md``), ``out_dir/tables/<name>.csv`` for every table, and, with
    ``report=True``, ``report.html``. A previous run's tables and report that this run does not
    rewrite are removed, so the folder holds one run's outputs.

    Args:
        paths: Record files (Parquet or CSV).
        options: The settings (:class:`~metacog_metrics.analyze.AnalysisOptions`; default: its
            defaults with progress bars on).
        out_dir: Output folder (created).
        models_file: YAML of per-model traits (``reasoning: true``).
        report: Write ``report.html``.
        **overrides: Fields of :class:`~metacog_metrics.analyze.AnalysisOptions` that replace
            those of ``options``.

    Returns:
        The :class:`~metacog_metrics.analyze.AnalysisResult`, with ``out_dir`` set.

    Raises:
        FileNotFoundError: If a records or models file is missing.
        RecordError: On invalid records or models file.
        TypeError: On an unknown option (before any file is read).
    """
    if options is None:
        overrides.setdefault("progress", True)
    opts = AnalysisOptions.build(options, **overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecordWarning)  # they are kept in the summary
        df = read_records(paths, models_file=models_file, default_probe=UNSPECIFIED_PROBE)
    with one_blas_thread():
        result = analyze_validated(df, opts, validated=True)
    out = Path(out_dir)
    text = json.dumps(result.summary, indent=2, allow_nan=False)
    atomic_write_text(out / "summary.json", text)
    written = set()
    for name, table in result.tables.items():
        written.add(
            atomic_write(
                out / "tables" / f"{name}.csv", lambda tmp, t=table: t.to_csv(tmp, index=False)
            )
        )
    result = dataclasses.replace(result, out_dir=out)
    if report:
        # imported here: the report's plotting libraries load only when a report is written
        from metacog_metrics.report import write_report

        write_report(result, out)
    _remove_stale_outputs(out, written, keep_report=report)
    return result


def _remove_stale_outputs(out: Path, written: set[Path], *, keep_report: bool) -> None:
    """Remove a previous run's outputs this run did not rewrite (one run per folder).

    Only what :func:`analyze_files` writes is touched: ``tables/*.csv`` and ``report.html``;
    other files in the folder are the user's and stay.
    """
    tables = out / "tables"
    if tables.is_dir():
        for path in tables.glob("*.csv"):
            if path not in written:
                path.unlink(missing_ok=True)
    if not keep_report:
        (out / "report.html").unlink(missing_ok=True)
