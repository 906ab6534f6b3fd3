"""What grading one SciCode output costs the caller, on hostile outputs of every kind.

Each kind is an ``outputs.json`` a model's code could leave behind (hash-colliding integer
sets, sparse matrices whose ``dia``/``dok`` form or shape would expand, deep nesting, huge
integers, huge arrays, millions of containers, structural forgeries) and, for scale, the
largest legitimate output of the validation split (step 7.1: two 800 x 800 arrays). For each,
a fresh interpreter builds the text, then times the caller's part of grading,
``SciCode._compare`` (bounded decoding, the structure check, the test case's own check), and
reads the caller's peak resident memory during it above its memory just before (the text, the
run's own output, is already there). Target: under 2 s and under 300 MB for every kind. Beside
the time, as a baseline taken in the same process, the time of a bare ``json.loads`` of the same
text (no bounds; on a deep text it fails at once).

The peak is the kernel's high-water mark (``VmHWM``), reset before the measurement through
``/proc/self/clear_refs``; where that is not writable the figure falls back to ``ru_maxrss``
and can only read high. Timings on a loaded machine are inflated: medians of ``--runs``.
Usage: python bench/bench_grading.py [--runs 3] [--kinds name,name]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

# The child: build one kind's text, measure _compare on it, print one JSON line.
_CHILD = r"""
import base64, gc, json, resource, sys, time
import numpy as np
from metacog_tasks.benchmarks.base import Item
from metacog_tasks.benchmarks.scicode import SciCode

KIND = sys.argv[1]
P = 2**61 - 1  # integers that are multiples of it all hash to 0


def arr(a):
    a = np.ascontiguousarray(a)
    return {"__ndarray__": {"dtype": a.dtype.str, "shape": list(a.shape),
                            "b64": base64.b64encode(a.tobytes()).decode("ascii")}}


def entries(values):
    return json.dumps([{"__tuple__": ["ok", v]} for v in values])


def coords(fmt, shape, n):
    idx = np.arange(n, dtype="<i8")
    return {"__sparse__": {"format": fmt, "shape": list(shape), "row": arr(idx % shape[0]),
                           "col": arr(idx % shape[1]), "data": arr(np.ones(n))}}


SCALAR = ["assert np.allclose(f(x), target)"] * 3
TARGETS = [0.5, 0.25, 1.0]
PAIR_CHECK = ["assert np.allclose(f(x)[0], target[0]) and np.allclose(f(x)[1], target[1])"]


