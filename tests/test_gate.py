"""The gate's statistics and decisions: metrics against independent references, the paired
bootstrap recomputed by hand, the three rules, Holm and Tarone's rule, per-benchmark margins,
repeats, ungraded items, tolerances, pooling, and runs of a generator written apart from the
project's simulator (``tests/gate_generator.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sklearn.metrics import brier_score_loss, roc_auc_score

from metacog_metrics import calibration
from metacog_metrics.gate import (
    GateConfig,
    GateConfigError,
    gate_records,
    gate_records_under,
    match_records,
)
from metacog_metrics.gate.decision import _holm
from metacog_metrics.gate.metrics import bootstrap_weights, metric_values
from metacog_metrics.records import validate_records
from tests.gate_generator import ModelSpec, draw_run, make_bank

FAST = GateConfig(n_boot=400)


def _records(conf, correct, ids=None, model="m", **cols) -> pd.DataFrame:
    ids = ids if ids is not None else [f"q{i:03d}" for i in range(len(conf))]
    frame = pd.DataFrame({"model": model, "item_id": ids, "confidence": conf, "correct": correct})
    return validate_records(frame.assign(**cols))


def _data(rng: np.random.Generator, n: int = 200):
    conf = np.round(rng.random(n), 1)  # ties
    conf[rng.random(n) < 0.1] = np.nan
    y = (rng.random(n) < 0.3 + 0.5 * np.nan_to_num(conf)).astype(float)
    y[rng.random(n) < 0.05] = np.nan
    return conf, y


@pytest.fixture(scope="module")
def bank():
    return make_bank(600, seed=3)


# ------------------------------------------------------------------ metrics vs references


def test_unit_weights_match_sklearn_and_the_calibration_module() -> None:
    rng = np.random.default_rng(1)
    conf, y = _data(rng)
    ok = ~np.isnan(conf) & ~np.isnan(y)
    one = np.ones((1, conf.size))

    def v(metric: str, **kw) -> float:
        return float(metric_values(metric, one, conf, y, None, 10, **kw)[0])

    assert v("auroc") == pytest.approx(roc_auc_score(y[ok], conf[ok]), abs=1e-12)
    assert v("brier") == pytest.approx(brier_score_loss(y[ok], conf[ok]), abs=1e-12)
    assert v("ece") == pytest.approx(calibration.ece(conf, y, n_bins=10), abs=1e-12)
    assert v("unparseable") == np.isnan(conf).mean()
    assert v("yes_rate") == np.mean(conf[~np.isnan(conf)] >= 0.5)
    # an ungraded item counts as wrong by default; the graded-only figure leaves it out
    assert v("accuracy") == pytest.approx(np.nansum(y) / y.size)
    assert v("accuracy", ungraded_wrong=False) == pytest.approx(np.nanmean(y))


def test_bootstrap_counts_give_the_metric_of_the_resampled_items() -> None:
    rng = np.random.default_rng(2)
    conf, y = _data(rng, 120)
    pop = np.clip(np.nan_to_num(conf, nan=0.5) + rng.normal(0, 0.2, conf.size), 0, 1)
    w = next(bootstrap_weights(conf.size, 5, seed=3, key="g", chunk=5))
    assert (w.sum(axis=1) == conf.size).all()
    for row in w:
        idx = np.repeat(np.arange(conf.size), row.astype(int))  # the resampled items, explicitly
        c, t, p = conf[idx], y[idx], pop[idx]
        ok = ~np.isnan(c) & ~np.isnan(t)
        got = metric_values("auroc", row[None], conf, y)[0]
        assert got == pytest.approx(roc_auc_score(t[ok], c[ok]), abs=1e-12)
        gap = metric_values("internal_pop_gap", row[None], conf, y, pop)[0]
        ref = roc_auc_score(t[ok], c[ok]) - roc_auc_score(t[ok], p[ok])
        assert gap == pytest.approx(ref, abs=1e-12)
        assert metric_values("ece", row[None], conf, y)[0] == pytest.approx(
            calibration.ece(c, t), abs=1e-12
        )


def test_auroc_of_a_resample_with_one_class_is_undefined() -> None:
    conf = np.array([0.2, 0.8, 0.6])
    y = np.array([1.0, 1.0, 0.0])
    w = np.array([[1.0, 2.0, 0.0], [1.0, 1.0, 1.0]])
    out = metric_values("auroc", w, conf, y)
    assert np.isnan(out[0]) and out[1] == pytest.approx(0.5)


def test_holm_matches_hand_computation() -> None:
    # p sorted 0.01, 0.02, 0.03, 0.5 -> 4*0.01, max(.04, 3*.02), max(.06, 2*.03), max(.06, .5)
    adj = _holm(np.array([0.03, 0.01, 0.5, 0.02]))
    assert adj.tolist() == pytest.approx([0.06, 0.04, 0.5, 0.06])


def test_the_weights_are_fixed_by_seed_and_group_and_not_by_chunking() -> None:
    a = np.concatenate(list(bootstrap_weights(50, 300, 7, "x/y/z", chunk=64)))
    b = np.concatenate(list(bootstrap_weights(50, 300, 7, "x/y/z", chunk=64)))
    c = np.concatenate(list(bootstrap_weights(50, 300, 7, "x/y/w", chunk=64)))
    assert (a == b).all() and not (a == c).all() and a.shape == (300, 50)


# ------------------------------------------------------------------ the numbers of a test


def test_the_numbers_of_a_test_are_the_bootstraps() -> None:
    # change, standard error, one-sided p-value of a worsening, Holm level and adjusted p,
    # interval and detectable change, recomputed from the resamples and the normal law
    rng = np.random.default_rng(8)
    n = 80
    y_b = (rng.random(n) < 0.6).astype(float)
    y_c = y_b.copy()
    c_b = np.clip(np.round(0.5 * y_b + rng.random(n) * 0.6, 1), 0, 1)
    c_c = np.clip(np.round(0.2 * y_c + rng.random(n) * 0.8, 1), 0, 1)
    cfg = GateConfig(n_boot=300, seed=5, metrics=("auroc", "brier", "yes_rate"))
    verdict = gate_records(_records(c_b, y_b), _records(c_c, y_c), cfg)
    tests = {t.metric: t for t in verdict.tests}
    (w,) = bootstrap_weights(n, 300, 5, "all/prospective/verbal_numeric", chunk=300)
    p = {}
    for m, t in tests.items():
        deltas = metric_values(m, w, c_c, y_c) - metric_values(m, w, c_b, y_b)
        assert t.se == pytest.approx(np.std(deltas, ddof=1), rel=1e-12)
        one = np.ones((1, n))
        assert t.baseline == pytest.approx(metric_values(m, one, c_b, y_b)[0])
        assert t.change == pytest.approx(t.candidate - t.baseline)
        z = t.change / t.se
        p[m] = {"auroc": norm.cdf(z), "brier": norm.sf(z)}.get(m, 2 * norm.sf(abs(z)))
        assert t.p_value == pytest.approx(min(1.0, p[m]), rel=1e-9)
    ranked = sorted(p, key=p.get)
    z_family = {m: norm.isf(0.01 / 3 / (2 if m == "yes_rate" else 1)) for m in p}
    for rank, m in enumerate(ranked):
        t = tests[m]
        level = 0.01 / (3 - rank)
        tail = level / 2 if m == "yes_rate" else level
        assert t.ci_level == pytest.approx(1 - 2 * tail)
        zl = norm.isf(tail)
        assert (t.ci_low, t.ci_high) == pytest.approx((t.change - zl * t.se, t.change + zl * t.se))
        detect = max(t.margin, z_family[m] * t.se) + norm.ppf(0.8) * t.se
        assert t.detectable == pytest.approx(detect)
        assert t.underpowered == (z_family[m] * t.se > t.margin)
        assert t.p_holm == pytest.approx(
            max(min(1, (3 - r) * p[ranked[r]]) for r in range(rank + 1))
        )


# ------------------------------------------------------------------ the rules


def _drop(n: int, flipped: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Binary confidence equal to correctness; the candidate's is wrong on ``flipped`` items."""
    y = (np.arange(n) % 2).astype(float)
    c = y.copy()
    idx = np.random.default_rng(seed).choice(n, flipped, replace=False)
    c[idx] = 1 - c[idx]
    return _records(y, y), _records(c, y)


