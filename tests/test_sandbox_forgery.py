"""Wrong answers written as a policy would write them, graded through both entry points:
``SciCode.grade`` and the RL rewards' grader (``rlmf_plugin._grading.ItemGrader``).

Every attack is a model reply whose function prints a marker (``__ATTACK__ <name>``) just
before it attacks, and the test asserts that marker in the run's output: an attack that died
early (a ``NameError``, an import the grader stripped) fails its test instead of passing
vacuously. Each must then be graded wrong (0, never ungraded), with no test case passed, and
leave the caller intact. The attacks use ``__import__`` and the step's dependencies, so they run
whether or not the grader keeps the reply's import lines (it strips them, as SciCode's own
harness does; ``test_a_stripped_import_stops_an_attack_before_its_marker``).

They run behind the real boundary (bubblewrap): skipped locally without it, failed under CI.
"""

from __future__ import annotations

import json
import math
import signal
from pathlib import Path

import pytest

from metacog_tasks.sandbox import SandboxResult, isolation_support
from tests.availability import unavailable

MARK = "__ATTACK__"


def _mark(name: str) -> str:
    return f"    print({MARK!r}, {name!r}, flush=True)\n"


def _at_exit(name: str, writes: str) -> str:
    """A body that, at exit, replaces outputs.json with ``writes`` (a Python expression of
    the text), after the capture wrote the real one. The marker is printed at that moment."""
    return (
        "    def forge():\n"
        f"        text = {writes}\n"
        f"    {_mark(name)}"
        "        open('outputs.json', 'w').write(text)\n"
        "    __import__('atexit').register(forge)\n"
        "    return 0.0\n"
    )


def _codec(values: str) -> str:
    """The sandbox's own encoder over a Python expression (``E``: an empty (0, 1, 1) array)."""
    return f"__import__('_metacog_codec').dump_targets({values})"


_E = "np.zeros((0, 1, 1))"
_N = "len(__import__('json').load(open('outputs.json')))"  # as many entries as test cases

