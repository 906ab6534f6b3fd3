"""Numbers as the report writes them: fixed digits, p-values, percentages, "n/a" for gaps."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["ci_text", "fmt", "missing", "p_text", "pct"]


def missing(x: Any) -> bool:
    """Whether ``x`` is a gap: None, or a float that is NaN or infinite."""
    return x is None or (isinstance(x, float) and not math.isfinite(x))


def fmt(x: Any, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals, "n/a" for a gap."""
    return "n/a" if missing(x) else f"{x:.{digits}f}"


def p_text(x: Any) -> str:
    """A p-value: ``p = 0.0123`` (3 significant digits), ``p < 0.001``, ``p n/a``."""
    if missing(x):
        return "p n/a"
    return f"p = {x:.3g}" if x >= 0.001 else "p < 0.001"


def pct(x: Any, digits: int = 0) -> str:
    """A share as a percentage, "n/a" for a gap."""
    return "n/a" if missing(x) else f"{100 * x:.{digits}f}%"


def ci_text(pair: Any, digits: int = 3, percent: bool = False) -> str:
    """An item-bootstrap interval ``(low, high)`` in words."""
    lo, hi = [*list(pair or []), None, None][:2]
    if percent:
        return f"95% item bootstrap {pct(lo)} to {pct(hi)}"
    return f"95% item bootstrap {fmt(lo, digits)} to {fmt(hi, digits)}"
