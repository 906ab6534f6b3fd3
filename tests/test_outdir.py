"""Output folders never lose a user's file: ``OutputFolder`` and ``metacog analyze --out``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.outdir import MANIFEST_NAME, OutputFolder, OutputFolderError
from metacog_tasks.cli import main

FAST = ["--permutations", "9", "--joint-permutations", "9", "--quiet"]


def _records(path: Path, n_models: int = 4, n_items: int = 30, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    rows = [
        {
            "model": f"m{m}",
            "item_id": f"q{i}",
            "confidence": int(rng.random() < 0.5),
            "correct": int(rng.random() < 0.5),
        }
        for m in range(n_models)
        for i in range(n_items)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_a_folder_of_the_users_files_is_refused_and_left_byte_identical(tmp_path, capsys):
    src = _records(tmp_path / "r.csv")
    out = tmp_path / "mine"
    (out / "tables").mkdir(parents=True)
    (out / "tables" / "mine.csv").write_text("a,b\n1,2\n")
    (out / "summary.json").write_text('{"mine": true}')
    before = _tree(out)
    assert main(["analyze", str(src), "--out", str(out), *FAST]) == 2
    err = capsys.readouterr().err
    assert "metacog did not write it" in err and "--overwrite" in err
    assert len(err.strip().splitlines()) == 1
    assert _tree(out) == before
    # --overwrite replaces the files of metacog's names, and removes nothing else
    assert main(["analyze", str(src), "--out", str(out), *FAST, "--overwrite"]) == 0
    assert (out / "tables" / "mine.csv").read_text() == "a,b\n1,2\n"
    assert "mine" not in json.loads((out / "summary.json").read_text())
    capsys.readouterr()
    # a later run (no --overwrite) owns what it wrote, and still leaves the user's file alone
    assert main(["analyze", str(src), "--out", str(out), *FAST, "--no-report"]) == 0
    assert (out / "tables" / "mine.csv").is_file() and not (out / "report.html").exists()


def test_reruns_remove_only_their_own_stale_outputs(tmp_path):
    four = _records(tmp_path / "four.csv")
    one = _records(tmp_path / "one.csv", n_models=1, seed=1)
    out = tmp_path / "o"
    assert main(["analyze", str(four), "--out", str(out), *FAST]) == 0
    first = set(_tree(out))
    assert "report.html" in first and MANIFEST_NAME in first
    (out / "notes.txt").write_text("the user's own")
    (out / "tables" / "extra.csv").write_text("x")
    assert main(["analyze", str(one), "--out", str(out), *FAST, "--no-report"]) == 0
    now = set(_tree(out))
    assert {"notes.txt", "tables/extra.csv"} <= now
    assert "report.html" not in now and "tables/all__unspecified__pairs.csv" in first - now
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert set(manifest["outputs"]["analyze"]) == now - {
        "notes.txt",
        "tables/extra.csv",
        MANIFEST_NAME,
    }


def test_a_file_the_user_changed_is_neither_replaced_nor_removed(tmp_path):
    src = _records(tmp_path / "r.csv")
    out = tmp_path / "o"
    assert main(["analyze", str(src), "--out", str(out), *FAST]) == 0
    (out / "summary.json").write_text("edited by hand")
    assert main(["analyze", str(src), "--out", str(out), *FAST]) == 2
    assert (out / "summary.json").read_text() == "edited by hand"
    # a stale output the user edited stays where it was
    folder = OutputFolder(out, "analyze")
    (out / "report.html").write_text("my notes on the report")
    assert folder.commit([rel for rel in folder.own if rel != "report.html"]) == []
    assert (out / "report.html").read_text() == "my notes on the report"


def test_writers_keep_to_their_own_files(tmp_path):
    a = OutputFolder(tmp_path / "o", "demo")
    a.claim(["records.parquet"])
    (tmp_path / "o" / "records.parquet").write_text("r")
    a.commit(["records.parquet"])
    b = OutputFolder(tmp_path / "o", "analyze")
    b.claim(["summary.json"])
    (tmp_path / "o" / "summary.json").write_text("s")
    assert b.commit(["summary.json"]) == []
    assert b.commit([]) == [tmp_path / "o" / "summary.json"]  # its own, now stale
    assert (tmp_path / "o" / "records.parquet").read_text() == "r"  # the other writer's


def test_an_interrupted_run_leaves_a_folder_the_next_run_owns(tmp_path):
    folder = OutputFolder(tmp_path / "o", "analyze")
    folder.claim(["summary.json"])
    (tmp_path / "o" / "summary.json").write_text("half")  # then Ctrl-C: no commit
    again = OutputFolder(tmp_path / "o", "analyze")
    again.claim(["summary.json"])  # pending in the manifest: ours
    assert again.commit([]) == [tmp_path / "o" / "summary.json"]


def test_bad_folders_are_named(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputFolderError, match="is a file"):
        OutputFolder(tmp_path / "f", "analyze")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / MANIFEST_NAME).write_text("not json")  # not a manifest: the user's
    with pytest.raises(OutputFolderError, match="metacog did not write it"):
        OutputFolder(tmp_path / "d", "analyze")
    OutputFolder(tmp_path / "empty", "analyze")  # absent: fine, and not created yet
    assert not (tmp_path / "empty").exists()


def test_a_relative_out_folder_keeps_its_outputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _records(tmp_path / "r.csv")
    for extra in ([], ["--no-report"], []):
        assert main(["analyze", "r.csv", "--out", "o", *FAST, *extra]) == 0
        assert (tmp_path / "o" / "summary.json").is_file()
        assert (tmp_path / "o" / "tables" / "per_model.csv").is_file()
    monkeypatch.chdir(tmp_path / "o")  # --out . from inside the folder
    assert main(["analyze", "../r.csv", "--out", ".", *FAST]) == 0
    assert (tmp_path / "o" / "summary.json").is_file() and (
        tmp_path / "o" / "report.html"
    ).is_file()
    with pytest.raises(OutputFolderError, match="not in the output folder"):
        OutputFolder(tmp_path / "o", "analyze").commit([tmp_path / "elsewhere.csv"])
