"""Tetrachoric correlations against R psych / exact ML values in stats_reference.json."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from metacog_metrics.tetrachoric import (
    cor_smooth,
    tetrachoric,
    tetrachoric_matrix,
    tetrachoric_table,
)

PSYCH_ATOL = 5e-5
EXACT_ATOL = 1e-6


def _lsat6(ref):
    table = ref["R"]["lsat6_pattern_table"]
    return np.repeat(np.array(table["patterns"]), table["Ob6"], axis=0)


def _raw_from_table(tab):
    x = np.repeat([0, 0, 1, 1], tab)
    y = np.repeat([0, 1, 0, 1], tab)
    return x, y


def test_lsat6_matrix(stats_reference):
    ref = stats_reference["R"]["lsat6"]
    res = tetrachoric_matrix(_lsat6(stats_reference), names=["Q1", "Q2", "Q3", "Q4", "Q5"])
    np.testing.assert_allclose(res.rho, ref["exact_twostep_ml_rho"], atol=EXACT_ATOL)
    np.testing.assert_allclose(res.rho, ref["psych_default_rho"], atol=PSYCH_ATOL)
    np.testing.assert_allclose(res.tau, ref["psych_default_tau"], atol=1e-6)
    np.testing.assert_allclose(
        res.tau,
        -np.array([__import__("scipy").stats.norm.ppf(m) for m in ref["colmeans"]]),
        atol=1e-12,
    )
    assert res.names == ("Q1", "Q2", "Q3", "Q4", "Q5")
    assert not res.smoothed and res.dropped == ()


def test_lsat6_pair_matches_matrix(stats_reference):
    data = _lsat6(stats_reference)
    ref = stats_reference["R"]["lsat6"]["exact_twostep_ml_rho"]
    res = tetrachoric(data[:, 0], data[:, 1])
    assert res.rho == pytest.approx(ref[0][1], abs=EXACT_ATOL)
    assert res.method == "raw" and res.reason is None and res.n == 1000
    assert 0 < res.se < 0.2


@pytest.mark.parametrize("case", ["no_zero", "one_zero", "psych_ex_mplus_0p24"])
def test_2x2_tables(stats_reference, case):
    t = stats_reference["R"]["tables_2x2"][case]
    res = tetrachoric_table(t["tab"])
    assert res.rho == pytest.approx(t["exact_table_correct05_rho"], abs=EXACT_ATOL)
    assert res.rho == pytest.approx(t["psych_table_correct05_rho"], abs=PSYCH_ATOL)
    np.testing.assert_allclose(res.tau, t["psych_table_correct05_tau"], atol=1e-6)
    # the same table as a 2x2 matrix
    assert tetrachoric_table(np.reshape(t["tab"], (2, 2))).rho == pytest.approx(res.rho, abs=1e-14)
    if "exact_raw_default_rho" in t:
        raw = tetrachoric(*_raw_from_table(t["tab"]))
        assert raw.rho == pytest.approx(t["exact_raw_default_rho"], abs=EXACT_ATOL)
        assert raw.rho == pytest.approx(t["psych_raw_default_rho"], abs=PSYCH_ATOL)
        np.testing.assert_allclose(raw.tau, t["psych_raw_default_tau"], atol=1e-6)
    if t["exact_table_correct0_rho"] is not None:
        r0 = tetrachoric_table(t["tab"], correct=0)
        assert r0.rho == pytest.approx(t["exact_table_correct0_rho"], abs=EXACT_ATOL)


def test_raw_and_table_paths_differ_with_a_zero_cell(stats_reference):
    t = stats_reference["R"]["tables_2x2"]["one_zero"]
    raw = tetrachoric(*_raw_from_table(t["tab"]))
    tab = tetrachoric_table(t["tab"])
    assert raw.corrected and tab.corrected
    assert abs(raw.rho - tab.rho) > 1e-3
    assert raw.table == (12.0, 0.5, 7.0, 31.0)


def test_uncorrected_zero_cell_goes_to_the_boundary(stats_reference):
    # psych returns an arbitrary interior value here (-0.7096); the ML optimum is rho = -1.
    t = stats_reference["R"]["tables_2x2"]["psych_ex_mplus_0p24"]
    assert tetrachoric_table(t["tab"], correct=0).rho == pytest.approx(-1.0, abs=1e-9)


def test_mplus_published_anchors(stats_reference):
    for anchor in stats_reference["published_anchors"]["mplus_via_psych_docs"]:
        c = anchor["matrix_c"]  # R matrix(c(n00, n10, n01, n11), 2, 2)
        res = tetrachoric_table([c[0], c[2], c[1], c[3]])
        # Mplus prints 2 decimals and treats the empty cell its own way: agree to 0.01.
        assert res.rho == pytest.approx(anchor["mplus"], abs=0.01)


def test_kirk_proportions(stats_reference):
    for case in stats_reference["R"]["kirk1973"]:
        res = tetrachoric_table(case["input"])
        assert res.rho == pytest.approx(case["psych_rho"], abs=1e-5)
        assert res.rho == pytest.approx(case["expected"], abs=1e-4)
        assert not res.corrected  # proportions sum to 1: never corrected


def test_degenerate_column_dropped(stats_reference):
    ref = stats_reference["R"]["degenerate"]
    res = tetrachoric_matrix(np.array(ref["data"]), names=["a", "b", "c"])
    assert res.names == tuple(ref["kept_columns"])
    assert res.dropped == ("a",)
    assert "no variance" in res.dropped_reasons["a"]
    np.testing.assert_allclose(res.rho, ref["rho"], atol=PSYCH_ATOL)
    full = res.reindex(["a", "b", "c"])
    assert np.isnan(full[0]).all() and full[1, 2] == pytest.approx(res.rho[0, 1])


def test_degenerate_pair_reason():
    res = tetrachoric([1, 1, 1, 1], [0, 1, 0, 1])
    assert np.isnan(res.rho) and res.reason == "x has no variance"
    res = tetrachoric([1, 0], [0, 1])
    assert np.isnan(res.rho) and "fewer than 3" in res.reason
    res = tetrachoric_table([10, 0, 5, 0], correct=0)
    assert np.isnan(res.rho) and res.reason == "empty margin"


def test_nan_pairs_ignored():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, 200).astype(float)
    y = (x + (rng.random(200) < 0.3)) % 2
    full = tetrachoric(x, y)
    x2, y2 = np.r_[x, np.nan, 1.0], np.r_[y, 0.0, np.nan]
    assert tetrachoric(x2, y2).rho == full.rho
    assert tetrachoric(x.astype(bool), y.astype(bool)).rho == full.rho


def test_input_validation():
    with pytest.raises(ValueError, match="only 0, 1 or NaN"):
        tetrachoric([0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match="differ in length"):
        tetrachoric([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="correct"):
        tetrachoric([0, 1, 1], [0, 1, 0], correct=-1)
    with pytest.raises(ValueError, match="shape"):
        tetrachoric_table([1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match=">= 0"):
        tetrachoric_table([1, -2, 3, 4])
    with pytest.raises(ValueError, match="2-D"):
        tetrachoric_matrix([0, 1, 1])


def test_cor_smooth(stats_reference):
    ref = stats_reference["R"]["cor_smooth"]
    res = cor_smooth(ref["input"])
    assert res.smoothed
    np.testing.assert_allclose(res.matrix, ref["smoothed"], atol=1e-6)
    np.testing.assert_allclose(res.eigenvalues, ref["input_eigen"], atol=1e-6)
    np.testing.assert_allclose(
        np.linalg.eigvalsh(res.matrix)[::-1], ref["smoothed_eigen"], atol=1e-6
    )
    assert not cor_smooth(np.eye(3)).smoothed


def test_matrix_smoothing_reported():
    # Three variables that cannot all be as correlated as their pairs say: not PSD.
    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 1))
    a = (z + 0.1 * rng.normal(size=(400, 1)) > 0).astype(float)
    b = a.copy()
    b[:40] = 1 - b[:40]
    c = 1 - a
    c[200:240] = 1 - c[200:240]
    x = np.hstack([a, b, c, (rng.random((400, 1)) < 0.5)])
    res = tetrachoric_matrix(x)
    assert res.min_eigenvalue < np.finfo(float).eps
    assert res.smoothed
    assert np.linalg.eigvalsh(res.rho).min() > 0
    assert not np.allclose(res.rho, res.raw_rho)
    unsmoothed = tetrachoric_matrix(x, smooth=False)
    assert not unsmoothed.smoothed
    np.testing.assert_array_equal(unsmoothed.rho, res.raw_rho)


def test_missing_values_pairwise_and_no_smoothing():
    x = np.array([[0, 1, np.nan], [1, 1, np.nan], [1, 0, np.nan], [0, 0, 1], [1, 1, 0]] * 4)
    res = tetrachoric_matrix(x)
    # the third column has 8 observations; every pair has > 2 complete rows
    assert res.n[2, 2] == 8 and res.n[0, 2] == 8
    x2 = x.copy()
    x2[:, 2] = np.nan
    x2[0, 2], x2[3, 2] = 1, 0  # two observations: every pair with it has < 3 rows
    res2 = tetrachoric_matrix(x2)
    assert np.isnan(res2.rho[0, 2]) and res2.smoothing_note is not None


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        np.int8, st.tuples(st.integers(5, 40), st.integers(2, 5)), elements=st.integers(0, 1)
    )
)
def test_matrix_symmetric_bounded(x):
    res = tetrachoric_matrix(x)
    if res.rho.size:
        assert np.allclose(res.rho, res.rho.T)
        finite = res.rho[np.isfinite(res.rho)]
        assert np.all(finite <= 1.0) and np.all(finite >= -1.0)
        assert np.allclose(np.diag(res.rho), 1.0)
    # swapping the columns transposes the matrix
    flipped = tetrachoric_matrix(x[:, ::-1])
    np.testing.assert_allclose(flipped.rho, res.rho[::-1, ::-1], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=4, max_size=4).filter(lambda t: sum(t) > 3))
def test_pair_symmetry_and_recoding(tab):
    x, y = _raw_from_table(tab)
    r = tetrachoric(x, y)
    assume(not np.isnan(r.rho))  # (a constant margin: no correlation to check)
    assert -1.0 <= r.rho <= 1.0
    assert tetrachoric(y, x).rho == pytest.approx(r.rho, abs=1e-12)
    # flipping the coding of one variable flips the sign; flipping both keeps it
    assert tetrachoric(1 - x, y).rho == pytest.approx(-r.rho, abs=1e-9)
    assert tetrachoric(1 - x, 1 - y).rho == pytest.approx(r.rho, abs=1e-9)


# --- rules pinned against independent SciPy values (tests/refstats.py) ----------------------


def test_pair_with_exactly_three_complete_rows_is_estimated():
    from tests.refstats import psych_raw_rho

    x, y = [0, 1, 1, np.nan], [0, 1, 0, 1]
    res = tetrachoric(x, y)
    assert res.n == 3 and res.reason is None and res.corrected
    assert res.rho == pytest.approx(psych_raw_rho(x, y), abs=1e-6)
    two = tetrachoric([0, 1, np.nan, np.nan], [0, 1, 0, 1])
    assert two.n == 2 and np.isnan(two.rho) and "fewer than 3" in two.reason


def test_matrix_pair_needs_three_complete_rows():
    from scipy import stats

    from tests.refstats import twostep_ml_rho

    a = np.array([0, 1, 0, 1, 1, 0, 1, 0, 1, 1], dtype=float)
    c = np.array([1, 1, 0, 0, 1, 0, 1, 1, 0, 1], dtype=float)
    b = np.full(10, np.nan)
    b[[0, 1, 4]] = [0, 1, 0]  # three observations, both values present
    res = tetrachoric_matrix(np.column_stack([a, b, c]), names=["a", "b", "c"], smooth=False)
    assert res.n[0, 1] == 3 and np.isfinite(res.rho[0, 1])
    # thresholds from each column's own values (a: all 10 rows; b: its 3), table from the three
    # complete rows: (a, b) = (0, 0), (1, 1), (1, 0) -> n00 = n10 = n11 = 1, n01 = 0 -> 0.5
    tau = (stats.norm.ppf(1 - a.mean()), stats.norm.ppf(1 - 1 / 3))
    assert res.rho[0, 1] == pytest.approx(twostep_ml_rho([1, 0.5, 1, 1], tau), abs=1e-6)
    b2 = np.full(10, np.nan)
    b2[[0, 1, 5]] = [0, 1, 1]
    x2 = np.column_stack([a, b2, c])
    x2[5, 0] = np.nan  # a lacks row 5: the pair (a, b) has rows 0 and 1 only, (b, c) all three
    res2 = tetrachoric_matrix(x2, names=["a", "b", "c"], smooth=False)
    assert res2.n[0, 1] == 2 and np.isnan(res2.rho[0, 1])
    assert res2.n[1, 2] == 3 and np.isfinite(res2.rho[1, 2])


def test_proportion_tables_are_never_zero_cell_corrected():
    # P(x=1) = .3, P(y=1) = .4, P(x=1, y=1) = 0: an empty cell, a Frechet bound: rho = -1.
    for table in ([0.3, 0.4, 0.0], [0.3, 0.4, 0.3, 0.0]):
        res = tetrachoric_table(table)
        assert not res.corrected and res.table[3] == 0.0 and res.n == 0
        assert res.rho == pytest.approx(-1.0, abs=1e-6)
        assert np.isnan(res.se)


def test_count_tables_are_zero_cell_corrected():
    from tests.refstats import saturated_table_rho

    # Two observations (sum > 1): zeros become 0.5, thresholds from the corrected table.
    res = tetrachoric_table([1, 0, 0, 1])
    assert res.corrected and res.table == (1.0, 0.5, 0.5, 1.0) and res.n == 2
    assert res.rho == pytest.approx(saturated_table_rho([1, 0.5, 0.5, 1]), abs=1e-6)
    res = tetrachoric_table([12, 0, 7, 31])
    assert res.corrected
    assert res.rho == pytest.approx(saturated_table_rho([12, 0.5, 7, 31]), abs=1e-6)
    # correct=0 switches the correction off: the empty cell pins rho to the bound
    off = tetrachoric_table([12, 0, 7, 31], correct=0)
    assert not off.corrected and off.rho == pytest.approx(1.0, abs=1e-6)


# --- found by mutation testing (tools/mutation.py) ------------------------------------------


def _exact(message: str) -> str:
    import re

    return "^" + re.escape(message) + "$"


@pytest.mark.parametrize("tab", [[12, 5, 7, 31], [40, 3, 9, 8], [3, 10, 20, 4], [1, 6, 9, 30]])
def test_pair_and_table_reach_machine_precision(tab):
    # The estimator's bisection leaves a 1e-10 bracket and its Newton steps must finish the
    # job: rho and its standard error against a Brent root of the score with Owen's-T cell
    # probabilities (tests/refstats.py), to 1e-13.
    from scipy import special

    from tests.refstats import twostep_ml_exact

    x, y = _raw_from_table(tab)
    res = tetrachoric(x, y)
    rho, se = twostep_ml_exact(tab, (special.ndtri(1 - x.mean()), special.ndtri(1 - y.mean())))
    assert abs(res.rho - rho) < 1e-13 and res.se == pytest.approx(se, rel=1e-12)
    assert res.method == "raw" and res.n == sum(tab)
    table = tetrachoric_table(tab)
    c = np.asarray(tab, dtype=float) / sum(tab)
    rho, se = twostep_ml_exact(tab, (special.ndtri(c[0] + c[1]), special.ndtri(c[0] + c[2])))
    assert abs(table.rho - rho) < 1e-13 and table.se == pytest.approx(se, rel=1e-12)
    assert table.method == "table" and table.reason is None


def test_degenerate_pairs_are_reported_in_full():
    few = tetrachoric([0, 1, np.nan], [1, 1, 0])
    assert few.to_dict() == {
        "rho": None, "tau": [None, None], "table": [0.0, 1.0, 0.0, 1.0], "n": 2,
        "corrected": False, "se": None, "method": "raw",
        "reason": "fewer than 3 complete pairs",
    }  # fmt: skip
    assert all(np.isnan(few.tau)) and isinstance(few.corrected, bool)
    for x, y, which in (([1, 1, 1, 1], [0, 1, 0, 1], "x"), ([0, 1, 0, 1], [0, 0, 0, 0], "y")):
        res = tetrachoric(x, y)
        assert res.reason == f"{which} has no variance" and np.isnan(res.rho)
        assert res.method == "raw" and res.corrected is False and np.isnan(res.se)
        assert res.n == 4 and res.table == tuple(
            float(np.sum((np.array(x) == a) & (np.array(y) == b))) for a in (0, 1) for b in (0, 1)
        )
    # the thresholds are still reported: Phi^-1(1 - mean), -inf for an all-ones x
    assert tetrachoric([1, 1, 1, 1], [0, 1, 0, 1]).tau == (-np.inf, 0.0)
    assert tetrachoric([0, 1, 0, 1], [0, 0, 0, 0]).tau == (0.0, np.inf)


def test_binary_input_messages_name_the_argument():
    with pytest.raises(ValueError, match=r"^x must be numeric 0/1 \(NaN for missing\): "):
        tetrachoric(["a", "b", "c"], [0, 1, 1])
    with pytest.raises(ValueError, match=r"^y must be numeric 0/1 \(NaN for missing\): "):
        tetrachoric([0, 1, 1], ["a", "b", "c"])
    bad = [2, 3, 0, 4, 5, 6, 7, 1]
    with pytest.raises(ValueError, match=_exact(
        "y must hold only 0, 1 or NaN; 6 other value(s), e.g. [2.0, 3.0, 4.0, 5.0, 6.0] at "
        "index [[0], [1], [3], [4], [5]]"
    )):  # fmt: skip
        tetrachoric([0, 1, 1, 0, 1, 0, 1, 1], bad)
    with pytest.raises(ValueError, match=r"^x must hold only 0, 1 or NaN; 1 other value\(s\)"):
        tetrachoric([0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match=r"^x must hold only 0, 1 or NaN; "):
        tetrachoric_matrix(np.array([[0, 1], [2, 0], [1, 1]]))


def test_matrix_names_reasons_and_fields():
    import pandas as pd

    x = np.array(
        [
            [0, 1, 1, 0, 1, np.nan, 1],
            [1, 1, 0, 0, 1, np.nan, np.nan],
            [1, 0, 1, 0, 1, np.nan, np.nan],
            [0, 0, 0, 0, 1, np.nan, np.nan],
            [1, 1, 1, 0, 1, np.nan, np.nan],
            [0, 1, 0, 0, 1, np.nan, np.nan],
        ]
    )
    frame = pd.DataFrame(x, columns=["q1", "q2", "q3", "zeros", "ones", "none", "single"])
    res = tetrachoric_matrix(frame, correct=0.25, smooth=False)
    assert res.names == ("q1", "q2", "q3")
    assert res.dropped == ("zeros", "ones", "none", "single")
    assert res.dropped_reasons == {
        "zeros": "no variance (all 0)",
        "ones": "no variance (all 1)",
        "none": "no observations",
        "single": "no variance (all 1)",
    }
    assert res.correct == 0.25 and res.n.dtype == np.int64
    # pair tables: (q1, q2) = [1, 2, 2, 1], (q1, q3) = [2, 1, 1, 2], (q2, q3) = [1, 1, 2, 2]:
    # none has a zero cell
    assert res.n_corrected_pairs == 0
    assert res.smoothing_note is None and res.smoothed is False
    assert res.min_eigenvalue == pytest.approx(np.linalg.eigvalsh(res.raw_rho)[0])
    # names given win over the frame's columns
    named = tetrachoric_matrix(frame[["q1", "q2", "q3"]], names=["a", "b", "c"])
    assert named.names == ("a", "b", "c")
    with pytest.raises(ValueError, match=_exact("2 names for 3 columns")):
        tetrachoric_matrix(frame[["q1", "q2", "q3"]], names=["a", "b"])
    with pytest.raises(ValueError, match=_exact("column names must be unique")):
        tetrachoric_matrix(frame[["q1", "q2", "q3"]], names=["a", "b", "a"])
    # zero cells counted per pair: q1 and a copy of it have empty off-diagonal cells
    dup = tetrachoric_matrix(np.c_[x[:, :3], x[:, 0]], smooth=False)
    assert dup.n_corrected_pairs == 1


def test_matrix_with_missing_pairs_or_one_column():
    x = np.full((6, 3), np.nan)
    x[:, 0] = [0, 1, 0, 1, 1, 0]
    x[:2, 1] = [0, 1]  # two rows only: the (0, 1) and (1, 2) pairs are missing
    x[:, 2] = [1, 1, 0, 0, 1, 0]
    res = tetrachoric_matrix(x)
    assert res.smoothing_note == "some correlations are missing, smoothing turned off"
    assert res.smoothed is False and np.isnan(res.min_eigenvalue)
    one = tetrachoric_matrix(x[:, [0]])
    assert one.names == ("0",) and one.min_eigenvalue == 1.0 and one.smoothing_note is None


def test_reindex_lays_out_any_order():
    x, _ = _raw_from_table([10, 5, 5, 10])
    cols = np.c_[x, 1 - x[::-1], np.roll(x, 3), np.zeros_like(x)]
    res = tetrachoric_matrix(cols, names=["a", "b", "c", "z"])
    assert res.names == ("a", "b", "c")
    out = res.reindex(["c", "x", "a", "b", "z"])
    order = [2, 0, 1]
    np.testing.assert_array_equal(out[np.ix_([0, 2, 3], [0, 2, 3])], res.rho[np.ix_(order, order)])
    assert np.isnan(out[1]).all() and np.isnan(out[:, 4]).all()
    tau = res.reindex_tau(["c", "x", "a", "b", "z"])
    np.testing.assert_array_equal(tau[[0, 2, 3]], res.tau[order])
    assert np.isnan(tau[[1, 4]]).all()


def test_table_proportions_and_margins():
    with pytest.raises(ValueError, match=_exact(
        "impossible proportions p_x, p_y, p_xy = [0.3, 0.4, 0.5]"
    )):  # fmt: skip
        tetrachoric_table([0.3, 0.4, 0.5])
    # rounding may leave -5e-17 in a cell: it is a zero, not an error (x = 1 implies y = 1)
    res = tetrachoric_table([0.3, 0.4, 0.1 + 0.2])
    assert res.table[2] == 0.0 and res.rho == pytest.approx(1.0, abs=1e-6)
    # proportions never get a standard error; counts (even two) do
    assert np.isnan(tetrachoric_table([0.3, 0.4, 0.2]).se)
    assert np.isfinite(tetrachoric_table([1, 0, 0, 1]).se)
    # an empty margin (no correction to fill it) is no correlation, reported
    from scipy import stats

    for table in ([0, 0, 3, 4], [3, 4, 0, 0], [0, 3, 0, 4], [3, 0, 4, 0]):
        res = tetrachoric_table(table, correct=0)
        assert res.reason == "empty margin" and res.method == "table" and np.isnan(res.rho)
        assert res.corrected is False and res.n == 7 and np.isnan(res.se)
        assert res.table == tuple(map(float, table))
        # thresholds from the margins: P(x = 0) = (n00 + n01) / n, P(y = 0) = (n00 + n10) / n
        px0, py0 = (table[0] + table[1]) / 7, (table[0] + table[2]) / 7
        np.testing.assert_allclose(res.tau, (stats.norm.ppf(px0), stats.norm.ppf(py0)))


def test_cor_smooth_checks_and_results():
    with pytest.raises(
        ValueError, match=_exact("cor_smooth needs a square matrix, got shape (2, 3)")
    ):
        cor_smooth(np.zeros((2, 3)))
    with pytest.raises(
        ValueError, match=_exact("cor_smooth needs a square matrix, got shape (3,)")
    ):
        cor_smooth(np.zeros(3))
    with pytest.raises(ValueError, match=_exact(
        "cor_smooth: the matrix has missing or infinite entries"
    )):  # fmt: skip
        cor_smooth([[1.0, np.nan], [np.nan, 1.0]])
    with pytest.raises(ValueError, match=_exact("cor_smooth: the matrix is not symmetric")):
        cor_smooth(np.array([[1.0, 0.5], [0.6, 1.0]]))
    ok = cor_smooth(np.array([[1.0, 0.5], [0.5 + 1e-12, 1.0]]))  # rounding is not asymmetry
    assert ok.smoothed is False
    eye = cor_smooth(np.eye(3, dtype=int))
    assert eye.smoothed is False and eye.matrix.dtype == np.float64
