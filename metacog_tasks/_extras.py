"""Which optional extra brings a missing module: the one line a command prints instead of a
``ModuleNotFoundError`` traceback on the core install."""

from __future__ import annotations

__all__ = ["CPU_TORCH", "missing_extra_message"]

#: How to get torch's CPU build on a machine without a GPU (pip's default is a CUDA build).
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"

#: Modules an optional extra brings, and that extra (``pip install 'metacog-eval[EXTRA]'``).
_EXTRA_OF_MODULE = {
    "torch": "hf",
    "transformers": "hf",
    "accelerate": "hf",
    "trl": "rlmf",
    "h5py": "scicode",
    "numba": "fast",
    "mlflow": "mlflow",
}


def missing_extra_message(exc: ModuleNotFoundError, command: str = "") -> str | None:
    """One line naming the extra that installs the missing module, or None if none does.

    Args:
        exc: The import error.
        command: The subcommand (``metacog rlmf`` needs the ``rlmf`` extra, which brings
            torch too).
    """
    top = (exc.name or "").split(".")[0]
    extra = _EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    if command == "rlmf" and extra == "hf":
        extra = "rlmf"
    line = f"this needs {top}, from the {extra} extra: pip install 'metacog-eval[{extra}]'"
    if extra in ("hf", "rlmf"):
        line += f" (without a GPU, install torch's CPU build first: {CPU_TORCH})"
    return line
