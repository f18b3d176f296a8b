"""The one place that reads environment variables (see DESIGN.md, Conventions)."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "SENTSWEEP_DATA"
CACHE_ENV = "SENTSWEEP_CACHE"
PREPARED_ENV = "SENTSWEEP_PREPARED"
#: Set to "1" in the platform's own Ray pods (``k8s/``; ``make k8s-check`` requires it on every Ray container).
PLATFORM_POD_ENV = "SENTSWEEP_PLATFORM_POD"
#: Set by the kubelet in every container of every namespace: a pod, not which pod.
KUBERNETES_ENV = "KUBERNETES_SERVICE_HOST"


def data_dir_from_env() -> Path | None:
    """The shared data directory named by ``SENTSWEEP_DATA``, or None when unset or empty."""
    value = os.environ.get(DATA_ENV, "").strip()
    return Path(value).expanduser() if value else None


def prepared_root_from_env() -> str | None:
    """Where ``sentsweep data prepare`` stages datasets, named by ``SENTSWEEP_PREPARED`` (a folder or an
    ``s3://`` URI); None when unset or empty."""
    value = os.environ.get(PREPARED_ENV, "").strip()
    return value or None


def in_platform_pod() -> bool:
    """Whether this process runs in one of the platform's Ray pods: a Kubernetes container (``KUBERNETES_SERVICE_HOST``)
    whose manifest marks it (``SENTSWEEP_PLATFORM_POD=1``). The first alone is true in any pod of any namespace (a
    notebook, a CI runner), which may hold credentials the platform's pods do not."""
    return os.environ.get(PLATFORM_POD_ENV) == "1" and bool(os.environ.get(KUBERNETES_ENV))


def cache_dir() -> Path:
    """Where derived artefacts (negations, parses) are cached: ``SENTSWEEP_CACHE`` or ~/.cache/sentsweep."""
    value = os.environ.get(CACHE_ENV, "").strip()
    root = Path(value).expanduser() if value else Path.home() / ".cache" / "sentsweep"
    root.mkdir(parents=True, exist_ok=True)
    return root
