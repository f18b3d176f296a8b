"""The MLflow vocabulary a trial's worker and the driver share (no MLflow import at load): tags, outcomes, MLflow's
provenance conventions, and each metric's protocol (tags ``sentsweep.protocol.<metric>``, ``protocols.json``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from sentsweep.code_version import git_commit

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

    from sentsweep.evaluation.metric_protocols import MetricProtocol

TERMINAL = {"FINISHED", "FAILED", "KILLED"}

PARENT_TAG = "mlflow.parentRunId"
GIT_TAG = "mlflow.source.git.commit"
TRIAL_ID_TAG = "sentsweep.trial_id"
SWEEP_TAG = "sentsweep.sweep"
ROLE_TAG = "sentsweep.role"
CONFIRMATION_ROLE = "confirmation"
REASON_TAG = "sentsweep.status_reason"
ATTEMPT_TAG = "sentsweep.attempt"
SWEEP_DIR_TAG = "sentsweep.sweep_dir"
#: The trial's place in the order Tune created the trials (from 1).
TRIAL_NUMBER_TAG = "sentsweep.trial_number"
#: How a trial ended, in words MLflow's statuses lack: :data:`OUTCOMES`.
OUTCOME_TAG = "sentsweep.outcome"
#: A trial's outcome and its run's status: a trial a scheduler or stopper ended early is FINISHED (its figures are
#: complete for the steps it ran); KILLED is kept for one cut off that a resume continues.
OUTCOMES: dict[str, str] = {"finished": "FINISHED", "pruned": "FINISHED", "stopped": "FINISHED",
                            "failed": "FAILED", "interrupted": "KILLED", "not started": "KILLED"}
#: MLflow's description of an experiment, a run or a model version (markdown, shown on its page).
NOTE_TAG = "mlflow.note.content"
TRIAL_ROLE = "trial"
METHOD_TAG = "sentsweep.method"
SPACE_TAG = "sentsweep.search_space"
#: On a reference trial's run (the paper's setting): its setting, ``paper``; on the sweep's run: that trial's id.
REFERENCE_TAG = "sentsweep.reference"
REFERENCE_TRIAL_TAG = "sentsweep.reference_trial_id"
#: The key of a trial's report that carries its run record: ``{"params", "tags", "inputs", "protocols"}``.
RUN_RECORD_KEY = "sentsweep_run"
#: The folder of a trial's outputs (history, final metrics, method extras) in its trial folder: its run's artifacts.
OUTPUT_DIR = "output"
#: MLflow's limit on a param value (longer values are truncated, as MLflow itself would).
MAX_PARAM_LENGTH = 6000


def tagged_runs(client: MlflowClient, experiment_id: str, tags: Mapping[str, str]) -> list[Run]:
    """The active runs of ``experiment_id`` holding ``tags``, oldest first (ties by id, so every process agrees)."""
    query = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
    runs = client.search_runs([experiment_id], filter_string=query, max_results=10_000)
    return sorted(runs, key=lambda run: (run.info.start_time or 0, run.info.run_id))


def run_or_none(client: MlflowClient, run_id: str) -> Run | None:
    """The run ``run_id``; None when the store has no such run (deleted for good, or another store)."""
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise
        return None


def find_trial_run(client: MlflowClient, experiment_id: str, parent_run_id: str | None, trial_id: str) -> Run | None:
    """The active child run of ``trial_id``; of several, the oldest."""
    parent = {PARENT_TAG: parent_run_id} if parent_run_id else {}
    return next(iter(tagged_runs(client, experiment_id, {TRIAL_ID_TAG: trial_id, **parent})), None)


def run_outcome(run: Run) -> str:
    """How a trial's run ended: its :data:`OUTCOME_TAG`, else its status in words."""
    return run.data.tags.get(OUTCOME_TAG) or {"FINISHED": "finished", "KILLED": "pruned", "FAILED": "failed",
                                              "RUNNING": "running"}.get(run.info.status, run.info.status.lower())


def log_missing_params(client: MlflowClient, run_id: str, params: Mapping[str, Any]) -> None:
    from mlflow.entities import Param

    held = client.get_run(run_id).data.params
    client.log_batch(run_id, params=[Param(k, str(v)[:MAX_PARAM_LENGTH]) for k, v in params.items() if k not in held])


