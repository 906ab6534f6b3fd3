"""``report.html``: the analysis as plots and tables in one self-contained page.

The page holds its figures as inline SVG (:mod:`metacog_metrics.svgplot`), so it can be attached
to a CI run or mailed without its folder. :func:`headline_findings` condenses a ``summary.json``
into the few sentences that ``metacog analyze`` and ``metacog demo`` print.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metacog_metrics._io import atomic_write_text
from metacog_metrics.svgplot import (
    PURPLES,
    RDBU_R,
    Axes,
    Figure,
    FigureStack,
    grey,
    marker_radius,
    text_width,
)

if TYPE_CHECKING:
    from metacog_metrics.analyze import AnalysisResult, GroupAnalysis

__all__ = [
    "headline_findings",
    "render_report",
    "render_rlmf_eval_report",
    "rlmf_eval_section",
    "write_report",
]

_NULL_LABELS = {
    "base_rate": "base-rate-matched null",
    "calibration_preserving": "calibration-preserving null",
    "private_signal": "private-signal test null",
}
_COLORS = {"confidence": "#1f77b4", "correctness": "#d62728", "observed": "#000000"}
_GREY6 = grey(0.6)
_NULL_COLORS = {
    "base_rate": "#7f7f7f",
    "calibration_preserving": "#ff7f0e",
    "private_signal": "#2ca02c",
}


# --------------------------------------------------------------------------------------------
# Headline findings (from summary.json alone)
# --------------------------------------------------------------------------------------------


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def _p(x: Any) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "p n/a"
    return f"p = {x:.3g}" if x >= 0.001 else "p < 0.001"


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
        f"{_basis_text(ps.get('basis'))}): observed {_fmt(obs)} against its null {_fmt(mean)}, "
        f"one-sided {_p(p)}, {verdict} beyond shared difficulty at {alpha:g} (its size holds "
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
    fit = f"quadratic R^2 {r2:.2f}, c2 {coef[2]:.3g}, vertex tau {_fmt(vertex, 2)}"
    if distinct < PARABOLA_MIN_THRESHOLDS:
        return f"no shape named, only {distinct} distinct thresholds ({fit})"
    if coef[2] >= 0:
        return f"not an inverted parabola: the curvature is upward or flat ({fit})"
    if vertex is None or not min(taus) <= vertex <= max(taus):
        return (
            f"loadings fall off towards one end only: the vertex is outside the thresholds ({fit})"
        )
    if r2 < PARABOLA_MIN_R2 or p is None or not p < PARABOLA_MAX_P:
        return f"no clear shape: the quadratic explains little ({fit}, F-test {_p(p)})"
    return f"an inverted parabola, mid-threshold models load most ({fit}, F-test {_p(p)})"


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
        rules.append("psych's tau = Phi^-1(P(confidence = 0)), so a high threshold is a low "
                     "yes-rate")  # fmt: skip
    if "polychoric" in methods:
        rules.append("for numeric confidence tau = Phi^-1 of the model's share of confidence "
                     "below the pooled median, ties half, so a high threshold is a model less "
                     "confident than the typical one")  # fmt: skip
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
            f"{bench}/{label} {_fmt(tau)}, {_versus(tau, br, alpha)} the base-rate-matched null "
            f"({_fmt(br.get('mean'))}, {_p(br.get('p_value'))}) and {_versus(tau, cp, alpha)} "
            f"the calibration-preserving null ({_fmt(cp.get('mean'))}, {_p(cp.get('p_value'))})"
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
        basis = _bases([g["factor_alignment"].get("basis") for _, _, g in groups
                        if g.get("factor_alignment")])  # fmt: skip
        n_cont = [g["factor_alignment"].get("contentious", {}).get("n_items")
                  for _, _, g in groups if g.get("factor_alignment")]  # fmt: skip
        ordinal = any("levels" in str(g["factor_alignment"].get("method", ""))
                      for _, _, g in groups if g.get("factor_alignment"))  # fmt: skip
        rule = ("pass rate within the bounds" if ordinal else
                "yes-rate and pass-rate within the bounds")  # fmt: skip
        out.append(
            f"Confidence factor vs capability factor over items ({where}; {basis}): "
            f"Pearson r "
            f"{_range([a for a, _ in al])} on all items, {_range([c for _, c in al])} on the "
            f"{_range(n_cont, digits=0)} contentious items ({rule})."
        )
    return out


# --------------------------------------------------------------------------------------------
# Figures (inline SVG drawn by metacog_metrics.svgplot; that module says why not matplotlib)
# --------------------------------------------------------------------------------------------

#: Past this many points a scatter panel shows a seeded random subsample, and its legend says so
#: (the factor-alignment panel has one point per item: 50,000 items would make a 3 MB figure).
MAX_SCATTER_POINTS = 3000


def _figure(ncols: int, width: float = 540.0, height: float = 290.0) -> tuple[Figure, list[Axes]]:
    fig = Figure(ncols, panel_width=width, plot_height=height)
    return fig, fig.axes


def _label_size(n: int) -> float:
    """Font size (px) of n model names along an axis."""
    return 11.0 if n <= 25 else 9.0 if n <= 50 else 8.0


def _rows_height(n: int, minimum: float = 290.0) -> float:
    """Height (px) of a plot box with one row per model."""
    return max(minimum, (18.0 if n <= 25 else 13.0 if n <= 50 else 10.0) * n + 16.0)


def _subsample(sizes: Sequence[int], cap: int = MAX_SCATTER_POINTS, seed: int = 0) -> list[Any]:
    """Indices to draw of each of several point sets, at most ``cap`` in all (each set keeps its
    share, at least one point), the same on every run (seeded); ``slice(None)`` under the cap."""
    total = sum(sizes)
    if total <= cap:
        return [slice(None)] * len(sizes)
    rng = np.random.default_rng(seed)
    out = []
    for n in sizes:
        k = min(n, max(1, round(cap * n / total)))
        out.append(np.sort(rng.choice(n, size=k, replace=False)))
    return out


def _shown(n: int, idx: Any) -> str:
    return "" if isinstance(idx, slice) else f"; random {len(idx):,} of {n:,} shown"


def _structure_figure(g: GroupAnalysis) -> Figure | None:
    sections = {"confidence": g.confidence, "correctness": g.correctness}
    if not any(s is not None and s.eigen is not None for s in sections.values()):
        return None
    fig, (ax1, ax2) = _figure(2)
    for name, sec in sections.items():
        if sec is None or sec.eigen is None:
            continue
        ev = np.asarray(sec.eigen.eigenvalues)
        ax1.plot(
            np.arange(1, ev.size + 1),
            ev,
            color=_COLORS[name],
            marker="o",
            label=f"{name} (first share {sec.eigen.first_share:.0%})",
        )
        tau, load = np.asarray(sec.eigen.thresholds), np.asarray(sec.eigen.loadings)
        ax2.scatter(
            tau,
            load,
            color=_COLORS[name],
            radius=marker_radius(22),
            label=name,
            tips=[str(n) for n in sec.eigen.names] or None,
        )
        q = sec.eigen.quadratic
        if q is not None and np.isfinite(q.r2):
            grid = np.linspace(np.nanmin(tau), np.nanmax(tau), 100)
            c0, c1, c2 = q.coef
            ax2.plot(
                grid,
                c0 + c1 * grid + c2 * grid**2,
                color=_COLORS[name],
                lw=1.2,
                label=f"quadratic fit, R\u00b2 = {q.r2:.2f}",
            )
    ax1.axhline(1.0, color=_GREY6, lw=0.8, ls=":")
    ax1.set(xlabel="component", ylabel="eigenvalue", title="Scree of the correlation matrices")
    ax1.legend()
    numeric = g.confidence is not None and g.confidence.method == "polychoric"
    ax2.set(
        xlabel="response threshold \u03c4 = \u03a6\u207b\u00b9(P(x = 0))"
        + ("\n(numeric confidence: x = 0 below the pooled median, ties half)" if numeric else ""),
        ylabel="PC1 loading",
        title="PC1 loadings against thresholds",
    )
    ax2.legend()
    return fig


def _heatmap_figure(g: GroupAnalysis) -> Figure | FigureStack | None:
    if g.confidence is None or len(g.confidence.tetrachoric.names) < 2:
        return None
    sections = [(name, getattr(g, name)) for name in ("confidence", "correctness")]
    names = [str(m) for m in g.confidence.tetrachoric.names]
    n = len(names)
    size = 10.0 if n <= 25 else 8.0
    # Every name up to 50 models: where two matrices side by side leave too little room for
    # them (long names), the matrices go one above the other, each as tall as its names need.
    label = max(text_width(m, size) for m in names)
    need = n * 1.15 * size
    stacked = n <= 50 and need > 540.0 - label - 110.0
    if stacked:
        present = [(k, s) for k, s in sections if s is not None and len(s.tetrachoric.names) >= 2]
        side = max(360.0, need + 10.0)
        figs = [Figure(1, panel_width=min(1080.0, label + side + 140.0), plot_height=side)
                for _ in present]  # fmt: skip
        fig: Figure | FigureStack = FigureStack(figs)
        pairs = [(f.axes[0], k, s) for f, (k, s) in zip(figs, present, strict=True)]
    else:
        fig, axes = _figure(2, height=360.0)
        pairs = [(ax, k, s) for ax, (k, s) in zip(axes, sections, strict=True)]
    for ax, name, sec in pairs:
        if sec is None or len(sec.tetrachoric.names) < 2:
            ax.axis_off()
            continue
        tet = sec.tetrachoric
        order = np.argsort(tet.tau)
        rho = np.asarray(tet.rho)[np.ix_(order, order)]
        ordered = [str(tet.names[i]) for i in order]
        ax.heatmap(rho, cmap=RDBU_R, vmin=-1.0, vmax=1.0)
        # Past 50 models (or where they would touch) every k-th name is shown.
        ax.set_xticks(range(len(ordered)), ordered, size=size, rotation=90, thin=True)
        ax.set_yticks(range(len(ordered)), ordered, size=size, thin=True)
        ax.set(title=f"{sec.method.capitalize()} {name} (models by threshold)")
    return fig


def _null_figure(g: GroupAnalysis) -> Figure | None:
    pw = g.pairwise
    if pw is None or not pw.nulls:
        return None
    fig, (ax1, ax2) = _figure(2)
    for null, res in pw.nulls.items():
        ax1.hist(
            res.draws,
            bins=40,
            alpha=0.55,
            color=_NULL_COLORS.get(null, _GREY6),
            label=f"{_NULL_LABELS.get(null, null)} ({_p(res.p_value)})",
        )
    st = g.private_signal
    if st is not None:
        ax1.hist(
            st.draws,
            bins=40,
            alpha=0.55,
            color=_NULL_COLORS["private_signal"],
            label=f"{_NULL_LABELS['private_signal']} (one-sided {_p(st.p_value)})",
        )
    if np.isfinite(pw.mean_tau):
        ax1.axvline(
            pw.mean_tau, color=_COLORS["observed"], lw=2, label=f"observed mean = {pw.mean_tau:.3f}"
        )
    ax1.set(
        xlabel="mean Kendall tau-b over pairs",
        ylabel="joint null draws",
        title="Observed mean tau against the nulls",
    )
    ax1.legend()

    dc = pw.delta_curve
    delta = np.asarray(dc.delta, dtype=float)
    ax2.plot(delta, dc.mean_tau, color=_COLORS["observed"], marker="o", label="observed")
    for null in dc.null_mean:
        color = _NULL_COLORS.get(null, _GREY6)
        ax2.fill_between(
            delta,
            dc.null_low[null],
            dc.null_high[null],
            color=color,
            alpha=0.25,
            label=f"{_NULL_LABELS.get(null, null)} (95%)",
        )
        ax2.plot(delta, dc.null_mean[null], color=color, lw=1)
    ax2.axhline(0, color=_GREY6, lw=0.8, ls=":")
    ax2.set(
        xlabel="allowed accuracy gap \u03b4 = |acc(A) \u2212 acc(B)|",
        ylabel="mean tau-b of pairs within \u03b4",
        title="Mean tau as the gap shrinks",
    )
    ax2.legend()
    return fig


def _calibration_figure(g: GroupAnalysis) -> Figure | None:
    per = g.calibration.per_model
    if not per:
        return None
    models = list(per)
    n = len(models)
    fig, (ax1, ax2) = _figure(2, height=_rows_height(n))
    y = np.arange(n, dtype=float)
    internal = np.array([per[m].auroc_internal for m in models], dtype=float)
    pop = np.array([per[m].auroc_pop for m in models], dtype=float)
    names = [str(m) for m in models]
    ax1.segments(np.column_stack([internal, y, pop, y]), color=grey(0.7), lw=1)
    ax1.scatter(
        internal, y, color=_COLORS["confidence"], label="Internal (own confidence)", tips=names
    )
    ax1.scatter(
        pop,
        y,
        color=_NULL_COLORS["calibration_preserving"],
        marker="s",
        label="Pop (leave-one-out population mean)",
        tips=names,
    )
    ax1.axvline(0.5, color=_GREY6, lw=0.8, ls=":")
    ax1.set_yticks(y, names, size=_label_size(n))
    ax1.set_ylim(-0.6, n - 0.4)
    ax1.invert_yaxis()
    ax1.set(xlabel="AUROC for correctness", title="Per-model AUROC: own vs population")
    ax1.legend()

    al = g.alignment
    if al is not None and al.all.confidence_scores.size:
        mask = np.asarray(al.contentious_mask, dtype=bool)
        cs, ps = np.asarray(al.all.confidence_scores), np.asarray(al.all.correctness_scores)
        rest, cont = ~mask, mask
        n_rest, n_cont = int(rest.sum()), int(cont.sum())
        i_rest, i_cont = _subsample([n_rest, n_cont])
        ax2.scatter(
            ps[rest][i_rest],
            cs[rest][i_rest],
            radius=marker_radius(10),
            color=_GREY6,
            label=f"all items, r = {_fmt(al.all.r, 2)}{_shown(n_rest, i_rest)}",
        )
        ax2.scatter(
            ps[cont][i_cont],
            cs[cont][i_cont],
            radius=marker_radius(14),
            color=_COLORS["correctness"],
            label=f"contentious (own factor fit: r = {_fmt(al.contentious.r, 2)})"
            f"{_shown(n_cont, i_cont)}",
        )
        ax2.set(
            xlabel="capability factor-1 score (correctness)",
            ylabel="confidence factor-1 score",
            title="Factor alignment over items",
        )
        ax2.legend()
    else:
        ax2.axis_off()
    return fig


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1150px;color:#222;padding:0 1em}
h1{font-size:1.6em}
h2{font-size:1.3em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.25em .5em;text-align:right}th{background:#f5f5f5}
td:first-child,th:first-child{text-align:left}
svg.fig{display:block;max-width:100%;height:auto;margin:.6em 0}
.warn{color:#8a5a00}.muted{color:#777;font-size:.9em}
ul.findings li{margin:.4em 0}
"""


