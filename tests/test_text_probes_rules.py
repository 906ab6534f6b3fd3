"""Text probes, rule by rule, on small inputs (seconds): features counted by hand, the lexicon
builder, the folds and fits against scikit-learn, the AUROCs and their bootstrap against
``sklearn.metrics.roc_auc_score``, and the bookkeeping of :func:`fit_text_probes` (notes,
groups, missing texts, seeds). ``tests/test_text_probes.py`` checks the analysis on simulated
populations."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from metacog_metrics import text_probes as tp
from metacog_metrics.text_probes import (
    FEATURE_NAMES,
    cross_validated_scores,
    fit_text_probes,
    text_features,
)

# --------------------------------------------------------------------------------------------
# Features
# --------------------------------------------------------------------------------------------

TEXT = (
    "Hmm, wait: I don't know it. Maybe 3.5 or 12,000 is right?\n"
    'Knowledge isn\'t certain (not sure, I doubt), so "B" - perhaps, Perhaps!'
)


def test_every_feature_of_one_text_counted_by_hand():
    # Words: Hmm wait I don't know it Maybe 3.5 or 12 000 is right Knowledge isn't certain not
    # sure I doubt so B perhaps Perhaps (24; "12,000" is two words, one number), of lengths
    # summing to 92; 22 distinct ignoring case (I, perhaps twice); one of 9+ letters
    # (Knowledge); sentences end at "it. ", "?\n" and the final "!" (3); 7 digits.
    expected = dict.fromkeys(FEATURE_NAMES, 0.0)
    expected.update(
        log_chars=np.log1p(len(TEXT)),
        log_words=np.log1p(24),
        sentences=3,
        mean_word_length=92 / 24,
        mean_sentence_words=24 / 3,
        unique_word_share=22 / 24,
        long_word_share=1 / 24,
        digit_share=7 / len(TEXT),
        negation=3,  # don't, isn't, not
        hedge=3,  # Maybe, perhaps, Perhaps
        uncertainty=2,  # "not sure", doubt
        certainty=2,  # certain, sure
        causal=1,  # so
        self_correction=2,  # Hmm, wait
        knowledge=2,  # know, Knowledge
        ignorance=1,  # "don't know"
        first_person=2,  # I, I
        success=1,  # right
        numbers=2,  # 3.5, 12,000
        operators=1,  # the dash
        parentheses=2,
        commas=5,
        question_marks=1,
        exclamations=1,
        quotes=2,
        colons=1,
        newlines=1,
        capitalised=1,  # "Perhaps" after ", "
    )
    row = text_features([TEXT]).iloc[0]
    assert list(row.index) == list(FEATURE_NAMES)
    for name, value in expected.items():
        assert row[name] == pytest.approx(value, abs=1e-12), name


@pytest.mark.parametrize(
    ("text", "nonzero"),
    [
        ("", {}),
        # Blank: characters and a line, no words, no sentence.
        ("  \n ", {"log_chars": np.log1p(4), "newlines": 1}),
        # Punctuation only: one sentence (at least one for a non-blank text), no words.
        (
            "?!",
            {"log_chars": np.log1p(2), "sentences": 1, "question_marks": 1, "exclamations": 1},
        ),
        # An 8-letter word is not long; a repeated word counts each time in its family.
        (
            "maybe maybe absolute",
            {
                "log_chars": np.log1p(20),
                "log_words": np.log1p(3),
                "sentences": 1,
                "mean_word_length": 6.0,
                "mean_sentence_words": 3.0,
                "unique_word_share": 2 / 3,
                "hedge": 2,
            },
        ),
    ],
)
def test_edge_texts_counted_by_hand(text, nonzero):
    row = text_features([text]).iloc[0]
    expected = {**dict.fromkeys(FEATURE_NAMES, 0.0), **nonzero}
    assert row.to_dict() == pytest.approx(expected, abs=1e-12)


def test_features_keep_the_index_strip_the_verdict_and_repeat_texts():
    texts = pd.Series(["Sure, 2 ways.\nAnswer: Yes", None, "Sure, 2 ways.\nAnswer: Yes",
                       float("nan")], index=[7, 3, 9, 1])  # fmt: skip
    raw = text_features(texts)
    assert list(raw.index) == [7, 3, 9, 1] and (raw.dtypes == np.float64).all()
    stripped = text_features(texts, rationale=True)
    alone = text_features(["Sure, 2 ways."]).iloc[0]
    for label in (7, 9):
        assert stripped.loc[label].to_dict() == alone.to_dict()
        # The verdict line adds a line, a colon and the words "Answer", "Yes".
        assert raw.loc[label, "newlines"] == 1 and raw.loc[label, "colons"] == 1
        assert raw.loc[label, "log_words"] == pytest.approx(np.log1p(5))
    assert (stripped.loc[[3, 1]].to_numpy() == 0).all()
    # A list gets a fresh 0..n-1 index.
    assert list(text_features(["a", "b"]).index) == [0, 1]


def test_lexicon_builder_by_hand():
    lx = tp._words("Foo", "a b c", "a b", "c d", "well-known")
    assert lx.words == ("Foo", "a b c", "a b", "c d", "well-known")
    assert lx.single == frozenset({"foo"})
    # Longest entry first: "a b c d" is "a b c" once, not "a b" and then "c d".
    assert lx.multi.findall("a b c d") == ["a b c"]
    # Any whitespace between the words, any case, whole words only.
    assert lx.multi.findall("A \n B, Well-Known") == ["A \n B", "Well-Known"]
    assert lx.multi.findall("xa b, a bx, a b's, well-knownish") == []
    assert tp._words("x", "y").multi is None
    with pytest.raises(ValueError, match=re.escape("lexicon entries ['not sure'] contain")):
        tp._words("Sure", "not sure")


# --------------------------------------------------------------------------------------------
# Cross-validation against scikit-learn
# --------------------------------------------------------------------------------------------


def _sklearn_oof(x, y, codes, k, seed, c=1.0):
    """Out-of-fold P(correct) of the documented model, fitted with scikit-learn's defaults
    (lbfgs, run to convergence); NaN in a fold whose training rows have one class."""
    scores, fold = np.full(y.size, np.nan), np.full(y.size, -1)
    cv = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        splits = list(cv.split(x, y, codes))
    for i, (train, test) in enumerate(splits):
        fold[test] = i
        if len(set(y[train].tolist())) < 2:
            continue  # no classifier: left NaN here
        model = make_pipeline(StandardScaler(), LogisticRegression(C=c, tol=1e-10,
                                                                   max_iter=10_000))  # fmt: skip
        model.fit(x[train], y[train])
        scores[test] = model.predict_proba(x[test])[:, 1]
    return scores, fold


def _by_appearance(values) -> np.ndarray:
    codes: dict = {}
    return np.array([codes.setdefault(v, len(codes)) for v in values])


def test_out_of_fold_scores_match_scikit_learn():
    rng = np.random.default_rng(3)
    n = 60
    x = rng.standard_normal((n, 3))
    y = (x[:, 0] + rng.standard_normal(n) > 0).astype(int)
    groups = [f"g{i // 2}" for i in range(n)]  # items of two rows each
    for folds, c, seed in ((5, 1.0, 0), (3, 0.1, 4)):
        scores, fold = cross_validated_scores(x, y, groups, folds=folds, c=c, seed=seed)
        want, want_fold = _sklearn_oof(x, y, _by_appearance(groups), folds, seed, c)
        np.testing.assert_allclose(scores, want, atol=1e-4)
        np.testing.assert_array_equal(fold, want_fold)
        assert fold.dtype == np.int64


@pytest.mark.parametrize(
    ("y", "groups", "folds", "k"),
    [
        ([0, 1] * 6, list(range(12)), 5, 5),
        ([0, 1] * 6, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], 5, 3),  # three items
        ([1, 1, 0, 0, 0, 0, 0, 0], list(range(8)), 5, 2),  # two rows of the rarer class
        ([0, 1] * 6, list(range(12)), 1, 2),  # at least two folds
    ],
)
def test_number_of_folds(y, groups, folds, k):
    y = np.asarray(y)
    x = np.arange(y.size, dtype=float)[:, None]
    _, fold = cross_validated_scores(x, y, groups, folds=folds)
    assert sorted(set(fold.tolist())) == list(range(k))


def test_a_fold_trained_on_one_class_predicts_its_rate_without_warnings():
    # One positive row: two folds; the fold holding it is trained on negatives only.
    y = np.array([0, 0, 0, 1, 0, 0])
    x = np.arange(6, dtype=float)[:, None]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores, fold = cross_validated_scores(x, y, list("abcdef"), folds=5)
    assert not [w for w in caught if issubclass(w.category, UserWarning)]
    assert sorted(set(fold.tolist())) == [0, 1]
    held = fold == fold[3]
    assert (scores[held] == 0.0).all()
    want, _ = _sklearn_oof(x, y, np.arange(6), 2, 0)
    np.testing.assert_allclose(scores[~held], want[~held], atol=1e-4)


def test_cross_validation_refusals_name_the_counts():
    with pytest.raises(ValueError, match=re.escape("got 1 items, classes [0, 1]")):
        cross_validated_scores(np.zeros((4, 1)), [0, 1, 0, 1], ["a"] * 4)
    with pytest.raises(ValueError, match=re.escape("got 4 items, classes [1]")):
        cross_validated_scores(np.zeros((4, 1)), [1, 1, 1, 1], ["a", "b", "c", "d"])
    with pytest.raises(ValueError, match=re.escape("got 0 items, classes []")):
        cross_validated_scores(np.zeros((0, 1)), [], [])


# --------------------------------------------------------------------------------------------
# AUROC and its bootstrap against scikit-learn
# --------------------------------------------------------------------------------------------


def test_weighted_auroc_matches_sklearn_with_sample_weights():
    rng = np.random.default_rng(1)
    n = 30
    score = np.round(rng.random(n) * 4) / 4  # 5 levels: many ties
    y = (rng.random(n) < 0.5).astype(int)
    weights = rng.integers(0, 4, (6, n)).astype(float)
    got = tp._auroc_weighted(score, y, weights)
    for b in range(6):
        assert got[b] == pytest.approx(roc_auc_score(y, score, sample_weight=weights[b]))
    # A weighting without one class has no AUROC.
    w = np.where(y == 1, 0.0, 1.0)[None, :]
    assert np.isnan(tp._auroc_weighted(score, y, w)).all()


def test_aurocs_bootstrap_percentiles_by_resampling_items():
    rng = np.random.default_rng(2)
    n, n_boot = 12, 200
    y = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0])
    scores = {"s": rng.random(n), "t": np.round(rng.random(n) * 2) / 2}
    out = tp._aurocs(scores, y, n_boot, np.random.default_rng(9))
    picks = np.random.default_rng(9).integers(0, n, (n_boot, n))
    for name, s in scores.items():
        # Resamples without both classes have no AUROC and are left out (small n: many).
        draws = [roc_auc_score(y[i], s[i]) for i in picks if len(set(y[i])) == 2]
        assert len(draws) < n_boot
        point, lo, hi = out[name]
        assert point == pytest.approx(roc_auc_score(y, s))
        assert (lo, hi) == pytest.approx(tuple(np.quantile(draws, [0.025, 0.975])))
    assert np.isnan(tp._aurocs(scores, y, 0, np.random.default_rng(0))["s"][1:]).all()
    bad = {"s": np.r_[np.nan, scores["s"][1:]]}
    assert np.isnan(tp._aurocs(bad, y, 10, np.random.default_rng(0))["s"]).all()
    one = tp._aurocs(scores, np.zeros(n, dtype=int), 10, np.random.default_rng(0))
    assert np.isnan(one["s"]).all()


# --------------------------------------------------------------------------------------------
# fit_text_probes on small record tables
# --------------------------------------------------------------------------------------------

_VOCAB = tuple(
    "maybe perhaps not never because so wait hmm hard easy know recall I would chance "  # noqa: SIM905
    "correct wrong what more all if first specific 12 3.5 ( ) , ? ! : the a of to".split()
)


def _records(n_items=24, models=("m1", "m2", "m3"), seed=0, benchmark="b") -> pd.DataFrame:
    """Texts whose hedges track correctness, rationales with or without a verdict line; items
    i0 and i1 share their question text."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        question = "What is shared?" if i < 2 else " ".join(rng.choice(_VOCAB, 6))
        for j, m in enumerate(models):
            ok = bool(rng.random() < 0.5)
            hedge = "maybe perhaps " if not ok else "clearly "
            rows.append({
                "model": m, "benchmark": benchmark, "item_id": f"i{i}", "probe": "p",
                "confidence_kind": "verbal_binary", "correct": float(ok),
                "confidence": float(np.round(rng.random(), 1)),
                "question": question, "reasoning": j == 0,
                "probe_text": hedge + " ".join(rng.choice(_VOCAB, int(rng.integers(3, 9))))
                + rng.choice(["\nAnswer: No", "\nConfidence: 80", "", "\nAnswer: Yes, I know"]),
                "solve_text": " ".join(rng.choice(_VOCAB, int(rng.integers(3, 9)))),
            })  # fmt: skip
    return pd.DataFrame(rows)


