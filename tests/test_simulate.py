"""The generative model: determinism, the equations' marginals, the record schema, the CLI API."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from metacog_metrics.simulate import (
    PRESETS,
    BenchmarkProfile,
    Population,
    SimulationParams,
    get_preset,
    model_index,
    model_names,
    run_simulate,
    simulate_arrays,
    simulate_records,
)
from metacog_tasks.benchmarks import simulation_profiles


def _preset(name: str = "paper", **overrides):
    """A preset with the benchmark records' profiles (the statistics know no benchmark)."""
    return get_preset(name, profiles=simulation_profiles(), **overrides)


RECORD_COLUMNS = [
    "model",
    "benchmark",
    "item_id",
    "probe",
    "confidence",
    "confidence_kind",
    "correct",
    "reasoning",
]


def _binomial_ok(successes: int, n: int, p: float, alpha: float = 1e-4) -> bool:
    """Two-sided exact binomial test at a strict level: the count is consistent with p."""
    return stats.binomtest(int(successes), int(n), p).pvalue > alpha


# --- parameters and presets -------------------------------------------------------------------


def test_presets_exist_and_differ_in_individuated_weight():
    assert {"paper", "individuated"} <= set(PRESETS)
    assert PRESETS["paper"].individuated == 0.0
    assert PRESETS["individuated"].individuated > 0.0


def test_get_preset_overrides_and_rejects_unknown_names():
    params = get_preset("paper", individuated=0.3, residual_sd=1.0)
    assert params.individuated == 0.3 and params.residual_sd == 1.0
    assert PRESETS["paper"].individuated == 0.0  # the preset itself is untouched
    with pytest.raises(ValueError, match="unknown simulation preset 'nope'"):
        get_preset("nope")
    with pytest.raises(ValueError, match="individuatd"):
        get_preset("paper", individuatd=0.3)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("ability_sd", -1.0, "ability_sd"),
        ("reading_noise_sd", 0.0, "reading_noise_sd"),
        ("reasoning_fraction", 1.5, "reasoning_fraction"),
        ("ability_threshold_corr", 2.0, "ability_threshold_corr"),
        ("individuated", math.nan, "individuated"),
    ],
)
def test_params_validate(field, value, message):
    with pytest.raises(ValueError, match=message):
        SimulationParams(**{field: value})


def test_params_are_frozen_and_serialisable():
    params = _preset("paper")
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.individuated = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        params.benchmarks["squad"] = BenchmarkProfile()  # type: ignore[index]
    as_dict = params.to_dict()
    assert as_dict["benchmarks"]["mathbench"]["inline"] is True
    assert as_dict["individuated"] == 0.0


def test_model_names_and_index():
    assert model_names(3) == ["m01", "m02", "m03"]
    assert model_names(120)[0] == "m001" and model_names(120)[-1] == "m120"
    assert model_index("m07") == 7 and model_index("m120") == 120
    assert model_index("metacog-sim/m07") == 7  # record-table names from the harnesses
    for bad in ("gpt-4", "m0", "m-1", "07"):
        with pytest.raises(ValueError, match="m01, m02"):
            model_index(bad)
    with pytest.raises(ValueError):
        model_names(0)


def test_reasoning_models_are_spread_evenly_and_stable():
    params = _preset("paper", reasoning_fraction=0.3)
    small = Population(params, 12).reasoning()
    large = Population(params, 40).reasoning()
    assert [m for m, r in small.items() if r] == ["m04", "m07", "m10"]
    assert sum(large.values()) == 12  # floor(40 * 0.3)
    assert all(large[m] == r for m, r in small.items())


# --- determinism and order independence --------------------------------------------------------


