"""report.html and the headline findings, on a simulated population with a known structure."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from metacog_metrics.analyze import analyze_records
from metacog_metrics.report import headline_findings, render_report, write_report
from metacog_metrics.simulate import get_preset, simulate_records
from tests.availability import unavailable

NS = "{http://www.w3.org/2000/svg}"
ALTS = ["scree and loadings", "tetrachoric matrices", "pairwise nulls and delta curve",
        "per-model calibration"]  # fmt: skip


def _svgs(text: str) -> list[ET.Element]:
    """Every inline figure of a page, parsed as XML (so each is well-formed)."""
    return [ET.fromstring(s) for s in re.findall(r"<svg .*?</svg>", text, flags=re.S)]


def _cls(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(NS + tag) if e.get("class") == cls]


def _entries(panel: ET.Element) -> list[str]:
    return ["".join(e.itertext()) for e in _cls(panel, "g", "legend-entry")]


def _markers(group: ET.Element) -> int:
    return len(group.findall(f".//{NS}circle")) + len(group.findall(f".//{NS}rect"))


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
    # structure, heatmaps, nulls + delta curve, calibration + alignment: inline SVG, no PNG
    figures = _svgs(text)
    assert [f.find(NS + "title").text for f in figures] == ALTS
    assert all(f.get("role") == "img" for f in figures)
    assert "data:image/png" not in text and "<img " not in text
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
    # only the per-model calibration
    assert [f.find(NS + "title").text for f in _svgs(text)] == ["per-model calibration"]


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


@pytest.fixture(scope="module")
def battery(realruns_dir, tmp_path_factory):
    tidy = realruns_dir / "cacioli_battery_binary" / "tidy.csv"
    if not tidy.exists():
        unavailable(f"{tidy} is not in this checkout of the shared data")
    from metacog_metrics.pipeline import analyze_files

    out = tmp_path_factory.mktemp("battery")
    analyze_files([tidy], out_dir=out, permutations=200, joint_permutations=100, n_boot=50,
                  progress=False)  # fmt: skip
    import json

    return json.loads((out / "summary.json").read_text()), (out / "report.html").read_text()


def test_real_report_figures_show_every_series(battery) -> None:
    """Each figure of the 20-model battery report against summary.json: one legend entry per
    series, one marker per model or item, one heatmap cell per model pair."""
    summary, text = battery
    (bench,) = summary["results"]
    (label,) = summary["results"][bench]
    g = summary["results"][bench][label]
    figures = _svgs(text)
    assert [f.find(NS + "title").text for f in figures] == ALTS
    assert len(text) < 300_000
    models = set(g["models"])
    n = len(models)

    scree, loadings = _cls(figures[0], "g", "axes")
    sections = {k: g[k] for k in ("confidence", "correctness")}
    assert _entries(scree) == [f"{k} (first share {s['eigen']['first_share']:.0%})"
                               for k, s in sections.items()]  # fmt: skip
    assert [_markers(line) for line in _cls(scree, "g", "line")] == [n, n]
    expected = []
    for k, sec in sections.items():
        expected.append(k)
        if sec["eigen"].get("quadratic_r2") is not None:
            expected.append(f"quadratic fit, R\u00b2 = {sec['eigen']['quadratic_r2']:.2f}")
    assert _entries(loadings) == expected
    points = _cls(loadings, "g", "scatter")
    assert [_markers(p) for p in points] == [n, n]
    assert {t.text for t in points[0].iter(NS + "title")} == models  # hover names

    for heat in _cls(figures[1], "g", "heatmap"):
        cells = sum(int(r) for p in heat for r in re.findall(r"h(\d+)v1", p.get("d")))
        assert cells == n * n
    for panel in _cls(figures[1], "g", "axes"):
        assert {"".join(t.itertext()) for t in _cls(panel, "text", "ytick")} == models

    nulls_panel, delta_panel = _cls(figures[2], "g", "axes")
    nulls = g["pairwise"]["nulls"]
    names = {"base_rate": "base-rate-matched null", "private_signal": "private-signal test null",
             "calibration_preserving": "calibration-preserving null"}  # fmt: skip
    entries = _entries(nulls_panel)
    assert len(entries) == len(nulls) + 1 == len(_cls(nulls_panel, "path", "hist")) + 1
    assert [e.split(" (")[0] for e in entries[:-1]] == [names[k] for k in nulls]
    assert entries[-1] == f"observed mean = {g['pairwise']['mean_tau']:.3f}"
    curve = g["pairwise"]["delta_curve"]
    assert _entries(delta_panel) == ["observed"] + [f"{names[k]} (95%)"
                                                    for k in curve["null_mean"]]  # fmt: skip
    assert len(_cls(delta_panel, "path", "band")) == len(curve["null_mean"])
    observed = _cls(delta_panel, "g", "line")[0]
    assert _markers(observed) == sum(v is not None for v in curve["mean_tau"])

    per_model, alignment = _cls(figures[3], "g", "axes")
    internal, pop = _cls(per_model, "g", "scatter")
    assert len(internal.findall(NS + "circle")) == len(pop.findall(NS + "rect")) == n
    assert [t.text for t in _cls(per_model, "text", "ytick")] == list(g["per_model"])
    rest, contentious = _cls(alignment, "g", "scatter")
    fa = g["factor_alignment"]
    assert _markers(contentious) == fa["contentious"]["n_items"]
    assert _markers(rest) + _markers(contentious) == fa["basis"]["n_items"]
    assert _entries(alignment) == [
        f"all items, r = {fa['all']['r']:.2f}",
        f"contentious (own factor fit: r = {fa['contentious']['r']:.2f})",
    ]


def _large_group(n_models: int, n_items: int, seed: int = 0) -> SimpleNamespace:
    """The parts of a GroupAnalysis that the calibration and heatmap figures read."""
    rng = np.random.default_rng(seed)
    names = tuple(f"org/model-{i:03d}" for i in range(n_models))
    per = {m: SimpleNamespace(auroc_internal=rng.uniform(0.5, 0.8), auroc_pop=rng.uniform(0.5, 0.8))
           for m in names}  # fmt: skip
    scores = SimpleNamespace(confidence_scores=rng.normal(size=n_items),
                             correctness_scores=rng.normal(size=n_items), r=0.75)  # fmt: skip
    alignment = SimpleNamespace(all=scores, contentious=SimpleNamespace(r=0.55),
                                contentious_mask=rng.uniform(size=n_items) < 0.3)  # fmt: skip
    rho = np.clip(rng.normal(0.3, 0.2, (n_models, n_models)), -1, 1)
    np.fill_diagonal(rho, 1.0)
    tet = SimpleNamespace(names=names, tau=rng.normal(size=n_models), rho=rho)
    section = SimpleNamespace(tetrachoric=tet, method="tetrachoric")
    return SimpleNamespace(calibration=SimpleNamespace(per_model=per), alignment=alignment,
                           confidence=section, correctness=section)  # fmt: skip


def test_large_inputs_keep_figures_small_and_say_what_is_shown() -> None:
    """100 models x 50,000 items: the alignment scatter draws a seeded subsample that its legend
    names, every model keeps its row, the heatmaps stay ~100 kB with at most 50 names an axis."""
    from metacog_metrics.report import MAX_SCATTER_POINTS, _calibration_figure, _heatmap_figure

    g = _large_group(100, 50_000)
    svg = _calibration_figure(g).to_svg("per-model calibration")
    assert svg == _calibration_figure(g).to_svg("per-model calibration")  # same subsample
    assert len(svg) < 400_000
    root = ET.fromstring(svg)
    per_model, alignment = _cls(root, "g", "axes")
    assert len(_cls(per_model, "text", "ytick")) == 100
    rest, cont = _cls(alignment, "g", "scatter")
    n_cont = int(g.alignment.contentious_mask.sum())
    shown = _markers(rest), _markers(cont)
    assert abs(sum(shown) - MAX_SCATTER_POINTS) <= 1
    assert _entries(alignment) == [
        f"all items, r = 0.75; random {shown[0]:,} of {50_000 - n_cont:,} shown",
        f"contentious (own factor fit: r = 0.55); random {shown[1]:,} of {n_cont:,} shown",
    ]
    heat = _heatmap_figure(g).to_svg("tetrachoric matrices")
    assert len(heat) < 400_000
    for panel in _cls(ET.fromstring(heat), "g", "axes"):
        assert 2 <= len(_cls(panel, "text", "xtick")) <= 50
