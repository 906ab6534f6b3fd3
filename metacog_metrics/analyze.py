"""``metacog analyze``: every analysis of a record table, per (benchmark, probe, confidence kind).

:func:`analyze_records` runs, for each group of records: the item coverage of every model
(models below ``min_coverage`` left out, reported); tetrachoric correlations (polychoric over
ordered levels for numeric confidence) on pairwise-complete items, their eigen-decomposition and
one-factor model, of confidence and of correctness; pairwise calibration with both nulls, each
pair on the items both models answered; on the complete-case items (those every included model
answered), the factor alignment on all and on contentious items and the test of private signal;
and per-model calibration. Every section records its basis (models and items).
:func:`analyze_files` reads the files, runs it, and writes ``summary.json`` (strict JSON, schema
in ``docs/summary_schema.md``), ``tables/*.csv`` and, when the report module is installed,
``report.html``.
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
from metacog_metrics._threads import Stages
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
from metacog_metrics.polychoric import N_LEVELS, confidence_levels, ordinal_correlation
from metacog_metrics.private_signal import PrivateSignalTestResult, private_signal_test
from metacog_metrics.records import (
    ItemMatrices,
    RecordWarning,
    _single_valued,
    apply_model_traits,
    item_matrices,
    read_records,
    validate_records,
)
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
            the pair types and the private-signal test (0 skips them).
        seed: Seed; each group derives its own streams from it and its key, so adding a group
            does not change the others.
        alternative: Alternative of every permutation p-value.
        fdr_alpha: BH level for the share of significant pairs.
        binarize_at: With ``numeric_levels=0``, numeric confidence >= this counts as "yes" in
            the tetrachoric and factor sections (pairwise and calibration always use the real
            values).
        numeric_levels: Numeric confidence (verbal_numeric, sampled, logprob) enters the
            correlation and factor sections as at most this many ordered levels per model
            (its distinct values, or its own quantile bins) with polychoric correlations, so
            every model whose confidence varies stays in; 0 binarises it at ``binarize_at``
            (tetrachoric) instead.
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
            items (default 0.5: a model that answered fewer than half the items is treated as
            a partial run). The correlation matrices and the pairwise section use each pair's
            shared items, so a partial model costs only its own pairs; the complete-case
            analyses (factor scores, alignment, private-signal test) lose every item an
            included model lacks. Reported per model in the coverage table. None or 0 keeps
            every model.
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
    min_coverage: float | None = 0.5
    engine: str = "auto"
    progress: bool = False
    numeric_levels: int = N_LEVELS

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
            if not 0.0 <= float(self.min_coverage) <= 1.0:
                raise ValueError(f"min_coverage must be in [0, 1], got {self.min_coverage}")
            put("min_coverage", float(self.min_coverage) or None)
        levels = self.numeric_levels
        if isinstance(levels, bool) or int(levels) != levels or levels < 0 or levels == 1:
            raise ValueError(f"numeric_levels must be 0 or an integer >= 2, got {levels!r}")
        put("numeric_levels", int(levels))
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


def _pairable_tetrachoric(
    x: np.ndarray, models: Sequence[str], min_pair: int
) -> TetrachoricMatrixResult:
    """Pairwise-complete tetrachoric matrix of the models that share ``min_pair`` items with
    every other kept model (the one with most gaps left out first, each reported)."""
    tet = tetrachoric_matrix(x, names=list(models))
    pos = [list(models).index(n) for n in tet.names]
    bad = tet.n[np.ix_(range(len(pos)), range(len(pos)))] < min_pair
    np.fill_diagonal(bad, False)
    keep = list(range(len(pos)))
    reasons: dict[str, str] = {}
    while keep:
        sub = bad[np.ix_(keep, keep)]
        if not sub.any():
            break
        worst = int(np.argmax(sub.sum(axis=0) * 1e6 - tet.n[keep, keep]))
        j = keep.pop(worst)
        reasons[tet.names[j]] = (
            f"fewer than {min_pair} shared items with {int(sub[:, worst].sum())} other model(s)"
        )
    if not reasons:
        return tet
    cols = [pos[j] for j in keep]
    sub = tetrachoric_matrix(x[:, cols], names=[models[c] for c in cols])
    merged = {**tet.dropped_reasons, **reasons}
    return dataclasses.replace(
        sub,
        dropped=tuple(m for m in models if m in merged),
        dropped_reasons={m: merged[m] for m in models if m in merged},
    )


def _section(
    x: np.ndarray,
    models: Sequence[str],
    *,
    ordinal: bool = False,
    n_levels: int = N_LEVELS,
    min_pair: int = MIN_ITEMS,
) -> MatrixSection:
    """Correlations on pairwise-complete items, eigen-decomposition and one-factor model.

    ``x`` is items x models with NaN where a model lacks an item: 0/1 (tetrachoric) or, with
    ``ordinal``, numeric confidence (polychoric over at most ``n_levels`` levels per model).
    """
    # nanmean's sums without its warning for a model without items (NaN rate): no warnings
    # filter, which is process-wide and the calibration runs on another thread meanwhile
    seen = ~np.isnan(x)
    n_seen = seen.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n_seen > 0, np.where(seen, x, 0.0).sum(axis=0) / n_seen, np.nan)
    if ordinal:
        tet = ordinal_correlation(x, names=list(models), n_levels=n_levels, min_pair=min_pair)
    else:
        tet = _pairable_tetrachoric(x, models, min_pair)
    method = "polychoric" if ordinal else "tetrachoric"
    eigen = factor = None
    reason = None
    if len(tet.names) < 2:
        reason = f"only {len(tet.names)} model(s) with variance"
    elif np.isnan(tet.rho).any():
        reason = f"missing {method} correlations"
    else:
        eigen = eigen_decomposition(tet.rho, thresholds=tet.tau, names=tet.names)
        if len(tet.names) >= 3:
            factor = factor_analysis(tet.rho, names=tet.names)
        else:
            reason = "fewer than 3 models with variance: no factor model"
    return MatrixSection(tet, eigen, factor, rate, reason, method)


def coverage_table(df: pd.DataFrame, min_coverage: float | None) -> pd.DataFrame:
    """Per model of one group: usable items (a confidence and a grade), share, included.

    Args:
        df: The group's validated records (a model answers an item once).
        min_coverage: Share below which a model is left out of the cross-model analyses.

    Returns:
        Columns ``model``, ``n_items`` (usable), ``n_items_group`` (items of the group),
        ``share``, ``included``, ``reason`` (why not, else empty); models in order of
        appearance.
    """
    usable = df[df["confidence"].notna() & df["correct"].notna()]
    n_group = int(df["item_id"].nunique())
    models = list(pd.unique(df["model"]))
    counts = usable.groupby("model", sort=False).size().reindex(models).fillna(0)
    share = counts / max(n_group, 1)
    rows = []
    for m in models:
        n, sh = int(counts[m]), float(share[m])
        reason = ""
        if n == 0:
            reason = "no item with both a confidence and a grade"
        elif min_coverage and sh < min_coverage:
            reason = f"coverage {sh:.1%} below min_coverage {min_coverage:g}"
        rows.append({"model": str(m), "n_items": n, "n_items_group": n_group, "share": sh,
                     "included": not reason, "reason": reason})  # fmt: skip
    return pd.DataFrame(rows, columns=["model", "n_items", "n_items_group", "share", "included",
                                       "reason"])  # fmt: skip


def _analyze_group(
    df: pd.DataFrame,
    key: tuple[str, str, str],
    label: str,
    opts: AnalysisOptions,
    stages: Stages,
) -> GroupAnalysis:
    bench, probe, kind = key
    notes: list[str] = []
    root = child_sequence(opts.seed, *key)
    pair_seed, boot_seed, strat_seed = root.spawn(3)
    # The per-model calibration (on the records alone, mostly NumPy, which releases the GIL)
    # runs on its own thread beside the stages up to the private-signal test: each stage has
    # its own seed, so the results are those of running them in turn.
    calibration_run = stages.background(
        calibration_by_model,
        df,
        n_boot=opts.n_boot,
        rng=int(boot_seed.generate_state(1)[0]),
        workers=opts.workers,
    )
    coverage = coverage_table(df, opts.min_coverage)
    low = coverage[coverage["reason"].str.startswith("coverage")]
    excluded = dict(zip(low["model"], low["share"].astype(float)))
    if excluded:
        listed = ", ".join(f"{m} {c:.0%}" for m, c in excluded.items())
        notes.append(
            f"{len(excluded)} model(s) below min_coverage {opts.min_coverage:g} left out of the "
            f"cross-model analyses ({listed})"
        )
    keep = [m for m in pd.unique(df["model"]) if m not in excluded] if excluded else None
    every = item_matrices(df, benchmark=bench, probe=probe, confidence_kind=kind, models=keep,
                          missing="keep")  # fmt: skip
    mat = every.complete_cases()
    answered = ~np.isnan(every.confidence) & ~np.isnan(every.correct)
    rows = answered.any(axis=1)
    every = dataclasses.replace(
        every,
        item_ids=tuple(np.asarray(every.item_ids, dtype=object)[rows]),
        confidence=np.where(answered, every.confidence, np.nan)[rows],
        correct=np.where(answered, every.correct, np.nan)[rows],
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
            f"complete-case analyses (factor scores, alignment, private-signal test) use "
            f"{mat.n_items} of {mat.n_items_total} items, those every included model answered "
            f"({listed}); the correlation matrices and the pairwise section use each pair's "
            f"shared items"
        )
    continuous = kind in CONTINUOUS_KINDS
    ordinal = continuous and opts.numeric_levels > 0
    binarized_at = opts.binarize_at if continuous and not ordinal else None
    skipped = None
    if mat.n_models < MIN_MODELS:
        skipped = f"{mat.n_models} model(s) with usable items; need at least {MIN_MODELS}"
    elif every.n_items < MIN_ITEMS:
        skipped = f"{every.n_items} item(s) with usable answers; need at least {MIN_ITEMS}"
    if skipped:
        notes.append(f"cross-model analyses skipped: {skipped}")
        return GroupAnalysis(bench, probe, kind, label, mat, binarized_at, None, None, None,
                             None, calibration_run.result(), skipped, tuple(notes),
                             coverage_excluded=excluded, all_items=every,
                             coverage=coverage)  # fmt: skip

    if ordinal:
        conf_x = every.confidence
    elif binarized_at is not None:
        conf_x = every.binary_confidence(binarized_at)
    else:
        conf_x = every.confidence
    conf_section = _section(conf_x, every.models, ordinal=ordinal, n_levels=opts.numeric_levels)
    corr_section = _section(every.correct, every.models)
    for name, section in (("confidence", conf_section), ("correctness", corr_section)):
        tet = section.tetrachoric
        for model, why in tet.dropped_reasons.items():
            notes.append(f"{name}: model {model!r} excluded from the {section.method} matrix "
                         f"({why})")  # fmt: skip
        if tet.smoothed:
            notes.append(
                f"{name}: {section.method} matrix not positive definite (min eigenvalue "
                f"{tet.min_eigenvalue:.3g}); smoothed as psych::cor.smooth"
            )
        if tet.smoothing_note:
            notes.append(f"{name}: {tet.smoothing_note}")
        if section.reason:
            notes.append(f"{name}: {section.reason}")
        if section.factor is not None and section.factor.heywood:
            notes.append(f"{name}: Heywood case in the factor model (a uniqueness at 0.005)")
    if ordinal:
        levels = np.column_stack([
            confidence_levels(every.confidence[:, j], n_levels=opts.numeric_levels)
            for j in range(every.n_models)
        ])  # fmt: skip
        pos = {item: i for i, item in enumerate(every.item_ids)}
        conf_cc = levels[[pos[i] for i in mat.item_ids]]
    else:
        conf_cc = mat.binary_confidence(binarized_at) if binarized_at is not None else (
            mat.confidence)  # fmt: skip
    alignment = factor_alignment(
        conf_cc, mat.correct, bounds=opts.contentious_bounds, ordinal=ordinal,
        min_items=MIN_ITEMS,
    )  # fmt: skip
    private = None
    pairwise_notes_at = len(notes)  # the pairwise note, known last, goes before these
    if continuous:
        notes.append("private-signal test: binary confidence only; not run")
    elif opts.joint_permutations > 0 and mat.n_items >= MIN_ITEMS:
        sources = None
        if _SOURCE in df.columns:  # a pooled group: items are exchanged within their benchmark
            source = dict(zip(df["item_id"].astype(str), df[_SOURCE].astype(str)))
            sources = [source[i] for i in mat.item_ids]
        private = private_signal_test(
            mat.confidence,
            mat.correct,
            permutations=opts.joint_permutations,
            rng=strat_seed,
            groups=sources,
            workers=opts.workers,
        )
    elif opts.joint_permutations > 0:
        notes.append(f"private-signal test: {mat.n_items} complete-case item(s); need at least "
                     f"{MIN_ITEMS}; not run")  # fmt: skip
    calibration = calibration_run.result()
    # The pairwise section last, on every core: run beside the stages above it was slower on
    # the smaller real runs (their Python-heavy stages and its thread pool contend for the GIL)
    pairwise = pairwise_calibration(
        every.confidence,
        every.correct,
        models=every.models,
        reasoning=every.reasoning if any(r is not None for r in every.reasoning) else None,
        permutations=opts.permutations,
        joint_permutations=opts.joint_permutations,
        alternative=opts.alternative,
        fdr_alpha=opts.fdr_alpha,
        deltas=opts.deltas,
        rng=pair_seed,
        progress=opts.progress,
        workers=opts.workers,
        engine=opts.engine,
        min_pair_items=MIN_ITEMS,
    )
    short = int(np.sum(pairwise.n_items_pair < MIN_ITEMS))
    if short:
        notes.insert(
            pairwise_notes_at,
            f"pairwise: {short} pair(s) share fewer than {MIN_ITEMS} items; left out",
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
        private_signal=private,
        coverage_excluded=excluded,
        all_items=every,
        coverage=coverage,
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


def _basis(
    models: Sequence[str], n_items: int, rule: str, pair_items: np.ndarray | None = None
) -> dict[str, Any]:
    """What a figure rests on: its models and items (and, pairwise, each pair's items)."""
    out: dict[str, Any] = {
        "models": list(models),
        "n_models": len(models),
        "items": rule,
        "n_items": int(n_items),
    }
    if pair_items is not None:
        v = np.asarray(pair_items, dtype=float)
        out["n_items_per_pair"] = {
            "min": int(v.min()) if v.size else None,
            "median": float(np.median(v)) if v.size else None,
            "max": int(v.max()) if v.size else None,
        }
    return out


def _union_items(every: ItemMatrices | None, names: Sequence[str]) -> int:
    """Items at least one of ``names`` answered."""
    if every is None or not names:
        return 0
    cols = [every.models.index(n) for n in names if n in every.models]
    return int((~np.isnan(every.confidence[:, cols])).any(axis=1).sum())


def _section_summary(
    section: MatrixSection | None, models: Sequence[str], every: ItemMatrices | None = None
) -> dict[str, Any]:
    if section is None:
        return {}
    tet = section.tetrachoric
    iu = np.triu_indices(len(tet.names), k=1)
    corr: dict[str, Any] = {
        "rho": tet.reindex(models),
        "tau": tet.reindex_tau(models),
        "models": list(tet.names),
        "dropped": dict(tet.dropped_reasons),
        "smoothed": tet.smoothed,
        "smoothing_note": tet.smoothing_note,
        "min_eigenvalue": tet.min_eigenvalue,
        "n_corrected_pairs": tet.n_corrected_pairs,
        "n_items_pair": np.asarray(tet.n)[iu].tolist(),
        "threshold_rule": getattr(tet, "threshold_rule", "") or _PSYCH_TAU,
    }
    if section.method == "polychoric":
        corr["n_levels"] = dict(zip(tet.names, np.asarray(tet.n_levels).tolist()))
        corr["median_confidence"] = tet.median
    out: dict[str, Any] = {
        "rate": dict(zip(models, section.rate.tolist())),
        "method": section.method,
        section.method: corr,
        "basis": _basis(
            tet.names, _union_items(every, tet.names), "pairwise-complete", np.asarray(tet.n)[iu]
        ),
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


#: psych's threshold convention, reported beside every threshold of 0/1 data.
_PSYCH_TAU = "tau = Phi^-1(P(x = 0)) (psych): a high threshold is a low yes-rate or accuracy"


def _alignment_summary(
    a: FactorAlignmentResult | None, mat: ItemMatrices | None = None
) -> dict[str, Any]:
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

    out = {"all": part(a.all), "contentious": part(a.contentious), "bounds": a.bounds,
           "method": a.method}  # fmt: skip
    if mat is not None:
        out["basis"] = _basis(mat.models, mat.n_items, "complete-case")
    return out


def _private_signal_summary(ps: PrivateSignalTestResult, mat: ItemMatrices) -> dict[str, Any]:
    return {**ps.summary(), "observed": ps.observed,
            "basis": _basis(mat.models, mat.n_items, "complete-case")}  # fmt: skip


def _pairwise_summary(
    pw: PairwiseResult | None,
    private: PrivateSignalTestResult | None = None,
    mat: ItemMatrices | None = None,
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
    if private is not None and mat is not None:
        nulls["private_signal"] = _private_signal_summary(private, mat)
    valid = np.isfinite(pw.tau)
    pair_items = pw.n_items_pair if pw.n_items_pair is not None else np.full(
        pw.n_pairs, pw.n_items)  # fmt: skip
    return {
        "basis": {
            **_basis(pw.models, pw.n_items, "pairwise-complete", pair_items[valid]),
            "n_pairs": int(valid.sum()),
        },
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
    every = g.all_items
    per_model = {
        name: {k: getattr(m, k) for k in _PER_MODEL_KEYS}
        for name, m in g.calibration.per_model.items()
    }
    conf = _section_summary(g.confidence, models, every)
    if conf or g.binarized_at is not None:
        conf["binarized_at"] = g.binarized_at
    coverage = (
        {}
        if g.coverage is None
        else {
            r.model: {"n_items": int(r.n_items), "share": float(r.share),
                      "included": bool(r.included), "reason": r.reason or None}
            for r in g.coverage.itertuples(index=False)
        }
    )  # fmt: skip
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
        "n_items_union": every.n_items if every is not None else mat.n_items,
        "n_items_total": mat.n_items_total,
        "n_items_dropped": mat.n_items_dropped,
        "dropped_by_model": mat.dropped_by_model,
        "models_dropped": mat.models_dropped,
        "coverage_excluded": dict(g.coverage_excluded),
        "coverage": coverage,
        "unparseable_by_model": mat.unparseable_by_model,
        "confidence": conf,
        "correctness": _section_summary(g.correctness, models, every),
        "factor_alignment": _alignment_summary(g.alignment, mat),
        "pairwise": _pairwise_summary(g.pairwise, g.private_signal, mat),
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
    if g.coverage is not None:
        out[prefix + "coverage"] = g.coverage.assign(**ident)
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
        out[prefix + f"{sec.method}_{name}"] = pd.DataFrame(
            tet.reindex(models), index=pd.Index(models, name="model"), columns=models
        ).reset_index()
    out[prefix + "eigenvalues"] = pd.DataFrame(eig_rows)
    out[prefix + "loadings"] = pd.DataFrame(load)
    a = g.alignment
    scores: dict[str, Any] = {
        "item_id": list(mat.item_ids),
        "confidence_score": a.all.confidence_scores,
        "correctness_score": a.all.correctness_scores,
        "contentious": a.contentious_mask,
    }
    if g.confidence.method == "polychoric":
        scores["mean_confidence"] = mat.confidence.mean(axis=1)
    else:
        conf_bin = mat.binary_confidence(g.binarized_at) if g.binarized_at is not None else (
            mat.confidence)  # fmt: skip
        scores["yes_count"] = conf_bin.sum(axis=1).astype(int)
    scores["correct_count"] = mat.correct.sum(axis=1).astype(int)
    out[prefix + "factor_scores"] = pd.DataFrame(scores)
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
    results: dict[str, dict[str, Any]] = {}
    tables: dict[str, pd.DataFrame] = {}
    for key in keys:
        bench = key[0]
        if key in frames:
            rows = frames[key]
        else:
            where = positions[key]
            rows = records if where is None else records.iloc[np.sort(where)]
        with Stages() as stages:  # an error or interrupt empties the queues of its threads
            g = _analyze_group(rows, key, labels[key], opts, stages)
        groups[key] = g
        results.setdefault(bench, {})[labels[key]] = _group_summary(g)
        tables.update(_group_tables(g))
        notes += [f"{bench}/{labels[key]}: {w}" for w in g.warnings]
    per_model = [t for name, t in tables.items() if name.endswith("__per_model")]
    if per_model:
        tables["per_model"] = pd.concat(per_model, ignore_index=True)
    coverage = [t for name, t in tables.items() if name.endswith("__coverage")]
    if coverage:
        tables["coverage"] = pd.concat(coverage, ignore_index=True)
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
            "missing": "pairwise-complete correlations and pairs; complete-case factor "
            "scores, alignment and private-signal test",
            "n_boot": opts.n_boot,
            "deltas": list(opts.deltas),
            "min_models": MIN_MODELS,
            "min_items": MIN_ITEMS,
            "pool": opts.pool,
            "min_coverage": opts.min_coverage,
            "numeric_levels": opts.numeric_levels,
            "min_pair_items": MIN_ITEMS,
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
#: Column of a pooled group's records that keeps each item's own benchmark.
_SOURCE = "_source_benchmark"


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
        pooled[_SOURCE] = pooled["benchmark"].astype(str)
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
            nb, nc = pw["nulls"]["base_rate"], pw["nulls"]["calibration_preserving"]
            per = pw["basis"].get("n_items_per_pair") or {}
            lines.append(
                f"  pairwise: mean tau-b {_fmt(pw['mean_tau'])} over {pw['n_pairs_valid']} "
                f"pairs ({_fmt(per.get('min'), 'd')}-{_fmt(per.get('max'), 'd')} items a pair, "
                f"median {_fmt(per.get('median'), '.0f')}); base-rate null {_fmt(nb['mean'])} "
                f"(p={_fmt(nb['p_value'], '.3g')}), calibration-preserving null "
                f"{_fmt(nc['mean'])} (p={_fmt(nc['p_value'], '.3g')})"
            )
            if "private_signal" in pw["nulls"]:
                ns = pw["nulls"]["private_signal"]
                lines.append(
                    f"  private-signal test ({ns['basis']['n_models']} models x "
                    f"{ns['basis']['n_items']} complete-case items): null mean "
                    f"{_fmt(ns['mean'])}, one-sided p={_fmt(ns['p_value'], '.3g')}"
                )
            al = d["factor_alignment"]
            lines.append(
                f"  {_fmt(pw['fdr_significant_share'], '.1%')} of pairs FDR-significant "
                f"(base-rate, q < {pw['fdr_alpha']:g}); factor alignment "
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
