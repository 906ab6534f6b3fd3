"""The NumPy engine's random tables and shuffled matrices, function by function.

Every expected value comes from outside the code under test: SciPy's hypergeometric law (its
mean, variance, pmf and CDF), enumeration of every permutation of a few items, enumeration of
every subset of a few positions, or hand computation. The laws of the random draws are checked
by chi-square against those exact laws (seeded, bins with small expectations pooled), and the
boundaries of inversion and of the tabulation rule through stand-in generators that hand out
chosen uniforms or record which sampler each draw went to. NumPy and SciPy only: no numba, no
shared data; the whole file runs in seconds.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import metacog_metrics.pairwise.samplers as pw
from tests.exact_laws import FixedUniforms as _FixedUniforms
from tests.exact_laws import chi2_p as _chi2_p

# --------------------------------------------------------------------------------------------
# Helpers: exact laws and goodness of fit
# --------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _window_search_ends(monkeypatch):
    """The window search ends within a few doublings per law (a broken one fails at once
    instead of running for minutes)."""
    calls = [0]
    window = pw._hg_window

    def counted(*args, **kwargs):
        calls[0] += 1
        assert calls[0] < 500, "the window search does not end"
        return window(*args, **kwargs)

    monkeypatch.setattr(pw, "_hg_window", counted)


def _hypergeom_p(values, good, bad, sample):
    """Chi-square p of draws against SciPy's Hypergeometric(good, bad, sample)."""
    support = np.arange(max(0, sample - bad), min(sample, good) + 1)
    return _chi2_p(values, support, stats.hypergeom.pmf(support, good + bad, good, sample))


def _law(keys):
    """Outcome -> probability of equally likely enumerated outcomes."""
    values, counts = np.unique(np.asarray(keys), return_counts=True)
    return values, counts / counts.sum()


def _kendall_s(x, y):
    """Kendall's S of two label vectors per row (K, N), from its definition over i < j."""
    i, j = np.triu_indices(x.shape[-1], 1)
    return (np.sign(x[..., i] - x[..., j]) * np.sign(y[..., i] - y[..., j])).sum(axis=-1)


def _tau_b(x, y):
    """tau-b per row from its definition; NaN (as 9.0, a sentinel) without variation."""
    i, j = np.triu_indices(x.shape[-1], 1)
    sx, sy = np.sign(x[..., i] - x[..., j]), np.sign(y[..., i] - y[..., j])
    den = np.sqrt((sx != 0).sum(axis=-1) * (sy != 0).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sx * sy).sum(axis=-1) / den
    return np.where(np.isfinite(tau), np.round(tau, 9), 9.0)


def _labels(counts):
    """Item labels 0, 1, ... repeated by their counts."""
    return np.repeat(np.arange(len(counts)), counts)


def _permutations(n):
    return np.array(list(itertools.permutations(range(n))))


class _Recording:
    """A real generator that records which sampler each call went to, and its arguments."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.calls = []

    def random(self, size):
        self.calls.append(("random", size))
        return self.rng.random(size)

    def hypergeometric(self, good, bad, sample):
        self.calls.append(("hypergeometric", np.array([good, bad, sample])))
        return self.rng.hypergeometric(good, bad, sample)


# --------------------------------------------------------------------------------------------
# _hg_window: mean +- (9 sd + 12) * scale, cut to the support
# --------------------------------------------------------------------------------------------


def _window_by_hand(g, b, s, scale=1.0, sd=9.0, pad=12.0):
    """The documented window, from SciPy's mean and variance of the law."""
    if g + b <= 1:  # no spread (SciPy's variance is NaN for a population of one)
        mean, var = (s * g / (g + b) if g + b else 0.0), 0.0
    else:
        with np.errstate(invalid="ignore", divide="ignore"):  # SciPy's kurtosis of small laws
            mean, var = (float(v) for v in stats.hypergeom(g + b, g, s).stats(moments="mv"))
    half = math.ceil((sd * math.sqrt(max(var, 0.0)) + pad) * scale)
    lo = max(s - b, 0, math.floor(mean - half))
    hi = min(s, g, math.ceil(mean + half))
    return lo, hi


_WIDE_LAWS = [  # (good, bad, sample) whose window the mean +- half cuts on both sides
    (1500, 1700, 1800), (12_000, 38_000, 9_000), (800, 3400, 800), (5000, 5000, 5000),
    (400, 600, 333), (300, 2000, 900), (2500, 400, 1200),
]  # fmt: skip
_SMALL_LAWS = [  # support bounds bind; degenerate and zero-width laws
    (5, 7, 6), (1, 1, 1), (0, 9, 4), (9, 0, 4), (4, 5, 0), (4, 5, 9), (2, 40, 10),
    (30, 3, 20), (4, 49_996, 25_000), (0, 0, 0), (1, 0, 1), (0, 1, 1), (1, 0, 0), (3, 7, 5),
]  # fmt: skip


_EDGE_LAWS = [  # small populations (their N - 1) and a spread below 1 on a wide support
    (5, 8, 5), (8, 5, 8), (11, 5, 11), (100, 100_000, 500),
]  # fmt: skip


@pytest.mark.parametrize("scale", [1.0, 0.5, 2.0, 0.1])
def test_window_is_the_mean_plus_minus_nine_sd_and_twelve(scale):
    laws = _WIDE_LAWS + _SMALL_LAWS + _EDGE_LAWS
    good, bad, sample = (np.array(v, dtype=np.int64) for v in zip(*laws))
    lo, hi = pw._hg_window(good, bad, sample, scale)
    want = np.array([_window_by_hand(g, b, s, scale) for g, b, s in laws])
    np.testing.assert_array_equal(lo, want[:, 0])
    np.testing.assert_array_equal(hi, want[:, 1])
    assert lo.dtype == np.int64 and hi.dtype == np.int64
    # the wide laws are really cut by the window, not by their support
    n_wide = len(_WIDE_LAWS)
    if scale <= 1.0:
        assert (lo[:n_wide] > np.maximum(sample - bad, 0)[:n_wide]).all()
        assert (hi[:n_wide] < np.minimum(sample, good)[:n_wide]).all()


