"""The result objects of ``metacog analyze``: one group's sections, the text analyses, every
group, and the run.

:class:`AnalysisResult` holds the typed results (:class:`GroupAnalysis` per group, the text
analyses' :class:`InlineSolving` and :class:`TextProbes`, the options, inputs and warnings of the
run) beside the summary and tables made from them (:mod:`metacog_metrics.analyze.summary`); its
:meth:`~AnalysisResult.summary_text` is the few lines ``metacog analyze`` prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics._conventions import format_p
from metacog_metrics._result import Result, to_jsonable
from metacog_metrics.analyze.options import AnalysisOptions
from metacog_metrics.calibration import CalibrationResult
from metacog_metrics.factors import EigenResult, FactorAlignmentResult, FactorAnalysisResult
from metacog_metrics.inline_solving import InlinePairTypes
from metacog_metrics.pairwise import PairwiseResult
from metacog_metrics.pairwise.nulls import get_null, null_names
from metacog_metrics.private_signal import PrivateSignalTestResult
from metacog_metrics.records import ItemMatrices
from metacog_metrics.tetrachoric import TetrachoricMatrixResult
from metacog_metrics.text_probes import SCORES, TextProbeResult

__all__ = [
    "AnalysisResult",
    "Finding",
    "Findings",
    "GroupAnalysis",
    "GroupFindings",
    "InlineSolving",
    "InlineSolvingGroup",
    "MatrixSection",
    "SmallGapControl",
    "TextProbes",
]


@dataclasses.dataclass(frozen=True, eq=False)
class MatrixSection(Result):
    """Correlation, eigen and factor results of one items x models matrix.

    Attributes:
        tetrachoric: The correlation matrix on pairwise-complete items (models without variance
            or without enough shared items excluded): tetrachoric for 0/1 data, polychoric
            (:class:`~metacog_metrics.polychoric.OrdinalCorrelationResult`) for numeric
            confidence over per-model levels; ``method`` says which.
        eigen: Eigen-decomposition of it, with the loadings-vs-thresholds parabola (None when
            fewer than 2 models are left).
        factor: One-factor model (None when fewer than 3 models are left).
        rate: Per model (group order), the share of 1s (yes-rate or accuracy), or the mean
            confidence for numeric confidence, each on the model's own items.
        reason: Why ``eigen``/``factor`` are missing, else None.
        method: ``"tetrachoric"`` or ``"polychoric"``.
    """

    tetrachoric: TetrachoricMatrixResult
    eigen: EigenResult | None
    factor: FactorAnalysisResult | None
    rate: np.ndarray
    reason: str | None = None
    method: str = "tetrachoric"

    @property
    def correlation(self) -> TetrachoricMatrixResult:
        """The correlation matrix (``tetrachoric``, whichever ``method`` made it)."""
        return self.tetrachoric


@dataclasses.dataclass(frozen=True, eq=False)
class GroupAnalysis(Result):
    """Every analysis of one (benchmark, probe, confidence kind) group.

    Attributes:
        benchmark: Benchmark.
        probe: Probe.
        confidence_kind: Confidence kind.
        label: Key under ``summary["results"][benchmark]`` (the probe, or ``probe:kind`` when the
            probe has several kinds).
        matrices: The complete-case items x models matrices of the included models (items every
            one of them answered): factor scores, the alignment and the private-signal test.
        binarized_at: Threshold used to binarise numeric confidence for the tetrachoric and
            factor sections (None for binary confidence, and for numeric confidence analysed
            as ordered levels with the polychoric).
        confidence: Section of the confidence matrix (pairwise-complete items).
        correctness: Section of the correctness matrix.
        alignment: Factor alignment of confidence with correctness.
        pairwise: Pairwise calibration (real-valued confidence for continuous kinds), each pair
            on the items both models answered.
        calibration: Per-model calibration (each model on its own graded items).
        skipped: Why the cross-model analyses were skipped, else None.
        warnings: Notes on this group (drops, degenerate models, smoothing, unparseable rows).
        private_signal: The test of private signal on the complete-case items (binary
            confidence only; :mod:`metacog_metrics.private_signal`).
        coverage_excluded: ``{model: share of the group's items it has}`` for models left out
            of the cross-model analyses by ``min_coverage``.
        all_items: The items x models matrices of the included models on every item any of
            them answered (NaN where a model lacks one): the correlation matrices and the
            pairwise section.
        coverage: One row per model of the group: usable items, share, included or why not.
    """

    benchmark: str
    probe: str
    confidence_kind: str
    label: str
    matrices: ItemMatrices
    binarized_at: float | None
    confidence: MatrixSection | None
    correctness: MatrixSection | None
    alignment: FactorAlignmentResult | None
    pairwise: PairwiseResult | None
    calibration: CalibrationResult
    skipped: str | None
    warnings: tuple[str, ...]
    private_signal: PrivateSignalTestResult | None = None
    coverage_excluded: Mapping[str, float] = dataclasses.field(default_factory=dict)
    all_items: ItemMatrices | None = None
    coverage: pd.DataFrame | None = None


# ---------------------------------------------------------------------------------------------
# The findings (worded by metacog_metrics.analyze.findings)


@dataclasses.dataclass(frozen=True, eq=False)
class SmallGapControl(Result):
    """The mean tau of the pairs of nearly equal accuracy against the base-rate-matched null.

    If confidence only reads the shared difficulty through each model's threshold, pairs with
    the same accuracy have no systematic dconf-dperf association: their mean tau should fall in
    the null band (the paper: tau -> 0 as the allowed accuracy gap delta -> 0).

    Attributes:
        delta: The largest accuracy gap ``|acc_A - acc_B|`` of the pairs used.
        n_pairs: Pairs within it (with a tau-b).
        mean_tau: Their mean tau-b (NaN below ``min_pairs``).
        null: The null the band comes from (the headline null, base-rate-matched).
        null_mean: Mean of that null's joint draws of this subset's mean.
        null_low: Its 2.5% quantile.
        null_high: Its 97.5% quantile.
        p_value: The p-value of the chosen alternative.
        mean_tau_all: The mean tau-b over all pairs.
        n_pairs_all: All pairs with a tau-b.
        min_pairs: Fewest pairs for the control.
        verdict: ``"within_null"`` (as in the paper), ``"shrinks"`` (smaller than over all
            pairs, still outside the band), ``"does_not_shrink"`` (outside the band and not
            smaller), ``"below_null"``, ``"too_few_pairs"`` or ``"not_tested"`` (no joint draws).
        alpha: Level of the verdict.
    """

    delta: float
    n_pairs: int
    mean_tau: float
    null: str
    null_mean: float
    null_low: float
    null_high: float
    p_value: float
    mean_tau_all: float
    n_pairs_all: int
    min_pairs: int
    verdict: str
    alpha: float

    def sentence(self, group: str) -> str:
        """The control as one sentence."""
        head = (
            f"Small-gap control ({group}; pairs whose accuracies differ by at most "
            f"{self.delta:g}): {self.n_pairs} pairs"
        )
        if self.verdict == "too_few_pairs":
            return (
                f"{head}, fewer than the {self.min_pairs} the control needs, so it cannot say "
                "whether tau vanishes at equal accuracy (the paper's pattern, tau -> 0 as "
                "delta -> 0)."
            )
        band = f"{_fmt(self.null_low)} to {_fmt(self.null_high)}"
        label = get_null(self.null).label
        if self.verdict == "not_tested":
            return f"{head}, mean tau-b {_fmt(self.mean_tau)}; not tested (no joint draws)."
        head += (
            f", mean tau-b {_fmt(self.mean_tau)} against the {label}'s 95% band {band} "
            f"({_p_text(self.p_value)}; all {self.n_pairs_all} pairs: {_fmt(self.mean_tau_all)})"
        )
        tail = {
            "within_null": "within the band, as in the paper: at equal accuracy the association "
            "vanishes (tau -> 0 as delta -> 0), as shared difficulty alone would make it",
            "shrinks": "smaller than over all pairs but above the band: it shrinks as the gap "
            "does without vanishing, unlike the paper's tau -> 0 as delta -> 0",
            "does_not_shrink": "above the band and no smaller than over all pairs: unlike the "
            "paper's pattern (tau -> 0 as delta -> 0), models of equal accuracy still agree "
            "with each other's correctness beyond what shared difficulty gives",
            "below_null": "below the band: at equal accuracy the association runs the other way",
        }[self.verdict]
        return f"{head}: {tail}."


@dataclasses.dataclass(frozen=True, eq=False)
class Finding(Result):
    """One finding: its topic, its group and its sentence.

    Attributes:
        topic: ``shared_difficulty``, ``pairwise``, ``small_gap``, ``private_signal``,
            ``alignment`` or ``inverted_confidence``.
        group: ``<benchmark>/<label>``.
        text: The sentence.
    """

    topic: str
    group: str
    text: str


@dataclasses.dataclass(frozen=True, eq=False)
class GroupFindings(Result):
    """The findings of one group.

    Attributes:
        group: ``<benchmark>/<label>``.
        findings: The sentences, in the order of the module docstring.
        small_gap: The small-gap control (None without a pairwise section).
        inverted: ``{model: AUROC}`` of the models at or below :data:`INVERTED_AUROC`.
        brief: One line for the list of other groups.
    """

    group: str
    findings: tuple[Finding, ...]
    small_gap: SmallGapControl | None
    inverted: Mapping[str, float]
    brief: str


@dataclasses.dataclass(frozen=True, eq=False)
class Findings(Result):
    """The findings of an analysis: the headline group's list, the others, one caveat block.

    Attributes:
        headline: The headline group's findings (the pooled group when there is one, else the
            first analysed group; None when no group could be analysed).
        others: The other analysed groups' findings, in the analysis' order.
        caveats: What every reader must know before reading them (each once).
        skipped: ``{group: why}`` for groups without cross-model analyses.
    """

    headline: GroupFindings | None
    others: tuple[GroupFindings, ...]
    caveats: tuple[str, ...]
    skipped: Mapping[str, str]

    def lines(self) -> list[str]:
        """The headline findings, then one line per other group (what the terminal prints)."""
        if self.headline is None:
            return ["No group had enough models and items for the cross-model analyses."]
        out = [f.text for f in self.headline.findings]
        out += [f"Other group {g.brief}" for g in self.others]
        return out

    def with_caveat(self, caveat: str, *, first: bool = True) -> Findings:
        """These findings with one more caveat (first by default)."""
        caveats = (caveat, *self.caveats) if first else (*self.caveats, caveat)
        return dataclasses.replace(self, caveats=caveats)

    def to_dict(self) -> dict[str, Any]:
        """The ``findings`` entry of ``summary.json``."""

        def one(g: GroupFindings) -> dict[str, Any]:
            return {
                "group": g.group,
                "findings": [{"topic": f.topic, "text": f.text} for f in g.findings],
                "small_gap_control": None if g.small_gap is None else g.small_gap.to_dict(),
                "inverted_confidence": dict(g.inverted),
                "brief": g.brief,
            }

        return {
            "headline": None if self.headline is None else one(self.headline),
            "others": [one(g) for g in self.others],
            "caveats": list(self.caveats),
            "skipped": dict(self.skipped),
        }


# ---------------------------------------------------------------------------------------------
# The text analyses (run by metacog_metrics.analyze.text)

#: How a rationale is read for inline solving (``summary["inline_solving"]["method"]``).
INLINE_METHOD = "regular-expression features of the rationale; see docs/text_analyses.md"
#: The probes' cross-validation and classifier, as ``summary["text_probes"]`` names them.
PROBE_CV = "StratifiedGroupKFold by item (items sharing a question text are one group)"
PROBE_MODEL = (
    "StandardScaler + LogisticRegression(penalty='l2', solver='newton-cholesky'), scikit-learn"
)


@dataclasses.dataclass(frozen=True, eq=False)
class InlineSolvingGroup(Result):
    """Inline solving in one group: its pair types with and without the inline-solved items.

    Attributes:
        benchmark: Benchmark.
        label: The group's label (as in :class:`GroupAnalysis`).
        reason: Why the group has no inline-solving analysis; None when it has one.
        inline_share: Share of the group's complete-case (item, model) cells solved inline
            (None without cells, or without an analysis).
        pairs: The pair types with and without the inline-solved items (None with ``reason``).
        permutations: Per-pair draws of their p-values.
    """

    benchmark: str
    label: str
    reason: str | None = None
    inline_share: float | None = None
    pairs: InlinePairTypes | None = None
    permutations: int = 0

    @property
    def status(self) -> str:
        """``"ok"`` or ``"absent"``, as in ``summary.json``."""
        return "absent" if self.pairs is None else "ok"

    def to_dict(self) -> dict[str, Any]:
        """The group's entry of ``summary["inline_solving"]["groups"]``."""
        p = self.pairs
        if p is None:
            return {"status": "absent", "reason": self.reason}
        return to_jsonable({
            "status": "ok",
            "inline_share": self.inline_share,
            "pair_types": p.types.to_dict(orient="records"),
            "rnr_share_lost": p.rnr_share_lost,
            "rnr_share_lost_ci": list(p.rnr_share_lost_ci),
            "rnr_share_lost_reason": p.reason,
            "rnr_tau_drop": p.rnr_tau_drop,
            "rnr_tau_drop_ci": list(p.rnr_tau_drop_ci),
            "rnr_tau_with": p.rnr_tau_with,
            "rnr_tau_with_ci": list(p.rnr_tau_with_ci),
            "permutations": self.permutations,
            "n_boot": p.n_boot,
            "min_items": p.min_items,
        })  # fmt: skip


