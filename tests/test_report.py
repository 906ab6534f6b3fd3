"""report.html and the headline findings, on a simulated population with a known structure."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from metacog_metrics.analyze import analyze_records
from metacog_metrics.report import headline_findings, render_report, write_report
from metacog_metrics.simulate import get_preset, simulate_records


@pytest.fixture(scope="module")
def result():
    df = simulate_records(
        get_preset("paper"), n_models=8, items_per_benchmark=150, benchmarks=["squad"], seed=3
    )
    return analyze_records(df, permutations=200, joint_permutations=100, seed=1)


def test_report_has_every_section_and_valid_images(result, tmp_path: Path) -> None:
    path = write_report(result, tmp_path)
    assert path == tmp_path / "report.html"
    text = path.read_text()
    assert text.startswith("<!doctype html>") and text.rstrip().endswith("</html>")
    assert 'id="squad-prospective"' in text
    for needle in ("Findings", "Per model", "first-factor share, confidence", "m01", "m08"):
        assert needle in text
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    # structure, heatmaps, nulls + delta curve, calibration + alignment
    assert len(images) == 4
    for data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n")
    assert not list(tmp_path.glob(".report.*")), "temporary file left behind"


def test_headline_findings_quote_the_summary(result) -> None:
    summary = result.summary
    group = summary["results"]["squad"]["prospective"]
    findings = headline_findings(summary)
    assert len(findings) == 3
    share = group["confidence"]["eigen"]["first_share"]
    assert f"{share * 100:.0f}%" in findings[0]
    assert f"{group['pairwise']['mean_tau']:.3f}" in findings[1]
    assert f"{group['factor_alignment']['all']['r']:.2f}" in findings[2]


def test_headline_findings_without_usable_groups() -> None:
    summary = {"results": {"squad": {"prospective": {"status": "skipped"}}}}
    assert headline_findings(summary) == [
        "No group had enough models and items for the cross-model analyses."
    ]


def test_skipped_group_is_reported_not_plotted(tmp_path: Path) -> None:
    df = simulate_records(
        get_preset("paper"), n_models=2, items_per_benchmark=30, benchmarks=["squad"], seed=0
    )
    res = analyze_records(df, permutations=50, joint_permutations=20, seed=0)
    text = render_report(res)
    assert "Cross-model analyses skipped" in text
    assert len(re.findall(r"data:image/png", text)) == 1  # only the per-model calibration
