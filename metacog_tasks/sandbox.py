"""Sandboxed execution of model-written Python (SciCode).

Model code is untrusted. :func:`run_python` runs it behind an operating-system boundary,
bubblewrap (``bwrap``), and reports what was active in ``SandboxResult.isolation``:

* **Namespaces**: new user, mount, PID, network, IPC, UTS and cgroup namespaces; uid 65534
  inside, every capability dropped, ``no_new_privs``, no nested user namespaces, its own
  session (no terminal injection). The PID namespace dies with the run: nothing is left behind.
* **Host uid**: never root. A caller running as root starts the boundary as a fresh
  unprivileged uid; an interpreter kept where other users cannot reach it (a pyenv under
  ``/root``, mode 700) is shown to it through a private mount namespace of the launcher.
* **Files**: a new, read-only root holding read-only ``/usr`` (and the merged-usr links), the
  interpreter's installation (a venv at a neutral path), a private ``/proc`` whose ``/proc/sys``
  is read-only, a read-only minimal ``/dev`` with a size-capped ``/dev/shm``, and a private
  writable work directory ``/sandbox`` plus ``/tmp``, each a size-capped tmpfs. The caller's
  files, the project checkout, ``/root``, ``/home``, the rest of ``/tmp`` and the host cgroup
  tree are not in it. Input files enter through file descriptors (``bwrap --file``); standard
  output, standard error and the files named in ``collect`` leave through pipes that the caller
  drains with a cap: nothing the run writes lands on the host's disk.
* **System calls** (when libseccomp is present): a seccomp filter denies namespace creation,
  ``mount`` and friends, ``ptrace`` and other calls on other processes, keyrings, ``bpf``,
  ``perf_event_open``, ``userfaultfd``, ``io_uring`` and AIO, ``memfd_create``, SysV IPC and
  POSIX message queues, NUMA placement, ``cachestat``, landlock, kernel modules and similar
  calls (:data:`_DENIED`, each with its reason), and sockets of any family but ``AF_UNIX``.
* **Limits**: ``setrlimit`` (CPU seconds, address space per process, file size, open files,
  processes, no core files); a pids and a memory cgroup where one is writable (the memory
  cgroup also bounds tmpfs pages and kernel memory); the wall-clock timeout kills bwrap, whose
  PID namespace takes every process of the run with it. Output is read with a cap, never whole.

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
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
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
    "unsafe_opt_in",
]

#: Environment variable (with exactly :data:`UNSAFE_VALUE`) that lets model code run on the
#: host without the bubblewrap boundary. Named so that nobody sets it by accident.
UNSAFE_ENV = "METACOG_SANDBOX_UNSAFE_NO_ISOLATION"
UNSAFE_VALUE = "yes-run-untrusted-code-on-this-host"
_LOG = logging.getLogger(__name__)

_CLONE_NEWNET = 0x40000000
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_MAX_OUTPUT = 1_000_000
_WORK = "/sandbox"
_SHM_MB = 64
_MAX_COLLECT = 7  # descriptors 3..9 carry the collected files out
_READ_CHUNK = 1 << 16


@dataclasses.dataclass(frozen=True)
class SandboxResult(Result):
    """Outcome of one sandboxed run.

    Attributes:
        returncode: Exit status (negative: killed by that signal); ``None`` if it never ran.
        stdout: Captured standard output (truncated to 1 MB).
        stderr: Captured standard error (truncated to 1 MB).
        timed_out: The wall-clock limit was hit and the process group was killed.
        killed_reason: ``timeout``, ``cpu_time``, ``file_size`` (a file or an output stream
            over its cap), ``memory``, ``signal:<NAME>``, ``start_failed`` or ``None``.
        duration: Wall-clock seconds.
        isolation: Which containment layers were active (``boundary``, ``network``, ...).
        files: The files named in ``collect`` that the script left in its directory (text);
            one over its cap is left out.
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


def unsafe_opt_in(flag: bool | None = None) -> bool:
    """Whether running model code without a boundary was explicitly allowed.

    Args:
        flag: An explicit choice (``None``: read :data:`UNSAFE_ENV`, which must hold exactly
            :data:`UNSAFE_VALUE`).
    """
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
            _LIBC.mount.argtypes = [
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_ulong,
                ctypes.c_char_p,
            ]
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC


