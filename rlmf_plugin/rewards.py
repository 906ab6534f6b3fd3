"""Reward functions for TRL's ``GRPOTrainer`` (TRL 1.16 contract).

Each factory returns a function ``f(prompts, completions, **columns) -> list[float | None]``
with a stable ``__name__`` (TRL names metrics after it and unwraps partials). Dataset columns
arrive by name (``benchmark``, ``item_id``, ``source``, ``intrinsic_confidence``, ...) and must
hold one value per completion (else ``ValueError``: no row is ever dropped). A function never
raises on any completion text or column value (only ``SandboxUnavailableError``, when a
benchmark runs model code on a machine with no sandbox boundary), and logs its metrics with
``log_metric``.

Completions are read by :func:`~rlmf_plugin._format.parse_completion`: the grader sees the
answer (the text before the first ``Confidence``/``Meta`` line), never those lines. Let ``q``
be the stated confidence, ``y`` the grader's verdict, ``g`` the target (intrinsic) confidence,
``M`` the stated ``Meta``. Formulas (see docs/rlmf.md):

* ``format``: 1 when the completion has the strict format, else 0;
* ``strict_format``: +1 / -1 for the same test (the official code's strict format reward);
* ``soft_format``: 0 for the strict format, minus a penalty per violation
  (:data:`SOFT_PENALTIES`, at most 0.75 in all), -1 without an answer;
* ``correctness``: ``y`` (1/0); 0 without a readable confidence (the official code grades
  only tagged output);
* ``brier`` (RLCR): ``1 - (q - y)^2``; 0 without a readable confidence;
* ``log_score`` (RewardingDoubt): ``p = clip(q, .001, .999)``, ``s = log p`` if right else
  ``log(1-p)``, ``10 * ((s - lo) / (hi - lo) + 0.25 * y)`` with ``hi = log .999``,
  ``lo = log(.001) / 2``; ``-30`` without a readable confidence;
* ``faithful`` (RLMF, quadratic): ``1 - (q - g)^2``; -1 without a readable confidence;
* ``metacog_score`` (RLMF): ``F = 1[|q - g| <= tau]`` (-1 when ``q`` is unreadable),
  ``Z = 1 - (M - F)^2``; -1 when ``M`` or ``F`` is outside [0, 1]. Train it with weight 0:
  :class:`~rlmf_plugin.trainer.RLMFTrainer` reads it to rescale the faithfulness advantage.

Floors (:data:`FLOORS`): a completion with no answer (nothing alphanumeric before the first tag
line, or longer than :data:`~rlmf_plugin._format.MAX_COMPLETION_CHARS`) gets each reward's
floor, which is below what any answered completion gets (official: -10 for the faithfulness
reward); so does a row whose label is malformed (a target that is not a number in [0, 1], an
unknown benchmark or item), which is counted in the metrics. ``None`` means the row has nothing
to compare with: no target (``None``/NaN), no item named, or a failure on the grader's side
(its source unreadable, the benchmark's grader returned no verdict); TRL leaves it out of that
function's statistics; such a failure is graded again at the next call, never cached. A
grader that raises counts the answer wrong.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlmf_plugin._format import ParsedCompletion, parse_completion, read_unit
from rlmf_plugin._grading import ItemGrader, Verdict

__all__ = [
    "DEFAULT_REWARDS",
    "FLOORS",
    "REWARD_NAMES",
    "SOFT_PENALTIES",
    "TARGETS",
    "RewardFunc",
    "Target",
    "brier_reward",
    "correctness_reward",
    "faithful_reward",
    "format_reward",
    "log_score_reward",
    "make_rewards",
    "metacog_score_reward",
    "resolve_target",
    "soft_format_reward",
    "strict_format_reward",
]

RewardFunc = Callable[..., list[float | None]]
#: A faithfulness target: a name of :data:`TARGETS`, a column name, or
#: ``f(prompts, parsed, columns) -> values`` (one per completion, read as numbers in [0, 1]).
Target = str | Callable[[Sequence[Any], Sequence[ParsedCompletion], Mapping[str, Any]], Any]
#: The named targets of :func:`make_rewards`:
#:
#: * ``onpolicy`` (default; the official code's): the share of the completion's GRPO group whose
#:   answer is equivalent to its own (:class:`~rlmf_plugin.consistency.OnPolicyTarget`);
#: * ``offline``: the share of the item's k harness samples equivalent to the completion's
#:   answer (:class:`~rlmf_plugin.consistency.OfflineTarget`; stale as the policy moves);
#: * ``item``: the per-item column ``intrinsic_confidence`` that ``rlmf build`` wrote, the
#:   expected agreement of two of the k harness samples, the same whatever the answer given;
#: * ``accuracy``: the item's sample accuracy (a P(IK)-style target, factual, not faithful).
TARGETS: tuple[str, ...] = ("onpolicy", "offline", "item", "accuracy")
_COLUMN_OF = {"item": "intrinsic_confidence"}

_LOG_HI = math.log(0.999)
_LOG_LO = math.log(0.001) / 2.0

#: Each reward's floor: its value for a completion with no answer or a malformed label.
FLOORS: dict[str, float] = {
    "format": 0.0,
    "strict_format": -1.0,
    "soft_format": -1.0,
    "correctness": 0.0,
    "brier": -1.0,
    "log_score": -30.0,
    "faithful": -10.0,
    "metacog_score": -10.0,
}
#: Penalty of each strict-format violation in ``soft_format`` (an answered completion loses
#: at most :data:`_SOFT_CAP`, so that no answer, -1, stays below every answered completion).
SOFT_PENALTIES: dict[str, float] = {
    "no_confidence": 0.5,
    "duplicate_confidence": 0.5,
    "bad_confidence": 0.25,
    "duplicate_meta": 0.25,
    "misplaced_meta": 0.25,
    "bad_meta": 0.25,
    "no_meta": 0.25,
    "text_after": 0.25,
}
_SOFT_CAP = 0.75

_local = threading.local()  # per-thread batch memos: the reward server scores concurrently


def _parse_all(completions: Sequence[Any]) -> list[ParsedCompletion]:
    """Parses of a batch; TRL passes the same list to every reward, so it is parsed once."""
    last = getattr(_local, "parsed", None)
    if last is not None and last[0] is completions and isinstance(completions, list):
        return last[1]
    parsed = [parse_completion(c) for c in completions]
    _local.parsed = (completions, parsed)
    return parsed


def _column(kwargs: Mapping[str, Any], name: str, n: int, reward: str) -> list[Any]:
    """Column ``name`` with one value per completion (``None`` each when absent).

    Raises:
        ValueError: The column is not a sequence of ``n`` values.
    """
    values = kwargs.get(name)
    if values is None:
        return [None] * n
    if isinstance(values, (str, bytes, Mapping)):
        raise ValueError(f"{reward}: column {name!r} must be a sequence, got {type(values)}")
    try:
        values = list(values)
    except TypeError:
        raise ValueError(f"{reward}: column {name!r} is not a sequence") from None
    if len(values) != n:
        raise ValueError(f"{reward}: column {name!r} has {len(values)} values for {n} completions")
    return values


def _log(kwargs: Mapping[str, Any], name: str, value: float) -> None:
    log_metric = kwargs.get("log_metric")
    if callable(log_metric) and math.isfinite(value):
        log_metric(name, value)


def _mean(values: Sequence[float | None]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _named(fn: RewardFunc, name: str) -> RewardFunc:
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def _format_stats(kwargs: Mapping[str, Any], parsed: Sequence[ParsedCompletion]) -> None:
    _log(kwargs, "format/answer_rate", _mean([float(p.has_answer) for p in parsed]))
    _log(kwargs, "format/confidence_rate", _mean([float(p.has_confidence) for p in parsed]))
    _log(kwargs, "format/meta_rate", _mean([float(not math.isnan(p.meta)) for p in parsed]))
    _log(kwargs, "format/strict_rate", _mean([float(p.strict()) for p in parsed]))


def format_reward(name: str = "format_reward", *, require_meta: bool = False) -> RewardFunc:
    """1 for the strict format (see :mod:`rlmf_plugin._format`), else 0 (never None)."""

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        _format_stats(kwargs, parsed)
        return [1.0 if p.strict(require_meta) else 0.0 for p in parsed]

    return _named(reward, name)


def strict_format_reward(
    name: str = "strict_format_reward", *, require_meta: bool = False
) -> RewardFunc:
    """+1 for the strict format, -1 otherwise (the official strict format reward)."""

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        _format_stats(kwargs, parsed)
        return [1.0 if p.strict(require_meta) else -1.0 for p in parsed]

    return _named(reward, name)


def soft_format_reward(
    name: str = "soft_format_reward", *, require_meta: bool = False
) -> RewardFunc:
    """0 for the strict format, minus :data:`SOFT_PENALTIES` per violation (at most 0.75),
    -1 without an answer: partial credit, in [-1, 0]."""

    def value(p: ParsedCompletion) -> float:
        if not p.has_answer:
            return FLOORS["soft_format"]
        issues = [*p.violations, *(("no_meta",) if require_meta and not p.has_meta_line else ())]
        return 0.0 - min(_SOFT_CAP, sum(SOFT_PENALTIES.get(v, 0.25) for v in issues))

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        out: list[float | None] = [value(p) for p in parsed]
        _log(kwargs, "format/soft_mean", _mean(out))
        return out

    return _named(reward, name)


_ITEM_COLUMNS = ("benchmark", "item_id", "source")
_NO_ANSWER = Verdict(0.0, "no_answer")  # not graded: nothing to grade


class _Correctness:
    """Per-batch verdicts shared by the rewards that need them (one grade per completion)."""

    def __init__(self, grader: ItemGrader) -> None:
        self.grader = grader
        self._local = threading.local()

    def __call__(
        self, parsed: Sequence[ParsedCompletion], kwargs: Mapping[str, Any], reward: str
    ) -> list[Verdict]:
        columns = tuple(kwargs.get(c) for c in _ITEM_COLUMNS)
        last = getattr(self._local, "last", None)
        # TRL passes the same batch objects to every reward: grade each batch once
        if last is not None and last[0] is parsed and all(a is b for a, b in zip(last[1], columns)):
            return last[2]
        n = len(parsed)
        benches, ids, sources = (_column(kwargs, c, n, reward) for c in _ITEM_COLUMNS)
        verdict = self.grader.verdict
        out = [
            verdict(b, i, s, p.answer) if p.has_answer else _NO_ANSWER
            for p, b, i, s in zip(parsed, benches, ids, sources)
        ]
        self._local.last = (parsed, columns, out)
        return out


_SHARED: weakref.WeakKeyDictionary[ItemGrader, _Correctness] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def _correctness(grader: ItemGrader | None) -> _Correctness:
    """The verdicts of ``grader``, shared by every reward built on it (one grade per batch)."""
    if grader is None:
        return _Correctness(ItemGrader())
    with _SHARED_LOCK:
        if grader not in _SHARED:
            _SHARED[grader] = _Correctness(grader)
        return _SHARED[grader]


def _verdict_stats(kwargs: Mapping[str, Any], verdicts: Sequence[Verdict]) -> None:
    n = len(verdicts)
    if not n:
        return
    right = sum(v.correct == 1.0 for v in verdicts)
    graded = [v for v in verdicts if v.status in ("ok", "grader_error")]
    _log(kwargs, "correctness/accuracy", right / n)  # ungraded rows count as wrong
    _log(kwargs, "correctness/accuracy_graded", _mean([v.correct for v in graded]))
    _log(kwargs, "correctness/graded_rate", len(graded) / n)
    for status, metric in (("bad_label", "bad_labels"), ("grader_error", "grader_errors")):
        _log(kwargs, f"correctness/{metric}", float(sum(v.status == status for v in verdicts)))


def _graded(
    v: Verdict, p: ParsedCompletion, reward: str, no_answer: float, unreadable: float
) -> tuple[bool, float | None]:
    """(done, value) for the cases every grading reward shares; ``done`` False: use ``y``."""
    if v.status == "no_answer":
        return True, no_answer
    if v.status == "bad_label":
        return True, FLOORS[reward]
    if v.status in ("missing", "ungraded"):
        return True, None
    if not p.has_confidence:
        return True, unreadable
    return False, None


def correctness_reward(
    grader: ItemGrader | None = None,
    name: str = "correctness_reward",
    *,
    require_confidence: bool = True,
) -> RewardFunc:
    """The benchmark grader's verdict on the answer: 1/0 (see the module doc).

    Args:
        grader: The grader (one is built when ``None``).
        name: The function's name.
        require_confidence: Pay 0 when no confidence could be read (the official code grades
            tagged output only); ``False`` pays the bare verdict.
    """
    correctness = _correctness(grader)

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        verdicts = correctness(parsed, kwargs, name)
        out: list[float | None] = []
        for p, v in zip(parsed, verdicts):
            unreadable = 0.0 if require_confidence else v.correct
            done, value = _graded(v, p, "correctness", 0.0, unreadable)
            out.append(value if done else v.correct)
        _verdict_stats(kwargs, verdicts)
        return out

    return _named(reward, name)


def _confidence_stats(kwargs: Mapping[str, Any], prefix: str, parsed, targets) -> None:
    qs = [p.confidence for p in parsed]
    _log(kwargs, f"{prefix}/mean_confidence", _mean(qs))
    pairs = [(q, t) for q, t in zip(qs, targets) if not (math.isnan(q) or math.isnan(t))]
    if pairs:
        _log(kwargs, f"{prefix}/brier", sum((q - t) ** 2 for q, t in pairs) / len(pairs))


def brier_reward(
    grader: ItemGrader | None = None,
    name: str = "brier_reward",
    *,
    no_answer: float = FLOORS["brier"],
    no_confidence: float = 0.0,
) -> RewardFunc:
    """Factual calibration, RLCR's Brier term: ``1 - (q - y)^2``; ``no_confidence`` without a
    readable confidence (0; the official factual term is -1)."""
    correctness = _correctness(grader)

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        verdicts = correctness(parsed, kwargs, name)
        out: list[float | None] = []
        for p, v in zip(parsed, verdicts):
            done, value = _graded(v, p, "brier", no_answer, no_confidence)
            out.append(value if done else 1.0 - (p.confidence - v.correct) ** 2)
        ys = [v.correct if v.status in ("ok", "grader_error") else math.nan for v in verdicts]
        _confidence_stats(kwargs, "factual", parsed, ys)
        return out

    return _named(reward, name)


def log_score_reward(
    grader: ItemGrader | None = None,
    name: str = "log_score_reward",
    *,
    scale: float = 10.0,
    correct_bonus: float = 0.25,
    format_penalty: float = FLOORS["log_score"],
) -> RewardFunc:
    """Factual calibration, RewardingDoubt's normalised clipped log score (see module doc);
    ``format_penalty`` without an answer or a readable confidence."""
    correctness = _correctness(grader)

    def value(q: float, y: float) -> float:
        q = min(max(q, 0.001), 0.999)
        s = math.log(q) if y == 1.0 else math.log(1.0 - q)
        return scale * ((s - _LOG_LO) / (_LOG_HI - _LOG_LO) + correct_bonus * y)

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        verdicts = correctness(parsed, kwargs, name)
        out: list[float | None] = []
        for p, v in zip(parsed, verdicts):
            done, result = _graded(v, p, "log_score", format_penalty, format_penalty)
            out.append(result if done else value(p.confidence, v.correct))
        _log(kwargs, "log_score/mean", _mean(out))
        return out

    return _named(reward, name)


def _targets(
    target: Target, prompts: Any, parsed: Sequence[ParsedCompletion], kwargs, reward: str
) -> list[tuple[float, str]]:
    """Each row's target as ``(value, "ok" | "missing" | "bad")`` (see :func:`read_unit`)."""
    n = len(parsed)
    if isinstance(target, str):
        values = _column(kwargs, _COLUMN_OF.get(target, target), n, reward)
    else:
        values = _column({"target": target(prompts, parsed, kwargs)}, "target", n, reward)
    return [read_unit(g) for g in values]


