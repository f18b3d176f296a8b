"""The one place that reads environment variables (see DESIGN.md, Conventions)."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "SENTSWEEP_DATA"
CACHE_ENV = "SENTSWEEP_CACHE"
PREPARED_ENV = "SENTSWEEP_PREPARED"


def data_dir_from_env() -> Path | None:
    """The shared data directory named by ``SENTSWEEP_DATA``, or None when unset or empty."""
    value = os.environ.get(DATA_ENV, "").strip()
    return Path(value).expanduser() if value else None


def prepared_root_from_env() -> str | None:
    """Where ``sentsweep data prepare`` stages datasets, named by ``SENTSWEEP_PREPARED`` (a folder or an
    ``s3://`` URI); None when unset or empty."""
    value = os.environ.get(PREPARED_ENV, "").strip()
    return value or None


def cache_dir() -> Path:
    """Where derived artefacts (negations, parses) are cached: ``SENTSWEEP_CACHE`` or ~/.cache/sentsweep."""
    value = os.environ.get(CACHE_ENV, "").strip()
    root = Path(value).expanduser() if value else Path.home() / ".cache" / "sentsweep"
    root.mkdir(parents=True, exist_ok=True)
    return root
