"""The concentration bound that settles sequential per-pair tests, and the settling itself.

The references are outside the module: Chatterjee's inequality against the exact law of
``sum_i a[i, pi(i)]`` over every permutation of 7 items; the bound against the exact law of
tau-b for pairs whose categories make the table of a random matching a (multivariate)
hypergeometric law of one or two free cells, computed by enumeration with log-factorials, at
2,000 to 20,000 items, and against 200,000 draws of the sampler for pairs of four categories
each; the settled tests against the same tests drawn to the cap, seed for seed.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import gammaln

from metacog_metrics.pairwise import pair_permutation_test, pairwise_calibration
from metacog_metrics.pairwise.samplers import _category_taus
from metacog_metrics.pairwise.sequential import (
    SEQUENTIAL_COLUMNS,
    rounds,
    sequential_counts,
    sequential_p_values,
)
from metacog_metrics.pairwise.tail_bounds import (
    _CELL,
    _EVENTS,
    _K,
    SETTLE_RISK,
    _linear_width,
    _terms,
    bernstein,
    calibration_preserving_binary,
    deviation,
)
from metacog_metrics.simulate import get_preset, simulate_arrays

BOUNDS = (1e-2, 1e-4, 1e-8, 1e-13)


# --------------------------------------------------------------------------------------------
# Chatterjee's inequality and its inversion
# --------------------------------------------------------------------------------------------


def test_deviation_inverts_the_inequality():
    for mean, ell in itertools.product((0.0, 0.3, 12.0, 5e3), (0.5, 3.0, 33.0)):
        t = float(deviation(mean, ell))
        assert t * t / (4 * mean + 2 * t) == pytest.approx(ell, rel=1e-12)


@pytest.mark.parametrize("kind", ["sparse", "uniform", "one row"])
def test_chatterjee_inequality_holds_on_every_permutation_of_seven_items(kind):
    rng = np.random.default_rng({"sparse": 1, "uniform": 2, "one row": 3}[kind])
    n = 7
    perms = np.array(list(itertools.permutations(range(n))))
    worst = 0.0
    for _ in range(20):
        if kind == "sparse":
            a = (rng.random((n, n)) < 0.15).astype(float)
        elif kind == "uniform":
            a = rng.random((n, n))
        else:
            a = np.zeros((n, n))
            a[rng.integers(n), :] = 1.0
            a[:, rng.integers(n)] += rng.random(n)
            a = np.clip(a, 0.0, 1.0)
        x = a[np.arange(n), perms].sum(axis=1)  # every permutation, equally likely
        ex = x.mean()
        for t in np.linspace(0.05, n, 140):
            exact = np.mean(np.abs(x - ex) >= t)
            bound = 2 * math.exp(-t * t / (4 * ex + 2 * t))
            assert exact <= bound + 1e-12, (kind, t, exact, bound)
            if exact > 0:
                worst = max(worst, exact / bound)
    # not vacuous: the exact tail comes within a factor of 10 of the bound somewhere
    assert worst > 0.1


def test_bernstein_holds_for_hypergeometric_counts():
    # the count of one category in a sample without replacement: exact tails from SciPy
    worst = 0.0
    for n, k, s in [(60, 20, 25), (500, 120, 300), (4000, 2500, 900), (12000, 3000, 7000),
                    (12000, 600, 5000), (200, 199, 50)]:  # fmt: skip
        law = stats.hypergeom(n, k, s)
        p = k / n
        for ell in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0):
            # the caller samples the smaller of a sample and its complement
            t = float(bernstein(min(s, n - s), p * (1 - p), max(p, 1 - p), ell))
            mean = law.mean()
            log_tail = np.logaddexp(law.logsf(math.ceil(mean + t) - 1),
                                    law.logcdf(math.floor(mean - t)))  # fmt: skip
            assert log_tail <= math.log(2) - ell + 1e-9, (n, k, s, ell)
            worst = max(worst, math.exp(log_tail - (math.log(2) - ell)))
    assert worst > 0.05  # within a factor of 20 somewhere: a narrower width would fail


def _sample_sum_law(values: np.ndarray, size: int) -> np.ndarray:
    """Probabilities of each sum of ``size`` of the integer ``values`` drawn without
    replacement (every subset equally likely), by a dynamic program over the values."""
    top = int(values.sum())
    ways = np.zeros((size + 1, top + 1))
    ways[0, 0] = 1.0
    for v in values.astype(int):
        ways[1:, v:] = ways[1:, v:] + ways[:-1, : top + 1 - v]
    return ways[size] / math.comb(values.size, size)


def test_bernstein_holds_for_sums_of_samples_without_replacement():
    rng = np.random.default_rng(4)
    worst = 0.0
    for n, size in [(30, 8), (40, 15), (50, 25), (60, 40)]:
        values = rng.choice([0, 0, 0, 1, 2, 9], n).astype(float)  # skewed, a few large ones
        law = _sample_sum_law(values, size)
        sums = np.arange(law.size)
        mean = size * values.mean()
        variance, reach = values.var(), np.abs(values - values.mean()).max()
        for ell in (0.5, 1.0, 2.0, 3.0, 5.0, 8.0):
            t = float(bernstein(size, variance, reach, ell))
            tail = law[np.abs(sums - mean) >= t - 1e-9].sum()
            assert tail <= 2 * math.exp(-ell) + 1e-12, (n, size, ell)
            worst = max(worst, tail / (2 * math.exp(-ell)))
    assert worst > 0.05
    # rare large values: the tail is their count's, and the range term carries the bound
    values = np.array([0.0] * 50 + [1.0] * 7 + [40.0] * 3)
    law = _sample_sum_law(values, 5)
    mean, reach = 5 * values.mean(), np.abs(values - values.mean()).max()

    def tail(t: float) -> float:
        return float(law[np.abs(np.arange(law.size) - mean) >= t - 1e-9].sum())

    assert tail(float(bernstein(5, values.var(), reach, 5.0))) <= 2 * math.exp(-5.0)
    assert tail(math.sqrt(2 * 5.0 * 5 * values.var())) > 2 * math.exp(-5.0)  # without it


def test_the_linear_width_holds_over_random_matchings():
    # a pair's linear statistic sum_i g[cell(a_i, b_pi(i))] over 20,000 random matchings of
    # 400 items; the width at failure 2 exp(-ell) must leave at most that share outside
    rng = np.random.default_rng(5)
    n = 400
    for cat_a, cat_b in [([100, 60, 90, 150], [140, 30, 80, 150]),
                         ([10, 40, 300, 50], [200, 150, 20, 30])]:  # fmt: skip
        ca, cb = np.array([cat_a], float), np.array([cat_b], float)
        a = np.repeat(np.arange(4), cat_a)
        b = np.repeat(np.arange(4), cat_b)
        terms = _terms(ca, cb, 1.0)
        g = terms.grad[0][_CELL]  # (4, 4): the weight of each (A category, B category)
        perms = rng.permuted(np.broadcast_to(b, (20_000, n)), axis=1)
        lin = g[a[None, :], perms].sum(axis=1)
        mean = (terms.mu[0] * terms.grad[0]).sum()
        assert lin.mean() == pytest.approx(mean, rel=1e-3)
        for ell in (0.5, 1.0, 2.0, 3.0):
            width = _linear_width(g[None], ca, cb, np.array([float(n)]), ell)[0]
            outside = np.mean(np.abs(lin - mean) >= width)
            assert outside <= 2 * math.exp(-ell) + 0.01


def test_the_cell_widths_hold_over_random_matchings():
    # each cell of the (dconf, dperf) table over 20,000 random matchings of 600 items: the
    # share outside its half-width at failure 2 exp(-ell), against that bound (the corner
    # cells, one cell of the 4 x 4 table each, come close to it)
    rng = np.random.default_rng(7)
    cat_a, cat_b = [150, 90, 120, 240], [200, 60, 110, 230]
    ca, cb = np.array([cat_a], float), np.array([cat_b], float)
    a, b = np.repeat(np.arange(4), cat_a), np.repeat(np.arange(4), cat_b)
    perms = rng.permuted(np.broadcast_to(b, (20_000, 600)), axis=1)
    cells = _CELL[a[None, :], perms]
    counts = np.stack([(cells == c).sum(axis=1) for c in range(9)], axis=1)
    worst = 0.0
    for ell in (1.0, 2.0, 3.0, 4.0):
        terms = _terms(ca, cb, ell)
        share = np.mean(np.abs(counts - terms.mu[0]) >= terms.h[0], axis=0)
        assert (share <= 2 * math.exp(-ell) + 0.005).all(), (ell, share)
        worst = max(worst, float(share.max() / (2 * math.exp(-ell))))
    assert worst > 0.1


def test_the_corner_cells_widths_hold_against_the_exact_hypergeometric():
    # a corner cell of the (dconf, dperf) table is one cell of the 4 x 4 table: the count of
    # A's category k among the items B's category j takes, hypergeometric (exact in SciPy)
    corners = {0: (0, 3), 2: (1, 2), 6: (2, 1), 8: (3, 0)}  # cell: (A's category, B's)
    worst = 0.0
    for cat_a, cat_b in [([3000, 2000, 3000, 4000], [400, 700, 500, 10400]),
                         ([6000, 1000, 1000, 4000], [11000, 300, 350, 350])]:  # fmt: skip
        ca, cb = np.array([cat_a], float), np.array([cat_b], float)
        for ell in (2.0, 3.0, 4.0, 6.0):
            terms = _terms(ca, cb, ell)
            for cell, (k, j) in corners.items():
                law = stats.hypergeom(12_000, cat_a[k], cat_b[j])
                h, mean = terms.h[0, cell], law.mean()
                tail = law.sf(math.ceil(mean + h) - 1) + law.cdf(math.floor(mean - h))
                assert tail <= 2 * math.exp(-ell), (cat_a, cat_b, cell, ell)
                worst = max(worst, tail / (2 * math.exp(-ell)))
    assert worst > 0.1


def test_the_decision_is_the_bound_of_its_parts():
    # the last step, written out again: a draw is beyond t on the side asked only if
    # side * S > side * t * sqrt(D1 D2), and on the events side * S <= side * S(mu) + linear +
    # quadratic while sqrt(D1 D2) lies between the margins' extremes
    rng = np.random.default_rng(8)
    cat_a = rng.multinomial(12_000, rng.dirichlet(np.ones(4) * 3), 400)
    cat_b = rng.multinomial(12_000, rng.dirichlet(np.ones(4) * 3), 400)
    t = rng.uniform(-0.9, 0.9, 400)
    ell = math.log(2 * _EVENTS / 1e-9)
    terms = _terms(cat_a.astype(float), cat_b.astype(float), ell)
    for side in (1, -1):
        den = np.where(side * t > 0, np.sqrt(terms.d_lo.prod(axis=0)),
                       np.sqrt(terms.d_hi.prod(axis=0)))  # fmt: skip
        expected = side * terms.s_mean + terms.linear + terms.quadratic < side * t * den
        got = calibration_preserving_binary(cat_a, cat_b, t, side, 1e-9)
        np.testing.assert_array_equal(got, expected & (terms.d_lo > 0).all(axis=0))
        assert 0 < got.sum() < got.size


def test_the_box_bounds_every_table_inside_it():
    # the quadratic part, the margins' denominators and the expansion of S, checked on
    # tables anywhere in the box (not only likely ones): random corners and interior points
    rng = np.random.default_rng(6)
    for cat_a, cat_b in [([4000, 1000, 1000, 6000], [5000, 1000, 1500, 4500]),
                         ([300, 900, 200, 600], [100, 1200, 400, 300])]:  # fmt: skip
        ca, cb = np.array([cat_a], float), np.array([cat_b], float)
        terms = _terms(ca, cb, 20.0)
        mu, h = terms.mu[0], terms.h[0]
        x, y = np.repeat(np.arange(3), 3), np.tile(np.arange(3), 3)
        for _ in range(2000):
            d = h * rng.choice([-1.0, 1.0], 9) * (rng.random(9) if rng.random() < 0.5 else 1)
            quad = 0.5 * d @ _K @ d
            assert quad <= terms.quadratic[0] * (1 + 1e-12)
            # a table keeps its total: the deviations sum to 0 (shrunk back into the box)
            d = d - d.mean()
            d *= min(1.0, float(np.min(np.where(d != 0, h / np.abs(d), np.inf))))
            quad = 0.5 * d @ _K @ d
            assert quad <= terms.quadratic[0] * (1 + 1e-12)
            m = mu + d
            s = 0.5 * m @ _K @ m
            assert s == pytest.approx(terms.s_mean[0] + terms.grad[0] @ d + quad, rel=1e-9)
            for axis, of in enumerate((x, y)):
                margin = np.array([m[of == v].sum() for v in range(3)])
                dev = margin - terms.margins[axis, 0]
                if (np.abs(dev) <= terms.margin_h[axis, 0]).all():
                    untied = 0.5 * (m.sum() ** 2 - (margin**2).sum())
                    assert terms.d_lo[axis, 0] <= untied * (1 + 1e-12)
                    assert untied <= terms.d_hi[axis, 0] * (1 + 1e-12)
        # the expansion agrees with tau-b's S from the definition
        table = mu.reshape(3, 3)
        assert 0.5 * mu @ _K @ mu == pytest.approx(
            _tau_b(table) * math.sqrt(np.prod(_untied(table))), rel=1e-9
        )
    assert _EVENTS == 16


def _untied(m: np.ndarray) -> tuple[float, float]:
    n = m.sum()
    return (0.5 * (n * n - (m.sum(axis=1) ** 2).sum()), 0.5 * (n * n - (m.sum(axis=0) ** 2).sum()))


# --------------------------------------------------------------------------------------------
# The bound against exact laws
# --------------------------------------------------------------------------------------------


def _tau_b(m: np.ndarray) -> np.ndarray:
    """tau-b of ``(..., 3, 3)`` tables of (dconf, dperf) counts, from the definition."""
    s = np.zeros(m.shape[:-2])
    for (x, y), (u, v) in itertools.product(itertools.product(range(3), repeat=2), repeat=2):
        s += 0.5 * m[..., x, y] * m[..., u, v] * np.sign(u - x) * np.sign(v - y)
    n = m.sum(axis=(-2, -1))
    d1 = 0.5 * (n * n - (m.sum(axis=-1) ** 2).sum(axis=-1))
    d2 = 0.5 * (n * n - (m.sum(axis=-2) ** 2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return s / np.sqrt(d1 * d2)


def _cells(table: np.ndarray) -> np.ndarray:
    """``(..., 4, 4)`` tables of A's by B's category ``2 conf + perf`` -> (dconf, dperf)."""
    m = np.zeros((*table.shape[:-2], 3, 3))
    for k, j in itertools.product(range(4), repeat=2):
        m[..., k // 2 - j // 2 + 1, k % 2 - j % 2 + 1] += table[..., k, j]
    return m


def _exact_law(cat_a: np.ndarray, cat_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """tau-b values and log-probabilities of a random matching when A has two categories and
    B two or three: the first of A's categories takes a multivariate hypergeometric sample of
    B's items (log-factorials), the second what is left."""
    ka, kb = np.flatnonzero(cat_a), np.flatnonzero(cat_b)
    assert ka.size == 2 and kb.size in (2, 3)
    n, r0 = int(cat_a.sum()), int(cat_a[ka[0]])
    cb = cat_b[kb].astype(int)
    grids = [np.arange(min(r0, c) + 1) for c in cb[:-1]]
    first = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, kb.size - 1)
    row = np.column_stack([first, r0 - first.sum(axis=1)])
    ok = (row[:, -1] >= 0) & (row[:, -1] <= cb[-1])
    row = row[ok]
    logp = (gammaln(cb + 1) - gammaln(row + 1) - gammaln(cb - row + 1)).sum(axis=1)
    logp -= gammaln(n + 1) - gammaln(r0 + 1) - gammaln(n - r0 + 1)
    table = np.zeros((row.shape[0], 4, 4))
    table[:, ka[0], kb] = row
    table[:, ka[1], kb] = cb - row
    return _tau_b(_cells(table)), logp


