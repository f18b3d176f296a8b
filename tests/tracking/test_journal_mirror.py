"""Remote storage, a worker on another machine: what the worker could not log reaches MLflow through the copy of
its journal in the trial's storage folder, replayed by the driver once the server is back (a real ``mlflow
server``, stopped and restarted; the storage a real pyarrow file system that is not the local one, as S3 is)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient

from sentsweep.platform.search import FINAL_KEY
from sentsweep.platform.sweep_tracking import TrackingCallback
from sentsweep.platform.tracking_journals import SET_ASIDE_PREFIX, replay_sweep_journals
from sentsweep.tracking.journal import DRIVER_JOURNALS, TRIAL_JOURNAL, Journal, JournalState
from sentsweep.tracking.journal_mirror import SET_ASIDE, JournalMirror, storage_mirror
from sentsweep.tracking.replay import Replayer
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.trial_logger import MlflowTrialLogger
from sentsweep.tracking.vocabulary import ATTEMPT_TAG, PARENT_TAG, TRIAL_ID_TAG, TrackingSettings
from tests.tracking.restartable_mlflow import RETRY_ENV, outage_ready_server
from tools.harness.processes import LOOPBACK, free_port


@pytest.fixture(scope="module")
def server(tmp_path_factory, mlflow_template):
    """One server for the module's tests (each its own experiment), started again by a test that stops it."""
    with outage_ready_server(tmp_path_factory.mktemp("mirror-server"), mlflow_template) as found:
        yield found


def _replay(driver: Path, uri: str, scope: SweepScope, storage: pyarrow.fs.FileSystem) -> int:
    """:func:`replay_sweep_journals` of the sweep folder ``sweep`` of ``storage`` by a driver whose folder is
    ``driver``; the entries still pending."""
    return replay_sweep_journals(str(driver), uri, "sweep", scope, storage, "sweep").pending


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
    assert _replay(driver, server.uri, SweepScope(experiment_id, parent), storage) > 0  # the server is still down
    server.start()
    for _ in range(2):  # a second replay (a resume, the recovery command) adds nothing
        assert _replay(driver, server.uri, SweepScope(experiment_id, parent), storage) == 0

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
    Replayer(client, SweepScope(experiment_id)).flush(copy)  # the driver delivers the point first
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
    assert mirror.set_aside == f"bucket/sweep/{SET_ASIDE}"  # one folder per sweep: the driver lists it once


def _attempt(settings: TrackingSettings, storage, node) -> MlflowTrialLogger:
    """A trial attempt's logger whose journal is on ``node`` (a folder standing for that machine's disk)."""
    return MlflowTrialLogger(settings, journal_path=node / TRIAL_JOURNAL,
                             mirror=JournalMirror(storage, "sweep/toy_d4_00000", set_aside=f"sweep/{SET_ASIDE}"))


def _set_aside(storage) -> list[str]:
    infos = storage.get_file_info(pyarrow.fs.FileSelector(f"sweep/{SET_ASIDE}", allow_not_found=True))
    return sorted(i.base_name for i in infos)


def _lose_the_node_and_finish_elsewhere(first: MlflowTrialLogger, settings: TrackingSettings, storage,
                                       tmp_path) -> None:
    """The ``first`` attempt (on ``node-1``) reports steps 1 and 2 while MLflow is down and is lost with its node;
    the next attempt, on ``node-2``, sets its copy aside (with its state, once one was saved), reports step 3 and
    finishes."""
    for step in (1, 2):
        first.log_metrics({"train_loss": 1.0 / step}, step=step)
    assert _set_aside(storage) == []
    shutil.rmtree(tmp_path / "node-1")  # the node is lost; Tune restores the trial on another one
    second = _attempt(settings, storage, tmp_path / "node-2")
    second.start({"lr": 0.003})
    second.log_metrics({"train_loss": 0.25}, step=3)
    second.finish("FINISHED")
    (aside, *state) = _set_aside(storage)
    assert aside.startswith("toy_d4_00000-") and aside.endswith(".jsonl") and state in ([], [aside + ".state"])


def _sweep_with_a_trial(client: MlflowClient, name: str, uri: str) -> tuple[str, str, TrackingSettings]:
    """An experiment, a sweep run in it, and the tracking settings of its trial ``d4_00000``."""
    experiment_id = client.create_experiment(name)
    parent = client.create_run(experiment_id, run_name="sweep").info.run_id
    return experiment_id, parent, TrackingSettings(tracking_uri=uri, experiment_id=experiment_id,
                                                   parent_run_id=parent, sweep_name="sweep", trial_id="d4_00000")


