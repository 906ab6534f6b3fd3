"""Every data file under ../shared/data/benchmarks is read by a loader (or grader input)."""

from __future__ import annotations

import json
from pathlib import Path

from metacog_tasks.benchmarks import get_benchmark


def test_every_shared_benchmark_file_is_read(benchmarks_dir: Path) -> None:
    read: set[Path] = set()

    def note(path: Path, n_items: int) -> None:
        assert n_items > 0, path
        read.add(path.resolve())

    squad = benchmarks_dir / "squad"
    for version in ("1.1", "2.0"):
        bench = get_benchmark("squad", version=version)
        folder = squad / f"v{version}"
        for f in (folder / "validation_sample.jsonl", folder / f"dev-v{version}.sample.json"):
            note(f, len(bench.load(f)))
        ids = {it.item_id for it in bench.load(folder / "validation_sample.jsonl")}
        for f in folder.glob("predictions.*.json"):
            note(f, len(set(json.loads(f.read_text())) & ids))
        note(
            folder / "expected_scores.json",
            len(json.loads((folder / "expected_scores.json").read_text())["scores"]),
        )
    mmlu = benchmarks_dir / "mmlu_pro"
    note(
        mmlu / "test_sample.jsonl", len(get_benchmark("mmlu_pro").load(mmlu / "test_sample.jsonl"))
    )
    outputs = [json.loads(x) for x in (mmlu / "model_outputs_sample.jsonl").open()]
    note(mmlu / "model_outputs_sample.jsonl", len(outputs))
    omni = benchmarks_dir / "omni_math" / "omni_math_rule_sample.jsonl"
    note(omni, len(get_benchmark("omni_math").load(omni)))
    legal = benchmarks_dir / "legalbench"
    for split, pattern in (("train", "train.jsonl"), ("test", "test_prerelease_sample.jsonl")):
        items = get_benchmark("legalbench").load(legal, split=split)
        tasks = {it.meta["task"] for it in items}
        for f in legal.glob(f"*/{pattern}"):
            assert f.parent.name in tasks
            note(f, sum(1 for it in items if it.meta["task"] == f.parent.name))
    sci = benchmarks_dir / "scicode"
    for name, split in (("problems_dev.jsonl", "validation"), ("problems_all.jsonl", "test")):
        note(sci / name, len(get_benchmark("scicode").load(sci, split=split)))

    data_files = {
        p.resolve() for p in benchmarks_dir.rglob("*") if p.is_file() and p.suffix != ".md"
    }
    assert data_files - read == set(), sorted(str(p) for p in data_files - read)
