"""A journal of MLflow calls not yet delivered: what lets tracking lose nothing through an outage.

Every call a trial (or the sweep's driver) makes to MLflow is first appended to a journal, one JSON entry per
line, then delivered in order by :mod:`sentsweep.tracking.replay`. The journal's state file (``<name>.state``)
holds how many entries were delivered (the *delivered offset*) and the run they went to, so that a later
replay, by the same process or by the driver, starts after them: MLflow deduplicates nothing, so a metric
sent twice would be stored twice. Entries are plain data:

- ``open``: find this trial's run by its ``sentsweep.trial_id`` tag, else create it (with ``token``: a
  worker's attempt, which reattaches to a run it did not create itself);
- ``params``, ``metrics`` (``[key, value, timestamp_ms, step]`` points), ``tags``;
- ``artifacts``: a local folder to upload (``remove``: a staged copy, removed once uploaded);
  ``json_artifact``: data written as one JSON artifact file;
- ``register``: register the run's logged model at ``path`` as a version of ``name``;
- ``inputs``: dataset inputs (:mod:`sentsweep.tracking.datasets`);
- ``finish``: a terminal status and its reason.

A journal on disk is appended to by one process (its owner) and replayed under a file lock
(:func:`sentsweep.data.cache.file_lock`) by whoever flushes it, the owner or the driver. A journal without
a path lives in memory (a standalone run's). A last line cut short by a killed writer is ignored, and removed
before the next writer appends; an append that fails (a full disk: ``ENOSPC``) cuts the file back to where it
began, so a fragment of it never precedes the next entry, and raises (:class:`~sentsweep.tracking.replay.Outbox`
keeps such entries in memory and appends them again later).

Crash safety: each append is fsynced, like the state file, so a delivered offset never counts an entry the disk
may lose. A state whose offset still exceeds the entries on disk (a journal written before appends were
fsynced, or a file system that lost them anyway) is clamped to them, with a warning, before the next append
and on each flush: otherwise the entries appended next would count as delivered and never be sent.
"""

from __future__ import annotations

import array
import contextlib
import json
import logging
import math
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from sentsweep.data.cache import atomic_write, file_lock

#: The file name of a trial's journal in its trial folder.
TRIAL_JOURNAL = "tracking-journal.jsonl"
#: The folder of the driver's journals in a sweep folder (one per trial it closes, one for the parent run).
DRIVER_JOURNALS = "tracking-journals"
PARENT_JOURNAL = "parent.jsonl"
#: The folder beside a driver's journals holding the copies its ``artifacts`` entries upload (``remove``: each copy
#: removed once uploaded).
STAGED = "staged"

log = logging.getLogger("sentsweep.tracking")

Entry = dict[str, Any]
#: Opens a journal file for appending bytes (unbuffered: every ``write`` is one system call).
Opener = Callable[[Path], BinaryIO]


def open_for_append(path: Path) -> BinaryIO:
    """The default :data:`Opener`: ``path`` opened for appending, unbuffered."""
    return open(path, "ab", buffering=0)


def trial_journal_name(trial_id: str) -> str:
    """The driver's journal of what it does to ``trial_id``'s run."""
    return f"trial-{trial_id}.jsonl"


