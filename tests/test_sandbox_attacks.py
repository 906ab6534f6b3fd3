"""Attacks on the sandbox, written as model code would be: each is contained, the caller is
unharmed and nothing is left behind (see the threat model in docs/benchmarks.md).

Every attack runs behind the real boundary (bubblewrap). Where it is missing the tests skip
locally and fail under CI (tests/availability.py): a CI run must test the real boundary.
No attack here changes the host even when it succeeds: kernel settings are only opened for
writing, never written, and memory attacks stay within a few hundred MB.
"""

from __future__ import annotations

import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import metacog_tasks.sandbox as sandbox
from metacog_tasks.sandbox import isolation_support, run_python
from tests.availability import unavailable

SECRET = "metacog-test-secret-7f3a9c"


@pytest.fixture(scope="module", autouse=True)
def _boundary() -> None:
    support = isolation_support()
    if not support["boundary"].startswith("bwrap"):
        unavailable(f"bubblewrap boundary unavailable: {support['boundary']}")


@pytest.fixture(autouse=True)
def _nothing_left_behind(tmp_path_factory: pytest.TempPathFactory, monkeypatch):
    """Host-side folders go to a private temp dir, which must end up empty, and every cgroup
    a run made must be gone afterwards."""
    private = tmp_path_factory.mktemp("host-tmp")
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    made: list[Path] = []

    class Recorded(sandbox._Cgroup):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.extend(self.dirs)

    monkeypatch.setattr(sandbox, "_Cgroup", Recorded)
    yield
    assert list(private.iterdir()) == [], "sandbox temp folders left behind"
    assert [d for d in made if d.exists()] == [], "cgroups left behind"


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


def test_kernel_settings_and_the_root_are_read_only() -> None:
    """/proc/sys, the new root and /dev are read-only, and the host uid is never root.

    bwrap leaves /proc/sys writable; with the caller's root mapped inside, the sandbox could
    set kernel.core_pattern to a pipe and run a host program as root on the next crash. The
    files are only opened for writing here (never written): success fails the test.
    """
    code = """
import os
def attempt(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError as exc:
        print('DENIED', path, exc.errno)
    else:
        os.close(fd)
        print('WRITABLE', path)
for p in ['/proc/sys/kernel/core_pattern', '/proc/sys/kernel/modprobe',
          '/proc/sys/vm/overcommit_memory', '/proc/sys/fs/file-max', '/proc/sysrq-trigger',
          '/x', '/opt/x', '/etc/x', '/dev/x', '/usr/x']:
    attempt(p)
for line in open('/proc/self/mountinfo'):
    if ' /sandbox ' in line:
        print('OWNER', line.split('uid=')[1].split(',')[0].split()[0])
"""
    r = _run(code)
    assert r.ok, r.stderr
    assert "WRITABLE" not in r.stdout, r.stdout
    assert r.stdout.count("DENIED") == 10
    owner = int(r.stdout.split("OWNER ")[1].split()[0])  # the host uid the tmpfs belongs to
    if os.geteuid() == 0:
        assert owner != 0 and f"unprivileged host uid {owner}" in r.isolation["boundary"]
    else:
        assert owner == os.geteuid()


def test_memory_outside_the_address_space_is_capped() -> None:
    """memfd, SysV shared memory and /dev/shm: memory RLIMIT_AS does not count."""
    code = """
import ctypes, errno, os, mmap
libc = ctypes.CDLL(None, use_errno=True)
try:
    os.memfd_create('m')
    print('memfd OK')
except OSError as exc:
    print('memfd', errno.errorcode[exc.errno])
print('shmget', libc.shmget(0, 64 << 20, 0o1000 | 0o600), errno.errorcode[ctypes.get_errno()])
try:
    with open('/dev/shm/fill', 'wb') as f:
        for _ in range(100):
            f.write(b'x' * (1 << 20))
    print('shm 100 MB written')
except OSError as exc:
    print('shm', errno.errorcode[exc.errno])
"""
    r = _run(code, file_size_mb=256)  # files may be large: the tmpfs cap must stop it
    assert r.ok, r.stderr
    assert "memfd EPERM" in r.stdout and "shmget -1 EPERM" in r.stdout
    assert "shm ENOSPC" in r.stdout, r.stdout


