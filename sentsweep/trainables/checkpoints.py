"""A trial's checkpoints and its best weights: the layout, the marker files, validation, and the one copy of the
best weights. No Ray import here; folders may live on any :mod:`pyarrow.fs` filesystem (local, S3/MinIO).

A checkpoint (one folder per checkpointed report) holds what an exact resume needs, once::

    model/            the current weights (``task.save``): the only weights in a checkpoint
    state.pt          optimizer, scheduler, grad scaler, RNG states (tensors), loop position, history;
                      loads with ``torch.load(weights_only=True)``
    checkpoint.json   written last: step, best step and value, whether ``model/`` is the best so far
                      (``weights_are_best``), and every file's size (a truncated file is caught before loading)

The best weights of a trial are kept once, in a best folder beside its checkpoints (``<trial>/best/`` on a Tune
trial's storage, ``<work>/best/`` standalone)::

    <weight files>    hard links to a persisted checkpoint's ``model/`` files on local storage, server-side copies
                      on S3 (nothing uploaded again); uploaded from the worker only when the report that improved
                      wrote no checkpoint (``checkpoint_every`` > 1)
    best.json         written last (removed first when the folder is replaced): step, value, file sizes

A new best is written whole into ``best.next/`` beside it first (its ``best.json`` last), and ``best/`` is then
replaced from there (hard links locally, server-side copies on S3) and ``best.next/`` removed, so a failed upload or
a lost node in the middle never leaves the trial without complete best weights; a replacement cut short is finished
at the trial's next restore (:meth:`BestFolder.settle`), and readers take a complete ``best.next/`` meanwhile.

Which folder holds a trial's best weights (:func:`pick_best`): the checkpoint's ``model/`` when its marker says the
weights are the best, else the best folder when its marker is intact; when both are intact, the better value.
"""

from __future__ import annotations

import json
import logging
import math
import os
import posixpath
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.fs
import torch

from sentsweep.errors import SentsweepError

STATE_FILE = "state.pt"
MODEL_DIR = "model"
BEST_DIR = "best"
#: ``best.next/``: where a new best is written whole before ``best/`` is replaced from it.
NEXT_SUFFIX = ".next"
CHECKPOINT_MARKER = "checkpoint.json"
BEST_MARKER = "best.json"
#: Version of the layout above (checkpoint.json's ``format``).
FORMAT = 2

logger = logging.getLogger(__name__)


class CorruptCheckpointError(SentsweepError):
    """A checkpoint that cannot be resumed from (missing marker, truncated or unreadable file)."""


#: What torch's CPU allocator says when the host has no memory left (a ``RuntimeError``, not a ``MemoryError``).
HOST_OUT_OF_MEMORY = ("DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory")


class CheckpointUnreadableError(RuntimeError):
    """A checkpoint that could not be read for a reason outside it (:func:`failed_outside_the_checkpoint`). Not a
    :class:`~sentsweep.errors.SentsweepError` (which ends a trial at once) nor an out-of-memory error (which marks
    its settings infeasible): the attempt fails, and Tune retries it from the same checkpoint."""


def failed_outside_the_checkpoint(exc: BaseException) -> bool:
    """Whether reading a checkpoint failed for a reason outside it, which a later attempt may not meet: the node's
    disk full, a storage or network error (``OSError`` but a missing file), no memory (host or GPU). Such a
    checkpoint is not skipped for an older one or for a fresh start; the attempt fails instead, and Tune retries
    it from the same checkpoint (a full disk must not take a trial back to step 0)."""
    if isinstance(exc, MemoryError | torch.OutOfMemoryError):
        return True
    if isinstance(exc, RuntimeError) and any(words in str(exc) for words in HOST_OUT_OF_MEMORY):
        return True  # torch's CPU allocator raises a plain RuntimeError
    return isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError | NotADirectoryError | IsADirectoryError)