def _expected_set_scores(rec: pd.DataFrame, name: str, seed: int = 0, folds: int = 5,
                         c: float = 1.0):  # fmt: skip
    """The feature set's out-of-fold scores, rebuilt with scikit-learn from the documented
    design: features of each text (the rationale without its verdict line), one classifier
    on every record of the group, folds grouped by question text (by item without one)."""
    cols = {"Q": "question", "M": "probe_text", "P": "solve_text"}
    x = np.hstack([text_features(rec[cols[t]], rationale=t == "M").to_numpy() for t in name])
    y = rec["correct"].to_numpy(dtype=int)
    key = [f"q:{q}" if isinstance(q, str) and q.strip() else f"i:{i}"
           for q, i in zip(rec.get("question", [None] * len(rec)), rec["item_id"])]  # fmt: skip
    k = max(2, min(folds, len(set(key)), int(np.bincount(y).min())))
    return _sklearn_oof(x, y, _by_appearance(key), k, seed, c)


def test_set_scores_and_table_against_independent_computations():
    rec = _records()
    res = fit_text_probes(rec, n_boot=0, seed=0)
    assert res.sets == ("Q", "M", "P", "QM", "QP", "QMP") and res.missing == {}
    assert (res.fit_by, res.folds, res.c, res.n_boot, res.notes) == ("benchmark", 5, 1.0, 0, ())
    pred = res.predictions
    assert list(pred.columns[:6]) == ["benchmark", "probe", "confidence_kind", "model",
                                      "item_id", "correct"]  # fmt: skip
    assert list(pred.index) == list(range(len(rec)))
    for name in ("M", "QP"):
        want, want_fold = _expected_set_scores(rec, name)
        np.testing.assert_allclose(pred[name], want, atol=1e-4)
        np.testing.assert_array_equal(pred[f"fold_{name}"], want_fold)
    # Items sharing a question share a fold.
    assert pred.loc[pred["item_id"].isin(["i0", "i1"]), "fold_Q"].nunique() == 1
    t = res.table.set_index("model")
    assert list(res.table.columns[:7]) == ["benchmark", "probe", "confidence_kind", "model",
                                           "reasoning", "n_items", "n_correct"]  # fmt: skip
    assert list(t.index) == ["m1", "m2", "m3"]
    wide = rec.pivot(index="item_id", columns="model", values="confidence")
    for m, row in t.iterrows():
        mine = rec[rec["model"] == m].set_index("item_id")
        assert row["benchmark"] == "b" and row["probe"] == "p"
        assert row["confidence_kind"] == "verbal_binary"
        assert row["reasoning"] is (m == "m1")
        assert row["n_items"] == 24 and row["n_correct"] == mine["correct"].sum()
        assert row["auroc_internal"] == pytest.approx(roc_auc_score(mine.correct,
                                                                    mine.confidence))  # fmt: skip
        others = wide.drop(columns=m).mean(axis=1).round(12).loc[mine.index]
        assert row["auroc_pop"] == pytest.approx(roc_auc_score(mine.correct, others))
        mp = pred[pred["model"] == m]
        assert row["auroc_M"] == pytest.approx(roc_auc_score(mp["correct"], mp["M"]))
        assert np.isnan(row["auroc_M_low"]) and np.isnan(row["auroc_internal_high"])