def _log_tails(values: np.ndarray, logp: np.ndarray, thresholds: np.ndarray):
    """``log P(tau >= t)`` and ``log P(tau <= t)`` for each threshold (-inf: empty), summed
    in log space: the far tails the bound speaks of are below the smallest double."""
    order = np.argsort(values)
    v, lp = values[order], logp[order]
    up = np.concatenate([np.logaddexp.accumulate(lp[::-1])[::-1], [-np.inf]])
    down = np.concatenate([[-np.inf], np.logaddexp.accumulate(lp)])
    ge = up[np.searchsorted(v, thresholds, side="left")]
    le = down[np.searchsorted(v, thresholds, side="right")]
    return ge, le


CONFIGS = [  # (A's category counts, B's), 2 x 2 and 2 x 3 categories
    ([0, 6000, 14000, 0], [9000, 0, 0, 11000]),
    ([5000, 0, 0, 15000], [0, 7000, 13000, 0]),
    ([0, 3000, 0, 17000], [4000, 0, 0, 16000]),
    ([1200, 0, 0, 800], [900, 300, 0, 800]),
    ([0, 700, 1300, 0], [600, 0, 500, 900]),
    ([1500, 0, 500, 0], [0, 400, 700, 900]),
]


@pytest.mark.parametrize(("cat_a", "cat_b"), CONFIGS)
def test_bound_holds_against_the_exact_law(cat_a, cat_b):
    cat_a, cat_b = np.array(cat_a), np.array(cat_b)
    values, logp = _exact_law(cat_a, cat_b)
    assert np.exp(logp).sum() == pytest.approx(1.0, abs=1e-9)
    defined = np.isfinite(values)  # an undefined draw counts on neither side
    values, logp = values[defined], logp[defined]
    grid = np.linspace(values.min(), values.max(), 2001)
    thresholds = np.unique(np.concatenate([grid, values[:: max(1, values.size // 2000)]]))
    ge, le = _log_tails(values, logp, thresholds)
    proven_inside = 0
    for bound, side in itertools.product(BOUNDS, (1, -1)):
        proven = calibration_preserving_binary(
            np.tile(cat_a, (thresholds.size, 1)), np.tile(cat_b, (thresholds.size, 1)),
            thresholds, side, bound,
        )  # fmt: skip
        tail = ge if side == 1 else le
        assert (tail[proven] <= math.log(bound)).all(), (bound, side, tail[proven].max())
        # thresholds the matching can reach (a table at or beyond them) are proven too
        proven_inside += int(np.count_nonzero(proven & np.isfinite(tail)))
    assert proven_inside > 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bound_holds_against_draws_of_four_categories_each(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    cat_a = rng.multinomial(n, rng.dirichlet(np.ones(4) * 2))[None]
    cat_b = rng.multinomial(n, rng.dirichlet(np.ones(4) * 2))[None]
    draws = _category_taus(cat_a, cat_b, 200_000, rng)[0]
    thresholds = np.quantile(draws, np.linspace(0, 1, 401))
    thresholds = np.concatenate([thresholds, np.linspace(-1, 1, 401)])
    bound = 1e-3
    proven = 0
    for side in (1, -1):
        ok = calibration_preserving_binary(
            np.repeat(cat_a, thresholds.size, 0), np.repeat(cat_b, thresholds.size, 0),
            thresholds, side, bound,
        )  # fmt: skip
        hits = (draws[None, :] >= thresholds[ok, None]) if side == 1 else (
            draws[None, :] <= thresholds[ok, None])  # fmt: skip
        # 200,000 draws: a tail of 1e-3 gives about 200; 260 is 4 SDs above
        assert (hits.sum(axis=1) <= 260).all()
        proven += int(ok.sum())
    assert proven > 0


def test_bound_rejects_bad_arguments_and_undefined_thresholds():
    a = np.array([[4000, 1000, 1000, 6000]])
    with pytest.raises(ValueError, match="side"):
        calibration_preserving_binary(a, a, [0.0], 0, 1e-9)
    with pytest.raises(ValueError, match="bound"):
        calibration_preserving_binary(a, a, [0.0], 1, 0.0)
    assert not calibration_preserving_binary(a, a, [np.nan], -1, 1e-9).any()
    # a model with one category: its dconf and dperf never vary with B's -> nothing proven
    # unless the table is fixed; with B constant too, tau-b is undefined: never proven
    one = np.array([[0, 0, 0, 12000]])
    assert not calibration_preserving_binary(one, one, [-1.0], 1, 0.5).any()


# --------------------------------------------------------------------------------------------
# Settling in the sequential rule
# --------------------------------------------------------------------------------------------


def _draw_below(rows: np.ndarray, b: int, seed: np.random.SeedSequence) -> np.ndarray:
    """Draws always below an observed 0 (so ``<=`` every time, never ``>=``)."""
    z = np.zeros(rows.size)
    return np.column_stack([z, np.full(rows.size, b), np.full(rows.size, b), z, z])


def test_settled_pairs_count_their_remaining_draws_as_missing():
    cap, h = 10_000, 20
    asked: list[tuple[int, float]] = []

    def settle(rows, side, bound):
        asked.append((side, bound))
        return rows % 2 == 0  # proves the even pairs

    acc = sequential_counts(_draw_below, 4, np.zeros(4), cap, h, "two-sided",
                            np.random.SeedSequence(0), settle)  # fmt: skip
    first = rounds(cap, h)[0]
    assert acc.shape == (4, len(SEQUENTIAL_COLUMNS))
    # asked after the first round, for the side still drawing (>=), at SETTLE_RISK / cap
    assert asked[0] == (1, SETTLE_RISK / cap)
    assert acc[[0, 2], 2].tolist() == [first, first]  # draws made
    assert acc[[0, 2], 7].tolist() == [cap, cap]  # draws counted
    assert acc[[0, 2], 1].tolist() == [cap, cap]  # the remaining ones are <=
    assert acc[[1, 3], 2].tolist() == [cap, cap] and (acc[[1, 3], 7] == 0).all()
    p, p_greater, p_less = sequential_p_values(acc, h, "two-sided")
    # settled or drawn, the same p-values: (0 + 1) / (cap + 1) on the far side
    np.testing.assert_allclose(p_greater, 1 / (cap + 1))
    np.testing.assert_allclose(p, 2 / (cap + 1))
    np.testing.assert_allclose(p_less, 1.0)


def test_a_settle_that_proves_nothing_changes_nothing():
    def draw(rows, b, seed):
        rng = np.random.default_rng(seed)
        u = rng.random((rows.size, b)) < 0.3
        ge = u.sum(axis=1)
        z = np.zeros(rows.size)
        return np.column_stack([ge, b - ge, np.full(rows.size, b), z, z])

    args = (draw, 50, np.zeros(50), 2000, 20, "greater", np.random.SeedSequence(5))
    called = []
    plain = sequential_counts(*args)
    none = sequential_counts(*args, lambda rows, side, bound: called.append(1) or rows < 0)
    np.testing.assert_array_equal(plain, none)
    assert called  # the bound was asked


def _population(n_models: int, n_items: int, seed: int):
    sim = simulate_arrays(get_preset("paper"), n_models, n_items, 1, rng=seed)
    return sim.conf[0].astype(float), sim.perf[0].astype(float)


@pytest.mark.parametrize("engine", ["numpy", "auto"])
def test_settled_tests_give_the_p_values_of_drawing_to_the_cap(engine):
    conf, perf = _population(8, 6000, 3)
    kw = dict(null="calibration_preserving", permutations=3000, rng=7, engine=engine,
              sequential=True)  # fmt: skip
    settled = pair_permutation_test(conf, perf, **kw)
    drawn = pair_permutation_test(conf, perf, settle=False, **kw)
    assert settled.n_settled >= 10  # most of the 28 pairs
    assert drawn.n_settled == 0
    np.testing.assert_array_equal(settled.p_value, drawn.p_value)
    np.testing.assert_array_equal(settled.q_value, drawn.q_value)
    s = settled.settled
    assert (settled.n_valid[s] < 3000).all() and (drawn.n_valid[s] == 3000).all()
    np.testing.assert_array_equal(settled.n_valid[~s], drawn.n_valid[~s])
    # the base-rate null has no bound: nothing settles
    base = pair_permutation_test(conf, perf, **{**kw, "null": "base_rate"})
    assert base.n_settled == 0


def test_settling_does_not_depend_on_threads_and_stays_off_for_fixed_n():
    conf, perf = _population(8, 6000, 4)
    kw = dict(permutations=2000, joint_permutations=0, rng=3)
    one = pairwise_calibration(conf, perf, workers=1, **kw)
    two = pairwise_calibration(conf, perf, workers=2, **kw)
    a, b = one.per_pair["calibration_preserving"], two.per_pair["calibration_preserving"]
    assert a.n_settled > 0
    np.testing.assert_array_equal(a.settled, b.settled)
    np.testing.assert_array_equal(a.p_value, b.p_value)
    fixed = pairwise_calibration(conf, perf, workers=2, sequential=False, **kw)
    res = fixed.per_pair["calibration_preserving"]
    assert res.n_settled == 0 and (res.n_valid == 2000).all()


def test_cli_settles_by_default_and_draws_with_settle_off(tmp_path):
    from metacog_tasks.cli import main

    conf, perf = _population(6, 8000, 9)
    models = [f"m{j}" for j in range(6)]
    records = pd.DataFrame({
        "model": np.tile(models, 8000),
        "item_id": np.repeat([f"q{i}" for i in range(8000)], 6),
        "confidence": conf.ravel(),
        "correct": perf.ravel(),
    })  # fmt: skip
    path = tmp_path / "r.parquet"
    records.to_parquet(path, index=False)
    out = {}
    for settle in ("on", "off"):
        argv = ["analyze", str(path), "--out", str(tmp_path / settle), "--permutations",
                "2000", "--joint-permutations", "19", "--no-report", "--quiet",
                "--settle", settle]  # fmt: skip
        assert main(argv) == 0
        summary = json.loads((tmp_path / settle / "summary.json").read_text())
        assert summary["parameters"]["settle"] == settle
        out[settle] = summary
    n_on = _find(out["on"], "n_settled")
    n_off = _find(out["off"], "n_settled")
    assert n_on["calibration_preserving"] >= 8 and n_on["base_rate"] == 0  # of 15 pairs
    assert n_off == {"base_rate": 0, "calibration_preserving": 0}
    tables = [sorted((tmp_path / s / "tables").glob("*pairs.csv")) for s in ("on", "off")]
    assert tables[0] and [p.name for p in tables[0]] == [p.name for p in tables[1]]
    for on, off in zip(*tables):
        on, off = pd.read_csv(on), pd.read_csv(off)
        # the same p- and q-values; a settled pair's null mean and SD come from its first
        # round's draws (80), so they agree within their Monte Carlo error
        moments = [f"calibration_preserving_null_{k}" for k in ("mean", "sd")]
        pd.testing.assert_frame_equal(on.drop(columns=moments), off.drop(columns=moments))
        mean, sd = moments
        assert (np.abs(on[mean] - off[mean]) < 0.6 * off[sd]).all()
        assert (np.abs(on[sd] / off[sd] - 1) < 0.5).all()


def _find(summary: dict, key: str) -> dict:
    """``{null: value}`` of ``key`` in the first pairwise section of a summary."""
    stack = [summary]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            nulls = node.get("nulls")
            if (
                isinstance(nulls, dict)
                and all(
                    isinstance(v, dict) and key in v
                    for k, v in nulls.items()
                    if k != "private_signal"
                )
                and nulls
            ):
                return {k: v[key] for k, v in nulls.items() if k != "private_signal"}
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    raise AssertionError(f"no pairwise section with {key!r}")
