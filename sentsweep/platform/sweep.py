"""Run a sweep: Ray Tune's ``Tuner`` with Optuna (seeded TPE), ASHA, resources, failures and resume.

>>> outcome = run_sweep(load_sweep_config("configs/demo.yaml"))   # doctest: +SKIP
>>> outcome.best_value, outcome.counts                             # doctest: +SKIP

The path of a sweep (DESIGN.md): validate the config against the method's trial config, open the MLflow
parent run, write the sweep folder's manifest, run the Tuner (each trial logs its own child run, the
driver-side callbacks close what workers cannot and print progress), then
:func:`sentsweep.platform.finalize.finalize_sweep` evaluates, plots, exports and registers the best
trial. :func:`resume_sweep` restores an interrupted sweep from its folder (``Tuner.restore`` with
``resume_errored``) and reattaches to the same parent run.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from sentsweep.credentials import explain_refused_credentials
from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig, resolve_sweep_folder
from sentsweep.platform.outcome import SweepOutcome
from sentsweep.platform.progress import ProgressCallback
from sentsweep.platform.search import build_scheduler, build_searcher, is_final, scheduler_label
from sentsweep.platform.storage import SweepLocation, SweepManifest, locate, new_sweep_location
from sentsweep.platform.sweep_tracking import SweepRun, TrackingCallback
from sentsweep.platform.tracking_store import refuse_sqlite_on_cluster, tracking_worker_env
from sentsweep.platform.trial import run_once

if TYPE_CHECKING:
    from ray.tune import ResultGrid, Tuner

    from sentsweep.trainables.trial_config import TrialConfig


class TrainableLike(Protocol):
    """What the platform needs of a trainable (``sentsweep.trainables.registry.TrainableSpec``)."""

    name: str
    function: Callable[[dict[str, Any]], None]
    reuse_actors: bool

    @property
    def config_cls(self) -> type[TrialConfig]: ...


class SearchSpaceLike(Protocol):
    """What the platform needs of a space (``sentsweep.search_spaces.SearchSpaceSpec``)."""

    name: str
    method: str
    define_by_run: Callable[..., dict[str, Any] | None]
    first_point: dict[str, Any]
    extra_points: tuple[dict[str, Any], ...]


def space_points(space: SearchSpaceLike) -> list[dict[str, Any]]:
    """The points a space evaluates first, in order: its paper setting, then its presets."""
    return [space.first_point, *getattr(space, "extra_points", ())]


def resolve_specs(config: SweepConfig, source: str | None = None, trainable: TrainableLike | None = None,
                  space: SearchSpaceLike | None = None) -> tuple[TrainableLike, SearchSpaceLike]:
    """The method's trainable and the search space, from the registries unless given."""
    try:
        if trainable is None:
            from sentsweep.trainables.registry import get_trainable

            trainable = get_trainable(config.method)
        if space is None:
            from sentsweep.search_spaces import get_search_space

            space = get_search_space(config.space_name)
    except ConfigError as exc:
        raise ConfigError(str(exc).split(": ", 1)[-1], field=exc.field, file=source) from None
    if space.method != config.method:
        raise ConfigError(f"search space '{space.name}' is for method '{space.method}', "
                          f"not '{config.method}'", field="search_space", file=source)
    return trainable, space


def trial_param_space(config: SweepConfig, tracking: dict[str, Any] | None) -> dict[str, Any]:
    """The settings every trial shares: ``fixed`` plus the sweep's model, data, metric, seed, tracking."""
    params = dict(config.fixed)
    params.setdefault("seed", config.seed)
    if config.model is not None:
        params["model"] = config.model
    if config.data_dir is not None:
        params["data_dir"] = config.data_dir
    params.update(metric=config.metric, mode=config.mode)
    if tracking is not None:
        params["tracking"] = tracking
    return params


def validate_trials(config: SweepConfig, trainable: TrainableLike, space: SearchSpaceLike,
                    source: str | None = None) -> None:
    """Fail before Ray starts: ``fixed`` must be valid trial settings, and not fight the space."""
    from pydantic import ValidationError

    points = space_points(space)
    searched = sorted(set(config.fixed) & set().union(*points))
    if searched:
        raise ConfigError(f"'{searched[0]}' is searched by space '{space.name}'; remove it from fixed or "
                          "use a space without it", field=f"fixed.{searched[0]}", file=source)
    try:
        for point in points:
            trainable.config_cls.model_validate({**trial_param_space(config, None), **point})
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(p) for p in err["loc"])
        where = f"fixed.{name}" if name in config.fixed else name
        raise ConfigError(err["msg"].removeprefix("Value error, "), field=where, file=source) from None


