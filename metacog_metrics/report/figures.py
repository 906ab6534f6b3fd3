"""The report's figures, drawn with matplotlib from the analysis's result objects.

Each builder returns a :class:`~metacog_metrics.report._mpl.Drawing` (or None when there is
nothing to draw); :func:`~metacog_metrics.report._mpl.to_svg` turns it into the page's inline
SVG. Importing this module imports matplotlib: the page imports it only when it renders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from metacog_metrics.report._format import fmt, p_text
from metacog_metrics.report._mpl import PT, Drawing, clean, new_figure, styled, text_size
from metacog_metrics.report._nulls import PRIVATE_SIGNAL, null_colour, null_label
from metacog_metrics.report.tables import PROBE_NAMES, model_label

if TYPE_CHECKING:
    from metacog_metrics.analyze import GroupAnalysis

__all__ = [
    "MAX_SCATTER_POINTS",
    "calibration_figure",
    "heatmap_figure",
    "inline_pairs_figure",
    "inline_rates_figure",
    "null_figure",
    "probe_figure",
    "structure_figure",
]

#: Past this many points a scatter panel shows a seeded random subsample, and its legend says so
#: (the factor-alignment panel has one point per item: 50,000 items would make a 3 MB figure).
MAX_SCATTER_POINTS = 3000

COLORS = {"confidence": "#1f77b4", "correctness": "#d62728", "observed": "#000000"}
#: Pop, the leave-one-out population mean confidence.
POP_COLOR = "#ff7f0e"
GREY = "#999999"
PROBE_COLORS = {
    "internal": COLORS["confidence"],
    "pop": POP_COLOR,
    "Q": "#8c564b",
    "M": "#2ca02c",
    "P": "#9467bd",
    "QM": "#17becf",
    "QP": "#bcbd22",
    "QMP": "#d62728",
}

#: Two panels side by side fill the page's width (1080 CSS pixels).
WIDTH = 1080.0
HEIGHT = 370.0


def label_size(n: int) -> float:
    """Font size (pt) of ``n`` model names along an axis."""
    return 8.0 if n <= 25 else 7.0 if n <= 50 else 6.0


def rows_height(n: int, minimum: float = 370.0) -> float:
    """Height (px) of a figure with one row per model."""
    return max(minimum, (18.0 if n <= 25 else 13.0 if n <= 50 else 10.0) * n + 110.0)


def subsample(sizes: Sequence[int], cap: int = MAX_SCATTER_POINTS, seed: int = 0) -> list[Any]:
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


def _finite(*arrays: Any) -> np.ndarray:
    ok = np.ones(len(arrays[0]), dtype=bool)
    for a in arrays:
        ok &= np.isfinite(np.asarray(a, dtype=float))
    return ok


# --------------------------------------------------------------------------------------------
# One group
# --------------------------------------------------------------------------------------------


@styled
def structure_figure(g: GroupAnalysis) -> Drawing | None:
    """Scree of both correlation matrices; PC1 loadings against thresholds with the quadratic."""
    sections = {"confidence": g.confidence, "correctness": g.correctness}
    if not any(s is not None and s.eigen is not None for s in sections.values()):
        return None
    d, (ax1, ax2) = new_figure(WIDTH, HEIGHT, ncols=2)
    for name, sec in sections.items():
        if sec is None or sec.eigen is None:
            continue
        ev = np.asarray(sec.eigen.eigenvalues, dtype=float)
        ax1.plot(
            np.arange(1, ev.size + 1),
            ev,
            color=COLORS[name],
            marker="o",
            ms=4,
            label=f"{name} (first share {sec.eigen.first_share:.0%})",
        )
        tau = np.asarray(sec.eigen.thresholds, dtype=float)
        load = np.asarray(sec.eigen.loadings, dtype=float)
        ok = _finite(tau, load)
        points = ax2.scatter(tau[ok], load[ok], s=22, color=COLORS[name], label=name)
        d.tip(points, [n for n, keep in zip(sec.eigen.names, ok, strict=True) if keep])
        q = sec.eigen.quadratic
        if q is not None and np.isfinite(q.r2) and ok.any():
            grid = np.linspace(tau[ok].min(), tau[ok].max(), 100)
            c0, c1, c2 = q.coef
            ax2.plot(
                grid,
                c0 + c1 * grid + c2 * grid**2,
                color=COLORS[name],
                lw=1.2,
                label=f"quadratic fit, R\u00b2 = {q.r2:.2f}",
            )
    ax1.axhline(1.0, color=GREY, lw=0.8, ls=":")
    ax1.set(xlabel="component", ylabel="eigenvalue", title="Scree of the correlation matrices")
    ax1.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    ax1.legend()
    numeric = g.confidence is not None and g.confidence.method == "polychoric"
    ax2.set(
        xlabel="response threshold \u03c4 = \u03a6\u207b\u00b9(P(x = 0))"
        + ("\n(numeric confidence: x = 0 below the pooled median, ties half)" if numeric else ""),
        ylabel="PC1 loading",
        title="PC1 loadings against thresholds",
    )
    ax2.legend()
    return d


def _ticks(d: Drawing, ax: Any, names: Sequence[str], size: float) -> None:
    """Every name up to 50 models; past that every k-th, so that they do not touch."""
    step = max(1, math.ceil(len(names) / 50))
    pos = list(range(0, len(names), step))
    d.names(ax, "x", pos, [names[i] for i in pos], size=size, rotation=90)
    d.names(ax, "y", pos, [names[i] for i in pos], size=size)


@styled
def heatmap_figure(g: GroupAnalysis) -> Drawing | None:
    """Both correlation matrices, models ordered by threshold: side by side, or one above the
    other where long names leave side-by-side matrices too little room."""
    if g.confidence is None or len(g.confidence.tetrachoric.names) < 2:
        return None
    sections = [(name, getattr(g, name)) for name in ("confidence", "correctness")]
    present = [(k, s) for k, s in sections if s is not None and len(s.tetrachoric.names) >= 2]
    names = {clean(m) for _, s in present for m in s.tetrachoric.names}
    n = len(g.confidence.tetrachoric.names)
    size = label_size(n)
    label = max(text_size(m, size)[0] for m in names) + 16.0
    need = n * 1.2 * size * PT  # rows of names that do not touch
    room = WIDTH / 2 - label - 100.0  # a matrix's side beside the other
    if n <= 50 and need > room:  # one above the other, each as tall as its names need
        side = max(360.0, need)
        d, axes = new_figure(
            min(WIDTH, label + side + 110.0), len(present) * (side + label + 40), nrows=len(present)
        )
        pairs = list(zip(axes, present, strict=True))
    else:
        d, axes = new_figure(WIDTH, max(room, 250.0) + label + 40.0, ncols=2)
        pairs = list(zip(axes, sections, strict=True))
    for ax, (name, sec) in pairs:
        if sec is None or len(sec.tetrachoric.names) < 2:
            ax.axis("off")
            continue
        tet = sec.tetrachoric
        order = np.argsort(tet.tau)
        rho = np.asarray(tet.rho, dtype=float)[np.ix_(order, order)]
        image = ax.imshow(
            rho, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="none", aspect="auto"
        )
        _ticks(d, ax, [str(tet.names[i]) for i in order], size)
        ax.set_title(f"{sec.method.capitalize()} {name} (models by threshold)")
        d.colorbar(ax, image)
        d.panel(ax).square = True
    return d


def _style(null: str) -> dict[str, Any]:
    return {"color": null_colour(null)}


@styled
def null_figure(g: GroupAnalysis) -> Drawing | None:
    """The observed mean tau against each null's joint draws; the mean tau as delta shrinks."""
    pw = g.pairwise
    if pw is None or not pw.nulls:
        return None
    d, (ax1, ax2) = new_figure(WIDTH, HEIGHT + 40.0, ncols=2)
    hists = [(null, res.draws, f"({p_text(res.p_value)})") for null, res in pw.nulls.items()]
    st = g.private_signal
    if st is not None:
        hists.append((PRIVATE_SIGNAL, st.draws, f"(one-sided {p_text(st.p_value)})"))
    for null, draws, p in hists:
        x = np.asarray(draws, dtype=float)
        x = x[np.isfinite(x)]
        if x.size:
            ax1.hist(
                x,
                bins=40,
                alpha=0.55,
                histtype="stepfilled",
                **_style(null),
                label=f"{null_label(null)} {p}",
            )
    if np.isfinite(pw.mean_tau):
        ax1.axvline(
            pw.mean_tau, color=COLORS["observed"], lw=2, label=f"observed mean = {pw.mean_tau:.3f}"
        )
    ax1.set(
        xlabel="mean Kendall tau-b over pairs",
        ylabel="joint null draws",
        title="Observed mean tau against the nulls",
    )
    d.legend_below(ax1, ncols=2)

    dc = pw.delta_curve
    delta = np.asarray(dc.delta, dtype=float)
    ax2.plot(delta, dc.mean_tau, color=COLORS["observed"], marker="o", ms=4, label="observed")
    for null in dc.null_mean:
        ax2.fill_between(
            delta,
            dc.null_low[null],
            dc.null_high[null],
            alpha=0.25,
            **_style(null),
            label=f"{null_label(null)} (95%)",
        )
        ax2.plot(delta, dc.null_mean[null], lw=1, **_style(null))
    ax2.axhline(0, color=GREY, lw=0.8, ls=":")
    ax2.set(
        xlabel="allowed accuracy gap \u03b4 = |acc(A) \u2212 acc(B)|",
        ylabel="mean tau-b of pairs within \u03b4",
        title="Mean tau as the gap shrinks",
    )
    ax2.legend()
    return d


