"""Overhead of the SciCode sandbox against a plain subprocess running the same script.

Both run single-threaded BLAS (the sandbox sets it), so the difference is the boundary's cost
(bubblewrap namespaces, the new root, the seccomp filter, the cgroups, inputs by descriptor,
output through capped pipes, the wrapper shell). Target: under 150 ms of overhead per execution
on two cores.

Prints the median wall time of several runs of each, their difference and ratio, and the
overhead as a multiple of a plain ``python -c pass`` subprocess measured in the same run
(interleaved, so that machine load hits all three alike; on a shared machine the ratio is the
figure to compare across runs). Last, the caller's peak memory while a script prints 200 MB.
Usage: python bench/bench_sandbox.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from metacog_tasks.sandbox import run_python

SCRIPTS = {
    "empty": "pass",
    "numpy_import": "import numpy as np\nprint(np.arange(10).sum())",
    "numpy_scipy_work": (
        "import numpy as np\nfrom scipy.special import erfc\n"
        "x = np.linspace(0, 3, 200_000)\nprint(float(erfc(x).sum()))"
    ),
}
_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _python_pass() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, capture_output=True, env=_ENV)
    return time.perf_counter() - start


def _plain(code: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "main.py"
        path.write_text(code)
        start = time.perf_counter()
        cmd = [sys.executable, "-I", "-B", str(path)]
        subprocess.run(cmd, check=True, capture_output=True, env=_ENV)
        return time.perf_counter() - start


def _sandboxed(code: str) -> float:
    start = time.perf_counter()
    res = run_python(code, timeout_s=60)
    elapsed = time.perf_counter() - start
    if not res.ok:
        raise SystemExit(f"sandbox run failed: {res.stderr[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"cpus: {os.cpu_count()}, load: {os.getloadavg()[0]:.1f}, runs: {args.runs} (median)")
    print(
        f"{'script':<18} {'py -c pass':>10} {'plain (s)':>10} {'sandbox (s)':>12} "
        f"{'overhead (ms)':>14} {'ratio':>7} {'overhead/pass':>14}"
    )
    _sandboxed("pass")  # the one-time probe and seccomp filter build
    for name, code in SCRIPTS.items():
        base_t, plain_t, boxed_t = [], [], []
        for _ in range(args.runs):
            base_t.append(_python_pass())
            plain_t.append(_plain(code))
            boxed_t.append(_sandboxed(code))
        base = statistics.median(base_t)
        plain, boxed = statistics.median(plain_t), statistics.median(boxed_t)
        over = boxed - plain
        print(
            f"{name:<18} {base:>10.3f} {plain:>10.3f} {boxed:>12.3f} {1000 * over:>14.0f} "
            f"{boxed / plain:>7.2f} {over / base:>14.2f}"
        )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = run_python(
        "import os\nfor _ in range(200):\n    os.write(1, b'y' * 2**20)",
        timeout_s=120,
        file_size_mb=256,
    )
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"200 MB print: caller peak RSS {before / 1024:.1f} -> {after / 1024:.1f} MB, "
        f"{len(res.stdout)} bytes kept, {res.duration:.2f} s"
    )
    print(run_python("pass").isolation)


if __name__ == "__main__":
    main()
