"""The tracking store fails behind a tracking server that stays up (a real ``mlflow server`` behind a proxy whose
``/health`` answers 200 throughout, as MLflow's does while its PostgreSQL is down: :mod:`tests.tracking.store_proxy`).
The driver's callback never waits out MLflow's retries, and the trial's folder completes its run once the store
answers.

MLflow's client retries here 3 times with backoff 5 (about 30 s a call; 4 minutes by default), unless a test says
otherwise."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient

from sentsweep.platform.tracking.run_writes import Backoff, RunWrites
from sentsweep.platform.tracking.trial_runs import TrialRuns
from sentsweep.tracking.vocabulary import TRIAL_ID_TAG
from sentsweep.trainables.restore_note import RESTORE_REASON_KEY, RESTORED_FROM_KEY
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
    with store_proxy(server.uri) as found:
        yield found


def _parent(uri: str) -> tuple[MlflowClient, str, str]:
    """A client on ``uri``, a new experiment and a run in it (the sweep's parent)."""
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment(f"outage-{uuid.uuid4().hex[:8]}")
    return client, experiment, client.create_run(experiment).info.run_id


CREATE = "/api/2.0/mlflow/runs/create"
CREATE_VERSION = "/api/2.0/mlflow/model-versions/create"


def _active_runs(client: MlflowClient, experiment: str, query: str) -> list[str]:
    return [run.info.run_id for run in client.search_runs([experiment], filter_string=query)]


def test_a_create_whose_answer_was_lost_makes_one_run(proxy, monkeypatch) -> None:
    """The server created the run, a gateway lost its answer, MLflow's client sent the POST again and the server
    made a twin; the twin is deleted and the caller gets the first run."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    client, experiment, parent = _parent(proxy.uri)
    proxy.lose_answer.append(CREATE)
    runs = TrialRuns(client, experiment, parent, "s")
    run_id = runs.run_id("t7")
    runs.deliver("t7", [{"training_iteration": 1, "step": 2, "stsb_dev": 70.0}])
    assert proxy.heard.count(CREATE) == 3, "the parent's create, then this create sent twice"
    assert _active_runs(client, experiment, f"tags.`{TRIAL_ID_TAG}` = 't7'") == [run_id]
    twins = client.search_runs([experiment], filter_string=f"tags.`{TRIAL_ID_TAG}` = 't7'",
                               run_view_type=3)  # ViewType.ALL: the twin is there, deleted
    assert len(twins) == 2 and {t.info.lifecycle_stage for t in twins} == {"active", "deleted"}
    assert [m.value for m in client.get_metric_history(run_id, "stsb_dev")] == [70.0]


def test_a_registration_whose_answer_was_lost_leaves_one_version(proxy, tmp_path, monkeypatch) -> None:
    """The server made the model version, a gateway lost its answer and MLflow's client sent the create again: the
    twin is deleted, and the version described is the first."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    client, experiment, run_id = _parent(proxy.uri)
    name = f"best-{uuid.uuid4().hex[:8]}"
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "MLmodel").write_text("flavors: {}\n")  # what MLflow registers from a run
    client.log_artifacts(run_id, str(tmp_path / "model"), "best_model")
    proxy.lose_answer.append(CREATE_VERSION)
    writes = RunWrites(client, experiment, pyarrow.fs.LocalFileSystem(), str(tmp_path / "sweep"))
    writes.apply({"op": "register", "run": run_id, "name": name, "path": "best_model",
                  "description": "the best trial", "tags": {"trial": "t01"}})
    assert proxy.heard.count(CREATE_VERSION) == 2, "the create sent twice"
    versions = client.search_model_versions(f"name = '{name}'")
    assert [(str(v.version), v.description, v.tags) for v in versions] == [("1", "the best trial", {"trial": "t01"})]
    assert writes.registered == {name: "1"}


def test_the_drivers_callback_never_waits_for_a_store_outage_and_the_folder_completes_the_run(
        proxy, tmp_path, ray_session, monkeypatch) -> None:
    """Tune's hooks hand their deliveries to a thread: in a store outage they return at once; the deliveries that
    failed are found again in the trial's folder (its ``result.json``) once the store answers."""
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    client, experiment, parent = _parent(proxy.uri)
    storage = StorageContext(str(tmp_path / "ray_results"), "toy-1", trial_dir_name="toy_t1")
    trial = Trial("__fake", stub=True, storage=storage, trial_id="t1")
    trial.set_status("RUNNING")
    folder = Path(trial.local_path)
    folder.mkdir(parents=True)
    callback = TrialRunsCallback({"tracking_uri": proxy.uri, "experiment_id": experiment, "parent_run_id": parent,
                                  "sweep_name": "s"}, "ASHA", 0.0)
    callback.deliverer.backoff = Backoff(first_s=0.0, max_s=0.0)  # retried at the next report, however soon
    reports = [{"trial_id": "t1", "training_iteration": i, "step": 2 * i, "stsb_dev": 70.0 + i} for i in (1, 2, 3)]

    def report(result: dict) -> float:
        with (folder / "result.json").open("a") as out:  # what Tune's JSON logger writes
            out.write(json.dumps(result) + "\n")
        trial.update_last_result(dict(result))
        started = time.monotonic()
        callback.on_trial_result(iteration=1, trials=[trial], trial=trial, result=result)
        return time.monotonic() - started

    callback.on_trial_start(iteration=1, trials=[trial], trial=trial)
    report(reports[0])
    assert callback.deliverer.drain(30.0) and "t1" not in callback._behind
    proxy.mode = "store-down"
    assert report(reports[1]) < 0.5, "a hook waited for MLflow"
    assert callback.deliverer.drain(30.0) and "t1" in callback._behind  # failed: found again in the folder
    (folder / "error.txt").write_text("Failure # 1\nray.exceptions.ActorDiedError: the node was lost\n")
    trial.run_metadata.error_filename = "error.txt"
    callback.on_trial_recover(iteration=2, trials=[trial], trial=trial)  # Tune retries it: the note waits
    assert callback.deliverer.drain(30.0) and callback._notes["t1"][0] == "scratch"
    proxy.mode = "forward"
    final = {**reports[2], "final": 1.0}
    report(final)
    trial.set_status("TERMINATED")
    callback.on_trial_complete(iteration=2, trials=[trial], trial=trial)
    callback.on_experiment_end(trials=[trial])

    (run,) = client.search_runs([experiment], f"tags.`{TRIAL_ID_TAG}` = 't1'")
    history = client.get_metric_history(run.info.run_id, "stsb_dev")
    assert sorted((m.step, m.value) for m in history) == [(2, 71.0), (4, 72.0), (6, 73.0)]  # each point once
    assert run.info.status == "FINISHED"
    assert client.get_run(parent).data.metrics["trials_finished"] == 1
    assert run.data.tags[RESTORED_FROM_KEY] == "scratch"  # the retry's note, once MLflow answered
    assert run.data.tags[RESTORE_REASON_KEY] == "ray.exceptions.ActorDiedError: the node was lost"
    assert callback._tagged["t1"] == callback._notes["t1"]  # tagged once, not at every report
