"""A driver that lost its sweep's lease runs Tune's cleanup (``except Exception: runner.cleanup(); raise`` in
``ray/tune/tune.py``, after :class:`LeaseLost` from :class:`StopWatch`): none of it may touch what the new holder
now keeps. Real callbacks, a real sqlite MLflow store and a real sweep folder; the new
holder's trials are runs tagged as its workers tag them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.interrupt import StopSignals, graceful_stops, superseded
from sentsweep.platform.lease import LeaseLost
from sentsweep.platform.stopping import StopWatch
from sentsweep.platform.storage import locate
from sentsweep.platform.sweep_tracking import TrackingCallback
from sentsweep.tracking.vocabulary import TRIAL_ID_TAG, TrackingSettings, child_run_tags
from sentsweep.trainables.method import GPUS_KEY

pytestmark = pytest.mark.usefixtures("ray_session")  # as in the driver, where Tune's cleanup runs

LOST = "another driver (bob@node-7 (pid 4242)) took over sweep toy-1's lease by 2026-11-24 12:00:00; this one stops"


def a_trial(sweep_root: Path, trial_id: str, status: str):
    """A trial as driver A's Tune holds it (a stub with a real storage context in the sweep folder)."""
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    storage = StorageContext(str(sweep_root), "toy-1", trial_dir_name=f"toy_{trial_id}")
    trial = Trial("__fake", stub=True, storage=storage, trial_id=trial_id)
    trial.set_status(status)
    return trial


def test_a_superseded_driver_leaves_the_new_holders_runs_alone(tmp_path, tracking_uri, private_cache) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment_id = client.create_experiment("toy")
    parent = client.create_run(experiment_id, run_name="toy-1").info.run_id
    settings = TrackingSettings(tracking_uri=tracking_uri, experiment_id=experiment_id, parent_run_id=parent,
                                sweep_name="toy-1").model_dump()
    # B's runs: a0001 rerun from its checkpoint (A knows that trial), b0001 a trial A never saw
    b_runs = {trial_id: client.create_run(experiment_id, tags=child_run_tags(TrackingSettings(**settings), trial_id),
                                          run_name=trial_id).info.run_id for trial_id in ("a0001", "b0001")}
    sweep_root = tmp_path / "ray_results"
    location = locate(str(sweep_root / "toy-1"))
    Path(location.uri).mkdir(parents=True)
    a_running, a_done = a_trial(sweep_root, "a0001", "RUNNING"), a_trial(sweep_root, "a0002", "TERMINATED")
    tracking = TrackingCallback(settings, "ASHA", 0.0)
    stops = StopSignals()

    with graceful_stops(stops):
        stops.supersede(LOST)  # A's heartbeat found B's token
        assert superseded() == LOST
        with pytest.raises(LeaseLost):
            StopWatch().on_step_end(iteration=7, trials=[a_running, a_done])
        # Tune's cleanup: the trial A stops, then the callbacks' end of the experiment
        a_done.update_last_result({"time_total_s": 30.0, GPUS_KEY: 0.0, "training_iteration": 3})
        tracking.on_trial_complete(iteration=7, trials=[a_running, a_done], trial=a_done)
        tracking.on_experiment_end(trials=[a_running, a_done])
    assert superseded() is None  # outside the driver's block

    found = {trial_id: (client.get_run(run_id).info.lifecycle_stage, client.get_run(run_id).info.status)
             for trial_id, run_id in b_runs.items()}
    assert found == dict.fromkeys(b_runs, ("active", "RUNNING")), "B's runs deleted as orphans or closed"
    children = client.search_runs([experiment_id], f"tags.`{TRIAL_ID_TAG}` = 'a0002'")
    assert children == [], "no run opened for A's trial"
    held = client.get_run(parent).data
    assert "sentsweep.deleted_orphan_runs" not in held.tags
    assert not [key for key in held.metrics if key.startswith("trials_")], "A's stale totals on the parent"
