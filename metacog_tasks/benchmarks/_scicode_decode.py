"""Bounded decoding of the values a sandboxed SciCode run writes back (``outputs.json``).

Everything that crosses the sandbox boundary is written by model code, so the caller decodes
it as hostile data: only the tagged JSON that the capture codec writes (numbers, strings,
lists, tuples, dicts, sets, numeric and object arrays, sparse matrices as coordinates), and
only within :class:`DecodeLimits`. Each limit stops one way to make decoding slow or large:

* the text's length (the read cap) and its JSON containers and values, counted before parsing;
* the nesting depth, measured on the text with strings skipped before ``json.loads`` runs (its
  C parser recurses once per level and, under a raised recursion limit, overflows the C stack);
* integer literals (digits), sets and dicts (entries per container and in all: values whose
  hashes all collide make building one quadratic in its size);
* arrays (their bytes must be exactly the shape's, base64 decoded in place, no broadcasting of
  complex parts) and sparse matrices (coordinates only, never a dense copy or a ``dia`` / ``dok``
  construction; their rows x columns bounded, and relative to the text's size).

Anything else, and any error while decoding, raises :class:`OutputsRejected`; the grader
counts the step wrong. ``bench/bench_grading.py`` measures time and memory on hostile outputs.
"""

from __future__ import annotations

import binascii
import dataclasses
import json
import math
import re
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

__all__ = ["DEFAULT_LIMITS", "DecodeLimits", "OutputsRejected", "load_values"]


class OutputsRejected(ValueError):
    """The text is not a value list the codec writes, or it exceeds a decoding limit."""


@dataclasses.dataclass(frozen=True)
class DecodeLimits:
    """Bounds on one decoded text (defaults: the SciCode grader's).

    Attributes:
        max_chars: Longest text (the sandbox's read cap for ``outputs.json``).
        max_depth: Deepest JSON nesting (a tagged value adds two levels per level of data).
        max_containers: JSON arrays and objects in the text.
        max_values: JSON values in the text (containers, numbers, strings, literals).
        max_strings: JSON strings in the text.
        max_int_digits: Digits of one integer literal.
        max_entries: Entries of one set or dict.
        max_entries_total: Set and dict entries in the whole text.
        max_ndim: Dimensions of one array.
        max_sparse_cells: Rows x columns of one sparse matrix.
        sparse_cells_per_char: Rows x columns of one sparse matrix per character of text
            (at least ``sparse_cells_floor``): a small text cannot describe a huge matrix.
        sparse_cells_floor: The least rows x columns allowed whatever the text's length.
    """

    max_chars: int = 128 * 2**20
    max_depth: int = 64
    max_containers: int = 200_000
    max_values: int = 2_000_000
    max_strings: int = 1_000_000
    max_int_digits: int = 300
    max_entries: int = 1_024
    max_entries_total: int = 16_384
    max_ndim: int = 32
    max_sparse_cells: int = 2**24
    sparse_cells_per_char: int = 64
    sparse_cells_floor: int = 2**20


DEFAULT_LIMITS = DecodeLimits()

#: Strings (closed, or running to the end of the text) and runs of other characters: what is
#: left after removing both is the text's brackets outside strings. Possessive, so linear.
_NOT_BRACKETS = re.compile(r'"(?:[^"\\]++|\\.|\\\Z)*+(?:"|\Z)|[^\[\]{}"]++', re.DOTALL)
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_PLAIN = frozenset({type(None), bool, int, float, str})
_SPARSE_FORMATS = frozenset({"bsr", "coo", "csc", "csr", "dia", "dok", "lil"})
_MAX_DIM = 2**31 - 1  # scipy's index type; numpy's own limits are far above any legal shape
_B64_CHUNK = 4 * 2**20  # base64 characters decoded at a time (a multiple of 4)