def faithful_reward(
    target: Target = "item",
    name: str = "faithful_reward",
    *,
    no_answer: float = FLOORS["faithful"],
) -> RewardFunc:
    """Faithful calibration (RLMF, quadratic): ``1 - (q - g)^2`` against the target ``g``.

    ``g`` comes from a column (``item``: the agreement among the k harness samples that
    ``rlmf build`` computed) or from a callable (see :data:`Target`; :func:`make_rewards`
    builds the named on-policy and offline targets); -1 without a
    readable confidence; ``no_answer`` (official: -10) without an answer or with a malformed
    target; None when the row has no target.
    """

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        gs = _targets(target, prompts, parsed, kwargs, name)
        out: list[float | None] = []
        for p, (g, status) in zip(parsed, gs):
            if not p.has_answer or status == "bad":
                out.append(no_answer)
            elif status == "missing":
                out.append(None)
            elif not p.has_confidence:
                out.append(-1.0)
            else:
                out.append(1.0 - (p.confidence - g) ** 2)
        _confidence_stats(kwargs, "faithful", parsed, [g for g, _ in gs])
        _log(kwargs, "faithful/bad_targets", float(sum(s == "bad" for _, s in gs)))
        return out

    return _named(reward, name)


def metacog_score_reward(
    target: Target = "item",
    tau: float = 0.10,
    name: str = "metacog_score",
    *,
    no_answer: float = FLOORS["metacog_score"],
) -> RewardFunc:
    """RLMF's metacognitive score ``Z = 1 - (M - F)^2`` (see module doc); train with weight 0.
    ``no_answer`` (official: -10) without an answer or with a malformed target."""

    def reward(prompts=None, completions=(), **kwargs: Any) -> list[float | None]:
        parsed = _parse_all(completions)
        gs = _targets(target, prompts, parsed, kwargs, name)
        out: list[float | None] = []
        for p, (g, status) in zip(parsed, gs):
            if not p.has_answer or status == "bad":
                out.append(no_answer)
                continue
            if status == "missing":
                out.append(None)
                continue
            f = -1.0 if not p.has_confidence else float(abs(p.confidence - g) <= tau + 1e-12)
            m = p.meta
            if math.isnan(m) or not (0.0 <= m <= 1.0) or not (0.0 <= f <= 1.0):
                out.append(-1.0)
            else:
                out.append(1.0 - (m - f) ** 2)
        _log(kwargs, "metacog/mean_Z", _mean(out))
        _log(kwargs, "metacog/bad_targets", float(sum(s == "bad" for _, s in gs)))
        return out

    return _named(reward, name)


