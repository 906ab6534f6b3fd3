"""SciCode's grading rules, one by one, without the sandbox (seconds).

The sandbox is replaced by a stand-in for ``run_python``: either one that returns the files a
script would have written (hand-written tagged JSON), or one that runs the script with the
plain interpreter in a temporary folder (our own gold code and small functions only). Every
expected value is written down by hand from SciCode's format and the authors' grading rule
(``test_generated_code.py``: a step passes when every test case passes).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

import metacog_tasks.benchmarks.scicode as sc
from metacog_tasks.benchmarks import DataFormatError, get_benchmark
from metacog_tasks.benchmarks._scicode_support import CMP_SOURCE, CODEC_SOURCE
from metacog_tasks.benchmarks.base import Grade, Item
from metacog_tasks.benchmarks.scicode import (
    SciCode,
    build_target_script,
    build_test_script,
    extract_code,
    support_files,
)
from metacog_tasks.sandbox import SandboxResult

# ----------------------------------------------------------------------- a problem by hand
#: One problem in SciCode's own field names: a first step, a pre-supplied step without tests
#: (skipped, as 13.6, 62.1 and 76.3 are) and a third step that calls the first.
ROW: dict[str, Any] = {
    "problem_id": "77",
    "problem_description_main": "  Compute sums.  ",
    "problem_background_main": " Sums add numbers. ",
    "required_dependencies": "import numpy as np",
    "sub_steps": [
        {
            "step_number": "77.1",
            "step_description_prompt": " Add two numbers. ",
            "step_background": " Addition is commutative. ",
            "function_header": "def add(a, b):\n    '''Add.'''",
            "return_line": "    return c",
            "test_cases": [
                "assert np.allclose(add(1, 2), target)",
                "x = 4\nassert np.allclose(add(x, 0.5), target)",
            ],
            "ground_truth_code": "def add(a, b):\n    c = a + b\n    return c",
        },
        {
            "step_number": "77.2",
            "step_description_prompt": "Negate.",
            "function_header": "def neg(a):",
            "return_line": "    return -a",
            "test_cases": [],
            "ground_truth_code": "def neg(a):\n    return -a",
        },
        {
            "step_number": "77.3",
            "step_description_prompt": "Double with add.",
            "function_header": "def double(a):",
            "return_line": "    return d",
            "test_cases": [
                "assert np.allclose(double(3), target)",
                "assert cmp_tuple_or_list((double(1), neg(double(2))), target)",
            ],
            "ground_truth_code": "def double(a):\n    d = add(a, a)\n    return d",
        },
    ],
}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(problem_id: str, **changes: Any) -> dict[str, Any]:
    row = json.loads(json.dumps(ROW))
    row["problem_id"] = problem_id
    for step in row["sub_steps"]:
        step["step_number"] = step["step_number"].replace("77", problem_id)
    row.update(changes)
    return row


@pytest.fixture
def items(tmp_path: Path) -> list[Item]:
    return get_benchmark("scicode").load(_write_jsonl(tmp_path / "p.jsonl", [ROW]))


def _ok(*values: Any) -> str:
    """Captured outputs as the codec writes them: one ("ok", value) tuple per test case."""
    return json.dumps([{"__tuple__": ["ok", v]} for v in values])


class Canned:
    """A stand-in for ``run_python`` returning hand-written results, recording each call.

    ``gold`` sets the gold run's result fields, ``**test`` the test run's.
    """

    def __init__(
        self, targets: str | None, outputs: str | None, gold: dict | None = None, **test: Any
    ) -> None:
        self.files = {"targets_out.json": targets, "outputs.json": outputs}
        self.gold = gold or {}
        self.test = test
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, script: str, **kwargs: Any) -> SandboxResult:
        self.calls.append((script, kwargs))
        files = {n: self.files[n] for n in kwargs["collect"] if self.files.get(n) is not None}
        fields = dict(returncode=0, stdout="", stderr="", timed_out=False, killed_reason=None)
        fields.update(duration=0.1, isolation={"boundary": "stand-in"}, files=files)
        fields.update(self.gold if "targets_out.json" in kwargs["collect"] else self.test)
        return SandboxResult(**fields)


def _plain_run(script: str, **kwargs: Any) -> SandboxResult:
    """Run the script with the plain interpreter in a fresh folder (our own code only)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, text in kwargs["files"].items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text(text, encoding="utf-8")
        (work / "main.py").write_text(script, encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, "main.py"], cwd=work, capture_output=True, text=True, timeout=120
        )
        files = {n: (work / n).read_text() for n in kwargs["collect"] if (work / n).is_file()}
    return SandboxResult(
        proc.returncode, proc.stdout, proc.stderr, False, None, 0.0, {"boundary": "none"}, files
    )


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> SciCode:
    monkeypatch.setattr(sc, "run_python", _plain_run)
    return get_benchmark("scicode")


# ----------------------------------------------------------------------- the model's code
@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("```python\ndef f():\n    return 1\n```", "def f():\n    return 1\n"),
        # a ```python block anywhere wins over an earlier untagged one
        ("```\nx = 1\n```\ntext\n```python\ndef g():\n    pass\n```", "def g():\n    pass\n"),
        ("```py\ndef h():\n    pass\n```", "def h():\n    pass\n"),
        ("```PYTHON \t\ndef h():\n    pass\n```", "def h():\n    pass\n"),
        # the first of two tagged blocks
        (
            "```python\ndef a():\n    pass\n```\n```python\ndef b():\n    pass\n```",
            "def a():\n    pass\n",
        ),
        # an untagged block when there is no tagged one
        ("Here:\n```\ndef u():\n    pass\n```", "def u():\n    pass\n"),
        # no fence: the whole reply, when a line starts (after spaces) with def or class
        ("Sure.\n  def w():\n    pass", "Sure.\n  def w():\n    pass"),
        ("class K:\n    pass", "class K:\n    pass"),
        ("define the function as\nundef x\nclassify y", None),
        ("def", None),
        # import lines go, wherever they are; words that merely start with import stay
        (
            "```python\nimport numpy as np\nfrom scipy import linalg\ndef f(x):\n"
            "    from math import pi\n    important = 1\n    fromage = 2\n    return x\n```",
            "\n\ndef f(x):\n\n    important = 1\n    fromage = 2\n    return x\n",
        ),
        ("```python\nimport numpy as np\nfrom a.b import c\n```", None),
        ("```python\n   \n```", None),
        ("", None),
        (None, None),
        ("no code here", None),
    ],
)
def test_extract_code_rules(reply: str | None, code: str | None) -> None:
    assert extract_code(reply) == code