def _blocked_by(path: str) -> str | None:
    """The topmost folder on the way to ``path`` that other users cannot enter, if any."""
    real = Path(os.path.realpath(path))
    for d in reversed([real, *real.parents]):  # from "/" down
        try:
            if not d.stat().st_mode & 0o001:
                return str(d)
        except OSError:
            return str(d)
    return None


def _sandbox_uid() -> int | None:
    """The host uid the boundary runs as: a fresh unprivileged one when the caller is root
    (never root itself: uid 0 outside bypasses ``RLIMIT_NPROC``, owns ``/proc/sys`` and shares
    root's keyrings), else ``None`` (the caller's own uid, mapped to 65534 inside)."""
    if os.geteuid() != 0:
        return None
    return secrets.randbelow(1_000_000_000) + 1_000_000


def _drop_to(uid: int | None) -> None:
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


class _Exposure:
    """For a root caller: folders the unprivileged boundary must read but cannot reach
    (e.g. ``/root/.pyenv/...`` under a mode-700 ``/root``).

    In the launcher, between fork and exec and still as root, a private mount namespace
    covers each blocking folder with an empty tmpfs (mode 755) and binds the needed folders
    back at their own paths (from descriptors opened in that namespace just before); bwrap,
    started afterwards as the unprivileged uid, then reaches them. Nothing else under the
    blocking folder is visible to it, and the host's mounts are untouched (the namespace is
    private to the launcher).
    """

    def __init__(self, paths: Sequence[str]) -> None:
        self.groups: dict[str, list[str]] = {}
        for path in sorted({os.path.realpath(p) for p in paths}):
            blocker = _blocked_by(path)
            if blocker is None:
                continue
            if blocker == "/" or blocker == path:
                raise SandboxUnavailableError(
                    f"sandbox: {path} cannot be shown to an unprivileged user (mode of "
                    f"{blocker}); make it readable by others (chmod o+rX)"
                )
            inner = self.groups.setdefault(blocker, [])
            if not any(path.startswith(p + "/") for p in inner):
                inner.append(path)

    def __bool__(self) -> bool:
        return bool(self.groups)

    def apply(self) -> None:  # in the launcher, between fork and exec, as root
        libc = _libc()

        def check(rc: int, what: str) -> None:
            if rc != 0:
                raise OSError(ctypes.get_errno(), f"sandbox launcher: {what}")

        check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
        flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
        fds = {p: os.open(p, flags) for paths in self.groups.values() for p in paths}
        for blocker, paths in self.groups.items():
            check(
                libc.mount(
                    b"tmpfs", blocker.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=0755"
                ),
                f"tmpfs on {blocker}",
            )
            for path in paths:
                cur = blocker
                for part in Path(path).relative_to(blocker).parts:
                    cur = f"{cur}/{part}"
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(cur)
                        os.chmod(cur, 0o755)  # only what was just made (umask-proof)
                src = f"/proc/self/fd/{fds[path]}".encode()
                check(libc.mount(src, path.encode(), None, _MS_BIND | _MS_REC, None), path)


