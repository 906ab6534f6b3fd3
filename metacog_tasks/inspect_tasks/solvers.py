"""Solvers: ask the probe in its own fresh conversation, then solve in another.

The probe never sees the solve turn and the solve never sees the probe: every model call gets a
new message list (``get_model().generate([...])``). Each call runs inside a named transcript span
(``probe: prospective``, ``solve``, ...), so ``inspect view`` shows both per sample; the texts are
also kept in ``state.metadata`` (Metadata tab) and ``state.store`` (read by the scorers).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model
from inspect_ai.solver import Generate, Solver, TaskState, chain, solver
from inspect_ai.util import collect, span

from metacog_tasks.benchmarks.base import Benchmark, Item
from metacog_tasks.inspect_tasks._naming import qualified
from metacog_tasks.inspect_tasks.dataset import BenchmarkItems, load_benchmark_items

__all__ = [
    "CONFIDENCES",
    "KIND_NAMES",
    "PROBE_KINDS",
    "ProbeOutcome",
    "metacog_probe",
    "metacog_solve",
    "probe_key",
    "probe_plan",
    "probe_then_solve",
    "solve_replies",
    "store_solve",
]

#: Probes an Inspect task can ask (``numeric`` is a confidence method, not a probe).
PROBE_KINDS: tuple[str, ...] = ("prospective", "counterfactual")
#: Confidence elicitation methods (``logprob`` is lm-eval only).
CONFIDENCES: tuple[str, ...] = ("verbal", "sampled", "numeric")
#: Record-table ``confidence_kind`` of each method (as in the lm-eval tasks).
KIND_NAMES: dict[str, str] = {
    "verbal": "verbal_binary",
    "sampled": "sampled",
    "numeric": "verbal_numeric",
}

_STORE_PROBES = "metacog_probes"
_STORE_SOLVE = "metacog_solve"


def probe_key(probe: str, confidence: str) -> str:
    """Name of one (probe, confidence) measurement: also its scorer's name."""
    return f"{probe}_{confidence}"


@dataclasses.dataclass(frozen=True)
class ProbeOutcome:
    """What one probe measurement produced for one sample.

    Attributes:
        probe: ``prospective`` or ``counterfactual``.
        confidence_method: ``verbal``, ``sampled`` or ``numeric``.
        confidence_kind: Record-table kind (``verbal_binary``, ``sampled``, ``verbal_numeric``).
        prompt: The probe message.
        replies: The model's replies (k of them for ``sampled``).
        confidence: Parsed confidence in [0, 1], NaN when no reply gave a verdict.
        parsed: How many replies gave a verdict.
        statuses: Parse status of each reply (``ok``, ``unparseable``, ``refusal``, ``empty``).
    """

    probe: str
    confidence_method: str
    confidence_kind: str
    prompt: str
    replies: tuple[str, ...]
    confidence: float
    parsed: int
    statuses: tuple[str, ...]

    def to_store(self) -> dict[str, Any]:
        """Plain JSON form (NaN becomes ``None``) for ``state.store``."""
        out = dataclasses.asdict(self)
        out["replies"] = list(self.replies)
        out["statuses"] = list(self.statuses)
        out["confidence"] = None if math.isnan(self.confidence) else self.confidence
        return out

    @classmethod
    def from_store(cls, data: Mapping[str, Any]) -> ProbeOutcome:
        """Inverse of :meth:`to_store`."""
        conf = data.get("confidence")
        return cls(
            probe=str(data["probe"]),
            confidence_method=str(data["confidence_method"]),
            confidence_kind=str(data["confidence_kind"]),
            prompt=str(data["prompt"]),
            replies=tuple(data.get("replies") or ()),
            confidence=math.nan if conf is None else float(conf),
            parsed=int(data.get("parsed") or 0),
            statuses=tuple(data.get("statuses") or ()),
        )


def _as_tuple(value: str | Sequence[str], allowed: Sequence[str], what: str) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for raw in values:
        for part in str(raw).split(","):
            name = part.strip().lower()
            if not name:
                continue
            if name not in allowed:
                raise ValueError(f"unknown {what} {part!r}; choose from {', '.join(allowed)}")
            if name not in out:
                out.append(name)
    if not out:
        raise ValueError(f"no {what} given; choose from {', '.join(allowed)}")
    return tuple(out)


def parse_probes(probe: str | Sequence[str]) -> tuple[str, ...]:
    """Normalise a ``probe`` task argument (a name, a comma list or a list)."""
    return _as_tuple(probe, PROBE_KINDS, "probe")


def parse_confidences(confidence: str | Sequence[str]) -> tuple[str, ...]:
    """Normalise a ``confidence`` task argument (a name, a comma list or a list)."""
    return _as_tuple(confidence, CONFIDENCES, "confidence")


