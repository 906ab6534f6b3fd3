"""Threads of the analyses: pools that an interrupt empties, and stages run beside each other.

The permutation engines, the per-model bootstrap and the stratified null share their work out
on thread pools (numba kernels and NumPy release the GIL). A plain ``ThreadPoolExecutor`` runs
every task already queued before the interpreter may exit, so an interrupted analysis would go
on for as long as its queue lasts. :func:`map_threads` drops its queue when collecting raises;
pools started on a background stage's thread are registered with its :class:`Stages`, which
drops their queues when the analysis fails or is interrupted: it then waits only for the tasks
already running.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["Background", "Stages", "map_threads", "n_threads"]

T = TypeVar("T")
R = TypeVar("R")

_local = threading.local()  # .stages: the Stages of a background thread (its pools register)


def n_threads(workers: int | None, tasks: int) -> int:
    """Threads for ``tasks`` tasks: ``workers`` (None: the CPU count), at most one per task,
    at least one."""
    return max(1, min(tasks, workers if workers is not None else (os.cpu_count() or 1)))


def map_threads(
    fn: Callable[[T], R],
    items: Iterable[T],
    workers: int | None,
    on_result: Callable[[int], None] | None = None,
) -> list[R]:
    """``[fn(x) for x in items]`` on ``workers`` threads (None: one per CPU), in order.

    ``on_result(i)`` is called as the results are collected, in order (a progress bar). When
    collecting raises (a task's error, an interrupt, or :meth:`Stages.cancel`), the tasks not
    yet started are dropped before the error propagates. Inside :class:`Stages` the pool is
    registered with them while it runs.
    """
    items = list(items)
    threads = n_threads(workers, len(items))
    if threads == 1:
        out = []
        for i, x in enumerate(items):
            out.append(fn(x))
            if on_result is not None:
                on_result(i)
        return out
    stages: Stages | None = getattr(_local, "stages", None)
    pool = ThreadPoolExecutor(max_workers=threads)
    if stages is not None:
        stages._register(pool)
    try:
        try:
            futures = [pool.submit(fn, x) for x in items]
        except RuntimeError as exc:  # shut down (Stages.cancel) while the tasks were queued
            raise CancelledError("the analysis was cancelled") from exc
        out = []
        for i, fut in enumerate(futures):
            out.append(fut.result())
            if on_result is not None:
                on_result(i)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if stages is not None:
            stages._unregister(pool)
    pool.shutdown()
    return out


class Stages:
    """The threads of one analysis: stages run beside each other (:meth:`background`) and the
    pools they start (:func:`map_threads`).

    Used as a context manager on the thread that runs the analysis. When the block raises (an
    error, or an interrupt), every pool of its background stages drops its queued tasks, so
    they stop at the end of the tasks they are running instead of working through their
    queues; other analyses in the process are not touched. (A pool of the analysis's own
    thread needs no registering: the error passes through it and empties it.)
    """

    def __init__(self) -> None:
        self._pools: set[ThreadPoolExecutor] = set()
        self._lock = threading.Lock()

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if error is not None:
            self.cancel()

    def _register(self, pool: ThreadPoolExecutor) -> None:
        with self._lock:
            self._pools.add(pool)

    def _unregister(self, pool: ThreadPoolExecutor) -> None:
        with self._lock:
            self._pools.discard(pool)

    def cancel(self) -> int:
        """Drop the queued tasks of every running pool of these stages; return how many pools
        there were. Their callers raise ``CancelledError`` when they reach a dropped task."""
        with self._lock:
            pools = list(self._pools)
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
        return len(pools)

    def background(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Background:
        """Start ``fn(*args, **kwargs)`` on its own thread, its pools registered here."""
        return Background(self, fn, *args, **kwargs)


class Background:
    """``fn(*args, **kwargs)`` on a daemon thread of ``stages``, in a copy of the starting
    thread's context (its context variables, such as the executor of
    :func:`metacog_metrics.executor.executing_on`); :meth:`result` waits and returns its value
    (or raises what it raised). Made by :meth:`Stages.background`."""

    def __init__(self, stages: Stages, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            _local.stages = stages
            try:
                self._value = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the caller by result()
                self._error = exc

        name = getattr(fn, "__name__", "stage")
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(run,), name=f"metacog-{name}", daemon=True
        )
        self._thread.start()

    def result(self) -> Any:
        """The return value, once the thread has finished."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
