"""The public names of metacog_metrics.analyze, read at run time by lazy_loader."""

from .options import (
    CONTINUOUS_KINDS as CONTINUOUS_KINDS,
    MIN_ITEMS as MIN_ITEMS,
    MIN_MODELS as MIN_MODELS,
    POOLED as POOLED,
    AnalysisOptions as AnalysisOptions,
)
from .results import (
    AnalysisResult as AnalysisResult,
    Finding as Finding,
    Findings as Findings,
    GroupAnalysis as GroupAnalysis,
    GroupFindings as GroupFindings,
    InlineSolving as InlineSolving,
    InlineSolvingGroup as InlineSolvingGroup,
    MatrixSection as MatrixSection,
    SmallGapControl as SmallGapControl,
    TextProbes as TextProbes,
)
from .group import (
    coverage_table as coverage_table,
)
from .summary import (
    SCHEMA_VERSION as SCHEMA_VERSION,
)
from .findings import (
    analysis_findings as analysis_findings,
)
from .orchestration import (
    analyze_records as analyze_records,
)
