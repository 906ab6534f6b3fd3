"""metacog-eval statistics: pure numpy/scipy/pandas/scikit-learn, no harness imports.

The record table (:mod:`~metacog_metrics.records`), tetrachoric correlations
(:mod:`~metacog_metrics.tetrachoric`, on :mod:`~metacog_metrics.bvn`), factor structure
(:mod:`~metacog_metrics.factors`), pairwise calibration with permutation nulls
(:mod:`~metacog_metrics.pairwise`), per-model calibration (:mod:`~metacog_metrics.calibration`),
the whole analysis (:mod:`~metacog_metrics.analyze`) and its report
(:mod:`~metacog_metrics.report`), the generative model of confidence and correctness
(:mod:`~metacog_metrics.simulate`) and power analysis (:mod:`~metacog_metrics.power`).

The public names are re-exported here lazily (PEP 562): ``import metacog_metrics._result`` (which
every harness module does) stays cheap, and ``metacog_metrics.tetrachoric_matrix`` imports its
module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from metacog_metrics._result import (
        Result,
        to_jsonable,
    )
    from metacog_metrics.analyze import (
        AnalysisResult,
        GroupAnalysis,
        MatrixSection,
        analyze_files,
        analyze_records,
    )
    from metacog_metrics.bvn import (
        bvn_cdf,
        bvn_pdf,
    )
    from metacog_metrics.calibration import (
        CalibrationResult,
        ModelCalibration,
        aurc,
        auroc,
        brier_score,
        calibration_by_model,
        confidence_tetrachoric,
        eaurc,
        ece,
        population_confidence,
    )
    from metacog_metrics.factors import (
        AlignmentSubset,
        EigenResult,
        FactorAlignmentResult,
        FactorAnalysisResult,
        QuadraticFit,
        contentious_items,
        eigen_decomposition,
        factor_alignment,
        factor_analysis,
        factor_scores,
        quadratic_fit,
    )
    from metacog_metrics.pairwise import (
        NULLS,
        DeltaCurve,
        MeanTauNull,
        PairTestResult,
        PairTypeSummary,
        PairwiseResult,
        joint_null_draws,
        pair_permutation_test,
        pairwise_calibration,
        pairwise_taus,
        tau_b_from_table,
    )
    from metacog_metrics.power import (
        PowerOutputs,
        PowerResult,
        power_analysis,
        run_power,
        write_power_outputs,
    )
    from metacog_metrics.records import (
        CONFIDENCE_KINDS,
        EXTRA_COLUMNS,
        KEY_COLUMNS,
        RECORD_COLUMNS,
        REQUIRED_COLUMNS,
        ItemMatrices,
        RecordError,
        RecordWarning,
        apply_model_traits,
        item_matrices,
        load_models_file,
        read_records,
        validate_records,
        write_records,
    )
    from metacog_metrics.report import (
        headline_findings,
        render_report,
        write_report,
    )
    from metacog_metrics.simulate import (
        PRESETS,
        BenchmarkProfile,
        LatentState,
        Population,
        SimulatedArrays,
        SimulateResult,
        SimulationParams,
        get_preset,
        model_index,
        model_names,
        run_simulate,
        simulate_arrays,
        simulate_records,
    )
    from metacog_metrics.stratified import (
        StratifiedTestResult,
        stratified_mean_tau_test,
        stratified_permutations,
    )
    from metacog_metrics.tetrachoric import (
        CorSmoothResult,
        TetrachoricMatrixResult,
        TetrachoricResult,
        cor_smooth,
        tetrachoric,
        tetrachoric_matrix,
        tetrachoric_table,
    )

# Eager: the function shares its name with its module. Importing it here binds the package
# attribute to the function once and for all; a lazy import would let the submodule, once loaded
# by any other import, shadow it (``metacog_metrics.tetrachoric`` would be the module).
from metacog_metrics.tetrachoric import tetrachoric

_LAZY: dict[str, str] = {
    "PRESETS": "metacog_metrics.simulate",
    "BenchmarkProfile": "metacog_metrics.simulate",
    "LatentState": "metacog_metrics.simulate",
    "Population": "metacog_metrics.simulate",
    "SimulateResult": "metacog_metrics.simulate",
    "SimulatedArrays": "metacog_metrics.simulate",
    "SimulationParams": "metacog_metrics.simulate",
    "get_preset": "metacog_metrics.simulate",
    "model_index": "metacog_metrics.simulate",
    "model_names": "metacog_metrics.simulate",
    "run_simulate": "metacog_metrics.simulate",
    "simulate_arrays": "metacog_metrics.simulate",
    "simulate_records": "metacog_metrics.simulate",
    "PowerOutputs": "metacog_metrics.power",
    "PowerResult": "metacog_metrics.power",
    "StratifiedTestResult": "metacog_metrics.stratified",
    "power_analysis": "metacog_metrics.power",
    "run_power": "metacog_metrics.power",
    "stratified_mean_tau_test": "metacog_metrics.stratified",
    "stratified_permutations": "metacog_metrics.stratified",
    "write_power_outputs": "metacog_metrics.power",
    "headline_findings": "metacog_metrics.report",
    "render_report": "metacog_metrics.report",
    "write_report": "metacog_metrics.report",
    "AlignmentSubset": "metacog_metrics.factors",
    "AnalysisResult": "metacog_metrics.analyze",
    "CONFIDENCE_KINDS": "metacog_metrics.records",
    "CalibrationResult": "metacog_metrics.calibration",
    "CorSmoothResult": "metacog_metrics.tetrachoric",
    "DeltaCurve": "metacog_metrics.pairwise",
    "EXTRA_COLUMNS": "metacog_metrics.records",
    "EigenResult": "metacog_metrics.factors",
    "FactorAlignmentResult": "metacog_metrics.factors",
    "FactorAnalysisResult": "metacog_metrics.factors",
    "GroupAnalysis": "metacog_metrics.analyze",
    "ItemMatrices": "metacog_metrics.records",
    "KEY_COLUMNS": "metacog_metrics.records",
    "MatrixSection": "metacog_metrics.analyze",
    "MeanTauNull": "metacog_metrics.pairwise",
    "ModelCalibration": "metacog_metrics.calibration",
    "NULLS": "metacog_metrics.pairwise",
    "PairTestResult": "metacog_metrics.pairwise",
    "PairTypeSummary": "metacog_metrics.pairwise",
    "PairwiseResult": "metacog_metrics.pairwise",
    "QuadraticFit": "metacog_metrics.factors",
    "RECORD_COLUMNS": "metacog_metrics.records",
    "REQUIRED_COLUMNS": "metacog_metrics.records",
    "RecordError": "metacog_metrics.records",
    "RecordWarning": "metacog_metrics.records",
    "Result": "metacog_metrics._result",
    "TetrachoricMatrixResult": "metacog_metrics.tetrachoric",
    "TetrachoricResult": "metacog_metrics.tetrachoric",
    "analyze_files": "metacog_metrics.analyze",
    "analyze_records": "metacog_metrics.analyze",
    "apply_model_traits": "metacog_metrics.records",
    "aurc": "metacog_metrics.calibration",
    "auroc": "metacog_metrics.calibration",
    "brier_score": "metacog_metrics.calibration",
    "bvn_cdf": "metacog_metrics.bvn",
    "bvn_pdf": "metacog_metrics.bvn",
    "calibration_by_model": "metacog_metrics.calibration",
    "confidence_tetrachoric": "metacog_metrics.calibration",
    "contentious_items": "metacog_metrics.factors",
    "cor_smooth": "metacog_metrics.tetrachoric",
    "eaurc": "metacog_metrics.calibration",
    "ece": "metacog_metrics.calibration",
    "eigen_decomposition": "metacog_metrics.factors",
    "factor_alignment": "metacog_metrics.factors",
    "factor_analysis": "metacog_metrics.factors",
    "factor_scores": "metacog_metrics.factors",
    "item_matrices": "metacog_metrics.records",
    "joint_null_draws": "metacog_metrics.pairwise",
    "load_models_file": "metacog_metrics.records",
    "pair_permutation_test": "metacog_metrics.pairwise",
    "pairwise_calibration": "metacog_metrics.pairwise",
    "pairwise_taus": "metacog_metrics.pairwise",
    "population_confidence": "metacog_metrics.calibration",
    "quadratic_fit": "metacog_metrics.factors",
    "read_records": "metacog_metrics.records",
    "tau_b_from_table": "metacog_metrics.pairwise",
    "tetrachoric_matrix": "metacog_metrics.tetrachoric",
    "tetrachoric_table": "metacog_metrics.tetrachoric",
    "to_jsonable": "metacog_metrics._result",
    "validate_records": "metacog_metrics.records",
    "write_records": "metacog_metrics.records",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'metacog_metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "CONFIDENCE_KINDS",
    "EXTRA_COLUMNS",
    "KEY_COLUMNS",
    "NULLS",
    "PRESETS",
    "RECORD_COLUMNS",
    "REQUIRED_COLUMNS",
    "AlignmentSubset",
    "AnalysisResult",
    "BenchmarkProfile",
    "CalibrationResult",
    "CorSmoothResult",
    "DeltaCurve",
    "EigenResult",
    "FactorAlignmentResult",
    "FactorAnalysisResult",
    "GroupAnalysis",
    "ItemMatrices",
    "LatentState",
    "MatrixSection",
    "MeanTauNull",
    "ModelCalibration",
    "PairTestResult",
    "PairTypeSummary",
    "PairwiseResult",
    "Population",
    "PowerOutputs",
    "PowerResult",
    "QuadraticFit",
    "RecordError",
    "RecordWarning",
    "Result",
    "SimulateResult",
    "SimulatedArrays",
    "SimulationParams",
    "StratifiedTestResult",
    "TetrachoricMatrixResult",
    "TetrachoricResult",
    "analyze_files",
    "analyze_records",
    "apply_model_traits",
    "aurc",
    "auroc",
    "brier_score",
    "bvn_cdf",
    "bvn_pdf",
    "calibration_by_model",
    "confidence_tetrachoric",
    "contentious_items",
    "cor_smooth",
    "eaurc",
    "ece",
    "eigen_decomposition",
    "factor_alignment",
    "factor_analysis",
    "factor_scores",
    "get_preset",
    "headline_findings",
    "item_matrices",
    "joint_null_draws",
    "load_models_file",
    "model_index",
    "model_names",
    "pair_permutation_test",
    "pairwise_calibration",
    "pairwise_taus",
    "population_confidence",
    "power_analysis",
    "quadratic_fit",
    "read_records",
    "render_report",
    "run_power",
    "run_simulate",
    "simulate_arrays",
    "simulate_records",
    "stratified_mean_tau_test",
    "stratified_permutations",
    "tau_b_from_table",
    "tetrachoric",
    "tetrachoric_matrix",
    "tetrachoric_table",
    "to_jsonable",
    "validate_records",
    "write_power_outputs",
    "write_records",
    "write_report",
]
