"""``sentsweep sync SWEEP_DIR``: an idempotent reconcile of MLflow against the sweep folder, refused while a driver
holds the sweep's lock."""

from __future__ import annotations

import logging
import math
import posixpath
from dataclasses import dataclass

import pyarrow.fs
from mlflow import MlflowClient
from mlflow.entities import Run

from sentsweep.credentials import explain_refused_credentials
from sentsweep.errors import ConfigError
from sentsweep.platform.config import resolve_sweep_folder
from sentsweep.platform.confirm.stage import STATE_FILE, read_state, stage_location
from sentsweep.platform.driver.resume import SnapshotTrial, refuse_unreadable_state, snapshot_trials
from sentsweep.platform.folder.lock import SweepLock
from sentsweep.platform.folder.trust import refuse_foreign_parent, trusted_tracking_uri
from sentsweep.platform.location import MANIFEST, SweepLocation, SweepManifest, folder_command, locate
from sentsweep.platform.results import creation_numbers
from sentsweep.platform.search.scheduler import scheduler_label
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.platform.tracking.reachability import first_line, store_answers
from sentsweep.platform.tracking.trial_runs import Reconciled, TrialRuns, reconcile, trial_folders
from sentsweep.platform.tracking.trial_runs_callback import sweep_totals
from sentsweep.tracking import vocabulary as vocab
from sentsweep.tracking.names import CONFIRMATION_PREFIX, SEARCH_PREFIX, run_name, trial_label

log = logging.getLogger("sentsweep.tracking")
#: The reason on the confirmation stage's run that a sync ends with its abandoned sweep (as a stopped sweep's).
ABANDONED_STAGE = "the sweep stopped before its confirmation stage ended; a resume runs the stage"


def run_names(fs: pyarrow.fs.FileSystem, path: str, prefix: str) -> dict[str, tuple[str, int]]:
    """Trial id -> the name and number the driver gives its run, from the experiment snapshot."""
    trials = snapshot_trials(fs, path) or []
    values = {t.trial_id: t.evaluated_params for t in trials}
    return {trial_id: (run_name(trial_label(number, prefix), trial_id, values[trial_id]), number)
            for trial_id, number in creation_numbers(trials).items()}


def link_best_run(client: MlflowClient, experiment_id: str, parent_run_id: str, stage_runs: list[str]) -> None:
    """Tag the sweep run with its best trial's run, missing (MLflow was down) when the sweep's end named the trial."""
    tags = client.get_run(parent_run_id).data.tags
    if not (best := tags.get(vocab.BEST_TRIAL_TAG)) or vocab.BEST_RUN_TAG in tags:
        return
    for run_id in stage_runs:
        if (found := vocab.find_trial_run(client, experiment_id, run_id, best)) is not None:
            client.set_tag(parent_run_id, vocab.BEST_RUN_TAG, found.info.run_id)
            return


def refuse_foreign_stage_run(client: MlflowClient, manifest: SweepManifest, location: SweepLocation,
                             run_id: str) -> None:
    """A :class:`ConfigError` when the confirmation state's run is not the confirmation run of the manifest's sweep
    run: anyone who can write the folder can write the state, and sync writes to that run and its children."""
    run = vocab.run_or_none(client, run_id)
    tags = run.data.tags if run is not None else {}
    if run is None or (run.info.experiment_id, tags.get(vocab.PARENT_TAG), tags.get(vocab.ROLE_TAG)) != (
            manifest.experiment_id, manifest.parent_run_id, vocab.CONFIRMATION_ROLE):
        raise ConfigError(f"the confirmation state names run {run_id}, which is not this sweep's confirmation run "
                          f"(a child of {manifest.parent_run_id} tagged {vocab.ROLE_TAG}={vocab.CONFIRMATION_ROLE}); "
                          "nothing was done", file=location.file_uri(STATE_FILE))


def recorded_register_name(sweep_run: Run, manifest: SweepManifest) -> str | None:
    """The manifest's ``register_model`` when ``sweep_run`` recorded the same name as it opened (its params never
    change), else None: anyone who can write the folder can rewrite the manifest."""
    name = manifest.config.get("register_model")
    return name if isinstance(name, str) and name == sweep_run.data.params.get("register_model") else None


@dataclass
class Synced:
    """What a sync did, and what still waits (``waiting``: MLflow did not answer, or not to the end)."""

    uri: str
    trials: Reconciled
    writes: int = 0
    waiting: bool = False


