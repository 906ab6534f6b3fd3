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
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from collections.abc import Iterator, Sequence

from metacog_tasks.lmeval.paths import tasks_dir

__all__ = ["merge_include_path", "run_lm_eval_cli"]

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


def _only_metacog_tasks(tasks: object) -> bool:
    """Whether ``--tasks`` names only metacog tasks, groups, tags or patterns."""
    if not tasks:
        return False
    items = tasks if isinstance(tasks, list | tuple) else [tasks]
    names = [n.strip() for item in items for n in str(item).split(",") if n.strip()]
    return bool(names) and all(_METACOG_TASK.match(n) for n in names)


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
    user_include = getattr(args, "include_path", None)
    if hasattr(args, "include_path"):
        args.include_path = merge_include_path(user_include)
    index_only = (
        getattr(args, "command", None) in ("run", "validate")
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
    except NotImplementedError as exc:
        text = str(exc).lower()
        if any(w in text for w in ("loglikelihood", "log-likelihood", "logit")):
            print(f"metacog lm-eval: error: {exc}\n  hint: {_NO_LOGLIK_HINT}", file=sys.stderr)
            return 2
        raise
    return 0
