"""The tracking store fails behind a tracking server that stays up (a real ``mlflow server`` behind a proxy whose
``/health`` answers 200 throughout, as MLflow's does while its PostgreSQL is down: :mod:`tests.tracking.store_proxy`).
A trial's logging journals at once instead of waiting out MLflow's retries.

MLflow's client retries here 3 times with backoff 5 (about 30 s a call; 4 minutes by default), unless a test says
otherwise."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from mlflow import MlflowClient

from sentsweep.tracking import TrackingSettings
from sentsweep.tracking.replay import Reachability
from sentsweep.tracking.trial_logger import MlflowTrialLogger
from tests.tracking.restartable_mlflow import Server
from tests.tracking.store_proxy import StoreProxy, store_proxy


@pytest.fixture(scope="module")
def server(tmp_path_factory, mlflow_template) -> Iterator[Server]:
    found = Server(tmp_path_factory.mktemp("mlflow-server"), mlflow_template)
    found.start()
    try:
        yield found
    finally:
        found.stop()


@pytest.fixture
def proxy(server: Server, monkeypatch) -> Iterator[StoreProxy]:
    for key, value in {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "5",
                       "MLFLOW_HTTP_REQUEST_TIMEOUT": "10", "MLFLOW_DISABLE_TELEMETRY": "true"}.items():
        monkeypatch.setenv(key, value)
    Reachability._by_uri.clear()
    with store_proxy(server.uri) as found:
        yield found
    Reachability._by_uri.clear()


def _parent(uri: str) -> tuple[MlflowClient, str, str]:
    """A client on ``uri``, a new experiment and a run in it (the sweep's parent)."""
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment(f"outage-{uuid.uuid4().hex[:8]}")
    return client, experiment, client.create_run(experiment).info.run_id


def test_a_trial_logs_through_a_store_outage_without_waiting_out_mlflows_retries(proxy, tmp_path) -> None:
    client, experiment, parent = _parent(proxy.uri)
    settings = TrackingSettings(tracking_uri=proxy.uri, experiment_id=experiment, parent_run_id=parent,
                                sweep_name="s", trial_id="t1")
    logger = MlflowTrialLogger(settings, journal_path=tmp_path / "journal.jsonl")
    logger.start({"lr": 1e-3})
    assert logger.run_id is not None and logger.pending() == 0
    proxy.mode = "store-down"
    started = time.monotonic()
    logger.log_metrics({"stsb_dev": 70.0}, step=2)
    seconds = time.monotonic() - started
    assert seconds < 5, f"log_metrics took {seconds:.0f}s: MLflow's retries were waited out"
    assert logger.pending() == 1, "the metrics wait in the journal"
    proxy.mode = "forward"
    time.sleep(max(0.0, Reachability.of(proxy.uri).retry_at - time.monotonic()))  # the probe's back-off
    logger.log_metrics({"stsb_dev": 71.0}, step=4)
    assert logger.pending() == 0
    assert [(m.step, m.value) for m in client.get_metric_history(logger.run_id, "stsb_dev")] == [(2, 70.0), (4, 71.0)]


def test_a_call_that_fails_while_the_store_answers_is_not_tried_again_at_every_put(proxy, tmp_path,
                                                                                   monkeypatch) -> None:
    """The artifact store behind ``--serve-artifacts`` is down, the tracking store answers the probe: the failed
    upload (here without retries, to keep the test short) is not tried again, nor anything else, at the next put."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    _, experiment, parent = _parent(proxy.uri)
    settings = TrackingSettings(tracking_uri=proxy.uri, experiment_id=experiment, parent_run_id=parent,
                                sweep_name="s", trial_id="t1")
    logger = MlflowTrialLogger(settings, journal_path=tmp_path / "journal.jsonl")
    logger.start({"lr": 1e-3})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "history.jsonl").write_text("{}\n")
    proxy.mode = "artifacts-down"
    logger.log_artifacts(tmp_path / "out")
    assert logger.pending() == 1 and any("/mlflow-artifacts/" in path for path in proxy.heard)
    asked = len(proxy.heard)
    started = time.monotonic()
    logger.log_metrics({"stsb_dev": 70.0}, step=2)
    assert time.monotonic() - started < 1 and logger.pending() == 2
    assert proxy.heard[asked:] == [], "the next put called the server again"


def test_calls_failing_while_the_store_answers_back_off_longer_each_time() -> None:
    """Diff review 18: a fixed minute between retries of an upload that spends MLflow's retry budget each time (an
    artifact store down behind a server that answers) left a trial's GPU idle most of the time."""
    from sentsweep.tracking.replay import CALL_BACKOFF_S, MAX_CALL_BACKOFF_S

    reach = Reachability("http://127.0.0.1:9")
    waits = []
    for _ in range(8):
        before = time.monotonic()
        reach.failed(RuntimeError("500 from the artifact store"))
        waits.append(round(reach.retry_at - before))
    assert waits == [min(MAX_CALL_BACKOFF_S, CALL_BACKOFF_S * 2**k) for k in range(8)]
    reach.succeeded()
    reach.failed(RuntimeError("500 again"), probed=True)  # the store itself answered nobody: the short retry
    assert reach.retry_at - time.monotonic() <= 5.0
    reach.failed(RuntimeError("500"))
    assert round(reach.retry_at - time.monotonic()) == CALL_BACKOFF_S


CREATE = "/api/2.0/mlflow/runs/create"


def _active_runs(client: MlflowClient, experiment: str, query: str) -> list[str]:
    return [run.info.run_id for run in client.search_runs([experiment], filter_string=query)]


def test_a_create_whose_answer_was_lost_makes_one_run(proxy, monkeypatch) -> None:
    """SRE review 18, M3: the server created the run, a gateway lost its answer, MLflow's client sent the POST again
    and the server made a twin; the twin is deleted and both calls' callers get the same, first, run."""
    from sentsweep.tracking.run_creation import create_run_once

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    client, experiment, _ = _parent(proxy.uri)
    proxy.lose_answer.append(CREATE)
    run = create_run_once(client, experiment, {"sentsweep.sweep": "twins"}, "twins", start_time=1_700_000_000_000)
    assert proxy.heard.count(CREATE) == 3, "the parent's create, then this create sent twice"
    assert _active_runs(client, experiment, "tags.`sentsweep.sweep` = 'twins'") == [run.info.run_id]
    twins = client.search_runs([experiment], filter_string="tags.`sentsweep.sweep` = 'twins'",
                               run_view_type=3)  # ViewType.ALL: the twin is there, deleted
    assert len(twins) == 2 and {t.info.lifecycle_stage for t in twins} == {"active", "deleted"}


def test_a_trial_whose_open_was_answered_twice_logs_to_one_run(proxy, tmp_path, monkeypatch) -> None:
    """The same through a trial's journal: one run of the trial, holding its metrics."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    client, experiment, parent = _parent(proxy.uri)
    settings = TrackingSettings(tracking_uri=proxy.uri, experiment_id=experiment, parent_run_id=parent,
                                sweep_name="s", trial_id="t7")
    logger = MlflowTrialLogger(settings, journal_path=tmp_path / "journal.jsonl")
    proxy.lose_answer.append(CREATE)
    logger.start({"lr": 1e-3})
    logger.log_metrics({"stsb_dev": 70.0}, step=2)
    assert proxy.heard.count(CREATE) == 3 and logger.pending() == 0
    assert _active_runs(client, experiment, "tags.`sentsweep.trial_id` = 't7'") == [logger.run_id]
    assert [m.value for m in client.get_metric_history(logger.run_id, "stsb_dev")] == [70.0]
