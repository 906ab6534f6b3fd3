"""Sandboxed execution of model-written Python (SciCode).

Model code is untrusted. :func:`run_python` runs it behind an operating-system boundary,
bubblewrap (``bwrap``), and reports what was active in ``SandboxResult.isolation``:

* **Namespaces**: new user, mount, PID, network, IPC, UTS and cgroup namespaces; uid 65534
  inside, every capability dropped, ``no_new_privs``, no nested user namespaces, its own
  session (no terminal injection). The PID namespace dies with the run: nothing is left behind.
* **Files**: a new root holding read-only ``/usr`` (and the merged-usr links), the interpreter's
  installation (and venv), a private ``/proc`` and minimal ``/dev``, and a private writable work
  directory ``/sandbox`` plus ``/tmp``, each a size-capped tmpfs. The caller's files, the project
  checkout, ``/root``, ``/home``, the rest of ``/tmp`` and the host cgroup tree are not in it.
  Input files enter through file descriptors (``bwrap --file``); files named in ``collect`` leave
  through descriptors opened by the caller, read back with a size cap.
* **System calls** (when libseccomp is present): a seccomp filter denies namespace creation,
  ``mount`` and friends, ``ptrace``, keyrings, ``bpf``, ``perf_event_open``, ``userfaultfd``,
  kernel modules and similar calls with ``EPERM``.
* **Limits** (``setrlimit``): CPU seconds, address space, file size (which also caps output
  files), open files, processes, no core files; a pids cgroup where one is writable; the
  wall-clock timeout kills bwrap, whose PID namespace takes every process of the run with it.
  Captured output is read with a cap, never whole.

Without bwrap the run is refused (:class:`SandboxUnavailableError`) unless the caller opts in
with :data:`UNSAFE_ENV` = :data:`UNSAFE_VALUE`; it then runs on the host with only the limits.

Building a script (e.g. :func:`metacog_tasks.benchmarks.scicode.build_test_script`) and running
it are separate steps, so a harness can hand the same script to another sandbox (e.g. an Inspect
docker sandbox). Graders never trust what runs inside: see ``docs/benchmarks.md``.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import fcntl
import functools
import logging
import math
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from metacog_metrics import Result

__all__ = [
    "UNSAFE_ENV",
    "UNSAFE_VALUE",
    "SandboxResult",
    "SandboxUnavailableError",
    "isolation_support",
    "run_python",
]

#: Environment variable (with exactly :data:`UNSAFE_VALUE`) that lets model code run on the
#: host without the bubblewrap boundary. Named so that nobody sets it by accident.
UNSAFE_ENV = "METACOG_SANDBOX_UNSAFE_NO_ISOLATION"
UNSAFE_VALUE = "yes-run-untrusted-code-on-this-host"
_LOG = logging.getLogger(__name__)

_CLONE_NEWNET = 0x40000000
_MAX_OUTPUT = 1_000_000
_WORK = "/sandbox"
_MAX_COLLECT = 7  # descriptors 3..9 carry the collected files out


@dataclasses.dataclass(frozen=True)
class SandboxResult(Result):
    """Outcome of one sandboxed run.

    Attributes:
        returncode: Exit status (negative: killed by that signal); ``None`` if it never ran.
        stdout: Captured standard output (truncated to 1 MB).
        stderr: Captured standard error (truncated to 1 MB).
        timed_out: The wall-clock limit was hit and the process group was killed.
        killed_reason: ``timeout``, ``cpu_time``, ``file_size``, ``memory``, ``signal:<NAME>``
            or ``None``.
        duration: Wall-clock seconds.
        isolation: Which containment layers were active (``network``, ``processes``, ...).
        files: The files named in ``collect`` that the script left in its directory (text).
    """

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    killed_reason: str | None
    duration: float
    isolation: Mapping[str, str] = dataclasses.field(default_factory=dict)
    files: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Exit status 0 within the limits."""
        return self.returncode == 0 and not self.timed_out


