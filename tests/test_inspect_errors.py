"""``inspect eval metacog_tasks/...`` mistakes: one line, what to do, a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metacog_tasks.inspect_tasks.tasks import TaskSetupError, _unknown_task_hint, metacog_task

ENV = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


def _inspect(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("inspect")
    return subprocess.run(
        [str(script), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600
    )


def test_a_task_that_cannot_be_built_raises_one_line(tmp_path):
    with pytest.raises(TaskSetupError) as caught:
        metacog_task("squad", data=str(tmp_path / "absent"))
    text = str(caught.value)
    assert "\n" not in text and text.startswith("metacog_tasks/squad: data path not found")
    assert "-T data=bundled" in text and isinstance(caught.value, ValueError)
    with pytest.raises(TaskSetupError, match=r"metacog_tasks/squad: .*unknown probe 'retro'"):
        metacog_task("squad", probe="retro", data="bundled")


def test_unknown_task_names_get_the_nearest_ones():
    hint = _unknown_task_hint(["/venv/bin/inspect", "eval", "metacog_tasks/sqaud", "--limit", "1"])
    assert hint is not None and "did you mean metacog_tasks/squad?" in hint
    assert _unknown_task_hint(["inspect", "eval", "metacog_tasks/squad"]) is None
    assert _unknown_task_hint(["inspect", "eval", "metacog_tasks/metacog"]) is None
    assert _unknown_task_hint(["pytest", "eval", "metacog_tasks/sqaud"]) is None
    assert _unknown_task_hint(["inspect", "view", "metacog_tasks/sqaud"]) is None


def test_the_inspect_cli_offline_and_with_a_typo(tmp_path):
    proc = _inspect(
        "eval", "metacog_tasks/squad", "--model", "metacog-sim/m01", "--limit", "1", cwd=tmp_path
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    text = " ".join(out.split())
    assert "metacog_tasks/squad: cannot load the Hugging Face dataset" in text
    assert "run it on the bundled mini pack with -T data=bundled (offline)" in text
    proc = _inspect("eval", "metacog_tasks/sqaud", "--model", "metacog-sim/m01", cwd=tmp_path)
    assert proc.returncode != 0
    assert "no task 'sqaud'; did you mean metacog_tasks/squad?" in proc.stderr
