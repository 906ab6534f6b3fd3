"""The findings of an analysis: computed once, from the typed results, for every reader.

:func:`analysis_findings` turns the groups of an analysis (:class:`GroupAnalysis`) into
:class:`Findings`: the headline group's findings as a short list (the pooled group first when
there is one), one line for each other group, and one block of caveats. ``metacog analyze`` and
``metacog demo`` print them, ``summary.json`` keeps them under ``findings``, and the report shows
them; nobody words a finding twice.

Each group's list, in order: shared difficulty (first factor and the loadings-vs-thresholds
shape), pairwise calibration against both nulls, the small-gap control (pairs of nearly equal
accuracy: if confidence only reads shared difficulty through each model's threshold, their mean
tau should sit in the base-rate-matched null band, the paper's pattern tau -> 0 as delta -> 0),
the test of private signal with the shift it could detect on its basis, the factor alignment,
and the models whose confidence runs against their correctness (AUROC at most
:data:`INVERTED_AUROC`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from metacog_metrics.analyze.options import MIN_ITEMS, POOLED, AnalysisOptions
from metacog_metrics.analyze.results import (
    Finding,
    Findings,
    GroupAnalysis,
    GroupFindings,
    MatrixSection,
    SmallGapControl,
)
from metacog_metrics.pairwise.nulls import get_null, headline_null
from metacog_metrics.private_signal import SIZE_SHOWN, PrivateSignalTestResult
from metacog_metrics.records import UNSPECIFIED_PROBE

__all__ = [
    "INVERTED_AUROC",
    "PARABOLA_MAX_P",
    "PARABOLA_MIN_R2",
    "PARABOLA_MIN_THRESHOLDS",
    "UNSPECIFIED_PROBE",
    "Finding",
    "Findings",
    "GroupFindings",
    "SmallGapControl",
    "analysis_findings",
    "group_findings",
    "small_gap_control",
]

#: The loadings-vs-thresholds shape is named only with this many distinct thresholds ...
PARABOLA_MIN_THRESHOLDS = 6
#: ... a quadratic R^2 at least this ...
PARABOLA_MIN_R2 = 0.5
#: ... and its F-test p-value below this (besides c2 < 0 and the vertex inside the range).
PARABOLA_MAX_P = 0.05
#: A model whose own AUROC is at most this is flagged: its confidence runs against its
#: correctness (higher on the items it gets wrong).
INVERTED_AUROC = 0.4


# ---------------------------------------------------------------------------------------------
# Numbers in words


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def _fmt(x: Any, digits: int = 3) -> str:
    return "n/a" if _missing(x) else f"{x:.{digits}f}"


def _p(x: Any) -> str:
    if _missing(x):
        return "p n/a"
    return f"p = {x:.3g}" if x >= 0.001 else "p < 0.001"


def _range(values: Iterable[Any], digits: int = 2, pct: bool = False) -> str:
    vals = [float(v) for v in values if not _missing(v)]
    if not vals:
        return "n/a"
    scale, suffix = (100.0, "%") if pct else (1.0, "")
    lo, hi = min(vals) * scale, max(vals) * scale
    d = 0 if pct else digits
    if len(vals) == 1 or abs(hi - lo) < 10 ** (-d):
        return f"{lo:.{d}f}{suffix}"
    return f"{lo:.{d}f}{suffix} to {hi:.{d}f}{suffix}"


def _versus(observed: float, mean: float, p: float, alpha: float) -> str:
    if _missing(p) or _missing(mean):
        return "not tested against"
    if p >= alpha:
        return "not distinguishable from"
    return "above" if observed > mean else "below"


def _pairwise_basis(models: int, items: int, per_pair: np.ndarray, n_pairs: int | None) -> str:
    """How many models and items a pairwise figure rests on."""
    pairs = f", {n_pairs} pairs" if n_pairs is not None else ""
    if per_pair.size == 0 or per_pair.min() == per_pair.max():
        return f"{models} models x {items} items{pairs}"
    return (
        f"{models} models{pairs}, each pair on the items both answered: {int(per_pair.min())} "
        f"to {int(per_pair.max())} (median {float(np.median(per_pair)):.0f}) of {items} items"
    )


def _section_basis(g: GroupAnalysis, section: MatrixSection) -> str:
    tet = section.tetrachoric
    names = list(tet.names)
    iu = np.triu_indices(len(names), k=1)
    every = g.all_items
    items = g.matrices.n_items
    if every is not None and names:
        cols = [every.models.index(n) for n in names if n in every.models]
        items = int((~np.isnan(every.confidence[:, cols])).any(axis=1).sum())
    return _pairwise_basis(len(names), items, np.asarray(tet.n)[iu], None)


def _pair_basis(g: GroupAnalysis) -> str:
    pw = g.pairwise
    valid = np.isfinite(pw.tau)
    per = pw.n_items_pair if pw.n_items_pair is not None else np.full(pw.n_pairs, pw.n_items)
    return _pairwise_basis(len(pw.models), pw.n_items, np.asarray(per)[valid], int(valid.sum()))


def _complete_basis(g: GroupAnalysis) -> str:
    return f"{g.matrices.n_models} models x {g.matrices.n_items} complete-case items"


def _parabola(section: MatrixSection) -> str:
    """What the loadings-vs-thresholds quadratic shows, named only when the fit supports it.

    "An inverted parabola" needs at least :data:`PARABOLA_MIN_THRESHOLDS` distinct thresholds,
    ``c2 < 0``, the vertex inside the thresholds' range and a fit worth naming (R^2 at least
    :data:`PARABOLA_MIN_R2`, F-test p below :data:`PARABOLA_MAX_P`); otherwise it says what was
    seen. Thresholds follow psych (``tau = Phi^-1(P(x = 0))``): on a yes-rate axis the curve is
    mirrored.
    """
    taus = [float(t) for t in section.tetrachoric.tau if math.isfinite(float(t))]
    distinct = len({round(t, 9) for t in taus})
    q = None if section.eigen is None else section.eigen.quadratic
    if q is None or _missing(q.r2) or distinct <= 3:
        return f"no shape named ({distinct} distinct thresholds: a quadratic fits any 3 points)"
    coef, r2, p, vertex = q.coef, q.r2, q.p_value, q.vertex
    vertex = None if _missing(vertex) else vertex
    fit = f"quadratic R^2 {r2:.2f}, c2 {coef[2]:.3g}, vertex tau {_fmt(vertex, 2)}"
    if distinct < PARABOLA_MIN_THRESHOLDS:
        return f"no shape named, only {distinct} distinct thresholds ({fit})"
    if coef[2] >= 0:
        return f"not an inverted parabola: the curvature is upward or flat ({fit})"
    if vertex is None or not min(taus) <= vertex <= max(taus):
        return (
            f"loadings fall off towards one end only: the vertex is outside the thresholds ({fit})"
        )
    if r2 < PARABOLA_MIN_R2 or _missing(p) or not p < PARABOLA_MAX_P:
        return f"no clear shape: the quadratic explains little ({fit}, F-test {_p(p)})"
    return f"an inverted parabola, mid-threshold models load most ({fit}, F-test {_p(p)})"


# ---------------------------------------------------------------------------------------------
# Computing them


def small_gap_control(g: GroupAnalysis, delta: float, alpha: float) -> SmallGapControl | None:
    """The small-gap control of one group, read from its delta curve at ``delta``.

    Returns:
        None when the group has no pairwise section or ``delta`` is not on its curve.
    """
    pw = g.pairwise
    if pw is None:
        return None
    curve = pw.delta_curve
    hit = np.flatnonzero(np.isclose(curve.delta, delta, rtol=0, atol=1e-12))
    if hit.size == 0:
        return None
    k = int(hit[0])
    null = headline_null()
    tested = null in curve.null_mean
    mean = float(curve.mean_tau[k])
    low = float(curve.null_low[null][k]) if tested else math.nan
    high = float(curve.null_high[null][k]) if tested else math.nan
    p = float(curve.p_value[null][k]) if tested else math.nan
    if int(curve.n_pairs[k]) < curve.min_pairs or not math.isfinite(mean):
        verdict = "too_few_pairs"
    elif not tested or not math.isfinite(p):
        verdict = "not_tested"
    elif p >= alpha:
        verdict = "within_null"
    elif mean < low:
        verdict = "below_null"
    elif mean < pw.mean_tau:
        verdict = "shrinks"
    else:
        verdict = "does_not_shrink"
    return SmallGapControl(
        delta=float(curve.delta[k]),
        n_pairs=int(curve.n_pairs[k]),
        mean_tau=mean,
        null=null,
        null_mean=float(curve.null_mean[null][k]) if tested else math.nan,
        null_low=low,
        null_high=high,
        p_value=p,
        mean_tau_all=float(pw.mean_tau),
        n_pairs_all=int(pw.n_pairs_valid),
        min_pairs=int(curve.min_pairs),
        verdict=verdict,
        alpha=alpha,
    )


def _private_signal_text(ps: PrivateSignalTestResult, group: str, alpha: float) -> str:
    verdict = "evidence of" if ps.p_value < alpha else "no evidence of"
    within = " within each benchmark" if ps.n_groups > 1 else ""
    power = (
        f"; on this basis it detects a shift of {_fmt(ps.detectable_shift)} in the mean tau "
        "with 80% power"
        if not _missing(ps.detectable_shift)
        else ""
    )
    return (
        f"Test of private signal ({group}; {ps.basis_text()}; confidence rows permuted among "
        f"items of nearly the same correctness pattern{within}): observed {_fmt(ps.observed)} "
        f"against its null {_fmt(ps.null_mean)}, one-sided {_p(ps.p_value)}: {verdict} private "
        f"signal beyond shared difficulty at {alpha:g}{power}."
    )


def group_findings(
    g: GroupAnalysis, opts: AnalysisOptions, alpha: float = 0.05
) -> GroupFindings | None:
    """The findings of one analysed group (None for a skipped one)."""
    if g.skipped or g.confidence is None or g.pairwise is None:
        return None
    where = f"{g.benchmark}/{g.label}"
    out: list[Finding] = []

    conf = g.confidence
    rule = (
        "for numeric confidence tau = Phi^-1 of the model's share of confidence below the "
        "pooled median, ties half, so a high threshold is a model less confident than the "
        "typical one"
        if conf.method == "polychoric"
        else "psych's tau = Phi^-1(P(confidence = 0)), so a high threshold is a low yes-rate"
    )
    share = None if conf.eigen is None else conf.eigen.first_share
    out.append(Finding("shared_difficulty", where, (
        f"Shared difficulty ({where}; {_section_basis(g, conf)}): the first factor carries "
        f"{_range([share], pct=True)} of the {conf.method} confidence variance; PC1 loadings "
        f"against the models' thresholds ({rule}): {_parabola(conf)}."
    )))  # fmt: skip

    pw = g.pairwise
    texts = []
    for name, res in pw.nulls.items():
        spec = get_null(name)
        texts.append(
            f"{_versus(pw.mean_tau, res.mean, res.p_value, alpha)} the {spec.label} "
            f"({_fmt(res.mean)}, {_p(res.p_value)})"
        )
    versus = " and ".join(texts) if texts else "not tested (no joint draws)"
    out.append(Finding("pairwise", where, (
        f"Pairwise calibration ({where}; {_pair_basis(g)}): mean Kendall tau-b of dconf vs "
        f"dperf over model pairs {_fmt(pw.mean_tau)}, {versus}."
    )))  # fmt: skip

    gap = small_gap_control(g, opts.small_gap, alpha)
    if gap is not None:
        out.append(Finding("small_gap", where, gap.sentence(where)))

    ps = g.private_signal
    if ps is not None:
        out.append(Finding("private_signal", where, _private_signal_text(ps, where, alpha)))

    al = g.alignment
    if al is not None:
        rule = (
            "pass rate within the bounds"
            if "levels" in str(al.method)
            else "yes-rate and pass-rate within the bounds"
        )
        out.append(Finding("alignment", where, (
            f"Confidence factor vs capability factor over items ({where}; {_complete_basis(g)}"
            f"): Pearson r {_range([al.all.r])} on all items, {_range([al.contentious.r])} on "
            f"the {al.contentious.n_items} contentious items ({rule})."
        )))  # fmt: skip

    inverted = {
        m: float(c.auroc_internal)
        for m, c in g.calibration.per_model.items()
        if not _missing(c.auroc_internal) and c.auroc_internal <= INVERTED_AUROC
    }
    if inverted:
        listed = ", ".join(f"{m} {a:.3f}" for m, a in sorted(inverted.items(), key=lambda t: t[1]))
        out.append(Finding("inverted_confidence", where, (
            f"Inverted confidence ({where}): {len(inverted)} model(s) with an AUROC of their own "
            f"confidence for their correctness at or below {INVERTED_AUROC:g} ({listed}): their "
            "confidence is higher on the items they get wrong; read their calibration, and "
            "their place in the factor and pairwise sections, with that in mind."
        )))  # fmt: skip

    brief = (
        f"{where}: mean tau-b {_fmt(pw.mean_tau)} ({'; '.join(texts) or 'not tested'})"
        + (
            ""
            if gap is None
            else f"; within {gap.delta:g} accuracy: {gap.n_pairs} pairs, "
            f"{_fmt(gap.mean_tau)} ({gap.verdict.replace('_', ' ')})"
        )
        + ("" if ps is None else f"; private signal one-sided {_p(ps.p_value)}")
        + ("" if not inverted else f"; {len(inverted)} model(s) with inverted confidence")
    )
    return GroupFindings(where, tuple(out), gap, inverted, brief)


def _caveats(groups: Sequence[GroupAnalysis], opts: AnalysisOptions) -> list[str]:
    out: list[str] = []
    unspecified = [f"{g.benchmark}/{g.label}" for g in groups if g.probe == UNSPECIFIED_PROBE]
    if unspecified:
        out.append(
            "The records do not say which probe produced the confidence of "
            f"{', '.join(unspecified)} (no probe column): it is labelled 'unspecified', and "
            "nothing here assumes it was asked before the answer (prospective) rather than "
            "after it (retrospective); declare it with --probe or a probe column."
        )
    ran = [g for g in groups if g.private_signal is not None]
    if ran:
        out.append(f"The test of private signal: {SIZE_SHOWN}.")
        thin = [
            f"{g.benchmark}/{g.label} ({g.private_signal.thin})"
            for g in ran
            if g.private_signal.thin
        ]
        if thin:
            out.append(
                "Its basis is too thin to read 'no evidence' as absence in " + "; ".join(thin) + "."
            )
    few = [
        f"{g.benchmark}/{g.label} ({g.matrices.n_items} complete-case items)"
        for g in groups
        if not g.skipped and g.private_signal is None and g.pairwise is not None
        and not g.pairwise.continuous and g.matrices.n_items < MIN_ITEMS
        and opts.joint_permutations > 0
    ]  # fmt: skip
    if few:
        out.append(
            "The test of private signal runs on the items every included model answered, and "
            f"too few remain to run it in {', '.join(few)}: its basis is too thin, so nothing "
            "is said about private signal there."
        )
    numeric = [
        f"{g.benchmark}/{g.label}"
        for g in groups
        if not g.skipped and g.private_signal is None and g.pairwise is not None
        and g.pairwise.continuous
    ]  # fmt: skip
    if numeric:
        out.append(
            f"The test of private signal needs binary confidence; it did not run on "
            f"{', '.join(numeric)} (numeric confidence)."
        )
    left_out = [
        f"{g.benchmark}/{g.label}: {len(g.coverage_excluded)}"
        for g in groups
        if g.coverage_excluded
    ]
    if left_out:
        out.append(
            f"Models with usable items for less than {opts.min_coverage:g} of a group's items "
            f"are left out of its cross-model analyses as partial runs ({'; '.join(left_out)})."
        )
    return out


def analysis_findings(
    groups: Mapping[tuple[str, str, str], GroupAnalysis],
    opts: AnalysisOptions,
    *,
    alpha: float = 0.05,
) -> Findings:
    """The findings of every group: the pooled group first, one caveat block.

    Args:
        groups: The analysed groups, in the analysis' order.
        opts: The run's options (the small-gap delta, the coverage rule).
        alpha: Level at which a null is called "distinguishable" in the wording.

    Returns:
        The :class:`Findings`.
    """
    ordered = sorted(groups.values(), key=lambda g: g.benchmark != POOLED)  # stable
    per = [(g, group_findings(g, opts, alpha)) for g in ordered]
    done = [f for _, f in per if f is not None]
    skipped = {f"{g.benchmark}/{g.label}": g.skipped for g, f in per if f is None and g.skipped}
    return Findings(
        headline=done[0] if done else None,
        others=tuple(done[1:]),
        caveats=tuple(_caveats(ordered, opts)),
        skipped=skipped,
    )
