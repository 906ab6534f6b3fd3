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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from metacog_metrics._io import atomic_write, atomic_write_text
from metacog_metrics.analyze import AnalysisOptions, AnalysisResult
from metacog_metrics.analyze.orchestration import analyze_validated, one_blas_thread
from metacog_metrics.outdir import OutputFolder
from metacog_metrics.records import (
    UNSPECIFIED_PROBE,
    RecordWarning,
    load_models_file,
    read_records,
)

__all__ = ["analyze_files"]


def analyze_files(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    options: AnalysisOptions | None = None,
    /,
    *,
    out_dir: str | os.PathLike[str],
    models_file: str | os.PathLike[str] | None = None,
    report: bool = True,
    overwrite: bool = False,
    on_warning: Callable[[str], object] | None = None,
    **overrides: Any,
) -> AnalysisResult:
    """Read record files, analyse them and write the outputs.

    Writes, each atomically: ``out_dir/summary.json`` (strict JSON, NaN as null; schema in
    ``docs/summary_schema.md``), ``out_dir/tables/<name>.csv`` for every table, and, with
    ``report=True``, ``report.html``. The folder is an :class:`~metacog_metrics.outdir.
    OutputFolder`: a non-empty folder this tool did not write is refused (before the records
    are read) unless ``overwrite``, and of a previous run's outputs only those this run does
    not rewrite, and that still hold what it wrote, are removed. No other file is touched.

    Args:
        paths: Record files (Parquet or CSV).
        options: The settings (:class:`~metacog_metrics.analyze.AnalysisOptions`; default: its
            defaults with progress bars on).
        out_dir: Output folder (created).
        models_file: YAML of per-model traits (``reasoning: true``).
        report: Write ``report.html``.
        overwrite: Write into a folder this tool did not write, replacing files of its output
            names (``--overwrite``).
        on_warning: Called with each problem of the inputs that does not stop the analysis
            (a models file naming none of the models, unparseable confidences); they are also
            in the summary's ``warnings``.
        **overrides: Fields of :class:`~metacog_metrics.analyze.AnalysisOptions` that replace
            those of ``options``.

    Returns:
        The :class:`~metacog_metrics.analyze.AnalysisResult`, with ``out_dir`` set.

    Raises:
        FileNotFoundError: If a records or models file is missing.
        IsADirectoryError: If a records path is a folder (of harness logs, say).
        OutputFolderError: If ``out_dir`` holds files this tool did not write that it would
            have to replace (or any, without a manifest and without ``overwrite``).
        RecordError: On invalid records or models file.
        TypeError: On an unknown option (before any file is read).
    """
    if options is None:
        overrides.setdefault("progress", True)
    opts = AnalysisOptions.build(options, **overrides)
    given = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    for path in given:
        if Path(path).is_dir():
            raise IsADirectoryError(
                f"{path} is a folder; metacog analyze reads record tables (.parquet, .csv). "
                f"For harness logs run `metacog collect {path} -o records.parquet` first"
            )
    out = Path(out_dir)
    folder = OutputFolder(out, "analyze", overwrite=overwrite)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecordWarning)  # they are kept in the summary
        df = read_records(paths, models_file=models_file, default_probe=UNSPECIFIED_PROBE)
    if on_warning is not None:
        mismatch = _models_file_mismatch(df, models_file)
        notes = list(df.attrs.get("warnings", ()))
        if mismatch:  # it says all the file's own notes would (names absent, flags missing)
            notes = [n for n in notes if not n.startswith(f"{models_file}: ")]
        for note in [*mismatch, *notes]:
            on_warning(note)
    with one_blas_thread():
        result = analyze_validated(df, opts, validated=True)
    names = ["summary.json", *(f"tables/{name}.csv" for name in result.tables)]
    folder.claim([*names, "report.html"] if report else names)
    text = json.dumps(result.summary, indent=2, allow_nan=False)
    written = [atomic_write_text(out / "summary.json", text)]
    for name, table in result.tables.items():
        written.append(
            atomic_write(
                out / "tables" / f"{name}.csv", lambda tmp, t=table: t.to_csv(tmp, index=False)
            )
        )
    result = dataclasses.replace(result, out_dir=out)
    if report:
        # imported here: the report's plotting libraries load only when a report is written
        from metacog_metrics.report import write_report

        write_report(result, out)
        written.append(out / "report.html")
    folder.commit(written)
    return result


def _models_file_mismatch(df: Any, models_file: str | os.PathLike[str] | None) -> list[str]:
    """A note when the models file names none of the records' models (names must match)."""
    if models_file is None:
        return []
    named = sorted(load_models_file(models_file))
    present = sorted({str(m) for m in df["model"].unique()})
    if not named or set(named) & set(present):
        return []
    return [
        f"{models_file}: none of its {len(named)} model name(s) is in the records, so it sets "
        f"no trait (it names {', '.join(named[:3])}{' ...' if len(named) > 3 else ''}; the "
        f"records have {', '.join(present[:3])}{' ...' if len(present) > 3 else ''}; names "
        "must match exactly)"
    ]