AUROC = {"metrics": ("auroc",), "n_boot": 500}


def test_a_significant_drop_beyond_the_margin_fails() -> None:
    base, cand = _drop(400, 60)  # AUROC 1 -> 0.85
    (t,) = gate_records(base, cand, GateConfig(**AUROC)).tests
    assert t.verdict == "fail" and t.change == pytest.approx(-0.15)
    assert t.reason.startswith("regression: auroc 1.000 -> 0.850 (change -0.150")
    assert "of more than the margin 0.03, significant at Holm's level" in t.reason


def test_a_drop_beyond_the_margin_that_is_not_significant_passes_saying_what_it_catches() -> None:
    base, cand = _drop(40, 2)  # AUROC -0.05 on 40 items: beyond 0.03, but noise
    verdict = gate_records(base, cand, GateConfig(**AUROC))
    (t,) = verdict.tests
    assert t.verdict == "pass" and verdict.exit_code == 0 and t.change == pytest.approx(-0.05)
    assert "beyond the margin 0.03 but not significant" in t.reason
    assert f"this run catches a drop of {t.detectable:.3f} or more (80% power)" in t.reason
    assert t.underpowered and verdict.underpowered == (t,)


def test_a_significant_drop_inside_the_margin_passes() -> None:
    base, cand = _drop(4000, 80)  # AUROC -0.02 on 4,000 items: significant, inside 0.03
    (t,) = gate_records(base, cand, GateConfig(**AUROC)).tests
    assert t.p_holm < 1e-6 and t.verdict == "pass" and "within the margin 0.03" in t.reason


