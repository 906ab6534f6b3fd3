"""The gate's reports, rule by rule, from verdicts written by hand (well under a second).

No records are simulated and no gate is run: every :class:`MetricTest` below is written out
field by field, and every expected line (the terminal table's padding, the Markdown, the JUnit
XML, the GitHub workflow commands) is written down by hand from the formats: GitHub-flavoured
Markdown tables and ``<details>``, the JUnit XML of ``tests/data/junit.xsd`` (read back with an
XML parser), and GitHub's workflow-command escaping (``%25``, ``%0D``, ``%0A`` in data, and
``%3A``, ``%2C`` too in properties).
"""

from __future__ import annotations

import dataclasses
import json
import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

import metacog_metrics.gate_report as gr
from metacog_metrics.gate import GateConfig, GateVerdict, MetricTest
from metacog_metrics.gate_report import (
    github_annotations,
    junit_xml,
    markdown_summary,
    terminal_report,
    verdict_json,
)

NAN = float("nan")
STAMP = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


def mt(
    benchmark: str,
    probe: str,
    kind: str | None,
    metric: str,
    verdict: str,
    reason: str,
    *,
    margin: float = 0.02,
    n_items: int = 400,
    baseline: float | None = 0.5,
    candidate: float | None = 0.5,
    change: float = 0.0,
    ci: tuple[float, float] = (-0.01, 0.01),
    detectable: float | None = None,
    gated: bool = True,
) -> MetricTest:
    return MetricTest(
        benchmark=benchmark, probe=probe, confidence_kind=kind, metric=metric,
        direction="higher", margin=margin, n_items=n_items, baseline=baseline,
        candidate=candidate, change=change, se=0.01, ci_low=ci[0], ci_high=ci[1],
        ci_level=0.95, p_value=0.5, p_holm=0.5, n_boot=500, n_undefined=0,
        detectable=detectable, mcnemar=None, gated=gated, verdict=verdict, reason=reason,
    )  # fmt: skip


R1 = "regression: auroc fell by 0.050 (beyond the margin 0.05)"
R6 = "regression: auroc fell by 0.080 (beyond the margin 0.05)"
R2 = "the interval straddles the margin"
R5 = "too few items to decide (12 < 30)"
R3 = "no regression beyond the margin"
T1 = mt("squad", "prospective", "verbal", "auroc", "fail", R1, margin=0.05, baseline=0.75,
        candidate=0.7, change=-0.05, ci=(-0.0812, -0.0188))  # fmt: skip
T6 = mt("squad", "prospective", "logit", "auroc", "fail", R6, margin=0.05, baseline=0.8,
        candidate=0.72, change=-0.08, ci=(-0.11, -0.05))  # fmt: skip
T2 = mt("squad", "prospective", "verbal", "brier", "inconclusive", R2, baseline=0.2,
        candidate=0.21, change=0.01, ci=(-0.004, 0.024), detectable=0.0412)  # fmt: skip
T5 = mt("mmlu_pro", "numeric", "logit", "brier", "inconclusive", R5, n_items=12, baseline=0.3,
        candidate=0.35, change=0.05, ci=(-0.1, math.inf))  # fmt: skip
T3 = mt("mmlu_pro", "numeric", None, "accuracy", "pass", R3, n_items=120, baseline=0.5,
        candidate=0.525, change=0.025, ci=(-0.01, 0.06))  # fmt: skip
T4 = mt("mmlu_pro", "numeric", "logit", "ece", "info", "not gated", margin=0.03, n_items=120,
        baseline=0.1, candidate=None, change=NAN, ci=(NAN, NAN), detectable=0.02,
        gated=False)  # fmt: skip
W1 = "baseline records carry\n  no provenance"
W2 = "lm_eval versions differ: 0.4.8 | 0.4.9 in C:\\env"

CONFIG = GateConfig(
    n_boot=500, seed=7, metrics=("auroc", "brier", "accuracy", "yes_rate"), margins={"auroc": 0.05}
)
FAIL = GateVerdict(
    status="fail", exit_code=1, tests=(T1, T6, T2, T5, T3, T4), refusals=(), warnings=(W1, W2),
    baseline_model="base", candidate_model="cand", config=CONFIG,
    config_fingerprint="fedcba9876543210" + "0" * 48,
)  # fmt: skip
HEAD_FAIL = (
    "metacog gate: FAIL (exit 1): cand vs baseline base; 5 gated test(s): 2 failed, "
    "2 inconclusive, 1 passed"
)
ERROR = GateVerdict.refused(
    ["the item sets differ: 'squad-00004' only in the baseline", "a | b <script>"],
    GateConfig(n_boot=500),
    warnings=("w",),
)
HEAD_ERROR = "metacog gate: ERROR (exit 2): 2 problem(s) with the input"


