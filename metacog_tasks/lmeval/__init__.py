"""The lm-eval adapter: class-based tasks, their aggregations, the simulated model, a runner.

* :class:`MetacogTask`: the task behind ``metacog_<bench>`` / ``metacog_<bench>_cf`` (YAMLs in
  :func:`tasks_dir`, group ``metacog``, tags ``metacognition_probe``,
  ``metacognition_prospective``, ``metacognition_counterfactual``);
* :mod:`~metacog_tasks.lmeval.metrics`: the aggregations the tasks reference;
* :class:`MetacogSimLM`: the lm-eval model ``metacog-sim`` (registered on import of
  :mod:`metacog_tasks.lmeval.models`);
* :func:`run_lmeval`: many models, one process, outputs as the CLI writes them;
* :func:`run_lm_eval_cli`: ``metacog lm-eval``.
"""

from typing import Any

from metacog_tasks.lmeval.options import (
    CONFIDENCE_CHOICES,
    KIND_NAMES,
    OptionsError,
    TaskOptions,
    parse_confidence_option,
)
from metacog_tasks.lmeval.paths import tasks_dir
from metacog_tasks.lmeval.runner import LMEvalRun, run_lmeval
from metacog_tasks.lmeval.wrapper import merge_include_path, run_lm_eval_cli

__all__ = [
    "CONFIDENCE_CHOICES",
    "KIND_NAMES",
    "LOGPROB_PREFIX",
    "LMEvalRun",
    "MetacogSimLM",
    "MetacogTask",
    "OptionsError",
    "TaskDataError",
    "TaskOptions",
    "merge_include_path",
    "parse_confidence_option",
    "run_lm_eval_cli",
    "run_lmeval",
    "tasks_dir",
]

# The task and model modules import lm-eval (about a second); load them on first use so that
# `metacog include-path` and `metacog collect` stay quick. Importing `models` registers
# `metacog-sim` with lm-eval.
_LAZY = {
    "LOGPROB_PREFIX": "metacog_tasks.lmeval.task",
    "MetacogTask": "metacog_tasks.lmeval.task",
    "TaskDataError": "metacog_tasks.lmeval.task",
    "MetacogSimLM": "metacog_tasks.lmeval.models",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