@dataclasses.dataclass(frozen=True, eq=False)
class InlineSolving(Result):
    """Inline solving in the probe rationales (:mod:`metacog_metrics.inline_solving`).

    Attributes:
        reason: Why the section is absent (the records have no rationales); None when run.
        features: The detector's features.
        n_texts: Rationales read.
        n_inline: Rationales flagged as solved inline.
        rates: Each model's share of flagged rationales per benchmark (``inline_rates.csv``).
        per_record: One row per record with a rationale: its features, score and flag
            (``inline_records.csv``).
        groups: Per analysed group, in the analysis' order.
    """

    reason: str | None = None
    features: tuple[str, ...] = ()
    n_texts: int = 0
    n_inline: int = 0
    rates: pd.DataFrame | None = None
    per_record: pd.DataFrame | None = None
    groups: tuple[InlineSolvingGroup, ...] = ()

    @property
    def status(self) -> str:
        """``"ok"`` or ``"absent"``, as in ``summary.json``."""
        return "absent" if self.reason is not None else "ok"

    def by_benchmark(self) -> dict[str, dict[str, InlineSolvingGroup]]:
        """``{benchmark: {label: group}}``, benchmarks in order of first appearance."""
        out: dict[str, dict[str, InlineSolvingGroup]] = {}
        for g in self.groups:
            out.setdefault(g.benchmark, {})[g.label] = g
        return out

    def to_dict(self) -> dict[str, Any]:
        """The ``inline_solving`` entry of ``summary.json``."""
        if self.reason is not None:
            return {"status": "absent", "reason": self.reason}
        rates = self.rates if self.rates is not None else pd.DataFrame()
        return to_jsonable({
            "status": "ok",
            "method": INLINE_METHOD,
            "features": list(self.features),
            "n_texts": self.n_texts,
            "n_inline": self.n_inline,
            "rates": rates.to_dict(orient="records"),
            "groups": {b: {label: g.to_dict() for label, g in labels.items()}
                       for b, labels in self.by_benchmark().items()},
        })  # fmt: skip


