"""``summary.json`` and the tables of ``metacog analyze``, made from the result objects.

:func:`group_summary` and :func:`group_tables` lay out one :class:`GroupAnalysis` as plain JSON
types and DataFrames; :func:`build_summary` assembles the run's summary (schema in
``docs/summary_schema.md``) and its tables.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics.analyze.options import MIN_ITEMS, MIN_MODELS, AnalysisOptions
from metacog_metrics.analyze.results import GroupAnalysis, MatrixSection
from metacog_metrics.factors import FactorAlignmentResult
from metacog_metrics.pairwise import NULLS, PairwiseResult
from metacog_metrics.private_signal import PrivateSignalTestResult
from metacog_metrics.records import ItemMatrices

__all__ = ["SCHEMA_VERSION", "build_summary", "group_summary", "group_tables", "safe_name"]

#: Version of the summary.json layout (docs/summary_schema.md).
SCHEMA_VERSION = "1.0"


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
        "n_corrected_cells": tet.n_corrected_cells,
        "n_items_pair": np.asarray(tet.n)[iu].tolist(),
        "threshold_rule": getattr(tet, "threshold_rule", "") or _PSYCH_TAU,
    }
    if section.method == "polychoric":
        corr["n_levels"] = dict(zip(tet.names, np.asarray(tet.n_levels).tolist()))
        corr["median_confidence"] = tet.median
        corr["thresholds"] = "global" if tet.global_thresholds else "per pair"
        corr["n_fallback_pairs"] = tet.n_fallback_pairs
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


def _private_signal_summary(ps: PrivateSignalTestResult, models: Sequence[str]) -> dict[str, Any]:
    basis = {**_basis(models, ps.n_items, "complete-case"), "n_pairs": ps.n_pairs}
    return {**ps.summary(), "observed": ps.observed, "basis": basis}


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
            "n_settled": pw.per_pair[null].n_settled if null in pw.per_pair else 0,
            "fdr_significant_share": pw.fdr_share(null) if pw.permutations else None,
            "fdr_significant_share_by_direction": (
                pw.fdr_share_by_direction(null) if pw.permutations else None
            ),
        }
        for null, res in pw.nulls.items()
    }
    if private is not None and mat is not None:
        nulls["private_signal"] = _private_signal_summary(private, mat.models)
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
        "sequential": pw.sequential,
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


def group_summary(g: GroupAnalysis) -> dict[str, Any]:
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


def safe_name(text: str) -> str:
    """``text`` as a file-name part: runs of other characters than letters, digits, ._- as -."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def group_tables(g: GroupAnalysis) -> dict[str, pd.DataFrame]:
    prefix = f"{safe_name(g.benchmark)}__{safe_name(g.label)}__"
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


def _package_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("metacog-eval")
    except Exception:  # not installed (running from a checkout)
        return None


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


def build_summary(
    records: pd.DataFrame,
    groups: Mapping[tuple[str, str, str], GroupAnalysis],
    opts: AnalysisOptions,
    *,
    inputs: Sequence[str],
    notes: Sequence[str],
) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """The run's summary (before its text sections) and tables, groups in their order.

    Args:
        records: The validated records analysed.
        groups: The analysed groups.
        opts: The run's options (recorded under ``parameters``).
        inputs: The record files read.
        notes: The run's warnings, each group's prefixed with ``<benchmark>/<label>``.

    Returns:
        ``(summary, tables)``: the summary in the key order of ``docs/summary_schema.md`` (not
        yet converted by ``to_jsonable``) and ``{name: DataFrame}``, the concatenated
        ``per_model`` and ``coverage`` tables after the groups' own.
    """
    results: dict[str, dict[str, Any]] = {}
    tables: dict[str, pd.DataFrame] = {}
    for (bench, _, _), g in groups.items():
        results.setdefault(bench, {})[g.label] = group_summary(g)
        tables.update(group_tables(g))
    per_model = [t for name, t in tables.items() if name.endswith("__per_model")]
    if per_model:
        tables["per_model"] = pd.concat(per_model, ignore_index=True)
    coverage = [t for name, t in tables.items() if name.endswith("__coverage")]
    if coverage:
        tables["coverage"] = pd.concat(coverage, ignore_index=True)
    summary = {
        "schema_version": SCHEMA_VERSION,
        "generated_by": {"package": "metacog-eval", "version": _package_version()},
        "inputs": list(inputs),
        "n_records": len(records),
        "models": list(pd.unique(records["model"])),
        "parameters": {
            "permutations": opts.permutations,
            "sequential": opts.sequential,
            "settle": opts.settle,
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
            "small_gap": opts.small_gap,
            "probe": opts.probe,
        },
        "engine": _engines_used(groups, opts.engine),
        "warnings": list(notes),
        "results": results,
    }
    return summary, tables
