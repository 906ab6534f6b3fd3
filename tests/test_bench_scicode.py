"""SciCode: targets regenerated from the gold code, steps run in the sandbox."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metacog_tasks.benchmarks import get_benchmark
from metacog_tasks.benchmarks._scicode_decode import load_values
from metacog_tasks.benchmarks._scicode_support import capture_targets_source, codec
from metacog_tasks.benchmarks.scicode import build_test_script, extract_code
from tests.availability import unavailable
from tests.strategies import letterless_text

#: A Python identifier.
_IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)


@pytest.fixture(scope="module")
def bench():
    from metacog_tasks.sandbox import isolation_support

    boundary = isolation_support()["boundary"]
    if not boundary.startswith("bwrap"):  # grading runs model code: skip locally, fail in CI
        unavailable(f"no sandbox boundary for SciCode's tests: {boundary}")
    return get_benchmark("scicode", timeout_s=120)


def _cases(benchmarks_dir: Path, name: str) -> list[tuple[str, str]]:
    out = []
    for line in (benchmarks_dir / "scicode" / name).open():
        row = json.loads(line)
        for step in row["sub_steps"]:
            out += [(step["step_number"], t) for t in step["test_cases"]]
    return out


def test_extract_code() -> None:
    reply = "Sure.\n```python\nimport numpy as np\ndef f(x):\n    return x\n```\n```python\nz\n```"
    assert extract_code(reply).strip() == "def f(x):\n    return x"
    assert extract_code("def g():\n    return 1").startswith("def g")
    assert extract_code("no code here") is None and extract_code("") is None


def test_target_capture_rewrites() -> None:
    src = "x = 2\nassert np.allclose(f(x), target)"
    assert capture_targets_source(src) == "x = 2\n__captured.append(f(x))"
    src = "assert np.allclose(d(c)[0], target[0]) and np.allclose(d(c)[1], target[1])"
    assert capture_targets_source(src) == "__captured.append([d(c)[0], d(c)[1]])"
    assert capture_targets_source("assert (m > 0) == target") == "__captured.append(m > 0)"
    assert capture_targets_source("assert g(1) == 2") == "__captured.append(None)"
    assert capture_targets_source("assert target.any()") is None


def test_capture_covers_the_real_test_cases(benchmarks_dir: Path) -> None:
    dev = _cases(benchmarks_dir, "problems_dev.jsonl")
    assert len(dev) > 0 and all(capture_targets_source(t) is not None for _, t in dev)
    test = _cases(benchmarks_dir, "problems_all.jsonl")
    missed = [s for s, t in test if capture_targets_source(t) is None]
    assert len(missed) <= 4, missed  # 50.4 (x3), 52.4: comparisons of derived values


def test_codec_round_trip() -> None:
    import scipy.sparse as sp

    values = [
        np.arange(6, dtype=float).reshape(2, 3),
        (1, 2.5, "s"),
        {1.0: np.array([1 + 2j]), "k": [True, None], (1, 2): {3, 4}},
        float("nan"),
        sp.csr_matrix(np.eye(2)),
        np.int64(3),
        sp.csc_matrix(np.array([[0, 1j], [2, 0]])),
        sp.dia_matrix(np.eye(3)),
        np.arange(6).reshape(3, 2)[::2],  # strided: sent in C order
        np.array([[1, "a"]], dtype=object),
        np.zeros((0, 4), dtype=bool),
        -(10**30),
    ]
    back = load_values(codec["dump_targets"](values))
    assert np.array_equal(back[0], values[0]) and back[0].dtype == float
    assert back[0].flags.writeable  # a check may sort or scale its output in place
    assert back[1] == (1, 2.5, "s")
    assert back[2][1.0][0] == 1 + 2j and back[2]["k"] == [True, None]
    assert back[2][(1, 2)] == {3, 4}
    assert math.isnan(back[3])
    assert back[4].format == "csr" and (back[4] != values[4]).nnz == 0
    assert back[5] == 3
    assert back[6].format == "csc" and np.array_equal(back[6].toarray(), values[6].toarray())
    # a dia (or dok, lil, bsr) matrix comes back in coordinates: same entries and shape
    assert back[7].format == "coo" and np.array_equal(back[7].toarray(), np.eye(3))
    assert np.array_equal(back[8], [[0, 1], [4, 5]])
    assert back[9].dtype == object and back[9].tolist() == [[1, "a"]]
    assert back[10].shape == (0, 4) and back[10].dtype == bool
    assert back[11] == -(10**30)


def test_pack_steps_pass_with_gold_and_fail_when_broken(bench) -> None:
    items = bench.load("bundled")
    assert len(items) == 8 and {it.meta["problem_id"] for it in items} == {"901", "902", "903"}
    rng = np.random.default_rng(0)
    for item in [items[0], items[4], items[7]]:  # a first step, a middle step, a tuple target
        right = bench.grade(item, bench.reference_response(item))
        assert right.correct == 1.0 and right.status == "ok", right.details
        assert all(t["passed"] for t in right.details["tests"])
        assert right.details["isolation"]
        wrong = bench.grade(item, bench.wrong_response(item, rng))
        assert wrong.correct == 0.0 and wrong.graded
        assert "```python" in bench.wrong_response(item, rng)


def test_probe_shows_only_the_step(bench) -> None:
    item = bench.load("bundled")[2]
    solve = bench.solve_prompt(item)
    assert "def trapezoid" in solve and "def convergence_order" in solve
    probe = bench.probe_prompt(item)
    assert item.question in probe
    assert "def " not in probe and "MAIN PROBLEM" not in probe


def test_h5_targets(bench, tmp_path: Path) -> None:
    try:
        import h5py
    except ImportError:
        unavailable("h5py is not installed (the scicode extra)")
    items = bench.load("bundled")
    item = items[7]  # 903.2: (float, array) tuple and float targets
    targets = bench.targets(item)
    path = tmp_path / "test_data.h5"
    with h5py.File(path, "w") as f:
        for k, value in enumerate(targets):
            group = f.create_group(f"{item.item_id}/test{k + 1}")
            if isinstance(value, tuple):
                for j, v in enumerate(value):
                    group.create_dataset(f"var{j + 1}", data=v)
            else:
                group.create_dataset("var1", data=value)
    with_h5 = get_benchmark("scicode", h5_path=path, timeout_s=120)
    assert with_h5.grade(item, with_h5.reference_response(item)).correct == 1.0
    missing = with_h5.grade(items[0], with_h5.reference_response(items[0]))
    assert math.isnan(missing.correct) and missing.status == "targets_unavailable"
    with pytest.raises(FileNotFoundError):
        get_benchmark("scicode", h5_path=tmp_path / "nope.h5")


def test_test_split_without_targets_is_ungraded(bench, benchmarks_dir: Path) -> None:
    items = bench.load(benchmarks_dir / "scicode" / "problems_all.jsonl")
    assert len(items) == 288  # 291 sub-steps less the 3 pre-supplied ones
    item = items[0]
    g = bench.grade(item, "```python\ndef f():\n    return 1\n```")
    assert math.isnan(g.correct) and g.status == "targets_unavailable" and not g.graded
    with pytest.raises(ValueError, match="ground_truth_code"):
        bench.reference_response(item)
    assert bench.load(benchmarks_dir / "scicode", split="validation")[0].item_id == "10.1"
    later = next(it for it in items if it.meta["step_index"] > 0)
    assert "include any of them" in bench.solve_prompt(later)


def test_malicious_step_is_contained(bench) -> None:
    item = bench.load("bundled")[0]
    header = item.meta["function_header"]
    reply = f"```python\n{header}\n    import os\n    os.system('touch /tmp/pwned')\n```"
    g = bench.grade(item, reply)
    assert g.correct == 0.0
    assert not Path("/tmp/pwned").exists()
    script = build_test_script(item, "def trapezoid(f_values, dx):\n    return 0.0")
    assert "targets.json" not in script and "outputs.json" in script  # no target inside


@pytest.mark.slow
def test_every_validation_step_passes_with_gold_and_fails_broken(bench, benchmarks_dir) -> None:
    """All 50 validation steps through the real sandbox: targets regenerated from
    ground_truth_code, the gold function passes, a broken body fails (a few minutes); and no
    real target is matched by an empty output (vacuous np.allclose)."""
    from metacog_tasks.benchmarks._scicode_support import CMP_SOURCE, check_plan, run_check

    bench = get_benchmark("scicode", timeout_s=300)
    items = bench.load(benchmarks_dir / "scicode" / "problems_dev.jsonl")
    assert len(items) == 50
    rng = np.random.default_rng(0)
    grades = []
    ns: dict = {"np": np}
    exec(CMP_SOURCE, ns)
    for item in items:
        right = bench.grade(item, bench.reference_response(item))
        assert right.correct == 1.0, (item.item_id, right.status, right.details)
        wrong = bench.grade(item, bench.wrong_response(item, rng))
        assert wrong.correct == 0.0, item.item_id
        grades.append(right)
        for test, target in zip(item.meta["test_cases"], bench.targets(item)):
            plan = check_plan(test)
            if not plan.self_check and "__out[" not in plan.checks[0]:  # f(x) itself captured
                assert run_check(plan, ns, np.array([]), target) is not None, item.item_id
    agg = bench.aggregate(items, grades)
    assert agg["subproblem_accuracy"] == 1.0 and agg["main_problem_accuracy"] == 1.0
    assert agg["problems"] == 15.0


@pytest.mark.slow
def test_every_pack_step(bench) -> None:
    items = bench.load("bundled")
    rng = np.random.default_rng(1)
    for item in items:
        assert bench.grade(item, bench.reference_response(item)).correct == 1.0
        assert bench.grade(item, bench.wrong_response(item, rng)).correct == 0.0


@settings(max_examples=200, deadline=None)
@given(letterless_text(exclude="`"))
def test_reply_without_letters_or_fences_has_no_code(text: str) -> None:
    # no letter: no "def" or "class" line; no backtick: no fenced block
    assert extract_code(text) is None, text


@settings(max_examples=150, deadline=None)
@given(letterless_text(exclude="`"), _IDENT, st.integers(-1000, 1000), letterless_text(exclude="`"))
def test_fenced_block_is_read_through_any_letterless_text(before, name, k, after) -> None:
    body = f"def {name}(x):\n    return x + {k}\n"
    reply = f"{before}\n```python\nimport numpy as np\n{body}```\n{after}"
    code = extract_code(reply)
    assert code is not None and code.strip() == body.strip(), reply


# --- structured property tests: a fenced block with known code -----------------------------


@settings(max_examples=150, deadline=None)
@given(_IDENT, st.integers(-1000, 1000), st.sampled_from(["python", "py", "Python"]))
def test_first_python_block_is_the_code_without_imports(name, k, tag) -> None:
    body = f"def {name}(x):\n    return x + {k}\n"
    reply = (
        f"Here is the code.\n```{tag}\nimport numpy as np\n{body}```\n"
        f"And a test:\n```python\nprint({name}(1))\n```"
    )
    code = extract_code(reply)
    assert code is not None and code.strip() == body.strip()
    assert "import" not in code


def test_check_plans_move_the_comparison_to_the_caller() -> None:
    from metacog_tasks.benchmarks._scicode_support import CMP_SOURCE, check_plan, run_check

    plan = check_plan("x = 2\nassert np.allclose(f(x), target, atol=1e-3)")
    assert plan.capture == "x = 2\n__captured.append(f(x))"
    assert plan.checks == ("np.allclose(__out, target, atol=0.001)",)
    ns: dict = {"np": np}
    exec(CMP_SOURCE, ns)
    assert run_check(plan, ns, 1.0005, 1.0) is None  # within the official tolerance
    assert run_check(plan, ns, 1.01, 1.0) == "AssertionError"
    assert "shape (3,)" in run_check(plan, ns, [1.0, 2.0, 3.0], [1.0, 2.0])
    # a self-checking case: the expected value is the gold run's, the output the model's
    src = "def t():\n    e = np.array([1.0])\n    out = g(3)\n    assert np.allclose(out, e)\nt()"
    plan = check_plan(src)
    assert plan.self_check and plan.model_names == ("out",)
    gold = [{"e": np.array([1.0]), "out": np.array([1.0])}]
    assert run_check(plan, ns, [{"e": np.array([5.0]), "out": np.array([5.0])}], gold)
    assert run_check(plan, ns, [{"e": np.array([9.0]), "out": np.array([1.0])}], gold) is None
    assert check_plan("assert target.any()") is None
