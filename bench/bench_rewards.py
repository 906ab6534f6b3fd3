"""Completions per second of each RLMF reward on 10,000 completions, and the time per parse of
the degenerate inputs that made the replaced parsers quadratic.

Rates: completions are right and wrong answers of the bundled MMLU-Pro, SQuAD and MathBench
items (the benchmarks' own reference/wrong responses), each with a unique first line (so the
grader's verdict cache never hits across completions), a ``Confidence`` and a ``Meta`` line,
and one in ten with no format at all. Each reward runs ``--repeats`` times on a fresh grader
(items loaded before timing); the median rate is printed, and its ratio to TRL's own regex
reward ``think_format_reward`` timed in the same run, and the rate in CPU time (which other
processes on a shared machine do not inflate). Target: the non-executing rewards above 50,000
completions per second. SciCode correctness runs code in the sandbox and is not timed here.

Degenerate inputs (issue 27): 40 kB of white space before the special-token strip, one 20 kB
line through MMLU-Pro's answer patterns, 20 kB of ``\\boxed{``, each parsed by the replaced
form (kept here, run once: seconds each) and by the current one (median of ``--repeats``), in
the same run; the current forms also at 1 MB, and the completion parser at its length cap.

    python bench/bench_rewards.py [--n 10000] [--repeats 5] [--only rates|degenerate]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable

import numpy as np

from metacog_tasks.benchmarks import get_benchmark
from metacog_tasks.benchmarks._math import last_boxed
from metacog_tasks.benchmarks.mmlu_pro import extract_choice
from rlmf_plugin._format import MAX_COMPLETION_CHARS, parse_completion
from rlmf_plugin._grading import ItemGrader
from rlmf_plugin.engines import _strip_special
from rlmf_plugin.rewards import REWARD_NAMES, make_rewards

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


def rate(fn, texts, cols, repeats: int, make=None, prompts=None) -> tuple[float, float]:
    """Median wall-clock and CPU-time rates (CPU time: what a loaded machine cannot inflate)."""
    walls, cpus = [], []
    for _ in range(repeats):
        f = make() if make else fn
        batch = [*texts]  # a new list each run: nothing parsed before
        ps = prompts if prompts is not None else [""] * len(batch)
        t0, c0 = time.perf_counter(), time.process_time()
        f(prompts=ps, completions=batch, log_metric=lambda k, v: None, **cols)
        walls.append(len(texts) / (time.perf_counter() - t0))
        cpus.append(len(texts) / max(time.process_time() - c0, 1e-9))
    return statistics.median(walls), statistics.median(cpus)


# The replaced forms (quadratic on the inputs below), kept to time them against the current ones.
_OLD_SPECIAL = re.compile(
    r"(?:\s*(?:<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</?s>|<(?:eos|pad|end_of_turn|eot)>))+\s*\Z"
)
_OLD_ANSWER_IS = re.compile(r"answer is \(?([A-J])\)?")
_OLD_ANSWER_COLON = re.compile(r".*[aA]nswer:\s*([A-J])")
_OLD_LAST_LETTER = re.compile(r"\b[A-J]\b(?!.*\b[A-J]\b)", re.DOTALL)
_OLD_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


def old_strip_special(text: str) -> str:
    return _OLD_SPECIAL.sub("", text)


def old_extract_choice(text: str) -> str | None:
    for pattern, group in ((_OLD_ANSWER_IS, 1), (_OLD_ANSWER_COLON, 1), (_OLD_LAST_LETTER, 0)):
        m = pattern.search(text)
        if m:
            return m.group(group)
    return None


def old_last_boxed(text: str) -> str | None:
    for start in reversed([m.end() for m in _OLD_BOXED.finditer(text)]):
        depth = 1
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[start:i].strip()
    return None


def _seconds(fn: Callable, text: str, repeats: int) -> float:
    """Median CPU seconds of ``fn(text)``."""
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn(text)
        times.append(time.process_time() - t0)
    return statistics.median(times)


def degenerate(repeats: int) -> None:
    cases = [
        ("strip special tokens", "40 kB of spaces", " " * 40_000, old_strip_special,
         _strip_special),
        ("MMLU-Pro answer patterns", "one 20 kB line", "x" * 20_000, old_extract_choice,
         lambda text: extract_choice(text)[0]),
        ("last_boxed", '20 kB of "\\boxed{"', "\\boxed{" * (20_000 // 7), old_last_boxed,
         last_boxed),
    ]  # fmt: skip
    print("\ndegenerate inputs: CPU seconds per parse (replaced form once, current: median of "
          f"{repeats}), same run")  # fmt: skip
    print(f"{'parser':28s} {'input':20s} {'before':>9s} {'after':>9s} {'speed-up':>10s} "
          f"{'after, 1 MB':>12s}")  # fmt: skip
    for name, label, text, old, new in cases:
        assert old(text) == new(text), name  # the same answer
        before = _seconds(old, text, 1)
        after = _seconds(new, text, repeats)
        big = (text * (1_000_000 // len(text) + 1))[:1_000_000]
        after_big = _seconds(new, big, repeats)
        ratio = before / max(after, 1e-6)
        print(f"{name:28s} {label:20s} {before:9.3f} {after:9.5f} {ratio:9,.0f}x {after_big:12.4f}")
    at_cap = {
        "spaces": " " * MAX_COMPLETION_CHARS,
        "tag lines": "Confidence: 80\n" * (MAX_COMPLETION_CHARS // 15),
        "markup then tag": "*" * (MAX_COMPLETION_CHARS - 20) + "Confidence: 80",
        "mid-line tags": "x confidence meta " * (MAX_COMPLETION_CHARS // 18),
    }
    for label, text in at_cap.items():
        seconds = _seconds(parse_completion, text, repeats)
        print(f"{'parse_completion':28s} {label + ' (cap)':20s} {'':9s} {seconds:9.5f}")


def rates(n: int, repeats: int) -> None:
    texts, cols = completions(n)
    from trl.rewards import think_format_reward

    chat = [[{"role": "assistant", "content": t}] for t in texts]
    base, base_cpu = rate(think_format_reward, chat, {}, repeats)
    print(f"{n} completions, median of {repeats} runs (completions/s)")
    print("target: 50,000/s in CPU time (= wall-clock on an idle core; a loaded machine only")
    print("inflates the wall-clock figure); ratio: wall-clock rate / baseline's, same run")
    print(f"{'':40s} {'wall':>12s}   {'ratio':>5s} {'CPU time':>12s}")
    print(f"{'baseline trl think_format_reward':40s} {base:12,.0f}   1.00x {base_cpu:12,.0f}")

    def loaded_rewards(target: str = "item"):
        """Fresh rewards on a fresh grader (no verdict cached), items loaded; the faithful
        target the column (``item``) unless given."""
        grader = ItemGrader()
        for b in BENCHMARKS:  # load items outside the timing
            grader.item(b, "", "bundled")
        return make_rewards(REWARD_NAMES, grader=grader, target=target)

    names = [f.__name__ for f in make_rewards(REWARD_NAMES, target="item")]
    for i, name in enumerate(names):

        def fresh(i: int = i):
            return loaded_rewards()[i]

        r, r_cpu = rate(None, texts, cols, repeats, make=fresh)
        flag = "" if r_cpu > 50_000 else "   (below the 50,000/s target)"
        print(f"{name:40s} {r:12,.0f}   {r / base:.2f}x {r_cpu:12,.0f}{flag}")

    # The on-policy target (the default in training): groups of 8 completions of one prompt,
    # each answer graded and grouped by equivalence.
    faith = names.index("faithful_reward")
    groups = [f"p{i // 8}" for i in range(n)]

    def onpolicy() -> Callable[..., list[float | None]]:
        return loaded_rewards("onpolicy")[faith]

    r, r_cpu = rate(None, texts, cols, repeats, make=onpolicy, prompts=groups)
    label = "faithful_reward, on-policy target (G=8)"
    print(f"{label:40s} {r:12,.0f}   {r / base:.2f}x {r_cpu:12,.0f}")

    times, cpu = [], []
    for _ in range(repeats):
        rewards = loaded_rewards()
        batch = [*texts]  # as in TRL: one list passed to every reward of the batch
        t0, c0 = time.perf_counter(), time.process_time()
        for f in rewards:
            f(prompts=[""] * len(batch), completions=batch, log_metric=lambda k, v: None, **cols)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    r, r_cpu = n / statistics.median(times), n / statistics.median(cpu)
    label = f"all {len(names)} on one batch (parse and grade once)"
    print(f"{label:40s} {r:12,.0f}   {r / base:.2f}x {r_cpu:12,.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", choices=["rates", "degenerate"])
    args = ap.parse_args()
    if args.only != "degenerate":
        rates(args.n, args.repeats)
    if args.only != "rates":
        degenerate(args.repeats)


if __name__ == "__main__":
    main()
