"""metacog-eval statistics: pure numpy/scipy/pandas/scikit-learn, no harness imports.

The statistics core (numbers in, result objects out): the record table
(:mod:`~metacog_metrics.records`), tetrachoric and polychoric correlations
(:mod:`~metacog_metrics.tetrachoric`, :mod:`~metacog_metrics.polychoric`, on
:mod:`~metacog_metrics.bvn`), factor structure (:mod:`~metacog_metrics.factors`), pairwise
calibration with permutation nulls (:mod:`~metacog_metrics.pairwise`), the private-signal test
(:mod:`~metacog_metrics.private_signal`), per-model calibration
(:mod:`~metacog_metrics.calibration`), inline solving and text probes. Layers above it, each
importing only what is below: the generative model (:mod:`~metacog_metrics.simulate`), power
analysis (:mod:`~metacog_metrics.power`), the CI regression gate (:mod:`~metacog_metrics.gate`),
the whole analysis (:mod:`~metacog_metrics.analyze`), its report
(:mod:`~metacog_metrics.report`) and files in, files out (:mod:`~metacog_metrics.pipeline`).
The import contracts in ``pyproject.toml`` hold these layers.

The public names are listed once, in ``__init__.pyi``; lazy_loader reads that stub and imports
each name from its module on first use, so ``from metacog_metrics import Result`` (which every
harness module does) stays cheap. The harness packages import only these names.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)

# Eager: the function shares its name with its module. Importing it here binds the package
# attribute to the function once and for all; a lazy import would let the submodule, once loaded
# by any other import, shadow it (``metacog_metrics.tetrachoric`` would be the module).
from metacog_metrics.tetrachoric import tetrachoric as tetrachoric  # noqa: E402
