"""Recovery: the analysis finds what the generative model planted.

With the ``paper`` preset the full analysis (``analyze_records``) must find the paper's regime:
a dominant confidence factor, an inverted parabola of loadings over thresholds, mean pairwise
tau near 0 as the accuracy gap shrinks, the observed tau below the calibration-preserving null,
signal on math only where a reasoning model solves inline, and the factor alignment dropping on
the contentious items. With ``individuated`` it must find a significant private signal. The
detection test of the power analysis must keep its nominal false-positive rate over many seeds.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.analyze import analyze_records
from metacog_metrics.pairwise import joint_null_draws, pairwise_taus
from metacog_metrics.simulate import get_preset, simulate_arrays, simulate_records
from metacog_metrics.stratified import stratified_mean_tau_test
from metacog_tasks.sim import preset_params

SQUAD = ("squad", "prospective", "verbal_binary")
MATH = ("mathbench", "prospective", "verbal_binary")


def _analyze(preset: str, seed: int, benchmarks=("squad", "mathbench")):
    df = simulate_records(
        preset_params(preset), n_models=20, items_per_benchmark=1000, benchmarks=benchmarks,
        seed=seed,
    )  # fmt: skip
    return analyze_records(df, permutations=0, joint_permutations=200, n_boot=20, seed=0)


@pytest.fixture(scope="module")
def paper():
    return _analyze("paper", seed=1)


@pytest.fixture(scope="module")
def individuated():
    return _analyze("individuated", seed=1, benchmarks=("squad",))


# --- paper ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [SQUAD, MATH])
def test_paper_has_one_dominant_confidence_factor(paper, key):
    eigen = paper.groups[key].confidence.eigen
    assert eigen.first_share > 0.35
    assert eigen.eigenvalues[0] > 5 * eigen.eigenvalues[1]


def test_paper_loadings_form_an_inverted_parabola_over_thresholds(paper):
    eigen = paper.groups[SQUAD].confidence.eigen
    fit = eigen.quadratic
    assert fit.coef[2] < 0  # inverted
    assert fit.r2 > 0.5 and fit.p_value < 0.01
    # The vertex lies inside the thresholds, so loadings fall on both sides of it.
    assert np.nanmin(eigen.thresholds) < fit.vertex < np.nanmax(eigen.thresholds)


def test_paper_mean_tau_vanishes_as_the_accuracy_gap_shrinks(paper):
    pw = paper.groups[SQUAD].pairwise
    curve = pw.delta_curve.table
    small = curve[(curve["delta"] <= 0.05) & (curve["n_pairs"] >= 5)]
    assert len(small) >= 2
    # Indistinguishable from the base-rate-matched null (centred on 0) at small gaps ...
    assert (small["mean_tau"] >= small["base_rate_null_low"]).all()
    assert (small["mean_tau"] <= small["base_rate_null_high"]).all()
    assert small["mean_tau"].abs().max() < 0.03
    # ... while over all pairs the mean is small but larger: it grows with the gap.
    assert 0 < pw.mean_tau < 0.05
    assert pw.mean_tau > small["mean_tau"].iloc[0]


def test_paper_observed_tau_is_below_the_calibration_preserving_null(paper):
    null = paper.groups[SQUAD].pairwise.nulls["calibration_preserving"]
    assert null.observed < null.ci[0]
    assert null.mean > 0.15  # centred far from 0, as shared difficulty predicts
    assert null.p_less <= 1 / (null.n_draws + 1) + 1e-12


def test_paper_math_signal_comes_from_reasoning_models_solving_inline(paper):
    types = paper.groups[MATH].pairwise.pair_types
    r_nr, nr_nr = types["R-NR"], types["NR-NR"]
    assert r_nr.mean_tau > 0.2 and r_nr.p_value["base_rate"] < 0.05
    assert abs(nr_nr.mean_tau) < 0.05
    assert r_nr.mean_tau > 5 * abs(nr_nr.mean_tau)
    # Off math, reasoning/non-reasoning pairs look like the rest.
    squad_types = paper.groups[SQUAD].pairwise.pair_types
    assert abs(squad_types["R-NR"].mean_tau) < 0.05


def test_paper_alignment_drops_on_contentious_items(paper):
    align = paper.groups[SQUAD].alignment
    assert align.all.r > 0.5
    assert align.contentious.r < align.all.r - 0.1


# --- individuated ----------------------------------------------------------------------------


def test_individuated_preset_has_a_significant_private_signal(individuated):
    pw = individuated.groups[SQUAD].pairwise
    base = pw.nulls["base_rate"]
    assert base.observed > base.ci[1] and base.p_greater <= 1 / (base.n_draws + 1) + 1e-12
    curve = pw.delta_curve.table
    small = curve[(curve["delta"] <= 0.05) & (curve["n_pairs"] >= 5)]
    assert (small["mean_tau"] > small["base_rate_null_high"]).all()  # survives delta -> 0
    conf = individuated.groups[SQUAD].matrices.confidence
    perf = individuated.groups[SQUAD].matrices.correct
    strat = stratified_mean_tau_test(conf, perf, permutations=99, rng=0)
    assert strat.p_value == pytest.approx(0.01)


# --- the detection test's size -------------------------------------------------------------------


def test_false_positive_rate_is_nominal_over_seeds():
    """At individuated = 0 the stratified test rejects at most at its level (binomial bound),
    and in the same setting it finds a planted signal."""
    reps, alpha = 120, 0.05
    null = simulate_arrays(get_preset("paper"), 10, 300, reps, rng=2024)
    rejections = 0
    for r in range(reps):
        res = stratified_mean_tau_test(null.conf[r], null.perf[r], permutations=99, rng=r)
        rejections += res.p_value <= alpha
    # Not significantly above nominal (one-sided binomial test at 1%).
    assert stats.binomtest(rejections, reps, alpha, alternative="greater").pvalue > 0.01
    signal = simulate_arrays(get_preset("paper", individuated=0.8), 10, 300, 30, rng=2024)
    found = sum(
        stratified_mean_tau_test(signal.conf[r], signal.perf[r], permutations=99, rng=r).p_value
        <= alpha
        for r in range(30)
    )
    assert found >= 20


def test_base_rate_null_is_no_detector_under_shared_difficulty():
    """Why the power analysis does not use the base-rate null: with no private signal it still
    'detects' one well above its level on many items (shared difficulty + able models saying
    yes more), while the stratified null stays within its level on the same replicates."""
    reps, alpha = 40, 0.05
    arr = simulate_arrays(get_preset("paper"), 20, 2000, reps, rng=11)
    base_hits = strat_hits = 0
    for r in range(reps):
        conf, perf = arr.conf[r].astype(float), arr.perf[r].astype(float)
        observed = np.nanmean(pairwise_taus(conf, perf))
        draws = np.nanmean(joint_null_draws(conf, perf, null="base_rate", n=99, rng=r), axis=1)
        base_hits += (1 + np.sum(draws >= observed)) / 100 <= alpha
        strat_hits += stratified_mean_tau_test(conf, perf, permutations=99, rng=r).p_value <= alpha
    assert stats.binomtest(base_hits, reps, alpha, alternative="greater").pvalue < 0.01
    assert stats.binomtest(strat_hits, reps, alpha, alternative="greater").pvalue > 0.01
