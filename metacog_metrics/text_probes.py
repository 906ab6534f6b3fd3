"""Surface-feature probes: how much of a model's correctness the plain wording predicts.

Forty lexical features (:data:`FEATURE_NAMES`: lengths and counts, negations, hedges, causal
words, self-correction such as "wait"/"actually"/"hmm", difficulty and ease words, ...) are
computed on three texts of every record: the question (Q), the probe rationale (M, without its
final verdict line) and the solve trace (P). An L2-regularised logistic regression
(scikit-learn, standardised features) predicts correctness from each feature set Q, M, P, QM,
QP and QMP, cross-validated with folds grouped by item (``StratifiedGroupKFold``: no item is in
two folds, so nothing learnt about an item from one model's record is scored on another's;
items sharing a question text are one group).
The out-of-fold predictions give a ROC-AUC per model, beside Internal (the model's own
confidence; the mean of k samples for sampled confidence) and Pop (the leave-one-out mean
confidence of the other models,
:func:`~metacog_metrics.calibration.population_confidence`), all on the same items, each with
a percentile item-bootstrap interval (the same resamples for every column).

By default one classifier is fitted per (benchmark, probe, confidence kind) on all its models'
records (``fit_by="benchmark"``), and each model's AUROC is read off its own out-of-fold
predictions; ``fit_by="model"`` fits one per model.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from metacog_metrics._result import Result
from metacog_metrics.calibration import population_confidence
from metacog_metrics.inline_solving import strip_verdict

__all__ = [
    "FEATURE_NAMES",
    "FEATURE_SETS",
    "TEXT_COLUMNS",
    "TextProbeResult",
    "cross_validated_scores",
    "fit_text_probes",
    "text_features",
]

#: Feature sets, by the texts they use: Q (question), M (probe rationale), P (solve trace).
FEATURE_SETS: tuple[str, ...] = ("Q", "M", "P", "QM", "QP", "QMP")
#: Record column of each text.
TEXT_COLUMNS: dict[str, str] = {"Q": "question", "M": "probe_text", "P": "solve_text"}
#: Score columns of the table, in order.
SCORES: tuple[str, ...] = ("internal", "pop", *FEATURE_SETS)


_TOKEN = re.compile(r"[\w']+")


@dataclasses.dataclass(frozen=True)
class _Lexicon:
    r"""A word family, counted as whole words, case-insensitively.

    One-word entries are counted from the text's tokens (runs of letters, digits, ``_`` and
    apostrophes: the same matches as ``(?<![\w'])word(?![\w'])``), entries of several words
    ("not sure", "well-known") with one regular expression: many times faster on long texts
    than one alternation tried at every position.
    """

    words: tuple[str, ...]
    single: frozenset[str]
    multi: re.Pattern[str] | None


def _words(*words: str) -> _Lexicon:
    single = frozenset(w.lower() for w in words if _TOKEN.fullmatch(w))
    multi = [w for w in words if not _TOKEN.fullmatch(w)]
    # A several-word entry must not contain a one-word entry of its family (it would count
    # twice, where one alternation counts it once).
    clash = [w for w in multi for t in _TOKEN.findall(w.lower()) if t in single]
    if clash:
        raise ValueError(f"lexicon entries {clash} contain one-word entries of their family")
    pattern = None
    if multi:
        alternatives = "|".join(sorted((re.escape(w).replace(r"\ ", r"\s+") for w in multi),
                                       key=len, reverse=True))  # fmt: skip
        pattern = re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])", re.I)
    return _Lexicon(tuple(words), single, pattern)


_LEXICONS: dict[str, _Lexicon] = {
    "negation": _words("not", "no", "never", "none", "nor", "neither", "cannot", "can't",
                       "don't", "doesn't", "isn't", "won't", "wouldn't", "didn't", "aren't"),
    "hedge": _words("maybe", "might", "perhaps", "likely", "probably", "possibly", "may",
                    "seems", "appears", "suspect", "guess", "presumably", "could be"),
    "uncertainty": _words("unsure", "uncertain", "not sure", "doubt", "unclear", "not certain",
                          "hard to say", "no idea"),
    "certainty": _words("certain", "sure", "confident", "definitely", "clearly", "obviously",
                        "undoubtedly", "certainly", "surely"),
    "causal": _words("because", "since", "therefore", "thus", "hence", "so", "due to",
                     "as a result", "consequently", "as it"),
    "contrast": _words("but", "however", "although", "though", "yet", "whereas", "while"),
    "self_correction": _words("wait", "actually", "hmm", "hold on", "on second thought",
                              "reconsider", "let me re-check", "oops", "scratch that"),
    "difficulty": _words("hard", "difficult", "tricky", "complex", "challenging", "obscure",
                         "niche", "subtle", "demanding", "thorny", "specialised", "specialized",
                         "advanced"),
    "ease": _words("easy", "simple", "straightforward", "basic", "standard", "well-known",
                   "familiar", "routine", "trivial", "elementary"),
    "knowledge": _words("know", "recall", "remember", "knowledge", "learned", "seen"),
    "ignorance": _words("don't know", "do not know", "cannot recall", "can't recall",
                        "don't remember", "do not recall", "not familiar", "unfamiliar"),
    "first_person": _words("i", "me", "my", "i'm", "i'd", "i've", "i'll", "myself"),
    "modal": _words("would", "should", "could", "can", "will", "must", "shall"),
    "probability": _words("chance", "odds", "likelihood", "unlikely", "probable", "percent"),
    "success": _words("correct", "correctly", "right", "accurate", "accurately", "succeed"),
    "failure": _words("wrong", "mistake", "error", "incorrect", "fail", "miss", "confuse"),
    "question_word": _words("what", "which", "who", "whom", "when", "where", "why", "how"),
    "comparison": _words("more", "most", "less", "least", "than", "better", "worse"),
    "quantifier": _words("all", "every", "each", "any", "some", "many", "few", "several"),
    "conditional": _words("if", "unless", "whether", "assuming", "provided", "otherwise"),
    "step_word": _words("first", "then", "next", "finally", "step", "second", "third"),
    "detail": _words("specific", "specifically", "exact", "exactly", "detail", "details",
                     "precise", "particular"),
}  # fmt: skip
#: Each one-word entry's families, and the families with several-word entries.
_FAMILIES_OF: dict[str, tuple[int, ...]] = {}
for _k, _lexicon in enumerate(_LEXICONS.values()):
    for _w in _lexicon.single:
        _FAMILIES_OF[_w] = (*_FAMILIES_OF.get(_w, ()), _k)
_MULTI = [(k, lx.multi) for k, lx in enumerate(_LEXICONS.values()) if lx.multi is not None]
_COUNTS: dict[str, re.Pattern[str]] = {
    "numbers": re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?"),
    "operators": re.compile(r"[-+*/^=<>]"),
    "parentheses": re.compile(r"[()\[\]{}]"),
    "commas": re.compile(r","),
    "question_marks": re.compile(r"\?"),
    "exclamations": re.compile(r"!"),
    "quotes": re.compile(r"[\"“”‘’`]"),
    "colons": re.compile(r"[:;]"),
    "newlines": re.compile(r"\n"),
    "capitalised": re.compile(r"(?<=[a-z,;] )[A-Z][a-z]+"),
}
_LENGTHS: tuple[str, ...] = (
    "log_chars",
    "log_words",
    "sentences",
    "mean_word_length",
    "mean_sentence_words",
    "unique_word_share",
    "long_word_share",
    "digit_share",
)
#: The features of one text, in column order.
FEATURE_NAMES: tuple[str, ...] = (*_LENGTHS, *_LEXICONS, *_COUNTS)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d+(?:\.\d+)?")
_SENTENCE = re.compile(r"[.!?]+(?:\s|$)|\n+")


def _one(text: str) -> list[float]:
    words = _WORD.findall(text)
    n_words = len(words)
    n_sent = max(1, len([s for s in _SENTENCE.split(text) if s.strip()])) if text.strip() else 0
    lengths = [
        float(np.log1p(len(text))),
        float(np.log1p(n_words)),
        float(n_sent),
        float(np.mean([len(w) for w in words])) if words else 0.0,
        n_words / n_sent if n_sent else 0.0,
        len({w.lower() for w in words}) / n_words if n_words else 0.0,
        sum(len(w) >= 9 for w in words) / n_words if n_words else 0.0,
        sum(map(str.isdigit, text)) / len(text) if text else 0.0,
    ]
    lex = [0.0] * len(_LEXICONS)
    for token, n in Counter(_TOKEN.findall(text.lower())).items():
        for k in _FAMILIES_OF.get(token, ()):
            lex[k] += n
    for k, pattern in _MULTI:
        lex[k] += len(pattern.findall(text))
    counts = [float(len(p.findall(text))) for p in _COUNTS.values()]
    return lengths + lex + counts


def text_features(texts: Sequence[Any] | pd.Series, *, rationale: bool = False) -> pd.DataFrame:
    """The :data:`FEATURE_NAMES` features of each text (a missing text counts as empty).

    Args:
        texts: Texts (None/NaN allowed).
        rationale: Remove a final verdict line (``Answer: Yes``, ``Confidence: 80``) first, so
            the features describe the reasoning, not the verdict.

    Returns:
        One row per text, one column per feature (index kept from a Series).
    """
    series = texts if isinstance(texts, pd.Series) else pd.Series(list(texts), dtype=object)
    clean = [t if isinstance(t, str) else "" for t in series.tolist()]
    if rationale:
        clean = [strip_verdict(t) for t in clean]
    cache: dict[str, list[float]] = {}
    rows = []
    for t in clean:
        if t not in cache:
            cache[t] = _one(t)
        rows.append(cache[t])
    return pd.DataFrame(rows, index=series.index, columns=list(FEATURE_NAMES), dtype=float)


# --------------------------------------------------------------------------------------------
# Cross-validation
# --------------------------------------------------------------------------------------------


def cross_validated_scores(
    x: NDArray,
    y: NDArray,
    groups: Sequence[Any] | NDArray,
    *,
    folds: int = 5,
    c: float = 1.0,
    seed: int = 0,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Out-of-fold P(correct) of an L2 logistic regression, folds grouped by item.

    Args:
        x: ``(n, features)`` features.
        y: ``(n,)`` 0/1 labels.
        groups: ``(n,)`` item of each row; all rows of an item fall in one fold.
        folds: Folds (fewer when there are fewer items or fewer rows of a class).
        c: Inverse L2 strength (scikit-learn's ``C``), on standardised features.
        seed: Seed of the fold assignment.

    Returns:
        ``(scores, fold)``: the out-of-fold probability and the fold of each row.

    Raises:
        ValueError: Fewer than 2 items, or one class only.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y = np.asarray(y, dtype=int)
    g = pd.factorize(pd.Series(np.asarray(groups, dtype=object)))[0]
    n_groups = int(g.max()) + 1 if g.size else 0
    if n_groups < 2 or np.unique(y).size < 2:
        raise ValueError(f"need 2+ items and both classes; got {n_groups} items, "
                         f"classes {sorted(set(y.tolist()))}")  # fmt: skip
    k = int(min(folds, n_groups, np.bincount(y).min()))
    k = max(k, 2)
    cv = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    scores = np.full(y.size, np.nan)
    fold = np.full(y.size, -1, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "least populated class" notes
        for i, (train, test) in enumerate(cv.split(x, y, g)):
            fold[test] = i
            if np.unique(y[train]).size < 2:
                scores[test] = y[train].mean()
                continue
            # Newton steps: the features are collinear (lengths and counts), where lbfgs took
            # 200+ iterations to a fit whose probabilities were still 0.13 off the optimum on
            # 20,000 records; newton-cholesky reaches it (1e-4) in about 9, 3x faster.
            clf = LogisticRegression(C=c, solver="newton-cholesky", tol=1e-6, max_iter=100)
            model = make_pipeline(StandardScaler(), clf)
            model.fit(x[train], y[train])
            scores[test] = model.predict_proba(x[test])[:, 1]
    return scores, fold


# --------------------------------------------------------------------------------------------
# AUROC with a bootstrap interval
# --------------------------------------------------------------------------------------------


def _auroc_weighted(score: NDArray, y: NDArray, weights: NDArray) -> NDArray[np.float64]:
    """Midrank AUROC of one score under many item weightings ``(B, n)`` (ties count 1/2)."""
    levels = np.unique(score, return_inverse=True)[1]
    order = np.argsort(levels, kind="stable")
    lev = levels[order]
    starts = np.flatnonzero(np.r_[True, lev[1:] != lev[:-1]])
    w = weights[:, order]
    ys = y[order].astype(w.dtype)
    pos = np.add.reduceat(w * ys, starts, axis=1).astype(float)
    neg = np.add.reduceat(w * (1 - ys), starts, axis=1).astype(float)
    below = np.cumsum(neg, axis=1) - neg
    num = (pos * (below + 0.5 * neg)).sum(axis=1)
    den = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def _aurocs(scores: dict[str, NDArray], y: NDArray, n_boot: int, rng: np.random.Generator
            ) -> dict[str, tuple[float, float, float]]:  # fmt: skip
    n = y.size
    # Item-bootstrap weights: how often each item is drawn in each resample (float32 holds the
    # counts exactly and halves the memory the resamples pass through).
    picks = rng.integers(0, n, (n_boot, n)) + n * np.arange(n_boot)[:, None]
    boot = np.bincount(picks.ravel(), minlength=n_boot * n).reshape(n_boot, n).astype(np.float32)
    out = {}
    ones = np.ones((1, n))
    for name, s in scores.items():
        ok = np.isfinite(s)
        if not ok.all() or np.unique(y).size < 2:
            out[name] = (np.nan, np.nan, np.nan)
            continue
        point = float(_auroc_weighted(s, y, ones)[0])
        lo = hi = np.nan
        if n_boot > 0:
            draws = _auroc_weighted(s, y, boot)
            draws = draws[np.isfinite(draws)]
            if draws.size:
                lo, hi = (float(v) for v in np.quantile(draws, [0.025, 0.975]))
        out[name] = (point, lo, hi)
    return out


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class TextProbeResult(Result):
    """Surface-feature probes beside Internal and Pop.

    Attributes:
        table: One row per (benchmark, probe, confidence kind, model): ``n_items``,
            ``n_correct``, ``reasoning``, and for each of :data:`SCORES` its AUROC
            ``auroc_<score>`` with ``auroc_<score>_low``/``_high`` (95% item bootstrap); NaN
            where a score could not be computed.
        predictions: The out-of-fold P(correct) of every evaluated record and feature set,
            with its ``fold`` (per feature set: ``fold_<set>``) and ``item_id``.
        sets: Feature sets run.
        missing: ``{feature set: why it was not run}`` (a text column the records lack).
        notes: Groups or models left out, and why.
        fit_by: ``"benchmark"`` or ``"model"``.
        folds: Requested folds.
        c: Inverse L2 strength.
        n_boot: Bootstrap resamples.
    """

    table: pd.DataFrame
    predictions: pd.DataFrame
    sets: tuple[str, ...]
    missing: dict[str, str]
    notes: tuple[str, ...]
    fit_by: str
    folds: int
    c: float
    n_boot: int


def _has_text(records: pd.DataFrame, column: str) -> bool:
    if column not in records:
        return False
    # each distinct value once: records without texts hold only None, and cost nothing
    return any(isinstance(t, str) and t.strip() != "" for t in pd.unique(records[column].dropna()))


def available_sets(records: pd.DataFrame) -> tuple[tuple[str, ...], dict[str, str]]:
    """The feature sets the records' texts allow, and why the others are not run."""
    have = {k: _has_text(records, col) for k, col in TEXT_COLUMNS.items()}
    sets, missing = [], {}
    for name in FEATURE_SETS:
        lacking = [TEXT_COLUMNS[t] for t in name if not have[t]]
        if lacking:
            missing[name] = f"the records have no {' or '.join(lacking)}"
        else:
            sets.append(name)
    return tuple(sets), missing


