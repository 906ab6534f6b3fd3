"""Grading completions through the benchmark layer, with items and verdicts cached."""

from __future__ import annotations

import math
from typing import Any

from metacog_tasks.benchmarks import Benchmark, Item, get_benchmark

__all__ = ["ItemGrader"]


class ItemGrader:
    """Grades answers with each benchmark's own grader (SciCode: in the sandbox).

    Items are loaded once per ``(benchmark, source)`` with the benchmark's loader; verdicts are
    cached (first in, first out) per ``(benchmark, source, item_id, answer)``.

    Args:
        options: Benchmark options per benchmark name (``{"scicode": {"timeout_s": 10}}``).
        cache_size: How many verdicts to keep.
    """

    def __init__(
        self, options: dict[str, dict[str, Any]] | None = None, cache_size: int = 65536
    ) -> None:
        self._options = dict(options or {})
        self._benchmarks: dict[str, Benchmark] = {}
        self._items: dict[tuple[str, str], dict[str, Item]] = {}
        self._cache: dict[tuple[str, str, str, str], float] = {}
        self._cache_size = cache_size

    def benchmark(self, name: str) -> Benchmark:
        """The benchmark called ``name`` (built once)."""
        if name not in self._benchmarks:
            self._benchmarks[name] = get_benchmark(name, **self._options.get(name, {}))
        return self._benchmarks[name]

    def item(self, benchmark: str, item_id: str, source: str | None) -> Item | None:
        """The item, or ``None`` when its benchmark, source or id is unknown."""
        key = (benchmark, source or "bundled")
        items = self._items.get(key)
        if items is not None:
            return items.get(str(item_id))
        if key not in self._items:
            try:
                items = self.benchmark(benchmark).load(key[1])
            except Exception:  # unknown benchmark, unreadable source: the row cannot be scored
                self._items[key] = {}
            else:
                self._items[key] = {it.item_id: it for it in items}
        return self._items[key].get(str(item_id))

    def correct(self, benchmark: Any, item_id: Any, source: Any, answer: str) -> float:
        """1.0 / 0.0 from the benchmark's grader, NaN when the row cannot be graded."""
        if not isinstance(benchmark, str) or item_id is None:
            return math.nan
        src = source if isinstance(source, str) and source else "bundled"
        key = (benchmark, src, str(item_id), answer)
        hit = self._cache.get(key)
        if hit is not None:  # first in, first out: no reordering on the hot path
            return hit
        item = self.item(benchmark, key[2], src)
        if item is None:
            return math.nan
        try:
            value = float(self._benchmarks[benchmark].grade(item, answer).correct)
        except Exception:  # a grader bug must not stop training: the row is unscorable
            value = math.nan
        self._cache[key] = value
        if len(self._cache) > self._cache_size:
            del self._cache[next(iter(self._cache))]
        return value
