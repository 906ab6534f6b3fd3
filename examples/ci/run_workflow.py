"""Run the ``run:`` steps of ``metacog-gate.yml`` in order, offline, as a fresh runner would.

Four runs of the workflow, each in a fresh copy of this repository laid out as docs/gate.md says
(the workflow in ``.github/workflows/``, the settings in ``ci/gate.yaml``) and with a fresh
Python environment into which the install step installs the repository:

1. gate before any baseline exists: refused (exit 2) with the first-run message to bless;
2. bless: the checkpoint's run saved as ``ci/metacog-baseline.json`` (then kept, as a user
   commits it);
3. gate the same checkpoint again: PASS (exit 0);
4. gate a degraded checkpoint (its confidence no longer reads the items): FAIL (exit 1).

The checkpoints are simulated models (lm-eval's ``metacog-sim``) answering the bundled packs,
so nothing is downloaded. What differs from a GitHub runner, and nothing else:

- actions (``uses:``) do not run: the checkout is the copy above, setup-python is this
  interpreter, and the JUnit, comment and artifact actions are GitHub's (their ``if:`` is still
  evaluated and logged);
- the runner's environment: a new virtual environment of this interpreter with ``pip`` told to
  use no index (``PIP_NO_INDEX``, ``PIP_NO_DEPS``, no build isolation); the dependencies a
  runner would download are taken from the current environment (a ``.pth`` file);
- these workflow ``env`` values: ``LM_EVAL_MODEL=metacog-sim``, ``MODEL_ARGS`` naming the
  simulated checkpoint, ``METACOG_DATA=bundled`` and ``LM_EVAL_METADATA`` to match,
  ``GATE_ARGS=--pool`` (the packs hold 8-20 items a benchmark), and the Hugging Face hub
  offline.

    python examples/ci/run_workflow.py [--workdir DIR] [--log FILE]

Exits 0 when every run ends as expected, 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = Path("examples/ci/metacog-gate.yml")
CONFIG = Path("examples/ci/gate.yaml")
#: The simulated checkpoints: lm-eval ``--model_args`` of ``metacog-sim``.
GOOD = "model=m04,preset=paper,seed=0"
DEGRADED = "model=m04,preset=null,seed=0"
OFFLINE_ENV = {
    "LM_EVAL_MODEL": "metacog-sim",
    "METACOG_DATA": "bundled",
    "LM_EVAL_METADATA": '{"metacog_data": "bundled", "metacog_confidence": "verbal,logprob"}',
    "GATE_ARGS": "--pool",
}
GATE_STEP = "Gate against the committed baseline"
BLESS_STEP = "Save the run as the new baseline"
#: The runs: (title, workflow inputs, simulated checkpoint, the gate step's expected exit).
RUNS: tuple[tuple[str, dict[str, Any], str, int], ...] = (
    ("gate before any baseline (first run)", {"bless": False}, GOOD, 2),
    ("bless the trusted checkpoint", {"bless": True}, GOOD, 0),
    ("gate the unchanged checkpoint", {"bless": False}, GOOD, 0),
    ("gate a degraded checkpoint", {"bless": False}, DEGRADED, 1),
)


# ------------------------------------------------------------------------------ expressions

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)"
    r"|(?P<op>==|!=|&&|\|\||!|\(|\)|,)|(?P<name>[A-Za-z_][\w.-]*))"
)


class Expression:
    """A GitHub Actions expression: literals, contexts, ``! == != && || ( )`` and calls."""

    def __init__(self, text: str, lookup: Callable[[str], Any], calls: Mapping[str, Callable]):
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot read the expression {text!r} at {text[pos:]!r}")
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
        self.i, self.lookup, self.calls = 0, lookup, calls

    def value(self) -> Any:
        out = self._or()
        if self.i != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self.i][1]!r} in an expression")
        return out

    def _peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def _take(self) -> tuple[str, str]:
        self.i += 1
        return self.tokens[self.i - 1]

    def _or(self) -> Any:
        left = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            left = left if truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._cmp()
        while self._peek() == "&&":
            self._take()
            right = self._cmp()
            left = right if truthy(left) else left
        return left

    def _cmp(self) -> Any:
        left = self._not()
        while self._peek() in ("==", "!="):
            op = self._take()[1]
            right = self._not()
            same = str(render(left)).lower() == str(render(right)).lower()
            left = same if op == "==" else not same
        return left

    def _not(self) -> Any:
        if self._peek() == "!":
            self._take()
            return not truthy(self._not())
        return self._primary()

    def _primary(self) -> Any:
        kind, text = self._take()
        if text == "(":
            out = self._or()
            self._take()
            return out
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        if self._peek() == "(":
            self._take()
            args = []
            while self._peek() != ")":
                args.append(self._or())
                if self._peek() == ",":
                    self._take()
            self._take()
            return self.calls[text](*args)
        return self.lookup(text)


def truthy(value: Any) -> bool:
    return value not in (None, False, "", 0, 0.0)


def render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


_SUB = re.compile(r"\$\{\{(.*?)\}\}")


# ------------------------------------------------------------------------------ the runner


class Runner:
    """One workflow run in a fresh workspace and Python environment."""

    def __init__(self, root: Path, inputs: Mapping[str, Any], say: Callable[[str], None]):
        self.root, self.inputs, self.say = root, dict(inputs), say
        self.workspace = root / "workspace"
        self.failed = False
        self.steps: list[tuple[str, int | None]] = []

    def lookup(self, path: str) -> Any:
        head, _, rest = path.partition(".")
        if head == "inputs":
            return self.inputs.get(rest, "")
        if head == "github":
            return {"event_name": "workflow_dispatch", "workspace": str(self.workspace)}.get(rest)
        if head in ("secrets", "vars", "env"):
            return ""
        raise ValueError(f"unknown context {path!r}")

    def evaluate(self, text: str) -> Any:
        calls = {
            "always": lambda: True,
            "success": lambda: not self.failed,
            "failure": lambda: self.failed,
            "cancelled": lambda: False,
            "hashFiles": self._hash_files,
        }
        return Expression(text, self.lookup, calls).value()

    def _hash_files(self, *patterns: str) -> str:
        digest = hashlib.sha256()
        found = False
        for pattern in patterns:
            for path in sorted(self.workspace.glob(pattern)):
                if path.is_file():
                    digest.update(path.read_bytes())
                    found = True
        return digest.hexdigest() if found else ""

    def substitute(self, text: str) -> str:
        return _SUB.sub(lambda m: render(self.evaluate(m.group(1))), str(text))

    def condition(self, text: Any) -> bool:
        if text is None:
            return not self.failed
        expr = str(text).strip()
        m = re.fullmatch(r"\$\{\{(.*)\}\}", expr, flags=re.S)
        expr = m.group(1) if m else expr
        if not re.search(r"\b(always|success|failure|cancelled)\(", expr):
            expr = f"success() && ({expr})"
        return truthy(self.evaluate(expr))

    def prepare(self, baseline: Path | None) -> None:
        """The checkout (this repository, laid out as the docs say) and a fresh Python."""
        copy_repository(REPO, self.workspace)
        (self.workspace / "ci").mkdir(exist_ok=True)
        shutil.copy2(self.workspace / CONFIG, self.workspace / "ci" / "gate.yaml")
        flows = self.workspace / ".github" / "workflows"
        flows.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.workspace / WORKFLOW, flows / "metacog-gate.yml")
        if baseline is not None:  # committed after the bless run
            shutil.copy2(baseline, self.workspace / "ci" / "metacog-baseline.json")
        self.python = make_runner_python(self.root / "python")

    def environment(self, workflow_env: Mapping[str, Any]) -> dict[str, str]:
        keep = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GITHUB_", "RUNNER_", "VIRTUAL_ENV", "PYTHON"))
        }
        bin_dir = str(self.python)
        keep.update(
            {
                "PATH": os.pathsep.join([bin_dir, "/usr/local/bin", "/usr/bin", "/bin"]),
                "CI": "true",
                "GITHUB_ACTIONS": "true",
                "GITHUB_WORKSPACE": str(self.workspace),
                "GITHUB_EVENT_NAME": "workflow_dispatch",
                "GITHUB_STEP_SUMMARY": str(self.root / "step-summary.md"),
                "RUNNER_TEMP": str(self.root / "tmp"),
                "HF_HUB_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1",
                "PIP_NO_INDEX": "1",
                "PIP_NO_DEPS": "1",
                "PIP_NO_BUILD_ISOLATION": "0",
            }
        )
        (self.root / "tmp").mkdir(exist_ok=True)
        for key, value in workflow_env.items():
            keep[key] = self.substitute(value)
        return keep

    def run(self, flow: Mapping[str, Any], overrides: Mapping[str, str]) -> None:
        (job,) = flow["jobs"].values()
        env = self.environment({**flow.get("env", {}), **overrides})
        for i, step in enumerate(job["steps"], 1):
            name = step.get("name") or step.get("uses") or f"step {i}"
            go = self.condition(step.get("if"))
            if "uses" in step:
                what = "would run" if go else "skipped by its if"
                self.say(f"  [{i}] {name}: action {step['uses']} ({what}; GitHub only)")
                self.steps.append((name, None))
                continue
            if not go:
                self.say(f"  [{i}] {name}: skipped by its if")
                self.steps.append((name, None))
                continue
            step_env = {**env, **{k: self.substitute(v) for k, v in step.get("env", {}).items()}}
            self.say(f"  [{i}] {name}: $ {step['run'].strip().splitlines()[0]} ...")
            t0 = time.perf_counter()
            proc = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                cwd=self.workspace,
                env=step_env,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            output = (proc.stdout + proc.stderr).rstrip()
            (self.root / f"step{i}.log").write_text(output + "\n")
            self.steps.append((name, proc.returncode))
            shown = tail_of(output, name)
            for line in shown:
                self.say(f"      {line}")
            self.say(f"      -> exit {proc.returncode} ({time.perf_counter() - t0:.0f} s)")
            if proc.returncode != 0:
                self.failed = True


def tail_of(output: str, name: str) -> list[str]:
    """What the log shows of a step: the gate's whole report, the last lines of the others."""
    lines = [ln for ln in output.splitlines() if not ln.startswith("::")]
    annotations = [ln for ln in output.splitlines() if ln.startswith("::")]
    if name == GATE_STEP:
        return annotations[:3] + lines
    installed = [ln for ln in lines if ln.startswith("Successfully installed")]
    return installed or lines[-6:]


