"""Run a sweep: Ray Tune's ``Tuner`` with Optuna (seeded TPE), ASHA, resources, failures and resume.

>>> outcome = run_sweep(load_sweep_config("configs/demo.yaml"))   # doctest: +SKIP
>>> outcome.best_value, outcome.counts                             # doctest: +SKIP

The path of a sweep (DESIGN.md): validate the config against the method's trial config, open the MLflow
parent run, write the sweep folder's manifest, run the Tuner (each trial logs its own child run, the
driver-side callbacks close what workers cannot and print progress), then
:func:`sentsweep.platform.report.finalize.finalize_sweep` evaluates, plots, exports and registers the best
trial. :func:`resume_sweep` restores an interrupted sweep from its folder (``Tuner.restore`` with
``resume_errored``) and reattaches to the same parent run.

Around that path: checks before Ray starts (:mod:`.preflight`), one driver per sweep (:mod:`..folder.lock`), graceful
stops on SIGINT and SIGTERM (:mod:`.interrupt`; running trials checkpoint first: :mod:`.drain`), the parent's end
state (:mod:`.sweep_state`), a resume that keeps the sweep's config (:mod:`.resume_config`) and trials failing
deterministically without retries (:mod:`.failures`).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sentsweep.credentials import explain_refused_credentials
from sentsweep.errors import ConfigError, SentsweepError, StorageError, config_error
from sentsweep.platform.config import SweepConfig, joins_ray_cluster, resolve_sweep_folder
from sentsweep.platform.confirm.stage import StageTrials, run_confirmation
from sentsweep.platform.confirm.stage_run import end_stage_run, schedule_stage_run_if_answered
from sentsweep.platform.driver.budget import BudgetStopper, SweepBudget, driving, record_budget, record_stage_compute
from sentsweep.platform.driver.checkpoint_restore import with_checkpoint_fallback
from sentsweep.platform.driver.drain import Drain
from sentsweep.platform.driver.failures import FailureLines, is_failed
from sentsweep.platform.driver.interrupt import StopSignals, SweepInterrupted, graceful_stops
from sentsweep.platform.driver.local_ray import loopback_only, session_token
from sentsweep.platform.driver.outcome import SweepOutcome
from sentsweep.platform.driver.preflight import check_sweep
from sentsweep.platform.driver.progress import ProgressCallback
from sentsweep.platform.driver.resume_config import apply_resume_config, resume_config
from sentsweep.platform.driver.resume_samples import refuse_fewer_samples
from sentsweep.platform.driver.staged_uploads import ShedUploadedTrialFiles
from sentsweep.platform.driver.stale_ray import tidy_local_ray
from sentsweep.platform.driver.stopping import StopWatch, close_interrupted_trials, unfinished_trials
from sentsweep.platform.driver.sweep_state import SweepState
from sentsweep.platform.driver.trial import run_once
from sentsweep.platform.driver.trial_files import storage_trimming
from sentsweep.platform.folder.location import SweepLocation, SweepManifest, locate, new_sweep_location
from sentsweep.platform.folder.lock import LockLost, SweepLock
from sentsweep.platform.folder.trust import refuse_foreign_parent, refuse_untrusted_state, trusted_tracking_uri
from sentsweep.platform.report.notify import SweepNotifier
from sentsweep.platform.search.search_state import mark_search_over, search_results
from sentsweep.platform.search.searcher import build_scheduler, build_searcher, is_final, scheduler_label
from sentsweep.platform.search.study_store import StudyStore
from sentsweep.platform.search.warm_start import load_history, measured_data
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.platform.tracking.store import hidden_from_workers, open_client, refuse_sqlite_on_cluster
from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial
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

    def for_settings(self, settings: Mapping[str, Any]) -> SearchSpaceLike: ...


def space_points(space: SearchSpaceLike) -> list[dict[str, Any]]:
    """The points a space evaluates first, in order: its paper setting, then its presets."""
    return [space.first_point, *getattr(space, "extra_points", ())]


def resolve_specs(config: SweepConfig, source: str | None = None, trainable: TrainableLike | None = None,
                  space: SearchSpaceLike | None = None) -> tuple[TrainableLike, SearchSpaceLike]:
    """The method's trainable and the search space, from the registries unless given; the space is the one
    this sweep runs (``space.for_settings`` of the settings its trials share: a first point that depends on
    ``fixed`` or the model, such as CoSENT's NLI setting)."""
    from pydantic import ValidationError

    try:
        if trainable is None:
            from sentsweep.trainables.registry import get_trainable

            trainable = get_trainable(config.method)
        if space is None:
            from sentsweep.search_spaces import get_search_space

            space = get_search_space(config.space_name)
        if space.method != config.method:
            raise ConfigError(f"search space '{space.name}' is for method '{space.method}', "
                              f"not '{config.method}'", field="search_space")
        space = space.for_settings(trial_param_space(config))
    except ConfigError as exc:
        raise ConfigError(str(exc).split(": ", 1)[-1], field=_settings_field(config, exc.field),
                          file=source) from None
    except ValidationError as exc:
        raise _settings_error(exc, config, source) from None
    return trainable, space


def _settings_field(config: SweepConfig, name: str | None) -> str | None:
    """A trial setting's place in the sweep config: ``fixed.NAME`` when ``fixed`` sets it."""
    return f"fixed.{name}" if name in config.fixed else name


def _settings_error(exc: Any, config: SweepConfig, source: str | None) -> ConfigError:
    """A trial config's first validation error (pydantic) as one ConfigError naming its sweep-config field."""
    return config_error(exc, source, lambda name: _settings_field(config, name))


def trial_param_space(config: SweepConfig) -> dict[str, Any]:
    """The settings every trial shares: ``fixed`` plus the sweep's model, data, metric, seed and the system-metrics
    switch (no tracking setting: the driver writes the trials' runs)."""
    params = dict(config.fixed)
    params.setdefault("seed", config.seed)
    if config.model is not None:
        params["model"] = config.model
    if config.data_dir is not None:
        params["data_dir"] = config.data_dir
    params.update(metric=config.metric, mode=config.mode)
    if config.tracking.system_metrics:
        params.update(system_metrics=True, system_metrics_interval_s=config.tracking.system_metrics_interval_s)
    return params


def validate_trials(config: SweepConfig, trainable: TrainableLike, space: SearchSpaceLike,
                    source: str | None = None) -> list[TrialConfig]:
    """Fail before Ray starts: ``fixed`` must be valid trial settings, and not fight the space; returns the
    trial configs of the space's first points."""
    from pydantic import ValidationError

    points = space_points(space)
    searched = sorted(set(config.fixed) & set().union(*points))
    if searched:
        raise ConfigError(f"'{searched[0]}' is searched by space '{space.name}'; remove it from fixed or "
                          "use a space without it", field=f"fixed.{searched[0]}", file=source)
    try:
        return [trainable.config_cls.model_validate({**trial_param_space(config), **point})
                for point in points]
    except ValidationError as exc:
        raise _settings_error(exc, config, source) from None


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
    """Use the running Ray, else connect to ``address`` (or ``RAY_ADDRESS``) or start a local one (and shut it down
    after); the workers get :data:`WORKER_ENV` and ``env`` (credentials for a cluster's workers:
    :meth:`SweepConfig.worker_credentials`).

    Without an address the local Ray is a new one (``address="local"``): ``ray.init()`` alone would join the last
    cluster anyone started on this machine with ``ray start`` (a colleague's, on a shared workstation), and run the
    sweep there without the credentials and paths a cluster sweep gets. That local Ray listens on 127.0.0.1 only
    (:func:`~sentsweep.platform.driver.local_ray.loopback_only`)."""
    import ray

    if ray.is_initialized():
        yield
        return
    joins = joins_ray_cluster(address)
    with contextlib.ExitStack() as local:
        if not joins:
            local.enter_context(loopback_only())
            local.enter_context(session_token())
        with hidden_from_workers() if not joins else contextlib.nullcontext():  # MLflow is the driver's alone
            context = ray.init(address=address if joins else "local", include_dashboard=False,
                               log_to_driver=log_to_driver, configure_logging=True, logging_level="WARNING",
                               runtime_env={"env_vars": {**WORKER_ENV, **(env or {})}})
        if not joins:  # what killed drivers' local Rays left is ended (:mod:`.stale_ray`)
            tidy_local_ray(context.address_info.get("session_dir"))
        try:
            yield
        finally:
            ray.shutdown()


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
    tune_config = tune.TuneConfig(
        metric=config.metric, mode=config.mode, search_alg=searcher,
        scheduler=build_scheduler(config), num_samples=config.num_samples,
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
        callbacks=[TrialRunsCallback(sweep.trial_settings(), scheduler_label(config), config.resources.gpu),
                   ProgressCallback(config.metric, config.mode, config.num_samples), FailureLines(),
                   StopWatch(), budget, ShedUploadedTrialFiles(), *storage_trimming(config)],
        verbose=0,
    )
    return tune.Tuner(tune_trainable(trainable, config), param_space=trial_param_space(config),
                      tune_config=tune_config, run_config=run_config)


def run_sweep(config: SweepConfig, *, source: str | None = None, trainable: TrainableLike | None = None,
              space: SearchSpaceLike | None = None, address: str | None = None, finalize: bool = True,
              log_to_driver: bool = False, echo: Callable[[str], None] = print, preflight: bool = True,
              forward_credentials: bool = False) -> SweepOutcome:
    """Run a sweep to its end; ``source`` (the YAML path) is named in config errors.

    ``trainable`` and ``space`` default to the registries' entries for ``config.method`` and
    ``config.search_space``; ``address`` names a Ray cluster (default: the running or a new local Ray).
    ``preflight``: check storage, tracking, model, spaCy and data before Ray starts (:mod:`.preflight`).
    SIGINT or SIGTERM stop it gracefully (:mod:`.interrupt`): :class:`SweepInterrupted` is raised once Tune
    saved its state. ``forward_credentials``: send the credentials taken off the config's URIs to a joined
    cluster's workers (:meth:`~sentsweep.platform.config.SweepConfig.worker_credentials`).
    """
    config = config.resolved()
    worker_env = config.worker_credentials(address, forward_credentials)
    trainable, space = resolve_specs(config, source, trainable, space)
    trials = validate_trials(config, trainable, space, source)
    if preflight:
        check_sweep(config, trials, source)
    history = load_history(config.warm_start, space.define_by_run, config.storage_endpoint_url, config) \
        if config.warm_start else []
    location = new_sweep_location(config, suffix=secrets.token_hex(2))
    sweep_name = location.name
    stops = StopSignals()
    with graceful_stops(stops), explain_refused_credentials(config.tracking.uri):
        sweep = SweepRun.open(config, sweep_name, location.uri, space.define_by_run, space.first_point)
        notifier = SweepNotifier.for_sweep(config, sweep_name, sweep.run_id, location.uri, echo)
        try:
            # a new run: nobody else knows it yet
            lock = SweepLock.for_folder(location, sweep_name, on_lost=stops.supersede)
            lock.acquire()
            location.write_manifest(SweepManifest(sweep_name=sweep_name, config=config.model_dump(mode="json"),
                                                  parent_run_id=sweep.run_id, experiment_id=sweep.experiment_id,
                                                  tracking_uri=sweep.tracking_uri, created=time.time(),
                                                  data_sha256=measured_data(config)), config)
            if finalize:  # after the manifest: the sweep is resumable whatever MLflow answers here
                schedule_stage_run_if_answered(sweep, config)
        except BaseException as exc:
            sweep.close("crashed", f"{type(exc).__name__}: {exc}")
            sweep.flush()
            notifier.sweep_ended("crashed", f"{type(exc).__name__}: {exc}")
            raise
        echo(f"sweep {sweep_name}: {config.num_samples} trials of {config.method} over '{space.name}' "
             f"({config.scheduler.type}); folder {location.uri}; MLflow run {sweep.run_id}"
             + (f"; warm start: {len(history)} trials of {config.warm_start}" if config.warm_start else ""))
        try:
            return _drive(lambda: build_tuner(config, trainable, space, location, sweep, history), config, location,
                          sweep, stops, address=address, worker_env=worker_env, log_to_driver=log_to_driver,
                          finalize=finalize, echo=echo, stage=_stage_trials(trainable, config), notifier=notifier)
        finally:
            lock.release()


def resume_sweep(sweep_dir: str, *, endpoint_url: str | None = None, config: SweepConfig | None = None,
                 overrides: Sequence[str] = (), allow_change: Collection[str] = (),
                 trainable: TrainableLike | None = None, space: SearchSpaceLike | None = None,
                 address: str | None = None, finalize: bool = True, log_to_driver: bool = False,
                 echo: Callable[[str], None] = print, preflight: bool = True,
                 forward_credentials: bool = False, tracking_uri: str | None = None,
                 trust_storage: bool = False) -> SweepOutcome:
    """Continue an interrupted sweep from its folder: unfinished and errored trials run again.

    The sweep continues with the config it was started with: ``config`` (a full config, e.g. the YAML of
    ``--resume-interrupted``) or ``overrides`` (``KEY=VALUE`` on the stored config) that differ from it are
    refused with the differing fields, except the ``allow_change`` ones a resume can take
    (:mod:`.resume_config`). A live lock of another process on the sweep folder refuses the resume
    (:class:`~sentsweep.platform.folder.lock.LockHeldError`); the parent run is marked RUNNING only once
    ``Tuner.restore`` succeeded. The manifest's tracking server is contacted only when ``tracking_uri`` (or a given
    ``config``'s) names it, or the folder is local, and its parent run must be the folder's; a folder in shared
    storage is restored outside a Kubernetes pod only with ``trust_storage`` (:mod:`..folder.trust`).
    """
    from ray import tune

    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    stored = manifest.sweep_config()
    given = config.resolved() if config is not None else _with_overrides(stored, overrides, location.uri)
    # the server the user names: the flag, or the YAML of --resume-interrupted (nothing is contacted here)
    uri = trusted_tracking_uri(manifest, location, tracking_uri or (given.tracking.uri if config is not None else None))
    config = resume_config(stored, given, allow_change, location.uri)
    refuse_fewer_samples(location, stored, config)
    # the credentials a given config's URIs carried (the stored one holds none): --resume-interrupted's YAML
    worker_env = (given if given is not None else config).worker_credentials(address, forward_credentials)
    trainable, space = resolve_specs(config, location.uri, trainable, space)
    trials = validate_trials(config, trainable, space, location.uri)
    client = open_client(uri)  # contacted once everything local checked out; acted on once the run is the folder's
    with explain_refused_credentials(uri):
        refuse_foreign_parent(client, manifest, location)
    refuse_untrusted_state(location, trust_storage)  # before anything of Tune's state is unpickled
    stops = StopSignals()
    # credentials from the environment only: a 401/403 anywhere here is one line naming the variables
    # the lock before anything is written to MLflow: a driver still running the sweep writes its runs itself
    lock = SweepLock.for_folder(location, manifest.sweep_name, on_lost=stops.supersede)
    with graceful_stops(stops), explain_refused_credentials(uri), lock:
        sweep = SweepRun.attach(uri, manifest.experiment_id, manifest.parent_run_id, manifest.sweep_name,
                                *location.resolve(), register=manifest.config.get("register_model"))
        if preflight:
            check_sweep(config, trials, location.uri)
        if finalize:
            schedule_stage_run_if_answered(sweep, config)
        echo(f"resuming sweep {manifest.sweep_name} from {location.uri} (MLflow run {sweep.run_id})")
        notifier = SweepNotifier.for_sweep(config, manifest.sweep_name, sweep.run_id, location.uri, echo)

        def restore() -> Tuner:
            tuner = tune.Tuner.restore(location.uri if location.filesystem is None else location.fs_path,
                                       tune_trainable(trainable, config), resume_errored=True,
                                       storage_filesystem=location.filesystem,
                                       param_space=trial_param_space(config))
            apply_resume_config(tuner, location, manifest, config, sweep)
            return tuner

        return _drive(restore, config, location, sweep, stops, address=address, worker_env=worker_env,
                      log_to_driver=log_to_driver, finalize=finalize, echo=echo, reopen=True,
                      stage=_stage_trials(trainable, config), notifier=notifier)


def _with_overrides(stored: SweepConfig, overrides: Sequence[str], source: str) -> SweepConfig | None:
    if not overrides:
        return None
    from sentsweep.platform.config import parse_sweep_config
    from sentsweep.yaml_io import apply_overrides

    given = parse_sweep_config(apply_overrides(stored.model_dump(mode="json"), list(overrides)), source)
    given.refuse_stray_credentials()  # not resolved(): the stored config is; a changed value is checked here
    return given


def _stage_trials(trainable: TrainableLike, config: SweepConfig) -> StageTrials:
    """How the confirmation stage runs a trial: as the search does."""
    return StageTrials(tune_trainable(trainable, config), trainable.reuse_actors, trial_dirname)


def _drive(make_tuner: Callable[[], Tuner], config: SweepConfig, location: SweepLocation, sweep: SweepRun,
           stops: StopSignals, *, address: str | None, worker_env: Mapping[str, str], log_to_driver: bool,
           finalize: bool, echo: Callable[[str], None], reopen: bool = False, stage: StageTrials | None = None,
           notifier: SweepNotifier | None = None) -> SweepOutcome:
    """Run the Tuner in a Ray session (then the confirmation stage when ``finalize``: :mod:`..confirm.stage`), then
    close the parent run the way the sweep ended (and notify it: :mod:`..report.notify`)."""

    def close(state: SweepState, reason: str | None = None, outcome: SweepOutcome | None = None) -> None:
        sweep.close(state, reason)
        if state == "failed":  # for good: the confirmation stage will not run (or not again)
            end_stage_run(sweep, config, location, f"the sweep failed: {reason}")
        elif state == "finished" and confirmation is None:  # a stage that did not run never will
            why = (f"the confirmation stage did not run: no finished trial reported {config.metric}" if finalize
                   else "the sweep was finished without its final stages (--no-finalize)")
            end_stage_run(sweep, config, location, why)
        sweep.flush()  # what MLflow has not taken is saved in the sweep folder (a resume or sync delivers it)
        if notifier is not None:
            notifier.sweep_ended(state, reason, outcome)

    # Frequent experiment snapshots are what we want (resume fidelity); Tune warns about them.
    logging.getLogger("ray.tune.execution.experiment_state").setLevel(logging.ERROR)
    started = time.time()
    opened = not reopen  # a resumed parent is touched only once its Tuner is restored
    confirmation = None
    try:
        with ray_session(address, log_to_driver=log_to_driver, env=worker_env), \
                graceful_stops(stops), stops.draining(Drain(*location.resolve(), config.stop_grace_s)), \
                driving(sweep.sweep_name, SweepBudget(config.budget, echo=echo)) as budget:
            refuse_sqlite_on_cluster(config.tracking.uri, address)  # Ray is connected: before the Tuner
            tuner = make_tuner()
            if reopen:
                sweep.reopen()
                opened = True
            results = search_results(tuner, location, config, fresh=not reopen)
            _refuse_if_superseded(stops)
            unfinished = unfinished_trials(location) if stops.received else None
            if unfinished is None:
                mark_search_over(location, config)  # a resume from here on reads the results back
                record_budget(budget, sweep.log_metrics, sweep.set_tags,
                              notifier.budget_spent if notifier is not None else None)
            if unfinished is None and finalize and stage is not None:
                confirmation = run_confirmation(results, config, location, sweep, stops, stage, echo,
                                                fresh=not reopen)
                if confirmation is not None and confirmation.results is not None:  # counted, never stopped
                    record_stage_compute(results, confirmation.results, sweep.log_metrics)
            _refuse_if_superseded(stops)
    except BaseException as exc:
        _refuse_if_superseded(stops, exc)  # the parent run and its trials' runs belong to the new holder
        if opened:
            close(_state_after(exc, location), f"{type(exc).__name__}: {exc}")
        raise
    _refuse_if_superseded(stops)
    if unfinished is not None:  # SIGINT/SIGTERM: Tune saved its state and returned
        close_interrupted_trials(sweep, unfinished)
        interrupted = SweepInterrupted(location.uri, stops.name, sweep.tracking_uri)
        close("interrupted", str(interrupted))
        raise interrupted
    wall = time.time() - started
    counts = outcome_counts(results)
    sweep.log_metrics({"sweep_wall_seconds": wall + _previous_wall(sweep)})
    outcome = SweepOutcome(sweep.sweep_name, location.uri, sweep.run_id, sweep.experiment_id,
                           sweep.tracking_uri, counts, wall, fit_started=started, results=results,
                           confirmation=confirmation)
    echo(f"sweep {sweep.sweep_name} done in {wall:.0f}s: "
         + ", ".join(f"{v} {k}" for k, v in counts.items()))
    if not counts.get("finished"):  # nothing to evaluate or register: the sweep did not do its job
        close("failed", "no trial finished: " + ", ".join(f"{v} {k}" for k, v in counts.items()), outcome)
        return outcome
    try:
        if finalize:
            from sentsweep.platform.report.finalize import finalize_sweep

            finalize_sweep(outcome, config, location, sweep, echo=echo)
        _refuse_if_superseded(stops)
    except BaseException as exc:
        _refuse_if_superseded(stops, exc)
        close(_state_after(exc, location), f"after the trials: {type(exc).__name__}: {exc}", outcome)
        raise
    close("finished", outcome=outcome)
    return outcome


def _refuse_if_superseded(stops: StopSignals, exc: BaseException | None = None) -> None:
    """Stop here, leaving the parent run as it is, when this driver lost the sweep's lock (:mod:`..folder.lock`);
    ``exc``: what ended the driver's work (a :class:`LockLost` from Tune's step passes on as it is)."""
    if isinstance(exc, LockLost):
        raise exc
    if stops.superseded is not None:
        raise LockLost(stops.superseded) from exc


def _state_after(exc: BaseException, location: SweepLocation) -> SweepState:
    """How a sweep that raised ``exc`` ends: a user's error cannot be resumed away (a storage that did not answer,
    :class:`StorageError`, is no user's error); a signal that skipped Tune's final save leaves the last periodic
    snapshot, if there is one, to resume from."""
    if isinstance(exc, StorageError):  # the storage did not answer: passing, not the user's error
        return "crashed"
    if isinstance(exc, SentsweepError):
        return "failed"
    if isinstance(exc, KeyboardInterrupt):
        saved = any(name.startswith("experiment_state") for name in location.list(".json"))
        return "interrupted" if saved else "failed"
    return "crashed"


def outcome_counts(results: ResultGrid) -> dict[str, int]:
    """Trials by outcome: finished (made their final report), pruned (stopped before it), failed."""
    counts = {"finished": 0, "pruned": 0, "failed": 0}
    for result in results:
        failed = result.error or is_failed(result.metrics)
        key = "failed" if failed else "finished" if is_final(result.metrics) else "pruned"
        counts[key] += 1
    return counts


def _previous_wall(sweep: SweepRun) -> float:
    """Driver seconds logged by earlier sessions of this sweep (before a resume)."""
    return sweep.previous_max("sweep_wall_seconds")
