"""MLflow system metrics on a trial's run (``tracking.system_metrics``): psutil's CPU and memory figures, logged
by MLflow's monitor while the run is open, and nothing once it is off."""

from __future__ import annotations

import time

from mlflow import MlflowClient

from sentsweep.tracking import TrackingSettings
from sentsweep.tracking.trial_logger import MlflowTrialLogger


def _trial(tracking_uri: str, **settings) -> tuple[MlflowClient, MlflowTrialLogger]:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    parent = client.create_run(experiment).info.run_id
    tracking = TrackingSettings(tracking_uri=tracking_uri, experiment_id=experiment, parent_run_id=parent,
                                sweep_name="s", trial_id="t1", **settings)
    return client, MlflowTrialLogger(tracking)


def test_system_metrics_are_logged_while_the_trial_runs(tracking_uri):
    client, logger = _trial(tracking_uri, system_metrics=True, system_metrics_interval_s=0.2)
    logger.start({"lr": 1e-3})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            k.startswith("system/") for k in client.get_run(logger.run_id).data.metrics):
        time.sleep(0.2)
    logger.finish("FINISHED")
    metrics = client.get_run(logger.run_id).data.metrics
    assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= set(metrics)
    assert logger._monitor is None  # stopped with the run


def test_no_system_metrics_unless_asked(tracking_uri):
    client, logger = _trial(tracking_uri)
    logger.start({"lr": 1e-3})
    time.sleep(0.5)
    logger.finish("FINISHED")
    assert not [k for k in client.get_run(logger.run_id).data.metrics if k.startswith("system/")]


def test_system_metrics_survive_an_outage(tracking_uri, monkeypatch, tmp_path):
    """Sampled while MLflow answers nothing (before, MLflow's monitor ended at its first failed request and its
    samples were lost), delivered with the trial's journal once MLflow answers, at the trial's training step."""
    from tests.tracking.restartable_mlflow import RETRY_ENV
    from tools.harness.processes import LOOPBACK, free_port

    for key, value in RETRY_ENV.items():
        monkeypatch.setenv(key, value)
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    parent = client.create_run(experiment).info.run_id
    down = f"http://{LOOPBACK}:{free_port()}"
    settings = {"experiment_id": experiment, "parent_run_id": parent, "sweep_name": "s", "trial_id": "t1",
                "system_metrics": True, "system_metrics_interval_s": 0.2}
    journal = tmp_path / "trial-journal.jsonl"
    logger = MlflowTrialLogger(TrackingSettings(tracking_uri=down, **settings), journal_path=journal)
    logger.start({"lr": 1e-3})
    logger.log_metrics({"train_loss": 1.0}, step=3)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and '"system/' not in journal.read_text():
        time.sleep(0.2)
    logger.finish("FINISHED")
    assert logger.run_id is None and logger.pending() > 0  # nothing reached MLflow

    back = MlflowTrialLogger(TrackingSettings(tracking_uri=tracking_uri, **settings),
                             journal_path=journal)
    assert back.outbox.flush() and back.pending() == 0
    (run,) = client.search_runs([experiment], "tags.`sentsweep.trial_id` = 't1'")
    history = client.get_metric_history(run.info.run_id, "system/cpu_utilization_percentage")
    assert history and {m.step for m in history} == {3}
    assert run.info.status == "FINISHED"
