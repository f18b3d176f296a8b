"""Run a sweep (:func:`run_sweep`) or continue one from its folder (:func:`resume_sweep`): Ray Tune's ``Tuner`` with
Optuna and ASHA, the confirmation stage, then finalize (docs/architecture.md)."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from optuna.trial import FrozenTrial
from ray.tune import Tuner

from sentsweep.credentials import explain_refused_credentials
from sentsweep.errors import ConfigError, SentsweepError, StorageError
from sentsweep.platform.config import SweepConfig, parse_sweep_config, resolve_sweep_folder
from sentsweep.platform.confirm.stage import read_state
from sentsweep.platform.driver import interrupt, resume, specs
from sentsweep.platform.driver.budget import BudgetStopper, SweepBudget, driving, record_budget, record_stage_compute
from sentsweep.platform.driver.callbacks import ShedUploadedTrialFiles, stage_callbacks
from sentsweep.platform.driver.confirmation import end_stage_run, run_confirmation, schedule_stage_run
from sentsweep.platform.driver.preflight import check_sweep
from sentsweep.platform.driver.ray_session import ray_session, refuse_unanswered_ray
from sentsweep.platform.driver.trainable import build_tuner, tune_trainable
from sentsweep.platform.folder.lock import SweepLock
from sentsweep.platform.folder.trust import refuse_foreign_parent, refuse_untrusted_state, trusted_tracking_uri
from sentsweep.platform.location import (
    MANIFEST,
    SweepLocation,
    SweepManifest,
    folder_command,
    locate,
    new_sweep_location,
)
from sentsweep.platform.outcome import SweepOutcome
from sentsweep.platform.report.notify import SweepNotifier
from sentsweep.platform.results import counts_text, outcome_counts
from sentsweep.platform.search.convergence import record_convergence
from sentsweep.platform.search.scheduler import build_scheduler, scheduler_label
from sentsweep.platform.search.searcher import build_searcher, mark_search_over, search_results
from sentsweep.platform.search.study_store import StudyStore, load_study
from sentsweep.platform.search.warm_start import load_history, measured_data
from sentsweep.platform.tracking.parent_run import SweepRun, run_page
from sentsweep.platform.tracking.run_writes import failing_quickly
from sentsweep.platform.tracking.store import open_client, refuse_sqlite_on_cluster
from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback
from sentsweep.tracking.vocabulary import SweepState
from sentsweep.yaml_io import apply_overrides

if TYPE_CHECKING:
    from sentsweep.trainables.registry import TrainableSpec


@failing_quickly
def run_sweep(config: SweepConfig, *, source: str | None = None, trainable: TrainableSpec | None = None,
              space: specs.SearchSpaceLike | None = None, address: str | None = None, finalize: bool = True,
              log_to_driver: bool = False, echo: Callable[[str], None] = print, preflight: bool = True,
              forward_credentials: bool = False) -> SweepOutcome:
    """Run a sweep to its end; ``source`` (the YAML path) is named in config errors. ``trainable`` and ``space``
    default to the registries' entries; ``address`` names a Ray cluster (default: the running or a new local Ray).
    SIGINT or SIGTERM raise :class:`SweepInterrupted` once Tune saved its state."""
    config = config.resolved(source=source)
    worker_env = config.worker_credentials(address, forward_credentials)
    trainable, space = specs.resolve_specs(config, source, trainable, space)
    trials = specs.validate_trials(config, trainable, space, source)
    refuse_sqlite_on_cluster(config.tracking.uri, address)
    refuse_unanswered_ray(address)
    if preflight:
        check_sweep(config, trials, source)
    history = load_history(config.warm_start, space.define_by_run, config.storage_endpoint_url, config, source) \
        if config.warm_start else []
    location = new_sweep_location(config, suffix=secrets.token_hex(2))
    sweep_name = location.name
    stops = interrupt.StopSignals()
    with interrupt.graceful_stops(stops), explain_refused_credentials(config.tracking.uri):
        # a storage no lock can live on is refused before anything is written
        lock = SweepLock.for_folder(location, sweep_name, on_lost=stops.supersede)
        sweep = SweepRun.open(config, sweep_name, location.uri, space.define_by_run, space.first_point)
        notifier = SweepNotifier.for_sweep(config, sweep_name, sweep.run_id, location.uri, echo)
        try:  # the lock released however the sweep ends: its heartbeat would hold it as long as this process lives
            try:
                lock.acquire()  # a new run: nobody else knows it yet
                location.write_manifest(SweepManifest(
                    sweep_name=sweep_name, config=config.model_dump(mode="json"), parent_run_id=sweep.run_id,
                    experiment_id=sweep.experiment_id, tracking_uri=sweep.tracking_uri, created=time.time(),
                    data_sha256=measured_data(config)), config)
                if finalize:  # after the manifest: the sweep is resumable whatever MLflow answers here
                    schedule_stage_run(sweep, config)
            except BaseException as exc:
                sweep.close("crashed", f"{type(exc).__name__}: {exc}")
                sweep.flush()
                notifier.sweep_ended("crashed", f"{type(exc).__name__}: {exc}")
                raise
            echo(f"sweep {sweep_name}: {config.trials_text} trials of {config.method} over '{space.name}' "
                 f"({config.scheduler.type}); folder {location.uri}; MLflow run {sweep.run_id}{run_page(sweep)}"
                 + (f"; warm start: {len(history)} trials of {config.warm_start}" if config.warm_start else ""))
            return _drive(lambda: new_tuner(config, trainable, space, location, sweep, history), config, location,
                          sweep, stops, notifier, trainable, space, address=address, worker_env=worker_env,
                          log_to_driver=log_to_driver, finalize=finalize, echo=echo)
        finally:
            lock.release()


@failing_quickly
def resume_sweep(sweep_dir: str, *, endpoint_url: str | None = None, config: SweepConfig | None = None,
                 overrides: Sequence[str] = (), allow_change: Collection[str] = (),
                 trainable: TrainableSpec | None = None, space: specs.SearchSpaceLike | None = None,
                 address: str | None = None, finalize: bool = True, log_to_driver: bool = False,
                 echo: Callable[[str], None] = print, preflight: bool = True,
                 forward_credentials: bool = False, tracking_uri: str | None = None,
                 trust_storage: bool = False, found_interrupted: bool = False) -> SweepOutcome:
    """Continue an interrupted sweep from its folder with the config it was started with: a ``config`` or
    ``overrides`` (``KEY=VALUE``) that differ are refused, but for the ``allow_change`` fields (:mod:`.resume`). A
    live lock of another process refuses it; the manifest's tracking server and a shared folder's Tune state are
    trusted as :mod:`..folder.trust` allows. ``found_interrupted``: ``--resume-interrupted`` found the folder, and
    the line said once the lock is held names it the interrupted sweep."""
    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    stored = manifest.sweep_config(location.file_uri(MANIFEST))
    given = config.resolved() if config is not None else None
    if config is None and overrides:
        given = parse_sweep_config(apply_overrides(stored.model_dump(mode="json"), list(overrides)), location.uri)
        given.refuse_stray_credentials(location.uri)  # not resolved(): the stored config already is
    # the server the user names: the flag, or the YAML of --resume-interrupted (nothing is contacted here)
    uri = trusted_tracking_uri(manifest, location, tracking_uri or (given.tracking.uri if config is not None else None))
    config = resume.resume_config(stored, given, allow_change, location.uri)
    resume.refuse_fewer_samples(location, stored, config)
    # the credentials a given config's URIs carried (the stored one holds none): --resume-interrupted's YAML
    worker_env = (given if given is not None else config).worker_credentials(address, forward_credentials)
    trainable, space = specs.resolve_specs(config, location.uri, trainable, space)
    trials = specs.validate_trials(config, trainable, space, location.uri)
    refuse_sqlite_on_cluster(uri, address)
    refuse_unanswered_ray(address)
    client = open_client(uri)  # contacted once everything local checked out; acted on once the run is the folder's
    with explain_refused_credentials(uri):
        refuse_foreign_parent(client, manifest, location)
    refuse_untrusted_state(location, trust_storage)  # before anything of Tune's state is unpickled
    stops = interrupt.StopSignals()
    # the lock before anything is written to MLflow: a driver still running the sweep writes its runs itself
    lock = SweepLock.for_folder(location, manifest.sweep_name, on_lost=stops.supersede)
    with interrupt.graceful_stops(stops), explain_refused_credentials(uri), lock:
        resume.refuse_unreadable_state(location)  # under the lock: a running driver's snapshot may be half-uploaded
        sweep = SweepRun.attach(uri, manifest.experiment_id, manifest.parent_run_id, manifest.sweep_name,
                                *location.resolve(), register=manifest.config.get("register_model"))
        if preflight:
            check_sweep(config, trials, location.uri)
        if finalize:
            schedule_stage_run(sweep, config)
        what = "continuing the interrupted sweep" if found_interrupted else "resuming sweep"
        echo(f"{what} {manifest.sweep_name} from {location.uri} (MLflow run {sweep.run_id}{run_page(sweep)})")
        notifier = SweepNotifier.for_sweep(config, manifest.sweep_name, sweep.run_id, location.uri, echo)

        def restore() -> Tuner:
            try:
                tuner = Tuner.restore(location.tune_path, tune_trainable(trainable, config), resume_errored=True,
                                      storage_filesystem=location.filesystem,
                                      param_space=specs.trial_param_space(config))
            except (ImportError, AttributeError) as exc:
                raise other_version_error(exc, location.uri) or exc from None
            resume.apply_resume_config(tuner, location, manifest, config, sweep)
            return tuner

        return _drive(restore, config, location, sweep, stops, notifier, trainable, space, address=address,
                      worker_env=worker_env, log_to_driver=log_to_driver, finalize=finalize, echo=echo, reopen=True)


def other_version_error(exc: BaseException, uri: str) -> ConfigError | None:
    """The line for a ``tuner.pkl`` naming sentsweep code this version moved or removed; None for another error."""
    return ConfigError(f"the sweep's saved Tune state was written by another version of sentsweep ({exc}); resume it "
                       "with the version that started it", file=uri) if "sentsweep" in str(exc) else None


def new_tuner(config: SweepConfig, trainable: TrainableSpec, space: specs.SearchSpaceLike,
              location: SweepLocation, sweep: SweepRun, history: Sequence[FrozenTrial] = ()) -> Tuner:
    """The Tuner of a new sweep; ``history``: an earlier sweep's trials to start from."""
    searcher = build_searcher(config, space.define_by_run, specs.space_points(space), history=history,
                              store=StudyStore(location.uri, location.endpoint_url), study_name=location.name)
    budget = BudgetStopper(sweep.sweep_name)  # the stopper and a callback
    callbacks = [TrialRunsCallback(sweep.trial_settings(), scheduler_label(config), config.resources.gpu,
                                   reference=specs.reference_setting(config, space),
                                   reference_setting=config.reference.setting if config.reference else None),
                 budget, ShedUploadedTrialFiles(), *stage_callbacks(config, config.num_samples)]
    return build_tuner(trainable, config, location, specs.trial_param_space(config), callbacks, stop=budget,
                       search_alg=searcher, scheduler=build_scheduler(config, specs.unstopped_point(config, space)),
                       num_samples=config.num_samples, max_concurrent_trials=config.max_concurrent_trials,
                       time_budget_s=config.time_budget_s)


