"""The size of the test of private signal, and of the pass-count null it replaced.

Rejection rates at alpha 0.05 with no private signal, 20 models, 99 permutations (decisions
curtailed as in ``metacog power``: the same decision as all 99 draws), under the ``rasch``,
``2pl`` (log-discrimination sd 1.0) and ``3pl`` (guessing 0.25) presets, with Monte Carlo
standard errors and 95% Clopper-Pearson intervals, with blocks of ``--block-size`` items (the
test's 2). The figures below and the README's quotes of them were measured with blocks of 10
(the same commands with ``--block-size 10``); the README's table came from

    python bench/bench_size.py --items 10000 --reps 400 --seed 0
    python bench/bench_size.py --items 1000,3000 --reps 400 --seed 1

(about 35 CPU-minutes each on one core). ``--independent`` also runs the test on a generator
the project's simulator did not make: logistic correctness with lognormal slopes (sd 1.0) and
guessing 0.25 on half the items, confidence that reads each item's difficulty, slope and
guessing (``tests/test_private_signal.py``); the README quotes

    python bench/bench_size.py --items 10000 --reps 200 --independent

(its second part; 200 replicates a generator setting), and ``--two-tracks`` items that draw on
two abilities (correlation 0.3) with confidence shifted by track, no private signal:

    python bench/bench_size.py --items 524,2000 --reps 200 --two-tracks

``--ragged`` gives the README's size and power tables of the test: the same independent
generator with a slope per model (log-sd 0.5, 1.0) besides the Rasch, item-level 2PL and 3PL
settings, complete, with answers missing at random (MCAR) or by difficulty (more of the hard
items and the weak models), no private signal (size) or a planted one of 0.1, 0.2 and 0.35
(power), on each pair's shared items (available-case) or, with ``--complete-case``, on the items
every model answered, as the analysis runs it, with the test's blocks of 2 items (``--block-size``
gives others). The README's figures came from

    python bench/bench_size.py --ragged size --items 400 --reps 4000 --missing complete
    python bench/bench_size.py --ragged size --items 2000 --reps 4000 --missing complete
    python bench/bench_size.py --ragged size --items 400 --reps 400 --complete-case \
        --missing "MCAR 5%,by difficulty 5%" --only Rasch,"per-model slopes (log-sd 1.0)"
    python bench/bench_size.py --ragged power --items 400 --reps 200 --complete-case

(at 2,000 items the Rasch cell with ``--reps 1000``; the first 1,000
replicates of a cell are those of ``--reps 4000``), and with blocks of 10,
the test's until the table below showed their excess, from the same commands with
``--block-size 10`` and

    python bench/bench_size.py --ragged size --items 400 --reps 200 --only Rasch,"per-model \
        slopes (log-sd 0.5)" --missing "MCAR 25%,by difficulty 25%" --block-size 10
    python bench/bench_size.py --ragged size --items 2000 --reps 4000 --missing complete \
        --block-size 10
    python bench/bench_size.py --ragged size --items 5000 --reps 400 --missing complete \
        --only per-model --block-size 10

(one to five minutes a cell at 400 items on a loaded core).

**The small-sample excess.** At 400 complete items the 400-replicate cells cannot tell 0.06 from
0.09; 4,000 replicates a cell (intervals about +-0.008) can:

    python bench/bench_size.py --ragged size --items 400 --reps 4000 --missing complete \
        --block-size B

    blocks of            10      5      3      2
    Rasch             0.054  0.053      -  0.051
    item-level 2PL    0.078  0.069  0.061  0.057
    3PL               0.087  0.076  0.066  0.058
    per-model 0.5     0.052  0.053      -  0.052
    per-model 1.0     0.059  0.055      -  0.056
    power at private 0.1 (``--ragged power --reps 1000 --missing complete``; per-model 0.5)
                      0.868  0.816  0.743  0.644   (0.988 or more at 0.2, 1.000 at 0.35)

At 2,000 items blocks of 10 give 0.046, 0.060, 0.067, 0.053 and 0.048 in the order of the table
(4,000 replicates), blocks of 2 give 0.053 and 0.055 for item-level 2PL and 3PL (1,000; 4,000:
0.053 and 0.053); the power at private 0.1 there is 1.000 with blocks of 10 and 0.998 with blocks
of 2 (400). So at 400 items, with blocks of 10, the size is 0.052-0.059 under per-model slopes (the
400-replicate 0.085 was Monte Carlo error) and too high when items differ in slope or allow
guessing, from the width of the strata: a pass count holds about 20 of 400 items, which blocks of
10 cut into one or two blocks of ``v`` alone. Narrower blocks remove most of the excess and cost
power at the smallest planted signal; the test uses blocks of 2 (valid first). ``--centring`` (400
replicates) measures where the null sits without Monte Carlo error in its mean
(:func:`exact_null_mean`): the observed mean is above the exact permutation mean by 0.172, 0.239
and 0.087 null sd (item-level 2PL, 3PL, per-model slopes log-sd 1.0) with blocks of 10, by 0.038,
0.034 and 0.028 with blocks of 2; parameters fitted on 10,000 more items move it by only 0.019,
0.012 and 0.011 sd.

The noise of the fitted model parameters is a small part (blocks of 10 from here on).
``--oracle-items N`` builds the strata
from model slopes and intercepts fitted on ``N`` more items of the same population: with
10,000 more the item-level 2PL and 3PL rows are 0.074 (0.063-0.087) and 0.073 (0.062-0.085),
2,000 replicates. ``--simex linear`` (or ``quadratic``) shifts every null draw by a SIMEX
correction (:func:`simex_shift`: parametric-bootstrap noise of the parameters added at
lambda = 0.5, 1 and 2 times, six draws each, the exact null mean extrapolated to lambda = -1);
the shifts average +0.00001 to +0.00008 (sd 0.0005; the null sd is about 0.01): the null's
mean does not move with the parameters' noise, and the rates stay where they were (400 items,
400 replicates, the same replicates as the test's own 0.060, 0.090, 0.085, 0.068, 0.085 in the
order of the table): linear 0.062, 0.095, 0.083, 0.060, 0.092; quadratic (item-level 2PL,
3PL, per-model 1.0; a noisier extrapolation, shift sd 0.003) 0.113, 0.098, 0.102. Fitting the
parameters otherwise from the same items does not help either (400 items, 400 replicates;
item-level 2PL, 3PL, per-model slopes log-sd 1.0; the test's own: 0.090, 0.085, 0.085):

    --fit marginal        0.090, 0.107, 0.080  (marginal ML probit 2PL, EM on a quadrature)
    --fit marginal-prior  0.098, 0.107, 0.072  (the same, lognormal(0, 0.5) prior on slopes)
    --fit equal-slopes    0.090, 0.105, 0.083  (one slope for every model)
    --order ease          0.098, 0.100, 0.075  (bands of posterior ease, blocks of residual)
    --oracle-items 400 --oracle-apart
                          0.068, 0.102, 0.080  (fitted on 400 other items, not the tested ones)

None is adopted.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special, stats

from metacog_metrics._conventions import tie_tolerance
from metacog_metrics.pairwise import tau_b_from_table
from metacog_metrics.power import _curtailed_rejects, size_analysis
from metacog_metrics.private_signal import (
    DEFAULT_BLOCK_SIZE,
    ModelParameters,
    _ease,
    _keyed_blocks,
    _pairs,
    _ragged_draws,
    _ragged_means,
    ability_scores,
    model_parameters,
    pattern_strata,
    permutations_within,
)
from metacog_metrics.stratified import _nanmean_last, mean_taus, stratified_null_draws

INDEPENDENT = {
    "slopes sd 1.0": {"slope_sd": 1.0},
    "guessing 0.25 on half the items": {"guess": 0.25},
    "both": {"slope_sd": 1.0, "guess": 0.25},
}


def _independent(n_items: int, reps: int, seed: int = 20261203) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_private_signal import _logistic_population

    for name, kw in INDEPENDENT.items():
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        hits = sum(_rejects(*_logistic_population(n_items, 20, rng, **kw), r) for r in range(reps))
        _print_rate(f"independent generator, {name}, {n_items} items", hits, reps, t0)


def _rejects(conf: np.ndarray, perf: np.ndarray, r: int) -> int:
    """Whether replicate ``r`` rejects at 0.05 (curtailed at 99 draws, ``--block-size``)."""
    obs = float(mean_taus(conf, perf))
    hit, _ = _curtailed_rejects(
        conf, perf, obs, 99, 0.05, np.random.default_rng(r), pattern_strata(perf, BLOCK_SIZE)
    )
    return int(hit)


#: The generator settings of the ragged tables (keyword arguments of the tests' generator).
RAGGED_SETTINGS = {
    "Rasch": {},
    "item-level 2PL (log-sd 1.0)": {"slope_sd": 1.0},
    "3PL (item log-sd 0.5, guessing 0.25 on half)": {"slope_sd": 0.5, "guess": 0.25},
    "per-model slopes (log-sd 0.5)": {"model_slope_sd": 0.5},
    "per-model slopes (log-sd 1.0)": {"model_slope_sd": 1.0},
}
MISSING = {
    "complete": (None, 0.0),
    "MCAR 5%": ("mcar", 0.05),
    "MCAR 25%": ("mcar", 0.25),
    "by difficulty 5%": ("difficulty", 0.05),
    "by difficulty 25%": ("difficulty", 0.25),
}


BLOCK_SIZE = DEFAULT_BLOCK_SIZE  # --block-size
FIT = "tetrachoric"  # --fit
ORDER = "w-v"  # --order
SIMEX = ""  # --simex: "", "linear" or "quadratic"
SIMEX_LAMBDAS = (0.5, 1.0, 2.0)  # extra parameter noise, in multiples of the fitted noise
SIMEX_DRAWS = 6  # --simex-draws: parametric-bootstrap noise draws (shared by every lambda)
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(31)  # N(0, 1) quadrature (unnormalised)


def _marginal_parameters(
    perf: np.ndarray, slope_prior_sd: float | None = None, iterations: int = 30
) -> ModelParameters:
    """The models' probit 2PL by marginal maximum likelihood (Bock-Aitkin EM on a Gauss-Hermite
    grid of the items' N(0, 1) ease; three Fisher-scoring steps in (log slope, intercept) per
    M-step), or the marginal posterior mode with a lognormal(0, ``slope_prior_sd``) prior on the
    slopes (BILOG's default, 0.5). A diagnostic of ``--fit``, written here because no kept Python
    IRT package runs on the SciPy this project uses; the test itself does not use it."""
    y = np.asarray(perf, dtype=float)
    seen = ~np.isnan(y)
    right, wrong = np.where(seen, y, 0.0), np.where(seen, 1.0 - y, 0.0)
    acc = right.sum(axis=0) / np.maximum(seen.sum(axis=0), 1)
    vary = (acc > 0) & (acc < 1)  # a model right (or wrong) on every item keeps its start
    log_weight = np.log(_WEIGHTS / _WEIGHTS.sum())
    x = _NODES[:, None]
    log_a = np.zeros(y.shape[1])
    d = -ability_scores(y) * math.sqrt(2.0)
    for _ in range(iterations):
        z = np.exp(log_a) * x - d
        loglik = right @ special.log_ndtr(z).T + wrong @ special.log_ndtr(-z).T + log_weight
        post = np.exp(loglik - loglik.max(axis=1, keepdims=True))
        post /= post.sum(axis=1, keepdims=True)
        n_q, r_q = post.T @ seen, post.T @ right  # expected answers and right answers per node
        for _ in range(3):
            a = np.exp(log_a)
            z = a * x - d
            prob = np.clip(special.ndtr(z), 1e-12, 1 - 1e-12)
            dens = np.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
            score = (r_q - n_q * prob) * dens / (prob * (1 - prob))
            info = n_q * dens**2 / (prob * (1 - prob))
            g_a, g_d = (score * a * x).sum(axis=0), -score.sum(axis=0)
            i_aa, i_ad, i_dd = (info * (a * x) ** 2).sum(0), -(info * a * x).sum(0), info.sum(0)
            if slope_prior_sd:
                g_a = g_a - log_a / slope_prior_sd**2
                i_aa = i_aa + 1 / slope_prior_sd**2
            det = i_aa * i_dd - i_ad**2
            move = vary & (det > 1e-12)  # no information (all mass far in a tail): stay
            det = np.where(move, det, 1.0)
            step_a = np.where(move, np.clip((i_dd * g_a - i_ad * g_d) / det, -1, 1), 0.0)
            step_d = np.where(move, np.clip((i_aa * g_d - i_ad * g_a) / det, -2, 2), 0.0)
            log_a = np.clip(log_a + step_a, -3, 3)
            d = d + step_d
    a = np.exp(log_a)
    return ModelParameters(a, d, a / np.sqrt(1 + a**2), True)


def _fitted(perf: np.ndarray) -> ModelParameters:
    """The models' parameters as ``--fit`` says (the test's own: ``tetrachoric``)."""
    if FIT == "marginal":
        return _marginal_parameters(perf)
    if FIT == "marginal-prior":
        return _marginal_parameters(perf, slope_prior_sd=0.5)
    p = model_parameters(perf)
    if FIT == "equal-slopes":  # every slope the geometric mean, the thresholds kept
        a = np.full(p.slope.size, float(np.exp(np.log(p.slope).mean())))
        return ModelParameters(a, -ability_scores(perf) * np.sqrt(1 + a**2), p.loading, True)
    return p


def exact_null_mean(conf: np.ndarray, perf: np.ndarray, labels: np.ndarray) -> float:
    """The mean over all within-stratum permutations of the mean tau (complete data), exactly.

    A pair's tau-b denominator depends only on the margins of its (dconf, dperf) table, which
    permuting confidence rows keeps; its numerator S = C - D is a quadratic form of the table
    that gets no contribution from two items of one stratum (a uniform ordered pair of them is
    as likely either way round) and, for items of different strata, the product of the strata's
    own sign sums. Hence E[S] = S(Q) with ``Q = sum_s h_s g_s' / n_s`` (``h_s``, ``g_s`` the
    stratum's dconf and dperf counts), and the permutation mean of the pair's tau is the tau-b
    of the table ``Q`` (which has the observed margins). Singletons give the observed tau, one
    stratum gives 0."""
    ia, ib = np.triu_indices(conf.shape[1], k=1)
    _, codes = np.unique(labels, return_inverse=True)
    n_s = np.bincount(codes).astype(float)

    def counts(d: np.ndarray) -> np.ndarray:  # (3 values, strata, pairs)
        out = np.zeros((3, n_s.size, d.shape[1]))
        for a, value in enumerate((-1.0, 0.0, 1.0)):
            np.add.at(out[a], codes, (d == value).astype(float))
        return out

    h = counts(conf[:, ia] - conf[:, ib])
    g = counts(perf[:, ia] - perf[:, ib])
    q = np.einsum("asp,csp,s->pac", h, g, 1.0 / n_s)
    return float(_nanmean_last(tau_b_from_table(q)))


def simex_shift(conf: np.ndarray, perf: np.ndarray, rng: np.random.Generator) -> float:
    """``--simex``: the change of the null mean extrapolated to fitted parameters without noise.

    The parameters' noise is drawn by a parametric bootstrap (correctness simulated from the
    fitted probit model on N(0, 1) ease, refitted; the differences in log slope and intercept);
    strata are rebuilt from the fitted parameters plus ``sqrt(lambda)`` times each difference,
    the exact permutation mean (:func:`exact_null_mean`) recorded at each lambda (mean over the
    draws), and a line or parabola in lambda through these and lambda = 0 evaluated at -1
    (Cook and Stefanski 1994). Returns the extrapolated mean minus the mean at lambda = 0."""
    p0 = model_parameters(perf)
    n, m = perf.shape
    base = exact_null_mean(conf, perf, pattern_strata(perf, BLOCK_SIZE, parameters=p0))
    noise = []
    for _ in range(SIMEX_DRAWS):
        ease = rng.normal(size=n)
        prob = special.ndtr(p0.slope[None, :] * ease[:, None] - p0.intercept[None, :])
        refit = model_parameters((rng.random((n, m)) < prob).astype(float))
        noise.append((np.log(refit.slope / p0.slope), refit.intercept - p0.intercept))
    means = [base]
    for lam in SIMEX_LAMBDAS:
        got = []
        for d_slope, d_intercept in noise:
            s = math.sqrt(lam)
            p = ModelParameters(
                p0.slope * np.exp(s * d_slope), p0.intercept + s * d_intercept, p0.loading, True
            )
            got.append(exact_null_mean(conf, perf, pattern_strata(perf, BLOCK_SIZE, parameters=p)))
        means.append(float(np.mean(got)))
    degree = 2 if SIMEX == "quadratic" else 1
    fit = np.polyfit(np.array([0.0, *SIMEX_LAMBDAS]), np.array(means), degree)
    return float(np.polyval(fit, -1.0)) - base


def _strata(y: np.ndarray, parameters: ModelParameters | None) -> np.ndarray:
    """The test's strata, or with ``--fit``/``--order`` what they change (complete data)."""
    if (FIT == "tetrachoric" and ORDER == "w-v") or np.isnan(y).any():
        return pattern_strata(y, BLOCK_SIZE, parameters=parameters)
    p = _fitted(y) if parameters is None else parameters
    if ORDER == "w-v":
        return pattern_strata(y, BLOCK_SIZE, parameters=p)
    # the ragged path's order on complete data: bands of posterior ease, blocks of residual
    key = np.rint(y.sum(axis=1)).astype(np.int64)
    ease, resid = _ease(y, np.ones(y.shape, dtype=bool), p)
    return _keyed_blocks(key, ease, resid, BLOCK_SIZE)


