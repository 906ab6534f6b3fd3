"""Pairwise calibration: the rules of the small pieces (inputs, pairs, p-values, thread pool,
progress bar, result tables), each pinned against hand computation or enumeration.

Fast unit tests; the statistical behaviour of the nulls is tested in ``tests/test_pairwise.py``.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import io
import itertools
import os
import sys
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from metacog_metrics.pairwise import (
    NULLS,
    common,
    joint_null_draws,
    pair_permutation_test,
    pairwise_calibration,
    pairwise_taus,
)
from metacog_metrics.pairwise.analysis import (
    _mean_null,
    _merge_pair_results,
    _pair_types,
    _subset_mean,
)
from metacog_metrics.pairwise.common import (
    _check,
    _check_alternative,
    _check_engine,
    _execute,
    _p_values,
    _pairs,
    _Plan,
    _run_tasks,
)
from metacog_metrics.pairwise.engines import compiled_kernels
from metacog_metrics.pairwise.joint import _joint_plan, joint_inputs
from metacog_metrics.pairwise.nulls import get_null
from metacog_metrics.pairwise.results import DeltaCurve, PairTestResult, PairwiseResult
from tests.availability import unavailable

# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def test_check_accepts_the_smallest_arrays_and_flags_binary_confidence():
    perf = np.array([[1.0, 0.0], [0.0, 1.0]])
    c, p, binary = _check([[1, 0], [0, 1]], [[1, 0], [0, 1]])  # 2 items x 2 models is enough
    assert c.dtype == float and p.dtype == float and binary is True
    assert _check([[0.5, 0.0], [0.0, 1.0]], perf)[2] is False
    # a batch axis in front is allowed
    assert _check(np.zeros((3, 2, 2)), np.ones((3, 2, 2)))[2] is True


@pytest.mark.parametrize("shape", [(2,), (1, 3), (3, 1), (4, 1, 3), (4, 3, 1)], ids=str)
def test_check_rejects_fewer_than_two_items_or_models(shape):
    with pytest.raises(ValueError, match=r"need \(\.\.\., items >= 2, models >= 2\) arrays, got"):
        _check(np.zeros(shape), np.zeros(shape))


def test_check_names_both_shapes():
    with pytest.raises(ValueError, match=r"conf \(3, 2\) and perf \(3, 3\) must have the same"):
        _check(np.zeros((3, 2)), np.zeros((3, 3)))


@pytest.mark.parametrize("where", ["conf", "perf"])
def test_check_rejects_nan_in_either_array(where):
    conf, perf = np.zeros((3, 2)), np.zeros((3, 2))
    (conf if where == "conf" else perf)[1, 1] = np.nan
    with pytest.raises(
        ValueError,
        match=r"^conf and perf must be complete \(no NaN\); build complete-case matrices$",
    ):
        _check(conf, perf)


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_check_rejects_infinite_confidence(value):
    conf = np.zeros((3, 2))
    conf[0, 1] = value
    with pytest.raises(ValueError, match=r"^conf has infinite values$"):
        _check(conf, np.zeros((3, 2)))


def test_check_rejects_correctness_other_than_zero_and_one():
    with pytest.raises(ValueError, match=r"^perf must hold only 0 and 1$"):
        _check(np.zeros((3, 2)), np.array([[0.0, 1.0], [1.0, 0.5], [0.0, 0.0]]))


def test_pairs_default_is_every_pair_once_in_order():
    ia, ib = _pairs(4)
    assert list(zip(ia.tolist(), ib.tolist())) == [
        (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3),
    ]  # fmt: skip


def test_pairs_given_are_kept_and_the_bounds_are_inclusive():
    # the first (0) and last (2) model are valid; any integer type becomes an index array
    ia, ib = _pairs(3, (np.array([0, 2], dtype=np.int32), np.array([2, 1], dtype=np.uint8)))
    assert ia.tolist() == [0, 2] and ib.tolist() == [2, 1]
    assert ia.dtype == np.intp and ib.dtype == np.intp
    ia, ib = _pairs(3, ([], []))  # no pairs at all is allowed
    assert ia.size == 0 and ib.size == 0


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (([0, 1], [1]), r"pairs must be two equal-length 1-D index arrays \(a, b\)$"),
        (([[0, 1]], [[1, 2]]), r"pairs must be two equal-length 1-D index arrays \(a, b\)$"),
        (([0], [3]), "pair index out of range$"),  # index == n_models
        (([3], [0]), "pair index out of range$"),
        (([-1], [0]), "pair index out of range$"),
        (([0], [-1]), "pair index out of range$"),
        (([0, 1], [1, 1]), "a pair must join two different models$"),
    ],
)
def test_pairs_rejects_bad_index_arrays(pairs, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        _pairs(3, pairs)


def test_checks_of_the_options_name_the_bad_value():
    for ok in ("two-sided", "greater", "less"):
        _check_alternative(ok)
    with pytest.raises(
        ValueError, match=r"^alternative must be 'two-sided', 'greater' or 'less', got 'more'$"
    ):
        _check_alternative("more")
    for ok in ("auto", "numpy", "numba"):
        _check_engine(ok)
    with pytest.raises(
        ValueError, match=r"^engine must be one of \('auto', 'numpy', 'numba'\), got 'jax'$"
    ):
        _check_engine("jax")
    for ok in ("base_rate", "calibration_preserving"):
        assert get_null(ok).name == ok
    with pytest.raises(
        ValueError,
        match=r"^null must be one of \('base_rate', 'calibration_preserving'\), got 'x'$",
    ):
        get_null("x")


def test_public_functions_check_their_inputs():
    with pytest.raises(ValueError, match="items >= 2"):
        pairwise_taus(np.zeros((1, 3)), np.zeros((1, 3)))


# --------------------------------------------------------------------------------------------
# p-values
# --------------------------------------------------------------------------------------------


def test_p_values_by_hand():
    # 9 valid draws: 3 at or above the observed value, 1 at or below -> p_greater = 4/10,
    # p_less = 2/10, two-sided 2 * 0.2 = 0.4; the second pair: 0 above, 9 below -> 1/10, 10/10,
    # two-sided 0.2; the third pair: 9 and 9 (every draw tied) -> 1, 1, two-sided min(1, 2) = 1;
    # the fourth: no valid draw -> NaN
    ge = np.array([3, 0, 9, 0])
    le = np.array([1, 9, 9, 0])
    n = np.array([9, 9, 9, 0])
    two, pg, pl = _p_values(ge, le, n, "two-sided")
    np.testing.assert_allclose(pg[:3], [0.4, 0.1, 1.0])
    np.testing.assert_allclose(pl[:3], [0.2, 1.0, 1.0])
    np.testing.assert_allclose(two[:3], [0.4, 0.2, 1.0])
    assert np.isnan(pg[3]) and np.isnan(pl[3]) and np.isnan(two[3])
    # one valid draw, above the observed value: 2/2 and 1/2
    one = _p_values(np.array([1]), np.array([0]), np.array([1]), "two-sided")
    np.testing.assert_allclose([v[0] for v in one], [1.0, 1.0, 0.5])
    np.testing.assert_allclose(_p_values(ge, le, n, "greater")[0][:3], [0.4, 0.1, 1.0])
    np.testing.assert_allclose(_p_values(ge, le, n, "less")[0][:3], [0.2, 1.0, 1.0])


# --------------------------------------------------------------------------------------------
# The thread pool and the progress bar
# --------------------------------------------------------------------------------------------


def _recording_tasks(k, seconds=0.0):
    """``k`` tasks returning their index, each noting the thread it ran on."""
    threads: dict[int, int] = {}

    def make(i):
        def task():
            threads[i] = threading.get_ident()
            time.sleep(seconds)
            return np.array([i])

        return task

    return [make(i) for i in range(k)], threads


def _ran_on_main(threads):
    main = threading.get_ident()
    return [ident == main for ident in threads.values()]


@pytest.mark.parametrize("workers", [1, 0, -3])
def test_one_worker_or_fewer_runs_on_the_calling_thread(workers):
    tasks, threads = _recording_tasks(3)
    out = _run_tasks(tasks, [1, 1, 1], workers, None)
    assert [int(v[0]) for v in out] == [0, 1, 2]
    assert all(_ran_on_main(threads))


def test_several_workers_run_on_a_pool_and_keep_the_order():
    tasks, threads = _recording_tasks(5, seconds=0.02)
    out = _run_tasks(tasks, [1] * 5, 2, None)
    assert [int(v[0]) for v in out] == [0, 1, 2, 3, 4]
    assert not any(_ran_on_main(threads))
    assert len(set(threads.values())) == 2  # as many threads as workers, no more
    tasks, threads = _recording_tasks(1)  # one task: no pool
    assert int(_run_tasks(tasks, [1], 4, None)[0][0]) == 0
    assert all(_ran_on_main(threads))


@pytest.mark.parametrize(("cpus", "pool"), [(None, False), (1, False), (4, True)])
def test_default_workers_is_the_cpu_count(monkeypatch, cpus, pool):
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    tasks, threads = _recording_tasks(3)
    _run_tasks(tasks, [1, 1, 1], None, None)
    assert not any(_ran_on_main(threads)) if pool else all(_ran_on_main(threads))


class _Bar:
    def __init__(self):
        self.updates: list[int] = []

    def update(self, k):
        self.updates.append(k)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_bar_advances_by_each_task_size(workers):
    tasks, _ = _recording_tasks(3)
    bar = _Bar()
    _run_tasks(tasks, [5, 7, 11], workers, bar)
    assert bar.updates == [5, 7, 11]


def _plan(label, values, sizes):
    def finish(parts):
        return [int(v[0]) for v in parts]

    return _Plan(label, [lambda v=v: np.array([v]) for v in values], list(sizes), finish)


def test_execute_hands_each_plan_its_own_results(monkeypatch):
    a = _plan("a", [1, 2, 3], [1, 1, 1])
    b = _plan("b", [10, 20], [1, 1])
    assert _execute([a, b], 1, False) == [[1, 2, 3], [10, 20]]
    assert _execute([b, a], 2, False) == [[10, 20], [1, 2, 3]]
    # the workers asked for are used: one worker runs every task on the calling thread
    tasks, threads = _recording_tasks(3)
    one = _Plan("one", tasks, [1, 1, 1], lambda parts: [int(v[0]) for v in parts])
    assert _execute([one], 1, False) == [[0, 1, 2]] and all(_ran_on_main(threads))
    # the bar gets the total of every plan's pair-draws, each task's advance, and is closed
    bars = []

    class Bar(_Bar):
        def __init__(self, total, desc, enabled):
            super().__init__()
            self.args, self.closed = (total, desc, enabled), False
            bars.append(self)

        def close(self):
            self.closed = True

    monkeypatch.setattr(common, "_progress", Bar)
    _execute([_plan("a", [1, 2], [3, 4]), _plan("b", [5], [6])], 1, True)
    assert bars[0].args == (13, "permutations (both nulls)", True)
    assert bars[0].updates == [3, 4, 6] and bars[0].closed


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def terminal(monkeypatch):
    """A stand-in terminal on stderr; tqdm's lock a thread lock (its default, a multiprocessing
    semaphore, is shared with forked processes: a test runner that forks per test, as mutmut
    does, can hang on it)."""
    from tqdm.auto import tqdm

    monkeypatch.setattr(tqdm, "_lock", threading.RLock(), raising=False)

    def install():  # in the test itself: pytest sets its own stderr for each test phase
        stream = _Terminal()
        monkeypatch.setattr(sys, "stderr", stream)
        return stream

    return install


def _bar_output(monkeypatch, plans, tty):
    from tqdm.auto import tqdm

    monkeypatch.setattr(tqdm, "_lock", threading.RLock(), raising=False)
    stream = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    _execute(plans, 1, True)
    return stream.getvalue()


def test_progress_bar_on_a_terminal_counts_pair_draws_and_is_erased(monkeypatch):
    text = _bar_output(monkeypatch, [_plan("joint base_rate", [1, 2], [2, 4])], tty=True)
    # the bar's first frame: its label, the total in pair-draws (unit-scaled), then erased
    assert text.startswith("\rjoint base_rate:   0%|")
    assert "0.00/6.00" in text and " pair-draws/s]" in text
    assert "6.00/6.00" not in text  # leave=False: no final frame left behind
    assert text.endswith("\r") and text.rsplit("\r", 2)[1].strip() == ""
    both = [_plan("a", [1], [2]), _plan("b", [2], [3])]
    assert _bar_output(monkeypatch, both, tty=True).startswith("\rpermutations (both nulls):")


def test_no_progress_bar_in_a_log_or_when_disabled(monkeypatch, terminal):
    stream = terminal()
    _execute([_plan("a", [1, 2], [2, 4])], 1, False)
    assert stream.getvalue() == ""
    assert _bar_output(monkeypatch, [_plan("a", [1, 2], [2, 4])], tty=False) == ""


# --------------------------------------------------------------------------------------------
# Result objects: FDR shares and tables, on hand-made results
# --------------------------------------------------------------------------------------------


def _pair_test(null, tau, q, null_mean):
    nan = np.full(len(tau), np.nan)
    p = np.asarray(q, dtype=float) / 2  # any p-values: only q decides the shares
    return PairTestResult(
        null, "two-sided", 99, np.asarray(tau, dtype=float), p, nan, nan, np.asarray(q, float),
        np.asarray(null_mean, dtype=float), np.arange(len(tau)) / 10.0,
        np.full(len(tau), 99, dtype=np.int64),
    )  # fmt: skip


def _result(tau, q_base, q_cal, null_mean, *, fdr_alpha=0.05, n_items_pair=None):
    """Five pairs of four models: (a,b) (a,c) (a,d) (b,c) (c,d)."""
    models = ("a", "b", "c", "d")
    curve = DeltaCurve(
        np.array([0.0, 0.5]), np.array([1, 5]), np.array([np.nan, 0.2]),
        {"base_rate": np.array([np.nan, 0.01])}, {"base_rate": np.array([np.nan, -0.1])},
        {"base_rate": np.array([np.nan, 0.12])}, {"base_rate": np.array([np.nan, 0.03])}, 3,
    )  # fmt: skip
    return PairwiseResult(
        models=models,
        model_a=("a", "a", "a", "b", "c"),
        model_b=("b", "c", "d", "c", "d"),
        tau=np.asarray(tau, dtype=float),
        accuracy=np.array([0.1, 0.2, 0.3, 0.4]),
        accuracy_gap=np.array([0.1, 0.2, 0.3, 0.1, 0.1]),
        pair_type=("R-R", "R-NR", None, "R-NR", "NR-NR"),
        n_items=10,
        continuous=False,
        mean_tau=float(np.nanmean(tau)),
        n_pairs=5,
        n_pairs_valid=5,
        per_pair={
            "base_rate": _pair_test("base_rate", tau, q_base, null_mean),
            "calibration_preserving": _pair_test("calibration_preserving", tau, q_cal, null_mean),
        },
        nulls={},
        fdr_alpha=fdr_alpha,
        fdr_significant_share=float("nan"),
        delta_curve=curve,
        pair_types={},
        alternative="two-sided",
        permutations=99,
        joint_permutations=0,
        n_items_pair=n_items_pair,
    )


def test_fdr_share_counts_q_strictly_below_alpha_among_pairs_with_a_q():
    # q: 0.01 and 0.049 below 0.05, 0.05 itself is not, NaN is left out -> 2 of 4
    res = _result([0.1] * 5, [0.01, 0.05, np.nan, 0.049, 0.2], [0.5] * 5, [0.0] * 5)
    assert res.fdr_share() == 0.5  # the default null is base_rate
    assert res.fdr_share("base_rate") == 0.5
    assert res.fdr_share("calibration_preserving") == 0.0
    assert _result([0.1] * 5, [0.01] * 5, [0.5] * 5, [0.0] * 5, fdr_alpha=0.01).fdr_share() == 0
    nan_q = _result([0.1] * 5, [np.nan] * 5, [0.5] * 5, [0.0] * 5)
    assert np.isnan(nan_q.fdr_share())


def test_fdr_share_by_direction_splits_on_tau_above_its_null_mean():
    # significant (q < 0.05) pairs: 0 (tau 0.3 > 0.1: above), 1 (tau 0.1 == 0.1: not above, so
    # below), 4 (tau -0.2 < 0: below); pair 2 has no q; pair 3 is not significant -> of 4 pairs
    # with a q: above 1/4, below 2/4
    tau = [0.3, 0.1, 0.5, 0.9, -0.2]
    null_mean = [0.1, 0.1, 0.0, 0.0, 0.0]
    res = _result(tau, [0.01, 0.02, np.nan, 0.05, 0.03], [0.5] * 5, null_mean)
    assert res.fdr_share_by_direction() == {"above": 0.25, "below": 0.5}
    assert res.fdr_share_by_direction("calibration_preserving") == {"above": 0.0, "below": 0.0}
    nan_q = _result(tau, [np.nan] * 5, [0.5] * 5, null_mean)
    split = nan_q.fdr_share_by_direction()
    assert set(split) == {"above", "below"} and all(np.isnan(v) for v in split.values())


def test_pairwise_table_one_row_per_pair_with_each_models_accuracy():
    tau = [0.3, 0.1, 0.5, 0.9, -0.2]
    res = _result(tau, [0.01, 0.02, np.nan, 0.05, 0.03], [0.5, 0.4, 0.3, 0.2, 0.1], [0.0] * 5)
    t = res.table
    assert list(t.columns) == [
        "model_a", "model_b", "tau", "accuracy_a", "accuracy_b", "accuracy_gap", "pair_type",
        "base_rate_p", "base_rate_q", "base_rate_null_mean", "base_rate_null_sd",
        "calibration_preserving_p", "calibration_preserving_q",
        "calibration_preserving_null_mean", "calibration_preserving_null_sd",
    ]  # fmt: skip
    # models a..d have accuracy 0.1..0.4: a-b, a-c, a-d, b-c, c-d
    np.testing.assert_allclose(t["accuracy_a"], [0.1, 0.1, 0.1, 0.2, 0.3])
    np.testing.assert_allclose(t["accuracy_b"], [0.2, 0.3, 0.4, 0.3, 0.4])
    assert t["pair_type"].tolist()[:2] == ["R-R", "R-NR"] and pd.isna(t["pair_type"][2])
    np.testing.assert_allclose(t["calibration_preserving_q"], [0.5, 0.4, 0.3, 0.2, 0.1])
    np.testing.assert_allclose(t["calibration_preserving_p"], [0.25, 0.2, 0.15, 0.1, 0.05])
    np.testing.assert_allclose(t["base_rate_null_sd"], [0.0, 0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(t["tau"], tau)
    with_items = _result(tau, [0.5] * 5, [0.5] * 5, [0.0] * 5, n_items_pair=np.arange(5, 10))
    t = with_items.table
    assert list(t.columns[:8]) == [
        "model_a", "model_b", "tau", "accuracy_a", "accuracy_b", "accuracy_gap", "pair_type",
        "n_items",
    ]  # fmt: skip
    assert t["n_items"].tolist() == [5, 6, 7, 8, 9]


def test_delta_curve_table_one_row_per_delta_and_columns_per_null():
    t = _result([0.1] * 5, [0.5] * 5, [0.5] * 5, [0.0] * 5).delta_curve.table
    assert list(t.columns) == [
        "delta", "n_pairs", "mean_tau", "base_rate_null_mean", "base_rate_null_low",
        "base_rate_null_high", "base_rate_p_value",
    ]  # fmt: skip
    assert t["delta"].tolist() == [0.0, 0.5] and t["n_pairs"].tolist() == [1, 5]
    assert t.iloc[1, 2:].tolist() == [0.2, 0.01, -0.1, 0.12, 0.03]


# --------------------------------------------------------------------------------------------
# Joint draws: the exact permutation law of every pair's tau-b, by enumeration on tiny inputs
# --------------------------------------------------------------------------------------------


def _tau_b_defined(x, y, ok):
    """tau-b of each row of (K, N) x and y over the items in ``ok`` (N,), from its definition:
    all i < j, signs of the differences; NaN without variation."""
    idx = np.flatnonzero(ok)
    i, j = (idx[k] for k in np.triu_indices(idx.size, 1))
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    den = np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / den


def _exact_joint_law(conf, perf, present, null):
    """``{tuple of every pair's tau-b: probability}`` over every permutation of every model.

    ``calibration_preserving``: each model's (conf, perf) pairs moved by one uniformly random
    permutation of its own items; ``base_rate``: its confidence and its correctness each by
    its own. Missing items stay missing; each pair on the items both models have, each model
    seen there as :func:`_view` says (on complete data: its permuted values).
    """
    n_items, m = conf.shape
    per_model = []  # each model's distinct outcomes ((partners, 2, N) views) and their weights
    for k in range(m):
        own = np.flatnonzero(present[:, k])
        perms = [np.array(q) for q in itertools.permutations(own.tolist())]
        pairs = (itertools.product(perms, perms) if null == "base_rate"
                 else ((q, q) for q in perms))  # fmt: skip
        seen: dict[bytes, list] = {}
        for qc, qp in pairs:
            views = np.array([
                (_view(conf[:, k], own, qc, present[:, k] & present[:, o]),
                 _view(perf[:, k], own, qp, present[:, k] & present[:, o]))
                for o in range(m)
            ])  # fmt: skip
            key = np.nan_to_num(views, nan=-9.0).tobytes()
            seen.setdefault(key, [views, 0])[1] += 1
        per_model.append((np.array([v for v, _ in seen.values()]),
                          np.array([w for _, w in seen.values()], dtype=float)))  # fmt: skip
    grids = np.meshgrid(*[np.arange(len(w)) for _, w in per_model], indexing="ij")
    pick = [g.ravel() for g in grids]
    weight = np.prod([per_model[k][1][pick[k]] for k in range(m)], axis=0)
    ia, ib = np.triu_indices(m, 1)
    taus = []
    for a, b in zip(ia, ib):
        va, vb = per_model[a][0][:, b], per_model[b][0][:, a]  # (outcomes, 2, N)
        ok = present[:, a] & present[:, b]
        # every (outcome of a, outcome of b) once, then read at each joint outcome
        dx = (va[:, None, 0] - vb[None, :, 0]).reshape(-1, n_items)
        dy = (va[:, None, 1] - vb[None, :, 1]).reshape(-1, n_items)
        t = _tau_b_defined(dx, dy, ok).reshape(len(va), len(vb))
        taus.append(t[pick[a], pick[b]])
    keys = _outcomes(np.stack(taus, axis=1))
    values, inverse = np.unique(keys, axis=0, return_inverse=True)
    probs = np.bincount(inverse.ravel(), weights=weight) / weight.sum()
    return {tuple(v): q for v, q in zip(values.tolist(), probs)}


def _outcomes(taus):
    """Rows of taus as comparable keys (rounded; NaN as a sentinel)."""
    return np.where(np.isfinite(taus), np.round(taus, 9), 9.0)


def _assert_follows_the_law(draws, law):
    """Every draw is a possible outcome, and the frequencies fit the exact law (chi-square with
    the outcomes of small expected count pooled)."""
    keys = [tuple(v) for v in _outcomes(draws).tolist()]
    impossible = set(keys) - set(law)
    assert not impossible, f"draws outside the exact law's support: {sorted(impossible)[:5]}"
    n = len(keys)
    observed = collections.Counter(keys)
    big = [k for k, q in law.items() if q * n >= 5]
    small = [k for k in law if k not in big]
    obs = [observed[k] for k in big] + ([sum(observed[k] for k in small)] if small else [])
    exp = [law[k] * n for k in big] + ([sum(law[k] for k in small) * n] if small else [])
    assert len(obs) >= 4, "too few outcomes for a test"
    p = stats.chisquare(obs, exp).pvalue
    assert p > 1e-3, (p, obs, exp)


# 4 items, 3 models; the confidence on a grid of quarters (exact differences, with ties)
_TINY_CONF = np.array([[0.25, 0.5, 0.75], [0.5, 0.5, 0.25], [0.75, 0.25, 0.25], [0.5, 1.0, 0.5]])
_TINY_BINARY = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
_TINY_PERF = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


@functools.cache
def _tiny_law(kind, masked, null):
    """:func:`_exact_joint_law` of the tiny inputs (computed once: a second or two)."""
    conf = _TINY_BINARY if kind == "binary" else _TINY_CONF
    present = _TINY_PRESENT if masked else np.ones(conf.shape, dtype=bool)
    return _exact_joint_law(conf, _TINY_PERF, present, null)


@pytest.mark.parametrize("engine", ["numpy", "numba"])
@pytest.mark.parametrize("kind", ["binary", "continuous"])
@pytest.mark.parametrize("null", NULLS)
def test_joint_draws_follow_the_exact_permutation_law(null, kind, engine):
    if engine == "numba" and importlib.util.find_spec("numba") is None:
        unavailable("numba is not installed (the fast extra)")
    conf = _TINY_BINARY if kind == "binary" else _TINY_CONF
    law = _tiny_law(kind, False, null)
    draws = joint_null_draws(conf, _TINY_PERF, null=null, n=3000, rng=7, engine=engine)
    assert draws.shape == (3000, 3)
    _assert_follows_the_law(draws, law)


# model 0 answered every item, model 1 items 0-2, model 2 items 1-3
_TINY_PRESENT = np.array([[1, 1, 0], [1, 1, 1], [1, 1, 1], [1, 0, 1]], dtype=bool)


def _masked_plan(conf, perf, present, binary, ia, ib, null, n, seed, engine="auto"):
    """The joint draws' plan of ``null`` on ragged items (each model on its ``present`` items)."""
    return _joint_plan(joint_inputs(conf, perf, present, binary, ia, ib, engine), get_null(null),
                       n, seed)  # fmt: skip


@pytest.mark.parametrize("engine", ["numpy", "numba"])
@pytest.mark.parametrize("kind", ["binary", "continuous"])
@pytest.mark.parametrize("null", NULLS)
def test_masked_joint_draws_follow_the_exact_permutation_law(null, kind, engine):
    # each model shuffled among the items it answered, each pair on its shared items
    if engine == "numba" and importlib.util.find_spec("numba") is None:
        unavailable("numba is not installed (the fast extra)")
    conf = _TINY_BINARY if kind == "binary" else _TINY_CONF
    law = _tiny_law(kind, True, null)
    ia, ib = np.triu_indices(3, 1)
    plan = _masked_plan(conf, _TINY_PERF, _TINY_PRESENT, kind == "binary", ia, ib, null, 3000, 7,
                        engine)  # fmt: skip
    draws = _execute([plan], 1, False)[0]
    assert draws.shape == (3000, 3)
    _assert_follows_the_law(draws, law)


# --------------------------------------------------------------------------------------------
# The whole analysis: the null of the mean, the delta curve, pair types, the options
# --------------------------------------------------------------------------------------------


def test_mean_null_by_hand_with_float_ties_and_nan_draws():
    above, below = 0.1 + 0.2, np.nextafter(0.3, 0.0)  # one ulp either side of 0.3: ties
    draws = np.array([0.1, above, below, 0.5, np.nan])
    res = _mean_null("base_rate", 0.3, draws, "greater")
    # 4 finite draws, all but 0.1 at or above 0.3 (ties count), all but 0.5 at or below
    assert res.p_greater == pytest.approx(4 / 5) and res.p_value == res.p_greater
    assert res.p_less == pytest.approx(4 / 5) and res.n_draws == 4
    assert _mean_null("base_rate", 0.3, draws, "less").p_value == pytest.approx(4 / 5)
    assert _mean_null("base_rate", 0.3, draws, "two-sided").p_value == 1.0
    assert res.mean == pytest.approx(0.3) and res.observed == 0.3 and res.null == "base_rate"
    # sd with ddof=1: deviations -0.2, ~0, ~0, 0.2 -> sqrt(0.08 / 3)
    assert res.sd == pytest.approx(np.sqrt(0.08 / 3))
    # linear quantiles of (0.1, 0.3, 0.3, 0.5): positions 0.075 and 2.925
    assert res.ci == pytest.approx((0.1 + 0.075 * 0.2, 0.3 + 0.925 * 0.2))
    assert res.draws is draws
    one = _mean_null("base_rate", 0.5, np.array([0.1, np.nan]), "greater")
    assert one.n_draws == 1 and np.isnan(one.sd) and one.mean == pytest.approx(0.1)
    assert one.p_greater == pytest.approx(1 / 2) and one.p_less == pytest.approx(1.0)
    for empty in (
        _mean_null("calibration_preserving", 0.2, np.array([np.nan, np.nan]), "greater"),
        _mean_null("calibration_preserving", np.nan, np.array([0.1, 0.2]), "greater"),
    ):
        assert empty.n_draws == 0 and empty.null == "calibration_preserving"
        assert all(np.isnan(v) for v in (empty.mean, empty.sd, empty.p_value, *empty.ci))
        assert np.isnan(empty.p_greater) and np.isnan(empty.p_less)


def test_pair_types_from_the_reasoning_flags():
    ia, ib = np.triu_indices(4, 1)
    kinds = _pair_types([True, False, True, None], ia, ib)
    # (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    assert kinds == ["R-NR", "R-R", None, "R-NR", None, None]
    assert _pair_types([False, False], *np.triu_indices(2, 1)) == ["NR-NR"]
    assert _pair_types([False, True], *np.triu_indices(2, 1)) == ["R-NR"]
    assert _pair_types(None, ia, ib) == [None] * 6


def test_merge_pair_results_fills_each_group_and_adjusts_across_all():
    def part(p, engine):
        p = np.asarray(p, dtype=float)
        return PairTestResult(
            "base_rate", "two-sided", 9, p, p, p / 2, p / 3, p, p + 1, p + 2,
            np.full(p.size, 9, dtype=np.int64), engine,
        )  # fmt: skip

    tau = np.array([0.1, 0.2, np.nan, 0.4])
    parts = [
        (np.array([3, 0]), part([0.01, 0.04], "numba")),
        (np.array([1]), part([0.03], "numba")),
    ]
    res = _merge_pair_results("base_rate", "two-sided", 9, tau, parts)
    np.testing.assert_allclose(res.p_value, [0.04, 0.03, np.nan, 0.01])
    np.testing.assert_allclose(res.p_greater, [0.02, 0.015, np.nan, 0.005])
    np.testing.assert_allclose(res.p_less, [0.04 / 3, 0.01, np.nan, 0.01 / 3])
    np.testing.assert_allclose(res.null_mean, [1.04, 1.03, np.nan, 1.01])
    np.testing.assert_allclose(res.null_sd, [2.04, 2.03, np.nan, 2.01])
    assert res.n_valid.tolist() == [9, 9, 0, 9] and res.engine == "numba"
    # BH over the three pairs with a p-value (R: p.adjust(c(.04, .03, .01), "BH"))
    np.testing.assert_allclose(res.q_value, [0.04, 0.04, np.nan, 0.03])
    assert res.tau is tau and res.permutations == 9 and res.null == "base_rate"
    mixed = [(np.array([0]), part([0.5], "numba")), (np.array([1]), part([0.5], "numpy"))]
    assert _merge_pair_results("base_rate", "less", 9, tau, mixed).engine == "numpy"
    assert _merge_pair_results("base_rate", "less", 9, tau, mixed).alternative == "less"


def _fifty_items():
    """50 items, 3 models with 20, 49 and 34 correct answers (gaps 29, 14 and 15)."""
    rng = np.random.default_rng(5)
    perf = np.zeros((50, 3))
    for k, n_correct in enumerate((20, 49, 34)):
        perf[rng.permutation(50)[:n_correct], k] = 1.0
    conf = np.clip(np.round(0.5 * perf + rng.random((50, 3)) * 0.6, 2), 0, 1)
    return conf, perf


def _kendall(conf, perf, a, b, rows=slice(None)):
    # differences rounded to 12 decimals: decimal ties stay ties (0.93 - 0.9 == 0.53 - 0.5)
    dconf = np.round(conf[rows, a] - conf[rows, b], 12)
    return stats.kendalltau(dconf, perf[rows, a] - perf[rows, b]).statistic


def test_delta_curve_counts_pairs_by_their_accuracy_gap_in_items():
    conf, perf = _fifty_items()
    taus = {(a, b): _kendall(conf, perf, a, b) for a, b in ((0, 1), (0, 2), (1, 2))}
    # floor(delta * 50): 0.28 -> 14 (the 14-gap pair), 0.3 -> 15, 0.58 -> 29 (0.58 * 50 is
    # 28.999999999999996 in floating point: the gap of 29 items is within it), 0.6 -> 30
    res = pairwise_calibration(
        conf, perf, permutations=0, joint_permutations=20, deltas=(0.27, 0.28, 0.3, 0.58, 0.6),
        min_pairs=2, rng=0,
    )  # fmt: skip
    curve = res.delta_curve
    assert curve.n_pairs.tolist() == [0, 1, 2, 3, 3] and curve.min_pairs == 2
    assert np.isnan(curve.mean_tau[:2]).all()  # fewer pairs than min_pairs: no point
    assert curve.mean_tau[2] == pytest.approx((taus[0, 2] + taus[1, 2]) / 2)
    assert curve.mean_tau[3] == pytest.approx(np.mean(list(taus.values())))
    for null in NULLS:
        assert (
            np.isnan(curve.null_mean[null][:2]).all()
            and np.isfinite(curve.null_mean[null][2:]).all()
        )
        assert (
            np.isnan(curve.p_value[null][:2]).all() and np.isfinite(curve.p_value[null][2:]).all()
        )
        assert (curve.null_low[null][2:] <= curve.null_high[null][2:]).all()
    np.testing.assert_allclose(res.accuracy, [0.4, 0.98, 0.68])
    np.testing.assert_allclose(res.accuracy_gap, [29 / 50, 14 / 50, 15 / 50])
    np.testing.assert_allclose(res.tau, [taus[0, 1], taus[0, 2], taus[1, 2]])
    assert res.mean_tau == pytest.approx(np.mean(list(taus.values())))
    assert res.n_items == 50 and res.continuous is True and res.n_pairs_valid == 3
    assert res.n_items_pair.tolist() == [50, 50, 50]
    one = pairwise_calibration(conf, perf, permutations=0, joint_permutations=20,
                               deltas=(0.28,), min_pairs=1, rng=0)  # fmt: skip
    assert one.delta_curve.mean_tau[0] == pytest.approx(taus[0, 2])


def test_missing_items_each_pair_on_its_shared_items():
    conf, perf = _fifty_items()
    conf[:10, 1] = np.nan  # model 1 lacks items 0-9, model 2 items 40-49 (perf NaN)
    perf[40:, 2] = np.nan
    shared = {(0, 1): slice(10, 50), (0, 2): slice(0, 40), (1, 2): slice(10, 40)}
    res = pairwise_calibration(conf, perf, permutations=0, joint_permutations=20, rng=0,
                               deltas=(1.0,), min_pairs=1)  # fmt: skip
    assert res.n_items_pair.tolist() == [40, 40, 30] and res.n_items == 50
    want = [_kendall(conf, perf, a, b, rows) for (a, b), rows in shared.items()]
    np.testing.assert_allclose(res.tau, want)
    # accuracy on each model's own items; the gap on the pair's shared items
    acc = [np.nanmean(perf[:, 0]), np.nanmean(perf[10:, 1]), np.nanmean(perf[:40, 2])]
    np.testing.assert_allclose(res.accuracy, acc)
    gaps = [abs(perf[rows, a].sum() - perf[rows, b].sum()) / (rows.stop - rows.start)
            for (a, b), rows in shared.items()]  # fmt: skip
    np.testing.assert_allclose(res.accuracy_gap, gaps)
    # fewer shared items than min_pair_items: no tau; the floor is 2
    cut = pairwise_calibration(conf, perf, permutations=0, joint_permutations=0, rng=0,
                               min_pair_items=31)  # fmt: skip
    assert np.isnan(cut.tau[2]) and np.isfinite(cut.tau[:2]).all() and cut.n_pairs_valid == 2
    assert cut.mean_tau == pytest.approx(np.mean(want[:2]))
    at = pairwise_calibration(conf, perf, permutations=0, joint_permutations=0, rng=0,
                              min_pair_items=30)  # fmt: skip
    assert np.isfinite(at.tau).all() and at.min_pair_items == 30
    assert pairwise_calibration(conf, perf, permutations=0, joint_permutations=0,
                                min_pair_items=1).min_pair_items == 2  # fmt: skip


def test_analysis_rejects_mismatched_names_and_flags():
    conf, perf = _fifty_items()
    with pytest.raises(ValueError, match=r"^2 model names for 3 columns$"):
        pairwise_calibration(conf, perf, models=["a", "b"], permutations=0, joint_permutations=0)
    with pytest.raises(ValueError, match=r"^4 reasoning flags for 3 models$"):
        pairwise_calibration(conf, perf, reasoning=[True] * 4, permutations=0,
                             joint_permutations=0)  # fmt: skip
    with pytest.raises(ValueError, match="alternative must be"):
        pairwise_calibration(conf, perf, alternative="more")
    with pytest.raises(ValueError, match="engine must be"):
        pairwise_calibration(conf, perf, engine="jax")


@pytest.mark.parametrize("null", NULLS)
def test_null_of_the_mean_follows_the_exact_permutation_law(null):
    # the law of the mean tau-b over the pairs with a tau, from every shuffle of every model
    law = _tiny_law("continuous", False, null)
    means, probs = [], []
    for key, q in law.items():
        t = np.array(key)
        if (t != 9.0).any():  # 9.0: no tau in that draw
            means.append(t[t != 9.0].mean())
            probs.append(q)
    means, probs = np.array(means), np.array(probs) / np.sum(probs)
    k = 4000
    res = pairwise_calibration(_TINY_CONF, _TINY_PERF, permutations=0, joint_permutations=k,
                               alternative="greater", rng=3, min_pairs=1)  # fmt: skip
    got = res.nulls[null]
    obs = res.mean_tau
    assert obs == pytest.approx(np.mean([_kendall(_TINY_CONF, _TINY_PERF, a, b)
                                         for a, b in ((0, 1), (0, 2), (1, 2))]))  # fmt: skip
    tol = 1e-9
    p_ge = probs[means >= obs - tol].sum()
    p_le = probs[means <= obs + tol].sum()
    for p_hat, p in ((got.p_greater, p_ge), (got.p_less, p_le)):
        assert abs(p_hat - p) < 4 * np.sqrt(p * (1 - p) / k) + 1 / k, (p_hat, p)
    assert got.p_value == got.p_greater
    mu = (probs * means).sum()
    sd = np.sqrt((probs * (means - mu) ** 2).sum())
    assert abs(got.mean - mu) < 4 * sd / np.sqrt(k)
    assert got.sd == pytest.approx(sd, rel=0.06)
    assert got.n_draws == got.draws[np.isfinite(got.draws)].size > 0.9 * k
    # the last point of the delta curve takes every pair: the same null
    assert res.delta_curve.null_mean[null][-1] == pytest.approx(got.mean)
    assert res.delta_curve.p_value[null][-1] == pytest.approx(got.p_value)
    assert res.delta_curve.null_low[null][-1] == got.ci[0]
    assert res.delta_curve.null_high[null][-1] == got.ci[1]


def test_pair_type_summaries_by_hand():
    rng = np.random.default_rng(11)
    perf = (rng.random((60, 5)) < 0.6).astype(float)
    conf = np.where(rng.random((60, 5)) < 0.7, perf, 1 - perf)
    reasoning = [True, True, False, False, True]  # R-R: 3 pairs, R-NR: 6, NR-NR: 1
    res = pairwise_calibration(conf, perf, reasoning=reasoning, permutations=200,
                               joint_permutations=50, min_pairs=3, rng=2)  # fmt: skip
    ia, ib = np.triu_indices(5, 1)
    taus = np.array([_kendall(conf, perf, a, b) for a, b in zip(ia, ib)])
    kinds = np.array(_pair_types(reasoning, ia, ib))
    assert set(res.pair_types) == {"R-R", "R-NR", "NR-NR"}
    for kind, n in (("R-R", 3), ("R-NR", 6)):
        s = res.pair_types[kind]
        assert s.pair_type == kind and s.n_pairs == n == (kinds == kind).sum()
        assert s.mean_tau == pytest.approx(taus[kinds == kind].mean())
        assert s.median_tau == pytest.approx(np.median(taus[kinds == kind]))
        for null in NULLS:
            q = res.per_pair[null].q_value[kinds == kind]
            assert s.fdr_significant_share[null] == pytest.approx(np.mean(q < 0.05))
            assert 0 < s.p_value[null] <= 1 and np.isfinite(s.null_mean[null])
    nr = res.pair_types["NR-NR"]  # 1 pair, fewer than min_pairs: no mean, no null
    assert nr.n_pairs == 1 and np.isnan(nr.mean_tau) and np.isnan(nr.median_tau)
    assert all(np.isnan(v) for v in nr.p_value.values())
    assert np.isnan(res.per_pair["base_rate"].q_value).sum() == 0
    assert res.fdr_significant_share == pytest.approx(
        np.mean(res.per_pair["base_rate"].q_value < 0.05)
    )
    # a share of exactly fdr_alpha does not count: at alpha = the smallest q, no pair is in
    q_min = res.per_pair["base_rate"].q_value.min()
    strict = pairwise_calibration(conf, perf, reasoning=reasoning, permutations=200,
                                  joint_permutations=0, min_pairs=3, rng=2,
                                  fdr_alpha=q_min)  # fmt: skip
    assert strict.fdr_alpha == q_min and strict.fdr_significant_share == 0.0
    assert strict.pair_types["R-R"].fdr_significant_share["base_rate"] == 0.0
    only_r = pairwise_calibration(conf, perf, reasoning=[True] * 5, permutations=0,
                                  joint_permutations=0, min_pairs=3)  # fmt: skip
    assert set(only_r.pair_types) == {"R-R"} and only_r.pair_types["R-R"].n_pairs == 10
    assert pairwise_calibration(conf, perf, permutations=0, joint_permutations=0).pair_types == {}


def test_without_permutations_the_per_pair_results_are_empty():
    conf, perf = _fifty_items()
    res = pairwise_calibration(conf, perf, models=["x", "y", "z"], permutations=0,
                               joint_permutations=0, alternative="less")  # fmt: skip
    assert res.models == ("x", "y", "z") and res.model_a == ("x", "x", "y")
    assert res.model_b == ("y", "z", "z") and res.joint_engine is None
    assert res.permutations == 0 and res.joint_permutations == 0 and res.alternative == "less"
    for null in NULLS:
        pt = res.per_pair[null]
        assert pt.null == null and pt.alternative == "less" and pt.permutations == 0
        assert np.isnan(pt.p_value).all() and np.isnan(pt.q_value).all()
        assert pt.n_valid.tolist() == [0, 0, 0] and pt.tau is res.tau
        assert res.nulls[null].n_draws == 0 and np.isnan(res.nulls[null].p_value)
        assert res.nulls[null].draws.shape == (0,)
    assert np.isnan(res.fdr_significant_share)
    named = pairwise_calibration(conf, perf, permutations=0, joint_permutations=0)
    assert named.models == ("0", "1", "2")


def test_draws_without_any_tau_are_dropped_silently():
    # 4 items: some joint draws leave every pair without a tau; they are left out of the null
    # of the mean without a "Mean of empty slice" warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = pairwise_calibration(_TINY_BINARY, _TINY_PERF, permutations=0,
                                   joint_permutations=300, rng=0, min_pairs=1)  # fmt: skip
    draws = res.nulls["base_rate"].draws
    assert np.isnan(draws).any() and res.nulls["base_rate"].n_draws == np.isfinite(draws).sum()
    t = np.array([[0.5, np.nan, 0.1], [np.nan, np.nan, np.nan], [0.2, 0.4, np.nan]])
    np.testing.assert_allclose(_subset_mean(t, np.array([True, True, False])), [0.5, np.nan, 0.3])
    assert _subset_mean(t, np.zeros(3, dtype=bool)).shape == (3,)
    assert np.isnan(_subset_mean(t, np.zeros(3, dtype=bool))).all()


