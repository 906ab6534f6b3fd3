"""Surface-feature probes: features, grouped cross-validation, AUROCs beside Internal and Pop."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from metacog_metrics.simulate import Population
from metacog_metrics.text_probes import (
    FEATURE_NAMES,
    FEATURE_SETS,
    cross_validated_scores,
    fit_text_probes,
    text_features,
)
from metacog_tasks.sim import preset_params

N_MODELS, SEED = 12, 1


@pytest.fixture(scope="module")
def sim_records() -> pd.DataFrame:
    from metacog_tasks.sim.responder import simulate_text_records

    return simulate_text_records(N_MODELS, benchmarks=["squad", "mathbench"], replicate=12,
                                 seed=SEED)  # fmt: skip


@pytest.fixture(scope="module")
def sim_probes(sim_records):
    return fit_text_probes(sim_records, n_boot=200, seed=0)


def test_about_forty_features_counted_by_hand():
    assert 38 <= len(FEATURE_NAMES) <= 45
    f = text_features(["Wait, I am not sure; maybe it is hard.\nAnswer: No"], rationale=True)
    row = f.iloc[0]
    assert row["self_correction"] == 1  # wait
    assert row["negation"] == 1  # not (the verdict line "No" is stripped)
    assert row["uncertainty"] == 1  # not sure
    assert row["hedge"] == 1  # maybe
    assert row["difficulty"] == 1  # hard
    assert row["first_person"] == 1  # I
    assert row["log_words"] == pytest.approx(np.log1p(9))
    assert row["sentences"] == 1
    # Without stripping, the verdict line counts: "No" is a negation, the newline a line.
    raw = text_features(["Wait, I am not sure; maybe it is hard.\nAnswer: No"]).iloc[0]
    assert raw["negation"] == 2 and raw["newlines"] == 1
    assert (text_features([None, float("nan")]).to_numpy() == 0).all()


def test_probes_recover_what_the_generative_model_implies(sim_records, sim_probes):
    """The rationale follows the model's felt state (``LatentState.felt_uncertainty``): the M
    probe's AUROC should come close to that state's own AUROC for correctness and not exceed
    it (the text knows no more than the model), and beat chance."""
    pop = Population(preset_params("paper"), N_MODELS, seed=SEED)
    implied = {}
    for bench, g in sim_records.groupby("benchmark"):
        st = pop.latent(bench, list(pd.unique(g["item_id"])))
        for j, m in enumerate(st.models):
            implied[(bench, m)] = roc_auc_score(st.correct[:, j], -st.felt_uncertainty[:, j])
    t = sim_probes.table
    t = t.assign(implied=[implied[(b, m)] for b, m in zip(t["benchmark"], t["model"])])
    diff = t["auroc_M"] - t["implied"]
    for _, d in diff.groupby(t["benchmark"]):
        assert -0.10 <= d.median() <= 0.02, d.describe()
    assert diff.max() < 0.05, t[["benchmark", "model", "auroc_M", "implied"]]
    assert t["auroc_M"].median() > 0.55
    # The paper's math confound: reasoning models solve inline, and their rationales show it.
    r_math = t[(t["benchmark"] == "mathbench") & t["reasoning"]]
    assert len(r_math) >= 3 and (r_math["auroc_M"] > 0.8).all()
    # The question text carries nothing about correctness in the generative model.
    assert abs(t["auroc_Q"].median() - 0.5) < 0.07


def test_rationales_do_not_spell_out_the_verdict(sim_records):
    """The wording is a second noisy read of the state that sets the verdict, not the verdict:
    a probe of the verdict line's own answer from the rest of the rationale stays short of
    perfect (simulated rationales written from the verdict's own state gave 1.00)."""
    as_verdict = sim_records.assign(correct=sim_records["confidence"])
    t = fit_text_probes(as_verdict, n_boot=0, seed=2).table
    assert 0.75 < t["auroc_M"].median() < 0.98, t["auroc_M"].describe()


def test_shuffled_labels_give_chance(sim_records):
    rng = np.random.default_rng(5)
    shuffled = sim_records.copy()
    shuffled["correct"] = rng.permutation(shuffled["correct"].to_numpy())
    t = fit_text_probes(shuffled, n_boot=0, seed=3).table
    for name in ("internal", "pop", *FEATURE_SETS):
        assert abs(t[f"auroc_{name}"].median() - 0.5) < 0.05, name


# Words of the lexicons, digits and punctuation: texts whose features vary from item to item.
_VOCAB = tuple(
    "maybe might perhaps not never because so therefore wait actually hmm hard tricky easy "  # noqa: SIM905
    "simple know recall I my would could chance correct wrong what which more less all some "
    "if unless first then specific exact 12 3.5 ( ) , ? ! : the a of to and in is it that".split()
)


def _memorisable_records(n_items: int = 40, n_models: int = 8, seed: int = 0) -> pd.DataFrame:
    """Every model gets the same random texts for an item and the same label, which no word
    predicts: only having seen the item in training helps."""
    rng = np.random.default_rng(seed)

    def salad() -> str:
        return " ".join(rng.choice(_VOCAB, size=int(rng.integers(5, 60)))) + "."

    texts = [(salad(), salad(), salad()) for _ in range(n_items)]
    labels = rng.random(n_items) < 0.5
    return pd.DataFrame([
        {"model": f"m{j}", "benchmark": "b", "item_id": f"i{i}", "probe": "prospective",
         "confidence": float(rng.random() < 0.5), "confidence_kind": "verbal_binary",
         "correct": float(labels[i]), "question": texts[i][0], "probe_text": texts[i][1],
         "solve_text": texts[i][2]}
        for j in range(n_models) for i in range(n_items)
    ])  # fmt: skip


def test_no_item_crosses_folds_shown_by_memorisation():
    """The same item in a training and a test fold would be recognised: with folds by row the
    classifier reads the labels off the copies (AUROC near 1); with folds by item, as the
    probes use them, it is at chance."""
    rec = _memorisable_records()
    x = np.hstack([text_features(rec[c]).to_numpy() for c in ("question", "probe_text",
                                                               "solve_text")])  # fmt: skip
    y = rec["correct"].to_numpy(dtype=int)
    by_row, _ = cross_validated_scores(x, y, np.arange(y.size))
    assert roc_auc_score(y, by_row) > 0.95
    res = fit_text_probes(rec, n_boot=0)
    assert (res.table["auroc_QMP"] < 0.65).all() and (res.table["auroc_M"] < 0.65).all()
    pred = res.predictions
    assert (pred.groupby("item_id")["fold_QMP"].nunique() == 1).all()


def test_internal_is_the_mean_of_k_samples(sim_records):
    """Sampled confidence: the record's confidence is the share of k sampled answers that say
    yes; Internal is its AUROC, Pop the other models' mean of it, in their own row."""
    rng = np.random.default_rng(2)
    g = sim_records[sim_records["benchmark"] == "squad"].copy()
    p_yes = np.clip(0.25 + 0.35 * g["correct"] + 0.25 * rng.standard_normal(len(g)), 0, 1)
    k = 10
    draws = rng.random((len(g), k)) < p_yes.to_numpy()[:, None]
    sampled = g.assign(confidence_kind="sampled", confidence=draws.mean(axis=1))
    res = fit_text_probes(pd.concat([g, sampled], ignore_index=True), n_boot=0)
    t = res.table[res.table["confidence_kind"] == "sampled"]
    assert len(t) == N_MODELS
    wide = sampled.pivot(index="item_id", columns="model", values="confidence")
    for row in t.itertuples():
        mine = sampled[sampled["model"] == row.model].set_index("item_id")
        assert row.auroc_internal == pytest.approx(roc_auc_score(mine.correct, mine.confidence))
        # The mean of k samples ranks items more finely than any one sample does.
        one = draws[(sampled["model"] == row.model).to_numpy(), 0]
        assert row.auroc_internal > roc_auc_score(mine.correct, one) - 0.02
        # Means of k/10 values tie often; rounding drops the last-bit noise that would split
        # the ties (0.3 + 0.6 != 0.9 in floating point).
        others = wide.drop(columns=row.model).mean(axis=1).round(12).loc[mine.index]
        assert row.auroc_pop == pytest.approx(roc_auc_score(mine.correct, others))


def test_no_item_and_no_question_crosses_folds(sim_probes, sim_records):
    pred = sim_probes.predictions
    for name in sim_probes.sets:
        assert (pred[f"fold_{name}"] >= 0).all()
        assert (pred.groupby(["benchmark", "item_id"])[f"fold_{name}"].nunique() == 1).all()
    # Copies of a bundled item share its question text: they share a fold too.
    q = pred.merge(sim_records[["model", "benchmark", "item_id", "question"]])
    assert (q.groupby(["benchmark", "question"])["fold_QMP"].nunique() == 1).all()


def test_internal_and_pop_against_sklearn(sim_records, sim_probes):
    g = sim_records[sim_records["benchmark"] == "squad"]
    wide = g.pivot(index="item_id", columns="model", values="confidence")
    for row in sim_probes.table[sim_probes.table["benchmark"] == "squad"].itertuples():
        mine = g[g["model"] == row.model].set_index("item_id")
        others = wide.drop(columns=row.model).mean(axis=1).loc[mine.index]
        assert row.auroc_internal == pytest.approx(roc_auc_score(mine.correct, mine.confidence))
        assert row.auroc_pop == pytest.approx(roc_auc_score(mine.correct, others))
        for name in ("internal", "pop", "M", "QMP"):
            lo, hi = getattr(row, f"auroc_{name}_low"), getattr(row, f"auroc_{name}_high")
            assert lo <= getattr(row, f"auroc_{name}") <= hi


def test_bootstrap_intervals_as_wide_as_hanley_mcneil(sim_records, sim_probes):
    """The item-bootstrap interval of a continuous score's AUROC against the Hanley-McNeil
    (1982) standard error, computed here from its formula: about as wide."""
    ratios = []
    for row in sim_probes.table.itertuples():
        a, n1 = row.auroc_QMP, row.n_correct
        n0 = row.n_items - n1
        q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
        se = np.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0))
        ratios.append((row.auroc_QMP_high - row.auroc_QMP_low) / (2 * 1.96 * se))
    assert 0.8 < np.median(ratios) < 1.25, np.round(ratios, 2)