class SandboxUnavailableError(RuntimeError):
    """No operating-system boundary (bubblewrap with user namespaces) on this machine."""


# ---------------------------------------------------------------------- platform support
_WARNED = False


def _reachable_by_others(path: str) -> bool:
    """Whether an unprivileged user can reach ``path`` (every folder above it searchable)."""
    p = Path(os.path.realpath(path))
    for d in [p, *p.parents]:
        try:
            mode = d.stat().st_mode
        except OSError:
            return False
        if not mode & 0o001:
            return False
    return True


def _sandbox_uid(interpreter: str) -> int | None:
    """The host uid the boundary runs as: a fresh unprivileged one when the caller is root and
    the interpreter's installation is reachable by other users (a pyenv under ``/root`` is not;
    then the caller's uid stays mapped to 65534 inside, with no capabilities)."""
    if os.geteuid() != 0:
        return None
    roots = [os.path.dirname(interpreter), os.path.realpath(interpreter), sys.base_prefix]
    if interpreter != sys.executable:
        roots = roots[:2]
    if not all(_reachable_by_others(r) for r in roots):
        return None
    return secrets.randbelow(1_000_000_000) + 1_000_000


def _drop_to(uid: int | None) -> None:
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


@functools.cache
def _bwrap_problem() -> str | None:
    """Why bubblewrap cannot be used here (cached), or ``None`` when it works."""
    exe = shutil.which("bwrap")
    problem: str | None = None
    if exe is None:
        problem = "bwrap not found"
    else:
        uid = _sandbox_uid(sys.executable)
        try:
            probe = subprocess.run(
                [exe, *_bwrap_base(), "--", "/bin/true"],
                capture_output=True,
                timeout=30,
                preexec_fn=lambda: _drop_to(uid),
            )
            if probe.returncode != 0:
                problem = "bwrap failed: " + probe.stderr.decode("utf-8", "replace").strip()[:200]
        except (OSError, subprocess.SubprocessError) as exc:
            problem = f"bwrap failed: {exc}"
    return problem


