"""Inline-solving detection: features, flag, rates and the pairwise analysis without them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from metacog_metrics.inline_solving import (
    FEATURES,
    detect_inline,
    inline_features,
    inline_pairwise,
    inline_rates,
    strip_verdict,
)
from metacog_metrics.simulate import Population
from metacog_tasks.sim import preset_params

DATA = Path(__file__).parent / "data"


#: Hand-written, hand-labelled rationales (tests/data/README.md says how each set was made).
SETS = ("dev", "heldout", "round3", "round4", "round5")
BENCHMARKS = {"squad", "mmlu_pro", "legalbench", "mathbench", "omni_math", "scicode"}


def _labelled(name: str) -> pd.DataFrame:
    lines = (DATA / f"inline_labelled_{name}.jsonl").read_text().splitlines()
    return pd.DataFrame([json.loads(line) for line in lines if line.strip()])


def _counts(df: pd.DataFrame) -> tuple[int, int, int]:
    flag = detect_inline(df["text"]).flag
    truth = df["inline"].to_numpy(dtype=bool)
    return int((flag & truth).sum()), int((flag & ~truth).sum()), int((~flag & truth).sum())


@pytest.mark.parametrize("name", SETS)
def test_each_labelled_set_precision_and_recall_of_symbolic_solving(name):
    """Every set has both classes on all six benchmarks. Precision, and the recall of solving
    shown in symbols (arithmetic, equations, code), reach 0.9 in each set; solving written out
    in prose ("so it is a governing-law clause") is beyond surface features and is only
    counted in the pooled recall below."""
    df = _labelled(name)
    assert set(df["inline"]) == {0, 1}
    assert set(df["benchmark"]) == BENCHMARKS
    assert set(df.loc[df["inline"] == 1, "benchmark"]) == BENCHMARKS
    assert set(df.loc[df["inline"] == 1, "form"]) <= {"symbolic", "prose"}
    assert df.loc[df["inline"] == 0, "form"].isna().all()
    tp, fp, fn = _counts(df)
    assert tp / (tp + fp) >= 0.9, (name, tp, fp, fn)
    symbolic = df[df["form"] == "symbolic"]
    recall = detect_inline(symbolic["text"]).flag.mean()
    assert recall >= 0.9, (name, recall)


def test_precision_and_recall_on_all_labelled_rationales():
    """All 295 labelled rationales, prose solving included: precision and recall >= 0.9."""
    df = pd.concat([_labelled(n) for n in SETS], ignore_index=True)
    assert len(df) == 295 and df["text"].is_unique
    tp, fp, fn = _counts(df)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    assert precision >= 0.9 and recall >= 0.9, (tp, fp, fn)


def test_features_counted_by_hand():
    text = (
        "Let me work it out. Step 1: 3 + 4 = 7. Step 2: 7 * 2 = 14. "
        "Therefore the result is 14.\nAnswer: Yes"
    )
    f = inline_features(text)
    # operators "3 + 4", "7 * 2"; equations "= 7", "= 14"; computations (evaluated arithmetic,
    # counted once); two numbered steps; "Therefore"; "the result is 14"; no chain (one "=" per
    # sentence), no code; "Therefore" leads into the stated answer, so no separate conclusion.
    assert f == {"operators": 2, "equations": 2, "computations": 1, "equals_chain": 0,
                 "steps": 2, "convergence": 1, "code": 0, "final_answer": 1,
                 "reasoned_answer": 0}  # fmt: skip
    det = detect_inline([text])
    # points: operators 2 + equations 2 + computation 3 + steps 2 + convergence 1 + answer 2
    assert det.score.tolist() == [12] and det.flag.tolist() == [True]


@pytest.mark.parametrize(
    ("text", "feature", "count"),
    [
        ("So a = b + 1 = 3 here.", "equals_chain", 1),
        ("It costs 2000 * 0.015 * 3 in total", "operators", 2),  # a chain: both operators
        ("$9000 + $8000 is the total", "operators", 1),  # currency signs
        ("Twelve times eight is ninety-six", "operators", 1),  # arithmetic in words
        ("12 squared, then adding 25", "operators", 2),
        ("A = P(1 + r/n)^(nt)", "operators", 1),  # only "1 + r" has a number
        ("a + b + c = 1 is the constraint", "computations", 0),  # no number before the =
        ("3x + 5 = 20", "computations", 1),
        ("C(6,3) = 20 triangles", "computations", 1),  # a function of numbers, evaluated
        ("x ≡ 2 (mod 3) and x ≡ 3 (mod 5)", "equations", 2),  # congruences
        ("def f(x):\n    return x + 1", "code", 2),  # two kinds: a def, a return
        ("I need to return a matrix of Pauli terms", "code", 0),  # "return" in prose
        ("so it is arbitrary. Therefore the answer is No.", "reasoned_answer", 1),
        ("A classic case, so the answer is Canberra.", "reasoned_answer", 0),  # one statement
        ("so diversity is complete, and so the court has jurisdiction", "reasoned_answer", 1),
        ("Therefore I should answer it, so yes.", "convergence", 0),  # judging the model
        ("The numbers are friendly, so it's doable.", "convergence", 0),
        ("I get it right", "convergence", 0),
        ("Then I get 17.", "convergence", 1),
    ],
)
def test_single_features_counted_by_hand(text, feature, count):
    assert inline_features(text)[feature] == count


def test_the_verdict_line_is_no_evidence():
    assert strip_verdict("Sure.\nAnswer: Yes") == "Sure."
    assert strip_verdict("Fine.\nConfidence: 80") == "Fine."
    # The verdict line's "=" or digits are not evidence.
    assert inline_features("I know this.\nConfidence = 90") == dict.fromkeys(FEATURES, 0)


@pytest.mark.parametrize(
    "text",
    [
        "The war lasted from 1914-1918, as I recall. Yes.",  # a date range is no subtraction
        "1. I know the topic.\n2. The options differ.\nTherefore yes.",  # numbered reasons
        "I recall the answer is 1066, so I can answer.",  # recall, no work
        "The formula E = mc^2 is something I know well. Yes.",  # a formula named, not used
        "",
    ],
)
def test_no_work_no_flag(text):
    assert not detect_inline([text]).flag[0]


def test_missing_texts_are_not_flagged():
    det = detect_inline(
        pd.Series([None, np.nan, "  ", "2 * 3 = 6, so I get 6."], index=[5, 6, 7, 8])
    )
    assert det.flag.tolist() == [False, False, False, True]
    assert det.n_texts == 1 and list(det.table.index) == [5, 6, 7, 8]


def test_rates_per_model_and_benchmark():
    records = pd.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b", "a"],
            "benchmark": ["x", "x", "x", "x", "x", "y"],
            "probe_text": ["t", "t", None, "t", "t", "t"],
            "reasoning": [True, True, True, False, False, True],
        }
    )
    flags = [True, False, True, False, False, True]
    rates = inline_rates(records, flags).set_index(["benchmark", "model"])
    # a on x: 2 texts (the third has none), 1 flagged; b on x: 0 of 2; a on y: 1 of 1.
    assert rates.loc[("x", "a"), "n_texts"] == 2 and rates.loc[("x", "a"), "inline_rate"] == 0.5
    assert rates.loc[("x", "b"), "inline_rate"] == 0.0
    assert rates.loc[("y", "a"), "inline_rate"] == 1.0
    with pytest.raises(ValueError, match="5 flags for 6 records"):
        inline_rates(records, flags[:5])


def _hand_case(seed: int = 3, n: int = 300):
    """Model 0 (R) answers its confidence by solving on flagged items (conf = perf there);
    models 1 and 2 (NR) and model 0 elsewhere have confidence unrelated to correctness."""
    rng = np.random.default_rng(seed)
    perf = (rng.random((n, 3)) < 0.6).astype(float)
    conf = (rng.random((n, 3)) < 0.5).astype(float)
    inline = np.zeros((n, 3), dtype=bool)
    inline[:, 0] = rng.random(n) < 0.5
    conf[inline[:, 0], 0] = perf[inline[:, 0], 0]
    return conf, perf, inline


def test_pairwise_without_inline_items_matches_kendalltau():
    conf, perf, inline = _hand_case()
    res = inline_pairwise(conf, perf, inline, models=["r", "n1", "n2"],
                          reasoning=[True, False, False], permutations=200, n_boot=0)  # fmt: skip
    for row in res.pairs.itertuples():
        names = ["r", "n1", "n2"]
        a, b = names.index(row.model_a), names.index(row.model_b)
        keep = ~inline[:, a] & ~inline[:, b]
        d_c, d_p = conf[:, a] - conf[:, b], perf[:, a] - perf[:, b]
        assert row.tau_with == pytest.approx(kendalltau(d_c, d_p).statistic, abs=1e-12)
        assert row.tau_without == pytest.approx(
            kendalltau(d_c[keep], d_p[keep]).statistic, abs=1e-12
        )
        assert row.n_items_without == keep.sum()
    types = res.types.set_index("pair_type")
    # The NR-NR pair has no inline items: identical with and without.
    nr = types.loc["NR-NR"]
    assert nr["mean_tau_with"] == nr["mean_tau_without"] and nr["mean_items_without"] == 300
    # The R-NR signal comes from the inline items: it is large with them and gone without.
    rnr = types.loc["R-NR"]
    assert rnr["mean_tau_with"] > 0.2 and abs(rnr["mean_tau_without"]) < 0.1
    assert res.rnr_share_lost > 0.7


def test_pairwise_with_continuous_confidence_matches_kendalltau():
    """Sampled or numeric confidence: many dconf levels per pair, ties included."""
    rng = np.random.default_rng(8)
    n = 120
    perf = (rng.random((n, 4)) < 0.6).astype(float)
    conf = np.round(rng.random((n, 4)) * 8) / 8  # 9 levels (exact in binary), many ties
    inline = rng.random((n, 4)) < 0.2
    flags = [True, True, False, False]
    res = inline_pairwise(conf, perf, inline, models=list("abcd"), reasoning=flags,
                          permutations=0, n_boot=0)  # fmt: skip
    for row in res.pairs.itertuples():
        a, b = "abcd".index(row.model_a), "abcd".index(row.model_b)
        keep = ~inline[:, a] & ~inline[:, b]
        d_c, d_p = conf[:, a] - conf[:, b], perf[:, a] - perf[:, b]
        assert row.tau_with == pytest.approx(kendalltau(d_c, d_p).statistic, abs=1e-12)
        assert row.tau_without == pytest.approx(
            kendalltau(d_c[keep], d_p[keep]).statistic, abs=1e-12
        )


def test_share_lost_is_zero_without_flags_and_bootstrap_covers_it():
    conf, perf, inline = _hand_case(seed=4)
    none = np.zeros_like(inline)
    res = inline_pairwise(conf, perf, none, models=["r", "n1", "n2"],
                          reasoning=[True, False, False], permutations=0, n_boot=0)  # fmt: skip
    assert res.rnr_share_lost == 0.0
    full = inline_pairwise(conf, perf, inline, models=["r", "n1", "n2"],
                           reasoning=[True, False, False], permutations=0, n_boot=100)  # fmt: skip
    lo, hi = full.rnr_share_lost_ci
    assert lo <= full.rnr_share_lost <= hi


def test_simulated_math_population_loses_its_rnr_signal():
    """The paper's confound, in the generative model: reasoning models solve math items inline,
    which makes R-NR (and R-R) pairs look calibrated; on the other items it vanishes."""
    pop = Population(preset_params("paper"), 12, seed=2)
    st = pop.latent("mathbench", [f"q{i}" for i in range(400)])
    res = inline_pairwise(
        st.confidence.astype(float), st.correct.astype(float), st.inline, models=st.models,
        reasoning=list(st.reasoning), permutations=200, n_boot=50,
    )  # fmt: skip
    types = res.types.set_index("pair_type")
    assert types.loc["R-NR", "mean_tau_with"] > 0.15
    assert abs(types.loc["R-NR", "mean_tau_without"]) < 0.05
    assert (
        types.loc["R-NR", "fdr_share_with"] > 0.8 and types.loc["R-NR", "fdr_share_without"] < 0.2
    )
    assert res.rnr_share_lost_ci[0] > 0.7


def test_bad_shapes():
    conf, perf, inline = _hand_case()
    with pytest.raises(ValueError, match="one shape"):
        inline_pairwise(conf, perf, inline[:10], models=["a", "b", "c"], reasoning=[1, 0, 0])
    with pytest.raises(ValueError, match="for 3 models"):
        inline_pairwise(conf, perf, inline, models=["a", "b"], reasoning=[1, 0, 0])


def test_detector_finds_the_simulated_population_s_inline_solving():
    """Against the generative model's own inline flags (texts not written for the detector)."""
    from metacog_tasks.sim import SimResponder
    from metacog_tasks.sim.responder import simulate_text_records

    recs = simulate_text_records(10, benchmarks=["mathbench", "mmlu_pro"], replicate=3, seed=4)
    sims = {m: SimResponder(m, seed=4, benchmarks=["mathbench", "mmlu_pro"])
            for m in pd.unique(recs["model"])}  # fmt: skip
    truth = np.array([sims[r.model].cell(r.benchmark, r.item_id)["inline"]
                      for r in recs.itertuples()])  # fmt: skip
    flag = detect_inline(recs["probe_text"]).flag
    assert truth.sum() > 20
    assert (flag & truth).sum() / flag.sum() >= 0.95
    assert (flag & truth).sum() / truth.sum() >= 0.95