def test_fit_by_model(sim_records):
    sub = sim_records[sim_records["model"].isin(["m01", "m02", "m03"])]
    res = fit_text_probes(sub, fit_by="model", n_boot=0)
    assert len(res.table) == 6 and res.table["auroc_M"].notna().all()
    with pytest.raises(ValueError, match="fit_by"):
        fit_text_probes(sub, fit_by="item")


def test_missing_texts_are_reported_not_fatal(sim_records):
    no_solve = sim_records.drop(columns=["solve_text"])
    res = fit_text_probes(no_solve, n_boot=0)
    assert res.sets == ("Q", "M", "QM")
    assert set(res.missing) == {"P", "QP", "QMP"} and "solve_text" in res.missing["P"]
    bare = sim_records[["model", "benchmark", "item_id", "probe", "confidence",
                        "confidence_kind", "correct"]]  # fmt: skip
    res = fit_text_probes(bare, n_boot=0)
    assert res.sets == () and res.table.empty and len(res.missing) == 6


def test_small_models_are_left_out_with_a_note(sim_records):
    sub = sim_records[sim_records["model"].isin(["m01", "m02", "m03"])].copy()
    ids = sub.loc[sub["benchmark"] == "squad", "item_id"].unique()[:5]
    drop = (sub["model"] == "m03") & (sub["benchmark"] == "squad") & ~sub["item_id"].isin(ids)
    res = fit_text_probes(sub[~drop], n_boot=0)
    assert not ((res.table["model"] == "m03") & (res.table["benchmark"] == "squad")).any()
    assert any("1 model(s) with fewer than 20 graded items" in n and "m03 (5)" in n
               for n in res.notes)  # fmt: skip


def test_cross_validation_errors():
    with pytest.raises(ValueError, match="both classes"):
        cross_validated_scores(np.zeros((4, 2)), np.ones(4), [1, 2, 3, 4])