def build():
    if KIND == "colliding int sets (16 x 1024)":
        sets = [{"__set__": [P * (k + 1 + 1024 * j) for k in range(1024)]} for j in range(16)]
        return SCALAR[:1], TARGETS[:1], entries([sets])  # at the limits: decoded
    if KIND == "colliding int set (1M)":
        return SCALAR, TARGETS, entries([{"__set__": [P * (k + 1) for k in range(1_000_000)]}] * 3)
    if KIND == "dia blow-up, old dense form":
        dense = {"__sparse__": {"format": "dia", "dense": arr(np.ones((1, 8000)))}}
        return SCALAR, TARGETS, entries([dense] * 3)
    if KIND == "dia of 1 x 2**24 (coordinates)":
        return SCALAR, TARGETS, entries([coords("dia", (1, 2**24), 2**19)] * 3)
    if KIND == "csr of 4M entries":
        return SCALAR[:1], TARGETS[:1], entries([coords("csr", (2048, 2048), 4_000_000)])
    if KIND == "sparse shape past the text":
        return SCALAR, TARGETS, entries([coords("csr", (10**6, 10**6), 1)] * 3)
    if KIND == "deep nesting (100k)":
        return SCALAR, TARGETS, "[" * 100_000 + "]" * 100_000
    if KIND == "deep nesting at the limit (64)":
        return SCALAR, TARGETS, entries(["x"] * 2)[:-1] + ", " + "[" * 62 + "]" * 62 + "]"
    if KIND == "huge integer (10M digits)":
        return SCALAR, TARGETS, "[" + "9" * 10_000_000 + "]"
    if KIND == "300-digit integers (400k)":
        big = int("9" * 300)
        return SCALAR, TARGETS, entries([[big] * 133_000] * 3)
    if KIND == "huge array at the read cap":
        return SCALAR[:1], TARGETS[:1], entries([arr(np.ones(12_500_000))])
    if KIND == "array claiming 10**10 elements":
        spec = {"__ndarray__": {"dtype": "<f8", "shape": [10**5, 10**5], "b64": "AAAAAAAAAAA="}}
        return SCALAR, TARGETS, entries([spec] * 3)
    if KIND == "2M floats in lists":
        return SCALAR, TARGETS, entries([[1.5] * 660_000] * 3)
    if KIND == "200k tagged floats":
        return SCALAR, TARGETS, entries([[{"__float__": "nan"}] * 66_000] * 3)
    if KIND == "millions of tiny lists":
        return SCALAR, TARGETS, "[" + "[]," * 3_000_000 + "[]]"
    if KIND == "long string (120 MB)":
        return SCALAR[:1], TARGETS[:1], entries([{"__repr__": "x" * 120_000_000}])
    if KIND == "column that broadcasts (20000, 1)":
        return SCALAR[:1], [np.ones(20_000)], entries([arr(np.zeros((20_000, 1)))])
    if KIND == "extra part of empty arrays":
        e = arr(np.zeros((0, 1, 1)))
        return PAIR_CHECK, [[np.ones((28, 3)), [(0, 1)] * 28]], entries([[e, e, e]])
    if KIND == "dict of empty arrays":
        e = arr(np.zeros((0, 1, 1)))
        forged = {"__dict__": [[0, e], [1, e]]}
        return PAIR_CHECK, [[np.ones((28, 3)), [(0, 1)] * 28]], entries([forged])
    if KIND == "legit: two 800 x 800 arrays (7.1)":
        rng = np.random.default_rng(0)
        pair = (rng.normal(size=(800, 800)), rng.normal(size=(800, 800)))
        out = {"__tuple__": [arr(pair[0]), arr(pair[1])]}
        return SCALAR[:1], [pair], entries([out])
    raise SystemExit(f"unknown kind {KIND!r}")


def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


cases, targets, raw = build()
item = Item("scicode", "990.1", "q", None, "code",
            meta={"test_cases": cases, "dependencies": "import numpy as np"})
bench = SciCode()
bench._compare(item, targets, "[]")  # imports and first-call costs, outside the measure
gc.collect()
base = rss("VmRSS")
try:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset VmHWM to the current RSS
    peak_of = lambda: rss("VmHWM")
    how = "VmHWM"
except OSError:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    base = max(base, before)
    peak_of = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    how = "ru_maxrss"
start = time.perf_counter()
tests, status = bench._compare(item, targets, raw)
elapsed = time.perf_counter() - start
peak = peak_of() - base
# baseline, in the same process: parsing the same text with json.loads alone (no bounds, no
# decoding, no comparison); on a loaded machine the ratio is the figure to compare
start = time.perf_counter()
try:
    json.loads(raw)
except (ValueError, RecursionError):
    pass
plain = time.perf_counter() - start
print(json.dumps({"kind": KIND, "mb": len(raw) / 2**20, "status": status,
                  "passed": sum(t["passed"] for t in tests), "n": len(tests),
                  "why": tests[0]["message"][:60], "s": elapsed, "plain_s": plain,
                  "peak_mb": peak / 2**20, "how": how}))
"""

# End to end, through the sandbox: a reply whose outputs.json is just under the 128 MB read cap.
_END_TO_END = r"""
import json, sys, time
from metacog_tasks.benchmarks import get_benchmark

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024

