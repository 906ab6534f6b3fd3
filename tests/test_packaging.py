"""The wheel ships every package folder and the lm-eval task configs."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _declared_packages() -> set[str]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    return set(data["tool"]["setuptools"]["packages"])


def test_every_package_folder_is_declared() -> None:
    found = set()
    for root in ("metacog_metrics", "metacog_tasks", "rlmf_plugin"):
        for init in (REPO / root).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO)
            if "packs" in rel.parts:  # data, not code
                continue
            found.add(".".join(rel.parts))
    found.add("metacog_tasks.task_configs")
    missing = found - _declared_packages()
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {missing}"


def test_task_configs_are_importable_package_data() -> None:
    import metacog_tasks.task_configs as configs

    assert Path(configs.__file__).parent.resolve() == (REPO / "task_configs").resolve()


def _stub_exports(package: str) -> dict[str, str]:
    """``{name: module}`` of the ``from .module import name as name`` lines of a package's
    ``__init__.pyi`` (the one export list, read at run time by lazy_loader)."""
    import ast

    stub = REPO / package.replace(".", "/") / "__init__.pyi"
    return {
        alias.name: f"{package}.{node.module}"
        for node in ast.parse(stub.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


@pytest.mark.parametrize("package", ["metacog_metrics", "metacog_metrics.analyze"])
def test_exports_resolve_to_their_modules_objects(package: str) -> None:
    import importlib

    pkg = importlib.import_module(package)
    exports = _stub_exports(package)
    assert sorted(pkg.__all__) == sorted(exports) and len(exports) > 5
    assert set(pkg.__all__) <= set(dir(pkg))
    for name, module in exports.items():
        assert getattr(pkg, name) is getattr(importlib.import_module(module), name), name
    with pytest.raises(AttributeError, match="not_exported"):
        pkg.not_exported  # noqa: B018


def test_tetrachoric_is_the_function_after_its_module_is_imported() -> None:
    """The function shares its name with its module: importing the module must not shadow it
    on the package (a fresh interpreter, the module imported first by another path)."""
    import subprocess
    import sys

    code = (
        "import sys, metacog_metrics.calibration, metacog_metrics;"
        "t = sys.modules['metacog_metrics.tetrachoric'];"
        "from metacog_metrics import tetrachoric;"
        "assert tetrachoric is t.tetrachoric and metacog_metrics.tetrachoric is t.tetrachoric"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_harness_packages_import_only_public_metrics_names() -> None:
    # metacog_tasks and rlmf_plugin use metacog_metrics through its public list only.
    import ast

    import metacog_metrics

    public = set(metacog_metrics.__all__)
    offending = []
    for root in ("metacog_tasks", "rlmf_plugin"):
        for path in (REPO / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "metacog_metrics"
                ):
                    if node.module != "metacog_metrics":
                        offending.append(f"{path.relative_to(REPO)}: from {node.module}")
                    offending += [
                        f"{path.relative_to(REPO)}: {a.name}"
                        for a in node.names
                        if a.name not in public
                    ]
                elif isinstance(node, ast.Import):
                    offending += [
                        f"{path.relative_to(REPO)}: import {a.name}"
                        for a in node.names
                        if a.name.startswith("metacog_metrics.")
                    ]
    assert not offending, offending


def test_every_task_config_file_is_package_data() -> None:
    from fnmatch import fnmatch

    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["metacog_tasks.task_configs"]
    files = [p.name for p in (REPO / "task_configs").iterdir() if p.is_file() and p.suffix != ".py"]
    assert "_default_template_yaml" in files  # the YAMLs' include: template ships too
    missing = [f for f in files if not any(fnmatch(f, pattern) for pattern in patterns)]
    assert not missing, f"add to the task_configs package-data in pyproject.toml: {missing}"


def test_rlmf_plugin_imports_nothing_private_of_metacog_tasks() -> None:
    import ast

    offending = []
    for path in (REPO / "rlmf_plugin").rglob("*.py"):
        where = path.relative_to(REPO)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("metacog_tasks"):
                module = node.module or ""
                if any(part.startswith("_") for part in module.split(".")):
                    offending.append(f"{where}: from {module}")
                offending += [f"{where}: {a.name}" for a in node.names if a.name.startswith("_")]
            elif isinstance(node, ast.Import):
                offending += [
                    f"{where}: import {a.name}"
                    for a in node.names
                    if a.name.startswith("metacog_tasks")
                    and any(part.startswith("_") for part in a.name.split("."))
                ]
    assert not offending, offending
