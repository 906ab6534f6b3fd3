"""Run options of the metacog lm-eval tasks, read from lm-eval's task metadata.

lm-eval hands every task one metadata dict: the YAML ``metadata:`` block, then the CLI's
``--model_args`` and ``--metadata`` (or ``TaskManager(metadata=...)``), later keys winning.
The metacog tasks read the keys below from it; every key is optional. Because one ``--metadata``
reaches all tasks of a run, the data and benchmark-option keys also take a mapping from
benchmark name to value (``"*"`` is the fallback entry).

==========================  =======================================================================
key                         meaning
==========================  =======================================================================
``metacog_data``            ``"hf"`` (default: the benchmark's Hugging Face dataset), ``"bundled"``
                            (the mini packs shipped in the wheel, offline), or a local folder /
                            JSON / JSONL file in the dataset's original field names.
``metacog_split``           dataset split (benchmark default when absent).
``metacog_confidence``      which confidences to elicit: ``verbal`` (Yes/No probe), ``logprob``
                            (P(Yes) from log-likelihoods), ``both`` (= verbal,logprob; default),
                            ``sampled`` (k probe samples at temperature > 0, fraction of yes),
                            ``numeric`` (0-100 probe, prospective tasks only), ``all``; or a
                            comma-separated list / JSON list of these.
``metacog_samples``         k for ``sampled`` (default 10).
``metacog_temperature``     sampling temperature for ``sampled`` (default 1.0).
``metacog_probe_max_tokens``  token budget of a probe reply (default 256).
``metacog_options``         benchmark options passed to ``get_benchmark(name, **options)``, e.g.
                            ``{"squad": {"open_book": true}, "legalbench": {"tasks": ["proa"]}}``.
==========================  =======================================================================

Example: ``--metadata '{"metacog_data": "bundled", "metacog_confidence": "verbal"}'``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CONFIDENCE_CHOICES",
    "KIND_NAMES",
    "OptionsError",
    "TaskOptions",
    "parse_confidence_option",
]

#: The confidence elicitation methods, in request order.
CONFIDENCE_CHOICES: tuple[str, ...] = ("verbal", "logprob", "sampled", "numeric")
#: Record-table ``confidence_kind`` of each method.
KIND_NAMES: dict[str, str] = {
    "verbal": "verbal_binary",
    "logprob": "logprob",
    "sampled": "sampled",
    "numeric": "verbal_numeric",
}
_ALIASES: dict[str, tuple[str, ...]] = {
    "both": ("verbal", "logprob"),
    "all": CONFIDENCE_CHOICES,
    "verbal_binary": ("verbal",),
    "verbal_numeric": ("numeric",),
}
_KNOWN_KEYS = frozenset(
    {
        "metacog_data",
        "metacog_split",
        "metacog_confidence",
        "metacog_samples",
        "metacog_temperature",
        "metacog_probe_max_tokens",
        "metacog_options",
    }
)
_HF = frozenset({"", "hf", "huggingface", "hub", "none", "null", "default"})


class OptionsError(ValueError):
    """A metacog metadata key has a bad value, or an unknown ``metacog_*`` key was given."""


def parse_confidence_option(value: Any) -> tuple[str, ...]:
    """Normalise a ``metacog_confidence`` value to a tuple of methods in request order.

    Args:
        value: A string (``"both"``, ``"verbal,logprob"``, a JSON list), a list, or ``None``.

    Returns:
        The selected methods, a non-empty subset of :data:`CONFIDENCE_CHOICES`.

    Raises:
        OptionsError: An unknown method name.
    """
    if value is None:
        return ("verbal", "logprob")
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise OptionsError(f"metacog_confidence: not a JSON list: {text!r}") from exc
        else:
            value = [p for p in text.replace("+", ",").split(",") if p.strip()]
    if not isinstance(value, list | tuple):
        raise OptionsError(f"metacog_confidence: expected a string or a list, got {value!r}")
    chosen: set[str] = set()
    for raw in value:
        name = str(raw).strip().lower()
        if name in _ALIASES:
            chosen.update(_ALIASES[name])
        elif name in CONFIDENCE_CHOICES:
            chosen.add(name)
        else:
            raise OptionsError(
                f"metacog_confidence: unknown method {raw!r}; choose from "
                f"{', '.join((*CONFIDENCE_CHOICES, 'both', 'all'))}"
            )
    if not chosen:
        raise OptionsError("metacog_confidence: no method selected")
    return tuple(c for c in CONFIDENCE_CHOICES if c in chosen)


def _per_benchmark(value: Any, benchmark: str) -> Any:
    """Pick a benchmark's entry from a ``{benchmark: value}`` mapping (``"*"`` = fallback)."""
    if isinstance(value, Mapping):
        if benchmark in value:
            return value[benchmark]
        return value.get("*")
    return value