# name -> (item key, function body); "pack:k" is the bundled pack's item k, "dev:10.3" the
# SciCode validation step whose check indexes the output (np.allclose(f(x)[0], target[0]) and
# np.allclose(f(x)[1], target[1])), the step the review forged.
ATTACKS: dict[str, tuple[str, str]] = {
    # ---- forged passes by structure (np.allclose broadcasts, and is vacuous over nothing)
    "extra part of empty arrays": (
        "dev:10.3",
        _at_exit("extra part of empty arrays", _codec(f"[('ok', [{_E}] * 3)] * {_N}")),
    ),
    "dict of empty arrays for a tuple": (
        "dev:10.3",
        _at_exit(
            "dict of empty arrays for a tuple", _codec(f"[('ok', {{0: {_E}, 1: {_E}}})] * {_N}")
        ),
    ),
    "empty arrays in the parts": (
        "dev:10.3",
        _at_exit("empty arrays in the parts", _codec(f"[('ok', [{_E}, {_E}])] * {_N}")),
    ),
    "an empty array for a scalar": (
        "pack:0",
        _mark("an empty array for a scalar") + "    return np.array([])\n",
    ),
    "an empty object array": (
        "pack:0",
        _mark("an empty object array") + "    return np.empty(0, dtype=object)\n",
    ),
    "an empty list": ("pack:0", _mark("an empty list") + "    return []\n"),
    "empty arrays in a tuple": (
        "pack:7",
        _mark("empty arrays in a tuple") + "    return (np.array([]), np.array([]))\n",
    ),
    "a column that broadcasts": (
        "pack:7",
        _mark("a column that broadcasts")
        + "    return (np.zeros((5000, 1)), np.zeros((5000, 1)))\n",
    ),
    "a scalar that broadcasts": ("pack:3", _mark("a scalar that broadcasts") + "    return 0.0\n"),
    "a dict for a number": ("pack:0", _mark("a dict for a number") + "    return {0: 0.0}\n"),
    "NaN and infinity": (
        "pack:7",
        _mark("NaN and infinity") + "    return (float('nan'), float('inf'))\n",
    ),
    # ---- outputs that made the old comparison raise (the step came out ungraded)
    "an array as the entry's tag": (
        "pack:0",
        _at_exit("an array as the entry's tag", _codec(f"[(np.ones(2), 1.0)] * {_N}")),
    ),
    "a dict as the entry's tag": (
        "pack:0",
        _at_exit("a dict as the entry's tag", _codec(f"[({{'ok': 1}}, 1.0)] * {_N}")),
    ),
    "an unhashable tag": (
        "pack:0",
        _at_exit("an unhashable tag", _codec(f"[([1], 1.0)] * {_N}")),
    ),
    # ---- decoding bombs in the caller
    "hash-colliding integer sets": (
        "pack:0",
        _at_exit(
            "hash-colliding integer sets",
            "__import__('json').dumps([{'__tuple__': ['ok', {'__set__': "
            "[(2**61 - 1) * (k + 1) for k in range(200_000)]}]}] * 3)",
        ),
    ),
    "a dia matrix that expands": (
        "pack:0",
        _at_exit(
            "a dia matrix that expands",
            _codec(
                "[('ok', __import__('scipy.sparse').sparse.dia_matrix(np.ones((1, 8000))))] * 3"
            ),
        ),
    ),
    "a sparse shape past the text": (
        "pack:0",
        _at_exit(
            "a sparse shape past the text",
            "__import__('json').dumps([{'__tuple__': ['ok', {'__sparse__': {'format': 'dok', "
            "'shape': [10**6, 10**6], 'row': {'__ndarray__': {'dtype': '<i8', 'shape': [0], "
            "'b64': ''}}, 'col': {'__ndarray__': {'dtype': '<i8', 'shape': [0], 'b64': ''}}, "
            "'data': {'__ndarray__': {'dtype': '<f8', 'shape': [0], 'b64': ''}}}}]}] * 3)",
        ),
    ),
    "deep nesting": ("pack:0", _at_exit("deep nesting", "'[' * 100_000 + ']' * 100_000")),
    "a huge integer": ("pack:0", _at_exit("a huge integer", "'[' + '9' * 10_000_000 + ']'")),
    "an array larger than its data": (
        "pack:0",
        _at_exit(
            "an array larger than its data",
            "__import__('json').dumps([{'__tuple__': ['ok', {'__ndarray__': {'dtype': '<f8', "
            "'shape': [10**5, 10**5], 'b64': 'AAAAAAAAAAA='}}]}] * 3)",
        ),
    ),
    "millions of tiny lists": (
        "pack:0",
        _at_exit("millions of tiny lists", "'[' + '[],' * 3_000_000 + '[]]'"),
    ),
    "outputs over the cap": ("pack:0", _at_exit("outputs over the cap", "'[1.0,' * 40_000_000")),
    # ---- the run itself: exit status, patches, crashes, files, pipes
    "print PASS lines and exit 0": (
        "pack:0",
        _mark("print PASS lines and exit 0") + "    for i in range(10):\n"
        "        print('__METACOG_SCICODE_TEST__ %d PASS' % i)\n"
        "    __import__('sys').exit(0)\n",
    ),
    "exit 0 from the C level": (
        "pack:0",
        _mark("exit 0 from the C level") + "    __import__('os')._exit(0)\n",
    ),
    "an object equal to everything": (
        "pack:0",
        _mark("an object equal to everything") + "    class Liar(float):\n"
        "        __eq__ = lambda self, other: True\n"
        "        __ne__ = lambda self, other: False\n"
        "        __hash__ = float.__hash__\n"
        "        __array_priority__ = 1000\n"
        "    return Liar('nan')\n",
    ),
    "a non-number equal to everything": (
        "pack:0",
        _mark("a non-number equal to everything") + "    class Liar:\n"
        "        __eq__ = lambda self, other: True\n"
        "        __ne__ = lambda self, other: False\n"
        "        __hash__ = object.__hash__\n"
        "    return Liar()\n",
    ),
    "patch numpy and builtins": (
        "pack:0",
        _mark("patch numpy and builtins") + "    np.allclose = lambda *a, **k: True\n"
        "    __import__('builtins').AssertionError = type('Never', (Exception,), {})\n"
        "    return 0.0\n",
    ),
    "forge passing outputs": (
        "pack:0",
        _at_exit(
            "forge passing outputs",
            "__import__('json').dumps([{'__tuple__': ['ok', 123.0]}] * 3)",
        ),
    ),
    "read the targets": (
        "pack:0",
        _mark("read the targets") + "    os, found = __import__('os'), []\n"
        "    for top in ('/sandbox', '/tmp', '/dev/shm', '/', '/proc/1/cwd'):\n"
        "        for root, dirs, files in os.walk(top):\n"
        "            found += [f'{root}/{f}' for f in files if f.endswith('.json')]\n"
        "            if top in ('/', '/proc/1/cwd'):\n"
        "                break  # their top level only (below: /usr and the interpreter)\n"
        "    print('found', found, flush=True)\n"
        "    return float(open(found[0]).read()) if found else -1.0\n",
    ),
    "crash the interpreter": (
        "pack:0",
        _mark("crash the interpreter") + "    __import__('ctypes').string_at(0)\n",
    ),
    "kill the wrapper": (
        "pack:0",
        _mark("kill the wrapper") + "    os = __import__('os')\n    os.kill(os.getppid(), 9)\n",
    ),
    "kill the namespace's init": (
        "pack:0",
        _mark("kill the namespace's init") + "    __import__('os').kill(1, 9)\n",
    ),
    "write the wrapper's outputs pipe": (
        "pack:0",
        _mark("write the wrapper's outputs pipe") + "    os = __import__('os')\n"
        "    forged = __import__('json').dumps([{'__tuple__': ['ok', 123.0]}] * 3).encode()\n"
        "    for fd in os.listdir(f'/proc/{os.getppid()}/fd'):\n"
        "        path = f'/proc/{os.getppid()}/fd/{fd}'\n"
        "        if int(fd) > 2 and os.readlink(path).startswith('pipe:'):\n"
        "            os.write(os.open(path, os.O_WRONLY), forged)\n"
        "    os._exit(0)\n",
    ),
    "outputs as a link to a device": (
        "pack:0",
        "    os = __import__('os')\n"
        "    def swap():\n"
        f"    {_mark('outputs as a link to a device')}"
        "        os.remove('outputs.json')\n"
        "        os.symlink('/dev/zero', 'outputs.json')\n"
        "    __import__('atexit').register(swap)\n"
        "    return 0.0\n",
    ),
    # ---- the boundary's gaps, from inside a graded reply
    "vsock and other socket families": (
        "pack:0",
        _mark("vsock and other socket families") + "    socket = __import__('socket')\n"
        "    for fam in (socket.AF_VSOCK, socket.AF_INET, socket.AF_NETLINK):\n"
        "        try:\n"
        "            socket.socket(fam, socket.SOCK_STREAM if fam == socket.AF_VSOCK else 2)\n"
        "            print('SOCKET OPENED', fam, flush=True)\n"
        "        except OSError as exc:\n"
        "            print('socket refused', fam, exc.errno, flush=True)\n"
        "    return 0.0\n",
    ),
    "AIO, IPC and NUMA calls": (
        "pack:0",
        _mark("AIO, IPC and NUMA calls") + "    ctypes = __import__('ctypes')\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    ctx = ctypes.c_ulong(0)\n"
        "    for name, nr, args in [('io_setup', 206, (8, ctypes.byref(ctx))),\n"
        "                           ('msgget', 68, (0, 0o1600)), ('semget', 64, (0, 1, 0o1600)),\n"
        "                           ('set_mempolicy', 238, (0, None, 0)),\n"
        "                           ('landlock_create_ruleset', 444, (None, 0, 1))]:\n"
        "        rc = libc.syscall(nr, *args)\n"
        "        print('syscall', name, rc, ctypes.get_errno(), flush=True)\n"
        "    return 0.0\n",
    ),
}