def test_bootstrap_intervals_resample_each_models_items_from_its_own_seed():
    """Group g, model j draws its resamples from ``SeedSequence(seed, spawn_key=(g, j))``
    (the same resamples for every column); the interval is the 2.5/97.5 percentiles."""
    # The groups in order of appearance ("c" first), not sorted.
    rec = pd.concat([_records(seed=1, benchmark="c"), _records(seed=2)], ignore_index=True)
    res = fit_text_probes(rec.drop(columns=["question", "solve_text"]), n_boot=50, seed=7)
    assert list(res.table["benchmark"]) == ["c"] * 3 + ["b"] * 3
    for g, bench in enumerate(["c", "b"]):
        sub = rec[rec["benchmark"] == bench]
        for j, m in enumerate(["m1", "m2", "m3"]):
            mine = sub[sub["model"] == m]
            y, s = mine["correct"].to_numpy(dtype=int), mine["confidence"].to_numpy()
            gen = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(g, j)))
            picks = gen.integers(0, len(y), (50, len(y)))
            draws = [roc_auc_score(y[i], s[i]) for i in picks if len(set(y[i])) == 2]
            row = res.table[(res.table["benchmark"] == bench) & (res.table["model"] == m)]
            lo, hi = np.quantile(draws, [0.025, 0.975])
            assert row["auroc_internal_low"].iloc[0] == pytest.approx(lo)
            assert row["auroc_internal_high"].iloc[0] == pytest.approx(hi)


