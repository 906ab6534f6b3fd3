"""``report.html``: the analysis as plots and tables in one self-contained page.

The page embeds its figures as PNG (matplotlib, Agg backend), so it can be attached to a CI run
or mailed without its folder. :func:`headline_findings` condenses a ``summary.json`` into the
few sentences that ``metacog analyze`` and ``metacog demo`` print.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metacog_metrics._io import atomic_write_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from metacog_metrics.analyze import AnalysisResult, GroupAnalysis

__all__ = ["headline_findings", "render_report", "write_report"]

_NULL_LABELS = {
    "base_rate": "base-rate-matched null",
    "calibration_preserving": "calibration-preserving null",
    "stratified": "difficulty-stratified null",
}
_COLORS = {"confidence": "#1f77b4", "correctness": "#d62728", "observed": "#000000"}
_NULL_COLORS = {
    "base_rate": "#7f7f7f",
    "calibration_preserving": "#ff7f0e",
    "stratified": "#2ca02c",
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


def _basis(groups: Sequence[tuple[str, str, Mapping[str, Any]]], models=None) -> str:
    """How many models and items a finding rests on."""
    n_models = models if models is not None else [g.get("n_models") for _, _, g in groups]
    n_items = [g.get("n_items") for _, _, g in groups]
    return f"{_range(n_models, digits=0)} models x {_range(n_items, digits=0)} items"


def _parabola(section: Mapping[str, Any]) -> str:
    """What the loadings-vs-thresholds quadratic shows, named only when the fit supports it.

    "An inverted parabola" needs at least :data:`PARABOLA_MIN_THRESHOLDS` distinct thresholds,
    ``c2 < 0``, the vertex inside the thresholds' range and a fit worth naming (R^2 at least
    :data:`PARABOLA_MIN_R2`, F-test p below :data:`PARABOLA_MAX_P`); otherwise it says what was
    seen. Thresholds follow psych (``tau = Phi^-1(P(x = 0))``): on a yes-rate axis the curve is
    mirrored.
    """
    e = section.get("eigen") or {}
    tet = section.get("tetrachoric") or {}
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
    n_conf = [len(g["confidence"].get("tetrachoric", {}).get("models") or []) for _, _, g in groups]
    shares = [g["confidence"].get("eigen", {}).get("first_share") for _, _, g in groups]
    basis = _basis(groups, n_conf)
    if len(groups) == 1:
        shape = shapes[0]
    else:
        named = sum(1 for t in shapes if t.startswith("an inverted parabola"))
        shape = f"an inverted parabola (by the rule in the schema) in {named} of {len(groups)}"
    out.append(
        f"Shared difficulty ({where}; {basis}): the first factor carries "
        f"{_range(shares, pct=True)} of the tetrachoric confidence variance; PC1 loadings "
        f"against the models' thresholds (psych's tau = Phi^-1(P(confidence = 0)), so a high "
        f"threshold is a low yes-rate): {shape}."
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
        )
        st = nulls.get("stratified")
        if st and st.get("p_value") is not None:
            verdict = "above" if st["p_value"] < alpha else "not above"
            part += (
                f"; {verdict} the difficulty-stratified null ({_fmt(st.get('mean'))}, "
                f"one-sided {_p(st['p_value'])}; exact only under a Rasch model, it over-rejects "
                f"with unequal discrimination or guessing, so it is no test of private signal)"
            )
        part += f" ({_basis([(bench, label, g)])})"
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
        out.append(
            f"Confidence factor vs capability factor over items ({where}; {_basis(groups)}): "
            f"Pearson r "
            f"{_range([a for a, _ in al])} on all items, {_range([c for _, c in al])} on the "
            f"contentious items (yes-rate and pass-rate within the bounds)."
        )
    return out


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _figure(ncols: int, width: float = 5.2, height: float = 3.8) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, axes


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    return base64.b64encode(buf.getvalue()).decode("ascii")


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
            "o-",
            color=_COLORS[name],
            label=f"{name} (first share {sec.eigen.first_share:.0%})",
        )
        tau, load = np.asarray(sec.eigen.thresholds), np.asarray(sec.eigen.loadings)
        ax2.scatter(tau, load, color=_COLORS[name], label=name, s=22)
        q = sec.eigen.quadratic
        if q is not None and np.isfinite(q.r2):
            grid = np.linspace(tau.min(), tau.max(), 100)
            c0, c1, c2 = q.coef
            ax2.plot(
                grid,
                c0 + c1 * grid + c2 * grid**2,
                color=_COLORS[name],
                lw=1.2,
                label=f"quadratic fit, R$^2$ = {q.r2:.2f}",
            )
    ax1.axhline(1.0, color="0.6", lw=0.8, ls=":")
    ax1.set(xlabel="component", ylabel="eigenvalue", title="Scree of the tetrachoric matrices")
    ax1.legend(fontsize=8)
    ax2.set(
        xlabel=r"response threshold $\tau = \Phi^{-1}(P(x=0))$",
        ylabel="PC1 loading",
        title="PC1 loadings against thresholds",
    )
    ax2.legend(fontsize=8)
    return fig


def _heatmap_figure(g: GroupAnalysis) -> Figure | None:
    if g.confidence is None or len(g.confidence.tetrachoric.names) < 2:
        return None
    fig, axes = _figure(2, width=5.4, height=4.8)
    for ax, name in zip(axes, ("confidence", "correctness"), strict=True):
        sec = getattr(g, name)
        if sec is None or len(sec.tetrachoric.names) < 2:
            ax.set_axis_off()
            continue
        tet = sec.tetrachoric
        order = np.argsort(tet.tau)
        rho = np.asarray(tet.rho)[np.ix_(order, order)]
        names = [tet.names[i] for i in order]
        im = ax.imshow(rho, vmin=-1, vmax=1, cmap="RdBu_r")
        # Past 50 models the names no longer fit (and laying out hundreds of tick labels is
        # most of the report's time): every k-th one, at most 50 an axis.
        step = -(-len(names) // 50)
        ticks = np.arange(0, len(names), step)
        size = 7 if len(names) <= 25 else 5
        ax.set_xticks(ticks, [names[i] for i in ticks], rotation=90, fontsize=size)
        ax.set_yticks(ticks, [names[i] for i in ticks], fontsize=size)
        ax.set_title(f"Tetrachoric {name} (models by threshold)")
        fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def _null_figure(g: GroupAnalysis) -> Figure | None:
    pw = g.pairwise
    if pw is None or not pw.nulls:
        return None
    fig, (ax1, ax2) = _figure(2)
    for null, res in pw.nulls.items():
        draws = np.asarray(res.draws, dtype=float)
        draws = draws[np.isfinite(draws)]
        if draws.size:
            ax1.hist(
                draws,
                bins=40,
                alpha=0.55,
                color=_NULL_COLORS.get(null),
                label=f"{_NULL_LABELS.get(null, null)} ({_p(res.p_value)})",
            )
    st = g.stratified
    if st is not None:
        sdraws = np.asarray(st.draws, dtype=float)
        sdraws = sdraws[np.isfinite(sdraws)]
        if sdraws.size:
            ax1.hist(
                sdraws,
                bins=40,
                alpha=0.55,
                color=_NULL_COLORS["stratified"],
                label=f"{_NULL_LABELS['stratified']} (one-sided {_p(st.p_value)})",
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
    ax1.legend(fontsize=8)

    dc = pw.delta_curve
    delta = np.asarray(dc.delta, dtype=float)
    ax2.plot(delta, dc.mean_tau, "o-", color=_COLORS["observed"], label="observed")
    for null in dc.null_mean:
        lo, hi = np.asarray(dc.null_low[null]), np.asarray(dc.null_high[null])
        ax2.fill_between(
            delta,
            lo,
            hi,
            color=_NULL_COLORS.get(null),
            alpha=0.25,
            label=f"{_NULL_LABELS.get(null, null)} (95%)",
        )
        ax2.plot(delta, dc.null_mean[null], color=_NULL_COLORS.get(null), lw=1)
    ax2.axhline(0, color="0.6", lw=0.8, ls=":")
    ax2.set(
        xlabel=r"allowed accuracy gap $\delta$ = |acc$_A$ - acc$_B$|",
        ylabel="mean tau-b of pairs within delta",
        title="Mean tau as the gap shrinks",
    )
    ax2.legend(fontsize=8)
    return fig


def _calibration_figure(g: GroupAnalysis) -> Figure | None:
    per = g.calibration.per_model
    if not per:
        return None
    fig, (ax1, ax2) = _figure(2, height=max(3.8, 0.22 * len(per) + 1.5))
    models = list(per)
    y = np.arange(len(models))
    internal = np.array([per[m].auroc_internal for m in models], dtype=float)
    pop = np.array([per[m].auroc_pop for m in models], dtype=float)
    ax1.scatter(
        internal, y, color=_COLORS["confidence"], label="Internal (own confidence)", zorder=3
    )
    ax1.scatter(
        pop,
        y,
        color=_NULL_COLORS["calibration_preserving"],
        marker="s",
        label="Pop (leave-one-out population mean)",
        zorder=3,
    )
    for i in range(len(models)):
        ax1.plot([internal[i], pop[i]], [i, i], color="0.7", lw=1, zorder=1)
    ax1.axvline(0.5, color="0.6", lw=0.8, ls=":")
    ax1.set_yticks(y, models, fontsize=7 if len(models) <= 25 else 5)
    ax1.invert_yaxis()
    ax1.set(xlabel="AUROC for correctness", title="Per-model AUROC: own vs population")
    ax1.legend(fontsize=7, loc="best", framealpha=0.8)

    al = g.alignment
    if al is not None and al.all.confidence_scores.size:
        mask = np.asarray(al.contentious_mask, dtype=bool)
        cs, ps = np.asarray(al.all.confidence_scores), np.asarray(al.all.correctness_scores)
        ax2.scatter(
            ps[~mask], cs[~mask], s=10, color="0.6", label=f"all items, r = {_fmt(al.all.r, 2)}"
        )
        ax2.scatter(
            ps[mask],
            cs[mask],
            s=14,
            color=_COLORS["correctness"],
            label=f"contentious (own factor fit: r = {_fmt(al.contentious.r, 2)})",
        )
        ax2.set(
            xlabel="capability factor-1 score (correctness)",
            ylabel="confidence factor-1 score",
            title="Factor alignment over items",
        )
        ax2.legend(fontsize=8)
    else:
        ax2.set_axis_off()
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
img{max-width:100%}.warn{color:#8a5a00}.muted{color:#777;font-size:.9em}
ul.findings li{margin:.4em 0}
"""


