"""Power analysis: the stratified detection null, the grid, its outputs."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from metacog_metrics.factors import factor_alignment
from metacog_metrics.power import (
    NULL_NAME,
    PowerResult,
    power_analysis,
    run_power,
    write_power_outputs,
)
from metacog_metrics.power import _alignment as fast_alignment
from metacog_metrics.power import _curtailed_rejects as curtailed
from metacog_metrics.simulate import get_preset, simulate_arrays
from metacog_metrics.stratified import (
    stratified_mean_tau_test,
    stratified_permutations,
)
from metacog_metrics.stratified import (
    stratified_null_draws as stratified_null,
)


def _data(preset="paper", m=8, n=300, seed=0, **overrides):
    arr = simulate_arrays(get_preset(preset, **overrides), m, n, 1, seed)
    return arr.conf[0].astype(float), arr.perf[0].astype(float)


def _scipy_mean_tau(conf, perf):
    m = conf.shape[1]
    taus = []
    for a in range(m):
        for b in range(a + 1, m):
            t = stats.kendalltau(conf[:, a] - conf[:, b], perf[:, a] - perf[:, b]).statistic
            if np.isfinite(t):
                taus.append(t)
    return float(np.mean(taus))


# --- stratified permutations --------------------------------------------------------------------


def test_stratified_permutations_stay_within_strata():
    _, perf = _data(m=10, n=400)
    perms = stratified_permutations(perf, 50, rng=3)
    k = perf.sum(axis=1)
    assert perms.shape == (50, 400)
    for perm in perms:
        assert sorted(perm) == list(range(400))
        np.testing.assert_array_equal(k[perm], k)
    # Items really move (the strata are not singletons), and the draws are reproducible.
    assert (perms != np.arange(400)).mean() > 0.5
    np.testing.assert_array_equal(perms, stratified_permutations(perf, 50, rng=3))


def test_null_draws_match_a_scipy_reference():
    conf, perf = _data(m=5, n=120, seed=4)
    perms = stratified_permutations(perf, 6, rng=1)
    draws = stratified_null(conf, perf, perms)
    expected = [_scipy_mean_tau(conf[p], perf) for p in perms]
    np.testing.assert_allclose(draws, expected, atol=1e-12)


def test_stratified_test_statistic_and_p_value():
    conf, perf = _data(m=6, n=200, seed=2)
    res = stratified_mean_tau_test(conf, perf, permutations=199, rng=5)
    assert res.observed == pytest.approx(_scipy_mean_tau(conf, perf), abs=1e-12)
    ok = res.draws[np.isfinite(res.draws)]
    assert res.p_value == pytest.approx((1 + np.sum(ok >= res.observed - 1e-12)) / (ok.size + 1))
    assert res.null_mean == pytest.approx(ok.mean())
    assert res.n_strata >= 3
    assert res.to_dict()["permutations"] == 199


def test_stratified_test_detects_a_strong_private_signal():
    conf, perf = _data("individuated", m=20, n=1000, seed=1)
    res = stratified_mean_tau_test(conf, perf, permutations=99, rng=0)
    assert res.p_value == pytest.approx(0.01)  # observed above every draw
    assert res.observed > res.null_mean + 5 * res.null_sd


def test_stratified_test_rejects_bad_input():
    conf, perf = _data(m=4, n=50)
    with pytest.raises(ValueError, match="must be equal"):
        stratified_mean_tau_test(conf[:, :3], perf)
    with pytest.raises(ValueError, match="0/1"):
        stratified_mean_tau_test(conf * 0.5, perf)
    with pytest.raises(ValueError, match="permutations"):
        stratified_mean_tau_test(conf, perf, permutations=0)


def test_curtailed_decisions_equal_the_full_test():
    """Stopping once the decision is settled gives the full test's decision."""
    decisions = []
    for seed in range(12):
        w = 0.6 if seed % 2 else 0.0
        conf, perf = _data(m=8, n=200, seed=seed, individuated=w)
        full = stratified_mean_tau_test(conf, perf, permutations=99, rng=seed)
        hit, first_mean = curtailed(
            conf, perf, full.observed, 99, 0.05, np.random.default_rng(seed)
        )
        assert hit == (full.p_value <= 0.05)
        assert first_mean == pytest.approx(np.nanmean(full.draws[:20]))
        decisions.append(hit)
    assert any(decisions) and not all(decisions)


# --- the alignment fast path --------------------------------------------------------------------


def test_fast_alignment_matches_the_analysis():
    conf, perf = _data(m=15, n=800, seed=3)
    fast_all, fast_cont = fast_alignment(conf, perf)
    ref = factor_alignment(conf, perf)
    assert fast_all == pytest.approx(ref.all.r, abs=0.02)
    assert fast_cont == pytest.approx(ref.contentious.r, abs=0.02)


# --- the grid ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_grid() -> PowerResult:
    return power_analysis(
        [6, 12], [150], [0.0, 0.8], reps=12, alignment_reps=6, alignment_null_reps=30,
        permutations=39, seed=3, progress=False,
    )  # fmt: skip


