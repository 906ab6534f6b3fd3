"""Inline solving: a probe rationale that works the item out instead of judging it.

Reasoning models asked "could you answer this?" often solve the item inside the rationale and
report the outcome as their confidence: symbolic work, not self-knowledge. :func:`detect_inline`
finds it with features a reader can check, each a regular expression counted in the rationale
(the final ``Answer: ...`` / ``Confidence: ...`` verdict line is removed first):

===================  ========================================================  ===============
feature              what it counts                                            points
===================  ========================================================  ===============
``operators``        arithmetic with a number on one side (``12 * 4``,         1 each, <= 2
                     ``x^2``, ``$90 + $8``, "12 squared", "twelve times
                     eight"); letters alone (``a + b``) quote a formula
``equations``        ``lhs = rhs`` (not ``==``) and congruences ``≡``          1 each, <= 3
``computations``     evaluated arithmetic: an operator, then ``= <number>``,   3
                     with a number before the ``=`` (``7 * 8 = 56``,
                     ``3x + 5 = 20``, ``C(6,3) = 20``)
``equals_chain``     two or more ``=`` in one sentence (``a = b = c``)         2
``steps``            numbered steps (``Step 2:``, ``2)``, a line ``2.``)        1 each from 2, <= 2
``convergence``      conclusions about the item: "therefore", "thus", "hence"  1 each, <= 2
                     (not "therefore I ..."), "which means", "we get 17", "so"
                     + a clause about the item ("so it is hearsay"; not "so I
                     can", "so yes", "so it's doable")
``code``             kinds of code (fences, ``def f(``, ``return x``,          2 for one kind,
                     ``for i in``, ``+=``, ``np.``, ``import``, ...)            3 for two
``final_answer``     an answer stated inside the rationale ("the answer is     2
                     42", ``\boxed{}``, "I get 17")
``reasoned_answer``  an answer reached in words: a stated answer and a         1
                     conclusion elsewhere ("so it is arbitrary ... the answer
                     is No"), or two conclusions about the item
===================  ========================================================  ===============

The score is the sum of the points. A rationale is flagged when the score reaches
:data:`FLAG_SCORE` *and* it shows work (an operator, a computation, code, two equations or a
reasoned answer): numbered reasons followed by "therefore" are not solving, neither is
recalling a fact ("I recall the answer is 1066") nor restating the item ("something like 2^5
times 2^3"). Precision and recall on hand-labelled rationales (295, five sets) are in the tests
and in ``docs/text_analyses.md``: solving shown in symbols is found, solving written out in
prose (applying a legal rule, eliminating options in words) about half the time.

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
from metacog_metrics.pairwise.common import _bh  # one BH for the package (NaN left out)

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
    "computations",
    "equals_chain",
    "steps",
    "convergence",
    "code",
    "final_answer",
    "reasoned_answer",
)
#: A rationale with at least this score and some work shown is flagged.
FLAG_SCORE = 3
#: Pair types of the breakdown.
PAIR_TYPES: tuple[str, ...] = ("R-R", "R-NR", "NR-NR")

_NUM_WORDS = (
    r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
    r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|"
    r"seventy|eighty|ninety|hundred)(?:-\w+)?"
)
# An operand: a number (a currency sign allowed), a name (x, dt, x_prev) or a bracket.
_LEFT = r"(?:(?<![\w.$])(?:\$?\d+(?:\.\d+)?%?|[a-zA-Z_]\w*)|\))"
_RIGHT = r"\(?-?(?:\$?\d+(?:[.,]\d+)?|[a-zA-Z_]\w*|\()"
_OP = r"(?:\*\*|[+*/^×÷·]|\s-\s)"
_VERDICT = re.compile(
    r"(?:\n|^)\s*(?:final\s+)?(?:answer|confidence|verdict)\s*[:=]\s*[^\n]*\s*$", re.I
)
_PATTERNS: dict[str, re.Pattern[str]] = {
    # 3*4, 2^5, x/2, $9000 + $8000; "3 x 4" is ambiguous (skipped); a minus needs spaces (a
    # date range "1914-1918" is no subtraction). The right operand is a lookahead, so a chain
    # "2000 * 0.015 * 3" counts both of its operators. Only operators with a number on one
    # side count (see _count_operators): letters alone (a + b, r/n) quote a formula.
    "operators": re.compile(rf"({_LEFT})\s*{_OP}\s*(?=({_RIGHT}))"),
    "equations": re.compile(r"(?:(?<![=<>!])=(?!=)|≡)\s*[-+(\w$\\.]"),
    # An evaluated computation: an operator, then "= <number>" in the same clause (7 * 8 = 56,
    # 2(8 + 5) = 26), or a function of numbers set to a number (C(6,3) = 20, gcd(84, 36) = 12).
    # A formula with letters only (E = mc^2) is not one.
    "computations": re.compile(
        rf"{_OP}\s*\(?\$?[\w.]+[^=\n;]{{0,40}}?(?<![<>!=])=(?!=)\s*\$?-?\(?\d|"
        r"\b\w+\(\s*-?\d[\d.,\s]*\)\s*=(?!=)\s*-?\d"
    ),
    "equals_chain": re.compile(r"(?<![=<>!])=(?!=)(?:(?![.;:]\s|[\n=]).)+(?<![<>!])=(?!=)"),
    "steps": re.compile(r"(?:\bstep\s*\d+\s*[:.)-]|(?:^|\n)\s*\d+[.)]\s+(?=\S)|\(\d+\)\s)", re.I),
    # Conclusions drawn about the item, not about the model: "therefore I should answer" and
    # "so yes" judge the model, "so it is hearsay" and "hence x = 5" work the item out.
    "convergence": re.compile(
        r"\b(?:(?:therefore|thus|hence|consequently|it follows)(?!,?\s+(?:i|i'm|i'd|i'll|my|me|"
        r"yes|no|maybe|probably)\b)|so the (?:answer|result|value) (?:is|must be)|"
        r"which gives|this gives|we obtain|giving|that yields|which means|plugging in|"
        r"substituting)\b|\b(?:we|i) get(?=\s+[-$\d(])|"
        r"\bso,?\s+(?!(?:i|i'm|i'd|i'll|i've|yes|no|far|much|many|that|probably|maybe|overall|"
        r"on)\b)(?![^.;\n]{0,30}\b(?:is|are|'s|seems|looks|sounds)\s+(?:un)?(?:likely|hard|easy|"
        r"doable|manageable|difficult|risky|tricky|feasible|possible|impossible|straightforward|"
        r"simple|routine|familiar)\b)(?=[\w(])",
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
# Arithmetic in words: an operator word after a number ("12 squared", "twelve times eight"),
# or "adding 25". Found in two steps (the operator word, then the word before it), which is
# many times faster than one pattern that tries every number word at every position.
_VERBAL_OP = re.compile(
    r"\b(?:plus|minus|times|divided by|multiplied by|over|squared|cubed)\b|"
    r"\b(?:adding|subtracting|multiplying by|dividing by|taking away)\s+(?=\d|"
    rf"{_NUM_WORDS}\b)",
    re.I,
)
_NUMBER_BEFORE = re.compile(rf"(?:\d+(?:\.\d+)?|\b{_NUM_WORDS})\s+$", re.I)


def _verbal_operators(body: str) -> int:
    n = 0
    for m in _VERBAL_OP.finditer(body):
        leading = m.group(0).lower().startswith(("adding", "subtract", "multiplying", "dividing",
                                                  "taking"))  # fmt: skip
        n += bool(leading or _NUMBER_BEFORE.search(body, max(0, m.start() - 24), m.start()))
    return n


# Code: each kind found counts once (a fence, a def, a return, a for loop, ...).
# Each kind with a literal it cannot match without (a cheap test that skips the pattern).
_CODE_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (hint, re.compile(p, re.I))
    for hint, p in (
        ("```", r"```"),
        ("def", r"\bdef\s+\w+\s*\("),
        # "return s * h", "return x", "return x_new", "return hist, edges"; not "return a matrix"
        ("return", r"\breturn\s+(?:(?!a\b)[a-z]\b|\w*[_.]\w+|[\w.]+\s*[-+*/(\[,])"),
        ("for", r"\bfor\s+\w+\s+in\s+\w"),
        ("import", r"\bimport\s+\w+"),
        ("print", r"\bprint\s*\("),
        ("=", r"(?<!\w)\w+\s*(?:\+=|-=|\*=)\s*\S"),
        ("np.", r"\bnp\.\w+"),
        ("while", r"\bwhile\s+[\w(][^\n:]*:"),
        ("[", r"(?<!\w)\w+\[\w+\]\s*="),
    )
)
# Literals a pattern cannot match without ("" for patterns tried on every text).
_HINTS: dict[str, tuple[str, ...]] = {
    "operators": ("+", "*", "/", "^", "×", "÷", "·", " - "),
    "equations": ("=", "≡"),
    "computations": ("=",),
    "equals_chain": ("=",),
    "steps": tuple("0123456789"),
}
# Operators alone reach 2 points: "2^5 times 2^3" restates an item, it computes nothing.
_CAPS = {"operators": 2, "equations": 3, "steps": 2, "convergence": 2}
_WEIGHTS = {
    "operators": 1,
    "equations": 1,
    "computations": 3,
    "equals_chain": 2,
    "steps": 1,
    "convergence": 1,
    "final_answer": 2,
    "reasoned_answer": 1,
}


def strip_verdict(text: str) -> str:
    """The rationale without its final verdict line (``Answer: Yes``, ``Confidence: 80``)."""
    return _VERDICT.sub("", str(text)).rstrip()


def _count(name: str, body: str) -> int:
    """Matches of one pattern; operators need a number on one side, computations before the
    ``=`` (``a + b + c = 1`` states a constraint, ``3x + 5 = 20`` computes)."""
    pattern = _PATTERNS[name]
    if name == "operators":
        found = pattern.finditer(body)
        return sum(any(c.isdigit() for c in m.group(1) + m.group(2)) for m in found)
    if name == "computations":
        n = 0
        for m in pattern.finditer(body):
            eq = body.index("=", m.start())
            n += any(c.isdigit() for c in body[max(0, m.start() - 15) : eq])
        return n
    return len(pattern.findall(body))


def inline_features(text: str | None) -> dict[str, int]:
    """Counts of every feature of :data:`FEATURES` in one rationale (zeros for None/empty)."""
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return dict.fromkeys(FEATURES, 0)
    body = strip_verdict(text)
    lower = body.lower()
    out = {
        name: _count(name, body) if any(h in body for h in _HINTS[name]) else 0 for name in _HINTS
    }
    out["operators"] += _verbal_operators(body)
    out["code"] = sum(bool(h in lower and p.search(body)) for h, p in _CODE_KINDS)
    # An answer reached in words: stated, with a conclusion drawn elsewhere in the rationale
    # ("so it is arbitrary ... The answer is No"); "so the answer is Canberra" alone is one
    # statement, not a derivation.
    answers = [m.span() for m in _PATTERNS["final_answer"].finditer(body)]
    conclusions = list(_PATTERNS["convergence"].finditer(body))
    out["final_answer"], out["convergence"] = len(answers), len(conclusions)
    others = [m for m in conclusions
              if not any(a <= m.end() + 12 and m.start() <= b for a, b in answers)]  # fmt: skip
    # Or a chain of two conclusions about the item ("so diversity is complete ... so the court
    # has jurisdiction"): across the labelled rationales no judgement of the model had two.
    out["reasoned_answer"] = int((bool(answers) and bool(others)) or len(others) >= 2)
    for name in ("computations", "equals_chain", "final_answer"):
        out[name] = min(out[name], 1)
    return {name: out[name] for name in FEATURES}


def _score(counts: dict[str, int]) -> tuple[int, bool]:
    """Points, and the flag: enough points and some work shown.

    Work is an operator, an evaluated computation, code, two equations (one, ``x = 5``, may
    only restate the item) or an answer reached in words (``reasoned_answer``).
    """
    points = 0
    for name in FEATURES:
        n = counts[name]
        if name == "code":
            points += 0 if n == 0 else (2 if n == 1 else 3)  # two kinds of code: a program
            continue
        if name == "steps":
            n = n if n >= 2 else 0  # one numbered line is not a derivation
        n = min(n, _CAPS.get(name, 1))
        points += _WEIGHTS[name] * n
    work = (
        counts["operators"] > 0
        or counts["computations"] > 0
        or counts["code"] > 0
        or counts["equations"] >= 2
        or counts["reasoned_answer"] > 0
    )
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
            there are no R-NR pairs or their mean tau on all items is not (clearly) above 0.
        rnr_share_lost_ci: Percentile item-bootstrap interval of it (95%).
        rnr_tau_drop: The same change on the tau scale, ``with - without`` (stable when the
            R-NR mean on all items is near 0, where the share is not).
        rnr_tau_drop_ci: Its percentile item-bootstrap interval (95%).
        rnr_tau_with: The R-NR mean tau-b on all items.
        rnr_tau_with_ci: Its percentile item-bootstrap interval (95%); when it does not lie
            above 0 the share lost is NaN (with the reason): there is no clear signal to lose.
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
    rnr_tau_with: float = float("nan")
    rnr_tau_with_ci: tuple[float, float] = (float("nan"), float("nan"))


def _pair_kind(fa: bool | None, fb: bool | None) -> str | None:
    if fa is None or fb is None:
        return None
    return "R-R" if fa and fb else ("NR-NR" if not fa and not fb else "R-NR")


class _PairTables:
    """The (dconf level x dperf) cell of every (item, pair), coded once.

    tau-b of each pair over its items, each item counted ``weight[item, pair]`` times, is then
    one weighted bincount and :func:`~metacog_metrics.pairwise.tau_b_from_table` (equal to
    ``scipy.stats.kendalltau`` on the expanded items). A weight of 0 leaves an item out (the
    inline-solved ones), integer weights > 1 repeat it (bootstrap resamples): the codes stay,
    so each resample costs one bincount.
    """

    def __init__(self, c: NDArray, p: NDArray, ia: NDArray, ib: NDArray) -> None:
        dc = value_ties(c[:, ia] - c[:, ib])
        dp = (p[:, ia] - p[:, ib]).astype(np.int64) + 1
        n_pairs = dc.shape[1]
        # Dense rank of dconf within each pair's column (its row of the pair's table).
        order = np.argsort(dc, axis=0, kind="stable")
        sorted_dc = np.take_along_axis(dc, order, axis=0)
        new = np.ones_like(sorted_dc, dtype=bool)
        new[1:] = sorted_dc[1:] != sorted_dc[:-1]
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.cumsum(new, axis=0) - 1, axis=0)
        self.levels = int(rank.max()) + 1 if rank.size else 1
        self.n_pairs = n_pairs
        self.code = ((np.arange(n_pairs)[None, :] * self.levels + rank) * 3 + dp).ravel()

    def taus(self, weight: NDArray, min_items: int) -> tuple[NDArray, NDArray]:
        """tau-b per pair under ``(items, pairs)`` weights (NaN below ``min_items`` items),
        and the items counted."""
        size = self.n_pairs * self.levels * 3
        tables = np.bincount(self.code, weights=weight.ravel(), minlength=size)
        tau = tau_b_from_table(tables.reshape(self.n_pairs, self.levels, 3))
        n = weight.sum(axis=0).astype(np.int64)
        return np.where(n >= min_items, tau, np.nan), n


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
    engine: str = "numpy",
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
        engine: Engine of the permutation draws (see
            :func:`~metacog_metrics.pairwise.pair_permutation_test`; ``"numpy"`` by default, so
            a seed gives the same p-values with or without numba).

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
    tables = _PairTables(c, p, ia, ib)
    tau_with, n_with = tables.taus(np.ones_like(kept), 2)
    tau_without, n_without = tables.taus(kept, min_items)

    root = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    perm_seed, boot_seed = root.spawn(2)
    p_with = np.full(ia.size, np.nan)
    p_without = np.full(ia.size, np.nan)
    if permutations > 0 and ia.size:  # one model: no pairs to test
        with_seed, without_seed = perm_seed.spawn(2)
        res = pair_permutation_test(c, p, permutations=permutations, rng=with_seed,
                                    pairs=(ia, ib), workers=1, engine=engine)  # fmt: skip
        p_with = np.where(np.isfinite(tau_with), res.p_value, np.nan)
        seeds = without_seed.spawn(ia.size)
        for k, (a, b) in enumerate(zip(ia, ib, strict=True)):
            if np.isfinite(tau_without[k]):
                rows = kept[:, k] > 0
                res = pair_permutation_test(
                    c[rows][:, [a, b]], p[rows][:, [a, b]], permutations=permutations,
                    rng=seeds[k], workers=1, engine=engine,
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
    with_ci = nan2
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
            means = np.full(n_boot, np.nan)
            rnr_tables = _PairTables(c, p, ia[rnr], ib[rnr])
            rnr_kept = kept[:, rnr]
            every = np.ones(int(rnr.sum()), dtype=bool)
            for i in range(n_boot):
                times = np.bincount(gen.integers(0, n_items, n_items), minlength=n_items)
                w = np.repeat(times[:, None].astype(float), every.size, axis=1)
                tw, _ = rnr_tables.taus(w, 2)
                to, _ = rnr_tables.taus(w * rnr_kept, min_items)
                mw, mo = _rnr_mean(tw, every), _rnr_mean(to, every)
                drops[i], means[i] = mw - mo, mw
                if np.isfinite(mw) and mw > 0:
                    shares[i] = 1.0 - mo / mw
            for draws, target in ((shares, "share"), (drops, "drop"), (means, "with")):
                ok = draws[np.isfinite(draws)]
                if ok.size:
                    q = (float(np.quantile(ok, 0.025)), float(np.quantile(ok, 0.975)))
                    if target == "share" and reason is None:
                        ci = q
                    elif target == "drop":
                        drop_ci = q
                    else:
                        with_ci = q
            if reason is None and not with_ci[0] > 0:
                # A share of a signal that may not be there: 1 - without / with swings without
                # bound as "with" nears 0. The drop on the tau scale stays readable.
                reason = (f"the R-NR mean tau-b on all items ({base:.3f}, 95% item bootstrap "
                          f"{with_ci[0]:.3f} to {with_ci[1]:.3f}) is not clearly above 0: "
                          "no clear signal to lose")  # fmt: skip
                lost, ci = float("nan"), nan2
    return InlinePairTypes(pairs, types, lost, ci, int(n_boot), int(min_items), float(fdr_alpha),
                           drop, drop_ci, reason, base, with_ci)  # fmt: skip
