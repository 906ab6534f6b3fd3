"""No import cycles and the layers of the three packages (import-linter's contracts in
pyproject.toml, and a module-level cycle search with grimp, its graph library)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("metacog_metrics", "metacog_tasks", "rlmf_plugin")

#: Imports a pending fix removes (the same ones the contracts ignore for now): each must still
#: exist, so that its entry goes when the fix lands.
PENDING: set[tuple[str, str]] = set()


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_search_finds_a_planted_cycle():
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a"),
                               ("p", "p.d")):  # fmt: skip
        graph.add_import(importer=importer, imported=imported)
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_no_import_cycle_between_modules():
    """Between any two modules, a package's ``__init__`` and its own modules included (which
    import-linter's sibling contract does not see), with imports under TYPE_CHECKING too."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    for importer, imported in PENDING:
        assert graph.direct_import_exists(importer=importer, imported=imported), (
            f"{importer} -> {imported} is gone: remove it from PENDING and pyproject.toml"
        )
        graph.remove_import(importer=importer, imported=imported)
    assert _cycles(graph) == []


def test_import_contracts_hold():
    """``lint-imports`` (also run by .ci/run) keeps every contract of pyproject.toml."""
    command = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(command), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "Contracts: 6 kept, 0 broken." in run.stdout
