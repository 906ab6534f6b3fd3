"""Compiled helpers the tests draw with (they need numba): raw uniforms and single laws.

They call the package's inline pieces (the SFC64 step, HRUA, the tabulated inversion, the
small-parameter sampler) one law at a time, so the tests can check each piece alone.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import NDArray

from metacog_metrics.pairwise import _numba as K


@numba.njit(cache=True)
def uniforms(s: NDArray, n: int) -> NDArray:
    """``n`` doubles of the SFC64 stream; ``s`` advances in place."""
    out = np.empty(n)
    st = (s[0], s[1], s[2], s[3])
    for i in range(n):
        u, st = K._uniform(st)
        out[i] = u
    s[0], s[1], s[2], s[3] = st
    return out


@numba.njit(cache=True)
def hypergeometric_draws(good: int, bad: int, sample: int, n: int, s: NDArray, lf: NDArray,
                         tabulated: bool) -> NDArray:  # fmt: skip
    """``n`` draws of one law, by HRUA (set up afresh for each) or tabulated and inverted."""
    out = np.empty(n, dtype=np.int64)
    cap = 2 * K._HALF_CAP + 1
    buf = np.empty(cap)
    cdf = np.empty(cap)
    guide = np.empty(4 * cap + 2, dtype=np.int64)
    lo = K._tabulate(good, bad, sample, buf, cdf, guide) if tabulated else -1
    st = (s[0], s[1], s[2], s[3])
    for i in range(n):
        if lo >= 0:
            k, st = K._invert(st, lo, cdf, guide)
        else:
            k, st = K._hrua(st, lf, good, bad, sample)
        out[i] = k
    s[0], s[1], s[2], s[3] = st
    return out


@numba.njit(cache=True)
def hg_any_draws(good: int, bad: int, sample: int, n: int, s: NDArray, lf: NDArray) -> NDArray:
    """``n`` draws of one law by the real-valued kernels' sampler (direct or HRUA)."""
    out = np.empty(n, dtype=np.int64)
    st = (s[0], s[1], s[2], s[3])
    for i in range(n):
        k, st = K._hg_any(st, lf, good, bad, sample)
        out[i] = k
    s[0], s[1], s[2], s[3] = st
    return out


@numba.njit(cache=True)
def below_draws(bound: int, n: int, s: NDArray) -> NDArray:
    """``n`` uniform integers in ``[0, bound)`` by the kernels' index sampler."""
    out = np.empty(n, dtype=np.int64)
    st = (s[0], s[1], s[2], s[3])
    spare = np.uint64(0)
    held = False
    for i in range(n):
        k, st, spare, held = K._below(st, spare, held, bound)
        out[i] = k
    s[0], s[1], s[2], s[3] = st
    return out
