"""The trial's MLflow child run: opened once, reattached after a restore, closed exactly once."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from sentsweep.tracking import TrackingSettings
from sentsweep.tracking.trial_logger import MlflowTrialLogger
from sentsweep.tracking.vocabulary import (
    ATTEMPT_TAG,
    PARENT_TAG,
    REASON_TAG,
    TRIAL_ID_TAG,
    find_trial_run,
)


@pytest.fixture
def setup(tracking_uri):
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    parent = client.create_run(experiment).info.run_id
    settings = TrackingSettings(tracking_uri=tracking_uri, experiment_id=experiment, parent_run_id=parent,
                                sweep_name="s", trial_id="t1")
    return client, settings


def test_child_run_params_metrics_artifacts_and_status(setup, tmp_path):
    client, settings = setup
    logger = MlflowTrialLogger(settings)
    logger.start({"lr": 2e-5, "pooling": "mean", "max_steps": None})
    logger.log_metrics({"stsb_dev": 70.0, "train_loss": 1.5, "note": "text", "flag": True}, step=10)
    logger.log_metrics({"stsb_dev": 72.0}, step=20)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "history.jsonl").write_text("{}\n")
    logger.log_artifacts(tmp_path / "out")
    logger.finish("FINISHED", totals={"wall_seconds": 3.0, "gpu_seconds": 0.0})
    run = client.get_run(logger.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "t1"
    assert run.data.tags[PARENT_TAG] == settings.parent_run_id and run.data.tags[TRIAL_ID_TAG] == "t1"
    assert run.data.params == {"lr": "2e-05", "pooling": "mean", "max_steps": "None"}
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "stsb_dev")] == [(10, 70.0),
                                                                                                   (20, 72.0)]
    assert "note" not in run.data.metrics and "flag" not in run.data.metrics
    assert run.data.metrics["wall_seconds"] == 3.0
    assert [f.path for f in client.list_artifacts(run.info.run_id)] == ["history.jsonl"]


def test_a_restored_trial_reattaches_to_its_run(setup):
    client, settings = setup
    first = MlflowTrialLogger(settings)
    first.start({"lr": 2e-5})
    first.log_metrics({"stsb_dev": 70.0}, step=10)  # the driver dies here: the run stays RUNNING
    again = MlflowTrialLogger(settings)
    again.start({"lr": 2e-5, "extra": 1})  # same params again, plus one new: no MLflow error
    assert again.reattached and again.run_id == first.run_id
    again.finish("FINISHED")
    runs = client.search_runs([settings.experiment_id], f"tags.`{TRIAL_ID_TAG}` = 't1'")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert runs[0].data.tags[ATTEMPT_TAG] == "2" and runs[0].data.params == {"lr": "2e-05", "extra": "1"}
    other = find_trial_run(client, settings.experiment_id, settings.parent_run_id, "t2")
    assert other is None


def test_failure_reason_and_driver_status_are_kept(setup):
    client, settings = setup
    failed = MlflowTrialLogger(settings)
    failed.start({})
    failed.finish("FAILED", reason="RuntimeError: boom")
    assert client.get_run(failed.run_id).data.tags[REASON_TAG] == "RuntimeError: boom"
    pruned = MlflowTrialLogger(settings.model_copy(update={"trial_id": "t2"}))
    pruned.start({})
    client.set_tag(pruned.run_id, REASON_TAG, "pruned by ASHA at iteration 1")  # the driver's callback
    client.set_terminated(pruned.run_id, "KILLED")
    pruned.finish("KILLED", reason="SystemExit: 0", totals={"wall_seconds": 1.0})  # the worker, after
    run = client.get_run(pruned.run_id)
    assert run.info.status == "KILLED" and run.data.tags[REASON_TAG] == "pruned by ASHA at iteration 1"
    assert run.data.metrics["wall_seconds"] == 1.0


def test_standalone_stop_reason_reads_well(setup):
    client, settings = setup
    logger = MlflowTrialLogger(settings)
    logger.start({})
    logger.finish("KILLED", reason="SystemExit: 0")
    assert client.get_run(logger.run_id).data.tags[REASON_TAG] == "stopped by Ray Tune"


def test_works_without_a_parent_or_trial_id(tracking_uri):
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("solo")
    logger = MlflowTrialLogger(TrackingSettings(tracking_uri=tracking_uri, experiment_id=experiment))
    logger.start({"a": 1})
    logger.finish("FINISHED")
    assert client.get_run(logger.run_id).info.status == "FINISHED"
