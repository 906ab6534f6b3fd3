"""The settings of one analysis run (:class:`AnalysisOptions`) and the rules that are not settings.

Every field carries its help and its check (:mod:`metacog_metrics._options`): the docstring, the
validation and the flags of ``metacog analyze`` come from these declarations alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from metacog_metrics._options import check_options, count, documented, option
from metacog_metrics.pairwise import DEFAULT_DELTAS, ENGINES
from metacog_metrics.polychoric import MAX_LEVELS, N_LEVELS

__all__ = [
    "CONTINUOUS_KINDS",
    "MIN_ITEMS",
    "MIN_MODELS",
    "POOLED",
    "SOURCE_COLUMN",
    "AnalysisOptions",
]

#: Confidence kinds analysed as real values (binarised only for the tetrachoric/factor sections).
CONTINUOUS_KINDS: tuple[str, ...] = ("verbal_numeric", "sampled", "logprob")
#: A group needs this many models with usable items ...
MIN_MODELS = 3
#: ... and this many complete-case items for the cross-model analyses.
MIN_ITEMS = 10
#: Benchmark name of the pooled groups (``analyze_records(..., pool=True)``).
POOLED = "pooled"
#: Column of a pooled group's records that keeps each item's own benchmark.
SOURCE_COLUMN = "_source_benchmark"


def _integer(name: str, value: Any) -> int:
    return int(value)


def _real(name: str, value: Any) -> float:
    return float(value)


def _flag(name: str, value: Any) -> bool:
    return bool(value)


def _alternative(name: str, value: Any) -> str:
    if value not in ("two-sided", "greater", "less"):
        raise ValueError(f"{name} must be 'two-sided', 'greater' or 'less', got {value!r}")
    return value


def _fdr_alpha(name: str, value: Any) -> float:
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return float(value)


def _bounds(name: str, value: Any) -> tuple[float, float]:
    low, high = (float(v) for v in value)
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"{name} must be 0 <= low <= high <= 1, got {(low, high)}")
    return (low, high)


def _reals(name: str, value: Any) -> tuple[float, ...]:
    return tuple(float(d) for d in value)


def _workers(name: str, value: Any) -> int | None:
    if value is not None and int(value) < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return value


def _scheduler(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a Dask scheduler's address (tcp://host:port), got "
                         f"{value!r}")  # fmt: skip
    return value.strip()


def _coverage(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return float(value) or None  # 0 keeps every model, as None


def _engine(name: str, value: Any) -> str:
    if value not in ENGINES:
        raise ValueError(f"{name} must be one of {ENGINES}, got {value!r}")
    return value


def _gap(name: str, value: Any) -> float:
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def _probe(name: str, value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        raise ValueError(
            f"{name} must name a probe (e.g. prospective, retrospective), got {value!r}"
        )
    return text


def _on_off(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value not in ("on", "off"):
        raise ValueError(f"{name} must be 'on' or 'off', got {value!r}")
    return value


def _levels(name: str, value: Any) -> int:
    if isinstance(value, bool) or int(value) != value or value < 0 or value == 1:
        raise ValueError(f"{name} must be 0 or an integer from 2 to {MAX_LEVELS}, got {value!r}")
    if value > MAX_LEVELS:
        raise ValueError(
            f"{name} must be 0 or an integer from 2 to {MAX_LEVELS}, got {value!r}: a "
            f"polychoric takes at most {MAX_LEVELS} levels (psych's max.cat)"
        )
    return int(value)


@documented
@dataclasses.dataclass(frozen=True)
class AnalysisOptions:
    """The settings of one analysis run, checked when built (a bad value fails before any work)."""

    permutations: int = option(
        10_000,
        check=count,
        help="Per-pair permutation draws of each null (base-rate-matched and "
        "calibration-preserving), for the per-pair p-values and their BH-FDR share (the "
        "inline-solving section draws at most 1,000); 0 skips the per-pair tests.",
    )
    sequential: str = option(
        "on",
        check=_on_off,
        help="Sequential per-pair p-values (Besag and Clifford 1991): a pair's draws stop once "
        "20 of them are at least as extreme as its tau-b (p = 20 / draws), or at "
        "--permutations draws (fixed-n p-value), so pairs far from significance cost a few "
        "dozen draws; 'off' draws --permutations for every pair.",
        cli={"choices": ("on", "off")},
    )
    settle: str = option(
        "on",
        check=_on_off,
        help="With --sequential on, settle a pair's test without drawing the rest of its "
        "cap where a concentration bound proves that its remaining draws all miss its tau-b "
        "(except with probability 1e-9 a pair); its p-value is then the fixed-n one at the cap. "
        "Binary confidence, calibration-preserving null (docs/pairwise.md); 'off' draws them.",
        cli={"choices": ("on", "off")},
    )
    joint_permutations: int = option(
        1_000,
        check=count,
        help="Joint draws, each permuting every model at once: the null of the mean tau over "
        "all pairs, of the delta curve and of the pair types, and the draws of the "
        "private-signal test (binary confidence); 0 skips them all.",
    )
    seed: int = option(
        0,
        check=_integer,
        help="Seed of every random step; each group derives its own streams from it and its "
        "key, so adding a group does not change the others.",
    )
    alternative: str = option(
        "two-sided",
        check=_alternative,
        help="Alternative of every permutation p-value.",
        cli={"choices": ("two-sided", "greater", "less")},
    )
    fdr_alpha: float = option(
        0.05, check=_fdr_alpha, help="Benjamini-Hochberg level of the share of significant pairs."
    )
    binarize_at: float = option(
        0.5,
        check=_real,
        help="With numeric_levels (--numeric-levels) 0, numeric confidence >= this counts as "
        "'yes' in the "
        "tetrachoric and factor sections (pairwise and calibration always use the real values).",
    )
    contentious_bounds: tuple[float, float] = option(
        (0.1, 0.9),
        check=_bounds,
        help="Inclusive yes-rate and pass-rate bounds of a contentious item (factor alignment).",
        cli={"metavar": "LOW,HIGH"},
    )
    n_boot: int = option(
        1000,
        check=count,
        help="Bootstrap resamples of the Internal - Pop AUROC interval (the text probes' "
        "intervals take as many, and the inline-solving share at most 200).",
    )
    deltas: tuple[float, ...] = option(
        DEFAULT_DELTAS,
        check=_reals,
        help="Accuracy-gap grid of the delta curve (the mean tau over pairs whose accuracies "
        "differ by at most delta).",
        cli={"metavar": "D1,D2,..."},
    )
    workers: int | None = option(
        None,
        check=_workers,
        help="Threads for the permutation work and the per-model calibration (None: the CPU "
        "count); results do not depend on it.",
    )
    scheduler: str | None = option(
        None,
        check=_scheduler,
        help="Address of a Dask scheduler (tcp://host:8786) whose workers run the per-pair "
        "tests and the joint draws (needs the 'distributed' extra here and metacog-eval on "
        "every worker); None: threads of this process. Results do not depend on it.",
        cli={"metavar": "ADDRESS"},
    )
    pool: bool = option(
        False,
        check=_flag,
        help="Also analyse the benchmarks pooled: for each (probe, confidence kind) found in two "
        f"or more benchmarks, one more group under the benchmark name '{POOLED}' whose items "
        "are '<benchmark>:<item_id>' (the private-signal test exchanges items only within "
        "their benchmark).",
    )
    min_coverage: float | None = option(
        0.5,
        check=_coverage,
        help="Leave a model out of a group's cross-model analyses (not its own calibration) when "
        "it has usable items for less than this share of the group's items (a partial run). "
        "Correlations and pairs use each pair's shared items; factor scores, the alignment and "
        "the private-signal test use the items every included model answered. 0 or None keeps "
        "every model.",
    )
    engine: str = option(
        "auto",
        check=_engine,
        help="Engine of the per-pair and joint permutation draws ('auto': numba when "
        "installed); the same seed gives other draws on another engine, and summary.json "
        "records the ones that ran.",
        cli={"choices": ENGINES},
    )
    progress: bool = option(
        False,
        check=_flag,
        help="Progress bars on the permutation and text steps (on the command line they are "
        "on, and --quiet turns them off).",
        flags=("--quiet", "-q"),
        cli={"action": "store_false"},
    )
    numeric_levels: int = option(
        N_LEVELS,
        check=_levels,
        help="Numeric confidence (verbal_numeric, sampled, logprob) enters the correlation and "
        "factor sections as at most this many ordered levels per model (its distinct values, "
        f"or its own quantile bins; 2 to {MAX_LEVELS}, psych's limit) with polychoric "
        "correlations, so every model whose confidence varies stays in; 0 binarises it at "
        "binarize_at (--binarize-at; tetrachoric) instead.",
    )

    small_gap: float = option(
        0.02,
        check=_gap,
        help="Accuracy gap of the small-gap control finding: the mean tau of the pairs whose "
        "accuracies differ by at most this, against the base-rate-matched null (the paper: "
        "tau -> 0 as the gap shrinks); added to the deltas grid when it is not on it.",
    )
    probe: str | None = option(
        None,
        check=_probe,
        help="The probe of the records that do not name one (no probe column, or empty "
        "cells): prospective, counterfactual, retrospective, ... Without it they are labelled "
        "'unspecified' and the findings say so; records that name their probe keep it.",
    )

    def __post_init__(self) -> None:
        check_options(self)

    @classmethod
    def build(cls, options: AnalysisOptions | None = None, **overrides: Any) -> AnalysisOptions:
        """``options`` (default: the defaults) with ``overrides``; an unknown name is an error.

        Example:
            >>> AnalysisOptions.build(AnalysisOptions(seed=3), permutations=99).permutations
            99
        """
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise TypeError(f"unknown analysis option(s) {unknown}; known: {sorted(fields)}")
        if options is not None and not overrides:
            return options
        return dataclasses.replace(options or cls(), **overrides)
