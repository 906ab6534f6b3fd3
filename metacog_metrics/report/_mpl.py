"""matplotlib for the report: figures on the SVG canvas, their panels placed, inline ``<svg>``.

matplotlib is imported here, and this module only while a page is rendered: ``import
metacog_metrics`` and an analysis without a report never load it. pyplot is not used: each figure
is a :class:`matplotlib.figure.Figure` on the non-interactive SVG canvas, set explicitly, so the
report neither reads nor changes the caller's backend or pyplot state.

Why SVG: the figures are lines, points, bars and small matrices; as SVG with text kept as text
(``svg.fonttype: none``) they stay sharp at any zoom, their labels can be searched and copied, a
figure is 20-200 kB (a PNG as sharp is larger) and no time goes into rasterising. The heatmaps'
cells are one small embedded PNG each (``imshow`` without interpolation, drawn pixelated).

Why :func:`fit` rather than matplotlib's constrained layout: constrained layout measures every
tick label of every panel twice more before the figure is drawn, which more than doubled the
report's time (battery's four figures: 2.2 s with it, 0.9 s with :func:`fit`, medians of three
runs on two busy cores).
The report's panels are simple (ticks, an axis label, a title, a colour bar or a legend under
the axis), so :func:`fit` sizes each panel's margins from its own texts, measured with
matplotlib's font metrics, and places it.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import io
import itertools
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import matplotlib as mpl
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

__all__ = [
    "PT",
    "PX",
    "RC",
    "Drawing",
    "Panel",
    "clean",
    "fit",
    "new_figure",
    "styled",
    "text_size",
    "to_svg",
]

#: Settings of every figure: text as text, no mathtext (a ``$`` in a model name stays a dollar
#: sign), sizes close to the page's own text.
RC: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.image_inline": True,
    "text.parse_math": False,
    "text.usetex": False,
    "font.family": "sans-serif",
    "font.size": 8.5,
    "axes.titlesize": 10.0,
    # a title placed at a fixed height: matplotlib's automatic placement measures every axis
    "axes.titley": 1.0,
    "axes.labelsize": 9.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "legend.fontsize": 8.0,
    "legend.framealpha": 0.85,
    "figure.facecolor": "white",
    "figure.constrained_layout.use": False,
    "axes.prop_cycle": mpl.cycler(color=["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]),
}

#: CSS pixels per inch (a figure ``w`` inches wide is drawn ``96 w`` pixels wide) and per point.
PX = 96.0
PT = PX / 72.0
#: Around the texts of a panel (px): the figure's edge, tick marks with their pad, a label's pad.
EDGE, TICK, PAD = 6.0, 7.0 * PT, 4.0 * PT
COLORBAR = 12.0

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

F = TypeVar("F", bound=Callable[..., Any])


def clean(text: Any) -> str:
    """``text`` as figure text: control characters (not allowed in SVG) replaced."""
    return _CONTROL.sub("\ufffd", str(text))


def styled(func: F) -> F:
    """Run ``func`` (a figure builder) under :data:`RC`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with mpl.rc_context(RC):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@functools.cache
def _metrics() -> TextToPath:
    return TextToPath()


@functools.lru_cache(maxsize=4096)
def _line_width(text: str, size: float) -> float:
    prop = FontProperties(size=size)
    return _metrics().get_text_width_height_descent(text, prop, ismath=False)[0] * PT


def text_size(text: str, size: float) -> tuple[float, float]:
    """Width and height in px of ``text`` (lines split on newlines) at ``size`` points."""
    lines = str(text).split("\n")
    return max(_line_width(t, size) for t in lines), len(lines) * size * 1.25 * PT


@dataclasses.dataclass
class Panel:
    """One panel (axes) and what :func:`fit` needs to place it.

    Attributes:
        ax: The axes.
        slot: Its share of the figure in px: left, top, width, height.
        tick_size: Font size (pt) of its tick labels, x and y.
        xrotation: Rotation of its x tick labels (degrees).
        legend: Columns of a legend under its x label (0: none, or a legend of its own).
        colorbar: A mappable shown in a colour bar to its right.
        square: Whether its plot box is square (a correlation matrix).
    """

    ax: Axes
    slot: tuple[float, float, float, float]
    tick_size: tuple[float, float] = (8.0, 8.0)
    xrotation: float = 0.0
    legend: int = 0
    colorbar: Any = None
    square: bool = False


