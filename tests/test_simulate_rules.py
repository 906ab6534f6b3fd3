"""The generative model's bookkeeping, rule by rule (seconds): the long table of a latent state
by hand, the text generators' keys against hashlib, the reasoning flags of a subset of models,
and what :func:`run_simulate` writes and says. ``tests/test_simulate.py`` checks the equations
and the draws."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.simulate import (
    LatentState,
    Population,
    get_preset,
    run_simulate,
)


def _state(felt: bool = True) -> LatentState:
    """2 items x 3 models, every array written out."""
    return LatentState(
        benchmark="bench",
        probe="numeric",
        item_ids=("i1", "i2"),
        models=("m01", "m02", "m03"),
        reasoning=np.array([True, False, True]),
        difficulty=np.array([0.5, -0.5]),
        correct=np.array([[True, False, True], [False, False, True]]),
        confidence=np.array([[False, True, True], [True, False, False]]),
        p_yes=np.array([[0.1, 0.6, 0.7], [0.8, 0.2, 0.3]]),
        numeric=np.array([[10.0, 60.0, 70.0], [80.0, 20.0, 30.0]]),
        uncertainty=np.array([[0.9, 0.4, 0.3], [0.2, 0.8, 0.7]]),
        inline=np.array([[False, False, True], [False, False, False]]),
        p_correct=np.array([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]),
        felt_uncertainty=np.array([[0.11, 0.12, 0.13], [0.21, 0.22, 0.23]]) if felt else None,
    )


def test_the_long_table_of_a_state_by_hand() -> None:
    frame = _state().frame()
    assert frame.columns.tolist() == [
        "model", "benchmark", "item_id", "probe", "correct", "confidence", "p_yes", "numeric",
        "uncertainty", "felt_uncertainty", "inline", "reasoning",
    ]  # fmt: skip
    # item-major: every model of i1, then every model of i2
    assert frame["model"].tolist() == ["m01", "m02", "m03"] * 2
    assert frame["item_id"].tolist() == ["i1"] * 3 + ["i2"] * 3
    assert frame["benchmark"].tolist() == ["bench"] * 6
    assert frame["probe"].tolist() == ["numeric"] * 6
    assert frame["correct"].tolist() == [1, 0, 1, 0, 0, 1]
    assert frame["confidence"].tolist() == [0, 1, 1, 1, 0, 0]
    assert frame["correct"].dtype == np.uint8 and frame["confidence"].dtype == np.uint8
    assert frame["p_yes"].tolist() == [0.1, 0.6, 0.7, 0.8, 0.2, 0.3]
    assert frame["numeric"].tolist() == [10.0, 60.0, 70.0, 80.0, 20.0, 30.0]
    assert frame["uncertainty"].tolist() == [0.9, 0.4, 0.3, 0.2, 0.8, 0.7]
    assert frame["felt_uncertainty"].tolist() == [0.11, 0.12, 0.13, 0.21, 0.22, 0.23]
    assert frame["inline"].tolist() == [False, False, True, False, False, False]
    assert frame["reasoning"].tolist() == [True, False, True] * 2
    without = _state(felt=False).frame()
    assert without["felt_uncertainty"].isna().all() and len(without) == 6


def _key(*parts: object) -> int:
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def test_the_text_generator_of_a_cell_is_seeded_by_its_hashed_key() -> None:
    pop = Population(get_preset("paper"), 4, seed=2)
    got = pop.rng("squad", "q1", "m02", "wrong", 0).integers(0, 2**32, 4)
    # ("text", seed, benchmark, item, model index, *tags) joined by \x1f, BLAKE2b-64 little end
    want = np.random.default_rng(_key("text", 2, "squad", "q1", 2, "wrong", 0))
    np.testing.assert_array_equal(got, want.integers(0, 2**32, 4))
    # the harness prefix of a record-table model name is dropped: the same model
    same = pop.rng("squad", "q1", "metacog-sim/m02", "wrong", 0).integers(0, 2**32, 4)
    np.testing.assert_array_equal(got, same)
    no_tags = pop.rng("mmlu_pro", "x", "m04").integers(0, 2**32, 2)
    want = np.random.default_rng(_key("text", 2, "mmlu_pro", "x", 4))
    np.testing.assert_array_equal(no_tags, want.integers(0, 2**32, 2))


def test_reasoning_flags_of_a_subset_in_the_order_asked() -> None:
    # reasoning_fraction 0.3: model k reasons when floor(0.3 k) > floor(0.3 (k - 1)): 4, 7, 10
    pop = Population(get_preset("paper", reasoning_fraction=0.3), 12)
    got = pop.reasoning(["m10", "m02", "m07"])
    assert list(got.items()) == [("m10", True), ("m02", False), ("m07", True)]
    assert all(type(v) is bool for v in got.values())
    with pytest.raises(ValueError, match="no models given"):
        pop.reasoning([])


def test_run_simulate_says_what_it_wrote(tmp_path) -> None:
    out = tmp_path / "run.CSV"
    res = run_simulate(
        out, preset="null", models=3, items_per_benchmark=4, seed=7,
        benchmarks=["squad", "omni_math"], probes=("prospective", "numeric"),
    )  # fmt: skip
    assert res.path == str(out) and isinstance(res.path, str)
    assert res.models_path == str(tmp_path / "run.models.csv")
    assert res.n_rows == 3 * 4 * 2 * 2
    assert res.models == ("m01", "m02", "m03")
    assert res.benchmarks == ("squad", "omni_math")
    assert (res.preset, res.seed) == ("null", 7)
    assert res.params == get_preset("null").to_dict()
    assert res.summary_text() == (
        f"wrote 48 records (3 models x 2 benchmarks, preset null, seed 7) to {out}; "
        f"true model traits in {tmp_path / 'run.models.csv'}"
    )
    table = pd.read_csv(out)
    assert sorted(table["probe"].unique()) == ["numeric", "prospective"]
    truth = pd.read_csv(res.models_path)
    pop = Population(get_preset("null"), 3, seed=7)
    np.testing.assert_allclose(truth["ability"], pop.traits()["ability"])


def test_run_simulate_accepts_pq_and_defaults_to_the_six_benchmarks(tmp_path) -> None:
    res = run_simulate(tmp_path / "r.pq", models=2, items_per_benchmark=2)
    assert res.benchmarks == ("squad", "mmlu_pro", "legalbench", "mathbench", "omni_math",
                              "scicode")  # fmt: skip
    assert (res.preset, res.seed, res.n_rows) == ("paper", 0, 2 * 2 * 6)
    assert len(pd.read_parquet(tmp_path / "r.pq")) == 24


def test_run_simulate_names_a_bad_extension(tmp_path) -> None:
    with pytest.raises(ValueError) as err:
        run_simulate(tmp_path / "r.json", models=2, items_per_benchmark=2)
    assert str(err.value) == f"{tmp_path / 'r.json'}: write .parquet or .csv, not .json"
    with pytest.raises(ValueError) as err:
        run_simulate(tmp_path / "records", models=2, items_per_benchmark=2)
    assert str(err.value).endswith("records: write .parquet or .csv, not no extension")
