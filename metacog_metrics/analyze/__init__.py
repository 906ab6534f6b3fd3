"""``metacog analyze``: every analysis of a record table, per (benchmark, probe, confidence kind).

:func:`analyze_records` takes a record table and :class:`AnalysisOptions` and returns an
:class:`AnalysisResult`: the typed results of each group (:class:`GroupAnalysis`), the summary
(what ``summary.json`` holds; schema in ``docs/summary_schema.md``) and the tables. Every
section records its basis (models and items). Reading and writing files is
:mod:`metacog_metrics.pipeline`'s; this package writes nothing and imports no report.

Modules: :mod:`~.options` (the settings), :mod:`~.group` (one group's analyses),
:mod:`~.orchestration` (all groups), :mod:`~.results` (the result objects), :mod:`~.summary`
(summary.json and tables from the results), :mod:`~.text` (inline solving and text probes).
"""

import lazy_loader as _lazy

# the public names, listed once in __init__.pyi and imported on first use (the command line
# reads AnalysisOptions without loading the analysis)
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
