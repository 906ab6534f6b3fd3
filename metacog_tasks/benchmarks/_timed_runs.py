"""Grading steps under a wall-clock limit: one verdict whatever the harness's concurrency.

A wall-clock limit measures the machine as well as the work. lm-eval grades a task's items one
after another; Inspect grades its samples in worker threads at the same time. So the same
SciCode script or math-verify check can reach its limit in an Inspect run, starved by the other
samples' gradings, and finish in an lm-eval run: a model's step then read ``timeout`` (wrong) in
one harness only, and a SciCode gold run that timed out left its step ungraded
(``targets_unavailable``) in one harness only.

:func:`run_timed` settles it for the failures that cannot be the model's doing: such a run that
failed while other timed gradings of this process were in flight is run once more alone (no
other one starts until it ends), and that second run is the verdict. A run that failed alone is
the verdict at once, as in a serial harness; runs that succeed are never repeated. The callers
choose which failures qualify: any failure of a SciCode gold run (trusted reference code), a
sandbox that did not start. A model's own time limit is its verdict and is not retried: the
code is the policy's, and a run alone for each of its timeouts would let a policy that writes
endless loops hold every other grading of the process for a whole limit per answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import fasteners

__all__ = ["retries", "run_timed"]

R = TypeVar("R")

# Shared by every timed grading of the process; a retry takes it exclusively. Writers are
# preferred (fasteners' documented order), so a retry waits only for the runs already started.
_RUNS = fasteners.ReaderWriterLock()
_STATE = threading.Lock()
_active = 0  # runs in flight
_started = 0  # runs ever started (a change during a run means another one overlapped it)
_retried = 0


def retries() -> int:
    """How many timed-out runs :func:`run_timed` has run again alone in this process."""
    return _retried


def _shared_run(run: Callable[[], R]) -> tuple[R, bool]:
    """Run alongside other runs; also say whether any other run was in flight meanwhile."""
    global _active, _started
    with _RUNS.read_lock():
        with _STATE:
            _active += 1
            _started += 1
            first, alone = _started, _active == 1
        try:
            result = run()
        finally:
            with _STATE:
                _active -= 1
                alone = alone and _started == first
    return result, not alone


def run_timed(run: Callable[[], R], load_failure: Callable[[R], bool]) -> R:
    """Run a timed grading step; a time limit reached (or another failure the load can cause)
    beside other timed runs of this process is not a verdict: the step runs again alone, and
    that result is returned.

    Args:
        run: Does the work and returns its result (each call a fresh run). It must not call
            :func:`run_timed` itself.
        load_failure: Whether a result may be the load's doing: the run reached its time
            limit, or (for trusted reference code) failed at all.

    Returns:
        The result of the run that decides: the first one, or the retry run alone.
    """
    global _retried
    result, shared = _shared_run(run)
    if not (load_failure(result) and shared):
        return result
    with _RUNS.write_lock():
        with _STATE:
            _retried += 1
        return run()
