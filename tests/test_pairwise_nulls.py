"""The null registry's contract: every registered fast sampler draws from its null's law.

Each null writes its law twice as a short reference shuffle (one draw for a pair, one joint
draw of all models). Every sampler a null registers (per pair: binary or real-valued
confidence, NumPy or compiled, each sampler of a case; joint: also complete or ragged data) is
run here on small inputs, and the tau-b it draws is compared in distribution with many draws of
the reference shuffle, the tau-b of those computed from its definition (signs of all item
pairs): a chi-square two-sample test on the distinct values (deciles where they are many),
each pair's tau-b and, for joint draws, the mean over pairs (which carries the dependence
between pairs). The cases come from the registry, so a sampler registered later is held to
the same check. A deliberately wrong sampler, registered in a temporary registry, fails it.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from metacog_metrics.pairwise import joint_draws as jd
from metacog_metrics.pairwise.nulls import (
    NullSpec,
    PairSampler,
    get_null,
    null_names,
    register,
    registry_scope,
)
from metacog_metrics.pairwise.pair_draws import PairInputs, accumulate
from tests.availability import unavailable

_DRAWS = 20_000  # draws of a per-pair sampler and of the reference law
_JOINT_DRAWS = 6_000  # joint draws of a sampler and of the reference law
_ALPHA = 1e-5  # the smallest p-value a right sampler may give (the seeds are fixed)


# --------------------------------------------------------------------------------------------
# Inputs: small, with confidence that follows correctness (so the laws differ)
# --------------------------------------------------------------------------------------------


def _pair_inputs(kind: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(items, 2)`` confidence and correctness of one pair: binary, on a grid, or not."""
    perf = np.array([[1, 1], [1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 0], [1, 1], [0, 1]])
    if kind == "binary":
        conf = np.array([[1, 1], [1, 0], [0, 1], [1, 0], [0, 0], [0, 0], [1, 0], [1, 1], [0, 1]])
        return [(conf.astype(float), perf.astype(float))]
    grid = np.array([[1, 0.75], [0.75, 0.25], [0.25, 1], [1, 0.5], [0, 0.25], [0.5, 0],
                     [0.25, 0], [0.75, 1], [0.5, 0.75]])  # fmt: skip
    off_grid = np.sqrt(grid + 0.013)  # no common denominator: the sorted paths
    return [(grid, perf.astype(float)), (off_grid, perf.astype(float))]


