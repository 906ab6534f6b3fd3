"""``metacog rlmf select``: which items of a GRPO dataset to train on.

Strategies (``N`` items out of the dataset ``build`` wrote):

* ``metacognitive`` (RLMF's selector): the model's own meta-confidence, its judgement of how well
  the confidence it states matches its internal confidence (column ``meta_confidence``, in
  [0, 1]); the ``ceil(N/2)`` lowest and ``floor(N/2)`` highest, as the official
  ``data_rank_strategy="high+low"``. The column comes from the model itself: ``--model``
  samples its answers and asks its post-hoc judgement of each (the official query,
  :mod:`rlmf_plugin.posthoc`; ``judgement="inline"``: the ``Meta`` line of an answer in the
  RLMF format instead), the first sample's or the mean over ``--samples``.
* ``active`` (the official active-learning baseline, ``data_rank_mode="faith"``): the same
  high+low selection on the gold faithfulness of the model's first sampled answer,
  ``1 - |decisiveness - consistency|`` (column ``active_score``; :mod:`rlmf_plugin.posthoc`).
* ``active-means``: high+low on ``1 - |stated - intrinsic|`` of the harness samples' means (not
  the official score: it needs no model).
* ``uncertainty`` (uncertainty sampling): the ``N`` items whose sampled answers disagree most,
  ``1 - intrinsic_confidence`` (the Gini impurity of the answer classes).
* ``deviation``: the ``N`` items whose stated confidence is furthest from their accuracy,
  ``|stated - accuracy|`` (a miscalibration selector; not one the RLMF authors ran).
* ``random``: ``N`` items uniformly.

Ties are broken by a seeded random order; items without a valid score are left out and counted.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from metacog_metrics import Result
from rlmf_plugin._format import as_unit
from rlmf_plugin._io import load_rows, write_json, write_rows

__all__ = [
    "STRATEGIES",
    "SelectionResult",
    "meta_confidence_from_model",
    "select_dataset",
    "select_rows",
    "selection_scores",
]

#: Strategy name -> (score description, how the score is used).
STRATEGIES: dict[str, tuple[str, str]] = {
    "metacognitive": ("meta_confidence", "high+low"),
    "active": ("active_score: 1 - |decisiveness - consistency| of a sampled answer", "high+low"),
    "active-means": ("1 - |stated_confidence - intrinsic_confidence|", "high+low"),
    "uncertainty": ("1 - intrinsic_confidence", "top"),
    "deviation": ("|stated_confidence - accuracy|", "top"),
    "random": ("uniform random", "random"),
}


@dataclasses.dataclass(frozen=True)
class SelectionResult(Result):
    """A selection and its statistics.

    Attributes:
        strategy: The strategy (see :data:`STRATEGIES`).
        score: What was ranked.
        n_requested: ``N``.
        n_selected: Items selected.
        seed: Seed of the tie-breaking (and random) order.
        n_candidates: Items in the dataset.
        n_invalid: Items without a valid score (left out).
        invalid_examples: The first few of them, ``benchmark/item_id``.
        low_cut: Highest score among the low half (high+low strategies), else ``None``.
        high_cut: Lowest score among the high half (high+low) or of the selection (top).
        selected: ``benchmark/item_id`` of the selected items, in dataset order.
        stats: Means of the score and of the item statistics (``accuracy``,
            ``stated_confidence``, ``intrinsic_confidence``) over all valid candidates and over
            the selection, with counts per benchmark.
    """

    strategy: str
    score: str
    n_requested: int
    n_selected: int
    seed: int
    n_candidates: int
    n_invalid: int
    invalid_examples: tuple[str, ...]
    low_cut: float | None
    high_cut: float | None
    selected: tuple[str, ...]
    stats: dict[str, Any]


def selection_scores(rows: Sequence[Mapping[str, Any]], strategy: str) -> np.ndarray:
    """The score each row is ranked by (NaN where the row has no valid score).

    Raises:
        ValueError: Unknown strategy.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    out = np.full(len(rows), math.nan)
    for i, r in enumerate(rows):
        stated = as_unit(r.get("stated_confidence"))
        intrinsic = as_unit(r.get("intrinsic_confidence"))
        if strategy == "metacognitive":
            out[i] = as_unit(r.get("meta_confidence"))
        elif strategy == "active":
            out[i] = as_unit(r.get("active_score"))
        elif strategy == "active-means":
            out[i] = 1.0 - abs(stated - intrinsic)
        elif strategy == "uncertainty":
            out[i] = 1.0 - intrinsic
        elif strategy == "deviation":
            out[i] = abs(stated - as_unit(r.get("accuracy")))
        else:
            out[i] = 0.0
    return out