def test_latent_depends_only_on_item_and_model():
    pop = Population(_preset("paper"), 8, seed=3)
    ids = [f"q{i}" for i in range(50)]
    full = pop.latent("mmlu_pro", ids)
    perm = np.random.default_rng(0).permutation(len(ids))
    shuffled = pop.latent("mmlu_pro", [ids[i] for i in perm])
    subset = pop.latent("mmlu_pro", ids[10:12], models=["m05", "m02"])
    for field in ("correct", "confidence", "p_yes", "numeric", "inline", "p_correct"):
        np.testing.assert_array_equal(getattr(shuffled, field), getattr(full, field)[perm])
        np.testing.assert_array_equal(
            getattr(subset, field), getattr(full, field)[10:12][:, [4, 1]]
        )
    # The same model in a bigger population, and in a fresh object, is the same model.
    again = Population(_preset("paper"), 30, seed=3).latent("mmlu_pro", ids, models=["m05"])
    np.testing.assert_array_equal(again.correct[:, 0], full.correct[:, 4])
    np.testing.assert_array_equal(again.p_yes[:, 0], full.p_yes[:, 4])


def test_latent_changes_with_seed_benchmark_and_item():
    params = _preset("paper")
    ids = [f"q{i}" for i in range(400)]
    a = Population(params, 10, seed=0).latent("squad", ids)
    b = Population(params, 10, seed=1).latent("squad", ids)
    c = Population(params, 10, seed=0).latent("mmlu_pro", ids)
    assert not np.array_equal(a.p_yes, b.p_yes)
    assert not np.array_equal(a.p_yes, c.p_yes)
    # Distinct items get distinct difficulties (no hash collisions on a few hundred ids).
    assert len(np.unique(a.difficulty)) == len(ids)


def test_common_random_numbers_across_individuated_weight():
    """Changing only the individuated weight leaves correctness untouched (paired designs)."""
    ids = [f"q{i}" for i in range(300)]
    a = Population(_preset("paper"), 6).latent("squad", ids)
    b = Population(_preset("paper", individuated=0.5), 6).latent("squad", ids)
    np.testing.assert_array_equal(a.correct, b.correct)
    assert not np.array_equal(a.confidence, b.confidence)


def test_latent_fields_are_consistent():
    pop = Population(_preset("paper"), 10, seed=0)
    state = pop.latent("mathbench", [f"q{i}" for i in range(200)])
    np.testing.assert_array_equal(state.confidence, state.p_yes > 0.5)
    np.testing.assert_allclose(state.uncertainty, 1.0 - state.p_yes)
    assert ((state.numeric >= 0) & (state.numeric <= 100)).all()
    np.testing.assert_array_equal(state.numeric, np.rint(state.numeric))
    # Inline solving happens only for reasoning models, and only on inline benchmarks.
    assert not state.inline[:, ~state.reasoning].any()
    assert state.inline[:, state.reasoning].mean() == pytest.approx(0.8, abs=0.1)
    squad = pop.latent("squad", [f"q{i}" for i in range(200)])
    assert not squad.inline.any()
    frame = state.frame()
    assert len(frame) == 200 * 10 and set(frame["model"]) == set(pop.models)
    with pytest.raises(ValueError, match="unknown probe"):
        pop.latent("squad", ["q1"], probe="retro")


def test_probes_share_correctness_and_counterfactual_is_close():
    pop = Population(_preset("paper"), 10, seed=0)
    ids = [f"q{i}" for i in range(500)]
    pro = pop.latent("squad", ids, probe="prospective")
    cf = pop.latent("squad", ids, probe="counterfactual")
    num = pop.latent("squad", ids, probe="numeric")
    np.testing.assert_array_equal(pro.correct, cf.correct)
    np.testing.assert_array_equal(pro.p_yes, num.p_yes)
    agreement = (pro.confidence == cf.confidence).mean()
    assert 0.8 < agreement < 1.0