def _bwrap_base() -> list[str]:
    """Namespaces and the read-only system view (``/usr`` and the merged-usr links)."""
    args = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--hostname",
        "sandbox",
        "--unshare-cgroup",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    for name in ("bin", "lib", "lib64", "sbin"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    for extra in ("/etc/ld.so.cache", "/etc/localtime"):
        if Path(extra).exists():
            args += ["--ro-bind", extra, extra]
    return args


def _unsafe_opt_in(flag: bool | None) -> bool:
    if flag is not None:
        return bool(flag)
    return os.environ.get(UNSAFE_ENV) == UNSAFE_VALUE


_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(None, use_errno=True)
            _LIBC.unshare.argtypes = [ctypes.c_int]
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC


def _cgroup_root() -> Path | None:
    """A writable pids-cgroup folder (v1 ``pids`` hierarchy or v2 with the pids controller)."""
    for base in (
        Path("/sys/fs/cgroup/pids"),
        Path("/sys/fs/cgroup/unified"),
        Path("/sys/fs/cgroup"),
    ):
        if not (base / "cgroup.procs").exists():
            continue
        if base.name != "pids":
            controllers = base / "cgroup.controllers"
            if not controllers.exists() or "pids" not in controllers.read_text().split():
                continue
            subtree = base / "cgroup.subtree_control"
            if subtree.exists() and "pids" not in subtree.read_text().split():
                continue
        if os.access(base, os.W_OK):
            return base
    return None


def _make_cgroup(max_processes: int) -> Path | None:
    root = _cgroup_root()
    if root is None:
        return None
    path = root / f"metacog-sandbox-{uuid.uuid4().hex[:12]}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(max_processes))
        return path
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None


def _remove_cgroup(path: Path | None) -> None:
    if path is None:
        return
    for _ in range(50):
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            path.rmdir()
            return
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return
            time.sleep(0.02)


def _user_process_count(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.stat(entry.path).st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


# ---------------------------------------------------------------------- seccomp
_DENIED_SYSCALLS = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "open_by_handle_at",
    "name_to_handle_at",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "quotactl",
    "syslog",
    "iopl",
    "ioperm",
    "personality",
    "lookup_dcookie",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)
_CLONE_NS_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER,
#                                             NEWPID, NEWNET, NEWTIME


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


@functools.cache
def _seccomp_filter() -> bytes | None:
    """A BPF program (built with libseccomp) denying :data:`_DENIED_SYSCALLS` and ``clone``
    with namespace flags (``clone3`` answers ``ENOSYS`` so libc falls back to ``clone``);
    ``None`` when libseccomp is not installed."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    ctx = lib.seccomp_init(allow)
    if not ctx:
        return None
    try:

        def rule(action: int, name: str, cmps: list[_ArgCmp] | None = None) -> None:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:
                return  # not on this architecture
            arr = (_ArgCmp * len(cmps))(*cmps) if cmps else None
            if lib.seccomp_rule_add_array(ctx, action, nr, len(cmps or ()), arr) != 0:
                raise OSError(f"seccomp: cannot add a rule for {name}")

        for name in _DENIED_SYSCALLS:
            rule(eperm, name)
        rule(enosys, "clone3")
        for flag in _CLONE_NS_FLAGS:  # SCMP_CMP_MASKED_EQ (7) on clone's flags (arg 0)
            rule(eperm, "clone", [_ArgCmp(0, 7, flag, flag)])
        with tempfile.TemporaryFile() as fh:
            if lib.seccomp_export_bpf(ctx, fh.fileno()) != 0:
                return None
            fh.seek(0)
            return fh.read()
    finally:
        lib.seccomp_release(ctx)


def isolation_support() -> dict[str, str]:
    """What containment this machine offers (without running anything)."""
    problem = _bwrap_problem()
    return {
        "boundary": "bwrap" if problem is None else f"NONE ({problem})",
        "seccomp": "libseccomp filter" if _seccomp_filter() is not None else "none (no libseccomp)",
        "processes": "cgroup+rlimit" if _cgroup_root() is not None else "rlimit",
    }


# ---------------------------------------------------------------------- the run
def _head(path: Path, limit: int) -> str:
    """The first ``limit`` bytes of a file as text (never the whole file in memory)."""
    with path.open("rb") as fh:
        return fh.read(limit).decode("utf-8", "replace")


_VENV_MOUNT = "/opt/python-env"


def _python_binds(interpreter: str) -> tuple[list[str], str]:
    """Read-only binds of the interpreter's installation outside ``/usr``, and the path of the
    interpreter inside the boundary.

    A virtual environment is bound at a neutral path (:data:`_VENV_MOUNT`), so that a venv kept
    inside a project checkout does not reveal the checkout's path or layout; Python finds the
    venv's ``pyvenv.cfg`` next to the interpreter it runs, wherever that is mounted.
    """
    args: list[str] = []
    inside = interpreter
    roots = {os.path.dirname(interpreter), os.path.dirname(os.path.realpath(interpreter))}
    if interpreter == sys.executable:
        roots |= {sys.base_prefix, sys.exec_prefix}
        venv = os.path.realpath(sys.prefix)
        if sys.prefix != sys.base_prefix and os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
            rel = os.path.relpath(os.path.abspath(interpreter), os.path.abspath(sys.prefix))
            if not rel.startswith(".."):
                args += ["--ro-bind", venv, _VENV_MOUNT]
                inside = f"{_VENV_MOUNT}/{rel}"
                roots.discard(os.path.dirname(interpreter))
        else:
            roots.add(sys.prefix)
    for r in sorted({os.path.realpath(p) for p in roots if p}):
        if r == "/usr" or r.startswith("/usr/") or not os.path.isdir(r):
            continue
        if any(r == a or r.startswith(a + "/") for a in args[1::3]):
            continue
        args += ["--ro-bind", r, r]
    return args, inside


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)


def _high(fd: int) -> int:
    """The same open file on a descriptor >= 10 (3..9 carry collected files)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


def _memfd(content: bytes) -> int:
    """A memory file holding ``content``, read from its start (for ``bwrap --file``)."""
    fd = _high(os.memfd_create("metacog-sandbox-input", os.MFD_CLOEXEC))
    view = memoryview(content)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# The wrapper inside the boundary: run the script, then copy each collected file (a regular
# file, not a link) to descriptor 3, 4, ...; the script itself runs with those closed.
_WRAPPER = (
    'py="$1"; n="$2"; shift 2; closed=""; i=3; while [ "$i" -lt $((n + 3)) ]; do '
    'closed="$closed $i>&-"; i=$((i + 1)); done; '
    'eval "\\"\\$py\\" -I -B main.py $closed"; rc=$?; i=3; for f in "$@"; do '
    'if [ -f "$f" ] && [ ! -L "$f" ]; then eval "cat -- \\"\\$f\\" >&$i"; fi; i=$((i + 1)); '
    "done; exit $rc"
)


def run_python(
    code: str,
    *,
    timeout_s: float = 60.0,
    cpu_s: float | None = None,
    memory_mb: int = 4096,
    file_size_mb: int = 64,
    disk_mb: int = 512,
    max_processes: int = 16,
    max_open_files: int = 256,
    files: Mapping[str, str | bytes] | None = None,
    env: Mapping[str, str] | None = None,
    network: bool = False,
    python: str | None = None,
    collect: Sequence[str] = (),
    unsafe_no_isolation: bool | None = None,
) -> SandboxResult:
    """Run Python source in a sandboxed subprocess.

    Args:
        code: The script, run as ``__main__`` (``main.py`` in the work directory).
        timeout_s: Wall-clock limit; the whole process tree is killed after it.
        cpu_s: CPU-time limit (default: ``timeout_s`` + 1 s, so that a single-threaded
            runaway meets the wall-clock limit first and is reported as ``timeout``).
        memory_mb: Address-space limit.
        file_size_mb: Largest file (captured output and collected files included).
        disk_mb: Size of the work directory's tmpfs (and, separately, of ``/tmp``).
        max_processes: Processes/threads allowed (pids cgroup and ``RLIMIT_NPROC``).
        max_open_files: Open file descriptors.
        files: Extra files to place in the work directory (name -> content).
        env: Extra environment variables (the environment is otherwise scrubbed).
        network: Keep the network (default ``False``: an empty network namespace).
        python: Interpreter (default: this one).
        collect: Files (at most 7) to read back from the work directory after the run (each
            at most ``file_size_mb``; missing ones are left out). Their content is untrusted.
        unsafe_no_isolation: Run without the bubblewrap boundary when it is unavailable
            (default: only when the environment variable :data:`UNSAFE_ENV` is set to
            :data:`UNSAFE_VALUE`). Model code then runs on the host; every result says so in
            ``isolation["boundary"]`` and the log warns.

    Returns:
        A :class:`SandboxResult`; a script that fails, times out or breaks a rule gives a
        non-zero ``returncode`` (and ``ok`` is ``False``), never an exception here.

    Raises:
        ValueError: Bad limits or file names.
        SandboxUnavailableError: No boundary on this machine and no explicit opt-in.
    """
    global _WARNED
    problem = _bwrap_problem()
    if problem is not None:
        if not _unsafe_opt_in(unsafe_no_isolation):
            raise SandboxUnavailableError(
                f"sandbox: no isolation boundary for model code ({problem}); install bubblewrap "
                "(apt-get install bubblewrap, dnf install bubblewrap) with user namespaces "
                "enabled, or run SciCode in Inspect with -T sandbox=docker; to run it on this "
                f"host unisolated anyway set {UNSAFE_ENV}={UNSAFE_VALUE}"
            )
        if not _WARNED:
            _LOG.warning("sandbox: model code runs on this host WITHOUT isolation (%s)", problem)
            _WARNED = True
    bwrap = shutil.which("bwrap") if problem is None else None
    run_uid = _sandbox_uid(python or sys.executable) if bwrap else None
    if timeout_s <= 0 or memory_mb <= 0 or file_size_mb <= 0 or max_processes < 1 or disk_mb <= 0:
        raise ValueError("run_python: limits must be positive")
    collect = list(collect)
    if len(collect) > _MAX_COLLECT:
        raise ValueError(f"run_python: at most {_MAX_COLLECT} files to collect")
    script = "main.py"
    inputs: dict[str, bytes] = {script: code.encode("utf-8")}
    for name, content in (files or {}).items():
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts or name == script:
            raise ValueError(f"run_python: bad file name {name!r}")
        inputs[name] = content if isinstance(content, bytes) else content.encode("utf-8")
    for name in collect:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"run_python: bad file name to collect {name!r}")
    # The default CPU limit sits a second above the wall-clock limit: equal limits race, and
    # which signal lands first would decide whether a busy loop reads ``timeout`` or ``cpu_time``.
    cpu_limit = int(max(1, round(cpu_s))) if cpu_s is not None else math.ceil(timeout_s) + 1
    outdir = Path(tempfile.mkdtemp(prefix="metacog-sandbox-out-")).resolve()
    root = None if bwrap else Path(tempfile.mkdtemp(prefix="metacog-sandbox-")).resolve()
    cgroup = _make_cgroup(max_processes)
    isolation: dict[str, str] = {}
    fds: list[int] = []
    try:
        child_env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": _WORK if bwrap else str(root),
            "TMPDIR": "/tmp" if bwrap else str(root),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "NUMEXPR_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            **(env or {}),
        }
        uid = os.geteuid() if run_uid is None else run_uid
        if run_uid is not None:
            nproc = max_processes + 2
        else:
            nproc = _user_process_count(uid) + max_processes if uid != 0 else max_processes
        libc = _libc() if not network and not bwrap else None
        netns_marker = outdir / "netns-failed"
        cgroup_procs = str(cgroup / "cgroup.procs") if cgroup is not None else None
        mem = memory_mb * 1024 * 1024
        fsize = file_size_mb * 1024 * 1024

        def preexec() -> None:  # runs in the child between fork and exec
            os.setsid()
            if cgroup_procs is not None:
                fd = os.open(cgroup_procs, os.O_WRONLY)
                try:
                    os.write(fd, str(os.getpid()).encode())
                finally:
                    os.close(fd)
            if libc and libc.unshare(_CLONE_NEWNET) != 0:
                fd = os.open(str(netns_marker), os.O_WRONLY | os.O_CREAT, 0o600)
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 1))
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_open_files, max_open_files))
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            _drop_to(run_uid)

        interpreter = python or sys.executable
        collect_paths = [outdir / f"collect-{k}" for k in range(len(collect))]
        if bwrap:
            # descriptors 3..9 are the collected files; the inputs and the filter come after
            for path in collect_paths:
                fds.append(_high(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)))
            binds, inside = _python_binds(interpreter)
            cmd = [bwrap, *_bwrap_base(), *binds]
            if network:  # otherwise --unshare-all gave it an empty network namespace
                cmd.append("--share-net")
            for mount in (_WORK, "/tmp"):
                cmd += ["--size", str(disk_mb * 1024 * 1024), "--tmpfs", mount]
            made = {""}
            for name, content in inputs.items():
                parent = ""
                for part in Path(name).parts[:-1]:
                    parent = f"{parent}/{part}"
                    if parent not in made:
                        cmd += ["--dir", _WORK + parent]
                        made.add(parent)
                fd = _memfd(content)
                fds.append(fd)
                cmd += ["--file", str(fd), f"{_WORK}/{name}"]
            bpf = _seccomp_filter()
            if bpf is not None:
                fd = _memfd(bpf)
                fds.append(fd)
                cmd += ["--seccomp", str(fd)]
            cmd += ["--chdir", _WORK, "--", "/bin/sh", "-c", _WRAPPER, "sh", inside]
            cmd += [str(len(collect)), *collect]
        else:
            assert root is not None
            for name, content in inputs.items():
                target = root / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            cmd = [interpreter, "-I", "-B", script]
        # map the collected-file descriptors onto 3.. in the child (Popen keeps pass_fds open)
        collect_fds = fds[: len(collect)] if bwrap else []
        other_fds = fds[len(collect) :] if bwrap else []

        def preexec_all() -> None:  # every source descriptor is >= 10, so none is overwritten
            for k, fd in enumerate(collect_fds):
                os.dup2(fd, 3 + k)
            preexec()

        start = time.monotonic()
        timed_out = False
        with (outdir / "stdout").open("wb") as out, (outdir / "stderr").open("wb") as err:
            try:
                proc = subprocess.Popen(
                    cmd,
                    cwd=str(root) if root is not None else "/",
                    env=child_env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    preexec_fn=preexec_all,
                    close_fds=True,
                    pass_fds=tuple(other_fds) + tuple(range(3, 3 + len(collect_fds))),
                )
            except (OSError, subprocess.SubprocessError) as exc:
                return SandboxResult(
                    None,
                    "",
                    f"sandbox: could not start: {exc}",
                    False,
                    "start_failed",
                    0.0,
                    isolation,
                )
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)  # bwrap; its PID namespace goes with it
                _remove_cgroup(cgroup)
                cgroup = None
                proc.wait()
        duration = time.monotonic() - start
        stdout = _head(outdir / "stdout", _MAX_OUTPUT)
        stderr = _head(outdir / "stderr", _MAX_OUTPUT)
        rc = proc.returncode
        if bwrap and rc is not None and 128 < rc < 128 + 65:  # a signal reads as 128+n
            rc = -(rc - 128)
        if bwrap:
            isolation["boundary"] = (
                f"bwrap (user/mount/pid/net/ipc/uts/cgroup namespaces, no capabilities, "
                f"no_new_privs; host uid {uid if run_uid is not None else 'of the caller'}, "
                "uid 65534 inside)"
            )
            isolation["seccomp"] = "libseccomp filter" if _seccomp_filter() else "none"
            isolation["filesystem"] = (
                f"new root: read-only /usr and interpreter, private tmpfs work dir and /tmp "
                f"({disk_mb} MB each)"
            )
        else:
            isolation["boundary"] = f"NONE (unsafe opt-in, model code ran on the host: {problem})"
            isolation["filesystem"] = "host temp dir as cwd (NOT isolated)"
        if network:
            isolation["network"] = "allowed"
        elif bwrap or (libc and not netns_marker.exists()):
            isolation["network"] = "namespace"
        else:
            isolation["network"] = "NOT isolated (no network namespace available)"
        isolation["processes"] = ("pid namespace+" if bwrap else "") + (
            "cgroup+rlimit" if cgroup_procs is not None else "rlimit"
        )
        reason = None
        if timed_out:
            reason = "timeout"
        elif rc is not None and rc < 0:
            sig = -rc
            reason = {signal.SIGXCPU: "cpu_time", signal.SIGXFSZ: "file_size"}.get(
                sig, f"signal:{_signal_name(sig)}"
            )
            if sig == signal.SIGKILL and duration >= cpu_limit:
                reason = "cpu_time"
        elif rc and "MemoryError" in stderr:
            reason = "memory"
        elif rc and ("[Errno 27] File too large" in stderr or "[Errno 28]" in stderr):
            reason = "file_size"  # Python ignores SIGXFSZ; 28: the tmpfs is full
        collected = {}
        for k, name in enumerate(collect):
            if bwrap:  # an empty file reads as missing
                if collect_paths[k].stat().st_size > 0:
                    collected[name] = _head(collect_paths[k], fsize)
            else:
                assert root is not None
                path = (root / name).resolve()
                if root in path.parents and path.is_file() and not path.is_symlink():
                    collected[name] = _head(path, fsize)
        return SandboxResult(rc, stdout, stderr, timed_out, reason, duration, isolation, collected)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        _remove_cgroup(cgroup)
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(outdir, ignore_errors=True)
