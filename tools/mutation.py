"""Mutation testing of the core modules with mutmut, one module at a time.

Each module in ``[tool.metacog-mutation.modules]`` (pyproject.toml) is mutated alone, in a
fresh copy of the repository, against its own tests only, with one worker by default, and
stopped when it runs past ``--timeout`` seconds (what was scored by then is reported).
Modules run smallest first. The score is ``(killed + timeout) / (mutants tested)``, as mutmut's
own badge computes it; survivors are listed so that each can be killed by a test or written
down as an equivalent mutant.

Usage::

    python tools/mutation.py                      # every configured module
    python tools/mutation.py metacog_tasks/parsing.py --timeout 600
    python tools/mutation.py --list               # the modules and their tests

Not part of CI (too slow); run it before resolving an issue that touches these modules and
quote the per-module scores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: What mutation testing covers: every module here is configured or excluded with a reason.
SCOPE = (
    "metacog_metrics/**/*.py",
    "metacog_tasks/parsing.py",
    "metacog_tasks/benchmarks/*.py",
    "rlmf_plugin/rewards.py",
)


def _settings() -> dict:
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    try:
        return data["tool"]["metacog-mutation"]
    except KeyError:
        sys.exit("pyproject.toml has no [tool.metacog-mutation] section")


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def copy_repo(dest: Path) -> None:
    """The tracked files (and untracked, not ignored ones) of the working tree."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.split(b"\0")  # fmt: skip
    for raw in files:
        if not raw:
            continue
        rel = Path(raw.decode())
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _write_config(
    work: Path, module: str, tests: list[str], pytest_args: list[str], multiplier: float = 15.0
) -> None:
    """Replace the copy's [tool.mutmut] with this module's (mutmut reads ./pyproject.toml).

    ``multiplier``: mutmut stops a mutant's tests after ``2 x multiplier x (their unmutated
    CPU time + 1 s)``; a mutant that makes a loop endless costs that long, then counts as
    killed (timeout).
    """
    text = (work / "pyproject.toml").read_text(encoding="utf-8")
    package = module.split("/")[0]
    others = sorted({"metacog_metrics", "metacog_tasks", "rlmf_plugin", "task_configs"} - {package})
    section = (
        "\n[tool.mutmut]\n"
        f"source_paths = {_toml_list([package])}\n"
        f"only_mutate = {_toml_list([module])}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
        f"pytest_add_cli_args = {_toml_list(pytest_args)}\n"
        f"also_copy = {_toml_list(others)}\n"
        f"timeout_multiplier = {float(multiplier)!r}\n"
    )
    start = text.find("\n[tool.mutmut]\n")
    if start >= 0:
        end = text.find("\n[", start + 1)
        text = text[:start] + (text[end:] if end >= 0 else "")
    (work / "pyproject.toml").write_text(text + section, encoding="utf-8")


def _mutmut(work: Path, *args: str, timeout: float | None = None) -> tuple[int | None, str]:
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("CI", None)
    # The copy lives in a temporary folder with no ../shared beside it: point the tests at the
    # checkout's own ../shared (when there is one), so that the R references, the official
    # scores and the real runs take part in killing mutants instead of skipping.
    shared = REPO.parent / "shared"
    if "METACOG_SHARED" not in env and shared.is_dir():
        env["METACOG_SHARED"] = str(shared)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mutmut", *args], cwd=work, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        return None, out


def _score(work: Path) -> dict:
    _mutmut(work, "export-cicd-stats", timeout=300)
    path = work / "mutants" / "mutmut-cicd-stats.json"
    stats = json.loads(path.read_text()) if path.is_file() else {}
    _, listing = _mutmut(work, "results", timeout=300)
    survivors = sorted(
        line.strip().split(":")[0]
        for line in listing.splitlines()
        if line.strip().endswith(": survived")
    )
    tested = int(stats.get("total", 0)) - int(stats.get("skipped", 0))
    scored = int(stats.get("killed", 0)) + int(stats.get("timeout", 0))
    return {
        "stats": stats,
        "score": scored / tested if tested > 0 else float("nan"),
        "survivors": survivors,
    }