def test_tau_drop_and_reasons():
    conf, perf, inline = _hand_case(seed=5)
    res = inline_pairwise(conf, perf, inline, models=["r", "n1", "n2"],
                          reasoning=[True, False, False], permutations=0, n_boot=50)  # fmt: skip
    t = res.types.set_index("pair_type")
    assert res.rnr_tau_drop == pytest.approx(
        t.loc["R-NR", "mean_tau_with"] - t.loc["R-NR", "mean_tau_without"]
    )
    assert res.rnr_tau_drop_ci[0] <= res.rnr_tau_drop <= res.rnr_tau_drop_ci[1]
    assert res.reason is None
    everything = np.ones_like(inline)
    gone = inline_pairwise(conf, perf, everything, models=["r", "n1", "n2"],
                           reasoning=[True, False, False], permutations=0, n_boot=0)  # fmt: skip
    assert np.isnan(gone.rnr_share_lost) and "keeps 10 items" in gone.reason
    none = inline_pairwise(conf, perf, inline, models=["a", "b", "c"],
                           reasoning=[False, False, False], permutations=0, n_boot=0)  # fmt: skip
    assert none.reason == "no R-NR pairs"
    # No signal at all (confidence unrelated to correctness everywhere): the R-NR mean on all
    # items is noise around 0, so no share is given, only the drop.
    rng = np.random.default_rng(11)
    noise = (rng.random(conf.shape) < 0.5).astype(float)
    flat = inline_pairwise(noise, perf, inline, models=["r", "n1", "n2"],
                           reasoning=[True, False, False], permutations=0, n_boot=100)  # fmt: skip
    lo, hi = flat.rnr_tau_with_ci
    assert lo <= 0 <= hi and np.isnan(flat.rnr_share_lost) and np.isfinite(flat.rnr_tau_drop)
    assert "above 0" in flat.reason


