"""report.html: every section, table and figure of each group, the numbers from the result
objects, escaped text, a self-contained page, and matplotlib only when a report is written.

The page is read back with :mod:`html.parser` (tables, headings, links) and the figures as the
SVG text they are (titles, text elements). Numbers are checked against the result objects; no
test pins a paragraph's wording or a position on the page.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from metacog_metrics.analyze import analyze_records
from metacog_metrics.pairwise.nulls import get_null
from metacog_metrics.report import render_report, write_report
from metacog_metrics.simulate import get_preset, simulate_records
from tests.availability import unavailable
from tests.report_pages import GAP, Page, figures, svg_texts

REPO = Path(__file__).resolve().parents[1]
ALTS = [
    "scree and loadings",
    "tetrachoric matrices",
    "pairwise nulls and delta curve",
    "per-model calibration",
]


def key_figures(page: Page) -> list[dict[str, str]]:
    return [dict(t[1:]) for t in page.tables if t and t[0] == ["figure", "value"]]


def f3(x: float) -> str:
    return GAP if x is None or not np.isfinite(x) else f"{x:.3f}"


@pytest.fixture(scope="module")
def result():
    df = simulate_records(
        get_preset("paper"), n_models=8, items_per_benchmark=150, benchmarks=["squad"], seed=3
    )
    return analyze_records(df, permutations=200, joint_permutations=100, seed=1)


@pytest.fixture(scope="module")
def page(result):
    return render_report(result)


def test_report_has_every_section_and_figure(result, tmp_path: Path) -> None:
    path = write_report(result, tmp_path)
    assert path == tmp_path / "report.html"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and text.rstrip().endswith("</html>")
    assert not list(tmp_path.glob(".report.*")), "temporary file left behind"
    p = Page(text)
    assert "squad-prospective" in p.ids and "inline-solving" in p.ids and "text-probes" in p.ids
    for heading in (
        "Findings",
        "Groups",
        "squad / prospective",
        "Item coverage",
        "Per model",
        "By reasoning pair type",
        "Inline solving",
        "Surface-feature probes",
    ):
        assert heading in p.headings, heading
    assert [t for t, _ in figures(text)] == ALTS
    assert "<img" not in text and "data:image/png" not in text.split("<svg", 1)[0]


def test_the_same_result_gives_the_same_page(result, page) -> None:
    assert render_report(result) == page


def test_ids_are_unique_in_the_page(page) -> None:
    """The figures' clip paths and markers are named per figure: no id is defined twice."""
    ids = Page(page).ids
    assert len(ids) == len(set(ids)) > 20


def test_key_figures_are_the_result_objects_numbers(result, page) -> None:
    (g,) = result.groups.values()
    (kf,) = key_figures(Page(page))
    assert kf["models in the cross-model analyses"] == "8 of 8"
    assert g.private_signal is not None  # so the row names it
    assert kf["complete-case items (factor scores, alignment, private-signal test)"] == "150"
    ps = g.private_signal
    assert kf["private-signal test: its basis"] == "8 models x 150 items, 28 pairs"
    assert kf["private-signal test: shift detected with 80% power"] == f3(ps.detectable_shift)
    gap = result.findings.headline.small_gap
    assert gap.n_pairs == int(g.pairwise.delta_curve.n_pairs[list(g.pairwise.delta_curve.delta)
                                                              .index(0.02)])  # fmt: skip
    label = f"small-gap control: mean tau-b of the {gap.n_pairs} pairs within 0.02 accuracy"
    if gap.verdict == "too_few_pairs":
        assert kf[label] == f"n/a (fewer than {gap.min_pairs} pairs)"
    else:
        assert kf[label] == f3(gap.mean_tau)
    from metacog_metrics.report._format import fmt, p_text

    band = kf[f"{get_null('base_rate').label}: 95% band, {p_text(gap.p_value)}"]
    assert band == f"{fmt(gap.null_low)} to {fmt(gap.null_high)}"
    assert kf["first-factor share, confidence (tetrachoric, 8 models)"] == f3(
        g.confidence.eigen.first_share
    )
    assert kf["first-factor share, correctness (tetrachoric, 8 models)"] == f3(
        g.correctness.eigen.first_share
    )
    assert kf["mean pairwise tau-b"] == f3(g.pairwise.mean_tau)
    for name, res in g.pairwise.nulls.items():
        p = res.p_value
        words = f"p = {p:.3g}" if p >= 0.001 else "p < 0.001"
        assert kf[f"{get_null(name).label}: mean, {words}"] == f3(res.mean)
    by_dir = g.pairwise.fdr_share_by_direction("base_rate")
    assert kf["of them above / below the null"] == f"{f3(by_dir['above'])} / {f3(by_dir['below'])}"
    assert kf["factor alignment r, contentious items"] == f3(g.alignment.contentious.r)
    assert kf["contentious items"] == str(g.alignment.contentious.n_items)
    # the same numbers as summary.json
    s = result.summary["results"]["squad"]["prospective"]
    assert kf["mean pairwise tau-b"] == f3(s["pairwise"]["mean_tau"])
    assert kf["factor alignment r, all complete-case items"] == f3(
        s["factor_alignment"]["all"]["r"]
    )


