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