def test_analysis_without_reasoning_flags_says_what_is_missing():
    """Texts but no reasoning flags: rates and per-record flags are there, the pair types are
    not, and the summary and the report say why instead of failing."""
    from metacog_metrics.analyze import analyze_records
    from metacog_metrics.report import render_report
    from metacog_tasks.sim.responder import simulate_text_records

    recs = simulate_text_records(6, benchmarks=["mathbench"], replicate=3, seed=1)
    res = analyze_records(recs.drop(columns=["reasoning"]), permutations=50,
                          joint_permutations=20, n_boot=20)  # fmt: skip
    sec = res.summary["inline_solving"]
    assert sec["status"] == "ok" and sec["n_inline"] > 0
    entry = sec["groups"]["mathbench"]["prospective"]
    assert entry["status"] == "absent" and "models file with reasoning" in entry["reason"]
    assert "inline_records" in res.tables and "inline_rates" in res.tables
    assert not any(name.endswith("inline_pair_types") for name in res.tables)
    assert "Pair types not shown: no reasoning flags for 6 model(s)" in render_report(res)


# --------------------------------------------------------------------------------------------
# Rule by rule (hand computation, SciPy): the score, the rates, the pair table, the reasons
# --------------------------------------------------------------------------------------------


def _counts_of(**nonzero) -> dict[str, int]:
    return {**dict.fromkeys(FEATURES, 0), **nonzero}


