"""How the report names and colours a null: from the null registry, never its own table."""

from __future__ import annotations

from metacog_metrics import private_signal
from metacog_metrics.pairwise.nulls import get_null

__all__ = ["PRIVATE_SIGNAL", "null_colour", "null_label"]

#: Key of the private-signal test's null (``summary["results"][...]["pairwise"]["nulls"]``).
PRIVATE_SIGNAL = "private_signal"


def _style(name: str) -> tuple[str, str]:
    # The private-signal test's stratified null is a test of its own, not a pairwise null of
    # the registry: its label and colour live beside its code.
    if name == PRIVATE_SIGNAL:
        return private_signal.LABEL, private_signal.COLOUR
    spec = get_null(name)
    return spec.label, spec.colour


def null_label(name: str) -> str:
    """The null's label in tables and legends (``base-rate-matched null``)."""
    return _style(name)[0]


def null_colour(name: str) -> str:
    """The null's colour in every figure."""
    return _style(name)[1]