def _joint_inputs(kind: str, data: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(16, 3)`` arrays, NaN where a model lacks an item (``ragged``): binary, or on a grid
    of halves (enough items a level for the grid-code paths), or off any grid."""
    rng = np.random.default_rng(3)
    perf = (rng.random((16, 3)) < 0.55).astype(float)
    follow = rng.random((16, 3)) < 0.8
    if kind == "binary":
        confs = [np.where(follow, perf, 1 - perf)]
    else:
        grid = np.where(follow, perf, 1 - perf) * rng.choice([1, 0.5], (16, 3))
        confs = [grid, np.sqrt(grid + 0.013)]
    out = []
    for conf in confs:
        c, p = conf.copy(), perf.copy()
        if data == "ragged":
            c[:3, 1] = p[:3, 1] = np.nan  # model 1 lacks items 0-2, model 2 items 13-15
            c[13:, 2] = p[13:, 2] = np.nan
        out.append((c, p))
    return out


# --------------------------------------------------------------------------------------------
# The reference: tau-b from its definition, on each pair's shared items
# --------------------------------------------------------------------------------------------


def _tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """tau-b of ``(K, n)`` rows from the signs of all item pairs (NaN where a side is
    constant); x rounded to 12 decimals, so that decimal ties stay ties."""
    x = np.round(x, 12)
    i, j = np.triu_indices(x.shape[1], 1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    n0 = i.size
    den = (n0 - (sx == 0).sum(axis=1)) * (n0 - (sy == 0).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (sx * sy).sum(axis=1) / np.sqrt(den), np.nan)


def _pair_taus(conf: np.ndarray, perf: np.ndarray) -> np.ndarray:
    """``(K, P)`` tau-b of every pair of ``(K, items, models)`` draws on its shared items."""
    m = conf.shape[-1]
    out = []
    for a, b in zip(*np.triu_indices(m, 1)):
        shared = ~np.isnan(conf[0, :, a]) & ~np.isnan(conf[0, :, b])
        dc = conf[:, shared, a] - conf[:, shared, b]
        dp = perf[:, shared, a] - perf[:, shared, b]
        out.append(_tau_b(dc, dp))
    return np.stack(out, axis=1)


@functools.cache
def _reference(law: Callable, scope: str, kind: str, data: str, index: int) -> np.ndarray:
    """``(n, P)`` tau-b of draws of ``law`` on the ``index``-th input of the case (computed
    once for the samplers of every engine)."""
    if scope == "pair":
        conf, perf = _pair_inputs(kind)[index]
        n, seed = _DRAWS, 100 + index
    else:
        conf, perf = _joint_inputs(kind, data)[index]
        n, seed = _JOINT_DRAWS, 200 + index
    rng = np.random.default_rng(seed)
    if scope == "pair":
        draws = [law(conf, perf, rng) for _ in range(n)]
        return _pair_taus(np.stack([d[0] for d in draws]), np.stack([d[1] for d in draws]))
    return np.stack([_joint_taus(conf, perf, *law(conf, perf, rng)) for _ in range(n)])


def _joint_taus(conf: np.ndarray, perf: np.ndarray, conf_from: np.ndarray,
                perf_from: np.ndarray) -> np.ndarray:  # fmt: skip
    """``(P,)`` tau-b of one joint draw, from the definition: each pair, on its shared items,
    sees each model's own values there in the order the draw lands them (item by item, not
    through :func:`~metacog_metrics.pairwise.masked.pair_view`)."""
    m = conf.shape[1]
    out = []
    for a, b in zip(*np.triu_indices(m, 1)):
        shared = np.flatnonzero(~np.isnan(conf[:, a]) & ~np.isnan(conf[:, b]))
        cols_c, cols_p = [], []
        for model in (a, b):
            # the items of the shared set, in the order of the position their value lands on
            landing = {int(src): pos for pos, src in enumerate(conf_from[:, model])}
            by_c = sorted(shared, key=lambda j, landing=landing: landing[j])
            landing = {int(src): pos for pos, src in enumerate(perf_from[:, model])}
            by_p = sorted(shared, key=lambda j, landing=landing: landing[j])
            cols_c.append(conf[by_c, model])
            cols_p.append(perf[by_p, model])
        dc, dp = cols_c[0] - cols_c[1], cols_p[0] - cols_p[1]
        out.append(_tau_b(dc[None], dp[None])[0])
    return np.array(out)


def _same_law_p(a: np.ndarray, b: np.ndarray) -> float:
    """Chi-square two-sample test of two samples of a statistic: on its distinct values (pooled
    with their neighbours below 10 counts), on deciles where it has more than 40; undefined
    values (NaN) are a category of their own."""
    a, b = np.round(a, 9), np.round(b, 9)
    both = np.concatenate([a, b])
    finite = both[np.isfinite(both)]
    values = np.unique(finite)
    edges = values if values.size <= 40 else np.unique(np.quantile(finite, np.linspace(0, 1, 11)))

    def counts(x: np.ndarray) -> np.ndarray:
        x = x[np.isfinite(x)]
        if values.size <= 40:
            return np.bincount(np.searchsorted(values, x), minlength=values.size)
        return np.histogram(x, np.r_[edges[:-1], np.inf])[0]

    table = np.stack([counts(a), counts(b)])
    table = np.column_stack([table, [np.isnan(a).sum(), np.isnan(b).sum()]])
    merged, run = [], np.zeros(2, dtype=np.int64)
    for column in table.T:  # neighbours pooled until each bin has 10 draws
        run = run + column
        if run.sum() >= 10:
            merged.append(run)
            run = np.zeros(2, dtype=np.int64)
    if run.sum() and merged:
        merged[-1] = merged[-1] + run
    table = np.array(merged).T
    if table.shape[1] < 2:
        return 1.0 if table.size and (table[0] > 0).all() == (table[1] > 0).all() else 0.0
    return float(stats.chi2_contingency(table).pvalue)


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------


def _needs(engine: str) -> None:
    if engine == "numba" and importlib.util.find_spec("numba") is None:
        unavailable("numba is not installed (the fast extra): the compiled samplers")
    if engine == "torch" and importlib.util.find_spec("torch") is None:
        unavailable("torch is not installed (the gpu extra): the product samplers")


def _check_pair_sampler(spec: NullSpec, kind: str, engine: str, index: int) -> None:
    """The ``index``-th per-pair sampler of ``spec``'s case against its reference law."""
    sampler = spec.pair_samplers[kind, engine][index]
    _needs(sampler.engine)
    bound = 0
    for seed, (conf, perf) in enumerate(_pair_inputs(kind)):
        inputs = PairInputs(conf, perf, np.array([0]), np.array([1]), kind == "binary",
                            sampler.engine)  # fmt: skip
        idx = np.arange(1)
        if sampler.serves is not None and not sampler.serves(inputs)[0]:
            continue
        bound += 1
        out = np.full((1, _DRAWS), -9.0)
        acc = sampler.bind(inputs, idx)(_DRAWS, np.random.SeedSequence(seed), out)
        assert (out != -9.0).all(), "the sampler recorded every draw"
        # the counts it returns are those of the draws it recorded
        again = accumulate(inputs.tau, out)
        np.testing.assert_array_equal(acc[:, :3], again[:, :3])
        np.testing.assert_allclose(acc[:, 3:], again[:, 3:], rtol=1e-9, atol=1e-9)
        ref = _reference(spec.pair_law, "pair", kind, "complete", seed)[:, 0]
        assert _pair_taus(conf[None], perf[None])[0, 0] == pytest.approx(inputs.tau[0])
        p = _same_law_p(out[0], ref)
        assert p > _ALPHA, f"{spec.name} {kind} {engine} sampler {index}: p = {p:.3g}"
    assert bound, "no test input for this sampler"