@dataclass
class JournalState:
    """What was delivered: the first ``delivered`` entries, to run ``run_id``; ``skipped`` of them refused.

    The refusals met since the last entry delivered (:mod:`sentsweep.tracking.replay` sets an entry aside only once
    the same refusal came back over time): ``refusal`` names it (the error's code), met on ``refusals`` attempts since
    ``refused_since`` (seconds since the epoch, the first one); ``parked``: the next entry is an ``open`` refused for
    good, whose warning was given (the entries after it wait for it). ``relog_before_ms``: this journal's attempt took
    over a run an earlier attempt had logged to (a trial restored from a checkpoint, reattached): a metric point at a
    step the run holds a point of the same key for, logged before this time (epoch milliseconds), is not logged
    again (:meth:`~sentsweep.tracking.replay.Replayer.deliver`; a superseded journal's, at none of the run's steps).
    A state file written before these fields existed reads as none met, nothing re-logged."""

    delivered: int = 0
    run_id: str | None = None
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    refusal: str | None = None
    refusals: int = 0
    refused_since: float | None = None
    parked: bool = False
    relog_before_ms: float | None = None

    @classmethod
    def from_json(cls, text: str | bytes) -> JournalState:
        """A state as :meth:`Journal.save_state` writes it (:class:`json.JSONDecodeError` when it is not one)."""
        raw = json.loads(text)
        since, relog = raw.get("refused_since"), raw.get("relog_before_ms")
        return cls(int(raw.get("delivered", 0)), raw.get("run_id"), int(raw.get("skipped", 0)),
                   list(raw.get("notes", [])), raw.get("refusal"), int(raw.get("refusals", 0)),
                   None if since is None else float(since), bool(raw.get("parked", False)),
                   None if relog is None else float(relog))

    def count_refusal(self, refusal: str, now: float) -> float:
        """Count an attempt that met ``refusal`` (another refusal than the one counted so far starts the count
        again); the seconds since the first of them (``now``: seconds since the epoch)."""
        if refusal != self.refusal or self.refused_since is None:
            self.refusal, self.refusals, self.refused_since, self.parked = refusal, 0, now, False
        self.refusals += 1
        return now - self.refused_since

    def advance(self, delivered: int) -> None:
        """Count the first ``delivered`` entries as delivered, the last of them accepted: no refusal met since."""
        self.delivered = delivered
        self.refusal, self.refusals, self.refused_since, self.parked = None, 0, None, False


