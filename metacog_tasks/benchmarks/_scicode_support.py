"""SciCode support code: the capture codec's encoder, the comparison helpers the test cases
import, the rewrite of a test case into value-capturing code, and the caller-side checks.

``CODEC_SOURCE`` and ``CMP_SOURCE`` are Python source text. The encoder runs inside the sandbox:
the captured values leave it as tagged JSON, never as pickles, and are read back by the bounded
decoder (:mod:`metacog_tasks.benchmarks._scicode_decode`). The comparison helpers are the
``scicode.compare.cmp`` module the test cases import, inside, and the helpers of every check,
which runs here, in the caller, on outputs that :func:`mismatch` found comparable.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

__all__ = [
    "CMP_SOURCE",
    "CODEC_SOURCE",
    "CheckPlan",
    "capture_targets_source",
    "check_plan",
    "codec",
    "mismatch",
    "plan_mismatch",
    "read_h5_targets",
    "run_check",
]

CODEC_SOURCE = r"""
import base64 as _b64
import json as _json
import math as _math


def _raw(array):
    return {"__ndarray__": {"dtype": array.dtype.str, "shape": list(array.shape),
                            "b64": _b64.b64encode(array.tobytes()).decode("ascii")}}


def _enc(value):
    import numpy as _np
    try:
        import scipy.sparse as _sp
    except ImportError:  # pragma: no cover
        _sp = None
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if _math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, complex):
        return {"__complex__": [_enc(value.real), _enc(value.imag)]}
    if isinstance(value, _np.generic):
        return _enc(value.item())
    if isinstance(value, _np.ndarray):
        if value.dtype.kind == "c":
            return {"__ndarray__": {"real": _raw(value.real), "imag": _raw(value.imag)}}
        if value.dtype.kind in "biuf":
            return _raw(value)  # C order, whatever the strides
        return {"__ndarray__": {"dtype": "object", "shape": list(value.shape),
                                "data": [_enc(x) for x in value.ravel().tolist()]}}
    if _sp is not None and _sp.issparse(value):
        coo = value.tocoo()  # coordinates: as large as the stored entries, never dense
        return {"__sparse__": {"format": value.format, "shape": list(coo.shape),
                               "row": _raw(_np.asarray(coo.row, dtype=_np.int64)),
                               "col": _raw(_np.asarray(coo.col, dtype=_np.int64)),
                               "data": _enc(_np.asarray(coo.data))}}
    if isinstance(value, tuple):
        return {"__tuple__": [_enc(x) for x in value]}
    if isinstance(value, list):
        return [_enc(x) for x in value]
    if isinstance(value, dict):
        return {"__dict__": [[_enc(k), _enc(v)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"__set__": [_enc(x) for x in value]}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return {"__repr__": repr(value)}


def dump_targets(values):
    return _json.dumps([_enc(v) for v in values])
"""

# The comparison helpers SciCode test cases import from ``scicode.compare.cmp``; written for
# this project: tolerant numeric comparison of nested tuples, lists, dicts, arrays, sparse.
CMP_SOURCE = r"""
import numpy as np


def _is_sparse(x):
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover
        return False
    return sp.issparse(x)


def are_csc_matrix_close(a, b, rtol=1e-05, atol=1e-08):
    a = a.toarray() if _is_sparse(a) else np.asarray(a)
    b = b.toarray() if _is_sparse(b) else np.asarray(b)
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)


def are_dicts_close(d1, d2, rtol=1e-05, atol=1e-08):
    def norm(d):
        out = {}
        for k, v in d.items():
            try:
                k = float(k)
            except (TypeError, ValueError):
                pass
            out[k] = v
        return out
    d1, d2 = norm(d1), norm(d2)
    if set(d1) != set(d2):
        return False
    return all(_close(d1[k], d2[k], rtol, atol) for k in d1)


def _equal(a, b):
    # a == b as a plain truth value; anything else (an array, an error) is False
    try:
        r = a == b
        return isinstance(r, (bool, np.bool_)) and bool(r)
    except Exception:
        return False


def _close(a, b, rtol=1e-05, atol=1e-08):
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and are_dicts_close(a, b, rtol, atol)
    if _is_sparse(a) or _is_sparse(b):
        try:
            return bool(are_csc_matrix_close(a, b, rtol, atol))
        except Exception:
            return False
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, rtol, atol) for x, y in zip(a, b))
    try:
        x, y = np.asarray(a), np.asarray(b)
    except Exception:
        return _equal(a, b)
    if x.dtype == object or y.dtype == object:
        # element by element, same shape: an empty object array is not "all equal"
        if x.shape != y.shape:
            return False
        if x.ndim == 0:
            return _equal(a, b)
        pairs = zip(x.ravel().tolist(), y.ravel().tolist())
        return all(_close(p, q, rtol, atol) for p, q in pairs)
    try:
        return x.shape == y.shape and bool(np.allclose(x, y, rtol=rtol, atol=atol))
    except Exception:
        return _equal(a, b)


