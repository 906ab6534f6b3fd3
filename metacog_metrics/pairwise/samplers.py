"""Random tables and shuffled matrices: the NumPy kernels the nulls' samplers draw with.

Per-pair draws: block decomposition with exact inversion of the shared laws. A random table
with fixed margins (or a random matching of two models' categories) is built in three levels
of hypergeometric variates. Level 1 has one law per pair;
level 2 depends on the pair and the level-1 value only, so its laws repeat across the draws;
level 3 (the last free cell of each block) depends on several earlier values and is drawn one
by one (NumPy's sampler, ~100 ns a variate). Laws that repeat are tabulated once (their exact
CDF on a window that leaves out less than 2**-60 of the mass, checked) and drawn by inversion
with a guide table, some 20-40 ns a draw with the tables; they are tabulated only where a table
serves enough draws (few items: narrow laws). Every step draws from the exact conditional law,
so the tables are distributed as under random permutations of the items (tests check this
against enumeration, shuffles, SciPy and the cell-by-cell sampler). The level-3 variates set
the floor: 1 per table with fixed margins, 4 per category matching.
:mod:`metacog_metrics.pairwise._numba` compiles the same decomposition (used when numba
imports): the level-3 variates by HRUA with tabulated log-factorials, some 35-40 ns each.

Joint draws shuffle whole models: each model's 0/1 vectors are uniformly random arrangements of
its own counts (:func:`_shuffled_binary`); real-valued confidence permutes the items. Which
null draws with which kernel is registered in :mod:`metacog_metrics.pairwise.nulls`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics.pairwise.tau import _kendall_s, _tau_b_tables

_WINDOW_SD = 9.0  # tabulated window: mean +- (9 sd + 12), widened until the tails are < 2**-60
_WINDOW_PAD = 12.0
_TAIL = 2.0**-60
_TABULATE_RATIO = 4  # tabulate a level-2 law when it has >= 1/4 draw per table entry


def _hg_window(good: NDArray, bad: NDArray, sample: NDArray, scale: NDArray | float = 1.0
               ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:  # fmt: skip
    """Window ``[lo, hi]`` of Hypergeometric(good, bad, sample) around its mean."""
    pop = good + bad
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(pop > 0, sample * good / np.maximum(pop, 1), 0.0)
        var = np.where(pop > 1, mean * (bad / np.maximum(pop, 1)) * (pop - sample)
                       / np.maximum(pop - 1, 1), 0.0)  # fmt: skip
    half = np.ceil((_WINDOW_SD * np.sqrt(np.maximum(var, 0.0)) + _WINDOW_PAD) * scale)
    lo = np.maximum(np.maximum(sample - bad, 0), np.floor(mean - half).astype(np.int64))
    hi = np.minimum(np.minimum(sample, good), np.ceil(mean + half).astype(np.int64))
    return lo, hi


def _hg_tables(good: ArrayLike, bad: ArrayLike, sample: ArrayLike
               ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:  # fmt: skip
    """Exact CDFs of Hypergeometric(good, bad, sample), one law per row.

    The pmf on the window comes from the ratio recurrence
    ``f(k+1) / f(k) = (good - k)(sample - k) / ((k + 1)(bad - sample + k + 1))`` (a cumulative
    sum of logs: relative error ~1e-12, better than differences of log-factorials), normalised
    on the window. The window is widened until a log-concavity bound puts each tail below 2**-60,
    far below the 2**-53 resolution of the uniforms that invert it.

    Returns:
        ``lo`` (G,) first value of each window and ``cdf`` (G, W): the CDF at ``lo + j``,
        exactly 1.0 from the window's last value on.
    """
    good, bad, sample = (np.asarray(v, dtype=np.int64) for v in (good, bad, sample))
    s_lo = np.maximum(sample - bad, 0)
    s_hi = np.minimum(sample, good)
    scale = np.ones(good.shape)
    while True:
        lo, hi = _hg_window(good, bad, sample, scale)
        width = int((hi - lo).max()) + 1 if lo.size else 1
        k = lo[:, None] + np.arange(width - 1)  # ratios f(k+1)/f(k)
        inside = k < hi[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            kk = np.where(inside, k, lo[:, None])  # keep logs finite outside
            lr = np.log((good[:, None] - kk) * (sample[:, None] - kk).astype(float)) - np.log(
                (kk + 1) * (bad[:, None] - sample[:, None] + kk + 1).astype(float)
            )
        lr = np.where(inside, lr, -np.inf)  # fmt: skip
        logf = np.zeros((lo.size, width))
        np.cumsum(lr, axis=1, out=logf[:, 1:])
        logf -= logf.max(axis=1, keepdims=True)
        logf[logf < -700.0] = -np.inf  # no subnormals (slow); such masses are far below 2**-60
        pmf = np.exp(logf)
        cdf = np.cumsum(pmf, axis=1)
        total = cdf[:, -1:].copy()
        cdf /= total
        # Tails beyond the window, bounded by log-concavity: f(end) r / (1 - r).
        rows = np.arange(lo.size)
        f_hi = pmf[rows, hi - lo] / total[:, 0]
        f_lo = pmf[:, 0] / total[:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            r_hi = ((good - hi) * (sample - hi).astype(float)
                    / ((hi + 1) * (bad - sample + hi + 1).astype(float)))  # fmt: skip
            r_lo = (lo * (bad - sample + lo).astype(float)
                    / ((good - lo + 1) * (sample - lo + 1).astype(float)))  # fmt: skip
            up = np.where(hi < s_hi, np.where(r_hi < 1, f_hi * r_hi / (1 - r_hi), np.inf), 0.0)
            down = np.where(lo > s_lo, np.where(r_lo < 1, f_lo * r_lo / (1 - r_lo), np.inf), 0.0)
        wide = (up > _TAIL) | (down > _TAIL)
        if not wide.any():
            return lo, cdf
        scale = np.where(wide, scale * 2.0, scale)


def _inverse_cdf_draws(lo: NDArray, cdf: NDArray, group: NDArray, rng: np.random.Generator
                       ) -> NDArray[np.int64]:  # fmt: skip
    """One exact draw per entry of ``group`` from that row of tabulated CDFs.

    Inversion: the smallest k with ``cdf[k] > u``, started from a guide table with L bins per
    row (L a power of two, so ``cdf * L`` and ``floor(u * L)`` are exact): the number of k with
    ``cdf[k] <= j / L`` is a lower bound for every u in bin j, and a short walk finishes.
    """
    n_rows, width = cdf.shape
    size = 1 << max(0, width.bit_length() - 1)  # largest power of two <= width
    bucket = np.ceil(cdf * size).astype(np.int64)  # cdf[k] <= j / L  <=>  bucket[k] <= j
    bucket += (np.arange(n_rows) * (size + 1))[:, None]
    below = np.cumsum(np.bincount(bucket.ravel(), minlength=n_rows * (size + 1)))
    u = rng.random(group.size)
    k = below[group * (size + 1) + (u * size).astype(np.int64)] - group * width
    flat = cdf.ravel()
    base = group * width
    todo = np.flatnonzero(flat[base + k] <= u)
    while todo.size:
        k[todo] += 1
        todo = todo[flat[base[todo] + k[todo]] <= u[todo]]
    return lo[group] + k


def _group_by(pair: NDArray, value: NDArray, lo: NDArray, width: int, n_pairs: int
              ) -> tuple[NDArray, NDArray, NDArray]:  # fmt: skip
    """Draws sharing (pair, level-1 value): group per draw, and each group's pair and value."""
    key = pair * width + (value - lo[pair])
    used = np.bincount(key, minlength=n_pairs * width) > 0
    index = np.cumsum(used) - 1
    occupied = np.flatnonzero(used)
    g_pair = occupied // width
    return index[key], g_pair, lo[g_pair] + occupied % width