def test_several_processes_share_one_memory_cap() -> None:
    """RLIMIT_AS is per process; the run's memory cgroup bounds them together."""
    if isolation_support()["memory"] != "cgroup":
        pytest.skip("no writable memory cgroup here: each process has its own RLIMIT_AS")
    code = """
import os, time
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        b = bytearray(300 << 20)  # touched: 300 MB each, 1.2 GB together
        for i in range(0, len(b), 4096):
            b[i] = 1
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
print('killed', sum(os.waitpid(p, 0)[1] == 9 for p in kids))
"""
    r = _run(code, memory_mb=400, disk_mb=16)  # cap: 400 + 2 x 16 + 64 + 256 = 752 MB
    assert r.isolation["memory"] == "cgroup (752 MB for the run)"
    assert r.killed_reason == "memory", (r.killed_reason, r.stdout, r.stderr[-300:])
    assert "killed 0" not in r.stdout  # the kernel killed at least one child (or the parent)


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
udp = lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt('udp', lambda: udp().sendto(b'x', ('1.1.1.1', 53)))
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open('/proc/1/ns/net', os.O_RDONLY)
print('setns', libc.setns(fd, 0x40000000), ctypes.get_errno())
print('unshare', libc.unshare(0x40000000 | 0x10000000), ctypes.get_errno())
print('ifaces', sorted(ln.split(':')[0].strip() for ln in open('/proc/net/dev') if ':' in ln))
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
        print('killed', pid, flush=True)
    except ProcessLookupError:
        print('no such process', pid, flush=True)
    try:
        fd = os.pidfd_open(pid)
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        print('pidfd killed', pid, flush=True)
    except ProcessLookupError:
        print('pidfd: no such process', pid, flush=True)
# Flushed above: killing the wrapper tears down the namespace, and output still in
# Python's buffer would be lost (a race the busy CI machine lost).
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


def _syscall_numbers(names: list[str]) -> dict[str, int]:
    """This machine's numbers of ``names`` (libseccomp's table: the filter's own), leaving out
    calls that do not exist on this architecture."""
    import ctypes

    try:
        lib = ctypes.CDLL("libseccomp.so.2")
    except OSError:
        unavailable("libseccomp is not installed: no system call filter to test")
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    numbers = {n: lib.seccomp_syscall_resolve_name(n.encode()) for n in names}
    return {n: nr for n, nr in numbers.items() if nr >= 0}


# Each gap, with arguments the kernel itself would accept or refuse with another errno than
# EPERM, so that EPERM shows the filter stopped it. The marker line comes first: a probe that
# died before its call leaves "TRY" without an answer, and the test fails.
_GAPS = {
    "io_setup": "(8, ctypes.byref(ctx))",
    "io_destroy": "(0,)",
    "io_submit": "(0, 0, None)",
    "cachestat": "(os.open('main.py', os.O_RDONLY), ctypes.byref(rng), ctypes.byref(stat), 0)",
    "pidfd_getfd": "(-1, 0, 0)",
    "process_madvise": "(-1, None, 0, 0, 0)",
    "process_mrelease": "(-1, 0)",
    "move_pages": "(0, 0, None, None, None, 0)",
    "migrate_pages": "(0, 8, None, None)",
    "set_mempolicy": "(0, None, 0)",
    "set_mempolicy_home_node": "(0, 0, 0, 0)",
    "mbind": "(0, 0, 0, None, 0, 0)",
    "msgget": "(0, 0o1600)",
    "semget": "(0, 1, 0o1600)",
    "shmat": "(-1, None, 0)",
    "mq_open": "(b'metacog-q', os.O_CREAT | os.O_RDWR, 0o600, None)",
    "landlock_create_ruleset": "(None, 0, 1)",
    "landlock_add_rule": "(-1, 1, None, 0)",
    "landlock_restrict_self": "(-1, 0)",
    "modify_ldt": "(0, ctypes.create_string_buffer(16), 16)",
    "memfd_secret": "(0,)",
}


