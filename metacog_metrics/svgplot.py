"""Small inline-SVG plots for ``report.html``, written by the project itself.

Why this module exists: ``metacog analyze`` has a budget of about 3 s end to end on two cores
(20 models x 524 items), and matplotlib alone cost about 3 s of it for one group's four PNG
figures: ~0.55 s to import, ~1.4 s of constrained layout and ~1.6 s of Agg drawing. The report's
figures are plain (lines with markers, scatter, histograms, bands, reference lines, heatmaps,
box plots), so they are written here as inline SVG in milliseconds: vector, small, text that can
be searched and copied, a ``<title>`` for screen readers, and no image decoding in the browser.
matplotlib stays where it is not on the ``analyze`` path (``metacog power``, the RLMF plots).

The model follows matplotlib's where it matters: a :class:`Figure` of panels side by side, each an
:class:`Axes` with linear data coordinates, autoscaled limits with a 5% margin (histograms and
bars stick to 0), "nice" ticks in 1-2-5 steps, legends placed where they cover no data (else
below the panel). Sizes are CSS pixels; text widths are estimated from character classes (no
font metrics), generously, so labels get room rather than overlap.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "PURPLES",
    "RDBU_R",
    "Axes",
    "Colormap",
    "Figure",
    "FigureStack",
    "escape",
    "format_ticks",
    "grey",
    "marker_radius",
    "nice_step",
    "nice_ticks",
    "text_width",
]

FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"
TICK_SIZE = 11.0
LABEL_SIZE = 12.0
TITLE_SIZE = 14.0
LEGEND_SIZE = 11.0
TEXT_COLOR = "#222222"
AXIS_COLOR = "#444444"
TICK_LEN = 4.0
PAD = 4.0
#: Radius in px of a matplotlib marker of ``s`` points^2 drawn at 96 dpi.
PT = 96.0 / 72.0


def marker_radius(s: float) -> float:
    """The radius in pixels of a matplotlib ``scatter`` marker of area ``s`` (points^2)."""
    return math.sqrt(s) / 2.0 * PT


# --------------------------------------------------------------------------------------------
# Colours
# --------------------------------------------------------------------------------------------


def grey(level: float) -> str:
    """A grey as matplotlib's ``"0.6"`` string means it: 0 black, 1 white."""
    v = round(255 * min(1.0, max(0.0, level)))
    return f"#{v:02x}{v:02x}{v:02x}"


def _rgb(color: str) -> tuple[int, int, int]:
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


@dataclass(frozen=True)
class Colormap:
    """A colour scale: equally spaced stops, linear interpolation in RGB between them."""

    name: str
    stops: tuple[str, ...]

    def __call__(self, t: float) -> str:
        """The colour at ``t`` in [0, 1] (clipped), as ``#rrggbb``."""
        if not math.isfinite(t):
            return "#ffffff"
        t = min(1.0, max(0.0, t)) * (len(self.stops) - 1)
        i = min(int(t), len(self.stops) - 2)
        f = t - i
        a, b = _rgb(self.stops[i]), _rgb(self.stops[i + 1])
        r, g, bl = (round(x + (y - x) * f) for x, y in zip(a, b, strict=True))
        return f"#{r:02x}{g:02x}{bl:02x}"


#: ColorBrewer's RdBu (11 classes), reversed as matplotlib's ``RdBu_r``: blue low, red high.
RDBU_R = Colormap(
    "RdBu_r",
    (
        "#053061",
        "#2166ac",
        "#4393c3",
        "#92c5de",
        "#d1e5f0",
        "#f7f7f7",
        "#fddbc7",
        "#f4a582",
        "#d6604d",
        "#b2182b",
        "#67001f",
    ),
)
#: ColorBrewer's Purples (9 classes), as matplotlib's ``Purples``.
PURPLES = Colormap(
    "Purples",
    (
        "#fcfbfd",
        "#efedf5",
        "#dadaeb",
        "#bcbddc",
        "#9e9ac8",
        "#807dba",
        "#6a51a3",
        "#54278f",
        "#3f007d",
    ),
)


# --------------------------------------------------------------------------------------------
# Ticks and text
# --------------------------------------------------------------------------------------------


def nice_step(span: float, max_bins: int = 8) -> float:
    """The smallest step of the form {1, 2, 5} x 10^k that cuts ``span`` into at most
    ``max_bins`` intervals."""
    if not (span > 0 and math.isfinite(span)):
        return 1.0
    raw = span / max(1, max_bins)
    base = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * base >= raw * (1 - 1e-9):
            return m * base
    return 10.0 * base  # pragma: no cover (the loop always returns)


