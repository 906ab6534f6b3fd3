"""The bounded decoder of what a SciCode run writes back, and the comparison's structure rule.

Every text here is what model code could leave in ``outputs.json``: the decoder must return
values or refuse with :class:`OutputsRejected`, never raise anything else, never take long,
and never build a value larger than its limits allow. The property tests draw outputs and
targets of every kind the codec carries and hold the comparison to the target's exact
structure. Nothing here runs a sandbox.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from metacog_tasks.benchmarks._scicode_decode import (
    DEFAULT_LIMITS,
    DecodeLimits,
    OutputsRejected,
    load_values,
)
from metacog_tasks.benchmarks._scicode_support import (
    CMP_SOURCE,
    check_plan,
    codec,
    mismatch,
    run_check,
)

dump = codec["dump_targets"]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _array(dtype: str, shape: list[int], raw: bytes) -> dict[str, Any]:
    return {"__ndarray__": {"dtype": dtype, "shape": shape, "b64": _b64(raw)}}


def _sparse(fmt: str, shape: list[int], rows: list[int], cols: list[int], data: list[float]):
    return {
        "__sparse__": {
            "format": fmt,
            "shape": shape,
            "row": _array("<i8", [len(rows)], np.array(rows, dtype="<i8").tobytes()),
            "col": _array("<i8", [len(cols)], np.array(cols, dtype="<i8").tobytes()),
            "data": _array("<f8", [len(data)], np.array(data, dtype="<f8").tobytes()),
        }
    }


# ----------------------------------------------------------------------- refused as data
_OUTSIDE = "sparse coordinates outside the shape"
_LENGTHS = "sparse coordinates and data differ in length"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"__ndarray__": {"dtype": "(100000000,)f8", "shape": [1], "b64": ""}}, "bad dtype"),
        (_array("V8", [1], b"\0" * 8), "unsupported dtype 'V8'"),
        (_array("|O", [1], b"\0" * 8), "unsupported dtype '|O'"),
        (_array("<f8,<f8", [1], b"\0" * 16), "unsupported dtype '<f8,<f8'"),
        (_array("<c16", [1], b"\0" * 16), "unsupported dtype '<c16'"),
        (_array("<f8", [1_000_000_000], b"\0" * 8), "array data do not match its shape"),
        (_array("<f8", [-1], b"\0" * 8), "bad shape"),
        (_array("<f8", [2**31], b""), "bad shape"),
        (_array("<f8", [1.0], b"\0" * 8), "bad shape"),  # type: ignore[list-item]
        (_array("<f8", [True], b"\0" * 8), "bad shape"),
        (_array("<f8", [1] * 33, b"\0" * 8), "bad shape"),
        ({"__ndarray__": {"dtype": "<f8", "shape": [1], "b64": "AAAA=AAAAAA="}},
         "bad array data: Discontinuous padding not allowed"),
        ({"__ndarray__": {"dtype": "<f8", "shape": [1], "b64": 5}}, "bad array data"),
        ({"__ndarray__": {"dtype": "<f8", "shape": [1], "data": [1.0]}}, "bad array"),
        ({"__ndarray__": {"dtype": "<f8", "shape": [1], "b64": "", "x": 1}}, "bad array"),
        # complex parts of shapes (n, 1) and (1, n) broadcast to n x n
        (
            {"__ndarray__": {"real": _array("<f8", [3, 1], b"\0" * 24),
                             "imag": _array("<f8", [1, 3], b"\0" * 24)}},
            "complex array parts of different shapes",
        ),
        ({"__ndarray__": {"dtype": "object", "shape": [3], "data": [1, 2]}},
         "object array data do not match its shape"),
        # sparse matrices: coordinates only, inside the shape, a shape the text can afford
        ({"__sparse__": {"format": "csr", "dense": [[1.0]]}}, "bad sparse matrix"),
        (_sparse("__class__", [1, 1], [0], [0], [1.0]), "unknown sparse format '__class__'"),
        (_sparse("csr", [3], [0], [0], [1.0]), "a sparse matrix has two dimensions"),
        (_sparse("dia", [100_000, 100_000], [0], [0], [1.0]),
         f"a sparse matrix of 100000 x 100000 (at most {2**20} cells for this text)"),
        (_sparse("csr", [2, 2], [0, 2], [0, 0], [1.0, 2.0]), _OUTSIDE),
        (_sparse("csr", [2, 2], [0, -1], [0, 0], [1.0, 2.0]), _OUTSIDE),
        (_sparse("csr", [2, 2], [0], [0, 1], [1.0]), _LENGTHS),
        # scalars and containers
        ({"__float__": [1]}, "bad non-finite float"),
        ({"__float__": "1e308"}, "bad non-finite float"),
        ({"__complex__": [1.0]}, "bad complex"),
        ({"__complex__": ["a", 1.0]}, "bad complex number"),
        ({"__set__": [[1], [2]]}, None),  # lists become tuples: hashable
        ({"__set__": [{"__set__": [1]}]}, "an unhashable set as a key"),
        ({"__dict__": [[1]]}, "bad dict entry"),
        ({"__set__": list(range(1025))}, "a set or dict of 1025 entries (at most 1024)"),
        ({"__tuple__": 1}, "bad tuple"),
        ({"__repr__": 1}, "bad repr"),
        ({"a": 1}, "unknown tag 'a'"),
        ({"__tuple__": [], "__set__": []}, "an object that is not one tagged value"),
        ({}, "an object that is not one tagged value"),
    ],
    ids=lambda v: str(v)[:40],
)  # fmt: skip
def test_hostile_values_are_refused_as_data(value: Any, why: str | None) -> None:
    text = json.dumps([value])
    if why is None:
        assert load_values(text) == [{(1,), (2,)}]
        return
    with pytest.raises(OutputsRejected) as err:
        load_values(text)
    assert str(err.value) == why


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 65 + "]" * 65, "nested 65 deep (at most 64)"),
        ('["' + "[" * 100 + '"]', None),  # brackets inside a string are not nesting
        ('["' + '\\"[' * 100 + '"]', None),
        ('["\\\\"' + ", [" * 70 + "]" * 70 + "]", "nested 71 deep (at most 64)"),
        ("[" * 1_000_000, "more than 200000 containers"),
        ("[" + "[]," * 200_001 + "[]]", "more than 200000 containers"),
        ("[" + "0," * 2_000_000 + "0]", "more than 2000000 values"),
        ("[" + '"",' * 1_000_000 + '""]', "more than 1000000 strings"),
        ("[" + "9" * 301 + "]", "an integer of more than 300 digits"),
        ("[-" + "9" * 300 + "]", None),
        ('["' + "9" * 400 + '", 12]', None),  # a long run of digits in a string is text
        ("[1.5, NaN, Infinity, -Infinity]", None),
        ("[1, 2", "not JSON: JSONDecodeError: Expecting ',' delimiter: line 1 column 6 (char 5)"),
        ('{"a": 1}', "a JSON dict, not a list of values"),
        ("", "not JSON: JSONDecodeError: Expecting value: line 1 column 1 (char 0)"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_hostile_texts_are_refused_before_parsing(text: str, why: str | None) -> None:
    if why is None:
        assert isinstance(load_values(text), list)
        return
    with pytest.raises(OutputsRejected) as err:
        load_values(text)
    assert str(err.value) == why


def test_limits_are_exact() -> None:
    """Each limit admits its bound and refuses one more."""
    at, over = "[" * 64 + "]" * 64, "[" * 65 + "]" * 65
    assert load_values(at) == [[]] or load_values(at)  # 64 deep: decoded
    with pytest.raises(OutputsRejected):
        load_values(over)
    small = DecodeLimits(max_chars=10)
    assert load_values("[1, 2, 3]", small) == [1, 2, 3]
    with pytest.raises(OutputsRejected, match=r"^11 characters \(at most 10\)$"):
        load_values("[1, 2, 345]", small)
    entries = DecodeLimits(max_entries=3, max_entries_total=5)
    assert load_values(dump([{1, 2, 3}, {"a": 1, "b": 2}]), entries)
    with pytest.raises(OutputsRejected, match=r"^more than 5 set and dict entries in all$"):
        load_values(dump([{1, 2, 3}, {"a": 1, "b": 2, "c": 3}]), entries)  # 6 in all
    with pytest.raises(OutputsRejected, match=r"^a set or dict of 4 entries \(at most 3\)$"):
        load_values(dump([{1, 2, 3, 4}]), entries)
    with pytest.raises(OutputsRejected, match=r"^not a list|^outputs must be text"):
        load_values(b"[]")  # type: ignore[arg-type]


def test_sparse_shape_is_bounded_by_the_text() -> None:
    """A small text cannot describe a huge matrix: at most 64 cells per character (floor
    2**20), never more than 2**24."""
    ok = json.dumps([_sparse("coo", [1024, 1024], [3], [5], [2.0])])
    (m,) = load_values(ok)
    assert m.format == "coo" and m.shape == (1024, 1024) and m.nnz == 1
    pad = {"__repr__": "x" * 300_000}
    wide = [_sparse("csr", [4096, 4096], [3], [5], [2.0]), pad]
    assert load_values(json.dumps(wide))[0].shape == (4096, 4096)  # 2**24 <= 64 x 300k chars
    wider = [_sparse("csr", [4097, 4096], [3], [5], [2.0]), pad]
    with pytest.raises(OutputsRejected, match="a sparse matrix of 4097 x 4096"):
        load_values(json.dumps(wider))


def test_deep_nesting_under_a_raised_recursion_limit_does_not_crash() -> None:
    """json.loads recurses in C once per level: with the recursion limit raised, a deep text
    overflows the C stack (a segfault in the caller). The depth is checked before it runs."""
    code = (
        "import sys\n"
        "from metacog_tasks.benchmarks._scicode_decode import OutputsRejected, load_values\n"
        "sys.setrecursionlimit(10**6)\n"
        "try:\n"
        "    load_values('[' * 150_000 + ']' * 150_000)\n"
        "except OutputsRejected as exc:\n"
        "    print('refused:', exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.strip() == "refused: more than 200000 containers" or proc.stdout.strip() == (
        "refused: nested 150000 deep (at most 64)"
    )
    code = code.replace("150_000", "60_000")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "refused: nested 60000 deep (at most 64)"


def test_colliding_hashes_cost_little() -> None:
    """Integers that all hash alike (multiples of 2**61 - 1) make a set quadratic in its size;
    at the limits (1024 per set, 16384 in all) decoding stays fast."""
    p = 2**61 - 1
    sets = [{"__set__": [p * (k + 1 + 1024 * j) for k in range(1024)]} for j in range(16)]
    text = json.dumps(sets)
    assert len({hash(v) for s in sets for v in s["__set__"]}) == 1
    start = time.perf_counter()
    values = load_values(text)
    assert time.perf_counter() - start < 2.0
    assert [len(v) for v in values] == [1024] * 16
    with pytest.raises(OutputsRejected):
        load_values(json.dumps([*sets, {"__set__": [p]}]))


def test_arrays_come_back_exact_and_writable() -> None:
    values = [np.arange(12, dtype="<i4").reshape(3, 4), np.array([1.5, np.nan, -np.inf])]
    values += [np.array([True, False]), np.zeros((0, 3)), np.array([1 + 2j, 3 - 4j])]
    back = load_values(dump(values))
    for a, b in zip(back, values):
        assert a.dtype == b.dtype and a.shape == b.shape and a.flags.writeable
        np.testing.assert_array_equal(a, b)
    big = np.random.default_rng(0).normal(size=(700, 700))  # over one base64 chunk
    (back_big,) = load_values(dump([big]))
    np.testing.assert_array_equal(back_big, big)


# ----------------------------------------------------------------------- property tests
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=False, max_magnitude=1e6),
    st.text(max_size=8),
)
_KEYS = st.one_of(st.integers(-50, 50), st.text(max_size=4), st.floats(-5, 5))
_ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.bool_, np.int32, np.int64, np.float64, np.complex128]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
)


@st.composite
def _sparse_values(draw: st.DrawFn) -> Any:
    shape = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    dense = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 1.0, -2.5])))
    return getattr(sp, draw(st.sampled_from(["csr", "csc", "coo", "dia", "lil"])) + "_matrix")(
        dense
    )


_VALUES = st.recursive(
    st.one_of(_SCALARS, _ARRAYS, _sparse_values()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(_KEYS, inner, max_size=3),
        st.frozensets(st.integers(-5, 5), max_size=4).map(set),
    ),
    max_leaves=12,
)


def _same(a: Any, b: Any) -> bool:
    """Equal values and types as the codec carries them (a frozenset travels as a set, a
    dia or lil matrix in compressed form, a NumPy scalar as its Python value)."""
    if sp.issparse(a) or sp.issparse(b):
        return sp.issparse(a) and sp.issparse(b) and np.array_equal(a.toarray(), b.toarray())
    if isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and np.array_equal(a, b, equal_nan=b.dtype.kind in "fc")
        )
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(b, float) and math.isnan(b):
        return isinstance(a, float) and math.isnan(a)
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_VALUES, min_size=1, max_size=3))
def test_property_every_value_round_trips_and_matches_itself(values: list[Any]) -> None:
    back = load_values(dump(values))
    assert len(back) == len(values)
    for a, b in zip(back, values):
        assert _same(a, b), (a, b)
        assert mismatch(a, b) is None  # what the codec carries is comparable with itself


_JUNK = ['"', "[", "]", "{", "}", ",", ":", "\\", "1e999", "-0", "null", ""]
_JUNK += ['{"__set__": [', '{"__ndarray__": {', "9" * 400]


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUES, min_size=1, max_size=2), st.data())
def test_property_mangled_encodings_are_values_or_refusals(values: list[Any], data) -> None:
    """Cut, spliced or overwritten encodings: decoded or refused, never an error, fast."""
    text = dump(values)
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    junk = data.draw(st.sampled_from(_JUNK))
    mangled = text[:i] + junk + text[j:]
    start = time.perf_counter()
    try:
        out = load_values(mangled)
    except OutputsRejected:
        out = None
    assert time.perf_counter() - start < 2.0
    assert out is None or isinstance(out, list)


_JSON_KEYS = ["__float__", "__complex__", "__tuple__", "__set__", "__dict__", "__repr__"]
_JSON_KEYS += ["__ndarray__", "__sparse__", "dtype", "shape", "b64", "data", "real", "imag"]
_JSON_KEYS += ["format", "row", "col", "x"]
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(_JSON_KEYS),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_JSON, max_size=4))
def test_property_arbitrary_json_is_decoded_or_refused(values: list[Any]) -> None:
    """Random JSON built from the codec's own tags and keys: never any other exception."""
    try:
        out = load_values(json.dumps(values))
    except OutputsRejected:
        return
    assert isinstance(out, list) and len(out) == len(values)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_property_any_text_is_decoded_or_refused(text: str) -> None:
    with contextlib.suppress(OutputsRejected):
        assert isinstance(load_values(text), list)