@pytest.mark.parametrize("rows", [4, 5, 97])
def test_subset_means_in_blocks_of_draws_are_the_one_gather_sums(monkeypatch, rows):
    # The means over a mask of pairs are gathered a block of draws at a time; every block
    # sums its rows column after column, as one gather of every draw does (a lone row would
    # get NumPy's pairwise sum, other last bits), so the results are the same doubles.
    from metacog_metrics.pairwise import analysis

    rng = np.random.default_rng(3)
    draws = rng.standard_normal((rows, 3001))
    draws[rng.random(draws.shape) < 0.02] = np.nan
    mask = rng.random(3001) < 0.7
    whole = analysis._SubsetMeans(draws.copy())(mask)
    lone = np.array([np.nansum(row[mask]) / np.isfinite(row[mask]).sum() for row in draws])
    assert not np.array_equal(whole, lone)  # the order of the sums shows in the last bits
    np.testing.assert_allclose(whole, lone, rtol=1e-12)
    for block in (16, 8 * 2100 * 3, 8 * 2100 * 5):  # blocks of 2, 3 and 5 draws
        monkeypatch.setattr(analysis, "_GATHER_BYTES", block)
        np.testing.assert_array_equal(analysis._SubsetMeans(draws.copy())(mask), whole)


def test_joint_draws_inputs_shapes_and_progress(terminal):
    with pytest.raises(ValueError, match=r"^joint_null_draws takes 2-D \(items, models\) arrays$"):
        joint_null_draws(np.zeros((2, 4, 3)), np.zeros((2, 4, 3)), n=5)
    with pytest.raises(ValueError, match="engine must be"):
        joint_null_draws(_TINY_CONF, _TINY_PERF, n=5, engine="jax")
    with pytest.raises(ValueError, match="null must be"):
        joint_null_draws(_TINY_CONF, _TINY_PERF, n=5, null="uniform")
    for engine in ("numpy", "auto"):
        for conf in (_TINY_CONF, _TINY_BINARY):
            assert joint_null_draws(conf, _TINY_PERF, n=0, engine=engine).shape == (0, 3)
            one = joint_null_draws(conf, _TINY_PERF, n=7, pairs=([2], [0]), engine=engine)
            assert one.shape == (7, 1)
    # the bar counts pair-draws: 10 draws x 3 pairs
    stream = terminal()
    joint_null_draws(_TINY_CONF, _TINY_PERF, n=10, progress=True, engine="numpy")
    assert stream.getvalue().startswith("\rjoint base_rate:   0%|")
    assert "/30.0" in stream.getvalue()


