"""Reward functions for TRL's ``GRPOTrainer`` (TRL 1.16 contract).

Each factory returns a function ``f(prompts, completions, **columns) -> list[float | None]``
with a stable ``__name__`` (TRL names metrics after it and unwraps partials). Dataset columns
arrive by name (``benchmark``, ``item_id``, ``source``, ``intrinsic_confidence``, ...). A
function never raises on any completion text; it returns ``None`` for a row it cannot score
(an ungradable item, a missing intrinsic confidence), and logs its metrics with ``log_metric``.

Formulas (see docs/rlmf.md):

* format: 1 when an answer and a parseable ``Confidence`` are present, else 0;
* correctness: the benchmark grader's verdict (1/0);
* Brier (RLCR): ``1 - (q - y)^2``; 0 when no confidence was stated;
* log score (RewardingDoubt): ``p = clip(q, .001, .999)``, ``s = log p`` if right else
  ``log(1-p)``, ``10 * ((s - lo) / (hi - lo) + 0.25 * y)`` with ``hi = log .999``,
  ``lo = log(.001) / 2``; ``-30`` when no confidence was stated;
* faithful (RLMF, quadratic): ``1 - (q - g)^2`` against the intrinsic confidence ``g``; -1
  when no confidence was stated;
* metacognitive score (RLMF): ``F = 1[|q - g| <= tau]`` (-1 when ``q`` is invalid),
  ``Z = 1 - (M - F)^2`` with ``M`` the stated ``Meta``; -1 when ``M`` or ``F`` is outside [0, 1].
  Train it with weight 0: :class:`~rlmf_plugin.trainer.RLMFTrainer` reads it to rescale the
  advantage of the faithfulness reward.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from rlmf_plugin._format import ParsedCompletion, as_unit, parse_completion
from rlmf_plugin._grading import ItemGrader

__all__ = [
    "REWARD_NAMES",
    "RewardFunc",
    "brier_reward",
    "correctness_reward",
    "faithful_reward",
    "format_reward",
    "log_score_reward",
    "make_rewards",
    "metacog_score_reward",
]

RewardFunc = Callable[..., list[float | None]]

_LOG_HI = math.log(0.999)
_LOG_LO = math.log(0.001) / 2.0


_last_batch: list[Any] = [None, None]  # (completions object, its parses)


def _parse_all(completions: Sequence[Any]) -> list[ParsedCompletion]:
    """Parses of a batch; TRL passes the same list to every reward, so it is parsed once."""
    if _last_batch[0] is completions and isinstance(completions, list):
        return _last_batch[1]
    parsed = [parse_completion(c) for c in completions]
    _last_batch[0], _last_batch[1] = completions, parsed
    return parsed


def _column(kwargs: dict[str, Any], name: str, n: int) -> list[Any]:
    values = kwargs.get(name)
    if values is None:
        return [None] * n
    values = list(values)
    return values if len(values) == n else [None] * n


def _log(kwargs: dict[str, Any], name: str, value: float) -> None:
    log_metric = kwargs.get("log_metric")
    if callable(log_metric) and math.isfinite(value):
        log_metric(name, value)


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _named(fn: RewardFunc, name: str) -> RewardFunc:
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


class _Correctness:
    """Per-batch correctness shared by the rewards that need it (graded once per completion)."""

    def __init__(self, grader: ItemGrader) -> None:
        self.grader = grader
        self._last: tuple[Any, tuple[Any, ...], list[float]] | None = None

    def __call__(self, parsed: Sequence[ParsedCompletion], kwargs: dict[str, Any]) -> list[float]:
        columns = tuple(kwargs.get(c) for c in ("benchmark", "item_id", "source"))
        last = self._last
        # TRL passes the same batch objects to every reward: grade each batch once
        if last is not None and last[0] is parsed and all(a is b for a, b in zip(last[1], columns)):
            return last[2]
        n = len(parsed)
        benches = _column(kwargs, "benchmark", n)
        ids = _column(kwargs, "item_id", n)
        sources = _column(kwargs, "source", n)
        correct = self.grader.correct
        ys = [correct(b, i, s, p.answer) for p, b, i, s in zip(parsed, benches, ids, sources)]
        self._last = (parsed, columns, ys)
        return ys


_SHARED: weakref.WeakKeyDictionary[ItemGrader, _Correctness] = weakref.WeakKeyDictionary()


def _correctness(grader: ItemGrader | None) -> _Correctness:
    """The correctness of ``grader``, shared by every reward built on it (one grade per batch)."""
    if grader is None:
        return _Correctness(ItemGrader())
    if grader not in _SHARED:
        _SHARED[grader] = _Correctness(grader)
    return _SHARED[grader]


def format_reward(name: str = "format_reward") -> RewardFunc:
    """1 when the completion has an answer and a parseable confidence, else 0 (never None)."""

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        out: list[float | None] = [1.0 if p.has_confidence and p.answer else 0.0 for p in parsed]
        _log(kwargs, "format/confidence_rate", _mean([float(p.has_confidence) for p in parsed]))
        _log(kwargs, "format/meta_rate", _mean([float(not math.isnan(p.meta)) for p in parsed]))
        return out

    return _named(reward, name)


def correctness_reward(
    grader: ItemGrader | None = None, name: str = "correctness_reward"
) -> RewardFunc:
    """The benchmark grader's verdict on the answer part: 1/0, None when ungradable."""
    correctness = _correctness(grader)

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        ys = correctness(parsed, kwargs)
        _log(kwargs, "correctness/accuracy", _mean(ys))
        _log(kwargs, "correctness/graded_rate", _mean([float(not math.isnan(y)) for y in ys]))
        return [None if math.isnan(y) else y for y in ys]

    return _named(reward, name)