def cmp_tuple_or_list(var1, var2):
    if len(var1) != len(var2):
        return False
    return all(_close(a, b) for a, b in zip(var1, var2))
"""

codec: dict[str, Any] = {}
exec(compile(CODEC_SOURCE, "<metacog scicode codec>", "exec"), codec)  # our own source


def _is_target(node: ast.AST, aliases: dict[str, int] | None = None) -> tuple[bool, int | None]:
    """Whether a node is ``target``, ``target[k]`` (k a literal int) or a name unpacked from
    ``target`` (``a, b = target``)."""
    if isinstance(node, ast.Name) and node.id == "target":
        return True, None
    if isinstance(node, ast.Name) and aliases and node.id in aliases:
        return True, aliases[node.id]
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "target"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, int)
    ):
        return True, node.slice.value
    return False, None


def _partners(
    test: ast.AST, aliases: dict[str, int] | None = None
) -> list[tuple[int | None, ast.expr]]:
    """(index, expression) pairs: each expression the test compares with target/target[k]."""
    found: list[tuple[int | None, ast.expr]] = []
    for node in ast.walk(test):
        if isinstance(node, ast.Call):
            args = list(node.args)
            marks = [_is_target(a, aliases) for a in args]
            hits = [i for i, (is_t, _) in enumerate(marks) if is_t]
            if len(hits) == 1:
                others = [a for i, a in enumerate(args) if i != hits[0]]
                if others:
                    found.append((marks[hits[0]][1], others[0]))
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
            left, right = node.left, node.comparators[0]
            for a, b in ((left, right), (right, left)):
                is_t, idx = _is_target(b, aliases)
                if is_t and not _is_target(a, aliases)[0]:
                    found.append((idx, a))
                    break
    return found


def capture_targets_source(test_case: str) -> str | None:
    """Rewrite a SciCode test case so that it computes its ``target`` instead of checking it.

    The setup lines are kept; the assert that uses ``target`` (or ``target[k]``) becomes
    assignments of the expressions it compares with, appended to ``__captured``. Run with the
    gold code, this regenerates the targets that ``test_data.h5`` would hold.

    Returns:
        The rewritten source (``__captured.append(None)`` for a test case that never uses
        ``target``), or ``None`` when its use of ``target`` is not recognisable.
    """
    try:
        tree = ast.parse(test_case)
    except SyntaxError:
        return None
    if not any(isinstance(n, ast.Name) and n.id == "target" for n in ast.walk(tree)):
        return "__captured.append(None)"  # a self-checking test case: no target needed
    body: list[ast.stmt] = []
    done = False
    aliases: dict[str, int] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id == "target"
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Tuple)
            and all(isinstance(e, ast.Name) for e in stmt.targets[0].elts)
        ):
            aliases = {e.id: k for k, e in enumerate(stmt.targets[0].elts)}  # type: ignore[attr-defined]
            continue  # "a, b = target": the parts are captured from the assert below
        if isinstance(stmt, ast.Assert) and not done:
            pairs = _partners(stmt.test, aliases)
            if pairs:
                if all(idx is None for idx, _ in pairs):
                    code = f"__captured.append({ast.unparse(pairs[0][1])})"
                else:
                    parts = {idx: expr for idx, expr in pairs if idx is not None}
                    n = max(max(parts) + 1, len(aliases))
                    if set(parts) != set(range(n)):
                        return None
                    items = ", ".join(ast.unparse(parts[k]) for k in range(n))
                    code = f"__captured.append([{items}])"
                body.extend(ast.parse(code).body)
                done = True
                continue
        body.append(stmt)
    if not done:
        return None
    return ast.unparse(ast.Module(body=body, type_ignores=[]))


_CALLER_NAMES = frozenset(
    {"np", "numpy", "target", "__out", "cmp_tuple_or_list", "are_dicts_close"}
    | {"are_csc_matrix_close", "abs", "all", "any", "len", "float", "int", "round", "sum"}
    | {"max", "min", "tuple", "list", "isinstance", "bool", "None", "True", "False"}
)


@dataclasses.dataclass(frozen=True)
class CheckPlan:
    """How one test case is graded without trusting anything computed beside the model code.

    Attributes:
        capture: Source run in the sandbox: the test case with its assert replaced by
            ``__captured.append(...)`` of the values the assert compares (function outputs).
        checks: Expressions the *caller* evaluates, one per captured entry; ``__out`` is the
            captured value (decoded from JSON), ``target`` the target (``targets()``).
        defs: The test case's own function definitions (trusted dataset code, e.g. a custom
            comparison) that the checks may call; run in the caller.
        self_check: The test case has no ``target``: it compares with values it computes
            itself. Those values come from the gold run (``target`` is the gold capture) and
            only the names that depend on the step's code come from the model run.
        model_names: For a self-check, the captured names taken from the model run.
    """

    capture: str
    checks: tuple[str, ...]
    defs: str = ""
    self_check: bool = False
    model_names: tuple[str, ...] = ()


class _Swap(ast.NodeTransformer):
    def __init__(self, swaps: dict[int, ast.expr]) -> None:
        self.swaps = swaps

    def visit(self, node: ast.AST) -> Any:
        if id(node) in self.swaps:
            return self.swaps[id(node)]
        return super().visit(node)


def _defs(tree: ast.Module) -> str:
    return "\n".join(
        ast.unparse(s) for s in tree.body if isinstance(s, (ast.FunctionDef, ast.Import))
    )


def _free(expr: str, defs: str) -> set[str]:
    tree = ast.parse(expr, mode="eval")
    defined = {n.name for n in ast.walk(ast.parse(defs)) if isinstance(n, ast.FunctionDef)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return names - _CALLER_NAMES - defined


def _self_check_plan(tree: ast.Module) -> CheckPlan | None:
    """Asserts of a target-less test case: capture the local names they read."""
    scopes: list[list[ast.stmt]] = [tree.body]
    scopes += [n.body for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    checks: list[str] = []
    model: set[str] = set()
    for body in scopes:
        local: dict[str, ast.expr] = {}
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            local[n.id] = stmt.value
        names_ = frozenset(local)
        # a name depends on the step's code when its value calls anything but numpy/builtins
        # or reads such a name (transitively)
        tainted: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, value in local.items():
                if name in tainted:
                    continue
                for n in ast.walk(value):
                    calls_code = isinstance(n, ast.Call) and not _numeric_call(n.func, names_)
                    if calls_code or (isinstance(n, ast.Name) and n.id in tainted):
                        tainted.add(name)
                        changed = True
                        break
        for i, stmt in enumerate(body):
            if not isinstance(stmt, ast.Assert):
                continue
            names = sorted(
                {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)} & set(local)
            )
            calls = [
                n
                for n in ast.walk(stmt.test)
                if isinstance(n, ast.Call) and not _numeric_call(n.func)
            ]
            if calls:
                return None  # the assert calls the step's code itself: nothing to capture
            model |= set(names) & tainted
            capture = ast.parse(
                "__captured.append({" + ", ".join(f"{n!r}: {n}" for n in names) + "})"
            ).body[0]
            body[i] = capture
            checks.append(ast.unparse(stmt.test))
    if not checks:
        return None
    return CheckPlan(ast.unparse(tree), tuple(checks), _defs(tree), True, tuple(sorted(model)))


_MODULES = frozenset({"np", "numpy", "scipy", "sp", "math", "cmath", "itertools", "la"})


def _numeric_call(func: ast.expr, local: frozenset[str] = frozenset()) -> bool:
    """Whether a call is to numpy/builtins or a method of a local value (not the step's code)."""
    if isinstance(func, ast.Name):
        return func.id in _CALLER_NAMES
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Call):
        return _numeric_call(root.func, local)
    if isinstance(root, ast.Name):
        return root.id in _MODULES or root.id in local
    return True  # a method of a literal or subscript


