"""The gate's output formats, rule by rule, on verdicts written by hand (well under a second).

No records are simulated and no gate is run: every :class:`MetricTest` below is written out
field by field. The rules are those of the formats and of what a CI log reader relies on: the
terminal report starts and ends with the headline, the Markdown keeps failures outside folds and
stays under its limit, JUnit (read back with an XML parser) has a case per benchmark and metric
with the right outcome, GitHub's workflow commands are escaped and capped. Validation against
Jenkins' schema is in ``tests/test_gate_report.py`` (it needs lxml).
"""

from __future__ import annotations

import dataclasses
import json
import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta, timezone

from metacog_metrics.gate import (
    GateConfig,
    GateVerdict,
    MetricTest,
    github_annotations,
    junit_xml,
    markdown_summary,
    terminal_report,
    verdict_json,
)

NAN = float("nan")
STAMP = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


def mt(bench: str, kind: str | None, metric: str, verdict: str, reason: str, **kw) -> MetricTest:
    fields = {
        "benchmark": bench,
        "probe": "solve" if kind is None else "prospective",
        "confidence_kind": kind,
        "metric": metric,
        "direction": "higher",
        "margin": 0.03,
        "rule": "significant",
        "n_items": 400,
        "repeats": 1,
        "baseline": 0.75,
        "candidate": 0.70,
        "change": -0.05,
        "se": 0.01,
        "ci_low": -0.08,
        "ci_high": -0.02,
        "ci_level": 0.99,
        "p_value": 0.001,
        "p_holm": 0.004,
        "n_boot": 2000,
        "n_undefined": 0,
        "detectable": 0.041,
        "underpowered": False,
        "flips": None,
        "graded_only": None,
        "gated": True,
        "verdict": verdict,
        "reason": reason,
    }
    fields.update(kw)
    return MetricTest(**fields)


FAIL_A = mt("squad", "verbal_binary", "auroc", "fail", "regression: auroc 0.750 -> 0.700")
FAIL_B = mt("squad", "logprob", "auroc", "fail", "regression: auroc 0.800 -> 0.720")
WEAK = mt("squad", "verbal_binary", "brier", "pass", "within; underpowered", underpowered=True)
CANT = mt(
    "mmlu_pro",
    "logprob",
    "brier",
    "inconclusive",
    "only 12",
    ci_low=NAN,
    ci_high=NAN,
    detectable=None,
)
OK = mt("mmlu_pro", None, "accuracy", "pass", "within the margin 0.02", change=0.01)
INFO = mt("mmlu_pro", "logprob", "ece", "info", "not gated", gated=False, candidate=NAN)
CONFIG = GateConfig(n_boot=500, metrics=("auroc", "brier", "accuracy", "ece"))


def verdict_of(status: str, code: int, tests, **kw) -> GateVerdict:
    fields = {
        "status": status,
        "exit_code": code,
        "tests": tuple(tests),
        "refusals": (),
        "warnings": (),
        "baseline_model": "base",
        "candidate_model": "cand",
        "config": CONFIG,
        "config_fingerprint": "f" * 64,
    }
    fields.update(kw)
    return GateVerdict(**fields)


FAIL = verdict_of("fail", 1, [FAIL_A, FAIL_B, CANT, WEAK, OK, INFO], warnings=("w | <1>",))
ERROR = GateVerdict.refused(["baseline ci/b.json: no such file. A first run? Bless ...", "a|b"])


# ------------------------------------------------------------------------------ headline, text


def test_the_headline_counts_gated_tests_and_underpowered_passes() -> None:
    assert FAIL.headline() == (
        "metacog gate: FAIL (exit 1): cand vs baseline base; 5 gated test(s): 2 failed, "
        "1 inconclusive, 2 passed (1 underpowered)"
    )
    assert ERROR.headline() == "metacog gate: ERROR (exit 2): 2 problem(s) with the input"
    assert FAIL.underpowered == (WEAK,) and FAIL.failed == (FAIL_A, FAIL_B)


def test_the_terminal_report_starts_and_ends_with_the_headline() -> None:
    for v in (FAIL, ERROR):
        lines = terminal_report(v).splitlines()
        assert lines[0] == lines[-1] == v.headline()
    text = terminal_report(FAIL)
    rows = [ln for ln in text.splitlines() if ln.startswith(("FAIL ", "PASS", "INCONCLUSIVE"))]
    assert [r.split()[0] for r in rows] == ["FAIL", "FAIL", "INCONCLUSIVE", "PASS*", "PASS"]
    table = text.splitlines()[2:10]
    widths = {len(ln) for ln in table[:2]}  # the header and its rule line up
    assert len(widths) == 1
    assert "Regressions:" in text and "Cannot decide:" in text and "w | <1>" in text
    assert "ci/b.json: no such file" in terminal_report(ERROR)


# ------------------------------------------------------------------------------ Markdown


def test_markdown_shows_regressions_and_folds_the_rest() -> None:
    text = markdown_summary(FAIL)
    assert text.startswith("## ❌ metacog gate: FAIL (exit 1)\n")
    assert text.index("### Regressions") < text.index("<details>")
    for title in ("Inconclusive (1)", "Passed, underpowered (1)", "Passed (1)", "Not gated (1)"):
        assert f"<summary>{title}</summary>" in text
    assert "w \\| &lt;1>" in text  # pipes and tags escaped in cells
    assert text.count("<details>") == text.count("</details>")
    assert "rule significant, alpha 0.01" in text


