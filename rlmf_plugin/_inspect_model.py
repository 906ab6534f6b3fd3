"""Generating with any model Inspect supports (``openai/...``, ``vllm/...``, ``metacog-sim/m01``).

Requests run concurrently (bounded) on Inspect's model API, with a progress bar; a request
that fails is returned as ``None`` with its error, never raised, so one bad call does not lose
a long run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["generate_all", "to_messages"]


def to_messages(prompt: Any) -> list[Any]:
    """Inspect chat messages of a plain (``str``) or chat (``[{"role", "content"}]``) prompt."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    kinds = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
    }
    if isinstance(prompt, str):
        return [ChatMessageUser(content=prompt)]
    out = []
    for m in prompt:
        role = str(m.get("role", "user")) if isinstance(m, Mapping) else "user"
        content = m.get("content", "") if isinstance(m, Mapping) else str(m)
        out.append(kinds.get(role, ChatMessageUser)(content=str(content or "")))
    return out


def generate_all(
    model: str,
    prompts: Sequence[Any],
    *,
    model_args: Mapping[str, Any] | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    max_connections: int = 16,
    desc: str = "generating",
) -> list[tuple[str | None, str | None]]:
    """Generate one completion per prompt.

    Args:
        model: An Inspect model name (``provider/model``).
        prompts: Plain or chat prompts.
        model_args: Provider arguments (``-M`` on Inspect's command line).
        temperature: Sampling temperature (the provider's default when ``None``).
        max_tokens: Completion length limit.
        max_connections: Requests in flight at once.
        desc: Progress-bar label.

    Returns:
        ``(completion, error)`` per prompt, in order; one of the two is ``None``.
    """
    from inspect_ai.model import GenerateConfig, get_model
    from tqdm.auto import tqdm

    config = GenerateConfig(temperature=temperature, max_tokens=max_tokens)
    api = get_model(model, config=config, **dict(model_args or {}))

    async def run() -> list[tuple[str | None, str | None]]:
        gate = asyncio.Semaphore(max(1, int(max_connections)))
        bar = tqdm(total=len(prompts), desc=desc, leave=False)

        async def one(prompt: Any) -> tuple[str | None, str | None]:
            async with gate:
                try:
                    out = await api.generate(to_messages(prompt))
                    result: tuple[str | None, str | None] = (out.completion, None)
                except Exception as exc:  # reported per prompt; the run goes on
                    result = (None, f"{type(exc).__name__}: {exc}")
            bar.update(1)
            return result

        try:
            return list(await asyncio.gather(*(one(p) for p in prompts)))
        finally:
            bar.close()

    return asyncio.run(run())
