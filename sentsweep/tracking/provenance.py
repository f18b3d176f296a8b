"""MLflow's provenance conventions (experiment kind, source tags) and each metric's protocol on its run: compact
tags ``sentsweep.protocol.<metric>`` and, in full, the artifact ``protocols.json``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sentsweep.code_version import git_commit
from sentsweep.evaluation.metric_protocols import MetricProtocol
from sentsweep.tracking.vocabulary import GIT_TAG

if TYPE_CHECKING:
    from mlflow import MlflowClient

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


def experiment_tags() -> dict[str, str]:
    return {EXPERIMENT_KIND_TAG: TRAINING_KIND}


def mark_training_experiment(client: MlflowClient, experiment_id: str) -> None:
    experiment = client.get_experiment(experiment_id)
    if EXPERIMENT_KIND_TAG not in experiment.tags:
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, TRAINING_KIND)


def source_tags(name: str) -> dict[str, str]:
    tags = {SOURCE_NAME_TAG: name, SOURCE_TYPE_TAG: LOCAL_SOURCE}
    sha = git_commit()
    if sha:
        tags[GIT_TAG] = sha
    return tags


def protocol_record(protocols: Mapping[str, MetricProtocol], prefix: str = "",
                    keys: Any = None) -> dict[str, dict[str, Any]]:
    """``protocols`` as plain data ``{prefix + metric: {"compact", "full"}}``, only ``keys`` when given."""
    return {f"{prefix}{k}": {"compact": p.compact(), "full": p.to_dict()} for k, p in sorted(protocols.items())
            if keys is None or k in keys}


def log_protocols(client: MlflowClient, run_id: str, record: Mapping[str, Mapping[str, Any]]) -> None:
    from mlflow.entities import RunTag

    if not record:
        return
    tags = [RunTag(f"{PROTOCOL_TAG_PREFIX}{k}", str(p.get("compact", ""))) for k, p in sorted(record.items())]
    client.log_batch(run_id, tags=tags)
    client.log_dict(run_id, {k: p.get("full", {}) for k, p in sorted(record.items())}, PROTOCOLS_ARTIFACT)

