"""The permutation work on a Dask LocalCluster: the same summary as the local run, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_metrics import AnalysisOptions, analyze_files, analyze_records, pairwise_calibration
from metacog_metrics.simulate import get_preset, simulate_arrays
from tests.availability import unavailable


def _need_dask() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        unavailable("distributed is not installed (the 'distributed' extra)")


@pytest.fixture(scope="module")
def cluster():
    _need_dask()
    from distributed import LocalCluster

    # worker processes, as on a real cluster: the tasks cross a process boundary, pickled
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as c:
        yield c


def _ragged_numeric(n_models=8, n_items=150, seed=0) -> pd.DataFrame:
    """Numeric confidence, each model missing some items (the atlas case, small)."""
    sim = simulate_arrays(get_preset("paper"), n_models, n_items, 1, rng=seed)
    rng = np.random.default_rng(seed)
    conf = np.round(np.clip(0.6 * sim.conf[0] + 0.4 * rng.random((n_items, n_models)), 0, 1), 2)
    rows = [
        {"model": f"m{j}", "item_id": f"q{i}", "confidence": conf[i, j],
         "correct": float(sim.perf[0][i, j]), "confidence_kind": "verbal_numeric"}
        for j in range(n_models) for i in range(n_items) if rng.random() > 0.08
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_cluster_run_writes_the_local_runs_summary_and_tables(cluster, realruns_dir, tmp_path):
    # the whole summary and every table of `metacog analyze --scheduler ADDRESS` against the
    # local run, on a real binary run and on ragged numeric confidence
    from metacog_tasks import cli

    ragged = tmp_path / "ragged.csv"
    _ragged_numeric().to_csv(ragged, index=False)
    inputs = [realruns_dir / "cacioli_battery_binary" / "tidy.csv", ragged]
    flags = ["--permutations", "400", "--joint-permutations", "100", "--seed", "7"]
    for path in inputs:
        local, remote = tmp_path / f"local_{path.stem}", tmp_path / f"remote_{path.stem}"
        opts = AnalysisOptions(permutations=400, joint_permutations=100, seed=7)
        analyze_files([path], opts, out_dir=local, report=False)
        cli.main(["analyze", str(path), "--out", str(remote), "--quiet", "--no-report",
                  "--scheduler", cluster.scheduler_address, *flags])  # fmt: skip
        files = sorted(p.relative_to(local) for p in local.rglob("*") if p.is_file())
        assert Path("summary.json") in files and len(files) > 5
        assert files == sorted(p.relative_to(remote) for p in remote.rglob("*") if p.is_file())
        for name in files:
            assert (remote / name).read_bytes() == (local / name).read_bytes(), (path, name)
        summary = json.loads((remote / "summary.json").read_text())
        assert summary["results"], path


def test_the_cluster_ran_the_tasks_and_a_task_error_reaches_the_caller(cluster):
    from distributed import Client

    from metacog_metrics.distributed import DaskExecutor, dask_executor

    sim = simulate_arrays(get_preset("paper"), 6, 200, 1, rng=3)
    conf, perf = sim.conf[0].astype(float), sim.perf[0].astype(float)
    local = pairwise_calibration(conf, perf, permutations=200, joint_permutations=50, rng=1)
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        before = sum(client.run(_tasks_done).values())
        with dask_executor(client) as ex:  # a connected client is used and left open
            assert isinstance(ex, DaskExecutor)
            remote = pairwise_calibration(conf, perf, permutations=200, joint_permutations=50,
                                          rng=1)  # fmt: skip
            seen: list[int] = []
            assert ex.run([lambda: 1, lambda: 2, lambda: 3], on_result=seen.append) == [1, 2, 3]
            assert sorted(seen) == [0, 1, 2]
            with pytest.raises(ZeroDivisionError):
                ex.run([lambda: 1, lambda: 1 / 0, lambda: 3])
            lock = __import__("threading").Lock()
            with pytest.raises(TypeError, match="cannot be sent to the Dask workers"):
                ex.run([lambda: lock.locked()])
        assert client.status == "running"
        assert sum(client.run(_tasks_done).values()) > before  # the workers ran the draws
    assert json.dumps(remote.to_dict(), default=str) == json.dumps(local.to_dict(), default=str)


def _tasks_done(dask_worker) -> int:  # runs on each worker (client.run)
    return int(dask_worker.state.transition_counter)


def test_workers_of_other_versions_are_refused(cluster, monkeypatch):
    import importlib.metadata

    from metacog_metrics import distributed

    real = importlib.metadata.version
    # this process claims another NumPy; the worker processes keep theirs
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "0.0" if name == "numpy" else real(name)
    )
    with (
        pytest.raises(RuntimeError, match=r"numpy .* \(here 0.0\)"),
        distributed.dask_executor(cluster.scheduler_address),
    ):
        pass


def test_a_cluster_without_workers_is_a_clear_error(monkeypatch):
    _need_dask()
    from distributed import LocalCluster

    from metacog_metrics import distributed

    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", 1.0)
    with (
        LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty,
        pytest.raises(RuntimeError, match="has no workers"),
        distributed.dask_executor(empty.scheduler_address),
    ):
        pass


def test_an_analysis_with_a_scheduler_it_cannot_reach_fails_before_any_work(monkeypatch):
    _need_dask()
    from metacog_metrics import distributed

    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", 1.0)
    df = pd.DataFrame({"model": ["a", "b", "c"] * 12, "item_id": [f"q{i // 3}" for i in range(36)],
                       "confidence": [1.0, 0.0] * 18, "correct": [0.0, 1.0, 1.0] * 12})  # fmt: skip
    with pytest.raises(OSError):
        analyze_records(df, scheduler="tcp://127.0.0.1:9")