def _table(df: pd.DataFrame, digits: int = 3) -> str:
    # to_html prints na_rep for NaN only: None in an object column shows "None" under pandas 2,
    # pd.NA of a nullable column "<NA>". Such columns become objects with NaN for the gaps.
    gaps = [k for k, (_, col) in enumerate(df.items())
            if not pd.api.types.is_float_dtype(col) and col.isna().any()]  # fmt: skip
    if gaps:
        df = df.copy()
        for k in gaps:
            col = df.iloc[:, k]
            df.isetitem(k, col.astype(object).where(col.notna(), np.nan))
    return df.to_html(
        index=False, float_format=lambda v: f"{v:.{digits}f}", na_rep="–", border=0, escape=True
    )


def _img(fig: Figure | FigureStack | None, alt: str) -> str:
    """The figure as inline SVG; ``alt`` becomes its ``<title>`` (its accessible name)."""
    return "" if fig is None else fig.to_svg(alt)


def _key_figures(group: Mapping[str, Any]) -> pd.DataFrame:
    conf, corr = group.get("confidence", {}), group.get("correctness", {})
    pw = group.get("pairwise", {})
    al = group.get("factor_alignment", {})
    nulls = pw.get("nulls", {})
    pb = pw.get("basis") or {}
    per = pb.get("n_items_per_pair") or {}
    rows = [
        ("models in the cross-model analyses", f"{group.get('n_models')} of "
         f"{len(group.get('coverage') or {}) or group.get('n_models')}"),
        ("items (any included model)", group.get("n_items_union")),
        ("items per pair (pairwise sections): min / median / max",
         f"{per.get('min')} / {_fmt(per.get('median'), 0)} / {per.get('max')}"),
        ("complete-case items (factor scores, alignment, private-signal test)",
         group.get("n_items")),
        (f"first-factor share, confidence ({conf.get('method', 'tetrachoric')}, "
         f"{(conf.get('basis') or {}).get('n_models')} models)",
         _fmt(conf.get("eigen", {}).get("first_share"))),
        (f"first-factor share, correctness (tetrachoric, "
         f"{(corr.get('basis') or {}).get('n_models')} models)",
         _fmt(corr.get("eigen", {}).get("first_share"))),
        (
            "quadratic R^2 of loadings on thresholds, confidence",
            _fmt(conf.get("eigen", {}).get("quadratic_r2")),
        ),
        ("mean pairwise tau-b", _fmt(pw.get("mean_tau"))),
    ]  # fmt: skip
    for null in ("base_rate", "calibration_preserving", "private_signal"):
        if null in nulls:
            n = nulls[null]
            label = f"  {_NULL_LABELS[null]}: mean, {_p(n.get('p_value'))}"
            rows.append((label, _fmt(n.get("mean"))))
    by_dir = (nulls.get("base_rate") or {}).get("fdr_significant_share_by_direction") or {}
    rows += [
        ("share of pairs significant after FDR (base-rate)", _fmt(pw.get("fdr_significant_share"))),
        ("  of them above / below the null", f"{_fmt(by_dir.get('above'))} / "
         f"{_fmt(by_dir.get('below'))}"),
        ("factor alignment r, all complete-case items", _fmt(al.get("all", {}).get("r"))),
        ("factor alignment r, contentious items", _fmt(al.get("contentious", {}).get("r"))),
        ("contentious items", al.get("contentious", {}).get("n_items")),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["figure", "value"]).astype(str)


