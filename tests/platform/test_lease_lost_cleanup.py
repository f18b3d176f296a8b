"""A driver that lost its sweep's lease runs Tune's cleanup (``except Exception: runner.cleanup(); raise`` in
``ray/tune/tune.py``, after :class:`LeaseLost` from :class:`StopWatch`) and leaves its metering block: none of it may
touch what the new holder now keeps. Real callbacks, a real sqlite MLflow store and a real sweep folder; the new
holder's trials are runs tagged as its driver tags them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.budget import BUDGET_FILE, BudgetCallback, BudgetMeter, metering
from sentsweep.platform.config import BudgetConfig
from sentsweep.platform.interrupt import StopSignals, graceful_stops, superseded
from sentsweep.platform.lease import LeaseLost
from sentsweep.platform.stopping import StopWatch
from sentsweep.platform.storage import locate
from sentsweep.platform.trial_runs_callback import TrialRunsCallback
from sentsweep.tracking.vocabulary import PARENT_TAG, ROLE_TAG, SWEEP_TAG, TRIAL_ID_TAG, TRIAL_ROLE
from sentsweep.trainables.method import ATTEMPT_SECONDS_KEY, ATTEMPT_STARTED_KEY, GPUS_KEY

pytestmark = pytest.mark.usefixtures("ray_session")  # as in the driver, where Tune's cleanup runs

LOST = "another driver (bob@node-7 (pid 4242)) took over sweep toy-1's lease by 2026-11-24 12:00:00; this one stops"
#: The new holder's count, written after it took the sweep over.
B_COUNT = '{"compute_seconds": 500.0, "gpu_seconds": 0.0, "trial_seconds": 500.0, "wall_seconds": 900.0, ' \
          '"sessions": 2, "spent": null, "attempts": {"b0001": [1.0, 500.0]}}'


def a_trial(sweep_root: Path, trial_id: str, status: str):
    """A trial as driver A's Tune holds it (a stub with a real storage context in the sweep folder)."""
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    storage = StorageContext(str(sweep_root), "toy-1", trial_dir_name=f"toy_{trial_id}")
    trial = Trial("__fake", stub=True, storage=storage, trial_id=trial_id)
    trial.set_status(status)
    return trial


def test_a_superseded_driver_leaves_the_new_holders_runs_and_budget_alone(tmp_path, tracking_uri,
                                                                          private_cache) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment_id = client.create_experiment("toy")
    parent = client.create_run(experiment_id, run_name="toy-1").info.run_id
    settings = {"tracking_uri": tracking_uri, "experiment_id": experiment_id, "parent_run_id": parent,
                "sweep_name": "toy-1"}
    # B's runs: a0001 rerun from its checkpoint (A knows that trial), b0001 a trial A never saw
    b_runs = {trial_id: client.create_run(experiment_id, run_name=trial_id, tags={
        ROLE_TAG: TRIAL_ROLE, PARENT_TAG: parent, SWEEP_TAG: "toy-1", TRIAL_ID_TAG: trial_id}).info.run_id
        for trial_id in ("a0001", "b0001")}
    sweep_root = tmp_path / "ray_results"
    location = locate(str(sweep_root / "toy-1"))
    Path(location.uri).mkdir(parents=True)
    a_running, a_done = a_trial(sweep_root, "a0001", "RUNNING"), a_trial(sweep_root, "a0002", "TERMINATED")
    tracking = TrialRunsCallback(settings, "ASHA", 0.0)
    budget = BudgetCallback()
    stops = StopSignals()

    with graceful_stops(stops), metering(BudgetMeter.load(BudgetConfig(gpu_hours=1.0), location)):
        (Path(location.uri) / BUDGET_FILE).write_text(B_COUNT)  # B took over, and counted
        stops.supersede(LOST)  # A's heartbeat found B's token
        assert superseded() == LOST
        with pytest.raises(LeaseLost):
            StopWatch().on_step_end(iteration=7, trials=[a_running, a_done])
        # Tune's cleanup: the trial A stops, then the callbacks' end of the experiment
        report = {ATTEMPT_STARTED_KEY: 2.0, ATTEMPT_SECONDS_KEY: 30.0, GPUS_KEY: 0.0, "training_iteration": 3}
        a_done.update_last_result(dict(report))
        budget.on_trial_result(iteration=7, trials=[a_running, a_done], trial=a_done, result=report)
        budget.on_trial_complete(iteration=7, trials=[a_running, a_done], trial=a_done)
        tracking.on_trial_complete(iteration=7, trials=[a_running, a_done], trial=a_done)
        tracking.on_experiment_end(trials=[a_running, a_done])
    assert superseded() is None  # outside the driver's block
    assert tracking._deliverer is None or tracking.deliverer.drain(30.0)  # whatever A queued has run

    assert (Path(location.uri) / BUDGET_FILE).read_text() == B_COUNT, "A's stale count never overwrites B's"
    found = {trial_id: (client.get_run(run_id).info.lifecycle_stage, client.get_run(run_id).info.status)
             for trial_id, run_id in b_runs.items()}
    assert found == dict.fromkeys(b_runs, ("active", "RUNNING")), "B's runs deleted as orphans or closed"
    children = client.search_runs([experiment_id], f"tags.`{TRIAL_ID_TAG}` = 'a0002'")
    assert children == [], "no run opened for A's trial"
    held = client.get_run(parent).data
    assert "sentsweep.deleted_orphan_runs" not in held.tags
    assert not [key for key in held.metrics if key.startswith("trials_")], "A's stale totals on the parent"
