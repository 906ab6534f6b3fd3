"""Thread pools that an error or interrupt empties, and stages run beside each other."""

from __future__ import annotations

import functools
import threading
import time
from concurrent.futures import CancelledError

import pytest

from metacog_metrics._threads import Stages, map_threads, n_threads


def test_map_threads_keeps_the_order_and_reports_each_result_in_order():
    seen = []
    out = map_threads(lambda x: x * x, range(20), 3, on_result=seen.append)
    assert out == [x * x for x in range(20)]
    assert seen == list(range(20))


def test_one_worker_runs_in_the_calling_thread():
    seen = []
    out = map_threads(lambda x: (x, threading.current_thread().name), "abc", 1, seen.append)
    assert out == [(x, threading.current_thread().name) for x in "abc"]
    assert seen == [0, 1, 2]


def test_thread_count_is_bounded_by_tasks_and_workers(monkeypatch):
    assert n_threads(8, 3) == 3 and n_threads(2, 10) == 2 and n_threads(4, 0) == 1
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert n_threads(None, 10) == 4 and n_threads(None, 3) == 3
    monkeypatch.setattr("os.cpu_count", lambda: None)  # unknown: one thread
    assert n_threads(None, 10) == 1


def test_map_threads_in_a_thread_outside_any_stages():
    out = []
    t = threading.Thread(target=lambda: out.append(map_threads(abs, [-1, -2, -3], 2)))
    t.start()
    t.join(10)
    assert out == [[1, 2, 3]]


def test_a_finished_pool_leaves_its_stages():
    with Stages() as stages:
        assert stages.background(map_threads, abs, [-1, -2, -3], 2).result() == [1, 2, 3]
        assert stages.cancel() == 0  # nothing left to cancel


def test_cancelled_while_queueing_is_a_cancellation(monkeypatch):
    """A pool shut down by a cancel while its tasks are submitted: CancelledError, as for a
    queued task that was dropped."""
    import concurrent.futures

    import metacog_metrics._threads as threads_module

    class ShutDownAfterOne(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            if getattr(self, "_submitted", 0):
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._submitted = 1
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(threads_module, "ThreadPoolExecutor", ShutDownAfterOne)
    with pytest.raises(CancelledError, match=r"^the analysis was cancelled$"):
        map_threads(abs, [-1, -2, -3], 2)


def test_background_stages_are_named_daemon_threads_with_their_arguments():
    def scoring(a, *, b):
        me = threading.current_thread()
        return a + b, me.name, me.daemon

    with Stages() as stages:
        assert stages.background(scoring, 1, b=2).result() == (3, "metacog-scoring", True)
        assert stages.background(lambda: 0).result() == 0
        nameless = functools.partial(scoring, 1)  # no __name__
        assert stages.background(nameless, b=2).result() == (3, "metacog-stage", True)


class _Blocking:
    """Tasks that count themselves and wait for ``release`` (the first ``hold`` of them)."""

    def __init__(self, hold: int) -> None:
        self.started = 0
        self.lock = threading.Lock()
        self.busy = threading.Semaphore(0)
        self.release = threading.Event()
        self.hold = hold

    def __call__(self, i: int) -> int:
        with self.lock:
            self.started += 1
        if i < self.hold:
            self.busy.release()
            self.release.wait(10)
        return i


def test_an_error_in_the_analysis_drops_the_queued_tasks_of_its_background_stages():
    tasks = _Blocking(hold=2)
    with pytest.raises(RuntimeError, match="main stage failed"), Stages() as stages:
        run = stages.background(map_threads, tasks, range(40), 2)
        for _ in range(2):  # both workers busy with tasks 0 and 1
            assert tasks.busy.acquire(timeout=10)
        raise RuntimeError("main stage failed")
    tasks.release.set()
    with pytest.raises(CancelledError):
        run.result()
    assert tasks.started == 2  # the 38 queued tasks never ran


def test_cancelling_one_analysis_leaves_another_alone():
    mine, theirs = _Blocking(hold=2), _Blocking(hold=2)
    other = Stages()
    other_run = other.background(map_threads, theirs, range(10), 2)
    for _ in range(2):
        assert theirs.busy.acquire(timeout=10)
    with Stages() as stages:
        run = stages.background(map_threads, mine, range(10), 2)
        for _ in range(2):
            assert mine.busy.acquire(timeout=10)
        start = time.perf_counter()
        assert stages.cancel() == 1
        assert time.perf_counter() - start < 5  # without waiting for the running tasks
    mine.release.set()
    theirs.release.set()
    with pytest.raises(CancelledError):
        run.result()
    assert other_run.result() == list(range(10)) and theirs.started == 10
    assert mine.started == 2


def test_a_task_error_reaches_the_caller_and_drops_the_rest():
    started = []
    release = threading.Event()

    def task(i):
        started.append(i)
        if i == 0:
            raise ValueError("task 0 failed")
        release.wait(10)  # the other worker holds task 1 until the error is raised
        return i

    start = time.perf_counter()
    with pytest.raises(ValueError, match="task 0 failed"):
        map_threads(task, range(200), 2)
    assert time.perf_counter() - start < 5  # raised at once, not after the running task 1
    release.set()
    time.sleep(0.3)  # time enough for the 197 queued tasks to run, were they not dropped
    assert len(started) <= 3  # 0, 1 and at most the one taken before the error was seen


def test_background_result_raises_what_the_stage_raised():
    with Stages() as stages:
        run = stages.background(int, "not a number")
        with pytest.raises(ValueError, match="invalid literal"):
            run.result()
        assert stages.background(sum, [1, 2, 3]).result() == 6