def _group_html(g: GroupAnalysis, group: Mapping[str, Any]) -> str:
    title = f"{g.benchmark} / {g.label}"
    parts = [
        f'<h2 id="{html.escape(g.benchmark)}-{html.escape(g.label)}">{html.escape(title)}</h2>',
        f'<p class="muted">confidence kind: {html.escape(g.confidence_kind)}'
        + (f", binarised at {g.binarized_at} for the factor sections" if g.binarized_at else "")
        + "</p>",
    ]
    if g.skipped:
        parts.append(f'<p class="warn">Cross-model analyses skipped: {html.escape(g.skipped)}</p>')
    else:
        parts.append(_table(_key_figures(group)))
        for builder, alt in (
            (_structure_figure, "scree and loadings"),
            (_heatmap_figure, "tetrachoric matrices"),
            (_null_figure, "pairwise nulls and delta curve"),
        ):
            parts.append(_img(builder(g), alt))
    parts.append(_img(_calibration_figure(g), "per-model calibration"))
    if g.coverage is not None and not g.coverage.empty:
        cov = g.coverage[["model", "n_items", "share", "included", "reason"]].copy()
        cov["included"] = cov["included"].map({True: "yes", False: "no"})
        parts.append(
            "<h3>Item coverage</h3>"
            f'<p class="muted">Items of the group with a confidence and a grade, per model. '
            f"Models below min_coverage are left out of the cross-model analyses; the "
            f"correlation matrices and the pairwise section use each pair's shared items, the "
            f"factor scores, alignment and private-signal test the "
            f"{group.get('n_items')} items every included model answered.</p>" + _table(cov)
        )
    per = pd.DataFrame.from_dict(group.get("per_model", {}), orient="index")
    if not per.empty:
        keep = [
            c
            for c in (
                "n_items",
                "accuracy",
                "yes_rate",
                "auroc_internal",
                "auroc_pop",
                "auroc_diff",
                "brier",
                "ece",
                "aurc",
                "n_unparseable",
            )
            if c in per
        ]
        per = per[keep].reset_index(names="model")
        parts.append("<h3>Per model</h3>" + _table(per))
    if g.pairwise is not None and g.pairwise.pair_types:
        rows = [
            {
                "pair type": t,
                "pairs": s.n_pairs,
                "mean tau": s.mean_tau,
                **{f"p ({_NULL_LABELS[n]})": v for n, v in s.p_value.items() if n in _NULL_LABELS},
            }
            for t, s in g.pairwise.pair_types.items()
        ]
        parts.append("<h3>By reasoning pair type</h3>" + _table(pd.DataFrame(rows)))
    if g.warnings:
        parts.append(
            "<h3>Warnings</h3><ul>"
            + "".join(f'<li class="warn">{html.escape(w)}</li>' for w in g.warnings)
            + "</ul>"
        )
    return "\n".join(p for p in parts if p)


