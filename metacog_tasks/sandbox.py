"""Sandboxed execution of model-written Python (SciCode).

Model code is untrusted. :func:`run_python` runs it in a fresh interpreter with layered
containment, and reports which layers were active (``SandboxResult.isolation``):

* **Limits** (``setrlimit``): CPU seconds, address space, file size, open files, no core files,
  and a process count (``RLIMIT_NPROC``; the kernel ignores it for root, hence the next layers).
* **Processes**: a pids cgroup with ``pids.max`` when the cgroup filesystem is writable
  (kernel-enforced, root included); the child leads its own session and process group, and the
  whole group (and cgroup) is killed on timeout and after every run.
* **Network**: a new, empty network namespace (``unshare(CLONE_NEWNET)``, no interfaces up)
  when the platform allows it; otherwise only the in-process block below, and
  ``isolation["network"]`` says so.
* **In-process policy** (a ``sys.addaudithook`` installed before the code runs): opening files
  for writing outside the sandbox directory, reading outside it and the Python installation,
  listing other directories, creating processes (``fork``, ``subprocess``, ``os.system``,
  ``exec``), sockets, signals to other processes and ``ctypes`` access to libc's process and
  socket calls raise ``PermissionError``.
* **Files and environment**: its own temporary directory as working directory, ``HOME`` and
  ``TMPDIR`` (removed afterwards), a scrubbed environment, ``python -I -B`` (no user site,
  no ``PYTHON*`` variables, no bytecode files), stdin closed; output captured to files outside
  the sandbox directory (so ``RLIMIT_FSIZE`` also caps output floods) and truncated.

Building a script (e.g. :func:`metacog_tasks.benchmarks.scicode.build_test_script`) and running
it are separate steps, so a harness can hand the same script to another sandbox (e.g. an Inspect
docker sandbox).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
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
_BOOT_NAME = "_metacog_sandbox_boot.py"

# The in-process policy, written into the sandbox directory and run with ``python -I -B``.
# It takes the sandbox root and the script name on argv, installs the audit hook, then runs
# the script as __main__.
_BOOT = r"""
import os, sys

_ROOT = os.path.realpath(sys.argv[1])
_SCRIPT = os.path.join(_ROOT, sys.argv[2])
_READ = tuple(sorted({os.path.realpath(p) for p in (
    sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
    *[p for p in sys.path if p and os.path.isabs(p)])}))
_READ_FILES = ("/dev/null", "/dev/urandom", "/dev/random", "/etc/localtime")
_READ_TREES = ("/usr/share/zoneinfo", "/proc/self", f"/proc/{os.getpid()}",
               "/sys/devices/system/cpu", "/proc/cpuinfo", "/proc/meminfo")
_PROCESS = {"os.system", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn",
            "subprocess.Popen", "os.kill", "os.killpg", "pty.spawn", "os.setsid", "os.startfile"}
_MODIFY = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
           "os.symlink", "os.truncate", "os.utime", "shutil.rmtree", "shutil.copyfile",
           "shutil.copymode", "shutil.copystat", "shutil.move", "os.chflags", "os.lchflags"}
_LIST = {"os.listdir", "os.scandir", "glob.glob", "os.chdir"}
_DLSYM_DENY = {"fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execvpe",
               "execl", "execlp", "fexecve", "system", "popen", "posix_spawn", "posix_spawnp",
               "socket", "connect", "bind", "unshare", "setns", "ptrace", "kill", "killpg",
               "setsid", "syscall", "mount", "umount", "chroot", "open", "open64", "openat",
               "openat64", "fopen", "fopen64", "creat", "unlink", "rename", "daemon"}
