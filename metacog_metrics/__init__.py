"""metacog-eval statistics: pure numpy/scipy/pandas/scikit-learn, no harness imports."""

from metacog_metrics._result import Result, to_jsonable
from metacog_metrics.bvn import bvn_cdf, bvn_pdf
from metacog_metrics.calibration import (
    CalibrationResult,
    ModelCalibration,
    aurc,
    auroc,
    brier_score,
    calibration_by_model,
    eaurc,
    ece,
    population_confidence,
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

__all__ = [
    "CalibrationResult",
    "CorSmoothResult",
    "ModelCalibration",
    "Result",
    "TetrachoricMatrixResult",
    "TetrachoricResult",
    "aurc",
    "auroc",
    "brier_score",
    "bvn_cdf",
    "bvn_pdf",
    "calibration_by_model",
    "cor_smooth",
    "eaurc",
    "ece",
    "population_confidence",
    "tetrachoric",
    "tetrachoric_matrix",
    "tetrachoric_table",
    "to_jsonable",
]