#: Environment of every Ray worker of a sweep. ``TUNE_FUNCTION_THREAD_TIMEOUT_S``: how long a reused actor
#: waits for the previous trial's thread to end (Ray's default, 2 s, is shorter than a stopped trial's
#: teardown on a loaded node: closing its MLflow run, removing its work folder; a reset that times out fails
#: the next trial with "Trainable runner reuse requires reset_config()").
WORKER_ENV = {"TUNE_FUNCTION_THREAD_TIMEOUT_S": "120"}


def trial_dirname(trial: Any) -> str:
    """Short trial folders (Ray's default spells out every parameter)."""
    return f"{trial.trainable_name}_{trial.trial_id}"


@contextlib.contextmanager
def ray_session(address: str | None = None, *, log_to_driver: bool = False,
                env: Mapping[str, str] | None = None) -> Iterator[None]:
    """Use the running Ray, else connect to ``address`` or start a local one (and shut it down after); the
    workers get :data:`WORKER_ENV` and ``env`` (credentials for a cluster's workers:
    :meth:`SweepConfig.worker_credentials`)."""
    import ray

    if ray.is_initialized():
        yield
        return
    ray.init(address=address, include_dashboard=False, log_to_driver=log_to_driver,
             configure_logging=True, logging_level="WARNING",
             runtime_env={"env_vars": {**WORKER_ENV, **tracking_worker_env(), **(env or {})}})
    try:
        yield
    finally:
        ray.shutdown()


def tune_trainable(trainable: TrainableLike, config: SweepConfig) -> Any:
    """The trainable as Tune runs it: finished trials skipped (:func:`run_once`), resources attached."""
    from ray import tune

    resources = {"cpu": config.resources.cpu, "gpu": config.resources.gpu}
    return tune.with_resources(run_once(trainable.function), resources)


def build_tuner(config: SweepConfig, trainable: TrainableLike, space: SearchSpaceLike,
                location: SweepLocation, sweep: SweepRun) -> Tuner:
    """The Tuner of a new sweep (everything Ray needs to restore it is pickled into its folder)."""
    from ray import tune

    tracking = sweep.trial_settings()
    tune_config = tune.TuneConfig(
        metric=config.metric, mode=config.mode, search_alg=build_searcher(config, space.define_by_run,
                                                                          space_points(space)),
        scheduler=build_scheduler(config), num_samples=config.num_samples,
        max_concurrent_trials=config.max_concurrent_trials, time_budget_s=config.time_budget_s,
        reuse_actors=trainable.reuse_actors, trial_dirname_creator=trial_dirname,
    )
    run_config = tune.RunConfig(
        name=location.name, storage_path=location.storage_path, storage_filesystem=location.filesystem,
        failure_config=tune.FailureConfig(max_failures=config.max_failures),
        # The most recent checkpoints, not the best-scoring: each one carries the best weights so far
        # (loop.py), and a score order may delete the very checkpoint Tune's last snapshot would
        # restore from after a driver crash.
        checkpoint_config=tune.CheckpointConfig(num_to_keep=config.checkpoint.num_to_keep),
        callbacks=[TrackingCallback(tracking, scheduler_label(config), config.resources.gpu),
                   ProgressCallback(config.metric, config.mode, config.num_samples)],
        verbose=0,
    )
    return tune.Tuner(tune_trainable(trainable, config), param_space=trial_param_space(config, tracking),
                      tune_config=tune_config, run_config=run_config)


def run_sweep(config: SweepConfig, *, source: str | None = None, trainable: TrainableLike | None = None,
              space: SearchSpaceLike | None = None, address: str | None = None, finalize: bool = True,
              log_to_driver: bool = False, echo: Callable[[str], None] = print) -> SweepOutcome:
    """Run a sweep to its end; ``source`` (the YAML path) is named in config errors.

    ``trainable`` and ``space`` default to the registries' entries for ``config.method`` and
    ``config.search_space``; ``address`` names a Ray cluster (default: the running or a new local Ray).
    """
    config = config.resolved()
    trainable, space = resolve_specs(config, source, trainable, space)
    validate_trials(config, trainable, space, source)
    location = new_sweep_location(config, suffix=secrets.token_hex(2))
    sweep_name = location.name
    with explain_refused_credentials(config.tracking.uri):
        sweep = SweepRun.open(config, sweep_name, location.uri, space.define_by_run, space.first_point)
    location.write_manifest(SweepManifest(sweep_name=sweep_name, config=config.model_dump(mode="json"),
                                          parent_run_id=sweep.run_id, experiment_id=sweep.experiment_id,
                                          tracking_uri=sweep.tracking_uri, created=time.time()), config)
    echo(f"sweep {sweep_name}: {config.num_samples} trials of {config.method} over '{space.name}' "
         f"({config.scheduler.type}); folder {location.uri}; MLflow run {sweep.run_id}")
    with ray_session(address, log_to_driver=log_to_driver, env=config.worker_credentials(address)):
        refuse_sqlite_on_cluster(config.tracking.uri, address)
        tuner = build_tuner(config, trainable, space, location, sweep)
        return _fit(tuner, config, location, sweep, finalize=finalize, echo=echo)


