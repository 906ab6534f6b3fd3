"""A psychometric generative model of confidence and correctness whose truth is known.

Items have a shared latent difficulty per benchmark; models have an ability and a response
threshold. For item ``i`` and model ``j`` on benchmark ``b``::

    difficulty   d_i  = mu_b + sigma_b * z_i
    ability      a_jb = ability_j + benchmark_ability_sd * z_jb
    residual     r_ij = residual_sd * z_ij                         (what j privately knows of i)
    discrimination  k_i = exp(discrimination_sd * z''_i)          (1 when discrimination_sd = 0)
    solved       s_ij = 1[k_i * (a_jb - d_i) + r_ij + u_ij > 0],  u ~ N(0, 1)   (probit)
                                                   or u ~ Logistic(0, 1)    (link = "logit")
    correct      y_ij = s_ij or g_ij,  g_ij ~ Bernoulli(guessing)   (a lower asymptote)
    misreading   m_i  = misreading_sd * z'_i                         (shared by all models)
    reading      x_ij = legibility_b * (mu_b - d_i) + m_i + shift_b + individuated * r_ij
    confidence   c_ij = 1[x_ij + s_j * e_ij > t_j],  e ~ N(0, 1)

``t_j`` is the model's response threshold and ``s_j`` its reading noise, which grows with the
distance of ``t_j`` from the population's central threshold (models with extreme yes-rates read
the item less), so the first-factor loadings of the confidence matrix form an inverted parabola
over thresholds. The shared misreading ``m_i`` is how an item looks harder or easier than it is
to every model alike (its surface), so confidence and correctness share their extremes (items
all models get right, or wrong) but part company in between, on the contentious items. With
``individuated == 0`` the confidence carries no private signal: it is the shared, partly
mistaken, reading of difficulty through each model's threshold, the regime the paper found. A
reasoning model on a benchmark that allows inline solving solves the item inside the probe with
probability ``inline_rate``; its probe then follows its own correctness,
``c_ij = 1[inline_strength * (2 y_ij - 1) + e_ij > 0]``.

The rationale a simulated model writes follows ``w_ij = margin_ij + wording_noise_sd * z_ij``,
a second noisy read of the same internal state (``margin_ij`` is what is thresholded at 0 for
the verdict), never ``y_ij`` itself: a text classifier can recover no more about correctness than
``w_ij`` holds (``LatentState.felt_uncertainty = Phi(-w_ij)``).

Two draw paths share these equations:

* :class:`Population` hashes ``(seed, benchmark, item_id, model)`` into every random number, so
  the latent state of an item never depends on which other items are asked, in which order or
  through which harness (the simulated harness models and :func:`simulate_records` agree);
* :func:`simulate_arrays` draws whole populations in batches from a numpy Generator for power
  analysis.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from metacog_metrics._io import atomic_write
from metacog_metrics._result import Result

if TYPE_CHECKING:  # pandas is imported where a table is built: the profiles stay cheap to import
    import pandas as pd

__all__ = [
    "PRESETS",
    "BenchmarkProfile",
    "LatentState",
    "Population",
    "SimulateResult",
    "SimulatedArrays",
    "SimulationParams",
    "get_preset",
    "model_index",
    "model_names",
    "parameter_overrides",
    "run_simulate",
    "simulate_arrays",
    "simulate_records",
]


def parameter_overrides(name: str, value: Any) -> dict[str, Any] | None:
    """An option's check (:func:`metacog_metrics._options.option`): ``value``, a mapping of
    :class:`SimulationParams` fields to values, as a dict (None stays None)."""
    if value is not None and not isinstance(value, Mapping):
        raise ValueError(f"{name} must map SimulationParams fields to values, got {value!r}")
    return None if value is None else dict(value)


#: Probes the generative model answers (the harness layer's ``PROBES``).
SIM_PROBES: tuple[str, ...] = ("prospective", "counterfactual", "numeric")


@dataclasses.dataclass(frozen=True)
class BenchmarkProfile:
    """How one benchmark's items look to the population.

    Attributes:
        difficulty_mean: Mean latent difficulty ``mu_b`` (probit units; higher is harder).
        difficulty_sd: Spread ``sigma_b`` of item difficulty.
        legibility: How strongly the models' shared reading of confidence follows difficulty.
        confidence_shift: Added to every model's reading on this benchmark (positive: more "yes").
        inline: Whether reasoning models solve items of this benchmark inside the probe.
    """

    difficulty_mean: float = 0.0
    difficulty_sd: float = 1.0
    legibility: float = 1.0
    confidence_shift: float = 0.0
    inline: bool = False

    def __post_init__(self) -> None:
        if not self.difficulty_sd >= 0:
            raise ValueError(f"difficulty_sd must be >= 0, got {self.difficulty_sd}")


@dataclasses.dataclass(frozen=True)
class SimulationParams:
    """Parameters of the generative model (see the module docstring for the equations).

    All quantities are in probit units of the latent scale, where the correctness noise has
    standard deviation 1.

    Attributes:
        ability_mean: Mean model ability.
        ability_sd: Spread of model ability across the population.
        benchmark_ability_sd: Per-benchmark deviation of a model's ability from its mean.
        reasoning_fraction: Share of reasoning models; model ``k`` is a reasoning model when
            ``floor(k * f) > floor((k - 1) * f)``, so they are spread evenly over m01, m02, ...
        reasoning_ability_bonus: Added to the ability of reasoning models.
        threshold_mean: Central response threshold ``t`` (higher: fewer "yes").
        threshold_sd: Spread of thresholds across models.
        ability_threshold_corr: Correlation of ability with a low threshold (able models say
            "yes" more often); it makes pairwise tau grow with the accuracy gap.
        residual_sd: Standard deviation of the model-specific item residual ``r_ij``.
        individuated: Weight of the model's own residual in its confidence (0: no individuated
            metacognition, the paper's finding).
        misreading_sd: Spread of the shared misreading of difficulty (the same for every model).
        reading_noise_sd: Reading noise ``s_j`` of a model at the central threshold.
        extremity_noise: Growth of the reading noise variance with the squared standardised
            distance of the threshold from the centre (the inverted parabola of loadings).
        noise_jitter: Log-normal per-model jitter of the reading noise.
        probe_noise_sd: Extra noise of the counterfactual probe around the prospective reading.
        wording_noise_sd: Noise of the rationale's wording around the model's internal state:
            the wording follows ``margin + wording_noise_sd * z`` (``felt_uncertainty``), a
            second noisy read of the same state that sets the verdict, so the text carries no
            more about correctness than that state does (and not the verdict exactly).
        numeric_shift: Shift of the numeric 0-100 confidence (positive: overconfident numbers).
        inline_rate: Probability that a reasoning model solves an item inline on an ``inline``
            benchmark.
        inline_strength: How firmly an inline attempt's outcome sets the probe answer.
        discrimination_sd: Standard deviation of the log item discrimination ``k_i`` (0: every
            item discriminates alike, the equal-slope probit model; > 0: a 2PL-type model).
        guessing: Lower asymptote: the chance that a model answers an item correctly by luck
            whatever its ability (0: none; 0.25: four-option multiple choice, a 3PL-type
            model). Confidence does not see the lucky guess.
        link: ``probit`` (normal solving noise ``u``) or ``logit`` (logistic ``u``; with
            ``residual_sd = 0`` and ``discrimination_sd = 0`` that is a Rasch model).
        benchmarks: Profile of each named benchmark, from the caller (the application's
            benchmark records; none by default). A preset applies its own profile rule to them
            through :func:`get_preset`.
        default_profile: Profile of a benchmark not named in ``benchmarks``.
    """

    ability_mean: float = 0.4
    ability_sd: float = 0.6
    benchmark_ability_sd: float = 0.25
    reasoning_fraction: float = 0.3
    reasoning_ability_bonus: float = 0.3
    threshold_mean: float = -0.4
    threshold_sd: float = 0.8
    ability_threshold_corr: float = 0.8
    residual_sd: float = 0.8
    individuated: float = 0.0
    misreading_sd: float = 1.2
    reading_noise_sd: float = 1.3
    extremity_noise: float = 1.5
    noise_jitter: float = 0.08
    probe_noise_sd: float = 0.35
    wording_noise_sd: float = 0.5
    numeric_shift: float = 0.6
    inline_rate: float = 0.8
    inline_strength: float = 1.4
    discrimination_sd: float = 0.0
    guessing: float = 0.0
    link: str = "probit"
    benchmarks: Mapping[str, BenchmarkProfile] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    default_profile: BenchmarkProfile = dataclasses.field(
        default_factory=lambda: BenchmarkProfile(difficulty_sd=1.5)
    )

    def __post_init__(self) -> None:
        nonneg = (
            "ability_sd",
            "benchmark_ability_sd",
            "threshold_sd",
            "residual_sd",
            "misreading_sd",
            "extremity_noise",
            "noise_jitter",
            "probe_noise_sd",
            "wording_noise_sd",
            "inline_strength",
            "discrimination_sd",
        )
        for name in nonneg:
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value >= 0 and math.isfinite(value)):
                raise ValueError(
                    f"SimulationParams.{name} must be a finite number >= 0, got {value}"
                )
        if not self.reading_noise_sd > 0:
            raise ValueError(
                f"SimulationParams.reading_noise_sd must be > 0, got {self.reading_noise_sd}"
            )
        if self.link not in ("probit", "logit"):
            raise ValueError(f"SimulationParams.link must be probit or logit, got {self.link!r}")
        if not 0.0 <= self.guessing < 1.0:
            raise ValueError(f"SimulationParams.guessing must lie in [0, 1), got {self.guessing}")
        for name in ("reasoning_fraction", "inline_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"SimulationParams.{name} must lie in [0, 1], got {value}")
        if not -1.0 <= self.ability_threshold_corr <= 1.0:
            raise ValueError(
                "SimulationParams.ability_threshold_corr must lie in [-1, 1], "
                f"got {self.ability_threshold_corr}"
            )
        if not math.isfinite(self.individuated):
            raise ValueError(
                f"SimulationParams.individuated must be finite, got {self.individuated}"
            )
        bad = [k for k, v in self.benchmarks.items() if not isinstance(v, BenchmarkProfile)]
        if bad:
            raise ValueError(f"SimulationParams.benchmarks: not a BenchmarkProfile for {bad}")
        # Frozen mappings keep the dataclass honest about immutability.
        object.__setattr__(self, "benchmarks", MappingProxyType(dict(self.benchmarks)))

    def profile(self, benchmark: str) -> BenchmarkProfile:
        """The profile of ``benchmark`` (``default_profile`` when it is not named)."""
        return self.benchmarks.get(benchmark, self.default_profile)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form of the parameters."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("benchmarks", "default_profile")
        }
        out["benchmarks"] = {k: dataclasses.asdict(v) for k, v in self.benchmarks.items()}
        out["default_profile"] = dataclasses.asdict(self.default_profile)
        return out


#: Named parameter sets. ``paper``: one dominant confidence factor, an inverted parabola of
#: loadings over thresholds, pairwise tau near 0 as the accuracy gap shrinks, and signal only in
#: reasoning/non-reasoning pairs on the math benchmarks (inline solving). ``individuated``: the
#: same population with a real private signal (confidence weighs each model's own residual).
#: ``null``: confidence reads nothing of difficulty and nobody solves inline, so it carries no
#: information about correctness at all (a sanity check). ``rasch``: the paper's population
#: with an exact Rasch correctness model (logistic noise, no residual; with no residual the
#: ``individuated`` weight has nothing to read, so it is for false-positive rates only).
#: ``2pl`` and ``3pl``: the paper's
#: population whose items differ in discrimination (log sd 1.0) or allow a lucky guess
#: (lower asymptote 0.25), the correctness models under which the pass count no longer carries
#: all of an item's difficulty (see :mod:`metacog_metrics.private_signal`).
#: The presets name no benchmark: the caller gives the profiles (:func:`get_preset`).
PRESETS: Mapping[str, SimulationParams] = MappingProxyType(
    {
        "paper": SimulationParams(),
        "individuated": SimulationParams(individuated=0.8),
        "null": SimulationParams(
            ability_threshold_corr=0.0,
            inline_rate=0.0,
            default_profile=BenchmarkProfile(difficulty_sd=1.5, legibility=0.0),
        ),
        "rasch": SimulationParams(link="logit", residual_sd=0.0),
        "2pl": SimulationParams(discrimination_sd=1.0),
        "3pl": SimulationParams(guessing=0.25),
    }
)


#: What a preset does to every benchmark profile it is given (its own default profile has it
#: already): under ``null`` the confidence reads nothing of difficulty on any benchmark.
_PROFILE_RULES: Mapping[str, Mapping[str, Any]] = MappingProxyType({"null": {"legibility": 0.0}})


def get_preset(
    name: str, *, profiles: Mapping[str, BenchmarkProfile] | None = None, **overrides: Any
) -> SimulationParams:
    """A preset with benchmark profiles and some fields replaced.

    Args:
        name: A key of :data:`PRESETS`.
        profiles: Benchmark name -> profile (``metacog_tasks.benchmarks.simulation_profiles()``
            gives the benchmark records' own), with the preset's rule applied (``null``:
            legibility 0); ``None`` keeps the preset's (none: every benchmark follows
            ``default_profile``).
        **overrides: Fields of :class:`SimulationParams` to replace (``individuated=0.2``).

    Returns:
        The parameters.

    Raises:
        ValueError: Unknown preset or field, a profile that is not a :class:`BenchmarkProfile`,
            or both ``profiles`` and a ``benchmarks`` override.

    Example:
        >>> quiz = BenchmarkProfile(difficulty_mean=1.0, difficulty_sd=1.5)
        >>> get_preset("null", profiles={"quiz": quiz}).profile("quiz").legibility
        0.0
        >>> get_preset("paper").profile("quiz") == get_preset("paper").default_profile
        True
    """
    if name not in PRESETS:
        raise ValueError(f"unknown simulation preset {name!r}; choose from {sorted(PRESETS)}")
    fields = {f.name for f in dataclasses.fields(SimulationParams)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"unknown SimulationParams field(s) {unknown}; valid: {sorted(fields)}")
    params = dataclasses.replace(PRESETS[name], **overrides)
    if profiles is None:
        return params
    if "benchmarks" in overrides:
        raise ValueError("give the benchmark profiles as profiles= or benchmarks=, not both")
    bad = sorted(str(k) for k, v in profiles.items() if not isinstance(v, BenchmarkProfile))
    if bad:
        raise ValueError(f"get_preset: not a BenchmarkProfile for {bad}")
    rule = _PROFILE_RULES.get(name, {})
    named = {k: dataclasses.replace(v, **rule) for k, v in profiles.items()}
    return dataclasses.replace(params, benchmarks=named)


# ---------------------------------------------------------------------------------------------
# Model names

_MODEL_RE = re.compile(r"^m(\d+)$")


def model_names(n: int) -> list[str]:
    """Names ``m01 .. mNN`` of the first ``n`` simulated models (zero-padded to >= 2 digits)."""
    if n < 1:
        raise ValueError(f"need at least one model, got n={n}")
    width = max(2, len(str(n)))
    return [f"m{k:0{width}d}" for k in range(1, n + 1)]


def model_index(name: str) -> int:
    """The 1-based index of a simulated model name (``m07`` -> 7).

    A harness prefix is dropped, so the record-table name ``metacog-sim/m07`` works too.

    Raises:
        ValueError: The name is not ``m`` followed by a positive number.
    """
    match = _MODEL_RE.match(str(name).strip().rsplit("/", 1)[-1])
    if not match or int(match.group(1)) < 1:
        raise ValueError(f"simulated model names are m01, m02, ...; got {name!r}")
    return int(match.group(1))


def _is_reasoning(index: np.ndarray, fraction: float) -> np.ndarray:
    """Evenly spread reasoning models (a Beatty sequence), independent of population size."""
    index = np.asarray(index, dtype=np.int64)
    return np.floor(index * fraction + 1e-9) > np.floor((index - 1) * fraction + 1e-9)


# ---------------------------------------------------------------------------------------------
# Counter-based random numbers.
#
# numpy's Generators are sequential streams: a value depends on how many were drawn before it.
# The harness models need each (item, model) cell to have its own fixed random numbers whatever
# else is asked, for millions of cells at once; creating a Generator per cell costs ~20 us each.
# So cells are keyed by a stable hash and mixed with the SplitMix64 finaliser, vectorised in numpy.

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

# Stream tags of the per-cell random numbers.
_S_RESIDUAL, _S_SOLVE, _S_READ, _S_INLINE, _S_PROBE, _S_ABILITY = 1, 2, 3, 4, 5, 6
_S_WORDING = 7
_S_TRAIT_ABILITY, _S_TRAIT_THRESHOLD, _S_TRAIT_NOISE, _S_DIFFICULTY, _S_MISREAD = 11, 12, 13, 14, 15
_S_DISCRIMINATION, _S_GUESS = 16, 17


def _mix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = np.asarray(x, dtype=np.uint64)
        x = x ^ (x >> np.uint64(30))
        x = x * _MIX1
        x = x ^ (x >> np.uint64(27))
        x = x * _MIX2
        return x ^ (x >> np.uint64(31))


def _combine(*keys: np.ndarray | int) -> np.ndarray:
    """Hash several uint64 keys (broadcast) into one."""
    with np.errstate(over="ignore"):
        h = np.zeros((), dtype=np.uint64)
        for key in keys:
            h = _mix(h * _GOLDEN + np.asarray(key, dtype=np.uint64) + _GOLDEN)
        return h


def _text_key(*parts: object) -> np.uint64:
    digest = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


def _uniform(key: np.ndarray) -> np.ndarray:
    """Uniform numbers in (0, 1) from uint64 keys."""
    return ((key >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)


def _normal(key: np.ndarray) -> np.ndarray:
    return special.ndtri(_uniform(key))


# ---------------------------------------------------------------------------------------------
# The equations, shared by both draw paths.


@dataclasses.dataclass(frozen=True)
class _Traits:
    ability: np.ndarray  # (..., models)
    threshold: np.ndarray
    noise: np.ndarray
    reasoning: np.ndarray


def _traits(
    params: SimulationParams,
    z_ability: np.ndarray,
    z_threshold: np.ndarray,
    z_noise: np.ndarray,
    reasoning: np.ndarray,
) -> _Traits:
    rho = params.ability_threshold_corr
    ability = params.ability_mean + params.ability_sd * z_ability
    ability = ability + params.reasoning_ability_bonus * reasoning
    z_t = -rho * z_ability + math.sqrt(1.0 - rho * rho) * z_threshold
    threshold = params.threshold_mean + params.threshold_sd * z_t
    noise = params.reading_noise_sd * np.sqrt(1.0 + params.extremity_noise * z_t**2)
    noise = noise * np.exp(params.noise_jitter * z_noise - 0.5 * params.noise_jitter**2)
    return _Traits(ability, threshold, noise, np.asarray(reasoning, dtype=bool))


def _cells(
    params: SimulationParams,
    profile: BenchmarkProfile,
    z_difficulty: np.ndarray,
    traits: _Traits,
    z_bench_ability: np.ndarray,
    z_residual: np.ndarray,
    z_solve: np.ndarray,
    z_read: np.ndarray,
    u_inline: np.ndarray,
    z_misread: np.ndarray | float = 0.0,
    z_discrimination: np.ndarray | float = 0.0,
    u_guess: np.ndarray | float = 1.0,
) -> dict[str, np.ndarray]:
    """Correctness and the prospective confidence margin, broadcast over (..., items, models)."""
    d = profile.difficulty_mean + profile.difficulty_sd * z_difficulty
    ability = traits.ability + params.benchmark_ability_sd * z_bench_ability
    residual = params.residual_sd * z_residual
    if params.discrimination_sd > 0:
        slope = np.exp(params.discrimination_sd * np.asarray(z_discrimination))
        skill = slope * (ability - d)
    else:
        skill = ability - d  # the equal-slope model, bit for bit as before
    if params.link == "logit":
        with np.errstate(divide="ignore"):
            solved = (skill + residual + special.logit(special.ndtr(z_solve))) > 0
        p_solve = special.expit(skill + residual)
    else:
        solved = (skill + residual + z_solve) > 0
        p_solve = special.ndtr(skill + residual)
    if params.guessing > 0:
        correct = solved | (np.asarray(u_guess) < params.guessing)
        p_solve = params.guessing + (1.0 - params.guessing) * p_solve
    else:
        correct = solved
    reading = (
        profile.legibility * (profile.difficulty_mean - d)
        + profile.confidence_shift
        + params.individuated * residual
        + params.misreading_sd * z_misread
    )
    margin = (reading - traits.threshold) / traits.noise + z_read
    if profile.inline and params.inline_rate > 0:
        inline = traits.reasoning & (u_inline < params.inline_rate)
        inline_margin = params.inline_strength * np.where(correct, 1.0, -1.0) + z_read
        margin = np.where(inline, inline_margin, margin)
    else:
        inline = np.zeros(np.broadcast_shapes(correct.shape, traits.reasoning.shape), dtype=bool)
    return {
        "difficulty": np.broadcast_to(d, correct.shape),
        "correct": correct,
        "margin": margin,
        "inline": np.broadcast_to(inline, correct.shape),
        "p_correct": p_solve,
    }


# ---------------------------------------------------------------------------------------------
# Per-item latent state for the harness models.


@dataclasses.dataclass(frozen=True)
class LatentState(Result):
    """The latent state of a set of items for a set of models; arrays are (items, models).

    Attributes:
        benchmark: Benchmark name.
        probe: Probe the confidence answers (``prospective``, ``counterfactual`` or ``numeric``).
        item_ids: Item ids, in the order asked.
        models: Model names.
        reasoning: Whether each model is a reasoning model, shape (models,).
        difficulty: Latent item difficulty, shape (items,).
        correct: Whether the model answers the item correctly (bool).
        confidence: Whether the probe answer is "yes" (bool); ``p_yes > 0.5`` exactly.
        p_yes: The model's probability of "yes" (for log-likelihood probes).
        numeric: The 0-100 confidence a numeric probe reports (integers as floats).
        uncertainty: ``1 - p_yes``: how unsure the model is.
        inline: Whether the model solves the item inside the probe (reasoning models, inline
            benchmarks).
        p_correct: The model's true probability of success given what it knows of the item.
        felt_uncertainty: What the rationale's wording follows: ``1 - Phi(margin + shift +
            wording_noise_sd * z)`` with ``z ~ N(0, 1)`` per cell and ``shift`` the numeric shift
            for the numeric probe (0 otherwise). A noisy function of the same internal state as
            the verdict, never of the correctness itself, so a text classifier can reach at
            most what this quantity tells about correctness.
    """

    benchmark: str
    probe: str
    item_ids: tuple[str, ...]
    models: tuple[str, ...]
    reasoning: np.ndarray
    difficulty: np.ndarray
    correct: np.ndarray
    confidence: np.ndarray
    p_yes: np.ndarray
    numeric: np.ndarray
    uncertainty: np.ndarray
    inline: np.ndarray
    p_correct: np.ndarray
    felt_uncertainty: np.ndarray | None = None

    def frame(self) -> pd.DataFrame:
        """The state as a long table, one row per (item, model)."""
        import pandas as pd

        n_items, n_models = self.correct.shape
        return pd.DataFrame(
            {
                "model": np.tile(np.asarray(self.models, dtype=object), n_items),
                "benchmark": self.benchmark,
                "item_id": np.repeat(np.asarray(self.item_ids, dtype=object), n_models),
                "probe": self.probe,
                "correct": self.correct.ravel().astype(np.uint8),
                "confidence": self.confidence.ravel().astype(np.uint8),
                "p_yes": self.p_yes.ravel(),
                "numeric": self.numeric.ravel(),
                "uncertainty": self.uncertainty.ravel(),
                "felt_uncertainty": (
                    self.felt_uncertainty.ravel()
                    if self.felt_uncertainty is not None
                    else np.full(n_items * n_models, np.nan)
                ),
                "inline": self.inline.ravel(),
                "reasoning": np.tile(self.reasoning, n_items),
            }
        )


class Population:
    """A deterministic population of simulated models ``m01 .. mNN``.

    Every random number is a hash of ``(seed, benchmark, item_id, model)``, so the state of an
    item for a model is the same whichever items are asked with it, in whatever order, through
    whichever harness. Model ``m07`` is the same model in a population of 10 or of 40.

    Args:
        params: Generative model parameters.
        n_models: Population size (names ``m01 .. mNN``).
        seed: Seed of the population.

    Example:
        >>> pop = Population(get_preset("paper"), 12, seed=0)
        >>> state = pop.latent("quiz", ["q1", "q2"])
        >>> state.correct.shape
        (2, 12)
    """

    def __init__(self, params: SimulationParams, n_models: int, seed: int = 0) -> None:
        if not isinstance(params, SimulationParams):
            raise TypeError(f"params must be SimulationParams, got {type(params).__name__}")
        self.params = params
        self.seed = int(seed)
        self.models: tuple[str, ...] = tuple(model_names(n_models))
        self._seed_key = _text_key("metacog-sim", self.seed)

    def __repr__(self) -> str:
        return f"Population(n_models={len(self.models)}, seed={self.seed})"

    def _indices(self, models: Sequence[str] | None) -> tuple[tuple[str, ...], np.ndarray]:
        names = self.models if models is None else tuple(str(m) for m in models)
        if not names:
            raise ValueError("no models given")
        return names, np.array([model_index(m) for m in names], dtype=np.uint64)

    def _model_traits(self, index: np.ndarray) -> _Traits:
        key = _combine(self._seed_key, index)
        return _traits(
            self.params,
            _normal(_combine(key, _S_TRAIT_ABILITY)),
            _normal(_combine(key, _S_TRAIT_THRESHOLD)),
            _normal(_combine(key, _S_TRAIT_NOISE)),
            _is_reasoning(index.astype(np.int64), self.params.reasoning_fraction),
        )

    def traits(
        self, models: Sequence[str] | None = None, *, benchmark: str | None = None
    ) -> pd.DataFrame:
        """True traits of the models: ability, threshold, reading noise, reasoning.

        Args:
            models: Model names (default the whole population).
            benchmark: Also give each model's ability on this benchmark
                (``benchmark_ability``, the ``a_jb`` of the equations).

        Returns:
            One row per model. The threshold is on the latent scale (``t_j``); the yes-rate
            also depends on the benchmark's difficulty profile.
        """
        import pandas as pd

        names, index = self._indices(models)
        t = self._model_traits(index)
        table = pd.DataFrame(
            {
                "model": list(names),
                "ability": t.ability,
                "threshold": t.threshold,
                "reading_noise": t.noise,
                "reasoning": t.reasoning,
            }
        )
        if benchmark is not None:
            table["benchmark_ability"] = t.ability + self.params.benchmark_ability_sd * (
                self._bench_ability_z(benchmark, index)
            )
        return table

    def _bench_ability_z(self, benchmark: str, index: np.ndarray) -> np.ndarray:
        bench_key = _text_key("benchmark", self.seed, benchmark)
        return _normal(_combine(bench_key, _combine(self._seed_key, index), _S_ABILITY))

    def reasoning(self, models: Sequence[str] | None = None) -> dict[str, bool]:
        """Whether each model is a reasoning model."""
        names, index = self._indices(models)
        flags = _is_reasoning(index.astype(np.int64), self.params.reasoning_fraction)
        return dict(zip(names, (bool(f) for f in flags), strict=True))

    def _item_keys(self, benchmark: str, item_ids: Sequence[str]) -> np.ndarray:
        return np.array(
            [_text_key("item", self.seed, benchmark, item_id) for item_id in item_ids],
            dtype=np.uint64,
        )

    def latent(
        self,
        benchmark: str,
        item_ids: Sequence[str],
        *,
        probe: str = "prospective",
        models: Sequence[str] | None = None,
        sampling_seed: int | None = None,
    ) -> LatentState:
        """The latent state of ``item_ids`` of ``benchmark`` for each model.

        Args:
            benchmark: Benchmark name (its profile comes from the parameters).
            item_ids: Item ids; duplicates get identical rows.
            probe: ``prospective``, ``counterfactual`` (the prospective reading plus extra probe
                noise) or ``numeric`` (the prospective reading, reported as a number).
            models: Model names (``m03``, ...); default the whole population.
            sampling_seed: A rerun of the same models on the same items with other sampling
                noise: the items, the traits and what each model knows of each item
                (``r_ij``) stay; the solve noise ``u_ij``, the reading noise ``e_ij``, the
                inline draw and the counterfactual probe noise are drawn afresh for this seed.
                ``None`` (default) is the population's own run.

        Returns:
            The state, arrays of shape (items, models).

        Raises:
            ValueError: Unknown probe or bad model name.
        """
        if probe not in SIM_PROBES:
            raise ValueError(f"unknown probe {probe!r}; the simulated models answer {SIM_PROBES}")
        item_ids = tuple(str(i) for i in item_ids)
        names, index = self._indices(models)
        params = self.params
        profile = params.profile(benchmark)
        traits = self._model_traits(index)
        model_key = _combine(self._seed_key, index)[None, :]  # (1, models)
        items = self._item_keys(benchmark, item_ids)[:, None]  # (items, 1)
        cell = _combine(items, model_key)  # (items, models)
        # What a sampling rerun redraws; the residual r_ij stays with the cell itself.
        noisy = cell if sampling_seed is None else _combine(cell, _text_key("rerun", sampling_seed))

        out = _cells(
            params,
            profile,
            _normal(_combine(items, _S_DIFFICULTY)),
            traits,
            self._bench_ability_z(benchmark, index)[None, :],
            _normal(_combine(cell, _S_RESIDUAL)),
            _normal(_combine(noisy, _S_SOLVE)),
            _normal(_combine(noisy, _S_READ)),
            _uniform(_combine(noisy, _S_INLINE)),
            _normal(_combine(items, _S_MISREAD)),
            _normal(_combine(items, _S_DISCRIMINATION)),
            _uniform(_combine(cell, _S_GUESS)),
        )
        margin = out["margin"]
        if probe == "counterfactual":
            margin = margin + params.probe_noise_sd * _normal(_combine(noisy, _S_PROBE))
        p_yes = special.ndtr(margin)
        numeric = np.clip(np.rint(100.0 * special.ndtr(margin + params.numeric_shift)), 0, 100)
        shift = params.numeric_shift if probe == "numeric" else 0.0
        felt = margin + shift + params.wording_noise_sd * _normal(_combine(cell, _S_WORDING))
        return LatentState(
            benchmark=benchmark,
            probe=probe,
            item_ids=item_ids,
            models=names,
            reasoning=traits.reasoning.copy(),
            difficulty=np.ascontiguousarray(out["difficulty"][:, 0]),
            correct=np.ascontiguousarray(out["correct"]),
            confidence=margin > 0,
            p_yes=p_yes,
            numeric=numeric,
            uncertainty=1.0 - p_yes,
            inline=np.ascontiguousarray(out["inline"]),
            p_correct=out["p_correct"],
            felt_uncertainty=special.ndtr(-felt),
        )

    def rng(self, benchmark: str, item_id: str, model: str, *tags: object) -> np.random.Generator:
        """A Generator fixed by ``(seed, benchmark, item_id, model, *tags)``, for texts.

        Wrong answers and rationale wording draw from it, so the same cell gets the same text.
        """
        key = _text_key("text", self.seed, benchmark, item_id, model_index(model), *tags)
        return np.random.default_rng(int(key))

    def records(
        self,
        benchmark: str,
        item_ids: Sequence[str],
        *,
        probes: Sequence[str] = ("prospective",),
        models: Sequence[str] | None = None,
        sampling_seed: int | None = None,
    ) -> pd.DataFrame:
        """Record-table rows for ``item_ids`` (see :func:`simulate_records`)."""
        import pandas as pd

        frames = []
        for probe in probes:
            state = self.latent(
                benchmark, item_ids, probe=probe, models=models, sampling_seed=sampling_seed
            )
            frames.append(_state_records(state))
        return pd.concat(frames, ignore_index=True)


def _state_records(state: LatentState) -> pd.DataFrame:
    import pandas as pd

    n_items, n_models = state.correct.shape
    if state.probe == "numeric":
        conf = (state.numeric / 100.0).T.ravel()
        kind = "verbal_numeric"
    else:
        conf = state.confidence.T.ravel().astype(np.float64)
        kind = "verbal_binary"
    # Model-major order: all items of m01, then m02, ...
    return pd.DataFrame(
        {
            "model": np.repeat(np.asarray(state.models, dtype=object), n_items),
            "benchmark": state.benchmark,
            "item_id": np.tile(np.asarray(state.item_ids, dtype=object), n_models),
            "probe": state.probe,
            "confidence": conf,
            "confidence_kind": kind,
            "correct": state.correct.T.ravel().astype(np.float64),
            "reasoning": np.repeat(state.reasoning, n_items),
        }
    )


def simulate_records(
    params: SimulationParams,
    *,
    n_models: int = 20,
    items_per_benchmark: int = 500,
    benchmarks: Sequence[str] | None = None,
    seed: int = 0,
    probes: Sequence[str] = ("prospective",),
    sampling_seed: int | None = None,
) -> pd.DataFrame:
    """Draw a record table from the generative model.

    The rows are exactly what the simulated harness models would log for the items
    ``<benchmark>-00001 ..`` (the same :class:`Population` drives both).

    Args:
        params: Generative model parameters.
        n_models: Number of models ``m01 .. mNN``.
        items_per_benchmark: Items per benchmark.
        benchmarks: Benchmark names (default: those ``params`` has profiles for, in order).
        seed: Population seed.
        probes: Probes to record; ``numeric`` gives ``verbal_numeric`` confidences in [0, 1].
        sampling_seed: Rerun the same models on the same items with fresh sampling noise
            (see :meth:`Population.latent`); ``None`` is the population's own run.

    Returns:
        Record table with columns model, benchmark, item_id, probe, confidence,
        confidence_kind, correct, reasoning.

    Raises:
        ValueError: Bad sizes or probe names, or no benchmark named or profiled.
    """
    import pandas as pd

    if items_per_benchmark < 1:
        raise ValueError(f"items_per_benchmark must be >= 1, got {items_per_benchmark}")
    benchmarks = tuple(benchmarks) if benchmarks is not None else tuple(params.benchmarks)
    if not benchmarks:
        raise ValueError("no benchmarks given, and the parameters profile none")
    bad = [p for p in probes if p not in SIM_PROBES]
    if bad or not probes:
        raise ValueError(f"unknown probe(s) {bad or list(probes)}; choose from {SIM_PROBES}")
    pop = Population(params, n_models, seed)
    width = max(5, len(str(items_per_benchmark)))
    frames = []
    for bench in benchmarks:
        ids = [f"{bench}-{i:0{width}d}" for i in range(1, items_per_benchmark + 1)]
        frames.append(pop.records(bench, ids, probes=probes, sampling_seed=sampling_seed))
    table = pd.concat(frames, ignore_index=True)
    for col in ("model", "benchmark", "item_id", "probe", "confidence_kind"):
        table[col] = table[col].astype("string")
    return table


# ---------------------------------------------------------------------------------------------
# Batched draws for power analysis.


@dataclasses.dataclass(frozen=True)
class SimulatedArrays(Result):
    """A batch of simulated populations; unpacks as ``conf, perf = simulate_arrays(...)``.

    Attributes:
        conf: Binary confidence, uint8, shape (reps, items, models).
        perf: Correctness, uint8, shape (reps, items, models).
        ability: Model ability on the benchmark, shape (reps, models).
        threshold: Latent response threshold, shape (reps, models).
        reasoning: Reasoning flags, shape (models,).
    """

    conf: np.ndarray
    perf: np.ndarray
    ability: np.ndarray
    threshold: np.ndarray
    reasoning: np.ndarray

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.conf, self.perf))


def simulate_arrays(
    params: SimulationParams,
    n_models: int,
    n_items: int,
    reps: int,
    rng: np.random.Generator | int | None = None,
    *,
    benchmark: str | None = None,
) -> SimulatedArrays:
    """Draw ``reps`` independent populations and item sets at once (fast path).

    Each replicate has its own models (abilities, thresholds) and items; the reasoning flags
    follow the model index as in :class:`Population`.

    Args:
        params: Generative model parameters.
        n_models: Models per replicate.
        n_items: Items per replicate.
        reps: Number of replicates.
        rng: Generator or seed.
        benchmark: Whose profile in ``params`` the items follow; ``None``: the default profile.

    Returns:
        The arrays.

    Raises:
        ValueError: Sizes below 1.
    """
    if min(n_models, n_items, reps) < 1:
        raise ValueError(
            f"n_models, n_items and reps must be >= 1, got {n_models}, {n_items}, {reps}"
        )
    rng = np.random.default_rng(rng)
    profile = params.default_profile if benchmark is None else params.profile(benchmark)
    reasoning = _is_reasoning(np.arange(1, n_models + 1), params.reasoning_fraction)
    traits = _traits(
        params,
        rng.standard_normal((reps, 1, n_models)),
        rng.standard_normal((reps, 1, n_models)),
        rng.standard_normal((reps, 1, n_models)),
        reasoning,
    )
    shape = (reps, n_items, n_models)
    z_difficulty = rng.standard_normal((reps, n_items, 1))
    z_bench = rng.standard_normal((reps, 1, n_models))
    u_inline = rng.random(shape) if profile.inline else np.ones((1, 1, 1))
    out = _cells(
        params,
        profile,
        z_difficulty,
        traits,
        z_bench,
        rng.standard_normal(shape),
        rng.standard_normal(shape),
        rng.standard_normal(shape),
        u_inline,
        rng.standard_normal((reps, n_items, 1)),
        # Drawn last and only when used, so the other presets keep their random numbers.
        rng.standard_normal((reps, n_items, 1)) if params.discrimination_sd > 0 else 0.0,
        rng.random(shape) if params.guessing > 0 else 1.0,
    )
    ability = traits.ability + params.benchmark_ability_sd * z_bench
    return SimulatedArrays(
        conf=(out["margin"] > 0).astype(np.uint8),
        perf=out["correct"].astype(np.uint8),
        ability=ability[:, 0, :],
        threshold=traits.threshold[:, 0, :],
        reasoning=reasoning,
    )


# ---------------------------------------------------------------------------------------------
# `metacog simulate`


@dataclasses.dataclass(frozen=True)
class SimulateResult(Result):
    """What :func:`run_simulate` wrote.

    Attributes:
        path: The record table.
        models_path: The true model traits (CSV).
        n_rows: Rows written.
        models: Model names.
        benchmarks: Benchmarks simulated.
        preset: Preset name.
        params: The parameters used, as plain JSON.
        seed: Population seed.
    """

    path: str
    models_path: str
    n_rows: int
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    preset: str
    params: Mapping[str, Any]
    seed: int

    def summary_text(self) -> str:
        """A short human summary."""
        return (
            f"wrote {self.n_rows} records ({len(self.models)} models x "
            f"{len(self.benchmarks)} benchmarks, preset {self.preset}, seed {self.seed}) "
            f"to {self.path}; true model traits in {self.models_path}"
        )


def run_simulate(
    out: str | os.PathLike[str],
    *,
    preset: str = "paper",
    models: int = 20,
    items_per_benchmark: int = 500,
    benchmarks: Sequence[str] | None = None,
    seed: int = 0,
    probes: Sequence[str] = ("prospective",),
    individuated: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    profiles: Mapping[str, BenchmarkProfile] | None = None,
) -> SimulateResult:
    """Simulate a record table and write it, with the true model traits beside it.

    Args:
        out: Output record table (``.parquet`` or ``.csv``, validated as a record table);
            ``<stem>.models.csv`` beside it gets the true model traits.
        preset: Preset name (see :data:`PRESETS`).
        models: Number of models.
        items_per_benchmark: Items per benchmark.
        benchmarks: Benchmark names (default: every one in ``profiles``, in order).
        seed: Population seed.
        probes: Probes to record.
        individuated: Shortcut for the ``individuated`` override.
        overrides: Other :class:`SimulationParams` fields to replace.
        profiles: Benchmark name -> profile (see :func:`get_preset`); ``metacog simulate``
            passes the benchmark records' own.

    Returns:
        What was written.

    Raises:
        ValueError: Bad preset, override, size or output extension.
    """
    fields = dict(overrides or {})
    if individuated is not None:
        fields["individuated"] = float(individuated)
    params = get_preset(preset, profiles=profiles, **fields)
    out = Path(out)
    if out.suffix.lower() not in (".parquet", ".pq", ".csv"):
        raise ValueError(f"{out}: write .parquet or .csv, not {out.suffix or 'no extension'}")
    table = simulate_records(
        params,
        n_models=models,
        items_per_benchmark=items_per_benchmark,
        benchmarks=benchmarks,
        seed=seed,
        probes=probes,
    )
    from metacog_metrics.records import write_records

    write_records(table, out)  # validates the table, writes atomically
    pop = Population(params, models, seed)
    models_path = out.with_name(f"{out.stem}.models.csv")
    atomic_write(models_path, lambda tmp: pop.traits().to_csv(tmp, index=False))
    return SimulateResult(
        path=str(out),
        models_path=str(models_path),
        n_rows=len(table),
        models=pop.models,
        benchmarks=tuple(table["benchmark"].unique()),
        preset=preset,
        params=params.to_dict(),
        seed=seed,
    )