@pytest.mark.parametrize(
    ("counts", "points", "flag"),
    [
        (_counts_of(code=1), 2, False),  # one kind of code: 2 points
        (_counts_of(code=1, convergence=1), 3, True),  # ... and code is work
        (_counts_of(code=2), 3, True),  # two kinds: a program
        (_counts_of(code=3), 3, True),
        (_counts_of(steps=1, convergence=2), 2, False),  # one numbered line counts nothing
        (_counts_of(steps=2, convergence=2), 4, False),  # points, but no work shown
        (_counts_of(steps=3, convergence=5, equations=1), 5, False),  # caps 2, 2; no work
        (_counts_of(operators=1, convergence=2), 3, True),  # one operator is work
        (_counts_of(operators=5), 2, False),  # operators alone reach 2
        (_counts_of(computations=1), 3, True),
        (_counts_of(equations=2, convergence=1), 3, True),  # two equations are work
        (_counts_of(equations=4), 3, True),  # capped at 3
        (_counts_of(reasoned_answer=1, final_answer=1), 3, True),
        (_counts_of(final_answer=1, convergence=1, equals_chain=1), 5, False),
    ],
)
def test_score_and_flag_by_hand(counts, points, flag):
    from metacog_metrics.inline_solving import _score

    assert _score(counts) == (points, flag)