def _decide(
    conf: np.ndarray,
    perf: np.ndarray,
    r: int,
    permutations: int = 99,
    parameters: ModelParameters | None = None,
    shift: float = 0.0,
) -> bool:
    """:func:`~metacog_metrics.private_signal.private_signal_test`'s decision at 0.05 (the same
    strata, permutations and statistic; each pair on its shared items on ragged data), drawn in
    batches of 10 and stopped once settled: the decision of all ``permutations`` draws.
    ``shift`` is added to every null draw (``--simex``)."""
    answered = ~np.isnan(perf).all(axis=1)
    c, y = conf[answered], perf[answered]
    strata = _strata(y, parameters)
    perms = permutations_within(strata, permutations, np.random.default_rng(r))
    allowed = math.floor(0.05 * (permutations + 1) + 1e-9) - 1
    if not np.isnan(y).any():
        observed = float(mean_taus(c, y))

        def draws(part: np.ndarray) -> np.ndarray:
            return stratified_null_draws(c, y, part, 1)
    else:
        pairs = _pairs(c, y, 10)
        dperf = (np.nan_to_num(y)[:, pairs.a] - np.nan_to_num(y)[:, pairs.b]).T
        observed = float(_ragged_means(np.nan_to_num(c), dperf, pairs, None)[0])

        def draws(part: np.ndarray) -> np.ndarray:
            return _ragged_draws(c, y, pairs, part, 1)

    count = 0
    for start in range(0, permutations, 10):
        got = draws(perms[start : start + 10]) + shift
        count += int(np.sum(got[np.isfinite(got)] >= observed - tie_tolerance(observed)))
        if count > allowed:
            return False
    return True