def fit_text_probes(
    records: pd.DataFrame,
    *,
    fit_by: Literal["benchmark", "model"] = "benchmark",
    folds: int = 5,
    c: float = 1.0,
    n_boot: int = 1000,
    seed: int = 0,
    min_items: int = 20,
    progress: bool = False,
) -> TextProbeResult:
    """Cross-validated surface-feature probes of correctness, per model and benchmark.

    Args:
        records: Record table (validated): ``model``, ``benchmark``, ``item_id``, ``probe``,
            ``confidence``, ``confidence_kind``, ``correct`` and any of ``question``,
            ``probe_text``, ``solve_text`` (``reasoning`` is carried into the table).
        fit_by: One classifier per group on all its models' records (``"benchmark"``) or one
            per model (``"model"``).
        folds: Cross-validation folds (grouped by item).
        c: Inverse L2 strength of the logistic regression.
        n_boot: Item-bootstrap resamples of each AUROC interval (0: no intervals).
        seed: Seed of the folds and the bootstrap.
        min_items: Fewest graded items a model needs in a group.
        progress: Progress bar over the groups.

    Returns:
        A :class:`TextProbeResult` (an empty table, with the reasons, when no text is there).

    Raises:
        ValueError: Unknown ``fit_by``.
    """
    if fit_by not in ("benchmark", "model"):
        raise ValueError(f"fit_by must be 'benchmark' or 'model', got {fit_by!r}")
    with _one_blas_thread():
        return _fit_text_probes(records, fit_by, folds, c, n_boot, seed, min_items, progress)