@dataclasses.dataclass(frozen=True, eq=False)
class TextProbes(Result):
    """Surface-feature probes of correctness beside Internal and Pop
    (:func:`~metacog_metrics.text_probes.fit_text_probes`).

    Attributes:
        reason: Why the section is absent (the records have no texts); None when run.
        fit: The probes' result (feature sets run or missing, notes, folds, C, resamples).
        table: ``fit.table`` with each row's group ``label`` (``text_probes.csv``; None when
            absent).
    """

    reason: str | None
    fit: TextProbeResult
    table: pd.DataFrame | None = None

    @property
    def status(self) -> str:
        """``"ok"`` or ``"absent"``, as in ``summary.json``."""
        return "absent" if self.reason is not None else "ok"

    def to_dict(self) -> dict[str, Any]:
        """The ``text_probes`` entry of ``summary.json``."""
        fit = self.fit
        if self.reason is not None:
            return to_jsonable({"status": "absent", "reason": self.reason, "missing": fit.missing})
        return to_jsonable({
            "status": "ok",
            "sets": list(fit.sets),
            "missing": fit.missing,
            "fit_by": fit.fit_by,
            "folds": fit.folds,
            "C": fit.c,
            "n_boot": fit.n_boot,
            "cv": PROBE_CV,
            "model": PROBE_MODEL,
            "notes": list(fit.notes),
            "groups": self._by_group(),
        })  # fmt: skip

    def _by_group(self) -> dict[str, dict[str, Any]]:
        """Per benchmark and label: the models' AUROCs, the medians, who beats Internal."""
        out: dict[str, dict[str, Any]] = {}
        if self.table is None:
            return out
        for (bench, label), t in self.table.groupby(["benchmark", "label"], sort=False):
            models = {
                row["model"]: {k: row[k] for k in t.columns if k.startswith("auroc_")
                               or k in ("n_items", "n_correct", "reasoning")}
                for _, row in t.iterrows()
            }  # fmt: skip
            medians = {s: float(t[f"auroc_{s}"].median()) for s in SCORES}
            beats = {s: int((t[f"auroc_{s}"] > medians["internal"]).sum()) for s in self.fit.sets}
            out.setdefault(str(bench), {})[str(label)] = {
                "n_models": len(t),
                "median": medians,
                "models_above_median_internal": beats,
                "models": models,
            }
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class AnalysisResult(Result):
    """Output of :func:`~metacog_metrics.analyze.analyze_records` and
    :func:`~metacog_metrics.pipeline.analyze_files`.

    Attributes:
        records: The validated records analysed.
        summary: The summary (what ``summary.json`` holds; plain JSON types).
        tables: ``{name: DataFrame}`` (what ``tables/<name>.csv`` holds).
        groups: ``{(benchmark, probe, confidence_kind): GroupAnalysis}``, with the full result
            objects (null draws, delta curve, loadings, matrices) the report plots.
        out_dir: Folder written by :func:`~metacog_metrics.pipeline.analyze_files` (None for
            :func:`~metacog_metrics.analyze.analyze_records`).
        findings: The findings (:class:`~metacog_metrics.analyze.findings.Findings`): what the
            terminal prints, ``summary["findings"]`` holds and the report shows.
        options: The settings of the run (``summary["parameters"]``).
        inputs: The record files read (``summary["inputs"]``; empty for records in memory).
        warnings: The run's warnings, each group's prefixed with ``<benchmark>/<label>``
            (``summary["warnings"]``).
        inline_solving: The inline-solving analysis (``summary["inline_solving"]``; None when
            not run).
        text_probes: The surface-feature probes (``summary["text_probes"]``; None when not run).
    """

    records: pd.DataFrame
    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame]
    groups: dict[tuple[str, str, str], GroupAnalysis]
    out_dir: Path | None = None
    findings: Findings | None = None
    options: AnalysisOptions = dataclasses.field(default_factory=AnalysisOptions)
    inputs: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    inline_solving: InlineSolving | None = None
    text_probes: TextProbes | None = None

    def to_dict(self) -> dict[str, Any]:
        """The summary (plain JSON types, NaN as None)."""
        return to_jsonable(self.summary)

    def summary_text(self) -> str:
        """A short human summary: a few lines per group."""
        return _summary_text(self)

    def findings_text(self) -> str:
        """The findings as the terminal prints them: the list, then the caveats."""
        if self.findings is None:
            return ""
        lines = ["Findings:"] + [f"  - {line}" for line in self.findings.lines()]
        if self.findings.caveats:
            lines += ["Caveats:"] + [f"  - {c}" for c in self.findings.caveats]
        return "\n".join(lines)

    def with_notice(self, notice: str) -> AnalysisResult:
        """This result with ``notice`` first among the findings' caveats (e.g. that the models
        are simulated, and what truth was planted)."""
        if self.findings is None:
            return self
        return dataclasses.replace(self, findings=self.findings.with_caveat(notice))