def verdict_of(status: str, exit_code: int, tests, **kw) -> GateVerdict:
    fields = dict(
        status=status, exit_code=exit_code, tests=tuple(tests), refusals=(), warnings=(),
        baseline_model="base", candidate_model="cand", config=GateConfig(n_boot=500),
        config_fingerprint="abc",
    )  # fmt: skip
    fields.update(kw)
    return GateVerdict(**fields)


# ------------------------------------------------------------------------------ terminal


def test_terminal_table_pads_and_aligns_every_column_by_hand() -> None:
    sp = " ".__mul__
    expected = [
        HEAD_FAIL,
        "",
        "verdict" + sp(7) + "test" + sp(29) + "baseline  candidate  change  interval" + sp(10)
        + "margin  detectable  items",
        "-" * 12 + "  " + "-" * 31 + "  " + "-" * 8 + "  " + "-" * 9 + "  " + "-" * 6 + "  "
        + "-" * 16 + "  " + "-" * 6 + "  " + "-" * 10 + "  " + "-" * 5,
        "FAIL" + sp(10) + "squad/prospective/verbal: auroc  " + "   0.750  " + "    0.700  "
        + "-0.050  [-0.081, -0.019]  0.05" + sp(18) + "400",
        "FAIL" + sp(10) + "squad/prospective/logit: auroc" + sp(3) + "   0.800  " + "    0.720  "
        + "-0.080  [-0.110, -0.050]  0.05" + sp(18) + "400",
        "INCONCLUSIVE  squad/prospective/verbal: brier  " + "   0.200  " + "    0.210  "
        + "+0.010  [-0.004, +0.024]  0.02" + sp(4) + "0.041" + sp(9) + "400",
        "INCONCLUSIVE  mmlu_pro/numeric/logit: brier" + sp(4) + "   0.300  " + "    0.350  "
        + "+0.050  n/a" + sp(15) + "0.02" + sp(19) + "12",
        "PASS" + sp(10) + "mmlu_pro/numeric: accuracy" + sp(7) + "   0.500  " + "    0.525  "
        + "+0.025  [-0.010, +0.060]  0.02" + sp(18) + "120",
        "info" + sp(10) + "mmlu_pro/numeric/logit: ece" + sp(6) + "   0.100  " + "      n/a  "
        + "   n/a  n/a" + sp(15) + "0.03" + sp(18) + "120",
        "interval: of the change candidate - baseline, at the Holm level of the test; "
        "detectable: the smallest change in the bad direction this run would catch",
        "",
        "Regressions:",
        "  - squad/prospective/verbal: " + R1,
        "  - squad/prospective/logit: " + R6,
        "",
        "Cannot decide:",
        "  - mmlu_pro/numeric/logit: " + R5,
        "",
        "Warnings:",
        "  - " + W1,
        "  - " + W2,
        "",
        HEAD_FAIL,
    ]  # fmt: skip
    assert terminal_report(FAIL) == "\n".join(expected)


def test_terminal_report_of_a_refusal_lists_the_problems() -> None:
    assert terminal_report(ERROR) == "\n".join(
        [
            HEAD_ERROR,
            "",
            "The gate refused to compare:",
            "  - the item sets differ: 'squad-00004' only in the baseline",
            "  - a | b <script>",
            "",
            "Warnings:",
            "  - w",
            "",
            HEAD_ERROR,
        ]
    )


def test_terminal_report_without_problems_or_warnings_has_no_sections() -> None:
    # the detectable change is shown for an inconclusive test only; a test whose change is
    # detectable is not listed under "Cannot decide"
    ok = mt("b", "p", None, "accuracy", "pass", "fine", n_items=5, detectable=0.5)
    inc = mt("b", "p", "k", "brier", "inconclusive", "wide", n_items=5, detectable=0.25)
    verdict = verdict_of("inconclusive", 0, [ok, inc])
    head = (
        "metacog gate: INCONCLUSIVE (exit 0): cand vs baseline base; 2 gated test(s): "
        "0 failed, 1 inconclusive, 1 passed"
    )
    lines = terminal_report(verdict).split("\n")
    assert lines[2] == (
        "verdict       test" + " " * 11 + "baseline  candidate  change  interval          margin  "
        "detectable  items"
    )
    assert lines[4] == (
        "PASS          b/p: accuracy     0.500      0.500  +0.000  [-0.010, +0.010]  0.02"
        + " " * 20
        + "5"
    )
    assert lines[5] == (
        "INCONCLUSIVE  b/p/k: brier      0.500      0.500  +0.000  [-0.010, +0.010]  0.02    "
        "0.250" + " " * 11 + "5"
    )
    assert lines[6].startswith("interval: ") and lines[7:] == ["", head]


