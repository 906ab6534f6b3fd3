"""The generative model's presets with the benchmark records' simulation profiles, and
``metacog simulate``.

:mod:`metacog_metrics.simulate` knows no benchmark; here each registered benchmark's
``simulation`` profile joins the preset, so the simulated harness models, ``metacog simulate``
and the record tables they give agree on how every benchmark's items look.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from metacog_metrics import (
    PRESETS,
    SIM_PROBES,
    SimulateResult,
    SimulationParams,
    at_least,
    build_options,
    check_options,
    documented,
    get_preset,
    integer,
    one_of,
    option,
    option_values,
    parameter_overrides,
    run_simulate,
)
from metacog_tasks.benchmarks import simulation_profiles

__all__ = ["SimulateOptions", "preset_params", "simulate_benchmarks"]


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


def _names(what: str, allowed: tuple[str, ...] | None = None) -> Any:
    """A check: a non-empty list of non-empty names (of ``allowed``, when given)."""

    def check(name: str, value: Any) -> tuple[str, ...]:
        names = (value,) if isinstance(value, str) else tuple(value)
        if not names or not all(isinstance(v, str) and v.strip() for v in names):
            raise ValueError(f"{name} must name one or more {what}, got {value!r}")
        bad = [v for v in names if allowed is not None and v not in allowed]
        if bad:
            raise ValueError(f"{name}: unknown {what} {bad}; choose from {', '.join(allowed)}")
        return names

    return check


def _weight(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return float(value)


@documented
@dataclasses.dataclass(frozen=True)
class SimulateOptions:
    """The settings of ``metacog simulate`` (:func:`simulate_benchmarks`), checked when built."""

    preset: str = option(
        "paper",
        check=one_of(tuple(PRESETS)),
        help=f"Generative-model preset, one of {', '.join(PRESETS)}.",
    )
    models: int = option(20, check=at_least(1), help="Number of models.")
    items_per_benchmark: int = option(
        500,
        check=at_least(1),
        help="Items per benchmark.",
        flags=("--items",),
        cli={"metavar": "ITEMS"},
    )
    benchmarks: tuple[str, ...] | None = option(
        None,
        check=lambda name, value: None if value is None else _names("benchmarks")(name, value),
        help="Benchmarks, comma-separated (default: every registered one, in order; another "
        "name gets the default profile).",
    )
    individuated: float | None = option(
        None,
        check=_weight,
        help="Weight of each model's own item residual in its confidence (the planted "
        "individuated signal, in [0, 1]; default: the preset's).",
    )
    probes: tuple[str, ...] = option(
        ("prospective",),
        check=_names("probes", SIM_PROBES),
        help=f"Probes to record, comma-separated: {', '.join(SIM_PROBES)}.",
    )
    seed: int = option(0, check=integer, help="Population seed.")
    overrides: Mapping[str, Any] | None = option(
        None,
        check=parameter_overrides,
        help="Other SimulationParams fields replacing the preset's.",
        on_cli=False,
    )

    def __post_init__(self) -> None:
        check_options(self)

    @classmethod
    def build(cls, options: SimulateOptions | None = None, /, **fields: Any) -> SimulateOptions:
        """``options`` (default: the defaults) with ``fields``; an unknown name is an error."""
        return build_options(cls, options, **fields)


def simulate_benchmarks(
    out: str | os.PathLike[str], options: SimulateOptions | None = None, /, **fields: Any
) -> SimulateResult:
    """``metacog simulate``: :func:`metacog_metrics.simulate.run_simulate` with every
    registered benchmark's profile (``benchmarks`` defaults to all of them, in order).

    Args:
        out: Output record table (``.parquet`` or ``.csv``).
        options: The settings (:class:`SimulateOptions`; default: its defaults).
        **fields: Fields of :class:`SimulateOptions` that replace those of ``options``.

    Raises:
        TypeError: On an unknown option.
        ValueError: On a bad option value (before anything is drawn) or output extension.
    """
    opts = SimulateOptions.build(options, **fields)
    return run_simulate(out, profiles=simulation_profiles(), **option_values(opts))
