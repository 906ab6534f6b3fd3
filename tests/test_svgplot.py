"""The report's SVG plots: geometry checked by hand from the drawn plot box and the axis ranges,
ticks against hand-computed 1-2-5 steps, escaping, colour scales, legends and label thinning."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from metacog_metrics.svgplot import (
    PURPLES,
    RDBU_R,
    Figure,
    format_ticks,
    grey,
    nice_step,
    nice_ticks,
)

NS = "{http://www.w3.org/2000/svg}"
#: Coordinates are written to 0.1 px: a position computed from the written plot box (its x and
#: width rounded too) is exact to within three half-units.
TOL = 0.16


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def _all(root: ET.Element, tag: str, cls: str | None = None) -> list[ET.Element]:
    return [e for e in root.iter(NS + tag) if cls is None or e.get("class") == cls]


def _frame(root: ET.Element, k: int = 0) -> tuple[float, float, float, float]:
    rect = _all(root, "rect", "frame")[k]
    return tuple(float(rect.get(a)) for a in ("x", "y", "width", "height"))  # type: ignore[return-value]


def _text(e: ET.Element) -> str:
    return "".join(e.itertext())


# ---- ticks ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lo", "hi", "bins", "expected"),
    [
        # span 1 / 8 = 0.125 -> 0.2
        (0.0, 1.0, 8, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        # the scree: 14.3 / 8 = 1.79 -> 2
        (-0.7, 14.3, 8, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]),
        # a null histogram: 0.145 / 9 = 0.0161 -> 0.02
        (-0.055, 0.09, 9, [-0.04, -0.02, 0.0, 0.02, 0.04, 0.06, 0.08]),
        # 0.33 / 8 = 0.041 -> 0.05
        (0.5, 0.83, 8, [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8]),
        # 4.3 / 8 = 0.54 -> 1
        (-3.7, 0.6, 8, [-3.0, -2.0, -1.0, 0.0]),
        # 7e-4 / 7 = 1e-4 exactly: a step of 1e-4 (not 2e-4)
        (0.0, 7e-4, 7, [k * 1e-4 for k in range(8)]),
        # large counts: 830 / 5 = 166 -> 200
        (0.0, 830.0, 5, [0.0, 200.0, 400.0, 600.0, 800.0]),
    ],
)
def test_nice_ticks_are_the_hand_computed_ones(lo, hi, bins, expected) -> None:
    assert nice_ticks(lo, hi, bins) == pytest.approx(expected, abs=1e-12)


def test_nice_step_is_1_2_5_times_a_power_of_ten() -> None:
    assert nice_step(1.0, 8) == 0.2
    assert nice_step(10.0, 10) == 1.0
    assert nice_step(10.1, 10) == 2.0
    assert nice_step(0.3, 1) == 0.5
    assert nice_step(0.0, 8) == 1.0  # degenerate span


def test_tick_labels() -> None:
    assert format_ticks([-0.04, -0.02, 0.0, 0.02]) == ["\u22120.04", "\u22120.02", "0.00", "0.02"]
    assert format_ticks([0.0, 5.0, 10.0]) == ["0", "5", "10"]
    assert format_ticks([0.0, 0.2, 0.4]) == ["0.0", "0.2", "0.4"]
    assert format_ticks([-0.0]) == ["0"]


# ---- geometry ------------------------------------------------------------------------------


def test_points_land_where_the_axis_ranges_put_them() -> None:
    fig = Figure(2, panel_width=400, plot_height=200)
    a, b = fig.axes
    a.scatter([2.5, 10.0], [0.5, -1.0], color="#1f77b4")
    a.set_xlim(0, 10)
    a.set_ylim(-1, 1)
    b.scatter([2.5], [0.5], color="#d62728", marker="s", radius=3.0)
    b.set_xlim(0, 10)
    b.set_ylim(-1, 1)
    b.invert_yaxis()
    root = _parse(fig.to_svg("two panels"))
    x, y, w, h = _frame(root, 0)
    circles = _all(root, "circle")
    # (2.5, 0.5): a quarter of the way across, a quarter of the way down from the top
    assert float(circles[0].get("cx")) == pytest.approx(x + 0.25 * w, abs=TOL)
    assert float(circles[0].get("cy")) == pytest.approx(y + 0.25 * h, abs=TOL)
    # (10, -1): the lower right corner
    assert float(circles[1].get("cx")) == pytest.approx(x + w, abs=TOL)
    assert float(circles[1].get("cy")) == pytest.approx(y + h, abs=TOL)
    # second panel: to the right of the first, y inverted (-1 on top), square of side 2 r * 0.9
    x2, y2, w2, h2 = _frame(root, 1)
    assert x2 >= 400 > x + w and h2 == h
    sq = next(r for r in _all(root, "rect") if r.get("class") is None and r.get("width") == "5.4")
    cx = float(sq.get("x")) + 2.7
    cy = float(sq.get("y")) + 2.7
    assert cx == pytest.approx(x2 + 0.25 * w2, abs=TOL)
    assert cy == pytest.approx(y2 + 0.75 * h2, abs=TOL)


def test_tick_marks_and_labels_sit_at_their_values() -> None:
    fig = Figure(1, panel_width=500, plot_height=250)
    ax = fig.axes[0]
    ax.plot([0, 1], [0, 100], color="#000000")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 100)
    root = _parse(fig.to_svg("ticks"))
    x, y, w, h = _frame(root)
    xt = _all(root, "text", "xtick")
    yt = _all(root, "text", "ytick")
    # at most 9 intervals: 1 / 9 = 0.111 -> a step of 0.2
    assert [_text(t) for t in xt] == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    # 100 / 9 = 11.1 -> 20
    assert [_text(t) for t in yt] == ["0", "20", "40", "60", "80", "100"]
    for t in xt:
        assert float(t.get("x")) == pytest.approx(x + float(_text(t)) * w, abs=TOL)
    for t in yt:
        # labels are vertically centred on the tick: their anchor is 0.35 em below it
        value = float(_text(t))
        assert float(t.get("y")) - 0.35 * 11 == pytest.approx(y + h - value / 100 * h, abs=TOL)
    marks = re.findall(r"M([\d.]+) ([\d.]+)v4", _all(root, "path", "ticks")[0].get("d"))
    assert len(marks) == len(xt)
    for (mx, my), t in zip(marks, xt, strict=True):
        assert float(mx) == pytest.approx(float(t.get("x")), abs=TOL)
        assert float(my) == pytest.approx(y + h, abs=TOL)


def test_line_histogram_band_and_reference_lines() -> None:
    fig = Figure(1, panel_width=500, plot_height=300)
    ax = fig.axes[0]
    # bins [0, 1), [1, 2), [2, 3]: counts 2, 3, 1
    ax.hist([0, 0.5, 1, 1.2, 1.9, 3], bins=3, color="#7f7f7f", alpha=0.55, label="h")
    ax.fill_between([0, 3], [0.5, 0.5], [1.0, 2.0], color="#ff7f0e", label="band")
    ax.plot([0, 3], [3, 0], color="#000000", marker="o", label="line")
    ax.axhline(1.0, color=grey(0.6), ls=":")
    ax.axvline(1.5, color="#000000", lw=2, label="observed")
    ax.legend()
    root = _parse(fig.to_svg("histogram"))
    x, y, w, h = _frame(root)
    # autoscale: x 0..3 padded by 5% each side; y sticks at 0 (histogram), top 3 + 5%
    x0, x1, y1 = -0.15, 3.15, 3.15

    def px(v):
        return x + (v - x0) / (x1 - x0) * w

    def py(v):
        return y + h - v / y1 * h

    d = _all(root, "path", "hist")[0].get("d")
    nums = [float(v) for v in re.findall(r"-?[\d.]+", d)]
    # M x(0) base V top(2) H x(1) V top(3) H x(2) V top(1) H x(3) V base Z
    expected = [px(0), py(0), py(2), px(1), py(3), px(2), py(1), px(3), py(0)]
    assert nums == pytest.approx(expected, abs=TOL)
    assert _all(root, "path", "hist")[0].get("fill-opacity") == "0.55"
    band = [float(v) for v in re.findall(r"-?[\d.]+", _all(root, "path", "band")[0].get("d"))]
    assert band == pytest.approx([px(0), py(1), px(3), py(2), px(3), py(0.5), px(0), py(0.5)],
                                 abs=TOL)  # fmt: skip
    refs = _all(root, "path", "refline")
    hline = [float(v) for v in re.findall(r"-?[\d.]+", refs[0].get("d"))]
    assert hline == pytest.approx([x, py(1), x + w, py(1)], abs=TOL)
    assert "stroke-dasharray" in refs[0].attrib
    vline = [float(v) for v in re.findall(r"-?[\d.]+", refs[1].get("d"))]
    assert vline == pytest.approx([px(1.5), y, px(1.5), y + h], abs=TOL)
    entries = _all(root, "g", "legend-entry")
    assert [_text(e) for e in entries] == ["h", "band", "line", "observed"]


def test_scatter_radius_follows_matplotlib_marker_area() -> None:
    from metacog_metrics.svgplot import marker_radius

    # s = 36 points^2 is matplotlib's default marker: 6 pt across, 8 px at 96 dpi
    assert marker_radius(36) == pytest.approx(4.0)


# ---- text ----------------------------------------------------------------------------------


def test_text_is_escaped_and_round_trips() -> None:
    name = "m<1> & \"quoted\" 'single' \x07bell"
    fig = Figure(1)
    ax = fig.axes[0]
    ax.scatter([0.0], [0.0], color="#000000", label=name, tips=[name])
    ax.set_yticks([0.0], [name])
    ax.set(title=name, xlabel=name, ylabel=name)
    ax.legend()
    svg = fig.to_svg(f"alt {name}")
    root = _parse(svg)  # well-formed XML: nothing unescaped
    assert "<1>" not in svg and "\x07" not in svg
    clean = name.replace("\x07", "\ufffd")
    texts = [_text(t) for t in _all(root, "text")]
    assert texts.count(clean) >= 5  # legend, y tick, title, x label, y label
    assert _text(root.find(NS + "title")) == f"alt {clean}"
    assert _text(root.find(f".//{NS}circle/{NS}title")) == clean


def test_svg_is_an_image_with_its_alt_text() -> None:
    fig = Figure(1)
    fig.axes[0].plot([0, 1], [0, 1], color="#000000")
    root = _parse(fig.to_svg("scree and loadings"))
    assert root.get("role") == "img"
    first = next(iter(root))
    assert first.tag == NS + "title" and first.text == "scree and loadings"
    w, h = (float(v) for v in root.get("viewBox").split()[2:])
    assert float(root.get("width")) == w and float(root.get("height")) == h


def test_long_axis_labels_wrap_and_multiline_labels_keep_their_lines() -> None:
    fig = Figure(1, panel_width=300, plot_height=150)
    ax = fig.axes[0]
    ax.plot([0, 1], [0, 1], color="#000000")
    ax.set(xlabel="first line\nsecond line", ylabel="a very long y label " * 4)
    root = _parse(fig.to_svg("wrap"))
    xl = _all(root, "text", "xlabel")[0]
    assert [t.text for t in xl] == ["first line", "second line"]
    yl = _all(root, "text", "ylabel")[0]
    assert len(list(yl)) >= 2  # wrapped to the plot's height
    assert " ".join(t.text for t in yl).split() == ("a very long y label " * 4).split()


# ---- colour --------------------------------------------------------------------------------


def test_diverging_scale_ends_and_middle() -> None:
    # matplotlib's RdBu_r: ColorBrewer RdBu reversed
    assert RDBU_R(0.0) == "#053061"
    assert RDBU_R(0.5) == "#f7f7f7"
    assert RDBU_R(1.0) == "#67001f"
    assert RDBU_R(0.2) == "#4393c3"  # third of 11 stops
    assert RDBU_R(-3.0) == "#053061" and RDBU_R(7.0) == "#67001f"  # clipped
    assert PURPLES(0.0) == "#fcfbfd" and PURPLES(1.0) == "#3f007d"
    assert grey(0.6) == "#999999" and grey(0.0) == "#000000"


def _cells(root: ET.Element) -> dict[tuple[int, int], str]:
    """(row, column) -> fill of every heatmap cell, from the runs in the paths' data."""
    out = {}
    for path in root.find(f".//{NS}g[@class='heatmap']"):
        for j, i, run in re.findall(r"M(\d+) (\d+)h(\d+)", path.get("d")):
            for k in range(int(run)):
                out[(int(i), int(j) + k)] = path.get("fill")
    return out


