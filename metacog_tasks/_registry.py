"""Inspect entry point (``[project.entry-points.inspect_ai] metacog_tasks``).

Importing this module runs the ``@task``, ``@solver``, ``@scorer``, ``@metric`` and ``@modelapi``
decorators (the task module registers one task per registered benchmark), so
``inspect eval metacog_tasks/<benchmark>`` and ``--model metacog-sim/m01`` resolve from any
folder once the package is installed.
"""

from metacog_tasks.inspect_tasks import tasks  # noqa: F401  (registers every benchmark's task)
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