def _assert_both_attempts_delivered(client: MlflowClient, experiment_id: str, parent: str) -> None:
    (run,) = client.search_runs([experiment_id], f"tags.`{PARENT_TAG}` = '{parent}'")
    assert run.info.status == "FINISHED" and run.data.tags[TRIAL_ID_TAG] == "d4_00000"
    history = client.get_metric_history(run.info.run_id, "train_loss")
    assert sorted((m.step, m.value) for m in history) == [(1, 1.0), (2, 0.5), (3, 0.25)]


def test_an_attempt_on_another_node_sets_the_lost_attempts_copy_aside(tmp_path, server):
    """A worker lost with its node while MLflow is down: the trial's next attempt runs on another node with a new
    journal; its first push sets the lost attempt's copy aside instead of overwriting it, and the driver's replay
    delivers the entries of both attempts (without it, steps 1 and 2 were lost)."""
    client = MlflowClient(tracking_uri=server.uri)
    experiment_id, parent, settings = _sweep_with_a_trial(client, "attempts", server.uri)
    storage = pyarrow.fs.SubTreeFileSystem(str(tmp_path / "bucket"), pyarrow.fs.LocalFileSystem())
    first = _attempt(settings, storage, tmp_path / "node-1")
    first.start({"lr": 0.003})
    server.stop()
    try:
        _lose_the_node_and_finish_elsewhere(first, settings, storage, tmp_path)
    finally:
        server.start()

    driver = tmp_path / "driver"
    for _ in range(2):  # a second replay adds nothing
        assert _replay(driver, server.uri, SweepScope(experiment_id, parent), storage) == 0
    _assert_both_attempts_delivered(client, experiment_id, parent)


def _ended_trial(storage: pyarrow.fs.FileSystem):
    """Trial ``d4_00000`` as the driver's Tune holds it at the end of the sweep: finished, its folder the one of
    :func:`_attempt` on ``storage`` (a stub with a real storage context)."""
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    trial = Trial("__fake", stub=True, trial_id="d4_00000",
                  storage=StorageContext("", "sweep", trial_dir_name="toy_d4_00000", storage_filesystem=storage))
    trial.set_status("TERMINATED")
    trial.update_last_result({FINAL_KEY: 1.0})
    return trial


def _end_the_sweep(settings: TrackingSettings, trial) -> None:
    """The driver's end of the sweep (:meth:`TrackingCallback.on_experiment_end`), its trial settings ``settings``."""
    driver_settings = settings.model_copy(update={"trial_id": None}).model_dump()
    TrackingCallback(driver_settings, "ASHA", 0.0).on_experiment_end(trials=[trial])


@pytest.mark.usefixtures("ray_session", "private_cache")  # a trial's working folder is in Ray's session folder
def test_the_end_of_the_sweep_delivers_the_copy_set_aside_and_leaves_the_run_finished(tmp_path, server):
    """The same, delivered by the driver's end of the sweep (before, only by a resume or ``sentsweep sync``); the
    lost attempt began in the outage (its ``open`` undelivered too): delivered after its successor's finish, it
    finds the run the successor created and ended, and leaves it FINISHED (before, it reopened it: RUNNING for
    good, as no finish of that attempt follows)."""
    client = MlflowClient(tracking_uri=server.uri)
    experiment_id, parent, settings = _sweep_with_a_trial(client, "sweep-end", server.uri)
    storage = pyarrow.fs.SubTreeFileSystem(str(tmp_path / "bucket"), pyarrow.fs.LocalFileSystem())
    server.stop()
    try:
        first = _attempt(settings, storage, tmp_path / "node-1")
        first.start({"lr": 0.003})
        _lose_the_node_and_finish_elsewhere(first, settings, storage, tmp_path)
    finally:
        server.start()

    _end_the_sweep(settings, _ended_trial(storage))
    _assert_both_attempts_delivered(client, experiment_id, parent)
    (run,) = client.search_runs([experiment_id], f"tags.`{PARENT_TAG}` = '{parent}'")
    assert run.data.tags[ATTEMPT_TAG] == "1"  # the lost attempt's late open reattached nothing


