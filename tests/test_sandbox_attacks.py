"""Attacks on the sandbox, written as model code would be: each is contained, the caller is
unharmed and nothing is left behind (see the threat model in docs/benchmarks.md).

Every attack runs behind the real boundary (bubblewrap); the tests skip when it is missing.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from metacog_tasks.sandbox import isolation_support, run_python
from tests.availability import unavailable

SECRET = "metacog-test-secret-7f3a9c"


@pytest.fixture(scope="module", autouse=True)
def _bwrap_boundary() -> None:
    """The attacks need the bubblewrap boundary: skip locally without it, fail under CI."""
    boundary = isolation_support()["boundary"]
    if not boundary.startswith("bwrap"):
        unavailable(f"bubblewrap boundary unavailable on this machine ({boundary})")


@pytest.fixture(autouse=True)
def _nothing_left_behind(tmp_path_factory: pytest.TempPathFactory, monkeypatch):
    """The sandbox's host-side folders go to a private temp dir, which must end up empty."""
    private = tmp_path_factory.mktemp("host-tmp")
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    yield
    assert list(private.iterdir()) == [], "sandbox temp folders left behind"


def _host_has_process(marker: str) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


def _run(code: str, **kw):
    kw.setdefault("timeout_s", 20)
    return run_python(code, **kw)


# ----------------------------------------------------------------------------- files
def test_caller_files_are_not_visible(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    checkout = Path(__file__).resolve().parents[1] / "pyproject.toml"
    code = f"""
import os
for p in [{str(secret)!r}, {str(checkout)!r}, '/etc/shadow', '/etc/passwd']:
    try:
        print('READ', p, open(p).read()[:50])
    except OSError as exc:
        print('DENIED', p, type(exc).__name__)
for d in ['/root', '/home', {str(tmp_path)!r}, {str(checkout.parent)!r}, '/sys/fs/cgroup']:
    print('LIST', d, os.path.exists(d) and os.listdir(d))
print('ROOT', sorted(os.listdir('/')))
"""
    r = _run(code)
    assert r.ok, r.stderr
    assert SECRET not in r.stdout and "READ" not in r.stdout
    assert r.stdout.count("DENIED") == 4
    listed = [ln for ln in r.stdout.splitlines() if ln.startswith("LIST")]
    # /root holds only the read-only interpreter bind (a pyenv), if anything
    assert all(ln.endswith("False") or ln == "LIST /root ['.pyenv']" for ln in listed), listed
    top = r.stdout.split("ROOT ")[1].strip()
    allowed = {"usr", "bin", "lib", "lib64", "sbin", "etc", "proc", "dev", "tmp", "sandbox"}
    allowed.add(Path(sys.base_prefix).parts[1])  # the interpreter's installation
    # a venv is mounted at a neutral path (it may live inside the checkout)
    allowed.add("opt" if sys.prefix != sys.base_prefix else Path(sys.prefix).parts[1])
    assert {n.strip(" '") for n in top.strip("[]").split(",")} <= allowed, top


def test_paths_around_the_boundary(tmp_path: Path) -> None:
    """dir_fd-relative paths, symlinks, /proc magic links, ctypes open and mmap."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    code = f"""
import ctypes, mmap, os, sys
def attempt(name, fn):
    try:
        out = fn()
        print('OK', name, str(out)[:80])
    except OSError as exc:
        print('DENIED', name, exc.errno)
root = os.open('/', os.O_RDONLY)
attempt('dir_fd', lambda: os.read(os.open({str(secret)[1:]!r}, os.O_RDONLY, dir_fd=root), 99))
attempt('dotdot', lambda: open('../../../../' + {str(secret)!r}).read())
os.symlink({str(secret)!r}, 'link')
attempt('symlink', lambda: open('link').read())
attempt('proc_root', lambda: open('/proc/1/root' + {str(secret)!r}).read())
attempt('proc_cwd', lambda: open('/proc/1/cwd/../..' + {str(secret)!r}).read())
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.open({str(secret).encode()!r}, 0)
print('OK' if fd >= 0 else 'DENIED', 'ctypes_open', ctypes.get_errno())
attempt('write_usr', lambda: open('/usr/bin/pwned', 'w'))
attempt('write_interp', lambda: open(sys.executable, 'r+b'))
attempt('write_host', lambda: open({str(tmp_path / "pwned")!r}, 'w'))
def mm():
    with open(sys.executable, 'rb') as fh:
        m = mmap.mmap(fh.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
attempt('mmap_write', mm)
attempt('dev_mem', lambda: open('/dev/mem', 'rb'))
"""
    r = _run(code)
    assert r.ok, r.stderr
    assert SECRET not in r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("OK", "DENIED"))]
    assert len(lines) == 11 and all(ln.startswith("DENIED") for ln in lines), r.stdout
    assert not (tmp_path / "pwned").exists() and not Path("/usr/bin/pwned").exists()


# ----------------------------------------------------------------------------- processes
def test_started_processes_stay_inside(tmp_path: Path) -> None:
    """_posixsubprocess and libc system() through dlsym run, but only inside the boundary."""
    marker = tmp_path / "pwned"
    code = f"""
import ctypes, os, _posixsubprocess, subprocess
libc = ctypes.CDLL(None)
system = ctypes.cast(libc.system, ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p))
print('system', system(b"touch {marker}; touch /tmp/inside-only"))
print('popen', subprocess.run(['/bin/sh', '-c', 'touch {marker}.2; id -u'],
      capture_output=True, text=True).stdout.strip())
print('inside', os.path.exists('/tmp/inside-only'))
"""
    r = _run(code)
    assert r.ok, r.stderr
    assert "popen 65534" in r.stdout and "inside True" in r.stdout
    assert not marker.exists() and not Path(f"{marker}.2").exists()
    assert not Path("/tmp/inside-only").exists()


def test_no_process_survives_the_run() -> None:
    """A double-forked daemon and a move to another cgroup: gone when the run returns."""
    tag = f"{os.getpid()}{int(time.time() * 1000) % 100000}.25"
    code = f"""
import os
try:
    open('/sys/fs/cgroup/cgroup.procs', 'w').write(str(os.getpid()))
    print('cgroup move: done')
except OSError as exc:
    print('cgroup move:', type(exc).__name__)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv('/bin/sleep', ['sleep', '{tag}'])
    os._exit(0)
print('parent exits')
"""
    r = _run(code)
    assert r.ok, r.stderr
    assert "cgroup move: done" not in r.stdout
    time.sleep(0.3)
    assert not _host_has_process(tag)


def test_timeout_kills_the_whole_tree() -> None:
    tag = f"{os.getpid()}{int(time.time() * 1000) % 100000}.75"
    code = f"import os, time\nif os.fork() == 0:\n    os.execv('/bin/sleep', ['sleep', '{tag}'])\n"
    code += "time.sleep(60)"
    r = _run(code, timeout_s=2)
    assert r.timed_out and r.killed_reason == "timeout" and r.duration < 10
    time.sleep(0.3)
    assert not _host_has_process(tag)


# ----------------------------------------------------------------------------- network
def test_network_is_unreachable() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    code = f"""
import ctypes, os, socket
def attempt(name, fn):
    try:
        fn()
        print('OK', name)
    except OSError as exc:
        print('DENIED', name, type(exc).__name__)
attempt('loopback', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=2))
attempt('dns', lambda: socket.getaddrinfo('pypi.org', 443))
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt('udp', lambda: udp.sendto(b'x', ('1.1.1.1', 53)))
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open('/proc/1/ns/net', os.O_RDONLY)
print('setns', libc.setns(fd, 0x40000000), ctypes.get_errno())
print('unshare', libc.unshare(0x40000000 | 0x10000000), ctypes.get_errno())
print('ifaces', sorted(n for _, n in socket.if_nameindex()))
"""
    try:
        r = _run(code)
        server.settimeout(0.1)
        with pytest.raises(socket.timeout):
            server.accept()  # nobody connected to the caller's loopback
    finally:
        server.close()
    assert r.ok, r.stderr
    assert r.stdout.count("DENIED") == 3 and "OK" not in r.stdout, r.stdout
    assert "setns -1 1" in r.stdout  # EPERM: denied by the seccomp filter
    assert "unshare -1 1" in r.stdout
    assert "ifaces ['lo']" in r.stdout


# ----------------------------------------------------------------------------- signals
def test_signals_cannot_reach_the_caller() -> None:
    victim = subprocess.Popen(["sleep", "30"])
    try:
        code = f"""
