"""The gate's settings: one frozen :class:`GateConfig`, read from ``gate.yaml``.

Every setting's default and help live on its dataclass field (``metadata["help"]``); the
command line (``metacog gate --rule ...``) and docs/gate.md's table are built from, or checked
against, these fields, so a flag, its default and its help cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any, Literal

from metacog_metrics._result import Result, to_jsonable
from metacog_metrics.gate.metrics import DEFAULT_MARGINS, METRICS

__all__ = [
    "GATE_RULES",
    "PROVENANCE_COLUMNS",
    "GateConfig",
    "GateConfigError",
    "GateInputError",
    "gate_settings_help",
]

#: Per-item provenance the match compares where both sides record it.
PROVENANCE_COLUMNS: tuple[str, ...] = ("doc_hash", "prompt_hash", "task_version")
#: Decision rules: what makes a test fail (docs/gate.md, "How it decides").
GATE_RULES: Mapping[str, str] = {
    "significant": "the estimated change is worse than the margin and the worsening is "
    "significant (one-sided, Holm over the gated tests)",
    "noninferiority": "the whole Holm-level interval of the change lies beyond the margin; "
    "an interval that straddles it is inconclusive",
    "threshold": "the estimated change is worse than the margin (no test of significance)",
}
_DEFAULT_KEY = "default"


class GateConfigError(ValueError):
    """The gate configuration is invalid (the message names the key)."""


class GateInputError(ValueError):
    """Baseline or candidate records cannot be compared (the gate refuses: exit 2)."""


def _field(default: Any, help: str, *, flag: bool = False, **kwargs: Any) -> Any:
    """A config field with its help text; ``flag`` also makes it a command-line option."""
    meta = {"help": help, "flag": flag}
    if isinstance(default, dict | list):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta, **kwargs)


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise GateConfigError(f"gate config: {key} must be a number >= 0, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value >= 0):
        raise GateConfigError(f"gate config: {key} must be a number >= 0, got {value!r}")
    return value


def _margins(given: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """``{metric: margin | {default: m, benchmark: m}}`` merged over the default margins."""
    out = {name: {_DEFAULT_KEY: margin} for name, margin in DEFAULT_MARGINS.items()}
    for name, value in given.items():
        if name not in METRICS:
            close = difflib.get_close_matches(str(name), list(METRICS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise GateConfigError(
                f"gate config: margins.{name} names an unknown metric{hint}; known: {list(METRICS)}"
            )
        if isinstance(value, Mapping):
            per = {_DEFAULT_KEY: out[name][_DEFAULT_KEY]}
            for bench, m in value.items():
                per[str(bench)] = _number(m, f"margins.{name}.{bench}")
            out[name] = per
        else:
            out[name] = {_DEFAULT_KEY: _number(value, f"margins.{name}")}
    return out


@dataclasses.dataclass(frozen=True)
class GateConfig(Result):
    """Settings of the gate (``gate.yaml``); each field's help is in its metadata.

    Attributes:
        rule: How a test fails (:data:`GATE_RULES`).
        alpha: Family-wise error rate of the failures (Holm over the gated tests).
        margins: Per metric, the change the gate allows: a number, or per benchmark with a
            ``default`` (``{"auroc": {"default": 0.03, "mmlu_pro": 0.05}}``); merged over
            :data:`~metacog_metrics.gate.metrics.DEFAULT_MARGINS`.
        metrics: Metrics to test.
        primary: Only this metric gates; the others are reported as ``info``.
        inconclusive: ``pass`` (exit 0 with a warning) or ``fail`` (exit 3) when a gated test
            cannot decide.
        pool: Pool the benchmarks into one group per probe and kind (small packs).
        max_missing_items: Items of a group one side may lack (a count >= 1, or a share < 1 of
            the group's items) before the gate refuses; the rest are compared.
        ungraded: ``wrong``: an ungraded item (correctness NaN) counts as wrong in accuracy;
            ``exclude``: accuracy over graded items only.
        allow_shared_items: Compare on the shared, identically asked items whatever differs.
        check: Provenance columns to match (a subset of :data:`PROVENANCE_COLUMNS`).
        benchmarks: Benchmarks both sides must hold (missing: exit 2); default any.
        n_boot: Bootstrap resamples per group.
        seed: Seed of the resamples.
        power: Power at which the smallest detectable change is reported.
        max_undefined: Largest share of resamples where a metric may be undefined.
        n_bins: Equal-width bins of the ECE.
        min_items: Fewest matched items of a group for its tests to decide.
        max_annotations: Most GitHub annotations written per kind.
    """

    rule: Literal["significant", "noninferiority", "threshold"] = _field(
        "significant",
        "significant: fail when the change is worse than the margin and the worsening is "
        "significant (Holm); noninferiority: fail only when the whole interval lies beyond "
        "the margin; threshold: fail when the change is worse than the margin",
        flag=True,
    )
    alpha: float = _field(
        0.01, "family-wise false-alarm rate of the failures (Holm over the gated tests)", flag=True
    )
    margins: Mapping[str, Any] = _field(
        {}, "per metric, the change allowed (a number, or per benchmark with a default)"
    )
    metrics: tuple[str, ...] = _field(tuple(METRICS), "the metrics to test")
    primary: str | None = _field(None, "only this metric gates; the others are info", flag=True)
    inconclusive: Literal["pass", "fail"] = _field(
        "pass", "a gated test that cannot decide: pass (exit 0, warned) or fail (exit 3)", flag=True
    )
    pool: bool = _field(
        False, "pool the benchmarks into one group per probe and kind (small packs)", flag=True
    )
    max_missing_items: float = _field(
        0.01,
        "items of a group one side may lack before the gate refuses: a count >= 1 or a share "
        "< 1 of the group's items",
        flag=True,
    )
    ungraded: Literal["wrong", "exclude"] = _field(
        "wrong", "an ungraded item (correctness NaN) in accuracy: wrong, or exclude", flag=True
    )
    allow_shared_items: bool = _field(
        False,
        "compare on the shared, identically asked items when the items or their provenance differ",
        flag=True,
    )
    check: tuple[str, ...] = _field(PROVENANCE_COLUMNS, "provenance columns to match")
    benchmarks: tuple[str, ...] | None = _field(
        None, "benchmarks both runs must hold (a missing one is exit 2)"
    )
    n_boot: int = _field(2000, "bootstrap resamples per group", flag=True)
    seed: int = _field(0, "seed of the resamples", flag=True)
    power: float = _field(0.8, "power of the reported smallest detectable change")
    max_undefined: float = _field(
        0.05, "largest share of resamples where a metric may be undefined (at most 0.5)"
    )
    n_bins: int = _field(10, "equal-width ECE bins")
    min_items: int = _field(30, "fewest matched items of a group for its tests to decide")
    max_annotations: int = _field(10, "GitHub annotations per kind (GitHub shows 10 per step)")

    def __post_init__(self) -> None:
        def bad(key: str, why: str) -> GateConfigError:
            return GateConfigError(f"gate config: {key} {why}")

        if self.rule not in GATE_RULES:
            raise bad("rule", f"must be one of {list(GATE_RULES)}, got {self.rule!r}")
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
        if self.ungraded not in ("wrong", "exclude"):
            raise bad("ungraded", f"must be 'wrong' or 'exclude', got {self.ungraded!r}")
        missing = self.max_missing_items
        if (
            isinstance(missing, bool)
            or not isinstance(missing, int | float)
            or not (math.isfinite(missing) and missing >= 0)
            or (missing >= 1 and int(missing) != missing)
        ):
            raise bad(
                "max_missing_items",
                f"must be a count (an integer >= 1), a share in [0, 1) or 0, got {missing!r}",
            )
        if not isinstance(self.margins, Mapping):
            raise bad("margins", "must be a mapping metric -> margin")
        for name in (*self.metrics, *([self.primary] if self.primary else [])):
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
        unknown = sorted(set(self.check) - set(PROVENANCE_COLUMNS))
        if unknown:
            raise bad("check", f"names unknown column(s) {unknown}; use {list(PROVENANCE_COLUMNS)}")
        object.__setattr__(self, "margins", _margins(self.margins))
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "check", tuple(self.check))
        object.__setattr__(self, "pool", bool(self.pool))
        object.__setattr__(self, "allow_shared_items", bool(self.allow_shared_items))
        if self.benchmarks is not None:
            object.__setattr__(self, "benchmarks", tuple(str(b) for b in self.benchmarks))

    def margin(self, metric: str, benchmark: str) -> float:
        """The margin of ``metric`` on ``benchmark`` (its own, else the metric's default)."""
        per = self.margins[metric]
        return per.get(benchmark, per[_DEFAULT_KEY])

    def missing_allowed(self, n_items: int) -> int:
        """How many of a group's ``n_items`` items one side may lack."""
        if self.max_missing_items >= 1:
            return int(self.max_missing_items)
        return math.floor(self.max_missing_items * n_items + 1e-9)

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


def gate_settings_help() -> dict[str, tuple[Any, str, bool]]:
    """``{key: (default, help, is_flag)}`` of every setting, in the dataclass's order."""
    out = {}
    for f in dataclasses.fields(GateConfig):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        out[f.name] = (default, f.metadata["help"], bool(f.metadata["flag"]))
    return out