@dataclasses.dataclass
class Drawing:
    """A figure, its panels, and the hover texts of its point sets.

    Attributes:
        figure: The figure, on the SVG canvas.
        panels: Its panels, placed by :func:`fit` when it is written.
        tips: ``{gid: texts}``: each point of the artist with that gid gets a title.
    """

    figure: Figure
    panels: list[Panel] = dataclasses.field(default_factory=list)
    tips: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def panel(self, ax: Axes) -> Panel:
        """The panel of ``ax``."""
        return next(p for p in self.panels if p.ax is ax)

    def tip(self, artist: Artist, texts: Sequence[Any]) -> None:
        """Give each point of ``artist`` (a scatter of finite points) its hover text."""
        gid = f"tips{len(self.tips)}"
        artist.set_gid(gid)
        self.tips[gid] = [clean(t) for t in texts]

    def names(
        self,
        ax: Axes,
        axis: str,
        pos: Sequence[float],
        names: Sequence[str],
        size: float = 8.0,
        rotation: float = 0.0,
    ) -> None:
        """Name the ticks of ``ax``'s ``axis`` ("x" or "y") at ``pos``."""
        p = self.panel(ax)
        labels = [clean(n) for n in names]
        if axis == "x":
            ax.set_xticks(
                pos,
                labels,
                fontsize=size,
                rotation=rotation,
                ha="right" if 0 < rotation < 90 else "center",
                rotation_mode="anchor" if 0 < rotation < 90 else "default",
            )
            p.tick_size, p.xrotation = (size, p.tick_size[1]), rotation
        else:
            ax.set_yticks(pos, labels, fontsize=size)
            p.tick_size = (p.tick_size[0], size)

    def legend_below(self, ax: Axes, ncols: int) -> None:
        """Put ``ax``'s legend in ``ncols`` columns under its x label."""
        self.panel(ax).legend = max(1, ncols)

    def colorbar(self, ax: Axes, mappable: Any) -> None:
        """Show ``mappable``'s colours in a bar right of ``ax``."""
        self.panel(ax).colorbar = mappable


def new_figure(
    width: float, height: float, ncols: int = 1, nrows: int = 1
) -> tuple[Drawing, list[Axes]]:
    """A figure ``width x height`` px of ``nrows x ncols`` equal panels (row by row)."""
    fig = Figure(figsize=(width / PX, height / PX))
    FigureCanvasSVG(fig)
    d = Drawing(fig)
    w, h = width / ncols, height / nrows
    for r, c in itertools.product(range(nrows), range(ncols)):
        ax = fig.add_axes((0.1, 0.1, 0.8, 0.8))
        ax.locator_params(nbins=6)  # fewer ticks than "auto" picks: each costs a few ms
        d.panels.append(Panel(ax, (c * w, r * h, w, h)))
    return d, [p.ax for p in d.panels]


def _tick_labels(axis: Any) -> list[str]:
    """The labels the axis will show (its locator's ticks inside the view, formatted)."""
    if not axis.get_visible():
        return []
    lo, hi = sorted(axis.get_view_interval())
    eps = 1e-9 * max(1.0, abs(hi - lo))
    locs = [v for v in axis.get_major_locator()() if lo - eps <= v <= hi + eps]
    return [str(t) for t in axis.get_major_formatter().format_ticks(locs)]


def _lines(text: str) -> int:
    return text.count("\n") + 1 if text else 0


@dataclasses.dataclass(frozen=True)
class _Room:
    """What a panel's texts take around its plot box (px)."""

    left: float
    right: float
    top: float
    bottom: float
    y_ticks: float  # width of the y tick labels
    x_ticks: float  # height of the x tick labels
    x_label: float  # height of the x label


def _room(p: Panel) -> _Room:
    """The margins that the panel's texts need."""
    ax = p.ax
    if not ax.axison:
        return _Room(EDGE, EDGE, EDGE, EDGE, 0.0, 0.0, 0.0)
    label = mpl.rcParams["axes.labelsize"]
    sizes = [text_size(t, p.tick_size[0]) for t in _tick_labels(ax.xaxis)] or [(0.0, 0.0)]
    r = math.radians(p.xrotation)
    x_ticks = max(w * abs(math.sin(r)) + h * abs(math.cos(r)) for w, h in sizes)
    # a label centred under its tick reaches past the box by half its width
    overhang = 0.0 if p.xrotation else max(w for w, _ in sizes) / 2
    y_ticks = max((text_size(t, p.tick_size[1])[0] for t in _tick_labels(ax.yaxis)), default=0.0)
    ylabel = _lines(ax.get_ylabel()) * label * 1.25 * PT
    xlabel = _lines(ax.get_xlabel()) * label * 1.25 * PT
    title = _lines(ax.get_title()) * mpl.rcParams["axes.titlesize"] * 1.25 * PT
    left = EDGE + (ylabel + PAD if ylabel else 0.0) + y_ticks + TICK
    bottom = EDGE + TICK + x_ticks + (xlabel + PAD if xlabel else 0.0)
    if p.legend:
        rows = math.ceil(len(ax.get_legend_handles_labels()[0]) / p.legend)
        bottom += rows * mpl.rcParams["legend.fontsize"] * 1.6 * PT + 2 * PAD
    right = max(EDGE, overhang)
    if p.colorbar is not None:
        right += COLORBAR + 2 * PAD + text_size("\u22121.00", p.tick_size[1])[0] + TICK
    top = EDGE + (title + PAD if title else 0.0)
    return _Room(max(left, overhang), right, top, bottom, y_ticks, x_ticks, xlabel)