@dataclass(frozen=True)
class StoredFolder:
    """A folder on a :mod:`pyarrow.fs` filesystem (a local one, or a Tune trial's storage)."""

    fs: pyarrow.fs.FileSystem
    path: str

    @classmethod
    def local(cls, path: str | Path) -> StoredFolder:
        return cls(pyarrow.fs.LocalFileSystem(), str(Path(path).resolve()))

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pyarrow.fs.LocalFileSystem)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))

    def child(self, name: str) -> StoredFolder:
        return StoredFolder(self.fs, posixpath.join(self.path, name))

    def parent(self) -> StoredFolder:
        return StoredFolder(self.fs, posixpath.dirname(self.path.rstrip("/")))

    def exists(self) -> bool:
        return self.fs.get_file_info(self.path).type == pyarrow.fs.FileType.Directory

    def files(self) -> dict[str, int]:
        """Every file below the folder: relative POSIX path -> size (empty when the folder is absent)."""
        selector = pyarrow.fs.FileSelector(self.path, recursive=True, allow_not_found=True)
        root = self.path.rstrip("/") + "/"
        return {info.path.removeprefix(root): int(info.size or 0) for info in self.fs.get_file_info(selector)
                if info.type == pyarrow.fs.FileType.File}

    def subfolders(self) -> list[str]:
        selector = pyarrow.fs.FileSelector(self.path, allow_not_found=True)
        return sorted(i.base_name for i in self.fs.get_file_info(selector) if i.type == pyarrow.fs.FileType.Directory)

    def read_json(self, name: str) -> dict[str, Any] | None:
        """A JSON file of the folder; None when it is absent or unreadable."""
        try:
            with self.fs.open_input_stream(posixpath.join(self.path, name)) as stream:
                value = json.loads(stream.readall())
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def write_json(self, name: str, value: dict[str, Any]) -> None:
        with self.fs.open_output_stream(posixpath.join(self.path, name)) as out:
            out.write(json.dumps(value, sort_keys=True).encode())

    def fetch(self, scratch: Path) -> Path:
        """A local folder with the files: the folder itself when local, else a download into ``scratch``."""
        if self.is_local:
            return Path(self.path)
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        pyarrow.fs.copy_files(self.path, str(scratch), source_filesystem=self.fs,
                              destination_filesystem=pyarrow.fs.LocalFileSystem())
        return scratch

    def remove(self) -> None:
        if self.fs.get_file_info(self.path).type != pyarrow.fs.FileType.NotFound:
            self.fs.delete_dir(self.path)


# -- checkpoints ---------------------------------------------------------------------------------------------------
def write_checkpoint_marker(directory: Path, step: int, best_step: int | None, best_value: float | None) -> None:
    """``checkpoint.json`` of a checkpoint folder whose other files are written (call it last)."""
    files = StoredFolder.local(directory).files()
    files.pop(CHECKPOINT_MARKER, None)
    (directory / CHECKPOINT_MARKER).write_text(json.dumps({
        "format": FORMAT, "step": step, "best_step": best_step, "best_value": best_value,
        "weights_are_best": best_step is not None and best_step == step, "files": files,
    }, sort_keys=True))


def check_checkpoint(directory: Path) -> dict[str, Any]:
    """The marker of a complete checkpoint; :class:`CorruptCheckpointError` naming what is missing or truncated."""
    marker = StoredFolder.local(directory).read_json(CHECKPOINT_MARKER)
    if marker is None:
        raise CorruptCheckpointError(f"{directory.name}: no readable {CHECKPOINT_MARKER} (half-written?)")
    for name, size in marker.get("files", {}).items():
        path = directory / name
        if not path.is_file():
            raise CorruptCheckpointError(f"{directory.name}: {name} is missing")
        if path.stat().st_size != size:
            raise CorruptCheckpointError(f"{directory.name}: {name} has {path.stat().st_size} bytes, "
                                         f"{size} were written (truncated?)")
    return marker


