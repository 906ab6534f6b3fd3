"""What the solvers and scorers keep in a sample's store: grades and multi-step records.

The keys and their layout are part of the eval log (``inspect view`` shows the store), so they
stay as they are. This module sits below the solvers and scorers that share it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from inspect_ai.solver import TaskState

from metacog_tasks.benchmarks.base import Grade

__all__ = [
    "STORE_GRADE",
    "STORE_STEPS",
    "STORE_STEP_GRADES",
    "grade_from_store",
    "grade_to_store",
    "stored_steps",
]

#: The sample's grade (step mode), written once and shared by every scorer.
STORE_GRADE = "metacog_grade"
#: Per sub-step record of a problem solved in one conversation (``mode=problem``).
STORE_STEPS = "metacog_steps"
#: Sub-step item id -> grade of such a problem, written once.
STORE_STEP_GRADES = "metacog_step_grades"


def grade_to_store(grade: Grade) -> dict[str, Any]:
    """A grade as store data (``correct`` ``None`` when ungraded: JSON has no NaN)."""
    out = grade.to_dict()
    out["correct"] = None if math.isnan(grade.correct) else grade.correct
    return out


def grade_from_store(data: Mapping[str, Any]) -> Grade:
    """The grade :func:`grade_to_store` wrote."""
    correct = data.get("correct")
    score = data.get("score")
    return Grade(
        correct=math.nan if correct is None else float(correct),
        status=str(data.get("status") or "ok"),
        extracted=data.get("extracted"),
        score=None if score is None else float(score),
        details=dict(data.get("details") or {}),
    )


def stored_steps(state: TaskState) -> dict[str, Any] | None:
    """The per-step record of a multi-step problem's solver, or ``None`` (step mode)."""
    return state.store.get(STORE_STEPS)