def _pick(scores: np.ndarray, strategy: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Indices (into ``scores``) chosen by ``strategy``; ``scores`` are all valid."""
    tiebreak = rng.permutation(len(scores))
    order = np.lexsort((tiebreak, scores))  # ascending score, ties in a seeded random order
    how = STRATEGIES[strategy][1]
    if how == "random":
        return np.sort(rng.choice(len(scores), size=n, replace=False))
    if how == "top":
        return order[len(order) - n :]
    n_low = (n + 1) // 2  # ceil(N/2) lowest, floor(N/2) highest, as the official code
    return np.concatenate([order[:n_low], order[len(order) - (n - n_low) :]])


def _quotas(counts: Mapping[str, int], n: int) -> dict[str, int]:
    """``n`` split over groups in proportion to their sizes (largest remainder)."""
    total = sum(counts.values())
    exact = {k: n * v / total for k, v in counts.items()}
    out = {k: math.floor(x) for k, x in exact.items()}
    for k in sorted(exact, key=lambda k: (out[k] - exact[k], k))[: n - sum(out.values())]:
        out[k] += 1
    return out


def _summary(rows: Sequence[Mapping[str, Any]], scores: np.ndarray) -> dict[str, Any]:
    def mean(name: str) -> float | None:
        vals = [as_unit(r.get(name)) for r in rows]
        vals = [v for v in vals if not math.isnan(v)]
        return float(np.mean(vals)) if vals else None

    finite = scores[~np.isnan(scores)]
    benches: dict[str, int] = {}
    for r in rows:
        benches[str(r.get("benchmark"))] = benches.get(str(r.get("benchmark")), 0) + 1
    return {
        "n": len(rows),
        "score_mean": float(finite.mean()) if finite.size else None,
        "score_min": float(finite.min()) if finite.size else None,
        "score_max": float(finite.max()) if finite.size else None,
        "accuracy_mean": mean("accuracy"),
        "stated_confidence_mean": mean("stated_confidence"),
        "intrinsic_confidence_mean": mean("intrinsic_confidence"),
        "benchmarks": dict(sorted(benches.items())),
    }


def select_rows(
    rows: Sequence[Mapping[str, Any]],
    strategy: str,
    n: int,
    *,
    seed: int = 0,
    stratify: bool = False,
) -> tuple[list[dict[str, Any]], SelectionResult]:
    """Select ``n`` rows (see the module doc).

    Args:
        rows: Dataset rows (``benchmark``, ``item_id`` and the statistics ``build`` writes).
        strategy: One of :data:`STRATEGIES`.
        n: How many to select.
        seed: Seed of the tie-breaking and random order.
        stratify: Select within each benchmark, in proportion to its valid items.

    Returns:
        The selected rows (dataset order, each with ``selection_score``) and the result.

    Raises:
        ValueError: Unknown strategy, ``n < 1``, or fewer valid rows than ``n`` (the message
            says how many rows had no valid score and why).
    """
    scores = selection_scores(rows, strategy)
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    n = int(n)
    valid = np.flatnonzero(~np.isnan(scores))
    invalid = [f"{rows[i].get('benchmark')}/{rows[i].get('item_id')}" for i in range(len(rows))
               if math.isnan(scores[i])]  # fmt: skip
    if len(valid) < n:
        need = STRATEGIES[strategy][0]
        raise ValueError(
            f"strategy {strategy!r} needs {n} items with a valid {need}, but only {len(valid)} "
            f"of {len(rows)} have one ({len(invalid)} without: {', '.join(invalid[:5])})"
        )
    rng = np.random.default_rng(seed)
    if stratify:
        groups: dict[str, list[int]] = {}
        for i in valid:
            groups.setdefault(str(rows[i].get("benchmark")), []).append(int(i))
        quota = _quotas({k: len(v) for k, v in groups.items()}, n)
        chosen = []
        for name in sorted(groups):
            idx = np.asarray(groups[name])
            if quota[name]:
                chosen.extend(idx[_pick(scores[idx], strategy, quota[name], rng)])
        picked = np.sort(np.asarray(chosen, dtype=int))
    else:
        picked = np.sort(valid[_pick(scores[valid], strategy, n, rng)])
    selected = [{**dict(rows[i]), "selection_score": float(scores[i])} for i in picked]
    low_cut = high_cut = None
    how = STRATEGIES[strategy][1]
    if how != "random" and not stratify:
        ordered = np.sort(scores[picked])
        n_low = (n + 1) // 2 if how == "high+low" else 0
        low_cut = float(ordered[n_low - 1]) if n_low else None
        high_cut = float(ordered[n_low]) if n_low < n else None
    result = SelectionResult(
        strategy=strategy,
        score=STRATEGIES[strategy][0],
        n_requested=n,
        n_selected=len(selected),
        seed=int(seed),
        n_candidates=len(rows),
        n_invalid=len(invalid),
        invalid_examples=tuple(invalid[:10]),
        low_cut=low_cut,
        high_cut=high_cut,
        selected=tuple(f"{r.get('benchmark')}/{r.get('item_id')}" for r in selected),
        stats={
            "candidates": _summary([rows[i] for i in valid], scores[valid]),
            "selected": _summary(selected, scores[picked]),
            "stratified": bool(stratify),
        },
    )
    return selected, result


def meta_confidence_from_model(
    rows: Sequence[Mapping[str, Any]],
    model: str,
    *,
    samples: int = 1,
    aggregate: str = "first",
    model_args: Mapping[str, Any] | None = None,
    temperature: float | None = None,
    max_connections: int = 16,
) -> list[dict[str, Any]]:
    """Rows with ``meta_confidence`` asked of ``model`` (RLMF's metacognitive score).

    Each row's prompt (the RLMF format: answer, ``Confidence``, ``Meta``) is sent ``samples``
    times; the ``Meta`` value of the first sample (``aggregate="first"``, the official
    ``_train_<ds>.csv``) or the mean over the valid samples (``"mean"``, the official
    "smarter" file) is the score. Rows keep ``meta_samples`` (each sample's value, NaN when
    absent or unparseable) and ``meta_errors``.

    Raises:
        ValueError: ``samples < 1`` or an unknown ``aggregate``.
    """
    from rlmf_plugin._format import parse_completion
    from rlmf_plugin._inspect_model import generate_all

    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    if aggregate not in ("first", "mean"):
        raise ValueError(f"aggregate must be 'first' or 'mean', got {aggregate!r}")
    prompts = [r["prompt"] for r in rows for _ in range(samples)]
    outputs = generate_all(
        model,
        prompts,
        model_args=model_args,
        temperature=temperature,
        max_connections=max_connections,
        desc="meta-confidence",
    )
    out = []
    for i, r in enumerate(rows):
        chunk = outputs[i * samples : (i + 1) * samples]
        metas = [parse_completion(text).meta if text is not None else math.nan for text, _ in chunk]
        valid = [m for m in metas if not math.isnan(m)]
        if aggregate == "first":
            score = metas[0]
        else:
            score = float(np.mean(valid)) if valid else math.nan
        out.append({
            **dict(r),
            "meta_confidence": None if math.isnan(score) else float(score),
            "meta_samples": [None if math.isnan(m) else float(m) for m in metas],
            "meta_errors": [e for _, e in chunk if e],
        })  # fmt: skip
    return out


def _plot(path: Path, scores: np.ndarray, chosen: np.ndarray, strategy: str) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    finite = ~np.isnan(scores)
    bins = np.linspace(np.nanmin(scores[finite]), np.nanmax(scores[finite]) + 1e-9, 21)
    ax.hist(scores[finite], bins=bins, color="#cccccc", label="candidates")
    ax.hist(scores[chosen], bins=bins, color="#1f77b4", label="selected")
    ax.set_xlabel(STRATEGIES[strategy][0])
    ax.set_ylabel("items")
    ax.set_title(f"metacog rlmf select --strategy {strategy}")
    ax.legend(frameon=False)
    fig.savefig(path, dpi=96, format="png")


def select_dataset(
    dataset: str | PathLike[str],
    out_dir: str | PathLike[str],
    *,
    strategy: str,
    n: int,
    seed: int = 0,
    stratify: bool = False,
    model: str | None = None,
    samples: int = 1,
    aggregate: str = "first",
    model_args: Mapping[str, Any] | None = None,
    temperature: float | None = None,
    judgement: str = "posthoc",
    judge: str | None = None,
    base_url: str | None = None,
) -> SelectionResult:
    """Select from a dataset ``build`` wrote and write the selection to ``out_dir``.

    Writes ``dataset/`` and ``train.jsonl`` (the selected rows, ready for ``rlmf train``),
    ``selection.json`` (the :class:`SelectionResult`), ``candidates.csv`` (every item with its
    score and whether it was selected) and ``selection.png`` (the score histogram).

    Args:
        dataset: The ``build`` output (folder or JSONL).
        out_dir: Output folder.
        strategy: See :data:`STRATEGIES`.
        n: Items to select.
        seed: Seed of the tie-breaking and random order.
        stratify: Select within each benchmark in proportion to its size.
        model: For ``metacognitive``: ask this Inspect model for its meta-confidence (else the
            dataset's ``meta_confidence`` column is used).
        samples: Samples per item when asking ``model``.
        aggregate: ``first`` or ``mean`` of the samples' ``Meta`` values.
        model_args: Provider arguments for ``model``.
        temperature: Sampling temperature for ``model``.
        judgement: ``posthoc`` (official: a separate judgement of each sampled answer) or
            ``inline`` (the ``Meta`` line of an answer in the RLMF format).
        judge: A model rating decisiveness for ``active`` (the inventory's values when None).
        base_url: An OpenAI-compatible endpoint serving ``model`` (and ``judge``).

    Raises:
        ValueError: See :func:`select_rows`; also ``metacognitive`` without ``model`` on a
            dataset with no ``meta_confidence`` column.
    """
    import pandas as pd

    rows = load_rows(dataset)
    if judgement not in ("posthoc", "inline"):
        raise ValueError(f"judgement must be posthoc or inline, got {judgement!r}")
    if (
        strategy in ("metacognitive", "active")
        and model is not None
        and (judgement == "posthoc" or strategy == "active")
    ):
        from rlmf_plugin.judge import ModelClient
        from rlmf_plugin.posthoc import posthoc_scores

        client = ModelClient(model, base_url=base_url, model_args=model_args,
                             temperature=1.0 if temperature is None else temperature,
                             max_tokens=None)  # fmt: skip
        rater = None if judge is None else ModelClient(judge, base_url=base_url, max_tokens=8)
        rows = posthoc_scores(rows, client, samples=samples, aggregate=aggregate,
                              decisiveness=rater)  # fmt: skip
    elif strategy == "active" and not any("active_score" in r for r in rows):
        raise ValueError(
            f"{dataset}: no `active_score` column; give --model to sample the model's answers "
            "(the official active-learning score), or use --strategy active-means"
        )
    elif strategy == "metacognitive":
        if model is not None:
            rows = meta_confidence_from_model(
                rows,
                model,
                samples=samples,
                aggregate=aggregate,
                model_args=model_args,
                temperature=temperature,
            )
        elif not any("meta_confidence" in r for r in rows):
            raise ValueError(
                f"{dataset}: no `meta_confidence` column; give --model to ask the model for its "
                "meta-confidence (RLMF's metacognitive score)"
            )
    selected, result = select_rows(rows, strategy, n, seed=seed, stratify=stratify)
    out = Path(out_dir)
    write_rows(out, selected)
    write_json(out / "selection.json", result.to_dict())
    scores = selection_scores(rows, strategy)
    chosen_ids = set(result.selected)
    ids = [f"{r.get('benchmark')}/{r.get('item_id')}" for r in rows]
    table = pd.DataFrame({
        "benchmark": [r.get("benchmark") for r in rows],
        "item_id": [r.get("item_id") for r in rows],
        "score": scores,
        "selected": [i in chosen_ids for i in ids],
        "accuracy": [r.get("accuracy") for r in rows],
        "stated_confidence": [r.get("stated_confidence") for r in rows],
        "intrinsic_confidence": [r.get("intrinsic_confidence") for r in rows],
    })  # fmt: skip
    from metacog_metrics import atomic_write

    atomic_write(out / "candidates.csv", lambda tmp: table.to_csv(tmp, index=False))
    if strategy != "random" and np.isfinite(scores).any():
        chosen = np.array([i in chosen_ids for i in ids])
        atomic_write(
            out / "selection.png",
            lambda tmp: _plot(Path(tmp), scores, chosen & np.isfinite(scores), strategy),
        )
    return result
