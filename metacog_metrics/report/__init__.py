"""``report.html``: the analysis as tables and figures in one self-contained page.

:func:`render_report` and :func:`write_report` turn an
:class:`~metacog_metrics.analyze.AnalysisResult` into the page: HTML from Jinja2 templates
(:mod:`~metacog_metrics.report.page`), figures drawn with matplotlib
(:mod:`~metacog_metrics.report.figures`, imported only while a page is rendered) and inlined as
SVG. The findings it opens with are the analysis' own
(:attr:`~metacog_metrics.analyze.AnalysisResult.findings`, made in
:mod:`metacog_metrics.analyze.findings`), the same list ``metacog analyze`` prints.
"""

from __future__ import annotations

from metacog_metrics.report.page import render_report, write_report

__all__ = ["render_report", "write_report"]