# ----------------------------------------------------------------------- the comparison
def _signature(v: Any) -> Any:
    """The structure the comparison must see, computed on one value at a time (an oracle
    for :func:`mismatch`, which compares two): kind and exact shape of numeric values, keys
    of dicts, lengths and parts of other sequences, the type of anything else."""
    if isinstance(v, dict):
        keys = {}
        for k, x in v.items():
            key = k
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                key = float(k)
            keys[key] = x
        if len(keys) != len(v):
            return ("dict with colliding keys", id(v))
        return ("dict", frozenset(keys), tuple(_signature(keys[k]) for k in sorted(keys, key=repr)))
    if sp.issparse(v):
        return ("sparse", v.shape)
    if isinstance(v, (bool, np.bool_)):
        return ("bool", ())
    if isinstance(v, (int, float, complex, np.number)):
        return ("number", ())
    if isinstance(v, (list, tuple, np.ndarray)):
        try:
            arr = np.asarray(v)
        except (ValueError, TypeError, OverflowError):
            arr = None
        if arr is not None and arr.dtype.kind == "b":
            return ("bool", arr.shape)
        if arr is not None and arr.dtype.kind in "iufc":
            return ("number", arr.shape)
        if isinstance(v, np.ndarray) and v.ndim == 0:
            return _signature(v.item())
        parts = list(v)
        return ("sequence", len(parts), tuple(_signature(x) for x in parts))
    if isinstance(v, (str, bytes)):
        return "text"
    if isinstance(v, (set, frozenset)):
        return ("set", len(v))
    return type(v).__name__


