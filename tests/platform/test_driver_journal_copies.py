"""A remote sweep's driver journals outlive the driver's disk (a Kubernetes pod's emptyDir): they are copied into the
sweep folder on S3, and ``sentsweep sync`` on a machine that never ran the sweep delivers them (a real S3 protocol
server, moto's, in this process; a real sqlite MLflow store; a tracking URI on a closed loopback port as the
outage)."""

from __future__ import annotations

import json
import posixpath
import shutil
import uuid
from pathlib import Path

import pyarrow.fs
from mlflow import MlflowClient

from sentsweep.platform.sweep_state import STATUS_TAG
from sentsweep.platform.sweep_tracking import SweepRun
from sentsweep.platform.tracking_journals import (
    DriverJournals,
    Replayed,
    cached_journal_dir,
    driver_journal_dir,
    stored_journals,
    sync_sweep,
)
from sentsweep.tracking.journal import DRIVER_JOURNALS, PARENT_JOURNAL, STAGED, trial_journal_name
from sentsweep.tracking.vocabulary import TRIAL_ID_TAG
from tools.harness.processes import LOOPBACK, free_port

BUCKET = "sweeps"


def test_sync_on_another_machine_delivers_what_a_remote_driver_journaled(tmp_path, tracking_uri, private_cache,
                                                                          remote_sweep, s3_endpoint):
    location, parent, experiment_id = remote_sweep
    down = f"http://{LOOPBACK}:{free_port()}"  # nothing listens there: MLflow is unreachable for the driver
    driver = SweepRun(MlflowClient(tracking_uri=down), down, experiment_id, parent, location.name,
                      driver_journal_dir(location.uri, location.name),
                      stored_journals(location.uri, location.filesystem, location.fs_path))
    assert driver.journal_dir == cached_journal_dir(location.name, location.name)
    assert str(driver.journal_dir).startswith(str(private_cache))
    notes = tmp_path / "notes"
    (notes / "deeper").mkdir(parents=True)
    (notes / "a.txt").write_text("kept")
    (notes / "deeper" / "b.txt").write_text("kept too")
    driver.log_metrics({"best_stsb_dev": 81.5})
    assert not driver.log_artifacts(notes, "notes")
    assert not driver.to_trial("t1", {"op": "tags", "tags": {"sentsweep.note": "from the driver"}})
    assert not driver.close("finished")
    assert driver.pending_uploads() == 1

    fs, root = location.resolve()
    copies = f"{root}/{DRIVER_JOURNALS}"
    assert fs.get_file_info(f"{copies}/{PARENT_JOURNAL}").is_file
    assert fs.get_file_info(f"{copies}/{trial_journal_name('t1')}").is_file
    assert len([i for i in fs.get_file_info(pyarrow.fs.FileSelector(f"{copies}/{STAGED}"))
                if i.type == pyarrow.fs.FileType.Directory]) == 1  # the staged upload, beside the journals
    shutil.rmtree(private_cache)  # the driver's pod is gone, and its disk with it

    assert sync_sweep(location.uri, s3_endpoint) == (Replayed(), tracking_uri)

    client = MlflowClient(tracking_uri=tracking_uri)
    run = client.get_run(parent)
    assert run.info.status == "FINISHED" and run.data.tags[STATUS_TAG] == "finished"
    assert run.data.metrics["best_stsb_dev"] == 81.5
    assert [f.path for f in client.list_artifacts(parent, "notes")] == ["notes/a.txt", "notes/deeper"]
    assert [f.path for f in client.list_artifacts(parent, "notes/deeper")] == ["notes/deeper/b.txt"]
    (trial,) = client.search_runs([experiment_id], f"tags.`{TRIAL_ID_TAG}` = 't1'")
    assert trial.data.tags["sentsweep.note"] == "from the driver"
    # the copies now say so: a third machine delivers nothing twice; the staged copy is gone from the storage
    assert not fs.get_file_info(pyarrow.fs.FileSelector(f"{copies}/{STAGED}", allow_not_found=True))
    shutil.rmtree(private_cache)
    assert sync_sweep(location.uri, s3_endpoint) == (Replayed(), tracking_uri)
    assert len(client.get_metric_history(parent, "best_stsb_dev")) == 1
    assert not any(Path(private_cache).rglob(f"{STAGED}/*"))


