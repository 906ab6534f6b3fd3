"""A toy third null, whole in this one module: each model's confidence shuffled among the items
it answered, its correctness kept.

It registers no fast sampler: the per-pair tests and the joint draws draw it from these two
reference laws through the registry's generic path. The tests register it in a temporary
registry (``registry_scope``), so that no other test sees it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from metacog_metrics.pairwise.nulls import NullSpec


def pair_law(conf: NDArray, perf: NDArray, rng: np.random.Generator) -> tuple[NDArray, NDArray]:
    """One draw for a pair: each model's confidence permuted on its own, correctness kept."""
    conf = conf.copy()
    for m in range(conf.shape[1]):
        conf[:, m] = conf[rng.permutation(conf.shape[0]), m]
    return conf, perf


def joint_law(conf: NDArray, perf: NDArray, rng: np.random.Generator) -> tuple[NDArray, NDArray]:
    """One joint draw: each model's confidence permuted among the items it answered (where
    each value comes from), its correctness in place."""
    stay = np.broadcast_to(np.arange(conf.shape[0])[:, None], conf.shape)
    conf_from = stay.copy()
    for m in range(conf.shape[1]):
        own = np.flatnonzero(~np.isnan(conf[:, m]) & ~np.isnan(perf[:, m]))
        conf_from[own, m] = rng.permutation(own)
    return conf_from, stay.copy()


SPEC = NullSpec(
    name="confidence_shuffled",
    label="confidence-shuffled null",
    colour="#2ca02c",
    description="each model's confidence is shuffled among its items; its correctness stays",
    pair_law=pair_law,
    joint_law=joint_law,
    seed_streams=(4, 5),
)
