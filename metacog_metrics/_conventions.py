"""Conventions shared by every analysis: the random state and the tie tolerance.

* Random state: a function that draws takes ``rng`` (SciPy's convention): an int seed, a
  ``SeedSequence``, a ``Generator`` or None. Top-level runs (``analyze``, ``simulate``,
  ``power``) take an integer ``seed`` that they record in their outputs and derive every stream
  from, by name, so adding a group or a model does not change the others' draws.
* p-values are printed one way everywhere (:func:`format_p`): three significant digits, and
  ``p < 0.001`` below 0.001 (a permutation p-value's floor, 1/(draws + 1), is not a finding).
* Ties: a null draw within ``TIE_ULPS`` units in the last place of the observed value counts as
  equal to it (SciPy's ``permutation_test``), so a draw equal to the observed value up to
  floating-point rounding is counted on both sides. Values computed from data (a confidence
  difference, a leave-one-out mean) are rounded to ``TIE_DECIMALS`` decimals before they are
  compared (:func:`value_ties`): ``0.9 - 0.7`` and ``0.5 - 0.3`` are the same level, as their
  decimal forms say, and every real difference between such values is kept.
"""

from __future__ import annotations

import zlib

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "TIE_DECIMALS",
    "TIE_ULPS",
    "SeedLike",
    "child_sequence",
    "format_p",
    "seed_sequence",
    "tie_tolerance",
    "value_ties",
]

SeedLike = int | np.random.Generator | np.random.SeedSequence | None

#: A draw within this many ulps of the observed value is a tie (SciPy's permutation_test).
TIE_ULPS = 100
#: Values computed from data are compared after rounding to this many decimals.
TIE_DECIMALS = 12


def seed_sequence(rng: SeedLike) -> np.random.SeedSequence:
    """The ``SeedSequence`` of ``rng`` (a ``Generator`` gives one drawn from its stream)."""
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        # one bound draws from [0, 2**63)
        return np.random.SeedSequence(rng.integers(2**63, size=4).tolist())
    return np.random.SeedSequence(rng)


def child_sequence(seed: int | np.random.SeedSequence, *key: str) -> np.random.SeedSequence:
    """A stream that depends on ``seed`` and the names ``key`` only (not on what else runs)."""
    code = zlib.crc32("\x1f".join(key).encode())  # str.encode is UTF-8
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, code))
    return np.random.SeedSequence([int(seed), code])


def tie_tolerance(observed: ArrayLike) -> NDArray[np.float64]:
    """Half-width of the tie band around ``observed``: ``TIE_ULPS`` ulps of its magnitude."""
    return np.abs(np.asarray(observed, dtype=float)) * np.finfo(float).eps * TIE_ULPS


def value_ties(values: ArrayLike) -> NDArray[np.float64]:
    """``values`` rounded to ``TIE_DECIMALS`` decimals, so that decimal ties stay ties.

    Arithmetic on decimal data leaves last-bit noise (``0.93 - 0.9`` is not ``0.53 - 0.5`` in
    binary floating point); 12 decimals drop it and keep every real difference of values
    given to fewer decimals.
    """
    return np.round(np.asarray(values, dtype=float), TIE_DECIMALS)


def format_p(p: float | None) -> str:
    """A p-value as printed: ``p = 0.00599``, ``p < 0.001``, or ``p n/a`` when undefined.

    Example:
        >>> format_p(0.00599), format_p(0.000999), format_p(0.002), format_p(float("nan"))
        ('p = 0.00599', 'p < 0.001', 'p = 0.002', 'p n/a')
    """
    if p is None or not np.isfinite(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3g}"