# ------------------------------------------------------------------------------ Markdown

TABLE8 = ["| test | baseline | candidate | change | interval | margin | items | reason |"]
TABLE8 += ["|---|---|---|---|---|---|---|---|"]
TABLE7 = ["| test | baseline | candidate | change | interval | margin | items |"]
TABLE7 += ["|---|---|---|---|---|---|---|"]


def settings(gated: int, n_boot: int, seed: int, inconclusive: str, fp: str, rows) -> list[str]:
    return [
        "<details>",
        "<summary>Settings</summary>",
        "",
        f"alpha 0.05 (Holm over {gated} gated tests), {n_boot} bootstrap resamples, seed {seed}, "
        f"inconclusive: {inconclusive}, config fingerprint `{fp}`",
        "",
        "| metric | better | margin |",
        "|---|---|---|",
        *rows,
        "",
        "</details>",
        "",
    ]


ALL_METRICS = [
    "| auroc | higher | 0.03 |",
    "| internal_pop_gap | higher | 0.03 |",
    "| brier | lower | 0.02 |",
    "| ece | lower | 0.03 |",
    "| accuracy | higher | 0.02 |",
    "| yes_rate | unchanged | 0.05 |",
    "| unparseable | lower | 0.02 |",
]


def test_markdown_summary_of_a_failure_by_hand() -> None:
    expected = [
        "## ❌ metacog gate: FAIL (exit 1)",
        "",
        "Candidate `cand` against baseline `base`: 5 gated tests, **2 failed**, 2 inconclusive, "
        "1 passed.",
        "",
        "### Regressions",
        "",
        *TABLE8,
        "| squad/prospective/verbal: **auroc** | 0.750 | 0.700 | -0.050 | [-0.081, -0.019] | "
        "0.05 | 400 | " + R1 + " |",
        "| squad/prospective/logit: **auroc** | 0.800 | 0.720 | -0.080 | [-0.110, -0.050] | "
        "0.05 | 400 | " + R6 + " |",
        "",
        "<details>",
        "<summary>Inconclusive (2)</summary>",
        "",
        *TABLE8,
        "| squad/prospective/verbal: **brier** | 0.200 | 0.210 | +0.010 | [-0.004, +0.024] | "
        "0.02 | 400 | the interval straddles the margin |",
        "| mmlu_pro/numeric/logit: **brier** | 0.300 | 0.350 | +0.050 | n/a | 0.02 | 12 | "
        "too few items to decide (12 &lt; 30) |",
        "",
        "</details>",
        "",
        "<details>",
        "<summary>Passed (1)</summary>",
        "",
        *TABLE7,
        "| mmlu_pro/numeric: **accuracy** | 0.500 | 0.525 | +0.025 | [-0.010, +0.060] | 0.02 | "
        "120 |",
        "",
        "</details>",
        "",
        "<details>",
        "<summary>Not gated (1)</summary>",
        "",
        *TABLE7,
        "| mmlu_pro/numeric/logit: **ece** | 0.100 | n/a | n/a | n/a | 0.03 | 120 |",
        "",
        "</details>",
        "",
        "<details>",
        "<summary>Warnings (2)</summary>",
        "",
        "- baseline records carry no provenance",
        "- lm_eval versions differ: 0.4.8 \\| 0.4.9 in C:\\\\env",
        "",
        "</details>",
        "",
        *settings(
            5,
            500,
            7,
            "pass",
            "fedcba987654",
            [
                "| auroc | higher | 0.05 |",
                "| brier | lower | 0.02 |",
                "| accuracy | higher | 0.02 |",
                "| yes_rate | unchanged | 0.05 |",
            ],
        ),
    ]
    assert markdown_summary(FAIL) == "\n".join(expected)


ERROR_MD = "\n".join(
    [
        "## ⛔ metacog gate: ERROR (exit 2)",
        "",
        "The gate refused to compare the runs:",
        "",
        "- the item sets differ: 'squad-00004' only in the baseline",
        "- a \\| b &lt;script>",
        "",
        "<details>",
        "<summary>Warnings (1)</summary>",
        "",
        "- w",
        "",
        "</details>",
        "",
        *settings(0, 500, 0, "pass", ERROR.config_fingerprint[:12], ALL_METRICS),
    ]
)


def test_markdown_summary_of_a_refusal_by_hand() -> None:
    assert markdown_summary(ERROR) == ERROR_MD
    # exactly at the limit is within it: nothing is cut
    assert markdown_summary(ERROR, limit=len(ERROR_MD.encode())) == ERROR_MD


