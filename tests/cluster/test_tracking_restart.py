"""The MLflow tracking server restarted mid-sweep (PostgreSQL keeps running): the trials keep training, the sweep
ends on time, and what MLflow could not take meanwhile is in the sweep folder. `sentsweep sync` then leaves MLflow
with every trial's full history, one run per trial, none RUNNING (the driver delivers it itself when the server is
back before the sweep ends)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.scenario import (
    TOY_CLI,
    assert_each_trial_once,
    experiment_of,
    figures,
    start_driver,
    sweep_folder,
    sweep_yaml,
    training_with_checkpoint,
    wait_for,
)
from tests.cluster.target import Target, record

pytestmark = pytest.mark.cluster
MAX_STEPS = 8
DOWN_S = 8.0


def test_a_tracking_server_restart_loses_nothing(cluster: Target, tiny_bert_dir: Path, tmp_path: Path) -> None:
    cluster.require_local("tracking")
    config = sweep_yaml(cluster, tmp_path, "tracking-restart", tiny_bert_dir, num_samples=4, max_concurrent_trials=4,
                        fixed={"max_steps": MAX_STEPS, "sleep_s": 0.5})
    experiment = experiment_of(config)
    driver = start_driver(cluster, ["sweep", str(config), "--no-finalize"], tmp_path)
    try:
        wait_for(cluster, experiment, lambda runs: training_with_checkpoint(runs, 2), driver,
                 "a trial trains")
        cluster.stack.mlflow.restart(down_s=DOWN_S)
        status = driver.wait()
    finally:
        driver.kill()
    assert status == 0, driver.output()[-4000:]
    endpoint = ["--storage-endpoint-url", cluster.endpoint_url] if cluster.endpoint_url else []
    synced = subprocess.run([sys.executable, *TOY_CLI, "sync", sweep_folder(cluster, "tracking-restart"), *endpoint,
                             "--tracking-uri", cluster.tracking_uri],
                            env=cluster.env, capture_output=True, text=True, timeout=300)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert_each_trial_once(cluster, experiment, 4, MAX_STEPS)
    record("tracking server restart", **figures(cluster, experiment, "tracking-restart", driver.wall_s, 4),
           outage_s=DOWN_S)
