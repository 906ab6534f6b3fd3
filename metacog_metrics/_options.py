"""Options dataclasses whose fields carry their own help and check.

A field made with :func:`option` holds, in its metadata, the sentence that says what it does and
the function that checks and normalises its value. That one declaration is the keyword API, the
class's docstring (:func:`documented`), the validation (:func:`check_options`, called from
``__post_init__``) and the command line (``metacog_tasks.cli`` builds its flags from
:func:`option_spec`).

Example:
    >>> import dataclasses
    >>> @documented
    ... @dataclasses.dataclass(frozen=True)
    ... class Draws:
    ...     '''Draws of a test.'''
    ...     n: int = option(100, help="Draws of the null.", check=count)
    ...     def __post_init__(self) -> None:
    ...         check_options(self)
    >>> Draws(n=5.0).n
    5
    >>> Draws(n=-1)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer >= 0, got -1
    >>> print(Draws.__doc__)
    Draws of a test.
    <BLANKLINE>
    Attributes:
        n: Draws of the null. Default 100.
"""

from __future__ import annotations

import dataclasses
import numbers
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = [
    "OptionSpec",
    "at_least",
    "build_options",
    "check_options",
    "count",
    "documented",
    "integer",
    "one_of",
    "option",
    "option_spec",
    "option_values",
]

#: Key of the :class:`OptionSpec` in a field's metadata.
_KEY = "metacog_option"

Check = Callable[[str, Any], Any]
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """What a field of an options dataclass means and how its value is checked.

    Attributes:
        help: What the option does, as one or more sentences (the docstring and ``--help``).
        check: ``check(name, value)`` returns the normalised value or raises ``ValueError``.
        flags: Command-line flags (default ``--name-with-dashes``); empty with ``cli=False``.
        cli: Extra ``argparse.add_argument`` keywords (``choices``, ``action``, ``metavar``).
        on_cli: Whether the command line offers the option.
    """

    help: str
    check: Check | None = None
    flags: tuple[str, ...] = ()
    cli: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    on_cli: bool = True


def option(
    default: Any,
    *,
    help: str,
    check: Check | None = None,
    flags: tuple[str, ...] = (),
    cli: Mapping[str, Any] | None = None,
    on_cli: bool = True,
) -> Any:
    """A dataclass field with its :class:`OptionSpec` (see the module docstring)."""
    spec = OptionSpec(help, check, tuple(flags), dict(cli or {}), on_cli)
    return dataclasses.field(default=default, metadata={_KEY: spec})


def option_spec(field: dataclasses.Field[Any]) -> OptionSpec | None:
    """The :class:`OptionSpec` of a field made with :func:`option`, else None."""
    return field.metadata.get(_KEY)


def check_options(obj: Any) -> None:
    """Check and normalise every field of a frozen options dataclass, in field order."""
    for field in dataclasses.fields(obj):
        spec = option_spec(field)
        if spec is not None and spec.check is not None:
            object.__setattr__(obj, field.name, spec.check(field.name, getattr(obj, field.name)))


def documented(cls: type[T]) -> type[T]:
    """Append an ``Attributes:`` section, built from the fields' help, to the class docstring."""
    lines = []
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        spec = option_spec(field)
        if spec is None:
            continue
        text = f"{field.name}: {spec.help} Default {field.default!r}."
        lines += textwrap.wrap(text, 88, initial_indent="    ", subsequent_indent="        ")
    head = textwrap.dedent(cls.__doc__ or "").strip()
    cls.__doc__ = head + "\n\nAttributes:\n" + "\n".join(lines)
    return cls


def count(name: str, value: Any) -> int:
    """An integer >= 0 (a float with an integer value is accepted; a bool is not)."""
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def _whole(value: Any) -> bool:
    """Whether ``value`` is an integer, or a float with an integer value (not a bool)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    return isinstance(value, numbers.Real) and float(value).is_integer()


def integer(name: str, value: Any) -> int:
    """An integer (a float with an integer value is accepted; a bool is not)."""
    if not _whole(value):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(value)


def at_least(minimum: int) -> Check:
    """A check: an integer >= ``minimum`` (a float with an integer value is accepted; a bool is
    not).

    Example:
        >>> at_least(1)("reps", 0)
        Traceback (most recent call last):
        ...
        ValueError: reps must be an integer >= 1, got 0
    """

    def check(name: str, value: Any) -> int:
        if not _whole(value) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        return int(value)

    return check


def one_of(choices: Sequence[str]) -> Check:
    """A check: one of ``choices``."""

    def check(name: str, value: Any) -> str:
        if value not in choices:
            raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
        return value

    return check


def build_options(cls: type[T], options: T | None = None, /, **overrides: Any) -> T:
    """``options`` (default: ``cls()``) with ``overrides``; an unknown name is a TypeError.

    Example:
        >>> @dataclasses.dataclass(frozen=True)
        ... class Draws:
        ...     n: int = 100
        >>> build_options(Draws, Draws(n=5)).n, build_options(Draws, n=7).n
        (5, 7)
        >>> build_options(Draws, m=1)
        Traceback (most recent call last):
        ...
        TypeError: unknown option(s) of Draws: ['m']; known: ['n']
    """
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise TypeError(f"unknown option(s) of {cls.__name__}: {unknown}; known: {sorted(known)}")
    if options is not None and not overrides:
        return options
    return dataclasses.replace(options, **overrides) if options is not None else cls(**overrides)


def option_values(obj: Any) -> dict[str, Any]:
    """The fields of an options dataclass as keywords (values as they are, not copied)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
