"""A worker node lost mid-training (its raylet SIGKILLed by PID): its trials are rescheduled on the other node and
continue from their last checkpoint in S3 (attempt 2); MLflow keeps one run per trial, none RUNNING."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentsweep.tracking.names import NODE_ID_TAG
from sentsweep.tracking.vocabulary import ATTEMPT_TAG, TRIAL_ID_TAG
from tests.cluster.scenario import (
    assert_each_trial_once,
    experiment_of,
    figures,
    retrained_steps,
    start_driver,
    steps_of,
    sweep_yaml,
    training_with_checkpoint,
    trial_runs,
    wait_for,
)
from tests.cluster.target import Target, record

pytestmark = pytest.mark.cluster
MAX_STEPS = 16  # the moment (a trial at step 4-10) spans several polls of MLflow


def test_a_lost_worker_nodes_trials_resume_on_the_other_node(cluster: Target, tiny_bert_dir: Path,
                                                             tmp_path: Path) -> None:
    cluster.require_local("ray")
    ray = cluster.stack.ray
    config = sweep_yaml(cluster, tmp_path, "worker-loss", tiny_bert_dir, num_samples=4, max_concurrent_trials=4,
                        fixed={"max_steps": MAX_STEPS, "sleep_s": 0.5})
    experiment = experiment_of(config)
    driver = start_driver(cluster, ["sweep", str(config), "--no-finalize"], tmp_path)
    try:
        # step 4 logged: the step-2 checkpoint is in S3 (a report's metrics are logged before its upload)
        training = wait_for(cluster, experiment, lambda runs: training_with_checkpoint(runs, 4, MAX_STEPS - 6),
                            driver, "a trial trained past its first checkpoint")
        names = cluster.stack.remember_nodes()
        victim_id = training[0].data.tags[NODE_ID_TAG]
        (node,) = [w for w in ray.workers if names.get(victim_id) == w.name]
        checkpointed = {r.data.tags[TRIAL_ID_TAG] for r in training if r.data.tags[NODE_ID_TAG] == victim_id}
        moved = {r.data.tags[TRIAL_ID_TAG] for r in trial_runs(cluster, experiment)
                 if r.info.status == "RUNNING" and r.data.tags.get(NODE_ID_TAG) == victim_id} | checkpointed
        raylet = node.kill_raylet()
        ray.workers.remove(node)
        ray.wait_until_gone(node)
        status = driver.wait()
    finally:
        driver.kill()
        while ray is not None and len(ray.workers) < 2:  # the next scenarios get two worker nodes again
            ray.add_worker()
    assert status == 0, driver.output()[-4000:]
    assert "failed and restarts from" in driver.output(), driver.output()[-4000:]  # one line per retried trial
    # the lost node's trials continue elsewhere, from their checkpoint (steps after it may be trained again)
    runs = assert_each_trial_once(cluster, experiment, 4, MAX_STEPS, cut_short=frozenset(moved))
    for run in runs:
        if run.data.tags[TRIAL_ID_TAG] in moved:
            assert int(run.data.tags[ATTEMPT_TAG]) >= 2, run.data.tags
            assert run.data.tags.get("sentsweep.restored_from"), run.data.tags  # where its retry started
        if run.data.tags[TRIAL_ID_TAG] in checkpointed:
            assert steps_of(cluster, run).count(2) == 1, "a checkpointed trial started over instead of continuing"
    assert all(r.data.tags[NODE_ID_TAG] != victim_id for r in runs), "a trial ended on the lost node"
    record("worker-node loss", **figures(cluster, experiment, "worker-loss", driver.wall_s, 4),
           moved_trials=len(moved), retrained_steps=retrained_steps(cluster, runs), killed_raylet_pid=raylet)

