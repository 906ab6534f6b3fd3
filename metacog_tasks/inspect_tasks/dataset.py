"""Benchmark items as an Inspect dataset: one sample per item, ``id = item.item_id``.

The task, the solver and the scorer each need the same :class:`~metacog_tasks.benchmarks.base.Item`
objects. They share them through :func:`load_benchmark_items`, a per-process cache keyed by the
(small, loggable) benchmark arguments, so that solvers and scorers can be re-created from a log's
plan (``inspect score``) without carrying the items in their parameters.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Mapping
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample

from metacog_tasks.benchmarks import DataUnavailableError
from metacog_tasks.benchmarks.base import Benchmark, Item

__all__ = [
    "BenchmarkItems",
    "benchmark_dataset",
    "item_sample",
    "load_benchmark_items",
]

#: Arguments Inspect passes to every task that are not benchmark options.
_INSPECT_TASK_ARGS = frozenset({"model"})


@dataclasses.dataclass(frozen=True)
class BenchmarkItems:
    """A loaded benchmark and its items, indexed by item id.

    Attributes:
        benchmark: The benchmark object (prompts and grading).
        items: Items in dataset order.
        by_id: The same items keyed by ``item_id``.
        source: Where the items came from (``hf``, ``bundled`` or the local path).
    """

    benchmark: Benchmark
    items: tuple[Item, ...]
    by_id: Mapping[str, Item]
    source: str

    def item(self, item_id: str | int) -> Item:
        """The item with this id.

        Raises:
            KeyError: No item has this id (the sample does not belong to this benchmark).
        """
        try:
            return self.by_id[str(item_id)]
        except KeyError:
            raise KeyError(
                f"{self.benchmark.name}: no item with id {item_id!r} in {self.source}"
            ) from None


def _options_key(options: Mapping[str, Any] | None) -> str:
    clean = {k: v for k, v in (options or {}).items() if k not in _INSPECT_TASK_ARGS}
    return json.dumps(clean, sort_keys=True, default=str)


def load_benchmark_items(
    benchmark: str,
    data: str | None = None,
    split: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> BenchmarkItems:
    """Load a benchmark's items once per process (cached on the arguments).

    Args:
        benchmark: Benchmark name (``squad``, ``mmlu_pro``, ...).
        data: ``None`` for the Hugging Face dataset, ``"bundled"`` for the mini pack, or a local
            file or folder in the dataset's own format.
        split: Dataset split (benchmark default when ``None``).
        options: Benchmark options passed to ``get_benchmark``.

    Returns:
        The benchmark and its items.

    Raises:
        ValueError: Duplicate item ids, no items, or a bad benchmark name or option.
    """
    if data is not None and data != "bundled":
        data = os.path.abspath(os.path.expanduser(str(data)))
    return _load_cached(benchmark, data, split, _options_key(options))


@functools.lru_cache(maxsize=32)
def _load_cached(benchmark: str, data: str | None, split: str | None, key: str) -> BenchmarkItems:
    from metacog_tasks.benchmarks import get_benchmark

    options = json.loads(key)
    if isinstance(options.get("judge"), str):  # Omni-MATH: an Inspect model as the judge
        from metacog_tasks.inspect_tasks.judge import inspect_judge

        options["judge"] = inspect_judge(options["judge"])
    try:
        bench = get_benchmark(benchmark, **options)
    except TypeError as exc:  # an unknown option reaches the benchmark's constructor
        raise ValueError(f"benchmark {benchmark!r}: bad option in {options}: {exc}") from exc
    try:
        items = bench.load(data, split=split)
    except DataUnavailableError as exc:
        raise DataUnavailableError(
            f"{exc}\nIn an Inspect task: -T data=bundled (the mini pack) or -T data=PATH."
        ) from exc
    source = "hf" if data is None else str(data)
    if not items:
        raise ValueError(f"benchmark {benchmark!r}: no items loaded from {source}")
    by_id: dict[str, Item] = {}
    for item in items:
        if item.item_id in by_id:
            raise ValueError(
                f"benchmark {benchmark!r}: duplicate item id {item.item_id!r} in {source}"
            )
        by_id[item.item_id] = item
    return BenchmarkItems(bench, tuple(items), by_id, source)


def _scalar_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in meta.items():
        finite_float = isinstance(value, float) and math.isfinite(value)
        if value is None or finite_float or isinstance(value, bool | int | str):
            out[str(key)] = value
    return out


def _target_text(target: Any) -> str | list[str]:
    if isinstance(target, str):
        return target
    if isinstance(target, list | tuple) and all(isinstance(t, str) for t in target):
        return list(target) if target else ""
    return json.dumps(target, default=str) if not isinstance(target, int | float) else str(target)


def item_sample(bench: Benchmark, item: Item) -> Sample:
    """The Inspect sample of one item.

    The input is the (first) solve prompt, so ``inspect view`` lists the real question; the
    metadata carries the benchmark, item kind, bare question and the item's scalar extras.

    Args:
        bench: The benchmark the item belongs to.
        item: The item.

    Returns:
        A sample with ``id = item.item_id``.
    """
    metadata = {
        "benchmark": item.benchmark,
        "item_kind": item.kind,
        "question": item.question,
        **{f"meta_{k}": v for k, v in _scalar_meta(item.meta).items()},
    }
    return Sample(
        id=item.item_id,
        input=bench.solve_prompts(item)[0],
        target=_target_text(item.target),
        metadata=metadata,
    )


def benchmark_dataset(loaded: BenchmarkItems) -> MemoryDataset:
    """All items of a loaded benchmark as an Inspect dataset, in dataset order."""
    samples = [item_sample(loaded.benchmark, item) for item in loaded.items]
    return MemoryDataset(samples, name=f"metacog_{loaded.benchmark.name}", location=loaded.source)