bench = get_benchmark("scicode", timeout_s=120)
item = bench.load("bundled")[0]
assert bench.grade(item, bench.reference_response(item)).correct == 1.0  # targets, warm-up
body = (
    "    def forge():\n"
    "        text = __import__('_metacog_codec').dump_targets("
    "[('ok', np.ones(12_400_000)), ('ok', 0.0), ('ok', 0.0)])\n"
    "        open('outputs.json', 'w').write(text)\n"
    "    __import__('atexit').register(forge)\n"
    "    return 0.0\n"
)
reply = f"```python\n{item.meta['function_header']}\n{body}```"
base = rss("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
start = time.perf_counter()
g = bench.grade(item, reply)
elapsed = time.perf_counter() - start
print(json.dumps({"s": elapsed, "peak_mb": (rss("VmHWM") - base) / 2**20, "status": g.status,
                  "correct": g.correct, "message": g.details["tests"][0]["message"][:60]}))
"""

KINDS = [
    "colliding int sets (16 x 1024)",
    "colliding int set (1M)",
    "dia blow-up, old dense form",
    "dia of 1 x 2**24 (coordinates)",
    "csr of 4M entries",
    "sparse shape past the text",
    "deep nesting (100k)",
    "deep nesting at the limit (64)",
    "huge integer (10M digits)",
    "300-digit integers (400k)",
    "huge array at the read cap",
    "array claiming 10**10 elements",
    "2M floats in lists",
    "200k tagged floats",
    "millions of tiny lists",
    "long string (120 MB)",
    "column that broadcasts (20000, 1)",
    "extra part of empty arrays",
    "dict of empty arrays",
    "legit: two 800 x 800 arrays (7.1)",
]


def _one(kind: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, kind], capture_output=True, text=True, timeout=900
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind}: the child failed\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kinds", default="", help="comma-separated subset of the kinds")
    args = parser.parse_args()
    kinds = [k for k in KINDS if not args.kinds or k in args.kinds.split(",")]
    print(f"cpus: {os.cpu_count()}, load: {os.getloadavg()[0]:.1f}, runs: {args.runs} (median)")
    print(
        f"{'kind':<36} {'text MB':>8} {'status':<19} {'time s':>7} {'json.loads s':>12} "
        f"{'peak MB':>8}  first message"
    )
    worst_s = worst_mb = 0.0
    for kind in kinds:
        rows = [_one(kind) for _ in range(args.runs)]
        s = statistics.median(r["s"] for r in rows)
        plain = statistics.median(r["plain_s"] for r in rows)
        mb = statistics.median(r["peak_mb"] for r in rows)
        r = rows[0]
        worst_s, worst_mb = max(worst_s, s), max(worst_mb, mb)
        verdict = f"{r['status']} {r['passed']}/{r['n']}"
        print(
            f"{kind:<36} {r['mb']:>8.1f} {verdict:<19} {s:>7.3f} {plain:>12.3f} {mb:>8.1f}  "
            f"{r['why']}"
        )
    if not args.kinds:
        proc = subprocess.run(
            [sys.executable, "-c", _END_TO_END], capture_output=True, text=True, timeout=900
        )
        if proc.returncode == 0:
            e = json.loads(proc.stdout.strip().splitlines()[-1])
            print(
                f"end to end (SciCode.grade, sandbox run included), a 127 MB outputs.json: "
                f"{e['s']:.2f} s, caller peak {e['peak_mb']:.1f} MB above its memory before, "
                f"{e['status']} {e['correct']:g} ({e['message']})"
            )
        else:
            print(f"end to end: skipped ({proc.stderr.strip().splitlines()[-1][:200]})")
    print(
        f"worst: {worst_s:.3f} s, {worst_mb:.1f} MB above the caller's memory before grading "
        f"(peak read from {rows[0]['how']}); target: under 2 s and 300 MB"
    )


if __name__ == "__main__":
    main()
