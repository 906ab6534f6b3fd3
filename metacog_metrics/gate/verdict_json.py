"""The verdict as JSON (``--json``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from metacog_metrics.gate.decision import GateVerdict

__all__ = ["VERDICT_FORMAT", "verdict_json"]

#: ``format`` of the JSON verdict.
VERDICT_FORMAT = "metacog-gate-verdict"


def verdict_json(verdict: GateVerdict, *, extra: Mapping[str, Any] | None = None) -> str:
    """The verdict as JSON: ``format``, ``headline``, the verdict's fields, then ``extra``.

    Args:
        verdict: The gate's verdict.
        extra: More top-level keys (the inputs, versions).

    Returns:
        Strict JSON text (NaN written as null).
    """
    data = {
        "format": VERDICT_FORMAT,
        "format_version": 2,
        "headline": verdict.headline(),
        **verdict.to_dict(),
        **dict(extra or {}),
    }
    return json.dumps(data, indent=2, allow_nan=False) + "\n"
