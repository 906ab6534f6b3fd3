"""The verdict as plain text for the CI log."""

from __future__ import annotations

from collections.abc import Sequence

from metacog_metrics.gate._format import fmt, interval
from metacog_metrics.gate.decision import GateVerdict, MetricTest

__all__ = ["terminal_report"]

_HEADER = (
    "verdict",
    "test",
    "baseline",
    "candidate",
    "change",
    "interval",
    "margin",
    "detectable",
    "items",
)
_RIGHT = {"baseline", "candidate", "change", "detectable", "items"}


def _table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    right = {i for i, h in enumerate(header) if h in _RIGHT}

    def line(cells: Sequence[str]) -> str:
        parts = [
            str(c).rjust(widths[i]) if i in right else str(c).ljust(widths[i])
            for i, c in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _row(t: MetricTest) -> list[str]:
    detect = "" if t.detectable is None else f"{t.detectable:.3f}"
    mark = t.verdict.upper() if t.gated else "info"
    if t.gated and t.verdict == "pass" and t.underpowered:
        mark = "PASS*"
    return [
        mark,
        f"{t.group}: {t.metric}",
        fmt(t.baseline),
        fmt(t.candidate),
        fmt(t.change, True),
        interval(t),
        f"{t.margin:g}",
        detect,
        str(t.n_items),
    ]


def terminal_report(verdict: GateVerdict) -> str:
    """The verdict as plain text: headline, a table of every test, failures, warnings.

    Args:
        verdict: The gate's verdict.

    Returns:
        Text ending with the headline again (the last line of a CI log is what people read).
    """
    out = [verdict.headline(), ""]
    if verdict.status == "error":
        out.append("The gate refused to compare:")
        out.extend(f"  - {r}" for r in verdict.refusals)
    else:
        out.extend(_table([_row(t) for t in verdict.tests], _HEADER))
        out.append(
            f"rule: {verdict.config.rule}; interval: of the change candidate - baseline, at the "
            "Holm level of the test; detectable: the smallest change in the bad direction the "
            f"gate catches with {100 * verdict.config.power:g}% power"
            + ("; PASS*: passed, underpowered" if verdict.underpowered else "")
        )
        problems = [t for t in verdict.inconclusive if t.detectable is None]
        straddles = [t for t in verdict.inconclusive if t.detectable is not None]
        for title, tests in (
            ("Regressions", verdict.failed),
            ("Inconclusive", straddles),
            ("Cannot decide", problems),
        ):
            if tests:
                out += ["", f"{title}:"]
                out.extend(f"  - {t.group}: {t.reason}" for t in tests)
    if verdict.warnings:
        out += ["", "Warnings:"]
        out.extend(f"  - {w}" for w in verdict.warnings)
    out += ["", verdict.headline()]
    return "\n".join(out)
