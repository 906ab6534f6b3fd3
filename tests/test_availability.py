"""Missing test prerequisites: a skip with the reason locally, a failure under CI."""

from __future__ import annotations

import pytest

from tests.availability import unavailable


def test_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no bubblewrap"):
        unavailable("no bubblewrap")


def test_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match=r"no bubblewrap\. Under CI this is a failure"):
        unavailable("no bubblewrap")


def test_shared_fixture_fails_under_ci(tmp_path) -> None:
    # A test using the shared_dir fixture, run by a fresh pytest with ../shared absent.
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    (tmp_path / "conftest.py").write_text("from tests.conftest import shared_dir  # noqa: F401\n")
    (tmp_path / "test_x.py").write_text("def test_needs_shared(shared_dir):\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(METACOG_SHARED=str(tmp_path / "absent"), PYTHONPATH=str(REPO))

    def run(**extra: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "test_x.py"]
        return subprocess.run(
            cmd, cwd=tmp_path, env={**env, **extra}, capture_output=True, text=True, timeout=120
        )

    local = run()
    assert local.returncode == 0 and "1 skipped" in local.stdout, local.stdout
    ci = run(CI="1")
    assert ci.returncode == 1 and "1 error" in ci.stdout, ci.stdout
    assert "Under CI this is a failure" in ci.stdout
