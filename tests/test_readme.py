"""The README's offline quick start, run as written, and the project files it points to."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import yaml

from metacog_tasks.benchmarks import benchmark_classes

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MARK = "<!-- quickstart: offline"


def _offline_blocks() -> list[str]:
    """The fenced bash blocks the README marks as offline (each right after its marker)."""
    blocks = re.findall(re.escape(MARK) + r"[^\n]*-->\n```bash\n(.*?)```", README, re.S)
    assert blocks, "the README marks no offline quick-start block"
    return blocks


@pytest.mark.slow
def test_the_offline_quick_start_runs_as_written(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CI", None)  # as a user's shell has it
    for block in _offline_blocks():
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
        assert proc.returncode == 0, f"{block}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    # what the block promises: records of both harnesses and an analysis of four models
    lm = pd.read_parquet(tmp_path / "records.parquet")
    assert lm["model"].nunique() == 4 and set(lm["benchmark"]) == {"squad", "mmlu_pro"}
    ins = pd.read_parquet(tmp_path / "inspect-records.parquet")
    assert ins["model"].nunique() == 3 and set(ins["harness"]) == {"inspect"}
    for name in ("summary.json", "report.html", ".metacog-manifest.json"):
        assert (tmp_path / "report" / name).is_file(), name


def test_the_quick_start_block_names_only_offline_sources():
    for block in _offline_blocks():
        assert "bundled" in block and "openai/" not in block and "--model hf" not in block


def test_licence_and_citation_files_agree_with_the_project():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    assert cff["version"] == meta["version"]
    assert "2605.24299" in cff["preferred-citation"]["url"]
    titles = {ref["title"] for ref in cff["references"]}
    third = (ROOT / "THIRD_PARTY_LICENSES.md").read_text()
    for record in benchmark_classes():
        paper_title = record.paper.split('"')[1]
        assert paper_title in titles, record.name
        assert f"| {record.title} |" in third, record.name
        assert (ROOT / "docs" / "benchmarks" / f"{record.name}.md").is_file(), record.name
