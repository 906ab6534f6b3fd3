"""Completions per second of each RLMF reward on 10,000 completions.

Completions are right and wrong answers of the bundled MMLU-Pro, SQuAD and MathBench items (the
benchmarks' own reference/wrong responses), each with a unique first line (so the grader's
verdict cache never hits across completions), a ``Confidence`` and a ``Meta`` line, and one in
ten with no format at all. Each reward runs ``--repeats`` times on a fresh grader (items loaded
before timing); the median rate is printed, and its ratio to TRL's own regex reward
``think_format_reward`` timed in the same run, and the rate in CPU time (which other
processes on a shared machine do not inflate). Target: the non-executing rewards above 50,000
completions per second. SciCode correctness runs code in the sandbox and is not timed here.

    python bench/bench_rewards.py [--n 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from metacog_tasks.benchmarks import get_benchmark
from rlmf_plugin._grading import ItemGrader
from rlmf_plugin.rewards import make_rewards

BENCHMARKS = ("mmlu_pro", "squad", "mathbench")


def completions(n: int, seed: int = 0) -> tuple[list[str], dict[str, list]]:
    rng = np.random.default_rng(seed)
    pool = []
    for name in BENCHMARKS:
        bench = get_benchmark(name)
        for item in bench.load("bundled"):
            pool.append((name, item, bench.reference_response(item)))
            pool.append((name, item, bench.wrong_response(item, rng)))
    texts, cols = [], {"benchmark": [], "item_id": [], "source": [], "intrinsic_confidence": []}
    for i in range(n):
        name, item, answer = pool[int(rng.integers(len(pool)))]
        head = f"Working note {i}: let me answer carefully.\n"
        if i % 10 == 9:
            texts.append(head + answer)
        else:
            c, m = int(rng.integers(0, 101)), int(rng.integers(0, 101))
            texts.append(f"{head}{answer}\nConfidence: {c}\nMeta: {m}")
        cols["benchmark"].append(name)
        cols["item_id"].append(item.item_id)
        cols["source"].append("bundled")
        cols["intrinsic_confidence"].append(float(rng.random()))
    return texts, cols


def rate(fn, texts, cols, repeats: int, make=None) -> tuple[float, float]:
    """Median wall-clock and CPU-time rates (CPU time: what a loaded machine cannot inflate)."""
    walls, cpus = [], []
    for _ in range(repeats):
        f = make() if make else fn
        batch = [*texts]  # a new list each run: nothing parsed before
        t0, c0 = time.perf_counter(), time.process_time()
        f(prompts=[""] * len(batch), completions=batch, log_metric=lambda k, v: None, **cols)
        walls.append(len(texts) / (time.perf_counter() - t0))
        cpus.append(len(texts) / max(time.process_time() - c0, 1e-9))
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    texts, cols = completions(args.n)
    from trl.rewards import think_format_reward

    chat = [[{"role": "assistant", "content": t}] for t in texts]
    base, base_cpu = rate(think_format_reward, chat, {}, args.repeats)
    print(f"{args.n} completions, median of {args.repeats} runs (completions/s)")
    print("target: 50,000/s in CPU time (= wall-clock on an idle core; a loaded machine only")
    print("inflates the wall-clock figure); ratio: wall-clock rate / baseline's, same run")
    print(f"{'':40s} {'wall':>12s}   {'ratio':>5s} {'CPU time':>12s}")
    print(f"{'baseline trl think_format_reward':40s} {base:12,.0f}   1.00x {base_cpu:12,.0f}")

    def loaded_rewards():
        """Fresh rewards on a fresh grader (no verdict cached), items loaded."""
        grader = ItemGrader()
        for b in BENCHMARKS:  # load items outside the timing
            grader.item(b, "", "bundled")
        return make_rewards(grader=grader)

    names = [f.__name__ for f in make_rewards()]
    for i, name in enumerate(names):

        def fresh(i: int = i):
            return loaded_rewards()[i]

        r, r_cpu = rate(None, texts, cols, args.repeats, make=fresh)
        flag = "" if r_cpu > 50_000 else "   (below the 50,000/s target)"
        print(f"{name:40s} {r:12,.0f}   {r / base:.2f}x {r_cpu:12,.0f}{flag}")

    times, cpu = [], []
    for _ in range(args.repeats):
        rewards = loaded_rewards()
        batch = [*texts]  # as in TRL: one list passed to every reward of the batch
        t0, c0 = time.perf_counter(), time.process_time()
        for f in rewards:
            f(prompts=[""] * len(batch), completions=batch, log_metric=lambda k, v: None, **cols)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    r, r_cpu = args.n / statistics.median(times), args.n / statistics.median(cpu)
    label = "all six on one batch (parse and grade once)"
    print(f"{label:40s} {r:12,.0f}   {r / base:.2f}x {r_cpu:12,.0f}")


if __name__ == "__main__":
    main()
