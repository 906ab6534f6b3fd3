"""The demo's report: a terminal table, and ``report.html`` with its plots (matplotlib, Jinja2)."""

from __future__ import annotations

import base64
import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from rlmf_plugin.evaluate import METRICS

__all__ = ["result_text", "write_report"]

_COLORS = {"sft": "#999999", "correctness": "#ff7f0e", "standard": "#1f77b4", "rlmf": "#2ca02c"}
_SHOWN = ("mfg", "cmfg", "cmfg_star", "accuracy", "auroc", "brier", "ece")


def _f(x: Any, digits: int = 3) -> str:
    return (
        "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}f}"
    )


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figures(result) -> list[tuple[str, str]]:
    from matplotlib.figure import Figure

    names = ["sft", *result.settings["arms"]]
    figs = []
    fig = Figure(figsize=(10, 3.2), layout="constrained")
    axes = fig.subplots(1, 4)
    for ax, m in zip(axes, ("mfg", "cmfg", "accuracy", "brier")):
        for i, name in enumerate(names):
            vals = [p["metrics"][m] for p in result.policies if p["arm"] == name]
            ax.bar(i, np.nanmean(vals), color=_COLORS.get(name, "#555"), alpha=0.6)
            ax.plot([i] * len(vals), vals, "o", color="#222", ms=3)
        ax.set_xticks(range(len(names)), names, rotation=30)
        ax.set_title(METRICS[m][0])
    figs.append(("Each policy (bars: mean over seeds; dots: seeds)", _png(fig)))
    fig = Figure(figsize=(5.5, 4.2), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], ls="--", color="#999", lw=1)
    for name in names:
        pts: dict[int, list[tuple[float, float, int]]] = {}
        for p in result.policies:
            if p["arm"] == name:
                for b in p["bins"]:
                    pts.setdefault(b["bin"], []).append((b["intrinsic"], b["stated"], b["n"]))
        xs = [np.average([x for x, _, _ in v], weights=[n for _, _, n in v]) for v in pts.values()]
        ys = [np.average([y for _, y, _ in v], weights=[n for _, _, n in v]) for v in pts.values()]
        order = np.argsort(xs)
        ax.plot(np.array(xs)[order], np.array(ys)[order], "o-", color=_COLORS.get(name), label=name)
    ax.set_xlabel("intrinsic confidence (agreement among own samples)")
    ax.set_ylabel("stated confidence")
    ax.legend(frameon=False)
    figs.append(("Faithfulness: stated against intrinsic confidence", _png(fig)))
    fig = Figure(figsize=(10, 3.2), layout="constrained")
    axes = fig.subplots(1, 2)
    for key, curve in result.curves.items():
        arm = key.split("/")[0]
        steps = [c["step"] for c in curve]
        for ax, field in zip(axes, ("faithful", "correct")):
            vals = [np.nan if c[field] is None else c[field] for c in curve]
            ax.plot(steps, vals, color=_COLORS.get(arm), alpha=0.7, label=arm)
    for ax, title in zip(axes, ("faithfulness reward", "correctness reward")):
        ax.set_title(f"training: {title}")
        ax.set_xlabel("GRPO step")
        handles, labels = ax.get_legend_handles_labels()
        seen = dict(zip(labels, handles))
        ax.legend(seen.values(), seen.keys(), frameon=False)
    figs.append(("Training curves (each seed)", _png(fig)))
    return figs


def write_report(out_dir: Path, result) -> Path:
    """Write ``report.html`` (plots embedded) to ``out_dir``."""
    from metacog_metrics import atomic_write_text
    from rlmf_plugin.report import _environment

    s = result.settings
    arms = {
        name: {
            **{m: f"{_f(row[m]['mean'])} ± {_f(row[m]['sd'])}" for m in _SHOWN},
            "format": _f(row["format_rate"], 2),
            "slope": _f(row.get("slope", math.nan), 2),
        }
        for name, row in result.arms.items()
    }
    comparisons = {
        name: {
            m: {
                "text": f"{_f(c[m]['difference'])} [{_f(c[m]['ci_low'])}, {_f(c[m]['ci_high'])}]",
                "cls": "better" if c[m]["better"] else "worse" if c[m]["worse"] else "",
            }
            for m in _SHOWN
        }
        for name, c in result.comparisons.items()
    }
    html = (
        _environment()
        .get_template("rlmf_demo.html.j2")
        .render(
            n_items=result.n_items,
            split=s["split"],
            k=s["k"],
            seeds=s["seeds"],
            rl_steps=s["rl_steps"],
            prompts=s["prompts_per_step"],
            group=s["group"],
            bootstrap=s["bootstrap"],
            metrics=_SHOWN,
            labels={m: METRICS[m][0] for m in _SHOWN},
            arms=arms,
            comparisons=comparisons,
            figures=_figures(result),
        )
    )
    return atomic_write_text(Path(out_dir) / "report.html", html)


def result_text(result) -> str:
    """The terminal table: each policy's metrics, then RLMF minus each baseline."""
    head = f"{'policy':12s}" + "".join(f"{METRICS[m][0]:>16s}" for m in _SHOWN)
    lines = [head + f"{'format':>8s}{'slope':>7s}"]
    for name, row in result.arms.items():
        cells = "".join(f"{_f(row[m]['mean']) + ' ±' + _f(row[m]['sd'], 2):>16s}" for m in _SHOWN)
        slope = _f(row.get("slope", math.nan), 2)
        lines.append(f"{name:12s}{cells}{_f(row['format_rate'], 2):>8s}{slope:>7s}")
    lines.append("")
    lines.append("RLMF minus baseline, 95% paired bootstrap interval (* excludes 0)")
    for name, c in result.comparisons.items():
        cells = []
        for m in _SHOWN:
            mark = "*" if c[m]["better"] or c[m]["worse"] else " "
            lo, hi = _f(c[m]["ci_low"], 2), _f(c[m]["ci_high"], 2)
            cells.append(f"{_f(c[m]['difference'], 3):>7s}{mark}[{lo},{hi}]")
        lines.append(f"{name:22s}" + "  ".join(cells))
    t = result.timings
    lines.append("")
    lines.append("seconds: " + ", ".join(f"{k} {v}" for k, v in t.items()))
    return "\n".join(lines)