@pytest.mark.parametrize("masked", [False, True], ids=["complete", "missing"])
def test_joint_engine_is_reported(masked):
    kw = {"permutations": 0, "joint_permutations": 10, "rng": 0}
    perf = np.where(_TINY_PRESENT, _TINY_PERF, np.nan) if masked else _TINY_PERF
    for conf in (_TINY_CONF, _TINY_BINARY):
        assert pairwise_calibration(conf, perf, engine="numpy", **kw).joint_engine == "numpy"
    if importlib.util.find_spec("numba") is not None:
        # complete or ragged, binary or not: the compiled kernels draw
        for conf in (_TINY_CONF, _TINY_BINARY):
            assert pairwise_calibration(conf, perf, engine="numba", **kw).joint_engine == "numba"


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_joint_null_draws_defaults_seed_and_engines(kind, terminal):
    conf = _TINY_BINARY if kind == "binary" else _TINY_CONF
    stream = terminal()
    assert joint_null_draws(conf, _TINY_PERF).shape == (1000, 3)  # 1000 draws by default
    for engine in ("numpy", "auto"):  # n not a multiple of the chunks: the last one is short
        assert joint_null_draws(conf, _TINY_PERF, n=120, engine=engine).shape == (120, 3)
    assert stream.getvalue() == ""  # no progress bar by default
    a = joint_null_draws(conf, _TINY_PERF, n=200, rng=5, engine="numpy")
    np.testing.assert_array_equal(a, joint_null_draws(conf, _TINY_PERF, n=200, rng=5,
                                                      engine="numpy", workers=3))  # fmt: skip
    assert not np.array_equal(a, joint_null_draws(conf, _TINY_PERF, n=200, rng=6,
                                                  engine="numpy"), equal_nan=True)  # fmt: skip
    if importlib.util.find_spec("numba") is not None:
        b = joint_null_draws(conf, _TINY_PERF, n=200, rng=5, engine="numba")
        np.testing.assert_array_equal(b, joint_null_draws(conf, _TINY_PERF, n=200, rng=5,
                                                          engine="numba", workers=3))  # fmt: skip
        assert not np.array_equal(a, b, equal_nan=True)  # the engines draw differently
        joint_null_draws(conf, _TINY_PERF, n=10, rng=5, engine="numba", progress=True)
        assert stream.getvalue().startswith("\rjoint base_rate:   0%|")


