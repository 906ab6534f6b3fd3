"""Prompt templates: the shared probe wording and user overrides.

Every benchmark keeps its templates in one dict at the top of its module (``PROMPTS``). A
template is a :meth:`str.format` string; each key declares the fields it may use. Users override
any template with a mapping or a YAML/JSON file (``get_benchmark(name, prompts=...)``).
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

__all__ = [
    "PROBE_TEMPLATES",
    "PromptError",
    "PromptSet",
    "load_prompt_overrides",
]

#: The paper's probes. ``{question}`` is the bare question: no context, options or hints.
PROBE_TEMPLATES: dict[str, str] = {
    "prospective": (
        "You will be asked to solve the following {task} later.\n\n"
        "{question}\n\n"
        "Without solving it, will you answer this correctly? Give a short rationale (one or two "
        'sentences), then end with a final line that is exactly "Answer: Yes" or "Answer: No".'
    ),
    "counterfactual": (
        "Here is a {task}:\n\n"
        "{question}\n\n"
        "Could you answer it correctly unassisted, that is on your own, with no context, answer "
        "options, hints or tools? Give a short rationale (one or two sentences), then end with a "
        'final line that is exactly "Answer: Yes" or "Answer: No".'
    ),
    "numeric": (
        "You will be asked to solve the following {task} later.\n\n"
        "{question}\n\n"
        "Without solving it, how confident are you, from 0 to 100, that you will answer it "
        "correctly? Give a short rationale (one or two sentences), then end with a final line "
        '"Confidence: N" where N is a number from 0 to 100.'
    ),
}

_PROBE_FIELDS = frozenset({"task", "question"})


class PromptError(ValueError):
    """A prompt template or override is invalid (unknown key, unknown field, bad file)."""


def load_prompt_overrides(prompts: Mapping[str, str] | str | PathLike[str] | None) -> dict:
    """Read template overrides from a mapping or a YAML/JSON file.

    Args:
        prompts: ``None``, a mapping of template name to template, or the path of a YAML or
            JSON file holding such a mapping.

    Returns:
        The overrides as a plain dict (empty for ``None``).

    Raises:
        PromptError: The file cannot be read or does not hold a mapping of strings.
    """
    if prompts is None:
        return {}
    if isinstance(prompts, Mapping):
        data: Any = dict(prompts)
        origin = "prompts mapping"
    else:
        path = Path(prompts)
        origin = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PromptError(f"cannot read prompt file {path}: {exc}") from exc
        try:
            if path.suffix.lower() == ".json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
        except Exception as exc:  # json.JSONDecodeError, yaml.YAMLError
            raise PromptError(f"cannot parse prompt file {path}: {exc}") from exc
    if not isinstance(data, Mapping):
        raise PromptError(f"{origin}: expected a mapping of template name to text")
    for key, value in data.items():
        if not isinstance(value, str):
            raise PromptError(f"{origin}: template {key!r} is not a string")
    return {str(k): v for k, v in data.items()}


class PromptSet:
    """The templates of one benchmark, with the fields each may use.

    Args:
        benchmark: Benchmark name (for error messages).
        templates: Template name -> text.
        fields: Template name -> the format fields it may use.
        overrides: User templates replacing some of ``templates``.

    Raises:
        PromptError: An override names an unknown template or uses an unknown field.
    """

    def __init__(
        self,
        benchmark: str,
        templates: Mapping[str, str],
        fields: Mapping[str, frozenset[str] | set[str]],
        overrides: Mapping[str, str] | str | PathLike[str] | None = None,
    ) -> None:
        self.benchmark = benchmark
        self._fields = {k: frozenset(v) for k, v in fields.items()}
        merged = dict(templates)
        extra = load_prompt_overrides(overrides)
        unknown = sorted(set(extra) - set(merged))
        if unknown:
            raise PromptError(
                f"{benchmark}: unknown prompt template(s) {unknown}; known: {sorted(merged)}"
            )
        merged.update(extra)
        for key, text in merged.items():
            self._check(key, text)
        self._templates = merged

    def _check(self, key: str, text: str) -> None:
        allowed = self._fields.get(key, frozenset())
        try:
            used = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
        except ValueError as exc:
            raise PromptError(f"{self.benchmark}: template {key!r} is malformed: {exc}") from exc
        names = {u.split(".")[0].split("[")[0] for u in used}
        bad = sorted(n for n in names if n not in allowed)
        if bad:
            raise PromptError(
                f"{self.benchmark}: template {key!r} uses unknown field(s) {bad}; "
                f"allowed: {sorted(allowed)}"
            )

    def __getitem__(self, key: str) -> str:
        return self._templates[key]

    def keys(self) -> list[str]:
        """Template names."""
        return list(self._templates)

    def as_dict(self) -> dict[str, str]:
        """All templates, overrides applied."""
        return dict(self._templates)

    def render(self, key: str, **values: Any) -> str:
        """Fill template ``key`` with ``values``."""
        return self._templates[key].format(**values)


def probe_fields() -> dict[str, frozenset[str]]:
    """The fields the three probe templates may use."""
    return {k: _PROBE_FIELDS for k in PROBE_TEMPLATES}
