"""The report's rules piece by piece, on small hand-made summaries (seconds).

Each expected sentence, cell and number is written out by hand (formatting done in the head, not
by the report's helpers); the HTML is read back with :mod:`html.parser` and the figures are read
as the objects they are (their panels' artists, labels and ticks) before they become SVG.
tests/test_report.py checks the whole page on a simulated analysis; this file pins the wording,
the thresholds and the tables' cells that it does not.
"""

from __future__ import annotations

import html as htmllib
import math
from html.parser import HTMLParser
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from metacog_metrics import report as rp

NAN = float("nan")


# ---------------------------------------------------------------------------------------------
# HTML helpers (independent of the report's code)
# ---------------------------------------------------------------------------------------------


class _Tables(HTMLParser):
    """Every <table> of a page as a list of rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(text: str) -> list[list[list[str]]]:
    p = _Tables()
    p.feed(text)
    return p.tables


def as_dict(table: list[list[str]]) -> list[dict[str, str]]:
    head, *rows = table
    return [dict(zip(head, r, strict=True)) for r in rows]


def _blocks(text: str) -> list[str]:
    """The parts of a section joined by newlines, each table (which spans lines) as one."""
    out: list[str] = []
    in_table = False
    for line in text.split("\n"):
        if in_table:
            out[-1] += "\n" + line
            in_table = "</table>" not in line
        else:
            out.append(line)
            in_table = "<table" in line and "</table>" not in line
    return [p for p in out if p]


def labels(ax) -> list[str | None]:
    return [a.label for a in ax.artists]


def by_label(ax, label: str):
    (hit,) = [a for a in ax.artists if a.label == label]
    return hit


# ---------------------------------------------------------------------------------------------
# Number formats
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "digits", "want"),
    [
        (1 / 3, 3, "0.333"),
        (2.5, 0, "2"),
        (0.125, 1, "0.1"),
        (None, 3, "n/a"),
        (NAN, 3, "n/a"),
        (math.inf, 3, "n/a"),
        (-math.inf, 3, "n/a"),
        (np.float64(0.5), 3, "0.500"),
        (2, 3, "2.000"),
    ],
)
def test_fmt(x, digits, want) -> None:
    assert rp._fmt(x, digits) == want


def test_fmt_default_digits_is_three() -> None:
    assert rp._fmt(0.12345) == "0.123"


@pytest.mark.parametrize(
    ("x", "want"),
    [
        (0.001, "p = 0.001"),
        (0.000999, "p < 0.001"),
        (0.0, "p < 0.001"),
        (0.045678, "p = 0.0457"),
        (1.0, "p = 1"),
        (None, "p n/a"),
        (NAN, "p n/a"),
        (math.inf, "p n/a"),
    ],
)
def test_p_value_text(x, want) -> None:
    assert rp._p(x) == want


@pytest.mark.parametrize(
    ("x", "digits", "want"),
    [(0.1234, 0, "12%"), (0.1234, 1, "12.3%"), (1.0, 0, "100%"), (None, 0, "n/a"),
     (NAN, 1, "n/a"), (math.inf, 0, "n/a")],
)  # fmt: skip
def test_pct(x, digits, want) -> None:
    assert rp._pct(x, digits) == want


def test_pct_default_has_no_decimals() -> None:
    assert rp._pct(0.256) == "26%"


def test_ci_text() -> None:
    assert rp._ci([0.1, 0.25]) == "95% item bootstrap 0.100 to 0.250"
    assert rp._ci((0.1, 0.25), digits=1) == "95% item bootstrap 0.1 to 0.2"
    assert rp._ci([0.1]) == "95% item bootstrap 0.100 to n/a"
    assert rp._ci(None) == "95% item bootstrap n/a to n/a"
    assert rp._ci([0.1, 0.25, 0.9]) == "95% item bootstrap 0.100 to 0.250"
    assert rp._ci([0.5, 0.8], pct=True) == "95% item bootstrap 50% to 80%"
    assert rp._ci([None, 0.8], pct=True) == "95% item bootstrap n/a to 80%"


@pytest.mark.parametrize(
    ("values", "kw", "want"),
    [
        ([0.1234, 0.5], {}, "0.12 to 0.50"),
        ([0.5, 0.1234], {}, "0.12 to 0.50"),
        ([0.3], {}, "0.30"),
        ([0.301, 0.304], {}, "0.30"),  # closer than the last digit: one number
        ([0.30, 0.31], {}, "0.30 to 0.31"),
        ([1.0, 2.0], {"digits": 0}, "1 to 2"),  # exactly one unit apart: a range
        ([10, 12, 11], {"digits": 0}, "10 to 12"),
        ([0.25, 0.5], {"pct": True}, "25% to 50%"),
        ([0.251, 0.254], {"pct": True}, "25%"),
        ([0.25, 0.26], {"pct": True}, "25% to 26%"),
        ([0.25], {"pct": True, "digits": 3}, "25%"),  # percentages have no decimals
        ([None, NAN, 0.5, math.inf], {}, "0.50"),
        ([], {}, "n/a"),
        ([None, NAN], {"pct": True}, "n/a"),
        ([0.12345, 0.5], {"digits": 3}, "0.123 to 0.500"),
    ],
)
def test_range(values, kw, want) -> None:
    assert rp._range(values, **kw) == want


@pytest.mark.parametrize(
    ("observed", "null", "want"),
    [
        (0.2, {"p_value": 0.01, "mean": 0.1}, "above"),
        (0.05, {"p_value": 0.01, "mean": 0.1}, "below"),
        (0.1, {"p_value": 0.01, "mean": 0.1}, "below"),  # equal to the mean: not above
        (0.2, {"p_value": 0.05, "mean": 0.1}, "not distinguishable from"),  # p == alpha
        (0.2, {"p_value": 0.0499, "mean": 0.1}, "above"),
        (0.2, {"p_value": None, "mean": 0.1}, "not tested against"),
        (0.2, {"p_value": 0.01, "mean": None}, "not tested against"),
        (0.2, {"p_value": NAN, "mean": 0.1}, "not tested against"),
        (0.2, {}, "not tested against"),
    ],
)
def test_versus(observed, null, want) -> None:
    assert rp._versus(observed, null, 0.05) == want


def test_label_size_and_rows_height() -> None:
    assert [rp._label_size(n) for n in (1, 25, 26, 50, 51, 400)] == [11, 11, 9, 9, 8, 8]
    assert rp._rows_height(10) == 290.0  # 18 * 10 + 16 = 196 is below the minimum
    assert rp._rows_height(20) == 18 * 20 + 16
    assert rp._rows_height(25) == 18 * 25 + 16
    assert rp._rows_height(26) == 13 * 26 + 16
    assert rp._rows_height(50) == 13 * 50 + 16
    assert rp._rows_height(51) == 10 * 51 + 16
    assert rp._rows_height(5, minimum=200.0) == 200.0
    assert rp._rows_height(12, minimum=100.0) == 18 * 12 + 16


def test_subsample_keeps_every_point_under_the_cap() -> None:
    assert rp._subsample([10, 20], cap=30) == [slice(None), slice(None)]
    assert rp._subsample([1000, 2000]) == [slice(None), slice(None)]
    assert rp.MAX_SCATTER_POINTS == 3000


def test_subsample_above_the_cap_keeps_each_sets_share_seeded() -> None:
    a, b = rp._subsample([10, 21], cap=30)
    # round(30 * 10 / 31) = 10 and round(30 * 21 / 31) = 20
    assert len(a) == 10 and len(b) == 20
    for idx, n in ((a, 10), (b, 21)):
        assert list(idx) == sorted(set(idx.tolist())) and idx.min() >= 0 and idx.max() < n
    big = rp._subsample([1000, 3000])  # default cap 3000, seed 0
    assert [len(i) for i in big] == [750, 2250]
    rng = np.random.default_rng(0)
    want = [np.sort(rng.choice(1000, size=750, replace=False)),
            np.sort(rng.choice(3000, size=2250, replace=False))]  # fmt: skip
    for got, w in zip(big, want, strict=True):
        np.testing.assert_array_equal(got, w)
    other = rp._subsample([1000, 3000], seed=1)
    assert not np.array_equal(other[0], big[0])
    # every set keeps at least one point; an empty set stays empty
    tiny = rp._subsample([1, 9999])
    assert len(tiny[0]) == 1 and tiny[0][0] == 0 and len(tiny[1]) == 3000
    empty = rp._subsample([0, 5000])
    assert len(empty[0]) == 0 and len(empty[1]) == 3000


def test_shown() -> None:
    assert rp._shown(5000, slice(None)) == ""
    assert rp._shown(5000, np.arange(1500)) == "; random 1,500 of 5,000 shown"


def test_model_label_marks_only_reasoning_true() -> None:
    assert rp._model_label("m1", True) == "m1 (R)"
    assert rp._model_label("m1", False) == "m1"
    assert rp._model_label("m1", 1) == "m1"  # only True itself marks a reasoning model
    assert rp._model_label(7, None) == "7"
    # a bool column (NumPy bools) marks as Python's True does; a missing flag never marks
    assert rp._model_label("m1", np.bool_(True)) == "m1 (R)"
    assert rp._model_label("m1", np.bool_(False)) == "m1"
    assert rp._model_label("m1", NAN) == "m1"
    assert rp._model_label("m1", pd.NA) == "m1"


def test_absent_section() -> None:
    assert rp._absent("A & B", "a-b", "x < y") == (
        '<h2 id="a-b">A &amp; B</h2><p class="warn">Not shown: x &lt; y.</p>'
    )


def test_img_of_no_figure_is_empty_and_a_figure_is_titled() -> None:
    assert rp._img(None, "x") == ""
    fig, _ = rp._figure(1)
    assert "<title>a &lt;b&gt;</title>" in rp._img(fig, "a <b>")


def test_figure_sizes() -> None:
    fig, axes = rp._figure(2)
    assert len(axes) == 2 and axes is fig.axes
    assert (fig.panel_width, fig.plot_height) == (540.0, 290.0)
    fig, axes = rp._figure(1, width=100.0, height=50.0)
    assert len(axes) == 1 and (fig.panel_width, fig.plot_height) == (100.0, 50.0)


def test_table_formats_floats_and_missing_values() -> None:
    df = pd.DataFrame({"a": ["x<y", "z"], "b": [0.12345, NAN], "c": [1, 2]})
    (t,) = tables(rp._table(df))
    assert t == [["a", "b", "c"], ["x<y", "0.123", "1"], ["z", "–", "2"]]
    (t,) = tables(rp._table(df, digits=1))
    assert t[1] == ["x<y", "0.1", "1"]
    text = rp._table(df)
    assert "x&lt;y" in text and 'border="1"' not in text
    assert "<th></th>" not in text  # no index column
    # every kind of gap is a dash: None in an object column (pandas 2 printed "None"), pd.NA
    # of a nullable integer or boolean column ("<NA>"); ints and bools keep their text
    gaps = pd.DataFrame({
        "n": pd.Series([3, None], dtype=object),
        "k": pd.array([1, None], dtype="Int64"),
        "ok": pd.array([True, None], dtype="boolean"),
        "f": [True, False],
    })  # fmt: skip
    (t,) = tables(rp._table(gaps))
    assert t[1:] == [["3", "1", "True", "True"], ["–", "–", "–", "False"]]
    assert gaps["k"].dtype == "Int64"  # the caller's frame is not changed


# ---------------------------------------------------------------------------------------------
# Basis, private signal and the parabola rule
# ---------------------------------------------------------------------------------------------


def test_basis_text() -> None:
    assert rp._basis_text(None) == "basis n/a"
    assert rp._basis_text({}) == "basis n/a"
    assert rp._basis_text({"n_models": 5, "n_items": 100}) == ("5 models x 100 complete-case items")
    pw = {"items": "pairwise-complete", "n_models": 5, "n_items": 100}
    assert rp._basis_text(pw) == "5 models x 100 items"
    assert rp._basis_text({**pw, "n_pairs": 10}) == "5 models x 100 items, 10 pairs"
    same = {**pw, "n_pairs": 10, "n_items_per_pair": {"min": 90, "max": 90, "median": 90}}
    assert rp._basis_text(same) == "5 models x 100 items, 10 pairs"
    ragged = {**pw, "n_pairs": 10, "n_items_per_pair": {"min": 80, "max": 95, "median": 88.4}}
    assert rp._basis_text(ragged) == (
        "5 models, 10 pairs, each pair on the items both answered: 80 to 95 (median 88) of "
        "100 items"
    )
    no_pairs = {**pw, "n_items_per_pair": {"min": 80, "max": 95, "median": 90}}
    assert rp._basis_text(no_pairs) == (
        "5 models, each pair on the items both answered: 80 to 95 (median 90) of 100 items"
    )
    assert rp._basis_text({**pw, "n_items_per_pair": {"max": 95}}) == "5 models x 100 items"


def test_bases_keeps_each_text_once_in_order() -> None:
    a, b = {"n_models": 3, "n_items": 9}, {"n_models": 4, "n_items": 8}
    assert rp._bases([a, b, a, None]) == (
        "3 models x 9 complete-case items; 4 models x 8 complete-case items; basis n/a"
    )


def test_correlation_entry_follows_the_method() -> None:
    assert rp._correlation({"tetrachoric": {"tau": [1]}}) == {"tau": [1]}
    assert rp._correlation({"method": None, "tetrachoric": {"tau": [1]}}) == {"tau": [1]}
    sec = {"method": "polychoric", "polychoric": {"tau": [2]}, "tetrachoric": {"tau": [1]}}
    assert rp._correlation(sec) == {"tau": [2]}
    assert rp._correlation({"method": "polychoric"}) == {}
    assert rp._correlation({"tetrachoric": None}) == {}


PS_TAIL = (
    "beyond shared difficulty at 0.05 (its size holds under one-dimensional Rasch, 2PL and 3PL "
    "correctness; items that draw on several abilities can make it reject too often)"
)


def test_private_signal_text() -> None:
    ps = {"p_value": 0.01, "mean": 0.1, "observed": 0.25, "n_groups": 2,
          "basis": {"n_models": 4, "n_items": 50}}  # fmt: skip
    assert rp._private_signal_text(ps, 0.05) == (
        "the test of private signal (confidence rows permuted among items of equal pass count "
        "and nearly equal ability-weighted score within each benchmark; 4 models x 50 "
        "complete-case items): observed 0.250 against its null 0.100, one-sided p = 0.01, "
        "evidence of private signal " + PS_TAIL
    )
    one = {**ps, "n_groups": 1, "p_value": 0.05}
    assert rp._private_signal_text(one, 0.05) == (
        "the test of private signal (confidence rows permuted among items of equal pass count "
        "and nearly equal ability-weighted score; 4 models x 50 complete-case items): observed "
        "0.250 against its null 0.100, one-sided p = 0.05, no evidence of private signal " + PS_TAIL
    )
    unset = {**ps, "n_groups": None}
    assert "score; 4 models" in rp._private_signal_text(unset, 0.05)
    assert "at 0.1 (" in rp._private_signal_text(ps, 0.1)


def _section(taus, coef, r2, p, vertex, method=None):
    key = method or "tetrachoric"
    sec = {
        key: {"tau": taus},
        "eigen": {"quadratic_coef": coef, "quadratic_r2": r2, "quadratic_p_value": p,
                  "quadratic_vertex": vertex},
    }  # fmt: skip
    if method:
        sec["method"] = method
    return sec


SIX = [-1.0, -0.6, -0.2, 0.2, 0.6, 1.0]
GOOD = (0.5, 0.0, -0.2)


@pytest.mark.parametrize(
    ("taus", "coef", "r2", "p", "vertex", "want"),
    [
        ([0.0, 1e-12, 1.0, 2.0], GOOD, 0.9, 0.01, 0.5,
         "no shape named (3 distinct thresholds: a quadratic fits any 3 points)"),
        ([0.0, 1.0, 2.0, 3.0], GOOD, 0.9, 0.01, 0.5,
         "no shape named, only 4 distinct thresholds (quadratic R^2 0.90, c2 -0.2, vertex tau "
         "0.50)"),
        ([-1.0, -0.5, 0.0, 0.5, 1.0], GOOD, 0.9, 0.01, None,
         "no shape named, only 5 distinct thresholds (quadratic R^2 0.90, c2 -0.2, vertex tau "
         "n/a)"),
        (SIX, None, 0.9, 0.01, 0.0,
         "no shape named (6 distinct thresholds: a quadratic fits any 3 points)"),
        (SIX, GOOD, None, 0.01, 0.0,
         "no shape named (6 distinct thresholds: a quadratic fits any 3 points)"),
        (SIX, (0.5, 0.0, 0.0), 0.9, 0.01, 0.0,
         "not an inverted parabola: the curvature is upward or flat (quadratic R^2 0.90, c2 0, "
         "vertex tau 0.00)"),
        (SIX, GOOD, 0.9, 0.01, None,
         "loadings fall off towards one end only: the vertex is outside the thresholds "
         "(quadratic R^2 0.90, c2 -0.2, vertex tau n/a)"),
        (SIX, GOOD, 0.9, 0.01, -1.001,
         "loadings fall off towards one end only: the vertex is outside the thresholds "
         "(quadratic R^2 0.90, c2 -0.2, vertex tau -1.00)"),
        (SIX, GOOD, 0.9, 0.01, 1.001,
         "loadings fall off towards one end only: the vertex is outside the thresholds "
         "(quadratic R^2 0.90, c2 -0.2, vertex tau 1.00)"),
        # the vertex on either end of the range is inside it; R^2 exactly 0.5 is enough
        (SIX, GOOD, 0.5, 0.049, -1.0,
         "an inverted parabola, mid-threshold models load most (quadratic R^2 0.50, c2 -0.2, "
         "vertex tau -1.00, F-test p = 0.049)"),
        (SIX, (0.5, 0.0, -0.0123456), 0.9, 0.01, 1.0,
         "an inverted parabola, mid-threshold models load most (quadratic R^2 0.90, c2 "
         "-0.0123, vertex tau 1.00, F-test p = 0.01)"),
        (SIX, GOOD, 0.4999, 0.01, 0.0,
         "no clear shape: the quadratic explains little (quadratic R^2 0.50, c2 -0.2, vertex "
         "tau 0.00, F-test p = 0.01)"),
        (SIX, GOOD, 0.9, 0.05, 0.0,
         "no clear shape: the quadratic explains little (quadratic R^2 0.90, c2 -0.2, vertex "
         "tau 0.00, F-test p = 0.05)"),
        (SIX, GOOD, 0.9, None, 0.0,
         "no clear shape: the quadratic explains little (quadratic R^2 0.90, c2 -0.2, vertex "
         "tau 0.00, F-test p n/a)"),
        (SIX, GOOD, 0.9, NAN, 0.0,
         "no clear shape: the quadratic explains little (quadratic R^2 0.90, c2 -0.2, vertex "
         "tau 0.00, F-test p n/a)"),
        # missing and non-finite thresholds are not counted
        ([*SIX[:5], None, NAN], GOOD, 0.9, 0.01, 0.0,
         "no shape named, only 5 distinct thresholds (quadratic R^2 0.90, c2 -0.2, vertex tau "
         "0.00)"),
        (None, GOOD, 0.9, 0.01, 0.0,
         "no shape named (0 distinct thresholds: a quadratic fits any 3 points)"),
        ({f"m{i}": t for i, t in enumerate(SIX)}, GOOD, 0.9, 0.01, 0.0,
         "an inverted parabola, mid-threshold models load most (quadratic R^2 0.90, c2 -0.2, "
         "vertex tau 0.00, F-test p = 0.01)"),
    ],
)  # fmt: skip
def test_parabola_rule(taus, coef, r2, p, vertex, want) -> None:
    assert rp._parabola(_section(taus, coef, r2, p, vertex)) == want


def test_parabola_constants_and_method() -> None:
    assert (rp.PARABOLA_MIN_THRESHOLDS, rp.PARABOLA_MIN_R2, rp.PARABOLA_MAX_P) == (6, 0.5, 0.05)
    sec = _section(SIX, GOOD, 0.9, 0.01, 0.0, method="polychoric")
    sec["tetrachoric"] = {"tau": [0.0, 1.0]}
    assert rp._parabola(sec).startswith("an inverted parabola")
    assert rp._parabola({}).startswith("no shape named (0 distinct")


# ---------------------------------------------------------------------------------------------
# Headline findings
# ---------------------------------------------------------------------------------------------

SHAPE_OK = ("an inverted parabola, mid-threshold models load most (quadratic R^2 0.90, c2 -0.2, "
            "vertex tau 0.00, F-test p = 0.01)")  # fmt: skip
TET_RULE = "psych's tau = Phi^-1(P(confidence = 0)), so a high threshold is a low yes-rate"
POLY_RULE = ("for numeric confidence tau = Phi^-1 of the model's share of confidence below the "
             "pooled median, ties half, so a high threshold is a model less confident than the "
             "typical one")  # fmt: skip


def _group(share=0.4567, method="tetrachoric", r2=0.9, tau=0.2, br=None, cp=None, ps=None,
           align=None, n_models=6, n_items=120):  # fmt: skip
    sec = _section(SIX, GOOD, r2, 0.01, 0.0, method=method)
    sec["eigen"]["first_share"] = share
    sec["basis"] = {"n_models": n_models, "n_items": n_items}
    nulls = {}
    if br is not None:
        nulls["base_rate"] = br
    if cp is not None:
        nulls["calibration_preserving"] = cp
    if ps is not None:
        nulls["private_signal"] = ps
    g = {
        "status": "ok",
        "confidence": sec,
        "pairwise": {
            "mean_tau": tau,
            "nulls": nulls,
            "basis": {
                "items": "pairwise-complete",
                "n_models": n_models,
                "n_items": n_items,
                "n_pairs": 15,
            },
        },
    }
    if align is not None:
        g["factor_alignment"] = align
    return g


def test_findings_of_one_group_word_for_word() -> None:
    g = _group(
        br={"mean": 0.05, "p_value": 0.001},
        cp={"mean": 0.19, "p_value": 0.4},
        align={"all": {"r": 0.61}, "contentious": {"r": 0.3, "n_items": 40},
               "basis": {"n_models": 6, "n_items": 120}, "method": "binary"},
    )  # fmt: skip
    summary = {"results": {"b1": {"g1": g, "g2": {"status": "skipped"}}}}
    assert rp.headline_findings(summary) == [
        "Shared difficulty (b1/g1; 6 models x 120 complete-case items): the first factor "
        "carries 46% of the tetrachoric confidence variance; PC1 loadings against the models' "
        f"thresholds ({TET_RULE}): {SHAPE_OK}.",
        "Pairwise calibration (mean Kendall tau-b of dconf vs dperf over model pairs): b1/g1 "
        "0.200, above the base-rate-matched null (0.050, p = 0.001) and not distinguishable "
        "from the calibration-preserving null (0.190, p = 0.4) (6 models x 120 items, 15 "
        "pairs).",
        "Confidence factor vs capability factor over items (b1/g1; 6 models x 120 "
        "complete-case items): Pearson r 0.61 on all items, 0.30 on the 40 contentious items "
        "(yes-rate and pass-rate within the bounds).",
    ]
    # alpha: p = 0.001 is not below 0.001
    low = rp.headline_findings(summary, alpha=0.001)[1]
    assert "0.200, not distinguishable from the base-rate-matched null" in low
    assert (
        "and above the calibration-preserving null" in rp.headline_findings(summary, alpha=0.5)[1]
    )


def test_findings_over_several_groups() -> None:
    ps = {"p_value": 0.2, "mean": 0.1, "observed": 0.12, "n_groups": 1,
          "basis": {"n_models": 6, "n_items": 120}}  # fmt: skip
    groups = {
        "a": {
            "x": _group(share=0.30, br={"mean": 0.3, "p_value": 0.01}, ps=ps,
                        align={"all": {"r": 0.5}, "contentious": {"r": 0.2, "n_items": 10},
                               "method": "levels (ordinal)",
                               "basis": {"n_models": 6, "n_items": 120}}),
            "y": _group(share=0.55, method="polychoric", r2=0.1, tau=0.1),
        },
        "b": {
            "x": _group(share=0.40, tau=NAN, n_models=5, n_items=90,
                        align={"all": {"r": 0.7}, "contentious": {"r": NAN, "n_items": 14},
                               "basis": {"n_models": 5, "n_items": 90}}),
            "y": _group(share=0.35, tau=0.3, ps={"p_value": None}),
            "z": {**_group(), "status": "failed"},
        },
    }  # fmt: skip
    groups["b"]["y"]["pairwise"]["mean_tau"] = 0.3
    groups["a"]["y"]["pairwise"]["mean_tau"] = None
    groups["b"]["w"] = _group(tau=-0.05, br={"mean": 0.0, "p_value": 0.0001})
    out = rp.headline_findings({"results": groups})
    assert out[0] == (
        "Shared difficulty (5 groups; 6 models x 120 complete-case items; 5 models x 90 "
        "complete-case items): the first factor carries 30% to 55% of the polychoric and "
        "tetrachoric confidence variance; PC1 loadings against the models' thresholds "
        f"({TET_RULE}; {POLY_RULE}): an inverted parabola (by the rule in the schema) in 4 of "
        "5."
    )
    assert out[1] == (
        "Pairwise calibration (mean Kendall tau-b of dconf vs dperf over model pairs): "
        "a/x 0.200, below the base-rate-matched null (0.300, p = 0.01) and "
        "not tested against the calibration-preserving null (n/a, p n/a) (6 models x 120 "
        "items, 15 pairs); "
        + rp._private_signal_text(ps, 0.05).replace("\n", "")
        + "; b/x n/a, not tested against the base-rate-matched null (n/a, p n/a) and not "
        "tested against the calibration-preserving null (n/a, p n/a) (5 models x 90 items, 15 "
        "pairs); b/y 0.300, not tested against the base-rate-matched null (n/a, p n/a) and not "
        "tested against the calibration-preserving null (n/a, p n/a) (6 models x 120 items, "
        "15 pairs); and 1 more groups."
    )
    # the private-signal part of a/x, spelt out
    assert "items, 15 pairs); the test of private signal (confidence rows" in out[1]
    assert "one-sided p = 0.2, no evidence of private signal beyond" in out[1]
    assert out[2] == (
        "Confidence factor vs capability factor over items (5 groups; 6 models x 120 "
        "complete-case items; 5 models x 90 complete-case items): Pearson r 0.50 to 0.70 on "
        "all items, 0.20 on the 10 to 14 contentious items (pass rate within the bounds)."
    )


def test_findings_up_to_three_pairwise_groups_have_no_more_clause() -> None:
    results = {"b": {f"g{i}": _group(tau=0.1 * i) for i in range(1, 4)}}
    out = rp.headline_findings({"results": results})
    assert out[1].startswith("Pairwise calibration (mean Kendall tau-b of dconf vs dperf over "
                             "model pairs): b/g1 0.100, ")  # fmt: skip
    assert "b/g3 0.300" in out[1] and "more groups" not in out[1]
    assert len(out) == 2  # no group has a factor alignment
    assert out[0].endswith("in 3 of 3.")


def test_findings_filter_benchmarks_and_without_groups() -> None:
    summary = {"results": {"a": {"x": _group(tau=0.1)}, "b": {"y": _group(tau=0.2)}}}
    out = rp.headline_findings(summary, benchmarks=["b"])
    assert out[0].startswith("Shared difficulty (b/y; ")
    assert "b/y 0.200" in out[1] and "a/x" not in out[1]
    assert rp.headline_findings(summary, benchmarks=[])[0].startswith("No group")
    assert rp.headline_findings({}) == [
        "No group had enough models and items for the cross-model analyses."
    ]
    assert rp.headline_findings({"results": {"a": {"x": {"status": "skipped"}}}}) == [
        "No group had enough models and items for the cross-model analyses."
    ]


def test_findings_section_without_eigen_or_pairwise() -> None:
    g = {"status": "ok", "confidence": {}, "factor_alignment": {}}
    out = rp.headline_findings({"results": {"b": {"l": g}}})
    assert out == [
        "Shared difficulty (b/l; basis n/a): the first factor carries n/a of the tetrachoric "
        f"confidence variance; PC1 loadings against the models' thresholds ({TET_RULE}): no "
        "shape named (0 distinct thresholds: a quadratic fits any 3 points)."
    ]


# ---------------------------------------------------------------------------------------------
# Key figures of a group
# ---------------------------------------------------------------------------------------------


def test_key_figures_rows() -> None:
    group = {
        "n_models": 5,
        "coverage": {f"m{i}": {} for i in range(6)},
        "n_items_union": 130,
        "n_items": 100,
        "confidence": {"method": "polychoric", "basis": {"n_models": 5},
                       "eigen": {"first_share": 0.41, "quadratic_r2": 0.7777}},
        "correctness": {"basis": {"n_models": 4}, "eigen": {"first_share": 0.3}},
        "pairwise": {
            "mean_tau": 0.1234,
            "fdr_significant_share": 0.25,
            "basis": {"n_items_per_pair": {"min": 90, "median": 95.4, "max": 100}},
            "nulls": {
                "private_signal": {"mean": 0.02, "p_value": 0.2},
                "base_rate": {"mean": 0.01, "p_value": 0.0004,
                              "fdr_significant_share_by_direction": {"above": 0.2,
                                                                     "below": 0.05}},
            },
        },
        "factor_alignment": {"all": {"r": 0.5}, "contentious": {"r": 0.25, "n_items": 30}},
    }  # fmt: skip
    df = rp._key_figures(group)
    assert list(df.columns) == ["figure", "value"]
    assert [tuple(r) for r in df.itertuples(index=False)] == [
        ("models in the cross-model analyses", "5 of 6"),
        ("items (any included model)", "130"),
        ("items per pair (pairwise sections): min / median / max", "90 / 95 / 100"),
        ("complete-case items (factor scores, alignment, private-signal test)", "100"),
        ("first-factor share, confidence (polychoric, 5 models)", "0.410"),
        ("first-factor share, correctness (tetrachoric, 4 models)", "0.300"),
        ("quadratic R^2 of loadings on thresholds, confidence", "0.778"),
        ("mean pairwise tau-b", "0.123"),
        ("  base-rate-matched null: mean, p < 0.001", "0.010"),
        ("  private-signal test null: mean, p = 0.2", "0.020"),
        ("share of pairs significant after FDR (base-rate)", "0.250"),
        ("  of them above / below the null", "0.200 / 0.050"),
        ("factor alignment r, all complete-case items", "0.500"),
        ("factor alignment r, contentious items", "0.250"),
        ("contentious items", "30"),
    ]
    group["pairwise"]["nulls"]["calibration_preserving"] = {"mean": 0.03, "p_value": 0.5}
    rows = list(rp._key_figures(group)["figure"])
    assert rows[8:11] == ["  base-rate-matched null: mean, p < 0.001",
                          "  calibration-preserving null: mean, p = 0.5",
                          "  private-signal test null: mean, p = 0.2"]  # fmt: skip


def test_key_figures_of_an_empty_group() -> None:
    df = rp._key_figures({"n_models": 3, "coverage": {}})
    # a missing count is missing (pandas 3) or the text "None" (pandas 2): shown either way
    rows = [(f, None if pd.isna(v) or v == "None" else v) for f, v in df.itertuples(index=False)]
    assert rows == [
        ("models in the cross-model analyses", "3 of 3"),
        ("items (any included model)", None),
        ("items per pair (pairwise sections): min / median / max", "None / n/a / None"),
        ("complete-case items (factor scores, alignment, private-signal test)", None),
        ("first-factor share, confidence (tetrachoric, None models)", "n/a"),
        ("first-factor share, correctness (tetrachoric, None models)", "n/a"),
        ("quadratic R^2 of loadings on thresholds, confidence", "n/a"),
        ("mean pairwise tau-b", "n/a"),
        ("share of pairs significant after FDR (base-rate)", "n/a"),
        ("  of them above / below the null", "n/a / n/a"),
        ("factor alignment r, all complete-case items", "n/a"),
        ("factor alignment r, contentious items", "n/a"),
        ("contentious items", None),
    ]


# ---------------------------------------------------------------------------------------------
# Figures, read as objects
# ---------------------------------------------------------------------------------------------


def _eigen_section(method="tetrachoric", quadratic=True, names=("m1", "m2", "m3")):
    q = SimpleNamespace(r2=0.75, coef=(0.8, 0.1, -0.4)) if quadratic else None
    return SimpleNamespace(
        method=method,
        eigen=SimpleNamespace(eigenvalues=[2.0, 0.6, 0.4], first_share=0.6667,
                              thresholds=[-0.5, 0.0, 0.5], loadings=[0.7, 0.8, 0.6],
                              names=list(names), quadratic=q),
        tetrachoric=SimpleNamespace(names=list(names), tau=[0.5, -0.5, 0.0],
                                    rho=np.array([[1.0, 0.2, 0.3], [0.2, 1.0, 0.4],
                                                  [0.3, 0.4, 1.0]])),
    )  # fmt: skip


def test_structure_figure() -> None:
    g = SimpleNamespace(confidence=_eigen_section(), correctness=_eigen_section(quadratic=False))
    fig = rp._structure_figure(g)
    ax1, ax2 = fig.axes
    assert labels(ax1) == ["confidence (first share 67%)", "correctness (first share 67%)",
                           None]  # fmt: skip
    line = ax1.artists[0]
    np.testing.assert_array_equal(line.x, [1, 2, 3])
    np.testing.assert_array_equal(line.y, [2.0, 0.6, 0.4])
    assert line.color == "#1f77b4" and line.marker == "o"
    assert ax1.artists[1].color == "#d62728"
    ref = ax1.artists[2]
    assert (ref.value, ref.vertical, ref.lw, ref.ls, ref.color) == (1.0, False, 0.8, ":",
                                                                    rp.grey(0.6))  # fmt: skip
    assert (ax1.xlabel, ax1.ylabel, ax1.title) == ("component", "eigenvalue",
                                                   "Scree of the correlation matrices")  # fmt: skip
    assert ax1.legend_spec is not None and ax2.legend_spec is not None
    assert labels(ax2) == ["confidence", "quadratic fit, R\u00b2 = 0.75", "correctness"]
    sc, fit, sc2 = ax2.artists
    np.testing.assert_array_equal(sc.x, [-0.5, 0.0, 0.5])
    np.testing.assert_array_equal(sc.y, [0.7, 0.8, 0.6])
    assert sc.tips == ["m1", "m2", "m3"] and sc.color == "#1f77b4" and sc2.color == "#d62728"
    assert sc.radius == pytest.approx(rp.marker_radius(22))
    assert len(fit.x) == 100 and fit.x[0] == -0.5 and fit.x[-1] == 0.5
    np.testing.assert_allclose(fit.y, 0.8 + 0.1 * fit.x - 0.4 * fit.x**2)
    assert fit.lw == 1.2 and fit.color == "#1f77b4"
    assert ax2.xlabel == "response threshold \u03c4 = \u03a6\u207b\u00b9(P(x = 0))"
    assert (ax2.ylabel, ax2.title) == ("PC1 loading", "PC1 loadings against thresholds")


def test_structure_figure_numeric_and_absent() -> None:
    conf = _eigen_section(method="polychoric")
    conf.eigen.quadratic = SimpleNamespace(r2=NAN, coef=(0, 0, 0))
    conf.eigen.names = []
    fig = rp._structure_figure(SimpleNamespace(confidence=conf, correctness=None))
    ax1, ax2 = fig.axes
    assert labels(ax1) == ["confidence (first share 67%)", None]
    assert labels(ax2) == ["confidence"]  # no fit drawn for a non-finite R^2
    assert ax2.artists[0].tips is None
    assert ax2.xlabel.endswith("\n(numeric confidence: x = 0 below the pooled median, ties half)")
    none = SimpleNamespace(eigen=None, method="tetrachoric")
    assert rp._structure_figure(SimpleNamespace(confidence=none, correctness=None)) is None
    assert rp._structure_figure(SimpleNamespace(confidence=None, correctness=none)) is None
    only_corr = SimpleNamespace(confidence=none, correctness=_eigen_section())
    assert labels(rp._structure_figure(only_corr).axes[0])[0].startswith("correctness")


def test_heatmap_figure_orders_models_by_threshold() -> None:
    g = SimpleNamespace(confidence=_eigen_section(), correctness=_eigen_section())
    fig = rp._heatmap_figure(g)
    assert isinstance(fig, rp.Figure) and len(fig.axes) == 2
    assert fig.plot_height == 360.0
    for ax, name in zip(fig.axes, ("confidence", "correctness"), strict=True):
        # tau 0.5, -0.5, 0.0: m2 (-0.5), m3 (0.0), m1 (0.5)
        assert ax.xcat.labels == ["m2", "m3", "m1"] and ax.ycat.labels == ["m2", "m3", "m1"]
        assert ax.xcat.rotation == 90 and ax.xcat.thin and ax.ycat.thin
        assert ax.xcat.size == 10.0 and ax.ycat.size == 10.0
        assert ax.xcat.positions == [0.0, 1.0, 2.0]
        assert ax.title == f"Tetrachoric {name} (models by threshold)"
        (heat,) = ax.artists
        np.testing.assert_array_equal(
            heat.values, [[1.0, 0.4, 0.2], [0.4, 1.0, 0.3], [0.2, 0.3, 1.0]]
        )
        assert (heat.vmin, heat.vmax, heat.cmap) == (-1.0, 1.0, rp.RDBU_R)


def test_heatmap_figure_absent_panels() -> None:
    one = _eigen_section(names=("m1",))
    assert rp._heatmap_figure(SimpleNamespace(confidence=None, correctness=None)) is None
    assert rp._heatmap_figure(SimpleNamespace(confidence=one, correctness=None)) is None
    fig = rp._heatmap_figure(SimpleNamespace(confidence=_eigen_section(), correctness=None))
    assert [ax.visible for ax in fig.axes] == [True, False]
    fig = rp._heatmap_figure(SimpleNamespace(confidence=_eigen_section(), correctness=one))
    assert [ax.visible for ax in fig.axes] == [True, False]


def _many(n, prefix):
    names = [f"{prefix}{i:02d}" for i in range(n)]
    sec = _eigen_section(names=names)
    sec.tetrachoric.tau = list(np.linspace(1, -1, n))
    sec.tetrachoric.rho = np.eye(n)
    return sec


def test_heatmap_figure_stacks_long_names() -> None:
    # 25 models: 25 * 1.15 * 10 = 287.5 px of names against 540 - label - 110
    short = _many(25, "m")
    fig = rp._heatmap_figure(SimpleNamespace(confidence=short, correctness=short))
    assert isinstance(fig, rp.Figure)
    long = _many(25, "a-rather-long-model-name-")
    label = rp.text_width("a-rather-long-model-name-00", 10.0)
    assert 540 - label - 110 < 287.5  # the matrices would not fit side by side
    fig = rp._heatmap_figure(SimpleNamespace(confidence=long, correctness=long))
    assert isinstance(fig, rp.FigureStack) and len(fig.figures) == 2
    side = max(360.0, 287.5 + 10.0)
    for f in fig.figures:
        assert len(f.axes) == 1 and f.plot_height == side
        assert f.panel_width == pytest.approx(min(1080.0, label + side + 140.0))
    # names run from tau 1 down to -1: the order is reversed
    assert fig.axes[0].xcat.labels[0] == "a-rather-long-model-name-24"
    assert [ax.title for ax in fig.axes] == [
        "Tetrachoric confidence (models by threshold)",
        "Tetrachoric correctness (models by threshold)",
    ]
    only_conf = rp._heatmap_figure(SimpleNamespace(confidence=long, correctness=None))
    assert isinstance(only_conf, rp.FigureStack) and len(only_conf.figures) == 1
    # more than 50 models: side by side, thinned labels of 8 px
    big = _many(51, "a-rather-long-model-name-")
    fig = rp._heatmap_figure(SimpleNamespace(confidence=big, correctness=big))
    assert isinstance(fig, rp.Figure) and fig.axes[0].xcat.size == 8.0
    assert fig.axes[0].ycat.size == 8.0
    mid = _many(26, "m")
    fig = rp._heatmap_figure(SimpleNamespace(confidence=mid, correctness=None))
    assert fig.axes[0].xcat.size == 8.0  # 26 models: 8 px
    fig = rp._heatmap_figure(SimpleNamespace(confidence=_many(25, "m"), correctness=None))
    assert fig.axes[0].xcat.size == 10.0


def test_heatmap_stack_boundary_at_fifty_models() -> None:
    # 50 models of 8 px: 50 * 1.15 * 8 = 460 px > 540 - label - 110 for any name: stacked
    fig = rp._heatmap_figure(SimpleNamespace(confidence=_many(50, "m"), correctness=None))
    assert isinstance(fig, rp.FigureStack)
    assert fig.figures[0].plot_height == pytest.approx(max(360.0, 50 * 1.15 * 8 + 10.0))


def _null(draws, p):
    return SimpleNamespace(draws=np.asarray(draws, dtype=float), p_value=p)


def _pairwise(mean_tau=0.1234, nulls=None):
    dc = SimpleNamespace(
        delta=[0.1, 0.2],
        mean_tau=[0.3, 0.2],
        null_mean={"base_rate": [0.0, 0.01], "weird": [0.1, 0.1]},
        null_low={"base_rate": [-0.1, -0.1], "weird": [0.0, 0.0]},
        null_high={"base_rate": [0.1, 0.1], "weird": [0.2, 0.2]},
    )
    if nulls is None:
        nulls = {"base_rate": _null([0.0, 0.1], 0.01), "weird": _null([0.2], 0.5)}
    return SimpleNamespace(nulls=nulls, mean_tau=mean_tau, delta_curve=dc, pair_types={})


def test_null_figure() -> None:
    g = SimpleNamespace(pairwise=_pairwise(), private_signal=_null([0.5, 0.6], 0.2))
    ax1, ax2 = rp._null_figure(g).axes
    assert labels(ax1) == ["base-rate-matched null (p = 0.01)", "weird (p = 0.5)",
                           "private-signal test null (one-sided p = 0.2)",
                           "observed mean = 0.123"]  # fmt: skip
    h1, h2, h3, obs = ax1.artists
    assert (h1.color, h2.color, h3.color) == ("#7f7f7f", rp.grey(0.6), "#2ca02c")
    assert h1.alpha == 0.55 and h3.alpha == 0.55
    assert (obs.value, obs.vertical, obs.lw, obs.color) == (0.1234, True, 2, "#000000")
    assert (ax1.xlabel, ax1.ylabel, ax1.title) == (
        "mean Kendall tau-b over pairs",
        "joint null draws",
        "Observed mean tau against the nulls",
    )
    assert labels(ax2) == ["observed", "base-rate-matched null (95%)", None,
                           "weird (95%)", None, None]  # fmt: skip
    line, band, mean, band2, mean2, zero = ax2.artists
    np.testing.assert_array_equal(line.x, [0.1, 0.2])
    np.testing.assert_array_equal(line.y, [0.3, 0.2])
    assert line.marker == "o" and line.color == "#000000"
    assert band.color == "#7f7f7f" and band.alpha == 0.25 and band2.color == rp.grey(0.6)
    np.testing.assert_array_equal(mean.y, [0.0, 0.01])
    np.testing.assert_array_equal(mean2.y, [0.1, 0.1])
    np.testing.assert_array_equal(band.lo, [-0.1, -0.1])
    np.testing.assert_array_equal(band.hi, [0.1, 0.1])
    assert mean.color == "#7f7f7f" and mean.lw == 1
    assert (zero.value, zero.vertical, zero.ls) == (0, False, ":")
    assert ax2.title == "Mean tau as the gap shrinks"
    assert ax2.xlabel == "allowed accuracy gap \u03b4 = |acc(A) \u2212 acc(B)|"
    assert ax2.ylabel == "mean tau-b of pairs within \u03b4"
    assert ax1.legend_spec is not None and ax2.legend_spec is not None


def test_null_figure_absent_or_without_observed() -> None:
    assert rp._null_figure(SimpleNamespace(pairwise=None, private_signal=None)) is None
    empty = SimpleNamespace(pairwise=_pairwise(nulls={}), private_signal=None)
    assert rp._null_figure(empty) is None
    g = SimpleNamespace(pairwise=_pairwise(mean_tau=NAN), private_signal=None)
    ax1, _ = rp._null_figure(g).axes
    assert labels(ax1) == ["base-rate-matched null (p = 0.01)", "weird (p = 0.5)"]


def _per_model(**aurocs):
    return {m: SimpleNamespace(auroc_internal=a, auroc_pop=p) for m, (a, p) in aurocs.items()}


def test_calibration_figure_without_alignment() -> None:
    g = SimpleNamespace(calibration=SimpleNamespace(per_model=_per_model(m1=(0.7, 0.6),
                                                                         m2=(0.55, 0.65))),
                        alignment=None)  # fmt: skip
    fig = rp._calibration_figure(g)
    assert fig.plot_height == 290.0
    ax1, ax2 = fig.axes
    seg, own, pop, ref = ax1.artists
    np.testing.assert_array_equal(seg.seg, [[0.7, 0.0, 0.6, 0.0], [0.55, 1.0, 0.65, 1.0]])
    assert seg.color == rp.grey(0.7) and seg.lw == 1
    np.testing.assert_array_equal(own.x, [0.7, 0.55])
    np.testing.assert_array_equal(own.y, [0.0, 1.0])
    np.testing.assert_array_equal(pop.x, [0.6, 0.65])
    assert own.label == "Internal (own confidence)" and own.color == "#1f77b4"
    assert pop.label == "Pop (leave-one-out population mean)" and pop.color == "#ff7f0e"
    assert pop.marker == "s" and own.marker == "o"
    assert own.tips == ["m1", "m2"] and pop.tips == ["m1", "m2"]
    assert (ref.value, ref.vertical, ref.ls) == (0.5, True, ":")
    assert ax1.ycat.labels == ["m1", "m2"] and ax1.ycat.positions == [0.0, 1.0]
    assert ax1.ycat.size == 11.0
    assert ax1.ylim == (-0.6, 1.6) and ax1.invert_y
    assert (ax1.xlabel, ax1.title) == ("AUROC for correctness",
                                       "Per-model AUROC: own vs population")  # fmt: skip
    assert ax1.legend_spec is not None
    assert not ax2.visible
    assert (
        rp._calibration_figure(SimpleNamespace(calibration=SimpleNamespace(per_model={}))) is None
    )


def test_calibration_figure_with_alignment() -> None:
    al = SimpleNamespace(
        contentious_mask=[True, False, False, True],
        all=SimpleNamespace(confidence_scores=np.array([1.0, 2.0, 3.0, 4.0]),
                            correctness_scores=np.array([10.0, 20.0, 30.0, 40.0]), r=0.5),
        contentious=SimpleNamespace(r=0.3),
    )  # fmt: skip
    per = _per_model(**{f"m{i}": (0.6, 0.6) for i in range(30)})
    g = SimpleNamespace(calibration=SimpleNamespace(per_model=per), alignment=al)
    fig = rp._calibration_figure(g)
    assert fig.plot_height == 13 * 30 + 16
    ax1, ax2 = fig.axes
    assert ax1.ycat.size == 9.0
    assert ax2.visible
    rest, cont = ax2.artists
    assert rest.label == "all items, r = 0.50" and rest.color == rp.grey(0.6)
    assert cont.label == "contentious (own factor fit: r = 0.30)" and cont.color == "#d62728"
    np.testing.assert_array_equal(rest.x, [20.0, 30.0])
    np.testing.assert_array_equal(rest.y, [2.0, 3.0])
    np.testing.assert_array_equal(cont.x, [10.0, 40.0])
    np.testing.assert_array_equal(cont.y, [1.0, 4.0])
    assert rest.radius == pytest.approx(rp.marker_radius(10))
    assert cont.radius == pytest.approx(rp.marker_radius(14))
    assert (ax2.xlabel, ax2.ylabel, ax2.title) == (
        "capability factor-1 score (correctness)", "confidence factor-1 score",
        "Factor alignment over items",
    )  # fmt: skip
    assert ax2.legend_spec is not None
    # no scores: the panel is off
    al.all.confidence_scores = np.array([])
    assert not rp._calibration_figure(g).axes[1].visible


def test_calibration_figure_subsamples_many_items() -> None:
    n = 4000
    mask = np.zeros(n, dtype=bool)
    mask[:1000] = True
    scores = np.arange(n, dtype=float)
    al = SimpleNamespace(
        contentious_mask=mask,
        all=SimpleNamespace(confidence_scores=scores, correctness_scores=scores, r=0.5),
        contentious=SimpleNamespace(r=0.3),
    )
    g = SimpleNamespace(calibration=SimpleNamespace(per_model=_per_model(m=(0.6, 0.6))),
                        alignment=al)  # fmt: skip
    rest, cont = rp._calibration_figure(g).axes[1].artists
    assert rest.label == "all items, r = 0.50; random 2,250 of 3,000 shown"
    assert cont.label == "contentious (own factor fit: r = 0.30); random 750 of 1,000 shown"
    assert len(rest.x) == 2250 and len(cont.x) == 750
    assert set(cont.x.tolist()) <= set(range(1000)) and rest.x.min() >= 1000


# ---------------------------------------------------------------------------------------------
# A group's section and the whole page
# ---------------------------------------------------------------------------------------------


def _ga(**kw):
    base = dict(benchmark="b<1", label="l&2", confidence_kind="binary", binarized_at=None,
                skipped=None, calibration=SimpleNamespace(per_model={}), coverage=None,
                pairwise=None, warnings=[], alignment=None, confidence=None, correctness=None,
                private_signal=None)  # fmt: skip
    base.update(kw)
    return SimpleNamespace(**base)


def test_group_html_of_a_skipped_group() -> None:
    g = _ga(skipped="too <few> models", warnings=["w & x", "y"])
    text = rp._group_html(g, {"per_model": {}})
    assert text == "\n".join([
        '<h2 id="b&lt;1-l&amp;2">b&lt;1 / l&amp;2</h2>',
        '<p class="muted">confidence kind: binary</p>',
        '<p class="warn">Cross-model analyses skipped: too &lt;few&gt; models</p>',
        '<h3>Warnings</h3><ul><li class="warn">w &amp; x</li><li class="warn">y</li></ul>',
    ])  # fmt: skip


def test_group_html_tables() -> None:
    cov = pd.DataFrame({
        "model": ["m1", "m2"], "n_items": [10, 4], "share": [1.0, 0.4],
        "included": [True, False], "reason": ["", "coverage 40% < 50%"], "extra": [1, 2],
    })  # fmt: skip
    pair_types = {
        "R-NR": SimpleNamespace(n_pairs=3, mean_tau=0.25,
                                p_value={"base_rate": 0.01, "other": 0.5}),
    }  # fmt: skip
    pw = _pairwise()
    pw.pair_types = pair_types
    g = _ga(binarized_at=0.5, confidence_kind="numeric", coverage=cov, pairwise=pw,
            skipped="skip")  # fmt: skip
    group = {
        "n_items": 4,
        "per_model": {"m1": {"accuracy": 0.5, "n_items": 10, "zzz": 1, "ece": 0.1},
                      "m2": {"accuracy": 0.25, "n_items": 4, "zzz": 2, "ece": NAN}},
    }  # fmt: skip
    text = rp._group_html(g, group)
    assert (
        '<p class="muted">confidence kind: numeric, binarised at 0.5 for the factor '
        "sections</p>" in text
    )
    assert "<h3>Item coverage</h3>" in text
    assert ("factor scores, alignment and private-signal test the 4 items every included "
            "model answered.</p>") in text  # fmt: skip
    cov_t, per_t, types_t = tables(text)
    assert cov_t == [
        ["model", "n_items", "share", "included", "reason"],
        ["m1", "10", "1.000", "yes", ""],
        ["m2", "4", "0.400", "no", "coverage 40% &lt; 50%".replace("&lt;", "<")],
    ]
    assert per_t == [
        ["model", "n_items", "accuracy", "ece"],
        ["m1", "10", "0.500", "0.100"],
        ["m2", "4", "0.250", "–"],
    ]
    assert types_t == [["pair type", "pairs", "mean tau", "p (base-rate-matched null)"],
                       ["R-NR", "3", "0.250", "0.010"]]  # fmt: skip
    assert text.index("Item coverage") < text.index("<h3>Per model</h3>")
    assert text.index("<h3>Per model</h3>") < text.index("<h3>By reasoning pair type</h3>")
    assert "Warnings" not in text


def test_group_html_of_an_analysed_group_has_its_figures() -> None:
    g = _ga(confidence=_eigen_section(), correctness=_eigen_section(), pairwise=_pairwise(),
            calibration=SimpleNamespace(per_model=_per_model(m1=(0.7, 0.6))))  # fmt: skip
    text = rp._group_html(g, {"n_models": 3})
    (key,) = tables(text)
    assert key[0] == ["figure", "value"] and key[1] == ["models in the cross-model analyses",
                                                        "3 of 3"]  # fmt: skip
    titles = [s.split("</title>")[0] for s in text.split("<title>")[1:]]
    figures = [t for t in titles if t in ("scree and loadings", "tetrachoric matrices",
                                          "pairwise nulls and delta curve",
                                          "per-model calibration")]  # fmt: skip
    assert figures == ["scree and loadings", "tetrachoric matrices",
                       "pairwise nulls and delta curve", "per-model calibration"]  # fmt: skip
    assert "Cross-model analyses skipped" not in text
    assert "\n\n" not in text  # empty parts are left out


def test_render_report_page() -> None:
    summary = {
        "n_records": 120,
        "models": ["m1", "m2"],
        "inputs": ["a.jsonl", "b<.jsonl"],
        "parameters": {"permutations": 100, "joint_permutations": 50, "seed": 7},
        "results": {"b<1": {"l&2": {"status": "skipped", "per_model": {}}}},
        "warnings": ["one", "two"],
    }
    g = _ga(skipped="too few")
    result = SimpleNamespace(summary=summary, groups={"k": g}, tables={})
    text = rp.render_report(result, title="My <report>")
    assert text.startswith('<!doctype html><html><head><meta charset="utf-8"><title>My '
                           "&lt;report&gt;</title><style>")  # fmt: skip
    assert text.endswith("</body></html>")
    body = text.split("</style></head><body>")[1].removesuffix("</body></html>").split("\n")
    assert body[:5] == [
        "<h1>My &lt;report&gt;</h1>",
        '<p class="muted">120 records, 2 models, inputs: a.jsonl, b&lt;.jsonl; permutations '
        "100, joint draws 50, seed 7.</p>",
        '<h2>Findings</h2><ul class="findings"><li>No group had enough models and items for '
        "the cross-model analyses.</li></ul>",
        '<h2>Groups</h2><ul><li><a href="#b&lt;1-l&amp;2">b&lt;1 / l&amp;2</a> (skipped)</li>'
        '<li><a href="#inline-solving">Inline solving</a></li><li><a href="#text-probes">'
        "Surface-feature probes</a></li></ul>",
        '<p class="warn">2 warning(s); see each group and summary.json.</p>',
    ]
    assert body[5] == '<h2 id="b&lt;1-l&amp;2">b&lt;1 / l&amp;2</h2>'
    assert body[-2:] == [
        '<h2 id="inline-solving">Inline solving</h2><p class="warn">Not shown: not run.</p>',
        '<h2 id="text-probes">Surface-feature probes</h2><p class="warn">Not shown: not run.</p>',
    ]
    assert "<style>" + rp._CSS + "</style>" in text
    # defaults: no inputs, no warnings, the default title, findings escaped
    summary = {"results": {}, "warnings": []}
    result = SimpleNamespace(summary=summary, groups={}, tables={})
    text = rp.render_report(result)
    assert "<title>metacog-eval report</title>" in text and "<h1>metacog-eval report</h1>" in text
    assert ('<p class="muted">None records, 0 models, inputs: (in memory); permutations None, '
            "joint draws None, seed None.</p>") in text  # fmt: skip
    assert "warning(s)" not in text


def test_write_report(tmp_path) -> None:
    result = SimpleNamespace(summary={}, groups={}, tables={})
    path = rp.write_report(result, tmp_path / "new")
    assert path == tmp_path / "new" / "report.html"
    assert path.read_text(encoding="utf-8") == rp.render_report(result)


# ---------------------------------------------------------------------------------------------
# Inline solving
# ---------------------------------------------------------------------------------------------

ENTRY = {
    "status": "ok",
    "inline_share": 0.1234,
    "pair_types": [
        {"pair_type": "R-NR", "n_pairs": 4, "mean_tau_with": 0.3, "mean_tau_without": 0.1,
         "fdr_share_with": 0.25, "fdr_share_without": NAN, "mean_items_without": 12.34,
         "median_tau_with": 0.28, "other": 5},
        {"pair_type": "NR-NR", "n_pairs": 2, "mean_tau_with": 0.2, "mean_tau_without": NAN,
         "fdr_share_with": 0.5, "fdr_share_without": 0.0, "mean_items_without": 3.0,
         "median_tau_with": 0.2, "other": 6},
    ],
    "rnr_tau_with_ci": [0.2, 0.4],
    "rnr_tau_drop": 0.2,
    "rnr_tau_drop_ci": [0.1, 0.3],
    "rnr_share_lost": 0.6667,
    "rnr_share_lost_ci": [0.5, 0.8],
}  # fmt: skip


def test_inline_group_text() -> None:
    assert rp._inline_group_text(ENTRY) == (
        "12.3% of this group&#x27;s (item, model) cells are inline-solved. R-NR mean tau-b: "
        "0.300 on all items (95% item bootstrap 0.200 to 0.400), 0.100 without the "
        "inline-solved items: a drop of 0.200 (95% item bootstrap 0.100 to 0.300), which is "
        "67% of the R-NR signal (95% item bootstrap 50% to 80%)."
    )
    bare = {**ENTRY, "rnr_tau_with_ci": [None, None], "rnr_tau_drop": None,
            "rnr_share_lost": None, "rnr_share_lost_reason": "R-NR tau <= 0"}  # fmt: skip
    assert rp._inline_group_text(bare) == (
        "12.3% of this group&#x27;s (item, model) cells are inline-solved. R-NR mean tau-b: "
        "0.300 on all items, 0.100 without the inline-solved items. Share of the signal lost: "
        "not given (R-NR tau &lt;= 0)."
    )
    nothing = {**bare, "rnr_tau_with_ci": None}
    del nothing["rnr_share_lost_reason"]
    assert rp._inline_group_text(nothing).endswith(
        "inline-solved items. Share of the signal lost: not given (not computed)."
    )
    no_rnr = {"inline_share": 0.5, "pair_types": [{"pair_type": "NR-NR"}]}
    assert rp._inline_group_text(no_rnr) == (  # escaped like the other path's text
        "50.0% of this group&#x27;s (item, model) cells are inline-solved. There are no R-NR pairs."
    )
    assert rp._inline_group_text({}).endswith("There are no R-NR pairs.")


def test_inline_types_table() -> None:
    (t,) = tables(rp._inline_types_table(pd.DataFrame(ENTRY["pair_types"])))
    assert t == [
        ["pair type", "pairs", "mean tau-b, all items", "mean tau-b, without inline",
         "median, all", "items kept (mean)", "pairs significant (BH), all",
         "pairs significant (BH), without"],
        ["R-NR", "4", "0.300", "0.100", "0.280", "12.3", "25%", "n/a"],
        ["NR-NR", "2", "0.200", "n/a", "0.200", "3.0", "50%", "0%"],
    ]  # fmt: skip


def test_inline_pairs_figure() -> None:
    types = pd.DataFrame(ENTRY["pair_types"])
    fig = rp._inline_pairs_figure(types, "b / l: pair types")
    assert (fig.panel_width, fig.plot_height) == (560.0, 260.0)
    (ax,) = fig.axes
    with_, without, zero, na = ax.artists
    assert with_.label == "all items" and without.label == "without inline-solved items"
    np.testing.assert_allclose(with_.x, [-0.2, 0.8])
    np.testing.assert_allclose(without.x, [0.2, 1.2])
    np.testing.assert_array_equal(with_.heights, [0.3, 0.2])
    np.testing.assert_array_equal(without.heights, [0.1, NAN])
    assert with_.width == 0.4 and without.width == 0.4
    assert with_.color == "#1f77b4" and without.color == rp.grey(0.65)
    assert (zero.value, zero.color, zero.lw) == (0, rp.grey(0.3), 0.8)
    assert (na.x, na.y, na.s, na.valign, na.size) == (1.2, 0, "n/a", "bottom", 10)
    assert ax.xcat.labels == ["R-NR\n(4 pairs)", "NR-NR\n(2 pairs)"]
    assert ax.xlim == (-0.6, 1.6)
    assert (ax.ylabel, ax.title) == ("mean pairwise tau-b (dconf vs dperf)", "b / l: pair types")
    assert ax.legend_spec is not None
    assert rp._inline_pairs_figure(pd.DataFrame(), "x") is None
    assert rp._inline_pairs_figure(None, "x") is None


def test_inline_rates_figure() -> None:
    rates = pd.DataFrame({
        "model": ["m2", "m2", "m1", "m1"], "benchmark": ["b", "a", "b", "a"],
        "inline_rate": [0.1, 0.2, 0.3, 0.4],
        # as inline_rates() builds it: the flags are Python objects
        "reasoning": pd.Series([True, True, False, False], dtype=object),
    })  # fmt: skip
    fig = rp._inline_rates_figure(rates)
    (ax,) = fig.axes
    assert ax.ycat.labels == ["m2 (R)", "m1"]
    assert ax.xcat.labels == ["b", "a"] and ax.xcat.rotation == 30
    (heat,) = ax.artists
    np.testing.assert_array_equal(heat.values, [[0.1, 0.2], [0.3, 0.4]])
    assert (heat.vmin, heat.vmax, heat.annotate, heat.cmap) == (0.0, 1.0, "{:.0%}", rp.PURPLES)
    assert not ax.equal
    assert fig.panel_width == max(620.0, 110.0 * 2 + 420.0)
    assert fig.plot_height == 200.0
    assert ax.title == ("Share of each model's rationales flagged as inline solving\n(R): "
                        "reasoning model")  # fmt: skip
    as_bools = rp._inline_rates_figure(rates.assign(reasoning=[True, True, False, False]))
    assert as_bools.axes[0].ycat.labels == ["m2 (R)", "m1"]  # a NumPy bool column marks too
    no_flag = rp._inline_rates_figure(rates.drop(columns="reasoning"))
    assert no_flag.axes[0].ycat.labels == ["m2", "m1"]
    assert rp._inline_rates_figure(pd.DataFrame()) is None
    assert rp._inline_rates_figure(None) is None
    wide = pd.DataFrame({"model": "m", "benchmark": [f"b{i}" for i in range(9)],
                         "inline_rate": 0.5})  # fmt: skip
    assert rp._inline_rates_figure(wide).panel_width == min(1100.0, 110.0 * 9 + 420.0)
    assert rp._inline_rates_figure(wide).axes[0].ycat.size == 11.0


def test_inline_html() -> None:
    assert rp._inline_html({}, {}) == (
        '<h2 id="inline-solving">Inline solving</h2><p class="warn">Not shown: not run.</p>'
    )
    off = {"inline_solving": {"status": "skipped", "reason": "no <rationales>"}}
    assert rp._inline_html(off, {}) == (
        '<h2 id="inline-solving">Inline solving</h2><p class="warn">Not shown: no '
        "&lt;rationales&gt;.</p>"
    )
    summary = {"inline_solving": {
        "status": "ok", "n_inline": 3, "n_texts": 40,
        "groups": {"b<": {
            "bad": {"status": "failed", "reason": "few <pairs>"},
            "none": {"status": "ok", "inline_share": 0.0},
            "some": ENTRY,
            "empty": {**ENTRY, "pair_types": []},
        }},
    }}  # fmt: skip
    text = rp._inline_html(summary, {})
    parts = _blocks(text)
    assert parts[0] == '<h2 id="inline-solving">Inline solving</h2>'
    assert parts[1].startswith("<p>3 of 40 probe rationales are flagged as inline solving: ")
    assert parts[2].startswith('<p class="muted">How to read it: ')
    assert parts[3] == ('<h3>b&lt; / bad</h3><p class="warn">Pair types not shown: few '
                        "&lt;pairs&gt;.</p>")  # fmt: skip
    assert parts[4] == ("<h3>b&lt; / none</h3><p>No rationale of this group is flagged: "
                        "without inline-solved items the pairwise analysis is the one in the "
                        "group's own section.</p>")  # fmt: skip
    assert parts[5] == f"<h3>b&lt; / some</h3><p>{rp._inline_group_text(ENTRY)}</p>"
    assert (
        parts[6].startswith("<svg")
        and "<title>pair types with and without inline items</title>" in parts[6]
    )
    assert parts[7].startswith("<table")
    assert parts[8].startswith("<h3>b&lt; / empty</h3><p>12.3% of this")
    assert len(parts) == 9  # no figure and no table for a group without pair types
    assert len(tables(text)) == 1
    rates = pd.DataFrame({"model": ["m"], "benchmark": ["b"], "inline_rate": [0.5]})
    text = rp._inline_html(summary, {"inline_rates": rates})
    assert "<title>inline-solving rates</title>" in _blocks(text)[3]
    missing_reason = {"inline_solving": {"status": "ok", "groups": {"b": {"l": {}}}}}
    assert ('<h3>b / l</h3><p class="warn">Pair types not shown: .</p>'
            in rp._inline_html(missing_reason, {}))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Surface-feature probes
# ---------------------------------------------------------------------------------------------


def _probe_table_df():
    rows = []
    vals = {"internal": [0.7, 0.6, NAN], "pop": [0.65, 0.6, 0.8], "Q": [NAN] * 3,
            "M": [0.8, 0.5, 0.6], "P": [0.55, 0.5, 0.45], "QM": [0.6, 0.6, 0.6],
            "QP": [NAN] * 3, "QMP": [0.75, 0.55, 0.7]}  # fmt: skip
    for i, (m, r, n) in enumerate((("m1", True, 10), ("m2", False, 11), ("m3", None, 13))):
        row = {"benchmark": "b", "label": "l", "model": m, "reasoning": r, "n_items": n}
        for s, v in vals.items():
            row[f"auroc_{s}"] = v[i]
            row[f"auroc_{s}_low"] = v[i] - 0.1
            row[f"auroc_{s}_high"] = v[i] + 0.1
        rows.append(row)
    return pd.DataFrame(rows)


def test_probe_group_text() -> None:
    t = _probe_table_df()
    assert rp._probe_group_text(t, ["M", "P"]) == (
        "Median AUROC over 3 model(s): Internal 0.650, Pop 0.650, M 0.600, P 0.500, QM 0.600, "
        "QMP 0.700. Above the model&#x27;s own Internal AUROC: Pop for 0 of 2; M for 1 of 2."
    )
    assert rp._probe_group_text(t, ["QMP"]).endswith(
        "Above the model&#x27;s own Internal AUROC: Pop for 0 of 2; QMP for 1 of 2."
    )
    no_own = t.assign(auroc_internal=NAN)
    assert rp._probe_group_text(no_own, ["M"]) == (
        "Median AUROC over 3 model(s): Pop 0.650, M 0.600, P 0.500, QM 0.600, QMP 0.700."
    )


def test_probe_table() -> None:
    (t,) = tables(rp._probe_table(_probe_table_df()))
    assert t == [
        ["model", "items", "Internal", "Pop", "M", "P", "QM", "QMP"],
        ["m1 (R)", "10", "0.700", "0.650", "0.800", "0.550", "0.600", "0.750"],
        ["m2", "11", "0.600", "0.600", "0.500", "0.500", "0.600", "0.550"],
        ["m3", "13", "–", "0.800", "0.600", "0.450", "0.600", "0.700"],
        ["median", "11", "0.650", "0.650", "0.600", "0.500", "0.600", "0.700"],
    ]
    even = _probe_table_df().iloc[:2]
    (t,) = tables(rp._probe_table(even.drop(columns="auroc_QM")))
    assert t[0] == ["model", "items", "Internal", "Pop", "M", "P", "QMP"]
    assert t[-1][:2] == ["median", "10"]  # median of 10 and 11 is 10.5, shown without decimals


def test_probe_figure() -> None:
    t = _probe_table_df()
    fig = rp._probe_figure(t, "b / l")
    assert fig.plot_height == 300.0
    ax1, ax2 = fig.axes
    named = [a for a in ax1.artists if a.label is not None]
    assert [a.label for a in named] == ["Internal", "Pop", "M", "QMP"]
    for art, c in zip(named, ("internal", "pop", "M", "QMP"), strict=True):
        assert art.color == rp._PROBE_COLORS[c]
    assert ax1.ycat.labels == ["m1 (R)", "m2", "m3"]
    assert ax1.ylim == (-0.6, 2.6) and ax1.invert_y
    assert ax1.title == "b / l" and ax1.xlabel == "AUROC for correctness (95% item bootstrap)"
    assert ax1.legend_spec.loc == "below"
    assert ax2.xcat.labels == ["Internal", "Pop", "M", "P", "QM", "QMP"]
    assert ax2.xcat.positions == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert ax2.xlim == (0.5, 6.5)
    assert ax2.title == "Own confidence, population and text probes"
    assert ax2.ylabel == "AUROC for correctness, one point per model"
    assert rp._probe_figure(t.iloc[:0], "x") is None


def test_probe_figure_offsets_points_per_set() -> None:
    t = _probe_table_df().iloc[:1]
    ax1 = rp._probe_figure(t, "x").axes[0]
    named = [a for a in ax1.artists if a.label is not None]
    # four sets centred on the row: offsets -0.27, -0.09, 0.09, 0.27
    assert [round(float(np.ravel(a.y)[0]), 6) for a in named] == [-0.27, -0.09, 0.09, 0.27]
    np.testing.assert_allclose(np.ravel(named[0].x), [0.7])


def test_probes_html() -> None:
    assert rp._probes_html({}, {}) == (
        '<h2 id="text-probes">Surface-feature probes</h2><p class="warn">Not shown: not run.</p>'
    )
    assert rp._probes_html({"text_probes": {"status": "x", "reason": "r"}}, {}).endswith(
        "Not shown: r.</p>"
    )
    sec = {"status": "ok", "folds": 5, "missing": {"P": "no <traces>", "Q": "x"},
           "notes": ["few & far"], "sets": ["M"]}  # fmt: skip
    parts = _blocks(rp._probes_html({"text_probes": sec}, {}))
    assert parts[0] == '<h2 id="text-probes">Surface-feature probes</h2>'
    assert "cross-validated (5 folds grouped by item" in parts[1]
    assert parts[2].startswith('<p class="muted">How to read it: 0.5 is chance.')
    assert parts[3] == '<p class="warn">Not run: P (no &lt;traces&gt;); Q (x).</p>'
    assert parts[4] == '<p class="warn">few &amp; far.</p>'
    assert parts[5] == '<p class="warn">No group had enough graded items.</p>'
    assert len(parts) == 6
    t = _probe_table_df()
    t2 = t.assign(benchmark="c<", label="k")
    parts = _blocks(rp._probes_html({"text_probes": {"status": "ok", "folds": 3}},
                                    {"text_probes": pd.concat([t, t2])}))  # fmt: skip
    assert len(parts) == 3 + 8
    assert parts[3] == "<h3>b / l</h3>"
    assert parts[4] == f"<p>{rp._probe_group_text(t, [])}</p>"
    assert "<title>text probe AUROCs</title>" in parts[5]
    assert parts[6].startswith("<table")
    assert parts[7] == "<h3>c&lt; / k</h3>"
    assert "QMP for" not in parts[4] and "M for" not in parts[4]
    empty = rp._probes_html({"text_probes": {"status": "ok"}}, {"text_probes": t.iloc[:0]})
    assert empty.endswith('<p class="warn">No group had enough graded items.</p>')


# ---------------------------------------------------------------------------------------------
# RLMF evaluation
# ---------------------------------------------------------------------------------------------


def _rlmf_summary():
    bins = {
        "reliability": [{"n": 10, "confidence": 0.2, "accuracy": 0.3},
                        {"n": 40, "confidence": 0.8, "accuracy": 0.7}],
        "faithfulness": [],
    }  # fmt: skip
    return {
        "probe": "yes<no",
        "inputs": ["a", "b"],
        "baseline_inputs": ["c"],
        "runs": {
            "after": {"model": "m<1", "n_items": 100, "n_attempts": 300, "n_items_sampled": 80,
                      "metrics": {"accuracy": 0.6, "ece": 0.1, "auroc": 0.7}, "bins": bins},
            "baseline": {"model": "m0", "n_items": 90, "n_attempts": 200, "n_items_sampled": 0,
                         "metrics": {"accuracy": 0.5, "ece": 0.12}},
        },
        "comparison": {
            "n_items": 85,
            "accuracy": {"difference": 0.1, "ci_low": 0.05, "ci_high": 0.15, "better": True},
            "ece": {"difference": -0.02, "ci_low": -0.05, "ci_high": 0.01, "worse": True},
            "auroc": {"difference": 0.0, "ci_low": None, "ci_high": 0.1},
        },
        "n_bootstrap": 1000,
        "notes": ["note <1>", 2],
    }  # fmt: skip


def test_rlmf_section() -> None:
    text = rp.rlmf_eval_section(_rlmf_summary())
    parts = _blocks(text)
    assert parts[0] == '<h2 id="rlmf-eval">RLMF evaluation: factual and faithful calibration</h2>'
    assert parts[1].startswith('<p class="muted">Stated confidence: the verbal confidence of '
                               "the yes&lt;no probe. Factual calibration")  # fmt: skip
    assert parts[2] == (
        "<ul><li>after: m&lt;1, 100 items, 300 answers, 80 items with sampled answers</li>"
        "<li>baseline: m0, 90 items, 200 answers, 0 items with sampled answers</li></ul>"
    )
    assert parts[3] == (
        '<p class="muted">Differences are after minus baseline on the 85 items both graded, '
        "with percentile intervals from 1000 paired bootstrap resamples of items.</p>"
    )
    (t,) = tables(text)
    assert t == [
        ["metric", "better", "after", "baseline", "difference (paired)", "95% interval",
         "verdict"],
        ["accuracy", "higher", "0.600", "0.500", "0.100", "[0.050, 0.150]", "better"],
        ["ECE", "lower", "0.100", "0.120", "-0.020", "[-0.050, 0.010]", "worse"],
        ["Brier", "lower", "–", "–", "–", "–", "–"],
        ["AUROC", "higher", "0.700", "–", "0.000", "[n/a, 0.100]", "–"],
        ["MFG", "higher", "–", "–", "–", "–", "–"],
        ["cMFG", "higher", "–", "–", "–", "–", "–"],
        ["cMFG*", "higher", "–", "–", "–", "–", "–"],
    ]  # fmt: skip
    assert "<title>reliability and faithfulness diagrams</title>" in parts[5]
    assert parts[6:] == ['<p class="warn">note &lt;1&gt;</p>', '<p class="warn">2</p>']


def test_rlmf_section_without_comparison_or_bins() -> None:
    s = _rlmf_summary()
    del s["comparison"], s["notes"], s["runs"]["baseline"]
    del s["runs"]["after"]["bins"]
    text = rp.rlmf_eval_section(s)
    (t,) = tables(text)
    assert t[0] == ["metric", "better", "after"]
    assert t[1] == ["accuracy", "higher", "0.600"]
    assert "Differences are" not in text and "<svg" not in text and "warn" not in text
    assert len(_blocks(text)) == 4
    empty = rp.rlmf_eval_section({})
    assert "the None probe" in empty and "<ul></ul>" in empty
    (t,) = tables(empty)
    assert t[0] == ["metric", "better"] and len(t) == 8


def test_rlmf_figure() -> None:
    s = _rlmf_summary()
    fig = rp._rlmf_figure(s["runs"])
    assert (fig.panel_width, fig.plot_height) == (480.0, 320.0)
    ax1, ax2 = fig.axes
    for ax in (ax1, ax2):
        assert ax.xlim == (0.0, 1.0) and ax.ylim == (0.0, 1.0)
        diag = ax.artists[0]
        np.testing.assert_array_equal(diag.x, [0, 1])
        np.testing.assert_array_equal(diag.y, [0, 1])
        assert (diag.color, diag.lw, diag.ls) == ("#bbbbbb", 1, "--")
    _, line, dots = ax1.artists
    np.testing.assert_array_equal(line.x, [0.2, 0.8])
    np.testing.assert_array_equal(line.y, [0.3, 0.7])
    assert line.color == "#1f77b4" and line.alpha == 0.6 and line.label is None
    assert dots.label == "after: m<1" and dots.tips == ["10 items", "40 items"]
    np.testing.assert_allclose(dots.radius, [rp.marker_radius(20 + 180 * 10 / 40),
                                             rp.marker_radius(200)])  # fmt: skip
    assert (ax1.xlabel, ax1.ylabel, ax1.title) == (
        "stated confidence (bin mean)",
        "accuracy",
        "factual calibration",
    )
    assert (ax2.xlabel, ax2.ylabel, ax2.title) == (
        "intrinsic confidence: agreement of sampled answers", "stated confidence (bin mean)",
        "faithful calibration",
    )  # fmt: skip
    assert ax1.legend_spec is not None and ax2.legend_spec is None
    note = ax2.artists[-1]
    assert (note.x, note.y, note.s, note.color) == (0.5, 0.5, "no item with two sampled "
                                                    "answers", "#8a5a00")  # fmt: skip
    # faithfulness bins: drawn with intrinsic on x, no note; baseline grey, unknown side black
    s["runs"]["after"]["bins"]["faithfulness"] = [{"n": 5, "intrinsic": 0.4, "confidence": 0.5}]
    s["runs"]["baseline"]["bins"] = {"reliability": [{"n": 5, "confidence": 0.1,
                                                      "accuracy": 0.2}]}  # fmt: skip
    s["runs"]["other"] = {"model": "z", "bins": {"reliability": [{"n": 1, "confidence": 0.5,
                                                                  "accuracy": 0.5}]}}  # fmt: skip
    ax1, ax2 = rp._rlmf_figure(s["runs"]).axes
    _, line, dots = ax2.artists
    np.testing.assert_array_equal(line.x, [0.4])
    np.testing.assert_array_equal(line.y, [0.5])
    assert dots.radius == [rp.marker_radius(200)]
    assert [a.color for a in ax1.artists[1:]] == ["#1f77b4"] * 2 + ["#7f7f7f"] * 2 + ["#000000"] * 2
    assert labels(ax1)[1:] == [None, "after: m<1", None, "baseline: m0", None, "other: z"]
    assert rp._rlmf_figure({"after": {"bins": {"reliability": []}}}) is None
    assert rp._rlmf_figure({"after": {}}) is None


def test_render_rlmf_report() -> None:
    text = rp.render_rlmf_eval_report(_rlmf_summary(), title="T<")
    assert text.startswith(
        '<!doctype html><html><head><meta charset="utf-8"><title>T&lt;'
        "</title><style>" + rp._CSS + "</style></head><body><h1>T&lt;</h1>"
        '<p class="muted">inputs: a, b; baseline: c</p><h2 id="rlmf-eval">'
    )
    assert text.endswith("</body></html>")
    s = _rlmf_summary()
    del s["inputs"], s["baseline_inputs"]
    text = rp.render_rlmf_eval_report(s)
    assert "<title>RLMF evaluation</title>" in text
    assert '<p class="muted">inputs: (in memory)</p>' in text


def test_escape_module_is_the_stdlib() -> None:
    assert htmllib.escape("'") == "&#x27;"  # the apostrophes above are escaped this way


def test_null_figure_histograms_have_forty_bins_of_the_draws() -> None:
    draws = np.linspace(-0.2, 0.2, 101)
    nulls = {"base_rate": _null(draws, 0.01), "calibration_preserving": _null(draws + 1, 0.02)}
    g = SimpleNamespace(pairwise=_pairwise(nulls=nulls), private_signal=_null(draws, 0.3))
    ax1, _ = rp._null_figure(g).axes
    h1, h2, h3, _ = ax1.artists
    for h, lo in ((h1, -0.2), (h2, 0.8), (h3, -0.2)):
        assert len(h.edges) == 41 and h.alpha == 0.55
        assert h.edges[0] == pytest.approx(lo) and h.edges[-1] == pytest.approx(lo + 0.4)
        assert h.counts.sum() == 101
    assert h2.color == "#ff7f0e" and h2.label == "calibration-preserving null (p = 0.02)"


def test_probe_figure_error_bars_and_boxes() -> None:
    t = _probe_table_df()
    ax1, ax2 = rp._probe_figure(t, "x").axes
    bars = [a for a in ax1.artists if a.label is None and hasattr(a, "seg")]
    assert len(bars) == 4
    # Internal: three rows at y - 0.27; m3 has no Internal AUROC
    np.testing.assert_allclose(bars[0].seg[:2], [[0.6, -0.27, 0.8, -0.27], [0.5, 0.73, 0.7, 0.73]])
    np.testing.assert_allclose(bars[3].seg[:, 1], [0.27, 1.27, 2.27])
    np.testing.assert_allclose(bars[3].seg[:, 0], [0.65, 0.45, 0.6])
    np.testing.assert_allclose(bars[3].seg[:, 2], [0.85, 0.65, 0.8])
    assert [b.color for b in bars] == [rp._PROBE_COLORS[c] for c in ("internal", "pop", "M",
                                                                     "QMP")]  # fmt: skip
    ref = [a for a in ax1.artists if hasattr(a, "vertical")]
    assert [(r.value, r.vertical, r.ls, r.lw, r.color) for r in ref] == [
        (0.5, True, ":", 0.8, rp.grey(0.6))
    ]
    boxes = [a for a in ax2.artists if hasattr(a, "med")]
    assert [b.x for b in boxes] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert [b.med for b in boxes] == pytest.approx([0.65, 0.65, 0.6, 0.5, 0.6, 0.7])
    assert [b.color for b in boxes] == [
        rp._PROBE_COLORS[c] for c in ("internal", "pop", "M", "P", "QM", "QMP")
    ]
    assert all(b.alpha == 0.6 for b in boxes)
    ref = [a for a in ax2.artists if hasattr(a, "vertical")]
    assert [(r.value, r.vertical, r.ls, r.lw, r.color) for r in ref] == [
        (0.5, False, ":", 0.8, rp.grey(0.6))
    ]
    assert rp._PROBE_COLORS == {
        "internal": "#1f77b4", "pop": "#ff7f0e", "Q": "#8c564b", "M": "#2ca02c",
        "P": "#9467bd", "QM": "#17becf", "QP": "#bcbd22", "QMP": "#d62728",
    }  # fmt: skip


def test_probe_figure_drops_sets_without_values() -> None:
    t = _probe_table_df().assign(auroc_pop=NAN, auroc_QMP=NAN)
    ax1, ax2 = rp._probe_figure(t, "x").axes
    assert [a.label for a in ax1.artists if a.label] == ["Internal", "M"]
    named = [a for a in ax1.artists if a.label]
    assert [round(float(np.ravel(a.y)[0]), 6) for a in named] == [-0.09, 0.09]
    assert ax2.xcat.labels == ["Internal", "M", "P", "QM"]
    assert fig_height(rp._probe_figure(_many_probe_rows(30), "x")) == 13 * 30 + 16


def fig_height(fig) -> float:
    return fig.plot_height


def _many_probe_rows(n):
    t = _probe_table_df()
    return pd.concat([t.iloc[:1].assign(model=f"m{i}") for i in range(n)], ignore_index=True)


def test_inline_pairs_figure_marks_only_missing_bars() -> None:
    types = pd.DataFrame(ENTRY["pair_types"])
    (ax,) = rp._inline_pairs_figure(types, "t").axes
    texts = [a for a in ax.artists if hasattr(a, "s")]
    assert len(texts) == 1 and texts[0].color == rp.grey(0.4)
    full = types.assign(mean_tau_without=[0.1, 0.0])
    (ax,) = rp._inline_pairs_figure(full, "t").axes
    assert not [a for a in ax.artists if hasattr(a, "s")]


def _named(names, tau=None):
    sec = _eigen_section(names=names)
    n = len(names)
    sec.tetrachoric.tau = list(np.linspace(-1, 1, n)) if tau is None else tau
    sec.tetrachoric.rho = np.eye(n)
    return sec


def test_heatmap_stacks_one_pixel_past_the_room_for_the_names() -> None:
    # 25 models of 10 px need 25 * 1.15 * 10 = 287.5 px: side by side while the widest name
    # leaves that much of 540 - 110 = 430 px, i.e. up to 142.5 px of name
    wide = [f"mm{'i' * 31}{i:02d}" for i in range(25)]
    narrow = [f"{'i' * 36}{i:02d}" for i in range(25)]
    assert 142.5 < rp.text_width(wide[0], 10.0) <= 143.5
    assert 141.5 < rp.text_width(narrow[0], 10.0) <= 142.5
    fig = rp._heatmap_figure(SimpleNamespace(confidence=_named(wide), correctness=None))
    assert isinstance(fig, rp.FigureStack)
    fig = rp._heatmap_figure(SimpleNamespace(confidence=_named(narrow), correctness=None))
    assert isinstance(fig, rp.Figure)


def test_heatmap_of_two_models_with_long_names() -> None:
    long2 = ["x" * 70 + "1", "x" * 70 + "2"]  # 2 * 11.5 = 23 px of names: but 434 px wide
    fig = rp._heatmap_figure(SimpleNamespace(confidence=_named(long2), correctness=_named(long2)))
    assert isinstance(fig, rp.FigureStack) and len(fig.figures) == 2
    assert fig.figures[0].plot_height == 360.0
    label = rp.text_width(long2[0], 10.0)
    assert fig.figures[0].panel_width == pytest.approx(min(1080.0, label + 360.0 + 140.0))
    assert fig.axes[0].xcat.labels == long2 and fig.axes[1].xcat.labels == long2
    huge = ["x" * 120 + "1", "x" * 120 + "2"]
    fig = rp._heatmap_figure(SimpleNamespace(confidence=_named(huge), correctness=None))
    assert fig.figures[0].panel_width == 1080.0
    # exactly two models: a matrix; one: none
    two = _named(["a", "b"])
    fig = rp._heatmap_figure(SimpleNamespace(confidence=two, correctness=two))
    assert isinstance(fig, rp.Figure) and [ax.visible for ax in fig.axes] == [True, True]
    assert rp._heatmap_figure(SimpleNamespace(confidence=_named(["a"]), correctness=two)) is None


def test_calibration_figure_reference_line_and_int_mask() -> None:
    al = SimpleNamespace(
        contentious_mask=[1, 0, 0, 1],  # 0/1 flags read as booleans
        all=SimpleNamespace(confidence_scores=np.array([1.0, 2.0, 3.0, 4.0]),
                            correctness_scores=np.array([10.0, 20.0, 30.0, 40.0]), r=0.5),
        contentious=SimpleNamespace(r=0.3),
    )  # fmt: skip
    g = SimpleNamespace(calibration=SimpleNamespace(per_model=_per_model(m1=(0.7, 0.6),
                                                                         m2=(0.5, 0.4))),
                        alignment=al)  # fmt: skip
    ax1, ax2 = rp._calibration_figure(g).axes
    _, own, pop, ref = ax1.artists
    np.testing.assert_array_equal(own.y, [0.0, 1.0])
    np.testing.assert_array_equal(pop.y, [0.0, 1.0])
    assert (ref.value, ref.vertical, ref.ls, ref.lw, ref.color) == (0.5, True, ":", 0.8,
                                                                    rp.grey(0.6))  # fmt: skip
    rest, cont = ax2.artists
    np.testing.assert_array_equal(cont.x, [10.0, 40.0])
    np.testing.assert_array_equal(rest.x, [20.0, 30.0])


def test_null_figure_zero_line() -> None:
    g = SimpleNamespace(pairwise=_pairwise(), private_signal=None)
    _, ax2 = rp._null_figure(g).axes
    zero = ax2.artists[-1]
    assert (zero.value, zero.vertical, zero.ls, zero.lw, zero.color) == (0, False, ":", 0.8,
                                                                         rp.grey(0.6))  # fmt: skip


def test_group_html_per_model_columns_in_order() -> None:
    cols = ["n_items", "accuracy", "yes_rate", "auroc_internal", "auroc_pop", "auroc_diff",
            "brier", "ece", "aurc", "n_unparseable"]  # fmt: skip
    row = {c: 0.125 * (k + 1) for k, c in enumerate(reversed(cols))}
    row["other"] = 9.0
    text = rp._group_html(_ga(skipped="s"), {"per_model": {"m1": row}})
    blocks = _blocks(text)
    assert blocks[3].startswith('<h3>Per model</h3><table class="dataframe">')
    (t,) = tables(text)
    assert t[0] == ["model", *cols]
    assert t[1] == ["m1", *[f"{0.125 * (10 - k):.3f}" for k in range(10)]]


def test_group_html_heads_are_exact() -> None:
    cov = pd.DataFrame({"model": ["m1"], "n_items": [3], "share": [1.0], "included": [True],
                        "reason": [""]})  # fmt: skip
    pw = _pairwise()
    pw.pair_types = {"R-R": SimpleNamespace(n_pairs=1, mean_tau=0.5, p_value={})}
    text = rp._group_html(_ga(skipped="s", coverage=cov, pairwise=pw), {"n_items": 3})
    blocks = _blocks(text)
    assert blocks[3].startswith('<h3>Item coverage</h3><p class="muted">Items of the group')
    assert blocks[4].startswith("<h3>By reasoning pair type</h3><table")


def test_inline_group_text_shows_an_interval_with_its_lower_end() -> None:
    entry = {**ENTRY, "rnr_tau_with_ci": [0.2, None]}
    assert "0.300 on all items (95% item bootstrap 0.200 to n/a), 0.100" in (
        rp._inline_group_text(entry)
    )
    entry = {**ENTRY, "rnr_tau_with_ci": [None, 0.4]}
    assert "0.300 on all items, 0.100" in rp._inline_group_text(entry)


INLINE_ABOUT = (
    "<p>3 of 40 probe rationales are flagged as inline solving: they work the item out "
    "(arithmetic, equations, code, a derivation or an answer reached in words) instead of "
    "judging whether the model can answer it. A model that solves the item inside its "
    "confidence rationale reports what it found, not what it knows about itself, and that "
    "alone makes its confidence track its correctness.</p>"
)
INLINE_HOW = (
    '<p class="muted">How to read it: for each group the pairwise analysis (Kendall tau-b of '
    "dconf against dperf over items, per model pair) is repeated on the items neither model of "
    "a pair solved inline, by pair type (R: reasoning model, NR: not). If the calibration "
    "between reasoning and non-reasoning models comes from inline solving, the grey bars of "
    "R-NR (and R-R) fall to about 0 while NR-NR does not move. The detector finds solving "
    "written in symbols and about half of the solving written out in prose "
    "(docs/text_analyses.md).</p>"
)
PROBES_ABOUT = (
    "<p>How much of a model's correctness can be read off the plain wording? An L2 logistic "
    "regression on about 40 lexical features (hedges, negations, causal words, self-correction "
    "such as wait/actually/hmm, difficulty words, lengths and counts) of the question (Q), of "
    "the probe rationale without its verdict (M) and of the solve trace (P) predicts "
    "correctness, cross-validated (5 folds grouped by item: no item is in two folds). Beside "
    "it: Internal, the model's own confidence, and Pop, the other models' mean confidence on "
    "the item.</p>"
)
PROBES_HOW = (
    '<p class="muted">How to read it: 0.5 is chance. A probe level with Internal means the '
    "wording carries as much about correctness as the model's own verdict; Pop above Internal "
    "means the other models' confidence predicts this model's correctness better than its own "
    "does (shared difficulty, not self-knowledge). Each AUROC's 95% item-bootstrap interval is "
    "in tables/text_probes.csv.</p>"
)
RLMF_ABOUT = (
    '<p class="muted">Stated confidence: the verbal confidence of the yes&lt;no probe. '
    "Factual calibration compares it with correctness (ECE over 10 equal-width bins, Brier, "
    "AUROC); faithful calibration with the intrinsic confidence, the share of the item's "
    "sampled answers that agree with the answer (MFG: mean of 1 - |stated - intrinsic|; cMFG: "
    "its mean over 10 bins of intrinsic confidence, bins with answers only; cMFG*: equal-mass "
    "bins weighted by width).</p>"
)


def test_reading_guides_word_for_word() -> None:
    summary = {"inline_solving": {"status": "ok", "n_inline": 3, "n_texts": 40}}
    assert _blocks(rp._inline_html(summary, {}))[1:3] == [INLINE_ABOUT, INLINE_HOW]
    blocks = _blocks(rp._probes_html({"text_probes": {"status": "ok", "folds": 5}}, {}))
    assert blocks[1:3] == [PROBES_ABOUT, PROBES_HOW]
    assert _blocks(rp.rlmf_eval_section(_rlmf_summary()))[1] == RLMF_ABOUT


def test_inline_html_titles_each_groups_figure() -> None:
    summary = {"inline_solving": {"status": "ok", "groups": {"b<": {"some": ENTRY}}}}
    (svg,) = [b for b in _blocks(rp._inline_html(summary, {})) if b.startswith("<svg")]
    assert ">b&lt; / some: pair types</text>" in svg


def test_inline_rates_figure_sizes() -> None:
    one = pd.DataFrame({"model": [f"m{i}" for i in range(30)], "benchmark": "b",
                        "inline_rate": 0.5})  # fmt: skip
    fig = rp._inline_rates_figure(one)
    assert fig.panel_width == 620.0  # 110 + 420 = 530 is below the minimum
    assert fig.axes[0].ycat.size == 9.0
    assert fig.plot_height == 13 * 30 + 16


def test_probes_html_groups_in_table_order_with_their_sets() -> None:
    t = _probe_table_df()
    first = t.assign(benchmark="c", label="k")
    table = pd.concat([first, t])
    sec = {"status": "ok", "folds": 3, "sets": ["M", "QMP"]}
    blocks = _blocks(rp._probes_html({"text_probes": sec}, {"text_probes": table}))
    assert blocks[3] == "<h3>c / k</h3>" and blocks[7] == "<h3>b / l</h3>"
    assert blocks[4] == f"<p>{rp._probe_group_text(t, ['M', 'QMP'])}</p>"
    assert "M for 1 of 2; QMP for 1 of 2." in blocks[4]
    assert ">c / k</text>" in blocks[5] and ">b / l</text>" in blocks[9]


def test_probe_texts_take_columns_with_missing_values_as_objects() -> None:
    t = _probe_table_df()
    t["auroc_internal"] = pd.Series([0.7, 0.6, None], dtype=object)
    t["auroc_pop"] = pd.Series([0.65, None, 0.8], dtype=object)
    assert rp._probe_group_text(t, []).endswith(
        "Above the model&#x27;s own Internal AUROC: Pop for 0 of 1."
    )
    (tab,) = tables(rp._probe_table(t))
    assert tab[3][:4] == ["m3", "13", "–", "0.800"]


def test_probe_figure_many_models() -> None:
    ax1, _ = rp._probe_figure(_many_probe_rows(30), "x").axes
    assert ax1.ycat.size == 9.0


def test_range_one_number_within_a_hundredth() -> None:
    assert rp._range([0.300, 0.309]) == "0.30"


def test_subsample_tiny_sets_keep_one_point() -> None:
    a, b = rp._subsample([2, 99999])
    assert len(a) == 1 and len(b) == 3000


def test_findings_without_nulls_or_alignment_parts() -> None:
    g = _group(align={"contentious": {"n_items": 5}})
    del g["pairwise"]["nulls"]
    out = rp.headline_findings({"results": {"b": {"l": g}}})
    assert "b/l 0.200, not tested against the base-rate-matched null (n/a, p n/a)" in out[1]
    assert out[2] == (
        "Confidence factor vs capability factor over items (b/l; basis n/a): Pearson r n/a on "
        "all items, n/a on the 5 contentious items (yes-rate and pass-rate within the bounds)."
    )
    g = _group(align={"all": {"r": 0.4}})
    out = rp.headline_findings({"results": {"b": {"l": g}}})
    assert "Pearson r 0.40 on all items, n/a on the n/a contentious items" in out[2]


def test_render_report_with_text_sections_and_several_findings() -> None:
    summary = {
        "results": {"b": {"l": {**_group(), "per_model": {}}, "m": {"per_model": {}}}},
        "inline_solving": {"status": "ok", "n_inline": 1, "n_texts": 2},
        "text_probes": {"status": "ok", "folds": 2},
    }
    rates = pd.DataFrame({"model": ["m"], "benchmark": ["b"], "inline_rate": [0.5]})
    groups = {"x": _ga(benchmark="b", label="l", skipped="s"),
              "y": _ga(benchmark="b", label="m", skipped="s")}  # fmt: skip
    result = SimpleNamespace(
        summary=summary,
        groups=groups,
        tables={"inline_rates": rates, "text_probes": _probe_table_df()},
    )
    text = rp.render_report(result)
    findings = text.split('<h2>Findings</h2><ul class="findings">')[1].split("</ul>")[0]
    assert findings.startswith("<li>Shared difficulty (b/l; ") and "</li><li>Pairwise" in findings
    assert '<a href="#b-l">b / l</a> (ok)</li><li><a href="#b-m">b / m</a> ()</li>' in text
    assert "<title>inline-solving rates</title>" in text
    assert "<title>text probe AUROCs</title>" in text


def test_rlmf_report_lists_every_baseline_input() -> None:
    s = {**_rlmf_summary(), "baseline_inputs": ["c", "d"]}
    assert '<p class="muted">inputs: a, b; baseline: c, d</p>' in rp.render_rlmf_eval_report(s)


def test_rlmf_section_shows_a_non_numeric_metric_as_missing() -> None:
    s = _rlmf_summary()
    s["runs"]["after"]["metrics"]["brier"] = "n/a"
    (t,) = tables(rp.rlmf_eval_section(s))
    assert t[3][:4] == ["Brier", "lower", "–", "–"]


def test_rlmf_figure_draws_faithfulness_of_a_run_without_reliability_bins() -> None:
    s = _rlmf_summary()
    s["runs"]["baseline"]["bins"] = {
        "reliability": [],
        "faithfulness": [{"n": 3, "intrinsic": 0.3, "confidence": 0.6}],
    }
    ax1, ax2 = rp._rlmf_figure(s["runs"]).axes
    assert labels(ax2) == [None, None, "baseline: m0"]
    assert len(ax1.artists) == 3  # the diagonal and the after run's line and points
