"""Gate baseline files: what is written, what is read back, the content hash that refuses any
edit, repeats, and every refusal, by hand."""

from __future__ import annotations

import hashlib
import json
import platform
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.gate import GateConfig, gate_records
from metacog_metrics.gate.baseline import (
    content_hash,
    is_baseline_file,
    read_baseline,
    stack_repeats,
    template_versions,
    version_warnings,
    write_baseline,
)
from metacog_metrics.records import RecordError, validate_records


def _exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


def _records(model: str = "m1") -> pd.DataFrame:
    rows = [
        # benchmark, probe, item, confidence, correct, prompt hash, task version
        ("squad", "prospective", "s2", 1.0, 1.0, "p1", "1.0"),
        ("squad", "prospective", "s1", 0.0, np.nan, "p2", "1.0"),
        ("mmlu_pro", "prospective", "q1", np.nan, 0.0, None, "2.0"),
        ("mmlu_pro", "prospective", "q2", 1.0, 1.0, None, "2.1"),
    ]
    columns = ["benchmark", "probe", "item_id", "confidence", "correct", "prompt_hash"]
    df = pd.DataFrame(rows, columns=[*columns, "task_version"])
    return validate_records(df.assign(model=model))


def test_the_file_is_a_header_then_one_record_per_line(tmp_path: Path) -> None:
    cfg = GateConfig(n_boot=300, seed=1)
    path = tmp_path / "b.json"
    versions = {"lm_eval": "0.4.13", "inspect_ai": "0.3"}
    written = write_baseline(
        _records(), path, config=cfg, versions=versions, sources=["runs/a", Path("runs/b")]
    )
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    # sorted by benchmark, probe, kind and item; columns: the baseline's, in its order, those
    # with a value (no probe_status, grade_status, harness or doc_hash here)
    assert data["columns"] == [
        *("benchmark", "probe", "confidence_kind", "item_id", "confidence", "correct"),
        *("prompt_hash", "task_version"),
    ]
    assert data["records"] == [
        ["mmlu_pro", "prospective", "verbal_binary", "q1", None, 0.0, None, "2.0"],
        ["mmlu_pro", "prospective", "verbal_binary", "q2", 1.0, 1.0, None, "2.1"],
        ["squad", "prospective", "verbal_binary", "s1", 0.0, None, "p2", "1.0"],
        ["squad", "prospective", "verbal_binary", "s2", 1.0, 1.0, "p1", "1.0"],
    ]
    assert text.endswith("\n  ]\n}\n")
    assert (
        '\n    ["mmlu_pro", "prospective", "verbal_binary", "q1", null, 0.0, null, "2.0"],\n'
        in text
    )
    assert data["format"] == "metacog-gate-baseline" and data["format_version"] == 2
    body = {k: v for k, v in data.items() if k != "content_sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert data["content_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert written.content_sha256 == data["content_sha256"] == content_hash(data)
    assert data["model"] == "m1" and data["n_records"] == 4
    assert data["versions"] == {"inspect_ai": "0.3", "lm_eval": "0.4.13"}
    assert list(data["versions"]) == ["inspect_ai", "lm_eval"]  # sorted
    assert data["templates"] == {
        "mmlu_pro/prospective": {"task_version": "2.0, 2.1", "prompt_hashes": None},
        "squad/prospective": {"task_version": "1.0", "prompt_hashes": 2},
    }
    settings = {k: v for k, v in data["config"].items() if k != "max_annotations"}
    compact = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    expected_fp = hashlib.sha256(compact.encode()).hexdigest()
    assert data["config_fingerprint"] == expected_fp == cfg.fingerprint()
    assert data["config"]["n_boot"] == 300 and data["config"]["seed"] == 1
    assert data["sources"] == ["runs/a", "runs/b"]
    assert data["blessed_with"]["python"] == platform.python_version()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", data["created"])
    assert written.path == str(path) and written.created == data["created"]
    assert written.sources == ("runs/a", "runs/b") and written.model == "m1"

    back = read_baseline(path)
    assert back.path == str(path) and back.model == "m1"
    assert back.versions == {"inspect_ai": "0.3", "lm_eval": "0.4.13"}
    assert back.templates == data["templates"] and back.config == data["config"]
    assert back.config_fingerprint == expected_fp and back.created == data["created"]
    assert back.blessed_with == data["blessed_with"] and back.sources == ("runs/a", "runs/b")
    assert sorted(back.records["item_id"]) == ["q1", "q2", "s1", "s2"]
    assert (back.records["model"] == "m1").all()


def test_a_default_config_and_no_versions(tmp_path: Path) -> None:
    b = write_baseline(_records(), tmp_path / "b.json")
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["config_fingerprint"] == GateConfig().fingerprint()
    assert data["versions"] == {} and data["sources"] == [] and b.versions == {}


def test_bless_refusals(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match=_exact("nothing to bless: the run holds no records")):
        write_baseline(_records().iloc[:0], tmp_path / "b.json")
    six = pd.concat([_records(f"m{i}") for i in range(6, 0, -1)])
    with pytest.raises(
        RecordError,
        match=_exact(
            "a baseline holds one model; the run holds 6 (m1, m2, m3, m4, m5, ...): "
            "choose one with --model"
        ),
    ):
        write_baseline(six, tmp_path / "b.json")
    with pytest.raises(
        RecordError,
        match=_exact(
            "a baseline holds one model; the run holds 2 (m1, m2): choose one with --model"
        ),
    ):
        write_baseline(pd.concat([_records("m2"), _records("m1")]), tmp_path / "b.json")
    assert not (tmp_path / "b.json").exists()


def test_baseline_files_are_recognised_by_their_first_bytes(tmp_path: Path) -> None:
    write_baseline(_records(), tmp_path / "b.json")
    assert is_baseline_file(tmp_path / "b.json")
    upper = tmp_path / "B.JSON"
    upper.write_bytes((tmp_path / "b.json").read_bytes())
    assert is_baseline_file(upper)
    other = tmp_path / "b.txt"
    other.write_bytes((tmp_path / "b.json").read_bytes())
    assert not is_baseline_file(other)  # not .json
    assert not is_baseline_file(tmp_path / "missing.json")
    assert not is_baseline_file(tmp_path)
    late = tmp_path / "late.json"
    late.write_text(" " * 600 + '{"format": "metacog-gate-baseline"}')
    assert not is_baseline_file(late)  # beyond the first 512 bytes
    (tmp_path / "r.json").write_text('[{"format": "something else"}]')
    assert not is_baseline_file(tmp_path / "r.json")


def _write(tmp_path: Path, data, *, rehash: bool = True) -> Path:
    """``data`` as a baseline file, its content hash recomputed unless ``rehash`` is False."""
    path = tmp_path / "x.json"
    if isinstance(data, dict) and rehash:
        data = {**data, "content_sha256": content_hash(data)}
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


GOOD = {
    "format": "metacog-gate-baseline",
    "format_version": 2,
    "model": "m",
    "n_records": 1,
    "columns": ["benchmark", "probe", "confidence_kind", "item_id", "confidence", "correct"],
    "records": [["squad", "prospective", "verbal_binary", "a", 1.0, 1.0]],
}


def test_any_edit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    write_baseline(_records(), path)
    text = path.read_text()
    assert read_baseline(path).model == "m1"
    edits = [
        text.replace('"s2", 1.0, 1.0', '"s2", 0.0, 1.0'),  # a confidence
        text.replace('"model": "m1"', '"model": "m2"'),  # the header
        text.replace('"n_boot": 2000', '"n_boot": 2001'),  # the recorded config
    ]
    for edited in edits:
        assert edited != text
        path.write_text(edited)
        with pytest.raises(RecordError, match="the content does not match its content_sha256"):
            read_baseline(path)
    # a record dropped and the count fixed: passed the old structural checks, not the hash
    data = json.loads(text)
    data["records"], data["n_records"] = data["records"][:-1], data["n_records"] - 1
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match="the file was edited"):
        read_baseline(path)
    # layout and line endings are not content
    path.write_text(json.dumps(json.loads(text)).replace("\n", "\r\n"))
    assert read_baseline(path).model == "m1"


