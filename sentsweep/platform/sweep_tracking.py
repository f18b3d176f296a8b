"""MLflow on the driver: the sweep's parent run and the outcome of every trial's child run.

Workers log their own child runs (:mod:`sentsweep.tracking.vocabulary`); the driver knows what a
worker cannot always tell:

- a trial stopped by ASHA ends inside ``tune.report`` (its thread is told to exit), so
  :class:`TrackingCallback` marks its run KILLED with ``pruned by ASHA at iteration N``;
- a worker may die (OOM, node loss, a kill) before it can mark its run FAILED: the callback does it,
  with the error Tune recorded, and opens the run itself if the trial failed before opening it;
- at the end every run still RUNNING is closed, and the sweep totals (trials by outcome, wall and GPU
  seconds) go on the parent run.

A driver whose lock was lost (:mod:`~sentsweep.platform.sweep_lock`: another driver took the sweep over, or it could
not renew the lock) closes, deletes and totals nothing, not even in Tune's cleanup after
:class:`~sentsweep.platform.sweep_lock.LockLost`: the trials' runs and the parent are the new holder's.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import json
import logging
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow import MlflowClient
from mlflow.entities import Param
from mlflow.exceptions import MlflowException
from ray.tune import Callback

from sentsweep.code_version import git_commit
from sentsweep.platform.budget_stopper import STOPPED_REASON
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.drain import evaluation_result
from sentsweep.platform.failures import failure_reason, is_failed
from sentsweep.platform.interrupt import superseded
from sentsweep.platform.search import is_final
from sentsweep.platform.sweep_state import RUN_STATUS, STATUS_TAG, SweepState
from sentsweep.platform.tracking_journals import (
    PART_SUFFIX,
    DriverJournals,
    StoredJournals,
    driver_journal_dir,
    pending_uploads,
    replay_sweep_journals,
    stored_journals,
)
from sentsweep.platform.tracking_store import prepare_store
from sentsweep.tracking.journal import STAGED, Entry, metric_points, trial_journal_name
from sentsweep.tracking.provenance import experiment_tags, mark_training_experiment, source_tags
from sentsweep.tracking.replay import Outbox, now_ms
from sentsweep.tracking.run_creation import create_run_once
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.vocabulary import (
    METHOD_TAG,
    PARENT_TAG,
    REASON_TAG,
    ROLE_TAG,
    SPACE_TAG,
    SWEEP_DIR_TAG,
    SWEEP_TAG,
    TRIAL_ID_TAG,
    param_value,
)
from sentsweep.trainables.restore_note import RESTORE_REASON_KEY, RESTORED_FROM_KEY, restore_note

if TYPE_CHECKING:
    from ray.tune.experiment import Trial


log = logging.getLogger("sentsweep.tracking")

#: ``mlflow.source.name`` of a sweep's parent run.
SWEEP_SOURCE = "sentsweep sweep"
VERSIONED_PACKAGES = ("sentsweep", "torch", "transformers", "sentence-transformers", "ray", "optuna",
                      "mlflow", "numpy", "pydantic")


def git_sha(start: Path | None = None) -> str | None:
    """The commit of the checkout holding the ``sentsweep`` package (None outside a git checkout)."""
    return git_commit(start)


def package_versions(names: Iterable[str] = VERSIONED_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that decide a result."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"a.b": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def ensure_experiment(client: MlflowClient, name: str, artifact_location: str | None) -> str:
    """The id of experiment ``name``, created (with ``artifact_location``) when missing."""
    found = client.get_experiment_by_name(name)
    if found is not None:
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        mark_training_experiment(client, found.experiment_id)
        return found.experiment_id
    try:
        return client.create_experiment(name, artifact_location=artifact_location, tags=experiment_tags())
    except MlflowException:  # created meanwhile by another sweep
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return found.experiment_id


@dataclass
class SweepRun:
    """The parent run of a sweep, and the settings each trial's child run needs.

    Opening it needs MLflow; everything after (metrics, the final status) is journaled in the sweep folder
    and delivered when MLflow answers (:mod:`sentsweep.platform.tracking_journals`); the journals of a remote
    sweep folder are in the cache, copied into the sweep folder (``stored``).
    """

    client: MlflowClient
    tracking_uri: str
    experiment_id: str
    run_id: str
    sweep_name: str
    journal_dir: Path | None = None
    stored: StoredJournals | None = None
    #: the confirmation stage's run, scheduled as the sweep began (:func:`~.confirmation.schedule_stage_run`)
    stage_run_id: str | None = None
    _scope: SweepScope | None = field(default=None, init=False, repr=False)

    @classmethod
    def open(cls, config: SweepConfig, sweep_name: str, sweep_dir: str, define_by_run: Any,
             first_point: dict[str, Any] | None) -> SweepRun:
        """Create the parent run: config as params, git SHA, versions, seed, the search space."""
        prepare_store(config.tracking.uri)
        client = MlflowClient(tracking_uri=config.tracking.uri)
        experiment_id = ensure_experiment(client, config.tracking.experiment,
                                          config.tracking.artifact_location)
        tags = {ROLE_TAG: "sweep", SWEEP_TAG: sweep_name, SWEEP_DIR_TAG: sweep_dir, METHOD_TAG: config.method,
                SPACE_TAG: config.space_name, STATUS_TAG: "running", **source_tags(SWEEP_SOURCE)}
        run = create_run_once(client, experiment_id, tags, sweep_name)
        sweep = cls(client, config.tracking.uri, experiment_id, run.info.run_id, sweep_name,
                    driver_journal_dir(sweep_dir, sweep_name),
                    stored_journals(sweep_dir, endpoint_url=config.storage_endpoint_url))
        params = {**flatten(config.model_dump(mode="json")),
                  **{f"version.{k}": v for k, v in package_versions().items()}}
        client.log_batch(sweep.run_id, params=[Param(k, param_value(v)) for k, v in params.items()])
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "sweep.yaml").write_text(config.to_yaml())
            (folder / "first_point.json").write_text(json.dumps(first_point or {}, indent=2, default=str))
            with contextlib.suppress(OSError, TypeError):  # no source for a lambda typed at a prompt
                (folder / "search_space.py").write_text(inspect.getsource(define_by_run))
            client.log_artifacts(sweep.run_id, tmp, "sweep")
        return sweep

    @classmethod
    def attach(cls, tracking_uri: str, experiment_id: str, run_id: str, sweep_name: str,
               sweep_dir: str | None = None, filesystem: Any = None, fs_path: str | None = None) -> SweepRun:
        """An existing sweep's parent run, its status unchanged (``sentsweep resume``; see :meth:`reopen`),
        after delivering what the interrupted session could not (``filesystem`` and ``fs_path``: the pyarrow
        file system and path of a remote sweep folder, :func:`replay_sweep_journals`)."""
        sweep = cls(MlflowClient(tracking_uri=tracking_uri), tracking_uri, experiment_id, run_id, sweep_name,
                    driver_journal_dir(sweep_dir, sweep_name), stored_journals(sweep_dir, filesystem, fs_path))
        if sweep_dir:  # the journals' copies in a remote folder are pulled first
            replay_sweep_journals(sweep_dir, tracking_uri, sweep_name, sweep.scope(), filesystem, fs_path)
        return sweep

    def reopen(self) -> None:
        """Mark the parent run RUNNING again: called once ``Tuner.restore`` succeeded."""
        self._outbox().put({"op": "running", "reason": "resumed"}, {"op": "tags", "tags": {STATUS_TAG: "running"}})

    def scope(self) -> SweepScope:
        """The runs this run's journals may act on: this run and its hierarchy (:class:`SweepScope`; one per object,
        so that each run is looked up once)."""
        if self._scope is None:
            self._scope = SweepScope(self.experiment_id, self.run_id)
        return self._scope

    def _journals(self) -> DriverJournals:
        return DriverJournals(self.tracking_uri, self._journal_folder(), self.scope(), self.stored)

    def pull(self) -> None:
        """Pull the copies of this run's driver journals from a remote sweep folder (before appending to them)."""
        self._journals().pull()

    def _outbox(self) -> Outbox:
        return self._journals().parent(self.run_id)

    def trial_settings(self) -> dict[str, Any]:
        """The ``tracking`` section of every trial config (the trial id is filled in by the worker)."""
        return {"tracking_uri": self.tracking_uri, "experiment_id": self.experiment_id,
                "parent_run_id": self.run_id, "sweep_name": self.sweep_name, "trial_id": None}

    def set_tags(self, tags: dict[str, str]) -> bool:
        """Tags on the parent run (journaled); whether MLflow has them."""
        return self._outbox().put({"op": "tags", "tags": tags})

    def log_artifacts(self, local_dir: str | Path, artifact_path: str, *, move: bool = False) -> bool:
        """Upload a folder to the parent run's ``artifact_path`` through its journal; whether MLflow has it.

        The folder is staged in the journal folder first (moved when ``move``, else copied), so that an outage
        delays the upload (to the next delivery: ``sentsweep sync``, a resume) instead of losing it; the staged
        copy is removed once uploaded."""
        return self._outbox().put(self.staged(local_dir, artifact_path, move))

    def register_model(self, name: str, artifact_path: str) -> str | None:
        """Register the parent run's logged model at ``artifact_path`` as a version of ``name`` (journaled
        after its upload); the version, or None while MLflow does not answer."""
        outbox = self._outbox()
        done = outbox.put({"op": "register", "name": name, "path": artifact_path})
        return outbox.replayer.registered.get(name) if done else None

    def to_trial(self, trial_id: str, *entries: Entry, parent_run_id: str | None = None) -> bool:
        """Deliver ``entries`` (e.g. tags, :meth:`staged` artifacts) to ``trial_id``'s run under ``parent_run_id``
        (default: the sweep's run; the confirmation stage's run for one of its trials) through the driver's journal
        of that trial; whether MLflow has them."""
        journals = self._journals()
        find = {"op": "open", "experiment_id": self.experiment_id, "trial_id": trial_id,
                "parent_run_id": parent_run_id or self.run_id, "create": False}
        return journals.outbox(trial_journal_name(trial_id)).put(find, *entries)

    def staged(self, local_dir: str | Path, artifact_path: str, move: bool = False) -> Entry:
        """An ``artifacts`` entry for a copy of ``local_dir`` in the journal folder (removed once uploaded).

        The copy is made under a ``.part`` name and renamed once complete, so that a staged folder is never
        half-written; one that a failed copy left, or whose entry never reached a journal (a kill), is removed
        at the next replay of the sweep's journals (:func:`remove_orphan_staged`). ``move``: one rename on the same
        file system; across file systems a copy, the source removed only once the copy is complete (a move that
        fails midway never leaves both halves incomplete)."""
        staged = self._journal_folder() / STAGED / f"{artifact_path.replace('/', '_')}-{now_ms()}"
        part = staged.with_name(staged.name + PART_SUFFIX)
        staged.parent.mkdir(parents=True, exist_ok=True)
        renamed = False
        if move:
            with contextlib.suppress(OSError):  # another file system (EXDEV): copied below
                Path(local_dir).rename(part)
                renamed = True
        if not renamed:
            try:
                shutil.copytree(local_dir, part)
            except BaseException:
                shutil.rmtree(part, ignore_errors=True)  # the source is untouched
                raise
        part.rename(staged)
        if move and not renamed:
            shutil.rmtree(local_dir, ignore_errors=True)
        return {"op": "artifacts", "dir": str(staged), "path": artifact_path, "remove": True}

    def _journal_folder(self) -> Path:
        return self.journal_dir or driver_journal_dir(None, self.sweep_name)

    def pending_uploads(self) -> int:
        """Uploads of the driver's journals MLflow has not got yet (:func:`pending_uploads`)."""
        return pending_uploads(self._journal_folder())

    def log_metrics(self, metrics: dict[str, float], step: int = 0) -> None:
        self._outbox().put({"op": "metrics", "points": metric_points(metrics, step, now_ms())})

    def record(self, *entries: dict[str, Any]) -> bool:
        """Journal entries of any kind for the parent run (delivered now or when MLflow answers)."""
        return self._outbox().put(*entries)

    def close(self, state: SweepState, reason: str | None = None) -> bool:
        """End the parent run in ``state`` (:mod:`~sentsweep.platform.sweep_state`: its tag and MLflow status);
        whether MLflow has it (else it is journaled and delivered later)."""
        return self._outbox().put({"op": "tags", "tags": {STATUS_TAG: state}},
                                  {"op": "finish", "status": RUN_STATUS[state],
                                   "reason": reason[:5000] if reason else None})

    def previous_max(self, key: str) -> float:
        """The largest value of metric ``key`` logged by earlier sessions of this sweep (0 when MLflow does
        not answer)."""
        try:
            return max((m.value for m in self.client.get_metric_history(self.run_id, key)), default=0.0)
        except Exception:  # best-effort: tracking may be down
            return 0.0


