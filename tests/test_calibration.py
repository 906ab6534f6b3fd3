"""Calibration metrics: reference values, binary identities, realruns reproduction."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import brier_score_loss, roc_auc_score

from metacog_metrics._conventions import value_ties
from metacog_metrics.calibration import (
    aurc,
    auroc,
    brier_score,
    calibration_by_model,
    confidence_tetrachoric,
    eaurc,
    ece,
    population_confidence,
)
from metacog_metrics.tetrachoric import tetrachoric
from tests.availability import unavailable


def test_auroc_reference_midrank(stats_reference):
    ref = stats_reference["R"]["auroc"]
    assert auroc(ref["score"], ref["label"]) == pytest.approx(ref["auc_midrank"], abs=1e-6)


def test_confidence_tetrachoric_binarises_at_the_threshold():
    conf = np.array([0.9, 0.6, 0.4, 0.2, 0.8, 0.1, 0.7, 0.3, np.nan])
    correct = np.array([1, 1, 0, 0, 0, 1, 1, 0, 1])
    expected = tetrachoric((conf[:-1] >= 0.5).astype(float), correct[:-1]).rho
    assert confidence_tetrachoric(conf, correct) == pytest.approx(expected, abs=1e-12)
    assert confidence_tetrachoric(conf, correct, threshold=0.65) == pytest.approx(
        tetrachoric((conf[:-1] >= 0.65).astype(float), correct[:-1]).rho, abs=1e-12
    )
    assert np.isnan(confidence_tetrachoric([0.9, 0.8, 0.7], [1, 0, 1]))  # all "yes"


def test_nan_pairs_ignored_and_single_class_nan():
    assert auroc([0.2, np.nan, 0.9, 0.4], [0, 1, 1, np.nan]) == 1.0
    assert np.isnan(auroc([0.2, 0.3], [1, 1]))
    assert np.isnan(brier_score([], []))
    assert np.isnan(ece([np.nan], [1]))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=2, max_size=80))
def test_binary_confidence_identities(pairs):
    c = np.array([p[0] for p in pairs], dtype=float)
    y = np.array([p[1] for p in pairs], dtype=float)
    error_rate = float(np.mean(c != y))
    assert brier_score(c, y) == pytest.approx(error_rate)
    assert ece(c, y) == pytest.approx(error_rate)
    assert ece(c, y, strategy="quantile") == pytest.approx(error_rate)
    assert ece(c, y, n_bins=3) == pytest.approx(error_rate)
    if 0 < y.sum() < y.size:
        tpr = np.mean(c[y == 1] == 1)
        tnr = np.mean(c[y == 0] == 0)
        assert auroc(c, y) == pytest.approx((tpr + tnr) / 2)


def test_ece_bins_by_hand():
    c = np.array([0.05, 0.15, 0.7, 0.75, 0.95, 1.0])
    y = np.array([0, 1, 1, 0, 1, 1])
    # uniform bins: [0,.1): .05 vs 0; [.1,.2): .15 vs 1; [.7,.8): .725 vs .5; [.9,1]: .975 vs 1
    expected = (0.05 + 0.85 + 2 * 0.225 + 2 * 0.025) / 6
    assert ece(c, y) == pytest.approx(expected)
    # 0.7 * 10 = 7.000000000000001 in floating point: still the [.7, .8) bin
    assert ece([0.7], [1], n_bins=10) == pytest.approx(0.3)


def test_ece_quantile_never_splits_ties():
    c = np.array([0.9] * 6 + [0.5] * 2 + [0.1] * 2)
    y = np.array([1, 1, 1, 1, 0, 0, 1, 0, 0, 0])
    # levels go whole into bins: {.1}, {.5}, {.9} whatever the number of bins asked for
    expected = (2 * 0.1 + 0 + abs(4 - 5.4)) / 10
    for n_bins in (3, 5, 10):
        assert ece(c, y, n_bins=n_bins, strategy="quantile") == pytest.approx(expected)
    # one bin: the calibration-in-the-large gap
    assert ece(c, y, n_bins=1, strategy="quantile") == pytest.approx(abs(c.mean() - y.mean()))


def test_ece_and_brier_validation():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ece([1.2, 0.3], [1, 0])
    with pytest.raises(ValueError, match="0 or 1"):
        brier_score([0.2, 0.3], [2, 0])
    with pytest.raises(ValueError, match="differ in length"):
        auroc([0.2, 0.3], [1])
    with pytest.raises(ValueError, match="strategy"):
        ece([0.2], [1], strategy="kmeans")
    with pytest.raises(ValueError, match="n_bins"):
        ece([0.2], [1], n_bins=0)
    # AUROC accepts any real score (e.g. a log-probability)
    assert auroc([-3.0, -0.1], [0, 1]) == 1.0


def test_aurc_by_hand_and_tie_invariance():
    # sorted by confidence: correct, wrong, correct -> risks 0, 1/2, 1/3
    assert aurc([0.9, 0.5, 0.1], [1, 0, 1]) == pytest.approx((0 + 0.5 + 1 / 3) / 3)
    # all tied: expected risk at every coverage is the error rate
    assert aurc([0.5] * 4, [1, 0, 0, 1]) == pytest.approx(0.5)
    rng = np.random.default_rng(1)
    c = rng.integers(0, 4, 60) / 3
    y = (rng.random(60) < 0.3 + 0.5 * c).astype(float)
    perm = rng.permutation(60)
    assert aurc(c, y) == pytest.approx(aurc(c[perm], y[perm]), abs=1e-12)
    # oracle ranking has zero excess
    assert eaurc(y, y) == pytest.approx(0.0, abs=1e-12)
    assert eaurc(c, y) > 0


def test_population_confidence_leave_one_out():
    df = pd.DataFrame(
        {
            "model": ["a", "b", "c", "a", "b", "c"],
            "item_id": ["1", "1", "1", "2", "2", "2"],
            "confidence": [1.0, 0.0, 0.5, np.nan, 1.0, 0.0],
        }
    )
    pop = population_confidence(df).to_numpy()
    np.testing.assert_allclose(pop, [0.25, 0.75, 0.5, 0.5, 0.0, 1.0])
    # rows without an item id have no population and take no part in item 1's mean; an item
    # that only one model answered gives the others NaN, not 0
    df2 = pd.DataFrame(
        {
            "model": ["a", "b", "c", "a", "b", "a", "b"],
            "item_id": ["1", "1", "1", None, None, "3", "3"],
            "confidence": [0.2, 0.4, np.nan, 0.9, 0.1, 0.7, np.nan],
        }
    )
    np.testing.assert_allclose(
        population_confidence(df2).to_numpy(), [0.4, 0.2, 0.3, np.nan, np.nan, np.nan, 0.7]
    )


def _published(realruns_dir):
    folder = realruns_dir / "cacioli_mmlu500_verbalized"
    return pd.read_csv(folder / "tidy.csv"), pd.read_csv(folder / "published_summary_per_model.csv")


def test_realruns_auroc_reproduces_published(realruns_dir):
    tidy, published = _published(realruns_dir)
    res = calibration_by_model(tidy, n_boot=200, rng=1)
    known = set(published["model"])
    # the summary drops one "@default" suffix that the item-level file keeps
    table = res.table.assign(
        model=lambda t: [m if m in known else m.replace("@default", "") for m in t["model"]]
    )
    merged = published.merge(table, on="model", suffixes=("_pub", ""))
    # every item-level model is in the published summary (two published ones have no items)
    assert len(merged) == tidy["model"].nunique() == 16
    np.testing.assert_allclose(merged["auroc_internal"], merged["auroc"], atol=5e-5)
    np.testing.assert_allclose(merged["accuracy"], merged["accuracy_pub"], atol=5e-5)
    # partial coverage is each model's own (GLM-5 answered 186 items)
    assert merged.set_index("model").loc["zai/glm-5", "n_items"] == 186
    assert (merged["n_items"] == merged["n_items_pub"]).all()


def test_realruns_pop_and_bootstrap(realruns_dir):
    tidy, _ = _published(realruns_dir)
    res = calibration_by_model(tidy, n_boot=300, rng=5)
    again = calibration_by_model(tidy, n_boot=300, rng=5)
    name = "anthropic/claude-opus-4-6@default"
    m = res.per_model[name]
    assert m.auroc_diff_ci == again.per_model[name].auroc_diff_ci  # seeded
    assert m.auroc_diff_ci[0] <= m.auroc_diff <= m.auroc_diff_ci[1]
    # Pop by hand: leave-one-out mean over the other models that answered each item
    own = tidy[tidy["model"] == name].set_index("item_id")
    # confidences are whole percents: exact integer sums give exactly tied means
    pct = (tidy["confidence"] * 100).round().astype(int)
    rest = tidy["model"] != name
    others = pct[rest].groupby(tidy["item_id"][rest]).sum() / rest.groupby(tidy["item_id"]).sum()
    expected = roc_auc_score(own["correct"], others.reindex(own.index))
    assert m.auroc_pop == pytest.approx(expected, abs=1e-12)
    # a model alone in a subset keeps its own metrics; other models' bootstrap streams are
    # independent of who else is present
    sub = tidy[tidy["model"].isin([name, "google/gemma-3-1b"])]
    solo = calibration_by_model(sub, n_boot=300, rng=5).per_model[name]
    assert solo.auroc_internal == m.auroc_internal and solo.brier == m.brier


def test_calibration_by_model_errors():
    df = pd.DataFrame(
        {"model": ["a", "a"], "item_id": ["1", "1"], "confidence": [1, 0], "correct": [1, 0]}
    )
    with pytest.raises(ValueError, match="repeat"):
        calibration_by_model(df)
    with pytest.raises(ValueError, match="missing column"):
        calibration_by_model(df.drop(columns="correct"))


def test_unparseable_and_ungraded_counted():
    df = pd.DataFrame(
        {
            "model": ["a"] * 5,
            "item_id": list("12345"),
            "confidence": [1.0, np.nan, 0.0, 1.0, 0.0],
            "correct": [1.0, 1.0, np.nan, 0.0, 0.0],
        }
    )
    m = calibration_by_model(df, n_boot=0).per_model["a"]
    assert (m.n_items, m.n_unparseable, m.n_ungraded) == (3, 1, 1)
    assert m.accuracy == pytest.approx(1 / 3) and m.yes_rate == pytest.approx(2 / 3)
    assert np.isnan(m.auroc_pop)  # nobody else answered


def test_internal_on_pop_items_and_bootstrap_p_never_zero():
    # Model "a" answers items 0-39 perfectly calibrated; "b" answers only items 0-19, with a
    # constant confidence, so Pop (for "a") exists on items 0-19 only and has AUROC 0.5.
    n = 40
    correct_a = np.tile([1.0, 0.0], n // 2)
    rows = [
        {"model": "a", "item_id": str(i), "confidence": correct_a[i], "correct": correct_a[i]}
        for i in range(n)
    ] + [{"model": "b", "item_id": str(i), "confidence": 0.7, "correct": 1.0} for i in range(20)]
    # break a's perfect ranking on items 20-39 only: there its confidence is flipped
    for r in rows[20:40]:
        r["confidence"] = 1.0 - r["correct"]
    df = pd.DataFrame(rows)
    m = calibration_by_model(df, n_boot=199, rng=0).per_model["a"]
    assert m.n_items == 40 and m.n_items_pop == 20
    assert m.auroc_internal == pytest.approx(0.5)  # 20 right, 20 flipped: by hand
    assert m.auroc_internal_on_pop == pytest.approx(1.0) and m.auroc_pop == pytest.approx(0.5)
    assert m.auroc_diff == pytest.approx(m.auroc_internal_on_pop - m.auroc_pop)
    # every one of the 199 resamples has diff 0.5 > 0: p = 2 (1 + 0) / (199 + 1), not 0
    assert m.auroc_diff_p == pytest.approx(2 / 200)


# --- rules pinned one at a time (expected values by hand, sklearn or tests/refstats.py) -----


def test_confidence_tetrachoric_counts_the_threshold_itself_as_yes():
    from tests.refstats import psych_raw_rho

    conf = np.array([0.5, 0.5, 0.5, 0.9, 0.1, 0.2, 0.8, 0.3, 0.65])
    correct = np.array([1, 1, 0, 1, 0, 0, 0, 1, 1])
    at_or_above = [1, 1, 1, 1, 0, 0, 1, 0, 1]  # confidence >= 0.5, written out
    strictly_above = [0, 0, 0, 1, 0, 0, 1, 0, 1]
    expected = psych_raw_rho(at_or_above, correct)
    assert abs(expected - psych_raw_rho(strictly_above, correct)) > 0.1  # the rule matters
    assert confidence_tetrachoric(conf, correct) == pytest.approx(expected, abs=1e-6)
    # a custom threshold is inclusive too: 0.65 >= 0.65
    at_65 = [0, 0, 0, 1, 0, 0, 1, 0, 1]
    assert confidence_tetrachoric(conf, correct, threshold=0.65) == pytest.approx(
        psych_raw_rho(at_65, correct), abs=1e-6
    )


def test_yes_rate_counts_one_half_as_yes():
    df = pd.DataFrame(
        {
            "model": ["a"] * 5,
            "item_id": list("12345"),
            "confidence": [0.5, 0.49, 0.51, 1.0, 0.0],
            "correct": [1.0, 0.0, 1.0, 1.0, 0.0],
        }
    )
    m = calibration_by_model(df, n_boot=0).per_model["a"]
    assert m.yes_rate == pytest.approx(3 / 5)  # 0.5, 0.51 and 1.0


def test_ece_rounds_before_the_floor_with_several_items():
    # 0.29 * 100 = 28.999999999999996: without the rounding 0.29 joins 0.285 in bin 28,
    # and the two items' errors cancel. Separate bins: (|1 - .29| + |0 - .285|) / 2.
    assert ece([0.29, 0.285], [1, 0], n_bins=100) == pytest.approx((0.71 + 0.285) / 2)
    # A confidence computed as 0.7 - 0.4 = 0.29999999999999993 belongs to [.3, .4).
    v = 0.7 - 0.4
    assert v < 0.3
    assert ece([v, 0.25], [1, 0]) == pytest.approx((abs(1 - v) + 0.25) / 2)
    # ... while a value clearly below the edge stays below it: one bin [.2, .3)
    assert ece([0.2999, 0.25], [1, 0]) == pytest.approx(abs(1 - (0.2999 + 0.25)) / 2)


def test_ece_last_bin_is_closed_at_one():
    # 1.0 goes into [0.9, 1.0] with 0.95, where their errors offset: one bin, |1 - 1.95| / 2.
    # (A bin of its own for 1.0 would give (|0 - 1| + |1 - 0.95|) / 2 = 0.525.)
    assert ece([1.0, 0.95], [0, 1]) == pytest.approx(0.95 / 2)
    # and 0.0 into [0, 0.1) with 0.05: |1 - 0.05| / 2, not (1 + 0.05) / 2
    assert ece([0.0, 0.05], [1, 0]) == pytest.approx(0.95 / 2)


def test_auroc_ties_count_one_half_without_shared():
    # Twin of the R midrank reference (which needs ../shared): every (positive, negative)
    # pair enumerated by hand, a tie counting 1/2.
    from tests.refstats import midrank_auroc

    score = [0.2, 0.5, 0.5, 0.8, 0.5, 0.2]
    label = [0, 0, 1, 1, 1, 1]
    # positives .5 .8 .5 .2 vs negatives .2 .5: (1 + .5) + 2 + (1 + .5) + (.5 + 0) = 5.5 / 8
    assert midrank_auroc(score, label) == pytest.approx(5.5 / 8)
    assert auroc(score, label) == pytest.approx(5.5 / 8)
    df = pd.DataFrame(
        {"model": "a", "item_id": list("123456"), "confidence": score, "correct": label}
    )
    assert calibration_by_model(df, n_boot=0).per_model["a"].auroc_internal == pytest.approx(
        5.5 / 8
    )


def _two_models(n: int, seed: int):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(float)
    own = np.clip(np.round(0.5 + 0.25 * (y - 0.5) + 0.3 * rng.normal(size=n), 2), 0, 1)
    other = np.clip(np.round(0.5 + 0.15 * (y - 0.5) + 0.3 * rng.normal(size=n), 2), 0, 1)
    ids = [str(i) for i in range(n)]
    return pd.DataFrame(
        {
            "model": ["a"] * n + ["b"] * n,
            "item_id": ids + ids,
            "confidence": np.r_[own, other],
            "correct": np.r_[y, (rng.random(n) < 0.5).astype(float)],
        }
    )


def test_internal_minus_pop_bootstrap_p_value_by_hand():
    # The paired item bootstrap redone with sklearn on explicitly resampled items, from the
    # documented per-model stream (SeedSequence([seed, crc32(model)]), one (B, n) draw).
    import zlib

    n, b, seed = 40, 199, 4
    df = _two_models(n, seed=11)
    m = calibration_by_model(df, n_boot=b, rng=seed).per_model["a"]
    c = df["confidence"].to_numpy()[:n]
    pop = df["confidence"].to_numpy()[n:]  # the only other model
    y = df["correct"].to_numpy()[:n]
    rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(b"a")]))
    idx = rng.integers(0, n, size=(b, n))
    diffs = []
    for row in idx:
        if 0 < y[row].sum() < n:
            diffs.append(roc_auc_score(y[row], c[row]) - roc_auc_score(y[row], pop[row]))
    diffs = np.array(diffs)
    low = (1 + (diffs <= 0).sum()) / (diffs.size + 1)
    high = (1 + (diffs >= 0).sum()) / (diffs.size + 1)
    expected = min(1.0, 2 * min(low, high))
    assert 0.05 < expected < 0.95  # not an edge case: both tails count
    assert m.auroc_diff_p == pytest.approx(expected, abs=1e-12)
    assert m.auroc_diff == pytest.approx(roc_auc_score(y, c) - roc_auc_score(y, pop))
    np.testing.assert_allclose(m.auroc_diff_ci, np.quantile(diffs, [0.025, 0.975]), atol=1e-12)


def test_internal_equal_to_pop_has_p_value_one():
    # Model a states exactly what b states: every resample's difference is exactly 0, both
    # counts include it, and the two-sided p-value is 1 (not 2 / (B + 1)).
    df = _two_models(30, seed=2)
    df.loc[df["model"] == "a", "confidence"] = df.loc[df["model"] == "b", "confidence"].to_numpy()
    m = calibration_by_model(df, n_boot=99, rng=0).per_model["a"]
    assert m.auroc_diff == 0.0
    assert m.auroc_diff_p == 1.0
    assert m.auroc_diff_ci == (0.0, 0.0)


def _item_level_diffs(conf, pop, y, n_boot, rng):
    """Reference: the paired bootstrap drawn item by item (Mann-Whitney midrank AUROC).

    Each resample's AUROC is computed from SciPy's average ranks,
    ``(rank sum of positives - n1 (n1 + 1) / 2) / (n1 n0)``, all resamples at once.
    """
    from scipy.stats import rankdata

    idx = rng.integers(0, y.size, size=(n_boot, y.size))
    yy = y[idx]
    n1 = yy.sum(axis=1)
    n0 = y.size - n1

    def auc(score):
        ranks = rankdata(score[idx], axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ((ranks * yy).sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)

    out = auc(conf) - auc(pop)
    out[(n1 == 0) | (n0 == 0)] = np.nan
    return out


def _auc_from_counts(score, y, w):
    """Midrank AUROC of items with multiplicities w (by hand: pairs, ties count 1/2)."""
    pos, neg = w * (y == 1), w * (y == 0)
    if pos.sum() == 0 or neg.sum() == 0:
        return math.nan
    gt = (score[:, None] > score[None, :]) + 0.5 * (score[:, None] == score[None, :])
    return float(pos @ gt @ neg / (pos.sum() * neg.sum()))


def test_cell_count_bootstrap_has_the_item_bootstrap_law_by_enumeration():
    # 8 items in 4 cells (so the cell-count path runs). The item bootstrap draws the counts of
    # the 8 items from Multinomial(8, 1/8 each): every one of the 6,435 count vectors, with
    # its exact probability, gives the exact law of the paired difference.
    import itertools

    from scipy import stats as sstats

    from metacog_metrics.calibration import _paired_auroc_bootstrap

    conf = np.array([0.9, 0.9, 0.6, 0.6, 0.9, 0.9, 0.3, 0.3])
    pop = np.array([0.5, 0.5, 0.5, 0.5, 0.7, 0.7, 0.7, 0.7])
    y = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    exact: dict[float | str, float] = {}
    for bars in itertools.combinations(range(15), 7):  # compositions of 8 into 8 parts
        edges = np.array([-1, *bars, 15])
        w = np.diff(edges) - 1
        prob = sstats.multinomial.pmf(w, 8, np.full(8, 1 / 8))
        a, b = _auc_from_counts(conf, y, w), _auc_from_counts(pop, y, w)
        key = "nan" if math.isnan(a) else round(a - b, 9)
        exact[key] = exact.get(key, 0.0) + prob
    assert sum(exact.values()) == pytest.approx(1.0)
    draws = _paired_auroc_bootstrap(conf, pop, y, 60_000, np.random.default_rng(1))
    keys = sorted(k for k in exact if k != "nan")
    observed = np.array([np.sum(np.round(draws, 9) == k) for k in keys] + [np.isnan(draws).sum()])
    assert observed.sum() == draws.size  # every draw is a value of the exact law
    expected = np.array([exact[k] for k in keys] + [exact.get("nan", 0.0)]) * draws.size
    keep = expected > 0
    assert len(keys) >= 5
    assert sstats.chisquare(observed[keep], expected[keep] * observed[keep].sum()
                            / expected[keep].sum()).pvalue > 1e-3  # fmt: skip


@pytest.mark.parametrize("levels", [2, 11])
def test_cell_count_bootstrap_matches_item_bootstrap_moments(levels):
    # 400 items on a few confidence and population levels: the cell-count draws and the
    # item-level reference agree in mean and sd within Monte Carlo error.
    from metacog_metrics.calibration import _paired_auroc_bootstrap

    rng = np.random.default_rng(3)
    n = 400
    y = (rng.random(n) < 0.6).astype(float)
    conf = np.round(np.clip(0.5 + 0.3 * (y - 0.5) + rng.normal(0, 0.3, n), 0, 1) * (levels - 1))
    pop = np.round(np.clip(0.5 + 0.1 * (y - 0.5) + rng.normal(0, 0.2, n), 0, 1) * 6) / 6
    a = _paired_auroc_bootstrap(conf, pop, y, 4000, np.random.default_rng(4))
    b = _item_level_diffs(conf, pop, y, 4000, np.random.default_rng(5))
    se = np.sqrt(a.var() / a.size + b.var() / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se
    assert abs(a.std() / b.std() - 1) < 0.08  # sd of an sd estimate ~ 1/sqrt(2 * 4000)


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


def _one_model(c, y, model="a"):
    ids = [str(i) for i in range(len(c))]
    return pd.DataFrame({"model": model, "item_id": ids, "confidence": c, "correct": y})


def test_per_model_metrics_by_hand_with_three_bins():
    c = np.array([0.1, 0.4, 0.45, 0.7, 0.9, 0.95])
    y = np.array([0, 1, 0, 1, 1, 0])
    m = calibration_by_model(_one_model(c, y), n_boot=0, n_bins=3).per_model["a"]
    assert m.mean_confidence == pytest.approx(3.5 / 6)
    assert m.brier == pytest.approx(brier_score_loss(y, c))
    # [0, 1/3): .1 vs 0; [1/3, 2/3): .85 vs 1; [2/3, 1]: 2.55 vs 2
    assert m.ece == pytest.approx((0.1 + 0.15 + 0.55) / 6)
    # equal mass, three bins of two levels: {.1, .4}, {.45, .7}, {.9, .95}
    assert m.ece_equal_mass == pytest.approx((0.5 + 0.15 + 0.85) / 6)
    # accepted in decreasing confidence: errors 1, 1, 1, 2, 2, 3 after 1..6 items
    assert m.aurc == pytest.approx((1 + 1 / 2 + 1 / 3 + 2 / 4 + 2 / 5 + 3 / 6) / 6)
    # the oracle accepts the three correct items first: risks 0, 0, 0, 1/4, 2/5, 3/6
    oracle = (1 / 4 + 2 / 5 + 3 / 6) / 6
    assert m.eaurc == pytest.approx(m.aurc - oracle)
    # the default ten bins give another ECE on these items
    assert calibration_by_model(_one_model(c, y), n_boot=0).per_model["a"].ece == pytest.approx(
        (0.1 + 0.15 + 0.3 + 0.85) / 6
    )


def test_a_model_without_graded_items_has_nan_metrics():
    df = pd.concat(
        [
            _one_model([0.2, 0.9], [0, 1]),
            _one_model([np.nan, 1.0], [1, np.nan], model="z"),
        ]
    )
    m = calibration_by_model(df, n_boot=50).per_model["z"]
    assert m.to_dict() == {
        "model": "z", "n_items": 0, "n_unparseable": 1, "n_ungraded": 1, "accuracy": None,
        "yes_rate": None, "mean_confidence": None, "auroc_internal": None, "auroc_pop": None,
        "n_items_pop": 0, "auroc_diff": None, "auroc_diff_ci": [None, None],
        "auroc_diff_p": None, "brier": None, "ece": None, "ece_equal_mass": None,
        "aurc": None, "eaurc": None, "auroc_internal_on_pop": None,
    }  # fmt: skip
    floats = [v for k, v in vars(m).items() if k not in ("model", "auroc_diff_ci")]
    assert all(isinstance(v, int) or math.isnan(v) for v in floats)
    assert all(math.isnan(v) for v in m.auroc_diff_ci)
    # one graded item is a model with one item, not an empty one
    one = calibration_by_model(_one_model([0.8], [1]), n_boot=0).per_model["a"]
    assert (one.n_items, one.accuracy, one.brier) == (1, 1.0, pytest.approx(0.04))


def test_no_bootstrap_leaves_nan_interval_and_one_draw_gives_one():
    df = _two_models(30, seed=3)
    none = calibration_by_model(df, n_boot=0).per_model["a"]
    assert all(math.isnan(v) for v in none.auroc_diff_ci) and math.isnan(none.auroc_diff_p)
    one = calibration_by_model(df, n_boot=1, rng=0).per_model["a"]
    low, high = one.auroc_diff_ci
    assert low == high and np.isfinite(low)
    assert one.auroc_diff_p == pytest.approx(min(1.0, 2 * 1 / 2))  # 2 min(1, 2) / 2, clipped


def test_internal_below_pop_takes_the_p_value_from_the_upper_tail():
    # The by-hand p-value again, with the roles swapped so that Internal is mostly below Pop:
    # the count of draws >= 0 is the smaller one.
    import zlib

    n, b, seed = 40, 199, 4
    df = _two_models(n, seed=11)
    a, other = (df["model"] == "a").to_numpy(), (df["model"] == "b").to_numpy()
    conf = df["confidence"].to_numpy().copy()
    conf[a], conf[other] = df["confidence"].to_numpy()[other], df["confidence"].to_numpy()[a]
    df["confidence"] = conf
    m = calibration_by_model(df, n_boot=b, rng=seed).per_model["a"]
    c, pop, y = conf[a], conf[other], df["correct"].to_numpy()[a]
    rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(b"a")]))
    diffs = []
    for row in rng.integers(0, n, size=(b, n)):
        if 0 < y[row].sum() < n:
            diffs.append(roc_auc_score(y[row], c[row]) - roc_auc_score(y[row], pop[row]))
    diffs = np.array(diffs)
    low = (1 + (diffs <= 0).sum()) / (diffs.size + 1)
    high = (1 + (diffs >= 0).sum()) / (diffs.size + 1)
    assert high < low  # the upper tail decides
    assert m.auroc_diff_p == pytest.approx(min(1.0, 2 * high), abs=1e-12)


def test_item_bootstrap_draws_are_the_documented_resamples():
    # Real-valued scores (more cells than half the items): each draw resamples the items with
    # rng.integers(0, n, (B, n)), in order.
    from metacog_metrics.calibration import _paired_auroc_bootstrap

    rng = np.random.default_rng(8)
    n, b = 30, 40
    y = (rng.random(n) < 0.5).astype(float)
    conf, pop = rng.random(n), rng.random(n)
    draws = _paired_auroc_bootstrap(conf, pop, y, b, np.random.default_rng(3))
    idx = np.random.default_rng(3).integers(0, n, size=(b, n))
    expected = [
        roc_auc_score(y[i], conf[i]) - roc_auc_score(y[i], pop[i]) if 0 < y[i].sum() < n else np.nan
        for i in idx
    ]
    np.testing.assert_allclose(draws, expected, atol=1e-12)


def test_cell_bootstrap_draws_are_multinomial_counts_of_the_cells():
    # Few cells: each draw is rng.multinomial(n, cell shares) over the occupied (confidence,
    # population, correct) cells in sorted order, and the AUROCs of those counts.
    from metacog_metrics.calibration import _paired_auroc_bootstrap

    conf = np.array([0.9, 0.9, 0.6, 0.6, 0.9, 0.9, 0.3, 0.3])
    pop = np.array([0.5, 0.5, 0.5, 0.5, 0.7, 0.7, 0.7, 0.7])
    y = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    # the cells sorted by (confidence, population, correct), two items each
    cell_conf = np.array([0.3, 0.6, 0.9, 0.9])
    cell_pop = np.array([0.7, 0.5, 0.5, 0.7])
    cell_y = np.array([0.0, 1.0, 1.0, 0.0])
    draws = _paired_auroc_bootstrap(conf, pop, y, 60, np.random.default_rng(5))
    counts = np.random.default_rng(5).multinomial(8, np.full(4, 0.25), size=60)
    expected = [
        _auc_from_counts(cell_conf, cell_y, w) - _auc_from_counts(cell_pop, cell_y, w)
        for w in counts
    ]
    np.testing.assert_allclose(draws, expected, atol=1e-12)


@pytest.mark.parametrize("cells", ["item", "cell"])
def test_bootstrap_in_several_chunks_continues_the_stream(cells):
    # More draws than one chunk holds (10^6 weights): the first chunk is the draw of a run
    # that asked for that many only, and every draw is a difference of two AUROCs.
    from metacog_metrics.calibration import _paired_auroc_bootstrap

    rng = np.random.default_rng(2)
    if cells == "item":  # 5,000 real-valued items: 200 draws a chunk
        n, b, first = 5000, 450, 200
        conf, pop = rng.random(n), rng.random(n)
    else:  # 40 x 25 levels x 2 outcomes: ~2,000 cells over 4,000 items, 500 draws a chunk
        n, b, first = 4000, 1200, 500
        conf = np.repeat(np.arange(40), 100) / 40.0
        pop = np.tile(np.arange(25), 160) / 25.0
    y = (rng.random(n) < 0.5).astype(float)
    if cells == "cell":
        y[:80] = 1.0  # every (conf, pop) combination appears with both outcomes
        y[80:160] = 0.0
    many = _paired_auroc_bootstrap(conf, pop, y, b, np.random.default_rng(9))
    few = _paired_auroc_bootstrap(conf, pop, y, first, np.random.default_rng(9))
    assert many.shape == (b,) and np.all(np.abs(many) <= 1)
    np.testing.assert_array_equal(many[:first], few)
    assert np.unique(many).size > b // 2  # later chunks are fresh draws


def test_auroc_of_one_positive_and_one_negative():
    m = calibration_by_model(_one_model([0.2, 0.8], [0, 1]), n_boot=0).per_model["a"]
    assert m.auroc_internal == 1.0


def test_aurc_takes_any_real_score_and_nan_without_items():
    # decreasing score: correct (risk 0), then wrong (risk 1/2)
    assert aurc([-1.0, 2.0], [0, 1]) == pytest.approx(0.25)
    assert eaurc([-1.0, 2.0], [0, 1]) == pytest.approx(0.0)
    assert aurc([0.3], [0]) == 1.0 and eaurc([0.3], [0]) == 0.0
    assert math.isnan(aurc([], [])) and math.isnan(eaurc([np.nan], [1]))


def test_confidence_tetrachoric_wants_probabilities():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        confidence_tetrachoric([1.5, 0.2, 0.7], [1, 0, 1])


def test_calibration_by_model_defaults_and_settings():
    df = _two_models(20, seed=5)
    res = calibration_by_model(df)
    assert (res.n_boot, res.confidence_level, res.n_bins, res.seed) == (1000, 0.95, 10, 0)
    m = res.per_model["a"]
    again = calibration_by_model(df, n_boot=1000, n_bins=10, rng=0).per_model["a"]
    assert m.auroc_diff_ci == again.auroc_diff_ci and m.ece == again.ece
    other = calibration_by_model(df, n_boot=30, confidence_level=0.8, n_bins=4, rng=7)
    assert (other.n_boot, other.confidence_level, other.n_bins, other.seed) == (30, 0.8, 4, 7)
    # a Generator or a SeedSequence is accepted (no seed to record); the same SeedSequence
    # gives the same draws
    gen = calibration_by_model(df, n_boot=30, rng=np.random.default_rng(1))
    assert gen.seed is None and np.isfinite(gen.per_model["a"].auroc_diff_p)
    ss = [calibration_by_model(df, n_boot=30, rng=np.random.SeedSequence(4)) for _ in range(2)]
    assert ss[0].seed is None
    assert ss[0].per_model["a"].auroc_diff_ci == ss[1].per_model["a"].auroc_diff_ci
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(
            ValueError, match=f"^confidence_level must be in \\(0, 1\\), got {level}$"
        ):
            calibration_by_model(df, confidence_level=level)


def test_calibration_by_model_names_are_strings():
    # int and str spellings of a model or an item are the same one
    df = pd.DataFrame(
        {
            "model": [1, 1, 1, "2", "2", "2"],
            "item_id": [1, 2, 3, "1", "2", "3"],
            "confidence": [0.9, 0.2, 0.6, 0.8, 0.3, 0.1],
            "correct": [1, 0, 1, 1, 0, 0],
        }
    )
    res = calibration_by_model(df, n_boot=0)
    assert res.models == ("1", "2")
    assert res.per_model["1"].n_items_pop == 3
    # population_confidence itself groups by the items' text (1 and "1" are one item)
    mixed = pd.DataFrame(
        {"model": list("aabb"), "item_id": [1, "q7", "1", "q7"], "confidence": [0.9, 0.2, 0.4, 0.6]}
    )
    np.testing.assert_allclose(population_confidence(mixed), [0.4, 0.6, 0.9, 0.2])


def test_calibration_by_model_repeat_message_and_object_columns():
    df = pd.DataFrame(
        {
            "model": ["a", "a", "b", "b", "b"],
            "item_id": ["1", "1", "2", "2", "3"],
            "confidence": [1, 0, 1, 0, 1],
            "correct": [1, 0, 1, 0, 1],
        }
    )
    message = (
        "calibration_by_model: 4 rows repeat a (model, item_id), e.g. model 'a' item '1'; "
        "pass one benchmark, probe and confidence kind at a time"
    )
    with pytest.raises(ValueError, match="^" + __import__("re").escape(message) + "$"):
        calibration_by_model(df)
    # confidences and grades as Python objects with None (as a JSON log gives them)
    obj = pd.DataFrame(
        {
            "model": "a",
            "item_id": list("1234"),
            "confidence": pd.Series([0.9, None, 0.2, 0.7], dtype=object),
            "correct": pd.Series([1, 1, None, 0], dtype=object),
        }
    )
    m = calibration_by_model(obj, n_boot=0).per_model["a"]
    assert (m.n_items, m.n_unparseable, m.n_ungraded) == (2, 1, 1)


def test_item_path_bootstrap_is_unchanged_for_the_same_seed():
    # Real-valued population means (a level per item): the items are drawn one by one, and
    # each resample's AUROCs come from its counts over (level, correctness). The draws are
    # the generator's, as before, and the arithmetic is integer up to the last division, so
    # the result equals, to the last bit, the weights-per-item computation it replaced.
    from metacog_metrics.calibration import _paired_auroc_bootstrap, _weighted_auc

    rng = np.random.default_rng(8)
    n = 300
    y = (rng.random(n) < 0.7).astype(float)
    conf = np.round(rng.random(n) * 20) / 20
    pop = value_ties(rng.random(n))
    got = _paired_auroc_bootstrap(conf, pop, y, 2500, np.random.default_rng(9))
    lev_c = np.unique(conf, return_inverse=True)[1]
    lev_p = np.unique(pop, return_inverse=True)[1]
    gen, want = np.random.default_rng(9), []
    chunk = 1_000_000 // n
    for start in range(0, 2500, chunk):
        b = min(chunk, 2500 - start)
        idx = gen.integers(0, n, size=(b, n))
        flat = (np.arange(b)[:, None] * n + idx).ravel()
        w = np.bincount(flat, minlength=b * n).reshape(b, n).astype(float)
        want.append(_weighted_auc(lev_c, y, w) - _weighted_auc(lev_p, y, w))
    np.testing.assert_array_equal(got, np.concatenate(want))
    ref = _item_level_diffs(conf, pop, y, 300, np.random.default_rng(9))
    np.testing.assert_allclose(got[:300], ref, atol=1e-12)  # the same resamples as sklearn's


@pytest.mark.parametrize("n_levels", [2, 60])
def test_compiled_item_counting_equals_numpy_to_the_last_bit(monkeypatch, n_levels):
    # The items path counts each resample with the compiled kernel when numba is there, else
    # with NumPy's bincounts: the same resamples, the same doubles (NaN where a resample lacks
    # a class: 12 items, 2 of them positive).
    from metacog_metrics.calibration import _compiled_bootstrap, _paired_auroc_bootstrap

    if _compiled_bootstrap() is None:
        unavailable("numba (the fast extra)")
    rng = np.random.default_rng(11)
    for n, positives in [(12, 2), (900, 500)]:
        y = np.zeros(n)
        y[rng.choice(n, positives, replace=False)] = 1.0
        conf = rng.integers(0, n_levels, n) / n_levels
        pop = value_ties(rng.random(n))
        compiled = _paired_auroc_bootstrap(conf, pop, y, 700, np.random.default_rng(4))
        monkeypatch.setenv("METACOG_NO_NUMBA", "1")
        assert _compiled_bootstrap() is None
        plain = _paired_auroc_bootstrap(conf, pop, y, 700, np.random.default_rng(4))
        monkeypatch.delenv("METACOG_NO_NUMBA")
        np.testing.assert_array_equal(compiled, plain)
        assert np.isnan(compiled).any() == (n == 12)


def test_many_cells_are_drawn_item_by_item_where_that_is_cheaper():
    # 2 confidence x 300 population levels x 2 outcomes = 1,200 cells over 3,000 items: fewer
    # than half the items, but a multinomial over 1,200 cells costs more than 3,000 item
    # draws, so the resamples are the items' (rng.integers), as for real-valued scores.
    from metacog_metrics.calibration import _draw_cells, _paired_auroc_bootstrap

    n = 3000
    conf = np.tile([0.0, 1.0], n // 2)
    pop = np.repeat(np.arange(300), n // 300) / 300.0
    y = (np.arange(n) // 2 % 2).astype(float)  # both outcomes in every (conf, pop) cell
    cells = np.unique(np.stack([conf, pop, y]), axis=1).shape[1]
    assert cells == 1200 and not _draw_cells(cells, n) and _draw_cells(cells, 40 * cells)
    draws = _paired_auroc_bootstrap(conf, pop, y, 30, np.random.default_rng(3))
    idx = np.random.default_rng(3).integers(0, n, size=(30, n))
    expected = [roc_auc_score(y[i], conf[i]) - roc_auc_score(y[i], pop[i]) for i in idx]
    np.testing.assert_allclose(draws, expected, atol=1e-12)


def test_brier_score_equals_sklearn_to_the_last_bit():
    from sklearn.metrics import brier_score_loss

    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 150, 4000):
        for _ in range(20):
            y = (rng.random(n) < 0.6).astype(float)
            c = np.round(rng.random(n), 2) if n % 2 else rng.random(n)
            assert brier_score(c, y) == brier_score_loss(y, c, labels=[0, 1])


def test_calibration_does_not_depend_on_the_threads():
    rng = np.random.default_rng(6)
    rows = [
        (f"m{m}", f"q{i}", rng.integers(0, 21) / 20, float(rng.random() < 0.6))
        for m in range(5)
        for i in range(120)
    ]
    df = pd.DataFrame(rows, columns=["model", "item_id", "confidence", "correct"])
    one = calibration_by_model(df, n_boot=200, rng=3, workers=1).table
    two = calibration_by_model(df, n_boot=200, rng=3, workers=3).table
    pd.testing.assert_frame_equal(one, two)


def test_input_errors_name_the_problem():
    for call in (auroc, brier_score, ece):
        with pytest.raises(ValueError, match=r"^confidence must be numeric$"):
            call(["high", "low"], [1, 0])
        with pytest.raises(ValueError, match=r"^correct must be numeric 0/1$"):
            call([0.2, 0.8], ["yes", "no"])
    with pytest.raises(ValueError, match=r"^confidence has infinite values$"):
        auroc([np.inf, 0.5], [1, 0])
    with pytest.raises(
        ValueError,
        match=r"^correct must be 0 or 1 \(NaN ignored\); got e\.g\. "
        r"\[2\.0, 3\.0, 4\.0, 5\.0, 6\.0\]$",
    ):
        auroc(np.linspace(0, 1, 8), [2, 3, 4, 5, 6, 7, 1, 0])


def test_more_models_than_items_are_no_repeats_and_the_first_repeat_is_named():
    # 3 models x 2 items: every (model, item) once; a cell code that mixed models with items
    # (model / items + item) would call model c's item 1 a repeat of model a's item 2
    df = pd.DataFrame(
        {
            "model": list("aabbcc"),
            "item_id": ["1", "2"] * 3,
            "confidence": [0.9, 0.2, 0.8, 0.3, 0.7, 0.1],
            "correct": [1, 0, 1, 1, 0, 0],
        }
    )
    res = calibration_by_model(df, n_boot=0)
    assert sorted(res.per_model) == ["a", "b", "c"]
    assert res.per_model["a"].auroc_internal == 1.0 and res.per_model["c"].accuracy == 0.0
    # repeats interleaved: the message names the first repeated row in record order
    rep = pd.DataFrame(
        {
            "model": ["b", "a", "b", "a"],
            "item_id": ["2", "1", "2", "1"],
            "confidence": [1, 0, 1, 0],
            "correct": [1, 0, 1, 0],
        }
    )
    with pytest.raises(ValueError, match=r"e\.g\. model 'b' item '2';"):
        calibration_by_model(rep)


@pytest.mark.parametrize("n_levels", [3, 400])  # cell counts / items drawn one by one
def test_level_codes_with_gaps_give_the_same_aurocs_and_draws(n_levels):
    """A model's level codes restricted to the items with a population confidence have gaps;
    the AUROC from them equals sklearn's, and the bootstrap draws equal those of the scores'
    own dense levels (same cells in the same order)."""
    from metacog_metrics.calibration import (
        _levels_auroc,
        _paired_auroc_bootstrap,
        _paired_level_bootstrap,
    )

    rng = np.random.default_rng(11)
    n = 300
    y = (rng.random(n) < 0.55).astype(float)
    conf = rng.integers(0, n_levels, n) / n_levels + 0.2 * y
    pop = rng.integers(0, 7, n) / 7.0
    dense_c = np.unique(conf, return_inverse=True)[1]
    dense_p = np.unique(pop, return_inverse=True)[1]
    gaps_c, gaps_p = 3 * dense_c + 5, 2 * dense_p  # order kept, levels spread out
    assert _levels_auroc(gaps_c, y) == pytest.approx(roc_auc_score(y, conf), abs=1e-15)
    assert _levels_auroc(gaps_p, y) == pytest.approx(roc_auc_score(y, pop), abs=1e-15)
    a = _paired_level_bootstrap(gaps_c, gaps_p, y, 200, np.random.default_rng(2))
    b = _paired_auroc_bootstrap(conf, pop, y, 200, np.random.default_rng(2))
    np.testing.assert_array_equal(a, b)
