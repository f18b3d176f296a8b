"""The driver's side of best-effort tracking: its own journals, and the backfill of what workers could not log.

The driver journals what it does to MLflow (closing child runs, the parent's metrics and status) like a
worker does (:mod:`sentsweep.tracking.journal`), in the sweep folder's ``tracking-journals/`` (one journal
per trial it closes, ``parent.jsonl`` for the parent run; in the cache folder when the sweep folder is
remote, one folder per sweep and stage). A trial's driver journal first *follows* the trial's worker journal
up to where it was when the driver wrote (so a worker's history is delivered before the driver closes the run),
and a driver status is void once a later attempt of the trial reopened the run. A worker journal the driver
cannot see (remote storage, a worker on another machine) is read from its copy in the trial's storage folder
(:mod:`sentsweep.tracking.journal_mirror`), pulled into this folder as ``worker-<trial folder name>.jsonl``.

A remote sweep's driver journals live on the driver's disk, which may not outlive the driver (a Kubernetes pod's
emptyDir): so they are also copied into the sweep's storage, ``<sweep folder>/tracking-journals/``
(:class:`StoredJournals`, the worker's :class:`~sentsweep.tracking.journal_mirror.JournalMirror` per journal,
with the staged folders their pending uploads name), after each append while entries are pending, once more
after they were delivered, and at every replay. A resume and ``sentsweep sync`` pull these copies first, so
that another machine delivers what the driver could not.

:func:`replay_sweep_journals` delivers everything pending, the confirmation stage's journals included (its Tune
experiment keeps its own in ``<sweep folder>/confirmation/``): at the start of a resume, or on demand once the
server answers again (:func:`sync_sweep`, ``sentsweep sync SWEEP_DIR``); the driver's callback delivers each
folder's at the end of its Tune experiment. Every replay (the driver's first step and its end included) first
removes the staged folders no journal names (:func:`remove_orphan_staged`: a copy a kill cut short, or whose
entry never reached a journal).
"""

from __future__ import annotations

import logging
import posixpath
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mlflow import MlflowClient

from sentsweep.platform.confirmation_stats import STAGE_DIR
from sentsweep.platform.storage import locate
from sentsweep.tracking.journal import (
    DRIVER_JOURNALS,
    PARENT_JOURNAL,
    STAGED,
    TRIAL_JOURNAL,
    Entry,
    Journal,
    trial_journal_name,
)
from sentsweep.tracking.journal_mirror import SET_ASIDE, JournalMirror, storage_mirror
from sentsweep.tracking.replay import (
    Outbox,
    Reachability,
    Replayer,
    Unwritten,
    set_aside_parked,
    upload_source,
)
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.trial_logger import journal_locations

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

log = logging.getLogger("sentsweep.tracking")

#: Beside a driver journal in its local folder: the journal's copy in the storage was pushed (or pulled) with
#: entries pending, so it is pushed again once they are delivered.
PUSHED_SUFFIX = ".pushed"
#: Beside a staged folder's copy in the storage: the copy is complete.
DONE_SUFFIX = ".done"
#: A staged folder being copied (locally): renamed without the suffix once complete.
PART_SUFFIX = ".part"
WORKER_PREFIX = "worker-"
#: The name of a worker journal copy set aside (:data:`SET_ASIDE`) pulled into a driver journal folder begins so.
SET_ASIDE_PREFIX = f"{WORKER_PREFIX}set-aside-"


def is_remote(sweep_dir: str | None) -> bool:
    return bool(sweep_dir) and "://" in str(sweep_dir)


def driver_journal_dir(sweep_dir: str | None, sweep_name: str) -> Path:
    """``<sweep folder>/tracking-journals`` for a local sweep folder, else a folder of the cache per sweep
    (:func:`cached_journal_dir`)."""
    if sweep_dir and not is_remote(sweep_dir):
        return Path(sweep_dir) / DRIVER_JOURNALS
    return cached_journal_dir(sweep_name, posixpath.basename(sweep_dir.rstrip("/")) if sweep_dir else sweep_name)


def cached_journal_dir(sweep_name: str, folder_name: str) -> Path:
    """The cache's folder of the driver journals of a remote folder ``folder_name`` of sweep ``sweep_name``: the
    sweep's own (``<sweep name>``), or a stage's in it (``<sweep name>/confirmation``), whose parent run differs."""
    from sentsweep.config import cache_dir

    base = cache_dir() / DRIVER_JOURNALS / sweep_name
    return base if folder_name in (sweep_name, "") else base / folder_name


