"""The same simulated model on the same pack gives identical records through lm-eval and Inspect.

Both harnesses ask the benchmark layer's prompts, the simulated model answers from its latent
state, and ``metacog collect`` reads both logs; every record column except ``harness``,
``source`` and each harness's own provenance hashes (``doc_hash``, ``prompt_hash``,
``task_version``: each harness hashes its own request format) must agree: item ids, probes,
confidence kinds, confidences, correctness, the texts, the parse and grade statuses and the
extracted answers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from metacog_metrics.records import KEY_COLUMNS, read_records
from metacog_tasks.collect import collect
from metacog_tasks.sandbox import SandboxResult

# Inspect's own retry set-up warns on every model call (tenacity API change).
pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)

BIN = Path(sys.executable).parent
_HARNESS_COLUMNS = ("harness", "source", "doc_hash", "prompt_hash", "task_version")


def _compare(lm: pd.DataFrame, ins: pd.DataFrame) -> None:
    assert len(lm) and len(lm) == len(ins)
    assert set(lm["harness"]) == {"lm-eval"} and set(ins["harness"]) == {"inspect"}
    key = list(KEY_COLUMNS)
    a = lm.drop(columns=list(_HARNESS_COLUMNS)).sort_values(key).reset_index(drop=True)
    b = ins.drop(columns=list(_HARNESS_COLUMNS)).sort_values(key).reset_index(drop=True)
    assert list(a.columns) == list(b.columns)
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def _lm_eval_in_process(
    tmp_path: Path, model: str, tasks: list[str], meta: dict, limit: int | None = None
) -> Path:
    from metacog_tasks.lmeval.runner import run_lmeval

    out = tmp_path / "lm"
    run_lmeval(
        [{"model": "metacog-sim", "model_args": {"model": model, "data": "bundled"}}],
        tasks,
        output_path=out,
        metadata=meta,
        limit=limit,
    )
    return out


def test_same_records_in_process(tmp_path) -> None:
    """lm-eval's simple_evaluate and Inspect's eval(), one process; circular MathBench."""
    from inspect_ai import eval as inspect_eval

    from metacog_tasks.inspect_tasks import mathbench, mmlu_pro

    meta = {"metacog_data": "bundled", "metacog_confidence": "verbal,sampled", "metacog_samples": 2}
    lm_dir = _lm_eval_in_process(
        tmp_path, "m06", ["metacog_mmlu_pro", "metacog_mathbench", "metacog_mathbench_cf"], meta
    )
    args = {"data": "bundled", "confidence": "verbal,sampled", "k": 2}
    inspect_eval(
        [
            mmlu_pro(**args),
            mathbench(probe="prospective,counterfactual", **args),
        ],
        model="metacog-sim/m06",
        display="none",
        log_dir=str(tmp_path / "inspect"),
    )
    lm, ins = collect([lm_dir]), collect([tmp_path / "inspect"])
    assert lm.n_bad == 0 and ins.n_bad == 0
    assert set(ins.records["benchmark"]) == {"mmlu_pro", "mathbench"}
    _compare(lm.records, ins.records)


class _Contention:
    """``run_python`` on a machine that runs one sandbox at a time within its limit: a gold run
    (it collects the targets) that overlaps another run of the process reaches its wall-clock
    limit (as a starved run does under load), a run alone is the real run. Nothing burns CPU:
    the overlap is counted. The model's runs overlap too and are real: a model's timeout is its
    own verdict, never retried (see ``test_a_models_timeout_beside_others_is_its_verdict``)."""

    def __init__(self, real) -> None:
        self.real = real
        self.lock = threading.Lock()
        self.active = 0
        self.started = 0
        self.timeouts = 0

    def __call__(self, code: str, **kwargs):
        with self.lock:
            self.active += 1
            self.started += 1
            first, alone = self.started, self.active == 1
        try:
            time.sleep(0.2)  # long enough for concurrently graded samples to overlap
            result = self.real(code, **kwargs)
        finally:
            with self.lock:
                self.active -= 1
                alone = alone and self.started == first
        if alone or "targets_out.json" not in kwargs.get("collect", ()):
            return result
        with self.lock:
            self.timeouts += 1
        limit = kwargs["timeout_s"]
        return SandboxResult(-9, "", "", True, "timeout", limit, result.isolation)


def test_timed_out_grading_same_records(tmp_path, monkeypatch) -> None:
    """A grading run that reaches its time limit under load is recorded the same through both
    harnesses: Inspect grades its samples at the same time (their sandboxes overlap and time
    out here), lm-eval one after another (they never do); a run that timed out beside others
    runs again alone when it is a gold run, so both record the same targets and grades (before,
    Inspect left the steps whose gold run timed out ungraded, NaN, where lm-eval graded
    them)."""
    from inspect_ai import eval as inspect_eval

    from metacog_tasks.benchmarks import _timed_runs, scicode
    from metacog_tasks.inspect_tasks import scicode as scicode_task

    contention = _Contention(scicode.run_python)
    monkeypatch.setattr(scicode, "run_python", contention)
    meta = {"metacog_data": "bundled", "metacog_confidence": "verbal"}
    lm_dir = _lm_eval_in_process(tmp_path, "m03", ["metacog_scicode"], meta, limit=3)
    assert contention.timeouts == 0  # lm-eval: one run at a time
    retries = _timed_runs.retries()
    inspect_eval(
        scicode_task(data="bundled", confidence="verbal"),
        model="metacog-sim/m03",
        limit=3,
        display="none",
        log_dir=str(tmp_path / "inspect"),
    )
    assert contention.timeouts > 0  # Inspect: overlapping runs reached the limit ...
    assert _timed_runs.retries() - retries == contention.timeouts  # ... and ran again alone
    lm, ins = collect([lm_dir]), collect([tmp_path / "inspect"])
    assert lm.n_bad == 0 and ins.n_bad == 0
    assert len(ins.records) == 3 and ins.records["correct"].notna().all()
    _compare(lm.records, ins.records)


def test_timed_out_math_check_same_records(tmp_path, monkeypatch) -> None:
    """A math-verify step over its limit reads ``timeout`` through both harnesses: lm-eval
    grades in the main thread (math-verify's SIGALRM per step), Inspect in worker threads (a
    helper thread watched step by step). Before, the helper thread had the three steps' budget
    for any one of them, so Inspect graded ``ok`` what lm-eval recorded as ``timeout``."""
    import math_verify
    from inspect_ai import eval as inspect_eval
    from math_verify.utils import timeout

    from metacog_tasks.inspect_tasks import omni_math

    real_parse = math_verify.parse

    def parse(text, **kwargs):
        if text == "$91$":  # the first item's gold: 1.5 s, over the 1 s limit of each step
            timeout(kwargs.get("parsing_timeout"))(time.sleep)(1.5)
        return real_parse(text, **kwargs)

    monkeypatch.setattr(math_verify, "parse", parse)
    meta = {
        "metacog_data": "bundled",
        "metacog_confidence": "verbal",
        "metacog_options": {"omni_math": {"verify_timeout_s": 1}},
    }
    lm_dir = _lm_eval_in_process(tmp_path, "m03", ["metacog_omni_math"], meta, limit=2)
    inspect_eval(
        omni_math(data="bundled", confidence="verbal", verify_timeout_s=1),
        model="metacog-sim/m03",
        limit=2,
        display="none",
        log_dir=str(tmp_path / "inspect"),
    )
    lm, ins = collect([lm_dir]), collect([tmp_path / "inspect"])
    assert lm.n_bad == 0 and ins.n_bad == 0
    status = dict(zip(ins.records["answer"], ins.records["grade_status"]))
    assert sorted(status.values()) == ["ok", "timeout"], status
    _compare(lm.records, ins.records)


def _run(args: list[str], cwd: Path) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{args[:3]}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


BENCHMARKS = ("squad", "mmlu_pro", "legalbench", "mathbench", "omni_math", "scicode")


@pytest.mark.slow
@pytest.mark.parametrize("model", ["m03"])
def test_same_records_through_both_clis(tmp_path, model) -> None:
    """``metacog lm-eval run`` vs ``inspect eval-set`` on every bundled pack, both probes,
    verbal, sampled and numeric confidence; then ``metacog collect`` on each log folder."""
    lm_tasks = ",".join(f"metacog_{b}{sfx}" for b in BENCHMARKS for sfx in ("", "_cf"))
    meta = (
        '{"metacog_data": "bundled", "metacog_confidence": "verbal,sampled,numeric", '
        '"metacog_samples": 2}'
    )
    _run(
        [
            str(BIN / "metacog"), "lm-eval", "run", "--model", "metacog-sim",
            "--model_args", f"model={model},data=bundled", "--tasks", lm_tasks,
            "--metadata", meta, "--output_path", "lm", "--log_samples",
        ],
        tmp_path,
    )  # fmt: skip
    _run(
        [
            str(BIN / "inspect"), "eval-set", *(f"metacog_tasks/{b}" for b in BENCHMARKS),
            "--model", f"metacog-sim/{model}", "-T", "data=bundled",
            "-T", "probe=prospective,counterfactual", "-T", "confidence=verbal,sampled,numeric",
            "-T", "k=2", "--log-dir", "inspect", "--display", "none",
        ],
        tmp_path,
    )  # fmt: skip
    for name in ("lm", "inspect"):
        _run([str(BIN / "metacog"), "collect", name, "--out", f"{name}.parquet"], tmp_path)
    lm, ins = read_records(tmp_path / "lm.parquet"), read_records(tmp_path / "inspect.parquet")
    assert set(ins["benchmark"]) == set(BENCHMARKS)
    assert set(ins["confidence_kind"]) == {"verbal_binary", "sampled", "verbal_numeric"}
    _compare(lm, ins)

    # Both folders at once: the same model name from two harnesses is refused, not merged.
    both = [str(BIN / "metacog"), "collect", "lm", "inspect", "--out", "both.parquet"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    proc = subprocess.run(both, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "appear in both lm-eval and Inspect logs" in proc.stderr
    # ... and the rename the error suggests (scoped to one harness) resolves it.
    hint = proc.stderr.split("--rename ")[1].split()[0]
    assert hint.startswith("lm-eval:")
    _run([*both, "--rename", hint], tmp_path)
    merged = read_records(tmp_path / "both.parquet")
    assert len(merged) == len(lm) + len(ins)
    assert set(merged.loc[merged["harness"] == "inspect", "model"]) == set(ins["model"])
    assert set(merged.loc[merged["harness"] == "lm-eval", "model"]) == {
        f"{m}@lm-eval" for m in lm["model"].unique()
    }
