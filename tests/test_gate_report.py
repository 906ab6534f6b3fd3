"""The gate's reports: JUnit against a schema, Markdown through a CommonMark parser, GitHub
annotations, JSON and the terminal table, all from one verdict."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree
from markdown_it import MarkdownIt

from metacog_metrics.gate import GateConfig, GateVerdict, gate_records
from metacog_metrics.gate_report import (
    MARKDOWN_LIMIT,
    github_annotations,
    junit_xml,
    markdown_summary,
    terminal_report,
    verdict_json,
)
from metacog_metrics.records import validate_records
from metacog_metrics.simulate import simulate_records
from metacog_tasks.sim import preset_params

SCHEMA = Path(__file__).parent / "data" / "junit.xsd"
CONFIG = GateConfig(n_boot=300)


def _side(ss=None, **overrides):
    df = simulate_records(
        preset_params("paper", **overrides), n_models=4, items_per_benchmark=400,
        benchmarks=["squad", "mmlu_pro"], seed=0, sampling_seed=ss,
        probes=("prospective", "numeric"),
    )  # fmt: skip
    return validate_records(df[df["model"] == "m03"])


@pytest.fixture(scope="module")
def verdicts() -> dict[str, GateVerdict]:
    base = _side()
    cand = base[base["item_id"] != "squad-00004"]
    return {
        "pass": gate_records(base, base, CONFIG),
        "fail": gate_records(base, _side(7, reading_noise_sd=4.0), CONFIG),
        "inconclusive": gate_records(base, _side(3), CONFIG),
        "inconclusive_fails": gate_records(
            base, _side(3), GateConfig(n_boot=300, inconclusive="fail")
        ),
        "error": gate_records(base, cand, CONFIG),
    }


@pytest.fixture(scope="module")
def schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(SCHEMA)))


# ------------------------------------------------------------------------------ JUnit


def test_every_verdict_gives_junit_that_validates(verdicts, schema) -> None:
    for name, verdict in verdicts.items():
        doc = etree.fromstring(junit_xml(verdict).encode())
        assert schema.validate(doc), (name, schema.error_log.last_error)


def test_junit_has_one_case_per_benchmark_and_metric(verdicts) -> None:
    verdict = verdicts["fail"]
    root = etree.fromstring(junit_xml(verdict).encode())
    cases = root.findall(".//testcase")
    expected = {(t.benchmark, t.metric) for t in verdict.tests}
    got = {(c.get("classname").removeprefix("metacog_gate."), c.get("name")) for c in cases}
    assert got == expected and len(cases) == len(expected)
    # a case fails when any of its probes/kinds fails; the message is that test's reason
    failing = {(t.benchmark, t.metric) for t in verdict.failed}
    failed = {
        (c.get("classname").removeprefix("metacog_gate."), c.get("name"))
        for c in cases
        if c.find("failure") is not None
    }
    assert failed == failing and int(root.get("failures")) == len(failing)
    auroc = next(c for c in cases if c.get("name") == "auroc" and c.find("failure") is not None)
    assert auroc.find("failure").get("message").startswith("regression: auroc")
    assert auroc.find("failure").get("type") == "regression"
    suites = root.findall("testsuite")
    assert sum(int(s.get("tests")) for s in suites) == int(root.get("tests")) == len(cases)
    props = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert props["exit_code"] == "1" and props["status"] == "fail"


def test_junit_marks_inconclusive_as_skipped_or_failed_by_the_config(verdicts) -> None:
    soft = etree.fromstring(junit_xml(verdicts["inconclusive"]).encode())
    hard = etree.fromstring(junit_xml(verdicts["inconclusive_fails"]).encode())
    n_soft = len(soft.findall(".//testcase/skipped"))
    assert n_soft > 0 and not soft.findall(".//testcase/failure")
    assert len(hard.findall(".//testcase/failure[@type='inconclusive']")) == n_soft
    assert not hard.findall(".//testcase/skipped")


def test_a_refusal_is_one_error_case_naming_the_problem(verdicts) -> None:
    root = etree.fromstring(junit_xml(verdicts["error"]).encode())
    (case,) = root.findall(".//testcase")
    error = case.find("error")
    assert root.get("errors") == "1" and error.get("type") == "unusable input"
    assert "'squad-00004'" in error.get("message") + error.text


def test_junit_survives_control_characters_in_names(verdicts, schema) -> None:
    verdict = dataclasses.replace(verdicts["pass"], candidate_model="bad\x01name\x1b[0m <&>")
    doc = etree.fromstring(junit_xml(verdict).encode())
    assert schema.validate(doc)
    value = doc.find(".//property[@name='candidate_model']").get("value")
    assert value == "bad?name?[0m <&>"


def test_the_schema_accepts_pytests_junit_and_rejects_malformed_reports(tmp_path, schema) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_ok(record_property):\n    record_property('k', 'v')\n"
        "def test_bad():\n    assert 1 == 2\n"
        "@pytest.mark.skip(reason='no')\ndef test_skip():\n    pass\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('x')\n"
        "def test_error(broken):\n    pass\n"
    )
    for family in ("xunit1", "xunit2"):
        out = tmp_path / f"{family}.xml"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py",
             f"--junitxml={out}", "-o", f"junit_family={family}"],
            cwd=tmp_path, capture_output=True, timeout=120, check=False,
            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        )  # fmt: skip
        doc = etree.parse(str(out))
        assert schema.validate(doc), (family, schema.error_log.last_error)
        assert doc.getroot().find(".//failure") is not None
    good = (
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0">'
        '<testcase classname="c" name="n"/></testsuite></testsuites>'
    )
    assert schema.validate(etree.fromstring(good))
    for bad in (
        good.replace(' name="n"', ""),  # a case without a name
        good.replace('failures="0"', 'failures="two"'),  # a count that is no integer
        good.replace('tests="1" ', ""),  # a suite that does not state its count
        '<testsuites><testcase classname="c" name="n"/></testsuites>',  # a case outside a suite
        good.replace("<testcase", "<failure/><testcase"),  # a failure outside a case
    ):
        assert not schema.validate(etree.fromstring(bad)), bad


# ------------------------------------------------------------------------------ Markdown


def _check_markdown(text: str) -> list:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    # every table parses as a table, each row with the header's number of cells
    separators = sum(1 for line in text.splitlines() if line.startswith("|---"))
    tables = [i for i, t in enumerate(tokens) if t.type == "table_open"]
    assert len(tables) == separators
    for start in tables:
        widths, cells = [], 0
        for tok in tokens[start:]:
            if tok.type in ("th_open", "td_open"):
                cells += 1
            elif tok.type == "tr_close":
                widths.append(cells)
                cells = 0
            elif tok.type == "table_close":
                break
        assert len(set(widths)) == 1 and len(widths) >= 2, widths
    html = "".join(t.content for t in tokens if t.type == "html_block")
    assert html.count("<details>") == html.count("</details>")
    assert html.count("<summary>") == html.count("</summary>") == html.count("<details>")
    return tokens


def test_markdown_parses_with_folded_details(verdicts) -> None:
    for name, verdict in verdicts.items():
        text = markdown_summary(verdict)
        tokens = _check_markdown(text)
        heading = next(
            t for i, t in enumerate(tokens) if i and tokens[i - 1].type == "heading_open"
        )
        assert f"(exit {verdict.exit_code})" in heading.content, name
    fail = markdown_summary(verdicts["fail"])
    # failures shown, passing rows folded
    assert fail.index("### Regressions") < fail.index("<details>")
    assert "<summary>Passed (" in fail and "regression: auroc" in fail


def test_markdown_escapes_pipes_and_html_in_cells(verdicts) -> None:
    verdict = dataclasses.replace(verdicts["error"], refusals=("a | b <script>x</script>",))
    text = markdown_summary(verdict)
    _check_markdown(text)
    assert "<script>" not in text and "a \\| b" in text


def test_markdown_stays_under_the_limit(verdicts) -> None:
    big = dataclasses.replace(verdicts["fail"], tests=verdicts["fail"].tests * 400)
    text = markdown_summary(big)
    assert len(text.encode()) <= MARKDOWN_LIMIT < 1024 * 1024
    assert "more rows (see the JSON or JUnit report)" in text
    _check_markdown(text)
    small = markdown_summary(big, limit=20_000)
    assert len(small.encode()) <= 20_000 and "### Regressions" in small


# ------------------------------------------------------------------------------ annotations


def test_annotations_are_aggregated_capped_and_escaped(verdicts) -> None:
    verdict = verdicts["fail"]
    lines = github_annotations(verdict)
    errors = [x for x in lines if x.startswith("::error ")]
    failing_cases = {(t.benchmark, t.metric) for t in verdict.failed}
    assert len(errors) == len(failing_cases) and len(verdict.failed) >= len(failing_cases)
    assert all(x.startswith("::error title=metacog gate%3A ") for x in errors)
    capped = github_annotations(verdict, limit=2)
    assert sum(x.startswith("::error") for x in capped) == min(2, len(failing_cases))
    if len(failing_cases) > 2:
        assert "more problem(s)" in [x for x in capped if x.startswith("::error")][-1]
    warned = dataclasses.replace(verdict, warnings=("100% sure,\nnext line: here",))
    last = github_annotations(warned)[-1]
    assert last == "::warning title=metacog gate%3A warning::100%25 sure,%0Anext line: here"
    assert all("\n" not in x for x in github_annotations(warned))


def test_refusals_and_inconclusive_tests_are_annotated(verdicts) -> None:
    errors = github_annotations(verdicts["error"])
    assert len(errors) == len(verdicts["error"].refusals) == 3  # both squad probes, the hint
    assert all(e.startswith("::error title=metacog gate%3A unusable input::") for e in errors)
    assert "'squad-00004'" in errors[0] and "allow_shared_items" in errors[2]
    many = dataclasses.replace(verdicts["error"], refusals=tuple(f"problem {i}" for i in range(15)))
    lines = github_annotations(many)
    assert len(lines) == 10 and lines[8].endswith("::problem 8")
    assert lines[9] == (
        "::error title=metacog gate%3A 6 more problem(s)::"
        "problem 9; problem 10; problem 11; problem 12; problem 13; problem 14"
    )
    soft = github_annotations(verdicts["inconclusive"])
    assert soft[0].startswith("::warning title=metacog gate%3A ")
    assert "inconclusive test(s)" in soft[0] and "set inconclusive: fail to exit 3" in soft[0]


# ------------------------------------------------------------------------------ JSON, text


def test_json_and_terminal_report_say_what_the_exit_code_says(verdicts) -> None:
    for verdict in verdicts.values():
        data = json.loads(verdict_json(verdict, extra={"inputs": {"baseline": "b"}}))
        assert data["format"] == "metacog-gate-verdict" and data["inputs"] == {"baseline": "b"}
        assert data["exit_code"] == verdict.exit_code and data["status"] == verdict.status
        assert data["headline"] == verdict.headline()
        text = terminal_report(verdict).splitlines()
        assert text[0] == text[-1] == verdict.headline()
        assert f"(exit {verdict.exit_code})" in text[0]
    fail = terminal_report(verdicts["fail"])
    assert "Regressions:" in fail and "regression: auroc" in fail
    assert json.loads(verdict_json(verdicts["error"]))["tests"] == []