def nice_ticks(lo: float, hi: float, max_bins: int = 8) -> list[float]:
    """The multiples of :func:`nice_step` that lie in ``[lo, hi]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        return []
    step = nice_step(hi - lo, max_bins)
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    digits = max(0, -math.floor(math.log10(step))) + 1
    return [round(k * step, digits + 6) for k in range(first, last + 1)]


def format_ticks(ticks: Sequence[float]) -> list[str]:
    """Tick labels with as many decimals as the step needs and a true minus sign."""
    if not ticks:
        return []
    step = min((b - a for a, b in itertools.pairwise(ticks)), default=0.0)
    ref = step if step > 0 else max(abs(t) for t in ticks) or 1.0
    digits = max(0, -math.floor(math.log10(ref) + 1e-9))
    out = []
    for t in ticks:
        s = f"{t:.{digits}f}"
        if float(s) == 0:
            s = s.lstrip("-")
        out.append(s.replace("-", "\u2212"))
    return out


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def escape(text: Any) -> str:
    """``text`` for an SVG/XML text node or attribute: ``& < > " '`` escaped, control
    characters (not allowed in XML) replaced."""
    return html.escape(_CONTROL.sub("\ufffd", str(text)), quote=True)


_NARROW = frozenset("iljtfrI.,:;|!'`()[]{} ")
_WIDE = frozenset("mwMW@%")


def text_width(text: str, size: float) -> float:
    """An estimate (on the wide side) of the width of ``text`` set in DejaVu Sans at ``size``."""
    lines = str(text).split("\n")
    best = 0.0
    for line in lines:
        w = 0.0
        for ch in line:
            if ch in _NARROW:
                w += 0.36
            elif ch in _WIDE:
                w += 0.95
            elif ch.isupper():
                w += 0.74
            elif ch.isdigit():
                w += 0.64
            else:
                w += 0.62
        best = max(best, w)
    return best * size


def wrap(text: str, max_px: float, size: float) -> str:
    """``text`` with line breaks added at spaces so no line is estimated wider than ``max_px``."""
    out = []
    for para in str(text).split("\n"):
        line = ""
        for word in para.split(" "):
            cand = f"{line} {word}" if line else word
            if line and text_width(cand, size) > max_px:
                out.append(line)
                line = word
            else:
                line = cand
        out.append(line)
    return "\n".join(out)


def _f(v: float) -> str:
    return f"{v:.1f}"


def _text(
    x: float,
    y: float,
    s: str,
    size: float,
    *,
    anchor: str = "middle",
    color: str = TEXT_COLOR,
    rotate: float | None = None,
    valign: str = "baseline",
    weight: str | None = None,
    cls: str | None = None,
) -> str:
    """An SVG ``<text>``; ``\\n`` starts a new line (``tspan``). ``valign``: the anchor point is
    the first line's ``baseline``, the block's ``top``, ``middle`` or ``bottom``."""
    lines = str(s).split("\n")
    lh = 1.2 * size
    n = len(lines)
    if valign == "top":
        y0 = y + 0.8 * size
    elif valign == "middle":
        y0 = y + 0.35 * size - (n - 1) * lh / 2
    elif valign == "bottom":
        y0 = y - 0.25 * size - (n - 1) * lh
    else:
        y0 = y
    attrs = [f'x="{_f(x)}"', f'y="{_f(y0)}"', f'font-size="{size:g}"']
    if anchor != "start":
        attrs.append(f'text-anchor="{anchor}"')
    if color != TEXT_COLOR:
        attrs.append(f'fill="{color}"')
    if weight:
        attrs.append(f'font-weight="{weight}"')
    if rotate:
        attrs.append(f'transform="rotate({rotate:g} {_f(x)} {_f(y)})"')
    if cls:
        attrs.append(f'class="{cls}"')
    if n == 1:
        body = escape(lines[0])
    else:
        body = "".join(
            f'<tspan x="{_f(x)}" dy="{0 if i == 0 else lh:.1f}">{escape(t)}</tspan>'
            for i, t in enumerate(lines)
        )
    return f"<text {' '.join(attrs)}>{body}</text>"


def _n_lines(s: str | None) -> int:
    return 0 if not s else len(s.split("\n"))


def _dash(ls: str, lw: float) -> str:
    if ls in (":", "dotted"):
        return f' stroke-dasharray="{_f(lw)} {_f(2 * lw + 1)}"'
    if ls in ("--", "dashed"):
        return f' stroke-dasharray="{_f(4 * lw + 2)} {_f(2 * lw + 1)}"'
    return ""


# --------------------------------------------------------------------------------------------
# Artists
# --------------------------------------------------------------------------------------------


@dataclass
class _Map:
    """Data to pixel coordinates for one plot box."""

    x0: float
    x1: float
    y0: float
    y1: float
    left: float
    top: float
    width: float
    height: float
    invert_y: bool = False

    def fx(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return self.left + (x - self.x0) / (self.x1 - self.x0) * self.width

    def fy(self, y: Any) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        frac = (y - self.y0) / (self.y1 - self.y0)
        return self.top + (frac if self.invert_y else 1.0 - frac) * self.height


def _finite(*arrays: np.ndarray) -> np.ndarray:
    ok = np.ones(arrays[0].shape, dtype=bool)
    for a in arrays:
        ok &= np.isfinite(a)
    return ok


def _runs(ok: np.ndarray) -> list[tuple[int, int]]:
    """Start and end (exclusive) of each run of True."""
    out, start = [], None
    for i, v in enumerate(ok):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(ok)))
    return out


def _seg_points(px: np.ndarray, py: np.ndarray, step: float = 4.0) -> np.ndarray:
    """Points every ``step`` px along a polyline (for the legend's overlap test)."""
    pts = [np.column_stack([px, py])]
    for i in range(len(px) - 1):
        d = math.hypot(px[i + 1] - px[i], py[i + 1] - py[i])
        k = int(d // step)
        if k > 1:
            t = np.linspace(0, 1, k + 1)[1:-1]
            pts.append(
                np.column_stack([px[i] + t * (px[i + 1] - px[i]), py[i] + t * (py[i + 1] - py[i])])
            )
    return np.vstack(pts)


def _point_rects(pts: np.ndarray, r: float) -> np.ndarray:
    return np.column_stack([pts[:, 0] - r, pts[:, 1] - r, pts[:, 0] + r, pts[:, 1] + r])


@dataclass
class _Artist:
    color: str = "#000000"
    alpha: float = 1.0
    label: str | None = None

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        """Data x and y values to autoscale on, and the sticky edges ("y0" etc.)."""
        return np.array([]), np.array([]), set()

    def svg(self, m: _Map) -> str:
        raise NotImplementedError

    def obstacles(self, m: _Map) -> np.ndarray:
        """Pixel rectangles (x0, y0, x1, y1) the legend should not cover."""
        return np.zeros((0, 4))

    def handle(self, x: float, y: float) -> str:
        """The legend's sample of this artist, centred at (x, y), 24 px wide."""
        return ""


def _marker_svg(marker: str, cx: Any, cy: Any, r: Any, tips: Sequence[str] | None = None) -> str:
    cx, cy = np.atleast_1d(cx), np.atleast_1d(cy)
    r = np.broadcast_to(np.asarray(r, dtype=float), cx.shape)
    out = []
    for i in range(cx.size):
        tip = f"<title>{escape(tips[i])}</title>" if tips is not None else ""
        end = f">{tip}</circle>" if tip else "/>"
        if marker == "s":
            side = 1.8 * r[i]
            end = f">{tip}</rect>" if tip else "/>"
            out.append(
                f'<rect x="{_f(cx[i] - side / 2)}" y="{_f(cy[i] - side / 2)}" '
                f'width="{_f(side)}" height="{_f(side)}"{end}'
            )
        else:
            out.append(f'<circle cx="{_f(cx[i])}" cy="{_f(cy[i])}" r="{_f(r[i])}"{end}')
    return "".join(out)


@dataclass
class _Line(_Artist):
    x: np.ndarray = field(default_factory=lambda: np.array([]))
    y: np.ndarray = field(default_factory=lambda: np.array([]))
    lw: float = 1.5
    ls: str = "-"
    marker: str | None = None
    radius: float = 4.0

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        ok = _finite(self.x, self.y)
        return self.x[ok], self.y[ok], set()

    def svg(self, m: _Map) -> str:
        px, py = m.fx(self.x), m.fy(self.y)
        ok = _finite(px, py)
        op = f' stroke-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        parts = [
            f'<g class="line" fill="none" stroke="{self.color}" '
            f'stroke-width="{self.lw:g}"{op}{_dash(self.ls, self.lw)} '
            f'stroke-linejoin="round">'
        ]
        if self.ls not in ("", "none"):
            for a, b in _runs(ok):
                if b - a >= 2:
                    d = "M" + "L".join(f"{_f(px[i])} {_f(py[i])}" for i in range(a, b))
                    parts.append(f'<path d="{d}"/>')
        if self.marker:
            parts.append(
                f'<g fill="{self.color}" stroke="none">'
                + _marker_svg(self.marker, px[ok], py[ok], self.radius)
                + "</g>"
            )
        return "".join(parts) + "</g>"

    def obstacles(self, m: _Map) -> np.ndarray:
        px, py = m.fx(self.x), m.fy(self.y)
        rects = []
        for a, b in _runs(_finite(px, py)):
            pts = _seg_points(px[a:b], py[a:b])
            rects.append(_point_rects(pts, max(self.lw, self.radius if self.marker else 0)))
        return np.vstack(rects) if rects else np.zeros((0, 4))

    def handle(self, x: float, y: float) -> str:
        op = f' stroke-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        out = (
            f'<path d="M{_f(x - 12)} {_f(y)}h24" stroke="{self.color}" '
            f'stroke-width="{self.lw:g}"{op}{_dash(self.ls, self.lw)}/>'
        )
        if self.marker:
            out += f'<g fill="{self.color}">' + _marker_svg(self.marker, x, y, self.radius) + "</g>"
        return out


