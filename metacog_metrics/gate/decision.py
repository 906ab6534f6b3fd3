"""The gate's decision: a paired item bootstrap per group, a rule, Holm, one verdict.

On the matched items every metric gets a paired item bootstrap of the change ``candidate -
baseline`` (the same resampled items for both sides and all metrics of a group; an item's
repeated records travel together). The change's standard error gives each test a normal
p-value; Holm's step-down controls the failures over all gated tests together. A test then
fails by the configured rule (:data:`~metacog_metrics.gate.config.GATE_RULES`):

- ``significant`` (default): the estimated change is worse than the margin *and* the worsening
  is significant (one-sided, Holm); otherwise it passes, and a test whose noise exceeds the
  margin is reported as underpowered with the smallest change it would catch;
- ``noninferiority``: the whole Holm-level interval lies beyond the margin; an interval that
  straddles it is inconclusive;
- ``threshold``: the estimated change is worse than the margin, whatever the noise.

Accuracy is tested once per benchmark, on the solves of every probe; a failure of accuracy
must also be confirmed by an exact sign test over the items whose correctness moved (McNemar's
exact test when each item has one record a side).

The p-values come from the bootstrap's standard error (Efron & Tibshirani 1993, ch. 13), not
from its percentiles: Holm's first step tests at ``alpha / m``, a tail 2,000 resamples cannot
resolve, while they estimate the standard error to about 2%. The false-alarm rate and power
this gives are measured in ``bench/bench_gate.py`` (docs/gate.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import special, stats

from metacog_metrics._result import Result
from metacog_metrics.gate.config import GateConfig, GateInputError
from metacog_metrics.gate.matching import PairedGroup, accuracy_groups, match_records
from metacog_metrics.gate.metrics import METRICS, bootstrap_weights, metric_values

__all__ = [
    "EXIT_CODES",
    "GateVerdict",
    "MetricTest",
    "gate_records",
    "gate_records_under",
    "planned_tests",
]

#: Exit status of each verdict status (``inconclusive`` exits 0 unless the config fails it).
EXIT_CODES: Mapping[str, int] = {"pass": 0, "fail": 1, "error": 2, "inconclusive": 3}
_ORDER = {"fail": 0, "inconclusive": 1, "pass": 2, "info": 3}


@dataclasses.dataclass(frozen=True)
class MetricTest(Result):
    """One gated comparison: a metric on one benchmark, probe and confidence kind.

    Attributes:
        benchmark: Benchmark.
        probe: Probe (``solve`` for accuracy: the solves of every probe).
        confidence_kind: Confidence kind (None for accuracy).
        metric: Metric name.
        direction: ``higher``, ``lower`` or ``two-sided``.
        margin: The change the gate allows, in the metric's units.
        rule: The decision rule.
        n_items: Matched items.
        repeats: Most records of one item on a side (1: one attempt per item).
        baseline: The baseline's value.
        candidate: The candidate's value.
        change: ``candidate - baseline``.
        se: Bootstrap standard error of the change.
        ci_low: Lower end of the interval of the change (change - z * se).
        ci_high: Upper end.
        ci_level: Confidence level of the interval (Holm's level for the test's rank).
        p_value: One-sided p-value of the rule's test before adjustment: of a worsening
            (``significant``, ``threshold``) or of a change beyond the margin
            (``noninferiority``); two one-sided for ``two-sided`` metrics; for accuracy the
            larger of it and the sign test's.
        p_holm: Holm-adjusted p-value (None when not in the family).
        n_boot: Resamples where the change was defined.
        n_undefined: Resamples where it was not (AUROC with a single class on a side).
        detectable: Smallest change in the bad direction the gate catches with the configured
            power (None when undefined).
        underpowered: The noise at the family's level exceeds the margin: a change just
            beyond the margin cannot fail.
        flips: For accuracy: items whose correctness fell (``worse``) and rose (``better``) and
            the exact one-sided sign test's ``p_worse``.
        graded_only: For accuracy: both sides' accuracy over graded records only and their
            numbers of ungraded records.
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
    rule: str
    n_items: int
    repeats: int
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
    underpowered: bool
    flips: Mapping[str, float] | None
    graded_only: Mapping[str, float] | None
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
        return group_name(self.benchmark, self.probe, self.confidence_kind)


