"""Base class of the frozen result objects returned by every analysis."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["Result", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Convert results, numpy and pandas values into plain JSON types.

    NaN and infinities become ``None`` so that the output is strict JSON.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "to_dict") and callable(value.to_dict):
        try:  # pandas objects
            return to_jsonable(value.to_dict(orient="records"))
        except TypeError:
            return to_jsonable(value.to_dict())
    return value


@dataclasses.dataclass(frozen=True)
class Result:
    """Frozen result with ``to_dict()``, modelled on SciPy's result objects."""

    def to_dict(self) -> dict[str, Any]:
        """Return the result as plain JSON types (NaN becomes ``None``)."""
        return to_jsonable(self)