@dataclass
class _Scatter(_Artist):
    x: np.ndarray = field(default_factory=lambda: np.array([]))
    y: np.ndarray = field(default_factory=lambda: np.array([]))
    radius: np.ndarray | float = 4.0
    marker: str = "o"
    tips: list[str] | None = None

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        ok = _finite(self.x, self.y)
        return self.x[ok], self.y[ok], set()

    def svg(self, m: _Map) -> str:
        px, py = m.fx(self.x), m.fy(self.y)
        ok = _finite(px, py)
        r = np.broadcast_to(np.asarray(self.radius, dtype=float), px.shape)[ok]
        tips = [t for t, k in zip(self.tips, ok, strict=True) if k] if self.tips else None
        op = f' fill-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        return (
            f'<g class="scatter" fill="{self.color}"{op}>'
            + _marker_svg(self.marker, px[ok], py[ok], r, tips)
            + "</g>"
        )

    def obstacles(self, m: _Map) -> np.ndarray:
        px, py = m.fx(self.x), m.fy(self.y)
        ok = _finite(px, py)
        r = np.broadcast_to(np.asarray(self.radius, dtype=float), px.shape)[ok]
        return np.column_stack([px[ok] - r, py[ok] - r, px[ok] + r, py[ok] + r])

    def handle(self, x: float, y: float) -> str:
        r = min(5.0, float(np.max(self.radius)) if np.size(self.radius) else 4.0)
        op = f' fill-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        return f'<g fill="{self.color}"{op}>' + _marker_svg(self.marker, x, y, r) + "</g>"


def _patch_handle(color: str, alpha: float, x: float, y: float) -> str:
    op = f' fill-opacity="{alpha:g}"' if alpha < 1 else ""
    return f'<rect x="{_f(x - 10)}" y="{_f(y - 5)}" width="20" height="10" fill="{color}"{op}/>'


@dataclass
class _Hist(_Artist):
    edges: np.ndarray = field(default_factory=lambda: np.array([]))
    counts: np.ndarray = field(default_factory=lambda: np.array([]))

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        return self.edges, np.concatenate([[0.0], self.counts]), {"y0"}

    def svg(self, m: _Map) -> str:
        px, py, base = m.fx(self.edges), m.fy(self.counts), float(m.fy(0.0))
        d = [f"M{_f(px[0])} {_f(base)}"]
        for i, h in enumerate(py):
            d.append(f"V{_f(h)}H{_f(px[i + 1])}")
        d.append(f"V{_f(base)}Z")
        op = f' fill-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        return f'<path class="hist" fill="{self.color}"{op} d="{"".join(d)}"/>'

    def obstacles(self, m: _Map) -> np.ndarray:
        px, py, base = m.fx(self.edges), m.fy(self.counts), float(m.fy(0.0))
        keep = self.counts > 0
        return np.column_stack(
            [px[:-1][keep], np.minimum(py, base)[keep], px[1:][keep], np.maximum(py, base)[keep]]
        )

    def handle(self, x: float, y: float) -> str:
        return _patch_handle(self.color, self.alpha, x, y)


@dataclass
class _Bars(_Artist):
    x: np.ndarray = field(default_factory=lambda: np.array([]))
    heights: np.ndarray = field(default_factory=lambda: np.array([]))
    width: float = 0.8

    def _rects(self) -> np.ndarray:
        ok = _finite(self.x, self.heights)
        x, h = self.x[ok], self.heights[ok]
        return np.column_stack(
            [x - self.width / 2, np.minimum(h, 0), x + self.width / 2, np.maximum(h, 0)]
        )

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        r = self._rects()
        return r[:, [0, 2]].ravel(), np.concatenate([[0.0], r[:, [1, 3]].ravel()]), {"y0"}

    def _pixel(self, m: _Map) -> np.ndarray:
        r = self._rects()
        x0, x1 = m.fx(r[:, 0]), m.fx(r[:, 2])
        ya, yb = m.fy(r[:, 1]), m.fy(r[:, 3])
        return np.column_stack([x0, np.minimum(ya, yb), x1, np.maximum(ya, yb)])

    def svg(self, m: _Map) -> str:
        op = f' fill-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        body = "".join(
            f'<rect x="{_f(a)}" y="{_f(b)}" width="{_f(c - a)}" height="{_f(d - b)}"/>'
            for a, b, c, d in self._pixel(m)
        )
        return f'<g class="bars" fill="{self.color}"{op}>{body}</g>'

    def obstacles(self, m: _Map) -> np.ndarray:
        return self._pixel(m)

    def handle(self, x: float, y: float) -> str:
        return _patch_handle(self.color, self.alpha, x, y)


@dataclass
class _Band(_Artist):
    x: np.ndarray = field(default_factory=lambda: np.array([]))
    lo: np.ndarray = field(default_factory=lambda: np.array([]))
    hi: np.ndarray = field(default_factory=lambda: np.array([]))

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        ok = _finite(self.x, self.lo, self.hi)
        return self.x[ok], np.concatenate([self.lo[ok], self.hi[ok]]), set()

    def svg(self, m: _Map) -> str:
        px, pl, ph = m.fx(self.x), m.fy(self.lo), m.fy(self.hi)
        paths = []
        for a, b in _runs(_finite(px, pl, ph)):
            up = "L".join(f"{_f(px[i])} {_f(ph[i])}" for i in range(a, b))
            down = "L".join(f"{_f(px[i])} {_f(pl[i])}" for i in range(b - 1, a - 1, -1))
            paths.append(f"M{up}L{down}Z")
        op = f' fill-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        return f'<path class="band" fill="{self.color}"{op} d="{"".join(paths)}"/>'

    def obstacles(self, m: _Map) -> np.ndarray:
        px, pl, ph = m.fx(self.x), m.fy(self.lo), m.fy(self.hi)
        ok = _finite(px, pl, ph)
        px, pl, ph = px[ok], pl[ok], ph[ok]
        if px.size < 2:
            return np.zeros((0, 4))
        # Sample each segment so a sloped band is not one big rectangle.
        rows = []
        for i in range(px.size - 1):
            k = max(2, int(abs(px[i + 1] - px[i]) // 6) + 1)
            t = np.linspace(0, 1, k)
            xs = px[i] + t * (px[i + 1] - px[i])
            lo = pl[i] + t * (pl[i + 1] - pl[i])
            hi = ph[i] + t * (ph[i + 1] - ph[i])
            rows.append(
                np.column_stack([xs[:-1], np.minimum(lo, hi)[:-1], xs[1:], np.maximum(lo, hi)[:-1]])
            )
        return np.vstack(rows)

    def handle(self, x: float, y: float) -> str:
        return _patch_handle(self.color, self.alpha, x, y)


@dataclass
class _RefLine(_Artist):
    value: float = 0.0
    vertical: bool = False
    lw: float = 0.8
    ls: str = "-"

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        v = np.array([self.value]) if math.isfinite(self.value) else np.array([])
        return (v, np.array([]), set()) if self.vertical else (np.array([]), v, set())

    def _ends(self, m: _Map) -> tuple[float, float, float, float]:
        if self.vertical:
            x = float(m.fx(self.value))
            return x, m.top, x, m.top + m.height
        y = float(m.fy(self.value))
        return m.left, y, m.left + m.width, y

    def svg(self, m: _Map) -> str:
        if not math.isfinite(self.value):
            return ""
        x0, y0, x1, y1 = self._ends(m)
        op = f' stroke-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        return (
            f'<path class="refline" d="M{_f(x0)} {_f(y0)}L{_f(x1)} {_f(y1)}" '
            f'stroke="{self.color}" stroke-width="{self.lw:g}"{op}'
            f"{_dash(self.ls, self.lw)}/>"
        )

    def obstacles(self, m: _Map) -> np.ndarray:
        if not math.isfinite(self.value):
            return np.zeros((0, 4))
        x0, y0, x1, y1 = self._ends(m)
        w = max(self.lw, 1.0)
        return np.array([[x0 - w, y0 - w, x1 + w, y1 + w]])

    def handle(self, x: float, y: float) -> str:
        return (
            f'<path d="M{_f(x - 12)} {_f(y)}h24" stroke="{self.color}" '
            f'stroke-width="{self.lw:g}"{_dash(self.ls, self.lw)}/>'
        )


@dataclass
class _Segments(_Artist):
    """Separate straight segments (x0, y0) - (x1, y1): error bars, connectors, whiskers."""

    seg: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    lw: float = 1.0
    cls: str = "segments"

    def _ok(self) -> np.ndarray:
        return self.seg[np.isfinite(self.seg).all(axis=1)]

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        s = self._ok()
        return s[:, [0, 2]].ravel(), s[:, [1, 3]].ravel(), set()

    def svg(self, m: _Map) -> str:
        s = self._ok()
        if not len(s):
            return ""
        a, b, c, d = m.fx(s[:, 0]), m.fy(s[:, 1]), m.fx(s[:, 2]), m.fy(s[:, 3])
        path = "".join(f"M{_f(a[i])} {_f(b[i])}L{_f(c[i])} {_f(d[i])}" for i in range(len(s)))
        op = f' stroke-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        return (
            f'<path class="{self.cls}" d="{path}" stroke="{self.color}" '
            f'stroke-width="{self.lw:g}"{op} fill="none"/>'
        )

    def obstacles(self, m: _Map) -> np.ndarray:
        s = self._ok()
        rows = []
        for a, b, c, d in zip(
            m.fx(s[:, 0]), m.fy(s[:, 1]), m.fx(s[:, 2]), m.fy(s[:, 3]), strict=True
        ):
            rows.append(_point_rects(_seg_points(np.array([a, c]), np.array([b, d])), self.lw))
        return np.vstack(rows) if rows else np.zeros((0, 4))