def _table(df: pd.DataFrame, digits: int = 3) -> str:
    return df.to_html(
        index=False, float_format=lambda v: f"{v:.{digits}f}", na_rep="–", border=0, escape=True
    )


def _img(fig: Figure | None, alt: str) -> str:
    if fig is None:
        return ""
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{_png(fig)}">'


def _key_figures(group: Mapping[str, Any]) -> pd.DataFrame:
    conf, corr = group.get("confidence", {}), group.get("correctness", {})
    pw = group.get("pairwise", {})
    al = group.get("factor_alignment", {})
    nulls = pw.get("nulls", {})
    rows = [
        ("models x items (complete case)", f"{group.get('n_models')} x {group.get('n_items')}"),
        ("items dropped (missing for some model)", group.get("n_items_dropped")),
        ("first-factor share, confidence", _fmt(conf.get("eigen", {}).get("first_share"))),
        ("first-factor share, correctness", _fmt(corr.get("eigen", {}).get("first_share"))),
        (
            "quadratic R^2 of loadings on thresholds, confidence",
            _fmt(conf.get("eigen", {}).get("quadratic_r2")),
        ),
        ("mean pairwise tau-b", _fmt(pw.get("mean_tau"))),
    ]
    for null in ("base_rate", "calibration_preserving", "stratified"):
        if null in nulls:
            n = nulls[null]
            label = f"  {_NULL_LABELS[null]}: mean, {_p(n.get('p_value'))}"
            rows.append((label, _fmt(n.get("mean"))))
    rows += [
        ("share of pairs significant after FDR (base-rate)", _fmt(pw.get("fdr_significant_share"))),
        ("factor alignment r, all items", _fmt(al.get("all", {}).get("r"))),
        ("factor alignment r, contentious items", _fmt(al.get("contentious", {}).get("r"))),
        ("contentious items", al.get("contentious", {}).get("n_items")),
    ]
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
    "mean_tau_with": "mean tau, all items",
    "mean_tau_without": "mean tau, without inline",
    "median_tau_with": "median, all",
    "median_tau_without": "median, without",
    "mean_items_without": "items kept (mean)",
    "fdr_share_with": "FDR-significant, all",
    "fdr_share_without": "FDR-significant, without",
}


