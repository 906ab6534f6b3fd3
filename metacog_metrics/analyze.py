"""``metacog analyze``: every analysis of a record table, per (benchmark, probe, confidence kind).

:func:`analyze_records` runs, for each group of records: the items x models matrices
(complete-case, drops reported), tetrachoric correlations, eigen-decomposition and one-factor
model of confidence and of correctness, the factor alignment on all and on contentious items,
pairwise calibration with both nulls, and per-model calibration. :func:`analyze_files` reads the
files, runs it, and writes ``summary.json`` (strict JSON, schema in ``docs/summary_schema.md``),
``tables/*.csv`` and, when the report module is installed, ``report.html``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics._conventions import child_sequence
from metacog_metrics._io import atomic_write, atomic_write_text
from metacog_metrics._result import Result, to_jsonable
from metacog_metrics.calibration import CalibrationResult, calibration_by_model
from metacog_metrics.factors import (
    EigenResult,
    FactorAlignmentResult,
    FactorAnalysisResult,
    eigen_decomposition,
    factor_alignment,
    factor_analysis,
)
from metacog_metrics.pairwise import (
    DEFAULT_DELTAS,
    ENGINES,
    NULLS,
    PairwiseResult,
    pairwise_calibration,
)
from metacog_metrics.records import (
    ItemMatrices,
    RecordWarning,
    apply_model_traits,
    item_matrices,
    read_records,
    validate_records,
)
from metacog_metrics.stratified import StratifiedTestResult, stratified_mean_tau_test
from metacog_metrics.tetrachoric import TetrachoricMatrixResult, tetrachoric_matrix
from metacog_metrics.text_analyses import text_sections

__all__ = [
    "CONTINUOUS_KINDS",
    "MIN_ITEMS",
    "MIN_MODELS",
    "SCHEMA_VERSION",
    "AnalysisOptions",
    "AnalysisResult",
    "GroupAnalysis",
    "MatrixSection",
    "analyze_files",
    "analyze_records",
]

#: Version of the summary.json layout (docs/summary_schema.md).
SCHEMA_VERSION = "1.0"
#: Confidence kinds analysed as real values (binarised only for the tetrachoric/factor sections).
CONTINUOUS_KINDS: tuple[str, ...] = ("verbal_numeric", "sampled", "logprob")
#: A group needs this many models with usable items ...
MIN_MODELS = 3
#: ... and this many complete-case items for the cross-model analyses.
MIN_ITEMS = 10


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AnalysisOptions:
    """The settings of one analysis run, checked when built (a bad value fails before any work).

    Attributes:
        permutations: Per-pair permutation draws for each null (0 skips the per-pair tests).
        joint_permutations: Joint draws for the null of the mean over pairs, the delta curve,
            the pair types and the difficulty-stratified null (0 skips them).
        seed: Seed; each group derives its own streams from it and its key, so adding a group
            does not change the others.
        alternative: Alternative of every permutation p-value.
        fdr_alpha: BH level for the share of significant pairs.
        binarize_at: Continuous confidence >= this counts as "yes" in the tetrachoric and factor
            sections (pairwise and calibration use the real values).
        contentious_bounds: Inclusive yes-rate and pass-rate bounds of a contentious item.
        n_boot: Bootstrap resamples of the Internal - Pop AUROC interval.
        deltas: Accuracy-gap grid of the delta curve.
        workers: Threads for the permutation work and the per-model calibration (default:
            CPU count); results do not depend on it.
        pool: Also analyse the benchmarks pooled: for each (probe, confidence kind) found in
            two or more benchmarks, one more group under the benchmark name ``"pooled"`` whose
            items are ``<benchmark>:<item_id>``. Useful when each benchmark has few items.
        min_coverage: Leave a model out of a group's cross-model analyses (not its own
            calibration) when it has usable items for less than this share of the group's
            items, before the complete-case rule; one partial run then no longer costs every
            model the items it lacks. Reported per group. None keeps every model.
        engine: Engine of the per-pair and joint draws (``"auto"``, ``"numpy"``,
            ``"numba"``; see :func:`~metacog_metrics.pair_permutation_test`). The same seed
            gives other draws on another engine; ``summary.json`` records the ones that ran.
        progress: Progress bars on the permutation steps.
    """

    permutations: int = 10_000
    joint_permutations: int = 1_000
    seed: int = 0
    alternative: str = "two-sided"
    fdr_alpha: float = 0.05
    binarize_at: float = 0.5
    contentious_bounds: tuple[float, float] = (0.1, 0.9)
    n_boot: int = 1000
    deltas: tuple[float, ...] = DEFAULT_DELTAS
    workers: int | None = None
    pool: bool = False
    min_coverage: float | None = None
    engine: str = "auto"
    progress: bool = False

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in ("permutations", "joint_permutations", "n_boot"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
            put(name, int(value))
        put("seed", int(self.seed))
        if self.alternative not in ("two-sided", "greater", "less"):
            raise ValueError(
                f"alternative must be 'two-sided', 'greater' or 'less', got {self.alternative!r}"
            )
        if not 0.0 < float(self.fdr_alpha) < 1.0:
            raise ValueError(f"fdr_alpha must be in (0, 1), got {self.fdr_alpha!r}")
        put("fdr_alpha", float(self.fdr_alpha))
        put("binarize_at", float(self.binarize_at))
        low, high = (float(v) for v in self.contentious_bounds)
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"contentious_bounds must be 0 <= low <= high <= 1, got {(low, high)}")
        put("contentious_bounds", (low, high))
        put("deltas", tuple(float(d) for d in self.deltas))
        if self.min_coverage is not None:
            if not 0.0 < float(self.min_coverage) <= 1.0:
                raise ValueError(f"min_coverage must be in (0, 1], got {self.min_coverage}")
            put("min_coverage", float(self.min_coverage))
        if self.workers is not None and int(self.workers) < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        put("pool", bool(self.pool))
        put("progress", bool(self.progress))

    @classmethod
    def build(cls, options: AnalysisOptions | None = None, **overrides: Any) -> AnalysisOptions:
        """``options`` (default: the defaults) with ``overrides``; an unknown name is an error."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise TypeError(f"unknown analysis option(s) {unknown}; known: {sorted(fields)}")
        return dataclasses.replace(options or cls(), **overrides)


