"""A tiny random GPT-2 with a character tokenizer, built offline from a few numbers.

For CPU smoke runs of ``metacog rlmf train`` (``model: {tiny: {...}}`` in the config): nothing
is downloaded. One token per character (printable ASCII, newline, tab; anything else is
``<unk>``), so every reward regex sees the decoded text exactly as generated.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

__all__ = ["build_tiny_lm"]

_SPECIALS = ["<pad>", "<eos>", "<unk>"]
_CHAT_TEMPLATE = (
    "{% for message in messages %}<{{ message['role'] }}>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>\n{% endif %}"
)


def build_tiny_lm(
    path: str | Path,
    *,
    n_layer: int = 2,
    n_embd: int = 32,
    n_head: int = 2,
    n_positions: int = 4096,
    seed: int = 0,
) -> Path:
    """Write a random GPT-2 and its character tokenizer to ``path``; returns ``path``."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    chars = sorted(set(string.printable))
    vocab = {tok: i for i, tok in enumerate(_SPECIALS + chars)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
    )
    tokenizer.chat_template = _CHAT_TEMPLATE
    tokenizer.model_max_length = n_positions
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        bos_token_id=vocab["<eos>"],
        eos_token_id=vocab["<eos>"],
        pad_token_id=vocab["<pad>"],
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    model.generation_config.pad_token_id = vocab["<pad>"]
    model.generation_config.eos_token_id = vocab["<eos>"]
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def tiny_options(spec: Any) -> dict[str, Any]:
    """The keyword arguments of :func:`build_tiny_lm` from a config's ``tiny`` entry."""
    if spec is True or spec is None:
        return {}
    if not isinstance(spec, dict):
        raise ValueError(f"model.tiny must be true or a mapping, got {spec!r}")
    allowed = {"n_layer", "n_embd", "n_head", "n_positions", "seed"}
    bad = sorted(set(spec) - allowed)
    if bad:
        raise ValueError(f"model.tiny: unknown key(s) {bad}; allowed: {sorted(allowed)}")
    return dict(spec)