def test_fence_needs_a_line_break_after_its_tag() -> None:
    # "```python def f" on one line is no fence: the def line is not at a line start either
    assert extract_code("```python def f(): pass```") is None
    # "pythonic" is no tag: no fence, so the whole reply (it has a def line)
    reply = "```pythonic\ndef f():\n    pass\n```"
    assert extract_code(reply) == reply


# ----------------------------------------------------------------------- scripts
def test_support_files_are_the_scicode_package_and_the_codec() -> None:
    assert support_files() == {
        "scicode/__init__.py": "",
        "scicode/compare/__init__.py": "",
        "scicode/compare/cmp.py": CMP_SOURCE,
        "scicode/parse/__init__.py": "",
        "scicode/parse/parse.py": "",
        "_metacog_codec.py": CODEC_SOURCE,
    }


def test_test_script_layout(items: list[Item]) -> None:
    item = items[0]
    script = build_test_script(item, "def add(a, b):\n    return 0", "PRIOR = 1")
    lines = script.split("\n")
    assert lines[:7] == [
        "import os, sys",
        "sys.path.insert(0, os.getcwd())",
        "import numpy as np",
        "from scicode.compare.cmp import cmp_tuple_or_list, are_dicts_close, are_csc_matrix_close",
        "PRIOR = 1",
        "def add(a, b):",
        "    return 0",
    ]
    assert "    sources = [('__captured.append(add(1, 2))', False), " in script
    assert "open('outputs.json', 'w', encoding='utf-8')" in script
    assert "            if False:" in script and "if True:" not in script
    assert script.endswith("\n__metacog_capture()\n")
    target = build_target_script(item, "GOLD = 2", "PRIOR = 1")
    assert "open('targets_out.json', 'w', encoding='utf-8')" in target
    assert "            if True:" in target and "if False:" not in target
    assert "GOLD = 2" in target and "outputs.json" not in target
    assert build_test_script(item, "X = 1").split("\n")[4:6] == ["", "X = 1"]


def test_scripts_run_and_capture_by_hand(items: list[Item], tmp_path: Path) -> None:
    item = items[0]
    files = support_files()

    def run(script: str, name: str) -> tuple[int, Any]:
        res = _plain_run(script, files=files, collect=(name,))
        raw = res.files.get(name)
        return res.returncode, None if raw is None else json.loads(raw)

    gold = item.target
    rc, out = run(build_target_script(item, gold), "targets_out.json")
    assert rc == 0 and out == [{"__tuple__": ["ok", 3]}, {"__tuple__": ["ok", 4.5]}]
    # the model's errors are captured per test case, cut to 300 characters
    bad = "def add(a, b):\n    raise ValueError('x' * 400 if a == 4 else 'boom')"
    rc, out = run(build_test_script(item, bad), "outputs.json")
    assert rc == 0
    assert out[0] == {"__tuple__": ["error", "ValueError: boom"]}
    assert out[1] == {"__tuple__": ["error", "ValueError: " + "x" * 288]}
    # a failing gold run stops (strict): no targets at all
    rc, out = run(build_target_script(item, bad), "targets_out.json")
    assert rc != 0 and out is None
    res = _plain_run(build_target_script(item, bad), files=files, collect=())
    assert res.stderr.strip().splitlines()[-1] == "ValueError: boom"  # the gold code's own error
    # a test case that cannot be split: an error entry in a test run, a stop in a gold run
    odd = Item(**{**item.__dict__, "meta": {**item.meta, "test_cases": ["assert add(1, 1)"]}})
    rc, out = run(build_test_script(odd, gold), "outputs.json")
    assert out == [{"__tuple__": ["error", "test case not splittable"]}]
    res = _plain_run(build_target_script(odd, gold), files=files, collect=())
    assert res.returncode == 1 and "test case 1: no target to capture" in res.stderr
    # a self-checking case captures every value its assert reads
    selfc = "def t():\n    e = 2.0\n    y = add(1, 1)\n    assert np.allclose(y, e)\nt()"
    odd = Item(**{**item.__dict__, "meta": {**item.meta, "test_cases": [selfc]}})
    rc, out = run(build_test_script(odd, gold), "outputs.json")
    assert out == [{"__tuple__": ["ok", [{"__dict__": [["e", 2.0], ["y", 2]]}]]}]
    # a two-part target: the captured list of parts
    two = "assert np.allclose(add(1, 1), target[0]) and np.allclose(add(2, 2), target[1])"
    odd = Item(**{**item.__dict__, "meta": {**item.meta, "test_cases": [two]}})
    rc, out = run(build_test_script(odd, gold), "outputs.json")
    assert out == [{"__tuple__": ["ok", [2, 4]]}]


