"""The verdict as a JUnit XML report, valid against Jenkins' ``junit-10.xsd``.

One test suite per benchmark, one test case per benchmark and metric (its probes and confidence
kinds are listed in its text). Only what Jenkins' xunit plugin schema allows is written (no
``skipped`` count on ``testsuites``); ``tests/test_gate_junit.py`` validates every verdict
against that schema and against the project's stricter one.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import Any

from metacog_metrics.gate._format import ORDER, Case, cases
from metacog_metrics.gate.decision import GateVerdict

__all__ = ["junit_xml"]

# Characters XML 1.0 cannot hold (control characters other than tab, newline, return).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_Row = tuple[str, str, str, "str | None", str]  # classname, name, outcome, message, text


def _x(text: Any) -> str:
    return _NOT_XML.sub("?", str(text))


def _case_lines(case: Case) -> str:
    return "\n".join(
        f"{t.verdict.upper()} {t.group}: {t.reason}"
        for t in sorted(case.tests, key=lambda t: (ORDER[t.verdict], t.group))
    )


def junit_xml(verdict: GateVerdict, *, timestamp: datetime | None = None) -> str:
    """The verdict as a JUnit XML report: one test case per benchmark and metric.

    A case fails when any of its gated tests fails, is skipped when one is inconclusive (a
    failure of type ``inconclusive`` with ``inconclusive: fail`` in the config) and passes
    otherwise; its text names each probe and confidence kind with its reason. A refusal is
    one case with an ``error``.

    Args:
        verdict: The gate's verdict.
        timestamp: Report time (default now, UTC).

    Returns:
        The XML document (UTF-8 declaration included).
    """
    stamp = (timestamp or datetime.now(UTC)).replace(microsecond=0, tzinfo=None).isoformat()
    fail_inconclusive = verdict.config.inconclusive == "fail"
    root = ET.Element("testsuites", {"name": "metacog gate"})
    totals = {"tests": 0, "failures": 0, "errors": 0}
    props = {
        "status": verdict.status,
        "exit_code": str(verdict.exit_code),
        "rule": verdict.config.rule,
        "baseline_model": verdict.baseline_model or "",
        "candidate_model": verdict.candidate_model or "",
        "config_fingerprint": verdict.config_fingerprint,
    }
    suite_out = "\n".join([verdict.headline(), *(f"warning: {w}" for w in verdict.warnings)])

    def suite(name: str, rows: list[_Row]) -> None:
        n = {
            "tests": len(rows),
            "failures": sum(r[2] == "failure" for r in rows),
            "errors": sum(r[2] == "error" for r in rows),
            "skipped": sum(r[2] == "skipped" for r in rows),
        }
        for k in totals:
            totals[k] += n[k]
        el = ET.SubElement(
            root,
            "testsuite",
            {
                "name": _x(name),
                **{k: str(v) for k, v in n.items()},
                "time": "0",
                "timestamp": stamp,
                "hostname": _x(socket.gethostname() or "localhost"),
            },
        )
        prop_el = ET.SubElement(el, "properties")
        for k, v in props.items():
            ET.SubElement(prop_el, "property", {"name": k, "value": _x(v)})
        for classname, case_name, outcome, message, text in rows:
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
        by_bench: dict[str, list[_Row]] = {}
        for case in cases(verdict.tests):
            v = case.verdict
            worst = next((t for t in case.tests if t.gated and t.verdict == v), None)
            if v == "fail":
                outcome, message = "failure", worst.reason if worst else None
            elif v == "inconclusive":
                outcome = "failure" if fail_inconclusive else "skipped"
                message = f"inconclusive: {worst.reason}" if worst else "inconclusive"
            else:
                outcome, message = "passed", None
            by_bench.setdefault(case.benchmark, []).append(
                (f"metacog_gate.{case.benchmark}", case.metric, outcome, message, _case_lines(case))
            )
        for bench, rows in by_bench.items():
            suite(f"metacog gate: {bench}", rows)
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("time", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
