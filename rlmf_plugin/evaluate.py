"""``metacog rlmf eval``: factual and faithful calibration of a model's harness runs, before/after.

Inputs are record tables and lm-eval / Inspect outputs (through ``metacog collect``). Each item
may have several *attempts*: the epochs of an Inspect ``--epochs k`` run (all are read), separate
runs of the same model (one per path given, e.g. lm-eval with sampling and different seeds), or a
record table's ``epoch`` column. An attempt has a stated confidence (the verbal confidence of
``probe``, ``numeric`` by default), a grade and an extracted answer.

Factual calibration, over attempts: ECE (10 equal-width bins), Brier score and AUROC of the
stated confidence for correctness (:mod:`metacog_metrics.calibration`).

Faithful calibration (RLMF; Yona et al. 2024), over attempts of items with at least two:
the intrinsic confidence ``g`` of an attempt is the share of the item's attempts whose answer is
equivalent to its own (itself included; graded-correct answers are one class, others are
grouped by the benchmark's normaliser, math through math-verify, exactly as ``rlmf build``),
and its faithfulness is ``1 - |c - g|``. ``MFG`` is the mean faithfulness; ``cMFG`` the mean
over 10 equal-width bins of ``g`` of the bin's mean faithfulness, over the bins that hold
attempts (the official ``get_cmfg_mfg`` counts empty bins as 0 and leaves out ``g == 1``
because of ``np.digitize``; with k samples ``g`` takes at most k values, so both would measure
the bin layout rather than faithfulness); ``cMFG*`` the authors' equal-mass variant, each of
10 bins weighted by its width on the ``g`` axis.

Before vs after: the items both runs graded are resampled (paired bootstrap, all attempts of an
item together) and every metric's difference gets a percentile interval.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd

from metacog_metrics import Result

__all__ = [
    "METRICS",
    "EvalResult",
    "attempt_table",
    "evaluate_runs",
    "load_attempts",
    "run_metrics",
]

#: Metric name -> (label, whether higher is better).
METRICS: dict[str, tuple[str, bool]] = {
    "accuracy": ("accuracy", True),
    "ece": ("ECE", False),
    "brier": ("Brier", False),
    "auroc": ("AUROC", True),
    "mfg": ("MFG", True),
    "cmfg": ("cMFG", True),
    "cmfg_star": ("cMFG*", True),
}
_VERBAL = ("verbal_numeric", "verbal_binary")


# --------------------------------------------------------------------------------------------
# Reading attempts
# --------------------------------------------------------------------------------------------


def load_attempts(paths: Sequence[str | PathLike[str]]) -> pd.DataFrame:
    """Records of every attempt, with an ``attempt`` number per (model, benchmark, item)
    (:func:`rlmf_plugin.dataset.load_records`).

    Raises:
        FileNotFoundError: A path does not exist.
        ValueError: Nothing readable (the message names the paths).
    """
    from rlmf_plugin.dataset import load_records

    return load_records(paths)[0]


def _probe(records: pd.DataFrame, probe: str | None) -> str:
    verbal = records[records["confidence_kind"].isin(_VERBAL)]
    probes = sorted(verbal["probe"].dropna().unique())
    if probe is not None:
        if probe not in probes:
            raise ValueError(
                f"no verbal confidence for probe {probe!r}; probes with one: {probes or 'none'}"
            )
        return probe
    if "numeric" in probes:
        return "numeric"
    if len(probes) == 1:
        return probes[0]
    raise ValueError(f"several probes carry a verbal confidence {probes}: choose one with --probe")


def attempt_table(
    records: pd.DataFrame, probe: str | None = None, *, judge: Any = None
) -> pd.DataFrame:
    """One row per attempt: ``model, benchmark, item_id, attempt, confidence, correct, answer``
    and the intrinsic confidence ``g`` (NaN for items with one attempt), computed as training's
    on-policy target computes it (:mod:`rlmf_plugin.consistency`): answer equivalence, or
    ``judge``'s consistency verdicts (an LLM judge, as the official code)."""
    from rlmf_plugin.consistency import agreement, answer_class_labels, judged_agreement

    probe = _probe(records, probe)
    rows = records[(records["probe"] == probe) & records["confidence_kind"].isin(_VERBAL)]
    keep = ["model", "benchmark", "item_id", "attempt", "confidence", "correct"]
    out = rows[keep + (["answer"] if "answer" in rows else [])].copy()
    if "answer" not in out:
        out["answer"] = None
    out = out.drop_duplicates(["model", "benchmark", "item_id", "attempt"])
    out = out[out["correct"].notna()].reset_index(drop=True)
    g = np.full(len(out), np.nan)
    answers_all = [None if pd.isna(a) else str(a) for a in out["answer"].to_numpy()]
    ys_all = out["correct"].to_numpy(float)
    groups = out.groupby(["model", "benchmark", "item_id"], sort=False, observed=True).indices
    for (_, bench, _), idx in groups.items():
        if len(idx) < 2:
            continue
        answers = [answers_all[i] for i in idx]
        if judge is not None:
            g[idx] = judged_agreement(answers, judge)
        else:
            g[idx] = agreement(answer_class_labels(str(bench), answers, list(ys_all[idx])))
    out["intrinsic"] = g
    out.attrs["probe"] = probe
    return out


