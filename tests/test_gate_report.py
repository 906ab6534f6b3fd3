"""The gate's reports on real verdicts: JUnit against Jenkins' junit-10.xsd (the xunit plugin's
schema, ``tests/data/jenkins-junit-10.xsd``, MIT licence in its header) and the project's
stricter ``tests/data/junit.xsd``, Markdown through a CommonMark parser, annotations, JSON and
the terminal table, all from one verdict of runs of ``tests/gate_generator.py``."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lxml import etree
from markdown_it import MarkdownIt

from metacog_metrics.gate import (
    GateConfig,
    GateVerdict,
    gate_records,
    github_annotations,
    junit_xml,
    markdown_summary,
    terminal_report,
    verdict_json,
)
from tests.gate_generator import ModelSpec, draw_run, make_bank

DATA = Path(__file__).parent / "data"
CONFIG = GateConfig(n_boot=300)


@pytest.fixture(scope="module")
def verdicts() -> dict[str, GateVerdict]:
    bank = make_bank(400, seed=1)
    rng = np.random.default_rng(0)
    base = draw_run(bank, ModelSpec(), rng)
    small = base[base["item_id"].str.endswith(("1", "2"))]  # 80 items a group
    tiny = base[base["item_id"].str.endswith("01")]  # 4 items a group: cannot decide
    return {
        "pass": gate_records(base, draw_run(bank, ModelSpec(), rng), CONFIG),
        "fail": gate_records(base, draw_run(bank, ModelSpec(noise=3.0, ability=-0.5), rng), CONFIG),
        "inconclusive": gate_records(tiny, tiny.assign(model="c", confidence=0.5), CONFIG),
        "inconclusive_fails": gate_records(
            tiny,
            tiny.assign(model="c", confidence=0.5),
            GateConfig(n_boot=300, inconclusive="fail"),
        ),
        "error": gate_records(base, small.iloc[5:].assign(model="c"), CONFIG),
    }


@pytest.fixture(scope="module", params=["jenkins-junit-10.xsd", "junit.xsd"])
def schema(request) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(DATA / request.param)))


# ------------------------------------------------------------------------------ JUnit


def test_every_verdict_gives_junit_that_validates(verdicts, schema) -> None:
    assert {v.status for v in verdicts.values()} == {"pass", "fail", "inconclusive", "error"}
    for name, verdict in verdicts.items():
        doc = etree.fromstring(junit_xml(verdict).encode())
        assert schema.validate(doc), (name, schema.error_log.last_error)
    odd = dataclasses.replace(verdicts["pass"], candidate_model="bad\x01name\x1b[0m <&>")
    assert schema.validate(etree.fromstring(junit_xml(odd).encode()))


def test_jenkins_schema_rejects_what_the_old_reports_wrote() -> None:
    jenkins = etree.XMLSchema(etree.parse(str(DATA / "jenkins-junit-10.xsd")))
    good = (
        '<testsuites name="g" tests="1" failures="0" errors="0">'
        '<testsuite name="s" tests="1" failures="0" errors="0" skipped="0">'
        '<testcase classname="c" name="n"/></testsuite></testsuites>'
    )
    assert jenkins.validate(etree.fromstring(good))
    for bad in (
        good.replace('errors="0">', 'errors="0" skipped="0">', 1),  # testsuites@skipped
        good.replace(' name="n"', ""),  # a case without a name
        good.replace('tests="1" failures="0" errors="0" skipped', "skipped"),  # no counts
    ):
        assert not jenkins.validate(etree.fromstring(bad)), bad


def test_junit_has_one_case_per_benchmark_and_metric(verdicts) -> None:
    verdict = verdicts["fail"]
    root = etree.fromstring(junit_xml(verdict).encode())
    cases = root.findall(".//testcase")
    expected = {(t.benchmark, t.metric) for t in verdict.tests}
    got = {(c.get("classname").removeprefix("metacog_gate."), c.get("name")) for c in cases}
    assert got == expected and len(cases) == len(expected)
    failing = {(t.benchmark, t.metric) for t in verdict.failed}
    failed = {
        (c.get("classname").removeprefix("metacog_gate."), c.get("name"))
        for c in cases
        if c.find("failure") is not None
    }
    assert failed == failing and int(root.get("failures")) == len(failing) > 0


def test_junit_marks_inconclusive_as_skipped_or_failed_by_the_config(verdicts) -> None:
    soft = etree.fromstring(junit_xml(verdicts["inconclusive"]).encode())
    hard = etree.fromstring(junit_xml(verdicts["inconclusive_fails"]).encode())
    n_soft = len(soft.findall(".//testcase/skipped"))
    assert n_soft > 0 and not soft.findall(".//testcase/failure")
    assert len(hard.findall(".//testcase/failure[@type='inconclusive']")) == n_soft


def test_the_projects_schema_accepts_pytests_junit(tmp_path) -> None:
    own = etree.XMLSchema(etree.parse(str(DATA / "junit.xsd")))
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_ok(record_property):\n    record_property('k', 'v')\n"
        "def test_bad():\n    assert 1 == 2\n"
        "@pytest.mark.skip(reason='no')\ndef test_skip():\n    pass\n"
    )
    for family in ("xunit1", "xunit2"):
        out = tmp_path / f"{family}.xml"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py",
             f"--junitxml={out}", "-o", f"junit_family={family}"],
            cwd=tmp_path, capture_output=True, timeout=120, check=False,
            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        )  # fmt: skip
        assert own.validate(etree.parse(str(out))), (family, own.error_log.last_error)


# ------------------------------------------------------------------------------ Markdown


def _check_markdown(text: str) -> list:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
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
    return tokens


def test_markdown_parses_with_folded_details(verdicts) -> None:
    for name, verdict in verdicts.items():
        tokens = _check_markdown(markdown_summary(verdict))
        heading = next(
            t for i, t in enumerate(tokens) if i and tokens[i - 1].type == "heading_open"
        )
        assert f"(exit {verdict.exit_code})" in heading.content, name
    fail = markdown_summary(verdicts["fail"])
    assert fail.index("### Regressions") < fail.index("<details>")


def test_markdown_stays_under_the_limit_and_parses(verdicts) -> None:
    big = dataclasses.replace(verdicts["fail"], tests=verdicts["fail"].tests * 400)
    text = markdown_summary(big, limit=60_000)
    assert len(text.encode()) <= 60_000
    _check_markdown(text)


# ------------------------------------------------------------------------------ the rest


def test_annotations_json_and_terminal_say_what_the_exit_code_says(verdicts) -> None:
    for verdict in verdicts.values():
        data = json.loads(verdict_json(verdict, extra={"inputs": {"baseline": "b"}}))
        assert data["exit_code"] == verdict.exit_code and data["status"] == verdict.status
        lines = terminal_report(verdict).splitlines()
        assert lines[0] == lines[-1] == verdict.headline()
        errors = [x for x in github_annotations(verdict) if x.startswith("::error")]
        assert bool(errors) == (verdict.exit_code in (1, 2))
        assert all("\n" not in x for x in github_annotations(verdict))
