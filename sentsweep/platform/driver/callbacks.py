"""The driver's Tune callbacks besides the trials' runs: progress and failure lines, the stop watch, and the storage
kept from growing with the ended trials. Tune pickles them into ``tuner.pkl``, so none keeps trials in its state."""

from __future__ import annotations

import abc
import logging
import posixpath
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.fs
from ray.tune import Callback
from ray.tune.experiment import Trial

from sentsweep._compat.ray import wait_for_tune_syncs
from sentsweep.platform.folder.lock import LockLost
from sentsweep.platform.folder.retention import keep_best_weights_only
from sentsweep.platform.results import (
    ENDED_OUTCOMES,
    counts_text,
    creation_numbers,
    failure_reason,
    finite_number,
    infeasibility,
    is_failed,
)
from sentsweep.platform.stops import active_stops
from sentsweep.platform.tracking.trial_runs_callback import last_error_line, trial_outcome
from sentsweep.tracking.names import SEARCH_PREFIX, figure, trial_label
from sentsweep.trainables.checkpoints import StoredFolder
from sentsweep.trainables.restore_note import restore_line, restore_note, retry_line, retry_note

if TYPE_CHECKING:
    from sentsweep.platform.config import SweepConfig

logger = logging.getLogger(__name__)

#: The files Tune's default logger callbacks write per trial (and nothing a resume or the tracking callback reads).
LOGGER_FILES = ("result.json", "progress.csv", "params.json", "params.pkl")
#: The counts the progress line names, in its order: the running trials after the finished ones.
PROGRESS_COUNTS = ("finished", "running", *(outcome for outcome in ENDED_OUTCOMES if outcome != "finished"))


def stage_callbacks(config: SweepConfig, num_samples: int, label_prefix: str = SEARCH_PREFIX) -> list[Callback]:
    """The callbacks of a search or a confirmation stage: its lines, the stop watch and the storage's keeping."""
    delay_s = config.checkpoint.trim_ended_after_s if config.checkpoint.keep_trials is not None else None
    return [ProgressCallback(config.metric, config.mode, num_samples, label_prefix=label_prefix), StopWatch(),
            UploadLogsBeforeRestart(), *([TrimEndedTrials(config.mode, delay_s)] if delay_s is not None else [])]


class StopWatch(Callback):
    """Records a SIGINT during ``fit`` in the driver's :class:`~sentsweep.platform.driver.interrupt.StopSignals`, feeds
    its drain with Tune's results and steps, and ends ``fit`` (:class:`LockLost`) once the driver lost its lock."""

    def setup(self, **info: Any) -> None:
        if (stops := active_stops()) is not None:
            stops.watch_sigint()

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        if (stops := active_stops()) is not None and stops.drain is not None:
            stops.drain.on_result(trial.trial_id, result)

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        if (stops := active_stops()) is None:
            return
        if stops.superseded is not None:  # the lock was lost: Tune stops now, with no drain and no final save
            raise LockLost(stops.superseded)
        if stops.drain is not None:
            stops.drain.step(trials)


def label_of(trials: list[Trial], trial: Trial, prefix: str = SEARCH_PREFIX) -> str:
    """A trial's label (``t03``: the third trial Tune created, also after a resume), else its Tune id."""
    return trial_label(creation_numbers(trials).get(trial.trial_id), prefix) or trial.trial_id