def test_closed_gaps_fail_from_inside() -> None:
    """Every call the review found reachable, made from inside: each ran and got EPERM."""
    support = isolation_support()
    if not support["seccomp"].startswith("libseccomp filter"):
        unavailable(f"no seccomp filter here: {support['seccomp']}")
    numbers = _syscall_numbers(list(_GAPS))
    assert {"io_setup", "cachestat", "pidfd_getfd", "process_madvise", "move_pages"} <= set(
        numbers
    ), numbers  # the list exists on every architecture the project runs on
    lines = [
        "import ctypes, errno, os",
        "libc = ctypes.CDLL(None, use_errno=True)",
        "ctx = ctypes.c_ulong(0)",
        "rng, stat = (ctypes.c_uint64 * 2)(0, 4096), (ctypes.c_uint64 * 5)()",
    ]
    for name, nr in numbers.items():
        lines += [
            f"print('TRY {name}', flush=True)",
            f"rc = libc.syscall({nr}, *{_GAPS[name]})",
            f"print('{name}', rc, errno.errorcode.get(ctypes.get_errno(), '-'), flush=True)",
        ]
    r = _run("\n".join(lines))
    assert r.ok, r.stderr
    out = r.stdout.splitlines()
    for name in numbers:
        assert f"TRY {name}" in out, (name, r.stdout)  # the attempt was made
        answer = out[out.index(f"TRY {name}") + 1]
        assert answer == f"{name} -1 EPERM", answer  # and the filter refused it


@pytest.mark.parametrize(
    "family",
    ["AF_VSOCK", "AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET", "AF_ALG", "45"],
)
def test_socket_families_are_an_allowlist(family: str) -> None:
    """Only AF_UNIX: AF_VSOCK shares the VM's port space with the caller, the others reach
    kernel code the run does not need (the network namespace is empty anyway)."""
    support = isolation_support()
    if not support["seccomp"].startswith("libseccomp filter"):
        unavailable(f"no seccomp filter here: {support['seccomp']}")
    fam = f"getattr(socket, {family!r}, None) or {family}" if family != "45" else "45"
    code = f"""
import errno, socket
fam = {fam}
print('TRY socket', flush=True)
try:
    socket.socket(fam, socket.SOCK_DGRAM if fam != socket.AF_VSOCK else socket.SOCK_STREAM)
    print('socket OK')
except OSError as exc:
    print('socket', errno.errorcode.get(exc.errno))
print('TRY socketpair', flush=True)
try:
    socket.socketpair(fam, socket.SOCK_STREAM)
    print('socketpair OK')
except OSError as exc:
    print('socketpair', errno.errorcode.get(exc.errno))
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
a.sendall(b'local pipes still work')
print('unix', b.recv(64).decode())
"""
    r = _run(code)
    assert r.ok, r.stderr
    out = r.stdout.splitlines()
    assert out[:4] == ["TRY socket", "socket EPERM", "TRY socketpair", "socketpair EPERM"], out
    assert out[4] == "unix local pipes still work"