def test_markdown_headline_of_each_status() -> None:
    ok = mt("b", "p", None, "accuracy", "pass", "fine")
    inc = mt("b", "p", "k", "brier", "inconclusive", "wide")
    cases = {
        "## ✅ metacog gate: PASS (exit 0)": verdict_of("pass", 0, [ok]),
        "## ⚠️ metacog gate: INCONCLUSIVE (exit 3)": verdict_of("inconclusive", 3, [ok, inc]),
    }
    for head, verdict in cases.items():
        lines = markdown_summary(verdict).split("\n")
        assert lines[:2] == [head, ""], head
    lines = markdown_summary(cases["## ✅ metacog gate: PASS (exit 0)"]).split("\n")
    assert lines[2:5] == [
        "Candidate `cand` against baseline `base`: 1 gated tests, **0 failed**, "
        "0 inconclusive, 1 passed.",
        "",
        "<details>",
    ]
    # no failures: no Regressions section; no warnings: no Warnings block
    text = markdown_summary(cases["## ✅ metacog gate: PASS (exit 0)"])
    assert "### Regressions" not in text and "Warnings" not in text
    assert "<summary>Inconclusive" not in text and "<summary>Not gated" not in text


def _rows(n: int, verdict: str, reason: str) -> list[MetricTest]:
    return [mt(f"b{i}", "p", None, "accuracy", verdict, reason) for i in range(n)]


def _row(i: int, reason: str | None) -> str:
    cells = f"| b{i}/p: **accuracy** | 0.500 | 0.500 | +0.000 | [-0.010, +0.010] | 0.02 | 400 |"
    return cells + (f" {reason} |" if reason else "")


def _cut_summary(keep: int) -> str:
    """The summary of 5 regressions and 3 passes with ``keep`` rows of each, by hand."""
    fails = [_row(i, "worse") for i in range(min(keep, 5))]
    passes = [_row(i, None) for i in range(min(keep, 3))]
    lines = [
        "## ❌ metacog gate: FAIL (exit 1)",
        "",
        "Candidate `cand` against baseline `base`: 8 gated tests, **5 failed**, "
        "0 inconclusive, 3 passed.",
        "",
        "### Regressions",
        "",
        *TABLE8,
        *fails,
        "",
    ]
    if keep < 5:
        lines += [f"... and {5 - keep} more regressions (see the JSON or JUnit report)", ""]
    lines += ["<details>", "<summary>Passed (3)</summary>", "", *TABLE7, *passes]
    if keep < 3:
        lines += ["", f"... and {3 - keep} more rows (see the JSON or JUnit report)"]
    lines += ["", "</details>", ""]
    lines += settings(8, 500, 0, "pass", "abc", ALL_METRICS)
    return "\n".join(lines)


def test_markdown_rows_are_halved_until_the_text_fits() -> None:
    verdict = verdict_of("fail", 1, _rows(5, "fail", "worse") + _rows(3, "pass", "ok"))
    full, two, one = _cut_summary(5), _cut_summary(2), _cut_summary(1)
    assert markdown_summary(verdict) == full
    assert markdown_summary(verdict, limit=len(full.encode())) == full
    # 5 rows -> 2 (5 // 2) -> 1 (2 // 2): the first that fits is kept
    assert markdown_summary(verdict, limit=len(full.encode()) - 1) == two
    assert markdown_summary(verdict, limit=len(two.encode())) == two
    assert markdown_summary(verdict, limit=len(two.encode()) - 1) == one
    assert markdown_summary(verdict, limit=len(one.encode())) == one
    # no row left (keep 0: the tables' headers alone), and then the text is cut at a line end
    zero = _cut_summary(0)
    assert markdown_summary(verdict, limit=len(one.encode()) - 1) == zero
    assert markdown_summary(verdict, limit=len(zero.encode())) == zero
    limit = len(zero.encode()) - 1
    raw = zero.encode()[: limit - 64].decode()
    assert markdown_summary(verdict, limit=limit) == raw.rsplit("\n", 1)[0] + "\n\n(truncated)\n"


def test_markdown_too_long_head_is_cut_at_a_line_end() -> None:
    # "## ⛔ metacog gate: ERROR (exit 2)" is 35 bytes (the sign is 3 bytes in UTF-8)
    verdict = GateVerdict.refused([f"problem {i}" for i in range(50)], GateConfig(n_boot=500))
    head = "## ⛔ metacog gate: ERROR (exit 2)"
    cut = markdown_summary(verdict, limit=64 + 80)  # 80 bytes: up to "- pr"
    assert cut == head + "\n\nThe gate refused to compare the runs:\n\n\n(truncated)\n"
    cut = markdown_summary(verdict, limit=64 + 36)  # the heading and its line break
    assert cut == head + "\n\n(truncated)\n"
    cut = markdown_summary(verdict, limit=64 + 37)  # and the blank line's break
    assert cut == head + "\n\n\n(truncated)\n"
    # a cut inside the 3-byte sign drops its first bytes instead of failing
    assert markdown_summary(verdict, limit=64 + 4) == "## \n\n(truncated)\n"


