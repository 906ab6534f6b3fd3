"""Model code in an Inspect sandbox (``-T sandbox=docker``) instead of the project's sandbox.

A benchmark whose record ``runs_code`` (SciCode) grades by running scripts of the model's code;
by default they run in :func:`metacog_tasks.sandbox.run_python` (the bubblewrap boundary) on the
host. With ``-T sandbox=docker`` the same scripts run in the sample's Inspect sandbox instead:
a container built from a small image (Python 3.11 with numpy, scipy, sympy and h5py) without
network. ``-T sandbox=docker:<compose.yaml>`` uses your own compose file; any other Inspect
sandbox provider name (``k8s``, ...) is passed through. ``local`` runs the model's code on the
host without any isolation, so it is refused unless the same explicit opt-in as the project's
sandbox is set (:data:`metacog_tasks.sandbox.UNSAFE_ENV`).

Whatever the sandbox, the grade is decided here, in the caller: the scripts only capture the
values the test cases compare, the targets never enter the sandbox, and every target a sample
needs is computed before any of the sample's model code runs (model code may leave files or
processes behind in a container that lives for the whole sample). What the benchmark provides
is :class:`CodeBenchmark`.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import anyio
from inspect_ai.util import SandboxEnvironmentSpec, sandbox

from metacog_metrics import atomic_write_text
from metacog_tasks.benchmarks.base import Benchmark, Grade, Item
from metacog_tasks.sandbox import (
    UNSAFE_ENV,
    UNSAFE_VALUE,
    SandboxResult,
    SandboxUnavailableError,
    unsafe_opt_in,
)

_LOCAL = "LocalSandboxEnvironment"
_LOCAL_REFUSED = (
    "sandbox local: Inspect's local sandbox runs model code on this host without isolation; "
    "use -T sandbox=docker (or the project's bubblewrap sandbox: no sandbox option), or set "
    f"{UNSAFE_ENV}={UNSAFE_VALUE} to run it anyway"
)

__all__ = [
    "COMPOSE_YAML",
    "DOCKERFILE",
    "CodeBenchmark",
    "current_sandbox",
    "grade_in_inspect_sandbox",
    "in_sandbox",
    "sandbox_spec",
]

#: Image of the default docker sandbox: the scientific stack that model code may import.
DOCKERFILE = """\
FROM python:3.11-slim
RUN pip install --no-cache-dir "numpy<3" "scipy>=1.10" "sympy>=1.12" "h5py>=3.10"
RUN useradd --create-home runner
USER runner
WORKDIR /home/runner
"""
#: Compose file of the default docker sandbox: no network, bounded memory and CPU.
COMPOSE_YAML = """\
services:
  default:
    build: .
    init: true
    command: tail -f /dev/null
    network_mode: none
    mem_limit: 4gb
    cpus: 1.0
