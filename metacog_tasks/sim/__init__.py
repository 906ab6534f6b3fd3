"""The simulated model population as a harness-agnostic responder.

A :class:`SimResponder` is one model ``m01 .. mNN`` of the generative model in
:mod:`metacog_metrics.simulate`. It answers the prompts the benchmark layer builds (solve and
probe prompts, wrapped in any chat template) offline, right or wrong as its latent state says,
with probe rationales whose wording carries its uncertainty. The lm-eval model and the Inspect
provider wrap it, so both harnesses log identical records for the same model and seed.

>>> from metacog_tasks.sim import SimResponder
>>> SimResponder.models(3)
['m01', 'm02', 'm03']
"""

from __future__ import annotations

from metacog_tasks.sim._index import Entry, Match, PromptIndex, conversation_text, normalise
from metacog_tasks.sim._wording import numeric_reply, probe_reply, topic_of
from metacog_tasks.sim.presets import preset_params, simulate_benchmarks
from metacog_tasks.sim.responder import (
    FALLBACK_REPLY,
    UNKNOWN_LOGLIK,
    ResponderStats,
    SimResponder,
    build_index,
    simulate_text_records,
)

__all__ = [
    "FALLBACK_REPLY",
    "UNKNOWN_LOGLIK",
    "Entry",
    "Match",
    "PromptIndex",
    "ResponderStats",
    "SimResponder",
    "build_index",
    "conversation_text",
    "normalise",
    "numeric_reply",
    "preset_params",
    "probe_reply",
    "simulate_benchmarks",
    "simulate_text_records",
    "topic_of",
]
