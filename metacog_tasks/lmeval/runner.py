"""Run several models through lm-eval in one process, saving exactly what the CLI saves.

``lm_eval run`` builds a task index of ~15k built-in configs (about 20 s) on every call. For a
population of simulated models (the demo) or a sweep of checkpoints, :func:`run_lmeval` builds
one ``TaskManager`` over the metacog task configs only and calls ``lm_eval.simple_evaluate`` per
model, then writes ``results_*.json`` and ``samples_*.jsonl`` through lm-eval's own
``EvaluationTracker``, as ``lm_eval run --output_path ... --log_samples`` would, so
``metacog collect`` reads both the same way.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from metacog_metrics import Result
from metacog_tasks.lmeval.paths import tasks_dir

__all__ = ["LMEvalRun", "run_lmeval"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class LMEvalRun(Result):
    """One model's run.

    Attributes:
        model: lm-eval model type (``hf``, ``metacog-sim``, ...) or the LM class name.
        model_args: The model arguments as given.
        model_name: Record-table model name (what ``metacog collect`` will call it).
        results_path: The ``results_*.json`` written (``None`` without ``output_path``).
        samples_paths: The ``samples_<task>_*.jsonl`` files written.
        metrics: ``results`` of the results file: task -> metric -> value.
        seconds: Wall time of the evaluation.
    """

    model: str
    model_args: Any
    model_name: str
    results_path: str | None
    samples_paths: tuple[str, ...]
    metrics: Mapping[str, Mapping[str, Any]]
    seconds: float


def _model_name(results: Mapping[str, Any], tracker: Any) -> str:
    config = results.get("config") or {}
    name = config.get("metacog_model_name") or tracker.general_config_tracker.model_name
    return str(name or config.get("model") or "unknown")


def _written_files(tracker: Any, output_path: Path, tasks: Sequence[str]) -> tuple[Path, list]:
    date_id = tracker.date_id
    if output_path.suffix == ".json":
        folder = output_path.parent
        results = output_path.with_name(f"{output_path.stem}_{date_id}.json")
    else:
        folder = output_path / str(tracker.general_config_tracker.model_name_sanitized)
        results = folder / f"results_{date_id}.json"
    samples = [folder / f"samples_{t}_{date_id}.jsonl" for t in tasks]
    return results, [s for s in samples if s.exists()]


def run_lmeval(
    models: Sequence[Mapping[str, Any]],
    tasks: Sequence[str],
    *,
    output_path: str | PathLike[str] | None,
    metadata: Mapping[str, Any] | None = None,
    limit: int | float | None = None,
    log_samples: bool = True,
    predict_only: bool = False,
    batch_size: int | str = 1,
    device: str | None = None,
    apply_chat_template: bool | str = False,
    system_instruction: str | None = None,
    gen_kwargs: str | Mapping[str, Any] | None = None,
    bootstrap_iters: int = 100_000,
    include_defaults: bool = False,
    include_path: str | PathLike[str] | Sequence[str | PathLike[str]] | None = None,
    random_seed: int = 0,
    numpy_random_seed: int = 1234,
    torch_random_seed: int = 1234,
    verbosity: str | None = None,
) -> list[LMEvalRun]:
    """Evaluate each model on ``tasks`` with ``lm_eval.simple_evaluate`` in this process.

    Args:
        models: One mapping per model: ``{"model": "hf" | "metacog-sim" | <LM instance>,
            "model_args": "k=v,..." | {...}}``; optional per-model ``batch_size``, ``device``.
        tasks: Task, group, tag names or patterns (``"metacog_*"``, ``"metacog"``).
        output_path: Folder (or ``X.json``) to write results and samples to, as the CLI's
            ``--output_path``; ``None`` writes nothing.
        metadata: Task metadata (``metacog_data``, ``metacog_confidence``, ...), as
            ``--metadata``; one task index serves every model, so unlike the CLI the
            ``model_args`` are not merged into it.
        limit: ``--limit``.
        log_samples: ``--log_samples`` (needs ``output_path`` to be written).
        predict_only: ``--predict_only``.
        batch_size: ``--batch_size``.
        device: ``--device``.
        apply_chat_template: ``--apply_chat_template``.
        system_instruction: ``--system_instruction``.
        gen_kwargs: ``--gen_kwargs`` (solve requests).
        bootstrap_iters: lm-eval's bootstrap replicates, as the CLI's default. The metacog
            aggregations are never bootstrapped (``acc`` gets its closed-form stderr), so this
            costs nothing for them; 0 drops every stderr.
        include_defaults: Also index lm-eval's built-in tasks (~20 s, once per call), needed
            to run e.g. ``mmlu_pro`` beside the metacog tasks.
        include_path: Extra task folders, indexed after the metacog configs.
        random_seed: Python ``random`` seed (lm-eval's ``--seed`` first value is 0 too).
        numpy_random_seed: numpy seed.
        torch_random_seed: torch seed.
        verbosity: lm-eval log level (``None`` keeps the current one).

    Returns:
        One :class:`LMEvalRun` per model, in order.

    Raises:
        ValueError: No model or no task, or a task name that matches nothing.
    """
    import lm_eval
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    from metacog_tasks.lmeval.models import register_models

    register_models()
    if not models:
        raise ValueError("run_lmeval: no models given")
    if not tasks:
        raise ValueError("run_lmeval: no tasks given")
    paths: list[str] = [str(tasks_dir())]
    if include_path is not None:
        extra = [include_path] if isinstance(include_path, str | PathLike) else include_path
        paths.extend(str(p) for p in extra)
    out = Path(output_path) if output_path is not None else None
    if log_samples and out is None and not predict_only:
        log.info("run_lmeval: no output_path; samples are kept in memory only")

    base_meta = dict(metadata or {})
    manager = TaskManager(include_path=paths, include_defaults=include_defaults, metadata=base_meta)
    unknown = [t for t in tasks if not manager.match_tasks([t])]
    if unknown:
        raise ValueError(
            f"run_lmeval: no task matches {', '.join(map(repr, unknown))} "
            f"(indexed: {len(manager.all_tasks)} names)"
        )

    runs: list[LMEvalRun] = []
    for spec in models:
        if "model" not in spec:
            raise ValueError(f"run_lmeval: model spec {dict(spec)!r} lacks 'model'")
        model = spec["model"]
        model_args = spec.get("model_args", "")
        tracker = EvaluationTracker(output_path=str(out) if out is not None else None)
        start = time.perf_counter()
        results = lm_eval.simple_evaluate(
            model=model,
            model_args=model_args,
            tasks=list(tasks),
            batch_size=spec.get("batch_size", batch_size),
            device=spec.get("device", device),
            limit=limit,
            log_samples=log_samples,
            predict_only=predict_only,
            evaluation_tracker=tracker,
            task_manager=manager,
            apply_chat_template=apply_chat_template,
            system_instruction=system_instruction,
            gen_kwargs=dict(gen_kwargs) if isinstance(gen_kwargs, Mapping) else gen_kwargs,
            bootstrap_iters=bootstrap_iters,
            random_seed=random_seed,
            numpy_random_seed=numpy_random_seed,
            torch_random_seed=torch_random_seed,
            fewshot_random_seed=1234,
            verbosity=verbosity,
        )
        seconds = time.perf_counter() - start
        if results is None:  # a non-zero rank under data parallelism
            continue
        samples = results.pop("samples", None) if (log_samples or predict_only) else None
        results_path: str | None = None
        sample_paths: list[Path] = []
        if out is not None:
            # Exactly the CLI's saving sequence (lm_eval/_cli/run.py).
            tracker.save_results_aggregated(results=results, samples=samples)
            if samples is not None:
                for task_name in results["configs"]:
                    tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
            res_file, sample_paths = _written_files(tracker, out, list(results["configs"]))
            results_path = str(res_file)
        runs.append(
            LMEvalRun(
                model=model if isinstance(model, str) else type(model).__name__,
                model_args=model_args,
                model_name=_model_name(results, tracker),
                results_path=results_path,
                samples_paths=tuple(str(p) for p in sample_paths),
                metrics=results.get("results", {}),
                seconds=seconds,
            )
        )
    return runs
