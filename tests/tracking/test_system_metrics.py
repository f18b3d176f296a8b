"""System metrics on a trial's run (``tracking.system_metrics``): psutil's CPU and memory figures under MLflow's
names, sampled by sentsweep's sampler and journaled while the run is open, and nothing once it is off."""

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


def test_samples_end_a_dirty_period_once_delivered(tracking_uri, tmp_path):
    """Review of session 20: after an outage the storage copy stays dirty until a put copies it; samples did not, and
    each one then made the logger forget what the run holds and fetch every system key's history again, until the
    trial's next report. Now the first sample delivered with nothing pending copies it and ends the period."""

    class Mirror:  # the storage copy (a JournalMirror's interface): dirty after a push made in an outage
        def __init__(self) -> None:
            self.dirty, self.pushes = False, 0

        def push(self, journal) -> bool:
            self.pushes += 1
            self.dirty = journal.pending() > 0
            return True

    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    parent = client.create_run(experiment).info.run_id
    mirror = Mirror()
    logger = MlflowTrialLogger(TrackingSettings(tracking_uri=tracking_uri, experiment_id=experiment,
                                                parent_run_id=parent, sweep_name="s", trial_id="t1"),
                               journal_path=tmp_path / "j.jsonl", mirror=mirror)
    logger.start({"lr": 1e-3})
    keys = [f"system/gpu_{g}_utilization_percentage" for g in range(8)]
    fetched = []
    history = logger.client.get_metric_history
    logger.client.get_metric_history = lambda run_id, key: fetched.append(key) or history(run_id, key)
    logger.outbox.replayer.client = logger.client
    mirror.dirty = True  # the copy was pushed with entries pending during an outage; MLflow answers again now
    for i in range(5):
        logger._log_system_metrics({k: 10.0 + i for k in keys})
    assert not mirror.dirty and len(fetched) <= len(keys)  # one fetch per key (45 for 5 samples before)
    assert len(client.get_metric_history(logger.run_id, keys[0])) == 5


def test_a_monitor_that_fails_once_does_not_end_the_sampling():
    from sentsweep.tracking.system_metrics import SystemMetricsSampler

    class Flaky:
        def __init__(self) -> None:
            self.calls = 0

        def collect_metrics(self) -> None:
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("the GPU library's error")

        def aggregate_metrics(self) -> dict[str, float]:
            return {"gpu_0_utilization_percentage": 50.0}

        def clear_metrics(self) -> None:
            pass

    samples: list[dict[str, float]] = []
    sampler = SystemMetricsSampler(samples.append, 0.05)
    sampler._monitors = [Flaky()]
    sampler.start()
    deadline = time.monotonic() + 10
    while len(samples) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    sampler.stop()
    assert len(samples) >= 3 and samples[0] == {"system/gpu_0_utilization_percentage": 50.0}


def test_the_monitors_read_the_machine_under_mlflows_names():
    from sentsweep.tracking.system_metrics import GpuMonitor, machine_monitors

    figures: dict[str, float] = {}
    for monitor in machine_monitors():
        monitor.collect_metrics()
        monitor.collect_metrics()
        figures.update(monitor.aggregate_metrics())
        monitor.clear_metrics()
        assert monitor.aggregate_metrics() == {}
    assert {"cpu_utilization_percentage", "system_memory_usage_megabytes", "system_memory_usage_percentage",
            "disk_usage_percentage", "network_receive_megabytes", "network_transmit_megabytes"} <= set(figures)
    assert 0 < figures["system_memory_usage_percentage"] <= 100 and figures["network_receive_megabytes"] >= 0
    import torch

    if not torch.cuda.is_initialized():  # the sampler never starts CUDA itself
        assert GpuMonitor().read() == {} and not torch.cuda.is_initialized()