def test_markdown_halves_rows_until_it_fits_and_says_so() -> None:
    big = dataclasses.replace(FAIL, tests=FAIL.tests * 300)
    text = markdown_summary(big, limit=20_000)
    assert len(text.encode()) <= 20_000 and "### Regressions" in text
    assert "more regressions (see the JSON or JUnit report)" in text
    huge = dataclasses.replace(ERROR, refusals=tuple("x" * 500 for _ in range(100)))
    cut = markdown_summary(huge, limit=5_000)
    assert len(cut.encode()) <= 5_000 and cut.endswith("(truncated)\n")


def test_markdown_of_a_refusal_lists_the_problems() -> None:
    text = markdown_summary(ERROR)
    assert "## ⛔ metacog gate: ERROR (exit 2)" in text and "- a\\|b" in text
    assert "A first run? Bless" in text


# ------------------------------------------------------------------------------ JUnit


def test_junit_has_one_case_per_benchmark_and_metric_with_its_outcome() -> None:
    root = ET.fromstring(junit_xml(FAIL, timestamp=STAMP))
    assert set(root.attrib) == {"name", "tests", "failures", "errors", "time"}  # no "skipped"
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    assert sorted(cases) == [
        ("metacog_gate.mmlu_pro", "accuracy"),
        ("metacog_gate.mmlu_pro", "brier"),
        ("metacog_gate.mmlu_pro", "ece"),
        ("metacog_gate.squad", "auroc"),
        ("metacog_gate.squad", "brier"),
    ]
    auroc = cases[("metacog_gate.squad", "auroc")]
    assert auroc.find("failure").get("type") == "regression"
    assert auroc.find("failure").text.count("FAIL squad/prospective/") == 2
    assert cases[("metacog_gate.mmlu_pro", "brier")].find("skipped") is not None
    assert cases[("metacog_gate.squad", "brier")].find("system-out") is not None
    assert cases[("metacog_gate.mmlu_pro", "ece")].find("system-out") is not None  # info
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "0")
    suite = root.find("testsuite[@name='metacog gate: squad']")
    assert suite.get("timestamp") == "2026-03-04T05:06:07"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["status"] == "fail" and props["exit_code"] == "1"
    assert props["rule"] == "significant"


def test_junit_inconclusive_fails_when_the_config_says_so() -> None:
    strict = dataclasses.replace(FAIL, config=GateConfig(inconclusive="fail"))
    root = ET.fromstring(junit_xml(strict, timestamp=STAMP))
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    case = cases[("metacog_gate.mmlu_pro", "brier")]
    assert case.find("failure").get("type") == "inconclusive"


def test_junit_of_a_refusal_is_one_error_case() -> None:
    root = ET.fromstring(junit_xml(ERROR, timestamp=STAMP))
    (case,) = root.iter("testcase")
    assert case.find("error").get("type") == "unusable input"
    assert case.find("error").get("message").startswith("baseline ci/b.json: no such file")
    assert root.get("errors") == "1"


def test_junit_timestamps_are_utc_and_xml_safe() -> None:
    local = STAMP.astimezone(timezone(timedelta(hours=-5)))
    root = ET.fromstring(junit_xml(FAIL, timestamp=local))
    assert root.find("testsuite").get("timestamp") == "2026-03-04T00:06:07"
    bad = dataclasses.replace(FAIL, candidate_model="x\x01y")
    assert "x?y" in junit_xml(bad, timestamp=STAMP)
    now = ET.fromstring(junit_xml(FAIL)).find("testsuite").get("timestamp")
    assert abs(datetime.fromisoformat(now) - datetime.now(UTC).replace(tzinfo=None)) < timedelta(
        minutes=5
    )


# ------------------------------------------------------------------------------ annotations


def test_annotations_are_escaped_aggregated_and_capped() -> None:
    lines = github_annotations(FAIL)
    errors = [x for x in lines if x.startswith("::error")]
    assert errors == [
        "::error title=metacog gate%3A squad auroc regressed::squad/prospective/verbal_binary: "
        "regression: auroc 0.750 -> 0.700 (and 1 more probe/kind)"
    ]
    warnings = [x for x in lines if x.startswith("::warning")]
    assert "1 inconclusive test(s)" in warnings[0] and "1 underpowered test(s)" in warnings[1]
    assert warnings[-1] == "::warning title=metacog gate%3A warning::w | <1>"
    odd = dataclasses.replace(FAIL, warnings=("100% sure,\nnext: here",))
    assert github_annotations(odd)[-1].endswith("::100%25 sure,%0Anext: here")
    many = dataclasses.replace(ERROR, refusals=tuple(f"problem {i}" for i in range(15)))
    capped = github_annotations(many)
    assert len(capped) == 10 and capped[-1].startswith("::error title=metacog gate%3A 6 more")
    assert len(github_annotations(many, limit=3)) == 3


def test_json_carries_the_verdict_then_the_extra_keys() -> None:
    data = json.loads(verdict_json(FAIL, extra={"inputs": {"baseline": "b"}}))
    assert list(data)[:3] == ["format", "format_version", "headline"]
    assert list(data)[-1] == "inputs" and data["exit_code"] == 1
    assert data["tests"][2]["ci_low"] is None  # NaN written as null
    assert not math.isnan(data["tests"][0]["se"])
