"""Sequential per-pair p-values (Besag and Clifford 1991): the rule, its exact law, its validity.

The references are outside the module: the law of a pair's null tau-b by enumerating every
permutation of its items; the law of the sequential p-value given that null by a dynamic
program over the draws one at a time (the closed forms for one side); their sum over the null
law of the observed value (exact super-uniformity); the engines' p-values on thousands of
copies of one pair against that law (chi-square); rejection rates on pairs simulated under
each null; and the FDR decisions of the sequential and the fixed-n tests on generated and
real data.
"""

from __future__ import annotations

import functools
import itertools
import math
import os

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.pairwise import pair_permutation_test, pairwise_calibration
from metacog_metrics.pairwise.pair import compiled_engine_available
from metacog_metrics.pairwise.sequential import (
    DEFAULT_EXCEEDANCES,
    crossing_draws,
    exceedances_of,
    rounds,
    sequential_counts,
    sequential_p_values,
)
from tests.availability import unavailable
from tests.exact_laws import chi2_p

NULL_NAMES = ("base_rate", "calibration_preserving")
ALTERNATIVES = ("two-sided", "greater", "less")


def _engines() -> list:
    if compiled_engine_available() or os.environ.get("CI"):
        return ["numpy", "numba"]
    return ["numpy"]


# --------------------------------------------------------------------------------------------
# References: the exact null of a small pair, the exact law of the sequential p-value
# --------------------------------------------------------------------------------------------


def _tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """tau-b from the signs of all item pairs (NaN where a side is constant)."""
    i, j = np.triu_indices(x.size, 1)
    sx, sy = np.sign(np.round(x[i] - x[j], 12)), np.sign(y[i] - y[j])
    den = (i.size - (sx == 0).sum()) * (i.size - (sy == 0).sum())
    return float((sx * sy).sum() / math.sqrt(den)) if den > 0 else math.nan


def _exact_null(conf: np.ndarray, perf: np.ndarray, null: str) -> tuple[np.ndarray, np.ndarray]:
    """The law of a pair's tau-b under ``null`` over every permutation of its items: distinct
    values (rounded to 9 decimals; NaN left out) and their probabilities."""
    n = conf.shape[0]
    taus = []
    for perm in itertools.permutations(range(n)):
        perm = list(perm)
        if null == "base_rate":  # dperf permuted against dconf
            x, y = conf[:, 0] - conf[:, 1], (perf[:, 0] - perf[:, 1])[perm]
        else:  # B's (conf, perf) items permuted against A's
            x, y = conf[:, 0] - conf[perm, 1], perf[:, 0] - perf[perm, 1]
        taus.append(_tau_b(x, y))
    taus = np.round(np.array(taus), 9)
    taus = taus[np.isfinite(taus)]
    values, counts = np.unique(taus, return_counts=True)
    return values, counts / counts.sum()


def _one_sided_law(q: float, cap: int, h: int) -> dict[float, float]:
    """The sequential p-value of one side, draws at least as extreme with probability ``q``:
    ``h / L`` with the negative binomial law of the ``h``-th success, else ``(G + 1) / (cap +
    1)`` with the binomial law of ``G < h`` at the cap."""
    law: dict[float, float] = {}
    for draws in range(h, cap + 1):
        p = h / draws
        law[p] = law.get(p, 0.0) + (stats.nbinom.pmf(draws - h, h, q) if q > 0 else 0.0)
    for g in range(h):
        p = (g + 1) / (cap + 1)
        law[p] = law.get(p, 0.0) + stats.binom.pmf(g, cap, q)
    return law


