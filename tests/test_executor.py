"""Where the permutation work runs: threads by default, another executor for a block."""

from __future__ import annotations

import json
import sys
import threading

import numpy as np
import pytest

from metacog_metrics import AnalysisOptions, analyze_records, pairwise_calibration, to_jsonable
from metacog_metrics._threads import Stages
from metacog_metrics.executor import ThreadExecutor, current_executor, executing_on
from metacog_metrics.simulate import get_preset, simulate_arrays, simulate_records


class _Shuffled:
    """Runs the tasks in a seeded random order, one at a time, and returns them in order:
    what a cluster does to their timing, with none of its machinery."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.calls: list[int] = []  # tasks per run

    def run(self, tasks, on_result=None):
        self.calls.append(len(tasks))
        out = [None] * len(tasks)
        for i in self.rng.permutation(len(tasks)):
            out[i] = tasks[i]()
            if on_result is not None:
                on_result(int(i))
        return out


def test_threads_run_the_tasks_and_return_them_in_order():
    seen: list[int] = []
    tasks = [lambda k=k: k * k for k in range(12)]
    assert ThreadExecutor(3).run(tasks, on_result=seen.append) == [k * k for k in range(12)]
    assert sorted(seen) == list(range(12))
    assert ThreadExecutor(3).run([]) == []


def test_a_block_sets_the_executor_and_its_end_restores_the_one_before():
    outer, inner = _Shuffled(), _Shuffled()
    assert current_executor(5) == ThreadExecutor(5)
    with executing_on(outer):
        assert current_executor(5) is outer
        with executing_on(inner):
            assert current_executor() is inner
        with executing_on(None):  # None: threads again
            assert current_executor(2) == ThreadExecutor(2)
        assert current_executor() is outer
    assert current_executor() == ThreadExecutor(None)
    with pytest.raises(ZeroDivisionError), executing_on(outer):
        _ = 1 / 0
    assert current_executor() == ThreadExecutor(None)  # restored on an error too


def test_background_stages_inherit_the_executor_other_threads_do_not():
    ex = _Shuffled()
    seen = []
    with executing_on(ex), Stages() as stages:
        assert stages.background(current_executor).result() is ex
        t = threading.Thread(target=lambda: seen.append(current_executor()))
        t.start()
        t.join(10)
    assert seen == [ThreadExecutor(None)]


def _arrays(n_models=7, n_items=300, seed=0):
    sim = simulate_arrays(get_preset("paper"), n_models, n_items, 1, rng=seed)
    return sim.conf[0].astype(float), sim.perf[0].astype(float)


def _dump(result) -> str:
    return json.dumps(to_jsonable(result.to_dict()), sort_keys=True)


@pytest.mark.parametrize("engine", ["numpy", "auto"])
def test_pairwise_results_do_not_depend_on_the_executor_or_the_order_it_runs_tasks(engine):
    conf, perf = _arrays()
    ragged = conf.copy()
    ragged[np.random.default_rng(1).random(conf.shape) < 0.1] = np.nan  # ragged data too
    levels = np.round(np.clip(conf * 0.6 + np.random.default_rng(2).random(conf.shape) * 0.4,
                              0, 1), 1)  # fmt: skip
    for c in (conf, ragged, levels):
        kwargs = dict(permutations=300, joint_permutations=60, rng=3, engine=engine)
        local = pairwise_calibration(c, perf, workers=2, **kwargs)
        ex = _Shuffled(seed=4)
        with executing_on(ex):
            shuffled = pairwise_calibration(c, perf, workers=2, **kwargs)
        assert ex.calls and sum(ex.calls) > 1  # the work went through it, as several tasks
        assert _dump(shuffled) == _dump(local)


def test_an_analysis_runs_its_permutations_on_the_executor_of_its_block():
    records = simulate_records(
        get_preset("paper"),
        n_models=6,
        items_per_benchmark=40,
        benchmarks=("squad", "mmlu_pro"),
        probes=("prospective", "counterfactual"),
        seed=1,
    )  # four groups
    opts = AnalysisOptions(permutations=200, joint_permutations=40, seed=2, n_boot=50)
    local = analyze_records(records, opts)
    ex = _Shuffled(seed=5)
    with executing_on(ex):
        shuffled = analyze_records(records, opts)
    assert ex.calls
    assert json.dumps(shuffled.summary) == json.dumps(local.summary)


def test_the_scheduler_option_is_checked_and_on_the_command_line(capsys):
    assert AnalysisOptions().scheduler is None
    assert AnalysisOptions(scheduler=" tcp://10.0.0.5:8786 ").scheduler == "tcp://10.0.0.5:8786"
    for bad in ("", "  ", 8786):
        with pytest.raises(ValueError, match="scheduler must be a Dask scheduler's address"):
            AnalysisOptions(scheduler=bad)
    from metacog_tasks import cli

    with pytest.raises(SystemExit):
        cli.main(["analyze", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--scheduler ADDRESS" in text and "Address of a Dask scheduler" in text


def test_a_scheduler_without_dask_installed_is_a_clear_error(monkeypatch):
    from metacog_metrics.distributed import dask_executor, scheduler_executor

    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    with (
        pytest.raises(ImportError, match=r"pip install 'metacog-eval\[distributed\]'"),
        dask_executor("tcp://127.0.0.1:1"),
    ):
        pass
    with scheduler_executor(None):  # no scheduler: threads, nothing imported
        assert current_executor(3) == ThreadExecutor(3)