def test_heatmap_colours_and_cell_geometry() -> None:
    fig = Figure(1, panel_width=500, plot_height=300)
    ax = fig.axes[0]
    m = np.array([[-1.0, 0.0, 1.0], [1.0, 1.0, np.nan]])
    ax.heatmap(m, cmap=RDBU_R, vmin=-1, vmax=1)
    root = _parse(fig.to_svg("heat"))
    cells = _cells(root)
    assert cells == {(0, 0): "#053061", (0, 1): "#f7f7f7", (0, 2): "#67001f",
                     (1, 0): "#67001f", (1, 1): "#67001f"}  # fmt: skip
    # the cell grid (3 columns, 2 rows, unit cells) is scaled onto the plot box exactly
    x, y, w, h = _frame(root)
    tr = root.find(f".//{NS}g[@class='heatmap']").get("transform")
    tx, ty, sx, sy = (float(v) for v in re.findall(r"-?[\d.]+", tr))
    assert (tx, ty) == pytest.approx((x, y), abs=TOL)
    assert (3 * sx, 2 * sy) == pytest.approx((w, h), abs=0.06)
    assert w == pytest.approx(1.5 * h, abs=0.1)  # equal aspect: square cells
    # the colour bar runs from the low colour at the bottom to the high one on top
    bar = [r for r in root.find(f".//{NS}g[@class='colorbar']") if r.tag == NS + "rect"]
    assert bar[0].get("fill") == RDBU_R(63.5 / 64) and bar[63].get("fill") == RDBU_R(0.5 / 64)


