"""Pairwise calibration: does model A's confidence *relative to B* track its performance relative
to B, item by item, beyond what base rates and each model's own calibration explain?

For every model pair (A, B) the statistic is Kendall's tau-b between ``dconf = conf_A - conf_B``
and ``dperf = perf_A - perf_B`` over the items. Two permutation nulls answer different questions:

* ``base_rate`` (base-rate-matched): the association is broken while every base rate is kept.
  Per pair, ``dconf`` is permuted against ``dperf``; for the mean over pairs, each model's
  confidence and correctness vectors are each shuffled on their own.
* ``calibration_preserving``: each model keeps its own (confidence, correctness) pairs and only
  the matching of items across models is shuffled; the mean is drawn by shuffling each model's
  item order. With a shared difficulty axis this null sits far above zero (shared difficulty
  cancels in the observed differences but not after scrambling), so compare against it, not 0.

Per-pair p-values use ``(1 + #{null >= observed}) / (B + 1)`` and BH-FDR across pairs. The mean
over all pairs needs *joint* draws (all pairs recomputed from the same shuffled matrices), since
pairs sharing a model are dependent: independent per-pair draws understate the sd of the
base-rate mean null about three-fold (measured: 0.0021 against 0.0063 on 20 models x 1,000
items).

Binary confidence has a fast engine. A pair's 3x3 table of (dconf, dperf) follows from four
co-occurrence counts, computed for all pairs at once on bits packed 64 to a word (AND +
popcount), so a joint draw costs a few vectorised passes; each model's shuffled vector is drawn
as a uniformly random arrangement of its own counts. Per-pair draws are random contingency tables
with the fixed margins (3x3 for the base-rate null, the 4x4 table of A's by B's (conf, perf)
category for the calibration-preserving null, collapsed to 3x3) drawn exactly by a block
decomposition into hypergeometric variates, those whose law repeats across draws by inversion of
tabulated CDFs, so their cost does not depend on the number of items. With numba installed (the
``fast`` extra) the same decomposition runs compiled (:mod:`metacog_metrics.pairwise._numba`),
about three times faster; ``METACOG_NO_NUMBA=1`` or ``engine="numpy"`` keeps NumPy. Real-valued
confidence (logprob, sampled, numeric) is drawn the same way: a pair's tau-b depends on its
items only through the counts over its distinct dconf values (exact decimal ties kept) by the
three dperf values, so a base-rate draw is a random ``levels x 3`` table with both margins, and
a calibration-preserving draw a random table of A's by B's (confidence, correctness)
categories (compiled; without numba, or with values too many to tabulate, the items are
permuted). The cost of a draw depends on the levels, not the items. The joint draws run
compiled too: binary vectors arranged at random as packed bits with popcount co-occurrence
counts, real-valued ones shuffled with per-pair level lookups. All permutation work is split
into fixed chunks with their own child seeds and run on a thread pool: results do not depend on
the number of threads.


The package, by step of the method: :mod:`~metacog_metrics.pairwise.tau` (tau-b from tables,
the observed tables of every pair), :mod:`~metacog_metrics.pairwise.samplers` (random tables
and shuffled matrices), :mod:`~metacog_metrics.pairwise.pair` (the per-pair tests),
:mod:`~metacog_metrics.pairwise.joint` (the joint draws), :mod:`~metacog_metrics.pairwise.results`
(the result types), :mod:`~metacog_metrics.pairwise.analysis` (the whole analysis) and
:mod:`~metacog_metrics.pairwise.common` (inputs, seeds, p-values, the thread pool).
"""

from __future__ import annotations

from metacog_metrics.pairwise.analysis import pairwise_calibration
from metacog_metrics.pairwise.common import DEFAULT_DELTAS, ENGINES, NULLS, PAIR_TYPES
from metacog_metrics.pairwise.joint import joint_null_draws
from metacog_metrics.pairwise.pair import pair_permutation_test
from metacog_metrics.pairwise.results import (
    DeltaCurve,
    MeanTauNull,
    PairTestResult,
    PairTypeSummary,
    PairwiseResult,
)
from metacog_metrics.pairwise.tau import pairwise_taus, tau_b_from_table

__all__ = [
    "DEFAULT_DELTAS",
    "ENGINES",
    "NULLS",
    "PAIR_TYPES",
    "DeltaCurve",
    "MeanTauNull",
    "PairTestResult",
    "PairTypeSummary",
    "PairwiseResult",
    "joint_null_draws",
    "pair_permutation_test",
    "pairwise_calibration",
    "pairwise_taus",
    "tau_b_from_table",
]
