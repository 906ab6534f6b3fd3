"""The per-pair permutation tests (``metacog_metrics.pairwise.pair``, and the per-pair samplers
the two nulls register in ``metacog_metrics.pairwise.nulls``), rule by rule.

The random tables themselves are tested in ``tests/test_pairwise_samplers.py``; here the
samplers (and the compiled kernels) are wrapped by recorders or replaced by stand-ins, so that
every draw a test sees is known, and the module's own work is checked against hand
computation and SciPy: which margins, category counts, seeds and draw counts reach the
samplers, how the draws are counted against the observed value (ties, tolerances, undefined
pairs), the null mean and sd, the p-values, q-values and the order of the pairs, the chunking,
the engine choice and its messages. NumPy and SciPy only (numba stood in for by a fake
module), no shared data; the whole file runs in a few seconds.
"""

from __future__ import annotations

import builtins
import itertools
import math
import sys
import types
import warnings

import numpy as np
import pytest
from scipy import stats

import metacog_metrics.pairwise as pairwise_pkg
from metacog_metrics.pairwise import common, engines
from metacog_metrics.pairwise import pair as pw
from metacog_metrics.pairwise import pair_draws as pd
from metacog_metrics.pairwise.nulls import base_rate as br
from metacog_metrics.pairwise.nulls import calibration_preserving as cp
from metacog_metrics.pairwise.nulls import get_null

# --------------------------------------------------------------------------------------------
# Hand computations
# --------------------------------------------------------------------------------------------


def _sign(v):
    return int(v > 0) - int(v < 0)


def _brute_s(x, y):
    """Kendall's S = C - D by looking at every pair of items."""
    return sum(
        _sign(x[i] - x[j]) * _sign(y[i] - y[j]) for i, j in itertools.combinations(range(len(x)), 2)
    )


def _scale(x, y):
    """1 / sqrt((n0 - n1)(n0 - n2)) by counting tied pairs; NaN when a side is constant."""
    n = len(x)
    n0 = n * (n - 1) / 2
    n1 = sum(k * (k - 1) / 2 for k in collections_counter(x).values())
    n2 = sum(k * (k - 1) / 2 for k in collections_counter(y).values())
    den = (n0 - n1) * (n0 - n2)
    return 1 / math.sqrt(den) if den > 0 else math.nan


def collections_counter(values):
    out: dict[float, int] = {}
    for v in values:
        v = round(float(v), 12)
        out[v] = out.get(v, 0) + 1
    return out


def _margins(x, y):
    """Counts of dconf -1, 0, +1 (rows) and dperf -1, 0, +1 (columns) of a binary pair."""
    rows = [int(np.sum(x == v)) for v in (-1, 0, 1)]
    cols = [int(np.sum(y == v)) for v in (-1, 0, 1)]
    return rows, cols


def _expected(draws, obs, *, tol=1e-12):
    """ge, le, mean and sd of one pair's null draws (finite ones), counted by hand."""
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    ge = int(np.sum(d >= obs - tol))
    le = int(np.sum(d <= obs + tol))
    mean = float(np.mean(d)) if d.size else math.nan
    sd = float(np.std(d, ddof=1)) if d.size > 1 else math.nan
    return ge, le, d.size, mean, sd


def _check_pair(res, k, draws, obs, b):
    ge, le, nv, mean, sd = _expected(draws, obs)
    assert res.n_valid[k] == nv
    assert res.p_greater[k] == pytest.approx((ge + 1) / (nv + 1), abs=0, rel=1e-15)
    assert res.p_less[k] == pytest.approx((le + 1) / (nv + 1), abs=0, rel=1e-15)
    assert res.null_mean[k] == pytest.approx(mean, rel=1e-9, abs=1e-12)
    if math.isnan(sd):
        assert math.isnan(res.null_sd[k])
    else:
        assert res.null_sd[k] == pytest.approx(sd, rel=1e-9, abs=1e-12)


def _check_recorded_pairs(res, rec, c, p, b):
    """Every pair of ``c``, ``p`` (models in columns) against its recorded S draws (``rec``,
    in pair order), its S by brute force, both scaled to tau-b; pairs without tau-b have no
    valid draw."""
    draws = np.concatenate([out for _, _, out in rec.calls])
    for k, (i, j) in enumerate(zip(*np.triu_indices(c.shape[1], k=1))):
        x, y = c[:, i] - c[:, j], p[:, i] - p[:, j]
        scale = _scale(x, y)
        if math.isnan(scale):
            assert res.n_valid[k] == 0
            continue
        _check_pair(res, k, draws[k] * scale, _brute_s(x, y) * scale, b)


def _two_sided(res):
    return np.minimum(1.0, 2 * np.minimum(res.p_greater, res.p_less))


def _bh(p):
    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    q[ok] = stats.false_discovery_control(p[ok])
    return q


# Binary data: 8 items x 3 models; model 2's confidence is model 0's (pair (0, 2) has a
# constant dconf: no tau-b).
C_BIN = np.array(
    [[1, 0, 1], [1, 1, 1], [0, 1, 0], [1, 0, 1], [0, 0, 0], [0, 1, 0], [1, 1, 1], [0, 0, 0]],
    dtype=float,
)
P_BIN = np.array(
    [[1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 0, 0], [0, 1, 1], [1, 0, 1], [0, 1, 0], [0, 0, 1]],
    dtype=float,
)
PAIRS3 = [(0, 1), (0, 2), (1, 2)]


def _cats(m):
    """Model m's counts of (conf 0, perf 0), (0, 1), (1, 0), (1, 1)."""
    c, p = C_BIN[:, m], P_BIN[:, m]
    return [int(np.sum((c == u) & (p == v))) for u in (0, 1) for v in (0, 1)]


class _Recorder:
    """Wraps a sampler: calls it and keeps copies of its arguments and draws."""

    def __init__(self, fn):
        self.fn = fn
        self.calls = []

    def __call__(self, *args):
        out = self.fn(*args)
        kept = [a.copy() if isinstance(a, np.ndarray) else a for a in args[:-1]]
        self.calls.append((kept, args[-1], out.copy()))
        return out


def _seed_keys(rngs):
    return [(g.bit_generator.seed_seq.entropy, g.bit_generator.seed_seq.spawn_key) for g in rngs]


# --------------------------------------------------------------------------------------------
# Counting the draws against the observed value
# --------------------------------------------------------------------------------------------