def _view(values, own, came_from, shared):
    """A model's values as a pair sees them in a joint draw: the value of item
    ``came_from[j]`` lands on item ``own[j]``; the pair's shared items, taken in the order
    their values land, give their values to the shared items in item order (NaN elsewhere)."""
    lands = dict(zip(came_from.tolist(), own.tolist()))
    items = [i for i in own.tolist() if shared[i]]
    out = np.full(values.size, np.nan)
    out[items] = values[sorted(items, key=lambda i: lands[i])]
    return out


def _reference_masked_draws(conf, perf, present, null, n, rng):
    """Joint draws by the plain method: every model permuted among its own items
    (``base_rate``: confidence and correctness each by its own permutation), every pair's
    tau-b from its definition on the items both models have, each model seen there as
    :func:`_view` says."""
    m = conf.shape[1]
    out = np.empty((n, m * (m - 1) // 2))
    for d in range(n):
        perms = []
        for k in range(m):
            own = np.flatnonzero(present[:, k])
            order = rng.permutation(own)
            perms.append((own, order, rng.permutation(own) if null == "base_rate" else order))
        for j, (a, b) in enumerate(zip(*np.triu_indices(m, 1))):
            ok = present[:, a] & present[:, b]
            (own_a, ca, pa), (own_b, cb, pb) = perms[a], perms[b]
            dx = _view(conf[:, a], own_a, ca, ok) - _view(conf[:, b], own_b, cb, ok)
            dy = _view(perf[:, a], own_a, pa, ok) - _view(perf[:, b], own_b, pb, ok)
            out[d, j] = _tau_b_defined(dx[None], dy[None], ok)[0]
    return out


def _assert_same_law(draws, ref):
    """Each pair's tau-b: chi-square two-sample test on ten bins (deciles of both samples)."""
    for j in range(draws.shape[1]):
        a, b = np.round(draws[:, j], 9), np.round(ref[:, j], 9)
        both = np.r_[a, b]
        edges = np.unique(np.quantile(both[np.isfinite(both)], np.linspace(0, 1, 11)))
        # the bins, and the draws without a tau (constant dconf or dperf: rare)
        ca = np.r_[np.histogram(a[np.isfinite(a)], edges)[0], np.isnan(a).sum() + 1]
        cb = np.r_[np.histogram(b[np.isfinite(b)], edges)[0], np.isnan(b).sum() + 1]
        assert ca.size >= 6
        assert stats.chi2_contingency(np.stack([ca, cb])).pvalue > 1e-3, j


def _ragged(n_items, values, seed):
    rng = np.random.default_rng(seed)
    conf = rng.choice(values, size=(n_items, 3)).astype(float)
    perf = (rng.random((n_items, 3)) < 0.5).astype(float)
    present = np.ones((n_items, 3), dtype=bool)
    present[:3, 1] = present[n_items - 3 :, 2] = False
    return conf, perf, present


@pytest.mark.parametrize("masked", [False, True], ids=["complete", "missing"])
@pytest.mark.parametrize("null", NULLS)
def test_joint_draws_on_a_confidence_grid_match_plain_shuffles(null, masked):
    # 18 items, confidence in {0, 0.5, 1} (grid step 1/2, 3 * (2 * 2 + 1) <= 18 items: the
    # grid-code paths of the NumPy engine) against plain shuffles
    conf, perf, present = _ragged(18, [0.0, 0.5, 1.0], seed=4)
    if not masked:
        present[:] = True
    ia, ib = np.triu_indices(3, 1)
    if masked:
        plan = _masked_plan(conf, perf, present, False, ia, ib, null, 2000, 5, "numpy")
        draws = _execute([plan], 1, False)[0]
    else:
        draws = joint_null_draws(conf, perf, null=null, n=2000, rng=5, engine="numpy")
    _assert_same_law(draws, _reference_masked_draws(conf, perf, present, null, 2000,
                                                    np.random.default_rng(9)))  # fmt: skip


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_percent_confidence_with_missing_items(engine):
    # confidence in percent (integers 0-100) lies on a grid of step 1 but outside [0, 1]: the
    # masked paths used to count code differences beyond [-q, q] (crash, or counts in another
    # pair's cells)
    if engine == "numba" and importlib.util.find_spec("numba") is None:
        unavailable("numba is not installed (the fast extra)")
    conf, perf, present = _ragged(30, np.arange(101), seed=1)
    cn, pn = np.where(present, conf, np.nan), np.where(present, perf, np.nan)
    res = pairwise_calibration(cn, pn, permutations=0, joint_permutations=0, engine=engine)
    rows = {(0, 1): slice(3, 30), (0, 2): slice(0, 27), (1, 2): slice(3, 27)}
    want = [_kendall(conf, perf, a, b, r) for (a, b), r in rows.items()]
    np.testing.assert_allclose(res.tau, want)
    ia, ib = np.triu_indices(3, 1)
    null = "calibration_preserving"
    plan = _masked_plan(conf, perf, present, False, ia, ib, null, 1500, 5, engine)
    draws = _execute([plan], 1, False)[0]
    _assert_same_law(draws, _reference_masked_draws(conf, perf, present, null, 1500,
                                                    np.random.default_rng(9)))  # fmt: skip


def _exact_pair_law(ca, pa, cb, pb, null):
    """Every permutation of one pair's shared items: the per-pair null's tau-b values (equally
    likely). ``base_rate``: dperf permuted against dconf; ``calibration_preserving``: B's items
    (its (conf, perf) pairs) permuted against A's."""
    perms = np.array(list(itertools.permutations(range(ca.size))))
    if null == "base_rate":
        dx = np.broadcast_to(np.round(ca - cb, 12), perms.shape)
        dy = (pa - pb)[perms]
    else:
        dx = np.round(ca[None] - cb[perms], 12)
        dy = pa[None] - pb[perms]
    return _tau_b_defined(dx, dy, np.ones(ca.size, dtype=bool))


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_per_pair_p_values_with_missing_items_follow_the_exact_law(kind):
    # each pair tested on its own shared items (pairs grouped by shared items); the p-values
    # against every permutation of those items
    conf = _TINY_BINARY if kind == "binary" else _TINY_CONF
    conf = np.vstack([conf, conf[:1]])  # 5 items: model 0 all, 1 items 0-2 and 4, 2 items 1-4
    perf = np.vstack([_TINY_PERF, [[0.0, 1.0, 1.0]]])
    present = np.vstack([_TINY_PRESENT, [[True, True, True]]])
    cn, pn = np.where(present, conf, np.nan), np.where(present, perf, np.nan)
    k = 3000
    res = pairwise_calibration(cn, pn, permutations=k, joint_permutations=0, rng=4,
                               alternative="greater", sequential=False)  # fmt: skip
    for j, (a, b) in enumerate(zip(*np.triu_indices(3, 1))):
        rows = present[:, a] & present[:, b]
        dx, dy = conf[rows, a] - conf[rows, b], perf[rows, a] - perf[rows, b]
        obs = _tau_b_defined(dx[None], dy[None], np.ones(dx.size, dtype=bool))[0]
        assert res.tau[j] == pytest.approx(obs)
        assert res.n_items_pair[j] == rows.sum()
        for null in NULLS:
            law = _exact_pair_law(conf[rows, a], perf[rows, a], conf[rows, b], perf[rows, b], null)
            law = law[np.isfinite(law)]
            p = np.mean(law >= obs - 1e-9)
            got = res.per_pair[null]
            assert got.n_valid[j] > 0.5 * k
            tol = 4 * np.sqrt(p * (1 - p) / got.n_valid[j]) + 2 / got.n_valid[j]
            assert abs(got.p_value[j] - p) < tol, (null, j, got.p_value[j], p)
            assert got.null_mean[j] == pytest.approx(
                law.mean(), abs=4 * law.std() / np.sqrt(k) + 1e-9
            )


def test_analysis_edges_two_shared_items_one_draw_no_valid_pair():
    # model 2 shares exactly two items with model 1 (items 2 and 3): a tau-b of its own at the
    # default min_pair_items (2), none at 3
    conf = np.array([[1.0, 0.2, np.nan], [0.0, 0.4, np.nan], [1.0, 0.9, 0.1], [0.0, 0.3, 0.8]])
    perf = np.array([[1.0, 0.0, np.nan], [0.0, 1.0, np.nan], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    kw = {"joint_permutations": 0, "rng": 0}
    res = pairwise_calibration(conf, perf, permutations=0, **kw)
    assert res.n_items_pair.tolist() == [4, 2, 2]
    assert res.tau[2] == pytest.approx(1.0)  # dconf 0.8, -0.5 against dperf 1, -1
    assert np.isnan(pairwise_calibration(conf, perf, permutations=0, min_pair_items=3, **kw).tau[2])
    # one per-pair draw and one joint draw still give p-values: (1 + count) / 2
    one = pairwise_calibration(conf[:, :2], perf[:, :2], permutations=1, joint_permutations=1,
                               rng=0)  # fmt: skip
    for null in NULLS:
        assert one.per_pair[null].permutations == 1
        assert one.per_pair[null].p_greater[0] in (0.5, 1.0)
        assert one.nulls[null].n_draws == 1 and one.nulls[null].p_greater in (0.5, 1.0)
    assert one.continuous is True
    # no pair with a tau: no mean, no null of the mean
    flat = pairwise_calibration(np.ones((4, 3)), perf[[0, 1, 0, 1]][:, [0, 1, 0]],
                                permutations=0, joint_permutations=5, rng=0)  # fmt: skip
    assert flat.n_pairs_valid == 0 and np.isnan(flat.mean_tau) and flat.continuous is False
    assert all(flat.nulls[null].n_draws == 0 for null in NULLS)
    assert flat.delta_curve.n_pairs.tolist() == [0] * len(flat.delta_curve.delta)
    # without per-pair tests a pair type has no share of significant pairs
    shares = pairwise_calibration(_TINY_CONF, _TINY_PERF, reasoning=[True] * 3, permutations=0,
                                  joint_permutations=0, min_pairs=1).pair_types["R-R"]  # fmt: skip
    assert all(np.isnan(v) for v in shares.fdr_significant_share.values())


@pytest.mark.parametrize("engine", ["numpy", "numba"])
@pytest.mark.parametrize("masked", [False, True], ids=["complete", "missing"])
@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_joint_draws_are_reproducible_from_the_seed_whatever_the_workers(kind, masked, engine):
    if engine == "numba" and importlib.util.find_spec("numba") is None:
        unavailable("numba is not installed (the fast extra)")
    conf = _TINY_BINARY if kind == "binary" else _TINY_CONF
    present = _TINY_PRESENT if masked else np.ones(conf.shape, dtype=bool)
    cn, pn = np.where(present, conf, np.nan), np.where(present, _TINY_PERF, np.nan)

    def draws(seed, workers):
        res = pairwise_calibration(cn, pn, permutations=0, joint_permutations=120, rng=seed,
                                   workers=workers, engine=engine)  # fmt: skip
        return np.stack([res.nulls[null].draws for null in NULLS])

    a = draws(3, 1)
    np.testing.assert_array_equal(a, draws(3, 3))
    assert not np.array_equal(a, draws(4, 1), equal_nan=True)
    assert not np.array_equal(a[0], a[1], equal_nan=True)  # each null its own stream


def test_two_draws_have_an_sd_and_the_result_lists_every_pair_type():
    # the sd of the null of the mean needs two draws, not three: |a - b| / sqrt(2)
    two = _mean_null("base_rate", 0.0, np.array([0.1, 0.4, np.nan]), "greater")
    assert two.n_draws == 2 and two.sd == pytest.approx(0.3 / np.sqrt(2))
    # no R-R pair at all: the R-NR and NR-NR summaries are still made (the loop over the pair
    # types skips a missing type, it does not stop at it)
    rng = np.random.default_rng(3)
    perf = (rng.random((40, 4)) < 0.6).astype(float)
    conf = np.where(rng.random((40, 4)) < 0.7, perf, 1 - perf)
    res = pairwise_calibration(conf, perf, reasoning=[True, False, False, False],
                               permutations=0, joint_permutations=0, min_pairs=3)  # fmt: skip
    assert set(res.pair_types) == {"R-NR", "NR-NR"}
    assert res.pair_types["R-NR"].n_pairs == 3 and res.pair_types["NR-NR"].n_pairs == 3
    assert res.pair_type == ("R-NR", "R-NR", "R-NR", "NR-NR", "NR-NR", "NR-NR")
    assert res.n_pairs == 6 and res.n_pairs_valid == 6


def test_the_documented_defaults_and_a_model_with_one_item():
    import inspect

    params = inspect.signature(pairwise_calibration).parameters
    defaults = {k: params[k].default for k in ("permutations", "joint_permutations",
                                                "min_pairs", "progress", "fdr_alpha")}  # fmt: skip
    assert defaults == {"permutations": 10_000, "joint_permutations": 1_000, "min_pairs": 3,
                        "progress": False, "fdr_alpha": 0.05}  # fmt: skip
    # ragged: model z answered one item (correctly): its accuracy is 1/1, not 1/2
    conf = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, np.nan], [1.0, 1.0, np.nan], [0.0, 0.0, np.nan]])
    perf = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, np.nan], [1.0, 0.0, np.nan], [1.0, 1.0, np.nan]])
    res = pairwise_calibration(conf, perf, models=["x", "y", "z"], permutations=0,
                               joint_permutations=0)  # fmt: skip
    table = res.table.set_index(["model_a", "model_b"])
    assert table.loc[("x", "z"), "accuracy_b"] == 1.0
    assert table.loc[("x", "y"), "accuracy_a"] == pytest.approx(3 / 4)


