"""Overhead of the SciCode sandbox against a plain subprocess running the same script.

Both run single-threaded BLAS (the sandbox sets it), so the difference is the boundary's cost
(bubblewrap namespaces, the new root, the seccomp filter, inputs by descriptor, the wrapper
shell). Target: under 150 ms of overhead per execution on two cores.

Prints the median wall time of several runs of each, their difference and ratio (measured in
the same run, interleaved so that machine load hits both alike).
Usage: python bench/bench_sandbox.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
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


def _plain(code: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "main.py"
        path.write_text(code)
        start = time.perf_counter()
        env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        cmd = [sys.executable, "-I", "-B", str(path)]
        subprocess.run(cmd, check=True, capture_output=True, env=env)
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
    print(f"cpus: {os.cpu_count()}, runs: {args.runs} (median)")
    print(
        f"{'script':<18} {'plain (s)':>10} {'sandbox (s)':>12} {'overhead (ms)':>14} {'ratio':>7}"
    )
    _sandboxed("pass")  # the one-time probe and seccomp filter build
    for name, code in SCRIPTS.items():
        plain_t, boxed_t = [], []
        for _ in range(args.runs):
            plain_t.append(_plain(code))
            boxed_t.append(_sandboxed(code))
        plain, boxed = statistics.median(plain_t), statistics.median(boxed_t)
        over = 1000 * (boxed - plain)
        print(f"{name:<18} {plain:>10.3f} {boxed:>12.3f} {over:>14.0f} {boxed / plain:>7.2f}")
    print(run_python("pass").isolation)


if __name__ == "__main__":
    main()
