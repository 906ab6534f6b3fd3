"""Per-request overhead of ``metacog_mmlu_pro`` against lm-eval's own ``mmlu_pro`` task.

Both tasks run in this process on the same items (the bundled MMLU-Pro pack repeated to ``--items``
documents, written in MMLU-Pro's own format) and the same backend, alternating, ``--repeats``
times each; the figures are medians. ``metacog_mmlu_pro`` sends 4 requests per item (probe,
solve, log-likelihoods of " Yes" and " No"), lm-eval's ``mmlu_pro_math`` 1 (5-shot CoT
generation), so the comparison is per request: the target is a per-request time within 10% of
lm-eval's own task, i.e. no overhead beyond the extra requests themselves.

Backends:

* ``dummy``: lm-eval's ``DummyLM`` (no model cost): the harness's own per-request cost, the
  strictest view of the overhead added by the task code (request building, grading, parsing,
  aggregation, sample logging);
* ``hf``: a tiny random GPT-2 built locally (``tests/tinymodel.py``), generation capped at
  ``--max-gen-toks`` tokens for both tasks.

Run from the repository root::

    python bench/bench_lmeval_overhead.py --items 280 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TQDM_DISABLE", "1")

REPO = Path(__file__).resolve().parents[1]


def _write_items(path: Path, n: int) -> None:
    """The bundled pack, repeated to ``n`` items with fresh ids, as MMLU-Pro JSONL."""
    from metacog_tasks.benchmarks import get_benchmark

    pack = REPO / "metacog_tasks" / "packs" / "mmlu_pro" / "test.jsonl"
    if not pack.is_file():  # an installed wheel
        import metacog_tasks

        pack = Path(metacog_tasks.__file__).parent / "packs" / "mmlu_pro" / "test.jsonl"
    base = [json.loads(line) for line in pack.read_text().splitlines() if line.strip()]
    get_benchmark("mmlu_pro")  # fail early if the benchmark layer is missing
    rows = []
    for k in range(n):
        row = dict(base[k % len(base)])
        row["question_id"] = 100_000 + k
        row["category"] = "math"  # lm-eval's mmlu_pro_math keeps category == "math"
        row["cot_content"] = f"A: Let's think step by step. The answer is ({row['answer']})."
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _timed(lm, manager, spec, limit: int, gen_kwargs: str) -> tuple[float, int]:
    import lm_eval

    start = time.perf_counter()
    res = lm_eval.simple_evaluate(
        model=lm,
        tasks=[spec],
        task_manager=manager,
        limit=limit,
        log_samples=True,
        bootstrap_iters=0,
        gen_kwargs=gen_kwargs,
        verbosity="ERROR",
    )
    seconds = time.perf_counter() - start
    n_requests = sum(len(s["arguments"]) for samples in res["samples"].values() for s in samples)
    return seconds, n_requests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=280, help="documents per task")
    parser.add_argument("--repeats", type=int, default=5, help="runs per task and backend")
    parser.add_argument("--max-gen-toks", type=int, default=8, help="hf generation cap")
    parser.add_argument(
        "--backends", default="dummy,hf", help="comma list of dummy, hf (default both)"
    )
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)

    import lm_eval.models  # noqa: F401  (built-in model table before any registration)
    from lm_eval.api.registry import get_model
    from lm_eval.tasks import TaskManager

    from metacog_tasks.lmeval import tasks_dir

    sys.path.insert(0, str(REPO))
    tmp = Path(tempfile.mkdtemp(prefix="bench-lmeval-"))
    data = tmp / "mmlu_pro.jsonl"
    _write_items(data, args.items)

    t0 = time.perf_counter()
    manager = TaskManager(
        include_path=str(tasks_dir()),
        metadata={"metacog_data": str(data), "metacog_probe_max_tokens": args.max_gen_toks},
    )
    index_s = time.perf_counter() - t0
    builtin = {
        "group": "bench_lm_eval_mmlu_pro",
        "task": [
            {
                "task": "mmlu_pro_math",
                "dataset_path": "json",
                "dataset_kwargs": {"data_files": {"test": str(data), "validation": str(data)}},
            }
        ],
    }
    zero_shot = {
        "group": "bench_lm_eval_mmlu_pro_0shot",
        "task": [{**builtin["task"][0], "num_fewshot": 0}],
    }
    ours = "metacog_mmlu_pro"
    # The same generation cap for both tasks' solve requests (the hf model's context is 2048).
    gen_kwargs = f"max_gen_toks={args.max_gen_toks}"

    print(f"task index (built-ins + metacog): {index_s:.1f} s, once")
    print(f"{args.items} items, {args.repeats} runs per task, medians\n")
    header = (
        f"{'backend':8} {'task':22} {'req/item':>8} {'s/run':>8} {'ms/item':>9} "
        f"{'ms/request':>11} {'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if backend == "dummy":
            lm = get_model("dummy")()
        elif backend == "hf":
            from tests.tinymodel import build_tiny_model

            path = build_tiny_model(tmp / "tiny-gpt2")
            lm = get_model("hf")(pretrained=str(path), dtype="float32", device="cpu", batch_size=8)
        else:
            raise SystemExit(f"unknown backend {backend!r}")
        _timed(lm, manager, builtin, 5, gen_kwargs)  # warm-up: dataset caches, imports
        _timed(lm, manager, zero_shot, 5, gen_kwargs)
        _timed(lm, manager, ours, 5, gen_kwargs)
        specs = (
            ("lm-eval mmlu_pro_math", builtin),
            ("  same, 0-shot", zero_shot),
            (ours, ours),
        )
        times: dict[str, list[float]] = {name: [] for name, _ in specs}
        counts: dict[str, int] = {}
        for _ in range(args.repeats):
            for name, spec in specs:
                seconds, n_req = _timed(lm, manager, spec, args.items, gen_kwargs)
                times[name].append(seconds)
                counts[name] = n_req
        base = statistics.median(times["lm-eval mmlu_pro_math"]) / counts["lm-eval mmlu_pro_math"]
        for name, runs in times.items():
            med = statistics.median(runs)
            per_req = med / counts[name]
            print(
                f"{backend:8} {name:22} {counts[name] / args.items:8.0f} {med:8.2f} "
                f"{1000 * med / args.items:9.2f} {1000 * per_req:11.3f} {per_req / base:7.2f}"
            )
    print(
        "\nratio: per-request time over lm-eval's own mmlu_pro task (5-shot, as shipped) on the "
        "same backend\n(target < 1.10); the 0-shot row shows how much of lm-eval's time is its "
        "longer 5-shot prompts."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
