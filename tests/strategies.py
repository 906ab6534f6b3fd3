"""Hypothesis strategies shared by the parser and grader property tests.

``letterless_text`` is arbitrary text without a single letter (any script): digits, punctuation,
symbols, spaces, line breaks, emoji. It cannot spell a verdict word, a label ("Answer:",
"Confidence"), a refusal, an option letter or ``\\boxed``, so the tests can surround a reply
of known meaning with it and assert the value read, instead of only checking that nothing
raises.
"""

from __future__ import annotations

from hypothesis import strategies as st


def letterless_text(*, max_size: int = 80, exclude: str = "") -> st.SearchStrategy[str]:
    """Text of any characters but letters (category L) and surrogates, minus ``exclude``.

    Python's case-insensitive regexes fold some non-ASCII letters onto ASCII ones (the long s
    onto ``s``, the Kelvin sign onto ``k``), so every letter of every script is left out, not
    only A-Z.
    """
    chars = st.characters(exclude_categories=("L", "Cs"), exclude_characters=exclude)
    return st.text(chars, max_size=max_size)
