"""Where the permutation work runs: threads of this process, or an executor set for a block.

The permutation work of an analysis is a list of independent tasks: calls without arguments,
each drawing from its own child seed, whose results are assembled in order. An
:class:`Executor` runs such a list and returns the results in the order of the tasks, so the
results do not depend on where, or on how many workers, the tasks ran. Locally they run on a
thread pool (:class:`ThreadExecutor`); :func:`executing_on` sets another executor for a block
of code (a Dask cluster: :func:`metacog_metrics.distributed.dask_executor`), and the permutation
engines pick it up through :func:`current_executor`.

Example:
    >>> ex = ThreadExecutor(workers=2)
    >>> ex.run([lambda: 1, lambda: 2, lambda: 3])
    [1, 2, 3]
    >>> with executing_on(ex):
    ...     current_executor(workers=8) is ex
    True
    >>> current_executor(workers=8)
    ThreadExecutor(workers=8)
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

from metacog_metrics._threads import map_threads

__all__ = ["Executor", "ThreadExecutor", "current_executor", "executing_on"]

R = TypeVar("R")


class Executor(Protocol):
    """Runs independent tasks and returns their results in order."""

    def run(
        self, tasks: Sequence[Callable[[], R]], on_result: Callable[[int], None] | None = None
    ) -> list[R]:
        """``[task() for task in tasks]``; ``on_result(i)`` is called as task ``i``'s result
        arrives (a progress bar; in any order). When a task raises, the tasks not yet started
        are dropped and the error propagates."""
        ...


@dataclasses.dataclass(frozen=True)
class ThreadExecutor:
    """The tasks on ``workers`` threads of this process (None: one per CPU), in order
    (:func:`~metacog_metrics._threads.map_threads`)."""

    workers: int | None = None

    def run(
        self, tasks: Sequence[Callable[[], R]], on_result: Callable[[int], None] | None = None
    ) -> list[R]:
        """See :meth:`Executor.run`."""
        return map_threads(_call, tasks, self.workers, on_result=on_result)


def _call(task: Callable[[], R]) -> R:
    return task()


_current: contextvars.ContextVar[Executor | None] = contextvars.ContextVar(
    "metacog_executor", default=None
)


def current_executor(workers: int | None = None) -> Executor:
    """The executor set by the innermost :func:`executing_on` of this context, else threads
    (``workers`` of them; None: one per CPU)."""
    return _current.get() or ThreadExecutor(workers)


@contextlib.contextmanager
def executing_on(executor: Executor | None) -> Iterator[Executor | None]:
    """Run the permutation work of the block on ``executor`` (None: threads, as without it).

    The setting is one of this thread's context: the background stages of an analysis
    (:meth:`~metacog_metrics._threads.Stages.background`) inherit it, other threads do not.
    """
    token = _current.set(executor)
    try:
        yield executor
    finally:
        _current.reset(token)