def copy_repository(src: Path, dst: Path) -> None:
    """The files a checkout holds: git's tracked and unignored files (else all but caches)."""
    try:
        names = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=src,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
        files = [src / n.decode() for n in names if n]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache"}
        files = [p for p in src.rglob("*") if not skip & set(p.relative_to(src).parts)]
    for path in files:
        if path.is_file():
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def make_runner_python(where: Path) -> Path:
    """A new virtual environment of this interpreter; the current environment's packages
    stand in for what a runner downloads. Returns its ``bin`` folder (with a ``pip``)."""
    base = Path(getattr(sys, "_base_executable", sys.executable))
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(where)], check=True)
    bin_dir = where / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "runner-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = bin_dir / "pip"
    pip.write_text(f'#!/bin/sh\nexec "{python}" -m pip "$@"\n')
    pip.chmod(0o755)
    return bin_dir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", help="where the runs go (default: a temporary folder)")
    ap.add_argument("--log", help="also write the log here")
    args = ap.parse_args(argv)
    root = Path(args.workdir or tempfile.mkdtemp(prefix="metacog-workflow-")).resolve()
    root.mkdir(parents=True, exist_ok=True)
    log: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        log.append(text)

    flow = yaml.safe_load((REPO / WORKFLOW).read_text(encoding="utf-8"))
    say(f"metacog gate workflow, offline: {len(flow['jobs']['metacog']['steps'])} steps, in {root}")
    say(f"offline env: {OFFLINE_ENV}")
    baseline: Path | None = None
    results = []
    for n, (title, inputs, checkpoint, expected) in enumerate(RUNS, 1):
        say(f"\nrun {n}: {title} (inputs {inputs}, checkpoint metacog-sim {checkpoint})")
        runner = Runner(root / f"run{n}", {"checkpoint": checkpoint, **inputs}, say)
        if runner.root.exists():
            shutil.rmtree(runner.root)
        runner.root.mkdir(parents=True)
        runner.prepare(baseline)
        runner.run(flow, {**OFFLINE_ENV, "MODEL_ARGS": checkpoint})
        codes = dict(runner.steps)
        got = codes.get(BLESS_STEP if inputs["bless"] else GATE_STEP)
        ok = got == expected
        results.append((title, expected, got, ok))
        if inputs["bless"] and ok:
            baseline = root / "metacog-baseline.json"
            shutil.copy2(runner.workspace / "ci" / "metacog-baseline.json", baseline)
    say("\nsummary:")
    for title, expected, got, ok in results:
        say(f"  {'ok  ' if ok else 'FAIL'} {title}: exit {got} (expected {expected})")
    if args.log:
        Path(args.log).write_text("\n".join(log) + "\n", encoding="utf-8")
    return 0 if all(r[3] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