def group_name(benchmark: str, probe: str, confidence_kind: str | None) -> str:
    """A group's name: ``benchmark/probe[/kind]``."""
    return "/".join([benchmark, probe, *([confidence_kind] if confidence_kind else [])])


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

    @property
    def underpowered(self) -> tuple[MetricTest, ...]:
        """The gated tests that passed but could not catch a change just beyond the margin."""
        return tuple(t for t in self.tests if t.gated and t.verdict == "pass" and t.underpowered)

    def headline(self) -> str:
        """One line: the status, the counts and the exit code."""
        if self.status == "error":
            return f"metacog gate: ERROR (exit 2): {len(self.refusals)} problem(s) with the input"
        gated = [t for t in self.tests if t.gated]
        counts = {v: sum(t.verdict == v for t in gated) for v in ("fail", "inconclusive", "pass")}
        weak = len(self.underpowered)
        return (
            f"metacog gate: {self.status.upper()} (exit {self.exit_code}): "
            f"{self.candidate_model} vs baseline {self.baseline_model}; "
            f"{len(gated)} gated test(s): {counts['fail']} failed, "
            f"{counts['inconclusive']} inconclusive, {counts['pass']} passed"
            + (f" ({weak} underpowered)" if weak else "")
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
    """A test before the rule and the multiplicity step (what no setting of the rule moves)."""

    group: PairedGroup
    metric: str
    baseline: float
    candidate: float
    se: float  # bootstrap standard error of the change
    n_defined: int  # resamples where the change was defined
    n_undefined: int
    flips: dict[str, float] | None
    graded_only: dict[str, float] | None
    problem: str | None  # why the test cannot decide
    unchanged: bool  # the same on every item

    def p(self, rule: str, margin: float) -> float:
        """The rule's one-sided p-value: of a worsening, or of a change beyond the margin."""
        if self.problem is not None:
            return math.nan
        if self.unchanged:
            return 1.0
        direction = METRICS[self.metric].direction
        bound = margin if rule == "noninferiority" else 0.0
        p = _p_beyond(self.candidate - self.baseline, self.se, direction, bound)
        if self.flips is not None:  # a failure must also be a significant move of the items
            p = max(p, self.flips["p_worse"])
        return p


def _upper_tail(z: float) -> float:
    """P(Z >= z) for a standard normal Z; z may be +-inf (a zero standard error)."""
    return float(special.ndtr(-z))


def _z(excess: float, se: float) -> float:
    """``excess / se`` where a zero ``se`` gives +-inf by the sign of ``excess`` (0 at 0)."""
    if se > 0:
        return excess / se
    return math.inf if excess > 0 else (-math.inf if excess < 0 else 0.0)


def _p_beyond(change: float, se: float, direction: str, margin: float) -> float:
    """p-value of "the change lies beyond ``margin`` in the bad direction" (normal, bootstrap
    SE); with ``margin`` 0 it is the p-value of a worsening.

    For ``higher`` it is ``P(Z <= (change + margin) / se)``, the chance of a change this low
    when the true change is the boundary ``-margin``; ``two-sided`` doubles the smaller of its
    two one-sided values.
    """
    below = _upper_tail(_z(-(change + margin), se))  # evidence of a change below -margin
    above = _upper_tail(_z(change - margin, se))  # evidence of a change above +margin
    if direction == "higher":
        return below
    if direction == "lower":
        return above
    return min(1.0, 2 * min(below, above))


def _bad(change: float, direction: str) -> float:
    """The change in the bad direction (a move either way for ``two-sided``)."""
    return {"higher": -change, "lower": change}.get(direction, abs(change))


def _flips(group: PairedGroup, ungraded_wrong: bool) -> dict[str, float]:
    """Items whose (mean) correctness fell or rose, and the exact one-sided sign test."""
    fill = 0.0 if ungraded_wrong else np.nan
    base = group.per_item(np.where(np.isnan(group.base_correct), fill, group.base_correct), "base")
    cand = group.per_item(np.where(np.isnan(group.cand_correct), fill, group.cand_correct), "cand")
    # an item without a graded record on a side compares unequal to everything: left out
    worse = int(np.sum(cand < base))
    better = int(np.sum(cand > base))
    n = worse + better
    if n == 0:
        return {"worse": 0, "better": 0, "p_worse": 1.0}
    p = stats.binomtest(worse, n, 0.5, alternative="greater").pvalue
    return {"worse": worse, "better": better, "p_worse": float(p)}


def _graded_only(group: PairedGroup) -> dict[str, float]:
    def acc(y: np.ndarray) -> float:
        graded = y[~np.isnan(y)]
        return float(graded.mean()) if graded.size else math.nan

    return {
        "baseline": acc(group.base_correct),
        "candidate": acc(group.cand_correct),
        "ungraded_baseline": int(np.isnan(group.base_correct).sum()),
        "ungraded_candidate": int(np.isnan(group.cand_correct).sum()),
    }


def _undefined_why(metric: str) -> str:
    if metric in ("auroc", "internal_pop_gap"):
        return "it needs both right and wrong items"
    if metric == "yes_rate":
        return "no parsed confidence"
    if metric == "accuracy":
        return "no graded item"
    return "no item with a parsed confidence and a grade"


def _draft_group(
    group: PairedGroup, metrics: Sequence[str], config: GateConfig, chunk: int = 256
) -> list[_Draft]:
    n = group.n_items
    wrong = config.ungraded == "wrong"
    pop = group.pop_confidence
    sides = {
        "base": (group.base_confidence, group.base_correct, group.base_item),
        "cand": (group.cand_confidence, group.cand_correct, group.cand_item),
    }

    def expand(w: np.ndarray, side: str) -> np.ndarray:
        item = sides[side][2]
        if item.size == n and np.array_equal(item, np.arange(n)):
            return w  # one record per item, in item order
        return w[:, item]  # an item's weight on each of its records

    def metric_of(m: str, w: np.ndarray, side: str) -> np.ndarray:
        conf, correct, item = sides[side]
        p = pop[item] if pop is not None else None
        return metric_values(m, w, conf, correct, p, config.n_bins, ungraded_wrong=wrong)

    ones = np.ones((1, n))
    point = {
        m: (
            float(metric_of(m, expand(ones, "base"), "base")[0]),
            float(metric_of(m, expand(ones, "cand"), "cand")[0]),
        )
        for m in metrics
    }
    boot: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    for w in bootstrap_weights(n, config.n_boot, config.seed, group.name, chunk):
        wb, wc = expand(w, "base"), expand(w, "cand")
        for m in metrics:
            boot[m].append(metric_of(m, wc, "cand") - metric_of(m, wb, "base"))
    identical = group.identical()
    drafts = []
    for m in metrics:
        delta = np.concatenate(boot[m])
        defined = np.isfinite(delta)
        deltas = delta[defined]
        n_undef = int((~defined).sum())
        base, cand = point[m]
        change = cand - base
        se = float(np.std(deltas, ddof=1)) if deltas.size > 1 else math.nan
        # the same on every item: the same records, or a metric that never moved (the sums of
        # the two sides may differ in the last bit when their records come in another order)
        unchanged = identical or (
            deltas.size > 0 and abs(change) <= 1e-12 and bool(np.all(np.abs(deltas) <= 1e-12))
        )
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
                + ("" if config.pool else " (pool the benchmarks: --pool)")
            )
        flips = graded = None
        if m == "accuracy":
            flips = _flips(group, wrong)
            graded = _graded_only(group)
        drafts.append(
            _Draft(
                group=group,
                metric=m,
                baseline=base,
                candidate=cand,
                se=se,
                n_defined=int(deltas.size),
                n_undefined=n_undef,
                flips=flips,
                graded_only=graded,
                problem=problem,
                unchanged=unchanged,
            )
        )
    return drafts


