"""The text sections of ``metacog analyze``: inline solving and surface-feature probes.

:func:`text_sections` runs both on the analysed records and returns what goes into
``summary.json`` (``inline_solving`` and ``text_probes``) and the tables
(``inline_rates``, ``<group>__inline_pair_types``, ``<group>__inline_pairs``, ``text_probes``).
A section the records cannot support (no texts, no reasoning flags) gets ``status: "absent"``
and the reason, instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics._result import to_jsonable
from metacog_metrics.analyze.options import POOLED, AnalysisOptions
from metacog_metrics.analyze.results import GroupAnalysis
from metacog_metrics.analyze.summary import safe_name
from metacog_metrics.inline_solving import FEATURES, detect_inline, inline_pairwise, inline_rates
from metacog_metrics.text_probes import SCORES, fit_text_probes

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
) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    if not _has_texts(records, "probe_text"):
        return {"status": "absent", "reason": "the records have no probe_text (probe rationales)"
                " to read"}, {}  # fmt: skip
    det = detect_inline(records["probe_text"])
    rates = inline_rates(records, det.flag)
    # Per record: which rationale was flagged, its score and the feature counts behind it.
    keys = ["model", "benchmark", "item_id", "probe", "confidence_kind"]
    per_record = pd.concat([records[keys].reset_index(drop=True),
                            det.table.reset_index(drop=True)], axis=1)  # fmt: skip
    has = records["probe_text"].map(lambda t: isinstance(t, str) and t.strip() != "")
    tables = {"inline_rates": rates, "inline_records": per_record[has.to_numpy()]}
    flagged = records.assign(_inline=det.flag)
    out: dict[str, Any] = {
        "status": "ok",
        "method": "regular-expression features of the rationale; see docs/text_analyses.md",
        "features": list(FEATURES),
        "n_texts": det.n_texts,
        "n_inline": int(det.flag.sum()),
        "rates": to_jsonable(rates.to_dict(orient="records")),
        "groups": {},
    }
    perms = min(opts.permutations, INLINE_PERMUTATIONS)
    n_boot = min(opts.n_boot, INLINE_BOOT)
    from tqdm.auto import tqdm

    bar = tqdm(groups.items(), total=len(groups), desc="inline solving", leave=False,
               disable=not opts.progress)  # fmt: skip
    for key, g in bar:
        entry: dict[str, Any]
        mat = g.matrices
        if g.skipped:
            entry = {"status": "absent", "reason": f"cross-model analyses skipped: {g.skipped}"}
        elif any(r is None for r in mat.reasoning):
            unknown = [m for m, r in zip(mat.models, mat.reasoning, strict=True) if r is None]
            entry = {"status": "absent", "reason": "no reasoning flags for "
                     f"{len(unknown)} model(s) ({', '.join(unknown[:3])}"
                     f"{' ...' if len(unknown) > 3 else ''}): pair types need a models file "
                     "with reasoning: true/false"}  # fmt: skip
        else:
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
            entry = {
                "status": "ok",
                "inline_share": float(flags.mean()) if flags.size else None,
                "pair_types": res.types.to_dict(orient="records"),
                "rnr_share_lost": res.rnr_share_lost,
                "rnr_share_lost_ci": list(res.rnr_share_lost_ci),
                "rnr_share_lost_reason": res.reason,
                "rnr_tau_drop": res.rnr_tau_drop,
                "rnr_tau_drop_ci": list(res.rnr_tau_drop_ci),
                "rnr_tau_with": res.rnr_tau_with,
                "rnr_tau_with_ci": list(res.rnr_tau_with_ci),
                "permutations": perms,
                "n_boot": n_boot,
                "min_items": res.min_items,
            }
        out["groups"].setdefault(g.benchmark, {})[g.label] = entry
    return to_jsonable(out), tables


def _probe_section(
    records: pd.DataFrame,
    groups: Mapping[tuple[str, str, str], GroupAnalysis],
    opts: AnalysisOptions,
) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    frames = [records]
    for g in groups.values():
        if g.benchmark == POOLED and not (records["benchmark"] == POOLED).any():
            frames.append(_group_rows(records, g).assign(benchmark=POOLED))
    data = pd.concat(frames, ignore_index=True) if len(frames) > 1 else records
    res = fit_text_probes(data, n_boot=opts.n_boot, seed=opts.seed, progress=opts.progress)
    if not res.sets:
        return {"status": "absent", "reason": "the records have no question, probe_text or "
                "solve_text (texts) to read", "missing": res.missing}, {}  # fmt: skip
    labels = {(g.benchmark, g.probe, g.confidence_kind): g.label for g in groups.values()}
    table = res.table.copy()
    keys = zip(table["benchmark"], table["probe"], table["confidence_kind"], strict=True)
    table.insert(2, "label", [labels.get((b, p, k), p) for b, p, k in keys])
    by_group: dict[str, dict[str, Any]] = {}
    for (bench, label), t in table.groupby(["benchmark", "label"], sort=False):
        models = {
            row["model"]: {k: row[k] for k in t.columns if k.startswith("auroc_")
                           or k in ("n_items", "n_correct", "reasoning")}
            for _, row in t.iterrows()
        }  # fmt: skip
        medians = {s: float(t[f"auroc_{s}"].median()) for s in SCORES}
        beats = {s: int((t[f"auroc_{s}"] > medians["internal"]).sum()) for s in res.sets}
        by_group.setdefault(str(bench), {})[str(label)] = {
            "n_models": len(t),
            "median": medians,
            "models_above_median_internal": beats,
            "models": models,
        }
    out = {
        "status": "ok",
        "sets": list(res.sets),
        "missing": res.missing,
        "fit_by": res.fit_by,
        "folds": res.folds,
        "C": res.c,
        "n_boot": res.n_boot,
        "cv": "StratifiedGroupKFold by item (items sharing a question text are one group)",
        "model": "StandardScaler + LogisticRegression(penalty='l2', solver='newton-cholesky'), "
        "scikit-learn",
        "notes": list(res.notes),
        "groups": by_group,
    }
    # The paper's table: benchmark, model, Internal, Pop, QM, QP, QMP (point estimates; the
    # intervals and Q, M, P are in text_probes.csv).
    paper = table[["benchmark", "label", "model"]].rename(columns={"label": "probe"})
    for score, name in (("internal", "Internal"), ("pop", "Pop"), ("QM", "QM"), ("QP", "QP"),
                        ("QMP", "QMP")):  # fmt: skip
        paper[name] = table[f"auroc_{score}"]
    return to_jsonable(out), {"text_probes": table, "text_probes_paper": paper}


def text_sections(
    records: pd.DataFrame,
    groups: Mapping[tuple[str, str, str], GroupAnalysis],
    opts: AnalysisOptions,
) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """Inline solving and surface-feature probes of an analysed record table.

    Args:
        records: The validated records.
        groups: The analysed groups (their complete-case matrices are reused).
        opts: The run's options (seed, bootstrap size, permutations, progress).

    Returns:
        ``({"inline_solving": ..., "text_probes": ...}, tables)``.
    """
    inline, t1 = _inline_section(records, groups, opts)
    probes, t2 = _probe_section(records, groups, opts)
    return {"inline_solving": inline, "text_probes": probes}, {**t1, **t2}
