"""The one-way imports of DESIGN.md: the science (methods, data, evaluation) never loads Ray or MLflow."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