@pytest.fixture(scope="module")
def routes():
    """The two entry points, each with its own benchmark instance, and a recorder of every
    sandbox run they make (the test reads the attack's markers from it)."""
    support = isolation_support()
    if not support["boundary"].startswith("bwrap"):
        unavailable(f"bubblewrap boundary unavailable: {support['boundary']}")
    from metacog_tasks.benchmarks import get_benchmark
    from rlmf_plugin._grading import ItemGrader

    options = {"timeout_s": 60}
    bench = get_benchmark("scicode", **options)
    grader = ItemGrader({"scicode": options})
    runs: dict[str, list[SandboxResult]] = {"grade": [], "rewards": []}
    for key, instance in (("grade", bench), ("rewards", grader.benchmark("scicode"))):
        inner = instance.run_script

        def record(script: str, collect=(), _inner=inner, _runs=runs[key]) -> SandboxResult:
            res = _inner(script, collect)
            _runs.append(res)
            return res

        instance.run_script = record  # type: ignore[method-assign]
    return bench, grader, runs


def _item(bench, key: str, request: pytest.FixtureRequest):
    """The item an attack answers, and its source (the validation split comes from
    ../shared, which CI must have)."""
    kind, _, ref = key.partition(":")
    if kind == "pack":
        return bench.load("bundled")[int(ref)], "bundled"
    benchmarks_dir: Path = request.getfixturevalue("benchmarks_dir")
    source = str(benchmarks_dir / "scicode" / "problems_dev.jsonl")
    return next(it for it in bench.load(source) if it.item_id == ref), source