def test_system_calls_that_widen_the_boundary() -> None:
    """clone with namespace flags through syscall(), clone3, io_uring, personality, keyrings,
    prctl, raised rlimits: each denied; another ABI's system call kills the caller."""
    code = """
import ctypes, errno, resource, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
def sc(name, *args):
    rc = libc.syscall(*args)
    print(name, rc, errno.errorcode.get(ctypes.get_errno(), 0) if rc < 0 else 'OK')
flags = {'newuser': 0x10000000, 'newns': 0x20000, 'newnet': 0x40000000, 'newpid': 0x20000000,
         'newipc': 0x08000000, 'newuts': 0x04000000, 'newcgroup': 0x02000000, 'newtime': 0x80}
for name, flag in flags.items():
    sc('clone_' + name, 56, flag | 17, 0, 0, 0, 0)  # SIGCHLD; a child would print nothing
sc('clone3', 435, 0, 0)
sc('unshare', 272, 0x10000000)
sc('io_uring_setup', 425, 8, 0)
sc('personality', 135, 0x0040000)  # ADDR_NO_RANDOMIZE
sc('add_key', 248, b'user', b'k', b'v', 1, 0xfffffffd)  # session keyring
sc('keyctl', 250, 0, 0xfffffffc, 0)  # get the user keyring
sc('prctl_ambient_raise', 157, 47, 2, 21, 0, 0)  # CAP_SYS_ADMIN
sc('prctl_no_new_privs_off', 157, 38, 0, 0, 0, 0)
sc('memfd_create', 319, b'x', 0)
sc('userfaultfd', 323, 0)
sc('perf_event_open', 298, 0, 0, -1, -1, 0)
sc('bpf', 321, 0, 0, 0)
for lim in ('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NPROC', 'RLIMIT_NOFILE', 'RLIMIT_FSIZE'):
    r = getattr(resource, lim)
    soft, hard = resource.getrlimit(r)
    try:
        resource.setrlimit(r, (hard, resource.RLIM_INFINITY))
        print('RAISED', lim)
    except (ValueError, OSError):
        print('kept', lim)
if sys.platform == 'linux' and __import__('platform').machine() == 'x86_64':
    x32 = 'import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 272, 0x10000000)'
    print('x32', subprocess.run([sys.executable, '-c', x32]).returncode)
"""
    r = _run(code)
    assert r.ok, r.stderr
    lines = dict(ln.split(" ", 1) for ln in r.stdout.splitlines())
    for name in [k for k in lines if k.startswith("clone_")] + ["unshare", "io_uring_setup"]:
        assert lines[name] == "-1 EPERM", (name, lines[name])
    assert len([k for k in lines if k.startswith("clone_")]) == 8
    assert lines["clone3"] == "-1 ENOSYS"  # libc falls back to clone, which is filtered
    for name in ("personality", "add_key", "keyctl", "prctl_ambient_raise", "memfd_create"):
        assert lines[name] == "-1 EPERM", (name, lines[name])
    for name in ("userfaultfd", "perf_event_open", "bpf"):
        assert lines[name].startswith("-1 "), (name, lines[name])
    assert lines["prctl_no_new_privs_off"] == "-1 EINVAL"  # no_new_privs cannot be cleared
    assert "RAISED" not in r.stdout and r.stdout.count("kept") == 5
    if platform.machine() == "x86_64":
        assert lines["x32"] == str(-signal.SIGSYS)


def test_descriptors_sockets_and_terminals_lead_nowhere() -> None:
    """Inherited descriptors (its own and its parents'), an abstract unix socket the caller
    listens on, TIOCSTI into a terminal, /dev/tty: nothing reaches the host."""
    name = f"metacog-test-{os.getpid()}-{time.monotonic_ns()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(b"\0" + name.encode())
    server.listen(1)
    code = f"""
import fcntl, os, socket, termios
for pid in os.listdir('/proc'):
    if pid.isdigit():
        for fd in os.listdir(f'/proc/{{pid}}/fd'):
            try:
                print('FD', pid, fd, os.readlink(f'/proc/{{pid}}/fd/{{fd}}'))
            except OSError as exc:
                print('FD', pid, fd, 'unreadable', exc.errno)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(b'\\0{name}')
    print('ABSTRACT CONNECTED')
except OSError as exc:
    print('abstract', exc.errno)
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b'x')
        print('TIOCSTI', fd)
    except OSError as exc:
        print('tiocsti', fd, exc.errno)
try:
    open('/dev/tty', 'rb')
    print('TTY')
except OSError as exc:
    print('tty', exc.errno)
"""
    try:
        r = _run(code, collect=["outputs.json"])
        server.settimeout(0.1)
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()
    assert r.ok, r.stderr
    assert "CONNECTED" not in r.stdout and "TIOCSTI " not in r.stdout and "TTY\n" not in r.stdout
    targets = [ln.split(" ", 3)[3] for ln in r.stdout.splitlines() if ln.startswith("FD ")]
    assert targets, r.stdout
    # only pipes, the null device, the work dir and anonymous kernel objects: no host path
    for t in targets:
        assert t.startswith(("pipe:", "/dev/null", "anon_inode:", "/proc/", "/sandbox")) or (
            t.startswith("unreadable")
        ), t
    assert "abstract 111" in r.stdout  # ECONNREFUSED: its own network namespace
    assert "tty 6" in r.stdout  # ENXIO: no controlling terminal


