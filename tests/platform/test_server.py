"""The same sweep against a real ``mlflow server`` on 127.0.0.1 (HTTP tracking, proxied artifacts)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.tracking.vocabulary import PARENT_TAG, REASON_TAG
from tools.harness.processes import end_group, free_port


@pytest.fixture
def mlflow_server(tmp_path: Path, mlflow_template: Path) -> Iterator[str]:
    """``mlflow server`` with one worker in its own process group, ended (by that group) afterwards."""
    shutil.copy(mlflow_template, tmp_path / "server.db")
    port = free_port()
    command = [str(Path(sys.executable).with_name("mlflow")), "server", "--host", "127.0.0.1", "--port",
               str(port), "--workers", "1", "--backend-store-uri", f"sqlite:///{tmp_path / 'server.db'}",
               "--artifacts-destination", str(tmp_path / "server-artifacts")]
    log = (tmp_path / "server.log").open("w")
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not start: {(tmp_path / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        end_group(server, grace=20)  # the group this test started, by its id
        log.close()


def test_sweep_logs_to_a_tracking_server(tmp_path, tiny_bert_dir, mlflow_server, ray_session):
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, mlflow_server, num_samples=2, max_concurrent_trials=2,
                        scheduler={"type": "fifo"}, tracking={"artifact_location": None}, plots=False)
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lambda line: None)
    assert outcome.counts == {"finished": 2, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    client = MlflowClient(tracking_uri=mlflow_server)
    parent = client.get_run(outcome.parent_run_id)
    assert parent.info.status == "FINISHED" and parent.data.metrics["trials_finished"] == 2
    assert parent.info.artifact_uri.startswith("mlflow-artifacts:")
    children = client.search_runs([outcome.experiment_id], f"tags.`{PARENT_TAG}` = '{outcome.parent_run_id}'")
    assert len(children) == 2 and all(r.info.status == "FINISHED" for r in children)
    assert all(REASON_TAG not in r.data.tags for r in children)
    assert all(len(client.get_metric_history(r.info.run_id, "train_loss")) == 3 for r in children)
    assert "best_model" in {f.path for f in client.list_artifacts(outcome.parent_run_id)}
    assert client.get_run(outcome.best_run_id).data.tags["sentsweep.exported_model"].endswith("/best_model")
    assert (tmp_path / "server-artifacts").is_dir()
