"""``metacog rlmf eval``'s page: factual and faithful calibration of a run, and of its baseline.

:func:`render_rlmf_eval_report` turns the evaluation's summary (what ``rlmf_eval.json`` holds)
into one self-contained HTML page from a Jinja2 template (autoescaping on), with its reliability
and faithfulness diagrams drawn by matplotlib on the non-interactive SVG canvas (no pyplot; text
kept as text) and inlined. matplotlib is imported only while a page is rendered.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Mapping
from typing import Any

import jinja2
from markupsafe import Markup

from rlmf_plugin.evaluate import METRICS

__all__ = ["render_rlmf_eval_report", "rlmf_eval_section"]

_COLORS = {"after": "#1f77b4", "baseline": "#7f7f7f"}
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: What a missing value shows as.
GAP = "\u2013"


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("rlmf_plugin", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _number(x: Any) -> float | None:
    """``x`` as a finite float, else None (missing, NaN, text)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def _cell(x: Any) -> str:
    v = _number(x)
    return GAP if v is None else f"{v:.3f}"


def _bound(x: Any) -> str:
    v = _number(x)
    return "n/a" if v is None else f"{v:.3f}"


def _text(x: Any) -> str:
    return _CONTROL.sub("\ufffd", str(x))


def _rlmf_figure(runs: Mapping[str, Any]) -> Any:
    """Reliability (stated confidence vs accuracy) and faithfulness (stated vs intrinsic), one
    marker per bin sized by its items; None without reliability bins."""
    if not any((r.get("bins") or {}).get("reliability") for r in runs.values()):
        return None
    import matplotlib as mpl
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    rc = {
        "svg.fonttype": "none",
        "text.parse_math": False,
        "font.size": 8.5,
        "axes.titlesize": 10.0,
        "legend.fontsize": 8.0,
    }
    with mpl.rc_context(rc):
        fig = Figure(figsize=(10.0, 4.4), layout="constrained")
        FigureCanvasSVG(fig)
        ax1, ax2 = fig.subplots(1, 2)
        for ax in (ax1, ax2):
            ax.plot([0, 1], [0, 1], color="#bbbbbb", lw=1, ls="--")
            ax.set(xlim=(0, 1), ylim=(0, 1))
        for side, run in runs.items():
            color = _COLORS.get(side, "#000000")
            label = _text(f"{side}: {run.get('model')}")
            for ax, key, (xk, yk) in (
                (ax1, "reliability", ("confidence", "accuracy")),
                (ax2, "faithfulness", ("intrinsic", "confidence")),
            ):
                bins = (run.get("bins") or {}).get(key) or []
                if not bins:
                    continue
                most = max(b["n"] for b in bins)
                xs, ys = [b[xk] for b in bins], [b[yk] for b in bins]
                ax.plot(xs, ys, color=color, alpha=0.6)
                ax.scatter(
                    xs, ys, s=[20 + 180 * b["n"] / most for b in bins], color=color, label=label
                )
        ax1.set(
            xlabel="stated confidence (bin mean)", ylabel="accuracy", title="factual calibration"
        )
        ax2.set(
            xlabel="intrinsic confidence: agreement of sampled answers",
            ylabel="stated confidence (bin mean)",
            title="faithful calibration",
        )
        ax1.legend()
        if not any((r.get("bins") or {}).get("faithfulness") for r in runs.values()):
            ax2.text(
                0.5,
                0.5,
                "no item with two sampled answers",
                color="#8a5a00",
                ha="center",
                va="center",
            )
    return fig


def _svg(fig: Any, title: str) -> str:
    """The figure as an inline ``<svg class="fig" role="img">`` titled ``title``."""
    if fig is None:
        return ""
    import matplotlib as mpl

    buf = io.StringIO()
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "rlmf-eval"}):
        fig.savefig(
            buf,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    head = text.index(">") + 1
    return (
        '<svg class="fig" role="img"'
        + text[len("<svg") : head]
        + str(Markup("<title>%s</title>") % title)
        + text[head:]
    )


def _metric_rows(summary: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    runs = summary.get("runs") or {}
    comp = summary.get("comparison") or None
    columns = ["metric", "better", *runs]
    if comp:
        columns += ["difference (paired)", "95% interval", "verdict"]
    rows = []
    for key, (label, higher) in METRICS.items():
        row = [label, "higher" if higher else "lower"]
        row += [_cell((r.get("metrics") or {}).get(key)) for r in runs.values()]
        if comp and key not in comp:
            row += [GAP, GAP, GAP]
        elif comp:
            c = comp[key] or {}
            verdict = "better" if c.get("better") else "worse" if c.get("worse") else GAP
            row += [
                _cell(c.get("difference")),
                f"[{_bound(c.get('ci_low'))}, {_bound(c.get('ci_high'))}]",
                verdict,
            ]
        rows.append(row)
    return columns, rows


def _section_context(summary: Mapping[str, Any]) -> dict[str, Any]:
    runs = summary.get("runs") or {}
    columns, rows = _metric_rows(summary)
    comp = summary.get("comparison") or None
    return {
        "probe": summary.get("probe"),
        "runs": [
            {
                "side": side,
                "model": r.get("model"),
                "n_items": r.get("n_items"),
                "n_attempts": r.get("n_attempts"),
                "n_items_sampled": r.get("n_items_sampled"),
            }
            for side, r in runs.items()
        ],
        "paired_items": comp.get("n_items") if comp else None,
        "n_bootstrap": summary.get("n_bootstrap"),
        "columns": columns,
        "rows": rows,
        "figure": Markup(_svg(_rlmf_figure(runs), "reliability and faithfulness diagrams")),
        "notes": [str(n) for n in summary.get("notes") or ()],
    }


def rlmf_eval_section(summary: Mapping[str, Any]) -> str:
    """The RLMF evaluation (``metacog rlmf eval``'s JSON) as an HTML section.

    Args:
        summary: ``rlmf_eval.json``: ``probe``, ``runs`` (``after`` and optionally
            ``baseline``, each with ``model``, counts, ``metrics`` and ``bins``),
            ``comparison`` (per metric: ``after``, ``baseline``, ``difference``, ``ci_low``,
            ``ci_high``, ``better``, ``worse``; and ``n_items``), ``n_bootstrap``, ``notes``.

    Returns:
        An ``<h2 id="rlmf-eval">`` section: sizes, the metric table, the two diagrams.
    """
    template = _environment().get_template("rlmf_eval_section.html.j2")
    return template.render(**_section_context(summary))


def render_rlmf_eval_report(summary: Mapping[str, Any], *, title: str = "RLMF evaluation") -> str:
    """A self-contained page holding :func:`rlmf_eval_section`, with its inputs.

    Args:
        summary: As for :func:`rlmf_eval_section`, plus ``inputs`` and ``baseline_inputs``.
        title: Page title.

    Returns:
        The HTML text.
    """
    return (
        _environment()
        .get_template("rlmf_eval.html.j2")
        .render(
            title=title,
            inputs=", ".join(map(str, summary.get("inputs") or [])) or "(in memory)",
            baseline=", ".join(map(str, summary.get("baseline_inputs") or [])),
            section=Markup(rlmf_eval_section(summary)),
        )
    )
