"""A new trial process in an MLflow outage does not spend MLflow's retry budget before it trains: the first call of
the process is preceded by a probe of the server's store (a real closed loopback port, MLflow's real client
with a retry budget of about a minute)."""

from __future__ import annotations

import time

import pytest

from sentsweep.platform.trial import finished_metrics
from sentsweep.tracking.replay import Reachability
from tools.harness.processes import LOOPBACK, free_port


@pytest.fixture
def slow_retries(monkeypatch):
    """MLflow's client retrying 3 times with backoff 10 s (its default: 7 times with backoff 2, ~4 minutes)."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "10")
    Reachability._by_uri.clear()
    yield
    Reachability._by_uri.clear()


def test_a_new_trial_process_in_an_outage_trains_at_once(slow_retries) -> None:
    uri = f"http://{LOOPBACK}:{free_port()}"  # nobody listens: MLflow is down
    config = {"tracking": {"tracking_uri": uri, "experiment_id": "1", "parent_run_id": "p"}}
    start = time.monotonic()
    assert finished_metrics(config, "t1_00000") is None  # not known to be finished: the trial trains
    seconds = time.monotonic() - start
    assert seconds < 15, f"{seconds:.0f} s before training: MLflow's retries were spent"  # without the probe: ~70 s
    reach = Reachability.of(uri)
    assert reach.down_since is not None and not reach.worth_trying()  # what the trial's logger sees next: journal


def test_a_file_store_is_not_probed(tmp_path, slow_retries, monkeypatch) -> None:
    reach = Reachability.of(f"sqlite:///{tmp_path}/mlruns.db")
    monkeypatch.setattr(Reachability, "probe", lambda self: pytest.fail("a file store was probed"))
    assert reach.worth_trying()