def test_detection_of_odd_inputs():
    det = detect_inline(["2 * 3 = 6, so I get 6.", "7 * 8 = 56", None])
    assert det.n_texts == 2 and det.flag.tolist() == [True, True, False]
    # Only text is read: bytes are no rationale, even when they spell a computation.
    assert detect_inline([b"7 * 8 = 56"]).flag.tolist() == [False]
    empty = detect_inline([])
    assert list(empty.table.columns) == [*FEATURES, "inline_score", "inline_solved"]
    assert empty.table["inline_solved"].dtype == bool and empty.n_texts == 0


def test_rates_keep_the_order_of_appearance_and_the_reasoning_flag():
    records = pd.DataFrame(
        {
            "model": ["b", "a", "a", "b"],
            "benchmark": ["y", "y", "x", "y"],
            "probe_text": ["t", "t", "t", "   "],  # a blank rationale is no text
            "reasoning": [False, True, True, False],
        }
    )
    rates = inline_rates(records, [1, 1, 0, 1])
    assert list(zip(rates["benchmark"], rates["model"])) == [("y", "b"), ("y", "a"), ("x", "a")]
    assert rates["n_texts"].tolist() == [1, 1, 1] and rates["n_inline"].tolist() == [1, 1, 0]
    assert rates["reasoning"].tolist() == [False, True, True]
    bare = inline_rates(records.drop(columns=["reasoning"]), [1, 1, 0, 1])
    assert "reasoning" not in bare


def test_pair_table_columns_types_and_counts_by_hand():
    """Two reasoning models and one of unknown kind: R-R is typed, pairs with the unknown one
    are not; the table's medians and counts against the pairs' SciPy tau-b."""
    rng = np.random.default_rng(21)
    n = 40
    conf = (rng.random((n, 3)) < 0.5).astype(float)
    perf = (rng.random((n, 3)) < 0.6).astype(float)
    inline = rng.random((n, 3)) < 0.3
    res = inline_pairwise(conf, perf, inline, models=["r1", "r2", "u"],
                          reasoning=[True, True, None], permutations=0, n_boot=0,
                          min_items=5)  # fmt: skip
    assert list(res.pairs.columns) == [
        "model_a", "model_b", "pair_type", "tau_with", "tau_without", "n_items_with",
        "n_items_without", "p_with", "p_without", "q_with", "q_without",
    ]  # fmt: skip
    assert res.pairs[["model_a", "model_b"]].values.tolist() == [["r1", "r2"], ["r1", "u"],
                                                                 ["r2", "u"]]  # fmt: skip
    assert res.pairs["pair_type"].iloc[0] == "R-R"
    assert res.pairs["pair_type"].isna().tolist() == [False, True, True]
    assert res.pairs["n_items_with"].dtype == np.int64
    assert res.pairs["n_items_with"].tolist() == [n, n, n]
    keep = ~inline[:, 0] & ~inline[:, 1]
    assert res.pairs["n_items_without"].tolist()[0] == keep.sum()
    d_c, d_p = conf[:, 0] - conf[:, 1], perf[:, 0] - perf[:, 1]
    tau_w = kendalltau(d_c, d_p).statistic
    tau_o = kendalltau(d_c[keep], d_p[keep]).statistic
    assert list(res.types.columns) == [
        "pair_type", "n_pairs", "n_pairs_without", "mean_tau_with", "mean_tau_without",
        "median_tau_with", "median_tau_without", "mean_items_with", "mean_items_without",
        "fdr_share_with", "fdr_share_without",
    ]  # fmt: skip
    rr = res.types.set_index("pair_type").loc["R-R"]
    assert list(res.types["pair_type"]) == ["R-R"]
    assert (rr["n_pairs"], rr["n_pairs_without"]) == (1, 1)
    assert rr["median_tau_with"] == pytest.approx(tau_w)
    assert rr["median_tau_without"] == pytest.approx(tau_o)
    assert (rr["mean_items_with"], rr["mean_items_without"]) == (n, keep.sum())
    assert np.isnan(rr["fdr_share_with"]) and np.isnan(rr["fdr_share_without"])
    assert res.reason == "no R-NR pairs" and np.isnan(res.rnr_tau_with)
    for ci in (res.rnr_share_lost_ci, res.rnr_tau_drop_ci, res.rnr_tau_with_ci):
        assert isinstance(ci, tuple) and len(ci) == 2 and np.isnan(ci).all()
    assert (res.n_boot, res.min_items, res.fdr_alpha) == (0, 5, 0.05)


