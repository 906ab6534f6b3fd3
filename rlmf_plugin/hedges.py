"""Stage two as the paper: a hedge inventory with measured decisiveness, chosen by the stated
(intrinsic) confidence.

The official rewriting (``exp3_rewriting``) bins hedges by their *decisiveness*, measured by a
judge model, into 20 bins of width 0.05, and offers a rewriting model up to ``m`` hedges from
the bin with ``start < c <= end`` for a sentence stated at confidence ``c`` (the confidence RL
trained to be faithful to the model's intrinsic confidence). This module holds:

* :data:`INVENTORY`: this project's own hedge phrases, each in a sentence template, with a
  decisiveness value. The shipped values are this project's *assigned* values, not measured
  (``measured: false`` in :func:`inventory_dict`): measure them for your judge with
  :func:`measure_decisiveness` (``metacog rlmf hedges --judge MODEL``);
* :func:`measure_decisiveness`: asks a judge (an Inspect model or an OpenAI-compatible
  endpoint) to rate how decisive each phrase's sentences are, 0 to 1, over several carrier
  answers, and keeps the mean;
* :func:`bin_of` the 0.05 bin ``(start, end]`` of a value; the map from stated confidence to the
  hedges of its bin is :func:`rlmf_plugin.verbalize.intrinsic_map`, used by the rule and LLM
  rewriters.

The accuracy mapping of :func:`rlmf_plugin.verbalize.calibrate_phrases` (phrases chosen by
``P(correct | confidence)``) stays as an option, named as what it is: it says accuracy, not the
model's intrinsic confidence.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DECISIVENESS_PROMPT",
    "INVENTORY",
    "InventoryHedge",
    "bin_of",
    "inventory_dict",
    "load_inventory",
    "measure_decisiveness",
]


@dataclasses.dataclass(frozen=True)
class InventoryHedge:
    """A hedge phrase, its decisiveness in [0, 1] and a sentence with an ``{answer}`` slot."""

    phrase: str
    decisiveness: float
    template: str


#: This project's hedge inventory (assigned values; see the module doc).
INVENTORY: tuple[InventoryHedge, ...] = (
    InventoryHedge("I have no idea", 0.02, "I have no idea; if pressed, {answer}."),
    InventoryHedge("a wild guess", 0.07, "A wild guess would be {answer}."),
    InventoryHedge("a shot in the dark", 0.12, "As a shot in the dark: {answer}."),
    InventoryHedge("very unlikely", 0.17, "It is very unlikely, but perhaps {answer}."),
    InventoryHedge("doubtful", 0.22, "It is doubtful, but it may be {answer}."),
    InventoryHedge("I doubt it, but", 0.27, "I doubt it, but it could be {answer}."),
    InventoryHedge("possibly", 0.32, "Possibly {answer}, though I am far from sure."),
    InventoryHedge("I am unsure, but", 0.37, "I am unsure, but I think {answer}."),
    InventoryHedge("maybe", 0.42, "Maybe {answer}."),
    InventoryHedge("about even odds", 0.48, "It is about even odds that it is {answer}."),
    InventoryHedge("more likely than not", 0.53, "More likely than not, {answer}."),
    InventoryHedge("I think", 0.58, "I think it is {answer}."),
    InventoryHedge("probably", 0.64, "Probably {answer}."),
    InventoryHedge("likely", 0.69, "It is likely {answer}."),
    InventoryHedge("I am fairly confident", 0.74, "I am fairly confident it is {answer}."),
    InventoryHedge("very likely", 0.79, "It is very likely {answer}."),
    InventoryHedge("I am confident", 0.84, "I am confident it is {answer}."),
    InventoryHedge("almost certainly", 0.89, "It is almost certainly {answer}."),
    InventoryHedge("I am nearly sure", 0.93, "I am nearly sure it is {answer}."),
    InventoryHedge("certainly", 0.98, "It is certainly {answer}."),
)

#: The decisiveness question (the official judge's task, this project's words).
DECISIVENESS_PROMPT = (
    "How decisively does the following answer state its claim? 0 means it expresses no "
    "commitment at all, 1 means it is stated with complete certainty. Judge only the wording, "
    "not whether the claim is true. Reply with a single number between 0 and 1.\n\n"
    "Answer: {sentence}"
)
_NUMBER = re.compile(r"(?<![\d.])(0?\.\d+|1(?:\.0+)?|0)(?![\d.])")
#: Carrier answers a phrase is rated in (decisiveness is measured on whole sentences).
CARRIERS = ("the capital is Lyon", "the answer is 42", "the treaty was signed in 1648")


def bin_of(x: float, width: float = 0.05) -> int:
    """The bin ``(k w, (k+1) w]`` of ``x`` (0 goes to the first)."""
    return max(0, min(math.ceil(round(x / width, 9)) - 1, round(1 / width) - 1))


def read_rating(text: str | None) -> float:
    """The first number in [0, 1] of a judge's reply; NaN when there is none."""
    if not text:
        return math.nan
    m = _NUMBER.search(text[:200])
    return float(m.group(1)) if m else math.nan


def measure_decisiveness(
    inventory: Sequence[InventoryHedge], client: Any, *, carriers: Sequence[str] = CARRIERS
) -> tuple[InventoryHedge, ...]:
    """The inventory with each phrase's decisiveness measured by ``client`` (anything with
    ``ask(prompts) -> replies``, e.g. :class:`~rlmf_plugin.judge.ModelClient`): the mean rating
    of its sentence over the carrier answers. A phrase no reply rated keeps its value.
    """
    prompts = [
        DECISIVENESS_PROMPT.format(sentence=h.template.format(answer=c))
        for h in inventory
        for c in carriers
    ]
    ratings = [read_rating(r) for r in client.ask(prompts)]
    out = []
    for i, h in enumerate(inventory):
        vals = [v for v in ratings[i * len(carriers) : (i + 1) * len(carriers)] if v == v]
        value = sum(vals) / len(vals) if vals else h.decisiveness
        out.append(dataclasses.replace(h, decisiveness=round(value, 4)))
    return tuple(out)


def inventory_dict(inventory: Sequence[InventoryHedge], *, measured_by: str | None) -> dict:
    """``inventory.json``: the phrases, their decisiveness and what measured it."""
    return {
        "measured": measured_by is not None,
        "measured_by": measured_by,
        "hedges": [dataclasses.asdict(h) for h in inventory],
    }


def load_inventory(data: Mapping[str, Any]) -> tuple[InventoryHedge, ...]:
    """An inventory from :func:`inventory_dict`'s form.

    Raises:
        ValueError: A hedge without a phrase, a template with ``{answer}``, or a
            decisiveness in [0, 1].
    """
    out = []
    for i, h in enumerate(data.get("hedges") or []):
        try:
            hedge = InventoryHedge(str(h["phrase"]), float(h["decisiveness"]), str(h["template"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"inventory hedge {i}: {exc!r}") from None
        if not 0.0 <= hedge.decisiveness <= 1.0 or "{answer}" not in hedge.template:
            raise ValueError(f"inventory hedge {i}: decisiveness in [0, 1] and an {{answer}} slot")
        out.append(hedge)
    if not out:
        raise ValueError("the inventory holds no hedges")
    return tuple(out)