# ----------------------------------------------------------------------- grading
def test_gold_passes_and_wrong_fails_through_real_scripts(plain: SciCode, items) -> None:
    first, third = items
    assert plain.targets(first) == [3, 4.5]
    assert plain.targets(third) == [6, (2, -4)]  # the earlier steps' gold code is in the script
    right = plain.grade(first, plain.reference_response(first))
    assert (right.correct, right.status, right.score) == (1.0, "ok", 1.0)
    assert right.extracted == "def add(a, b):\n    c = a + b\n    return c\n"
    assert right.details["tests"] == [
        {"index": 0, "passed": True, "message": ""},
        {"index": 1, "passed": True, "message": ""},
    ]
    half = plain.grade(first, "```python\ndef add(a, b):\n    return 3.0\n```")
    assert (half.correct, half.status, half.score) == (0.0, "ok", 0.5)
    assert [t["message"] for t in half.details["tests"]] == ["", "AssertionError"]
    # the third step calls add and neg from the earlier steps' gold code
    good = plain.grade(third, "```python\ndef double(a):\n    return 2 * a\n```")
    assert (good.correct, good.score) == (1.0, 1.0)
    wrong = plain.grade(third, "```python\ndef double(a):\n    return add(a, 1)\n```")
    assert (wrong.correct, wrong.score) == (0.0, 0.0)
    # exiting before the outputs are written passes nothing, whatever the exit status
    quit_ = plain.grade(first, "```python\nimport sys\nsys.exit(0)\ndef add(a, b):\n    pass\n```")
    assert quit_.correct == 0.0 and quit_.details["returncode"] == 0
    assert [t["message"] for t in quit_.details["tests"]] == ["no outputs", "no outputs"]


def test_run_script_forwards_the_limits(monkeypatch, items) -> None:
    canned = Canned(_ok(3.0, 4.5), _ok(3.0, 4.5))
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode", timeout_s=7, memory_mb=512.9)
    g = bench.grade(items[0], bench.reference_response(items[0]))
    assert g.correct == 1.0
    (gold_script, gold_kw), (test_script, test_kw) = canned.calls
    expected = dict(timeout_s=7.0, memory_mb=512, file_size_mb=256, files=support_files())
    assert gold_kw == {**expected, "collect": ("targets_out.json",), "collect_mb": 128}
    assert test_kw == {**expected, "collect": ("outputs.json",), "collect_mb": 128}
    assert type(gold_kw["timeout_s"]) is float and type(gold_kw["memory_mb"]) is int
    assert "c = a + b" in gold_script and "'outputs.json'" in test_script
    assert "3.0" not in test_script and "4.5" not in test_script  # no target enters
    default = get_benchmark("scicode")
    assert (default.timeout_s, default.memory_mb) == (120.0, 4096)
    assert (default.with_background, default.regenerate_targets, default.h5_path) == (
        False,
        True,
        None,
    )


def test_targets_are_cached_per_step(monkeypatch, items) -> None:
    canned = Canned(_ok(3.0, 4.5), _ok(3.0, 1.0))
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    assert bench.targets(items[0]) == [3.0, 4.5]
    assert bench.targets(items[0]) == [3.0, 4.5]
    assert len(canned.calls) == 1
    g1 = bench.grade(items[0], "```python\ndef add(a, b):\n    return 3.0\n```")
    assert len(canned.calls) == 2 and g1.score == 0.5


def test_grade_fields_by_hand(monkeypatch, items) -> None:
    long_err = "E" * 1500
    canned = Canned(_ok(3.0, 4.5), _ok(3.0, 9.0), returncode=1, stderr=long_err + "tail")
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(items[0], "```python\ndef add(a, b):\n    return 3.0\n```")
    assert isinstance(g, Grade)
    assert (g.correct, g.status, g.extracted, g.score) == (
        0.0,
        "ok",
        "def add(a, b):\n    return 3.0\n",
        0.5,
    )
    assert g.details == {
        "tests": [
            {"index": 0, "passed": True, "message": ""},
            {"index": 1, "passed": False, "message": "AssertionError"},
        ],
        "returncode": 1,
        "killed_reason": None,
        "stderr_tail": ("E" * 1500 + "tail")[-1000:],
        "isolation": {"boundary": "stand-in"},
    }
    assert len(g.details["stderr_tail"]) == 1000


def test_unextractable_reply_is_wrong_without_a_run(monkeypatch, items) -> None:
    canned = Canned(_ok(3.0, 4.5), _ok(3.0, 4.5))
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(items[0], "I would add them.")
    assert (g.correct, g.status, g.extracted, g.score) == (0.0, "unextractable", None, None)
    assert g.details == {"tests": []} and g.graded
    assert len(canned.calls) == 1  # the targets only


def test_timeout_is_its_own_status(monkeypatch, items) -> None:
    canned = Canned(_ok(3.0, 4.5), None, returncode=-9, timed_out=True, killed_reason="timeout")
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(items[0], bench.reference_response(items[0]))
    assert (g.correct, g.status, g.score) == (0.0, "timeout", 0.0)
    assert g.details["killed_reason"] == "timeout" and g.details["returncode"] == -9
    # timed out after writing every passing output: a wrong step (SciCode's harness fails a
    # timed-out script), its score still the share of outputs that passed
    canned.files["outputs.json"] = _ok(3.0, 4.5)
    g = bench.grade(items[0], bench.reference_response(items[0]))
    assert (g.correct, g.status, g.score) == (0.0, "timeout", 1.0)


_ERR = "unreadable outputs: "