def test_min_items_and_two_item_pairs_by_hand():
    # Two models, d_conf = [1, 1, -1, -1], d_perf = [1, -1, 1, -1] plus a tied item: one
    # concordant and one discordant pair of items, tau-b 0 (SciPy). The top d_conf level has
    # no d_perf of +1 once the first item is inline.
    conf = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [0, 0]], dtype=float)
    perf = np.array([[1, 0], [0, 1], [1, 0], [0, 1], [0, 0]], dtype=float)
    inline = np.zeros((5, 2), dtype=bool)
    inline[0, 0] = True
    d_c, d_p = conf[:, 0] - conf[:, 1], perf[:, 0] - perf[:, 1]
    assert kendalltau(d_c, d_p).statistic == 0
    res = inline_pairwise(conf, perf, inline, models=["r", "n"], reasoning=[True, False],
                          permutations=0, n_boot=0, min_items=4)  # fmt: skip
    row = res.pairs.iloc[0]
    assert row["tau_with"] == 0 and row["n_items_without"] == 4  # exactly min_items: kept
    assert row["tau_without"] == pytest.approx(kendalltau(d_c[1:], d_p[1:]).statistic)
    # The R-NR mean on all items is exactly 0: no signal to lose.
    assert res.reason == "the R-NR mean tau-b on all items is not above 0: no signal to lose"
    assert res.rnr_tau_with == 0 and np.isnan(res.rnr_share_lost)
    assert res.rnr_tau_drop == pytest.approx(0 - row["tau_without"])
    # Two items are enough for a tau on all items (here both concordant: 1).
    two = inline_pairwise(conf[[0, 3]], perf[[0, 3]], np.zeros((2, 2), dtype=bool),
                          models=["r", "n"], reasoning=[True, False], permutations=0,
                          n_boot=0, min_items=2)  # fmt: skip
    assert (
        two.pairs["tau_with"].iloc[0]
        == 1
        == pytest.approx(kendalltau(d_c[[0, 3]], d_p[[0, 3]]).statistic)
    )


def test_top_confidence_level_without_a_better_performance():
    # d_conf = [1, -1, 0], d_perf = [0, 1, -1]: the highest d_conf level has no d_perf of +1,
    # so the last cell of the pair's table is empty.
    conf = np.array([[1, 0], [0, 1], [0, 0]], dtype=float)
    perf = np.array([[0, 0], [1, 0], [0, 1]], dtype=float)
    res = inline_pairwise(conf, perf, np.zeros((3, 2), dtype=bool), models=["r", "n"],
                          reasoning=[True, False], permutations=0, n_boot=0,
                          min_items=2)  # fmt: skip
    want = kendalltau([1, -1, 0], [0, 1, -1]).statistic
    assert res.pairs["tau_with"].iloc[0] == pytest.approx(want) and want < 0


def test_one_model_has_no_pairs_with_or_without_permutations():
    rng = np.random.default_rng(0)
    c = (rng.random((30, 1)) < 0.5).astype(float)
    p = (rng.random((30, 1)) < 0.5).astype(float)
    for perms in (0, 20):
        res = inline_pairwise(c, p, np.zeros((30, 1), dtype=bool), models=["a"],
                              reasoning=[True], permutations=perms, n_boot=10)  # fmt: skip
        assert res.pairs.empty and res.types.empty and res.reason == "no R-NR pairs"


def test_inputs_of_other_dtypes_give_the_same_result():
    conf, perf, inline = _hand_case(seed=6, n=60)
    kw = {"models": ["r", "n1", "n2"], "reasoning": [True, False, False], "permutations": 20,
          "n_boot": 10}  # fmt: skip
    want = inline_pairwise(conf, perf, inline, **kw)
    got = inline_pairwise(conf.astype(bool), perf.astype(bool), inline.astype(int), **kw)
    pd.testing.assert_frame_equal(got.pairs, want.pairs)
    assert got.rnr_tau_drop_ci == want.rnr_tau_drop_ci
    with pytest.raises(ValueError, match="one shape"):
        inline_pairwise(conf[:, 0], perf[:, 0], inline[:, 0], models=["r"], reasoning=[True])


