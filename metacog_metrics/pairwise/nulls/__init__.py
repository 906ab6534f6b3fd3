"""The permutation nulls of pairwise calibration, one module each, looked up by name.

A null is one module that registers a :class:`NullSpec`: its name (the key used in results
and ``summary.json``), the label and colour every report uses, a one-line description, its
law as two short reference shuffles (one draw for a pair, one joint draw of all models), and
the fast samplers that draw from that law case by case (binary or real-valued confidence,
complete or ragged data, per pair or joint, NumPy or compiled). The per-pair tests, the joint
draws and the reports loop over :func:`null_names` and take what they need from
:func:`get_null`; a case without a fast sampler is drawn from the reference law, and a contract
test holds every fast sampler to it.

>>> [get_null(name).label for name in null_names()]
['base-rate-matched null', 'calibration-preserving null']
>>> get_null("base_rate").colour, get_null("base_rate").short_label
('#7f7f7f', 'base-rate')
"""

from __future__ import annotations

from metacog_metrics.pairwise.joint_draws import JointSampler

# The nulls of the paper, registered in this order (the order of every result, table and
# report): each module registers itself.
from metacog_metrics.pairwise.nulls import base_rate, calibration_preserving  # noqa: F401
from metacog_metrics.pairwise.nulls._registry import (
    JointLaw,
    Law,
    NullSpec,
    get_null,
    headline_null,
    null_names,
    register,
    registry_scope,
)
from metacog_metrics.pairwise.pair_draws import PairSampler

__all__ = [
    "JointLaw",
    "JointSampler",
    "Law",
    "NullSpec",
    "PairSampler",
    "get_null",
    "headline_null",
    "null_names",
    "register",
    "registry_scope",
]
