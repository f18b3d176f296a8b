"""Keeps a sweep's storage from growing with the number of trials that have ended.

While a trial runs, Tune keeps its ``checkpoint.num_to_keep`` most recent checkpoints, each holding the weights
and the optimizer state (about 3x the weights with Adam), and the trial keeps its best weights in ``best/``
(:mod:`sentsweep.trainables.checkpoints`). Tune never deletes the last checkpoints of a trial that has ended, and
the after-sweep retention (:mod:`..folder.retention`) runs only when the sweep is finalized: a sweep of 500 BERT-base
trials
would hold about 3 GB per trial ended, 1.5 TB, until its end, and a sweep that never reached finalize would keep it all.

:class:`TrimEndedTrials` (a driver-side Tune callback) does for each trial that ended normally (``TERMINATED``:
finished, or stopped by the scheduler) what the retention does at the end for a kept trial
(:func:`~..folder.retention.keep_best_weights_only`): ``best/`` is made to hold the trial's best weights, and its
checkpoints go. Ranking needs every trial, so ``best/`` stays until the end, where the retention prunes the trials
below ``checkpoint.keep_trials``; what an ended trial holds in between is its best weights alone. It waits
``checkpoint.trim_ended_after_s`` (two minutes; ``null`` turns the trimming off) after the trial ended (the stopped
actor is gone, and Tune has snapshotted the experiment since, so a restored driver does not take the trial for a
running one), and leaves alone errored trials (a resume may run them again from their checkpoints) and sweeps with
``checkpoint.keep_trials: null`` (keep everything). A storage error is a warning, tried again after another delay;
it never fails the sweep. If a driver is lost within the delay after the last snapshot and the trial is restored as
running, it finds no checkpoint and starts again, keeping its best weights as the best to beat
(:class:`~sentsweep.trainables.loop.TrainingLoop`).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ray.tune import Callback
from ray.tune.experiment import Trial

from sentsweep.platform.folder.retention import keep_best_weights_only
from sentsweep.trainables.checkpoints import StoredFolder

if TYPE_CHECKING:
    from sentsweep.platform.config import SweepConfig

logger = logging.getLogger(__name__)


def storage_trimming(config: SweepConfig) -> list[Callback]:
    """The callbacks that trim a sweep's ended trials: none when it keeps every weight (``keep_trials: null``) or
    keeps the checkpoints to its end (``trim_ended_after_s: null``)."""
    settings = config.checkpoint
    if settings.keep_trials is None or settings.trim_ended_after_s is None:
        return []
    return [TrimEndedTrials(config.mode, settings.trim_ended_after_s)]


class TrimEndedTrials(Callback):
    """Driver-side: ``delay_s`` after a trial ended normally, keep its best weights and remove its checkpoints."""

    def __init__(self, mode: str, delay_s: float = 120.0) -> None:
        self.mode, self.delay_s = mode, delay_s
        self._ended: dict[str, tuple[float, Trial]] = {}

    def __getstate__(self) -> dict[str, Any]:  # Tune pickles callbacks into tuner.pkl: no trials in it
        return {**self.__dict__, "_ended": {}}

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._ended[trial.trial_id] = (time.monotonic(), trial)

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        now = time.monotonic()
        for trial_id, (ended, trial) in list(self._ended.items()):
            if now - ended < self.delay_s:
                continue
            if trial.status != Trial.TERMINATED or trial.storage is None:  # errored, or running again
                del self._ended[trial_id]
                continue
            if self.trim(trial):
                del self._ended[trial_id]
            else:  # the storage failed: tried again after another delay, not at every step of Tune's loop
                self._ended[trial_id] = (now, trial)

    def trim(self, trial: Trial) -> bool:
        """Keep ``trial``'s best weights alone; whether it is done (False: the storage failed, try later)."""
        storage = trial.storage
        folder = StoredFolder(storage.storage_filesystem, storage.trial_fs_path)
        checkpoint = trial.checkpoint
        latest = StoredFolder(checkpoint.filesystem, checkpoint.path) if checkpoint is not None else None
        try:
            removed = keep_best_weights_only(folder, latest, self.mode)
        except OSError as exc:
            logger.warning("trial %s ended, but its checkpoints could not be removed yet (%s); trying again later",
                           trial.trial_id, exc)
            return False
        if removed:
            logger.info("trial %s ended: kept its best weights, removed %.1f MiB of checkpoints", trial.trial_id,
                        removed / 2**20)
        return True
