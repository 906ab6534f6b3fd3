"""Finding the item and the request behind a prompt, whatever the harness wrapped around it.

The index holds every solve and probe prompt the benchmark layer builds, whitespace-normalised.
A prompt is looked up exactly first (the whole text, then each user message from the last); then
as a substring of the whole conversation, which survives chat templates, system prompts,
few-shot examples and left truncation: every indexed prompt is anchored on its first and last
``_ANCHOR`` characters, the query is scanned once for anchors, and candidates are verified. When
several prompts match (few-shot examples before the real question), the one ending last wins.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from metacog_tasks.benchmarks.base import Benchmark, Item

__all__ = ["Entry", "PromptIndex", "conversation_text", "normalise"]

#: Characters of a prompt's start and end used as lookup anchors.
_ANCHOR = 96
#: A match must cover at least this many characters (or the whole indexed prompt).
_MIN_MATCH = 48


def normalise(text: str) -> str:
    """Collapse whitespace runs to one space and strip."""
    return " ".join(str(text).split())


@dataclasses.dataclass(frozen=True)
class Entry:
    """One indexed prompt.

    Attributes:
        benchmark: Benchmark name.
        item: The item.
        kind: ``solve`` or ``probe``.
        probe: Probe name for probes (``prospective``, ...), else ``None``.
        prompt_index: Index among the item's solve prompts (0 for probes).
        text: The normalised prompt text.
    """

    benchmark: str
    item: Item
    kind: str
    probe: str | None
    prompt_index: int
    text: str


@dataclasses.dataclass(frozen=True)
class Match:
    """A lookup result: the entry, how it was found, and whether other items share its text."""

    entry: Entry
    how: str
    ambiguous: bool


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping):
                parts.append(str(part.get("text", "")))
            else:
                parts.append(str(getattr(part, "text", "")))
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(getattr(content, "text", content))


def _message(message: Any) -> tuple[str, str]:
    if isinstance(message, Mapping):
        return str(message.get("role", "user")), _content_text(message.get("content", ""))
    role = str(getattr(message, "role", "user"))
    text = getattr(message, "text", None)
    if not isinstance(text, str):
        text = _content_text(getattr(message, "content", ""))
    return role, text


def conversation_text(prompt: str | Sequence[Any]) -> tuple[list[str], str]:
    """Split a prompt into its user messages (last first) and the whole text.

    Args:
        prompt: A string, or chat messages (dicts with ``role``/``content``, or objects with
            ``role`` and ``text``/``content`` such as Inspect's ``ChatMessage``).

    Returns:
        ``(user_texts, whole_text)``.
    """
    if isinstance(prompt, str):
        return [prompt], prompt
    messages = [_message(m) for m in prompt]
    users = [text for role, text in reversed(messages) if role == "user"]
    return users, "\n".join(text for _, text in messages)


class PromptIndex:
    """All solve and probe prompts of some benchmarks' items, for reverse lookup.

    Args:
        benchmarks: Benchmark name -> (benchmark object, its items).
        probes: Probe names to index.
    """

    def __init__(
        self,
        benchmarks: Mapping[str, tuple[Benchmark, Sequence[Item]]],
        probes: Sequence[str],
    ) -> None:
        self.benchmarks = {name: bench for name, (bench, _) in benchmarks.items()}
        self.items: dict[tuple[str, str], Item] = {}
        self._exact: dict[str, list[Entry]] = defaultdict(list)
        for name, (bench, items) in benchmarks.items():
            for item in items:
                self.items[(name, item.item_id)] = item
                for i, text in enumerate(bench.solve_prompts(item)):
                    self._add(Entry(name, item, "solve", None, i, normalise(text)))
                for probe in probes:
                    text = bench.probe_prompt(item, probe)
                    self._add(Entry(name, item, "probe", probe, 0, normalise(text)))
        self._head: dict[str, list[str]] = defaultdict(list)
        self._tail: dict[str, list[str]] = defaultdict(list)
        self._short: list[str] = []
        for text in self._exact:
            if len(text) < _ANCHOR:
                self._short.append(text)
            else:
                self._head[text[:_ANCHOR]].append(text)
                self._tail[text[-_ANCHOR:]].append(text)

    def _add(self, entry: Entry) -> None:
        bucket = self._exact[entry.text]
        if not any(
            e.benchmark == entry.benchmark
            and e.item.item_id == entry.item.item_id
            and e.kind == entry.kind
            and e.probe == entry.probe
            for e in bucket
        ):
            bucket.append(entry)

    def __len__(self) -> int:
        return len(self._exact)

    def _pick(self, text: str, how: str) -> Match:
        bucket = self._exact[text]
        entry = min(bucket, key=lambda e: (e.benchmark, e.item.item_id, e.prompt_index))
        items = {(e.benchmark, e.item.item_id) for e in bucket}
        return Match(entry, how, len(items) > 1)

    def lookup(self, prompt: str | Sequence[Any]) -> Match | None:
        """Find the indexed prompt a harness prompt carries.

        Args:
            prompt: The text the harness sent, or its chat messages.

        Returns:
            The match, or ``None`` when no indexed prompt is in the text.
        """
        users, whole = conversation_text(prompt)
        for text in users:
            key = normalise(text)
            if key in self._exact:
                return self._pick(key, "exact")
        query = normalise(whole)
        if query in self._exact:
            return self._pick(query, "exact")
        found = self._scan(query)
        return self._pick(found, "substring") if found is not None else None

    def _scan(self, query: str) -> str | None:
        """The indexed text found in ``query`` that ends last (then the longest)."""
        best: tuple[int, int, str] | None = None  # (end, length, text)

        def consider(end: int, length: int, text: str) -> None:
            nonlocal best
            if best is None or (end, length) > best[:2]:
                best = (end, length, text)

        last = len(query) - _ANCHOR + 1
        for start in range(max(last, 0)):
            for text in self._head.get(query[start : start + _ANCHOR], ()):
                if query.startswith(text, start):
                    consider(start + len(text), len(text), text)
        for text in self._short:
            at = query.rfind(text)
            if at >= 0:
                consider(at + len(text), len(text), text)
        if best is not None:
            return best[2]
        # Nothing whole: the harness may have cut the prompt's start (left truncation).
        for start in range(max(last, 0)):
            end = start + _ANCHOR
            for text in self._tail.get(query[start:end], ()):
                if end >= _MIN_MATCH and text.endswith(query[:end]):
                    consider(end, end, text)
        return best[2] if best is not None else None