def _as_int(key: str, value: Any, *, minimum: int) -> int:
    try:
        out = int(value)
    except (TypeError, ValueError) as exc:
        raise OptionsError(f"{key}: expected an integer, got {value!r}") from exc
    if out < minimum:
        raise OptionsError(f"{key}: must be >= {minimum}, got {out}")
    return out


@dataclasses.dataclass(frozen=True)
class TaskOptions:
    """The options of one metacog task, resolved for its benchmark.

    Attributes:
        data: ``None`` for the Hugging Face dataset, ``"bundled"``, or a local path.
        split: Dataset split, or ``None`` for the benchmark default.
        confidence: Elicitation methods (subset of :data:`CONFIDENCE_CHOICES`).
        samples: k, the number of probe samples for ``sampled``.
        temperature: Sampling temperature for ``sampled``.
        probe_max_tokens: Token budget of a probe reply.
        benchmark_options: Keyword arguments for ``get_benchmark``.
    """

    data: str | None = None
    split: str | None = None
    confidence: tuple[str, ...] = ("verbal", "logprob")
    samples: int = 10
    temperature: float = 1.0
    probe_max_tokens: int = 256
    benchmark_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_metadata(
        cls,
        metadata: Mapping[str, Any] | None,
        *,
        benchmark: str,
        task: str,
        yaml_options: Mapping[str, Any] | None = None,
    ) -> TaskOptions:
        """Resolve the options of ``task`` (benchmark ``benchmark``) from lm-eval metadata.

        Args:
            metadata: The task's metadata dict (YAML, ``--model_args`` and ``--metadata``).
            benchmark: Benchmark name, used to pick per-benchmark entries.
            task: Task name, for error messages.
            yaml_options: ``benchmark_options`` from the task YAML (``metacog_options`` wins).

        Returns:
            The resolved options.

        Raises:
            OptionsError: A bad value or an unknown ``metacog_*`` key (naming the task).
        """
        meta = dict(metadata or {})
        unknown = sorted(k for k in meta if k.startswith("metacog_") and k not in _KNOWN_KEYS)
        if unknown:
            raise OptionsError(
                f"task {task}: unknown metadata key(s) {', '.join(unknown)}; known keys: "
                f"{', '.join(sorted(_KNOWN_KEYS))}"
            )
        try:
            data = _per_benchmark(meta.get("metacog_data"), benchmark)
            if data is not None and not isinstance(data, str):
                data = str(data)
            if data is not None and data.strip().lower() in _HF:
                data = None
            split = _per_benchmark(meta.get("metacog_split"), benchmark)
            confidence = parse_confidence_option(meta.get("metacog_confidence"))
            samples = _as_int("metacog_samples", meta.get("metacog_samples", 10), minimum=1)
            try:
                temperature = float(meta.get("metacog_temperature", 1.0))
            except (TypeError, ValueError) as exc:
                raise OptionsError(
                    f"metacog_temperature: expected a number, got {meta['metacog_temperature']!r}"
                ) from exc
            if "sampled" in confidence and temperature <= 0:
                raise OptionsError(
                    f"metacog_temperature: sampled confidence needs a temperature > 0, "
                    f"got {temperature}"
                )
            max_tokens = _as_int(
                "metacog_probe_max_tokens", meta.get("metacog_probe_max_tokens", 256), minimum=1
            )
            options = dict(yaml_options or {})
            extra = meta.get("metacog_options") or {}
            if isinstance(extra, str):
                extra = json.loads(extra)
            if not isinstance(extra, Mapping):
                raise OptionsError(
                    f"metacog_options: expected a mapping of benchmark to options, got {extra!r}"
                )
            chosen = _per_benchmark(extra, benchmark) or {}
            if not isinstance(chosen, Mapping):
                raise OptionsError(
                    f"metacog_options[{benchmark!r}]: expected a mapping, got {chosen!r}"
                )
            options.update(chosen)
        except OptionsError as exc:
            raise OptionsError(f"task {task}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise OptionsError(f"task {task}: metacog_options is not valid JSON: {exc}") from None
        return cls(
            data=data,
            split=None if split is None else str(split),
            confidence=confidence,
            samples=samples,
            temperature=temperature,
            probe_max_tokens=max_tokens,
            benchmark_options=options,
        )
