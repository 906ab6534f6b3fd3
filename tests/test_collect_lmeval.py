"""``metacog collect`` on lm-eval output trees: records, model names, bad lines, superseded runs."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from metacog_tasks.benchmarks import get_benchmark
from metacog_tasks.collect import CollectResult, collect, parse_renames
from metacog_tasks.collect.lmeval import read_lmeval
from metacog_tasks.lmeval import run_lmeval
from metacog_tasks.parsing import parse_yes_no

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

TASKS = ["metacog_mmlu_pro", "metacog_squad_cf"]
META = {"metacog_data": "bundled"}


def _sim(member: str) -> dict:
    return {"model": "metacog-sim", "model_args": f"model={member},preset=paper,seed=0"}


@pytest.fixture(scope="module")
def lm_runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lmeval-out")
    run_lmeval([_sim("m01"), _sim("m02")], TASKS, output_path=out, metadata=META, limit=6)
    return out


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "runs"
    shutil.copytree(src, dst)
    return dst


def test_records_from_a_population_run(lm_runs: Path) -> None:
    result = read_lmeval(sorted(lm_runs.rglob("*.json*")))
    df = result.records
    assert result.n_bad == 0 and not result.warnings
    assert sorted(df["model"].unique()) == ["metacog-sim/m01", "metacog-sim/m02"]
    assert set(df["confidence_kind"]) == {"verbal_binary", "logprob"}
    assert set(df["harness"]) == {"lm-eval"}
    mmlu = get_benchmark("mmlu_pro")
    items = {i.item_id: i for i in mmlu.load("bundled")}
    rows = df[(df["benchmark"] == "mmlu_pro") & (df["confidence_kind"] == "verbal_binary")]
    assert sorted(rows["item_id"].unique()) == sorted(list(items)[:6])
    # Correctness is the simulated model's latent state (right or wrong by construction),
    # read back through the harness, the grader and the collector; verbal confidence is the
    # probe parser's reading of the logged reply.
    from metacog_tasks.sim import SimResponder

    sims = {
        f"metacog-sim/{m}": SimResponder(m, preset="paper", seed=0, benchmarks=["mmlu_pro"])
        for m in ("m01", "m02")
    }
    for row in rows.itertuples():
        cell = sims[row.model].cell("mmlu_pro", row.item_id, "prospective")
        assert row.correct == float(cell["correct"])
        assert row.confidence == float(cell["confidence"])
        parsed = parse_yes_no(row.probe_text)
        assert (math.isnan(row.confidence) and not parsed.ok) or row.confidence == parsed.confidence
    squad = df[df["benchmark"] == "squad"]
    assert set(squad["probe"]) == {"counterfactual"}
    # One doc, two kinds: 6 items x 2 tasks x 2 kinds x 2 models.
    assert len(df) == 6 * 2 * 2 * 2


def test_logprob_confidence_is_p_yes_from_the_logged_loglikelihoods(lm_runs: Path) -> None:
    path = next(lm_runs.rglob("samples_metacog_mmlu_pro_*.jsonl"))
    line = json.loads(path.read_text().splitlines()[0])
    ll_yes = float(line["resps"][2][0][0])
    ll_no = float(line["resps"][3][0][0])
    p_yes = 1 / (1 + math.exp(ll_no - ll_yes))
    df = read_lmeval([path]).records
    row = df[(df["item_id"] == line["record"]["item_id"]) & (df["confidence_kind"] == "logprob")]
    assert row["confidence"].item() == pytest.approx(p_yes, rel=1e-9)


def test_bad_lines_are_counted_and_reported_not_dropped_silently(
    lm_runs: Path, tmp_path: Path
) -> None:
    runs = _copy(lm_runs, tmp_path)
    path = next(runs.rglob("samples_metacog_mmlu_pro_*.jsonl"))
    lines = path.read_text().splitlines()
    good = json.loads(lines[0])
    no_id = json.loads(lines[1])
    del no_id["record"]["item_id"]
    bad_conf = json.loads(lines[2])
    bad_conf["record"]["confidence"]["logprob"]["confidence"] = 1.7
    lines[1] = json.dumps(no_id)
    lines[2] = json.dumps(bad_conf)
    lines.insert(3, '{"doc_id": 3, "record": {"item_id": ')  # truncated write
    lines.append(json.dumps(good))  # the same item twice
    path.write_text("\n".join(lines) + "\n")

    result = read_lmeval(sorted(runs.rglob("*.json*")))
    report = next(f for f in result.files if f.path == str(path))
    assert report.n_lines == 8 and report.n_bad == 4
    assert report.n_records == 4 * 2  # four good lines, two kinds each
    joined = "\n".join(report.errors)
    for expected in (
        "line 2: record lacks `item_id`",
        "line 3: confidence['logprob'] = 1.7 is outside [0, 1]",
        "line 4: invalid JSON",
        "line 8: item_id",
    ):
        assert expected in joined
    text = result.report_text()
    assert "4 bad of 8" in text and "line 4: invalid JSON" in text


def test_other_tasks_are_skipped_with_a_reason(lm_runs: Path, tmp_path: Path) -> None:
    runs = _copy(lm_runs, tmp_path)
    results_path = next(runs.rglob("results_*.json"))
    data = json.loads(results_path.read_text())
    date_id = results_path.stem.split("_", 1)[1]
    data["configs"]["mmlu_pro_math"] = {"task": "mmlu_pro_math", "metadata": {"version": 3.1}}
    results_path.write_text(json.dumps(data))
    foreign = results_path.parent / f"samples_mmlu_pro_math_{date_id}.jsonl"
    foreign.write_text(json.dumps({"doc_id": 0, "filter": "custom-extract", "exact_match": 1}))
    result = read_lmeval(sorted(runs.rglob("*.json*")))
    report = next(f for f in result.files if f.path == str(foreign))
    assert report.skipped == "not a metacog task" and report.n_bad == 0
    assert "skipped" in result.report_text()


def test_rerun_is_deterministic_and_supersedes_the_first(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_lmeval([_sim("m03")], ["metacog_mmlu_pro"], output_path=out, metadata=META, limit=5)
    second = run_lmeval(
        [_sim("m03")], ["metacog_mmlu_pro"], output_path=out, metadata=META, limit=5
    )
    assert first[0].results_path != second[0].results_path
    a = read_lmeval([Path(first[0].samples_paths[0])]).records
    b = read_lmeval([Path(second[0].samples_paths[0])]).records
    cols = [c for c in a.columns if c != "source"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    result = read_lmeval(sorted(out.rglob("*.json*")))
    superseded = [f for f in result.files if f.skipped and "superseded" in f.skipped]
    assert [f.path for f in superseded] == [first[0].samples_paths[0]]
    assert len(result.records) == len(b)
    everything = read_lmeval(sorted(out.rglob("*.json*")), latest_only=False)
    assert len(everything.records) == 2 * len(b)


def test_samples_without_their_results_file_are_named_after_the_folder(
    lm_runs: Path, tmp_path: Path
) -> None:
    runs = _copy(lm_runs, tmp_path)
    for p in runs.rglob("results_*.json"):
        p.unlink()
    result = read_lmeval(sorted(runs.rglob("*.jsonl")))
    assert set(result.records["model"]) == {"m01", "m02"}  # lm-eval's folder names
    assert any("no results file" in w for w in result.warnings)


def test_json_output_path_layout_and_nan_tokens(tmp_path: Path) -> None:
    target = tmp_path / "single" / "run.json"
    runs = run_lmeval(
        [_sim("m04")], ["metacog_mmlu_pro"], output_path=target, metadata=META, limit=3
    )
    results_path = Path(runs[0].results_path)
    assert results_path.parent == target.parent and results_path.name.startswith("run_")
    text = results_path.read_text()
    assert "NaN" in text or "null" in text  # lm-eval writes bare NaN for undefined metrics
    result = read_lmeval([results_path])
    assert set(result.records["model"]) == {"metacog-sim/m04"}
    assert len(result.records) == 3 * 2


def test_parse_renames() -> None:
    assert parse_renames(["a=b", " c = d "]) == {"a": "b", "c": "d"}
    for bad in ("a", "=b", "a="):
        with pytest.raises(ValueError, match="OLD=NEW"):
            parse_renames([bad])


def test_collect_validates_renames_and_merges(lm_runs: Path) -> None:
    result = collect([lm_runs], rename={"metacog-sim/m01": "sim-one"})
    assert isinstance(result, CollectResult)
    assert result.models == ["metacog-sim/m02", "sim-one"]
    assert result.records["item_id"].map(type).eq(str).all()
    assert "sim-one" in result.report_text()


def _metacog(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "metacog_tasks.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
    )


def test_collect_cli_writes_the_record_table(lm_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "records.parquet"
    proc = _metacog(
        "collect", str(lm_runs), "-o", str(out), "--rename", "metacog-sim/m02=two", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "48 records" in proc.stdout and f"wrote 48 records to {out}" in proc.stdout
    df = pd.read_parquet(out)
    assert sorted(df["model"].unique()) == ["metacog-sim/m01", "two"]
    assert len(df) == 48


def test_collect_cli_fails_only_when_nothing_was_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _metacog("collect", str(empty), "-o", str(tmp_path / "r.csv"), cwd=tmp_path)
    assert proc.returncode == 1
    assert "no records read" in proc.stderr and "no lm-eval or Inspect logs" in proc.stdout
    assert not (tmp_path / "r.csv").exists()