# --------------------------------------------------------------------------------------------
# Result objects
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class MatrixSection(Result):
    """Tetrachoric, eigen and factor results of one binary items x models matrix.

    Attributes:
        tetrachoric: The tetrachoric matrix (degenerate models excluded).
        eigen: Eigen-decomposition of it, with the loadings-vs-thresholds parabola (None when
            fewer than 2 models are left).
        factor: One-factor model (None when fewer than 3 models are left).
        rate: Per model (group order), the share of 1s (yes-rate or accuracy).
        reason: Why ``eigen``/``factor`` are missing, else None.
    """

    tetrachoric: TetrachoricMatrixResult
    eigen: EigenResult | None
    factor: FactorAnalysisResult | None
    rate: np.ndarray
    reason: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class GroupAnalysis(Result):
    """Every analysis of one (benchmark, probe, confidence kind) group.

    Attributes:
        benchmark: Benchmark.
        probe: Probe.
        confidence_kind: Confidence kind.
        label: Key under ``summary["results"][benchmark]`` (the probe, or ``probe:kind`` when the
            probe has several kinds).
        matrices: The complete-case items x models matrices.
        binarized_at: Threshold used to binarise continuous confidence for the tetrachoric and
            factor sections (None for binary confidence).
        confidence: Section of the (binarised) confidence matrix.
        correctness: Section of the correctness matrix.
        alignment: Factor alignment of confidence with correctness.
        pairwise: Pairwise calibration (real-valued confidence for continuous kinds).
        calibration: Per-model calibration (each model on its own graded items).
        skipped: Why the cross-model analyses were skipped, else None.
        warnings: Notes on this group (drops, degenerate models, smoothing, unparseable rows).
        stratified: The mean tau against the difficulty-stratified null, a test of private
            signal beyond shared difficulty (binary confidence only; see
            :mod:`metacog_metrics.stratified`).
        coverage_excluded: ``{model: share of the group's items it has}`` for models left out
            of the cross-model analyses by ``min_coverage``.
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
    stratified: StratifiedTestResult | None = None
    coverage_excluded: Mapping[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, eq=False)
class AnalysisResult(Result):
    """Output of :func:`analyze_records` / :func:`analyze_files`.

    Attributes:
        records: The validated records analysed.
        summary: The summary (what ``summary.json`` holds; plain JSON types).
        tables: ``{name: DataFrame}`` (what ``tables/<name>.csv`` holds).
        groups: ``{(benchmark, probe, confidence_kind): GroupAnalysis}``, with the full result
            objects (null draws, delta curve, loadings, matrices) the report plots.
        out_dir: Folder written by :func:`analyze_files` (None for :func:`analyze_records`).
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


