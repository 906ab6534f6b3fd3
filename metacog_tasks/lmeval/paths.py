"""Where the metacog lm-eval task configs live (no lm-eval import)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["tasks_dir"]


def tasks_dir() -> Path:
    """The folder of the metacog task YAMLs, for ``--include_path``.

    Returns:
        ``metacog_tasks/task_configs`` inside site-packages for a wheel; ``task_configs/`` at
        the top of the repository for a source checkout.
    """
    spec = importlib.util.find_spec("metacog_tasks.task_configs")
    if spec is None or spec.origin is None:  # pragma: no cover - broken install
        raise FileNotFoundError("metacog_tasks.task_configs is not installed")
    return Path(spec.origin).resolve().parent
