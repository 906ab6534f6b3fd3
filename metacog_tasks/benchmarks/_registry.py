"""The benchmark registry: every public module of this package that defines a benchmark.

A benchmark is one module named after it that defines one concrete :class:`Benchmark` subclass
(see :class:`~metacog_tasks.benchmarks.base.Benchmark` for the record attributes it sets). The
registry imports the package's public modules once, on first use, and lists the benchmarks in
their record's ``order``. Nothing else keeps a list of benchmarks.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import threading
from types import ModuleType

from metacog_tasks.benchmarks.base import Benchmark

__all__ = ["UnknownBenchmarkError", "benchmark_classes", "lookup", "names"]

#: Public modules of the package that are not benchmarks.
_NOT_BENCHMARKS = frozenset({"base"})
#: Record attributes every benchmark must set (the others have defaults on the base class).
_REQUIRED = (
    "name",
    "title",
    "summary",
    "dataset",
    "order",
    "simulation",
    "wording",
    "rlmf_family",
)

_lock = threading.RLock()
_found: dict[str, type[Benchmark]] | None = None
_broken: dict[str, ImportError] = {}
_scanning = False


class UnknownBenchmarkError(ValueError, KeyError):
    """No benchmark has that name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def _benchmark_of(module: ModuleType) -> type[Benchmark] | None:
    """The one concrete benchmark class a module defines (None: not a benchmark module)."""
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Benchmark)
        and obj.__module__ == module.__name__
        and not inspect.isabstract(obj)
    ]
    if len(classes) > 1:
        raise TypeError(
            f"{module.__name__}: a benchmark module defines one Benchmark subclass, found "
            f"{', '.join(c.__name__ for c in classes)}"
        )
    if not classes:
        return None
    cls = classes[0]
    short = module.__name__.rsplit(".", 1)[-1]
    missing = [attr for attr in _REQUIRED if not hasattr(cls, attr)]
    if missing:
        raise TypeError(f"{module.__name__}.{cls.__name__}: record attribute(s) {missing} unset")
    if cls.name != short:
        raise TypeError(
            f"{module.__name__}.{cls.__name__}: name {cls.name!r} must be the module's, {short!r}"
        )
    return cls


def _scan() -> dict[str, type[Benchmark]]:
    global _found, _scanning
    with _lock:
        if _found is not None:
            return _found
        if _scanning:  # a benchmark module asked for the registry while being imported
            raise RuntimeError("the benchmark registry was used while it was being built")
        _scanning = True
        try:
            package = importlib.import_module(__package__ or "metacog_tasks.benchmarks")
            found: list[type[Benchmark]] = []
            for info in pkgutil.iter_modules(package.__path__):
                if info.name.startswith("_") or info.name in _NOT_BENCHMARKS:
                    continue
                try:
                    module = importlib.import_module(f"{package.__name__}.{info.name}")
                except ImportError as exc:  # a missing optional dependency: named on lookup
                    _broken[info.name] = exc
                    continue
                cls = _benchmark_of(module)
                if cls is not None:
                    found.append(cls)
            orders = [cls.order for cls in found]
            if len(set(orders)) != len(orders):
                raise TypeError(f"benchmarks share an order: {sorted(orders)}")
            _found = {cls.name: cls for cls in sorted(found, key=lambda c: c.order)}
        finally:
            _scanning = False
        return _found


def names() -> tuple[str, ...]:
    """Names of the registered benchmarks, in order."""
    return tuple(_scan())


def benchmark_classes() -> tuple[type[Benchmark], ...]:
    """The registered benchmark classes, in order."""
    return tuple(_scan().values())


def lookup(name: str) -> type[Benchmark]:
    """The class registered under ``name`` (``-`` read as ``_``, any case).

    Raises:
        UnknownBenchmarkError: No benchmark has that name (the message lists the known ones).
        ImportError: The benchmark's module exists but cannot be imported in this install.
    """
    key = str(name).strip().lower().replace("-", "_")
    found = _scan()
    if key in found:
        return found[key]
    if key in _broken:
        exc = _broken[key]
        raise ImportError(f"benchmark {key!r} cannot be imported here: {exc}") from exc
    raise UnknownBenchmarkError(f"unknown benchmark {name!r}; known: {', '.join(found)}")
