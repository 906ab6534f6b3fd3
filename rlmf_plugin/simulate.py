"""Sampled runs of a simulated model whose calibration is known, for ``rlmf eval``.

For each item the model has an answer distribution: the right answer with probability ``p``
(its ``p_correct`` in the population of :mod:`metacog_metrics.simulate`: what it knows of the
item), and ``n_wrong`` wrong answers sharing ``1 - p`` with Dirichlet(1) weights. Each of ``k``
attempts draws an answer from it; the draws depend on the item and attempt only, so two models
simulated with the same ``seed`` give the *same* answers and differ only in what they state.
What the model states (``stated``), plus Gaussian noise ``noise_sd``, rounded to whole percent:

* ``faithful``: the probability of the answer it gave (what agreement among its samples
  estimates: faithful calibration);
* ``calibrated``: ``p``, its probability of being right, the same for every attempt (factual
  calibration, not faithful to a wrong answer's low agreement);
* ``overconfident``: ``p ** gamma`` (``gamma`` < 1 pushes every confidence up);
* ``constant``: ``level`` whatever the item.

The result is a record table with an ``epoch`` column (one row per attempt, ``numeric`` probe).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["STATED", "simulate_sampled_records"]

#: The stating rules (see the module doc).
STATED = ("faithful", "calibrated", "overconfident", "constant")


def simulate_sampled_records(
    stated: str,
    *,
    k: int = 5,
    n_items: int = 300,
    benchmark: str,
    population_model: str = "m01",
    n_wrong: int = 3,
    noise_sd: float = 0.05,
    gamma: float = 0.35,
    level: float = 0.8,
    preset: str = "paper",
    seed: int = 0,
    model_name: str | None = None,
) -> pd.DataFrame:
    """Draw ``k`` attempts per item (see the module doc).

    Args:
        stated: One of :data:`STATED`.
        k: Attempts per item.
        n_items: Items (``<benchmark>-00001 ..``).
        benchmark: Benchmark name (its record's simulation profile; an unregistered name
            follows the population's default profile).
        population_model: The population member whose ``p_correct`` is used.
        n_wrong: Distinct wrong answers per item.
        noise_sd: Noise of the stated confidence.
        gamma: Exponent of ``overconfident``.
        level: Confidence of ``constant``.
        preset: Population preset.
        seed: Seed of the population, the answers and the noise.
        model_name: The ``model`` column (default ``sim-<stated>``).

    Raises:
        ValueError: Unknown ``stated``, or ``k``/``n_items``/``n_wrong`` < 1.
    """
    from metacog_metrics import Population
    from metacog_tasks.sim.presets import preset_params

    if stated not in STATED:
        raise ValueError(f"stated must be one of {STATED}, got {stated!r}")
    if min(k, n_items, n_wrong) < 1:
        raise ValueError("k, n_items and n_wrong must be >= 1")
    items = [f"{benchmark}-{i:05d}" for i in range(1, n_items + 1)]
    pop = Population(preset_params(preset), max(int(population_model.lstrip("m")), 1), seed)
    p = pop.latent(benchmark, items, models=[population_model]).p_correct[:, 0]
    answers_rng = np.random.default_rng([seed, 1])
    noise_rng = np.random.default_rng([seed, 2, STATED.index(stated)])
    rows = []
    for i, item in enumerate(items):
        probs = np.concatenate([[p[i]], (1 - p[i]) * answers_rng.dirichlet(np.ones(n_wrong))])
        draws = answers_rng.choice(n_wrong + 1, size=k, p=probs / probs.sum())
        for e, a in enumerate(draws, start=1):
            if stated == "faithful":
                c = probs[a]
            elif stated == "calibrated":
                c = p[i]
            elif stated == "overconfident":
                c = p[i] ** gamma
            else:
                c = level
            c = float(np.clip(round(c + noise_sd * noise_rng.standard_normal(), 2), 0.0, 1.0))
            rows.append({
                "model": model_name or f"sim-{stated}", "benchmark": benchmark,
                "item_id": item, "probe": "numeric", "confidence": c,
                "confidence_kind": "verbal_numeric", "correct": float(a == 0),
                "answer": "the right answer" if a == 0 else f"wrong answer {a}", "epoch": e,
            })  # fmt: skip
    return pd.DataFrame(rows)
