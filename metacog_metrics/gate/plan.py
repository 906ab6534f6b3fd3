"""``metacog gate plan``: how large a change the configured gate catches, and with how many items.

A test's power depends on the standard error of the change it measures. The plan estimates that
error for every test the gate would make and turns it into the smallest change in the bad
direction the gate catches with the configured power (80%), and, for a target change, the items
a group needs:

- from a **baseline** (a baseline file, run or record table): each test's one-side bootstrap
  standard error on the baseline's own items, for a candidate whose per-item noise is that of an
  independent run; ``correlation`` (the per-item correlation of the two runs' contributions)
  shrinks it by ``sqrt(1 - correlation)``: 0 (the default) is the conservative bound, close
  checkpoints of one model share far more;
- from a **baseline and a candidate** (an earlier pair of runs): the paired bootstrap standard
  error of their change itself, the most faithful estimate;
- from an **item count** alone: textbook standard errors (Hanley & McNeil 1982 for AUROC,
  binomial for the rates) of one group of binary confidence at stated metric values.

With ``m`` gated tests the first Holm step tests at ``alpha / m``; a single regression among
unchanged metrics is tested there, so the plan uses that level for every test.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import special

from metacog_metrics._result import Result
from metacog_metrics.gate.config import GateConfig
from metacog_metrics.gate.decision import _detectable, _draft_group, group_name, planned_tests
from metacog_metrics.gate.matching import PairedGroup, match_records
from metacog_metrics.gate.metrics import METRICS, bootstrap_weights, metric_values

__all__ = ["ITEM_ASSUMPTIONS", "GatePlan", "PlannedTest", "plan_from_items", "plan_from_records"]

#: Metric values assumed by :func:`plan_from_items` (one group of binary confidence).
ITEM_ASSUMPTIONS: Mapping[str, float] = {
    "accuracy": 0.7,
    "auroc": 0.7,
    "brier": 0.3,  # binary confidence: the share of items the probe misjudged
    "yes_rate": 0.7,
    "unparseable": 0.02,
}


@dataclasses.dataclass(frozen=True)
class PlannedTest(Result):
    """One test of the plan.

    Attributes:
        benchmark: Benchmark.
        probe: Probe (``solve`` for accuracy).
        confidence_kind: Confidence kind (None for accuracy).
        metric: Metric.
        direction: ``higher``, ``lower`` or ``two-sided``.
        margin: The change the gate allows.
        n_items: Items of the group.
        se: Standard error of the change at ``n_items``.
        detectable: Smallest change in the bad direction caught with the plan's power.
        target: The change asked about (None: none asked).
        items_needed: Items the group needs to catch ``target`` with the plan's power (None
            when no target was asked or when no number of items can: a target at or within the
            margin never fails by design, nor a metric that cannot vary).
    """

    benchmark: str
    probe: str
    confidence_kind: str | None
    metric: str
    direction: str
    margin: float
    n_items: int
    se: float
    detectable: float
    target: float | None
    items_needed: int | None

    @property
    def group(self) -> str:
        """``benchmark/probe[/kind]``."""
        return group_name(self.benchmark, self.probe, self.confidence_kind)


@dataclasses.dataclass(frozen=True)
class GatePlan(Result):
    """The plan: every test's detectable change and the items a target needs.

    Attributes:
        source: What the standard errors come from.
        rule: The gate's rule.
        alpha: Its family-wise level.
        power: The power asked for.
        n_tests: Gated tests (Holm's family).
        correlation: Per-item correlation of the two runs assumed (None: measured on a pair).
        tests: The planned tests.
    """

    source: str
    rule: str
    alpha: float
    power: float
    n_tests: int
    correlation: float | None
    tests: tuple[PlannedTest, ...]

    def text(self) -> str:
        """The plan as a table with a header line."""
        corr = (
            "the pair's own paired standard errors"
            if self.correlation is None
            else f"run-to-run correlation {self.correlation:g}"
        )
        head = (
            f"metacog gate plan: {self.source}; rule {self.rule}, alpha {self.alpha:g} over "
            f"{self.n_tests} gated test(s) (first Holm step at {self.alpha / self.n_tests:.2g}), "
            f"{100 * self.power:g}% power, {corr}"
        )
        rows = [["test", "items", "margin", "se", "detectable", "target", "items needed"]]
        for t in self.tests:
            need = (
                ""
                if t.target is None
                else ("never" if t.items_needed is None else f"{t.items_needed:,}")
            )
            rows.append(
                [
                    f"{t.group}: {t.metric}",
                    f"{t.n_items:,}",
                    f"{t.margin:g}",
                    f"{t.se:.4f}",
                    f"{t.detectable:.3f}",
                    "" if t.target is None else f"{t.target:g}",
                    need,
                ]
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
            for r in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        note = (
            "detectable: the smallest true change in the bad direction that fails the gate "
            f"{100 * self.power:g}% of the time; items needed: per group, for the target"
        )
        if any(t.target is not None and t.items_needed is None for t in self.tests):
            note += (
                " (never: a target at or within the margin, or a metric that did not vary, "
                "never fails)"
            )
        return "\n".join([head, "", *lines, note])


def _z(config: GateConfig, n_tests: int, direction: str) -> tuple[float, float]:
    tail = config.alpha / max(n_tests, 1) / (2 if direction == "two-sided" else 1)
    return float(special.ndtri(1 - tail)), float(special.ndtri(config.power))


def _items_needed(
    rule: str, margin: float, se: float, n: int, target: float, z_a: float, z_p: float
) -> int | None:
    """Items for ``target`` to be caught with the power, the error shrinking as 1/sqrt(n)."""
    if rule == "significant":
        if target <= margin:
            return None
        need = min((target - margin) / z_p, target / (z_a + z_p))
    elif rule == "noninferiority":
        need = (target - margin) / (z_a + z_p)
    else:
        need = (target - margin) / z_p
    if need <= 0 or not (se > 0 and math.isfinite(se)):
        return None
    return max(1, math.ceil(n * (se / need) ** 2))


def _planned(
    bench: str,
    probe: str,
    kind: str | None,
    metric: str,
    n: int,
    se: float,
    config: GateConfig,
    n_tests: int,
    targets: Mapping[str, float],
) -> PlannedTest:
    spec = METRICS[metric]
    margin = config.margin(metric, bench)
    z_a, z_p = _z(config, n_tests, spec.direction)
    target = targets.get(metric)
    need = None
    if target is not None:
        need = _items_needed(config.rule, margin, se, n, target, z_a, z_p)
    return PlannedTest(
        benchmark=bench,
        probe=probe,
        confidence_kind=kind,
        metric=metric,
        direction=spec.direction,
        margin=margin,
        n_items=n,
        se=se,
        detectable=_detectable(config.rule, margin, se, z_a, z_p),
        target=target,
        items_needed=need,
    )


def _side_se(group: PairedGroup, metric: str, config: GateConfig) -> float:
    """Bootstrap standard error of the metric on the baseline side alone."""
    item = group.base_item
    values = [
        metric_values(
            metric,
            w[:, item],
            group.base_confidence,
            group.base_correct,
            group.pop_confidence[item] if group.pop_confidence is not None else None,
            config.n_bins,
            ungraded_wrong=config.ungraded == "wrong",
        )
        for w in bootstrap_weights(group.n_items, config.n_boot, config.seed, group.name)
    ]
    v = np.concatenate(values)
    v = v[np.isfinite(v)]
    return float(np.std(v, ddof=1)) if v.size > 1 else math.nan


def plan_from_records(
    baseline: pd.DataFrame,
    config: GateConfig | None = None,
    *,
    candidate: pd.DataFrame | None = None,
    correlation: float = 0.0,
    targets: Mapping[str, float] | None = None,
    source: str = "baseline",
) -> GatePlan:
    """The plan from a baseline's records (and, when given, a candidate's).

    Args:
        baseline: Validated records of one model.
        config: The gate's settings.
        candidate: Records of a candidate on the same items: the paired standard errors of
            their change are used (``correlation`` is then ignored).
        correlation: Per-item correlation of two runs' contributions, in [0, 1).
        targets: Metric -> change in the bad direction to plan the items for.
        source: How to name the input in the plan.

    Returns:
        The :class:`GatePlan`.

    Raises:
        ValueError: A bad correlation or target, or records that cannot be matched.
    """
    config = config or GateConfig()
    targets = dict(targets or {})
    _check(correlation, targets)
    pair = candidate is not None
    other = candidate if pair else baseline.assign(model="(rerun)")
    match = match_records(baseline, other, config)
    if match.mismatches and not config.allow_shared_items:
        raise ValueError("; ".join(match.mismatches))
    planned = planned_tests(match.groups, config)
    gated = [
        (g, m) for g, ms in planned for m in ms if config.primary is None or m == config.primary
    ]
    n_tests = len(gated)
    tests = []
    for g, ms in planned:
        ses: dict[str, float] = {}
        if pair:
            ses = {d.metric: d.se for d in _draft_group(g, ms, config)}
        for m in ms:
            if (g, m) not in gated:
                continue
            se = ses[m] if pair else _side_se(g, m, config) * math.sqrt(2 * (1 - correlation))
            tests.append(
                _planned(
                    g.benchmark,
                    g.probe,
                    g.confidence_kind,
                    m,
                    g.n_items,
                    se,
                    config,
                    n_tests,
                    targets,
                )
            )
    return GatePlan(
        source=source,
        rule=config.rule,
        alpha=config.alpha,
        power=config.power,
        n_tests=n_tests,
        correlation=None if pair else correlation,
        tests=tuple(tests),
    )


def _check(correlation: float, targets: Mapping[str, float]) -> None:
    if not 0 <= correlation < 1:
        raise ValueError(f"correlation must lie in [0, 1), got {correlation!r}")
    for metric, value in targets.items():
        if metric not in METRICS:
            raise ValueError(f"target names an unknown metric {metric!r}; known: {list(METRICS)}")
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"target {metric}={value!r}: a change > 0 in the bad direction")


def _auroc_se(auc: float, n_pos: float, n_neg: float) -> float:
    """Hanley & McNeil's (1982) standard error of one AUROC."""
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    var = auc * (1 - auc) + (n_pos - 1) * (q1 - auc**2) + (n_neg - 1) * (q2 - auc**2)
    return math.sqrt(var / (n_pos * n_neg))