def test_output_streams_cost_the_caller_nothing(tmp_path: Path) -> None:
    """A 200 MB print: read with a 1 MB cap, never whole; the caller's peak memory does not
    move (measured in a fresh interpreter against its own peak before the run)."""
    probe = tmp_path / "rss.py"
    probe.write_text(
        textwrap.dedent(
            r"""
            import resource, sys
            from metacog_tasks.sandbox import run_python
            run_python("pass")
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            r = run_python("import os\nfor _ in range(200):\n    os.write(1, b'y' * 2**20)",
                           timeout_s=60, file_size_mb=256)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(before, after, len(r.stdout), r.ok)
            """
        )
    )
    out = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after, kept, ok = out.stdout.split()
    assert ok == "True" and int(kept) == 1_000_000
    assert int(after) - int(before) < 8 * 1024, (before, after)  # KiB: under 8 MB more


def test_collected_files_are_capped_and_never_followed() -> None:
    """A link to /dev/zero, a FIFO, a file larger than the cap, a swap after the check."""
    code = """
import os, threading, time
os.symlink('/dev/zero', 'a.json')
os.mkfifo('b.json')
with open('c.json', 'wb') as f:
    f.write(b'1' * (3 << 20))
open('d.json', 'w').write('[1]')
if os.fork() == 0:  # after the run: swap d.json for a link to /dev/zero while it is copied
    os.setsid()
    for _ in range(2000):
        try:
            os.replace('d.json', 'd.old')
            os.symlink('/dev/zero', 'd.json')
        except OSError:
            pass
        time.sleep(0.001)
    os._exit(0)
"""
    r = _run(code, collect=["a.json", "b.json", "c.json", "d.json"], collect_mb=2)
    assert set(r.files) <= {"d.json"}, sorted(r.files)
    assert r.files.get("d.json", "[1]") == "[1]"
    assert r.duration < 15


def test_many_files_leave_nothing_behind() -> None:
    """Thousands of files in the work dir and /tmp go with the run's tmpfs; at most
    seven files are collected, through pipes (nothing is written on the host)."""
    code = (
        "import os\nfor i in range(5000):\n    open(f'f{i}', 'w').close()\n"
        "    open(f'/tmp/t{i}', 'w').close()\nprint(len(os.listdir('.')) + len(os.listdir('/tmp')))"
    )
    r = _run(code, collect=[f"f{i}" for i in range(7)])
    assert r.ok and int(r.stdout) == 10001, (r.stdout, r.stderr[-300:])  # and main.py
    assert r.files == {}  # empty files read as missing
    with pytest.raises(ValueError, match="at most 7"):
        run_python("pass", collect=[f"f{i}" for i in range(8)])


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


# Forged passes, decoding bombs and the boundary's calls written as graded replies, through
# SciCode.grade and the rewards' grader: tests/test_sandbox_forgery.py. The decoder and the
# structure rule on their own: tests/test_bench_scicode_decode.py.