# ------------------------------------------------------------------------------ JUnit

JUNIT_PASS = """\
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="metacog gate" tests="1" failures="0" errors="0" skipped="0" time="0">
  <testsuite name="metacog gate: mmlu_pro" tests="1" failures="0" errors="0" skipped="0" \
time="0" timestamp="2026-03-04T05:06:07" hostname="ci-host">
    <properties>
      <property name="status" value="pass" />
      <property name="exit_code" value="0" />
      <property name="baseline_model" value="" />
      <property name="candidate_model" value="cand" />
      <property name="config_fingerprint" value="abc" />
    </properties>
    <testcase classname="metacog_gate.mmlu_pro" name="accuracy" time="0">
      <system-out>PASS mmlu_pro/numeric: no regression beyond the margin</system-out>
    </testcase>
    <system-out>metacog gate: PASS (exit 0): cand vs baseline None; 1 gated test(s): 0 failed, \
0 inconclusive, 1 passed
warning: w1
warning: w2</system-out>
  </testsuite>
</testsuites>
"""


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch):
    def set_host(name: str) -> None:
        monkeypatch.setattr(gr.socket, "gethostname", lambda: name)

    set_host("ci-host")
    return set_host


def test_junit_of_a_pass_by_hand(host) -> None:
    verdict = verdict_of("pass", 0, [T3], warnings=("w1", "w2"), baseline_model=None)
    assert junit_xml(verdict, timestamp=STAMP) == JUNIT_PASS
    host("")
    root = ET.fromstring(junit_xml(verdict, timestamp=STAMP))
    assert root.find("testsuite").get("hostname") == "localhost"
    host("ci\x01host")
    root = ET.fromstring(junit_xml(verdict, timestamp=STAMP))
    assert root.find("testsuite").get("hostname") == "ci?host"


def test_junit_default_timestamp_is_now_in_utc_to_the_second(host) -> None:
    verdict = verdict_of("pass", 0, [T3])
    before = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    stamp = ET.fromstring(junit_xml(verdict)).find("testsuite").get("timestamp")
    after = datetime.now(UTC).replace(tzinfo=None)
    assert len(stamp) == len("2026-03-04T05:06:07")
    assert before <= datetime.fromisoformat(stamp) <= after + timedelta(seconds=1)


def _suites(root: ET.Element) -> list[tuple[dict, list[tuple[dict, str, dict, str]]]]:
    out = []
    for suite in root.findall("testsuite"):
        cases = []
        for case in suite.findall("testcase"):
            (child,) = list(case)
            cases.append((dict(case.attrib), child.tag, dict(child.attrib), child.text))
        out.append((dict(suite.attrib), cases))
    return out


def test_junit_of_a_failure_has_one_case_per_benchmark_and_metric(host) -> None:
    root = ET.fromstring(junit_xml(FAIL, timestamp=STAMP))
    assert root.attrib == {
        "name": "metacog gate", "tests": "5", "failures": "1", "errors": "0", "skipped": "2",
        "time": "0",
    }  # fmt: skip
    suites = _suites(root)
    common = {"time": "0", "timestamp": "2026-03-04T05:06:07", "hostname": "ci-host"}
    mmlu = {"classname": "metacog_gate.mmlu_pro", "time": "0"}
    squad = {"classname": "metacog_gate.squad", "time": "0"}
    assert suites == [
        (
            {"name": "metacog gate: mmlu_pro", "tests": "3", "failures": "0", "errors": "0",
             "skipped": "1", **common},
            [
                ({**mmlu, "name": "brier"}, "skipped", {"message": "inconclusive: " + R5},
                 "INCONCLUSIVE mmlu_pro/numeric/logit: " + R5),
                ({**mmlu, "name": "ece"}, "system-out", {},
                 "INFO mmlu_pro/numeric/logit: not gated"),
                ({**mmlu, "name": "accuracy"}, "system-out", {}, "PASS mmlu_pro/numeric: " + R3),
            ],
        ),
        (
            {"name": "metacog gate: squad", "tests": "2", "failures": "1", "errors": "0",
             "skipped": "1", **common},
            [
                # the message is the first failing test's reason; the text lists the probes
                # and kinds sorted by verdict, then name
                ({**squad, "name": "auroc"}, "failure", {"message": R1, "type": "regression"},
                 f"FAIL squad/prospective/logit: {R6}\nFAIL squad/prospective/verbal: {R1}"),
                ({**squad, "name": "brier"}, "skipped", {"message": "inconclusive: " + R2},
                 "INCONCLUSIVE squad/prospective/verbal: " + R2),
            ],
        ),
    ]  # fmt: skip
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props == {
        "status": "fail", "exit_code": "1", "baseline_model": "base", "candidate_model": "cand",
        "config_fingerprint": "fedcba9876543210" + "0" * 48,
    }  # fmt: skip
    out = [s.find("system-out").text for s in root.findall("testsuite")]
    assert out == [f"{HEAD_FAIL}\nwarning: {W1}\nwarning: {W2}"] * 2


