"""run_timed: a time limit reached beside other runs is retried alone; one reached alone is not."""

from __future__ import annotations

import threading

from metacog_tasks.benchmarks._timed_runs import retries, run_timed


def test_a_timeout_alone_is_the_verdict() -> None:
    calls = []

    def run() -> str:
        calls.append(1)
        return "timeout"

    before = retries()
    assert run_timed(run, lambda r: r == "timeout") == "timeout"
    assert len(calls) == 1 and retries() == before


def test_a_timeout_beside_another_run_is_run_again_alone() -> None:
    both_in = threading.Barrier(2, timeout=10)
    inside = 0
    lock = threading.Lock()
    seen: list[tuple[str, int]] = []  # (attempt, runs inside at that moment)

    def make(name: str):
        attempts = []

        def run() -> str:
            nonlocal inside
            with lock:
                inside += 1
            try:
                attempts.append(1)
                if len(attempts) == 1:
                    both_in.wait()  # the two first runs overlap for sure
                    return "timeout"
                with lock:
                    seen.append((name, inside))
                return "ok"
            finally:
                with lock:
                    inside -= 1

        return run

    out: dict[str, str] = {}
    before = retries()
    threads = [
        threading.Thread(target=lambda n=n: out.update({n: run_timed(make(n), "timeout".__eq__)}))
        for n in ("a", "b")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert out == {"a": "ok", "b": "ok"}
    assert retries() - before == 2
    assert sorted(seen) == [("a", 1), ("b", 1)]  # each retry ran with nothing else inside