@styled
def calibration_figure(g: GroupAnalysis) -> Drawing | None:
    """Per-model AUROC, own confidence against the population's; factor alignment over items."""
    per = g.calibration.per_model
    if not per:
        return None
    models = list(per)
    n = len(models)
    d, (ax1, ax2) = new_figure(WIDTH, rows_height(n) + 40.0, ncols=2)
    y = np.arange(n, dtype=float)
    internal = np.array([per[m].auroc_internal for m in models], dtype=float)
    pop = np.array([per[m].auroc_pop for m in models], dtype=float)
    names = [clean(m) for m in models]
    ax1.hlines(y, internal, pop, color="#b3b3b3", lw=1)
    for values, style in (
        (internal, {"color": COLORS["confidence"], "label": "Internal (own confidence)"}),
        (pop, {"color": POP_COLOR, "marker": "s", "label": "Pop (leave-one-out population mean)"}),
    ):
        ok = np.isfinite(values)
        points = ax1.scatter(values[ok], y[ok], s=30, **style)
        d.tip(points, [m for m, keep in zip(names, ok, strict=True) if keep])
    ax1.axvline(0.5, color=GREY, lw=0.8, ls=":")
    d.names(ax1, "y", y, names, size=label_size(n))
    ax1.set_ylim(-0.6, n - 0.4)
    ax1.invert_yaxis()
    ax1.set(xlabel="AUROC for correctness", title="Per-model AUROC: own vs population")
    d.legend_below(ax1, ncols=2)

    al = g.alignment
    if al is not None and np.asarray(al.all.confidence_scores).size:
        mask = np.asarray(al.contentious_mask, dtype=bool)
        cs = np.asarray(al.all.confidence_scores, dtype=float)
        ps = np.asarray(al.all.correctness_scores, dtype=float)
        rest, cont = ~mask, mask
        n_rest, n_cont = int(rest.sum()), int(cont.sum())
        i_rest, i_cont = subsample([n_rest, n_cont])
        ax2.scatter(
            ps[rest][i_rest],
            cs[rest][i_rest],
            s=10,
            color=GREY,
            label=f"all items, r = {fmt(al.all.r, 2)}{_shown(n_rest, i_rest)}",
        )
        ax2.scatter(
            ps[cont][i_cont],
            cs[cont][i_cont],
            s=14,
            color=COLORS["correctness"],
            label=f"contentious (own factor fit: r = {fmt(al.contentious.r, 2)})"
            f"{_shown(n_cont, i_cont)}",
        )
        ax2.set(
            xlabel="capability factor-1 score (correctness)",
            ylabel="confidence factor-1 score",
            title="Factor alignment over items",
        )
        ax2.legend()
    else:
        ax2.axis("off")
    return d


