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

A worker lost with its node (its journal with it) leaves the copy as the only record of what it could not
deliver; Tune runs the trial's next attempt elsewhere, whose journal starts empty and would overwrite that copy.
So the first push of each attempt checks the copy: one that is not the start of this attempt's own journal and
still has entries pending is first *set aside* into the sweep folder's :data:`SET_ASIDE` folder, which the
driver replays with the other copies. Likewise, a driver's pull never mixes two attempts: a copy that neither
extends nor is the start of the driver's earlier pull replaces it with its own delivered offset.

A remote sweep's driver copies its own journals the same way, into the sweep's storage folder
(:class:`~sentsweep.platform.tracking_journals.StoredJournals`); its ``dirty`` mark is kept in a local file
(``marker``), so that every object and process of that driver agrees on it.
"""

from __future__ import annotations

import dataclasses
import logging
import posixpath
import uuid
from pathlib import Path
from typing import Any

from sentsweep.data.cache import atomic_write
from sentsweep.tracking.journal import TRIAL_JOURNAL, Journal, JournalState

log = logging.getLogger("sentsweep.tracking")

#: The folder of a sweep's storage folder holding the copies of worker journals that a later attempt of their trial,
#: on another node, would have overwritten with entries still pending (``<trial folder name>-<random>.jsonl``).
SET_ASIDE = "tracking-journals-set-aside"
#: The largest journal copy (or its state) the driver reads from the storage: a trial's journal is metrics and tags,
#: kilobytes to a few megabytes; an object beyond this was put there by someone else, to fill the memory or the disk
#: of whoever replays it.
MAX_COPY_BYTES = 256 * 2**20


def _state_name(name: str) -> str:
    return name + ".state"


class JournalMirror:
    """The copy of a trial's journal at ``folder`` (a path on ``filesystem``, a :class:`pyarrow.fs.FileSystem`)."""

    def __init__(self, filesystem: Any, folder: str, name: str = TRIAL_JOURNAL, marker: Path | None = None,
                 set_aside: str | None = None) -> None:
        self.filesystem = filesystem
        self.folder = folder
        self.name = name
        self.marker = marker  # a local file that keeps :attr:`dirty` beyond this object (a driver's journals)
        self.set_aside = set_aside  # where another attempt's copy with entries pending goes before the first push
        self._checked = set_aside is None
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
            if not self._checked:
                self._keep_another_attempts_copy(journal)
                self._checked = True
            self._write(self.path, journal.path.read_bytes())
            if journal.state_path.is_file():
                self._write(_state_name(self.path), journal.state_path.read_bytes())
        except Exception as exc:  # noqa: BLE001 - best-effort, like every tracking call of a trial
            log.warning("could not copy the tracking journal to %s: %s", self, exc)
            return False
        self.dirty = pending > 0
        return True

    def _keep_another_attempts_copy(self, journal: Journal) -> None:
        """Before this attempt's first push: set the copy here aside (:data:`SET_ASIDE`) when another attempt wrote
        it (it is not the start of ``journal``: that attempt ran on another node) and entries of it are pending.
        A storage error propagates: nothing is overwritten unchecked."""
        assert journal.path is not None and self.set_aside is not None
        try:
            theirs = self._read(self.path)
        except FileNotFoundError:
            return
        if journal.path.read_bytes().startswith(theirs):  # this attempt's own journal, or an earlier one's on its node
            return
        try:
            state = self._read(_state_name(self.path))
        except FileNotFoundError:
            state = b""
        delivered = JournalState.from_json(state).delivered if state else 0
        if delivered >= theirs.count(b"\n"):
            return  # delivered: nothing of it is lost when it is overwritten
        name = f"{posixpath.basename(self.folder.rstrip('/'))}-{uuid.uuid4().hex[:12]}.jsonl"
        self.filesystem.create_dir(self.set_aside, recursive=True)
        if state:
            self._write(_state_name(posixpath.join(self.set_aside, name)), state)
        self._write(posixpath.join(self.set_aside, name), theirs)
        log.warning("the tracking journal copy at %s came from another attempt with %d entries pending: set aside "
                    "as %s for the driver to replay", self, theirs.count(b"\n") - delivered, name)

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
            ours = dest.read_bytes() if dest.is_file() else b""
            if not data.startswith(ours) and not ours.startswith(data):  # another attempt's journal (another node)
                with atomic_write(dest) as handle:
                    handle.write(data)
                journal.save_state(theirs)
                return journal
            if len(data) >= len(ours):  # never a shorter (older) copy
                with atomic_write(dest) as handle:
                    handle.write(data)
            if theirs.delivered > local.delivered or (local.run_id is None and theirs.run_id):
                best, other = (theirs, local) if theirs.delivered > local.delivered else (local, theirs)
                journal.save_state(dataclasses.replace(best, run_id=best.run_id or other.run_id))
        return journal

    def _read(self, path: str) -> bytes:
        """The object at ``path``, at most :data:`MAX_COPY_BYTES` (a larger one is refused, unread, with a warning:
        an ``OSError``, which :meth:`pull` reads as no copy)."""
        with self.filesystem.open_input_stream(path) as stream:
            data = stream.read(MAX_COPY_BYTES + 1)
        if len(data) > MAX_COPY_BYTES:
            log.warning("not pulled: %s holds more than %d MiB, no journal is that large", path, MAX_COPY_BYTES >> 20)
            raise OSError(f"{path}: larger than {MAX_COPY_BYTES} bytes")
        return data



def storage_mirror(storage: Any) -> JournalMirror | None:
    """The mirror of a trial's journal in its storage folder, from the trial's Ray storage context; None when
    the storage is a local file system (the journal itself is in the trial folder there)."""
    import pyarrow.fs

    if storage is None or isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem):
        return None
    return JournalMirror(storage.storage_filesystem, storage.trial_fs_path,
                         set_aside=posixpath.join(storage.experiment_fs_path, SET_ASIDE))
