"""The power analysis's rules, with the simulation and the permutation test replaced by stubs.

The population draws, the observed mean tau, the curtailed permutation test and the alignment
are stand-ins whose answers are written down by hand, so that the size table, the grid, the
summary text, the plot and ``run_power``'s forwarding are checked against hand-counted
rejections, SciPy's Clopper-Pearson interval and the figure matplotlib actually drew. Fast; what
the real tests find on simulated populations is in ``tests/test_power.py``.
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
import time
from typing import ClassVar

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import metacog_metrics.power as power
from metacog_metrics.power import NULLS, PowerOutputs, PowerResult
from metacog_metrics.simulate import get_preset


def _exact_ci(k: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return ci.low, ci.high


class _Arrays:
    def __init__(self, conf: np.ndarray, perf: np.ndarray) -> None:
        self.conf, self.perf = conf, perf


class _Bar:
    """Stands in for tqdm: records its settings, updates and closing."""

    made: ClassVar[list[_Bar]] = []

    def __init__(self, total=None, desc=None, unit=None):
        self.total, self.desc, self.unit = total, desc, unit
        self.updates: list[int] = []
        self.closed = False
        _Bar.made.append(self)

    def update(self, k=1):
        self.updates.append(k)

    def close(self):
        self.closed = True


@pytest.fixture
def bar(monkeypatch):
    import tqdm.auto

    _Bar.made = []
    monkeypatch.setattr(tqdm.auto, "tqdm", _Bar)
    return _Bar


# --- size_analysis ------------------------------------------------------------------------------
#
# The stub population of replicate g (its index within its cell) in cell c is conf = [[g]],
# perf = [[c]]; the observed mean tau is g / 100, non-finite for g % 5 == 4. The private-signal
# null (the call with labels) rejects when (g + c) % 3 == 0, the pass-count null (labels None)
# when (g + 2 c) % 4 < 2.


def _private_rule(g: int, c: int) -> bool:
    return (g + c) % 3 == 0


def _stratified_rule(g: int, c: int) -> bool:
    return (g + 2 * c) % 4 < 2


class _SizeStubs:
    def __init__(self, monkeypatch, cells: list[tuple]) -> None:
        self.cells = cells  # (preset name, models, items) in the expected order
        self.sims: list[tuple] = []
        self.tests: list[dict] = []
        self.strata: list[tuple] = []
        self.lock = threading.Lock()
        self._cell = -1
        self._next = 0
        monkeypatch.setattr(power, "simulate_arrays", self.simulate)
        monkeypatch.setattr(power, "mean_taus", self.mean_taus)
        monkeypatch.setattr(power, "pattern_strata", self.pattern_strata)
        monkeypatch.setattr(power, "_curtailed_rejects", self.rejects)

    def simulate(self, params, m, n, size, rng, *, benchmark):
        key = (params, m, n)
        if not self.sims or self.sims[-1][0] != key:
            self._cell += 1
            self._next = 0
        self.sims.append((key, size, benchmark, rng.integers(2**62)))
        g = np.arange(self._next, self._next + size, dtype=np.uint16)
        self._next += size
        conf = g.reshape(size, 1, 1)
        perf = np.full((size, 1, 1), self._cell, dtype=np.uint8)
        return _Arrays(conf, perf)

    @staticmethod
    def mean_taus(conf, perf):
        g = int(conf[0, 0])
        return np.float64(math.nan if g % 5 == 4 else g / 100)

    def pattern_strata(self, perf, block_size):
        with self.lock:
            self.strata.append((perf.dtype, block_size))
        return np.array([block_size, -1])

    def rejects(self, conf, perf, observed, permutations, alpha, rng, labels=None):
        g, c = int(conf[0, 0]), int(perf[0, 0])
        null = "difficulty_stratified" if labels is None else "private_signal"
        hit = _private_rule(g, c) if labels is not None else _stratified_rule(g, c)
        with self.lock:
            self.tests.append(
                {
                    "g": g, "c": c, "null": null, "observed": observed, "dtype": conf.dtype,
                    "permutations": permutations, "alpha": alpha, "draw": int(rng.integers(2**62)),
                    "labels": None if labels is None else list(labels),
                }
            )  # fmt: skip
        return hit, 0.5


def _expected_size(cells: list[tuple], reps: int) -> list[dict]:
    rows = []
    for c, (name, m, n) in enumerate(cells):
        row = {"correctness": name, "models": m, "items": n, "reps": reps}
        rules = (("private_signal", _private_rule), ("difficulty_stratified", _stratified_rule))
        for null, rule in rules:
            k = sum(rule(g, c) for g in range(reps) if g % 5 != 4)
            rate = k / reps
            row[f"{null}_rejections"] = k
            row[f"{null}_rate"] = rate
            row[f"{null}_se"] = math.sqrt(rate * (1 - rate) / reps)
            row[f"{null}_low"], row[f"{null}_high"] = _exact_ci(k, reps)
        rows.append(row)
    return rows


def test_size_rows_counts_rates_and_intervals(monkeypatch, bar):
    cells = [("3pl", 4, 10), ("3pl", 4, 12), ("3pl", 5, 10), ("3pl", 5, 12)]
    cells += [("rasch", m, n) for _, m, n in cells]
    stubs = _SizeStubs(monkeypatch, cells)
    reps = 9
    size = power.size_analysis(
        ["3pl", "rasch"], [4.0, 5], [10, 12], reps, alpha=0.1, permutations=29, block_size=7,
        benchmark="gsm8k", seed=3, workers=2,
    )  # fmt: skip
    expected = pd.DataFrame(_expected_size(cells, reps))
    pd.testing.assert_frame_equal(size, expected, check_exact=False, rtol=1e-12, atol=0)
    assert size["models"].dtype.kind == "i"
    # Every cell's population comes from its preset with no private signal, in one draw.
    params = {name: get_preset(name, individuated=0.0) for name in ("3pl", "rasch")}
    assert [s[0] for s in stubs.sims] == [(params[p], m, n) for p, m, n in cells]
    assert {s[1] for s in stubs.sims} == {reps} and {s[2] for s in stubs.sims} == {"gsm8k"}
    # Both nulls run once on every finite replicate, none on the non-finite ones.
    finite = [g for g in range(reps) if g % 5 != 4]
    seen = sorted((t["c"], t["g"], t["null"]) for t in stubs.tests)
    assert seen == sorted((c, g, null) for c in range(len(cells)) for g in finite for null in NULLS)
    for t in stubs.tests:
        assert t["observed"] == pytest.approx(t["g"] / 100) and t["dtype"] == np.float64
        assert t["permutations"] == 29 and t["alpha"] == 0.1
        assert t["labels"] == ([7, -1] if t["null"] == "private_signal" else None)
    # pattern_strata gets the float perf and the block size, once per finite replicate.
    assert stubs.strata == [(np.float64, 7)] * (len(cells) * len(finite))
    # Every null of every replicate has its own stream; every chunk its own data stream.
    draws = [t["draw"] for t in stubs.tests]
    assert len(set(draws)) == len(draws)
    assert len({s[3] for s in stubs.sims}) == len(stubs.sims)
    (b,) = bar.made
    assert (b.total, b.desc, b.unit) == (len(cells) * reps, "size", "rep")
    assert b.updates == [1] * (len(cells) * reps) and b.closed


def test_size_results_do_not_depend_on_workers_but_on_the_seed(monkeypatch):
    cells = [("2pl", 3, 10)]
    runs = {}
    for workers, seed in ((1, 0), (4, 0), (None, 0), (1, 1)):
        stubs = _SizeStubs(monkeypatch, cells)
        table = power.size_analysis(
            ["2pl"], [3], [10], 12, seed=seed, progress=False, workers=workers
        )
        runs[workers, seed] = (
            table,
            sorted((t["g"], t["null"], t["draw"]) for t in stubs.tests),
            [s[3] for s in stubs.sims],
        )
    base = runs[1, 0]
    for key in ((4, 0), (None, 0)):
        pd.testing.assert_frame_equal(runs[key][0], base[0])
        assert runs[key][1] == base[1] and runs[key][2] == base[2]
    other = runs[1, 1]
    assert not {d for *_, d in other[1]} & {d for *_, d in base[1]}
    assert other[2] != base[2]


def test_size_chunks_large_cells(monkeypatch):
    # 2**21 cells per draw at most: 4 x 2**18 gives chunks of 2, 3 x 700,000 chunks of 1.
    cells = [("rasch", 3, 700_000), ("rasch", 4, 2**18)]
    stubs = _SizeStubs(monkeypatch, cells)
    seen_cells = []
    for models, items in ((3, 700_000), (4, 2**18)):
        size = power.size_analysis(["rasch"], [models], [items], 7, progress=False, workers=1)
        seen_cells.append(size)
    assert [s[1] for s in stubs.sims] == [1] * 7 + [2, 2, 2, 1]
    # Replicates keep their index across chunks (g counts on in the stub) and their own stream.
    for size, (c, _) in zip(seen_cells, enumerate(cells)):
        assert size["private_signal_rejections"].iloc[0] == sum(
            _private_rule(g, c) for g in range(7) if g % 5 != 4
        )
    # (Both calls use seed 0: their first cells share streams, so each is checked on its own.)
    for c in range(2):
        draws = [t["draw"] for t in stubs.tests if t["c"] == c]
        assert len(draws) == 12 and len(set(draws)) == 12
    sims = stubs.sims[:7], stubs.sims[7:]
    assert all(len({s[3] for s in part}) == len(part) for part in sims)


def test_size_replicate_streams_do_not_depend_on_chunking(monkeypatch):
    # The first cell of two calls with seed 0 has the same seeds: replicate g's permutation
    # streams are the same whether the cell is drawn whole (4 x 12) or in chunks of 2.
    draws = []
    for items in (12, 2**18):
        stubs = _SizeStubs(monkeypatch, [("rasch", 4, items)])
        power.size_analysis(["rasch"], [4], [items], 7, progress=False, workers=1)
        draws.append(sorted((t["g"], t["null"], t["draw"]) for t in stubs.tests))
    assert [s[1] for s in stubs.sims] == [2, 2, 2, 1]
    assert draws[0] == draws[1]


def test_clopper_pearson_with_one_trial():
    low, high = power._clopper_pearson(np.array([0, 1, 0]), np.array([1, 1, 0]))
    assert (low[0], high[0]) == pytest.approx(_exact_ci(0, 1), rel=1e-12)
    assert (low[1], high[1]) == pytest.approx(_exact_ci(1, 1), rel=1e-12)
    assert math.isnan(low[2]) and math.isnan(high[2])  # no trials


def test_size_all_non_finite_counts_as_no_rejection(monkeypatch):
    stubs = _SizeStubs(monkeypatch, [("rasch", 3, 10)])
    monkeypatch.setattr(power, "mean_taus", lambda conf, perf: np.float64(math.inf))
    size = power.size_analysis(["rasch"], [3], [10], 4, progress=False)
    assert not stubs.tests
    for null in NULLS:
        assert size[f"{null}_rejections"].iloc[0] == 0
        assert size[f"{null}_rate"].iloc[0] == 0.0 and size[f"{null}_se"].iloc[0] == 0.0
        assert size[f"{null}_low"].iloc[0] == 0.0
        assert size[f"{null}_high"].iloc[0] == pytest.approx(_exact_ci(0, 4)[1], rel=1e-12)


def test_size_every_replicate_rejecting(monkeypatch):
    _SizeStubs(monkeypatch, [("rasch", 3, 10)])
    monkeypatch.setattr(power, "_curtailed_rejects", lambda *a, **k: (True, 0.0))
    size = power.size_analysis(["rasch"], [3], [10], 3, progress=False)
    row = size.iloc[0]
    for null in NULLS:
        assert row[f"{null}_rejections"] == 3 and row[f"{null}_rate"] == 1.0
        assert row[f"{null}_se"] == 0.0 and row[f"{null}_high"] == 1.0
        assert row[f"{null}_low"] == pytest.approx(_exact_ci(3, 3)[0], rel=1e-12)


def test_size_input_checks(monkeypatch):
    _SizeStubs(monkeypatch, [("rasch", 3, 10)])
    ok = {"progress": False}
    # The boundaries are accepted: 3 models, 10 items, 1 replicate, alpha (B + 1) == 1.
    power.size_analysis(["rasch"], [3], [10], 1, alpha=0.05, permutations=19, **ok)
    power.size_analysis(["rasch"], [3], [10], 1, alpha=0.5, permutations=1, **ok)
    with pytest.raises(ValueError, match=r"^reps must be >= 1, got 0$"):
        power.size_analysis(["rasch"], [3], [10], 0, **ok)
    bad_level = r"^need 0 < alpha < 1 and permutations >= 1/alpha - 1, got {}$"
    for alpha, perms in ((0.0, 99), (1.0, 99), (-0.1, 99), (1.5, 99), (0.05, 18), (0.5, 0)):
        with pytest.raises(ValueError, match=bad_level.format(alpha)):
            power.size_analysis(["rasch"], [3], [10], 2, alpha=alpha, permutations=perms, **ok)
    with pytest.raises(ValueError, match=r"^models: values must be >= 3, got \[2\]$"):
        power.size_analysis(["rasch"], [2, 3], [10], 2, **ok)
    with pytest.raises(ValueError, match=r"^items: values must be >= 10, got \[9\]$"):
        power.size_analysis(["rasch"], [3], [9], 2, **ok)
    with pytest.raises(ValueError, match=r"^models: give at least one value$"):
        power.size_analysis(["rasch"], [], [10], 2, **ok)
    with pytest.raises(ValueError, match="unknown simulation preset 'nope'"):
        power.size_analysis(["rasch", "nope"], [3], [10], 2, **ok)


def test_size_draws_without_private_signal_from_any_preset(monkeypatch):
    stubs = _SizeStubs(monkeypatch, [("individuated", 3, 10)])
    power.size_analysis(["individuated"], [3], [10], 2, progress=False)
    ((key, *_),) = stubs.sims
    assert get_preset("individuated").individuated > 0
    assert key[0] == get_preset("individuated", individuated=0.0)


def test_size_without_progress_makes_no_bar(monkeypatch, bar):
    _SizeStubs(monkeypatch, [("rasch", 3, 10)])
    power.size_analysis(["rasch"], [3], [10], 2, progress=False)
    assert bar.made == []


# --- power_analysis -----------------------------------------------------------------------------
#
# Stub populations: replicate r at weight w is conf = [[r, w, call]] (call: the simulate call's
# number); the observed tau is r / 100 + w, non-finite for r == 2. The test rejects at w == 0
# when r % 3 == 0 and at w > 0 when r != 0, its first-batch null mean is -r / 100. The
# alignment is (r / 10, r / 10) on the critical value's replicates (the first call) and
# (r / 10, 0.3 r + w) on the grid's.


class _GridStubs:
    def __init__(self, monkeypatch, plan: list[tuple[int, bool]] | None = None) -> None:
        # plan: (replicates, is the critical value's draw) of each phase, in the order drawn
        self.plan = list(plan or [])
        self.offset = 0
        self.null_value = lambda r: r / 10  # the critical value's replicates' contentious r
        self.sims: list[tuple] = []
        self.tests: list[dict] = []
        self.aligned: list[tuple] = []
        self.size_calls: list[tuple] = []
        self.lock = threading.Lock()
        monkeypatch.setattr(power, "simulate_arrays", self.simulate)
        monkeypatch.setattr(power, "mean_taus", self.mean_taus)
        monkeypatch.setattr(power, "pattern_strata", lambda perf, bs: np.array([bs]))
        monkeypatch.setattr(power, "_curtailed_rejects", self.rejects)
        monkeypatch.setattr(power, "_alignment", self.alignment)
        monkeypatch.setattr(power, "size_analysis", self.size)

    def simulate(self, params, m, n, size, rng, *, benchmark):
        self.sims.append((params.individuated, m, n, size, benchmark, rng.integers(2**62)))
        total, critical = self.plan[0] if self.plan else (size, False)
        conf = np.zeros((size, 1, 3))
        conf[:, 0, 0] = self.offset + np.arange(size)
        conf[:, 0, 1] = params.individuated
        conf[:, 0, 2] = critical
        self.offset += size
        if self.offset >= total:
            self.offset = 0
            self.plan = self.plan[1:]
        return _Arrays(conf, conf.copy())

    @staticmethod
    def mean_taus(conf, perf):
        r, w = conf[:, 0, 0], conf[:, 0, 1]
        return np.where(r == 2, math.nan, r / 100 + w)

    def rejects(self, conf, perf, observed, permutations, alpha, rng, labels=None):
        r, w = int(conf[0, 0]), float(conf[0, 1])
        with self.lock:
            self.tests.append((r, w, observed, permutations, alpha, labels, rng.integers(2**62)))
        return (r % 3 == 0) if w == 0 else (r != 0), -r / 100

    def alignment(self, conf, perf, min_items=10):
        r, w, critical = float(conf[0, 0]), float(perf[0, 1]), bool(perf[0, 2])
        with self.lock:
            self.aligned.append((critical, r))
        return (r / 10, self.null_value(r)) if critical else (r / 10, 0.3 * r + w)

    def size(self, *args, **kwargs):
        self.size_calls.append((args, kwargs))
        return pd.DataFrame({"sentinel": [1]})


def test_power_grid_against_hand_counts(monkeypatch, bar):
    stubs = _GridStubs(monkeypatch, [(3, True), (5, False), (5, False)])
    res = power.power_analysis(
        [4], [12], [0.0, 0.5], 5, alignment_reps=2, alignment_null_reps=3, alpha=0.1,
        permutations=19, benchmark="gsm8k", seed=2, workers=2, block_size=6,
        size_presets=["rasch"],
    )  # fmt: skip
    t = res.table
    assert list(t.columns) == [
        "models", "items", "individuated", "reps", "rejections", "power", "power_low",
        "power_high", "mean_tau", "null_mean_tau", "alignment_reps", "alignment_rejections",
        "alignment_power", "alignment_r_all", "alignment_r_contentious", "alignment_critical",
        "alignment_null_reps", "alignment_low", "alignment_high", "kind",
    ]  # fmt: skip
    # The critical value: mean + z sd of the null replicates' contentious r (0, 0.1, 0.2).
    critical = 0.1 + stats.norm.ppf(0.9) * 0.1
    assert t["alignment_critical"].tolist() == pytest.approx([critical] * 2, rel=1e-12)
    assert t["alignment_null_reps"].tolist() == [3, 3]
    assert t["models"].tolist() == [4, 4] and t["items"].tolist() == [12, 12]
    assert t["individuated"].tolist() == [0.0, 0.5] and t["reps"].tolist() == [5, 5]
    # w = 0 rejects r in {0, 3}, w = 0.5 r in {1, 3, 4}; r = 2 is non-finite.
    assert t["rejections"].tolist() == [2, 3]
    assert t["power"].tolist() == pytest.approx([0.4, 0.6])
    for i, k in enumerate((2, 3)):
        assert (t["power_low"][i], t["power_high"][i]) == pytest.approx(_exact_ci(k, 5))
    assert t["mean_tau"].tolist() == pytest.approx([0.02, 0.52])
    assert t["null_mean_tau"].tolist() == pytest.approx([-0.02, -0.02])
    # Alignment on the first two replicates: contentious r 0, 0.3 (w 0) and 0.5, 0.8 (w 0.5).
    assert t["alignment_reps"].tolist() == [2, 2]
    assert t["alignment_rejections"].tolist() == [1, 2]
    assert t["alignment_power"].tolist() == pytest.approx([0.5, 1.0])
    assert t["alignment_r_all"].tolist() == pytest.approx([0.05, 0.05])
    assert t["alignment_r_contentious"].tolist() == pytest.approx([0.15, 0.65])
    for i, k in enumerate((1, 2)):
        assert (t["alignment_low"][i], t["alignment_high"][i]) == pytest.approx(_exact_ci(k, 2))
    assert t["kind"].tolist() == ["false_positive_rate", "power"]
    # The calls: the critical value's null draws, then the same data stream at every weight.
    assert [s[:5] for s in stubs.sims] == [
        (0.0, 4, 12, 3, "gsm8k"), (0.0, 4, 12, 5, "gsm8k"), (0.5, 4, 12, 5, "gsm8k"),
    ]  # fmt: skip
    assert stubs.sims[1][5] == stubs.sims[2][5] != stubs.sims[0][5]
    assert sorted(stubs.aligned) == sorted(
        [(True, 0), (True, 1), (True, 2), (False, 0), (False, 1), (False, 0), (False, 1)]
    )
    assert sorted(x[:2] for x in stubs.tests) == sorted(
        (r, w) for w in (0.0, 0.5) for r in (0, 1, 3, 4)
    )
    for r, w, observed, perms, alpha, labels, _ in stubs.tests:
        assert observed == pytest.approx(r / 100 + w) and (perms, alpha) == (19, 0.1)
        assert labels.tolist() == [6]
    # Paired design: replicate r has the same permutation stream at every weight.
    streams = {(r, w): d for r, w, *_, d in stubs.tests}
    assert all(streams[r, 0.0] == streams[r, 0.5] for r in (0, 1, 3, 4))
    assert len(set(streams.values())) == 8 // 2
    # The size table is forwarded.
    ((args, kwargs),) = stubs.size_calls
    assert args == (["rasch"], [4], [12], 5)
    assert kwargs == {
        "alpha": 0.1, "permutations": 19, "block_size": 6, "benchmark": "gsm8k", "seed": 2,
        "progress": True, "workers": 2,
    }  # fmt: skip
    assert res.size is not None and res.size["sentinel"].tolist() == [1]
    (b,) = bar.made
    assert (b.total, b.desc, b.unit) == (2 * (5 + 2) + 3, "power", "rep")
    assert sum(b.updates) == b.total and b.closed
    assert (res.preset, res.benchmark, res.null) == ("paper", "gsm8k", "private_signal")
    assert res.block_size == 6
    assert (res.alpha, res.permutations, res.seed) == (0.1, 19, 2)
    assert res.params == get_preset("paper").to_dict()
    assert res.seconds >= 0 and res.outputs is None


def test_power_grid_difficulty_null_custom_params_and_no_alignment(monkeypatch, bar):
    stubs = _GridStubs(monkeypatch, [(3, False)])
    params = get_preset("rasch", residual_sd=1.3)
    res = power.power_analysis(
        [4], [12], [0.0], 3, params=params, alignment_reps=0, permutations=19,
        null="difficulty_stratified", size_reps=7, size_presets=("2pl",),
    )  # fmt: skip
    (b,) = bar.made
    assert b.total == 3 and b.updates == [1, 1, 1]  # no alignment, no critical-value draws
    assert all(labels is None for *_, labels, _ in stubs.tests)
    assert res.preset == "custom" and res.params["residual_sd"] == 1.3
    assert [s[:4] for s in stubs.sims] == [(0.0, 4, 12, 3)]  # no critical-value draws
    assert not stubs.aligned
    row = res.table.iloc[0]
    assert row["alignment_reps"] == 0 and math.isnan(row["alignment_power"])
    assert math.isnan(row["alignment_critical"]) and row["alignment_null_reps"] == 0
    assert math.isnan(row["alignment_low"]) and math.isnan(row["alignment_high"])
    ((args, _),) = stubs.size_calls
    assert args == (["2pl"], [4], [12], 7)


def test_power_grid_results_do_not_depend_on_workers(monkeypatch):
    runs = []
    for workers in (1, 3, 1):
        stubs = _GridStubs(monkeypatch, [(4, True), (6, False), (6, False)] * 2)
        table = power.power_analysis(
            [4, 5], [12], [0.0, 0.2], 6, alignment_reps=3, alignment_null_reps=4,
            permutations=19, progress=False, workers=workers,
        ).table  # fmt: skip
        runs.append((table, [s[5] for s in stubs.sims], sorted(x[-1] for x in stubs.tests)))
    for table, sims, tests in runs[1:]:
        pd.testing.assert_frame_equal(table, runs[0][0])
        assert sims == runs[0][1] and tests == runs[0][2]
    # Two cells, each with its own streams.
    sims = runs[0][1]
    assert len({sims[0], sims[1], sims[3], sims[4]}) == 4 and sims[1] == sims[2]


def test_power_grid_chunks_large_cells(monkeypatch, bar):
    # 4 models x 2**18 items: chunks of 2 replicates (2**21 cells per draw at most).
    plan = [(5, True), (5, False), (5, False)]
    stubs = _GridStubs(monkeypatch, plan)
    started = time.perf_counter()
    res = power.power_analysis(
        [4], [2**18], [0.0, 0.3], 5, alignment_reps=3, alignment_null_reps=5,
        permutations=19, workers=1, params=get_preset("paper", individuated=0.9),
    )  # fmt: skip
    assert 0 <= res.seconds <= time.perf_counter() - started
    assert res.size is None  # no size presets
    assert [s[3] for s in stubs.sims] == [2, 2, 1] * 3
    # The critical value's populations have no private signal, whatever the parameters say.
    assert [s[0] for s in stubs.sims] == [0.0] * 6 + [0.3] * 3
    draws = [s[5] for s in stubs.sims]
    assert len(set(draws[:3] + draws[3:6])) == 6 and draws[3:6] == draws[6:]
    null = np.arange(5) / 10
    critical = null.mean() + stats.norm.ppf(0.95) * null.std(ddof=1)
    t = res.table
    assert t["alignment_critical"].tolist() == pytest.approx([critical] * 2, rel=1e-12)
    assert t["alignment_null_reps"].tolist() == [5, 5]
    # Alignment on replicates 0-2 (across the first two chunks): 0, 0.3, 0.6 (+ w).
    assert sorted(stubs.aligned) == sorted(
        [(True, r) for r in range(5)] + [(False, r) for r in (0, 1, 2)] * 2
    )
    assert t["alignment_reps"].tolist() == [3, 3]
    assert t["alignment_rejections"].tolist() == [1, 2]
    assert t["rejections"].tolist() == [2, 3]
    assert t["mean_tau"].tolist() == pytest.approx([0.02, 0.32])
    perms = {(r, w): d for r, w, *_, d in stubs.tests}
    assert len(set(perms.values())) == 4
    (b,) = bar.made
    assert b.total == 2 * (5 + 3) + 5 and sum(b.updates) == b.total


def test_power_grid_chunks_of_one(monkeypatch):
    # 3 models x 700,000 items: more than 2**21 cells, one replicate per draw.
    stubs = _GridStubs(monkeypatch, [(2, True), (3, False)])
    power.power_analysis(
        [3], [700_000], [0.0], 3, alignment_reps=1, alignment_null_reps=2, permutations=19,
        progress=False,
    )  # fmt: skip
    assert [s[3] for s in stubs.sims] == [1, 1, 1, 1, 1]


@pytest.mark.parametrize("n_finite", [1, 2])
def test_power_critical_value_needs_two_finite_null_replicates(monkeypatch, n_finite):
    stubs = _GridStubs(monkeypatch, [(4, True), (3, False)])
    stubs.null_value = lambda r: r / 10 if r < n_finite else math.nan
    row = power.power_analysis(
        [4], [12], [0.0], 3, alignment_reps=3, alignment_null_reps=4, permutations=19,
        progress=False,
    ).table.iloc[0]  # fmt: skip
    assert row["alignment_null_reps"] == n_finite
    if n_finite == 1:
        assert math.isnan(row["alignment_critical"]) and row["alignment_rejections"] == 0
    else:  # 0 and 0.1: mean 0.05, sd 0.1 / sqrt(2)
        critical = 0.05 + stats.norm.ppf(0.95) * 0.1 / math.sqrt(2)
        assert row["alignment_critical"] == pytest.approx(critical, rel=1e-12)
        assert row["alignment_rejections"] == 2  # contentious r 0, 0.3, 0.6 vs 0.166


def test_power_alignment_at_the_critical_value_is_not_detected(monkeypatch):
    stubs = _GridStubs(monkeypatch, [(4, True), (3, False)])
    stubs.null_value = lambda r: 0.25  # critical value 0.25 exactly (sd 0)
    row = power.power_analysis(
        [4], [12], [0.25], 3, alignment_reps=3, alignment_null_reps=4, permutations=19,
        progress=False,
    ).table.iloc[0]  # fmt: skip
    assert row["alignment_critical"] == 0.25
    assert row["alignment_rejections"] == 2  # 0.25 (not above), 0.55, 0.85


def test_power_defaults(monkeypatch, bar):
    # The documented defaults, as the analysis uses them (stubs make the full grid cheap).
    stubs = _GridStubs(monkeypatch)
    res = power.power_analysis()
    t = res.table
    assert list(t[["models", "items", "individuated"]].itertuples(index=False, name=None)) == [
        (m, n, w) for m in (10, 20, 40) for n in (200, 1000, 5000) for w in (0.0, 0.1, 0.2, 0.4)
    ]
    assert (t["reps"] == 200).all() and (t["alignment_reps"] == 40).all()
    assert (t["alignment_null_reps"] == 200).all()
    assert {s[4] for s in stubs.sims} == {None}  # the default profile
    assert {(x[3], x[4]) for x in stubs.tests} == {(99, 0.05)}
    assert {tuple(x[5]) for x in stubs.tests} == {(2,)}  # the private-signal null, blocks of 2
    assert (res.preset, res.null, res.seed, res.size) == ("paper", "private_signal", 0, None)
    assert bar.made[0].total == 9 * (4 * (200 + 40) + 200)
    # The default seed is 0: the first cell's first draw is that of an explicit seed 0.
    first = stubs.sims[0][5]
    stubs = _GridStubs(monkeypatch)
    power.power_analysis([10], [200], [0.0], 1, alignment_reps=1, alignment_null_reps=2, seed=0,
                         progress=False)  # fmt: skip
    assert stubs.sims[0][5] == first


def test_size_defaults(monkeypatch, bar):
    cells = [(p, 20, n) for p in ("rasch", "2pl", "3pl") for n in (3000, 10000)]
    stubs = _SizeStubs(monkeypatch, cells)
    size = power.size_analysis()
    assert list(size[["correctness", "models", "items"]].itertuples(index=False, name=None)) == (
        cells
    )
    assert (size["reps"] == 400).all() and {s[2] for s in stubs.sims} == {None}
    assert {(t["permutations"], t["alpha"]) for t in stubs.tests} == {(99, 0.05)}
    assert {tuple(t["labels"]) for t in stubs.tests if t["labels"]} == {(2, -1)}  # blocks of 2
    assert bar.made[0].total == 6 * 400
    first = stubs.sims[0][3]
    stubs = _SizeStubs(monkeypatch, cells[:1])
    power.size_analysis(["rasch"], [20], [3000], 1, seed=0, progress=False)
    assert stubs.sims[0][3] == first


def test_power_input_checks(monkeypatch):
    _GridStubs(monkeypatch)
    ok = {"progress": False, "alignment_reps": 0}
    power.power_analysis([3], [10], [0.0], 1, permutations=19, block_size=1, **ok)
    power.power_analysis([3], [10], [0.0], 1, permutations=1, alpha=0.5, **ok)
    power.power_analysis([3], [10], [0.0], 1, alignment_null_reps=2, progress=False,
                         alignment_reps=1, permutations=19)  # fmt: skip
    cases = [
        ({"reps": 0}, r"^reps must be >= 1, got 0$"),
        ({"alpha": 0.0}, r"^alpha must lie in \(0, 1\), got 0.0$"),
        ({"alpha": 1.0}, r"^alpha must lie in \(0, 1\), got 1.0$"),
        (
            {"permutations": 18},
            r"^permutations must be >= 1/alpha - 1 = 19 for the test to be "
            r"able to reject at alpha=0.05, got 18$",
        ),
        ({"permutations": 0, "alpha": 0.5}, r"permutations must be >= 1/alpha - 1 = 1 "),
        ({"alignment_reps": -1}, r"^alignment_reps must be >= 0, got -1$"),
        ({"alignment_null_reps": 1}, r"^alignment_null_reps must be >= 2, got 1$"),
        ({"null": "other"}, r"^unknown null 'other'; choose from \('private_signal', "),
        ({"block_size": 0}, r"^block_size must be >= 1, got 0$"),
        ({"size_presets": ["rasch", "x"]}, r"unknown simulation preset 'x'"),
        ({"models": [2]}, r"^models: values must be >= 3, got \[2\]$"),
        ({"items": [9]}, r"^items: values must be >= 10, got \[9\]$"),
        ({"individuated": [-0.1]}, r"^individuated: values must be >= 0.0, got \[-0.1\]$"),
        ({"individuated": ["a"]}, r"^individuated: values must be >= 0.0, got \['a'\]$"),
        ({"items": []}, r"^items: give at least one value$"),
    ]
    for change, message in cases:
        kw = {"models": [3], "items": [10], "individuated": [0.0], "reps": 1,
              "permutations": 19, "progress": False} | change  # fmt: skip
        with pytest.raises(ValueError, match=message):
            power.power_analysis(**kw)


# --- the curtailed permutation test -------------------------------------------------------------
#
# The null draws are given in order (observed 0.5): the test rejects when at most
# floor(alpha (B + 1)) - 1 of the B draws reach the observed value, drawing batches of
# min(B, max(20, 4 floor(alpha (B + 1)))) and stopping once that many are exceeded.


def _curtail(monkeypatch, draws, alpha, permutations, labels=None):
    calls: list[tuple] = []
    stream = iter(draws)
    given = np.random.default_rng(0)

    def perms(kind):
        def make(_, size, rng):
            assert rng is given  # the replicate's own stream
            calls.append((kind, size))
            return np.zeros((size, 1), dtype=np.int64)

        return make

    monkeypatch.setattr(power, "stratified_permutations", perms("pass counts"))
    monkeypatch.setattr(power, "permutations_within", perms("labels"))
    monkeypatch.setattr(
        power, "stratified_null_draws", lambda c, p, x: np.array([next(stream) for _ in x])
    )
    hit, first = power._curtailed_rejects(
        np.zeros((1, 1)), np.zeros((1, 1)), 0.5, permutations, alpha, given, labels,
    )  # fmt: skip
    return hit, first, calls


def _draws(n, high_at):
    return [0.9 if i in high_at else i / 1000 for i in range(n)]


def test_curtailed_test_allowed_exceedances_and_batches(monkeypatch):
    # alpha 0.07, 99 draws: 0.07 * 100 = 7 (in floating point 7.000000000000001): 6 allowed,
    # batches of 28.
    draws = _draws(99, range(30, 36))
    hit, first, calls = _curtail(monkeypatch, draws, 0.07, 99)
    assert hit and calls == [("pass counts", 28), ("pass counts", 28), ("pass counts", 28),
                             ("pass counts", 15)]  # fmt: skip
    assert first == pytest.approx(np.mean(draws[:28]))
    # A 7th draw equal to the observed value (a tie counts): stopped after the 2nd batch.
    draws = _draws(99, range(30, 36))
    draws[40] = 0.5
    hit, _, calls = _curtail(monkeypatch, draws, 0.07, 99, labels=np.zeros(1))
    assert not hit and calls == [("labels", 28), ("labels", 28)]
    draws[40] = np.nextafter(0.5, 0.0)  # one ulp below: within the tie band, counts
    assert not _curtail(monkeypatch, draws, 0.07, 99)[0]
    draws[40] = 0.4999
    assert _curtail(monkeypatch, draws, 0.07, 99)[0]
    # Exceedances add up over batches: 4 in the first, 3 in the second.
    hit, _, calls = _curtail(monkeypatch, _draws(99, {1, 2, 3, 4, 30, 31, 32}), 0.07, 99)
    assert not hit and len(calls) == 2


def test_curtailed_test_floor_of_an_inexact_product(monkeypatch):
    # alpha 0.29, 99 draws: 0.29 * 100 is 28.999999999999996 in floating point, read as 29:
    # 28 allowed, one batch of 99. A NaN draw is left out of the count and the mean.
    draws = _draws(99, range(50, 78))
    draws[3] = math.nan
    hit, first, calls = _curtail(monkeypatch, draws, 0.29, 99)
    assert 0.29 * 100 < 29 and hit and calls == [("pass counts", 99)]
    assert first == pytest.approx(np.nanmean(draws))
    draws[90] = 0.9
    assert not _curtail(monkeypatch, draws, 0.29, 99)[0]
    # alpha 0.3, 12 draws: floor(3.9) - 1 = 2 allowed (3 would be floor(0.3 * 14) - 1).
    assert _curtail(monkeypatch, _draws(12, {2, 5}), 0.3, 12)[0]
    assert not _curtail(monkeypatch, _draws(12, {2, 5, 7}), 0.3, 12)[0]


# --- the alignment statistic ---------------------------------------------------------------------
#
# The first-principal-component scores are replaced by the first column of the matrix (None
# where that column starts with -1) and the contentious items by a given mask, so that the
# statistic is SciPy's Pearson r of two columns.


def _alignment_with(monkeypatch, conf, perf, mask):
    monkeypatch.setattr(power, "contentious_items", lambda c, p: np.asarray(mask))
    monkeypatch.setattr(power, "_pc1_scores", lambda x: None if x[0, 0] == -1 else x[:, 0])
    return power._alignment(conf, perf)


def test_alignment_is_pearson_r_on_all_and_contentious_items(monkeypatch):
    rng = np.random.default_rng(4)
    sc = np.r_[0.0, 1.0, rng.uniform(0.2, 0.8, 10)]  # range exactly 1
    sy = np.r_[1.0, 0.0, rng.uniform(0.1, 0.9, 10)]
    conf, perf = np.c_[sc, sc], np.c_[sy, sy]
    mask = np.r_[True, True, True, np.ones(9, bool)]
    mask[3:5] = False  # exactly 10 contentious items: enough
    r_all, r_cont = _alignment_with(monkeypatch, conf, perf, mask)
    assert r_all == pytest.approx(stats.pearsonr(sc, sy).statistic, abs=1e-12)
    assert r_cont == pytest.approx(stats.pearsonr(sc[mask], sy[mask]).statistic, abs=1e-12)
    mask[5] = False  # 9: too few
    r_all, r_cont = _alignment_with(monkeypatch, conf, perf, mask)
    assert r_all == pytest.approx(stats.pearsonr(sc, sy).statistic, abs=1e-12)
    assert isinstance(r_cont, float) and math.isnan(r_cont)
    # Too few items overall: both NaN (and the contentious set is still scored).
    r_all, r_cont = _alignment_with(monkeypatch, conf[:9], perf[:9], np.ones(9, bool))
    assert math.isnan(r_all) and math.isnan(r_cont)


@pytest.mark.parametrize("which", ["conf_none", "perf_none", "conf_flat", "perf_flat"])
def test_alignment_is_nan_without_scores_or_spread(monkeypatch, which):
    rng = np.random.default_rng(5)
    sc, sy = rng.uniform(size=12), rng.uniform(size=12)
    conf, perf = np.c_[sc, sc], np.c_[sy, sy]
    mask = np.r_[np.zeros(1, bool), np.ones(11, bool)]  # the first item is not contentious
    if which == "conf_none":
        conf[0, 0] = -1  # no scores on all items; the contentious ones still get r
    elif which == "perf_none":
        perf[0, 0] = -1
    elif which == "conf_flat":
        conf[:, 0] = 0.5
    else:
        perf[:, 0] = 0.5
    r_all, r_cont = _alignment_with(monkeypatch, conf, perf, mask)
    assert isinstance(r_all, float) and math.isnan(r_all)
    if which.endswith("none"):
        expected = stats.pearsonr(conf[1:, 0], perf[1:, 0]).statistic
        assert r_cont == pytest.approx(expected, abs=1e-12)
    else:
        assert math.isnan(r_cont)


def test_pc1_scores_need_three_models():
    rng = np.random.default_rng(0)
    latent = rng.normal(size=(200, 1))
    x = (latent + rng.normal(size=(200, 3)) > 0).astype(float)
    scores = power._pc1_scores(x)
    assert scores is not None and scores.shape == (200,)
    # Items answered by more models score higher on the first component (or lower: sign-free).
    r = stats.spearmanr(scores, x.sum(axis=1)).statistic
    assert abs(r) > 0.9
    assert power._pc1_scores(x[:, :2]) is None


# --- PowerResult ------------------------------------------------------------------------------


def _result(rows, **kw) -> PowerResult:
    table = pd.DataFrame(rows, columns=["models", "items", "individuated", "power"])
    base = {
        "table": table, "preset": "paper", "params": {}, "benchmark": "squad",
        "null": "private_signal", "alpha": 0.05, "permutations": 99, "seed": 0, "seconds": 12.4,
    }  # fmt: skip
    return PowerResult(**(base | kw))


_ROWS = [
    (3, 100, 0.0, 0.04), (3, 200, 0.0, 0.09), (5, 100, 0.0, 0.06),
    (5, 300, 0.25, 0.9), (3, 200, 0.25, 0.95), (3, 100, 0.25, 0.8), (5, 100, 0.25, 0.5),
    (5, 200, 0.25, 0.81), (5, 60, 0.25, 0.79),
    (3, 100, 1.0, 0.79), (3, 200, 1.0, 0.7),
    (5, 100, 2.0, 0.85), (3, 100, 2.0, 0.85), (5, 50, 2.0, 0.81), (3, 50, 2.0, 0.2),
]  # fmt: skip


def test_false_positive_rates_are_the_rows_at_zero():
    res = _result(_ROWS)
    fpr = res.false_positive_rates()
    expected = pd.DataFrame(_ROWS[:3], columns=["models", "items", "individuated", "power"])
    pd.testing.assert_frame_equal(fpr, expected)


def test_summary_text_by_hand():
    size = pd.DataFrame(
        [
            {"correctness": "rasch", "models": 3, "items": 100, "reps": 40,
             "private_signal_rate": 0.05, "private_signal_se": 0.0344,
             "difficulty_stratified_rate": 0.125, "difficulty_stratified_se": 0.0523},
            {"correctness": "3pl", "models": 5.0, "items": 200.0, "reps": 40.0,
             "private_signal_rate": 0.0, "private_signal_se": 0.0,
             "difficulty_stratified_rate": 0.6, "difficulty_stratified_se": 0.0776},
        ]
    )  # fmt: skip
    outputs = PowerOutputs("a.csv", "a.png", "a.json", "s.csv")
    res = _result(_ROWS, size=size, outputs=outputs)
    assert res.summary_text().split("\n") == [
        "power analysis (paper, squad items, null private_signal, alpha 0.05, 99 permutations, "
        "12 s)",
        "false-positive rate at individuated=0: at most 0.090 (3 models x 200 items)",
        "individuated=0.25: power >= 0.8 with 3 models x 100 items, 5 models x 200 items",
        "individuated=2: power >= 0.8 with 3 models x 100 items, 5 models x 50 items",
        "individuated=1: power < 0.8 everywhere on this grid",
        "size at alpha 0.05 (no private signal; rate +- Monte Carlo SE):",
        "  rasch, 3 models x 100 items, 40 reps: private-signal 0.050 +- 0.034, "
        "difficulty-stratified 0.125 +- 0.052",
        "  3pl, 5 models x 200 items, 40 reps: private-signal 0.000 +- 0.000, "
        "difficulty-stratified 0.600 +- 0.078",
        "wrote a.csv, a.png, a.json, s.csv",
    ]


def test_summary_text_without_zero_rows_size_or_size_csv():
    rows = [(4, 50, 0.5, 0.3), (4, 60, 0.5, 0.2), (4, 50, 0.7, 0.1)]
    outputs = PowerOutputs("b.csv", "b.png", "b.json")
    res = _result(rows, outputs=outputs, size=pd.DataFrame(), preset="custom", seconds=0.6,
                  null="difficulty_stratified", alpha=0.1, permutations=19,
                  benchmark=None)  # fmt: skip
    assert res.summary_text().split("\n") == [
        "power analysis (custom, default-profile items, null difficulty_stratified, alpha 0.1, "
        "19 permutations, 1 s)",
        "individuated=0.5: power < 0.8 everywhere on this grid",
        "individuated=0.7: power < 0.8 everywhere on this grid",
        "wrote b.csv, b.png, b.json",
    ]
    # Only rows at 0: the worst false-positive rate and nothing else.
    only_zero = _result([(4, 50, 0.0, 0.9), (4, 60, 0.0, 0.85)])
    assert only_zero.summary_text().split("\n")[1:] == [
        "false-positive rate at individuated=0: at most 0.900 (4 models x 50 items)"
    ]


# --- the plot -----------------------------------------------------------------------------------


def _plot_result(align: bool) -> PowerResult:
    rows = []
    for n in (50, 20):
        for m in (5, 3):
            for w in (0.4, 0.0, 0.2):
                p = round(0.1 + w + m / 100 + n / 1000, 4)
                rows.append(
                    {
                        "models": m, "items": n, "individuated": w, "power": p,
                        "power_low": p - 0.05, "power_high": p + 0.07,
                        "alignment_power": p / 2, "alignment_low": p / 2 - 0.03,
                        "alignment_high": p / 2 + 0.04,
                        "alignment_reps": int(align and m == 3 and w == 0.2 and n == 20),
                    }
                )  # fmt: skip
    return _result([], table=pd.DataFrame(rows), alpha=0.07, preset="mine")


@pytest.fixture
def captured(monkeypatch):
    import matplotlib.figure

    saved: list[tuple] = []

    def savefig(self, fname, **kwargs):
        saved.append((self, fname, kwargs))

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    return saved


@pytest.mark.parametrize("align", [True, False])
def test_plot_panels_lines_and_labels(captured, align):
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    res = _plot_result(align)
    with matplotlib.rc_context({"font.size": 7}):  # sizes below are the plot's own
        power._plot(res, "out.png")
    ((fig, fname, kwargs),) = captured
    assert fname == "out.png" and kwargs == {"dpi": 120, "format": "png"}
    assert not plt.fignum_exists(fig.number)  # closed
    n_rows = 2 if align else 1
    assert tuple(fig.get_size_inches()) == pytest.approx((8.0, 3.4 * n_rows))
    axes = fig.axes
    assert len(axes) == 2 * n_rows
    panels = [("power", "pairwise test (stratified null)", "power")]
    if align:
        panels.append(("alignment_power", "contentious-subset alignment", "alignment"))
    t = res.table
    for row, (col, title, prefix) in enumerate(panels):
        for j, n in enumerate((20, 50)):
            ax = axes[row * 2 + j]
            assert ax.get_title() == f"{title}\n{n} items"
            assert ax.title.get_fontsize() == 9
            assert ax.get_xlabel() == "individuated weight"
            assert ax.get_ylabel() == ("rejection rate" if j == 0 else "")
            assert ax.get_ylim() == pytest.approx((-0.02, 1.02))
            curves = [ln for ln in ax.lines if ln.get_marker() == "o"]
            hlines = [ln for ln in ax.lines if ln.get_marker() != "o"]
            assert [ln.get_label() for ln in curves] == ["3 models", "5 models"]
            assert len(ax.collections) == 2
            for m, ln, fill in zip((3, 5), curves, ax.collections):
                sub = t[(t["items"] == n) & (t["models"] == m)].sort_values("individuated")
                assert list(ln.get_xdata()) == [0.0, 0.2, 0.4]
                np.testing.assert_allclose(ln.get_ydata(), sub[col])
                assert fill.get_alpha() == 0.15
                np.testing.assert_allclose(fill.get_facecolor()[0], to_rgba(ln.get_color(), 0.15))
                vertices = {tuple(np.round(v, 9)) for v in fill.get_paths()[0].vertices}
                for x, lo, hi in zip(sub["individuated"], sub[f"{prefix}_low"],
                                     sub[f"{prefix}_high"]):  # fmt: skip
                    assert (round(x, 9), round(lo, 9)) in vertices
                    assert (round(x, 9), round(hi, 9)) in vertices
            assert len(hlines) == 2
            (ya,), (yb,) = (set(h.get_ydata()) for h in hlines)
            assert (ya, yb) == (0.07, 0.8)
            assert [h.get_linestyle() for h in hlines] == ["--", ":"]
            assert [h.get_linewidth() for h in hlines] == [1, 1]
            assert [h.get_color() for h in hlines] == ["grey", "grey"]
            assert [tuple(h.get_xdata()) for h in hlines] == [(0, 1), (0, 1)]
    for ax in axes[1:]:
        assert axes[0].get_shared_y_axes().joined(axes[0], ax)
    legend = axes[0].get_legend()
    assert [x.get_text() for x in legend.get_texts()] == ["3 models", "5 models"]
    assert legend.get_texts()[0].get_fontsize() == 8 and legend._loc == 2  # upper left
    assert all(ax.get_legend() is None for ax in axes[1:])
    assert fig._suptitle.get_text() == (
        "Power at alpha=0.07 (mine preset; at 0: false-positive rate)"
    )
    assert fig._suptitle.get_fontsize() == 10
    # tight_layout ran: the panels fill the figure more than the default margins allow.
    assert axes[0].get_position().x0 < matplotlib.rcParams["figure.subplot.left"]


def test_plot_writes_a_png_file(tmp_path):
    power._plot(_plot_result(True), str(tmp_path / "p.png"))
    with open(tmp_path / "p.png", "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


# --- run_power ----------------------------------------------------------------------------------


def test_run_power_forwards_every_argument(monkeypatch, tmp_path):
    calls = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        return _plot_result(True)

    monkeypatch.setattr(power, "power_analysis", fake)
    res = power.run_power(
        tmp_path / "out", models=[7], items=[33], individuated=[0.0, 0.3], reps=11,
        preset="rasch", alpha=0.09, permutations=21, alignment_reps=5, alignment_null_reps=17,
        benchmark="gsm8k", seed=4, progress=False, overrides={"residual_sd": 1.7}, workers=3,
        null="difficulty_stratified", block_size=8, size_presets=("2pl", "NONE", "3pl"),
        size_reps=13,
    )  # fmt: skip
    ((args, kwargs),) = calls
    assert args == ((7,), (33,), (0.0, 0.3), 11)  # as PowerOptions holds them
    assert kwargs == {
        "preset": "rasch", "params": get_preset("rasch", residual_sd=1.7), "alpha": 0.09,
        "permutations": 21, "alignment_reps": 5, "alignment_null_reps": 17,
        "benchmark": "gsm8k", "seed": 4, "progress": False, "workers": 3,
        "null": "difficulty_stratified", "block_size": 8, "size_presets": ["2pl", "3pl"],
        "size_reps": 13,
    }  # fmt: skip
    assert res.preset == "rasch+overrides"
    out = tmp_path / "out"
    assert res.outputs == PowerOutputs(
        str(out / "power.csv"), str(out / "power.png"), str(out / "power.json"), None
    )
    assert {p.name for p in out.iterdir()} == {"power.csv", "power.png", "power.json"}
    assert (out / "power.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pd.testing.assert_frame_equal(pd.read_csv(out / "power.csv"), res.table, check_dtype=False)


def test_run_power_takes_an_options_object_and_checks_before_drawing(monkeypatch, tmp_path):
    calls = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        return _plot_result(False)

    monkeypatch.setattr(power, "power_analysis", fake)
    monkeypatch.setattr(power, "_plot", lambda result, path: open(path, "wb").close())
    opts = power.PowerOptions(models=[5], items=[80], reps=3, seed=2)
    power.run_power(tmp_path / "a", opts)
    power.run_power(tmp_path / "b", opts, reps=4)  # a field replaced
    power.run_power(tmp_path / "c", models=(5,), items=(80,), reps=3, seed=2)
    (a_args, a_kw), (b_args, b_kw), (c_args, c_kw) = calls
    assert a_args == c_args == ((5,), (80,), (0.0, 0.1, 0.2, 0.4), 3) and a_kw == b_kw == c_kw
    assert b_args[3] == 4
    bad_values = [
        ({"reps": 0}, "reps must be an integer >= 1, got 0"),
        ({"individuated": [0.5, 1.5]}, "weights must lie in [0, 1], got [1.5]"),
        ({"alpha": 0.5, "permutations": 0}, "permutations must be an integer >= 1"),
        ({"size_presets": ["2pl", "4pl"]}, "unknown preset(s) ['4pl']"),
    ]
    for bad, message in bad_values:
        with pytest.raises(ValueError, match=re.escape(message)):
            power.run_power(tmp_path / "d", **bad)
    with pytest.raises(TypeError, match="unknown option"):
        power.run_power(tmp_path / "d", model=[5])
    assert len(calls) == 3 and not (tmp_path / "d").exists()


def test_run_power_defaults_and_no_overrides(monkeypatch, tmp_path):
    calls = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        return _plot_result(False)

    monkeypatch.setattr(power, "power_analysis", fake)
    monkeypatch.setattr(power, "_plot", lambda result, path: open(path, "wb").close())
    for overrides in (None, {}):
        res = power.run_power(tmp_path, overrides=overrides)
        assert res.preset == "mine"  # unchanged without overrides
        assert res.outputs is not None and res.outputs.csv == str(tmp_path / "power.csv")
    for args, kwargs in calls:
        assert args == ((10, 20, 40), (200, 1000, 5000), (0.0, 0.1, 0.2, 0.4), 200)
        assert kwargs == {
            "preset": "paper", "params": None, "alpha": 0.05, "permutations": 99,
            "alignment_reps": 40, "alignment_null_reps": 200, "benchmark": None, "seed": 0,
            "progress": True, "workers": None, "null": "private_signal", "block_size": 2,
            "size_presets": ["rasch", "2pl", "3pl"], "size_reps": None,
        }  # fmt: skip


def test_write_power_outputs_files_and_json(monkeypatch, tmp_path):
    import json

    monkeypatch.setattr(power, "_plot", lambda result, path: open(path, "wb").close())
    size = pd.DataFrame({"correctness": ["rasch"], "reps": [3]})
    res = dataclasses.replace(
        _plot_result(False), size=size, params={"a": 1}, seed=5, block_size=4, seconds=2.5
    )
    out = power.write_power_outputs(res, tmp_path / "new" / "dir")
    folder = tmp_path / "new" / "dir"
    assert out == PowerOutputs(
        str(folder / "power.csv"), str(folder / "power.png"), str(folder / "power.json"),
        str(folder / "size.csv"),
    )  # fmt: skip
    assert sorted(p.name for p in folder.iterdir()) == [
        "power.csv", "power.json", "power.png", "size.csv",
    ]  # fmt: skip
    pd.testing.assert_frame_equal(pd.read_csv(folder / "size.csv"), size)
    text = (folder / "power.json").read_text()
    assert text.startswith('{\n  "preset": "mine",\n  "benchmark"')  # indented by 2
    doc = json.loads(text)
    assert {k: v for k, v in doc.items() if k not in ("table", "size")} == {
        "preset": "mine", "benchmark": "squad", "null": "private_signal", "alpha": 0.07,
        "permutations": 99, "seed": 5, "seconds": 2.5, "params": {"a": 1}, "block_size": 4,
    }  # fmt: skip
    assert doc["size"] == [{"correctness": "rasch", "reps": 3}]
    assert len(doc["table"]) == len(res.table)
    assert doc["table"][0]["power"] == res.table["power"].iloc[0]