def test_text_rng_is_deterministic():
    pop = Population(_preset("paper"), 4, seed=2)
    a = pop.rng("squad", "q1", "m02", "wrong", 0).integers(0, 2**32, 4)
    b = pop.rng("squad", "q1", "m02", "wrong", 0).integers(0, 2**32, 4)
    c = pop.rng("squad", "q1", "m02", "wrong", 1).integers(0, 2**32, 4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# --- the equations' marginals ------------------------------------------------------------------


def test_correctness_rate_matches_the_probit_model():
    """Each model's accuracy is Phi((a_jb - mu) / sqrt(1 + sd_r^2 + sd_d^2)) over random items."""
    params = _preset("paper")
    pop = Population(params, 6, seed=5)
    n = 20_000
    state = pop.latent("legalbench", [f"q{i}" for i in range(n)])
    prof = params.profile("legalbench")
    traits = pop.traits(benchmark="legalbench")
    denom = math.sqrt(1 + params.residual_sd**2 + prof.difficulty_sd**2)
    for j, row in traits.iterrows():
        expected = special.ndtr((row["benchmark_ability"] - prof.difficulty_mean) / denom)
        assert _binomial_ok(state.correct[:, j].sum(), n, expected), row["model"]
        # Given what the model knows of each item, p_correct is its success probability.
        assert _binomial_ok(state.correct[:, j].sum(), n, state.p_correct[:, j].mean())


def test_reasoning_models_get_the_ability_bonus():
    base = Population(_preset("paper", reasoning_ability_bonus=0.0), 10).traits()
    bonus = Population(_preset("paper", reasoning_ability_bonus=0.3), 10).traits()
    diff = bonus["ability"] - base["ability"]
    np.testing.assert_allclose(diff, np.where(base["reasoning"], 0.3, 0.0), atol=1e-12)


def test_yes_rate_matches_the_threshold_model():
    """P(yes) = Phi((shift - t) / sqrt(leg^2 sd_d^2 + w^2 sd_r^2 + sd_m^2 + s^2)), no inlining."""
    params = _preset("paper", individuated=0.5)
    pop = Population(params, 8, seed=11)
    n = 20_000
    state = pop.latent("squad", [f"q{i}" for i in range(n)])
    prof = params.profile("squad")
    traits = pop.traits()
    for j, row in traits.iterrows():
        scale = math.sqrt(
            (prof.legibility * prof.difficulty_sd) ** 2
            + (params.individuated * params.residual_sd) ** 2
            + params.misreading_sd**2
            + row["reading_noise"] ** 2
        )
        expected = special.ndtr((prof.confidence_shift - row["threshold"]) / scale)
        assert _binomial_ok(state.confidence[:, j].sum(), n, expected), row["model"]


def test_null_preset_confidence_is_independent_of_correctness():
    df = simulate_records(
        _preset("null"), n_models=5, items_per_benchmark=4000, seed=1, benchmarks=["squad"]
    )
    for model, d in df.groupby("model"):
        table = pd.crosstab(d["confidence"], d["correct"]).to_numpy()
        assert stats.chi2_contingency(table).pvalue > 1e-4, model


def test_paper_confidence_tracks_shared_difficulty_not_own_residual():
    """Under ``paper`` confidence and correctness correlate within a model only through the item."""
    pop = Population(_preset("paper"), 6, seed=2)
    state = pop.latent("squad", [f"q{i}" for i in range(20_000)])
    for j in range(6):
        phi = stats.pearsonr(state.confidence[:, j], state.correct[:, j]).statistic
        assert phi > 0.1
        # Given the item difficulty, the confidence carries nothing about the residual:
        # in a logistic regression of correctness on difficulty and confidence, the
        # confidence coefficient is within 4 standard errors of 0 (and it is not, below).
        x = np.c_[np.ones(len(state.difficulty)), state.difficulty, state.confidence[:, j]]
        coef, se = _logit_fit(x, state.correct[:, j].astype(float))
        assert abs(coef[2]) < 4 * se[2]
    individuated = Population(_preset("individuated"), 6, seed=2)
    state = individuated.latent("squad", [f"q{i}" for i in range(20_000)])
    x = np.c_[np.ones(len(state.difficulty)), state.difficulty, state.confidence[:, 0]]
    coef, se = _logit_fit(x, state.correct[:, 0].astype(float))
    assert coef[2] > 4 * se[2]


def _logit_fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unpenalised logistic regression coefficients and their standard errors."""
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(C=np.inf, fit_intercept=False, max_iter=1000).fit(x, y)
    coef = fit.coef_[0]
    p = special.expit(x @ coef)
    cov = np.linalg.inv((x * (p * (1 - p))[:, None]).T @ x)
    return coef, np.sqrt(np.diag(cov))


def test_inline_solving_makes_the_probe_follow_own_correctness():
    params = _preset("paper")
    pop = Population(params, 10, seed=4)
    state = pop.latent("omni_math", [f"q{i}" for i in range(5000)])
    inline = state.inline
    agree = state.confidence[inline] == state.correct[inline]
    assert _binomial_ok(agree.sum(), agree.size, special.ndtr(params.inline_strength))
    not_inline = state.confidence[~inline] == state.correct[~inline]
    assert agree.mean() > not_inline.mean() + 0.15


# --- record tables -----------------------------------------------------------------------------


def test_simulate_records_schema_and_agreement_with_population():
    params = _preset("paper")
    args = dict(
        n_models=4,
        items_per_benchmark=30,
        benchmarks=["squad", "mathbench"],
        seed=9,
        probes=("prospective", "numeric"),
    )
    df = simulate_records(params, **args)
    assert list(df.columns) == RECORD_COLUMNS
    assert len(df) == 4 * 30 * 2 * 2
    assert not df.duplicated(["model", "benchmark", "item_id", "probe"]).any()
    assert set(df["confidence_kind"]) == {"verbal_binary", "verbal_numeric"}
    binary = df[df["probe"] == "prospective"]
    assert set(binary["confidence"].unique()) <= {0.0, 1.0}
    numeric = df[df["probe"] == "numeric"]
    assert numeric["confidence"].between(0, 1).all()
    assert set(df["correct"].unique()) <= {0.0, 1.0}
    assert df["reasoning"].dtype == bool

    pop = Population(params, 4, seed=9)
    state = pop.latent("mathbench", [f"mathbench-{i:05d}" for i in range(1, 31)])
    rows = binary[binary["benchmark"] == "mathbench"]
    wide = rows.pivot(index="item_id", columns="model", values="confidence")
    np.testing.assert_array_equal(wide.to_numpy(), state.confidence.astype(float))
    again = simulate_records(params, **args)
    pd.testing.assert_frame_equal(df, again)


def test_simulated_records_pass_the_record_validator(tmp_path):
    from metacog_metrics.records import read_records, validate_records

    df = simulate_records(
        _preset("paper"),
        n_models=3,
        items_per_benchmark=12,
        probes=("prospective", "counterfactual", "numeric"),
    )
    checked = validate_records(df, source="simulated")
    assert len(checked) == len(df)
    run_simulate(
        tmp_path / "r.parquet", models=3, items_per_benchmark=12, profiles=simulation_profiles()
    )
    back = read_records([tmp_path / "r.parquet"])
    assert len(back) == 3 * 12 * 6 and set(back["model"]) == {"m01", "m02", "m03"}


def test_simulate_records_rejects_bad_input():
    with pytest.raises(ValueError, match="items_per_benchmark"):
        simulate_records(_preset("paper"), items_per_benchmark=0)
    with pytest.raises(ValueError, match="unknown probe"):
        simulate_records(_preset("paper"), probes=("retrospective",))
    with pytest.raises(ValueError, match="at least one model"):
        simulate_records(_preset("paper"), n_models=0)


def test_unknown_benchmark_uses_the_default_profile():
    df = simulate_records(
        _preset("paper"), n_models=3, items_per_benchmark=10, benchmarks=["my_bench"]
    )
    assert set(df["benchmark"]) == {"my_bench"}


# --- batched arrays ----------------------------------------------------------------------------


def test_simulate_arrays_shapes_and_determinism():
    params = _preset("paper")
    arrays = simulate_arrays(params, 7, 50, 3, rng=1)
    conf, perf = arrays
    assert conf.shape == perf.shape == (3, 50, 7)
    assert conf.dtype == np.uint8 and perf.dtype == np.uint8
    assert arrays.ability.shape == arrays.threshold.shape == (3, 7)
    again = simulate_arrays(params, 7, 50, 3, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(again.conf, conf)
    assert not np.array_equal(conf[0], conf[1])
    with pytest.raises(ValueError, match="reps"):
        simulate_arrays(params, 7, 50, 0)


def test_simulate_arrays_matches_the_population_path_in_distribution():
    """Both draw paths implement the same model: population-level rates agree."""
    params = _preset("paper")
    arrays = simulate_arrays(params, 10, 400, 60, rng=3)
    frames = [
        simulate_records(params, n_models=10, items_per_benchmark=400, seed=s, benchmarks=["squad"])
        for s in range(8)
    ]
    records = pd.concat(frames)
    for col, arr in (("correct", arrays.perf), ("confidence", arrays.conf)):
        # Replicate-level means vary with the drawn population; compare with a t-test.
        rep_means = arr.reshape(arr.shape[0], -1).mean(axis=1)
        rec_means = [f[col].mean() for f in frames]
        assert stats.ttest_ind(rep_means, rec_means).pvalue > 1e-3, col
    assert records["correct"].mean() == pytest.approx(arrays.perf.mean(), abs=0.08)


# --- run_simulate ------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_run_simulate_writes_records_and_truth(tmp_path, suffix):
    out = tmp_path / "sub" / f"records{suffix}"
    result = run_simulate(
        out,
        preset="individuated",
        models=5,
        items_per_benchmark=20,
        seed=4,
        benchmarks=["squad", "scicode"],
        profiles=simulation_profiles(),
    )
    table = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out)
    assert result.n_rows == len(table) == 5 * 20 * 2
    # The record writer adds the optional text columns (empty for simulated records).
    assert set(RECORD_COLUMNS) <= set(table.columns)
    assert table[["question", "probe_text", "solve_text"]].isna().all().all()
    truth = pd.read_csv(result.models_path)
    assert list(truth["model"]) == model_names(5)
    assert {"ability", "threshold", "reading_noise", "reasoning"} <= set(truth.columns)
    assert result.params["individuated"] == PRESETS["individuated"].individuated
    assert "5 models" in result.summary_text()
    assert result.to_dict()["seed"] == 4
    assert not list(out.parent.glob("*.tmp"))


def test_run_simulate_overrides_and_errors(tmp_path):
    result = run_simulate(
        tmp_path / "r.csv",
        models=3,
        items_per_benchmark=5,
        individuated=0.25,
        overrides={"residual_sd": 1.2},
        benchmarks=["squad"],
    )
    assert result.params["individuated"] == 0.25 and result.params["residual_sd"] == 1.2
    with pytest.raises(ValueError, match=r"\.parquet or \.csv"):
        run_simulate(tmp_path / "r.json", models=3, items_per_benchmark=5)
    assert not (tmp_path / "r.json").exists()


# --- item discrimination (2PL) and guessing (3PL) ----------------------------------------------

# SHA-256 of records and arrays drawn by the generator before discrimination and guessing were
# added (the same calls, on the commit before): the existing presets must not change.
_BEFORE_2PL = {
    "paper": (
        "fe4e6ba884a0f866ddd3a8dd7fdb09853101409d03369bc02a4b27e91d4955b3",
        "6c31fd9f1afc54cd056ba28d87d4296fbbad6bee9876d4751b6022a497a9c849",
    ),
    "individuated": (
        "be3dba5bc06ef08dbe2b7bd6bde1d16da5e3a3b833c36785d3ba74ec2179e23b",
        "092b3766031a89a6f01e8d73c76e69b8c40a6b1375f8ea2a61f24b29949a398c",
    ),
    "null": (
        "f0a92b9319c2a5a6b0201f7abfc1f50f579722a78ffea8c56b8633523c4a9827",
        "cc2772af8204f6307558faef9cfd254d313d3923a9734acdec866913d26b7377",
    ),
}


@pytest.mark.parametrize("name", sorted(_BEFORE_2PL))
def test_existing_presets_draw_the_same_records_as_before(name):
    import hashlib

    table = simulate_records(
        _preset(name), n_models=6, items_per_benchmark=40, seed=3,
        probes=("prospective", "numeric"),
    )  # fmt: skip
    arrays = simulate_arrays(_preset(name), 5, 30, 3, rng=11, benchmark="mathbench")
    raw = b"".join(
        a.tobytes() for a in (arrays.conf, arrays.perf, arrays.ability, arrays.threshold)
    )
    digests = (
        hashlib.sha256(table.to_csv(index=False).encode()).hexdigest(),
        hashlib.sha256(raw).hexdigest(),
    )
    assert digests == _BEFORE_2PL[name]


def test_2pl_and_3pl_presets():
    assert PRESETS["2pl"].discrimination_sd == 1.0 and PRESETS["2pl"].guessing == 0.0
    assert PRESETS["3pl"].guessing == 0.25 and PRESETS["3pl"].discrimination_sd == 0.0
    assert PRESETS["paper"].discrimination_sd == 0.0 and PRESETS["paper"].guessing == 0.0
    for field, value in (("discrimination_sd", -0.1), ("guessing", 1.0), ("guessing", -0.1)):
        with pytest.raises(ValueError, match=field):
            SimulationParams(**{field: value})


def test_2pl_items_have_lognormal_discrimination():
    """With no residual, Phi^-1(p_correct) = k_i (a_jb - d_i): one slope k_i per item across
    models, log k_i ~ N(0, discrimination_sd^2). Every model here is 0.05 above every item,
    so p_correct stays far from saturation and no item is filtered out."""
    params = _preset(
        "2pl", residual_sd=0.0, ability_mean=0.05, ability_sd=0.0, benchmark_ability_sd=0.0,
        reasoning_ability_bonus=0.0, default_profile=BenchmarkProfile(difficulty_sd=0.0),
    )  # fmt: skip
    state = Population(params, 4, seed=2).latent("any", [f"q{i}" for i in range(3000)])
    slope = special.ndtri(state.p_correct) / 0.05
    np.testing.assert_allclose(slope, slope[:, :1] * np.ones_like(slope), rtol=1e-9)
    assert stats.kstest(np.log(slope[:, 0]), "norm", args=(0.0, 1.0)).pvalue > 1e-3
    # The equal-slope model has k_i = 1 exactly.
    flat = Population(dataclasses.replace(params, discrimination_sd=0.0), 4, seed=2)
    np.testing.assert_allclose(special.ndtri(flat.latent("any", ["q1"]).p_correct), 0.05)


def test_3pl_guessing_is_a_lower_asymptote_that_confidence_does_not_see():
    """Same seed: the 3PL population solves exactly what the paper one solves, adds lucky
    guesses at rate c on the rest, and says "yes" to exactly the same items."""
    n = 20_000
    ids = [f"q{i}" for i in range(n)]
    base = Population(_preset("paper"), 6, seed=4).latent("scicode", ids)
    guess = Population(_preset("3pl"), 6, seed=4).latent("scicode", ids)
    np.testing.assert_array_equal(base.confidence, guess.confidence)
    assert (guess.correct >= base.correct).all()
    unsolved = ~base.correct
    assert _binomial_ok(guess.correct[unsolved].sum(), int(unsolved.sum()), 0.25)
    np.testing.assert_allclose(guess.p_correct, 0.25 + 0.75 * base.p_correct, rtol=1e-12)
    arrays = simulate_arrays(_preset("3pl"), 6, 2000, 2, rng=0, benchmark="scicode")
    paper = simulate_arrays(_preset("paper"), 6, 2000, 2, rng=0, benchmark="scicode")
    np.testing.assert_array_equal(arrays.conf, paper.conf)
    assert (arrays.perf >= paper.perf).all() and arrays.perf.mean() > paper.perf.mean() + 0.1


def test_rasch_preset_is_a_logistic_model():
    """rasch: P(correct) = expit(a_jb - d_i) exactly (no residual), and the cell rates agree."""
    pop = Population(_preset("rasch"), 5, seed=6)
    n = 20_000
    state = pop.latent("squad", [f"q{i}" for i in range(n)])
    ability = pop.traits(benchmark="squad")["benchmark_ability"].to_numpy()
    expected = 1.0 / (1.0 + np.exp(-(ability[None, :] - state.difficulty[:, None])))
    np.testing.assert_allclose(state.p_correct, expected, rtol=1e-12)
    assert _binomial_ok(state.correct.sum(), state.correct.size, expected.mean())
    # Logistic, not probit: the rate of items one unit below a model is expit(1) = 0.731.
    gap = ability[None, :] - state.difficulty[:, None]
    near = np.abs(gap - 1.0) < 0.05
    assert _binomial_ok(state.correct[near].sum(), int(near.sum()), float(expected[near].mean()))
    assert abs(state.correct[near].mean() - special.ndtr(1.0)) > 0.05  # probit would give 0.84
    with pytest.raises(ValueError, match="link"):
        SimulationParams(link="cloglog")
