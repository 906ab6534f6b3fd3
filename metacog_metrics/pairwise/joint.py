"""Joint draws: every pair recomputed from one shuffle of all models (the null of the mean).

The null's joint samplers (:mod:`metacog_metrics.pairwise.nulls`) draw; this module picks the
sampler of the case (binary or real-valued confidence, complete or ragged data, compiled or
NumPy) and splits the draws into fixed chunks with their own child seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import seed_sequence
from metacog_metrics.pairwise import engines
from metacog_metrics.pairwise.common import (
    Engine,
    Null,
    SeedLike,
    _check,
    _check_engine,
    _execute,
    _pairs,
    _Plan,
)
from metacog_metrics.pairwise.joint_draws import JointInputs, JointSampler, reference_joint_sampler
from metacog_metrics.pairwise.nulls import NullSpec, get_null, headline_null

__all__ = ["joint_null_draws"]


def joint_null_draws(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    null: Null | None = None,
    n: int = 1000,
    rng: SeedLike = None,
    pairs: Any = None,
    progress: bool = False,
    workers: int | None = None,
    engine: Engine = "auto",
) -> NDArray[np.float64]:
    """Joint permutation draws of every pair's tau-b (for the null of the mean over pairs).

    Each draw shuffles every model's vectors once, as the null's joint law says (``base_rate``:
    confidence and correctness each on its own; ``calibration_preserving``: the model's item
    order, keeping its (conf, perf) pairs), and recomputes *all* pairs from that one draw, so
    the dependence between pairs that share a model is kept.

    Args:
        conf: ``(items, models)`` confidence.
        perf: ``(items, models)`` 0/1 correctness.
        null: A registered null's name (default: the headline null, ``base_rate``).
        n: Number of draws.
        rng: Seed (int), ``SeedSequence`` or ``Generator``; the draws are reproducible from it
            (SciPy's ``rng`` convention).
        pairs: ``(a, b)`` model indices (default all pairs).
        progress: Show a progress bar.
        workers: Threads (default: the CPU count); draws are made in fixed chunks with their
            own child seeds, so the result does not depend on it.
        engine: ``"auto"``, ``"numpy"`` or ``"numba"`` (as :func:`pair_permutation_test`):
            the compiled kernels draw when numba imports (other draws for the same seed, the
            same law).

    Returns:
        ``(n, pairs)`` tau-b of every pair in every draw.

    Raises:
        ValueError: On bad inputs or an unknown null.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> perf = (rng.random((200, 4)) < 0.6).astype(float)
        >>> conf = np.where(rng.random((200, 4)) < 0.8, perf, 1 - perf)
        >>> draws = joint_null_draws(conf, perf, n=500, rng=1, engine="numpy")
        >>> draws.shape
        (500, 6)
        >>> round(float(draws.mean(axis=1).mean()), 3), round(float(draws.mean(axis=1).std()), 3)
        (0.002, 0.038)
    """
    spec = get_null(headline_null() if null is None else null)
    _check_engine(engine)
    c, p, binary = _check(conf, perf)
    if c.ndim != 2:
        raise ValueError("joint_null_draws takes 2-D (items, models) arrays")
    ia, ib = _pairs(c.shape[1], pairs)
    inputs = joint_inputs(c, p, None, binary, ia, ib, engine)
    plan = _joint_plan(inputs, spec, int(n), rng)
    return _execute([plan], workers, progress)[0]


def joint_inputs(
    c: NDArray, p: NDArray, present: NDArray | None, binary: bool, ia: NDArray, ib: NDArray,
    engine: str,
) -> JointInputs:  # fmt: skip
    """The :class:`JointInputs` of checked arrays (``present`` None: complete data)."""
    return JointInputs(c, p, present, binary, ia, ib, engines.compiled_kernels(engine))


def _samplers(spec: NullSpec, inputs: JointInputs) -> list[JointSampler]:
    """The samplers to try, in order: the null's compiled ones for the case (when the kernels
    draw), its NumPy ones, then its reference law."""
    kind, data = inputs.case
    tried = (["numba"] if inputs.kernels is not None else []) + ["numpy"]
    found = [s for e in tried for s in spec.joint_samplers.get((kind, data, e), ())]
    return [*found, reference_joint_sampler(spec.joint_law)]


def _joint_plan(inputs: JointInputs, spec: NullSpec, n: int, seed: SeedLike) -> _Plan:
    """The joint draws of one null as tasks for :func:`_execute`: the first sampler of the
    case that binds these inputs draws them."""
    for sampler in _samplers(spec, inputs):
        bound = sampler.bind(inputs)
        if bound is not None:
            batch, draw = bound
            return _chunked_plan(spec.name, n, batch, seed, inputs.ia.size, draw, sampler.engine)
    raise RuntimeError("the reference sampler binds any input")  # pragma: no cover


def _chunked_plan(
    null: str, n: int, batch: int, seed: SeedLike, n_pairs: int,
    draw: Callable[[int, np.random.SeedSequence], NDArray], engine: str = "numpy",
) -> _Plan:  # fmt: skip
    """The :class:`_Plan` of ``n`` joint draws in fixed chunks of ``batch``, each from its own
    child seed, so the draws do not depend on the number of threads. ``draw(b, seed)`` makes
    ``(b, P)`` taus."""
    starts = list(range(0, n, batch))
    seeds = seed_sequence(seed).spawn(len(starts))
    sizes = [min(batch, n - s) for s in starts]

    def finish(parts: list[NDArray]) -> NDArray:
        # np.concatenate's values, with each chunk let go once copied: the peak is one null's
        # draws and a chunk, not twice the draws
        out = np.empty((sum(part.shape[0] for part in parts), n_pairs))
        row = 0
        for i, part in enumerate(parts):
            out[row : row + part.shape[0]] = part
            row += part.shape[0]
            parts[i] = None  # type: ignore[call-overload]
        return out

    return _Plan(
        f"joint {null}",
        [lambda b=b, ss=ss: draw(b, ss) for b, ss in zip(sizes, seeds)],
        [b * n_pairs for b in sizes],  # progress counts pair-draws
        finish,
        engine=engine,
    )
