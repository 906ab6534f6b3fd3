"""Inspect tasks for the metacognition probes: ``inspect eval metacog_tasks/<benchmark>``.

Per item, a probe in its own fresh conversation (will you answer this correctly?), then the
solve in another; scorers pair the probe's confidence with the graded solve and report accuracy,
yes-rate, AUROC, Brier, ECE, tetrachoric correlation and the unparseable rate. The simulated
population is the model provider ``metacog-sim`` (``--model metacog-sim/m01``). Each registered
benchmark's task function is also an attribute of this package under the benchmark's name
(``from metacog_tasks.inspect_tasks import mmlu_pro``).
"""

from metacog_tasks.inspect_tasks.dataset import (
    BenchmarkItems,
    benchmark_dataset,
    item_sample,
    load_benchmark_items,
)
from metacog_tasks.inspect_tasks.metrics import (
    accuracy,
    auroc,
    brier,
    default_metrics,
    ece,
    stderr,
    tetrachoric,
    unparseable_rate,
    yes_rate,
)
from metacog_tasks.inspect_tasks.provider import SIM_PROVIDER, MetacogSimAPI
from metacog_tasks.inspect_tasks.scorers import SCORE_KEYS, grade_sample, metacog_scorer
from metacog_tasks.inspect_tasks.solvers import (
    CONFIDENCES,
    KIND_NAMES,
    PROBE_KINDS,
    ProbeOutcome,
    metacog_probe,
    metacog_solve,
    probe_key,
    probe_plan,
    probe_then_solve,
    solve_replies,
    store_solve,
)
from metacog_tasks.inspect_tasks.tasks import (
    benchmark_task,
    benchmark_tasks,
    metacog,
    metacog_task,
)

__all__ = [
    "CONFIDENCES",
    "KIND_NAMES",
    "PROBE_KINDS",
    "SCORE_KEYS",
    "SIM_PROVIDER",
    "BenchmarkItems",
    "MetacogSimAPI",
    "ProbeOutcome",
    "accuracy",
    "auroc",
    "benchmark_dataset",
    "benchmark_task",
    "benchmark_tasks",
    "brier",
    "default_metrics",
    "ece",
    "grade_sample",
    "item_sample",
    "load_benchmark_items",
    "metacog",
    "metacog_probe",
    "metacog_scorer",
    "metacog_solve",
    "metacog_task",
    "probe_key",
    "probe_plan",
    "probe_then_solve",
    "solve_replies",
    "stderr",
    "store_solve",
    "tetrachoric",
    "unparseable_rate",
    "yes_rate",
]

# Each benchmark's task under its name, as a package attribute (set here, after the submodule
# imports, so that the task, not a same-named submodule such as ``scicode``, is what it names).
globals().update(benchmark_tasks())
__all__ += list(benchmark_tasks())