def _check_joint_sampler(spec: NullSpec, kind: str, data: str, engine: str, index: int) -> None:
    """The ``index``-th joint sampler of ``spec``'s case against its reference law."""
    sampler = spec.joint_samplers[kind, data, engine][index]
    _needs(sampler.engine)
    from metacog_metrics.pairwise import engines

    kernels = engines.compiled_kernels("numba") if sampler.engine == "numba" else None
    bound = 0
    for seed, (conf, perf) in enumerate(_joint_inputs(kind, data)):
        present = None if data == "complete" else ~np.isnan(conf)
        ia, ib = np.triu_indices(3, 1)
        inputs = jd.JointInputs(np.nan_to_num(conf), np.nan_to_num(perf), present,
                                kind == "binary", ia, ib, kernels)  # fmt: skip
        found = sampler.bind(inputs)
        if found is None:
            continue
        bound += 1
        draws = found[1](_JOINT_DRAWS, np.random.SeedSequence(seed))
        assert draws.shape == (_JOINT_DRAWS, 3)
        ref = _reference(spec.joint_law, "joint", kind, data, seed)
        stats_of = [(draws[:, k], ref[:, k]) for k in range(3)]
        stats_of.append((np.nanmean(draws, axis=1), np.nanmean(ref, axis=1)))
        ps = [_same_law_p(a, b) for a, b in stats_of]
        assert min(ps) > _ALPHA, f"{spec.name} {kind} {data} {engine} sampler {index}: {ps}"
    assert bound, "no test input binds this sampler"


def _pair_cases() -> list:
    return [
        pytest.param(name, kind, engine, i, id=f"{name}-{kind}-{engine}-{i}")
        for name in null_names()
        for (kind, engine), samplers in get_null(name).pair_samplers.items()
        for i in range(len(samplers))
    ]


def _joint_cases() -> list:
    return [
        pytest.param(name, kind, data, engine, i, id=f"{name}-{kind}-{data}-{engine}-{i}")
        for name in null_names()
        for (kind, data, engine), samplers in get_null(name).joint_samplers.items()
        for i in range(len(samplers))
    ]