@pytest.mark.parametrize(
    ("raw", "messages", "status"),
    [
        # hand-written tagged JSON of what the capture script writes
        (_ok(3.0, 4.5), ["", ""], "ok"),
        (_ok(3.0000001, 4.5), ["", ""], "ok"),  # np.allclose's official tolerance
        (_ok(3.1, 4.5), ["AssertionError", ""], "ok"),
        (
            json.dumps([{"__tuple__": ["error", "ValueError: boom"]}, {"__tuple__": ["ok", 4.5]}]),
            ["ValueError: boom", ""],
            "ok",
        ),
        (
            json.dumps([{"__tuple__": ["error", "y" * 400]}, {"__tuple__": ["ok", 4.5]}]),
            ["y" * 300, ""],
            "ok",
        ),
        # not ("ok" | "error", value) tuples: wrong, and not comparable
        (
            json.dumps([["ok", 3.0], {"__tuple__": ["done", 4.5]}]),
            ["malformed output entry", "malformed output entry"],
            "incomparable",
        ),
        (
            json.dumps([{"__tuple__": ["ok", 3.0, 1]}, {"__tuple__": ["ok"]}]),
            ["malformed output entry", "malformed output entry"],
            "incomparable",
        ),
        (json.dumps([3.0, 4.5]), ["malformed output entry"] * 2, "incomparable"),
        # a tag that is an array made the old grader raise (and the step ungraded)
        (
            json.dumps([{"__tuple__": [{"__ndarray__": {"dtype": "<f8", "shape": [2],
            "b64": "AAAAAAAAAAAAAAAAAAAAAA=="}}, 3.0]}, {"__tuple__": ["ok", 4.5]}]),
            ["malformed output entry", ""],
            "incomparable",
        ),
        # the values the target does not have: a list, a dict, an empty array
        (
            _ok([3.0], {"__dict__": [[0, 4.5]]}),
            ["a number of shape (1,) where the target is a number",
             "a dict where the target is a number"],
            "incomparable",
        ),
        (None, ["no outputs", "no outputs"], "no_outputs"),
        (_ok(3.0), ["2 test cases but 1 outputs"] * 2, "unreadable_outputs"),
        (_ok(3.0, 4.5, 1.0), ["2 test cases but 3 outputs"] * 2, "unreadable_outputs"),
        ('[{"__float__": 1}, 2]', [_ERR + "bad non-finite float"] * 2, "unreadable_outputs"),
        ('{"a": 1}', [_ERR + "a JSON dict, not a list of values"] * 2, "unreadable_outputs"),
    ],
)  # fmt: skip
def test_reading_the_outputs(
    monkeypatch, items, raw: str | None, messages: list[str], status: str
) -> None:
    canned = Canned(_ok(3.0, 4.5), raw)
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(items[0], bench.reference_response(items[0]))
    assert [t["message"] for t in g.details["tests"]] == messages
    assert [t["passed"] for t in g.details["tests"]] == [m == "" for m in messages]
    assert [t["index"] for t in g.details["tests"]] == [0, 1]
    passed = messages.count("")
    assert g.correct == float(passed == 2) and g.score == passed / 2
    assert g.status == status and g.graded


def test_a_models_timeout_beside_others_is_its_verdict(monkeypatch, items) -> None:
    """A policy's endless loop reaches the time limit while another grading run is in flight:
    it reads ``timeout`` at once, with no second run alone (that would hold every other
    grading of the process for a whole limit per such answer)."""
    from metacog_tasks.benchmarks import _timed_runs

    canned = Canned(_ok(3.0, 4.5), None, returncode=-9, timed_out=True, killed_reason="timeout")
    in_flight: list[int] = []

    def run(script: str, **kwargs: Any) -> SandboxResult:
        in_flight.append(_timed_runs._active)  # the runs in flight as this one runs
        return canned(script, **kwargs)

    monkeypatch.setattr(sc, "run_python", run)
    bench = get_benchmark("scicode")
    inside, release = threading.Event(), threading.Event()

    def neighbour() -> None:  # another sample's grading, in flight the whole time
        _timed_runs.run_timed(lambda: (inside.set(), release.wait(20)), lambda r: False)

    other = threading.Thread(target=neighbour)
    other.start()
    try:
        assert inside.wait(20)
        before = _timed_runs.retries()
        g = bench.grade(items[0], bench.reference_response(items[0]))
    finally:
        release.set()
        other.join(20)
    assert (g.correct, g.status) == (0.0, "timeout")
    assert in_flight == [2, 2]  # the gold run and the test run, each beside the neighbour
    assert ["targets_out.json" in kw["collect"] for _, kw in canned.calls] == [True, False]
    assert _timed_runs.retries() == before  # the timed-out test run was not run again


def test_a_run_that_never_started_is_ungraded(monkeypatch, items) -> None:
    """The sandbox failed before any model code ran: the grader's side, not a wrong answer."""
    canned = Canned(
        _ok(3.0, 4.5), None, returncode=None, killed_reason="start_failed", stderr="no fork"
    )
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(items[0], bench.reference_response(items[0]))
    assert math.isnan(g.correct) and g.status == "sandbox_error" and not g.graded
    assert g.details == {"reason": "no fork"}


def test_unreadable_outputs_message_is_cut_to_300(monkeypatch, items) -> None:
    canned = Canned(_ok(3.0, 4.5), "[" + "1," * 200 + "oops")
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(items[0], bench.reference_response(items[0]))
    assert g.details["tests"][0]["message"].startswith("unreadable outputs: not JSON: ")
    # a 400-character tag is named by its first 40 characters
    spec = {"q" * 400: 1}
    canned = Canned(_ok(3.0, 4.5), json.dumps([spec, spec]))
    monkeypatch.setattr(sc, "run_python", canned)
    g = get_benchmark("scicode").grade(items[0], bench.reference_response(items[0]))
    msg = g.details["tests"][1]["message"]
    assert msg == "unreadable outputs: unknown tag " + repr("q" * 40)
    # a JSON error message that runs long stops at 300 characters
    canned = Canned(_ok(3.0, 4.5), '["' + "\\x" * 200)
    monkeypatch.setattr(sc, "run_python", canned)
    g = get_benchmark("scicode").grade(items[0], bench.reference_response(items[0]))
    assert len(g.details["tests"][0]["message"]) <= 300