def _one_blas_thread() -> Any:
    """The fits are small (at most a few dozen thousand rows by 120 features): one BLAS thread
    is as fast, and multi-threaded BLAS on a busy machine was measured 7x slower here."""
    from threadpoolctl import threadpool_limits  # comes with scikit-learn

    return threadpool_limits(limits=1, user_api="blas")


def _fit_text_probes(
    records: pd.DataFrame,
    fit_by: str,
    folds: int,
    c: float,
    n_boot: int,
    seed: int,
    min_items: int,
    progress: bool,
) -> TextProbeResult:
    sets, missing = available_sets(records)
    notes: list[str] = []
    columns = [
        "benchmark",
        "probe",
        "confidence_kind",
        "model",
        "reasoning",
        "n_items",
        "n_correct",
    ] + [f"auroc_{s}{e}" for s in SCORES for e in ("", "_low", "_high")]
    if not sets:
        empty = pd.DataFrame(columns=columns)
        return TextProbeResult(empty, pd.DataFrame(), (), missing, (), fit_by, folds, c, n_boot)
    rows = records[records["correct"].notna() & records["confidence"].notna()].copy()
    rows["pop"] = np.nan
    keys = ["benchmark", "probe", "confidence_kind"]
    for _, idx in rows.groupby(keys, sort=False).groups.items():
        rows.loc[idx, "pop"] = population_confidence(rows.loc[idx]).to_numpy()
    rows = rows.reset_index(drop=True)  # labels are positions from here on
    feats = {
        t: text_features(rows[TEXT_COLUMNS[t]], rationale=(t == "M")).to_numpy()
        for t in {t for name in sets for t in name}
    }
    x_sets = {name: np.hstack([feats[t] for t in name]) for name in sets}
    y_all = rows["correct"].to_numpy(dtype=int)
    # CV groups: the item, and every item sharing its question text (a duplicated question in
    # two folds would leak as surely as the same item would).
    groups = rows["item_id"].astype(str).to_numpy(dtype=object)
    if "question" in rows:
        q = rows["question"].map(lambda t: t if isinstance(t, str) and t.strip() else None)
        groups = np.where(q.notna().to_numpy(), "q:" + q.fillna("").to_numpy(dtype=object),
                          "i:" + groups)  # fmt: skip
    score_all = {name: np.full(len(rows), np.nan) for name in sets}
    fold_all = {name: np.full(len(rows), -1, dtype=np.int64) for name in sets}
    root = np.random.SeedSequence(int(seed))
    table_rows: list[dict[str, Any]] = []
    # .indices keeps the order of appearance under pandas 2 too (its .groups is sorted there);
    # after the reset above, positions are the labels
    grouped = list(rows.groupby(keys, sort=False).indices.items())
    evaluated = np.zeros(len(rows), dtype=bool)
    bar = _progress(len(grouped) * len(sets), "text probes", progress)
    for key, labels in grouped:
        idx = np.asarray(labels)
        models = rows.loc[idx, "model"].to_numpy()
        counts = rows.loc[idx].groupby("model", sort=False, observed=True)["item_id"].nunique()
        small = counts[counts < min_items]
        if len(small) and len(small) == len(counts):
            notes.append(f"{'/'.join(map(str, key))}: left out, every model has fewer than "
                         f"{min_items} graded items (at most {int(counts.max())})")  # fmt: skip
        elif len(small):
            listed = ", ".join(f"{m} ({n})" for m, n in list(small.items())[:3])
            more = f" and {len(small) - 3} more" if len(small) > 3 else ""
            notes.append(f"{'/'.join(map(str, key))}: {len(small)} model(s) with fewer than "
                         f"{min_items} graded items left out of the text probes: "
                         f"{listed}{more}")  # fmt: skip
        idx = idx[~np.isin(models, small.index)]
        models = rows.loc[idx, "model"].to_numpy()
        evaluated[idx] = True
        names = list(pd.unique(models))
        units = [idx] if fit_by == "benchmark" else [idx[models == m] for m in names]
        for name in sets:
            bar.update(1)
            for unit in units:
                if unit.size == 0 or np.unique(y_all[unit]).size < 2:
                    continue
                score_all[name][unit], fold_all[name][unit] = cross_validated_scores(
                    x_sets[name][unit], y_all[unit], groups[unit], folds=folds, c=c,
                    seed=int(seed),
                )  # fmt: skip
        key_seed = root.spawn(1)[0]
        for m, m_seed in zip(names, key_seed.spawn(len(names)), strict=True):
            sel = idx[models == m]
            y = y_all[sel]
            scores = {"internal": rows.loc[sel, "confidence"].to_numpy(dtype=float),
                      "pop": rows.loc[sel, "pop"].to_numpy(dtype=float)}  # fmt: skip
            scores.update({name: score_all[name][sel] for name in sets})
            keep = np.isfinite(scores["pop"])
            if not keep.any():  # one model only: no population; Pop stays NaN
                keep = np.ones(y.size, dtype=bool)
            scores = {k: v[keep] for k, v in scores.items()}
            res = _aurocs(scores, y[keep], n_boot, np.random.default_rng(m_seed))
            reasoning = rows.loc[sel, "reasoning"].iloc[0] if "reasoning" in rows else None
            row: dict[str, Any] = {
                "benchmark": key[0], "probe": key[1], "confidence_kind": key[2], "model": m,
                "reasoning": None if pd.isna(reasoning) else bool(reasoning),
                "n_items": int(keep.sum()), "n_correct": int(y[keep].sum()),
            }  # fmt: skip
            for name in SCORES:
                point, lo, hi = res.get(name, (np.nan, np.nan, np.nan))
                row[f"auroc_{name}"] = point
                row[f"auroc_{name}_low"], row[f"auroc_{name}_high"] = lo, hi
            table_rows.append(row)
    bar.close()
    predictions = rows.loc[evaluated, ["benchmark", "probe", "confidence_kind", "model",
                                        "item_id", "correct"]].copy()  # fmt: skip
    for name in sets:
        predictions[name] = score_all[name][evaluated]
        predictions[f"fold_{name}"] = fold_all[name][evaluated]
    table = pd.DataFrame(table_rows, columns=columns)
    return TextProbeResult(table, predictions.reset_index(drop=True), sets, missing,
                           tuple(notes), fit_by, int(folds), float(c), int(n_boot))  # fmt: skip


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False)
