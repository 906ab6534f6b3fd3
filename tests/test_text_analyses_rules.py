"""The text sections of ``metacog analyze`` (:mod:`metacog_metrics.analyze.text`), rule by rule,
on small hand-made record tables (seconds).

The two analyses behind the sections are checked by their own tests
(``tests/test_inline_solving.py``, ``tests/test_text_probes_rules.py``); here
:func:`~metacog_metrics.inline_solving.inline_pairwise` and
:func:`~metacog_metrics.text_probes.fit_text_probes` are replaced by recorders, so that each test
sees exactly what the sections hand them (rows, flags, seeds, caps) and what they make of the
results (summary keys, table names, medians, counts), every expected value written by hand. One
test runs both for real on a small group.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.analyze import AnalysisOptions
from metacog_metrics.analyze import text as ta
from metacog_metrics.inline_solving import FEATURES, InlinePairTypes
from metacog_metrics.text_probes import SCORES, TextProbeResult

#: Flagged by the detector: arithmetic worked out (score 12 in tests/test_inline_solving.py).
SOLVED = (
    "Let me work it out. Step 1: 3 + 4 = 7. Step 2: 7 * 2 = 14. "
    "Therefore the result is 14.\nAnswer: Yes"
)
#: Not flagged: a recalled fact, no work (tests/test_inline_solving.py::test_no_work_no_flag).
RECALLED = "I recall the answer is 1066, so I can answer."


def _records() -> pd.DataFrame:
    """Two benchmarks x two models x three items of one probe, on a non-default index.

    Texts: B1/m1/i1 and B1/m2/i2 are worked out (flagged); B1/m2/i3 has none (None) and
    B2/m1/i3 only blanks; the other eight recall.
    """
    rows = []
    for bench in ("B1", "B2"):
        for model, reasoning in (("m1", True), ("m2", False)):
            for item in ("i1", "i2", "i3"):
                text = RECALLED
                if (bench, model, item) in {("B1", "m1", "i1"), ("B1", "m2", "i2")}:
                    text = SOLVED
                elif (bench, model, item) == ("B1", "m2", "i3"):
                    text = None
                elif (bench, model, item) == ("B2", "m1", "i3"):
                    text = "  \n "
                rows.append({
                    "model": model, "benchmark": bench, "item_id": item, "probe": "yn",
                    "confidence_kind": "binary", "confidence": 1.0, "correct": 1.0,
                    "reasoning": reasoning, "probe_text": text,
                })  # fmt: skip
    return pd.DataFrame(rows, index=range(100, 112))


def _matrices(models, items, reasoning):
    n, m = len(items), len(models)
    return types.SimpleNamespace(
        models=tuple(models),
        item_ids=tuple(items),
        reasoning=tuple(reasoning),
        confidence=np.arange(n * m, dtype=float).reshape(n, m) / (n * m),
        correct=(np.arange(n * m).reshape(n, m) % 2).astype(float),
    )


def _group(bench, probe, kind, label, matrices=None, skipped=None):
    if matrices is None:
        matrices = _matrices(("m1", "m2"), ("i1", "i2", "i3"), (True, False))
    return types.SimpleNamespace(
        benchmark=bench, probe=probe, confidence_kind=kind, label=label, matrices=matrices,
        skipped=skipped,
    )  # fmt: skip


def _groups(*gs):
    return {(g.benchmark, g.probe, g.confidence_kind): g for g in gs}


class _Pairwise:
    """Stands in for inline_pairwise: records each call, returns a fixed result."""

    def __init__(self):
        self.calls = []

    def __call__(self, conf, perf, inline, **kw):
        self.calls.append({"conf": conf, "perf": perf, "inline": inline, **kw})
        return InlinePairTypes(
            pairs=pd.DataFrame({"model_a": ["x"], "model_b": ["y"]}),
            types=pd.DataFrame({"type": ["R-NR"], "n_pairs": [1]}),
            rnr_share_lost=0.25,
            rnr_share_lost_ci=(0.125, 0.5),
            n_boot=kw["n_boot"],
            min_items=7,
            fdr_alpha=kw["fdr_alpha"],
            rnr_tau_drop=0.0625,
            rnr_tau_drop_ci=(float("nan"), 0.75),
            reason="because",
            rnr_tau_with=0.375,
            rnr_tau_with_ci=(0.25, 0.5),
        )


@pytest.fixture
def pairwise(monkeypatch):
    fake = _Pairwise()
    monkeypatch.setattr(ta, "inline_pairwise", fake)
    return fake


def _inline(*args):
    """The inline-solving section as ``summary.json`` holds it (its ``to_dict()``), and its
    tables."""
    section, tables = ta._inline_section(*args)
    return section.to_dict(), tables


def _probes(*args):
    """The text-probe section as ``summary.json`` holds it (its ``to_dict()``), and its tables."""
    section, tables = ta._probe_section(*args)
    return section.to_dict(), tables


def _opts(**kw):
    base = {"permutations": 7, "n_boot": 3, "seed": 11, "fdr_alpha": 0.1, "engine": "numpy"}
    return AnalysisOptions(**{**base, **kw})


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("MMLU Pro/v2", "MMLU-Pro-v2"),
        ("a.b_c-D9", "a.b_c-D9"),
        ("--yn:binary--", "yn-binary"),
        ("  x  y  ", "x-y"),
        ("é", "x"),
        ("X/yX", "X-yX"),  # only hyphens are stripped from the ends
        ("", "x"),
        ("///", "x"),
    ],
)
def test_safe_names_keep_letters_digits_dots_underscores_and_hyphens(text, safe):
    assert ta.safe_name(text) == safe


def test_has_texts_needs_a_non_blank_string():
    df = pd.DataFrame({"a": [None, " \n", float("nan")], "b": [None, 3, " ok "]})
    assert not ta._has_texts(df, "a")
    assert ta._has_texts(df, "b")
    assert not ta._has_texts(df, "missing")
    assert not ta._has_texts(pd.DataFrame({"a": [1, 2.5]}), "a")  # numbers are no texts


def test_group_rows_filter_on_benchmark_probe_and_kind():
    recs = _records()
    other = recs.iloc[:2].assign(probe="other")
    numeric = recs.iloc[2:4].assign(confidence_kind="numeric")
    b3 = recs.iloc[4:5].assign(benchmark="B3")
    recs = pd.concat([recs, other, numeric, b3])
    rows = ta._group_rows(recs, _group("B1", "yn", "binary", "yn"))
    assert rows.index.tolist() == list(range(100, 106))
    assert rows["item_id"].tolist() == ["i1", "i2", "i3"] * 2


def test_pooled_group_rows_come_from_every_benchmark_with_prefixed_items():
    recs = _records()
    recs = pd.concat([recs, recs.iloc[:1].assign(probe="other"),
                      recs.iloc[1:2].assign(confidence_kind="numeric")])  # fmt: skip
    before = recs.copy()
    rows = ta._group_rows(recs, _group("pooled", "yn", "binary", "yn"))
    assert len(rows) == 12
    assert rows["item_id"].tolist() == [f"{b}:{i}" for b in ("B1", "B2") for _ in "12"
                                        for i in ("i1", "i2", "i3")]  # fmt: skip
    assert rows["benchmark"].tolist() == ["B1"] * 6 + ["B2"] * 6
    pd.testing.assert_frame_equal(recs, before)  # the caller's table is left alone


def test_a_benchmark_named_pooled_is_filtered_like_any_other():
    recs = _records()
    recs.loc[recs["benchmark"] == "B2", "benchmark"] = "pooled"
    rows = ta._group_rows(recs, _group("pooled", "yn", "binary", "yn"))
    assert rows.index.tolist() == list(range(106, 112))
    assert rows["item_id"].tolist() == ["i1", "i2", "i3"] * 2


# --------------------------------------------------------------------------------------------
# Inline solving
# --------------------------------------------------------------------------------------------


def test_the_detector_reads_the_two_texts_as_documented():
    from metacog_metrics.inline_solving import detect_inline

    assert detect_inline([SOLVED, RECALLED]).flag.tolist() == [True, False]


def test_without_rationales_the_inline_section_is_absent(pairwise):
    recs = _records().assign(probe_text=None)
    out, tables = _inline(recs, _groups(_group("B1", "yn", "binary", "yn")), _opts())
    assert set(out) == {"status", "reason"} and out["status"] == "absent" and out["reason"]
    assert tables == {} and pairwise.calls == []
    out, tables = _inline(recs.drop(columns="probe_text"), {}, _opts())
    assert out["status"] == "absent" and tables == {}


def test_inline_counts_rates_and_per_record_table_by_hand(pairwise):
    out, tables = _inline(_records(), {}, _opts())
    assert out["status"] == "ok"
    assert isinstance(out["method"], str)
    assert out["features"] == list(FEATURES)
    assert out["n_texts"] == 10 and out["n_inline"] == 2
    assert out["groups"] == {}
    # per (benchmark, model), in order of appearance: texts present, flagged
    assert out["rates"] == [
        {"benchmark": "B1", "model": "m1", "n_texts": 3, "n_inline": 1, "inline_rate": 1 / 3,
         "reasoning": True},
        {"benchmark": "B1", "model": "m2", "n_texts": 2, "n_inline": 1, "inline_rate": 1 / 2,
         "reasoning": False},
        {"benchmark": "B2", "model": "m1", "n_texts": 2, "n_inline": 0, "inline_rate": 0.0,
         "reasoning": True},
        {"benchmark": "B2", "model": "m2", "n_texts": 3, "n_inline": 0, "inline_rate": 0.0,
         "reasoning": False},
    ]  # fmt: skip
    assert set(tables) == {"inline_rates", "inline_records"}
    assert tables["inline_rates"]["n_texts"].tolist() == [3, 2, 2, 3]
    rec = tables["inline_records"]
    keys = ["model", "benchmark", "item_id", "probe", "confidence_kind"]
    assert rec.columns.tolist() == [*keys, *FEATURES, "inline_score", "inline_solved"]
    # the ten records with a text (positions 5 and 8 have none), in record order
    assert rec.index.tolist() == [0, 1, 2, 3, 4, 6, 7, 9, 10, 11]
    assert rec["item_id"].tolist() == ["i1", "i2", "i3", "i1", "i2", "i1", "i2", "i1", "i2", "i3"]
    assert rec["model"].tolist() == ["m1"] * 3 + ["m2"] * 2 + ["m1"] * 2 + ["m2"] * 3
    assert rec["inline_solved"].tolist() == [True, False, False, False, True] + [False] * 5
    assert rec["inline_score"].iloc[0] == 12


def test_a_group_s_flags_seed_caps_and_summary(pairwise):
    recs = _records()
    # items in another order, one item nobody answered, models in another order
    mat = _matrices(("m2", "m1"), ("i3", "i1", "i9", "i2"), (False, True))
    g = _group("B1", "yn", "binary", "yn:binary", mat)
    out, tables = _inline(recs, _groups(g), _opts(permutations=5000, n_boot=500))
    (call,) = pairwise.calls
    assert call["conf"] is mat.confidence and call["perf"] is mat.correct
    # rows i3, i1, i9, i2; columns m2, m1: B1/m1/i1 and B1/m2/i2 are flagged
    expected = np.array([[False, False], [False, True], [False, False], [True, False]])
    assert call["inline"].dtype == bool
    np.testing.assert_array_equal(call["inline"], expected)
    assert call["models"] == ("m2", "m1")
    assert call["reasoning"] == [False, True] and isinstance(call["reasoning"], list)
    assert call["permutations"] == 1000 and call["n_boot"] == 200  # capped
    assert call["fdr_alpha"] == 0.1 and call["engine"] == "numpy"
    seed = call["rng"]
    assert isinstance(seed, np.random.SeedSequence)
    assert list(seed.entropy) == [11, *(ord(c) for c in "B1|yn|binary")]
    entry = out["groups"]["B1"]["yn:binary"]
    assert entry == {
        "status": "ok",
        "inline_share": 2 / 8,
        "pair_types": [{"type": "R-NR", "n_pairs": 1}],
        "rnr_share_lost": 0.25,
        "rnr_share_lost_ci": [0.125, 0.5],
        "rnr_share_lost_reason": "because",
        "rnr_tau_drop": 0.0625,
        "rnr_tau_drop_ci": [None, 0.75],
        "rnr_tau_with": 0.375,
        "rnr_tau_with_ci": [0.25, 0.5],
        "permutations": 1000,
        "n_boot": 200,
        "min_items": 7,
    }
    assert set(tables) == {"inline_rates", "inline_records", "B1__yn-binary__inline_pair_types",
                           "B1__yn-binary__inline_pairs"}  # fmt: skip
    assert tables["B1__yn-binary__inline_pairs"]["model_a"].tolist() == ["x"]
    assert tables["B1__yn-binary__inline_pair_types"]["type"].tolist() == ["R-NR"]


def test_draws_below_the_caps_are_kept_and_the_seed_follows_the_run_seed(pairwise):
    g = _group("B2", "yn", "binary", "yn")
    out, _ = _inline(_records(), _groups(g), _opts(permutations=1000, n_boot=200,
                                                                seed=0))  # fmt: skip
    out2, _ = _inline(_records(), _groups(g), _opts(permutations=999, n_boot=199))
    first, second = pairwise.calls
    assert (first["permutations"], first["n_boot"]) == (1000, 200)
    assert (second["permutations"], second["n_boot"]) == (999, 199)
    assert list(first["rng"].entropy) == [0, *(ord(c) for c in "B2|yn|binary")]
    assert out["groups"]["B2"]["yn"]["permutations"] == 1000
    assert out2["groups"]["B2"]["yn"]["n_boot"] == 199
    # B2 has no flagged text: every flag is False
    assert not first["inline"].any() and first["inline"].shape == (3, 2)
    assert out["groups"]["B2"]["yn"]["inline_share"] == 0.0


def test_a_flagged_row_flags_its_item_whatever_the_other_rows_say(pairwise):
    recs = _records()
    twice = recs.iloc[[0]].assign(probe_text=RECALLED)  # B1/m1/i1 again, not flagged
    recs = pd.concat([twice, recs, twice])
    _inline(recs, _groups(_group("B1", "yn", "binary", "yn")), _opts())
    (call,) = pairwise.calls
    assert call["inline"][0].tolist() == [True, False]


def test_a_pooled_group_reads_prefixed_items_of_every_benchmark(pairwise):
    mat = _matrices(("m1", "m2"), ("B2:i1", "B1:i2", "B1:i1"), (True, False))
    g = _group("pooled", "yn", "binary", "yn", mat)
    out, tables = _inline(_records(), _groups(g), _opts())
    (call,) = pairwise.calls
    np.testing.assert_array_equal(call["inline"], [[False, False], [False, True], [True, False]])
    assert list(call["rng"].entropy) == [11, *(ord(c) for c in "pooled|yn|binary")]
    assert out["groups"]["pooled"]["yn"]["inline_share"] == 2 / 6
    assert "pooled__yn__inline_pairs" in tables


def test_a_group_without_items_has_no_inline_share(pairwise):
    g = _group("B1", "yn", "binary", "yn", _matrices(("m1", "m2"), (), (True, False)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Mean of empty slice"
        out, _ = _inline(_records(), _groups(g), _opts())
    assert out["groups"]["B1"]["yn"]["inline_share"] is None


def test_skipped_groups_and_unknown_reasoning_are_absent_with_the_reason(pairwise):
    unknown4 = _matrices(("a", "b", "c", "d", "e"), ("i1",), (None, None, True, None, None))
    unknown3 = _matrices(("a", "b", "c", "d"), ("i1",), (None, False, None, None))
    unknown1 = _matrices(("a", "b"), ("i1",), (True, None))
    gs = _groups(
        _group("B1", "yn", "binary", "yn", skipped="fewer than 3 models"),
        _group("B1", "conf", "numeric", "conf:numeric", unknown4),
        _group("B2", "conf", "numeric", "conf", unknown3),
        _group("B2", "yn", "binary", "yn", unknown1),
    )
    out, tables = _inline(_records(), gs, _opts())
    assert pairwise.calls == []
    assert set(tables) == {"inline_rates", "inline_records"}
    # every group absent with its reason; the reason names the models without flags
    status = {b: {k: e["status"] for k, e in d.items()} for b, d in out["groups"].items()}
    assert status == {"B1": {"yn": "absent", "conf:numeric": "absent"},
                      "B2": {"conf": "absent", "yn": "absent"}}  # fmt: skip
    assert "fewer than 3 models" in out["groups"]["B1"]["yn"]["reason"]
    for (bench, label), named in {("B1", "conf:numeric"): "a, b, d", ("B2", "conf"): "a, c, d",
                                  ("B2", "yn"): "(b"}.items():  # fmt: skip
        assert named in out["groups"][bench][label]["reason"]


def test_the_progress_bar_shows_only_when_asked(pairwise, capsys):
    g = _groups(_group("B1", "yn", "binary", "yn"))
    _inline(_records(), g, _opts(progress=False))
    assert "inline solving" not in capsys.readouterr().err
    _inline(_records(), g, _opts(progress=True))
    err = capsys.readouterr().err
    assert "inline solving: " in err and "0/1" in err
    # the bar is cleared when done (leave=False): no final "1/1" line stays
    assert "1/1" not in err and err.endswith("\r") and not err.endswith("\n")


# --------------------------------------------------------------------------------------------
# Text probes
# --------------------------------------------------------------------------------------------


def _probe_table():
    """Three models of B1/yn and one of B1/other; AUROCs chosen for the medians by hand."""
    rows = []
    internal = {"m1": 0.6, "m2": 0.7, "m3": 0.8, "m4": 0.5}
    q = {"m1": 0.7, "m2": 0.71, "m3": 0.5, "m4": 0.9}
    m = {"m1": 0.9, "m2": 0.9, "m3": 0.9, "m4": 0.1}
    for i, model in enumerate(("m1", "m2", "m3", "m4")):
        row = {"benchmark": "B1", "probe": "yn" if model != "m4" else "other",
               "confidence_kind": "binary", "model": model, "n_items": 20 + i,
               "n_correct": 10 + i, "reasoning": model == "m1", "note": "not an AUROC"}  # fmt: skip
        for s in SCORES:
            row[f"auroc_{s}"] = {"internal": internal, "Q": q, "M": m}.get(s, {}).get(model, 0.55)
            row[f"auroc_{s}_low"] = 0.25
            row[f"auroc_{s}_high"] = 0.75
        rows.append(row)
    return pd.DataFrame(rows)


class _Probes:
    """Stands in for fit_text_probes: records each call, returns a fixed result."""

    def __init__(self, sets=("Q", "M")):
        self.calls = []
        self.sets = tuple(sets)

    def __call__(self, data, **kw):
        self.calls.append({"data": data, **kw})
        table = _probe_table() if self.sets else pd.DataFrame()
        return TextProbeResult(
            table=table, predictions=pd.DataFrame(), sets=self.sets,
            missing={"P": "the records have no solve_text"}, notes=("a note",),
            fit_by="benchmark", folds=4, c=0.5, n_boot=9,
        )  # fmt: skip


def test_without_feature_sets_the_probe_section_is_absent(monkeypatch):
    fake = _Probes(sets=())
    monkeypatch.setattr(ta, "fit_text_probes", fake)
    out, tables = _probes(_records(), {}, _opts())
    assert out["status"] == "absent" and out["reason"]
    assert out["missing"] == {"P": "the records have no solve_text"}  # the fit's own reasons
    assert tables == {}


def test_probe_section_passes_the_run_options_and_the_records_unchanged(monkeypatch):
    fake = _Probes()
    monkeypatch.setattr(ta, "fit_text_probes", fake)
    recs = _records()
    gs = _groups(_group("B1", "yn", "binary", "yn"), _group("B2", "yn", "binary", "yn"))
    _probes(recs, gs, _opts(n_boot=13, seed=5, progress=True))
    (call,) = fake.calls
    assert call["data"] is recs  # no pooled group: nothing appended, nothing copied
    assert {k: v for k, v in call.items() if k != "data"} == {"n_boot": 13, "seed": 5,
                                                               "progress": True}  # fmt: skip


def test_pooled_groups_add_their_rows_under_the_pooled_benchmark(monkeypatch):
    fake = _Probes()
    monkeypatch.setattr(ta, "fit_text_probes", fake)
    recs = _records()
    gs = _groups(_group("B1", "yn", "binary", "yn"), _group("pooled", "yn", "binary", "yn"))
    _probes(recs, gs, _opts())
    data = fake.calls[0]["data"]
    assert len(data) == 24 and data.index.tolist() == list(range(24))
    pd.testing.assert_frame_equal(data.iloc[:12].reset_index(drop=True),
                                  recs.reset_index(drop=True))  # fmt: skip
    assert (data["benchmark"].iloc[12:] == "pooled").all()
    assert data["item_id"].iloc[12:15].tolist() == ["B1:i1", "B1:i2", "B1:i3"]
    assert data["item_id"].iloc[-1] == "B2:i3"
    # a benchmark already named pooled is not pooled again
    fake.calls.clear()
    recs.loc[recs["benchmark"] == "B2", "benchmark"] = "pooled"
    _probes(recs, gs, _opts())
    assert fake.calls[0]["data"] is recs


def test_probe_summary_medians_and_counts_by_hand(monkeypatch):
    monkeypatch.setattr(ta, "fit_text_probes", _Probes())
    gs = _groups(_group("B1", "yn", "binary", "yn:binary"))
    out, tables = _probes(_records(), gs, _opts())
    assert {k: out[k] for k in ("status", "sets", "missing", "fit_by", "folds", "C", "n_boot",
                                "notes")} == {
        "status": "ok", "sets": ["Q", "M"], "missing": {"P": "the records have no solve_text"},
        "fit_by": "benchmark", "folds": 4, "C": 0.5, "n_boot": 9, "notes": ["a note"],
    }  # fmt: skip
    assert out["cv"] == (
        "StratifiedGroupKFold by item (items sharing a question text are one group)"
    )
    assert out["model"] == (
        "StandardScaler + LogisticRegression(penalty='l2', solver='newton-cholesky'), scikit-learn"
    )
    yn = out["groups"]["B1"]["yn:binary"]
    assert yn["n_models"] == 3
    # internal 0.6, 0.7, 0.8: median 0.7; Q 0.7, 0.71, 0.5: one strictly above; M all 0.9
    assert yn["median"] == {s: {"internal": 0.7, "Q": 0.7, "M": 0.9}.get(s, 0.55)
                            for s in SCORES}  # fmt: skip
    assert yn["models_above_median_internal"] == {"Q": 1, "M": 3}
    m1 = yn["models"]["m1"]
    assert set(yn["models"]) == {"m1", "m2", "m3"}
    assert set(m1) == {"n_items", "n_correct", "reasoning"} | {
        f"auroc_{s}{end}" for s in SCORES for end in ("", "_low", "_high")
    }
    assert (m1["n_items"], m1["n_correct"], m1["reasoning"]) == (20, 10, True)
    assert m1["auroc_internal"] == 0.6 and m1["auroc_Q_low"] == 0.25
    # a probe without an analysed group keeps its own name as the label
    other = out["groups"]["B1"]["other"]
    assert other["n_models"] == 1 and other["models_above_median_internal"] == {"Q": 1, "M": 0}
    # groups in the table's order (not sorted: "other" would come first)
    assert list(out["groups"]["B1"]) == ["yn:binary", "other"]
    table = tables["text_probes"]
    assert table.columns[:4].tolist() == ["benchmark", "probe", "label", "confidence_kind"]
    assert table["label"].tolist() == ["yn:binary"] * 3 + ["other"]
    paper = tables["text_probes_paper"]
    assert paper.columns.tolist() == ["benchmark", "probe", "model", "Internal", "Pop", "QM",
                                      "QP", "QMP"]  # fmt: skip
    assert paper["probe"].tolist() == ["yn:binary"] * 3 + ["other"]
    assert paper["Internal"].tolist() == [0.6, 0.7, 0.8, 0.5]
    assert paper["Pop"].tolist() == [0.55] * 4
    assert set(tables) == {"text_probes", "text_probes_paper"}


def test_groups_of_other_benchmarks_and_kinds_do_not_lend_their_labels(monkeypatch):
    monkeypatch.setattr(ta, "fit_text_probes", _Probes())
    gs = _groups(_group("B2", "yn", "binary", "x1"), _group("B1", "yn", "numeric", "x2"))
    out, tables = _probes(_records(), gs, _opts())
    assert tables["text_probes"]["label"].tolist() == ["yn"] * 3 + ["other"]
    assert set(out["groups"]["B1"]) == {"yn", "other"}


# --------------------------------------------------------------------------------------------
# Both sections
# --------------------------------------------------------------------------------------------


def test_text_sections_joins_both_sections_and_their_tables(monkeypatch, pairwise):
    monkeypatch.setattr(ta, "fit_text_probes", _Probes())
    gs = _groups(_group("B1", "yn", "binary", "yn"))
    inline, probes, tables = ta.text_sections(_records(), gs, _opts())
    assert inline.n_inline == 2 and inline.to_dict()["n_inline"] == 2
    assert probes.fit.sets == ("Q", "M") and probes.to_dict()["sets"] == ["Q", "M"]
    # the result objects hold the tables written beside them
    assert inline.rates is tables["inline_rates"] and inline.per_record is tables["inline_records"]
    assert inline.groups[0].pairs.types is tables["B1__yn__inline_pair_types"]
    assert probes.table is tables["text_probes"]
    assert set(tables) == {"inline_rates", "inline_records", "B1__yn__inline_pair_types",
                           "B1__yn__inline_pairs", "text_probes", "text_probes_paper"}  # fmt: skip


def test_both_sections_run_for_real_on_a_small_group():
    """The real analyses behind the sections on 12 items x 2 models (no stand-ins)."""
    rows = []
    for model, reasoning in (("m1", True), ("m2", False)):
        for i in range(12):
            rows.append({
                "model": model, "benchmark": "B", "item_id": f"q{i}", "probe": "yn",
                "confidence_kind": "binary", "confidence": float(i % 3 == 0),
                "correct": float(i % 2 == 0), "reasoning": reasoning,
                "probe_text": SOLVED if i < 3 else RECALLED, "question": f"Question {i}?",
            })  # fmt: skip
    recs = pd.DataFrame(rows)
    n = 12
    mat = types.SimpleNamespace(
        models=("m1", "m2"), item_ids=tuple(f"q{i}" for i in range(n)), reasoning=(True, False),
        confidence=np.tile((np.arange(n) % 3 == 0).astype(float)[:, None], (1, 2)),
        correct=np.tile((np.arange(n) % 2 == 0).astype(float)[:, None], (1, 2)),
    )  # fmt: skip
    gs = _groups(_group("B", "yn", "binary", "yn", mat))
    sections = ta.text_sections(recs, gs, _opts(permutations=20, n_boot=5))
    tables = sections[2]
    summary = {"inline_solving": sections[0].to_dict(), "text_probes": sections[1].to_dict()}
    inline = summary["inline_solving"]
    assert inline["n_texts"] == 24 and inline["n_inline"] == 6
    entry = inline["groups"]["B"]["yn"]
    assert entry["status"] == "ok" and entry["inline_share"] == 6 / 24
    assert entry["permutations"] == 20 and entry["n_boot"] == 5
    assert tables["B__yn__inline_pairs"][["model_a", "model_b"]].values.tolist() == [["m1", "m2"]]
    # 12 items are fewer than the probes' 20: no model is fitted, and the notes say why
    probes = summary["text_probes"]
    assert probes["status"] == "ok" and probes["sets"] == ["Q", "M", "QM"]
    assert probes["groups"] == {} and probes["notes"]
