"""Compiled null draws (optional; needs numba): per pair and joint, binary and real-valued.

Per-pair draws of binary confidence use the same exact block decomposition as the NumPy engine
of :mod:`metacog_metrics.pairwise`
(level 1: one law per pair; level 2: laws that depend on the pair and the level-1 value only;
level 3: the last free cell of each block), compiled, one pair and one draw at a time, with
the accumulations (counts against the observed value, sums, sums of squares) kept in
registers instead of ``(pairs, draws)`` arrays. The kernels draw laws (tables with fixed
margins, random matchings of categories, shuffles that split a model's confidence from its
correctness or keep them together); which kernel serves which null is registered in that
null's module in :mod:`metacog_metrics.pairwise.nulls`.

* Hypergeometric variates. Laws that serve enough draws (the level-1 law of each pair, the
  level-2 laws of the frequent level-1 values) are tabulated and inverted: their exact CDF
  on a window grown from the mode until a log-concavity bound puts each tail below 2**-60,
  inverted with a guide table. The others are drawn by Stadlober's ratio-of-uniforms
  algorithm HRUA, the one NumPy uses for large parameters, with the log-factorials read from
  a table (one load instead of a Stirling series: this is where the speed comes from), so a
  draw has the law of NumPy's own sampler. numba has no hypergeometric sampler for
  ``np.random.Generator`` (and its legacy one is O(sample)), hence this code.
* Random numbers. NumPy's SFC64 bit generator, stepped inline (a few ns a double less than
  calling the Generator through numba): each chunk of pairs starts from
  ``np.random.SFC64(child_seed).state``, so results depend only on the seed and the fixed
  chunks, never on the number of threads. The draws differ from the NumPy engine's for the
  same seed (another bit generator and another order of variates); the law is the same.
  The real-valued per-pair kernels draw their items' indices as integers from 32 random bits
  by Lemire's multiply-shift with its rejection step (:func:`_below`, exact), two an output;
  the shuffles of the joint draws keep a double per index (no faster with the integers).
* Real-valued confidence: random (dconf level x dperf) tables, the few items of the two
  smaller dperf columns placed one by one or else row by row (:func:`levels_margins_kernel`),
  and random category matching tables, small rows item by item and large ones column by
  column (:func:`matching_kernel`), hypergeometric variates simulated draw by draw when a
  parameter is small, HRUA otherwise; joint draws by shuffling with per-pair level lookups
  (:func:`joint_levels_kernel`; :func:`joint_ragged_kernel` when models lack items, where
  each pair reads its models' values on its shared items, binary confidence too).
* Binary joint draws and the difficulty-stratified null: packed bits and one popcount per
  word for every pair's co-occurrence counts (:func:`joint_binary_counts`,
  :func:`permuted_counts`; :func:`joint_binary_taus` goes on to every pair's tau-b).
* Every kernel releases the GIL: the thread pool of :mod:`metacog_metrics.pairwise` runs the
  chunks on all cores.
* Compilation. Each kernel is compiled for its fixed signature on its first call (about
  ten seconds for all of them the first time; an analysis loads only the kernels it uses),
  with numba's on-disk cache: numba writes it to
  ``NUMBA_CACHE_DIR`` when set, else to the ``__pycache__`` beside this file only if that is
  writable, else to the user's cache folder (``~/.cache/numba``); a read-only installation
  never receives files. Where no location is writable the kernels compile in memory.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic
from numpy.typing import NDArray
from scipy import special

__all__ = [
    "NUMBA_VERSION",
    "categories_kernel",
    "joint_binary_counts",
    "joint_binary_taus",
    "joint_levels_kernel",
    "joint_ragged_kernel",
    "levels_margins_kernel",
    "margins_kernel",
    "matching_kernel",
    "number_tables",
    "permuted_counts",
    "permuted_taus",
    "state",
]

NUMBA_VERSION: str = numba.__version__

# HRUA constants (Stadlober 1989; NumPy's distributions.c)
_D1 = 1.7155277699214135
_D2 = 0.8989161620588988
_TAIL = 2.0**-60  # tabulated windows leave out less than this on each side
_HALF_CAP = 1 << 13  # a tabulated law spans at most 2 * 8192 values (else: HRUA)
_WIDTH_SD = 19.0  # a tabulated window spans about 19 sd (tails of 2**-60 on both sides)
_WIDTH_PAD = 6.0

_U11 = np.uint64(11)
_U1 = np.uint64(1)
_U3 = np.uint64(3)
_U24 = np.uint64(24)
_U40 = np.uint64(40)
_U32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_TO_DOUBLE = 1.0 / 9007199254740992.0  # 2**-53


class _Kernel:
    """A kernel compiled for its one signature on its first call, not at import.

    Loading a kernel from numba's cache costs tens of milliseconds and an analysis uses only
    the kernels of its data (binary or real-valued): the others are never loaded. After the
    first call no other signature compiles (a wrong argument type is a TypeError, as with an
    eagerly compiled signature).
    """

    def __init__(self, dispatcher: Any, signature: str) -> None:
        self._dispatcher = dispatcher
        self._signature = signature
        self._lock = threading.Lock()
        self._ready = False
        self.__doc__ = dispatcher.py_func.__doc__
        self.__name__ = dispatcher.py_func.__name__

    def __call__(self, *args: Any) -> Any:
        if not self._ready:
            with self._lock:  # the thread pool's first calls arrive together
                if not self._ready:
                    self._dispatcher.compile(self._signature)
                    self._dispatcher.disable_compile()
                    self._ready = True
        return self._dispatcher(*args)


def _jit(signature: str | None = None, **options):  # type: ignore[no-untyped-def]
    """numba.njit with nogil and the on-disk cache (falling back to memory, see the docstring);
    with a ``signature``, a :class:`_Kernel` compiled for it on its first call."""

    def wrap(fn):  # type: ignore[no-untyped-def]
        try:
            dispatcher = numba.njit(nogil=True, cache=True, **options)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            dispatcher = numba.njit(nogil=True, **options)(fn)
        return dispatcher if signature is None else _Kernel(dispatcher, signature)

    return wrap


# --------------------------------------------------------------------------------------------
# Random numbers: SFC64 (NumPy's algorithm, state from NumPy's seeding)
# --------------------------------------------------------------------------------------------


def state(seed: np.random.SeedSequence) -> NDArray[np.uint64]:
    """The SFC64 state NumPy's ``np.random.SFC64(seed)`` starts from (4 uint64 words)."""
    return np.array(np.random.SFC64(seed).state["state"]["state"], dtype=np.uint64)


@_jit(inline="always")
def _uniform(st: tuple) -> tuple:
    """Next double in [0, 1) of the SFC64 stream and the new state (``st``: 4 uint64 words).

    As ``np.random.Generator(np.random.SFC64(...)).random()``; the state travels in
    registers (a tuple), not through memory.
    """
    a, b, c, w = st
    tmp = a + b + w
    return (tmp >> _U11) * _TO_DOUBLE, (
        b ^ (b >> _U11),
        c + (c << _U3),
        ((c << _U24) | (c >> _U40)) + tmp,
        w + _U1,
    )


@_jit(inline="always")
def _next64(st: tuple) -> tuple:
    """Next raw 64-bit output of the SFC64 stream and the new state."""
    a, b, c, w = st
    tmp = a + b + w
    return tmp, (b ^ (b >> _U11), c + (c << _U3), ((c << _U24) | (c >> _U40)) + tmp, w + _U1)


@_jit(inline="always")
def _below(st: tuple, spare: np.uint64, held: bool, bound: int) -> tuple:
    """A uniform integer in ``[0, bound)`` (``0 < bound < 2**32``) and the new
    ``(state, spare, held)``.

    Lemire's multiply-shift of 32 random bits with its rejection step (exact; Lemire 2019,
    "Fast random integer generation in an interval"): no division but on the rare rejection
    test, no conversion to a double. Each SFC64 output serves two integers: ``spare`` keeps
    its unused low half while ``held`` is True.
    """
    s = np.uint64(bound)
    while True:
        if held:
            x = spare & _LOW32
            held = False
        else:
            spare, st = _next64(st)
            x = spare >> _U32
            held = True
        m = x * s
        low = m & _LOW32
        if low >= s or low >= (_TWO32 - s) % s:
            return np.int64(m >> _U32), st, spare, held


@_jit(inline="always")
def _take(pool: NDArray, last: int, st: tuple, spare: np.uint64, held: bool) -> tuple:
    """A uniformly random one of ``pool[:last + 1]``, swapped to ``pool[last]`` (one step of
    a partial Fisher-Yates shuffle), and the new ``(state, spare, held)`` of :func:`_below`.

    Taking ``pool[:n]`` down to ``pool[:n - k]`` draws ``k`` of them without replacement and
    leaves ``pool`` a permutation of what it held, so the next draw can start from it as it is.
    """
    idx, st, spare, held = _below(st, spare, held, last + 1)
    v = pool[idx]
    pool[idx] = pool[last]
    pool[last] = v
    return v, st, spare, held


# --------------------------------------------------------------------------------------------
# Hypergeometric variates
# --------------------------------------------------------------------------------------------


