"""The assembly rules of ``metacog analyze`` (metacog_metrics/analyze.py), pinned by hand.

Fast (seconds): small hand-made record tables, no permutation draws (``permutations=0``), so
that each rule of the assembly (option checks and their messages, which models and groups are
analysed, the notes' wording and thresholds, the summary's and the tables' fields) is seen
without the statistical stages' cost. The statistics themselves are tested in their modules
and, end to end, in tests/test_analyze.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from metacog_metrics import analyze as an
from metacog_metrics import pipeline
from metacog_metrics.analyze import MIN_ITEMS, MIN_MODELS, AnalysisOptions, analyze_records
from metacog_metrics.analyze import group as an_group
from metacog_metrics.analyze import orchestration as an_orch
from metacog_metrics.analyze import summary as an_summary
from metacog_metrics.analyze.group import coverage_table
from metacog_metrics.pairwise import DEFAULT_DELTAS
from metacog_metrics.pipeline import analyze_files
from metacog_metrics.polychoric import N_LEVELS
from metacog_metrics.records import RecordWarning

FAST = {"permutations": 0, "joint_permutations": 0, "n_boot": 0, "workers": 1,
        "engine": "numpy"}  # fmt: skip


def _records(n_items=12, n_models=3, *, seed=0, benchmark=None, kind=None, numeric=False):
    rng = np.random.default_rng(seed)
    diff = rng.normal(size=(n_items, 1))
    correct = (diff + rng.normal(size=(n_items, n_models)) > 0).astype(float)
    latent = diff + rng.normal(size=(n_items, n_models))
    conf = (latent > 0).astype(float)
    if numeric:
        conf = np.round(1 / (1 + np.exp(-latent)), 2)
    df = pd.DataFrame({
        "model": np.repeat([f"m{j}" for j in range(n_models)], n_items),
        "item_id": np.tile([f"q{i}" for i in range(n_items)], n_models),
        "confidence": conf.T.ravel(),
        "correct": correct.T.ravel(),
    })  # fmt: skip
    if benchmark:
        df["benchmark"] = benchmark
    if kind:
        df["confidence_kind"] = kind
    return df


# ------------------------------------------------------------------------------------------
# Options
# ------------------------------------------------------------------------------------------


def test_constants():
    assert MIN_MODELS == 3 and MIN_ITEMS == 10
    assert an.CONTINUOUS_KINDS == ("verbal_numeric", "sampled", "logprob")
    assert an.POOLED == "pooled"


def test_option_defaults():
    o = AnalysisOptions()
    assert (o.permutations, o.joint_permutations, o.seed, o.n_boot) == (10_000, 1_000, 0, 1000)
    assert o.alternative == "two-sided" and o.fdr_alpha == 0.05 and o.binarize_at == 0.5
    assert o.contentious_bounds == (0.1, 0.9) and o.workers is None
    assert o.pool is False and o.min_coverage == 0.5 and o.engine == "auto"
    assert o.progress is False


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"permutations": -1}, "permutations must be an integer >= 0, got -1"),
        ({"joint_permutations": 2.5}, "joint_permutations must be an integer >= 0, got 2.5"),
        ({"n_boot": True}, "n_boot must be an integer >= 0, got True"),
        ({"alternative": "both"},
         "alternative must be 'two-sided', 'greater' or 'less', got 'both'"),
        ({"fdr_alpha": 0.0}, "fdr_alpha must be in (0, 1), got 0.0"),
        ({"fdr_alpha": 1.0}, "fdr_alpha must be in (0, 1), got 1.0"),
        ({"contentious_bounds": (0.6, 0.5)},
         "contentious_bounds must be 0 <= low <= high <= 1, got (0.6, 0.5)"),
        ({"contentious_bounds": (-0.1, 0.5)},
         "contentious_bounds must be 0 <= low <= high <= 1, got (-0.1, 0.5)"),
        ({"contentious_bounds": (0.1, 1.1)},
         "contentious_bounds must be 0 <= low <= high <= 1, got (0.1, 1.1)"),
        ({"min_coverage": 1.5}, "min_coverage must be in [0, 1], got 1.5"),
        ({"min_coverage": -0.1}, "min_coverage must be in [0, 1], got -0.1"),
        ({"numeric_levels": 1}, "numeric_levels must be 0 or an integer from 2 to 8, got 1"),
        ({"numeric_levels": -2}, "numeric_levels must be 0 or an integer from 2 to 8, got -2"),
        ({"numeric_levels": 2.5}, "numeric_levels must be 0 or an integer from 2 to 8, got 2.5"),
        ({"numeric_levels": True}, "numeric_levels must be 0 or an integer from 2 to 8, got True"),
        ({"numeric_levels": 9}, "numeric_levels must be 0 or an integer from 2 to 8, got 9: a "
                                "polychoric takes at most 8 levels (psych's max.cat)"),
        ({"workers": 0}, "workers must be >= 1, got 0"),
        ({"engine": "cuda"}, "engine must be one of ('auto', 'numpy', 'numba'), got 'cuda'"),
    ],
)  # fmt: skip
def test_bad_option_messages(bad, message):
    with pytest.raises(ValueError) as err:
        AnalysisOptions(**bad)
    assert str(err.value) == message


def test_boundary_options_are_accepted_and_normalised():
    o = AnalysisOptions(
        permutations=0, joint_permutations=5.0, n_boot=0, seed=3.0, fdr_alpha=0.5,
        binarize_at=1, contentious_bounds=[0, 1], deltas=[0, 1], min_coverage=1,
        numeric_levels=2.0, workers=1, pool=1, progress=0,
    )  # fmt: skip
    assert o.permutations == 0 and o.joint_permutations == 5 and o.n_boot == 0
    assert type(o.joint_permutations) is int and type(o.seed) is int and o.seed == 3
    assert type(o.fdr_alpha) is float and type(o.binarize_at) is float and o.binarize_at == 1.0
    assert o.contentious_bounds == (0.0, 1.0) and type(o.contentious_bounds[0]) is float
    assert o.deltas == (0.0, 1.0) and type(o.deltas[1]) is float
    assert o.min_coverage == 1.0 and type(o.min_coverage) is float
    assert o.numeric_levels == 2 and type(o.numeric_levels) is int
    assert o.pool is True and o.progress is False
    assert AnalysisOptions(contentious_bounds=(0.3, 0.3)).contentious_bounds == (0.3, 0.3)
    assert AnalysisOptions(min_coverage=0).min_coverage is None  # 0 keeps every model
    assert AnalysisOptions(min_coverage=None).min_coverage is None
    assert AnalysisOptions(numeric_levels=0).numeric_levels == 0
    for engine in ("auto", "numpy", "numba"):
        assert AnalysisOptions(engine=engine).engine == engine
    for alt in ("two-sided", "greater", "less"):
        assert AnalysisOptions(alternative=alt).alternative == alt


def test_build_rejects_unknown_names_and_overrides_known_ones():
    with pytest.raises(TypeError) as err:
        AnalysisOptions.build(permutation=3, zz=1)
    fields = sorted(f.name for f in __import__("dataclasses").fields(AnalysisOptions))
    assert str(err.value) == f"unknown analysis option(s) ['permutation', 'zz']; known: {fields}"
    base = AnalysisOptions(seed=4, permutations=7)
    o = AnalysisOptions.build(base, permutations=9)
    assert o.seed == 4 and o.permutations == 9
    assert AnalysisOptions.build(None, seed=2).permutations == 10_000


# ------------------------------------------------------------------------------------------
# Coverage, labels, pooling, small helpers
# ------------------------------------------------------------------------------------------


def _coverage_frame():
    rows = []
    for i in range(4):
        rows.append(("full", f"q{i}", 1.0, 1.0))
    rows.append(("half", "q0", 1.0, 0.0))
    rows.append(("half", "q1", 0.0, 1.0))
    rows.append(("half", "q2", np.nan, 1.0))  # no confidence: not usable
    rows.append(("quarter", "q0", 1.0, 1.0))
    rows.append(("quarter", "q1", 1.0, np.nan))  # no grade: not usable
    rows.append(("none", "q3", np.nan, 1.0))
    return pd.DataFrame(rows, columns=["model", "item_id", "confidence", "correct"])


def test_coverage_table_by_hand():
    t = coverage_table(_coverage_frame(), 0.5)
    assert list(t.columns) == ["model", "n_items", "n_items_group", "share", "included",
                               "reason"]  # fmt: skip
    assert t["model"].tolist() == ["full", "half", "quarter", "none"]
    assert t["n_items"].tolist() == [4, 2, 1, 0]
    assert t["n_items_group"].tolist() == [4, 4, 4, 4]
    assert t["share"].tolist() == [1.0, 0.5, 0.25, 0.0]
    assert t["included"].tolist() == [True, True, False, False]
    assert t["reason"].tolist() == [
        "", "", "coverage 25.0% below min_coverage 0.5",
        "no item with both a confidence and a grade",
    ]  # fmt: skip
    # a share just below the bound is left out; no bound keeps every model with an item
    t = coverage_table(_coverage_frame(), 0.51)
    assert t["reason"].tolist()[1] == "coverage 50.0% below min_coverage 0.51"
    t = coverage_table(_coverage_frame(), None)
    assert t["included"].tolist() == [True, True, True, False]
    assert isinstance(t["n_items"].tolist()[0], int)


def test_probe_labels_add_the_kind_only_where_a_probe_has_two():
    keys = [("a", "p", "verbal_binary"), ("a", "p", "logprob"), ("a", "r", "logprob"),
            ("b", "p", "logprob")]  # fmt: skip
    assert an_orch._probe_labels(keys) == {
        ("a", "p", "verbal_binary"): "p:verbal_binary",
        ("a", "p", "logprob"): "p:logprob",
        ("a", "r", "logprob"): "r",
        ("b", "p", "logprob"): "p",
    }


def test_pooled_frames_by_hand():
    df = pd.DataFrame({
        "benchmark": ["x", "x", "y", "z"],
        "probe": ["p", "p", "p", "q"],
        "confidence_kind": ["k", "k", "k", "k"],
        "item_id": ["1", "2", "1", "9"],
        "model": ["m", "m", "m", "m"],
    })  # fmt: skip
    frames, notes = an_orch._pooled_frames(df)
    assert list(frames) == [("pooled", "p", "k")]
    f = frames[("pooled", "p", "k")]
    assert f["item_id"].tolist() == ["x:1", "x:2", "y:1"]
    assert f["benchmark"].tolist() == ["pooled"] * 3
    assert f["_source_benchmark"].tolist() == ["x", "x", "y"]
    assert df["benchmark"].tolist() == ["x", "x", "y", "z"]  # the input is untouched
    assert notes == ["pooled/q: only one benchmark (z); not pooled"]
    df.loc[3, "benchmark"] = "pooled"
    with pytest.raises(ValueError) as err:
        an_orch._pooled_frames(df)
    assert str(err.value) == (
        "the records already have a benchmark named 'pooled'; rename it to pool the others"
    )


def test_small_helpers_by_hand():
    assert an_summary.safe_name("a b/c:d") == "a-b-c-d" and an_summary.safe_name("//") == "x"
    assert an_summary.safe_name("x.y_z-1") == "x.y_z-1" and an_summary.safe_name(" a ") == "a"
    assert an_summary._aligned(None, ["a"], ["a", "b"]) == [None, None]
    assert an_summary._aligned(np.array([1.0, 2.0]), ["b", "c"], ["a", "b", "c"]) == [
        None,
        1.0,
        2.0,
    ]
    assert an_summary._basis(["a", "b"], 7.0, "rule") == {
        "models": ["a", "b"], "n_models": 2, "items": "rule", "n_items": 7}  # fmt: skip
    b = an_summary._basis(["a"], 3, "r", np.array([4, 2, 9]))
    assert b["n_items_per_pair"] == {"min": 2, "median": 4.0, "max": 9}
    assert type(b["n_items_per_pair"]["min"]) is int
    assert an_summary._basis([], 0, "r", np.array([]))["n_items_per_pair"] == {
        "min": None, "median": None, "max": None}  # fmt: skip


def test_union_items_by_hand():
    df = _records(n_items=12, n_models=3)
    every = an_group.item_matrices(df, missing="keep")
    assert an_summary._union_items(None, ["m0"]) == 0 and an_summary._union_items(every, []) == 0
    conf = every.confidence.copy()
    conf[:5, 0] = np.nan
    conf[:3, 1] = np.nan
    e2 = dataclasses.replace(every, confidence=conf)
    assert an_summary._union_items(e2, ["m0"]) == 7
    assert an_summary._union_items(e2, ["m0", "m1"]) == 9
    assert an_summary._union_items(e2, ["m0", "ghost"]) == 7


# ------------------------------------------------------------------------------------------
# One group's notes, sections and summary
# ------------------------------------------------------------------------------------------


def _partial_run():
    """m0..m2 answer q0..q11; m3 answers q0..q3 only (33%); m1 has no confidence on q0."""
    df = _records(n_items=12, n_models=4)
    df = df[~((df["model"] == "m3") & df["item_id"].isin([f"q{i}" for i in range(4, 12)]))]
    df = df.reset_index(drop=True)
    df.loc[(df["model"] == "m1") & (df["item_id"] == "q0"), "confidence"] = np.nan
    return df


def test_group_notes_and_coverage_of_a_partial_run():
    df = _partial_run()
    res = analyze_records(df, **FAST)
    g = res.summary["results"]["all"]["unspecified"]
    assert g["warnings"][:3] == [
        "1 model(s) below min_coverage 0.5 left out of the cross-model analyses (m3 33%)",
        "1 unparseable confidence(s) (m1 1)",
        "complete-case analyses (factor scores, alignment, private-signal test) use 11 of 12 "
        "items, those every included model answered (m1 lacks 1); the correlation matrices and "
        "the pairwise section use each pair's shared items",
    ]
    assert res.summary["warnings"][:3] == [f"all/unspecified: {w}" for w in g["warnings"][:3]]
    assert g["status"] == "ok" and g["reason"] is None
    assert g["models"] == ["m0", "m1", "m2"] and g["n_models"] == 3
    assert (g["n_items"], g["n_items_union"], g["n_items_total"], g["n_items_dropped"]) == (
        11, 12, 12, 1)  # fmt: skip
    assert g["dropped_by_model"] == {"m0": 0, "m1": 1, "m2": 0}
    assert g["unparseable_by_model"] == {"m0": 0, "m1": 1, "m2": 0}
    assert g["coverage_excluded"] == {"m3": pytest.approx(4 / 12)}
    assert g["coverage"]["m3"] == {"n_items": 4, "share": pytest.approx(4 / 12),
                                   "included": False,
                                   "reason": "coverage 33.3% below min_coverage 0.5"}  # fmt: skip
    assert g["coverage"]["m1"] == {"n_items": 11, "share": pytest.approx(11 / 12),
                                   "included": True, "reason": None}  # fmt: skip
    assert g["reasoning"] == {"m0": None, "m1": None, "m2": None}
    assert g["benchmark"] == "all" and g["probe"] == "unspecified"
    assert g["confidence_kind"] == "verbal_binary"
    # per-model calibration keeps every model, m3 too, on its own items
    assert sorted(g["per_model"]) == ["m0", "m1", "m2", "m3"]
    assert g["per_model"]["m3"]["n_items"] == 4 and g["per_model"]["m1"]["n_unparseable"] == 1
    assert set(g["per_model"]["m0"]) == set(an_summary._PER_MODEL_KEYS)
    # the whole summary
    s = res.summary
    assert s["n_records"] == len(df) == 40 and s["models"] == ["m0", "m1", "m2", "m3"]
    assert s["inputs"] == [] and s["schema_version"] == an.SCHEMA_VERSION
    assert s["generated_by"]["package"] == "metacog-eval"
    assert s["engine"] == {"per_pair": None, "joint": None, "requested": "numpy",
                           "numba_version": None}  # fmt: skip
    assert s["parameters"] == {
        "permutations": 0, "sequential": "on", "settle": "on", "joint_permutations": 0, "seed": 0,
        "alternative": "two-sided",
        "fdr_alpha": 0.05, "binarize_at": 0.5, "contentious_bounds": [0.1, 0.9],
        "factor_method": "minres",
        "missing": "pairwise-complete correlations and pairs; complete-case factor scores, "
        "alignment and private-signal test",
        "n_boot": 0, "deltas": list(DEFAULT_DELTAS), "min_models": 3, "min_items": 10,
        "pool": False, "min_coverage": 0.5, "numeric_levels": N_LEVELS,
        "min_pair_items": 10, "engine": "numpy", "small_gap": 0.02, "probe": None,
    }  # fmt: skip
    json.dumps(s, allow_nan=False)  # strict JSON


def test_sections_and_tables_of_a_partial_run():
    df = _partial_run()
    res = analyze_records(df, **FAST)
    g = res.summary["results"]["all"]["unspecified"]
    t = res.tables
    pre = "all__unspecified__"
    assert sorted(t) == sorted([pre + n for n in (
        "per_model", "coverage", "pairs", "delta_curve", "tetrachoric_confidence",
        "tetrachoric_correctness", "eigenvalues", "loadings", "factor_scores")]
        + ["per_model", "coverage"])  # fmt: skip
    assert t[pre + "coverage"][["benchmark", "probe", "confidence_kind"]].drop_duplicates(
    ).values.tolist() == [["all", "unspecified", "verbal_binary"]]  # fmt: skip
    assert t["per_model"]["model"].tolist() == ["m0", "m1", "m2", "m3"]
    assert t["coverage"]["model"].tolist() == ["m0", "m1", "m2", "m3"]
    # rates by hand: the share of yes (and of correct) over each model's usable items
    kept = df[df["model"] != "m3"].dropna(subset=["confidence"])
    conf_rate = kept.groupby("model")["confidence"].mean()
    for m in ("m0", "m1", "m2"):
        assert g["confidence"]["rate"][m] == pytest.approx(conf_rate[m])
    load = t[pre + "loadings"].set_index("model")
    assert load.index.tolist() == ["m0", "m1", "m2"]
    assert load["confidence_rate"].tolist() == pytest.approx(conf_rate.tolist())
    # correctness over the answered items (m1's q0 has no confidence: not answered)
    ans = df[(df["model"] != "m3") & df["confidence"].notna()]
    assert load["correctness_rate"].tolist() == pytest.approx(
        ans.groupby("model")["correct"].mean().tolist()
    )
    for name in ("confidence", "correctness"):
        sec = g[name]
        assert sec["method"] == "tetrachoric" and sec["reason"] is None
        assert sec["tetrachoric"]["models"] == ["m0", "m1", "m2"]
        assert sec["tetrachoric"]["n_items_pair"] == [11, 12, 11]
        assert sec["basis"] == {"models": ["m0", "m1", "m2"], "n_models": 3,
                                "items": "pairwise-complete", "n_items": 12,
                                "n_items_per_pair": {"min": 11, "median": 11.0,
                                                     "max": 12}}  # fmt: skip
        assert sec["tetrachoric"]["threshold_rule"].startswith("tau = Phi^-1(P(x = 0))")
        eig = t[pre + "eigenvalues"]
        ev = eig[eig["matrix"] == name]
        assert ev["component"].tolist() == [1, 2, 3]
        assert ev["share"].tolist() == pytest.approx((ev["eigenvalue"] / 3).tolist())
        assert ev["eigenvalue"].tolist() == pytest.approx(sec["eigen"]["eigenvalues"])
        assert sec["eigen"]["first_share"] == pytest.approx(ev["eigenvalue"].iloc[0] / 3)
        assert load[f"{name}_pc1_loading"].tolist() == pytest.approx(sec["eigen"]["loadings"])
        assert load[f"{name}_fa_loading"].tolist() == pytest.approx(sec["factor"]["loadings"])
        assert sec["factor"]["method"] == "minres" and sec["factor"]["converged"] is not None
        rho = t[pre + f"tetrachoric_{name}"]
        assert rho["model"].tolist() == ["m0", "m1", "m2"]
        assert rho[["m0", "m1", "m2"]].to_numpy() == pytest.approx(
            np.array(sec["tetrachoric"]["rho"])
        )
        assert np.diag(rho[["m0", "m1", "m2"]].to_numpy()).tolist() == [1.0, 1.0, 1.0]
    assert g["confidence"]["binarized_at"] is None and "binarized_at" not in g["correctness"]
    # factor scores: yes and correct counts over the 11 complete-case items, by hand
    fs = t[pre + "factor_scores"]
    cc = df[(df["model"] != "m3") & (df["item_id"] != "q0")]
    assert fs["item_id"].tolist() == [f"q{i}" for i in range(1, 12)]
    assert fs["yes_count"].tolist() == cc.groupby("item_id", sort=False)["confidence"].sum(
    ).astype(int).tolist()  # fmt: skip
    assert fs["correct_count"].tolist() == cc.groupby("item_id", sort=False)["correct"].sum(
    ).astype(int).tolist()  # fmt: skip
    assert fs["yes_count"].dtype.kind == "i" and fs["correct_count"].dtype.kind == "i"
    al = g["factor_alignment"]
    assert al["basis"] == {"models": ["m0", "m1", "m2"], "n_models": 3, "items": "complete-case",
                           "n_items": 11}  # fmt: skip
    assert tuple(al["bounds"]) == (0.1, 0.9)
    assert set(al["all"]) == {"r", "r2", "p_value", "ci", "n_items", "n_models_confidence",
                              "n_models_correctness", "reason"}  # fmt: skip
    pw = g["pairwise"]
    assert pw["n_pairs"] == 3 and pw["basis"]["n_pairs"] == 3
    assert pw["basis"]["n_items_per_pair"] == {"min": 11, "median": 11.0, "max": 12}
    assert pw["basis"]["items"] == "pairwise-complete" and pw["basis"]["n_items"] == 12
    assert pw["permutations"] == 0 and pw["nulls"]["base_rate"]["fdr_significant_share"] is None
    for null in ("base_rate", "calibration_preserving"):  # no draws: no shares at all
        assert pw["nulls"][null]["fdr_significant_share_by_direction"] is None
    assert "private_signal" not in pw["nulls"]
    pairs = t[pre + "pairs"]
    assert pairs["n_items"].tolist() == [11, 12, 11]
    assert len(t[pre + "delta_curve"]) == len(DEFAULT_DELTAS)


def test_skipped_groups_and_their_notes():
    df = pd.concat([
        _records(n_items=12, n_models=2, benchmark="two_models"),
        _records(n_items=9, n_models=3, benchmark="nine_items"),
        _records(n_items=10, n_models=3, benchmark="ten_items"),
    ])  # fmt: skip
    res = analyze_records(df, **FAST)
    r = res.summary["results"]
    assert list(r) == ["two_models", "nine_items", "ten_items"]
    a, b, c = (r[k]["unspecified"] for k in r)
    assert a["status"] == "skipped"
    assert a["reason"] == "2 model(s) with usable items; need at least 3"
    assert a["warnings"] == ["cross-model analyses skipped: 2 model(s) with usable items; "
                             "need at least 3"]  # fmt: skip
    assert b["reason"] == "9 item(s) with usable answers; need at least 10"
    assert c["status"] == "ok" and c["reason"] is None
    assert a["confidence"] == {} and a["correctness"] == {} and a["pairwise"] == {}
    assert a["factor_alignment"] == {}
    assert sorted(a["per_model"]) == ["m0", "m1"] and a["per_model"]["m0"]["n_items"] == 12
    assert sorted(n for n in res.tables if n.startswith("two_models")) == [
        "two_models__unspecified__coverage",
        "two_models__unspecified__per_model",
    ]
    assert "ten_items__unspecified__pairs" in res.tables
    assert len(res.tables["per_model"]) == 2 + 3 + 3
    assert res.tables["per_model"]["benchmark"].tolist() == ["two_models"] * 2 + [
        "nine_items"] * 3 + ["ten_items"] * 3  # fmt: skip
    assert res.summary["warnings"][0] == (
        "two_models/unspecified: cross-model analyses skipped: 2 model(s) with usable items; "
        "need at least 3")  # fmt: skip


def test_summary_text_has_one_unindented_line_per_group_after_the_run_line():
    df = pd.concat([
        _records(n_items=12, n_models=2, benchmark="two_models"),
        _records(n_items=12, n_models=3, benchmark="ok"),
    ])  # fmt: skip
    res = analyze_records(df, **FAST)
    heads = [line for line in res.summary_text().splitlines() if not line.startswith(" ")]
    assert len(heads) == 1 + len(res.groups) == 3


def test_short_pairs_and_the_private_signal_note():
    """m3 answers 9 of 14 items: pairs with fewer than 10 shared items are left out and noted
    before the private-signal note (9 complete-case items: not run), and the findings say its
    basis is too thin."""
    df = _records(n_items=14, n_models=4)
    drop = (df["model"] == "m3") & df["item_id"].isin(["q0", "q1", "q2", "q3", "q4"])
    df = df[~drop].reset_index(drop=True)  # m3: 9 of 14 items (64%, kept)
    res = analyze_records(df, **{**FAST, "joint_permutations": 9})
    w = res.summary["results"]["all"]["unspecified"]["warnings"]
    assert "confidence: model 'm3' excluded from the tetrachoric matrix (fewer than 10 shared "\
        "items with 3 other model(s))" in w  # fmt: skip
    assert "correctness: model 'm3' excluded from the tetrachoric matrix (fewer than 10 shared "\
        "items with 3 other model(s))" in w  # fmt: skip
    i = w.index("pairwise: 3 pair(s) share fewer than 10 items; left out")
    assert w[i + 1] == "private-signal test: 9 complete-case item(s); need at least 10; not run"
    assert res.groups[("all", "unspecified", "verbal_binary")].private_signal is None
    assert any(
        c.startswith("The test of private signal runs on the items every included model")
        and "all/unspecified (9 complete-case items)" in c
        for c in res.findings.caveats
    )


def test_numeric_confidence_sections():
    df = _records(n_items=12, n_models=3, numeric=True, kind="verbal_numeric")
    res = analyze_records(df, **FAST)
    g = res.summary["results"]["all"]["unspecified"]
    assert g["confidence"]["method"] == "polychoric" and g["confidence"]["binarized_at"] is None
    assert g["correctness"]["method"] == "tetrachoric"
    assert "private-signal test: binary confidence only; not run" in g["warnings"]
    assert "all__unspecified__polychoric_confidence" in res.tables
    fs = res.tables["all__unspecified__factor_scores"]
    assert "yes_count" not in fs and fs["mean_confidence"].tolist() == pytest.approx(
        df.groupby("item_id", sort=False)["confidence"].mean().tolist()
    )
    assert set(g["confidence"]["polychoric"]["n_levels"]) == {"m0", "m1", "m2"}
    # binarised instead (numeric_levels=0): tetrachoric of confidence >= binarize_at
    res = analyze_records(df, **FAST, numeric_levels=0, binarize_at=0.6)
    g = res.summary["results"]["all"]["unspecified"]
    assert g["confidence"]["method"] == "tetrachoric" and g["confidence"]["binarized_at"] == 0.6
    yes = (df["confidence"] >= 0.6).groupby(df["model"]).mean()
    assert [g["confidence"]["rate"][m] for m in ("m0", "m1", "m2")] == pytest.approx(yes.tolist())
    fs = res.tables["all__unspecified__factor_scores"]
    assert fs["yes_count"].tolist() == (df["confidence"] >= 0.6).groupby(
        df["item_id"], sort=False).sum().astype(int).tolist()  # fmt: skip


def test_groups_pooling_and_labels():
    df = pd.concat([
        _records(n_items=6, n_models=3, benchmark="x"),
        _records(n_items=6, n_models=3, benchmark="y", seed=1),
        _records(n_items=12, n_models=3, benchmark="x", kind="logprob", numeric=True),
    ])  # fmt: skip
    res = analyze_records(df, **FAST, pool=True)
    r = res.summary["results"]
    assert list(r) == ["x", "y", "pooled"]
    assert list(r["x"]) == ["unspecified:verbal_binary", "unspecified:logprob"]
    assert list(r["pooled"]) == ["unspecified"]
    p = r["pooled"]["unspecified"]
    assert p["status"] == "ok" and p["n_items_total"] == 12
    assert res.summary["parameters"]["pool"] is True
    assert "pooled/unspecified: only one benchmark (x); not pooled" in res.summary["warnings"]
    assert r["y"]["unspecified"]["reason"] == "6 item(s) with usable answers; need at least 10"
    assert "pooled__unspecified__pairs" in res.tables
    assert list(analyze_records(df, **FAST).summary["results"]) == ["x", "y"]  # no pooling


def test_analyze_files_writes_outputs_and_removes_stale_ones(tmp_path):
    src = tmp_path / "runs.csv"
    _records(n_items=12, n_models=3).to_csv(src, index=False)
    out = tmp_path / "out"
    analyze_files(src, out_dir=out, report=True, **{**FAST, "pool": False})
    (out / "tables" / "old.csv").write_text("x")  # not metacog's: kept
    res = analyze_files(src, out_dir=out, report=False, **FAST)
    assert (out / "tables" / "old.csv").read_text() == "x"
    (out / "tables" / "old.csv").unlink()
    assert res.out_dir == out
    s = json.loads((out / "summary.json").read_text())
    assert s == json.loads(json.dumps(res.summary))
    assert s["inputs"] == [str(src)] and s["n_records"] == 36
    names = sorted(p.stem for p in (out / "tables").glob("*.csv"))
    assert names == sorted(res.tables)
    assert not (out / "report.html").exists()
    cov = pd.read_csv(out / "tables" / "coverage.csv")
    assert cov["model"].tolist() == ["m0", "m1", "m2"] and cov["included"].all()
    with pytest.raises(TypeError, match="unknown analysis option"):
        analyze_files(src, out_dir=out, permutation=3)


def test_progress_defaults_on_for_files_only(tmp_path, monkeypatch):
    seen = []
    real = an_orch.analyze_validated

    def record(df, opts, models=None, **kw):
        seen.append(opts.progress)
        return real(df, opts, models, **kw)

    monkeypatch.setattr(pipeline, "analyze_validated", record)
    monkeypatch.setattr(an_orch, "analyze_validated", record)
    src = tmp_path / "runs.csv"
    _records(n_items=12, n_models=3).to_csv(src, index=False)
    analyze_files(src, out_dir=tmp_path / "a", report=False, **FAST)
    analyze_files(src, AnalysisOptions(**FAST), out_dir=tmp_path / "b", report=False)
    analyze_records(_records(), **FAST)
    assert seen == [True, False, False]


def test_models_traits_fill_reasoning():
    df = _records(n_items=12, n_models=3)
    res = analyze_records(df, **FAST, models={"m0": {"reasoning": True},
                                              "m1": {"reasoning": False},
                                              "m2": {"reasoning": False}})  # fmt: skip
    g = res.summary["results"]["all"]["unspecified"]
    assert g["reasoning"] == {"m0": True, "m1": False, "m2": False}
    assert math.isfinite(g["pairwise"]["mean_tau"])


def test_engines_used_by_hand(monkeypatch):
    from types import SimpleNamespace as NS

    def group(engines, joint):
        per_pair = {i: NS(engine=e, permutations=p) for i, (e, p) in enumerate(engines)}
        return NS(pairwise=NS(per_pair=per_pair, joint_engine=joint))

    monkeypatch.setattr(an_summary.importlib, "import_module",
                        lambda name: NS(__version__=f"{name}-9.9"))  # fmt: skip
    used = an_summary._engines_used({1: group([("numpy", 9), ("numba", 0)], None)}, "auto")
    assert used == {"per_pair": "numpy", "joint": None, "requested": "auto",
                    "numba_version": None}  # fmt: skip
    used = an_summary._engines_used({1: group([("numpy", 9)], "numba"), 2: NS(pairwise=None)}, "x")
    assert used == {"per_pair": "numpy", "joint": "numba", "requested": "x",
                    "numba_version": "numba-9.9"}  # fmt: skip
    used = an_summary._engines_used({1: group([("numba", 5)], "numpy"),
                             2: group([("numpy", 5)], "numpy")}, "auto")  # fmt: skip
    assert used["per_pair"] == "mixed" and used["joint"] == "numpy"
    assert used["numba_version"] == "numba-9.9"
    assert an_summary._engines_used({}, "numba") == {
        "per_pair": None,
        "joint": None,
        "requested": "numba",
        "numba_version": None,
    }


def test_report_is_written_only_when_asked(tmp_path, monkeypatch):
    import sys
    from types import SimpleNamespace as NS

    calls = []
    fake = NS(
        write_report=lambda result, out: (
            calls.append((result.out_dir, out)),
            (out / "report.html").write_text("new"),
        )
    )
    monkeypatch.setitem(sys.modules, "metacog_metrics.report", fake)
    src = tmp_path / "runs.csv"
    _records(n_items=12, n_models=3).to_csv(src, index=False)
    out = tmp_path / "out"
    analyze_files(src, out_dir=out, **FAST)
    assert calls == [(out, out)] and (out / "report.html").read_text() == "new"
    analyze_files(src, out_dir=out, report=False, **FAST)
    assert len(calls) == 1 and not (out / "report.html").exists()


# ------------------------------------------------------------------------------------------
# Lists of several models in the notes, whole models dropped, skipped groups' fields
# ------------------------------------------------------------------------------------------

#: Items each included model of :func:`_crowd` lacks (disjoint), and which of them are rows
#: with an unparseable (NaN) confidence rather than absent rows.
_LACKS = {"a": [], "b": ["q0"], "c": ["q1", "q2", "q3"], "d": ["q4", "q5"], "e": ["q6"]}
_UNPARSED = {"b": ["q0"], "c": ["q1", "q2"]}


def _crowd():
    """Eight models on 20 items, in the order a b c y d x e z: a-e included, lacking 0, 1, 3,
    2 and 1 items; y (5 items, 25%) and x (9 items, 45%) below coverage; z has a row for every
    item but no parseable confidence (a whole model dropped)."""
    rng = np.random.default_rng(5)
    diff = rng.normal(size=20)
    rows = []
    for m in ["a", "b", "c", "y", "d", "x", "e", "z"]:
        for i in range(20):
            q = f"q{i}"
            if (m == "y" and i >= 5) or (m == "x" and i >= 9):
                continue
            if q in _LACKS.get(m, []) and q not in _UNPARSED.get(m, []):
                continue
            conf = float(diff[i] + rng.normal() > 0)
            if m == "z" or q in _UNPARSED.get(m, []):
                conf = np.nan
            rows.append((m, q, conf, float(diff[i] + rng.normal() > 0)))
    return pd.DataFrame(rows, columns=["model", "item_id", "confidence", "correct"])


def test_notes_list_several_models_in_their_order():
    """Each note that lists models: in order of appearance (coverage, unparseable), or by most
    items lacking, at most three, ties in model order (the complete-case note)."""
    df = _crowd()
    # rows: a 20, b 20 (q0 unparseable), c 19 (q1, q2 unparseable, no q3), y 5, d 18, x 9,
    # e 19, z 20 (all unparseable)
    assert len(df) == 130
    res = analyze_records(df, **FAST)
    g = res.summary["results"]["all"]["unspecified"]
    assert g["warnings"][:4] == [
        "2 model(s) below min_coverage 0.5 left out of the cross-model analyses (y 25%, x 45%)",
        "model 'z' left out: no item with both a confidence and a grade",
        "23 unparseable confidence(s) (b 1, c 2, z 20)",
        "complete-case analyses (factor scores, alignment, private-signal test) use 13 of 20 "
        "items, those every included model answered (c lacks 3, d lacks 2, b lacks 1); the "
        "correlation matrices and the pairwise section use each pair's shared items",
    ]
    assert g["models"] == ["a", "b", "c", "d", "e"] and g["n_models"] == 5
    assert list(g["coverage_excluded"].items()) == [("y", 0.25), ("x", 0.45)]
    assert g["models_dropped"] == {"z": "no item with both a confidence and a grade"}
    assert g["unparseable_by_model"] == {"a": 0, "b": 1, "c": 2, "d": 0, "e": 0, "z": 20}
    assert g["dropped_by_model"] == {"a": 0, "b": 1, "c": 3, "d": 2, "e": 1}
    assert (g["n_items"], g["n_items_union"], g["n_items_total"], g["n_items_dropped"]) == (
        13, 20, 20, 7)  # fmt: skip
    assert list(g["coverage"]) == ["a", "b", "c", "y", "d", "x", "e", "z"]
    assert [c["n_items"] for c in g["coverage"].values()] == [20, 19, 17, 5, 18, 9, 19, 0]
    assert [c["included"] for c in g["coverage"].values()] == [True] * 3 + [False, True,
                                                               False, True, False]  # fmt: skip
    assert g["coverage"]["z"]["reason"] == "no item with both a confidence and a grade"
    # each pair's shared items: 20 less the two models' (disjoint) gaps, pairs in model order
    per_pair = [19, 17, 18, 19, 16, 17, 18, 15, 16, 17]
    for name in ("confidence", "correctness"):
        sec = g[name]
        assert sec["tetrachoric"]["models"] == ["a", "b", "c", "d", "e"]
        assert sec["tetrachoric"]["n_items_pair"] == per_pair
        assert sec["basis"]["n_items_per_pair"] == {"min": 15, "median": 17.0, "max": 19}
        assert sec["basis"]["n_items"] == 20
    assert res.tables["all__unspecified__pairs"]["n_items"].tolist() == per_pair
    assert g["pairwise"]["basis"]["n_items_per_pair"] == {"min": 15, "median": 17.0, "max": 19}
    assert g["factor_alignment"]["basis"]["n_items"] == 13


def test_complete_case_note_lists_only_models_that_lack_items():
    """Two models lack items, three do not: the note names the two, most first."""
    df = _records(n_items=14, n_models=5)
    gaps = {"m1": ["q0"], "m3": ["q1", "q2"]}
    drop = np.zeros(len(df), dtype=bool)
    for m, items in gaps.items():
        drop |= (df["model"] == m) & df["item_id"].isin(items)
    res = analyze_records(df[~drop].reset_index(drop=True), **FAST)
    w = res.summary["results"]["all"]["unspecified"]["warnings"]
    assert w[0] == (
        "complete-case analyses (factor scores, alignment, private-signal test) use 11 of 14 "
        "items, those every included model answered (m3 lacks 2, m1 lacks 1); the correlation "
        "matrices and the pairwise section use each pair's shared items"
    )


def test_skipped_groups_keep_their_probe_and_threshold():
    """A skipped group (two models) still reports its probe, kind and binarisation."""
    df = _records(n_items=12, n_models=2, kind="verbal_numeric", numeric=True)
    df["probe"] = "retro"
    res = analyze_records(df, **FAST, numeric_levels=0, binarize_at=0.7)
    key = ("all", "retro", "verbal_numeric")
    g = res.groups[key]
    assert (g.benchmark, g.probe, g.confidence_kind, g.label) == (
        "all",
        "retro",
        "verbal_numeric",
        "retro",
    )
    assert g.binarized_at == 0.7 and g.skipped is not None
    assert g.confidence is None and g.correctness is None and g.pairwise is None
    assert g.alignment is None and g.private_signal is None
    assert g.coverage_excluded == {} and g.all_items.models == ("m0", "m1")
    assert g.coverage["model"].tolist() == ["m0", "m1"]
    s = res.summary["results"]["all"]["retro"]
    assert s["probe"] == "retro" and s["confidence_kind"] == "verbal_numeric"
    assert s["status"] == "skipped" and s["confidence"] == {"binarized_at": 0.7}
    assert s["correctness"] == {} and s["n_items_union"] == 12
    # ordered levels (the default) or binary confidence: no threshold
    for kind, extra in (("verbal_numeric", {}), ("verbal_binary", {"numeric_levels": 0})):
        d = _records(n_items=12, n_models=2, kind=kind, numeric=kind != "verbal_binary")
        r = analyze_records(d, **FAST, **extra)
        (g,) = r.groups.values()
        assert g.binarized_at is None
        assert r.summary["results"]["all"]["unspecified"]["confidence"] == {}


def test_skipped_group_below_coverage_keeps_what_it_left_out():
    """Three models, one below coverage: two are left, the group is skipped, and the
    left-out model is still reported (coverage, head line)."""
    df = _records(n_items=12, n_models=3)
    kept = ["q0", "q1", "q2", "q3"]
    df = df[(df["model"] != "m2") | df["item_id"].isin(kept)].reset_index(drop=True)
    res = analyze_records(df, **FAST)
    (g,) = res.groups.values()
    assert g.skipped == "2 model(s) with usable items; need at least 3"
    assert dict(g.coverage_excluded) == {"m2": pytest.approx(4 / 12)}
    assert g.all_items.models == ("m0", "m1") and g.matrices.models == ("m0", "m1")
    s = res.summary["results"]["all"]["unspecified"]
    assert s["coverage_excluded"] == {"m2": pytest.approx(4 / 12)}
    assert len(res.tables["all__unspecified__coverage"]) == 3


# ------------------------------------------------------------------------------------------
# The correlation sections by hand
# ------------------------------------------------------------------------------------------


def _binary(n_items, n_models, seed=0):
    rng = np.random.default_rng(seed)
    diff = rng.normal(size=(n_items, 1))
    return (diff + rng.normal(size=(n_items, n_models)) > 0).astype(float)


def test_pairable_tetrachoric_leaves_out_the_model_with_most_gaps_first():
    """p and q share 9 items (< 10): of the two, p (14 items) goes before q (15); the constant
    model c is left out by the tetrachoric matrix itself; reasons in the models' order."""
    x = _binary(20, 5)
    names = ["p", "k", "q", "c", "r"]
    x[:, 3] = 1.0
    x[0:6, 0] = np.nan
    x[6:11, 2] = np.nan
    tet = an_group._pairable_tetrachoric(x, names, 10)
    assert list(tet.names) == ["k", "q", "r"]
    assert tet.dropped == ("p", "c")
    assert list(tet.dropped_reasons.items()) == [
        ("p", "fewer than 10 shared items with 1 other model(s)"),
        ("c", "no variance (all 1)"),
    ]
    ref = an_group.tetrachoric_matrix(x[:, [1, 2, 4]], names=["k", "q", "r"])
    assert np.allclose(tet.rho, ref.rho) and np.array_equal(tet.n, ref.n)
    assert tet.n.tolist() == [[20, 15, 20], [15, 15, 15], [20, 15, 20]]
    # with min_pair 9 the pair is enough: nobody is left out for it
    tet = an_group._pairable_tetrachoric(x, names, 9)
    assert list(tet.names) == ["p", "k", "q", "r"]
    assert dict(tet.dropped_reasons) == {"c": "no variance (all 1)"}