# --------------------------------------------------------------------------------------------
# One group
# --------------------------------------------------------------------------------------------


def _section(x: np.ndarray, models: Sequence[str]) -> MatrixSection:
    with np.errstate(invalid="ignore"):
        rate = x.mean(axis=0) if x.size else np.full(len(models), np.nan)
    tet = tetrachoric_matrix(x, names=list(models))
    eigen = factor = None
    reason = None
    if len(tet.names) < 2:
        reason = f"only {len(tet.names)} model(s) with variance"
    elif np.isnan(tet.rho).any():
        reason = "missing tetrachoric correlations"
    else:
        eigen = eigen_decomposition(tet.rho, thresholds=tet.tau, names=tet.names)
        if len(tet.names) >= 3:
            factor = factor_analysis(tet.rho, names=tet.names)
        else:
            reason = "fewer than 3 models with variance: no factor model"
    return MatrixSection(tet, eigen, factor, rate, reason)


def _analyze_group(
    df: pd.DataFrame,
    key: tuple[str, str, str],
    label: str,
    opts: AnalysisOptions,
) -> GroupAnalysis:
    bench, probe, kind = key
    notes: list[str] = []
    root = child_sequence(opts.seed, *key)
    pair_seed, boot_seed, strat_seed = root.spawn(3)
    excluded = _low_coverage(df, opts.min_coverage) if opts.min_coverage else {}
    if excluded:
        listed = ", ".join(f"{m} {c:.0%}" for m, c in excluded.items())
        notes.append(
            f"{len(excluded)} model(s) below min_coverage {opts.min_coverage:g} left out of the "
            f"cross-model analyses ({listed})"
        )
    keep = [m for m in pd.unique(df["model"]) if m not in excluded] if excluded else None
    mat = item_matrices(df, benchmark=bench, probe=probe, confidence_kind=kind, models=keep)
    calibration = calibration_by_model(
        df, n_boot=opts.n_boot, rng=int(boot_seed.generate_state(1)[0]), workers=opts.workers
    )
    for model, reason in mat.models_dropped.items():
        notes.append(f"model {model!r} left out: {reason}")
    unparseable = {m: n for m, n in mat.unparseable_by_model.items() if n}
    if unparseable:
        listed = ", ".join(f"{m} {n}" for m, n in unparseable.items())
        notes.append(f"{sum(unparseable.values())} unparseable confidence(s) ({listed})")
    if mat.n_items_dropped:
        worst = sorted(mat.dropped_by_model.items(), key=lambda kv: -kv[1])[:3]
        listed = ", ".join(f"{m} lacks {n}" for m, n in worst if n)
        notes.append(
            f"complete-case: {mat.n_items_dropped} of {mat.n_items_total} items dropped "
            f"because some model lacked them ({listed})"
        )
    continuous = kind in CONTINUOUS_KINDS
    binarized_at = opts.binarize_at if continuous else None
    skipped = None
    if mat.n_models < MIN_MODELS:
        skipped = f"{mat.n_models} model(s) with usable items; need at least {MIN_MODELS}"
    elif mat.n_items < MIN_ITEMS:
        skipped = f"{mat.n_items} complete-case item(s); need at least {MIN_ITEMS}"
    if skipped:
        notes.append(f"cross-model analyses skipped: {skipped}")
        return GroupAnalysis(bench, probe, kind, label, mat, binarized_at, None, None, None,
                             None, calibration, skipped, tuple(notes),
                             coverage_excluded=excluded)  # fmt: skip

    conf_bin = mat.binary_confidence(opts.binarize_at) if continuous else mat.confidence
    conf_section = _section(conf_bin, mat.models)
    corr_section = _section(mat.correct, mat.models)
    for name, section in (("confidence", conf_section), ("correctness", corr_section)):
        tet = section.tetrachoric
        for model, why in tet.dropped_reasons.items():
            notes.append(f"{name}: model {model!r} excluded from the tetrachoric matrix ({why})")
        if tet.smoothed:
            notes.append(
                f"{name}: tetrachoric matrix not positive definite (min eigenvalue "
                f"{tet.min_eigenvalue:.3g}); smoothed as psych::cor.smooth"
            )
        if tet.smoothing_note:
            notes.append(f"{name}: {tet.smoothing_note}")
        if section.reason:
            notes.append(f"{name}: {section.reason}")
        if section.factor is not None and section.factor.heywood:
            notes.append(f"{name}: Heywood case in the factor model (a uniqueness at 0.005)")
    alignment = factor_alignment(conf_bin, mat.correct, bounds=opts.contentious_bounds)
    pairwise = pairwise_calibration(
        mat.confidence,
        mat.correct,
        models=mat.models,
        reasoning=mat.reasoning if any(r is not None for r in mat.reasoning) else None,
        permutations=opts.permutations,
        joint_permutations=opts.joint_permutations,
        alternative=opts.alternative,
        fdr_alpha=opts.fdr_alpha,
        deltas=opts.deltas,
        rng=pair_seed,
        progress=opts.progress,
        workers=opts.workers,
        engine=opts.engine,
    )
    stratified = None
    if continuous:
        notes.append("difficulty-stratified null: binary confidence only; not run")
    elif opts.joint_permutations > 0:
        stratified = stratified_mean_tau_test(
            mat.confidence,
            mat.correct,
            permutations=opts.joint_permutations,
            rng=strat_seed,
        )
    return GroupAnalysis(
        benchmark=bench,
        probe=probe,
        confidence_kind=kind,
        label=label,
        matrices=mat,
        binarized_at=binarized_at,
        confidence=conf_section,
        correctness=corr_section,
        alignment=alignment,
        pairwise=pairwise,
        calibration=calibration,
        skipped=None,
        warnings=tuple(notes),
        stratified=stratified,
        coverage_excluded=excluded,
    )


