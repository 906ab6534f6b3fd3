"""Grading completions through the benchmark layer, with items and verdicts cached.

Only final verdicts are cached (``ok``: the grader compared the answer). A failure on the
grader's side (an ungraded NaN, or an exception from the grader, possibly transient: a sandbox
run that failed to start) is graded again the next time; a source that could not be read is
read again after ``retry_s`` seconds. A machine with no sandbox boundary
for model code raises :class:`~metacog_tasks.sandbox.SandboxUnavailableError` instead of
turning every reward into ``None``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import numbers
import threading
import time
from typing import Any

from metacog_metrics import Result
from metacog_tasks.benchmarks import Benchmark, Item, UnknownBenchmarkError, get_benchmark
from metacog_tasks.sandbox import SandboxUnavailableError

__all__ = ["ItemGrader", "Verdict"]


@dataclasses.dataclass(frozen=True)
class Verdict(Result):
    """The grader's verdict on one answer.

    Attributes:
        correct: 1.0 / 0.0; NaN when there was nothing to compare with.
        status: ``ok``; ``grader_error`` (the grader raised: the answer counts wrong, 0);
            ``no_answer`` (not graded, 0); ``missing`` (no benchmark or item id given, NaN);
            ``bad_label`` (the benchmark or item id is malformed or unknown, NaN);
            ``ungraded`` (a failure on the grader's side: the item source cannot be read, or
            the benchmark's grader gave no verdict, NaN).
    """

    correct: float
    status: str


_MISSING = Verdict(math.nan, "missing")
_BAD_LABEL = Verdict(math.nan, "bad_label")
_UNGRADED = Verdict(math.nan, "ungraded")


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _missing(value: Any) -> bool:
    if value is None or type(value).__name__ == "NAType":  # pandas.NA
        return True
    return (isinstance(value, str) and not value) or (
        isinstance(value, float) and math.isnan(value)
    )


class ItemGrader:
    """Grades answers with each benchmark's own grader (SciCode: in the sandbox).

    Items are loaded once per ``(benchmark, source)`` with the benchmark's loader; final
    verdicts (status ``ok``) are cached (first in, first out) per ``(benchmark, source,
    item_id, answer)`` (a digest stands for an answer over 256 characters, so the cache's
    memory is bounded); failures, possibly transient, are not.
    Safe to share between threads (grading itself runs outside the lock).

    Args:
        options: Benchmark options per benchmark name (``{"scicode": {"timeout_s": 10}}``).
        cache_size: How many verdicts to keep.
        retry_s: Seconds before a source that could not be read is read again (a transient
            failure is not kept; a lasting one is not re-read for every answer).
    """

    def __init__(
        self,
        options: dict[str, dict[str, Any]] | None = None,
        cache_size: int = 65536,
        retry_s: float = 30.0,
    ) -> None:
        self._options = dict(options or {})
        self._benchmarks: dict[str, Benchmark] = {}
        self._items: dict[tuple[str, str], dict[str, Item]] = {}
        self._unreadable: dict[tuple[str, str], float] = {}  # when each last failed to load
        self._retry_s = float(retry_s)
        self._cache: dict[tuple[str, str, str, str | bytes], tuple[Verdict, str | None]] = {}
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def benchmark(self, name: str) -> Benchmark:
        """The benchmark called ``name`` (built once).

        Raises:
            UnknownBenchmarkError: No benchmark has that name.
        """
        bench = self._benchmarks.get(name)
        if bench is None:
            bench = get_benchmark(name, **self._options.get(name, {}))
            with self._lock:
                bench = self._benchmarks.setdefault(name, bench)
        return bench

    def _source_items(self, benchmark: str, source: str) -> dict[str, Item] | None:
        """The items of a source by id; ``None`` when it cannot be read."""
        key = (benchmark, source)
        items = self._items.get(key)
        if items is not None:
            return items
        failed = self._unreadable.get(key)
        if failed is not None and time.monotonic() - failed < self._retry_s:
            return None
        try:
            items = {it.item_id: it for it in self.benchmark(benchmark).load(source)}
        except UnknownBenchmarkError:
            raise
        except Exception:  # an unreadable source: a failure on the grader's side, maybe passing
            with self._lock:
                self._unreadable[key] = time.monotonic()
            return None
        with self._lock:
            self._unreadable.pop(key, None)
            return self._items.setdefault(key, items)

    def item(self, benchmark: str, item_id: str, source: str | None) -> Item | None:
        """The item, or ``None`` when its benchmark, source or id is unknown."""
        try:
            items = self._source_items(benchmark, source or "bundled")
        except Exception:
            return None
        return None if items is None else items.get(str(item_id))

    def verdict(self, benchmark: Any, item_id: Any, source: Any, answer: str) -> Verdict:
        """The grader's verdict on ``answer`` for the item (see :class:`Verdict`).

        Raises:
            SandboxUnavailableError: The benchmark runs model code and this machine has no
                sandbox boundary (nothing else raises).
        """
        return self.extract(benchmark, item_id, source, answer)[0]

    def extract(
        self, benchmark: Any, item_id: Any, source: Any, answer: str
    ) -> tuple[Verdict, str | None]:
        """The verdict and the answer the benchmark's grader extracted (its normal form: the
        option letter, the SQuAD span, the boxed expression, the code).

        Raises:
            SandboxUnavailableError: As :meth:`verdict`.
        """
        if not (type(benchmark) is str and type(item_id) is str and benchmark and item_id):
            if _missing(benchmark) or _missing(item_id):
                return _MISSING, None
            if not isinstance(benchmark, str) or isinstance(item_id, bool):
                return _BAD_LABEL, None
            if not isinstance(item_id, (str, numbers.Integral)):
                return _BAD_LABEL, None
        if not (source is None or isinstance(source, str)):
            return _BAD_LABEL, None
        src = source or "bundled"
        answer = str(answer)
        # short answers are their own key; long ones are keyed by a digest (bounded memory)
        key = (benchmark, src, str(item_id), answer if len(answer) <= 256 else _digest(answer))
        hit = self._cache.get(key)
        if hit is not None:  # first in, first out: no reordering on the hot path
            return hit
        try:
            items = self._source_items(benchmark, src)
        except Exception:  # no such benchmark
            return _BAD_LABEL, None
        if items is None:
            return _UNGRADED, None
        item = items.get(key[2])
        if item is None:
            return _BAD_LABEL, None
        extracted = None
        try:
            grade = self._benchmarks[benchmark].grade(item, answer)
            value = float(grade.correct)
            extracted = grade.extracted if isinstance(grade.extracted, str) else None
        except SandboxUnavailableError:
            raise  # no boundary on this machine: every such reward would be None, so say so
        except Exception:  # the answer made the grader fail: it cannot be compared, so wrong
            out = Verdict(0.0, "grader_error")
        else:
            if math.isnan(value):
                out = Verdict(math.nan, "ungraded")
            else:
                out = Verdict(1.0 if value == 1.0 else 0.0, "ok")
        if out.status != "ok":  # a failure (perhaps transient, as a sandbox run that did not
            return out, extracted  # start) is graded again next time, never cached
        with self._lock:
            self._cache[key] = (out, extracted)
            while len(self._cache) > self._cache_size:
                del self._cache[next(iter(self._cache))]
        return out, extracted

    def correct(self, benchmark: Any, item_id: Any, source: Any, answer: str) -> float:
        """1.0 / 0.0 from the benchmark's grader (0 when it raised), NaN when the row cannot
        be graded (see :meth:`verdict`)."""
        return self.verdict(benchmark, item_id, source, answer).correct
