"""Matching a candidate's items with a baseline's, by key and provenance.

Items are matched by ``(benchmark, probe, confidence_kind, item_id)`` and by their provenance
(``doc_hash``, ``prompt_hash``, ``task_version`` where both sides record them). An item may
have several records on a side (Inspect epochs, repeated runs): they are kept, and the
bootstrap resamples items with all their records. Accuracy is tested once per benchmark, on
the solves of every probe (:func:`accuracy_groups`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics._result import Result
from metacog_metrics.gate.config import GateConfig, GateInputError

__all__ = ["POOLED", "SOLVE", "MatchReport", "PairedGroup", "accuracy_groups", "match_records"]

_GROUP = ("benchmark", "probe", "confidence_kind")
#: Provenance each harness computes its own way (not comparable across harnesses).
_HARNESS_HASHES = ("doc_hash", "prompt_hash")
_MAX_EXAMPLES = 5
#: The probe name of an accuracy group (the solves of every probe of a benchmark).
SOLVE = "solve"
#: The benchmark name of pooled groups (``pool: true``).
POOLED = "pooled"


@dataclasses.dataclass(frozen=True, eq=False)
class PairedGroup(Result):
    """Matched items of one (benchmark, probe, confidence kind) and their records.

    Arrays named ``base_*`` and ``cand_*`` have one entry per record; ``*_item`` gives each
    record's item as an index into ``item_ids`` (several records of one item: repeats).

    Attributes:
        benchmark: Benchmark.
        probe: Probe (:data:`SOLVE` for an accuracy group).
        confidence_kind: Confidence kind (None for an accuracy group).
        item_ids: Matched item ids.
        base_confidence: Baseline confidence (NaN: unparseable).
        base_correct: Baseline correctness (NaN: ungraded).
        base_item: Baseline record -> item index.
        cand_confidence: Candidate confidence.
        cand_correct: Candidate correctness.
        cand_item: Candidate record -> item index.
        pop_confidence: Reference population's mean confidence per item, or None.
    """

    benchmark: str
    probe: str
    confidence_kind: str | None
    item_ids: tuple[str, ...]
    base_confidence: np.ndarray
    base_correct: np.ndarray
    base_item: np.ndarray
    cand_confidence: np.ndarray
    cand_correct: np.ndarray
    cand_item: np.ndarray
    pop_confidence: np.ndarray | None = None

    @property
    def name(self) -> str:
        """``benchmark/probe[/confidence_kind]``."""
        parts = [self.benchmark, self.probe] + (
            [self.confidence_kind] if self.confidence_kind else []
        )
        return "/".join(parts)

    @property
    def n_items(self) -> int:
        """Matched items."""
        return len(self.item_ids)

    @property
    def repeats(self) -> int:
        """Most records of one item on either side (1: one attempt per item)."""
        counts = [np.bincount(x, minlength=1).max() for x in (self.base_item, self.cand_item)]
        return int(max(counts)) if self.n_items else 0

    def identical(self) -> bool:
        """Whether both sides hold the same records for every item (in any order)."""

        def rows(item: np.ndarray, conf: np.ndarray, correct: np.ndarray) -> np.ndarray:
            table = np.column_stack(
                [item, np.nan_to_num(conf, nan=-1), np.nan_to_num(correct, nan=-1)]
            )
            return table[np.lexsort(table.T[::-1])]

        a = rows(self.base_item, self.base_confidence, self.base_correct)
        b = rows(self.cand_item, self.cand_confidence, self.cand_correct)
        return a.shape == b.shape and bool(np.array_equal(a, b))

    def per_item(self, values: np.ndarray, side: str) -> np.ndarray:
        """Mean of a per-record array over each item's records on ``side`` (NaN ignored)."""
        item = self.base_item if side == "base" else self.cand_item
        ok = ~np.isnan(values)
        total = np.bincount(item[ok], weights=values[ok], minlength=self.n_items)
        count = np.bincount(item[ok], minlength=self.n_items)
        with np.errstate(invalid="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)


@dataclasses.dataclass(frozen=True)
class MatchReport(Result):
    """What matching found.

    Attributes:
        baseline_model: The baseline's model name.
        candidate_model: The candidate's model name.
        groups: The matched groups.
        mismatches: What differs (each a sentence naming the group, the field and examples).
        warnings: Provenance not recorded on a side, items missing within the tolerance,
            items left out with ``allow_shared_items``.
    """

    baseline_model: str
    candidate_model: str
    groups: tuple[PairedGroup, ...]
    mismatches: tuple[str, ...]
    warnings: tuple[str, ...]


def _examples(values: Sequence[Any], n: int | None = None) -> str:
    n = len(values) if n is None else n
    shown = ", ".join(repr(str(v)) for v in list(values)[:_MAX_EXAMPLES])
    return shown + (f" and {n - _MAX_EXAMPLES} more" if n > _MAX_EXAMPLES else "")


def _one_model(df: pd.DataFrame, side: str) -> str:
    models = sorted(df["model"].astype(str).unique())
    if len(models) != 1:
        raise GateInputError(
            f"the {side} holds {len(models)} models ({_examples(models)}); the gate compares "
            f"one model with one model (choose one with --{side}-model)"
        )
    return models[0]


def _present(df: pd.DataFrame, col: str) -> bool:
    return col in df.columns and bool(df[col].notna().any())


def _harnesses(df: pd.DataFrame) -> set[str]:
    if "harness" not in df.columns:
        return set()
    return {str(h) for h in df["harness"].dropna().unique() if str(h)}


def _short(value: Any) -> str:
    text = str(value)
    return text[:10] + "..." if len(text) > 13 else text


def _pooled(df: pd.DataFrame) -> pd.DataFrame:
    """Every benchmark in one group per probe and kind; ids become ``benchmark/item_id``."""
    out = df.copy()
    out["item_id"] = out["benchmark"].astype(str) + "/" + out["item_id"].astype(str)
    out["benchmark"] = POOLED
    return out


def _provenance(df: pd.DataFrame, col: str, items: list[str]) -> np.ndarray:
    """Each item's first recorded value of ``col`` (None where it has none)."""
    first = df.groupby("item_id", sort=False, observed=True)[col].first()
    return first.reindex(items).astype(object).to_numpy()


def match_records(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    config: GateConfig | None = None,
    *,
    population: pd.DataFrame | None = None,
) -> MatchReport:
    """Match baseline and candidate items by key and provenance.

    Args:
        baseline: Validated records of one model (an item may have several records).
        candidate: Validated records of one model.
        config: Provenance to check, required benchmarks, pooling, ``max_missing_items``,
            ``allow_shared_items``.
        population: Records of reference models (the mean confidence per item gives Pop).

    Returns:
        A :class:`MatchReport`; its groups are the matched part. With mismatches and without
        ``allow_shared_items`` the gate refuses.

    Raises:
        GateInputError: A side is empty or holds several models.
    """
    config = config or GateConfig()
    for df, side in ((baseline, "baseline"), (candidate, "candidate")):
        if df.empty:
            raise GateInputError(f"the {side} holds no records")
    base_model = _one_model(baseline, "baseline")
    cand_model = _one_model(candidate, "candidate")
    mismatches: list[str] = []
    warnings: list[str] = []

    benches_b = set(baseline["benchmark"].astype(str))
    benches_c = set(candidate["benchmark"].astype(str))
    for bench in config.benchmarks or ():
        lacking = [
            f"the {side} (which holds {', '.join(sorted(present)) or 'nothing'})"
            for side, present in (("baseline", benches_b), ("candidate", benches_c))
            if bench not in present
        ]
        if lacking:
            mismatches.append(
                f"benchmark {bench!r} (required by the config) is missing from "
                + " and ".join(lacking)
            )
    if config.benchmarks:
        keep = set(config.benchmarks)
        baseline = baseline[baseline["benchmark"].astype(str).isin(keep)]
        candidate = candidate[candidate["benchmark"].astype(str).isin(keep)]
    check = list(config.check)
    harness_b, harness_c = _harnesses(baseline), _harnesses(candidate)
    if harness_b and harness_c and harness_b != harness_c:
        # Each harness renders and hashes its own prompts and documents: their hashes never
        # agree across harnesses, so only the task version is comparable.
        mismatches.append(
            f"the baseline was logged by {_examples(sorted(harness_b))}, the candidate by "
            f"{_examples(sorted(harness_c))}: the items were asked through different harnesses"
        )
        dropped = [c for c in check if c in _HARNESS_HASHES]
        check = [c for c in check if c not in _HARNESS_HASHES]
        if dropped:
            warnings.append(
                f"{', '.join(dropped)} not checked: each harness computes its own "
                f"(baseline {_examples(sorted(harness_b))}, candidate "
                f"{_examples(sorted(harness_c))})"
            )
    if config.pool:
        baseline, candidate = _pooled(baseline), _pooled(candidate)
        if population is not None:
            population = _pooled(population)

    def groups_of(df: pd.DataFrame) -> dict[tuple[str, str, str], pd.DataFrame]:
        return {
            tuple(str(k) for k in key): sub
            for key, sub in df.groupby(list(_GROUP), sort=True, observed=True)
        }

    gb, gc = groups_of(baseline), groups_of(candidate)
    for key in sorted(set(gb) ^ set(gc)):
        side, other = ("baseline", "candidate") if key in gb else ("candidate", "baseline")
        n = (gb if key in gb else gc)[key]["item_id"].nunique()
        mismatches.append(
            f"{'/'.join(key)}: only in the {side} ({n} items); the {other} has no such "
            "benchmark/probe/confidence kind"
        )

    pop_mean = None
    if population is not None and not population.empty:
        pop = population[~population["model"].astype(str).isin({base_model, cand_model})]
        pop_mean = pop.groupby([*_GROUP, "item_id"], observed=True)["confidence"].mean()

    groups: list[PairedGroup] = []
    for key in sorted(set(gb) & set(gc)):
        b, c = gb[key], gc[key]
        name = "/".join(key)
        ids_b = list(dict.fromkeys(b["item_id"].astype(str)))
        ids_c = list(dict.fromkeys(c["item_id"].astype(str)))
        in_b, in_c = set(ids_b), set(ids_c)
        only_b = [i for i in ids_b if i not in in_c]
        only_c = [i for i in ids_c if i not in in_b]
        allowed = config.missing_allowed(len(in_b | in_c))
        for lacking, extra, where in (
            (only_b, "candidate", "baseline"),
            (only_c, "baseline", "candidate"),
        ):
            if not lacking:
                continue
            what = f"{name}: {len(lacking)} item(s) only in the {where} ({_examples(lacking)})"
            if len(lacking) <= allowed:
                warnings.append(
                    f"{what}; compared without them (the {extra} may lack up to {allowed}: "
                    "max_missing_items)"
                )
            else:
                mismatches.append(
                    f"{what}, more than max_missing_items allows ({allowed} of {len(in_b | in_c)})"
                )
        shared = [i for i in ids_b if i in in_c]
        b = b.assign(item_id=b["item_id"].astype(str))
        c = c.assign(item_id=c["item_id"].astype(str))
        ok = np.ones(len(shared), dtype=bool)
        for col in check:
            has_b, has_c = _present(b, col), _present(c, col)
            if has_b != has_c:
                side = "candidate" if has_b else "baseline"
                warnings.append(f"{name}: {col} not recorded in the {side}; not checked")
            if not (has_b and has_c):
                continue
            vb, vc = _provenance(b, col, shared), _provenance(c, col, shared)
            differ = np.array(
                [
                    x is not None and y is not None and x == x and y == y and x != y
                    for x, y in zip(vb, vc, strict=True)
                ],
                dtype=bool,
            )
            if differ.any():
                ids = [i for i, d in zip(shared, differ, strict=True) if d]
                pairs = sorted(
                    {(str(x), str(y)) for x, y, d in zip(vb, vc, differ, strict=True) if d}
                )
                what = (
                    "grader/task version"
                    if col == "task_version"
                    else ("prompt template" if col == "prompt_hash" else "item content")
                )
                shown = "; ".join(f"{_short(x)} vs {_short(y)}" for x, y in pairs[:3])
                mismatches.append(
                    f"{name}: {col} ({what}) differs on {len(ids)} of {len(shared)} item(s) "
                    f"({_examples(ids)}): baseline vs candidate {shown}"
                    + (f" and {len(pairs) - 3} more" if len(pairs) > 3 else "")
                )
                ok &= ~differ
        items = [i for i, k in zip(shared, ok, strict=True) if k]
        if not items:
            continue
        index = pd.Index(items)
        pos_b = index.get_indexer(b["item_id"])
        pos_c = index.get_indexer(c["item_id"])
        sel_b, sel_c = pos_b >= 0, pos_c >= 0
        pop_conf = None
        if pop_mean is not None:
            idx = pd.MultiIndex.from_tuples([(*key, i) for i in items])
            pop_conf = pop_mean.reindex(idx).to_numpy(dtype=float)
            if np.isnan(pop_conf).all():
                warnings.append(f"{name}: the reference population has none of these items")
                pop_conf = None
        groups.append(
            PairedGroup(
                benchmark=key[0],
                probe=key[1],
                confidence_kind=key[2],
                item_ids=tuple(items),
                base_confidence=b["confidence"].to_numpy(dtype=float)[sel_b],
                base_correct=b["correct"].to_numpy(dtype=float)[sel_b],
                base_item=pos_b[sel_b].astype(np.intp),
                cand_confidence=c["confidence"].to_numpy(dtype=float)[sel_c],
                cand_correct=c["correct"].to_numpy(dtype=float)[sel_c],
                cand_item=pos_c[sel_c].astype(np.intp),
                pop_confidence=pop_conf,
            )
        )
    return MatchReport(base_model, cand_model, tuple(groups), tuple(mismatches), tuple(warnings))


def accuracy_groups(groups: Sequence[PairedGroup]) -> list[PairedGroup]:
    """One accuracy group per benchmark: the solves of each of its probes, pooled per item.

    A probe's solve is logged once per confidence kind (one solve serves every kind), so each
    probe contributes the records of one kind: its group with the most items (then by name).
    Each probe's solve of an item is then one more record of the item, like a repeat.

    Args:
        groups: Matched groups.

    Returns:
        Groups with probe :data:`SOLVE` and no confidence kind, one per benchmark, sorted.
    """
    out = []
    for bench in sorted({g.benchmark for g in groups}):
        chosen: dict[str, PairedGroup] = {}
        for g in sorted(groups, key=lambda g: (-g.n_items, g.name)):
            if g.benchmark == bench and g.probe not in chosen:
                chosen[g.probe] = g
        parts = [chosen[p] for p in sorted(chosen)]
        items = list(dict.fromkeys(i for g in parts for i in g.item_ids))
        index = pd.Index(items)
        arrays: dict[str, list[np.ndarray]] = {k: [] for k in ("bc", "by", "bi", "cc", "cy", "ci")}
        for g in parts:
            remap = index.get_indexer(list(g.item_ids))
            arrays["bc"].append(g.base_confidence)
            arrays["by"].append(g.base_correct)
            arrays["bi"].append(remap[g.base_item])
            arrays["cc"].append(g.cand_confidence)
            arrays["cy"].append(g.cand_correct)
            arrays["ci"].append(remap[g.cand_item])
        cat = {k: np.concatenate(v) for k, v in arrays.items()}
        out.append(
            PairedGroup(
                benchmark=bench,
                probe=SOLVE,
                confidence_kind=None,
                item_ids=tuple(items),
                base_confidence=cat["bc"],
                base_correct=cat["by"],
                base_item=cat["bi"].astype(np.intp),
                cand_confidence=cat["cc"],
                cand_correct=cat["cy"],
                cand_item=cat["ci"].astype(np.intp),
            )
        )
    return out
