"""The difficulty-stratified null: the mean tau against confidence rows permuted within pass counts.

**Not a valid test of private signal in general.** The null is exact only when an item's pass
count ``k`` carries all of its difficulty, i.e. under a Rasch model. Outside review measured its
rejection rate at alpha 0.05 with no private signal (20 models): Rasch 0.04-0.05, equal-slope
probit 0.03-0.04, but lognormal discrimination sd 1.0 (2PL) 0.11 at 3,000 and 0.20 at 10,000
items, and guessing c = 0.25 (3PL) 0.15 and 0.18: the excess grows with the number of items.
Read its p-value as "the observed mean is above what within-stratum permutation gives", not as
evidence of private signal.

Neither null of the paper has nominal size as a *detector* of private signal when items share a
difficulty axis:

* the base-rate-matched null is centred on 0, but with no private signal at all the observed mean
  tau is not 0: when able models also say "yes" more often (the paper's regime), pairs with an
  accuracy gap get a positive tau from shared difficulty alone, so its false-positive rate grows
  towards 1 with the number of items;
* the calibration-preserving null keeps each model's own (confidence, correctness) pairs and
  scrambles the items across models, which removes the shared difficulty that cancels in the
  observed differences; it sits far *above* the observed mean (that is the paper's finding),
  so it never detects anything.

The test here keeps what the shared difficulty explains and breaks only what it does not. Under
"no individuated metacognition" a model's confidence and correctness are independent given the
item; the number of models that answer an item correctly, ``k``, is a sufficient statistic for
its difficulty only under a Rasch model (the equal-slope probit model is close; models with
unequal slopes or guessing are not, and there the null is too narrow). So the
null permutes the items' *whole confidence rows* (all models at once, keeping the shared
confidence factor and every threshold) among items with the same ``k``, and recomputes the mean
tau with the pairwise engine (:func:`metacog_metrics.pairwise.pairwise_taus`). Any association
between a model's confidence and its own correctness beyond the item's difficulty stratum is
the private signal. The test is one-sided (``greater``) with ``p = (1 + #{null >= obs}) /
(B + 1)``.

:func:`metacog_metrics.power.power_analysis` measures its size beside the test that replaced it
in the analysis, :mod:`metacog_metrics.private_signal` (which also holds the item's
ability-weighted score fixed); :func:`metacog_metrics.analyze.analyze_records` reports only that
one (``pairwise.nulls.private_signal``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits

from metacog_metrics._conventions import SeedLike, tie_tolerance
from metacog_metrics._result import Result
from metacog_metrics._threads import map_threads, n_threads
from metacog_metrics.pairwise import pairwise_taus, tau_b_from_table
from metacog_metrics.pairwise.engines import compiled_kernels as _compiled_kernels

__all__ = [
    "StratifiedTestResult",
    "mean_taus",
    "stratified_mean_tau_test",
    "stratified_null_draws",
    "stratified_permutations",
]

#: Items x models x draws per call of the pairwise engine (bounds memory, ~200 MB peak).
_ELEMENTS_PER_CALL = 1 << 22


# ---------------------------------------------------------------------------------------------
# Draws and the test


def stratified_permutations(perf: ArrayLike, n: int, rng: SeedLike = None) -> NDArray[np.intp]:
    """Random permutations of the items within strata of equal correct-count.

    Args:
        perf: ``(items, models)`` 0/1 correctness.
        n: Number of permutations.
        rng: Seed, ``SeedSequence`` or ``Generator``.

    Returns:
        ``(n, items)`` indices ``perm`` such that item ``i`` takes the row of item ``perm[i]``,
        and ``perf[perm[i]].sum() == perf[i].sum()`` for every ``i``.
    """
    y = np.asarray(perf)
    if y.ndim != 2:
        raise ValueError(f"perf must be (items, models), got shape {y.shape}")
    rng = np.random.default_rng(rng)
    k = np.rint(y.sum(axis=1)).astype(np.int64)
    base = np.argsort(k, kind="stable")  # items grouped by stratum
    # Sorting k + U(0, 1) shuffles every stratum independently and keeps strata in order.
    shuffled = np.argsort(k[None, :] + rng.random((n, k.size)), kind="stable")  # along items
    out = np.empty((n, k.size), dtype=np.intp)
    out[:, base] = shuffled
    return out


def mean_taus(conf: NDArray, perf: NDArray) -> NDArray:
    """Mean tau-b over pairs of (..., items, models) batches (pairs with a tau only)."""
    return _nanmean_last(pairwise_taus(conf, perf))


def _nanmean_last(taus: NDArray) -> NDArray:
    # NaN taus are left out before the sum and the count is at least 1 in the division:
    # nothing here can warn (a pair-free draw is NaN by the where, not by 0 / 0)
    valid = np.isfinite(taus)
    total = np.where(valid, taus, 0.0).sum(axis=-1)
    count = valid.sum(axis=-1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def stratified_null_draws(
    conf: NDArray, perf: NDArray, perms: NDArray, workers: int | None = 1
) -> NDArray:
    """Mean tau of every stratified permutation of one (items, models) replicate.

    The pairwise engine builds each pair's 3x3 (dconf, dperf) table from four Gram products;
    two of them (confidence with confidence, correctness with correctness) and so every margin
    of every table are invariant when whole confidence rows are permuted. Only the two that mix
    a model's confidence with its correctness change, so a draw costs two batched products
    instead of four plus input validation; the tables then go through the engine's
    :func:`~metacog_metrics.pairwise.tau_b_from_table`. (Checked against ``pairwise_taus`` on
    the permuted matrices in the tests.)

    ``workers`` threads (None: one per CPU) share the permutations on the compiled engine; the
    draws do not depend on it (the permutations are given).
    """
    n_items, m = conf.shape
    ia, ib = np.triu_indices(m, k=1)
    kernels = _compiled_kernels("auto")
    if kernels is not None:  # the same integer counts by popcount on packed bits
        return _compiled_null_draws(kernels, conf, perf, perms, ia, ib, workers)
    c = np.ascontiguousarray(conf.T, dtype=np.float32)  # (models, items)
    y = np.ascontiguousarray(perf.T, dtype=np.float32)
    kc, ky = c.sum(axis=1), y.sum(axis=1)
    cc, yy = c @ c.T, y @ y.T
    r2 = (kc[ia] - cc[ia, ib])[None, :]  # dconf = +1 (invariant)
    r0 = (kc[ib] - cc[ia, ib])[None, :]  # dconf = -1
    c2 = (ky[ia] - yy[ia, ib])[None, :]  # dperf = +1
    c0 = (ky[ib] - yy[ia, ib])[None, :]  # dperf = -1
    step = max(1, _ELEMENTS_PER_CALL // (n_items * m))
    out = np.empty(perms.shape[0])
    for start in range(0, perms.shape[0], step):
        cp = c[:, perms[start : start + step]].transpose(1, 0, 2)  # (b, models, items)
        e11 = cp * y
        e10 = cp - e11
        e01 = y - e11
        e00 = 1.0 - cp - e01
        a = np.rint(e11 @ e00.transpose(0, 2, 1))  # A in (1, 1), B in (0, 0)
        b = np.rint(e10 @ e01.transpose(0, 2, 1))  # A in (1, 0), B in (0, 1)
        t = np.empty((cp.shape[0], ia.size, 3, 3))
        t[..., 2, 2] = a[:, ia, ib]
        t[..., 0, 0] = a[:, ib, ia]
        t[..., 2, 0] = b[:, ia, ib]
        t[..., 0, 2] = b[:, ib, ia]
        t[..., 2, 1] = r2 - t[..., 2, 2] - t[..., 2, 0]
        t[..., 0, 1] = r0 - t[..., 0, 0] - t[..., 0, 2]
        t[..., 1, 2] = c2 - t[..., 2, 2] - t[..., 0, 2]
        t[..., 1, 0] = c0 - t[..., 0, 0] - t[..., 2, 0]
        t[..., 1, 1] = n_items - r2 - r0 - t[..., 1, 2] - t[..., 1, 0]
        out[start : start + step] = _nanmean_last(tau_b_from_table(t))
    return out


def _compiled_null_draws(
    kernels: Any, conf: NDArray, perf: NDArray, perms: NDArray, ia: NDArray, ib: NDArray,
    workers: int | None,
) -> NDArray:  # fmt: skip
    """:func:`stratified_null_draws` on the compiled kernel (numba): every pair's
    co-occurrence counts by popcount on packed bits, the same integers as the float products,
    and its tau-b from them in the kernel, so the same draws to the last bit, in chunks of
    permutations (on ``workers`` threads: the kernel releases the GIL)."""
    c8 = np.ascontiguousarray(conf > 0.5, dtype=np.uint8)  # (items, models)
    p8 = np.ascontiguousarray(perf > 0.5, dtype=np.uint8)
    kc = c8.sum(axis=0, dtype=np.int64)
    kp = p8.sum(axis=0, dtype=np.int64)
    ia64, ib64 = ia.astype(np.int64), ib.astype(np.int64)
    perms = np.ascontiguousarray(perms, dtype=np.int64)
    out = np.empty(perms.shape[0])
    n_workers = n_threads(workers, perms.shape[0])
    step = max(1, min((1 << 21) // max(1, 6 * ia.size), -(-perms.shape[0] // n_workers)))

    def chunk(start: int) -> None:
        taus = kernels.permuted_taus(c8, p8, perms[start : start + step], ia64, ib64, kc, kp)
        out[start : start + step] = _nanmean_last(taus)

    map_threads(chunk, range(0, perms.shape[0], step), n_workers)
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class StratifiedTestResult(Result):
    """Mean tau over pairs against the difficulty-stratified permutation null.

    Attributes:
        observed: Observed mean tau-b over pairs.
        null_mean: Mean of the null draws.
        null_sd: Their standard deviation.
        p_value: One-sided p-value (observed above the null), ``(1 + count) / (B + 1)``.
        permutations: Null draws (B).
        n_strata: Strata (distinct correct-counts) with at least two items.
        draws: The null draws.
    """

    observed: float
    null_mean: float
    null_sd: float
    p_value: float
    permutations: int
    n_strata: int
    draws: NDArray[np.float64]


def stratified_mean_tau_test(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    permutations: int = 999,
    rng: SeedLike = 0,
) -> StratifiedTestResult:
    """The mean tau against the difficulty-stratified null (exact only under a Rasch model).

    The mean tau-b of ``dconf`` vs ``dperf`` over all model pairs, against a null that permutes
    whole confidence rows among items answered correctly by the same number of models (see the
    module docstring: with unequal discrimination or guessing it over-rejects, so this is not a
    test of private signal with nominal size).

    Args:
        conf: ``(items, models)`` 0/1 confidence, complete.
        perf: ``(items, models)`` 0/1 correctness, complete.
        permutations: Null draws.
        rng: Seed, ``SeedSequence`` or ``Generator`` (SciPy's ``rng`` convention).

    Returns:
        A :class:`StratifiedTestResult`.

    Raises:
        ValueError: Mismatched shapes, missing values or non-binary input.
    """
    c = np.asarray(conf, dtype=float)
    y = np.asarray(perf, dtype=float)
    if c.shape != y.shape or c.ndim != 2:
        raise ValueError(f"conf {c.shape} and perf {y.shape} must be equal (items, models)")
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    if not (np.isin(c, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()):
        raise ValueError("conf and perf must be complete 0/1 matrices")
    rng = np.random.default_rng(rng)
    with threadpool_limits(limits=1):
        observed = float(mean_taus(c, y))
        draws = stratified_null_draws(c, y, stratified_permutations(y, permutations, rng))
    ok = draws[np.isfinite(draws)]
    counts = np.bincount(np.rint(y.sum(axis=1)).astype(np.int64))
    ties = ok >= observed - tie_tolerance(observed)
    p = (1.0 + np.sum(ties)) / (ok.size + 1.0) if ok.size else math.nan
    return StratifiedTestResult(
        observed=observed,
        null_mean=float(ok.mean()) if ok.size else math.nan,
        null_sd=float(ok.std(ddof=1)) if ok.size > 1 else math.nan,
        p_value=float(p),
        permutations=int(permutations),
        n_strata=int((counts >= 2).sum()),
        draws=draws,
    )
