"""The benchmark READMEs' evaluation reports are what their generator computes today.

``docs/benchmarks/<name>.md`` quote figures (the simulated population's per-model accuracy,
yes-rate and AUROC; the grader on real model outputs). A change to a grader, a pack, the
simulator or the collector that moves one of them must regenerate the READMEs
(``tools/benchmark_report.py``); this test fails until it is done.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from metacog_tasks.benchmarks import BENCHMARK_NAMES, benchmark_class

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "benchmark_report", ROOT / "tools" / "benchmark_report.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_benchmark_has_a_readme_from_its_record():
    for name in BENCHMARK_NAMES:
        text = (ROOT / "docs" / "benchmarks" / f"{name}.md").read_text(encoding="utf-8")
        record = benchmark_class(name)
        assert text.startswith(f"# {record.title}\n"), name
        assert record.citation.strip() in text and record.data_license in text, name
        assert f"--tasks metacog_{name}" in text and f"metacog_tasks/{name}" in text, name


@pytest.mark.slow
def test_the_evaluation_reports_are_current(tmp_path, shared_dir, monkeypatch):
    from metacog_tasks.demo import run_demo

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # the records the READMEs name (the analysis settings do not change them)
    run_demo(
        tmp_path / "demo",
        benchmarks=list(BENCHMARK_NAMES),
        permutations=19,
        joint_permutations=9,
        verbose=False,
    )
    records = pd.read_parquet(tmp_path / "demo" / "lm-eval" / "records.parquet")
    gen = _generator()
    for name in BENCHMARK_NAMES:
        want = gen.readme(benchmark_class(name), records, shared_dir / "data", gen.REAL_OUTPUTS)
        have = (ROOT / "docs" / "benchmarks" / f"{name}.md").read_text(encoding="utf-8")
        assert have == want, f"docs/benchmarks/{name}.md is stale: rerun tools/benchmark_report.py"