def resume_sweep(sweep_dir: str, *, endpoint_url: str | None = None, trainable: TrainableLike | None = None,
                 space: SearchSpaceLike | None = None, address: str | None = None, finalize: bool = True,
                 log_to_driver: bool = False, echo: Callable[[str], None] = print) -> SweepOutcome:
    """Continue an interrupted sweep from its folder: unfinished and errored trials run again."""
    from ray import tune

    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    config = manifest.sweep_config()
    trainable, space = resolve_specs(config, location.uri, trainable, space)
    with explain_refused_credentials(manifest.tracking_uri):  # credentials from the environment only
        sweep = SweepRun.reopen(manifest.tracking_uri, manifest.experiment_id, manifest.parent_run_id,
                                manifest.sweep_name, sweep_dir=location.uri)
    echo(f"resuming sweep {manifest.sweep_name} from {location.uri} (MLflow run {sweep.run_id})")
    with ray_session(address, log_to_driver=log_to_driver):
        refuse_sqlite_on_cluster(manifest.tracking_uri, address)
        tuner = tune.Tuner.restore(location.uri if location.filesystem is None else location.fs_path,
                                   tune_trainable(trainable, config), resume_errored=True,
                                   storage_filesystem=location.filesystem,
                                   param_space=trial_param_space(config, sweep.trial_settings()))
        return _fit(tuner, config, location, sweep, finalize=finalize, echo=echo)


def _fit(tuner: Tuner, config: SweepConfig, location: SweepLocation, sweep: SweepRun, *, finalize: bool,
         echo: Callable[[str], None]) -> SweepOutcome:
    # Frequent experiment snapshots are what we want (resume fidelity); Tune warns about them.
    logging.getLogger("ray.tune.execution.experiment_state").setLevel(logging.ERROR)
    started = time.time()
    try:
        results = tuner.fit()
    except BaseException as exc:
        status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
        sweep.close(status, f"{type(exc).__name__}: {exc}")
        raise
    wall = time.time() - started
    if results.num_terminated + results.num_errors < len(results):  # Ctrl+C: Tune saved and returned
        sweep.close("KILLED", f"interrupted; continue with: sentsweep resume {location.uri}")
        echo(f"sweep {sweep.sweep_name} interrupted; continue with: sentsweep resume {location.uri}")
        raise KeyboardInterrupt
    counts = outcome_counts(results)
    sweep.log_metrics({"sweep_wall_seconds": wall + _previous_wall(sweep)})
    outcome = SweepOutcome(sweep.sweep_name, location.uri, sweep.run_id, sweep.experiment_id,
                           sweep.tracking_uri, counts, wall, fit_started=started, results=results)
    echo(f"sweep {sweep.sweep_name} done in {wall:.0f}s: "
         + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if not counts.get("finished"):  # nothing to evaluate or register: the sweep did not do its job
        sweep.close("FAILED", "no trial finished: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        return outcome
    try:
        if finalize:
            from sentsweep.platform.finalize import finalize_sweep

            finalize_sweep(outcome, config, location, sweep, echo=echo)
    except BaseException as exc:
        sweep.close("FAILED", f"after the trials: {type(exc).__name__}: {exc}")
        raise
    sweep.close("FINISHED")
    return outcome


def outcome_counts(results: ResultGrid) -> dict[str, int]:
    """Trials by outcome: finished (made their final report), pruned (stopped before it), failed."""
    counts = {"finished": 0, "pruned": 0, "failed": 0}
    for result in results:
        key = "failed" if result.error else "finished" if is_final(result.metrics) else "pruned"
        counts[key] += 1
    return counts


def _previous_wall(sweep: SweepRun) -> float:
    """Driver seconds logged by earlier sessions of this sweep (before a resume)."""
    return sweep.previous_max("sweep_wall_seconds")