def _two_sided_law(above: float, below: float, equal: float, cap: int, h: int
                   ) -> dict[float, float]:  # fmt: skip
    """The two-sided sequential p-value, ``min(1, 2 min(p_greater, p_less))``, by a dynamic
    program over the draws one at a time: a draw is above the observed value (counts for
    ``>=`` only), below it (``<=`` only) or equal (both); each side stops at its ``h``-th
    count, the draws at both stops or at the cap.

    States: both sides running with counts ``(i, j)`` (``rr``); one running with count ``i``,
    the other stopped at draw ``L`` (``rs``: the ``>=`` side runs; ``sr``: the ``<=`` side);
    both stopped (final, then ``p = 2 h / (the later stop)``).
    """
    rr = np.zeros((h, h))
    rr[0, 0] = 1.0
    rs = np.zeros((h, cap + 1))
    sr = np.zeros((cap + 1, h))
    final: dict[float, float] = {}

    def add(p: float, pr: float) -> None:
        if pr:
            final[round(min(1.0, p), 12)] = final.get(round(min(1.0, p), 12), 0.0) + pr

    up = above + equal  # the >= side counts
    down = below + equal  # the <= side counts
    for at in range(1, cap + 1):
        a, b, e = rr * above, rr * below, rr * equal
        new_rr = np.zeros_like(rr)
        new_rs = rs * below
        new_rs[1:] += rs[:-1] * up
        new_sr = sr * above
        new_sr[:, 1:] += sr[:, :-1] * down
        add(2 * h / at, rs[h - 1].sum() * up + sr[:, h - 1].sum() * down)
        new_rr[1:, :] += a[:-1, :]
        new_sr[at, :] += a[h - 1, :]
        new_rr[:, 1:] += b[:, :-1]
        new_rs[:, at] += b[:, h - 1]
        new_rr[1:, 1:] += e[:-1, :-1]
        new_sr[at, 1:] += e[h - 1, :-1]
        new_rs[1:, at] += e[:-1, h - 1]
        add(2 * h / at, e[h - 1, h - 1])
        rr, rs, sr = new_rr, new_rs, new_sr
    counts = (np.arange(h) + 1) / (cap + 1)  # a running side's p-value at the cap
    stops = h / np.maximum(np.arange(cap + 1), 1)  # a stopped side's
    for i in range(h):
        for j in range(h):
            add(2 * min(counts[i], counts[j]), rr[i, j])
        for stop in range(1, cap + 1):
            add(2 * min(counts[i], stops[stop]), rs[i, stop])
            add(2 * min(stops[stop], counts[i]), sr[stop, i])
    return final


def _sequential_law(values: np.ndarray, probs: np.ndarray, observed: float, cap: int, h: int,
                    alternative: str) -> dict[float, float]:  # fmt: skip
    """The law of the sequential p-value of ``observed`` against the null law
    ``(values, probs)``."""
    above = float(probs[values > observed + 1e-9].sum())
    below = float(probs[values < observed - 1e-9].sum())
    equal = 1.0 - above - below
    if alternative == "greater":
        return _one_sided_law(above + equal, cap, h)
    if alternative == "less":
        return _one_sided_law(below + equal, cap, h)
    return _two_sided_law(above, below, equal, cap, h)


def _rounded(law: dict[float, float]) -> dict[float, float]:
    out: dict[float, float] = {}
    for p, pr in law.items():
        key = round(p, 12)
        out[key] = out.get(key, 0.0) + pr
    return out


#: Small pairs whose null laws are enumerated: binary and real-valued confidence.
_PAIRS = {
    "binary": (
        np.array([[1, 0], [1, 1], [0, 0], [1, 0], [0, 1], [1, 1], [0, 0]], dtype=float),
        np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0], [0, 1], [1, 0]], dtype=float),
    ),
    "levels": (
        np.array([[0.9, 0.2], [0.6, 0.6], [0.3, 0.1], [0.8, 0.5], [0.1, 0.7], [0.4, 0.4]]),
        np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0], [1, 1]], dtype=float),
    ),
}


@functools.cache
def _null_of(kind: str, null: str) -> tuple[np.ndarray, np.ndarray]:
    conf, perf = _PAIRS[kind]
    return _exact_null(conf, perf, null)


# --------------------------------------------------------------------------------------------
# The references themselves
# --------------------------------------------------------------------------------------------


