"""The Tuner of a new sweep (:func:`build_tuner`): the searcher, the scheduler, the failure and checkpoint settings
and the driver-side callbacks, around the trainable as Tune runs it (:func:`tune_trainable`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.budget import BudgetStopper
from sentsweep.platform.driver.checkpoint_restore import with_checkpoint_fallback
from sentsweep.platform.driver.failures import FailureLines
from sentsweep.platform.driver.progress import ProgressCallback
from sentsweep.platform.driver.specs import (
    SearchSpaceLike,
    TrainableLike,
    reference_setting,
    space_points,
    trial_param_space,
)
from sentsweep.platform.driver.staged_uploads import ShedUploadedTrialFiles, UploadLogsBeforeRestart
from sentsweep.platform.driver.stopping import StopWatch
from sentsweep.platform.driver.trial import run_once
from sentsweep.platform.driver.trial_files import storage_trimming
from sentsweep.platform.location import SweepLocation
from sentsweep.platform.search.scheduler import build_scheduler, scheduler_label
from sentsweep.platform.search.searcher import build_searcher
from sentsweep.platform.search.study_store import StudyStore
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial
    from ray.tune import Tuner


def trial_dirname(trial: Any) -> str:
    """Short trial folders (Ray's default spells out every parameter)."""
    return f"{trial.trainable_name}_{trial.trial_id}"


def tune_trainable(trainable: TrainableLike, config: SweepConfig) -> Any:
    """The trainable as Tune runs it: finished trials skipped (:func:`run_once`), a checkpoint deleted after Tune's
    last snapshot replaced by the newest one left (:mod:`.checkpoint_restore`), resources attached."""
    from ray import tune

    resources = {"cpu": config.resources.cpu, "gpu": config.resources.gpu}
    return tune.with_resources(with_checkpoint_fallback(run_once(trainable.function)), resources)


def build_tuner(config: SweepConfig, trainable: TrainableLike, space: SearchSpaceLike,
                location: SweepLocation, sweep: SweepRun, history: Sequence[FrozenTrial] = ()) -> Tuner:
    """The Tuner of a new sweep (everything Ray needs to restore it is pickled into its folder); ``history``:
    an earlier sweep's trials to start from (:mod:`..search.warm_start`)."""
    from ray import tune

    searcher = build_searcher(config, space.define_by_run, space_points(space), history=history,
                              store=StudyStore(location.uri, location.endpoint_url), study_name=location.name)
    reference = reference_setting(config, space)  # the paper's setting: never stopped, tagged
    tune_config = tune.TuneConfig(
        metric=config.metric, mode=config.mode, search_alg=searcher,
        scheduler=build_scheduler(config, reference), num_samples=config.num_samples,
        max_concurrent_trials=config.max_concurrent_trials, time_budget_s=config.time_budget_s,
        reuse_actors=trainable.reuse_actors, trial_dirname_creator=trial_dirname,
    )
    budget = BudgetStopper(sweep.sweep_name)  # the stopper and a callback: see budget_stopper
    run_config = tune.RunConfig(
        name=location.name, storage_path=location.storage_path, storage_filesystem=location.filesystem,
        stop=budget, failure_config=tune.FailureConfig(max_failures=config.max_failures),
        # The most recent checkpoints, not the best-scoring: each one carries the best weights so far
        # (loop.py), and a score order may delete the very checkpoint Tune's last snapshot would
        # restore from after a driver crash.
        checkpoint_config=tune.CheckpointConfig(num_to_keep=config.checkpoint.num_to_keep),
        callbacks=[TrialRunsCallback(sweep.trial_settings(), scheduler_label(config), config.resources.gpu,
                                     reference=reference, reference_setting=config.reference.setting
                                     if config.reference else None),
                   ProgressCallback(config.metric, config.mode, config.num_samples), FailureLines(),
                   StopWatch(), budget, ShedUploadedTrialFiles(), UploadLogsBeforeRestart(),
                   *storage_trimming(config)],
        verbose=0,
    )
    return tune.Tuner(tune_trainable(trainable, config), param_space=trial_param_space(config),
                      tune_config=tune_config, run_config=run_config)
