"""Orchestration of ``metacog analyze``: records in, one :class:`AnalysisResult` out.

:func:`analyze_records` validates the records, splits them into groups (benchmark, probe,
confidence kind; with ``pool``, pooled groups too), runs each group's analyses
(:func:`~metacog_metrics.analyze.group.analyze_group`), then the summary and tables
(:mod:`~metacog_metrics.analyze.summary`) and the text sections
(:mod:`~metacog_metrics.analyze.text`). Nothing is written; files are
:mod:`metacog_metrics.pipeline`'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics._result import to_jsonable
from metacog_metrics._threads import Stages
from metacog_metrics.analyze.findings import UNSPECIFIED_PROBE, analysis_findings
from metacog_metrics.analyze.group import analyze_group
from metacog_metrics.analyze.options import POOLED, SOURCE_COLUMN, AnalysisOptions
from metacog_metrics.analyze.results import AnalysisResult, GroupAnalysis
from metacog_metrics.analyze.summary import build_summary
from metacog_metrics.analyze.text import text_sections
from metacog_metrics.distributed import scheduler_executor
from metacog_metrics.records import _single_valued, apply_model_traits, validate_records

__all__ = ["analyze_records", "analyze_validated", "one_blas_thread"]


def analyze_records(
    df: pd.DataFrame,
    options: AnalysisOptions | None = None,
    /,
    *,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    **overrides: Any,
) -> AnalysisResult:
    """Run every analysis on a record table, one group per (benchmark, probe, confidence kind).

    Args:
        df: Records (validated here if they were not).
        options: The settings (:class:`AnalysisOptions`; default: its defaults).
        models: Per-model traits ``{model: {"reasoning": bool}}`` (as :func:`load_models_file`
            returns); they fill the ``reasoning`` column for the pair-type breakdown.
        **overrides: Fields of :class:`AnalysisOptions` that replace those of ``options``
            (``permutations=99``, ``seed=1``, ...).

    Returns:
        An :class:`AnalysisResult` (``out_dir`` None; nothing is written).

    Raises:
        RecordError: On invalid records.
        TypeError: On an unknown option.
        ValueError: On a bad option value.
    """
    opts = AnalysisOptions.build(options, **overrides)
    with one_blas_thread():
        return analyze_validated(df, opts, models)


def one_blas_thread() -> Any:
    """Every matrix here is small (models x models, items x models): one BLAS thread is faster,
    and multi-threaded OpenBLAS degrades badly on a busy machine (measured 10x on 2 cores). The
    permutation engines parallelise with their own threads instead."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def analyze_validated(
    df: pd.DataFrame,
    opts: AnalysisOptions,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    validated: bool = False,
) -> AnalysisResult:
    """:func:`analyze_records` with its options built (the caller holds :func:`one_blas_thread`).

    ``validated``: the records come from :func:`~metacog_metrics.records.read_records`, which
    validated them already (``df.attrs`` keeps the files read and their warnings).
    """
    inputs = list(df.attrs.get("inputs", []))
    notes = list(df.attrs.get("warnings", []))
    # read_records validated the files' records already: once is enough
    records = (
        df
        if validated
        else validate_records(
            df,
            source=inputs[0] if len(inputs) == 1 else "<records>",
            default_probe=UNSPECIFIED_PROBE,
        )
    )
    if models:
        notes += apply_model_traits(records, models, source="models")
    if opts.probe is not None:  # the probe the records did not name, as the user declares it
        unnamed = (records["probe"] == UNSPECIFIED_PROBE).to_numpy()
        if unnamed.any():
            records = records.copy()
            records.loc[unnamed, "probe"] = opts.probe
    # each group's rows from one hash pass (groups in order of first appearance); records of
    # one group (the usual case) are used as they are, not hashed and copied
    group_cols = ["benchmark", "probe", "confidence_kind"]
    positions: dict[tuple[str, ...], np.ndarray | None]
    if len(records) and all(_single_valued(records[c]) for c in group_cols):
        positions = {tuple(str(records[c].iloc[0]) for c in group_cols): None}
    else:
        positions = {
            tuple(str(v) for v in k): idx
            for k, idx in records.groupby(group_cols, sort=False).indices.items()
        }
    keys = list(positions)
    frames = {}
    if opts.pool:
        frames, pool_notes = _pooled_frames(records)
        keys += list(frames)
        notes += pool_notes
    labels = _probe_labels(keys)
    groups: dict[tuple[str, str, str], GroupAnalysis] = {}
    with scheduler_executor(opts.scheduler):  # the permutation work on a cluster, if given
        for key in keys:
            if key in frames:
                rows = frames[key]
            else:
                where = positions[key]
                rows = records if where is None else records.iloc[np.sort(where)]
            with Stages() as stages:  # an error or interrupt empties the queues of its threads
                g = analyze_group(rows, key, labels[key], opts, stages)
            groups[key] = g
            notes += [f"{key[0]}/{labels[key]}: {w}" for w in g.warnings]
    files, run_notes = tuple(str(p) for p in inputs), tuple(notes)
    summary, tables = build_summary(records, groups, opts, inputs=files, notes=run_notes)
    inline, probes, text_tables = text_sections(records, groups, opts)
    summary["inline_solving"] = inline.to_dict()
    summary["text_probes"] = probes.to_dict()
    tables.update(text_tables)
    findings = analysis_findings(groups, opts)
    by_name = {f.group: f for f in (findings.headline, *findings.others) if f is not None}
    for g in groups.values():
        found = by_name.get(f"{g.benchmark}/{g.label}")
        if found is not None and found.small_gap is not None:
            summary["results"][g.benchmark][g.label]["pairwise"]["small_gap_control"] = (
                found.small_gap
            )
    summary["findings"] = findings.to_dict()
    return AnalysisResult(
        records,
        to_jsonable(summary),
        tables,
        groups,
        findings=findings,
        options=opts,
        inputs=files,
        warnings=run_notes,
        inline_solving=inline,
        text_probes=probes,
    )


def _pooled_frames(
    records: pd.DataFrame,
) -> tuple[dict[tuple[str, str, str], pd.DataFrame], list[str]]:
    """One pooled frame per (probe, kind) present in two or more benchmarks."""
    if (records["benchmark"] == POOLED).any():
        raise ValueError(
            f"the records already have a benchmark named {POOLED!r}; rename it to pool the others"
        )
    frames: dict[tuple[str, str, str], pd.DataFrame] = {}
    notes: list[str] = []
    for (probe, kind), rows in records.groupby(["probe", "confidence_kind"], sort=False):
        benches = list(pd.unique(rows["benchmark"]))
        if len(benches) < 2:
            notes.append(f"{POOLED}/{probe}: only one benchmark ({benches[0]}); not pooled")
            continue
        pooled = rows.copy()
        pooled[SOURCE_COLUMN] = pooled["benchmark"].astype(str)
        pooled["item_id"] = pooled["benchmark"].astype(str) + ":" + pooled["item_id"].astype(str)
        pooled["benchmark"] = POOLED
        frames[(POOLED, str(probe), str(kind))] = pooled
    return frames, notes


def _probe_labels(keys: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
    kinds: dict[tuple[str, str], set[str]] = {}
    for b, p, k in keys:
        kinds.setdefault((b, p), set()).add(k)
    return {(b, p, k): (p if len(kinds[(b, p)]) == 1 else f"{p}:{k}") for b, p, k in keys}
