"""How the report names and colours a null: from the null registry, never its own table."""

from __future__ import annotations

from metacog_metrics.pairwise.nulls import get_null, null_names

__all__ = ["PRIVATE_SIGNAL", "null_colour", "null_label"]

#: Key of the private-signal test's null (``summary["results"][...]["pairwise"]["nulls"]``).
PRIVATE_SIGNAL = "private_signal"
# The private-signal test's stratified null is not in the registry of pairwise nulls yet; until
# it is, its label and colour are kept here (the registry's entry wins as soon as there is one).
_UNREGISTERED = {PRIVATE_SIGNAL: ("private-signal test null", "#2ca02c")}


def _style(name: str) -> tuple[str, str]:
    if name in _UNREGISTERED and name not in null_names():
        return _UNREGISTERED[name]
    spec = get_null(name)
    return spec.label, spec.colour


def null_label(name: str) -> str:
    """The null's label in tables and legends (``base-rate-matched null``)."""
    return _style(name)[0]


def null_colour(name: str) -> str:
    """The null's colour in every figure."""
    return _style(name)[1]