"""


def _write_atomic(path: Path, text: str) -> None:
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    atomic_write_text(path, text)


class CodeBenchmark(Protocol):
    """What a benchmark whose record ``runs_code`` provides to run its scripts elsewhere."""

    #: Largest file (MB) read back from a run (``SandboxResult.files``).
    sandbox_collect_mb: ClassVar[int]
    #: Wall-clock limit of one script, in seconds.
    timeout_s: float

    def sandbox_files(self) -> Mapping[str, str]:
        """Files a script needs beside it (never a target)."""
        ...

    def run_script(self, script: str, collect: Sequence[str] = ()) -> SandboxResult:
        """Run a script; the files named in ``collect`` come back in the result."""
        ...


def _docker_config_dir(benchmark: str) -> Path:
    import platformdirs  # an Inspect dependency

    folder = Path(platformdirs.user_cache_dir("metacog-eval")) / f"inspect-{benchmark}-docker"
    folder.mkdir(parents=True, exist_ok=True)
    _write_atomic(folder / "Dockerfile", DOCKERFILE)
    _write_atomic(folder / "compose.yaml", COMPOSE_YAML)
    return folder


def sandbox_spec(spec: str, benchmark: str) -> str | SandboxEnvironmentSpec:
    """The Inspect sandbox for a ``-T sandbox=...`` value.

    Args:
        spec: ``docker`` (the project's image, written to the user cache on first use),
            ``docker:<compose file>`` (yours), or another provider name passed through.
        benchmark: The benchmark whose model code runs there (it names the image's folder).

    Returns:
        A value for ``Task(sandbox=...)``.

    Raises:
        ValueError: An empty spec, or a compose file that does not exist.
        SandboxUnavailableError: ``local`` without the explicit opt-in.
    """
    spec = str(spec).strip()
    if not spec:
        raise ValueError("sandbox: empty value; use docker, docker:<compose.yaml> or a provider")
    kind, _, config = spec.partition(":")
    if kind == "local" and not unsafe_opt_in():
        raise SandboxUnavailableError(_LOCAL_REFUSED)
    if kind == "docker" and not config:
        folder = _docker_config_dir(benchmark)
        return SandboxEnvironmentSpec("docker", str(folder / "compose.yaml"))
    if config:
        path = Path(config).expanduser()
        if not path.is_file():
            raise ValueError(f"sandbox {kind}: config file not found: {config}")
        return SandboxEnvironmentSpec(kind, str(path.resolve()))
    return spec


class _InspectRunner:
    """A benchmark's ``run_script`` replacement that runs scripts in an Inspect sandbox.

    Grading is synchronous and runs in a worker thread; each script is handed back to the event
    loop (``anyio.from_thread.run``), where the sandbox's async API lives.
    """

    def __init__(
        self,
        env: Any,
        python: str,
        timeout_s: float,
        files: Mapping[str, str],
        collect_mb: int,
        prefix: str,
    ) -> None:
        self.env = env
        self.python = python
        self.timeout_s = timeout_s
        self.files = dict(files)
        self.collect_mb = collect_mb
        self.prefix = prefix
        self.kind = _provider(env)

    def __call__(self, script: str, collect: Sequence[str] = ()) -> SandboxResult:
        return anyio.from_thread.run(self._run, script, tuple(collect))

    async def _run(self, script: str, collect: tuple[str, ...]) -> SandboxResult:
        folder = f"{self.prefix}-{uuid.uuid4().hex}"
        files = dict(self.files)  # never a target
        files["main.py"] = script
        isolation = {"sandbox": f"inspect:{self.kind}"}
        if self.kind == _LOCAL:
            isolation["boundary"] = "NONE (Inspect local sandbox: model code ran on the host)"
        start = time.monotonic()
        try:
            for name, content in files.items():  # a failure here is the sandbox's: ungraded
                await self.env.write_file(f"{folder}/{name}", content)
            try:
                # -I: no user site-packages or PYTHON* variables that earlier code could plant;
                # no retry: a timed-out script is a failed one, never run twice
                res = await self.env.exec(
                    [self.python, "-I", "-B", "main.py"],
                    cwd=folder,
                    timeout=max(1, round(self.timeout_s)),
                    timeout_retry=False,
                )
            except TimeoutError:
                return SandboxResult(
                    None, "", "", True, "timeout", time.monotonic() - start, isolation
                )
            except Exception as exc:  # once model code runs, any failure is its failure
                return SandboxResult(
                    None,
                    "",
                    f"sandbox: {type(exc).__name__}: {exc}"[:1000],
                    False,
                    "file_size" if type(exc).__name__ == "OutputLimitExceededError" else "error",
                    time.monotonic() - start,
                    isolation,
                )
            collected: dict[str, str] = {}
            for name in collect:  # files the script left behind (outputs, generated targets)
                try:
                    data = await self.env.read_file(f"{folder}/{name}", text=False)
                except Exception:  # missing, a link, too large, unreadable: left out
                    continue
                if 0 < len(data) <= self.collect_mb * 1024 * 1024:
                    collected[name] = data.decode("utf-8", "replace")
            return SandboxResult(
                res.returncode,
                res.stdout[-1_000_000:],
                res.stderr[-1_000_000:],
                False,
                None,
                time.monotonic() - start,
                isolation,
                collected,
            )
        finally:
            # Cleanup is best effort: the sandbox itself is per sample.
            with contextlib.suppress(Exception):
                await self.env.exec(["rm", "-rf", folder], timeout=60)


def current_sandbox() -> Any | None:
    """The current sample's Inspect sandbox, or ``None`` when the eval configured none.

    A sandbox counts whether it came from ``-T sandbox=...`` or from ``inspect eval --sandbox``.
    """
    try:
        return sandbox()
    except ProcessLookupError:
        return None


def _provider(env: Any) -> str:
    """The provider class name of a sandbox (Inspect wraps it in an event-logging proxy)."""
    return type(getattr(env, "_sandbox", env)).__name__


def _python_for(env: Any) -> str:
    """The interpreter inside the sandbox: this one for ``local``, else the image's ``python``."""
    return sys.executable if _provider(env) == _LOCAL else "python"


def in_sandbox(bench: Benchmark, env: Any) -> Benchmark:
    """A shallow copy of a :class:`CodeBenchmark` whose scripts run in ``env`` (caches stay
    shared).

    Raises:
        SandboxUnavailableError: ``env`` is Inspect's local sandbox (model code on this host)
            and the explicit opt-in is not set.
    """
    if _provider(env) == _LOCAL and not unsafe_opt_in():
        raise SandboxUnavailableError(_LOCAL_REFUSED)
    code: CodeBenchmark = bench  # type: ignore[assignment]
    graded = copy.copy(bench)
    graded.run_script = _InspectRunner(  # type: ignore[attr-defined]
        env,
        _python_for(env),
        float(getattr(bench, "timeout_s", 120.0)),
        code.sandbox_files(),
        code.sandbox_collect_mb,
        f"metacog-{bench.name}",
    )
    return graded


async def grade_in_inspect_sandbox(
    bench: Benchmark, item: Item, replies: list[str], env: Any
) -> Grade:
    """Grade the replies of a :class:`CodeBenchmark` with its scripts run in an Inspect sandbox.

    Args:
        bench: The benchmark (its grading logic is reused unchanged).
        item: The item.
        replies: The solve replies.
        env: The sample's sandbox environment (:func:`current_sandbox`).

    Returns:
        The grade, as the benchmark computes it (the step's targets first, then its code).
    """
    return await anyio.to_thread.run_sync(in_sandbox(bench, env).grade_responses, item, replies)
