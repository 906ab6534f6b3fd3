"""The text sections of ``metacog analyze``: inline solving and surface-feature probes.

:func:`text_sections` runs both on the analysed records and returns their result objects
(:class:`~metacog_metrics.analyze.results.InlineSolving`,
:class:`~metacog_metrics.analyze.results.TextProbes`; their ``to_dict()`` is what
``summary.json`` holds under ``inline_solving`` and ``text_probes``) and the tables
(``inline_rates``, ``<group>__inline_pair_types``, ``<group>__inline_pairs``, ``text_probes``).
A section the records cannot support (no texts, no reasoning flags) is absent, with the reason,
instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from metacog_metrics.analyze.options import POOLED, AnalysisOptions
from metacog_metrics.analyze.results import (
    GroupAnalysis,
    InlineSolving,
    InlineSolvingGroup,
    TextProbes,
)
from metacog_metrics.analyze.summary import safe_name
from metacog_metrics.inline_solving import FEATURES, detect_inline, inline_pairwise, inline_rates
from metacog_metrics.text_probes import fit_text_probes

__all__ = ["INLINE_PERMUTATIONS", "text_sections"]

#: Per-pair draws of the inline-solving pairwise p-values (at most; fewer when the run asks).
INLINE_PERMUTATIONS = 1000
#: Bootstrap resamples of the R-NR share lost (at most).
INLINE_BOOT = 200


def _has_texts(records: pd.DataFrame, column: str) -> bool:
    # each distinct value once: records without texts hold only None, and cost nothing
    return column in records and any(
        isinstance(t, str) and t.strip() != "" for t in pd.unique(records[column].dropna())
    )


def _group_rows(records: pd.DataFrame, g: GroupAnalysis) -> pd.DataFrame:
    if g.benchmark == POOLED and not (records["benchmark"] == POOLED).any():
        rows = records[(records["probe"] == g.probe)
                       & (records["confidence_kind"] == g.confidence_kind)].copy()  # fmt: skip
        rows["item_id"] = rows["benchmark"].astype(str) + ":" + rows["item_id"].astype(str)
        return rows
    return records[(records["benchmark"] == g.benchmark) & (records["probe"] == g.probe)
                   & (records["confidence_kind"] == g.confidence_kind)]  # fmt: skip


def _inline_section(
    records: pd.DataFrame,
    groups: Mapping[tuple[str, str, str], GroupAnalysis],
    opts: AnalysisOptions,
) -> tuple[InlineSolving, dict[str, pd.DataFrame]]:
    if not _has_texts(records, "probe_text"):
        return InlineSolving("the records have no probe_text (probe rationales) to read"), {}
    det = detect_inline(records["probe_text"])
    rates = inline_rates(records, det.flag)
    # Per record: which rationale was flagged, its score and the feature counts behind it.
    keys = ["model", "benchmark", "item_id", "probe", "confidence_kind"]
    per_record = pd.concat([records[keys].reset_index(drop=True),
                            det.table.reset_index(drop=True)], axis=1)  # fmt: skip
    has = records["probe_text"].map(lambda t: isinstance(t, str) and t.strip() != "")
    per_record = per_record[has.to_numpy()]
    tables = {"inline_rates": rates, "inline_records": per_record}
    flagged = records.assign(_inline=det.flag)
    perms = min(opts.permutations, INLINE_PERMUTATIONS)
    n_boot = min(opts.n_boot, INLINE_BOOT)
    from tqdm.auto import tqdm

    bar = tqdm(groups.items(), total=len(groups), desc="inline solving", leave=False,
               disable=not opts.progress)  # fmt: skip
    done: list[InlineSolvingGroup] = []
    for key, g in bar:
        mat = g.matrices
        if g.skipped:
            why = f"cross-model analyses skipped: {g.skipped}"
            done.append(InlineSolvingGroup(g.benchmark, g.label, why))
            continue
        if any(r is None for r in mat.reasoning):
            unknown = [m for m, r in zip(mat.models, mat.reasoning, strict=True) if r is None]
            why = (f"no reasoning flags for {len(unknown)} model(s) ({', '.join(unknown[:3])}"
                   f"{' ...' if len(unknown) > 3 else ''}): pair types need a models file with "
                   "reasoning: true/false")  # fmt: skip
            done.append(InlineSolvingGroup(g.benchmark, g.label, why))
            continue
        rows = _group_rows(flagged, g)
        wide = rows.pivot_table(index="item_id", columns="model", values="_inline",
                                aggfunc="max", observed=True)  # fmt: skip
        wide = wide.reindex(index=list(mat.item_ids), columns=list(mat.models))
        flags = wide.eq(True).to_numpy(dtype=bool)  # the reindexed gaps: not inline
        seed = np.random.SeedSequence([opts.seed, *(ord(c) for c in "|".join(key))])
        res = inline_pairwise(mat.confidence, mat.correct, flags, models=mat.models,
                              reasoning=list(mat.reasoning), permutations=perms,
                              n_boot=n_boot, fdr_alpha=opts.fdr_alpha, rng=seed,
                              engine=opts.engine)  # fmt: skip
        prefix = f"{safe_name(g.benchmark)}__{safe_name(g.label)}__"
        tables[prefix + "inline_pair_types"] = res.types
        tables[prefix + "inline_pairs"] = res.pairs
        share = float(flags.mean()) if flags.size else None
        done.append(InlineSolvingGroup(g.benchmark, g.label, None, share, res, perms))
    section = InlineSolving(
        features=tuple(FEATURES),
        n_texts=int(det.n_texts),
        n_inline=int(det.flag.sum()),
        rates=rates,
        per_record=per_record,
        groups=tuple(done),
    )
    return section, tables


def _probe_section(
    records: pd.DataFrame,
    groups: Mapping[tuple[str, str, str], GroupAnalysis],
    opts: AnalysisOptions,
) -> tuple[TextProbes, dict[str, pd.DataFrame]]:
    frames = [records]
    for g in groups.values():
        if g.benchmark == POOLED and not (records["benchmark"] == POOLED).any():
            frames.append(_group_rows(records, g).assign(benchmark=POOLED))
    data = pd.concat(frames, ignore_index=True) if len(frames) > 1 else records
    res = fit_text_probes(data, n_boot=opts.n_boot, seed=opts.seed, progress=opts.progress)
    if not res.sets:
        why = "the records have no question, probe_text or solve_text (texts) to read"
        return TextProbes(why, res), {}
    labels = {(g.benchmark, g.probe, g.confidence_kind): g.label for g in groups.values()}
    table = res.table.copy()
    keys = zip(table["benchmark"], table["probe"], table["confidence_kind"], strict=True)
    table.insert(2, "label", [labels.get((b, p, k), p) for b, p, k in keys])
    # The paper's table: benchmark, model, Internal, Pop, QM, QP, QMP (point estimates; the
    # intervals and Q, M, P are in text_probes.csv).
    paper = table[["benchmark", "label", "model"]].rename(columns={"label": "probe"})
    for score, name in (("internal", "Internal"), ("pop", "Pop"), ("QM", "QM"), ("QP", "QP"),
                        ("QMP", "QMP")):  # fmt: skip
        paper[name] = table[f"auroc_{score}"]
    return TextProbes(None, res, table), {"text_probes": table, "text_probes_paper": paper}


def text_sections(
    records: pd.DataFrame,
    groups: Mapping[tuple[str, str, str], GroupAnalysis],
    opts: AnalysisOptions,
) -> tuple[InlineSolving, TextProbes, dict[str, pd.DataFrame]]:
    """Inline solving and surface-feature probes of an analysed record table.

    Args:
        records: The validated records.
        groups: The analysed groups (their complete-case matrices are reused).
        opts: The run's options (seed, bootstrap size, permutations, progress).

    Returns:
        ``(inline_solving, text_probes, tables)``.
    """
    inline, t1 = _inline_section(records, groups, opts)
    probes, t2 = _probe_section(records, groups, opts)
    return inline, probes, {**t1, **t2}
