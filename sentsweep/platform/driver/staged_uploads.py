"""Keeps Tune's experiment upload from growing with the number of ended trials.

Tune's driver keeps every trial's logger files (``result.json``, ``progress.csv``, ``params.json``, ``params.pkl``,
TensorBoard events) in its staging folder and, at every experiment snapshot, uploads the whole folder to the sweep's
storage (``pyarrow.fs.copy_files``: unchanged files are uploaded again). With ``CheckpointConfig(num_to_keep)`` set, a
snapshot is forced whenever a trial has checkpointed ``num_to_keep`` times since the last one, so a busy sweep
uploads back to back, each pass about four files per trial ever started: requests per snapshot grow with the trials,
requests per sweep with their square. Measured with ``bench.sweep_scale`` (trivial trials, S3 on moto): the
upload thread held 68% of the driver's CPU samples at 120 trials, the S3 server 56% of a core, and the seconds per
ended trial rose from 5.8 to 13.5 within 125 trials; with the shedding below, 100 trials cost 0.56x the platform
wall per trial (docs/benchmarks.md, "500 trials on the local cluster").

:class:`ShedUploadedTrialFiles` deletes, from the driver's staging folder only, the logger files of trials that have
finished (``TERMINATED``) once the storage holds a copy of the same size; later snapshots then upload the running
trials' files alone. The storage copies stay: Tune's ``ResultGrid`` (learning curves, ``compare``, the plots) reads
them there. Errored trials keep their files (a resume may run them again, appending to them) and so do error files.
A sweep on a local folder is left alone: its snapshot is a local copy.

:class:`UploadLogsBeforeRestart` guards the other direction. When a trial restarts from a checkpoint (a retry
after an error), Tune's JSON and CSV loggers copy the storage's ``result.json`` and ``progress.csv`` over the
staging folder's. The storage copy is only as new as the last snapshot, so the lines reported since then were
lost. The callback uploads the staging copies first, so the loggers copy back what they wrote.
"""

from __future__ import annotations

import logging
import posixpath
import time
from pathlib import Path
from typing import Any

from ray.tune import Callback
from ray.tune.experiment import Trial

logger = logging.getLogger(__name__)

#: The files Tune's default logger callbacks write per trial (and nothing a resume or the tracking callback reads).
LOGGER_FILES = ("result.json", "progress.csv", "params.json", "params.pkl")
LOGGER_PREFIXES = ("events.out.tfevents",)


def is_logger_file(name: str) -> bool:
    return name in LOGGER_FILES or name.startswith(LOGGER_PREFIXES)


def on_remote_storage(trial: Trial) -> bool:
    import pyarrow.fs

    storage = trial.storage
    return storage is not None and not isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem)


def shed_uploaded(trial: Trial) -> bool:
    """Delete ``trial``'s logger files from the driver's staging folder where its storage folder holds a file of the
    same name and size; whether none is left to shed (False: try again later)."""
    if not trial.local_path or not on_remote_storage(trial):
        return True
    folder = Path(trial.local_path)
    files = sorted(p for p in folder.iterdir() if p.is_file() and is_logger_file(p.name)) if folder.is_dir() else []
    if not files:
        return True
    import pyarrow.fs

    storage = trial.storage
    try:
        infos = storage.storage_filesystem.get_file_info([posixpath.join(storage.trial_fs_path, p.name)
                                                          for p in files])
    except OSError:  # the storage does not answer: keep everything, try later
        return False
    left = 0
    for path, info in zip(files, infos, strict=True):
        if info.type == pyarrow.fs.FileType.File and info.size == path.stat().st_size:
            path.unlink(missing_ok=True)
        else:
            left += 1
    return left == 0


class ShedUploadedTrialFiles(Callback):
    """Driver-side: every ``check_every_s`` seconds, :func:`shed_uploaded` for the trials that have finished."""

    def __init__(self, check_every_s: float = 30.0) -> None:
        self.check_every_s = check_every_s
        self._finished: dict[str, Trial] = {}
        self._last_check = time.monotonic()

    def __getstate__(self) -> dict[str, Any]:  # Tune pickles callbacks into tuner.pkl: no trials in it
        return {**self.__dict__, "_finished": {}}

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        if on_remote_storage(trial):
            self._finished[trial.trial_id] = trial

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        now = time.monotonic()
        if not self._finished or now - self._last_check < self.check_every_s:
            return
        self._last_check = now
        for trial_id, trial in list(self._finished.items()):
            if trial.status != Trial.TERMINATED or shed_uploaded(trial):
                del self._finished[trial_id]


#: The files Tune's logger callbacks copy from the storage over the staging folder when a trial restarts.
RESTORED_LOGGER_FILES = ("result.json", "progress.csv")


def upload_restored_logs(trial: Trial) -> None:
    """Upload ``trial``'s :data:`RESTORED_LOGGER_FILES` from the driver's staging folder to its storage folder."""
    storage = trial.storage
    if storage is None or not trial.local_path:
        return
    import pyarrow.fs

    for name in RESTORED_LOGGER_FILES:
        local = Path(trial.local_path, name)
        if local.is_file():
            storage.storage_filesystem.create_dir(storage.trial_fs_path)
            pyarrow.fs.copy_files(str(local), posixpath.join(storage.trial_fs_path, name),
                                  source_filesystem=pyarrow.fs.LocalFileSystem(),
                                  destination_filesystem=storage.storage_filesystem)


class UploadLogsBeforeRestart(Callback):
    """Driver-side: before a trial restarts from a checkpoint, :func:`upload_restored_logs` (Tune calls the sweep's
    callbacks before its own loggers, which then copy the storage's files back)."""

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        if trial.checkpoint is None:  # the loggers' own condition for copying from the storage
            return
        try:
            upload_restored_logs(trial)
        except OSError as error:  # the storage does not answer: Tune's loggers restore what it holds
            logger.warning("trial %s: its result files were not uploaded before its restart: %s", trial, error)
