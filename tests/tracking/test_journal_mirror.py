"""Remote storage, a worker on another machine: what the worker could not log reaches MLflow through the copy of
its journal in the trial's storage folder, replayed by the driver once the server is back (a real ``mlflow
server``, stopped and restarted; the storage a real pyarrow file system that is not the local one, as S3 is)."""

from __future__ import annotations

import shutil
from collections import Counter

import pyarrow.fs
import pytest
from mlflow import MlflowClient

from sentsweep.platform.tracking_journals import replay_sweep_journals
from sentsweep.tracking.journal import TRIAL_JOURNAL, Journal
from sentsweep.tracking.journal_mirror import JournalMirror, storage_mirror
from sentsweep.tracking.replay import Replayer
from sentsweep.tracking.trial_logger import MlflowTrialLogger
from sentsweep.tracking.vocabulary import PARENT_TAG, TRIAL_ID_TAG, TrackingSettings
from tests.tracking.restartable_mlflow import outage_ready_server


@pytest.fixture(scope="module")
def server(tmp_path_factory, mlflow_template):
    """One server for the module's tests (each its own experiment), started again by a test that stops it."""
    with outage_ready_server(tmp_path_factory.mktemp("mirror-server"), mlflow_template) as found:
        yield found


def test_a_journal_left_only_in_the_storage_is_replayed_by_the_driver(tmp_path, server):
    client = MlflowClient(tracking_uri=server.uri)
    experiment_id = client.create_experiment("remote")
    parent = client.create_run(experiment_id, run_name="sweep").info.run_id
    bucket = tmp_path / "bucket"
    bucket.mkdir()
    storage = pyarrow.fs.SubTreeFileSystem(str(bucket), pyarrow.fs.LocalFileSystem())
    node = tmp_path / "worker-node" / "trial_a"  # the trial's working folder on the worker's machine
    settings = TrackingSettings(tracking_uri=server.uri, experiment_id=experiment_id, parent_run_id=parent,
                                sweep_name="sweep", trial_id="a1_00000")
    logger = MlflowTrialLogger(settings, journal_path=node / TRIAL_JOURNAL,
                               mirror=JournalMirror(storage, "sweep/toy_a1_00000"))

    logger.start({"lr": 0.001})
    logger.log_metrics({"train_loss": 1.0}, step=1)
    assert logger.pending() == 0 and not storage.get_file_info("sweep/toy_a1_00000/" + TRIAL_JOURNAL).is_file
    server.stop()
    for step in (2, 3):
        logger.log_metrics({"train_loss": 1.0 / step, "stsb_dev": 50.0 + step}, step=step)
    logger.finish("FINISHED", totals={"wall_seconds": 3.0})
    assert logger.pending() == 4  # two reports, the totals and the finish, all in the copy in the storage
    copy = JournalMirror(storage, "sweep/toy_a1_00000").pull(tmp_path / "peek.jsonl")
    assert copy is not None and copy.pending() == 4 and copy.state().run_id == logger.run_id
    shutil.rmtree(tmp_path / "worker-node")  # the worker's machine is gone

    driver = tmp_path / "driver"
    assert replay_sweep_journals(str(driver), server.uri, "sweep", storage, "sweep") > 0  # the server is still down
    server.start()
    for _ in range(2):  # a second replay (a resume, the recovery command) adds nothing
        assert replay_sweep_journals(str(driver), server.uri, "sweep", storage, "sweep") == 0

    runs = client.search_runs([experiment_id], f"tags.`{PARENT_TAG}` = '{parent}'")
    assert [r.data.tags[TRIAL_ID_TAG] for r in runs] == ["a1_00000"]
    (run,) = runs
    assert run.info.status == "FINISHED" and run.data.params["lr"] == "0.001"
    assert run.data.metrics["wall_seconds"] == 3.0 and run.data.metrics["stsb_dev"] == 53.0
    history = client.get_metric_history(run.info.run_id, "train_loss")
    assert sorted(m.step for m in history) == [1, 2, 3]
    assert max(Counter((m.step, m.timestamp, m.value) for m in history).values()) == 1


def test_the_worker_forgets_its_histories_after_a_copy_with_pending_entries(tmp_path, server):
    """Both the worker and the driver deliver the same entries (the driver from the copy): no point twice."""
    client = MlflowClient(tracking_uri=server.uri)
    experiment_id = client.create_experiment("both")
    storage = pyarrow.fs.SubTreeFileSystem(str(tmp_path), pyarrow.fs.LocalFileSystem())
    settings = TrackingSettings(tracking_uri=server.uri, experiment_id=experiment_id, trial_id="b2_00000")
    logger = MlflowTrialLogger(settings, journal_path=tmp_path / "node" / TRIAL_JOURNAL,
                               mirror=JournalMirror(storage, "trial_b"))
    logger.start({"lr": 0.002})
    server.stop()
    logger.log_metrics({"train_loss": 0.5}, step=1)
    server.start()
    copy = JournalMirror(storage, "trial_b").pull(tmp_path / "driver" / "worker-trial_b.jsonl")
    assert copy is not None and copy.pending() == 1
    Replayer(client).flush(copy)  # the driver delivers the point first
    logger.log_metrics({"train_loss": 0.25}, step=2)
    assert logger.pending() == 0
    history = client.get_metric_history(logger.run_id, "train_loss")
    assert sorted(m.step for m in history) == [1, 2]
    assert Journal(tmp_path / "node" / TRIAL_JOURNAL).pending() == 0


def test_a_copy_only_for_remote_storage(tmp_path) -> None:
    from ray.train._internal.storage import StorageContext

    local = StorageContext(str(tmp_path), "sweep", trial_dir_name="toy_c3_00000")
    assert storage_mirror(local) is None  # the journal itself is in the trial folder
    bucket = pyarrow.fs.SubTreeFileSystem(str(tmp_path), pyarrow.fs.LocalFileSystem())
    remote = StorageContext("bucket", "sweep", trial_dir_name="toy_c3_00000", storage_filesystem=bucket)
    mirror = storage_mirror(remote)
    assert mirror is not None and mirror.path == f"bucket/sweep/toy_c3_00000/{TRIAL_JOURNAL}"