def test_fit_by_model_fits_each_models_records_alone():
    rec = _records().drop(columns=["question", "solve_text"])  # the M set alone: fast
    rec.loc[rec["model"] == "m2", "correct"] = 1.0  # one class: no classifier for m2
    res = fit_text_probes(rec, fit_by="model", n_boot=0)
    assert res.fit_by == "model"
    m2 = res.predictions[res.predictions["model"] == "m2"]
    assert m2["M"].isna().all() and (m2["fold_M"] == -1).all()
    assert res.predictions["fold_M"].dtype == np.int64
    for m in ("m1", "m3"):
        mine = rec[rec["model"] == m].reset_index(drop=True)
        want, _ = _expected_set_scores(mine, "M")
        got = res.predictions.loc[res.predictions["model"] == m, "M"].to_numpy()
        np.testing.assert_allclose(got, want, atol=1e-4)
    with pytest.raises(ValueError, match=re.escape("fit_by must be 'benchmark' or 'model', "
                                                   "got 'item'")):  # fmt: skip
        fit_text_probes(rec, fit_by="item")


def test_rows_without_a_grade_or_confidence_and_items_without_a_population():
    rec = _records(n_items=22).drop(columns=["question", "solve_text"])
    rec.loc[(rec["model"] == "m2") & (rec["item_id"] == "i5"), "correct"] = np.nan
    rec.loc[(rec["model"] == "m3") & (rec["item_id"] == "i6"), "confidence"] = np.nan
    # An item only m1 answered has no Pop: left out of m1's row.
    extra = rec[(rec["model"] == "m1") & (rec["item_id"] == "i7")].assign(item_id="solo")
    res = fit_text_probes(pd.concat([rec, extra], ignore_index=True), n_boot=0, min_items=20)
    t = res.table.set_index("model")
    assert t["n_items"].to_dict() == {"m1": 22, "m2": 21, "m3": 21}
    assert len(res.predictions) == 3 * 22 - 2 + 1
    # One model alone: no population, every item kept, Pop NaN.
    alone = fit_text_probes(rec[rec["model"] == "m1"], n_boot=0)
    row = alone.table.iloc[0]
    assert row["n_items"] == 22 and np.isnan(row["auroc_pop"]) and np.isfinite(row["auroc_M"])


