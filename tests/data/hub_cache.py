"""Files laid out as the Hugging Face hub's cache keeps them, for the hub's real download functions offline."""

from __future__ import annotations

from pathlib import Path


def hf_cache_file(cache: Path, repo: str, relative: str, *, kind: str = "datasets", commit: str = "c0ffee",
                   ref: str = "main") -> Path:
    """A file where the hub's cache keeps it: ``<kind>--org--name/snapshots/<commit>/<relative>`` plus the ref."""
    folder = cache / f"{kind}--{repo.replace('/', '--')}"
    (folder / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
    (folder / "refs" / ref).write_text(commit)
    path = folder / "snapshots" / commit / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