def test_model_tables_are_the_result_objects_numbers(result, page) -> None:
    (g,) = result.groups.values()
    tables = Page(page).tables
    (per_model,) = [t for t in tables if "auroc_internal" in t[0]]
    assert per_model[0] == [
        "model",
        "n_items",
        "accuracy",
        "yes_rate",
        "auroc_internal",
        "auroc_pop",
        "auroc_diff",
        "brier",
        "ece",
        "aurc",
        "n_unparseable",
        "flag",
    ]
    assert [r[0] for r in per_model[1:]] == list(g.calibration.per_model)
    for row in per_model[1:]:
        m = g.calibration.per_model[row[0]]
        assert row[1:] == [
            str(m.n_items),
            f3(m.accuracy),
            f3(m.yes_rate),
            f3(m.auroc_internal),
            f3(m.auroc_pop),
            f3(m.auroc_diff),
            f3(m.brier),
            f3(m.ece),
            f3(m.aurc),
            str(m.n_unparseable),
            "inverted" if m.auroc_internal <= 0.4 else "",
        ]
    (coverage,) = [t for t in tables if t[0] == ["model", "n_items", "share", "included", "reason"]]
    assert [r[0] for r in coverage[1:]] == list(g.coverage["model"])
    assert all(r[3] == "yes" for r in coverage[1:])
    (types,) = [t for t in tables if t[0][0] == "pair type"]
    labels = [get_null(n).label for n in next(iter(g.pairwise.pair_types.values())).p_value]
    assert types[0] == ["pair type", "pairs", "mean tau", *(f"p ({lb})" for lb in labels)]
    for row in types[1:]:
        s = g.pairwise.pair_types[row[0]]
        assert row[1:3] == [str(s.n_pairs), f3(s.mean_tau)]


class _PoisonedSummary(dict):
    """A summary that fails the test on any read: the page must not look at it."""

    def _read(self, *args: object, **kwargs: object) -> object:
        raise AssertionError(f"the report read the summary dict {args!r}")

    __getitem__ = get = __contains__ = __iter__ = __len__ = __bool__ = _read
    keys = values = items = copy = setdefault = pop = _read


def _without_summary(result):
    """The result with its summary dict emptied, and with a summary that fails on any read."""
    return [dataclasses.replace(result, summary={}),
            dataclasses.replace(result, summary=_PoisonedSummary())]  # fmt: skip


def test_the_page_reads_the_result_objects_not_the_summary(result, page) -> None:
    """With the summary dict emptied, or failing on any read, the page is the same: the header,
    the group sections and the findings are built from the result objects alone."""
    for bare in _without_summary(result):
        assert render_report(bare) == page
    # and a result without its findings gets those of its groups
    assert render_report(dataclasses.replace(result, findings=None)) == page


@pytest.fixture(scope="module")
def text_result():
    """Records with rationales, questions and reasoning flags: both text sections are run, one
    group with inline-solved cells and one without."""
    from metacog_tasks.sim.responder import simulate_text_records

    records = simulate_text_records(8, benchmarks=["squad", "mathbench"], replicate=5, seed=3)
    return analyze_records(records, permutations=100, joint_permutations=50, n_boot=50)


def test_the_text_sections_read_the_result_objects_not_the_summary(text_result) -> None:
    res = text_result
    inline, probes = res.inline_solving, res.text_probes
    assert inline is not None and inline.status == "ok"
    shares = {g.benchmark: g.inline_share for g in inline.groups}
    assert shares["squad"] == 0 and shares["mathbench"] > 0  # "none flagged", and flagged
    assert probes is not None and probes.status == "ok" and len(probes.table) > 0
    # the summary entries are the objects' own
    assert res.summary["inline_solving"] == inline.to_dict()
    assert res.summary["text_probes"] == probes.to_dict()
    page = render_report(res)
    assert 'id="inline-solving"' in page and 'id="text-probes"' in page
    assert len(figures(page)) > 4  # the text sections' figures beside the groups'
    for bare in _without_summary(res):
        assert render_report(bare) == page