_O_WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _inside(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _real(path):
    if isinstance(path, int):
        return None
    try:
        path = os.fsdecode(path)
    except TypeError:
        return None
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    return os.path.realpath(path)


def _deny(what):
    raise PermissionError(f"sandbox: {what} is blocked")


def _hook(event, args):
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        real = _real(path)
        if real is None or _inside(real, (_ROOT,)):
            return
        write = isinstance(flags, int) and bool(flags & _O_WRITE)
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            write = True
        if write:
            _deny(f"writing outside the sandbox directory ({real})")
        if real in _READ_FILES or _inside(real, _READ + _READ_TREES):
            return
        _deny(f"reading outside the sandbox directory ({real})")
    elif event in _PROCESS:
        _deny(f"process control ({event})")
    elif event.startswith("socket."):
        _deny(f"network access ({event})")
    elif event in _MODIFY:
        for arg in args:
            real = _real(arg) if isinstance(arg, (str, bytes, os.PathLike)) else None
            if real is not None and not _inside(real, (_ROOT,)):
                _deny(f"{event} outside the sandbox directory ({real})")
    elif event in _LIST:
        real = _real(args[0]) if args and args[0] is not None else os.getcwd()
        if real is not None and not _inside(real, (_ROOT,) + _READ + _READ_TREES):
            _deny(f"{event} outside the sandbox directory ({real})")
    elif event == "ctypes.dlopen":
        name = args[0] if args else None
        if name is None:
            return
        real = _real(name) if os.sep in os.fsdecode(name) else None
        if real is None or not _inside(real, _READ):
            _deny(f"loading native library {name!r}")
    elif event == "ctypes.dlsym":
        name = args[1] if len(args) > 1 else None
        if isinstance(name, (bytes, str)) and os.fsdecode(name) in _DLSYM_DENY:
            _deny(f"native call {os.fsdecode(name)!r}")


sys.addaudithook(_hook)
del sys.argv[:2]
sys.argv[0] = _SCRIPT
import runpy  # noqa: E402

runpy.run_path(_SCRIPT, run_name="__main__")
"""


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


def _sandbox_uid() -> int | None:
    """The host uid the boundary runs as: a fresh unprivileged one when the caller is root."""
    # Dropping root needs the interpreter readable by others (a pyenv under /root is not), so
    # the caller's uid is kept for now; bwrap drops every capability either way.
    if os.geteuid() != 0 or os.environ.get("METACOG_SANDBOX_DROP_UID") != "1":
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
        uid = _sandbox_uid()
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
        "--tmpfs",
        "/tmp",
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


def isolation_support() -> dict[str, str]:
    """What containment this machine offers (without running anything)."""
    libc = _libc()
    return {
        "network": "namespace (if unshare succeeds)" if libc else "audit-hook",
        "processes": "cgroup"
        if _cgroup_root() is not None
        else ("rlimit" if os.geteuid() != 0 else "audit-hook (root ignores RLIMIT_NPROC)"),
        "filesystem": "private temp dir + audit-hook",
    }


# ---------------------------------------------------------------------- the run
def _head(path: Path, limit: int) -> str:
    """The first ``limit`` bytes of a file as text (never the whole file in memory)."""
    with path.open("rb") as fh:
        return fh.read(limit).decode("utf-8", "replace")


def _python_binds(interpreter: str) -> list[str]:
    """Read-only binds of the interpreter's installation outside ``/usr`` (e.g. a venv)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(interpreter)}
    roots.add(os.path.dirname(os.path.realpath(interpreter)))
    args: list[str] = []
    for r in sorted({os.path.realpath(p) for p in roots if p}):
        if r == "/usr" or r.startswith("/usr/") or not os.path.isdir(r):
            continue
        args += ["--ro-bind", r, r]
    return args


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)


