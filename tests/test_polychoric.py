"""polychoric: against polycor::polychor (committed reference) and hand-checked level coding."""

import json
from pathlib import Path

import numpy as np
import pytest

from metacog_metrics.polychoric import confidence_levels, polychoric_matrix, polychoric_table

REF = json.loads((Path(__file__).parent / "reference" / "polychoric_reference.json").read_text())


@pytest.mark.parametrize("case", REF["polycor_polychor"], ids=lambda c: str(len(c["table"])))
def test_table_matches_polycor_two_step(case):
    assert polychoric_table(np.array(case["table"], float)) == pytest.approx(case["rho"], abs=1e-4)


def test_confidence_levels_keeps_few_values_and_bins_many():
    assert confidence_levels([0.9, 0.8, np.nan, 0.9]).tolist()[:2] == [1.0, 0.0]
    x = np.linspace(0.5, 1.0, 100)
    lv = confidence_levels(x, n_levels=5)
    assert np.bincount(lv.astype(int)).tolist() == [20, 20, 20, 20, 20]
    # mostly 0.95 with a few lower values: still two or more levels, so the model stays in
    y = np.r_[np.full(95, 0.95), [0.6, 0.7, 0.8, 0.85, 0.9]]
    assert np.unique(confidence_levels(y)).size >= 2


def test_matrix_pairwise_counts_and_constant_model():
    x = np.array([[0, 1, 2], [1, 0, 2], [2, 2, np.nan], [0, 1, np.nan], [1, 2, 2]], float)
    res = polychoric_matrix(x)
    assert res.n_pair.tolist() == [[5, 5, 3], [5, 5, 3], [3, 3, 3]]
    assert np.isnan(res.rho[0, 2]) and np.isfinite(res.rho[0, 1])


@pytest.mark.parametrize("case", REF["psych_polychoric"], ids=lambda c: str(len(c["levels"])))
def test_matrix_matches_psych_pairwise_complete(case):
    x = np.array([[np.nan if v is None else v for v in r] for r in case["levels"]], float)
    want = np.array(case["rho"], float)
    np.testing.assert_allclose(polychoric_matrix(x).rho, want, atol=1e-4)
