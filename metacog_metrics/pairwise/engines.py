"""Which engine draws: the compiled kernels (numba, the ``fast`` extra) or NumPy.

Every null's samplers are registered per engine (:mod:`metacog_metrics.pairwise.nulls`); the
per-pair tests and the joint draws take the compiled ones when :func:`compiled_kernels` returns
the kernel module, else the NumPy ones.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType
from typing import Any

__all__ = ["NO_NUMBA_ENV", "compiled_engine_available", "compiled_kernels"]

#: Environment variable that keeps ``engine="auto"`` on NumPy (any value but ""/0/false/no).
NO_NUMBA_ENV = "METACOG_NO_NUMBA"
_compiled_state: dict[str, Any] = {}


def compiled_kernels(engine: str) -> ModuleType | None:
    """The compiled kernels for ``engine``, or None for the NumPy engine.

    ``"auto"`` takes them when numba imports and the environment variable
    ``METACOG_NO_NUMBA`` is unset (or 0/false/no); ``"numba"`` insists on them.

    Raises:
        ImportError: ``engine="numba"`` and the kernels do not import (numba missing, or
            failing to compile here).
    """
    if engine == "numpy":
        return None
    if engine == "auto" and os.environ.get(NO_NUMBA_ENV, "").strip().lower() not in (
        "", "0", "false", "no",
    ):  # fmt: skip
        return None
    if "module" not in _compiled_state:  # import (and compile) once per process
        try:
            from metacog_metrics.pairwise import _numba

            _compiled_state["module"] = _numba
        except ImportError as exc:  # numba not installed (or not for this NumPy)
            _compiled_state["module"], _compiled_state["error"] = None, exc
        except Exception as exc:  # a numba that fails to compile here: keep working
            _compiled_state["module"], _compiled_state["error"] = None, exc
            warnings.warn(
                f"compiled per-pair kernels unavailable ({exc!r}); using the NumPy engine",
                RuntimeWarning,
                stacklevel=3,
            )
    module = _compiled_state["module"]
    if module is None and engine == "numba":
        raise ImportError(
            "engine='numba' needs numba (pip install 'metacog-eval[fast]'): "
            f"{_compiled_state['error']!r}"
        ) from _compiled_state["error"]
    return module


def compiled_engine_available(engine: str = "auto") -> bool:
    """Whether ``engine`` draws with the compiled kernels.

    >>> compiled_engine_available("numpy")
    False
    """
    try:
        return compiled_kernels(engine) is not None
    except ImportError:
        return False
