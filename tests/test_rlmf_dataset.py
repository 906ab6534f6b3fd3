"""``metacog rlmf build`` on real lm-eval and Inspect logs of the simulated population."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from metacog_metrics.records import read_records
from metacog_tasks.benchmarks import get_benchmark

BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
ENV.pop("INSPECT_LOG_DIR", None)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{args[:3]}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """Inspect logs of three simulated models and lm-eval samples of a fourth (mathbench)."""
    root = tmp_path_factory.mktemp("rlmf-logs")
    _run(
        [
            str(BIN / "inspect"), "eval-set", "metacog_tasks/mathbench",
            "--model", "metacog-sim/m01,metacog-sim/m02,metacog-sim/m03",
            "-T", "data=bundled", "-T", "confidence=verbal,numeric",
            "--log-dir", "inspect", "--display", "none",
        ],
        root,
    )  # fmt: skip
    _run(
        [
            str(BIN / "metacog"), "lm-eval", "run", "--model", "metacog-sim",
            "--model_args", "model=m04,preset=paper,seed=0", "--tasks", "metacog_mathbench",
            "--metadata", json.dumps({"metacog_data": "bundled"}),
            "--output_path", "lmeval", "--log_samples",
        ],
        root,
    )  # fmt: skip
    _run([str(BIN / "metacog"), "collect", "inspect", "lmeval", "-o", "records.parquet"], root)
    return root


@pytest.mark.slow
def test_build_from_logs_round_trips(logs: Path, tmp_path: Path) -> None:
    from datasets import load_from_disk

    out = tmp_path / "data"
    proc = _run(
        [
            str(BIN / "metacog"), "rlmf", "build", str(logs / "inspect"), str(logs / "lmeval"),
            "-o", str(out), "--probe", "numeric", "--chat",
        ],
        tmp_path,
    )  # fmt: skip
    bench = get_benchmark("mathbench")
    items = {it.item_id: it for it in bench.load("bundled")}
    assert f"wrote {len(items)} rows" in proc.stdout

    ds = load_from_disk(str(out / "dataset"))
    jsonl = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert ds.to_list() == jsonl  # the two copies agree, row for row and field for field
    summary = json.loads((out / "build.json").read_text())
    assert summary["n_rows"] == len(items) and summary["n_insufficient"] == 0

    records = read_records(logs / "records.parquet")
    assert sorted(records["model"].unique()) == [
        "metacog-sim/m01", "metacog-sim/m02", "metacog-sim/m03", "metacog-sim/m04",
    ]  # fmt: skip
    solves = records.drop_duplicates(["model", "item_id"]).set_index(["item_id", "model"])
    for row in jsonl:
        item = items[row["item_id"]]
        assert row["prompt"][-1]["role"] == "user"
        assert row["prompt"][-1]["content"].startswith(bench.solve_prompt(item))
        assert "Confidence: C" in row["prompt"][-1]["content"]
        per_model = solves.loc[row["item_id"]]
        assert row["n_samples"] == 4
        assert row["accuracy"] == pytest.approx(per_model["correct"].mean())
        numeric = records[(records["item_id"] == row["item_id"]) & (records["probe"] == "numeric")]
        verbal = numeric[numeric["confidence_kind"].isin(["verbal_numeric", "verbal_binary"])]
        if len(verbal):
            assert row["stated_confidence"] == pytest.approx(verbal["confidence"].mean())
        # Intrinsic confidence by hand: the right answers are one class; the wrong ones group
        # by their (simulated, plain-number or letter) extracted answer.
        classes = Counter(
            "<right>" if y == 1.0 else f"wrong:{a}"
            for a, y in zip(per_model["answer"], per_model["correct"])
        )
        assert row["intrinsic_confidence"] == pytest.approx(
            sum((n / 4) ** 2 for n in classes.values())
        )
        assert row["n_answer_classes"] == len(classes)


def test_build_bad_inputs(tmp_path: Path) -> None:
    from rlmf_plugin.dataset import build_dataset

    with pytest.raises(FileNotFoundError, match="no-such"):
        build_dataset([tmp_path / "no-such"], tmp_path / "o")
    bad = tmp_path / "bad.csv"
    bad.write_text("model,item_id\nm,1\n")
    with pytest.raises(ValueError, match=r"bad\.csv"):
        build_dataset([bad], tmp_path / "o")
    table = tmp_path / "r.csv"
    pd.DataFrame(
        {
            "model": ["a", "b", "a"],
            "benchmark": ["squad", "squad", "squad"],
            "item_id": ["not-an-item", "not-an-item", "also-not"],
            "probe": ["prospective"] * 3,
            "confidence": [1.0, 0.0, 1.0],
            "confidence_kind": ["verbal_binary"] * 3,
            "correct": [1.0, 0.0, 1.0],
        }
    ).to_csv(table, index=False)
    with pytest.raises(ValueError, match=r"none of the 2 items is in source 'bundled'"):
        build_dataset([table], tmp_path / "o")


def test_build_keeps_and_counts_items_with_few_samples(tmp_path: Path) -> None:
    from rlmf_plugin.dataset import build_dataset

    bench = get_benchmark("squad")
    a, b = bench.load("bundled")[:2]
    rows = [
        ("m1", a.item_id, 1.0, 1.0),
        ("m2", a.item_id, 0.0, 1.0),
        ("m3", a.item_id, 1.0, 0.0),
        ("m1", b.item_id, 1.0, 1.0),
        ("m1", "missing-item", 1.0, 1.0),
    ]
    table = tmp_path / "r.csv"
    pd.DataFrame(
        [
            {
                "model": m, "benchmark": "squad", "item_id": i, "probe": "prospective",
                "confidence": c, "confidence_kind": "verbal_binary", "correct": y,
            }
            for m, i, c, y in rows
        ]
    ).to_csv(table, index=False)  # fmt: skip
    result = build_dataset([table], tmp_path / "o")
    assert (result.n_rows, result.n_insufficient, result.n_missing_items) == (2, 1, 1)
    assert result.missing_items == ("squad/missing-item",)
    lines = (tmp_path / "o" / "train.jsonl").read_text().splitlines()
    got = {r["item_id"]: r for r in map(json.loads, lines)}
    assert got[a.item_id]["accuracy"] == pytest.approx(2 / 3)
    assert got[a.item_id]["stated_confidence"] == pytest.approx(2 / 3)
    # two right (one class) and one wrong with no extracted answer (its own class)
    assert got[a.item_id]["intrinsic_confidence"] == pytest.approx((2 / 3) ** 2 + (1 / 3) ** 2)
    assert got[b.item_id]["accuracy"] is None and got[b.item_id]["intrinsic_confidence"] is None
    assert got[b.item_id]["n_samples"] == 1 and isinstance(got[b.item_id]["prompt"], str)


def test_build_counts_every_epoch_as_a_sample(tmp_path: Path) -> None:
    """A record table with an ``epoch`` column: one model's k answers are the k samples."""
    from rlmf_plugin.dataset import build_dataset

    bench = get_benchmark("squad")
    item = bench.load("bundled")[0]
    gold = bench.reference_response(item).split(": ", 1)[1]
    answers = [(gold, 1.0, 0.9), (gold, 1.0, 0.8), ("Lyon", 0.0, 0.4), ("lyon.", 0.0, 0.3),
               ("Nice", 0.0, 0.2)]  # fmt: skip
    pd.DataFrame(
        [{"model": "policy", "benchmark": "squad", "item_id": item.item_id, "probe": "numeric",
          "confidence": c, "confidence_kind": "verbal_numeric", "correct": y, "answer": a,
          "epoch": e} for e, (a, y, c) in enumerate(answers, start=1)]
    ).to_csv(tmp_path / "r.csv", index=False)  # fmt: skip
    build_dataset([tmp_path / "r.csv"], tmp_path / "o")
    row = json.loads((tmp_path / "o" / "train.jsonl").read_text().splitlines()[0])
    assert row["n_samples"] == 5 and row["accuracy"] == pytest.approx(0.4)
    assert row["stated_confidence"] == pytest.approx(0.52)
    # classes: right x2, "Lyon"/"lyon." (one answer under SQuAD's normaliser) x2, "Nice" x1
    assert row["intrinsic_confidence"] == pytest.approx((4 + 4 + 1) / 25)
    assert row["n_answer_classes"] == 3


