"""The Inspect accuracy rule: an item (or SciCode step) the grader could not grade counts
wrong in ``accuracy`` and ``stderr``; ``accuracy_graded`` leaves it out, ``ungraded`` counts it.

The metrics are called on hand-built ``SampleScore`` lists, as Inspect calls them; each figure
is recomputed here with numpy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from inspect_ai.scorer import SampleScore, Score

from metacog_tasks.inspect_tasks.metrics import (
    accuracy,
    accuracy_graded,
    default_metrics,
    stderr,
    ungraded,
)

NAN = math.nan


def _scores(values: list[dict]) -> list[SampleScore]:
    return [SampleScore(score=Score(value=v), sample_id=i) for i, v in enumerate(values)]


def test_ungraded_items_count_wrong() -> None:
    correct = [1.0, NAN, 0.0, 1.0, NAN, 1.0]
    scores = _scores([{"confidence": 0.5, "correct": c} for c in correct])
    counted = np.nan_to_num(np.array(correct), nan=0.0)
    graded = np.array([c for c in correct if not math.isnan(c)])
    assert accuracy()(scores) == pytest.approx(counted.mean())
    assert stderr()(scores) == pytest.approx(counted.std(ddof=1) / math.sqrt(counted.size))
    assert accuracy_graded()(scores) == pytest.approx(graded.mean())
    assert ungraded()(scores) == 2.0
    assert accuracy()(scores) < accuracy_graded()(scores)


def test_one_right_step_and_seven_ungraded_is_not_perfect() -> None:
    """The review's case, as a SciCode problem scored step by step (mode=problem)."""
    value = {"n_steps": 8.0, "correct_1": 1.0}
    value.update({f"correct_{i}": NAN for i in range(2, 9)})
    scores = _scores([value])
    assert accuracy()(scores) == pytest.approx(1 / 8)
    assert accuracy_graded()(scores) == 1.0
    assert ungraded()(scores) == 7.0


def test_nothing_to_score() -> None:
    assert math.isnan(accuracy()([])) and math.isnan(accuracy_graded()([]))
    assert ungraded()([]) == 0.0
    only_lost = _scores([{"correct": NAN}])
    assert accuracy()(only_lost) == 0.0 and math.isnan(accuracy_graded()(only_lost))


def test_the_default_metrics_show_both_figures_and_the_count() -> None:
    names = [m.__registry_info__.name.split("/")[-1] for m in default_metrics()]
    assert names[:4] == ["accuracy", "stderr", "accuracy_graded", "ungraded"]