# --------------------------------------------------------------------------------------------
# Summary and tables
# --------------------------------------------------------------------------------------------


def _aligned(values: np.ndarray | None, names: Sequence[str], models: Sequence[str]) -> list:
    """Per-model vector laid out over the group's ``models`` (None for excluded ones)."""
    if values is None:
        return [None] * len(models)
    pos = {n: i for i, n in enumerate(names)}
    return [float(values[pos[m]]) if m in pos else None for m in models]


def _section_summary(section: MatrixSection | None, models: Sequence[str]) -> dict[str, Any]:
    if section is None:
        return {}
    tet = section.tetrachoric
    out: dict[str, Any] = {
        "rate": dict(zip(models, section.rate.tolist())),
        "tetrachoric": {
            "rho": tet.reindex(models),
            "tau": tet.reindex_tau(models),
            "models": list(tet.names),
            "dropped": dict(tet.dropped_reasons),
            "smoothed": tet.smoothed,
            "smoothing_note": tet.smoothing_note,
            "min_eigenvalue": tet.min_eigenvalue,
            "n_corrected_pairs": tet.n_corrected_pairs,
        },
        "reason": section.reason,
    }
    e = section.eigen
    out["eigen"] = {
        "eigenvalues": None if e is None else e.eigenvalues,
        "first_share": None if e is None else e.first_share,
        "loadings": _aligned(None if e is None else e.loadings, tet.names, models),
        "quadratic_r2": None if e is None else e.quadratic_r2,
        "quadratic_coef": None if e is None or e.quadratic is None else e.quadratic.coef,
        "quadratic_p_value": None if e is None or e.quadratic is None else e.quadratic.p_value,
        "quadratic_vertex": None if e is None or e.quadratic is None else e.quadratic.vertex,
    }
    f = section.factor
    out["factor"] = {
        "method": None if f is None else f.method,
        "loadings": _aligned(None if f is None else f.loadings, tet.names, models),
        "variance_share": None if f is None else float(f.variance_share[0]),
        "heywood": None if f is None else f.heywood,
        "converged": None if f is None else f.converged,
    }
    return out


