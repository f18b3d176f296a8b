"""No import cycles among the package's modules, type-level ones included.

Every ``import`` statement of every module counts: top-level, inside functions, and under
``if TYPE_CHECKING:``. ``from pkg import name`` is an edge to the submodule ``pkg.name`` when that is a
module, else to ``pkg``. Cycles are the strongly connected components of that graph (Tarjan).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import sentsweep

PACKAGE_DIR = Path(sentsweep.__file__).resolve().parent
PACKAGE = PACKAGE_DIR.name


def package_modules(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names one import statement loads (not yet resolved to modules of the package)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """``module -> modules of the package it imports`` (any import statement, anywhere in the file)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = list(_imported(node, name, path.name == "__init__.py"))
            if isinstance(node, ast.ImportFrom):  # `from pkg import x`: the submodule pkg.x, else pkg
                base, members = names[0], names[1:]
                found = [m for m in members if m in modules]
                if len(found) < len(members) and base in modules:
                    found.append(base)
                targets.update(found)
            else:
                targets.update(n for n in names if n in modules)
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
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
    return sorted(found)


def _describe(component: list[str], graph: dict[str, set[str]]) -> str:
    members = set(component)
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return "cycle of " + ", ".join(component) + ":\n    " + "\n    ".join(edges)


def test_the_graph_sees_every_kind_of_import() -> None:
    modules = package_modules()
    graph = import_graph(modules)
    assert len(modules) > 50 and f"{PACKAGE}.cli" in modules
    # a function-local import and a `from package import module`
    assert f"{PACKAGE}.platform.driver.sweep" in graph[f"{PACKAGE}.cli.sweeps"]
    assert f"{PACKAGE}.data" in graph[f"{PACKAGE}.cli.preprocess"]


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert cycles(graph) == [["a", "b", "c"], ["d", "e"]]


def test_the_package_has_no_import_cycles() -> None:
    graph = import_graph(package_modules())
    found = cycles(graph)
    assert not found, "import cycles (type-level and function-local imports count):\n" + "\n".join(
        _describe(c, graph) for c in found)
