"""The one-way imports of DESIGN.md: the science (methods, data, evaluation) never loads Ray or MLflow; only
the CLI (``sentsweep/cli/``) knows argparse, and nothing below it imports the CLI; inside ``sentsweep/platform``,
only the driver imports across its sibling sub-packages; and no module is over 400 lines."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import sentsweep


def _modules(package: str) -> list[str]:
    module = __import__(package, fromlist=["__path__"])
    return [package] + [m.name for m in pkgutil.walk_packages(module.__path__, prefix=f"{package}.")]


def test_science_modules_import_without_ray_or_mlflow() -> None:
    science = [m for p in ("methods", "data", "evaluation") for m in _modules(f"sentsweep.{p}")]
    assert "sentsweep.methods.sncse.negation" in science and "sentsweep.methods.multiview.cells" in science
    assert sentsweep.__name__ == "sentsweep"
    code = (
        "import importlib, sys\n"
        f"for name in {science!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'mlflow')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]", out.stdout


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_only_the_cli_knows_argparse_and_nothing_below_imports_it() -> None:
    root = Path(sentsweep.__file__).resolve().parent
    above = {root / "__main__.py"}  # `python -m sentsweep`: the command itself, as the console script is
    below = {p.relative_to(root.parent).as_posix(): p for p in root.rglob("*.py")
             if not p.is_relative_to(root / "cli") and p not in above}
    assert "sentsweep/platform/driver/sweep.py" in below and "sentsweep/cli/__init__.py" not in below
    argparse_users = sorted(name for name, path in below.items() if "argparse" in _imports(path))
    cli_users = sorted(name for name, path in below.items()
                       if any(m == "sentsweep.cli" or m.startswith("sentsweep.cli.") for m in _imports(path)))
    assert argparse_users == [], argparse_users
    assert cli_users == [], cli_users


def test_only_the_driver_imports_across_the_platform_sub_packages() -> None:
    platform = Path(sentsweep.__file__).resolve().parent / "platform"
    subs = {p.name for p in platform.iterdir() if (p / "__init__.py").is_file()}
    assert {"driver", "search", "confirm", "folder", "tracking", "report"} <= subs
    crossing = []
    for path in platform.rglob("*.py"):
        own = path.relative_to(platform).parts[0]
        if own not in subs or own == "driver":
            continue
        for name in _imports(path):
            parts = name.split(".")
            if parts[:2] == ["sentsweep", "platform"] and len(parts) > 2 and parts[2] in subs - {own}:
                crossing.append(f"{path.relative_to(platform).as_posix()} imports {name}")
    assert crossing == [], crossing


def test_each_platform_sub_package_names_what_the_rest_imports_from_it() -> None:
    """A sub-package's ``__all__`` is its face: exactly the names the rest of the code (the package, ``tools/``,
    ``bench/``) imports from its modules. A name missing from it, or one nobody outside uses, fails here."""
    import importlib

    repo = Path(sentsweep.__file__).resolve().parent.parent
    platform = repo / "sentsweep" / "platform"
    subs = sorted(p.name for p in platform.iterdir() if (p / "__init__.py").is_file())
    imported: dict[str, set[str]] = {sub: set() for sub in subs}
    for root in ("sentsweep", "tools", "bench"):
        for path in (repo / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.ImportFrom) and node.module and not node.level):
                    continue
                parts = node.module.split(".")
                if parts[:2] != ["sentsweep", "platform"] or len(parts) < 3 or parts[2] not in imported:
                    continue
                if path.is_relative_to(platform / parts[2]):
                    continue
                imported[parts[2]].update(alias.name for alias in node.names)
    faces = {sub: set(importlib.import_module(f"sentsweep.platform.{sub}").__all__) for sub in subs}
    assert "SweepLock" in imported["folder"] and "run_sweep" in imported["driver"]
    assert faces == imported, {sub: {"missing": sorted(imported[sub] - faces[sub]),
                                     "unused": sorted(faces[sub] - imported[sub])}
                               for sub in subs if faces[sub] != imported[sub]}


def test_no_module_is_over_400_lines() -> None:
    """A module that grows past 400 lines holds more than one thing: split it by what its parts hold."""
    package = Path(__file__).resolve().parents[1] / "sentsweep"
    long = {str(path.relative_to(package)): n for path in package.rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}