# ---------------------------------------------------------------------- cgroups
def _own_cgroups() -> dict[str, str]:
    """Controller (``pids``, ``memory``; ``""`` for cgroup v2) -> this process's cgroup path."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    return out


def _cgroup_parents() -> dict[str, Path]:
    """Writable cgroup folders under this process's own cgroups to create a run's cgroup in:
    ``pids`` and ``memory`` (v1 hierarchies), or ``v2`` (one folder with both controllers
    enabled for its children)."""
    own = _own_cgroups()
    found: dict[str, Path] = {}
    for ctl in ("pids", "memory"):
        base = Path("/sys/fs/cgroup") / ctl
        if ctl in own and (base / "cgroup.procs").exists():
            d = base / own[ctl].lstrip("/")
            if (d / "cgroup.procs").exists() and os.access(d, os.W_OK):
                found[ctl] = d
    if "" in own and not found:
        for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
            d = base / own[""].lstrip("/")
            sub = d / "cgroup.subtree_control"
            if not (base / "cgroup.controllers").exists() or not sub.exists():
                continue
            enabled = sub.read_text().split()
            if "pids" in enabled and os.access(d, os.W_OK):
                found["v2"] = d
                break
    return found


class _Cgroup:
    """The run's own cgroups (pids, and memory where available); removed after the run."""

    PREFIX = "metacog-sandbox-"

    def __init__(self, max_processes: int, memory_bytes: int) -> None:
        self.dirs: list[Path] = []
        self.memory: Path | None = None
        name = f"{self.PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        for ctl, parent in _cgroup_parents().items():
            self.sweep(parent)
            path = parent / name
            try:
                path.mkdir()
            except OSError:
                continue
            self.dirs.append(path)
            with contextlib.suppress(OSError):
                if ctl != "memory":
                    (path / "pids.max").write_text(str(max_processes))
                if ctl == "memory":
                    (path / "memory.limit_in_bytes").write_text(str(memory_bytes))
                    self.memory = path
                elif ctl == "v2" and (path / "memory.max").exists():
                    (path / "memory.max").write_text(str(memory_bytes))
                    self.memory = path
                    (path / "memory.swap.max").write_text("0")
        self.procs = [str(d / "cgroup.procs") for d in self.dirs]

    @property
    def pids(self) -> bool:
        return any((d / "pids.max").exists() for d in self.dirs)

    @classmethod
    def sweep(cls, parent: Path) -> None:
        """Remove the empty cgroups that runs of a process no longer alive left in ``parent``
        (a caller killed before its cleanup). A cgroup holding processes cannot be removed, and
        one whose creator still lives is left alone, so no run in progress is touched."""
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                pid = entry.name[len(cls.PREFIX) :].split("-", 1)[0]
                if not entry.name.startswith(cls.PREFIX) or not pid.isdigit():
                    continue
                try:
                    os.kill(int(pid), 0)
                    continue  # the creator lives (or another process has its pid): keep
                except ProcessLookupError:
                    pass
                except (PermissionError, OverflowError):
                    continue
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)

    def join(self) -> None:  # in the launcher, between fork and exec
        pid = str(os.getpid()).encode()
        for procs in self.procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def oom_killed(self) -> bool:
        if self.memory is None:
            return False
        for name in ("memory.oom_control", "memory.events"):
            with contextlib.suppress(OSError, ValueError):
                for line in (self.memory / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and int(value) > 0:
                        return True
        return False

    def kill(self) -> None:
        """SIGKILL every process of the run (they cannot leave these cgroups: no /sys)."""
        for path in self.dirs:
            try:
                pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
            except OSError:
                continue
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        for path in self.dirs:
            for _ in range(100):
                self.kill()
                try:
                    path.rmdir()
                    break
                except OSError as exc:
                    if exc.errno == errno.ENOENT:
                        break
                    time.sleep(0.02)
        self.dirs = []


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
#: System calls the filter denies (``EPERM``), each with the reason; the threat model in
#: docs/benchmarks.md lists them too. Ones a kernel lacks are skipped.
_DENIED: dict[str, str] = {
    # namespaces and mounts: the boundary's own walls
    **dict.fromkeys(
        ("unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount"),
        "namespaces and mounts",
    ),
    **dict.fromkeys(
        ("open_tree", "open_tree_attr", "fsopen", "fsconfig", "fsmount", "fspick"),
        "namespaces and mounts",
    ),
    **dict.fromkeys(("mount_setattr", "statmount", "listmount"), "namespaces and mounts"),
    # other processes' memory, descriptors and state
    **dict.fromkeys(
        ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"),
        "other processes",
    ),
    **dict.fromkeys(("process_madvise", "process_mrelease"), "other processes"),
    # kernel objects shared beyond the run: keyrings, eBPF, perf, fanotify, LSM state
    **dict.fromkeys(("keyctl", "add_key", "request_key"), "kernel keyrings"),
    "bpf": "eBPF programs",
    "perf_event_open": "perf counters (side channels, kernel attack surface)",
    "userfaultfd": "stalls kernel page faults (exploit primitive)",
    "fanotify_init": "file system event monitoring",
    **dict.fromkeys(
        ("lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules"), "security modules"
    ),
    **dict.fromkeys(
        ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"),
        "landlock: kernel attack surface, nothing the code needs",
    ),
    # the machine itself
    **dict.fromkeys(
        ("init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load"),
        "kernel modules and kexec",
    ),
    **dict.fromkeys(("open_by_handle_at", "name_to_handle_at"), "file handles bypass paths"),
    **dict.fromkeys(
        ("acct", "swapon", "swapoff", "reboot", "quotactl", "quotactl_fd", "syslog"),
        "machine administration",
    ),
    **dict.fromkeys(("iopl", "ioperm", "modify_ldt"), "hardware ports, segment tables"),
    "personality": "turns off address randomisation",
    "lookup_dcookie": "kernel profiling",
    "uselib": "obsolete loader",
    "remap_file_pages": "deprecated, emulated mapping",
    # asynchronous I/O: io_uring, and AIO contexts (a machine-wide limit, fs.aio-max-nr)
    **dict.fromkeys(("io_uring_setup", "io_uring_enter", "io_uring_register"), "io_uring"),
    **dict.fromkeys(
        ("io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents"),
        "AIO contexts drain the machine-wide fs.aio-max-nr",
    ),
    # memory outside RLIMIT_AS and the tmpfs caps, and NUMA placement of memory
    **dict.fromkeys(("memfd_create", "memfd_secret"), "anonymous files outside RLIMIT_AS"),
    **dict.fromkeys(("shmget", "shmat", "shmctl", "shmdt"), "SysV shared memory"),
    **dict.fromkeys(
        ("mbind", "set_mempolicy", "set_mempolicy_home_node", "migrate_pages", "move_pages"),
        "NUMA memory placement (and other processes' pages)",
    ),
    "cachestat": "page cache residency of files (a side channel)",
    # message queues and semaphores kept by the kernel (limits per user and per namespace)
    **dict.fromkeys(
        ("msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semctl", "semtimedop"),
        "SysV message queues and semaphores",
    ),
    **dict.fromkeys(
        ("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify"),
        "POSIX message queues",
    ),
    **dict.fromkeys(("mq_getsetattr",), "POSIX message queues"),
    # socketcall multiplexes every socket call (32-bit ABIs): its family cannot be filtered
    "socketcall": "socket calls whose family the filter cannot see",
}
_DENIED_SYSCALLS = tuple(_DENIED)
#: The only socket family allowed (``socket`` and ``socketpair`` of any other fail with
#: ``EPERM``, an answer the kernel itself gives none of the families below): local pipes
#: between the run's own processes. No AF_INET/AF_INET6 (an empty
#: network namespace anyway), no AF_VSOCK (its port space is the VM's, shared with the caller),
#: no AF_NETLINK, AF_PACKET, AF_ALG, AF_BLUETOOTH or any family a kernel may add.
_SOCKET_FAMILY = 1  # AF_UNIX
_CLONE_NS_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


_SECCOMP_UNKNOWN: list[str] = []  # denied calls the installed libseccomp cannot name


def _seccomp_description() -> str:
    """``isolation["seccomp"]``: the filter, and the denied calls it could not include."""
    if _seccomp_filter() is None:
        return "none (no libseccomp)"
    if not _SECCOMP_UNKNOWN:
        return "libseccomp filter"
    unknown = ", ".join(_SECCOMP_UNKNOWN)
    return f"libseccomp filter (unknown to this libseccomp, not filtered: {unknown})"


@functools.cache
def _seccomp_filter() -> bytes | None:
    """A BPF program (built with libseccomp) denying :data:`_DENIED_SYSCALLS`, ``clone``
    with namespace flags (``clone3`` answers ``ENOSYS`` so libc falls back to ``clone``) and
    sockets of any family but ``AF_UNIX``; system calls of another ABI (i386, x32) kill the
    thread (libseccomp's default); ``None`` when libseccomp is not installed."""
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
            if nr == -1:  # a call newer than this libseccomp: left unfiltered, and said so
                _SECCOMP_UNKNOWN.append(name)
            if nr < 0:
                return  # not on this architecture (a pseudo number), or unknown
            arr = (_ArgCmp * len(cmps))(*cmps) if cmps else None
            if lib.seccomp_rule_add_array(ctx, action, nr, len(cmps or ()), arr) != 0:
                raise OSError(f"seccomp: cannot add a rule for {name}")

        for name in _DENIED_SYSCALLS:
            rule(eperm, name)
        for name in ("socket", "socketpair"):  # SCMP_CMP_NE (1) on the family (arg 0)
            rule(eperm, name, [_ArgCmp(0, 1, _SOCKET_FAMILY, 0)])
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


# ---------------------------------------------------------------------- the command
_VENV_MOUNT = "/opt/python-env"


def _python_binds(interpreter: str) -> tuple[list[tuple[str, str]], str]:
    """Read-only binds (host path, path inside) of the interpreter's installation outside
    ``/usr``, and the path of the interpreter inside the boundary.

    A virtual environment is bound at a neutral path (:data:`_VENV_MOUNT`), so that a venv kept
    inside a project checkout does not show the checkout's layout; Python finds the venv's
    ``pyvenv.cfg`` next to the interpreter it runs, wherever that is mounted. (Its host path
    still shows in ``/proc/self/mountinfo`` and the venv's own metadata: a path, not files.)
    """
    binds: list[tuple[str, str]] = []
    inside = interpreter
    roots = {os.path.dirname(interpreter), os.path.dirname(os.path.realpath(interpreter))}
    if interpreter == sys.executable:
        roots |= {sys.base_prefix, sys.exec_prefix}
        venv = os.path.realpath(sys.prefix)
        if sys.prefix != sys.base_prefix and os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
            rel = os.path.relpath(os.path.abspath(interpreter), os.path.abspath(sys.prefix))
            if not rel.startswith(".."):
                binds.append((venv, _VENV_MOUNT))
                inside = f"{_VENV_MOUNT}/{rel}"
                roots.discard(os.path.dirname(interpreter))
        else:
            roots.add(sys.prefix)
    for r in sorted({os.path.realpath(p) for p in roots if p}):
        if r == "/usr" or r.startswith("/usr/") or not os.path.isdir(r):
            continue
        if any(r == src or r.startswith(src + "/") for src, _ in binds):
            continue
        binds.append((r, r))
    return binds, inside


def _bwrap_base(disk_mb: int) -> list[str]:
    """Namespaces, the read-only system view and the private writable mounts."""
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
        # bwrap leaves /proc/sys writable (its own cover check fails on that folder); a uid
        # mapped to root outside could then rewrite core_pattern, a host root escape
        "--ro-bind",
        "/proc/sys",
        "/proc/sys",
        "--ro-bind-try",
        "/proc/sysrq-trigger",
        "/proc/sysrq-trigger",
        "--dev",
        "/dev",
        "--size",
        str(_SHM_MB * 1024 * 1024),
        "--tmpfs",
        "/dev/shm",
        "--remount-ro",
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
    for mount in (_WORK, "/tmp"):
        args += ["--size", str(disk_mb * 1024 * 1024), "--tmpfs", mount]
    return args


# The wrapper inside the boundary: run the script, then copy each collected file (a regular
# file, not a link) to descriptor 3, 4, ...; the script itself runs with those closed.
_WRAPPER = (
    'py="$1"; n="$2"; shift 2; closed=""; i=3; while [ "$i" -lt $((n + 3)) ]; do '
    'closed="$closed $i>&-"; i=$((i + 1)); done; '
    'eval "\\"\\$py\\" -I -B main.py $closed"; rc=$?; i=3; for f in "$@"; do '
    'if [ -f "$f" ] && [ ! -L "$f" ]; then eval "cat -- \\"\\$f\\" >&$i"; fi; '
    'eval "exec $i>&-"; i=$((i + 1)); done; exit $rc'
)


@functools.cache
def _bwrap_problem() -> str | None:
    """Why bubblewrap cannot be used here (cached), or ``None`` when it works: the probe runs
    this interpreter inside the boundary exactly as a run does."""
    if shutil.which("bwrap") is None:
        return "bwrap not found"
    try:
        res = _run(
            "pass",
            bwrap=shutil.which("bwrap"),
            interpreter=sys.executable,
            limits=_Limits(30.0, 31, 1024, 16, 64, 16, 64, 64),
            inputs={},
            collect=[],
            env={},
            network=False,
        )
    except (OSError, subprocess.SubprocessError, SandboxUnavailableError) as exc:
        return f"bwrap failed: {exc}"
    if res.returncode != 0:
        text = (res.stderr or res.stdout).strip().replace("\n", " ")
        return f"bwrap failed (exit {res.returncode}): {text[:300]}"
    return None


def isolation_support() -> dict[str, str]:
    """What containment this machine offers (without running anything)."""
    problem = _bwrap_problem()
    parents = _cgroup_parents()
    return {
        "boundary": "bwrap" if problem is None else f"NONE ({problem})",
        "seccomp": _seccomp_description(),
        "processes": "cgroup+rlimit" if parents else "rlimit",
        "memory": "cgroup" if ("memory" in parents or "v2" in parents) else "rlimit",
    }


# ---------------------------------------------------------------------- the run
@dataclasses.dataclass(frozen=True)
class _Limits:
    timeout_s: float
    cpu_s: int
    memory_mb: int
    file_size_mb: int
    disk_mb: int
    max_processes: int
    max_open_files: int
    collect_mb: int


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


class _Stream:
    """One pipe from the run: keeps the first ``keep`` bytes, counts the rest."""

    def __init__(self, fd: int, keep: int, limit: int) -> None:
        self.fd, self.keep, self.limit = fd, keep, limit
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def over(self) -> bool:
        return self.total > self.limit


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the launcher has exited, without reaping it (its pid, and so its process
    group's id, stays reserved until :meth:`subprocess.Popen.wait`)."""
    if proc.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _drain(
    proc: subprocess.Popen[bytes],
    streams: list[_Stream],
    deadline: float,
    kill: Callable[[], None],
) -> tuple[bool, bool]:
    """Read every pipe until all are closed and the launcher has exited, with caps.

    Returns:
        (timed out, a stream went over its limit); either kills the run.
    """
    sel = selectors.DefaultSelector()
    for s in streams:
        os.set_blocking(s.fd, False)
        sel.register(s.fd, selectors.EVENT_READ, s)
    timed_out = over = False
    stop_at: float | None = None  # after a kill, or once the launcher is gone
    try:
        while sel.get_map():
            now = time.monotonic()
            if stop_at is None and now >= deadline:
                timed_out = True
                kill()
                stop_at = now + 2.0
            if stop_at is None and _exited(proc):
                stop_at = now + 1.0  # a process outside a PID namespace may keep a pipe
            if stop_at is not None and now >= stop_at:
                break
            wait = (stop_at if stop_at is not None else deadline) - now
            for key, _ in sel.select(timeout=max(0.0, min(wait, 0.25))):
                stream: _Stream = key.data
                try:
                    chunk = os.read(stream.fd, _READ_CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(stream.fd)
                    continue
                stream.feed(chunk)
                if stream.over and not over:
                    over = True
                    kill()
                    stop_at = time.monotonic() + 2.0
    finally:
        sel.close()
    return timed_out, over


def _read_regular(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes (not a link, not a FIFO), or ``None`` when missing or over
    ``limit`` (unsafe mode only: there the script's folder is on the host)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = bytearray()
        while len(data) <= limit:
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                return bytes(data)
            data += chunk
        return None
    finally:
        os.close(fd)


def _run(
    code: str,
    *,
    problem: str | None = None,
    bwrap: str | None,
    interpreter: str,
    limits: _Limits,
    inputs: Mapping[str, bytes],
    collect: Sequence[str],
    env: Mapping[str, str],
    network: bool,
) -> SandboxResult:
    """One run, behind bwrap when ``bwrap`` is given (else on the host: unsafe mode,
    ``problem`` saying why)."""
    inputs = {"main.py": code.encode("utf-8"), **inputs}
    run_uid = _sandbox_uid() if bwrap else None
    fsize = limits.file_size_mb * 1024 * 1024
    collect_cap = limits.collect_mb * 1024 * 1024
    mem = limits.memory_mb * 1024 * 1024
    # the memory cgroup bounds the whole run: processes, tmpfs pages, kernel memory
    cg_bytes = (limits.memory_mb + 2 * limits.disk_mb + _SHM_MB + 256) * 1024 * 1024
    root = None if bwrap else Path(tempfile.mkdtemp(prefix="metacog-sandbox-")).resolve()
    cgroup = _Cgroup(limits.max_processes, cg_bytes)
    exposure = _Exposure([])
    isolation: dict[str, str] = {}
    fds: list[int] = []  # every descriptor this function opened and must close
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
            **env,
        }
        uid = os.geteuid() if run_uid is None else run_uid
        if run_uid is not None:
            nproc = limits.max_processes + 3  # bwrap, its init and the wrapper shell
        else:
            nproc = _user_process_count(uid) + limits.max_processes if uid != 0 else 0
        libc = _libc() if not network and not bwrap else None
        status_r, status_w = os.pipe()  # the launcher reports a failed network unshare here
        fds += [status_r, status_w]
        pipes = [os.pipe() for _ in range(2 + (len(collect) if bwrap else 0))]
        for r, w in pipes:
            fds += [r, w]
        streams = [_Stream(r, _MAX_OUTPUT, fsize) for r, _ in pipes[:2]]
        streams += [_Stream(r, collect_cap + 1, collect_cap) for r, _ in pipes[2:]]
        collect_w = [_high(os.dup(w)) for _, w in pipes[2:]]
        fds += collect_w
        pass_fds: list[int] = []
        if bwrap:
            binds, inside = _python_binds(interpreter)
            if run_uid is not None:
                exposure = _Exposure([src for src, _ in binds])
            cmd = [bwrap, *_bwrap_base(limits.disk_mb)]
            for src, dest in binds:
                cmd += ["--ro-bind", src, dest]
            if network:  # otherwise --unshare-all gave it an empty network namespace
                cmd.append("--share-net")
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
                pass_fds.append(fd)
                cmd += ["--file", str(fd), f"{_WORK}/{name}"]
            bpf = _seccomp_filter()
            if bpf is not None:
                fd = _memfd(bpf)
                fds.append(fd)
                pass_fds.append(fd)
                cmd += ["--seccomp", str(fd)]
            cmd += ["--remount-ro", "/", "--chdir", _WORK, "--"]
            cmd += ["/bin/sh", "-c", _WRAPPER, "sh", inside, str(len(collect)), *collect]
        else:
            assert root is not None
            for name, content in inputs.items():
                target = root / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            cmd = [interpreter, "-I", "-B", "main.py"]
        pass_fds += range(3, 3 + len(collect_w))

        def preexec() -> None:  # in the launcher, between fork and exec
            for k, fd in enumerate(collect_w):  # every source descriptor is >= 10
                os.dup2(fd, 3 + k)
            os.setsid()
            cgroup.join()
            if exposure:
                exposure.apply()
            if libc and libc.unshare(_CLONE_NEWNET) != 0:
                os.write(status_w, b"n")
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            n = limits.max_open_files
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
            if nproc:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            _drop_to(run_uid)

        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=str(root) if root is not None else "/",
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=pipes[0][1],
                stderr=pipes[1][1],
                preexec_fn=preexec,
                close_fds=True,
                pass_fds=tuple(pass_fds),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return SandboxResult(
                None, "", f"sandbox: could not start: {exc}", False, "start_failed", 0.0
            )
        for fd in [w for _, w in pipes] + collect_w + [status_w]:  # the run holds these now
            os.close(fd)
            fds.remove(fd)
        os.set_blocking(status_r, False)
        try:
            unshared = not os.read(status_r, 1)
        except BlockingIOError:
            unshared = True

        def kill() -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # bwrap; its PID namespace goes with it
            cgroup.kill()

        deadline = start + limits.timeout_s
        timed_out, over = _drain(proc, streams, deadline, kill)
        while not _exited(proc):
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(0.005)
        kill()  # stragglers of an unsafe run; behind bwrap the namespace is gone already
        proc.wait()
        duration = time.monotonic() - start
        oom = cgroup.oom_killed()
        stdout = streams[0].data.decode("utf-8", "replace")
        stderr = streams[1].data.decode("utf-8", "replace")
        rc = proc.returncode
        if bwrap and rc is not None and 128 < rc < 128 + 65:  # a signal reads as 128+n
            rc = -(rc - 128)
        if bwrap:
            host = f"unprivileged host uid {uid}" if run_uid is not None else "the caller's uid"
            isolation["boundary"] = (
                "bwrap (user/mount/pid/net/ipc/uts/cgroup namespaces, no capabilities, "
                f"no_new_privs; {host}, uid 65534 inside)"
            )
            isolation["seccomp"] = _seccomp_description()
            isolation["filesystem"] = (
                "read-only new root: /usr, the interpreter, read-only /proc/sys and /dev; "
                f"private tmpfs work dir and /tmp ({limits.disk_mb} MB each)"
            )
        else:
            isolation["boundary"] = f"NONE (unsafe opt-in, model code ran on the host: {problem})"
            isolation["filesystem"] = "host temp dir as cwd (NOT isolated)"
        if network:
            isolation["network"] = "allowed"
        elif bwrap or (libc and unshared):
            isolation["network"] = "namespace"
        else:
            isolation["network"] = "NOT isolated (no network namespace available)"
        isolation["processes"] = ("pid namespace+" if bwrap else "") + (
            "cgroup+rlimit" if cgroup.pids else "rlimit"
        )
        isolation["memory"] = (
            f"cgroup ({cg_bytes // 2**20} MB for the run)"
            if cgroup.memory is not None
            else f"rlimit ({limits.memory_mb} MB per process)"
        )
        reason = None
        if timed_out:
            reason = "timeout"
        elif over:
            reason = "file_size"
        elif oom:
            reason = "memory"
        elif rc is not None and rc < 0:
            sig = -rc
            reason = {signal.SIGXCPU: "cpu_time", signal.SIGXFSZ: "file_size"}.get(
                sig, f"signal:{_signal_name(sig)}"
            )
            if sig == signal.SIGKILL and duration >= limits.cpu_s:
                reason = "cpu_time"
        elif rc and "MemoryError" in stderr:
            reason = "memory"
        elif rc and ("[Errno 27] File too large" in stderr or "[Errno 28]" in stderr):
            reason = "file_size"  # Python ignores SIGXFSZ; 28: the tmpfs is full
        collected: dict[str, str] = {}
        for k, name in enumerate(collect):
            data: bytes | bytearray | None
            if bwrap:  # decoded from the stream's own buffer, which is then let go (no copy)
                stream = streams[2 + k]
                data, stream.data = (None if stream.over else stream.data), bytearray()
            else:
                assert root is not None
                data = _read_regular(root / name, collect_cap)
            if data:  # an empty or missing file reads as missing
                collected[name] = data.decode("utf-8", "replace")
            data = None
        return SandboxResult(rc, stdout, stderr, timed_out, reason, duration, isolation, collected)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        cgroup.remove()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


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
    collect_mb: int | None = None,
    unsafe_no_isolation: bool | None = None,
) -> SandboxResult:
    """Run Python source in a sandboxed subprocess.

    Args:
        code: The script, run as ``__main__`` (``main.py`` in the work directory).
        timeout_s: Wall-clock limit; the whole process tree is killed after it.
        cpu_s: CPU-time limit (default: ``timeout_s`` + 1 s, so that a single-threaded
            runaway meets the wall-clock limit first and is reported as ``timeout``).
        memory_mb: Address-space limit of each process (a memory cgroup, where writable,
            also bounds the whole run: ``memory_mb`` + both tmpfs sizes + 320 MB).
        file_size_mb: Largest file, and the most standard output or error a run may write
            (the run is killed past it; 1 MB of each is kept).
        disk_mb: Size of the work directory's tmpfs (and, separately, of ``/tmp``).
        max_processes: Processes/threads allowed (pids cgroup and ``RLIMIT_NPROC``).
        max_open_files: Open file descriptors.
        files: Extra files to place in the work directory (name -> content).
        env: Extra environment variables (the environment is otherwise scrubbed).
        network: Keep the network (default ``False``: an empty network namespace).
        python: Interpreter (default: this one).
        collect: Files (at most 7) to read back from the work directory after the run
            (missing or empty ones are left out). Their content is untrusted.
        collect_mb: Largest collected file (default ``file_size_mb``); a larger one is left
            out and the run reads as ``file_size``.
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
        if not unsafe_opt_in(unsafe_no_isolation):
            raise SandboxUnavailableError(
                f"sandbox: no isolation boundary for model code ({problem}); install bubblewrap "
                "(apt-get install bubblewrap, dnf install bubblewrap) with user namespaces "
                "enabled, or run the Inspect task with -T sandbox=docker; to run it on this "
                f"host unisolated anyway set {UNSAFE_ENV}={UNSAFE_VALUE}"
            )
        if not _WARNED:
            _LOG.warning("sandbox: model code runs on this host WITHOUT isolation (%s)", problem)
            _WARNED = True
    if timeout_s <= 0 or memory_mb <= 0 or file_size_mb <= 0 or max_processes < 1 or disk_mb <= 0:
        raise ValueError("run_python: limits must be positive")
    if collect_mb is not None and collect_mb <= 0:
        raise ValueError("run_python: limits must be positive")
    collect = list(collect)
    if len(collect) > _MAX_COLLECT:
        raise ValueError(f"run_python: at most {_MAX_COLLECT} files to collect")
    inputs: dict[str, bytes] = {}
    for name, content in (files or {}).items():
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts or name == "main.py":
            raise ValueError(f"run_python: bad file name {name!r}")
        inputs[name] = content if isinstance(content, bytes) else content.encode("utf-8")
    for name in collect:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"run_python: bad file name to collect {name!r}")
    # The default CPU limit sits a second above the wall-clock limit: equal limits race, and
    # which signal lands first would decide whether a busy loop reads ``timeout`` or ``cpu_time``.
    cpu_limit = int(max(1, round(cpu_s))) if cpu_s is not None else math.ceil(timeout_s) + 1
    limits = _Limits(
        float(timeout_s),
        cpu_limit,
        int(memory_mb),
        int(file_size_mb),
        int(disk_mb),
        int(max_processes),
        int(max_open_files),
        int(collect_mb if collect_mb is not None else file_size_mb),
    )
    return _run(
        code,
        problem=problem,
        bwrap=shutil.which("bwrap") if problem is None else None,
        interpreter=python or sys.executable,
        limits=limits,
        inputs=inputs,
        collect=collect,
        env=dict(env or {}),
        network=network,
    )
