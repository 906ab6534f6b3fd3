"""What a permutation null is made of, and the registry that finds it by name.

A null is its law, written twice as a short reference shuffle (one draw for a pair, one joint
draw of all models), plus the fast samplers that draw from that law case by case. The per-pair
tests and the joint draws look a null up here and take the sampler of their case; a case
without one is drawn from the reference law itself (slow, but the same law), so a new null
works as soon as its laws are written.

A joint draw permutes each model among the items it answered and recomputes every pair from
that one draw. On ragged data a pair sees each of its two models' values on the items both
answered only, re-laid on those items in the order the model's permutation gives them
(:func:`~metacog_metrics.pairwise.masked.pair_view`): so each pair's draw is a permutation of
its own shared items, exactly as in its per-pair null, and the pairs that share a model are
drawn together through that model's one permutation. (Reading the permuted matrix at a pair's
shared items instead would give the pair a random sample of each model's values from all the
items the model answered: with missingness that depends on difficulty, a null centred
elsewhere than the per-pair null's.) On complete data the two are the same.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
from collections.abc import Callable, Iterator, Mapping

import numpy as np
from numpy.typing import NDArray

from metacog_metrics.pairwise.joint_draws import JointSampler
from metacog_metrics.pairwise.pair_draws import PairSampler

__all__ = [
    "CONFIDENCE_KINDS",
    "DATA_KINDS",
    "SAMPLER_ENGINES",
    "JointLaw",
    "Law",
    "NullSpec",
    "get_null",
    "headline_null",
    "null_names",
    "register",
    "registry_scope",
]

#: Kinds of confidence a sampler is registered for: 0/1, or real values (levels).
CONFIDENCE_KINDS: tuple[str, ...] = ("binary", "levels")
#: Data a joint sampler is registered for: every model answered every item, or not.
DATA_KINDS: tuple[str, ...] = ("complete", "ragged")
#: Engines a sampler runs on.
SAMPLER_ENGINES: tuple[str, ...] = ("numpy", "numba")

#: One draw of a pair's law: ``(items, 2)`` confidence and correctness in, the shuffled arrays
#: out.
Law = Callable[[NDArray, NDArray, np.random.Generator], tuple[NDArray, NDArray]]
#: One joint draw: ``(items, models)`` confidence and correctness in (NaN where a model lacks an
#: item), and out where each value comes from: ``(conf_from, perf_from)``, integer arrays of
#: that shape, the item whose confidence (correctness) of that model lands on each item; each
#: model's column permutes the items it answered and leaves the others in place.
JointLaw = Callable[[NDArray, NDArray, np.random.Generator], tuple[NDArray, NDArray]]


@dataclasses.dataclass(frozen=True)
class NullSpec:
    """A registered permutation null.

    Attributes:
        name: Key in results, tables and ``summary.json``.
        label: Name shown in reports.
        colour: Hex colour of the null in every figure.
        description: What the null keeps and what it breaks, in one sentence.
        pair_law: One draw for a pair: ``(items, 2)`` complete arrays of the pair's two models.
        joint_law: One joint draw of ``(items, models)`` arrays (:data:`JointLaw`); NaN marks
            an item a model did not answer, which stays where it is.
        seed_streams: The children of an analysis's seed that draw its per-pair tests and its
            joint draws (fixed per null, so that adding a null changes no other null's draws).
        pair_samplers: ``{(confidence, engine): samplers}``, tried in order, each drawing the
            pairs it serves; a case not registered takes the NumPy one, then the reference.
        joint_samplers: ``{(confidence, data, engine): samplers}``, the first that binds
            draws; then the NumPy ones of the case, then the reference.
        headline: Whether this null's share of FDR-significant pairs is the headline one.
        short_label: Short name in running text and console lines (``base-rate``); by default
            the name with hyphens for underscores.
    """

    name: str
    label: str
    colour: str
    description: str
    pair_law: Law
    joint_law: JointLaw
    seed_streams: tuple[int, int]
    pair_samplers: Mapping[tuple[str, str], tuple[PairSampler, ...]] = dataclasses.field(
        default_factory=dict
    )
    joint_samplers: Mapping[tuple[str, str, str], tuple[JointSampler, ...]] = dataclasses.field(
        default_factory=dict
    )
    headline: bool = False
    short_label: str = ""

    def __post_init__(self) -> None:
        for (conf, engine), samplers in self.pair_samplers.items():
            _check_case(self.name, conf, "complete", engine, samplers, PairSampler)
        for (conf, data, engine), samplers in self.joint_samplers.items():
            _check_case(self.name, conf, data, engine, samplers, JointSampler)
        if len(set(self.seed_streams)) != 2 or min(self.seed_streams) < 0:
            raise ValueError(f"null {self.name!r}: seed_streams must be two distinct indices >= 0")
        if not self.short_label:
            object.__setattr__(self, "short_label", self.name.replace("_", "-"))
        object.__setattr__(self, "pair_samplers", types.MappingProxyType(dict(self.pair_samplers)))
        object.__setattr__(
            self, "joint_samplers", types.MappingProxyType(dict(self.joint_samplers))
        )


def _check_case(name: str, conf: str, data: str, engine: str, samplers: object,
                kind: type) -> None:  # fmt: skip
    if conf not in CONFIDENCE_KINDS or data not in DATA_KINDS or engine not in SAMPLER_ENGINES:
        raise ValueError(f"null {name!r}: unknown case ({conf!r}, {data!r}, {engine!r})")
    if not isinstance(samplers, tuple) or not all(isinstance(s, kind) for s in samplers):
        raise TypeError(f"null {name!r}: samplers of a case must be a tuple of {kind.__name__}")


_REGISTRY: dict[str, NullSpec] = {}
_names: tuple[str, ...] = ()  # the registry's names: one object until the registry changes


def register(spec: NullSpec, *, replace: bool = False) -> NullSpec:
    """Add ``spec`` to the registry (after the nulls already there) and return it.

    Args:
        spec: The null.
        replace: Put it in place of the null of that name (in a :func:`registry_scope`: to
            try other samplers for a registered null).

    Raises:
        ValueError: Its name (unless ``replace``) or one of its seed streams is taken, or a
            second headline null.
    """
    if spec.name in _REGISTRY and not replace:
        raise ValueError(f"null {spec.name!r} is registered twice")
    for other in _REGISTRY.values():
        if other.name == spec.name:
            continue
        if set(spec.seed_streams) & set(other.seed_streams):
            raise ValueError(f"null {spec.name!r}: seed streams shared with {other.name!r}")
        if spec.headline and other.headline:
            raise ValueError(f"null {spec.name!r}: {other.name!r} is already the headline null")
    global _names
    _REGISTRY[spec.name] = spec
    _names = tuple(_REGISTRY)
    return spec


def null_names() -> tuple[str, ...]:
    """The registered nulls' names, in registration order (the order of every result).

    >>> null_names()
    ('base_rate', 'calibration_preserving')
    """
    return _names


def get_null(name: str) -> NullSpec:
    """The null registered as ``name``.

    >>> get_null("calibration_preserving").label
    'calibration-preserving null'

    Raises:
        ValueError: No null has that name (the message lists the known ones).
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"null must be one of {null_names()}, got {name!r}") from None


def headline_null() -> str:
    """The name of the null whose FDR share is the headline (the first registered if none is
    marked).

    >>> headline_null()
    'base_rate'
    """
    for spec in _REGISTRY.values():
        if spec.headline:
            return spec.name
    return next(iter(_REGISTRY))


@contextlib.contextmanager
def registry_scope() -> Iterator[None]:
    """A scope whose registrations are undone on leaving it (tests, experiments).

    >>> import numpy as np
    >>> def keep(conf, perf, rng):
    ...     return conf, perf
    >>> def stay(conf, perf, rng):
    ...     at = np.broadcast_to(np.arange(conf.shape[0])[:, None], conf.shape)
    ...     return at, at
    >>> spec = NullSpec("none", "no null", "#000000", "nothing is shuffled", keep, stay, (8, 9))
    >>> with registry_scope():
    ...     _ = register(spec)
    ...     null_names()
    ('base_rate', 'calibration_preserving', 'none')
    >>> null_names()
    ('base_rate', 'calibration_preserving')
    """
    global _names
    saved = dict(_REGISTRY)
    try:
        yield
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(saved)
        _names = tuple(_REGISTRY)