def test_the_exact_laws_sum_to_one_and_agree_with_a_direct_simulation():
    rng = np.random.default_rng(0)
    above, below, equal, cap, h = 0.3, 0.5, 0.2, 30, 3
    law = _two_sided_law(above, below, equal, cap, h)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    for side in (0.4, 0.05):
        assert sum(_one_sided_law(side, cap, h).values()) == pytest.approx(1.0, abs=1e-12)

    def simulate() -> float:  # the rule draw by draw
        g = e = 0
        stop_g = stop_e = 0
        for at in range(1, cap + 1):
            u = rng.random()
            kind = 0 if u < above else (1 if u < above + below else 2)
            if kind in (0, 2) and not stop_g:
                g += 1
                stop_g = at if g == h else 0
            if kind in (1, 2) and not stop_e:
                e += 1
                stop_e = at if e == h else 0
            if stop_g and stop_e:
                break
        p_g = h / stop_g if stop_g else (g + 1) / (cap + 1)
        p_e = h / stop_e if stop_e else (e + 1) / (cap + 1)
        return round(min(1.0, 2 * min(p_g, p_e)), 12)

    law = _rounded(law)
    support = sorted(law)
    drawn = [simulate() for _ in range(20_000)]
    assert chi2_p(np.array(drawn), np.array(support), [law[p] for p in support]) > 1e-3


# --------------------------------------------------------------------------------------------
# The rule's pieces
# --------------------------------------------------------------------------------------------


def test_exceedances_and_rounds():
    assert exceedances_of(True) == DEFAULT_EXCEEDANCES == 20
    assert exceedances_of(False) == exceedances_of(0) == 0
    assert exceedances_of(7) == 7
    for bad in (-1, 2.5):
        with pytest.raises(ValueError, match="sequential must be"):
            exceedances_of(bad)
    for cap, h in ((10_000, 20), (99, 3), (1, 20), (5000, 1)):
        sizes = rounds(cap, h)
        assert sum(sizes) == cap and sizes[0] == min(cap, 4 * h)
        assert all(b == 2 * a for a, b in itertools.pairwise(sizes[:-1]))


def test_crossing_draws_follow_the_law_of_a_random_order():
    # 3 draws above the observed value, 2 below, 1 equal: the 2nd draw >= it and the 2nd
    # draw <= it, over the 60 distinct orders of the six draws
    kinds = [0, 0, 0, 1, 1, 2]
    law: dict[tuple[int, int], int] = {}
    for order in set(itertools.permutations(kinds)):
        ge = [i + 1 for i, k in enumerate(order) if k != 1]
        le = [i + 1 for i, k in enumerate(order) if k != 0]
        law[ge[1], le[1]] = law.get((ge[1], le[1]), 0) + 1
    support = sorted(law)
    n = 20_000
    pos_ge, pos_le = crossing_draws(
        np.full(n, 4), np.full(n, 3), np.full(n, 6), np.full(n, 2), np.full(n, 2),
        np.random.default_rng(1),
    )  # fmt: skip
    drawn = [support.index((g, e)) for g, e in zip(pos_ge.tolist(), pos_le.tolist())]
    probs = np.array([law[s] for s in support], dtype=float) / 60
    assert chi2_p(np.array(drawn), np.arange(len(support)), probs) > 1e-3
    # a need of 0 asks nothing; every row on its own
    pos_ge, pos_le = crossing_draws(
        np.array([5, 0, 2]), np.array([0, 4, 2]), np.array([5, 4, 3]), np.array([5, 0, 0]),
        np.array([0, 4, 1]), np.random.default_rng(0),
    )  # fmt: skip
    assert pos_ge.tolist() == [5, 0, 0] and pos_le.tolist()[:2] == [0, 4]
    assert 1 <= pos_le[2] <= 3


