"""One group's analyses: coverage, correlation sections, alignment, private signal, pairwise.

:func:`analyze_group` runs, on the records of one (benchmark, probe, confidence kind): the item
coverage of every model (models below ``min_coverage`` left out, reported); tetrachoric
correlations (polychoric over ordered levels for numeric confidence) on pairwise-complete
items, their eigen-decomposition and one-factor model, of confidence and of correctness;
pairwise calibration with both nulls, each pair on the items both models answered; on the
complete-case items (those every included model answered), the factor alignment on all and on
contentious items and the test of private signal; and per-model calibration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from metacog_metrics._conventions import child_sequence
from metacog_metrics._threads import Stages
from metacog_metrics.analyze.options import (
    CONTINUOUS_KINDS,
    MIN_ITEMS,
    MIN_MODELS,
    SOURCE_COLUMN,
    AnalysisOptions,
)
from metacog_metrics.analyze.results import GroupAnalysis, MatrixSection
from metacog_metrics.calibration import calibration_by_model
from metacog_metrics.factors import eigen_decomposition, factor_alignment, factor_analysis
from metacog_metrics.pairwise import pairwise_calibration
from metacog_metrics.polychoric import N_LEVELS, confidence_levels, ordinal_correlation
from metacog_metrics.private_signal import private_signal_test
from metacog_metrics.records import item_matrices
from metacog_metrics.tetrachoric import TetrachoricMatrixResult, tetrachoric_matrix

__all__ = ["analyze_group", "coverage_table"]


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
    counts = usable.groupby("model", sort=False, observed=True).size().reindex(models).fillna(0)
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


def analyze_group(
    df: pd.DataFrame,
    key: tuple[str, str, str],
    label: str,
    opts: AnalysisOptions,
    stages: Stages,
) -> GroupAnalysis:
    """Every analysis of one group's records (``key`` = benchmark, probe, confidence kind).

    ``label`` names the group in the summary; ``stages`` runs the per-model calibration on its
    own thread beside the other stages. Each stage draws from its own child of
    ``child_sequence(opts.seed, *key)``.
    """
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
        fallback = getattr(tet, "n_fallback_pairs", 0)
        if fallback:
            notes.append(
                f"{name}: {fallback} pair(s) of the polychoric matrix estimated without the "
                "zero-cell correction (it pushed their cumulative shares to 1, where psych is "
                "undefined; polycor's two-step rule)"
            )
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
        # complete-case items: the available-case design (each pair on its shared items)
        # rejected too often with answers missing (private_signal's docstring)
        sources = None
        if (
            SOURCE_COLUMN in df.columns
        ):  # a pooled group: items are exchanged within their benchmark
            source = dict(zip(df["item_id"].astype(str), df[SOURCE_COLUMN].astype(str)))
            sources = [source[i] for i in mat.item_ids]
        private = private_signal_test(
            mat.confidence,
            mat.correct,
            permutations=opts.joint_permutations,
            rng=strat_seed,
            groups=sources,
            workers=opts.workers,
            min_pair_items=MIN_ITEMS,
        )
    elif opts.joint_permutations > 0:
        notes.append(f"private-signal test: {mat.n_items} complete-case item(s); need at least "
                     f"{MIN_ITEMS}; not run")  # fmt: skip
    # The pairwise section last, on every core: run beside the stages above it was slower on
    # the smaller real runs (their Python-heavy stages and its thread pool contend for the GIL).
    # The per-model calibration is waited for after it: on the real runs it has long finished
    # by now, and where it has not (hundreds of models) the pairwise section does not wait for
    # it with a core idle (300 models x 12,000 items: 88 s wall instead of 90, idle machine).
    pairwise = pairwise_calibration(
        every.confidence,
        every.correct,
        models=every.models,
        reasoning=every.reasoning if any(r is not None for r in every.reasoning) else None,
        permutations=opts.permutations,
        joint_permutations=opts.joint_permutations,
        alternative=opts.alternative,
        fdr_alpha=opts.fdr_alpha,
        deltas=tuple(sorted({*opts.deltas, opts.small_gap})),
        rng=pair_seed,
        progress=opts.progress,
        workers=opts.workers,
        engine=opts.engine,
        min_pair_items=MIN_ITEMS,
        sequential=opts.sequential == "on",
        settle=opts.settle == "on",
    )
    calibration = calibration_run.result()
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
