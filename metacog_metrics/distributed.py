"""The permutation work on a Dask cluster, with the same results for a seed as on threads.

:func:`dask_executor` connects to a Dask scheduler (``metacog analyze --scheduler ADDRESS``,
``AnalysisOptions(scheduler=...)``), checks that its workers can draw what this process would,
and yields a :class:`DaskExecutor`: the per-pair tests and the joint draws of the block then
run on the cluster's workers. Dask does the scheduling; nothing here decides which worker runs
what.

The tasks are the ones the thread pool would run (each with its own child seed), and their
results come back in their order, so an analysis gives the same results on a cluster as on one
machine. The task list is sent to every worker once (``Client.scatter(..., broadcast=True)``:
the items x models arrays that all its tasks share cross the network once a worker, not once a
task); each Dask task then runs a run of consecutive tasks (:func:`_batches`: a few a worker
thread, so that Dask's milliseconds per task stay small beside the draws). Every worker needs
metacog-eval, NumPy and numba in the versions of the process that submits.

Dask is optional (the ``distributed`` extra) and imported only when a scheduler is given.

Example (not run here: it starts worker processes)::

    from dask.distributed import LocalCluster
    from metacog_metrics import analyze_records

    with LocalCluster(n_workers=4, threads_per_worker=1) as cluster:
        result = analyze_records(records, scheduler=cluster.scheduler_address)
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import itertools
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from metacog_metrics.executor import executing_on

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["DaskExecutor", "dask_executor", "scheduler_executor"]

R = TypeVar("R")

#: Packages whose versions decide the draws: a worker must run the same ones as the client.
_PACKAGES = ("metacog-eval", "numpy", "numba")
#: Seconds to wait for the scheduler, and for its first worker.
CONNECT_TIMEOUT = 30.0
#: Dask tasks per worker thread of the cluster: enough to balance the load, few enough that
#: the scheduler's cost per task stays small beside the draws.
BATCHES_PER_THREAD = 8


class _Tasks:
    """The task list as one object, pickled in one piece: arrays its tasks share (the
    items x models inputs) are written once."""

    def __init__(self, tasks: Sequence[Callable[[], Any]]) -> None:
        self.tasks = list(tasks)


def _run_tasks(tasks: _Tasks, start: int, stop: int) -> list[Any]:
    """Run tasks ``start`` to ``stop - 1`` of a list scattered to the worker, in turn."""
    return [task() for task in tasks.tasks[start:stop]]


def _batches(n_tasks: int, n_threads: int) -> list[tuple[int, int]]:
    """Contiguous runs of tasks, one Dask task each: about :data:`BATCHES_PER_THREAD` a
    worker thread (a Dask task costs milliseconds of scheduling; a permutation task may take
    less), never empty."""
    n = max(1, min(n_tasks, BATCHES_PER_THREAD * max(n_threads, 1)))
    bounds = [round(k * n_tasks / n) for k in range(n + 1)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _versions() -> dict[str, str | None]:
    """The versions of :data:`_PACKAGES` here (None: not installed)."""
    found: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


class DaskExecutor:
    """Runs permutation tasks on the workers of a Dask ``Client``
    (:class:`~metacog_metrics.executor.Executor`)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client.scheduler.address!r})"

    def run(
        self, tasks: Sequence[Callable[[], R]], on_result: Callable[[int], None] | None = None
    ) -> list[R]:
        """``[task() for task in tasks]`` on the cluster, in order; ``on_result(i)`` as task
        ``i`` finishes. When a task fails (or the caller is interrupted) the tasks not yet
        done are cancelled and the error propagates.

        Raises:
            TypeError: The tasks cannot be pickled (so cannot leave this process).
        """
        from distributed import as_completed

        if not tasks:
            return []
        client = self.client
        try:
            shared = client.scatter(_Tasks(tasks), broadcast=True, hash=False)
        except Exception as exc:  # pickling: a task that holds a lock, an open file ...
            raise TypeError(f"the permutation tasks cannot be sent to the Dask workers: {exc}") \
                from exc  # fmt: skip
        run_id = uuid.uuid4().hex
        batches = _batches(len(tasks), sum(client.nthreads().values()))
        futures = [
            client.submit(_run_tasks, shared, a, b, key=f"metacog-permutations-{run_id}-{a}")
            for a, b in batches
        ]
        where = {f.key: k for k, f in enumerate(futures)}
        results: list[Any] = [None] * len(tasks)
        try:
            for future in as_completed(futures, loop=client.loop):
                a, b = batches[where[future.key]]
                results[a:b] = future.result()  # a task's error is raised here
                if on_result is not None:
                    for i in range(a, b):
                        on_result(i)
        except BaseException:
            client.cancel(futures)
            raise
        finally:
            shared.release()
        return results


def _check_workers(client: Client, address: str) -> None:
    """That the cluster has a worker, and that every worker runs the client's versions."""
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
    except TimeoutError as exc:
        raise RuntimeError(
            f"the Dask scheduler at {address} has no workers (waited {CONNECT_TIMEOUT:g} s)"
        ) from exc
    here = _versions()
    differ = []
    for worker, theirs in sorted(client.run(_versions).items()):
        diff = [f"{k} {theirs.get(k)} (here {v})" for k, v in here.items() if theirs.get(k) != v]
        if diff:
            differ.append(f"{worker}: {', '.join(diff)}")
    if differ:
        raise RuntimeError(
            "Dask workers must run the versions of this process, or their draws would differ: "
            + "; ".join(differ)
        )


@contextlib.contextmanager
def dask_executor(scheduler: str | Client) -> Iterator[DaskExecutor]:
    """Run the permutation work of the block on a Dask cluster.

    Args:
        scheduler: The scheduler's address (``tcp://host:8786``; a connection is opened and
            closed here) or a connected ``distributed.Client`` (left open).

    Yields:
        The :class:`DaskExecutor` in use.

    Raises:
        ImportError: ``distributed`` is not installed (``pip install metacog-eval[distributed]``).
        OSError: The scheduler cannot be reached.
        RuntimeError: The cluster has no worker, or a worker runs other versions of
            metacog-eval, NumPy or numba.
    """
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError(
            "a Dask scheduler needs the 'distributed' package: pip install "
            "'metacog-eval[distributed]'"
        ) from exc
    with contextlib.ExitStack() as stack:
        if isinstance(scheduler, str):
            address = scheduler
            client = stack.enter_context(
                Client(address, set_as_default=False, timeout=CONNECT_TIMEOUT)
            )
        else:
            client, address = scheduler, scheduler.scheduler.address
        _check_workers(client, address)
        executor = DaskExecutor(client)
        with executing_on(executor):
            yield executor


def scheduler_executor(scheduler: str | Client | None) -> contextlib.AbstractContextManager[Any]:
    """:func:`dask_executor` of ``scheduler``, or nothing (threads) when it is None."""
    return contextlib.nullcontext() if scheduler is None else dask_executor(scheduler)