def is_set_aside_copy(journal: Journal) -> bool:
    """Whether ``journal`` is a worker journal copy set aside by a later attempt of its trial (pulled into a driver
    journal folder): its attempt was superseded, so its ``open`` never reattaches the run
    (:meth:`~sentsweep.tracking.replay.Replayer.flush`)."""
    return journal.path is not None and journal.path.name.startswith(SET_ASIDE_PREFIX)


def is_driver_journal(path: Path) -> bool:
    """A journal the driver writes (not a worker's copy it pulled: that one has its own copy in the storage)."""
    return path.suffix == ".jsonl" and not path.name.startswith(WORKER_PREFIX)


class StoredJournals:
    """The copy of a remote sweep's driver journals in its storage: ``folder`` (``<sweep folder>/tracking-journals``)
    on ``filesystem`` (a :class:`pyarrow.fs.FileSystem`).

    Each journal and its state is copied by a :class:`~sentsweep.tracking.journal_mirror.JournalMirror` (pushed
    while entries are pending and once more after they were delivered; whether that is still owed is kept
    beside the local journal, :data:`PUSHED_SUFFIX`, so that every driver object and process of the sweep
    agrees). An ``artifacts`` entry's staged folder is copied to ``staged/<name>/`` (complete once
    ``staged/<name>.done`` exists) before the journal naming it, and removed once a journal shows it delivered.
    Nothing here raises for a storage outage: the copy waits for the next push."""

    def __init__(self, filesystem: Any, folder: str) -> None:
        self.filesystem = filesystem
        self.folder = folder

    def __repr__(self) -> str:
        return f"StoredJournals({type(self.filesystem).__name__}:{self.folder})"

    def mirror(self, local: Path) -> JournalMirror:
        """The mirror of the local journal ``local``."""
        marker = local.with_name(local.name + PUSHED_SUFFIX)
        return JournalMirror(self.filesystem, self.folder, local.name, marker=marker)

    def _staged(self, name: str) -> str:
        return posixpath.join(self.folder, STAGED, name)

    def _is_file(self, path: str) -> bool:
        import pyarrow.fs

        return self.filesystem.get_file_info(path).type == pyarrow.fs.FileType.File

    # -- pushing ----------------------------------------------------------------------------------------
    def push(self, journal: Journal) -> bool:
        """Copy ``journal`` here when entries are pending (or were at the last push), the staged folders of its
        pending uploads first; whether it copied. The copy that shows everything delivered removes the staged
        folders of the journal from here."""
        if journal.path is None or not journal.path.is_file():
            return False
        mirror = self.mirror(journal.path)
        owed = mirror.dirty
        if not journal.pending() and not owed:
            return False
        try:
            for entry in journal.undelivered():
                source = upload_source(entry, journal.path.parent) if _is_staged(entry) else None
                if source is not None:
                    self._upload(source)
        except Exception as exc:  # noqa: BLE001 - best-effort: a storage outage delays the copy
            log.warning("could not copy the staged uploads of %s to %s: %s", journal, self, exc)
            return False
        if not mirror.push(journal):
            return False
        if owed and not mirror.dirty:
            self._remove_staged({Path(e["dir"]).name for e in journal.entries() if _is_staged(e)})
        return True

    def _upload(self, source: Path) -> None:
        import pyarrow.fs

        done = self._staged(source.name) + DONE_SUFFIX
        if self._is_file(done):
            return
        pyarrow.fs.copy_files(str(source), self._staged(source.name), source_filesystem=pyarrow.fs.LocalFileSystem(),
                              destination_filesystem=self.filesystem)
        with self.filesystem.open_output_stream(done) as out:
            out.write(b"")

    def push_all(self, local: Path) -> None:
        """:meth:`push` every driver journal of the local folder ``local``."""
        for path in sorted(local.glob("*.jsonl")):
            if is_driver_journal(path):
                self.push(Journal(path))

    def _remove_staged(self, names: set[str]) -> None:
        import pyarrow.fs

        if not names:
            return
        try:
            infos = self.filesystem.get_file_info(pyarrow.fs.FileSelector(posixpath.join(self.folder, STAGED),
                                                                          allow_not_found=True))
            for info in infos:
                if info.base_name.removesuffix(DONE_SUFFIX) not in names:
                    continue
                if info.type == pyarrow.fs.FileType.Directory:
                    self.filesystem.delete_dir(info.path)
                else:
                    self.filesystem.delete_file(info.path)
        except OSError as exc:
            log.warning("could not remove the delivered staged uploads of %s: %s", self, exc)

    # -- pulling ----------------------------------------------------------------------------------------
    def pull(self, local: Path) -> list[Journal]:
        """The copies here pulled into the local folder ``local`` (:meth:`JournalMirror.pull`: a copy replaces a
        missing or shorter local journal; the delivered offset is the larger of the two), each with the staged
        folders of its pending uploads; a copy with entries pending is pushed again once they are delivered. A
        copy whose staged folders cannot be fetched is left for a later pull (never replayed without them)."""
        import pyarrow.fs

        try:
            infos = self.filesystem.get_file_info(pyarrow.fs.FileSelector(self.folder, allow_not_found=True))
        except OSError as exc:
            log.warning("could not list the driver journals in %s: %s", self, exc)
            return []
        pulled = []
        for info in sorted(infos, key=lambda i: i.base_name):
            dest = local / info.base_name
            if info.type != pyarrow.fs.FileType.File or not is_driver_journal(dest):
                continue
            mirror = self.mirror(dest)
            try:
                self._fetch_staged(mirror, dest)
            except Exception as exc:  # noqa: BLE001 - a storage outage: the next pull tries again
                log.warning("could not fetch the staged uploads of %s from %s: %s", dest.name, self, exc)
                continue
            journal = mirror.pull(dest)
            if journal is not None:
                if journal.pending():
                    mirror.dirty = True
                pulled.append(journal)
        return pulled

    def _fetch_staged(self, mirror: JournalMirror, dest: Path) -> None:
        """Fetch the staged folders the copy's pending uploads name into ``dest``'s folder (those not there yet)."""
        import pyarrow.fs

        with tempfile.TemporaryDirectory() as tmp:
            theirs = mirror.pull(Path(tmp) / dest.name)
            if theirs is None:
                return
            start = max(theirs.state().delivered, Journal(dest).state().delivered)
            for entry in theirs.entries(start):
                if not _is_staged(entry) or upload_source(entry, dest.parent) is not None:
                    continue
                name = Path(entry["dir"]).name
                if not self._is_file(self._staged(name) + DONE_SUFFIX):
                    raise FileNotFoundError(f"no complete copy of the staged upload {name}")
                target = dest.parent / STAGED / name
                part = target.with_name(name + PART_SUFFIX)
                shutil.rmtree(part, ignore_errors=True)
                part.mkdir(parents=True)
                pyarrow.fs.copy_files(self._staged(name), str(part), source_filesystem=self.filesystem,
                                      destination_filesystem=pyarrow.fs.LocalFileSystem())
                part.rename(target)