def test_small_models_notes_and_the_min_items_boundary():
    rec = _records(n_items=20, models=("big", "m4", "m2", "m3", "m1"))
    rec = rec.drop(columns=["question", "solve_text"])
    keep = (rec["model"] == "big") | (rec["item_id"].str[1:].astype(int) < 19)
    res = fit_text_probes(rec[keep])  # defaults: 20 items, 1000 resamples
    assert list(res.table["model"]) == ["big"]  # exactly 20 items is enough
    assert res.n_boot == 1000 and np.isfinite(res.table["auroc_M_low"]).all()
    assert res.notes == (
        "b/p/verbal_binary: 4 model(s) with fewer than 20 graded items left "
        "out of the text probes: m4 (19), m2 (19), m3 (19) and 1 more",
    )
    assert set(res.predictions["model"]) == {"big"}
    three = fit_text_probes(rec[keep & (rec["model"] != "m1")], n_boot=0, min_items=20)
    assert three.notes[0].endswith("m4 (19), m2 (19), m3 (19)")
    none = fit_text_probes(rec[keep & (rec["model"] != "big")], n_boot=0, min_items=20)
    assert none.table.empty and none.predictions.empty
    assert none.notes == (
        "b/p/verbal_binary: left out, every model has fewer than 20 graded items (at most 19)",
    )