# --------------------------------------------------------------------------------------------
# Text analyses: inline solving and surface-feature probes
# --------------------------------------------------------------------------------------------

_PROBE_COLUMNS = (
    ("internal", "Internal"), ("pop", "Pop"), ("M", "M"), ("QM", "QM"), ("QP", "QP"),
    ("QMP", "QMP"),
)  # fmt: skip
_PROBE_COLORS = {
    "internal": _COLORS["confidence"], "pop": _NULL_COLORS["calibration_preserving"],
    "Q": "#8c564b", "M": "#2ca02c", "P": "#9467bd", "QM": "#17becf", "QP": "#bcbd22",
    "QMP": "#d62728",
}  # fmt: skip


_INLINE_TYPE_COLUMNS = {
    "pair_type": "pair type",
    "n_pairs": "pairs",
    "mean_tau_with": "mean tau-b, all items",
    "mean_tau_without": "mean tau-b, without inline",
    "median_tau_with": "median, all",
    "median_tau_without": "median, without",
    "mean_items_without": "items kept (mean)",
    "fdr_share_with": "pairs significant (BH), all",
    "fdr_share_without": "pairs significant (BH), without",
}


def _absent(title: str, anchor: str, reason: str) -> str:
    return (f'<h2 id="{anchor}">{html.escape(title)}</h2>'
            f'<p class="warn">Not shown: {html.escape(reason)}.</p>')  # fmt: skip