_NS: dict[str, Any] = {"np": np}
exec(CMP_SOURCE, _NS)
_WHOLE = check_plan("assert np.allclose(f(x), target)")
_TUPLE = check_plan("assert cmp_tuple_or_list(f(x), target)")
_EQUAL = check_plan("assert f(x) == target")


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")  # sparse == sparse
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, _VALUES)
def test_property_the_comparison_never_raises_and_never_broadcasts(out: Any, target: Any) -> None:
    start = time.perf_counter()
    why = mismatch(out, target)
    assert why is None or isinstance(why, str)
    for plan in (_WHOLE, _TUPLE, _EQUAL):
        verdict = run_check(plan, _NS, out, target)
        assert verdict is None or isinstance(verdict, str)
        if why is not None:
            assert verdict == why  # an output that cannot be compared never passes
    assert (why is None) == (_signature(out) == _signature(target)), (why, out, target)
    if why is None and isinstance(target, np.ndarray) and target.dtype.kind in "biufc":
        assert np.shape(out) == target.shape  # the same shape: nothing broadcasts
    assert time.perf_counter() - start < 2.0


def _forgeries(target: Any) -> list[Any]:
    """Outputs a policy could try without knowing the target's values."""
    empty = np.zeros((0, 1, 1))
    out: list[Any] = [empty, [], {0: empty, 1: empty}, None, "x", np.zeros((2, 0))]
    if isinstance(target, (list, tuple)):
        out += [[*target, empty], list(target)[:-1], {i: v for i, v in enumerate(target)}]
    shape = np.shape(target) if isinstance(target, np.ndarray) else None
    if shape is not None and target.size:
        out += [target.reshape(-1, 1), target.ravel()[:1], np.float64(0.0)]
    return out


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES)
def test_property_structural_forgeries_never_pass(target: Any) -> None:
    """An output of another structure than the target's never passes a check, whatever the
    check's own leniency (``np.allclose`` broadcasts and is vacuously true over nothing)."""
    for forged in _forgeries(target):
        if _signature(forged) == _signature(target):
            continue  # this forgery happens to have the target's structure (e.g. both empty)
        assert mismatch(forged, target) is not None, (forged, target)
        for plan in (_WHOLE, _TUPLE, _EQUAL):
            assert run_check(plan, _NS, forged, target) is not None, (forged, target)


def test_default_limits_are_the_documented_ones() -> None:
    assert DecodeLimits() == DEFAULT_LIMITS
    assert (DEFAULT_LIMITS.max_chars, DEFAULT_LIMITS.max_depth) == (128 * 2**20, 64)
    assert DEFAULT_LIMITS.max_int_digits == 300
