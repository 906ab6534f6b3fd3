"""Helpers shared by the gate's output formats (numbers, cases, counts)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from metacog_metrics.gate.decision import GateVerdict, MetricTest
from metacog_metrics.gate.metrics import METRICS

ORDER = {"fail": 0, "inconclusive": 1, "pass": 2, "info": 3}
STATUS_MARK = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "error": "ERROR"}


def fmt(x: float | None, signed: bool = False) -> str:
    """A number to three decimals (signed on request); ``n/a`` when missing or infinite."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def interval(t: MetricTest) -> str:
    """``[lo, hi]`` of a test's change, or ``n/a``."""
    if not (math.isfinite(t.ci_low) and math.isfinite(t.ci_high)):
        return "n/a"
    return f"[{fmt(t.ci_low, True)}, {fmt(t.ci_high, True)}]"


def counts(verdict: GateVerdict) -> dict[str, int]:
    """Gated tests per verdict."""
    gated = [t for t in verdict.tests if t.gated]
    return {v: sum(t.verdict == v for t in gated) for v in ("fail", "inconclusive", "pass")}


@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark and metric over its probes and confidence kinds (a JUnit test case)."""

    benchmark: str
    metric: str
    tests: tuple[MetricTest, ...]

    @property
    def verdict(self) -> str:
        gated = [t.verdict for t in self.tests if t.gated]
        return min(gated, key=ORDER.__getitem__) if gated else "info"


def cases(tests: Iterable[MetricTest]) -> list[Case]:
    """Tests grouped by benchmark and metric; benchmarks sorted, metrics in their order."""
    by_key: dict[tuple[str, str], list[MetricTest]] = {}
    for t in tests:
        by_key.setdefault((t.benchmark, t.metric), []).append(t)
    order = list(METRICS)
    keys = sorted(by_key, key=lambda k: (k[0], order.index(k[1]) if k[1] in order else 99, k[1]))
    return [Case(b, m, tuple(by_key[(b, m)])) for b, m in keys]