def probe_plan(probes: Sequence[str], confidences: Sequence[str]) -> list[tuple[str, str]]:
    """The (probe, confidence) measurements a run makes, in asking order.

    The numeric (0-100) probe has prospective wording, so ``numeric`` is only paired with the
    prospective probe (as in the lm-eval tasks).

    Raises:
        ValueError: No measurement is left (``numeric`` with only the counterfactual probe).
    """
    plan = [(p, c) for p in probes for c in confidences if c != "numeric" or p == "prospective"]
    if not plan:
        raise ValueError(
            "the numeric (0-100) confidence is asked with prospective wording; use "
            "probe=prospective or another confidence method"
        )
    return plan


def _loaded(
    benchmark: str, data: str | None, split: str | None, options: Mapping[str, Any] | None
) -> BenchmarkItems:
    return load_benchmark_items(benchmark, data=data, split=split, options=options)


def _parse(method: str, reply: str) -> tuple[float, str]:
    from metacog_tasks.parsing import parse_confidence, parse_yes_no

    parsed = parse_confidence(reply) if method == "numeric" else parse_yes_no(reply)
    return parsed.confidence, parsed.status


async def _ask(prompt: str, config: GenerateConfig, label: str) -> str:
    """One fresh single-turn conversation, inside a transcript span."""
    async with span(label, type="metacog"):
        output = await get_model().generate([ChatMessageUser(content=prompt)], config=config)
    return output.completion