def _pct(x: Any, digits: int = 0) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{100 * x:.{digits}f}%"


def _ci(pair: Any, digits: int = 3, pct: bool = False) -> str:
    lo, hi = [*list(pair or []), None, None][:2]
    if pct:
        return f"95% item bootstrap {_pct(lo)} to {_pct(hi)}"
    return f"95% item bootstrap {_fmt(lo, digits)} to {_fmt(hi, digits)}"


def _inline_rates_figure(rates: pd.DataFrame) -> Figure | None:
    if rates is None or rates.empty:
        return None
    wide = rates.pivot_table(index="model", columns="benchmark", values="inline_rate", sort=False)
    flags = (
        rates.groupby("model", sort=False)["reasoning"].first()
        if "reasoning" in rates
        else pd.Series(dtype=object)
    )
    labels = [_model_label(m, flags.get(m)) for m in wide.index]
    n_rows, n_cols = wide.shape
    fig, (ax,) = _figure(
        1,
        width=min(1100.0, max(620.0, 110.0 * n_cols + 420.0)),
        height=_rows_height(n_rows, minimum=200.0),
    )
    ax.heatmap(
        wide.to_numpy(dtype=float), cmap=PURPLES, vmin=0.0, vmax=1.0, annotate="{:.0%}", equal=False
    )
    ax.set_xticks(range(n_cols), [str(c) for c in wide.columns], rotation=30)
    ax.set_yticks(range(n_rows), labels, size=_label_size(n_rows))
    ax.set(title="Share of each model's rationales flagged as inline solving\n(R): reasoning model")
    return fig


def _inline_pairs_figure(types: pd.DataFrame, title: str) -> Figure | None:
    if types is None or types.empty:
        return None
    fig, (ax,) = _figure(1, width=560.0, height=260.0)
    x = np.arange(len(types), dtype=float)
    ax.bar(x - 0.2, types["mean_tau_with"], 0.4, color=_COLORS["confidence"], label="all items")
    ax.bar(
        x + 0.2,
        types["mean_tau_without"],
        0.4,
        color=grey(0.65),
        label="without inline-solved items",
    )
    ax.axhline(0, color=grey(0.3), lw=0.8)
    for k, v in enumerate(types["mean_tau_without"]):
        if not np.isfinite(v):  # no pair of this type keeps enough items
            ax.text(k + 0.2, 0, "n/a", valign="bottom", size=10, color=grey(0.4))
    ax.set_xticks(x, [f"{t}\n({n} pairs)" for t, n in zip(types["pair_type"], types["n_pairs"])])
    ax.set_xlim(-0.6, len(types) - 0.4)
    ax.set(ylabel="mean pairwise tau-b (dconf vs dperf)", title=title)
    ax.legend()
    return fig


def _inline_types_table(types: pd.DataFrame) -> str:
    shown = pd.DataFrame({label: types[key] for key, label in _INLINE_TYPE_COLUMNS.items()
                          if key in types})  # fmt: skip
    for key, label in _INLINE_TYPE_COLUMNS.items():
        if label not in shown:
            continue
        if key.startswith("fdr_share"):
            shown[label] = [_pct(v) for v in shown[label]]
        elif key.startswith("mean_items"):
            shown[label] = [_fmt(v, 1) for v in shown[label]]
        elif "tau" in key:
            shown[label] = [_fmt(v, 3) for v in shown[label]]
    return _table(shown)


def _inline_group_text(entry: Mapping[str, Any]) -> str:
    share = entry.get("inline_share")
    parts = [f"{_pct(share, 1)} of this group's (item, model) cells are inline-solved."]
    types = {row.get("pair_type"): row for row in entry.get("pair_types") or []}
    rnr = types.get("R-NR")
    if rnr is None:
        parts.append("There are no R-NR pairs.")
        return html.escape(" ".join(parts))
    with_ci = entry.get("rnr_tau_with_ci")
    parts.append(
        f"R-NR mean tau-b: {_fmt(rnr.get('mean_tau_with'))} on all items"
        + (f" ({_ci(with_ci)})" if with_ci and with_ci[0] is not None else "")
        + f", {_fmt(rnr.get('mean_tau_without'))} without the inline-solved items"
    )
    drop = entry.get("rnr_tau_drop")
    if drop is not None:
        parts[-1] += f": a drop of {_fmt(drop)} ({_ci(entry.get('rnr_tau_drop_ci'))})"
    lost = entry.get("rnr_share_lost")
    if lost is not None:
        parts[-1] += (f", which is {_pct(lost)} of the R-NR signal "
                      f"({_ci(entry.get('rnr_share_lost_ci'), pct=True)}).")  # fmt: skip
    else:
        why = entry.get("rnr_share_lost_reason") or "not computed"
        parts[-1] += f". Share of the signal lost: not given ({why})."
    return html.escape(" ".join(parts))


