"""The page's inline-solving and surface-feature-probe sections, as template contexts.

They read the text analyses' result objects
(:class:`~metacog_metrics.analyze.InlineSolving`, :class:`~metacog_metrics.analyze.TextProbes`):
their numbers, tables and notes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metacog_metrics.report._format import ci_text, fmt, missing, pct
from metacog_metrics.report.tables import (
    PROBE_NAMES,
    PROBE_SETS,
    Table,
    inline_types_table,
    model_label,
    probe_table,
)

if TYPE_CHECKING:
    from metacog_metrics.analyze import InlineSolving, TextProbes
    from metacog_metrics.inline_solving import InlinePairTypes

__all__ = ["InlineGroup", "ProbeGroup", "TextSection", "inline_section", "probes_section"]

#: Turns a figure builder's result into inline SVG (the page passes its own).
Render = Callable[[Any, str], str]


@dataclasses.dataclass(frozen=True)
class InlineGroup:
    """One group of the inline-solving section."""

    benchmark: str
    label: str
    status: str  # "absent", "none flagged" or "ok"
    text: str = ""
    figure: str = ""
    table: Table | None = None


@dataclasses.dataclass(frozen=True)
class ProbeGroup:
    """One group of the surface-feature-probe section."""

    benchmark: str
    label: str
    text: str
    figure: str
    table: Table


@dataclasses.dataclass(frozen=True)
class TextSection:
    """A text section: absent (with the reason) or its parts."""

    status: str
    reason: str = ""
    facts: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    figure: str = ""
    notes: tuple[str, ...] = ()
    groups: tuple[Any, ...] = ()


def _inline_group_text(share: float | None, p: InlinePairTypes) -> str:
    parts = [f"{pct(share, 1)} of this group's (item, model) cells are inline-solved."]
    types = p.types
    rnr = types[types["pair_type"] == "R-NR"] if "pair_type" in types else types.iloc[:0]
    if rnr.empty:
        parts.append("There are no R-NR pairs.")
        return " ".join(parts)
    row = rnr.iloc[-1]  # the last, as a dict keyed by pair type would keep
    parts.append(
        f"R-NR mean tau-b: {fmt(row.get('mean_tau_with'))} on all items"
        + (f" ({ci_text(p.rnr_tau_with_ci)})" if not missing(p.rnr_tau_with_ci[0]) else "")
        + f", {fmt(row.get('mean_tau_without'))} without the inline-solved items"
    )
    if not missing(p.rnr_tau_drop):
        parts[-1] += f": a drop of {fmt(p.rnr_tau_drop)} ({ci_text(p.rnr_tau_drop_ci)})"
    if not missing(p.rnr_share_lost):
        parts[-1] += (
            f", which is {pct(p.rnr_share_lost)} of the R-NR signal "
            f"({ci_text(p.rnr_share_lost_ci, percent=True)})."
        )
    else:
        why = p.reason or "not computed"
        parts[-1] += f". Share of the signal lost: not given ({why})."
    return " ".join(parts)


def inline_section(section: InlineSolving | None, render: Render) -> TextSection:
    """The inline-solving section from the analysis' inline-solving result (None: not run)."""
    from metacog_metrics.report import figures

    if section is None or section.status != "ok":
        return TextSection("absent", reason=str(section.reason if section else "not run"))
    groups = []
    for bench, labels in section.by_benchmark().items():
        for label, group in labels.items():
            if group.pairs is None:
                groups.append(InlineGroup(bench, label, "absent", str(group.reason or "")))
                continue
            if missing(group.inline_share) or not group.inline_share:
                groups.append(InlineGroup(bench, label, "none flagged"))
                continue
            types = group.pairs.types
            figure = render(
                figures.inline_pairs_figure(types, f"{bench} / {label}: pair types"),
                "pair types with and without inline items",
            )
            groups.append(
                InlineGroup(
                    bench,
                    label,
                    "ok",
                    _inline_group_text(group.inline_share, group.pairs),
                    figure,
                    None if types.empty else inline_types_table(types),
                )
            )
    return TextSection(
        "ok",
        facts={"n_inline": section.n_inline, "n_texts": section.n_texts},
        figure=render(figures.inline_rates_figure(section.rates), "inline-solving rates"),
        groups=tuple(groups),
    )


def _probe_group_text(t: pd.DataFrame, sets: Sequence[str]) -> str:
    med = [
        f"{PROBE_NAMES.get(s, s)} {fmt(t[f'auroc_{s}'].median())}"
        for s in PROBE_SETS
        if t[f"auroc_{s}"].notna().any()
    ]
    own = t["auroc_internal"].to_numpy(dtype=float)
    above = []
    for s in ("pop", *[x for x in ("M", "QMP") if x in sets]):
        v = t[f"auroc_{s}"].to_numpy(dtype=float)
        ok = np.isfinite(v) & np.isfinite(own)
        if ok.any():
            above.append(
                f"{PROBE_NAMES.get(s, s)} for {int((v[ok] > own[ok]).sum())} of {int(ok.sum())}"
            )
    text = f"Median AUROC over {len(t)} model(s): {', '.join(med)}."
    if above:
        text += " Above the model's own Internal AUROC: " + "; ".join(above) + "."
    return text


def probes_section(section: TextProbes | None, render: Render) -> TextSection:
    """The surface-feature-probe section from the analysis' probes result (None: not run)."""
    from metacog_metrics.report import figures

    if section is None or section.status != "ok":
        return TextSection("absent", reason=str(section.reason if section else "not run"))
    fit = section.fit
    notes = (
        [f"Not run: {'; '.join(f'{k} ({v})' for k, v in fit.missing.items())}"]
        if fit.missing
        else []
    )
    notes += [str(n) for n in fit.notes]
    table = section.table
    groups = []
    if table is not None and not table.empty:
        sets = list(fit.sets)
        for (bench, label), t in table.groupby(["benchmark", "label"], sort=False):
            names = [model_label(m, r) for m, r in zip(t["model"], t["reasoning"], strict=True)]
            title = f"{bench} / {label}"
            groups.append(
                ProbeGroup(
                    str(bench),
                    str(label),
                    _probe_group_text(t, sets),
                    render(figures.probe_figure(t, title), "text probe AUROCs"),
                    probe_table(t, names),
                )
            )
    return TextSection("ok", facts={"folds": fit.folds}, notes=tuple(notes), groups=tuple(groups))