import os, signal
for pid in ({os.getpid()}, {victim.pid}):
    try:
        os.kill(pid, signal.SIGKILL)
        print('killed', pid)
    except ProcessLookupError:
        print('no such process', pid)
    try:
        fd = os.pidfd_open(pid)
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        print('pidfd killed', pid)
    except ProcessLookupError:
        print('pidfd: no such process', pid)
os.kill(-1, signal.SIGKILL)  # every process it may signal: only its own
"""
        r = _run(code)
        assert r.stdout.count("no such process") == 4, r.stdout
        time.sleep(0.2)
        assert victim.poll() is None  # the bystander lives
    finally:
        victim.kill()
        victim.wait()


# ----------------------------------------------------------------------------- environment
def test_caller_environment_is_not_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code = f"""
import os
print(dict(os.environ))
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            print(pid, open(f'/proc/{{pid}}/environ', 'rb').read())
        except OSError as exc:
            print(pid, type(exc).__name__)
for pid in ({os.getpid()}, {os.getppid()}):
    try:
        print(open(f'/proc/{{pid}}/environ', 'rb').read())
    except OSError as exc:
        print('caller', type(exc).__name__)
"""
    r = _run(code)
    assert r.ok, r.stderr
    assert SECRET not in r.stdout and "OPENAI_API_KEY" not in r.stdout
    assert r.stdout.count("caller FileNotFoundError") == 2


# ----------------------------------------------------------------------------- the guard
def test_the_guard_cannot_be_switched_off() -> None:
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def c(name, rc):
    print(name, rc, ctypes.get_errno())
c('mount', libc.mount(b'none', b'/usr', None, 32 | 4096, None))  # MS_REMOUNT|MS_BIND rw
c('unshare_user', libc.unshare(0x10000000))
c('ptrace', libc.ptrace(16, 1, None, None))  # PTRACE_ATTACH to pid 1
c('bpf', libc.syscall(321, 0, None, 0))
c('keyctl', libc.syscall(250, 0, 0, 0, 0))
print('nnp', open('/proc/self/status').read().split('NoNewPrivs:')[1].split()[0])
print('seccomp', open('/proc/self/status').read().split('Seccomp:')[1].split()[0])
print('caps', open('/proc/self/status').read().split('CapEff:')[1].split()[0])
try:
    os.write(os.open('/proc/self/uid_map', os.O_WRONLY), b'0 0 1')
except OSError as exc:
    print('uid_map', type(exc).__name__)
"""
    r = _run(code)
    assert r.ok, r.stderr
    for name in ("mount", "unshare_user", "ptrace", "bpf", "keyctl"):
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith(name + " "))
        assert line.split()[1] == "-1", line
    assert "nnp 1" in r.stdout and "seccomp 2" in r.stdout
    assert "caps 0000000000000000" in r.stdout and "uid_map" in r.stdout