def test_large_heatmap_stays_small_and_thins_its_labels() -> None:
    rng = np.random.default_rng(0)
    n = 100
    names = [f"org/model-{i:03d}" for i in range(n)]
    fig = Figure(1, panel_width=540, plot_height=360)
    ax = fig.axes[0]
    ax.heatmap(np.clip(rng.normal(0.3, 0.3, (n, n)), -1, 1), cmap=RDBU_R, vmin=-1, vmax=1)
    ax.set_xticks(range(n), names, size=8, rotation=90, thin=True)
    ax.set_yticks(range(n), names, size=8, thin=True)
    svg = fig.to_svg("big")
    assert len(svg) < 250_000
    root = _parse(svg)
    assert len(_cells(root)) == n * n
    for cls in ("xtick", "ytick"):
        shown = [_text(t) for t in _all(root, "text", cls)]
        idx = [names.index(s) for s in shown]
        assert 2 <= len(shown) <= 50 and idx[0] == 0
        assert len(set(np.diff(idx))) == 1  # every k-th name
        # names at least their font size apart: 360 px / (100 / k) >= 8 px
        assert 360 / (n / idx[1]) >= 8


def test_annotated_heatmap_writes_each_value() -> None:
    fig = Figure(1)
    ax = fig.axes[0]
    ax.heatmap([[0.1, 0.9]], cmap=PURPLES, vmin=0, vmax=1, annotate="{:.0%}", equal=False)
    root = _parse(fig.to_svg("rates"))
    cells = [t for t in _all(root, "text") if _text(t).endswith("%")]
    assert [(_text(t), t.get("fill", "")) for t in cells] == [("10%", "#000000"),
                                                               ("90%", "#ffffff")]  # fmt: skip


