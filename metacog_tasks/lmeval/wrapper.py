"""``metacog lm-eval ARGS...``: lm-eval's own CLI with the metacog tasks and models added.

lm-eval 0.4.13 discovers neither external tasks nor external models. This wrapper registers
``metacog-sim`` (after lm-eval's built-in model table, so ``hf``, ``vllm`` etc. still load),
adds the metacog task folder to ``--include_path`` (a user's own ``--include_path`` is kept and
indexed after it, so it can override a metacog task), and hands over to lm-eval's CLI. Every
lm-eval subcommand and flag works as documented by lm-eval (``run``, ``ls``, ``validate``; the
legacy form without a subcommand means ``run``).

When every task asked for is a metacog one (``metacog``, ``metacog_*``, ``metacognition_*``) and
no other ``--include_path`` is given, ``run`` and ``validate`` index only the metacog folder
instead of lm-eval's ~15k built-in configs (about 10-20 s saved per call; the results are the
same). Set ``METACOG_LMEVAL_FULL_INDEX=1`` to index everything anyway.

Mistakes that would waste a run end before it starts, in one line with a non-zero exit: a
metacog task or a model name that does not exist (with the nearest names), a run of metacog
tasks without ``--output_path`` (``--log_samples`` is added when it is missing: the per-item
samples are what ``metacog collect`` reads), and a backend whose optional extra is not
installed (``--model hf`` without torch).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import fnmatch
import functools
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from metacog_tasks._extras import missing_extra_message
from metacog_tasks.lmeval.paths import tasks_dir

__all__ = ["merge_include_path", "metacog_task_names", "run_lm_eval_cli"]

_NO_LOGLIK_HINT = (
    "this lm-eval backend has no log-likelihoods (chat APIs); ask only verbal confidence with "
    '--metadata \'{"metacog_confidence": "verbal"}\''
)


def merge_include_path(user: str | Sequence[str] | None) -> str | list[str]:
    """The metacog task folder first, then the user's include path(s), without repeats.

    Args:
        user: The ``--include_path`` given, if any.

    Returns:
        One folder, or a list (lm-eval's TaskManager takes both).
    """
    ours = str(tasks_dir())
    if not user:
        return ours
    given = [user] if isinstance(user, str) else list(user)
    paths = [ours]
    for p in given:
        if p and p not in paths:
            paths.append(str(p))
    return paths if len(paths) > 1 else ours


_METACOG_TASK = re.compile(r"^metacog(nition)?([_*?\[].*)?$")


def _task_names(tasks: object) -> list[str]:
    """The names and patterns ``--tasks`` gives (a list, or comma-separated)."""
    if not tasks:
        return []
    items = tasks if isinstance(tasks, list | tuple) else [tasks]
    return [n.strip() for item in items for n in str(item).split(",") if n.strip()]


def _only_metacog_tasks(tasks: object) -> bool:
    """Whether ``--tasks`` names only metacog tasks, groups, tags or patterns."""
    names = _task_names(tasks)
    return bool(names) and all(_METACOG_TASK.match(n) for n in names)


def _any_metacog_task(tasks: object) -> bool:
    return any(_METACOG_TASK.match(n) for n in _task_names(tasks))


_NAME_LINE = re.compile(r"^(?:task|group|\s+-)\s*:?\s*(metacog\w*)\s*$", re.MULTILINE)


def metacog_task_names() -> list[str]:
    """Every task, group and tag name the metacog task folder defines, sorted."""
    found: set[str] = set()
    for path in tasks_dir().iterdir():
        if path.suffix == ".yaml" or path.name == "_default_template_yaml":
            found.update(_NAME_LINE.findall(path.read_text(encoding="utf-8")))
    return sorted(found)


def _suggest(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _unknown_metacog_tasks(tasks: object) -> list[str]:
    """The metacog names or patterns of ``--tasks`` that match no metacog task, group or tag."""
    known = metacog_task_names()
    return [
        n
        for n in _task_names(tasks)
        if _METACOG_TASK.match(n) and not any(fnmatch.fnmatchcase(k, n) for k in known)
    ]


class _Refusal(Exception):
    """A mistake found before the run: printed in one line, exit 2."""


def _check_model(name: str | None) -> None:
    from lm_eval.api.registry import get_model, model_registry

    if not name:
        return
    try:
        get_model(name)
    except ValueError:
        known = sorted(model_registry.keys())
        hint = _suggest(name, known)  # the full list (some 40 names) only without a suggestion
        raise _Refusal(
            f"no lm-eval model {name!r}{hint or '; lm-eval has ' + ', '.join(known)}"
        ) from None


def _config_file(args: argparse.Namespace) -> dict:
    """The ``--config`` YAML's keys (empty without one)."""
    path = getattr(args, "config", None)
    if not path:
        return {}
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}  # lm-eval reports it
    return data if isinstance(data, dict) else {}