def test_window_default_scale_is_one_and_a_scale_per_law_applies_to_its_own_law():
    good, bad, sample = (np.array(v, dtype=np.int64) for v in zip(*_WIDE_LAWS))
    lo1, hi1 = pw._hg_window(good, bad, sample)
    np.testing.assert_array_equal(
        np.stack([lo1, hi1], 1), [_window_by_hand(*law) for law in _WIDE_LAWS]
    )
    scales = np.array([1.0, 2.0, 4.0, 0.5, 1.0, 8.0, 3.0])
    lo, hi = pw._hg_window(good, bad, sample, scales)
    want = [_window_by_hand(*law, scale=k) for law, k in zip(_WIDE_LAWS, scales)]
    np.testing.assert_array_equal(np.stack([lo, hi], 1), want)


def test_without_a_pad_a_law_without_spread_is_its_one_value(monkeypatch):
    monkeypatch.setattr(pw, "_WINDOW_PAD", 0.0)
    laws = [(0, 0, 0), (1, 0, 1), (0, 1, 1), (1, 0, 0), (3, 0, 2), (0, 3, 2), (4, 5, 9)]
    lo, hi = pw._hg_window(*(np.array(v) for v in zip(*laws)))
    np.testing.assert_array_equal(lo, [0, 1, 0, 0, 2, 0, 4])
    np.testing.assert_array_equal(hi, lo)


def test_window_by_hand_numbers():
    # Hypergeometric(20, 20, 20): mean 10, variance 10 * 1/2 * 20/39 = 2.5641 (sd 1.6013),
    # half = ceil(9 * 1.6013 + 12) = 27: the whole support 0..20.
    lo, hi = pw._hg_window(np.array([20]), np.array([20]), np.array([20]))
    assert (lo[0], hi[0]) == (0, 20)
    # scale 0.1: half = ceil(2.6412) = 3 -> [7, 13]
    lo, hi = pw._hg_window(np.array([20]), np.array([20]), np.array([20]), 0.1)
    assert (lo[0], hi[0]) == (7, 13)
    # Hypergeometric(1, 1, 1) at scale 0.01: mean 0.5, sd 0.5, half = ceil(0.165) = 1
    lo, hi = pw._hg_window(np.array([1]), np.array([1]), np.array([1]), 0.01)
    assert (lo[0], hi[0]) == (0, 1)


# --------------------------------------------------------------------------------------------
# _hg_tables: exact CDFs on the window, widened until the tail bound is below 2**-60
# --------------------------------------------------------------------------------------------


def _final_window(g, b, s, sd, pad, tail):
    """The window the tail rule ends on, from SciPy's pmf: the scale doubles while the
    log-concavity bound f(end) r / (1 - r) of either tail (f normalised on the window, r the
    ratio of the next value's mass to the end's) is above ``tail``."""
    law = stats.hypergeom(g + b, g, s)
    s_lo, s_hi = max(s - b, 0), min(s, g)
    scale = 1.0
    while True:
        lo, hi = _window_by_hand(g, b, s, scale, sd, pad)
        mass = law.cdf(hi) - law.cdf(lo - 1)
        up = down = 0.0
        if hi < s_hi:
            r = law.pmf(hi + 1) / law.pmf(hi)
            up = law.pmf(hi) / mass * r / (1 - r) if r < 1 else np.inf
        if lo > s_lo:
            r = law.pmf(lo - 1) / law.pmf(lo)
            down = law.pmf(lo) / mass * r / (1 - r) if r < 1 else np.inf
        if up <= tail and down <= tail:
            return lo, hi
        scale *= 2.0


def _assert_tables(laws, lo, cdf, windows):
    width = max(h - low for low, h in windows) + 1
    assert cdf.shape == (len(laws), width)
    for j, ((g, b, s), (w_lo, w_hi)) in enumerate(zip(laws, windows)):
        assert lo[j] == w_lo
        k = w_lo + np.arange(w_hi - w_lo + 1)
        ref = stats.hypergeom.cdf(k, g + b, g, s) if g + b else np.ones(1)
        # ... normalised on the window (what the tail bound leaves out is below 2**-60)
        ref = (ref - (stats.hypergeom.cdf(w_lo - 1, g + b, g, s) if g + b else 0.0)) / (
            ref[-1] - (stats.hypergeom.cdf(w_lo - 1, g + b, g, s) if g + b else 0.0)
        )
        np.testing.assert_allclose(cdf[j, : k.size], ref, rtol=1e-10, atol=1e-13)
        assert (cdf[j, k.size - 1 :] == 1.0).all()  # exactly 1 from the window's end on
        assert (np.diff(cdf[j]) >= 0).all()


def test_tables_are_scipys_cdf_on_the_window():
    laws = _WIDE_LAWS + _SMALL_LAWS
    lo, cdf = pw._hg_tables(*(np.array(v) for v in zip(*laws)))
    windows = [_final_window(*law, 9.0, 12.0, 2.0**-60) for law in laws]
    # at the default width no law needs widening: the window is the plain one
    assert windows == [_window_by_hand(*law) for law in laws]
    _assert_tables(laws, lo, cdf, windows)
    assert lo.dtype == np.int64


def test_tables_of_degenerate_laws_are_one_value():
    laws = [(0, 9, 4), (9, 0, 4), (4, 5, 0), (4, 5, 9), (0, 0, 0), (1, 0, 1), (0, 1, 1)]
    lo, cdf = pw._hg_tables(*(np.array(v) for v in zip(*laws)))
    np.testing.assert_array_equal(lo, [0, 4, 0, 4, 0, 1, 0])
    np.testing.assert_array_equal(cdf, np.ones((len(laws), 1)))


def test_tables_accept_python_lists_and_plain_ints():
    lo, cdf = pw._hg_tables([5], [7], [6])
    k = lo[0] + np.arange(cdf.shape[1])
    np.testing.assert_allclose(cdf[0], stats.hypergeom.cdf(k, 12, 5, 6), atol=1e-14)