def _is_staged(entry: Entry) -> bool:
    """An ``artifacts`` entry of a copy staged for it alone (in the journal folder's ``staged/``)."""
    return entry.get("op") == "artifacts" and bool(entry.get("remove"))


def stored_journals(sweep_dir: str | None, filesystem: Any = None, fs_path: str | None = None,
                    endpoint_url: str | None = None) -> StoredJournals | None:
    """The copy of the driver journals of the remote sweep folder ``sweep_dir`` (``filesystem`` and ``fs_path``: its
    pyarrow file system and path when it has a custom one, else resolved by
    :func:`~sentsweep.platform.storage.locate` with the S3 ``endpoint_url``); None for a local sweep folder (the
    journals are in it)."""
    if not is_remote(sweep_dir):
        return None
    if filesystem is None:
        filesystem, fs_path = locate(str(sweep_dir), endpoint_url).resolve()
    return StoredJournals(filesystem, posixpath.join(str(fs_path), DRIVER_JOURNALS))


def trial_sweep_dir(trial: Trial) -> str | None:
    """The sweep folder of ``trial`` as a local path, or None when it is on a remote file system."""
    import pyarrow.fs

    storage = trial.storage
    local = isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem)
    return storage.experiment_fs_path if local else None


def worker_copy_name(trial_dir_name: str) -> str:
    """The driver's local copy of a worker journal pulled from the trial's storage folder ``trial_dir_name``."""
    return f"{WORKER_PREFIX}{trial_dir_name}.jsonl"