def test_power_table_shape_and_columns(small_grid):
    t = small_grid.table
    assert len(t) == 2 * 1 * 2
    assert list(t[["models", "items", "individuated"]].itertuples(index=False, name=None)) == [
        (6, 150, 0.0),
        (6, 150, 0.8),
        (12, 150, 0.0),
        (12, 150, 0.8),
    ]
    assert (t["reps"] == 12).all() and (t["alignment_reps"] <= 6).all()
    # The critical value rests on its own, larger set of null replicates (finite ones counted).
    assert t["alignment_null_reps"].between(25, 30).all()
    assert np.isfinite(t["alignment_critical"]).all()
    assert ((t["power_low"] <= t["power"]) & (t["power"] <= t["power_high"])).all()
    np.testing.assert_allclose(t["power"], t["rejections"] / t["reps"])
    assert list(t["kind"]) == ["false_positive_rate", "power"] * 2
    assert small_grid.null == NULL_NAME
    # A strong planted signal is found more often than none.
    for m in (6, 12):
        rows = t[t["models"] == m].set_index("individuated")
        assert rows.loc[0.8, "power"] > rows.loc[0.0, "power"]
        assert rows.loc[0.8, "mean_tau"] > rows.loc[0.0, "mean_tau"]
    assert "false-positive rate" in small_grid.summary_text()
    assert small_grid.to_dict()["alpha"] == 0.05


def test_power_is_reproducible(small_grid):
    again = power_analysis(
        [6, 12], [150], [0.0, 0.8], reps=12, alignment_reps=6, alignment_null_reps=30,
        permutations=39, seed=3, progress=False,
    )  # fmt: skip
    pd.testing.assert_frame_equal(small_grid.table, again.table)


def test_power_without_alignment_and_bad_input():
    res = power_analysis([5], [60], [0.0], reps=3, alignment_reps=0, permutations=19,
                         progress=False)  # fmt: skip
    assert res.table["alignment_reps"].iloc[0] == 0
    assert math.isnan(res.table["alignment_power"].iloc[0])
    with pytest.raises(ValueError, match="models"):
        power_analysis([2], [60], [0.0], reps=2, progress=False)
    with pytest.raises(ValueError, match="individuated"):
        power_analysis([5], [60], [-0.1], reps=2, progress=False)
    with pytest.raises(ValueError, match="alpha"):
        power_analysis([5], [60], [0.0], reps=2, alpha=1.5, progress=False)
    with pytest.raises(ValueError, match="alignment_null_reps"):
        power_analysis([5], [60], [0.0], reps=2, alignment_null_reps=1, progress=False)
    with pytest.raises(ValueError, match="unknown simulation preset"):
        power_analysis([5], [60], [0.0], reps=2, preset="nope", progress=False)
    with pytest.raises(ValueError, match="able to reject"):
        power_analysis([5], [60], [0.0], reps=2, permutations=9, progress=False)


