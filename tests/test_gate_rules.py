"""The gate's bookkeeping, rule by rule, on small hand-made record tables (seconds): what a
refusal carries, the order of the tests, the notes of an inconclusive pass, which groups get
which tests, the sign test's confirmation at its boundary, the matching messages, and the config
fingerprint against a hand-written canonical JSON. ``tests/test_gate.py`` checks the statistics.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.gate import GateConfig, gate_records, match_records
from metacog_metrics.gate.matching import _harnesses
from metacog_metrics.gate.metrics import bootstrap_weights, metric_values
from metacog_metrics.records import validate_records


def _records(conf, correct, ids=None, model="m", **cols) -> pd.DataFrame:
    ids = ids if ids is not None else [f"q{i:03d}" for i in range(len(conf))]
    frame = pd.DataFrame({"model": model, "item_id": ids, "confidence": conf, "correct": correct})
    return validate_records(frame.assign(**cols))


def _inverted(n: int, bench: str, model: str, invert: bool) -> pd.DataFrame:
    """n items, half right; confidence = correctness (or its opposite when ``invert``)."""
    y = np.arange(n) % 2
    c = 1 - y if invert else y
    return _records(c.astype(float), y.astype(float), model=model, benchmark=bench)


# --------------------------------------------------------------------------------------------
# Refusals carry the config, the warnings and the models
# --------------------------------------------------------------------------------------------

CFG = GateConfig(n_boot=100, seed=3, metrics=("auroc", "brier", "unparseable"))


def test_an_empty_side_is_refused_with_the_config_and_the_callers_warnings() -> None:
    base = _records([1.0, 0.0], [1.0, 0.0])
    v = gate_records(base, base.iloc[:0], CFG, warnings=["versions differ"])
    assert v.refusals == ("the candidate holds no records",)
    assert v.config is CFG and v.config_fingerprint == CFG.fingerprint()
    assert v.warnings == ("versions differ",)
    v = gate_records(base.iloc[:0], base, CFG)
    assert v.refusals == ("the baseline holds no records",)


def test_mismatched_items_are_refused_with_the_config_warnings_and_models() -> None:
    base = _records([1.0, 0.0, 1.0], [1.0, 0.0, 0.0], model="B")
    cand = _records([1.0, 0.0], [1.0, 0.0], model="C", task_version=["v1", "v1"])
    v = gate_records(base, cand, CFG, warnings=["w0"])
    assert v.status == "error" and v.config is CFG
    assert v.refusals == (
        "all/prospective/verbal_binary: 1 item(s) only in the baseline ('q002'), more than "
        "max_missing_items allows (0 of 3)",
        "the gate compares only identically asked items; set allow_shared_items: true in the "
        "config to compare on the shared ones",
    )
    assert v.warnings == (
        "w0",
        "all/prospective/verbal_binary: task_version not recorded in the baseline; not checked",
    )
    assert (v.baseline_model, v.candidate_model) == ("B", "C")


def test_no_shared_item_is_refused_with_the_config_warnings_and_models() -> None:
    cfg = GateConfig(n_boot=100, allow_shared_items=True)
    base = _records([1.0, 0.0], [1.0, 0.0], ids=["a", "b"], model="B")
    cand = _records([1.0, 0.0], [1.0, 0.0], ids=["c", "d"], model="C")
    v = gate_records(base, cand, cfg, warnings=["w0"])
    assert v.refusals == (
        "no items shared by baseline and candidate",
        "all/prospective/verbal_binary: 2 item(s) only in the baseline ('a', 'b'), more than "
        "max_missing_items allows (0 of 4)",
        "all/prospective/verbal_binary: 2 item(s) only in the candidate ('c', 'd'), more than "
        "max_missing_items allows (0 of 4)",
    )
    assert v.config is cfg and v.warnings[0] == "w0" and len(v.warnings) == 3
    assert (v.baseline_model, v.candidate_model) == ("B", "C")


def test_a_primary_metric_without_any_test_is_refused_with_everything_named() -> None:
    cfg = GateConfig(n_boot=100, metrics=("auroc", "internal_pop_gap"), primary="internal_pop_gap")
    base = _inverted(40, "x", "B", False)
    v = gate_records(base, _inverted(40, "x", "C", False), cfg, warnings=["w0"])
    assert v.refusals == ("no test of the primary metric 'internal_pop_gap' could be made",)
    assert v.config is cfg and v.warnings == ("w0",)
    assert (v.baseline_model, v.candidate_model) == ("B", "C")


def test_a_verdict_carries_its_config_and_fingerprint_and_no_refusal() -> None:
    base = _inverted(40, "x", "B", False)
    v = gate_records(base, _inverted(40, "x", "C", False), CFG)
    assert v.status == "pass" and v.refusals == ()
    assert v.config is CFG and v.config_fingerprint == CFG.fingerprint()


# --------------------------------------------------------------------------------------------
# The order of the tests and the notes
# --------------------------------------------------------------------------------------------


def _mixed(cfg: GateConfig, small: str = "a", big: str = "b"):
    """Benchmark ``small``: 10 items, confidence inverted on the candidate (too few to decide);
    benchmark ``big``: 60 items, inverted (AUROC 1 -> 0, Brier 0 -> 1: both fail). Nobody's probe
    is unparseable on either side: that test passes, unchanged."""
    base = pd.concat([_inverted(10, small, "B", False), _inverted(60, big, "B", False)])
    cand = pd.concat([_inverted(10, small, "C", True), _inverted(60, big, "C", True)])
    return gate_records(base, cand, cfg)


@pytest.mark.parametrize(("small", "big"), [("a", "b"), ("b", "a")])
def test_tests_are_ordered_fail_inconclusive_pass_then_by_benchmark_and_metric(small, big):
    v = _mixed(CFG, small, big)
    assert [(t.verdict, t.benchmark, t.metric) for t in v.tests] == [
        ("fail", big, "auroc"),
        ("fail", big, "brier"),
        ("inconclusive", small, "auroc"),
        ("inconclusive", small, "brier"),
        ("pass", "a", "unparseable"),
        ("pass", "b", "unparseable"),
    ]
    assert (v.status, v.exit_code) == ("fail", 1)


def test_gated_tests_come_before_the_others() -> None:
    v = _mixed(GateConfig(n_boot=100, seed=3, metrics=CFG.metrics, primary="unparseable"))
    assert [(t.gated, t.verdict, t.benchmark, t.metric) for t in v.tests] == [
        (True, "pass", "a", "unparseable"),
        (True, "pass", "b", "unparseable"),
        (False, "info", "a", "auroc"),
        (False, "info", "a", "brier"),
        (False, "info", "b", "auroc"),
        (False, "info", "b", "brier"),
    ]
    assert (v.status, v.exit_code) == ("pass", 0)


def test_an_inconclusive_pass_says_how_many_tests_and_how_to_fail_it() -> None:
    cfg = GateConfig(n_boot=100, seed=3, metrics=CFG.metrics)
    base = _inverted(10, "a", "B", False)
    cand = _inverted(10, "a", "C", True)
    v = gate_records(base, cand, cfg, warnings=["w0"])
    assert (v.status, v.exit_code) == ("inconclusive", 0)
    assert v.warnings == (
        "w0",
        "2 gated test(s) inconclusive; passing (set inconclusive: fail in the config to exit 3)",
    )
    strict = GateConfig(n_boot=100, seed=3, metrics=CFG.metrics, inconclusive="fail")
    v = gate_records(base, cand, strict, warnings=["w0"])
    assert (v.status, v.exit_code, v.warnings) == ("inconclusive", 3, ("w0",))


# --------------------------------------------------------------------------------------------
# Which groups get which tests
# --------------------------------------------------------------------------------------------


def test_a_group_the_population_lacks_gets_no_gap_test_but_every_other_one() -> None:
    cfg = GateConfig(n_boot=100, metrics=("auroc", "internal_pop_gap", "brier"))
    base = pd.concat([_inverted(40, "a", "B", False), _inverted(40, "b", "B", False)])
    cand = pd.concat([_inverted(40, "a", "C", False), _inverted(40, "b", "C", False)])
    pop = _inverted(40, "b", "P", False)  # the population answered benchmark b only
    v = gate_records(base, cand, cfg, population=pop)
    got = sorted((t.benchmark, t.metric) for t in v.tests)
    assert got == [
        ("a", "auroc"),
        ("a", "brier"),
        ("b", "auroc"),
        ("b", "brier"),
        ("b", "internal_pop_gap"),
    ]
    # an empty population is no population: no gap test, and no crash
    v = gate_records(base, cand, cfg, population=pop.iloc[:0])
    assert sorted((t.benchmark, t.metric) for t in v.tests) == [
        ("a", "auroc"),
        ("a", "brier"),
        ("b", "auroc"),
        ("b", "brier"),
    ]
    assert all(g.pop_confidence is None for g in match_records(base, cand, cfg).groups)
    empty = match_records(base, cand, cfg, population=pop.iloc[:0])
    assert all(g.pop_confidence is None for g in empty.groups)


def test_accuracy_is_tested_once_and_the_smaller_group_keeps_its_other_tests() -> None:
    cfg = GateConfig(n_boot=100, metrics=("accuracy", "yes_rate", "unparseable"))
    y = (np.arange(40) % 2).astype(float)
    big = _records(y, y, model="B", confidence_kind="verbal_binary")
    ids = [f"n{i}" for i in range(30)]
    small = _records(y[:30], y[:30], model="B", confidence_kind="verbal_numeric", ids=ids)
    base = pd.concat([big, small])
    v = gate_records(base, base.assign(model="C"), cfg)
    got = sorted((t.confidence_kind or "-", t.metric) for t in v.tests)
    assert got == [
        ("-", "accuracy"),
        ("verbal_binary", "unparseable"),
        ("verbal_binary", "yes_rate"),
        ("verbal_numeric", "unparseable"),
        ("verbal_numeric", "yes_rate"),
    ]
    (acc,) = [t for t in v.tests if t.metric == "accuracy"]
    assert acc.n_items == 40 and acc.repeats == 1  # the probe's solves: its largest group's


# --------------------------------------------------------------------------------------------
# The sign test at its boundary, the resamples' chunks
# --------------------------------------------------------------------------------------------


def test_a_sign_test_p_value_equal_to_the_level_confirms_a_drop() -> None:
    # two items, both right -> both wrong: every resample's change is -1 (se 0), and the sign
    # test's one-sided p is P(X >= 2 | X ~ Bin(2, 1/2)) = 1/4, exactly the level alpha = 0.25
    cfg = GateConfig(n_boot=100, metrics=("accuracy",), min_items=2, alpha=0.25)
    base = _records([1.0, 1.0], [1.0, 1.0], model="B")
    cand = _records([1.0, 1.0], [0.0, 0.0], model="C")
    (t,) = gate_records(base, cand, cfg).tests
    assert t.flips["p_worse"] == 0.25 and t.p_value == 0.25
    assert t.verdict == "fail" and "sign test" not in t.reason


def test_the_resamples_do_not_depend_on_how_they_are_chunked() -> None:
    # 61 items (odd) and 300 resamples: the gate draws them in chunks; the standard error is
    # that of the same resamples drawn in one piece
    rng = np.random.default_rng(4)
    n = 61
    y = (rng.random(n) < 0.5).astype(float)
    cb, cc = np.round(rng.random(n), 1), np.round(rng.random(n), 1)
    cfg = GateConfig(n_boot=300, seed=2, metrics=("brier",))
    (t,) = gate_records(_records(cb, y, model="B"), _records(cc, y, model="C"), cfg).tests
    w = next(bootstrap_weights(n, 300, 2, "all/prospective/verbal_numeric", chunk=300))
    deltas = ((cc - y) ** 2 @ w.T - (cb - y) ** 2 @ w.T) / n
    assert t.se == pytest.approx(np.std(deltas, ddof=1), rel=1e-12)


def test_an_unknown_metric_is_a_key_error_naming_it() -> None:
    one = np.ones((1, 2))
    with pytest.raises(KeyError, match="nope"):
        metric_values("nope", one, np.array([1.0, 0.0]), np.array([1.0, 0.0]))


# --------------------------------------------------------------------------------------------
# Matching messages
# --------------------------------------------------------------------------------------------


def test_harness_names_ignore_missing_and_empty_values() -> None:
    assert _harnesses(pd.DataFrame({"harness": ["", None, "lm-eval", "lm-eval"]})) == {"lm-eval"}
    assert _harnesses(pd.DataFrame({"x": [1]})) == set()
    base = _records([1.0, 0.0], [1.0, 0.0], model="B", harness=["", ""])
    cand = _records([1.0, 0.0], [1.0, 0.0], model="C", harness=["inspect", "inspect"])
    assert match_records(base, cand).mismatches == ()


def test_a_required_benchmark_missing_from_both_sides_names_what_each_holds() -> None:
    base = _records([1.0, 0.0], [1.0, 0.0], model="B", benchmark=["s", "t"])
    cand = _records([1.0, 0.0], [1.0, 0.0], model="C", benchmark=["t", "t"], ids=["a", "b"])
    m = match_records(base, cand, GateConfig(benchmarks=("u",)))
    assert m.mismatches[0] == (
        "benchmark 'u' (required by the config) is missing from the baseline (which holds s, t)"
        " and the candidate (which holds t)"
    )
    m = match_records(base, cand, GateConfig(benchmarks=("s",)))
    assert m.mismatches[0] == (
        "benchmark 's' (required by the config) is missing from the candidate (which holds t)"
    )


def test_different_harnesses_name_the_hashes_left_unchecked() -> None:
    base = _records([1.0], [1.0], model="B", harness=["lm-eval"])
    cand = _records([1.0], [1.0], model="C", harness=["inspect"])
    m = match_records(base, cand)
    assert m.warnings[0] == (
        "doc_hash, prompt_hash not checked: each harness computes its own "
        "(baseline 'lm-eval', candidate 'inspect')"
    )


def test_a_group_only_in_the_candidate_is_named_so() -> None:
    base = _records([1.0], [1.0], model="B", probe="prospective")
    cand = pd.concat(
        [
            _records([1.0], [1.0], model="C", probe="prospective"),
            _records([1.0, 0.0], [1.0, 0.0], model="C", probe="numeric"),
        ]
    )
    m = match_records(base, cand)
    assert m.mismatches == (
        "all/numeric/verbal_binary: only in the candidate (2 items); the baseline has no such "
        "benchmark/probe/confidence kind",
    )
    m = match_records(cand.assign(model="B"), base.assign(model="C"))
    assert m.mismatches == (
        "all/numeric/verbal_binary: only in the baseline (2 items); the candidate has no such "
        "benchmark/probe/confidence kind",
    )


@pytest.mark.parametrize(("n_pairs", "tail"), [(3, ""), (4, " and 1 more")])
def test_differing_provenance_shows_three_pairs_then_a_count(n_pairs, tail) -> None:
    ids = [f"q{i}" for i in range(n_pairs)]
    base = _records([1.0] * n_pairs, [1.0] * n_pairs, model="B", doc_hash=[f"b{i}" for i in ids])
    cand = _records([1.0] * n_pairs, [1.0] * n_pairs, model="C", doc_hash=[f"c{i}" for i in ids])
    (msg,) = match_records(base, cand).mismatches
    assert msg.endswith("baseline vs candidate bq0 vs cq0; bq1 vs cq1; bq2 vs cq2" + tail)


def test_items_differing_in_any_checked_column_are_all_left_out() -> None:
    n = 6
    ones = [1.0] * n
    base = _records(ones, ones, model="B", doc_hash=list("abcdef"), task_version=["v"] * n)
    versions = ["v", "w", "v", "v", "v", "v"]
    cand = _records(ones, ones, model="C", doc_hash=list("Xbcdef"), task_version=versions)
    m = match_records(base, cand, GateConfig(allow_shared_items=True))
    (g,) = m.groups
    assert g.item_ids == ("q002", "q003", "q004", "q005")  # q000 (doc_hash), q001 (version)


# --------------------------------------------------------------------------------------------
# The fingerprint
# --------------------------------------------------------------------------------------------


def test_the_fingerprint_is_the_sha256_of_the_sorted_compact_settings() -> None:
    # written out by hand: every setting but max_annotations, keys sorted (margins too), no
    # spaces
    text = (
        '{"allow_shared_items":false,"alpha":0.01,"benchmarks":null,'
        '"check":["doc_hash","prompt_hash","task_version"],"inconclusive":"pass",'
        '"margins":{"accuracy":{"default":0.02},"auroc":{"default":0.03},'
        '"brier":{"default":0.02},"ece":{"default":0.02},"internal_pop_gap":{"default":0.03},'
        '"unparseable":{"default":0.02},"yes_rate":{"default":0.05}},"max_missing_items":0.01,'
        '"max_undefined":0.05,'
        '"metrics":["auroc","internal_pop_gap","brier","ece","accuracy","yes_rate",'
        '"unparseable"],"min_items":30,"n_bins":10,"n_boot":2000,"pool":false,"power":0.8,'
        '"primary":null,"rule":"significant","seed":0,"ungraded":"wrong"}'
    )
    assert GateConfig().fingerprint() == hashlib.sha256(text.encode()).hexdigest()
    assert GateConfig(max_annotations=3).fingerprint() == GateConfig().fingerprint()


# --------------------------------------------------------------------------------------------
# The gate stands on the statistics core only
# --------------------------------------------------------------------------------------------


def test_the_gate_imports_only_the_statistics_core() -> None:
    import ast
    from pathlib import Path

    core = {
        "metacog_metrics._result",
        "metacog_metrics._io",
        "metacog_metrics.calibration",
        "metacog_metrics.records",
    }
    folder = Path(__file__).resolve().parents[1] / "metacog_metrics" / "gate"
    found = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("metacog"):
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("metacog")}
    outside = {m for m in found if not m.startswith("metacog_metrics.gate")}
    assert outside <= core, outside - core
    inside = {m for m in found if m.startswith("metacog_metrics.gate.")}
    assert {"metacog_metrics.gate.config", "metacog_metrics.gate.decision"} <= inside
