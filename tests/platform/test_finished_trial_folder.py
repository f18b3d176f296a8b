"""A trial that finished after Tune's last snapshot is not trained again: its folder holds its final metrics
(``output/final_metrics.json``), which a restored attempt reports at once (real local folders; no MLflow)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sentsweep.platform.driver.trainable import finished_metrics
from sentsweep.platform.tracking.reachability import store_answers
from sentsweep.trainables.checkpoints import StoredFolder
from tools.harness.processes import LOOPBACK, free_port


def test_a_finished_trial_reports_its_final_metrics_from_its_folder(tmp_path: Path) -> None:
    trial = StoredFolder.local(tmp_path)
    assert finished_metrics(trial) is None  # nothing written: the trial trains
    (tmp_path / "output").mkdir()
    (tmp_path / "output" / "final_metrics.json").write_text(json.dumps({"stsb_dev": 0.5, "step": 4.0}))
    assert finished_metrics(trial) is None  # no final marker: not a finished attempt's
    (tmp_path / "output" / "final_metrics.json").write_text(json.dumps({"stsb_dev": 0.5, "final": 1.0}))
    assert finished_metrics(trial) == {"stsb_dev": 0.5, "final": 1.0, "restored_from_mlflow": 1.0}


def test_the_store_probe_answers_at_once_in_an_outage(monkeypatch) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")  # the probe never spends MLflow's retry budget
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "10")
    start = time.monotonic()
    assert not store_answers(f"http://{LOOPBACK}:{free_port()}")  # nobody listens: MLflow is down
    assert time.monotonic() - start < 10
    assert store_answers("sqlite:///nowhere.db")  # a file store is not probed: its calls' errors decide