def saved_trials(fs: pyarrow.fs.FileSystem, path: str) -> list[SnapshotTrial]:
    """The trials of the experiment folder ``path``: their status as Tune last saved it, their last report as their
    folder holds it (newer after a crash); a trial the snapshot missed counts as running."""
    lasts = {folder.trial_id: results[-1] for folder, results in trial_folders(fs, path)}
    saved = {t.trial_id: t for t in snapshot_trials(fs, path) or []}
    return [saved[i]._replace(last_result=lasts.get(i, saved[i].last_result)) if i in saved
            else SnapshotTrial(i, "RUNNING", lasts[i]) for i in dict.fromkeys([*saved, *lasts])]


def end_abandoned(run: SweepRun, resume: str) -> int:
    """End the sweep run ``run`` if its driver stopped without ending it (killed, or its machine lost): sync holds the
    lock, so no driver runs it. It ends ``interrupted``, as a signal leaves it, and stays resumable; so does its
    confirmation stage's run, scheduled as the sweep began. How many runs ended."""
    if run.client.get_run(run.run_id).info.status != "RUNNING":
        return 0
    run.apply({"op": "tags", "run": run.run_id, "tags": {vocab.STATUS_TAG: "interrupted"}})
    reason = f"its driver stopped without ending the sweep; continue with: {resume}"
    run.apply({"op": "status", "run": run.run_id, "status": "KILLED", "reason": reason})
    stages = vocab.tagged_runs(run.client, run.experiment_id,
                               {vocab.PARENT_TAG: run.run_id, vocab.ROLE_TAG: vocab.CONFIRMATION_ROLE})
    unended = [stage.info.run_id for stage in stages if stage.info.status in ("RUNNING", "SCHEDULED")]
    for stage_id in unended:
        run.apply({"op": "status", "run": stage_id, "status": "KILLED", "reason": ABANDONED_STAGE})
    return 1 + len(unended)


def sync_sweep(sweep_dir: str, endpoint_url: str | None = None, tracking_uri: str | None = None) -> Synced:
    """Reconcile MLflow with the sweep folder ``sweep_dir`` (see the module docstring)."""
    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    pruned_by = scheduler_label(manifest.sweep_config(location.file_uri(MANIFEST)))
    uri = trusted_tracking_uri(manifest, location, tracking_uri)
    if not store_answers(uri):
        return Synced(uri, Reconciled(), waiting=True)
    client = MlflowClient(tracking_uri=uri)
    stage_run = (read_state(location) or {}).get("run_id")
    with explain_refused_credentials(uri):  # a 401/403 is one line naming the variables
        sweep_run = refuse_foreign_parent(client, manifest, location)
        if stage_run:
            refuse_foreign_stage_run(client, manifest, location, str(stage_run))
        register = recorded_register_name(sweep_run, manifest)
    fs, root = location.resolve()
    done = Synced(uri, Reconciled())
    with SweepLock.for_folder(location, manifest.sweep_name):  # a live driver's: refused
        stages = [(root, manifest.parent_run_id)]
        refuse_unreadable_state(location)  # the folder's fault, never an MLflow outage
        if stage_run:
            stages.append((posixpath.join(root, stage_location(location).name), stage_run))
            refuse_unreadable_state(stage_location(location))
        try:  # the trials' runs of each stage (its folder path, its run id), then each run's saved writes
            for path, run_id in stages:
                runs = TrialRuns(client, manifest.experiment_id, run_id, manifest.sweep_name)
                search = run_id == manifest.parent_run_id
                names = run_names(fs, path, SEARCH_PREFIX if search else CONFIRMATION_PREFIX)
                reconcile(fs, path, runs, names=names, scheduler_label=pruned_by if search else None, done=done.trials)
            held = client.get_run(manifest.parent_run_id).data.metrics
            totals = sweep_totals(saved_trials(fs, root), float(manifest.config.get("resources", {}).get("gpu", 0.0)))
            if any(not math.isclose(held.get(k, math.nan), v) for k, v in totals.items()):
                # the totals the sweep's last end could not write (an outage), or a crashed end's, made none
                TrialRuns(client, manifest.experiment_id, manifest.parent_run_id).log_totals(totals)
            attached = [SweepRun.attach(uri, manifest.experiment_id, run_id, manifest.sweep_name, fs, path,
                                        runs={r for _, r in stages} - {run_id}, register=register)
                        for path, run_id in stages]
            for run in attached:
                done.writes += run.deliver()
                run.flush(0.0)  # nothing left: the saved file is removed
            sweep = attached[0]  # the first stage is the sweep's own run
            done.trials.ended += end_abandoned(sweep, folder_command("resume", location.uri, uri))
            link_best_run(client, manifest.experiment_id, manifest.parent_run_id, [r for _, r in stages])
        except Exception as exc:  # noqa: BLE001 - MLflow stopped answering: what is left waits for the next sync
            log.warning("MLflow stopped answering during the sync (%s)", first_line(exc))
            done.waiting = True
    return done