def test_power_outputs_are_written(small_grid, tmp_path):
    out = write_power_outputs(small_grid, tmp_path / "power")
    table = pd.read_csv(out.csv)
    assert len(table) == len(small_grid.table)
    np.testing.assert_allclose(table["power"], small_grid.table["power"])
    with open(out.plot, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    doc = json.loads((tmp_path / "power" / "power.json").read_text())
    assert doc["null"] == NULL_NAME and len(doc["table"]) == len(table)
    assert doc["params"]["individuated"] == 0.0
    assert not list((tmp_path / "power").glob("*.tmp"))


def test_run_power_writes_and_takes_overrides(tmp_path):
    res = run_power(
        tmp_path, models=[5], items=[80], individuated=[0.0, 0.5], reps=4, permutations=19,
        alignment_reps=0, progress=False, overrides={"residual_sd": 1.2}, seed=1,
    )  # fmt: skip
    assert res.params["residual_sd"] == 1.2 and res.preset == "paper+overrides"
    assert res.outputs is not None and res.outputs.csv == str(tmp_path / "power.csv")
    assert str(tmp_path / "power.png") in res.summary_text()
    assert {p.name for p in tmp_path.iterdir()} >= {"power.csv", "power.png", "power.json"}


def test_power_cli(tmp_path, capsys):
    from metacog_tasks.cli import main

    out = tmp_path / "cli"
    rc = main(
        ["power", "--models", "5", "--items", "80", "--individuated", "0,0.5", "--reps", "3",
         "--permutations", "19", "--alignment-reps", "2", "--alignment-null-reps", "12",
         "--out", str(out), "--quiet"]
    )  # fmt: skip
    assert rc == 0 and "false-positive rate" in capsys.readouterr().out
    table = pd.read_csv(out / "power.csv")
    assert list(table["individuated"]) == [0.0, 0.5] and (table["reps"] == 3).all()
    assert table["alignment_null_reps"].between(8, 12).all()


# --- the alignment's critical value: the right tail of its own null replicates --------------


def test_alignment_critical_value_is_the_upper_normal_quantile(monkeypatch):
    # The alignment statistic is replaced by a stand-in whose values are known: a hash of the
    # replicate's data mapped to a normal score. The critical value must be the upper
    # (1 - alpha) normal quantile of the null replicates' values (mean + z sd, ddof 1), and a
    # replicate counts as detected when its value lies above it (the right tail).
    import hashlib
    import threading

    import metacog_metrics.power as power

    lock = threading.Lock()
    seen: list[float] = []

    def stand_in(conf, perf, min_items=10):
        digest = hashlib.sha256(np.ascontiguousarray(conf).tobytes()).digest()
        u = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
        value = float(stats.norm.ppf(u))
        with lock:
            seen.append(value)
        return 0.0, value

    monkeypatch.setattr(power, "_alignment", stand_in)
    null_n, reps, alpha = 60, 40, 0.1
    res = power_analysis(
        [4], [40], [0.0], reps=reps, alignment_reps=reps, alignment_null_reps=null_n,
        permutations=19, alpha=alpha, seed=1, progress=False, workers=1,
    )  # fmt: skip
    row = res.table.iloc[0]
    assert len(seen) == null_n + reps
    null, scored = np.array(seen[:null_n]), np.array(seen[null_n:])
    expected = null.mean() + stats.norm.ppf(1 - alpha) * null.std(ddof=1)
    assert expected > null.mean()
    assert row["alignment_critical"] == pytest.approx(expected, abs=1e-12)
    assert row["alignment_rejections"] == int((scored > expected).sum())
    assert row["alignment_power"] == pytest.approx((scored > expected).mean())
    # wrong tail would reject most replicates; the right one about alpha of them
    assert row["alignment_power"] < 0.3


# --- size under Rasch, 2PL and 3PL ---------------------------------------------------------------


def test_size_table_columns_and_reproducibility():
    from metacog_metrics.power import NULLS, size_analysis

    kw = {"reps": 6, "permutations": 19, "seed": 2, "progress": False}
    size = size_analysis(["rasch", "3pl"], [6], [120, 200], **kw)
    assert list(size[["correctness", "items"]].itertuples(index=False, name=None)) == [
        ("rasch", 120), ("rasch", 200), ("3pl", 120), ("3pl", 200),
    ]  # fmt: skip
    for null in NULLS:
        rate = size[f"{null}_rate"]
        np.testing.assert_allclose(rate, size[f"{null}_rejections"] / 6)
        np.testing.assert_allclose(size[f"{null}_se"], np.sqrt(rate * (1 - rate) / 6))
        assert ((size[f"{null}_low"] <= rate) & (rate <= size[f"{null}_high"])).all()
    pd.testing.assert_frame_equal(size, size_analysis(["rasch", "3pl"], [6], [120, 200], **kw))
    with pytest.raises(ValueError, match="unknown simulation preset"):
        size_analysis(["4pl"], [6], [120], reps=2, progress=False)


@pytest.mark.slow
def test_private_signal_test_has_nominal_size_under_rasch_2pl_and_3pl():
    """Seeded, CI-sized: 20 models x 4,000 items, 80 replicates per correctness model, alpha
    0.05. The rejection counts must be consistent with 0.05 (two-sided binomial, 1 in 1000)."""
    from metacog_metrics.power import size_analysis

    size = size_analysis(
        ["rasch", "2pl", "3pl"], [20], [4000], reps=80, permutations=39, seed=11, progress=False
    )
    for _, row in size.iterrows():
        test = stats.binomtest(int(row["private_signal_rejections"]), 80, 0.05)
        assert test.pvalue > 1e-3, row["correctness"]


def test_power_cli_reports_the_size_table(tmp_path, capsys):
    from metacog_tasks.cli import main

    out = tmp_path / "cli"
    rc = main(
        ["power", "--models", "5", "--items", "80", "--individuated", "0", "--reps", "2",
         "--permutations", "19", "--alignment-reps", "0", "--size-presets", "2pl,3pl",
         "--size-reps", "3", "--out", str(out), "--quiet"]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 0 and "size at alpha 0.05" in text and "2pl, 5 models x 80 items, 3 reps" in text
    size = pd.read_csv(out / "size.csv")
    assert list(size["correctness"]) == ["2pl", "3pl"] and (size["reps"] == 3).all()
    doc = json.loads((out / "power.json").read_text())
    assert doc["null"] == "private_signal" and len(doc["size"]) == 2
    rc = main(
        ["power", "--models", "5", "--items", "80", "--individuated", "0", "--reps", "2",
         "--permutations", "19", "--alignment-reps", "0", "--size-presets", "none",
         "--null", "difficulty_stratified", "--out", str(tmp_path / "b"), "--quiet"]
    )  # fmt: skip
    assert rc == 0 and not (tmp_path / "b" / "size.csv").exists()
    doc = json.loads((tmp_path / "b" / "power.json").read_text())
    assert doc["null"] == "difficulty_stratified" and doc["size"] is None