#: Every reward :func:`make_rewards` builds, by short name.
REWARD_NAMES: tuple[str, ...] = (
    "format",
    "strict_format",
    "soft_format",
    "correctness",
    "brier",
    "log_score",
    "faithful",
    "metacog_score",
)
#: The set built when no names are given.
DEFAULT_REWARDS: tuple[str, ...] = (
    "format",
    "correctness",
    "brier",
    "log_score",
    "faithful",
    "metacog_score",
)


def resolve_target(
    target: Target,
    grader: Any,
    *,
    judge: Any = None,
    gather: Callable[[list[Any]], list[Any]] | None = None,
) -> Target:
    """The target a reward reads: ``onpolicy``/``offline`` become their callables (built on
    ``grader``), ``item`` the ``intrinsic_confidence`` column, other names stay columns."""
    from rlmf_plugin.consistency import OfflineTarget, OnPolicyTarget

    if target == "onpolicy":
        return OnPolicyTarget(grader, judge=judge, gather=gather)
    if target == "offline":
        return OfflineTarget(grader)
    if isinstance(target, str) and not target:
        raise ValueError(f"target must be one of {list(TARGETS)} or a column name")
    return target


def make_rewards(
    names: Sequence[str] = DEFAULT_REWARDS,
    *,
    grader: ItemGrader | None = None,
    target: Target = "onpolicy",
    tau: float = 0.10,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    judge: Any = None,
    gather: Callable[[list[Any]], list[Any]] | None = None,
) -> list[RewardFunc]:
    """Build reward functions by short name, sharing one grader.

    Args:
        names: Any of :data:`REWARD_NAMES`.
        grader: The grader (one is built when ``None``).
        target: The faithfulness target: a name of :data:`TARGETS` (``onpolicy`` by
            default), another column, or a callable (:data:`Target`).
        tau: The metacognitive score's tolerance.
        options: Keyword options per short name, passed to its factory (for example
            ``{"faithful": {"no_answer": -10}, "format": {"require_meta": True}}``).
        judge: For ``onpolicy``: an LLM judge of answer consistency
            (:class:`~rlmf_plugin.judge.ConsistencyJudge`) instead of answer equivalence.
        gather: For ``onpolicy``: concatenates a list over the training processes, so that a
            group split across them is joined (``accelerate.utils.gather_object``).

    Raises:
        ValueError: An unknown reward name, or an option its factory does not take.
    """
    grader = grader or ItemGrader()
    target = resolve_target(target, grader, judge=judge, gather=gather)
    builders: dict[str, Callable[..., RewardFunc]] = {
        "format": format_reward,
        "strict_format": strict_format_reward,
        "soft_format": soft_format_reward,
        "correctness": lambda **o: correctness_reward(grader, **o),
        "brier": lambda **o: brier_reward(grader, **o),
        "log_score": lambda **o: log_score_reward(grader, **o),
        "faithful": lambda **o: faithful_reward(target, **o),
        "metacog_score": lambda **o: metacog_score_reward(target, tau, **o),
    }
    options = dict(options or {})
    unknown = [n for n in [*names, *options] if n not in builders]
    if unknown:
        raise ValueError(f"unknown reward(s) {unknown}; known: {list(REWARD_NAMES)}")
    out = []
    for n in names:
        try:
            out.append(builders[n](**dict(options.get(n, {}))))
        except TypeError as exc:
            raise ValueError(f"reward {n!r}: bad option ({exc})") from None
    return out
