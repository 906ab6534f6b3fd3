"""The regression gate: a candidate checkpoint's run against a baseline's on the same items.

It stands on the statistics core (records, calibration) and on nothing above it: no analysis
pipeline, report or simulation. Its rooms:

- :mod:`~metacog_metrics.gate.config`: the settings (:class:`GateConfig`), each with its help;
- :mod:`~metacog_metrics.gate.metrics`: the gated metrics and their bootstrap forms;
- :mod:`~metacog_metrics.gate.matching`: items matched by key and provenance, repeats kept;
- :mod:`~metacog_metrics.gate.decision`: the tests, the rules, Holm and the verdict;
- :mod:`~metacog_metrics.gate.baseline`: baseline files, with a content hash;
- :mod:`~metacog_metrics.gate.plan`: how large a change the gate catches, with how many items;
- the output formats: :mod:`~metacog_metrics.gate.terminal`,
  :mod:`~metacog_metrics.gate.markdown`, :mod:`~metacog_metrics.gate.junit`,
  :mod:`~metacog_metrics.gate.annotations` and :mod:`~metacog_metrics.gate.verdict_json`.
"""

from metacog_metrics.gate.annotations import github_annotations
from metacog_metrics.gate.baseline import (
    GateBaseline,
    is_baseline_file,
    read_baseline,
    stack_repeats,
    template_versions,
    version_warnings,
    write_baseline,
)
from metacog_metrics.gate.config import (
    GATE_RULES,
    PROVENANCE_COLUMNS,
    GateConfig,
    GateConfigError,
    GateInputError,
    gate_settings_help,
)
from metacog_metrics.gate.decision import (
    EXIT_CODES,
    GateVerdict,
    MetricTest,
    gate_records,
    gate_records_under,
)
from metacog_metrics.gate.junit import junit_xml
from metacog_metrics.gate.markdown import MARKDOWN_LIMIT, markdown_summary
from metacog_metrics.gate.matching import MatchReport, PairedGroup, match_records
from metacog_metrics.gate.metrics import DEFAULT_MARGINS, METRICS, MetricSpec
from metacog_metrics.gate.plan import GatePlan, PlannedTest, plan_from_items, plan_from_records
from metacog_metrics.gate.terminal import terminal_report
from metacog_metrics.gate.verdict_json import VERDICT_FORMAT, verdict_json

__all__ = [
    "DEFAULT_MARGINS",
    "EXIT_CODES",
    "GATE_RULES",
    "MARKDOWN_LIMIT",
    "METRICS",
    "PROVENANCE_COLUMNS",
    "VERDICT_FORMAT",
    "GateBaseline",
    "GateConfig",
    "GateConfigError",
    "GateInputError",
    "GatePlan",
    "GateVerdict",
    "MatchReport",
    "MetricSpec",
    "MetricTest",
    "PairedGroup",
    "PlannedTest",
    "gate_records",
    "gate_records_under",
    "gate_settings_help",
    "github_annotations",
    "is_baseline_file",
    "junit_xml",
    "markdown_summary",
    "match_records",
    "plan_from_items",
    "plan_from_records",
    "read_baseline",
    "stack_repeats",
    "template_versions",
    "terminal_report",
    "verdict_json",
    "version_warnings",
    "write_baseline",
]
