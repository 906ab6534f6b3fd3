"""Registry names that carry the ``metacog_tasks/`` namespace in every kind of install.

Inspect namespaces a decorated object as ``<package>/<name>`` only when it can tell the package
is installed: the module lives in site-packages, or the *distribution named like the package* is
an editable install. This project's distribution is ``metacog-eval`` and its import package is
``metacog_tasks``, so under ``pip install -e .`` Inspect would register plain ``squad`` and
``inspect eval metacog_tasks/squad`` would not find it. :func:`qualified` gives the decorators
the namespaced name themselves whenever Inspect would not add it.
"""

from __future__ import annotations

__all__ = ["PACKAGE", "qualified"]

#: The entry-point name and registry namespace (``[project.entry-points.inspect_ai]``).
PACKAGE = "metacog_tasks"


def qualified(name: str) -> str:
    """The name to pass to an Inspect decorator so the object registers as ``metacog_tasks/<name>``.

    Args:
        name: The bare name (``squad``, ``auroc``, ...).

    Returns:
        ``name`` when Inspect adds the namespace itself, else ``metacog_tasks/<name>``.
    """
    try:  # Inspect's own rule, so both install kinds agree with it
        from inspect_ai._util.registry import registry_name
    except ImportError:  # pragma: no cover - a future Inspect without the helper
        return f"{PACKAGE}/{name}"
    return name if registry_name(qualified, name) != name else f"{PACKAGE}/{name}"