def trial_outcome(trial: Trial) -> str:
    """``finished``, ``pruned``, ``failed``, ``running`` or ``pending`` from Tune's view of a trial."""
    if trial.status == "ERROR" or is_failed(trial.last_result):
        return "failed"
    if is_final(trial.last_result):
        return "finished"
    if trial.status == "TERMINATED":
        return "pruned"
    return "running" if trial.status == "RUNNING" else "pending"


def last_error_line(trial: Trial) -> str:
    """The last line of the error Tune recorded for a trial (the exception type and message)."""
    path = trial.error_file
    try:
        text = Path(path).read_text(errors="replace") if path else ""
    except OSError:
        text = ""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Failure #")]
    errors = [line for line in lines if ("Error" in line or "Exception" in line) and ":" in line]
    return (errors or lines or ["the trial failed (no error recorded)"])[-1][:5000]


class TrackingCallback(Callback):
    """Driver-side: closes the child runs workers cannot close, and totals the sweep on the parent.

    Nothing here fails the sweep because MLflow is down: every action is journaled
    (:class:`~sentsweep.platform.tracking_journals.DriverJournals`) after the history the trial's worker
    journaled, and delivered when MLflow answers: at each trial's end, at the end of the sweep, and at the
    first step of a resumed sweep.
    """

    def __init__(self, settings: dict[str, Any], scheduler_label: str, gpu_per_trial: float) -> None:
        self.settings = settings
        self.scheduler_label = scheduler_label
        self.gpu_per_trial = gpu_per_trial
        self._journals: DriverJournals | None = None
        self._started = time.time()

    def __getstate__(self) -> dict[str, Any]:  # Tune pickles callbacks into tuner.pkl
        state = self.__dict__.copy()
        state["_journals"] = None
        return state

    def journals(self, trial: Trial) -> DriverJournals:
        if self._journals is None:
            self._journals = DriverJournals.of_trial(trial, self.settings)
        return self._journals

    def _close(self, trial: Trial, status: str, reason: str | None, *, if_running: bool = False,
               overwrite_reason: bool = True, create: bool = True) -> None:
        if superseded() is not None:  # the run is the new holder's (it may be running the trial again)
            return
        entry = {"op": "finish", "status": status, "reason": reason, "if_running": if_running,
                 "overwrite_reason": overwrite_reason}
        self.journals(trial).record_trial(trial, self.settings, entry, create=create)

    # -- Tune hooks ----------------------------------------------------------------------------
    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        """Once per driver session, at its first step with trials: deliver what earlier sessions left."""
        if self._journals is None and trials:
            journals = self.journals(trials[0])
            journals.replay(journals.worker(t) for t in trials)

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        """A trial resumed elsewhere than the checkpoint Tune named: its run is tagged where and why."""
        note = restore_note(result)
        if note is not None and superseded() is None:
            tags = {RESTORED_FROM_KEY: note[0], RESTORE_REASON_KEY: note[1]}
            self.journals(trial).record_trial(trial, self.settings, {"op": "tags", "tags": tags})

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        result = trial.last_result or {}
        if is_final(result):
            self._close(trial, "FINISHED", None, if_running=True)
        elif is_failed(result):  # deterministic: the worker closed it FAILED; a run it never opened is closed here
            self._close(trial, "FAILED", failure_reason(result), overwrite_reason=False)
        elif result.get("training_iteration"):
            self._close(trial, "KILLED", f"pruned by {self.scheduler_label} at iteration "
                        f"{evaluation_result(result)['training_iteration']} (step {int(result.get('step', 0))})")
        else:
            self._close(trial, "KILLED", "stopped before it started")

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._close(trial, "FAILED", last_error_line(trial), overwrite_reason=False)

    def on_experiment_end(self, trials: list[Trial], **info: Any) -> None:
        lost = superseded()
        if lost is not None:  # Tune's cleanup after LockLost: this driver's view of the trials is stale
            log.warning("the sweep's runs are left as they are (no orphan removal, no trial closed, no totals): %s",
                        lost)
            return
        if not trials:
            return
        with contextlib.suppress(Exception):  # best-effort: tracking may be down
            self._remove_orphans({t.trial_id for t in trials})
        for trial in trials:
            outcome = trial_outcome(trial)
            if outcome == "finished":
                status, reason = "FINISHED", None
            elif outcome == "failed":
                result = trial.last_result or {}
                status, reason = "FAILED", failure_reason(result) if is_failed(result) else last_error_line(trial)
            elif trial.status == "TERMINATED":
                status, reason = "KILLED", STOPPED_REASON  # a stopper: budget or time_budget_s
            else:
                status, reason = "KILLED", "interrupted with the sweep (resume continues it)"
            # a stopper's stop_all ends a trial with no `done` in its last result (a scheduler's stop sets it): its
            # run, which the worker closed as stopped by Ray Tune, says why
            stopped = reason == STOPPED_REASON and not (trial.last_result or {}).get("done")
            self._close(trial, status, reason, if_running=not stopped, overwrite_reason=outcome != "failed",
                        create=trial.status != "PENDING")
        totals = sweep_totals(trials, self.gpu_per_trial)
        journals = self.journals(trials[0])
        journals.parent(self.settings["parent_run_id"]).put(
            {"op": "metrics", "points": metric_points(totals, 0, now_ms())})
        # the copies later attempts set aside too (a worker lost with its node): the last replay of this experiment
        replayed = journals.replay([*(journals.worker(t) for t in trials), *journals.set_aside(trials[0])])
        if replayed.pending > replayed.parked:
            log.warning("MLflow has not answered: %d tracking entries wait in %s (resume, or the next sweep "
                        "command on this folder, delivers them)", replayed.pending - replayed.parked, journals.folder)
        if replayed.parked:
            log.warning("%d tracking entries wait behind a trial's run MLflow refuses for good (`sentsweep sync "
                        "--give-up-refused` sets them aside)", replayed.parked)

    def _remove_orphans(self, trial_ids: set[str]) -> None:
        """Delete child runs of trials the sweep no longer has.

        A trial created after Tune's last experiment snapshot is lost when the driver dies; the restored
        searcher proposes a new trial (new id) instead. Its run would be a duplicate left RUNNING, so it
        is closed, deleted (MLflow keeps deleted runs restorable), and named on the parent run. Never once the
        lock is lost: the new holder's trials are unknown to this driver.
        """
        if superseded() is not None:
            return
        client = MlflowClient(tracking_uri=self.settings["tracking_uri"])
        query = f"tags.`{PARENT_TAG}` = '{self.settings['parent_run_id']}' and tags.`{ROLE_TAG}` = 'trial'"
        runs = client.search_runs([self.settings["experiment_id"]], filter_string=query, max_results=10_000)
        orphans = [r for r in runs if r.data.tags.get(TRIAL_ID_TAG) not in trial_ids]
        for run in orphans:
            client.set_tag(run.info.run_id, REASON_TAG, "lost with the driver before Tune saved its trial; "
                           "rerun as a new trial")
            if run.info.status != "KILLED":
                client.set_terminated(run.info.run_id, status="KILLED")
            client.delete_run(run.info.run_id)
        if orphans:
            client.set_tag(self.settings["parent_run_id"], "sentsweep.deleted_orphan_runs",
                           ",".join(r.info.run_id for r in orphans))


def sweep_totals(trials: list[Trial], gpu_per_trial: float) -> dict[str, float]:
    """Trials by outcome, and the wall and GPU seconds the trials used."""
    counts = Counter(trial_outcome(t) for t in trials)
    trial_seconds = sum(float((t.last_result or {}).get("time_total_s", 0.0)) for t in trials)
    totals = {f"trials_{k}": float(counts.get(k, 0)) for k in ("finished", "pruned", "failed", "running",
                                                                "pending")}
    totals.update({"trials_total": float(len(trials)), "trial_seconds": trial_seconds,
                   "gpu_seconds": trial_seconds * gpu_per_trial})
    return totals