def _toy_draw(q_above: float, q_below: float, rng_law: np.random.Generator):
    """A sampler of draws above / below / equal to an observed 0 with fixed probabilities,
    as accumulations (:func:`~metacog_metrics.pairwise.pair_draws.accumulate`)."""

    def draw(rows: np.ndarray, b: int, seed: np.random.SeedSequence) -> np.ndarray:
        rng = np.random.default_rng(seed)
        u = rng.random((rows.size, b))
        above, below = u < q_above, (u >= q_above) & (u < q_above + q_below)
        equal = ~above & ~below
        ge, le = (above | equal).sum(axis=1), (below | equal).sum(axis=1)
        return np.column_stack([ge, le, np.full(rows.size, b), np.zeros(rows.size),
                                np.zeros(rows.size)])  # fmt: skip

    return draw


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_sequential_counts_follow_the_exact_law_of_the_rule(alternative):
    # 5000 pairs whose draws are above the observed value with probability 0.2, below with
    # 0.7, equal with 0.1: their p-values against the dynamic program's law
    above, below, cap, h = 0.2, 0.7, 50, 3
    acc = sequential_counts(_toy_draw(above, below, None), 5000, np.zeros(5000), cap, h,
                            alternative, np.random.SeedSequence(3))  # fmt: skip
    p = sequential_p_values(acc, h, alternative)[0]
    law = _rounded(_sequential_law(np.array([-1.0, 0.0, 1.0]), np.array([below, 0.1, above]),
                                   0.0, cap, h, alternative))  # fmt: skip
    support = sorted(law)
    assert chi2_p(np.round(p, 12), np.array(support), [law[v] for v in support]) > 1e-3
    # draws end at the first round where the sides needed have stopped, or at the cap
    ends = np.cumsum(rounds(cap, h))
    assert np.isin(acc[:, 2], ends).all()


def test_a_pair_without_tau_gets_one_round_and_no_p_value():
    acc = sequential_counts(_toy_draw(0.5, 0.5, None), 2, np.array([np.nan, 0.0]), 1000, 5,
                            "two-sided", np.random.SeedSequence(0))  # fmt: skip
    assert acc[0, 2] == rounds(1000, 5)[0]  # one round, then no p-value to look for
    conf = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])  # dconf constant
    perf = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    for null in NULL_NAMES:
        res = pair_permutation_test(conf, perf, null=null, permutations=500, rng=0,
                                    sequential=True)  # fmt: skip
        assert np.isnan(res.p_value).all() and res.n_valid[0] <= rounds(500, 20)[0]


@pytest.mark.parametrize("engine", _engines())
def test_a_pair_with_no_draw_as_extreme_gets_every_draw(engine):
    rng = np.random.default_rng(0)
    perf = (rng.random((300, 3)) < 0.6).astype(float)
    conf = np.where(rng.random((300, 3)) < 0.9, perf, 1 - perf)
    for alternative, p in (("two-sided", 2 / 1000), ("greater", 1 / 1000)):
        res = pair_permutation_test(conf, perf, permutations=999, rng=1, engine=engine,
                                    alternative=alternative, sequential=True)  # fmt: skip
        assert (res.n_valid == 999).all() and res.sequential == DEFAULT_EXCEEDANCES
        np.testing.assert_allclose(res.p_value, p)
        # far from significance the other way: stops in the first round
        res = pair_permutation_test(conf, perf, permutations=999, rng=1, engine=engine,
                                    alternative="less", sequential=True)  # fmt: skip
        assert (res.n_valid == 80).all() and (res.p_value > 0.5).all()


# --------------------------------------------------------------------------------------------
# The engines' sequential p-values against the exact law
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("null", NULL_NAMES)
@pytest.mark.parametrize("kind", ["binary", "levels"])
@pytest.mark.parametrize("engine", _engines())
def test_sequential_p_values_of_every_engine_follow_the_exact_law(engine, kind, null,
                                                                  alternative):  # fmt: skip
    # 3000 copies of one small pair, h = 3, cap 40: the p-values against the law of the
    # sequential p-value given the pair's enumerated null
    conf, perf = _PAIRS[kind]
    copies, cap, h = 3000, 40, 3
    res = pair_permutation_test(
        conf, perf, null=null, permutations=cap, rng=5, alternative=alternative,
        pairs=(np.zeros(copies, int), np.ones(copies, int)), engine=engine, sequential=h,
    )  # fmt: skip
    assert res.sequential == h and (res.n_valid <= cap).all()
    values, probs = _null_of(kind, null)
    law = _rounded(_sequential_law(values, probs, round(res.tau[0], 9), cap, h, alternative))
    support = sorted(law)
    assert chi2_p(np.round(res.p_value, 12), np.array(support), [law[p] for p in support]) > 1e-4


