"""lm-eval model ``metacog-sim``: one member of the simulated population, offline.

lm-eval 0.4.13 discovers no external models, so ``metacog lm-eval`` (and
:func:`metacog_tasks.lmeval.runner.run_lmeval`) import this module before lm-eval resolves
``--model``. Usage::

    metacog lm-eval run --model metacog-sim \\
        --model_args model=m01,preset=paper,seed=0,data=bundled \\
        --tasks 'metacog_*' --metadata '{"metacog_data": "bundled"}' \\
        --output_path runs/ --log_samples

The record-table name of the model is ``metacog-sim/<model>`` (``get_model_info`` writes it to
the results file as ``metacog_model_name``), the same as the Inspect provider's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# The built-in model table must be imported before anything is registered: lm-eval only
# auto-imports it while its model registry is empty, so registering first would hide `hf`.
import lm_eval.models  # noqa: F401
from lm_eval.api.model import LM
from lm_eval.api.registry import MODEL_REGISTRY

__all__ = ["SIM_MODEL", "MetacogSimLM", "register_models", "sim_model_name"]

#: The lm-eval model name, also the prefix of the record-table model name.
SIM_MODEL = "metacog-sim"
_LOG_HALF = math.log(0.5)


def sim_model_name(model: str) -> str:
    """The record-table name of a simulated model.

    Args:
        model: ``m01`` or ``metacog-sim/m01``.

    Returns:
        ``metacog-sim/m01``.
    """
    model = str(model).strip()
    prefix = SIM_MODEL + "/"
    return model if model.startswith(prefix) else prefix + model


def _role_tag(role: str) -> str:
    return f"<|{role}|>"


class MetacogSimLM(LM):
    """A simulated model answering metacog prompts from its latent state (no weights).

    Model args (``--model_args``): ``model`` (``m01`` .. ``mNN``, or ``metacog-sim/mNN``),
    ``preset`` (``paper``, ``individuated``, ...), ``seed``, ``data`` (the item source the
    simulator indexes: ``bundled``, ``hf`` or a local path, per benchmark as a JSON mapping in
    Python; it must match the tasks' ``metacog_data``), ``benchmarks`` (``+``-separated subset).
    lm-eval's ``batch_size``, ``max_batch_size`` and ``device`` are accepted and ignored.

    Args:
        model: Population member.
        preset: Simulation preset.
        seed: Population seed.
        data: Item source(s) of the simulator.
        benchmarks: Benchmarks to index (default: all).
        benchmark_options: Benchmark name -> ``get_benchmark`` options (JSON in a string);
            must match the tasks' ``metacog_options``.
        **kwargs: lm-eval's batch/device arguments (ignored).
    """

    def __init__(
        self,
        model: str = "m01",
        preset: str = "paper",
        seed: int | str = 0,
        data: str | Mapping[str, str] | None = "bundled",
        benchmarks: str | list[str] | None = None,
        benchmark_options: str | Mapping[str, Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        from metacog_tasks.sim import SimResponder  # lazy: heavy, and only when used

        self.model_name = sim_model_name(model)
        self.member = self.model_name.split("/", 1)[1]
        self.preset = str(preset)
        self.seed = int(seed)
        if isinstance(benchmarks, str):
            benchmarks = [b for b in benchmarks.replace(",", "+").split("+") if b]
        self.data = _parse_sources(data)
        self.benchmarks = benchmarks
        if isinstance(benchmark_options, str):
            import json

            benchmark_options = json.loads(benchmark_options)
        self._responder = SimResponder(
            self.member,
            preset=self.preset,
            seed=self.seed,
            sources=self.data,
            benchmarks=benchmarks,
            benchmark_options=benchmark_options,
        )

    # -- requests --------------------------------------------------------------------------

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """Answer each ``(context, gen_kwargs)`` request as the simulated model would."""
        out = []
        for req in requests:
            context = req.args[0]
            out.append(self._responder.respond(context))
        return out

    def loglikelihood(
        self, requests: list[Any], disable_tqdm: bool = False
    ) -> list[tuple[float, bool]]:
        """Log-probability of each ``(context, continuation)``, consistent with P(yes)."""
        out = []
        for req in requests:
            context, continuation = req.args[0], req.args[1]
            ll = float(self._responder.loglik(context, continuation))
            out.append((ll, ll >= _LOG_HALF))
        return out

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        """Not defined for a simulated model (it has no distribution over free text).

        Raises:
            NotImplementedError: Always; run perplexity tasks on a real model.
        """
        raise NotImplementedError(
            f"{SIM_MODEL} answers metacog tasks only; it has no rolling log-likelihood"
        )

    # -- chat templates --------------------------------------------------------------------

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """A plain role-tagged rendering (the simulator reads the user turn back out)."""
        parts = [f"{_role_tag(m['role'])}\n{m['content']}\n" for m in chat_history]
        if add_generation_prompt:
            parts.append(_role_tag("assistant") + "\n")
        return "".join(parts)

    @property
    def tokenizer_name(self) -> str:
        """Fingerprint for lm-eval's request cache."""
        return SIM_MODEL

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        """A description of the role-tag template (logged by lm-eval)."""
        return "<|role|>\\n{content}\\n ... <|assistant|>\\n" if chat_template else None

    def get_model_info(self) -> dict[str, Any]:
        """Merged into the results file's ``config``; names the model for ``metacog collect``."""
        return {
            "metacog_model_name": self.model_name,
            "metacog_sim": {
                "member": self.member,
                "preset": self.preset,
                "seed": self.seed,
                "data": self.data,
                "benchmarks": self.benchmarks,
            },
        }


def _parse_sources(data: Any) -> Any:
    """``data`` model arg: ``None``/``hf`` -> None, a JSON mapping string -> dict, else as is."""
    if data is None:
        return None
    if isinstance(data, Mapping):
        return {str(k): (None if str(v).lower() == "hf" else v) for k, v in data.items()}
    text = str(data).strip()
    if text.startswith("{"):
        import json

        return _parse_sources(json.loads(text))
    return None if text.lower() in ("hf", "none", "") else text


def register_models() -> None:
    """Register this project's lm-eval models (idempotent; built-ins stay available)."""
    current = MODEL_REGISTRY.get(SIM_MODEL, None)
    if current is None:
        MODEL_REGISTRY.register(SIM_MODEL)(MetacogSimLM)
    elif current is not MetacogSimLM:
        raise ValueError(f"lm-eval model name {SIM_MODEL!r} is already registered to {current!r}")


register_models()