@dataclass
class _Text(_Artist):
    x: float = 0.0
    y: float = 0.0
    s: str = ""
    size: float = TICK_SIZE
    anchor: str = "middle"
    valign: str = "middle"

    def svg(self, m: _Map) -> str:
        return _text(
            float(m.fx(self.x)),
            float(m.fy(self.y)),
            self.s,
            self.size,
            anchor=self.anchor,
            color=self.color,
            valign=self.valign,
        )

    def obstacles(self, m: _Map) -> np.ndarray:
        x, y = float(m.fx(self.x)), float(m.fy(self.y))
        w, h = text_width(self.s, self.size), 1.2 * self.size * _n_lines(self.s)
        x0 = x - w / 2 if self.anchor == "middle" else x - w if self.anchor == "end" else x
        y0 = y - h / 2 if self.valign == "middle" else y - h if self.valign == "bottom" else y
        return np.array([[x0, y0, x0 + w, y0 + h]])


@dataclass
class _Heat(_Artist):
    values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    cmap: Colormap = RDBU_R
    vmin: float = -1.0
    vmax: float = 1.0
    annotate: str | None = None  # format of a number printed in each cell, e.g. "{:.0%}"
    light_above: float = 0.6  # annotation in white on cells above this share of the scale
    levels: int = 200  # colours are quantised to this many steps (same cells share one path)

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        r, c = self.values.shape
        return np.array([-0.5, c - 0.5]), np.array([-0.5, r - 0.5]), {"x0", "x1", "y0", "y1"}

    def _t(self, v: float) -> float:
        return (v - self.vmin) / (self.vmax - self.vmin)

    def svg(self, m: _Map) -> str:
        r, c = self.values.shape
        # Cells at integer coordinates, one path per (quantised) colour, runs of a colour in a
        # row merged: a 100 x 100 matrix stays ~100 kB.
        ok = np.isfinite(self.values)
        t = np.clip(
            (np.where(ok, self.values, self.vmin) - self.vmin) / (self.vmax - self.vmin), 0.0, 1.0
        )
        q = np.where(ok, np.round(t * self.levels).astype(int), -1)
        lut = {k: self.cmap(k / self.levels) for k in np.unique(q[ok]).tolist()}
        by_color: dict[str, list[str]] = {}
        for i in range(r):
            j = 0
            while j < c:
                if q[i, j] < 0:
                    j += 1
                    continue
                k = j + 1
                while k < c and q[i, k] == q[i, j]:
                    k += 1
                by_color.setdefault(lut[int(q[i, j])], []).append(f"M{j} {i}h{k - j}v1h{j - k}z")
                j = k
        sx = m.width / (m.x1 - m.x0)
        sy = m.height / (m.y1 - m.y0)
        # Cell (row i, column j) covers data x in [j - 0.5, j + 0.5]; y likewise, row 0 on top.
        x0, y0 = float(m.fx(-0.5)), float(m.fy(-0.5))  # heatmap() inverts the y axis
        paths = "".join(f'<path fill="{col}" d="{"".join(d)}"/>' for col, d in by_color.items())
        out = [
            f'<g class="heatmap" shape-rendering="crispEdges" '
            f'transform="translate({_f(x0)} {_f(y0)}) scale({sx:.4f} {sy:.4f})">'
            f"{paths}</g>"
        ]
        if self.annotate:
            size = min(TICK_SIZE, 0.45 * min(sx, sy))
            for i in range(r):
                for j in range(c):
                    v = self.values[i, j]
                    if math.isfinite(v):
                        light = self._t(v) > self.light_above
                        out.append(
                            _text(
                                float(m.fx(j)),
                                float(m.fy(i)),
                                self.annotate.format(v),
                                size,
                                valign="middle",
                                color="#ffffff" if light else "#000000",
                            )
                        )
        return "".join(out)


# --------------------------------------------------------------------------------------------
# Axes and Figure
# --------------------------------------------------------------------------------------------


@dataclass
class _Cat:
    """Category ticks: labels at given data positions."""

    positions: list[float]
    labels: list[str]
    size: float = TICK_SIZE
    rotation: float = 0.0
    thin: bool = False


@dataclass
class _Legend:
    loc: str = "best"
    size: float = LEGEND_SIZE
    frame: bool = True