@pytest.mark.parametrize(("name", "kind", "engine", "index"), _pair_cases())
def test_every_per_pair_sampler_draws_from_its_nulls_law(name, kind, engine, index):
    _check_pair_sampler(get_null(name), kind, engine, index)


@pytest.mark.parametrize(("name", "kind", "data", "engine", "index"), _joint_cases())
def test_every_joint_sampler_draws_from_its_nulls_law(name, kind, data, engine, index,
                                                      monkeypatch):  # fmt: skip
    # the product samplers bind on a CUDA device only: here on torch's CPU tensors
    monkeypatch.setenv("METACOG_TORCH_DEVICE", "cpu")
    monkeypatch.delenv("METACOG_NO_TORCH", raising=False)
    _check_joint_sampler(get_null(name), kind, data, engine, index)


def test_the_registry_has_samplers_for_every_case_of_the_papers_nulls():
    # the nulls of the paper have a NumPy and a compiled sampler for every case
    for name in null_names():
        spec = get_null(name)
        assert set(spec.pair_samplers) == {(k, e) for k in ("binary", "levels")
                                          for e in ("numpy", "numba")}  # fmt: skip
        joint = set(spec.joint_samplers)
        assert {(k, d, "numpy") for k in ("binary", "levels") for d in ("complete", "ragged")} <= (
            joint
        )
        assert ("binary", "ragged", "numba") in joint and len(joint) == 8


# --------------------------------------------------------------------------------------------
# The check can fail: wrong samplers in a temporary registry
# --------------------------------------------------------------------------------------------


def _wrong(pair_samplers: dict, joint_samplers: dict) -> NullSpec:
    """The calibration-preserving null's laws with the given (wrong) samplers."""
    right = get_null("calibration_preserving")
    return NullSpec("wrong", "wrong null", "#000000", "a sampler that breaks its law",
                    right.pair_law, right.joint_law, (20, 21), pair_samplers,
                    joint_samplers)  # fmt: skip


def test_a_wrong_per_pair_sampler_fails_the_check():
    # the base-rate sampler (dperf permuted against dconf) registered for the law that keeps
    # each model's own (conf, perf) pairs
    other = get_null("base_rate").pair_samplers
    with registry_scope():
        spec = register(_wrong({("binary", "numpy"): other["binary", "numpy"],
                                ("levels", "numpy"): other["levels", "numpy"]}, {}))  # fmt: skip
        for kind in ("binary", "levels"):
            with pytest.raises(AssertionError, match=r"wrong .* sampler 0: p = "):
                _check_pair_sampler(spec, kind, "numpy", 0)
    assert "wrong" not in null_names()


def test_a_subtly_wrong_per_pair_sampler_fails_the_check():
    # the right sampler, but drawing for the pair with its models swapped in the categories
    # of one side: B's categories are A's (a plausible indexing slip)
    right = get_null("calibration_preserving").pair_samplers["binary", "numpy"][0]

    def bind(inputs: PairInputs, idx: np.ndarray):
        swapped = PairInputs(inputs.conf, inputs.perf, inputs.ia, inputs.ia, True, "numpy")
        swapped.__dict__["tables"] = inputs.tables  # the observed tables stay the pair's
        return right.bind(swapped, idx)

    with registry_scope():
        spec = register(_wrong({("binary", "numpy"): (PairSampler("numpy", bind),)}, {}))
        with pytest.raises(AssertionError, match=r"p = "):
            _check_pair_sampler(spec, "binary", "numpy", 0)


@pytest.mark.parametrize("data", ["complete", "ragged"])
def test_a_wrong_joint_sampler_fails_the_check(data):
    # conf and perf split (the base-rate shuffle) registered for the law that keeps them
    # together
    sampler = jd.bits(split=True) if data == "complete" else jd.ragged(split=True)
    with registry_scope():
        spec = register(_wrong({}, {("binary", data, "numpy"): (sampler,)}))
        with pytest.raises(AssertionError, match="wrong binary"):
            _check_joint_sampler(spec, "binary", data, "numpy", 0)


