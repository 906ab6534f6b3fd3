"""The Inspect tasks: ``inspect eval metacog_tasks/<benchmark>``, one per benchmark.

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

plus the benchmark's own options (``open_book``, ``tasks``, ``circular``, ...). Generation runs
at temperature 0 unless ``--temperature`` says otherwise; ``--epochs`` works (the calibration
metrics see every epoch's pair). Sample ids are the benchmark's item ids, identical to the lm-eval
tasks', so ``--sample-id`` selects items and logs join across harnesses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig

from metacog_tasks.inspect_tasks._naming import qualified
from metacog_tasks.inspect_tasks.dataset import benchmark_dataset, load_benchmark_items
from metacog_tasks.inspect_tasks.sandbox import scicode_sandbox
from metacog_tasks.inspect_tasks.scicode import problem_dataset, scicode_multiturn
from metacog_tasks.inspect_tasks.scorers import metacog_scorer
from metacog_tasks.inspect_tasks.solvers import (
    KIND_NAMES,
    parse_confidences,
    parse_probes,
    probe_key,
    probe_plan,
    probe_then_solve,
)

__all__ = [
    "legalbench",
    "mathbench",
    "metacog_task",
    "mmlu_pro",
    "omni_math",
    "scicode",
    "squad",
]

_TASK_VERSION = 1


def _options(options: Mapping[str, Any] | None, **named: Any) -> dict[str, Any]:
    """Benchmark options: the ``options`` mapping, then the named ones that were given."""
    if options is not None and not isinstance(options, Mapping):
        raise ValueError(f"options must be a mapping of benchmark option to value, got {options!r}")
    out = dict(options or {})
    out.update({k: v for k, v in named.items() if v is not None})
    return out


def _names(value: str | Sequence[str] | None) -> list[str] | None:
    """A name list from ``-T x=a,b`` (Inspect splits it), ``-T x=a`` or a list."""
    if value is None:
        return None
    parts = [value] if isinstance(value, str) else list(value)
    return [p.strip() for part in parts for p in str(part).split(",") if p.strip()]


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
        sandbox: Inspect sandbox for model code (SciCode only), e.g. ``"docker"``.
        mode: ``step`` (one sample per item) or, for SciCode, ``problem`` (one sample per main
            problem, its sub-steps solved in one conversation; see
            :mod:`metacog_tasks.inspect_tasks.scicode`).

    Returns:
        The task; one scorer per (probe, confidence) pair.

    Raises:
        ValueError: Bad arguments or no items.
    """
    if data is not None and str(data).strip().lower() in ("hf", "huggingface", "none", ""):
        data = None
    probes = parse_probes(probe)
    methods = parse_confidences(confidence)
    plan = probe_plan(probes, methods)
    opts = dict(options or {})
    loaded = load_benchmark_items(benchmark, data=data, split=split, options=opts)
    bench_name = loaded.benchmark.name
    if sandbox is not None and bench_name != "scicode":
        raise ValueError(f"{bench_name}: an Inspect sandbox is only used by scicode")
    allowed = ("step", "problem") if bench_name == "scicode" else ("step",)
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
        plan_solver = scicode_multiturn(**probe_args, **common)
    else:
        dataset = benchmark_dataset(loaded)
        plan_solver = probe_then_solve(bench_name, **probe_args, **common)
    return Task(
        dataset=dataset,
        solver=plan_solver,
        scorer=[metacog_scorer(bench_name, probe=p, confidence=c, **common) for p, c in plan],
        config=GenerateConfig(temperature=0.0),
        sandbox=scicode_sandbox(sandbox) if sandbox is not None else None,
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


@task(name=qualified("squad"))
def squad(
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
    open_book: bool | None = None,
    version: str | None = None,
) -> Task:
    """SQuAD (closed-book by default): will the model answer this question correctly?

    Args:
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
        open_book: Show the context passage in the solve prompt.
        version: SQuAD version (benchmark default when unset).

    Returns:
        The task.
    """
    return metacog_task(
        "squad",
        probe=probe,
        confidence=confidence,
        k=k,
        temperature=temperature,
        probe_max_tokens=probe_max_tokens,
        seed=seed,
        data=data,
        split=split,
        options=_options(options, prompts=prompts, open_book=open_book, version=version),
    )


@task(name=qualified("mmlu_pro"))
def mmlu_pro(
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
) -> Task:
    """MMLU-Pro: the probe shows the question without its ten options.

    Args:
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

    Returns:
        The task.
    """
    return metacog_task(
        "mmlu_pro",
        probe=probe,
        confidence=confidence,
        k=k,
        temperature=temperature,
        probe_max_tokens=probe_max_tokens,
        seed=seed,
        data=data,
        split=split,
        options=_options(options, prompts=prompts),
    )


@task(name=qualified("legalbench"))
def legalbench(
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
    tasks: str | list[str] | None = None,
    fewshot: int | None = None,
) -> Task:
    """LegalBench: per-task instructions and graders.

    Args:
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
        tasks: LegalBench task names to run (``-T tasks=proa,hearsay``; default: all).
        fewshot: In-context examples per prompt from each task's train split (default 0).

    Returns:
        The task.
    """
    return metacog_task(
        "legalbench",
        probe=probe,
        confidence=confidence,
        k=k,
        temperature=temperature,
        probe_max_tokens=probe_max_tokens,
        seed=seed,
        data=data,
        split=split,
        options=_options(options, prompts=prompts, tasks=_names(tasks), fewshot=fewshot),
    )


@task(name=qualified("mathbench"))
def mathbench(
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
    circular: bool | None = None,
    languages: str | list[str] | None = None,
    stages: str | list[str] | None = None,
) -> Task:
    """MathBench: single-choice items under circular evaluation, each rotation its own solve.

    Args:
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
        circular: Circular evaluation of single-choice items (benchmark default when unset).
        languages: Languages to keep (``en``, ``cn``).
        stages: MathBench stages to keep (default: all).

    Returns:
        The task.
    """
    return metacog_task(
        "mathbench",
        probe=probe,
        confidence=confidence,
        k=k,
        temperature=temperature,
        probe_max_tokens=probe_max_tokens,
        seed=seed,
        data=data,
        split=split,
        options=_options(
            options,
            prompts=prompts,
            circular=circular,
            languages=_names(languages),
            stages=_names(stages),
        ),
    )


@task(name=qualified("omni_math"))
def omni_math(
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
    judge_on: str | None = None,
    verify_timeout_s: int | None = None,
    judge: str | None = None,
) -> Task:
    """Omni-MATH: olympiad problems graded by symbolic equivalence.

    Args:
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
        judge: A model that judges the answers math-verify cannot settle: an Inspect model
            name (``openai/gpt-4o``) or ``role:<name>`` (``--model-role <name>=...``).
        judge_on: When the judge grades: ``unsettled`` (rules cannot decide) or ``wrong`` too.
        verify_timeout_s: Seconds allowed to each math-verify step.

    Returns:
        The task.
    """
    return metacog_task(
        "omni_math",
        probe=probe,
        confidence=confidence,
        k=k,
        temperature=temperature,
        probe_max_tokens=probe_max_tokens,
        seed=seed,
        data=data,
        split=split,
        options=_options(
            options,
            prompts=prompts,
            judge=judge,
            judge_on=judge_on,
            verify_timeout_s=verify_timeout_s,
        ),
    )


@task(name=qualified("scicode"))
def scicode(
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
    with_background: bool | None = None,
    h5_path: str | None = None,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
    sandbox: str | None = None,
    mode: str = "step",
) -> Task:
    """SciCode: one sample per sub-step; the model's function runs against the step's tests.

    Args:
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
        with_background: Include the scientific background in the solve prompt.
        h5_path: SciCode's ``test_data.h5`` (needed for the official test cases).
        timeout_s: Time limit of one test run.
        memory_mb: Memory limit of one test run.
        sandbox: Run the tests in this Inspect sandbox (``docker``, ``docker:<compose.yaml>``,
            another provider) instead of the project's sandbox.
        mode: ``step`` (default: one sample per sub-step, previous steps shown with gold code,
            as in lm-eval) or ``problem`` (one sample per main problem, sub-steps solved in one
            conversation on the model's own earlier code, each probed first).

    Returns:
        The task.
    """
    return metacog_task(
        "scicode",
        probe=probe,
        confidence=confidence,
        k=k,
        temperature=temperature,
        probe_max_tokens=probe_max_tokens,
        seed=seed,
        data=data,
        split=split,
        options=_options(
            options,
            prompts=prompts,
            with_background=with_background,
            h5_path=h5_path,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
        ),
        sandbox=sandbox,
        mode=mode,
    )
