"""A tiny random GPT-2 with a locally trained byte-level BPE tokenizer, built offline.

lm-eval's ``hf`` backend needs a real checkpoint folder; nothing can be downloaded here. This
helper writes one: a 2-layer GPT-2 with random weights (fixed seed) and a byte-level BPE
tokenizer trained on a small built-in corpus, with a Jinja chat template, so that
``--model hf --model_args pretrained=<dir>,dtype=float32 --device cpu`` and
``--apply_chat_template`` work. Any test can use it::

    from tests.tinymodel import build_tiny_model

    @pytest.fixture(scope="session")
    def tiny_model(tmp_path_factory):
        return build_tiny_model(tmp_path_factory.mktemp("tiny-gpt2"))
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHAT_TEMPLATE", "build_tiny_model"]

#: A minimal chat template: role tags, and the assistant tag as generation prompt.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
_SPECIAL = ["<|endoftext|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
_CORPUS = [
    "You will be asked to solve the following question later.",
    "Without solving it, will you answer this correctly? Answer: Yes. Answer: No.",
    "Could you answer it correctly unassisted, with no context, options, hints or tools?",
    "Give a short rationale (one or two sentences), then end with a final line.",
    "The following is a multiple choice question. Think step by step and then finish your "
    "answer with the answer is (X) where X is the correct letter choice.",
    "Question: What is the capital of France? Options: A. Paris B. Rome C. Madrid D. Berlin",
    "Answer: Let's think step by step. The answer is (A).",
    "Read the passage and answer the question with a short span from the text.",
    "Solve the problem and put the final answer in \\boxed{42}. 1 2 3 4 5 6 7 8 9 0 + - * / =",
    "def f(x):\n    return x * 2\n# Python code for the scientific computing step.",
    "The contract clause, the statute and the court held that the rule applies.",
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?'\"()[]{}<>",
]


def build_tiny_model(path: str | Path, *, vocab_size: int = 600, seed: int = 0) -> Path:
    """Write a tiny random GPT-2 and its tokenizer to ``path`` (reused when already there).

    Args:
        path: Target folder (created).
        vocab_size: BPE vocabulary size (byte-level, so any text encodes).
        seed: torch seed of the random weights.

    Returns:
        The folder, usable as ``pretrained=`` for lm-eval's ``hf`` model.
    """
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    out = Path(path)
    if (out / "config.json").is_file() and (out / "tokenizer.json").is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        _CORPUS * 4, vocab_size=vocab_size, min_frequency=1, special_tokens=_SPECIAL
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=_SPECIAL[1:],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.model_max_length = 2048
    tokenizer.save_pretrained(out)

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=2048,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = GPT2LMHeadModel(config)
    model.eval()
    model.save_pretrained(out)
    return out