def _fmt(x: float | None, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _detectable(rule: str, margin: float, se: float, z_alpha: float, z_power: float) -> float:
    """Smallest true change in the bad direction the rule catches with the given power."""
    if rule == "significant":  # both the margin and significance must be passed
        return max(margin, z_alpha * se) + z_power * se
    if rule == "noninferiority":  # the interval's end must pass the margin
        return margin + (z_alpha + z_power) * se
    return margin + z_power * se  # threshold: the estimate must pass the margin


def _finish(
    d: _Draft,
    config: GateConfig,
    level: float,
    m_family: int,
    gated: bool,
    rejected: bool,
    p_holm: float | None,
) -> MetricTest:
    """The interval at ``level``, the verdict by the rule and its reason."""
    spec = METRICS[d.metric]
    rule = config.rule
    g = d.group
    m = config.margin(d.metric, g.benchmark)
    change = d.candidate - d.baseline
    common = {
        "benchmark": g.benchmark,
        "probe": g.probe,
        "confidence_kind": g.confidence_kind,
        "metric": d.metric,
        "direction": spec.direction,
        "margin": m,
        "rule": rule,
        "n_items": g.n_items,
        "repeats": g.repeats,
        "baseline": d.baseline,
        "candidate": d.candidate,
        "change": change,
        "se": d.se,
        "p_value": d.p(rule, m),
        "p_holm": p_holm,
        "n_boot": d.n_defined,
        "n_undefined": d.n_undefined,
        "flips": d.flips,
        "graded_only": d.graded_only,
        "gated": gated,
    }
    if d.problem is not None:
        return MetricTest(
            **common,
            ci_low=math.nan,
            ci_high=math.nan,
            ci_level=math.nan,
            detectable=None,
            underpowered=False,
            verdict="inconclusive" if gated else "info",
            reason=d.problem,
        )
    two = spec.direction == "two-sided"
    tail = level / 2 if two else level
    z_level = float(special.ndtri(1 - tail))
    lo, hi = change - z_level * d.se, change + z_level * d.se
    family_tail = config.alpha / max(m_family, 1) / (2 if two else 1)
    z_family = float(special.ndtri(1 - family_tail))
    z_power = float(special.ndtri(config.power))
    detectable = _detectable(rule, m, d.se, z_family, z_power)
    underpowered = rule != "threshold" and z_family * d.se > m and not d.unchanged
    bad = _bad(change, spec.direction)
    word = {"higher": "drop", "lower": "rise", "two-sided": "change"}[spec.direction]
    if spec.direction == "two-sided":
        word = "rise" if change > 0 else "drop"
    pct = f"{100 * (1 - 2 * tail):.4g}%"
    counts = ""
    if d.flips is not None:
        counts = f"; {int(d.flips['worse'])} item(s) worse, {int(d.flips['better'])} better"
    graded = ""
    if d.graded_only is not None and (
        d.graded_only["ungraded_baseline"] or d.graded_only["ungraded_candidate"]
    ):
        go = d.graded_only
        graded = (
            f"; ungraded counted wrong ({int(go['ungraded_baseline'])} baseline, "
            f"{int(go['ungraded_candidate'])} candidate record(s)); graded only "
            f"{_fmt(go['baseline'])} -> {_fmt(go['candidate'])}"
        )
    what = (
        f"{d.metric} {_fmt(d.baseline)} -> {_fmt(d.candidate)} (change {_fmt(change, True)}, "
        f"{pct} interval [{_fmt(lo, True)}, {_fmt(hi, True)}], {g.n_items} items{counts}"
        f"{graded})"
    )
    catches = (
        f"this run catches a {_bad_word(spec.direction)} of {detectable:.3f} or more "
        f"({100 * config.power:g}% power)"
    )
    verdict = "pass"
    if not gated:
        verdict, reason = "info", f"{what}; not gated (primary metric: {config.primary})"
    elif d.unchanged:
        reason = f"{d.metric} {_fmt(d.baseline)} on both sides: unchanged on every item"
    elif rule == "threshold":
        if bad > m:
            verdict = "fail"
            reason = f"regression: {what} shows a {word} of more than the margin {m:g}"
        else:
            reason = f"{what}: within the margin {m:g}"
    elif rule == "significant":
        if bad > m and rejected:
            verdict = "fail"
            reason = (
                f"regression: {what} shows a {word} of more than the margin {m:g}, "
                f"significant at Holm's level (adjusted p = {p_holm:.2g})"
            )
        elif bad > m:
            reason = (
                f"{what}: a {word} beyond the margin {m:g} but not significant at Holm's "
                f"level{_not_confirmed(d)}; {catches}"
            )
        else:
            reason = f"{what}: within the margin {m:g}" + (
                f"; underpowered: {catches}" if underpowered else ""
            )
    else:  # noninferiority: the interval against the margin
        if spec.direction == "higher":
            beyond, inside = hi < -m, lo > -m
        elif spec.direction == "lower":
            beyond, inside = lo > m, hi < m
        else:
            beyond, inside = (lo > m or hi < -m), (lo > -m and hi < m)
        confirmed = d.flips is None or d.flips["p_worse"] <= tail
        if beyond and confirmed and rejected:
            verdict = "fail"
            reason = (
                f"regression: {what} lies beyond the non-inferiority margin {m:g} "
                f"(Holm-adjusted p = {p_holm:.2g})"
            )
        elif beyond and confirmed:
            verdict = "inconclusive"
            reason = (
                f"{what} lies beyond the margin at its Holm level, but Holm's step-down stopped "
                "at a test ranked before it"
            )
        elif inside:
            reason = f"{what} lies within the margin {m:g}"
        else:
            verdict = "inconclusive"
            reason = f"{what} straddles the margin {m:g}{_not_confirmed(d)}; {catches}"
    return MetricTest(
        **common,
        ci_low=lo,
        ci_high=hi,
        ci_level=1 - 2 * tail,
        detectable=detectable,
        underpowered=underpowered,
        verdict=verdict,
        reason=reason,
    )


def _bad_word(direction: str) -> str:
    """``drop``, ``rise`` or ``change``: what is bad for a metric of ``direction``."""
    return {"higher": "drop", "lower": "rise", "two-sided": "change"}[direction]


def _not_confirmed(d: _Draft) -> str:
    if d.flips is None or d.flips["p_worse"] <= 0.05:
        return ""
    return (
        f" (the sign test over the items does not confirm it: {int(d.flips['worse'])} worse vs "
        f"{int(d.flips['better'])} better, p = {d.flips['p_worse']:.3g})"
    )


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


def planned_tests(
    groups: Sequence[PairedGroup], config: GateConfig, *, population: bool = False
) -> list[tuple[PairedGroup, list[str]]]:
    """The tests the gate makes: each group with its metrics, accuracy once per benchmark.

    Args:
        groups: Matched groups (one per benchmark, probe and confidence kind).
        config: Settings (metrics).
        population: Whether a reference population was given (the Internal - Pop gap).

    Returns:
        ``(group, metrics)`` pairs: the groups in name order, then one accuracy group per
        benchmark.
    """
    wanted = [m for m in config.metrics if population or m != "internal_pop_gap"]
    out = []
    for g in sorted(groups, key=lambda g: g.name):
        ms = []
        for m in wanted:
            if m == "accuracy":
                continue
            if m == "internal_pop_gap" and g.pop_confidence is None:
                continue
            if m == "ece" and "brier" in wanted and _binary(g):
                continue  # the ECE of 0/1 confidence is its Brier score: tested once, as Brier
            ms.append(m)
        if ms:
            out.append((g, ms))
    if "accuracy" in wanted:
        out.extend((g, ["accuracy"]) for g in accuracy_groups(groups))
    return out


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
        baseline: Validated records of the baseline model (repeats allowed).
        candidate: Validated records of the candidate model.
        config: Settings (default :class:`GateConfig`).
        population: Records of reference models for the Internal - Pop gap.
        warnings: Warnings found by the caller (versions), carried into the verdict.

    Returns:
        The :class:`GateVerdict`; a refusal (exit 2) when the inputs cannot be compared.
    """
    config = config or GateConfig()
    prepared = _prepare(baseline, candidate, config, population, warnings)
    if isinstance(prepared, GateVerdict):
        return prepared
    return _decide(*prepared, config)


def _prepare(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    config: GateConfig,
    population: pd.DataFrame | None,
    warnings: Sequence[str],
) -> GateVerdict | tuple[list[_Draft], list[str], dict[str, str]]:
    """Match and bootstrap: the drafted tests, the notes and the models, or a refusal."""
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
    drafts: list[_Draft] = []
    for group, metrics in planned_tests(match.groups, config, population=population is not None):
        drafts.extend(_draft_group(group, metrics, config))
    return drafts, notes, models


def _decide(
    drafts: Sequence[_Draft], notes: list[str], models: Mapping[str, str], config: GateConfig
) -> GateVerdict:
    """The verdict of the drafted tests under the config's rule, alpha and margins."""
    notes = list(notes)
    gated = [config.primary is None or d.metric == config.primary for d in drafts]
    if not any(gated):
        return GateVerdict.refused(
            [f"no test of the primary metric {config.primary!r} could be made"],
            config,
            warnings=notes,
            **models,
        )
    # Holm's family: the gated tests that can decide. A metric unchanged on every item cannot
    # reach significance at any level (its paired differences are all zero), so, as in Tarone's
    # (1990) rule for tests that cannot reject, it is not counted; it passes.
    family = [i for i, d in enumerate(drafts) if gated[i] and d.problem is None and not d.unchanged]
    tests: list[MetricTest | None] = [None] * len(drafts)
    if family:
        p = np.array(
            [
                drafts[i].p(config.rule, config.margin(drafts[i].metric, drafts[i].group.benchmark))
                for i in family
            ]
        )
        adj = _holm(p)
        order = np.argsort(p, kind="stable")
        rejecting = True
        for rank, j in enumerate(order):
            i = family[j]
            level = config.alpha / (len(family) - rank)
            # Holm's step-down: a test rejects only while every test ranked before it did
            rejecting = rejecting and bool(p[j] <= level)
            t = _finish(drafts[i], config, level, len(family), True, rejecting, float(adj[j]))
            tests[i] = t
            if config.rule == "noninferiority":
                rejecting = rejecting and t.verdict == "fail"
    for i, d in enumerate(drafts):
        if tests[i] is None:
            tests[i] = _finish(d, config, config.alpha, len(family), gated[i], False, None)
    done = [t for t in tests if t is not None]
    done.sort(
        key=lambda t: (
            not t.gated,
            _ORDER[t.verdict],
            t.benchmark,
            t.probe,
            t.confidence_kind or "",
            t.metric,
        )
    )
    verdicts = {t.verdict for t in done if t.gated}
    if "fail" in verdicts:
        status, code = "fail", EXIT_CODES["fail"]
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


#: Settings the drafts depend on: configs that agree on them share one bootstrap.
_DRAFT_SETTINGS = (
    "metrics",
    "pool",
    "max_missing_items",
    "ungraded",
    "allow_shared_items",
    "check",
    "benchmarks",
    "n_boot",
    "seed",
    "max_undefined",
    "n_bins",
    "min_items",
)


def gate_records_under(
    baseline: pd.DataFrame, candidate: pd.DataFrame, configs: Sequence[GateConfig]
) -> list[GateVerdict]:
    """The verdicts of several configs that differ only in rule, alpha, margins, primary,
    inconclusive or power, from one bootstrap (what ``bench/bench_gate.py`` compares).

    Raises:
        ValueError: The configs differ in a setting the bootstrap depends on.
    """
    first = configs[0]
    for c in configs[1:]:
        differ = [k for k in _DRAFT_SETTINGS if getattr(c, k) != getattr(first, k)]
        if differ:
            raise ValueError(f"configs differ in {differ}: they need their own bootstrap")
    prepared = _prepare(baseline, candidate, first, None, ())
    if isinstance(prepared, GateVerdict):
        return [
            dataclasses.replace(prepared, config=c, config_fingerprint=c.fingerprint())
            for c in configs
        ]
    return [_decide(*prepared, c) for c in configs]
