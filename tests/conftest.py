"""Shared fixtures: the ../shared folder beside the repository (read-only real data).

Locally a missing ../shared (or a missing sandbox boundary) skips the tests that need it, with
the reason. Under CI (``CI`` set) it fails them instead: a run that silently skipped the R
references, the official scores or the isolation checks must not pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.availability import unavailable

# CI runs the same examples every time (a red run must be reproducible); a local run keeps
# exploring new ones. Either way a failing example is printed with its inputs.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

REPO = Path(__file__).resolve().parents[1]


def shared_path() -> Path:
    """The shared folder: $METACOG_SHARED, else ../shared beside the repository."""
    return Path(os.environ.get("METACOG_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = shared_path()
    if not path.is_dir():
        unavailable(f"shared data folder not found at {path} (set METACOG_SHARED)")
    return path


@pytest.fixture(scope="session")
def stats_reference(shared_dir: Path) -> dict:
    import json

    path = shared_dir / "reference" / "stats_reference.json"
    if not path.is_file():
        unavailable(f"{path} not found")
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def benchmarks_dir(shared_dir: Path) -> Path:
    path = shared_dir / "data" / "benchmarks"
    if not path.is_dir():
        unavailable(f"{path} not found")
    return path


@pytest.fixture(scope="session")
def realruns_dir(shared_dir: Path) -> Path:
    path = shared_dir / "data" / "realruns"
    if not path.is_dir():
        unavailable(f"{path} not found")
    return path
