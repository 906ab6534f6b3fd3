"""Shared machinery of the six benchmarks: source dispatch, probe prompts, option checks."""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any, ClassVar

from metacog_tasks.benchmarks._data import DataUnavailableError, pack_dir
from metacog_tasks.benchmarks._prompts import PROBE_TEMPLATES, PromptSet, probe_fields
from metacog_tasks.benchmarks.base import PROBES, Benchmark, Item

__all__ = ["TemplatedBenchmark", "stable_hash"]


def stable_hash(*parts: str, length: int = 16) -> str:
    """A short SHA-256 hex digest of the parts (joined by the unit separator U+001F)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:length]


class TemplatedBenchmark(Benchmark):
    """A benchmark whose prompts come from a :class:`PromptSet` and whose data come from the
    Hub, the bundled pack or local files.

    Subclasses set ``name``, ``task_noun``, ``PROMPTS``/``PROMPT_FIELDS`` and implement
    :meth:`_load_hub` and :meth:`_load_local`.
    """

    #: Noun used by the probes ("question", "math problem", "coding step").
    task_noun: ClassVar[str] = "question"
    #: Default split when ``load(split=None)``.
    default_split: ClassVar[str] = "test"
    #: The benchmark's own templates (solve prompts); the probes are added from PROBE_TEMPLATES.
    PROMPTS: ClassVar[Mapping[str, str]] = {}
    #: Template name -> the fields it may use.
    PROMPT_FIELDS: ClassVar[Mapping[str, frozenset[str]]] = {}

    def __init__(self, *, prompts: Mapping[str, str] | str | PathLike[str] | None = None) -> None:
        templates = {**PROBE_TEMPLATES, **self.PROMPTS}
        fields = {**probe_fields(), **self.PROMPT_FIELDS}
        self.prompts = PromptSet(self.name, templates, fields, prompts)

    # ------------------------------------------------------------------ loading
    def load(
        self,
        source: str | PathLike[str] | None = None,
        *,
        split: str | None = None,
        limit: int | None = None,
    ) -> list[Item]:
        """Load items (see :meth:`Benchmark.load`).

        Raises:
            DataUnavailableError: Offline without a cache, or the local path is missing.
            DataFormatError: A local file or record is malformed.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"{self.name}: limit must be >= 0, got {limit}")
        if source is None:
            items = self._load_hub(split or self.default_split)
        elif isinstance(source, str) and source == "bundled":
            items = self._load_local(pack_dir(self.name), split)
        else:
            path = Path(source)
            if not path.exists():
                raise DataUnavailableError(f"{self.name}: data path not found: {path}")
            items = self._load_local(path, split)
        ids = [it.item_id for it in items]
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise ValueError(f"{self.name}: duplicate item_id {dup!r} in {source or 'the Hub'}")
        return items[:limit] if limit is not None else items

    @abc.abstractmethod
    def _load_hub(self, split: str) -> list[Item]:
        """Items of the canonical Hugging Face dataset."""

    @abc.abstractmethod
    def _load_local(self, path: Path, split: str | None) -> list[Item]:
        """Items of a local file or folder in the dataset's original field names."""

    # ------------------------------------------------------------------ prompts
    def probe_question(self, item: Item) -> str:
        """The text a probe shows: the bare question (no context, options or hints)."""
        return item.question

    def probe_prompt(self, item: Item, probe: str = "prospective") -> str:
        """The user message of a probe (``prospective``, ``counterfactual`` or ``numeric``).

        Raises:
            ValueError: Unknown probe kind.
        """
        if probe not in PROBES:
            raise ValueError(f"{self.name}: unknown probe {probe!r}; known: {list(PROBES)}")
        return self.prompts.render(probe, task=self.task_noun, question=self.probe_question(item))

    def _check_prompt_index(self, item: Item, prompt_index: int) -> None:
        n = len(self.solve_prompts(item))
        if not 0 <= prompt_index < n:
            raise ValueError(
                f"{self.name} item {item.item_id}: prompt_index {prompt_index} out of range "
                f"(the item has {n} solve prompt(s))"
            )

    @staticmethod
    def _record(item: Item) -> dict[str, Any]:
        return dict(item.record)
