"""Stage two of RLMF: numeric confidence said in words, with phrases calibrated on data.

A :class:`Hedge` is a phrase (``"probably"``) with the probability it claims (0.65) and a
sentence template. :func:`calibrate_phrases` maps stated confidence to hedges so that each
hedge's *empirical accuracy* matches its claim: it fits ``P(correct | confidence)`` by isotonic
regression (monotone, as a reading of confidence should be) and gives each confidence the hedge
whose claim is nearest to that fitted probability; hedges that too few answers would use are
dropped and their share goes to the neighbours. The map is checked out of sample (two folds
split by item): per hedge, the held-out accuracy with a Wilson interval against the claim.

Rewriters replace the numeric ``Confidence``/``Meta`` lines of a completion with a hedged
sentence:

* :func:`rewrite_rule` (deterministic): the hedge's template with the answer the benchmark's
  grader extracts, after the answer (else before it), keeping whichever placement the grader
  still grades the same; the result says whether the grade was kept.
* :func:`rewrite_llm`: an LLM editor through Inspect's model API (any provider, or
  ``metacog-sim/...`` offline), offered the hedge's phrase and its neighbours as options
  (RLMF's stage-two prompt, our wording); an answer that drops the phrase or changes the grade
  falls back to the rule rewrite, and is counted.

The phrases and claims are this project's own; no third-party hedge list is used.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from metacog_metrics import Result

__all__ = [
    "HEDGES",
    "Hedge",
    "PhraseMap",
    "Rewrite",
    "VerbalizeResult",
    "calibrate_phrases",
    "intrinsic_map",
    "rewrite_llm",
    "rewrite_prompt",
    "rewrite_rule",
    "verbalize",
]


@dataclasses.dataclass(frozen=True)
class Hedge:
    """A hedging phrase, the probability it claims, and a sentence with an ``{answer}`` slot."""

    claim: float
    phrase: str
    template: str


#: The phrase bank, from least to most confident (claims are the probabilities the phrases are
#: meant to convey; the calibration decides which confidences earn each one).
HEDGES: tuple[Hedge, ...] = (
    Hedge(0.05, "a wild guess", "I really do not know; a wild guess would be {answer}."),
    Hedge(0.15, "very unlikely", "It is very unlikely to be right, but I would say {answer}."),
    Hedge(0.25, "doubtful", "This is doubtful, but perhaps the answer is {answer}."),
    Hedge(0.35, "possibly", "Possibly the answer is {answer}, though I am far from sure."),
    Hedge(0.45, "maybe", "Maybe the answer is {answer}."),
    Hedge(0.55, "more likely than not", "More likely than not, the answer is {answer}."),
    Hedge(0.65, "probably", "Probably the answer is {answer}."),
    Hedge(0.75, "likely", "The answer is likely {answer}."),
    Hedge(0.85, "very likely", "The answer is very likely {answer}."),
    Hedge(0.93, "almost certainly", "The answer is almost certainly {answer}."),
    Hedge(0.98, "certainly", "The answer is certainly {answer}."),
)


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


@dataclasses.dataclass(frozen=True)
class PhraseMap(Result):
    """Confidence intervals ``(low, high]`` (the first closed at 0) mapped to hedges.

    Attributes:
        bins: One entry per hedge used, increasing: ``phrase``, ``claim``, ``template``,
            ``low``, ``high`` (confidence bounds), ``n_fit`` (answers of the fitting data in the
            bin), ``accuracy_fit``.
        validation: Out-of-sample check (two folds by item): per hedge ``n``, ``accuracy``,
            ``ci_low``, ``ci_high`` (Wilson 95%), ``claim_in_ci``, and ``consistent``: the
            interval reaches the accuracies nearer to this claim than to any other phrase's
            (``cell_low``, ``cell_high``: the best a finite bank allows); ``verbal_ece`` (the
            n-weighted mean of ``|accuracy - claim|``) beside ``naive_ece``, the same for the
            uncalibrated map (each confidence to the hedge whose claim is nearest to it).
        n_fit: Answers the map was fitted on.
        min_count: Fewest fitting answers a hedge needs to be kept.
    """

    bins: tuple[dict[str, Any], ...]
    validation: dict[str, Any]
    n_fit: int
    min_count: int

    def hedge(self, confidence: float) -> Hedge | None:
        """The hedge for a stated confidence in [0, 1]; ``None`` for NaN or out of range."""
        if not (isinstance(confidence, (int, float)) and 0.0 <= confidence <= 1.0):
            return None
        for b in self.bins:
            if confidence <= b["high"]:
                return Hedge(b["claim"], b["phrase"], b["template"])
        return None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PhraseMap:
        """The map saved by ``to_dict`` (``mapping.json``)."""
        return cls(
            bins=tuple(dict(b) for b in data["bins"]),
            validation=dict(data.get("validation") or {}),
            n_fit=int(data.get("n_fit", 0)),
            min_count=int(data.get("min_count", 0)),
        )


def intrinsic_map(inventory: Sequence[Any] | None = None, *, width: float = 0.05) -> PhraseMap:
    """The :class:`PhraseMap` of the official rewriting (:mod:`rlmf_plugin.hedges`): 20 bins of
    ``width`` on the confidence axis; a bin's hedges are the inventory's phrases whose
    decisiveness falls in it (``options``; the first is used by the rule rewriter), an empty
    bin takes the phrase of nearest decisiveness."""
    from rlmf_plugin.hedges import INVENTORY, bin_of

    inventory = INVENTORY if inventory is None else inventory
    n = round(1 / width)
    by_bin: dict[int, list[Any]] = {}
    for h in inventory:
        by_bin.setdefault(bin_of(h.decisiveness, width), []).append(h)
    bins = []
    for k in range(n):
        lo, hi = k * width, (k + 1) * width
        hedges = by_bin.get(k)
        if not hedges:
            centre = (lo + hi) / 2
            hedges = [min(inventory, key=lambda h: (abs(h.decisiveness - centre), h.phrase))]
        first = hedges[0]
        bins.append({
            "phrase": first.phrase, "claim": first.decisiveness, "template": first.template,
            "low": round(lo, 6), "high": round(hi, 6), "options": [h.phrase for h in hedges],
            "n_fit": 0, "accuracy_fit": None,
        })  # fmt: skip
    validation = {"mapping": "intrinsic", "width": width}
    return PhraseMap(tuple(bins), validation, 0, 0)


def _fit(conf: np.ndarray, correct: np.ndarray, hedges: Sequence[Hedge], min_count: int):
    """The hedges kept and the hedge of each point of a 0.001 confidence grid.

    ``P(correct | confidence)`` is fitted by isotonic regression; each grid confidence gets the
    hedge whose claim is nearest to the fitted probability. While a hedge would be given to
    fewer than ``min_count`` answers (or none), the thinnest is dropped and the grid assigned
    again, so every hedge kept is earned by enough answers to check its claim.
    """
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    iso.fit(conf, correct)
    grid = np.linspace(0.0, 1.0, 1001)
    p_grid = iso.predict(grid)
    pos = np.clip(np.searchsorted(grid, conf, side="left"), 0, len(grid) - 1)
    used = list(hedges)
    while True:
        claims = np.array([h.claim for h in used])
        grid_bin = np.abs(p_grid[:, None] - claims[None, :]).argmin(axis=1)
        grid_bin = np.maximum.accumulate(grid_bin)  # monotone in confidence, as p_grid is
        counts = np.bincount(grid_bin[pos], minlength=len(used))
        if (counts >= min_count).all() or len(used) == 1:
            return used, grid, grid_bin
        empty = np.flatnonzero(counts == 0)
        if empty.size:  # hedges no answer would get: unverifiable, dropped together
            used = [h for j, h in enumerate(used) if j not in set(empty.tolist())]
        else:
            used.pop(int(counts.argmin()))


def _assign(conf: np.ndarray, grid: np.ndarray, grid_bin: np.ndarray) -> np.ndarray:
    """Index of the hedge of each confidence: the bin of the first grid point >= it."""
    return grid_bin[np.clip(np.searchsorted(grid, conf, side="left"), 0, len(grid) - 1)]


def _cell(claim: float, bank: Sequence[float]) -> tuple[float, float]:
    """The accuracies nearer to ``claim`` than to any other claim of the bank."""
    below = [c for c in bank if c < claim]
    above = [c for c in bank if c > claim]
    return ((max(below) + claim) / 2 if below else 0.0, (min(above) + claim) / 2 if above else 1.0)


def _table(conf, correct, hedge_idx, hedges, bank: Sequence[float]) -> list[dict[str, Any]]:
    rows = []
    for j, h in enumerate(hedges):
        m = hedge_idx == j
        n, k = int(m.sum()), int(correct[m].sum())
        lo, hi = _wilson(k, n)
        cell = _cell(h.claim, bank)
        rows.append({
            "phrase": h.phrase, "claim": h.claim, "n": n,
            "accuracy": k / n if n else None, "ci_low": lo if n else None,
            "ci_high": hi if n else None,
            "claim_in_ci": bool(lo <= h.claim <= hi) if n else None,
            # With a finite bank a phrase can only be as exact as the gap to its neighbours:
            # its accuracy should fall nearer its claim than any other phrase's claim.
            "cell_low": cell[0], "cell_high": cell[1],
            "consistent": bool(lo <= cell[1] and hi >= cell[0]) if n else None,
            "mean_confidence": float(conf[m].mean()) if n else None,
        })  # fmt: skip
    return rows


def _ece(rows: Sequence[Mapping[str, Any]]) -> float:
    n = sum(r["n"] for r in rows)
    if not n:
        return math.nan
    return sum(r["n"] * abs(r["accuracy"] - r["claim"]) for r in rows if r["n"]) / n


def calibrate_phrases(
    confidence: Sequence[float],
    correct: Sequence[float],
    *,
    items: Sequence[Any] | None = None,
    hedges: Sequence[Hedge] = HEDGES,
    min_count: int = 30,
    seed: int = 0,
) -> PhraseMap:
    """Fit the confidence -> hedge map (see the module doc) and check it out of sample.

    Args:
        confidence: Stated confidences in [0, 1] (NaN pairs are dropped).
        correct: 0/1 grades.
        items: Item of each pair: the two validation folds split by item (an item's answers by
            several models stay together). Each pair is its own item when ``None``.
        hedges: The phrase bank (sorted by claim).
        min_count: Fewest fitting answers for a hedge to be kept.
        seed: Seed of the fold split.

    Raises:
        ValueError: Fewer than ``2 * min_count`` usable pairs, or grades that are not 0/1.
    """
    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    ok = np.isfinite(c) & np.isfinite(y) & (c >= 0) & (c <= 1)
    if items is None:
        groups = np.arange(len(c))
    else:
        groups = np.unique(np.asarray([str(i) for i in items]), return_inverse=True)[1]
    c, y, groups = c[ok], y[ok], groups[ok]
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("correct must be 0/1")
    if len(c) < 2 * min_count:
        raise ValueError(f"{len(c)} usable (confidence, correct) pairs; need {2 * min_count}")
    hedges = sorted(hedges, key=lambda h: h.claim)
    used, grid, grid_bin = _fit(c, y, hedges, min_count)
    idx = _assign(c, grid, grid_bin)
    bins = []
    for j, h in enumerate(used):
        inside = grid[grid_bin == j]
        m = idx == j
        bins.append({
            "phrase": h.phrase, "claim": h.claim, "template": h.template,
            "low": float(inside.min()), "high": float(inside.max()),
            "n_fit": int(m.sum()), "accuracy_fit": float(y[m].mean()) if m.any() else None,
        })  # fmt: skip
    for a, b in itertools.pairwise(bins):  # contiguous (low, high]: starts where the last ends
        b["low"] = a["high"]
    bins[0]["low"], bins[-1]["high"] = 0.0, 1.0
    # Out of sample: fit on one half of the items, assign the other half, both ways round.
    rng = np.random.default_rng(seed)
    fold = rng.permutation(groups.max() + 1)[groups] % 2
    held_claim = np.empty(len(c))
    for f in (0, 1):
        train, test = fold != f, fold == f
        u, g, gb = _fit(c[train], y[train], hedges, max(1, min_count // 2))
        j = _assign(c[test], g, gb)
        held_claim[test] = np.array([u[k].claim for k in j])
    claims = sorted({*held_claim.tolist()})
    by_claim = {h.claim: h for h in hedges}
    held_idx = np.array([claims.index(v) for v in held_claim])
    bank = [h.claim for h in hedges]
    held = _table(c, y, held_idx, [by_claim[v] for v in claims], bank)
    nearest = np.abs(c[:, None] - np.array(bank)[None, :]).argmin(axis=1)
    naive = _table(c, y, nearest, hedges, bank)
    validation = {
        "folds": 2,
        "per_hedge": [r for r in held if r["n"]],
        "verbal_ece": _ece(held),
        "naive_ece": _ece(naive),
        "naive_per_hedge": [r for r in naive if r["n"]],
    }
    return PhraseMap(tuple(bins), validation, len(c), int(min_count))


# --------------------------------------------------------------------------------------------
# Rewriting
# --------------------------------------------------------------------------------------------

_NUMERIC_LINE = re.compile(r"^[ \t*_`>#]*(?:confidence|meta(?:[ -]?score)?)\b.*$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Rewrite(Result):
    """One rewritten completion.

    Attributes:
        text: The completion with its confidence in words.
        phrase: The hedge used (``None`` when no confidence was stated: text unchanged).
        claim: Its claimed probability.
        confidence: The stated confidence that was replaced.
        rewriter: ``rule``, ``llm``, or ``rule (llm fallback: <why>)``.
        grade_kept: Whether the benchmark's grader grades the rewrite as the original
            (``None`` when the item is unknown).
    """

    text: str
    phrase: str | None
    claim: float | None
    confidence: float
    rewriter: str
    grade_kept: bool | None


def _without_numbers(text: str) -> str:
    lines = [ln for ln in text.splitlines() if not _NUMERIC_LINE.match(ln)]
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _grade(grader, ref: Mapping[str, Any] | None, text: str) -> tuple[float, str | None] | None:
    if grader is None or not ref or not ref.get("benchmark"):
        return None
    item = grader.item(ref["benchmark"], str(ref.get("item_id")), ref.get("source"))
    if item is None:
        return None
    from metacog_tasks.sandbox import SandboxUnavailableError

    try:
        g = grader.benchmark(ref["benchmark"]).grade(item, text)
    except SandboxUnavailableError:
        raise  # no boundary for model code here: every grade would be lost, so say so
    except Exception:  # a grader bug is reported as "grade not kept", never raised
        return (math.nan, None)
    return (float(g.correct), g.extracted)


def rewrite_rule(
    completion: str,
    phrase_map: PhraseMap,
    *,
    item: Mapping[str, Any] | None = None,
    grader: Any = None,
) -> Rewrite:
    """Replace the numeric confidence of ``completion`` with its hedge (see the module doc).

    Args:
        completion: A completion in the RLMF format (answer, ``Confidence``, ``Meta``).
        phrase_map: The calibrated map.
        item: ``benchmark``, ``item_id``, ``source`` of the completion's item (to grade).
        grader: An :class:`~rlmf_plugin._grading.ItemGrader` (one is built when ``item`` is
            given and this is ``None``).
    """
    from rlmf_plugin._format import parse_completion

    parsed = parse_completion(completion)
    hedge = phrase_map.hedge(parsed.confidence)
    if hedge is None:
        return Rewrite(completion, None, None, parsed.confidence, "rule", None)
    if grader is None and item:
        from rlmf_plugin._grading import ItemGrader

        grader = ItemGrader()
    body = _without_numbers(completion)
    before = _grade(grader, item, parsed.answer)
    extracted = before[1] if before and before[1] else None
    if not extracted:
        lines = [ln.strip() for ln in parsed.answer.splitlines() if ln.strip()]
        extracted = lines[-1] if lines else "this"
    sentence = hedge.template.format(answer=extracted.rstrip("."))
    bare = f"My confidence in this answer, in words: {hedge.phrase}."
    candidates = [f"{body}\n{sentence}", f"{sentence}\n{body}"]
    candidates += [f"{body}\n{bare}", f"{bare}\n{body}"]
    if before is None:
        return Rewrite(candidates[0], hedge.phrase, hedge.claim, parsed.confidence, "rule", None)
    for text in candidates:
        if _grade(grader, item, text) == before:
            return Rewrite(text, hedge.phrase, hedge.claim, parsed.confidence, "rule", True)
    return Rewrite(candidates[0], hedge.phrase, hedge.claim, parsed.confidence, "rule", False)


def _options(phrase_map: PhraseMap, hedge: Hedge, k: int = 1) -> list[str]:
    """The hedge's phrase first, then up to ``k`` more: the other phrases of its bin (the
    intrinsic map's ``options``), else those of the neighbouring bins."""
    for b in phrase_map.bins:
        same = b["phrase"] == hedge.phrase and abs(b["claim"] - hedge.claim) < 1e-9
        if same and b.get("options"):
            return list(b["options"])[: max(k, 0) + 1]
    phrases = [b["phrase"] for b in phrase_map.bins]
    i = phrases.index(hedge.phrase) if hedge.phrase in phrases else 0
    near = sorted(range(len(phrases)), key=lambda j: (abs(j - i), j))
    return [phrases[j] for j in near[: k + 1]]


