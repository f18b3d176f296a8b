"""A tracked trial records what MLflow's UI shows without clicks: source tags, dataset inputs with their
contexts, each metric's protocol (compact tag + protocols.json), all through the journal; the experiment
is created as a model-training experiment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from sentsweep.evaluation.metric_protocols import MetricProtocol
from sentsweep.platform.sweep_tracking import ensure_experiment
from sentsweep.tracking import TrackingSettings
from sentsweep.tracking.journal import Journal, JournalState
from sentsweep.tracking.provenance import (
    EXPERIMENT_KIND_TAG,
    PROTOCOL_TAG_PREFIX,
    PROTOCOLS_ARTIFACT,
    SOURCE_NAME_TAG,
    SOURCE_TYPE_TAG,
    TRAINING_KIND,
    protocol_ids,
)
from sentsweep.tracking.replay import Replayer
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.vocabulary import GIT_TAG
from sentsweep.trainables.cosent import COSENT


def _tiny(tiny_bert_dir: Path, **overrides: Any) -> dict[str, Any]:
    return {"model": str(tiny_bert_dir), "max_steps": 2, "eval_every": 2, "max_train_pairs": 32,
            "max_dev_pairs": 40, "test_tasks": "stsb_test", "batch_size": 8, "seed": 3, "device": "cpu",
            **overrides}


def test_the_experiment_is_a_training_experiment(tracking_uri: str) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    created = ensure_experiment(client, "made-here", None)
    assert client.get_experiment(created).tags[EXPERIMENT_KIND_TAG] == TRAINING_KIND
    older = client.create_experiment("made-before")  # an experiment of an older version: marked when reused
    assert EXPERIMENT_KIND_TAG not in client.get_experiment(older).tags
    assert ensure_experiment(client, "made-before", None) == older
    assert client.get_experiment(older).tags[EXPERIMENT_KIND_TAG] == TRAINING_KIND
    chosen = client.create_experiment("genai", tags={EXPERIMENT_KIND_TAG: "genai_development"})
    ensure_experiment(client, "genai", None)  # a kind someone chose is kept
    assert client.get_experiment(chosen).tags[EXPERIMENT_KIND_TAG] == "genai_development"


def test_a_tracked_trial_records_source_datasets_and_protocols(tiny_bert_dir: Path, tracking_uri: str) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = ensure_experiment(client, "trials", None)
    tracking = TrackingSettings(tracking_uri=tracking_uri, experiment_id=experiment, trial_id="t1")
    _, final = COSENT.train_standalone({**_tiny(tiny_bert_dir), "tracking": tracking.model_dump()})
    (run,) = client.search_runs([experiment])
    tags = run.data.tags
    assert tags[SOURCE_NAME_TAG] == "sentsweep.trainables.cosent" and tags[SOURCE_TYPE_TAG] == "LOCAL"
    assert len(tags[GIT_TAG]) == 40  # the tests run from a git checkout

    inputs = client.get_run(run.info.run_id).inputs.dataset_inputs
    by_context = {i.tags[0].value: i.dataset for i in inputs}
    assert {i.tags[0].key for i in inputs} == {"mlflow.data.context"}
    assert set(by_context) == {"training", "validation", "test"}
    assert by_context["training"].name == "stsb/train[32 sampled]"  # max_train_pairs: a seeded sample
    assert by_context["validation"].name == "stsb/dev[40 sampled]"
    assert by_context["test"].name == "stsb/test" and by_context["test"].source_type == "local"
    assert json.loads(by_context["test"].source)["uri"].endswith("sts-test.csv")
    assert len(by_context["test"].digest) == 16 and json.loads(by_context["test"].profile)["bytes"] > 0

    # every logged evaluation metric has its protocol, as a compact tag and in protocols.json
    ids = protocol_ids(tags)
    assert set(ids) == {"stsb_test", "stsb_dev"} and set(ids) <= set(final)
    stored = client.download_artifacts(run.info.run_id, PROTOCOLS_ARTIFACT)
    protocols = {k: MetricProtocol.from_dict(v) for k, v in json.loads(Path(stored).read_text()).items()}
    assert {k: p.id for k, p in protocols.items()} == ids
    dev, test = protocols["stsb_dev"], protocols["stsb_test"]
    assert (dev.task, dev.split, test.split) == ("stsb", "dev", "test")
    assert "40 pairs sampled (seed 0)" in dev.aggregation and "sampled" not in test.aggregation  # the dev's only
    # the evaluation length (eval_max_length: the tiny model's limit), not the training max_length
    assert test.pooling == "mean" and test.max_length == 128 and len(test.data_sha256) == 64
    assert test.code_version.startswith("sentsweep ") and len(test.eval_code) == 12
    assert tags[f"{PROTOCOL_TAG_PREFIX}stsb_test"].startswith(test.id)


def test_inputs_and_protocols_survive_an_outage_and_a_replay(tmp_path: Path, tracking_uri: str) -> None:
    """The new journal entries are delivered later, in order, and a second delivery adds nothing."""
    from sentsweep.data import resolve_data_dir
    from sentsweep.tracking.datasets import inputs_entry, test_records
    from sentsweep.tracking.provenance import protocol_entries

    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("outage")
    journal = Journal(tmp_path / "j.jsonl")
    protocol = MetricProtocol("stsb", "test", "Spearman x100 of cosine", pooling="mean", max_length=128)
    journal.append({"op": "open", "experiment_id": experiment, "trial_id": "t9", "run_name": "t9", "tags": {}})
    journal.append(inputs_entry(test_records("stsb_test,mr", resolve_data_dir(None))))
    for entry in protocol_entries({"stsb_test": protocol}):
        journal.append(entry)
    assert journal.pending() == 4  # nothing reached MLflow yet (as during an outage)
    Replayer(client, SweepScope(experiment)).flush(journal)
    run_id = journal.state().run_id
    assert journal.pending() == 0 and run_id is not None
    journal.save_state(JournalState(delivered=1, run_id=run_id))
    Replayer(client, SweepScope(experiment)).flush(journal)  # a stale offset: the same entries delivered again
    run = client.get_run(run_id)
    assert sorted(i.dataset.name for i in run.inputs.dataset_inputs) == ["mr", "stsb/test"]
    assert protocol_ids(run.data.tags) == {"stsb_test": protocol.id}


@pytest.mark.parametrize("field", ["max_length", "classifier", "precision", "data_sha256", "eval_code"])
def test_a_protocol_id_changes_with_every_field_but_the_commit_and_the_pooling(field: str) -> None:
    base = MetricProtocol("stsb", "test", "Spearman", max_length=128, pooling="mean", data_sha256="a" * 64,
                          eval_code="e" * 12, code_version="sentsweep 0.1.0@abc")
    changed = MetricProtocol(**{**base.__dict__, field: 32 if field == "max_length" else "other"})
    assert changed.id != base.id and set(base.differences(changed)) == {field}
    assert MetricProtocol(**{**base.__dict__, "code_version": "sentsweep 0.2.0"}).id == base.id
    assert MetricProtocol(**{**base.__dict__, "pooling": "cls"}).id == base.id  # the model's, not the measurement's
    assert MetricProtocol.from_dict(base.to_dict()) == base