@pytest.mark.parametrize("tail", [2.0**-60, 1e-4, 1e-9])
@pytest.mark.parametrize(("sd", "pad"), [(0.5, 0.0), (1.0, 1.0), (0.2, 0.0)])
def test_narrow_windows_widen_by_doubling_until_the_tail_bound_holds(monkeypatch, sd, pad, tail):
    # A window far too narrow: the log-concavity bound must widen each law's window, doubling
    # its own scale, exactly until both tails' bounds are at most the tolerance.
    monkeypatch.setattr(pw, "_WINDOW_SD", sd)
    monkeypatch.setattr(pw, "_WINDOW_PAD", pad)
    monkeypatch.setattr(pw, "_TAIL", tail)
    laws = [*_WIDE_LAWS, (5, 7, 6), (2, 40, 10), (30, 3, 20), (60, 70, 50), (3, 200, 150)]
    lo, cdf = pw._hg_tables(*(np.array(v) for v in zip(*laws)))
    windows = [_final_window(*law, sd, pad, tail) for law in laws]
    _assert_tables(laws, lo, cdf, windows)
    for (g, b, s), (w_lo, w_hi) in zip(laws, windows):  # the tails left out are that small
        assert stats.hypergeom.cdf(w_lo - 1, g + b, g, s) <= tail
        assert stats.hypergeom.sf(w_hi, g + b, g, s) <= tail


def test_one_sided_narrow_windows_widen_on_the_side_that_needs_it(monkeypatch):
    # (10, 1000, 50)'s window starts at 0 (its lower tail is empty) and (1000, 10, 50)'s ends
    # at its top: only the other side's bound can ask for more, and it alone widens them.
    monkeypatch.setattr(pw, "_WINDOW_SD", 0.2)
    monkeypatch.setattr(pw, "_WINDOW_PAD", 0.0)
    laws = [(10, 1000, 50), (1000, 10, 50), (3, 300, 200)]
    lo, cdf = pw._hg_tables(*(np.array(v) for v in zip(*laws)))
    windows = [_final_window(*law, 0.2, 0.0, 2.0**-60) for law in laws]
    assert windows[0][0] == 0 and windows[1][1] == 50
    assert windows != [_window_by_hand(*law, sd=0.2, pad=0.0) for law in laws]
    _assert_tables(laws, lo, cdf, windows)


def _tail_bounds(g, b, s, lo, hi):
    """Both tails' log-concavity bounds of the window [lo, hi], from SciPy's pmf."""
    law = stats.hypergeom(g + b, g, s)
    mass = law.cdf(hi) - law.cdf(lo - 1)
    up = down = 0.0
    if hi < min(s, g):
        r = law.pmf(hi + 1) / law.pmf(hi)
        up = law.pmf(hi) / mass * r / (1 - r)
    if lo > max(s - b, 0):
        r = law.pmf(lo - 1) / law.pmf(lo)
        down = law.pmf(lo) / mass * r / (1 - r)
    return up, down


@pytest.mark.parametrize(
    "law",
    [
        (10, 1000, 50), (5, 200, 30), (20, 2000, 40), (3, 60, 45),  # only the upper tail
        (1000, 10, 50), (200, 5, 30), (2000, 20, 40), (60, 3, 45),  # only the lower tail
        (1500, 1700, 1800), (400, 600, 333),  # both
    ],
)  # fmt: skip
def test_the_tail_bound_decides_the_widening_to_its_last_digits(monkeypatch, law):
    # The narrow window's bound B (SciPy's pmf, normalised on the window): a tolerance a hair
    # above B keeps the window, a hair below widens it (to where the doubling rule ends).
    monkeypatch.setattr(pw, "_WINDOW_SD", 0.5)
    monkeypatch.setattr(pw, "_WINDOW_PAD", 0.0)
    lo0, hi0 = _window_by_hand(*law, sd=0.5, pad=0.0)
    bound = max(_tail_bounds(*law, lo0, hi0))
    assert bound > 0
    for tail, widened in ((bound * (1 + 1e-7), False), (bound * (1 - 1e-7), True)):
        monkeypatch.setattr(pw, "_TAIL", tail)
        lo, cdf = pw._hg_tables(*(np.array([v]) for v in law))
        want = _final_window(*law, 0.5, 0.0, tail)
        assert (want != (lo0, hi0)) == widened
        assert (lo[0], lo[0] + cdf.shape[1] - 1) == want


def test_a_zero_tolerance_widens_to_the_whole_support(monkeypatch):
    monkeypatch.setattr(pw, "_WINDOW_SD", 0.5)
    monkeypatch.setattr(pw, "_WINDOW_PAD", 0.0)
    monkeypatch.setattr(pw, "_TAIL", 0.0)
    laws = [(5, 7, 6), (30, 3, 20), (60, 70, 50), (10, 100, 50), (100, 10, 50)]
    lo, cdf = pw._hg_tables(*(np.array(v) for v in zip(*laws)))
    assert cdf.shape[1] == max(min(s, g) - max(s - b, 0) for g, b, s in laws) + 1
    for j, (g, b, s) in enumerate(laws):
        assert lo[j] == max(s - b, 0)
        k = lo[j] + np.arange(cdf.shape[1])
        np.testing.assert_allclose(cdf[j], stats.hypergeom.cdf(k, g + b, g, s), atol=1e-14)


def test_very_wide_windows_keep_far_tails_at_zero_mass(monkeypatch):
    # 60 sd each side: the far tails' masses (e**-1800) underflow to exactly 0 without
    # overflowing the mode's, each law scaled on its own (a tiny law next to a wide one)
    monkeypatch.setattr(pw, "_WINDOW_SD", 60.0)
    laws = [(12_000, 38_000, 9_000), (3, 4, 2), (1500, 1700, 1800)]
    lo, cdf = pw._hg_tables(*(np.array(v) for v in zip(*laws)))
    for j, (g, b, s) in enumerate(laws):
        w_lo, w_hi = _window_by_hand(g, b, s, sd=60.0)
        assert lo[j] == w_lo
        k = w_lo + np.arange(w_hi - w_lo + 1)
        np.testing.assert_allclose(cdf[j, : k.size], stats.hypergeom.cdf(k, g + b, g, s),
                                   rtol=1e-10, atol=1e-13)  # fmt: skip
    assert cdf[0, 0] == 0.0 and cdf[2, 0] == 0.0


def test_tables_read_float_counts_and_nothing():
    lo, cdf = pw._hg_tables(np.array([5.0, 30.0]), np.array([7.0, 3.0]), np.array([6.0, 20.0]))
    assert lo.dtype == np.int64
    ref_lo, ref_cdf = pw._hg_tables([5, 30], [7, 3], [6, 20])
    np.testing.assert_array_equal(lo, ref_lo)
    np.testing.assert_array_equal(cdf, ref_cdf)
    lo, cdf = pw._hg_tables([], [], [])
    assert lo.shape == (0,) and cdf.shape[0] == 0