def _drive(make_tuner: Callable[[], Tuner], config: SweepConfig, location: SweepLocation, sweep: SweepRun,
           stops: interrupt.StopSignals, notifier: SweepNotifier, trainable: TrainableSpec,
           space: specs.SearchSpaceLike, *, address: str | None, worker_env: Mapping[str, str], log_to_driver: bool,
           finalize: bool, echo: Callable[[str], None], reopen: bool = False) -> SweepOutcome:
    """The Tuner and the confirmation stage in a Ray session; the parent run closed as the sweep ended, notified."""

    def close(state: SweepState, reason: str | None = None, outcome: SweepOutcome | None = None) -> None:
        sweep.close(state, reason)
        if state == "failed":  # for good: the confirmation stage will not run (or not again)
            end_stage_run(sweep, config, location, f"the sweep failed: {reason}")
        elif state == "finished" and confirmation is None:  # a stage that did not run never will
            why = (f"the confirmation stage did not run: no finished trial reported {config.metric}" if finalize
                   else "the sweep was finished without its final stages (--no-finalize)")
            end_stage_run(sweep, config, location, why)
        elif state == "interrupted" and sweep.stage_run_id is not None:  # no lookup: a stop waits for nothing
            end_stage_run(sweep, config, location, "the sweep stopped before its confirmation stage ended; a resume "
                          "runs the stage")
        if not sweep.flush():  # what MLflow has not taken is saved in the sweep folder
            echo("MLflow has not taken all of the sweep's run yet; it waits in the sweep folder, and "
                 f"{folder_command('sync', location.uri, sweep.tracking_uri)} delivers it once MLflow answers")
        notifier.sweep_ended(state, reason, outcome)

    # Frequent experiment snapshots are what we want (resume fidelity); Tune warns about them.
    logging.getLogger("ray.tune.execution.experiment_state").setLevel(logging.ERROR)
    interrupt.hide_tunes_stop_lines()
    started = time.time()
    opened = not reopen  # a resumed parent is touched only once its Tuner is restored
    confirmation = None
    try:
        with ray_session(address, log_to_driver=log_to_driver, env=worker_env, hide=config.notify.secret_env), \
                interrupt.graceful_stops(stops), \
                stops.draining(interrupt.Drain(*location.resolve(), config.stop_grace_s)), \
                driving(sweep.sweep_name, SweepBudget(config.budget, echo=echo)) as budget:
            tuner = make_tuner()
            if reopen:
                sweep.reopen()
                opened = True
            results = search_results(tuner, location, config, fresh=not reopen,
                                     stage_began=reopen and read_state(location) is not None)
            stops.refuse_if_superseded()
            unfinished = interrupt.unfinished_trials(location) if stops.received else None
            if unfinished is None:
                mark_search_over(location, config)  # a resume from here on reads the results back
                record_budget(budget, sweep.log_metrics, sweep.set_tags, notifier.budget_spent)
                if config.stop_when == "converged" and not budget.spent:
                    record_convergence(load_study(location), sweep.set_tags, sweep.log_metrics, echo)
                if finalize:
                    confirmation = run_confirmation(results, config, location, sweep, stops, trainable, echo,
                                                    fresh=not reopen)
                if confirmation is not None and confirmation.results is not None:  # counted, never stopped
                    record_stage_compute(results, confirmation.results, sweep.log_metrics)
    except BaseException as exc:
        stops.refuse_if_superseded(exc)  # the parent run and its trials' runs belong to the new holder
        if opened:
            close(_state_after(exc, location), f"{type(exc).__name__}: {exc}")
        raise
    stops.refuse_if_superseded()
    # this session's seconds on top of earlier sessions', a stopped one's too: the total a resume ends with
    wall = time.time() - started
    sweep.log_metrics({"sweep_wall_seconds": wall + sweep.previous_max("sweep_wall_seconds")})
    if unfinished is not None:  # SIGINT/SIGTERM: Tune saved its state and returned
        interrupt.close_interrupted_trials(sweep, unfinished)
        interrupted = interrupt.SweepInterrupted(location.uri, stops.name, sweep.tracking_uri)
        close("interrupted", str(interrupted))
        raise interrupted
    counts = outcome_counts(results)
    outcome = SweepOutcome(sweep.sweep_name, location.uri, sweep.run_id, sweep.experiment_id,
                           sweep.tracking_uri, counts, wall, fit_started=started, results=results,
                           confirmation=confirmation, reference_point=specs.reference_setting(config, space))
    described = counts_text(counts)
    echo(f"sweep {sweep.sweep_name} done in {wall:.0f}s: {described}")
    if not counts.get("finished"):  # nothing to evaluate or register: the sweep did not do its job
        close("failed", "no trial finished: " + described, outcome)
        return outcome
    try:
        if finalize:
            from sentsweep.platform.driver.finalize import finalize_sweep

            finalize_sweep(outcome, config, location, sweep, stops, echo)
        stops.refuse_if_superseded()
    except BaseException as exc:
        stops.refuse_if_superseded(exc)
        close(_state_after(exc, location), f"after the trials: {type(exc).__name__}: {exc}", outcome)
        raise
    close("finished", outcome=outcome)
    return outcome


def _state_after(exc: BaseException, location: SweepLocation) -> SweepState:
    """How a sweep that raised ``exc`` ends: a user's error cannot be resumed away (a storage that did not answer is
    no user's error); a signal that skipped Tune's final save leaves the last periodic snapshot, if any, to resume."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted" if resume.snapshot_names(*location.resolve()) else "failed"
    return "failed" if isinstance(exc, SentsweepError) and not isinstance(exc, StorageError) else "crashed"
