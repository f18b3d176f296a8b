"""Which code produced a figure: the package version, the git commit, and a digest of the evaluation code.

Used by the evaluation protocols (:mod:`sentsweep.evaluation.metric_protocols`: the ``code_version`` and
``eval_code`` of every metric) and by tracking (the ``mlflow.source.git.commit`` tag of sweeps and trials).
Each answer is computed once per process (a dev evaluation every N steps must not start ``git`` each time).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import subprocess
from pathlib import Path

#: The checkout (or installed tree) holding the ``sentsweep`` package.
PACKAGE_DIR = Path(__file__).resolve().parent
#: The subpackages whose source decides an evaluation figure (loaders, sample order, classifiers, scores).
EVAL_CODE_PACKAGES: tuple[str, ...] = ("evaluation", "data")


@functools.lru_cache(maxsize=8)
def git_commit(start: Path | None = None) -> str | None:
    """The commit of the checkout holding ``start`` (default: the ``sentsweep`` package); None outside git."""
    where = start or PACKAGE_DIR.parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def package_version() -> str:
    """The installed ``sentsweep`` version (the package's own ``__version__`` when not installed)."""
    try:
        return importlib.metadata.version("sentsweep")
    except importlib.metadata.PackageNotFoundError:
        from sentsweep import __version__

        return __version__


def code_version() -> str:
    """``sentsweep 0.1.0`` plus ``@<12 hex>`` of the git commit when the package runs from a checkout."""
    sha = git_commit()
    return f"sentsweep {package_version()}" + (f"@{sha[:12]}" if sha else "")


@functools.lru_cache(maxsize=1)
def eval_code_digest() -> str:
    """12 hex of SHA-256 over the Python sources of :data:`EVAL_CODE_PACKAGES` (paths and contents, sorted).

    Two figures computed by the same evaluation code have the same digest whatever else changed in the
    checkout, so comparisons across commits stay possible when the evaluation did not change.
    """
    digest = hashlib.sha256()
    for package in EVAL_CODE_PACKAGES:
        for path in sorted((PACKAGE_DIR / package).rglob("*.py")):
            digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode("utf-8") + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