def test_build_counts_ungraded_samples_wrong_and_shows_them(tmp_path: Path, capsys) -> None:
    """One right sample and three the grader could not grade (NaN): the item's accuracy is
    1/4, not 1 (ungraded is never silently right), the graded-only figure beside it, and the
    count is written and printed."""
    from metacog_tasks.cli import main

    bench = get_benchmark("squad")
    item = bench.load("bundled")[0]
    gold = bench.reference_response(item).split(": ", 1)[1]
    samples = [(gold, 1.0), ("Lyon", float("nan")), ("Lyon", float("nan")), (None, float("nan"))]
    pd.DataFrame(
        [{"model": f"m{e}", "benchmark": "squad", "item_id": item.item_id, "probe": "numeric",
          "confidence": 0.5, "confidence_kind": "verbal_numeric", "correct": y, "answer": a}
         for e, (a, y) in enumerate(samples)]
    ).to_csv(tmp_path / "r.csv", index=False)  # fmt: skip
    assert main(["rlmf", "build", str(tmp_path / "r.csv"), "-o", str(tmp_path / "o")]) == 0
    assert "3 ungraded samples in 1 items, counted wrong" in capsys.readouterr().out
    row = json.loads((tmp_path / "o" / "train.jsonl").read_text().splitlines()[0])
    assert (row["n_samples"], row["n_ungraded"]) == (4, 3)
    assert row["accuracy"] == pytest.approx(0.25) and row["accuracy_graded"] == 1.0
    # classes: the right answer, "Lyon" x2, the empty answer
    assert row["intrinsic_confidence"] == pytest.approx((1 + 4 + 1) / 16)
    built = json.loads((tmp_path / "o" / "build.json").read_text())
    assert (built["n_ungraded"], built["n_ungraded_items"]) == (3, 1)
