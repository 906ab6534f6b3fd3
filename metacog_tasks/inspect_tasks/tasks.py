"""The Inspect tasks: ``inspect eval metacog_tasks/<benchmark>``, one per registered benchmark.

Every task asks, per item, the metacognitive probe in a fresh conversation and then the solve
prompt(s) in another, grades the solve through the benchmark layer and scores each (probe,
confidence) pair. Task arguments (``-T key=value``):

========================  ==============================================================
``probe``                 ``prospective`` (default) and/or ``counterfactual``
                          (``-T probe=prospective,counterfactual`` asks both, one solve)
``confidence``            ``verbal`` (default, Yes/No), ``sampled`` (fraction of Yes over
                          ``k`` replies at ``temperature``), ``numeric`` (0-100, prospective)
``k``, ``temperature``    replies and temperature of ``sampled`` (10, 1.0)
``probe_max_tokens``      token budget of a probe reply (256)
``seed``                  base seed of the sampled replies (0)
``data``                  ``bundled`` (mini pack, offline), a local file or folder in the
                          dataset's own format, or unset for the Hugging Face dataset
``split``                 dataset split (benchmark default)
``prompts``               prompt-template overrides (a YAML/JSON file)
``options``               any other benchmark option, as a mapping
========================  ==============================================================

plus the benchmark's own options (its record's ``task_options``), ``sandbox`` for a benchmark
whose answers are code, and ``mode`` where it has several. Generation runs at temperature 0
unless ``--temperature`` says otherwise; ``--epochs`` works (the calibration metrics see every
epoch's pair). Sample ids are the benchmark's item ids, identical to the lm-eval tasks', so
``--sample-id`` selects items and logs join across harnesses.

One factory, :func:`benchmark_task`, makes every benchmark's ``@task`` from its record when this
module is imported (the package's Inspect entry point imports it); ``metacog_tasks/metacog``
(``-T benchmark=<name>``) is the same task with the benchmark as an argument, and the one that
``inspect list tasks`` finds in the source.

A bad argument or unreachable data (offline without ``-T data=bundled``) raises
:class:`TaskSetupError`, a ``ValueError`` that Inspect's command line prints as one line, without
a traceback; ``inspect eval metacog_tasks/<typo>`` prints the nearest task names.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig

from metacog_tasks.benchmarks import Benchmark, DataUnavailableError, benchmark_classes
from metacog_tasks.inspect_tasks._naming import PACKAGE, qualified
from metacog_tasks.inspect_tasks.dataset import benchmark_dataset, load_benchmark_items
from metacog_tasks.inspect_tasks.problems import problem_dataset, problem_solver
from metacog_tasks.inspect_tasks.sandbox import sandbox_spec
from metacog_tasks.inspect_tasks.scorers import metacog_scorer
from metacog_tasks.inspect_tasks.solvers import (
    KIND_NAMES,
    parse_confidences,
    parse_probes,
    probe_key,
    probe_plan,
    probe_then_solve,
)

__all__ = ["TaskSetupError", "benchmark_task", "benchmark_tasks", "metacog", "metacog_task"]

_TASK_VERSION = 1

try:  # Inspect prints this error's message alone, where others get a traceback
    from inspect_ai._util.error import PrerequisiteError as _CleanError
except ImportError:  # pragma: no cover - a future Inspect without it: a traceback, still right
    _CleanError = Exception  # type: ignore[assignment,misc]


class TaskSetupError(_CleanError, ValueError):  # type: ignore[misc,valid-type]
    """A task argument or the task's data is unusable (one line, naming the task and the fix)."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _setup_error(benchmark: str, exc: ValueError) -> TaskSetupError:
    """The one-line error of a task that cannot be built."""
    if isinstance(exc, TaskSetupError):
        return exc
    text = str(exc).strip()
    if isinstance(exc, DataUnavailableError):
        head = text.splitlines()[0] if text else "the data cannot be loaded"
        text = (
            f"{head}; run it on the bundled mini pack with -T data=bundled (offline), or on "
            "local files with -T data=PATH"
        )
    text = " ".join(text.split()).removeprefix(f"{benchmark}: ")
    return TaskSetupError(f"{PACKAGE}/{benchmark}: {text}")


