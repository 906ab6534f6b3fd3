"""The demo's synthetic task: addition with noisy supervision, so that consistency varies by item.

An item is ``a+b=`` (``a`` in 0..19, ``b`` in 1..9); the right answer is ``a + b``. The
supervision the SFT stage sees is noisy by ``b`` (a rule the model can learn): for ``b`` in 1..3
it is always right; for 4..6 right 70% of the time and ``a + b + 1`` otherwise; for 7..9 right
40%, ``a + b + 1`` 35%, ``a + b - 1`` 25%. A model that learns the supervision answers
consistently on the first items and splits on the others, so its intrinsic confidence (the
agreement among its own samples) varies by item and by the answer it gives.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

from rlmf_plugin._grading import Verdict

__all__ = ["BENCHMARK", "Item", "TaskGrader", "items", "label_distribution", "split_items"]

#: The benchmark name the demo's rows carry.
BENCHMARK = "demo_arith"
_INT = re.compile(r"\s*(-?\d{1,4})\s*")


@dataclasses.dataclass(frozen=True)
class Item:
    """One question: ``a+b=``."""

    a: int
    b: int

    @property
    def item_id(self) -> str:
        return f"{self.a}+{self.b}"

    @property
    def prompt(self) -> str:
        return f"{self.a}+{self.b}="

    @property
    def answer(self) -> int:
        return self.a + self.b


def items() -> list[Item]:
    """Every item (180)."""
    return [Item(a, b) for a in range(20) for b in range(1, 10)]


def label_distribution(item: Item) -> dict[int, float]:
    """The supervision's answers and their probabilities (see the module doc)."""
    s = item.answer
    if item.b <= 3:
        return {s: 1.0}
    if item.b <= 6:
        return {s: 0.7, s + 1: 0.3}
    return {s: 0.4, s + 1: 0.35, s - 1: 0.25}


def split_items(seed: int = 0, n_val: int = 30, n_test: int = 60) -> dict[str, list[Item]]:
    """Items split into ``train`` (RL), ``val`` (for choosing settings) and ``test`` (held
    out: only the final evaluation reads it), stratified by ``b``."""
    rng = np.random.default_rng([seed, 7])
    out: dict[str, list[Item]] = {"train": [], "val": [], "test": []}
    by_b: dict[int, list[Item]] = {}
    for it in items():
        by_b.setdefault(it.b, []).append(it)
    per_b_val, per_b_test = n_val // 9, n_test // 9
    for b in sorted(by_b):
        group = [by_b[b][i] for i in rng.permutation(len(by_b[b]))]
        out["val"] += group[:per_b_val]
        out["test"] += group[per_b_val : per_b_val + per_b_test]
        out["train"] += group[per_b_val + per_b_test :]
    return out


class TaskGrader:
    """The grader the rewards use (the :class:`~rlmf_plugin._grading.ItemGrader` interface):
    the answer must be an integer; it is right when it equals ``a + b``."""

    def __init__(self) -> None:
        self._items = {it.item_id: it for it in items()}

    def extract(self, benchmark: Any, item_id: Any, source: Any, answer: str):
        if benchmark != BENCHMARK or str(item_id) not in self._items:
            return Verdict(math.nan, "bad_label"), None
        m = _INT.fullmatch(str(answer)[:64])
        if m is None:
            return Verdict(0.0, "ok"), None
        value = int(m.group(1))
        return Verdict(float(value == self._items[str(item_id)].answer), "ok"), str(value)

    def verdict(self, benchmark: Any, item_id: Any, source: Any, answer: str) -> Verdict:
        return self.extract(benchmark, item_id, source, answer)[0]