@pytest.mark.usefixtures("ray_session")
def test_the_end_of_the_sweep_counts_the_copy_set_aside_as_pending(tmp_path, private_cache, monkeypatch, caplog):
    """With MLflow still down at the end of the sweep, the entries of the copy set aside are pulled and counted in
    the figure the driver warns of (before, 0 of them: nothing said they waited for a resume or ``sync``)."""
    for key, value in RETRY_ENV.items():
        monkeypatch.setenv(key, value)
    down = f"http://{LOOPBACK}:{free_port()}"
    settings = TrackingSettings(tracking_uri=down, experiment_id="1", parent_run_id="p" * 32, sweep_name="sweep",
                                trial_id="d4_00000")
    storage = pyarrow.fs.SubTreeFileSystem(str(tmp_path / "bucket"), pyarrow.fs.LocalFileSystem())
    first = _attempt(settings, storage, tmp_path / "node-1")
    first.start({"lr": 0.003})
    _lose_the_node_and_finish_elsewhere(first, settings, storage, tmp_path)

    with caplog.at_level("WARNING", logger="sentsweep.tracking"):
        _end_the_sweep(settings, _ended_trial(storage))
    folder = private_cache / DRIVER_JOURNALS / "sweep"
    (aside,) = [Journal(path) for path in folder.glob(f"{SET_ASIDE_PREFIX}*.jsonl")]
    assert aside.pending() == 4  # the lost attempt's open, params and two reports
    pending = sum(Journal(path).pending() for path in folder.glob("*.jsonl"))
    assert f"{pending} tracking entries wait in {folder}" in caplog.text


def test_an_attempt_on_the_same_node_or_after_delivery_sets_nothing_aside(tmp_path, server):
    """The next attempt on the same node appends to the same journal (the copy is its start), and a copy whose
    entries were all delivered is overwritten: nothing is set aside in either case."""
    client = MlflowClient(tracking_uri=server.uri)
    experiment_id = client.create_experiment("same-node")
    storage = pyarrow.fs.SubTreeFileSystem(str(tmp_path / "bucket"), pyarrow.fs.LocalFileSystem())
    settings = TrackingSettings(tracking_uri=server.uri, experiment_id=experiment_id, trial_id="d4_00000")
    first = _attempt(settings, storage, tmp_path / "node-1")
    first.start({"lr": 0.003})
    server.stop()
    try:
        first.log_metrics({"train_loss": 1.0}, step=1)
        again = _attempt(settings, storage, tmp_path / "node-1")
        again.log_metrics({"train_loss": 0.5}, step=2)
    finally:
        server.start()
    assert _set_aside(storage) == [] and again.pending() == 2
    again.log_metrics({"train_loss": 0.25}, step=3)
    assert again.pending() == 0  # the copy now says: all delivered

    server.stop()
    try:
        elsewhere = _attempt(settings, storage, tmp_path / "node-2")
        elsewhere.start({"lr": 0.003})
        assert elsewhere.pending() > 0  # pushed: the copy it overwrote had nothing pending
    finally:
        server.start()
    assert _set_aside(storage) == []


def test_the_driver_takes_a_copy_of_another_attempt_whole(tmp_path) -> None:
    """The driver pulled attempt 1's copy (3 entries, 2 delivered); the copy now is attempt 2's (1 entry): the
    driver's copy becomes attempt 2's with its own offset, neither kept as the longer one nor given attempt 1's."""
    storage = pyarrow.fs.SubTreeFileSystem(str(tmp_path / "bucket"), pyarrow.fs.LocalFileSystem())
    dest = tmp_path / "driver" / "worker-toy.jsonl"
    for node, entries, delivered in (("node-1", 3, 2), ("node-2", 1, 0)):
        journal = Journal(tmp_path / node / TRIAL_JOURNAL)
        for i in range(entries):
            journal.append({"op": "tags", "tags": {"attempt": node, "i": i}})
        journal.save_state(JournalState(delivered=delivered))
        JournalMirror(storage, "toy").push(journal)
        pulled = JournalMirror(storage, "toy").pull(dest)
        assert pulled is not None
        assert [e["tags"]["attempt"] for e in pulled.entries()] == [node] * entries
        assert pulled.state().delivered == delivered


def test_a_copy_larger_than_any_journal_is_not_pulled(tmp_path, monkeypatch) -> None:
    """An object planted in the storage under a journal's name, larger than a journal can be, is refused unread
    past the limit, not loaded into the memory (and written to the disk) of the machine that replays it (security
    review 13)."""
    from sentsweep.tracking import journal_mirror

    monkeypatch.setattr(journal_mirror, "MAX_COPY_BYTES", 1000)
    storage = pyarrow.fs.SubTreeFileSystem(str(tmp_path / "bucket"), pyarrow.fs.LocalFileSystem())
    journal = Journal(tmp_path / "node" / TRIAL_JOURNAL)
    journal.append({"op": "tags", "tags": {"small": "1"}})
    JournalMirror(storage, "toy").push(journal)
    assert JournalMirror(storage, "toy").pull(tmp_path / "driver" / "worker-toy.jsonl") is not None
    big = tmp_path / "bucket" / JournalMirror(storage, "big").path
    big.parent.mkdir(parents=True)
    big.write_bytes(b'{"op": "tags", "tags": {}}\n' * 100)
    assert JournalMirror(storage, "big").pull(tmp_path / "driver" / "worker-big.jsonl") is None
    assert not (tmp_path / "driver" / "worker-big.jsonl").exists()
