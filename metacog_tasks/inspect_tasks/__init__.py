"""Inspect tasks for the metacognition probes: ``inspect eval metacog_tasks/<benchmark>``.

Per item, a probe in its own fresh conversation (will you answer this correctly?), then the
solve in another; scorers pair the probe's confidence with the graded solve and report accuracy,
yes-rate, AUROC, Brier, ECE, tetrachoric correlation and the unparseable rate. The simulated
population is the model provider ``metacog-sim`` (``--model metacog-sim/m01``).
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
    legalbench,
    mathbench,
    metacog_task,
    mmlu_pro,
    omni_math,
    scicode,
    squad,
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
    "brier",
    "default_metrics",
    "ece",
    "grade_sample",
    "item_sample",
    "legalbench",
    "load_benchmark_items",
    "mathbench",
    "metacog_probe",
    "metacog_scorer",
    "metacog_solve",
    "metacog_task",
    "mmlu_pro",
    "omni_math",
    "probe_key",
    "probe_plan",
    "probe_then_solve",
    "scicode",
    "solve_replies",
    "squad",
    "stderr",
    "store_solve",
    "tetrachoric",
    "unparseable_rate",
    "yes_rate",
]