class Journal:
    """An append-only list of :data:`Entry` with a delivered offset; on disk at ``path`` or in memory."""

    def __init__(self, path: Path | None = None, run_id: str | None = None, opener: Opener = open_for_append) -> None:
        """``run_id``: the run of a new journal (its state is created with it: now, else, when the disk refuses it,
        before the first append); ``opener``: how the file is opened for appending (a test passes a file whose
        writes fail)."""
        self.path = path
        self.run_id = run_id
        self._opener = opener
        self._entries: list[Entry] = []
        # What :meth:`_scan` read of the file so far (see :meth:`entries`): where each entry's line starts, the end
        # of the last one, the file they came from ((device, inode)) and that last line's bytes. Offsets, not
        # entries: a trial's journal of days of samples is hundreds of MB parsed.
        self._starts = array.array("q")
        self._read_bytes = 0
        self._read_from: tuple[int, int] | None = None
        self._read_last = b""
        self._read_lock = threading.Lock()  # the trial's thread and its system-metrics sampler read alike
        self._checked = False  # the delivered offset was checked against the entries on disk (before appending)
        self._state = JournalState(run_id=run_id)
        self._state_owed = path is not None and run_id is not None and not self.state_path.is_file()
        if self._state_owed:
            with contextlib.suppress(OSError):  # a full disk: saved before the first append, which raises if it fails
                self._save_new_state()

    def _save_new_state(self) -> None:
        """Create the state of a new journal with its run (unless one exists meanwhile)."""
        if not self.state_path.is_file():
            self.save_state(self._state)
        self._state_owed = False

    @property
    def state_path(self) -> Path:
        assert self.path is not None
        return self.path.with_name(self.path.name + ".state")

    def append(self, entry: Entry) -> None:
        """Add ``entry`` at the end: one ``write`` of one line, fsynced (and the folder too when this creates the
        file), so that a host crash cannot lose an entry a later state counts as delivered. The fsync costs about
        2-3 ms per append (ext4 on a virtual disk, 2 cores under load; 0.13 ms without); a trial appends a few
        entries per report. The first append of this object checks the delivered offset first
        (:meth:`clamp_delivered`). When the write fails (``OSError``: a full disk), the file is cut back to its size
        before it, so that no fragment of this entry glues the next one onto an unreadable line, and the error
        propagates."""
        if self.path is None:
            self._entries.append(entry)
            return
        if self._state_owed:
            self._save_new_state()
        if not self._checked:
            self.clamp_delivered()
            self._cut_torn_tail()
        data = (json.dumps(entry, default=str, allow_nan=True) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        with self._opener(self.path) as handle:
            size = handle.seek(0, os.SEEK_END)
            try:
                _write_all(handle, data)
                os.fsync(handle.fileno())
            except BaseException:
                self._cut_back(size)
                raise
        if created or size == 0:  # a new file (or one a failed first append created): its name made durable
            _fsync_folder(self.path.parent)

    def _cut_back(self, size: int) -> None:
        """Truncate the file to ``size`` bytes (what it held before a failed append); when even that fails, the next
        append of this object looks for a torn last line again (:meth:`_cut_torn_tail`)."""
        assert self.path is not None
        try:
            os.truncate(self.path, size)
        except OSError as exc:
            self._checked = False
            log.warning("%s: could not remove the part of a failed append (%s)", self, exc)

    def clamp_delivered(self) -> JournalState:
        """The state, its delivered offset lowered (and saved, with a warning) where it exceeds the entries on
        disk: what a host crash leaves when appends it counted were not on disk yet."""
        self._checked = True
        if self.path is None:
            return self._state
        state = self.state()  # the state first: entries only grow, so a consistent pair never needs the lock
        if state.delivered <= self.count():
            return state
        with self.locked():
            state = self.state()
            return self.clamp(state, self.count())

    def _cut_torn_tail(self) -> None:
        """Remove a last line a killed writer left half-written (the file does not end in a newline), so that this
        writer's entries start on a line of their own: appended to the torn line they would be unreadable, and so
        would everything after them (:meth:`entries` stops at the first line that is not JSON)."""
        assert self.path is not None
        try:
            with open(self.path, "rb+") as handle:
                size = handle.seek(0, os.SEEK_END)
                if size == 0:
                    return
                handle.seek(size - 1)
                if handle.read(1) == b"\n":
                    return
                handle.seek(0)
                keep = handle.read().rfind(b"\n") + 1
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())
        except FileNotFoundError:
            return
        log.warning("%s: removed a half-written last entry (%d bytes) a killed writer left", self, size - keep)

    def clamp(self, state: JournalState, count: int) -> JournalState:
        """``state`` with at most ``count`` delivered (saved when lowered); the caller holds the lock."""
        if state.delivered > count:
            log.warning("%s: the state counts %d entries as delivered but only %d are on disk (lost in a crash?);"
                        " counting %d", self, state.delivered, count, count)
            state.advance(count)
            self.save_state(state)
        return state

    def entries(self, start: int = 0) -> list[Entry]:
        """The entries from the ``start``-th on (all by default), in order; a half-written last line is not one, nor
        anything after a line that is not JSON.

        Read incrementally (SRE review 20, H1: parsing the whole journal at each append, a system-metrics sample every
        10 s, cost 2.6 s per sample after a day, holding the GIL and the logger's lock): each call parses the lines
        appended since the last one, keeping where each line starts, and then the lines from ``start`` on (a flush
        reads its pending entries only). Journals only grow: a file replaced (a pulled copy), shorter than what was
        read (a torn tail cut) or whose last read line is no longer where it was is read again whole; an edit of an
        earlier line that keeps the file's length and its last line is not seen."""
        if self.path is None:
            return list(self._entries[start:])
        with self._read_lock, self._opened() as handle:
            if handle is None:
                return []
            base, new = self._scan(handle)
            if start >= base:
                return new[start - base :]
            end = self._starts[base] if base < len(self._starts) else self._read_bytes
            handle.seek(self._starts[start])  # the same file the offsets are of, even if a copy replaced it since
            older = handle.read(end - self._starts[start])
        return [json.loads(line) for line in older.split(b"\n")[:-1]] + new

    def count(self) -> int:
        """How many entries the journal holds (as :meth:`entries` counts them)."""
        if self.path is None:
            return len(self._entries)
        with self._read_lock, self._opened() as handle:
            if handle is not None:
                self._scan(handle)
            return len(self._starts)

    @contextlib.contextmanager
    def _opened(self) -> Iterator[BinaryIO | None]:
        """The journal's file open for reading; None (and what was read forgotten) when there is none."""
        assert self.path is not None
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            self._forget_reads(None)
            yield None
            return
        with handle:
            yield handle

    def _scan(self, handle: BinaryIO) -> tuple[int, list[Entry]]:
        """Parse what was appended since the last scan: the index of the first new entry and the new entries."""
        stat = os.fstat(handle.fileno())
        source, last = (stat.st_dev, stat.st_ino), len(self._read_last)
        if source != self._read_from or stat.st_size < self._read_bytes:
            self._forget_reads(source)
        elif last:
            handle.seek(self._read_bytes - last)
            if handle.read(last) != self._read_last:  # rewritten in place
                self._forget_reads(source)
        handle.seek(self._read_bytes)
        tail = handle.read()
        base, new, offset = len(self._starts), [], 0
        while (end := tail.find(b"\n", offset)) >= 0:
            try:
                new.append(json.loads(tail[offset:end]))
            except ValueError:  # a writer killed mid-line: nothing after it was appended by that writer
                break
            self._starts.append(self._read_bytes + offset)
            self._read_last = tail[offset : end + 1]
            offset = end + 1
        self._read_bytes += offset
        return base, new

    def _forget_reads(self, source: tuple[int, int] | None) -> None:
        self._starts, self._read_bytes, self._read_from, self._read_last = array.array("q"), 0, source, b""

    def state(self) -> JournalState:
        if self.path is None:
            return self._state
        try:
            return JournalState.from_json(self.state_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return JournalState()

    def save_state(self, state: JournalState) -> None:
        if self.path is None:
            self._state = state
            return
        with atomic_write(self.state_path) as handle:
            handle.write(json.dumps(state.__dict__).encode("utf-8"))

    def exists(self) -> bool:
        return self.path is None or self.path.is_file()

    def pending(self) -> int:
        """How many entries are not delivered yet."""
        return max(0, self.count() - self.state().delivered)

    def undelivered(self) -> list[Entry]:
        """The entries not delivered yet, in order."""
        return self.entries(self.state().delivered)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held while replaying: the owner and the driver never deliver the same entry twice."""
        if self.path is None:
            yield
            return
        with file_lock(self.path):
            yield

    def __repr__(self) -> str:
        return f"Journal({self.path or 'memory'})"


def _write_all(handle: BinaryIO, data: bytes) -> None:
    """Write every byte of ``data`` (an unbuffered write may write part of it)."""
    view = memoryview(data)
    while view:
        written = handle.write(view)
        view = view[written if written is not None else len(view):]


def _fsync_folder(folder: Path) -> None:
    """Make a new file's name in ``folder`` durable (best effort: not every file system allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def metric_points(metrics: dict[str, float], step: int, timestamp_ms: int) -> list[list[Any]]:
    """``[key, value, timestamp_ms, step]`` for each metric (the journal's form of an MLflow metric)."""
    return [[key, float(value), int(timestamp_ms), int(step)] for key, value in metrics.items()]


def point_identity(key: str, value: float, timestamp_ms: int, step: int) -> tuple[str, str, int, int]:
    """What makes two metric points the same point (NaN equal to NaN)."""
    shown = repr(float(value)) if math.isfinite(value) else str(value)
    return key, shown, int(timestamp_ms), int(step)
