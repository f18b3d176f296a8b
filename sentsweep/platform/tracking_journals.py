"""The driver's side of best-effort tracking: its own journals, and the backfill of what workers could not log.

The driver journals what it does to MLflow (closing child runs, the parent's metrics and status) like a
worker does (:mod:`sentsweep.tracking.journal`), in the sweep folder's ``tracking-journals/`` (one journal
per trial it closes, ``parent.jsonl`` for the parent run; in the cache folder when the sweep folder is
remote). A trial's driver journal first *follows* the trial's worker journal up to where it was when the
driver wrote (so a worker's history is delivered before the driver closes the run), and a driver status is
void once a later attempt of the trial reopened the run. A worker journal the driver cannot see (remote
storage, a worker on another machine) is read from its copy in the trial's storage folder
(:mod:`sentsweep.tracking.journal_mirror`), pulled into this folder as ``worker-<trial folder name>.jsonl``.

:func:`replay_sweep_journals` delivers everything pending: at the end of a sweep, at the start of a resume,
or on demand once the server answers again (:func:`sync_sweep`, ``sentsweep sync SWEEP_DIR``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow import MlflowClient

from sentsweep.tracking.journal import (
    DRIVER_JOURNALS,
    PARENT_JOURNAL,
    TRIAL_JOURNAL,
    Entry,
    Journal,
    trial_journal_name,
)
from sentsweep.tracking.journal_mirror import JournalMirror, storage_mirror
from sentsweep.tracking.replay import Outbox, Reachability, Replayer
from sentsweep.tracking.trial_logger import journal_locations

if TYPE_CHECKING:
    from ray.tune.experiment import Trial


def driver_journal_dir(sweep_dir: str | None, sweep_name: str) -> Path:
    """``<sweep folder>/tracking-journals`` for a local sweep folder, else a folder of the cache per sweep."""
    if sweep_dir and "://" not in sweep_dir:
        return Path(sweep_dir) / DRIVER_JOURNALS
    from sentsweep.config import cache_dir

    return cache_dir() / DRIVER_JOURNALS / sweep_name


def trial_sweep_dir(trial: Trial) -> str | None:
    """The sweep folder of ``trial`` as a local path, or None when it is on a remote file system."""
    import pyarrow.fs

    storage = trial.storage
    local = isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem)
    return storage.experiment_fs_path if local else None


def worker_copy_name(trial_dir_name: str) -> str:
    """The driver's local copy of a worker journal pulled from the trial's storage folder ``trial_dir_name``."""
    return f"worker-{trial_dir_name}.jsonl"


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


class DriverJournals:
    """The journals of one sweep's driver, delivered by one client (one replayer: one metric cache)."""

    def __init__(self, tracking_uri: str, folder: Path) -> None:
        self.tracking_uri = tracking_uri
        self.folder = folder
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.replayer = Replayer(self.client)

    def outbox(self, name: str, run_id: str | None = None) -> Outbox:
        return Outbox(Journal(self.folder / name, run_id=run_id), self.client, self.tracking_uri, self.replayer)

    def parent(self, run_id: str) -> Outbox:
        return self.outbox(PARENT_JOURNAL, run_id)

    def record_trial(self, trial: Trial, settings: dict[str, Any], finish: Entry, *, create: bool = True) -> None:
        """Journal (and try to deliver) the worker's history so far, then ``finish`` on the trial's run."""
        from sentsweep.tracking.vocabulary import TrackingSettings, child_run_tags, param_value

        entries: list[Entry] = []
        worker = self.worker(trial)
        if worker is not None:
            upto = len(worker.entries())
            entries.append({"op": "follow", "path": str(worker.path), "upto": upto})
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

    def replay(self, workers: Iterable[Journal | None] = ()) -> int:
        """Deliver the worker journals ``workers`` and every journal of this folder (the parent's last); the
        number of entries still pending (0: MLflow has everything)."""
        names = sorted(p.name for p in self.folder.glob("*.jsonl") if p.name != PARENT_JOURNAL)
        journals = [j for j in workers if j is not None]
        journals += [Journal(self.folder / name) for name in [*names, PARENT_JOURNAL]]
        reach = Reachability.of(self.tracking_uri)
        if reach.worth_trying():
            try:
                for journal in journals:
                    self.replayer.flush(journal)
            except Exception as exc:
                reach.failed(exc, journal)
            else:
                reach.succeeded()
        return sum(j.pending() for j in journals if j.exists())


def replay_sweep_journals(sweep_dir: str, tracking_uri: str, sweep_name: str, filesystem: Any = None,
                          fs_path: str | None = None) -> int:
    """Deliver what a sweep's trials and its driver could not log; the number of entries still pending
    (``sentsweep resume`` does this first; so can a command once the server is back).

    The trials' journals are read in a local sweep folder, else (``filesystem``, a pyarrow file system, and the
    folder's ``fs_path`` on it; default: resolved from the ``sweep_dir`` URI) from their copies in the trial
    folders of the storage."""
    journals = DriverJournals(tracking_uri, driver_journal_dir(sweep_dir, sweep_name))
    if "://" not in sweep_dir and filesystem is None:
        workers = [Journal(path) for path in sorted(Path(sweep_dir).glob(f"*/{TRIAL_JOURNAL}"))]
    else:
        workers = pull_worker_copies(filesystem, fs_path, sweep_dir, journals.folder)
    return journals.replay(workers)


def pull_worker_copies(filesystem: Any, fs_path: str | None, sweep_dir: str, folder: Path) -> list[Journal]:
    """The copies of the worker journals in the trial folders of a remote sweep folder, pulled into ``folder``
    (none when the storage cannot be listed: an outage of the storage delays them to the next replay)."""
    import pyarrow.fs

    if filesystem is None:
        filesystem, fs_path = pyarrow.fs.FileSystem.from_uri(sweep_dir)
    try:
        infos = filesystem.get_file_info(pyarrow.fs.FileSelector(fs_path, allow_not_found=True))
    except OSError:
        return []
    found = []
    for info in sorted(infos, key=lambda i: i.base_name):
        if info.type != pyarrow.fs.FileType.Directory:
            continue
        copy = JournalMirror(filesystem, info.path).pull(folder / worker_copy_name(info.base_name))
        if copy is not None:
            found.append(copy)
    return found


def sync_sweep(sweep_dir: str, endpoint_url: str | None = None) -> tuple[int, str]:
    """``sentsweep sync SWEEP_DIR``: deliver everything a sweep's trials and driver journaled (a finalize in
    an outage included: metrics, artifacts, the registration, the parent's end); the number of entries still
    pending, and the tracking URI."""
    from sentsweep.platform.config import resolve_sweep_folder
    from sentsweep.platform.storage import locate

    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    remote = location.filesystem is not None
    pending = replay_sweep_journals(location.uri, manifest.tracking_uri, manifest.sweep_name, location.filesystem,
                                    location.fs_path if remote else None)
    return pending, manifest.tracking_uri