@pytest.mark.parametrize("compiled", [False, True], ids=["no_numba", "numba"])
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "numeric"])
@pytest.mark.parametrize("null", NULLS)
def test_joint_plans_are_labelled_by_their_null_and_honour_no_numba(
    null, binary, compiled, monkeypatch
):
    # the label names the null (the progress bar shows it); the default engine is "auto", so
    # METACOG_NO_NUMBA turns the compiled kernels off, complete or ragged; with them on, the
    # engine is "numba"
    if compiled and compiled_kernels("auto") is None:
        unavailable("numba is not installed (the fast extra)")
    rng = np.random.default_rng(0)
    perf = (rng.random((12, 3)) < 0.5).astype(float)
    conf = perf.copy() if binary else np.round(rng.random((12, 3)), 1)
    present = np.ones(conf.shape, dtype=bool)
    present[0, 0] = False
    ia, ib = _pairs(3)
    if compiled:
        monkeypatch.delenv("METACOG_NO_NUMBA", raising=False)
    else:
        monkeypatch.setenv("METACOG_NO_NUMBA", "1")
    complete = _joint_plan(joint_inputs(conf, perf, None, binary, ia, ib, "auto"),
                           get_null(null), 4, 0)  # fmt: skip
    ragged = _masked_plan(conf, perf, present, binary, ia, ib, null, 4, 0)
    assert complete.label == ragged.label == f"joint {null}"
    assert complete.engine == ("numba" if compiled else "numpy")
    assert ragged.engine == ("numba" if compiled else "numpy")