def test_missing_texts_and_blank_questions():
    rec = _records()
    res = fit_text_probes(rec.assign(solve_text=None, probe_text="  "), n_boot=0)
    assert res.sets == ("Q",)
    assert res.missing == {"M": "the records have no probe_text",
                           "P": "the records have no solve_text",
                           "QM": "the records have no probe_text",
                           "QP": "the records have no solve_text",
                           "QMP": "the records have no probe_text or solve_text"}  # fmt: skip
    bare = rec.drop(columns=["question", "probe_text", "solve_text"])
    empty = fit_text_probes(bare, n_boot=0)
    assert empty.sets == () and empty.table.empty and empty.predictions.empty
    assert len(empty.missing) == 6
    assert list(empty.table.columns) == list(res.table.columns) and empty.notes == ()
    assert (empty.fit_by, empty.folds, empty.c, empty.n_boot) == ("benchmark", 5, 1.0, 0)
    # Without usable questions, the folds are grouped by item.
    blank = rec.drop(columns=["solve_text"])
    blank = blank.assign(question=np.where(blank["item_id"].isin(["i0", "i1"]), " ", "x"))
    want, _ = _expected_set_scores(blank.drop(columns=["question"]), "M")
    got = fit_text_probes(blank.drop(columns=["question"]), n_boot=0).predictions["M"]
    np.testing.assert_allclose(got, want, atol=1e-4)
    got = fit_text_probes(blank, n_boot=0).predictions
    want, _ = _expected_set_scores(blank, "M")
    np.testing.assert_allclose(got["M"], want, atol=1e-4)


def test_progress_bar_counts_groups_times_sets(capsys):
    rec = _records()
    fit_text_probes(rec.drop(columns=["solve_text"]), n_boot=0, progress=True)
    err = capsys.readouterr().err
    assert re.search(r"(^|\r)text probes: ", err) and "/3" in err
    fit_text_probes(rec, n_boot=0)
    assert capsys.readouterr().err == ""


def test_fits_run_with_one_blas_thread():
    from threadpoolctl import threadpool_info

    with tp._one_blas_thread():
        blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
        assert blas and all(p["num_threads"] == 1 for p in blas)


def test_folds_strength_and_seed_are_passed_on_and_reasoning_may_be_absent():
    rec = _records().drop(columns=["question", "solve_text", "reasoning"])
    res = fit_text_probes(rec, folds=3, c=0.1, seed=4, n_boot=0)
    want, want_fold = _expected_set_scores(rec, "M", seed=4, folds=3, c=0.1)
    np.testing.assert_allclose(res.predictions["M"], want, atol=1e-4)
    np.testing.assert_array_equal(res.predictions["fold_M"], want_fold)
    assert (res.folds, res.c) == (3, 0.1) and res.table["reasoning"].isna().all()
