"""A driver that lost its sweep's lock stops, and leaves the sweep to the new holder. Its Tune cleanup (``except
Exception: runner.cleanup(); raise`` in ``ray/tune/tune.py``, after :class:`LockLost` from :class:`StopWatch`)
touches nothing the new holder keeps: real callbacks, a real sqlite MLflow store and a real
sweep folder, the new holder's trials being runs tagged as its driver tags them. And a real toy sweep whose folder's
lock another driver takes over ends with :class:`LockLost`."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.driver.callbacks import StopWatch
from sentsweep.platform.driver.interrupt import StopSignals, graceful_stops
from sentsweep.platform.folder.lock import LockLost, LockRecord
from sentsweep.platform.folder.lock_stores import LOCK_FILE, LocalLockStore
from sentsweep.platform.location import locate
from sentsweep.platform.stops import superseded
from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback
from sentsweep.tracking.vocabulary import PARENT_TAG, ROLE_TAG, STATUS_TAG, SWEEP_TAG, TRIAL_ID_TAG, TRIAL_ROLE
from sentsweep.trainables.method import GPUS_KEY

pytestmark = pytest.mark.usefixtures("ray_session")  # as in the driver, where Tune's cleanup runs

LOST = "another driver (bob@node-7 (pid 4242)) took over sweep toy-1's lock by 2026-11-24 12:00:00; this one stops"


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
    stops = StopSignals()

    with graceful_stops(stops):
        stops.supersede(LOST)  # A's heartbeat found B's token
        assert superseded() == LOST
        with pytest.raises(LockLost):
            StopWatch().on_step_end(iteration=7, trials=[a_running, a_done])
        # Tune's cleanup: the trial A stops, then the callbacks' end of the experiment
        a_done.update_last_result({"time_total_s": 30.0, GPUS_KEY: 0.0, "training_iteration": 3})
        tracking.on_trial_complete(iteration=7, trials=[a_running, a_done], trial=a_done)
        tracking.on_experiment_end(trials=[a_running, a_done])
    assert superseded() is None  # outside the driver's block
    assert "deliverer" not in vars(tracking) or tracking.deliverer.drain(30.0)  # whatever A queued has run

    found = {trial_id: (client.get_run(run_id).info.lifecycle_stage, client.get_run(run_id).info.status)
             for trial_id, run_id in b_runs.items()}
    assert found == dict.fromkeys(b_runs, ("active", "RUNNING")), "B's runs deleted as orphans or closed"
    children = client.search_runs([experiment_id], f"tags.`{TRIAL_ID_TAG}` = 'a0002'")
    assert children == [], "no run opened for A's trial"
    held = client.get_run(parent).data
    assert "sentsweep.deleted_orphan_runs" not in held.tags
    assert not [key for key in held.metrics if key.startswith("trials_")], "A's stale totals on the parent"


def test_a_sweep_whose_lock_was_taken_over_stops_and_leaves_the_parent_to_the_new_holder(
        tmp_path, tiny_bert_dir, tracking_uri, ray_session, monkeypatch) -> None:
    """A real toy sweep (in-process Ray, sqlite MLflow): once its trials run, another driver writes its own record
    over the folder's lock (a compare-and-set on the version it read, as a take over does). The sweep ends with
    :class:`LockLost` at its next heartbeat, the new holder's lock stays, and the parent run is left RUNNING for the
    new holder (not closed as interrupted)."""
    from sentsweep.platform.driver.sweep import run_sweep
    from sentsweep.platform.folder import lock as sweep_lock
    from sentsweep.tracking.vocabulary import REASON_TAG, ROLE_TAG
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    monkeypatch.setattr(sweep_lock, "HEARTBEAT_S", 0.5)
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 40, "sleep_s": 0.5})
    client = MlflowClient(tracking_uri=tracking_uri)
    taken: list[tuple[str, Path]] = []

    def take_over() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not taken:
            experiment = client.get_experiment_by_name("toy")
            locks = list((tmp_path / "ray_results").glob(f"*/{LOCK_FILE}"))
            if experiment is not None and locks:
                parents = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'sweep'")
                trials = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
                store = LocalLockStore(locks[0])
                stored = store.read()
                now = time.time()
                bob = LockRecord("bob", "node-7", 4242, None, "b-token", now, now + 3600)
                if parents and trials and store.write(bob.to_bytes(), stored.version) is not None:
                    taken.append((parents[0].info.run_id, locks[0]))
                    return
            time.sleep(0.3)  # polling a real sweep for its first trial

    thief = threading.Thread(target=take_over, daemon=True)
    thief.start()
    with pytest.raises(LockLost, match=r"another driver \(bob@node-7 \(pid 4242\)\) took over sweep toy-[\w-]+'s "
                                       r"lock by .*; this one stops"):
        run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                  echo=lambda line: None)
    thief.join(timeout=5)
    assert taken, "the trials ran and the lock was taken over"
    run_id, lock_file = taken[0]
    assert LockRecord.parse(lock_file.read_bytes()).token == "b-token", "the new holder's lock stays"
    parent = client.get_run(run_id)
    assert parent.info.status == "RUNNING" and parent.data.tags[STATUS_TAG] == "running", "left to the new holder"
    assert not [key for key in parent.data.metrics if key.startswith("trials_")], "no totals of a sweep not held"
    runs = client.search_runs([parent.info.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
    assert runs and not [r for r in runs if r.data.tags.get(REASON_TAG, "").startswith("interrupted with the sweep")]


def test_a_driver_that_loses_its_lock_during_finalize_stops_before_the_test_suite(
        tmp_path, tiny_bert_dir, tracking_uri, ray_session, monkeypatch) -> None:
    """Another driver takes the lock over as finalize names the best trial: the heartbeat finds its record, and
    finalize stops with :class:`LockLost` before the test suite, the export and the retention, which are the new
    holder's to run. The checkpoints stay, no model is exported, the parent run stays RUNNING."""
    from sentsweep.platform.driver.sweep import run_sweep
    from sentsweep.platform.folder import lock as sweep_lock
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    monkeypatch.setattr(sweep_lock, "HEARTBEAT_S", 0.2)
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=1, scheduler={"type": "fifo"},
                        fixed={"max_steps": 2, "eval_every": 2}, plots=False, export=True)
    lines: list[str] = []

    def echo(line: str) -> None:
        lines.append(line)
        if not line.startswith("best trial "):
            return
        (lock_file,) = (tmp_path / "ray_results").glob(f"*/{LOCK_FILE}")
        store = LocalLockStore(lock_file)
        now = time.time()
        bob = LockRecord("bob", "node-7", 4242, None, "b-token", now, now + 3600)
        for _ in range(50):  # the driver's heartbeat can renew between the read and the compare-and-set
            if store.write(bob.to_bytes(), store.read().version) is not None:
                break
        else:
            pytest.fail("the lock could not be taken over in 50 compare-and-set attempts")
        deadline = time.monotonic() + 30
        while superseded() is None and time.monotonic() < deadline:  # the driver's next heartbeat
            time.sleep(0.05)

    with pytest.raises(LockLost, match="bob@node-7"):
        run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False, echo=echo)
    (folder,) = [p for p in (tmp_path / "ray_results").iterdir() if p.is_dir()]
    assert not any(line.startswith("best trial on the test suite") for line in lines), lines
    assert not (folder / "best_model").exists()
    assert list(folder.glob("*/checkpoint_*")), "the checkpoints are left to the new holder's retention"
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment_id = client.get_experiment_by_name("toy").experiment_id
    (parent,) = client.search_runs([experiment_id], f"tags.`{ROLE_TAG}` = 'sweep'")
    assert parent.info.status == "RUNNING"
    assert not [key for key in parent.data.metrics if key.startswith("final_")]