class Axes:
    """One panel: a plot box with linear axes, its artists, ticks, labels and legend.

    Methods mirror matplotlib's names and meanings (``plot``, ``scatter``, ``hist``, ``bar``,
    ``fill_between``, ``axhline``, ``axvline``, ``boxplot``, ``text``, ``set_xticks`` ...).
    Colours are ``#rrggbb`` strings; sizes are pixels.
    """

    def __init__(self) -> None:
        self.artists: list[_Artist] = []
        self.xlim: tuple[float, float] | None = None
        self.ylim: tuple[float, float] | None = None
        self.xlabel: str | None = None
        self.ylabel: str | None = None
        self.title: str | None = None
        self.xcat: _Cat | None = None
        self.ycat: _Cat | None = None
        self.invert_y = False
        self.equal = False
        self.visible = True
        self.legend_spec: _Legend | None = None
        self.colorbar: _Heat | None = None
        # Filled in by Figure.to_svg:
        self._map: _Map | None = None

    # ---- artists ----------------------------------------------------------------------------

    def plot(
        self,
        x: Any,
        y: Any,
        *,
        color: str,
        lw: float = 1.5,
        ls: str = "-",
        marker: str | None = None,
        radius: float = 4.0,
        alpha: float = 1.0,
        label: str | None = None,
    ) -> None:
        """A line through (x, y) (broken at non-finite values), optionally with markers."""
        self.artists.append(
            _Line(
                color=color,
                alpha=alpha,
                label=label,
                x=_arr(x),
                y=_arr(y),
                lw=lw,
                ls=ls,
                marker=marker,
                radius=radius,
            )
        )

    def scatter(
        self,
        x: Any,
        y: Any,
        *,
        color: str,
        radius: Any = 4.0,
        marker: str = "o",
        alpha: float = 1.0,
        label: str | None = None,
        tips: Sequence[str] | None = None,
    ) -> None:
        """Markers (``"o"`` circle, ``"s"`` square) of ``radius`` px (scalar or per point);
        ``tips`` are shown on hover."""
        self.artists.append(
            _Scatter(
                color=color,
                alpha=alpha,
                label=label,
                x=_arr(x),
                y=_arr(y),
                radius=np.asarray(radius, dtype=float),
                marker=marker,
                tips=list(tips) if tips is not None else None,
            )
        )

    def hist(
        self,
        values: Any,
        *,
        bins: int = 40,
        color: str,
        alpha: float = 1.0,
        label: str | None = None,
    ) -> None:
        """A histogram of the finite ``values`` over ``bins`` equal bins of their own range,
        drawn as one filled step outline (overlapping histograms show through with alpha)."""
        v = _arr(values)
        v = v[np.isfinite(v)]
        if not v.size:
            return
        counts, edges = np.histogram(v, bins=bins)
        self.artists.append(
            _Hist(
                color=color,
                alpha=alpha,
                label=label,
                edges=edges.astype(float),
                counts=counts.astype(float),
            )
        )

    def bar(
        self,
        x: Any,
        heights: Any,
        width: float = 0.8,
        *,
        color: str,
        alpha: float = 1.0,
        label: str | None = None,
    ) -> None:
        """Vertical bars centred at ``x`` from 0 to ``heights`` (non-finite ones left out)."""
        self.artists.append(
            _Bars(
                color=color,
                alpha=alpha,
                label=label,
                x=_arr(x),
                heights=_arr(heights),
                width=width,
            )
        )

    def fill_between(
        self, x: Any, lo: Any, hi: Any, *, color: str, alpha: float = 0.25, label: str | None = None
    ) -> None:
        """The band between ``lo`` and ``hi`` over ``x`` (gaps at non-finite values)."""
        self.artists.append(
            _Band(
                color=color,
                alpha=alpha,
                label=label,
                x=_arr(x),
                lo=_arr(lo),
                hi=_arr(hi),
            )
        )

    def axhline(
        self, y: float, *, color: str, lw: float = 0.8, ls: str = "-", label: str | None = None
    ) -> None:
        """A horizontal reference line across the plot box."""
        self.artists.append(_RefLine(color=color, label=label, value=float(y), lw=lw, ls=ls))

    def axvline(
        self, x: float, *, color: str, lw: float = 0.8, ls: str = "-", label: str | None = None
    ) -> None:
        """A vertical reference line across the plot box."""
        self.artists.append(
            _RefLine(color=color, label=label, value=float(x), vertical=True, lw=lw, ls=ls)
        )

    def segments(
        self,
        seg: Any,
        *,
        color: str,
        lw: float = 1.0,
        alpha: float = 1.0,
        label: str | None = None,
        cls: str = "segments",
    ) -> None:
        """Straight segments, one row ``(x0, y0, x1, y1)`` each."""
        s = np.asarray(seg, dtype=float).reshape(-1, 4)
        self.artists.append(_Segments(color=color, alpha=alpha, label=label, seg=s, lw=lw, cls=cls))

    def errorbar_x(
        self,
        x: Any,
        y: Any,
        low: Any,
        high: Any,
        *,
        color: str,
        radius: float = 2.7,
        lw: float = 1.0,
        label: str | None = None,
    ) -> None:
        """Points at (x, y) with horizontal bars from ``low`` to ``high`` (absolute values)."""
        x, y, lo, hi = _arr(x), _arr(y), _arr(low), _arr(high)
        lo = np.where(np.isfinite(lo), lo, x)
        hi = np.where(np.isfinite(hi), hi, x)
        self.segments(np.column_stack([lo, y, hi, y]), color=color, lw=lw, cls="errorbar")
        self.artists.append(
            _Line(color=color, label=label, x=x, y=y, lw=lw, ls="", marker="o", radius=radius)
        )

    def boxplot(
        self, data: Sequence[Any], *, colors: Sequence[str], alpha: float = 0.6, width: float = 0.6
    ) -> None:
        """Box plots at x = 1, 2, ...: quartiles (linear interpolation, as NumPy and
        matplotlib), whiskers to the furthest points within 1.5 IQR, outliers as open circles,
        the median as a dark line."""
        for k, (vals, color) in enumerate(zip(data, colors, strict=True), start=1):
            v = _arr(vals)
            v = v[np.isfinite(v)]
            if not v.size:
                continue
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            iqr = q3 - q1
            lo_w = v[v >= q1 - 1.5 * iqr].min()
            hi_w = v[v <= q3 + 1.5 * iqr].max()
            out = v[(v < lo_w) | (v > hi_w)]
            self.artists.append(
                _Box(
                    color=color,
                    alpha=alpha,
                    x=float(k),
                    q1=float(q1),
                    med=float(med),
                    q3=float(q3),
                    lo=float(lo_w),
                    hi=float(hi_w),
                    width=width,
                    outliers=out,
                )
            )

    def text(
        self,
        x: float,
        y: float,
        s: str,
        *,
        color: str = TEXT_COLOR,
        size: float = TICK_SIZE,
        anchor: str = "middle",
        valign: str = "middle",
    ) -> None:
        """Text at data coordinates (x, y)."""
        self.artists.append(
            _Text(color=color, x=x, y=y, s=s, size=size, anchor=anchor, valign=valign)
        )

    def heatmap(
        self,
        values: Any,
        *,
        cmap: Colormap,
        vmin: float,
        vmax: float,
        colorbar: bool = True,
        annotate: str | None = None,
        equal: bool = True,
    ) -> None:
        """A matrix as coloured cells, row 0 on top (cell (i, j) centred at x = j, y = i),
        with a colour bar on the right; ``annotate`` formats each cell's value inside it."""
        heat = _Heat(
            values=np.asarray(values, dtype=float),
            cmap=cmap,
            vmin=vmin,
            vmax=vmax,
            annotate=annotate,
        )
        self.artists.append(heat)
        self.invert_y = True
        self.equal = equal
        if colorbar:
            self.colorbar = heat

    # ---- axes settings ----------------------------------------------------------------------

    def set_xlim(self, lo: float, hi: float) -> None:
        self.xlim = (float(lo), float(hi))

    def set_ylim(self, lo: float, hi: float) -> None:
        self.ylim = (float(lo), float(hi))

    def set(
        self, *, xlabel: str | None = None, ylabel: str | None = None, title: str | None = None
    ) -> None:
        """Axis labels and title (``\\n`` breaks a line; long ones are wrapped)."""
        self.xlabel = xlabel if xlabel is not None else self.xlabel
        self.ylabel = ylabel if ylabel is not None else self.ylabel
        self.title = title if title is not None else self.title

    def set_xticks(
        self,
        positions: Sequence[float],
        labels: Sequence[str],
        *,
        size: float = TICK_SIZE,
        rotation: float = 0.0,
        thin: bool = False,
    ) -> None:
        """Category labels at data x ``positions``; ``rotation`` in degrees (90: vertical);
        ``thin``: show every k-th label, at most 50 and none closer than they can be read."""
        self.xcat = _Cat(
            [float(p) for p in positions], [str(s) for s in labels], size, rotation, thin
        )

    def set_yticks(
        self,
        positions: Sequence[float],
        labels: Sequence[str],
        *,
        size: float = TICK_SIZE,
        thin: bool = False,
    ) -> None:
        """Category labels at data y ``positions`` (see :meth:`set_xticks`)."""
        self.ycat = _Cat([float(p) for p in positions], [str(s) for s in labels], size, 0.0, thin)

    def invert_yaxis(self) -> None:
        """First category (smallest y) on top."""
        self.invert_y = True

    def legend(self, loc: str = "best", *, size: float = LEGEND_SIZE, frame: bool = True) -> None:
        """Show the labelled artists' legend. ``loc``: ``"best"`` (the inside corner or edge
        where it covers nothing, else below the panel), ``"below"``, or a place such as
        ``"upper left"`` (used as given)."""
        self.legend_spec = _Legend(loc, size, frame)

    def axis_off(self) -> None:
        """Draw nothing for this panel (its space stays)."""
        self.visible = False

    # ---- layout -----------------------------------------------------------------------------

    def _limits(self) -> tuple[float, float, float, float]:
        xs, ys, sx, sy = [], [], set(), set()
        for a in self.artists:
            x, y, sticky = a.extent()
            xs.append(np.asarray(x, dtype=float))
            ys.append(np.asarray(y, dtype=float))
            sx |= {s for s in sticky if s.startswith("x")}
            sy |= {s for s in sticky if s.startswith("y")}
        x0, x1 = self.xlim or _auto(np.concatenate(xs) if xs else np.array([]), sx)
        y0, y1 = self.ylim or _auto(np.concatenate(ys) if ys else np.array([]), sy)
        return x0, x1, y0, y1

    def _legend_entries(self) -> list[_Artist]:
        return [a for a in self.artists if a.label]


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float).ravel()


