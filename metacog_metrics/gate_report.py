"""What the gate says: a terminal table, Markdown, JUnit XML, JSON and GitHub annotations.

Every renderer reads one :class:`~metacog_metrics.gate.GateVerdict`, so the exit code, the
printed verdict and every file agree. The JUnit report has one test case per benchmark and
metric (its probes and confidence kinds are listed inside it) and validates against the JUnit
schema in ``tests/data/junit.xsd``; the Markdown stays under GitHub's 1 MiB step-summary limit,
with the long parts folded in ``<details>``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from metacog_metrics.gate import METRICS, GateVerdict, MetricTest

__all__ = [
    "MARKDOWN_LIMIT",
    "VERDICT_FORMAT",
    "github_annotations",
    "junit_xml",
    "markdown_summary",
    "terminal_report",
    "verdict_json",
]

#: Largest Markdown :func:`markdown_summary` writes (GitHub shows at most 1 MiB of a step's
#: summary; the rest of the step may write some too).
MARKDOWN_LIMIT = 900 * 1024
#: ``format`` of the JSON verdict.
VERDICT_FORMAT = "metacog-gate-verdict"
_ORDER = {"fail": 0, "inconclusive": 1, "pass": 2, "info": 3}
_STATUS_MARK = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "error": "ERROR"}
_EMOJI = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "error": "⛔"}


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _interval(t: MetricTest) -> str:
    if not (math.isfinite(t.ci_low) and math.isfinite(t.ci_high)):
        return "n/a"
    return f"[{_fmt(t.ci_low, True)}, {_fmt(t.ci_high, True)}]"


def _counts(verdict: GateVerdict) -> dict[str, int]:
    gated = [t for t in verdict.tests if t.gated]
    return {v: sum(t.verdict == v for t in gated) for v in ("fail", "inconclusive", "pass")}


# ------------------------------------------------------------------------------ terminal


def _table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    right = {i for i, h in enumerate(header) if h in ("baseline", "candidate", "change", "items")}

    def line(cells: Sequence[str]) -> str:
        parts = [
            str(c).rjust(widths[i]) if i in right else str(c).ljust(widths[i])
            for i, c in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _row(t: MetricTest) -> list[str]:
    detect = "" if t.detectable is None or t.verdict != "inconclusive" else f"{t.detectable:.3f}"
    return [
        t.verdict.upper() if t.gated else "info",
        f"{t.group}: {t.metric}",
        _fmt(t.baseline),
        _fmt(t.candidate),
        _fmt(t.change, True),
        _interval(t),
        f"{t.margin:g}",
        detect,
        str(t.n_items),
    ]


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
            "interval: of the change candidate - baseline, at the Holm level of the test; "
            "detectable: the smallest change in the bad direction this run would catch"
        )
        problems = [t for t in verdict.inconclusive if t.detectable is None]
        for title, tests in (("Regressions", verdict.failed), ("Cannot decide", problems)):
            if tests:
                out += ["", f"{title}:"]
                out.extend(f"  - {t.group}: {t.reason}" for t in tests)
    if verdict.warnings:
        out += ["", "Warnings:"]
        out.extend(f"  - {w}" for w in verdict.warnings)
    out += ["", verdict.headline()]
    return "\n".join(out)


# ------------------------------------------------------------------------------ Markdown


def _md_cell(text: Any) -> str:
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _md_table(tests: Sequence[MetricTest], reason: bool) -> list[str]:
    header = ["test", "baseline", "candidate", "change", "interval", "margin", "items"]
    if reason:
        header.append("reason")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for t in tests:
        cells = [
            f"{t.group}: **{t.metric}**",
            _fmt(t.baseline),
            _fmt(t.candidate),
            _fmt(t.change, True),
            _interval(t),
            f"{t.margin:g}",
            str(t.n_items),
        ]
        if reason:
            cells.append(t.reason)
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    return lines


def _details(summary: str, body: Sequence[str]) -> list[str]:
    # The blank lines let GitHub render Markdown (tables, lists) inside the HTML block.
    return ["<details>", f"<summary>{_md_cell(summary)}</summary>", "", *body, "", "</details>", ""]


def _settings(verdict: GateVerdict) -> list[str]:
    c = verdict.config
    lines = [
        f"alpha {c.alpha:g} (Holm over {sum(t.gated for t in verdict.tests)} gated tests), "
        f"{c.n_boot} bootstrap resamples, seed {c.seed}, inconclusive: {c.inconclusive}, "
        f"config fingerprint `{verdict.config_fingerprint[:12]}`",
        "",
        "| metric | better | margin |",
        "|---|---|---|",
    ]
    for name in c.metrics:
        better = {"higher": "higher", "lower": "lower", "two-sided": "unchanged"}
        lines.append(f"| {name} | {better[METRICS[name].direction]} | {c.margins[name]:g} |")
    return lines


def markdown_summary(verdict: GateVerdict, *, limit: int = MARKDOWN_LIMIT) -> str:
    """The verdict as GitHub-flavoured Markdown for ``$GITHUB_STEP_SUMMARY``.

    Failures are shown; inconclusive and passing tests, warnings and settings are folded in
    ``<details>``. Rows are left out (and counted) when the text would pass ``limit`` bytes.

    Args:
        verdict: The gate's verdict.
        limit: Largest size in bytes (UTF-8).

    Returns:
        The Markdown text.
    """
    status = verdict.status
    head = [
        f"## {_EMOJI[status]} metacog gate: {_STATUS_MARK[status]} (exit {verdict.exit_code})",
        "",
    ]
    if status == "error":
        head += ["The gate refused to compare the runs:", ""]
        head += [f"- {_md_cell(r)}" for r in verdict.refusals]
        head.append("")
    else:
        n = _counts(verdict)
        head += [
            f"Candidate `{_md_cell(verdict.candidate_model)}` against baseline "
            f"`{_md_cell(verdict.baseline_model)}`: {sum(n.values())} gated tests, "
            f"**{n['fail']} failed**, {n['inconclusive']} inconclusive, {n['pass']} passed.",
            "",
        ]
    failed = list(verdict.failed)
    inconclusive = list(verdict.inconclusive)
    passed = [t for t in verdict.tests if t.verdict == "pass"]
    info = [t for t in verdict.tests if t.verdict == "info"]

    def render(keep: int | None) -> str:
        def cut(tests: list[MetricTest]) -> tuple[list[MetricTest], int]:
            if keep is None or len(tests) <= keep:
                return tests, 0
            return tests[:keep], len(tests) - keep

        body = list(head)
        if failed:
            rows, more = cut(failed)
            body += ["### Regressions", "", *_md_table(rows, reason=True), ""]
            if more:
                body += [f"... and {more} more regressions (see the JSON or JUnit report)", ""]
        for title, tests, reason in (
            (f"Inconclusive ({len(inconclusive)})", inconclusive, True),
            (f"Passed ({len(passed)})", passed, False),
            (f"Not gated ({len(info)})", info, False),
        ):
            if tests:
                rows, more = cut(tests)
                table = _md_table(rows, reason=reason)
                if more:
                    table += ["", f"... and {more} more rows (see the JSON or JUnit report)"]
                body += _details(title, table)
        if verdict.warnings:
            body += _details(
                f"Warnings ({len(verdict.warnings)})",
                [f"- {_md_cell(w)}" for w in verdict.warnings],
            )
        body += _details("Settings", _settings(verdict))
        return "\n".join(body)

    text = render(None)
    keep = max(len(failed), len(inconclusive), len(passed), len(info))
    while len(text.encode("utf-8")) > limit and keep > 0:
        keep //= 2
        text = render(keep)
    if len(text.encode("utf-8")) > limit:  # the head alone is too long (thousands of refusals)
        raw = text.encode("utf-8")[: limit - 64]
        text = raw.decode("utf-8", errors="ignore").rsplit("\n", 1)[0] + "\n\n(truncated)\n"
    return text


# ------------------------------------------------------------------------------ JUnit

# Characters XML 1.0 cannot hold (control characters other than tab, newline, return).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _x(text: Any) -> str:
    return _NOT_XML.sub("?", str(text))


@dataclasses.dataclass(frozen=True)
class _Case:
    """One JUnit test case: a benchmark and metric over its probes and confidence kinds."""

    benchmark: str
    metric: str
    tests: tuple[MetricTest, ...]

    @property
    def verdict(self) -> str:
        gated = [t.verdict for t in self.tests if t.gated]
        return min(gated, key=_ORDER.__getitem__) if gated else "info"


def _cases(tests: Iterable[MetricTest]) -> list[_Case]:
    by_key: dict[tuple[str, str], list[MetricTest]] = {}
    for t in tests:
        by_key.setdefault((t.benchmark, t.metric), []).append(t)
    order = list(METRICS)
    keys = sorted(by_key, key=lambda k: (k[0], order.index(k[1]) if k[1] in order else 99, k[1]))
    return [_Case(b, m, tuple(by_key[(b, m)])) for b, m in keys]


def _case_lines(case: _Case) -> str:
    return "\n".join(
        f"{t.verdict.upper()} {t.group}: {t.reason}"
        for t in sorted(case.tests, key=lambda t: (_ORDER[t.verdict], t.group))
    )


def junit_xml(verdict: GateVerdict, *, timestamp: datetime | None = None) -> str:
    """The verdict as a JUnit XML report: one test case per benchmark and metric.

    A case fails when any of its gated tests fails, is skipped when one is inconclusive (a
    failure with ``inconclusive: fail`` in the config) and passes otherwise; its text names
    each probe and confidence kind with its reason. A refusal is one case with an ``error``.

    Args:
        verdict: The gate's verdict.
        timestamp: Report time (default now, UTC).

    Returns:
        The XML document (UTF-8 declaration included).
    """
    stamp = (timestamp or datetime.now(UTC)).replace(microsecond=0, tzinfo=None).isoformat()
    fail_inconclusive = verdict.config.inconclusive == "fail"
    root = ET.Element("testsuites", {"name": "metacog gate"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    props = {
        "status": verdict.status,
        "exit_code": str(verdict.exit_code),
        "baseline_model": verdict.baseline_model or "",
        "candidate_model": verdict.candidate_model or "",
        "config_fingerprint": verdict.config_fingerprint,
    }

    suite_out = "\n".join([verdict.headline(), *(f"warning: {w}" for w in verdict.warnings)])

    def suite(name: str, cases: list[tuple[str, str, str, str | None, str]]) -> None:
        # each case: (classname, name, outcome, message, text)
        counts = {
            "tests": len(cases),
            "failures": sum(c[2] == "failure" for c in cases),
            "errors": sum(c[2] == "error" for c in cases),
            "skipped": sum(c[2] == "skipped" for c in cases),
        }
        for k, v in counts.items():
            totals[k] += v
        el = ET.SubElement(
            root,
            "testsuite",
            {
                "name": _x(name),
                **{k: str(v) for k, v in counts.items()},
                "time": "0",
                "timestamp": stamp,
                "hostname": _x(socket.gethostname() or "localhost"),
            },
        )
        prop_el = ET.SubElement(el, "properties")
        for k, v in props.items():
            ET.SubElement(prop_el, "property", {"name": k, "value": _x(v)})
        for classname, case_name, outcome, message, text in cases:
            tc = ET.SubElement(
                el, "testcase", {"classname": _x(classname), "name": _x(case_name), "time": "0"}
            )
            if outcome in ("failure", "error", "skipped"):
                child = ET.SubElement(tc, outcome, {"message": _x(message or outcome)})
                if outcome == "failure":
                    inconclusive = bool(message and message.startswith("inconclusive"))
                    child.set("type", "inconclusive" if inconclusive else "regression")
                elif outcome == "error":
                    child.set("type", "unusable input")
                child.text = _x(text)
            else:
                ET.SubElement(tc, "system-out").text = _x(text)
        ET.SubElement(el, "system-out").text = _x(suite_out)

    if verdict.status == "error":
        text = "\n".join(verdict.refusals)
        first = verdict.refusals[0] if verdict.refusals else "unusable input"
        suite("metacog gate: input", [("metacog_gate", "input", "error", first, text)])
    else:
        by_bench: dict[str, list[tuple[str, str, str, str | None, str]]] = {}
        for case in _cases(verdict.tests):
            v = case.verdict
            text = _case_lines(case)
            worst = next(t for t in case.tests if t.verdict == v) if v != "info" else None
            if v == "fail":
                outcome, message = "failure", worst.reason if worst else None
            elif v == "inconclusive":
                outcome = "failure" if fail_inconclusive else "skipped"
                message = f"inconclusive: {worst.reason}" if worst else "inconclusive"
            else:
                outcome, message = "passed", None
            by_bench.setdefault(case.benchmark, []).append(
                (f"metacog_gate.{case.benchmark}", case.metric, outcome, message, text)
            )
        for bench, cases in by_bench.items():
            suite(f"metacog gate: {bench}", cases)
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ------------------------------------------------------------------------------ JSON


def verdict_json(verdict: GateVerdict, *, extra: Mapping[str, Any] | None = None) -> str:
    """The verdict as JSON: ``format``, ``headline``, the verdict's fields, then ``extra``.

    Args:
        verdict: The gate's verdict.
        extra: More top-level keys (the inputs, versions).

    Returns:
        Strict JSON text (NaN written as null).
    """
    data = {
        "format": VERDICT_FORMAT,
        "format_version": 1,
        "headline": verdict.headline(),
        **verdict.to_dict(),
        **dict(extra or {}),
    }
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


# ------------------------------------------------------------------------------ GitHub


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
    for case in _cases(verdict.failed):
        first = case.tests[0]
        more = len(case.tests) - 1
        message = (
            first.group + ": " + first.reason + (f" (and {more} more probe/kind)" if more else "")
        )
        errors.append((f"metacog gate: {case.benchmark} {case.metric} regressed", message))
    inconclusive = verdict.inconclusive
    if inconclusive:
        names = ", ".join(f"{c.benchmark} {c.metric}" for c in _cases(inconclusive))
        passing = verdict.config.inconclusive == "pass"
        warnings.append(
            (
                f"metacog gate: {len(inconclusive)} inconclusive test(s)",
                f"{names}: the interval of the change straddles the margin"
                + (" (passing: set inconclusive: fail to exit 3)" if passing else ""),
            )
        )
    warnings += [("metacog gate: warning", w) for w in verdict.warnings]
    return capped(errors, "error", "problem(s)") + capped(warnings, "warning", "warning(s)")