def _options(options: Mapping[str, Any] | None, **named: Any) -> dict[str, Any]:
    """Benchmark options: the ``options`` mapping, then the named ones that were given."""
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"options must be a mapping of benchmark option to value, got {options!r}")
    out = dict(options or {})
    out.update({k: v for k, v in named.items() if v is not None})
    return out


def metacog_task(
    benchmark: str,
    *,
    probe: str | Sequence[str] = "prospective",
    confidence: str | Sequence[str] = "verbal",
    k: int = 10,
    temperature: float = 1.0,
    probe_max_tokens: int = 256,
    seed: int | None = 0,
    data: str | None = None,
    split: str | None = None,
    options: Mapping[str, Any] | None = None,
    sandbox: str | None = None,
    mode: str = "step",
) -> Task:
    """Build the probe-then-solve task of any registered benchmark.

    Args:
        benchmark: Benchmark name (``squad``, ``mmlu_pro``, ...).
        probe: Probe(s): ``prospective``, ``counterfactual`` (a name, comma list or list).
        confidence: Confidence method(s): ``verbal``, ``sampled``, ``numeric``.
        k: Replies per item for ``sampled``.
        temperature: Sampling temperature for ``sampled``.
        probe_max_tokens: Token budget of a probe reply.
        seed: Base seed of the sampled replies.
        data: ``None`` (Hugging Face), ``"bundled"`` or a local path.
        split: Dataset split.
        options: Benchmark options for ``get_benchmark``.
        sandbox: Inspect sandbox for model code (benchmarks whose record ``runs_code``), e.g.
            ``"docker"``.
        mode: ``step`` (one sample per item) or, where the record's ``task_modes`` has it,
            ``problem`` (one sample per main problem, its sub-steps solved in one conversation;
            see :mod:`metacog_tasks.inspect_tasks.problems`).

    Returns:
        The task; one scorer per (probe, confidence) pair.

    Raises:
        TaskSetupError: Bad arguments, no items, or the data cannot be loaded (a
            ``ValueError``).
    """
    try:
        return _build_task(
            benchmark,
            probe=probe,
            confidence=confidence,
            k=k,
            temperature=temperature,
            probe_max_tokens=probe_max_tokens,
            seed=seed,
            data=data,
            split=split,
            options=options,
            sandbox=sandbox,
            mode=mode,
        )
    except ValueError as exc:
        raise _setup_error(benchmark, exc) from exc


def _build_task(
    benchmark: str,
    *,
    probe: str | Sequence[str],
    confidence: str | Sequence[str],
    k: int,
    temperature: float,
    probe_max_tokens: int,
    seed: int | None,
    data: str | None,
    split: str | None,
    options: Mapping[str, Any] | None,
    sandbox: str | None,
    mode: str,
) -> Task:
    if data is not None and str(data).strip().lower() in ("hf", "huggingface", "none", ""):
        data = None
    probes = parse_probes(probe)
    methods = parse_confidences(confidence)
    plan = probe_plan(probes, methods)
    opts = dict(options or {})
    loaded = load_benchmark_items(benchmark, data=data, split=split, options=opts)
    record = loaded.benchmark
    bench_name = record.name
    if sandbox is not None and not record.runs_code:
        users = ", ".join(cls.name for cls in benchmark_classes() if cls.runs_code)
        raise ValueError(f"{bench_name}: an Inspect sandbox is only used by {users}")
    allowed = tuple(record.task_modes)
    if mode not in allowed:
        raise ValueError(f"{bench_name}: mode must be one of {allowed}, got {mode!r}")
    common: dict[str, Any] = {"data": data, "split": split, "options": opts}
    probe_args: dict[str, Any] = {
        "probe": list(probes),
        "confidence": list(methods),
        "k": k,
        "temperature": temperature,
        "max_tokens": probe_max_tokens,
        "seed": seed,
    }
    if mode == "problem":
        dataset = problem_dataset(loaded)
        plan_solver = problem_solver(bench_name)(**probe_args, **common)
    else:
        dataset = benchmark_dataset(loaded)
        plan_solver = probe_then_solve(bench_name, **probe_args, **common)
    return Task(
        dataset=dataset,
        solver=plan_solver,
        scorer=[metacog_scorer(bench_name, probe=p, confidence=c, **common) for p, c in plan],
        config=GenerateConfig(temperature=0.0),
        sandbox=sandbox_spec(sandbox, bench_name) if sandbox is not None else None,
        version=_TASK_VERSION,
        metadata={
            "metacog": {
                "benchmark": bench_name,
                "probes": list(probes),
                "confidence": list(methods),
                "confidence_kinds": sorted({KIND_NAMES[c] for _, c in plan}),
                "scorers": [probe_key(p, c) for p, c in plan],
                "data": loaded.source,
                "split": split,
                "samples": k if "sampled" in methods else None,
                "temperature": temperature if "sampled" in methods else None,
                "probe_max_tokens": probe_max_tokens,
                "mode": mode,
            }
        },
    )


