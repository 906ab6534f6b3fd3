"""lm-eval's multi-process data parallelism (world_size > 1) on the metacog tasks.

``accelerate launch`` with ``hf`` needs several GPUs; the evaluator's data-parallel path itself
(documents split over ranks, padding of the shorter rank, per-rank scoring, samples and metrics
gathered to rank 0) only needs an LM that reports its rank and gathers across processes. Here
two CPU processes (``torch.distributed`` over gloo, started by ``torchrun``) run the simulated
model with an uneven split (5 documents over 2 ranks, so lm-eval pads rank 1), and the records
and metrics must equal a single-process run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from metacog_tasks.collect import collect
from metacog_tasks.lmeval import run_lmeval

TASKS = ["metacog_mmlu_pro", "metacog_mathbench_cf"]
META = {"metacog_data": "bundled", "metacog_confidence": "verbal,logprob,sampled"}

WORKER = '''
import sys

import torch
import torch.distributed as dist

from metacog_tasks.lmeval import run_lmeval
from metacog_tasks.lmeval.models import MetacogSimLM


class DistributedSimLM(MetacogSimLM):
    """The simulated model as one rank of a data-parallel run (gloo, CPU)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        dist.init_process_group("gloo")
        self._rank = dist.get_rank()
        self._world_size = dist.get_world_size()
        self._device = torch.device("cpu")

    def all_gather(self, tensor):
        out = [torch.zeros_like(tensor) for _ in range(self._world_size)]
        dist.all_gather(out, tensor)
        return torch.stack(out)

    def gather_object(self, obj, dst=0):
        result = [None] * self._world_size if self._rank == dst else None
        dist.gather_object(obj, result, dst=dst)
        return result

    def barrier(self):
        dist.barrier()


out, tasks, meta = sys.argv[1], sys.argv[2].split(","), __import__("json").loads(sys.argv[3])
lm = DistributedSimLM(model="m04", preset="paper", seed=0, data="bundled")
run_lmeval(
    [{"model": lm, "model_args": {"model": "metacog-sim/m04"}}],
    tasks, output_path=out, metadata=meta, limit=5,
)
dist.destroy_process_group()
'''


@pytest.mark.slow
def test_two_ranks_give_the_single_process_records(tmp_path: Path) -> None:
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    env = {
        **os.environ,
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    proc = subprocess.run(
        [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc_per_node", "2", str(worker),
            str(tmp_path / "dp"), ",".join(TASKS), json.dumps(META),
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-5000:]

    single = run_lmeval(
        [{"model": "metacog-sim", "model_args": "model=metacog-sim/m04,preset=paper,seed=0"}],
        TASKS,
        output_path=tmp_path / "single",
        metadata=META,
        limit=5,
    )
    dp_results = json.loads(next((tmp_path / "dp").rglob("results_*.json")).read_text())
    for task in TASKS:
        a, b = dp_results["results"][task], single[0].metrics[task]
        assert a["sample_len"] == b["sample_len"] == 5
        for key, value in b.items():
            if isinstance(value, float):
                assert a[key] == pytest.approx(value, nan_ok=True), (task, key)

    keys = ["benchmark", "probe", "item_id", "confidence_kind"]
    dp = collect([tmp_path / "dp"]).records.drop(columns=["source"])
    one = collect([tmp_path / "single"]).records.drop(columns=["source"])
    assert len(dp) == 5 * len(TASKS) * 3
    pd.testing.assert_frame_equal(
        dp.sort_values(keys).reset_index(drop=True), one.sort_values(keys).reset_index(drop=True)
    )
    # Rank 1 had 2 documents to rank 0's 3, so lm-eval padded it with copies of its last
    # generation request (a sampled probe); the task kept exactly k = 10 replies of it.
    raw = [
        json.loads(line)
        for path in (tmp_path / "dp").rglob("samples_*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert max(len(s["resps"][-1]) for s in raw) > 10  # the padding happened
    assert {s["record"]["confidence"]["sampled"]["n_requested"] for s in raw} == {10}
    assert set(dp[dp["confidence_kind"] == "sampled"]["n_samples"]) == {10.0}
