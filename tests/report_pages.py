"""Reading a report page back: its tables, headings, ids and links (with :mod:`html.parser`)
and its inline figures as the SVG text they are. Shared by the report tests."""

from __future__ import annotations

import html as htmllib
import re
from html.parser import HTMLParser

#: What a missing value shows as in the report's tables.
GAP = "\u2013"


class Page(HTMLParser):
    """A page's tables (rows of cell texts, header first), heading ids and link targets."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.ids: list[str] = []
        self.headings: list[str] = []
        self.links: list[str] = []
        self.tags: list[str] = []
        self._cell: list[str] | None = None
        self._heading: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        for key in ("href", "src", "xlink:href"):
            if key in a:
                self.links.append(a[key])
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h2", "h3"):
            self._heading = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag in ("h2", "h3") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._heading is not None:
            self._heading.append(data)


def figures(text: str) -> list[tuple[str, str]]:
    """Each inline figure's title and SVG."""
    svgs = re.findall(r'<svg class="fig" role="img".*?</svg>', text, flags=re.S)
    return [(htmllib.unescape(re.search(r"<title>(.*?)</title>", s).group(1)), s) for s in svgs]


def svg_texts(svg: str) -> list[str]:
    """The text elements of a figure (tick labels, legend entries, titles), unescaped."""
    return [htmllib.unescape(t) for t in re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)]
