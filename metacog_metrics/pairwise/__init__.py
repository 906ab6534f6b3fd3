"""Pairwise calibration: does model A's confidence *relative to B* track its performance relative
to B, item by item, beyond what base rates and each model's own calibration explain?

For every model pair (A, B) the statistic is Kendall's tau-b between ``dconf = conf_A - conf_B``
and ``dperf = perf_A - perf_B`` over the items. Permutation nulls answer different questions;
each is one module of the registry :mod:`metacog_metrics.pairwise.nulls` (its law, its label,
its fast samplers), and everything here loops over :func:`null_names`. The paper's two:

* ``base_rate`` (base-rate-matched): the association is broken while every base rate is kept;
* ``calibration_preserving``: each model keeps its own (confidence, correctness) pairs and only
  the matching of items across models is shuffled; with a shared difficulty axis it sits far
  above zero, so compare against it, not 0.

Per-pair p-values use ``(1 + #{null >= observed}) / (B + 1)`` and BH-FDR across pairs. The mean
over all pairs needs *joint* draws (all pairs recomputed from the same shuffled matrices), since
pairs sharing a model are dependent.

A per-pair draw never touches the items: for binary confidence a pair's 3x3 table of (dconf,
dperf) follows from four co-occurrence counts (computed for all pairs at once on bits packed 64
to a word), and a null draw is a random contingency table with fixed margins, drawn exactly by
a block decomposition into hypergeometric variates; real-valued confidence is drawn the same
way on the counts over its distinct dconf values. With numba installed (the ``fast`` extra) the
same decompositions run compiled (:mod:`metacog_metrics.pairwise._numba`), several times faster;
``METACOG_NO_NUMBA=1`` or ``engine="numpy"`` keeps NumPy. All permutation work is split into
fixed chunks with their own child seeds and run on a thread pool: results do not depend on the
number of threads.

The package: :mod:`~metacog_metrics.pairwise.nulls` (the registry, one module per null),
:mod:`~metacog_metrics.pairwise.tau` (tau-b from tables, the observed tables of every pair),
:mod:`~metacog_metrics.pairwise.samplers` and :mod:`~metacog_metrics.pairwise._numba` (the
NumPy and compiled kernels: random tables and shuffled matrices),
:mod:`~metacog_metrics.pairwise.pair_draws` and :mod:`~metacog_metrics.pairwise.joint_draws`
(what the nulls' samplers are made of), :mod:`~metacog_metrics.pairwise.pair` (the per-pair
tests), :mod:`~metacog_metrics.pairwise.joint` (the joint draws),
:mod:`~metacog_metrics.pairwise.masked` (pairwise-complete items),
:mod:`~metacog_metrics.pairwise.results` (the result types),
:mod:`~metacog_metrics.pairwise.analysis` (the whole analysis),
:mod:`~metacog_metrics.pairwise.engines` (compiled or NumPy) and
:mod:`~metacog_metrics.pairwise.common` (inputs, seeds, p-values, the thread pool).

>>> null_names()
('base_rate', 'calibration_preserving')
"""

from __future__ import annotations

from metacog_metrics.pairwise.analysis import pairwise_calibration
from metacog_metrics.pairwise.common import DEFAULT_DELTAS, ENGINES, PAIR_TYPES
from metacog_metrics.pairwise.joint import joint_null_draws
from metacog_metrics.pairwise.nulls import get_null, null_names
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
    "PAIR_TYPES",
    "DeltaCurve",
    "MeanTauNull",
    "PairTestResult",
    "PairTypeSummary",
    "PairwiseResult",
    "get_null",
    "joint_null_draws",
    "null_names",
    "pair_permutation_test",
    "pairwise_calibration",
    "pairwise_taus",
    "tau_b_from_table",
]


def __getattr__(name: str) -> object:
    # ``NULLS``: the registered nulls' names when asked (null_names(); kept for old callers)
    if name == "NULLS":
        return null_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
