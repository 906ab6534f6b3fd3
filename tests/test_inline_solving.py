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
from metacog_metrics.simulate import Population, get_preset

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
    pop = Population(get_preset("paper"), 12, seed=2)
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