def test_accumulate_counts_ties_within_the_tolerance_and_skips_nan_draws():
    obs = np.array([0.1 + 0.2, 0.5, -0.25])  # 0.30000000000000004: one ulp above 0.3
    draws = np.array(
        [
            [0.3, 0.3 + 1e-9, 0.2, np.nan, 0.4],  # 0.3 ties obs (100 ulps band), 0.3+1e-9 above
            [0.5, 0.5, -0.5, 1.0, np.inf * 0],
            [-0.25, -0.25 - 1e-9, np.nan, np.nan, 0.0],
        ]
    )
    acc = pd.accumulate(obs, draws)
    assert acc.shape == (3, 5)
    np.testing.assert_array_equal(acc[:, 0], [3, 3, 2])  # >= obs (ties in)
    np.testing.assert_array_equal(acc[:, 1], [2, 3, 2])  # <= obs (ties in)
    np.testing.assert_array_equal(acc[:, 2], [4, 4, 3])
    np.testing.assert_allclose(acc[:, 3], [0.3 + 0.3 + 1e-9 + 0.2 + 0.4, 1.5, -0.5 - 1e-9])
    sq = [0.09 + (0.3 + 1e-9) ** 2 + 0.04 + 0.16, 0.25 + 0.25 + 0.25 + 1.0, 2 * 0.0625 + 2.5e-10]
    np.testing.assert_allclose(acc[:, 4], sq, rtol=1e-8)


def test_accumulate_counts_a_draw_equal_to_zero_on_both_sides():
    # at obs = 0 the tie band has width 0: only >= and <= count the equal draw
    acc = pd.accumulate(np.array([0.0]), np.array([[0.0, 0.0, -1.0, 1.0, np.nan]]))
    np.testing.assert_array_equal(acc[0], [3, 3, 4, 0, 2])


def test_accumulate_tie_band_is_narrow():
    # a draw 1e-12 away from 0.5 is not a tie (the band is 100 ulps, about 1e-14 here)
    acc = pd.accumulate(np.array([0.5]), np.array([[0.5 - 1e-12, 0.5 + 1e-12]]))
    np.testing.assert_array_equal(acc[0, :3], [1, 1, 2])


def test_accumulate_s_compares_integers_exactly_and_scales_to_tau():
    # pair 0: dconf margins (1, 2, 1), dperf (1, 2, 1): n0 = 6, n1 = n2 = 1 -> tau = S / 5
    # pair 1: dconf constant (0, 4, 0): no tau-b, zeros
    s_null = np.array([[2, -2, 0, 2, 1], [1, 2, 3, 4, 5]])
    s_obs = np.array([2, 3])
    rows = np.array([[1, 2, 1], [0, 4, 0]])
    cols = np.array([[1, 2, 1], [1, 2, 1]])
    acc = pd.accumulate_s(s_null, s_obs, rows, cols)
    assert acc.dtype == np.float64 and acc.shape == (2, 5)
    np.testing.assert_allclose(acc[0], [2, 5, 5, 3 / 5, 13 / 25], rtol=1e-15)
    np.testing.assert_array_equal(acc[1], [0, 0, 0, 0, 0])


# --------------------------------------------------------------------------------------------
# Binary confidence, NumPy engine
# --------------------------------------------------------------------------------------------


def _binary_hand(a, b):
    x = C_BIN[:, a] - C_BIN[:, b]
    y = P_BIN[:, a] - P_BIN[:, b]
    return x, y


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_binary_base_rate_draws_are_counted_by_hand(monkeypatch, alternative):
    rec = _Recorder(br._margins_s)
    monkeypatch.setattr(br, "_margins_s", rec)
    monkeypatch.setattr(pd, "_DRAWS_PER_STEP", 2 * 40)  # two pairs a step: steps of 2 and 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a pair without draws: NaN moments, no warning
        res = pw.pair_permutation_test(
            C_BIN, P_BIN, permutations=40, rng=5, engine="numpy", workers=1,
            alternative=alternative,
        )  # fmt: skip
    assert res.engine == "numpy" and res.null == "base_rate" and res.permutations == 40
    assert type(res.permutations) is int and res.alternative == alternative
    assert [len(args[0]) for args, _, _ in rec.calls] == [2, 1]
    rows = np.concatenate([args[0] for args, _, _ in rec.calls])
    cols = np.concatenate([args[1] for args, _, _ in rec.calls])
    draws = np.concatenate([out for _, _, out in rec.calls])
    assert [args[2] for args, _, _ in rec.calls] == [40, 40]
    assert draws.shape == (3, 40)
    # one chunk: one generator, seeded from the first child of the seed
    assert rec.calls[0][1] is rec.calls[1][1]
    assert _seed_keys([rec.calls[0][1]]) == [(5, (0,))]
    for k, (a, b) in enumerate(PAIRS3):
        x, y = _binary_hand(a, b)
        r, c = _margins(x, y)
        np.testing.assert_array_equal(rows[k], r)
        np.testing.assert_array_equal(cols[k], c)
        scale = _scale(x, y)
        if math.isnan(scale):
            assert math.isnan(res.tau[k]) and res.n_valid[k] == 0
            assert math.isnan(res.null_mean[k]) and math.isnan(res.null_sd[k])
            assert math.isnan(res.p_value[k]) and math.isnan(res.q_value[k])
            assert math.isnan(res.p_greater[k]) and math.isnan(res.p_less[k])
            continue
        s_obs = _brute_s(x, y)
        assert res.tau[k] == pytest.approx(stats.kendalltau(x, y).statistic, rel=1e-12)
        assert res.tau[k] == pytest.approx(s_obs * scale, rel=1e-12)
        # the draws tie the observed S often: both tails count them
        assert np.any(draws[k] == s_obs)
        _check_pair(res, k, draws[k] * scale, s_obs * scale, 40)
    expected_p = {"two-sided": _two_sided(res), "greater": res.p_greater, "less": res.p_less}
    np.testing.assert_array_equal(res.p_value, expected_p[alternative])
    np.testing.assert_allclose(res.q_value, _bh(res.p_value), rtol=1e-12)