def _reply(item, body: str) -> str:
    return f"```python\n{item.meta['function_header']}\n{body}```"


def _marked(res: SandboxResult, name: str) -> bool:
    return f"{MARK} {name}" in res.stdout


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_attack_through_scicode_grade_is_wrong(name: str, routes, request) -> None:
    bench, _, runs = routes
    key, body = ATTACKS[name]
    item, _ = _item(bench, key, request)
    gold = bench.grade(item, bench.reference_response(item))
    assert gold.correct == 1.0, gold.details  # the step is gradable and its gold passes
    g = bench.grade(item, _reply(item, body))
    res = runs["grade"][-1]
    assert _marked(res, name), (res.stdout[-500:], res.stderr[-1500:])  # the attack ran
    assert g.correct == 0.0 and g.graded, (g.status, g.details)  # wrong, never ungraded
    assert not any(t["passed"] for t in g.details["tests"]), g.details["tests"]
    assert g.score == 0.0 and g.status == _status(name), (g.status, g.details["tests"])
    assert signal.getsignal(signal.SIGINT) is not None  # the caller's process is intact
    _boundary_held(name, res)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_attack_through_the_rewards_grader_is_wrong(name: str, routes, request) -> None:
    bench, grader, runs = routes
    key, body = ATTACKS[name]
    item, source = _item(bench, key, request)
    reply = _reply(item, body)
    value = grader.correct("scicode", item.item_id, source, reply)
    res = runs["rewards"][-1]
    assert _marked(res, name), (res.stdout[-500:], res.stderr[-1500:])
    assert value == 0.0 and not math.isnan(value)  # a reward of 0, never None
    assert grader.correct("scicode", item.item_id, source, bench.reference_response(item)) == 1.0
    _boundary_held(name, res)


