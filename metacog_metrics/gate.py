"""The regression gate: a candidate checkpoint against a baseline on the same items.

Items are matched by ``(benchmark, probe, confidence_kind, item_id)`` and by their provenance
(``doc_hash``, ``prompt_hash``, ``task_version`` where both sides record them). On the matched
items every metric gets a paired item bootstrap of the change ``candidate - baseline`` (the same
resampled items for both sides and all metrics of a group), accuracy also McNemar's exact test.
A metric *fails* when its interval lies beyond its non-inferiority margin in the bad direction,
*passes* when it lies inside, and is otherwise *inconclusive*, with the smallest change the run
could have detected. Failures are controlled over all metrics, benchmarks and probes together by
Holm's step-down procedure (or only the declared primary metric gates).

The interval is the bootstrap's *standard* interval, the change plus or minus a normal quantile
times the bootstrap standard error (Efron & Tibshirani 1993, ch. 13), not a percentile interval:
Holm's first step tests at ``alpha / m``, about 4e-4 for the 132 tests of the twelve
``metacog_*`` tasks, a tail a percentile interval of 2,000 resamples cannot resolve (with
``m > alpha * (n_boot + 1)`` no test could ever fail), while 2,000 resamples estimate the
standard error to about 2%. The false-alarm rate this gives, at and away from the margins, is
measured in ``bench/bench_gate.py`` (docs/gate.md).

The verdict (:class:`GateVerdict`) is one frozen object; its ``exit_code`` is what ``metacog
gate`` returns and its ``status`` what it prints.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from metacog_metrics._result import Result, to_jsonable
from metacog_metrics.calibration import _bin_ids

__all__ = [
    "DEFAULT_MARGINS",
    "EXIT_CODES",
    "METRICS",
    "PROVENANCE_COLUMNS",
    "GateConfig",
    "GateConfigError",
    "GateInputError",
    "GateVerdict",
    "MatchReport",
    "MetricSpec",
    "MetricTest",
    "PairedGroup",
    "gate_records",
    "match_records",
]

Direction = Literal["higher", "lower", "two-sided"]
#: Per-item provenance the match compares where both sides record it.
PROVENANCE_COLUMNS: tuple[str, ...] = ("doc_hash", "prompt_hash", "task_version")
#: Exit status of each verdict status (``inconclusive`` exits 0 unless the config fails it).
EXIT_CODES: Mapping[str, int] = {"pass": 0, "fail": 1, "error": 2, "inconclusive": 3}
_GROUP = ("benchmark", "probe", "confidence_kind")
#: Provenance each harness computes its own way (not comparable across harnesses).
_HARNESS_HASHES = ("doc_hash", "prompt_hash")
_MAX_EXAMPLES = 5


class GateConfigError(ValueError):
    """The gate configuration is invalid (the message names the key)."""


class GateInputError(ValueError):
    """Baseline or candidate records cannot be compared (the gate refuses: exit 2)."""


@dataclasses.dataclass(frozen=True)
class MetricSpec:
    """A gated metric.

    Attributes:
        name: Metric name.
        direction: ``higher`` or ``lower`` is better, or ``two-sided`` (a change either way).
        margin: Default non-inferiority margin, in the metric's own units.
        per_kind: Computed per confidence kind (else once per benchmark and probe).
        needs_population: Needs a reference population's confidence.
        description: One line.
    """

    name: str
    direction: Direction
    margin: float
    per_kind: bool
    needs_population: bool
    description: str


#: The metrics, their directions and default margins.
METRICS: Mapping[str, MetricSpec] = {
    s.name: s
    for s in (
        MetricSpec(
            "auroc", "higher", 0.03, True, False, "AUROC of the model's own confidence (Internal)"
        ),
        MetricSpec(
            "internal_pop_gap",
            "higher",
            0.03,
            True,
            True,
            "Internal AUROC minus the AUROC of the reference population's mean confidence",
        ),
        MetricSpec("brier", "lower", 0.02, True, False, "Brier score"),
        MetricSpec(
            "ece",
            "lower",
            0.03,
            True,
            False,
            "expected calibration error (equal-width bins; for 0/1 confidence it equals the "
            "Brier score and is not tested separately)",
        ),
        MetricSpec("accuracy", "higher", 0.02, False, False, "share of items answered correctly"),
        MetricSpec("yes_rate", "two-sided", 0.05, True, False, "share of confidence >= 0.5"),
        MetricSpec("unparseable", "lower", 0.02, True, False, "share of unparseable probes"),
    )
}
#: Default non-inferiority margins.
DEFAULT_MARGINS: Mapping[str, float] = {k: s.margin for k, s in METRICS.items()}


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GateConfig(Result):
    """Settings of the gate (``gate.yaml``); the defaults are documented in docs/gate.md.

    Attributes:
        alpha: Family-wise error rate of the failures (Holm over all gated tests).
        n_boot: Bootstrap resamples per group.
        seed: Seed of the resamples (the same inputs give the same verdict).
        margins: Non-inferiority margin per metric (merged over :data:`DEFAULT_MARGINS`).
        metrics: Metrics to test.
        primary: Only this metric gates (Holm over its benchmarks and probes); the others
            are reported as ``info``.
        inconclusive: ``pass`` (exit 0 with a warning) or ``fail`` (exit 3).
        allow_shared_items: Compare on the shared, identically asked items when the item sets
            or their provenance differ (else refuse with exit 2).
        check: Provenance columns to match (a subset of :data:`PROVENANCE_COLUMNS`).
        benchmarks: Benchmarks both sides must hold (missing: exit 2); default any.
        power: Power at which the smallest detectable change is reported.
        max_undefined: Largest share of resamples where a metric may be undefined (AUROC with
            one class) before the metric is inconclusive; at most 0.5.
        n_bins: Equal-width bins of the ECE.
        min_items: Fewest matched items of a group for its tests to decide; a smaller group's
            tests are inconclusive unless nothing changed on it.
        max_annotations: Most GitHub annotations written per kind (errors, warnings).
    """

    alpha: float = 0.05
    n_boot: int = 2000
    seed: int = 0
    margins: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(DEFAULT_MARGINS))
    metrics: tuple[str, ...] = tuple(METRICS)
    primary: str | None = None
    inconclusive: Literal["pass", "fail"] = "pass"
    allow_shared_items: bool = False
    check: tuple[str, ...] = PROVENANCE_COLUMNS
    benchmarks: tuple[str, ...] | None = None
    power: float = 0.8
    max_undefined: float = 0.05
    n_bins: int = 10
    min_items: int = 30
    max_annotations: int = 10

    def __post_init__(self) -> None:
        def bad(key: str, why: str) -> GateConfigError:
            return GateConfigError(f"gate config: {key} {why}")

        if not 0 < self.alpha < 0.5:
            raise bad("alpha", f"must lie in (0, 0.5), got {self.alpha!r}")
        if int(self.n_boot) != self.n_boot or self.n_boot < 100:
            raise bad("n_boot", f"must be an integer >= 100, got {self.n_boot!r}")
        if not 0 < self.power < 1:
            raise bad("power", f"must lie in (0, 1), got {self.power!r}")
        if not 0 <= self.max_undefined <= 0.5:
            raise bad("max_undefined", f"must lie in [0, 0.5], got {self.max_undefined!r}")
        if int(self.n_bins) != self.n_bins or self.n_bins < 1:
            raise bad("n_bins", f"must be a positive integer, got {self.n_bins!r}")
        if int(self.min_items) != self.min_items or self.min_items < 2:
            raise bad("min_items", f"must be an integer >= 2, got {self.min_items!r}")
        if int(self.max_annotations) != self.max_annotations or self.max_annotations < 1:
            raise bad(
                "max_annotations", f"must be a positive integer, got {self.max_annotations!r}"
            )
        if self.inconclusive not in ("pass", "fail"):
            raise bad("inconclusive", f"must be 'pass' or 'fail', got {self.inconclusive!r}")
        for name in (*self.metrics, *self.margins, *([self.primary] if self.primary else [])):
            if name not in METRICS:
                close = difflib.get_close_matches(str(name), list(METRICS), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise bad(
                    "metrics", f"name an unknown metric {name!r}{hint}; known: {list(METRICS)}"
                )
        if not self.metrics:
            raise bad("metrics", "is empty")
        if self.primary and self.primary not in self.metrics:
            raise bad("primary", f"{self.primary!r} is not among the tested metrics")
        merged = {**DEFAULT_MARGINS, **{k: float(v) for k, v in self.margins.items()}}
        for name, m in merged.items():
            if not (math.isfinite(m) and m >= 0):
                raise bad(f"margins.{name}", f"must be a number >= 0, got {m!r}")
        unknown = sorted(set(self.check) - set(PROVENANCE_COLUMNS))
        if unknown:
            raise bad("check", f"names unknown column(s) {unknown}; use {list(PROVENANCE_COLUMNS)}")
        object.__setattr__(self, "margins", merged)
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "check", tuple(self.check))
        if self.benchmarks is not None:
            object.__setattr__(self, "benchmarks", tuple(str(b) for b in self.benchmarks))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, *, source: str = "config") -> GateConfig:
        """A config from a parsed YAML/JSON mapping; unknown keys are an error naming them.

        Raises:
            GateConfigError: Unknown keys or bad values (the message names ``source``).
        """
        data = dict(data or {})
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            hints = []
            for key in unknown:
                close = difflib.get_close_matches(key, sorted(fields), n=1)
                hints.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
            raise GateConfigError(f"{source}: unknown key(s) {', '.join(hints)}")
        for key in ("metrics", "check", "benchmarks"):
            if isinstance(data.get(key), str):
                data[key] = [data[key]]
            if data.get(key) is not None:
                data[key] = tuple(data[key])
        if "margins" in data and not isinstance(data["margins"], Mapping):
            raise GateConfigError(f"{source}: margins must be a mapping metric -> margin")
        try:
            return cls(**data)
        except GateConfigError as exc:
            raise GateConfigError(f"{source}: {exc}") from None
        except TypeError as exc:
            raise GateConfigError(f"{source}: {exc}") from None

    def fingerprint(self) -> str:
        """SHA-256 of the settings that change a verdict (``max_annotations`` left out)."""
        data = {k: v for k, v in to_jsonable(self).items() if k != "max_annotations"}
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class PairedGroup(Result):
    """Matched items of one (benchmark, probe, confidence kind); arrays have one entry per item.

    Attributes:
        benchmark: Benchmark.
        probe: Probe.
        confidence_kind: Confidence kind.
        item_ids: Matched item ids.
        base_confidence: Baseline confidence (NaN: unparseable).
        base_correct: Baseline correctness (NaN: ungraded).
        cand_confidence: Candidate confidence.
        cand_correct: Candidate correctness.
        pop_confidence: Reference population's mean confidence per item, or None.
    """

    benchmark: str
    probe: str
    confidence_kind: str
    item_ids: tuple[str, ...]
    base_confidence: np.ndarray
    base_correct: np.ndarray
    cand_confidence: np.ndarray
    cand_correct: np.ndarray
    pop_confidence: np.ndarray | None = None

    @property
    def name(self) -> str:
        """``benchmark/probe/confidence_kind``."""
        return f"{self.benchmark}/{self.probe}/{self.confidence_kind}"

    @property
    def n_items(self) -> int:
        """Matched items."""
        return len(self.item_ids)


@dataclasses.dataclass(frozen=True)
class MatchReport(Result):
    """What matching found.

    Attributes:
        baseline_model: The baseline's model name.
        candidate_model: The candidate's model name.
        groups: The matched groups.
        mismatches: What differs (each a sentence naming the group, the field and examples).
        warnings: Provenance not recorded on a side, items left out with ``allow_shared_items``.
    """

    baseline_model: str
    candidate_model: str
    groups: tuple[PairedGroup, ...]
    mismatches: tuple[str, ...]
    warnings: tuple[str, ...]


def _examples(values: Sequence[str], n: int | None = None) -> str:
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


def match_records(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    config: GateConfig | None = None,
    *,
    population: pd.DataFrame | None = None,
) -> MatchReport:
    """Match baseline and candidate items by key and provenance.

    Args:
        baseline: Validated records of one model.
        candidate: Validated records of one model.
        config: Which provenance to check, required benchmarks, ``allow_shared_items``.
        population: Records of reference models (the mean confidence per item gives Pop).

    Returns:
        A :class:`MatchReport`; with mismatches and without ``allow_shared_items`` its groups
        are the matched part only and the gate refuses.

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
    keep = set(config.benchmarks) if config.benchmarks else None
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

    def groups_of(df: pd.DataFrame) -> dict[tuple[str, str, str], pd.DataFrame]:
        out = {}
        for key, sub in df.groupby(list(_GROUP), sort=True):
            key = tuple(str(k) for k in key)
            if keep is None or key[0] in keep:
                out[key] = sub.drop_duplicates("item_id").set_index("item_id")
        return out

    gb, gc = groups_of(baseline), groups_of(candidate)
    for key in sorted(set(gb) ^ set(gc)):
        side, other = ("baseline", "candidate") if key in gb else ("candidate", "baseline")
        mismatches.append(
            f"{'/'.join(key)}: only in the {side} ({len((gb if key in gb else gc)[key])} items); "
            f"the {other} has no such benchmark/probe/confidence kind"
        )

    pop_mean = None
    if population is not None and not population.empty:
        pop = population[~population["model"].astype(str).isin({base_model, cand_model})]
        pop_mean = pop.groupby([*_GROUP, "item_id"], observed=True)["confidence"].mean()

    groups: list[PairedGroup] = []
    for key in sorted(set(gb) & set(gc)):
        b, c = gb[key], gc[key]
        name = "/".join(key)
        only_b = [i for i in b.index if i not in c.index]
        only_c = [i for i in c.index if i not in b.index]
        if only_b:
            mismatches.append(
                f"{name}: {len(only_b)} item(s) only in the baseline ({_examples(only_b)})"
            )
        if only_c:
            mismatches.append(
                f"{name}: {len(only_c)} item(s) only in the candidate ({_examples(only_c)})"
            )
        shared = [i for i in b.index if i in c.index]
        ok = np.ones(len(shared), dtype=bool)
        for col in check:
            has_b, has_c = _present(b, col), _present(c, col)
            if has_b != has_c:
                side = "candidate" if has_b else "baseline"
                warnings.append(f"{name}: {col} not recorded in the {side}; not checked")
            if not (has_b and has_c):
                continue
            vb = b.loc[shared, col].astype(object).to_numpy()
            vc = c.loc[shared, col].astype(object).to_numpy()
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
                base_confidence=b.loc[items, "confidence"].to_numpy(dtype=float),
                base_correct=b.loc[items, "correct"].to_numpy(dtype=float),
                cand_confidence=c.loc[items, "confidence"].to_numpy(dtype=float),
                cand_correct=c.loc[items, "correct"].to_numpy(dtype=float),
                pop_confidence=pop_conf,
            )
        )
    return MatchReport(base_model, cand_model, tuple(groups), tuple(mismatches), tuple(warnings))


