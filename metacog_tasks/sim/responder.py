"""One simulated model answering harness prompts offline, from its latent state."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import re
import threading
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from metacog_metrics import (
    Population,
    Result,
    SimulationParams,
    model_index,
    model_names,
)
from metacog_tasks.benchmarks import BENCHMARK_NAMES, PROBES, benchmark_class
from metacog_tasks.benchmarks._data import DataUnavailableError
from metacog_tasks.benchmarks.base import Benchmark
from metacog_tasks.sim._index import Entry, PromptIndex, conversation_text
from metacog_tasks.sim._rlmf import asks_rlmf_format, rewrite_request, rlmf_tail, sim_rewrite
from metacog_tasks.sim._wording import numeric_reply, probe_reply
from metacog_tasks.sim.presets import preset_params

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FALLBACK_REPLY",
    "UNKNOWN_LOGLIK",
    "ResponderStats",
    "SimResponder",
    "build_index",
    "simulate_text_records",
]

logger = logging.getLogger("metacog_tasks.sim")

#: What a simulated model says to a prompt it cannot place.
FALLBACK_REPLY = (
    "I cannot answer this: metacog-sim models answer only the solve and probe prompts of the "
    "metacog benchmarks they were loaded with, and this prompt is not one of them."
)
#: Log-likelihood of a continuation the simulator has no view on.
UNKNOWN_LOGLIK = -30.0
_P_CLIP = 1e-9
#: Unknown prompts logged at WARNING before the rest go to DEBUG.
_WARN_LIMIT = 5
_HUB = frozenset({"hf", "hub", "huggingface", "none", ""})
_INT = re.compile(r"[+-]?\d+(?:\.\d+)?")


@dataclasses.dataclass(frozen=True)
class ResponderStats(Result):
    """Request counts of a :class:`SimResponder`.

    Attributes:
        requests: All ``respond`` and ``loglik`` calls.
        solve: Solve prompts answered.
        probe: Probe prompts answered.
        loglik: Log-likelihood requests.
        unknown: Prompts not found in the index (answered with the fallback).
        ambiguous: Prompts whose text several items share (answered as the first item).
        rewrite: RLMF rewriting requests answered (see ``metacog_tasks.sim._rlmf``).
    """

    requests: int = 0
    solve: int = 0
    probe: int = 0
    loglik: int = 0
    unknown: int = 0
    ambiguous: int = 0
    rewrite: int = 0


def _source_map(
    sources: str | Mapping[str, str | None] | None, names: Sequence[str]
) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        if isinstance(sources, Mapping):
            value = sources.get(name, "bundled")
        else:
            value = "bundled" if sources is None else sources
        out[name] = None if value is None or str(value).strip().lower() in _HUB else str(value)
    return out


@functools.lru_cache(maxsize=8)
def _cached_index(
    names: tuple[str, ...],
    sources: tuple[tuple[str, str | None], ...],
    options: str,
    strict: bool,
) -> PromptIndex:
    opts = json.loads(options)
    loaded: dict[str, tuple[Benchmark, list]] = {}
    for name in names:
        source = dict(sources)[name]
        try:
            bench = benchmark_class(name)(**opts.get(name, {}))
        except ImportError:
            if strict:
                raise
            logger.debug("metacog-sim: benchmark %s is not available in this install", name)
            continue
        try:
            items = bench.load(source)
        except DataUnavailableError as exc:
            if strict:
                raise
            logger.warning("metacog-sim: skipping %s (%s)", name, exc)
            continue
        loaded[name] = (bench, items)
    if not loaded:
        raise ValueError(f"metacog-sim: none of the benchmarks {list(names)} could be loaded")
    return PromptIndex(loaded, PROBES)


def build_index(
    benchmarks: Sequence[str] | None = None,
    sources: str | Mapping[str, str | None] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> PromptIndex:
    """The prompt index of some benchmarks (cached per arguments; shared by all models).

    Args:
        benchmarks: Benchmark names; ``None`` for every registered benchmark that loads
            (missing ones are skipped with a log line).
        sources: ``"bundled"`` (default), ``"hf"`` for the Hugging Face dataset, a local path,
            or a mapping of benchmark name to one of these.
        options: Benchmark name -> options of ``get_benchmark`` (``prompts=...``); must be
            JSON-serialisable, and must match what the harness task was built with.

    Returns:
        The index.

    Raises:
        ValueError: No benchmark could be loaded, or a named one is unknown or unavailable.
    """
    strict = benchmarks is not None
    names = tuple(benchmarks) if benchmarks is not None else BENCHMARK_NAMES
    if not names:
        raise ValueError("metacog-sim: no benchmarks given")
    if strict:
        for name in names:
            try:
                benchmark_class(name)  # unknown names fail here with the list of known ones
            except ImportError as exc:
                msg = f"metacog-sim: benchmark {name!r} cannot be imported: {exc}"
                raise ValueError(msg) from exc
    source_map = _source_map(sources, names)
    key = json.dumps({k: dict(v) for k, v in (options or {}).items()}, sort_keys=True)
    return _cached_index(names, tuple(sorted(source_map.items())), key, strict)


class SimResponder:
    """One member of the simulated population, answering harness prompts offline.

    It finds the item and the request behind a prompt (via the benchmark layer's own prompt
    builders), answers a solve prompt right (the benchmark's reference response) or wrong (a
    plausible wrong response) as its latent state says, and answers a probe with a rationale
    whose wording carries its uncertainty, ending in ``Answer: Yes|No`` or ``Confidence: N``.
    For RLMF it also answers in the ``Confidence``/``Meta`` completion format when a solve prompt
    asks for it, and acts as the stage-two editor on rewriting requests
    (:mod:`metacog_tasks.sim._rlmf`).

    Args:
        model_name: ``m01``, ``m02``, ... (a ``metacog-sim/`` prefix is accepted).
        preset: Preset name (see :data:`metacog_metrics.simulate.PRESETS`), with every
            benchmark's own simulation profile.
        seed: Population seed; all harnesses must use the same seed to get the same model.
        sources: Where the items come from: ``"bundled"`` (default), ``"hf"``, a local path,
            or a mapping of benchmark name to one of these.
        benchmarks: Benchmarks to answer (default every registered one that loads).
        params: Full parameters, instead of ``preset`` (their benchmark profiles as given).
        overrides: :class:`SimulationParams` fields replacing the preset's
            (``{"individuated": 0.2}``).
        benchmark_options: Benchmark name -> ``get_benchmark`` options (prompt overrides);
            must match the harness task's.

    Raises:
        ValueError: Bad model name, preset, override or benchmark.

    Example:
        >>> sim = SimResponder("m03")
        >>> reply = sim.respond(probe_prompt_text)  # doctest: +SKIP
    """

    def __init__(
        self,
        model_name: str,
        *,
        preset: str = "paper",
        seed: int | str = 0,
        sources: str | Mapping[str, str | None] | None = None,
        benchmarks: Sequence[str] | None = None,
        params: SimulationParams | None = None,
        overrides: Mapping[str, Any] | None = None,
        benchmark_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        name = str(model_name).strip().rsplit("/", 1)[-1]
        self.index_number = model_index(name)
        self.model = name
        self.params = params if params is not None else preset_params(preset, **(overrides or {}))
        if params is not None and overrides:
            self.params = dataclasses.replace(params, **overrides)
        self.preset = preset if params is None else "custom"
        self.seed = int(seed)
        self.population = Population(self.params, self.index_number, self.seed)
        if isinstance(benchmarks, str):
            benchmarks = [b for b in re.split(r"[,+\s]+", benchmarks) if b]
        self.index = build_index(benchmarks, sources, benchmark_options)
        self.reasoning = self.population.reasoning([self.model])[self.model]
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(dataclasses.asdict(ResponderStats()), 0)
        self._cells: dict[tuple[str, str, str], dict[str, Any]] = {}

    def __repr__(self) -> str:
        return (
            f"SimResponder({self.model!r}, preset={self.preset!r}, seed={self.seed}, "
            f"benchmarks={sorted(self.index.benchmarks)})"
        )

    @staticmethod
    def models(n: int) -> list[str]:
        """Names of the first ``n`` simulated models (``m01 .. mNN``)."""
        return model_names(n)

    @property
    def stats(self) -> ResponderStats:
        """Counts of requests so far, including unknown and ambiguous prompts."""
        with self._lock:
            return ResponderStats(**self._counts)

    def _count(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                self._counts[key] += 1

    # ------------------------------------------------------------------ latent state
    def cell(self, benchmark: str, item_id: str, probe: str = "prospective") -> dict[str, Any]:
        """This model's latent state for one item and probe (correct, confidence, p_yes, ...)."""
        key = (benchmark, item_id, probe)
        cached = self._cells.get(key)
        if cached is not None:
            return cached
        state = self.population.latent(benchmark, [item_id], probe=probe, models=[self.model])
        out = {
            "correct": bool(state.correct[0, 0]),
            "confidence": bool(state.confidence[0, 0]),
            "p_yes": float(state.p_yes[0, 0]),
            "numeric": float(state.numeric[0, 0]),
            "uncertainty": float(state.uncertainty[0, 0]),
            "inline": bool(state.inline[0, 0]),
            "felt_uncertainty": float(state.felt_uncertainty[0, 0]),
            "p_correct": float(state.p_correct[0, 0]),
        }
        self._cells[key] = out
        return out

    # ------------------------------------------------------------------ answers
    def _wrong_prompts(self, entry: Entry, n: int) -> np.ndarray:
        """Which of an item's solve prompts a wrong model gets wrong (at least one)."""
        rng = self.population.rng(entry.benchmark, entry.item.item_id, self.model, "wrong-set")
        wrong = rng.random(n) < 0.5
        wrong[int(rng.integers(n))] = True
        return wrong

    def _solve(self, entry: Entry) -> str:
        bench = self.index.benchmarks[entry.benchmark]
        item = entry.item
        state = self.cell(entry.benchmark, item.item_id)
        n = len(bench.solve_prompts(item))
        if state["correct"] or not self._wrong_prompts(entry, n)[entry.prompt_index]:
            return bench.reference_response(item, entry.prompt_index)
        rng = self.population.rng(
            entry.benchmark, item.item_id, self.model, "wrong", entry.prompt_index
        )
        return bench.wrong_response(item, rng, entry.prompt_index)

    def _probe(self, entry: Entry) -> str:
        probe = entry.probe or "prospective"
        item = entry.item
        state = self.cell(entry.benchmark, item.item_id, probe)
        rng = self.population.rng(entry.benchmark, item.item_id, self.model, "probe", probe)
        # The wording follows a noisy read of the internal state, never the correctness itself
        # (an inline attempt's outcome included): see LatentState.felt_uncertainty.
        common = {
            "uncertainty": state["felt_uncertainty"],
            "rng": rng,
            "inline": state["inline"],
            "reasoning": self.reasoning,
        }
        if probe == "numeric":
            return numeric_reply(item, confidence=state["numeric"], **common)
        return probe_reply(item, yes=state["confidence"], **common)

    def _rlmf_tail(self, entry: Entry) -> str:
        """``Confidence`` (its numeric probe's) and ``Meta`` lines for the RLMF format."""
        item_id = entry.item.item_id
        stated = self.cell(entry.benchmark, item_id, "numeric")["numeric"] / 100.0
        p_correct = self.cell(entry.benchmark, item_id)["p_correct"]
        rng = self.population.rng(entry.benchmark, item_id, self.model, "meta")
        return rlmf_tail(stated, p_correct, rng)

    def _unknown(self, prompt: str | Sequence[Any], what: str) -> None:
        self._count("unknown")
        n = self._counts["unknown"]
        text = prompt if isinstance(prompt, str) else str(list(prompt))
        snippet = " ".join(text.split())[:120]
        level = logging.WARNING if n <= _WARN_LIMIT else logging.DEBUG
        logger.log(
            level,
            "metacog-sim %s: %s prompt not found in the item index (%d so far): %r",
            self.model,
            what,
            n,
            snippet,
        )

    def respond(self, prompt: str | Sequence[Any]) -> str:
        """Answer a harness prompt.

        Args:
            prompt: The text the harness sends (chat templates, system prompts and few-shot
                examples around the item's prompt are fine), or its chat messages (dicts with
                ``role``/``content`` or Inspect ``ChatMessage`` objects).

        Returns:
            The reply: a solve response, a probe rationale ending in ``Answer: Yes|No`` /
            ``Confidence: N``, or :data:`FALLBACK_REPLY` for a prompt it cannot place.
        """
        self._count("requests")
        users, whole = conversation_text(prompt)
        rewrite = rewrite_request(users[0]) if users else None
        if rewrite is not None:  # RLMF stage two: an editing request, not a harness prompt
            self._count("rewrite")
            rng = np.random.default_rng(zlib.crc32(whole.encode("utf-8")) + self.seed)
            return sim_rewrite(*rewrite, rng)
        match = self.index.lookup(prompt)
        if match is None:
            self._unknown(prompt, "generation")
            return FALLBACK_REPLY
        if match.ambiguous:
            self._count("ambiguous")
        if match.entry.kind == "solve":
            self._count("solve")
            reply = self._solve(match.entry)
            if asks_rlmf_format(whole):
                reply += "\n" + self._rlmf_tail(match.entry)
            return reply
        self._count("probe")
        return self._probe(match.entry)

    def loglik(self, context: str | Sequence[Any], continuation: str) -> float:
        """Log-probability of ``continuation`` after ``context``.

        For a Yes/No probe, ``" Yes"``/``"Yes"`` gets ``log P(yes)`` and ``" No"``/``"No"``
        ``log(1 - P(yes))``, so the two normalise to the model's P(yes). For a numeric probe a
        number gets a discretised normal around the model's number. For a solve prompt a
        continuation whose extracted answer is the model's own answer gets ``log 0.9``, others
        ``log 0.1``. Unknown contexts get ``log 0.5`` for Yes/No and ``UNKNOWN_LOGLIK``
        otherwise (counted and logged).

        Args:
            context: The prompt (string or chat messages).
            continuation: The continuation scored.

        Returns:
            The log-probability.
        """
        self._count("requests")
        self._count("loglik")
        word = continuation.strip().strip(".!\"'").lower()
        match = self.index.lookup(context)
        if match is None:
            self._unknown(context, "log-likelihood")
            return math.log(0.5) if word in ("yes", "no") else UNKNOWN_LOGLIK
        if match.ambiguous:
            self._count("ambiguous")
        entry = match.entry
        if entry.kind == "probe" and entry.probe != "numeric":
            state = self.cell(entry.benchmark, entry.item.item_id, entry.probe or "prospective")
            p_yes = min(max(state["p_yes"], _P_CLIP), 1.0 - _P_CLIP)
            if word.startswith("yes"):
                return math.log(p_yes)
            if word.startswith("no"):
                return math.log1p(-p_yes)
            return UNKNOWN_LOGLIK
        if entry.kind == "probe":
            state = self.cell(entry.benchmark, entry.item.item_id, "numeric")
            found = _INT.search(word)
            if not found:
                return UNKNOWN_LOGLIK
            grid = np.arange(101.0)
            logits = -0.5 * ((grid - state["numeric"]) / 8.0) ** 2
            logp = logits - np.logaddexp.reduce(logits)
            value = round(min(max(float(found.group(0)), 0.0), 100.0))
            return float(logp[value])
        bench = self.index.benchmarks[entry.benchmark]
        mine = bench.grade(entry.item, self._solve(entry))
        theirs = bench.grade(entry.item, continuation)
        if mine.extracted is not None and theirs.extracted is not None:
            same = str(mine.extracted).strip() == str(theirs.extracted).strip()
        else:
            same = " ".join(continuation.split()) in " ".join(self._solve(entry).split())
        return math.log(0.9) if same else math.log(0.1)


