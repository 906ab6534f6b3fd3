"""The page's inline-solving and surface-feature-probe sections, as template contexts.

They read the analysis's ``inline_solving`` and ``text_probes`` entries and its tables: the
text analyses hand the analysis no result objects of their own (only those entries and tables).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics.report._format import ci_text, fmt, pct
from metacog_metrics.report.tables import (
    PROBE_NAMES,
    PROBE_SETS,
    Table,
    inline_types_table,
    model_label,
    probe_table,
)

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


def _inline_group_text(entry: Mapping[str, Any]) -> str:
    share = entry.get("inline_share")
    parts = [f"{pct(share, 1)} of this group's (item, model) cells are inline-solved."]
    types = {row.get("pair_type"): row for row in entry.get("pair_types") or []}
    rnr = types.get("R-NR")
    if rnr is None:
        parts.append("There are no R-NR pairs.")
        return " ".join(parts)
    with_ci = entry.get("rnr_tau_with_ci")
    parts.append(
        f"R-NR mean tau-b: {fmt(rnr.get('mean_tau_with'))} on all items"
        + (f" ({ci_text(with_ci)})" if with_ci and with_ci[0] is not None else "")
        + f", {fmt(rnr.get('mean_tau_without'))} without the inline-solved items"
    )
    drop = entry.get("rnr_tau_drop")
    if drop is not None:
        parts[-1] += f": a drop of {fmt(drop)} ({ci_text(entry.get('rnr_tau_drop_ci'))})"
    lost = entry.get("rnr_share_lost")
    if lost is not None:
        parts[-1] += (
            f", which is {pct(lost)} of the R-NR signal "
            f"({ci_text(entry.get('rnr_share_lost_ci'), percent=True)})."
        )
    else:
        why = entry.get("rnr_share_lost_reason") or "not computed"
        parts[-1] += f". Share of the signal lost: not given ({why})."
    return " ".join(parts)


def inline_section(
    entry: Mapping[str, Any], tables: Mapping[str, pd.DataFrame], render: Render
) -> TextSection:
    """The inline-solving section from the analysis's ``inline_solving`` entry and tables."""
    from metacog_metrics.report import figures

    if entry.get("status") != "ok":
        return TextSection("absent", reason=str(entry.get("reason", "not run")))
    groups = []
    for bench, labels in (entry.get("groups") or {}).items():
        for label, group in labels.items():
            if group.get("status") != "ok":
                groups.append(InlineGroup(bench, label, "absent", str(group.get("reason", ""))))
                continue
            if not group.get("inline_share"):
                groups.append(InlineGroup(bench, label, "none flagged"))
                continue
            types = pd.DataFrame(group.get("pair_types") or [])
            figure = render(
                figures.inline_pairs_figure(types, f"{bench} / {label}: pair types"),
                "pair types with and without inline items",
            )
            groups.append(
                InlineGroup(
                    bench,
                    label,
                    "ok",
                    _inline_group_text(group),
                    figure,
                    None if types.empty else inline_types_table(types),
                )
            )
    return TextSection(
        "ok",
        facts={"n_inline": entry.get("n_inline"), "n_texts": entry.get("n_texts")},
        figure=render(
            figures.inline_rates_figure(tables.get("inline_rates")), "inline-solving rates"
        ),
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


def probes_section(
    entry: Mapping[str, Any], tables: Mapping[str, pd.DataFrame], render: Render
) -> TextSection:
    """The surface-feature-probe section from the analysis's ``text_probes`` entry and table."""
    from metacog_metrics.report import figures

    if entry.get("status") != "ok":
        return TextSection("absent", reason=str(entry.get("reason", "not run")))
    notes = (
        [f"Not run: {'; '.join(f'{k} ({v})' for k, v in entry['missing'].items())}"]
        if entry.get("missing")
        else []
    )
    notes += [str(n) for n in entry.get("notes") or []]
    table = tables.get("text_probes")
    groups = []
    if table is not None and not table.empty:
        sets = list(entry.get("sets") or [])
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
    return TextSection(
        "ok", facts={"folds": entry.get("folds")}, notes=tuple(notes), groups=tuple(groups)
    )