def test_a_hand_edited_baseline_cannot_turn_a_failing_candidate_into_a_pass(tmp_path) -> None:
    y = (np.arange(200) % 2).astype(float)
    base = validate_records(
        pd.DataFrame(
            {"model": "b", "item_id": [f"q{i}" for i in range(200)], "confidence": y, "correct": y}
        )
    )
    cand = base.assign(model="c", confidence=np.where(np.arange(200) < 60, 1 - y, y))
    assert gate_records(base, cand).exit_code == 1
    path = tmp_path / "b.json"
    write_baseline(base, path)
    data = json.loads(path.read_text())
    data["records"] = [[*r[:4], 1.0, r[5]] for r in data["records"]]  # confidence 1 everywhere
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match="edited"):
        read_baseline(path)


def test_repeats_are_kept_and_read_back(tmp_path: Path) -> None:
    runs = [_records(), _records().assign(confidence=[0.0, 1.0, np.nan, 0.0])]
    stacked = stack_repeats(runs)
    assert stacked["repeat"].tolist() == [0] * 4 + [1] * 4
    write_baseline(stacked, tmp_path / "b.json")
    data = json.loads((tmp_path / "b.json").read_text())
    assert "repeat" in data["columns"] and data["n_records"] == 8
    back = read_baseline(tmp_path / "b.json")
    assert sorted(back.records["repeat"].tolist()) == [0] * 4 + [1] * 4
    assert stack_repeats(runs[:1]) is runs[0]


