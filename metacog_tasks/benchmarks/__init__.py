"""Benchmarks: loading, prompts, graders, shared by every harness adapter.

Each benchmark is one module of this package (``squad.py`` ...) with its pack in
``metacog_tasks/packs/<name>``; its class is the single record of the benchmark (see
:class:`Benchmark`), and the registry finds it (:func:`benchmark_classes`).

>>> from metacog_tasks.benchmarks import get_benchmark
>>> bench = get_benchmark("mmlu_pro")
>>> items = bench.load("bundled")
>>> bench.grade(items[0], bench.reference_response(items[0])).correct
1.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metacog_tasks.benchmarks import _registry
from metacog_tasks.benchmarks._data import DataFormatError, DataUnavailableError
from metacog_tasks.benchmarks._prompts import PROBE_TEMPLATES, PromptError
from metacog_tasks.benchmarks._registry import UnknownBenchmarkError
from metacog_tasks.benchmarks.base import (
    PROBES,
    Benchmark,
    Grade,
    Item,
    ProbeKind,
    SimWording,
    TaskOption,
)

if TYPE_CHECKING:
    from metacog_metrics import BenchmarkProfile

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
    "SimWording",
    "TaskOption",
    "UnknownBenchmarkError",
    "benchmark_class",
    "benchmark_classes",
    "get_benchmark",
    "rlmf_family",
    "simulation_profiles",
]


def __getattr__(name: str) -> Any:
    # BENCHMARK_NAMES: the registered benchmarks in order (the paper's six), found on first use.
    if name == "BENCHMARK_NAMES":
        return _registry.names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def benchmark_class(name: str) -> type[Benchmark]:
    """The class registered under ``name`` (``-`` is read as ``_``).

    >>> benchmark_class("mmlu-pro").title
    'MMLU-Pro'

    Raises:
        UnknownBenchmarkError: ``name`` is not one of ``BENCHMARK_NAMES``.
    """
    return _registry.lookup(name)


def benchmark_classes() -> tuple[type[Benchmark], ...]:
    """Every registered benchmark class, in ``order`` (the paper's).

    >>> [cls.name for cls in benchmark_classes()][:2]
    ['squad', 'mmlu_pro']
    """
    return _registry.benchmark_classes()


def get_benchmark(name: str, **options: Any) -> Benchmark:
    """Build a benchmark by name.

    Args:
        name: One of ``BENCHMARK_NAMES`` (``-`` is read as ``_``).
        **options: Benchmark options: ``prompts=`` (a mapping or YAML/JSON file overriding
            templates) for all, and each benchmark's own (its constructor's keywords; the
            ``task_options`` of its record are the ones the harness tasks name).

    Returns:
        The benchmark.

    Raises:
        UnknownBenchmarkError: Unknown name (the message lists the known names).
        TypeError: An option the benchmark does not take.

    Example:
        >>> bench = get_benchmark("squad", open_book=True)
        >>> item = bench.load("bundled", limit=1)[0]
        >>> "Passage:" in bench.solve_prompt(item)
        True
    """
    return benchmark_class(name)(**options)


def simulation_profiles() -> dict[str, BenchmarkProfile]:
    """Benchmark name -> the profile its items follow in the simulated population, in order.

    The statistics package knows no benchmark: pass these to
    :func:`metacog_metrics.simulate.get_preset` (``profiles=``).

    >>> simulation_profiles()["omni_math"].inline
    True
    """
    return {cls.name: cls.simulation for cls in benchmark_classes()}


def rlmf_family(name: str) -> str:
    """The RLMF family (verl's ``ability``) of a benchmark; the name itself if unregistered.

    >>> rlmf_family("omni_math"), rlmf_family("my_private_set")
    ('math', 'my_private_set')
    """
    try:
        return benchmark_class(name).rlmf_family
    except UnknownBenchmarkError:
        return name