# --------------------------------------------------------------------------------------------
# Validity: super-uniform under the null
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cap", "h"), [(40, 3), (99, 5), (200, 20)])
@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_sequential_p_values_are_super_uniform_by_enumeration(cap, h, alternative):
    # the observed tau-b is itself a draw of the null: P(p <= a) summed exactly over the
    # enumerated null law is at most a, at every value p can take
    for kind, null in itertools.product(_PAIRS, NULL_NAMES):
        values, probs = _null_of(kind, null)
        total: dict[float, float] = {}
        for t, pt in zip(values, probs):
            for p, pr in _sequential_law(values, probs, t, cap, h, alternative).items():
                total[round(p, 12)] = total.get(round(p, 12), 0.0) + pt * pr
        support = np.array(sorted(total))
        cdf = np.cumsum([total[p] for p in support])
        assert cdf[-1] == pytest.approx(1.0, abs=1e-9)
        assert (cdf <= support + 1e-9).all(), (kind, null, (cdf - support).max())


def _independent_pairs(null: str, n_pairs: int, n_items: int, seed: int):
    """``n_pairs`` pairs (models 2k, 2k+1) under ``null``: base-rate, confidence and
    correctness of each model independent; calibration-preserving, each model calibrated on
    its own but the two models' items unrelated."""
    rng = np.random.default_rng(seed)
    perf = (rng.random((n_items, 2 * n_pairs)) < rng.uniform(0.3, 0.8, 2 * n_pairs)).astype(float)
    if null == "base_rate":
        conf = (rng.random((n_items, 2 * n_pairs)) < 0.5).astype(float)
    else:
        conf = np.where(rng.random((n_items, 2 * n_pairs)) < 0.75, perf, 1 - perf)
    pairs = (np.arange(0, 2 * n_pairs, 2), np.arange(1, 2 * n_pairs, 2))
    return conf, perf, pairs


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("null", NULL_NAMES)
def test_sequential_p_values_are_super_uniform_by_simulation(null, alternative):
    conf, perf, pairs = _independent_pairs(null, 4000, 60, 11)
    res = pair_permutation_test(conf, perf, null=null, permutations=999, rng=2, pairs=pairs,
                                alternative=alternative, sequential=True)  # fmt: skip
    p = res.p_value[np.isfinite(res.p_value)]
    assert p.size > 3900
    for alpha in (0.01, 0.05, 0.1, 0.25, 0.5):
        rate = np.mean(p <= alpha)
        assert rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / p.size), (alpha, rate)
    # and far cheaper than the cap: most pairs stop in the first rounds
    assert np.median(res.n_valid) < 250


# --------------------------------------------------------------------------------------------
# Determinism, and the analysis
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", _engines())
def test_the_same_results_whatever_the_number_of_threads(engine):
    conf, perf, pairs = _independent_pairs("calibration_preserving", 300, 80, 4)
    runs = []
    for null in NULL_NAMES:
        for w in (1, 2, 3):
            runs.append(pair_permutation_test(conf, perf, null=null, permutations=2000, rng=7,
                                              pairs=pairs, engine=engine, workers=w,
                                              sequential=True))  # fmt: skip
    for a, b in ((runs[0], runs[1]), (runs[0], runs[2]), (runs[3], runs[4]), (runs[3], runs[5])):
        np.testing.assert_array_equal(a.p_value, b.p_value)
        np.testing.assert_array_equal(a.n_valid, b.n_valid)
        np.testing.assert_array_equal(a.null_mean, b.null_mean)


def test_sequential_tasks_pickle_and_run_alone():
    # each chunk is a self-contained task with its own child seed: pickled (as a distributed
    # scheduler would) and run on its own, it gives the same counts
    try:
        import cloudpickle
    except ImportError:
        unavailable("cloudpickle is not installed")
    from metacog_metrics.pairwise.nulls import get_null
    from metacog_metrics.pairwise.pair import _pair_plan
    from metacog_metrics.pairwise.pair_draws import PairInputs

    conf, perf, _ = _independent_pairs("base_rate", 3, 50, 1)
    ia, ib = np.triu_indices(6, 1)
    inputs = PairInputs(conf, perf, ia, ib, True, "numpy")
    plan = _pair_plan(inputs, get_null("base_rate"), 300, "two-sided", 4, exceedances=5)
    here = [task() for task in plan.tasks]
    there = [cloudpickle.loads(cloudpickle.dumps(task))() for task in plan.tasks]
    for a, b in zip(here, there):
        np.testing.assert_array_equal(a, b)