def test_permutation_p_values_and_bootstrap_from_the_documented_seeds():
    """p-values: the pairwise permutation test (``(1 + #{null >= observed}) / (B + 1)``) of all
    pairs on all items from ``SeedSequence(rng, spawn_key=(0, 0))``, and of pair k on its kept
    items from ``(0, 1, k)``; the item bootstrap from ``(1,)``, its tau-b from SciPy."""
    from metacog_metrics.pairwise import pair_permutation_test

    conf, perf, inline = _hand_case(seed=7, n=50)
    kw = {"models": ["r", "n1", "n2"], "reasoning": [True, False, False], "min_items": 5}
    res = inline_pairwise(conf, perf, inline, permutations=30, n_boot=15, rng=11, **kw)
    again = inline_pairwise(conf, perf, inline, permutations=30, n_boot=15,
                            rng=np.random.SeedSequence(11), **kw)  # fmt: skip
    pd.testing.assert_frame_equal(res.pairs, again.pairs)
    assert res.rnr_tau_drop_ci == again.rnr_tau_drop_ci
    ia, ib = np.triu_indices(3, k=1)
    allp = pair_permutation_test(conf, perf, permutations=30, pairs=(ia, ib), engine="numpy",
                                 rng=np.random.SeedSequence(11, spawn_key=(0, 0)))  # fmt: skip
    np.testing.assert_array_equal(res.pairs["p_with"], allp.p_value)
    assert np.allclose(res.pairs["p_with"] * 31, np.round(res.pairs["p_with"] * 31))
    for k, (a, b) in enumerate(zip(ia, ib, strict=True)):
        rows = ~inline[:, a] & ~inline[:, b]
        one = pair_permutation_test(conf[rows][:, [a, b]], perf[rows][:, [a, b]],
                                    permutations=30, engine="numpy",
                                    rng=np.random.SeedSequence(11, spawn_key=(0, 1, k)),
                                    )  # fmt: skip
        assert res.pairs["p_without"].iloc[k] == one.p_value[0]
    # The bootstrap: items drawn with replacement, tau-b of the R-NR pairs with and without.
    gen = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(1,)))
    drops, means = [], []
    for _ in range(15):
        idx = gen.integers(0, 50, 50)
        tw, to = [], []
        for b in (1, 2):
            d_c, d_p = conf[idx, 0] - conf[idx, b], perf[idx, 0] - perf[idx, b]
            keep = ~inline[idx, 0] & ~inline[idx, b]
            tw.append(kendalltau(d_c, d_p).statistic)
            if keep.sum() >= 5:
                to.append(kendalltau(d_c[keep], d_p[keep]).statistic)
        drops.append(np.mean(tw) - np.mean(to))
        means.append(np.mean(tw))
    assert res.rnr_tau_drop_ci == pytest.approx(tuple(np.quantile(drops, [0.025, 0.975])))
    assert res.rnr_tau_with_ci == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])))
    assert res.rnr_tau_with == pytest.approx(
        np.mean([kendalltau(conf[:, 0] - conf[:, b], perf[:, 0] - perf[:, b]).statistic
                 for b in (1, 2)])
    )  # fmt: skip


def test_one_permutation_and_one_resample_are_enough():
    conf, perf, inline = _hand_case(seed=8, n=60)
    res = inline_pairwise(conf, perf, inline, models=["r", "n1", "n2"],
                          reasoning=[True, False, False], permutations=1, n_boot=1)  # fmt: skip
    assert set(res.pairs["p_with"]) <= {0.5, 1.0} and res.pairs["p_with"].notna().all()
    lo, hi = res.rnr_tau_drop_ci
    assert np.isfinite(lo) and lo == hi


def test_defaults_draw_1000_permutations_and_200_resamples():
    conf, perf, inline = _hand_case(seed=9, n=30)
    res = inline_pairwise(conf, perf, inline, models=["r", "n1", "n2"],
                          reasoning=[True, False, False])  # fmt: skip
    assert res.n_boot == 200 and res.min_items == 10
    p = res.pairs["p_with"].to_numpy()
    assert np.allclose(p * 1001, np.round(p * 1001))


