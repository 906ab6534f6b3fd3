"""The test of private signal: confidence rows permuted among items of the same response pattern.

Under "no private signal" a model's confidence and its correctness are independent *given the
item*: ``conf_i`` and ``perf_i`` (the item's rows over models) are independent given the item's
latent parameters ``xi_i``, which may relate to the confidence in any way (shared difficulty,
shared misreading). A permutation of whole confidence rows among items is then exact when the
items it mixes have the same posterior for ``xi_i`` given their correctness rows, i.e. when the
statistic the permutation holds fixed is sufficient for ``xi_i``. With a slope ``a_j`` per model,
an item difficulty ``b_i`` and an item slope ``c_i`` (``logit P = c_i a_j (theta_j - b_i)``) the
likelihood of a row depends on the item through ``w_i = sum_j a_j y_ij`` and
``v_i = sum_j a_j theta_j y_ij``:

* Rasch (all slopes 1): ``w`` is the pass count ``k``, sufficient alone; permuting within ``k``
  is exact.
* Item-level 2PL (``c_i`` varies): ``(k, v)`` is sufficient; ``k`` alone mixes steep items
  (correct answers concentrated on the able models) with flat ones.
* Model-level slopes (``a_j`` varies): ``w`` is sufficient for ``b_i``, and ``k`` is not: items of
  one pass count differ in difficulty by which models got them right. The former null (``k``,
  then ``sum_j theta_j y_ij``) over-rejected with log-slope sd 1.0 at 2,000 and 5,000 items.
* 3PL (a lower asymptote): no finite sufficient statistic; ``(w, v)`` separates what guessing
  changes (correct answers spread over the weak models) from steep items.

So the null permutes confidence rows among items with the same pass count and nearly the same
``(w, v)``: within each ``k`` stratum the items are cut into bands of ``w``, each band into
consecutive blocks of ``block_size`` items in ``v`` order (:func:`pattern_strata`). Cutting
finer than ``k`` costs nothing where ``k`` is sufficient (Rasch), and the blocks narrow as items
grow, so the approximation improves with items. The model parameters come from the correctness
matrix itself, as ``psych::irt.fa`` converts a one-factor model of the models' tetrachoric
correlations (:func:`model_parameters`): slope ``a_j = l_j / sqrt(1 - l_j^2)``, intercept
``d_j = tau_j / sqrt(1 - l_j^2)`` with ``P(y_ij = 1) = Phi(a_j eta_i - d_j)``, so
``v_i = -sum_j d_j y_ij``.

**Ragged data** (models that did not answer every item; NaN) can be given, and then the test uses
the items each pair answered (an available-case design), but **its size does not hold**: with a
quarter of the answers missing it rejected at 0.105-0.215 with no private signal (blocks of
10; ``bench/bench_size.py --ragged size``; README), because items of one stratum still differ in
which models answered them and so in difficulty. The analysis therefore runs the test on the
complete-case items only, and says when they are too few to read "no evidence" as absence. The
design: the statistic is the mean over pairs of the
tau-b on the pair's shared items, and a draw permutes every pair's confidence rows among its own
shared items. One random permutation of each stratum is drawn, and each pair takes its *induced*
permutation of its shared items (follow the permutation from a shared item until it lands on a
shared item again): each pair's permutation is uniform on its shared items of each stratum, and
pairs sharing items share most of their draws, as the observed taus of pairs sharing a model are
dependent. On complete data this is the same draw for every pair. An item's stratum is then its
number of answers and its place in ``(eta_i, u_i)``: the posterior mean of its ease ``eta_i``
given the answers it has (``N(0, 1)`` prior, the fitted slopes and intercepts) and the
ability-weighted residual ``u_i = -sum_j d_j (y_ij - P_ij(eta_i))`` over them.

The size was measured, not proven (:data:`SIZE_SHOWN`; the README's table). The blocks hold 2 items
(:data:`DEFAULT_BLOCK_SIZE`): with blocks of 10 it was too high on a few hundred items when items
differ in slope or allow guessing (0.078 and 0.087 at 400 items, 4,000 replicates; 0.060 and 0.067
at 2,000), because a pass count then holds about 20 of 400 items and blocks of 10 cut it into one
or two. Blocks of 2 give 0.057 and 0.058 at 400 items (intervals 0.050-0.066: not quite 0.05) and
0.053 and 0.053 at 2,000, Rasch and per-model slopes 0.051-0.056 at 400 and 0.049-0.054 at 2,000;
they cost power at the smallest planted signal (private 0.1 at 400 items: 0.64 instead of 0.87).
The noise of the model parameters fitted on those items is a small part (parameters fitted on
10,000 more items: 0.074 and 0.073 with blocks of 10; a SIMEX correction moves the null's mean by
under 0.01 of its sd), and a marginal maximum-likelihood fit, a slope prior, equal slopes and the
ease order above did not lower it beyond Monte Carlo error (``bench/bench_size.py --block-size``,
``--centring``, ``--simex``, ``--fit``, ``--order``). The statistic is the mean Kendall tau-b of
``dconf`` vs ``dperf`` over model pairs, the test one-sided (``greater``) with ``p = (1 + #{null >=
obs}) / (B + 1)``. Its detectable shift, ``(z_0.95 + z_0.80)`` null standard deviations (2.49 sd),
is what the findings quote: a shift of the mean tau the test finds four times in five at alpha 0.05
when the alternative spreads as the null does.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats
from threadpoolctl import threadpool_limits

from metacog_metrics._conventions import SeedLike, tie_tolerance
from metacog_metrics._result import Result
from metacog_metrics._threads import map_threads, n_threads
from metacog_metrics.factors import factor_analysis
from metacog_metrics.pairwise import tau_b_from_table
from metacog_metrics.stratified import _nanmean_last, mean_taus, stratified_null_draws
from metacog_metrics.tetrachoric import tetrachoric_matrix

__all__ = [
    "COLOUR",
    "DEFAULT_BLOCK_SIZE",
    "DETECTABLE_SD",
    "LABEL",
    "MIN_PAIR_ITEMS",
    "SIZE_SHOWN",
    "THIN_SHIFT",
    "ModelParameters",
    "PrivateSignalTestResult",
    "ability_scores",
    "model_parameters",
    "pattern_strata",
    "permutations_within",
    "private_signal_test",
]

#: Items per block of nearly equal pattern statistics (blocks of 10 over-reject on a few hundred
#: items when items differ in slope or allow guessing; README).
DEFAULT_BLOCK_SIZE = 2
#: Fewest items a pair must share to count (as the pairwise section).
MIN_PAIR_ITEMS = 10
#: The detectable shift in null standard deviations: ``z_0.95 + z_0.80`` (one-sided 0.05, 80%).
DETECTABLE_SD = float(stats.norm.ppf(0.95) + stats.norm.ppf(0.80))
#: A basis whose detectable shift is at least this is called too thin to read "no evidence" as
#: absence: the whole mean tau of the paper's real runs is 0.024-0.037.
THIN_SHIFT = 0.05
#: The test's null as reports name and draw it (beside the pairwise nulls' labels and colours,
#: :func:`metacog_metrics.pairwise.nulls.get_null`).
LABEL = "private-signal test null"
COLOUR = "#2ca02c"
#: What its measured size covers, in the words the findings use.
SIZE_SHOWN = (
    "its size was measured, not proven: with no private signal, 20 models and 4,000 "
    "replicates a cell (1,000 for Rasch at 2,000 items), on a generator written apart from "
    "the project's simulator, it rejected at alpha 0.05 at 0.049-0.056 with 400 and 2,000 "
    "complete items under Rasch and per-model slopes (log-sd 0.5 and 1.0), and at 0.053-0.058 "
    "when items differ in slope or allow guessing (README): read a p-value near 0.05 as a "
    "little weaker than it looks, more so on a few hundred items; items that draw on several "
    "abilities in one group are outside what was shown, so pooled groups exchange items only "
    "within their benchmark"
)
_LOADING = (0.05, 0.95)  # loadings are kept inside this range (Heywood cases, flat models)
_GRID = np.linspace(-5.0, 5.0, 61)  # quadrature of the items' ease (standard normal prior)
_ELEMENTS_PER_CHUNK = 1 << 22  # draws x pairs x items per chunk of the ragged draws


# ---------------------------------------------------------------------------------------------
# The models' parameters and the items' pattern statistics


def ability_scores(perf: ArrayLike) -> NDArray[np.float64]:
    """Each model's ability on the probit scale: ``Phi^-1`` of its accuracy (own items).

    Accuracies of 0 or 1 are moved half an item inwards (``0.5 / n``) so the scores are finite.
    """
    y = np.asarray(perf, dtype=float)
    seen = ~np.isnan(y)
    n = np.maximum(seen.sum(axis=0), 1)
    acc = np.where(seen, y, 0.0).sum(axis=0) / n
    return special.ndtri(np.clip(acc, 0.5 / n, 1.0 - 0.5 / n))


@dataclasses.dataclass(frozen=True, eq=False)
class ModelParameters(Result):
    """Each model's slope and intercept on the items' shared ease (``psych::irt.fa``'s map).

    ``P(y_ij = 1) = Phi(slope_j eta_i - intercept_j)``, from a one-factor model of the models'
    tetrachoric correlations of correctness (pairwise-complete): loading ``l_j`` and threshold
    ``tau_j = Phi^-1(1 - accuracy_j)`` give ``slope = l / sqrt(1 - l^2)`` and
    ``intercept = tau / sqrt(1 - l^2)``.

    Attributes:
        slope: Per model.
        intercept: Per model.
        loading: The loadings used (clipped to 0.05-0.95; 0.5 for every model when no factor
            model could be fitted: fewer than 3 models with variance or a missing correlation).
        fitted: Whether the factor model was fitted.
    """

    slope: NDArray[np.float64]
    intercept: NDArray[np.float64]
    loading: NDArray[np.float64]
    fitted: bool


def model_parameters(perf: ArrayLike) -> ModelParameters:
    """Slopes and intercepts of the models from their ``(items, models)`` correctness (NaN:
    not answered); see :class:`ModelParameters`."""
    y = np.asarray(perf, dtype=float)
    m = y.shape[1]
    loading = np.full(m, 0.5)
    fitted = False
    tet = tetrachoric_matrix(y)
    kept = [int(n) for n in tet.names]
    if len(kept) >= 3 and np.isfinite(tet.rho).all():
        fa = factor_analysis(tet.rho)
        loading[kept] = np.clip(fa.loadings, *_LOADING)
        fitted = True
    tau = -ability_scores(y)
    scale = np.sqrt(1.0 - loading**2)
    return ModelParameters(loading / scale, tau / scale, loading, fitted)


def _blocks(first: NDArray, second: NDArray, rows: NDArray, size: int) -> NDArray[np.int64]:
    """Local block labels of ``rows``: bands of ``first``, each cut into consecutive blocks of
    at least ``size`` items in ``second`` order (one block when fewer than ``2 size``)."""
    n_blocks = max(1, rows.size // size)
    n_bands = max(1, round(math.sqrt(n_blocks)))
    labels = np.empty(rows.size, dtype=np.int64)
    order = np.argsort(first[rows], kind="stable")
    start = 0
    for band in np.array_split(order, n_bands):
        if band.size == 0:
            continue
        inner = band[np.argsort(second[rows[band]], kind="stable")]
        k = max(1, inner.size // size)
        labels[inner] = start + np.arange(inner.size) * k // inner.size
        start += k
    return labels


def _ease(y: NDArray, seen: NDArray, p: ModelParameters) -> tuple[NDArray, NDArray]:
    """Posterior mean ease of each item from its answers, and its weighted residual."""
    z = p.slope[None, :] * _GRID[:, None] - p.intercept[None, :]  # (grid, models)
    right = np.where(seen, y, 0.0)
    wrong = np.where(seen, 1.0 - y, 0.0)
    loglik = right @ special.log_ndtr(z).T + wrong @ special.log_ndtr(-z).T - 0.5 * _GRID**2
    weight = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    eta = (weight @ _GRID) / weight.sum(axis=1)
    fit = special.ndtr(p.slope[None, :] * eta[:, None] - p.intercept[None, :])
    resid = np.where(seen, -p.intercept[None, :] * (right - fit), 0.0).sum(axis=1)
    return eta, resid


def _strata(
    y: NDArray, block_size: int, parameters: ModelParameters | None = None
) -> NDArray[np.int64]:
    seen = ~np.isnan(y)
    p = model_parameters(y) if parameters is None else parameters
    if seen.all():  # exact pass counts, then (w, v)
        key = np.rint(y.sum(axis=1)).astype(np.int64)
        first, second = y @ p.slope, -(y @ p.intercept)
    else:  # the number of answers, then (ease, residual)
        key = seen.sum(axis=1)
        first, second = _ease(y, seen, p)
    return _keyed_blocks(key, first, second, block_size)


def _keyed_blocks(key: NDArray, first: NDArray, second: NDArray, size: int) -> NDArray[np.int64]:
    """Stratum labels: the items of each ``key`` value cut by :func:`_blocks`, numbered on."""
    labels = np.empty(key.size, dtype=np.int64)
    next_label = 0
    for value in np.unique(key):
        rows = np.flatnonzero(key == value)
        local = _blocks(first, second, rows, size)
        labels[rows] = next_label + local
        next_label += int(local.max()) + 1
    return labels


def pattern_strata(
    perf: ArrayLike,
    block_size: int = DEFAULT_BLOCK_SIZE,
    groups: ArrayLike | None = None,
    parameters: ModelParameters | None = None,
) -> NDArray[np.int64]:
    """Stratum labels of the items: nearly the same correctness pattern (module docstring).

    Complete data: the pass count, then blocks of nearly equal ``(w, v)``. Ragged data (NaN
    where a model did not answer): the number of answers, then blocks of nearly equal ease and
    residual.

    Args:
        perf: ``(items, models)`` 0/1 correctness, NaN where not answered.
        block_size: Items per block within a stratum (a stratum with fewer than
            ``2 * block_size`` items is one block); a huge value gives the exact strata.
        groups: Per item, a group (e.g. its benchmark) that no stratum crosses; each group's
            strata use parameters from its own items, so items that draw on different abilities
            are never exchanged. None: one group.
        parameters: The models' slopes and intercepts when they are known from elsewhere (a
            diagnostic: ``bench/bench_size.py --oracle-items``); None fits them from ``perf``.

    Returns:
        ``(items,)`` integer labels.
    """
    y = np.asarray(perf, dtype=float)
    if y.ndim != 2:
        raise ValueError(f"perf must be (items, models), got shape {y.shape}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    labels = np.empty(y.shape[0], dtype=np.int64)
    if groups is None:
        parts = [np.arange(y.shape[0])]
    else:
        g = np.asarray(groups)
        if g.shape != (y.shape[0],):
            raise ValueError(f"groups must have one entry per item ({y.shape[0]}), got {g.shape}")
        parts = [np.flatnonzero(g == v) for v in dict.fromkeys(g.tolist())]
    next_label = 0
    for rows in parts:
        if rows.size == 0:
            continue
        sub = _strata(y[rows], block_size, parameters)
        labels[rows] = sub + next_label
        next_label += int(sub.max()) + 1
    return labels


def permutations_within(labels: ArrayLike, n: int, rng: SeedLike = None) -> NDArray[np.intp]:
    """``n`` random permutations of the items within groups of equal label.

    Returns:
        ``(n, items)`` indices ``perm``: item ``i`` takes the row of item ``perm[i]``, and
        ``labels[perm[i]] == labels[i]``.
    """
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {lab.shape}")
    rng = np.random.default_rng(rng)
    _, codes = np.unique(lab, return_inverse=True)
    base = np.argsort(codes, kind="stable")
    sorted_codes = codes[base].astype(np.float64)
    # Sorting code + U(0, 1) shuffles each group and keeps the groups in order.
    shuffled = np.argsort(sorted_codes[None, :] + rng.random((n, lab.size)), axis=1, kind="stable")
    out = np.empty((n, lab.size), dtype=np.intp)
    out[:, base] = base[shuffled]
    return out


# ---------------------------------------------------------------------------------------------
# Ragged data: each pair on its shared items


@dataclasses.dataclass(frozen=True)
class _Pairs:
    """The pairs with at least ``MIN_PAIR_ITEMS`` shared items and their shared items."""

    a: NDArray[np.intp]
    b: NDArray[np.intp]
    shared: NDArray[np.bool_]  # (pairs, items)


def _pairs(conf: NDArray, perf: NDArray, min_items: int) -> _Pairs:
    ok = ~np.isnan(conf) & ~np.isnan(perf)
    ia, ib = np.triu_indices(conf.shape[1], k=1)
    shared = ok[:, ia].T & ok[:, ib].T
    keep = shared.sum(axis=1) >= min_items
    return _Pairs(ia[keep], ib[keep], np.ascontiguousarray(shared[keep]))


def induced_permutations(perms: NDArray, shared: NDArray) -> NDArray[np.intp]:
    """Each pair's permutation of its shared items, induced by permutations of all items.

    Item ``i`` of pair ``p`` takes the row of the first item on ``i``'s path through ``perm``
    (``perm[i]``, ``perm[perm[i]]``, ...) that pair ``p`` shares: the first-return map, a
    permutation of the shared items, uniform on them when ``perm`` is uniform (deleting an item
    from the cycles of a uniform permutation leaves a uniform permutation of the rest).

    Args:
        perms: ``(draws, items)`` permutations (item ``i`` takes the row of ``perm[i]``).
        shared: ``(pairs, items)`` which items each pair shares.

    Returns:
        ``(draws, pairs, items)`` sources (meaningful where ``shared``).
    """
    n_draws, n_items = perms.shape
    src = np.broadcast_to(perms[:, None, :], (n_draws, shared.shape[0], n_items)).copy()
    rows = np.arange(shared.shape[0])[None, :, None]
    # walk on only the items whose source is not shared yet (a few steps each: a pair shares
    # most items, so most paths land at once)
    d, p, i = np.nonzero(shared[None, :, :] & ~shared[rows, src])
    here = src[d, p, i]
    while d.size:
        here = perms[d, here]
        done = shared[p, here]
        src[d[done], p[done], i[done]] = here[done]
        d, p, i, here = d[~done], p[~done], i[~done], here[~done]
    return src


def _ragged_means(c: NDArray, dperf: NDArray, pairs: _Pairs, src: NDArray | None) -> NDArray:
    """Mean tau-b over the pairs, each on its shared items, of the permuted (or observed)
    confidence: ``(draws,)``."""
    a, b = pairs.a[None, :, None], pairs.b[None, :, None]
    if src is None:
        dconf = (c[:, pairs.a] - c[:, pairs.b]).T[None]
    else:
        dconf = c[src, a] - c[src, b]
    code = (3 * (dconf + 1) + (dperf[None] + 1)).astype(np.int64)
    n_draws, n_pairs, _ = code.shape
    offset = (np.arange(n_draws * n_pairs, dtype=np.int64) * 9).reshape(n_draws, n_pairs, 1)
    mask = np.broadcast_to(pairs.shared[None], code.shape)
    tables = np.bincount((offset + code)[mask], minlength=n_draws * n_pairs * 9)
    return _nanmean_last(tau_b_from_table(tables.reshape(n_draws, n_pairs, 3, 3)))


def _ragged_draws(
    conf: NDArray, perf: NDArray, pairs: _Pairs, perms: NDArray, workers: int | None
) -> NDArray:
    c = np.nan_to_num(conf)
    y = np.nan_to_num(perf)
    dperf = (y[:, pairs.a] - y[:, pairs.b]).T
    out = np.empty(perms.shape[0])
    step = max(1, _ELEMENTS_PER_CHUNK // max(1, pairs.a.size * conf.shape[0]))

    def chunk(start: int) -> None:
        part = perms[start : start + step]
        src = induced_permutations(part, pairs.shared)
        out[start : start + part.shape[0]] = _ragged_means(c, dperf, pairs, src)

    map_threads(chunk, range(0, perms.shape[0], step), n_threads(workers, perms.shape[0]))
    return out


# ---------------------------------------------------------------------------------------------
# The test


@dataclasses.dataclass(frozen=True, eq=False)
class PrivateSignalTestResult(Result):
    """The mean tau against the permutation null of items of nearly the same pattern.

    Attributes:
        observed: Observed mean tau-b over the pairs (each on its shared items).
        null_mean: Mean of the null draws.
        null_sd: Their standard deviation.
        p_value: One-sided p-value (observed above the null), ``(1 + count) / (B + 1)``.
        permutations: Null draws (B).
        block_size: Items per block.
        n_strata: Strata with at least two items (the only ones that move).
        n_items_moving: Items in those strata.
        draws: The null draws.
        n_groups: Item groups (benchmarks) whose items are only exchanged among themselves.
        design: ``"complete"`` (every model answered every item) or ``"available-case"`` (each
            pair on its shared items).
        n_models: Models.
        n_items: Items any model answered.
        n_pairs: Pairs with at least ``MIN_PAIR_ITEMS`` shared items (the statistic's pairs).
        n_items_pair: Items each of those pairs shares.
        detectable_shift: :data:`DETECTABLE_SD` null standard deviations: the shift of the mean
            tau it detects with 80% power at alpha 0.05.
    """

    observed: float
    null_mean: float
    null_sd: float
    p_value: float
    permutations: int
    block_size: int
    n_strata: int
    n_items_moving: int
    draws: NDArray[np.float64]
    n_groups: int = 1
    design: str = "complete"
    n_models: int = 0
    n_items: int = 0
    n_pairs: int = 0
    n_items_pair: NDArray[np.int64] = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int64)
    )
    detectable_shift: float = math.nan

    @property
    def thin(self) -> str | None:
        """Why the basis is too thin to read "no evidence" as absence, else None."""
        if self.n_pairs == 0:
            return "no pair shares enough items"
        if not math.isfinite(self.detectable_shift):
            return "too few null draws to size it"
        if self.detectable_shift >= THIN_SHIFT:
            return (
                f"it detects with 80% power only a shift of {self.detectable_shift:.3f} in the "
                f"mean tau, at least {THIN_SHIFT:g}"
            )
        return None

    def basis_text(self) -> str:
        """The models and items the test rests on, in words."""
        per = self.n_items_pair
        if self.design == "complete" or per.size == 0 or per.min() == per.max():
            return f"{self.n_models} models x {self.n_items} items, {self.n_pairs} pairs"
        return (
            f"{self.n_models} models, {self.n_pairs} pairs, each on the items both answered: "
            f"{int(per.min())} to {int(per.max())} (median {float(np.median(per)):.0f}) of "
            f"{self.n_items} items"
        )

    def summary(self) -> dict[str, Any]:
        """The ``pairwise.nulls.private_signal`` entry of ``summary.json``."""
        ok = self.draws[np.isfinite(self.draws)]
        per = self.n_items_pair
        return {
            "mean": self.null_mean,
            "sd": self.null_sd,
            "ci": tuple(np.quantile(ok, [0.025, 0.975])) if ok.size else (None, None),
            "p_value": self.p_value,
            "alternative": "greater",
            "n_draws": self.permutations,
            "block_size": self.block_size,
            "n_strata": self.n_strata,
            "n_items_moving": self.n_items_moving,
            "n_groups": self.n_groups,
            "design": self.design,
            "n_pairs": self.n_pairs,
            "n_items_per_pair": {
                "min": int(per.min()) if per.size else None,
                "median": float(np.median(per)) if per.size else None,
                "max": int(per.max()) if per.size else None,
            },
            "detectable_shift": self.detectable_shift,
            "thin": self.thin,
        }


def _check(conf: ArrayLike, perf: ArrayLike) -> tuple[NDArray, NDArray]:
    c = np.asarray(conf, dtype=float)
    y = np.asarray(perf, dtype=float)
    if c.shape != y.shape or c.ndim != 2:
        raise ValueError(f"conf {c.shape} and perf {y.shape} must be equal (items, models)")
    seen = ~np.isnan(c) & ~np.isnan(y)
    if (np.isnan(c) != np.isnan(y)).any():
        raise ValueError("conf and perf must be missing (NaN) on the same items")
    if not (np.isin(c[seen], (0.0, 1.0)).all() and np.isin(y[seen], (0.0, 1.0)).all()):
        raise ValueError("conf and perf must be 0/1 matrices (NaN where not answered)")
    return c, y


def private_signal_test(
    conf: ArrayLike,
    perf: ArrayLike,
    *,
    permutations: int = 999,
    block_size: int = DEFAULT_BLOCK_SIZE,
    rng: SeedLike = 0,
    groups: ArrayLike | None = None,
    workers: int | None = 1,
    min_pair_items: int = MIN_PAIR_ITEMS,
) -> PrivateSignalTestResult:
    """Test for private signal: is the mean tau above what items of the same pattern give?

    Args:
        conf: ``(items, models)`` 0/1 confidence, NaN where a model did not answer.
        perf: ``(items, models)`` 0/1 correctness, NaN on the same items.
        permutations: Null draws.
        block_size: Items per block of nearly equal pattern statistics.
        rng: Seed, ``SeedSequence`` or ``Generator``.
        groups: Per item, a group (its benchmark) whose items are only exchanged among
            themselves, with parameters from its own items (see :func:`pattern_strata`).
        workers: Threads for the null draws (None: one per CPU); the result does not depend
            on it.
        min_pair_items: Fewest shared items for a pair to count (ragged data).

    Returns:
        A :class:`PrivateSignalTestResult`.

    Raises:
        ValueError: Mismatched shapes or missing values, non-binary input or bad sizes.
    """
    c, y = _check(conf, perf)
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    answered = ~np.isnan(y).all(axis=1)
    c, y = c[answered], y[answered]
    groups = None if groups is None else np.asarray(groups)[answered]
    labels = pattern_strata(y, block_size, groups)
    rng = np.random.default_rng(rng)
    complete = not np.isnan(y).any()
    perms = permutations_within(labels, permutations, rng)
    with threadpool_limits(limits=1):
        if complete:
            n_pairs = c.shape[1] * (c.shape[1] - 1) // 2
            per_pair = np.full(n_pairs, c.shape[0], dtype=np.int64)
            observed = float(mean_taus(c, y))
            draws = stratified_null_draws(c, y, perms, workers)
        else:
            pairs = _pairs(c, y, min_pair_items)
            n_pairs = int(pairs.a.size)
            per_pair = pairs.shared.sum(axis=1).astype(np.int64)
            dperf = (np.nan_to_num(y)[:, pairs.a] - np.nan_to_num(y)[:, pairs.b]).T
            observed = float(_ragged_means(np.nan_to_num(c), dperf, pairs, None)[0])
            draws = _ragged_draws(c, y, pairs, perms, workers)
    ok = draws[np.isfinite(draws)]
    ties = ok >= observed - tie_tolerance(observed)
    p = (1.0 + np.sum(ties)) / (ok.size + 1.0) if ok.size else math.nan
    sd = float(ok.std(ddof=1)) if ok.size > 1 else math.nan
    sizes = np.bincount(labels)
    return PrivateSignalTestResult(
        observed=observed,
        null_mean=float(ok.mean()) if ok.size else math.nan,
        null_sd=sd,
        p_value=float(p),
        permutations=int(permutations),
        block_size=int(block_size),
        n_strata=int((sizes >= 2).sum()),
        n_items_moving=int(sizes[sizes >= 2].sum()),
        draws=draws,
        n_groups=1 if groups is None else len(set(groups.tolist())),
        design="complete" if complete else "available-case",
        n_models=int(c.shape[1]),
        n_items=int(c.shape[0]),
        n_pairs=int(n_pairs),
        n_items_pair=per_pair,
        detectable_shift=DETECTABLE_SD * sd,
    )
