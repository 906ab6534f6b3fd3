"""The permutation nulls of pairwise calibration, one module each, looked up by name.

A null is registered once with its name (the key used in results and ``summary.json``), the
label and colour every report uses, and a one-line description.
"""

from __future__ import annotations

import dataclasses

__all__ = ["NullSpec", "get_null", "null_names"]


@dataclasses.dataclass(frozen=True)
class NullSpec:
    """A registered permutation null.

    Attributes:
        name: Key in results, tables and ``summary.json`` (``base_rate``, ...).
        label: Name shown in reports (``base-rate-matched null``).
        colour: Hex colour of the null in every figure.
        description: What the null keeps and what it breaks, in one sentence.
    """

    name: str
    label: str
    colour: str
    description: str


_REGISTRY: dict[str, NullSpec] = {}


def _register(spec: NullSpec) -> NullSpec:
    if spec.name in _REGISTRY:
        raise ValueError(f"null {spec.name!r} is registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def null_names() -> tuple[str, ...]:
    """The registered nulls' names, in registration order."""
    return tuple(_REGISTRY)


def get_null(name: str) -> NullSpec:
    """The null registered as ``name``.

    Raises:
        ValueError: No null has that name (the message lists the known ones).
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown null {name!r}; known: {', '.join(_REGISTRY)}") from None


_register(
    NullSpec(
        name="base_rate",
        label="base-rate-matched null",
        colour="#7f7f7f",
        description="the association of dconf with dperf is broken while every base rate is kept",
    )
)
_register(
    NullSpec(
        name="calibration_preserving",
        label="calibration-preserving null",
        colour="#ff7f0e",
        description="each model keeps its own (confidence, correctness) pairs; the matching of "
        "items across models is shuffled",
    )
)
