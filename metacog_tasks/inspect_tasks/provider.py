"""The simulated model population as an Inspect model provider (``--model metacog-sim/m01``).

The provider wraps :class:`metacog_tasks.sim.SimResponder`: it answers probes and solve prompts by
looking the item up and replying as its latent state says. It never calls a tokenizer (usage is
set from a character count), so it runs offline, and ``inspect eval-set`` can sweep a whole
population with ``--model metacog-sim/m01,metacog-sim/m02,...``.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from metacog_tasks.inspect_tasks._naming import qualified

__all__ = ["SIM_PROVIDER", "MetacogSimAPI"]

#: Provider name: ``--model metacog-sim/<model>``; also the prefix of the record-table model name.
SIM_PROVIDER = "metacog-sim"


def _approx_tokens(text: str) -> int:
    # About four characters per token; keeps usage accounting free of tiktoken downloads.
    return max(1, (len(text) + 3) // 4)


def _as_chat(messages: list[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.text} for m in messages]


@modelapi(name=qualified(SIM_PROVIDER))
class MetacogSimAPI(ModelAPI):
    """Inspect provider for one member of the simulated population.

    ``-M`` model args are passed to :class:`~metacog_tasks.sim.SimResponder`, e.g.
    ``--model metacog-sim/m03 -M preset=paper -M seed=0``.

    Args:
        model_name: Population member (``m01``, ``m02``, ...), the part after ``metacog-sim/``.
        base_url: Unused (kept for the provider interface).
        api_key: Unused.
        config: Generation config from the eval (temperature reaches the simulator).
        **model_args: ``SimResponder`` options (``preset``, ``seed``, ``sources`` (alias
            ``data``, as for the lm-eval model), ``benchmarks``, ``overrides``, ...).
    """

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 (Inspect's provider signature)
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        from metacog_tasks.sim import SimResponder  # lazy: the registry imports this module

        self.model_args = dict(model_args)
        if "data" in model_args:  # the lm-eval model's name for the item source
            if "sources" in model_args:
                raise ValueError("metacog-sim: give data= or sources=, not both")
            model_args["sources"] = model_args.pop("data")
        self._responder = SimResponder(model_name, **model_args)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """Answer one conversation with the simulated model."""
        chat = _as_chat(input)
        text = self._responder.respond(chat)
        output = ModelOutput.from_content(
            model=f"{SIM_PROVIDER}/{self.model_name}", content=text, stop_reason="stop"
        )
        n_in = sum(_approx_tokens(m["content"]) for m in chat)
        n_out = _approx_tokens(text)
        output.usage = ModelUsage(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out)
        return output

    async def count_text_tokens(self, text: str) -> int:
        """Approximate token count (no tokenizer download)."""
        return _approx_tokens(text)

    def max_connections(self) -> int:
        """The simulator is in-process and cheap: allow wide concurrency."""
        return 64