# --------------------------------------------------------------------------------------------
# Weighted metrics: rows of ``w`` are resamples (bootstrap counts), columns items
# --------------------------------------------------------------------------------------------


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _w_mean(w: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    ws = w[:, mask]
    return _ratio(ws @ x[mask], ws.sum(axis=1))


def _w_auroc(w: np.ndarray, score: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Weighted AUROC (ties count 1/2); NaN in a resample without both classes."""
    if not mask.any():
        return np.full(w.shape[0], np.nan)
    s, yy, ws = score[mask], y[mask], w[:, mask]
    order = np.argsort(s, kind="stable")
    s, yy, ws = s[order], yy[order], ws[:, order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    pos = np.add.reduceat(ws * yy, starts, axis=1)
    neg = np.add.reduceat(ws * (1.0 - yy), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    num = (pos * (below + 0.5 * neg)).sum(axis=1)
    return _ratio(num, pos.sum(axis=1) * neg.sum(axis=1))


def _w_ece(
    w: np.ndarray, c: np.ndarray, y: np.ndarray, mask: np.ndarray, n_bins: int
) -> np.ndarray:
    if not mask.any():
        return np.full(w.shape[0], np.nan)
    cm, ym = c[mask], y[mask]
    bins = _bin_ids(cm, n_bins, "uniform")
    order = np.argsort(bins, kind="stable")
    ws = w[:, mask][:, order]
    starts = np.flatnonzero(np.r_[True, bins[order][1:] != bins[order][:-1]])
    gap = np.add.reduceat(ws * (cm - ym)[order], starts, axis=1)
    return _ratio(np.abs(gap).sum(axis=1), ws.sum(axis=1))


def _side(
    metric: str,
    w: np.ndarray,
    conf: np.ndarray,
    correct: np.ndarray,
    pop: np.ndarray | None,
    n_bins: int,
) -> np.ndarray:
    """The metric on one side for each resample (row of ``w``)."""
    has_c, has_y = ~np.isnan(conf), ~np.isnan(correct)
    valid = has_c & has_y
    c0, y0 = np.nan_to_num(conf), np.nan_to_num(correct)
    if metric == "auroc":
        return _w_auroc(w, c0, y0, valid)
    if metric == "internal_pop_gap":
        assert pop is not None
        both = valid & ~np.isnan(pop)
        return _w_auroc(w, c0, y0, both) - _w_auroc(w, np.nan_to_num(pop), y0, both)
    if metric == "brier":
        return _w_mean(w, (c0 - y0) ** 2, valid)
    if metric == "ece":
        return _w_ece(w, c0, y0, valid, n_bins)
    if metric == "accuracy":
        return _w_mean(w, y0, has_y)
    if metric == "yes_rate":
        return _w_mean(w, (c0 >= 0.5).astype(float), has_c)
    if metric == "unparseable":
        return _w_mean(w, (~has_c).astype(float), np.ones_like(has_c))
    raise KeyError(metric)


def _stable_int(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _weights(n: int, n_boot: int, seed: int, key: str, chunk: int) -> Iterator[np.ndarray]:
    """Bootstrap counts (resamples x items) in chunks, fixed by ``(seed, key)``."""
    rng = np.random.default_rng([int(seed), _stable_int(key)])
    done = 0
    while done < n_boot:
        size = min(chunk, n_boot - done)
        # n draws with replacement per resample, counted per item (= a multinomial draw)
        idx = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
        yield np.bincount(idx.ravel(), minlength=size * n).reshape(size, n).astype(float)
        done += size


# --------------------------------------------------------------------------------------------
# Tests and the verdict
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MetricTest(Result):
    """One gated comparison: a metric on one benchmark, probe and confidence kind.

    Attributes:
        benchmark: Benchmark.
        probe: Probe.
        confidence_kind: Confidence kind (None for accuracy, which one solve per item gives).
        metric: Metric name.
        direction: ``higher``, ``lower`` or ``two-sided``.
        margin: Non-inferiority margin.
        n_items: Matched items.
        baseline: The baseline's value.
        candidate: The candidate's value.
        change: ``candidate - baseline``.
        se: Bootstrap standard error of the change.
        ci_low: Lower end of the interval of the change (the change minus a normal quantile
            times ``se``).
        ci_high: Upper end.
        ci_level: Confidence level of the interval (Holm's level for the test's rank).
        p_value: One-sided p-value of "a change beyond the margin in the bad direction" (two
            one-sided for ``two-sided``; for accuracy the larger of it and McNemar's), before
            adjustment.
        p_holm: Holm-adjusted p-value (None when not in the family).
        n_boot: Resamples where the change was defined.
        n_undefined: Resamples where it was not (AUROC with a single class on a side).
        detectable: Smallest change in the bad direction the run would detect with the
            configured power (None when undefined).
        mcnemar: For accuracy: items right->wrong (``worse``), wrong->right (``better``) and
            McNemar's exact p-values (``p`` two-sided, ``p_worse`` one-sided).
        gated: Whether the test can fail the gate (False: ``info``, a non-primary metric).
        verdict: ``pass``, ``fail``, ``inconclusive`` or ``info``.
        reason: Why, in one sentence.
    """

    benchmark: str
    probe: str
    confidence_kind: str | None
    metric: str
    direction: str
    margin: float
    n_items: int
    baseline: float
    candidate: float
    change: float
    se: float
    ci_low: float
    ci_high: float
    ci_level: float
    p_value: float
    p_holm: float | None
    n_boot: int
    n_undefined: int
    detectable: float | None
    mcnemar: Mapping[str, float] | None
    gated: bool
    verdict: str
    reason: str

    @property
    def name(self) -> str:
        """``benchmark/probe[/kind]: metric``."""
        return f"{self.group}: {self.metric}"

    @property
    def group(self) -> str:
        """``benchmark/probe[/kind]``."""
        parts = [self.benchmark, self.probe] + (
            [self.confidence_kind] if self.confidence_kind else []
        )
        return "/".join(parts)


@dataclasses.dataclass(frozen=True)
class GateVerdict(Result):
    """The gate's verdict; ``exit_code`` is what the command returns.

    Attributes:
        status: ``pass``, ``fail``, ``inconclusive`` or ``error`` (refused).
        exit_code: 0 pass (and inconclusive unless the config fails it), 1 regression,
            2 unusable input, 3 inconclusive with ``inconclusive: fail``.
        tests: Every comparison, gated first.
        refusals: Why the gate refused (exit 2), each naming what differs.
        warnings: Non-fatal problems (provenance not recorded, versions differ, ...).
        baseline_model: The baseline's model.
        candidate_model: The candidate's model.
        config: The settings used.
        config_fingerprint: :meth:`GateConfig.fingerprint`.
    """

    status: str
    exit_code: int
    tests: tuple[MetricTest, ...]
    refusals: tuple[str, ...]
    warnings: tuple[str, ...]
    baseline_model: str | None
    candidate_model: str | None
    config: GateConfig
    config_fingerprint: str

    @property
    def failed(self) -> tuple[MetricTest, ...]:
        """The failing tests."""
        return tuple(t for t in self.tests if t.verdict == "fail")

    @property
    def inconclusive(self) -> tuple[MetricTest, ...]:
        """The gated inconclusive tests."""
        return tuple(t for t in self.tests if t.verdict == "inconclusive")

    def headline(self) -> str:
        """One line: the status, the counts and the exit code."""
        if self.status == "error":
            return f"metacog gate: ERROR (exit 2): {len(self.refusals)} problem(s) with the input"
        gated = [t for t in self.tests if t.gated]
        counts = {v: sum(t.verdict == v for t in gated) for v in ("fail", "inconclusive", "pass")}
        return (
            f"metacog gate: {self.status.upper()} (exit {self.exit_code}): "
            f"{self.candidate_model} vs baseline {self.baseline_model}; "
            f"{len(gated)} gated test(s): {counts['fail']} failed, "
            f"{counts['inconclusive']} inconclusive, {counts['pass']} passed"
        )

    def with_warnings(self, extra: Sequence[str]) -> GateVerdict:
        """The same verdict with more warnings (version differences found by the caller)."""
        return dataclasses.replace(self, warnings=self.warnings + tuple(extra))

    @classmethod
    def refused(
        cls,
        refusals: Sequence[str],
        config: GateConfig | None = None,
        *,
        warnings: Sequence[str] = (),
        baseline_model: str | None = None,
        candidate_model: str | None = None,
    ) -> GateVerdict:
        """The verdict of unusable input (exit 2)."""
        config = config or GateConfig()
        return cls(
            status="error",
            exit_code=EXIT_CODES["error"],
            tests=(),
            refusals=tuple(refusals),
            warnings=tuple(warnings),
            baseline_model=baseline_model,
            candidate_model=candidate_model,
            config=config,
            config_fingerprint=config.fingerprint(),
        )


@dataclasses.dataclass
class _Draft:
    """A test before the multiplicity step."""

    group: PairedGroup
    metric: str
    kind: str | None
    baseline: float
    candidate: float
    se: float  # bootstrap standard error of the change
    n_defined: int  # resamples where the change was defined
    n_undefined: int
    p_value: float
    mcnemar: dict[str, float] | None
    problem: str | None  # why the test cannot decide
    unchanged: bool  # every resample's change is exactly 0


def _upper_tail(z: float) -> float:
    """P(Z >= z) for a standard normal Z; z may be +-inf (a zero standard error)."""
    return float(special.ndtr(-z))


def _z(excess: float, se: float) -> float:
    """``excess / se`` where a zero ``se`` gives +-inf by the sign of ``excess`` (0 at 0)."""
    if se > 0:
        return excess / se
    return math.inf if excess > 0 else (-math.inf if excess < 0 else 0.0)


def _p_beyond(change: float, se: float, direction: str, margin: float) -> float:
    """p-value of "the change lies beyond the margin in the bad direction" (normal, bootstrap SE).

    Small when the data show such a change: for ``higher`` it is ``P(Z <= (change + margin) /
    se)``, the chance of a change this low when the true change is the boundary ``-margin``;
    ``two-sided`` doubles the smaller of its two one-sided values.
    """
    below = _upper_tail(_z(-(change + margin), se))  # evidence of a change below -margin
    above = _upper_tail(_z(change - margin, se))  # evidence of a change above +margin
    if direction == "higher":
        return below
    if direction == "lower":
        return above
    return min(1.0, 2 * min(below, above))


def _mcnemar(base: np.ndarray, cand: np.ndarray) -> dict[str, float]:
    # an ungraded (NaN) item compares unequal to 0 and 1, so only graded pairs count
    worse = int(np.sum((base == 1) & (cand == 0)))
    better = int(np.sum((base == 0) & (cand == 1)))
    n = worse + better
    if n == 0:
        return {"worse": 0, "better": 0, "p": 1.0, "p_worse": 1.0}
    return {
        "worse": worse,
        "better": better,
        "p": float(stats.binomtest(worse, n, 0.5).pvalue),
        "p_worse": float(stats.binomtest(worse, n, 0.5, alternative="greater").pvalue),
    }


def _draft_group(
    group: PairedGroup, metrics: Sequence[str], config: GateConfig, chunk: int = 256
) -> list[_Draft]:
    n = group.n_items
    sides = {
        "base": (group.base_confidence, group.base_correct),
        "cand": (group.cand_confidence, group.cand_correct),
    }

    def metric_of(m: str, w: np.ndarray, side: str) -> np.ndarray:
        conf, correct = sides[side]
        return _side(m, w, conf, correct, group.pop_confidence, config.n_bins)

    ones = np.ones((1, n))
    point = {
        m: (float(metric_of(m, ones, "base")[0]), float(metric_of(m, ones, "cand")[0]))
        for m in metrics
    }
    boot: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    for w in _weights(n, config.n_boot, config.seed, group.name, chunk):
        for m in metrics:
            boot[m].append(metric_of(m, w, "cand") - metric_of(m, w, "base"))
    drafts = []
    for m in metrics:
        spec = METRICS[m]
        delta = np.concatenate(boot[m])
        defined = np.isfinite(delta)
        deltas = delta[defined]
        n_undef = int((~defined).sum())
        base, cand = point[m]
        change = cand - base
        # at least half the resamples are defined when no problem stops the test
        se = float(np.std(deltas, ddof=1)) if deltas.size > 1 else math.nan
        unchanged = deltas.size > 0 and change == 0 and bool(np.all(deltas == 0))
        problem = None
        if not (math.isfinite(base) and math.isfinite(cand)):
            side = "baseline" if not math.isfinite(base) else "candidate"
            problem = f"{m} is undefined on the {side} ({_undefined_why(m)})"
        elif unchanged:  # the same on every item: no change, however few or odd the items
            pass
        elif n_undef > config.max_undefined * config.n_boot:
            problem = (
                f"{m} is undefined in {n_undef} of {config.n_boot} resamples "
                f"({100 * n_undef / config.n_boot:.1f}% > {100 * config.max_undefined:g}%: "
                f"{_undefined_why(m)})"
            )
        elif n < config.min_items:
            problem = (
                f"{m}: only {n} matched item(s), fewer than min_items ({config.min_items}) for "
                f"the bootstrap to decide"
            )
        margin = config.margins[m]
        p = _p_beyond(change, se, spec.direction, margin) if problem is None else math.nan
        mc = None
        if m == "accuracy":
            mc = _mcnemar(group.base_correct, group.cand_correct)
            if problem is None:  # a failure must also be a significant change of McNemar's
                p = max(p, mc["p_worse"])
        drafts.append(
            _Draft(
                group=group,
                metric=m,
                kind=None if not spec.per_kind else group.confidence_kind,
                baseline=base,
                candidate=cand,
                se=se,
                n_defined=int(deltas.size),
                n_undefined=n_undef,
                p_value=p,
                mcnemar=mc,
                problem=problem,
                unchanged=unchanged,
            )
        )
    return drafts


def _undefined_why(metric: str) -> str:
    if metric in ("auroc", "internal_pop_gap"):
        return "it needs both right and wrong items"
    if metric == "yes_rate":
        return "no parsed confidence"
    if metric == "accuracy":
        return "no graded item"
    return "no item with a parsed confidence and a grade"


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _finish(
    d: _Draft, config: GateConfig, level: float, gated: bool, may_fail: bool, p_holm: float | None
) -> MetricTest:
    """Interval at ``level`` (one-sided error per side), the verdict and its reason."""
    spec = METRICS[d.metric]
    m = config.margins[d.metric]
    g = d.group
    change = d.candidate - d.baseline
    common = {
        "benchmark": g.benchmark,
        "probe": g.probe,
        "confidence_kind": d.kind,
        "metric": d.metric,
        "direction": spec.direction,
        "margin": m,
        "n_items": g.n_items,
        "baseline": d.baseline,
        "candidate": d.candidate,
        "change": change,
        "se": d.se,
        "p_value": d.p_value,
        "p_holm": p_holm,
        "n_boot": d.n_defined,
        "n_undefined": d.n_undefined,
        "mcnemar": d.mcnemar,
        "gated": gated,
    }
    if d.problem is not None:
        return MetricTest(
            **common,
            ci_low=math.nan,
            ci_high=math.nan,
            ci_level=math.nan,
            detectable=None,
            verdict="inconclusive" if gated else "info",
            reason=d.problem,
        )
    tail = level / 2 if spec.direction == "two-sided" else level
    half = float(special.ndtri(1 - tail)) * d.se
    lo, hi = change - half, change + half
    detectable = m + (float(special.ndtri(1 - tail)) + float(special.ndtri(config.power))) * d.se
    if spec.direction == "higher":
        beyond, inside = hi < -m, lo > -m
        bad = f"a drop of more than {m:g}"
    elif spec.direction == "lower":
        beyond, inside = lo > m, hi < m
        bad = f"a rise of more than {m:g}"
    else:
        beyond, inside = (lo > m or hi < -m), (lo > -m and hi < m)
        bad = f"a {'rise' if lo > m else 'drop'} of more than {m:g} (either way is a regression)"
    if d.unchanged:  # identical on every item: exactly no change, whatever the margin
        beyond, inside = False, True
    if beyond and d.mcnemar is not None and d.mcnemar["p_worse"] > tail:
        beyond = False
        mc_block = (
            f"; McNemar's exact test does not confirm it ({int(d.mcnemar['worse'])} right->wrong "
            f"vs {int(d.mcnemar['better'])} wrong->right, p = {d.mcnemar['p_worse']:.3g})"
        )
    else:
        mc_block = ""
    pct = f"{100 * (1 - 2 * tail):.4g}%"
    counts = ""
    if d.mcnemar is not None and not mc_block:
        counts = (
            f"; {int(d.mcnemar['worse'])} right->wrong, {int(d.mcnemar['better'])} wrong->right"
        )
    what = (
        f"{d.metric} {_fmt(d.baseline)} -> {_fmt(d.candidate)} (change {_fmt(change, True)}, "
        f"{pct} interval [{_fmt(lo, True)}, {_fmt(hi, True)}], {g.n_items} items{counts})"
    )
    if not gated:
        verdict, reason = "info", f"{what}; not gated (primary metric: {config.primary})"
    elif beyond and may_fail:
        verdict = "fail"
        reason = (  # only a test of the Holm family may fail, so p_holm is set
            f"regression: {what} shows {bad}, beyond the non-inferiority margin "
            f"(Holm-adjusted p = {p_holm:.2g})"
        )
    elif beyond:
        verdict = "inconclusive"
        reason = (
            f"{what} lies beyond the margin at its Holm level, but Holm's step-down stopped at a "
            f"test ranked before it"
        )
    elif inside:
        verdict = "pass"
        reason = f"{what} lies within the margin {m:g}"
        if d.unchanged:
            reason = f"{d.metric} {_fmt(d.baseline)} on both sides: unchanged on every item"
    else:
        verdict = "inconclusive"
        reason = (
            f"{what} straddles the margin {m:g}{mc_block}; this run detects "
            f"{_bad_word(spec.direction)} of {detectable:.3f} or more "
            f"({100 * config.power:g}% power)"
        )
    return MetricTest(
        **common,
        ci_low=lo,
        ci_high=hi,
        ci_level=1 - 2 * tail,
        detectable=detectable,
        verdict=verdict,
        reason=reason,
    )


def _bad_word(direction: str) -> str:
    return {"higher": "a drop", "lower": "a rise", "two-sided": "a change"}[direction]


def _binary(group: PairedGroup) -> bool:
    """Whether every confidence of the group is 0, 1 or unparseable."""
    conf = np.concatenate([group.base_confidence, group.cand_confidence])
    conf = conf[~np.isnan(conf)]
    return bool(np.isin(conf, (0.0, 1.0)).all())


def _holm(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p, kind="stable")
    m = p.size
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj


def gate_records(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    config: GateConfig | None = None,
    *,
    population: pd.DataFrame | None = None,
    warnings: Sequence[str] = (),
) -> GateVerdict:
    """Compare a candidate's records with a baseline's and decide.

    Args:
        baseline: Validated records of the baseline model.
        candidate: Validated records of the candidate model.
        config: Settings (default :class:`GateConfig`).
        population: Records of reference models for the Internal - Pop gap.
        warnings: Warnings found by the caller (versions), carried into the verdict.

    Returns:
        The :class:`GateVerdict`; a refusal (exit 2) when the inputs cannot be compared.
    """
    config = config or GateConfig()
    try:
        match = match_records(baseline, candidate, config, population=population)
    except GateInputError as exc:
        return GateVerdict.refused([str(exc)], config, warnings=warnings)
    notes = list(warnings) + list(match.warnings)
    models = {"baseline_model": match.baseline_model, "candidate_model": match.candidate_model}
    if match.mismatches and not config.allow_shared_items:
        refusals = [
            *match.mismatches,
            "the gate compares only identically asked items; set allow_shared_items: true in "
            "the config to compare on the shared ones",
        ]
        return GateVerdict.refused(refusals, config, warnings=notes, **models)
    if match.mismatches:
        n = sum(g.n_items for g in match.groups)
        notes += [f"compared on the {n} shared item(s) only: {m}" for m in match.mismatches]
    if not match.groups:
        return GateVerdict.refused(
            ["no items shared by baseline and candidate", *match.mismatches],
            config,
            warnings=notes,
            **models,
        )

    wanted = [m for m in config.metrics]
    if "internal_pop_gap" in wanted and population is None:
        wanted.remove("internal_pop_gap")
    drafts: list[_Draft] = []
    accuracy_done: set[tuple[str, str]] = set()
    # accuracy once per (benchmark, probe): from the group with the most matched items
    by_size = sorted(match.groups, key=lambda g: (-g.n_items, g.name))
    for g in sorted(match.groups, key=lambda g: g.name):
        ms = []
        for m in wanted:
            if m == "accuracy":
                key = (g.benchmark, g.probe)
                first = next(x for x in by_size if (x.benchmark, x.probe) == key)
                if key in accuracy_done or first is not g:
                    continue
                accuracy_done.add(key)
            if m == "internal_pop_gap" and g.pop_confidence is None:
                continue
            if m == "ece" and "brier" in wanted and _binary(g):
                continue  # the ECE of 0/1 confidence is its Brier score: tested once, as Brier
            ms.append(m)
        drafts.extend(_draft_group(g, ms, config))

    gated = [config.primary is None or d.metric == config.primary for d in drafts]
    family = [i for i, d in enumerate(drafts) if gated[i] and d.problem is None]
    if not any(gated):
        return GateVerdict.refused(
            [f"no test of the primary metric {config.primary!r} could be made"],
            config,
            warnings=notes,
            **models,
        )
    tests: list[MetricTest | None] = [None] * len(drafts)
    if family:
        p = np.array([drafts[i].p_value for i in family])
        adj = _holm(p)
        order = np.argsort(p, kind="stable")
        rejecting = True
        for rank, j in enumerate(order):
            i = family[j]
            level = config.alpha / (len(family) - rank)
            t = _finish(drafts[i], config, level, True, rejecting, float(adj[j]))
            rejecting = rejecting and t.verdict == "fail"
            tests[i] = t
    for i, d in enumerate(drafts):
        if tests[i] is None:
            tests[i] = _finish(d, config, config.alpha, gated[i], False, None)
    done = [t for t in tests if t is not None]
    done.sort(
        key=lambda t: (
            not t.gated,
            {"fail": 0, "inconclusive": 1, "pass": 2, "info": 3}[t.verdict],
            t.benchmark,
            t.probe,
            t.confidence_kind or "",
            t.metric,
        )
    )
    verdicts = {t.verdict for t in done if t.gated}
    if "fail" in verdicts:
        status = "fail"
        code = EXIT_CODES["fail"]
    elif "inconclusive" in verdicts:
        status = "inconclusive"
        code = EXIT_CODES["inconclusive"] if config.inconclusive == "fail" else 0
        if code == 0:
            notes.append(
                f"{sum(t.verdict == 'inconclusive' for t in done)} gated test(s) inconclusive; "
                "passing (set inconclusive: fail in the config to exit 3)"
            )
    else:
        status, code = "pass", EXIT_CODES["pass"]
    return GateVerdict(
        status=status,
        exit_code=code,
        tests=tuple(done),
        refusals=(),
        warnings=tuple(notes),
        config=config,
        config_fingerprint=config.fingerprint(),
        **models,
    )
