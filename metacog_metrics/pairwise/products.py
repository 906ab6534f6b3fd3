"""All pairs' contingency tables as matrix products of one-hot indicators.

With binary or levelled confidence, each model puts each item in one of ``K = 2 L``
categories (its confidence level, ``L`` levels over all models, and its 0/1 correctness).
For categories ``k`` and ``l`` the one-hot indicator matrices ``X_k``, ``X_l`` (items x
models) give ``G_kl = X_k^T X_l``: for every pair ``(a, b)`` at once, the items where ``a`` is
in ``k`` and ``b`` in ``l``. Each ``(k, l)`` falls in one cell of the pair's table of
(confidence difference, correctness difference), so the tables of all pairs are sums of
``K^2`` entries of these products, mapped to the cells by one more product: one BLAS call
for all categories and all pairs (or one per block of categories where memory asks),
(:func:`pair_tables`). A joint draw permutes each model's items once
and takes the same products (:func:`products`).

On CPUs the compiled popcount and lookup kernels are faster (``bench/bench_pairwise.py
--products`` measures both at 33 to 1,000 models), so the registry serves these draws only
where torch sees a CUDA device (``torch`` is an optional dependency, imported lazily).
Counts are exact: 0/1 indicators are exact in float32 (and TF32) and their sums are below
``2^24`` for fewer than 16.7 million items.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from typing import Any

import numpy as np
from numpy.typing import NDArray

from metacog_metrics._conventions import value_ties
from metacog_metrics.pairwise.joint_draws import JointDraw, JointInputs, JointSampler
from metacog_metrics.pairwise.tau import _tau_b_tables

__all__ = ["Categories", "categories", "pair_tables", "products", "torch_device"]

#: Most confidence levels (over all models) the products serve: ``K^2`` products a draw.
MAX_LEVELS = 12
#: Joint draws per task (fixed chunks: the same draws for a seed whatever runs them).
_DRAWS_PER_TASK = 20
#: Most float32 entries of one product (bounds the memory of a draw on the device).
_BLOCK_ELEMENTS = 1 << 26


@dataclasses.dataclass(frozen=True)
class Categories:
    """Each model's category of each item, and where each pair of categories falls.

    Attributes:
        level: ``(M, N)`` index of the confidence among the distinct values of all models.
        perf: ``(M, N)`` 0/1 correctness.
        n_levels: Distinct confidence values ``L``.
        row: ``(L, L)`` table row (index of the confidence difference among the distinct
            differences, ascending) of (A's level, B's level).
        n_rows: Distinct confidence differences.
    """

    level: NDArray[np.int64]
    perf: NDArray[np.int64]
    n_levels: int
    row: NDArray[np.int64]
    n_rows: int


def categories(conf: NDArray, perf: NDArray, max_levels: int = MAX_LEVELS) -> Categories | None:
    """:class:`Categories` of complete ``(items, models)`` arrays; None with more than
    ``max_levels`` distinct confidence values.

    >>> cat = categories(np.array([[0.0, 0.5], [1.0, 0.5]]), np.array([[1.0, 0.0], [0.0, 1.0]]))
    >>> cat.n_levels, cat.n_rows, cat.row.tolist()
    (3, 5, [[2, 1, 0], [3, 2, 1], [4, 3, 2]])
    """
    values, level = np.unique(conf.T, return_inverse=True)
    if values.size > max_levels:
        return None
    diffs = value_ties(values[:, None] - values[None, :])
    distinct, row = np.unique(diffs, return_inverse=True)
    return Categories(
        level=level.reshape(conf.T.shape).astype(np.int64),
        perf=np.rint(perf.T).astype(np.int64),
        n_levels=int(values.size),
        row=row.reshape(diffs.shape).astype(np.int64),
        n_rows=int(distinct.size),
    )


#: the device files of NVIDIA's and AMD's (ROCm) GPU drivers: on Linux, no CUDA device without
#: one of them
GPU_DRIVER_FILES = ("/dev/nvidiactl", "/dev/kfd")


def torch_device() -> Any | None:
    """The torch device the registered product draws run on: ``METACOG_TORCH_DEVICE`` if set
    (``"cpu"`` runs them on CPU tensors), else a CUDA device if torch sees one; None (the
    compiled or NumPy samplers draw) without torch, without either, or with
    ``METACOG_NO_TORCH`` set.

    On Linux without a GPU driver's device file (:data:`GPU_DRIVER_FILES`) torch is not
    imported to ask: importing it costs about 0.8 s, a quarter of a small analysis.
    """
    if os.environ.get("METACOG_NO_TORCH") or importlib.util.find_spec("torch") is None:
        return None
    if os.environ.get("METACOG_TORCH_DEVICE"):
        import torch

        return torch.device(os.environ["METACOG_TORCH_DEVICE"])
    if (
        "torch" not in sys.modules
        and sys.platform.startswith("linux")
        and not any(os.path.exists(f) for f in GPU_DRIVER_FILES)
    ):
        return None
    import torch

    return torch.device("cuda") if torch.cuda.is_available() else None


def _backend(device: Any) -> Any:
    """The array module of ``device``: NumPy for None, else torch."""
    if device is None:
        return np
    import torch

    return torch


def pair_tables(
    level: Any, perf: Any, cat: Categories, ia: NDArray, ib: NDArray, device: Any = None
) -> NDArray[np.int64]:
    """``(..., P, n_rows, 3)`` tables of the pairs ``(ia, ib)`` from ``(..., M, N)`` levels and
    correctness (NumPy arrays, or torch tensors on ``device``; leading axes: draws): rows the
    confidence difference ``A - B`` ascending, columns the correctness difference -1, 0, +1.

    >>> conf = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    >>> perf = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> cat = categories(conf, perf)
    >>> pair_tables(cat.level, cat.perf, cat, np.array([0]), np.array([1]))[0].tolist()
    [[1, 0, 0], [0, 0, 1], [0, 0, 1]]
    """
    xp = _backend(device)
    k_cats = 2 * cat.n_levels
    lead = tuple(level.shape[:-2])
    m, n_items = level.shape[-2:]
    code = (level * 2 + perf).reshape(-1, m, n_items)  # (B, M, N) category
    n_b = code.shape[0]
    if xp is np:
        ks = np.arange(k_cats)
        onehot = (code.transpose(0, 2, 1)[:, :, None, :] == ks[:, None]).astype(np.float32)
        ia_x, ib_x = ia.astype(np.intp), ib.astype(np.intp)
        cells = _cell_map(cat)
    else:
        ks = xp.arange(k_cats, device=device)
        onehot = (code.transpose(1, 2)[:, :, None, :] == ks[:, None]).to(xp.float32)
        ia_x = xp.as_tensor(ia, device=device)
        ib_x = xp.as_tensor(ib, device=device)
        cells = xp.as_tensor(_cell_map(cat), device=device)
    flat = onehot.reshape(n_b, n_items, k_cats * m)  # column k * M + model
    block = max(1, _BLOCK_ELEMENTS // (n_b * k_cats * m * m))  # categories a product
    counts = []  # (B, P, k1 - k0, K): items where A is in k, B in l
    for k0 in range(0, k_cats, block):
        k1 = min(k_cats, k0 + block)
        # one product: A in k0..k1 against B in every category, all pairs, all draws
        g = (flat[:, :, k0 * m : k1 * m].transpose(-1, -2) if xp is not np
             else flat[:, :, k0 * m : k1 * m].transpose(0, 2, 1)) @ flat  # fmt: skip
        g = g.reshape(n_b, k1 - k0, m, k_cats, m)
        g = g.permute(0, 2, 4, 1, 3) if xp is not np else g.transpose(0, 2, 4, 1, 3)
        counts.append(g[:, ia_x, ib_x])
    both = counts[0] if len(counts) == 1 else xp.concatenate(counts, 2)
    tables = both.reshape(n_b, ia.size, k_cats * k_cats) @ cells  # (B, P, rows * 3)
    tables = tables if xp is np else tables.cpu().numpy()
    return np.rint(tables).astype(np.int64).reshape(*lead, ia.size, cat.n_rows, 3)


def _cell_map(cat: Categories) -> NDArray[np.float32]:
    """``(K K, rows * 3)``: the table cell of each (A's category, B's category)."""
    k_cats = 2 * cat.n_levels
    k, j = np.divmod(np.arange(k_cats * k_cats), k_cats)
    cell = cat.row[k // 2, j // 2] * 3 + (k % 2 - j % 2 + 1)
    out = np.zeros((k_cats * k_cats, cat.n_rows * 3), dtype=np.float32)
    out[np.arange(k_cats * k_cats), cell] = 1.0
    return out


def products(split: bool, device: Any = "auto") -> JointSampler:
    """Joint draws from one-hot products (binary or levelled confidence, complete data):
    each draw permutes each model's items (``split``: its confidence levels and its
    correctness each by its own permutation, else together) and takes every pair's table
    from :func:`pair_tables`.

    Args:
        split: Confidence and correctness permuted each on its own.
        device: ``"auto"``: a CUDA device through torch (:func:`torch_device`), else the
            sampler does not bind; ``None``: NumPy; a torch device (``"cpu"`` in tests).
    """

    def bind(inputs: JointInputs) -> tuple[int, JointDraw] | None:
        if inputs.present is not None:
            return None
        dev = torch_device() if device == "auto" else device
        if device == "auto" and dev is None:
            return None
        cat = categories(inputs.conf, inputs.perf)
        if cat is None:
            return None
        ia, ib = inputs.ia, inputs.ib
        xp = _backend(dev)
        if xp is np:
            level, perf = cat.level, cat.perf
        else:
            level = xp.as_tensor(cat.level, device=dev)
            perf = xp.as_tensor(cat.perf, device=dev)

        k_m = 2 * cat.n_levels * level.shape[0]
        # draws a product (bounded memory: the products and the one-hot matrices)
        step = max(1, _BLOCK_ELEMENTS // max(k_m * k_m, k_m * level.shape[1]))

        def draw(b: int, ss: np.random.SeedSequence) -> NDArray:
            out = np.empty((b, ia.size))
            shape = (level.shape[0], level.shape[1])
            if xp is np:
                rng = np.random.default_rng(ss)

                def order(n: int) -> Any:
                    return np.argsort(rng.random((n, *shape)), axis=-1)

                def take(x: Any, o: Any) -> Any:
                    return np.take_along_axis(np.broadcast_to(x, o.shape), o, axis=-1)
            else:
                gen = xp.Generator(device=dev)
                gen.manual_seed(int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1)))

                def order(n: int) -> Any:
                    keys = xp.rand((n, *shape), generator=gen, device=dev)
                    return xp.argsort(keys, dim=-1)

                def take(x: Any, o: Any) -> Any:
                    return xp.gather(x.expand(o.shape), -1, o)

            for d in range(0, b, step):
                n = min(step, b - d)
                o = order(n)
                lv, pf = take(level, o), take(perf, order(n) if split else o)
                out[d : d + n] = _tau_b_tables(pair_tables(lv, pf, cat, ia, ib, dev))
            return out

        return _DRAWS_PER_TASK, draw

    return JointSampler("torch" if device is not None else "numpy", bind)