def _auto(v: np.ndarray, sticky: set[str]) -> tuple[float, float]:
    v = v[np.isfinite(v)]
    if not v.size:
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    if hi - lo <= 1e-12 * max(1.0, abs(lo)):
        pad = 0.5 if lo == 0 else 0.05 * abs(lo)
        return lo - pad, hi + pad
    if {"x0", "x1"} <= sticky or {"y0", "y1"} <= sticky:
        return lo, hi
    pad = 0.05 * (hi - lo)
    # Sticky at 0 (histograms, bars): no margin below a minimum of exactly 0.
    lo_s = lo if (sticky and lo == 0.0) else lo - pad
    return lo_s, hi + pad


@dataclass
class _Box(_Artist):
    x: float = 1.0
    q1: float = 0.0
    med: float = 0.0
    q3: float = 0.0
    lo: float = 0.0
    hi: float = 0.0
    width: float = 0.6
    outliers: np.ndarray = field(default_factory=lambda: np.array([]))

    def extent(self) -> tuple[np.ndarray, np.ndarray, set[str]]:
        ys = np.concatenate([[self.lo, self.hi], self.outliers])
        return np.array([self.x - self.width / 2, self.x + self.width / 2]), ys, set()

    def svg(self, m: _Map) -> str:
        xa, xb = float(m.fx(self.x - self.width / 2)), float(m.fx(self.x + self.width / 2))
        xc, xq = float(m.fx(self.x)), float(m.fx(self.x - self.width / 4))
        xq2 = float(m.fx(self.x + self.width / 4))
        y1, y3, ym = float(m.fy(self.q1)), float(m.fy(self.q3)), float(m.fy(self.med))
        ylo, yhi = float(m.fy(self.lo)), float(m.fy(self.hi))
        top, h = min(y1, y3), abs(y1 - y3)
        op = f' fill-opacity="{self.alpha:g}"' if self.alpha < 1 else ""
        out = [
            f'<g class="box" stroke="{AXIS_COLOR}" stroke-width="1">',
            f'<rect x="{_f(xa)}" y="{_f(top)}" width="{_f(xb - xa)}" height="{_f(h)}" '
            f'fill="{self.color}"{op}/>',
            f'<path fill="none" d="M{_f(xc)} {_f(max(y1, y3))}V{_f(ylo)}M{_f(xq)} {_f(ylo)}'
            f'H{_f(xq2)}M{_f(xc)} {_f(top)}V{_f(yhi)}M{_f(xq)} {_f(yhi)}H{_f(xq2)}"/>',
            f'<path d="M{_f(xa)} {_f(ym)}H{_f(xb)}" stroke="#000000" stroke-width="2"/>',
        ]
        if self.outliers.size:
            oy = m.fy(self.outliers)
            out.append(
                '<g fill="none">'
                + "".join(f'<circle cx="{_f(xc)}" cy="{_f(y)}" r="3"/>' for y in oy)
                + "</g>"
            )
        return "".join(out) + "</g>"

    def obstacles(self, m: _Map) -> np.ndarray:
        xa, xb = float(m.fx(self.x - self.width / 2)), float(m.fx(self.x + self.width / 2))
        ys = m.fy(np.concatenate([[self.lo, self.hi], self.outliers]))
        return np.array([[xa, float(ys.min()), xb, float(ys.max())]])


#: Candidate places of a legend inside the plot box, matplotlib's order of preference.
_LOCS = (
    "upper right",
    "upper left",
    "lower left",
    "lower right",
    "center right",
    "center left",
    "lower center",
    "upper center",
    "center",
)


def _overlap(box: tuple[float, float, float, float], rects: np.ndarray) -> float:
    if not len(rects):
        return 0.0
    w = np.clip(np.minimum(rects[:, 2], box[2]) - np.maximum(rects[:, 0], box[0]), 0, None)
    h = np.clip(np.minimum(rects[:, 3], box[3]) - np.maximum(rects[:, 1], box[1]), 0, None)
    return float((w * h).sum())


class Figure:
    """Panels side by side in one SVG.

    Args:
        ncols: Number of panels.
        panel_width: Width of each panel in px, its labels included.
        plot_height: Height of every panel's plot box in px (titles, tick labels, axis labels
            and a legend below come on top of it).
    """

    def __init__(
        self, ncols: int = 1, *, panel_width: float = 540.0, plot_height: float = 290.0
    ) -> None:
        self.axes = [Axes() for _ in range(ncols)]
        self.panel_width = float(panel_width)
        self.plot_height = float(plot_height)

    def to_svg(self, title: str) -> str:
        """The figure as an ``<svg>`` element, with ``title`` as its accessible name."""
        width, height, body = self._render()
        return _svg_root(width, height, title, body)

    def _render(self) -> tuple[float, float, str]:
        """Width, height and the SVG elements of the figure."""
        pw, ph = self.panel_width, self.plot_height
        lay = [_layout(ax, pw, ph) for ax in self.axes]
        top = max([lo["top"] for lo in lay], default=8.0)
        # Legends need the plot box: place them, then the bottom margin is known.
        bottoms, legends = [], []
        for k, (ax, lo) in enumerate(zip(self.axes, lay, strict=True)):
            width = pw - lo["left"] - lo["right"]
            height = ph
            if ax.equal and ax.visible:
                width, height = _equal_box(lo["limits"], width, ph)
            ax._map = _Map(*lo["limits"], k * pw + lo["left"], top, width, height,
                           invert_y=ax.invert_y)  # fmt: skip
            lo["panel"] = (k * pw, pw)
            leg, extra = _place_legend(ax, k * pw, pw, top + height + lo["bottom"])
            legends.append(leg)
            bottoms.append(height + lo["bottom"] + extra)
        body = "".join(
            _render_axes(ax, lo, leg)
            for ax, lo, leg in zip(self.axes, lay, legends, strict=True)
            if ax.visible
        )
        return pw * len(self.axes), top + max(bottoms, default=ph) + 6.0, body


class FigureStack:
    """Figures one above the other in one SVG (e.g. two wide heatmaps), with one title."""

    def __init__(self, figures: Sequence[Figure]) -> None:
        self.figures = list(figures)

    @property
    def axes(self) -> list[Axes]:
        """Every panel, top figure first."""
        return [ax for f in self.figures for ax in f.axes]

    def to_svg(self, title: str) -> str:
        """The stack as an ``<svg>`` element, with ``title`` as its accessible name."""
        parts, y, width = [], 0.0, 0.0
        for f in self.figures:
            w, h, body = f._render()
            parts.append(f'<g class="row" transform="translate(0 {_f(y)})">{body}</g>')
            y += h
            width = max(width, w)
        return _svg_root(width, y, title, "".join(parts))


