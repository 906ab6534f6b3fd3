"""The report's tables, built from the analysis's result objects as rows of display text.

A :class:`Table` holds text only: the templates lay it out (and escape it); numbers are
formatted here, a gap (None, NaN, pandas' NA) shows as an en dash.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metacog_metrics.pairwise.nulls import get_null, headline_null
from metacog_metrics.report._format import fmt, p_text, pct
from metacog_metrics.report._nulls import PRIVATE_SIGNAL, null_label

if TYPE_CHECKING:
    from metacog_metrics.analyze import GroupAnalysis, SmallGapControl

__all__ = [
    "GAP",
    "Table",
    "coverage_table",
    "inline_types_table",
    "key_figures",
    "model_label",
    "pair_items",
    "pair_types_table",
    "per_model_table",
    "probe_table",
    "table",
]

#: What a missing value shows as.
GAP = "\u2013"

#: The per-model table's columns, in order.
PER_MODEL_COLUMNS = (
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
PROBE_SETS = ("internal", "pop", "Q", "M", "P", "QM", "QP", "QMP")
PROBE_NAMES = {"internal": "Internal", "pop": "Pop"}
INLINE_TYPE_COLUMNS = {
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


@dataclasses.dataclass(frozen=True)
class Table:
    """A table as text: a header row and body rows of the same length."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        """Columns and rows as lists."""
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows]}

    def column(self, name: str) -> list[str]:
        """The cells of column ``name``."""
        k = self.columns.index(name)
        return [r[k] for r in self.rows]


def cell(value: Any, digits: int = 3) -> str:
    """One value as table text: floats with ``digits`` decimals, integers whole, gaps a dash."""
    if value is None or value is pd.NA or value is pd.NaT:
        return GAP
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return GAP if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def table(frame: pd.DataFrame, digits: int = 3) -> Table:
    """A DataFrame as a :class:`Table` (its index left out)."""
    rows = tuple(tuple(cell(v, digits) for v in row) for row in frame.itertuples(index=False))
    return Table(tuple(str(c) for c in frame.columns), rows)


def model_label(model: Any, reasoning: Any) -> str:
    """The model's name, marked "(R)" when flagged as reasoning (a Python or NumPy True; a
    missing flag, None or NaN, is no mark)."""
    return f"{model} (R)" if isinstance(reasoning, bool | np.bool_) and reasoning else str(model)


def _rows(columns: Sequence[str], rows: Iterable[Sequence[Any]], digits: int = 3) -> Table:
    return Table(tuple(columns), tuple(tuple(cell(v, digits) for v in r) for r in rows))


# --------------------------------------------------------------------------------------------
# One group
# --------------------------------------------------------------------------------------------


def pair_items(g: GroupAnalysis) -> np.ndarray:
    """Items each pair with a tau-b rests on (the pairwise section's basis)."""
    pw = g.pairwise
    if pw is None:
        return np.zeros(0, dtype=int)
    items = pw.n_items_pair if pw.n_items_pair is not None else np.full(pw.n_pairs, pw.n_items)
    return np.asarray(items)[np.isfinite(pw.tau)]


def _whole(x: Any) -> str:
    return "n/a" if x is None else str(int(x))


def key_figures(g: GroupAnalysis, gap: SmallGapControl | None = None) -> Table:
    """The group's headline numbers, one per row (with its small-gap control, when given)."""
    mat, pw, al = g.matrices, g.pairwise, g.alignment
    conf, corr = g.confidence, g.correctness
    n_cov = 0 if g.coverage is None else len(g.coverage)
    union = g.all_items.n_items if g.all_items is not None else mat.n_items
    per = pair_items(g)
    lo, med, hi = (
        (int(per.min()), float(np.median(per)), int(per.max())) if per.size else (None, None, None)
    )

    def share(sec: Any) -> str:
        return fmt(None if sec is None or sec.eigen is None else sec.eigen.first_share)

    def basis(sec: Any) -> str:
        return "n/a" if sec is None else str(len(sec.tetrachoric.names))

    rows: list[tuple[str, str]] = [
        ("models in the cross-model analyses", f"{mat.n_models} of {n_cov or mat.n_models}"),
        ("items (any included model)", str(union)),
        (
            "items per pair (pairwise sections): min / median / max",
            f"{_whole(lo)} / {fmt(med, 0)} / {_whole(hi)}",
        ),
        (
            "complete-case items (factor scores, alignment"
            + (", private-signal test)" if g.private_signal is not None else ")"),
            str(mat.n_items),
        ),
        (
            f"first-factor share, confidence ({conf.method if conf else 'tetrachoric'}, "
            f"{basis(conf)} models)",
            share(conf),
        ),
        (
            f"first-factor share, correctness ({corr.method if corr else 'tetrachoric'}, "
            f"{basis(corr)} models)",
            share(corr),
        ),
        (
            "quadratic R^2 of loadings on thresholds, confidence",
            fmt(None if conf is None or conf.eigen is None else conf.eigen.quadratic_r2),
        ),
        ("mean pairwise tau-b", fmt(None if pw is None else pw.mean_tau)),
    ]
    nulls = [] if pw is None else [(n, r.mean, r.p_value) for n, r in pw.nulls.items()]
    ps = g.private_signal
    if ps is not None:
        nulls.append((PRIVATE_SIGNAL, ps.null_mean, ps.p_value))
    rows += [(f"  {null_label(n)}: mean, {p_text(p)}", fmt(m)) for n, m, p in nulls]
    if ps is not None:
        rows.append(("  private-signal test: its basis", ps.basis_text()))
        rows.append(
            ("  private-signal test: shift detected with 80% power", fmt(ps.detectable_shift))
        )
    if gap is not None:
        rows += [
            (f"small-gap control: mean tau-b of the {gap.n_pairs} pairs within {gap.delta:g} "
             "accuracy", fmt(gap.mean_tau) if gap.verdict != "too_few_pairs"
             else f"n/a (fewer than {gap.min_pairs} pairs)"),
            (f"  {null_label(gap.null)}: 95% band, {p_text(gap.p_value)}",
             f"{fmt(gap.null_low)} to {fmt(gap.null_high)}"),
        ]  # fmt: skip
    head = headline_null()
    by_dir = (
        pw.fdr_share_by_direction(head)
        if pw is not None and pw.permutations and head in pw.per_pair
        else {}
    )
    rows += [
        (
            f"share of pairs significant after FDR ({get_null(head).short_label})",
            fmt(None if pw is None else pw.fdr_significant_share),
        ),
        (
            "  of them above / below the null",
            f"{fmt(by_dir.get('above'))} / {fmt(by_dir.get('below'))}",
        ),
        ("factor alignment r, all complete-case items", fmt(None if al is None else al.all.r)),
        ("factor alignment r, contentious items", fmt(None if al is None else al.contentious.r)),
        ("contentious items", _whole(None if al is None else al.contentious.n_items)),
    ]
    return Table(("figure", "value"), tuple(rows))


def coverage_table(g: GroupAnalysis) -> Table | None:
    """Each model's usable items and share, and whether it is in the cross-model analyses."""
    if g.coverage is None or g.coverage.empty:
        return None
    cov = g.coverage[["model", "n_items", "share", "included", "reason"]].copy()
    cov["included"] = cov["included"].map({True: "yes", False: "no"})
    return table(cov)


def per_model_table(g: GroupAnalysis) -> Table | None:
    """Per-model calibration: accuracy, yes-rate, AUROCs, Brier, ECE, AURC; a model whose own
    AUROC is at most :data:`~metacog_metrics.analyze.findings.INVERTED_AUROC` is flagged
    "inverted" (its confidence is higher on the items it gets wrong)."""
    from metacog_metrics.analyze.findings import INVERTED_AUROC

    per = g.calibration.per_model
    if not per:
        return None

    def flag(c: Any) -> str:
        a = c.auroc_internal
        return "inverted" if a is not None and math.isfinite(a) and a <= INVERTED_AUROC else ""

    return _rows(
        ("model", *PER_MODEL_COLUMNS, "flag"),
        ([m, *(getattr(c, k) for k in PER_MODEL_COLUMNS), flag(c)] for m, c in per.items()),
    )


def pair_types_table(g: GroupAnalysis) -> Table | None:
    """Mean tau-b and each null's p-value by reasoning pair type (R-R, R-NR, NR-NR)."""
    if g.pairwise is None or not g.pairwise.pair_types:
        return None
    types = g.pairwise.pair_types
    nulls = list(dict.fromkeys(n for s in types.values() for n in s.p_value))
    return _rows(
        ("pair type", "pairs", "mean tau", *(f"p ({null_label(n)})" for n in nulls)),
        ([t, s.n_pairs, s.mean_tau, *(s.p_value.get(n) for n in nulls)] for t, s in types.items()),
    )


# --------------------------------------------------------------------------------------------
# Text analyses
# --------------------------------------------------------------------------------------------


def inline_types_table(types: pd.DataFrame) -> Table:
    """Pair types with and without the inline-solved items."""
    keys = [k for k in INLINE_TYPE_COLUMNS if k in types]

    def show(key: str, v: Any) -> str:
        if key.startswith("fdr_share"):
            return pct(v)
        if key.startswith("mean_items"):
            return fmt(v, 1)
        if "tau" in key:
            return fmt(v, 3)
        return cell(v)

    rows = (tuple(show(k, row[k]) for k in keys) for _, row in types.iterrows())
    return Table(tuple(INLINE_TYPE_COLUMNS[k] for k in keys), tuple(rows))


def probe_table(t: pd.DataFrame, model_names: Sequence[str]) -> Table:
    """Per model the AUROC of each score set, with the median over models as the last row."""
    sets = [s for s in PROBE_SETS if f"auroc_{s}" in t and t[f"auroc_{s}"].notna().any()]
    columns = ("model", "items", *(PROBE_NAMES.get(s, s) for s in sets))
    rows = [
        (m, f"{n:.0f}", *(cell(float(v)) for v in vals))
        for m, n, *vals in zip(
            model_names, t["n_items"], *(t[f"auroc_{s}"] for s in sets), strict=True
        )
    ]
    median = (
        "median",
        f"{float(t['n_items'].median()):.0f}",
        *(cell(float(t[f"auroc_{s}"].median())) for s in sets),
    )
    return Table(columns, (*rows, median))