def test_pairable_tetrachoric_counts_each_models_short_pairs():
    """s (13 items), t (15) and u (14) share 8, 7 and 9 items pairwise: s (two short pairs, the
    fewest items) goes first, then u (one short pair left, fewer items than t)."""
    x = _binary(20, 5, seed=1)
    names = ["f", "s", "t", "u", "g"]
    x[0:7, 1] = np.nan
    x[7:12, 2] = np.nan
    x[12:18, 3] = np.nan
    tet = an_group._pairable_tetrachoric(x, names, 10)
    assert list(tet.names) == ["f", "t", "g"]
    assert list(tet.dropped_reasons.items()) == [
        ("s", "fewer than 10 shared items with 2 other model(s)"),
        ("u", "fewer than 10 shared items with 1 other model(s)"),
    ]
    assert tet.dropped == ("s", "u")
    # no short pair: the matrix of every model, as the tetrachoric module gives it
    full = an_group._pairable_tetrachoric(_binary(12, 3), ["a", "b", "c"], 10)
    assert list(full.names) == ["a", "b", "c"] and full.dropped == ()
    assert np.allclose(full.rho, an_group.tetrachoric_matrix(_binary(12, 3)).rho)


def test_section_rates_and_reasons_by_hand():
    x = np.array([[1, 0, 1], [1, 1, np.nan], [0, 1, 1], [0, 0, np.nan]] * 4, dtype=float)
    # rates over each model's own items: 8/16, 8/16, 8/8
    sec = an_group._section(x, ["a", "b", "c"], min_pair=3)
    assert sec.rate.tolist() == [0.5, 0.5, 1.0]
    assert list(sec.tetrachoric.names) == ["a", "b"]
    assert sec.reason == "fewer than 3 models with variance: no factor model"
    assert sec.eigen is not None and sec.factor is None and sec.method == "tetrachoric"
    assert sec.correlation is sec.tetrachoric
    # one varying model: no eigen-decomposition either
    one = an_group._section(x[:, [0, 2]], ["a", "c"], min_pair=3)
    assert one.reason == "only 1 model(s) with variance" and one.eigen is None
    assert one.factor is None
    # a model with no item at all has no rate (NaN), without a warning
    empty = np.column_stack([x[:, :2], np.full(16, np.nan)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sec = an_group._section(empty, ["a", "b", "z"], min_pair=3)
    assert sec.rate[:2].tolist() == [0.5, 0.5] and math.isnan(sec.rate[2])
    assert sec.reason == "fewer than 3 models with variance: no factor model"
    assert dict(sec.tetrachoric.dropped_reasons) == {"z": "no observations"}


def test_section_reports_missing_correlations():
    """Two models sharing two items have no tetrachoric (it needs three complete rows)."""
    x = _binary(12, 3, seed=2)
    x[0:10, 0] = np.nan  # a: items 10 and 11 only (1 and 0), shared with c alone
    x[10:12, 0] = [1.0, 0.0]
    x[10:12, 1] = np.nan
    sec = an_group._section(x, ["a", "b", "c"], min_pair=0)
    assert math.isnan(sec.tetrachoric.rho[0, 1])
    assert sec.reason == "missing tetrachoric correlations"
    assert sec.eigen is None and sec.factor is None


# ------------------------------------------------------------------------------------------
# Files: options, models file, warnings, the written formats
# ------------------------------------------------------------------------------------------


def test_analyze_files_formats_options_models_and_record_warnings(tmp_path):
    src = tmp_path / "runs.csv"
    _partial_run().to_csv(src, index=False)  # m1's q0 has no confidence: a RecordWarning
    yml = tmp_path / "models.yaml"
    yml.write_text("models:\n  m0: {reasoning: true}\n  m1: {reasoning: false}\n")
    out = tmp_path / "out"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = analyze_files(src, AnalysisOptions(**FAST, seed=7), out_dir=out, report=False,
                            models_file=yml)  # fmt: skip
    assert [w for w in seen if issubclass(w.category, RecordWarning)] == []
    s = res.summary
    assert s["parameters"]["seed"] == 7 and s["parameters"]["permutations"] == 0
    assert s["warnings"][:2] == [
        f"{yml}: no reasoning flag for 2 model(s): m2, m3",
        "1 record(s) with an unparseable (NaN) confidence",
    ]
    g = s["results"]["all"]["unspecified"]
    assert g["reasoning"] == {"m0": True, "m1": False, "m2": None}
    # summary.json: indented by 2, strict JSON
    text = (out / "summary.json").read_text()
    assert text.startswith('{\n  "schema_version": "1.0",\n  "generated_by": {\n    "package"')
    # the tables: no index column
    cov = (out / "tables" / "coverage.csv").read_text().splitlines()
    assert cov[0] == ("model,n_items,n_items_group,share,included,reason,benchmark,probe,"
                      "confidence_kind")  # fmt: skip
    assert cov[1] == "m0,12,12,1.0,True,,all,unspecified,verbal_binary"
    assert cov[4].startswith("m3,4,12,0.333")


def test_pooled_frames_keep_the_order_of_appearance_past_an_unpooled_probe():
    df = pd.DataFrame({
        "benchmark": ["x", "y", "x", "x", "y"],
        "probe": ["z", "z", "solo", "a", "a"],
        "confidence_kind": ["k"] * 5,
        "item_id": ["1", "1", "2", "3", "3"],
        "model": ["m"] * 5,
    })  # fmt: skip
    frames, notes = an_orch._pooled_frames(df)
    assert list(frames) == [("pooled", "z", "k"), ("pooled", "a", "k")]
    assert notes == ["pooled/solo: only one benchmark (x); not pooled"]
    assert frames[("pooled", "a", "k")]["item_id"].tolist() == ["x:3", "y:3"]


# ------------------------------------------------------------------------------------------
# The summary text's formats
# ------------------------------------------------------------------------------------------


def test_analyze_records_takes_its_options_and_overrides():
    base = AnalysisOptions(**FAST, seed=7, fdr_alpha=0.1)
    res = analyze_records(_records(n_items=12, n_models=3), base, binarize_at=0.25)
    p = res.summary["parameters"]
    assert (p["seed"], p["fdr_alpha"], p["binarize_at"], p["permutations"]) == (7, 0.1, 0.25, 0)


# ------------------------------------------------------------------------------------------
# The sections' summaries: every field, a model without variance, the missing parts
# ------------------------------------------------------------------------------------------

_PSYCH = "tau = Phi^-1(P(x = 0)) (psych): a high threshold is a low yes-rate or accuracy"


def _same(got, want):
    """``got`` (summary: plain JSON, NaN as None) holds ``want`` (the result object's)."""
    want = np.asarray(want, dtype=float).ravel()
    got = np.asarray([np.nan if v is None else v for v in np.ravel(np.asarray(got, dtype=object))],
                     dtype=float)  # fmt: skip
    assert got.shape == want.shape and np.allclose(got, want, equal_nan=True, rtol=1e-12)


def _copied(sec, d, models):
    """The summary ``d`` of section ``sec`` holds the section's own figures, laid out over
    ``models`` (None where a model is not in the matrix)."""
    t = sec.tetrachoric
    c = d[sec.method]
    pos = [list(t.names).index(m) if m in t.names else None for m in models]
    _same(c["tau"], [np.nan if p is None else t.tau[p] for p in pos])
    _same(c["rho"], [[np.nan if p is None or q is None else t.rho[p, q] for q in pos]
                     for p in pos])  # fmt: skip
    assert c["models"] == list(t.names) and c["smoothed"] == t.smoothed
    assert c["smoothing_note"] == t.smoothing_note
    _same(c["min_eigenvalue"], t.min_eigenvalue)
    assert c["n_corrected_pairs"] == t.n_corrected_pairs
    e, f = sec.eigen, sec.factor
    _same(d["eigen"]["eigenvalues"], e.eigenvalues)
    _same(d["eigen"]["first_share"], e.first_share)
    _same(d["eigen"]["quadratic_r2"], e.quadratic_r2)
    _same(d["eigen"]["quadratic_coef"], e.quadratic.coef)
    _same(d["eigen"]["quadratic_p_value"], e.quadratic.p_value)
    _same(d["eigen"]["quadratic_vertex"], e.quadratic.vertex)
    _same(d["eigen"]["loadings"], [np.nan if p is None else e.loadings[p] for p in pos])
    _same(d["factor"]["loadings"], [np.nan if p is None else f.loadings[p] for p in pos])
    assert [v is None for v in d["factor"]["loadings"]] == [p is None for p in pos]
    _same(d["factor"]["variance_share"], f.variance_share[0])
    assert d["factor"]["heywood"] == f.heywood and d["factor"]["converged"] == f.converged
    assert d["factor"]["method"] == "minres"


def test_section_summaries_copy_every_figure_and_lay_out_a_model_without_variance():
    df = _records(n_items=12, n_models=4, seed=3)
    df.loc[df["model"] == "m2", "confidence"] = 1.0  # m2 always says yes
    res = analyze_records(df, **FAST)
    (g,) = res.groups.values()
    d = res.summary["results"]["all"]["unspecified"]
    models = ["m0", "m1", "m2", "m3"]
    conf, corr = d["confidence"], d["correctness"]
    assert conf["tetrachoric"]["models"] == ["m0", "m1", "m3"]
    assert conf["tetrachoric"]["dropped"] == {"m2": "no variance (all 1)"}
    assert conf["rate"]["m2"] == 1.0
    assert conf["tetrachoric"]["threshold_rule"] == _PSYCH
    assert corr["tetrachoric"]["threshold_rule"] == _PSYCH
    assert conf["basis"]["models"] == ["m0", "m1", "m3"] and conf["basis"]["n_models"] == 3
    assert conf["tetrachoric"]["n_items_pair"] == [12, 12, 12]
    assert conf["eigen"]["loadings"][2] is None and conf["factor"]["loadings"][2] is None
    assert "confidence: model 'm2' excluded from the tetrachoric matrix (no variance (all 1))" in (
        d["warnings"])  # fmt: skip
    _copied(g.confidence, conf, models)
    _copied(g.correctness, corr, models)
    load = res.tables["all__unspecified__loadings"]
    assert load["confidence_rate"].tolist()[2] == 1.0
    for name, sec in (("confidence", conf), ("correctness", corr)):
        _same(load[f"{name}_threshold"], sec["tetrachoric"]["tau"])
        _same(load[f"{name}_pc1_loading"], sec["eigen"]["loadings"])
        _same(load[f"{name}_fa_loading"], sec["factor"]["loadings"])
    assert load[["confidence_threshold", "confidence_pc1_loading", "confidence_fa_loading"]].iloc[
        2].isna().all()  # fmt: skip
    rho = res.tables["all__unspecified__tetrachoric_confidence"]
    assert rho["m2"].isna().all() and rho.loc[2, ["m0", "m1", "m3"]].isna().all()


def test_polychoric_section_summary_by_hand():
    df = _records(n_items=12, n_models=3, numeric=True, kind="logprob")
    res = analyze_records(df, **FAST, numeric_levels=3)
    (g,) = res.groups.values()
    d = res.summary["results"]["all"]["unspecified"]["confidence"]
    t = g.confidence.tetrachoric
    assert d["method"] == "polychoric" and "tetrachoric" not in d
    assert d["polychoric"]["n_levels"] == {"m0": 3, "m1": 3, "m2": 3}  # 12 values in 3 bins
    # the pooled median confidence of the three models' 36 values, by NumPy
    assert d["polychoric"]["median_confidence"] == pytest.approx(np.median(df["confidence"]))
    assert d["polychoric"]["threshold_rule"] == t.threshold_rule != _PSYCH
    assert d["polychoric"]["threshold_rule"].startswith("tau = Phi^-1(P(confidence < m)")
    _copied(g.confidence, d, ["m0", "m1", "m2"])
    # the rate of numeric confidence is its mean, per model
    assert [d["rate"][m] for m in ("m0", "m1", "m2")] == pytest.approx(
        df.groupby("model")["confidence"].mean().tolist())  # fmt: skip


def test_section_summary_without_eigen_or_factor():
    x = _binary(16, 3)
    two = an_group._section(np.column_stack([x[:, :2], np.ones(16)]), ["a", "b", "c"])
    d = an_summary._section_summary(two, ["a", "b", "c"])
    assert d["reason"] == "fewer than 3 models with variance: no factor model"
    assert d["eigen"]["loadings"][2] is None and d["eigen"]["loadings"][0] is not None
    assert d["eigen"]["first_share"] == two.eigen.first_share
    assert d["factor"] == {"method": None, "loadings": [None, None, None],
                           "variance_share": None, "heywood": None, "converged": None}  # fmt: skip
    assert d["basis"]["n_items"] == 0  # no item matrices given
    one = an_group._section(np.column_stack([x[:, :1], np.ones((16, 2))]), ["a", "b", "c"])
    d = an_summary._section_summary(one, ["a", "b", "c"])
    assert d["reason"] == "only 1 model(s) with variance"
    assert d["eigen"] == {"eigenvalues": None, "first_share": None,
                          "loadings": [None, None, None], "quadratic_r2": None,
                          "quadratic_coef": None, "quadratic_p_value": None,
                          "quadratic_vertex": None}  # fmt: skip
    assert d["factor"]["loadings"] == [None, None, None] and d["factor"]["method"] is None
    assert an_summary._section_summary(None, ["a"]) == {}


def test_pairable_tetrachoric_weighs_short_pairs_before_items():
    """A (20 items) is short with B (15) and C (14), which share 14 items: A goes, although
    B and C have fewer items; the full models F and G stay."""
    x = _binary(30, 5, seed=4)
    names = ["F", "A", "B", "C", "G"]
    x[20:, 1] = np.nan  # A: items 0-19
    x[:15, 2] = np.nan  # B: items 15-29
    x[:16, 3] = np.nan  # C: items 16-29
    tet = an_group._pairable_tetrachoric(x, names, 10)
    assert list(tet.names) == ["F", "B", "C", "G"]
    assert dict(tet.dropped_reasons) == {"A": "fewer than 10 shared items with 2 other model(s)"}


def test_section_rate_of_a_model_with_one_item():
    x = _binary(12, 3, seed=6)
    x[1:, 2] = np.nan
    x[0, 2] = 1.0
    sec = an_group._section(x, ["a", "b", "c"])
    assert sec.rate[2] == 1.0
    assert sec.rate[:2].tolist() == pytest.approx(x[:, :2].mean(axis=0).tolist())


# ------------------------------------------------------------------------------------------
# Each stage's settings and random stream, against the stages called directly
# ------------------------------------------------------------------------------------------


def test_each_stage_gets_its_settings_and_its_own_stream():
    """The group's streams are SeedSequence([seed, crc32 of the key joined by \\x1f]).spawn(3):
    pairwise, calibration bootstrap, private-signal test, in that order; every option reaches
    its stage. The stages are called here directly with those streams and settings."""
    import zlib

    from metacog_metrics.calibration import calibration_by_model
    from metacog_metrics.factors import factor_alignment
    from metacog_metrics.pairwise import pairwise_calibration
    from metacog_metrics.private_signal import private_signal_test

    df = _records(n_items=14, n_models=4, seed=8)
    opts = {"permutations": 19, "joint_permutations": 29, "n_boot": 25, "workers": 1,
            "engine": "numpy", "seed": 11, "alternative": "greater", "fdr_alpha": 0.2,
            "deltas": (0.0, 0.25), "contentious_bounds": (0.2, 0.7)}  # fmt: skip
    res = analyze_records(df, **opts)
    (g,) = res.groups.values()
    code = zlib.crc32(b"all\x1funspecified\x1fverbal_binary")
    pair, boot, strat = np.random.SeedSequence([11, code]).spawn(3)
    models = ["m0", "m1", "m2", "m3"]
    wide = df.pivot(index="item_id", columns="model").loc[[f"q{i}" for i in range(14)]]
    conf, corr = wide["confidence"][models].to_numpy(), wide["correct"][models].to_numpy()

    ps = private_signal_test(conf, corr, permutations=29, rng=strat, workers=1)
    assert np.array_equal(g.private_signal.draws, ps.draws, equal_nan=True)
    assert g.private_signal.p_value == ps.p_value

    pw = pairwise_calibration(conf, corr, models=models, permutations=19, joint_permutations=29,
                              alternative="greater", fdr_alpha=0.2, deltas=(0.0, 0.25),
                              rng=pair, workers=1, engine="numpy", min_pair_items=10)  # fmt: skip
    assert g.pairwise.alternative == "greater" and g.pairwise.fdr_alpha == 0.2
    # the small-gap control's delta (0.02 by default) joins a grid that lacks it
    assert list(g.pairwise.delta_curve.delta) == [0.0, 0.02, 0.25]
    for null in pw.nulls:
        assert g.pairwise.nulls[null].p_value == pw.nulls[null].p_value
        assert g.pairwise.nulls[null].mean == pytest.approx(pw.nulls[null].mean)
    assert g.pairwise.fdr_significant_share == pw.fdr_significant_share
    assert g.pairwise.permutations == 19 and g.pairwise.joint_permutations == 29

    cal = calibration_by_model(df, n_boot=25, rng=int(boot.generate_state(1)[0]), workers=1)
    for m in models:
        got, want = g.calibration.per_model[m], cal.per_model[m]
        assert got.auroc_diff_p == want.auroc_diff_p
        assert got.auroc_diff_ci == pytest.approx(want.auroc_diff_ci, nan_ok=True)

    al = factor_alignment(conf, corr, bounds=(0.2, 0.7), min_items=10)
    assert np.array_equal(g.alignment.contentious_mask, al.contentious_mask)
    assert g.alignment.contentious.n_items == al.contentious.n_items
    assert tuple(g.alignment.bounds) == (0.2, 0.7)
    assert g.alignment.contentious.r == pytest.approx(al.contentious.r, nan_ok=True)
    s = res.summary["results"]["all"]["unspecified"]
    assert s["pairwise"]["nulls"]["private_signal"]["n_draws"] == 29


def _frame(conf, corr, models=("a", "b", "c")):
    rows = [(m, f"q{i}", conf[i, j], corr[i, j])
            for j, m in enumerate(models) for i in range(conf.shape[0])
            if not (np.isnan(conf[i, j]) and np.isnan(corr[i, j]))]  # fmt: skip
    return pd.DataFrame(rows, columns=["model", "item_id", "confidence", "correct"])


def test_smoothing_note_gives_the_min_eigenvalue():
    """a = b on items 0-9, b = c on 10-19, a = not c on 20-29 (each pair on its 10 shared
    items): the pairwise tetrachoric matrix [[1, r, -r], [r, 1, r], [-r, r, 1]] has eigenvalues
    1 + r, 1 + r and 1 - 2r (the zero-diagonal part's are 1, 1, -2), r the tetrachoric of a
    5/0/0/5 table, so it is not positive definite and is smoothed."""
    from metacog_metrics.tetrachoric import tetrachoric

    v = np.tile([1.0, 0.0], 5)
    conf = np.full((30, 3), np.nan)
    conf[0:10, 0] = conf[0:10, 1] = v
    conf[10:20, 1] = conf[10:20, 2] = v
    conf[20:30, 0], conf[20:30, 2] = v, 1 - v
    corr = np.where(np.isnan(conf), np.nan, _binary(30, 3, seed=9))
    res = analyze_records(_frame(conf, corr), **FAST)
    d = res.summary["results"]["all"]["unspecified"]
    r = tetrachoric(v, v).rho
    low = 1 - 2 * r
    assert low < 0
    assert (f"confidence: tetrachoric matrix not positive definite (min eigenvalue {low:.3g}); "
            "smoothed as psych::cor.smooth") in d["warnings"]  # fmt: skip
    assert d["confidence"]["tetrachoric"]["smoothed"] is True
    assert d["confidence"]["tetrachoric"]["min_eigenvalue"] == pytest.approx(low)
    assert d["confidence"]["tetrachoric"]["smoothing_note"] is None


def test_items_nobody_answered_are_not_counted():
    """q12 has rows for every model but no usable answer (confidence or grade missing): it
    counts in the group's items, not in the union of answered ones, and no pair uses it."""
    conf = np.vstack([_binary(12, 3, seed=10), [[np.nan, 1.0, np.nan]]])
    corr = np.vstack([_binary(12, 3, seed=11), [[1.0, np.nan, np.nan]]])
    corr[12, 2] = 0.0
    res = analyze_records(_frame(conf, corr), **FAST)
    (g,) = res.groups.values()
    assert g.all_items.item_ids == tuple(f"q{i}" for i in range(12))
    assert g.all_items.confidence.shape == (12, 3)
    d = res.summary["results"]["all"]["unspecified"]
    assert (d["n_items"], d["n_items_union"], d["n_items_total"]) == (12, 12, 13)
    assert d["confidence"]["basis"]["n_items"] == 12
    assert d["pairwise"]["basis"]["n_items"] == 12


def test_polychoric_needs_ten_shared_items_a_pair():
    """Numeric confidence: m3 has 9 of 14 items, so it shares 9 with each other model and is
    left out of the polychoric matrix (10 needed), as it is of the correctness tetrachoric."""
    df = _records(n_items=14, n_models=4, numeric=True, kind="verbal_numeric")
    drop = (df["model"] == "m3") & df["item_id"].isin(["q0", "q1", "q2", "q3", "q4"])
    res = analyze_records(df[~drop].reset_index(drop=True), **FAST)
    d = res.summary["results"]["all"]["unspecified"]
    assert d["confidence"]["polychoric"]["models"] == ["m0", "m1", "m2"]
    assert list(d["confidence"]["polychoric"]["dropped"]) == ["m3"]
    assert d["confidence"]["polychoric"]["dropped"]["m3"].startswith("fewer than 10 shared items")
    assert any(w.startswith("confidence: model 'm3' excluded from the polychoric matrix (fewer "
                            "than 10 shared items") for w in d["warnings"])  # fmt: skip


def test_pairwise_alignment_and_pair_type_summaries_copy_every_figure():
    """The pairwise, alignment and pair-type entries of the summary and the pair_types table
    hold the result objects' own figures, under their own names."""
    traits = {"m0": {"reasoning": True}, "m1": {"reasoning": True},
              "m2": {"reasoning": False}, "m3": {"reasoning": False}}  # fmt: skip
    res = analyze_records(_records(n_items=14, n_models=4, seed=12), models=traits,
                          **{**FAST, "permutations": 9, "joint_permutations": 9})  # fmt: skip
    (g,) = res.groups.values()
    pw, d = g.pairwise, res.summary["results"]["all"]["unspecified"]["pairwise"]
    assert (d["n_pairs"], d["n_pairs_valid"], d["continuous"]) == (6, pw.n_pairs_valid, False)
    _same(d["mean_tau"], pw.mean_tau)
    assert d["alternative"] == "two-sided" and d["fdr_alpha"] == 0.05
    assert set(d["nulls"]) == {"base_rate", "calibration_preserving", "private_signal"}
    for null, res_null in pw.nulls.items():
        n = d["nulls"][null]
        for key in ("mean", "sd", "ci", "p_value", "p_greater", "p_less"):
            _same(n[key], getattr(res_null, key))
        assert n["n_draws"] == res_null.n_draws == 9
        _same(n["fdr_significant_share"], pw.fdr_share(null))
        by = n["fdr_significant_share_by_direction"]
        want = pw.fdr_share_by_direction(null)
        assert set(by) == set(want) and all(_same(by[k], want[k]) is None for k in want)
    _same(d["fdr_significant_share"], pw.fdr_significant_share)
    c = pw.delta_curve
    dc = d["delta_curve"]
    _same(dc["delta"], c.delta)
    assert list(dc["n_pairs"]) == list(c.n_pairs) and dc["min_pairs"] == c.min_pairs
    _same(dc["mean_tau"], c.mean_tau)
    for key in ("null_mean", "null_low", "null_high", "p_value"):
        assert set(dc[key]) == set(getattr(c, key))
        for null, v in getattr(c, key).items():
            _same(dc[key][null], v)
    assert set(d["pair_types"]) == set(pw.pair_types) == {"R-R", "R-NR", "NR-NR"}
    table = res.tables["all__unspecified__pair_types"]
    assert list(table.columns) == [
        "pair_type", "n_pairs", "mean_tau",
        "base_rate_null_mean", "calibration_preserving_null_mean",
        "base_rate_p_value", "calibration_preserving_p_value",
        "base_rate_fdr_significant_share", "calibration_preserving_fdr_significant_share",
    ]  # fmt: skip
    assert table["pair_type"].tolist() == list(pw.pair_types)
    assert sorted(table["n_pairs"].tolist()) == [1, 1, 4]  # R-R: 1, NR-NR: 1, R-NR: 2 x 2
    for row in table.itertuples(index=False):
        s, t = pw.pair_types[row.pair_type], d["pair_types"][row.pair_type]
        assert row.n_pairs == s.n_pairs == t["n_pairs"]
        _same([row.mean_tau, t["mean_tau"], t["median_tau"]], [s.mean_tau, s.mean_tau,
                                                               s.median_tau])  # fmt: skip
        for null in ("base_rate", "calibration_preserving"):
            _same(
                [getattr(row, f"{null}_null_mean"), t["null_mean"][null]], [s.null_mean[null]] * 2
            )
            _same([getattr(row, f"{null}_p_value"), t["p_value"][null]], [s.p_value[null]] * 2)
            _same(
                [getattr(row, f"{null}_fdr_significant_share"), t["fdr_significant_share"][null]],
                [s.fdr_significant_share[null]] * 2,
            )
    a, al = g.alignment, res.summary["results"]["all"]["unspecified"]["factor_alignment"]
    assert al["method"] == a.method and tuple(al["bounds"]) == tuple(a.bounds)
    for part in ("all", "contentious"):
        got, want = al[part], getattr(a, part)
        for key in ("r", "r2", "p_value", "ci"):
            _same(got[key], getattr(want, key))
        for key in ("n_items", "n_models_confidence", "n_models_correctness", "reason"):
            assert got[key] == getattr(want, key)
    assert al["all"]["n_items"] == 14 and al["all"]["n_models_confidence"] == 4


def test_pairwise_basis_counts_only_pairs_with_a_tau():
    """m3 shares 9 items with each other model: its three pairs have no tau-b and are left out
    of the basis (3 of 6 pairs, each on 14 items)."""
    df = _records(n_items=14, n_models=4)
    drop = (df["model"] == "m3") & df["item_id"].isin(["q0", "q1", "q2", "q3", "q4"])
    res = analyze_records(df[~drop].reset_index(drop=True), **FAST)
    d = res.summary["results"]["all"]["unspecified"]["pairwise"]
    assert d["n_pairs"] == 6 and d["basis"]["n_pairs"] == 3 and d["n_pairs_valid"] == 3
    assert d["basis"]["n_items_per_pair"] == {"min": 14, "median": 14.0, "max": 14}
    assert d["basis"]["n_items"] == 14
    assert res.tables["all__unspecified__pairs"]["n_items"].tolist() == [14, 14, 9, 14, 9, 9]


def test_records_errors_name_their_source_and_notes_keep_their_order():
    from metacog_metrics.records import RecordError

    bad = _records(n_items=12, n_models=3)
    bad.loc[0, "correct"] = 2.0
    with pytest.raises(RecordError) as err:
        analyze_records(bad, **FAST)
    assert str(err.value).startswith("<records>: correct must be 0 or 1")
    bad.attrs["inputs"] = ["one.csv"]
    with pytest.raises(RecordError) as err:
        analyze_records(bad, **FAST)
    assert str(err.value).startswith("one.csv: correct must be 0 or 1")
    bad.attrs["inputs"] = ["one.csv", "two.csv"]
    with pytest.raises(RecordError) as err:
        analyze_records(bad, **FAST)
    assert str(err.value).startswith("<records>: correct must be 0 or 1")
    # the records' own notes, then the traits', then the groups' (each named)
    df = _records(n_items=12, n_models=3)
    df.attrs.update(inputs=["a.csv", "b.csv"], warnings=["read note"])
    res = analyze_records(df, **FAST, models={"m0": {"reasoning": True}})
    w = res.summary["warnings"]
    assert w[:2] == ["read note", "models: no reasoning flag for 2 model(s): m1, m2"]
    assert w[2:] == [f"all/unspecified: {n}" for n in
                     res.summary["results"]["all"]["unspecified"]["warnings"]]  # fmt: skip
    assert res.summary["inputs"] == ["a.csv", "b.csv"] and res.summary["n_records"] == 36


def test_generated_by_names_the_installed_version(monkeypatch):
    from importlib import metadata

    res = analyze_records(_records(n_items=12, n_models=3), **FAST)
    assert res.summary["generated_by"] == {
        "package": "metacog-eval",
        "version": metadata.version("metacog-eval"),
    }
    assert res.summary["schema_version"] == "1.0"

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert an_summary._package_version() is None  # running from a checkout


def test_a_section_without_a_factor_model_says_why():
    """Three models, one always 'yes': the confidence section has two models, an eigen-
    decomposition and no factor model, and the note says so after the exclusion."""
    df = _records(n_items=12, n_models=3, seed=13)
    df.loc[df["model"] == "m1", "confidence"] = 1.0
    res = analyze_records(df, **FAST)
    d = res.summary["results"]["all"]["unspecified"]
    w = d["warnings"]
    i = w.index("confidence: model 'm1' excluded from the tetrachoric matrix (no variance (all 1))")
    assert w[i + 1] == "confidence: fewer than 3 models with variance: no factor model"
    assert d["confidence"]["reason"] == "fewer than 3 models with variance: no factor model"
    assert d["confidence"]["factor"]["method"] is None
    assert d["confidence"]["eigen"]["loadings"][1] is None
    assert d["confidence"]["eigen"]["loadings"][0] is not None


def test_ten_items_are_enough_for_a_pair_and_the_private_signal_test():
    df = _records(n_items=10, n_models=3, seed=14)
    res = analyze_records(df, **{**FAST, "joint_permutations": 9})
    d = res.summary["results"]["all"]["unspecified"]
    assert d["status"] == "ok"
    assert not any(w.startswith(("pairwise:", "private-signal test:")) for w in d["warnings"])
    assert d["pairwise"]["nulls"]["private_signal"]["basis"]["n_items"] == 10
    assert d["pairwise"]["nulls"]["private_signal"]["n_groups"] == 1
    assert d["pairwise"]["n_pairs_valid"] == 3
    assert res.tables["all__unspecified__pairs"]["n_items"].tolist() == [10, 10, 10]


def test_pooled_private_signal_exchanges_items_within_their_benchmark():
    df = pd.concat([
        _records(n_items=6, n_models=3, benchmark="x"),
        _records(n_items=6, n_models=3, benchmark="y", seed=1),
    ])  # fmt: skip
    res = analyze_records(df, **{**FAST, "joint_permutations": 9}, pool=True)
    p = res.summary["results"]["pooled"]["unspecified"]
    assert p["status"] == "ok" and p["n_items"] == 12
    assert p["pairwise"]["nulls"]["private_signal"]["n_groups"] == 2
    assert res.groups[("pooled", "unspecified", "verbal_binary")].private_signal.n_groups == 2


def test_ordinal_alignment_uses_each_models_levels():
    """Numeric confidence with numeric_levels=3: the alignment is the factor alignment of each
    model's three levels (the polychoric module's cut), with the ordinal factor model."""
    from metacog_metrics.factors import factor_alignment
    from metacog_metrics.polychoric import confidence_levels

    df = _records(n_items=12, n_models=3, numeric=True, kind="logprob", seed=15)
    res = analyze_records(df, **FAST, numeric_levels=3)
    (g,) = res.groups.values()
    wide = df.pivot(index="item_id", columns="model").loc[[f"q{i}" for i in range(12)]]
    conf, corr = wide["confidence"].to_numpy(), wide["correct"].to_numpy()
    levels = np.column_stack([confidence_levels(conf[:, j], n_levels=3) for j in range(3)])
    assert sorted(np.unique(levels).tolist()) == [0.0, 1.0, 2.0]
    al = factor_alignment(levels, corr, ordinal=True, min_items=10)
    assert g.alignment.method == al.method
    _same(g.alignment.all.confidence_scores, al.all.confidence_scores)
    _same(g.alignment.all.r, al.all.r)
    assert np.array_equal(g.alignment.contentious_mask, al.contentious_mask)
    fs = res.tables["all__unspecified__factor_scores"]
    assert fs["item_id"].tolist() == [f"q{i}" for i in range(12)]
    _same(fs["confidence_score"], al.all.confidence_scores)
    _same(fs["correctness_score"], al.all.correctness_scores)
    assert fs["contentious"].tolist() == al.contentious_mask.tolist()
    assert fs["mean_confidence"].tolist() == pytest.approx(conf.mean(axis=1).tolist())
    assert fs["correct_count"].tolist() == corr.sum(axis=1).astype(int).tolist()


def test_one_blas_thread_inside_the_analysis(monkeypatch):
    import threadpoolctl  # scikit-learn depends on it: always installed

    def blas():
        return [
            i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"
        ]

    with an_orch.one_blas_thread():
        assert blas() and set(blas()) == {1}
    seen = []
    real = an_orch.analyze_validated

    def record(*args, **kw):
        seen.append(blas())
        return real(*args, **kw)

    monkeypatch.setattr(an_orch, "analyze_validated", record)
    analyze_records(_records(n_items=12, n_models=3), **FAST)
    assert seen and set(seen[0]) == {1}


def test_summary_layout_and_the_concatenated_tables():
    df = pd.concat([
        _records(n_items=12, n_models=3, benchmark="x"),
        _records(n_items=12, n_models=2, benchmark="y"),
    ])  # fmt: skip
    res = analyze_records(df, **FAST)
    assert list(res.summary) == [
        "schema_version", "generated_by", "inputs", "n_records", "models", "parameters",
        "engine", "warnings", "results", "inline_solving", "text_probes", "findings",
    ]  # fmt: skip
    # no texts in these records: the text sections say so
    assert res.summary["inline_solving"]["status"] == "absent"
    assert res.summary["text_probes"]["status"] == "absent"
    for name in ("per_model", "coverage"):
        t = res.tables[name]
        assert t.index.tolist() == list(range(5))
        assert t["benchmark"].tolist() == ["x", "x", "x", "y", "y"]
        assert t["model"].tolist() == ["m0", "m1", "m2", "m0", "m1"]
    assert list(res.groups) == [("x", "unspecified", "verbal_binary"),
                                ("y", "unspecified", "verbal_binary")]  # fmt: skip


def test_section_names_its_eigen_and_factor_results():
    """The report labels loadings with the eigen and factor results' own names."""
    x = _binary(16, 4, seed=16)
    x[:, 1] = 0.0  # b never: left out
    sec = an_group._section(x, ["a", "b", "c", "d"])
    assert tuple(sec.eigen.names) == ("a", "c", "d")
    assert tuple(sec.factor.names) == ("a", "c", "d")


def test_pairs_are_named_by_their_models():
    res = analyze_records(_records(n_items=12, n_models=3), **FAST)
    pairs = res.tables["all__unspecified__pairs"]
    assert pairs[["model_a", "model_b"]].values.tolist() == [["m0", "m1"], ["m0", "m2"],
                                                             ["m1", "m2"]]  # fmt: skip
    d = res.summary["results"]["all"]["unspecified"]["pairwise"]
    assert d["basis"]["models"] == ["m0", "m1", "m2"]


def test_one_joint_draw_is_enough_to_run_the_private_signal_test():
    """joint_permutations=1: the private-signal test runs with one draw on 12 complete-case
    items, and on 9 the note says it was not run."""
    res = analyze_records(_records(n_items=12, n_models=3), **{**FAST, "joint_permutations": 1})
    d = res.summary["results"]["all"]["unspecified"]
    assert d["pairwise"]["nulls"]["private_signal"]["n_draws"] == 1
    df = _records(n_items=12, n_models=3)
    df = df[~((df["model"] == "m0") & df["item_id"].isin(["q0", "q1", "q2"]))]
    res = analyze_records(df.reset_index(drop=True), **{**FAST, "joint_permutations": 1})
    d = res.summary["results"]["all"]["unspecified"]
    assert "private-signal test: 9 complete-case item(s); need at least 10; not run" in (
        d["warnings"])  # fmt: skip
    assert "private_signal" not in d["pairwise"]["nulls"]


def test_a_section_of_one_varying_model_has_no_eigen_and_its_tables_say_so():
    """Two of three models always say yes: the confidence section keeps one model, has no
    eigen-decomposition or factor model, and its loadings are empty (NaN) in the table."""
    df = _records(n_items=12, n_models=3, seed=17)
    df.loc[df["model"].isin(["m0", "m2"]), "confidence"] = 1.0
    res = analyze_records(df, **FAST)
    d = res.summary["results"]["all"]["unspecified"]
    assert d["confidence"]["reason"] == "only 1 model(s) with variance"
    assert d["confidence"]["eigen"]["first_share"] is None
    assert "confidence: only 1 model(s) with variance" in d["warnings"]
    load = res.tables["all__unspecified__loadings"]
    assert (
        load["confidence_pc1_loading"].isna().all() and load["confidence_fa_loading"].isna().all()
    )
    assert load["correctness_pc1_loading"].notna().all()
    eig = res.tables["all__unspecified__eigenvalues"]
    assert eig["matrix"].tolist() == ["correctness"] * 3


def test_a_table_of_one_record_is_one_skipped_group():
    df = pd.DataFrame({"model": ["m0"], "item_id": ["q0"], "confidence": [1.0], "correct": [1.0]})
    res = analyze_records(df, **FAST)
    d = res.summary["results"]["all"]["unspecified"]
    assert d["status"] == "skipped"
    assert d["reason"] == "1 model(s) with usable items; need at least 3"
    assert res.summary["n_records"] == 1 and res.summary["models"] == ["m0"]
    assert d["coverage"]["m0"] == {"n_items": 1, "share": 1.0, "included": True, "reason": None}


def test_pooling_keeps_the_notes_before_it():
    df = pd.concat([
        _records(n_items=6, n_models=3, benchmark="x"),
        _records(n_items=6, n_models=3, benchmark="y", seed=1),
    ])  # fmt: skip
    df.attrs["warnings"] = ["read note"]
    res = analyze_records(df, **FAST, pool=True, models={"m0": {"reasoning": True}})
    w = res.summary["warnings"]
    assert w[:2] == ["read note", "models: no reasoning flag for 2 model(s): m1, m2"]
    groups = [f"{b}/{label}: {n}" for b, r in res.summary["results"].items()
              for label, d in r.items() for n in d["warnings"]]  # fmt: skip
    assert w[2:] == groups and len(groups) >= 2


def test_small_rules_at_their_edges(monkeypatch):
    """File-name safety keeps capitals and strips only dashes; one draw is a draw; fdr_alpha
    becomes a Python float; the result keeps the validated records."""
    from types import SimpleNamespace as NS

    assert an_summary.safe_name("AbC Def") == "AbC-Def" and an_summary.safe_name("X a X") == "X-a-X"
    one = NS(pairwise=NS(per_pair={0: NS(engine="numpy", permutations=1)}, joint_engine=None))
    assert an_summary._engines_used({1: one}, "auto")["per_pair"] == "numpy"
    o = AnalysisOptions(fdr_alpha=np.float32(0.25))
    assert type(o.fdr_alpha) is float and o.fdr_alpha == 0.25
    df = _records(n_items=12, n_models=3)
    res = analyze_records(df, **FAST)
    assert res.records["model"].tolist() == df["model"].tolist() and len(res.records) == 36


def test_analyze_files_silences_record_warnings_only(tmp_path, monkeypatch):
    """Record warnings are kept in the summary, not shown; any other warning still shows."""
    real = pipeline.read_records

    def read(*args, **kw):
        warnings.warn("something else", UserWarning, stacklevel=1)
        return real(*args, **kw)

    monkeypatch.setattr(pipeline, "read_records", read)
    src = tmp_path / "runs.csv"
    _partial_run().to_csv(src, index=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        analyze_files(src, out_dir=tmp_path / "out", report=False, **FAST)
    assert [str(w.message) for w in seen if w.category is UserWarning] == ["something else"]
    assert not [w for w in seen if issubclass(w.category, RecordWarning)]
