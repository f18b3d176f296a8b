"""A stop (an eviction's SIGTERM, Ctrl+C) in a tracking outage closes no run and waits for nothing: the interrupted
trials' runs stay RUNNING for the resume, and the stop goes on to ``SweepInterrupted``."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient

from sentsweep.platform.driver.interrupt import close_interrupted_trials
from sentsweep.platform.tracking.parent_run import SweepRun
from tests.tracking.restartable_mlflow import RETRY_ENV
from tools.harness.processes import LOOPBACK, free_port


def test_closing_interrupted_trials_in_an_outage_returns_at_once(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in RETRY_ENV.items():
        monkeypatch.setenv(key, value)
    down = f"http://{LOOPBACK}:{free_port()}"  # nothing listens: MLflow is down
    sweep = SweepRun(MlflowClient(tracking_uri=down), down, "1", "parent", "s", pyarrow.fs.LocalFileSystem(),
                     str(tmp_path))
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        close_interrupted_trials(sweep, ["t1", "t2"])
    assert time.monotonic() - started < 10
    assert "runs of 2 interrupted trial(s) stay RUNNING until the sweep is resumed" in caplog.text