def worker_journal(trial: Trial, folder: Path | None = None) -> Journal | None:
    """The journal the trial's worker wrote, where the driver can read it: on this machine, else its copy in
    the trial's storage folder pulled into ``folder`` (None when there is neither)."""
    for path in journal_locations(trial.storage):
        if path.is_file():
            return Journal(path)
    mirror = storage_mirror(trial.storage)
    if mirror is None or folder is None:
        return None
    return mirror.pull(folder / worker_copy_name(trial.storage.trial_dir_name))


def pending_uploads(folder: Path) -> int:
    """The ``artifacts`` entries of the driver's journals in ``folder`` that MLflow has not got yet (staged copies
    of the sweep's plots, tables, exported model or best weights, waiting for ``sentsweep sync``)."""
    return sum(entry.get("op") == "artifacts" for path in sorted(folder.glob("*.jsonl"))
               for entry in Journal(path).undelivered())


class MirroredOutbox(Outbox):
    """An :class:`Outbox` whose journal is copied to the storage after each :meth:`put` (:class:`StoredJournals`)."""

    def __init__(self, journal: Journal, replayer: Replayer, tracking_uri: str, stored: StoredJournals) -> None:
        super().__init__(journal, replayer, tracking_uri)
        self.stored = stored

    def put(self, *entries: Entry) -> bool:
        assert self.journal.path is not None
        if self.stored.mirror(self.journal.path).dirty:  # another machine may have delivered from the copy
            self.replayer.forget(self.run_id)
        done = super().put(*entries)
        self.stored.push(self.journal)
        return done


