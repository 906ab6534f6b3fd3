"""Benchmarks: loading, prompts, graders, shared by every harness adapter.

>>> from metacog_tasks.benchmarks import get_benchmark
>>> bench = get_benchmark("mmlu_pro")
>>> items = bench.load("bundled")
>>> bench.grade(items[0], bench.reference_response(items[0])).correct
1.0
"""

from __future__ import annotations

import importlib
from typing import Any

from metacog_tasks.benchmarks._data import DataFormatError, DataUnavailableError
from metacog_tasks.benchmarks._prompts import PROBE_TEMPLATES, PromptError
from metacog_tasks.benchmarks.base import PROBES, Benchmark, Grade, Item, ProbeKind

__all__ = [
    "BENCHMARK_NAMES",
    "PROBES",
    "PROBE_TEMPLATES",
    "Benchmark",
    "DataFormatError",
    "DataUnavailableError",
    "Grade",
    "Item",
    "ProbeKind",
    "PromptError",
    "UnknownBenchmarkError",
    "benchmark_class",
    "get_benchmark",
]

#: The six benchmarks of the paper, in its order.
BENCHMARK_NAMES: tuple[str, ...] = (
    "squad",
    "mmlu_pro",
    "legalbench",
    "mathbench",
    "omni_math",
    "scicode",
)

_CLASSES: dict[str, str] = {
    "squad": "metacog_tasks.benchmarks.squad:SQuAD",
    "mmlu_pro": "metacog_tasks.benchmarks.mmlu_pro:MMLUPro",
    "legalbench": "metacog_tasks.benchmarks.legalbench:LegalBench",
    "mathbench": "metacog_tasks.benchmarks.mathbench:MathBench",
    "omni_math": "metacog_tasks.benchmarks.omni_math:OmniMath",
    "scicode": "metacog_tasks.benchmarks.scicode:SciCode",
}


class UnknownBenchmarkError(ValueError, KeyError):
    """No benchmark has that name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def benchmark_class(name: str) -> type[Benchmark]:
    """The class registered under ``name``.

    Raises:
        UnknownBenchmarkError: ``name`` is not one of :data:`BENCHMARK_NAMES`.
    """
    key = str(name).strip().lower().replace("-", "_")
    if key not in _CLASSES:
        raise UnknownBenchmarkError(
            f"unknown benchmark {name!r}; known: {', '.join(BENCHMARK_NAMES)}"
        )
    module, cls = _CLASSES[key].split(":")
    return getattr(importlib.import_module(module), cls)


def get_benchmark(name: str, **options: Any) -> Benchmark:
    """Build a benchmark by name.

    Args:
        name: One of :data:`BENCHMARK_NAMES` (``-`` is read as ``_``).
        **options: Benchmark options: ``prompts=`` (a mapping or YAML/JSON file overriding
            templates) for all; SQuAD ``open_book``, ``version``; LegalBench ``tasks``;
            MathBench ``circular``, ``languages``; Omni-MATH ``judge``; SciCode ``h5_path``,
            ``timeout_s``, ``memory_mb``, ``with_background``.

    Returns:
        The benchmark.

    Raises:
        UnknownBenchmarkError: Unknown name (the message lists the known names).
        TypeError: An option the benchmark does not take.
    """
    return benchmark_class(name)(**options)