def test_read_refusals_name_the_file_and_the_problem(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_baseline(tmp_path / "missing.json")
    path = _write(tmp_path, "{not json")
    with pytest.raises(RecordError, match=f"^{re.escape(str(path))}: not a readable gate baseline"):
        read_baseline(path)
    fmt = '(no "format": "metacog-gate-baseline")'
    for data in ([1, 2], {"format": "other"}):
        path = _write(tmp_path, data)
        with pytest.raises(RecordError, match=_exact(f"{path}: not a gate baseline {fmt}")):
            read_baseline(path)
    path = _write(tmp_path, {**GOOD, "format_version": 1})
    with pytest.raises(RecordError, match="format_version 1; this metacog-eval reads version 2"):
        read_baseline(path)
    path = _write(tmp_path, GOOD, rehash=False)
    with pytest.raises(RecordError, match=r"content_sha256 \(the hash is missing\)"):
        read_baseline(path)
    lists = f'{path}: a baseline needs "columns" and "records" lists'
    for key in ("columns", "records"):
        path = _write(tmp_path, {**GOOD, key: "x"})
        with pytest.raises(RecordError, match=_exact(lists)):
            read_baseline(path)
    path = _write(tmp_path, {**GOOD, "columns": [*GOOD["columns"][:3], "correct"]})
    with pytest.raises(RecordError, match="baseline columns lack item_id, confidence"):
        read_baseline(path)
    path = _write(tmp_path, {**GOOD, "records": [*GOOD["records"], ["squad"]]})
    with pytest.raises(RecordError, match="record 2 has 1 fields, the header names 6"):
        read_baseline(path)
    path = _write(tmp_path, {**GOOD, "n_records": 3})
    with pytest.raises(RecordError, match="the header says 3 records, the file holds 1"):
        read_baseline(path)
    for model in (None, ""):
        path = _write(tmp_path, {**GOOD, "model": model})
        with pytest.raises(RecordError, match=_exact(f"{path}: the baseline names no model")):
            read_baseline(path)
    bad_kind = [["squad", "prospective", "verbal_binary", "a", 0.5, 1.0]]
    path = _write(tmp_path, {**GOOD, "records": bad_kind})
    with pytest.raises(RecordError, match=re.escape(f"{path} (records): confidence_kind")):
        read_baseline(path)
    minimal = read_baseline(_write(tmp_path, GOOD))
    assert (minimal.versions, minimal.templates, minimal.config) == ({}, {}, {})
    assert (minimal.config_fingerprint, minimal.created, minimal.sources) == ("", "", ())


def test_template_versions_without_hashes_or_versions() -> None:
    recs = _records()[["model", "benchmark", "probe", "item_id", "confidence", "correct"]]
    assert template_versions(validate_records(recs)) == {
        "mmlu_pro/prospective": {"task_version": None, "prompt_hashes": None},
        "squad/prospective": {"task_version": None, "prompt_hashes": None},
    }


def test_version_warnings_by_hand() -> None:
    tail = "(a harness or package change can move the metrics by itself)"
    assert version_warnings(
        {"lm_eval": "0.4.13", "inspect_ai": "0.3", "metacog-eval": "1"},
        {"lm_eval": "0.4.14", "inspect_ai": "0.3", "trl": "0.9"},
    ) == [
        f"lm_eval version differs: baseline 0.4.13, candidate 0.4.14 {tail}",
        "the candidate's logs do not state metacog-eval; not compared",
    ]
    assert version_warnings({"b": "2", "a": "1"}, {}) == [
        "the candidate states no software versions (a record table?); the baseline's "
        "(a 1, b 2) were not compared"
    ]
    assert version_warnings({}, {"lm_eval": "1"}) == []
    assert version_warnings({"lm_eval": ""}, {"lm_eval": "1"}) == []  # an empty version: unknown
    one, two = {"task_version": "1"}, {"task_version": "2"}
    got = version_warnings(
        {},
        {},
        baseline_templates={"a/p": one, "b/p": one, "c/p": {"task_version": None}, "d/p": one},
        candidate_templates={"a/p": two, "b/p": one, "c/p": two},
    )
    assert got == ["a/p: task (template/grader) version differs: baseline 1, candidate 2"]