def number_tables(n: int) -> NDArray[np.float64]:
    """What the kernels read instead of computing: ``log k!`` then ``1/k``, for k = 0..n+2.

    One array of ``2 (n + 3)`` doubles (SciPy's gammaln for the log-factorials); ``n`` is
    the number of items, the largest population of any law drawn.
    """
    k = np.arange(n + 3, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.concatenate([special.gammaln(k + 1.0), 1.0 / k])


@_jit(inline="always")
def _hg_setup(lf: NDArray, good: int, bad: int, sample: int) -> tuple:
    """HRUA's constants for Hypergeometric(good, bad, sample), shared by all its draws.

    NumPy's ``hypergeometric_hrua`` split in two (set-up, draw), with divisions by the
    population replaced by reads of ``1/k`` from the number tables ``lf``. Returns ``(fixed,
    a, h, b, g, cs, mgb, d, reflect, swap)``: ``fixed`` the value of a degenerate law (else
    -1), the ratio-of-uniforms constants ``a, h, b`` and ``g`` (log-factorials at the mode),
    ``cs = min(sample, total - sample)``, ``mgb = min(good, bad)``,
    ``d = max(good, bad) - cs``, and the reflections of the result (``reflect = good`` when
    ``cs < sample``, ``swap = cs`` when good > bad; else -1).
    """
    pop = good + bad
    if sample <= 0 or good <= 0 or bad <= 0 or sample >= pop:
        fixed = 0 if sample <= 0 or good <= 0 else (sample if bad <= 0 else good)
        return fixed, 0.0, 0.0, 0.0, 0.0, 0, 0, 0, -1, -1
    recip = lf.size // 2  # where 1/k starts
    cs = min(sample, pop - sample)
    mgb = min(good, bad)
    xgb = max(good, bad)
    inv = lf[recip + pop]
    a = cs * (mgb * inv) + 0.5
    var = (pop - cs) * cs * (mgb * inv) * (xgb * inv) * lf[recip + pop - 1]
    c = math.sqrt(var + 0.5)
    # the mode floor((cs + 1)(mgb + 1) / (pop + 2)), exact: HRUA needs the true mode
    num = (cs + 1) * (mgb + 1)
    m = int(num * lf[recip + pop + 2])
    if (m + 1) * (pop + 2) <= num:
        m += 1
    elif m * (pop + 2) > num:
        m -= 1
    b = min(min(cs, mgb) + 1.0, math.floor(a + 16.0 * c))
    g = lf[m] + lf[mgb - m] + lf[cs - m] + lf[xgb - cs + m]
    reflect = good if cs < sample else -1
    swap = cs if good > bad else -1
    return -1, a, _D1 * c + _D2, b, g, cs, mgb, xgb - cs, reflect, swap


@_jit(inline="always")
def _hg_draw(st: tuple, lf: NDArray, p: tuple) -> tuple:
    """One variate of the law set up by :func:`_hg_setup` (ratio of uniforms, HRUA)."""
    fixed, a, h, b, g, cs, mgb, d, reflect, swap = p
    if fixed >= 0:
        return fixed, st
    k = 0
    while True:
        u, st = _uniform(st)
        v, st = _uniform(st)
        x = a + h * (v - 0.5) / u
        if x >= 0.0 and x < b:  # (also rejects the NaN of u = 0)
            k = int(x)
            t = g - (lf[k] + lf[mgb - k] + lf[cs - k] + lf[d + k])
            if u * (4.0 - u) - 3.0 <= t:  # quick acceptance
                break
            if u * (u - t) < 1.0 and 2.0 * math.log(u) <= t:  # else quick rejection
                break
    if swap >= 0:
        k = swap - k
    if reflect >= 0:
        k = reflect - k
    return k, st


@_jit(inline="always")
def _hg_store(p: tuple, pf: NDArray, pk: NDArray) -> None:
    """Keep a set-up in memory (``pf``: 4 floats, ``pk``: 6 ints), freeing registers."""
    pk[0], pf[0], pf[1], pf[2], pf[3], pk[1], pk[2], pk[3], pk[4], pk[5] = p


@_jit(inline="always")
def _hg_load(pf: NDArray, pk: NDArray) -> tuple:
    """The set-up kept by :func:`_hg_store`."""
    return pk[0], pf[0], pf[1], pf[2], pf[3], pk[1], pk[2], pk[3], pk[4], pk[5]


@_jit(inline="always")
def _hrua(st: tuple, lf: NDArray, good: int, bad: int, sample: int) -> tuple:
    """One Hypergeometric(good, bad, sample) variate by HRUA (``lf``: :func:`number_tables`)."""
    return _hg_draw(st, lf, _hg_setup(lf, good, bad, sample))


@_jit(inline="always")
def _table_width(good: int, bad: int, sample: int) -> float:
    """About how many values a tabulated window of the law spans."""
    pop = good + bad
    if pop < 2:
        return 1.0
    var = sample * (good / pop) * (bad / pop) * (pop - sample) / (pop - 1)
    return _WIDTH_SD * math.sqrt(max(var, 0.0)) + _WIDTH_PAD


@_jit()
def _tabulate(good: int, bad: int, sample: int, buf: NDArray, cdf: NDArray, guide: NDArray) -> int:
    """Exact CDF of Hypergeometric(good, bad, sample) on a window, with its guide table.

    The pmf relative to the mode comes from the ratio recurrence
    ``f(k+1) / f(k) = (good - k)(sample - k) / ((k + 1)(bad - sample + k + 1))`` walked out
    from the mode (relative error ~1e-13) until the tail beyond, bounded by log-concavity by
    ``f(k) r / (1 - r)``, is below 2**-60 of the mass (or the support ends). ``cdf[j]`` is the
    CDF at ``lo + j``, exactly 1.0 at the end; ``guide[i]`` (``i < L``, ``L`` the smallest
    power of two from twice the width, stored in ``guide[-1]``) is the first ``j`` with
    ``cdf[j] > i / L``; the width is in ``guide[-2]``.

    Returns:
        ``lo``; -1 when the window would not fit the buffers (the caller falls back to HRUA).
    """
    s_lo = max(0, sample - bad)
    s_hi = min(sample, good)
    pop = good + bad
    m = min(max(math.floor((sample + 1.0) * (good + 1.0) / (pop + 2.0)), s_lo), s_hi)
    half = _HALF_CAP
    buf[half] = 1.0
    f = 1.0
    k = m
    while k < s_hi:  # up from the mode
        r = (good - k) * (sample - k) / ((k + 1.0) * (bad - sample + k + 1.0))
        if r < 1.0 and f * r < _TAIL * (1.0 - r):
            break
        if k - m + 1 >= half:
            return -1
        f *= r
        k += 1
        buf[half + k - m] = f
    hi = k
    f = 1.0
    k = m
    while k > s_lo:  # down from the mode
        r = k * (bad - sample + k) / ((good - k + 1.0) * (sample - k + 1.0))
        if r < 1.0 and f * r < _TAIL * (1.0 - r):
            break
        if m - k + 1 >= half:
            return -1
        f *= r
        k -= 1
        buf[half + k - m] = f
    lo = k
    width = hi - lo + 1
    total = 0.0
    first = half + lo - m
    for j in range(width):
        total += buf[first + j]
        cdf[j] = total
    scale = 1.0 / total
    for j in range(width):
        cdf[j] = min(cdf[j] * scale, 1.0)
    cdf[width - 1] = 1.0
    size = 1
    while size < 2 * width:
        size *= 2
    j = 0
    for i in range(size):
        while cdf[j] * size <= i:  # exact: size is a power of two
            j += 1
        guide[i] = j
    guide[guide.size - 1] = size
    guide[guide.size - 2] = width
    return lo


@_jit(inline="always")
def _invert(st: tuple, lo: int, cdf: NDArray, guide: NDArray) -> tuple:
    """One draw from a tabulated law: the smallest ``j`` with ``cdf[j] > u``, plus ``lo``."""
    u, st = _uniform(st)
    j = guide[int(u * guide[guide.size - 1])]
    while cdf[j] <= u:
        j += 1
    return lo + j, st


@_jit(inline="always")
def _table_if_paid(good: int, bad: int, sample: int, draws: int, ratio: float, buf: NDArray,
                   cdf: NDArray, guide: NDArray) -> int:  # fmt: skip
    """Tabulate a law that serves ``draws`` draws when that pays; its ``lo``, else -1."""
    if draws * ratio >= _table_width(good, bad, sample):
        return _tabulate(good, bad, sample, buf, cdf, guide)
    return -1


@_jit(inline="always")
def _level_one(st: tuple, lf: NDArray, good: int, bad: int, sample: int, n: int,
               ratio: float, buf: NDArray, cdf: NDArray, guide: NDArray) -> tuple:  # fmt: skip
    """Histogram of ``n`` draws of the level-1 law: ``(hist, first value, state)``."""
    lo = _table_if_paid(good, bad, sample, n, ratio, buf, cdf, guide)
    if lo >= 0:  # the draws stay in the table's window
        hist = np.zeros(guide[guide.size - 2], dtype=np.int64)
        for _ in range(n):
            v, st = _invert(st, lo, cdf, guide)
            hist[v - lo] += 1
        return hist, lo, st
    p = _hg_setup(lf, good, bad, sample)
    values = np.empty(n, dtype=np.int64)
    for i in range(n):
        v, st = _hg_draw(st, lf, p)
        values[i] = v
    s_lo = values.min()
    hist = np.zeros(values.max() - s_lo + 1, dtype=np.int64)
    for v in values:
        hist[v - s_lo] += 1
    return hist, s_lo, st


# --------------------------------------------------------------------------------------------
# Per-pair kernels
# --------------------------------------------------------------------------------------------

_CAP = 2 * _HALF_CAP + 1


@_jit("float64[:, ::1](int64[:, ::1], int64[::1], int64, uint64[::1], float64[::1], float64, "
      "float64[:, ::1])")  # fmt: skip
def margins_kernel(margins: NDArray, s_obs: NDArray, n: int, s: NDArray, lf: NDArray,
                   ratio: float, draws: NDArray) -> NDArray:  # fmt: skip
    """Kendall's S of ``n`` random 3x3 tables per pair, accumulated against the observed S.

    Block decomposition around cell (0, 0) as in the NumPy engine: ``n00`` (level 1);
    given it, ``n01`` and ``n10`` (level 2, independent); then ``n22`` (level 3).

    Args:
        margins: ``(P, 6)`` row sums ``r0, r1, r2`` and column sums ``c0, c1, c2``.
        s_obs: ``(P,)`` observed S.
        n: Draws per pair.
        s: SFC64 state (advanced in place).
        lf: :func:`number_tables` of the number of items.
        ratio: Tabulate a law when ``draws * ratio >= its window's width`` (0: never).
        draws: ``(P, n)`` to receive the draws of S (grouped by ``n00``), or ``(0, 0)``.

    Returns:
        ``(P, 5)``: ``#{S >= S_obs}``, ``#{S <= S_obs}``, draws, sum of S, sum of S**2
        (zeros for a pair whose tau-b is undefined, since every draw shares its margins).
    """
    n_pairs = margins.shape[0]
    out = np.zeros((n_pairs, 5))
    st = (s[0], s[1], s[2], s[3])
    keep = draws.shape[0] == n_pairs and draws.shape[1] == n
    buf = np.empty(_CAP)
    cdf = np.empty((3, _CAP))
    guide = np.empty((3, 4 * _CAP + 2), dtype=np.int64)
    cdf0, cdf1, cdf2 = cdf[0], cdf[1], cdf[2]
    guide0, guide1, guide2 = guide[0], guide[1], guide[2]
    level2 = np.empty((n, 2), dtype=np.int64)  # level-2 draws of one level-1 value
    for pi in range(n_pairs):
        r0, r1, r2 = margins[pi, 0], margins[pi, 1], margins[pi, 2]
        c0, c1, c2 = margins[pi, 3], margins[pi, 4], margins[pi, 5]
        total = r0 + r1 + r2
        if max(r0, r1, r2) == total or max(c0, c1, c2) == total:
            continue  # constant dconf or dperf: tau-b undefined for every draw
        hist, s_lo, st = _level_one(st, lf, c0, total - c0, r0, n, ratio, buf, cdf0, guide0)
        so = s_obs[pi]
        ge = 0
        le = 0
        s1 = 0.0
        s2 = 0.0
        d = 0
        for iv in range(hist.size):
            cnt = hist[iv]
            if cnt == 0:
                continue
            n00 = s_lo + iv
            # level 2: n01 ~ H(c1, c2, r0 - n00), n10 ~ H(r1, r2, c0 - n00)
            lo_a = _table_if_paid(c1, c2, r0 - n00, cnt, ratio, buf, cdf1, guide1)
            lo_b = _table_if_paid(r1, r2, c0 - n00, cnt, ratio, buf, cdf2, guide2)
            p_a = _hg_setup(lf, c1, c2, r0 - n00)
            p_b = _hg_setup(lf, r1, r2, c0 - n00)
            for i in range(cnt):  # law by law, all the group's draws (same set-up in a row)
                if lo_a >= 0:
                    v, st = _invert(st, lo_a, cdf1, guide1)
                else:
                    v, st = _hg_draw(st, lf, p_a)
                level2[i, 0] = v
            for i in range(cnt):
                if lo_b >= 0:
                    v, st = _invert(st, lo_b, cdf2, guide2)
                else:
                    v, st = _hg_draw(st, lf, p_b)
                level2[i, 1] = v
            for i in range(cnt):
                n01, n10 = level2[i, 0], level2[i, 1]
                n02 = r0 - n00 - n01
                n20 = c0 - n00 - n10
                # level 3: the 2x2 block of rows 1-2 x columns 1-2
                n22, st = _hrua(st, lf, c2 - n02, c1 - n01, r2 - n20)
                sv = (c2 - c0) * (r0 - r2) + n00 * (r0 + r1 - c2 + n22)
                sv += n02 * (c0 - r0 - r1 - n20) + n20 * (c2 - r1 - r2) + n22 * (r1 + r2 - c0)
                if sv >= so:
                    ge += 1
                if sv <= so:
                    le += 1
                fs = float(sv)
                s1 += fs
                s2 += fs * fs
                if keep:
                    draws[pi, d] = fs
                d += 1
        out[pi, 0] = ge
        out[pi, 1] = le
        out[pi, 2] = n
        out[pi, 3] = s1
        out[pi, 4] = s2
    s[0], s[1], s[2], s[3] = st
    return out


@_jit("float64[:, ::1](int64[:, ::1], int64[:, ::1], float64[::1], int64, uint64[::1], "
      "float64[::1], float64, float64[:, ::1])")  # fmt: skip
def categories_kernel(a_cats: NDArray, b_cats: NDArray, obs: NDArray, n: int, s: NDArray,
                      lf: NDArray, ratio: float, draws: NDArray) -> NDArray:  # fmt: skip
    """tau-b of ``n`` random matchings of B's items to A's per pair, against ``obs``.

    Binary confidence: each model keeps its (conf, perf) categories; the NumPy engine's
    decomposition: ``x11`` (level 1: items both models say yes to);
    given it, how many of A's and of B's correct items fall in each confidence block (level
    2, four variates); in each block, how many items both got right (level 3, four).

    Args:
        a_cats: ``(P, 4)`` counts of A's categories ``2 conf + perf``.
        b_cats: ``(P, 4)`` the same for B.
        obs: ``(P,)`` observed tau-b (NaN: no draw counts as >= or <=).
        n: Draws per pair.
        s: SFC64 state (advanced in place).
        lf: :func:`number_tables` of the number of items.
        ratio: Tabulate a law when ``draws * ratio >= its window's width`` (0: never).
        draws: ``(P, n)`` to receive the draws of tau-b (grouped by ``x11``), or ``(0, 0)``.

    Returns:
        ``(P, 5)``: ``#{tau >= obs}``, ``#{tau <= obs}`` (equal within 100 ulps counts, as in
        SciPy's permutation_test), draws with a defined tau-b, their sum and sum of squares.
    """
    n_pairs = a_cats.shape[0]
    out = np.zeros((n_pairs, 5))
    st = (s[0], s[1], s[2], s[3])
    keep = draws.shape[0] == n_pairs and draws.shape[1] == n
    buf = np.empty(_CAP)
    cdf = np.empty((5, _CAP))
    guide = np.empty((5, 4 * _CAP + 2), dtype=np.int64)
    laws = np.empty((4, 3), dtype=np.int64)  # (good, bad, sample) of the level-2 laws
    lo2 = np.empty(4, dtype=np.int64)
    pf = np.empty((4, 4))  # HRUA set-ups of the level-2 laws
    pk = np.empty((4, 6), dtype=np.int64)
    qf = np.empty((4, 4))  # ... and of the level-3 laws of one draw
    qk = np.empty((4, 6), dtype=np.int64)
    got = np.empty(4, dtype=np.int64)
    level2 = np.empty((n, 4), dtype=np.int64)  # level-2 draws of one level-1 value
    eps100 = 100.0 * np.finfo(np.float64).eps
    for pi in range(n_pairs):
        a00, a01, a10, a11 = a_cats[pi, 0], a_cats[pi, 1], a_cats[pi, 2], a_cats[pi, 3]
        b00, b01, b10, b11 = b_cats[pi, 0], b_cats[pi, 1], b_cats[pi, 2], b_cats[pi, 3]
        total = a00 + a01 + a10 + a11
        ka = a10 + a11
        kb = b10 + b11
        o = obs[pi]
        gamma = abs(o) * eps100
        pairs = float(total) * (total - 1.0)
        # level 1: x11 ~ H(kb, total - kb, ka)
        hist, s_lo, st = _level_one(st, lf, kb, total - kb, ka, n, ratio, buf, cdf[0], guide[0])
        ge = 0
        le = 0
        nv = 0
        s1 = 0.0
        s2 = 0.0
        d = 0
        for iv in range(hist.size):
            cnt = hist[iv]
            if cnt == 0:
                continue
            x11 = s_lo + iv
            x10 = ka - x11
            x01 = kb - x11
            x00 = total - ka - kb + x11
            same = x11 + x00
            ties_x = x01 * (x01 - 1.0) + x10 * (x10 - 1.0) + same * (same - 1.0)
            # level 2: A's right answers among A-yes in block 11 and among A-no in block 01;
            # B's among B-yes in block 11 and among B-no in block 10
            laws[0, 0], laws[0, 1], laws[0, 2] = a11, a10, x11
            laws[1, 0], laws[1, 1], laws[1, 2] = a01, a00, x01
            laws[2, 0], laws[2, 1], laws[2, 2] = b11, b10, x11
            laws[3, 0], laws[3, 1], laws[3, 2] = b01, b00, x10
            for j in range(4):
                good, bad, smp = laws[j, 0], laws[j, 1], laws[j, 2]
                lo2[j] = _table_if_paid(good, bad, smp, cnt, ratio, buf, cdf[j + 1], guide[j + 1])
                _hg_store(_hg_setup(lf, good, bad, smp), pf[j], pk[j])
            for j in range(4):  # law by law, all the group's draws (same set-up in a row)
                if lo2[j] >= 0:
                    for i in range(cnt):
                        v, st = _invert(st, lo2[j], cdf[j + 1], guide[j + 1])
                        level2[i, j] = v
                else:
                    p = _hg_load(pf[j], pk[j])
                    for i in range(cnt):
                        v, st = _hg_draw(st, lf, p)
                        level2[i, j] = v
            for i in range(cnt):
                al11, al01, be11, be10 = level2[i, 0], level2[i, 1], level2[i, 2], level2[i, 3]
                al10 = a11 - al11
                al00 = a01 - al01
                be01 = b11 - be11
                be00 = b01 - be10
                # level 3: in each block, the items both got right (the four set-ups first:
                # independent work the CPU overlaps)
                _hg_store(_hg_setup(lf, al11, x11 - al11, be11), qf[0], qk[0])
                _hg_store(_hg_setup(lf, al10, x10 - al10, be10), qf[1], qk[1])
                _hg_store(_hg_setup(lf, al01, x01 - al01, be01), qf[2], qk[2])
                _hg_store(_hg_setup(lf, al00, x00 - al00, be00), qf[3], qk[3])
                for j in range(4):
                    v, st = _hg_draw(st, lf, _hg_load(qf[j], qk[j]))
                    got[j] = v
                h11, h10, h01, h00 = got[0], got[1], got[2], got[3]
                # (dconf, dperf) cells n[dconf + 1][dperf + 1]; dperf = +1: A right, B wrong
                n00 = be01 - h01
                n02 = al01 - h01
                n20 = be10 - h10
                n22 = al10 - h10
                both = h11 + h00
                n10 = be11 + be00 - both
                n12 = al11 + al00 - both
                n01 = x01 - n00 - n02
                n21 = x10 - n20 - n22
                n11 = same - n10 - n12
                con = (n00 * (n11 + n12 + n21 + n22) + n01 * (n12 + n22) + n10 * (n21 + n22)
                       + n11 * n22)  # fmt: skip
                dis = (n02 * (n10 + n11 + n20 + n21) + n01 * (n10 + n20) + n12 * (n20 + n21)
                       + n11 * n20)  # fmt: skip
                c0 = n00 + n10 + n20
                c2 = n02 + n12 + n22
                c1 = total - c0 - c2
                ties_y = c0 * (c0 - 1.0) + c1 * (c1 - 1.0) + c2 * (c2 - 1.0)
                den = (pairs - ties_x) * (pairs - ties_y)
                tau = np.nan
                if den > 0.0:
                    tau = 2.0 * (con - dis) / math.sqrt(den)
                    nv += 1
                    if tau >= o - gamma:
                        ge += 1
                    if tau <= o + gamma:
                        le += 1
                    s1 += tau
                    s2 += tau * tau
                if keep:
                    draws[pi, d] = tau
                d += 1
        out[pi, 0] = ge
        out[pi, 1] = le
        out[pi, 2] = nv
        out[pi, 3] = s1
        out[pi, 4] = s2
    s[0], s[1], s[2], s[3] = st
    return out


# --------------------------------------------------------------------------------------------
# Real-valued confidence: level tables
# --------------------------------------------------------------------------------------------

_DIRECT_MAX = 10  # a hypergeometric variate needing at most this many draws is simulated


@_jit(inline="always")
def _hg_direct(st: tuple, good: int, pop: int, k: int) -> tuple:
    """Good items among ``k`` drawn one by one without replacement from ``pop`` (``good``)."""
    x = 0
    g = good
    p = pop
    for _ in range(k):
        u, st = _uniform(st)
        if u * p < g:
            x += 1
            g -= 1
        p -= 1
    return x, st


@_jit(inline="always")
def _hg_any(st: tuple, lf: NDArray, good: int, bad: int, sample: int) -> tuple:
    """One Hypergeometric(good, bad, sample) variate, cheap when a parameter is small.

    By the symmetries of the law (sample and good swap roles; a set and its complement), the
    variate is simulated draw by draw when the smallest of ``good``, ``bad``, ``sample`` and
    ``good + bad - sample`` is at most 10 (NumPy's rule for its own direct method); else HRUA.
    """
    pop = good + bad
    if sample <= 0 or good <= 0:
        return 0, st
    if bad <= 0:
        return sample, st
    if sample >= pop:
        return good, st
    ms = min(sample, pop - sample)
    mg = min(good, bad)
    if min(ms, mg) > _DIRECT_MAX:
        return _hrua(st, lf, good, bad, sample)
    if ms <= mg:
        if sample <= pop - sample:
            return _hg_direct(st, good, pop, sample)
        x, st = _hg_direct(st, good, pop, pop - sample)  # good items left out of the sample
        return good - x, st
    if good <= bad:  # the sample's items among the good ones
        return _hg_direct(st, sample, pop, good)
    x, st = _hg_direct(st, sample, pop, bad)  # ... among the bad ones
    return sample - x, st


@_jit(inline="always")
def _rows_s(st: tuple, lf: NDArray, rows: NDArray, lo: int, hi: int, c0: int, c1: int,
            c2: int) -> tuple:  # fmt: skip
    """S of one random ``L x 3`` table drawn row by row (see :func:`levels_margins_kernel`)."""
    r0, r1, r2 = c0, c1, c2  # items of each column not yet placed
    rem = c0 + c1 + c2
    a0, a1, a2 = 0, 0, 0  # items of each column in the rows already drawn
    sv = 0
    for li in range(lo, hi):
        r = rows[li]
        if r0 + r2 == 0:  # the rest is column 1: against a0 = c0 below, a2 = c2
            sv += rem * (a0 - a2)
            break
        if r1 + r2 == 0:
            sv -= rem * (a1 + a2)
            break
        if r0 + r1 == 0:
            sv += rem * (a0 + a1)
            break
        if r == 1:
            u, st = _uniform(st)
            v = u * rem
            if v < r0:
                x0, x1, x2 = 1, 0, 0
            elif v < r0 + r2:
                x0, x1, x2 = 0, 0, 1
            else:
                x0, x1, x2 = 0, 1, 0
        else:
            x0, st = _hg_any(st, lf, r0, r1 + r2, r)
            x2, st = _hg_any(st, lf, r2, r1, r - x0)
            x1 = r - x0 - x2
        sv += x1 * (a0 - a2) + x2 * (a0 + a1) - x0 * (a1 + a2)
        a0 += x0
        a1 += x1
        a2 += x2
        r0 -= x0
        r1 -= x1
        r2 -= x2
        rem -= r
    return sv, st


@_jit("float64[:, ::1](int64[::1], int64[::1], int64[:, ::1], int64[::1], int64, uint64[::1], "
      "float64[::1], float64, float64[:, ::1])")  # fmt: skip
def levels_margins_kernel(row_off: NDArray, rows: NDArray, cols: NDArray, s_obs: NDArray,
                          n: int, s: NDArray, lf: NDArray, per_level: float, draws: NDArray
                          ) -> NDArray:  # fmt: skip
    """Kendall's S of ``n`` random (dconf level x dperf) tables per pair, against the observed S.

    Real-valued confidence: a pair's ``L`` distinct dconf values are the rows (ascending), the
    three dperf values the columns; permuting dperf against dconf draws a random ``L x 3``
    table with both margins fixed, in one of two ways (the same law):

    * *placed*, where the two smaller columns hold at most ``per_level`` items a level (the
      usual case: most items have dperf 0): their items are placed one by one at uniformly
      random free positions among the items sorted by level (a partial Fisher-Yates shuffle
      of the items' levels, indices drawn by :func:`_below`; the array stays a permutation
      of the levels, so the next draw starts from it as it is), the largest column takes the
      rest, and S is one pass over the levels. O(items placed + L) a draw.
    * *row by row* otherwise: how many of the row's items fall in column 0 (a hypergeometric
      variate given the items still unplaced), then column 2 among the rest, column 1 takes
      what is left; S accumulates from the columns of the rows already drawn. Once a single
      column has items left, the remaining rows follow at once. O(L) a draw.

    Args:
        row_off: ``(P + 1,)`` offsets of each pair's rows in ``rows``.
        rows: Counts of each pair's dconf levels, ascending dconf.
        cols: ``(P, 3)`` counts of dperf -1, 0, +1 (items under ``2**31``).
        s_obs: ``(P,)`` observed S.
        n: Draws per pair.
        s: SFC64 state (advanced in place).
        lf: :func:`number_tables` of the largest number of items.
        per_level: Items a level of the two smaller columns up to which they are placed.
        draws: ``(P, n)`` to receive the draws of S, or ``(0, 0)``.

    Returns:
        ``(P, 5)``: ``#{S >= S_obs}``, ``#{S <= S_obs}``, draws, sum of S, sum of S**2 (zeros
        for a pair whose tau-b is undefined: constant dconf or dperf).
    """
    n_pairs = cols.shape[0]
    out = np.zeros((n_pairs, 5))
    st = (s[0], s[1], s[2], s[3])
    spare = np.uint64(0)
    held = False
    keep = draws.shape[0] == n_pairs and draws.shape[1] == n
    max_n = 1
    max_l = 1
    for pi in range(n_pairs):
        max_n = max(max_n, cols[pi, 0] + cols[pi, 1] + cols[pi, 2])
        max_l = max(max_l, row_off[pi + 1] - row_off[pi])
    pool = np.empty(max_n, dtype=np.int64)  # the items' levels, in any order
    xa = np.zeros(max_l, dtype=np.int64)  # per level, items placed of the first smaller column
    xb = np.zeros(max_l, dtype=np.int64)  # ... of the second
    for pi in range(n_pairs):
        c0, c1, c2 = cols[pi, 0], cols[pi, 1], cols[pi, 2]
        total = c0 + c1 + c2
        lo, hi = row_off[pi], row_off[pi + 1]
        n_lev = hi - lo
        if n_lev < 2 or max(c0, c1, c2) == total:
            continue
        big = 0 if c0 >= max(c1, c2) else (1 if c1 >= c2 else 2)  # the column left for last
        ca = c1 if big == 0 else c0  # the other two columns' items, in column order
        cb = c1 if big == 2 else c2
        placed = ca + cb <= per_level * n_lev
        if placed:
            k = 0
            for li in range(n_lev):
                for _ in range(rows[lo + li]):
                    pool[k] = li
                    k += 1
        so = s_obs[pi]
        ge = 0
        le = 0
        s1 = 0.0
        s2 = 0.0
        for d in range(n):
            if not placed:
                sv, st = _rows_s(st, lf, rows, lo, hi, c0, c1, c2)
            else:
                for li in range(n_lev):
                    xa[li] = 0
                    xb[li] = 0
                left = total
                for t in range(ca + cb):
                    left -= 1
                    v, st, spare, held = _take(pool, left, st, spare, held)
                    if t < ca:
                        xa[v] += 1
                    else:
                        xb[v] += 1
                sv = 0
                a0, a1, a2 = 0, 0, 0  # items of each column in the levels below
                for li in range(n_lev):
                    p, q = xa[li], xb[li]
                    rest = rows[lo + li] - p - q
                    if big == 0:
                        x0, x1, x2 = rest, p, q
                    elif big == 1:
                        x0, x1, x2 = p, rest, q
                    else:
                        x0, x1, x2 = p, q, rest
                    sv += x1 * (a0 - a2) + x2 * (a0 + a1) - x0 * (a1 + a2)
                    a0 += x0
                    a1 += x1
                    a2 += x2
            if sv >= so:
                ge += 1
            if sv <= so:
                le += 1
            fs = float(sv)
            s1 += fs
            s2 += fs * fs
            if keep:
                draws[pi, d] = fs
        out[pi, 0] = ge
        out[pi, 1] = le
        out[pi, 2] = n
        out[pi, 3] = s1
        out[pi, 4] = s2
    s[0], s[1], s[2], s[3] = st
    return out


@_jit(inline="always")
def _levels_tau_b(table: NDArray, n_lev: int, pairs: float) -> float:
    """tau-b of a (dconf level x dperf) table stored as ``table[3 level + dperf + 1]``, its
    rows in ascending dconf; ``pairs`` is ``n (n - 1)``. NaN when a margin is constant.

    With three columns Kendall's S is one pass over the rows: a row's column 1 is concordant
    with earlier rows' column 0 and discordant with their column 2, column 2 concordant with
    earlier columns 0 and 1, column 0 discordant with earlier 1 and 2.
    """
    sv = 0
    t0, t1, t2 = 0, 0, 0
    ties_x = 0.0
    for lv in range(n_lev):
        x0, x1, x2 = table[3 * lv], table[3 * lv + 1], table[3 * lv + 2]
        sv += x1 * (t0 - t2) + x2 * (t0 + t1) - x0 * (t1 + t2)
        t0 += x0
        t1 += x1
        t2 += x2
        r = x0 + x1 + x2
        ties_x += r * (r - 1.0)
    ties_y = t0 * (t0 - 1.0) + t1 * (t1 - 1.0) + t2 * (t2 - 1.0)
    den = (pairs - ties_x) * (pairs - ties_y)
    return 2.0 * sv / math.sqrt(den) if den > 0.0 else np.nan


@_jit(inline="always")
def _rows_by_columns(st: tuple, lf: NDArray, a_cnt: NDArray, a0: int, first: int, stop: int,
                     left: int, col: NDArray, kb: int, cell_code: NDArray, cb: int,
                     table: NDArray) -> tuple:  # fmt: skip
    """Rows ``first:stop`` of a matching table column by column, from the ``left`` items
    still unmatched (``col``: their columns, updated): a hypergeometric variate per column
    until a row's items are placed, each cell's count added to ``table``."""
    for i in range(first, stop):
        smp = a_cnt[a0 + i]
        rest = left
        row = cb + i * kb
        for j in range(kb):
            if smp == 0:
                break
            g = col[j]
            if g == 0:
                continue
            rest -= g
            x, st = _hg_any(st, lf, g, rest, smp)
            if x > 0:
                col[j] -= x
                smp -= x
                table[cell_code[row + j]] += x
        left -= a_cnt[a0 + i]
    return st


@_jit("float64[:, ::1](int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], "
      "int64[::1], int64[::1], float64[::1], int64, uint64[::1], float64[::1], float64, "
      "float64[:, ::1])")  # fmt: skip
def matching_kernel(a_off: NDArray, a_cnt: NDArray, b_off: NDArray, b_cnt: NDArray,
                    cell_off: NDArray, cell_code: NDArray, n_levels: NDArray, total_n: NDArray,
                    obs: NDArray, n: int, s: NDArray, lf: NDArray, ratio: float,
                    draws: NDArray) -> NDArray:  # fmt: skip
    """tau-b of ``n`` random matchings of B's items to A's per pair, against ``obs``.

    Real-valued confidence: B's items matched to A's by a random permutation is a random
    table of A's by B's (confidence, correctness) categories with both category counts fixed.
    Rows are one side's categories, largest first (which side: the plan's, see
    :func:`~metacog_metrics.pairwise.tau._level_tables`); a row is *large* when its items
    exceed ``ratio`` times the columns. A draw takes the rows in this order, which does not
    change the law of the table (any order gives it), so the draw is exact:

    * the small rows but the largest row, item by item: each item one of B's items still
      unmatched, uniformly (a partial Fisher-Yates shuffle of an array of B's items, its
      indices drawn by :func:`_below`; the array is left a permutation of B's items, so the
      next draw starts from it as it is, never rebuilt);
    * the large rows but the largest, column by column (a hypergeometric variate per column
      until the row's items are placed);
    * the largest row takes what is left, free.

    Each cell adds its count to the (dconf level, dperf) table it maps to (``cell_code``:
    ``3 level + dperf + 1``), whose tau-b is the draw. Cost per draw: about 2 ns an item of
    the small rows, a variate a column of the large ones, and the levels.

    Args:
        a_off: ``(P + 1,)`` offsets of each pair's row categories in ``a_cnt``.
        a_cnt: Row category counts, largest first.
        b_off: ``(P + 1,)`` offsets of each pair's column categories in ``b_cnt``.
        b_cnt: Column category counts.
        cell_off: ``(P + 1,)`` offsets of each pair's ``rows x columns`` cells.
        cell_code: ``3 level + dperf + 1`` of each cell (row-major).
        n_levels: ``(P,)`` number of dconf levels of each pair.
        total_n: ``(P,)`` items of each pair (under ``2**31``).
        obs: ``(P,)`` observed tau-b (NaN: no draw counts as >= or <=).
        n: Draws per pair.
        s: SFC64 state (advanced in place).
        lf: :func:`number_tables` of the largest number of items.
        ratio: A row is drawn column by column when its items exceed ``ratio`` times the
            columns.
        draws: ``(P, n)`` to receive the draws of tau-b, or ``(0, 0)``.

    Returns:
        ``(P, 5)``: ``#{tau >= obs}``, ``#{tau <= obs}`` (equal within 100 ulps counts),
        draws with a defined tau-b, their sum and sum of squares.
    """
    n_pairs = obs.shape[0]
    out = np.zeros((n_pairs, 5))
    st = (s[0], s[1], s[2], s[3])
    spare = np.uint64(0)
    held = False
    keep = draws.shape[0] == n_pairs and draws.shape[1] == n
    eps100 = 100.0 * np.finfo(np.float64).eps
    max_l = 1
    max_b = 1
    max_n = 1
    for pi in range(n_pairs):
        max_l = max(max_l, n_levels[pi])
        max_b = max(max_b, b_off[pi + 1] - b_off[pi])
        max_n = max(max_n, total_n[pi])
    table = np.zeros(3 * max_l, dtype=np.int64)
    col = np.empty(max_b, dtype=np.int64)
    pool = np.empty(max_n, dtype=np.int64)  # B's items, as their columns, in any order
    for pi in range(n_pairs):
        a0, a1 = a_off[pi], a_off[pi + 1]
        b0, b1 = b_off[pi], b_off[pi + 1]
        kb = b1 - b0
        ka = a1 - a0
        cb = cell_off[pi]
        n_lev = n_levels[pi]
        total = total_n[pi]
        o = obs[pi]
        gamma = abs(o) * eps100
        pairs = float(total) * (total - 1.0)
        ge = 0
        le = 0
        nv = 0
        s1 = 0.0
        s2 = 0.0
        n_large = 0
        while n_large < ka and a_cnt[a0 + n_large] > ratio * kb:
            n_large += 1
        by_items = max(n_large, 1)  # the first row drawn item by item
        by_columns = total  # B's items unmatched once the small rows are drawn
        for i in range(by_items, ka):
            by_columns -= a_cnt[a0 + i]
        k = 0
        for j in range(kb):
            for _ in range(b_cnt[b0 + j]):
                pool[k] = j
                k += 1
        for d in range(n):
            for k in range(3 * n_lev):
                table[k] = 0
            for j in range(kb):
                col[j] = b_cnt[b0 + j]
            left = total
            for i in range(by_items, ka):  # small rows: an unmatched item of B each
                row = cb + i * kb
                for _ in range(a_cnt[a0 + i]):
                    left -= 1
                    j, st, spare, held = _take(pool, left, st, spare, held)
                    col[j] -= 1
                    table[cell_code[row + j]] += 1
            st = _rows_by_columns(st, lf, a_cnt, a0, 1, n_large, by_columns, col, kb,
                                  cell_code, cb, table)  # fmt: skip
            for j in range(kb):  # the largest row: what is left
                if col[j] > 0:
                    table[cell_code[cb + j]] += col[j]
            tau = _levels_tau_b(table, n_lev, pairs)
            if not math.isnan(tau):
                nv += 1
                if tau >= o - gamma:
                    ge += 1
                if tau <= o + gamma:
                    le += 1
                s1 += tau
                s2 += tau * tau
            if keep:
                draws[pi, d] = tau
        out[pi, 0] = ge
        out[pi, 1] = le
        out[pi, 2] = nv
        out[pi, 3] = s1
        out[pi, 4] = s2
    s[0], s[1], s[2], s[3] = st
    return out


@_jit(inline="always")
def _values_per_model(codes: NDArray, own_off: NDArray, own: NDArray) -> NDArray:
    """Distinct confidence values of each model: one more than its largest code."""
    nv = np.ones(codes.shape[0], dtype=np.int64)
    for m in range(codes.shape[0]):
        for q in range(own_off[m], own_off[m + 1]):
            nv[m] = max(nv[m], codes[m, own[q]] + 1)
    return nv


@_jit(inline="always")
def _category_lookups(nv: NDArray, ia: NDArray, ib: NDArray, lut_off: NDArray, lut: NDArray,
                      stride: NDArray, n_levels: NDArray) -> tuple:  # fmt: skip
    """Per pair, the table cell of every (A's category, B's category): ``(offsets, cells)``.

    A model's category is ``2 value + correctness``, and ``2 nv`` for an item it did not
    answer; a pair's lookup is ``(2 nv_A + 1) x (2 nv_B + 1)``, row-major, and sends an item
    either model lacks to the spare cell ``3 n_levels`` past its table. One load per item and
    pair instead of four (value and correctness of each model, then the level).
    """
    n_pairs = ia.shape[0]
    off = np.zeros(n_pairs + 1, dtype=np.int64)
    for k in range(n_pairs):
        off[k + 1] = off[k] + (2 * nv[ia[k]] + 1) * (2 * nv[ib[k]] + 1)
    cells = np.empty(off[n_pairs], dtype=np.int32)
    for k in range(n_pairs):
        wa, wb = 2 * nv[ia[k]] + 1, 2 * nv[ib[k]] + 1
        for x in range(wa):
            for y in range(wb):
                if x == wa - 1 or y == wb - 1:
                    cell = 3 * n_levels[k]
                else:
                    level = lut[lut_off[k] + (x >> 1) * stride[k] + (y >> 1)]
                    cell = 3 * level + (x & 1) - (y & 1) + 1
                cells[off[k] + x * wb + y] = cell
    return off, cells


@_jit(inline="always")
def _joint_shuffle(cs: NDArray, ps: NDArray, cat: NDArray, m: int, own_off: NDArray,
                   own: NDArray, split: bool, st: tuple) -> tuple:  # fmt: skip
    """Shuffle model ``m`` among its own items (Fisher-Yates, from the previous order;
    ``split``: its confidence and its correctness each on its own, else both together)
    and refresh its categories. Returns the generator state."""
    lo = own_off[m]
    for i in range(own_off[m + 1] - lo - 1, 0, -1):
        u, st = _uniform(st)
        j = int(u * (i + 1))
        x, y = own[lo + i], own[lo + j]
        cs[m, x], cs[m, y] = cs[m, y], cs[m, x]
        if not split:
            ps[m, x], ps[m, y] = ps[m, y], ps[m, x]
    if split:
        for i in range(own_off[m + 1] - lo - 1, 0, -1):
            u, st = _uniform(st)
            j = int(u * (i + 1))
            x, y = own[lo + i], own[lo + j]
            ps[m, x], ps[m, y] = ps[m, y], ps[m, x]
    for q in range(own_off[m], own_off[m + 1]):
        i = own[q]
        cat[m, i] = 2 * cs[m, i] + ps[m, i]
    return st


@_jit(inline="always")
def _count_all(table: NDArray, spare: NDArray, cells: NDArray, base: int, wb: int,
               ca: NDArray, cb: NDArray, size: int) -> None:  # fmt: skip
    """Add every item's cell to ``table[:size]``: even items here, odd ones in ``spare`` (two
    independent chains of increments), then summed into ``table``."""
    for t in range(size):
        table[t] = 0
        spare[t] = 0
    n_items = ca.shape[0]
    for i in range(n_items // 2):
        table[cells[base + ca[2 * i] * wb + cb[2 * i]]] += 1
        spare[cells[base + ca[2 * i + 1] * wb + cb[2 * i + 1]]] += 1
    if n_items % 2:
        table[cells[base + ca[n_items - 1] * wb + cb[n_items - 1]]] += 1
    for t in range(size):
        table[t] += spare[t]


@_jit("float64[:, ::1](int64[:, ::1], int64[:, ::1], int64[::1], int64[::1], int64[::1], "
      "int64[::1], int64[::1], int64[::1], boolean, int64, uint64[::1])")  # fmt: skip
def joint_levels_kernel(codes: NDArray, perf: NDArray, ia: NDArray, ib: NDArray,
                        lut_off: NDArray, lut: NDArray, stride: NDArray, n_levels: NDArray,
                        split: bool, n: int, s: NDArray) -> NDArray:  # fmt: skip
    """tau-b of every pair in ``n`` joint draws for real-valued confidence: ``(n, P)``.

    Each draw shuffles every model's items once (``split``: its confidence and its
    correctness each on its own; else both together) and recomputes every pair from that one
    draw. A pair's table cell is read from its lookup of (A's category, B's category), so a
    pair costs one pass over the items and one over its levels.

    Args:
        codes: ``(M, N)`` index of each item's confidence among the model's distinct values.
        perf: ``(M, N)`` 0/1 correctness.
        ia, ib: ``(P,)`` model indices of the pairs.
        lut_off: ``(P + 1,)`` offsets of each pair's lookup table in ``lut``.
        lut: dconf level of (A's value ``i``, B's value ``j``) at ``i * stride + j``.
        stride: ``(P,)`` B's number of distinct values.
        n_levels: ``(P,)`` dconf levels of each pair.
        split: Confidence and correctness shuffled each on its own (else together).
        n: Draws.
        s: SFC64 state (advanced in place).
    """
    n_models, n_items = codes.shape
    n_pairs = ia.shape[0]
    out = np.empty((n, n_pairs))
    st = (s[0], s[1], s[2], s[3])
    own_off = np.arange(0, (n_models + 1) * n_items, n_items).astype(np.int64)
    own = np.empty(n_models * n_items, dtype=np.int64)
    for m in range(n_models):
        for i in range(n_items):
            own[m * n_items + i] = i
    nv = _values_per_model(codes, own_off, own)
    off, cells = _category_lookups(nv, ia, ib, lut_off, lut, stride, n_levels)
    max_l = 1
    for k in range(n_pairs):
        max_l = max(max_l, n_levels[k])
    table = np.zeros(3 * max_l + 1, dtype=np.int64)
    spare = np.zeros(3 * max_l + 1, dtype=np.int64)
    cs = codes.copy()
    ps = perf.copy()
    cat = np.empty((n_models, n_items), dtype=np.int32)
    pairs = float(n_items) * (n_items - 1.0)
    for d in range(n):
        for m in range(n_models):
            st = _joint_shuffle(cs, ps, cat, m, own_off, own, split, st)
        for k in range(n_pairs):
            a, b = ia[k], ib[k]
            _count_all(table, spare, cells, off[k], 2 * nv[b] + 1, cat[a], cat[b],
                       3 * n_levels[k])  # fmt: skip
            out[d, k] = _levels_tau_b(table, n_levels[k], pairs)
    s[0], s[1], s[2], s[3] = st
    return out


@_jit(inline="always")
def _fisher_yates(order: NDArray, lo: int, hi: int, st: tuple) -> tuple:
    """Permute ``order[lo:hi]`` uniformly at random (from whatever order it is in)."""
    for i in range(hi - lo - 1, 0, -1):
        u, st = _uniform(st)
        j = int(u * (i + 1))
        order[lo + i], order[lo + j] = order[lo + j], order[lo + i]
    return st


@_jit(inline="always")
def _filtered_view(view: NDArray, conf_from: NDArray, perf_from: NDArray, conf_cat: NDArray,
                   perf_cat: NDArray, lo: int, hi: int, present: NDArray, other: int,
                   split: bool) -> None:  # fmt: skip
    """A model's categories on the items it shares with ``other``, in landing order, into
    ``view``: a walk over its own items (``lo:hi`` of the landing arrays) keeping those
    ``other`` answered; with ``split`` its confidence and its correctness walk each their
    own landing order.

    Branch-free: every value is written at the next free place, which advances only when
    the item is kept (a dropped item is overwritten, or adds zero); on atlas's ragged runs
    this is about a third faster than testing each item, with the same views.
    """
    pres = present[other]
    t = 0
    if split:
        for q in range(lo, hi):
            view[t] = conf_cat[q]
            t += pres[conf_from[q]]
        t = 0
        for q in range(lo, hi):
            keep = pres[perf_from[q]]
            view[t] += perf_cat[q] * keep
            t += keep
    else:
        for q in range(lo, hi):
            view[t] = conf_cat[q] + perf_cat[q]
            t += pres[conf_from[q]]


@_jit("float64[:, ::1](int64[:, ::1], int64[:, ::1], int64[::1], int64[::1], uint8[:, ::1], "
      "int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], "
      "boolean, int64, uint64[::1])")  # fmt: skip
def joint_ragged_kernel(codes: NDArray, perf: NDArray, own_off: NDArray, own: NDArray,
                        present: NDArray, ia: NDArray, ib: NDArray, n_shared: NDArray,
                        lut_off: NDArray, lut: NDArray, stride: NDArray, n_levels: NDArray,
                        split: bool, n: int, s: NDArray) -> NDArray:  # fmt: skip
    """tau-b of every pair in ``n`` joint draws on ragged data: ``(n, P)``.

    Each draw permutes every model among the items it answered (``own[own_off[m]:own_off[m
    + 1]]``; ``split``: its confidence and its correctness each by its own permutation) and
    every pair counts, over the items both of its models answered, each model's own values
    there in the order its permutation lands them
    (:func:`metacog_metrics.pairwise.masked.pair_view`), through the pair's lookup of (A's
    category, B's category) cells. A model whose items are all shared with the other is read
    in its landing order as it is; else its items the other lacks are skipped in a walk.

    Args:
        codes: ``(M, N)`` index of each item's confidence among the model's distinct values
            (binary: the 0/1 value).
        perf: ``(M, N)`` 0/1 correctness (0 where missing).
        own_off, own: Each model's items, ascending (CSR).
        present: ``(M, N)`` 1 where the model answered the item.
        ia, ib: ``(P,)`` model indices of the pairs.
        n_shared: ``(P,)`` items both models of each pair answered.
        lut_off, lut, stride, n_levels: The pairs' dconf level lookups (as
            :func:`joint_levels_kernel`).
        split: Confidence and correctness permuted each on its own (else together).
        n: Draws.
        s: SFC64 state (advanced in place).
    """
    n_models, n_items = codes.shape
    n_pairs = ia.shape[0]
    out = np.empty((n, n_pairs))
    st = (s[0], s[1], s[2], s[3])
    nv = _values_per_model(codes, own_off, own)
    off, cells = _category_lookups(nv, ia, ib, lut_off, lut, stride, n_levels)
    max_l = 1
    for k in range(n_pairs):
        max_l = max(max_l, n_levels[k])
    table = np.zeros(3 * max_l + 1, dtype=np.int64)
    spare = np.zeros(3 * max_l + 1, dtype=np.int64)
    conf_from = own.copy()  # the item whose confidence lands on each own item (CSR)
    perf_from = own.copy()
    conf_cat = np.zeros(own.size, dtype=np.int32)  # 2 value of the landed confidence
    perf_cat = np.zeros(own.size, dtype=np.int32)  # the landed correctness
    cat = np.zeros(own.size, dtype=np.int32)  # their sum: the category read in landing order
    view_a = np.zeros(n_items, dtype=np.int32)
    view_b = np.zeros(n_items, dtype=np.int32)
    for d in range(n):
        for m in range(n_models):
            lo, hi = own_off[m], own_off[m + 1]
            st = _fisher_yates(conf_from, lo, hi, st)
            if split:
                st = _fisher_yates(perf_from, lo, hi, st)
            for q in range(lo, hi):
                conf_cat[q] = 2 * codes[m, conf_from[q]]
                perf_cat[q] = perf[m, perf_from[q] if split else conf_from[q]]
                cat[q] = conf_cat[q] + perf_cat[q]
        for k in range(n_pairs):
            a, b = ia[k], ib[k]
            size = n_shared[k]
            xa, oa = cat, own_off[a]
            if own_off[a + 1] - own_off[a] > size:
                _filtered_view(view_a, conf_from, perf_from, conf_cat, perf_cat, own_off[a],
                               own_off[a + 1], present, b, split)  # fmt: skip
                xa, oa = view_a, 0
            xb, ob = cat, own_off[b]
            if own_off[b + 1] - own_off[b] > size:
                _filtered_view(view_b, conf_from, perf_from, conf_cat, perf_cat, own_off[b],
                               own_off[b + 1], present, a, split)  # fmt: skip
                xb, ob = view_b, 0
            n_lev = n_levels[k]
            for t in range(3 * n_lev):
                table[t] = 0
                spare[t] = 0
            wb = 2 * nv[b] + 1
            base = off[k]
            for t in range(size // 2):  # two chains of increments (even items, odd items)
                u = 2 * t
                table[cells[base + xa[oa + u] * wb + xb[ob + u]]] += 1
                spare[cells[base + xa[oa + u + 1] * wb + xb[ob + u + 1]]] += 1
            if size % 2:
                table[cells[base + xa[oa + size - 1] * wb + xb[ob + size - 1]]] += 1
            for t in range(3 * n_lev):
                table[t] += spare[t]
            out[d, k] = _levels_tau_b(table, n_lev, float(size) * (size - 1.0))
    s[0], s[1], s[2], s[3] = st
    return out


# --------------------------------------------------------------------------------------------
# Binary confidence: joint draws and row permutations on packed bits
# --------------------------------------------------------------------------------------------


_SUBSET_BITS = 12  # precision of the first, Bernoulli step of a random subset


@intrinsic
def _popcount(typingctx, x):  # type: ignore[no-untyped-def]
    """Set bits of a uint64 (LLVM's ctpop: one instruction, vectorised over a loop)."""
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        fn = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(fn, args)

    return types.uint64(types.uint64), codegen


@_jit(inline="always")
def _random_subset(st: tuple, bits: NDArray, within: NDArray, size: int, k: int,
                   n_items: int) -> tuple:  # fmt: skip
    """Set in ``bits`` (packed) a uniformly random ``k``-subset of the ``size`` items set in
    ``within`` (all ``n_items`` when ``within`` is empty).

    Each item is first taken with probability ``t / 2**12``, the nearest to ``k / size``
    (bit-sliced: from the lowest set bit of ``t`` up, a random word is OR-ed into the 64
    items' word where the bit is 1 and AND-ed where it is 0, so each bit ends 1 with
    probability ``0.t``, independently across items), then uniformly random surplus items are
    dropped, or missing ones added, until exactly ``k`` are in: the first step is exchangeable
    over the items and the second keeps it so, hence a uniform ``k``-subset (as
    ``_exact_counts`` of the NumPy engine). At most 12 random words per 64 items (a 16-bit
    uniform per item cost three times as much), plus about sqrt(n) fixes.
    """
    whole = within.size == 0
    words = bits.size
    tail = n_items & 63
    full = 1 << _SUBSET_BITS
    t = (k * full + size // 2) // size if size > 0 else 0
    low = 0  # below t's lowest set bit every step would AND into zero
    if 0 < t < full:
        while (t >> low) & 1 == 0:
            low += 1
    count = 0
    for w in range(words):
        word = np.uint64(0)
        if t >= full:
            word = ~word
        elif t > 0:
            for i in range(low, _SUBSET_BITS):
                r, st = _next64(st)
                word = word | r if (t >> i) & 1 else word & r
        if whole:
            if w == words - 1 and tail:
                word &= (np.uint64(1) << np.uint64(tail)) - np.uint64(1)
        else:
            word &= within[w]
        bits[w] = word
        count += _popcount(word)
    while count != k:  # uniformly random surplus items out, or missing ones in
        u, st = _uniform(st)
        i = int(u * n_items)
        wi, bit = i >> 6, np.uint64(1) << np.uint64(i & 63)
        if count > k:
            if bits[wi] & bit:
                bits[wi] &= ~bit
                count -= 1
        elif (bits[wi] & bit) == 0 and (whole or (within[wi] & bit) != 0):
            bits[wi] |= bit
            count += 1
    return st


@_jit(inline="always")
def _pair_counts(c: NDArray, p: NDArray, a: int, b: int, out: NDArray, valid_tail: int) -> None:
    """The six co-occurrence counts of the (dconf, dperf) table of models ``a`` and ``b``.

    ``out``: A in (1,1) and B in (0,0); B in (1,1) and A in (0,0); A in (1,0) and B in (0,1);
    B in (1,0) and A in (0,1); both confident; both correct (bits past the items are zero).
    """
    w_count = c.shape[1]
    e1 = 0
    e2 = 0
    e3 = 0
    e4 = 0
    cc = 0
    pp = 0
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    for w in range(w_count):
        ca, pa, cb, pb = c[a, w], p[a, w], c[b, w], p[b, w]
        valid = full
        if w == w_count - 1 and valid_tail:
            valid = (np.uint64(1) << np.uint64(valid_tail)) - np.uint64(1)
        e1 += _popcount(ca & pa & ~cb & ~pb & valid)
        e2 += _popcount(cb & pb & ~ca & ~pa & valid)
        e3 += _popcount(ca & ~pa & ~cb & pb)
        e4 += _popcount(cb & ~pb & ~ca & pa)
        cc += _popcount(ca & cb)
        pp += _popcount(pa & pb)
    out[0], out[1], out[2], out[3], out[4], out[5] = e1, e2, e3, e4, cc, pp


@_jit(inline="always")
def _arrange_models(st: tuple, c: NDArray, p: NDArray, kc: NDArray, kp: NDArray, n11: NDArray,
                    n01: NDArray, n_items: int, split: bool, rest: NDArray, no: NDArray,
                    none: NDArray) -> tuple:  # fmt: skip
    """One joint draw's packed bits: every model's 0/1 vectors arranged uniformly at random
    with its own counts (as :func:`joint_binary_counts`). Returns the generator state."""
    words = c.shape[1]
    tail = n_items & 63
    for m in range(c.shape[0]):
        c[m, :] = 0
        p[m, :] = 0
        st = _random_subset(st, c[m], none, n_items, kc[m], n_items)
        if split:
            st = _random_subset(st, p[m], none, n_items, kp[m], n_items)
            continue
        st = _random_subset(st, p[m], c[m], kc[m], n11[m], n_items)  # right among yes
        for w in range(words):
            rest[w] = 0
            no[w] = ~c[m, w]
        if tail:
            no[words - 1] &= (np.uint64(1) << np.uint64(tail)) - np.uint64(1)
        st = _random_subset(st, rest, no, n_items - kc[m], n01[m], n_items)
        for w in range(words):
            p[m, w] |= rest[w]
    return st


@_jit("int64[:, :, ::1](int64[::1], int64[::1], int64[::1], int64[::1], int64, int64[::1], "
      "int64[::1], boolean, int64, uint64[::1])")  # fmt: skip
def joint_binary_counts(kc: NDArray, kp: NDArray, n11: NDArray, n01: NDArray, n_items: int,
                        ia: NDArray, ib: NDArray, split: bool, n: int,
                        s: NDArray) -> NDArray:  # fmt: skip
    """Co-occurrence counts of every pair in ``n`` joint draws of binary confidence.

    Each draw arranges every model's 0/1 vectors uniformly at random with its own counts
    (``split``: its yes count ``kc`` and its correct count ``kp``, each on its own; else its
    (conf, perf) categories: ``kc`` yes, ``n11`` correct among them, ``n01`` among the no) as
    packed bits, then counts, for every pair, the six co-occurrences of
    :func:`_pair_counts` with one popcount per word.

    Returns:
        ``(n, P, 6)`` counts (the tables follow as in ``_fill_tables``).
    """
    n_models = kc.size
    words = (n_items + 63) // 64
    tail = n_items & 63
    c = np.zeros((n_models, words), dtype=np.uint64)
    p = np.zeros((n_models, words), dtype=np.uint64)
    rest = np.empty(words, dtype=np.uint64)
    no = np.empty(words, dtype=np.uint64)
    none = np.empty(0, dtype=np.uint64)
    out = np.empty((n, ia.size, 6), dtype=np.int64)
    st = (s[0], s[1], s[2], s[3])
    for d in range(n):
        st = _arrange_models(st, c, p, kc, kp, n11, n01, n_items, split, rest, no, none)
        for k in range(ia.size):
            _pair_counts(c, p, ia[k], ib[k], out[d, k], tail)
    s[0], s[1], s[2], s[3] = st
    return out


@_jit(inline="always")
def _binary_tau(e: NDArray, kca: int, kcb: int, kpa: int, kpb: int, n_items: int) -> float:
    """tau-b of a pair's (dconf, dperf) table from its six co-occurrence counts ``e`` and the
    models' yes and correct counts: the table of ``tau._tables_from_counts``, S and the
    denominator as ``tau._tau_b_tables`` computes them (integer S and tie counts, exact in
    doubles, then one division and one square root: the same doubles)."""
    t22, t00, t20, t02 = e[0], e[1], e[2], e[3]
    r2 = kca - e[4]
    r0 = kcb - e[4]
    c2 = kpa - e[5]
    c0 = kpb - e[5]
    t21 = r2 - t22 - t20
    t01 = r0 - t00 - t02
    t12 = c2 - t22 - t02
    t10 = c0 - t00 - t20
    t11 = n_items - r2 - r0 - t12 - t10
    con = t00 * (t11 + t12 + t21 + t22) + t01 * (t12 + t22) + t10 * (t21 + t22) + t11 * t22
    dis = t02 * (t10 + t11 + t20 + t21) + t01 * (t10 + t20) + t12 * (t20 + t21) + t11 * t20
    r1 = t10 + t11 + t12
    c1 = t01 + t11 + t21
    n0 = n_items * (n_items - 1) / 2.0
    n1 = r0 * (r0 - 1) / 2.0 + r1 * (r1 - 1) / 2.0 + r2 * (r2 - 1) / 2.0
    n2 = c0 * (c0 - 1) / 2.0 + c1 * (c1 - 1) / 2.0 + c2 * (c2 - 1) / 2.0
    den = (n0 - n1) * (n0 - n2)
    if den > 0.0:
        return (con - dis) / math.sqrt(den)
    return np.nan


@_jit("float64[:, ::1](int64[::1], int64[::1], int64[::1], int64[::1], int64, int64[::1], "
      "int64[::1], boolean, int64, uint64[::1])")  # fmt: skip
def joint_binary_taus(kc: NDArray, kp: NDArray, n11: NDArray, n01: NDArray, n_items: int,
                      ia: NDArray, ib: NDArray, split: bool, n: int,
                      s: NDArray) -> NDArray:  # fmt: skip
    """tau-b of every pair in ``n`` joint draws of binary confidence: ``(n, P)``.

    The draws of :func:`joint_binary_counts` (the same stream for the same state), each
    pair's tau-b computed here from its counts instead of ``(n, P, 6)`` counts returned:
    at 300 models the tables and tau-b in NumPy took about six times the draws' own time,
    and the counts array of a chunk of 50 draws about 100 MB.
    """
    n_models = kc.size
    words = (n_items + 63) // 64
    tail = n_items & 63
    c = np.zeros((n_models, words), dtype=np.uint64)
    p = np.zeros((n_models, words), dtype=np.uint64)
    rest = np.empty(words, dtype=np.uint64)
    no = np.empty(words, dtype=np.uint64)
    none = np.empty(0, dtype=np.uint64)
    e = np.empty(6, dtype=np.int64)
    out = np.empty((n, ia.size))
    st = (s[0], s[1], s[2], s[3])
    for d in range(n):
        st = _arrange_models(st, c, p, kc, kp, n11, n01, n_items, split, rest, no, none)
        for k in range(ia.size):
            a, b = ia[k], ib[k]
            _pair_counts(c, p, a, b, e, tail)
            out[d, k] = _binary_tau(e, kc[a], kc[b], kp[a], kp[b], n_items)
    s[0], s[1], s[2], s[3] = st
    return out


@_jit()
def _packed_columns(x: NDArray) -> NDArray:
    """``(N, M)`` 0/1 as ``(M, ceil(N / 64))`` bit words: bit ``i & 63`` of word ``i >> 6`` of
    row ``m`` is ``x[i, m]``."""
    n_items, n_models = x.shape
    out = np.zeros((n_models, (n_items + 63) // 64), dtype=np.uint64)
    for i in range(n_items):
        bit = np.uint64(1) << np.uint64(i & 63)
        for m in range(n_models):
            if x[i, m]:
                out[m, i >> 6] |= bit
    return out


@_jit("int64[:, :, ::1](uint8[:, ::1], uint8[:, ::1], int64[:, ::1], int64[::1], int64[::1])")
def permuted_counts(conf: NDArray, perf: NDArray, perms: NDArray, ia: NDArray,
                    ib: NDArray) -> NDArray:  # fmt: skip
    """Co-occurrence counts of every pair with the confidence rows permuted: ``(n, P, 6)``.

    For the difficulty-stratified null: item ``i`` takes the confidence row of item
    ``perms[d, i]`` (all models at once); correctness stays. ``conf`` and ``perf`` are
    ``(N, M)`` 0/1 (items first: a permuted item's row is one contiguous read). Exact integer
    counts, as the float products they replace.
    """
    n_items, n_models = conf.shape
    tail = n_items & 63
    p = _packed_columns(perf)
    c = np.zeros_like(p)
    n = perms.shape[0]
    out = np.empty((n, ia.size, 6), dtype=np.int64)
    for d in range(n):
        c[:, :] = 0
        for i in range(n_items):
            row = perms[d, i]
            bit = np.uint64(1) << np.uint64(i & 63)
            for m in range(n_models):
                if conf[row, m]:
                    c[m, i >> 6] |= bit
        for k in range(ia.size):
            _pair_counts(c, p, ia[k], ib[k], out[d, k], tail)
    return out


@_jit("float64[:, ::1](uint8[:, ::1], uint8[:, ::1], int64[:, ::1], int64[::1], int64[::1], "
      "int64[::1], int64[::1])")  # fmt: skip
def permuted_taus(conf: NDArray, perf: NDArray, perms: NDArray, ia: NDArray, ib: NDArray,
                  kc: NDArray, kp: NDArray) -> NDArray:  # fmt: skip
    """tau-b of every pair with the confidence rows permuted: ``(n, P)``.

    :func:`permuted_counts` (the same arguments, and ``kc``, ``kp``: each model's yes and
    correct counts) with each pair's tau-b computed here from its counts, the same doubles as
    ``tau_b_from_table`` of their tables (see :func:`_binary_tau`), without the ``(n, P, 6)``
    counts: the NumPy tables took most of the difficulty-stratified null's time at 300 models.
    """
    n_items, n_models = conf.shape
    tail = n_items & 63
    p = _packed_columns(perf)
    c = np.zeros_like(p)
    words = p.shape[1]
    conf_t = np.ascontiguousarray(conf.T)  # (models, items): one model's row at a time
    n = perms.shape[0]
    e = np.empty(6, dtype=np.int64)
    out = np.empty((n, ia.size))
    for d in range(n):
        order = perms[d]
        for m in range(n_models):  # model by model, each word built in a register
            own = conf_t[m]
            for w in range(words):
                word = np.uint64(0)
                for j in range(min(64, n_items - 64 * w)):
                    word |= np.uint64(own[order[64 * w + j]] != 0) << np.uint64(j)
                c[m, w] = word
        for k in range(ia.size):
            a, b = ia[k], ib[k]
            _pair_counts(c, p, a, b, e, tail)
            out[d, k] = _binary_tau(e, kc[a], kc[b], kp[a], kp[b], n_items)
    return out
