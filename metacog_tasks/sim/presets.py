"""The generative model's presets with the benchmark records' simulation profiles.

:mod:`metacog_metrics.simulate` knows no benchmark; here each registered benchmark's
``simulation`` profile joins the preset, so the simulated harness models, ``metacog simulate``
and the record tables they give agree on how every benchmark's items look.
"""

from __future__ import annotations

import os
from typing import Any

from metacog_metrics import SimulateResult, SimulationParams, get_preset, run_simulate
from metacog_tasks.benchmarks import simulation_profiles

__all__ = ["preset_params", "simulate_benchmarks"]


def preset_params(preset: str = "paper", **overrides: Any) -> SimulationParams:
    """A preset of :data:`metacog_metrics.simulate.PRESETS` with every benchmark's profile.

    Args:
        preset: Preset name.
        **overrides: :class:`~metacog_metrics.simulate.SimulationParams` fields to replace.

    Raises:
        ValueError: Unknown preset or field.

    Example:
        >>> preset_params("paper").profile("mathbench").inline
        True
    """
    return get_preset(preset, profiles=simulation_profiles(), **overrides)


def simulate_benchmarks(out: str | os.PathLike[str], **options: Any) -> SimulateResult:
    """``metacog simulate``: :func:`metacog_metrics.simulate.run_simulate` with every
    registered benchmark's profile (``benchmarks`` defaults to all of them, in order).

    Args:
        out: Output record table (``.parquet`` or ``.csv``).
        **options: The other arguments of :func:`~metacog_metrics.simulate.run_simulate`.
    """
    return run_simulate(out, profiles=simulation_profiles(), **options)