def _check_run(args: argparse.Namespace) -> None:
    """Refuse a run that would fail or lose its results; add ``--log_samples`` where needed."""
    config = _config_file(args)
    tasks = getattr(args, "tasks", None) or config.get("tasks")
    # a folder of the user's own may define more metacog_* tasks: lm-eval judges those names
    own_tasks = getattr(args, "include_path", None) or config.get("include_path")
    unknown = [] if own_tasks else _unknown_metacog_tasks(tasks)
    if unknown:
        known = metacog_task_names()
        listed = "; ".join(f"{n}{_suggest(n, known)}" for n in unknown)
        raise _Refusal(
            f"no metacog task {listed}; the tasks are metacog_<benchmark>[_cf], the group "
            "metacog and the pattern 'metacog_*' (`metacog lm-eval ls tasks` lists them)"
        )
    _check_model(getattr(args, "model", None) or config.get("model"))
    if not _any_metacog_task(tasks):
        return
    output = getattr(args, "output_path", None) or config.get("output_path")
    if not output:
        raise _Refusal(
            "metacog tasks need --output_path DIR: their per-item samples, written there, are "
            "what `metacog collect` reads (without them the run's answers are lost)"
        )
    if not (getattr(args, "log_samples", False) or config.get("log_samples")):
        args.log_samples = True
        print(
            "metacog lm-eval: adding --log_samples (the per-item samples are what `metacog "
            "collect` reads)",
            file=sys.stderr,
        )


@contextlib.contextmanager
def _metacog_index_only(active: bool) -> Iterator[None]:
    """Make lm-eval's CLI build its TaskManager without the built-in task configs."""
    if not active:
        yield
        return
    import lm_eval.tasks as tasks_module

    original = tasks_module.TaskManager
    tasks_module.TaskManager = functools.partial(original, include_defaults=False)
    try:
        yield
    finally:
        tasks_module.TaskManager = original


def run_lm_eval_cli(argv: Sequence[str]) -> int:
    """Run lm-eval's CLI on ``argv`` with the metacog tasks and models available.

    Args:
        argv: lm-eval arguments, e.g. ``["run", "--model", "hf", "--tasks", "metacog_*"]``.

    Returns:
        The exit status: 0 on success, 2 on a bad metacog option or data source, or on a
        backend without log-likelihoods asked for log-prob confidence.
    """
    from lm_eval._cli import HarnessCLI
    from lm_eval.utils import setup_logging

    from metacog_tasks.lmeval.models import register_models

    register_models()
    setup_logging()
    parser = HarnessCLI()
    saved = sys.argv
    sys.argv = ["metacog lm-eval", *argv]
    try:
        args = parser.parse_args()
    finally:
        sys.argv = saved
    command = getattr(args, "command", None)
    try:
        if command == "run":
            _check_run(args)
    except _Refusal as exc:
        print(f"metacog lm-eval: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # the backend's extra (torch for hf) is missing
        hint = missing_extra_message(exc) or (
            f"lm-eval's backend needs {exc.name}, which is not installed (pip install {exc.name})"
        )
        print(f"metacog lm-eval: error: --model {args.model}: {hint}", file=sys.stderr)
        return 2
    user_include = getattr(args, "include_path", None)
    if hasattr(args, "include_path"):
        args.include_path = merge_include_path(user_include)
    index_only = (
        command in ("run", "validate")
        and not user_include
        and not getattr(args, "config", None)
        and _only_metacog_tasks(getattr(args, "tasks", None))
        and os.environ.get("METACOG_LMEVAL_FULL_INDEX", "") in ("", "0")
    )
    from metacog_tasks.benchmarks import DataUnavailableError, PromptError, UnknownBenchmarkError
    from metacog_tasks.lmeval.options import OptionsError
    from metacog_tasks.lmeval.task import TaskDataError

    try:
        with _metacog_index_only(index_only):
            parser.execute(args)
    except (
        OptionsError,
        TaskDataError,
        DataUnavailableError,
        PromptError,
        UnknownBenchmarkError,
    ) as exc:
        # Bad metacog options or data: one line naming the task, not a traceback.
        print(f"metacog lm-eval: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        hint = missing_extra_message(exc)
        if hint is None:
            raise
        print(f"metacog lm-eval: error: {hint}", file=sys.stderr)
        return 2
    except ValueError as exc:
        missing = str(exc).partition("Tasks not found: ")[2]
        if not missing:
            raise
        known = metacog_task_names()
        listed = "; ".join(f"{n}{_suggest(n, known)}" for n in missing.split(", "))
        print(
            f"metacog lm-eval: error: lm-eval has no task {listed} (`metacog lm-eval ls "
            "tasks` lists them)",
            file=sys.stderr,
        )
        return 2
    except NotImplementedError as exc:
        text = str(exc).lower()
        if any(w in text for w in ("loglikelihood", "log-likelihood", "logit")):
            print(f"metacog lm-eval: error: {exc}\n  hint: {_NO_LOGLIK_HINT}", file=sys.stderr)
            return 2
        raise
    return 0
