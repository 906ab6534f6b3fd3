"""Runs for checking the gate, made apart from the project's simulator.

Two sources, neither of them :mod:`metacog_metrics.simulate` (whose probit item model, shared
misreading and reading noise the gate must not be tuned to):

- :func:`make_bank` and :func:`draw_run`: an item-response generator of its own. Correctness
  is a three-parameter logistic (3PL) law, ``c + (1 - c) / (1 + exp(-a (theta - b)))``, with
  skewed difficulties (a shifted gamma), log-normal discriminations and a guessing floor on
  the multiple-choice benchmarks (0.25) but not on the open ones; confidence is a 0-100 number
  rounded to multiples of 5 (as models write it), read from a noisy, partly wrong view of the
  item's difficulty, and a binary probe that says yes above a threshold; 2% of probe replies are
  unparseable and 0.5% of solves ungraded (NaN). Two runs of one model redraw every per-record
  draw (the solve, the reading noise, the parse failures), so a rerun is as noisy as it can be
  for one model. A :class:`ModelSpec` with less ``signal``, less ``ability`` or more
  ``overconfidence`` is a degraded checkpoint.
- :func:`plant_auroc_drop`: a real run with its confidence shuffled among a share of its items,
  the share found by bisection so that its AUROC falls by a chosen amount.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from metacog_metrics import validate_records

#: Benchmarks of the generator: (name, guessing floor).
BENCHMARKS: tuple[tuple[str, float], ...] = (("mcq", 0.25), ("open", 0.0), ("mixed", 0.1))


@dataclasses.dataclass(frozen=True)
class ItemBank:
    """Fixed item parameters, one array per benchmark."""

    ids: dict[str, np.ndarray]
    difficulty: dict[str, np.ndarray]
    discrimination: dict[str, np.ndarray]
    guessing: dict[str, float]
    misread: dict[str, np.ndarray]  # how wrong the model's view of each item's difficulty is


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model of the generator.

    Attributes:
        ability: ``theta``.
        signal: How strongly confidence follows the (misread) item difficulty.
        overconfidence: Added to the confidence's logit (0: calibrated-ish).
        noise: Per-record reading noise (logistic scale).
        threshold: The binary probe says yes when the reading exceeds it.
    """

    ability: float = 0.6
    signal: float = 1.3
    overconfidence: float = 0.0
    noise: float = 0.5
    threshold: float = -0.3


def make_bank(n_items: int, seed: int = 0) -> ItemBank:
    """An item bank of ``n_items`` items per benchmark."""
    rng = np.random.default_rng([seed, 4242])
    out: dict[str, dict] = {"ids": {}, "difficulty": {}, "discrimination": {}, "misread": {}}
    for name, _ in BENCHMARKS:
        out["ids"][name] = np.array([f"{name}-{i:05d}" for i in range(n_items)], dtype=object)
        out["difficulty"][name] = rng.gamma(2.0, 0.8, n_items) - 1.0  # right-skewed
        out["discrimination"][name] = rng.lognormal(0.2, 0.4, n_items)
        out["misread"][name] = rng.normal(0.0, 0.5, n_items)
    return ItemBank(guessing=dict(BENCHMARKS), **out)


def draw_run(
    bank: ItemBank,
    spec: ModelSpec,
    rng: np.random.Generator,
    *,
    model: str = "gen-model",
    benchmarks: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """One run of ``spec`` on the bank: validated records, two probes per benchmark."""
    frames = []
    for name, guess in BENCHMARKS:
        if benchmarks is not None and name not in benchmarks:
            continue
        b, a = bank.difficulty[name], bank.discrimination[name]
        n = b.size
        p = guess + (1 - guess) / (1 + np.exp(-a * (spec.ability - b)))
        correct = (rng.random(n) < p).astype(float)
        correct[rng.random(n) < 0.005] = np.nan  # the grader failed
        view = spec.signal * (spec.ability - b - bank.misread[name])
        reading = view + rng.logistic(0.0, spec.noise, n)
        numeric = 5 * np.round(20 / (1 + np.exp(-(reading + spec.overconfidence + 0.8))))
        binary = (reading + rng.logistic(0.0, 0.3, n) > spec.threshold).astype(float)
        for probe, kind, conf in (
            ("prospective", "verbal_binary", binary),
            ("numeric", "verbal_numeric", numeric / 100),
        ):
            conf = conf.copy()
            conf[rng.random(n) < 0.02] = np.nan  # unparseable replies
            frames.append(
                pd.DataFrame(
                    {
                        "model": model,
                        "benchmark": name,
                        "item_id": bank.ids[name],
                        "probe": probe,
                        "confidence": conf,
                        "confidence_kind": kind,
                        "correct": correct,
                    }
                )
            )
    return validate_records(pd.concat(frames, ignore_index=True), source="generator")


def plant_auroc_drop(records: pd.DataFrame, drop: float, *, seed: int = 0) -> pd.DataFrame:
    """``records`` (one model, one group) with the confidence of more and more items (in a
    random order) replaced by another item's, until the AUROC has fallen by ``drop``.

    The replacement values are one random permutation of the model's own confidence, so the
    items keep their correctness and the confidence values their distribution; what is lost is
    how well confidence ranks right above wrong answers, on the replaced items.

    Raises:
        ValueError: Replacing every item does not drop the AUROC that much.
    """
    rng = np.random.default_rng(seed)
    conf = records["confidence"].to_numpy(dtype=float)
    y = records["correct"].to_numpy(dtype=float)
    ok = ~(np.isnan(conf) | np.isnan(y))
    other = conf[rng.permutation(conf.size)]
    order = rng.permutation(conf.size)
    base = roc_auc_score(y[ok], conf[ok])
    c = conf.copy()
    for i in order:
        c[i] = other[i]
        valid = ~(np.isnan(c) | np.isnan(y))
        if base - roc_auc_score(y[valid], c[valid]) >= drop:
            return records.assign(confidence=c, model=f"{records['model'].iloc[0]} (planted)")
    raise ValueError(f"replacing every item's confidence does not drop the AUROC by {drop}")
