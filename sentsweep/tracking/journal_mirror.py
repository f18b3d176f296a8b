"""A worker's tracking journal copied into the trial's folder of the sweep storage, for a driver on another machine.

With a sweep folder on a shared local file system, a trial's journal lives in its trial folder and the driver
replays it from there (:func:`~sentsweep.tracking.trial_logger.journal_locations`). With remote storage (S3,
MinIO) the journal lives on the worker's node, out of the driver's reach when that node is another machine;
so the worker also *pushes* it (the journal and its state file, a few KB) into the trial's storage folder
through the storage's pyarrow file system whenever entries are pending, and once more after they were
delivered (so that the copy says so). The driver *pulls* that copy into its own journal folder when the
trial has ended, at the end of the sweep and on resume, and replays it (:mod:`sentsweep.platform.
tracking_journals`).

The copy is an append-only journal like the original, so a delivered offset means the same in both: a pull
keeps the larger of the worker's and the driver's offsets. Every entry is idempotent (:mod:`.replay`), and a
worker whose copy was pushed with pending entries forgets what it assumed about its run's metric histories
(:meth:`~sentsweep.tracking.replay.Replayer.forget`), so that neither side stores a point twice when both
deliver.

A remote sweep's driver copies its own journals the same way, into the sweep's storage folder
(:class:`~sentsweep.platform.tracking_journals.StoredJournals`); its ``dirty`` mark is kept in a local file
(``marker``), so that every object and process of that driver agrees on it.
"""

from __future__ import annotations

import logging
import posixpath
from pathlib import Path
from typing import Any

from sentsweep.data.cache import atomic_write
from sentsweep.tracking.journal import TRIAL_JOURNAL, Journal, JournalState

log = logging.getLogger("sentsweep.tracking")


def _state_name(name: str) -> str:
    return name + ".state"


class JournalMirror:
    """The copy of a trial's journal at ``folder`` (a path on ``filesystem``, a :class:`pyarrow.fs.FileSystem`)."""

    def __init__(self, filesystem: Any, folder: str, name: str = TRIAL_JOURNAL, marker: Path | None = None) -> None:
        self.filesystem = filesystem
        self.folder = folder
        self.name = name
        self.marker = marker  # a local file that keeps :attr:`dirty` beyond this object (a driver's journals)
        self._dirty = False

    @property
    def dirty(self) -> bool:
        """The copy was pushed with pending entries (or pulled with some): push again once they are delivered."""
        return self.marker.is_file() if self.marker is not None else self._dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        if self.marker is None:
            self._dirty = value
        elif value:
            self.marker.parent.mkdir(parents=True, exist_ok=True)
            self.marker.touch()
        else:
            self.marker.unlink(missing_ok=True)

    @property
    def path(self) -> str:
        return posixpath.join(self.folder, self.name)

    def __repr__(self) -> str:
        return f"JournalMirror({type(self.filesystem).__name__}:{self.path})"

    # -- the worker's side ------------------------------------------------------------------------------
    def push(self, journal: Journal) -> bool:
        """Copy ``journal`` and its state here when entries are pending (or were at the last push); whether it
        copied. Never raises: a storage outage only delays the copy to the next call."""
        if journal.path is None or not journal.path.is_file():
            return False
        pending = journal.pending()
        if not pending and not self.dirty:
            return False
        try:
            self.filesystem.create_dir(self.folder, recursive=True)
            self._write(self.path, journal.path.read_bytes())
            if journal.state_path.is_file():
                self._write(_state_name(self.path), journal.state_path.read_bytes())
        except Exception as exc:  # noqa: BLE001 - best-effort, like every tracking call of a trial
            log.warning("could not copy the tracking journal to %s: %s", self, exc)
            return False
        self.dirty = pending > 0
        return True

    def _write(self, path: str, data: bytes) -> None:
        with self.filesystem.open_output_stream(path) as out:
            out.write(data)

    # -- the driver's side ------------------------------------------------------------------------------
    def pull(self, dest: Path) -> Journal | None:
        """The copy as a local :class:`Journal` at ``dest`` (its entries replaced by the copy's, its delivered
        offset the larger of the two); None when there is no copy (the worker delivered everything)."""
        try:
            data = self._read(self.path)
        except (FileNotFoundError, OSError):
            return None
        journal = Journal(dest)
        with journal.locked():
            local = journal.state()
            try:
                theirs = JournalState.from_json(self._read(_state_name(self.path)))
            except (FileNotFoundError, OSError, ValueError):
                theirs = JournalState()
            dest.parent.mkdir(parents=True, exist_ok=True)
            if len(data) >= (dest.stat().st_size if dest.is_file() else 0):  # never a shorter (older) copy
                with atomic_write(dest) as handle:
                    handle.write(data)
            if theirs.delivered > local.delivered or (local.run_id is None and theirs.run_id):
                best, other = (theirs, local) if theirs.delivered > local.delivered else (local, theirs)
                journal.save_state(JournalState(best.delivered, best.run_id or other.run_id, best.skipped, best.notes))
        return journal

    def _read(self, path: str) -> bytes:
        with self.filesystem.open_input_stream(path) as stream:
            return stream.readall()



def storage_mirror(storage: Any) -> JournalMirror | None:
    """The mirror of a trial's journal in its storage folder, from the trial's Ray storage context; None when
    the storage is a local file system (the journal itself is in the trial folder there)."""
    import pyarrow.fs

    if storage is None or isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem):
        return None
    return JournalMirror(storage.storage_filesystem, storage.trial_fs_path)