def test_binary_calibration_draws_get_each_models_category_counts(monkeypatch):
    rec = _Recorder(cp._category_taus)
    monkeypatch.setattr(cp, "_category_taus", rec)
    monkeypatch.setattr(pd, "_DRAWS_PER_STEP", 30)  # one pair a step
    res = pw.pair_permutation_test(
        C_BIN, P_BIN, null="calibration_preserving", permutations=30, rng=2, engine="numpy",
        workers=1,
    )  # fmt: skip
    assert res.null == "calibration_preserving" and res.engine == "numpy"
    assert len(rec.calls) == 3 and all(args[2] == 30 for args, _, _ in rec.calls)

    for k, (a, b) in enumerate(PAIRS3):
        args, _, out = rec.calls[k]
        np.testing.assert_array_equal(args[0], [_cats(a)])
        np.testing.assert_array_equal(args[1], [_cats(b)])
        x, y = _binary_hand(a, b)
        if k == 1:  # constant dconf: no tau-b, no p-value, but the draws are counted
            assert math.isnan(res.tau[k]) and math.isnan(res.p_value[k])
            assert math.isnan(res.p_greater[k]) and math.isnan(res.p_less[k])
            assert res.n_valid[k] == np.isfinite(out).sum() > 0
            continue
        obs = stats.kendalltau(x, y).statistic
        _check_pair(res, k, out[0], obs, 30)
    np.testing.assert_array_equal(res.p_value, _two_sided(res))
    # the generator is the same across the steps of a chunk, seeded from child 0 of seed 2
    assert len({id(rng) for _, rng, _ in rec.calls}) == 1
    assert _seed_keys([rec.calls[0][1]]) == [(2, (0,))]


def test_binary_chunks_have_their_own_child_seeds_and_sizes(monkeypatch):
    rec = _Recorder(br._margins_s)
    monkeypatch.setattr(br, "_margins_s", rec)
    monkeypatch.setattr(pw, "_TABLES_PER_CHUNK", 2 * 25)  # two pairs a chunk
    bars = []

    class Bar:
        def __init__(self, total, desc, enabled):
            self.total, self.desc, self.enabled, self.n = total, desc, enabled, []
            bars.append(self)

        def update(self, k):
            self.n.append(k)

        def close(self):
            pass

    monkeypatch.setattr(common, "_progress", Bar)
    c = np.concatenate([C_BIN, C_BIN[:, :2]], axis=1)  # 5 models, 10 pairs: chunks 2 x 5
    p = np.concatenate([P_BIN, 1 - P_BIN[:, :2]], axis=1)
    seed = np.random.SeedSequence(77)
    res = pw.pair_permutation_test(
        c, p, permutations=25, rng=seed, engine="numpy", workers=1, progress=True
    )
    assert _seed_keys([rng for _, rng, _ in rec.calls]) == [(77, (i,)) for i in range(5)]
    assert bars[0].total == 10 * 25 and bars[0].n == [50] * 5 and bars[0].desc == "pairs base_rate"
    assert bars[0].enabled is True
    # the same draws as without chunks: each pair's draws are its chunk's
    assert res.tau.shape == (10,)
    _check_recorded_pairs(res, rec, c, p, 25)


