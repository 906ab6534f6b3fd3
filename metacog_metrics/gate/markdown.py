"""The verdict as GitHub-flavoured Markdown (the job summary and the pull-request comment)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from metacog_metrics.gate._format import STATUS_MARK, counts, fmt, interval
from metacog_metrics.gate.decision import GateVerdict, MetricTest
from metacog_metrics.gate.metrics import METRICS

__all__ = ["MARKDOWN_LIMIT", "markdown_summary"]

#: Largest Markdown :func:`markdown_summary` writes (GitHub shows at most 1 MiB of a step's
#: summary, and a pull-request comment holds 65,536 characters: pass a smaller ``limit`` there).
MARKDOWN_LIMIT = 900 * 1024
_EMOJI = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "error": "⛔"}


def _cell(text: Any) -> str:
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _table(tests: Sequence[MetricTest], reason: bool) -> list[str]:
    header = ["test", "baseline", "candidate", "change", "interval", "margin", "detectable"]
    header.append("items")
    if reason:
        header.append("reason")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for t in tests:
        cells = [
            f"{t.group}: **{t.metric}**",
            fmt(t.baseline),
            fmt(t.candidate),
            fmt(t.change, True),
            interval(t),
            f"{t.margin:g}",
            fmt(t.detectable),
            str(t.n_items),
        ]
        if reason:
            cells.append(t.reason)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def _details(summary: str, body: Sequence[str]) -> list[str]:
    # The blank lines let GitHub render Markdown (tables, lists) inside the HTML block.
    return ["<details>", f"<summary>{_cell(summary)}</summary>", "", *body, "", "</details>", ""]


def _settings(verdict: GateVerdict) -> list[str]:
    c = verdict.config
    lines = [
        f"rule {c.rule}, alpha {c.alpha:g} (Holm over {sum(t.gated for t in verdict.tests)} "
        f"gated tests), {c.n_boot} bootstrap resamples, seed {c.seed}, pool: "
        f"{str(c.pool).lower()}, inconclusive: {c.inconclusive}, config fingerprint "
        f"`{verdict.config_fingerprint[:12]}`",
        "",
        "| metric | better | margin |",
        "|---|---|---|",
    ]
    better = {"higher": "higher", "lower": "lower", "two-sided": "unchanged"}
    for name in c.metrics:
        per = c.margins[name]
        margin = ", ".join(
            [f"{per['default']:g}"]
            + [f"{b} {m:g}" for b, m in sorted(per.items()) if b != "default"]
        )
        lines.append(f"| {name} | {better[METRICS[name].direction]} | {margin} |")
    return lines


def markdown_summary(verdict: GateVerdict, *, limit: int = MARKDOWN_LIMIT) -> str:
    """The verdict as GitHub-flavoured Markdown.

    Failures are shown; inconclusive, underpowered and passing tests, warnings and settings
    are folded in ``<details>``. Rows are left out (and counted) when the text would pass
    ``limit`` bytes.

    Args:
        verdict: The gate's verdict.
        limit: Largest size in bytes (UTF-8).

    Returns:
        The Markdown text.
    """
    status = verdict.status
    head = [
        f"## {_EMOJI[status]} metacog gate: {STATUS_MARK[status]} (exit {verdict.exit_code})",
        "",
    ]
    if status == "error":
        head += ["The gate refused to compare the runs:", ""]
        head += [f"- {_cell(r)}" for r in verdict.refusals]
        head.append("")
    else:
        n = counts(verdict)
        weak = len(verdict.underpowered)
        head += [
            f"Candidate `{_cell(verdict.candidate_model)}` against baseline "
            f"`{_cell(verdict.baseline_model)}`: {sum(n.values())} gated tests, "
            f"**{n['fail']} failed**, {n['inconclusive']} inconclusive, {n['pass']} passed"
            + (f" ({weak} underpowered: see *detectable*)" if weak else "")
            + f". Rule: {verdict.config.rule}.",
            "",
        ]
    failed = list(verdict.failed)
    inconclusive = list(verdict.inconclusive)
    weak = list(verdict.underpowered)
    passed = [t for t in verdict.tests if t.verdict == "pass" and t not in weak]
    info = [t for t in verdict.tests if t.verdict == "info"]

    def render(keep: int | None) -> str:
        def cut(tests: list[MetricTest]) -> tuple[list[MetricTest], int]:
            if keep is None or len(tests) <= keep:
                return tests, 0
            return tests[:keep], len(tests) - keep

        body = list(head)
        if failed:
            rows, more = cut(failed)
            body += ["### Regressions", "", *_table(rows, reason=True), ""]
            if more:
                body += [f"... and {more} more regressions (see the JSON or JUnit report)", ""]
        for title, tests, reason in (
            (f"Inconclusive ({len(inconclusive)})", inconclusive, True),
            (f"Passed, underpowered ({len(weak)})", weak, True),
            (f"Passed ({len(passed)})", passed, False),
            (f"Not gated ({len(info)})", info, False),
        ):
            if tests:
                rows, more = cut(tests)
                table = _table(rows, reason=reason)
                if more:
                    table += ["", f"... and {more} more rows (see the JSON or JUnit report)"]
                body += _details(title, table)
        if verdict.warnings:
            body += _details(
                f"Warnings ({len(verdict.warnings)})",
                [f"- {_cell(w)}" for w in verdict.warnings],
            )
        body += _details("Settings", _settings(verdict))
        return "\n".join(body)

    text = render(None)
    keep = max(len(failed), len(inconclusive), len(weak), len(passed), len(info))
    while len(text.encode("utf-8")) > limit and keep > 0:
        keep //= 2
        text = render(keep)
    if len(text.encode("utf-8")) > limit:  # the head alone is too long (thousands of refusals)
        raw = text.encode("utf-8")[: limit - 64]
        text = raw.decode("utf-8", errors="ignore").rsplit("\n", 1)[0] + "\n\n(truncated)\n"
    return text