def _p_text(x: Any) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "p n/a"
    return f"p = {x:.3g}" if x >= 0.001 else "p < 0.001"


def _fmt(x: Any, spec: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    return format(x, spec)


def _summary_text(result: AnalysisResult) -> str:
    s = result.summary
    lines = [
        f"{s['n_records']:,} records, {len(s['models'])} models, {len(result.groups)} group(s)"
        + (f" -> {result.out_dir / 'summary.json'}" if result.out_dir else "")
    ]
    for (bench, _, _), g in result.groups.items():
        d = s["results"][bench][g.label]
        cov = d.get("coverage") or {}
        head = (f"{bench} / {g.label} ({g.confidence_kind}): {d['n_models']} of {len(cov)} "
                f"models, {d['n_items_union']} items")  # fmt: skip
        if g.coverage_excluded:
            head += (f" ({len(g.coverage_excluded)} model(s) below coverage "
                     f"{s['parameters']['min_coverage']:g} left out)")  # fmt: skip
        lines.append(head)
        if g.skipped:
            lines.append(f"  skipped: {g.skipped}")
        else:
            for name in ("confidence", "correctness"):
                sec = d[name]
                e, b = sec["eigen"], sec["basis"]
                per = b.get("n_items_per_pair") or {}
                how = sec["method"] + (
                    f" (binarised at {g.binarized_at:g})"
                    if name == "confidence" and g.binarized_at is not None
                    else ""
                )
                if b["n_models"] < 2:  # the others left out (constant, too few items)
                    word = "model" if b["n_models"] == 1 else "models"
                    lines.append(f"  {name} ({how}, {b['n_models']} {word}): no pairs to "
                                 "correlate, no factor model")  # fmt: skip
                    continue
                lines.append(
                    f"  {name} ({how}, {b['n_models']} models, {_fmt(per.get('min'), 'd')}-"
                    f"{_fmt(per.get('max'), 'd')} items a pair): first factor "
                    f"{_fmt(e['first_share'], '.1%')} of variance; loadings ~ thresholds "
                    f"quadratic R^2 {_fmt(e['quadratic_r2'])}"
                )  # fmt: skip
            pw = d["pairwise"]
            per = pw["basis"].get("n_items_per_pair") or {}
            tested = s["parameters"].get("permutations") != 0
            nulls = (
                "; "
                + ", ".join(
                    f"{get_null(n).short_label} null {_fmt(pw['nulls'][n]['mean'])} "
                    f"({format_p(pw['nulls'][n]['p_value'])})"
                    for n in null_names()
                )
                if tested
                else "; no permutation test run (--permutations 0): no p-values, no "
                "FDR-significant pairs"
            )
            lines.append(
                f"  pairwise: mean tau-b {_fmt(pw['mean_tau'])} over {pw['n_pairs_valid']} "
                f"pairs ({_fmt(per.get('min'), 'd')}-{_fmt(per.get('max'), 'd')} items a pair, "
                f"median {_fmt(per.get('median'), '.0f')}){nulls}"
            )
            if g.private_signal is not None:
                ps = g.private_signal
                lines.append(
                    f"  private-signal test ({ps.basis_text()}): null mean "
                    f"{_fmt(ps.null_mean)}, one-sided {format_p(ps.p_value)}, detectable "
                    f"shift {_fmt(ps.detectable_shift)}"
                )
            gap = pw.get("small_gap_control")
            if gap:
                lines.append(
                    f"  small-gap control (accuracy gap <= {gap['delta']:g}, {gap['n_pairs']} "
                    f"pairs): mean tau-b {_fmt(gap['mean_tau'])}, base-rate null band "
                    f"{_fmt(gap['null_low'])} to {_fmt(gap['null_high'])} "
                    f"({format_p(gap['p_value'])})"
                )
            al = d["factor_alignment"]
            share = (
                f"{_fmt(pw['fdr_significant_share'], '.1%')} of pairs FDR-significant "
                f"(base-rate, q < {pw['fdr_alpha']:g}); "
                if tested
                else ""
            )
            lines.append(
                f"  {share}factor alignment "
                f"({al['basis']['n_models']} models x {al['basis']['n_items']} complete-case "
                f"items) r {_fmt(al['all']['r'])}, contentious "
                f"({al['contentious']['n_items']} items) {_fmt(al['contentious']['r'])}"
            )
        auc = [(m["auroc_internal"], m["auroc_pop"]) for m in d["per_model"].values()]
        internal = [a for a, _ in auc if a is not None]
        pop = [b for _, b in auc if b is not None]
        if internal:
            lines.append(
                f"  per-model AUROC median: internal {_fmt(float(np.median(internal)))}, "
                f"population {_fmt(float(np.median(pop)) if pop else None)}"
            )
        if g.warnings:
            lines.append(f"  {len(g.warnings)} warning(s): {g.warnings[0]}"
                         + (" ..." if len(g.warnings) > 1 else ""))  # fmt: skip
    return "\n".join(lines)