def test_fdr_share_counts_q_strictly_below_alpha():
    conf, perf, inline = _hand_case(seed=3, n=80)
    kw = {"models": ["r", "n1", "n2"], "reasoning": [True, False, False], "permutations": 50,
          "n_boot": 0, "rng": 4}  # fmt: skip
    q = inline_pairwise(conf, perf, inline, **kw).pairs["q_with"].to_numpy()
    alpha = float(q[0])  # a q-value itself: not below alpha
    res = inline_pairwise(conf, perf, inline, fdr_alpha=alpha, **kw)
    rnr = res.types.set_index("pair_type").loc["R-NR", "fdr_share_with"]
    assert rnr == pytest.approx(np.mean(q[:2] < alpha)) and res.fdr_alpha == alpha


def test_signal_not_clearly_above_zero_gives_the_bootstrap_reason():
    """An R-NR mean tau-b on all items above 0 whose bootstrap interval reaches below 0: the
    drop is given, the share is not, and the reason quotes the interval."""
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = 40
        perf = (rng.random((n, 2)) < 0.5).astype(float)
        conf = (rng.random((n, 2)) < 0.5).astype(float)
        inline = rng.random((n, 2)) < 0.2
        res = inline_pairwise(conf, perf, inline, models=["r", "n"], reasoning=[True, False],
                              permutations=0, n_boot=50, rng=seed)  # fmt: skip
        lo, hi = res.rnr_tau_with_ci
        if res.rnr_tau_with > 0 and lo <= 0 < hi:
            break
    else:
        pytest.fail("no seed gave a mean above 0 with an interval reaching below 0")
    assert res.reason == (
        f"the R-NR mean tau-b on all items ({res.rnr_tau_with:.3f}, 95% item bootstrap "
        f"{lo:.3f} to {hi:.3f}) is not clearly above 0: no clear signal to lose"
    )
    assert np.isnan(res.rnr_share_lost) and np.isnan(res.rnr_share_lost_ci).all()
    assert np.isfinite(res.rnr_tau_drop) and np.isfinite(res.rnr_tau_drop_ci).all()


def test_nothing_left_without_inline_items_gives_no_intervals():
    conf, perf, inline = _hand_case(seed=5)
    gone = inline_pairwise(conf, perf, np.ones_like(inline), models=["r", "n1", "n2"],
                           reasoning=[True, False, False], permutations=0, n_boot=20)  # fmt: skip
    assert gone.reason == "no R-NR pair keeps 10 items without the inline-solved ones"
    assert np.isnan(gone.rnr_tau_drop) and np.isfinite(gone.rnr_tau_with)
    for ci in (gone.rnr_share_lost_ci, gone.rnr_tau_drop_ci, gone.rnr_tau_with_ci):
        assert np.isnan(ci).all()


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("7 + x = 9", 1),  # the number opens the text
        ("x + y = 5 and z = 7", 0),  # no number before the first "=" after the operator
        ("Let a = b, as given before; 3 + x = 7", 1),  # an earlier "=" is not the one
        ("2 + 3 = 5, and then much later we see x + y = 7", 1),  # the first one counts
        ("9" + "b" * 15 + "+ x = 3", 0),  # a number 16 characters back is too far
        ("9" + "b" * 14 + "+ x = 3", 1),  # 15 is near enough
    ],
)
def test_computations_need_a_number_shortly_before_the_equals(text, count):
    assert inline_features(text)["computations"] == count


@pytest.mark.parametrize(
    "text", ["then subtracting 5", "multiplying by 3", "dividing by four", "taking away 2"]
)
def test_leading_operator_words_need_no_number_before(text):
    assert inline_features(text)["operators"] == 1


@pytest.mark.parametrize(
    ("text", "reasoned"),
    [
        # A conclusion whose end is at most 12 characters before a stated answer leads into it:
        # one statement. 13 characters away it is a conclusion of its own.
        ("Therefore, we saw it the answer is 5.", 0),
        ("Therefore, we saw it, the answer is 5.", 1),
        # A conclusion that starts where the stated answer's match ends still overlaps it.
        ("\\boxed{therefore}", 0),
    ],
)
def test_a_conclusion_next_to_the_stated_answer_is_part_of_it(text, reasoned):
    assert inline_features(text)["reasoned_answer"] == reasoned


def test_strip_verdict_keeps_the_start_and_drops_trailing_space():
    assert strip_verdict("  Sure.  \n\nAnswer: Yes") == "  Sure."
    assert inline_features(float("nan")) == dict.fromkeys(FEATURES, 0)