def _check_text(text: str, limits: DecodeLimits) -> None:
    """Counts that bound ``json.loads``'s time, memory and recursion, before it runs."""
    if len(text) > limits.max_chars:
        raise OutputsRejected(f"{len(text)} characters (at most {limits.max_chars})")
    quotes = text.count('"')
    if quotes > 2 * limits.max_strings:
        raise OutputsRejected(f"more than {limits.max_strings} strings")
    # upper bounds first (brackets inside strings count too), then exact counts if needed
    opens = text.count("[") + text.count("{")
    if max(opens, text.count("]") + text.count("}")) > 4 * limits.max_containers:
        raise OutputsRejected(f"more than {limits.max_containers} containers")
    if opens > limits.max_depth:  # else no nesting can be deeper
        brackets = _NOT_BRACKETS.sub("", text)
        codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
        opening = (codes == ord("[")) | (codes == ord("{"))
        opens = int(opening.sum())
        if opens > limits.max_containers:
            raise OutputsRejected(f"more than {limits.max_containers} containers")
        depth = int(np.cumsum(np.where(opening, 1, -1), dtype=np.int64).max(initial=0))
        if depth > limits.max_depth:
            raise OutputsRejected(f"nested {depth} deep (at most {limits.max_depth})")
    if text.count(",") + opens + 1 > limits.max_values:
        raise OutputsRejected(f"more than {limits.max_values} values")