def _svg_root(width: float, height: float, title: str, body: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="fig" role="img" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" width="{_f(width)}" height="{_f(height)}" '
        f'font-family="{FONT}" fill="{TEXT_COLOR}"><title>{escape(title)}</title>'
        f'<rect width="100%" height="100%" fill="#ffffff"/>{body}</svg>'
    )


def _equal_box(
    limits: tuple[float, float, float, float], width: float, height: float
) -> tuple[float, float]:
    """The largest plot box within ``width`` x ``height`` where a data unit is as long on both
    axes (square heatmap cells)."""
    x0, x1, y0, y1 = limits
    aspect = abs(x1 - x0) / abs(y1 - y0)
    w = min(width, height * aspect)
    return w, w / aspect


def _cat_shown(cat: _Cat, length: float) -> list[int]:
    """Indices of the category labels drawn on an axis ``length`` px long."""
    n = len(cat.labels)
    if not cat.thin or n == 0:
        return list(range(n))
    per = cat.size * 1.15
    step = max(-(-n // 50), math.ceil(n * per / max(length, 1.0)))
    return list(range(0, n, step))


def _fit_ticks(lo: float, hi: float, length: float, *, horizontal: bool) -> list[float]:
    """The densest nice ticks (at most 9 intervals) whose labels keep clear of each other."""
    ticks: list[float] = []
    for bins in range(9, 2, -1):
        ticks = nice_ticks(lo, hi, bins)
        if horizontal:
            need = sum(text_width(s, TICK_SIZE) + 14 for s in format_ticks(ticks))
        else:
            need = len(ticks) * 2.6 * TICK_SIZE
        if need <= length:
            break
    return ticks


def _layout(ax: Axes, pw: float, ph: float) -> dict[str, Any]:
    """Margins of a panel (px) from its text, and its data limits and ticks."""
    limits = ax._limits()
    x0, x1, y0, y1 = limits
    out: dict[str, Any] = {"limits": limits}
    if not ax.visible:
        out.update(left=10.0, right=10.0, top=8.0, bottom=0.0, xt=[], yt=[])
        return out
    xt = [] if ax.xcat else _fit_ticks(min(x0, x1), max(x0, x1), pw - 90, horizontal=True)
    yt = [] if ax.ycat else _fit_ticks(min(y0, y1), max(y0, y1), ph, horizontal=False)
    out["xt"], out["yt"] = xt, yt
    # Left: y tick labels and the y label.
    if ax.ycat:
        shown = _cat_shown(ax.ycat, ph)
        ytw = max((text_width(ax.ycat.labels[i], ax.ycat.size) for i in shown), default=0.0)
    else:
        ytw = max((text_width(s, TICK_SIZE) for s in format_ticks(yt)), default=0.0)
    ylabel = wrap(ax.ylabel, ph, LABEL_SIZE) if ax.ylabel else None
    out["ylabel"] = ylabel
    left = 8.0 + ytw + TICK_LEN + PAD + (1.2 * LABEL_SIZE * _n_lines(ylabel) + 4 if ylabel else 0)
    # Right: the colour bar, or room for half the last x tick label.
    right = 10.0
    if ax.colorbar is not None:
        cb = ax.colorbar
        cbt = format_ticks(nice_ticks(cb.vmin, cb.vmax, 5))
        right = 14.0 + 14.0 + TICK_LEN + PAD + max(text_width(s, TICK_SIZE) for s in cbt) + 6
    elif xt:
        right = max(right, text_width(format_ticks(xt)[-1], TICK_SIZE) / 2 + 4)
    width = pw - left - right
    # Bottom: x tick labels (rotated ones need their length) and the x label.
    if ax.xcat:
        side = _equal_box(limits, width, ph)[0] if ax.equal else width
        shown = _cat_shown(ax.xcat, side)
        labels = [ax.xcat.labels[i] for i in shown]
        rot = math.radians(abs(ax.xcat.rotation))
        tw = max((text_width(s, ax.xcat.size) for s in labels), default=0.0)
        lines = max((_n_lines(s) for s in labels), default=1)
        xth = tw * math.sin(rot) + 1.2 * ax.xcat.size * lines * math.cos(rot) + 2
    else:
        xth = 1.2 * TICK_SIZE
    xlabel = wrap(ax.xlabel, width, LABEL_SIZE) if ax.xlabel else None
    out["xlabel"] = xlabel
    bottom = TICK_LEN + PAD + xth + (1.25 * LABEL_SIZE * _n_lines(xlabel) + 4 if xlabel else 0)
    title = wrap(ax.title, pw - 10, TITLE_SIZE) if ax.title else None
    out["title"] = title
    top = 8.0 + (1.25 * TITLE_SIZE * _n_lines(title) + 4 if title else 0)
    out.update(left=left, right=right, top=top, bottom=bottom + 4)
    return out


def _legend_size(entries: list[_Artist], size: float) -> tuple[float, float]:
    lines = sum(_n_lines(a.label) for a in entries)
    w = max(text_width(a.label or "", size) for a in entries) + 24 + 6 + 16
    return w, lines * 1.35 * size + 10


def _place_legend(ax: Axes, x_off: float, pw: float, y_below: float) -> tuple[str, float]:
    """The legend's SVG and how much height it adds below the panel."""
    spec, m = ax.legend_spec, ax._map
    entries = ax._legend_entries()
    if spec is None or not entries or m is None or not ax.visible:
        return "", 0.0
    size = spec.size
    w, h = _legend_size(entries, size)
    loc = spec.loc
    pad = 6.0
    if loc == "best":
        rects = np.vstack([a.obstacles(m) for a in ax.artists] or [np.zeros((0, 4))])
        best, where = None, "below"
        if w <= m.width - 2 * pad and h <= m.height - 2 * pad:
            for cand in _LOCS:
                box = _loc_box(cand, m, w, h, pad)
                score = _overlap(box, rects)
                if best is None or score < best:
                    best, where = score, cand
                if score == 0:
                    break
            if best is not None and best > 0:
                where = "below"
        loc = where
    if loc == "below":
        return _legend_below(ax, entries, x_off, pw, y_below, spec)
    box = _loc_box(loc, m, w, h, pad)
    return _legend_svg(entries, box, size, spec.frame), 0.0


def _loc_box(
    loc: str, m: _Map, w: float, h: float, pad: float
) -> tuple[float, float, float, float]:
    vert, _, horiz = loc.partition(" ")
    if not horiz:  # matplotlib's "right" is "center right"; "center" is the middle
        vert, horiz = ("center", loc) if loc in ("left", "right") else (loc, "center")
    if horiz == "left":
        x = m.left + pad
    elif horiz == "right":
        x = m.left + m.width - pad - w
    else:
        x = m.left + (m.width - w) / 2
    if vert == "upper":
        y = m.top + pad
    elif vert == "lower":
        y = m.top + m.height - pad - h
    else:
        y = m.top + (m.height - h) / 2
    return x, y, x + w, y + h


def _entry(a: _Artist, x: float, y: float, size: float) -> str:
    return (
        f'<g class="legend-entry">{a.handle(x + 12, y)}'
        + _text(x + 30, y, a.label or "", size, anchor="start", valign="middle")
        + "</g>"
    )


def _legend_svg(
    entries: list[_Artist], box: tuple[float, float, float, float], size: float, frame: bool
) -> str:
    x0, y0, x1, y1 = box
    out = ['<g class="legend">']
    if frame:
        out.append(
            f'<rect x="{_f(x0)}" y="{_f(y0)}" width="{_f(x1 - x0)}" '
            f'height="{_f(y1 - y0)}" fill="#ffffff" fill-opacity="0.85" stroke="#cccccc" '
            'rx="3"/>'
        )
    y = y0 + 5
    for a in entries:
        n = _n_lines(a.label)
        hh = n * 1.35 * size
        out.append(_entry(a, x0 + 8, y + hh / 2, size))
        y += hh
    return "".join(out) + "</g>"


def _legend_below(
    ax: Axes, entries: list[_Artist], x_off: float, pw: float, y0: float, spec: _Legend
) -> tuple[str, float]:
    """Entries flowed in rows under the panel's x label, centred on the panel."""
    size = spec.size
    rows: list[list[tuple[_Artist, float]]] = [[]]
    avail = pw - 20
    used = 0.0
    for a in entries:
        w = 30 + text_width(a.label or "", size) + 16
        if rows[-1] and used + w > avail:
            rows.append([])
            used = 0.0
        rows[-1].append((a, w))
        used += w
    out = ['<g class="legend">']
    lh = 1.4 * size
    y = y0 + 4 + lh / 2
    for row in rows:
        total = sum(w for _, w in row) - 16
        x = x_off + (pw - total) / 2
        for a, w in row:
            out.append(_entry(a, x, y, size))
            x += w
        y += lh
    return "".join(out) + "</g>", 4 + lh * len(rows) + 2


def _render_axes(ax: Axes, lo: dict[str, Any], legend: str) -> str:
    m = ax._map
    assert m is not None
    out = ['<g class="axes">']
    out.append(
        f'<rect class="frame" x="{_f(m.left)}" y="{_f(m.top)}" width="{_f(m.width)}" '
        f'height="{_f(m.height)}" fill="none" stroke="{AXIS_COLOR}" stroke-width="0.8"/>'
    )
    for a in ax.artists:
        out.append(a.svg(m))
    bottom = m.top + m.height
    # x ticks
    ticks = []
    if ax.xcat:
        shown = _cat_shown(ax.xcat, m.width)
        for i in shown:
            x = float(m.fx(ax.xcat.positions[i]))
            ticks.append(f"M{_f(x)} {_f(bottom)}v{TICK_LEN:g}")
            rot = ax.xcat.rotation
            ty = bottom + TICK_LEN + 2
            if rot:
                out.append(
                    _text(
                        x,
                        ty,
                        ax.xcat.labels[i],
                        ax.xcat.size,
                        anchor="end",
                        rotate=-rot,
                        valign="top" if rot < 60 else "middle",
                        cls="xtick",
                    )
                )
            else:
                out.append(_text(x, ty, ax.xcat.labels[i], ax.xcat.size, valign="top", cls="xtick"))
    else:
        for t, s in zip(lo["xt"], format_ticks(lo["xt"]), strict=True):
            x = float(m.fx(t))
            ticks.append(f"M{_f(x)} {_f(bottom)}v{TICK_LEN:g}")
            out.append(_text(x, bottom + TICK_LEN + 2, s, TICK_SIZE, valign="top", cls="xtick"))
    # y ticks
    if ax.ycat:
        for i in _cat_shown(ax.ycat, m.height):
            y = float(m.fy(ax.ycat.positions[i]))
            ticks.append(f"M{_f(m.left)} {_f(y)}h{-TICK_LEN:g}")
            out.append(
                _text(
                    m.left - TICK_LEN - 3,
                    y,
                    ax.ycat.labels[i],
                    ax.ycat.size,
                    anchor="end",
                    valign="middle",
                    cls="ytick",
                )
            )
    else:
        for t, s in zip(lo["yt"], format_ticks(lo["yt"]), strict=True):
            y = float(m.fy(t))
            ticks.append(f"M{_f(m.left)} {_f(y)}h{-TICK_LEN:g}")
            out.append(
                _text(
                    m.left - TICK_LEN - 3,
                    y,
                    s,
                    TICK_SIZE,
                    anchor="end",
                    valign="middle",
                    cls="ytick",
                )
            )
    if ticks:
        out.append(
            f'<path class="ticks" d="{"".join(ticks)}" stroke="{AXIS_COLOR}" stroke-width="0.8"/>'
        )
    # labels and title
    if lo.get("xlabel"):
        if ax.xcat:
            shown = _cat_shown(ax.xcat, m.width)
            rot = math.radians(abs(ax.xcat.rotation))
            labels = [ax.xcat.labels[i] for i in shown]
            tw = max((text_width(s, ax.xcat.size) for s in labels), default=0.0)
            lines = max((_n_lines(s) for s in labels), default=1)
            xth = tw * math.sin(rot) + 1.2 * ax.xcat.size * lines * math.cos(rot) + 2
        else:
            xth = 1.2 * TICK_SIZE
        out.append(
            _text(
                m.left + m.width / 2,
                bottom + TICK_LEN + PAD + xth + 2,
                lo["xlabel"],
                LABEL_SIZE,
                valign="top",
                cls="xlabel",
            )
        )
    x_off, pw = lo["panel"]
    if lo.get("ylabel"):
        # Rotated a quarter turn: the first line's baseline is this far from the panel's edge,
        # further lines come to its right.
        x = x_off + 6 + 0.9 * LABEL_SIZE
        out.append(
            _text(x, m.top + m.height / 2, lo["ylabel"], LABEL_SIZE, rotate=-90, cls="ylabel")
        )
    if lo.get("title"):
        n = _n_lines(lo["title"])
        # Centred on the plot box, moved inwards where it would leave the panel.
        half = text_width(lo["title"], TITLE_SIZE) / 2
        cx = min(max(m.left + m.width / 2, x_off + half + 4), x_off + pw - half - 4)
        out.append(
            _text(cx, m.top - 6 - (n - 1) * 1.2 * TITLE_SIZE, lo["title"], TITLE_SIZE, cls="title")
        )
    if ax.colorbar is not None:
        out.append(_colorbar(ax.colorbar, m))
    return "".join(out) + legend + "</g>"


def _colorbar(h: _Heat, m: _Map) -> str:
    x = m.left + m.width + 14
    top, height, n = m.top + 0.1 * m.height, 0.8 * m.height, 64
    cells = []
    for i in range(n):
        v = (n - 1 - i + 0.5) / n
        y = top + i * height / n
        cells.append(
            f'<rect x="{_f(x)}" y="{_f(y)}" width="14" height="{height / n + 0.4:.2f}" '
            f'fill="{h.cmap(v)}"/>'
        )
    ticks = nice_ticks(h.vmin, h.vmax, 5)
    out = [
        '<g class="colorbar" shape-rendering="crispEdges">',
        *cells,
        f'<rect x="{_f(x)}" y="{_f(top)}" width="14" height="{_f(height)}" fill="none" '
        f'stroke="{AXIS_COLOR}" stroke-width="0.8"/>',
    ]
    d = []
    for t, s in zip(ticks, format_ticks(ticks), strict=True):
        y = top + (1 - (t - h.vmin) / (h.vmax - h.vmin)) * height
        d.append(f"M{_f(x + 14)} {_f(y)}h{TICK_LEN:g}")
        out.append(_text(x + 14 + TICK_LEN + 3, y, s, TICK_SIZE, anchor="start", valign="middle"))
    out.append(f'<path d="{"".join(d)}" stroke="{AXIS_COLOR}" stroke-width="0.8"/>')
    return "".join(out) + "</g>"