def rewrite_prompt(completion: str, hedge: Hedge, options: Sequence[str]) -> str:
    """The editing request sent to an LLM rewriter (the ``<text>``/``<phrases>`` protocol)."""
    listed = "\n".join(f"- {p}" for p in options)
    return (
        "Rewrite the answer in the text block below so that it expresses its level of "
        f'confidence in words, using the phrase "{hedge.phrase}" (the phrases listed are the '
        "acceptable wordings; prefer the first). Remove the numeric Confidence and Meta lines "
        "and any other hedging. Keep every fact, every step and the final answer exactly as "
        "they are, including how the final answer is written. Reply with the rewritten text "
        "only.\n\n"
        f"<text>\n{completion}\n</text>\n\n<phrases>\n{listed}\n</phrases>"
    )


def rewrite_llm(
    completions: Sequence[str],
    phrase_map: PhraseMap,
    model: str,
    *,
    items: Sequence[Mapping[str, Any] | None] | None = None,
    model_args: Mapping[str, Any] | None = None,
    temperature: float | None = 0.0,
    max_connections: int = 16,
    n_options: int = 1,
) -> list[Rewrite]:
    """Rewrite with an LLM editor through Inspect's model API (see the module doc).

    A reply is accepted when it has no numeric confidence line left, contains one of the
    offered phrases, and (items known) keeps the grade; otherwise the rule rewrite is used and
    ``rewriter`` says why.
    """
    from rlmf_plugin._format import parse_completion
    from rlmf_plugin._grading import ItemGrader
    from rlmf_plugin._inspect_model import generate_all

    items = list(items) if items is not None else [None] * len(completions)
    grader = ItemGrader()
    jobs, out = [], [None] * len(completions)
    for i, text in enumerate(completions):
        hedge = phrase_map.hedge(parse_completion(text).confidence)
        if hedge is None:
            out[i] = rewrite_rule(text, phrase_map, item=items[i], grader=grader)
            continue
        options = _options(phrase_map, hedge, n_options)
        jobs.append((i, hedge, options, rewrite_prompt(text, hedge, options)))
    replies = generate_all(
        model,
        [j[3] for j in jobs],
        model_args=model_args,
        temperature=temperature,
        max_connections=max_connections,
        desc="rewriting",
    )
    for (i, hedge, options, _), (reply, error) in zip(jobs, replies):
        text = completions[i]
        rule = rewrite_rule(text, phrase_map, item=items[i], grader=grader)
        why = None
        if reply is None:
            why = f"error: {error}"
        elif any(_NUMERIC_LINE.match(ln) for ln in reply.splitlines()):
            why = "numeric confidence left"
        elif not any(p.lower() in reply.lower() for p in options):
            why = "no offered phrase"
        else:
            before = _grade(grader, items[i], parse_completion(text).answer)
            if before is not None and _grade(grader, items[i], reply) != before:
                why = "grade changed"
        if why is None:
            kept = None if items[i] is None or _grade(grader, items[i], text) is None else True
            out[i] = Rewrite(reply.strip(), hedge.phrase, hedge.claim, rule.confidence, "llm", kept)
        else:
            out[i] = dataclasses.replace(rule, rewriter=f"rule (llm fallback: {why})")
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class VerbalizeResult(Result):
    """What ``verbalize`` wrote and how the rewrites went."""

    out_dir: str
    n_completions: int
    n_rewritten: int
    n_no_confidence: int
    n_grade_kept: int
    n_grade_changed: int
    n_llm: int
    n_llm_fallback: int
    phrases: dict[str, int]
    verbal_ece: float
    naive_ece: float


