"""The folder Ray uploads as a job's ``working_dir``: the package and project files (without
:data:`EXCLUDES`) and the config, and the pinned requirements ``--pip``/``--uv`` install."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sentsweep.cluster.prepare import PreparedConfig
from sentsweep.errors import ConfigError

PROJECT_FILES = ("pyproject.toml", "constraints.txt", "README.md")
"""Files of the checkout staged beside the package (when present)."""

EXCLUDES = (
    ".venv", "venv", ".git", "runs", "ray_results", "mlruns", "mlruns*", "mlartifacts", "__pycache__",
    "*.pyc", "*.pyo", "*.egg-info", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".ipynb_checkpoints",
    "*.db", "*.db-journal", ".DS_Store",
)
"""Names (glob patterns) never staged: environments, caches, results and local tracking stores."""

MAX_WORKING_DIR_BYTES = 100 * 2**20
"""A staged working dir above this is refused (Ray uploads it into the cluster's object store)."""


@dataclass(frozen=True)
class StagedDir:
    """A folder Ray uploads as the job's ``working_dir``."""

    path: Path
    files: tuple[str, ...]  # relative POSIX paths
    size: int  # bytes
    config_path: str | None  # the config's path inside it


def project_dirs() -> tuple[Path, Path | None]:
    """The ``sentsweep`` package folder and, for a source checkout, the folder with its ``pyproject.toml``."""
    import sentsweep

    package = Path(sentsweep.__file__).resolve().parent
    root = package.parent
    return package, (root if (root / "pyproject.toml").is_file() else None)


def stage_working_dir(dest: Path, *, config: PreparedConfig | None = None, include_code: bool = True,
                      package_dir: Path | None = None, project_dir: Path | None = None) -> StagedDir:
    """Copy what a job needs into ``dest``: the package (without :data:`EXCLUDES`) and
    :data:`PROJECT_FILES` when ``include_code``, and the config as ``configs/<file>``."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if include_code:
        default_package, default_project = project_dirs()
        package_dir = package_dir or default_package
        project_dir = project_dir if project_dir is not None else default_project
        shutil.copytree(package_dir, dest / package_dir.name, ignore=shutil.ignore_patterns(*EXCLUDES),
                        dirs_exist_ok=True)
        for name in PROJECT_FILES if project_dir is not None else ():
            if (project_dir / name).is_file():
                shutil.copy2(project_dir / name, dest / name)
    config_path = None
    if config is not None:
        config_path = f"configs/{config.filename}"
        (dest / "configs").mkdir(exist_ok=True)
        (dest / config_path).write_text(config.text, encoding="utf-8")
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    sizes = {p.relative_to(dest).as_posix(): p.stat().st_size for p in files}
    total = sum(sizes.values())
    if total > MAX_WORKING_DIR_BYTES:
        biggest = ", ".join(f"{name} ({size / 2**20:.1f} MiB)"
                            for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:3])
        raise ConfigError(f"the staged working dir is {total / 2**20:.0f} MiB (limit "
                          f"{MAX_WORKING_DIR_BYTES / 2**20:.0f} MiB); largest: {biggest}", field="working_dir")
    return StagedDir(dest, tuple(sizes), total, config_path)


def pinned_requirements(project_dir: Path | None = None) -> list[str]:
    """The project's runtime requirements (pinned ``==`` in ``pyproject.toml``; else the installed
    distribution's metadata), as ``--pip``/``--uv`` install them on the cluster."""
    if project_dir is None:
        project_dir = project_dirs()[1]
    if project_dir is not None:
        data = tomllib.loads((project_dir / "pyproject.toml").read_text(encoding="utf-8"))
        return list(data.get("project", {}).get("dependencies", []))
    from importlib.metadata import PackageNotFoundError, requires

    try:
        return [r for r in requires("sentsweep") or [] if "extra ==" not in r]
    except PackageNotFoundError:
        raise ConfigError("no pyproject.toml and no installed sentsweep to read requirements from",
                          field="--pip") from None


@contextlib.contextmanager
def job_workdir() -> Iterator[Path]:
    """A temporary folder to stage a working dir in (removed once Ray has uploaded it)."""
    folder = Path(tempfile.mkdtemp(prefix="sentsweep-submit-"))
    try:
        yield folder / "job"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