@task(name=qualified("metacog"))
def metacog(
    benchmark: str,
    probe: str | list[str] = "prospective",
    confidence: str | list[str] = "verbal",
    k: int = 10,
    temperature: float = 1.0,
    probe_max_tokens: int = 256,
    seed: int | None = 0,
    data: str | None = None,
    split: str | None = None,
    prompts: str | dict[str, str] | None = None,
    options: dict[str, Any] | None = None,
    sandbox: str | None = None,
    mode: str = "step",
) -> Task:
    """Any registered benchmark's task, named by ``-T benchmark=<name>``.

    ``metacog_tasks/<benchmark>`` is the same task with the benchmark's own options as named
    arguments; here they go in ``options``. The arguments are in the module's table.

    Args:
        benchmark: Benchmark name (``squad``, ``mmlu_pro``, ...).
        probe: ``prospective`` and/or ``counterfactual``.
        confidence: ``verbal``, ``sampled`` and/or ``numeric``.
        k: Replies per item for ``sampled``.
        temperature: Sampling temperature for ``sampled``.
        probe_max_tokens: Token budget of a probe reply.
        seed: Base seed of the sampled replies.
        data: ``bundled``, a local path, or unset for the Hugging Face dataset.
        split: Dataset split.
        prompts: Prompt-template overrides (YAML/JSON file).
        options: Other benchmark options (a mapping).
        sandbox: Run model code in this Inspect sandbox (benchmarks whose answers are code).
        mode: ``step``, or ``problem`` where the benchmark has it.

    Returns:
        The task.
    """
    return metacog_task(
        benchmark,
        probe=probe,
        confidence=confidence,
        k=k,
        temperature=temperature,
        probe_max_tokens=probe_max_tokens,
        seed=seed,
        data=data,
        split=split,
        options=_options(options, prompts=prompts),
        sandbox=sandbox,
        mode=mode,
    )


#: The generic task's parameters, which every benchmark's task shares (its options go between
#: ``options`` and ``sandbox``).
_GENERIC = inspect.signature(metacog, eval_str=True).parameters
_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _signature(record: type[Benchmark]) -> inspect.Signature:
    """A benchmark task's parameters: the shared ones, its options, then sandbox and mode."""
    shared = [p for name, p in _GENERIC.items() if name not in ("benchmark", "sandbox", "mode")]
    own = [
        inspect.Parameter(o.name, _KEYWORD, default=None, annotation=o.annotation)
        for o in record.task_options
    ]
    if record.runs_code:
        own.append(_GENERIC["sandbox"])
    if len(record.task_modes) > 1:
        own.append(_GENERIC["mode"].replace(default=record.task_modes[0]))
    return inspect.Signature([*shared, *own], return_annotation=Task)


