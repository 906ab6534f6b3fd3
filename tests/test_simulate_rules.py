"""The generative model's bookkeeping, rule by rule (seconds): the long table of a latent state
by hand, the text generators' keys against hashlib, the reasoning flags of a subset of models,
and what :func:`run_simulate` writes and says. ``tests/test_simulate.py`` checks the equations
and the draws."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from metacog_metrics.simulate import (
    PRESETS,
    BenchmarkProfile,
    LatentState,
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
    assert without["felt_uncertainty"].dtype == np.float64


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
        profiles=simulation_profiles(),
    )  # fmt: skip
    assert res.path == str(out) and isinstance(res.path, str)
    assert res.models_path == str(tmp_path / "run.models.csv")
    assert res.n_rows == 3 * 4 * 2 * 2
    assert res.models == ("m01", "m02", "m03")
    assert res.benchmarks == ("squad", "omni_math")
    assert (res.preset, res.seed) == ("null", 7)
    assert res.params == _preset("null").to_dict()
    assert res.params["benchmarks"]["omni_math"]["legibility"] == 0.0  # the null preset's rule
    assert res.summary_text() == (
        f"wrote 48 records (3 models x 2 benchmarks, preset null, seed 7) to {out}; "
        f"true model traits in {tmp_path / 'run.models.csv'}"
    )
    table = pd.read_csv(out)
    assert sorted(table["probe"].unique()) == ["numeric", "prospective"]
    pop = Population(_preset("null"), 3, seed=7)
    want = pop.records("squad", table["item_id"].iloc[:4].tolist())
    np.testing.assert_array_equal(table["confidence"].iloc[:12], want["confidence"])
    truth = pd.read_csv(res.models_path)
    assert truth.columns.tolist() == ["model", "ability", "threshold", "reading_noise", "reasoning"]
    pop = Population(get_preset("null"), 3, seed=7)
    np.testing.assert_allclose(truth["ability"], pop.traits()["ability"])


def test_run_simulate_accepts_pq_and_defaults_to_20_models_500_items_every_profile(
    tmp_path,
) -> None:
    res = run_simulate(tmp_path / "r.pq", profiles=simulation_profiles())
    assert res.benchmarks == ("squad", "mmlu_pro", "legalbench", "mathbench", "omni_math",
                              "scicode")  # fmt: skip
    assert (res.preset, res.seed, res.n_rows) == ("paper", 0, 20 * 500 * 6)
    assert res.models == tuple(f"m{k:02d}" for k in range(1, 21))
    table = pd.read_parquet(tmp_path / "r.pq", columns=["model", "item_id", "confidence"])
    first = table[table["model"] == "m01"].iloc[:3]
    state = Population(_preset("paper"), 20, seed=0).latent("squad", first["item_id"])
    np.testing.assert_array_equal(first["confidence"], state.confidence[:, 0].astype(float))


def test_run_simulate_names_a_bad_extension(tmp_path) -> None:
    with pytest.raises(ValueError) as err:
        run_simulate(tmp_path / "r.json", models=2, items_per_benchmark=2)
    assert str(err.value) == f"{tmp_path / 'r.json'}: write .parquet or .csv, not .json"
    with pytest.raises(ValueError) as err:
        run_simulate(tmp_path / "records", models=2, items_per_benchmark=2)
    assert str(err.value).endswith("records: write .parquet or .csv, not no extension")


def test_fresh_default_parameters_name_no_benchmark() -> None:
    fresh = SimulationParams()  # built now, not the presets' import-time copy
    assert dict(fresh.benchmarks) == {}
    assert fresh.default_profile == BenchmarkProfile(difficulty_sd=1.5)
    assert fresh.profile("anything") == fresh.default_profile
    assert fresh.to_dict() == PRESETS["paper"].to_dict()
    assert all(dict(p.benchmarks) == {} for p in PRESETS.values())


def test_get_preset_takes_the_callers_profiles_with_the_presets_rule() -> None:
    quiz = BenchmarkProfile(difficulty_mean=1.0, difficulty_sd=2.0, legibility=0.7, inline=True)
    paper = get_preset("paper", profiles={"quiz": quiz, "exam": BenchmarkProfile()})
    assert list(paper.benchmarks) == ["quiz", "exam"] and paper.profile("quiz") == quiz
    null = get_preset("null", profiles={"quiz": quiz}, individuated=0.2)
    assert null.profile("quiz") == dataclasses.replace(quiz, legibility=0.0)
    assert null.individuated == 0.2 and null.inline_rate == 0.0
    assert null.default_profile.legibility == 0.0  # the same rule, already in the preset
    assert get_preset("paper", profiles=None) == PRESETS["paper"]
    with pytest.raises(ValueError) as err:
        get_preset("paper", profiles={"quiz": quiz}, benchmarks={"quiz": quiz})
    assert str(err.value) == "give the benchmark profiles as profiles= or benchmarks=, not both"
    with pytest.raises(ValueError) as err:
        get_preset("paper", profiles={"b": {"difficulty_sd": 1.0}, "a": quiz})  # type: ignore[dict-item]
    assert str(err.value) == "get_preset: not a BenchmarkProfile for ['b']"
    table = simulate_records(paper, n_models=2, items_per_benchmark=1)  # the profiled ones
    assert table["benchmark"].unique().tolist() == ["quiz", "exam"]


def _arrays_by_hand(params, profile, n_models, n_items, reps, seed, reasoning):
    """The batched draws written out from the module docstring's equations, in the documented
    draw order (traits, difficulty, benchmark ability, inline, residual, solve, read,
    misreading, then discrimination and guessing only when used)."""
    rng = np.random.default_rng(seed)
    shape = (reps, n_items, n_models)
    za, zt, zn = (rng.standard_normal((reps, 1, n_models)) for _ in range(3))
    zd = rng.standard_normal((reps, n_items, 1))
    zb = rng.standard_normal((reps, 1, n_models))
    u_inline = rng.random(shape) if profile.inline else None
    z_res, z_solve, z_read = (rng.standard_normal(shape) for _ in range(3))
    z_mis = rng.standard_normal((reps, n_items, 1))
    z_disc = rng.standard_normal((reps, n_items, 1)) if params.discrimination_sd > 0 else 0.0
    u_guess = rng.random(shape) if params.guessing > 0 else None
    rho = params.ability_threshold_corr
    ability = (
        params.ability_mean + params.ability_sd * za + params.reasoning_ability_bonus * (reasoning)
    )
    z_t = -rho * za + np.sqrt(1 - rho**2) * zt
    threshold = params.threshold_mean + params.threshold_sd * z_t
    jitter = params.noise_jitter
    noise = params.reading_noise_sd * np.sqrt(1 + params.extremity_noise * z_t**2)
    noise = noise * np.exp(jitter * zn - jitter**2 / 2)
    d = profile.difficulty_mean + profile.difficulty_sd * zd
    a_jb = ability + params.benchmark_ability_sd * zb
    r = params.residual_sd * z_res
    u = (
        z_solve
        if params.link == "probit"
        else np.log(stats.norm.cdf(z_solve) / stats.norm.sf(z_solve))
    )
    correct = np.exp(params.discrimination_sd * z_disc) * (a_jb - d) + r + u > 0
    if u_guess is not None:
        correct = correct | (u_guess < params.guessing)
    reading = (profile.legibility * (profile.difficulty_mean - d) + profile.confidence_shift
               + params.individuated * r + params.misreading_sd * z_mis)  # fmt: skip
    margin = (reading - threshold) / noise + z_read
    if profile.inline and params.inline_rate > 0:
        inline = reasoning & (u_inline < params.inline_rate)
        margin = np.where(inline, params.inline_strength * (2 * correct - 1.0) + z_read, margin)
    return margin > 0, correct, a_jb[:, 0, :], threshold[:, 0, :]


@pytest.mark.parametrize(
    ("preset", "benchmark", "overrides"),
    [
        ("3pl", "mathbench", {"discrimination_sd": 0.7}),  # 2PL slopes and guessing, inline
        ("2pl", "squad", {}),
        ("rasch", "omni_math", {"individuated": 0.5}),  # logistic solving noise
        ("paper", "legalbench", {}),
        ("3pl", "squad", {}),  # guessing without slopes: no slope draw before the guesses
    ],
)
def test_batched_draws_follow_the_equations_written_out(preset, benchmark, overrides) -> None:
    params = _preset(preset, reasoning_fraction=0.3, **overrides)
    # reasoning_fraction 0.3 over models 1..4: floor(0.3 k) steps up at k = 4 only
    reasoning = np.array([False, False, False, True])
    got = simulate_arrays(params, 4, 6, 3, rng=9, benchmark=benchmark)
    conf, perf, ability, threshold = _arrays_by_hand(
        params, params.profile(benchmark), 4, 6, 3, 9, reasoning
    )
    np.testing.assert_array_equal(got.reasoning, reasoning)
    np.testing.assert_allclose(got.ability, ability, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.threshold, threshold, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got.perf, perf.astype(np.uint8))
    np.testing.assert_array_equal(got.conf, conf.astype(np.uint8))
    assert got.conf.dtype == np.uint8 and got.perf.dtype == np.uint8


def test_batched_draws_default_to_the_default_profile_and_accept_single_sizes() -> None:
    hard = BenchmarkProfile(difficulty_mean=3.0, difficulty_sd=1.5)
    params = get_preset("paper", profiles={"hard": hard})
    a = simulate_arrays(params, 1, 50, 1, rng=5)
    b = simulate_arrays(params, 1, 50, 1, rng=5, benchmark="unprofiled")
    c = simulate_arrays(params, 1, 50, 1, rng=5, benchmark="hard")
    np.testing.assert_array_equal(a.conf, b.conf)
    np.testing.assert_array_equal(a.perf, b.perf)
    np.testing.assert_array_equal(a.ability, b.ability)
    assert c.perf.sum() < a.perf.sum()  # the same draws against harder items
    params = get_preset("paper")
    a = simulate_arrays(params, 1, 1, 1, rng=5)
    assert a.conf.shape == (1, 1, 1)
    for sizes in ((0, 3, 3), (3, 0, 3), (3, 3, 0)):
        with pytest.raises(ValueError) as err:
            simulate_arrays(params, *sizes)
        assert str(err.value) == (
            "n_models, n_items and reps must be >= 1, got {}, {}, {}".format(*sizes)
        )


def test_profile_and_parameter_messages_and_the_plain_form() -> None:
    with pytest.raises(ValueError) as err:
        BenchmarkProfile(difficulty_sd=-1.0)
    assert str(err.value) == "difficulty_sd must be >= 0, got -1.0"
    d = _preset("paper").to_dict()
    assert set(d) == {f.name for f in dataclasses.fields(SimulationParams)}
    assert d["default_profile"] == {"difficulty_mean": 0.0, "difficulty_sd": 1.5,
                                    "legibility": 1.0, "confidence_shift": 0.0,
                                    "inline": False}  # fmt: skip
    assert d["benchmarks"]["scicode"] == {"difficulty_mean": 1.8, "difficulty_sd": 1.2,
                                          "legibility": 0.8, "confidence_shift": -0.5,
                                          "inline": False}  # fmt: skip
    assert d["ability_mean"] == 0.4 and d["link"] == "probit"


def test_traits_and_records_of_a_subset_of_models_and_a_rerun() -> None:
    pop = Population(get_preset("paper"), 6, seed=1)
    full = pop.traits()
    sub = pop.traits(["m05", "m02"])
    assert sub["model"].tolist() == ["m05", "m02"]
    np.testing.assert_array_equal(sub["ability"], full["ability"].to_numpy()[[4, 1]])
    recs = pop.records("squad", ["a", "b", "c"], probes=("prospective", "numeric"),
                       models=["m05", "m02"], sampling_seed=4)  # fmt: skip
    assert recs.index.tolist() == list(range(12))
    assert recs["model"].tolist() == (["m05"] * 3 + ["m02"] * 3) * 2
    state = pop.latent("squad", ["a", "b", "c"], models=["m05", "m02"], sampling_seed=4)
    want = state.confidence.T.ravel().astype(float)
    np.testing.assert_array_equal(recs["confidence"].to_numpy()[:6], want)
    own = pop.latent("squad", ["a", "b", "c"], models=["m05", "m02"])
    assert not np.array_equal(state.confidence, own.confidence)  # the rerun draws afresh


def test_simulate_records_checks_and_passes_on_its_arguments() -> None:
    params = _preset("paper")
    one = simulate_records(params, n_models=2, items_per_benchmark=1, benchmarks=["squad"])
    assert len(one) == 2 and one.index.tolist() == [0, 1]
    two = simulate_records(params, n_models=2, items_per_benchmark=1, benchmarks=["squad", "x"])
    assert two.index.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError) as err:
        simulate_records(params, n_models=2, items_per_benchmark=2, benchmarks=[])
    assert str(err.value) == "no benchmarks given, and the parameters profile none"
    with pytest.raises(ValueError, match="profile none"):
        simulate_records(get_preset("paper"), n_models=2, items_per_benchmark=2)
    for probes, shown in ((("prospective", "retro"), "['retro']"), ((), "[]")):
        with pytest.raises(ValueError) as err:
            simulate_records(params, n_models=2, items_per_benchmark=2, probes=probes)
        assert str(err.value) == (
            f"unknown probe(s) {shown}; choose from ('prospective', 'counterfactual', 'numeric')"
        )
    rerun = simulate_records(params, n_models=3, items_per_benchmark=4, benchmarks=["squad"],
                             seed=2, sampling_seed=6)  # fmt: skip
    pop = Population(params, 3, seed=2)
    ids = rerun["item_id"].unique().tolist()
    want = pop.records("squad", ids, sampling_seed=6)
    np.testing.assert_array_equal(rerun["confidence"], want["confidence"])
    np.testing.assert_array_equal(rerun["correct"], want["correct"])


def test_simulate_records_defaults_twenty_models_500_items_seed_0() -> None:
    params = get_preset("paper")
    table = simulate_records(params, benchmarks=["squad"])
    assert len(table) == 20 * 500
    assert table["model"].unique().tolist() == [f"m{k:02d}" for k in range(1, 21)]
    ids = table["item_id"].unique().tolist()
    assert len(ids) == 500
    want = Population(params, 20, seed=0).records("squad", ids)
    np.testing.assert_array_equal(table["confidence"], want["confidence"])


def test_a_rerun_redraws_the_reading_noise_of_every_cell_independently() -> None:
    # squad, prospective: margin = (reading - threshold) / noise + z_read, and a rerun keeps
    # everything but z_read; the difference of two independent N(0, 1) draws has variance 2,
    # the same for two reruns of different sampling seeds
    pop = Population(get_preset("paper"), 10, seed=0)
    ids = [f"q{i}" for i in range(300)]
    own = special.ndtri(pop.latent("squad", ids).p_yes)
    for a, b in ((None, 1), (1, 2)):
        first = own if a is None else special.ndtri(pop.latent("squad", ids, sampling_seed=a).p_yes)
        second = special.ndtri(pop.latent("squad", ids, sampling_seed=b).p_yes)
        diff = (second - first).ravel()
        # 3000 cells: the sample variance of chi-square / 2999 draws lies within 2 +- 0.2
        assert diff.var() == pytest.approx(2.0, abs=0.2) and abs(diff.mean()) < 0.1


def test_the_wording_noise_is_independent_of_the_lucky_guess() -> None:
    # felt_uncertainty = Phi(-(margin + wording_noise_sd * z)) with z ~ N(0, 1) of its own: z
    # must not be the uniform that decides a 3PL lucky guess (it was: both streams had tag 7,
    # so every cell with z in its lowest quarter was correct, the wording leaking the guess)
    params = get_preset("3pl")
    state = Population(params, 20, seed=0).latent("squad", [f"q{i}" for i in range(1000)])
    z = -special.ndtri(state.felt_uncertainty) - special.ndtri(state.p_yes)
    z = z / params.wording_noise_sd
    assert z.var() == pytest.approx(1.0, abs=0.05)
    low = z < np.quantile(z, 0.25)
    # 5000 and 15000 cells: the two shares differ by about 0.008 (one sd) when independent
    assert abs(state.correct[low].mean() - state.correct[~low].mean()) < 0.04


def test_parameter_bounds_are_inclusive_where_documented_and_named() -> None:
    # inclusive bounds are accepted
    SimulationParams(reading_noise_sd=0.5, inline_rate=1.0, reasoning_fraction=1.0,
                     ability_threshold_corr=-1.0)  # fmt: skip
    SimulationParams(ability_threshold_corr=1.0)
    with pytest.raises(ValueError) as err:
        SimulationParams(ability_threshold_corr=-1.5)
    assert str(err.value) == "SimulationParams.ability_threshold_corr must lie in [-1, 1], got -1.5"
    with pytest.raises(ValueError) as err:
        SimulationParams(benchmarks={"a": BenchmarkProfile(), "b": {"difficulty_sd": 1.0}})
    assert str(err.value) == "SimulationParams.benchmarks: not a BenchmarkProfile for ['b']"
    fresh = SimulationParams(benchmarks={"a": BenchmarkProfile()})  # built now, not a preset
    with pytest.raises(TypeError):
        fresh.benchmarks["b"] = BenchmarkProfile()  # type: ignore[index]


def test_model_names_of_one_model_and_nested_prefixes() -> None:
    assert model_names(1) == ["m01"]
    assert model_index("org/harness/m07") == 7
    with pytest.raises(TypeError) as err:
        Population({"link": "probit"}, 3)  # type: ignore[arg-type]
    assert str(err.value) == "params must be SimulationParams, got dict"
    with pytest.raises(ValueError) as err:
        Population(get_preset("paper"), 3).reasoning([])
    assert str(err.value) == "no models given"
    default = Population(get_preset("paper"), 3)
    assert default.seed == 0
    np.testing.assert_array_equal(
        default.latent("squad", ["a"]).p_yes, Population(get_preset("paper"), 3, seed=0)
        .latent("squad", ["a"]).p_yes,
    )  # fmt: skip


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_p_correct_is_calibrated_against_the_drawn_correctness(link) -> None:
    # correct = 1[skill + residual + u > 0] and p_correct = P(that | skill, residual): within
    # deciles of p_correct the share correct matches the mean p_correct
    params = get_preset("paper", link=link)
    state = Population(params, 20, seed=0).latent("squad", [f"q{i}" for i in range(1000)])
    p, y = state.p_correct.ravel(), state.correct.ravel()
    edges = np.quantile(p, np.linspace(0, 1, 11))
    bins = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, 9)
    for b in range(10):
        # 2000 cells a decile: one sd of the share is at most 0.011
        assert abs(y[bins == b].mean() - p[bins == b].mean()) < 0.05, b


def test_the_probes_and_the_wording_relate_as_the_equations_say() -> None:
    params = get_preset("paper")
    pop = Population(params, 10, seed=0)
    ids = [f"q{i}" for i in range(300)]
    pro = pop.latent("squad", ids)
    num = pop.latent("squad", ids, probe="numeric")
    cf = pop.latent("squad", ids, probe="counterfactual")
    margin = special.ndtri(pro.p_yes)
    # the counterfactual adds probe_noise_sd * z, z ~ N(0, 1) per cell
    z_probe = (special.ndtri(cf.p_yes) - margin) / params.probe_noise_sd
    assert z_probe.var() == pytest.approx(1.0, abs=0.1) and abs(z_probe.mean()) < 0.1
    # the wording follows margin + shift + wording_noise_sd * z, shift = numeric_shift for
    # the numeric probe only, with the same z for both probes
    z_pro = (-special.ndtri(pro.felt_uncertainty) - margin) / params.wording_noise_sd
    z_num = -special.ndtri(num.felt_uncertainty) - margin - params.numeric_shift
    np.testing.assert_allclose(z_num / params.wording_noise_sd, z_pro, atol=1e-6)
    assert z_pro.var() == pytest.approx(1.0, abs=0.1)
    # a benchmark without inline solving has a boolean all-False inline flag
    assert pro.inline.dtype == bool and not pro.inline.any()


def test_every_random_stream_has_its_own_tag():
    # two uses of one tag draw the same numbers: the 3PL lucky guess once shared the wording
    # noise's tag, and the rationale's wording leaked correctness
    import metacog_metrics.simulate as sim_module

    tags = {k: v for k, v in vars(sim_module).items() if k.startswith("_S_")}
    assert len(tags) == 14
    assert len(set(tags.values())) == len(tags), tags