def plan_from_items(
    n_items: int,
    config: GateConfig | None = None,
    *,
    n_tests: int | None = None,
    correlation: float = 0.0,
    targets: Mapping[str, float] | None = None,
    assumptions: Mapping[str, float] | None = None,
) -> GatePlan:
    """The plan for one group of ``n_items`` items of binary confidence, from textbook errors.

    Args:
        n_items: Items per group.
        config: The gate's settings (metrics, margins, rule, alpha, power).
        n_tests: Gated tests of the whole gate (default: this group's metrics).
        correlation: Per-item correlation of the two runs' contributions, in [0, 1).
        targets: Metric -> change in the bad direction to plan the items for.
        assumptions: Metric values replacing :data:`ITEM_ASSUMPTIONS`.

    Returns:
        The :class:`GatePlan` (benchmark ``any``).

    Raises:
        ValueError: Fewer than 2 items, a bad correlation, target or assumption.
    """
    config = config or GateConfig()
    targets = dict(targets or {})
    _check(correlation, targets)
    if int(n_items) != n_items or n_items < 2:
        raise ValueError(f"n_items must be an integer >= 2, got {n_items!r}")
    values = {**ITEM_ASSUMPTIONS, **dict(assumptions or {})}
    for k, v in values.items():
        if k not in ITEM_ASSUMPTIONS or not 0 < v < 1:
            raise ValueError(f"assumption {k}={v!r}: a known metric and a value in (0, 1)")
    metrics = [m for m in config.metrics if m in ITEM_ASSUMPTIONS]
    if config.primary is not None:
        metrics = [m for m in metrics if m == config.primary]
    n_tests = int(n_tests or len(metrics))
    shrink = math.sqrt(2 * (1 - correlation))
    p = values["accuracy"]
    tests = []
    for m in metrics:
        if m == "auroc":
            se1 = _auroc_se(values["auroc"], p * n_items, (1 - p) * n_items)
        else:
            q = values[m]
            se1 = math.sqrt(q * (1 - q) / n_items)
        probe, kind = ("solve", None) if m == "accuracy" else ("prospective", "verbal_binary")
        tests.append(
            _planned("any", probe, kind, m, int(n_items), se1 * shrink, config, n_tests, targets)
        )
    stated = ", ".join(f"{k} {v:g}" for k, v in values.items() if k in metrics)
    return GatePlan(
        source=f"{int(n_items):,} items of binary confidence at {stated}",
        rule=config.rule,
        alpha=config.alpha,
        power=config.power,
        n_tests=n_tests,
        correlation=correlation,
        tests=tuple(tests),
    )