class DriverJournals:
    """The journals of one sweep's driver, delivered by one client (one replayer: one metric cache) to the runs of
    ``scope`` only (the sweep's, or its confirmation stage's; never a run outside it that a journal names); copied to
    ``stored`` when the sweep folder is remote."""

    def __init__(self, tracking_uri: str, folder: Path, scope: SweepScope,
                 stored: StoredJournals | None = None) -> None:
        self.tracking_uri = tracking_uri
        self.folder = folder
        self.stored = stored
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.replayer = Replayer(self.client, scope)

    @classmethod
    def of_trial(cls, trial: Trial, settings: dict[str, Any]) -> DriverJournals:
        """The driver journals of the sweep (or stage) folder ``trial`` belongs to; ``settings``: the trials' tracking
        settings (:meth:`~sentsweep.platform.sweep_tracking.SweepRun.trial_settings`), whose experiment and parent run
        are the scope of their replay."""
        tracking_uri, sweep_name = settings["tracking_uri"], settings["sweep_name"] or "sweep"
        scope = SweepScope(settings["experiment_id"], settings["parent_run_id"])
        local = trial_sweep_dir(trial)
        if local is not None:
            return cls(tracking_uri, driver_journal_dir(local, sweep_name), scope)
        storage = trial.storage
        return cls(tracking_uri, cached_journal_dir(sweep_name, storage.experiment_dir_name), scope,
                   StoredJournals(storage.storage_filesystem, posixpath.join(storage.experiment_fs_path,
                                                                             DRIVER_JOURNALS)))

    def outbox(self, name: str, run_id: str | None = None) -> Outbox:
        journal = Journal(self.folder / name, run_id=run_id)
        if self.stored is not None:
            return MirroredOutbox(journal, self.replayer, self.tracking_uri, self.stored)
        return Outbox(journal, self.replayer, self.tracking_uri)

    def pull(self) -> None:
        """Pull the copies of the journals from the storage (a driver on another machine, a pod gone): before
        anything is appended here."""
        if self.stored is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.stored.pull(self.folder)

    def parent(self, run_id: str) -> Outbox:
        return self.outbox(PARENT_JOURNAL, run_id)

    def record_trial(self, trial: Trial, settings: dict[str, Any], finish: Entry, *, create: bool = True) -> None:
        """Journal (and try to deliver) the worker's history so far, then ``finish`` (or another entry, e.g. tags)
        on the trial's run."""
        from sentsweep.tracking.vocabulary import TrackingSettings, child_run_tags, param_value

        entries: list[Entry] = []
        worker = self.worker(trial)
        if worker is not None:
            upto = worker.count()
            entries.append({"op": "follow", "path": str(worker.path), "upto": upto})
            if finish["op"] == "finish":
                finish = {**finish, "void_after": {"path": str(worker.path), "upto": upto}}
        tags = child_run_tags(TrackingSettings(**settings), trial.trial_id)
        params = {k: param_value(v) for k, v in trial.config.items() if k != "tracking"}
        entries.append({"op": "open", "experiment_id": settings["experiment_id"], "trial_id": trial.trial_id,
                        "parent_run_id": settings["parent_run_id"], "run_name": trial.trial_id, "tags": tags,
                        "create": create, "params": params})
        entries.append(finish)
        self.outbox(trial_journal_name(trial.trial_id)).put(*entries)

    def worker(self, trial: Trial) -> Journal | None:
        """:func:`worker_journal` of ``trial``, a copy pulled from the storage going to this folder."""
        return worker_journal(trial, self.folder)

    def set_aside(self, trial: Trial) -> list[Journal]:
        """The worker journal copies that a later attempt set aside in the storage of ``trial``'s sweep (or stage)
        folder (:data:`~sentsweep.tracking.journal_mirror.SET_ASIDE`), pulled into this folder; none with a local
        sweep folder (nothing is copied there)."""
        mirror = storage_mirror(trial.storage)
        if mirror is None or mirror.set_aside is None:
            return []
        return _pull_set_aside(mirror.filesystem, mirror.set_aside, self.folder)

    def replay(self, workers: Iterable[Journal | None] = (), *, give_up_parked: bool = False) -> Replayed:
        """Deliver the worker journals ``workers`` and every journal of this folder (the parent's last), after
        appending what a full disk refused before and removing the staged folders no journal names
        (:func:`remove_orphan_staged`); how many entries are still pending (0: MLflow has everything), and how many
        of them wait behind a trial's ``open`` MLflow refused for good (``give_up_parked``: those are set aside,
        :func:`~sentsweep.tracking.replay.set_aside_parked`)."""
        Unwritten.write_all(self.folder)  # what a full disk refused before, in this process
        remove_orphan_staged(self.folder)
        names = sorted(p.name for p in self.folder.glob("*.jsonl") if p.name != PARENT_JOURNAL)
        journals = [j for j in workers if j is not None]
        pulled = {j.path for j in journals}  # the copies pulled into this folder: flushed and counted once
        journals += [Journal(path) for path in (self.folder / name for name in [*names, PARENT_JOURNAL])
                     if path not in pulled]
        reach = Reachability.of(self.tracking_uri)
        if reach.worth_trying(backoff=False):  # once the store answers, not after the back-off of a failed put
            try:
                for journal in journals:
                    self.replayer.flush(journal, superseded=is_set_aside_copy(journal))
            except Exception as exc:
                reach.failed(exc, journal)
            else:
                reach.succeeded()
        given_up = sum(set_aside_parked(j, "sentsweep sync --give-up-refused") for j in journals if give_up_parked)
        if self.stored is not None:
            self.stored.push_all(self.folder)
        pending = parked = 0
        for journal in journals:
            if journal.exists():
                state, waiting = journal.state(), journal.pending()
                pending, parked = pending + waiting, parked + (waiting if state.parked else 0)
        return Replayed(pending, parked, given_up)


@dataclass(frozen=True)
class Replayed:
    """What a replay left: ``pending`` entries, ``parked`` of them behind an ``open`` MLflow refused for good (a
    trial's run it will never create or find: the sweep's experiment or parent run deleted, a login that may no
    longer write there), and ``given_up`` entries set aside on request."""

    pending: int = 0
    parked: int = 0
    given_up: int = 0

    def __add__(self, other: Replayed) -> Replayed:
        return Replayed(self.pending + other.pending, self.parked + other.parked, self.given_up + other.given_up)


def replay_sweep_journals(sweep_dir: str, tracking_uri: str, sweep_name: str, scope: SweepScope,
                          filesystem: Any = None, fs_path: str | None = None, *,
                          give_up_parked: bool = False) -> Replayed:
    """Deliver what a sweep's trials and its driver could not log, to the sweep's runs only (``scope``: its
    experiment and parent run, from the manifest); what is still pending (:class:`Replayed`; ``sentsweep resume``
    does this first; so can a command once the server is back).

    The trials' journals are read in a local sweep folder, else (``filesystem``, a pyarrow file system, and the
    folder's ``fs_path`` on it; default: resolved from the ``sweep_dir`` URI) from their copies in the trial
    folders of the storage, with those a later attempt set aside. The driver journals of a remote sweep folder are
    pulled from their copies there first (:class:`StoredJournals`: the driver that wrote them may be gone, its disk
    with it). The confirmation stage, once its folder exists (:data:`STAGE_DIR`, a Tune experiment of its own in
    the sweep folder), is replayed the same way from that folder: its trials' runs and its run are in ``scope``
    (the sweep's confirmation run and its children). ``give_up_parked``: see :meth:`DriverJournals.replay`."""
    replayed = _replay_folder(sweep_dir, tracking_uri, sweep_name, scope, filesystem, fs_path, give_up_parked)
    stage_dir = posixpath.join(sweep_dir, STAGE_DIR)
    stage_path = posixpath.join(fs_path, STAGE_DIR) if fs_path is not None else None
    if _stage_began(stage_dir, sweep_name, filesystem, stage_path):
        replayed += _replay_folder(stage_dir, tracking_uri, sweep_name, scope, filesystem, stage_path, give_up_parked)
    return replayed