def fit(d: Drawing) -> None:
    """Place every panel inside its slot with room for its texts; place its axis labels beside
    its tick labels, its colour bar to its right and its legend under its x label."""
    fig = d.figure
    width, height = fig.get_size_inches() * PX
    for p in d.panels:
        room = _room(p)
        x0, y0, w0, h0 = p.slot
        w = max(10.0, w0 - room.left - room.right)
        h = max(10.0, h0 - room.top - room.bottom)
        if p.square:
            w = h = min(w, h)
        x, y = x0 + room.left, y0 + room.top
        p.ax.set_position((x / width, 1 - (y + h) / height, w / width, h / height))
        # labels at known places: matplotlib would otherwise measure every tick label again
        p.ax.yaxis.set_label_coords(-(TICK + room.y_ticks + PAD) / w, 0.5)
        p.ax.xaxis.set_label_coords(0.5, -(TICK + room.x_ticks + PAD) / h)
        if p.colorbar is not None:
            box = (
                (x + w + 2 * PAD) / width,
                1 - (y + 0.9 * h) / height,
                COLORBAR / width,
                0.8 * h / height,
            )
            lo, hi = p.colorbar.norm.vmin, p.colorbar.norm.vmax
            bar = fig.colorbar(p.colorbar, cax=fig.add_axes(box), ticks=np.linspace(lo, hi, 5))
            bar.ax.tick_params(labelsize=p.tick_size[1])
        if p.legend and p.ax.get_legend_handles_labels()[0]:
            below = TICK + room.x_ticks + room.x_label + 2 * PAD
            p.ax.legend(
                loc="upper center",
                bbox_to_anchor=(0.5, 0.0),
                ncols=p.legend,
                borderaxespad=below / (mpl.rcParams["legend.fontsize"] * PT),
                frameon=False,
            )


def to_svg(drawing: Drawing | None, title: str, prefix: str = "") -> str:
    """The figure as an ``<svg class="fig" role="img">`` element titled ``title`` ("" for none).

    Its panels are placed (:func:`fit`); the XML prolog, DOCTYPE and metadata are left out;
    each tipped point gets a ``<title>``. Every id in it (and every reference to one) starts
    with ``prefix``: figures of one page need different prefixes, as matplotlib numbers its
    elements per figure. The same figure and prefix give the same text on every run.
    """
    if drawing is None:
        return ""
    buf = io.StringIO()
    with mpl.rc_context({**RC, "svg.hashsalt": "metacog"}):
        fit(drawing)
        drawing.figure.savefig(
            buf,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # no XML prolog or DOCTYPE inside HTML
    for gid, tips in drawing.tips.items():
        text = _titled_points(text, gid, tips)
    if prefix:
        text = _ATTRIBUTES.sub(lambda m: _prefixed(m.group(), prefix), text)
    head = text.index(">") + 1
    return (
        text[: len("<svg")]
        + ' class="fig" role="img"'
        + text[len("<svg") : head]
        + f"<title>{html.escape(clean(title), quote=False)}</title>"
        + text[head:]
    )


# A tag: matplotlib escapes ">" in attribute values, so a tag ends at the first ">"; text
# between tags (a model's name) is never touched.
_ATTRIBUTES = re.compile(r"<[^>]*>")


def _prefixed(tag: str, prefix: str) -> str:
    tag = re.sub(r'(\sid=")', rf"\g<1>{prefix}", tag)
    return tag.replace("url(#", f"url(#{prefix}").replace('href="#', f'href="#{prefix}')


_TAGS = re.compile(r"<g\b[^>]*>|</g>|<use\b[^>]*/>")


def _titled_points(svg: str, gid: str, tips: Sequence[str]) -> str:
    """``svg`` with a ``<title>`` in each point (``<use>``) of the group ``gid``, in order;
    unchanged unless the group holds exactly one point per tip."""
    start = svg.find(f'<g id="{gid}">')
    if start < 0:
        return svg
    depth, uses, end = 0, [], start
    for m in _TAGS.finditer(svg, start):
        tag = m.group()
        if tag.startswith("<use"):
            uses.append(m)
        elif tag == "</g>":
            depth -= 1
        else:
            depth += 1
        if depth == 0:
            end = m.end()
            break
    if depth or len(uses) != len(tips):
        return svg
    out, pos = [], start
    for m, tip in zip(uses, tips, strict=True):
        out += [svg[pos : m.end() - 2], "><title>", html.escape(tip, quote=False), "</title></use>"]
        pos = m.end()
    return svg[:start] + "".join(out) + svg[pos:end] + svg[end:]