# ---- legend --------------------------------------------------------------------------------


def _legend_box(root: ET.Element) -> tuple[float, float, float, float]:
    rect = root.find(f".//{NS}g[@class='legend']/{NS}rect")
    x, y = float(rect.get("x")), float(rect.get("y"))
    return x, y, x + float(rect.get("width")), y + float(rect.get("height"))


def test_legend_goes_where_it_covers_no_point() -> None:
    fig = Figure(1, panel_width=500, plot_height=300)
    ax = fig.axes[0]
    # a cloud in the upper right quarter and the lower left corner: upper left is free
    rng = np.random.default_rng(1)
    ax.scatter(rng.uniform(0.6, 1, 200), rng.uniform(0.5, 1, 200), color="#1f77b4", label="a")
    ax.scatter([0.0], [0.0], color="#d62728", label="b")
    ax.legend()
    root = _parse(fig.to_svg("legend"))
    x0, y0, x1, y1 = _legend_box(root)
    fx, fy, fw, fh = _frame(root)
    assert fx <= x0 and x1 <= fx + fw and fy <= y0 and y1 <= fy + fh  # inside the box
    assert x1 < fx + fw / 2 and y1 < fy + fh / 2  # the upper left
    for c in _all(root, "circle"):
        if c.get("r") != "4.0" or c in root.findall(f".//{NS}g[@class='legend']//{NS}circle"):
            continue
        cx, cy = float(c.get("cx")), float(c.get("cy"))
        assert not (x0 - 4 <= cx <= x1 + 4 and y0 - 4 <= cy <= y1 + 4)