# ----------------------------------------------------------------------------- exhaustion
def test_memory_disk_processes_and_output_are_capped() -> None:
    r = _run("x = bytearray(8 * 1024**3)", memory_mb=512)
    assert not r.ok and r.killed_reason == "memory"
    r = _run(
        "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 2**20)",
        disk_mb=16,
        file_size_mb=1024,
    )
    assert not r.ok and "No space left on device" in r.stderr
    r = _run("with open('/tmp/big', 'wb') as f:\n    f.write(b'x' * 2**26)", disk_mb=16)
    assert not r.ok and "No space left on device" in r.stderr
    before = len(os.listdir("/proc"))
    r = _run("import os\nwhile True:\n    os.fork()", timeout_s=5, max_processes=8)
    assert not r.ok
    assert len(os.listdir("/proc")) < before + 20
    r = _run("import os\nfor _ in range(200):\n    os.write(1, b'y' * 2**20)", file_size_mb=64)
    assert len(r.stdout) <= 1_000_000 and not r.ok  # 64 MB file cap, 1 MB read back


# ----------------------------------------------------------------------------- forging
FORGERIES = {
    "print PASS lines and exit 0": (
        "    import sys\n"
        "    for i in range(10):\n"
        "        print('__METACOG_SCICODE_TEST__ %d PASS' % i)\n"
        "    sys.exit(0)\n"
    ),
    "exit 0 from the C level": "    import os\n    os._exit(0)\n",
    "patch numpy and builtins": (
        "    import builtins, numpy\n"
        "    numpy.allclose = lambda *a, **k: True\n"
        "    builtins.AssertionError = type('Never', (Exception,), {})\n"
        "    return 0.0\n"
    ),
    "forge outputs.json": (
        "    import json, os, atexit\n"
        "    def forge():\n"
        "        open('outputs.json', 'w').write(json.dumps([['__tuple__', ['ok', 1.0]]] * 3))\n"
        "    atexit.register(forge)\n"
        "    return {'__ndarray__': 'x'}\n"
    ),
    "read the targets": (
        "    import glob\n"
        "    found = [open(p).read() for p in glob.glob('/**/targets*.json', recursive=True)]\n"
        "    return float(found[0]) if found else -1.0\n"
    ),
    "crash the interpreter": "    import ctypes\n    ctypes.string_at(0)\n",
    "kill the wrapper": "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n",
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_wrong_answer_cannot_forge_a_pass(name: str) -> None:
    from metacog_tasks.benchmarks import get_benchmark

    bench = get_benchmark("scicode", timeout_s=60)
    item = bench.load("bundled")[0]
    reply = f"```python\n{item.meta['function_header']}\n{FORGERIES[name]}```"
    g = bench.grade(item, reply)
    assert g.correct == 0.0 and g.graded, g.details
    assert not any(t["passed"] for t in g.details["tests"]), g.details["tests"]
    assert bench.grade(item, bench.reference_response(item)).correct == 1.0
    assert np.isfinite(g.score) and g.score == 0.0
    assert signal.getsignal(signal.SIGINT) is not None  # the caller's process is intact


@pytest.mark.parametrize(
    "raw",
    [
        '[{"__ndarray__": {"dtype": "(100000000,)f8", "shape": [1], "data": [1]}}]',
        '[{"__ndarray__": {"dtype": "V8", "shape": [1], "data": [1]}}]',
        '[{"__sparse__": {"format": "__class__", "dense": 1}}]',
    ],
)
def test_hostile_outputs_are_rejected_as_data(raw: str) -> None:
    """outputs.json is decoded as data: no memory bomb dtype, no attribute lookups."""
    from metacog_tasks.benchmarks._scicode_support import codec

    with pytest.raises(ValueError):
        codec["load_targets"](raw)
