"""SciCode's test-case rewriting, the caller-side checks and the h5 reader, rule by rule.

Every expected value is written by hand from SciCode's test-case format (``assert
np.allclose(f(x), target)`` and its variants) and the comparison it stands for; nothing here
runs a sandbox.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from metacog_tasks.benchmarks._scicode_support import (
    CMP_SOURCE,
    CheckPlan,
    _is_target,
    _numeric_call,
    _partners,
    capture_targets_source,
    check_plan,
    compared_parts,
    mismatch,
    plan_mismatch,
    read_h5_targets,
    run_check,
)
from tests.availability import unavailable


@pytest.fixture(scope="module")
def ns() -> dict[str, Any]:
    """The caller's namespace as the grader builds it: the step's imports and our helpers."""
    out: dict[str, Any] = {}
    exec("import numpy as np", out)
    exec(CMP_SOURCE, out)
    return out


def _expr(src: str) -> ast.expr:
    return ast.parse(src, mode="eval").body


# ----------------------------------------------------------------------- what is the target
@pytest.mark.parametrize(
    ("src", "aliases", "expected"),
    [
        ("target", None, (True, None)),
        ("target[2]", None, (True, 2)),
        ("target[0]", {}, (True, 0)),
        ("a", {"a": 1}, (True, 1)),
        ("a", {"b": 0}, (False, None)),
        ("a", None, (False, None)),
        ("targets", None, (False, None)),
        ("target[-1]", None, (False, None)),  # -1 is an operation on a literal
        ("target['k']", None, (False, None)),
        ("target[i]", None, (False, None)),
        ("x[0]", None, (False, None)),
        ("obj.target", None, (False, None)),
        ("target.x[0]", None, (False, None)),
        ("f(target)", None, (False, None)),
    ],
)
def test_is_target(src: str, aliases: dict | None, expected: tuple) -> None:
    assert _is_target(_expr(src), aliases) == expected


@pytest.mark.parametrize(
    ("test", "pairs"),
    [
        ("np.allclose(f(x), target)", [(None, "f(x)")]),
        ("np.allclose(target, f(x), 1e-3)", [(None, "f(x)")]),
        ("cmp(target, target)", []),
        ("g(target)", []),
        ("np.allclose(a=f(x), b=target)", []),
        ("f(x) == target", [(None, "f(x)")]),
        ("target == f(x)", [(None, "f(x)")]),
        ("target[1] != g(2)", [(1, "g(2)")]),
        ("target[0] == target[1]", []),
        ("0 < f(x) < target", []),
        (
            "np.allclose(a(1), target[0]) and np.allclose(b(1), target[1])",
            [(0, "a(1)"), (1, "b(1)")],
        ),
        ("all(np.isclose(h(1), target))", [(None, "h(1)")]),
    ],
)
def test_partners(test: str, pairs: list) -> None:
    got = [(i, ast.unparse(e)) for i, e in _partners(_expr(test))]
    assert got == pairs


def test_partners_read_aliases() -> None:
    got = _partners(_expr("np.allclose(f(1), a) and b == g(1)"), {"a": 0, "b": 1})
    assert [(i, ast.unparse(e)) for i, e in got] == [(0, "f(1)"), (1, "g(1)")]
    assert _partners(_expr("np.allclose(f(1), a)")) == []
    # two parts of the target compared with each other: nothing computed by the step
    assert _partners(_expr("a == b"), {"a": 0, "b": 1}) == []


# ----------------------------------------------------------------------- the capture source
@pytest.mark.parametrize(
    ("test_case", "capture"),
    [
        ("x = 2\nassert np.allclose(f(x), target)", "x = 2\n__captured.append(f(x))"),
        ("assert target == f(1)\ny = 3", "__captured.append(f(1))\ny = 3"),
        # only the first assert that compares with target is rewritten
        (
            "assert x > 0\nassert f(x) == target\nassert g(x) == target",
            "assert x > 0\n__captured.append(f(x))\nassert g(x) == target",
        ),
        # several comparisons with the whole target: the first expression
        ("assert f(1) == target or g(1) == target", "__captured.append(f(1))"),
        (
            "assert np.allclose(f(1), target[0]) and np.allclose(g(1), target[1])",
            "__captured.append([f(1), g(1)])",
        ),
        (
            "assert np.allclose(g(1), target[1]) and np.allclose(f(1), target[0])",
            "__captured.append([f(1), g(1)])",
        ),
        # parts of the target with a gap or a missing part cannot be captured
        ("assert np.allclose(f(1), target[0]) and np.allclose(g(1), target[2])", None),
        ("assert np.allclose(g(1), target[1])", None),
        # "a, b = target": the parts, in the order of the names
        (
            "a, b = target\nassert np.allclose(f(1), a) and np.allclose(g(1), b)",
            "__captured.append([f(1), g(1)])",
        ),
        (
            "b, a = target\nassert np.allclose(f(1), a) and np.allclose(g(1), b)",
            "__captured.append([g(1), f(1)])",
        ),
        ("a, b = target\nassert np.allclose(f(1), a)", None),  # b is never compared
        ("a = target\nassert np.allclose(f(1), a)", None),
        ("a, b[0] = target\nassert np.allclose(f(1), a)", None),
        ("a, b = c, d = target\nassert np.allclose(f(1), a) and g(1) == b", None),
        ("assert g(1) == 2", "__captured.append(None)"),
        ("assert target.any()", None),
        ("y = target\nassert y", None),
        ("assert f(1) ==", None),
    ],
)
def test_capture_targets_source(test_case: str, capture: str | None) -> None:
    assert capture_targets_source(test_case) == capture


# ----------------------------------------------------------------------- the check plans
@pytest.mark.parametrize(
    ("test_case", "check"),
    [
        (
            "x = 2\nassert np.allclose(f(x), target, atol=1e-3)",
            "np.allclose(__out, target, atol=0.001)",
        ),
        (
            "assert np.allclose(d(c)[0], target[0]) and np.allclose(d(c)[1], target[1])",
            "np.allclose(__out[0], target[0]) and np.allclose(__out[1], target[1])",
        ),
        # a different expression compared with the whole target stays (and fails as unknown)
        ("assert f(1) == target or g(1) == target", "__out == target or g(1) == target"),
        (
            "assert np.allclose(f(1), target) or f(1) == target",
            "np.allclose(__out, target) or __out == target",
        ),
        (
            "a, b = target\nassert np.allclose(f(1), a) and np.allclose(g(1), b)",
            "np.allclose(__out[0], target[0]) and np.allclose(__out[1], target[1])",
        ),
        ("assert x > 0\nassert f(x) == target", "__out == target"),
        # every occurrence of the first expression is swapped, past a different one
        (
            "assert f(1) == target or g(1) == target or f(1) == target",
            "__out == target or g(1) == target or __out == target",
        ),
    ],
)
def test_check_plan_checks(test_case: str, check: str) -> None:
    plan = check_plan(test_case)
    assert plan is not None
    assert plan.checks == (check,)
    assert plan.capture == capture_targets_source(test_case)
    assert (plan.self_check, plan.model_names, plan.defs) == (False, (), "")


def test_check_plan_keeps_the_test_cases_own_definitions() -> None:
    src = (
        "import math\ndef close(a, b):\n    return abs(a - b) < 0.1\nx = 1\n"
        "assert close(f(x), target)"
    )
    plan = check_plan(src)
    assert plan.defs == "import math\ndef close(a, b):\n    return abs(a - b) < 0.1"
    assert plan.checks == ("close(__out, target)",)
    assert plan.capture == (
        "import math\n\ndef close(a, b):\n    return abs(a - b) < 0.1\nx = 1\n"
        "__captured.append(f(x))"
    )


@pytest.mark.parametrize(
    "test_case",
    ["assert f(1) ==", "assert target.any()", "y = target\nassert y", "x = 1", "assert f(1) == 2"],
)
def test_no_plan(test_case: str) -> None:
    assert check_plan(test_case) is None


def test_self_check_plan_by_hand() -> None:
    src = "def t():\n    e = np.array([1.0])\n    out = g(3)\n    assert np.allclose(out, e)\nt()"
    plan = check_plan(src)
    assert plan == CheckPlan(
        capture="def t():\n    e = np.array([1.0])\n    out = g(3)\n"
        "    __captured.append({'e': e, 'out': out})\nt()",
        checks=("np.allclose(out, e)",),
        defs="def t():\n    e = np.array([1.0])\n    out = g(3)\n"
        "    __captured.append({'e': e, 'out': out})",
        self_check=True,
        model_names=("out",),
    )


def test_self_check_taint_is_transitive() -> None:
    src = (
        "a = f(1)\nb = a + 1\nc = np.ones(2)\nd = c.sum()\nassert np.allclose(b, c)\n"
        "assert d == 2.0"
    )
    plan = check_plan(src)
    assert plan.capture == (
        "a = f(1)\nb = a + 1\nc = np.ones(2)\nd = c.sum()\n"
        "__captured.append({'b': b, 'c': c})\n__captured.append({'d': d})"
    )
    assert plan.checks == ("np.allclose(b, c)", "d == 2.0")
    assert plan.model_names == ("b",) and plan.self_check


def test_self_check_unpacked_names_and_method_chains() -> None:
    plan = check_plan("p, q = f(1)\nr = f(2).sum()\ns = [1, 2].count(1)\nassert p + q + r < s")
    assert plan.model_names == ("p", "q", "r")
    # a name assigned later from an earlier tainted one
    plan = check_plan("y = z * 2\nz = h(0)\nassert y == 0")
    assert plan.model_names == ("y",)
    plan = check_plan("v = x[0].sum()\nassert v == 1")
    assert plan.model_names == ()
    # x is first assigned before c and reassigned from it: tainted on a later pass, after the
    # already tainted a has been passed over
    plan = check_plan("a = f(1)\nx = 0\nc = a\nx = c * 2\nassert x > 0")
    assert plan.model_names == ("x",)
    # a method chain on a local value: the value's own methods, not the step's code
    plan = check_plan("a = np.ones(2)\nb = a.sum().item()\nc = f(a).sum().item()\nassert b < c")
    assert plan.model_names == ("c",)


@pytest.mark.parametrize(
    "name",
    [
        "np", "numpy", "__out", "cmp_tuple_or_list", "are_dicts_close", "are_csc_matrix_close",
        "abs", "all", "any", "len", "float", "int", "round", "sum", "max", "min", "tuple",
        "list", "isinstance", "bool",
    ],
)  # fmt: skip
def test_calls_to_numpy_and_builtins_are_not_the_steps_code(name: str) -> None:
    plan = check_plan(f"v = {name}(1)\nw = g(1)\nassert v == w")
    assert plan.model_names == ("w",)
    assert check_plan(f"v = 1\nassert {name}(v) == 1").checks == (f"{name}(v) == 1",)


@pytest.mark.parametrize(
    "module", ["np", "numpy", "scipy", "sp", "math", "cmath", "itertools", "la"]
)
def test_calls_into_numeric_modules_are_not_the_steps_code(module: str) -> None:
    plan = check_plan(f"v = {module}.f(1)\nw = mine.f(1)\nassert v == w")
    assert plan.model_names == ("w",)
    assert check_plan(f"v = 1\nassert {module}.f(v) == 1") is not None
    assert check_plan("v = 1\nassert mine.f(v) == 1") is None


def test_numeric_call_rules() -> None:
    assert _numeric_call(_expr("abs"))
    assert not _numeric_call(_expr("f"))
    assert _numeric_call(_expr("np.linalg.norm"))
    assert _numeric_call(_expr("np.zeros(3).sum"))
    assert not _numeric_call(_expr("f(3).sum"))
    assert _numeric_call(_expr("x.sum"), frozenset({"x"}))
    assert not _numeric_call(_expr("x.sum"))
    assert _numeric_call(_expr("x[0].sum"))
    assert _numeric_call(_expr("'a'.join"))


def test_self_check_in_a_function_and_at_the_top() -> None:
    src = "k = 2\nassert k > 1\ndef t():\n    m = g(1)\n    assert m < 3\nt()"
    plan = check_plan(src)
    assert plan.checks == ("k > 1", "m < 3")
    assert plan.model_names == ("m",)


# ----------------------------------------------------------------------- structure
def _nest(k: int) -> Any:
    value: Any = 1.0
    for _ in range(k):
        value = {"a": value}
    return value


def _nest_lists(k: int) -> Any:
    """k levels of ragged lists (never one numeric array), compared part by part."""
    value: Any = 1.0
    for _ in range(k):
        value = [value, [1.0, 2.0]]
    return value


def _sparse(shape: tuple[int, int]) -> Any:
    import scipy.sparse as sp

    return sp.csr_matrix(np.ones(shape))


_WRONG = "a {} where the target is a {}"


@pytest.mark.parametrize(
    ("out", "target", "why"),
    [
        # numeric values: the same kind and exactly the same shape, no broadcasting
        (np.array([]), 1.0, _WRONG.format("number of shape (0,)", "number")),
        ([], np.ones(2), _WRONG.format("number of shape (0,)", "number of shape (2,)")),
        (1.0, np.zeros((2, 0)), _WRONG.format("number", "number of shape (2, 0)")),
        (np.array([]), np.array([]), None),
        (np.zeros((3, 0)), np.zeros((3, 0)), None),
        (
            np.ones((3, 1)),
            np.ones(3),
            _WRONG.format("number of shape (3, 1)", "number of shape (3,)"),
        ),
        (np.ones(1), np.ones(3), _WRONG.format("number of shape (1,)", "number of shape (3,)")),
        (2.5, np.full(4, 2.5), _WRONG.format("number", "number of shape (4,)")),
        (
            np.zeros((0, 1, 1)),
            np.ones(3),
            _WRONG.format("number of shape (0, 1, 1)", "number of shape (3,)"),
        ),
        (3, 2.5, None),
        (1 + 2j, np.complex128(1), None),
        (np.float32(1.0), 2, None),
        ([1, 2.5], np.array([0.0, 0.0]), None),  # a list of numbers is a numeric array
        ((1.0, 2.0), [3.0, 4.0], None),
        (np.array([[1, 2], [3, 4]]), [(1, 2), (3, 4)], None),
        # the kind: booleans and numbers are not interchangeable
        (True, np.float64(1.0), _WRONG.format("bool", "number")),
        (1, True, _WRONG.format("number", "bool")),
        (
            np.array([True]),
            np.array([1.0]),
            _WRONG.format("bool of shape (1,)", "number of shape (1,)"),
        ),
        (np.bool_(False), False, None),
        # text, None, sets
        ("ab", np.ones(2), _WRONG.format("str", "number of shape (2,)")),
        (np.ones(2), "ab", _WRONG.format("number of shape (2,)", "str")),
        ("ab", "cd", None),
        (None, np.ones(2), _WRONG.format("None", "number of shape (2,)")),
        (np.ones(2), None, _WRONG.format("number of shape (2,)", "None")),
        (None, None, None),
        ({1, 2}, {3, 4}, None),
        ({1}, {3, 4}, _WRONG.format("set", "set")),
        ([1, 2], {1, 2}, _WRONG.format("number of shape (2,)", "set")),
        # dicts only for dicts, with the same keys (numbers compared as floats)
        (
            {0: np.zeros((0, 1, 1)), 1: np.zeros((0, 1, 1))},
            (1.0, np.ones(2)),
            _WRONG.format("dict", "tuple of 2"),
        ),
        ({"a": 1.0}, [1.0], _WRONG.format("dict", "number of shape (1,)")),
        ([1.0], {"a": 1.0}, _WRONG.format("number of shape (1,)", "dict")),
        (
            {"a": np.array([]), "b": 1},
            {"a": 1.0, "b": 1},
            _WRONG.format("number of shape (0,)", "number"),
        ),
        ({"b": 1.0}, {"a": 1.0}, "a dict whose keys differ from the target's"),
        ({"a": 1.0, "b": 2.0}, {"a": 1.0}, "a dict whose keys differ from the target's"),
        ({1: 2.0, "1.0": 3.0}, {1.0: 2.0, 2.0: 3.0}, "a dict whose keys differ from the target's"),
        ({1: 2.0}, {1.0: 5.0}, None),
        ({"x": [1.0, 2.0]}, {"x": np.ones(2)}, None),
        # sparse matrices only for sparse matrices, of the same shape
        (_sparse((2, 2)), _sparse((2, 2)), None),
        (
            _sparse((2, 3)),
            _sparse((2, 2)),
            _WRONG.format("sparse matrix of shape (2, 3)", "sparse matrix of shape (2, 2)"),
        ),
        (
            np.ones((2, 2)),
            _sparse((2, 2)),
            _WRONG.format("number of shape (2, 2)", "sparse matrix of shape (2, 2)"),
        ),
        (
            _sparse((2, 2)),
            np.ones((2, 2)),
            _WRONG.format("sparse matrix of shape (2, 2)", "number of shape (2, 2)"),
        ),
        # other sequences: the same length, part by part
        (
            [np.array([]), 1.0],
            [np.ones(2), 1.0],
            _WRONG.format("number of shape (0,)", "number of shape (2,)"),
        ),
        ([1.0, np.ones(3), 7], (1.0, np.ones(3)), _WRONG.format("list of 3", "tuple of 2")),
        ([1.0, np.ones(3)], (2.0, np.zeros(3)), None),
        (
            (np.zeros((0, 1, 1)),) * 3,
            (np.ones(3), 5.0),
            _WRONG.format("number of shape (3, 0, 1, 1)", "tuple of 2"),
        ),
        ([[1, 2], [3]], [[1, 2], [3]], None),
        (
            [[1, 2], [3, 4]],
            [[1, 2], [3]],
            _WRONG.format("number of shape (2,)", "number of shape (1,)"),
        ),
        ([[1, 2], [3]], (), _WRONG.format("list of 2", "number of shape (0,)")),
        ([], [[1, 2], [3]], _WRONG.format("number of shape (0,)", "list of 2")),
        ([None, None], [None, None], None),
        ([None, None], [[], []], _WRONG.format("list of 2", "number of shape (2, 0)")),
        ([[1, 2], [3]], 5.0, _WRONG.format("list of 2", "number")),
        (["a", 1], ["b", 2], None),
        ([["a", 1], [2]], [[np.array([]), 1], [2]], _WRONG.format("str", "number of shape (0,)")),
        (_nest(32), _nest(32), None),
        (_nest(33), _nest(33), "output nested too deeply"),
        (_nest_lists(32), _nest_lists(32), None),
        (_nest_lists(33), _nest_lists(33), "output nested too deeply"),
        # anything else: the same type
        (Path("a"), Path("b"), None),
        ("a", Path("a"), _WRONG.format("str", "PosixPath")),
    ],
)
def test_mismatch(out: Any, target: Any, why: str | None) -> None:
    assert mismatch(out, target) == why


def test_object_arrays_are_compared_part_by_part() -> None:
    target = np.empty(2, dtype=object)
    target[:] = [[1.0, 2.0], []]
    out = np.empty(2, dtype=object)
    out[:] = [[1.0, 2.0], [3.0]]
    assert mismatch(out, target) == _WRONG.format("number of shape (1,)", "number of shape (0,)")
    assert mismatch([[5.0, 6.0], []], target) is None
    assert mismatch(np.empty((1, 2), dtype=object), target) == _WRONG.format(
        "object array of shape (1, 2)", "object array of shape (2,)"
    )
    zero_d = np.empty((), dtype=object)
    zero_d[()] = "x"
    assert mismatch("y", zero_d) is None and mismatch(1.0, zero_d) is not None


@pytest.mark.parametrize(
    ("check", "parts"),
    [
        ("np.allclose(__out, target)", None),
        ("np.allclose(__out[0], target[0]) and np.allclose(__out[1], target[1])", (0, 1)),
        ("np.allclose(__out[1], target[1])", (1,)),
        ("np.allclose(__out[0], target[0]) and __out == target", None),
        ("np.allclose(__out[-1], target[-1])", None),
        ("f(__out[i], target)", None),
        ("True", None),
    ],
)
def test_compared_parts(check: str, parts) -> None:
    assert compared_parts(check) == parts


def test_indexed_checks_hold_each_part_and_the_count() -> None:
    plan = check_plan("assert np.allclose(d(c)[0], target[0]) and np.allclose(d(c)[1], target[1])")
    target = (1.0, np.ones(2), "third part the test never compares")
    assert plan_mismatch(plan, [2.0, np.zeros(2)], target) is None
    # an extra part of empty arrays: the old vacuous np.allclose
    forged = [np.zeros((0, 1, 1))] * 3
    assert plan_mismatch(plan, forged, target) == (
        "a number of shape (3, 0, 1, 1) where the check compares 2 parts"
    )
    assert plan_mismatch(plan, {0: forged[0], 1: forged[0]}, target) == (
        "a dict where the check compares 2 parts"
    )
    assert plan_mismatch(plan, [np.zeros((0, 1, 1)), np.zeros((0, 1, 1))], target) == (
        "part 0: " + _WRONG.format("number of shape (0, 1, 1)", "number")
    )
    assert plan_mismatch(plan, [1.0, np.ones(2)], (1.0,)) == "the target has no part 1"
    # parts unpacked from the target (a test-split case: "s, v = target") are held alike
    unpacked = check_plan(
        "Z = f(X)\ns, v = target\nassert test_identity(np.cov(Z)) == s and np.allclose(Z, v)"
    )
    assert unpacked.checks == ("__out[0] == target[0] and np.allclose(__out[1], target[1])",)
    assert plan_mismatch(unpacked, [True, np.ones((2, 3))], (False, np.zeros((2, 3)))) is None
    assert plan_mismatch(unpacked, [1, np.ones((2, 3))], (True, np.zeros((2, 3)))) == (
        "part 0: a number where the target is a bool"
    )
    assert plan_mismatch(unpacked, [True, np.ones((0, 1, 1))], (True, np.zeros((2, 3)))) == (
        "part 1: a number of shape (0, 1, 1) where the target is a number of shape (2, 3)"
    )
    # run_check refuses the same entries before the check runs
    ns: dict[str, Any] = {"np": np}
    exec(CMP_SOURCE, ns)
    assert run_check(plan, ns, forged, target) == plan_mismatch(plan, forged, target)


# ----------------------------------------------------------------------- checks in the caller
def test_run_check_plain(ns) -> None:
    plan = check_plan("x = 2\nassert np.allclose(f(x), target, atol=1e-3)")
    assert run_check(plan, ns, 1.0005, 1.0) is None
    assert run_check(plan, ns, 1.01, 1.0) == "AssertionError"
    assert run_check(plan, ns, np.array([]), 1.0) == (
        "a number of shape (0,) where the target is a number"
    )
    assert run_check(plan, ns, [1.0, 2.0, 3.0], [1.0, 2.0]) == (
        "a number of shape (3,) where the target is a number of shape (2,)"
    )
    # a check that raises on comparable values fails with the error
    plan_raises = CheckPlan("", ("np.allclose(__out @ np.ones(3), target)",))
    assert run_check(plan_raises, ns, np.ones(2), np.ones(2)).startswith("ValueError: matmul")
    plan = check_plan("assert f(1) == target or g(1) == target")
    assert run_check(plan, ns, 1, 1) == "check reads ['g'] computed beside the model code"
    plan = check_plan("assert np.allclose(d(c)[0], target[0]) and np.allclose(d(c)[1], target[1])")
    assert run_check(plan, ns, [1.0, np.ones(2)], (1.0, np.ones(2))) is None
    assert run_check(plan, ns, [1.0, np.zeros(2)], (1.0, np.ones(2))) == "AssertionError"
    assert run_check(plan, ns, [1.0], (1.0, np.ones(2))) == (
        "a number of shape (1,) where the check compares 2 parts"
    )
    # the comparison helpers of the namespace
    plan = check_plan("assert cmp_tuple_or_list(f(1), target)")
    assert run_check(plan, ns, (1.0, [2.0, 3.0]), (1.0, [2.0, 3.0])) is None
    assert run_check(plan, ns, (1.0, [2.0, 3.1]), (1.0, [2.0, 3.0])) == "AssertionError"


def test_run_check_uses_the_test_cases_definitions(ns) -> None:
    src = "def close(a, b):\n    return abs(a - b) < 0.1\nassert close(f(1), target)"
    plan = check_plan(src)
    assert run_check(plan, ns, 1.05, 1.0) is None
    assert run_check(plan, ns, 1.5, 1.0) == "AssertionError"
    assert "close" not in ns  # the namespace given is not changed


def test_run_check_never_raises(ns) -> None:
    long = CheckPlan("", ("True",), "raise ValueError('z' * 400)")
    assert run_check(long, ns, 1, 1) == ("ValueError: " + "z" * 400)[:300]
    broken = CheckPlan("", ("True",), "def (")
    assert run_check(broken, ns, 1, 1).startswith("SyntaxError: ")
    plan = CheckPlan("", ("__out.upper()",))
    assert run_check(plan, ns, 1, 1) == "AttributeError: 'int' object has no attribute 'upper'"
    plan = CheckPlan("", ("[][0] if __out else 0",))
    assert run_check(plan, ns, 1, 1) == "IndexError: list index out of range"
    plan = CheckPlan("", ("__out['" + "k" * 400 + "']",))
    assert run_check(plan, ns, {}, {}) == ("KeyError: '" + "k" * 400 + "'")[:300]
    assert run_check(plan, ns, {}, 1) == "a dict where the target is a number"


def test_run_check_self_checking(ns) -> None:
    src = "def t():\n    e = np.array([1.0])\n    out = g(3)\n    assert np.allclose(out, e)\nt()"
    plan = check_plan(src)
    gold = [{"e": np.array([1.0]), "out": np.array([1.0])}]
    # the expected value is the gold run's, the output the model's
    assert run_check(plan, ns, [{"e": np.array([5.0]), "out": np.array([5.0])}], gold)
    assert run_check(plan, ns, [{"e": np.array([9.0]), "out": np.array([1.0])}], gold) is None
    missing = "self-checking test case: captured values missing"
    assert run_check(plan, ns, {"e": 1.0, "out": 1.0}, gold) == missing
    assert run_check(plan, ns, [{"out": 1.0}], {"e": 1.0}) == missing
    assert run_check(plan, ns, [], gold) == missing
    assert run_check(plan, ns, [{"out": 1.0}, {"out": 1.0}], gold) == missing
    assert run_check(plan, ns, [[1.0]], gold) == missing
    assert run_check(plan, ns, [{"out": 1.0}], [[1.0]]) == missing
    assert run_check(plan, ns, [{"e": 1.0}], gold) == "value 'out' not captured"
    assert run_check(plan, ns, [{"out": 1.0}], [{"out": 1.0}]) == "value 'e' not captured"
    assert run_check(plan, ns, [{"out": np.array([1.0])}], [{"out": 1.0}]) == (
        "out: a number of shape (1,) where the target is a number"
    )
    assert run_check(plan, ns, [{"out": np.array([])}], gold) == (
        "out: a number of shape (0,) where the target is a number of shape (1,)"
    )
    # a model value the gold run did not capture is not compared for structure
    assert run_check(plan, ns, [{"out": np.array([1.0])}], [{"e": np.array([1.0])}]) is None
    src = "a = f(1)\nb = a + 1\nc = 3.0\nassert b == c\nd = f(2)\nassert d < c"
    plan = check_plan(src)
    assert plan.model_names == ("b", "d")  # a is tainted but no assert reads it
    gold = [{"b": 3.0, "c": 3.0}, {"c": 3.0, "d": 1.0}]
    assert run_check(plan, ns, [{"b": 3.0, "c": 0.0}, {"c": 0.0, "d": 2.0}], gold) is None
    assert run_check(plan, ns, [{"b": 3.0, "c": 3.0}, {"c": 3.0, "d": 4.0}], gold) == (
        "AssertionError"
    )


# ----------------------------------------------------------------------- test_data.h5
def test_read_h5_targets_layouts(tmp_path: Path) -> None:
    try:
        import h5py
    except ImportError:
        unavailable("h5py is not installed (the scicode extra)")
    import scipy.sparse as sp

    path = tmp_path / "test_data.h5"
    with h5py.File(path, "w") as f:
        f["5.1/test1/var1"] = 2.5
        f["5.1/test2/var1"] = np.arange(3.0)
        f["5.1/test2/var2"] = b"text"
        f["5.1/test3/var1/list/0"] = 1
        f["5.1/test3/var1/list/1"] = b"b"
        # each shape is larger than the stored entries imply: it must be read, not inferred
        g = f.create_group("5.1/test4/var1/sparse_matrix")
        g["data"], g["row"], g["col"], g["shape"] = [1.0, 2.0], [0, 1], [1, 0], [3, 3]
        g = f.create_group("5.1/test5/var1/sparse_matrix")
        g["data"], g["indices"], g["indptr"], g["shape"] = [3.0], [1], [0, 1, 1], [2, 3]
        g = f.create_group("5.1/test6/var1/sparse_matrix")
        g["data"] = np.ones((1, 2, 2))
        g["indices"], g["indptr"], g["shape"], g["blocksize"] = [1], [0, 1], [2, 6], [2, 2]
        f["5.1/test7/var1/1.5"] = 7
        f["5.1/test7/var1/name"] = b"v"
        h = f.create_group("5.1/test7/var1/mat/sparse_matrix")
        h["data"], h["indices"], h["indptr"], h["shape"] = [4.0], [0], [0, 1], [1, 1]
    values = read_h5_targets(str(path), "5.1", 7)
    assert len(values) == 7
    assert values[0] == 2.5
    arr, text = values[1]
    assert np.array_equal(arr, [0.0, 1.0, 2.0]) and text == "text"
    assert values[2] == [1, "b"]
    assert isinstance(values[3], sp.coo_matrix)
    assert np.array_equal(values[3].toarray(), [[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0] * 3])
    assert isinstance(values[4], sp.csr_matrix)
    assert np.array_equal(values[4].toarray(), [[0.0, 3.0, 0.0], [0.0, 0.0, 0.0]])
    assert isinstance(values[5], sp.bsr_matrix) and values[5].blocksize == (2, 2)
    assert np.array_equal(values[5].toarray(), [[0, 0, 1, 1, 0, 0], [0, 0, 1, 1, 0, 0]])
    d = values[6]
    assert set(d) == {1.5, "name", "mat"} and d[1.5] == 7 and d["name"] == "v"
    assert np.array_equal(d["mat"].toarray(), [[4.0]])
    assert read_h5_targets(str(path), "5.1", 2)[0] == 2.5
    with pytest.raises(KeyError):
        read_h5_targets(str(path), "5.1", 8)
    with pytest.raises(KeyError):
        read_h5_targets(str(path), "5.2", 1)
    with h5py.File(path, "a") as f:
        f["5.3/test1/var1"] = np.bytes_(b"\xff")
    with pytest.raises(UnicodeDecodeError):
        read_h5_targets(str(path), "5.3", 1)


def test_read_h5_targets_without_h5py(monkeypatch, tmp_path: Path) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "h5py", None)  # "import h5py" raises ImportError
    with pytest.raises(ImportError) as err:
        read_h5_targets(str(tmp_path / "test_data.h5"), "1.1", 1)
    assert str(err.value) == "reading SciCode test_data.h5 needs h5py (pip install h5py)"