def test_check_namespace_has_the_dependencies_and_the_helpers(monkeypatch, items) -> None:
    third = items[1]
    canned = Canned(_ok(6.0, {"__tuple__": [2, -4]}), _ok(6.0, {"__tuple__": [2, -4]}))
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(third, bench.reference_response(third))
    assert g.correct == 1.0, g.details  # cmp_tuple_or_list comes from our helpers
    # the checks see the step's own import lines (here numpy under its own name)
    cases = ["assert numpy.allclose(add(1, 2), target)", "assert np.allclose(add(2, 2), target)"]
    meta = {**items[0].meta, "test_cases": cases, "dependencies": "import numpy"}
    own = Item(**{**items[0].__dict__, "item_id": "77.9", "meta": meta})
    canned = Canned(_ok(3.0, 4.0), _ok(3.0, 4.0))
    monkeypatch.setattr(sc, "run_python", canned)
    assert bench.grade(own, bench.reference_response(own)).correct == 1.0
    meta = {**meta, "dependencies": "import numpy as np"}
    other = Item(**{**own.__dict__, "item_id": "77.8", "meta": meta})
    g = bench.grade(other, bench.reference_response(other))
    assert [t["message"] for t in g.details["tests"]] == [
        "NameError: name 'numpy' is not defined",
        "",
    ]


def test_a_test_case_the_grader_cannot_split_leaves_the_step_ungraded(monkeypatch, items) -> None:
    """Its check cannot be moved out of the sandbox: the grader's limit, not the model's
    fault, so the step is ungraded (NaN, counted wrong in the headline accuracy) and the
    model's code is not run."""
    item = items[0]
    cases = [item.meta["test_cases"][0], "assert target.any()"]
    odd = Item(**{**item.__dict__, "meta": {**item.meta, "test_cases": cases}})
    canned = Canned(_ok(1.0, 1.0), _ok(1.0, 1.0))
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(odd, bench.reference_response(odd))
    assert math.isnan(g.correct) and g.status == "ungradable_test_case"
    assert g.details == {"reason": "test cases [1] cannot be graded outside the sandbox"}
    assert [kw["collect"] for _, kw in canned.calls] == [("targets_out.json",)]  # no model run


# ----------------------------------------------------------------------- targets
def test_targets_unavailable_and_why(monkeypatch, items, tmp_path: Path) -> None:
    canned = Canned(
        None, _ok(3.0, 4.5), gold={"returncode": 1, "stderr": "T" * 500 + "Traceback end"}
    )
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(items[0], bench.reference_response(items[0]))
    assert math.isnan(g.correct) and not g.graded
    assert (g.status, g.extracted, g.score) == ("targets_unavailable", None, None)
    reason = "gold code failed (rc 1, None): " + ("T" * 500 + "Traceback end")[-300:]
    assert g.details == {"reason": reason}
    assert len(canned.calls) == 1  # the model's code never ran
    # a gold run that exits 0 without the file, or writes it but fails
    for result in ({"returncode": 0}, {"returncode": 2, "killed_reason": "memory"}):
        canned = Canned(None if result["returncode"] == 0 else _ok(3.0, 4.5), None, gold=result)
        monkeypatch.setattr(sc, "run_python", canned)
        bench = get_benchmark("scicode")
        assert bench.targets(items[0]) is None
        rc, why = result["returncode"], result.get("killed_reason")
        assert bench._target_errors[items[0].item_id] == f"gold code failed (rc {rc}, {why}): "
    # a timed-out gold run with the file written is not trusted
    canned = Canned(_ok(3.0, 4.5), None, gold={"timed_out": True, "killed_reason": "timeout"})
    monkeypatch.setattr(sc, "run_python", canned)
    assert get_benchmark("scicode").targets(items[0]) is None


def test_no_gold_code_no_targets(monkeypatch, items, tmp_path: Path) -> None:
    canned = Canned(_ok(3.0, 4.5), _ok(3.0, 4.5))
    monkeypatch.setattr(sc, "run_python", canned)
    why = {"reason": "no test_data.h5 and no ground_truth_code"}
    off = get_benchmark("scicode", regenerate_targets=False)
    g = off.grade(items[0], off.reference_response(items[0]))
    assert math.isnan(g.correct) and g.details == why
    no_gold = Item(**{**items[0].__dict__, "target": None})
    g = get_benchmark("scicode").grade(no_gold, "```python\ndef add(a, b):\n    pass\n```")
    assert g.status == "targets_unavailable" and g.details == why
    # an earlier step without gold code: the step's script could not be assembled
    row = _row("78")
    del row["sub_steps"][1]["ground_truth_code"]
    third = get_benchmark("scicode").load(_write_jsonl(tmp_path / "q.jsonl", [row]))[1]
    bench = get_benchmark("scicode")
    assert bench.targets(third) is None and bench._target_errors[third.item_id] == why["reason"]
    assert canned.calls == []


def test_targets_from_an_h5_file(monkeypatch, items, tmp_path: Path) -> None:
    h5 = tmp_path / "test_data.h5"
    h5.write_bytes(b"")
    seen: list[tuple] = []

    def fake_read(path: str, step: str, n: int) -> list:
        seen.append((path, step, n))
        if step == "77.3":
            raise KeyError("77.3/test1")
        return [3.0, 4.5]

    monkeypatch.setattr(sc, "read_h5_targets", fake_read)
    canned = Canned(_ok(0.0, 0.0), _ok(3.0, 4.5))
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode", h5_path=str(h5))
    assert bench.h5_path == h5
    assert bench.targets(items[0]) == [3.0, 4.5]
    assert bench.grade(items[0], bench.reference_response(items[0])).correct == 1.0
    g = bench.grade(items[1], bench.reference_response(items[1]))
    assert math.isnan(g.correct)
    assert g.details == {"reason": f"not in {h5}: '77.3/test1'"}
    assert seen == [(str(h5), "77.1", 2), (str(h5), "77.3", 2)]
    assert [kw["collect"] for _, kw in canned.calls] == [("outputs.json",)]  # no gold run
    with pytest.raises(FileNotFoundError, match=r"scicode: test_data\.h5 not found at .*nope"):
        get_benchmark("scicode", h5_path=tmp_path / "nope.h5")
    with pytest.raises(FileNotFoundError):
        get_benchmark("scicode", h5_path=tmp_path)  # a folder is not the file


