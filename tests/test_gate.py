"""The gate's statistics: metrics against independent references, matching, verdicts on the
simulated population (itself, sampling reruns, degraded confidence, mismatched items)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.metrics import brier_score_loss, roc_auc_score

from metacog_metrics import calibration
from metacog_metrics.gate import (
    DEFAULT_MARGINS,
    EXIT_CODES,
    GateConfig,
    GateConfigError,
    GateVerdict,
    PairedGroup,
    _bad_word,
    _Draft,
    _examples,
    _finish,
    _fmt,
    _holm,
    _mcnemar,
    _p_beyond,
    _short,
    _side,
    _undefined_why,
    _weights,
    gate_records,
    match_records,
)
from metacog_metrics.records import validate_records
from metacog_metrics.simulate import simulate_records
from metacog_tasks.sim import preset_params

BENCHES = ["squad", "mmlu_pro"]
FAST = GateConfig(n_boot=400)  # the default settings with fewer resamples


def _side_records(ss: int | None = None, items: int = 400, model: str = "m03", **overrides):
    params = preset_params("paper", **overrides)
    df = simulate_records(
        params, n_models=4, items_per_benchmark=items, benchmarks=BENCHES, seed=0,
        sampling_seed=ss, probes=("prospective", "numeric"),
    )  # fmt: skip
    return validate_records(df[df["model"] == model])


@pytest.fixture(scope="module")
def baseline() -> pd.DataFrame:
    return _side_records()


def _records(conf, correct, ids=None, model="m", **cols) -> pd.DataFrame:
    ids = ids if ids is not None else [f"q{i:03d}" for i in range(len(conf))]
    frame = pd.DataFrame({"model": model, "item_id": ids, "confidence": conf, "correct": correct})
    return validate_records(frame.assign(**cols))


# ------------------------------------------------------------------ small helpers, exactly


def test_the_words_of_the_reasons() -> None:
    assert [_bad_word(d) for d in ("higher", "lower", "two-sided")] == [
        "a drop",
        "a rise",
        "a change",
    ]
    assert _undefined_why("auroc") == _undefined_why("internal_pop_gap")
    assert _undefined_why("auroc") == "it needs both right and wrong items"
    assert _undefined_why("yes_rate") == "no parsed confidence"
    assert _undefined_why("accuracy") == "no graded item"
    assert _undefined_why("brier") == _undefined_why("ece")
    assert _undefined_why("brier") == "no item with a parsed confidence and a grade"
    letters = list("abcdefg")
    assert _examples(letters) == "'a', 'b', 'c', 'd', 'e' and 2 more"
    assert _examples(letters[:5]) == "'a', 'b', 'c', 'd', 'e'"
    assert _examples(["x"], 9) == "'x' and 4 more"
    assert _short("abcdefghijklm") == "abcdefghijklm"  # 13 characters: kept
    assert _short("abcdefghijklmn") == "abcdefghij..."
    assert _short(12) == "12"
    assert [_fmt(None), _fmt(math.nan), _fmt(math.inf)] == ["n/a"] * 3
    assert [_fmt(0.12345), _fmt(0.12345, True), _fmt(-0.5, True)] == ["0.123", "+0.123", "-0.500"]


def test_mcnemar_counts_discordant_graded_pairs_only() -> None:
    base = np.array([1, 1, 0, 0, np.nan, 1, 1, 0])
    cand = np.array([0, 1, 1, 0, 0, np.nan, 0, 0])
    got = _mcnemar(base, cand)  # right->wrong: items 0 and 6; wrong->right: item 2
    assert (got["worse"], got["better"]) == (2, 1)
    assert got["p"] == pytest.approx(1.0)  # two-sided binomial of 2 of 3
    assert got["p_worse"] == pytest.approx(0.5)  # P(X >= 2), X ~ Bin(3, 1/2)
    none = _mcnemar(np.array([1.0, 0.0]), np.array([1.0, 0.0]))
    assert none == {"worse": 0, "better": 0, "p": 1.0, "p_worse": 1.0}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"alpha": 0.0}, "alpha must lie in (0, 0.5), got 0.0"),
        ({"alpha": 0.5}, "alpha must lie in (0, 0.5), got 0.5"),
        ({"n_boot": 99}, "n_boot must be an integer >= 100, got 99"),
        ({"n_boot": 100.5}, "n_boot must be an integer >= 100, got 100.5"),
        ({"power": 1.0}, "power must lie in (0, 1), got 1.0"),
        ({"power": 0.0}, "power must lie in (0, 1), got 0.0"),
        ({"max_undefined": 0.51}, "max_undefined must lie in [0, 0.5], got 0.51"),
        ({"max_undefined": -0.1}, "max_undefined must lie in [0, 0.5], got -0.1"),
        ({"n_bins": 0}, "n_bins must be a positive integer, got 0"),
        ({"n_bins": 2.5}, "n_bins must be a positive integer, got 2.5"),
        ({"min_items": 1}, "min_items must be an integer >= 2, got 1"),
        ({"min_items": 2.5}, "min_items must be an integer >= 2, got 2.5"),
        ({"max_annotations": 0}, "max_annotations must be a positive integer, got 0"),
        ({"max_annotations": 1.5}, "max_annotations must be a positive integer, got 1.5"),
        ({"inconclusive": "maybe"}, "inconclusive must be 'pass' or 'fail', got 'maybe'"),
        ({"metrics": ()}, "metrics is empty"),
        ({"metrics": ("auroc",), "primary": "brier"}, "primary 'brier' is not among the tested"),
        ({"primary": "auroc_x"}, "unknown metric 'auroc_x' (did you mean 'auroc'?)"),
        ({"metrics": ("zzz",)}, "unknown metric 'zzz'; known: ['auroc',"),
        ({"margins": {"auroc": -0.01}}, "margins.auroc must be a number >= 0, got -0.01"),
        ({"margins": {"brier": float("inf")}}, "margins.brier must be a number >= 0, got inf"),
        ({"check": ("doc_hash", "nope")}, "check names unknown column(s) ['nope']; use"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(settings, message) -> None:
    with pytest.raises(GateConfigError) as err:
        GateConfig(**settings)
    assert str(err.value).startswith("gate config: ") and message in str(err.value)
    with pytest.raises(GateConfigError) as err:
        GateConfig.from_mapping(settings, source="ci/gate.yaml")
    assert str(err.value).startswith("ci/gate.yaml: gate config: ")


def test_settings_from_a_mapping() -> None:
    assert GateConfig.from_mapping(None) == GateConfig() == GateConfig.from_mapping({})
    cfg = GateConfig.from_mapping(
        {"metrics": "auroc", "check": "task_version", "benchmarks": ["squad", 7],
         "margins": {"auroc": 0.05}, "min_items": 2, "max_undefined": 0.5, "alpha": 0.49},
        source="g.yaml",
    )  # fmt: skip
    assert cfg.metrics == ("auroc",) and cfg.check == ("task_version",)
    assert cfg.benchmarks == ("squad", "7")
    assert cfg.margins == {**DEFAULT_MARGINS, "auroc": 0.05}  # the rest keep their defaults
    assert GateConfig(metrics=["auroc"], check=["doc_hash"]).metrics == ("auroc",)
    with pytest.raises(GateConfigError, match=r"^g.yaml: margins must be a mapping metric"):
        GateConfig.from_mapping({"margins": [0.1]}, source="g.yaml")
    with pytest.raises(GateConfigError, match=r"^g.yaml: unknown key\(s\) 'qqq_rrr', 'zzz'$"):
        GateConfig.from_mapping({"zzz": 1, "qqq_rrr": 2}, source="g.yaml")
    with pytest.raises(GateConfigError, match=r"^g.yaml: .*'<' not supported"):
        GateConfig.from_mapping({"alpha": "x"}, source="g.yaml")  # a TypeError, named


def test_a_refusal_is_a_verdict_with_exit_2() -> None:
    cfg = GateConfig(n_boot=300)
    v = GateVerdict.refused(
        ["a", "b"], cfg, warnings=["w"], baseline_model="B", candidate_model="C"
    )
    assert (v.status, v.exit_code, v.tests, v.refusals, v.warnings) == (
        "error",
        2,
        (),
        ("a", "b"),
        ("w",),
    )
    assert (v.baseline_model, v.candidate_model, v.config) == ("B", "C", cfg)
    assert v.config_fingerprint == cfg.fingerprint()
    assert v.headline() == "metacog gate: ERROR (exit 2): 2 problem(s) with the input"
    plain = GateVerdict.refused(["x"])
    assert plain.config == GateConfig() and plain.baseline_model is None and plain.warnings == ()
    assert plain.with_warnings(["y"]).warnings == ("y",)


def test_the_numbers_of_a_test_are_the_bootstrap_s() -> None:
    # the change, its standard error, p-value, Holm level, interval and detectable change,
    # recomputed here from the resamples and the normal distribution
    rng = np.random.default_rng(8)
    n = 60
    y_b = (rng.random(n) < 0.6).astype(float)
    y_c = y_b.copy()
    y_c[rng.random(n) < 0.15] = 1 - y_c[rng.random(n) < 0.15][0]
    c_b = np.clip(np.round(0.5 * y_b + rng.random(n) * 0.6, 1), 0, 1)
    c_c = np.clip(np.round(0.3 * y_c + rng.random(n) * 0.7, 1), 0, 1)
    cfg = GateConfig(n_boot=300, seed=5, metrics=("auroc", "brier", "yes_rate", "accuracy"))
    verdict = gate_records(_records(c_b, y_b), _records(c_c, y_c), cfg)
    tests = {t.metric: t for t in verdict.tests}
    w = next(_weights(n, 300, 5, "all/prospective/verbal_numeric", chunk=300))
    p = {}
    for m in ("auroc", "brier", "yes_rate"):
        t = tests[m]
        deltas = _side(m, w, c_c, y_c, None, 10) - _side(m, w, c_b, y_b, None, 10)
        assert t.se == pytest.approx(np.std(deltas, ddof=1), rel=1e-12)
        assert t.n_boot == 300 and t.n_undefined == 0
        one = np.ones((1, n))
        assert t.baseline == pytest.approx(_side(m, one, c_b, y_b, None, 10)[0])
        assert t.change == pytest.approx(t.candidate - t.baseline)
        margin = DEFAULT_MARGINS[m]
        if m == "auroc":
            p[m] = norm.cdf((t.change + margin) / t.se)
        elif m == "brier":
            p[m] = norm.sf((t.change - margin) / t.se)
        else:
            p[m] = 2 * min(
                norm.cdf((t.change + margin) / t.se), norm.sf((t.change - margin) / t.se)
            )
        assert t.p_value == pytest.approx(min(1.0, p[m]), rel=1e-9)
    p["accuracy"] = tests["accuracy"].p_value
    ranked = sorted(p, key=p.get)
    for rank, m in enumerate(ranked):
        t = tests[m]
        level = 0.05 / (len(ranked) - rank)
        tail = level / 2 if m == "yes_rate" else level
        assert t.ci_level == pytest.approx(1 - 2 * tail)
        z = norm.isf(tail)
        assert (t.ci_low, t.ci_high) == pytest.approx((t.change - z * t.se, t.change + z * t.se))
        assert t.detectable == pytest.approx(t.margin + (z + norm.ppf(0.8)) * t.se)
        holm = max(min(1.0, (len(ranked) - r) * p[ranked[r]]) for r in range(rank + 1))
        assert t.p_holm == pytest.approx(holm)


def test_accuracy_needs_mcnemar_to_confirm_a_drop() -> None:
    ids = [f"q{i}" for i in range(40)]
    y_base = np.array([1.0] * 20 + [0.0] * 20)
    y_cand = y_base.copy()
    y_cand[:3] = 0.0  # three right -> wrong: the bootstrap sees a drop, McNemar p = 1/8
    conf = np.tile([1.0, 0.0], 20)
    cfg = GateConfig(n_boot=500, alpha=0.1, metrics=("accuracy",), margins={"accuracy": 0.0})
    (acc,) = gate_records(_records(conf, y_base, ids), _records(conf, y_cand, ids), cfg).tests
    assert acc.ci_high < 0  # beyond the margin 0 by the bootstrap alone
    assert acc.verdict == "inconclusive" and acc.p_value == pytest.approx(0.125)
    assert (
        "McNemar's exact test does not confirm it (3 right->wrong vs 0 wrong->right, p = 0.125)"
        in acc.reason
    )
    assert "right->wrong, 0 wrong->right)" not in acc.reason  # the counts are said once


def test_undefined_resamples_up_to_the_allowed_share_do_not_stop_a_test() -> None:
    n = 30
    y = np.ones(n)
    y[:4] = 0.0  # four wrong items: (26/30)^30 = 1.4% of resamples lack a wrong one
    conf = np.linspace(0, 1, n)
    other = np.r_[conf[:6][::-1], conf[6:]]
    auroc = next(
        t
        for t in gate_records(_records(conf, y), _records(other, y), GateConfig(n_boot=1000)).tests
        if t.metric == "auroc"
    )
    assert 0 < auroc.n_undefined < 50 and "undefined" not in auroc.reason
    assert auroc.n_boot == 1000 - auroc.n_undefined
    strict = GateConfig(n_boot=1000, max_undefined=0.0)
    auroc0 = next(
        t for t in gate_records(_records(conf, y), _records(other, y), strict).tests
        if t.metric == "auroc"
    )  # fmt: skip
    pct = 100 * auroc0.n_undefined / 1000
    assert auroc0.reason == (
        f"auroc is undefined in {auroc0.n_undefined} of 1000 resamples ({pct:.1f}% > 0%: "
        "it needs both right and wrong items)"
    )
    assert math.isnan(auroc0.p_value) and auroc0.detectable is None
    # none undefined, max_undefined 0: decides
    y2 = np.r_[np.zeros(15), np.ones(15)]
    fine = gate_records(_records(conf, y2), _records(other, y2), strict)
    assert all(t.n_undefined == 0 and "undefined" not in t.reason for t in fine.tests)


def test_a_metric_undefined_on_the_candidate_only_is_named() -> None:
    conf = np.linspace(0, 1, 40)
    y = np.r_[np.zeros(20), np.ones(20)]
    verdict = gate_records(_records(conf, y), _records(conf, np.ones(40)), GateConfig(n_boot=200))
    auroc = next(t for t in verdict.tests if t.metric == "auroc")
    assert (
        auroc.reason == "auroc is undefined on the candidate (it needs both right and wrong items)"
    )
    assert auroc.verdict == "inconclusive" and math.isnan(auroc.ci_low)


def test_exactly_min_items_decides() -> None:
    conf = np.linspace(0, 1, 30)
    y = np.r_[np.zeros(15), np.ones(15)]
    other = np.r_[conf[:4][::-1], conf[4:]]
    at = gate_records(_records(conf, y), _records(other, y), GateConfig(n_boot=200, min_items=30))
    assert not any("min_items" in t.reason for t in at.tests)
    below = gate_records(
        _records(conf, y), _records(other, y), GateConfig(n_boot=200, min_items=31)
    )
    assert any(
        "only 30 matched item(s), fewer than min_items (31)" in t.reason for t in below.tests
    )


# ------------------------------------------------------------------ metrics vs references


def _data(rng: np.random.Generator, n: int = 200):
    conf = np.round(rng.random(n), 1)  # ties
    conf[rng.random(n) < 0.1] = np.nan
    y = (rng.random(n) < 0.3 + 0.5 * np.nan_to_num(conf)).astype(float)
    y[rng.random(n) < 0.05] = np.nan
    return conf, y


def test_unit_weights_match_sklearn_and_the_calibration_module() -> None:
    rng = np.random.default_rng(1)
    conf, y = _data(rng)
    ok = ~np.isnan(conf) & ~np.isnan(y)
    one = np.ones((1, conf.size))
    assert _side("auroc", one, conf, y, None, 10)[0] == pytest.approx(
        roc_auc_score(y[ok], conf[ok]), abs=1e-12
    )
    assert _side("brier", one, conf, y, None, 10)[0] == pytest.approx(
        brier_score_loss(y[ok], conf[ok]), abs=1e-12
    )
    assert _side("ece", one, conf, y, None, 10)[0] == pytest.approx(
        calibration.ece(conf, y, n_bins=10), abs=1e-12
    )
    assert _side("unparseable", one, conf, y, None, 10)[0] == np.isnan(conf).mean()
    assert _side("yes_rate", one, conf, y, None, 10)[0] == np.mean(conf[~np.isnan(conf)] >= 0.5)
    assert _side("accuracy", one, conf, y, None, 10)[0] == np.nanmean(y)


def test_bootstrap_counts_give_the_metric_of_the_resampled_items() -> None:
    rng = np.random.default_rng(2)
    conf, y = _data(rng, 120)
    pop = np.clip(np.nan_to_num(conf, nan=0.5) + rng.normal(0, 0.2, conf.size), 0, 1)
    w = next(_weights(conf.size, 5, seed=3, key="g", chunk=5))
    assert (w.sum(axis=1) == conf.size).all()
    for row in w:
        idx = np.repeat(np.arange(conf.size), row.astype(int))  # the resampled items, explicitly
        c, t, p = conf[idx], y[idx], pop[idx]
        ok = ~np.isnan(c) & ~np.isnan(t)
        got = _side("auroc", row[None], conf, y, None, 10)[0]
        assert got == pytest.approx(roc_auc_score(t[ok], c[ok]), abs=1e-12)
        gap = _side("internal_pop_gap", row[None], conf, y, pop, 10)[0]
        ref = roc_auc_score(t[ok], c[ok]) - roc_auc_score(t[ok], p[ok])
        assert gap == pytest.approx(ref, abs=1e-12)
        assert _side("ece", row[None], conf, y, None, 10)[0] == pytest.approx(
            calibration.ece(c, t), abs=1e-12
        )


def test_auroc_of_a_resample_with_one_class_is_undefined() -> None:
    conf = np.array([0.2, 0.8, 0.6])
    y = np.array([1.0, 1.0, 0.0])
    w = np.array([[1.0, 2.0, 0.0], [1.0, 1.0, 1.0]])
    out = _side("auroc", w, conf, y, None, 10)
    assert np.isnan(out[0]) and out[1] == pytest.approx(0.5)


def test_holm_matches_hand_computation() -> None:
    # p sorted 0.01, 0.02, 0.03, 0.5 -> 4*0.01, max(.04, 3*.02), max(.06, 2*.03), max(.06, .5)
    adj = _holm(np.array([0.03, 0.01, 0.5, 0.02]))
    assert adj.tolist() == pytest.approx([0.06, 0.04, 0.5, 0.06])


# ------------------------------------------------------------------ verdicts on the simulation


def test_a_run_against_itself_passes(baseline: pd.DataFrame) -> None:
    verdict = gate_records(baseline, baseline)
    assert verdict.status == "pass" and verdict.exit_code == 0
    assert all(t.verdict == "pass" and t.change == 0 for t in verdict.tests)
    # 2 benchmarks x (numeric: 5 per-kind metrics, binary: 4, ECE = Brier) + accuracy per
    # benchmark x probe
    assert len(verdict.tests) == 2 * (5 + 4) + 4
    binary = {t.metric for t in verdict.tests if t.confidence_kind == "verbal_binary"}
    assert binary == {"auroc", "brier", "yes_rate", "unparseable"}


def test_the_ece_of_binary_confidence_is_its_brier_score() -> None:
    # why the gate tests one of them on 0/1 confidence: equal on every resample
    rng = np.random.default_rng(5)
    conf = (rng.random(300) < 0.6).astype(float)
    conf[:9] = np.nan
    y = (rng.random(300) < 0.5).astype(float)
    w = next(_weights(300, 50, seed=1, key="b", chunk=50))
    assert np.allclose(_side("ece", w, conf, y, None, 10), _side("brier", w, conf, y, None, 10))


@pytest.mark.parametrize(
    ("change", "se", "direction", "margin", "expected"),
    [
        # P(Z <= (change + margin) / se), by the normal CDF
        (-0.10, 0.05, "higher", 0.03, norm.cdf((-0.10 + 0.03) / 0.05)),
        (0.00, 0.05, "higher", 0.03, norm.cdf(0.03 / 0.05)),
        # P(Z >= (change - margin) / se)
        (0.08, 0.02, "lower", 0.02, norm.sf((0.08 - 0.02) / 0.02)),
        (-0.02, 0.02, "lower", 0.02, norm.sf(-0.04 / 0.02)),
        # twice the smaller side
        (-0.15, 0.04, "two-sided", 0.05, 2 * norm.cdf((-0.15 + 0.05) / 0.04)),
        (0.12, 0.04, "two-sided", 0.05, 2 * norm.sf((0.12 - 0.05) / 0.04)),
        (0.0, 0.04, "two-sided", 0.05, 1.0),
        # a zero standard error: certain either way, even on the boundary itself
        (-0.05, 0.0, "higher", 0.03, 0.0),
        (0.0, 0.0, "higher", 0.03, 1.0),
        (-0.03, 0.0, "higher", 0.03, 0.5),
        (0.05, 0.0, "lower", 0.02, 0.0),
    ],
)
def test_p_value_of_a_change_beyond_the_margin(change, se, direction, margin, expected) -> None:
    assert _p_beyond(change, se, direction, margin) == pytest.approx(expected, rel=1e-9, abs=1e-15)


@given(
    change=st.floats(-0.5, 0.5),
    se=st.floats(1e-4, 0.2),
    margin=st.sampled_from([0.0, 0.02, 0.05]),
    level=st.floats(1e-5, 0.2),
    direction=st.sampled_from(["higher", "lower", "two-sided"]),
)
def test_p_value_and_interval_agree(change, se, margin, level, direction) -> None:
    # a failure at Holm level `level` <=> the interval of that level lies beyond the margin
    tail = level / 2 if direction == "two-sided" else level
    lo, hi = change - norm.isf(tail) * se, change + norm.isf(tail) * se
    beyond = {"higher": hi < -margin, "lower": lo > margin}.get(
        direction, hi < -margin or lo > margin
    )
    p = _p_beyond(change, se, direction, margin)
    if abs(p - level) > 1e-9:  # not on the boundary itself
        assert (p < level) == beyond


def test_a_large_family_can_still_fail(baseline) -> None:
    # more than alpha * (n_boot + 1) gated tests: a percentile p-value of 200 resamples is at
    # least 1/201, above Holm's first level alpha / m, so no percentile test could fail
    candidate = _side_records(ss=7, reading_noise_sd=4.0)
    verdict = gate_records(baseline, candidate, GateConfig(n_boot=200))
    assert sum(t.gated for t in verdict.tests) > 0.05 * 201
    assert verdict.exit_code == 1 and any(t.metric == "auroc" for t in verdict.failed)


def test_degraded_confidence_fails_on_auroc_with_a_readable_reason(baseline) -> None:
    candidate = _side_records(ss=7, reading_noise_sd=4.0)
    verdict = gate_records(baseline, candidate, FAST)
    assert verdict.status == "fail" and verdict.exit_code == EXIT_CODES["fail"] == 1
    failed = {(t.benchmark, t.metric) for t in verdict.failed}
    assert ("squad", "auroc") in failed
    # correctness does not depend on the reading noise: accuracy never fails
    assert not any(t.metric == "accuracy" for t in verdict.failed)
    auroc = next(t for t in verdict.failed if t.metric == "auroc")
    assert auroc.reason.startswith("regression: auroc")
    assert f"{auroc.baseline:.3f} -> {auroc.candidate:.3f}" in auroc.reason
    assert auroc.ci_high < -auroc.margin and auroc.p_holm <= 0.05


def test_a_shifted_threshold_fails_on_the_yes_rate(baseline) -> None:
    verdict = gate_records(baseline, _side_records(ss=7, threshold_mean=0.6), FAST)
    assert verdict.exit_code == 1
    assert {t.metric for t in verdict.failed} == {"yes_rate"}
    assert all(t.change < -t.margin for t in verdict.failed)


@pytest.mark.parametrize("ss", [11, 12, 13])
def test_a_small_change_inside_noise_never_fails(baseline, ss: int) -> None:
    for cand in (_side_records(ss=ss), _side_records(ss=ss, reading_noise_sd=1.45)):
        verdict = gate_records(baseline, cand, GateConfig(n_boot=500))
        assert verdict.status in ("pass", "inconclusive") and verdict.exit_code == 0
        inconclusive = verdict.inconclusive
        assert all("detects" in t.reason and t.detectable > t.margin for t in inconclusive)


def test_inconclusive_exits_3_when_the_config_says_so(baseline) -> None:
    cand = _side_records(ss=11)
    verdict = gate_records(baseline, cand, GateConfig(n_boot=500, inconclusive="fail"))
    assert verdict.status == "inconclusive" and verdict.exit_code == 3


def test_the_same_inputs_give_the_same_verdict(baseline) -> None:
    cand = _side_records(ss=5, reading_noise_sd=2.0)
    a = gate_records(baseline, cand, GateConfig(n_boot=300, seed=4)).to_dict()
    b = gate_records(baseline, cand, GateConfig(n_boot=300, seed=4)).to_dict()
    assert a == b


def test_a_primary_metric_alone_gates(baseline) -> None:
    cand = _side_records(ss=7, threshold_mean=0.6)
    verdict = gate_records(baseline, cand, GateConfig(n_boot=500, primary="auroc"))
    assert verdict.exit_code != 1  # the yes-rate moved, the primary metric did not fail
    assert {t.metric for t in verdict.tests if t.gated} == {"auroc"}
    assert all(t.verdict == "info" for t in verdict.tests if not t.gated)


def test_mcnemar_counts_and_exact_p_by_hand() -> None:
    ids = [f"q{i}" for i in range(40)]
    y_base = np.array([1.0] * 20 + [0.0] * 20)
    y_cand = y_base.copy()
    y_cand[:3] = 0.0  # three right -> wrong, none wrong -> right
    conf = np.tile([1.0, 0.0], 20)
    make = lambda y: validate_records(  # noqa: E731
        pd.DataFrame({"model": "m", "item_id": ids, "confidence": conf, "correct": y})
    )
    verdict = gate_records(make(y_base), make(y_cand), GateConfig(n_boot=500))
    acc = next(t for t in verdict.tests if t.metric == "accuracy")
    assert acc.mcnemar["worse"] == 3 and acc.mcnemar["better"] == 0
    assert acc.mcnemar["p_worse"] == pytest.approx(0.5**3)
    assert acc.mcnemar["p"] == pytest.approx(2 * 0.5**3)
    assert acc.verdict != "fail"  # 3 of 40 discordant one way is not significant


def test_undefined_auroc_resamples_are_counted() -> None:
    n = 30
    y = np.ones(n)
    y[0] = 0.0  # one wrong item: most resamples still have it, about 1/e do not
    conf = np.linspace(0, 1, n)
    df = validate_records(
        pd.DataFrame(
            {"model": "m", "item_id": [str(i) for i in range(n)], "confidence": conf, "correct": y}
        )
    )
    other = df.assign(confidence=np.r_[conf[:5][::-1], conf[5:]])  # changed: not identical
    verdict = gate_records(df, other, GateConfig(n_boot=1000))
    auroc = next(t for t in verdict.tests if t.metric == "auroc")
    assert 250 < auroc.n_undefined < 480  # (29/30)^30 = 0.362 of 1000
    assert auroc.n_boot + auroc.n_undefined == 1000
    assert auroc.verdict == "inconclusive" and auroc.reason == (
        f"auroc is undefined in {auroc.n_undefined} of 1000 resamples "
        f"({auroc.n_undefined / 10:.1f}% > 5%: it needs both right and wrong items)"
    )


# ------------------------------------------------------------------ matching and refusals


def test_missing_items_are_refused_naming_them(baseline) -> None:
    cand = baseline[~baseline["item_id"].isin(["squad-00007", "squad-00009"])]
    verdict = gate_records(baseline, cand, FAST)
    assert verdict.status == "error" and verdict.exit_code == 2
    text = " ".join(verdict.refusals)
    assert "squad/prospective/verbal_binary: 2 item(s) only in the baseline" in text
    assert "'squad-00007', 'squad-00009'" in text
    shared = gate_records(baseline, cand, GateConfig(n_boot=200, allow_shared_items=True))
    assert shared.exit_code == 0 and any("shared item" in w for w in shared.warnings)
    assert {t.n_items for t in shared.tests if t.benchmark == "squad"} == {398}


def test_changed_templates_and_grader_versions_are_refused(baseline) -> None:
    base = baseline.assign(prompt_hash="aaaa", task_version="1.0", doc_hash=baseline["item_id"])
    cand = base.copy()
    hit = (cand["benchmark"] == "mmlu_pro") & (cand["item_id"] == "mmlu_pro-00003")
    cand.loc[hit, "prompt_hash"] = "bbbb"
    cand.loc[cand["benchmark"] == "squad", "task_version"] = "2.0"
    verdict = gate_records(base, cand, FAST)
    assert verdict.exit_code == 2
    text = "\n".join(verdict.refusals)
    assert "prompt_hash (prompt template) differs on 1 of 400 item(s) ('mmlu_pro-00003')" in text
    assert "task_version (grader/task version) differs on 400 of 400" in text
    assert "1.0 vs 2.0" in text
    # not recorded on one side: a warning, not a refusal
    warned = gate_records(base, baseline, GateConfig(n_boot=200))
    assert warned.exit_code == 0
    assert any("prompt_hash not recorded in the candidate" in w for w in warned.warnings)


def test_a_missing_benchmark_or_several_models_are_refused(baseline) -> None:
    cand = baseline[baseline["benchmark"] == "squad"]
    verdict = gate_records(baseline, cand, GateConfig(benchmarks=("squad", "mmlu_pro")))
    assert verdict.exit_code == 2
    assert any(
        r == "benchmark 'mmlu_pro' (required by the config) is missing from the candidate "
        "(which holds squad)"
        for r in verdict.refusals
    )
    two = pd.concat([baseline, baseline.assign(model="m09")])
    refused = gate_records(two, baseline, FAST)
    assert refused.exit_code == 2 and "the baseline holds 2 models" in refused.refusals[0]


def test_the_population_gap_is_tested_when_a_population_is_given(baseline) -> None:
    params = preset_params("paper")
    pop = simulate_records(
        params, n_models=6, items_per_benchmark=400, benchmarks=BENCHES, seed=0,
        probes=("prospective", "numeric"),
    )  # fmt: skip
    pop = validate_records(pop[pop["model"] != "m03"])
    verdict = gate_records(baseline, _side_records(ss=3), GateConfig(n_boot=300), population=pop)
    gaps = [t for t in verdict.tests if t.metric == "internal_pop_gap"]
    assert len(gaps) == 4
    match = match_records(baseline, baseline, population=pop)
    g = match.groups[0]
    key = (pop["benchmark"] == g.benchmark) & (pop["probe"] == g.probe)
    expected = pop[key].groupby("item_id")["confidence"].mean().reindex(list(g.item_ids))
    assert np.allclose(g.pop_confidence, expected.to_numpy())


def test_config_errors_name_the_key() -> None:
    with pytest.raises(GateConfigError, match=r"'marginz' \(did you mean 'margins'\?\)"):
        GateConfig.from_mapping({"marginz": {}}, source="gate.yaml")
    with pytest.raises(GateConfigError, match="unknown metric 'aucroc'"):
        GateConfig.from_mapping({"margins": {"aucroc": 0.1}})
    assert GateConfig().fingerprint() != GateConfig(margins={"auroc": 0.05}).fingerprint()
    assert GateConfig().fingerprint() == GateConfig(max_annotations=3).fingerprint()


def test_a_small_group_is_inconclusive_unless_unchanged(baseline) -> None:
    few = baseline[baseline["item_id"].str.endswith(("1", "2"))]  # 80 of 400 items per group
    # 20 squad items, mmlu_pro kept at 80
    few = few[few["item_id"].astype(str) < "squad-00100"].copy()
    cand = few.copy()
    cand.loc[cand.index[:3], "confidence"] = 1 - cand.loc[cand.index[:3], "confidence"]
    verdict = gate_records(few, cand, GateConfig(n_boot=200, min_items=30))
    squad = [t for t in verdict.tests if t.benchmark == "squad"]
    assert {t.n_items for t in squad} == {20}
    changed = [t for t in squad if t.change != 0]
    assert changed and all(t.verdict == "inconclusive" for t in changed)
    assert all("only 20 matched item(s), fewer than min_items (30)" in t.reason for t in changed)
    same = [t for t in squad if t.metric in ("unparseable", "accuracy")]
    assert same and all(t.verdict == "pass" and "unchanged on every item" in t.reason for t in same)
    assert gate_records(few, few, GateConfig(n_boot=200)).status == "pass"


def test_runs_of_different_harnesses_are_refused_naming_them(baseline) -> None:
    base = baseline.assign(harness="lm-eval", prompt_hash="lm", task_version="1.0")
    cand = baseline.assign(harness="inspect", prompt_hash="in", task_version="1.0")
    verdict = gate_records(base, cand, GateConfig(n_boot=200))
    assert verdict.exit_code == 2
    assert "the baseline was logged by 'lm-eval', the candidate by 'inspect'" in verdict.refusals[0]
    assert not any("prompt_hash" in r for r in verdict.refusals)  # not the misleading cause
    shared = gate_records(base, cand, GateConfig(n_boot=200, allow_shared_items=True))
    assert shared.exit_code == 0
    assert any("prompt_hash not checked" in w for w in shared.warnings)
    # the task version still is: a different grader is refused across harnesses too
    other = gate_records(base, cand.assign(task_version="2.0"), GateConfig(allow_shared_items=True))
    assert other.exit_code == 2 and any("task_version" in r for r in other.refusals)


def test_a_two_sided_failure_names_its_direction(baseline) -> None:
    verdict = gate_records(baseline, _side_records(ss=7, threshold_mean=0.6), FAST)
    (first, *_) = verdict.failed
    assert first.metric == "yes_rate" and first.change < 0
    assert "shows a drop of more than 0.05 (either way is a regression)" in first.reason
    assert "Holm-adjusted p = " in first.reason


def test_metrics_undefined_on_both_sides_stay_inconclusive() -> None:
    # every probe unparseable and every item wrong (a random tiny checkpoint): nothing to
    # compare, even though both runs are the same
    df = validate_records(
        pd.DataFrame(
            {"model": "m", "item_id": [str(i) for i in range(40)], "confidence": np.nan,
             "correct": 0.0, "confidence_kind": "verbal_binary"}
        )
    )  # fmt: skip
    verdict = gate_records(df, df, GateConfig(n_boot=200))
    by = {t.metric: t for t in verdict.tests}
    assert (
        by["auroc"].verdict == "inconclusive" and "needs both right and wrong" in by["auroc"].reason
    )
    assert by["yes_rate"].reason == "yes_rate is undefined on the baseline (no parsed confidence)"
    assert by["unparseable"].verdict == by["accuracy"].verdict == "pass"
    assert verdict.exit_code == 0 and verdict.status == "inconclusive"


# ------------------------------------------------------------------ matching, exactly


def _two_groups(n: int = 40, model: str = "m", **cols) -> pd.DataFrame:
    conf = np.linspace(0, 1, n)
    y = np.r_[np.zeros(n // 2), np.ones(n - n // 2)]
    ids = [f"q{i:03d}" for i in range(n)]
    return pd.concat(
        [
            _records(conf, y, ids, model, benchmark="b1", **cols),
            _records(np.round(conf), y, ids, model, benchmark="b2", **cols),
        ],
        ignore_index=True,
    )


def test_match_messages_name_sides_groups_fields_and_items() -> None:
    base = _two_groups(doc_hash="d", prompt_hash="p", task_version="1")
    with pytest.raises(Exception, match=r"^the baseline holds no records$"):
        match_records(base.iloc[:0], base)
    two = pd.concat([base, base.assign(model="z")])
    msg = (
        "the candidate holds 2 models ('m', 'z'); the gate compares one model with one model "
        "(choose one with --candidate-model)"
    )
    assert gate_records(base, two, FAST).refusals == (msg,)
    # a group only one side has
    only = match_records(base, base[base["benchmark"] == "b1"])
    assert only.mismatches == (
        "b2/prospective/verbal_binary: only in the baseline (40 items); the candidate has no "
        "such benchmark/probe/confidence kind",
    )
    # item content, with more than three distinct pairs, and an unrecorded (NaN) hash
    cand = base.copy()
    b1 = cand["benchmark"] == "b1"
    cand.loc[b1, "doc_hash"] = [f"new{i}" for i in range(40)]
    cand.loc[b1 & (cand["item_id"] == "q000"), "doc_hash"] = None  # not recorded: no mismatch
    got = match_records(base, cand)
    (line,) = got.mismatches
    assert line.startswith(
        "b1/prospective/verbal_numeric: doc_hash (item content) differs on 39 of 40 item(s) "
        "('q001', 'q002', 'q003', 'q004', 'q005' and 34 more): baseline vs candidate "
        "d vs new1; d vs new10; d vs new11 and 36 more"
    )
    assert [g.n_items for g in got.groups] == [1, 40]  # only q000 is comparable in b1
    # every item differs: the group is left out of the comparison
    cand.loc[b1, "doc_hash"] = "x"
    assert [g.benchmark for g in match_records(base, cand).groups] == ["b2"]


def test_a_population_without_the_items_is_a_warning() -> None:
    base = _two_groups()
    pop = base.assign(model="p1", item_id=base["item_id"].astype(str) + "-other")
    got = match_records(base, base, population=pop)
    assert got.warnings == (
        "b1/prospective/verbal_numeric: the reference population has none of these items",
        "b2/prospective/verbal_binary: the reference population has none of these items",
    )
    assert all(g.pop_confidence is None for g in got.groups)
    # the compared models themselves are never part of the population
    assert match_records(base, base, population=base).groups[0].pop_confidence is None


# ------------------------------------------------------------------ assembling the verdict


def test_accuracy_once_per_benchmark_and_probe_from_its_largest_group() -> None:
    n = 40
    y = np.r_[np.zeros(20), np.ones(20)]
    ids = [f"q{i:03d}" for i in range(n)]
    conf = np.linspace(0, 1, n)
    both = pd.concat(
        [
            _records(conf, y, ids, confidence_kind="verbal_numeric"),
            _records(conf[:35], y[:35], ids[:35], confidence_kind="logprob"),
        ],
        ignore_index=True,
    )
    verdict = gate_records(both, both, GateConfig(n_boot=200))
    acc = [t for t in verdict.tests if t.metric == "accuracy"]
    assert len(acc) == 1 and acc[0].n_items == 40 and acc[0].confidence_kind is None
    assert acc[0].name == "all/prospective: accuracy"
    auroc = next(t for t in verdict.tests if t.metric == "auroc" and t.n_items == 35)
    assert auroc.name == "all/prospective/logprob: auroc"


def test_the_ece_of_binary_confidence_is_tested_when_brier_is_not() -> None:
    base = _two_groups()
    only_ece = gate_records(base, base, GateConfig(n_boot=200, metrics=("ece",)))
    assert sorted(t.benchmark for t in only_ece.tests) == ["b1", "b2"]
    both = gate_records(base, base, GateConfig(n_boot=200, metrics=("ece", "brier")))
    assert sorted((t.benchmark, t.metric) for t in both.tests) == [
        ("b1", "brier"),
        ("b1", "ece"),
        ("b2", "brier"),
    ]


def test_a_primary_metric_that_cannot_be_tested_is_refused() -> None:
    base = _two_groups()
    verdict = gate_records(base, base, GateConfig(n_boot=200, primary="internal_pop_gap"))
    assert verdict.exit_code == 2
    assert verdict.refusals == ("no test of the primary metric 'internal_pop_gap' could be made",)
    assert (verdict.baseline_model, verdict.candidate_model) == ("m", "m")


def test_the_verdict_orders_its_tests_and_says_its_counts() -> None:
    base = _two_groups()
    cand = base.copy()
    flip = (cand["benchmark"] == "b1") & (cand["item_id"].astype(str) < "q020")
    cand.loc[flip, "confidence"] = 1.0  # b1: confidence of the wrong half up, AUROC falls
    verdict = gate_records(base, cand, GateConfig(n_boot=300, inconclusive="pass"))
    order = {"fail": 0, "inconclusive": 1, "pass": 2}
    ranks = [order[t.verdict] for t in verdict.tests]
    assert ranks == sorted(ranks)
    counts = {v: sum(t.verdict == v for t in verdict.tests) for v in order}
    assert verdict.headline() == (
        f"metacog gate: {verdict.status.upper()} (exit {verdict.exit_code}): m vs baseline m; "
        f"{len(verdict.tests)} gated test(s): {counts['fail']} failed, "
        f"{counts['inconclusive']} inconclusive, {counts['pass']} passed"
    )
    assert verdict.failed == tuple(t for t in verdict.tests if t.verdict == "fail")
    assert verdict.inconclusive == tuple(t for t in verdict.tests if t.verdict == "inconclusive")
    if verdict.status == "inconclusive":
        assert verdict.warnings[-1] == (
            f"{counts['inconclusive']} gated test(s) inconclusive; passing (set inconclusive: "
            "fail in the config to exit 3)"
        )


def test_weights_are_fixed_by_seed_and_group_and_do_not_depend_on_chunking() -> None:
    one = next(_weights(50, 40, seed=3, key="g", chunk=40))
    chunks = np.concatenate(list(_weights(50, 40, seed=3, key="g", chunk=7)))
    assert np.array_equal(one, chunks)  # why the chunk size is not a setting
    assert not np.array_equal(one, next(_weights(50, 40, seed=3, key="h", chunk=40)))
    assert not np.array_equal(one, next(_weights(50, 40, seed=4, key="g", chunk=40)))
    assert [w.shape for w in _weights(50, 40, seed=3, key="g", chunk=16)] == [
        (16, 50),
        (16, 50),
        (8, 50),
    ]


def test_metrics_without_usable_items_are_undefined() -> None:
    conf = np.array([np.nan, np.nan, 0.5])
    y = np.array([np.nan, 1.0, np.nan])
    one = np.ones((1, 3))
    for m in ("auroc", "brier", "ece"):
        assert np.isnan(_side(m, one, conf, y, None, 10)[0]), m
    assert _side("yes_rate", one, conf, y, None, 10)[0] == 1.0
    assert _side("accuracy", one, conf, y, None, 10)[0] == 1.0
    assert _side("unparseable", one, conf, y, None, 10)[0] == pytest.approx(2 / 3)
    with pytest.raises(KeyError):
        _side("nope", one, conf, y, None, 10)


# ------------------------------------------------------------------ the decision rule, by hand

LEVEL = 0.1  # one-sided tail 0.1 (an 80% interval); two-sided 0.05 per side (90%)
CFG = GateConfig(n_boot=500)


def _draft(metric, base, cand, se, *, mcnemar=None, problem=None, unchanged=False):
    zeros = np.zeros(100)
    group = PairedGroup("b", "p", "verbal_numeric", tuple(map(str, range(100))), *[zeros] * 4)
    return _Draft(
        group=group, metric=metric, kind=None if metric == "accuracy" else "verbal_numeric",
        baseline=base, candidate=cand, se=se, n_defined=500, n_undefined=0, p_value=0.01,
        mcnemar=mcnemar, problem=problem, unchanged=unchanged,
    )  # fmt: skip


def _interval(change: float, se: float, two_sided: bool = False) -> str:
    z = norm.isf(LEVEL / 2 if two_sided else LEVEL)
    return f"[{change - z * se:+.3f}, {change + z * se:+.3f}]"


def test_failures_name_the_metric_the_change_and_the_direction() -> None:
    t = _finish(_draft("auroc", 0.8, 0.7, 0.02), CFG, LEVEL, True, True, 0.04)
    assert t.verdict == "fail" and t.ci_level == pytest.approx(0.8)
    assert t.reason == (
        f"regression: auroc 0.800 -> 0.700 (change -0.100, 80% interval "
        f"{_interval(-0.1, 0.02)}, 100 items) shows a drop of more than 0.03, beyond the "
        "non-inferiority margin (Holm-adjusted p = 0.04)"
    )
    brier = _finish(_draft("brier", 0.2, 0.3, 0.02), CFG, LEVEL, True, True, 0.01)
    assert brier.verdict == "fail" and "shows a rise of more than 0.02, beyond" in brier.reason
    yes = _finish(_draft("yes_rate", 0.5, 0.7, 0.02), CFG, LEVEL, True, True, 0.01)
    assert yes.verdict == "fail" and yes.ci_level == pytest.approx(0.9)
    assert yes.reason.startswith(
        f"regression: yes_rate 0.500 -> 0.700 (change +0.200, 90% interval "
        f"{_interval(0.2, 0.02, True)}, 100 items) shows a rise of more than 0.05 (either way is "
        "a regression)"
    )
    held = _finish(_draft("auroc", 0.8, 0.7, 0.02), CFG, LEVEL, True, False, 0.04)
    assert held.verdict == "inconclusive" and held.reason.endswith(
        "100 items) lies beyond the margin at its Holm level, but Holm's step-down stopped at a "
        "test ranked before it"
    )


def test_passes_and_straddles_say_so() -> None:
    ok = _finish(_draft("auroc", 0.8, 0.8, 0.01), CFG, LEVEL, True, True, 0.9)
    assert ok.verdict == "pass" and ok.reason == (
        f"auroc 0.800 -> 0.800 (change +0.000, 80% interval {_interval(0, 0.01)}, 100 items) "
        "lies within the margin 0.03"
    )
    assert (
        _finish(_draft("yes_rate", 0.5, 0.5, 0.01), CFG, LEVEL, True, True, 0.9).verdict == "pass"
    )
    straddle = _finish(_draft("auroc", 0.8, 0.78, 0.02), CFG, LEVEL, True, True, 0.5)
    detect = 0.03 + (norm.isf(LEVEL) + norm.ppf(0.8)) * 0.02
    assert straddle.verdict == "inconclusive" and straddle.reason == (
        f"auroc 0.800 -> 0.780 (change -0.020, 80% interval {_interval(-0.02, 0.02)}, 100 items) "
        f"straddles the margin 0.03; this run detects a drop of {detect:.3f} or more (80% power)"
    )
    # one end inside the two-sided margin, the other beyond it
    up = _finish(_draft("yes_rate", 0.5, 0.54, 0.02), CFG, LEVEL, True, True, 0.5)
    assert up.verdict == "inconclusive" and "detects a change of" in up.reason


@pytest.mark.parametrize(
    ("metric", "base", "cand"),
    [("auroc", 0.03, 0.0), ("brier", 0.0, 0.02), ("yes_rate", 0.0, 0.05), ("yes_rate", 0.05, 0.0)],
)
def test_an_interval_ending_on_the_margin_neither_fails_nor_passes(metric, base, cand) -> None:
    d = _draft(metric, base, cand, 0.0)
    assert abs(d.candidate - d.baseline) == DEFAULT_MARGINS[metric]  # exactly on it
    assert _finish(d, CFG, LEVEL, True, True, 0.01).verdict == "inconclusive"


def test_accuracy_reasons_carry_mcnemar() -> None:
    flips = {"worse": 12, "better": 2, "p": 0.01, "p_worse": 0.006}
    t = _finish(_draft("accuracy", 0.6, 0.5, 0.03, mcnemar=flips), CFG, LEVEL, True, True, 0.02)
    assert t.verdict == "fail" and t.name == "b/p: accuracy"
    assert f"{_interval(-0.1, 0.03)}, 100 items; 12 right->wrong, 2 wrong->right) shows" in t.reason
    veto = {**flips, "p_worse": 0.3}
    t = _finish(_draft("accuracy", 0.6, 0.5, 0.03, mcnemar=veto), CFG, LEVEL, True, True, 0.02)
    assert t.verdict == "inconclusive"
    assert (
        f"{_interval(-0.1, 0.03)}, 100 items) straddles the margin 0.02; McNemar's exact test does "
        "not confirm it (12 right->wrong vs 2 wrong->right, p = 0.3); this run detects a drop of"
    ) in t.reason


def test_unchanged_problems_and_info() -> None:
    same = _finish(_draft("auroc", 0.8, 0.8, 0.0, unchanged=True), CFG, LEVEL, True, True, 1.0)
    assert same.verdict == "pass"
    assert same.reason == "auroc 0.800 on both sides: unchanged on every item"
    for gated, verdict in ((True, "inconclusive"), (False, "info")):
        t = _finish(_draft("auroc", 0.8, 0.7, 0.02, problem="why"), CFG, LEVEL, gated, True, None)
        assert (t.verdict, t.reason, t.detectable) == (verdict, "why", None)
        assert math.isnan(t.ci_low) and math.isnan(t.ci_high) and math.isnan(t.ci_level)
    info = _finish(
        _draft("brier", 0.2, 0.3, 0.02), GateConfig(primary="auroc"), LEVEL, False, True, None
    )
    assert info.verdict == "info" and info.reason.endswith("; not gated (primary metric: auroc)")


# ------------------------------------------------------------------ more boundaries


def test_setting_boundaries_and_types() -> None:
    edge = GateConfig(n_boot=100, n_bins=1, max_annotations=1, min_items=2, max_undefined=0.0)
    assert (edge.n_boot, edge.n_bins, edge.max_annotations) == (100, 1, 1)
    assert GateConfig(check=["doc_hash"]).check == ("doc_hash",)
    assert GateConfig.from_mapping({"benchmarks": "squad"}).benchmarks == ("squad",)
    with pytest.raises(GateConfigError, match=r"^config: unknown key"):
        GateConfig.from_mapping({"zz": 1})
    with pytest.raises(GateConfigError, match=r"^gate config: metrics name an unknown metric 'zz'"):
        GateConfig(metrics=("zz",))


def test_the_resamples_are_the_documented_draws() -> None:
    # numpy's Generator seeded with (seed, 64-bit little-endian BLAKE2b of the group name):
    # a verdict in an old CI log can be reproduced by later versions
    import hashlib

    key = int.from_bytes(hashlib.blake2b(b"sq/p/k", digest_size=8).digest(), "little")
    idx = np.random.default_rng([7, key]).integers(0, 9, size=(4, 9))
    expected = np.stack([np.bincount(row, minlength=9) for row in idx]).astype(float)
    assert np.array_equal(next(_weights(9, 4, seed=7, key="sq/p/k", chunk=4)), expected)


def test_an_empty_metric_has_one_value_per_resample() -> None:
    w = np.ones((2, 3))
    conf, y = np.full(3, np.nan), np.array([1.0, 0.0, 1.0])
    for m in ("auroc", "ece", "brier"):
        assert _side(m, w, conf, y, None, 10).shape == (2,)
    df = _records(
        np.full(40, np.nan), np.r_[np.zeros(20), np.ones(20)], confidence_kind="verbal_numeric"
    )
    other = df.assign(confidence=np.linspace(0, 1, 40))
    tests = {t.metric: t for t in gate_records(df, other, GateConfig(n_boot=200)).tests}
    assert tests["auroc"].n_undefined == tests["ece"].n_undefined == 200
    assert tests["auroc"].n_boot == 0


def test_holm_stops_at_the_first_test_it_cannot_reject() -> None:
    # two groups, three of 400 probes newly unparseable in each: one-sided p about 0.04 each,
    # above alpha / 2 for the first step, so neither fails although each is below alpha
    n = 400
    conf = np.linspace(0, 1, n)
    y = np.r_[np.zeros(n // 2), np.ones(n // 2)]
    ids = [f"q{i:03d}" for i in range(n)]
    worse = conf.copy()
    worse[[5, 100, 300]] = np.nan

    def two(c):
        return pd.concat(
            [_records(c, y, ids, benchmark="b1"), _records(c, y, ids, benchmark="b2")],
            ignore_index=True,
        )

    cfg = GateConfig(metrics=("unparseable",), margins={"unparseable": 0.0})
    first, second = gate_records(two(conf), two(worse), cfg).tests
    assert 0.025 < first.p_value <= second.p_value < 0.05
    assert (first.verdict, second.verdict) == ("inconclusive", "inconclusive")
    assert second.reason.endswith("but Holm's step-down stopped at a test ranked before it")
    assert "straddles the margin 0" in first.reason
    assert first.p_holm == pytest.approx(2 * first.p_value)


def test_shared_items_and_required_benchmarks_are_reported_exactly() -> None:
    base = _two_groups(prompt_hash="p")
    cand = base[base["item_id"] != "q007"].copy()
    cand = pd.concat([cand, _records([1.0], [1.0], ["extra"], benchmark="b2")], ignore_index=True)
    got = match_records(base, cand)
    assert got.mismatches == (
        "b1/prospective/verbal_numeric: 1 item(s) only in the baseline ('q007')",
        "b2/prospective/verbal_binary: 1 item(s) only in the baseline ('q007')",
        "b2/prospective/verbal_binary: 1 item(s) only in the candidate ('extra')",
    )
    assert got.warnings == ()  # the extra item's missing hash is no item of the comparison
    refused = gate_records(base, cand, FAST)
    assert refused.refusals[-1] == (
        "the gate compares only identically asked items; set allow_shared_items: true in the "
        "config to compare on the shared ones"
    )
    shared = gate_records(base, cand, GateConfig(n_boot=200, allow_shared_items=True))
    assert shared.warnings[-3:] == tuple(
        f"compared on the 78 shared item(s) only: {m}" for m in got.mismatches
    )
    only_b1 = gate_records(base, cand, GateConfig(n_boot=200, benchmarks=("b1",)))
    assert only_b1.status == "error" and len(only_b1.refusals) == 2  # b2 not looked at
    assert {
        t.benchmark
        for t in gate_records(base, base, GateConfig(n_boot=200, benchmarks=["b1"])).tests
    } == {"b1"}
    # the baseline side unrecorded
    assert match_records(base.drop(columns="prompt_hash"), base).warnings[0] == (
        "b1/prospective/verbal_numeric: prompt_hash not recorded in the baseline; not checked"
    )
    # one side without a harness column: nothing to compare, no refusal
    assert not match_records(base.assign(harness="lm-eval"), base).mismatches


def test_the_population_gap_leaves_out_items_the_population_lacks() -> None:
    rng = np.random.default_rng(3)
    conf, y = _data(rng, 150)
    pop = np.clip(np.nan_to_num(conf, nan=0.5) + rng.normal(0, 0.2, 150), 0, 1)
    pop[:20] = np.nan
    one = np.ones((1, 150))
    ok = ~np.isnan(conf) & ~np.isnan(y) & ~np.isnan(pop)
    expected = roc_auc_score(y[ok], conf[ok]) - roc_auc_score(y[ok], pop[ok])
    assert _side("internal_pop_gap", one, conf, y, pop, 10)[0] == pytest.approx(expected)
