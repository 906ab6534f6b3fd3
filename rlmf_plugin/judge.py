"""An LLM judge of answer consistency: does one sampled answer support another?

The official RLMF code estimates intrinsic confidence with a judge model (Qwen3-32B served by
vLLM, temperature 0.7) asked, for a context answer and an assertion, whether the assertion is
consistent with the context (Yes 1, No 0, anything else 0.5). :class:`ConsistencyJudge` asks the
same question (this project's wording, :data:`JUDGE_PROMPT`) of

* any model Inspect supports (``openai/...``, ``vllm/...``, ``openai-api/<service>/<model>``), or
* any OpenAI-compatible endpoint (``base_url``: ``/v1/chat/completions`` over plain HTTP, no
  client library).

Verdicts are cached per pair; a failed request counts 0.5 (no verdict), never raises.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["JUDGE_PROMPT", "ConsistencyJudge", "ModelClient", "read_verdict"]

#: The consistency question (the official judge's structure, this project's words).
JUDGE_PROMPT = (
    "Context: {context}\nAssertion: {assertion}\n"
    "Is the assertion consistent with the context above? Answer Yes or No:"
)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_MAX_CHARS = 8_000  # each of context and assertion is cut to this many characters


def read_verdict(text: str | None) -> float:
    """1.0 for a reply whose first yes/no word is yes, 0.0 for no, 0.5 for neither."""
    if not text:
        return 0.5
    m = _YES_NO.search(text[:200])
    if m is None:
        return 0.5
    return 1.0 if m.group(1).lower() == "yes" else 0.0


def _flat(text: str) -> str:
    return " ".join(str(text).split())[:_MAX_CHARS]


class ModelClient:
    """Sends prompts to a judge model: an Inspect model, or an OpenAI-compatible endpoint.

    Args:
        model: An Inspect model name, or the model name at ``base_url``.
        base_url: An OpenAI-compatible endpoint (``http://host:8000/v1``); Inspect when None.
        api_key: Bearer token for ``base_url``.
        model_args: Inspect provider arguments.
        temperature: Sampling temperature.
        max_tokens: Reply length.
        max_connections: Requests in flight.
        timeout_s: Seconds per HTTP request.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model_args: Mapping[str, Any] | None = None,
        temperature: float = 0.7,
        max_tokens: int | None = 4,
        max_connections: int = 16,
        timeout_s: float = 60.0,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.api_key = api_key
        self.model_args = dict(model_args or {})
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_connections = max(1, int(max_connections))
        self.timeout_s = timeout_s

    def ask(self, prompts: Sequence[Any]) -> list[str | None]:
        """One reply per prompt, plain text or chat messages (None where the request failed)."""
        if not prompts:
            return []
        if self.base_url is None:
            from rlmf_plugin._inspect_model import generate_all

            out = generate_all(
                self.model,
                list(prompts),
                model_args=self.model_args,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                max_connections=self.max_connections,
                desc="judge",
            )
            return [text for text, _ in out]
        with ThreadPoolExecutor(self.max_connections) as pool:
            return list(pool.map(self._http, prompts))

    def _http(self, prompt: Any) -> str | None:
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        body = json.dumps({
            "model": self.model,
            "messages": list(messages),
            "temperature": self.temperature,
            **({} if self.max_tokens is None else {"max_tokens": self.max_tokens}),
        }).encode("utf-8")  # fmt: skip
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                data = json.loads(resp.read(1 << 20))
            return str(data["choices"][0]["message"]["content"])
        except Exception:  # no reply: the caller's parser reads None as no verdict
            return None


class ConsistencyJudge:
    """Judges ``(context, assertion)`` pairs (see the module doc); arguments as
    :class:`ModelClient` (official: temperature 0.7, 4 tokens)."""

    def __init__(self, model: str, **client: Any) -> None:
        self.client = ModelClient(model, **client)
        self._cache: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self.n_requests = 0

    def prompt(self, context: str, assertion: str) -> str:
        """The question asked for one pair."""
        return JUDGE_PROMPT.format(context=_flat(context), assertion=_flat(assertion))

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Each pair's verdict: 1 (consistent), 0 (not), 0.5 (no verdict)."""
        keys = [(_flat(c), _flat(a)) for c, a in pairs]
        todo = sorted({k for k in keys if k not in self._cache})
        if todo:
            replies = self.client.ask([self.prompt(c, a) for c, a in todo])
            with self._lock:
                self.n_requests += len(todo)
                for k, r in zip(todo, replies):
                    self._cache[k] = read_verdict(r)
        return [self._cache[k] for k in keys]