def _calibration_pairs(paths: Sequence[str | PathLike[str]], probe: str | None):
    """(confidence, correct, item) from record tables / harness logs, or RLMF completions."""
    from rlmf_plugin.dataset import load_records

    records, _ = load_records(paths)
    if probe is not None:
        records = records[records["probe"] == probe]
    records = records[records["confidence_kind"] == "verbal_numeric"]
    if records.empty:
        raise ValueError(
            f"{', '.join(map(str, paths))}: no numeric (0-100) verbal confidences"
            + (f" for probe {probe!r}" if probe else "")
        )
    items = (records["benchmark"].astype(str) + "/" + records["item_id"].astype(str)).tolist()
    return records["confidence"].to_numpy(float), records["correct"].to_numpy(float), items


def _plot(path: Path, phrase_map: PhraseMap) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], color="#999999", lw=1, ls="--")
    for key, color, label in (("naive_per_hedge", "#d62728", "nearest claim (uncalibrated)"),
                              ("per_hedge", "#1f77b4", "calibrated map")):  # fmt: skip
        rows = phrase_map.validation.get(key) or []
        x = [r["claim"] for r in rows]
        y = [r["accuracy"] for r in rows]
        if key == "per_hedge":
            err = [[r["accuracy"] - r["ci_low"] for r in rows],
                   [r["ci_high"] - r["accuracy"] for r in rows]]  # fmt: skip
            ax.errorbar(x, y, yerr=err, fmt="o", color=color, label=label, capsize=3)
            for r in rows:
                ax.annotate(r["phrase"], (r["claim"], r["accuracy"]), fontsize=7,
                            xytext=(4, -10), textcoords="offset points")  # fmt: skip
        else:
            ax.plot(x, y, "x", color=color, label=label)
    ax.set_xlabel("probability the phrase claims")
    ax.set_ylabel("held-out accuracy of answers given that phrase")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(frameon=False, loc="upper left")
    fig.savefig(path, dpi=96, format="png")