def test_a_single_draw_has_a_mean_and_no_sd(monkeypatch):
    rec = _Recorder(br._margins_s)
    monkeypatch.setattr(br, "_margins_s", rec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one draw: no sd, and no warning
        res = pw.pair_permutation_test(C_BIN, P_BIN, permutations=1, rng=0, engine="numpy")
    x, y = _binary_hand(0, 1)
    assert res.n_valid[0] == 1
    assert res.null_mean[0] == pytest.approx(rec.calls[0][2][0, 0] * _scale(x, y))
    assert np.isnan(res.null_sd).all()


def test_pairs_argument_selects_and_orders_the_pairs(monkeypatch):
    whole = pw.pair_permutation_test(C_BIN, P_BIN, permutations=20, rng=1, engine="numpy")
    some = pw.pair_permutation_test(
        C_BIN, P_BIN, permutations=20, rng=1, engine="numpy", pairs=([1, 0], [2, 1])
    )
    np.testing.assert_allclose(some.tau, whole.tau[[2, 0]])
    x, y = _binary_hand(1, 0)
    assert some.tau[1] == pytest.approx(stats.kendalltau(x, y).statistic)


def test_input_checks_name_the_problem():
    with pytest.raises(ValueError, match=r"^permutations must be >= 1$"):
        pw.pair_permutation_test(C_BIN, P_BIN, permutations=0)
    pw.pair_permutation_test(C_BIN, P_BIN, permutations=1, engine="numpy")  # 1 is enough
    with pytest.raises(ValueError, match=r"^pair_permutation_test takes 2-D \(items, models\) arr"):
        pw.pair_permutation_test(np.stack([C_BIN, C_BIN]), np.stack([P_BIN, P_BIN]))
    with pytest.raises(ValueError, match="null must be one of"):
        pw.pair_permutation_test(C_BIN, P_BIN, null="none")
    with pytest.raises(ValueError, match="engine must be one of"):
        pw.pair_permutation_test(C_BIN, P_BIN, engine="gpu")
    with pytest.raises(ValueError, match="alternative must be"):
        pw.pair_permutation_test(C_BIN, P_BIN, alternative="both")


def test_binary_p_value_matches_every_permutation_of_four_items():
    # 4 items: all 24 shuffles of dconf against dperf give the exact law of tau-b
    c = np.array([[1, 0], [1, 1], [0, 0], [0, 1]], dtype=float)
    p = np.array([[1, 0], [0, 0], [0, 1], [1, 1]], dtype=float)
    x, y = c[:, 0] - c[:, 1], p[:, 0] - p[:, 1]
    obs = stats.kendalltau(x, y).statistic
    law = [stats.kendalltau(x[list(q)], y).statistic for q in itertools.permutations(range(4))]
    exact = np.mean(np.array(law) >= obs - 1e-12)
    res = pw.pair_permutation_test(c, p, permutations=6000, rng=3, alternative="greater",
                                   engine="numpy")  # fmt: skip
    assert res.p_value[0] == pytest.approx(exact, abs=0.02)
    assert res.null_mean[0] == pytest.approx(np.mean(law), abs=0.03)
    assert res.null_sd[0] == pytest.approx(np.std(law), abs=0.03)


# --------------------------------------------------------------------------------------------
# The compiled engine's choice (numba stood in for by a fake module)
# --------------------------------------------------------------------------------------------


@pytest.fixture()
def fake_numba(monkeypatch):
    fake = types.ModuleType("metacog_metrics.pairwise._numba")
    monkeypatch.setitem(sys.modules, "metacog_metrics.pairwise._numba", fake)
    monkeypatch.setattr(pairwise_pkg, "_numba", fake, raising=False)
    monkeypatch.setattr(engines, "_compiled_state", {})
    monkeypatch.delenv("METACOG_NO_NUMBA", raising=False)
    return fake


@pytest.fixture()
def no_numba(monkeypatch):
    monkeypatch.setitem(sys.modules, "metacog_metrics.pairwise._numba", None)
    monkeypatch.delattr(pairwise_pkg, "_numba", raising=False)
    monkeypatch.setattr(engines, "_compiled_state", {})
    monkeypatch.delenv("METACOG_NO_NUMBA", raising=False)


@pytest.mark.parametrize("value", ["", "0", "false", "no", " No ", "FALSE"])
def test_auto_takes_the_kernels_unless_the_variable_says_no(fake_numba, monkeypatch, value):
    monkeypatch.setenv("METACOG_NO_NUMBA", value)
    assert engines.compiled_kernels("auto") is fake_numba
    assert engines.compiled_engine_available() is True


@pytest.mark.parametrize("value", ["1", "yes", "true", " TRUE ", "off"])
def test_the_variable_turns_auto_to_numpy_only(fake_numba, monkeypatch, value):
    monkeypatch.setenv("METACOG_NO_NUMBA", value)
    assert engines.compiled_kernels("auto") is None
    assert engines.compiled_engine_available("auto") is False
    assert engines.compiled_engine_available() is False  # "auto" by default
    assert engines.compiled_kernels("numba") is fake_numba  # numba insists
    assert engines.compiled_kernels("numpy") is None


def test_kernels_are_imported_once(fake_numba, monkeypatch):
    assert engines.compiled_kernels("numba") is fake_numba
    assert engines._compiled_state == {"module": fake_numba}
    other = types.ModuleType("other")
    monkeypatch.setitem(sys.modules, "metacog_metrics.pairwise._numba", other)
    monkeypatch.setattr(pairwise_pkg, "_numba", other)
    assert engines.compiled_kernels("auto") is fake_numba
    assert engines.compiled_engine_available("numpy") is False


def test_without_numba_auto_is_numpy_and_numba_names_the_extra(no_numba):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert engines.compiled_kernels("auto") is None
    assert isinstance(engines._compiled_state["error"], ImportError)
    assert engines._compiled_state["module"] is None
    with pytest.raises(ImportError, match=r"^engine='numba' needs numba \(pip install "
                       r"'metacog-eval\[fast\]'\): ModuleNotFoundError\(") as info:  # fmt: skip
        engines.compiled_kernels("numba")
    assert info.value.__cause__ is engines._compiled_state["error"]
    assert engines.compiled_engine_available("numba") is False
    assert engines.compiled_engine_available() is False
    res = pw.pair_permutation_test(C_BIN, P_BIN, permutations=5, rng=0)
    assert res.engine == "numpy"


def test_a_numba_that_fails_to_compile_warns_once_and_falls_back(monkeypatch):
    monkeypatch.delattr(pairwise_pkg, "_numba", raising=False)
    monkeypatch.setattr(engines, "_compiled_state", {})
    monkeypatch.delenv("METACOG_NO_NUMBA", raising=False)
    real_import = builtins.__import__

    def failing(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "metacog_metrics.pairwise" and fromlist and "_numba" in fromlist:
            raise RuntimeError("boom")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", failing)
    with pytest.warns(RuntimeWarning) as caught:
        assert engines.compiled_engine_available() is False
    assert len(caught) == 1
    assert str(caught[0].message) == (
        "compiled per-pair kernels unavailable (RuntimeError('boom')); using the NumPy engine"
    )
    assert not caught[0].filename.endswith("engines.py")  # it points at a caller
    with pytest.raises(ImportError, match=r"needs numba .*RuntimeError\('boom'\)"):
        engines.compiled_kernels("numba")


# --------------------------------------------------------------------------------------------
# The compiled tasks, with stand-in kernels
# --------------------------------------------------------------------------------------------


class FakeKernels:
    """Stand-in for the compiled kernels: records its arguments, returns known accumulations."""

    def __init__(self):
        self.calls = []

    def state(self, ss):
        return ("state", ss.entropy, ss.spawn_key)

    def number_tables(self, n):
        self.calls.append(("number_tables", n))
        return np.array([float(n)])

    @staticmethod
    def _acc(k):  # pair j: ge = j + 1, le = 2, n = 10, s1 = 2 (j + 1), s2 = 30
        j = np.arange(k, dtype=float)
        return np.stack([j + 1, 0 * j + 2, 0 * j + 10, 2 * (j + 1), 0 * j + 30], axis=1)

    def margins_kernel(self, margins, s_obs, n, state, lf, ratio, none):
        self.calls.append(("base_rate", margins.copy(), s_obs.copy(), n, state, lf, ratio, none))
        return self._acc(margins.shape[0])

    def categories_kernel(self, a, b, obs, n, state, lf, ratio, none):
        self.calls.append(("calibration", a.copy(), b.copy(), obs.copy(), n, state, lf, ratio,
                           none))  # fmt: skip
        return self._acc(a.shape[0])

    def levels_margins_kernel(self, row_off, rows, cols, s_obs, n, state, lf, per_level, none):
        self.calls.append(("levels", row_off.copy(), rows.copy(), cols.copy(), s_obs.copy(), n,
                           state, lf, per_level, none))  # fmt: skip
        return self._acc(cols.shape[0])

    def matching_kernel(self, *args):
        self.calls.append(("matching", *args))
        tau = args[8]
        acc = self._acc(tau.size)
        acc[:, 0] = np.rint(100 * np.nan_to_num(tau, nan=0.0)) + 50  # identifies the pair
        return acc


def _assert_none(none):
    assert isinstance(none, np.ndarray) and none.shape == (0, 0)


@pytest.mark.parametrize("null", ["base_rate", "calibration_preserving"])
def test_compiled_binary_plan_hands_the_kernels_margins_and_scales_the_moments(monkeypatch, null):
    fake = FakeKernels()
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    res = pw.pair_permutation_test(C_BIN, P_BIN, null=null, permutations=9, rng=4)
    assert res.engine == "numba"
    assert fake.calls[0] == ("number_tables", 8)
    call = fake.calls[1]
    for k, (a, b) in enumerate(PAIRS3):
        x, y = _binary_hand(a, b)
        scale = _scale(x, y)
        if null == "base_rate":
            _, margins, s_obs, n, state, lf, ratio, none = call
            r, c = _margins(x, y)
            np.testing.assert_array_equal(margins[k], r + c)
            assert margins.dtype == np.int64 and margins.flags.c_contiguous
            assert s_obs.dtype == np.int64 and s_obs[k] == _brute_s(x, y)
            mean_expected = 2 * (k + 1) * scale / 10 if not math.isnan(scale) else math.nan
            s2 = 30 * scale**2
        else:
            _, ca, cb, obs, n, state, lf, ratio, none = call
            assert ca.dtype == np.int64 and cb.dtype == np.int64
            if math.isnan(scale):
                assert math.isnan(obs[k])
            else:
                assert obs[k] == pytest.approx(stats.kendalltau(x, y).statistic)
            mean_expected, s2 = 2 * (k + 1) / 10, 30
        assert n == 9 and ratio == 4.0 and state == ("state", 4, (0,))
        np.testing.assert_array_equal(lf, [8.0])
        _assert_none(none)
        if math.isnan(scale):
            assert math.isnan(res.p_value[k])
            if null == "base_rate":
                assert res.null_mean[k] == 0.0 and res.null_sd[k] == 0.0
            continue
        assert res.p_greater[k] == (k + 2) / 11 and res.p_less[k] == 3 / 11
        assert res.null_mean[k] == pytest.approx(mean_expected, rel=1e-12)
        var = (s2 - 10 * mean_expected**2) / 9
        assert res.null_sd[k] == pytest.approx(math.sqrt(max(var, 0)), rel=1e-9, abs=1e-12)
        assert res.n_valid[k] == 10


def test_compiled_binary_calibration_categories(monkeypatch):
    fake = FakeKernels()
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    pw.pair_permutation_test(C_BIN, P_BIN, null="calibration_preserving", permutations=3, rng=0)
    _, ca, cb, *_ = fake.calls[1]

    np.testing.assert_array_equal(ca, [_cats(a) for a, _ in PAIRS3])
    np.testing.assert_array_equal(cb, [_cats(b) for _, b in PAIRS3])


def test_compiled_sd_is_never_the_root_of_a_negative_variance(monkeypatch):
    fake = FakeKernels()
    fake._acc = lambda k: np.tile([1.0, 1.0, 2.0, 2.0, 1.9999999], (k, 1))  # var < 0 by rounding
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    res = pw.pair_permutation_test(C_BIN, P_BIN, null="calibration_preserving", permutations=2)
    np.testing.assert_array_equal(res.null_sd, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(res.null_mean, [1.0, 1.0, 1.0])


# Real-valued data: 7 items x 3 models. Models 0 and 1 have 7 distinct values (their pair
# has 49 dconf levels > 4 per item: no matching tables); model 2 has two values.
C_REAL = np.array(
    [
        [0.11, 0.52, 0.2],
        [0.37, 0.18, 0.7],
        [0.64, 0.93, 0.2],
        [0.05, 0.41, 0.7],
        [0.88, 0.66, 0.7],
        [0.29, 0.07, 0.2],
        [0.73, 0.35, 0.2],
    ]
)
P_REAL = np.array(
    [[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 1], [1, 1, 0]], dtype=float
)


def _real_hand(a, b, c=C_REAL, p=P_REAL):
    return np.round(c[:, a] - c[:, b], 12), p[:, a] - p[:, b]


def _level_rows(x):
    _, counts = np.unique(x, return_counts=True)
    return counts


def test_compiled_real_valued_groups_keep_the_pairs_order(monkeypatch):
    fake = FakeKernels()
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    exact = _Recorder(cp._item_permutations)
    monkeypatch.setattr(cp, "_item_permutations", exact)
    res = pw.pair_permutation_test(
        C_REAL, P_REAL, null="calibration_preserving", permutations=12, rng=6, workers=1
    )
    assert res.engine == "numba"
    assert fake.calls[0] == ("number_tables", 7)
    kinds = [call[0] for call in fake.calls[1:]]
    assert kinds == ["matching"]  # pairs (0, 2) and (1, 2); (0, 1) permutes the items
    m = fake.calls[1]
    taus = [stats.kendalltau(*_real_hand(a, b)).statistic for a, b in PAIRS3]
    np.testing.assert_allclose(m[9], [taus[1], taus[2]], rtol=1e-12)
    assert m[10] == 12 and m[11] == ("state", 6, (0, 0)) and m[13] == 12.0
    np.testing.assert_array_equal(m[8], [7, 7])  # items
    np.testing.assert_array_equal(m[12], [7.0])
    _assert_none(m[14])
    # the item-permutation group: its own spawned child, pair (0, 1) only
    (args, recorded, out) = exact.calls[0]
    ca, pa, cb, pb, n, ss, levels = args
    assert recorded is None  # (the recorder keeps the last argument apart: no draws recorded)
    # confidences in hundredths: the integer codes of the grid q = 100, 201 dconf levels
    assert n == 12 and ca.shape == (1, 7) and levels == 201
    np.testing.assert_array_equal(ca[0], np.rint(C_REAL[:, 0] * 100))
    np.testing.assert_array_equal(cb[0], np.rint(C_REAL[:, 1] * 100))
    np.testing.assert_array_equal(pa[0], P_REAL[:, 0])
    np.testing.assert_array_equal(pb[0], P_REAL[:, 1])
    assert (ss.entropy, ss.spawn_key) == (6, (1, 0))
    # results back in the pairs' order: pair 0 from the items, pairs 1 and 2 from the fake
    np.testing.assert_allclose(res.tau, taus, rtol=1e-12)
    for k in (1, 2):
        assert res.p_greater[k] == (np.rint(100 * taus[k]) + 50 + 1) / 11
    # (a shuffle can match B's correct items to A's: constant dperf, no tau-b)
    assert res.n_valid[0] == out[0, 2] and 6 <= out[0, 2] <= 12
    assert res.p_greater[0] == (out[0, 0] + 1) / (out[0, 2] + 1)


def test_compiled_real_valued_engine_label_when_every_pair_permutes_items(monkeypatch):
    fake = FakeKernels()
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    res = pw.pair_permutation_test(
        C_REAL[:, :2], P_REAL[:, :2], null="calibration_preserving", permutations=5, rng=0
    )
    assert res.engine == "numpy" and np.isfinite(res.p_value).all()
    assert fake.calls == []  # no pair for the kernels: they are not called


def test_compiled_levels_task_scales_by_each_pairs_margins(monkeypatch):
    fake = FakeKernels()
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    c = C_REAL.copy()
    c[:, 2] = c[:, 0]  # pair (0, 2): constant dconf
    res = pw.pair_permutation_test(c, P_REAL, permutations=8, rng=3, workers=1)
    assert res.engine == "numba"
    _, row_off, rows, cols, s_obs, n, state, lf, per_level, none = fake.calls[1]
    assert n == 8 and state == ("state", 3, (0,)) and per_level == 8.0
    np.testing.assert_array_equal(lf, [7.0])
    _assert_none(none)
    sizes = []
    for k, (a, b) in enumerate(PAIRS3):
        x, y = _real_hand(a, b, c)
        r = _level_rows(x)
        sizes.append(r.size)
        np.testing.assert_array_equal(rows[row_off[k] : row_off[k + 1]], r)
        np.testing.assert_array_equal(cols[k], _margins(np.zeros(7), y)[1])
        assert s_obs[k] == _brute_s(x, y)
        scale = _scale(x, y)
        if math.isnan(scale):  # moments zeroed, whatever the kernel left there
            assert res.null_mean[k] == 0.0 and res.null_sd[k] == 0.0
            assert math.isnan(res.p_value[k])
            continue
        assert res.null_mean[k] == pytest.approx(2 * (k + 1) * scale / 10, rel=1e-12)
        var = (30 * scale**2 - 10 * (2 * (k + 1) * scale / 10) ** 2) / 9
        assert res.null_sd[k] == pytest.approx(math.sqrt(var), rel=1e-9)
    assert sizes == [6, 1, 6]  # 0.88 - 0.66 = 0.29 - 0.07: two dconf tie


def test_compiled_levels_task_of_no_pairs(monkeypatch):
    fake = FakeKernels()
    none = np.zeros(0, np.int64)
    inputs = pd.PairInputs(C_REAL, P_REAL, none, none, False, "numpy")
    inputs.kernels = fake
    acc = br._levels_compiled(inputs, none)(5, np.random.SeedSequence(0), None)
    assert acc.shape == (0, 5)


# --------------------------------------------------------------------------------------------
# Real-valued confidence, NumPy engine
# --------------------------------------------------------------------------------------------


def test_levels_draws_get_each_pairs_level_counts(monkeypatch):
    rec = _Recorder(br._levels_margins_s)
    monkeypatch.setattr(br, "_levels_margins_s", rec)
    monkeypatch.setattr(pd, "_DRAWS_PER_STEP", 2 * 30)  # two pairs a step
    c = C_REAL.copy()
    c[:, 2] = np.round(c[:, 0] + 0.25, 2)  # pair (0, 2): one level (dconf constant)
    res = pw.pair_permutation_test(c, P_REAL, permutations=30, rng=8, engine="numpy", workers=1)
    assert res.engine == "numpy"
    widths = [_level_rows(_real_hand(a, b, c)[0]).size for a, b in PAIRS3]
    assert [args[0].shape for args, _, _ in rec.calls] == [(2, max(widths[:2])), (1, widths[2])]
    assert _seed_keys([rec.calls[0][1]]) == [(8, (0,))] and rec.calls[0][1] is rec.calls[1][1]
    rows = [r for args, _, _ in rec.calls for r in args[0]]
    cols = np.concatenate([args[1] for args, _, _ in rec.calls])
    draws = np.concatenate([out for _, _, out in rec.calls])
    assert all(args[2] == 30 for args, _, _ in rec.calls)
    for k, (a, b) in enumerate(PAIRS3):
        x, y = _real_hand(a, b, c)
        r = _level_rows(x)
        np.testing.assert_array_equal(rows[k], np.pad(r, (0, rows[k].size - r.size)))
        np.testing.assert_array_equal(cols[k], _margins(np.zeros(7), y)[1])
        scale = _scale(x, y)
        if math.isnan(scale):
            assert res.n_valid[k] == 0 and math.isnan(res.p_value[k])
            continue
        assert res.tau[k] == pytest.approx(stats.kendalltau(x, y).statistic, rel=1e-12)
        s_obs = _brute_s(x, y)
        _check_pair(res, k, draws[k] * scale, s_obs * scale, 30)


def test_levels_pair_task_of_no_pairs():
    none = np.zeros(0, np.int64)
    inputs = pd.PairInputs(C_REAL, P_REAL, none, none, False, "numpy")
    acc = br._levels_numpy(inputs, none)(5, np.random.SeedSequence(0), None)
    assert acc.shape == (0, 5)


class _PermRecorder:
    """``np.random.default_rng`` that records the seeds and the ``permuted`` draws."""

    def __init__(self, monkeypatch):
        self.real = np.random.default_rng
        self.seeds, self.perms = [], []
        monkeypatch.setattr(np.random, "default_rng", self)

    def __call__(self, seed=None):
        self.seeds.append(seed)
        gen = self.real(seed)
        rec = self

        class G:
            def permuted(self, x, axis=None):
                out = gen.permuted(x, axis=axis)
                rec.perms.append((len(rec.seeds) - 1, out.copy()))
                return out

            def __getattr__(self, name):
                return getattr(gen, name)

        return G()


@pytest.mark.parametrize("grid", ["sorted", "tables", "nogrid"])
def test_item_permutations_counted_by_hand(monkeypatch, grid):
    if grid == "tables":  # 15 items on a grid of halves: 5 dconf codes, 3 * 5 <= 15 -> tables
        rng = np.random.default_rng(4)
        c = rng.integers(0, 3, size=(15, 3)) / 2
        p = (rng.random((15, 3)) < 0.5).astype(float)
    elif grid == "nogrid":  # no denominator up to 1000: the values themselves, sorted
        c, p = np.sqrt(C_REAL + 0.013), P_REAL
    else:
        c, p = C_REAL, P_REAL
    n_items = c.shape[0]
    b = 50
    # pairs one a chunk (the plan), draws 40 + 10 a step (the sampler)
    for module in (pw, cp):
        monkeypatch.setattr(module, "_ELEMENTS_PER_CHUNK", n_items * 40)
    coded = []
    codes = cp._tau_b_codes
    monkeypatch.setattr(cp, "_tau_b_codes", lambda *a: coded.append(a[0].shape) or codes(*a))
    rec = _PermRecorder(monkeypatch)
    res = pw.pair_permutation_test(
        c, p, null="calibration_preserving", permutations=b, rng=9, engine="numpy", workers=1
    )
    assert [(s.entropy, s.spawn_key) for s in rec.seeds] == [(9, (i,)) for i in range(3)]
    for k, (a, bb) in enumerate(PAIRS3):
        perms = [out[0] for i, out in rec.perms if i == k]
        assert [q.shape[0] for q in perms] == [40, 10]
        perms = np.concatenate(perms)
        x = c[:, a]
        draws = [
            stats.kendalltau(np.round(x - c[q, bb], 12), p[:, a] - p[q, bb]).statistic
            for q in perms
        ]
        obs = stats.kendalltau(np.round(x - c[:, bb], 12), p[:, a] - p[:, bb]).statistic
        assert res.tau[k] == pytest.approx(obs, rel=1e-12)
        _check_pair(res, k, draws, obs, b)
    if grid == "tables":  # the observed taus and both batches of draws on tables
        assert coded == [(1, 15), (1, 40, 15), (1, 10, 15)] * 3
    else:
        assert coded == []


def test_item_permutations_one_draw_a_batch(monkeypatch):
    for module in (pw, cp):  # fewer than the 7 items: 1 pair a chunk and 1 draw a step
        monkeypatch.setattr(module, "_ELEMENTS_PER_CHUNK", 6)
    rec = _PermRecorder(monkeypatch)
    res = pw.pair_permutation_test(C_REAL, P_REAL, null="calibration_preserving",
                                   permutations=3, rng=0, engine="numpy")  # fmt: skip
    assert [out.shape for _, out in rec.perms] == [(1, 1, 7)] * 9
    assert res.n_valid.max() <= 3


def test_exact_obs_paths_match_scipy(monkeypatch):
    rng = np.random.default_rng(1)
    ca = rng.integers(0, 5, size=(2, 15)).astype(float)  # codes on a grid of 4ths: q = 4
    cb = rng.integers(0, 5, size=(2, 15)).astype(float)
    pa = (rng.random((2, 15)) < 0.5).astype(float)
    pb = (rng.random((2, 15)) < 0.5).astype(float)
    calls = []
    codes = cp._tau_b_codes
    monkeypatch.setattr(cp, "_tau_b_codes", lambda *a: calls.append(a[2]) or codes(*a))
    want = [stats.kendalltau(ca[i] - cb[i], pa[i] - pb[i]).statistic for i in range(2)]
    # 9 levels: 27 > 15 items -> sorted
    np.testing.assert_allclose(cp._exact_obs(ca, pa, cb, pb, 9), want, rtol=1e-12)
    np.testing.assert_allclose(cp._exact_obs(ca, pa, cb, pb, None), want, rtol=1e-12)
    assert calls == []
    # codes 0..2, 5 levels: 15 <= 15 items -> tables (codes shifted by q = 2)
    ca2, cb2 = np.minimum(ca, 2), np.minimum(cb, 2)
    want2 = [stats.kendalltau(ca2[i] - cb2[i], pa[i] - pb[i]).statistic for i in range(2)]
    np.testing.assert_allclose(cp._exact_obs(ca2, pa, cb2, pb, 5), want2, rtol=1e-12)
    assert calls == [5]
    # broadcast rows against draws: (2, 1, 15) against (2, 3, 15)
    got = cp._exact_obs(ca2[:, None], pa[:, None], np.repeat(cb2[:, None], 3, 1), pb[:, None], 5)
    np.testing.assert_allclose(got, np.repeat(np.array(want2)[:, None], 3, 1), rtol=1e-12)


def _recording_bar(sizes: list) -> type:
    """A progress-bar class that appends its total, then each update, to ``sizes``."""

    class Bar:
        def __init__(self, total, desc, enabled):
            sizes.append(total)

        def update(self, k):
            sizes.append(k)

        def close(self):
            pass

    return Bar


def test_real_valued_chunks_of_pairs_and_progress_sizes(monkeypatch):
    sizes = []
    monkeypatch.setattr(common, "_progress", _recording_bar(sizes))
    monkeypatch.setattr(pw, "_TABLES_PER_CHUNK", 2 * 10)  # base-rate: two pairs a chunk
    rec = _Recorder(br._levels_margins_s)
    monkeypatch.setattr(br, "_levels_margins_s", rec)
    pw.pair_permutation_test(C_REAL, P_REAL, permutations=10, rng=1, engine="numpy",
                             progress=True, workers=1)  # fmt: skip
    assert sizes == [30, 20, 10]
    assert _seed_keys([r for _, r, _ in rec.calls]) == [(1, (0,)), (1, (1,))]
    sizes.clear()
    for module in (pw, cp):  # items: 2 pairs a chunk (256 cap)
        monkeypatch.setattr(module, "_ELEMENTS_PER_CHUNK", 7 * 256 * 2)
    pw.pair_permutation_test(C_REAL, P_REAL, null="calibration_preserving", permutations=300,
                             rng=1, engine="numpy", progress=True, workers=1)  # fmt: skip
    assert sizes == [900, 600, 300]


def test_real_valued_p_value_matches_every_permutation_of_five_items():
    c = np.array([[0.2, 0.5], [0.9, 0.1], [0.4, 0.4], [0.7, 0.3], [0.1, 0.8]])
    p = np.array([[1, 0], [1, 1], [0, 0], [1, 0], [0, 1]], dtype=float)
    x, y = np.round(c[:, 0] - c[:, 1], 12), p[:, 0] - p[:, 1]
    obs = stats.kendalltau(x, y).statistic
    perms = list(itertools.permutations(range(5)))
    base = [stats.kendalltau(x, y[list(q)]).statistic for q in perms]
    calib = [
        stats.kendalltau(np.round(c[:, 0] - c[list(q), 1], 12), p[:, 0] - p[list(q), 1]).statistic
        for q in perms
    ]
    for null, law in (("base_rate", base), ("calibration_preserving", calib)):
        res = pw.pair_permutation_test(c, p, null=null, permutations=4000, rng=2,
                                       alternative="less", engine="numpy")  # fmt: skip
        assert res.p_value[0] == pytest.approx(np.mean(np.array(law) <= obs + 1e-12), abs=0.03)
        assert res.null_mean[0] == pytest.approx(np.mean(law), abs=0.03)


# --------------------------------------------------------------------------------------------
# Chunk and step boundaries, defaults, no pairs
# --------------------------------------------------------------------------------------------


def _five_models():
    c = np.concatenate([C_BIN, C_BIN[::-1, :2]], axis=1)
    p = np.concatenate([P_BIN, 1 - P_BIN[:, :2]], axis=1)
    return c, p


def test_binary_chunk_of_ten_pairs_and_steps_of_one_pair(monkeypatch):
    c, p = _five_models()
    for draws_per_step, calls in ((1 << 16, [10]), (10, [1] * 10)):  # step 0 -> one pair
        rec = _Recorder(br._margins_s)
        monkeypatch.setattr(br, "_margins_s", rec)
        monkeypatch.setattr(pd, "_DRAWS_PER_STEP", draws_per_step)
        res = pw.pair_permutation_test(c, p, permutations=20, rng=3, engine="numpy", workers=1)
        assert [len(args[0]) for args, _, _ in rec.calls] == calls
        _check_recorded_pairs(res, rec, c, p, 20)


@pytest.mark.parametrize("null", ["base_rate", "calibration_preserving"])
def test_compiled_binary_plan_of_ten_pairs(monkeypatch, null):
    fake = FakeKernels()
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    c, p = _five_models()
    res = pw.pair_permutation_test(c, p, null=null, permutations=9, rng=4)
    ia, ib = np.triu_indices(5, k=1)
    for k, (a, b) in enumerate(zip(ia, ib)):
        scale = _scale(c[:, a] - c[:, b], p[:, a] - p[:, b])
        if null == "calibration_preserving":
            scale = 1.0
        if math.isnan(scale):
            assert res.null_mean[k] == 0.0 and res.null_sd[k] == 0.0
            continue
        assert res.null_mean[k] == pytest.approx(2 * (k + 1) * scale / 10, rel=1e-12)


def test_partial_last_chunk_and_chunks_of_one_pair(monkeypatch):
    sizes = []
    monkeypatch.setattr(common, "_progress", _recording_bar(sizes))
    rec = _Recorder(br._margins_s)
    monkeypatch.setattr(br, "_margins_s", rec)
    monkeypatch.setattr(pw, "_TABLES_PER_CHUNK", 2 * 25)  # 3 pairs: chunks of 2 and 1
    pw.pair_permutation_test(C_BIN, P_BIN, permutations=25, rng=0, engine="numpy", progress=True)
    assert sizes == [75, 50, 25]
    sizes.clear()
    monkeypatch.setattr(pw, "_TABLES_PER_CHUNK", 5)  # 5 // 25 = 0: one pair a chunk
    pw.pair_permutation_test(C_BIN, P_BIN, permutations=25, rng=0, engine="numpy", progress=True)
    assert sizes == [75, 25, 25, 25]
    sizes.clear()
    monkeypatch.setattr(pw, "_TABLES_PER_CHUNK", 5)  # real-valued levels: one pair a chunk
    pw.pair_permutation_test(C_REAL, P_REAL, permutations=10, rng=0, engine="numpy", progress=True)
    assert sizes == [30, 10, 10, 10]


def test_levels_steps_of_one_pair_and_a_pair_of_one_level(monkeypatch):
    rec = _Recorder(br._levels_margins_s)
    monkeypatch.setattr(br, "_levels_margins_s", rec)
    monkeypatch.setattr(pd, "_DRAWS_PER_STEP", 10)  # 10 // 30 = 0: one pair a step
    c = C_REAL.copy()
    c[:, 2] = np.round(c[:, 1] + 0.25, 2)  # pair (1, 2): one level
    pw.pair_permutation_test(c, P_REAL, permutations=30, rng=8, engine="numpy")
    widths = [_level_rows(_real_hand(a, b, c)[0]).size for a, b in PAIRS3]
    assert widths[2] == 1
    assert [args[0].shape for args, _, _ in rec.calls] == [(1, w) for w in widths]
    assert all(args[0].dtype == np.int64 for args, _, _ in rec.calls)  # counts, as integers


def test_compiled_matching_kernel_gets_the_pairs_level_tables(monkeypatch):
    from metacog_metrics.pairwise.tau import _level_tables

    fake = FakeKernels()
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    pw.pair_permutation_test(C_REAL, P_REAL, null="calibration_preserving", permutations=4, rng=0)
    m = fake.calls[1]
    ia, ib = np.array([0, 0, 1]), np.array([1, 2, 2])
    want = _level_tables(C_REAL, P_REAL, ia, ib).select([1, 2])
    names = ["a_off", "a_cnt", "b_off", "b_cnt", "cell_off", "cell_code", "n_levels", "n"]
    for i, name in enumerate(names):
        np.testing.assert_array_equal(m[1 + i], getattr(want, name), err_msg=name)


def test_defaults_ten_thousand_draws_and_no_progress_bar(monkeypatch):
    enabled = []
    real = common._progress
    monkeypatch.setattr(common, "_progress", lambda t, d, e: enabled.append(e) or real(t, d, e))
    res = pw.pair_permutation_test(C_BIN[:, :2], P_BIN[:, :2], engine="numpy")
    assert res.permutations == 10_000 and res.n_valid.tolist() == [10_000]
    assert enabled == [False]
    assert res.null == "base_rate" and res.alternative == "two-sided"


@pytest.mark.parametrize("real", [False, True])
def test_no_pairs_give_empty_results(monkeypatch, real):
    fake = FakeKernels()
    monkeypatch.setattr(engines, "compiled_kernels", lambda engine: fake)
    c, p = (C_REAL, P_REAL) if real else (C_BIN, P_BIN)
    for null in ("base_rate", "calibration_preserving"):
        res = pw.pair_permutation_test(c, p, null=null, permutations=5, rng=0, pairs=([], []))
        assert res.tau.shape == res.p_value.shape == res.null_sd.shape == (0,)
        assert res.n_valid.dtype == np.int64
    assert fake.calls == []  # no pair: no kernel work at all


def test_plan_default_engine_is_auto(monkeypatch, fake_numba):
    monkeypatch.setenv("METACOG_NO_NUMBA", "1")
    ia, ib = np.triu_indices(3, k=1)
    inputs = pd.PairInputs(C_BIN, P_BIN, ia, ib, True)  # engine "auto" by default
    plan = pw._pair_plan(inputs, get_null("base_rate"), 10, "two-sided", 0)
    res = common._execute([plan], 1, False)[0]
    assert res.engine == "numpy" and res.n_valid.tolist() == [10, 0, 10]