def simulate_text_records(
    models: Sequence[str] | int,
    *,
    benchmarks: Sequence[str] | None = None,
    replicate: int = 1,
    preset: str = "paper",
    seed: int = 0,
    probe: str = "prospective",
    overrides: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Record-table rows with texts, as the harness runs would log them, without a harness.

    Every bundled item of each benchmark is asked ``replicate`` times under the ids
    ``<item_id>~<k>`` (the latent state hashes the id, so each copy is a new item with the same
    question text): enough items for the text analyses from small packs.

    Args:
        models: Model names, or a count (``m01 .. mNN``).
        benchmarks: Benchmarks (default every one that loads).
        replicate: Copies of each item.
        preset: Generative-model preset.
        seed: Population seed.
        probe: ``prospective`` or ``counterfactual`` (Yes/No probes).
        overrides: :class:`~metacog_metrics.simulate.SimulationParams` fields to replace.

    Returns:
        Records with model, benchmark, item_id, probe, confidence (0/1), confidence_kind,
        correct, question, probe_text, solve_text and reasoning.
    """
    import pandas as pd

    if probe not in ("prospective", "counterfactual"):
        raise ValueError(f"probe must be 'prospective' or 'counterfactual', got {probe!r}")
    if replicate < 1:
        raise ValueError(f"replicate must be >= 1, got {replicate}")
    names = model_names(models) if isinstance(models, int) else list(models)
    sims = [SimResponder(m, preset=preset, seed=seed, benchmarks=benchmarks,
                         overrides=overrides) for m in names]  # fmt: skip
    rows = []
    for bench_name in sims[0].index.benchmarks:
        items = [it for (b, _), it in sims[0].index.items.items() if b == bench_name]
        copies = [dataclasses.replace(it, item_id=f"{it.item_id}~{k}")
                  for k in range(replicate) for it in items]  # fmt: skip
        for sim in sims:
            for item in copies:
                state = sim.cell(bench_name, item.item_id, probe)
                rows.append({
                    "model": sim.model, "benchmark": bench_name, "item_id": item.item_id,
                    "probe": probe, "confidence": float(state["confidence"]),
                    "confidence_kind": "verbal_binary", "correct": float(state["correct"]),
                    "question": item.question,
                    "probe_text": sim._probe(Entry(bench_name, item, "probe", probe, 0, "")),
                    "solve_text": sim._solve(Entry(bench_name, item, "solve", None, 0, "")),
                    "reasoning": sim.reasoning,
                })  # fmt: skip
    return pd.DataFrame(rows)