def _alignment_summary(a: FactorAlignmentResult | None) -> dict[str, Any]:
    if a is None:
        return {}

    def part(s: Any) -> dict[str, Any]:
        return {
            "r": s.r,
            "r2": s.r2,
            "p_value": s.p_value,
            "ci": s.ci,
            "n_items": s.n_items,
            "n_models_confidence": s.n_models_confidence,
            "n_models_correctness": s.n_models_correctness,
            "reason": s.reason,
        }

    return {"all": part(a.all), "contentious": part(a.contentious), "bounds": a.bounds,
            "method": a.method}  # fmt: skip


def _low_coverage(df: pd.DataFrame, min_coverage: float) -> dict[str, float]:
    """Models whose usable items (confidence and grade) cover less than ``min_coverage``."""
    usable = df[df["confidence"].notna() & df["correct"].notna()]
    n_items = df["item_id"].nunique()
    share = usable.groupby("model", sort=False)["item_id"].nunique() / max(n_items, 1)
    share = share.reindex(pd.unique(df["model"]), fill_value=0.0)
    return {str(m): float(c) for m, c in share.items() if c < min_coverage}


def _stratified_summary(st: StratifiedTestResult) -> dict[str, Any]:
    ok = st.draws[np.isfinite(st.draws)]
    return {
        "mean": st.null_mean,
        "sd": st.null_sd,
        "ci": tuple(np.quantile(ok, [0.025, 0.975])) if ok.size else (None, None),
        "p_value": st.p_value,
        "alternative": "greater",
        "n_draws": st.permutations,
        "n_strata": st.n_strata,
    }


def _pairwise_summary(
    pw: PairwiseResult | None, stratified: StratifiedTestResult | None = None
) -> dict[str, Any]:
    if pw is None:
        return {}
    curve = pw.delta_curve
    nulls: dict[str, Any] = {
        null: {
            "mean": res.mean,
            "sd": res.sd,
            "ci": res.ci,
            "p_value": res.p_value,
            "p_greater": res.p_greater,
            "p_less": res.p_less,
            "n_draws": res.n_draws,
            "fdr_significant_share": pw.fdr_share(null) if pw.permutations else None,
            "fdr_significant_share_by_direction": (
                pw.fdr_share_by_direction(null) if pw.permutations else None
            ),
        }
        for null, res in pw.nulls.items()
    }
    if stratified is not None:
        nulls["stratified"] = _stratified_summary(stratified)
    return {
        "n_pairs": pw.n_pairs,
        "n_pairs_valid": pw.n_pairs_valid,
        "mean_tau": pw.mean_tau,
        "continuous": pw.continuous,
        "alternative": pw.alternative,
        "permutations": pw.permutations,
        "joint_permutations": pw.joint_permutations,
        "nulls": nulls,
        "fdr_alpha": pw.fdr_alpha,
        "fdr_significant_share": pw.fdr_significant_share,
        "delta_curve": {
            "delta": curve.delta,
            "n_pairs": curve.n_pairs,
            "mean_tau": curve.mean_tau,
            "null_mean": curve.null_mean,
            "null_low": curve.null_low,
            "null_high": curve.null_high,
            "p_value": curve.p_value,
            "min_pairs": curve.min_pairs,
        },
        "pair_types": {
            kind: {
                "n_pairs": s.n_pairs,
                "mean_tau": s.mean_tau,
                "median_tau": s.median_tau,
                "null_mean": s.null_mean,
                "p_value": s.p_value,
                "fdr_significant_share": s.fdr_significant_share,
            }
            for kind, s in pw.pair_types.items()
        },
    }


_PER_MODEL_KEYS = (
    "auroc_internal", "auroc_internal_on_pop", "auroc_pop", "auroc_diff", "auroc_diff_ci",
    "auroc_diff_p", "brier", "ece", "ece_equal_mass", "aurc", "eaurc", "accuracy", "yes_rate",
    "mean_confidence", "n_items", "n_items_pop", "n_unparseable", "n_ungraded",
)  # fmt: skip