def verbalize(
    inputs: Sequence[str | PathLike[str]],
    out_dir: str | PathLike[str],
    *,
    calibrate_on: Sequence[str | PathLike[str]] | None = None,
    mapping: str | PathLike[str] | None = None,
    map_kind: str | None = None,
    inventory: str | PathLike[str] | None = None,
    probe: str | None = "numeric",
    model: str | None = None,
    model_args: Mapping[str, Any] | None = None,
    min_count: int = 30,
    seed: int = 0,
) -> VerbalizeResult:
    """``metacog rlmf verbalize``: calibrate the phrase map and rewrite completions.

    Args:
        inputs: JSONL files or ``build``-style folders of rows with a ``completion`` (the RLMF
            format) and optionally ``prompt``, ``benchmark``, ``item_id``, ``source``.
        out_dir: Output folder: ``mapping.json``, ``phrases.png``, ``verbalized.jsonl``
            (every row with ``original``, ``completion`` rewritten, ``phrase``, ``claim``,
            ``rewriter``, ``grade_kept``), ``sft/`` (prompt-completion pairs for TRL's
            ``SFTTrainer``) and ``verbalize.json``.
        calibrate_on: For ``map_kind="accuracy"``: record tables / harness logs with numeric
            verbal confidences and grades to fit the accuracy map on.
        map_kind: ``intrinsic`` (the paper's: the hedges whose decisiveness bin holds the
            stated confidence, :mod:`rlmf_plugin.hedges`) or ``accuracy`` (phrases chosen by
            ``P(correct | confidence)`` fitted on ``calibrate_on``: they say accuracy); by
            default ``accuracy`` when ``calibrate_on`` is given, else ``intrinsic``.
        inventory: An ``inventory.json`` of measured decisiveness (``metacog rlmf hedges``).
        mapping: A ``mapping.json`` from an earlier run, instead of fitting.
        probe: Probe of the calibration confidences (``numeric``; ``None`` for all).
        model: An Inspect model for the LLM rewriter (the rule rewriter when ``None``).
        model_args: Its provider arguments.
        min_count: Fewest answers per kept hedge.
        seed: Seed of the validation folds.

    Raises:
        ValueError: Neither ``mapping`` nor ``calibrate_on``, no usable calibration data, or an
            input row without ``completion`` (the message names the file and row).
    """
    import json

    from rlmf_plugin._grading import ItemGrader
    from rlmf_plugin._io import load_rows, write_json, write_rows

    if map_kind is None:
        map_kind = "accuracy" if calibrate_on else "intrinsic"
    if map_kind not in ("intrinsic", "accuracy"):
        raise ValueError(f"map_kind must be intrinsic or accuracy, got {map_kind!r}")
    if mapping is not None:
        phrase_map = PhraseMap.from_dict(json.loads(Path(mapping).read_text(encoding="utf-8")))
    elif map_kind == "intrinsic":
        from rlmf_plugin.hedges import load_inventory

        hedges = None
        if inventory is not None:
            hedges = load_inventory(json.loads(Path(inventory).read_text(encoding="utf-8")))
        phrase_map = intrinsic_map(hedges)
    elif calibrate_on:
        conf, corr, items = _calibration_pairs(calibrate_on, probe)
        phrase_map = calibrate_phrases(conf, corr, items=items, min_count=min_count, seed=seed)
    else:
        raise ValueError(
            "the accuracy mapping needs data to calibrate it on (--calibrate-on) or a --mapping"
        )
    rows: list[dict[str, Any]] = []
    for path in inputs:
        for n, row in enumerate(load_rows(path), start=1):
            if not isinstance(row.get("completion"), (str, list)):
                raise ValueError(f"{path}, row {n}: no `completion` to rewrite")
            rows.append(row)
    from rlmf_plugin._format import completion_text

    texts = [completion_text(r["completion"]) for r in rows]
    refs = [
        {k: r.get(k) for k in ("benchmark", "item_id", "source")} if r.get("benchmark") else None
        for r in rows
    ]
    if model is None:
        grader = ItemGrader()
        rewrites = [rewrite_rule(t, phrase_map, item=ref, grader=grader)
                    for t, ref in zip(texts, refs)]  # fmt: skip
    else:
        n_options = 4 if phrase_map.validation.get("mapping") == "intrinsic" else 1
        rewrites = rewrite_llm(
            texts, phrase_map, model, items=refs, model_args=model_args, n_options=n_options
        )
    out = Path(out_dir)
    out_rows = []
    for r, t, w in zip(rows, texts, rewrites):
        out_rows.append({
            **{k: v for k, v in r.items() if k != "completion"},
            "original": t, "completion": w.text, "phrase": w.phrase, "claim": w.claim,
            "stated_confidence": None if math.isnan(w.confidence) else w.confidence,
            "rewriter": w.rewriter, "grade_kept": w.grade_kept,
        })  # fmt: skip
    from metacog_metrics import atomic_write, atomic_write_text

    atomic_write_text(out / "verbalized.jsonl", "".join(json.dumps(r) + "\n" for r in out_rows))
    sft = [
        {"prompt": r["prompt"], "completion": (
            [{"role": "assistant", "content": r["completion"]}]
            if isinstance(r["prompt"], list) else r["completion"])}
        for r in out_rows if r.get("prompt") is not None and r["phrase"] is not None
    ]  # fmt: skip
    if sft:
        write_rows(out / "sft", sft)
    write_json(out / "mapping.json", phrase_map.to_dict())
    atomic_write(out / "phrases.png", lambda tmp: _plot(Path(tmp), phrase_map))
    phrases: dict[str, int] = {}
    for w in rewrites:
        if w.phrase:
            phrases[w.phrase] = phrases.get(w.phrase, 0) + 1
    result = VerbalizeResult(
        out_dir=str(out),
        n_completions=len(rows),
        n_rewritten=sum(w.phrase is not None for w in rewrites),
        n_no_confidence=sum(w.phrase is None for w in rewrites),
        n_grade_kept=sum(w.grade_kept is True for w in rewrites),
        n_grade_changed=sum(w.grade_kept is False for w in rewrites),
        n_llm=sum(w.rewriter == "llm" for w in rewrites),
        n_llm_fallback=sum(w.rewriter.startswith("rule (llm") for w in rewrites),
        phrases=phrases,
        verbal_ece=float(phrase_map.validation.get("verbal_ece", math.nan)),
        naive_ece=float(phrase_map.validation.get("naive_ece", math.nan)),
    )
    write_json(out / "verbalize.json", result.to_dict())
    return result