def test_legend_moves_below_when_data_fill_the_box() -> None:
    fig = Figure(1, panel_width=500, plot_height=300)
    ax = fig.axes[0]
    g = np.linspace(0, 1, 40)
    xx, yy = np.meshgrid(g, g)
    ax.scatter(xx.ravel(), yy.ravel(), color="#7f7f7f", label="grid")
    ax.legend()
    root = _parse(fig.to_svg("full"))
    _, fy, _, fh = _frame(root)
    entry = root.find(f".//{NS}g[@class='legend-entry']/{NS}text")
    assert float(entry.get("y")) > fy + fh + 11  # under the tick labels
    assert float(root.get("height")) > float(entry.get("y"))  # and inside the SVG


def test_category_labels_rotate_and_bars_start_at_zero() -> None:
    fig = Figure(1, panel_width=500, plot_height=250)
    ax = fig.axes[0]
    ax.bar([0.0, 1.0], [0.5, -0.25], 0.4, color="#1f77b4", label="with")
    ax.set_xticks([0, 1], ["R-NR\n(3 pairs)", "NR-NR\n(6 pairs)"])
    ax.set_xlim(-0.6, 1.6)
    root = _parse(fig.to_svg("bars"))
    x, y, w, h = _frame(root)
    rects = root.find(f".//{NS}g[@class='bars']")
    # y autoscale: -0.25 .. 0.5 padded by 5% of 0.75
    lo, hi = -0.25 - 0.0375, 0.5 + 0.0375

    def py(v):
        return y + h - (v - lo) / (hi - lo) * h

    r0, r1 = list(rects)
    assert float(r0.get("y")) == pytest.approx(py(0.5), abs=TOL)
    assert float(r0.get("y")) + float(r0.get("height")) == pytest.approx(py(0), abs=0.1)
    assert float(r1.get("y")) == pytest.approx(py(0), abs=TOL)
    assert float(r1.get("x")) == pytest.approx(x + (0.8 + 0.6) / 2.2 * w, abs=TOL)
    labels = _all(root, "text", "xtick")
    assert [[t.text for t in lab] for lab in labels] == [["R-NR", "(3 pairs)"],
                                                         ["NR-NR", "(6 pairs)"]]  # fmt: skip