def _confidence_stats(kwargs: dict[str, Any], prefix: str, parsed, targets) -> None:
    qs = [p.confidence for p in parsed]
    _log(kwargs, f"{prefix}/mean_confidence", _mean(qs))
    pairs = [(q, t) for q, t in zip(qs, targets) if not (math.isnan(q) or math.isnan(t))]
    if pairs:
        _log(kwargs, f"{prefix}/brier", sum((q - t) ** 2 for q, t in pairs) / len(pairs))


def brier_reward(grader: ItemGrader | None = None, name: str = "brier_reward") -> RewardFunc:
    """Factual calibration, RLCR's Brier term: ``1 - (q - y)^2``; 0 without a confidence."""
    correctness = _correctness(grader)

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        ys = correctness(parsed, kwargs)
        out: list[float | None] = []
        for p, y in zip(parsed, ys):
            if math.isnan(y):
                out.append(None)
            elif not p.has_confidence:
                out.append(0.0)
            else:
                out.append(1.0 - (p.confidence - y) ** 2)
        _confidence_stats(kwargs, "factual", parsed, ys)
        return out

    return _named(reward, name)


def log_score_reward(
    grader: ItemGrader | None = None,
    name: str = "log_score_reward",
    *,
    scale: float = 10.0,
    correct_bonus: float = 0.25,
    format_penalty: float = -30.0,
) -> RewardFunc:
    """Factual calibration, RewardingDoubt's normalised clipped log score (see module doc)."""
    correctness = _correctness(grader)

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        ys = correctness(parsed, kwargs)
        out: list[float | None] = []
        for p, y in zip(parsed, ys):
            if math.isnan(y):
                out.append(None)
            elif not p.has_confidence:
                out.append(format_penalty)
            else:
                q = min(max(p.confidence, 0.001), 0.999)
                s = math.log(q) if y == 1.0 else math.log(1.0 - q)
                out.append(scale * ((s - _LOG_LO) / (_LOG_HI - _LOG_LO) + correct_bonus * y))
        _log(kwargs, "log_score/mean", _mean([v for v in out if v is not None]))
        return out

    return _named(reward, name)


def faithful_reward(
    target: str = "intrinsic_confidence", name: str = "faithful_reward"
) -> RewardFunc:
    """Faithful calibration (RLMF, quadratic): ``1 - (q - g)^2`` against column ``target``.

    ``g`` is the intrinsic confidence from agreement among the k harness samples; -1 without a
    stated confidence; None when the row has no ``g``.
    """

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        gs = [as_unit(g) for g in _column(kwargs, target, len(parsed))]
        out: list[float | None] = []
        for p, g in zip(parsed, gs):
            if math.isnan(g):
                out.append(None)
            elif not p.has_confidence:
                out.append(-1.0)
            else:
                out.append(1.0 - (p.confidence - g) ** 2)
        _confidence_stats(kwargs, "faithful", parsed, gs)
        return out

    return _named(reward, name)


def metacog_score_reward(
    target: str = "intrinsic_confidence",
    tau: float = 0.10,
    name: str = "metacog_score",
) -> RewardFunc:
    """RLMF's metacognitive score ``Z = 1 - (M - F)^2`` (see module doc); train with weight 0."""

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        gs = [as_unit(g) for g in _column(kwargs, target, len(parsed))]
        out: list[float | None] = []
        for p, g in zip(parsed, gs):
            if math.isnan(g):
                out.append(None)
                continue
            f = -1.0 if not p.has_confidence else float(abs(p.confidence - g) <= tau + 1e-12)
            m = p.meta
            if math.isnan(m) or not (0.0 <= m <= 1.0) or not (0.0 <= f <= 1.0):
                out.append(-1.0)
            else:
                out.append(1.0 - (m - f) ** 2)
        _log(kwargs, "metacog/mean_Z", _mean([v for v in out if v is not None]))
        return out

    return _named(reward, name)


#: Names accepted by :func:`make_rewards`, in the order of the full set.
REWARD_NAMES: tuple[str, ...] = (
    "format",
    "correctness",
    "brier",
    "log_score",
    "faithful",
    "metacog_score",
)


def make_rewards(
    names: Sequence[str] = REWARD_NAMES,
    *,
    grader: ItemGrader | None = None,
    target: str = "intrinsic_confidence",
    tau: float = 0.10,
) -> list[RewardFunc]:
    """Build reward functions by short name, sharing one grader.

    Args:
        names: Any of :data:`REWARD_NAMES`.
        grader: The grader (one is built when ``None``).
        target: Column holding the faithfulness target (``intrinsic_confidence`` for faithful
            calibration, ``accuracy`` for the P(IK)-style target).
        tau: The metacognitive score's tolerance.

    Raises:
        ValueError: An unknown reward name.
    """
    grader = grader or ItemGrader()
    builders: dict[str, Callable[[], RewardFunc]] = {
        "format": format_reward,
        "correctness": lambda: correctness_reward(grader),
        "brier": lambda: brier_reward(grader),
        "log_score": lambda: log_score_reward(grader),
        "faithful": lambda: faithful_reward(target),
        "metacog_score": lambda: metacog_score_reward(target, tau),
    }
    unknown = [n for n in names if n not in builders]
    if unknown:
        raise ValueError(f"unknown reward(s) {unknown}; known: {list(REWARD_NAMES)}")
    return [builders[n]() for n in names]