@pytest.mark.parametrize("ragged", [False, True])
def test_both_nulls_read_one_set_of_level_tables_per_item_group(monkeypatch, ragged):
    # the observed level tables of real-valued pairs are built once per group of pairs sharing
    # their items (once in all on complete data), not once per null: both nulls read the
    # group's one PairInputs
    import metacog_metrics.pairwise.pair_draws as pd
    from metacog_metrics.pairwise.masked import pair_item_groups

    rng = np.random.default_rng(3)
    conf = np.round(rng.choice([0.2, 0.5, 0.7, 0.9], size=(40, 4)), 2)
    perf = (rng.random((40, 4)) < 0.5).astype(float)
    if ragged:
        conf[:10, 0] = perf[:10, 0] = np.nan
        conf[30:, 2] = perf[30:, 2] = np.nan
    calls = []
    real = pd._level_tables
    monkeypatch.setattr(pd, "_level_tables", lambda *a: calls.append(a) or real(*a))
    res = pairwise_calibration(conf, perf, permutations=20, joint_permutations=0, rng=0)
    present = np.isfinite(conf)
    ia, ib = np.triu_indices(4, 1)
    groups = pair_item_groups(present, ia, ib) if ragged else [None]
    # ragged: items 10-39 (pairs 0-1, 0-3), 10-29 (0-2), 0-29 (1-2, 2-3), all (1-3)
    assert len(calls) == len(groups) == (4 if ragged else 1)
    assert np.isfinite(res.per_pair["base_rate"].p_value).all()
    assert np.isfinite(res.per_pair["calibration_preserving"].p_value).all()


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "numeric"])
def test_per_pair_draws_on_complete_data_use_each_nulls_own_child_stream(binary):
    # on complete data each null's per-pair tests draw from the seed's first spawn (base rate,
    # then calibration-preserving) itself, as pair_permutation_test does with that seed; the
    # ragged path spawns a child per item group instead
    rng = np.random.default_rng(5)
    perf = (rng.random((30, 4)) < 0.5).astype(float)
    conf = perf.copy() if binary else np.round(rng.random((30, 4)), 1)
    conf[:4] = 1 - perf[:4]  # both kinds of disagreement
    res = pairwise_calibration(conf, perf, permutations=50, joint_permutations=0, rng=11,
                               engine="numpy")  # fmt: skip
    children = np.random.SeedSequence(11).spawn(2)
    for null, child in zip(NULLS, children):
        alone = pair_permutation_test(conf, perf, null=null, permutations=50, rng=child,
                                      engine="numpy", sequential=True)  # fmt: skip
        np.testing.assert_array_equal(res.per_pair[null].p_value, alone.p_value)
        np.testing.assert_array_equal(res.per_pair[null].null_mean, alone.null_mean)
