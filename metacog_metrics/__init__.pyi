"""The public names of metacog_metrics: the one list, read at run time by lazy_loader.

Each name is imported from its module on first use (``metacog_metrics/__init__.py``); type
checkers read the same lines.
"""

from ._result import (
    Result as Result,
    to_jsonable as to_jsonable,
)
from ._io import (
    atomic_write as atomic_write,
    atomic_write_text as atomic_write_text,
)
from ._options import (
    OptionSpec as OptionSpec,
    at_least as at_least,
    build_options as build_options,
    check_options as check_options,
    documented as documented,
    integer as integer,
    one_of as one_of,
    option as option,
    option_spec as option_spec,
    option_values as option_values,
)
from .executor import (
    Executor as Executor,
    ThreadExecutor as ThreadExecutor,
    executing_on as executing_on,
)
from .distributed import (
    DaskExecutor as DaskExecutor,
    dask_executor as dask_executor,
)
from .records import (
    CONFIDENCE_KINDS as CONFIDENCE_KINDS,
    EXTRA_COLUMNS as EXTRA_COLUMNS,
    KEY_COLUMNS as KEY_COLUMNS,
    RECORD_COLUMNS as RECORD_COLUMNS,
    REQUIRED_COLUMNS as REQUIRED_COLUMNS,
    UNSPECIFIED_PROBE as UNSPECIFIED_PROBE,
    ItemMatrices as ItemMatrices,
    RecordError as RecordError,
    RecordWarning as RecordWarning,
    apply_model_traits as apply_model_traits,
    item_matrices as item_matrices,
    load_models_file as load_models_file,
    read_records as read_records,
    record_format as record_format,
    validate_records as validate_records,
    write_records as write_records,
)
from .bvn import (
    bvn_cdf as bvn_cdf,
    bvn_pdf as bvn_pdf,
)
from .tetrachoric import (
    tetrachoric as tetrachoric,
    CorSmoothResult as CorSmoothResult,
    TetrachoricMatrixResult as TetrachoricMatrixResult,
    TetrachoricResult as TetrachoricResult,
    cor_smooth as cor_smooth,
    tetrachoric_matrix as tetrachoric_matrix,
    tetrachoric_table as tetrachoric_table,
)
from .factors import (
    AlignmentSubset as AlignmentSubset,
    EigenResult as EigenResult,
    FactorAlignmentResult as FactorAlignmentResult,
    FactorAnalysisResult as FactorAnalysisResult,
    QuadraticFit as QuadraticFit,
    contentious_items as contentious_items,
    eigen_decomposition as eigen_decomposition,
    factor_alignment as factor_alignment,
    factor_analysis as factor_analysis,
    factor_scores as factor_scores,
    quadratic_fit as quadratic_fit,
)
from .pairwise import (
    NULLS as NULLS,
    DeltaCurve as DeltaCurve,
    MeanTauNull as MeanTauNull,
    PairTestResult as PairTestResult,
    PairTypeSummary as PairTypeSummary,
    PairwiseResult as PairwiseResult,
    joint_null_draws as joint_null_draws,
    pair_permutation_test as pair_permutation_test,
    pairwise_calibration as pairwise_calibration,
    pairwise_taus as pairwise_taus,
    tau_b_from_table as tau_b_from_table,
)
from .polychoric import (
    OrdinalCorrelationResult as OrdinalCorrelationResult,
    PolychoricMatrixResult as PolychoricMatrixResult,
    confidence_levels as confidence_levels,
    ordinal_correlation as ordinal_correlation,
    polychoric_matrix as polychoric_matrix,
    polychoric_table as polychoric_table,
)
from .private_signal import (
    PrivateSignalTestResult as PrivateSignalTestResult,
    pattern_strata as pattern_strata,
    private_signal_test as private_signal_test,
)
from .stratified import (
    StratifiedTestResult as StratifiedTestResult,
    stratified_mean_tau_test as stratified_mean_tau_test,
    stratified_permutations as stratified_permutations,
)
from .calibration import (
    CalibrationResult as CalibrationResult,
    ModelCalibration as ModelCalibration,
    aurc as aurc,
    auroc as auroc,
    brier_score as brier_score,
    calibration_by_model as calibration_by_model,
    confidence_tetrachoric as confidence_tetrachoric,
    eaurc as eaurc,
    ece as ece,
    population_confidence as population_confidence,
)
from .analyze import (
    MIN_ITEMS as MIN_ITEMS,
    AnalysisOptions as AnalysisOptions,
    AnalysisResult as AnalysisResult,
    Findings as Findings,
    GroupAnalysis as GroupAnalysis,
    MatrixSection as MatrixSection,
    analyze_records as analyze_records,
)
from .outdir import (
    MANIFEST_NAME as MANIFEST_NAME,
    OutputFolder as OutputFolder,
    OutputFolderError as OutputFolderError,
)
from .pipeline import (
    analyze_files as analyze_files,
)
from .report import (
    render_report as render_report,
    write_report as write_report,
)
from .simulate import (
    PRESETS as PRESETS,
    SIM_PROBES as SIM_PROBES,
    BenchmarkProfile as BenchmarkProfile,
    LatentState as LatentState,
    Population as Population,
    SimulateResult as SimulateResult,
    SimulatedArrays as SimulatedArrays,
    SimulationParams as SimulationParams,
    get_preset as get_preset,
    model_index as model_index,
    model_names as model_names,
    parameter_overrides as parameter_overrides,
    run_simulate as run_simulate,
    simulate_arrays as simulate_arrays,
    simulate_records as simulate_records,
)
from .inline_solving import (
    InlineDetection as InlineDetection,
    InlinePairTypes as InlinePairTypes,
    detect_inline as detect_inline,
    inline_features as inline_features,
    inline_pairwise as inline_pairwise,
    inline_rates as inline_rates,
    strip_verdict as strip_verdict,
)
from .text_probes import (
    TextProbeResult as TextProbeResult,
    cross_validated_scores as cross_validated_scores,
    fit_text_probes as fit_text_probes,
    text_features as text_features,
)
from .gate import (
    DEFAULT_MARGINS as DEFAULT_MARGINS,
    GATE_RULES as GATE_RULES,
    GateBaseline as GateBaseline,
    GateConfig as GateConfig,
    GateConfigError as GateConfigError,
    GateInputError as GateInputError,
    GatePlan as GatePlan,
    GateVerdict as GateVerdict,
    MatchReport as MatchReport,
    MetricTest as MetricTest,
    PairedGroup as PairedGroup,
    gate_records as gate_records,
    gate_records_under as gate_records_under,
    gate_settings_help as gate_settings_help,
    github_annotations as github_annotations,
    is_baseline_file as is_baseline_file,
    junit_xml as junit_xml,
    markdown_summary as markdown_summary,
    match_records as match_records,
    plan_from_items as plan_from_items,
    plan_from_records as plan_from_records,
    read_baseline as read_baseline,
    stack_repeats as stack_repeats,
    template_versions as template_versions,
    terminal_report as terminal_report,
    verdict_json as verdict_json,
    version_warnings as version_warnings,
    write_baseline as write_baseline,
)
from .power import (
    PowerOptions as PowerOptions,
    PowerOutputs as PowerOutputs,
    PowerResult as PowerResult,
    power_analysis as power_analysis,
    run_power as run_power,
    write_power_outputs as write_power_outputs,
)
