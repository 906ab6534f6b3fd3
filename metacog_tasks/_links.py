"""The project's web addresses, for help texts and generated files (a wheel ships no docs/).

``pyproject.toml``'s ``[project.urls]`` lists the same addresses (a test holds them equal).
"""

from __future__ import annotations

__all__ = ["DOCS", "ISSUES", "REPOSITORY", "docs_url"]

#: The source repository.
REPOSITORY = "https://github.com/metacog-eval/metacog-eval"
#: The guides (``docs/`` of the default branch).
DOCS = f"{REPOSITORY}/blob/main/docs"
#: Where to report a problem.
ISSUES = f"{REPOSITORY}/issues"


def docs_url(page: str) -> str:
    """The address of a guide, e.g. ``docs_url("gate.md")``; ``""`` gives the folder."""
    return f"{DOCS}/{page}" if page else f"{REPOSITORY}/tree/main/docs"