# ----------------------------------------------------------------------- loading
def test_items_by_hand(items: list[Item]) -> None:
    first, third = items
    assert [it.item_id for it in items] == ["77.1", "77.3"]  # 77.2 has no tests
    assert first.benchmark == "scicode" and first.kind == "code"
    assert first.question == "Add two numbers."
    assert first.target == "def add(a, b):\n    c = a + b\n    return c"
    assert dict(first.meta) == {
        "problem_id": "77",
        "step_index": 0,
        "n_steps": 3,
        "function_header": "def add(a, b):\n    '''Add.'''",
        "return_line": "    return c",
        "test_cases": ROW["sub_steps"][0]["test_cases"],
        "dependencies": "import numpy as np",
    }
    assert third.meta["step_index"] == 2 and third.meta["n_steps"] == 3
    assert dict(first.record) == ROW and dict(third.record) == ROW


def test_optional_step_fields(tmp_path: Path) -> None:
    row = _row("79")
    del row["sub_steps"][0]["return_line"]
    del row["sub_steps"][0]["ground_truth_code"]
    item = get_benchmark("scicode").load(_write_jsonl(tmp_path / "r.jsonl", [row]))[0]
    assert item.meta["return_line"] == "" and item.target is None


def test_folder_layout_by_split(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "problems_dev.jsonl", [_row("1")])
    _write_jsonl(tmp_path / "problems_dev_extra.jsonl", [_row("2")])
    _write_jsonl(tmp_path / "problems_all.jsonl", [_row("3")])
    _write_jsonl(tmp_path / "mine_custom.jsonl", [_row("4")])
    (tmp_path / "notes.json").write_text(json.dumps([_row("5")]))
    bench = get_benchmark("scicode")

    def problems(split: str | None) -> list[str]:
        return sorted({it.meta["problem_id"] for it in bench.load(tmp_path, split=split)})

    assert problems("validation") == ["1", "2"]
    assert problems("test") == ["3"]
    assert problems("custom") == ["4"]
    assert problems(None) == ["1", "2", "3", "4"]
    assert problems("") == ["1", "2", "3", "4"]
    item = bench.load(tmp_path, split="test")[0]
    assert "__file__" not in item.record and item.record["problem_id"] == "3"


def test_missing_fields_name_the_row_and_step(tmp_path: Path) -> None:
    bench = get_benchmark("scicode")
    row = _row("1")
    del row["required_dependencies"]
    path = _write_jsonl(tmp_path / "a.jsonl", [_row("0"), row])
    with pytest.raises(DataFormatError) as err:
        bench.load(path)
    assert str(err.value).startswith(
        f"scicode: {path} row 1 lacks field(s) ['required_dependencies'] (has "
    )
    for field in ("step_number", "step_description_prompt", "function_header", "test_cases"):
        row = _row("1")
        del row["sub_steps"][2][field]
        path = _write_jsonl(tmp_path / "b.jsonl", [row])
        match = rf"^scicode: {path} row 0 sub_step 2 lacks .*'{field}'"
        with pytest.raises(DataFormatError, match=match):
            bench.load(path)
    for field in ("problem_id", "sub_steps"):
        row = _row("1")
        del row[field]
        with pytest.raises(DataFormatError, match=f"lacks field.*'{field}'"):
            bench.load(_write_jsonl(tmp_path / "c.jsonl", [row]))


def test_hub_loader_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple] = []

    def fake_load_hf(benchmark, path, **kwargs):
        calls.append((benchmark, path, kwargs))
        return [ROW]

    monkeypatch.setattr(sc, "load_hf", fake_load_hf)
    bench = get_benchmark("scicode")
    items = bench.load()
    assert [it.item_id for it in items] == ["77.1", "77.3"]
    assert calls == [
        (
            "scicode",
            "SciCode1/SciCode",
            {
                "split": "validation",
                "fields": ("problem_id", "sub_steps", "required_dependencies"),
                "local_hint": "SciCode's problems_dev.jsonl (validation, with "
                "ground_truth_code) or problems_all.jsonl (test)",
            },
        )
    ]
    bench.load(split="test")
    assert calls[-1][2]["split"] == "test"
    bad = {k: v for k, v in ROW.items() if k != "sub_steps"}
    monkeypatch.setattr(sc, "load_hf", lambda *a, **k: [bad])
    with pytest.raises(DataFormatError, match=r"SciCode1/SciCode validation row 0 lacks"):
        bench.load()


# ----------------------------------------------------------------------- prompts
SOLVE_THIRD = (
    "You are solving a scientific computing problem step by step, in Python.\n\n"
    "MAIN PROBLEM:\nCompute sums.\n\n"
    "PREVIOUS STEPS (their functions are available):\n"
    "Add two numbers.\n```python\ndef add(a, b):\n    c = a + b\n    return c\n```\n\n"
    "Negate.\n```python\ndef neg(a):\n    return -a\n```\n\n"
    "NEXT STEP:\nDouble with add.\n\n"
    "Implement this function:\n```python\ndef double(a):\n\n    return d\n```\n\n"
    "DEPENDENCIES (already imported; do not import anything else):\n"
    "```python\nimport numpy as np\n```\n\n"
    "Reply with the complete function in a single ```python code block."
)


