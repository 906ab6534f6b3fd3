"""The RLMF evaluation page (``metacog rlmf eval``): its table shows the summary's numbers, its
diagrams every run, text from the runs is escaped, and the page stands alone."""

from __future__ import annotations

import html as htmllib
import re

from rlmf_plugin.evaluate import METRICS
from rlmf_plugin.report import render_rlmf_eval_report, rlmf_eval_section
from tests.report_pages import GAP, Page, figures, svg_texts


def _summary() -> dict:
    bins = {
        "reliability": [
            {"n": 10, "confidence": 0.2, "accuracy": 0.3},
            {"n": 40, "confidence": 0.8, "accuracy": 0.7},
        ],
        "faithfulness": [],
    }
    return {
        "probe": "yes<no",
        "inputs": ["a.csv", "b<c>.csv"],
        "baseline_inputs": ["base.csv"],
        "runs": {
            "after": {
                "model": '<script>alert("m")</script>',
                "n_items": 100,
                "n_attempts": 300,
                "n_items_sampled": 80,
                "bins": bins,
                "metrics": {"accuracy": 0.6, "ece": 0.1, "auroc": 0.7, "brier": "x"},
            },
            "baseline": {
                "model": "m0 & co",
                "n_items": 90,
                "n_attempts": 200,
                "n_items_sampled": 0,
                "metrics": {"accuracy": 0.5, "ece": 0.12},
            },
        },
        "comparison": {
            "n_items": 85,
            "accuracy": {"difference": 0.1, "ci_low": 0.05, "ci_high": 0.15, "better": True},
            "ece": {"difference": -0.02, "ci_low": -0.05, "ci_high": 0.01, "worse": True},
            "auroc": {"difference": 0.0, "ci_low": None, "ci_high": 0.1},
        },
        "n_bootstrap": 1000,
        "notes": ["note <1>", 2],
    }


def test_table_shows_each_metric_of_each_run_and_the_comparison() -> None:
    text = rlmf_eval_section(_summary())
    (table,) = Page(text).tables
    assert table[0] == [
        "metric",
        "better",
        "after",
        "baseline",
        "difference (paired)",
        "95% interval",
        "verdict",
    ]
    assert [r[0] for r in table[1:]] == [label for label, _ in METRICS.values()]
    rows = {r[0]: r[1:] for r in table[1:]}
    assert rows["accuracy"] == ["higher", "0.600", "0.500", "0.100", "[0.050, 0.150]", "better"]
    assert rows["ECE"] == ["lower", "0.100", "0.120", "-0.020", "[-0.050, 0.010]", "worse"]
    assert rows["AUROC"] == ["higher", "0.700", GAP, "0.000", "[n/a, 0.100]", GAP]
    assert rows["Brier"] == ["lower", GAP, GAP, GAP, GAP, GAP]  # text is no number
    assert "85 items both graded" in text and "1000 paired bootstrap" in text


def test_without_comparison_or_bins_the_section_has_the_runs_only() -> None:
    s = _summary()
    del s["comparison"], s["notes"], s["runs"]["baseline"], s["runs"]["after"]["bins"]
    text = rlmf_eval_section(s)
    (table,) = Page(text).tables
    assert table[0] == ["metric", "better", "after"] and len(table) == 1 + len(METRICS)
    assert "<svg" not in text and "Differences are" not in text and "warn" not in text
    empty = rlmf_eval_section({})
    assert Page(empty).tables[0][0] == ["metric", "better"] and 'id="rlmf-eval"' in empty


def test_diagrams_show_every_run_and_say_when_nothing_was_sampled() -> None:
    s = _summary()
    s["runs"]["baseline"]["bins"] = {"reliability": [{"n": 5, "confidence": 0.1, "accuracy": 0.2}]}
    ((title, svg),) = figures(rlmf_eval_section(s))
    assert title == "reliability and faithfulness diagrams"
    texts = svg_texts(svg)
    assert '<script>alert("m")</script>' not in svg  # escaped in the figure too
    assert {'after: <script>alert("m")</script>', "baseline: m0 & co"} <= set(texts)
    assert "no item with two sampled answers" in texts
    assert {"factual calibration", "faithful calibration"} <= set(texts)
    s["runs"]["after"]["bins"]["faithfulness"] = [{"n": 5, "intrinsic": 0.4, "confidence": 0.5}]
    ((_, svg),) = figures(rlmf_eval_section(s))
    assert "no item with two sampled answers" not in svg_texts(svg)


def test_text_from_the_runs_is_escaped_and_the_page_stands_alone() -> None:
    text = render_rlmf_eval_report(_summary(), title="T<x>")
    p = Page(text)
    assert "script" not in p.tags and "x" not in p.tags
    assert text.startswith("<!doctype html>") and "<title>T&lt;x&gt;</title>" in text
    body = htmllib.unescape(re.sub(r"<[^>]+>", "", text))
    assert 'after: <script>alert("m")</script>, 100 items, 300 answers' in body
    assert "inputs: a.csv, b<c>.csv; baseline: base.csv" in body
    assert "the yes<no probe" in body and "note <1>" in body
    assert all(link.startswith(("#", "data:")) for link in p.links)
    assert not {"link", "img", "iframe"} & set(p.tags)
    s = _summary()
    del s["inputs"], s["baseline_inputs"]
    assert "inputs: (in memory)</p>" in render_rlmf_eval_report(s)
