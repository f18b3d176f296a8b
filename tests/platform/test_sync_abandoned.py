"""``sentsweep sync`` of a sweep whose driver was killed (SIGKILL, a lost machine) ends the sweep's run as a stop
does, ``interrupted`` and resumable, with its scheduled confirmation run, instead of leaving them open; it never
touches a sweep run that ended (real sqlite MLflow, a planted sweep folder)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from mlflow import MlflowClient

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.resume import is_resumable
from sentsweep.platform.driver.sync import sync_sweep
from sentsweep.platform.location import SweepManifest, locate
from sentsweep.platform.tracking.trial_runs import RESULTS_FILE
from sentsweep.tracking.vocabulary import CONFIRMATION_ROLE, PARENT_TAG, ROLE_TAG, STATUS_TAG


def _plant_sweep(folder: Path, tracking_uri: str) -> str:
    """A sweep folder with one finished trial and its sweep run, left RUNNING as a killed driver leaves it."""
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    run_id = client.create_run(experiment, tags={STATUS_TAG: "running"}).info.run_id
    config = SweepConfig(name="s", method="cosent", storage_path=str(folder.parent))
    locate(str(folder)).write_manifest(SweepManifest(
        sweep_name="s", config=config.model_dump(mode="json"), parent_run_id=run_id, experiment_id=experiment,
        tracking_uri=tracking_uri, created=time.time()), config)
    (folder / "train_a").mkdir()
    report = {"trial_id": "a", "training_iteration": 1, "step": 2, "stsb_dev": 80.0, "done": True, "final": 1.0}
    (folder / "train_a" / RESULTS_FILE).write_text(json.dumps(report) + "\n")
    return run_id


def test_sync_ends_the_run_a_killed_driver_left_running_and_it_stays_resumable(tmp_path: Path,
                                                                              tracking_uri: str) -> None:
    run_id = _plant_sweep(tmp_path / "sweep", tracking_uri)
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_run(run_id).info.experiment_id
    stage_id = client.create_run(experiment, tags={PARENT_TAG: run_id, ROLE_TAG: CONFIRMATION_ROLE}).info.run_id
    client.update_run(stage_id, status="SCHEDULED")  # as the sweep scheduled it when it began

    done = sync_sweep(str(tmp_path / "sweep"))
    run = client.get_run(run_id)
    assert not done.waiting and run.info.status == "KILLED"
    stage = client.get_run(stage_id)
    assert stage.info.status == "KILLED" and "a resume runs the stage" in stage.data.tags["sentsweep.status_reason"]
    assert run.data.tags[STATUS_TAG] == "interrupted"
    assert f"sentsweep resume {tmp_path / 'sweep'}" in run.data.tags["sentsweep.status_reason"]
    assert is_resumable(run.info.status, run.data.tags), "--resume-interrupted still continues it"

    again = sync_sweep(str(tmp_path / "sweep"))  # idempotent: nothing more to end
    assert again.trials.ended == 0 and client.get_run(run_id).info.status == "KILLED"


def test_sync_leaves_a_sweep_run_that_ended(tmp_path: Path, tracking_uri: str) -> None:
    run_id = _plant_sweep(tmp_path / "sweep", tracking_uri)
    client = MlflowClient(tracking_uri=tracking_uri)
    client.set_tag(run_id, STATUS_TAG, "finished")
    client.set_terminated(run_id, "FINISHED")

    sync_sweep(str(tmp_path / "sweep"))
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags[STATUS_TAG] == "finished"