def test_nothing_is_copied_while_mlflow_answers(tmp_path, tracking_uri, remote_sweep):
    location, parent, experiment_id = remote_sweep
    driver = SweepRun(MlflowClient(tracking_uri=tracking_uri), tracking_uri, experiment_id, parent, location.name,
                      driver_journal_dir(location.uri, location.name),
                      stored_journals(location.uri, location.filesystem, location.fs_path))
    driver.log_metrics({"best_stsb_dev": 80.0})
    assert driver.close("finished")
    fs, root = location.resolve()
    assert not fs.get_file_info(pyarrow.fs.FileSelector(f"{root}/{DRIVER_JOURNALS}", allow_not_found=True))


def test_a_stage_of_a_remote_sweep_journals_apart_from_the_sweep(tmp_path, private_cache):
    """The confirmation stage's parent run is not the sweep's: its driver journals (the callback's, found from a
    trial's storage, and its run's, from the stage folder's URI) have a cache folder and a copy of their own."""
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    bucket = pyarrow.fs.SubTreeFileSystem(str(tmp_path), pyarrow.fs.LocalFileSystem())
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    settings = {"tracking_uri": uri, "experiment_id": "1", "parent_run_id": "p", "sweep_name": "toy-1"}
    found = {}
    for folder in ("toy-1", "toy-1/confirmation"):  # the stage: a Tune experiment inside the sweep's folder
        storage_path, name = posixpath.split(f"bucket/ray_results/{folder}")
        storage = StorageContext(storage_path, name, trial_dir_name="toy_a1_00000", storage_filesystem=bucket)
        journals = DriverJournals.of_trial(Trial("__fake", stub=True, storage=storage), settings)
        assert journals.folder == driver_journal_dir(f"s3://bucket/ray_results/{folder}", "toy-1")
        assert journals.stored is not None
        assert journals.stored.folder == f"bucket/ray_results/{folder}/{DRIVER_JOURNALS}"
        found[folder] = journals.folder
    assert found == {"toy-1": private_cache / DRIVER_JOURNALS / "toy-1",
                     "toy-1/confirmation": private_cache / DRIVER_JOURNALS / "toy-1" / "confirmation"}
    local = StorageContext(str(tmp_path), "toy-1", trial_dir_name="toy_a1_00000")
    journals = DriverJournals.of_trial(Trial("__fake", stub=True, storage=local), settings)
    assert journals.folder == tmp_path / "toy-1" / DRIVER_JOURNALS and journals.stored is None  # in the sweep folder
    assert stored_journals(str(tmp_path / "toy-1")) is None


def test_sync_of_a_journal_copy_planted_in_the_bucket_leaves_another_teams_run_alone(
        tracking_uri, private_cache, remote_sweep, s3_endpoint, caplog):
    """Whoever can write the bucket but not MLflow plants a driver journal copy whose state names another
    experiment's run: ``sentsweep sync`` with the victim's MLflow identity neither tags, logs into nor ends it, and
    still delivers the sweep's own journals."""
    location, parent, experiment_id = remote_sweep
    client = MlflowClient(tracking_uri=tracking_uri)
    other = client.create_run(client.create_experiment(f"team-b-{uuid.uuid4().hex[:6]}"), tags={"team": "b"})
    victim = other.info.run_id
    fs, root = location.resolve()
    planted = [{"op": "tags", "tags": {"team": "hacked"}}, {"op": "metrics", "points": [["loss", 9.0, 1, 1]]},
               {"op": "finish", "status": "KILLED", "reason": "planted"}]
    with fs.open_output_stream(f"{root}/{DRIVER_JOURNALS}/{trial_journal_name('t0')}") as out:
        out.write("".join(json.dumps(e) + "\n" for e in planted).encode())
    with fs.open_output_stream(f"{root}/{DRIVER_JOURNALS}/{trial_journal_name('t0')}.state") as out:
        out.write(json.dumps({"delivered": 0, "run_id": victim}).encode())
    down = f"http://{LOOPBACK}:{free_port()}"  # the sweep's own driver journaled during an outage
    driver = SweepRun(MlflowClient(tracking_uri=down), down, experiment_id, parent, location.name,
                      driver_journal_dir(location.uri, location.name),
                      stored_journals(location.uri, location.filesystem, location.fs_path))
    assert not driver.close("finished")
    shutil.rmtree(private_cache)

    with caplog.at_level("WARNING", logger="sentsweep.tracking"):
        assert sync_sweep(location.uri, s3_endpoint) == (Replayed(), tracking_uri)

    run = client.get_run(victim)
    assert run.info.status == "RUNNING" and run.info.end_time is None
    assert run.data.tags["team"] == "b" and not client.get_metric_history(victim, "loss")
    assert client.get_run(parent).info.status == "FINISHED"
    assert caplog.text.count("not a run of this sweep") == len(planted)