def _ragged(
    kind: str,
    n_items: int,
    reps: int,
    only: str | None = None,
    missing_only: str | None = None,
    complete_case: bool = False,
    seed: int = 20261207,
    oracle_items: int = 0,
    oracle_apart: bool = False,
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_private_signal import _logistic_population

    if kind == "size":
        cells = [(name, kw, 0.0) for name, kw in RAGGED_SETTINGS.items()]
        if only:  # the settings whose name starts with one of these
            cells = [c for c in cells if c[0].startswith(tuple(only.split(",")))]
    else:
        slopes = RAGGED_SETTINGS["per-model slopes (log-sd 0.5)"]
        cells = [("per-model slopes (log-sd 0.5)", slopes, v) for v in (0.1, 0.2, 0.35)]
    for name, kw, private in cells:
        for label, (missing, rate) in MISSING.items():
            if missing_only and not label.startswith(tuple(missing_only.split(","))):
                continue
            rng = np.random.default_rng(seed)
            noise_rng = np.random.default_rng(seed + 1)  # --simex's bootstrap, apart
            t0 = time.perf_counter()
            hits, kept, shifts = 0, [], []
            for r in range(reps):
                conf, perf = _logistic_population(
                    n_items + oracle_items, 20, rng, private=private, missing=missing,
                    miss_rate=rate, **kw,
                )  # fmt: skip
                known = None
                if oracle_items:  # with the tested items, or (--oracle-apart) without them
                    known = _fitted(perf[n_items:] if oracle_apart else perf)
                conf, perf = conf[:n_items], perf[:n_items]
                if complete_case:  # the items every model answered
                    rows = ~np.isnan(perf).any(axis=1)
                    conf, perf = conf[rows], perf[rows]
                    kept.append(int(rows.sum()))
                    if rows.sum() < 10:  # the analysis does not run it
                        continue
                shift = 0.0
                if SIMEX and not np.isnan(perf).any():
                    shift = simex_shift(conf, perf, noise_rng)
                    shifts.append(shift)
                hits += _decide(conf, perf, r, parameters=known, shift=shift)
            design = (
                "complete"
                if missing is None
                else "complete-case"
                if complete_case
                else "available-case"
            )
            fit_items = f"{oracle_items} other" if oracle_apart else n_items + oracle_items
            items = (
                f"{n_items} items"
                + (f" (model parameters from {fit_items})" if oracle_items else "")
                + (f" (fit {FIT}, order {ORDER})" if (FIT, ORDER) != ("tetrachoric", "w-v") else "")
                + (f" (complete-case median {np.median(kept):.0f})" if kept else "")
                + (
                    f" (SIMEX {SIMEX}: null shifted by {np.mean(shifts):+.5f} on average, "
                    f"sd {np.std(shifts):.5f})"
                    if shifts
                    else ""
                )
            )
            _print_rate(f"{kind} | {name} | private {private:g} | {label} | {design} | {items}",
                        hits, reps, t0)  # fmt: skip


def _centring(n_items: int, reps: int, only: str | None, seed: int = 20261207) -> None:
    """``--centring``: where the null sits, without Monte Carlo error in its mean. Per replicate
    (complete data, no private signal) the observed mean tau minus the exact permutation mean
    (:func:`exact_null_mean`), in null standard deviations (from 99 draws), with the strata of
    the test at ``--block-size`` from parameters fitted on the items themselves and from
    parameters fitted on 10,000 more items of the same population (the same replicates)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_private_signal import _logistic_population

    for name, kw in RAGGED_SETTINGS.items():
        if only and not name.startswith(tuple(only.split(","))):
            continue
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        gaps = np.empty((reps, 2))
        for r in range(reps):
            conf, perf = _logistic_population(n_items + 10_000, 20, rng, **kw)
            known = model_parameters(perf)
            conf, perf = conf[:n_items], perf[:n_items]
            observed = float(mean_taus(conf, perf))
            for j, parameters in enumerate((None, known)):
                strata = pattern_strata(perf, BLOCK_SIZE, parameters=parameters)
                perms = permutations_within(strata, 99, np.random.default_rng(r))
                sd = stratified_null_draws(conf, perf, perms, 1).std(ddof=1)
                gaps[r, j] = (observed - exact_null_mean(conf, perf, strata)) / sd
        mean, se = gaps.mean(axis=0), gaps.std(axis=0, ddof=1) / math.sqrt(reps)
        print(
            f"centring | {name} | {n_items} items | blocks of {BLOCK_SIZE}, {reps} reps: "
            f"(observed - null mean) / null sd {mean[0]:+.3f} (se {se[0]:.3f}) with the fitted "
            f"parameters, {mean[1]:+.3f} (se {se[1]:.3f}) with parameters from 10,000 more "
            f"items [{time.perf_counter() - t0:.0f} s]",
            flush=True,
        )


def _print_rate(label: str, hits: int, reps: int, t0: float) -> None:
    rate = hits / reps
    low, high = stats.binomtest(hits, reps).proportion_ci(0.95)
    print(
        f"{label}, {reps} reps: rate {rate:.3f} (se {math.sqrt(rate * (1 - rate) / reps):.3f}, "
        f"95% {low:.3f}-{high:.3f}) [{time.perf_counter() - t0:.0f} s]",
        flush=True,
    )


def _two_tracks(n_items: int, reps: int, rho: float = 0.3, shift: float = 1.0) -> None:
    from scipy import special

    rng = np.random.default_rng(5)
    t0, hits = time.perf_counter(), 0
    for r in range(reps):
        m = 20
        theta = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=m)
        track = np.repeat([0, 1], n_items // 2)
        b = rng.normal(0, 1.2, track.size)
        perf = rng.random((track.size, m)) < special.expit(theta[:, track].T - b[:, None])
        threshold = rng.normal(0, 0.7, m)
        look = -0.9 * b + shift * (track - 0.5) + rng.normal(0, 0.8, track.size)
        conf = look[:, None] + rng.logistic(size=(track.size, m)) > threshold[None, :]
        hits += _rejects(conf.astype(float), perf.astype(float), r)
    _print_rate(
        f"two tracks (ability correlation {rho}, confidence shift {shift}), {n_items} items",
        hits, reps, t0,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="1000,3000,10000")
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--block-size", type=int, default=DEFAULT_BLOCK_SIZE, help="items per block (the test's: 2)"
    )
    parser.add_argument("--oracle-items", type=int, default=0, help="--ragged: fit the models' "
                        "parameters on this many more items of the same population")  # fmt: skip
    parser.add_argument("--oracle-apart", action="store_true", help="--oracle-items: fit them "
                        "on the extra items only, not on the tested ones")  # fmt: skip
    fits = ("tetrachoric", "marginal", "marginal-prior", "equal-slopes")
    parser.add_argument("--fit", choices=fits, default="tetrachoric", help="--ragged: how "
                        "the models' slopes and intercepts are fitted (the test's: "
                        "tetrachoric)")  # fmt: skip
    parser.add_argument("--order", choices=("w-v", "ease"), default="w-v", help="--ragged, "
                        "complete data: bands of w then blocks of v (the test's), or bands of "
                        "posterior ease then blocks of residual")  # fmt: skip
    parser.add_argument("--simex", choices=("linear", "quadratic"), help="--ragged, complete "
                        "data: shift the null by the SIMEX extrapolation of its mean to "
                        "parameters without noise")  # fmt: skip
    parser.add_argument("--simex-draws", type=int, default=6, help="--simex: noise "
                        "draws per lambda")  # fmt: skip
    parser.add_argument("--centring", action="store_true", help="the observed mean minus the "
                        "exact permutation mean, in null sd (complete data; --only, "
                        "--block-size)")  # fmt: skip
    parser.add_argument("--independent", action="store_true")
    parser.add_argument("--two-tracks", action="store_true")
    parser.add_argument("--ragged", choices=("size", "power"))
    parser.add_argument("--only", help="--ragged size: the settings whose name starts so")
    parser.add_argument("--missing", help="--ragged: the missingness labels that start so")
    parser.add_argument("--complete-case", action="store_true", help="--ragged: drop the "
                        "items some model lacks, as the analysis does")  # fmt: skip
    args = parser.parse_args()
    items = [int(v) for v in args.items.split(",")]
    global BLOCK_SIZE, FIT, ORDER, SIMEX, SIMEX_DRAWS
    BLOCK_SIZE, FIT, ORDER = args.block_size, args.fit, args.order
    SIMEX, SIMEX_DRAWS = args.simex or "", args.simex_draws
    if args.centring:
        for n in items:
            _centring(n, args.reps, args.only)
        return
    if args.ragged:
        for n in items:
            _ragged(args.ragged, n, args.reps, args.only, args.missing, args.complete_case,
                    oracle_items=args.oracle_items, oracle_apart=args.oracle_apart)  # fmt: skip
        return
    if args.two_tracks:
        for n in items:
            _two_tracks(n, args.reps)
        return
    t0 = time.perf_counter()
    table = size_analysis(
        items=items,
        reps=args.reps,
        seed=args.seed,
        progress=False,
        workers=1,
        models=(20,),
        block_size=BLOCK_SIZE,
    )
    cols = ["correctness", "items", "reps"]
    for null in ("private_signal", "difficulty_stratified"):
        cols += [f"{null}_rate", f"{null}_se", f"{null}_low", f"{null}_high"]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print(f"[{time.perf_counter() - t0:.0f} s]")
    if args.independent:
        for n in items:
            _independent(n, args.reps)


if __name__ == "__main__":
    main()
