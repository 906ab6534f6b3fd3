"""Atomic output: whole files, usual permissions, nothing left behind on failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from metacog_metrics._io import atomic_write, atomic_write_text


def test_atomic_write_text_replaces_with_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        target = atomic_write_text(tmp_path / "sub" / "a.json", "{}")
        assert target.read_text() == "{}"
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        atomic_write_text(target, "[1]")
        assert target.read_text() == "[1]"
    finally:
        os.umask(old)
    assert [p.name for p in target.parent.iterdir()] == ["a.json"]


def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path: Path) -> None:
    target = atomic_write_text(tmp_path / "t.csv", "old")

    def broken(tmp: str) -> None:
        Path(tmp).write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(target, broken)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


def test_atomic_write_uses_a_hidden_temporary_file_beside_the_target(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "r.json"  # two missing folder levels
    seen = []

    def writer(tmp: str) -> None:
        seen.append(Path(tmp))
        Path(tmp).write_text("{}")

    assert atomic_write(target, writer) == target and target.read_text() == "{}"
    (tmp_file,) = seen
    assert tmp_file.parent == target.parent  # same folder: os.replace is atomic there
    assert tmp_file.name.startswith(".r.json.") and tmp_file.name.endswith(".tmp")


def test_atomic_write_gives_0644_under_umask_022(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        target = atomic_write_text(tmp_path / "p.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_writer_that_removed_its_file_keeps_its_own_error(tmp_path: Path) -> None:
    def gone(tmp: str) -> None:
        Path(tmp).unlink()
        raise RuntimeError("writer failed")

    with pytest.raises(RuntimeError, match="writer failed"):
        atomic_write(tmp_path / "t.csv", gone)
    assert list(tmp_path.iterdir()) == []