def test_figures_show_every_series_with_the_registry_labels(result, page) -> None:
    (g,) = result.groups.values()
    figs = dict(figures(page))
    nulls = svg_texts(figs["pairwise nulls and delta curve"])
    for name, res in g.pairwise.nulls.items():
        p = res.p_value
        words = f"p = {p:.3g}" if p >= 0.001 else "p < 0.001"
        assert f"{get_null(name).label} ({words})" in nulls
        assert f"{get_null(name).label} (95%)" in nulls
        assert f"fill: {get_null(name).colour}" in figs["pairwise nulls and delta curve"]
    assert f"observed mean = {g.pairwise.mean_tau:.3f}" in nulls
    scree = svg_texts(figs["scree and loadings"])
    assert f"confidence (first share {g.confidence.eigen.first_share:.0%})" in scree
    # one hover title per model on the loadings and on the per-model AUROCs
    titles = re.findall(r"<use\b[^>]*><title>(.*?)</title></use>", figs["scree and loadings"])
    assert sorted(titles) == sorted(list(g.confidence.eigen.names) * 2)
    calib = figs["per-model calibration"]
    assert set(svg_texts(calib)) >= set(g.calibration.per_model)
    heat = svg_texts(figs["tetrachoric matrices"])
    assert heat.count("m01") == 4  # each matrix names each model on both axes


def test_null_labels_and_colours_come_from_the_registry(result, monkeypatch) -> None:
    import metacog_metrics.pairwise.nulls._registry as registry

    spec = dataclasses.replace(get_null("base_rate"), label="BR <test> null", colour="#123456")
    monkeypatch.setitem(registry._REGISTRY, "base_rate", spec)
    text = render_report(result)
    p = Page(text)
    (kf,) = key_figures(p)
    assert any(k.startswith("BR <test> null: mean") for k in kf)
    assert "p (BR <test> null)" in next(t[0] for t in p.tables if t[0][0] == "pair type")
    nulls = dict(figures(text))["pairwise nulls and delta curve"]
    assert "BR <test> null (95%)" in svg_texts(nulls) and "fill: #123456" in nulls
    assert "base-rate-matched null" not in "".join(svg_texts(nulls))


def _hostile_records() -> tuple:
    names = {
        "m01": '<script>alert("x")</script>',
        "m02": "a & b \"quoted\" 'single'",
        "m03": "price $x^2$ \\frac",
        "m04": "</table><b>bold</b>",
    }
    df = simulate_records(
        get_preset("paper"), n_models=6, items_per_benchmark=60, benchmarks=["squad"], seed=2
    )
    df["model"] = df["model"].replace(names)
    df["benchmark"] = "<i>bench</i>"
    return df, names


def test_text_from_records_is_escaped() -> None:
    df, names = _hostile_records()
    res = analyze_records(df, permutations=30, joint_permutations=20, n_boot=20, seed=0)
    text = render_report(res)
    p = Page(text)
    assert "script" not in p.tags and "b" not in p.tags and "i" not in p.tags
    assert p.tags.count("table") == text.count("<table>")
    cells = {c for t in p.tables for row in t for c in row}
    assert set(names.values()) <= cells  # shown as written, in the tables
    assert "<i>bench</i> / prospective" in p.headings
    for _, svg in figures(text):
        assert "<script" not in svg and "<b>" not in svg and "<i>" not in svg
    per_model = dict(figures(text))["per-model calibration"]
    assert set(names.values()) <= set(svg_texts(per_model))  # no mathtext: "$" stays
    import xml.etree.ElementTree as ET

    for _, svg in figures(text):  # every figure is well-formed XML
        ET.fromstring(svg)


def test_control_characters_in_names_leave_the_figures_well_formed() -> None:
    import xml.etree.ElementTree as ET

    df = simulate_records(
        get_preset("paper"), n_models=5, items_per_benchmark=40, benchmarks=["squad"], seed=1
    )
    df["model"] = df["model"].replace({"m01": "bell\x07model", "m02": "nul\x00x"})
    res = analyze_records(df, permutations=20, joint_permutations=10, n_boot=10, seed=0)
    for _, svg in figures(render_report(res)):
        ET.fromstring(svg)