def _absent(title: str, anchor: str, reason: str) -> str:
    return (f'<h2 id="{anchor}">{html.escape(title)}</h2>'
            f'<p class="warn">Not shown: {html.escape(reason)}.</p>')  # fmt: skip


def _inline_rates_figure(rates: pd.DataFrame) -> Figure | None:
    if rates is None or rates.empty:
        return None
    wide = rates.pivot_table(index="model", columns="benchmark", values="inline_rate",
                             sort=False)  # fmt: skip
    flags = rates.groupby("model", sort=False)["reasoning"].first() if "reasoning" in rates \
        else pd.Series(dtype=object)  # fmt: skip
    labels = [f"{m} (R)" if flags.get(m) is True else str(m) for m in wide.index]
    fig, (ax,) = _figure(1, width=max(7.0, 1.1 * wide.shape[1] + 4.0),
                         height=max(3.0, 0.26 * len(wide) + 1.6))  # fmt: skip
    im = ax.imshow(wide.to_numpy(dtype=float), vmin=0, vmax=1, cmap="Purples", aspect="auto")
    ax.set_xticks(np.arange(wide.shape[1]), [str(c) for c in wide.columns], rotation=30,
                  ha="right", fontsize=8)  # fmt: skip
    ax.set_yticks(np.arange(len(labels)), labels, fontsize=8 if len(labels) <= 30 else 6)
    for (i, j), v in np.ndenumerate(wide.to_numpy(dtype=float)):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.0%}", ha="center", va="center", fontsize=8,
                    color="white" if v > 0.6 else "black")  # fmt: skip
    ax.set_title("Rationales flagged as inline solving\n(R): reasoning model", fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def _inline_pairs_figure(types: pd.DataFrame, title: str) -> Figure | None:
    if types is None or types.empty:
        return None
    fig, (ax,) = _figure(1, width=5.6, height=3.6)
    x = np.arange(len(types))
    ax.bar(x - 0.2, types["mean_tau_with"], 0.4, color=_COLORS["confidence"],
           label="all items")  # fmt: skip
    ax.bar(x + 0.2, types["mean_tau_without"], 0.4, color="0.65",
           label="without inline-solved items")  # fmt: skip
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xticks(x, [f"{t}\n({n} pairs)" for t, n in zip(types["pair_type"], types["n_pairs"])])
    ax.set(ylabel="mean pairwise tau-b", title=title)
    ax.legend(fontsize=8)
    return fig


def _inline_html(summary: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> str:
    sec = summary.get("inline_solving") or {}
    title, anchor = "Inline solving", "inline-solving"
    if sec.get("status") != "ok":
        return _absent(title, anchor, sec.get("reason", "not run"))
    parts = [
        f'<h2 id="{anchor}">{title}</h2>',
        f'<p class="muted">{sec.get("n_inline")} of {sec.get("n_texts")} probe rationales '
        "flagged: they work the item out (arithmetic, equations, numbered derivation steps, "
        "code, an answer stated inside the rationale) instead of judging it. Without those "
        "items (per pair: the items neither model solved inline) the pairwise analysis is "
        "repeated by pair type.</p>",
        _img(_inline_rates_figure(tables.get("inline_rates")), "inline-solving rates"),
    ]
    for bench, labels in (sec.get("groups") or {}).items():
        for label, entry in labels.items():
            head = f"<h3>{html.escape(bench)} / {html.escape(label)}</h3>"
            if entry.get("status") != "ok":
                parts.append(head + f'<p class="warn">Pair types not shown: '
                             f'{html.escape(entry.get("reason", ""))}.</p>')  # fmt: skip
                continue
            types = pd.DataFrame(entry.get("pair_types") or [])
            lost = entry.get("rnr_share_lost")
            lo, hi = (entry.get("rnr_share_lost_ci") or [None, None])[:2]
            if lost is None:
                why = html.escape(str(entry.get("rnr_share_lost_reason")))
                what = f"R-NR share lost: n/a ({why})"
            else:
                what = (
                    f"R-NR signal that disappears without the inline-solved items: {lost:.0%} "
                    f"(95% item bootstrap {_fmt(lo, 2)} to {_fmt(hi, 2)})"
                )
            drop = entry.get("rnr_tau_drop")
            if drop is not None:
                dlo, dhi = (entry.get("rnr_tau_drop_ci") or [None, None])[:2]
                what += (f"; R-NR mean tau-b falls by {drop:.3f} (95% item bootstrap "
                         f"{_fmt(dlo, 3)} to {_fmt(dhi, 3)})")  # fmt: skip
            share = entry.get("inline_share")
            share = "n/a" if share is None else f"{share:.1%}"
            parts.append(head + f"<p>{what}; {share} of the group's (item, model) cells are "
                         "inline-solved.</p>")  # fmt: skip
            parts.append(_img(_inline_pairs_figure(types, f"{bench} / {label}: pair types"),
                              "pair types with and without inline items"))  # fmt: skip
            if not types.empty:
                shown = types.rename(columns=_INLINE_TYPE_COLUMNS)[
                    [v for k, v in _INLINE_TYPE_COLUMNS.items() if k in types]
                ]
                parts.append(_table(shown))
    return "\n".join(p for p in parts if p)


def _probe_figure(t: pd.DataFrame, title: str) -> Figure | None:
    if t.empty:
        return None
    cols = [c for c in ("internal", "pop", "M", "QMP") if t[f"auroc_{c}"].notna().any()]
    models = list(t["model"])
    fig, (ax1, ax2) = _figure(2, height=max(3.8, 0.24 * len(models) + 1.6))
    y = np.arange(len(models))
    for k, c in enumerate(cols):
        off = (k - (len(cols) - 1) / 2) * 0.18
        v = t[f"auroc_{c}"].to_numpy(dtype=float)
        lo = v - t[f"auroc_{c}_low"].to_numpy(dtype=float)
        hi = t[f"auroc_{c}_high"].to_numpy(dtype=float) - v
        err = np.vstack([np.nan_to_num(lo), np.nan_to_num(hi)])
        ax1.errorbar(v, y + off, xerr=err, fmt="o", ms=4, lw=0.8, capsize=0,
                     color=_PROBE_COLORS[c], label=dict(_PROBE_COLUMNS).get(c, c))  # fmt: skip
    ax1.axvline(0.5, color="0.6", lw=0.8, ls=":")
    ax1.set_yticks(y, [f"{m} (R)" if r is True else str(m)
                       for m, r in zip(models, t["reasoning"])],
                   fontsize=8 if len(models) <= 25 else 6)  # fmt: skip
    ax1.invert_yaxis()
    ax1.set(xlabel="AUROC for correctness (95% item bootstrap)", title=title)
    ax1.legend(fontsize=7, loc="best", framealpha=0.8)
    names = [c for c in ("internal", "pop", "Q", "M", "P", "QM", "QP", "QMP")
             if t[f"auroc_{c}"].notna().any()]  # fmt: skip
    data = [t[f"auroc_{c}"].dropna().to_numpy() for c in names]
    box = ax2.boxplot(data, patch_artist=True, widths=0.6)
    for patch, c in zip(box["boxes"], names, strict=True):
        patch.set_facecolor(_PROBE_COLORS[c])
        patch.set_alpha(0.6)
    ax2.set_xticks(np.arange(1, len(names) + 1), [dict(_PROBE_COLUMNS).get(c, c) for c in names])
    ax2.axhline(0.5, color="0.6", lw=0.8, ls=":")
    ax2.set(ylabel="AUROC across models", title="Own confidence, population and text probes")
    return fig


def _probes_html(summary: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> str:
    sec = summary.get("text_probes") or {}
    title, anchor = "Surface-feature probes", "text-probes"
    if sec.get("status") != "ok":
        return _absent(title, anchor, sec.get("reason", "not run"))
    table = tables.get("text_probes")
    parts = [
        f'<h2 id="{anchor}">{title}</h2>',
        '<p class="muted">AUROC for correctness of an L2 logistic regression on ~40 lexical '
        "features (hedges, negations, causal words, self-correction, difficulty words, lengths "
        "and counts) of the question (Q), the probe rationale without its verdict (M) and the "
        f"solve trace (P), cross-validated ({sec.get('folds')} folds grouped by item), beside "
        "Internal (the model's own confidence) and Pop (the other models' mean confidence on "
        "the item). Intervals are in tables/text_probes.csv.</p>",
    ]
    if sec.get("missing"):
        parts.append('<p class="warn">Not run: ' + html.escape("; ".join(
            f"{k} ({v})" for k, v in sec["missing"].items())) + ".</p>")  # fmt: skip
    if table is None or table.empty:
        return "\n".join([*parts, '<p class="warn">No group had enough graded items.</p>'])
    for (bench, label), t in table.groupby(["benchmark", "label"], sort=False):
        parts.append(f"<h3>{html.escape(str(bench))} / {html.escape(str(label))}</h3>")
        parts.append(_img(_probe_figure(t, f"{bench} / {label}"), "text probe AUROCs"))
        cols = {"model": "model", "n_items": "items"}
        cols.update({f"auroc_{k}": v for k, v in _PROBE_COLUMNS if f"auroc_{k}" in t})
        shown = t[list(cols)].rename(columns=cols)
        parts.append(_table(shown))
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