#: The parent run's tag with the sweep's state (running, finished, interrupted, crashed, failed).
STATUS_TAG = "sentsweep.status"
#: The MLflow run status each state closes the parent with.
RUN_STATUS: dict[str, str] = {"running": "RUNNING", "finished": "FINISHED", "interrupted": "KILLED",
                              "crashed": "FAILED", "failed": "FAILED"}
#: The sweep run's tag naming its best trial by label (``sentsweep.best_trial_id`` keeps Tune's id).
BEST_LABEL_TAG = "sentsweep.best_trial"
#: The sweep run's tags naming its best trial by Tune's id and its best trial's run.
BEST_TRIAL_TAG = "sentsweep.best_trial_id"
BEST_RUN_TAG = "sentsweep.best_run_id"
#: On the best trial's run: the URI (``runs:/<parent>/best_model``) of the one exported copy of its weights.
EXPORTED_MODEL_TAG = "sentsweep.exported_model"
#: On each confirmation trial's run: the search trial it confirms, and that trial's rank in the search.
CONFIRMS_TAG = "sentsweep.confirms_trial"
CONFIRM_RANK_TAG = "sentsweep.confirm_rank"
#: On the sweep's run: the search's own best trial.
SEARCH_BEST_TAG = "sentsweep.search_best_trial_id"
#: The parent run's tag naming the changes the latest resume made to the config (JSON ``{field: [old, new]}``;
#: the parent's params keep the values the sweep started with).
RESUME_CHANGES_TAG = "sentsweep.resume_changes"
#: The parent run's tag saying why the sweep stopped.
STOP_REASON_TAG = "sentsweep.stop_reason"
#: What the runs of the trials the budget stopped say, and how the stop's line begins.
STOPPED_REASON = "stopped by budget"
#: What the run of a trial that ended before its first report says (its outcome: ``not started``).
NOT_STARTED_REASON = "stopped before it started"
#: The parent run's tag saying whether the confirmation stage chose another trial than the search's best.
CHANGED_TAG = "sentsweep.winner_changed"
#: The parent run's tag listing the front's trial ids (comma-separated, best first objective first).
PARETO_TAG = "sentsweep.pareto"
#: The parent run's tag with the sweep's objectives (``"stsb_dev max; compute_seconds min"``).
OBJECTIVES_TAG = "sentsweep.objectives"
#: Where the Pareto plot and its CSV go on the parent run, and their name.
PARETO_ARTIFACTS = "pareto"
PARETO_NAME = "pareto_front"
#: The states of a sweep, as its parent run's :data:`STATUS_TAG` records them.
SweepState = Literal["running", "finished", "interrupted", "crashed", "failed"]
#: The reason tag of an unfinished trial's run when its sweep was stopped (its outcome: ``interrupted``).
INTERRUPTED_REASON = "interrupted with the sweep (resume continues it)"
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
#: MLflow's value for a traditional model-training experiment (its UI opens such experiments on Runs).
TRAINING_KIND = "custom_model_development"
SOURCE_NAME_TAG = "mlflow.source.name"
SOURCE_TYPE_TAG = "mlflow.source.type"
#: MLflow's source type of a run started from a local process (the others: NOTEBOOK, JOB, PROJECT, ...).
LOCAL_SOURCE = "LOCAL"
PROTOCOL_TAG_PREFIX = "sentsweep.protocol."
#: The run artifact holding every metric's full protocol: ``{metric: MetricProtocol.to_dict()}``.
PROTOCOLS_ARTIFACT = "protocols.json"


def source_tags(name: str) -> dict[str, str]:
    sha = git_commit()
    return {SOURCE_NAME_TAG: name, SOURCE_TYPE_TAG: LOCAL_SOURCE, **({GIT_TAG: sha} if sha else {})}


def protocol_record(protocols: Mapping[str, MetricProtocol], prefix: str = "") -> dict[str, dict[str, Any]]:
    """``protocols`` as plain data ``{prefix + metric: {"compact", "full"}}``."""
    return {f"{prefix}{k}": {"compact": p.compact(), "full": p.to_dict()} for k, p in sorted(protocols.items())}


def log_protocols(client: MlflowClient, run_id: str, record: Mapping[str, Mapping[str, Any]]) -> None:
    from mlflow.entities import RunTag

    if not record:
        return
    tags = [RunTag(f"{PROTOCOL_TAG_PREFIX}{k}", str(p.get("compact", ""))) for k, p in sorted(record.items())]
    client.log_batch(run_id, tags=tags)
    client.log_dict(run_id, {k: p.get("full", {}) for k, p in sorted(record.items())}, PROTOCOLS_ARTIFACT)