def test_junit_inconclusive_fails_when_the_config_says_so(host) -> None:
    config = GateConfig(n_boot=500, inconclusive="fail")
    verdict = dataclasses.replace(FAIL, status="inconclusive", exit_code=3, config=config)
    root = ET.fromstring(junit_xml(verdict, timestamp=STAMP))
    assert (root.get("failures"), root.get("skipped")) == ("3", "0")
    brier = [c for c in root.iter("testcase") if c.get("name") == "brier"]
    assert [dict(c.find("failure").attrib) for c in brier] == [
        {"message": "inconclusive: " + R5, "type": "inconclusive"},
        {"message": "inconclusive: " + R2, "type": "inconclusive"},
    ]


def test_junit_case_verdict_and_line_order_follow_fail_inconclusive_pass_info(host) -> None:
    tests = [
        mt("b", "p2", None, "auroc", "pass", "ok"),
        mt("b", "p1", None, "auroc", "info", "shown", gated=False),
        mt("b", "p3", None, "auroc", "inconclusive", "wide"),
        mt("b", "p4", None, "auroc", "fail", "worse"),
        mt("b", "p5", None, "auroc", "fail", ""),
    ]
    root = ET.fromstring(junit_xml(verdict_of("fail", 1, tests), timestamp=STAMP))
    ((_, [(_, tag, attrib, text)]),) = _suites(root)
    assert (tag, attrib) == ("failure", {"message": "worse", "type": "regression"})
    assert text.split("\n") == [
        "FAIL b/p4: worse", "FAIL b/p5: ", "INCONCLUSIVE b/p3: wide", "PASS b/p2: ok",
        "INFO b/p1: shown",
    ]  # fmt: skip
    # the worst is inconclusive (pass and info below it), then pass, then info alone
    for verdicts, tag in (
        (["pass", "inconclusive", "pass"], "skipped"),
        (["pass", "pass"], "system-out"),
    ):
        tests = [mt("b", f"p{i}", None, "auroc", v, v) for i, v in enumerate(verdicts)]
        root = ET.fromstring(junit_xml(verdict_of("pass", 0, tests), timestamp=STAMP))
        assert [c.tag for c in root.find(".//testcase")] == [tag], verdicts
    # a failure with an empty reason still carries a message
    root = ET.fromstring(junit_xml(verdict_of("fail", 1, [tests[0], mt("c", "p", None,
                         "auroc", "fail", "")]), timestamp=STAMP))  # fmt: skip
    failure = root.find(".//failure")
    assert failure.attrib == {"message": "failure", "type": "regression"}


def test_junit_orders_benchmarks_then_known_metrics_then_other_names(host) -> None:
    names = ["zeta", "unparseable", "alpha_custom", "yes_rate", "auroc", "accuracy", "ece",
             "internal_pop_gap", "brier"]  # fmt: skip
    tests = [mt(b, "p", None, m, "pass", "ok") for b in ("z", "a") for m in names]
    root = ET.fromstring(junit_xml(verdict_of("pass", 0, tests), timestamp=STAMP))
    got = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    order = ["auroc", "internal_pop_gap", "brier", "ece", "accuracy", "yes_rate", "unparseable",
             "alpha_custom", "zeta"]  # fmt: skip
    assert got == [(f"metacog_gate.{b}", m) for b in ("a", "z") for m in order]
    assert [s.get("name") for s in root.findall("testsuite")] == [
        "metacog gate: a",
        "metacog gate: z",
    ]


def test_junit_of_a_refusal_is_one_error_case(host) -> None:
    root = ET.fromstring(junit_xml(ERROR, timestamp=STAMP))
    assert root.attrib == {
        "name": "metacog gate", "tests": "1", "failures": "0", "errors": "1", "skipped": "0",
        "time": "0",
    }  # fmt: skip
    first = "the item sets differ: 'squad-00004' only in the baseline"
    assert _suites(root) == [
        (
            {"name": "metacog gate: input", "tests": "1", "failures": "0", "errors": "1",
             "skipped": "0", "time": "0", "timestamp": "2026-03-04T05:06:07",
             "hostname": "ci-host"},
            [({"classname": "metacog_gate", "name": "input", "time": "0"}, "error",
              {"message": first, "type": "unusable input"}, first + "\na | b <script>")],
        )
    ]  # fmt: skip
    assert root.find("testsuite/system-out").text == HEAD_ERROR + "\nwarning: w"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["status"] == "error" and props["exit_code"] == "2"
    assert props["baseline_model"] == props["candidate_model"] == ""
    none = GateVerdict.refused([], GateConfig(n_boot=500))
    error = ET.fromstring(junit_xml(none, timestamp=STAMP)).find(".//error")
    assert (error.get("message"), error.text) == ("unusable input", None)