def test_degenerate_tables_raise_no_floating_point_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, cdf = pw._hg_tables(*(np.array(v) for v in zip(*_SMALL_LAWS)))
    assert (cdf[:, -1] == 1.0).all()


# --------------------------------------------------------------------------------------------
# _inverse_cdf_draws: the smallest k with cdf[k] > u
# --------------------------------------------------------------------------------------------


def _searchsorted_draws(lo, cdf, group, u):
    return np.array([lo[g] + np.searchsorted(cdf[g], x, side="right") for g, x in zip(group, u)])


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17])
def test_inversion_of_hand_tables_at_every_boundary(width):
    # Hand-made CDFs of every width (powers of two and not): uniforms exactly on each CDF value
    # go one step further (cdf[k] <= u), uniforms just below stay; u = 0 gives the first value
    # with mass and the largest double below 1 the last.
    rng = np.random.default_rng(width)
    rows = []
    for _ in range(4):
        pmf = rng.random(width) * (rng.random(width) < 0.7)
        pmf[-1] += 0.1
        rows.append(np.minimum(np.cumsum(pmf) / pmf.sum(), 1.0))
    cdf = np.array(rows)
    cdf[:, -1] = 1.0
    lo = np.array([0, 5, -3, 100])
    values = np.unique(np.concatenate([cdf.ravel(), [0.0, 0.25, 0.5, 0.75]]))
    values = values[values < 1.0]
    u = np.concatenate([values, np.nextafter(values, 0.0), np.nextafter(values, 1.0)])
    u = np.append(np.clip(u, 0.0, 1.0 - 2.0**-53), 1.0 - 2.0**-53)
    group = np.repeat(np.arange(4), u.size)
    u = np.tile(u, 4)
    got = pw._inverse_cdf_draws(lo, cdf, group, _FixedUniforms(u))
    np.testing.assert_array_equal(got, _searchsorted_draws(lo, cdf, group, u))
    assert got.dtype == np.int64


def test_inversion_on_hypergeometric_tables_at_their_values():
    laws = _WIDE_LAWS + _SMALL_LAWS
    lo, cdf = pw._hg_tables(*(np.array(v) for v in zip(*laws)))
    group = np.repeat(np.arange(len(laws)), cdf.shape[1] * 2)
    u = np.concatenate([np.concatenate([row, np.nextafter(row, 0.0)]) for row in cdf])
    u = np.clip(u, 0.0, 1.0 - 2.0**-53)
    got = pw._inverse_cdf_draws(lo, cdf, group, _FixedUniforms(u))
    np.testing.assert_array_equal(got, _searchsorted_draws(lo, cdf, group, u))


def test_inversion_draws_follow_their_laws():
    laws = [(5, 7, 6), (1500, 1700, 1800), (2, 40, 10), (30, 3, 20), (9, 0, 4)]
    lo, cdf = pw._hg_tables(*(np.array(v) for v in zip(*laws)))
    rng = np.random.default_rng(3)
    group = rng.integers(0, len(laws), 60_000)
    got = pw._inverse_cdf_draws(lo, cdf, group, rng)
    for j, law in enumerate(laws):
        assert _hypergeom_p(got[group == j], *law) > 1e-4


# --------------------------------------------------------------------------------------------
# _group_by and _conditional_draws
# --------------------------------------------------------------------------------------------


