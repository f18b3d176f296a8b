"""The MLflow child run of one trial, logged from the trial's worker.

A trial's run is a child of the sweep's parent run (tag ``mlflow.parentRunId``) and carries the tag
``sentsweep.trial_id``. When Tune restores a trial (driver restart, worker failure), the new attempt
*reattaches* to the run found by that tag instead of opening another one, so a sweep has exactly one
run per trial and none is left RUNNING once its trial is over.

Tracking never fails a trial: calls are journaled and delivered when MLflow answers
(:mod:`sentsweep.tracking.journal`, :mod:`sentsweep.tracking.replay`).

Only :class:`mlflow.MlflowClient` is used (never the fluent ``mlflow.start_run`` stack), so trials that
share a reused Ray actor cannot leak an active run into one another. The driver side (statuses of
pruned and crashed trials, sweep totals) lives in :mod:`sentsweep.platform.sweep_tracking`.
"""

from __future__ import annotations

import math
import threading
import uuid
from pathlib import Path
from typing import Any, Protocol

from mlflow import MlflowClient

from sentsweep.tracking.journal import TRIAL_JOURNAL, Entry, Journal, metric_points
from sentsweep.tracking.journal_mirror import JournalMirror, storage_mirror
from sentsweep.tracking.placement import placement_tags
from sentsweep.tracking.replay import Outbox, Replayer, now_ms
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.system_metrics import SystemMetricsSampler, start_system_metrics, stop_system_metrics
from sentsweep.tracking.vocabulary import (
    MAX_PARAM_LENGTH,
    Status,
    TrackingSettings,
    child_run_tags,
    numeric_metrics,
    param_value,
    ray_trial_id,
)


class TrialLogger(Protocol):
    """Receives a trial's life: params, metrics, artifacts, final status."""

    def start(self, params: dict[str, Any]) -> None: ...

    def log_metrics(self, metrics: dict[str, float], step: int) -> None: ...

    def log_artifacts(self, local_dir: Path, artifact_path: str | None = None) -> None: ...

    def finish(
        self, status: Status, reason: str | None = None, totals: dict[str, float] | None = None
    ) -> None: ...


class NullLogger:
    """Logs nothing (standalone runs without tracking)."""

    def start(self, params: dict[str, Any]) -> None:
        return None

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        return None

    def log_artifacts(self, local_dir: Path, artifact_path: str | None = None) -> None:
        return None

    def finish(
        self, status: Status, reason: str | None = None, totals: dict[str, float] | None = None
    ) -> None:
        return None


def make_trial_logger(tracking: TrackingSettings | None) -> TrialLogger:
    """The MLflow child-run logger when a trial is tracked, else :class:`NullLogger`."""
    return NullLogger() if tracking is None else MlflowTrialLogger(tracking)


