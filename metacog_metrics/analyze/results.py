"""The result objects of ``metacog analyze``: one group's sections, every group, and the run.

:class:`AnalysisResult` holds the typed results (:class:`GroupAnalysis` per group) beside the
summary and tables made from them (:mod:`metacog_metrics.analyze.summary`); its
:meth:`~AnalysisResult.summary_text` is the few lines ``metacog analyze`` prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics._conventions import format_p
from metacog_metrics._result import Result, to_jsonable
from metacog_metrics.calibration import CalibrationResult
from metacog_metrics.factors import EigenResult, FactorAlignmentResult, FactorAnalysisResult
from metacog_metrics.pairwise import PairwiseResult
from metacog_metrics.pairwise.nulls import get_null, null_names
from metacog_metrics.private_signal import PrivateSignalTestResult
from metacog_metrics.records import ItemMatrices
from metacog_metrics.tetrachoric import TetrachoricMatrixResult

__all__ = ["AnalysisResult", "GroupAnalysis", "MatrixSection"]


@dataclasses.dataclass(frozen=True, eq=False)
class MatrixSection(Result):
    """Correlation, eigen and factor results of one items x models matrix.

    Attributes:
        tetrachoric: The correlation matrix on pairwise-complete items (models without variance
            or without enough shared items excluded): tetrachoric for 0/1 data, polychoric
            (:class:`~metacog_metrics.polychoric.OrdinalCorrelationResult`) for numeric
            confidence over per-model levels; ``method`` says which.
        eigen: Eigen-decomposition of it, with the loadings-vs-thresholds parabola (None when
            fewer than 2 models are left).
        factor: One-factor model (None when fewer than 3 models are left).
        rate: Per model (group order), the share of 1s (yes-rate or accuracy), or the mean
            confidence for numeric confidence, each on the model's own items.
        reason: Why ``eigen``/``factor`` are missing, else None.
        method: ``"tetrachoric"`` or ``"polychoric"``.
    """

    tetrachoric: TetrachoricMatrixResult
    eigen: EigenResult | None
    factor: FactorAnalysisResult | None
    rate: np.ndarray
    reason: str | None = None
    method: str = "tetrachoric"

    @property
    def correlation(self) -> TetrachoricMatrixResult:
        """The correlation matrix (``tetrachoric``, whichever ``method`` made it)."""
        return self.tetrachoric


@dataclasses.dataclass(frozen=True, eq=False)
class GroupAnalysis(Result):
    """Every analysis of one (benchmark, probe, confidence kind) group.

    Attributes:
        benchmark: Benchmark.
        probe: Probe.
        confidence_kind: Confidence kind.
        label: Key under ``summary["results"][benchmark]`` (the probe, or ``probe:kind`` when the
            probe has several kinds).
        matrices: The complete-case items x models matrices of the included models (items every
            one of them answered): factor scores, the alignment and the private-signal test.
        binarized_at: Threshold used to binarise numeric confidence for the tetrachoric and
            factor sections (None for binary confidence, and for numeric confidence analysed
            as ordered levels with the polychoric).
        confidence: Section of the confidence matrix (pairwise-complete items).
        correctness: Section of the correctness matrix.
        alignment: Factor alignment of confidence with correctness.
        pairwise: Pairwise calibration (real-valued confidence for continuous kinds), each pair
            on the items both models answered.
        calibration: Per-model calibration (each model on its own graded items).
        skipped: Why the cross-model analyses were skipped, else None.
        warnings: Notes on this group (drops, degenerate models, smoothing, unparseable rows).
        private_signal: The test of private signal on the complete-case items (binary
            confidence only; :mod:`metacog_metrics.private_signal`).
        coverage_excluded: ``{model: share of the group's items it has}`` for models left out
            of the cross-model analyses by ``min_coverage``.
        all_items: The items x models matrices of the included models on every item any of
            them answered (NaN where a model lacks one): the correlation matrices and the
            pairwise section.
        coverage: One row per model of the group: usable items, share, included or why not.
    """

    benchmark: str
    probe: str
    confidence_kind: str
    label: str
    matrices: ItemMatrices
    binarized_at: float | None
    confidence: MatrixSection | None
    correctness: MatrixSection | None
    alignment: FactorAlignmentResult | None
    pairwise: PairwiseResult | None
    calibration: CalibrationResult
    skipped: str | None
    warnings: tuple[str, ...]
    private_signal: PrivateSignalTestResult | None = None
    coverage_excluded: Mapping[str, float] = dataclasses.field(default_factory=dict)
    all_items: ItemMatrices | None = None
    coverage: pd.DataFrame | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class AnalysisResult(Result):
    """Output of :func:`~metacog_metrics.analyze.analyze_records` and
    :func:`~metacog_metrics.pipeline.analyze_files`.

    Attributes:
        records: The validated records analysed.
        summary: The summary (what ``summary.json`` holds; plain JSON types).
        tables: ``{name: DataFrame}`` (what ``tables/<name>.csv`` holds).
        groups: ``{(benchmark, probe, confidence_kind): GroupAnalysis}``, with the full result
            objects (null draws, delta curve, loadings, matrices) the report plots.
        out_dir: Folder written by :func:`~metacog_metrics.pipeline.analyze_files` (None for
            :func:`~metacog_metrics.analyze.analyze_records`).
    """

    records: pd.DataFrame
    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame]
    groups: dict[tuple[str, str, str], GroupAnalysis]
    out_dir: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        """The summary (plain JSON types, NaN as None)."""
        return to_jsonable(self.summary)

    def summary_text(self) -> str:
        """A short human summary: a few lines per group."""
        return _summary_text(self)


def _fmt(x: Any, spec: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    return format(x, spec)


def _summary_text(result: AnalysisResult) -> str:
    s = result.summary
    lines = [
        f"{s['n_records']:,} records, {len(s['models'])} models, {len(result.groups)} group(s)"
        + (f" -> {result.out_dir / 'summary.json'}" if result.out_dir else "")
    ]
    for (bench, _, _), g in result.groups.items():
        d = s["results"][bench][g.label]
        cov = d.get("coverage") or {}
        head = (f"{bench} / {g.label} ({g.confidence_kind}): {d['n_models']} of {len(cov)} "
                f"models, {d['n_items_union']} items")  # fmt: skip
        if g.coverage_excluded:
            head += (f" ({len(g.coverage_excluded)} model(s) below coverage "
                     f"{s['parameters']['min_coverage']:g} left out)")  # fmt: skip
        lines.append(head)
        if g.skipped:
            lines.append(f"  skipped: {g.skipped}")
        else:
            for name in ("confidence", "correctness"):
                sec = d[name]
                e, b = sec["eigen"], sec["basis"]
                per = b.get("n_items_per_pair") or {}
                how = sec["method"] + (
                    f" (binarised at {g.binarized_at:g})"
                    if name == "confidence" and g.binarized_at is not None
                    else ""
                )
                if b["n_models"] < 2:  # the others left out (constant, too few items)
                    word = "model" if b["n_models"] == 1 else "models"
                    lines.append(f"  {name} ({how}, {b['n_models']} {word}): no pairs to "
                                 "correlate, no factor model")  # fmt: skip
                    continue
                lines.append(
                    f"  {name} ({how}, {b['n_models']} models, {_fmt(per.get('min'), 'd')}-"
                    f"{_fmt(per.get('max'), 'd')} items a pair): first factor "
                    f"{_fmt(e['first_share'], '.1%')} of variance; loadings ~ thresholds "
                    f"quadratic R^2 {_fmt(e['quadratic_r2'])}"
                )  # fmt: skip
            pw = d["pairwise"]
            per = pw["basis"].get("n_items_per_pair") or {}
            tested = s["parameters"].get("permutations") != 0
            nulls = (
                "; "
                + ", ".join(
                    f"{get_null(n).short_label} null {_fmt(pw['nulls'][n]['mean'])} "
                    f"({format_p(pw['nulls'][n]['p_value'])})"
                    for n in null_names()
                )
                if tested
                else "; no permutation test run (--permutations 0): no p-values, no "
                "FDR-significant pairs"
            )
            lines.append(
                f"  pairwise: mean tau-b {_fmt(pw['mean_tau'])} over {pw['n_pairs_valid']} "
                f"pairs ({_fmt(per.get('min'), 'd')}-{_fmt(per.get('max'), 'd')} items a pair, "
                f"median {_fmt(per.get('median'), '.0f')}){nulls}"
            )
            if "private_signal" in pw["nulls"]:
                ns = pw["nulls"]["private_signal"]
                lines.append(
                    f"  private-signal test ({ns['basis']['n_models']} models x "
                    f"{ns['basis']['n_items']} complete-case items): null mean "
                    f"{_fmt(ns['mean'])}, one-sided {format_p(ns['p_value'])}"
                )
            al = d["factor_alignment"]
            share = (
                f"{_fmt(pw['fdr_significant_share'], '.1%')} of pairs FDR-significant "
                f"(base-rate, q < {pw['fdr_alpha']:g}); "
                if tested
                else ""
            )
            lines.append(
                f"  {share}factor alignment "
                f"({al['basis']['n_models']} models x {al['basis']['n_items']} complete-case "
                f"items) r {_fmt(al['all']['r'])}, contentious "
                f"({al['contentious']['n_items']} items) {_fmt(al['contentious']['r'])}"
            )
        auc = [(m["auroc_internal"], m["auroc_pop"]) for m in d["per_model"].values()]
        internal = [a for a, _ in auc if a is not None]
        pop = [b for _, b in auc if b is not None]
        if internal:
            lines.append(
                f"  per-model AUROC median: internal {_fmt(float(np.median(internal)))}, "
                f"population {_fmt(float(np.median(pop)) if pop else None)}"
            )
        if g.warnings:
            lines.append(f"  {len(g.warnings)} warning(s): {g.warnings[0]}"
                         + (" ..." if len(g.warnings) > 1 else ""))  # fmt: skip
    return "\n".join(lines)