def run_module(module: str, tests: list[str], args: argparse.Namespace, pytest_args: list[str]):
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="metacog-mutation-") as tmp:
        work = Path(tmp)
        copy_repo(work)
        _write_config(work, module, tests, pytest_args, args.timeout_multiplier)
        run_args = ["run", "--max-children", str(args.max_children)]
        code, out = _mutmut(work, *run_args, timeout=args.timeout)
        result = _score(work)
        if args.show:
            result["diffs"] = {
                name: _mutmut(work, "show", name, timeout=120)[1].strip()
                for name in result["survivors"][: args.show]
            }
        if args.keep:
            kept = REPO / "mutants-kept" / module.replace("/", "__")
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(work / "mutants", kept)
    result.update(
        module=module,
        tests=tests,
        seconds=round(time.monotonic() - started, 1),
        stopped_at_timeout=code is None,
        exit_code=code,
    )
    if code not in (0, None):
        result["log_tail"] = out[-3000:]
    return result


def main(argv: list[str] | None = None) -> int:
    cfg = _settings()
    modules: dict[str, list[str]] = cfg["modules"]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: all configured)")
    parser.add_argument("--timeout", type=float, default=float(cfg.get("timeout_s", 900)))
    parser.add_argument("--max-children", type=int, default=int(cfg.get("max_children", 1)))
    parser.add_argument(
        "--timeout-multiplier",
        type=float,
        default=float(cfg.get("timeout_multiplier", 15.0)),
        help="mutmut's limit per mutant: 2 x this x (the tests' CPU time + 1 s); lower it when "
        "mutants that never end dominate a run",
    )
    parser.add_argument("--out", type=Path, help="write the per-module results as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep mutants/ under mutants-kept/")
    parser.add_argument(
        "--show", type=int, default=0, metavar="N", help="print the diffs of N survivors"
    )
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    args = parser.parse_args(argv)
    if not args.timeout_multiplier > 0:
        parser.error(f"--timeout-multiplier must be > 0, got {args.timeout_multiplier}")
    chosen = args.modules or list(modules)
    unknown = [m for m in chosen if m not in modules]
    if unknown:
        parser.error(f"not configured in [tool.metacog-mutation.modules]: {unknown}")
    chosen.sort(key=lambda m: (REPO / m).stat().st_size)  # smallest first
    excluded: dict[str, str] = cfg.get("excluded", {})
    unlisted = sorted(
        str(p.relative_to(REPO))
        for pattern in SCOPE
        for p in REPO.glob(pattern)
        if str(p.relative_to(REPO)) not in modules and str(p.relative_to(REPO)) not in excluded
    )
    if args.list:
        for m in chosen:
            print(f"{m}: {' '.join(modules[m])}")
        for m, why in excluded.items():
            print(f"{m}: not mutated ({why})")
        for m in unlisted:
            print(f"{m}: NOT CONFIGURED (add it to [tool.metacog-mutation.modules] or .excluded)")
        return 1 if unlisted else 0
    for m in unlisted:
        print(f"warning: {m} is in scope but neither configured nor excluded", file=sys.stderr)
    target = float(cfg.get("target", 0.9))
    pytest_args = list(cfg.get("pytest_args", ["-x", "-q", "-m", "not slow"]))
    results = []
    for m in chosen:
        print(f"== {m} ({', '.join(modules[m])})", flush=True)
        res = run_module(m, modules[m], args, pytest_args)
        results.append(res)
        s = res["stats"]
        flag = " (stopped at the timeout: partial)" if res["stopped_at_timeout"] else ""
        print(
            f"   {res['score']:.1%} killed: {s.get('killed', 0)} killed, "
            f"{s.get('timeout', 0)} timeout, {s.get('survived', 0)} survived, "
            f"{s.get('not_checked', 0)} not checked, {s.get('no_tests', 0)} without tests, "
            f"{s.get('total', 0)} total, {res['seconds']:.0f} s{flag}",
            flush=True,
        )
        for name in res["survivors"]:
            print(f"   survived: {name}")
        for name, diff in res.get("diffs", {}).items():
            print(f"--- {name}\n{diff}")
        if "log_tail" in res:
            print(res["log_tail"])
        if args.out:
            args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    below = [r["module"] for r in results if not r["score"] >= target]
    print(f"\nbelow the {target:.0%} target: {', '.join(below) if below else 'none'}")
    return 1 if below else 0


if __name__ == "__main__":
    raise SystemExit(main())