def _group_summary(g: GroupAnalysis) -> dict[str, Any]:
    mat = g.matrices
    models = list(mat.models)
    per_model = {
        name: {k: getattr(m, k) for k in _PER_MODEL_KEYS}
        for name, m in g.calibration.per_model.items()
    }
    conf = _section_summary(g.confidence, models)
    if conf or g.binarized_at is not None:
        conf["binarized_at"] = g.binarized_at
    return {
        "benchmark": g.benchmark,
        "probe": g.probe,
        "confidence_kind": g.confidence_kind,
        "status": "skipped" if g.skipped else "ok",
        "reason": g.skipped,
        "models": models,
        "reasoning": dict(zip(models, mat.reasoning)),
        "n_models": mat.n_models,
        "n_items": mat.n_items,
        "n_items_total": mat.n_items_total,
        "n_items_dropped": mat.n_items_dropped,
        "dropped_by_model": mat.dropped_by_model,
        "models_dropped": mat.models_dropped,
        "coverage_excluded": dict(g.coverage_excluded),
        "unparseable_by_model": mat.unparseable_by_model,
        "confidence": conf,
        "correctness": _section_summary(g.correctness, models),
        "factor_alignment": _alignment_summary(g.alignment),
        "pairwise": _pairwise_summary(g.pairwise, g.stratified),
        "per_model": per_model,
        "warnings": list(g.warnings),
    }


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def _group_tables(g: GroupAnalysis) -> dict[str, pd.DataFrame]:
    prefix = f"{_safe(g.benchmark)}__{_safe(g.label)}__"
    mat = g.matrices
    models = list(mat.models)
    ident = {"benchmark": g.benchmark, "probe": g.probe, "confidence_kind": g.confidence_kind}
    out: dict[str, pd.DataFrame] = {}
    out[prefix + "per_model"] = g.calibration.table.assign(**ident)
    if g.skipped:
        return out
    pw = g.pairwise
    out[prefix + "pairs"] = pw.table
    out[prefix + "delta_curve"] = pw.delta_curve.table
    if pw.pair_types:
        out[prefix + "pair_types"] = pd.DataFrame([
            {"pair_type": k, "n_pairs": s.n_pairs, "mean_tau": s.mean_tau,
             **{f"{n}_null_mean": s.null_mean[n] for n in NULLS},
             **{f"{n}_p_value": s.p_value[n] for n in NULLS},
             **{f"{n}_fdr_significant_share": s.fdr_significant_share[n] for n in NULLS}}
            for k, s in pw.pair_types.items()
        ])  # fmt: skip
    eig_rows, load = [], {"model": models}
    for name, sec in (("confidence", g.confidence), ("correctness", g.correctness)):
        tet = sec.tetrachoric
        if sec.eigen is not None:
            for i, v in enumerate(sec.eigen.eigenvalues):
                eig_rows.append({"matrix": name, "component": i + 1, "eigenvalue": v,
                                 "share": v / len(sec.eigen.eigenvalues)})  # fmt: skip
        load[f"{name}_rate"] = sec.rate
        load[f"{name}_threshold"] = tet.reindex_tau(models)
        load[f"{name}_pc1_loading"] = _aligned(
            None if sec.eigen is None else sec.eigen.loadings, tet.names, models
        )
        load[f"{name}_fa_loading"] = _aligned(
            None if sec.factor is None else sec.factor.loadings, tet.names, models
        )
        out[prefix + f"tetrachoric_{name}"] = pd.DataFrame(
            tet.reindex(models), index=pd.Index(models, name="model"), columns=models
        ).reset_index()
    out[prefix + "eigenvalues"] = pd.DataFrame(eig_rows)
    out[prefix + "loadings"] = pd.DataFrame(load)
    a = g.alignment
    conf_bin = mat.binary_confidence(g.binarized_at) if g.binarized_at is not None else (
        mat.confidence)  # fmt: skip
    out[prefix + "factor_scores"] = pd.DataFrame(
        {
            "item_id": list(mat.item_ids),
            "confidence_score": a.all.confidence_scores,
            "correctness_score": a.all.correctness_scores,
            "contentious": a.contentious_mask,
            "yes_count": conf_bin.sum(axis=1).astype(int),
            "correct_count": mat.correct.sum(axis=1).astype(int),
        }
    )
    return out