def rng_state() -> dict[str, Any]:
    """Every generator's state in types ``torch.load(weights_only=True)`` accepts (numpy's key array as a
    tensor), so a checkpoint never needs the unpickler that can run code."""
    name, keys, pos, has_gauss, cached_gaussian = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached_gaussian)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    numpy = state["numpy"]
    np.random.set_state((numpy["name"], numpy["keys"].numpy().astype(np.uint32), numpy["pos"],
                         numpy["has_gauss"], numpy["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])



# -- the best weights ----------------------------------------------------------------------------------------------
class BestFolder:
    """The one copy of a trial's best weights (see the module docstring), replaced through ``best.next/``."""

    def __init__(self, folder: StoredFolder) -> None:
        self.folder = folder
        #: Where a replacement is written whole before ``folder`` is replaced from it (``best.next/``).
        self.spare = folder.parent().child(f"{folder.name}{NEXT_SUFFIX}")

    def intact(self) -> tuple[StoredFolder, dict[str, Any]] | None:
        """The folder holding complete best weights and its marker: ``best.next/`` when a replacement was cut short
        after it was complete (the newer weights: a replacement only ever installs better ones), else ``best/``
        when complete; None when neither is."""
        for folder in (self.spare, self.folder):
            marker = _complete_marker(folder)
            if marker is not None:
                return folder, marker
        return None

    def marker(self) -> dict[str, Any] | None:
        """``best.json`` of the complete best weights (:meth:`intact`), else None."""
        found = self.intact()
        return found[1] if found is not None else None

    def keep(self, source: StoredFolder, step: int, value: float) -> None:
        """Make the folder hold the weights of ``source``: hard links when both are local, a server-side copy when
        both are on the same remote storage, an upload otherwise. They are written whole into ``best.next/`` first
        (marker last), then ``best/`` is replaced from there (:meth:`settle`): at every moment one of the two holds
        complete weights, so a failed upload or a lost node never loses the best weights already kept."""
        self.settle()  # a replacement cut short before: finished first (its best.next/ may be the only copy)
        files = source.files()
        marker = {"step": step, "value": value, "files": files}
        _fill(self.spare, source, files, marker)
        self._install(marker)

    def settle(self) -> None:
        """Finish a replacement cut short: a complete ``best.next/`` replaces ``best/`` (:meth:`_install`); an
        incomplete one is removed (``best/`` still holds the weights kept before)."""
        marker = _complete_marker(self.spare)
        if marker is None:
            self.spare.remove()
        else:
            self._install(marker)

    def _install(self, marker: dict[str, Any]) -> None:
        """Replace ``best/`` from the complete ``best.next/`` whose ``best.json`` is ``marker`` (the old marker
        removed first, the new one written last), then remove ``best.next/``."""
        self.folder.fs.create_dir(self.folder.path, recursive=True)
        old = posixpath.join(self.folder.path, BEST_MARKER)
        if self.folder.fs.get_file_info(old).type == pyarrow.fs.FileType.File:
            self.folder.fs.delete_file(old)
        self.folder.fs.delete_dir_contents(self.folder.path, missing_dir_ok=True)
        _fill(self.folder, self.spare, marker.get("files", {}), marker)
        self.spare.remove()

    def fetch(self, scratch: Path) -> Path | None:
        """A local folder with the best weights (None when neither folder is complete)."""
        found = self.intact()
        return found[0].fetch(scratch) if found is not None else None

    def remove(self) -> int:
        """Remove the best weights (and a replacement's spare); the bytes removed."""
        size = 0
        for folder in (self.folder, self.spare):
            size += sum(folder.files().values())
            folder.remove()
        return size


def _complete_marker(folder: StoredFolder) -> dict[str, Any] | None:
    """``best.json`` of ``folder`` when every file it names is there with its size, else None."""
    marker = folder.read_json(BEST_MARKER)
    if marker is None:
        return None
    files = folder.files()
    if any(files.get(name) != size for name, size in marker.get("files", {}).items()):
        return None
    return marker


def _fill(dest: StoredFolder, source: StoredFolder, files: dict[str, int], marker: dict[str, Any]) -> None:
    """Copy ``files`` of ``source`` into ``dest`` (:func:`_copy_one`), then its ``best.json`` (last)."""
    dest.fs.create_dir(dest.path, recursive=True)
    for name in files:
        if name != BEST_MARKER:
            _copy_one(source, dest, name)
    dest.write_json(BEST_MARKER, marker)


def _same_storage(a: StoredFolder, b: StoredFolder) -> bool:
    try:
        return bool(a.fs.equals(b.fs))
    except TypeError:
        return a.fs is b.fs


def _copy_one(source: StoredFolder, dest: StoredFolder, name: str) -> None:
    src, dst = posixpath.join(source.path, name), posixpath.join(dest.path, name)
    if posixpath.dirname(name):
        dest.fs.create_dir(posixpath.dirname(dst), recursive=True)
    if source.is_local and dest.is_local:
        try:
            os.link(src, dst)  # the same bytes on disk, no copy
            return
        except OSError:  # another device, or a filesystem without hard links
            shutil.copyfile(src, dst)
            return
    if _same_storage(source, dest):
        dest.fs.copy_file(src, dst)  # S3: CopyObject, server-side
        return
    pyarrow.fs.copy_files(src, dst, source_filesystem=source.fs, destination_filesystem=dest.fs)


def _better(a: float, b: float, mode: str) -> bool:
    return a > b if mode == "max" else a < b


@dataclass(frozen=True)
class BestSource:
    """Where a trial's best weights are: a folder, their step and dev value."""

    folder: StoredFolder
    step: int
    value: float
    in_checkpoint: bool


def pick_best(checkpoint: StoredFolder | None, best: BestFolder | None, mode: str,
              checkpoint_marker: dict[str, Any] | None = None) -> BestSource | None:
    """The folder holding the best weights: the checkpoint's ``model/`` when its marker says they are the best,
    the best folder when complete; the better of the two when both qualify (None when neither does)."""
    found: list[BestSource] = []
    marker = checkpoint_marker
    if marker is None and checkpoint is not None:
        marker = checkpoint.read_json(CHECKPOINT_MARKER)
    if checkpoint is not None and marker and marker.get("weights_are_best") and _finite(marker.get("best_value")):
        found.append(BestSource(checkpoint.child(MODEL_DIR), int(marker["step"]), float(marker["best_value"]), True))
    kept = best.intact() if best is not None else None
    if kept is not None and _finite(kept[1].get("value")):
        found.append(BestSource(kept[0], int(kept[1]["step"]), float(kept[1]["value"]), False))
    if not found:
        return None
    choice = found[0]
    for other in found[1:]:
        if _better(other.value, choice.value, mode) or other.value == choice.value:
            choice = other
    return choice


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def trial_best(checkpoint: StoredFolder) -> BestFolder:
    """The best folder of the trial a checkpoint belongs to (``<trial>/best`` beside ``<trial>/checkpoint_*``)."""
    return BestFolder(checkpoint.parent().child(BEST_DIR))


def checkpoint_weights(checkpoint: Path, mode: str = "max") -> Path:
    """The local folder holding the best weights as of ``checkpoint`` (a checkpoint folder of a local trial):
    its ``model/`` or the trial's ``best/`` (:func:`pick_best`); a checkpoint of the first layout keeps its own
    ``best/`` when the current weights were not the best."""
    folder = StoredFolder.local(checkpoint)
    source = pick_best(folder, trial_best(folder), mode)
    if source is not None:
        return Path(source.folder.path)
    legacy = checkpoint / BEST_DIR
    return legacy if legacy.is_dir() else checkpoint / MODEL_DIR


def previous_checkpoints(latest: StoredFolder) -> Iterator[StoredFolder]:
    """The trial's other ``checkpoint_*`` folders older than ``latest``, newest first (the fallbacks of a corrupt
    latest checkpoint; Tune keeps ``num_to_keep`` of them)."""
    trial = latest.parent()
    names = [n for n in trial.subfolders() if n.startswith("checkpoint_") and n < latest.name]
    for name in reversed(names):
        yield trial.child(name)
