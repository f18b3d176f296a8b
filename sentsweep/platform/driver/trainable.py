"""A Tune experiment of the sweep, for the search and the confirmation stage, and the trainable as Tune runs it."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ray import tune
from ray.tune import Checkpoint
from ray.tune.trainable.function_trainable import wrap_function

from sentsweep._compat.ray import with_checkpoint
from sentsweep.platform.folder.retention import CHECKPOINT_PREFIX
from sentsweep.platform.results import FINAL_KEY
from sentsweep.tracking.vocabulary import OUTPUT_DIR
from sentsweep.trainables.checkpoints import StoredFolder
from sentsweep.trainables.restore_note import note_tune_fallback
from sentsweep.trainables.tune_checkpoints import trial_folder

if TYPE_CHECKING:
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.location import SweepLocation
    from sentsweep.trainables.registry import TrainableSpec

logger = logging.getLogger(__name__)


def trial_dirname(trial: Any) -> str:
    """Short trial folders (Ray's default spells out every parameter)."""
    return f"{trial.trainable_name}_{trial.trial_id}"


def build_tuner(trainable: TrainableSpec, config: SweepConfig, location: SweepLocation, param_space: dict[str, Any],
                callbacks: list[Any], stop: Any = None, **tune_config: Any) -> tune.Tuner:
    """A new Tune experiment in ``location``, as the search and the confirmation stage run theirs."""
    run_config = tune.RunConfig(
        name=location.name, storage_path=location.storage_path, storage_filesystem=location.filesystem, stop=stop,
        failure_config=tune.FailureConfig(max_failures=config.max_failures),
        # The most recent checkpoints, not the best-scoring: each one carries the best weights so far (loop.py), and
        # a score order may delete the very checkpoint Tune's last snapshot would restore from after a driver crash.
        checkpoint_config=tune.CheckpointConfig(num_to_keep=config.checkpoint.num_to_keep),
        callbacks=callbacks, verbose=0)
    return tune.Tuner(tune_trainable(trainable, config), param_space=param_space, run_config=run_config,
                      tune_config=tune.TuneConfig(metric=config.metric, mode=config.mode, **tune_config,
                                                  reuse_actors=trainable.reuse_actors,
                                                  trial_dirname_creator=trial_dirname))


def tune_trainable(trainable: TrainableSpec, config: SweepConfig) -> Any:
    """``trainable`` as Tune runs it: :func:`run_once`, :func:`with_checkpoint_fallback`, its resources attached."""
    return tune.with_resources(with_checkpoint_fallback(run_once(trainable.function)),
                               {"cpu": config.resources.cpu, "gpu": config.resources.gpu})


def finished_metrics(trial: StoredFolder) -> dict[str, float] | None:
    """The final metrics a finished attempt of this trial wrote to its folder, else None."""
    final = trial.child(OUTPUT_DIR).read_json("final_metrics.json")
    return {**final, "restored_from_mlflow": 1.0} if final and final.get(FINAL_KEY) == 1.0 else None


def run_once(function: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``function`` as a Tune trainable that reports a finished trial's final metrics instead of training again."""

    @functools.wraps(function)
    def trainable(config: dict[str, Any]) -> None:
        if (done := finished_metrics(trial_folder())) is not None:
            tune.report(done)
        else:
            function(config)

    return trainable


def newest_checkpoint(trial: StoredFolder) -> StoredFolder | None:
    """The trial folder's newest ``checkpoint_*`` folder (Tune numbers them in order), None when there is none."""
    names = sorted(n for n in trial.subfolders() if n.startswith(CHECKPOINT_PREFIX))
    return trial.child(names[-1]) if names else None


def with_checkpoint_fallback(train_func: Callable[[dict[str, Any]], Any]) -> type:
    """``train_func`` as a Tune trainable class that restores the newest checkpoint left when the named one is gone."""
    name = getattr(train_func, "__name__", "func")  # as Tune names a function trainable

    class CheckpointFallback(wrap_function(train_func, name=name)):  # type: ignore[misc]
        def restore(self, checkpoint_path: Any) -> None:
            checkpoint = getattr(checkpoint_path, "checkpoint", None)
            if checkpoint is None or (named := StoredFolder(checkpoint.filesystem, checkpoint.path)).exists():
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