def test_solve_prompt_by_hand(items: list[Item]) -> None:
    bench = get_benchmark("scicode")
    assert bench.solve_prompt(items[1]) == SOLVE_THIRD
    first = bench.solve_prompt(items[0])
    assert first == (
        "You are solving a scientific computing problem step by step, in Python.\n\n"
        "MAIN PROBLEM:\nCompute sums.\n\n"
        "NEXT STEP:\nAdd two numbers.\n\n"
        "Implement this function:\n```python\ndef add(a, b):\n    '''Add.'''\n\n    return c\n"
        "```\n\n"
        "DEPENDENCIES (already imported; do not import anything else):\n"
        "```python\nimport numpy as np\n```\n\n"
        "Reply with the complete function in a single ```python code block."
    )
    assert bench.solve_prompts(items[1]) == [SOLVE_THIRD]


def test_solve_prompt_with_background(items: list[Item]) -> None:
    bench = get_benchmark("scicode", with_background=True)
    text = bench.solve_prompt(items[1])
    assert "MAIN PROBLEM:\nCompute sums.\n\nSums add numbers.\n\nPREVIOUS" in text
    assert "Add two numbers.\n\nAddition is commutative.\n```python\ndef add" in text
    assert "Negate.\n```python" in text  # a step without background


def test_solve_prompt_without_earlier_gold_code(tmp_path: Path) -> None:
    row = _row("80")
    del row["sub_steps"][0]["ground_truth_code"]
    row["sub_steps"][1]["test_cases"] = ["assert np.allclose(neg(1), target)"]
    row["problem_description_main"] = None
    del row["problem_background_main"]
    items = get_benchmark("scicode", with_background=True).load(
        _write_jsonl(tmp_path / "p.jsonl", [row])
    )
    bench = get_benchmark("scicode", with_background=True)
    text = bench.solve_prompt(items[2])
    # the header (and return line) stand in for the unknown code, and the model is told so
    assert (
        "Add two numbers.\n\nAddition is commutative.\n```python\ndef add(a, b):\n    '''Add.'''"
        "\n\n    return c\n```\n\nNegate." in text
    )
    assert text.endswith(
        "```python code block. The functions of the previous steps are not given: include any "
        "of them that your function calls."
    )
    assert "MAIN PROBLEM:\nNone\n\n" in text
    assert not bench.solve_prompt(items[0]).endswith("calls.")
    # the second step (index 1) is told too
    assert [it.meta["step_index"] for it in items] == [0, 1, 2]
    assert bench.solve_prompt(items[1]).endswith("include any of them that your function calls.")
    # an earlier step without a return line: its header alone
    del row["sub_steps"][0]["return_line"]
    second = bench.load(_write_jsonl(tmp_path / "s.jsonl", [row]))[1]
    assert "```python\ndef add(a, b):\n    '''Add.'''\n\n\n```\n\nNEXT STEP" in (
        bench.solve_prompt(second)
    )
    del row["problem_description_main"]
    items = bench.load(_write_jsonl(tmp_path / "q.jsonl", [row]))
    assert "MAIN PROBLEM:\n\n\nNEXT STEP" in bench.solve_prompt(items[0])


def test_probe_shows_the_step_only(items: list[Item]) -> None:
    bench = get_benchmark("scicode")
    probe = bench.probe_prompt(items[1])
    assert probe.startswith(
        "You will be asked to solve the following scientific coding step later.\n\n"
        "Double with add.\n\n"
    )


def test_template_override_fields() -> None:
    bench = get_benchmark("scicode", prompts={"previous": "EARLIER:\n{steps}\n"})
    assert bench.prompts["previous"] == "EARLIER:\n{steps}\n"
    with pytest.raises(ValueError, match="unknown field"):
        get_benchmark("scicode", prompts={"prior_note": "{steps}"})
    with pytest.raises(ValueError, match="unknown field"):
        get_benchmark("scicode", prompts={"previous": "{step}"})
    fields = {"problem", "previous", "step", "header", "return_line", "dependencies"}
    get_benchmark("scicode", prompts={"solve": " ".join("{" + f + "}" for f in fields)})


# ----------------------------------------------------------------------- one conversation
def test_problem_turns_by_hand(items: list[Item], tmp_path: Path) -> None:
    """Every sub-step is a turn (77.2, without tests, too); the first is step 1's solve prompt,
    the others ask for the next function; a problem whose first step has no tests opens with
    the next-step turn of that step."""
    bench = get_benchmark("scicode")
    assert bench.problem_text(items[0]) == "Compute sums."
    turns = bench.problem_turns(items)
    assert list(turns) == ["77.1", "77.2", "77.3"]
    assert turns["77.1"] == bench.solve_prompt(items[0])
    assert turns["77.2"] == (
        "NEXT STEP:\nNegate.\n\nImplement this function:\n```python\ndef neg(a):\n\n"
        "    return -a\n```\n\nThe functions you wrote in the previous steps are available; do "
        "not import anything beyond the dependencies. Reply with the complete function in a "
        "single ```python code block."
    )
    assert turns["77.3"].startswith("NEXT STEP:\nDouble with add.\n\n")
    row = _row("78")
    row["sub_steps"][0]["test_cases"] = []
    later = bench.load(_write_jsonl(tmp_path / "p.jsonl", [row]))
    assert [it.item_id for it in later] == ["78.3"]
    first_turn = next(iter(bench.problem_turns(later).values()))
    assert first_turn.startswith("NEXT STEP:\nAdd two numbers.\n\n")