def test_junit_replaces_what_xml_cannot_hold(host) -> None:
    bad = "".join(["a\x00", "b\x08", "c\x0b", "d\x0c", "e\x0e", "f\x1f", "g\ufffe", "h\uffff"])
    kept = "t\tn\nr\x7f\x80\ud7ff\ue000"
    verdict = verdict_of("pass", 0, [T3], candidate_model=bad + kept)
    root = ET.fromstring(junit_xml(verdict, timestamp=STAMP))
    value = root.find(".//property[@name='candidate_model']").get("value")
    assert value == "a?b?c?d?e?f?g?h?" + kept
    refusal = GateVerdict.refused(["bad\x01row\n2"], GateConfig(n_boot=500))
    error = ET.fromstring(junit_xml(refusal, timestamp=STAMP)).find(".//error")
    assert (error.get("message"), error.text) == ("bad?row\n2", "bad?row\n2")


# ------------------------------------------------------------------------------ JSON


def test_verdict_json_puts_format_and_headline_first_and_extra_last() -> None:
    text = verdict_json(FAIL, extra={"inputs": {"baseline": "b"}, "status": "overridden"})
    assert text.startswith(
        '{\n  "format": "metacog-gate-verdict",\n  "format_version": 1,\n'
        f'  "headline": "{HEAD_FAIL}",\n  "status": "overridden",\n  "exit_code": 1,\n'
    )
    assert text.endswith('\n  "inputs": {\n    "baseline": "b"\n  }\n}\n')
    data = json.loads(text)
    assert list(data)[:3] == ["format", "format_version", "headline"]
    assert list(data)[-1] == "inputs" and data["tests"][5]["change"] is None
    plain = json.loads(verdict_json(ERROR))
    assert plain["status"] == "error" and "inputs" not in plain and plain["tests"] == []
    with pytest.raises(ValueError, match="Out of range float values"):
        verdict_json(ERROR, extra={"x": NAN})


# ------------------------------------------------------------------------------ annotations


def test_annotations_of_a_failure_by_hand() -> None:
    assert github_annotations(FAIL) == [
        "::error title=metacog gate%3A squad auroc regressed::squad/prospective/verbal: "
        + R1 + " (and 1 more probe/kind)",
        "::warning title=metacog gate%3A 2 inconclusive test(s)::mmlu_pro brier, squad brier: "
        "the interval of the change straddles the margin (passing: set inconclusive: fail to "
        "exit 3)",
        "::warning title=metacog gate%3A warning::baseline records carry%0A  no provenance",
        "::warning title=metacog gate%3A warning::" + W2,
    ]  # fmt: skip
    hard = dataclasses.replace(FAIL, config=GateConfig(n_boot=500, inconclusive="fail"))
    assert github_annotations(hard)[1] == (
        "::warning title=metacog gate%3A 2 inconclusive test(s)::mmlu_pro brier, squad brier: "
        "the interval of the change straddles the margin"
    )
    one = verdict_of("fail", 1, [T6])
    assert github_annotations(one) == [
        "::error title=metacog gate%3A squad auroc regressed::squad/prospective/logit: " + R6
    ]
    assert github_annotations(verdict_of("pass", 0, [T3])) == []


def test_annotations_escape_data_and_properties() -> None:
    verdict = GateVerdict.refused(["50% of\r\nrows: a, b"], GateConfig(n_boot=500))
    assert github_annotations(verdict) == [
        "::error title=metacog gate%3A unusable input::50%25 of%0D%0Arows: a, b"
    ]
    tests = [mt("b%1,\r\n:", "p", None, "auroc", "fail", "x")]
    (line,) = github_annotations(verdict_of("fail", 1, tests))
    assert (
        line
        == "::error title=metacog gate%3A b%251%2C%0D%0A%3A auroc regressed::b%251,%0D%0A:/p: x"
    )