def test_the_threshold_rule_fails_on_the_estimate_alone() -> None:
    base, cand = _drop(40, 2)
    (t,) = gate_records(base, cand, GateConfig(rule="threshold", **AUROC)).tests
    assert t.verdict == "fail" and not t.underpowered
    (ok,) = gate_records(*_drop(40, 1), GateConfig(rule="threshold", **AUROC)).tests
    assert ok.verdict == "pass"  # -0.025: within the margin


def test_the_noninferiority_rule_is_inconclusive_on_a_straddle_and_can_exit_3() -> None:
    base, cand = _drop(40, 2)
    v = gate_records(base, cand, GateConfig(rule="noninferiority", **AUROC))
    assert v.status == "inconclusive" and v.exit_code == 0
    assert "straddles the margin 0.03" in v.tests[0].reason
    strict = GateConfig(rule="noninferiority", inconclusive="fail", **AUROC)
    assert gate_records(base, cand, strict).exit_code == 3
    assert gate_records(*_drop(400, 60), strict).exit_code == 1


def test_unchanged_metrics_pass_outside_holms_family() -> None:
    base, cand = _drop(400, 60)
    cfg = GateConfig(n_boot=300, metrics=("auroc", "accuracy", "unparseable"))
    tests = {t.metric: t for t in gate_records(base, cand, cfg).tests}
    for m in ("accuracy", "unparseable"):
        assert tests[m].verdict == "pass" and tests[m].p_holm is None
        assert "unchanged on every item" in tests[m].reason
    # the AUROC test is alone in the family: its Holm level is alpha itself
    assert tests["auroc"].p_holm == pytest.approx(tests["auroc"].p_value)
    assert tests["auroc"].ci_level == pytest.approx(0.98)


def test_accuracy_needs_the_sign_test_to_confirm_a_drop() -> None:
    ids = [f"q{i}" for i in range(40)]
    y_base = np.array([1.0] * 20 + [0.0] * 20)
    y_cand = y_base.copy()
    y_cand[:3] = 0.0  # three right -> wrong: the bootstrap sees a drop, the sign test p = 1/8
    conf = np.tile([1.0, 0.0], 20)
    cfg = GateConfig(n_boot=500, alpha=0.1, metrics=("accuracy",), margins={"accuracy": 0.0})
    (acc,) = gate_records(_records(conf, y_base, ids), _records(conf, y_cand, ids), cfg).tests
    assert acc.change == pytest.approx(-0.075) and acc.verdict == "pass"
    assert acc.p_value == pytest.approx(0.125) and acc.flips == {
        "worse": 3,
        "better": 0,
        "p_worse": pytest.approx(0.125),
    }
    assert "sign test" in acc.reason and "p = 0.125" in acc.reason


# ------------------------------------------------------------------ structure


