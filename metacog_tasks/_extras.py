"""Which optional extra brings a missing module: the one line a command prints instead of a
``ModuleNotFoundError`` traceback on the core install."""

from __future__ import annotations

import re

__all__ = ["CPU_TORCH", "missing_extra_message"]

#: How to get torch's CPU build on a machine without a GPU (pip's default is a CUDA build).
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"

#: Import names of the distributions whose module is not named like them.
_MODULE_OF = {"mlflow-skinny": "mlflow"}
_REQUIREMENT = re.compile(r"""^([A-Za-z0-9_.-]+)[^;]*;\s*extra\s*==\s*["']([\w-]+)["']""")


def _requirements() -> list[str]:
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        return metadata("metacog-eval").get_all("Requires-Dist") or []
    except PackageNotFoundError:
        return []


def _extra_of_module() -> dict[str, str]:
    """Module -> the extra that lists it, from the installed package's metadata
    (``pyproject.toml``'s extras are the one list)."""
    out: dict[str, str] = {}
    for line in _requirements():
        m = _REQUIREMENT.match(line)
        if m is None or m.group(2) == "dev" or m.group(1).lower() == "metacog-eval":
            continue
        dist = m.group(1).lower()
        out.setdefault(_MODULE_OF.get(dist, dist.replace("-", "_")), m.group(2))
    return out


def _included_extras() -> dict[str, set[str]]:
    """Extra -> the extras it brings (``rlmf = ["metacog-eval[hf]", ...]``)."""
    out: dict[str, set[str]] = {}
    for line in _requirements():
        m = re.match(r"""^metacog-eval\[([^\]]+)\][^;]*;\s*extra\s*==\s*["']([\w-]+)["']""", line)
        if m:
            out.setdefault(m.group(2), set()).update(x.strip() for x in m.group(1).split(","))
    return out


def missing_extra_message(exc: ModuleNotFoundError, command: str = "") -> str | None:
    """One line naming the extra that installs the missing module, or None if none does.

    Args:
        exc: The import error.
        command: The subcommand (``metacog rlmf`` needs the ``rlmf`` extra, which brings
            torch too).
    """
    top = (exc.name or "").split(".")[0]
    extras = _extra_of_module()
    extra = extras.get(top)
    if extra is None:
        return None
    if extra in _included_extras().get(command, set()):
        extra = command  # `metacog rlmf`: its own extra, which brings torch too
    line = f"this needs {top}, from the {extra} extra: pip install 'metacog-eval[{extra}]'"
    if extra in ("hf", "rlmf"):
        line += f" (without a GPU, install torch's CPU build first: {CPU_TORCH})"
    return line