def _docstring(record: type[Benchmark]) -> str:
    args = [f"        {o.name}: {o.help}" for o in record.task_options]
    if record.runs_code:
        args.append("        sandbox: Run the tests in this Inspect sandbox (``docker``, ...).")
    if len(record.task_modes) > 1:
        args.append(f"        mode: One of {', '.join(record.task_modes)}.")
    own = ("\n\n    Args:\n" + "\n".join(args)) if args else ""
    return (
        f"{record.title}: {record.summary}.\n\n"
        f"    The shared arguments (``probe``, ``confidence``, ``data``, ...) are in\n"
        f"    :mod:`metacog_tasks.inspect_tasks.tasks`; the dataset is {record.dataset}.{own}"
        "\n\n    Returns:\n        The task.\n    "
    )


def benchmark_task(record: type[Benchmark]) -> Callable[..., Task]:
    """Make and register the Inspect task ``metacog_tasks/<name>`` of one benchmark record.

    Args:
        record: The benchmark class (its ``task_options``, ``runs_code`` and ``task_modes``
            add parameters to the shared ones).

    Returns:
        The registered task function (Inspect's ``@task`` wrapper).
    """
    signature = _signature(record)
    own = {o.name: o for o in record.task_options}

    def build(*args: Any, **kwargs: Any) -> Task:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        named = {name: option.convert(a[name]) for name, option in own.items()}
        return metacog_task(
            record.name,
            probe=a["probe"],
            confidence=a["confidence"],
            k=a["k"],
            temperature=a["temperature"],
            probe_max_tokens=a["probe_max_tokens"],
            seed=a["seed"],
            data=a["data"],
            split=a["split"],
            options=_options(a["options"], prompts=a["prompts"], **named),
            sandbox=a.get("sandbox"),
            mode=a.get("mode", "step"),
        )

    build.__signature__ = signature  # type: ignore[attr-defined]  # what Inspect reads
    build.__name__ = build.__qualname__ = record.name
    build.__doc__ = _docstring(record)
    return task(name=qualified(record.name))(build)


def _register_all() -> dict[str, Callable[..., Task]]:
    return {cls.name: benchmark_task(cls) for cls in benchmark_classes()}


_TASKS = _register_all()


def benchmark_tasks() -> dict[str, Callable[..., Task]]:
    """Benchmark name -> its registered Inspect task function, in the registry's order."""
    return dict(_TASKS)


def __getattr__(name: str) -> Callable[..., Task]:
    # `from metacog_tasks.inspect_tasks.tasks import squad`: the benchmark's task function.
    if name in _TASKS:
        return _TASKS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _unknown_task_hint(argv: Sequence[str]) -> str | None:
    """For ``inspect eval metacog_tasks/<typo>``: the nearest task names, or None.

    Inspect loads this package's entry point to resolve ``metacog_tasks/...``; what it says of a
    name it cannot find ("No inspect tasks were found") names no alternative.
    """
    import difflib
    import os

    argv = list(argv)
    if (
        len(argv) < 2
        or os.path.basename(argv[0]) != "inspect"
        or argv[1] not in ("eval", "eval-set")
    ):
        return None
    known = [*_TASKS, "metacog"]
    lines = []
    for arg in argv[2:]:
        head, sep, name = arg.partition("/")
        if head != PACKAGE or not sep or name in known:
            continue
        close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
        guess = f"; did you mean {' or '.join(f'{PACKAGE}/{c}' for c in close)}?" if close else ""
        lines.append(
            f"{PACKAGE}: no task {name!r}{guess} (tasks: "
            f"{', '.join(f'{PACKAGE}/{t}' for t in _TASKS)})"
        )
    return "\n".join(lines) or None


# Printed when Inspect's command line loads this module to resolve a metacog_tasks/ name that
# does not exist: Inspect's own error follows, with its non-zero exit.
_HINT = _unknown_task_hint(sys.argv)
if _HINT:
    print(_HINT, file=sys.stderr)