# What each attack's step is graded as: every one is wrong, the status says why.
_UNREADABLE = {
    "hash-colliding integer sets", "a sparse shape past the text", "deep nesting",
    "a huge integer", "an array larger than its data", "millions of tiny lists",
}  # fmt: skip
_NO_OUTPUTS = {
    "exit 0 from the C level", "crash the interpreter", "kill the wrapper",
    "outputs over the cap", "outputs as a link to a device",
}  # fmt: skip
# compared, and wrong: values that are not the targets
_COMPARED = {
    "print PASS lines and exit 0",  # SystemExit is caught per test case: an error entry
    "forge passing outputs", "patch numpy and builtins", "read the targets",
    "write the wrapper's outputs pipe", "vsock and other socket families",
    "AIO, IPC and NUMA calls",
    "an object equal to everything",  # crosses the boundary as a plain float: compared, wrong
}  # fmt: skip


def _status(name: str) -> str:
    if name in _UNREADABLE:
        return "unreadable_outputs"
    if name in _NO_OUTPUTS:
        return "no_outputs"
    return "ok" if name in _COMPARED else "incomparable"


def _boundary_held(name: str, res: SandboxResult) -> None:
    """For the attacks on the boundary itself: each call ran (once per test case) and was
    refused with EPERM."""
    lines = res.stdout.splitlines()
    if name == "vsock and other socket families":
        assert "SOCKET OPENED" not in res.stdout
        refused = [ln.split() for ln in lines if ln.startswith("socket refused")]
        assert len(refused) == 3 * res.stdout.count(MARK) >= 3, res.stdout
        assert all(r[3] == "1" for r in refused), refused  # EPERM
        assert "socket refused 40 1" in res.stdout  # AF_VSOCK
    if name == "AIO, IPC and NUMA calls":
        calls = [ln.split() for ln in lines if ln.startswith("syscall ")]
        assert {c[1] for c in calls} == {
            "io_setup", "msgget", "semget", "set_mempolicy", "landlock_create_ruleset",
        }  # fmt: skip
        assert len(calls) == 5 * res.stdout.count(MARK) >= 5, res.stdout
        assert all(c[2:] == ["-1", "1"] for c in calls), calls  # -1, EPERM
    if name == "read the targets":
        assert "found []" in res.stdout, res.stdout  # no JSON file at all: no target inside


def test_a_stripped_import_stops_an_attack_before_its_marker(routes) -> None:
    """Why the markers matter: the grader strips import lines as SciCode's harness does, so
    an attack that imports what it uses dies of NameError before its attack. Without the
    marker such a test would pass, having tested nothing."""
    bench, _, runs = routes
    item = bench.load("bundled")[0]
    body = "    import signal\n    sig = signal.SIGKILL\n" + _mark("stripped")
    body += "    __import__('os').kill(__import__('os').getpid(), sig)\n"
    g = bench.grade(item, _reply(item, body))
    res = runs["grade"][-1]
    assert not _marked(res, "stripped")  # it died before its marker...
    assert "NameError: name 'signal' is not defined" in json.dumps(g.details["tests"])
    assert g.correct == 0.0 and g.status == "ok"  # ...wrong, but having attacked nothing
    body = "    sig = __import__('signal').SIGKILL\n" + _mark("stripped")
    body += "    __import__('os').kill(__import__('os').getpid(), sig)\n"
    g = bench.grade(item, _reply(item, body))
    assert _marked(runs["grade"][-1], "stripped")  # written with __import__, it attacks
    assert g.correct == 0.0 and g.status == "no_outputs"


def test_every_class_of_the_review_is_covered() -> None:
    """The issue's classes, each with at least one attack here."""
    classes: dict[str, list[str]] = {
        "extra elements": ["extra part of empty arrays"],
        "dicts": ["dict of empty arrays for a tuple", "a dict for a number"],
        "empty broadcasting arrays": ["empty arrays in the parts", "an empty array for a scalar"],
        "outputs that make the comparison raise": ["an array as the entry's tag"],
        "decoding bombs": ["hash-colliding integer sets", "a dia matrix that expands",
                           "deep nesting", "a huge integer", "an array larger than its data"],
        "syscalls and sockets": ["vsock and other socket families", "AIO, IPC and NUMA calls"],
    }  # fmt: skip
    for names in classes.values():
        assert set(names) <= set(ATTACKS)