def _parse_int(limits: DecodeLimits) -> Callable[[str], int]:
    """``json.loads``'s integer hook: at most ``max_int_digits`` digits."""

    def parse(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.max_int_digits:
            raise OutputsRejected(f"an integer of more than {limits.max_int_digits} digits")
        return int(digits)

    return parse


def load_values(text: str, limits: DecodeLimits = DEFAULT_LIMITS) -> list[Any]:
    """Decode a list of values written by the capture codec (``dump_targets``).

    Args:
        text: The file's text.
        limits: The bounds (see :class:`DecodeLimits`).

    Returns:
        The decoded values, in order.

    Raises:
        OutputsRejected: Not a value list of the codec, or past a limit.
    """
    if not isinstance(text, str):
        raise OutputsRejected(f"outputs must be text, not {type(text).__name__}")
    _check_text(text, limits)
    try:  # every integer literal through the digit check (a regex pre-scan is quadratic)
        raw = json.loads(text, parse_int=_parse_int(limits))
    except OutputsRejected:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:  # JSONDecodeError is a ValueError
        raise OutputsRejected(f"not JSON: {type(exc).__name__}: {exc}"[:300]) from None
    if not isinstance(raw, list):
        raise OutputsRejected(f"a JSON {type(raw).__name__}, not a list of values")
    decoder = _Decoder(limits, len(text))
    try:
        return [decoder.value(v, 1) for v in raw]
    except OutputsRejected:
        raise
    except Exception as exc:  # whatever else hostile data sets off is a refusal, not a crash
        raise OutputsRejected(f"{type(exc).__name__}: {exc}"[:300]) from None


class _Decoder:
    """One text's decoding, with the running totals its limits need."""

    def __init__(self, limits: DecodeLimits, n_chars: int) -> None:
        self.limits = limits
        self.entries = 0
        self.sparse_cells = min(
            limits.max_sparse_cells,
            max(limits.sparse_cells_floor, limits.sparse_cells_per_char * n_chars),
        )

    # ------------------------------------------------------------------ values
    def value(self, v: Any, depth: int) -> Any:
        if depth > self.limits.max_depth:  # already bounded by the text check; kept local
            raise OutputsRejected("nested too deeply")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            if set(map(type, v)) <= _PLAIN:  # numbers and strings only: already decoded
                return v
            return [self.value(x, depth + 1) for x in v]
        if not isinstance(v, dict) or len(v) != 1:
            raise OutputsRejected("an object that is not one tagged value")
        ((tag, body),) = v.items()
        if tag not in self._TAGGED:
            raise OutputsRejected(f"unknown tag {tag[:40]!r}")
        return self._TAGGED[tag](self, body, depth + 1)

    def _float(self, body: Any, depth: int) -> float:
        if not isinstance(body, str) or body not in _NON_FINITE:
            raise OutputsRejected("bad non-finite float")
        return _NON_FINITE[body]

    def _complex(self, body: Any, depth: int) -> complex:
        parts = self._list(body, "complex", 2)
        re_, im = (self.value(x, depth + 1) for x in parts)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (re_, im)):
            raise OutputsRejected("bad complex number")
        return complex(re_, im)

    def _tuple(self, body: Any, depth: int) -> tuple[Any, ...]:
        return tuple(self.value(x, depth + 1) for x in self._list(body, "tuple"))

    def _set(self, body: Any, depth: int) -> set[Any]:
        items = self._list(body, "set")
        self._count_entries(len(items))
        return set(self._key(self.value(x, depth + 1)) for x in items)

    def _dict(self, body: Any, depth: int) -> dict[Any, Any]:
        pairs = self._list(body, "dict")
        self._count_entries(len(pairs))
        out: dict[Any, Any] = {}
        for pair in pairs:
            k, v = self._list(pair, "dict entry", 2)
            out[self._key(self.value(k, depth + 2))] = self.value(v, depth + 2)
        return out

    def _repr(self, body: Any, depth: int) -> str:
        if not isinstance(body, str):
            raise OutputsRejected("bad repr")
        return body

    def _ndarray(self, spec: Any, depth: int) -> np.ndarray:
        if not isinstance(spec, dict):
            raise OutputsRejected("bad array")
        keys = set(spec)
        if keys == {"real", "imag"}:
            re_, im = (self._raw_array(spec[k]) for k in ("real", "imag"))
            if re_.shape != im.shape:  # no broadcast of (n, 1) against (1, n)
                raise OutputsRejected("complex array parts of different shapes")
            out = np.empty(re_.shape, dtype=np.result_type(re_.dtype, im.dtype, np.complex64))
            out.real, out.imag = re_, im
            return out
        if keys == {"dtype", "shape", "b64"}:
            return self._b64_array(spec)
        if keys == {"dtype", "shape", "data"} and spec["dtype"] == "object":
            shape = self._shape(spec["shape"])
            data = self._list(spec["data"], "object array")
            if math.prod(shape) != len(data):
                raise OutputsRejected("object array data do not match its shape")
            arr = np.empty(len(data), dtype=object)
            for i, x in enumerate(data):  # one by one: a list element stays one element
                arr[i] = self.value(x, depth + 2)
            return arr.reshape(shape)
        raise OutputsRejected("bad array")

    def _sparse(self, spec: Any, depth: int) -> Any:
        import scipy.sparse as sp

        if not isinstance(spec, dict) or set(spec) != {"format", "shape", "row", "col", "data"}:
            raise OutputsRejected("bad sparse matrix")
        fmt = spec["format"]
        if fmt not in _SPARSE_FORMATS:
            raise OutputsRejected(f"unknown sparse format {str(fmt)[:20]!r}")
        shape = self._shape(spec["shape"])
        if len(shape) != 2:
            raise OutputsRejected("a sparse matrix has two dimensions")
        if shape[0] * shape[1] > self.sparse_cells:
            raise OutputsRejected(
                f"a sparse matrix of {shape[0]} x {shape[1]} (at most {self.sparse_cells} "
                "cells for this text)"
            )
        row, col = self._raw_array(spec["row"]), self._raw_array(spec["col"])
        data = self.value(spec["data"], depth + 1)
        if not isinstance(data, np.ndarray) or data.dtype.kind not in "biufc":
            raise OutputsRejected("sparse data must be a numeric array")
        if not (row.ndim == col.ndim == data.ndim == 1 and len(row) == len(col) == len(data)):
            raise OutputsRejected("sparse coordinates and data differ in length")
        if row.dtype.kind not in "iu" or col.dtype.kind not in "iu":
            raise OutputsRejected("sparse coordinates must be integers")
        for idx, n in ((row, shape[0]), (col, shape[1])):
            if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
                raise OutputsRejected("sparse coordinates outside the shape")
        rows, cols = row.astype(np.int64, copy=False), col.astype(np.int64, copy=False)
        coo = sp.coo_matrix((data, (rows, cols)), shape=shape)
        # csr and csc come back as such (the forms SciCode's targets take); every other form in
        # coordinates: dia and dok built from arbitrary entries can be far larger than the
        # entries (one diagonal per offset, one dict entry each), and the comparison densifies.
        return coo.tocsr() if fmt == "csr" else coo.tocsc() if fmt == "csc" else coo

    _TAGGED: ClassVar[dict[str, Any]] = {
        "__float__": _float,
        "__complex__": _complex,
        "__tuple__": _tuple,
        "__set__": _set,
        "__dict__": _dict,
        "__repr__": _repr,
        "__ndarray__": _ndarray,
        "__sparse__": _sparse,
    }

    # ------------------------------------------------------------------ pieces
    def _list(self, body: Any, what: str, n: int | None = None) -> list[Any]:
        if not isinstance(body, list) or (n is not None and len(body) != n):
            raise OutputsRejected(f"bad {what}")
        return body

    def _count_entries(self, n: int) -> None:
        self.entries += n
        if n > self.limits.max_entries:
            raise OutputsRejected(
                f"a set or dict of {n} entries (at most {self.limits.max_entries})"
            )
        if self.entries > self.limits.max_entries_total:
            raise OutputsRejected(
                f"more than {self.limits.max_entries_total} set and dict entries in all"
            )

    @staticmethod
    def _key(k: Any) -> Any:
        k = tuple(k) if isinstance(k, list) else k
        try:
            hash(k)
        except TypeError:
            raise OutputsRejected(f"an unhashable {type(k).__name__} as a key") from None
        return k

    def _shape(self, shape: Any) -> tuple[int, ...]:
        if (
            not isinstance(shape, list)
            or len(shape) > self.limits.max_ndim
            or not all(type(n) is int and 0 <= n <= _MAX_DIM for n in shape)
        ):
            raise OutputsRejected("bad shape")
        return tuple(shape)

    def _raw_array(self, v: Any) -> np.ndarray:
        if not (isinstance(v, dict) and set(v) == {"__ndarray__"}):
            raise OutputsRejected("bad array")
        spec = v["__ndarray__"]
        if not (isinstance(spec, dict) and set(spec) == {"dtype", "shape", "b64"}):
            raise OutputsRejected("bad array")
        return self._b64_array(spec)

    def _b64_array(self, spec: dict[str, Any]) -> np.ndarray:
        dtype = _numeric_dtype(spec["dtype"])
        shape = self._shape(spec["shape"])
        text = spec.pop("b64")  # dropped from the parsed tree: freed once decoded
        if not isinstance(text, str):
            raise OutputsRejected("bad array data")
        nbytes = math.prod(shape) * dtype.itemsize
        if len(text) != 4 * -(-nbytes // 3):  # base64 of exactly the shape's bytes
            raise OutputsRejected("array data do not match its shape")
        buf = np.empty(nbytes, dtype=np.uint8)
        at = 0
        try:
            for start in range(0, len(text), _B64_CHUNK):
                chunk = binascii.a2b_base64(text[start : start + _B64_CHUNK], strict_mode=True)
                buf[at : at + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                at += len(chunk)
        except (binascii.Error, ValueError) as exc:
            raise OutputsRejected(f"bad array data: {exc}") from None
        if at != nbytes:
            raise OutputsRejected("array data do not match its shape")
        return buf.view(dtype).reshape(shape)


def _numeric_dtype(name: Any) -> np.dtype:
    """A plain boolean, integer or floating dtype (never object, records or subarrays)."""
    if not isinstance(name, str) or len(name) > 8:
        raise OutputsRejected("bad dtype")
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise OutputsRejected(f"unknown dtype {name!r}") from None
    if dtype.kind not in "biuf" or dtype.subdtype is not None or dtype.names:
        raise OutputsRejected(f"unsupported dtype {name!r}")
    return dtype
