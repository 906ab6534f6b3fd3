"""metacog-eval statistics: pure numpy/scipy/pandas/scikit-learn, no harness imports.

The record table (:mod:`~metacog_metrics.records`), tetrachoric correlations
(:mod:`~metacog_metrics.tetrachoric`, on :mod:`~metacog_metrics.bvn`), factor structure
(:mod:`~metacog_metrics.factors`), pairwise calibration with permutation nulls
(:mod:`~metacog_metrics.pairwise`), per-model calibration (:mod:`~metacog_metrics.calibration`),
the whole analysis (:mod:`~metacog_metrics.analyze`) and its report
(:mod:`~metacog_metrics.report`), the generative model of confidence and correctness
(:mod:`~metacog_metrics.simulate`), power analysis (:mod:`~metacog_metrics.power`) and the CI
regression gate (:mod:`~metacog_metrics.gate`, its reports and saved baselines).

The public names are re-exported here lazily (PEP 562), from the one list :data:`_PUBLIC`:
``from metacog_metrics import Result`` (which every harness module does) stays cheap, and
``metacog_metrics.tetrachoric_matrix`` imports its module on first use. The harness packages
import only these names.
"""

from __future__ import annotations

import importlib
from typing import Any

# Eager: the function shares its name with its module. Importing it here binds the package
# attribute to the function once and for all; a lazy import would let the submodule, once loaded
# by any other import, shadow it (``metacog_metrics.tetrachoric`` would be the module).
from metacog_metrics.tetrachoric import tetrachoric as tetrachoric

#: The public API: ``{module: names}``, each name re-exported here on first use.
_PUBLIC: dict[str, tuple[str, ...]] = {
    "metacog_metrics._result": (
        "Result",
        "to_jsonable",
    ),
    "metacog_metrics._io": (
        "atomic_write",
        "atomic_write_text",
    ),
    "metacog_metrics.records": (
        "CONFIDENCE_KINDS",
        "EXTRA_COLUMNS",
        "KEY_COLUMNS",
        "RECORD_COLUMNS",
        "REQUIRED_COLUMNS",
        "ItemMatrices",
        "RecordError",
        "RecordWarning",
        "apply_model_traits",
        "item_matrices",
        "load_models_file",
        "read_records",
        "validate_records",
        "write_records",
    ),
    "metacog_metrics.bvn": (
        "bvn_cdf",
        "bvn_pdf",
    ),
    "metacog_metrics.tetrachoric": (
        "tetrachoric",
        "CorSmoothResult",
        "TetrachoricMatrixResult",
        "TetrachoricResult",
        "cor_smooth",
        "tetrachoric_matrix",
        "tetrachoric_table",
    ),
    "metacog_metrics.factors": (
        "AlignmentSubset",
        "EigenResult",
        "FactorAlignmentResult",
        "FactorAnalysisResult",
        "QuadraticFit",
        "contentious_items",
        "eigen_decomposition",
        "factor_alignment",
        "factor_analysis",
        "factor_scores",
        "quadratic_fit",
    ),
    "metacog_metrics.pairwise": (
        "NULLS",
        "DeltaCurve",
        "MeanTauNull",
        "PairTestResult",
        "PairTypeSummary",
        "PairwiseResult",
        "joint_null_draws",
        "pair_permutation_test",
        "pairwise_calibration",
        "pairwise_taus",
        "tau_b_from_table",
    ),
    "metacog_metrics.polychoric": (
        "OrdinalCorrelationResult",
        "PolychoricMatrixResult",
        "confidence_levels",
        "ordinal_correlation",
        "polychoric_matrix",
        "polychoric_table",
    ),
    "metacog_metrics.private_signal": (
        "PrivateSignalTestResult",
        "pattern_strata",
        "private_signal_test",
    ),
    "metacog_metrics.stratified": (
        "StratifiedTestResult",
        "stratified_mean_tau_test",
        "stratified_permutations",
    ),
    "metacog_metrics.calibration": (
        "CalibrationResult",
        "ModelCalibration",
        "aurc",
        "auroc",
        "brier_score",
        "calibration_by_model",
        "confidence_tetrachoric",
        "eaurc",
        "ece",
        "population_confidence",
    ),
    "metacog_metrics.analyze": (
        "AnalysisOptions",
        "AnalysisResult",
        "GroupAnalysis",
        "MatrixSection",
        "analyze_files",
        "analyze_records",
    ),
    "metacog_metrics.report": (
        "headline_findings",
        "render_report",
        "render_rlmf_eval_report",
        "rlmf_eval_section",
        "write_report",
    ),
    "metacog_metrics.simulate": (
        "PRESETS",
        "BenchmarkProfile",
        "LatentState",
        "Population",
        "SimulateResult",
        "SimulatedArrays",
        "SimulationParams",
        "get_preset",
        "model_index",
        "model_names",
        "run_simulate",
        "simulate_arrays",
        "simulate_records",
    ),
    "metacog_metrics.inline_solving": (
        "InlineDetection",
        "InlinePairTypes",
        "detect_inline",
        "inline_features",
        "inline_pairwise",
        "inline_rates",
        "strip_verdict",
    ),
    "metacog_metrics.text_probes": (
        "TextProbeResult",
        "cross_validated_scores",
        "fit_text_probes",
        "text_features",
    ),
    "metacog_metrics.gate": (
        "DEFAULT_MARGINS",
        "GATE_RULES",
        "GateBaseline",
        "GateConfig",
        "GateConfigError",
        "GateInputError",
        "GatePlan",
        "GateVerdict",
        "MatchReport",
        "MetricTest",
        "PairedGroup",
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
    ),
    "metacog_metrics.power": (
        "PowerOutputs",
        "PowerResult",
        "power_analysis",
        "run_power",
        "write_power_outputs",
    ),
}

_LAZY: dict[str, str] = {
    name: module for module, names in _PUBLIC.items() for name in names if name != "tetrachoric"
}

__all__ = sorted(name for names in _PUBLIC.values() for name in names)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'metacog_metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