def check_plan(test_case: str) -> CheckPlan | None:
    """The capture source and the caller-side checks of one SciCode test case.

    The expressions the test's assert compares with ``target`` are computed in the sandbox
    (:attr:`CheckPlan.capture`); the assert itself, with those expressions replaced by the
    captured value ``__out``, is evaluated by the caller. ``None`` when the test case cannot
    be split this way (it is then failed, never run as a self-grading script).
    """
    try:
        tree = ast.parse(test_case)
    except SyntaxError:
        return None
    if not any(isinstance(n, ast.Name) and n.id == "target" for n in ast.walk(tree)):
        return _self_check_plan(tree)
    capture = capture_targets_source(test_case)
    if capture is None:
        return None
    aliases: dict[str, int] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id == "target"
            and isinstance(stmt.targets[0], ast.Tuple)
        ):
            aliases = {e.id: k for k, e in enumerate(stmt.targets[0].elts)}  # type: ignore[attr-defined]
        if isinstance(stmt, ast.Assert):
            pairs = _partners(stmt.test, aliases)
            if not pairs:
                continue
            swaps: dict[int, ast.expr] = {}
            first = ast.dump(pairs[0][1])
            for idx, expr in pairs:
                if idx is None and ast.dump(expr) != first:
                    continue
                swaps[id(expr)] = ast.parse(
                    "__out" if idx is None else f"__out[{idx}]", mode="eval"
                ).body
            test = _Swap(swaps).visit(stmt.test)
            if aliases:  # "a, b = target" then "assert f(a) ...": use target[k]
                test = _Swap(
                    {
                        id(n): ast.parse(f"target[{aliases[n.id]}]", mode="eval").body
                        for n in ast.walk(test)
                        if isinstance(n, ast.Name) and n.id in aliases
                    }
                ).visit(test)
            return CheckPlan(capture, (ast.unparse(test),), _defs(tree))
    return None


