"""Inline solving: a probe rationale that works the item out instead of judging it.

Reasoning models asked "could you answer this?" often solve the item inside the rationale and
report the outcome as their confidence: symbolic work, not self-knowledge. :func:`detect_inline`
finds it with features a reader can check, each a regular expression counted in the rationale
(the final ``Answer: ...`` / ``Confidence: ...`` verdict line is removed first):

=================  ==========================================================  ==========
feature            what it counts                                              points
=================  ==========================================================  ==========
``operators``      arithmetic on numbers or symbols (``12 * 4``, ``x^2``,      1 each, <= 3
                   "12 squared", "adding 25")
``equations``      ``lhs = rhs`` (not ``==``)                                   1 each, <= 3
``equals_chain``   a run of two or more ``=`` in one sentence (``a = b = c``)   2
``steps``          numbered steps (``Step 2:``, ``2)``, a line ``2.``)          1 each from 2, <= 2
``convergence``    "therefore", "thus", "hence", "so the answer is", "we get"   1 each, <= 2
``code``           code (fences, ``def f(``, ``return``, ``for i in``, ``+=``)  2
``final_answer``   an answer stated inside the rationale ("the answer is 42")  2
=================  ==========================================================  ==========

The score is the sum of the points. A rationale is flagged when the score reaches
:data:`FLAG_SCORE` *and* it shows work (an operator, an equation or code): numbered reasons
followed by "therefore" are not solving, and neither is recalling a fact ("I recall the answer
is 1066"). Precision and recall on a hand-labelled set of rationales are in the tests and in
``docs/text_analyses.md``.

:func:`inline_pairwise` then repeats the pairwise analysis by pair type (R-R, R-NR, NR-NR)
without the inline-solved items, per pair on the items neither model solved inline, and gives
the share of the R-NR signal that disappears without them, with an item-bootstrap interval.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from metacog_metrics._conventions import value_ties
from metacog_metrics._result import Result
from metacog_metrics.pairwise import pair_permutation_test, tau_b_from_table

__all__ = [
    "FEATURES",
    "FLAG_SCORE",
    "InlineDetection",
    "InlinePairTypes",
    "detect_inline",
    "inline_features",
    "inline_pairwise",
    "inline_rates",
    "strip_verdict",
]

#: Feature names, in table order.
FEATURES: tuple[str, ...] = (
    "operators",
    "equations",
    "equals_chain",
    "steps",
    "convergence",
    "code",
    "final_answer",
)
#: A rationale with at least this score and some work shown is flagged.
FLAG_SCORE = 3
#: Pair types of the breakdown.
PAIR_TYPES: tuple[str, ...] = ("R-R", "R-NR", "NR-NR")

_NUM = r"(?:\d+(?:[.,]\d+)?|[a-zA-Z]\b|\))"
_VERDICT = re.compile(
    r"(?:\n|^)\s*(?:final\s+)?(?:answer|confidence|verdict)\s*[:=]\s*[^\n]*\s*$", re.I
)
_PATTERNS: dict[str, re.Pattern[str]] = {
    # 3*4, 3 x 4 is ambiguous (skip), 2^5, a/b, 3 + 4; a minus needs spaces (dates "1914-1918").
    "operators": re.compile(
        rf"(?<![\w.])(?:\d+(?:\.\d+)?|[a-zA-Z]|\))\s*(?:[+*/^×÷·]|\s-\s|\*\*)\s*\(?-?{_NUM}"
    ),
    "verbal_operators": re.compile(
        r"\b\d+(?:\.\d+)?\s+(?:plus|minus|times|divided by|multiplied by|over|squared|cubed)\b|"
        r"\b(?:adding|subtracting|multiplying by|dividing by)\s+\d",
        re.I,
    ),
    "equations": re.compile(r"(?<![=<>!])=(?!=)\s*[-+(\w$\\.]"),
    "equals_chain": re.compile(r"(?<![=<>!])=(?!=)(?:(?![.;:]\s|[\n=]).)+(?<![<>!])=(?!=)"),
    "steps": re.compile(r"(?:\bstep\s*\d+\s*[:.)-]|(?:^|\n)\s*\d+[.)]\s+(?=\S)|\(\d+\)\s)", re.I),
    "convergence": re.compile(
        r"\b(?:therefore|thus|hence|consequently|so the (?:answer|result|value) (?:is|must be)|"
        r"which gives|this gives|we get|we obtain|i get|giving|it follows|that yields|"
        r"plugging in|substituting)\b",
        re.I,
    ),
    "code": re.compile(
        r"(?:```|\bdef\s+\w+\s*\(|\breturn\b\s+\S|\bfor\s+\w+\s+in\s+\w|\bimport\s+\w+|"
        r"\bprint\s*\(|\w+\s*(?:\+=|-=|\*=)\s*\S|\bnp\.\w+|\bwhile\s+[\w(]+.*:|"
        r"\w+\[\w+\]\s*=)",
        re.I,
    ),
    "final_answer": re.compile(
        r"(?:\b(?:the|my|final) (?:answer|result|value|solution) "
        r"(?:is|would be|comes out (?:to|as)|=)\s*[:$]?\s*[-\w($\\]|\\boxed\{|"
        r"\bso (?:it|this|that) (?:is|equals|comes to)\s+-?\d|"
        r"\b(?:i get|we get|gives|equals|comes (?:out )?to)\s+\$?-?\d[\d.,/]*\s*(?:[.,;]|$))",
        re.I | re.M,
    ),
}
_CAPS = {"operators": 3, "equations": 3, "steps": 2, "convergence": 2}
_WEIGHTS = {
    "operators": 1,
    "equations": 1,
    "equals_chain": 2,
    "steps": 1,
    "convergence": 1,
    "code": 2,
    "final_answer": 2,
}
_WORK = ("operators", "equations", "code")


def strip_verdict(text: str) -> str:
    """The rationale without its final verdict line (``Answer: Yes``, ``Confidence: 80``)."""
    return _VERDICT.sub("", str(text)).rstrip()


def inline_features(text: str | None) -> dict[str, int]:
    """Counts of every feature of :data:`FEATURES` in one rationale (zeros for None/empty)."""
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return dict.fromkeys(FEATURES, 0)
    body = strip_verdict(text)
    out = {name: len(_PATTERNS[name].findall(body)) for name in FEATURES}
    out["operators"] += len(_PATTERNS["verbal_operators"].findall(body))
    out["equals_chain"] = min(out["equals_chain"], 1)
    out["code"] = min(out["code"], 1)
    out["final_answer"] = min(out["final_answer"], 1)
    return out


def _score(counts: dict[str, int]) -> tuple[int, bool]:
    points = 0
    for name in FEATURES:
        n = counts[name]
        if name == "steps":
            n = n if n >= 2 else 0  # one numbered line is not a derivation
        n = min(n, _CAPS.get(name, 1))
        points += _WEIGHTS[name] * n
    work = any(counts[name] > 0 for name in _WORK)
    return points, bool(work and points >= FLAG_SCORE)


@dataclasses.dataclass(frozen=True, eq=False)
class InlineDetection(Result):
    """Per-record inline-solving features, score and flag.

    Attributes:
        table: One row per input text: the :data:`FEATURES` counts, ``inline_score`` and
            ``inline_solved`` (bool; False for a missing text), with the input's index.
        n_texts: Texts that were present (not None/NaN/empty).
    """

    table: pd.DataFrame
    n_texts: int

    @property
    def flag(self) -> NDArray[np.bool_]:
        """``inline_solved`` as a bool array."""
        return self.table["inline_solved"].to_numpy(dtype=bool)

    @property
    def score(self) -> NDArray[np.int64]:
        """``inline_score`` as an int array."""
        return self.table["inline_score"].to_numpy(dtype=np.int64)


def detect_inline(texts: Sequence[str | None] | pd.Series) -> InlineDetection:
    """Detect inline solving in probe rationales.

    Args:
        texts: Rationales (None/NaN where a record has none).

    Returns:
        An :class:`InlineDetection` (rows in input order, the Series' index kept).
    """
    series = texts if isinstance(texts, pd.Series) else pd.Series(list(texts), dtype=object)
    rows = []
    present = 0
    for text in series.tolist():
        ok = isinstance(text, str) and text.strip() != ""
        present += ok
        counts = inline_features(text if ok else None)
        score, flag = _score(counts)
        rows.append({**counts, "inline_score": score, "inline_solved": flag})
    table = pd.DataFrame(rows, index=series.index, columns=[*FEATURES, "inline_score",
                                                              "inline_solved"])  # fmt: skip
    table["inline_solved"] = table["inline_solved"].astype(bool)
    return InlineDetection(table, int(present))


def inline_rates(records: pd.DataFrame, flags: ArrayLike) -> pd.DataFrame:
    """Share of rationales flagged, per model and benchmark.

    Args:
        records: Records with ``model``, ``benchmark`` and ``probe_text``.
        flags: Per row of ``records``, whether its rationale is inline-solved.

    Returns:
        One row per (benchmark, model): ``n_texts``, ``n_inline``, ``inline_rate`` and
        ``reasoning`` (when the records have it).
    """
    f = np.asarray(flags, dtype=bool)
    if f.shape != (len(records),):
        raise ValueError(f"{f.size} flags for {len(records)} records")
    has = records["probe_text"].map(lambda t: isinstance(t, str) and t.strip() != "")
    frame = pd.DataFrame(
        {
            "benchmark": records["benchmark"].astype(str).to_numpy(),
            "model": records["model"].astype(str).to_numpy(),
            "has_text": has.to_numpy(dtype=bool),
            "inline": f,
        }
    )
    if "reasoning" in records:
        frame["reasoning"] = records["reasoning"].to_numpy(dtype=object)
    frame = frame[frame["has_text"]]
    keys = ["benchmark", "model"]
    out = frame.groupby(keys, sort=False).agg(
        n_texts=("inline", "size"), n_inline=("inline", "sum")
    )
    out["inline_rate"] = out["n_inline"] / out["n_texts"]
    if "reasoning" in frame:
        out["reasoning"] = frame.groupby(keys, sort=False)["reasoning"].first()
    return out.reset_index()


# --------------------------------------------------------------------------------------------
# Pairwise calibration by pair type, with and without the inline-solved items
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class InlinePairTypes(Result):
    """Pairwise tau-b by pair type, on all items and without the inline-solved ones.

    "Without" means, for each pair, the items that neither model of the pair solved inline.

    Attributes:
        pairs: One row per model pair: ``model_a``, ``model_b``, ``pair_type``, ``tau_with``,
            ``tau_without``, ``n_items_with``, ``n_items_without``, and the base-rate-null
            permutation p-values ``p_with``/``p_without`` (NaN when not run).
        types: One row per pair type: pairs, mean and median tau with and without, the mean
            items kept, and the share of pairs significant after BH (``q < fdr_alpha``).
        rnr_share_lost: Share of the R-NR signal (mean tau-b over R-NR pairs on all items)
            that disappears without the inline-solved items: ``1 - without / with``; NaN when
            there are no R-NR pairs or their mean tau on all items is not above 0.
        rnr_share_lost_ci: Percentile item-bootstrap interval of it (95%).
        rnr_tau_drop: The same change on the tau scale, ``with - without`` (stable when the
            R-NR mean on all items is near 0, where the share is not).
        rnr_tau_drop_ci: Its percentile item-bootstrap interval (95%).
        reason: Why the share is NaN (None when it is defined).
        n_boot: Bootstrap resamples.
        min_items: Fewest items a pair needs for a tau without inline items.
        fdr_alpha: BH level.
    """

    pairs: pd.DataFrame
    types: pd.DataFrame
    rnr_share_lost: float
    rnr_share_lost_ci: tuple[float, float]
    n_boot: int
    min_items: int
    fdr_alpha: float
    rnr_tau_drop: float = float("nan")
    rnr_tau_drop_ci: tuple[float, float] = (float("nan"), float("nan"))
    reason: str | None = None


def _pair_kind(fa: bool | None, fb: bool | None) -> str | None:
    if fa is None or fb is None:
        return None
    return "R-R" if fa and fb else ("NR-NR" if not fa and not fb else "R-NR")


_MAX_CELLS = 1 << 22  # table cells (pairs x dconf levels x 3) built in one pass


def _taus(c: NDArray, p: NDArray, weight: NDArray, ia: NDArray, ib: NDArray, min_items: int
          ) -> tuple[NDArray, NDArray]:  # fmt: skip
    """tau-b of each pair over its items, each item counted ``weight[item, pair]`` times.

    A weight of 0 leaves the item out (the inline-solved ones), integer weights > 1 repeat it
    (bootstrap resamples). The (dconf level x dperf) table of every pair is one weighted
    bincount, and :func:`~metacog_metrics.pairwise.tau_b_from_table` gives its tau-b (equal to
    ``scipy.stats.kendalltau`` on the expanded items).
    """
    dc = value_ties(c[:, ia] - c[:, ib])
    dp = (p[:, ia] - p[:, ib]).astype(np.int64) + 1
    n = weight.sum(axis=0).astype(np.int64)
    levels, inv = np.unique(dc, return_inverse=True)
    inv = inv.reshape(dc.shape)
    n_pairs, n_levels = ia.size, levels.size
    if n_pairs * n_levels * 3 <= _MAX_CELLS:
        code = (np.arange(n_pairs)[None, :] * n_levels + inv) * 3 + dp
        tables = np.bincount(code.ravel(), weights=weight.ravel(),
                             minlength=n_pairs * n_levels * 3)  # fmt: skip
        tau = tau_b_from_table(tables.reshape(n_pairs, n_levels, 3))
    else:  # many distinct dconf values (continuous confidence): one pair at a time
        tau = np.empty(n_pairs)
        for k in range(n_pairs):
            lv, iv = np.unique(dc[:, k], return_inverse=True)
            t = np.bincount(iv * 3 + dp[:, k], weights=weight[:, k], minlength=lv.size * 3)
            tau[k] = tau_b_from_table(t.reshape(lv.size, 3))
    return np.where(n >= min_items, tau, np.nan), n


def _bh(p: NDArray) -> NDArray:
    from scipy.stats import false_discovery_control

    q = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        q[ok] = false_discovery_control(p[ok], method="bh")
    return q


def _rnr_mean(taus: NDArray, mask: NDArray) -> float:
    sub = taus[mask]
    sub = sub[np.isfinite(sub)]
    return float(sub.mean()) if sub.size else float("nan")


def inline_pairwise(
    conf: ArrayLike,
    perf: ArrayLike,
    inline: ArrayLike,
    *,
    models: Sequence[str],
    reasoning: Sequence[bool | None],
    permutations: int = 1000,
    n_boot: int = 200,
    min_items: int = 10,
    fdr_alpha: float = 0.05,
    rng: int | np.random.SeedSequence | None = 0,
) -> InlinePairTypes:
    """Pairwise tau-b by pair type with and without the inline-solved items.

    Args:
        conf: ``(items, models)`` confidence, complete.
        perf: ``(items, models)`` 0/1 correctness, complete.
        inline: ``(items, models)`` inline-solved flags (of each model's rationale).
        models: Model names.
        reasoning: Per model, its reasoning flag (None when unknown: its pairs get no type).
        permutations: Base-rate-null draws per pair for the per-pair p-values (0 skips them).
        n_boot: Item-bootstrap resamples of the R-NR share lost (0 skips the interval).
        min_items: Fewest items kept for a pair's tau without inline items.
        fdr_alpha: BH level of the share of significant pairs.
        rng: Seed.

    Returns:
        An :class:`InlinePairTypes`.

    Raises:
        ValueError: On shapes that do not agree.
    """
    c = np.asarray(conf, dtype=float)
    p = np.asarray(perf, dtype=float)
    flags = np.asarray(inline, dtype=bool)
    if c.ndim != 2 or c.shape != p.shape or c.shape != flags.shape:
        raise ValueError(
            f"conf, perf and inline must be (items, models) of one shape; got {c.shape}, "
            f"{p.shape}, {flags.shape}"
        )
    n_items, m = c.shape
    if len(models) != m or len(reasoning) != m:
        raise ValueError(f"{len(models)} model names and {len(reasoning)} flags for {m} models")
    ia, ib = np.triu_indices(m, k=1)
    kinds = np.array([_pair_kind(reasoning[a], reasoning[b]) or "" for a, b in zip(ia, ib)])
    kept = (~flags[:, ia] & ~flags[:, ib]).astype(float)  # (items, pairs): neither solved inline
    tau_with, n_with = _taus(c, p, np.ones_like(kept), ia, ib, 2)
    tau_without, n_without = _taus(c, p, kept, ia, ib, min_items)

    root = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    perm_seed, boot_seed = root.spawn(2)
    p_with = np.full(ia.size, np.nan)
    p_without = np.full(ia.size, np.nan)
    if permutations > 0:
        with_seed, without_seed = perm_seed.spawn(2)
        res = pair_permutation_test(c, p, permutations=permutations, rng=with_seed,
                                    pairs=(ia, ib), workers=1, engine="numpy")  # fmt: skip
        p_with = np.where(np.isfinite(tau_with), res.p_value, np.nan)
        seeds = without_seed.spawn(ia.size)
        for k, (a, b) in enumerate(zip(ia, ib, strict=True)):
            if np.isfinite(tau_without[k]):
                rows = kept[:, k] > 0
                res = pair_permutation_test(
                    c[rows][:, [a, b]], p[rows][:, [a, b]], permutations=permutations,
                    rng=seeds[k], workers=1, engine="numpy",
                )  # fmt: skip
                p_without[k] = float(res.p_value[0])
    q_with, q_without = _bh(p_with), _bh(p_without)

    pairs = pd.DataFrame(
        {
            "model_a": [models[a] for a in ia],
            "model_b": [models[b] for b in ib],
            "pair_type": [k or None for k in kinds],
            "tau_with": tau_with,
            "tau_without": tau_without,
            "n_items_with": n_with,
            "n_items_without": n_without,
            "p_with": p_with,
            "p_without": p_without,
            "q_with": q_with,
            "q_without": q_without,
        }
    )
    rows: list[dict[str, Any]] = []
    for kind in PAIR_TYPES:
        mask = kinds == kind
        if not mask.any():
            continue
        tw, to = tau_with[mask], tau_without[mask]

        def share(q: NDArray) -> float:
            ok = np.isfinite(q)
            return float((q[ok] < fdr_alpha).mean()) if ok.any() else float("nan")

        rows.append(
            {
                "pair_type": kind,
                "n_pairs": int(mask.sum()),
                "n_pairs_without": int(np.isfinite(to).sum()),
                "mean_tau_with": float(np.nanmean(tw)) if np.isfinite(tw).any() else np.nan,
                "mean_tau_without": float(np.nanmean(to)) if np.isfinite(to).any() else np.nan,
                "median_tau_with": float(np.nanmedian(tw)) if np.isfinite(tw).any() else np.nan,
                "median_tau_without": (
                    float(np.nanmedian(to)) if np.isfinite(to).any() else np.nan
                ),
                "mean_items_with": float(n_with[mask].mean()),
                "mean_items_without": float(n_without[mask].mean()),
                "fdr_share_with": share(q_with[mask]),
                "fdr_share_without": share(q_without[mask]),
            }
        )
    types = pd.DataFrame(rows)

    rnr = kinds == "R-NR"
    nan2 = (float("nan"), float("nan"))
    lost, ci, drop, drop_ci, reason = float("nan"), nan2, float("nan"), nan2, None
    base = _rnr_mean(tau_with, rnr) if rnr.any() else float("nan")
    without = _rnr_mean(tau_without, rnr) if rnr.any() else float("nan")
    if not rnr.any():
        reason = "no R-NR pairs"
    elif not np.isfinite(without):
        reason = f"no R-NR pair keeps {min_items} items without the inline-solved ones"
    elif not (np.isfinite(base) and base > 0):
        reason = "the R-NR mean tau-b on all items is not above 0: no signal to lose"
    if np.isfinite(base) and np.isfinite(without):
        drop = base - without
        lost = 1.0 - without / base if reason is None else float("nan")
        if n_boot > 0:
            gen = np.random.default_rng(boot_seed)
            shares = np.full(n_boot, np.nan)
            drops = np.full(n_boot, np.nan)
            ra, rb = ia[rnr], ib[rnr]
            every = np.ones(ra.size, dtype=bool)
            for i in range(n_boot):
                times = np.bincount(gen.integers(0, n_items, n_items), minlength=n_items)
                w = np.repeat(times[:, None].astype(float), ra.size, axis=1)
                tw, _ = _taus(c, p, w, ra, rb, 2)
                to, _ = _taus(c, p, w * kept[:, rnr], ra, rb, min_items)
                mw, mo = _rnr_mean(tw, every), _rnr_mean(to, every)
                drops[i] = mw - mo
                if np.isfinite(mw) and mw > 0:
                    shares[i] = 1.0 - mo / mw
            for draws, target in ((shares, "share"), (drops, "drop")):
                ok = draws[np.isfinite(draws)]
                if ok.size:
                    q = (float(np.quantile(ok, 0.025)), float(np.quantile(ok, 0.975)))
                    if target == "share" and reason is None:
                        ci = q
                    elif target == "drop":
                        drop_ci = q
    return InlinePairTypes(pairs, types, lost, ci, int(n_boot), int(min_items), float(fdr_alpha),
                           drop, drop_ci, reason)  # fmt: skip
