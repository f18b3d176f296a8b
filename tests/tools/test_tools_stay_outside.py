"""tools/ is CI and data tooling beside the package: nothing under sentsweep/ imports it, and the wheel
carries neither it nor its data."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_package_never_imports_tools() -> None:
    sources = sorted((REPO / "sentsweep").rglob("*.py"))
    assert len(sources) > 20
    assert [str(p.relative_to(REPO)) for p in sources if "tools" in _imported_roots(p)] == []


def test_the_wheel_holds_no_tooling() -> None:
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["packages"]["find"]["include"] == ["sentsweep*"]
    assert all("schemas" not in pattern for pattern in setuptools["package-data"]["sentsweep"])
    assert not (REPO / "sentsweep" / "platform" / "schemas").exists()