# --------------------------------------------------------------------------------------------
# Text analyses
# --------------------------------------------------------------------------------------------


@styled
def inline_rates_figure(rates: pd.DataFrame | None) -> Drawing | None:
    """Each model's share of inline-solved rationales, per benchmark, as an annotated matrix."""
    if rates is None or rates.empty:
        return None
    wide = rates.pivot_table(index="model", columns="benchmark", values="inline_rate", sort=False)
    flags = (
        rates.groupby("model", sort=False)["reasoning"].first()
        if "reasoning" in rates
        else pd.Series(dtype=object)
    )
    labels = [model_label(m, flags.get(m)) for m in wide.index]
    n_rows, n_cols = wide.shape
    d, (ax,) = new_figure(
        min(1100.0, max(620.0, 110.0 * n_cols + 420.0)), rows_height(n_rows, minimum=260.0)
    )
    values = wide.to_numpy(dtype=float)
    image = ax.imshow(
        values, cmap="Purples", vmin=0.0, vmax=1.0, aspect="auto", interpolation="none"
    )
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            ax.text(
                j,
                i,
                f"{v:.0%}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if v > 0.55 else "#333333",
            )
    d.names(ax, "x", range(n_cols), [str(c) for c in wide.columns], rotation=30)
    d.names(ax, "y", range(n_rows), labels, size=label_size(n_rows))
    ax.set_title("Share of each model's rationales flagged as inline solving\n(R): reasoning model")
    d.colorbar(ax, image)
    return d


