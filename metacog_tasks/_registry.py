"""Inspect entry point (``[project.entry-points.inspect_ai] metacog_tasks``).

Importing this module runs the ``@task``, ``@solver``, ``@scorer``, ``@metric`` and ``@modelapi``
decorators, so ``inspect eval metacog_tasks/squad`` and ``--model metacog-sim/m01`` resolve from
any folder once the package is installed.
"""

from metacog_tasks.inspect_tasks.metrics import (  # noqa: F401
    accuracy,
    auroc,
    brier,
    ece,
    stderr,
    tetrachoric,
    unparseable_rate,
    yes_rate,
)
from metacog_tasks.inspect_tasks.provider import MetacogSimAPI  # noqa: F401
from metacog_tasks.inspect_tasks.scorers import metacog_scorer  # noqa: F401
from metacog_tasks.inspect_tasks.solvers import (  # noqa: F401
    metacog_probe,
    metacog_solve,
    probe_then_solve,
)
from metacog_tasks.inspect_tasks.tasks import (  # noqa: F401
    legalbench,
    mathbench,
    mmlu_pro,
    omni_math,
    scicode,
    squad,
)