class ProgressCallback(Callback):
    """A progress line whenever a trial ends and every ``every_s`` seconds, a line when a trial resumed elsewhere
    than the checkpoint Tune named, and a line per deterministically failed trial instead of Ray's tracebacks.
    A fresh sweep's first step says where it starts; a resumed one's does not repeat the line its last session
    ended with."""

    every_s = 30.0

    def __init__(self, metric: str, mode: str, num_samples: int, label_prefix: str = SEARCH_PREFIX) -> None:
        self.metric, self.mode, self.num_samples, self.label_prefix = metric, mode, num_samples, label_prefix
        self._start, self._last, self._stepped = time.monotonic(), 0.0, False

    def setup(self, **info: Any) -> None:
        self._start, self._last, self._stepped = time.monotonic(), 0.0, False  # Tune pickled them before a resume
        self.num_samples = info.get("total_num_samples") or self.num_samples  # a resume may have changed it

    def line(self, trials: list[Trial], ending: Trial | None = None) -> str:
        """The progress line; ``ending`` is a trial Tune is completing (its status not yet updated)."""
        counts = Counter(trial_outcome(t, ending=t is ending) for t in trials)
        ended = sum(counts[outcome] for outcome in ENDED_OUTCOMES)
        named = counts_text({outcome: counts[outcome] for outcome in PROGRESS_COUNTS})
        text = f"[{time.monotonic() - self._start:5.0f}s] {ended}/{self.num_samples} trials: {named}"
        best = self.best(trials)
        return text + (f" | best {self.metric} {figure(best[1])} ({best[0]})" if best is not None else "")

    def best(self, trials: list[Trial]) -> tuple[str, float] | None:
        def value(trial: Trial) -> float | None:
            result = trial.last_result or {}
            return finite_number(result.get(f"best_{self.metric}", result.get(self.metric)))

        scored = [(trial, v) for trial in trials if (v := value(trial)) is not None]
        found = (max if self.mode == "max" else min)(scored, key=lambda pair: pair[1], default=None)
        if found is None:
            return None
        label, outcome = label_of(trials, found[0], self.label_prefix), trial_outcome(found[0])
        return (f"{label}, {outcome}" if outcome in ("pruned", "stopped", "failed") else label), found[1]  # cannot win

    def _print(self, trials: list[Trial], ending: Trial | None = None) -> None:
        self._last = time.monotonic()
        print(self.line(trials, ending), flush=True)

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        first, self._stepped = not self._stepped, True
        if first and any(t.status in (Trial.TERMINATED, Trial.ERROR) for t in trials):
            self._last = time.monotonic()  # a resume: the earlier session's last line said where it stands
        elif time.monotonic() - self._last >= self.every_s:
            self._print(trials)

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        if restore_note(result) is not None:  # a trial's first report after a fallback: labels are read only then
            print(restore_line(label_of(trials, trial, self.label_prefix), result), flush=True)

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._print(trials, ending=trial)
        if is_failed(trial.last_result):
            told = f"; Optuna told: infeasible ({kind})" if (kind := infeasibility(trial.last_result)) else ""
            print(f"trial {label_of(trials, trial, self.label_prefix)} failed (not retried): "
                  f"{failure_reason(trial.last_result)}{told}", flush=True)

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._print(trials)
        print(f"trial {label_of(trials, trial, self.label_prefix)} failed: {last_error_line(trial)} (traceback in "
              f"{trial.error_file})", flush=True)

    def on_trial_recover(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        note = retry_note(getattr(trial.checkpoint, "path", None), last_error_line(trial))
        print(retry_line(label_of(trials, trial, self.label_prefix), note), flush=True)


class EndedTrialsChore(Callback):
    """Does :meth:`chore` for each trial that ended normally, ``delay_s`` after it ended, and again ``delay_s`` after
    each time the storage failed (the chore returned False). Tune pickles the callback without its trials."""

    def __init__(self, delay_s: float = 30.0) -> None:
        self.delay_s = delay_s
        self._ended: dict[str, tuple[float, Trial]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_ended": {}}

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._ended[trial.trial_id] = (time.monotonic(), trial)

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        now = time.monotonic()
        for trial_id, (ended, trial) in list(self._ended.items()):
            if now - ended < self.delay_s:
                continue
            if trial.status != Trial.TERMINATED or trial.storage is None or self.chore(trial):  # errored, or done
                del self._ended[trial_id]
            else:  # the storage failed: tried again after another delay, not at every step of Tune's loop
                self._ended[trial_id] = (now, trial)

    @abc.abstractmethod
    def chore(self, trial: Trial) -> bool:
        """Do the work for ``trial``; whether it is done (False: the storage failed, try again later)."""


class ShedUploadedTrialFiles(EndedTrialsChore):
    """For each finished trial, delete its logger files from the driver's staging folder where its storage folder
    holds a file of the same name and size. Tune uploads that folder in a background thread that lists it, then
    opens each file, so a file deleted in between fails the whole snapshot: the files go once no upload runs (Tune
    starts them from the thread that calls this callback), else on a later try."""

    #: How long a step of Tune's loop waits for Tune's running upload before it leaves the files to a later try.
    sync_wait_s = 10.0
    #: Whether no upload runs, asked once a step (None: not yet), so trials that end together wait once, not each.
    _idle: bool | None = None

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        self._idle = None
        super().on_step_end(iteration, trials, **info)

    def uploads_idle(self) -> bool:
        if self._idle is None:  # no upload starts before the step ends: Tune starts them from this thread
            self._idle = wait_for_tune_syncs(self.sync_wait_s)
        return self._idle

    def chore(self, trial: Trial) -> bool:
        storage = trial.storage
        if not trial.local_path or isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem):
            return True
        files = [p for p in sorted(Path(trial.local_path).glob("*"))  # none when the folder is gone
                 if p.is_file() and (p.name in LOGGER_FILES or p.name.startswith("events.out.tfevents"))]
        try:
            infos = storage.storage_filesystem.get_file_info([posixpath.join(storage.trial_fs_path, p.name)
                                                              for p in files])
        except OSError:  # the storage does not answer: keep everything, try later
            return False
        shed = [path for path, info in zip(files, infos, strict=True)
                if info.type == pyarrow.fs.FileType.File and info.size == path.stat().st_size]
        if shed and not self.uploads_idle():  # a slow storage: its snapshot still reads them
            return False
        for path in shed:
            path.unlink(missing_ok=True)
        return len(shed) == len(files)


class UploadLogsBeforeRestart(Callback):
    """Before a trial restarts from a checkpoint, upload its ``result.json`` and ``progress.csv`` from the staging
    folder (Tune calls the sweep's callbacks before its own loggers, which then copy the storage's files back)."""

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        storage = trial.storage
        if trial.checkpoint is None or storage is None or not trial.local_path:  # the loggers copy nothing then
            return
        try:
            for name in ("result.json", "progress.csv"):
                local = Path(trial.local_path, name)
                if local.is_file():
                    storage.storage_filesystem.create_dir(storage.trial_fs_path)
                    pyarrow.fs.copy_files(str(local), posixpath.join(storage.trial_fs_path, name),
                                          source_filesystem=pyarrow.fs.LocalFileSystem(),
                                          destination_filesystem=storage.storage_filesystem)
        except OSError as error:  # the storage does not answer: Tune's loggers restore what it holds
            logger.warning("trial %s: its result files were not uploaded before its restart: %s", trial, error)


class TrimEndedTrials(EndedTrialsChore):
    """``delay_s`` after a trial ended normally, keep its best weights and remove its checkpoints."""

    def __init__(self, mode: str, delay_s: float) -> None:
        super().__init__(delay_s)
        self.mode = mode

    def chore(self, trial: Trial) -> bool:
        storage, checkpoint = trial.storage, trial.checkpoint
        latest = StoredFolder(checkpoint.filesystem, checkpoint.path) if checkpoint is not None else None
        try:
            removed = keep_best_weights_only(StoredFolder(storage.storage_filesystem, storage.trial_fs_path),
                                             latest, self.mode)
        except OSError as exc:
            logger.warning("trial %s ended, but its checkpoints could not be removed yet (%s); trying again later",
                           trial.trial_id, exc)
            return False
        if removed:
            logger.info("trial %s ended: kept its best weights, removed %.1f MiB of checkpoints", trial.trial_id,
                        removed / 2**20)
        return True
