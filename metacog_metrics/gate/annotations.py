"""GitHub Actions workflow commands (``::error``/``::warning``) for the verdict."""

from __future__ import annotations

from metacog_metrics.gate._format import cases
from metacog_metrics.gate.decision import GateVerdict

__all__ = ["github_annotations"]


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, title: str, message: str) -> str:
    return f"::{kind} title={_escape_property(title)}::{_escape_data(message)}"


def github_annotations(verdict: GateVerdict, *, limit: int | None = None) -> list[str]:
    """GitHub Actions workflow commands (``::error``/``::warning``) for the verdict.

    Regressions are aggregated per benchmark and metric, inconclusive tests into one warning,
    and each kind is capped at ``limit`` lines (the last one says how many more there are);
    GitHub shows at most 10 of each kind per step.

    Args:
        verdict: The gate's verdict.
        limit: Most lines per kind (default the config's ``max_annotations``).

    Returns:
        The lines to print on standard output.
    """
    cap = limit or verdict.config.max_annotations

    def capped(items: list[tuple[str, str]], kind: str, what: str) -> list[str]:
        if len(items) > cap:
            rest = items[cap - 1 :]
            parts = [title.removeprefix("metacog gate: ") for title, _ in rest]
            if len(set(parts)) < len(parts):  # the titles do not tell them apart
                parts = [message for _, message in rest]
            summary = "; ".join(parts)
            if len(summary) > 2000:
                summary = summary[:2000] + " ..."
            items = [*items[: cap - 1], (f"metacog gate: {len(rest)} more {what}", summary)]
        return [_command(kind, title, message) for title, message in items]

    errors: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = []
    if verdict.status == "error":
        errors = [("metacog gate: unusable input", r) for r in verdict.refusals]
    for case in cases(verdict.failed):
        first = case.tests[0]
        more = len(case.tests) - 1
        message = (
            first.group + ": " + first.reason + (f" (and {more} more probe/kind)" if more else "")
        )
        errors.append((f"metacog gate: {case.benchmark} {case.metric} regressed", message))
    inconclusive = verdict.inconclusive
    if inconclusive:
        names = ", ".join(f"{c.benchmark} {c.metric}" for c in cases(inconclusive))
        passing = verdict.config.inconclusive == "pass"
        warnings.append(
            (
                f"metacog gate: {len(inconclusive)} inconclusive test(s)",
                f"{names}: the run cannot decide these tests"
                + (" (passing: set inconclusive: fail to exit 3)" if passing else ""),
            )
        )
    weak = verdict.underpowered
    if weak:
        names = ", ".join(
            f"{t.group} {t.metric} (catches {t.detectable:.3f})" for t in weak[:20]
        ) + (f" and {len(weak) - 20} more" if len(weak) > 20 else "")
        warnings.append(
            (
                f"metacog gate: {len(weak)} underpowered test(s)",
                f"{names}: passed, but a change just beyond the margin would pass too; more items "
                "(or `metacog gate plan`) tell how many",
            )
        )
    warnings += [("metacog gate: warning", w) for w in verdict.warnings]
    return capped(errors, "error", "problem(s)") + capped(warnings, "warning", "warning(s)")