def test_margins_per_benchmark_with_a_default() -> None:
    frames = [_drop(400, 60)[i].assign(benchmark=b) for b in ("a", "b") for i in (0, 1)]
    base = pd.concat([frames[0], frames[2]], ignore_index=True)
    cand = pd.concat([frames[1], frames[3]], ignore_index=True)
    cfg = GateConfig(margins={"auroc": {"default": 0.05, "b": 0.2}}, **AUROC)
    tests = {t.benchmark: t for t in gate_records(base, cand, cfg).tests}
    assert (tests["a"].margin, tests["a"].verdict) == (0.05, "fail")
    assert (tests["b"].margin, tests["b"].verdict) == (0.2, "pass")
    assert cfg.margins["auroc"] == {"default": 0.05, "b": 0.2}
    assert GateConfig(margins={"auroc": {"b": 0.2}}).margin("auroc", "zzz") == 0.03
    with pytest.raises(GateConfigError, match=r"margins\.auroc\.b must be a number >= 0"):
        GateConfig(margins={"auroc": {"b": "wide"}})
    with pytest.raises(GateConfigError, match=r"margins\.aroc names an unknown metric"):
        GateConfig(margins={"aroc": 0.1})


def test_repeats_travel_together_and_identical_repeats_change_nothing(bank) -> None:
    rng = np.random.default_rng(4)
    base, cand = draw_run(bank, ModelSpec(), rng), draw_run(bank, ModelSpec(noise=1.5), rng)
    once = gate_records(base, cand, FAST)
    tripled = pd.concat([cand] * 3, ignore_index=True).assign(
        repeat=np.repeat([0, 1, 2], len(cand))
    )
    thrice = gate_records(base, tripled, FAST)
    for a, b in zip(once.tests, thrice.tests, strict=True):
        assert (a.name, a.n_items) == (b.name, b.n_items)
        assert b.repeats == 3 * a.repeats  # accuracy: the two probes' solves, thrice
        assert b.change == pytest.approx(a.change, abs=1e-12)
        assert b.se == pytest.approx(a.se, rel=1e-9)  # the item's weight spread over its copies


def test_repeats_are_pooled_per_item(bank) -> None:
    rng = np.random.default_rng(5)
    runs = [draw_run(bank, ModelSpec(), rng) for _ in range(3)]
    stacked = pd.concat(runs, ignore_index=True).assign(repeat=np.repeat([0, 1, 2], len(runs[0])))
    v = gate_records(runs[0], stacked, FAST)
    acc = next(t for t in v.tests if t.metric == "accuracy" and t.benchmark == "mcq")
    graded = [r[(r.benchmark == "mcq") & (r.probe == "numeric")]["correct"] for r in runs]
    assert acc.candidate == pytest.approx(np.mean([np.nan_to_num(g).mean() for g in graded]))
    assert acc.repeats == 6  # three runs x two probes' solves


def test_accuracy_is_tested_once_per_benchmark_over_its_probes(bank) -> None:
    rng = np.random.default_rng(6)
    base, cand = draw_run(bank, ModelSpec(), rng), draw_run(bank, ModelSpec(), rng)
    tests = gate_records(base, cand, FAST).tests
    acc = [t for t in tests if t.metric == "accuracy"]
    assert sorted(t.group for t in acc) == ["mcq/solve", "mixed/solve", "open/solve"]
    assert all(t.confidence_kind is None and t.repeats == 2 and t.n_items == 600 for t in acc)


def test_ungraded_items_count_as_wrong_with_the_graded_figure_beside() -> None:
    y = np.r_[np.ones(30), np.zeros(30)]
    y_cand = y.copy()
    y_cand[:6] = np.nan  # six right items the grader could not grade
    conf = np.r_[np.ones(30), np.zeros(30)]
    cfg = GateConfig(n_boot=300, metrics=("accuracy",))
    (t,) = gate_records(_records(conf, y), _records(conf, y_cand), cfg).tests
    assert (t.baseline, t.candidate) == (0.5, 0.4)
    assert t.graded_only == {
        "baseline": 0.5,
        "candidate": pytest.approx(24 / 54),
        "ungraded_baseline": 0,
        "ungraded_candidate": 6,
    }
    assert "ungraded counted wrong (0 baseline, 6 candidate record(s)); graded only" in t.reason
    exclude = GateConfig(n_boot=300, metrics=("accuracy",), ungraded="exclude")
    (ex,) = gate_records(_records(conf, y), _records(conf, y_cand), exclude).tests
    assert ex.candidate == pytest.approx(24 / 54)


