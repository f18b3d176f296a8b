"""The MLflow child run of one trial, logged from the trial's worker.

A trial's run is a child of the sweep's parent run (tag ``mlflow.parentRunId``) and carries the tag
``sentsweep.trial_id``. When Tune restores a trial (driver restart, worker failure), the new attempt
*reattaches* to the run found by that tag instead of opening another one, so a sweep has exactly one
run per trial and none is left RUNNING once its trial is over.

Only :class:`mlflow.MlflowClient` is used (never the fluent ``mlflow.start_run`` stack), so trials that
share a reused Ray actor cannot leak an active run into one another. The driver side (statuses of
pruned and crashed trials, sweep totals) lives in :mod:`sentsweep.platform.sweep_tracking`.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Protocol

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag

from sentsweep.tracking.vocabulary import (
    ATTEMPT_TAG,
    MAX_PARAM_LENGTH,
    REASON_TAG,
    TERMINAL,
    Status,
    TrackingSettings,
    child_run_tags,
    find_trial_run,
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
    """Opens (or reattaches to) a trial's child run; logs params, metrics, artifacts and the outcome."""

    def __init__(self, tracking: TrackingSettings) -> None:
        self.tracking = tracking
        self.client = MlflowClient(tracking_uri=tracking.tracking_uri)
        self.trial_id = tracking.trial_id or ray_trial_id()
        self.run_id: str | None = None
        self.reattached = False
        self.last_step = 0

    # -- the TrialLogger protocol ------------------------------------------------------------
    def start(self, params: dict[str, Any]) -> None:
        """Open the child run, or reattach to this trial's existing one; log the params not yet there."""
        existing = (find_trial_run(self.client, self.tracking.experiment_id, self.tracking.parent_run_id,
                                   self.trial_id) if self.trial_id else None)
        if existing is None:
            run = self.client.create_run(self.tracking.experiment_id,
                                         tags=child_run_tags(self.tracking, self.trial_id),
                                         run_name=self.trial_id)
            self.run_id, logged = run.info.run_id, {}
        else:
            self.run_id, logged, self.reattached = existing.info.run_id, existing.data.params, True
            attempt = int(existing.data.tags.get(ATTEMPT_TAG, "1")) + 1
            self.client.update_run(self.run_id, status="RUNNING")
            self.client.set_tag(self.run_id, ATTEMPT_TAG, str(attempt))
            if REASON_TAG in existing.data.tags:
                self.client.delete_tag(self.run_id, REASON_TAG)
        # MLflow params are immutable: a reattached attempt logs only the params the run lacks.
        new = [Param(k, param_value(v)) for k, v in params.items() if k not in logged]
        if new:
            self.client.log_batch(self.run_id, params=new)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """Every numeric entry of a report, at ``step``."""
        if self.run_id is None:
            return
        now = int(time.time() * 1000)
        self.last_step = max(self.last_step, step)
        values = [Metric(k, v, now, step) for k, v in numeric_metrics(metrics).items()]
        if values:
            self.client.log_batch(self.run_id, metrics=values)

    def log_artifacts(self, local_dir: Path, artifact_path: str | None = None) -> None:
        """Upload a folder (best weights, history, evaluation tables) to the run's artifacts."""
        if self.run_id is not None:
            self.client.log_artifacts(self.run_id, str(local_dir), artifact_path)

    def finish(self, status: Status, reason: str | None = None,
               totals: dict[str, float] | None = None) -> None:
        """Record the outcome, unless the driver already did (a trial stopped by the scheduler).

        When Tune stops a trial (ASHA pruning, the end of a time budget) its thread ends in a
        ``SystemExit`` raised inside ``tune.report``; by then the driver has marked the run KILLED with
        the real reason, which this keeps. Wall and GPU seconds are logged either way.
        """
        if self.run_id is None:
            return
        if totals:
            now = int(time.time() * 1000)
            values = [Metric(k, float(v), now, self.last_step) for k, v in totals.items()
                      if math.isfinite(float(v))]
            self.client.log_batch(self.run_id, metrics=values)
        current = self.client.get_run(self.run_id).info.status
        if current in TERMINAL:
            return
        tags = [RunTag(REASON_TAG, _reason_text(status, reason))] if reason or status != "FINISHED" else []
        if tags:
            self.client.log_batch(self.run_id, tags=tags)
        self.client.set_terminated(self.run_id, status=status)


def _reason_text(status: str, reason: str | None) -> str:
    if reason and reason.startswith("SystemExit"):
        return "stopped by Ray Tune"
    return (reason or status.lower())[:MAX_PARAM_LENGTH]
