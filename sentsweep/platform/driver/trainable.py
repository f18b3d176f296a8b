"""The trainable as Tune runs it (:func:`tune_trainable`): a finished trial never trains again, and a trial whose
snapshotted checkpoint is gone restores from the newest one left.

A trial that finished after Tune's last experiment snapshot is restored as unfinished; its final metrics in its folder
say otherwise (:func:`run_once`). Tune deletes older checkpoints (``num_to_keep``) as newer ones register but
snapshots only every so often, so a restored snapshot may name a deleted checkpoint: :func:`with_checkpoint_fallback`
takes the newest one left, or starts afresh, with a warning and a note the trial reports
(:mod:`sentsweep.trainables.restore_note`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sentsweep._compat.ray import with_checkpoint
from sentsweep.platform.results import FINAL_KEY
from sentsweep.tracking.vocabulary import OUTPUT_DIR
from sentsweep.trainables.checkpoints import StoredFolder
from sentsweep.trainables.restore_note import note_tune_fallback

if TYPE_CHECKING:
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.driver.specs import TrainableLike

logger = logging.getLogger(__name__)

CHECKPOINT_PREFIX = "checkpoint_"


def trial_dirname(trial: Any) -> str:
    """Short trial folders (Ray's default spells out every parameter)."""
    return f"{trial.trainable_name}_{trial.trial_id}"


def tune_trainable(trainable: TrainableLike, config: SweepConfig) -> Any:
    """``trainable`` as Tune runs it: :func:`run_once`, :func:`with_checkpoint_fallback`, its resources attached."""
    from ray import tune

    resources = {"cpu": config.resources.cpu, "gpu": config.resources.gpu}
    return tune.with_resources(with_checkpoint_fallback(run_once(trainable.function)), resources)


def finished_metrics(trial: StoredFolder) -> dict[str, float] | None:
    """The final metrics a finished attempt of this trial wrote to its folder, else None."""
    final = trial.child(OUTPUT_DIR).read_json("final_metrics.json")
    if not final or final.get(FINAL_KEY) != 1.0:
        return None
    return {**final, "restored_from_mlflow": 1.0}


def run_once(function: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``function`` as a Tune trainable that reports a finished trial's final metrics instead of training again."""

    @functools.wraps(function)
    def trainable(config: dict[str, Any]) -> None:
        from ray import tune

        from sentsweep.trainables.tune_checkpoints import trial_folder

        done = finished_metrics(trial_folder())
        if done is not None:
            tune.report(done)
            return
        function(config)

    return trainable


def newest_checkpoint(trial: StoredFolder) -> StoredFolder | None:
    """The trial folder's newest ``checkpoint_*`` folder (Tune numbers them in order), None when there is none."""
    names = sorted(n for n in trial.subfolders() if n.startswith(CHECKPOINT_PREFIX))
    return trial.child(names[-1]) if names else None


def with_checkpoint_fallback(train_func: Callable[[dict[str, Any]], Any]) -> type:
    """``train_func`` as Tune's function trainable class, restoring from the newest checkpoint left when the one
    Tune's snapshot names is gone."""
    from ray.tune import Checkpoint
    from ray.tune.trainable.function_trainable import wrap_function

    name = getattr(train_func, "__name__", "func")  # as Tune names a function trainable
    base = wrap_function(train_func, name=name)

    class CheckpointFallback(base):  # type: ignore[misc, valid-type]
        def restore(self, checkpoint_path: Any) -> None:
            checkpoint = getattr(checkpoint_path, "checkpoint", None)
            if checkpoint is None:
                return super().restore(checkpoint_path)
            named = StoredFolder(checkpoint.filesystem, checkpoint.path)
            if named.exists():
                return super().restore(checkpoint_path)
            newest = newest_checkpoint(named.parent())
            gone = f"{named.name} is gone (deleted after Tune's last snapshot)"
            note_tune_fallback(named.parent().path, gone if newest is None else f"{gone}; {newest.name} is the newest")
            if newest is None:
                logger.warning("%s is gone and the trial holds no other checkpoint: it starts afresh", named.path)
                return None
            logger.warning("%s is gone (deleted after Tune's last snapshot): restoring from %s", named.path,
                           newest.path)
            return super().restore(with_checkpoint(checkpoint_path, Checkpoint(newest.path, filesystem=newest.fs)))

    CheckpointFallback.__name__ = CheckpointFallback.__qualname__ = name
    return CheckpointFallback