def test_a_few_missing_items_are_tolerated_more_are_refused() -> None:
    y = (np.arange(200) % 2).astype(float)
    base = _records(y, y)
    cand = base.iloc[2:].reset_index(drop=True)  # two items missing of 200
    ok = gate_records(base, cand, GateConfig(n_boot=200))  # default: 1% = 2 items
    assert ok.status == "pass" and all(t.n_items == 198 for t in ok.tests)
    assert any(
        "2 item(s) only in the baseline ('q000', 'q001'); compared without them" in w
        for w in ok.warnings
    )
    refused = gate_records(base, cand, GateConfig(n_boot=200, max_missing_items=1))
    assert refused.exit_code == 2
    assert "more than max_missing_items allows (1 of 200)" in refused.refusals[0]
    assert gate_records(base, cand, GateConfig(n_boot=200, max_missing_items=0)).exit_code == 2
    with pytest.raises(GateConfigError, match="max_missing_items must be a count"):
        GateConfig(max_missing_items=2.5)


def test_pooling_makes_one_group_of_small_benchmarks() -> None:
    parts = []
    for bench in ("a", "b", "c"):
        y = (np.arange(12) % 2).astype(float)
        parts.append(_records(y, y, benchmark=bench))
    base = pd.concat(parts, ignore_index=True)
    small = gate_records(base, base.assign(model="c"), GateConfig(n_boot=200))
    assert {t.n_items for t in small.tests} == {12}
    pooled = gate_records(base, base.assign(model="c"), GateConfig(n_boot=200, pool=True))
    assert {t.benchmark for t in pooled.tests} == {"pooled"}
    assert {t.n_items for t in pooled.tests} == {36}
    m = match_records(base, base.assign(model="c"), GateConfig(pool=True))
    assert m.groups[0].item_ids[:2] == ("a/q000", "a/q001")


# ------------------------------------------------------------------ on the generator


def test_reruns_of_an_unchanged_model_pass(bank) -> None:
    rng = np.random.default_rng(11)
    for _ in range(3):
        v = gate_records(draw_run(bank, ModelSpec(), rng), draw_run(bank, ModelSpec(), rng), FAST)
        assert v.exit_code == 0 and not v.failed


def test_a_degraded_model_fails_on_what_degraded(bank) -> None:
    rng = np.random.default_rng(12)
    worse = draw_run(bank, ModelSpec(ability=-0.4), rng)  # about 20 points less accurate
    v = gate_records(draw_run(bank, ModelSpec(), rng), worse, FAST)
    assert v.exit_code == 1
    assert {t.group for t in v.failed if t.metric == "accuracy"} == {
        "mcq/solve",
        "mixed/solve",
        "open/solve",
    }
    assert all(t.change < -t.margin and t.p_holm <= 0.01 for t in v.failed)


def test_the_defaults() -> None:
    c = GateConfig()
    assert (c.rule, c.alpha, c.inconclusive, c.max_missing_items, c.ungraded) == (
        "significant",
        0.01,
        "pass",
        0.01,
        "wrong",
    )
    assert {k: v["default"] for k, v in c.margins.items()} == {
        "auroc": 0.03,
        "internal_pop_gap": 0.03,
        "brier": 0.02,
        "ece": 0.02,
        "accuracy": 0.02,
        "yes_rate": 0.05,
        "unparseable": 0.02,
    }
    with pytest.raises(GateConfigError, match="rule must be one of"):
        GateConfig(rule="lenient")


def test_configs_sharing_a_bootstrap_give_the_verdicts_of_separate_runs(bank) -> None:
    rng = np.random.default_rng(13)
    base, cand = draw_run(bank, ModelSpec(), rng), draw_run(bank, ModelSpec(noise=1.2), rng)
    configs = [
        FAST,
        GateConfig(n_boot=400, alpha=0.05),
        GateConfig(n_boot=400, rule="noninferiority", alpha=0.05),
        GateConfig(n_boot=400, margins=dict.fromkeys(("auroc", "brier", "ece"), 0.0)),
    ]
    together = gate_records_under(base, cand, configs)
    for config, verdict in zip(configs, together, strict=True):
        assert verdict.to_dict() == gate_records(base, cand, config).to_dict()
    with pytest.raises(ValueError, match="configs differ in \\['n_boot'\\]"):
        gate_records_under(base, cand, [FAST, GateConfig(n_boot=500)])