def _inline_html(summary: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> str:
    sec = summary.get("inline_solving") or {}
    title, anchor = "Inline solving", "inline-solving"
    if sec.get("status") != "ok":
        return _absent(title, anchor, sec.get("reason", "not run"))
    parts = [
        f'<h2 id="{anchor}">{title}</h2>',
        f"<p>{sec.get('n_inline')} of {sec.get('n_texts')} probe rationales are flagged as "
        "inline solving: they work the item out (arithmetic, equations, code, a derivation or "
        "an answer reached in words) instead of judging whether the model can answer it. A "
        "model that solves the item inside its confidence rationale reports what it found, "
        "not what it knows about itself, and that alone makes its confidence track its "
        "correctness.</p>",
        '<p class="muted">How to read it: for each group the pairwise analysis (Kendall '
        "tau-b of dconf against dperf over items, per model pair) is repeated on the items "
        "neither model of a pair solved inline, by pair type (R: reasoning model, NR: not). "
        "If the calibration between reasoning and non-reasoning models comes from inline "
        "solving, the grey bars of R-NR (and R-R) fall to about 0 while NR-NR does not move. "
        "The detector finds solving written in symbols and about half of the solving written "
        "out in prose (docs/text_analyses.md).</p>",
        _img(_inline_rates_figure(tables.get("inline_rates")), "inline-solving rates"),
    ]
    for bench, labels in (sec.get("groups") or {}).items():
        for label, entry in labels.items():
            head = f"<h3>{html.escape(bench)} / {html.escape(label)}</h3>"
            if entry.get("status") != "ok":
                parts.append(head + f'<p class="warn">Pair types not shown: '
                             f'{html.escape(entry.get("reason", ""))}.</p>')  # fmt: skip
                continue
            if not entry.get("inline_share"):
                parts.append(head + "<p>No rationale of this group is flagged: without "
                             "inline-solved items the pairwise analysis is the one in the "
                             "group's own section.</p>")  # fmt: skip
                continue
            types = pd.DataFrame(entry.get("pair_types") or [])
            parts.append(head + f"<p>{_inline_group_text(entry)}</p>")
            parts.append(_img(_inline_pairs_figure(types, f"{bench} / {label}: pair types"),
                              "pair types with and without inline items"))  # fmt: skip
            if not types.empty:
                parts.append(_inline_types_table(types))
    return "\n".join(p for p in parts if p)


def _model_label(model: Any, reasoning: Any) -> str:
    """The model's name, marked "(R)" when flagged as reasoning (a Python or NumPy True; a
    missing flag, None or NaN, is no mark)."""
    return f"{model} (R)" if isinstance(reasoning, bool | np.bool_) and reasoning else str(model)


def _probe_figure(t: pd.DataFrame, title: str) -> Figure | None:
    if t.empty:
        return None
    cols = [c for c in ("internal", "pop", "M", "QMP") if t[f"auroc_{c}"].notna().any()]
    models = list(t["model"])
    n = len(models)
    fig, (ax1, ax2) = _figure(2, height=_rows_height(n, minimum=300.0))
    y = np.arange(n, dtype=float)
    for k, c in enumerate(cols):
        off = (k - (len(cols) - 1) / 2) * 0.18
        ax1.errorbar_x(
            t[f"auroc_{c}"],
            y + off,
            t[f"auroc_{c}_low"],
            t[f"auroc_{c}_high"],
            color=_PROBE_COLORS[c],
            label=dict(_PROBE_COLUMNS).get(c, c),
        )
    ax1.axvline(0.5, color=_GREY6, lw=0.8, ls=":")
    ax1.set_yticks(
        y, [_model_label(m, r) for m, r in zip(models, t["reasoning"])], size=_label_size(n)
    )
    ax1.set_ylim(-0.6, n - 0.4)
    ax1.invert_yaxis()
    ax1.set(xlabel="AUROC for correctness (95% item bootstrap)", title=title)
    ax1.legend("below")  # one row under the axes: it covers no point
    names = [
        c
        for c in ("internal", "pop", "Q", "M", "P", "QM", "QP", "QMP")
        if t[f"auroc_{c}"].notna().any()
    ]
    ax2.boxplot(
        [t[f"auroc_{c}"].dropna().to_numpy() for c in names],
        colors=[_PROBE_COLORS[c] for c in names],
        alpha=0.6,
    )
    ax2.set_xticks(np.arange(1, len(names) + 1), [_PROBE_NAMES.get(c, c) for c in names])
    ax2.set_xlim(0.5, len(names) + 0.5)
    ax2.axhline(0.5, color=_GREY6, lw=0.8, ls=":")
    ax2.set(
        ylabel="AUROC for correctness, one point per model",
        title="Own confidence, population and text probes",
    )
    return fig


_PROBE_NAMES = {"internal": "Internal", "pop": "Pop"}
_PROBE_TABLE = ("internal", "pop", "Q", "M", "P", "QM", "QP", "QMP")


def _probe_group_text(t: pd.DataFrame, sets: Sequence[str]) -> str:
    n = len(t)
    med = [f"{_PROBE_NAMES.get(s, s)} {_fmt(t[f'auroc_{s}'].median())}"
           for s in _PROBE_TABLE if t[f"auroc_{s}"].notna().any()]  # fmt: skip
    own = t["auroc_internal"].to_numpy(dtype=float)
    above = []
    for s in ("pop", *[x for x in ("M", "QMP") if x in sets]):
        v = t[f"auroc_{s}"].to_numpy(dtype=float)
        ok = np.isfinite(v) & np.isfinite(own)
        if ok.any():
            above.append(f"{_PROBE_NAMES.get(s, s)} for {int((v[ok] > own[ok]).sum())} of "
                         f"{int(ok.sum())}")  # fmt: skip
    text = f"Median AUROC over {n} model(s): {', '.join(med)}."
    if above:
        text += " Above the model's own Internal AUROC: " + "; ".join(above) + "."
    return html.escape(text)


def _probe_table(t: pd.DataFrame) -> str:
    cols = [s for s in _PROBE_TABLE if f"auroc_{s}" in t and t[f"auroc_{s}"].notna().any()]
    shown = pd.DataFrame({
        "model": [_model_label(m, r) for m, r in zip(t["model"], t["reasoning"])],
        "items": t["n_items"].to_numpy(),
        **{_PROBE_NAMES.get(s, s): t[f"auroc_{s}"].to_numpy(dtype=float) for s in cols},
    })  # fmt: skip
    median = {"model": "median", "items": float(t["n_items"].median())}
    median.update({_PROBE_NAMES.get(s, s): float(t[f"auroc_{s}"].median()) for s in cols})
    shown = pd.concat([shown, pd.DataFrame([median])], ignore_index=True)
    shown["items"] = [f"{v:.0f}" for v in shown["items"]]
    return _table(shown)


def _probes_html(summary: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> str:
    sec = summary.get("text_probes") or {}
    title, anchor = "Surface-feature probes", "text-probes"
    if sec.get("status") != "ok":
        return _absent(title, anchor, sec.get("reason", "not run"))
    table = tables.get("text_probes")
    parts = [
        f'<h2 id="{anchor}">{title}</h2>',
        "<p>How much of a model's correctness can be read off the plain wording? An L2 "
        "logistic regression on about 40 lexical features (hedges, negations, causal words, "
        "self-correction such as wait/actually/hmm, difficulty words, lengths and counts) of "
        "the question (Q), of the probe rationale without its verdict (M) and of the solve "
        f"trace (P) predicts correctness, cross-validated ({sec.get('folds')} folds grouped by "
        "item: no item is in two folds). Beside it: Internal, the model's own confidence, and "
        "Pop, the other models' mean confidence on the item.</p>",
        '<p class="muted">How to read it: 0.5 is chance. A probe level with Internal means the '
        "wording carries as much about correctness as the model's own verdict; Pop above "
        "Internal means the other models' confidence predicts this model's correctness better "
        "than its own does (shared difficulty, not self-knowledge). Each AUROC's 95% "
        "item-bootstrap interval is in tables/text_probes.csv.</p>",
    ]
    if sec.get("missing"):
        parts.append('<p class="warn">Not run: ' + html.escape("; ".join(
            f"{k} ({v})" for k, v in sec["missing"].items())) + ".</p>")  # fmt: skip
    for note in sec.get("notes") or []:
        parts.append(f'<p class="warn">{html.escape(note)}.</p>')
    if table is None or table.empty:
        return "\n".join([*parts, '<p class="warn">No group had enough graded items.</p>'])
    sets = list(sec.get("sets") or [])
    for (bench, label), t in table.groupby(["benchmark", "label"], sort=False):
        parts.append(f"<h3>{html.escape(str(bench))} / {html.escape(str(label))}</h3>")
        parts.append(f"<p>{_probe_group_text(t, sets)}</p>")
        parts.append(_img(_probe_figure(t, f"{bench} / {label}"), "text probe AUROCs"))
        parts.append(_probe_table(t))
    return "\n".join(parts)


def render_report(result: AnalysisResult, *, title: str = "metacog-eval report") -> str:
    """Render the analysis as one self-contained HTML page.

    Args:
        result: The analysis.
        title: Page title.

    Returns:
        The HTML text.
    """
    s = result.summary
    head = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="muted">{s.get("n_records")} records, {len(s.get("models", []))} models, '
        f"inputs: {html.escape(', '.join(map(str, s.get('inputs', []))) or '(in memory)')}; "
        f"permutations {s.get('parameters', {}).get('permutations')}, joint draws "
        f"{s.get('parameters', {}).get('joint_permutations')}, seed "
        f"{s.get('parameters', {}).get('seed')}.</p>",
        '<h2>Findings</h2><ul class="findings">'
        + "".join(f"<li>{html.escape(f)}</li>" for f in headline_findings(s))
        + "</ul>",
    ]
    toc = []
    body = []
    for key, g in result.groups.items():
        group = s["results"][g.benchmark][g.label]
        anchor = f"{g.benchmark}-{g.label}"
        toc.append(
            f'<li><a href="#{html.escape(anchor)}">{html.escape(g.benchmark)} / '
            f"{html.escape(g.label)}</a> ({html.escape(group.get('status', ''))})</li>"
        )
        body.append(_group_html(g, group))
        del key
    toc.append('<li><a href="#inline-solving">Inline solving</a></li>')
    toc.append('<li><a href="#text-probes">Surface-feature probes</a></li>')
    body.append(_inline_html(s, result.tables))
    body.append(_probes_html(s, result.tables))
    head.append("<h2>Groups</h2><ul>" + "".join(toc) + "</ul>")
    if s.get("warnings"):
        head.append(
            f'<p class="warn">{len(s["warnings"])} warning(s); see each group and summary.json.</p>'
        )
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(head + body)
        + "</body></html>"
    )