@styled
def inline_pairs_figure(types: pd.DataFrame | None, title: str) -> Drawing | None:
    """Mean pairwise tau-b by pair type, on all items and without the inline-solved ones."""
    if types is None or types.empty:
        return None
    d, (ax,) = new_figure(560.0, 300.0)
    x = np.arange(len(types), dtype=float)
    ax.bar(x - 0.2, types["mean_tau_with"], 0.4, color=COLORS["confidence"], label="all items")
    ax.bar(
        x + 0.2,
        types["mean_tau_without"],
        0.4,
        color="#a6a6a6",
        label="without inline-solved items",
    )
    ax.axhline(0, color="#4d4d4d", lw=0.8)
    for k, v in enumerate(types["mean_tau_without"]):
        if not np.isfinite(v):  # no pair of this type keeps enough items
            ax.text(k + 0.2, 0, "n/a", ha="center", va="bottom", fontsize=7, color="#666666")
    ax.set_xticks(
        x, [f"{t}\n({n} pairs)" for t, n in zip(types["pair_type"], types["n_pairs"], strict=True)]
    )
    ax.set_xlim(-0.6, len(types) - 0.4)
    ax.set(ylabel="mean pairwise tau-b (dconf vs dperf)", title=clean(title))
    ax.legend()
    return d


@styled
def probe_figure(t: pd.DataFrame, title: str) -> Drawing | None:
    """Per model, the AUROC of its own confidence, the population's and the text probes (with
    item-bootstrap intervals); their spread over models as box plots."""
    if t.empty:
        return None
    cols = [c for c in ("internal", "pop", "M", "QMP") if t[f"auroc_{c}"].notna().any()]
    n = len(t)
    d, (ax1, ax2) = new_figure(WIDTH, rows_height(n, minimum=380.0) + 30.0, ncols=2)
    y = np.arange(n, dtype=float)
    for k, c in enumerate(cols):
        off = (k - (len(cols) - 1) / 2) * 0.18
        x = t[f"auroc_{c}"].to_numpy(dtype=float)
        lo = t[f"auroc_{c}_low"].to_numpy(dtype=float)
        hi = t[f"auroc_{c}_high"].to_numpy(dtype=float)
        err = np.nan_to_num(np.vstack([x - lo, hi - x]), nan=0.0).clip(min=0.0)
        ok = np.isfinite(x)
        ax1.errorbar(
            x[ok],
            y[ok] + off,
            xerr=err[:, ok],
            fmt="o",
            ms=3.5,
            lw=1,
            color=PROBE_COLORS[c],
            label=PROBE_NAMES.get(c, c),
        )
    ax1.axvline(0.5, color=GREY, lw=0.8, ls=":")
    d.names(
        ax1,
        "y",
        y,
        [model_label(m, r) for m, r in zip(t["model"], t["reasoning"], strict=True)],
        size=label_size(n),
    )
    ax1.set_ylim(-0.6, n - 0.4)
    ax1.invert_yaxis()
    ax1.set(xlabel="AUROC for correctness (95% item bootstrap)", title=clean(title))
    d.legend_below(ax1, ncols=len(cols))
    names = [
        c
        for c in ("internal", "pop", "Q", "M", "P", "QM", "QP", "QMP")
        if t[f"auroc_{c}"].notna().any()
    ]
    boxes = ax2.boxplot(
        [t[f"auroc_{c}"].dropna().to_numpy() for c in names],
        patch_artist=True,
        medianprops={"color": "black"},
    )
    for patch, c in zip(boxes["boxes"], names, strict=True):
        patch.set(facecolor=PROBE_COLORS[c], alpha=0.6)
    ax2.set_xticks(np.arange(1, len(names) + 1), [PROBE_NAMES.get(c, c) for c in names])
    ax2.set_xlim(0.5, len(names) + 0.5)
    ax2.axhline(0.5, color=GREY, lw=0.8, ls=":")
    ax2.set(
        ylabel="AUROC for correctness, one point per model",
        title="Own confidence, population and text probes",
    )
    return d