# --------------------------------------------------------------------------------------------
# A new null is one module
# --------------------------------------------------------------------------------------------


def _calibrated(ragged: bool) -> tuple[np.ndarray, np.ndarray]:
    """60 items x 4 models whose confidence follows their correctness on 80% of items."""
    rng = np.random.default_rng(8)
    perf = (rng.random((60, 4)) < 0.6).astype(float)
    conf = np.where(rng.random((60, 4)) < 0.8, perf, 1 - perf)
    if ragged:
        conf[:12, 1] = perf[:12, 1] = np.nan
        conf[50:, 3] = perf[50:, 3] = np.nan
    return conf, perf


@pytest.mark.parametrize("ragged", [False, True], ids=["complete", "ragged"])
def test_a_new_null_is_one_module(ragged):
    from metacog_metrics.pairwise import joint_null_draws, pair_permutation_test
    from metacog_metrics.pairwise import pairwise_calibration as pc
    from tests import pairwise_toy_null as toy

    conf, perf = _calibrated(ragged)
    kw = {"permutations": 400, "joint_permutations": 300, "rng": 3, "reasoning": [True] * 4,
          "min_pairs": 1, "sequential": False}  # fmt: skip
    before = pc(conf, perf, **kw)
    with registry_scope():
        register(toy.SPEC)
        assert null_names() == (*before.per_pair, "confidence_shuffled")
        res = pc(conf, perf, **kw)
        if not ragged:
            alone = pair_permutation_test(conf, perf, null="confidence_shuffled",
                                          permutations=50, rng=1)  # fmt: skip
            draws = joint_null_draws(conf, perf, null="confidence_shuffled", n=40, rng=1)
            assert alone.null == "confidence_shuffled" and alone.n_valid.tolist() == [50] * 6
            assert draws.shape == (40, 6) and np.isfinite(draws).all()
    assert null_names() == tuple(before.per_pair)  # gone with the scope
    # the paper's nulls draw exactly as without the toy (each null has its own seed streams)
    for null in before.per_pair:
        np.testing.assert_array_equal(res.per_pair[null].p_value, before.per_pair[null].p_value)
        np.testing.assert_array_equal(res.nulls[null].draws, before.nulls[null].draws)
    assert res.fdr_significant_share == before.fdr_significant_share  # the headline null's
    # the toy runs through every part of the analysis, from its reference laws
    mine = res.per_pair["confidence_shuffled"]
    assert mine.engine == "numpy" and (mine.n_valid == 400).all()
    assert list(res.nulls) == list(res.delta_curve.null_mean) == [*before.nulls, toy.SPEC.name]
    assert "confidence_shuffled" in res.pair_types["R-R"].p_value
    assert "confidence_shuffled_p" in res.table.columns
    # ... and its draws follow them: confidence that carries no item information is centred
    # on 0, and these calibrated models are far above it
    rng = np.random.default_rng(0)
    shared = ~np.isnan(conf[:, 0]) & ~np.isnan(conf[:, 1])
    c01, p01 = conf[shared][:, :2], perf[shared][:, :2]
    ref = [toy.pair_law(c01, p01, rng) for _ in range(4000)]
    law = _pair_taus(np.stack([r[0] for r in ref]), np.stack([r[1] for r in ref]))[:, 0]
    assert mine.null_mean[0] == pytest.approx(law.mean(), abs=4 * law.std() / np.sqrt(400))
    assert mine.null_sd[0] == pytest.approx(law.std(), rel=0.15)
    assert (mine.p_value < 0.01).all()
    means = np.array([np.nanmean(_joint_taus(conf, perf, *toy.joint_law(conf, perf, rng)))
                      for _ in range(600)])  # fmt: skip
    got = res.nulls["confidence_shuffled"]
    assert got.n_draws == 300
    assert got.mean == pytest.approx(means.mean(), abs=4 * means.std() / np.sqrt(300))
    assert got.sd == pytest.approx(means.std(), rel=0.2)