_MAX_PARTS_DEPTH = 32


def _numeric_view(value: Any) -> tuple[str, tuple[int, ...]] | None:
    """``("bool" | "number", shape)`` of a value numpy reads as one boolean or numeric array
    (a scalar, an array, nested lists of equal lengths), else ``None``."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return "bool", ()
    if isinstance(value, (int, float, complex, np.number)):
        return "number", ()
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, (list, tuple)):
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError, OverflowError):
            return None  # ragged or mixed: compared part by part
    else:
        return None
    if arr.dtype.kind == "b":
        return "bool", arr.shape
    if arr.dtype.kind in "iufc":
        return "number", arr.shape
    return None


def _describe(value: Any, view: tuple[str, tuple[int, ...]] | None) -> str:
    """What a value is, for a message (``view``: its :func:`_numeric_view`)."""
    import numpy as np

    if view is not None:
        kind, shape = view
        return f"{kind} of shape {shape}" if shape else kind
    if isinstance(value, np.ndarray):
        return f"{value.dtype} array of shape {value.shape}"
    if _is_sparse(value):
        return f"sparse matrix of shape {value.shape}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)}"
    return "None" if value is None else type(value).__name__


def _is_sparse(value: Any) -> bool:
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy is a dependency
        return False
    return bool(sp.issparse(value))


def _dict_key(key: Any) -> Any:
    """A dict key as ``are_dicts_close`` compares it (numbers as floats)."""
    try:
        return float(key)
    except (TypeError, ValueError, OverflowError):
        return key


def mismatch(out: Any, target: Any, depth: int = 0) -> str | None:
    """Why a captured output cannot be compared with its target, or ``None`` when it can.

    An output must have exactly what the target has: a dict only for a dict (with the same
    keys), a sparse matrix only for a sparse matrix (of the same shape), text for text,
    ``None`` for ``None``, a set of the same size for a set; for a numeric value (a scalar, an
    array, nested lists of equal lengths) a numeric value of the same kind (boolean or number)
    and exactly the same shape, never one that broadcasts (``np.allclose`` is vacuously true
    over an empty array, and a ``(n, 1)`` against ``(m,)`` is never right and can exhaust
    memory); for any other sequence a sequence of the same length whose parts match. The test
    case's own check then compares the values.
    """
    import numpy as np

    if depth > _MAX_PARTS_DEPTH:
        return "output nested too deeply"
    views: dict[int, tuple[str, tuple[int, ...]] | None] = {}

    def view(value: Any) -> tuple[str, tuple[int, ...]] | None:  # numpy reads each once
        if id(value) not in views:
            views[id(value)] = _numeric_view(value)
        return views[id(value)]

    def wrong() -> str:  # the message, built only for an output that fails
        return (
            f"a {_describe(out, view(out))} where the target is a {_describe(target, view(target))}"
        )

    if isinstance(target, dict) or isinstance(out, dict):
        if not (isinstance(target, dict) and isinstance(out, dict)):
            return wrong()
        keys_out = {_dict_key(k): v for k, v in out.items()}
        keys_target = {_dict_key(k): v for k, v in target.items()}
        if len(keys_out) != len(out) or keys_out.keys() != keys_target.keys():
            return "a dict whose keys differ from the target's"
        for key, value in keys_target.items():
            why = mismatch(keys_out[key], value, depth + 1)
            if why:
                return why
        return None
    if _is_sparse(target) or _is_sparse(out):
        ok = _is_sparse(target) and _is_sparse(out) and out.shape == target.shape
        return None if ok else wrong()
    if view(target) is not None:
        return None if view(out) == view(target) else wrong()
    if isinstance(target, (str, bytes, np.str_)):
        return None if isinstance(out, (str, bytes, np.str_)) else wrong()
    if target is None:
        return None if out is None else wrong()
    if isinstance(target, (set, frozenset)):
        ok = isinstance(out, (set, frozenset)) and len(out) == len(target)
        return None if ok else wrong()
    if isinstance(target, (list, tuple, np.ndarray)):
        if isinstance(target, np.ndarray) and target.ndim == 0:
            return mismatch(out, target.item(), depth + 1)
        if not isinstance(out, (list, tuple, np.ndarray)):
            return wrong()
        if isinstance(out, np.ndarray) and out.ndim == 0:
            return wrong()
        both_arrays = isinstance(out, np.ndarray) and isinstance(target, np.ndarray)
        if (both_arrays and out.shape != target.shape) or len(out) != len(target):
            return wrong()
        for a, b in zip(out, target):
            why = mismatch(a, b, depth + 1)
            if why:
                return why
        return None
    return None if type(out) is type(target) else wrong()


def compared_parts(check: str) -> tuple[int, ...] | None:
    """The indices ``k`` of ``__out[k]`` a check compares, or ``None`` when it reads ``__out``
    whole."""
    tree = ast.parse(check, mode="eval")
    indexed: set[int] = set()
    inside: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "__out"
            and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int
            and node.slice.value >= 0
        ):
            indexed.add(node.slice.value)
            inside.add(id(node.value))
    bare = any(
        isinstance(n, ast.Name) and n.id == "__out" and id(n) not in inside for n in ast.walk(tree)
    )
    return None if bare or not indexed else tuple(sorted(indexed))


def _parts_mismatch(check: str, out: Any, target: Any) -> str | None:
    """:func:`mismatch` on what a check compares: the whole output, or each indexed part of
    an output that must be a list of exactly as many parts as the capture wrote."""
    parts = compared_parts(check)
    if parts is None:
        return mismatch(out, target)
    n = max(parts) + 1
    if not isinstance(out, (list, tuple)) or len(out) != n:
        return f"a {_describe(out, _numeric_view(out))} where the check compares {n} parts"
    for k in parts:
        try:
            part = target[k]
        except (IndexError, KeyError, TypeError):
            return f"the target has no part {k}"
        why = mismatch(out[k], part)
        if why:
            return f"part {k}: {why}"
    return None


def plan_mismatch(plan: CheckPlan, out: Any, target: Any) -> str | None:
    """Why a captured entry cannot be compared as ``plan``'s checks compare it, or ``None``.

    Every value a check reads from the model run is held to :func:`mismatch` against what
    the target (or the gold run) has there. Never raises.
    """
    try:
        return _plan_mismatch(plan, out, target)
    except Exception as exc:  # an output no rule foresaw: not comparable
        return f"{type(exc).__name__}: {exc}"[:300]


def _plan_mismatch(plan: CheckPlan, out: Any, target: Any) -> str | None:
    if not plan.self_check:
        for check in plan.checks:
            why = _parts_mismatch(check, out, target)
            if why:
                return why
        return None
    missing = "self-checking test case: captured values missing"
    if not (isinstance(out, list) and isinstance(target, list) and len(out) == len(target)):
        return missing
    if len(out) != len(plan.checks):
        return missing
    for k, check in enumerate(plan.checks):
        if not isinstance(out[k], dict) or not isinstance(target[k], dict):
            return missing
        for name in sorted(_free(check, plan.defs) & set(plan.model_names)):
            if name not in out[k]:
                return f"value {name!r} not captured"
            if name in target[k]:
                why = mismatch(out[k][name], target[k][name])
                if why:
                    return f"{name}: {why}"
    return None


def run_check(plan: CheckPlan, namespace: dict[str, Any], out: Any, target: Any) -> str | None:
    """Evaluate a plan's checks in the caller; ``None`` on pass, else why it failed.

    An entry that :func:`plan_mismatch` refuses fails before any check runs. Never raises on
    what the model's code returned: any error is a failed test.
    """
    try:
        return _run_check(plan, namespace, out, target)
    except Exception as exc:  # data from the sandbox made a check misbehave: a failed test
        return f"{type(exc).__name__}: {exc}"[:300]


def _run_check(plan: CheckPlan, namespace: dict[str, Any], out: Any, target: Any) -> str | None:
    why = plan_mismatch(plan, out, target)
    if why:
        return why
    outs = out if plan.self_check else [out]
    gold = target if plan.self_check else [target]
    for k, check in enumerate(plan.checks):
        free = _free(check, plan.defs)
        ns = dict(namespace)
        if plan.self_check:
            for name in free:
                src = outs[k] if name in plan.model_names else gold[k]
                if name not in src:
                    return f"value {name!r} not captured"
                ns[name] = src[name]
        elif free:
            return f"check reads {sorted(free)} computed beside the model code"
        else:
            ns["target"] = target
            ns["__out"] = out
        exec(compile(plan.defs, "<test defs>", "exec"), ns)  # dataset code, not model code
        try:
            ok = bool(eval(compile(check, "<check>", "eval"), ns))
        except Exception as exc:  # a check that raises on comparable values: a failed test
            return f"{type(exc).__name__}: {exc}"[:300]
        if not ok:
            return "AssertionError"
    return None


def read_h5_targets(path: str, step: str, n_tests: int) -> list[Any]:
    """Targets of one step from SciCode's ``test_data.h5`` (``<step>/test<k>/var<j>`` layout).

    Raises:
        ImportError: h5py is not installed.
        KeyError: The step or a test is missing from the file.
    """
    try:
        import h5py
    except ImportError as exc:  # pragma: no cover - h5py is in the dev extra
        raise ImportError("reading SciCode test_data.h5 needs h5py (pip install h5py)") from exc
    import numpy as np
    import scipy.sparse as sp

    def dataset(d: Any) -> Any:
        v = d[()]
        return v.decode("utf-8", errors="strict") if isinstance(v, bytes) else v

    def sparse(g: Any) -> Any:
        data, shape = g["data"][()], tuple(g["shape"][()])
        if "row" in g and "col" in g:
            return sp.coo_matrix((data, (g["row"][()], g["col"][()])), shape=shape)
        if "blocksize" in g:
            return sp.bsr_matrix(
                (data, g["indices"][()], g["indptr"][()]),
                shape=shape,
                blocksize=tuple(g["blocksize"][()]),
            )
        return sp.csr_matrix((data, g["indices"][()], g["indptr"][()]), shape=shape)

    def group(g: Any) -> Any:
        keys = list(g.keys())
        if keys and keys[0] == "list":
            return [dataset(g["list"][k]) for k in g["list"]]
        if keys and keys[0] == "sparse_matrix":
            return sparse(g["sparse_matrix"])
        out: dict[Any, Any] = {}
        for k, obj in g.items():
            if isinstance(obj, h5py.Group):
                out[k] = sparse(obj["sparse_matrix"])
                continue
            value = dataset(obj)
            try:
                out[float(k)] = value
            except ValueError:
                out[k] = value
        return out

    def var(obj: Any) -> Any:
        return group(obj) if isinstance(obj, h5py.Group) else dataset(obj)

    values = []
    with h5py.File(path, "r") as f:
        for k in range(n_tests):
            g = f[f"{step}/test{k + 1}"]
            keys = list(g.keys())
            values.append(var(g[keys[0]]) if len(keys) == 1 else tuple(var(g[x]) for x in keys))
    _ = np  # numpy arrays come back from h5py
    return values