def test_annotations_are_capped_per_kind() -> None:
    fails = [mt(f"b{i}", "p", None, "auroc", "fail", f"r{i}") for i in range(4)]
    warns = tuple(f"w{i}" for i in range(3))
    verdict = verdict_of("fail", 1, fails, warnings=warns)
    err = "::error title=metacog gate%3A "
    # at the cap: every line; one over: the last line counts the rest, by title when the
    # titles tell them apart, else by message
    assert github_annotations(verdict, limit=4) == [
        *(f"{err}b{i} auroc regressed::b{i}/p: r{i}" for i in range(4)),
        *(f"::warning title=metacog gate%3A warning::w{i}" for i in range(3)),
    ]
    assert github_annotations(verdict, limit=3) == [
        f"{err}b0 auroc regressed::b0/p: r0",
        f"{err}b1 auroc regressed::b1/p: r1",
        f"{err}2 more problem(s)::b2 auroc regressed; b3 auroc regressed",
        *(f"::warning title=metacog gate%3A warning::w{i}" for i in range(3)),
    ]
    assert github_annotations(verdict, limit=2)[-2:] == [
        "::warning title=metacog gate%3A warning::w0",
        "::warning title=metacog gate%3A 2 more warning(s)::w1; w2",
    ]
    # without a limit, the config's max_annotations
    capped = dataclasses.replace(verdict, config=GateConfig(n_boot=500, max_annotations=2))
    assert github_annotations(capped) == [
        f"{err}b0 auroc regressed::b0/p: r0",
        f"{err}3 more problem(s)::b1 auroc regressed; b2 auroc regressed; b3 auroc regressed",
        "::warning title=metacog gate%3A warning::w0",
        "::warning title=metacog gate%3A 2 more warning(s)::w1; w2",
    ]
    assert len(github_annotations(capped, limit=10)) == 7


def test_annotation_summary_is_cut_after_2000_characters() -> None:
    # two rest messages joined by "; ": 998 + 2 + 1000 = 2000 characters are kept whole
    for size, cut in ((1000, False), (1001, True)):
        warns = ("w0", "x" * 998, "y" * size)
        verdict = verdict_of("pass", 0, [], warnings=warns)
        last = github_annotations(verdict, limit=2)[-1]
        prefix = "::warning title=metacog gate%3A 2 more warning(s)::"
        whole = "x" * 998 + "; " + "y" * size
        assert last == prefix + (whole[:2000] + " ..." if cut else whole), size


@pytest.mark.parametrize("verdict_name", ["inconclusive", "pass", "info"])
def test_markdown_halves_from_the_longest_section_whichever_it_is(verdict_name) -> None:
    # one regression and five rows of another section: the rows kept start from 5 (5 -> 2)
    tests = _rows(1, "fail", "worse") + [
        mt(f"c{i}", "p", None, "accuracy", verdict_name, "r", gated=verdict_name != "info")
        for i in range(5)
    ]
    verdict = verdict_of("fail", 1, tests)
    full = markdown_summary(verdict)
    cut = markdown_summary(verdict, limit=len(full.encode()) - 1)
    rows = [line for line in cut.split("\n") if line.startswith("| c")]
    assert [r.split(" ")[1] for r in rows] == ["c0/p:", "c1/p:"]
    assert "... and 3 more rows (see the JSON or JUnit report)" in cut
    assert "| b0/p: **accuracy** |" in cut and "(truncated)" not in cut


def test_junit_default_timestamp_is_utc_whatever_the_local_zone(host, monkeypatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Etc/GMT-9")  # nine hours east of UTC
    time.tzset()
    try:
        stamp = ET.fromstring(junit_xml(verdict_of("pass", 0, [T3]))).find("testsuite")
        now = datetime.now(UTC).replace(tzinfo=None)
        got = datetime.fromisoformat(stamp.get("timestamp"))
        assert abs((got - now).total_seconds()) < 5
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_junit_reports_an_ungated_case_whatever_its_verdict_word(host) -> None:
    # ungated tests are "info" as the gate writes them; a case of ungated tests passes (it
    # cannot fail the gate) even when their verdict word is another one
    tests = [mt("b", "p", None, "ece", "pass", "shown", gated=False)]
    root = ET.fromstring(junit_xml(verdict_of("pass", 0, tests), timestamp=STAMP))
    (case,) = root.iter("testcase")
    assert [(c.tag, c.text) for c in case] == [("system-out", "PASS b/p: shown")]


def test_interval_ends_are_signed_both_above_and_below_zero() -> None:
    up = mt("b", "p", None, "accuracy", "pass", "ok", change=0.03, ci=(0.01, 0.05))
    down = mt("b", "q", None, "accuracy", "fail", "bad", change=-0.03, ci=(-0.05, -0.01))
    lines = markdown_summary(verdict_of("fail", 1, [down, up])).split("\n")
    assert "| b/p: **accuracy** | 0.500 | 0.500 | +0.030 | [+0.010, +0.050] | 0.02 | 400 |" in lines
    assert (
        "| b/q: **accuracy** | 0.500 | 0.500 | -0.030 | [-0.050, -0.010] | 0.02 | 400 | bad |"
        in lines
    )