def _conditional_draws(
    good: NDArray, bad: NDArray, sample: NDArray, group: NDArray, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Hypergeometric draws with the parameters of their group (level 2).

    A group with many draws next to its table's width is tabulated and inverted; the draws of
    the other groups (the tails of the level-1 law) go to NumPy's sampler one by one.
    """
    lo, hi = _hg_window(good, bad, sample)
    count = np.bincount(group, minlength=good.size)
    table = count * _TABULATE_RATIO >= hi - lo + 1
    out = np.empty(group.size, dtype=np.int64)
    by_table = table[group]
    if table.any():
        index = np.cumsum(table) - 1
        lo_t, cdf = _hg_tables(good[table], bad[table], sample[table])
        out[by_table] = _inverse_cdf_draws(lo_t, cdf, index[group[by_table]], rng)
    rest = group[~by_table]
    if rest.size:
        out[~by_table] = rng.hypergeometric(good[rest], bad[rest], sample[rest])
    return out


def _cells(*cells: NDArray) -> NDArray[np.int64]:
    """``(K, 3, 3)`` tables from the nine ``(K,)`` cells, row by row."""
    return np.stack(cells, axis=-1).reshape(-1, 3, 3)


def _margins_s(rows: NDArray, cols: NDArray, n: int, rng: np.random.Generator) -> NDArray:
    """Kendall's S of ``n`` random 3x3 tables per pair with the given margins: ``(P, n)``.

    Block decomposition around cell (0, 0): ``n00`` (level 1); given it, the rest of row 0
    (``n01``) and of column 0 (``n10``) are independent (level 2); the remaining 2x2 block is a
    random table with the margins they leave, one more variate ``n22`` (level 3). With the
    margins fixed, the other cells follow; ``S`` is exact in integers.
    """
    n_pairs = rows.shape[0]
    r0, r1, r2 = (np.asarray(v, dtype=np.int64) for v in rows.T)
    c0, c1, c2 = (np.asarray(v, dtype=np.int64) for v in cols.T)
    total = r0 + r1 + r2
    pair = np.repeat(np.arange(n_pairs), n)
    lo, cdf = _hg_tables(c0, total - c0, r0)
    n00 = _inverse_cdf_draws(lo, cdf, pair, rng)
    group, g_pair, g_n00 = _group_by(pair, n00, lo, cdf.shape[1], n_pairs)
    n01 = _conditional_draws(c1[g_pair], c2[g_pair], r0[g_pair] - g_n00, group, rng)
    n10 = _conditional_draws(r1[g_pair], r2[g_pair], c0[g_pair] - g_n00, group, rng)
    r0, r1, r2, c0, c1, c2 = (v[pair] for v in (r0, r1, r2, c0, c1, c2))
    n02 = r0 - n00 - n01
    n20 = c0 - n00 - n10
    n22 = rng.hypergeometric(c2 - n02, c1 - n01, r2 - n20)
    n21 = r2 - n20 - n22
    n12 = c2 - n02 - n22
    n11 = r1 - n10 - n12
    s = _kendall_s(_cells(n00, n01, n02, n10, n11, n12, n20, n21, n22))
    return s.reshape(n_pairs, n)


def _category_taus(a_cats: NDArray, b_cats: NDArray, n: int, rng: np.random.Generator
                      ) -> NDArray[np.float64]:  # fmt: skip
    """tau-b of ``n`` random matchings of B's items to A's per pair: ``(P, n)``.

    B's items are matched to A's by a random permutation (each model keeps its own
    (conf, perf) pairs); ``a_cats``/``b_cats`` are (P, 4)
    counts of the categories ``2 conf + perf``. Level 1: ``x11``, the items both models say
    yes to, fixes the four confidence blocks (yes/yes, yes/no, no/yes, no/no). Level 2 (given
    ``x11`` only): how many of A's correct items and of B's correct items fall in each block.
    Level 3: in each block, how many items both got right. The (dconf, dperf) table follows:
    the disagreeing blocks are the rows dconf = +1 and -1, the two agreeing blocks row 0.
    """
    n_pairs = a_cats.shape[0]
    a00, a01, a10, a11 = (np.asarray(v, dtype=np.int64) for v in a_cats.T)
    b00, b01, b10, b11 = (np.asarray(v, dtype=np.int64) for v in b_cats.T)
    total = a00 + a01 + a10 + a11
    ka, kb = a10 + a11, b10 + b11
    pair = np.repeat(np.arange(n_pairs), n)
    lo, cdf = _hg_tables(kb, total - kb, ka)
    x11 = _inverse_cdf_draws(lo, cdf, pair, rng)
    group, gp, gx = _group_by(pair, x11, lo, cdf.shape[1], n_pairs)
    al11 = _conditional_draws(a11[gp], a10[gp], gx, group, rng)  # A right, among A yes
    al01 = _conditional_draws(a01[gp], a00[gp], kb[gp] - gx, group, rng)  # ... among A no
    be11 = _conditional_draws(b11[gp], b10[gp], gx, group, rng)  # B right, among B yes
    be10 = _conditional_draws(b01[gp], b00[gp], ka[gp] - gx, group, rng)  # ... among B no
    ka, kb, a01, a11, b01, b11, total = (v[pair] for v in (ka, kb, a01, a11, b01, b11, total))
    x10, x01 = ka - x11, kb - x11
    x00 = total - ka - kb + x11
    al10, al00 = a11 - al11, a01 - al01
    be01, be00 = b11 - be11, b01 - be10
    h11 = rng.hypergeometric(al11, x11 - al11, be11)
    h10 = rng.hypergeometric(al10, x10 - al10, be10)
    h01 = rng.hypergeometric(al01, x01 - al01, be01)
    h00 = rng.hypergeometric(al00, x00 - al00, be00)
    # (dconf, dperf) cells n[dconf + 1][dperf + 1]; dperf = +1: A right and B wrong
    n00, n02 = be01 - h01, al01 - h01  # dconf -1: A no, B yes
    n20, n22 = be10 - h10, al10 - h10  # dconf +1: A yes, B no
    both = h11 + h00
    n10, n12 = be11 + be00 - both, al11 + al00 - both
    n01 = x01 - n00 - n02
    n21 = x10 - n20 - n22
    n11 = x11 + x00 - n10 - n12
    tau = _tau_b_tables(_cells(n00, n01, n02, n10, n11, n12, n20, n21, n22))
    return tau.reshape(n_pairs, n)


def _levels_margins_s(rows: NDArray, cols: NDArray, n: int, rng: np.random.Generator
                        ) -> NDArray[np.int64]:  # fmt: skip
    """Kendall's S of ``n`` random (dconf level x dperf) tables per pair: ``(P, n)``.

    Real-valued confidence, dperf permuted against dconf: a random
    ``L x 3`` table with the pair's level counts as rows (ascending dconf) and its dperf counts
    as columns. Row by row, vectorised over pairs and draws: the row's items in column 0 are
    a hypergeometric variate given the items not yet placed, then those in column 2 among the
    rest, column 1 takes what is left; S accumulates from the columns of the rows above.
    O(L) a draw, whatever the number of items.

    Args:
        rows: ``(P, L)`` level counts, zero padded at the end.
        cols: ``(P, 3)`` counts of dperf -1, 0, +1.
        n: Draws per pair.
        rng: Generator.
    """
    n_pairs = cols.shape[0]
    left = [np.repeat(cols[:, k : k + 1].astype(np.int64), n, axis=1) for k in range(3)]
    above = [np.zeros((n_pairs, n), dtype=np.int64) for _ in range(3)]
    s = np.zeros((n_pairs, n), dtype=np.int64)
    for level in range(rows.shape[1]):
        r = np.repeat(rows[:, level : level + 1].astype(np.int64), n, axis=1)
        if not r.any():
            continue
        x0 = rng.hypergeometric(left[0], left[1] + left[2], r)
        x2 = rng.hypergeometric(left[2], left[1], r - x0)
        x1 = r - x0 - x2
        s += x1 * (above[0] - above[2]) + x2 * (above[0] + above[1]) - x0 * (above[1] + above[2])
        for k, x in enumerate((x0, x1, x2)):
            above[k] += x
            left[k] -= x
    return s


def _exact_counts(
    bits: NDArray[np.bool_],
    count: NDArray,
    target: NDArray,
    avail: NDArray,
    rng: np.random.Generator,
    eligible: NDArray[np.bool_] | None = None,
) -> None:
    """Flip uniformly chosen positions so row r has exactly target[r] True within ``eligible``.

    ``bits`` was drawn i.i.d. (exchangeable over positions) at about the right rate; flipping a
    uniformly random subset of the surplus ones (or of the zeros, when short) keeps it
    exchangeable, so each row ends as a uniformly random target-subset of its eligible
    positions. All rows at once, by rejection sampling of positions (no per-row Python loop).

    Args:
        bits: ``(R, n)`` draws, modified in place.
        count: ``(R,)`` current number of True within ``eligible`` (modified).
        target: ``(R,)`` wanted number.
        avail: ``(R,)`` number of eligible positions.
        rng: Generator.
        eligible: ``(R, n)`` positions that may be True (None: all).
    """
    n_rows, n = bits.shape
    diff = count - target
    todo = np.flatnonzero(diff != 0)
    while todo.size:
        d = np.abs(diff[todo])
        want = diff[todo] > 0  # True: turn ones off; False: turn zeros on
        pool = np.where(want, count[todo], avail[todo] - count[todo])
        draws = np.ceil(1.5 * d * n / np.maximum(pool, 1) + 16).astype(np.int64)
        row = np.repeat(todo, draws)
        pos = rng.integers(0, n, size=row.size)
        ok = bits[row, pos] == np.repeat(want, draws)
        if eligible is not None:
            ok &= eligible[row, pos]
        row, pos = row[ok], pos[ok]
        _, first = np.unique(row * n + pos, return_index=True)
        first.sort()  # the first occurrence of each position, in drawing order
        row, pos = row[first], pos[first]
        order = np.argsort(row, kind="stable")  # rank within the row, in drawing order
        row, pos = row[order], pos[order]
        starts = np.searchsorted(row, todo)
        rank = np.arange(row.size) - np.repeat(starts, np.bincount(row, minlength=n_rows)[todo])
        need = np.zeros(n_rows, dtype=np.int64)
        need[todo] = d
        take = rank < need[row]
        bits[row[take], pos[take]] = ~bits[row[take], pos[take]]
        got = np.bincount(row[take], minlength=n_rows)[todo]
        delta = np.where(want, -got, got)
        count[todo] += delta
        diff[todo] += delta
        todo = todo[diff[todo] != 0]


def _threshold(ones: NDArray, avail: NDArray) -> NDArray[np.uint32]:
    """uint16 cut-off giving rate ones / avail (65536 = always)."""
    rate = np.where(avail > 0, ones / np.maximum(avail, 1), 0.0)
    return np.rint(rate * 65536).astype(np.uint32)


def _random_bits(
    n: int, ones: NDArray, rng: np.random.Generator, *, eligible: NDArray | None = None
) -> NDArray[np.bool_]:
    """(R, n) rows with exactly ones[r] True, placed uniformly (within ``eligible`` if given)."""
    ones = np.asarray(ones, dtype=np.int64)
    avail = np.full(ones.shape, n, dtype=np.int64) if eligible is None else eligible.sum(axis=1)
    bits = (
        rng.integers(0, 65536, size=(ones.size, n), dtype=np.uint16)
        < _threshold(ones, avail)[:, None]
    )
    if eligible is not None:
        bits &= eligible
    _exact_counts(bits, bits.sum(axis=1), ones, avail, rng, eligible)
    return bits


def _category_counts(c: NDArray, p: NDArray) -> dict[str, NDArray[np.int64]]:
    """Per model: yes count, correct count, and correct counts among yes and among no."""
    cb, pb = c > 0.5, p > 0.5
    return {
        "kc": cb.sum(axis=0).astype(np.int64),
        "kp": pb.sum(axis=0).astype(np.int64),
        "n11": (cb & pb).sum(axis=0).astype(np.int64),
        "n01": (~cb & pb).sum(axis=0).astype(np.int64),
    }


def _shuffled_binary(
    counts: Mapping[str, NDArray], n_items: int, split: bool, n: int, rng: np.random.Generator
) -> tuple[NDArray, NDArray]:
    """n joint draws of the models x items 0/1 matrices: (n, M, N) bool.

    Every model's vector is a uniformly random arrangement of its own counts: with ``split``
    conf and perf each on its own; else the (conf, perf) category vector as a whole (conf
    first, then perf within conf = 1 and within conf = 0, in one pass with class-dependent
    rates).
    """
    m = counts["kc"].size
    kc = np.tile(counts["kc"], n)
    cs = _random_bits(n_items, kc, rng)
    if split:
        ps = _random_bits(n_items, np.tile(counts["kp"], n), rng)
    else:
        n11 = np.tile(counts["n11"], n)
        n01 = np.tile(counts["n01"], n)
        not_cs = ~cs
        cut = np.where(cs, _threshold(n11, kc)[:, None], _threshold(n01, n_items - kc)[:, None])
        ps = rng.integers(0, 65536, size=cs.shape, dtype=np.uint16) < cut
        in_yes = (ps & cs).sum(axis=1)
        in_no = ps.sum(axis=1) - in_yes
        _exact_counts(ps, in_yes, n11, kc, rng, cs)
        _exact_counts(ps, in_no, n01, n_items - kc, rng, not_cs)
    shape = (n, m, n_items)
    return cs.reshape(shape), ps.reshape(shape)


def _shuffled_values(
    c: NDArray, p: NDArray, split: bool, n: int, rng: np.random.Generator
) -> tuple[NDArray, NDArray]:
    """n joint draws for real-valued confidence: (n, N, M) each, by permuting each model's
    items (``split``: its confidence and its correctness each on its own, else together)."""
    cs = np.repeat(c.T[None], n, axis=0)  # (n, M, N)
    ps = np.repeat(p.T[None], n, axis=0)
    if split:
        rng.permuted(cs, axis=-1, out=cs)
        rng.permuted(ps, axis=-1, out=ps)
    else:
        idx = np.broadcast_to(np.arange(c.shape[0]), cs.shape).copy()
        rng.permuted(idx, axis=-1, out=idx)
        cs = np.take_along_axis(cs, idx, axis=-1)
        ps = np.take_along_axis(ps, idx, axis=-1)
    return np.swapaxes(cs, 1, 2), np.swapaxes(ps, 1, 2)