def _replay_folder(folder: str, tracking_uri: str, sweep_name: str, scope: SweepScope, filesystem: Any,
                   fs_path: str | None, give_up_parked: bool = False) -> Replayed:
    """:func:`replay_sweep_journals` of one Tune experiment's folder (the sweep's, or its stage's)."""
    journals = DriverJournals(tracking_uri, driver_journal_dir(folder, sweep_name), scope,
                              stored_journals(folder, filesystem, fs_path))
    journals.pull()
    if not is_remote(folder) and filesystem is None:
        workers = [Journal(path) for path in sorted(Path(folder).glob(f"*/{TRIAL_JOURNAL}"))]
    else:
        workers = pull_worker_copies(filesystem, fs_path, folder, journals.folder)
    return journals.replay(workers, give_up_parked=give_up_parked)


def _stage_began(stage_dir: str, sweep_name: str, filesystem: Any, stage_path: str | None) -> bool:
    """Whether the confirmation stage's folder ``stage_dir`` exists (in the storage, or as a folder of driver
    journals in this machine's cache); a storage that cannot tell counts as yes (its replay is best-effort)."""
    import pyarrow.fs

    if not is_remote(stage_dir) and filesystem is None:
        return Path(stage_dir).is_dir()
    if filesystem is None or driver_journal_dir(stage_dir, sweep_name).is_dir():  # None: resolved by the replay
        return True
    try:
        return filesystem.get_file_info(stage_path).type != pyarrow.fs.FileType.NotFound
    except OSError:
        return True


def remove_orphan_staged(folder: Path) -> list[str]:
    """Remove the staged folders of the driver journal folder ``folder`` that no entry names (in its driver journals
    or held in memory, :class:`~sentsweep.tracking.replay.Unwritten`) and that were staged before the journals' last
    entry: a copy a full disk or a kill cut short (``.part``), or one whose entry never reached a journal; up to a
    model's size each. One staged after the last entry may still be getting its entry, and is left. The names
    removed (a folder that cannot be removed is left for the next time, with a warning)."""
    staged = folder / STAGED
    if not staged.is_dir():
        return []
    named: set[str] = set()
    last_ms = 0
    for path in sorted(folder.glob("*.jsonl")):
        if not is_driver_journal(path):
            continue
        for entry in Journal(path).entries():
            last_ms = max(last_ms, _entry_ms(entry))
            if _is_staged(entry):
                named.add(Path(entry["dir"]).name)
    named |= {Path(e["dir"]).name for held in Unwritten.held(folder).values() for e in held if _is_staged(e)}
    removed = []
    for child in sorted(staged.iterdir()):
        name = child.name.removesuffix(PART_SUFFIX)
        if name in named or _staged_ms(child) >= last_ms:
            continue
        try:
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()
        except OSError as exc:
            log.warning("could not remove the staged folder %s no journal names: %s", child, exc)
            continue
        removed.append(child.name)
    if removed:
        log.warning("removed %d staged folder(s) no tracking journal names: %s", len(removed), ", ".join(removed))
    return removed


def _entry_ms(entry: Entry) -> int:
    try:
        return int(entry.get("time_ms") or 0)
    except (TypeError, ValueError):
        return 0


def _staged_ms(path: Path) -> int:
    """When a staged folder was staged: the time in its name (``<artifact>-<ms>``, :meth:`SweepRun.staged`), else
    its modification time."""
    stamp = path.name.removesuffix(PART_SUFFIX).rsplit("-", 1)[-1]
    if stamp.isdigit():
        return int(stamp)
    try:
        return int(path.stat().st_mtime * 1000)
    except OSError:
        return 0