@dataclasses.dataclass(frozen=True)
class _ProbeSettings:
    """How a solver asks its probes (the arguments of :func:`metacog_probe` of that name)."""

    k: int
    temperature: float
    max_tokens: int
    seed: int | None

    @classmethod
    def checked(
        cls, methods: Sequence[str], k: int, temperature: float, max_tokens: int, seed: int | None
    ) -> _ProbeSettings:
        """The settings, after the checks every probing solver makes."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if "sampled" in methods and temperature <= 0:
            raise ValueError(f"sampled confidence needs temperature > 0, got {temperature}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        return cls(k, temperature, max_tokens, seed)


async def _run_probe(
    probe: str, method: str, prompt: str, settings: _ProbeSettings
) -> ProbeOutcome:
    label = f"probe: {probe_key(probe, method)}"
    if method == "sampled":
        # k independent conversations at temperature > 0; per-sample seeds keep providers that
        # honour a seed (and the simulator) reproducible while the samples still differ.
        seed = settings.seed
        configs = [
            GenerateConfig(
                temperature=settings.temperature,
                max_tokens=settings.max_tokens,
                seed=None if seed is None else seed + i,
            )
            for i in range(settings.k)
        ]
        replies = await collect(
            *(_ask(prompt, cfg, f"{label} #{i + 1}") for i, cfg in enumerate(configs))
        )
    else:
        replies = [await _ask(prompt, GenerateConfig(max_tokens=settings.max_tokens), label)]
    parsed = [_parse(method, r) for r in replies]
    values = [c for c, _ in parsed if not math.isnan(c)]
    confidence = float(sum(values) / len(values)) if values else math.nan
    return ProbeOutcome(
        probe=probe,
        confidence_method=method,
        confidence_kind=KIND_NAMES[method],
        prompt=prompt,
        replies=tuple(replies),
        confidence=confidence,
        parsed=len(values),
        statuses=tuple(s for _, s in parsed),
    )


async def _ask_probes(
    bench: Benchmark, item: Item, plan: Sequence[tuple[str, str]], settings: _ProbeSettings
) -> dict[str, ProbeOutcome]:
    """Ask every (probe, confidence) of ``plan`` about ``item``, keyed by :func:`probe_key`."""
    out: dict[str, ProbeOutcome] = {}
    for p, method in plan:
        prompt = bench.probe_prompt(item, "numeric" if method == "numeric" else p)
        out[probe_key(p, method)] = await _run_probe(p, method, prompt, settings)
    return out


def probe_outcomes(state: TaskState) -> dict[str, ProbeOutcome]:
    """The probe outcomes :func:`metacog_probe` stored on a sample, keyed by :func:`probe_key`."""
    raw = state.store.get(_STORE_PROBES, {}) or {}
    return {key: ProbeOutcome.from_store(value) for key, value in raw.items()}


def store_solve(state: TaskState, prompts: Sequence[str], replies: Sequence[str]) -> None:
    """Record a sample's solve prompts and replies for the metacog scorers.

    :func:`metacog_solve` calls this; a solver of your own (an agent, a different prompt) that
    replaces it calls it too, with the replies in the order of the benchmark's
    ``solve_prompts(item)`` (the grader reads them in that order).

    Args:
        state: The sample's state.
        prompts: The solve messages asked.
        replies: The final reply to each.
    """
    prompts, replies = list(prompts), list(replies)
    state.store.set(_STORE_SOLVE, {"prompts": prompts, "replies": replies})
    state.metadata["solve_prompt"] = prompts[0] if len(prompts) == 1 else prompts
    state.metadata["solve_reply"] = replies[0] if len(replies) == 1 else replies


def solve_replies(state: TaskState) -> tuple[list[str], list[str]]:
    """The solve prompts and replies :func:`metacog_solve` stored on a sample."""
    raw = state.store.get(_STORE_SOLVE, {}) or {}
    return list(raw.get("prompts") or []), list(raw.get("replies") or [])


@solver(qualified("metacog_probe"))
def metacog_probe(
    benchmark: str,
    probe: str | Sequence[str] = "prospective",
    confidence: str | Sequence[str] = "verbal",
    k: int = 10,
    temperature: float = 1.0,
    max_tokens: int = 256,
    seed: int | None = 0,
    data: str | None = None,
    split: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Solver:
    """Ask the metacognitive probe(s) of a benchmark item, each in a fresh conversation.

    Args:
        benchmark: Benchmark name.
        probe: ``prospective`` and/or ``counterfactual`` (a name, comma list or list).
        confidence: ``verbal`` (one Yes/No reply at the eval's temperature, 0 by default),
            ``sampled`` (fraction of Yes over ``k`` replies at ``temperature``) and/or
            ``numeric`` (a 0-100 confidence; prospective wording).
        k: Replies per item for ``sampled``.
        temperature: Sampling temperature for ``sampled`` (must be > 0).
        max_tokens: Token budget of a probe reply.
        seed: Base seed of the ``sampled`` replies (``None``: provider default).
        data: Item source (see :func:`~metacog_tasks.inspect_tasks.dataset.load_benchmark_items`).
        split: Dataset split.
        options: Benchmark options.

    Returns:
        A solver that stores a :class:`ProbeOutcome` per (probe, confidence) on the sample.

    Raises:
        ValueError: An unknown probe or confidence, ``k < 1``, ``max_tokens < 1`` or
            ``temperature <= 0`` with ``sampled``.
    """
    probes = parse_probes(probe)
    methods = parse_confidences(confidence)
    settings = _ProbeSettings.checked(methods, k, temperature, max_tokens, seed)
    plan = probe_plan(probes, methods)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        loaded = _loaded(benchmark, data, split, options)
        item = loaded.item(state.sample_id)
        stored: dict[str, Any] = dict(state.store.get(_STORE_PROBES, {}) or {})
        outcomes = await _ask_probes(loaded.benchmark, item, plan, settings)
        for key, outcome in outcomes.items():
            stored[key] = outcome.to_store()
            state.metadata[f"{key}_prompt"] = outcome.prompt
            state.metadata[f"{key}_reply"] = (
                outcome.replies[0] if len(outcome.replies) == 1 else list(outcome.replies)
            )
            state.metadata[f"{key}_confidence"] = stored[key]["confidence"]
        state.store.set(_STORE_PROBES, stored)
        return state

    return solve


@solver(qualified("metacog_solve"))
def metacog_solve(
    benchmark: str,
    data: str | None = None,
    split: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Solver:
    """Solve a benchmark item: each solve prompt in its own fresh conversation.

    Most benchmarks have one solve prompt; MathBench circular evaluation has one per rotation of
    the options. The first conversation becomes ``state.messages``/``state.output`` (the
    Messages tab of ``inspect view``); all replies are stored for the scorer.

    Args:
        benchmark: Benchmark name.
        data: Item source.
        split: Dataset split.
        options: Benchmark options.

    Returns:
        The solver.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        loaded = _loaded(benchmark, data, split, options)
        item = loaded.item(state.sample_id)
        prompts = loaded.benchmark.solve_prompts(item)
        replies: list[str] = []
        for i, prompt in enumerate(prompts):
            label = "solve" if len(prompts) == 1 else f"solve #{i + 1}"
            if i == 0:
                async with span(label, type="metacog"):
                    state.messages = [ChatMessageUser(content=prompt)]
                    state = await generate(state, tool_calls="none")
                replies.append(state.output.completion)
            else:
                replies.append(await _ask(prompt, GenerateConfig(), label))
        store_solve(state, prompts, replies)
        return state

    return solve


@solver(qualified("probe_then_solve"))
def probe_then_solve(
    benchmark: str,
    probe: str | Sequence[str] = "prospective",
    confidence: str | Sequence[str] = "verbal",
    k: int = 10,
    temperature: float = 1.0,
    max_tokens: int = 256,
    seed: int | None = 0,
    data: str | None = None,
    split: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> Solver:
    """:func:`metacog_probe` then :func:`metacog_solve` (the default plan of every task).

    Args:
        benchmark: Benchmark name.
        probe: Probe(s) to ask.
        confidence: Confidence method(s).
        k: Replies per item for ``sampled``.
        temperature: Sampling temperature for ``sampled``.
        max_tokens: Token budget of a probe reply.
        seed: Base seed of the ``sampled`` replies.
        data: Item source.
        split: Dataset split.
        options: Benchmark options.

    Returns:
        The chained solver.
    """
    return chain(
        metacog_probe(
            benchmark,
            probe=probe,
            confidence=confidence,
            k=k,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            data=data,
            split=split,
            options=options,
        ),
        metacog_solve(benchmark, data=data, split=split, options=options),
    )