def test_page_is_self_contained(page) -> None:
    p = Page(page)
    assert p.links and all(link.startswith(("#", "data:")) for link in p.links), p.links
    assert not {"link", "script", "img", "iframe", "object"} & set(p.tags)
    assert "@import" not in page and not re.search(r"url\((?!#)", page)
    assert not re.search(r"<!DOCTYPE svg|<\?xml", page)


def test_skipped_group_is_reported_not_plotted() -> None:
    df = simulate_records(
        get_preset("paper"), n_models=2, items_per_benchmark=30, benchmarks=["squad"], seed=0
    )
    res = analyze_records(df, permutations=50, joint_permutations=20, seed=0)
    text = render_report(res)
    assert "Cross-model analyses skipped" in text
    assert [t for t, _ in figures(text)] == ["per-model calibration"]
    assert not key_figures(Page(text))


def test_matplotlib_is_imported_only_when_a_report_is_written(tmp_path: Path) -> None:
    df = simulate_records(
        get_preset("paper"), n_models=4, items_per_benchmark=30, benchmarks=["squad"], seed=0
    )
    path = tmp_path / "r.csv"
    df.to_csv(path, index=False)
    code = f"""
import sys
import metacog_metrics
from metacog_metrics import analyze_files
import metacog_metrics.report
res = analyze_files([{str(path)!r}], out_dir={str(tmp_path / "a")!r}, report=False,
                    permutations=20, joint_permutations=10, n_boot=10, progress=False)
res.findings.lines()
assert "matplotlib" not in sys.modules, "imported without a report"
analyze_files([{str(path)!r}], out_dir={str(tmp_path / "b")!r}, permutations=20,
              joint_permutations=10, n_boot=10, progress=False)
assert "matplotlib" in sys.modules
assert "matplotlib.pyplot" not in sys.modules, "the report must not touch pyplot"
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
    assert (tmp_path / "b" / "report.html").exists() and not (
        tmp_path / "a" / "report.html"
    ).exists()


def test_templates_are_package_data() -> None:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    setup = data["tool"]["setuptools"]
    assert "jinja2" in " ".join(data["project"]["dependencies"]).lower()
    for package, folder in (
        ("metacog_metrics.report", "metacog_metrics/report/templates"),
        ("rlmf_plugin", "rlmf_plugin/templates"),
    ):
        templates = sorted((REPO / folder).glob("*.j2"))
        assert templates
        patterns = setup["package-data"][package]
        base = REPO / package.replace(".", "/")
        for t in templates:
            assert any(t.relative_to(base).match(pat) for pat in patterns), (t, patterns)
    assert not (REPO / "metacog_metrics" / "svgplot.py").exists()


@pytest.mark.slow
def test_the_wheel_ships_the_templates(tmp_path: Path) -> None:
    import zipfile

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("metacog_metrics/report/templates", "rlmf_plugin/templates"):
        shipped = {n for n in names if n.startswith(folder + "/")}
        assert {f"{folder}/{p.name}" for p in (REPO / folder).glob("*.j2")} == shipped
    assert "metacog_metrics/svgplot.py" not in names


# --------------------------------------------------------------------------------------------
# The findings: the analysis' own, shown as they are
# --------------------------------------------------------------------------------------------


def _list_items(text: str, tag: str, css: str) -> list[str]:
    import html as htmllib

    block = re.search(rf'<{tag} class="{css}">(.*?)</{tag}>', text, re.S)
    if block is None:
        return []
    items = re.findall(r"<li>(.*?)</li>", block.group(1), re.S)
    return [htmllib.unescape(re.sub(r"\s+", " ", i).strip()) for i in items]


def test_the_page_shows_the_analysis_findings_and_caveats(result, page) -> None:
    findings = result.findings
    assert _list_items(page, "ol", "findings") == [f.text for f in findings.headline.findings]
    caveats = re.search(r'<div class="caveats">(.*?)</div>', page, re.S).group(1)
    import html as htmllib

    shown = [htmllib.unescape(c) for c in re.findall(r"<li>(.*?)</li>", caveats, re.S)]
    assert shown == list(findings.caveats)
    # the same list the terminal prints
    assert result.findings_text().splitlines()[1 : 1 + len(findings.lines())] == [
        f"  - {line}" for line in findings.lines()
    ]


def test_findings_quote_the_result_objects(result) -> None:
    (g,) = result.groups.values()
    head = result.findings.headline
    assert head.group == "squad/prospective" and not result.findings.others
    topics = [f.topic for f in head.findings]
    assert topics[:5] == ["shared_difficulty", "pairwise", "small_gap", "private_signal",
                          "alignment"]  # fmt: skip
    text = {f.topic: f.text for f in head.findings}
    assert f"{g.confidence.eigen.first_share * 100:.0f}%" in text["shared_difficulty"]
    assert f"{g.pairwise.mean_tau:.3f}" in text["pairwise"]
    assert f"{g.alignment.all.r:.2f}" in text["alignment"]
    assert f"{g.private_signal.observed:.3f}" in text["private_signal"]
    gap = head.small_gap
    k = list(g.pairwise.delta_curve.delta).index(0.02)
    assert gap.n_pairs == g.pairwise.delta_curve.n_pairs[k]
    assert gap.mean_tau == g.pairwise.delta_curve.mean_tau[k] or gap.verdict == "too_few_pairs"
    assert f"{gap.n_pairs} pairs" in text["small_gap"]
    # the summary keeps them as they are
    assert result.summary["findings"]["headline"]["findings"] == [
        {"topic": f.topic, "text": f.text} for f in head.findings
    ]


def test_findings_without_usable_groups() -> None:
    from metacog_metrics.analyze import AnalysisOptions, analysis_findings

    findings = analysis_findings({}, AnalysisOptions())
    assert findings.headline is None and findings.lines() == [
        "No group had enough models and items for the cross-model analyses."
    ]


def _section(taus, coef, r2, p, vertex):
    quadratic = SimpleNamespace(coef=tuple(coef), r2=r2, p_value=p, vertex=vertex)
    return SimpleNamespace(
        tetrachoric=SimpleNamespace(tau=np.asarray(taus, dtype=float)),
        eigen=SimpleNamespace(quadratic=quadratic),
    )


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
    from metacog_metrics.analyze.findings import _parabola

    assert _parabola(_section(taus, coef, r2, p, vertex)).startswith(starts)


def test_findings_name_their_basis_and_the_threshold_convention(result) -> None:
    summary = result.summary
    group = summary["results"]["squad"]["prospective"]
    text = {f.topic: f.text for f in result.findings.headline.findings}
    n_conf = len(group["confidence"]["tetrachoric"]["models"])
    assert group["confidence"]["basis"]["n_models"] == n_conf
    assert f"{n_conf} models x {group['n_items']} items" in text["shared_difficulty"]
    assert "Phi^-1(P(confidence = 0))" in text["shared_difficulty"]
    n_pairs = group["pairwise"]["n_pairs_valid"]
    n, m = group["n_items"], group["n_models"]
    assert f"{m} models x {n} items, {n_pairs} pairs" in text["pairwise"]
    assert f"{m} models x {n} complete-case items" in text["alignment"]
    assert f"{m} models x {n} items, {n_pairs} pairs" in text["private_signal"]


def test_pooled_group_leads_and_the_others_follow() -> None:
    df = simulate_records(
        get_preset("paper"), n_models=6, items_per_benchmark=40, benchmarks=["squad", "mmlu_pro"],
        seed=2,
    )  # fmt: skip
    res = analyze_records(df, permutations=20, joint_permutations=20, seed=0, n_boot=0, pool=True)
    f = res.findings
    assert f.headline.group == "pooled/prospective"
    assert [g.group for g in f.others] == ["squad/prospective", "mmlu_pro/prospective"]
    assert f.lines()[-2:] == [f"Other group {g.brief}" for g in f.others]
    text = render_report(res)
    assert _list_items(text, "ul", "findings") == [g.brief for g in f.others]
    sections = [text.index(f'id="{a}"') for a in ("pooled-prospective", "squad-prospective")]
    assert sections == sorted(sections)  # the group sections in the findings' order


# --------------------------------------------------------------------------------------------
# A real run, and a large synthetic group
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def battery(realruns_dir, tmp_path_factory):
    tidy = realruns_dir / "cacioli_battery_binary" / "tidy.csv"
    if not tidy.exists():
        unavailable(f"{tidy} is not in this checkout of the shared data")
    from metacog_metrics.pipeline import analyze_files

    out = tmp_path_factory.mktemp("battery")
    res = analyze_files(
        [tidy], out_dir=out, permutations=200, joint_permutations=100, n_boot=50, progress=False
    )
    summary = json.loads((out / "summary.json").read_text())
    return res, summary, (out / "report.html").read_text(encoding="utf-8")


def test_real_report_shows_every_model_and_series(battery) -> None:
    """The 20-model battery: every model named in the tables, the heatmaps and the per-model
    panel; each null and the private-signal test in the legend; the numbers of summary.json."""
    res, summary, text = battery
    (g,) = res.groups.values()
    s = summary["results"][g.benchmark][g.label]
    figs = dict(figures(text))
    assert list(figs) == ALTS
    assert len(text) < 600_000
    models = set(s["models"])
    assert len(models) == 20
    heat = svg_texts(figs["tetrachoric matrices"])
    assert all(heat.count(m) == 4 for m in models)
    assert set(svg_texts(figs["per-model calibration"])) >= models
    nulls = svg_texts(figs["pairwise nulls and delta curve"])
    for name in s["pairwise"]["nulls"]:
        label = "private-signal test null" if name == "private_signal" else get_null(name).label
        assert any(t.startswith(label + " (") for t in nulls), name
    (kf,) = key_figures(Page(text))
    assert kf["mean pairwise tau-b"] == f3(s["pairwise"]["mean_tau"])
    assert kf["contentious items"] == str(s["factor_alignment"]["contentious"]["n_items"])


def test_the_real_report_reads_the_result_objects_not_the_summary(battery) -> None:
    """The battery's page (as written to report.html) comes back the same from a result whose
    summary dict is emptied, or fails on any read."""
    res, summary, text = battery
    assert res.inputs == tuple(summary["inputs"]) and len(res.inputs) == 1
    assert res.warnings == tuple(summary["warnings"])
    assert res.options.permutations == summary["parameters"]["permutations"] == 200
    assert res.inline_solving.status == res.text_probes.status == "absent"
    for bare in _without_summary(res):
        assert render_report(bare) == text


def _large_group(n_models: int, n_items: int, seed: int = 0) -> SimpleNamespace:
    """The parts of a GroupAnalysis that the calibration and heatmap figures read."""
    rng = np.random.default_rng(seed)
    names = tuple(f"org/model-{i:03d}" for i in range(n_models))
    per = {
        m: SimpleNamespace(auroc_internal=rng.uniform(0.5, 0.8), auroc_pop=rng.uniform(0.5, 0.8))
        for m in names
    }
    scores = SimpleNamespace(
        confidence_scores=rng.normal(size=n_items),
        correctness_scores=rng.normal(size=n_items),
        r=0.75,
    )
    alignment = SimpleNamespace(
        all=scores,
        contentious=SimpleNamespace(r=0.55),
        contentious_mask=rng.uniform(size=n_items) < 0.3,
    )
    rho = np.clip(rng.normal(0.3, 0.2, (n_models, n_models)), -1, 1)
    np.fill_diagonal(rho, 1.0)
    tet = SimpleNamespace(names=names, tau=rng.normal(size=n_models), rho=rho)
    section = SimpleNamespace(tetrachoric=tet, method="tetrachoric")
    return SimpleNamespace(
        calibration=SimpleNamespace(per_model=per),
        alignment=alignment,
        confidence=section,
        correctness=section,
    )


def test_large_inputs_keep_figures_small_and_say_what_is_shown() -> None:
    """100 models x 50,000 items: the alignment scatter draws a seeded subsample that its legend
    names, every model keeps its row, the heatmaps stay small with at most 50 names an axis."""
    from metacog_metrics.report._mpl import to_svg
    from metacog_metrics.report.figures import (
        MAX_SCATTER_POINTS,
        calibration_figure,
        heatmap_figure,
    )

    g = _large_group(100, 50_000)
    svg = to_svg(calibration_figure(g), "per-model calibration")
    assert svg == to_svg(calibration_figure(g), "per-model calibration")  # same subsample
    assert len(svg) < 1_000_000
    texts = svg_texts(svg)
    assert set(texts) >= set(g.calibration.per_model)
    n_cont = int(g.alignment.contentious_mask.sum())
    (rest,) = [t for t in texts if t.startswith("all items, r = 0.75; random ")]
    (cont,) = [t for t in texts if t.startswith("contentious (own factor fit: r = 0.55); random")]
    shown = [
        int(re.search(r"random ([\d,]+) of", t).group(1).replace(",", "")) for t in (rest, cont)
    ]
    assert abs(sum(shown) - MAX_SCATTER_POINTS) <= 1
    assert rest.endswith(f"of {50_000 - n_cont:,} shown") and cont.endswith(f"of {n_cont:,} shown")
    heat = to_svg(heatmap_figure(g), "tetrachoric matrices")
    assert len(heat) < 400_000
    names = [t for t in svg_texts(heat) if t.startswith("org/model-")]
    assert 4 * 2 <= len(names) <= 4 * 50