def test_a_step_in_a_conversation_runs_on_the_models_own_earlier_code(
    plain: SciCode, items: list[Item]
) -> None:
    first, third = items
    own_add = "```python\ndef add(a, b):\n    return a - b\n```"
    double = "```python\ndef double(a):\n    return add(a, a)\n```"
    # with gold earlier code (step mode) the step passes, on the model's wrong add it fails
    assert plain.grade(third, double).correct == 1.0
    assert (
        plain.grade_in_problem(
            third, double, ["no code", "```python\ndef neg(a):\n    return -a\n```"]
        ).correct
        == 1.0
    )
    assert plain.grade_in_problem(third, double, [own_add, "no code"]).correct == 0.0
    assert plain.grade_in_problem(first, "no code at all", []) == Grade(0.0, "unextractable", None)


# ----------------------------------------------------------------------- answers, summary
def test_reference_and_wrong_responses(items: list[Item]) -> None:
    bench = get_benchmark("scicode")
    first = items[0]
    assert bench.reference_response(first) == (
        "Here is the implementation.\n\n```python\n"
        "def add(a, b):\n    c = a + b\n    return c\n```\n"
    )
    with pytest.raises(ValueError, match="prompt_index 1 out of range"):
        bench.reference_response(first, prompt_index=1)
    with pytest.raises(ValueError, match="prompt_index 1 out of range"):
        bench.wrong_response(first, _Pick(0), prompt_index=1)
    no_gold = Item(**{**first.__dict__, "target": ""})
    with pytest.raises(ValueError, match=r"scicode item 77\.1: no ground_truth_code in this split"):
        bench.reference_response(no_gold)
    head = "Here is the implementation.\n\n```python\ndef add(a, b):\n    '''Add.'''\n"
    assert bench.wrong_response(first, _Pick(0)) == head + "    return None\n```\n"
    assert bench.wrong_response(first, _Pick(1)) == (
        head + "    raise NotImplementedError('step not solved')\n```\n"
    )


class _Pick:
    """A generator stand-in whose integers(2) returns a fixed choice."""

    def __init__(self, k: int) -> None:
        self.k = k

    def integers(self, n: int) -> int:
        assert n == 2
        return self.k


def _item(problem: str, step: str) -> Item:
    return Item("scicode", step, "q", None, "code", meta={"problem_id": problem})


def test_aggregate_by_hand() -> None:
    bench = get_benchmark("scicode")
    items = [_item("1", "1.1"), _item("1", "1.2"), _item("2", "2.1"), _item("3", "3.1")]
    items.append(_item("2", "2.2"))
    grades = [Grade(1.0), Grade(0.0), Grade(1.0), Grade(math.nan), Grade(1.0)]
    assert bench.aggregate(items, grades) == {
        "subproblem_accuracy": 3 / 5,  # the ungraded step 3.1 counts wrong
        "main_problem_accuracy": 1 / 3,  # problem 1 fails a step, 3 is ungraded, 2 solved
        "subproblem_accuracy_graded": 3 / 4,
        "main_problem_accuracy_graded": 1 / 2,  # problem 3 has no graded step
        "steps_graded": 4.0,
        "steps_ungraded": 1.0,
        "problems": 3.0,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Mean of empty slice" from an empty summary
        empty = bench.aggregate([_item("3", "3.1")], [Grade(math.nan)])
    assert empty["subproblem_accuracy"] == 0.0 and empty["main_problem_accuracy"] == 0.0
    assert math.isnan(empty["subproblem_accuracy_graded"])
    assert math.isnan(empty["main_problem_accuracy_graded"])
    assert (empty["steps_graded"], empty["steps_ungraded"], empty["problems"]) == (0.0, 1.0, 1.0)
    none = bench.aggregate([], [])
    assert math.isnan(none["subproblem_accuracy"]) and none["problems"] == 0.0
    with pytest.raises(ValueError, match="scicode: 2 items but 1 grades"):
        bench.aggregate(items[:2], grades[:1])
    all_right = bench.aggregate(items[2:3], grades[2:3])
    assert all_right["main_problem_accuracy"] == 1.0 and all_right["subproblem_accuracy"] == 1.0


def test_ungraded_steps_cannot_raise_the_headline() -> None:
    """The review's case: one right step and seven the grader could not grade scored 100%
    when ungraded steps were left out. Counted wrong, they score 1/8; the graded-only figure
    stands beside it, with the count."""
    bench = get_benchmark("scicode")
    items = [_item("1", f"1.{k}") for k in range(1, 9)]
    grades = [Grade(1.0)] + [Grade(math.nan, "grader_error")] * 7
    agg = bench.aggregate(items, grades)
    assert agg["subproblem_accuracy"] == 1 / 8 and agg["main_problem_accuracy"] == 0.0
    assert agg["subproblem_accuracy_graded"] == 1.0 and agg["main_problem_accuracy_graded"] == 1.0
    assert agg["steps_ungraded"] == 7.0


def test_the_default_aggregate_counts_ungraded_items_wrong() -> None:
    from metacog_tasks.benchmarks.base import Benchmark

    items = [_item("1", f"1.{k}") for k in range(4)]
    grades = [Grade(1.0), Grade(0.0), Grade(math.nan), Grade(1.0)]
    agg = Benchmark.aggregate(get_benchmark("scicode"), items, grades)
    assert agg == {"accuracy": 0.5, "accuracy_graded": 2 / 3, "ungraded": 1.0}
    empty = Benchmark.aggregate(get_benchmark("scicode"), [], [])
    assert math.isnan(empty["accuracy"]) and math.isnan(empty["accuracy_graded"])
    assert empty["ungraded"] == 0.0


def test_a_step_without_test_cases_has_no_score(monkeypatch, items) -> None:
    # never loaded (such steps are skipped), but a hand-built item must not divide by zero
    item = items[0]
    bare = Item(**{**item.__dict__, "meta": {**item.meta, "test_cases": []}})
    canned = Canned("[]", "[]")
    monkeypatch.setattr(sc, "run_python", canned)
    bench = get_benchmark("scicode")
    g = bench.grade(bare, bench.reference_response(bare))
    assert math.isnan(g.score) and g.details["tests"] == []