def write_report(result: AnalysisResult, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``report.html`` into ``out_dir`` (atomically).

    Args:
        result: The analysis.
        out_dir: Output folder (created if needed).

    Returns:
        The path of the report.
    """
    return atomic_write_text(Path(out_dir) / "report.html", render_report(result))


# --------------------------------------------------------------------------------------------
# RLMF evaluation (``metacog rlmf eval``): a self-contained section, from its summary JSON
# --------------------------------------------------------------------------------------------

_RLMF_METRICS = (
    ("accuracy", "accuracy", True),
    ("ece", "ECE", False),
    ("brier", "Brier", False),
    ("auroc", "AUROC", True),
    ("mfg", "MFG", True),
    ("cmfg", "cMFG", True),
    ("cmfg_star", "cMFG*", True),
)
_RLMF_COLORS = {"after": "#1f77b4", "baseline": "#7f7f7f"}


def _rlmf_figure(runs: Mapping[str, Any]) -> Figure | None:
    """Reliability (stated confidence vs accuracy) and faithfulness (stated vs intrinsic)."""
    if not any(r.get("bins", {}).get("reliability") for r in runs.values()):
        return None
    fig, (ax1, ax2) = _figure(2, width=480.0, height=320.0)
    for ax in (ax1, ax2):
        ax.plot([0, 1], [0, 1], color="#bbbbbb", lw=1, ls="--")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
    for side, run in runs.items():
        color, label = _RLMF_COLORS.get(side, "#000000"), f"{side}: {run.get('model')}"
        for ax, key, (xk, yk) in (
            (ax1, "reliability", ("confidence", "accuracy")),
            (ax2, "faithfulness", ("intrinsic", "confidence")),
        ):
            bins = run.get("bins", {}).get(key) or []
            if not bins:
                continue
            most = max(b["n"] for b in bins)
            radius = [marker_radius(20 + 180 * b["n"] / most) for b in bins]
            xs, ys = [b[xk] for b in bins], [b[yk] for b in bins]
            ax.plot(xs, ys, color=color, alpha=0.6)
            ax.scatter(
                xs,
                ys,
                radius=radius,
                color=color,
                label=label,
                tips=[f"{b['n']} items" for b in bins],
            )
    ax1.set(xlabel="stated confidence (bin mean)", ylabel="accuracy", title="factual calibration")
    ax2.set(
        xlabel="intrinsic confidence: agreement of sampled answers",
        ylabel="stated confidence (bin mean)",
        title="faithful calibration",
    )
    ax1.legend()
    if not any(r.get("bins", {}).get("faithfulness") for r in runs.values()):
        ax2.text(0.5, 0.5, "no item with two sampled answers", color="#8a5a00")
    return fig


def rlmf_eval_section(summary: Mapping[str, Any]) -> str:
    """The RLMF evaluation (``metacog rlmf eval``'s JSON) as an HTML section.

    Args:
        summary: ``rlmf_eval.json``: ``probe``, ``runs`` (``after`` and optionally
            ``baseline``, each with ``model``, counts, ``metrics`` and ``bins``),
            ``comparison`` (per metric: ``after``, ``baseline``, ``difference``, ``ci_low``,
            ``ci_high``, ``better``, ``worse``; and ``n_items``), ``n_bootstrap``, ``notes``.

    Returns:
        An ``<h2 id="rlmf-eval">`` section: sizes, the metric table, the two figures.
    """
    runs = summary.get("runs") or {}
    comp = summary.get("comparison") or None
    parts = [
        '<h2 id="rlmf-eval">RLMF evaluation: factual and faithful calibration</h2>',
        '<p class="muted">Stated confidence: the verbal confidence of the '
        f"{html.escape(str(summary.get('probe')))} probe. Factual calibration compares it with "
        "correctness (ECE over 10 equal-width bins, Brier, AUROC); faithful calibration with "
        "the intrinsic confidence, the share of the item's sampled answers that agree with the "
        "answer (MFG: mean of 1 - |stated - intrinsic|; cMFG: its mean over 10 bins of intrinsic "
        "confidence, bins with answers only; cMFG*: equal-mass bins weighted by width).</p>",
    ]
    sizes = [
        f"<li>{html.escape(side)}: {html.escape(str(r.get('model')))}, {r.get('n_items')} items, "
        f"{r.get('n_attempts')} answers, {r.get('n_items_sampled')} items with sampled answers"
        "</li>"
        for side, r in runs.items()
    ]
    parts.append("<ul>" + "".join(sizes) + "</ul>")
    rows = []
    for key, label, higher in _RLMF_METRICS:
        row: dict[str, Any] = {"metric": label, "better": "higher" if higher else "lower"}
        for side, r in runs.items():
            row[side] = (r.get("metrics") or {}).get(key)
        if comp and key in comp:
            c = comp[key]
            row["difference (paired)"] = c.get("difference")
            row["95% interval"] = f"[{_fmt(c.get('ci_low'))}, {_fmt(c.get('ci_high'))}]"
            row["verdict"] = "better" if c.get("better") else "worse" if c.get("worse") else "–"
        rows.append(row)
    table = pd.DataFrame(rows)
    for col in table.columns:
        if col not in ("metric", "better", "95% interval", "verdict"):
            table[col] = pd.to_numeric(table[col], errors="coerce")
    if comp:
        parts.append(
            f'<p class="muted">Differences are after minus baseline on the {comp.get("n_items")} '
            f"items both graded, with percentile intervals from {summary.get('n_bootstrap')} "
            "paired bootstrap resamples of items.</p>"
        )
    parts.append(_table(table))
    parts.append(_img(_rlmf_figure(runs), "reliability and faithfulness diagrams"))
    for note in summary.get("notes") or ():
        parts.append(f'<p class="warn">{html.escape(str(note))}</p>')
    return "\n".join(parts)


def render_rlmf_eval_report(summary: Mapping[str, Any], *, title: str = "RLMF evaluation") -> str:
    """A self-contained page holding :func:`rlmf_eval_section`."""
    inputs = ", ".join(map(str, summary.get("inputs") or [])) or "(in memory)"
    base = ", ".join(map(str, summary.get("baseline_inputs") or []))
    head = (
        f"<h1>{html.escape(title)}</h1>"
        f'<p class="muted">inputs: {html.escape(inputs)}'
        + (f"; baseline: {html.escape(base)}" if base else "")
        + "</p>"
    )
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        + head
        + rlmf_eval_section(summary)
        + "</body></html>"
    )