class MlflowTrialLogger:
    """Opens (or reattaches to) a trial's child run; logs params, metrics, artifacts and the outcome.

    Tracking is best-effort: every call goes to the trial's journal first (``journal_path``, default
    :func:`trial_journal_path`; in memory outside Tune) and is delivered from there, in order, when MLflow
    answers (each later call flushes what is pending). A trial never fails because tracking is down; what
    its worker could not deliver, the driver replays (:mod:`sentsweep.platform.sweep_tracking`): from the
    journal itself when the sweep folder is on a shared local file system, else from its copy in the trial's
    storage folder (``mirror``, default :func:`trial_journal_mirror`; :mod:`sentsweep.tracking.journal_mirror`).
    """

    def __init__(self, tracking: TrackingSettings, journal_path: Path | None = None,
                 mirror: JournalMirror | None = None) -> None:
        self.tracking = tracking
        self.client = MlflowClient(tracking_uri=tracking.tracking_uri)
        self.trial_id = tracking.trial_id or ray_trial_id()
        if journal_path is None:
            journal_path, mirror = trial_journal_path(), mirror or trial_journal_mirror()
        self.journal = Journal(journal_path)
        self.mirror = mirror
        scope = SweepScope(tracking.experiment_id, tracking.parent_run_id)  # the runs its journal may name
        self.outbox = Outbox(self.journal, Replayer(self.client, scope), tracking.tracking_uri)
        self.token = uuid.uuid4().hex
        self.last_step = 0
        self._monitor: SystemMetricsSampler | None = None  # system metrics (tracking.system_metrics)
        self._lock = threading.Lock()

    @property
    def run_id(self) -> str | None:
        """The child run, once the journal's ``open`` entry was delivered."""
        return self.outbox.run_id

    @property
    def reattached(self) -> bool:
        return self.run_id is not None and self.run_id in self.outbox.replayer.reattached

    def pending(self) -> int:
        """Journal entries not delivered yet."""
        return self.journal.pending()

    def record(self, *entries: Entry) -> None:
        """Journal and deliver ``entries`` (the trial's thread: reports, tags, datasets, protocols)."""
        self._put(*entries)

    def _put(self, *entries: Entry, push: bool = True) -> None:
        """Journal and deliver ``entries``; copy the journal to the storage while entries are pending (``push``).
        One caller at a time: the trial's thread and the system-metrics sampler's."""
        with self._lock:
            if self.mirror is not None and self.mirror.dirty:  # the driver may have delivered from the copy
                self.outbox.replayer.forget(self.run_id)
            self.outbox.put(*entries)
            # a sample copies the journal only to end a dirty period once all is delivered: otherwise every sample
            # would forget what the run holds and fetch its histories again until the next report
            if self.mirror is not None and (push or (self.mirror.dirty and self.journal.pending() == 0)):
                self.mirror.push(self.journal)

    # -- the TrialLogger protocol ------------------------------------------------------------
    def start(self, params: dict[str, Any]) -> None:
        """Open the child run, or reattach to this trial's existing one; log the params not yet there."""
        placement = placement_tags()  # where this attempt runs (node, Ray's GPU ids); {} outside Ray
        self._put(
            {"op": "open", "experiment_id": self.tracking.experiment_id, "run_name": self.trial_id,
             "parent_run_id": self.tracking.parent_run_id, "trial_id": self.trial_id, "token": self.token,
             "tags": child_run_tags(self.tracking, self.trial_id)},
            # MLflow params are immutable: a reattached attempt logs only the params the run lacks.
            {"op": "params", "params": {k: param_value(v) for k, v in params.items()}},
            *([{"op": "tags", "tags": placement}] if placement else []))
        if self.tracking.system_metrics and self._monitor is None:  # journaled: in an outage too
            self._monitor = start_system_metrics(self._log_system_metrics, self.tracking.system_metrics_interval_s)

    def _log_system_metrics(self, figures: dict[str, float]) -> None:
        """A sample of the machine (:mod:`sentsweep.tracking.system_metrics`, from its thread), at the current step.
        It does not copy the journal to the storage: in an outage that copied the whole journal at every sample
        (SRE review 20, H1); the trial's next report or its end copies it, samples included."""
        self._put({"op": "metrics", "points": metric_points(figures, self.last_step, now_ms())}, push=False)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Every numeric entry of a report, at ``step``."""
        self.last_step = max(self.last_step, step)
        points = metric_points(numeric_metrics(metrics), step, now_ms())
        if points:
            self._put({"op": "metrics", "points": points})

    def log_artifacts(self, local_dir: Path, artifact_path: str | None = None) -> None:
        """Upload a folder (best weights, history, evaluation tables) to the run's artifacts."""
        self._put({"op": "artifacts", "dir": str(Path(local_dir).resolve()), "path": artifact_path})

    def finish(self, status: Status, reason: str | None = None,
               totals: dict[str, float] | None = None) -> None:
        """Record the outcome, unless the driver already did (a trial stopped by the scheduler).

        When Tune stops a trial (ASHA pruning, the end of a time budget) its thread ends in a
        ``SystemExit`` raised inside ``tune.report``; by then the driver has marked the run KILLED with
        the real reason, which this keeps. Wall and GPU seconds are logged either way.
        """
        stop_system_metrics(self._monitor)
        self._monitor = None
        finite = {k: float(v) for k, v in (totals or {}).items() if math.isfinite(float(v))}
        entries: list[dict[str, Any]] = []
        if finite:
            entries.append({"op": "metrics", "points": metric_points(finite, self.last_step, now_ms())})
        text = _reason_text(status, reason) if reason or status != "FINISHED" else None
        entries.append({"op": "finish", "status": status, "reason": text, "if_running": True})
        self._put(*entries)


def _session_storage() -> Any:
    """Where the current Tune trial's folders are (:func:`sentsweep._compat.ray.trial_storage`); None outside one."""
    try:
        from sentsweep._compat.ray import trial_storage

        return trial_storage()
    except Exception:  # no Ray, or an API that moved: the journal stays in memory
        return None


def trial_journal_mirror() -> JournalMirror | None:
    """Where this Tune trial copies its journal for the driver: its storage folder when that is remote."""
    return storage_mirror(_session_storage())


def trial_journal_path() -> Path | None:
    """This Tune trial's journal (the first of :func:`journal_locations`); None outside a Tune trial."""
    storage = _session_storage()
    return journal_locations(storage)[0] if storage is not None else None


def journal_locations(storage: Any) -> list[Path]:
    """Where a trial's journal is, for its worker and for the driver, from the trial's Ray storage context.

    In the trial's folder of the sweep when the sweep is on a local (shared) file system: the driver
    finds it there, also after a resume; else in the trial's working folder on its node (where the driver
    finds it when the trial ran on the driver's node; from another node it reads the copy in the trial's
    storage folder, :func:`~sentsweep.tracking.journal_mirror.storage_mirror`).
    """
    import pyarrow.fs

    places = []
    if isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem):
        places.append(Path(storage.trial_fs_path) / TRIAL_JOURNAL)
    places.append(Path(storage.trial_working_directory) / TRIAL_JOURNAL)
    return places


def _reason_text(status: str, reason: str | None) -> str:
    if reason and reason.startswith("SystemExit"):
        return "stopped by Ray Tune"
    return (reason or status.lower())[:MAX_PARAM_LENGTH]