def run_python(
    code: str,
    *,
    timeout_s: float = 60.0,
    cpu_s: float | None = None,
    memory_mb: int = 4096,
    file_size_mb: int = 64,
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
        code: The script, run as ``__main__``.
        timeout_s: Wall-clock limit; the whole process group is killed after it.
        cpu_s: CPU-time limit (default: ``timeout_s`` + 1 s, so that a single-threaded
            runaway meets the wall-clock limit first and is reported as ``timeout``).
        memory_mb: Address-space limit.
        file_size_mb: Largest file (and captured output) the script may write.
        max_processes: Processes/threads allowed (pids cgroup and ``RLIMIT_NPROC``).
        max_open_files: Open file descriptors.
        files: Extra files to place in the sandbox directory (name -> content).
        env: Extra environment variables (the environment is otherwise scrubbed).
        network: Keep the network (default ``False``: new network namespace + audit block).
        python: Interpreter (default: this one).
        collect: Files to read back from the sandbox directory before it is removed (each at
            most ``file_size_mb``; missing ones are left out).
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
    run_uid = _sandbox_uid() if bwrap else None
    if timeout_s <= 0 or memory_mb <= 0 or file_size_mb <= 0 or max_processes < 1:
        raise ValueError("run_python: limits must be positive")
    # The default CPU limit sits a second above the wall-clock limit: equal limits race, and
    # which signal lands first would decide whether a busy loop reads ``timeout`` or ``cpu_time``.
    cpu_limit = int(max(1, round(cpu_s))) if cpu_s is not None else math.ceil(timeout_s) + 1
    root = Path(tempfile.mkdtemp(prefix="metacog-sandbox-")).resolve()
    outdir = Path(tempfile.mkdtemp(prefix="metacog-sandbox-out-")).resolve()
    cgroup = _make_cgroup(max_processes)
    isolation: dict[str, str] = {}
    try:
        script = "main.py"
        (root / script).write_text(code, encoding="utf-8")
        (root / _BOOT_NAME).write_text(_BOOT, encoding="utf-8")
        for name, content in (files or {}).items():
            target = (root / name).resolve()
            if root not in target.parents or name in (script, _BOOT_NAME):
                raise ValueError(f"run_python: bad file name {name!r}")
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        child_env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(root),
            "TMPDIR": str(root),
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
        if run_uid is not None:  # the boundary's own uid owns the work directory, nothing else
            for path in [root, *root.rglob("*")]:
                os.chown(path, run_uid, run_uid, follow_symlinks=False)
        # RLIMIT_NPROC counts every process of the user, so leave room for the existing ones
        # (a fresh uid has none; bwrap itself takes two).
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
        cmd = [interpreter, "-I", "-B", str(root / _BOOT_NAME), str(root), script]
        if bwrap:
            cmd = [bwrap, *_bwrap_base(), *_python_binds(interpreter)]
            if network:  # otherwise --unshare-all gave it an empty network namespace
                cmd.append("--share-net")
            cmd += ["--bind", str(root), str(root), "--chdir", str(root), "--"]
            cmd += [interpreter, "-I", "-B", str(root / _BOOT_NAME), str(root), script]
        start = time.monotonic()
        timed_out = False
        with (outdir / "stdout").open("wb") as out, (outdir / "stderr").open("wb") as err:
            try:
                proc = subprocess.Popen(
                    cmd,
                    cwd=root,
                    env=child_env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    preexec_fn=preexec,
                    close_fds=True,
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
                    os.killpg(proc.pid, signal.SIGKILL)  # the group, strays included
                _remove_cgroup(cgroup)
                cgroup = None
                proc.wait()
        duration = time.monotonic() - start
        stdout = _head(outdir / "stdout", _MAX_OUTPUT)
        stderr = _head(outdir / "stderr", _MAX_OUTPUT)
        rc = proc.returncode
        if bwrap and rc is not None and 128 < rc < 128 + 65:  # bwrap reports a signal as 128+n
            rc = -(rc - 128)
        if bwrap:
            isolation["boundary"] = (
                f"bwrap (user/mount/pid/net/ipc/uts namespaces; host uid "
                f"{uid if run_uid is not None else 'of the caller'}, uid 65534 inside)"
            )
        else:
            isolation["boundary"] = f"NONE (unsafe opt-in, model code ran on the host: {problem})"
        if network:
            isolation["network"] = "allowed"
        elif bwrap or (libc and not netns_marker.exists()):
            isolation["network"] = "namespace"
        else:
            isolation["network"] = "audit-hook (no network namespace available)"
        isolation["processes"] = (
            "cgroup+audit-hook"
            if cgroup_procs is not None
            else ("rlimit+audit-hook" if uid != 0 else "audit-hook (root ignores RLIMIT_NPROC)")
        )
        isolation["filesystem"] = "private temp dir + audit-hook"
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
        elif rc and "[Errno 27] File too large" in stderr:  # Python ignores SIGXFSZ
            reason = "file_size"
        collected = {}
        for name in collect:
            path = (root / name).resolve()
            if root in path.parents and path.is_file() and not path.is_symlink():
                collected[name] = _head(path, fsize)
        return SandboxResult(rc, stdout, stderr, timed_out, reason, duration, isolation, collected)
    finally:
        _remove_cgroup(cgroup)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(outdir, ignore_errors=True)