def _probe_labels(keys: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
    kinds: dict[tuple[str, str], set[str]] = {}
    for b, p, k in keys:
        kinds.setdefault((b, p), set()).add(k)
    return {(b, p, k): (p if len(kinds[(b, p)]) == 1 else f"{p}:{k}") for b, p, k in keys}


def _package_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("metacog-eval")
    except Exception:  # not installed (running from a checkout)
        return None


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
    with _one_blas_thread():
        return _analyze(df, opts, models)


def _one_blas_thread() -> Any:
    """Every matrix here is small (models x models, items x models): one BLAS thread is faster,
    and multi-threaded OpenBLAS degrades badly on a busy machine (measured 10x on 2 cores). The
    permutation engines parallelise with their own threads instead."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _analyze(
    df: pd.DataFrame,
    opts: AnalysisOptions,
    models: Mapping[str, Mapping[str, Any]] | None,
    *,
    validated: bool = False,
) -> AnalysisResult:
    inputs = list(df.attrs.get("inputs", []))
    notes = list(df.attrs.get("warnings", []))
    # read_records validated the files' records already (analyze_files): once is enough
    records = (
        df
        if validated
        else validate_records(df, source=inputs[0] if len(inputs) == 1 else "<records>")
    )
    if models:
        notes += apply_model_traits(records, models, source="models")
    # each group's rows from one hash pass (groups in order of first appearance)
    positions = {
        tuple(str(v) for v in k): idx
        for k, idx in records.groupby(
            ["benchmark", "probe", "confidence_kind"], sort=False
        ).indices.items()
    }
    keys = list(positions)
    frames = {}
    if opts.pool:
        frames, pool_notes = _pooled_frames(records)
        keys += list(frames)
        notes += pool_notes
    labels = _probe_labels(keys)
    groups: dict[tuple[str, str, str], GroupAnalysis] = {}
    results: dict[str, dict[str, Any]] = {}
    tables: dict[str, pd.DataFrame] = {}
    for key in keys:
        bench = key[0]
        rows = frames[key] if key in frames else records.iloc[np.sort(positions[key])]
        g = _analyze_group(rows, key, labels[key], opts)
        groups[key] = g
        results.setdefault(bench, {})[labels[key]] = _group_summary(g)
        tables.update(_group_tables(g))
        notes += [f"{bench}/{labels[key]}: {w}" for w in g.warnings]
    per_model = [t for name, t in tables.items() if name.endswith("__per_model")]
    if per_model:
        tables["per_model"] = pd.concat(per_model, ignore_index=True)
    summary = {
        "schema_version": SCHEMA_VERSION,
        "generated_by": {"package": "metacog-eval", "version": _package_version()},
        "inputs": inputs,
        "n_records": len(records),
        "models": list(pd.unique(records["model"])),
        "parameters": {
            "permutations": opts.permutations,
            "joint_permutations": opts.joint_permutations,
            "seed": opts.seed,
            "alternative": opts.alternative,
            "fdr_alpha": opts.fdr_alpha,
            "binarize_at": opts.binarize_at,
            "contentious_bounds": list(opts.contentious_bounds),
            "factor_method": "minres",
            "missing": "complete",
            "n_boot": opts.n_boot,
            "deltas": list(opts.deltas),
            "min_models": MIN_MODELS,
            "min_items": MIN_ITEMS,
            "pool": opts.pool,
            "min_coverage": opts.min_coverage,
            "engine": opts.engine,
        },
        "engine": _engines_used(groups, opts.engine),
        "warnings": notes,
        "results": results,
    }
    text_summary, text_tables = text_sections(records, groups, opts)
    summary.update(text_summary)
    tables.update(text_tables)
    return AnalysisResult(records, to_jsonable(summary), tables, groups)


def _engines_used(groups: Mapping[Any, GroupAnalysis], requested: str) -> dict[str, Any]:
    """Which engine drew the per-pair nulls and the joint draws (the same seed gives other
    draws on another engine): ``"numba"`` or ``"numpy"``, ``"mixed"`` when groups differ,
    None when no such draws were made."""
    ran = sorted({
        res.engine
        for g in groups.values() if g.pairwise is not None
        for res in g.pairwise.per_pair.values() if res.permutations > 0
    })  # fmt: skip
    joint = sorted({
        g.pairwise.joint_engine
        for g in groups.values() if g.pairwise is not None and g.pairwise.joint_engine
    })  # fmt: skip

    def one(names: list[str]) -> str | None:
        return names[0] if len(names) == 1 else ("mixed" if names else None)

    version = None
    if "numba" in ran or "numba" in joint:
        version = importlib.import_module("numba").__version__
    return {
        "per_pair": one(ran),
        "joint": one(joint),
        "requested": requested,
        "numba_version": version,
    }


#: Benchmark name of the pooled groups (``analyze_records(..., pool=True)``).
POOLED = "pooled"


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
        pooled["item_id"] = pooled["benchmark"].astype(str) + ":" + pooled["item_id"].astype(str)
        pooled["benchmark"] = POOLED
        frames[(POOLED, str(probe), str(kind))] = pooled
    return frames, notes


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


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
    ``report=True`` and the report module installed (``metacog_metrics.report``),
    ``report.html``. A previous run's tables and report that this run does not rewrite are
    removed, so the folder holds one run's outputs.

    Args:
        paths: Record files (Parquet or CSV).
        options: The settings (:class:`AnalysisOptions`; default: its defaults with progress
            bars on).
        out_dir: Output folder (created).
        models_file: YAML of per-model traits (``reasoning: true``).
        report: Write ``report.html`` when the report module is available.
        **overrides: Fields of :class:`AnalysisOptions` that replace those of ``options``.

    Returns:
        The :class:`AnalysisResult`, with ``out_dir`` set.

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
        df = read_records(paths, models_file=models_file)
    with _one_blas_thread():
        result = _analyze(df, opts, None, validated=True)
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
    wrote_report = report and importlib.util.find_spec("metacog_metrics.report") is not None
    if wrote_report:
        importlib.import_module("metacog_metrics.report").write_report(result, out)
    _remove_stale_outputs(out, written, keep_report=wrote_report)
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


# --------------------------------------------------------------------------------------------
# Text summary
# --------------------------------------------------------------------------------------------


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
        head = f"{bench} / {g.label} ({g.confidence_kind}): {d['n_models']} models x " \
               f"{d['n_items']} items"  # fmt: skip
        if d["n_items_dropped"]:
            head += f" ({d['n_items_dropped']} of {d['n_items_total']} dropped: complete-case)"
        lines.append(head)
        if g.skipped:
            lines.append(f"  skipped: {g.skipped}")
        else:
            for name in ("confidence", "correctness"):
                e = d[name]["eigen"]
                extra = f" (binarised at {g.binarized_at:g})" if name == "confidence" and \
                    g.binarized_at is not None else ""  # fmt: skip
                lines.append(
                    f"  {name}{extra}: first factor {_fmt(e['first_share'], '.1%')} of "
                    f"variance; loadings ~ thresholds quadratic R^2 {_fmt(e['quadratic_r2'])}"
                )
            pw = d["pairwise"]
            nb, nc = pw["nulls"]["base_rate"], pw["nulls"]["calibration_preserving"]
            lines.append(
                f"  pairwise: mean tau-b {_fmt(pw['mean_tau'])} over {pw['n_pairs_valid']} "
                f"pairs; base-rate null {_fmt(nb['mean'])} (p={_fmt(nb['p_value'], '.3g')}), "
                f"calibration-preserving null {_fmt(nc['mean'])} "
                f"(p={_fmt(nc['p_value'], '.3g')})"
            )
            if "stratified" in pw["nulls"]:
                ns = pw["nulls"]["stratified"]
                lines.append(
                    f"  difficulty-stratified null {_fmt(ns['mean'])} "
                    f"(one-sided p={_fmt(ns['p_value'], '.3g')}; exact only under Rasch, "
                    f"not a test of private signal)"
                )
            lines.append(
                f"  {_fmt(pw['fdr_significant_share'], '.1%')} of pairs FDR-significant "
                f"(base-rate, q < {pw['fdr_alpha']:g}); factor alignment r all items "
                f"{_fmt(d['factor_alignment']['all']['r'])}, contentious "
                f"({d['factor_alignment']['contentious']['n_items']} items) "
                f"{_fmt(d['factor_alignment']['contentious']['r'])}"
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
