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
    assert "Item coverage" in text and "min_coverage" in text
    assert text.count("<td>yes</td>") >= 8  # every simulated model is included
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


def _section(taus, coef, r2, p, vertex):
    return {
        "tetrachoric": {"tau": list(taus), "models": [f"m{i}" for i in range(len(taus))]},
        "eigen": {
            "quadratic_coef": list(coef),
            "quadratic_r2": r2,
            "quadratic_p_value": p,
            "quadratic_vertex": vertex,
        },
    }


@pytest.mark.parametrize(
    ("taus", "coef", "r2", "p", "vertex", "starts"),
    [
        # 3 models: a quadratic always fits, whatever R^2 says
        ([-1.0, 0.0, 1.0], (0.5, 0.0, -0.2), 1.0, None, 0.0, "no shape named (3 distinct"),
        # 5 distinct thresholds, even with a good fit
        ([-1, -0.5, 0, 0.5, 1], (0.5, 0, -0.2), 0.9, 0.01, 0.0, "no shape named, only 5"),
        # upward curvature
        ([-1, -0.6, -0.2, 0.2, 0.6, 1], (0.5, 0, 0.2), 0.9, 0.01, 0.0, "not an inverted"),
        # vertex outside the thresholds' range
        ([-1, -0.6, -0.2, 0.2, 0.6, 1], (0.5, 1, -0.2), 0.9, 0.01, 2.5, "loadings fall off"),
        # the weak fits: R^2 0.04-0.24
        ([-1, -0.6, -0.2, 0.2, 0.6, 1, 1.2, 1.4], (0.5, 0, -0.2), 0.24, 0.3, 0.0, "no clear"),
        # a fit worth naming
        ([-1, -0.6, -0.2, 0.2, 0.6, 1], (0.5, 0, -0.2), 0.9, 0.01, 0.0, "an inverted parabola"),
    ],
)
def test_parabola_named_only_under_its_conditions(taus, coef, r2, p, vertex, starts) -> None:
    from metacog_metrics.report import _parabola

    assert _parabola(_section(taus, coef, r2, p, vertex)).startswith(starts)


def test_findings_name_their_basis_and_the_threshold_convention(result) -> None:
    summary = result.summary
    group = summary["results"]["squad"]["prospective"]
    findings = headline_findings(summary)
    n_conf = len(group["confidence"]["tetrachoric"]["models"])
    assert group["confidence"]["basis"]["n_models"] == n_conf
    assert f"{n_conf} models x {group['n_items']} items" in findings[0]
    assert "Phi^-1(P(confidence = 0))" in findings[0]
    n_pairs = group["pairwise"]["n_pairs_valid"]
    assert f"{group['n_models']} models x {group['n_items']} items, {n_pairs} pairs" in findings[1]
    assert f"{group['n_models']} models x {group['n_items']} complete-case items" in findings[2]


def test_findings_on_ragged_runs_name_each_figures_own_basis() -> None:
    summary = {"results": {"b": {"p": {
        "status": "ok", "n_models": 5, "n_items": 120,
        "confidence": {
            "method": "polychoric",
            "polychoric": {"tau": [-1, -0.5, 0, 0.5, 1], "models": list("abcde")},
            "eigen": {"first_share": 0.6, "quadratic_coef": [0.5, 0, -0.2],
                      "quadratic_r2": 0.9, "quadratic_p_value": 0.01, "quadratic_vertex": 0},
            "basis": {"n_models": 5, "items": "pairwise-complete", "n_items": 200,
                      "n_items_per_pair": {"min": 120, "median": 200.0, "max": 200}},
        },
        "pairwise": {"mean_tau": 0.03, "nulls": {}, "n_pairs_valid": 10,
                     "basis": {"n_models": 5, "n_pairs": 10, "items": "pairwise-complete",
                               "n_items": 200,
                               "n_items_per_pair": {"min": 120, "median": 180.0, "max": 200}}},
        "factor_alignment": {"all": {"r": 0.4}, "contentious": {"r": 0.2, "n_items": 30},
                             "method": "minres; confidence polychoric over levels",
                             "basis": {"n_models": 5, "items": "complete-case",
                                       "n_items": 120}},
    }}}}  # fmt: skip
    f = headline_findings(summary)
    assert "5 models, each pair on the items both answered: 120 to 200 (median 200) of 200" in f[0]
    assert "polychoric confidence variance" in f[0] and "pooled median" in f[0]
    assert "no shape named, only 5 distinct thresholds" in f[0]
    assert "5 models, 10 pairs, each pair on the items both answered: 120 to 200 (median 180)" in (
        f[1])  # fmt: skip
    assert "5 models x 120 complete-case items" in f[2] and "30 contentious items" in f[2]
    assert "(pass rate within the bounds)" in f[2]