# --------------------------------------------------------------------------------------------
# Metrics (weighted, so that a bootstrap resample is a weight vector)
# --------------------------------------------------------------------------------------------


def _wmean(x: np.ndarray, w: np.ndarray) -> float:
    ok = np.isfinite(x) & (w > 0)
    return float(np.sum(x[ok] * w[ok]) / np.sum(w[ok])) if ok.any() else math.nan


def _ece(c: np.ndarray, y: np.ndarray, w: np.ndarray, n_bins: int) -> float:
    ok = np.isfinite(c) & (w > 0)
    if not ok.any():
        return math.nan
    c, y, w = c[ok], y[ok], w[ok]
    # equal-width bins [k/B, (k+1)/B), the last closed (as metacog_metrics.calibration.ece)
    b = np.clip(np.floor(np.round(c * n_bins, 9)).astype(int), 0, n_bins - 1)
    conf = np.bincount(b, weights=w * c, minlength=n_bins)
    acc = np.bincount(b, weights=w * y, minlength=n_bins)
    return float(np.abs(acc - conf).sum() / w.sum())


def _auroc(c: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Weighted AUROC (ties count 1/2), as ``sklearn.metrics.roc_auc_score(sample_weight=)``.

    Written out (Mann-Whitney over distinct scores) because the paired bootstrap calls it
    thousands of times and scikit-learn's input checks cost more than the statistic; a test
    compares the two.
    """
    ok = np.isfinite(c) & (w > 0)
    c, y, w = c[ok], y[ok], w[ok]
    _, level = np.unique(c, return_inverse=True)
    pos = np.bincount(level, weights=w * y)
    neg = np.bincount(level, weights=w * (1.0 - y))
    n_pos, n_neg = pos.sum(), neg.sum()
    if n_pos == 0 or n_neg == 0:
        return math.nan
    below = np.cumsum(neg) - neg
    return float(np.sum(pos * (below + 0.5 * neg)) / (n_pos * n_neg))


def _cmfg(f: np.ndarray, g: np.ndarray, w: np.ndarray, n_bins: int) -> float:
    ok = np.isfinite(f) & np.isfinite(g) & (w > 0)
    if not ok.any():
        return math.nan
    b = np.clip(np.floor(np.round(g[ok] * n_bins, 9)).astype(int), 0, n_bins - 1)
    tot = np.bincount(b, weights=w[ok] * f[ok], minlength=n_bins)
    cnt = np.bincount(b, weights=w[ok], minlength=n_bins)
    return float(np.mean(tot[cnt > 0] / cnt[cnt > 0]))


def _cmfg_star(f: np.ndarray, g: np.ndarray, w: np.ndarray, n_bins: int) -> float:
    """Equal-mass bins of ``g`` weighted by their width (the official ``get_cmfg_star``)."""
    ok = np.isfinite(f) & np.isfinite(g) & (w > 0)
    if not ok.any():
        return math.nan
    order = np.argsort(g[ok], kind="stable")
    fs, gs = f[ok][order], g[ok][order]
    # the weights are whole resample counts: repeat, then split into equal-mass slices as the
    # official code does (the first n % k bins one larger)
    reps = np.round(w[ok][order]).astype(int)
    fs, gs = np.repeat(fs, reps), np.repeat(gs, reps)
    n = fs.size
    k = min(n_bins, n)
    sizes = np.full(k, n // k) + (np.arange(k) < n % k)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    f_hat = np.array([fs[s:e].mean() for s, e in zip(starts, ends)])
    lo = np.array([gs[s] if i == 0 else (gs[starts[i] - 1] + gs[s]) / 2
                   for i, s in enumerate(starts)])  # fmt: skip
    hi = np.array([gs[e - 1] if i == k - 1 else (gs[e - 1] + gs[ends[i]]) / 2
                   for i, e in enumerate(ends)])  # fmt: skip
    width = hi - lo
    total = width.sum()
    return float(f_hat.mean() if total == 0 else np.sum(width * f_hat) / total)


def run_metrics(
    table: pd.DataFrame, weights: np.ndarray | None = None, n_bins: int = 10
) -> dict[str, float]:
    """Every metric of :data:`METRICS` over an attempt table (``weights`` per attempt)."""
    c = table["confidence"].to_numpy(float)
    y = table["correct"].to_numpy(float)
    g = table["intrinsic"].to_numpy(float)
    w = np.ones(len(table)) if weights is None else np.asarray(weights, dtype=float)
    brier = (c - y) ** 2
    faith = 1.0 - np.abs(c - g)
    return {
        "accuracy": _wmean(y, w),
        "ece": _ece(c, y, w, n_bins),
        "brier": _wmean(brier, w),
        "auroc": _auroc(c, y, w),
        "mfg": _wmean(faith, w),
        "cmfg": _cmfg(faith, g, w, n_bins),
        "cmfg_star": _cmfg_star(faith, g, w, n_bins),
    }


def _bins(table: pd.DataFrame, n_bins: int) -> dict[str, list[dict[str, Any]]]:
    """Reliability (confidence bins) and faithfulness (intrinsic-confidence bins) tables."""
    c = table["confidence"].to_numpy(float)
    y = table["correct"].to_numpy(float)
    g = table["intrinsic"].to_numpy(float)
    out: dict[str, list[dict[str, Any]]] = {"reliability": [], "faithfulness": []}
    ok = np.isfinite(c)
    b = np.clip(np.floor(np.round(c[ok] * n_bins, 9)).astype(int), 0, n_bins - 1)
    for k in range(n_bins):
        m = b == k
        if m.any():
            out["reliability"].append({"bin": k, "n": int(m.sum()),
                                       "confidence": float(c[ok][m].mean()),
                                       "accuracy": float(y[ok][m].mean())})  # fmt: skip
    ok = np.isfinite(g) & np.isfinite(c)
    b = np.clip(np.floor(np.round(g[ok] * n_bins, 9)).astype(int), 0, n_bins - 1)
    f = 1.0 - np.abs(c[ok] - g[ok])
    for k in range(n_bins):
        m = b == k
        if m.any():
            out["faithfulness"].append({"bin": k, "n": int(m.sum()),
                                        "intrinsic": float(g[ok][m].mean()),
                                        "confidence": float(c[ok][m].mean()),
                                        "faithfulness": float(f[m].mean())})  # fmt: skip
    return out


# --------------------------------------------------------------------------------------------
# Runs and the paired comparison
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EvalResult(Result):
    """``rlmf eval``'s result.

    Attributes:
        probe: The probe whose confidence was evaluated.
        runs: ``after`` (and ``baseline``): model, counts (``n_items``, ``n_attempts``,
            ``n_items_sampled``: items with two attempts or more), ``metrics`` and ``bins``.
        comparison: Per metric (baseline given): ``after``, ``baseline`` and ``difference`` on
            the paired items, its bootstrap ``ci_low``/``ci_high``, ``better`` (the interval
            excludes 0 on the better side), ``worse``; plus ``n_items`` paired.
        n_bootstrap: Resamples of the paired bootstrap.
        seed: Its seed.
        notes: Why a metric is missing, and other remarks.
    """

    probe: str
    runs: dict[str, Any]
    comparison: dict[str, Any] | None
    n_bootstrap: int
    seed: int
    notes: tuple[str, ...]


def _pick_model(table: pd.DataFrame, model: str | None, side: str) -> tuple[str, pd.DataFrame]:
    models = sorted(table["model"].unique())
    if model is None:
        if len(models) != 1:
            flag = "--model" if side == "after" else "--baseline-model"
            raise ValueError(
                f"the {side} runs hold {len(models)} models {models}: pick one with {flag}"
            )
        model = models[0]
    if model not in models:
        raise ValueError(f"no model {model!r} in the {side} runs; models there: {models}")
    return model, table[table["model"] == model].reset_index(drop=True)


def _summary(model: str, t: pd.DataFrame, n_bins: int) -> dict[str, Any]:
    per_item = t.groupby(["benchmark", "item_id"], observed=True).size()
    return {
        "model": model,
        "n_items": len(per_item),
        "n_attempts": len(t),
        "n_items_sampled": int((per_item >= 2).sum()),
        "metrics": run_metrics(t, n_bins=n_bins),
        "bins": _bins(t, n_bins),
    }


def evaluate_runs(
    after: pd.DataFrame,
    baseline: pd.DataFrame | None = None,
    *,
    model: str | None = None,
    baseline_model: str | None = None,
    probe: str | None = None,
    n_bootstrap: int = 2000,
    seed: int = 0,
    n_bins: int = 10,
    alpha: float = 0.05,
    judge: Any = None,
) -> EvalResult:
    """Evaluate attempt records (:func:`load_attempts`) and compare with a baseline.

    Raises:
        ValueError: No verbal confidence for the probe, several models without a choice, or no
            item graded by both runs.
    """
    from tqdm.auto import tqdm

    a_tab = attempt_table(after, probe, judge=judge)
    probe = a_tab.attrs["probe"]
    a_model, a_tab = _pick_model(a_tab, model, "after")
    runs = {"after": _summary(a_model, a_tab, n_bins)}
    notes = []
    if runs["after"]["n_items_sampled"] == 0:
        notes.append(
            "MFG/cMFG need two or more sampled answers per item (Inspect --epochs k, several "
            "runs of the model, or a record table with an epoch column); the runs have one"
        )
    comparison = None
    if baseline is not None:
        b_tab = attempt_table(baseline, probe, judge=judge)
        b_model, b_tab = _pick_model(b_tab, baseline_model, "baseline")
        runs["baseline"] = _summary(b_model, b_tab, n_bins)
        key = ["benchmark", "item_id"]
        common = a_tab[key].drop_duplicates().merge(b_tab[key].drop_duplicates())
        if common.empty:
            raise ValueError("the runs share no graded item: nothing to compare")
        index = {tuple(r): i for i, r in enumerate(common.itertuples(index=False))}
        a_pair = a_tab[a_tab.set_index(key).index.isin(common.set_index(key).index)]
        b_pair = b_tab[b_tab.set_index(key).index.isin(common.set_index(key).index)]
        a_item = np.array([index[t] for t in a_pair[key].itertuples(index=False)])
        b_item = np.array([index[t] for t in b_pair[key].itertuples(index=False)])
        point_a, point_b = run_metrics(a_pair, n_bins=n_bins), run_metrics(b_pair, n_bins=n_bins)
        rng = np.random.default_rng(seed)
        draws = {m: [] for m in METRICS}
        for _ in tqdm(range(n_bootstrap), desc="paired bootstrap", leave=False):
            counts = np.bincount(rng.integers(0, len(common), len(common)), minlength=len(common))
            ma = run_metrics(a_pair, counts[a_item].astype(float), n_bins)
            mb = run_metrics(b_pair, counts[b_item].astype(float), n_bins)
            for m in METRICS:
                draws[m].append(ma[m] - mb[m])
        comparison = {"n_items": len(common)}
        for m, (_, higher) in METRICS.items():
            diff = point_a[m] - point_b[m]
            d = np.asarray(draws[m], dtype=float)
            d = d[np.isfinite(d)]
            lo, hi = np.quantile(d, [alpha / 2, 1 - alpha / 2]) if d.size else (math.nan,) * 2
            better = bool(lo > 0) if higher else bool(hi < 0)
            worse = bool(hi < 0) if higher else bool(lo > 0)
            comparison[m] = {
                "after": point_a[m], "baseline": point_b[m], "difference": diff,
                "ci_low": float(lo), "ci_high": float(hi), "better": better, "worse": worse,
            }  # fmt: skip
    return EvalResult(probe, runs, comparison, int(n_bootstrap), int(seed), tuple(notes))


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}f}"


def result_frame(result: EvalResult) -> pd.DataFrame:
    """The result as a table: one row per metric."""
    rows = []
    for m, (label, higher) in METRICS.items():
        row = {"metric": label, "better": "higher" if higher else "lower"}
        row["after"] = result.runs["after"]["metrics"][m]
        if "baseline" in result.runs:
            row["baseline"] = result.runs["baseline"]["metrics"][m]
        if result.comparison:
            c = result.comparison[m]
            row.update({
                "difference (paired)": c["difference"], "ci_low": c["ci_low"],
                "ci_high": c["ci_high"],
                "verdict": "better" if c["better"] else "worse" if c["worse"] else "no change",
            })  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def result_text(result: EvalResult) -> str:
    """The table as plain text, with the runs' sizes."""
    lines = []
    for side, run in result.runs.items():
        lines.append(f"{side}: {run['model']}: {run['n_items']} items, {run['n_attempts']} "
                     f"attempts, {run['n_items_sampled']} items with sampled answers")  # fmt: skip
    frame = result_frame(result)
    if result.comparison:
        lines.append(f"paired on {result.comparison['n_items']} items, {result.n_bootstrap} "
                     "bootstrap resamples, 95% intervals")  # fmt: skip
    lines.append(frame.to_string(index=False, float_format=lambda v: _f(v)))
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)
