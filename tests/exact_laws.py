"""Checks of random draws against exact laws, shared by the sampler tests.

The laws come from SciPy or from enumeration in each test; these helpers only compare.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def chi2_p(values, support, probs):
    """Goodness of fit of sampled values to an exact law (bins with expectation < 5 pooled).

    Every sampled value must lie in the support (checked: an impossible value fails at once).
    """
    values = np.asarray(values)
    support = np.asarray(support)
    index = {v: i for i, v in enumerate(support.tolist())}
    missing = set(np.unique(values).tolist()) - set(index)
    assert not missing, f"values outside the law's support: {sorted(missing)[:5]}"
    counts = np.bincount([index[v] for v in values.tolist()], minlength=len(support))
    expected = np.asarray(probs, dtype=float) * values.size
    order = np.argsort(expected)
    small = order[np.cumsum(expected[order]) < 5]
    keep = np.setdiff1d(np.arange(len(support)), small)
    obs = np.append(counts[keep], counts[small].sum())
    exp = np.append(expected[keep], expected[small].sum())
    if exp[-1] == 0:
        assert obs[-1] == 0, "draws where the law has no mass"
        obs, exp = obs[:-1], exp[:-1]
    if obs.size < 2:
        return 1.0
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


class FixedUniforms:
    """Stand-in generator whose ``random`` hands out the given uniforms."""

    def __init__(self, u):
        self.u = np.asarray(u, dtype=float)

    def random(self, size):
        assert size == self.u.size
        return self.u.copy()
