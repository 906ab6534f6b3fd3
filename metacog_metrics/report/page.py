"""``report.html``: the analysis as one self-contained page, from Jinja2 templates.

The templates (``templates/*.html.j2``, shipped with the package) escape every value they are
given (autoescaping); the only markup passed in is the figures' SVG, which
:mod:`~metacog_metrics.report._mpl` writes from matplotlib's output and escapes itself. The page
needs nothing beside it: styles and figures are inline, it links to no other file or site.

The page reads the result objects only, never the summary dict: the findings are the analysis'
own (:attr:`~metacog_metrics.analyze.AnalysisResult.findings`, the list the terminal prints, with
its caveats), each group's section is built from the group's result objects
(:class:`~metacog_metrics.analyze.GroupAnalysis`), the header from the run's options, inputs and
warnings, and the text sections from the text analyses' results
(:mod:`~metacog_metrics.report.text_sections`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import pandas as pd
from markupsafe import Markup

from metacog_metrics._io import atomic_write_text
from metacog_metrics.analyze.options import POOLED
from metacog_metrics.report import tables as tb
from metacog_metrics.report.text_sections import TextSection, inline_section, probes_section

if TYPE_CHECKING:
    from metacog_metrics.analyze import AnalysisResult, GroupAnalysis, SmallGapControl

__all__ = ["GroupView", "render_report", "write_report"]


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment: autoescaping on, an unknown name is an error."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("metacog_metrics.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@dataclasses.dataclass(frozen=True)
class GroupView:
    """What the page shows of one group (text, tables and inline figures)."""

    anchor: str
    benchmark: str
    label: str
    confidence_kind: str
    binarized_at: float | None
    skipped: str | None
    n_complete: int
    key_figures: tb.Table | None
    figures: tuple[Markup, ...]
    coverage: tb.Table | None
    per_model: tb.Table | None
    pair_types: tb.Table | None
    warnings: tuple[str, ...]

    @property
    def status(self) -> str:
        """``"skipped"`` or ``"ok"``, as in ``summary.json``."""
        return "skipped" if self.skipped else "ok"


class _Figures:
    """Writes a page's figures as inline SVG, each with an id prefix of its own."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, drawing: Any, alt: str) -> str:
        from metacog_metrics.report._mpl import to_svg

        self.count += 1
        return to_svg(drawing, alt, prefix=f"f{self.count}-")


def _group_view(g: GroupAnalysis, svg: _Figures, gap: SmallGapControl | None) -> GroupView:
    from metacog_metrics.report import figures as fg

    builders = (
        []
        if g.skipped
        else [
            (fg.structure_figure, "scree and loadings"),
            (fg.heatmap_figure, "tetrachoric matrices"),
            (fg.null_figure, "pairwise nulls and delta curve"),
        ]
    )
    builders.append((fg.calibration_figure, "per-model calibration"))
    svgs = (svg(build(g), alt) for build, alt in builders)
    return GroupView(
        anchor=f"{g.benchmark}-{g.label}",
        benchmark=g.benchmark,
        label=g.label,
        confidence_kind=g.confidence_kind,
        binarized_at=g.binarized_at,
        skipped=g.skipped,
        n_complete=g.matrices.n_items,
        key_figures=None if g.skipped else tb.key_figures(g, gap),
        figures=tuple(Markup(s) for s in svgs if s),
        coverage=tb.coverage_table(g),
        per_model=tb.per_model_table(g),
        pair_types=tb.pair_types_table(g),
        warnings=tuple(g.warnings),
    )


def _figures_safe(section: TextSection) -> TextSection:
    """The section with its figures marked as markup (they are SVG, escaped when written)."""
    groups = tuple(
        dataclasses.replace(grp, figure=Markup(grp.figure)) if grp.figure else grp
        for grp in section.groups
    )
    return dataclasses.replace(section, figure=Markup(section.figure), groups=groups)


def render_report(result: AnalysisResult, *, title: str = "metacog-eval report") -> str:
    """Render the analysis as one self-contained HTML page.

    Args:
        result: The analysis.
        title: Page title.

    Returns:
        The HTML text.
    """
    opts = result.options
    run = {
        "n_records": len(result.records),
        "n_models": len(pd.unique(result.records["model"])) if len(result.records) else 0,
        "inputs": ", ".join(result.inputs) or "(in memory)",
        "permutations": opts.permutations,
        "joint_permutations": opts.joint_permutations,
        "seed": opts.seed,
        "n_warnings": len(result.warnings),
    }
    page = environment().get_template("report.html.j2")
    svg = _Figures()
    findings = result.findings
    if findings is None:  # a result built by hand: the findings of its groups
        from metacog_metrics.analyze import analysis_findings

        findings = analysis_findings(result.groups, result.options)
    gaps = {
        gf.group: gf.small_gap
        for gf in (findings.headline, *findings.others)
        if gf is not None and gf.small_gap is not None
    }
    return page.render(
        title=title,
        run=run,
        findings=findings,
        groups=[
            _group_view(g, svg, gaps.get(f"{g.benchmark}/{g.label}"))
            for g in sorted(result.groups.values(), key=lambda g: g.benchmark != POOLED)
        ],  # the pooled group first, as in the findings (the sort is stable)
        inline=_figures_safe(inline_section(result.inline_solving, svg)),
        probes=_figures_safe(probes_section(result.text_probes, svg)),
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