def test_group_by_by_hand():
    # pairs 0 and 1 with windows starting at 2 and 0, width 4: the keys pair * 4 + (v - lo)
    pair = np.array([0, 1, 0, 1, 0, 1, 0])
    value = np.array([3, 0, 2, 3, 3, 0, 5])
    lo = np.array([2, 0])
    group, g_pair, g_value = pw._group_by(pair, value, lo, 4, 2)
    # keys: 1, 4, 0, 7, 1, 4, 3 -> groups in key order: 0 -> 0, 1 -> 1, 3 -> 2, 4 -> 3, 7 -> 4
    np.testing.assert_array_equal(group, [1, 3, 0, 4, 1, 3, 2])
    np.testing.assert_array_equal(g_pair, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(g_value, [2, 3, 5, 0, 3])


def _tabulated(calls):
    return [c[1] for c in calls if c[0] == "random"], [
        c[1] for c in calls if c[0] == "hypergeometric"
    ]


def test_conditional_draws_tabulate_a_law_with_at_least_a_quarter_draw_per_entry():
    # Hypergeometric(19, 19, 19): window 0..19, 20 entries: 5 draws (4 * 5 >= 20) are
    # tabulated, 4 are not. Hypergeometric(20, 20, 20): 21 entries: 6 draws are tabulated, 5
    # are not. Law (30, 10, 12): window 2..12, 11 entries: 3 draws are, 2 are not.
    good = np.array([19, 19, 20, 20, 30, 30])
    bad = np.array([19, 19, 20, 20, 10, 10])
    sample = np.array([19, 19, 20, 20, 12, 12])
    count = np.array([5, 4, 6, 5, 3, 2])
    group = np.repeat(np.arange(6), count)
    rec = _Recording(0)
    out = pw._conditional_draws(good, bad, sample, group, rec)
    random_sizes, hyper = _tabulated(rec.calls)
    assert random_sizes == [5 + 6 + 3]  # one inversion for the tabulated groups 0, 2, 4
    assert len(hyper) == 1  # one vectorised call for the draws of groups 1, 3, 5
    rest = np.isin(group, [1, 3, 5])
    np.testing.assert_array_equal(hyper[0], [good[group[rest]], bad[group[rest]],
                                             sample[group[rest]]])  # fmt: skip
    assert out.shape == group.shape and out.dtype == np.int64
    # every draw within its own law's support
    assert ((out >= np.maximum(sample - bad, 0)[group]) & (out <= sample[group])).all()


def test_conditional_draws_with_every_group_tabulated_or_none():
    good, bad, sample = np.array([3, 0]), np.array([4, 5]), np.array([2, 3])
    rec = _Recording(1)
    out = pw._conditional_draws(good, bad, sample, np.array([0, 0, 1, 1, 1]), rec)
    assert _tabulated(rec.calls) == ([5], [])
    np.testing.assert_array_equal(out[2:], [0, 0, 0])  # law (0, 5, 3) is always 0
    rec = _Recording(2)
    out = pw._conditional_draws(np.array([30]), np.array([10]), np.array([12]),
                                np.array([0, 0]), rec)  # fmt: skip
    assert _tabulated(rec.calls)[0] == []
    assert ((out >= 2) & (out <= 12)).all()


def test_conditional_draws_with_groups_that_have_no_draws():
    # parameters for four groups, draws for groups 0 and 2 only (the others are simply unused)
    good, bad, sample = np.array([3, 30, 0, 4]), np.array([4, 10, 5, 4]), np.array([2, 12, 3, 4])
    out = pw._conditional_draws(good, bad, sample, np.array([0, 2, 0, 2]),
                                np.random.default_rng(3))  # fmt: skip
    np.testing.assert_array_equal(out[[1, 3]], [0, 0])
    assert ((out[[0, 2]] >= 0) & (out[[0, 2]] <= 2)).all()


def test_conditional_draws_follow_each_groups_law():
    # many groups of few draws (NumPy's sampler) and few groups of many (the tables), with
    # asymmetric laws (good and bad swapped would show)
    laws = [(30, 10, 12), (7, 25, 9), (3, 5, 4)]
    n_small = 1500
    good = np.array([30] * n_small + [7] * n_small + [30, 7, 3])
    bad = np.array([10] * n_small + [25] * n_small + [10, 25, 5])
    sample = np.array([12] * n_small + [9] * n_small + [12, 9, 4])
    count = np.concatenate([np.full(2 * n_small, 2), [8000, 8000, 8000]])
    group = np.repeat(np.arange(good.size), count)
    perm = np.random.default_rng(9).permutation(group.size)  # groups interleaved
    group = group[perm]
    out = pw._conditional_draws(good, bad, sample, group, np.random.default_rng(5))
    law_of = np.concatenate([np.zeros(n_small, int), np.ones(n_small, int), [0, 1, 2]])
    big = group >= 2 * n_small
    for j, law in enumerate(laws):
        if j < 2:
            assert _hypergeom_p(out[~big & (law_of[group] == j)], *law) > 1e-4
        assert _hypergeom_p(out[big & (law_of[group] == j)], *law) > 1e-4


# --------------------------------------------------------------------------------------------
# Per-pair null tables against every permutation of a few items
# --------------------------------------------------------------------------------------------

_BASE_RATE_PAIRS = [  # (row margins, column margins) of 3x3 tables
    ([2, 3, 2], [1, 2, 4]),
    ([4, 2, 1], [3, 3, 1]),
    ([1, 5, 1], [2, 1, 4]),
    ([3, 0, 3], [1, 4, 1]),  # 6 items, an empty middle row
    ([7, 0, 0], [2, 3, 2]),  # S is always 0
]


def _base_rate_law(rows, cols):
    x, y = _labels(rows), _labels(cols)
    perms = _permutations(x.size)
    return _law(_kendall_s(np.broadcast_to(x, perms.shape), y[perms]))


def test_margins_s_follows_the_permutation_law_of_each_pair():
    # all pairs in one call (each its own margins and item count): S of each pair's draws
    # against the law of S over every permutation of that pair's items (Kendall's S from its
    # definition, in integers)
    rows = np.array([r for r, _ in _BASE_RATE_PAIRS])
    cols = np.array([c for _, c in _BASE_RATE_PAIRS])
    n = 30_000
    s = pw._margins_s(rows, cols, n, np.random.default_rng(11))
    assert s.shape == (len(_BASE_RATE_PAIRS), n)
    assert np.issubdtype(s.dtype, np.integer)
    for j, (r, c) in enumerate(_BASE_RATE_PAIRS):
        support, probs = _base_rate_law(r, c)
        assert _chi2_p(s[j], support, probs) > 1e-4, (r, c)
    assert (s[-1] == 0).all()


def test_per_pair_samplers_read_float_counts_as_the_integers_they_are():
    # margins and categories counted in floats (sums of float tables) are the same counts:
    # the same draws for the same seed, and S stays an exact integer
    rows = np.array([r for r, _ in _BASE_RATE_PAIRS])
    cols = np.array([c for _, c in _BASE_RATE_PAIRS])
    s_int = pw._margins_s(rows, cols, 500, np.random.default_rng(1))
    s_float = pw._margins_s(rows.astype(float), cols.astype(float), 500,
                              np.random.default_rng(1))  # fmt: skip
    assert np.issubdtype(s_float.dtype, np.integer)
    np.testing.assert_array_equal(s_float, s_int)
    a = np.array([x for x, _ in _CALIBRATION_PAIRS])
    b = np.array([y for _, y in _CALIBRATION_PAIRS])
    t_int = pw._category_taus(a, b, 500, np.random.default_rng(2))
    for fa, fb in ((a.astype(float), b), (a, b.astype(float))):
        np.testing.assert_array_equal(
            pw._category_taus(fa, fb, 500, np.random.default_rng(2)), t_int
        )


def test_margins_s_of_transposed_margins_follows_its_own_law():
    # rows and columns swapped: S's law is the same by symmetry, the tables are not
    rows = np.array([c for _, c in _BASE_RATE_PAIRS[:3]])
    cols = np.array([r for r, _ in _BASE_RATE_PAIRS[:3]])
    s = pw._margins_s(rows, cols, 30_000, np.random.default_rng(12))
    for j, (r, c) in enumerate(_BASE_RATE_PAIRS[:3]):
        support, probs = _base_rate_law(c, r)
        assert _chi2_p(s[j], support, probs) > 1e-4


_CALIBRATION_PAIRS = [  # each model's categories 2 conf + perf over 7 (or 6) items
    ([1, 2, 3, 1], [2, 1, 1, 3]),
    ([3, 1, 0, 3], [0, 2, 4, 1]),
    ([1, 1, 1, 4], [2, 2, 2, 1]),
    ([2, 0, 1, 3], [1, 3, 1, 1]),  # 6 items
]


def _calibration_law(a_cats, b_cats):
    """tau-b of (dconf, dperf) over every matching of B's items to A's (NaN as 9.0)."""
    a, b = _labels(a_cats), _labels(b_cats)
    perms = _permutations(a.size)
    bp = b[perms]
    dconf = (a // 2)[None] - bp // 2
    dperf = (a % 2)[None] - bp % 2
    return _law(_tau_b(dconf, dperf))


def test_category_taus_follow_the_permutation_law_of_each_pair():
    a = np.array([x for x, _ in _CALIBRATION_PAIRS])
    b = np.array([y for _, y in _CALIBRATION_PAIRS])
    n = 40_000
    taus = pw._category_taus(a, b, n, np.random.default_rng(13))
    assert taus.shape == (len(_CALIBRATION_PAIRS), n)
    for j, (x, y) in enumerate(_CALIBRATION_PAIRS):
        support, probs = _calibration_law(x, y)
        got = np.where(np.isfinite(taus[j]), np.round(taus[j], 9), 9.0)
        assert _chi2_p(got, support, probs) > 1e-4, (x, y)


def test_category_taus_with_the_models_swapped():
    a = np.array([y for _, y in _CALIBRATION_PAIRS[:2]])
    b = np.array([x for x, _ in _CALIBRATION_PAIRS[:2]])
    taus = pw._category_taus(a, b, 40_000, np.random.default_rng(14))
    for j, (x, y) in enumerate(_CALIBRATION_PAIRS[:2]):
        support, probs = _calibration_law(y, x)
        got = np.where(np.isfinite(taus[j]), np.round(taus[j], 9), 9.0)
        assert _chi2_p(got, support, probs) > 1e-4


def _levels_law(levels, dperf):
    x, y = _labels(levels), _labels(dperf)
    perms = _permutations(x.size)
    return _law(_kendall_s(np.broadcast_to(x, perms.shape), y[perms]))


@pytest.mark.parametrize(
    "pairs",
    [
        # (level counts, zero padded at the end; dperf counts of -1, 0, +1)
        [([2, 1, 3, 1], [2, 3, 2]), ([1, 4, 2, 0], [3, 1, 3]), ([3, 3, 0, 0], [1, 2, 3])],
        # an empty level in every pair before the others, and a single level (S = 0)
        [([2, 0, 3, 2], [3, 2, 2]), ([1, 0, 5, 1], [1, 1, 5]), ([7, 0, 0, 0], [2, 3, 2])],
        # both margins asymmetric: the law of S is not symmetric about 0 (a sign shows)
        [([1, 4, 2, 0], [1, 2, 4]), ([3, 1, 1, 2], [4, 2, 1]), ([1, 1, 5, 0], [5, 1, 1])],
        # levels against one dperf value only, and dperf with an empty middle
        [([2, 2, 2, 1], [0, 7, 0]), ([1, 2, 1, 2], [3, 0, 3])],
    ],
)
def test_levels_margins_s_follows_the_permutation_law(pairs):
    rows = np.array([r for r, _ in pairs])
    cols = np.array([c for _, c in pairs])
    n = 30_000
    s = pw._levels_margins_s(rows, cols, n, np.random.default_rng(len(pairs)))
    assert s.shape == (len(pairs), n)
    assert s.dtype == np.int64
    for j, (r, c) in enumerate(pairs):
        support, probs = _levels_law(r, c)
        assert _chi2_p(s[j], support, probs) > 1e-4, (r, c)


# --------------------------------------------------------------------------------------------
# Exact counts and random bits: uniform subsets of the eligible positions
# --------------------------------------------------------------------------------------------


def _subset_keys(bits):
    return bits.astype(np.int64) @ (1 << np.arange(bits.shape[-1]))


def _uniform_subset_p(bits, positions, k):
    """Chi-square p that the rows are uniform k-subsets of ``positions`` (every one of the
    C(|positions|, k) subsets enumerated)."""
    n = bits.shape[1]
    support = []
    for combo in itertools.combinations(positions, k):
        row = np.zeros(n, dtype=bool)
        row[list(combo)] = True
        support.append(int(_subset_keys(row[None])[0]))
    probs = np.full(len(support), 1 / len(support))
    return _chi2_p(_subset_keys(bits), np.array(support), probs)


def test_exact_counts_add_a_uniform_subset_of_the_zeros_or_remove_one_of_the_ones():
    # Rows of 6 positions, all in one call: short rows get a uniformly chosen subset of their
    # zeros turned on (their ones stay), rows with a surplus a uniformly chosen subset of their
    # ones turned off, rows already right are untouched.
    reps = 6000
    start = np.array(
        [
            [0, 0, 0, 0, 0, 0],  # target 2: a uniform 2-subset of all six
            [1, 1, 1, 1, 1, 1],  # target 4: two of six removed
            [1, 0, 1, 0, 0, 0],  # target 4: two of the four zeros added
            [1, 1, 0, 1, 1, 0],  # target 1: one of the four ones kept
            [0, 1, 0, 1, 0, 1],  # target 3: untouched
            [1, 1, 1, 0, 0, 0],  # target 0: all removed
            [0, 0, 0, 0, 1, 0],  # target 6: all added
        ],
        dtype=bool,
    )
    target = np.array([2, 4, 4, 1, 3, 0, 6])
    bits = np.tile(start, (reps, 1))
    count = bits.sum(axis=1)
    tgt = np.tile(target, reps)
    pw._exact_counts(bits, count, tgt, np.full(tgt.size, 6), np.random.default_rng(21))
    np.testing.assert_array_equal(bits.sum(axis=1), tgt)
    np.testing.assert_array_equal(count, tgt)  # the counts are kept up to date
    kind = np.tile(np.arange(7), reps)
    rows = [bits[kind == j] for j in range(7)]
    assert _uniform_subset_p(rows[0], range(6), 2) > 1e-4
    assert _uniform_subset_p(rows[1], range(6), 4) > 1e-4
    assert (rows[2][:, [0, 2]]).all()
    assert _uniform_subset_p(rows[2][:, [1, 3, 4, 5]], range(4), 2) > 1e-4
    assert not rows[3][:, [2, 5]].any()
    assert _uniform_subset_p(rows[3][:, [0, 1, 3, 4]], range(4), 1) > 1e-4
    assert (rows[4] == start[4]).all()
    assert not rows[5].any() and rows[6].all()


def test_exact_counts_flip_only_eligible_positions():
    reps = 6000
    eligible = np.array(
        [[1, 0, 1, 1, 0, 1, 1], [0, 1, 1, 1, 1, 1, 0], [1, 1, 0, 0, 1, 0, 1]], dtype=bool
    )
    start = np.array(
        [[0, 1, 0, 0, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 0, 0]], dtype=bool
    )  # positions outside eligible set on purpose: they must stay as they are
    target = np.array([2, 1, 3])
    bits = np.tile(start, (reps, 1))
    elig = np.tile(eligible, (reps, 1))
    count = (bits & elig).sum(axis=1)
    avail = elig.sum(axis=1)
    tgt = np.tile(target, reps)
    pw._exact_counts(bits, count, tgt, avail, np.random.default_rng(22), elig)
    np.testing.assert_array_equal((bits & elig).sum(axis=1), tgt)
    np.testing.assert_array_equal(bits[~elig], np.tile(start, (reps, 1))[~elig])
    kind = np.tile(np.arange(3), reps)
    rows = [bits[kind == j] for j in range(3)]
    assert _uniform_subset_p(rows[0][:, eligible[0]], range(5), 2) > 1e-4
    assert _uniform_subset_p(rows[1][:, eligible[1]], range(5), 1) > 1e-4
    assert rows[2][:, 4].all()  # the one eligible one already there stays
    assert _uniform_subset_p(rows[2][:, [0, 1, 6]], range(3), 2) > 1e-4


def test_exact_counts_many_rows_of_many_positions():
    # wide rows (several rejection rounds, ranks within rows of very different needs)
    rng = np.random.default_rng(23)
    n = 200
    bits = rng.random((400, n)) < rng.random((400, 1))
    target = rng.integers(0, n + 1, 400)
    target[:5] = [0, n, bits[2].sum(), 1, n - 1]
    count = bits.sum(axis=1)
    before = bits.copy()
    pw._exact_counts(bits, count, target, np.full(400, n), rng)
    np.testing.assert_array_equal(bits.sum(axis=1), target)
    up = target >= before.sum(axis=1)
    assert (bits[up] >= before[up]).all() and (bits[~up] <= before[~up]).all()
    np.testing.assert_array_equal(bits[2], before[2])


def test_threshold_by_hand():
    ones = np.array([0, 10, 1, 2, 1, 3, 5, 0, 7, 1, 0])
    avail = np.array([10, 10, 3, 3, 2, 65536 * 2, 0, 0, 1 << 20, 1, 1])
    got = pw._threshold(ones, avail)
    # 65536 ones / avail, rounded to nearest: 1/3 -> 21845.33 -> 21845, 2/3 -> 43690.67 ->
    # 43691, 3 / 131072 -> 1.5 -> 2 (half to even), 7 / 2**20 -> 0.4375 -> 0; one position:
    # 65536 or 0; no positions: 0
    np.testing.assert_array_equal(got, [0, 65536, 21845, 43691, 32768, 2, 0, 0, 0, 65536, 0])
    assert got.dtype == np.uint32


@pytest.mark.parametrize(("n", "k"), [(5, 2), (6, 3), (6, 1), (5, 4)])
def test_random_bits_are_uniform_k_subsets(n, k):
    bits = pw._random_bits(n, np.full(8000, k), np.random.default_rng(n * 10 + k))
    assert bits.shape == (8000, n) and bits.dtype == np.bool_
    assert (bits.sum(axis=1) == k).all()
    assert _uniform_subset_p(bits, range(n), k) > 1e-4


def test_random_bits_within_eligible_positions_are_uniform_subsets_of_them():
    eligible = np.array([[1, 0, 1, 1, 0, 1, 1], [0, 1, 1, 0, 1, 1, 0]], dtype=bool)
    ones = np.array([3, 2])
    reps = 7000
    bits = pw._random_bits(7, np.tile(ones, reps), np.random.default_rng(31),
                           eligible=np.tile(eligible, (reps, 1)))  # fmt: skip
    np.testing.assert_array_equal(bits.sum(axis=1), np.tile(ones, reps))
    assert not (bits & ~np.tile(eligible, (reps, 1))).any()
    assert _uniform_subset_p(bits[0::2][:, eligible[0]], range(5), 3) > 1e-4
    assert _uniform_subset_p(bits[1::2][:, eligible[1]], range(4), 2) > 1e-4


def test_random_bits_at_the_extremes():
    rng = np.random.default_rng(32)
    bits = pw._random_bits(9, np.array([0, 9, 0, 9]), rng)
    np.testing.assert_array_equal(bits, np.repeat([[False], [True], [False], [True]], 9, 1))
    eligible = np.array([[1, 1, 0, 0, 1], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)
    bits = pw._random_bits(5, np.array([3, 0, 0]), rng, eligible=eligible)
    np.testing.assert_array_equal(bits, [[1, 1, 0, 0, 1], [0] * 5, [0] * 5])


# --------------------------------------------------------------------------------------------
# Joint draws: category counts, shuffled 0/1 matrices, permuted real values
# --------------------------------------------------------------------------------------------


def test_category_counts_by_hand():
    # items x models; 0.5 is neither yes nor correct (strictly above one half)
    c = np.array([[1, 0, 0.5], [1, 1, 0.9], [0, 1, 0.2], [1, 0, 0.7], [0, 0, 0.6]])
    p = np.array([[1, 0, 1], [0, 1, 0.5], [1, 1, 1], [1, 0, 0], [0, 0, 1]], dtype=float)
    got = pw._category_counts(c, p)
    assert set(got) == {"kc", "kp", "n11", "n01"}
    np.testing.assert_array_equal(got["kc"], [3, 2, 3])  # yes counts
    np.testing.assert_array_equal(got["kp"], [3, 2, 3])  # correct counts
    np.testing.assert_array_equal(got["n11"], [2, 2, 1])  # correct among yes
    np.testing.assert_array_equal(got["n01"], [1, 0, 2])  # correct among no
    assert all(v.dtype == np.int64 for v in got.values())


# 5 items, 2 models: each model's (conf, perf) categories
_JOINT_CONF = np.array([[1, 0], [1, 1], [0, 1], [0, 0], [1, 1]], dtype=float)
_JOINT_PERF = np.array([[1, 1], [0, 1], [1, 0], [0, 0], [1, 0]], dtype=float)


def _subset_codes(arr):
    """One integer per arrangement of codes 0..3 over the items (base 4)."""
    return (arr * 4 ** np.arange(arr.shape[-1])).sum(axis=-1)


@pytest.mark.parametrize("split", [True, False], ids=["split", "together"])
def test_shuffled_binary_follows_each_models_permutation_law(split):
    counts = pw._category_counts(_JOINT_CONF, _JOINT_PERF)
    n = 12_000
    cs, ps = pw._shuffled_binary(counts, 5, split, n, np.random.default_rng(41))
    assert cs.shape == ps.shape == (n, 2, 5) and cs.dtype == ps.dtype == np.bool_
    np.testing.assert_array_equal(cs.sum(axis=2), np.tile(_JOINT_CONF.sum(axis=0), (n, 1)))
    np.testing.assert_array_equal(ps.sum(axis=2), np.tile(_JOINT_PERF.sum(axis=0), (n, 1)))
    for m in range(2):
        code = 2 * cs[:, m].astype(int) + ps[:, m]
        if not split:
            # the model's (conf, perf) pairs in a uniformly random order
            want = (2 * _JOINT_CONF[:, m] + _JOINT_PERF[:, m]).astype(int)
            support, probs = _law(_subset_codes(want[_permutations(5)]))
        else:
            # conf and perf each in its own uniformly random order, independently
            cperm = _JOINT_CONF[:, m][_permutations(5)].astype(int)
            pperm = _JOINT_PERF[:, m][_permutations(5)].astype(int)
            pairs = 2 * cperm[:, None, :] + pperm[None, :, :]
            support, probs = _law(_subset_codes(pairs.reshape(-1, 5)))
        assert _chi2_p(_subset_codes(code), support, probs) > 1e-4
    # the two models are shuffled independently of each other
    key = _subset_codes(cs[:, 0].astype(int)) * 1024 + _subset_codes(cs[:, 1].astype(int))
    a, b = np.unique(key // 1024), np.unique(key % 1024)
    table = np.array([[np.sum(key == x * 1024 + y) for y in b] for x in a])
    assert stats.chi2_contingency(table).pvalue > 1e-4


def test_shuffled_binary_split_or_together():
    # only split separates conf from perf; together keeps each model's correct-among-yes
    # and correct-among-no counts in every draw
    counts = pw._category_counts(_JOINT_CONF, _JOINT_PERF)
    cs, ps = pw._shuffled_binary(counts, 5, False, 400, np.random.default_rng(42))
    np.testing.assert_array_equal((cs & ps).sum(axis=2), np.tile(counts["n11"], (400, 1)))
    np.testing.assert_array_equal((~cs & ps).sum(axis=2), np.tile(counts["n01"], (400, 1)))
    cs, ps = pw._shuffled_binary(counts, 5, True, 400, np.random.default_rng(43))
    assert len(np.unique((cs & ps).sum(axis=2)[:, 0])) > 1


def test_shuffled_binary_calibration_rates_inside_each_class():
    # conf = 1 on 7 of 10 items, correct on 6 of them; conf = 0 on 3, correct on 1 of them:
    # per position, P(correct) = 0.7 * 6/7 + 0.3 * 1/3 = 0.7; every draw keeps both counts
    c = np.array([1, 1, 1, 1, 1, 1, 1, 0, 0, 0], dtype=float)[:, None]
    p = np.array([1, 1, 1, 1, 1, 1, 0, 1, 0, 0], dtype=float)[:, None]
    counts = pw._category_counts(c, p)
    n = 6000
    cs, ps = pw._shuffled_binary(counts, 10, False, n, np.random.default_rng(44))
    cs, ps = cs[:, 0], ps[:, 0]
    assert ((cs & ps).sum(axis=1) == 6).all() and ((~cs & ps).sum(axis=1) == 1).all()
    # where conf is 0 the correct item is uniform over the three
    where = np.argmax(ps & ~cs, axis=1)
    slot = np.array([np.flatnonzero(~row).tolist().index(w) for row, w in zip(cs, where)])
    assert stats.chisquare(np.bincount(slot, minlength=3)).pvalue > 1e-4


_VALUES_C = np.array([[0.1, 0.7], [0.4, 0.2], [0.9, 0.5], [0.6, 0.8]])
_VALUES_P = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])


@pytest.mark.parametrize("split", [True, False], ids=["split", "together"])
def test_shuffled_values_follow_the_permutation_law(split):
    n = 12_000
    cs, ps = pw._shuffled_values(_VALUES_C, _VALUES_P, split, n, np.random.default_rng(51))
    assert cs.shape == ps.shape == (n, 4, 2)
    # each column a permutation of that model's own values
    np.testing.assert_array_equal(np.sort(cs, axis=1), np.tile(np.sort(_VALUES_C, 0), (n, 1, 1)))
    np.testing.assert_array_equal(np.sort(ps, axis=1), np.tile(np.sort(_VALUES_P, 0), (n, 1, 1)))
    # which item's confidence lands where: the permutation of each model's items
    c_perm = np.argmax(cs[:, :, None, :] == _VALUES_C[None, None], axis=2)  # (n, N, M)
    code = (c_perm * 4 ** np.arange(4)[None, :, None]).sum(axis=1)  # (n, M), 24 values each
    all_perms = (_permutations(4) * 4 ** np.arange(4)).sum(axis=1)
    uniform = np.full(24, 1 / 24)
    for m in range(2):
        assert _chi2_p(code[:, m], all_perms, uniform) > 1e-4
        carried = np.take_along_axis(_VALUES_P[:, m][None].repeat(n, 0), c_perm[:, :, m], 1)
        # perf in a uniformly random order too: each of the 6 orders of (1, 0, 1, 0) in 1/6
        p_code = (ps[:, :, m] * 2 ** np.arange(4)).sum(axis=1)
        orders = (_VALUES_P[:, m][_permutations(4)] * 2 ** np.arange(4)).sum(axis=1)
        assert _chi2_p(p_code, *_law(orders)) > 1e-4
        if not split:  # perf travels with its item's confidence
            np.testing.assert_array_equal(ps[:, :, m], carried)
        else:  # perf shuffled on its own: independent of where the confidence went
            same = (ps[:, :, m] == carried).all(axis=1).mean()
            assert same == pytest.approx(4 / 24, abs=0.02)  # 4 of 24 orders of (1, 0, 1, 0)
    # models (and, split, conf and perf) shuffled independently
    table = np.zeros((24, 24))
    index = {v: i for i, v in enumerate(all_perms)}
    np.add.at(table, ([index[v] for v in code[:, 0]], [index[v] for v in code[:, 1]]), 1)
    assert stats.chisquare(table.ravel()).pvalue > 1e-4
