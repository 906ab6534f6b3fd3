"""The lm-eval accuracy rule: an item the grader could not grade counts wrong in ``acc``, the
graded-only figure (``acc_graded``) and the count (``ungraded``) stand beside it.

The run goes through lm-eval's own ``simple_evaluate`` with the scripted model of
tests/test_lmeval_task.py; the grader is made to fail on known items, and every figure is
recomputed here from the script's truth.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from metacog_tasks.benchmarks.base import Grade
from metacog_tasks.lmeval import metrics
from metacog_tasks.lmeval.task import MetacogTask
from tests.test_lmeval_task import ScriptedLM, _evaluate, _script


def test_the_aggregations_by_hand() -> None:
    assert metrics.accuracy([1.0, 0.0, 0.0, 1.0]) == 0.5
    assert metrics.rate([1.0, math.nan, 0.0, None]) == 0.5
    assert math.isnan(metrics.rate([math.nan]))
    assert metrics.count_ungraded([1.0, 0.0, None, 1.0]) == 2
    assert metrics.count_ungraded([]) == 0


def test_ungraded_items_count_wrong_in_acc(monkeypatch: pytest.MonkeyPatch) -> None:
    _bench, replies, p_yes, truth = _script("mmlu_pro", 9)
    lost = {t["item"].item_id for k, t in enumerate(truth) if k % 3 == 0}  # 3 of 9
    real = MetacogTask._grade

    def grade(self, item, texts):
        if item.item_id in lost:  # the grader's side failed on this item
            return Grade(math.nan, status="grader_error", details={"error": "test"})
        return real(self, item, texts)

    monkeypatch.setattr(MetacogTask, "_grade", grade)
    lm = ScriptedLM(replies, p_yes)
    res = _evaluate(lm, "metacog_mmlu_pro", {"metacog_data": "bundled"}, limit=9)
    r = res["results"]["metacog_mmlu_pro"]
    y = np.array([t["correct"] for t in truth])
    kept = np.array([t["item"].item_id not in lost for t in truth])
    assert r["acc,none"] == pytest.approx(np.where(kept, y, 0.0).mean())
    assert r["acc_graded,none"] == pytest.approx(y[kept].mean())
    assert r["ungraded,none"] == 3
    assert r["acc,none"] < r["acc_graded,none"]  # the lost items cannot raise the headline
    hib = res["higher_is_better"]["metacog_mmlu_pro"]
    assert (hib["acc"], hib["acc_graded"], hib["ungraded"]) == (True, True, False)
