"""Surface-feature probes: features, grouped cross-validation, AUROCs beside Internal and Pop."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from metacog_metrics.simulate import Population, get_preset
from metacog_metrics.text_probes import (
    FEATURE_NAMES,
    FEATURE_SETS,
    cross_validated_scores,
    fit_text_probes,
    text_features,
)

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
    pop = Population(get_preset("paper"), N_MODELS, seed=SEED)
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


def test_shuffled_labels_give_chance(sim_records):
    rng = np.random.default_rng(5)
    shuffled = sim_records.copy()
    shuffled["correct"] = rng.permutation(shuffled["correct"].to_numpy())
    t = fit_text_probes(shuffled, n_boot=0, seed=3).table
    for name in ("internal", "pop", *FEATURE_SETS):
        assert abs(t[f"auroc_{name}"].median() - 0.5) < 0.05, name


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
