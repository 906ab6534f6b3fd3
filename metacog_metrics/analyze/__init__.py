"""``metacog analyze``: every analysis of a record table, per (benchmark, probe, confidence kind).

:func:`analyze_records` takes a record table and :class:`AnalysisOptions` and returns an
:class:`AnalysisResult`: the typed results of each group (:class:`GroupAnalysis`), the summary
(what ``summary.json`` holds; schema in ``docs/summary_schema.md``) and the tables. Every
section records its basis (models and items). Reading and writing files is
:mod:`metacog_metrics.pipeline`'s; this package writes nothing and imports no report.

Modules: :mod:`~.options` (the settings), :mod:`~.group` (one group's analyses),
:mod:`~.orchestration` (all groups), :mod:`~.results` (the result objects), :mod:`~.summary`
(summary.json and tables from the results), :mod:`~.text` (inline solving and text probes).
"""

from __future__ import annotations

from metacog_metrics.analyze.group import coverage_table
from metacog_metrics.analyze.options import (
    CONTINUOUS_KINDS,
    MIN_ITEMS,
    MIN_MODELS,
    POOLED,
    AnalysisOptions,
)
from metacog_metrics.analyze.orchestration import analyze_records
from metacog_metrics.analyze.results import AnalysisResult, GroupAnalysis, MatrixSection
from metacog_metrics.analyze.summary import SCHEMA_VERSION

__all__ = [
    "CONTINUOUS_KINDS",
    "MIN_ITEMS",
    "MIN_MODELS",
    "POOLED",
    "SCHEMA_VERSION",
    "AnalysisOptions",
    "AnalysisResult",
    "GroupAnalysis",
    "MatrixSection",
    "analyze_records",
    "coverage_table",
]