def pull_worker_copies(filesystem: Any, fs_path: str | None, sweep_dir: str, folder: Path) -> list[Journal]:
    """The copies of the worker journals in the trial folders of a remote sweep folder, and those a later attempt
    set aside (:data:`~sentsweep.tracking.journal_mirror.SET_ASIDE`), pulled into ``folder`` (none when the storage
    cannot be listed: an outage of the storage delays them to the next replay)."""
    import pyarrow.fs

    if filesystem is None:
        filesystem, fs_path = pyarrow.fs.FileSystem.from_uri(sweep_dir)
    try:
        infos = filesystem.get_file_info(pyarrow.fs.FileSelector(fs_path, allow_not_found=True))
    except OSError:
        return []
    found = []
    for info in sorted(infos, key=lambda i: i.base_name):
        if info.type != pyarrow.fs.FileType.Directory or info.base_name in (DRIVER_JOURNALS, SET_ASIDE, STAGE_DIR):
            continue
        copy = JournalMirror(filesystem, info.path).pull(folder / worker_copy_name(info.base_name))
        if copy is not None:
            found.append(copy)
    return found + _pull_set_aside(filesystem, posixpath.join(fs_path, SET_ASIDE), folder)


def _pull_set_aside(filesystem: Any, set_aside: str, folder: Path) -> list[Journal]:
    """The worker journal copies set aside in the storage folder ``set_aside``, pulled into ``folder``."""
    import pyarrow.fs

    try:
        infos = filesystem.get_file_info(pyarrow.fs.FileSelector(set_aside, allow_not_found=True))
    except OSError:
        return []
    names = sorted(i.base_name for i in infos if i.type == pyarrow.fs.FileType.File and i.base_name.endswith(".jsonl"))
    copies = (JournalMirror(filesystem, set_aside, name).pull(folder / f"{SET_ASIDE_PREFIX}{name}")
              for name in names)
    return [copy for copy in copies if copy is not None]


def sync_sweep(sweep_dir: str, endpoint_url: str | None = None, echo: Callable[[str], None] = print,
               tracking_uri: str | None = None, give_up_parked: bool = False) -> tuple[Replayed, str]:
    """``sentsweep sync SWEEP_DIR``: deliver everything a sweep's trials and driver journaled (a finalize in
    an outage and the confirmation stage included: metrics, artifacts, the registration, the runs' ends,
    :func:`replay_sweep_journals`), then, once nothing is pending,
    the pruning that finalize skipped while uploads waited (:func:`~sentsweep.platform.retention.prune_owed`);
    what is still pending (:class:`Replayed`; ``give_up_parked``: the entries behind a trial's run MLflow refuses for
    good are set aside first, ``--give-up-refused``), and the tracking URI. Refused while a driver runs the sweep (its
    lock: :mod:`~sentsweep.platform.sweep_lock`), which delivers them itself. The manifest's tracking
    server and parent run are used only as :mod:`~sentsweep.platform.folder_trust` allows (``tracking_uri``: the
    one the user names)."""
    from sentsweep.credentials import explain_refused_credentials
    from sentsweep.platform.config import resolve_sweep_folder
    from sentsweep.platform.folder_trust import manifest_scope, refuse_foreign_parent, trusted_tracking_uri
    from sentsweep.platform.retention import prune_owed
    from sentsweep.platform.sweep_lock import SweepLock

    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    uri = trusted_tracking_uri(manifest, location, tracking_uri)
    remote = location.filesystem is not None
    client = MlflowClient(tracking_uri=uri)
    # a probe of the store, not /health (a URI without one: its calls decide); else nothing is delivered now: each
    # entry's run is checked if it is (the scope)
    checked = urlsplit(uri).scheme not in ("http", "https") or Reachability(uri).answers()
    with explain_refused_credentials(uri):  # a 401/403: one line naming the variables to set
        if checked:
            refuse_foreign_parent(client, manifest, location)
        with SweepLock.for_folder(location, manifest.sweep_name):  # a live driver's: refused
            replayed = replay_sweep_journals(location.uri, uri, manifest.sweep_name,
                                             manifest_scope(manifest, location), location.filesystem,
                                             location.fs_path if remote else None,
                                             give_up_parked=give_up_parked and checked)
    if replayed.pending == 0:
        prune_owed(location, echo)
    return replayed, uri
