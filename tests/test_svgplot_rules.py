"""The SVG plots' rules piece by piece (well under a second): each artist drawn on a plot box
written by hand, the text width estimate, wrapping, dashes, colours, autoscaling, legend
placement and the panel layout.

The plot box of most tests maps data x in [0, 10] to pixels 100..300 (20 px a unit) and data y
in [0, 5] to pixels 120..20 (20 px a unit, y up), so every expected coordinate below is worked
out by hand: px = 100 + 20 x, py = 120 - 20 y. Layout margins are worked out from the module's
documented text-width rule (0.36 em for narrow characters, 0.95 for wide ones, 0.74 capitals,
0.64 digits, 0.62 the rest) and its fixed paddings.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import metacog_metrics.svgplot as sp
from metacog_metrics.svgplot import PURPLES, RDBU_R, Axes, Figure, FigureStack, escape, grey

NAN = float("nan")
NS = "{http://www.w3.org/2000/svg}"


def close(got, expected) -> bool:
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    return got.shape == expected.shape and bool(np.allclose(got, expected, rtol=0, atol=1e-9))


def box(invert_y: bool = False) -> sp._Map:
    return sp._Map(0.0, 10.0, 0.0, 5.0, 100.0, 20.0, 200.0, 100.0, invert_y=invert_y)


# ------------------------------------------------------------------------------ basics


def test_map_is_linear_and_inverts_y() -> None:
    assert box().fx([0, 2.5, 10]).tolist() == [100.0, 150.0, 300.0]
    assert box().fy([0, 1, 5]).tolist() == [120.0, 100.0, 20.0]
    assert box(invert_y=True).fy([0, 1, 5]).tolist() == [20.0, 40.0, 120.0]
    m = sp._Map(2.0, 4.0, -1.0, 1.0, 10.0, 0.0, 100.0, 50.0)
    assert m.fx(3.0) == 60.0 and m.fy(0.0) == 25.0 and m.fy(-1.0) == 50.0


def test_marker_radius_and_greys() -> None:
    # a matplotlib marker of area s pt^2 has diameter sqrt(s) pt; 1 pt = 96/72 px
    assert sp.marker_radius(36.0) == pytest.approx(3.0 * 96 / 72)
    assert grey(0.6) == "#999999" and grey(0.0) == "#000000" and grey(1.0) == "#ffffff"
    assert grey(-2.0) == "#000000" and grey(3.0) == "#ffffff" and grey(0.2) == "#333333"
    assert sp._rgb("#0a1b2c") == (10, 27, 44) and sp._rgb("ff8001") == (255, 128, 1)


def test_colormaps_interpolate_between_their_stops() -> None:
    assert RDBU_R(0.0) == "#053061" and RDBU_R(1.0) == "#67001f" and RDBU_R(0.5) == "#f7f7f7"
    assert RDBU_R(-3.0) == "#053061" and RDBU_R(7.0) == "#67001f" and RDBU_R(NAN) == "#ffffff"
    # t = 0.02: 0.2 of the way from #053061 (5, 48, 97) to #2166ac (33, 102, 172)
    assert RDBU_R(0.02) == "#0b3b70"
    # t = 0.95: half way from #b2182b (178, 24, 43) to #67001f (103, 0, 31): 140.5, 12, 37
    assert RDBU_R(0.95) in ("#8c0c25", "#8d0c25")
    assert PURPLES(0.0) == "#fcfbfd" and PURPLES(1.0) == "#3f007d" and PURPLES(0.5) == "#9e9ac8"
    assert PURPLES(0.0625) == "#f6f4f9"  # half way from (252, 251, 253) to (239, 237, 245)


def test_escape_replaces_control_characters_and_quotes() -> None:
    raw = "a&b<c>\"d'" + "\x00\x08\t\n\x0b\x0c\r\x0e\x1f \x7f\x80"
    assert escape(raw) == "a&amp;b&lt;c&gt;&quot;d&#x27;" + "\ufffd\ufffd\t\n\ufffd\ufffd\r" + (
        "\ufffd\ufffd \ufffd\x80"
    )
    assert escape(3) == "3"


def test_text_width_by_character_class() -> None:
    narrow = "iljtfrI.,:;|!'`()[]{} "
    assert sp.text_width(narrow, 10.0) == pytest.approx(0.36 * 10 * len(narrow))
    assert sp.text_width("mwMW@%", 10.0) == pytest.approx(0.95 * 60)
    assert sp.text_width("ABXZ", 10.0) == pytest.approx(0.74 * 40)
    assert sp.text_width("0189", 10.0) == pytest.approx(0.64 * 40)
    assert sp.text_width("abz\u2212", 10.0) == pytest.approx(0.62 * 40)
    # the widest line of several
    assert sp.text_width("ab\nWWW\nc", 10.0) == pytest.approx(28.5)
    assert sp.text_width("", 10.0) == 0.0
    assert sp.text_width("Aa1", 12.0) == pytest.approx((0.74 + 0.62 + 0.64) * 12)


def test_wrap_breaks_at_spaces_before_a_line_gets_too_wide() -> None:
    # "aaa bbb" is 6 x 0.62 + 0.36 = 4.08 em: 40.8 px at size 10
    assert sp.wrap("aaa bbb ccc", 40.8, 10.0) == "aaa bbb\nccc"
    assert sp.wrap("aaa bbb ccc", 40.7, 10.0) == "aaa\nbbb\nccc"
    assert sp.wrap("a\nb c", 1000.0, 10.0) == "a\nb c"
    assert sp.wrap("abcdefgh", 1.0, 10.0) == "abcdefgh"  # one word is never broken
    assert sp.wrap("x y", 1.0, 10.0) == "x\ny"


def test_n_lines_and_dashes() -> None:
    assert (sp._n_lines(None), sp._n_lines(""), sp._n_lines("a"), sp._n_lines("a\nb")) == (
        0,
        0,
        1,
        2,
    )
    assert sp._dash(":", 1.0) == ' stroke-dasharray="1.0 3.0"'
    assert sp._dash("dotted", 2.0) == ' stroke-dasharray="2.0 5.0"'
    assert sp._dash("--", 1.0) == ' stroke-dasharray="6.0 3.0"'
    assert sp._dash("dashed", 2.0) == ' stroke-dasharray="10.0 5.0"'
    assert sp._dash("-", 2.0) == "" and sp._dash("solid", 2.0) == ""
    assert sp._f(1.25) == "1.2" and sp._f(-0.04) == "-0.0" and sp._f(3) == "3.0"


def test_text_element_by_hand() -> None:
    assert sp._text(10, 20, "a<b", 11) == (
        '<text x="10.0" y="20.0" font-size="11" text-anchor="middle">a&lt;b</text>'
    )
    # top: the first baseline 0.8 em below; bottom: 0.25 em above, less the other lines
    assert sp._text(10, 20, "a", 10, anchor="start", valign="top") == (
        '<text x="10.0" y="28.0" font-size="10">a</text>'
    )
    assert sp._text(10, 20, "a", 10, anchor="end", valign="bottom") == (
        '<text x="10.0" y="17.5" font-size="10" text-anchor="end">a</text>'
    )
    # middle, two lines of 1.2 em: 20 + 3.5 - 6
    assert sp._text(
        10, 20, "a\nb", 10, valign="middle", color="#ff0000", weight="bold", rotate=-90,
        cls="ylabel",
    ) == (
        '<text x="10.0" y="17.5" font-size="10" text-anchor="middle" fill="#ff0000" '
        'font-weight="bold" transform="rotate(-90 10.0 20.0)" class="ylabel">'
        '<tspan x="10.0" dy="0.0">a</tspan><tspan x="10.0" dy="12.0">b</tspan></text>'
    )  # fmt: skip
    # bottom, two lines: 20 - 2.5 - 12
    assert sp._text(5, 20, "a\nb", 10, valign="bottom", color="#222222").startswith(
        '<text x="5.0" y="5.5" font-size="10" text-anchor="middle"><tspan'
    )
    assert sp._text(5, 20, "a", 10, valign="baseline", rotate=0.0) == (
        '<text x="5.0" y="20.0" font-size="10" text-anchor="middle">a</text>'
    )


# ------------------------------------------------------------------------------ artists


def test_line_is_broken_at_gaps_with_markers_on_every_finite_point() -> None:
    x = [0, 1, 2, 3, 4, 5, 6]
    y = [1, 2, NAN, 3, 4, NAN, 2]
    line = sp._Line(color="#123456", x=np.array(x, float), y=np.array(y, float))
    assert line.svg(box()) == (
        '<g class="line" fill="none" stroke="#123456" stroke-width="1.5" '
        'stroke-linejoin="round"><path d="M100.0 100.0L120.0 80.0"/>'
        '<path d="M160.0 60.0L180.0 40.0"/></g>'
    )
    marked = sp._Line(
        color="#123456", alpha=0.5, x=np.array(x, float), y=np.array(y, float), lw=2.0,
        ls="--", marker="o", radius=3.0,
    )  # fmt: skip
    circles = "".join(
        f'<circle cx="{cx}" cy="{cy}" r="3.0"/>'
        for cx, cy in (("100.0", "100.0"), ("120.0", "80.0"), ("160.0", "60.0"),
                       ("180.0", "40.0"), ("220.0", "80.0"))
    )  # fmt: skip
    assert marked.svg(box()) == (
        '<g class="line" fill="none" stroke="#123456" stroke-width="2" stroke-opacity="0.5" '
        'stroke-dasharray="10.0 5.0" stroke-linejoin="round"><path d="M100.0 100.0L120.0 80.0"/>'
        '<path d="M160.0 60.0L180.0 40.0"/><g fill="#123456" stroke="none">' + circles + "</g></g>"
    )
    for ls in ("", "none"):
        bare = sp._Line(color="#000000", x=np.array(x, float), y=np.array(y, float), ls=ls)
        assert "<path" not in bare.svg(box()), ls
    # a run of three points is one path
    three = sp._Line(color="#000000", x=np.array([0.0, 1, 2]), y=np.array([0.0, 1, 0]))
    assert '<path d="M100.0 120.0L120.0 100.0L140.0 120.0"/>' in three.svg(box())
    assert line.extent()[0].tolist() == [0, 1, 3, 4, 6]
    assert line.extent()[1].tolist() == [1, 2, 3, 4, 2] and line.extent()[2] == set()


def test_line_legend_handle() -> None:
    line = sp._Line(color="#123456", lw=2.0, ls=":")
    assert line.handle(50, 10) == (
        '<path d="M38.0 10.0h24" stroke="#123456" stroke-width="2" stroke-dasharray="2.0 5.0"/>'
    )
    marked = sp._Line(color="#123456", alpha=0.25, marker="s", radius=5.0)
    assert marked.handle(50, 10) == (
        '<path d="M38.0 10.0h24" stroke="#123456" stroke-width="1.5" stroke-opacity="0.25"/>'
        '<g fill="#123456"><rect x="45.5" y="5.5" width="9.0" height="9.0"/></g>'
    )


def test_segment_points_every_four_pixels() -> None:
    pts = sp._seg_points(np.array([0.0, 10.0]), np.array([0.0, 0.0]))
    assert pts.tolist() == [[0, 0], [10, 0], [5, 0]]
    pts = sp._seg_points(np.array([0.0, 0.0, 3.0]), np.array([0.0, 12.0, 12.0]))
    assert close(pts, [[0, 0], [0, 12], [3, 12], [0, 4], [0, 8]])
    pts = sp._seg_points(np.array([0.0, 6.0, 6.0]), np.array([0.0, 8.0, 0.0]), step=5.0)
    # 10 px: 2 steps (one point between); 8 px: 1 step (none)
    assert close(pts, [[0, 0], [6, 8], [6, 0], [3, 4]])
    assert sp._point_rects(np.array([[1.0, 2.0]]), 0.5).tolist() == [[0.5, 1.5, 1.5, 2.5]]


def test_line_obstacles_cover_its_points_by_its_width_or_marker() -> None:
    line = sp._Line(color="#000000", x=np.array([0.0, 1.0, NAN, 5]), y=np.array([0.0, 0, 0, 0]))
    # 100 -> 120 px at y 120: 20 px, points every 4 px between; the lone point at x 5 too
    xs = [100, 120, 104, 108, 112, 116, 200]
    expected = [[x - 1.5, 118.5, x + 1.5, 121.5] for x in xs]
    assert close(line.obstacles(box()), expected)
    line.marker, line.radius = "o", 4.0
    assert line.obstacles(box())[0].tolist() == [96.0, 116.0, 104.0, 124.0]
    line.radius, line.lw = 1.0, 2.0
    assert line.obstacles(box())[0].tolist() == [98.0, 118.0, 102.0, 122.0]
    empty = sp._Line(color="#000000", x=np.array([NAN]), y=np.array([1.0]))
    assert empty.obstacles(box()).shape == (0, 4)


def test_scatter_circles_squares_tips_and_obstacles() -> None:
    sc = sp._Scatter(
        color="#ff0000", x=np.array([0.0, 1, NAN, 2]), y=np.array([1.0, 2, 3, NAN]),
        radius=np.array([2.0, 3.0, 4.0, 5.0]), tips=["a<", "b", "c", "d"],
    )  # fmt: skip
    assert sc.svg(box()) == (
        '<g class="scatter" fill="#ff0000"><circle cx="100.0" cy="100.0" r="2.0">'
        '<title>a&lt;</title></circle><circle cx="120.0" cy="80.0" r="3.0"><title>b</title>'
        "</circle></g>"
    )
    assert sc.obstacles(box()).tolist() == [[98, 98, 102, 102], [117, 77, 123, 83]]
    sq = sp._Scatter(color="#00ff00", alpha=0.5, x=np.array([1.0]), y=np.array([1.0]),
                     radius=5.0, marker="s")  # fmt: skip
    assert sq.svg(box()) == (
        '<g class="scatter" fill="#00ff00" fill-opacity="0.5">'
        '<rect x="115.5" y="95.5" width="9.0" height="9.0"/></g>'
    )
    tipped = sp._Scatter(color="#0", x=np.array([1.0]), y=np.array([1.0]), marker="s", tips=["t"])
    assert tipped.svg(box()).endswith(
        '<rect x="116.4" y="96.4" width="7.2" height="7.2"><title>t</title></rect></g>'
    )
    # the legend's sample: the largest radius, at most 5
    assert sq.handle(50, 10) == (
        '<g fill="#00ff00" fill-opacity="0.5"><rect x="45.5" y="5.5" width="9.0" height="9.0"/></g>'
    )
    small = sp._Scatter(color="#0000ff", radius=np.array([1.0, 2.5]))
    assert small.handle(50, 10) == '<g fill="#0000ff"><circle cx="50.0" cy="10.0" r="2.5"/></g>'
    big = sp._Scatter(color="#0000ff", radius=np.array([9.0]))
    assert big.handle(50, 10) == '<g fill="#0000ff"><circle cx="50.0" cy="10.0" r="5.0"/></g>'
    none = sp._Scatter(color="#0000ff", radius=np.array([]))
    assert 'r="4.0"' in none.handle(50, 10)
    assert sc.extent()[0].tolist() == [0, 1] and sc.extent()[1].tolist() == [1, 2]


def test_histogram_outline_obstacles_and_handle() -> None:
    h = sp._Hist(color="#abcdef", alpha=0.5, edges=np.array([0.0, 1, 2, 3]),
                 counts=np.array([1.0, 0, 2]))  # fmt: skip
    assert h.svg(box()) == (
        '<path class="hist" fill="#abcdef" fill-opacity="0.5" '
        'd="M100.0 120.0V100.0H120.0V120.0H140.0V80.0H160.0V120.0Z"/>'
    )
    assert h.obstacles(box()).tolist() == [[100, 100, 120, 120], [140, 80, 160, 120]]
    assert h.handle(50, 10) == (
        '<rect x="40.0" y="5.0" width="20" height="10" fill="#abcdef" fill-opacity="0.5"/>'
    )
    xs, ys, sticky = h.extent()
    assert xs.tolist() == [0, 1, 2, 3] and ys.tolist() == [0, 1, 0, 2] and sticky == {"y0"}
    solid = sp._Hist(color="#abcdef", edges=np.array([0.0, 1]), counts=np.array([1.0]))
    assert "fill-opacity" not in solid.svg(box()) + solid.handle(0, 0)


def test_bars_from_zero_either_way() -> None:
    bars = sp._Bars(color="#111111", alpha=0.5, x=np.array([1.0, 3.0, NAN, 5.0]),
                    heights=np.array([2.0, -1.0, 1.0, NAN]), width=0.5)  # fmt: skip
    # x 1 +- 0.25 -> 115..125 px, 0..2 -> 120..80; x 3: 155..165, 0..-1 -> 120..140
    assert bars.svg(box()) == (
        '<g class="bars" fill="#111111" fill-opacity="0.5">'
        '<rect x="115.0" y="80.0" width="10.0" height="40.0"/>'
        '<rect x="155.0" y="120.0" width="10.0" height="20.0"/></g>'
    )
    assert bars.obstacles(box()).tolist() == [[115, 80, 125, 120], [155, 120, 165, 140]]
    xs, ys, sticky = bars.extent()
    assert xs.tolist() == [0.75, 1.25, 2.75, 3.25] and sticky == {"y0"}
    assert ys.tolist() == [0.0, 0.0, 2.0, -1.0, 0.0]
    assert "fill-opacity" not in sp._Bars(color="#1").svg(box())
    assert bars.handle(50, 10) == (
        '<rect x="40.0" y="5.0" width="20" height="10" fill="#111111" fill-opacity="0.5"/>'
    )


def test_band_paths_and_sampled_obstacles() -> None:
    band = sp._Band(
        color="#222222",
        alpha=0.25,
        x=np.array([0.0, 1, 2, NAN, 4, 5]),
        lo=np.array([0.0, 0, 1, 0, 0, 1]),
        hi=np.array([1.0, 2, 2, 1, 1, 2]),
    )
    assert band.svg(box()) == (
        '<path class="band" fill="#222222" fill-opacity="0.25" d="'
        "M100.0 100.0L120.0 80.0L140.0 80.0L140.0 100.0L120.0 120.0L100.0 120.0Z"
        'M180.0 100.0L200.0 80.0L200.0 100.0L180.0 120.0Z"/>'
    )
    xs, ys, _ = band.extent()
    assert xs.tolist() == [0, 1, 2, 4, 5] and ys.tolist() == [0, 0, 1, 0, 1, 1, 2, 2, 1, 2]
    # 0 -> 20 px: k = 20 // 6 + 1 = 4 samples, 3 slices 6.67 px wide; lo 120 flat,
    # hi 100 -> 80
    two = sp._Band(color="#2", x=np.array([0.0, 1]), lo=np.array([0.0, 0]), hi=np.array([1.0, 2]))
    third = 20 / 3
    assert close(two.obstacles(box()),
        [[100, 100, 100 + third, 120], [100 + third, 100 - third, 100 + 2 * third, 120],
         [100 + 2 * third, 100 - 2 * third, 120, 120]]
    )  # fmt: skip
    # lo above hi is the same band; a narrow step gets 2 samples (one slice)
    flipped = sp._Band(color="#2", x=np.array([0.0, 0.1]), lo=np.array([2.0, 2]),
                       hi=np.array([1.0, 1]))  # fmt: skip
    assert close(flipped.obstacles(box()), [[100, 80, 102, 100]])
    one = sp._Band(color="#2", x=np.array([0.0, NAN]), lo=np.array([0.0, 0]), hi=np.array([1.0, 1]))
    assert one.obstacles(box()).shape == (0, 4)
    assert "fill-opacity" not in sp._Band(color="#2", alpha=1.0).svg(box())


def test_reference_lines() -> None:
    h = sp._RefLine(color="#333333", value=2.0, lw=1.0, ls="--")
    assert h.svg(box()) == (
        '<path class="refline" d="M100.0 80.0L300.0 80.0" stroke="#333333" stroke-width="1" '
        'stroke-dasharray="6.0 3.0"/>'
    )
    v = sp._RefLine(color="#333333", alpha=0.5, value=3.0, vertical=True, lw=2.0)
    assert v.svg(box()) == (
        '<path class="refline" d="M160.0 20.0L160.0 120.0" stroke="#333333" stroke-width="2" '
        'stroke-opacity="0.5"/>'
    )
    assert h.obstacles(box()).tolist() == [[99, 79, 301, 81]]
    assert v.obstacles(box()).tolist() == [[158, 18, 162, 122]]
    thin = sp._RefLine(color="#3", value=2.0, lw=0.5)
    assert thin.obstacles(box()).tolist() == [[99, 79, 301, 81]]
    nan = sp._RefLine(color="#3", value=NAN)
    assert nan.svg(box()) == "" and nan.obstacles(box()).shape == (0, 4)
    assert nan.extent()[1].size == 0
    assert [e.tolist() for e in h.extent()[:2]] == [[], [2.0]]
    assert [e.tolist() for e in v.extent()[:2]] == [[3.0], []]
    assert v.handle(50, 10) == '<path d="M38.0 10.0h24" stroke="#333333" stroke-width="2"/>'
    assert h.handle(50, 10) == (
        '<path d="M38.0 10.0h24" stroke="#333333" stroke-width="1" stroke-dasharray="6.0 3.0"/>'
    )


def test_segments_skip_non_finite_rows() -> None:
    seg = sp._Segments(color="#444444", alpha=0.5, seg=np.array([[0.0, 0, 1, 0], [2, 1, 2, NAN],
                       [3, 1, 3, 2]]), lw=2.0, cls="errorbar")  # fmt: skip
    assert seg.svg(box()) == (
        '<path class="errorbar" d="M100.0 120.0L120.0 120.0M160.0 100.0L160.0 80.0" '
        'stroke="#444444" stroke-width="2" stroke-opacity="0.5" fill="none"/>'
    )
    xs, ys, _ = seg.extent()
    assert xs.tolist() == [0, 1, 3, 3] and ys.tolist() == [0, 0, 1, 2]
    obst = seg.obstacles(box())
    # 20 px each: both ends and 4 points between, each +- the line width
    assert obst.shape == (12, 4)
    assert obst[:3].tolist() == [[98, 118, 102, 122], [118, 118, 122, 122], [102, 118, 106, 122]]
    assert obst[6].tolist() == [158, 98, 162, 102]
    none = sp._Segments(color="#4", seg=np.array([[NAN, 0, 0, 0]]))
    assert none.svg(box()) == "" and none.obstacles(box()).shape == (0, 4)
    assert 'class="segments"' in sp._Segments(color="#4", seg=np.array([[0.0, 0, 1, 1]])).svg(box())


def test_text_artist_and_its_box() -> None:
    t = sp._Text(color="#555555", x=1.0, y=1.0, s="Ab", size=10.0, anchor="start", valign="top")
    assert t.svg(box()) == '<text x="120.0" y="108.0" font-size="10" fill="#555555">Ab</text>'
    w = (0.74 + 0.62) * 10
    assert close(t.obstacles(box()), [[120, 100, 120 + w, 112]])
    t.anchor, t.valign = "middle", "middle"
    assert close(t.obstacles(box()), [[120 - w / 2, 94, 120 + w / 2, 106]])
    t.anchor, t.valign, t.s = "end", "bottom", "Ab\nAb"
    assert close(t.obstacles(box()), [[120 - w, 76, 120, 100]])


def test_box_plot_artist() -> None:
    b = sp._Box(color="#666666", alpha=0.5, x=2.0, q1=1.0, med=1.5, q3=2.0, lo=0.5, hi=3.0,
                width=1.0, outliers=np.array([4.0]))  # fmt: skip
    # x 1.5..2.5 -> 130..150, centre 140, quarter 135..145; q1 100, q3 80, med 90, lo 110,
    # hi 60, outlier 40
    assert b.svg(box()) == (
        '<g class="box" stroke="#444444" stroke-width="1">'
        '<rect x="130.0" y="80.0" width="20.0" height="20.0" fill="#666666" fill-opacity="0.5"/>'
        '<path fill="none" d="M140.0 100.0V110.0M135.0 110.0H145.0M140.0 80.0V60.0'
        'M135.0 60.0H145.0"/>'
        '<path d="M130.0 90.0H150.0" stroke="#000000" stroke-width="2"/>'
        '<g fill="none"><circle cx="140.0" cy="40.0" r="3"/></g></g>'
    )
    assert b.obstacles(box()).tolist() == [[130, 40, 150, 110]]
    xs, ys, _ = b.extent()
    assert xs.tolist() == [1.5, 2.5] and ys.tolist() == [0.5, 3.0, 4.0]
    plain = sp._Box(color="#6", x=2.0, q1=1.0, med=1.5, q3=2.0, lo=0.5, hi=3.0, width=1.0)
    assert "<circle" not in plain.svg(box()) and "fill-opacity" not in plain.svg(box())


def test_heat_cells_merge_runs_of_one_colour() -> None:
    values = np.array([[-1.0, -1.0, 1.0], [NAN, 0.0, 0.0]])
    heat = sp._Heat(values=values, cmap=RDBU_R, vmin=-1.0, vmax=1.0, levels=4)
    m = sp._Map(-0.5, 2.5, -0.5, 1.5, 100.0, 20.0, 60.0, 40.0, invert_y=True)
    assert heat.svg(m) == (
        '<g class="heatmap" shape-rendering="crispEdges" transform="translate(100.0 20.0) '
        'scale(20.0000 20.0000)"><path fill="#053061" d="M0 0h2v1h-2z"/>'
        '<path fill="#67001f" d="M2 0h1v1h-1z"/><path fill="#f7f7f7" d="M1 1h2v1h-2z"/></g>'
    )
    xs, ys, sticky = heat.extent()
    assert xs.tolist() == [-0.5, 2.5] and ys.tolist() == [-0.5, 1.5]
    assert sticky == {"x0", "x1", "y0", "y1"}
    # values beyond the scale take its ends
    heat = sp._Heat(values=np.array([[5.0, -5.0]]), cmap=RDBU_R, vmin=-1.0, vmax=1.0, levels=4)
    m = sp._Map(-0.5, 1.5, -0.5, 0.5, 0.0, 0.0, 20.0, 10.0, invert_y=True)
    assert heat.svg(m).endswith(
        '<path fill="#67001f" d="M0 0h1v1h-1z"/><path fill="#053061" d="M1 0h1v1h-1z"/></g>'
    )


def test_heat_annotations_are_light_on_dark_cells() -> None:
    values = np.array([[0.5, 0.9, NAN]])
    heat = sp._Heat(values=values, cmap=PURPLES, vmin=0.0, vmax=1.0, annotate="{:.0%}")
    m = sp._Map(-0.5, 2.5, -0.5, 0.5, 0.0, 0.0, 60.0, 20.0, invert_y=True)
    body = heat.svg(m)
    # cells 20 px: size min(11, 0.45 x 20) = 9; middle: y 10 + 0.35 x 9
    assert body.endswith(
        '<text x="10.0" y="13.2" font-size="9" text-anchor="middle" fill="#000000">50%</text>'
        '<text x="30.0" y="13.2" font-size="9" text-anchor="middle" fill="#ffffff">90%</text>'
    )
    big = sp._Heat(values=np.array([[0.6, 0.61]]), cmap=PURPLES, vmin=0.0, vmax=1.0,
                   annotate="{:.2f}")  # fmt: skip
    m = sp._Map(-0.5, 1.5, -0.5, 0.5, 0.0, 0.0, 100.0, 50.0, invert_y=True)
    texts = ET.fromstring(f"<g>{big.svg(m)}</g>").findall("text")
    # 50 px cells: size capped at 11; 0.6 is not above light_above, 0.61 is
    assert [(t.get("font-size"), t.get("fill"), t.text) for t in texts] == [
        ("11", "#000000", "0.60"),
        ("11", "#ffffff", "0.61"),
    ]
    assert sp._Heat(vmin=-2.0, vmax=2.0)._t(1.0) == 0.75


# ------------------------------------------------------------------------------ Axes


def test_axes_methods_make_their_artists() -> None:
    ax = Axes()
    ax.plot([[0, 1]], [2, 3], color="#1", lw=2.0, ls=":", marker="o", radius=3.0, alpha=0.5,
            label="L")  # fmt: skip
    ax.scatter([0, 1], [1, 2], color="#2", radius=[1, 2], marker="s", alpha=0.3, label="S",
               tips=("a", "b"))  # fmt: skip
    ax.hist([0.0, 1.0, NAN, 1.0, 2.0], bins=2, color="#3", alpha=0.4, label="H")
    ax.hist([NAN], color="#3")  # nothing finite: no artist
    ax.bar([1, 2], [3, 4], 0.5, color="#4", alpha=0.6, label="B")
    ax.fill_between([0, 1], [0, 0], [1, 1], color="#5", label="F")
    ax.axhline(1, color="#6", lw=2.0, ls="--", label="h")
    ax.axvline(2, color="#7", lw=3.0, ls=":", label="v")
    ax.segments([0, 0, 1, 1, 2, 2, 3, 3], color="#8", lw=2.0, alpha=0.5, label="G", cls="c")
    ax.text(1, 2, "t", color="#9", size=9.0, anchor="end", valign="top")
    line, sc, hist, bars, band, hl, vl, seg, text = ax.artists
    assert (line.color, line.alpha, line.label, line.lw, line.ls, line.marker, line.radius) == (
        "#1", 0.5, "L", 2.0, ":", "o", 3.0,
    )  # fmt: skip
    assert line.x.tolist() == [0, 1] and line.y.tolist() == [2, 3] and line.x.dtype == float
    assert (sc.color, sc.alpha, sc.label, sc.marker, sc.tips) == ("#2", 0.3, "S", "s", ["a", "b"])
    assert sc.radius.tolist() == [1.0, 2.0] and sc.x.tolist() == [0, 1]
    assert sc.y.tolist() == [1, 2]
    assert (hist.color, hist.alpha, hist.label) == ("#3", 0.4, "H")
    assert hist.edges.tolist() == [0, 1, 2] and hist.counts.tolist() == [1, 3]
    assert (bars.color, bars.alpha, bars.label, bars.width) == ("#4", 0.6, "B", 0.5)
    assert bars.x.tolist() == [1, 2] and bars.heights.tolist() == [3, 4]
    assert (band.color, band.alpha, band.label) == ("#5", 0.25, "F")
    assert band.lo.tolist() == [0, 0] and band.hi.tolist() == [1, 1] and band.x.tolist() == [0, 1]
    assert (hl.color, hl.label, hl.value, hl.vertical, hl.lw, hl.ls) == (
        "#6", "h", 1.0, False, 2.0, "--",
    )  # fmt: skip
    assert (vl.color, vl.label, vl.value, vl.vertical, vl.lw, vl.ls) == (
        "#7", "v", 2.0, True, 3.0, ":",
    )  # fmt: skip
    assert (seg.color, seg.alpha, seg.label, seg.lw, seg.cls) == ("#8", 0.5, "G", 2.0, "c")
    assert seg.seg.tolist() == [[0, 0, 1, 1], [2, 2, 3, 3]]
    assert (text.color, text.x, text.y, text.s, text.size, text.anchor, text.valign) == (
        "#9", 1, 2, "t", 9.0, "end", "top",
    )  # fmt: skip
    assert [a.label for a in ax._legend_entries()] == ["L", "S", "H", "B", "F", "h", "v", "G"]
    defaults = Axes()
    defaults.plot([0], [0], color="#0")
    defaults.scatter([0], [0], color="#0")
    defaults.bar([0], [1], color="#0")
    defaults.axhline(0, color="#0")
    defaults.axvline(0, color="#0")
    defaults.segments([0, 0, 1, 1], color="#0")
    defaults.text(0, 0, "t")
    line, sc, bars, hl, vl, seg, text = defaults.artists
    assert (line.lw, line.ls, line.marker, line.radius, line.alpha, line.label) == (
        1.5, "-", None, 4.0, 1.0, None,
    )  # fmt: skip
    assert (sc.radius.tolist(), sc.marker, sc.alpha, sc.tips) == (4.0, "o", 1.0, None)
    assert (bars.width, bars.alpha) == (0.8, 1.0)
    assert (hl.lw, hl.ls, vl.lw, vl.ls, vl.vertical) == (0.8, "-", 0.8, "-", True)
    assert (seg.lw, seg.alpha, seg.cls) == (1.0, 1.0, "segments")
    assert (text.color, text.size, text.anchor, text.valign) == ("#222222", 11.0, "middle",
                                                                 "middle")  # fmt: skip


def test_errorbars_and_box_plots_from_data() -> None:
    ax = Axes()
    ax.errorbar_x([1.0, 2.0], [0.0, 1.0], [0.5, NAN], [1.5, 2.5], color="#1", radius=2.0,
                  lw=1.5, label="E")  # fmt: skip
    seg, pts = ax.artists
    # a missing end collapses onto the point
    assert seg.seg.tolist() == [[0.5, 0.0, 1.5, 0.0], [2.0, 1.0, 2.5, 1.0]]
    assert (seg.cls, seg.lw, seg.color, seg.label) == ("errorbar", 1.5, "#1", None)
    assert (pts.ls, pts.marker, pts.radius, pts.lw, pts.label) == ("", "o", 2.0, 1.5, "E")
    assert pts.x.tolist() == [1, 2] and pts.y.tolist() == [0, 1]
    ax = Axes()
    data = [[1.0, 2, 3, 4, 5, 6, 7, 8, 9, 100, NAN], [NAN], [2.0, 2.0]]
    ax.boxplot(data, colors=["#a", "#b", "#c"], alpha=0.4, width=0.5)
    first, second = ax.artists
    # quartiles of 1..9, 100 by linear interpolation: 3.25, 5.5, 7.75; IQR 4.5, fences
    # -3.5 and 14.5: whiskers 1 and 9, 100 an outlier
    assert (first.x, first.q1, first.med, first.q3, first.lo, first.hi) == (
        1.0, 3.25, 5.5, 7.75, 1.0, 9.0,
    )  # fmt: skip
    assert first.outliers.tolist() == [100.0] and (first.color, first.alpha) == ("#a", 0.4)
    assert first.width == 0.5 and (second.x, second.color, second.lo, second.hi) == (
        3.0, "#c", 2.0, 2.0,
    )  # fmt: skip
    assert second.outliers.size == 0
    ax = Axes()
    ax.boxplot([[0.0, 10.0, 10.0, 10.0, 10.0, 20.0]], colors=["#a"])
    (b,) = ax.artists
    # q1 = q3 = 10: both fences at 10, so 0 and 20 are outliers and the whiskers stop at 10
    assert (b.lo, b.hi, b.outliers.tolist(), b.alpha, b.width) == (10, 10, [0, 20], 0.6, 0.6)


def test_heatmap_and_axis_settings() -> None:
    ax = Axes()
    ax.heatmap([[1, 2]], cmap=PURPLES, vmin=0.0, vmax=2.0, annotate="{:g}")
    (heat,) = ax.artists
    assert ax.invert_y and ax.equal and ax.colorbar is heat
    assert (heat.cmap, heat.vmin, heat.vmax, heat.annotate) == (PURPLES, 0.0, 2.0, "{:g}")
    assert heat.values.tolist() == [[1.0, 2.0]] and heat.values.dtype == float
    plain = Axes()
    plain.heatmap([[1]], cmap=PURPLES, vmin=0.0, vmax=1.0, colorbar=False, equal=False)
    assert plain.colorbar is None and not plain.equal and plain.invert_y
    ax = Axes()
    assert (ax.invert_y, ax.equal, ax.visible, ax.legend_spec, ax.colorbar) == (
        False, False, True, None, None,
    )  # fmt: skip
    assert (ax.xlim, ax.ylim, ax.xlabel, ax.ylabel, ax.title, ax.xcat, ax.ycat) == (None,) * 7
    ax.set_xlim(1, 2)
    ax.set_ylim(-3, 4)
    assert ax.xlim == (1.0, 2.0) and ax.ylim == (-3.0, 4.0)
    ax.set(xlabel="x", ylabel="y", title="t")
    ax.set(title="u")
    assert (ax.xlabel, ax.ylabel, ax.title) == ("x", "y", "u")
    ax.set_xticks([1, 2], ["a", 3], size=9.0, rotation=45.0, thin=True)
    assert (ax.xcat.positions, ax.xcat.labels, ax.xcat.size, ax.xcat.rotation, ax.xcat.thin) == (
        [1.0, 2.0], ["a", "3"], 9.0, 45.0, True,
    )  # fmt: skip
    ax.set_yticks([0], [5], size=8.0, thin=True)
    assert (ax.ycat.positions, ax.ycat.labels, ax.ycat.size, ax.ycat.rotation, ax.ycat.thin) == (
        [0.0], ["5"], 8.0, 0.0, True,
    )  # fmt: skip
    ax.set_xticks([1], ["a"])
    ax.set_yticks([1], ["a"])
    assert (ax.xcat.size, ax.xcat.rotation, ax.xcat.thin) == (11.0, 0.0, False)
    assert (ax.ycat.size, ax.ycat.thin) == (11.0, False)
    ax.invert_yaxis()
    ax.legend("upper left", size=9.0, frame=False)
    ax.axis_off()
    assert ax.invert_y and not ax.visible
    assert (ax.legend_spec.loc, ax.legend_spec.size, ax.legend_spec.frame) == (
        "upper left", 9.0, False,
    )  # fmt: skip
    ax.legend()
    assert (ax.legend_spec.loc, ax.legend_spec.size, ax.legend_spec.frame) == ("best", 11.0, True)


def test_autoscale_margins_and_sticky_edges() -> None:
    assert sp._auto(np.array([]), set()) == (0.0, 1.0)
    assert sp._auto(np.array([NAN, np.inf]), set()) == (0.0, 1.0)
    assert sp._auto(np.array([0.0, 0.0]), set()) == (-0.5, 0.5)
    assert sp._auto(np.array([4.0]), set()) == pytest.approx((3.8, 4.2))
    assert sp._auto(np.array([-4.0]), set()) == pytest.approx((-4.2, -3.8))
    assert sp._auto(np.array([0.0, 10.0, NAN]), set()) == pytest.approx((-0.5, 10.5))
    assert sp._auto(np.array([0.0, 10.0]), {"y0"}) == pytest.approx((0.0, 10.5))
    assert sp._auto(np.array([1.0, 10.0]), {"y0"}) == pytest.approx((0.55, 10.45))
    assert sp._auto(np.array([0.0, 10.0]), {"x0", "x1"}) == (0.0, 10.0)
    assert sp._auto(np.array([0.0, 10.0]), {"y0", "y1"}) == (0.0, 10.0)
    assert sp._auto(np.array([0.0, 10.0]), {"x0", "y1"}) == pytest.approx((0.0, 10.5))
    # within 1e-12 of each other (relative to the value, at least 1): a constant
    assert sp._auto(np.array([1000.0, 1000.0 + 1e-10]), set()) == pytest.approx((950, 1050))
    assert sp._auto(np.array([0.0, 1e-12]), set()) == pytest.approx((-0.5, 0.5))
    lo, hi = sp._auto(np.array([0.0, 2e-12]), set())
    assert (lo, hi) == pytest.approx((-1e-13, 2.1e-12), abs=1e-18)


def test_axes_limits_combine_artists_and_respect_set_limits() -> None:
    ax = Axes()
    assert ax._limits() == (0.0, 1.0, 0.0, 1.0)
    ax.hist([0.0, 10.0], bins=1, color="#1")
    ax.plot([0, 20], [0, 0], color="#1")
    x0, x1, y0, y1 = ax._limits()
    # x: 0..20 +- 1; y: the histogram's 0..2 (one bin of both values) sticks at 0
    assert (x0, x1) == pytest.approx((-1.0, 21.0)) and (y0, y1) == pytest.approx((0.0, 2.1))
    ax.set_xlim(5, 6)
    ax.set_ylim(-1, 0)
    assert ax._limits() == (5.0, 6.0, -1.0, 0.0)
    heat = Axes()
    heat.heatmap([[1, 2, 3]], cmap=PURPLES, vmin=0, vmax=3)
    heat.axvline(7, color="#1")
    # the heatmap's x edges stick, and the line widens them with no margin
    assert heat._limits() == (-0.5, 7.0, -0.5, 0.5)


def test_equal_box_categories_and_tick_fitting() -> None:
    assert sp._equal_box((-0.5, 2.5, 1.5, -0.5), 300.0, 100.0) == (150.0, 100.0)
    assert sp._equal_box((-0.5, 2.5, 1.5, -0.5), 120.0, 100.0) == (120.0, 80.0)
    cat = sp._Cat([float(i) for i in range(120)], [str(i) for i in range(120)], size=10.0)
    assert sp._cat_shown(cat, 10.0) == list(range(120))
    cat.thin = True
    # 11.5 px a label: 120 labels on 1000 px need every 2nd, but at most 50: every 3rd
    assert sp._cat_shown(cat, 1000.0) == list(range(0, 120, 3))
    assert sp._cat_shown(cat, 100.0) == list(range(0, 120, 14))
    assert sp._cat_shown(cat, 0.0) == [0]
    few = sp._Cat([0.0, 1.0], ["a", "b"], size=10.0, thin=True)
    assert sp._cat_shown(few, 23.0) == [0, 1] and sp._cat_shown(few, 22.9) == [0]
    assert sp._cat_shown(sp._Cat([], [], thin=True), 10.0) == []
    # horizontal: labels "0.0" .. "1.0" are 1.64 em = 18.04 px, plus 14 px each
    six = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    need6 = 6 * (18.04 + 14)
    assert sp._fit_ticks(0.0, 1.0, need6 + 0.01, horizontal=True) == six
    assert sp._fit_ticks(0.0, 1.0, need6 - 0.01, horizontal=True) == [0.0, 0.5, 1.0]
    # vertical: 2.6 em a tick
    assert sp._fit_ticks(0.0, 1.0, 6 * 2.6 * 11.0, horizontal=False) == six
    assert sp._fit_ticks(0.0, 1.0, 6 * 2.6 * 11.0 - 0.01, horizontal=False) == [0.0, 0.5, 1.0]
    # nothing fits: the sparsest try (3 intervals)
    assert sp._fit_ticks(0.0, 1.0, 1.0, horizontal=False) == [0.0, 0.5, 1.0]
    # 9 intervals are tried first: 0..9 in steps of 1 (10 ticks)
    assert sp._fit_ticks(0.0, 9.0, 1000.0, horizontal=False) == [float(i) for i in range(10)]


def test_overlap_area() -> None:
    rects = np.array([[0.0, 0, 10, 10], [5, 5, 20, 20], [30, 30, 40, 40]])
    assert sp._overlap((0.0, 0.0, 10.0, 10.0), rects) == 125.0
    assert sp._overlap((0.0, 0.0, 1.0, 1.0), np.zeros((0, 4))) == 0.0
    assert sp._overlap((10.0, 10.0, 12.0, 30.0), rects[:1]) == 0.0


def test_legend_boxes_at_each_place() -> None:
    m = box()  # left 100, top 20, 200 x 100
    w, h, pad = 40.0, 20.0, 6.0
    expected = {
        "upper right": (254, 26), "upper left": (106, 26), "lower left": (106, 94),
        "lower right": (254, 94), "center right": (254, 60), "center left": (106, 60),
        "lower center": (180, 94), "upper center": (180, 26), "center": (180, 60),
    }  # fmt: skip
    for loc, (x, y) in expected.items():
        assert sp._loc_box(loc, m, w, h, pad) == (x, y, x + w, y + h), loc


def test_legend_right_and_left_mean_center_right_and_left_as_in_matplotlib() -> None:
    m = box()
    assert sp._loc_box("right", m, 40.0, 20.0, 6.0) == (254, 60, 294, 80)
    assert sp._loc_box("left", m, 40.0, 20.0, 6.0) == (106, 60, 146, 80)


def test_legend_size_and_entries() -> None:
    a = sp._Line(color="#1", label="Ab")
    b = sp._Line(color="#2", label="x\ny")
    w, h = sp._legend_size([a, b], 10.0)
    assert w == pytest.approx((0.74 + 0.62) * 10 + 46) and h == pytest.approx(3 * 13.5 + 10)
    assert sp._entry(a, 10.0, 20.0, 10.0) == (
        '<g class="legend-entry"><path d="M10.0 20.0h24" stroke="#1" stroke-width="1.5"/>'
        '<text x="40.0" y="23.5" font-size="10">Ab</text></g>'
    )
    svg = sp._legend_svg([a, b], (10.0, 20.0, 80.0, 70.0), 10.0, True)
    assert svg.startswith(
        '<g class="legend"><rect x="10.0" y="20.0" width="70.0" height="50.0" fill="#ffffff" '
        'fill-opacity="0.85" stroke="#cccccc" rx="3"/><g class="legend-entry">'
        '<path d="M18.0 31.8h24"'
    )
    # entries stacked from y0 + 5, each 1.35 em a line: the 2-line one centred at 25 + 13.5 + 13.5
    assert '<path d="M18.0 52.0h24" stroke="#2"' in svg and svg.endswith("</g></g>")
    bare = sp._legend_svg([a], (10.0, 20.0, 80.0, 70.0), 10.0, False)
    assert "<rect" not in bare and bare.startswith('<g class="legend"><g class="legend-entry">')


def test_legend_below_flows_entries_in_centred_rows() -> None:
    ax = Axes()
    for label in ("aaaa", "bbbb", "cccc"):
        ax.plot([0], [0], color="#1", label=label)
    entries = ax._legend_entries()
    # each entry 30 + 4 x 6.2 + 16 = 70.8 px; 150 px available (170 - 20): two per row
    svg, extra = sp._legend_below(ax, entries, 1000.0, 170.0, 50.0, sp._Legend(size=10.0))
    assert extra == pytest.approx(4 + 2 * 14 + 2)
    paths = [p.split('"')[1] for p in svg.split("<path ")[1:]]
    xs = [float(d[1:].split(" ")[0]) for d in paths]
    ys = [float(d.split(" ")[1].removesuffix("h24")) for d in paths]
    row1 = 1000 + (170 - (2 * 70.8 - 16)) / 2
    row2 = 1000 + (170 - (70.8 - 16)) / 2
    # the sample is 24 px from 12 px right of the entry's start
    assert xs == pytest.approx([row1, row1 + 70.8, row2], abs=0.06)
    assert ys == pytest.approx([50 + 4 + 7, 50 + 4 + 7, 50 + 4 + 21], abs=0.06)
    labels = [t for t in ET.fromstring(svg).iter("text")]
    assert [t.text for t in labels] == ["aaaa", "bbbb", "cccc"]
    assert [float(t.get("x")) for t in labels] == pytest.approx(
        [row1 + 30, row1 + 100.8, row2 + 30], abs=0.06
    )
    # 140 px: one per row
    _, extra = sp._legend_below(ax, entries, 0.0, 160.0, 0.0, sp._Legend(size=10.0))
    assert extra == pytest.approx(4 + 3 * 14 + 2)


def test_best_legend_place_avoids_the_data() -> None:
    def placed(points_x, points_y, loc="best", width=540.0):
        fig = Figure(panel_width=width, plot_height=200.0)
        ax = fig.axes[0]
        ax.scatter(points_x, points_y, color="#1", label="pts")
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        ax.legend(loc)
        svg = fig.to_svg("t")
        root = ET.fromstring(svg)
        frame = next(r for r in root.iter(NS + "rect") if r.get("class") == "frame")
        legend = next(g for g in root.iter(NS + "g") if g.get("class") == "legend")
        return frame, legend, svg

    def corner(frame, legend):
        rect = legend.find(NS + "rect")
        fx, fy = float(frame.get("x")), float(frame.get("y"))
        fw, fh = float(frame.get("width")), float(frame.get("height"))
        lx, ly = float(rect.get("x")), float(rect.get("y"))
        lw, lh = float(rect.get("width")), float(rect.get("height"))
        horiz = (
            "left"
            if abs(lx - fx - 6) < 0.2
            else "right"
            if abs(fx + fw - 6 - lx - lw) < 0.2
            else "center"
        )
        vert = (
            "upper"
            if abs(ly - fy - 6) < 0.2
            else "lower"
            if abs(fy + fh - 6 - ly - lh) < 0.2
            else "center"
        )
        return vert, horiz

    # nothing in the way: upper right, matplotlib's first choice
    assert corner(*placed([5], [5])[:2]) == ("upper", "right")
    # a point in the upper right corner: upper left
    assert corner(*placed([9.8], [9.8])[:2]) == ("upper", "left")
    # both upper corners taken: lower left
    assert corner(*placed([0.2, 9.8], [9.8, 9.8])[:2]) == ("lower", "left")
    # a fixed place is used as given
    assert corner(*placed([9.8], [9.8], "upper right")[:2]) == ("upper", "right")
    # every place covered: below the panel, no frame
    xs, ys = np.meshgrid(np.linspace(0, 10, 41), np.linspace(0, 10, 41))
    _frame, legend, _ = placed(xs.ravel(), ys.ravel())
    assert legend.find(NS + "rect") is None
    _, legend, _ = placed([5], [5], "below")
    assert legend.find(NS + "rect") is None
    # a legend wider than the plot box goes below too
    fig = Figure(panel_width=200.0, plot_height=200.0)
    fig.axes[0].plot([0, 1], [0, 1], color="#1", label="a very long label " * 4)
    fig.axes[0].legend()
    root = ET.fromstring(fig.to_svg("t"))
    legend = next(g for g in root.iter(NS + "g") if g.get("class") == "legend")
    assert legend.find(NS + "rect") is None


def test_no_legend_without_labels_spec_or_visibility() -> None:
    fig = Figure()
    ax = fig.axes[0]
    ax.plot([0, 1], [0, 1], color="#1")
    ax.legend()
    assert 'class="legend"' not in fig.to_svg("t")
    fig = Figure()
    fig.axes[0].plot([0, 1], [0, 1], color="#1", label="a")
    assert 'class="legend"' not in fig.to_svg("t")
    assert sp._place_legend(Axes(), 0.0, 100.0, 0.0) == ("", 0.0)


# ------------------------------------------------------------------------------ layout


def _plain(**sets) -> Axes:
    ax = Axes()
    ax.plot([0, 1], [0, 1], color="#1")
    if sets:
        ax.set(**sets)
    return ax


def test_layout_margins_by_hand() -> None:
    lo = sp._layout(_plain(), 300.0, 200.0)
    six = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert lo["limits"] == pytest.approx((-0.05, 1.05, -0.05, 1.05))
    assert lo["xt"] == six and lo["yt"] == six
    # left: 8 + the widest y label (1.64 em = 18.04) + tick 4 + pad 4; right: half of "1.0" + 4
    assert lo["left"] == pytest.approx(34.04) and lo["right"] == pytest.approx(13.02)
    # bottom: tick 4 + pad 4 + a line of tick labels (1.2 em) + 4; top: 8
    assert lo["bottom"] == pytest.approx(25.2) and lo["top"] == 8.0
    assert lo["xlabel"] is None and lo["ylabel"] is None and lo["title"] is None
    lo = sp._layout(_plain(xlabel="x", ylabel="y", title="T"), 300.0, 200.0)
    assert lo["left"] == pytest.approx(34.04 + 14.4 + 4) and lo["ylabel"] == "y"
    assert lo["bottom"] == pytest.approx(25.2 + 15 + 4) and lo["xlabel"] == "x"
    assert lo["top"] == pytest.approx(8 + 17.5 + 4) and lo["title"] == "T"
    two = sp._layout(_plain(xlabel="a\nb", ylabel="c\nd", title="e\nf"), 300.0, 200.0)
    assert two["left"] == pytest.approx(34.04 + 28.8 + 4)
    assert two["bottom"] == pytest.approx(25.2 + 30 + 4)
    assert two["top"] == pytest.approx(8 + 35 + 4)
    # long labels are wrapped to the plot box (x), the plot height (y) and the panel (title)
    words = "word " * 30
    long = sp._layout(_plain(xlabel=words, ylabel=words, title=words), 300.0, 200.0)
    assert long["xlabel"] == sp.wrap(words, 300.0 - long["left"] - long["right"], 12.0)
    assert long["ylabel"] == sp.wrap(words, 200.0, 12.0)
    assert long["title"] == sp.wrap(words, 290.0, 14.0)
    assert long["xlabel"] != long["ylabel"] != long["title"] != long["xlabel"]


def test_layout_of_a_colour_bar_categories_and_a_hidden_panel() -> None:
    ax = Axes()
    ax.heatmap([[0.0, 1.0]], cmap=RDBU_R, vmin=-1.0, vmax=1.0)
    lo = sp._layout(ax, 300.0, 200.0)
    # colour bar ticks -1.0 .. 1.0 by 0.5: "\u22121.0" is 2.26 em = 24.86 px
    assert lo["right"] == pytest.approx(14 + 14 + 4 + 4 + 24.86 + 6)
    ax = Axes()
    ax.bar([0, 1], [1, 2], color="#1")
    ax.set_xticks([0, 1], ["AB", "c"], size=10.0)
    ax.set_yticks([0, 2], ["WW", "i"], size=10.0)
    lo = sp._layout(ax, 300.0, 200.0)
    assert lo["xt"] == [] and lo["yt"] == []
    assert lo["left"] == pytest.approx(8 + 19 + 8)
    # one line of 10 px labels, not rotated: 12 + 2
    assert lo["bottom"] == pytest.approx(4 + 4 + 14 + 4) and lo["right"] == 10.0
    ax.set_xticks([0, 1], ["AB", "c\nd"], size=10.0, rotation=90.0)
    lo = sp._layout(ax, 300.0, 200.0)
    # rotated a quarter turn: the longest label's width (14.8 px) + 2
    assert lo["bottom"] == pytest.approx(4 + 4 + 14.8 + 2 + 4, abs=1e-9)
    ax.set_xticks([0, 1], ["AB", "c\nd"], size=10.0, rotation=-30.0)
    lo = sp._layout(ax, 300.0, 200.0)
    xth = 14.8 * 0.5 + 24 * math.cos(math.radians(30)) + 2
    assert lo["bottom"] == pytest.approx(8 + xth + 4)
    hidden = Axes()
    hidden.axis_off()
    lo = sp._layout(hidden, 300.0, 200.0)
    assert (lo["left"], lo["right"], lo["top"], lo["bottom"], lo["xt"], lo["yt"]) == (
        10.0, 10.0, 8.0, 0.0, [], [],
    )  # fmt: skip
    # an equal-aspect panel thins its x categories over its own (narrower) width
    ax = Axes()
    ax.heatmap(np.zeros((2, 60)), cmap=RDBU_R, vmin=-1, vmax=1, colorbar=False)
    ax.set_xticks(list(range(60)), ["W" * 8] * 60, size=10.0, rotation=90.0, thin=True)
    lo = sp._layout(ax, 300.0, 200.0)
    assert lo["bottom"] == pytest.approx(8 + 8 * 9.5 + 2 + 4)


def _figure_svg() -> tuple[ET.Element, str]:
    fig = Figure(panel_width=300.0, plot_height=200.0)
    fig.axes[0].plot([0, 1], [0, 1], color="#1")
    svg = fig.to_svg("A <plot>")
    return ET.fromstring(svg), svg


def test_figure_root_frame_and_size_by_hand() -> None:
    _root, svg = _figure_svg()
    # width: one 300 px panel; height: top 8 + plot 200 + bottom 25.2 + 6
    assert svg.startswith(
        '<svg xmlns="http://www.w3.org/2000/svg" class="fig" role="img" '
        'viewBox="0 0 300.0 239.2" width="300.0" height="239.2" '
        'font-family="DejaVu Sans, Arial, Helvetica, sans-serif" fill="#222222">'
        '<title>A &lt;plot&gt;</title><rect width="100%" height="100%" fill="#ffffff"/>'
        '<g class="axes"><rect class="frame" x="34.0" y="8.0" width="252.9" height="200.0" '
        'fill="none" stroke="#444444" stroke-width="0.8"/><g class="line"'
    )
    assert svg.endswith("</g></svg>")


def test_tick_marks_and_labels_by_hand() -> None:
    root, _ = _figure_svg()
    left, width, top, height = 34.04, 300 - 34.04 - 13.02, 8.0, 200.0
    six = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    px = [left + (t + 0.05) / 1.1 * width for t in six]
    py = [top + (1 - (t + 0.05) / 1.1) * height for t in six]
    (ticks,) = [p for p in root.iter(NS + "path") if p.get("class") == "ticks"]
    assert (ticks.get("stroke"), ticks.get("stroke-width")) == ("#444444", "0.8")
    d = ticks.get("d")
    expected = "".join(f"M{x:.1f} 208.0v4" for x in px) + "".join(f"M34.0 {y:.1f}h-4" for y in py)
    assert d == expected
    xt = [t for t in root.iter(NS + "text") if t.get("class") == "xtick"]
    assert [t.text for t in xt] == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    for t, x in zip(xt, px, strict=True):
        # top-aligned 2 px under the 4 px tick: baseline at 214 + 0.8 em
        assert (float(t.get("x")), t.get("y"), t.get("text-anchor")) == (
            pytest.approx(x, abs=0.06), "222.8", "middle",
        )  # fmt: skip
    yt = [t for t in root.iter(NS + "text") if t.get("class") == "ytick"]
    assert [t.text for t in yt] == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    for t, y in zip(yt, py, strict=True):
        # right-aligned 3 px left of the tick, middle: + 0.35 em
        assert (t.get("x"), float(t.get("y")), t.get("text-anchor")) == (
            "27.0", pytest.approx(y + 3.85, abs=0.06), "end",
        )  # fmt: skip


def test_axis_labels_and_title_positions_by_hand() -> None:
    fig = Figure(panel_width=300.0, plot_height=200.0)
    fig.axes[0].plot([0, 1], [0, 1], color="#1")
    fig.axes[0].set(xlabel="x", ylabel="y", title="T")
    root = ET.fromstring(fig.to_svg("t"))
    texts = {t.get("class"): t for t in root.iter(NS + "text")}
    left, top = 34.04 + 18.4, 8 + 21.5
    width = 300 - left - 13.02
    bottom = top + 200
    xl = texts["xlabel"]
    # centred under the plot box, top-aligned under the tick labels: + 0.8 em of 12
    assert float(xl.get("x")) == pytest.approx(left + width / 2, abs=0.06)
    assert float(xl.get("y")) == pytest.approx(bottom + 4 + 4 + 13.2 + 2 + 9.6, abs=0.06)
    yl = texts["ylabel"]
    assert float(yl.get("x")) == pytest.approx(6 + 10.8, abs=0.06)
    assert float(yl.get("y")) == pytest.approx(top + 100, abs=0.06)
    assert yl.get("transform") == f"rotate(-90 16.8 {top + 100:.1f})"
    title = texts["title"]
    assert float(title.get("x")) == pytest.approx(left + width / 2, abs=0.06)
    assert float(title.get("y")) == pytest.approx(top - 6, abs=0.06)
    assert title.get("font-size") == "14" and xl.get("font-size") == yl.get("font-size") == "12"


def test_a_wide_title_is_moved_inside_its_panel() -> None:
    fig = Figure(2, panel_width=200.0, plot_height=100.0)
    for ax in fig.axes:
        ax.plot([0, 1], [0, 1], color="#1")
    fig.axes[0].set(ylabel="a\nb\nc\nd", title="W" * 16)
    fig.axes[1].set(title="i")
    root = ET.fromstring(fig.to_svg("t"))
    titles = [t for t in root.iter(NS + "text") if t.get("class") == "title"]
    half = 16 * 0.95 * 14 / 2  # 106.4: wider than the plot box allows
    # panel 0 spans 0..200: the title's centre stops at 200 - half - 4
    assert float(titles[0].get("x")) == pytest.approx(200 - half - 4, abs=0.06)
    # panel 1: centred on its plot box
    frames = [r for r in root.iter(NS + "rect") if r.get("class") == "frame"]
    fx, fw = float(frames[1].get("x")), float(frames[1].get("width"))
    assert float(titles[1].get("x")) == pytest.approx(fx + fw / 2, abs=0.1)
    assert fx > 200
    fig = Figure(panel_width=200.0, plot_height=100.0)
    fig.axes[0].plot([0, 1], [0, 1], color="#1")
    fig.axes[0].set(ylabel="\n".join("abcdefgh"), title="W" * 16)
    root = ET.fromstring(fig.to_svg("t"))
    (title,) = [t for t in root.iter(NS + "text") if t.get("class") == "title"]
    # a plot box pushed right by an 8-line y label: the centre stops at 200 - half - 4 too,
    # and a short title on a panel whose box starts far left stays at least half + 4 in
    assert float(title.get("x")) == pytest.approx(200 - half - 4, abs=0.06)
    fig = Figure(panel_width=400.0, plot_height=100.0)
    fig.axes[0].plot([0, 1], [0, 1], color="#1")
    fig.axes[0].set(title="W" * 20 + "\n" + "i")
    root = ET.fromstring(fig.to_svg("t"))
    (title,) = [t for t in root.iter(NS + "text") if t.get("class") == "title"]
    half = 20 * 0.95 * 14 / 2
    # two lines: the first baseline one line (1.2 em) higher
    frame = next(r for r in root.iter(NS + "rect") if r.get("class") == "frame")
    assert float(title.get("y")) == pytest.approx(float(frame.get("y")) - 6 - 16.8, abs=0.11)


def test_category_ticks_by_hand() -> None:
    fig = Figure(panel_width=300.0, plot_height=200.0)
    ax = fig.axes[0]
    ax.bar([0, 1], [1, 2], color="#1")
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(0, 2)
    ax.set_xticks([0, 1], ["AB", "c"], size=10.0)
    ax.set_yticks([0, 2], ["WW", "i"], size=10.0)
    root = ET.fromstring(fig.to_svg("t"))
    frame = next(r for r in root.iter(NS + "rect") if r.get("class") == "frame")
    left, width = 35.0, 300 - 35 - 10
    assert (frame.get("x"), frame.get("width")) == ("35.0", f"{width:.1f}")
    xt = [t for t in root.iter(NS + "text") if t.get("class") == "xtick"]
    assert [t.text for t in xt] == ["AB", "c"]
    # x 0 -> left + width / 4; top-aligned: 8 + 200 + 4 + 2 + 0.8 x 10
    assert [(t.get("x"), t.get("y"), t.get("font-size")) for t in xt] == [
        (f"{left + width / 4:.1f}", "222.0", "10"),
        (f"{left + 3 * width / 4:.1f}", "222.0", "10"),
    ]
    yt = [t for t in root.iter(NS + "text") if t.get("class") == "ytick"]
    assert [(t.text, t.get("x"), t.get("y"), t.get("text-anchor")) for t in yt] == [
        ("WW", "28.0", "211.5", "end"),
        ("i", "28.0", "11.5", "end"),
    ]
    (ticks,) = [p for p in root.iter(NS + "path") if p.get("class") == "ticks"]
    assert ticks.get("d") == (
        f"M{left + width / 4:.1f} 208.0v4M{left + 3 * width / 4:.1f} 208.0v4"
        "M35.0 208.0h-4M35.0 8.0h-4"
    )
    # rotated labels end at the tick: under 60 degrees top-aligned, else centred
    for rot, valign_y in ((45.0, 214 + 8.0), (90.0, 214 + 3.5)):
        ax.set_xticks([0, 1], ["AB", "c"], size=10.0, rotation=rot)
        root = ET.fromstring(fig.to_svg("t"))
        xt = [t for t in root.iter(NS + "text") if t.get("class") == "xtick"]
        assert xt[0].get("text-anchor") == "end"
        assert float(xt[0].get("y")) == pytest.approx(valign_y, abs=0.06)
        assert xt[0].get("transform") == f"rotate({-rot:g} {xt[0].get('x')} 214.0)"


def test_x_label_under_rotated_categories() -> None:
    fig = Figure(panel_width=300.0, plot_height=200.0)
    ax = fig.axes[0]
    ax.bar([0, 1], [1, 2], color="#1")
    ax.set_ylim(0, 2)
    ax.set_xticks([0, 1], ["AB", "c\nd"], size=10.0, rotation=90.0)
    ax.set(xlabel="x")
    root = ET.fromstring(fig.to_svg("t"))
    (xl,) = [t for t in root.iter(NS + "text") if t.get("class") == "xlabel"]
    # under the rotated labels: 208 + 4 + 4 + (14.8 + 2) + 2, top-aligned + 9.6
    assert float(xl.get("y")) == pytest.approx(208 + 8 + 16.8 + 2 + 9.6, abs=0.06)
    ax.set_xticks([0, 1], ["AB", "c\nd"], size=10.0)
    root = ET.fromstring(fig.to_svg("t"))
    (xl,) = [t for t in root.iter(NS + "text") if t.get("class") == "xlabel"]
    # not rotated: two lines of 12 px + 2
    assert float(xl.get("y")) == pytest.approx(208 + 8 + 26 + 2 + 9.6, abs=0.06)


def test_colour_bar_by_hand() -> None:
    heat = sp._Heat(values=np.zeros((1, 1)), cmap=PURPLES, vmin=0.0, vmax=2.0)
    m = sp._Map(-0.5, 0.5, -0.5, 0.5, 100.0, 20.0, 100.0, 100.0, invert_y=True)
    svg = sp._colorbar(heat, m)
    root = ET.fromstring(svg)
    rects = root.findall(NS + "rect") if root.tag.startswith(NS) else root.findall("rect")
    # 64 cells from y 30 (10% down) over 80 px, the top cell the scale's top
    assert len(rects) == 65
    assert rects[0].attrib == {"x": "214.0", "y": "30.0", "width": "14", "height": "1.65",
                               "fill": PURPLES(63.5 / 64)}  # fmt: skip
    assert rects[63].attrib["y"] == f"{30 + 63 * 80 / 64:.1f}"
    assert rects[63].attrib["fill"] == PURPLES(0.5 / 64)
    assert rects[64].attrib == {
        "x": "214.0",
        "y": "30.0",
        "width": "14",
        "height": "80.0",
        "fill": "none",
        "stroke": "#444444",
        "stroke-width": "0.8",
    }
    texts = root.findall("text")
    # ticks 0, 0.5, ..., 2 from the bottom (110) to the top (30)
    assert [t.text for t in texts] == ["0.0", "0.5", "1.0", "1.5", "2.0"]
    assert [t.get("y") for t in texts] == [f"{y + 3.85:.1f}" for y in (110, 90, 70, 50, 30)]
    assert {t.get("x") for t in texts} == {"235.0"} and {t.get("text-anchor") for t in texts} == {
        None
    }
    path = root.findall("path")[-1]
    assert path.get("d") == "".join(f"M228.0 {y:.1f}h4" for y in (110, 90, 70, 50, 30))
    assert root.get("class") == "colorbar" and root.get("shape-rendering") == "crispEdges"


def test_stack_and_panels_side_by_side() -> None:
    a, b = Figure(panel_width=300.0, plot_height=200.0), Figure(2, panel_width=200.0,
                                                                   plot_height=100.0)  # fmt: skip
    a.axes[0].plot([0, 1], [0, 1], color="#1")
    for ax in b.axes:
        ax.plot([0, 1], [0, 1], color="#1")
    b.axes[1].axis_off()
    stack = FigureStack([a, b])
    assert stack.axes == [a.axes[0], *b.axes]
    root = ET.fromstring(stack.to_svg("s"))
    rows = [g for g in root.iter(NS + "g") if g.get("class") == "row"]
    assert [r.get("transform") for r in rows] == ["translate(0 0.0)", "translate(0 239.2)"]
    # the second figure: 2 x 200 px wide, 8 + 100 + 25.2 + 6 high
    assert root.get("viewBox") == "0 0 400.0 378.4"
    assert len([r for r in root.iter(NS + "rect") if r.get("class") == "frame"]) == 2
    # side by side: the second panel's box starts 200 px further right
    fig = Figure(2, panel_width=200.0, plot_height=100.0)
    for ax in fig.axes:
        ax.plot([0, 1], [0, 1], color="#1")
    root = ET.fromstring(fig.to_svg("t"))
    frames = [r for r in root.iter(NS + "rect") if r.get("class") == "frame"]
    assert float(frames[1].get("x")) - float(frames[0].get("x")) == pytest.approx(200, abs=0.1)
    # an empty figure: the default plot height
    assert (
        Figure(0)
        .to_svg("e")
        .startswith(
            '<svg xmlns="http://www.w3.org/2000/svg" class="fig" role="img" viewBox="0 0 0.0 304.0"'
        )
    )


def test_base_artist_and_text_add_no_extent_obstacle_or_legend_sample() -> None:
    base = sp._Artist()
    xs, ys, sticky = base.extent()
    assert (xs.size, ys.size, sticky) == (0, 0, set())
    assert base.obstacles(box()).shape == (0, 4) and base.handle(1.0, 2.0) == ""
    with pytest.raises(NotImplementedError):
        base.svg(box())
    # a text artist takes no part in autoscaling
    ax = Axes()
    ax.text(100.0, 200.0, "far away")
    assert ax._limits() == (0.0, 1.0, 0.0, 1.0)


# ------------------------------------------------------------------------------ edge rules


def test_rgb_reads_the_first_three_pairs_only() -> None:
    assert sp._rgb("#0a1b2cff") == (10, 27, 44)


def test_wrap_keeps_paragraphs_and_repeated_spaces() -> None:
    # each paragraph is wrapped on its own: "aaaa" (24.8 px) is wider than 20, "b c" (16) is not
    assert sp.wrap("aaaa\nb c", 20.0, 10.0) == "aaaa\nb c"
    assert sp.wrap("a  b", 1000.0, 10.0) == "a  b"


def test_lines_bands_and_segments_drop_points_missing_on_either_axis() -> None:
    x = np.array([0.0, NAN, 2, 3])
    y = np.array([1.0, 1, 1, NAN])
    line = sp._Line(color="#1", x=x, y=y, marker="s", radius=2.0)
    assert line.extent()[0].tolist() == [0, 2] and line.extent()[1].tolist() == [1, 1]
    # no run of two finite points: markers only, squares as asked
    assert line.svg(box()) == (
        '<g class="line" fill="none" stroke="#1" stroke-width="1.5" stroke-linejoin="round">'
        '<g fill="#1" stroke="none"><rect x="98.2" y="98.2" width="3.6" height="3.6"/>'
        '<rect x="138.2" y="98.2" width="3.6" height="3.6"/></g></g>'
    )
    assert close(line.obstacles(box()), [[98, 98, 102, 102], [138, 98, 142, 102]])
    thin = sp._Line(color="#1", x=np.array([0.0]), y=np.array([1.0]), lw=0.5)
    assert close(thin.obstacles(box()), [[99.5, 99.5, 100.5, 100.5]])
    bx = np.array([0.0, 1, 2, 3])
    lo = np.array([0.0, NAN, 0, 0])
    hi = np.array([1.0, 1, 1, NAN])
    band = sp._Band(color="#2", x=bx, lo=lo, hi=hi)
    assert band.extent()[0].tolist() == [0, 2] and band.extent()[1].tolist() == [0, 0, 1, 1]
    assert band.svg(box()) == (
        '<path class="band" fill="#2" d="M100.0 100.0L100.0 120.0ZM140.0 100.0L140.0 120.0Z"/>'
    )
    # the two finite points (x 0 and 2) make one 40 px step: 40 // 6 + 1 = 7 samples
    assert band.obstacles(box()).shape == (6, 4)


def test_band_obstacles_follow_each_sloped_step() -> None:
    # three points: 0 -> 1 -> 2, lo rising 0 -> 1 -> 1, hi 2 -> 2 -> 3 (px: 20 px steps)
    band = sp._Band(color="#2", alpha=0.25, x=np.array([0.0, 1, 2]), lo=np.array([0.0, 1, 1]),
                    hi=np.array([2.0, 2, 3]))  # fmt: skip
    third = 20 / 3
    first = [[100 + k * third, 80, 100 + (k + 1) * third, 120 - k * third] for k in range(3)]
    second = [[120 + k * third, 80 - k * third, 120 + (k + 1) * third, 100] for k in range(3)]
    assert close(band.obstacles(box()), first + second)
    assert band.handle(50, 10) == (
        '<rect x="40.0" y="5.0" width="20" height="10" fill="#2" fill-opacity="0.25"/>'
    )


def test_opaque_artists_write_no_opacity() -> None:
    h = sp._Hist(color="#1", edges=np.array([0.0, 1]), counts=np.array([1.0]))
    assert h.svg(box()) == '<path class="hist" fill="#1" d="M100.0 120.0V100.0H120.0V120.0Z"/>'
    assert h.handle(50, 10) == '<rect x="40.0" y="5.0" width="20" height="10" fill="#1"/>'
    band = sp._Band(color="#2", alpha=1.0, x=np.array([0.0, 1]), lo=np.array([0.0, 0]),
                    hi=np.array([1.0, 1]))  # fmt: skip
    assert band.svg(box()) == (
        '<path class="band" fill="#2" d="M100.0 100.0L120.0 100.0L120.0 120.0L100.0 120.0Z"/>'
    )
    seg = sp._Segments(color="#3", seg=np.array([[0.0, 0, 1, 0]]))
    assert seg.svg(box()) == (
        '<path class="segments" d="M100.0 120.0L120.0 120.0" stroke="#3" stroke-width="1" '
        'fill="none"/>'
    )
    b = sp._Box(color="#4", x=2.0, q1=1.0, med=1.5, q3=2.0, lo=0.5, hi=3.0, width=1.0,
                outliers=np.array([4.0, 0.0]))  # fmt: skip
    svg = b.svg(box())
    assert '<rect x="130.0" y="80.0" width="20.0" height="20.0" fill="#4"/>' in svg
    assert svg.endswith(
        '<g fill="none"><circle cx="140.0" cy="40.0" r="3"/><circle cx="140.0" cy="120.0" '
        'r="3"/></g></g>'
    )


def test_heat_merges_runs_beyond_the_scale_and_joins_a_colours_cells() -> None:
    heat = sp._Heat(values=np.array([[5.0, 3.0], [-1.0, -1.0], [5.0, 9.0]]), cmap=RDBU_R,
                    vmin=-1.0, vmax=1.0, levels=4)  # fmt: skip
    m = sp._Map(-0.5, 1.5, -0.5, 2.5, 0.0, 0.0, 20.0, 30.0, invert_y=True)
    assert heat.svg(m).endswith(
        '<path fill="#67001f" d="M0 0h2v1h-2zM0 2h2v1h-2z"/>'
        '<path fill="#053061" d="M0 1h2v1h-2z"/></g>'
    )


def test_axes_defaults_for_histograms_errorbars_and_figures() -> None:
    ax = Axes()
    ax.hist(np.linspace(0, 1, 100), color="#1")
    (h,) = ax.artists
    assert h.edges.size == 41 and h.alpha == 1.0 and h.label is None
    ax.errorbar_x([1.0], [1.0], [0.0], [2.0], color="#2")
    seg, pts = ax.artists[1:]
    assert (pts.radius, pts.lw, seg.lw) == (2.7, 1.0, 1.0)
    fig = Figure()
    assert (len(fig.axes), fig.panel_width, fig.plot_height) == (1, 540.0, 290.0)
    ax.axis_off()
    assert ax.visible is False


def test_figure_panels_and_stacks_join_without_separators() -> None:
    fig = Figure(2, panel_width=200.0, plot_height=100.0)
    for ax in fig.axes:
        ax.plot([0, 1], [0, 1], color="#1")
    svg = fig.to_svg("t")
    assert svg.count('<g class="axes">') == 2 and '</g><g class="axes">' in svg
    stack = FigureStack([fig, fig]).to_svg("two <rows>")
    assert "<title>two &lt;rows&gt;</title>" in stack
    assert '</g></g><g class="row" transform="translate(0 ' in stack
    assert (
        FigureStack([])
        .to_svg("none")
        .startswith(
            '<svg xmlns="http://www.w3.org/2000/svg" class="fig" role="img" viewBox="0 0 0.0 0.0"'
        )
    )


def test_legend_below_a_second_panel_is_centred_on_that_panel() -> None:
    fig = Figure(2, panel_width=200.0, plot_height=100.0)
    for ax in fig.axes:
        ax.plot([0, 1], [0, 1], color="#1")
    fig.axes[1].plot([0, 1], [1, 0], color="#2", label="aaaa")
    fig.axes[1].legend("below")
    root = ET.fromstring(fig.to_svg("t"))
    (legend,) = [g for g in root.iter(NS + "g") if g.get("class") == "legend"]
    (text,) = legend.iter(NS + "text")
    # one entry 30 + 4 x 0.62 x 11 + 16 = 73.28 px wide, its row 57.28 px (less the 16 px
    # gap), centred on the second panel, 200..400
    assert float(text.get("x")) == pytest.approx(200 + (200 - 57.28) / 2 + 30, abs=0.06)


def test_category_thinning_caps_and_floors() -> None:
    # 101 labels: at most 50 shown, every ceil(101 / 50) = 3rd
    cat = sp._Cat([0.0] * 101, ["a"] * 101, size=0.01, thin=True)
    assert sp._cat_shown(cat, 1000.0) == list(range(0, 101, 3))
    # an axis under a pixel long counts as one pixel: 50 x 0.0575 = 2.875 -> every 3rd
    cat = sp._Cat([0.0] * 50, ["a"] * 50, size=0.05, thin=True)
    assert sp._cat_shown(cat, 0.5) == list(range(0, 50, 3))


def test_tick_fitting_tries_down_to_three_intervals() -> None:
    # 0..2 in 4 intervals (0.5 apart, 5 ticks) does not fit; 3 intervals (1 apart) is last
    assert sp._fit_ticks(0.0, 2.0, 1.0, horizontal=False) == [0.0, 1.0, 2.0]


def test_layout_uses_the_horizontal_rule_for_x_and_the_vertical_for_y() -> None:
    six = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    # x: 6 labels need 192.24 px of the panel less 90 (180 here: too few); y: 171.6 of 180 px
    lo = sp._layout(_plain(), 270.0, 180.0)
    assert lo["xt"] == [0.0, 0.5, 1.0] and lo["yt"] == six
    # 282.5 - 90 = 192.5 px: room for the six
    assert sp._layout(_plain(), 282.5, 180.0)["xt"] == six


def test_layout_of_empty_tick_sets() -> None:
    ax = _plain()
    ax.set_yticks([], [])
    ax.set_xticks([], [])
    lo = sp._layout(ax, 300.0, 200.0)
    # no labels: 8 + 0 + 4 + 4 on the left; a line's height (2 px gap) below
    assert lo["left"] == 16.0
    assert lo["bottom"] == pytest.approx(4 + 4 + 1.2 * 11 + 2 + 4)
    flat = _plain()
    flat.set_ylim(0.5, 0.5)  # no multiple of any step in [0.5, 0.5]: no y ticks
    assert sp._layout(flat, 300.0, 200.0)["left"] == 16.0


def test_colour_bar_ticks_use_five_intervals_at_most() -> None:
    # 0..2.75: 5 intervals give steps of 1 (0.55 -> 1); 6 would give 0.5, 8 would give 0.5
    heat = sp._Heat(values=np.zeros((1, 1)), cmap=PURPLES, vmin=0.0, vmax=2.75)
    m = sp._Map(-0.5, 0.5, -0.5, 0.5, 100.0, 20.0, 100.0, 100.0, invert_y=True)
    texts = ET.fromstring(sp._colorbar(heat, m)).findall("text")
    assert [t.text for t in texts] == ["0", "1", "2"]
    ax = Axes()
    ax.heatmap([[0.0]], cmap=PURPLES, vmin=0.0, vmax=2.75)
    # the widest label "0" .. "2": 0.64 em = 7.04 px
    assert sp._layout(ax, 300.0, 200.0)["right"] == pytest.approx(14 + 14 + 4 + 4 + 7.04 + 6)
    # a scale that does not start at 0: -1..1, ticks at -1, -0.5, 0, 0.5, 1 over 80 px
    heat = sp._Heat(values=np.zeros((1, 1)), cmap=RDBU_R, vmin=-1.0, vmax=1.0)
    texts = ET.fromstring(sp._colorbar(heat, m)).findall("text")
    assert [t.get("y") for t in texts] == [f"{y + 3.85:.1f}" for y in (110, 90, 70, 50, 30)]


def test_errorbars_fill_either_missing_end_and_keep_their_colour() -> None:
    ax = Axes()
    ax.errorbar_x([1.0, 2.0], [0.0, 1.0], [0.5, 1.0], [NAN, 2.5], color="#1")
    seg, pts = ax.artists
    assert seg.seg.tolist() == [[0.5, 0.0, 1.0, 0.0], [1.0, 1.0, 2.5, 1.0]]
    assert (seg.color, pts.color) == ("#1", "#1")


def test_box_plot_whiskers_stop_at_one_and_a_half_iqr() -> None:
    ax = Axes()
    # 1..9 and 18: q1 3.25, q3 7.75, IQR 4.5: 18 is beyond 7.75 + 6.75 = 14.5 (not 2.5 IQR)
    # -8, 2..10: q1 3.25, q3 8.75, IQR 5.5: -8 is below 3.25 - 8.25 = -5
    ax.boxplot([[1.0, 2, 3, 4, 5, 6, 7, 8, 9, 18], [-8.0, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
               colors=["#a", "#b"])  # fmt: skip
    up, down = ax.artists
    assert (up.hi, up.outliers.tolist()) == (9.0, [18.0])
    assert (down.lo, down.outliers.tolist()) == (2.0, [-8.0])


def test_set_keeps_what_it_is_not_given() -> None:
    ax = Axes()
    ax.set(title="t", xlabel="x", ylabel="y")
    ax.set(xlabel="x2")
    assert (ax.title, ax.xlabel, ax.ylabel) == ("t", "x2", "y")


def test_a_bare_upper_or_lower_place_is_centred_across() -> None:
    assert sp._loc_box("upper", box(), 40.0, 20.0, 6.0) == (180, 26, 220, 46)
    assert sp._loc_box("lower", box(), 40.0, 20.0, 6.0) == (180, 94, 220, 114)


def test_legend_below_breaks_rows_only_past_the_available_width() -> None:
    ax = Axes()
    for label in ("aaaa", "bbbb", "cccc", "dddd"):
        ax.plot([0], [0], color="#1", label=label)
    entries = ax._legend_entries()
    w = 30 + sp.text_width("aaaa", 11.0) + 16  # 73.28 px an entry at the default size
    # 0.5 px more than two entries: two rows of two (a row starts from 0 px used)
    svg, extra = sp._legend_below(ax, entries, 0.0, 2 * w + 20.5, 0.0, sp._Legend())
    assert extra == pytest.approx(4 + 2 * 1.4 * 11 + 2)
    assert svg.count('<g class="legend-entry">') == 4
    assert '</g><g class="legend-entry">' in svg and svg.startswith('<g class="legend"><g ')
    # 0.5 px less: one entry a row
    _, extra = sp._legend_below(ax, entries, 0.0, 2 * w + 19.5, 0.0, sp._Legend())
    assert extra == pytest.approx(4 + 4 * 1.4 * 11 + 2)
    pw = 2 * w + 20
    assert pw - 20 == 2 * w  # exactly two entries wide: still one row of two
    _, extra = sp._legend_below(ax, entries, 0.0, pw, 0.0, sp._Legend())
    assert extra == pytest.approx(4 + 2 * 1.4 * 11 + 2)


def _legend_axes(label: str, size: float) -> Axes:
    ax = Axes()
    ax.plot([5.0], [2.5], color="#1", label=label)  # one point in the middle of the box
    ax.legend(size=size)
    ax._map = box()  # 200 x 100 px
    return ax


def test_a_legend_goes_inside_only_when_it_fits_with_its_padding() -> None:
    def inside(label: str, size: float) -> bool:
        svg, extra = sp._place_legend(_legend_axes(label, size), 0.0, 400.0, 200.0)
        assert svg.startswith('<g class="legend">')
        return extra == 0.0

    # width: 46 px + the label; it fits in 200 - 2 x 6 = 188 px
    assert inside("W" * 14 + "a", 10.0)  # 185.2 px
    assert not inside("W" * 15, 10.0)  # 188.5 px
    # height: 10 px + 1.35 em a line; it fits in 100 - 12 = 88 px
    assert inside("a\nb\nc\nd\ne", 11.0)  # 84.25 px
    assert not inside("a\nb\nc\nd\ne", 12.0)  # 91 px


def test_a_legend_that_covers_any_data_goes_below() -> None:
    class Specks(sp._Artist):
        def obstacles(self, m: sp._Map) -> np.ndarray:
            # half a square pixel inside each place's box
            rows = []
            for loc in sp._LOCS:
                x0, y0, _, _ = sp._loc_box(loc, m, w, h, 6.0)
                rows.append([x0 + 1, y0 + 1, x0 + 1.5, y0 + 2])
            return np.array(rows)

    ax = Axes()
    ax.plot([0.0], [0.0], color="#1", label="a")
    ax.artists[0].x = np.array([NAN])
    ax.artists.append(Specks())
    ax.legend()
    ax._map = box()
    w, h = sp._legend_size(ax._legend_entries(), 11.0)
    _, extra = sp._place_legend(ax, 0.0, 400.0, 200.0)
    assert extra > 0


def test_a_hidden_panel_draws_no_legend() -> None:
    ax = _legend_axes("a", 10.0)
    ax.axis_off()
    assert sp._place_legend(ax, 0.0, 400.0, 200.0) == ("", 0.0)


def test_a_legend_inside_adds_no_height() -> None:
    def height(loc: str | None) -> str:
        fig = Figure(panel_width=300.0, plot_height=200.0)
        fig.axes[0].plot([0, 1], [0, 1], color="#1", label="a")
        if loc:
            fig.axes[0].legend(loc)
        return ET.fromstring(fig.to_svg("t")).get("height")

    assert height("upper left") == height(None) == "239.2"


def test_right_margin_holds_half_the_last_x_label() -> None:
    ax = Axes()
    ax.plot([0, 10], [0, 1], color="#1")
    lo = sp._layout(ax, 300.0, 200.0)
    assert lo["xt"] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    # "10" is 1.28 em = 14.08 px at 11: half + 4 = 11.04 (more than the 10 px minimum)
    assert lo["right"] == pytest.approx(11.04)


def _heat_cats(equal: bool) -> dict:
    ax = Axes()
    ax.heatmap(np.zeros((20, 10)), cmap=RDBU_R, vmin=-1, vmax=1, colorbar=False, equal=equal)
    labels = ["a"] * 10
    labels[1] = "W" * 8
    ax.set_xticks(list(range(10)), labels, size=10.0, rotation=90.0, thin=True)
    return sp._layout(ax, 300.0, 200.0)


def test_categories_are_thinned_over_the_equal_aspect_box_width() -> None:
    # 20 rows x 10 columns in a 200 px tall box: 100 px wide, 10 labels of 11.5 px need every
    # 2nd, so the wide label 1 is not shown: the bottom holds "a" (6.2 px) rotated
    assert _heat_cats(True)["bottom"] == pytest.approx(8 + 6.2 + 2 + 4)
    # without equal aspect the box is wide enough for all ten, the wide one included
    assert _heat_cats(False)["bottom"] == pytest.approx(8 + 76 + 2 + 4)


def test_rotated_empty_categories_and_their_x_label() -> None:
    ax = _plain(xlabel="x")
    ax.set_xticks([], [], rotation=90.0)
    lo = sp._layout(ax, 300.0, 200.0)
    # no label: no width, one line's height times cos 90 (0), 2 px
    assert lo["bottom"] == pytest.approx(4 + 4 + 2 + 19 + 4)
    fig = Figure(panel_width=300.0, plot_height=200.0)
    fig.axes[0] = ax
    root = ET.fromstring(fig.to_svg("t"))
    (xl,) = [t for t in root.iter(NS + "text") if t.get("class") == "xlabel"]
    frame = next(r for r in root.iter(NS + "rect") if r.get("class") == "frame")
    bottom = float(frame.get("y")) + float(frame.get("height"))
    assert float(xl.get("y")) == pytest.approx(bottom + 8 + 2 + 2 + 9.6, abs=0.11)
    ax.set_xticks([], [])  # not rotated: one line of 11 px labels
    root = ET.fromstring(fig.to_svg("t"))
    (xl,) = [t for t in root.iter(NS + "text") if t.get("class") == "xlabel"]
    assert float(xl.get("y")) == pytest.approx(bottom + 8 + 13.2 + 2 + 2 + 9.6, abs=0.11)


def test_x_label_under_thinned_categories() -> None:
    fig = Figure(panel_width=300.0, plot_height=200.0)
    ax = fig.axes[0]
    ax.bar(list(range(100)), [1.0] * 100, color="#1")
    labels = ["a"] * 100
    labels[1] = "W" * 8
    ax.set_xticks(list(range(100)), labels, size=10.0, rotation=90.0, thin=True)
    ax.set(xlabel="x")
    root = ET.fromstring(fig.to_svg("t"))
    assert [t.text for t in root.iter(NS + "text") if t.get("class") == "xtick"][:2] == ["a"] * 2
    (xl,) = [t for t in root.iter(NS + "text") if t.get("class") == "xlabel"]
    frame = next(r for r in root.iter(NS + "rect") if r.get("class") == "frame")
    bottom = float(frame.get("y")) + float(frame.get("height"))
    # the wide label is thinned out: the label sits under "a" (6.2 px) rotated
    assert float(xl.get("y")) == pytest.approx(bottom + 8 + 6.2 + 2 + 2 + 9.6, abs=0.11)


def test_x_tick_labels_at_sixty_degrees_are_centred() -> None:
    fig = Figure(panel_width=300.0, plot_height=200.0)
    ax = fig.axes[0]
    ax.bar([0, 1], [1, 2], color="#1")
    ax.set_ylim(0, 2)
    ax.set_xticks([0, 1], ["AB", "c"], size=10.0, rotation=60.0)
    root = ET.fromstring(fig.to_svg("t"))
    xt = [t for t in root.iter(NS + "text") if t.get("class") == "xtick"]
    assert float(xt[0].get("y")) == pytest.approx(214 + 3.5, abs=0.06)


def test_titles_wrap_ten_pixels_inside_the_panel() -> None:
    # "aaaa bbbb" is (8 x 0.62 + 0.36) x 14 = 74.48 px
    title = "aaaa bbbb"
    assert sp._layout(_plain(title=title), 84.98, 200.0)["title"] == title
    assert sp._layout(_plain(title=title), 84.0, 200.0)["title"] == "aaaa\nbbbb"


def test_a_wide_title_is_kept_off_the_left_edge() -> None:
    fig = Figure(panel_width=400.0, plot_height=200.0)
    ax = fig.axes[0]
    ax.heatmap(np.zeros((2, 1)), cmap=RDBU_R, vmin=-1, vmax=1)  # a narrow box at the left
    ax.set(title="W" * 20)
    root = ET.fromstring(fig.to_svg("t"))
    (title,) = [t for t in root.iter(NS + "text") if t.get("class") == "title"]
    frame = next(r for r in root.iter(NS + "rect") if r.get("class") == "frame")
    half = 20 * 0.95 * 14 / 2
    centre = float(frame.get("x")) + float(frame.get("width")) / 2
    assert centre < half + 4 - 1  # the box's centre would put the title past the left edge
    assert float(title.get("x")) == pytest.approx(half + 4, abs=0.06)


def test_colour_bar_parts_join_without_separators() -> None:
    heat = sp._Heat(values=np.zeros((1, 1)), cmap=PURPLES, vmin=0.0, vmax=1.0)
    m = sp._Map(-0.5, 0.5, -0.5, 0.5, 100.0, 20.0, 100.0, 100.0, invert_y=True)
    svg = sp._colorbar(heat, m)
    assert svg.startswith('<g class="colorbar" shape-rendering="crispEdges"><rect x="214.0"')
    assert '"/><rect' in svg and svg.endswith('stroke="#444444" stroke-width="0.8"/></g>')


def test_nice_step_defaults_to_eight_intervals() -> None:
    # 0.9 / 8 = 0.1125 -> 0.2 (nine intervals would allow 0.1)
    assert sp.nice_step(0.9) == 0.2 and sp.nice_step(0.9, 9) == pytest.approx(0.1)


def test_single_tick_labels_take_their_decimals_from_the_value() -> None:
    assert sp.format_ticks([0.5]) == ["0.5"] and sp.format_ticks([20.0]) == ["20"]
    assert sp.format_ticks([]) == []


def test_nice_ticks_of_degenerate_and_tiny_ranges() -> None:
    assert sp.nice_ticks(0.0, math.inf) == [] and sp.nice_ticks(NAN, 1.0) == []
    assert sp.nice_ticks(-math.inf, 0.0) == [] and sp.nice_ticks(2.0, 1.0) == []
    assert sp.nice_ticks(1.0, 1.0) == [1.0]  # an empty range still holds its own tick
    # eight intervals by default: 0.9 / 8 -> 0.2
    assert sp.nice_ticks(0.0, 0.9) == [0.0, 0.2, 0.4, 0.6, 0.8]
    # 4e-8 in 8 intervals: steps of 5e-9, kept to their own digits
    assert sp.nice_ticks(0.0, 4e-8) == pytest.approx([k * 5e-9 for k in range(9)], abs=1e-20)


def test_band_obstacles_skip_points_missing_below() -> None:
    band = sp._Band(color="#2", x=np.array([0.0, 1, 2]), lo=np.array([0.0, NAN, 0]),
                    hi=np.array([1.0, 1, 1]))  # fmt: skip
    # x 0 and 2 only: one 40 px step in 40 // 6 + 1 = 7 samples, from hi 100 px to lo 120 px
    step = 40 / 6
    assert close(
        band.obstacles(box()), [[100 + k * step, 100, 100 + (k + 1) * step, 120] for k in range(6)]
    )


def test_heat_values_beyond_the_scale_share_its_top_colour_and_run() -> None:
    heat = sp._Heat(values=np.array([[5.0, 2.0]]), cmap=RDBU_R, vmin=-1.0, vmax=1.0, levels=4)
    m = sp._Map(-0.5, 1.5, -0.5, 0.5, 0.0, 0.0, 20.0, 10.0, invert_y=True)
    assert heat.svg(m).endswith('<path fill="#67001f" d="M0 0h2v1h-2z"/></g>')


def test_a_legend_exactly_as_large_as_the_padded_box_fits() -> None:
    ax = _legend_axes("a\nb", 10.0)
    w, h = sp._legend_size(ax._legend_entries(), 10.0)
    ax._map = sp._Map(0.0, 10.0, 0.0, 5.0, 100.0, 20.0, w + 12.0, h + 12.0)
    assert (ax._map.width - 2 * 6.0, ax._map.height - 2 * 6.0) == (w, h)
    # the box is all legend: drop the line's one point so that the legend covers nothing
    ax.artists[0].x = np.array([NAN])
    svg, extra = sp._place_legend(ax, 0.0, 400.0, 200.0)
    assert extra == 0.0 and '<rect x="106.0" y="26.0"' in svg