def test_the_analysis_is_sequential_by_default_and_fixed_on_request():
    conf, perf, _ = _independent_pairs("calibration_preserving", 3, 120, 9)
    kw = {"permutations": 500, "joint_permutations": 0, "rng": 3}
    on = pairwise_calibration(conf, perf, **kw)
    off = pairwise_calibration(conf, perf, sequential=False, **kw)
    assert on.sequential == DEFAULT_EXCEEDANCES and off.sequential == 0
    for null in NULL_NAMES:
        assert on.per_pair[null].sequential == DEFAULT_EXCEEDANCES
        assert (off.per_pair[null].n_valid == 500).all()
    # models calibrated each on its own but unrelated: far from significance under the
    # calibration-preserving null, so most pairs' draws stop early (a pair that the null
    # makes extreme by chance gets the cap)
    assert np.mean(on.per_pair["calibration_preserving"].n_valid < 500) >= 0.8
    assert pairwise_calibration(conf, perf, permutations=0, joint_permutations=0).sequential == 0


def _decisions(res, null: str) -> np.ndarray:
    return res.per_pair[null].q_value < res.fdr_alpha


@pytest.mark.parametrize("engine", _engines())
def test_fdr_decisions_of_sequential_and_fixed_tests_on_generated_data(engine):
    # a population with a little private signal (so that some pairs sit near the BH line):
    # the sequential and the fixed-n tests decide alike but for a few pairs at the line
    from metacog_metrics.simulate import get_preset, simulate_arrays

    sim = simulate_arrays(get_preset("paper"), 24, 1000, 1, rng=4)
    conf, perf = sim.conf[0].astype(float), sim.perf[0].astype(float)
    kw = {"permutations": 4000, "joint_permutations": 0, "rng": 0, "engine": engine}
    fixed = pairwise_calibration(conf, perf, sequential=False, **kw)
    seq = pairwise_calibration(conf, perf, **kw)
    for null in NULL_NAMES:
        differ = int(np.sum(_decisions(fixed, null) != _decisions(seq, null)))
        assert differ <= max(3, 0.03 * fixed.n_pairs), (null, differ)
    # and it draws less: the base-rate null's pairs far from significance stop early
    assert seq.per_pair["base_rate"].n_valid.mean() < 0.8 * 4000


@pytest.mark.slow
def test_fdr_decisions_of_sequential_and_fixed_tests_on_atlas(realruns_dir):
    # the real run of 32 models x 1,500 MMLU items (496 pairs, numeric confidence): the
    # sequential tests (the default) change the BH decision of at most 3% of the pairs, about
    # as many as a second fixed-n run with another seed does (docs/pairwise.md has the counts)
    import pandas as pd

    atlas = realruns_dir / "cacioli_atlas_mmlu" / "tidy.csv"
    if not atlas.exists():
        unavailable(f"{atlas} is missing")
    d = pd.read_csv(atlas)
    conf = d.pivot_table(index="item_id", columns="model", values="confidence", aggfunc="first")
    perf = d.pivot_table(index="item_id", columns="model", values="correct", aggfunc="first")
    keep = conf.notna().mean() >= 0.5
    conf, perf = conf.loc[:, keep].to_numpy(float), perf.loc[:, keep].to_numpy(float)
    kw = {"permutations": 10_000, "joint_permutations": 0, "rng": 0}
    fixed = pairwise_calibration(conf, perf, sequential=False, **kw)
    seq = pairwise_calibration(conf, perf, **kw)
    assert fixed.n_pairs_valid == 496
    for null in NULL_NAMES:
        differ = int(np.sum(_decisions(fixed, null) != _decisions(seq, null)))
        assert differ <= 0.03 * 496, (null, differ)
