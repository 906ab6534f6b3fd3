"""The headline findings: the few sentences ``metacog analyze`` and ``metacog demo`` print and the
report opens with, read from a ``summary.json`` dict (the report's one reading of the summary
until the findings move)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from metacog_metrics.report._format import fmt, p_text

__all__ = [
    "PARABOLA_MAX_P",
    "PARABOLA_MIN_R2",
    "PARABOLA_MIN_THRESHOLDS",
    "headline_findings",
]


def _groups(
    summary: Mapping[str, Any], benchmarks: Sequence[str] | None = None
) -> Iterable[tuple[str, str, Mapping[str, Any]]]:
    for bench, probes in summary.get("results", {}).items():
        if benchmarks is not None and bench not in benchmarks:
            continue
        for label, group in probes.items():
            if group.get("status") == "ok":
                yield bench, label, group


def _range(values: Sequence[float], digits: int = 2, pct: bool = False) -> str:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return "n/a"
    scale, suffix = (100.0, "%") if pct else (1.0, "")
    lo, hi = min(vals) * scale, max(vals) * scale
    d = 0 if pct else digits
    if len(vals) == 1 or abs(hi - lo) < 10 ** (-d):
        return f"{lo:.{d}f}{suffix}"
    return f"{lo:.{d}f}{suffix} to {hi:.{d}f}{suffix}"


def _versus(observed: float, null: Mapping[str, Any], alpha: float) -> str:
    p, mean = null.get("p_value"), null.get("mean")
    if p is None or mean is None or not math.isfinite(p):
        return "not tested against"
    if p >= alpha:
        return "not distinguishable from"
    return "above" if observed > mean else "below"


#: The loadings-vs-thresholds shape is named only with this many distinct thresholds ...
PARABOLA_MIN_THRESHOLDS = 6
#: ... a quadratic R^2 at least this ...
PARABOLA_MIN_R2 = 0.5
#: ... and its F-test p-value below this (besides c2 < 0 and the vertex inside the range).
PARABOLA_MAX_P = 0.05


def _basis_text(basis: Mapping[str, Any] | None) -> str:
    """How many models and items a figure rests on, from its ``basis`` in summary.json."""
    if not basis:
        return "basis n/a"
    n_models, n_items = basis.get("n_models"), basis.get("n_items")
    if basis.get("items") == "pairwise-complete":
        per = basis.get("n_items_per_pair") or {}
        lo, hi = per.get("min"), per.get("max")
        pairs = f", {basis['n_pairs']} pairs" if basis.get("n_pairs") is not None else ""
        if lo is None or lo == hi:
            return f"{n_models} models x {n_items} items{pairs}"
        return (
            f"{n_models} models{pairs}, each pair on the items both answered: {lo} to {hi} "
            f"(median {per.get('median'):.0f}) of {n_items} items"
        )
    return f"{n_models} models x {n_items} complete-case items"


def _bases(parts: Sequence[Mapping[str, Any] | None]) -> str:
    texts = list(dict.fromkeys(_basis_text(b) for b in parts))
    return "; ".join(texts)


def _correlation(section: Mapping[str, Any]) -> Mapping[str, Any]:
    """The correlation-matrix entry of a section (tetrachoric or polychoric)."""
    return section.get(section.get("method") or "tetrachoric") or {}


def _private_signal_text(ps: Mapping[str, Any], alpha: float) -> str:
    """The private-signal test's result, in the words its measured size allows.

    Its size was shown within Monte Carlo error of alpha with no private signal under
    one-dimensional Rasch, 2PL and 3PL correctness (README, ``metacog power``); items that draw
    on several abilities (mixed tracks or subjects in one group) are outside that, so the
    sentence says so.
    """
    p, mean, obs = ps.get("p_value"), ps.get("mean"), ps.get("observed")
    verdict = "evidence of private signal" if p < alpha else "no evidence of private signal"
    within = " within each benchmark" if (ps.get("n_groups") or 1) > 1 else ""
    return (
        f"the test of private signal (confidence rows permuted among items of equal pass "
        f"count and nearly equal ability-weighted score{within}; "
        f"{_basis_text(ps.get('basis'))}): observed {fmt(obs)} against its null {fmt(mean)}, "
        f"one-sided {p_text(p)}, {verdict} beyond shared difficulty at {alpha:g} (its size holds "
        f"under one-dimensional Rasch, 2PL and 3PL correctness; items that draw on several "
        f"abilities can make it reject too often)"
    )


def _parabola(section: Mapping[str, Any]) -> str:
    """What the loadings-vs-thresholds quadratic shows, named only when the fit supports it.

    "An inverted parabola" needs at least :data:`PARABOLA_MIN_THRESHOLDS` distinct thresholds,
    ``c2 < 0``, the vertex inside the thresholds' range and a fit worth naming (R^2 at least
    :data:`PARABOLA_MIN_R2`, F-test p below :data:`PARABOLA_MAX_P`); otherwise it says what was
    seen. Thresholds follow psych (``tau = Phi^-1(P(x = 0))``): on a yes-rate axis the curve is
    mirrored.
    """
    e = section.get("eigen") or {}
    tet = _correlation(section)
    raw = tet.get("tau")
    raw = list(raw.values()) if isinstance(raw, Mapping) else list(raw if raw is not None else [])
    taus = [float(t) for t in raw if t is not None and math.isfinite(float(t))]
    distinct = len({round(t, 9) for t in taus})
    coef, r2 = e.get("quadratic_coef"), e.get("quadratic_r2")
    p, vertex = e.get("quadratic_p_value"), e.get("quadratic_vertex")
    if coef is None or r2 is None or distinct <= 3:
        return f"no shape named ({distinct} distinct thresholds: a quadratic fits any 3 points)"
    fit = f"quadratic R^2 {r2:.2f}, c2 {coef[2]:.3g}, vertex tau {fmt(vertex, 2)}"
    if distinct < PARABOLA_MIN_THRESHOLDS:
        return f"no shape named, only {distinct} distinct thresholds ({fit})"
    if coef[2] >= 0:
        return f"not an inverted parabola: the curvature is upward or flat ({fit})"
    if vertex is None or not min(taus) <= vertex <= max(taus):
        return (
            f"loadings fall off towards one end only: the vertex is outside the thresholds ({fit})"
        )
    if r2 < PARABOLA_MIN_R2 or p is None or not p < PARABOLA_MAX_P:
        return f"no clear shape: the quadratic explains little ({fit}, F-test {p_text(p)})"
    return f"an inverted parabola, mid-threshold models load most ({fit}, F-test {p_text(p)})"


def headline_findings(
    summary: Mapping[str, Any], *, benchmarks: Sequence[str] | None = None, alpha: float = 0.05
) -> list[str]:
    """Three sentences that summarise an analysis: factor structure, pairwise, alignment.

    Args:
        summary: The ``summary.json`` dict of ``metacog analyze``.
        benchmarks: Only these benchmarks' groups (e.g. ``["pooled"]``); all by default.
        alpha: Level at which a null is called "distinguishable" in the wording.

    Returns:
        The findings, one sentence each (fewer when no group could be analysed).
    """
    groups = list(_groups(summary, benchmarks))
    if not groups:
        return ["No group had enough models and items for the cross-model analyses."]
    out = []
    where = f"{groups[0][0]}/{groups[0][1]}" if len(groups) == 1 else f"{len(groups)} groups"

    shapes = [_parabola(g["confidence"]) for _, _, g in groups]
    shares = [g["confidence"].get("eigen", {}).get("first_share") for _, _, g in groups]
    methods = sorted({g["confidence"].get("method") or "tetrachoric" for _, _, g in groups})
    basis = _bases([g["confidence"].get("basis") for _, _, g in groups])
    rules = []
    if "tetrachoric" in methods:
        rules.append(
            "psych's tau = Phi^-1(P(confidence = 0)), so a high threshold is a low yes-rate"
        )
    if "polychoric" in methods:
        rules.append(
            "for numeric confidence tau = Phi^-1 of the model's share of confidence "
            "below the pooled median, ties half, so a high threshold is a model less "
            "confident than the typical one"
        )
    if len(groups) == 1:
        shape = shapes[0]
    else:
        named = sum(1 for t in shapes if t.startswith("an inverted parabola"))
        shape = f"an inverted parabola (by the rule in the schema) in {named} of {len(groups)}"
    out.append(
        f"Shared difficulty ({where}; {basis}): the first factor carries "
        f"{_range(shares, pct=True)} of the {' and '.join(methods)} confidence variance; PC1 "
        f"loadings against the models' thresholds ({'; '.join(rules)}): {shape}."
    )

    parts = []
    for bench, label, g in groups:
        pw = g.get("pairwise", {})
        if pw.get("mean_tau") is None:
            continue
        nulls = pw.get("nulls", {})
        br = nulls.get("base_rate", {})
        cp = nulls.get("calibration_preserving", {})
        tau = pw["mean_tau"]
        part = (
            f"{bench}/{label} {fmt(tau)}, {_versus(tau, br, alpha)} the base-rate-matched null "
            f"({fmt(br.get('mean'))}, {p_text(br.get('p_value'))}) and {_versus(tau, cp, alpha)} "
            f"the calibration-preserving null ({fmt(cp.get('mean'))}, {p_text(cp.get('p_value'))})"
            f" ({_basis_text(pw.get('basis'))})"
        )
        ps = nulls.get("private_signal")
        if ps and ps.get("p_value") is not None:
            part += "; " + _private_signal_text(ps, alpha)
        parts.append(part)
    if parts:
        shown = parts[:3] + ([f"and {len(parts) - 3} more groups"] if len(parts) > 3 else [])
        out.append(
            "Pairwise calibration (mean Kendall tau-b of dconf vs dperf over model pairs): "
            + "; ".join(shown)
            + "."
        )

    al = [
        (
            g["factor_alignment"].get("all", {}).get("r"),
            g["factor_alignment"].get("contentious", {}).get("r"),
        )
        for _, _, g in groups
        if g.get("factor_alignment")
    ]
    if al:
        basis = _bases(
            [g["factor_alignment"].get("basis") for _, _, g in groups if g.get("factor_alignment")]
        )
        n_cont = [
            g["factor_alignment"].get("contentious", {}).get("n_items")
            for _, _, g in groups
            if g.get("factor_alignment")
        ]
        ordinal = any(
            "levels" in str(g["factor_alignment"].get("method", ""))
            for _, _, g in groups
            if g.get("factor_alignment")
        )
        rule = (
            "pass rate within the bounds" if ordinal else "yes-rate and pass-rate within the bounds"
        )
        out.append(
            f"Confidence factor vs capability factor over items ({where}; {basis}): "
            f"Pearson r "
            f"{_range([a for a, _ in al])} on all items, {_range([c for _, c in al])} on the "
            f"{_range(n_cont, digits=0)} contentious items ({rule})."
        )
    return out
